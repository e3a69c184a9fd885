//! Leaders authenticated by client certificates (mutual TLS) over a real HTTPS listener: the
//! Leader's AIC comes from its certificate's `acps://{AIC}` URI, certificates from other CAs
//! never get through the handshake, and each Leader sees only its own tasks.

use aiphost::transport::tls::TlsFiles;
use aiphost_tests::*;
use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const LEADER_A: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
const LEADER_B: &str = "1.2.156.3088.1.1.TEST.OTHER.1.0000";
const LEADER_C: &str = "1.2.156.3088.1.1.TEST.STRANGER.1.0000";

/// A client identity: certificate chain and key.
struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Identity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// A CA, and certificates it signs.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        Ca {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf with `sans`; returns (certificate PEM, key PEM, identity).
    fn leaf(&self, sans: Vec<SanType>) -> (String, String, Identity) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = sans;
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let identity = Identity {
            chain: vec![cert.der().clone()],
            key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        };
        (cert.pem(), key.serialize_pem(), identity)
    }

    fn leader(&self, aic: Option<&str>) -> Identity {
        let sans = match aic {
            Some(aic) => vec![SanType::URI(format!("acps://{aic}").try_into().unwrap())],
            None => vec![SanType::DnsName("leader.example".try_into().unwrap())],
        };
        self.leaf(sans).2
    }
}

/// One HTTPS request to the host: `(HTTP status, JSON body)`, or the transport error.
async fn https(
    url: &str,
    method: &str,
    path: &str,
    trust: &CertificateDer<'static>,
    identity: Option<&Identity>,
    bearer: Option<&str>,
    body: Option<&Value>,
) -> Result<(u16, Value), String> {
    https_with(url, method, path, trust, identity, bearer, body, &[]).await
}

/// [`https`] with more request `headers`.
#[allow(clippy::too_many_arguments)]
async fn https_with(
    url: &str,
    method: &str,
    path: &str,
    trust: &CertificateDer<'static>,
    identity: Option<&Identity>,
    bearer: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Result<(u16, Value), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trust.clone()).map_err(|e| e.to_string())?;
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots);
    let config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| e.to_string())?,
        None => builder.with_no_client_auth(),
    };
    let authority = url.trim_start_matches("https://").to_string();
    let tcp = tokio::net::TcpStream::connect(&authority)
        .await
        .map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", &authority)
        .header("content-type", "application/json");
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let request = request
        .body(Full::new(Bytes::from(payload)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).to_string()))
    };
    Ok((status, json))
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn command(command: &str, task: &str, sender: &str) -> Value {
    let mut body = v2(command, task, text("hi"), json!({}));
    body["params"]["command"]["senderId"] = json!(sender);
    body
}

/// A host serving HTTPS with a certificate of `ca`, taking client certificates of `ca`; its
/// files live in `pki`.
async fn tls_host(ca: &Ca, pki: &Path) -> TestHost {
    let (server_cert, server_key, _) =
        ca.leaf(vec![SanType::IpAddress("127.0.0.1".parse().unwrap())]);
    let host = TestHost::start(HostOptions {
        tls: Some(TlsFiles {
            cert: write(pki, "server.pem", &server_cert),
            key: write(pki, "server-key.pem", &server_key),
            client_ca: Some(write(pki, "ca.pem", &ca.pem())),
        }),
        ..HostOptions::default()
    })
    .await;
    assert!(host.url.starts_with("https://"), "{}", host.url);
    host
}

/// A new tenant publishes echo as `guarded` with `access` (TOML), over HTTPS.
async fn publish_guarded(host: &TestHost, trust: &CertificateDer<'static>, access: &str) {
    publish_guarded_bundle(host, trust, "echo", access).await;
}

