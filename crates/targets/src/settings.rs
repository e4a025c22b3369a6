//! What a run's connections take from the command line: TLS trust
//! (`--cacert`, `--insecure`), source addresses (`--bind`), the I/O mode
//! (`--io`), how long opening one may take (`--timeout`) and how much of
//! its replies it may hold (`--max-reply`). The binary's flags stage builds
//! one [`ClientSettings`] and hands it to [`crate::Target::open`]; the
//! opened target keeps it as a [`Connector`] and every connection it opens
//! reads it from there. No process-wide state: two targets opened with
//! different settings connect differently.

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadrig_spec::SpecError;

/// The handshake limit without `--timeout`.
const DEFAULT_HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
/// The least handshake limit taken.
const MIN_HANDSHAKE_LIMIT: Duration = Duration::from_millis(1);
/// The reply limit without `--max-reply`: far above any reply the
/// workloads ask for.
const DEFAULT_MAX_REPLY: usize = 16 << 20;
/// The least reply limit taken.
const MIN_MAX_REPLY: usize = 4096;

/// What the connections of a target need beyond its URL. Plain data; the
/// default is what the flags give when none of them is used.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// What TLS connections trust (docs/guides/tls.md).
    pub trust: TlsTrust,
    /// The local addresses connections leave from, dealt to them round
    /// robin (docs/explanations/client-cost.md); empty: whatever address the kernel picks.
    /// Each is an address of this host ([`crate::check_sources`]).
    pub sources: Vec<IpAddr>,
    /// How the hand-written sockets move their bytes (docs/explanations/io-uring.md).
    pub io: IoMode,
    /// How long opening a connection may take, its protocol's handshake
    /// and login included (docs/reference/limits.md); taken as 1 ms at least.
    pub handshake_limit: Duration,
    /// The most bytes of replies one connection holds unread: a reply that
    /// needs more breaks its connection as a protocol error, counted, and
    /// the engine reconnects (docs/reference/limits.md); taken as 4096 at least.
    pub max_reply: usize,
}

impl Default for ClientSettings {
    fn default() -> ClientSettings {
        ClientSettings {
            trust: TlsTrust::default(),
            sources: Vec::new(),
            io: IoMode::default(),
            handshake_limit: DEFAULT_HANDSHAKE_LIMIT,
            max_reply: DEFAULT_MAX_REPLY,
        }
    }
}

impl ClientSettings {
    /// The source addresses written as `--bind` takes them: consecutive
    /// IPv4 addresses as one range (`127.0.0.2-127.0.0.9`), so a report
    /// records 60,000 of them in a few words. Empty without `--bind`.
    pub fn bound_sources(&self) -> Vec<String> {
        crate::source::as_ranges(&self.sources)
    }
}

/// How the hand-written sockets move their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// Readiness from tokio's reactor (epoll), then `send` and `recv`.
    #[default]
    Epoll,
    /// A plaintext socket on an engine thread whose hooks give it a ring
    /// (`uring_start`, ...) sends and receives through that ring.
    Uring,
}

/// What the certificates of TLS servers are checked against: the web PKI
/// roots (the default) or the certificates of `--cacert`; with
/// `--insecure`, nothing (the handshake's signatures still are).
#[derive(Debug, Clone, Default)]
pub struct TlsTrust {
    /// `--cacert`'s certificates; `None`: the web PKI roots.
    #[cfg(feature = "tls")]
    pub(crate) roots: Option<Arc<rustls::RootCertStore>>,
    pub(crate) insecure: bool,
}

impl TlsTrust {
    /// Trust the certificates in the PEM file `cacert` instead of the web
    /// PKI roots, or none at all (`insecure`). A file that cannot be read
    /// or holds no certificate is a usage error naming `--cacert`. Built
    /// without TLS, nothing is read.
    pub fn new(cacert: Option<&Path>, insecure: bool) -> Result<TlsTrust, SpecError> {
        #[cfg(feature = "tls")]
        return Ok(TlsTrust {
            roots: cacert
                .map(crate::tls::roots_from)
                .transpose()?
                .map(Arc::new),
            insecure,
        });
        #[cfg(not(feature = "tls"))]
        {
            let _ = cacert;
            Ok(TlsTrust { insecure })
        }
    }
}

