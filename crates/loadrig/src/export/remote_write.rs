//! A [`Frame`] as a Prometheus remote-write 1.0 request: the series of
//! the `/metrics` page (same names and labels, histograms as `_bucket`,
//! `_count` and `_sum` series), one sample each at the lap's end, in a
//! `WriteRequest` protobuf encoded by hand (four small messages) and
//! framed as a snappy block of literals: valid snappy that every decoder
//! reads, not compressed (a lap's request is some hundred kilobytes, on
//! a link to a Prometheus that is not the one under test).
//!
//! | message | field |
//! |---|---|
//! | WriteRequest | 1: repeated TimeSeries |
//! | TimeSeries | 1: repeated Label, 2: repeated Sample |
//! | Label | 1: name, 2: value (sorted by name, `__name__` first) |
//! | Sample | 1: double value, 2: int64 timestamp ms |

use super::buckets::{self, Buckets};
use super::openmetrics::le;
use super::{Frame, Labels};

/// The request headers of remote write 1.0.
pub const HEADERS: &str = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\n";

/// One series: its name, its labels beyond the run's, its value.
type Series = (String, Vec<(&'static str, String)>, f64);

/// The request body of a frame, and how many samples it holds.
pub fn encode(frame: &Frame, labels: &Labels) -> (Vec<u8>, u64) {
    let series = series(frame);
    let mut req = Vec::with_capacity(series.len() * 200);
    for (name, extra, value) in &series {
        let mut pairs: Vec<(&str, &str)> = labels.pairs().to_vec();
        pairs.extend(extra.iter().map(|(n, v)| (*n, v.as_str())));
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        let mut ts = Vec::with_capacity(256);
        message(&mut ts, 1, &label("__name__", name));
        for (n, v) in pairs {
            message(&mut ts, 1, &label(n, v));
        }
        message(&mut ts, 2, &sample(*value, frame.unix_ms));
        message(&mut req, 1, &ts);
    }
    (snappy_literals(&req), series.len() as u64)
}

/// Every series of the frame.
fn series(f: &Frame) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for k in &f.kinds {
        let kind = ("kind", k.name.to_string());
        out.push((
            "loadrig_operations_total".into(),
            vec![kind.clone()],
            k.ok as f64,
        ));
        out.push((
            "loadrig_deliveries_total".into(),
            vec![kind.clone()],
            k.delivered as f64,
        ));
        for (error, class, n) in &k.errors {
            let l = vec![
                kind.clone(),
                ("error", error.to_string()),
                ("class", class.to_string()),
            ];
            out.push(("loadrig_errors_total".into(), l, *n as f64));
        }
        if k.latency.total() > 0 {
            histogram(&mut out, "loadrig_latency_seconds", &kind, &k.latency);
            histogram(&mut out, "loadrig_service_seconds", &kind, &k.service);
        }
    }
    let gauges = [
        ("loadrig_in_flight", f.in_flight as f64),
        ("loadrig_clients", f.clients as f64),
        ("loadrig_connections", f.connections as f64),
        ("loadrig_client_resident_memory_bytes", f.rss_bytes as f64),
    ];
    out.extend(gauges.iter().map(|(n, v)| (n.to_string(), Vec::new(), *v)));
    for (mode, v) in [("user", f.cpu_user), ("system", f.cpu_system)] {
        out.push((
            "loadrig_client_cpu_seconds_total".into(),
            vec![("mode", mode.into())],
            v,
        ));
    }
    out
}

/// The series of a frame's request, counted without making them.
pub fn samples(f: &Frame) -> u64 {
    let per_histogram = buckets::COUNT as u64 + 3;
    let kinds: u64 = f
        .kinds
        .iter()
        .map(|k| {
            let h = if k.latency.total() > 0 {
                2 * per_histogram
            } else {
                0
            };
            2 + k.errors.len() as u64 + h
        })
        .sum();
    kinds + 6
}

fn histogram(out: &mut Vec<Series>, name: &str, kind: &(&'static str, String), b: &Buckets) {
    let mut cum = 0u64;
    for (k, n) in b.counts.iter().enumerate().take(buckets::COUNT) {
        cum += n;
        out.push((
            format!("{name}_bucket"),
            vec![kind.clone(), ("le", le(k))],
            cum as f64,
        ));
    }
    let total = b.total() as f64;
    out.push((
        format!("{name}_bucket"),
        vec![kind.clone(), ("le", "+Inf".into())],
        total,
    ));
    out.push((format!("{name}_count"), vec![kind.clone()], total));
    out.push((format!("{name}_sum"), vec![kind.clone()], b.sum_secs));
}

fn label(name: &str, value: &str) -> Vec<u8> {
    let mut m = Vec::with_capacity(name.len() + value.len() + 4);
    bytes_field(&mut m, 1, name.as_bytes());
    bytes_field(&mut m, 2, value.as_bytes());
    m
}

fn sample(value: f64, ms: i64) -> Vec<u8> {
    let mut m = Vec::with_capacity(20);
    m.push(1 << 3 | 1); // field 1, 64-bit
    m.extend_from_slice(&value.to_le_bytes());
    m.push(2 << 3); // field 2, varint
    varint(&mut m, ms as u64);
    m
}

/// A length-delimited field holding a message.
fn message(out: &mut Vec<u8>, field: u32, m: &[u8]) {
    bytes_field(out, field, m);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    varint(out, u64::from(field << 3 | 2));
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `data` as a snappy block made of literals only: the length as a
/// varint, then literals of up to 64 KiB, each a tag (61: a two-byte
/// length follows, or the length itself under 60) and its bytes.
pub fn snappy_literals(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65_536 * 3 + 8);
    varint(&mut out, data.len() as u64);
    for chunk in data.chunks(65_536) {
        let n = chunk.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else {
            out.push(61 << 2);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        out.extend_from_slice(chunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_counted_are_the_samples_sent() {
        let mut counts = vec![0; buckets::COUNT + 1];
        counts[5] = 3;
        let b = Buckets {
            counts,
            sum_secs: 1.0,
        };
        let empty = Buckets {
            counts: vec![0; buckets::COUNT + 1],
            sum_secs: 0.0,
        };
        let kind = |name, latency: &Buckets| super::super::KindFrame {
            name,
            ok: 3,
            delivered: 0,
            errors: vec![("io", "", 1)],
            latency: latency.clone(),
            service: latency.clone(),
            percentiles_us: [0.0; 4],
        };
        let f = Frame {
            unix_ms: 1,
            kinds: vec![kind("a", &b), kind("b", &empty)],
            in_flight: 0,
            clients: 1,
            connections: 1,
            cpu_user: 0.0,
            cpu_system: 0.0,
            rss_bytes: 0,
        };
        let labels = Labels {
            run: "r".into(),
            workload: "w".into(),
            target: "t".into(),
            shard: "0/1".into(),
        };
        assert_eq!(samples(&f), encode(&f, &labels).1);
    }

    #[test]
    fn varints_are_protobufs() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        assert_eq!(label("a", "b"), [0x0a, 1, b'a', 0x12, 1, b'b']);
    }

    /// A literal-only block: the length, then each literal's tag and bytes.
    #[test]
    fn a_snappy_block_of_literals_reads_back() {
        let data: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
        let block = snappy_literals(&data);
        let (mut len, mut shift, mut at) = (0u64, 0, 0);
        loop {
            let b = block[at];
            at += 1;
            len |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        assert_eq!(len, 150_000);
        let mut back = Vec::new();
        while at < block.len() {
            let tag = block[at];
            assert_eq!(tag & 3, 0, "a literal");
            let n = match tag >> 2 {
                61 => usize::from(u16::from_le_bytes([block[at + 1], block[at + 2]])) + 1,
                small => usize::from(small) + 1,
            };
            let start = at + if tag >> 2 == 61 { 3 } else { 1 };
            back.extend_from_slice(&block[start..start + n]);
            at = start + n;
        }
        assert_eq!(back, data);
        assert_eq!(snappy_literals(b"abc"), [3, 2 << 2, b'a', b'b', b'c']);
    }
}
