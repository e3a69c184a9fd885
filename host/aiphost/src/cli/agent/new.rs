//! `aiphost agent new`: a partner that builds as-is, in any of the languages.

use super::js;
use super::lang::{Lang, Names};
use aiphost::agent::MANIFEST_FILE;
use anyhow::{Context, bail};
use std::path::PathBuf;

/// Scaffold partner `name` in `lang` at `path` (default `./name`).
pub fn new(
    name: &str,
    lang: Lang,
    path: Option<PathBuf>,
    sdk_path: Option<PathBuf>,
) -> anyhow::Result<()> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        bail!(
            "the name must be a-z, 0-9 and '-' (it becomes the package name and the URL segment)"
        );
    }
    let dir = path.unwrap_or_else(|| PathBuf::from(name));
    if dir.exists() {
        bail!(
            "{} already exists; choose another name or --path",
            dir.display()
        );
    }
    let sdk_path = match sdk_path {
        Some(sdk) => Some(
            sdk.canonicalize()
                .with_context(|| format!("the SDK is not at {}", sdk.display()))?,
        ),
        None => None,
    };
    let title: String = name
        .split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let type_name = title.replace(' ', "");
    let names = Names {
        id: name,
        title: &title,
        type_name: &type_name,
        sdk_path: sdk_path.as_deref(),
    };
    let mut files = lang.template(&names)?;
    // First, since it refuses a --sdk-path that is not the SDK before anything is written.
    if matches!(lang, Lang::Js | Lang::Ts)
        && let Some(sdk) = js::link_local_sdk(&dir, &names)?
    {
        eprintln!(
            "linked node_modules/@aiphost/sdk to {} (package.json asks for it by version)",
            sdk.display()
        );
    }
    files.push((MANIFEST_FILE.to_string(), manifest(&names)));
    files.push(("README.md".to_string(), readme(&names, lang)));
    for (file, content) in files {
        let at = dir.join(&file);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&at, content).with_context(|| format!("writing {}", at.display()))?;
    }
    eprintln!("created partner {name} ({lang:?}) in {}", dir.display());
    let shown = dir.display();
    eprintln!("next: aiphost agent test {shown}    # its tests, on the SDK's mock host");
    eprintln!("      aiphost dev {shown}           # build, serve, rebuild on every change");
    eprintln!(
        "      aiphost agent build {shown}   # a bundle in {shown}/dist, to serve or publish"
    );
    eprintln!("(more in {shown}/README.md)");
    Ok(())
}

/// A new partner's README: what it is and the commands of the author's loop.
fn readme(names: &Names, lang: Lang) -> String {
    let Names { id, title, .. } = names;
    let (source, test) = match lang {
        Lang::Rust => ("src/lib.rs", "`cargo test` also works"),
        Lang::Python => (
            "app.py",
            "it runs pytest with the Python that has the SDK (this repository's .venv, or \
             AIPHOST_PYTHON); a bare `python3 -m pytest` works only where the SDK is installed",
        ),
        Lang::Js => ("src/partner.js", "`npm test` also works"),
        Lang::Ts => (
            "src/partner.ts",
            "`npm test` also works; `aiphost agent build` type-checks before it bundles",
        ),
    };
    format!(
        r#"# {title}

An aiphost partner (`{id}`): it upper-cases the text it is given, and asks for text when there is
none. Its code is in `{source}`, its identity, skills and limits in `partner.toml`.

```sh
aiphost agent test .          # its tests, natively on the SDK's mock host ({test})
aiphost dev .                 # build it, serve it at http://127.0.0.1:8080/agents/{id}, rebuild on change
aiphost agent build .         # a bundle (partner.toml + partner.wasm) in dist/{id}
aiphost serve --agents dist   # serve the bundle
aiphost agent publish dist/{id}   # or publish it to a running host (a tenant's admin token)
```

Try it while it is served:

```sh
aiphost call http://127.0.0.1:8080/agents/{id} start --text hello
```
"#
    )
}

/// The manifest of a new partner; every template does what its skill says (upper-case the text
/// it is given, and ask for text when there is none).
fn manifest(names: &Names) -> String {
    let Names { id, title, .. } = names;
    // The AIC's ontology level is at most 9 Base36 characters (acps-sdk checks it).
    let upper: String = id
        .to_ascii_uppercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(9)
        .collect();
    format!(
        r#"[agent]
id = "{id}"
aic = "1.2.156.3088.1.1.AIPHST.{upper}.1.0000"
name = "{title}"
description = "Describe what {title} does."
version = "0.1.0"

[[skills]]
id = "{id}"
name = "{title}"
description = "Upper-cases the text it is given."
tags = []
input-modes = ["text/plain"]
output-modes = ["text/plain"]

[limits]
memory-mib = 64
invocation-ms = 10000
"#
    )
}
