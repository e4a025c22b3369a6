//! `--metrics-listen ADDR`: a small HTTP/1.1 server on a thread of its
//! own answering `GET /metrics` with the latest frame as OpenMetrics
//! text. The listener is bound before anything connects (an address
//! taken is a usage error then); the engine's thread only swaps in the
//! latest frame, a pointer under a lock no scrape holds while it
//! renders or writes. Each request is read up to [`MAX_REQUEST`] bytes
//! within [`IO_TIMEOUT`]; one connection at a time, closed after its
//! answer (a scraper every second needs no more).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::openmetrics::{self, CONTENT_TYPE};
use super::{Exporter, Frame, Labels};

/// The most of a request read: a scraper's GET is a few hundred bytes.
pub const MAX_REQUEST: usize = 8 * 1024;
/// How long a scraper may take to send its request or read the answer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The bound listener, before the run starts serving from it.
#[derive(Debug)]
pub struct Listener {
    inner: TcpListener,
}

impl Listener {
    /// Bind `addr` now (`host:port`; port 0 picks one).
    pub fn bind(addr: &str) -> std::io::Result<Listener> {
        Ok(Listener {
            inner: TcpListener::bind(addr)?,
        })
    }
}

/// What the server thread and the run share: the latest frame, and how
/// many scrapes it answered since that frame came.
#[derive(Default)]
struct Shared {
    latest: Mutex<Option<Arc<Frame>>>,
    /// Bumped with each frame published; a scrape records the one it saw.
    version: AtomicU64,
    scraped: AtomicU64,
}

/// The running server, as an [`Exporter`]; clones publish to the same.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
    /// After the run: wait this long at most for a scrape of the last frame.
    linger: Duration,
}

impl Server {
    /// Serve from `listener` on a thread of its own, until the process ends.
    pub fn start(listener: Listener, labels: Labels, linger: Duration) -> std::io::Result<Server> {
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("metrics-listen".into())
            .spawn(move || accept_loop(&listener.inner, &theirs, &labels))?;
        Ok(Server { shared, linger })
    }
}

impl Exporter for Server {
    fn publish(&mut self, frame: Arc<Frame>) {
        *self
            .shared
            .latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(frame);
        self.shared.version.fetch_add(1, Ordering::Release);
    }

    /// With `--metrics-linger`, wait until the last frame was scraped.
    fn finish(&mut self) -> Option<String> {
        if self.linger.is_zero() {
            return None;
        }
        let last = self.shared.version.load(Ordering::Acquire);
        let until = Instant::now() + self.linger;
        while self.shared.scraped.load(Ordering::Acquire) < last {
            if Instant::now() >= until {
                return Some(
                    "metrics: the last values were not scraped within --metrics-linger".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

fn accept_loop(listener: &TcpListener, shared: &Shared, labels: &Labels) {
    for conn in listener.incoming() {
        match conn {
            // A scraper that fails its exchange is its own problem.
            Ok(stream) => {
                let _ = answer(stream, shared, labels);
            }
            // A failed accept (descriptors short): a pause, not a spin.
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Read one request (bounded) and answer it.
fn answer(mut stream: TcpStream, shared: &Shared, labels: &Labels) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let (status, kind, body) = match request_line(&head) {
        Some(("GET", path)) if path == "/metrics" || path.starts_with("/metrics?") => {
            let seen = shared.version.load(Ordering::Acquire);
            let frame = shared
                .latest
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let body = match frame {
                Some(f) => openmetrics::render(&f, labels),
                None => "# EOF\n".to_string(),
            };
            shared.scraped.fetch_max(seen, Ordering::AcqRel);
            ("200 OK", CONTENT_TYPE, body)
        }
        Some(("GET", _)) => ("404 Not Found", "text/plain", "GET /metrics\n".to_string()),
        _ => (
            "400 Bad Request",
            "text/plain",
            "GET /metrics\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// The request's head, up to the blank line, at most [`MAX_REQUEST`] bytes.
fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    while len < buf.len() {
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            break;
        }
        len += n;
        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// The method and path of a request's first line.
fn request_line(head: &[u8]) -> Option<(&str, &str)> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut words = line.split(' ');
    let method = words.next()?;
    let path = words.next()?;
    words
        .next()?
        .starts_with("HTTP/1.")
        .then_some((method, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn a_request_line_is_read_and_a_bad_one_is_none() {
        assert_eq!(
            request_line(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(request_line(b"GET /metrics\r\n"), None);
        assert_eq!(request_line(b"\xff\xfe"), None);
    }

    /// A scrape before any lap is an empty exposition; after one, the
    /// frame's text, and the scrape is counted for the linger.
    #[test]
    fn a_scrape_gets_the_latest_frame() {
        let l = Listener::bind("127.0.0.1:0").expect("a free port");
        let addr = l.inner.local_addr().expect("bound");
        let labels = Labels {
            run: "r".into(),
            workload: "w".into(),
            target: "t".into(),
            shard: "0/1".into(),
        };
        let mut s = Server::start(l, labels, Duration::from_secs(5)).expect("thread");
        assert!(get(addr, "/metrics").ends_with("\r\n\r\n# EOF\n"));
        assert!(get(addr, "/other").starts_with("HTTP/1.1 404"));
        s.publish(Arc::new(Frame {
            unix_ms: 0,
            kinds: Vec::new(),
            in_flight: 7,
            clients: 1,
            connections: 1,
            cpu_user: 0.0,
            cpu_system: 0.0,
            rss_bytes: 0,
        }));
        let page = get(addr, "/metrics");
        assert!(
            page.contains("application/openmetrics-text; version=1.0.0"),
            "{page}"
        );
        let line = "\nloadrig_in_flight{run=\"r\",workload=\"w\",target=\"t\",shard=\"0/1\"} 7\n";
        assert!(page.contains(line), "{page}");
        assert_eq!(s.finish(), None, "the last frame was scraped");
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut c = TcpStream::connect(addr).expect("connect");
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
        let mut out = String::new();
        c.read_to_string(&mut out).expect("read");
        out
    }
}
