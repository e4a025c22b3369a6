//! A latency histogram in nanoseconds with three significant digits.
//!
//! It starts small and grows with the largest value seen (HDR auto-resize),
//! so a worker whose operations take microseconds does not pay for an hour
//! of range; values are clamped at one hour, which no operation outlives.
//! The lowest discernible value is 100 ns: below 131 us values are kept to
//! 64 ns, above to three significant digits. That is finer than the 1 us
//! the spec asks for, at half the memory of 1 ns steps, which matters with
//! one histogram pair per kind per worker and hundreds of workers.

use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The largest value kept: one hour, in nanoseconds.
pub const MAX_NANOS: u64 = 3_600 * 1_000_000_000;
/// The lowest discernible value, in nanoseconds.
const LOWEST: u64 = 100;

/// An HDR histogram of durations (ns, 3 significant digits), mergeable by
/// addition. Nothing is allocated until the first value: a worker holds a
/// dozen of these and a chat run has thousands of workers, most of them
/// idle in any one lap, so an empty histogram costs nothing to make, hand
/// over or merge.
#[derive(Clone, Debug)]
pub struct Histo(Option<Histogram<u64>>);

/// A histogram with the bounds every [`Histo`] starts from.
fn fresh() -> Histogram<u64> {
    // 3 significant digits; auto-resize grows the range on demand.
    let mut h = Histogram::new_with_bounds(LOWEST, 2 * LOWEST, 3)
        .expect("these bounds and 3 significant digits are a valid HDR setting");
    h.auto(true);
    h
}

/// The empty histogram, for readers of an unallocated [`Histo`].
fn empty() -> &'static Histogram<u64> {
    static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(fresh)
}

impl Default for Histo {
    fn default() -> Self {
        Histo::new()
    }
}

impl Histo {
    pub fn new() -> Self {
        Histo(None)
    }

    /// Record one duration. Never fails: values beyond an hour are clamped.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos())
            .unwrap_or(MAX_NANOS)
            .min(MAX_NANOS);
        // With auto-resize on and the value clamped, recording cannot fail.
        let _ = self.0.get_or_insert_with(fresh).record(ns);
    }

    /// Add every count of `other` into `self`.
    pub fn add(&mut self, other: &Histo) {
        // Auto-resize lets `add` grow the range; the only error is a
        // count overflow past u64::MAX, which no run reaches.
        match &other.0 {
            Some(o) if !o.is_empty() => {
                let _ = self.0.get_or_insert_with(fresh).add(o);
            }
            _ => {}
        }
    }

    pub fn reset(&mut self) {
        if let Some(h) = &mut self.0 {
            h.reset();
        }
    }

    pub fn len(&self) -> u64 {
        self.inner().len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner().is_empty()
    }

    pub fn min(&self) -> Duration {
        Duration::from_nanos(if self.is_empty() {
            0
        } else {
            self.inner().min()
        })
    }

    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.inner().max())
    }

    pub fn mean(&self) -> Duration {
        Duration::from_nanos(self.inner().mean() as u64)
    }

    /// The value at percentile `p` (0..=100), ranked as HdrHistogram's
    /// reference implementation ranks it (docs/reference/report.md, "Percentiles").
    pub fn percentile(&self, p: f64) -> Duration {
        Duration::from_nanos(value_at_percentile(self.inner(), p))
    }

    /// The underlying histogram, for printers that walk its buckets.
    pub fn inner(&self) -> &Histogram<u64> {
        self.0.as_ref().unwrap_or_else(|| empty())
    }

    /// Lossless encoding in HdrHistogram's interchange form: the V2
    /// payload inside the compressed (DEFLATE) framing, cookie
    /// `0x1c849314`, as bytes. Base64 of it begins "HISTF": the form
    /// HdrHistogram's Java, C, Go, JavaScript and Python decoders, and
    /// interval logs, carry.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail for a histogram we built.
        let _ = V2DeflateSerializer::new().serialize(self.inner(), &mut out);
        out
    }

    /// Inverse of [`Histo::encode`]; also reads the plain V2 payload
    /// (cookie `0x1c849313`) that reports before the compressed form held.
    ///
    /// What the header claims is checked against what is there before
    /// anything is allocated: the decoder would make a buffer of the
    /// claimed payload length, so a few crafted bytes could ask for
    /// gigabytes.
    pub fn decode(bytes: &[u8]) -> Result<Histo, DecodeError> {
        let v2 = checked_v2(bytes)?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(&v2[..]))
            .map_err(|e| DecodeError(format!("{e:?}")))?;
        h.auto(true);
        Ok(Histo(Some(h)))
    }
}

