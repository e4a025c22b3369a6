//! HTTP/1.1 servers, hand written on tokio sockets: one byte stream per
//! engine connection, dealt over the servers of the URL round robin
//! (`http://h:8088,8089,h2:80/path`), over TLS for `https://` (rustls,
//! offering `http/1.1` by ALPN, the host as SNI and as the name checked;
//! the handshake is part of opening the connection, never of a request). The workload encodes requests and
//! parses responses; this module connects, moves bytes (the shared
//! [`Stream`], so a dropped `fill` loses nothing), says which server a
//! stream is on (its `Host`), and asks the first server its name.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use loadrig_spec::SpecError;
use loadrig_workloads::http::response::MAX_HEAD;
use loadrig_workloads::http::{HttpBackend, HttpConn as Conn};
use loadrig_workloads::{TargetError, TargetInfo, ASIDE_TIMEOUT};

use crate::socket::{PlainDial, Stream};
use crate::url::{hostport, TargetUrl};

const DEFAULT_PORT: u16 = 80;
const DEFAULT_TLS_PORT: u16 = 443;

/// What an HTTPS connection offers by ALPN: HTTP/1.1 alone, the protocol
/// the workload speaks on a byte stream.
const HTTP1: crate::tls::Alpn = &[b"http/1.1"];

/// The most requests one connection keeps in flight: a bound on memory.
const MAX_DEPTH: usize = 65_536;

/// Read buffer growth step.
const READ_CHUNK: usize = 16 * 1024;

const EXPECTED: &str = "http[s]://HOST[:PORT][,PORT|,HOST[:PORT]...][/PATH][?QUERY]";

/// A parsed `http://` URL: the servers, and the request target sent to
/// each (the path and query as written, not decoded: they go on the
/// wire).
#[derive(Debug, Clone)]
pub(crate) struct HttpUrl {
    at: TargetUrl,
    path: String,
}

/// Parse what follows `http://` or (`scheme` is `https`) `https://`. No
/// login (give `-H 'Authorization: ...'`).
pub(crate) fn parse_url(scheme: &str, rest: &str) -> Result<HttpUrl, SpecError> {
    let (before_query, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let tls = scheme == "https";
    let (name, port) = if tls {
        ("https", DEFAULT_TLS_PORT)
    } else {
        ("http", DEFAULT_PORT)
    };
    let (at, _) = TargetUrl::parse(name, before_query, port, EXPECTED)?;
    let at = at.tls_if(scheme, "https");
    if at.user.is_some() || at.password.is_some() {
        return Err(at.bad("no login is taken (send an Authorization header with -H)"));
    }
    let raw = before_query.find('/').map_or("", |i| &before_query[i..]);
    let mut path = if raw.is_empty() {
        "/".to_string()
    } else {
        raw.to_string()
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(at.bad("a space or control character in the path (%-escape it)"));
    }
    if let Some(q) = query {
        path.push('?');
        path.push_str(q);
    }
    Ok(HttpUrl { at, path })
}

/// One or more HTTP servers. Cheap: it connects per use.
pub struct HttpTarget {
    url: Arc<HttpUrl>,
    dial: Arc<PlainDial>,
    /// The server the next engine connection goes to (round robin).
    next: AtomicUsize,
    version: OnceLock<String>,
}

impl HttpTarget {
    pub(crate) fn new(url: HttpUrl, via: Arc<crate::settings::Connector>) -> HttpTarget {
        let at = Arc::new(url.at.clone());
        let tls = at.tls;
        let mut dial = PlainDial::new(at, via, READ_CHUNK, "HTTP");
        if tls {
            dial = dial.over_tls(HTTP1);
        }
        HttpTarget {
            dial: Arc::new(dial),
            url: Arc::new(url),
            next: AtomicUsize::new(0),
            version: OnceLock::new(),
        }
    }

    async fn open(&self, server: usize) -> Result<HttpConn, TargetError> {
        self.dial
            .stream(server)
            .await
            .map_err(|e| TargetError::Unreachable {
                target: self.label(),
                reason: e,
            })
    }

    /// The first server's `Server` header, from a `HEAD` of the path.
    async fn ask(&self) -> Option<()> {
        let mut c = self.dial.open(0).await.ok()?;
        let (_, _, authority) = self.url.at.server(0);
        c.wbuf.extend_from_slice(
            format!(
                "HEAD {} HTTP/1.1\r\nHost: {authority}\r\n\r\n",
                self.url.path
            )
            .as_bytes(),
        );
        loop {
            if let Some(end) = c.rbuf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&c.rbuf[..end]).into_owned();
                let name = head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("server")
                        .then(|| v.trim().to_string())
                })?;
                let _ = self.version.set(name);
                return Some(());
            }
            // A head that never ends is not waited for past the workload's
            // own bound on heads: it would hold the buffer growing.
            if c.rbuf.len() > MAX_HEAD {
                return None;
            }
            c.fill().await.ok()?;
        }
    }
}

