//! The end-to-end test harness: real partner components built from `plugins/`, a real host (in this
//! process or as the `aiphost` binary) on 127.0.0.1, a real sled store in a temp directory.
//!
//! Components are built once (by `scripts/build-plugins.sh`, a no-op when fresh) and compiled by
//! wasmtime once into a cache shared by every test.

pub mod a2a;
pub mod browser;
pub mod group;
pub mod interop;
pub mod raw;
pub mod tenants;

use aiphost::server::{Server, ServerConfig};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// The bundles of the example partners, built if needed.
pub fn plugins_dist() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = repo_root();
            let status = Command::new("bash")
                .arg(root.join("scripts/build-plugins.sh"))
                .stdout(Stdio::null())
                .status()
                .expect("running scripts/build-plugins.sh");
            assert!(status.success(), "building the example partners failed");
            root.join("plugins/dist")
        })
        .clone()
}

/// A component built from `plugins/` that is not bundled (a fixture such as `not-a-partner`).
pub fn built_component(crate_name: &str) -> PathBuf {
    plugins_dist();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("plugins/target"));
    let dir = target.join("wasm32-wasip2/release");
    // A binary keeps its name; a library's '-' become '_'.
    let as_is = dir.join(format!("{crate_name}.wasm"));
    if as_is.is_file() {
        as_is
    } else {
        dir.join(format!("{}.wasm", crate_name.replace('-', "_")))
    }
}

/// The `aiphost` binary: `$AIPHOST_BIN` when set (the test script builds the whole workspace once
/// and says where the binary is), else built here.
pub fn aiphost_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(bin) = std::env::var_os("AIPHOST_BIN") {
                let bin = PathBuf::from(bin);
                assert!(bin.is_file(), "AIPHOST_BIN={} is not a file", bin.display());
                return bin;
            }
            // Built on its own, the binary gets its own feature set (no dev-dependencies): a
            // second build of much of the tree, which the test script avoids.
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-p", "aiphost", "--bin", "aiphost"])
                .current_dir(repo_root())
                .status()
                .expect("running cargo build");
            assert!(status.success(), "building aiphost failed");
            target_dir().join("debug").join("aiphost")
        })
        .clone()
}

/// Where compiled components are cached for every test host.
pub fn shared_cache() -> PathBuf {
    target_dir().join("aiphost-test-cache")
}

/// The operator token every test host is started with.
pub const OPERATOR_TOKEN: &str = "aho.operator-token-of-the-test-hosts";