/// The plain V2 encoding's cookie, and the compressed one's.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, significant
/// digits, lowest and highest trackable values, integer-to-double ratio.
const V2_HEADER: usize = 40;
/// The most a compressed histogram may inflate to: far more than any
/// histogram loadrig writes (a few hundred kilobytes at most).
const MAX_INFLATED: u64 = 16 << 20;

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The plain V2 bytes of `bytes` (inflated if compressed, with a cap),
/// once its header is found honest: a payload no longer than the bytes
/// after the header, and a range and precision loadrig's histograms can
/// have (so the counts the decoder allocates stay small).
fn checked_v2(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, DecodeError> {
    use std::io::Read;
    let bad = |why: &str| DecodeError(why.to_string());
    let v2: std::borrow::Cow<'_, [u8]> = match be32(bytes, 0) {
        Some(V2_COOKIE) => bytes.into(),
        Some(V2_DEFLATE_COOKIE) => {
            let len = be32(bytes, 4).ok_or_else(|| bad("truncated header"))? as usize;
            let body = bytes
                .get(8..8 + len)
                .ok_or_else(|| bad("compressed length beyond the bytes present"))?;
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(body)
                .take(MAX_INFLATED + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(&format!("not DEFLATE: {e}")))?;
            if out.len() as u64 > MAX_INFLATED {
                return Err(bad("inflates past 16 MiB"));
            }
            out.into()
        }
        _ => return Err(bad("not an HdrHistogram V2 encoding")),
    };
    let (Some(cookie), Some(payload), Some(digits), Some(high)) =
        (be32(&v2, 0), be32(&v2, 4), be32(&v2, 12), be64(&v2, 24))
    else {
        return Err(bad("truncated header"));
    };
    if cookie != V2_COOKIE {
        return Err(bad("the compressed payload is not V2"));
    }
    if payload as usize > v2.len().saturating_sub(V2_HEADER) {
        return Err(bad("payload length beyond the bytes present"));
    }
    // The counts the decoder allocates follow from the header alone: 5
    // digits up to 2^62 is 48 MB from a few bytes (a report of such laps
    // took `merge` to 21 GB). loadrig records 3 digits up to an hour
    // (`MAX_NANOS`, under 2^42): at most about 280 KB each.
    if digits > 3 || high > 1 << 44 {
        return Err(bad("a range or precision no histogram of loadrig has"));
    }
    Ok(v2)
}

/// The value at percentile `p` as HdrHistogram's Java
/// `getValueAtPercentile` computes it: the rank is the count at `p`
/// rounded up, after `p` is lowered by one unit in the last place so
/// that a rank that is a whole number in decimals (99.9 % of 6,000 is
/// 5,994) is not pushed one higher by binary rounding (99.9 / 100 is
/// 0.99900000000000011 in a double, and its ceiling of 5,994.0000000000007
/// is 5,995, which the Rust crate's `value_at_percentile` returns). The
/// value is the highest equivalent of the bucket where the running count
/// reaches the rank (the lowest, for percentile 0).
fn value_at_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    let total = h.len();
    if total == 0 {
        return 0;
    }
    let requested = next_down(p).clamp(0.0, 100.0);
    let rank = ((requested * total as f64) / 100.0).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            let value = v.value_iterated_to();
            return if p == 0.0 {
                h.lowest_equivalent(value)
            } else {
                h.highest_equivalent(value)
            };
        }
    }
    h.max()
}

