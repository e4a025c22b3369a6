//! `--out influxdb=URL` and `--out prometheus=URL`: frames pushed over
//! HTTP from a thread of their own. The run hands each frame over with a
//! `try_send` into a queue of [`QUEUE`] frames: an endpoint that is
//! down, slow or refusing fills the queue, and what does not fit is
//! counted, never waited for and never stored beyond it. Every request
//! has its timeouts ([`TIMEOUT`]) and reads at most [`MAX_ANSWER`]
//! bytes of the answer. At the end the queue is given [`DRAIN`] to
//! empty; the samples not sent are said in one line.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use super::{influx, remote_write, Exporter, Frame, Labels};

/// Frames waiting to be sent, at most.
pub const QUEUE: usize = 16;
/// Connect, write and read timeouts of one request.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// How long the end of the run waits for the queue to empty.
pub const DRAIN: Duration = Duration::from_secs(5);
/// The most of an answer read: its status line is all that matters.
pub const MAX_ANSWER: usize = 4 * 1024;

/// Which protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// InfluxDB 1.x's `/write`: line protocol, a batch per lap.
    Influx,
    /// Prometheus remote write 1.0: protobuf, snappy.
    RemoteWrite,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Influx => "influxdb",
            Protocol::RemoteWrite => "prometheus",
        }
    }

    /// The samples a frame's request carries, counted without encoding
    /// it (what a frame the queue had no room for costs the run).
    fn samples(self, frame: &Frame) -> u64 {
        match self {
            Protocol::Influx => influx::samples(frame),
            Protocol::RemoteWrite => remote_write::samples(frame),
        }
    }

    /// The request body of a frame, its headers, and the samples it carries.
    fn encode(self, frame: &Frame, labels: &Labels) -> (Vec<u8>, &'static str, u64) {
        match self {
            Protocol::Influx => {
                let (text, n) = influx::encode(frame, labels);
                (text.into_bytes(), influx::HEADERS, n)
            }
            Protocol::RemoteWrite => {
                let (body, n) = remote_write::encode(frame, labels);
                (body, remote_write::HEADERS, n)
            }
        }
    }
}

/// An `http://HOST[:PORT]/PATH` endpoint, taken apart once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub protocol: Protocol,
    /// As given, for messages.
    pub url: String,
    /// `host:port`.
    pub authority: String,
    /// Path and query.
    pub path: String,
}

impl Endpoint {
    /// `influxdb=URL` or `prometheus=URL`; `None` when the name is
    /// neither (then the word is something else, a report file).
    pub fn parse(word: &str) -> Option<Result<Endpoint, String>> {
        let (name, url) = word.split_once('=')?;
        let protocol = match name {
            "influxdb" => Protocol::Influx,
            "prometheus" => Protocol::RemoteWrite,
            _ => return None,
        };
        Some(Endpoint::of(protocol, url))
    }

    fn of(protocol: Protocol, url: &str) -> Result<Endpoint, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "{}={url}: an http:// URL (https is not pushed to)",
                protocol.name()
            )
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!(
                "{}={url}: a host (and no user) after http://",
                protocol.name()
            ));
        }
        let authority = match authority.rsplit_once(':') {
            Some((_, port)) if port.parse::<u16>().is_ok() => authority.to_string(),
            _ => format!("{authority}:80"),
        };
        Ok(Endpoint {
            protocol,
            url: url.to_string(),
            authority,
            path: path.to_string(),
        })
    }
}

/// What the sending thread reports when it is done.
#[derive(Debug, Default)]
struct Sent {
    samples: u64,
    lost: u64,
    last_error: Option<String>,
}

/// One endpoint's pusher, as an [`Exporter`].
pub struct Pusher {
    endpoint: Endpoint,
    tx: Option<SyncSender<Arc<Frame>>>,
    done: Receiver<Sent>,
    /// Frames the queue had no room for, and their samples.
    dropped: u64,
}

