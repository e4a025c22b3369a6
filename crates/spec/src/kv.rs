//! The kv workload's knobs (FoundationDB's benchmarking guide): the shape
//! of one transaction (point reads, writes, range reads and their length),
//! the dataset (rows, value sizes, its name) and how keys are chosen. The
//! guide's five tests are presets of the shape ([`KvTest`]).

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// The guide's data: a million rows.
pub const DEFAULT_ROWS: u64 = 1_000_000;
/// The guide's values: 8 to 100 bytes, uniform.
pub const DEFAULT_VALUE_MIN: u32 = 8;
pub const DEFAULT_VALUE_MAX: u32 = 100;
/// The guide's range test reads 1,000 consecutive keys.
pub const DEFAULT_RANGE_LENGTH: u32 = 1_000;
/// A written value carries its writer's index and a check in its first 8
/// bytes, so no value is shorter.
pub const MIN_VALUE_SIZE: u32 = 8;
pub const MAX_VALUE_SIZE: u32 = 65_535;
/// Keys are `k` and 15 decimal digits; a value holds its row in 48 bits.
pub const MAX_ROWS: u64 = 99_999_999_999_999;
/// Operations in one transaction, at most (reads, writes and range rows
/// count separately).
pub const MAX_PER_TXN: u32 = 10_000;

/// The guide's tests, each a shape of transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvTest {
    /// Write 1 random key, commit.
    Write1,
    /// Write 10 random keys, commit.
    Write10,
    /// Read 10 random keys (no commit needed).
    Read10,
    /// Read 9, write 1, commit.
    Mix,
    /// Read 1,000 consecutive keys from a random start.
    Range,
}

impl KvTest {
    pub const ALL: [KvTest; 5] = [
        KvTest::Write1,
        KvTest::Write10,
        KvTest::Read10,
        KvTest::Mix,
        KvTest::Range,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KvTest::Write1 => "write1",
            KvTest::Write10 => "write10",
            KvTest::Read10 => "read10",
            KvTest::Mix => "mix",
            KvTest::Range => "range",
        }
    }

    /// (reads, writes, ranges) per transaction.
    pub fn shape(self) -> (u32, u32, u32) {
        match self {
            KvTest::Write1 => (0, 1, 0),
            KvTest::Write10 => (0, 10, 0),
            KvTest::Read10 => (10, 0, 0),
            KvTest::Mix => (9, 1, 0),
            KvTest::Range => (0, 0, 1),
        }
    }

    /// The guide's own result and the figure it is in (one core, one SATA
    /// SSD; 100 clients unless said).
    pub fn guide(self) -> &'static str {
        match self {
            KvTest::Write1 => "917 writes/s (1 client)",
            KvTest::Write10 => "8,650 writes/s (1 client); 46,000 writes/s (100 clients)",
            KvTest::Read10 => "305,000 reads/s, 0.6 ms average (100 clients)",
            KvTest::Mix => "107,000 operations/s (100 clients)",
            KvTest::Range => "3,600,000 keys/s (100 clients)",
        }
    }
}

/// How a transaction picks its keys (YCSB's request distributions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyChoice {
    /// Every row equally likely (the guide's).
    Uniform,
    /// Zipfian with YCSB's constant 0.99, the hot rows scattered over the
    /// keyspace by a hash (YCSB's scrambled Zipfian).
    Zipfian,
    /// Zipfian over recency: the last rows loaded the hottest (YCSB's
    /// "latest"; there are no inserts, so the latest are the highest rows).
    Latest,
}

