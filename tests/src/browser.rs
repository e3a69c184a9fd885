//! A real browser for the console's tests: the system's headless Chromium driven over WebDriver
//! by its `chromedriver` (Debian's `chromium` and `chromium-driver`, which `scripts/test.sh`
//! installs — browsers cannot be downloaded here), through `fantoccini`.
//!
//! Each [`Browser`] starts its own chromedriver on a free port and one session; both end when
//! it is dropped. Waits are on the page's state (an element, a text), never fixed sleeps; every
//! wait that runs out saves a screenshot next to the ones a test takes on purpose, in
//! `target/browser-artefacts/`.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a wait on the page may take before the test fails (a debug host on a busy 2-core
/// machine; a wait that holds ends at once).
pub const WAIT: Duration = Duration::from_secs(30);

/// Where screenshots go: `target/browser-artefacts/`.
pub fn artefacts() -> PathBuf {
    let dir = crate::repo_root().join("target").join("browser-artefacts");
    std::fs::create_dir_all(&dir).expect("the artefacts folder");
    dir
}

/// The chromedriver of the system, or a failure that says how to get it.
fn chromedriver() -> PathBuf {
    for candidate in ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"] {
        let path = PathBuf::from(candidate);
        if path.exists() {
            return path;
        }
    }
    panic!(
        "chromedriver is not installed: the console's browser tests need Debian's `chromium` and \
         `chromium-driver` (`apt-get install -y chromium chromium-driver`; scripts/test.sh does it)"
    );
}

/// A headless Chromium session.
pub struct Browser {
    pub client: Client,
    driver: Child,
    name: String,
}

impl Browser {
    /// A new browser for the test `name` (its screenshots' prefix).
    pub async fn start(name: &str) -> Browser {
        let port = crate::free_port();
        let driver = Command::new(chromedriver())
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let http = reqwest::Client::new();
        while !http
            .get(format!("{url}/status"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(started.elapsed() < WAIT, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                // Root in CI (no sandbox); /dev/shm is small in containers.
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", "--window-size=1280,900", "--lang=en-US"],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&url)
            .await
            .expect("a Chromium session");
        Browser {
            client,
            driver,
            name: name.to_string(),
        }
    }

    /// Open `url`.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigating");
    }

    /// Run `script` (a function body; `arguments` are `args`) and take its result.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .expect("running a script")
    }

    /// Wait until `expression` (JavaScript, evaluated in the page) is truthy; its value.
    pub async fn until(&self, what: &str, expression: &str) -> Value {
        let started = Instant::now();
        let script =
            format!("try {{ return ({expression}) || null; }} catch (e) {{ return null; }}");
        loop {
            let value = self.js(&script, vec![]).await;
            if !value.is_null() && value != json!(false) {
                return value;
            }
            if started.elapsed() > WAIT {
                self.shot(&format!("timeout-{}", slug(what))).await;
                let text = self.js("return document.body.innerText", vec![]).await;
                panic!(
                    "{}: waited {WAIT:?} for {what} ({expression}); the page says:\n{text}",
                    self.name
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Wait for the element `css`, then click it.
    pub async fn click(&self, css: &str) {
        self.until(
            &format!("{css} to be clickable"),
            &format!(
                "(e => e && !e.disabled)(document.querySelector({}))",
                js_string(css)
            ),
        )
        .await;
        self.client
            .find(Locator::Css(css))
            .await
            .expect("the element")
            .click()
            .await
            .expect("a click");
    }

    /// Wait for the field `css`, clear it and type `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        self.until(
            &format!("{css} to exist"),
            &format!("document.querySelector({})", js_string(css)),
        )
        .await;
        let field = self
            .client
            .find(Locator::Css(css))
            .await
            .expect("the field");
        field.clear().await.expect("clearing");
        field.send_keys(text).await.expect("typing");
    }

    /// The visible text of the page.
    pub async fn text(&self) -> String {
        self.js("return document.body.innerText", vec![])
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Fail if the page shows what a script meant as no text (`null`, `undefined`,
    /// `[object Object]`, `NaN`): a value drawn as text by mistake.
    pub async fn assert_clean_text(&self) {
        let text = self.text().await;
        for word in ["null", "undefined", "[object Object]", "NaN"] {
            assert!(
                !text
                    .split(|c: char| !c.is_alphanumeric() && c != '[' && c != ']' && c != ' ')
                    .any(|w| w.trim() == word),
                "{}: the page shows {word:?}:\n{text}",
                self.name
            );
        }
    }

    /// A screenshot of the page as `target/browser-artefacts/{test}-{what}.png`.
    pub async fn shot(&self, what: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("a screenshot");
        let path = artefacts().join(format!("{}-{}.png", self.name, slug(what)));
        std::fs::write(&path, png).expect("writing the screenshot");
        path
    }

    /// End the session and the driver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `text` as a JavaScript string literal.
pub fn js_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