/// Call the admin API: `(HTTP status, JSON body or Null)`.
pub async fn admin(
    host_url: &str,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{host_url}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("admin request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("admin answer");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, json)
}

/// The operator's listing of given-up notifications (`GET /admin/notifications/given-up`),
/// asserting HTTP 200.
pub async fn given_up(host_url: &str) -> Value {
    let (status, listed) = admin(
        host_url,
        reqwest::Method::GET,
        "/admin/notifications/given-up",
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    listed
}

/// POST a JSON-RPC body with `Authorization: Bearer {token}` (if any); assert HTTP 200.
pub async fn post_as(url: &str, token: Option<&str>, body: &Value) -> Value {
    let mut request = reqwest::Client::new().post(url).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("HTTP request");
    assert_eq!(
        response.status(),
        200,
        "JSON-RPC answers are always HTTP 200"
    );
    response.json().await.expect("a JSON answer")
}

/// Settings for a test host.
#[derive(Clone, Debug)]
pub struct HostOptions {
    pub sse_keep_alive: Duration,
    /// Webhooks may target 127.0.0.1 (test receivers live there).
    pub webhook_allow_private: bool,
    pub webhook_retry_base: Duration,
    pub webhook_retry_max: Duration,
    pub webhook_horizon: Duration,
    pub webhook_timeout: Duration,
    pub webhook_max_in_flight: usize,
    pub event_retention_count: u64,
    pub event_retention_ms: u64,
    pub response_timeout_ms: u64,
    pub awaiting_input_timeout_ms: u64,
    pub awaiting_completion_timeout_ms: u64,
    pub max_body_bytes: usize,
    pub max_concurrent: u32,
    /// How often tenants' stored bytes are measured.
    pub storage_meter: Duration,
    /// Serve HTTPS with these files.
    pub tls: Option<aiphost::transport::tls::TlsFiles>,
    /// What tasks keep of their commands and statuses.
    pub history: aiphost::task::HistoryLimits,
    /// Tasks not ended per Leader and partner.
    pub max_live_tasks: u64,
    /// Invocations of one partner running at once.
    pub max_invocations_per_partner: u32,
    /// Group mode: a join whose broker does not answer within this long fails.
    pub group_connect_timeout: Duration,
    /// Group mode: brokers invitations may name whatever they resolve to (`HOST:PORT`). The
    /// default lists exactly the test broker, so every group test also shows the list works.
    pub group_brokers: Vec<String>,
    /// Group mode: invitations may name brokers at private addresses.
    pub group_allow_private: bool,
    /// Group mode: consume the hosted partners' inboxes on this broker (an AMQP URL).
    pub inbox_broker: Option<String>,
    /// Serve the example partners of `plugins/dist` (off: only what tenants publish). A host
    /// that consumes inboxes without them leaves the examples' inboxes to other tests' hosts.
    pub examples: bool,
    /// More partner directories to serve, beside (or, with `examples` off, instead of) the
    /// examples (`serve --agents`).
    pub extra_agents: Vec<PathBuf>,
    /// HTTP timeouts and the connection cap.
    pub http: aiphost::transport::connections::HttpLimits,
    /// The example partners whose tasks clients may list although they do not authenticate
    /// (`serve --list-tasks-on`; off by default, as in the host).
    pub list_tasks_on: Vec<String>,
    /// Requests a second (and burst) each example partner takes (`serve --requests-per-second`).
    pub request_rate: Option<(u32, u32)>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            sse_keep_alive: Duration::from_secs(15),
            webhook_allow_private: true,
            webhook_retry_base: Duration::from_millis(50),
            webhook_retry_max: Duration::from_millis(400),
            webhook_horizon: Duration::from_secs(3600),
            webhook_timeout: Duration::from_secs(2),
            webhook_max_in_flight: 256,
            event_retention_count: 10_000,
            event_retention_ms: 24 * 3_600_000,
            response_timeout_ms: 20_000,
            awaiting_input_timeout_ms: 3_600_000,
            awaiting_completion_timeout_ms: 3_600_000,
            max_body_bytes: 4 * 1024 * 1024,
            max_concurrent: 64,
            storage_meter: Duration::from_secs(10),
            tls: None,
            history: aiphost::task::HistoryLimits::default(),
            max_live_tasks: 10_000,
            max_invocations_per_partner: 8,
            group_connect_timeout: Duration::from_secs(10),
            group_brokers: vec![group::BROKER.to_string()],
            group_allow_private: false,
            inbox_broker: None,
            examples: true,
            extra_agents: Vec::new(),
            http: aiphost::transport::connections::HttpLimits::default(),
            list_tasks_on: Vec::new(),
            request_rate: None,
        }
    }
}

/// A host running in this process with its own temp data directory.
pub struct TestHost {
    pub server: Option<Server>,
    pub url: String,
    pub data: tempfile::TempDir,
}

impl TestHost {
    /// Start a host serving the example partners.
    pub async fn start(options: HostOptions) -> TestHost {
        let data = tempfile::tempdir().expect("temp dir");
        let server = Self::start_in(data.path(), &options).await;
        let url = server.url();
        TestHost {
            server: Some(server),
            url,
            data,
        }
    }

