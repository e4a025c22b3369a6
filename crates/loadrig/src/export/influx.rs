//! A [`Frame`] in InfluxDB's line protocol (1.x `/write`): a point per
//! kind (`loadrig`: counts and HDR's percentiles of the totals so far)
//! and one for the client (`loadrig_client`), the run's labels as tags,
//! the lap's end as the timestamp in nanoseconds.

use std::fmt::Write;

use super::{Frame, Labels};

/// The request headers of a batch.
pub const HEADERS: &str = "Content-Type: text/plain; charset=utf-8\r\n";

/// The batch of a frame, and how many field values it holds.
pub fn encode(frame: &Frame, labels: &Labels) -> (String, u64) {
    let mut tags = String::new();
    for (n, v) in labels.pairs() {
        let _ = write!(tags, ",{n}={}", esc(v));
    }
    let ts = i128::from(frame.unix_ms) * 1_000_000;
    let mut out = String::new();
    let mut n = 0;
    for k in &frame.kinds {
        let errors: u64 = k.errors.iter().map(|e| e.2).sum();
        let [p50, p90, p99, p999] = k.percentiles_us;
        let _ = writeln!(
            out,
            "loadrig{tags},kind={} ok={}i,delivered={}i,errors={}i,p50_us={p50},p90_us={p90},p99_us={p99},p99_9_us={p999} {ts}",
            esc(k.name),
            k.ok,
            k.delivered,
            errors
        );
        n += 7;
    }
    let _ = writeln!(
        out,
        "loadrig_client{tags} in_flight={}i,clients={}i,connections={}i,cpu_user_seconds={},cpu_system_seconds={},rss_bytes={}i {ts}",
        frame.in_flight, frame.clients, frame.connections, frame.cpu_user, frame.cpu_system, frame.rss_bytes
    );
    (out, n + 6)
}

/// The field values of a frame's batch.
pub fn samples(frame: &Frame) -> u64 {
    7 * frame.kinds.len() as u64 + 6
}

/// A tag value escaped: comma, equals sign and space.
fn esc(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        if matches!(c, ',' | '=' | ' ' | '\\') {
            s.push('\\');
        }
        if c != '\n' {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_escaped_and_counts_are_integers() {
        let labels = Labels {
            run: "a b".into(),
            workload: "redis".into(),
            target: "x=1,y".into(),
            shard: "0/1".into(),
        };
        let frame = Frame {
            unix_ms: 2,
            kinds: vec![super::super::KindFrame {
                name: "LPUSH (x)",
                ok: 5,
                delivered: 0,
                errors: vec![("timeout", "", 2)],
                latency: super::super::buckets::Buckets {
                    counts: vec![],
                    sum_secs: 0.0,
                },
                service: super::super::buckets::Buckets {
                    counts: vec![],
                    sum_secs: 0.0,
                },
                percentiles_us: [1.0, 2.0, 3.5, 4.0],
            }],
            in_flight: 1,
            clients: 2,
            connections: 2,
            cpu_user: 0.5,
            cpu_system: 0.0,
            rss_bytes: 9,
        };
        let (text, n) = encode(&frame, &labels);
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            r"loadrig,run=a\ b,workload=redis,target=x\=1\,y,shard=0/1,kind=LPUSH\ (x) ok=5i,delivered=0i,errors=2i,p50_us=1,p90_us=2,p99_us=3.5,p99_9_us=4 2000000"
        );
        assert_eq!(n, 13);
        assert_eq!(samples(&frame), n);
    }
}
