//! Mosquitto's own statistics per lap: its `$SYS/broker/...` topics, read
//! by a subscription on a connection of its own to the first broker of
//! the URL, kept open over the run (docs/explanations/resources.md). Mosquitto
//! publishes them every `sys_interval` (10 s by default), and only the
//! ones that changed: a lap holds the latest value published, so a count
//! moves in steps of that interval, and a topic not yet published is
//! missing from the early laps (none published yet is not a failure: a
//! broker without `$SYS` gives no series, as one that never changes). A
//! broker that refuses the connection or breaks it fails the sample, and
//! the next one reconnects.

use std::collections::BTreeMap;
use std::num::NonZeroU16;
use std::time::{Duration, Instant};

use bytes::Buf;
use loadrig_wire::mq::mqtt::{self, Packet, Qos};
use loadrig_workloads::pubsub::mqtt::KEEP_ALIVE;
use loadrig_workloads::stats::{Reading, Sampled, Series, StatsSource};

use crate::socket::Socket;
use crate::url::TargetUrl;

/// The topic under `$SYS/broker/`, the reading's name, and whether it is
/// a counter.
pub(crate) const SERIES: &[Series] = &[
    ("clients/connected", "mosquitto.clients_connected", false),
    ("subscriptions/count", "mosquitto.subscriptions", false),
    ("messages/stored", "mosquitto.messages_stored", false),
    ("heap/current", "mosquitto.heap_bytes", false),
    ("messages/received", "mosquitto.messages_received", true),
    ("messages/sent", "mosquitto.messages_sent", true),
    (
        "publish/messages/received",
        "mosquitto.publish_received",
        true,
    ),
    ("publish/messages/sent", "mosquitto.publish_sent", true),
    (
        "publish/messages/dropped",
        "mosquitto.publish_dropped",
        true,
    ),
    ("bytes/received", "mosquitto.bytes_received", true),
    ("bytes/sent", "mosquitto.bytes_sent", true),
];

const PREFIX: &str = "$SYS/broker/";

/// How long the first sample waits for the first values (the retained
/// ones come at once; the others at the broker's next `sys_interval`).
const FIRST_WAIT: Duration = Duration::from_millis(500);

/// How long a later sample waits for what is already on its way.
const DRAIN_WAIT: Duration = Duration::from_millis(20);

/// A PINGREQ well inside the keep-alive the connection announced.
const PING_EVERY: Duration = Duration::from_secs(KEEP_ALIVE as u64 / 3);

pub(crate) struct Sys {
    at: std::sync::Arc<TargetUrl>,
    via: std::sync::Arc<crate::settings::Connector>,
    link: Option<(Socket, Instant)>,
    /// The latest value of each series, by its index in [`SERIES`].
    latest: BTreeMap<usize, f64>,
}

impl Sys {
    pub(crate) fn new(
        at: std::sync::Arc<TargetUrl>,
        via: std::sync::Arc<crate::settings::Connector>,
    ) -> Sys {
        Sys {
            at,
            via,
            link: None,
            latest: BTreeMap::new(),
        }
    }

    /// Keep the values in `sock`'s read buffer, waiting at most `wait`
    /// for more.
    async fn drain(&mut self, sock: &mut Socket, wait: Duration) -> Result<(), String> {
        loop {
            match mqtt::parse_packet(&sock.rbuf).map_err(|e| e.to_string())? {
                Some((Packet::Publish(p), n)) => {
                    if let Some(i) = p
                        .topic
                        .strip_prefix(PREFIX)
                        .and_then(|t| SERIES.iter().position(|(k, _, _)| *k == t))
                    {
                        if let Some(v) = value(p.payload) {
                            self.latest.insert(i, v);
                        }
                    }
                    sock.rbuf.advance(n);
                }
                Some((_, n)) => sock.rbuf.advance(n),
                None => match tokio::time::timeout(wait, sock.fill()).await {
                    Err(_) => return Ok(()),
                    Ok(r) => r.map_err(|e| e.to_string())?,
                },
            }
        }
    }
}

/// A `$SYS` payload's number: `123`, `1.5`, or `5984 seconds`.
fn value(payload: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(payload).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

impl StatsSource for Sys {
    fn name(&self) -> String {
        format!("mosquitto {PREFIX}... on {}", self.at.server(0).2)
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let (mut sock, mut pinged, wait) = match self.link.take() {
                Some((s, at)) => (s, at, DRAIN_WAIT),
                None => {
                    let id = format!("loadrig-{}-stats", std::process::id());
                    let mut s = super::open(&self.at, &self.via, 0, &id)
                        .await
                        .map_err(|e| e.to_string())?;
                    let topics: Vec<String> = SERIES
                        .iter()
                        .map(|(t, _, _)| format!("{PREFIX}{t}"))
                        .collect();
                    let filters: Vec<(&str, Qos)> = topics
                        .iter()
                        .map(|t| (t.as_str(), Qos::AtMostOnce))
                        .collect();
                    mqtt::encode_subscribe(&mut s.wbuf, NonZeroU16::MIN, &filters)
                        .map_err(|e| e.to_string())?;
                    (s, Instant::now(), FIRST_WAIT)
                }
            };
            if pinged.elapsed() >= PING_EVERY {
                mqtt::encode_pingreq(&mut sock.wbuf);
                pinged = Instant::now();
            }
            sock.flush().map_err(|e| e.to_string())?;
            self.drain(&mut sock, wait).await?;
            // Kept only after a whole drain: a failure reconnects.
            self.link = Some((sock, pinged));
            Ok(self
                .latest
                .iter()
                .map(|(&i, &value)| {
                    let (_, name, counter) = SERIES[i];
                    Reading {
                        name,
                        value,
                        counter,
                    }
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_payloads_are_numbers() {
        assert_eq!(value(b"123"), Some(123.0));
        assert_eq!(value(b"5984 seconds"), Some(5984.0));
        assert_eq!(value(b"mosquitto version 2.0.11"), None);
    }
}