impl KeyChoice {
    pub fn name(self) -> &'static str {
        match self {
            KeyChoice::Uniform => "uniform",
            KeyChoice::Zipfian => "zipfian",
            KeyChoice::Latest => "latest",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvSpec {
    /// The guide's test the shape came from; `None` when the shape was
    /// changed from every preset.
    pub test: Option<KvTest>,
    /// Point reads per transaction.
    pub reads: u32,
    /// Writes per transaction (updates of loaded rows).
    pub writes: u32,
    /// Range reads per transaction, 0 or 1.
    pub ranges: u32,
    /// Consecutive keys one range read asks for.
    pub range_length: u32,
    /// Rows loaded before the run, keyed 0..rows.
    pub rows: u64,
    pub value_min: u32,
    pub value_max: u32,
    pub keys: KeyChoice,
    /// The keyspace's name on the target (a table, a key prefix).
    pub dataset: String,
    /// Load even when a dataset with the same marker is there.
    pub reload: bool,
}

impl KvSpec {
    /// The spec of one of the guide's tests, with the guide's data.
    pub fn test(t: KvTest) -> KvSpec {
        let (reads, writes, ranges) = t.shape();
        KvSpec {
            test: Some(t),
            reads,
            writes,
            ranges,
            range_length: DEFAULT_RANGE_LENGTH,
            rows: DEFAULT_ROWS,
            value_min: DEFAULT_VALUE_MIN,
            value_max: DEFAULT_VALUE_MAX,
            keys: KeyChoice::Uniform,
            dataset: "kv".to_string(),
            reload: false,
        }
    }

    /// The test whose shape this is, if any: `--reads 9 --writes 1` is
    /// the mix whether or not `--test mix` was said; a range of another
    /// length is not the range test.
    pub fn matching_test(
        reads: u32,
        writes: u32,
        ranges: u32,
        range_length: u32,
    ) -> Option<KvTest> {
        KvTest::ALL.into_iter().find(|t| {
            t.shape() == (reads, writes, ranges)
                && (ranges == 0 || range_length == DEFAULT_RANGE_LENGTH)
        })
    }

    /// The transaction kind's name: the test's, or the shape's
    /// (`r1w0`, `r0w0g1x100`).
    pub fn kind_name(&self) -> String {
        match self.test {
            Some(t) => t.name().to_string(),
            None if self.ranges == 0 => format!("r{}w{}", self.reads, self.writes),
            None => format!(
                "r{}w{}g{}x{}",
                self.reads, self.writes, self.ranges, self.range_length
            ),
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        if self.reads + self.writes + self.ranges == 0 {
            return Err(SpecError::new(
                "--reads",
                "a transaction needs at least one read, write or range read (--reads, --writes, --ranges all 0)",
            ));
        }
        if self.range_length == 0 {
            return Err(SpecError::new("--range-length", "must be at least 1"));
        }
        if self.ranges > 1 {
            return Err(SpecError::new(
                "--ranges",
                "at most 1 range read per transaction",
            ));
        }
        for (flag, n) in [
            ("--reads", self.reads),
            ("--writes", self.writes),
            ("--range-length", self.range_length),
        ] {
            if n > MAX_PER_TXN {
                return Err(SpecError::new(
                    flag,
                    format!("at most {MAX_PER_TXN} per transaction"),
                ));
            }
        }
        if !(1..=MAX_ROWS).contains(&self.rows) {
            return Err(SpecError::new(
                "--rows",
                format!("must be between 1 and {MAX_ROWS}"),
            ));
        }
        if self.value_min > self.value_max {
            return Err(SpecError::new(
                "--value-size",
                format!(
                    "the minimum ({}) is above the maximum ({})",
                    self.value_min, self.value_max
                ),
            ));
        }
        if self.value_min < MIN_VALUE_SIZE || self.value_max > MAX_VALUE_SIZE {
            return Err(SpecError::new(
                "--value-size",
                format!("values are {MIN_VALUE_SIZE} to {MAX_VALUE_SIZE} bytes (a written value carries its writer in 8)"),
            ));
        }
        let name_ok = (1..=32).contains(&self.dataset.len())
            && self
                .dataset
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !name_ok {
            return Err(SpecError::new(
                "--dataset",
                "1 to 32 of a-z, 0-9 and _ (it names a table or a key prefix)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_tests_are_valid_and_named() {
        for t in KvTest::ALL {
            let s = KvSpec::test(t);
            assert_eq!(s.validate(), Ok(()));
            assert_eq!(s.kind_name(), t.name());
            let (r, w, g) = t.shape();
            assert_eq!(KvSpec::matching_test(r, w, g, 1_000), Some(t));
        }
        assert_eq!(KvSpec::matching_test(1, 0, 0, 1_000), None);
        assert_eq!(KvSpec::matching_test(0, 0, 1, 100), None);
    }

    #[test]
    fn bad_shapes_and_sizes_name_their_flag() {
        let bad = |f: fn(&mut KvSpec)| {
            let mut s = KvSpec::test(KvTest::Mix);
            f(&mut s);
            s.validate().unwrap_err().flag
        };
        assert_eq!(bad(|s| (s.reads, s.writes) = (0, 0)), "--reads");
        assert_eq!(bad(|s| s.range_length = 0), "--range-length");
        assert_eq!(bad(|s| s.ranges = 2), "--ranges");
        assert_eq!(
            bad(|s| (s.value_min, s.value_max) = (50, 20)),
            "--value-size"
        );
        assert_eq!(bad(|s| s.value_min = 4), "--value-size");
        assert_eq!(bad(|s| s.rows = 0), "--rows");
        assert_eq!(bad(|s| s.dataset = "Bad-Name".into()), "--dataset");
        assert_eq!(bad(|s| s.writes = MAX_PER_TXN + 1), "--writes");
    }

    #[test]
    fn a_changed_shape_is_named_by_its_numbers() {
        let mut s = KvSpec::test(KvTest::Mix);
        (s.test, s.reads, s.writes) = (None, 1, 0);
        assert_eq!(s.kind_name(), "r1w0");
        let mut s = KvSpec::test(KvTest::Range);
        (s.test, s.range_length) = (None, 100);
        assert_eq!(s.kind_name(), "r0w0g1x100");
    }
}