/// The largest double below `x` (Java's `Math.nextAfter(x, -inf)`), for
/// the finite, non-negative percentiles asked of a histogram.
fn next_down(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        // Clamped to 0 by the caller either way.
        return 0.0;
    }
    f64::from_bits(x.to_bits() - 1)
}

/// A histogram in a report did not decode.
#[derive(Debug, thiserror::Error)]
#[error("bad histogram encoding: {0}")]
pub struct DecodeError(String);

#[cfg(test)]
mod tests {
    use super::*;

    /// 6,000 distinct values 1..=6000 us: at p99.9 the rank is 5,994,
    /// not 5,995 (the Java reference's answer; the 94.37 ms
    /// against 94.83 ms was this off-by-one).
    #[test]
    fn ranks_as_the_java_reference() {
        let mut h = Histo::new();
        for i in 1..=6_000u64 {
            h.record(Duration::from_micros(i));
        }
        let at = |us: u64| {
            let inner = h.inner();
            Duration::from_nanos(inner.highest_equivalent(us * 1_000))
        };
        assert_eq!(h.percentile(99.9), at(5_994));
        assert_eq!(h.percentile(99.0), at(5_940));
        assert_eq!(h.percentile(50.0), at(3_000));
        assert_eq!(h.percentile(100.0), at(6_000));
        assert_eq!(
            h.percentile(0.0),
            Duration::from_nanos(h.inner().lowest_equivalent(1_000))
        );
        // Not a whole rank: rounded up (ceil of 5,999.4 is 6,000).
        assert_eq!(h.percentile(99.99), at(6_000));
        assert_eq!(Histo::new().percentile(99.0), Duration::ZERO);
    }

    #[test]
    fn a_header_that_lies_is_refused_before_any_allocation() {
        let mut h = Histo::default();
        h.record(Duration::from_micros(250));
        let good = h.encode();
        assert!(Histo::decode(&good).is_ok());
        // The compressed length claims more than is there.
        let mut lie = good.clone();
        lie[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(Histo::decode(&lie).is_err());
        // A plain V2 header claiming a 4 GB payload, 40 bytes in all.
        let mut v2 = vec![0u8; 40];
        v2[0..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
        v2[4..8].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        v2[12..16].copy_from_slice(&3u32.to_be_bytes());
        let e = Histo::decode(&v2).unwrap_err();
        assert!(e.0.contains("payload length"), "{}", e.0);
        assert!(Histo::decode(b"junk").is_err());
    }

    #[test]
    fn encode_decode_is_lossless() {
        let mut h = Histo::new();
        for i in 1..10_000u64 {
            h.record(Duration::from_nanos(i * 997));
        }
        h.record(Duration::from_secs(7_200)); // clamped to an hour
        let back = Histo::decode(&h.encode()).unwrap();
        assert_eq!(back.len(), h.len());
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(back.percentile(p), h.percentile(p), "p{p}");
        }
        assert_eq!(back.max(), Duration::from_nanos(h.inner().max()));
        // The compressed framing's cookie, 0x1c849314.
        assert_eq!(&h.encode()[..4], &[0x1c, 0x84, 0x93, 0x14]);
    }

    /// Reports written before the compressed form held the plain V2
    /// payload: they still read.
    #[test]
    fn the_plain_v2_form_still_decodes() {
        use hdrhistogram::serialization::V2Serializer;
        let mut h = Histo::new();
        for i in 1..1_000u64 {
            h.record(Duration::from_micros(i));
        }
        let mut plain = Vec::new();
        V2Serializer::new()
            .serialize(h.inner(), &mut plain)
            .unwrap();
        let back = Histo::decode(&plain).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.percentile(99.9), h.percentile(99.9));
    }
}
