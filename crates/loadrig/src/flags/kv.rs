//! The kv workload's flags: FoundationDB's benchmarking guide's tests and
//! the transaction shape underneath them.

use clap::{Args, ValueEnum};
use loadrig_spec::{
    KeyChoice, KvSpec, KvTest, MemcacheSpec, SpecError, WorkloadSpec, DEFAULT_RANGE_LENGTH,
    DEFAULT_ROWS, DEFAULT_VALUE_MAX, DEFAULT_VALUE_MIN,
};

use super::Defaults;

pub(super) const KV_HELP: &str =
    "FoundationDB's benchmarking guide: write1, write10, read10, mix, range over rows loaded first \
(and reused); --reads, --writes, --ranges and --range-length give other shapes. Every row a write \
touched is traced to its writer afterwards. What a run does: docs/guides/kv.md.";

/// The guide's: 100 clients for 60 seconds, on the embedded database.
pub(super) const KV_DEFAULTS: Defaults = Defaults {
    clients: 100,
    threads: None,
    target: "sqlite://",
    duration: Some(60.0),
};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KvTestArg {
    /// Write 1 random key, commit
    Write1,
    /// Write 10 random keys, commit
    Write10,
    /// Read 10 random keys (no commit)
    Read10,
    /// Read 9, write 1, commit
    Mix,
    /// Read 1,000 consecutive keys from a random start
    Range,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KeyChoiceArg {
    /// Every row equally likely
    Uniform,
    /// YCSB's scrambled Zipfian (0.99)
    Zipfian,
    /// YCSB's latest: the last rows loaded the hottest
    Latest,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Kv workload")]
pub struct KvArgs {
    /// The guide's test (a shape of transaction)
    #[arg(long, value_enum, default_value = "mix")]
    pub test: KvTestArg,
    /// Point reads per transaction [default: the test's]
    #[arg(long, value_name = "N")]
    pub reads: Option<u32>,
    /// Writes per transaction [default: the test's]
    #[arg(long, value_name = "N")]
    pub writes: Option<u32>,
    /// Range reads per transaction, 0 or 1 [default: the test's]
    #[arg(long, value_name = "N")]
    pub ranges: Option<u32>,
    /// Consecutive keys a range read asks for
    #[arg(long, value_name = "KEYS", default_value_t = DEFAULT_RANGE_LENGTH)]
    pub range_length: u32,
    /// Rows in the dataset
    #[arg(long, default_value_t = DEFAULT_ROWS)]
    pub rows: u64,
    /// Bytes of every value, or MIN-MAX (uniform)
    #[arg(long, value_name = "BYTES|MIN-MAX", default_value_t = format!("{DEFAULT_VALUE_MIN}-{DEFAULT_VALUE_MAX}"))]
    pub value_size: String,
    /// How transactions pick their keys
    #[arg(long, value_enum, default_value = "uniform")]
    pub keys: KeyChoiceArg,
    /// The dataset's name on the target (a table or key prefix): a-z, 0-9, _
    #[arg(long, default_value = "kv")]
    pub dataset: String,
    /// Load the data even when the same dataset is there already
    #[arg(long)]
    pub load: bool,
}

impl KvArgs {
    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        let test = match self.test {
            KvTestArg::Write1 => KvTest::Write1,
            KvTestArg::Write10 => KvTest::Write10,
            KvTestArg::Read10 => KvTest::Read10,
            KvTestArg::Mix => KvTest::Mix,
            KvTestArg::Range => KvTest::Range,
        };
        let (r, w, g) = test.shape();
        let (reads, writes, ranges) = (
            self.reads.unwrap_or(r),
            self.writes.unwrap_or(w),
            self.ranges.unwrap_or(g),
        );
        let (min, max) = MemcacheSpec::value_sizes(&self.value_size)?;
        let size = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let spec = KvSpec {
            test: KvSpec::matching_test(reads, writes, ranges, self.range_length),
            reads,
            writes,
            ranges,
            range_length: self.range_length,
            rows: self.rows,
            value_min: size(min),
            value_max: size(max),
            keys: match self.keys {
                KeyChoiceArg::Uniform => KeyChoice::Uniform,
                KeyChoiceArg::Zipfian => KeyChoice::Zipfian,
                KeyChoiceArg::Latest => KeyChoice::Latest,
            },
            dataset: self.dataset.clone(),
            reload: self.load,
        };
        spec.validate()?;
        Ok(WorkloadSpec::Kv(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Cli;
    use clap::Parser;

    fn spec(args: &[&str]) -> Result<loadrig_spec::KvSpec, loadrig_spec::SpecError> {
        let mut all = vec!["loadrig", "run", "kv"];
        all.extend(args);
        let cli = Cli::try_parse_from(all).expect("parses");
        let super::super::Command::Run {
            workload: super::super::WorkloadArgs::Kv { kv, .. },
        } = cli.command
        else {
            panic!("kv")
        };
        match kv.spec()? {
            loadrig_spec::WorkloadSpec::Kv(s) => Ok(s),
            _ => panic!("kv spec"),
        }
    }

    #[test]
    fn tests_are_shapes_and_flags_change_them() {
        let s = spec(&[]).unwrap();
        assert_eq!((s.reads, s.writes, s.ranges, s.rows), (9, 1, 0, 1_000_000));
        assert_eq!((s.value_min, s.value_max), (8, 100));
        let s = spec(&["--test", "write10"]).unwrap();
        assert_eq!((s.reads, s.writes), (0, 10));
        // A changed shape is no longer the test; one that matches another is that one.
        let s = spec(&["--test", "mix", "--reads", "1", "--writes", "0"]).unwrap();
        assert_eq!(s.test, None);
        let s = spec(&["--test", "mix", "--reads", "10", "--writes", "0"]).unwrap();
        assert_eq!(s.test, Some(loadrig_spec::KvTest::Read10));
    }

    #[test]
    fn bad_shapes_are_refused_by_flag() {
        let flag = |a: &[&str]| spec(a).unwrap_err().flag;
        assert_eq!(
            flag(&["--test", "range", "--range-length", "0"]),
            "--range-length"
        );
        assert_eq!(flag(&["--reads", "0", "--writes", "0"]), "--reads");
        assert_eq!(flag(&["--value-size", "100-8"]), "--value-size");
        assert_eq!(flag(&["--value-size", "x"]), "--value-size");
    }
}