/// A new tenant publishes the example `bundle` as `guarded` with `access` (TOML), over HTTPS.
async fn publish_guarded_bundle(
    host: &TestHost,
    trust: &CertificateDer<'static>,
    bundle: &str,
    access: &str,
) {
    let (status, created) = https(
        &host.url,
        "POST",
        "/admin/tenants",
        trust,
        None,
        Some(OPERATOR_TOKEN),
        Some(&json!({"id": "acme"})),
    )
    .await
    .unwrap();
    assert_eq!(status, 201, "{created}");
    let token = created["adminToken"].as_str().unwrap().to_string();
    let manifest = aiphost_tests::tenants::example_manifest(bundle, "guarded", access);
    let wasm = std::fs::read(plugins_dist().join(bundle).join("partner.wasm")).unwrap();
    let (status, published) = https(
        &host.url,
        "POST",
        "/admin/agents",
        trust,
        None,
        Some(&token),
        Some(&json!({
            "manifest": manifest,
            "component": base64::engine::general_purpose::STANDARD.encode(&wasm),
        })),
    )
    .await
    .unwrap();
    assert_eq!(status, 201, "{published}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaders_authenticate_with_client_certificates() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    let call = |path: String, identity: Option<Identity>, body: Value| {
        let (url, trust) = (host.url.clone(), trust.clone());
        async move {
            https(
                &url,
                "POST",
                &path,
                &trust,
                identity.as_ref(),
                None,
                Some(&body),
            )
            .await
        }
    };

    // An open partner needs no certificate, over TLS too.
    let (status, answer) = call(
        "/agents/echo/rpc".into(),
        None,
        command("start", "plain", LEADER_A),
    )
    .await
    .expect("HTTPS without a client certificate");
    assert_eq!(status, 200);
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    // A tenant publishes a partner that takes Leaders by certificate, A and B only.
    let access =
        format!("[access]\nleaders = \"mtls\"\nallowed-leaders = [{LEADER_A:?}, {LEADER_B:?}]\n");
    publish_guarded(&host, &trust, &access).await;
    let (_, acs) = https(
        &host.url,
        "GET",
        "/agents/guarded/.well-known/acs.json",
        &trust,
        None,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(acs["securitySchemes"]["mtls"]["type"], "mutualTLS", "{acs}");

    let rpc = "/agents/guarded/rpc".to_string();
    let a = ca.leader(Some(LEADER_A));
    let b = ca.leader(Some(LEADER_B));
    // No certificate; a certificate naming no AIC; a Leader not allowed.
    let (_, answer) = call(rpc.clone(), None, command("start", "t", LEADER_A))
        .await
        .unwrap();
    assert_eq!(error_code(&answer), -32008, "{answer}");
    let (_, answer) = call(
        rpc.clone(),
        Some(ca.leader(None)),
        command("start", "t", LEADER_A),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&answer), -32010, "{answer}");
    let (_, answer) = call(
        rpc.clone(),
        Some(ca.leader(Some(LEADER_C))),
        command("start", "t", LEADER_C),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&answer), -32009, "{answer}");
    // A certificate naming A, but the command claims to come from B.
    let (_, answer) = call(
        rpc.clone(),
        Some(a.clone()),
        command("start", "t", LEADER_B),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&answer), -32009, "{answer}");
    // A certificate from another CA does not get through the handshake.
    let stranger = Ca::new("someone else's CA").leader(Some(LEADER_A));
    let refused = call(rpc.clone(), Some(stranger), command("start", "t", LEADER_A)).await;
    assert!(refused.is_err(), "{refused:?}");

    // A and B each have their own task "t".
    let (_, answer) = call(
        rpc.clone(),
        Some(a.clone()),
        command("start", "t", LEADER_A),
    )
    .await
    .unwrap();
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let (_, answer) = call(rpc.clone(), Some(b.clone()), command("get", "t", LEADER_B))
        .await
        .unwrap();
    assert_eq!(error_code(&answer), -32001, "{answer}");
    let (_, answer) = call(
        rpc.clone(),
        Some(b.clone()),
        command("start", "t", LEADER_B),
    )
    .await
    .unwrap();
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let (_, answer) = call(rpc.clone(), Some(a), command("complete", "t", LEADER_A))
        .await
        .unwrap();
    assert_eq!(state(&answer), "completed", "{answer}");
    let (_, answer) = call(rpc, Some(b), command("get", "t", LEADER_B))
        .await
        .unwrap();
    assert_eq!(
        state(&answer),
        "awaiting-completion",
        "B's task is untouched: {answer}"
    );
}