impl Pusher {
    /// The sending thread started, nothing sent yet.
    pub fn start(endpoint: Endpoint, labels: Labels) -> std::io::Result<Pusher> {
        let (tx, rx) = mpsc::sync_channel::<Arc<Frame>>(QUEUE);
        let (done_tx, done) = mpsc::channel();
        let ep = endpoint.clone();
        std::thread::Builder::new()
            .name(format!("push-{}", endpoint.protocol.name()))
            .spawn(move || {
                let _ = done_tx.send(send_all(&ep, &labels, &rx));
            })?;
        Ok(Pusher {
            endpoint,
            tx: Some(tx),
            done,
            dropped: 0,
        })
    }
}

impl Exporter for Pusher {
    fn publish(&mut self, frame: Arc<Frame>) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(frame) {
            Ok(()) => {}
            Err(TrySendError::Full(f) | TrySendError::Disconnected(f)) => {
                self.dropped += self.endpoint.protocol.samples(&f);
            }
        }
    }

    fn finish(&mut self) -> Option<String> {
        drop(self.tx.take());
        let name = self.endpoint.protocol.name();
        let url = &self.endpoint.url;
        let Ok(sent) = self.done.recv_timeout(DRAIN) else {
            // Frames still queued behind a request that hangs: given up,
            // their number unknown to this thread.
            return Some(format!(
                "export {name} {url}: at least {} samples not sent (still sending after {}s; given up)",
                self.dropped,
                DRAIN.as_secs()
            ));
        };
        let lost = sent.lost + self.dropped;
        if lost == 0 {
            return None;
        }
        let why = sent
            .last_error
            .map(|w| format!(" ({w})"))
            .unwrap_or_default();
        Some(format!(
            "export {name} {url}: {lost} samples not sent, {} sent{why}",
            sent.samples
        ))
    }
}

/// The thread: each frame encoded and posted, failures counted.
fn send_all(ep: &Endpoint, labels: &Labels, rx: &Receiver<Arc<Frame>>) -> Sent {
    let mut sent = Sent::default();
    for frame in rx {
        let (body, headers, n) = ep.protocol.encode(&frame, labels);
        match post(ep, headers, &body) {
            Ok(()) => sent.samples += n,
            Err(e) => {
                sent.lost += n;
                sent.last_error = Some(e);
            }
        }
    }
    sent
}

/// One POST, `Ok` on a 2xx answer.
fn post(ep: &Endpoint, headers: &str, body: &[u8]) -> Result<(), String> {
    let addr = ep
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", ep.authority))?
        .next()
        .ok_or_else(|| format!("{}: no address", ep.authority))?;
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        ep.path,
        ep.authority,
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(body).map_err(|e| e.to_string())?;
    let mut answer = Vec::with_capacity(256);
    (&mut s)
        .take(MAX_ANSWER as u64)
        .read_to_end(&mut answer)
        .map_err(|e| e.to_string())?;
    let line = answer.split(|b| *b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    match line.split(' ').nth(1) {
        Some(code) if code.starts_with('2') => Ok(()),
        _ => Err(format!("answered {}", line.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_taken_apart_once() {
        let e = Endpoint::parse("influxdb=http://db:8086/write?db=x")
            .unwrap()
            .unwrap();
        assert_eq!(e.protocol, Protocol::Influx);
        assert_eq!(
            (e.authority.as_str(), e.path.as_str()),
            ("db:8086", "/write?db=x")
        );
        let e = Endpoint::parse("prometheus=http://p/api/v1/write")
            .unwrap()
            .unwrap();
        assert_eq!(e.authority, "p:80");
        assert!(Endpoint::parse("r.json").is_none());
        assert!(Endpoint::parse("a=b.json").is_none());
        assert!(Endpoint::parse("influxdb=https://db/write")
            .unwrap()
            .is_err());
        assert!(Endpoint::parse("prometheus=http:///x").unwrap().is_err());
    }
}
