//! TLS for the targets that speak it (PostgreSQL's `sslmode`, `rediss://`,
//! NATS's `tls://` and `tls_required`, `mqtts://`, `https://`): the rustls client
//! configurations (ring, TLS 1.2 and 1.3) of one opened target, built from
//! what its settings trust ([`crate::TlsTrust`]) at their first use, one
//! per check, shared by its connections ([`Configs`]). Certificates are
//! verified by default against the web PKI roots, or against `--cacert`
//! alone; `--insecure` skips the certificate check but still checks the
//! handshake's signatures (docs/guides/tls.md).

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use loadrig_spec::SpecError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};

use crate::TlsTrust;

/// A target's client configurations, one per [`Check`], each built once,
/// and one per list of ALPN protocols a target offers (HTTPS).
#[derive(Debug)]
pub(crate) struct Configs {
    trust: TlsTrust,
    full: OnceLock<Arc<ClientConfig>>,
    chain_only: OnceLock<Arc<ClientConfig>>,
    /// The full check's configuration offering each list of protocols:
    /// a target asks for one or two lists, at connect (a cold path).
    alpn: Mutex<Vec<(Alpn, Arc<ClientConfig>)>>,
}

/// The application protocols a client offers in its handshake, in order
/// of preference (`h2`, then `http/1.1`).
pub(crate) type Alpn = &'static [&'static [u8]];

impl Configs {
    pub(crate) fn new(trust: TlsTrust) -> Configs {
        Configs {
            trust,
            full: OnceLock::new(),
            chain_only: OnceLock::new(),
            alpn: Mutex::new(Vec::new()),
        }
    }

    /// The full check's configuration offering `protocols` by ALPN (its
    /// session cache is the one of every connection that offers them, so a
    /// reconnect resumes).
    pub(crate) fn offering(&self, protocols: Alpn) -> Arc<ClientConfig> {
        let mut built = self.alpn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = built.iter().find(|(p, _)| *p == protocols) {
            return c.clone();
        }
        let mut config = (*self.get(Check::Full)).clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        let config = Arc::new(config);
        built.push((protocols, config.clone()));
        config
    }

    /// The client configuration for `check`, built at the first use.
    pub(crate) fn get(&self, check: Check) -> Arc<ClientConfig> {
        let cell = match check {
            Check::Full => &self.full,
            Check::ChainOnly => &self.chain_only,
        };
        cell.get_or_init(|| build(&self.trust, check)).clone()
    }
}

/// The certificates in the PEM file `path` (`--cacert`): a file that
/// cannot be read or holds no certificate is a usage error.
pub(crate) fn roots_from(path: &Path) -> Result<RootCertStore, SpecError> {
    let bad = |why: String| SpecError::new("--cacert", format!("{}: {why}", path.display()));
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| bad(format!("not a PEM certificate file ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("a certificate rustls cannot use ({e})")))?;
    }
    if roots.is_empty() {
        return Err(bad("no PEM certificate in it".to_string()));
    }
    Ok(roots)
}

fn web_roots() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// How much of the server's certificate to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// The chain to a trusted root and the host name (the default).
    Full,
    /// The chain only, any host name (PostgreSQL's `sslmode=verify-ca`).
    ChainOnly,
}

fn build(trust: &TlsTrust, check: Check) -> Arc<ClientConfig> {
    let roots = trust.roots.clone().unwrap_or_else(|| Arc::new(web_roots()));
    let provider = Arc::new(ring::default_provider());
    // ring has both of rustls's safe default versions, TLS 1.2 and 1.3.
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports TLS 1.2 and 1.3");
    let config = if trust.insecure || check == Check::ChainOnly {
        let inner = (!trust.insecure)
            .then(|| {
                WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .ok()
            })
            .flatten();
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Lenient { inner, provider }))
            .with_no_client_auth()
    } else {
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    Arc::new(config)
}

/// The name the server's certificate must carry: `host` as given (a name
/// or an IP address).
pub(crate) fn server_name(host: &str) -> std::io::Result<ServerName<'static>> {
    ServerName::try_from(host.to_string()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("'{host}' is not a host name TLS can check"),
        )
    })
}

/// A rustls error as an I/O error whose text says it is TLS's
/// (`TLS: invalid peer certificate: UnknownIssuer`); its kind is not
/// `InvalidData`, which would read as "not a ... server".
pub(crate) fn io_error(e: rustls::Error) -> std::io::Error {
    std::io::Error::other(said(&e))
}

/// A rustls error in a user's words: a certificate no trusted root signed
/// names the two flags that deal with it.
pub(crate) fn said(e: &rustls::Error) -> String {
    use rustls::{CertificateError, Error};
    match e {
        Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "TLS: {e} (the server's certificate is not signed by a trusted root: \
             --cacert FILE trusts its CA, --insecure skips the check)"
        ),
        _ => format!("TLS: {e}"),
    }
}

/// The verifier of `--insecure` (no certificate check: `inner` is none)
/// and of `verify-ca` (`inner`'s check, but any host name). Handshake
/// signatures are checked either way.
#[derive(Debug)]
struct Lenient {
    inner: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.inner else {
            return Ok(ServerCertVerified::assertion());
        };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_issuer_names_the_flags() {
        let e = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let text = said(&e);
        assert!(
            text.contains("--cacert") && text.contains("--insecure"),
            "{text}"
        );
        assert_eq!(
            said(&rustls::Error::DecryptError),
            "TLS: cannot decrypt peer's message"
        );
    }

    #[test]
    fn a_cacert_without_certificates_is_a_usage_error() {
        let dir = tempfile_dir();
        let path = dir.join("empty.pem");
        std::fs::write(&path, "nothing here\n").expect("write");
        let e = roots_from(&path).expect_err("refused");
        assert_eq!(e.flag, "--cacert");
        assert!(e.message.contains("no PEM certificate"), "{}", e.message);
        let e = roots_from(&dir.join("missing.pem")).expect_err("refused");
        assert!(e.message.contains("missing.pem"), "{}", e.message);
    }

    #[test]
    fn each_configuration_is_built_once_and_host_names_are_checked() {
        let configs = Configs::new(TlsTrust::default());
        let full = configs.get(Check::Full);
        assert!(Arc::ptr_eq(&full, &configs.get(Check::Full)));
        assert!(!Arc::ptr_eq(&full, &configs.get(Check::ChainOnly)));
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("localhost").is_ok());
        assert!(server_name("bad host").is_err());
    }

    #[test]
    fn each_alpn_list_has_its_configuration() {
        let configs = Configs::new(TlsTrust::default());
        const H1: Alpn = &[b"http/1.1"];
        const H2: Alpn = &[b"h2", b"http/1.1"];
        let h1 = configs.offering(H1);
        assert_eq!(h1.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(Arc::ptr_eq(&h1, &configs.offering(H1)));
        assert_eq!(configs.offering(H2).alpn_protocols.len(), 2);
        assert!(configs.get(Check::Full).alpn_protocols.is_empty());
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("loadrig-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }
}