/// The settings as an opened target keeps them, shared by its
/// connections: the limits taken as they apply, the round robin of source
/// addresses, and the TLS configurations, each built at its first use.
#[derive(Debug)]
pub(crate) struct Connector {
    sources: Vec<IpAddr>,
    /// The source the next connection leaves from (an index into `sources`).
    next: AtomicUsize,
    uring: bool,
    handshake_limit: Duration,
    max_reply: usize,
    #[cfg(feature = "tls")]
    tls: crate::tls::Configs,
}

impl Connector {
    pub(crate) fn new(settings: &ClientSettings) -> Arc<Connector> {
        Arc::new(Connector {
            sources: settings.sources.clone(),
            next: AtomicUsize::new(0),
            uring: settings.io == IoMode::Uring,
            handshake_limit: settings.handshake_limit.max(MIN_HANDSHAKE_LIMIT),
            max_reply: settings.max_reply.max(MIN_MAX_REPLY),
            #[cfg(feature = "tls")]
            tls: crate::tls::Configs::new(settings.trust.clone()),
        })
    }

    /// How long opening one connection may take.
    pub(crate) fn handshake_limit(&self) -> Duration {
        self.handshake_limit
    }

    /// The most one connection's read buffer may hold.
    pub(crate) fn max_reply(&self) -> usize {
        self.max_reply
    }

    /// Whether sockets go onto their engine thread's ring, when it has one.
    pub(crate) fn uring(&self) -> bool {
        self.uring
    }

    /// The address the next connection leaves from, if `--bind` gave any.
    pub(crate) fn next_source(&self) -> Option<IpAddr> {
        if self.sources.is_empty() {
            return None;
        }
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        Some(self.sources[k % self.sources.len()])
    }

    /// The client configuration for `check`, built at the first use.
    #[cfg(feature = "tls")]
    pub(crate) fn tls_config(&self, check: crate::tls::Check) -> Arc<rustls::ClientConfig> {
        self.tls.get(check)
    }

    /// The client configuration offering `protocols` by ALPN, built at
    /// the first use.
    #[cfg(feature = "tls")]
    pub(crate) fn tls_offering(&self, protocols: crate::tls::Alpn) -> Arc<rustls::ClientConfig> {
        self.tls.offering(protocols)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_and_the_least_limits() {
        let c = Connector::new(&ClientSettings::default());
        assert_eq!(c.handshake_limit(), Duration::from_secs(10));
        assert_eq!(c.max_reply(), 16 << 20);
        assert!(!c.uring());
        assert_eq!(c.next_source(), None);
        let c = Connector::new(&ClientSettings {
            handshake_limit: Duration::ZERO,
            max_reply: 1,
            ..ClientSettings::default()
        });
        assert_eq!(c.handshake_limit(), Duration::from_millis(1));
        assert_eq!(c.max_reply(), 4096);
    }

    #[test]
    fn sources_are_dealt_round_robin_per_target() {
        let settings = ClientSettings {
            sources: vec!["127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap()],
            ..ClientSettings::default()
        };
        let (a, b) = (Connector::new(&settings), Connector::new(&settings));
        let dealt: Vec<_> = (0..3).filter_map(|_| a.next_source()).collect();
        assert_eq!(
            dealt,
            [
                settings.sources[0],
                settings.sources[1],
                settings.sources[0]
            ]
        );
        // Another target's round robin is its own.
        assert_eq!(b.next_source(), Some(settings.sources[0]));
        assert_eq!(settings.bound_sources(), ["127.0.0.2-127.0.0.3"]);
    }
}
