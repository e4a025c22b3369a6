//! etcd's own statistics per lap: `/metrics` (Prometheus text) fetched
//! with a plain HTTP/1.0 GET on the first member's client port, on a
//! connection of its own each lap (docs/explanations/resources.md). Only unlabelled
//! samples are read; a member that serves its client port over TLS only
//! answers nothing there, and each sample is counted as failed.

use std::sync::Arc;

use loadrig_workloads::stats::{pick, Reading, Series};

use crate::scrape::Page;
use crate::settings::Connector;

/// The metric's name, the reading's name, and whether it is a counter
/// (what etcd 3.4 exposes; a name it lacks is left out of the lap).
pub(crate) const SERIES: &[Series] = &[
    (
        "etcd_mvcc_db_total_size_in_bytes",
        "etcd.db_size_bytes",
        false,
    ),
    (
        "etcd_mvcc_db_total_size_in_use_in_bytes",
        "etcd.db_in_use_bytes",
        false,
    ),
    ("etcd_debugging_mvcc_keys_total", "etcd.keys", false),
    ("etcd_server_has_leader", "etcd.has_leader", false),
    (
        "etcd_server_proposals_pending",
        "etcd.proposals_pending",
        false,
    ),
    ("process_resident_memory_bytes", "etcd.rss_bytes", false),
    (
        "etcd_server_proposals_committed_total",
        "etcd.proposals_committed",
        true,
    ),
    (
        "etcd_server_proposals_failed_total",
        "etcd.proposals_failed",
        true,
    ),
    (
        "etcd_server_leader_changes_seen_total",
        "etcd.leader_changes",
        true,
    ),
    ("etcd_mvcc_put_total", "etcd.puts", true),
    ("etcd_mvcc_range_total", "etcd.ranges", true),
    ("etcd_mvcc_txn_total", "etcd.txns", true),
    (
        "etcd_network_client_grpc_received_bytes_total",
        "etcd.grpc_received_bytes",
        true,
    ),
    (
        "etcd_network_client_grpc_sent_bytes_total",
        "etcd.grpc_sent_bytes",
        true,
    ),
    ("process_cpu_seconds_total", "etcd.cpu_secs", true),
];

/// `/metrics` on `host:port` as a source.
pub(crate) fn metrics(via: Arc<Connector>, host: String, port: u16) -> Page {
    Page {
        via,
        server: "etcd",
        host,
        port,
        path: "/metrics",
        parse,
    }
}

/// `name value` lines (`# ` lines are comments; a labelled name keeps
/// its `{...}` and so matches none of [`SERIES`]).
fn parse(body: &str) -> Result<Vec<Reading>, String> {
    let pairs = body.lines().filter_map(|l| {
        let mut words = l.split_whitespace();
        let name = words.next()?;
        let value = words.next()?;
        Some((name.to_string(), value.to_string()))
    });
    let got = pick(pairs, SERIES);
    if got.is_empty() {
        return Err("/metrics has none of etcd's series".into());
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_gives_its_series() {
        let got = parse(
            "# HELP etcd_mvcc_put_total Total number of puts.\n\
             # TYPE etcd_mvcc_put_total counter\n\
             etcd_mvcc_put_total 23402\n\
             etcd_mvcc_db_total_size_in_bytes 5.25893632e+08\n\
             etcd_network_client_grpc_sent_bytes_total{x=\"y\"} 7\n\
             etcd_unknown 3\n",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Reading::counter("etcd.puts", 23402.0),
                Reading::level("etcd.db_size_bytes", 525_893_632.0)
            ]
        );
        assert!(parse("<html>").is_err());
    }
}