/// The `data` of every event in an SSE body.
fn sse_events(body: &Value) -> Vec<Value> {
    body.as_str()
        .unwrap_or_default()
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// A Leader authenticated by its certificate streams its task (live and replayed, both
/// dialects): every event carries the task id it sent, never its namespace in the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_keep_a_certified_leaders_own_task_ids() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    publish_guarded(&host, &trust, "[access]\nleaders = \"mtls\"\n").await;
    let a = ca.leader(Some(LEADER_A));
    let rpc = "/agents/guarded/rpc";
    for dialect in ["v1", "v2"] {
        let task = format!("own-{dialect}");
        let mut body = stream_request(dialect, "start", &task, text("hi"), json!({}));
        body["params"]["message"]["senderId"] = json!(LEADER_A);
        let live = {
            let (url, trust, a) = (host.url.clone(), trust.clone(), a.clone());
            tokio::spawn(async move {
                https(&url, "POST", rpc, &trust, Some(&a), None, Some(&body)).await
            })
        };
        // The stream ends when the task does: complete it once it waits.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (_, answer) = https(
                &host.url,
                "POST",
                rpc,
                &trust,
                Some(&a),
                None,
                Some(&command("get", &task, LEADER_A)),
            )
            .await
            .unwrap();
            if answer.get("result").is_some() && state(&answer) == "awaiting-completion" {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{answer}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let (_, answer) = https(
            &host.url,
            "POST",
            rpc,
            &trust,
            Some(&a),
            None,
            Some(&command("complete", &task, LEADER_A)),
        )
        .await
        .unwrap();
        assert_eq!(state(&answer), "completed", "{answer}");
        let (status, streamed) = live.await.unwrap().unwrap();
        assert_eq!(status, 200);
        let mut events = sse_events(&streamed);
        for replay_dialect in ["v1", "v2"] {
            let mut body = stream_request(replay_dialect, "re-stream", &task, json!([]), json!({}));
            body["params"]["message"]["senderId"] = json!(LEADER_A);
            let (_, replayed) = https(&host.url, "POST", rpc, &trust, Some(&a), None, Some(&body))
                .await
                .unwrap();
            events.extend(sse_events(&replayed));
        }
        assert!(events.len() >= 8, "{events:?}");
        for event in &events {
            let data = &event["result"]["eventData"];
            assert!(!event.to_string().contains("\\u001f"), "{event}");
            let id = data.get("taskId").or_else(|| data.get("id")).unwrap();
            assert_eq!(id, &json!(task), "{event}");
        }
    }
}

