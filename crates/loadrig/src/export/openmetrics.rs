//! A [`Frame`] as OpenMetrics text (what `GET /metrics` answers):
//! counters of operations and errors by kind and class, gauges of the
//! client, histograms of latency and service time per kind in the
//! layout of `buckets.rs`, every series with the run's labels.

use std::fmt::Write;

use super::buckets::{self, Buckets};
use super::{Frame, Labels};

/// The Content-Type of the text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The whole exposition, `# EOF` last.
pub fn render(frame: &Frame, labels: &Labels) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let base = label_text(labels);
    family(
        &mut out,
        "loadrig_operations",
        "counter",
        "Operations that succeeded, by kind (deliveries apart).",
    );
    for k in &frame.kinds {
        let _ = writeln!(
            out,
            "loadrig_operations_total{{{base},kind=\"{}\"}} {}",
            esc(k.name),
            k.ok
        );
    }
    family(
        &mut out,
        "loadrig_deliveries",
        "counter",
        "Messages listeners received that no operation of theirs asked for.",
    );
    for k in &frame.kinds {
        let _ = writeln!(
            out,
            "loadrig_deliveries_total{{{base},kind=\"{}\"}} {}",
            esc(k.name),
            k.delivered
        );
    }
    family(
        &mut out,
        "loadrig_errors",
        "counter",
        "Failed operations by kind, error and server error class.",
    );
    for k in &frame.kinds {
        for (error, class, n) in &k.errors {
            let _ = writeln!(
                out,
                "loadrig_errors_total{{{base},kind=\"{}\",error=\"{error}\",class=\"{}\"}} {n}",
                esc(k.name),
                esc(class)
            );
        }
    }
    gauges(&mut out, frame, &base);
    for (name, help, pick) in HISTOGRAMS {
        family(&mut out, name, "histogram", help);
        // A kind with nothing recorded yet (a test of redis-benchmark's
        // that has not run) has no buckets: 226 series saved per kind.
        for k in frame.kinds.iter().filter(|k| k.latency.total() > 0) {
            histogram(
                &mut out,
                name,
                &format!("{base},kind=\"{}\"", esc(k.name)),
                pick(k),
            );
        }
    }
    out.push_str("# EOF\n");
    out
}

type Pick = fn(&super::KindFrame) -> &Buckets;

const HISTOGRAMS: [(&str, &str, Pick); 2] = [
    (
        "loadrig_latency_seconds",
        "Completion minus intended start (coordinated omission corrected).",
        |k| &k.latency,
    ),
    (
        "loadrig_service_seconds",
        "Completion minus actual send.",
        |k| &k.service,
    ),
];

fn gauges(out: &mut String, f: &Frame, base: &str) {
    family(
        out,
        "loadrig_in_flight",
        "gauge",
        "Operations sent and not yet answered.",
    );
    let _ = writeln!(out, "loadrig_in_flight{{{base}}} {}", f.in_flight);
    family(
        out,
        "loadrig_clients",
        "gauge",
        "Clients (callers) of this process.",
    );
    let _ = writeln!(out, "loadrig_clients{{{base}}} {}", f.clients);
    family(out, "loadrig_connections", "gauge", "Connections up.");
    let _ = writeln!(out, "loadrig_connections{{{base}}} {}", f.connections);
    family(
        out,
        "loadrig_client_cpu_seconds",
        "counter",
        "CPU this process used since the load began.",
    );
    let _ = writeln!(
        out,
        "loadrig_client_cpu_seconds_total{{{base},mode=\"user\"}} {}",
        f.cpu_user
    );
    let _ = writeln!(
        out,
        "loadrig_client_cpu_seconds_total{{{base},mode=\"system\"}} {}",
        f.cpu_system
    );
    family(
        out,
        "loadrig_client_resident_memory_bytes",
        "gauge",
        "This process's resident memory.",
    );
    let _ = writeln!(
        out,
        "loadrig_client_resident_memory_bytes{{{base}}} {}",
        f.rss_bytes
    );
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// A histogram's cumulative buckets, +Inf, count and sum.
fn histogram(out: &mut String, name: &str, labels: &str, b: &Buckets) {
    let mut cum = 0u64;
    for (k, n) in b.counts.iter().enumerate().take(buckets::COUNT) {
        cum += n;
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {cum}", le(k));
    }
    let total = b.total();
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {total}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", b.sum_secs);
}

/// Bucket `k`'s bound as the `le` label writes it: the same text on
/// every scrape and every host, so the series stay the same series.
pub fn le(k: usize) -> String {
    format!("{:e}", buckets::bound_secs(k))
}

/// The run's labels as `name="value",...`, values escaped.
pub fn label_text(l: &Labels) -> String {
    let parts: Vec<String> = l
        .pairs()
        .iter()
        .map(|(n, v)| format!("{n}=\"{}\"", esc(v)))
        .collect();
    parts.join(",")
}

/// A label value escaped as OpenMetrics asks: backslash, quote, newline.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::super::KindFrame;
    use super::*;

    fn frame() -> Frame {
        let mut counts = vec![0; buckets::COUNT + 1];
        counts[3] = 2;
        counts[buckets::COUNT] = 1;
        let b = Buckets {
            counts,
            sum_secs: 0.5,
        };
        Frame {
            unix_ms: 0,
            kinds: vec![KindFrame {
                name: "get",
                ok: 3,
                delivered: 0,
                errors: vec![("server", "WRONGTYPE", 2), ("timeout", "", 1)],
                latency: b.clone(),
                service: b,
                percentiles_us: [0.0; 4],
            }],
            in_flight: 4,
            clients: 8,
            connections: 8,
            cpu_user: 1.5,
            cpu_system: 0.25,
            rss_bytes: 1 << 20,
        }
    }

    fn labels() -> Labels {
        Labels {
            run: "r\"1".into(),
            workload: "redis".into(),
            target: "redis://***@h:6379".into(),
            shard: "0/1".into(),
        }
    }

    #[test]
    fn the_text_has_every_family_and_ends_with_eof() {
        let t = render(&frame(), &labels());
        assert!(t.ends_with("# EOF\n"));
        let base = r#"run="r\"1",workload="redis",target="redis://***@h:6379",shard="0/1""#;
        for line in [
            format!("loadrig_operations_total{{{base},kind=\"get\"}} 3"),
            format!("loadrig_errors_total{{{base},kind=\"get\",error=\"server\",class=\"WRONGTYPE\"}} 2"),
            format!("loadrig_in_flight{{{base}}} 4"),
            format!("loadrig_client_cpu_seconds_total{{{base},mode=\"user\"}} 1.5"),
            format!("loadrig_latency_seconds_bucket{{{base},kind=\"get\",le=\"1e-6\"}} 0"),
            format!("loadrig_latency_seconds_bucket{{{base},kind=\"get\",le=\"2e-6\"}} 2"),
            format!("loadrig_latency_seconds_bucket{{{base},kind=\"get\",le=\"+Inf\"}} 3"),
            format!("loadrig_service_seconds_count{{{base},kind=\"get\"}} 3"),
        ] {
            assert!(t.lines().any(|l| l == line), "no {line} in\n{t}");
        }
    }

    #[test]
    fn the_bounds_are_written_the_same_way_every_time() {
        assert_eq!(le(0), "1e-6");
        assert_eq!(le(8), "2e-6");
        assert_eq!(le(16), "4e-6");
    }
}
