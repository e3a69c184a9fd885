//! The operator console (`/console`), tried as its users would: in headless Chromium (the
//! system's, over WebDriver), signed in from the URL `aiphost serve` prints, against a real
//! host with the bundled partners. Each page is screenshotted into `target/browser-artefacts/`.
//! The files' own HTTP (types, CSP, ETag, 404) and the printed URL are checked without a
//! browser.

use aiphost_tests::browser::{Browser, js_string};
use aiphost_tests::tenants::{create_tenant, example_manifest, publish_keyed};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The console's URL signed in as `token`.
fn signed_in(host: &TestHost, token: &str) -> String {
    format!("{}/console#token={token}", host.url)
}

/// Wait until the partner `id` is ready (a published one compiles first).
async fn ready(host: &TestHost, id: &str) {
    let started = Instant::now();
    loop {
        let got = reqwest::get(format!("{}/agents/{id}", host.url)).await;
        if let Ok(r) = got {
            let v: Value = r.json().await.unwrap_or(Value::Null);
            if v["readiness"] == "ready" {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{id} never got ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Say `prompt` in the playground and wait for its turn to close; the reply's task id.
async fn say(browser: &Browser, prompt: &str) -> String {
    let before = browser
        .js(
            "return document.querySelectorAll('.msg.agent').length",
            vec![],
        )
        .await;
    browser.fill("#prompt", prompt).await;
    browser.click("#send").await;
    let count = before.as_u64().unwrap_or(0);
    browser
        .until(
            &format!("the reply to {prompt:?}"),
            &format!(
                "(r => r.length > {count} && r[r.length - 1].dataset.turn === 'closed' && r[r.length - 1].dataset.task)([...document.querySelectorAll('.msg.agent')])"
            ),
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The last reply's `selector` text.
async fn last_reply(browser: &Browser, selector: &str) -> String {
    let script = format!(
        "const r = [...document.querySelectorAll('.msg.agent')].pop(); const e = r && r.querySelector({}); return e ? e.textContent : null;",
        js_string(selector)
    );
    browser
        .js(&script, vec![])
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Sign in from the printed URL; the partners, a chat through every concierge flow, that
/// task's timeline (with A2A's wire events), and a live task canceled from the tasks page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_signs_in_sees_partners_chats_and_follows_tasks() {
    let host = TestHost::start(HostOptions::default()).await;
    let browser = Browser::start("operator").await;

    // Sign in: the token leaves the address bar at once and stays in this tab only.
    browser.goto(&signed_in(&host, OPERATOR_TOKEN)).await;
    browser
        .until(
            "signed in",
            "document.querySelector('#who').textContent === 'operator'",
        )
        .await;
    let hash = browser.js("return location.hash", vec![]).await;
    assert!(!hash.to_string().contains("token"), "{hash}");
    let kept = browser
        .js("return sessionStorage.getItem('aiphost.token')", vec![])
        .await;
    assert_eq!(kept, json!(OPERATOR_TOKEN));

    // Partners: every bundled one, with its doors and figures.
    browser
        .until(
            "the concierge's figures",
            "document.querySelector('[data-agent=concierge] [data-stat=invocations]')",
        )
        .await;
    let listed = browser
        .js(
            "return [...document.querySelectorAll('article.partner')].map(a => a.dataset.agent)",
            vec![],
        )
        .await;
    let hosted: Value = reqwest::get(format!("{}/agents", host.url))
        .await
        .expect("agents")
        .json()
        .await
        .expect("json");
    let mut hosted: Vec<String> = hosted["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["id"].as_str().map(str::to_string))
        .collect();
    hosted.sort();
    let mut listed: Vec<String> = serde_json::from_value(listed).expect("ids");
    listed.sort();
    assert_eq!(listed, hosted);
    let card = browser
        .js(
            "return document.querySelector('[data-agent=concierge]').textContent",
            vec![],
        )
        .await;
    let card = card.as_str().unwrap_or_default();
    for door in [
        "/rpc",
        "agent-card.json",
        "/process",
        "/aiflowy/chat",
        "/mcp",
    ] {
        assert!(
            card.contains(door),
            "the card names the {door} door: {card}"
        );
    }
    browser.assert_clean_text().await;
    browser.shot("partners").await;

    // The playground: every flow of the concierge.
    browser
        .goto(&format!("{}/console#/chat/concierge", host.url))
        .await;
    browser
        .until("the playground", "document.querySelector('#prompt')")
        .await;

    say(&browser, "think tea").await;
    assert_eq!(last_reply(&browser, ".answer").await, "thought about tea");
    assert_eq!(
        last_reply(&browser, "details.reasoning > div").await,
        "Let me think about tea."
    );

    let tool_task = say(&browser, "tool kettles").await;
    assert_eq!(last_reply(&browser, ".answer").await, "found kettles");
    let result = last_reply(&browser, "details.step[data-tool=lookup] pre.result").await;
    let result: Value = serde_json::from_str(&result).expect("the tool's result as JSON");
    assert_eq!(result, json!({"found": "kettles"}));

    // A form: made from its schema; a value the schema refuses is shown on its field and
    // nothing is sent; the right ones resume the conversation.
    let form_task = say(&browser, "form a trip").await;
    browser
        .until(
            "the trip form",
            "document.querySelector('form.schema-form[data-form=trip]')",
        )
        .await;
    browser
        .fill("form[data-form=trip] [name='/city']", "Oslo")
        .await;
    browser
        .fill("form[data-form=trip] [name='/days']", "0")
        .await;
    browser
        .click("form[data-form=trip] button[type=submit]")
        .await;
    let refused = browser
        .until(
            "the schema's message on days",
            "document.querySelector(\"[data-error-for='/days']\").textContent",
        )
        .await;
    assert_eq!(refused, json!("must be at least 1"));
    browser.shot("chat-form").await;
    browser
        .fill("form[data-form=trip] [name='/days']", "3")
        .await;
    browser
        .click("form[data-form=trip] button[type=submit]")
        .await;
    browser
        .until(
            "the form's answer",
            "[...document.querySelectorAll('.msg.agent .answer')].some(a => a.textContent === 'Oslo for 3 days')",
        )
        .await;

    say(&browser, "fail on purpose").await;
    let failed = browser
        .until(
            "the failure",
            "document.querySelector('[data-error=CONCIERGE_FAILED]')",
        )
        .await;
    assert!(!failed.is_null());

    // Slow, then the stop button: the turn ends canceled.
    browser.fill("#prompt", "slow count").await;
    browser.click("#send").await;
    browser
        .until(
            "the slow answer streaming",
            "(r => r && r.querySelector('.answer').textContent.startsWith('1 '))([...document.querySelectorAll('.msg.agent')].pop())",
        )
        .await;
    browser.click("#stop").await;
    let slow_task = browser
        .until(
            "the stopped turn",
            "(r => r && r.dataset.turn === 'closed' && r.dataset.state === 'canceled' && r.dataset.task)([...document.querySelectorAll('.msg.agent')].pop())",
        )
        .await;
    browser.assert_clean_text().await;
    browser.shot("chat").await;
    let slow_task = slow_task.as_str().expect("the slow task's id");
    let (status, got) = admin(
        &host.url,
        Method::GET,
        &format!("/admin/agents/concierge/tasks/{slow_task}"),
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["task"]["state"], "canceled", "{got}");
    assert_ne!(form_task, tool_task);

    // The tool turn's task: found in the task list, its timeline shows the tool's call and
    // result, and A2A's own events on demand.
    browser
        .goto(&format!("{}/console#/tasks?agent=concierge", host.url))
        .await;
    let row = format!("#tasks tr[data-task={}] a", js_string(&tool_task));
    browser.click(&row).await;
    for kind in ["status", "tool_call", "tool_result"] {
        browser
            .until(
                &format!("a {kind} in the timeline"),
                &format!("document.querySelector('#timeline li[data-kind={kind}]')"),
            )
            .await;
    }
    browser.shot("task").await;
    browser.js("document.querySelector('#wire').value = 'a2a'; document.querySelector('#wire').dispatchEvent(new Event('change'));", vec![]).await;
    let wire = browser
        .until(
            "A2A's events",
            "document.querySelector('#timeline li details.wire pre')?.textContent",
        )
        .await;
    assert!(
        wire.as_str().unwrap_or_default().contains("contextId")
            || wire.as_str().unwrap_or_default().contains("taskId"),
        "{wire}"
    );

    // A live task canceled from the tasks page.
    let waiting = start_form(&host.url, "concierge", None).await;
    browser
        .goto(&format!(
            "{}/console#/tasks?agent=concierge&state=awaiting-input",
            host.url
        ))
        .await;
    browser
        .click(&format!(
            "#tasks tr[data-task={}] button.cancel",
            js_string(&waiting)
        ))
        .await;
    browser
        .until(
            "the canceled task gone from the awaiting list",
            &format!(
                "!document.querySelector('#tasks tr[data-task={}]')",
                js_string(&waiting)
            ),
        )
        .await;
    let (_, got) = admin(
        &host.url,
        Method::GET,
        &format!("/admin/agents/concierge/tasks/{waiting}"),
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(got["task"]["state"], "canceled", "{got}");
    browser.goto(&format!("{}/console#/tasks", host.url)).await;
    browser
        .until("the task list", "document.querySelector('#tasks tbody tr')")
        .await;
    browser.assert_clean_text().await;
    browser.shot("tasks").await;

    // A partner's own log lines, live: those written before the page opened, then new ones.
    let rpc = host.rpc("hostile");
    let chatty = |task: &'static str, n: u32| {
        let (rpc, body) = (
            rpc.clone(),
            v2("start", task, text(&format!("chatty:{n}")), json!({})),
        );
        async move { post(&rpc, &body).await }
    };
    chatty("console-logs-1", 3).await;
    browser
        .goto(&format!("{}/console#/logs/hostile", host.url))
        .await;
    browser
        .until(
            "the lines so far",
            "document.querySelectorAll('#logs .line[data-task=\"console-logs-1\"]').length >= 3",
        )
        .await;
    chatty("console-logs-2", 2).await;
    browser
        .until(
            "a live line",
            "document.querySelector('#logs .line[data-task=\"console-logs-2\"]')",
        )
        .await;
    browser.assert_clean_text().await;
    browser.shot("logs").await;

    browser.goto(&format!("{}/console#/admin", host.url)).await;
    browser
        .until("the tenants", "document.querySelector('#tenants table')")
        .await;
    browser.shot("admin").await;
    browser.close().await;
}

/// Start a concierge form over the AIFlowy door (as `token`'s Leader); its task id.
async fn start_form(base: &str, agent: &str, token: Option<&str>) -> String {
    let conversation = format!("c-{}", uuid::Uuid::new_v4().simple());
    let mut request = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/aiflowy/chat"))
        .json(&json!({"conversation_id": conversation, "prompt": "form a trip"}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let text = request
        .send()
        .await
        .expect("chat")
        .text()
        .await
        .expect("stream");
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find_map(|e| e["message_id"].as_str().map(str::to_string))
        .expect("the form's task id")
}

/// A tenant signed in sees its own partners and tasks only, chats with its keyed partner (the
/// console issues itself a key), and another tenant's task is a 404 even by its URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_sees_only_its_own_partners_and_tasks() {
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let globex = create_tenant(&host.url, "globex", json!({})).await;
    publish_keyed(&host.url, &acme, "concierge", "acme-bot", &[]).await;
    let keys = publish_keyed(&host.url, &globex, "concierge", "globex-bot", &[LEADER]).await;
    ready(&host, "acme-bot").await;
    ready(&host, "globex-bot").await;
    let theirs = start_form(&host.url, "globex-bot", Some(&keys[0])).await;

    let browser = Browser::start("tenant").await;
    browser.goto(&signed_in(&host, &acme)).await;
    browser
        .until(
            "signed in",
            "document.querySelector('#who').textContent === 'tenant acme'",
        )
        .await;
    browser
        .until("the partners", "document.querySelector('article.partner')")
        .await;
    let listed = browser
        .js(
            "return [...document.querySelectorAll('article.partner')].map(a => a.dataset.agent)",
            vec![],
        )
        .await;
    assert_eq!(listed, json!(["acme-bot"]));

    // Chat with its keyed partner: the console gets a key for the Leader `console`.
    browser
        .goto(&format!("{}/console#/chat/acme-bot", host.url))
        .await;
    browser
        .until("the playground", "document.querySelector('#prompt')")
        .await;
    let mine = say(&browser, "think tea").await;
    assert_eq!(last_reply(&browser, ".answer").await, "thought about tea");
    let (_, keys) = admin(
        &host.url,
        Method::GET,
        "/admin/agents/acme-bot/keys",
        &acme,
        None,
    )
    .await;
    assert!(
        keys["keys"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| k["leader"] == "console"),
        "{keys}"
    );

    // Its tasks: its own only.
    browser.goto(&format!("{}/console#/tasks", host.url)).await;
    browser
        .until(
            "its task",
            &format!(
                "document.querySelector('#tasks tr[data-task={}]')",
                js_string(&mine)
            ),
        )
        .await;
    let agents = browser
        .js("return [...new Set([...document.querySelectorAll('#tasks tr[data-agent]')].map(r => r.dataset.agent))]", vec![])
        .await;
    assert_eq!(agents, json!(["acme-bot"]));
    browser.assert_clean_text().await;
    browser.shot("tasks").await;

    // Publishing from the console: a new version of its partner, which then serves new tasks.
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("partner.toml");
    std::fs::write(
        &manifest,
        example_manifest("concierge", "acme-bot", "[access]\nleaders = \"api-key\"\n"),
    )
    .expect("manifest");
    let component = plugins_dist().join("concierge").join("partner.wasm");
    browser
        .goto(&format!("{}/console#/admin/acme-bot", host.url))
        .await;
    browser
        .until(
            "the versions",
            "document.querySelector('#versions tr[data-version=\"1\"]')",
        )
        .await;
    for (field, path) in [
        ("#publish-manifest", &manifest),
        ("#publish-component", &component),
    ] {
        browser
            .client
            .find(fantoccini::Locator::Css(field))
            .await
            .expect("the file field")
            .send_keys(&path.to_string_lossy())
            .await
            .expect("choosing the file");
    }
    browser.click("#publish button[type=submit]").await;
    browser
        .until(
            "version 2 serving new tasks",
            "document.querySelector('#versions tr[data-version=\"2\"] .badge')",
        )
        .await;
    browser.assert_clean_text().await;
    browser.shot("publish").await;
    let (_, versions) = admin(
        &host.url,
        Method::GET,
        "/admin/agents/acme-bot/versions",
        &acme,
        None,
    )
    .await;
    assert_eq!(versions["current"], 2, "{versions}");

    // Another tenant's task by its URL: refused as unknown.
    browser
        .goto(&format!(
            "{}/console#/task/globex-bot/{theirs}?leader={LEADER}",
            host.url
        ))
        .await;
    let refused = browser
        .until(
            "the refusal",
            "document.querySelector('.error')?.textContent",
        )
        .await;
    assert!(!refused.to_string().contains("Oslo"), "{refused}");
    let (status, _) = admin(
        &host.url,
        Method::GET,
        &format!("/admin/agents/globex-bot/tasks/{theirs}?leader={LEADER}"),
        &acme,
        None,
    )
    .await;
    assert_eq!(status, 404);
    browser.close().await;
}

/// The console's files: the page and its modules with their types, a strict CSP, an ETag a
/// browser revalidates with (304), and 404 for anything else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_files_are_served_with_a_strict_policy() {
    let host = TestHost::start(HostOptions::default()).await;
    let http = reqwest::Client::new();
    let page = http
        .get(format!("{}/console", host.url))
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().expect("csp");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let etag = headers["etag"].clone();
    let body = page.text().await.expect("body");
    assert!(body.contains("/console/app.js"));
    let again = http
        .get(format!("{}/console", host.url))
        .header("if-none-match", etag)
        .send()
        .await
        .expect("revalidation");
    assert_eq!(again.status(), 304);
    let module = http
        .get(format!("{}/console/pages/chat.js", host.url))
        .send()
        .await
        .expect("module");
    assert_eq!(module.status(), 200);
    assert_eq!(
        module.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    for missing in [
        "/console/nope.js",
        "/console/../Cargo.toml",
        "/console/pages/",
    ] {
        let r = http
            .get(format!("{}{missing}", host.url))
            .send()
            .await
            .expect("missing");
        assert_eq!(r.status(), 404, "{missing}");
    }
    let slash = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(format!("{}/console/", host.url))
        .send()
        .await
        .expect("slash");
    assert_eq!(slash.status(), 308);
}

/// `aiphost serve` prints the signed-in console URL: the operator token in the fragment.
#[test]
fn serve_prints_a_signed_in_console_url() {
    let data = tempfile::tempdir().expect("temp dir");
    let host = ProcessHost::start(&data.path().join("data"), &[]);
    let log = host.log();
    // The test token needs no escaping (letters, dots and dashes).
    let expected = format!("console: {}/console#token={OPERATOR_TOKEN}", host.url);
    assert!(log.contains(&expected), "{log}");
    host.stop();
}
