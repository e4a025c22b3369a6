//! The kv workload's data, every byte a pure function of the seed: keys,
//! values (loaded, or written by a transaction), the keys a transaction
//! picks, and the transaction of each operation index.
//!
//! A value says who wrote it. Its first 8 bytes, big-endian:
//!
//! | bits | loaded value | written value |
//! |---|---|---|
//! | 63 | 0 | 1 |
//! | 48..63 | check | check |
//! | 0..48 | its row | the index of the transaction that wrote it |
//!
//! The rest (up to the value's length, uniform in min..=max) is filler
//! drawn from the same hash as the check and the length. So verification
//! reads a value, takes its writer from the head, recomputes the whole
//! value that writer would have written to that row and compares bytes: a
//! value from another row, another run, or torn, does not match.

use loadrig_engine::rng::{mix64, Rng};
use loadrig_spec::{KeyChoice, KvSpec};

use super::{Key, RangeRead, Txn, KEY_LEN};
use crate::redis::mix::Zipf;

/// Bits of the head that hold the row or the index.
const ID_BITS: u32 = 48;
const ID_MASK: u64 = (1 << ID_BITS) - 1;
const WRITTEN: u64 = 1 << 63;
/// YCSB's Zipfian constant.
const ZIPF_THETA: f64 = 0.99;

