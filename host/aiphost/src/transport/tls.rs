//! HTTPS for Leaders, with optional client certificates (mutual TLS). A Leader's certificate,
//! verified against the operator's CA, names its AIC as a URI SAN `acps://{AIC}` (as ACPs
//! certificates do); partners whose manifest says `leaders = "mtls"` take that as the Leader's
//! identity.
//!
//! Each handshake runs in its connection's own task, within the header timeout, so a slow or
//! silent client never holds up `accept` (see [`super::connections`]).

use crate::tenant::ClientCertificate;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Where the listener's certificate, key and trusted client CAs are.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// PEM: the server's certificate chain.
    pub cert: PathBuf,
    /// PEM: its private key.
    pub key: PathBuf,
    /// PEM: CAs whose client certificates are accepted (`None`: no client certificates).
    pub client_ca: Option<PathBuf>,
}

/// Why TLS could not be set up.
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
    /// A PEM file holds none of what it should.
    #[error("{path} holds no {what}")]
    Empty {
        /// The file.
        path: String,
        /// What it should hold (`certificate`).
        what: &'static str,
    },
    /// rustls refused the configuration (say, a key that does not match the certificate).
    #[error("the TLS configuration is not usable: {0}")]
    Config(String),
}

/// The certificates of a PEM file (at least one).
pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.display().to_string(),
            what: "certificate",
        });
    }
    Ok(certs)
}

/// The rustls server configuration for `files`: client certificates are verified when given
/// and optional (partners decide whether they need one).
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| TlsError::Read {
        path: files.key.display().to_string(),
        reason: e.to_string(),
    })?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_certs(ca)? {
                roots
                    .add(cert)
                    .map_err(|e| TlsError::Config(format!("{}: {e}", ca.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Who is on the other end of a connection.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Its address.
    pub addr: SocketAddr,
    /// The AIC its verified client certificate names (`acps://{AIC}`), if it showed one.
    pub leader: Option<String>,
    /// It showed a verified client certificate that names no AIC.
    pub anonymous_certificate: bool,
}

impl Peer {
    /// Its client certificate, as tenancy's authentication takes it.
    pub fn certificate(&self) -> ClientCertificate<'_> {
        match (&self.leader, self.anonymous_certificate) {
            (Some(leader), _) => ClientCertificate::Leader(leader),
            (None, true) => ClientCertificate::Anonymous,
            (None, false) => ClientCertificate::Absent,
        }
    }
}

/// The AIC a certificate names as a URI SAN `acps://{AIC}`.
pub fn leader_aic(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let san = parsed.subject_alternative_name().ok()??;
    san.value.general_names.iter().find_map(|name| match name {
        x509_parser::extensions::GeneralName::URI(uri) => uri
            .strip_prefix("acps://")
            .map(|aic| aic.trim_end_matches('/').to_string())
            // An AIC names a namespace in store keys: no control characters in it.
            .filter(|aic| !aic.is_empty() && !aic.chars().any(char::is_control)),
        _ => None,
    })
}

/// Finish the TLS handshake of `stream` (from `addr`) and tell who is on the other end. The
/// caller bounds the time it may take.
pub(crate) async fn accept(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    addr: SocketAddr,
) -> std::io::Result<(TlsStream<TcpStream>, Peer)> {
    let tls = acceptor.accept(stream).await?;
    let certificate = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first());
    let leader = certificate.and_then(leader_aic);
    let peer = Peer {
        addr,
        anonymous_certificate: certificate.is_some() && leader.is_none(),
        leader,
    };
    Ok((tls, peer))
}
