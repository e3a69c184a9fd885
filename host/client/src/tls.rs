//! HTTPS for the clients, with an optional client certificate (mutual TLS), for Leaders a
//! partner knows by certificate.
//!
//! reqwest is built here without a TLS backend: its rustls backend would need a process-wide
//! crypto provider that every other reqwest client in the workspace would then have to install
//! first. This is a small HTTP/1.1 client over tokio-rustls with the ring provider instead, as
//! the host's own TLS listener uses; one connection per request, as the CLI makes few.
//!
//! The client reads its PEM files itself (not through the host's listener code) so that it
//! needs nothing of the server crate.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The files of a client's TLS: its certificate and key, and the CA it trusts.
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    /// PEM: the Leader's certificate chain (its AIC as the URI SAN `acps://{AIC}`).
    pub cert: Option<PathBuf>,
    /// PEM: the certificate's private key.
    pub key: Option<PathBuf>,
    /// PEM: the CAs to trust for the host's certificate. `None`: the system's (`SSL_CERT_FILE`,
    /// else the usual bundle paths).
    pub ca: Option<PathBuf>,
}

/// Why the client's TLS could not be set up from its files.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read, or not as PEM.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A PEM file holds no certificate.
    #[error("{path} holds no certificate")]
    NoCertificate {
        /// The file.
        path: String,
    },
    /// rustls refused the configuration (say, a key that does not match the certificate).
    #[error("the TLS configuration is not usable: {0}")]
    Config(String),
}

/// The certificates of a PEM file (at least one).
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.display().to_string(),
        });
    }
    Ok(certs)
}

/// What went wrong with an HTTPS request.
#[derive(Debug, thiserror::Error)]
pub enum HttpsError {
    /// The URL is not one this client can reach.
    #[error("not an https:// URL with a host: {0}")]
    Url(String),
    /// No TCP connection to the host.
    #[error("cannot connect to {0}")]
    Connect(String, #[source] std::io::Error),
    /// No TCP connection within the connect timeout.
    #[error("no connection to {0} within {1:?}")]
    ConnectTimeout(String, Duration),
    /// The TLS handshake failed (say, the host does not trust the client's certificate).
    #[error("TLS handshake with {0} failed")]
    Handshake(String, #[source] std::io::Error),
    /// HTTP over the connection failed.
    #[error("HTTP over TLS failed")]
    Http(#[from] hyper::Error),
    /// The request could not be built (a header value that is not one).
    #[error("cannot build the request")]
    Request(#[from] hyper::http::Error),
}

/// The bundles of trusted CAs systems usually have, for `ClientTls { ca: None, .. }`.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// An HTTPS client for `files`.
#[derive(Clone)]
pub(crate) struct Https {
    connector: tokio_rustls::TlsConnector,
}

impl Https {
    pub(crate) fn new(files: &ClientTls) -> Result<Https, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        let ca = match &files.ca {
            Some(ca) => Some(ca.clone()),
            None => std::env::var_os("SSL_CERT_FILE")
                .map(PathBuf::from)
                .or_else(|| {
                    SYSTEM_BUNDLES
                        .iter()
                        .map(PathBuf::from)
                        .find(|p| p.is_file())
                }),
        };
        if let Some(ca) = &ca {
            for cert in read_certs(ca)? {
                roots
                    .add(cert)
                    .map_err(|e| TlsError::Config(format!("{}: {e}", ca.display())))?;
            }
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots);
        let config = match (&files.cert, &files.key) {
            (Some(cert), Some(key)) => {
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Read {
                    path: key.display().to_string(),
                    reason: e.to_string(),
                })?;
                builder
                    .with_client_auth_cert(read_certs(cert)?, key)
                    .map_err(|e| TlsError::Config(e.to_string()))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(TlsError::Config(
                    "a client certificate needs its key, and a key its certificate".into(),
                ));
            }
        };
        Ok(Https {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }

    /// POST `body` to `url` with `headers`; the answer's head, its body to read on.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        connect_timeout: Duration,
    ) -> Result<hyper::Response<Incoming>, HttpsError> {
        let uri: hyper::Uri = url.parse().map_err(|_| HttpsError::Url(url.into()))?;
        let (Some("https"), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return Err(HttpsError::Url(url.into()));
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(443);
        let authority = format!("{host}:{port}");
        let name = ServerName::try_from(host.clone()).map_err(|_| HttpsError::Url(url.into()))?;
        let tcp = tokio::time::timeout(
            connect_timeout,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        .map_err(|_| HttpsError::ConnectTimeout(authority.clone(), connect_timeout))?
        .map_err(|e| HttpsError::Connect(authority.clone(), e))?;
        let tls = tokio::time::timeout(connect_timeout, self.connector.connect(name, tcp))
            .await
            .map_err(|_| HttpsError::ConnectTimeout(authority.clone(), connect_timeout))?
            .map_err(|e| HttpsError::Handshake(authority.clone(), e))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await?;
        // The connection is driven in its own task for as long as the answer is read.
        tokio::spawn(connection);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut request = hyper::Request::post(path).header(hyper::header::HOST, &authority);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        Ok(sender.send_request(request).await?)
    }
}

/// The next chunk of an answer's body (`None` at its end), skipping trailers.
pub(crate) async fn next_chunk(body: &mut Incoming) -> Option<Result<Bytes, HttpsError>> {
    loop {
        match body.frame().await? {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    return Some(Ok(data));
                }
            }
            Err(e) => return Some(Err(e.into())),
        }
    }
}