/// The key of `row`: `k` and 15 decimal digits, so byte order is row order.
pub fn key_of(row: u64) -> Key {
    let mut k = [b'0'; KEY_LEN];
    k[0] = b'k';
    let mut n = row;
    for b in k[1..].iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// The row a key names, if it is one of ours.
pub fn row_of(key: &[u8]) -> Option<u64> {
    let digits = key.strip_prefix(b"k")?;
    if key.len() != KEY_LEN || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Who a stored value says wrote it, once its bytes check out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The load phase.
    Loaded,
    /// The transaction of this operation index.
    Written(u64),
}

/// Values of one dataset and run.
#[derive(Debug, Clone, Copy)]
pub struct Values {
    seed: u64,
    min: usize,
    span: u64,
}

impl Values {
    pub fn new(seed: u64, min: u32, max: u32) -> Values {
        Values {
            seed,
            min: min as usize,
            span: u64::from(max.saturating_sub(min)) + 1,
        }
    }

    /// Append the value `origin` puts at `row`.
    pub fn write(&self, origin: Origin, row: u64, out: &mut Vec<u8>) {
        let id = match origin {
            Origin::Loaded => row & ID_MASK,
            Origin::Written(index) => WRITTEN | (index & ID_MASK),
        };
        let h = mix64(self.seed ^ mix64(id ^ mix64(row.wrapping_add(0x9e37_79b9))));
        let len = self.min + (h % self.span) as usize;
        let head = id | (((h >> 17) & 0x7fff) << ID_BITS);
        let start = out.len();
        out.extend_from_slice(&head.to_be_bytes());
        let mut rng = Rng::stream(h, 0);
        while out.len() - start < len {
            let word = rng.next_u64().to_le_bytes();
            let room = (len - (out.len() - start)).min(8);
            out.extend_from_slice(&word[..room]);
        }
    }

    /// Who wrote `value` at `row`, or `None` when no writer of this
    /// dataset and run would have written exactly these bytes there.
    /// `scratch` is reused between calls.
    pub fn origin(&self, row: u64, value: &[u8], scratch: &mut Vec<u8>) -> Option<Origin> {
        let head = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
        let origin = if head & WRITTEN != 0 {
            Origin::Written(head & ID_MASK)
        } else {
            Origin::Loaded
        };
        scratch.clear();
        self.write(origin, row, scratch);
        (scratch.as_slice() == value).then_some(origin)
    }
}

/// Picks rows as the spec says.
#[derive(Debug, Clone, Copy)]
struct Chooser {
    choice: KeyChoice,
    n: u64,
    zipf: Option<Zipf>,
}

impl Chooser {
    fn new(choice: KeyChoice, n: u64) -> Chooser {
        let zipf = (choice != KeyChoice::Uniform).then(|| Zipf::new(n as f64, ZIPF_THETA));
        Chooser { choice, n, zipf }
    }

    /// A row in `0..n`.
    #[inline]
    fn pick(&self, rng: &mut Rng) -> u64 {
        match (self.choice, &self.zipf) {
            (KeyChoice::Zipfian, Some(z)) => mix64(z.sample(rng)) % self.n,
            (KeyChoice::Latest, Some(z)) => self.n - z.sample(rng).min(self.n),
            _ => rng.below(self.n),
        }
    }
}

/// The transaction of each operation index.
#[derive(Debug, Clone)]
pub struct Generator {
    seed: u64,
    reads: u32,
    writes: u32,
    ranges: u32,
    range_length: u32,
    rows: u64,
    keys: Chooser,
    starts: Chooser,
    pub values: Values,
}

impl Generator {
    pub fn new(spec: &KvSpec, seed: u64) -> Generator {
        let starts = spec
            .rows
            .saturating_sub(u64::from(spec.range_length))
            .saturating_add(1);
        Generator {
            seed,
            reads: spec.reads,
            writes: spec.writes,
            ranges: spec.ranges,
            range_length: spec.range_length,
            rows: spec.rows,
            keys: Chooser::new(spec.keys, spec.rows),
            starts: Chooser::new(spec.keys, starts),
            values: Values::new(seed, spec.value_min, spec.value_max),
        }
    }

    /// Rows a range read returns when every row is there: the range
    /// starts early enough to be whole.
    pub fn range_rows(&self) -> u64 {
        u64::from(self.range_length).min(self.rows) * u64::from(self.ranges)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn reads(&self) -> u32 {
        self.reads
    }

    pub fn writes(&self) -> u32 {
        self.writes
    }

    /// Fill `txn` with operation `index`'s transaction.
    pub fn fill(&self, index: u64, txn: &mut Txn) {
        txn.clear();
        let mut rng = Rng::for_op(self.seed, index);
        for _ in 0..self.reads {
            txn.reads.push(key_of(self.keys.pick(&mut rng)));
        }
        if self.ranges > 0 {
            let start = self.starts.pick(&mut rng);
            txn.range = Some(RangeRead {
                start: key_of(start),
                end: key_of(self.rows),
                limit: self.range_length,
            });
        }
        for _ in 0..self.writes {
            let row = self.keys.pick(&mut rng);
            let values = &self.values;
            txn.writes.push_with(key_of(row), |out| {
                values.write(Origin::Written(index), row, out)
            });
        }
    }

    /// The rows operation `index` writes, in order (as [`Generator::fill`]
    /// draws them, without making the values).
    pub fn written_rows(&self, index: u64, out: &mut Vec<u64>) {
        out.clear();
        let mut rng = Rng::for_op(self.seed, index);
        for _ in 0..self.reads {
            self.keys.pick(&mut rng);
        }
        if self.ranges > 0 {
            self.starts.pick(&mut rng);
        }
        for _ in 0..self.writes {
            out.push(self.keys.pick(&mut rng));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_spec::KvTest;

    #[test]
    fn keys_sort_as_rows() {
        assert_eq!(&key_of(0), b"k000000000000000");
        assert_eq!(&key_of(1_234_567), b"k000000001234567");
        assert!(key_of(9) < key_of(10));
        for r in [0, 1, 999_999, 99_999_999_999_999] {
            assert_eq!(row_of(&key_of(r)), Some(r));
        }
        assert_eq!(row_of(b"x000000000000001"), None);
        assert_eq!(row_of(b"k0001"), None);
    }

    #[test]
    fn a_value_names_its_writer_and_nothing_else_matches() {
        let v = Values::new(42, 8, 100);
        let mut scratch = Vec::new();
        let mut lens = std::collections::BTreeSet::new();
        for row in 0..2_000u64 {
            let mut loaded = Vec::new();
            v.write(Origin::Loaded, row, &mut loaded);
            lens.insert(loaded.len());
            assert!((8..=100).contains(&loaded.len()));
            assert_eq!(v.origin(row, &loaded, &mut scratch), Some(Origin::Loaded));
            // Another row's value, another seed's, a flipped byte: no match.
            assert_eq!(v.origin(row + 1, &loaded, &mut scratch), None);
            assert_eq!(
                Values::new(43, 8, 100).origin(row, &loaded, &mut scratch),
                None
            );
            let mut written = Vec::new();
            v.write(Origin::Written(row * 7), row, &mut written);
            assert_eq!(
                v.origin(row, &written, &mut scratch),
                Some(Origin::Written(row * 7))
            );
            let last = written.len() - 1;
            written[last] ^= 1;
            assert_eq!(v.origin(row, &written, &mut scratch), None);
        }
        assert_eq!(v.origin(0, b"short", &mut scratch), None);
        assert!(lens.len() > 80, "lengths spread over 8..=100: {lens:?}");
    }

    #[test]
    fn transactions_are_pure_and_in_range() {
        let mut spec = KvSpec::test(KvTest::Mix);
        spec.rows = 1_000;
        for choice in [KeyChoice::Uniform, KeyChoice::Zipfian, KeyChoice::Latest] {
            spec.keys = choice;
            let g = Generator::new(&spec, 7);
            let (mut a, mut b) = (Txn::default(), Txn::default());
            let mut rows = Vec::new();
            for i in 0..500 {
                g.fill(i, &mut a);
                g.fill(i, &mut b);
                assert_eq!(a, b);
                assert_eq!((a.reads.len(), a.writes.len()), (9, 1));
                g.written_rows(i, &mut rows);
                let keys: Vec<Key> = rows.iter().map(|&r| key_of(r)).collect();
                assert_eq!(a.writes.keys(), keys.as_slice());
                assert!(a.reads.iter().all(|k| row_of(k).is_some_and(|r| r < 1_000)));
            }
        }
    }

    #[test]
    fn skewed_choices_have_hot_rows() {
        let count_top = |choice, top: fn(u64) -> bool| {
            let c = Chooser::new(choice, 10_000);
            let mut rng = Rng::stream(1, 1);
            (0..10_000).filter(|_| top(c.pick(&mut rng))).count()
        };
        // Uniform: the last 1% of rows gets about 1% of picks; latest far more.
        let last = |r: u64| r >= 9_900;
        assert!(count_top(KeyChoice::Uniform, last) < 200);
        assert!(count_top(KeyChoice::Latest, last) > 3_000);
        // Zipfian: the hottest row alone gets several percent.
        let c = Chooser::new(KeyChoice::Zipfian, 10_000);
        let mut rng = Rng::stream(1, 2);
        let mut hits = std::collections::HashMap::new();
        for _ in 0..10_000 {
            *hits.entry(c.pick(&mut rng)).or_insert(0u32) += 1;
        }
        assert!(hits.values().max().copied().unwrap_or(0) > 500);
    }

    #[test]
    fn ranges_start_where_they_are_whole() {
        let mut spec = KvSpec::test(KvTest::Range);
        spec.rows = 1_500;
        let g = Generator::new(&spec, 1);
        let mut t = Txn::default();
        for i in 0..1_000 {
            g.fill(i, &mut t);
            let r = t.range.unwrap();
            assert!(row_of(&r.start).unwrap() <= 500);
            assert_eq!(r.end, key_of(1_500));
            assert_eq!(r.limit, 1_000);
        }
        assert_eq!(g.range_rows(), 1_000);
    }
}
