//! NATS's own statistics per lap: the monitoring endpoint's `/varz`
//! (nats-server started with `-m PORT`, 8222 by default and in
//! `scripts/services`), fetched with a plain HTTP/1.0 GET on a connection
//! of its own each lap (docs/explanations/resources.md). A server without monitoring
//! answers nothing there: each sample fails and is counted as failed.

use std::sync::Arc;

use loadrig_workloads::stats::{Reading, Series};

use crate::scrape::Page;
use crate::settings::Connector;

/// nats-server's default monitoring port.
pub(crate) const MONITOR_PORT: u16 = 8222;

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

/// `/varz` on `host:port` as a source.
pub(crate) fn varz(via: Arc<Connector>, host: String, port: u16) -> Page {
    Page {
        via,
        server: "nats",
        host,
        port,
        path: "/varz",
        parse,
    }
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
