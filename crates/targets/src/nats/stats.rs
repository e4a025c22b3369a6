//! NATS's own statistics per lap: the monitoring endpoint's `/varz`
//! (nats-server started with `-m PORT`, 8222 by default and in
//! `scripts/services`), fetched with a plain HTTP/1.0 GET on a connection
//! of its own each lap (docs/resources.md). A server without monitoring
//! answers nothing there: each sample fails and is counted as failed.

use std::time::Duration;

use loadrig_workloads::stats::{Reading, Sampled, Series, StatsSource};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// nats-server's default monitoring port.
pub(crate) const MONITOR_PORT: u16 = 8222;

/// The most a `/varz` answer may be (it is a few kilobytes).
const MAX_ANSWER: u64 = 1 << 20;

/// `/varz`'s field, the reading's name, and whether it is a counter.
pub(crate) const SERIES: &[Series] = &[
    ("mem", "nats.mem", false),
    ("cpu", "nats.cpu_percent", false),
    ("connections", "nats.connections", false),
    ("subscriptions", "nats.subscriptions", false),
    ("slow_consumers", "nats.slow_consumers", true),
    ("in_msgs", "nats.in_msgs", true),
    ("out_msgs", "nats.out_msgs", true),
    ("in_bytes", "nats.in_bytes", true),
    ("out_bytes", "nats.out_bytes", true),
];

pub(crate) struct Varz {
    host: String,
    port: u16,
}

impl Varz {
    pub(crate) fn new(host: String, port: u16) -> Varz {
        Varz { host, port }
    }
}

impl StatsSource for Varz {
    fn name(&self) -> String {
        format!("nats /varz on port {}", self.port)
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let body = get(&self.host, self.port, "/varz")
                .await
                .map_err(|e| format!("/varz: {e}"))?;
            parse(&body)
        })
    }
}

/// `GET path` over HTTP/1.0 (the server closes after the answer): the
/// body of a 200 answer.
async fn get(host: &str, port: u16, path: &str) -> std::io::Result<String> {
    let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut s = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect((host, port)))
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

fn parse(body: &str) -> Result<Vec<Reading>, String> {
    let v: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("/varz is not JSON: {e}"))?;
    Ok(SERIES
        .iter()
        .filter_map(|(field, name, counter)| {
            let value = v.get(field)?.as_f64()?;
            Some(Reading {
                name,
                value,
                counter: *counter,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varz_fields_are_read() {
        let got = parse(r#"{"mem": 100, "cpu": 1.5, "in_msgs": 7, "version": "2.9"}"#).unwrap();
        assert_eq!(
            got,
            vec![
                Reading::level("nats.mem", 100.0),
                Reading::level("nats.cpu_percent", 1.5),
                Reading::counter("nats.in_msgs", 7.0)
            ]
        );
        assert!(parse("<html>").is_err());
    }
}