/// The A2A door takes the same Leaders by the same certificates: the card of an mTLS partner
/// declares the scheme and its interfaces' `https://` URLs; a call without a certificate, with one
/// naming no AIC, or from a Leader not allowed is refused with A2A's authentication errors in
/// both bindings; a certified Leader's task is its own, and the one it reads over AIP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_takes_leaders_by_client_certificate() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    let access =
        format!("[access]\nleaders = \"mtls\"\nallowed-leaders = [{LEADER_A:?}, {LEADER_B:?}]\n");
    publish_guarded(&host, &trust, &access).await;
    let (status, card) = https(
        &host.url,
        "GET",
        "/agents/guarded/.well-known/agent-card.json",
        &trust,
        None,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{card}");
    assert!(
        card["securitySchemes"]["mtls"]["mtlsSecurityScheme"]["description"].is_string(),
        "{card}"
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"mtls": {"list": []}}}])
    );
    // The interfaces are where the card was fetched from: HTTPS (as the ACS document's are).
    for interface in card["supportedInterfaces"].as_array().unwrap() {
        let url = interface["url"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("{}/agents/guarded/a2a", host.url)),
            "{url}"
        );
    }
    let (_, acs) = https(
        &host.url,
        "GET",
        "/agents/guarded/.well-known/acs.json",
        &trust,
        None,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        acs["endPoints"][0]["url"],
        format!("{}/agents/guarded/rpc", host.url),
        "{acs}"
    );

    let call = |identity: Option<Identity>, method: &str, params: Value| {
        let (url, trust) = (host.url.clone(), trust.clone());
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        async move {
            let (status, answer) = https(
                &url,
                "POST",
                "/agents/guarded/a2a",
                &trust,
                identity.as_ref(),
                None,
                Some(&body),
            )
            .await
            .unwrap();
            assert_eq!(status, 200, "{answer}");
            answer
        }
    };
    let send = |id: &str| json!({"message": {"role": "ROLE_USER", "messageId": id, "parts": [{"text": "hi"}]}});
    let refusal = |answer: &Value| {
        (
            answer["error"]["code"].as_i64(),
            answer["error"]["data"][0]["reason"]
                .as_str()
                .map(str::to_string),
        )
    };
    let unauthenticated = (Some(-32040), Some("UNAUTHENTICATED".to_string()));
    let answer = call(None, "SendMessage", send("m-none")).await;
    assert_eq!(refusal(&answer), unauthenticated, "{answer}");
    assert_eq!(
        answer["error"]["data"][0]["metadata"]["scheme"], "mtls",
        "{answer}"
    );
    let answer = call(Some(ca.leader(None)), "SendMessage", send("m-no-aic")).await;
    assert_eq!(refusal(&answer), unauthenticated, "{answer}");
    let answer = call(
        Some(ca.leader(Some(LEADER_C))),
        "SendMessage",
        send("m-stranger"),
    )
    .await;
    assert_eq!(
        refusal(&answer),
        (Some(-32041), Some("PERMISSION_DENIED".to_string())),
        "{answer}"
    );
    let rest = |identity: Option<Identity>| {
        let (url, trust) = (host.url.clone(), trust.clone());
        async move {
            https(
                &url,
                "GET",
                "/agents/guarded/a2a/rest/tasks",
                &trust,
                identity.as_ref(),
                None,
                None,
            )
            .await
            .unwrap()
        }
    };
    let (status, body) = rest(None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    let (status, body) = rest(Some(ca.leader(Some(LEADER_C)))).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "PERMISSION_DENIED");

    // A's task: A's alone, over A2A and over AIP.
    let a = ca.leader(Some(LEADER_A));
    let b = ca.leader(Some(LEADER_B));
    let answer = call(Some(a.clone()), "SendMessage", send("m-a")).await;
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let id = task["id"].as_str().unwrap().to_string();
    let answer = call(Some(b.clone()), "GetTask", json!({"id": id})).await;
    assert_eq!(refusal(&answer).0, Some(-32001), "{answer}");
    let answer = call(Some(b.clone()), "ListTasks", json!({})).await;
    assert_eq!(answer["result"]["totalSize"], 0, "{answer}");
    let answer = call(Some(a.clone()), "ListTasks", json!({"historyLength": 1})).await;
    assert_eq!(
        answer["result"]["totalSize"], 1,
        "refused calls stored nothing: {answer}"
    );
    assert_eq!(answer["result"]["tasks"][0]["id"], id.as_str());
    let (_, answer) = https(
        &host.url,
        "POST",
        "/agents/guarded/rpc",
        &trust,
        Some(&a),
        None,
        Some(&command("get", &id, LEADER_A)),
    )
    .await
    .unwrap();
    assert_eq!(state(&answer), "completed", "{answer}");
    let (_, answer) = https(
        &host.url,
        "POST",
        "/agents/guarded/rpc",
        &trust,
        Some(&b),
        None,
        Some(&command("get", &id, LEADER_B)),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&answer), -32001, "{answer}");
}

/// Issue 30 item 8 over mutual TLS: a certified Leader's `ListTasks` shows its task while the
/// partner still works on it (the task lives in its slot alone then), and only its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certified_leaders_listing_shows_its_task_mid_invocation() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    publish_guarded_bundle(&host, &trust, "hostile", "[access]\nleaders = \"mtls\"\n").await;
    let (a, b) = (ca.leader(Some(LEADER_A)), ca.leader(Some(LEADER_B)));
    let a2a = "/agents/guarded/a2a";
    let request = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let sending = {
        let (url, trust, a) = (host.url.clone(), trust.clone(), a.clone());
        let body = request(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": uuid(), "parts": [{"text": "slow:2000"}]}}),
        );
        tokio::spawn(
            async move { https(&url, "POST", a2a, &trust, Some(&a), None, Some(&body)).await },
        )
    };
    let list = |who: Identity| {
        let (url, trust) = (host.url.clone(), trust.clone());
        let body = request("ListTasks", json!({}));
        async move {
            let (_, listed) = https(&url, "POST", a2a, &trust, Some(&who), None, Some(&body))
                .await
                .unwrap();
            listed["result"]["tasks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        }
    };
    let mut working = Vec::new();
    for _ in 0..30 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        working = list(a.clone()).await;
        if !working.is_empty() {
            break;
        }
    }
    assert_eq!(working.len(), 1, "{working:?}");
    assert_eq!(
        working[0]["status"]["state"], "TASK_STATE_WORKING",
        "{working:?}"
    );
    assert!(list(b).await.is_empty(), "another Leader sees none of it");
    let (_, sent) = sending.await.unwrap().unwrap();
    assert_eq!(sent["result"]["task"]["id"], working[0]["id"], "{sent}");
}

