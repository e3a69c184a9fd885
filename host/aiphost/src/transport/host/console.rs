//! `GET /console`: the operator console — a few hand-written HTML, JavaScript and CSS files
//! (`host/aiphost/console/`) built into the binary, so it works offline, with no CDN and no
//! Node.js at serve time. The page is a client of the host's public and admin APIs, nothing
//! more: it has no route of its own besides these files, so everything it shows can be
//! scripted.
//!
//! Why no crate (`rust-embed` and the like): a dozen files fit a table of `include_str!`, and
//! such crates read from disk in debug builds, which would make debug and release serve
//! different bytes. Every answer carries a strict Content-Security-Policy (scripts, styles and
//! connections from this origin only, no inline script, no framing), `nosniff`, no referrer,
//! and an `ETag` over the file's bytes with `Cache-Control: no-cache`, so a browser revalidates
//! and an upgraded host is never shown with old files.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// One file of the console.
struct Asset {
    /// Its path under `/console/`.
    path: &'static str,
    /// Its media type.
    media: &'static str,
    /// Its bytes.
    body: &'static str,
}

/// Every file of the console; `index.html` is `/console` itself.
const ASSETS: &[Asset] = &[
    asset(
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../../console/index.html"),
    ),
    asset(
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../../../console/app.css"),
    ),
    asset("app.js", JS, include_str!("../../../console/app.js")),
    asset("api.js", JS, include_str!("../../../console/api.js")),
    asset("dom.js", JS, include_str!("../../../console/dom.js")),
    asset("sse.js", JS, include_str!("../../../console/sse.js")),
    asset(
        "schema-form.js",
        JS,
        include_str!("../../../console/schema-form.js"),
    ),
    asset(
        "pages/partners.js",
        JS,
        include_str!("../../../console/pages/partners.js"),
    ),
    asset(
        "pages/tasks.js",
        JS,
        include_str!("../../../console/pages/tasks.js"),
    ),
    asset(
        "pages/task.js",
        JS,
        include_str!("../../../console/pages/task.js"),
    ),
    asset(
        "pages/chat.js",
        JS,
        include_str!("../../../console/pages/chat.js"),
    ),
    asset(
        "pages/logs.js",
        JS,
        include_str!("../../../console/pages/logs.js"),
    ),
    asset(
        "pages/admin.js",
        JS,
        include_str!("../../../console/pages/admin.js"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";

const fn asset(path: &'static str, media: &'static str, body: &'static str) -> Asset {
    Asset { path, media, body }
}

/// What the page may load and where it may connect: this origin only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Each file's ETag (a quoted prefix of its SHA-256), made once.
static ETAGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| {
            let digest = Sha256::digest(a.body.as_bytes());
            let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
            format!("\"{hex}\"")
        })
        .collect()
});

/// `GET /console`: the page.
pub(super) async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /console/`: the page's one URL is without the slash (its files are below it).
pub(super) async fn slash() -> Redirect {
    Redirect::permanent("/console")
}

/// `GET /console/{*file}`: one of its files, or 404.
pub(super) async fn file(Path(file): Path<String>, headers: HeaderMap) -> Response {
    serve(&file, &headers)
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.path == path) else {
        return (StatusCode::NOT_FOUND, "no such console file\n").into_response();
    };
    let (asset, etag) = (&ASSETS[i], ETAGS[i].as_str());
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let common = [
        (header::ETAG, HeaderValue::from_str(etag).ok()),
        (
            header::CACHE_CONTROL,
            Some(HeaderValue::from_static("no-cache")),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            Some(HeaderValue::from_static(CSP)),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            Some(HeaderValue::from_static("nosniff")),
        ),
        (
            header::REFERRER_POLICY,
            Some(HeaderValue::from_static("no-referrer")),
        ),
    ];
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(asset.media))],
            asset.body,
        )
            .into_response()
    };
    for (name, value) in common {
        if let Some(value) = value {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module a console file imports is one the table serves: a file added to the
    /// folder but not to the table would be a 404 in the browser, not a build error.
    #[test]
    fn every_imported_module_is_served() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let dir = a.path.rsplit_once('/').map_or("", |(d, _)| d);
            for line in a.body.lines().filter(|l| l.starts_with("import ")) {
                let Some(from) = line.split(" from '").nth(1) else {
                    continue;
                };
                let target = from.trim_end_matches("';");
                let resolved = resolve(dir, target);
                assert!(
                    ASSETS.iter().any(|x| x.path == resolved),
                    "{} imports {target} ({resolved}), which is not served",
                    a.path
                );
            }
        }
    }

    /// Every file in the console folder is in the table.
    #[test]
    fn every_file_of_the_folder_is_served() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
        let mut found = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("console folder") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(&root).expect("under root");
                    found.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        for file in found {
            assert!(
                ASSETS.iter().any(|a| a.path == file),
                "{file} is not served"
            );
        }
    }

    #[test]
    fn the_page_loads_no_inline_script_and_nothing_from_elsewhere() {
        let page = ASSETS[0].body;
        assert!(
            !page.contains("<script>"),
            "inline script would break the CSP"
        );
        assert!(!page.contains("http://") && !page.contains("https://"));
        for a in ASSETS {
            assert!(
                !a.body.contains("innerHTML"),
                "{}: text only, never HTML",
                a.path
            );
            assert!(!a.body.contains("eval("), "{}", a.path);
        }
    }

    fn resolve(dir: &str, target: &str) -> String {
        let mut parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        for part in target.split('/') {
            match part {
                "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        parts.join("/")
    }
}