    async fn start_in(dir: &Path, options: &HostOptions) -> Server {
        let mut config = ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            dir.to_path_buf(),
            options
                .examples
                .then(plugins_dist)
                .into_iter()
                .chain(options.extra_agents.iter().cloned())
                .collect(),
        );
        config.runtime.cache_dir = shared_cache();
        config.runtime.max_concurrent = options.max_concurrent;
        config.max_body_bytes = options.max_body_bytes;
        config.sse_keep_alive = options.sse_keep_alive;
        config.notify.allow_private = options.webhook_allow_private;
        config.notify.retry_base = options.webhook_retry_base;
        config.notify.retry_max = options.webhook_retry_max;
        config.notify.horizon = options.webhook_horizon;
        config.notify.timeout = options.webhook_timeout;
        config.notify.max_in_flight = options.webhook_max_in_flight;
        config.notify.connect_timeout = Duration::from_secs(1);
        config.tasks.event_retention_count = options.event_retention_count;
        config.tasks.event_retention_ms = options.event_retention_ms;
        config.tasks.response_timeout_ms = options.response_timeout_ms;
        config.tasks.awaiting_input_timeout_ms = options.awaiting_input_timeout_ms;
        config.tasks.awaiting_completion_timeout_ms = options.awaiting_completion_timeout_ms;
        config.operator_token = Some(OPERATOR_TOKEN.to_string());
        config.storage_meter = options.storage_meter;
        config.tls = options.tls.clone();
        config.tasks.history = options.history.clone();
        config.tasks.max_live_tasks = options.max_live_tasks;
        config.tasks.max_invocations_per_partner = options.max_invocations_per_partner;
        config.groups.connect_timeout = options.group_connect_timeout;
        config.groups.brokers = options
            .group_brokers
            .iter()
            .map(|b| b.parse().expect("a group broker as HOST:PORT"))
            .collect();
        config.groups.allow_private = options.group_allow_private;
        config.groups.inbox_broker = options
            .inbox_broker
            .as_ref()
            .map(|url| url.parse().expect("an inbox broker as an AMQP URL"));
        config.http = options.http.clone();
        config.operator_partners.list_tasks_on = options.list_tasks_on.clone();
        config.operator_partners.request_rate = options.request_rate;
        let server = Server::start(config).await.expect("starting the host");
        server.ready().await;
        server
    }

    /// The rpc URL of `agent`.
    pub fn rpc(&self, agent: &str) -> String {
        format!("{}/agents/{agent}/rpc", self.url)
    }

    /// Stop this host and start a new one on the same data (a clean restart).
    pub async fn restart(&mut self, options: HostOptions) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
        let server = Self::start_in(self.data.path(), &options).await;
        self.url = server.url();
        self.server = Some(server);
    }
}

/// The `aiphost` binary serving the example partners, as a child process (it can be SIGKILLed).
pub struct ProcessHost {
    pub child: Child,
    pub url: String,
    log: PathBuf,
}

impl ProcessHost {
    /// Start `aiphost serve` of the example partners on a free port with `data` as its data
    /// dir, plus `extra` arguments.
    pub fn start(data: &Path, extra: &[&str]) -> ProcessHost {
        ProcessHost::serve(data, &plugins_dist(), extra)
    }

    /// Start `aiphost serve` of the bundles in `agents` alone; its log (info level, where
    /// partners' log lines land) goes to `data` with the extension `log` ([`ProcessHost::log`]).
    pub fn serve(data: &Path, agents: &Path, extra: &[&str]) -> ProcessHost {
        ProcessHost::serve_with_env(data, agents, extra, &[])
    }

    /// [`ProcessHost::serve`], with `env` set in the host's environment as well.
    pub fn serve_with_env(
        data: &Path,
        agents: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> ProcessHost {
        let port = free_port();
        let log = std::fs::File::create(data.with_extension("log")).expect("log file");
        let mut cmd = Command::new(aiphost_bin());
        cmd.arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data")
            .arg(data)
            .arg("--agents")
            .arg(agents)
            // Compiled once for every test host, as in-process ones are.
            .arg("--compiled-cache")
            .arg(shared_cache())
            .args(extra)
            .env("AIPHOST_OPERATOR_TOKEN", OPERATOR_TOKEN)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log);
        let child = cmd.spawn().expect("spawning aiphost");
        let url = format!("http://127.0.0.1:{port}");
        let host = ProcessHost {
            child,
            url,
            log: data.with_extension("log"),
        };
        // A first start compiles what the shared cache does not hold yet (~20 s of CPU for a
        // Python partner).
        host.wait_ready(Duration::from_secs(600));
        host
    }

    /// What the host has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_ready(&self, limit: Duration) {
        let started = Instant::now();
        loop {
            // Ready, not only alive: partners compile after the port is bound.
            if answers_ok(&format!("{}/readyz", self.url)) {
                return;
            }
            assert!(
                started.elapsed() < limit,
                "aiphost did not become ready within {limit:?}; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, as a service manager stops it: a clean shutdown, waited for (at most 30 s).
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(
                    status.success(),
                    "aiphost stopped with {status}; its log:\n{}",
                    self.log()
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "aiphost did not stop within 30 s of SIGTERM; its log:\n{}",
            self.log()
        );
    }

    /// SIGKILL: no shutdown, no final flush.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn rpc(&self, agent: &str) -> String {
        format!("{}/agents/{agent}/rpc", self.url)
    }
}