/// Issue 32 over mutual TLS: the chat doors take Leaders by client certificate as AIP and A2A
/// do — none is 401, a stranger 403 — and a session is its Leader's own: the same session id
/// names two tasks for two Leaders, each readable over A2A by its own Leader only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_doors_take_leaders_by_client_certificate() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    let access =
        format!("[access]\nleaders = \"mtls\"\nallowed-leaders = [{LEADER_A:?}, {LEADER_B:?}]\n");
    publish_guarded(&host, &trust, &access).await;
    let post = |path: &'static str, identity: Option<Identity>, body: Value| {
        let (url, trust) = (host.url.clone(), trust.clone());
        async move {
            https(
                &url,
                "POST",
                path,
                &trust,
                identity.as_ref(),
                None,
                Some(&body),
            )
            .await
            .unwrap()
        }
    };
    // `stream: false` and no Accept header: one JSON AgentResponse.
    let turn = |words: &str| {
        json!({"session_id": "shared", "stream": false, "input": [{"role": "user",
            "type": "message", "content": [{"type": "text", "text": words}]}]})
    };
    let process = "/agents/guarded/process";
    let (status, body) = post(process, None, turn("hi")).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED", "{body}");
    assert_eq!(body["error"]["scheme"], "mtls", "{body}");
    let (status, body) = post(process, Some(ca.leader(Some(LEADER_C))), turn("hi")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "PERMISSION_DENIED", "{body}");
    let chat = "/agents/guarded/aiflowy/chat";
    let (status, body) = post(chat, None, json!({"prompt": "hi", "conversationId": 7})).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = post(
        chat,
        Some(ca.leader(Some(LEADER_C))),
        json!({"prompt": "hi", "conversationId": 7}),
    )
    .await;
    assert_eq!(status, 403, "{body}");

    let (a, b) = (ca.leader(Some(LEADER_A)), ca.leader(Some(LEADER_B)));
    let (status, answer_a) = post(process, Some(a.clone()), turn("from a")).await;
    assert_eq!(status, 200, "{answer_a}");
    assert_eq!(answer_a["status"], "completed", "{answer_a}");
    let (status, answer_b) = post(process, Some(b.clone()), turn("from b")).await;
    assert_eq!(status, 200, "{answer_b}");
    let task_of = |answer: &Value| {
        answer["output"][0]["metadata"]["aiphost.taskId"]
            .as_str()
            .or_else(|| answer["metadata"]["aiphost.taskId"].as_str())
            .unwrap_or_else(|| panic!("no task id: {answer}"))
            .to_string()
    };
    let (task_a, task_b) = (task_of(&answer_a), task_of(&answer_b));
    assert_ne!(task_a, task_b, "one session id, two Leaders, two tasks");
    // The AIFlowy door streams to a certified Leader; its task is in that Leader's session.
    let (status, streamed) = post(
        chat,
        Some(a.clone()),
        json!({"prompt": "from a again", "conversationId": "shared"}),
    )
    .await;
    assert_eq!(status, 200, "{streamed}");
    let text = streamed.as_str().unwrap_or_default();
    assert!(text.contains("event: done"), "{text}");

    let get = |identity: Identity, id: String| {
        post(
            "/agents/guarded/a2a",
            Some(identity),
            json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}),
        )
    };
    let (_, answer) = get(a.clone(), task_a.clone()).await;
    assert_eq!(answer["result"]["contextId"], "shared", "{answer}");
    let (_, answer) = get(b.clone(), task_a.clone()).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let (_, answer) = get(a.clone(), task_b.clone()).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let (_, answer) = get(b, task_b).await;
    assert_eq!(answer["result"]["contextId"], "shared", "{answer}");
}

/// A 2026-07-28 MCP request (raw JSON-RPC, as `mcp.rs` sends it) of `method` to `path`, over
/// HTTPS with `identity`: `(HTTP status, the JSON-RPC answer)` — from a JSON body, or the last
/// answer of an SSE one.
async fn mcp_https(
    host: &TestHost,
    trust: &CertificateDer<'static>,
    path: &str,
    identity: Option<&Identity>,
    method: &str,
    name: &str,
    mut params: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "aiphost-tests", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": uuid(), "method": method, "params": params});
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    let (status, answer) = https_with(
        &host.url,
        "POST",
        path,
        trust,
        identity,
        None,
        Some(&body),
        &headers,
    )
    .await
    .unwrap();
    let answer = match answer {
        Value::String(text) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|m| m.get("id").is_some())
            .unwrap_or(Value::String(text)),
        json => json,
    };
    (status, answer)
}

