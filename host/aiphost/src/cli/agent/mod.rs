//! `aiphost agent new|build|test|list` (local) and `publish|versions|rollback|unpublish|values|
//! set-config|set-secret|unset` (a running host's admin API).

use super::admin::AdminArgs;
use super::output::{Column, Kind, OutputArgs, print_list};
use aiphost::agent::manifest::{Manifest, Rules};
use aiphost::agent::{COMPONENT_FILE, MANIFEST_FILE};
use anyhow::Context;
use clap::Subcommand;
use reqwest::Method;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod build;
mod js;
mod lang;
mod new;
mod python;
mod rust;

pub use build::build;
pub use lang::Lang;

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Scaffold a new partner that builds as-is, with one test.
    New {
        /// The partner's id (a-z, 0-9, '-'): the package and URL name.
        name: String,
        /// The language to write it in.
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// Where to create it (default: ./NAME).
        #[arg(long)]
        path: Option<PathBuf>,
        /// A local checkout of the language's SDK (sdk/rust, sdk/python or sdk/js) to use instead
        /// of the published one; the partner still depends on the SDK by version (default: the
        /// SDK beside the aiphost that runs this, when it is there).
        #[arg(long)]
        sdk_path: Option<PathBuf>,
    },
    /// Build a partner (Rust, Python or JavaScript; told by its project file) into a bundle
    /// (partner.toml + partner.wasm), checking the component against the partner world.
    Build {
        /// The partner's directory (with its partner.toml).
        #[arg(default_value = ".")]
        path: PathBuf,
        /// Where to put the bundle; it lands in OUT/<agent id>/ (default: PATH/dist).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a partner's own tests with its language's tools: `cargo test` (Rust), pytest with the
    /// Python that has the SDK (Python), `npm test` (JavaScript, TypeScript).
    Test {
        /// The partner's directory (with its partner.toml).
        #[arg(default_value = ".")]
        path: PathBuf,
    },
    /// List partner bundles in directories, or (`--published`) the partners published on a
    /// running host.
    List {
        /// Directories of bundles.
        #[arg(long = "agents", default_value = "plugins/dist", value_delimiter = ',')]
        agents: Vec<PathBuf>,
        /// List the partners published on the host at --url instead (all for the operator's
        /// token, a tenant's own for its token).
        #[arg(long, conflicts_with = "agents")]
        published: bool,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Upload a bundle (partner.toml + partner.wasm) to a running host as a new version of the
    /// tenant's partner; new tasks switch to it at once, running ones finish on theirs.
    Publish {
        /// The bundle directory (what `agent build` wrote).
        bundle: PathBuf,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List the versions of a published partner and the one serving.
    Versions {
        /// The partner's id.
        agent: String,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Serve an earlier version of a published partner again.
    Rollback {
        /// The published partner's id.
        agent: String,
        /// The version number `agent versions` shows.
        version: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Stop serving a published partner (its versions stay, to be rolled back to).
    Unpublish {
        /// The published partner's id.
        agent: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Show a published partner's config values and secrets (where each secret goes, never its
    /// value).
    Values {
        agent: String,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Set a config value the partner reads with `aiphost_sdk::config::get`.
    SetConfig {
        /// The published partner's id.
        agent: String,
        /// The config value's name, as the manifest's `[capabilities] config` lists it.
        name: String,
        /// The value (config values are not secret: the operator and the tenant can read them).
        value: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Set a secret: a header the host adds to the partner's outbound requests to one host. The
    /// value is read from the environment variable named by --value-env (not the command line,
    /// which shells keep in their history).
    SetSecret {
        /// The published partner's id.
        agent: String,
        /// The secret's name (to update or unset it later).
        name: String,
        /// `host` or `host:port` the header is sent to, as granted in the manifest.
        #[arg(long)]
        host: String,
        /// The header, e.g. `authorization`.
        #[arg(long)]
        header: String,
        /// The environment variable holding the header's value.
        #[arg(long, default_value = "AIPHOST_SECRET_VALUE")]
        value_env: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove a config value (`--secret`: a secret).
    Unset {
        /// The published partner's id.
        agent: String,
        /// The config value's or secret's name.
        name: String,
        /// NAME is a secret, not a config value.
        #[arg(long)]
        secret: bool,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

pub async fn run(cmd: AgentCommand) -> anyhow::Result<()> {
    match cmd {
        AgentCommand::New {
            name,
            lang,
            path,
            sdk_path,
        } => new::new(&name, lang, path, sdk_path),
        AgentCommand::Build { path, out } => {
            let out = out.unwrap_or_else(|| path.join("dist"));
            build::build(&path, &out, true).map(drop)
        }
        AgentCommand::Test { path } => {
            let lang = Lang::of(&path)?;
            eprintln!("testing {} ({lang:?})", path.display());
            lang.test(&path)?;
            eprintln!("the partner's tests passed");
            Ok(())
        }
        AgentCommand::List {
            published: true,
            admin,
            output,
            ..
        } => list_published(&admin, &output).await,
        AgentCommand::List { agents, output, .. } => list(&agents, &output),
        AgentCommand::Publish { bundle, admin } => publish(&bundle, &admin).await,
        AgentCommand::Versions {
            agent,
            admin,
            output,
        } => {
            let answer = admin
                .request(
                    Method::GET,
                    &format!("/admin/agents/{agent}/versions"),
                    None,
                )
                .await?;
            print_list(
                output.format(),
                &answer,
                &version_rows(&answer),
                &VERSION_COLUMNS,
                &format!("{agent} has no versions"),
            )
        }
        AgentCommand::Rollback {
            agent,
            version,
            admin,
        } => {
            admin
                .request(
                    Method::POST,
                    &format!("/admin/agents/{agent}/rollback"),
                    Some(&serde_json::json!({ "version": version })),
                )
                .await?;
            println!("{agent}: new tasks run on version {version}");
            Ok(())
        }
        AgentCommand::Unpublish { agent, admin } => {
            admin
                .request(Method::DELETE, &format!("/admin/agents/{agent}"), None)
                .await?;
            println!("{agent}: unpublished");
            Ok(())
        }
        AgentCommand::Values {
            agent,
            admin,
            output,
        } => {
            let values = admin
                .request(Method::GET, &format!("/admin/agents/{agent}/values"), None)
                .await?;
            print_list(
                output.format(),
                &values,
                &value_rows(&values),
                &VALUE_COLUMNS,
                &format!("{agent} has no config values or secrets"),
            )
        }
        AgentCommand::SetConfig {
            agent,
            name,
            value,
            admin,
        } => {
            admin
                .request(
                    Method::PUT,
                    &format!("/admin/agents/{agent}/config/{name}"),
                    Some(&serde_json::json!({ "value": value })),
                )
                .await?;
            println!("{agent}: config {name} set");
            Ok(())
        }
        AgentCommand::SetSecret {
            agent,
            name,
            host,
            header,
            value_env,
            admin,
        } => {
            let value = std::env::var(&value_env)
                .with_context(|| format!("the secret's value is read from ${value_env}"))?;
            admin
                .request(
                    Method::PUT,
                    &format!("/admin/agents/{agent}/secrets/{name}"),
                    Some(&serde_json::json!({ "host": host, "header": header, "value": value })),
                )
                .await?;
            println!("{agent}: secret {name} set ({header} on requests to {host})");
            Ok(())
        }
        AgentCommand::Unset {
            agent,
            name,
            secret,
            admin,
        } => {
            let kind = if secret { "secrets" } else { "config" };
            admin
                .request(
                    Method::DELETE,
                    &format!("/admin/agents/{agent}/{kind}/{name}"),
                    None,
                )
                .await?;
            println!("{agent}: {name} removed");
            Ok(())
        }
    }
}

const VERSION_COLUMNS: [Column; 6] = [
    Column::new("version", "/version", Kind::Number),
    Column::new("serving", "/serving", Kind::Text),
    Column::new("label", "/label", Kind::Text),
    Column::new("published", "/publishedMs", Kind::Time),
    Column::new("size", "/componentBytes", Kind::Bytes),
    Column::new("sha256", "/sha256", Kind::Text),
];

/// The versions of a `versions` answer, each marked `serving: *` if new tasks run on it.
fn version_rows(answer: &serde_json::Value) -> Vec<serde_json::Value> {
    let current = answer["current"].as_u64();
    let mut rows = answer["versions"].as_array().cloned().unwrap_or_default();
    for row in &mut rows {
        let serving = current.is_some() && row["version"].as_u64() == current;
        row["serving"] = if serving { "*" } else { "" }.into();
    }
    rows
}

const VALUE_COLUMNS: [Column; 5] = [
    Column::new("kind", "/kind", Kind::Text),
    Column::new("name", "/name", Kind::Text),
    Column::new("value", "/value", Kind::Text).or(""),
    Column::new("host", "/host", Kind::Text).or(""),
    Column::new("header", "/header", Kind::Text).or(""),
];

/// A `values` answer (`config`: name → value, `secrets`: name → where it goes) as one row per
/// config value and secret; a secret's value is never in the answer, so never in a row.
fn value_rows(values: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    if let Some(config) = values["config"].as_object() {
        for (name, value) in config {
            rows.push(serde_json::json!({"kind": "config", "name": name, "value": value}));
        }
    }
    if let Some(secrets) = values["secrets"].as_object() {
        for (name, secret) in secrets {
            rows.push(serde_json::json!({
                "kind": "secret", "name": name,
                "host": secret["host"], "header": secret["header"],
            }));
        }
    }
    rows
}

/// How often `publish` says it is still waiting for the host.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// Upload a bundle, showing what happens (the host compiles it, which can take a second).
pub async fn publish(bundle: &Path, admin: &AdminArgs) -> anyhow::Result<()> {
    use base64::Engine as _;
    let manifest_path = bundle.join(MANIFEST_FILE);
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("reading {}", manifest_path.display()))?;
    Manifest::parse(&manifest, &manifest_path.display().to_string())?;
    let wasm_path = bundle.join(COMPONENT_FILE);
    let wasm =
        std::fs::read(&wasm_path).with_context(|| format!("reading {}", wasm_path.display()))?;
    step(
        1,
        2,
        &format!("uploading {} ({} bytes)", wasm_path.display(), wasm.len()),
    );
    let started = Instant::now();
    let body = serde_json::json!({
        "manifest": manifest,
        "component": base64::engine::general_purpose::STANDARD.encode(&wasm),
    });
    let request = admin.request(Method::POST, "/admin/agents", Some(&body));
    tokio::pin!(request);
    // A large component compiles for seconds on the host: say so while it does.
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let answer = loop {
        tokio::select! {
            answer = &mut request => break answer?,
            _ = ticks.tick() => eprintln!(
                "      the host is validating and compiling it ({} s)",
                started.elapsed().as_secs()
            ),
        }
    };
    let published = &answer["published"];
    step(
        2,
        2,
        &format!(
            "validated, compiled and switched in {} ms",
            started.elapsed().as_millis()
        ),
    );
    println!(
        "published version {} ({}) — new tasks run on it",
        published["version"], published["label"]
    );
    Ok(())
}

const BUNDLE_COLUMNS: [Column; 7] = [
    Column::new("agent", "/id", Kind::Text),
    Column::new("version", "/version", Kind::Text),
    Column::new("aic", "/aic", Kind::Text),
    Column::new("skills", "/skills", Kind::List),
    Column::new("size", "/componentBytes", Kind::Bytes),
    Column::new("path", "/path", Kind::Text),
    Column::new("error", "/error", Kind::Text).or(""),
];

/// The bundles in `dirs`, as rows; a bundle whose manifest does not load is a row with its
/// `path` and `error`, so one broken bundle does not hide the others.
fn bundle_rows(dirs: &[PathBuf]) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("{}: not a directory", dir.display());
            continue;
        };
        let mut bundles: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join(MANIFEST_FILE).is_file())
            .collect();
        bundles.sort();
        for bundle in bundles {
            let path = bundle.display().to_string();
            // As `serve --agents` would load it.
            rows.push(
                match Manifest::load(&bundle.join(MANIFEST_FILE), Rules::Stored) {
                    Ok(m) => {
                        let size = std::fs::metadata(bundle.join(COMPONENT_FILE)).map(|m| m.len());
                        let skills: Vec<&str> = m.skills.iter().map(|s| s.id.as_str()).collect();
                        serde_json::json!({
                            "id": m.agent.id, "version": m.agent.version, "aic": m.agent.aic,
                            "skills": skills, "componentBytes": size.ok(), "path": path,
                        })
                    }
                    Err(e) => serde_json::json!({ "path": path, "error": e.to_string() }),
                },
            );
        }
    }
    rows
}

fn list(dirs: &[PathBuf], output: &OutputArgs) -> anyhow::Result<()> {
    let rows = bundle_rows(dirs);
    print_list(
        output.format(),
        &serde_json::Value::Array(rows.clone()),
        &rows,
        &BUNDLE_COLUMNS,
        "",
    )?;
    if rows.is_empty() {
        eprintln!("no bundles found in {dirs:?}");
    }
    Ok(())
}

const PUBLISHED_COLUMNS: [Column; 4] = [
    Column::new("id", "/id", Kind::Text),
    Column::new("tenant", "/tenant", Kind::Text),
    Column::new("serving", "/current", Kind::Number).or("-"),
    Column::new("versions", "/versions", Kind::Number),
];

/// `agent list --published`: the partners published on a running host (`GET /admin/agents`).
async fn list_published(admin: &AdminArgs, output: &OutputArgs) -> anyhow::Result<()> {
    let answer = admin.request(Method::GET, "/admin/agents", None).await?;
    let rows = answer["agents"].as_array().cloned().unwrap_or_default();
    print_list(
        output.format(),
        &answer,
        &rows,
        &PUBLISHED_COLUMNS,
        "no partners are published on this host",
    )
}

/// One numbered progress line on stderr, e.g. `[2/4] compiling ...`.
fn step(n: u32, total: u32, what: &str) {
    eprintln!("[{n}/{total}] {what}");
}