impl Drop for ProcessHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sled database of a stopped host's store under `dir`, opened raw (to plant what an older
/// host could have written). A host's last handles on sled go with its background tasks, a
/// moment after `shutdown` returns, so this waits for sled's lock as the store's own open does
/// (up to 10 s) rather than taking a lock still held for one.
pub fn stopped_sled(dir: &Path) -> sled::Db {
    let started = std::time::Instant::now();
    loop {
        match sled::open(dir) {
            Err(sled::Error::Io(e))
                if e.to_string().contains("could not acquire lock")
                    && started.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => {
                return other
                    .unwrap_or_else(|e| panic!("the stopped host's store {}: {e}", dir.display()));
            }
        }
    }
}

/// The bytes of every file under `dir`, recursively (0 for what cannot be read).
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            total += if path.is_dir() {
                dir_bytes(&path)
            } else {
                entry.metadata().map_or(0, |m| m.len())
            };
        }
    }
    total
}

/// Every file under `dir`, recursively (none if it cannot be read).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether `GET url` answers 200, with a plain blocking socket (no async runtime needed).
fn answers_ok(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(mut stream) = std::net::TcpStream::connect(hostport) else {
        return false;
    };
    let request = format!("GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

/// POST a JSON body and return the JSON answer, asserting HTTP 200 and a JSON content type.
pub async fn post(url: &str, body: &Value) -> Value {
    post_raw(url, body.to_string().into_bytes()).await
}

/// POST a JSON body; the HTTP status and the JSON answer, whatever the status.
pub async fn post_status(url: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .expect("HTTP request");
    let status = response.status().as_u16();
    assert_json(&response);
    (status, response.json().await.expect("a JSON answer"))
}

/// POST raw bytes; assert HTTP 200 with JSON.
pub async fn post_raw(url: &str, body: Vec<u8>) -> Value {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("HTTP request");
    assert_eq!(
        response.status(),
        200,
        "JSON-RPC answers are always HTTP 200"
    );
    assert_json(&response);
    response.json().await.expect("a JSON answer")
}

/// Assert that `response` says its body is JSON.
pub fn assert_json(response: &reqwest::Response) {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
}

/// A v1 (spec) message request.
pub fn v1(command: &str, task: &str, items: Value, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "rpc", "id": format!("req-{}", uuid()), "params": {"message": {
        "type": "message", "id": format!("msg-{}", uuid()), "sentAt": now(), "senderRole": "leader",
        "senderId": "1.2.156.3088.1.1.TEST.LEADER.1.0000", "command": command, "commandParams": params,
        "dataItems": items, "taskId": task, "sessionId": "session-test"
    }}})
}

/// A v2 (acps-sdk 2.1.0) task-command request.
pub fn v2(command: &str, task: &str, items: Value, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "rpc", "id": format!("req-{}", uuid()), "params": {"command": {
        "type": "task-command", "id": format!("cmd-{}", uuid()), "sentAt": now(), "senderRole": "leader",
        "senderId": "1.2.156.3088.1.1.TEST.LEADER.1.0000", "command": command, "commandParams": params,
        "dataItems": items, "taskId": task, "sessionId": "session-test"
    }}})
}

/// A text DataItem list.
pub fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Now, as the reference SDK writes it (UTC, microseconds, `+00:00`).
pub fn now() -> String {
    aiphost::model::Timestamp::now().to_string()
}

/// The result of a JSON-RPC answer, panicking with the error if there is one.
pub fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "unexpected error: {answer}");
    &answer["result"]
}