impl TargetInfo for HttpTarget {
    async fn server_version(&self) -> Option<String> {
        // Nice to know, never worth waiting for.
        if self.version.get().is_none() {
            let _ = tokio::time::timeout(ASIDE_TIMEOUT, self.ask()).await;
        }
        self.version.get().cloned()
    }

    fn durability(&self) -> Option<String> {
        None
    }

    fn max_depth(&self) -> usize {
        MAX_DEPTH
    }

    fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
        crate::local::first_process(&self.url.at, &["nginx"])
    }
}

impl HttpBackend for HttpTarget {
    type Conn = HttpConn;

    fn servers(&self) -> usize {
        self.url.at.servers.len()
    }

    fn authority(&self, server: usize) -> String {
        self.url.at.server(server).2
    }

    fn path(&self) -> &str {
        &self.url.path
    }

    async fn connect(&self) -> Result<HttpConn, TargetError> {
        let server = self.next.fetch_add(1, Ordering::Relaxed) % self.servers();
        self.open(server).await
    }

    async fn connect_to(&self, server: usize) -> Result<HttpConn, TargetError> {
        self.open(server).await
    }

    fn label(&self) -> String {
        let servers: Vec<String> = self
            .url
            .at
            .servers
            .iter()
            .map(|(h, p)| hostport(h, *p))
            .collect();
        let scheme = self.url.at.scheme;
        format!("{scheme}://{}{}", servers.join(","), self.url.path)
    }
}

/// One connection: a byte stream; the workload encodes and parses.
pub type HttpConn = Stream<PlainDial>;

impl Conn for HttpConn {
    #[inline]
    fn server(&self) -> usize {
        Stream::server(self)
    }

    fn resumed(&self) -> bool {
        Stream::resumed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_workloads::stream::ByteStream;

    #[test]
    fn parses_http_urls() {
        let u = parse_url("http", "127.0.0.1:8088").unwrap();
        assert_eq!(u.at.servers, vec![("127.0.0.1".to_string(), 8088)]);
        assert_eq!(u.path, "/");
        let u = parse_url("http", "h:1,2,[::1]/a%20b/c?x=1&y=/z").unwrap();
        assert_eq!(u.at.servers.len(), 3);
        assert_eq!(u.path, "/a%20b/c?x=1&y=/z");
        let t = HttpTarget::new(
            u,
            crate::settings::Connector::new(&crate::ClientSettings::default()),
        );
        assert_eq!(t.label(), "http://h:1,h:2,[::1]:80/a%20b/c?x=1&y=/z");
        assert_eq!((t.authority(1), t.servers()), ("h:2".to_string(), 3));
        for bad in ["", "/x", "h,,h2", "h:0", "7", "u:p@h", "h:99999", "h/a b"] {
            assert_eq!(
                parse_url("http", bad).unwrap_err().flag,
                "--target",
                "{bad}"
            );
        }
        let u = parse_url("https", "localhost,127.0.0.1:8443/dav/").unwrap();
        assert!(u.at.tls);
        assert_eq!(u.at.servers[0], ("localhost".to_string(), 443));
        let t = HttpTarget::new(
            u,
            crate::settings::Connector::new(&crate::ClientSettings::default()),
        );
        assert_eq!(t.label(), "https://localhost:443,127.0.0.1:8443/dav/");
    }

    #[tokio::test]
    async fn the_server_is_named_and_bytes_move() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for _ in 0..2 {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                s.write_all(b"HTTP/1.1 200 OK\r\nServer: test/1\r\nContent-Length: 0\r\n\r\n")
                    .unwrap();
            }
        });
        let t = HttpTarget::new(
            parse_url("http", &format!("127.0.0.1:{port}/")).unwrap(),
            crate::settings::Connector::new(&crate::ClientSettings::default()),
        );
        assert_eq!(t.server_version().await.as_deref(), Some("test/1"));
        let mut c = t.connect().await.unwrap();
        assert_eq!(Conn::server(&c), 0);
        c.out().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        c.fill().await.unwrap();
        assert!(c.input().starts_with(b"HTTP/1.1 200"));
    }
}
