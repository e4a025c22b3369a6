//! memcached, hand written on tokio sockets: one byte stream per engine
//! connection, dealt over the servers of the URL round robin. The
//! workload encodes and parses (text or binary protocol, with
//! `loadrig_wire::kv`); this module connects, moves bytes (a `ByteStream` on the
//! shared buffered [`Socket`], so a dropped `fill` loses nothing) and asks
//! the first server its version.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use loadrig_spec::SpecError;
use loadrig_wire::kv::memcache::text;

use crate::url::TargetUrl;
use loadrig_workloads::memcache::MemcacheBackend;
use loadrig_workloads::stats::StatsSource;
use loadrig_workloads::{TargetError, TargetInfo, ASIDE_TIMEOUT};

use crate::socket::{PlainDial, Stream};

pub(crate) mod stats;

const DEFAULT_PORT: u16 = 11211;

/// The most requests one connection keeps in flight: a bound on memory.
const MAX_DEPTH: usize = 65_536;

/// Read buffer growth step.
const READ_CHUNK: usize = 16 * 1024;

const EXPECTED: &str = "memcache://HOST[:PORT][,PORT|,HOST[:PORT]...]";

/// Parse what follows `memcache://`: the servers, nothing else.
pub(crate) fn parse_url(rest: &str) -> Result<TargetUrl, SpecError> {
    let (url, options) = TargetUrl::parse("memcache", rest, DEFAULT_PORT, EXPECTED)?;
    url.no_path("no path is taken")?;
    url.no_options(options)?;
    if url.user.is_some() || url.password.is_some() {
        return Err(url.bad("no login is taken"));
    }
    Ok(url)
}

/// One or more memcached servers. Cheap: it connects per use.
pub struct MemcacheTarget {
    at: Arc<TargetUrl>,
    dial: Arc<PlainDial>,
    /// The server the next engine connection goes to (round robin).
    next: AtomicUsize,
    version: OnceLock<String>,
}

impl MemcacheTarget {
    pub(crate) fn new(at: TargetUrl, via: Arc<crate::settings::Connector>) -> MemcacheTarget {
        let at = Arc::new(at);
        MemcacheTarget {
            dial: Arc::new(PlainDial::new(at.clone(), via, READ_CHUNK, "memcached")),
            at,
            next: AtomicUsize::new(0),
            version: OnceLock::new(),
        }
    }

    async fn open(&self, server: usize) -> Result<MemcacheConn, TargetError> {
        self.dial
            .stream(server)
            .await
            .map_err(|e| TargetError::Unreachable {
                target: self.at.label(),
                reason: e,
            })
    }

    /// The first server's `version`.
    async fn ask(&self) -> Option<()> {
        let mut c = self.dial.open(0).await.ok()?;
        text::encode_version(&mut c.wbuf);
        loop {
            match text::parse_version(&c.rbuf) {
                Ok(Some((v, _))) => {
                    let v = String::from_utf8_lossy(v).into_owned();
                    let _ = self.version.set(format!("memcached {v}"));
                    return Some(());
                }
                Ok(None) => c.fill().await.ok()?,
                Err(_) => return None,
            }
        }
    }
}

impl TargetInfo for MemcacheTarget {
    async fn server_version(&self) -> Option<String> {
        // Nice to know, never worth waiting for.
        if self.version.get().is_none() {
            let _ = tokio::time::timeout(ASIDE_TIMEOUT, self.ask()).await;
        }
        self.version.get().cloned()
    }

    fn durability(&self) -> Option<String> {
        Some("memory only: memcached keeps no copy on disk; a restart (or an eviction) loses what was set".into())
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    fn server_stats(&self) -> Vec<Box<dyn StatsSource>> {
        let (host, port) = self.at.servers.first().cloned().unwrap_or_default();
        let stats: Box<dyn StatsSource> = Box::new(stats::McStats::new(self.dial.clone()));
        std::iter::once(stats)
            .chain(crate::local::process_on(&host, port, &["memcached"]))
            .collect()
    }
}

impl MemcacheBackend for MemcacheTarget {
    type Conn = MemcacheConn;

    fn servers(&self) -> usize {
        self.at.servers.len()
    }

    async fn connect(&self) -> Result<MemcacheConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.at.servers.len();
        self.open(server).await
    }

    async fn connect_to(&self, server: usize) -> Result<MemcacheConn, TargetError> {
        self.open(server).await
    }

    fn label(&self) -> String {
        self.at.label()
    }
}

/// One connection: a byte stream; the workload encodes and parses.
pub type MemcacheConn = Stream<PlainDial>;

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_workloads::stream::ByteStream;

    #[test]
    fn parses_memcache_urls() {
        let u = parse_url("127.0.0.1").unwrap();
        assert_eq!(u.servers, vec![("127.0.0.1".to_string(), 11211)]);
        assert_eq!(u.label(), "memcache://127.0.0.1:11211");
        let u = parse_url("h:1,2,[::1]:3/").unwrap();
        assert_eq!(u.label(), "memcache://h:1,h:2,[::1]:3");
        for bad in ["", "h,,h2", "h:0", "7", "h/0", "h?x=1", "u:p@h", "h,99999"] {
            assert_eq!(parse_url(bad).unwrap_err().flag, "--target", "{bad}");
        }
    }

    /// A one-connection server on loopback answering `answer` to the first read.
    fn fake(answer: &'static [u8]) -> MemcacheTarget {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            s.write_all(answer).unwrap();
            std::thread::sleep(std::time::Duration::from_secs(2));
        });
        MemcacheTarget::new(
            parse_url(&format!("127.0.0.1:{port}")).unwrap(),
            crate::settings::Connector::new(&crate::ClientSettings::default()),
        )
    }

    #[tokio::test]
    async fn the_version_is_asked_and_bytes_move() {
        let t = fake(b"VERSION 1.6.18\r\n");
        assert_eq!(
            t.server_version().await.as_deref(),
            Some("memcached 1.6.18")
        );
        let t = fake(b"garbage\r\n");
        assert_eq!(t.server_version().await, None);
        let t = fake(b"END\r\n");
        let mut c = t.connect().await.unwrap();
        c.out().extend_from_slice(b"get k\r\n");
        c.fill().await.unwrap();
        assert_eq!(&c.input()[..], b"END\r\n");
        assert_eq!(c.take_bytes(), (7, 5));
    }
}
