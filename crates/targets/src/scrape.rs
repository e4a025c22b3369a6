//! A statistics page fetched over plain HTTP on a connection of its own
//! each lap: NATS's `/varz` and etcd's `/metrics` (docs/explanations/resources.md).

use std::sync::Arc;
use std::time::Duration;

use loadrig_workloads::stats::{Reading, Sampled, StatsSource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::settings::Connector;

/// A page's text to its readings, or why it has none.
pub(crate) type Parse = fn(&str) -> Result<Vec<Reading>, String>;

/// A statistics page as a source: `GET path` on `host:port` each sample,
/// its body read by `parse`.
pub(crate) struct Page {
    /// The target's settings: the page is fetched from its next source
    /// address, as the load's connections are.
    pub via: Arc<Connector>,
    pub server: &'static str,
    pub host: String,
    pub port: u16,
    pub path: &'static str,
    pub parse: Parse,
}

impl StatsSource for Page {
    fn name(&self) -> String {
        format!("{} {} on port {}", self.server, self.path, self.port)
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let body = get(&self.via, &self.host, self.port, self.path)
                .await
                .map_err(|e| format!("{}: {e}", self.path))?;
            (self.parse)(&body)
        })
    }
}

/// The most an answer may be (`/varz` is a few kilobytes, etcd's
/// `/metrics` about a hundred).
const MAX_ANSWER: u64 = 4 << 20;

/// `GET path` over HTTP/1.0 (the server closes after the answer): the
/// body of a 200 answer.
pub(crate) async fn get(
    via: &Connector,
    host: &str,
    port: u16,
    path: &str,
) -> std::io::Result<String> {
    let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    // From the next `--bind` address, as the load's connections.
    let mut s = tokio::time::timeout(Duration::from_secs(2), crate::socket::dial(via, host, port))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await?;
    let mut answer = Vec::new();
    (&mut s).take(MAX_ANSWER).read_to_end(&mut answer).await?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| bad("no HTTP answer".into()))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(bad(format!("answered {status}")));
    }
    Ok(body.to_string())
}