/// The state of a task in a JSON-RPC answer.
pub fn state(answer: &Value) -> String {
    result(answer)["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The error code of a JSON-RPC answer.
pub fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {answer}"))
}

/// Poll `get` until the task reaches `wanted` or `limit` passes; return the last answer.
pub async fn wait_for_state(rpc_url: &str, task: &str, wanted: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let answer = post(rpc_url, &v2("get", task, json!([]), json!({}))).await;
        if answer.get("result").is_some() && state(&answer) == wanted {
            return answer;
        }
        assert!(
            started.elapsed() < limit,
            "task {task} did not reach {wanted} within {limit:?}; last answer {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One frame of an SSE stream as it arrived.
#[derive(Clone, Debug)]
pub enum Frame {
    /// An event: its raw text (without the blank line), its `event:` name if it has one, and
    /// its `data` parsed.
    Event {
        raw: String,
        event: Option<String>,
        data: Value,
        at: Instant,
    },
    /// A comment line (keep-alive).
    Comment(String),
}

/// An open SSE stream: its response headers and the frames arriving on a channel; the channel
/// closes when the host closes the stream.
pub struct SseStream {
    pub status: u16,
    pub content_type: String,
    pub cache_control: String,
    pub frames: tokio::sync::mpsc::UnboundedReceiver<Frame>,
    /// The body when the answer was not a stream (a JSON-RPC error).
    pub json: Option<Value>,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for SseStream {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}

impl SseStream {
    /// POST `body` to `url` and start reading the stream in the background.
    pub async fn open(url: &str, body: &Value) -> SseStream {
        Self::open_as(url, None, body).await
    }

    /// [`SseStream::open`] with `Authorization: Bearer {token}` (an API key), if any.
    pub async fn open_as(url: &str, token: Option<&str>, body: &Value) -> SseStream {
        let mut request = reqwest::Client::new().post(url).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Self::read(request.send().await.expect("stream request")).await
    }

    /// GET `url` (with `Authorization: Bearer {token}`, if any) and start reading the stream.
    pub async fn get_as(url: &str, token: Option<&str>) -> SseStream {
        let mut request = reqwest::Client::new().get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Self::read(request.send().await.expect("stream request")).await
    }

    /// Read a response already received (a request with headers of its own, such as
    /// `Last-Event-ID`): see [`SseStream::read`].
    pub async fn read_response(response: reqwest::Response) -> SseStream {
        Self::read(response).await
    }

    /// Read `response`: its frames in the background if it is a stream, else its JSON body.
    async fn read(response: reqwest::Response) -> SseStream {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let (content_type, cache_control) = (header("content-type"), header("cache-control"));
        let (tx, frames) = tokio::sync::mpsc::unbounded_channel();
        if !content_type.starts_with("text/event-stream") {
            let json = response.json().await.ok();
            return SseStream {
                status,
                content_type,
                cache_control,
                frames,
                json,
                reader: None,
            };
        }
        let reader = tokio::spawn(async move {
            use futures::StreamExt;
            let mut body = response.bytes_stream();
            let mut buffer = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buffer.find("\n\n") {
                    let raw: String = buffer[..end].to_string();
                    buffer.drain(..end + 2);
                    let frame = if let Some(comment) = raw.strip_prefix(':') {
                        Frame::Comment(comment.trim().to_string())
                    } else {
                        let line = |field: &str| {
                            raw.lines()
                                .find_map(|l| l.strip_prefix(field))
                                .map(str::to_string)
                        };
                        let data = line("data: ").unwrap_or_default();
                        Frame::Event {
                            event: line("event: "),
                            data: serde_json::from_str(&data).unwrap_or(Value::Null),
                            raw: raw.clone(),
                            at: Instant::now(),
                        }
                    };
                    if tx.send(frame).is_err() {
                        return;
                    }
                }
            }
        });
        SseStream {
            status,
            content_type,
            cache_control,
            frames,
            json: None,
            reader: Some(reader),
        }
    }

    /// The next event (skipping comments), or `None` when the stream closed; panics after `limit`.
    pub async fn next_event(&mut self, limit: Duration) -> Option<(Value, Instant)> {
        loop {
            let frame = tokio::time::timeout(limit, self.frames.recv())
                .await
                .unwrap_or_else(|_| panic!("no event within {limit:?}"))?;
            if let Frame::Event { raw, data, at, .. } = frame {
                assert!(
                    raw.starts_with("data: ") && !raw.contains('\n'),
                    "one data line per event: {raw:?}"
                );
                return Some((data, at));
            }
        }
    }

    /// The next event of a stream whose events are named (AIFlowy's `event: message|error|done`):
    /// its name and its data, or `None` when the stream closed; panics after `limit`. Each event
    /// must be exactly one `event:` line and one `data:` line.
    pub async fn next_named(&mut self, limit: Duration) -> Option<(String, Value)> {
        loop {
            let frame = tokio::time::timeout(limit, self.frames.recv())
                .await
                .unwrap_or_else(|_| panic!("no event within {limit:?}"))?;
            if let Frame::Event {
                raw, event, data, ..
            } = frame
            {
                let mut lines: Vec<&str> = raw
                    .lines()
                    .map(|l| l.split(' ').next().unwrap_or(l))
                    .collect();
                lines.sort_unstable();
                assert_eq!(
                    lines,
                    ["data:", "event:"],
                    "one event and one data line: {raw:?}"
                );
                let name = event.unwrap_or_else(|| panic!("an event without a name: {raw:?}"));
                return Some((name, data));
            }
        }
    }

    /// Every remaining named event until the host closes the stream (panics after `limit`).
    pub async fn named_until_closed(&mut self, limit: Duration) -> Vec<(String, Value)> {
        let deadline = Instant::now() + limit;
        let mut events = Vec::new();
        while let Some(event) = self
            .next_named(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            events.push(event);
        }
        events
    }

    /// Events until one carries the state `state` (that one included), for an AIP stream that
    /// stays open while its task rests (panics after `limit`).
    pub async fn until_state(&mut self, state: &str, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut events = Vec::new();
        while let Some((event, _)) = self
            .next_event(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            let reached = event_state(&event).as_deref() == Some(state);
            events.push(event);
            if reached {
                break;
            }
        }
        events
    }

    /// Every remaining event until the host closes the stream (panics after `limit`).
    pub async fn until_closed(&mut self, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut events = Vec::new();
        while let Some((event, _)) = self
            .next_event(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            events.push(event);
        }
        events
    }
}

/// A `stream` method request (v1 or v2 message in `params.message`).
pub fn stream_request(
    dialect: &str,
    command: &str,
    task: &str,
    items: Value,
    params: Value,
) -> Value {
    let mut body = if dialect == "v1" {
        v1(command, task, items, params)
    } else {
        v2(command, task, items, params)
    };
    body["method"] = json!("stream");
    if let Some(command) = body["params"]
        .as_object_mut()
        .and_then(|p| p.remove("command"))
    {
        body["params"]["message"] = command;
    }
    body
}

/// The `eventSeq` of a stream event.
pub fn seq(event: &Value) -> u64 {
    event["result"]["eventSeq"]
        .as_u64()
        .unwrap_or_else(|| panic!("no eventSeq in {event}"))
}

/// The `eventData.type` of a stream event.
pub fn event_type(event: &Value) -> String {
    event["result"]["eventData"]["type"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The state carried by a stream event (task or status update), if any.
pub fn event_state(event: &Value) -> Option<String> {
    event["result"]["eventData"]["status"]["state"]
        .as_str()
        .map(str::to_string)
}

/// A value from the host's `/metrics`, if it is there: `name` alone adds up every series of
/// the family (`aiphost_invocations_total`: every partner's and outcome's); with labels
/// (`aiphost_partner_invocations_running{agent="echo"}`), every series that has at least
/// those labels.
pub async fn metric_if_any(host_url: &str, name: &str) -> Option<u64> {
    let metrics = reqwest::get(format!("{host_url}/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    metric_in(&metrics, name)
}

/// [`metric_if_any`] of a `/metrics` text already read.
pub fn metric_in(text: &str, name: &str) -> Option<u64> {
    let (family, wanted) = series_of(name);
    let mut sum: Option<f64> = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (line_family, labels) = series_of(series);
        if line_family == family
            && wanted.iter().all(|w| labels.contains(w))
            && let Ok(v) = value.trim().parse::<f64>()
        {
            *sum.get_or_insert(0.0) += v;
        }
    }
    sum.map(|v| v as u64)
}

/// A series' family name and its `label="value"` pairs (values of the host's labels hold no
/// comma or quote).
pub fn series_of(series: &str) -> (&str, Vec<&str>) {
    match series.split_once('{') {
        Some((family, rest)) => {
            let labels = rest.trim_end_matches('}');
            (
                family,
                labels.split(',').filter(|l| !l.is_empty()).collect(),
            )
        }
        None => (series, Vec::new()),
    }
}

/// A value from the host's `/metrics`.
pub async fn metric(host_url: &str, name: &str) -> u64 {
    metric_if_any(host_url, name)
        .await
        .unwrap_or_else(|| panic!("{name} missing from {host_url}/metrics"))
}

/// Wait until the host's `/metrics` shows `name` at `at_least` or more, and return it (panics
/// after `limit`). A counter moves after the exchange it counts ends, so a test that has only
/// seen the request arrive (at a receiver, say) polls for it.
pub async fn metric_reaches(host_url: &str, name: &str, at_least: u64, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        let value = metric_if_any(host_url, name).await.unwrap_or(0);
        if value >= at_least {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{name} is {value} after {limit:?}, expected at least {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One notification a [`Receiver`] got.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    /// `X-ACPS-AIP-Notification-Token` (AIP).
    pub token: Option<String>,
    /// `X-A2A-Notification-Token` (A2A).
    pub a2a_token: Option<String>,
    /// `Authorization` (A2A's push authentication).
    pub authorization: Option<String>,
    pub content_type: Option<String>,
    pub body: Value,
    pub at: Instant,
}

/// How a [`Receiver`] answers.
#[derive(Clone, Debug)]
pub enum Answer {
    /// HTTP 200.
    Ok,
    /// This status (not 200: the host must retry).
    Status(u16),
    /// A redirect to this URL (the host must not follow it).
    Redirect(String),
}

/// A webhook receiver on 127.0.0.1 that records every POST; it can be stopped and started
/// again on the same port to play a receiver that is down.
pub struct Receiver {
    pub port: u16,
    hits: std::sync::Arc<std::sync::Mutex<Vec<Hit>>>,
    answer: std::sync::Arc<std::sync::Mutex<Answer>>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    /// A receiver on a free port, not yet listening (down).
    pub fn down() -> Receiver {
        Receiver {
            port: free_port(),
            hits: Default::default(),
            answer: std::sync::Arc::new(std::sync::Mutex::new(Answer::Ok)),
            server: None,
        }
    }

    /// A receiver listening now.
    pub async fn up() -> Receiver {
        let mut r = Receiver::down();
        r.start().await;
        r
    }

    /// The URL to register (any path works).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Start listening (again) on its port.
    pub async fn start(&mut self) {
        let (hits, answer) = (self.hits.clone(), self.answer.clone());
        let app = axum::Router::new().fallback(axum::routing::any(
            move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (hits, answer) = (hits.clone(), answer.clone());
                async move {
                    let header = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    hits.lock().unwrap().push(Hit {
                        path: uri.path().to_string(),
                        token: header("x-acps-aip-notification-token"),
                        a2a_token: header("x-a2a-notification-token"),
                        authorization: header("authorization"),
                        content_type: header("content-type"),
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        at: Instant::now(),
                    });
                    let answer = answer.lock().unwrap().clone();
                    use axum::response::IntoResponse;
                    match answer {
                        Answer::Ok => axum::http::StatusCode::OK.into_response(),
                        Answer::Status(code) => axum::http::StatusCode::from_u16(code)
                            .unwrap()
                            .into_response(),
                        Answer::Redirect(to) => {
                            axum::response::Redirect::temporary(&to).into_response()
                        }
                    }
                }
            },
        ));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("bind the receiver");
        self.server = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }));
    }

    /// Stop listening (the receiver is down).
    pub async fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
    }

    pub fn answer_with(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    /// Everything received so far.
    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Wait until `n` notifications arrived (panics after `limit`).
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Hit> {
        let started = Instant::now();
        loop {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            assert!(
                started.elapsed() < limit,
                "only {} of {n} notifications within {limit:?}: {hits:?}",
                hits.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

/// The state a notification body reports.
pub fn hit_state(hit: &Hit) -> String {
    hit.body["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A `notification/*` request with plain params.
pub fn notification_request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "id": format!("n-{}", uuid()), "params": params})
}

/// A `notification/start` request in `dialect`.
pub fn notification_start(dialect: &str, task: &str, items: Value, params: Value) -> Value {
    let mut body = if dialect == "v1" {
        v1("start", task, items, params)
    } else {
        v2("start", task, items, params)
    };
    body["method"] = json!("notification/start");
    body
}