/// Issue 33 point 7 over mutual TLS: a partner's MCP server takes Leaders by client
/// certificate as the other doors do — none is 401, a Leader the
/// partner does not admit 403, an admitted one's `tools/call` runs in that Leader's namespace —
/// and the host's `/mcp` lists and calls the partner's tools for an admitted Leader only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_door_takes_leaders_by_client_certificate() {
    let ca = Ca::new("aiphost test CA");
    let pki = tempfile::tempdir().unwrap();
    let host = tls_host(&ca, pki.path()).await;
    let trust = ca.der();
    let access =
        format!("[access]\nleaders = \"mtls\"\nallowed-leaders = [{LEADER_A:?}, {LEADER_B:?}]\n");
    publish_guarded(&host, &trust, &access).await;
    let (a, b, c) = (
        ca.leader(Some(LEADER_A)),
        ca.leader(Some(LEADER_B)),
        ca.leader(Some(LEADER_C)),
    );
    let path = "/agents/guarded/mcp";
    let call = json!({"name": "echo", "arguments": {"text": "hi over mTLS"}});

    let (status, answer) = mcp_https(
        &host,
        &trust,
        path,
        None,
        "tools/call",
        "echo",
        call.clone(),
    )
    .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"]["data"]["scheme"], "mtls", "{answer}");
    let (status, answer) = mcp_https(
        &host,
        &trust,
        path,
        Some(&c),
        "tools/call",
        "echo",
        call.clone(),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let (status, answer) =
        mcp_https(&host, &trust, path, Some(&c), "tools/list", "", json!({})).await;
    assert_eq!(status, 403, "listing too: {answer}");

    let (status, answer) = mcp_https(
        &host,
        &trust,
        path,
        Some(&a),
        "tools/call",
        "echo",
        call.clone(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert!(
        result["content"].to_string().contains("hi over mTLS"),
        "{answer}"
    );
    // The call's task is A's: A reads it over AIP, B does not find it.
    let task = result["_meta"]["aiphost.taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id: {answer}"))
        .to_string();
    let rpc = "/agents/guarded/rpc";
    let (_, got) = https(
        &host.url,
        "POST",
        rpc,
        &trust,
        Some(&a),
        None,
        Some(&command("get", &task, LEADER_A)),
    )
    .await
    .unwrap();
    assert_eq!(state(&got), "completed", "{got}");
    let (_, got) = https(
        &host.url,
        "POST",
        rpc,
        &trust,
        Some(&b),
        None,
        Some(&command("get", &task, LEADER_B)),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&got), -32001, "{got}");

    // The host's server: an admitted Leader's listing has the partner's tools, a stranger's
    // and an anonymous one's do not (they still list the open partners').
    let tools = |answer: &Value| -> Vec<String> {
        answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {answer}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };
    let list = |identity: Option<Identity>| {
        let (host, trust) = (&host, trust.clone());
        async move {
            let (status, answer) = mcp_https(
                host,
                &trust,
                "/mcp",
                identity.as_ref(),
                "tools/list",
                "",
                json!({}),
            )
            .await;
            assert_eq!(status, 200, "{answer}");
            tools(&answer)
        }
    };
    let listed = list(Some(a.clone())).await;
    assert!(listed.contains(&"guarded__echo".to_string()), "{listed:?}");
    assert!(listed.contains(&"echo__echo".to_string()), "{listed:?}");
    for stranger in [Some(c.clone()), None] {
        let listed = list(stranger).await;
        assert!(
            !listed.iter().any(|t| t.starts_with("guarded__")),
            "{listed:?}"
        );
        assert!(listed.contains(&"echo__echo".to_string()), "{listed:?}");
    }
    // …and its call runs at the partner, as A.
    let host_call = json!({"name": "guarded__echo", "arguments": {"text": "via /mcp"}});
    let (status, answer) = mcp_https(
        &host,
        &trust,
        "/mcp",
        Some(&a),
        "tools/call",
        "guarded__echo",
        host_call.clone(),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["aiphost.agent"], "guarded",
        "{answer}"
    );
    let (status, answer) = mcp_https(
        &host,
        &trust,
        "/mcp",
        Some(&c),
        "tools/call",
        "guarded__echo",
        host_call,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["error"]["code"], -32602,
        "a tool C cannot reach is unknown: {answer}"
    );
}
