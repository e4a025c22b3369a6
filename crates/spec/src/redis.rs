//! The redis workload's knobs: redis-benchmark's tests and flags (`-t`,
//! `-d`, `-r`, `--dbnum`). The tests run one after the other, in
//! redis-benchmark's order, whatever the order given to `-t`.

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// One redis-benchmark test. Serialised under its `-t` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedisTest {
    PingInline,
    PingMbulk,
    Set,
    Get,
    Incr,
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Sadd,
    Hset,
    Spop,
    Zadd,
    Zpopmin,
    /// redis-benchmark's `LPUSH (needed to benchmark LRANGE)`: run (and
    /// reported) before the LRANGE tests whenever one of them is selected.
    LrangePrefill,
    Lrange100,
    Lrange300,
    Lrange500,
    Lrange600,
    Mset,
    Xadd,
    /// A command of the user's own (`loadrig run redis -- SET k __data__`),
    /// as redis-benchmark runs one given after its options.
    Command,
}

impl RedisTest {
    /// Every test, in the order redis-benchmark runs them.
    pub const ALL: [RedisTest; 21] = [
        RedisTest::PingInline,
        RedisTest::PingMbulk,
        RedisTest::Set,
        RedisTest::Get,
        RedisTest::Incr,
        RedisTest::Lpush,
        RedisTest::Rpush,
        RedisTest::Lpop,
        RedisTest::Rpop,
        RedisTest::Sadd,
        RedisTest::Hset,
        RedisTest::Spop,
        RedisTest::Zadd,
        RedisTest::Zpopmin,
        RedisTest::LrangePrefill,
        RedisTest::Lrange100,
        RedisTest::Lrange300,
        RedisTest::Lrange500,
        RedisTest::Lrange600,
        RedisTest::Mset,
        RedisTest::Xadd,
    ];

    /// The name `-t` takes (the prefill has none: it follows the LRANGEs).
    pub fn name(self) -> &'static str {
        match self {
            RedisTest::PingInline => "ping_inline",
            RedisTest::PingMbulk => "ping_mbulk",
            RedisTest::Set => "set",
            RedisTest::Get => "get",
            RedisTest::Incr => "incr",
            RedisTest::Lpush => "lpush",
            RedisTest::Rpush => "rpush",
            RedisTest::Lpop => "lpop",
            RedisTest::Rpop => "rpop",
            RedisTest::Sadd => "sadd",
            RedisTest::Hset => "hset",
            RedisTest::Spop => "spop",
            RedisTest::Zadd => "zadd",
            RedisTest::Zpopmin => "zpopmin",
            RedisTest::LrangePrefill => "lrange_prefill",
            RedisTest::Lrange100 => "lrange_100",
            RedisTest::Lrange300 => "lrange_300",
            RedisTest::Lrange500 => "lrange_500",
            RedisTest::Lrange600 => "lrange_600",
            RedisTest::Mset => "mset",
            RedisTest::Xadd => "xadd",
            RedisTest::Command => "command",
        }
    }

    /// The title redis-benchmark prints (its `-q` lines and CSV `test`
    /// column), byte for byte; loadrig's operation kinds are these.
    pub fn title(self) -> &'static str {
        match self {
            RedisTest::PingInline => "PING_INLINE",
            RedisTest::PingMbulk => "PING_MBULK",
            RedisTest::Set => "SET",
            RedisTest::Get => "GET",
            RedisTest::Incr => "INCR",
            RedisTest::Lpush => "LPUSH",
            RedisTest::Rpush => "RPUSH",
            RedisTest::Lpop => "LPOP",
            RedisTest::Rpop => "RPOP",
            RedisTest::Sadd => "SADD",
            RedisTest::Hset => "HSET",
            RedisTest::Spop => "SPOP",
            RedisTest::Zadd => "ZADD",
            RedisTest::Zpopmin => "ZPOPMIN",
            RedisTest::LrangePrefill => "LPUSH (needed to benchmark LRANGE)",
            RedisTest::Lrange100 => "LRANGE_100 (first 100 elements)",
            RedisTest::Lrange300 => "LRANGE_300 (first 300 elements)",
            RedisTest::Lrange500 => "LRANGE_500 (first 450 elements)",
            RedisTest::Lrange600 => "LRANGE_600 (first 600 elements)",
            RedisTest::Mset => "MSET (10 keys)",
            RedisTest::Xadd => "XADD",
            // redis-benchmark's title is the command line itself:
            // `RedisSpec::title`.
            RedisTest::Command => "COMMAND",
        }
    }

    fn is_lrange(self) -> bool {
        matches!(
            self,
            RedisTest::Lrange100
                | RedisTest::Lrange300
                | RedisTest::Lrange500
                | RedisTest::Lrange600
        )
    }

    /// The tests `-t LIST` selects, as redis-benchmark reads it: comma
    /// separated, case-insensitive; `ping` is both pings, `lrange` the four
    /// LRANGE tests; any LRANGE brings its LPUSH prefill. In run order.
    /// Unlike redis-benchmark, an unknown name is an error, not ignored.
    pub fn select(list: &str) -> Result<Vec<RedisTest>, SpecError> {
        let mut picked = [false; RedisTest::ALL.len()];
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let word = word.to_ascii_lowercase();
            let group: &[RedisTest] = match word.as_str() {
                "ping" => &[RedisTest::PingInline, RedisTest::PingMbulk],
                "lrange" => &[
                    RedisTest::Lrange100,
                    RedisTest::Lrange300,
                    RedisTest::Lrange500,
                    RedisTest::Lrange600,
                ],
                _ => {
                    let Some(i) = RedisTest::ALL
                        .iter()
                        .position(|t| *t != RedisTest::LrangePrefill && t.name() == word)
                    else {
                        return Err(SpecError::new(
                            "--tests",
                            format!("unknown test '{word}' (tests: {})", names().join(",")),
                        ));
                    };
                    picked[i] = true;
                    continue;
                }
            };
            for t in group {
                if let Some(i) = RedisTest::ALL.iter().position(|a| a == t) {
                    picked[i] = true;
                }
            }
        }
        let mut out: Vec<RedisTest> = RedisTest::ALL
            .iter()
            .zip(picked)
            .filter(|(_, p)| *p)
            .map(|(t, _)| *t)
            .collect();
        if out.iter().any(|t| t.is_lrange()) {
            let at = out.iter().position(|t| t.is_lrange()).unwrap_or(0);
            out.insert(at, RedisTest::LrangePrefill);
        }
        if out.is_empty() {
            return Err(SpecError::new("--tests", "no test selected"));
        }
        Ok(out)
    }
}

/// The names `-t` accepts, groups first.
fn names() -> Vec<&'static str> {
    let mut v = vec!["ping", "lrange"];
    v.extend(
        RedisTest::ALL
            .iter()
            .filter(|t| **t != RedisTest::LrangePrefill)
            .map(|t| t.name()),
    );
    v
}

/// The redis workload: redis-benchmark's default suite (or the tests `-t`
/// picks), each run as its own phase with `-n` requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedisSpec {
    /// The tests that run, in run order (the LRANGE prefill included).
    pub tests: Vec<RedisTest>,
    /// Bytes of each value written (`-d`), made as redis-benchmark makes them.
    pub data_size: usize,
    /// `-r`: `__rand_int__` in keys and members becomes a 12-digit number
    /// below this, drawn per command; `None`: the placeholder stays as it is
    /// (every command on the same key), as in redis-benchmark.
    pub keyspace: Option<u64>,
    /// The logical database the workload's keys live in (`--dbnum`);
    /// `None`: the server's default, and no SELECT is sent (a cluster or
    /// a Redis-compatible server may have no other). Older reports
    /// always hold a number (then 9 by default).
    #[serde(default)]
    pub dbnum: Option<u32>,
    /// With [`RedisTest::Command`]: the command and its arguments, where
    /// `__rand_int__` is drawn as in the tests (with `-r`) and `__data__`
    /// becomes the `-d` bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// memtier_benchmark's SET:GET mix instead of the tests (`tests` is
    /// then empty): one run, both kinds together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<MemtierSpec>,
    /// `--no-cluster-tags`: on a cluster, the tests' keys carry no hash
    /// tag (each key to its own slot's master, a connection's commands
    /// spread over every master) instead of redis-benchmark --cluster's
    /// placement (docs/guides/redis-cluster.md, "Key placement").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cluster_tags: bool,
    /// Whether the tests' keys carry a hash tag (`key:{tag}:...`): set by
    /// the workload when the target is a cluster and the tags are not
    /// turned off; never read from or written to a file.
    #[serde(skip)]
    pub tagged: bool,
}

/// How a key number is drawn from `[key_min, key_max]` (memtier's
/// `--key-pattern` and `--command-key-pattern` letters R, S, G, Z, P).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPattern {
    /// Uniform.
    Random,
    /// `key_min + index mod range`: every key in turn.
    Sequential,
    /// Normal around the middle of the range, standard deviation a sixth
    /// of it (memtier's defaults), clamped to the range.
    Gaussian,
    /// Zipf with exponent `zipf_exp`: `key_min` the hottest.
    Zipf,
    /// memtier's "parallel": each connection walks its own equal share of
    /// the range in turn.
    Parallel,
}

impl KeyPattern {
    fn letter(c: &str) -> Option<KeyPattern> {
        match c.trim().to_ascii_uppercase().as_str() {
            "R" => Some(KeyPattern::Random),
            "S" => Some(KeyPattern::Sequential),
            "G" => Some(KeyPattern::Gaussian),
            "Z" => Some(KeyPattern::Zipf),
            "P" => Some(KeyPattern::Parallel),
            _ => None,
        }
    }

    /// `R`, or `SET:GET` letters as memtier takes them (`R:R`, `S:G`, ...).
    pub fn parse(s: &str) -> Result<(KeyPattern, KeyPattern), SpecError> {
        let bad = || {
            SpecError::new(
                "--key-pattern",
                format!("expected P or SET:GET with P one of R S G Z P, got '{s}'"),
            )
        };
        let (a, b) = s.split_once(':').unwrap_or((s, s));
        Ok((
            KeyPattern::letter(a).ok_or_else(bad)?,
            KeyPattern::letter(b).ok_or_else(bad)?,
        ))
    }
}

/// Value sizes: fixed (`-d`), uniform in a range (`--data-size-range`) or
/// a weighted list (`--data-size-list`), as memtier takes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ValueSizes {
    Fixed {
        size: usize,
    },
    Range {
        min: usize,
        max: usize,
    },
    /// (size, weight) pairs.
    List {
        sizes: Vec<(usize, u32)>,
    },
}

impl ValueSizes {
    /// `MIN-MAX`.
    pub fn range(s: &str) -> Result<ValueSizes, SpecError> {
        let bad = || {
            SpecError::new(
                "--data-size-range",
                format!("expected MIN-MAX bytes, got '{s}'"),
            )
        };
        let (a, b) = s.split_once('-').ok_or_else(bad)?;
        Ok(ValueSizes::Range {
            min: a.trim().parse().map_err(|_| bad())?,
            max: b.trim().parse().map_err(|_| bad())?,
        })
    }

    /// `SIZE:WEIGHT,SIZE:WEIGHT,...`.
    pub fn list(s: &str) -> Result<ValueSizes, SpecError> {
        let bad = || {
            SpecError::new(
                "--data-size-list",
                format!("expected SIZE:WEIGHT,SIZE:WEIGHT,... got '{s}'"),
            )
        };
        let sizes = s
            .split(',')
            .map(|p| {
                let (a, b) = p.split_once(':').ok_or_else(bad)?;
                Ok((
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                ))
            })
            .collect::<Result<Vec<(usize, u32)>, SpecError>>()?;
        Ok(ValueSizes::List { sizes })
    }

    /// The smallest and the largest size.
    pub fn bounds(&self) -> (usize, usize) {
        match self {
            ValueSizes::Fixed { size } => (*size, *size),
            ValueSizes::Range { min, max } => (*min, *max),
            ValueSizes::List { sizes } => (
                sizes.iter().map(|s| s.0).min().unwrap_or(0),
                sizes.iter().map(|s| s.0).max().unwrap_or(0),
            ),
        }
    }

    fn validate(&self) -> Result<(), SpecError> {
        let flag = match self {
            ValueSizes::Fixed { .. } => "--value-size",
            ValueSizes::Range { .. } => "--data-size-range",
            ValueSizes::List { .. } => "--data-size-list",
        };
        let (min, max) = self.bounds();
        if min < 1 || min > max || max > MAX_DATA_SIZE {
            return Err(SpecError::new(
                flag,
                format!("sizes must be between 1 and {MAX_DATA_SIZE} bytes, the smallest first"),
            ));
        }
        if let ValueSizes::List { sizes } = self {
            if sizes.is_empty() || sizes.iter().map(|s| u64::from(s.1)).sum::<u64>() == 0 {
                return Err(SpecError::new(
                    flag,
                    "the weights must add up to more than 0",
                ));
            }
        }
        Ok(())
    }
}

/// memtier_benchmark's load: SETs and GETs in a fixed ratio on keys
/// `key_prefix` + a number drawn from `[key_min, key_max]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemtierSpec {
    /// `--ratio SETS:GETS`: of every `sets + gets` operation indices, the
    /// first `sets` are SETs.
    pub sets: u32,
    pub gets: u32,
    pub set_pattern: KeyPattern,
    pub get_pattern: KeyPattern,
    pub key_prefix: String,
    pub key_min: u64,
    pub key_max: u64,
    /// The exponent of the Zipf pattern.
    pub zipf_exp: f64,
    pub sizes: ValueSizes,
    /// memtier's `--command`s: when given, these run (each in its ratio)
    /// instead of the SET:GET mix, `sets`, `gets` and the patterns unused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<MemtierCommand>,
}

/// One memtier `--command`: its words, `__key__` standing for a key
/// (`key_prefix` and a number drawn by `pattern`) and `__data__` for a
/// value, anywhere in a word; of each cycle of the commands' ratios added
/// up, `ratio` consecutive operations are this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemtierCommand {
    pub args: Vec<String>,
    pub ratio: u32,
    pub pattern: KeyPattern,
}

impl MemtierCommand {
    /// memtier's `--command` text split into words: spaces separate,
    /// double quotes keep spaces in a word.
    pub fn words(line: &str) -> Result<Vec<String>, SpecError> {
        let mut words = Vec::new();
        let mut word = String::new();
        let (mut quoted, mut started) = (false, false);
        for c in line.chars() {
            match c {
                '"' => (quoted, started) = (!quoted, true),
                c if c.is_whitespace() && !quoted => {
                    if started {
                        words.push(std::mem::take(&mut word));
                    }
                    started = false;
                }
                c => {
                    word.push(c);
                    started = true;
                }
            }
        }
        if quoted {
            return Err(SpecError::new(
                "--command",
                format!("an unclosed quote in '{line}'"),
            ));
        }
        if started {
            words.push(word);
        }
        if words.is_empty() {
            return Err(SpecError::new("--command", "an empty command"));
        }
        Ok(words)
    }

    /// The title the command's operations are reported under: its words.
    pub fn title(&self) -> String {
        self.args.join(" ")
    }
}

impl MemtierSpec {
    /// `SETS:GETS`, e.g. `1:10`.
    pub fn ratio(s: &str) -> Result<(u32, u32), SpecError> {
        let bad = || SpecError::new("--ratio", format!("expected SETS:GETS, got '{s}'"));
        let (a, b) = s.split_once(':').ok_or_else(bad)?;
        let (a, b): (u32, u32) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if a.checked_add(b).unwrap_or(0) == 0 {
            return Err(bad());
        }
        Ok((a, b))
    }

    fn validate(&self) -> Result<(), SpecError> {
        if self.sets.checked_add(self.gets).unwrap_or(0) == 0 {
            return Err(SpecError::new("--ratio", "needs at least one SET or GET"));
        }
        if self.key_min > self.key_max {
            return Err(SpecError::new(
                "--key-minimum",
                "must not be above --key-maximum",
            ));
        }
        if !(self.zipf_exp > 0.0 && self.zipf_exp.is_finite()) {
            return Err(SpecError::new("--key-zipf-exp", "must be greater than 0"));
        }
        if !self.commands.is_empty() {
            let total: u64 = self.commands.iter().map(|c| u64::from(c.ratio)).sum();
            if total == 0 || total > u64::from(u32::MAX) {
                return Err(SpecError::new(
                    "--command-ratio",
                    "the ratios must add up to more than 0",
                ));
            }
            if self.commands.iter().any(|c| c.args.is_empty()) {
                return Err(SpecError::new("--command", "an empty command"));
            }
        }
        self.sizes.validate()
    }
}

/// The largest `-d`: Redis's own bound on a bulk string (512 MiB).
pub const MAX_DATA_SIZE: usize = 512 * 1024 * 1024;

impl RedisSpec {
    /// The database to select: 0 (none is selected) unless `--dbnum` gave one.
    pub fn db(&self) -> u32 {
        self.dbnum.unwrap_or(0)
    }

    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        if let Some(m) = &self.mix {
            if !self.tests.is_empty() {
                return Err(SpecError::new(
                    "--ratio",
                    "the SET:GET mix runs instead of the tests (no -t, no command)",
                ));
            }
            return m.validate();
        }
        if self.tests.is_empty() {
            return Err(SpecError::new("--tests", "no test selected"));
        }
        let custom = self.tests.contains(&RedisTest::Command);
        if custom == self.command.is_empty() || (custom && self.tests.len() > 1) {
            return Err(SpecError::new(
                "--tests",
                "a command of your own (after --) runs alone, without -t",
            ));
        }
        if !(1..=MAX_DATA_SIZE).contains(&self.data_size) {
            return Err(SpecError::new(
                "--value-size",
                format!("must be between 1 and {MAX_DATA_SIZE} bytes"),
            ));
        }
        Ok(())
    }

    /// The title a test is reported under: redis-benchmark's, or for a
    /// command of the user's own the command line, as redis-benchmark
    /// prints it.
    pub fn title(&self, test: RedisTest) -> String {
        match test {
            RedisTest::Command => self.command.join(" "),
            t => t.title().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_as_redis_benchmark_does() {
        let all: Vec<&str> = RedisTest::select(
            "ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange,mset,xadd",
        )
        .unwrap()
        .iter()
        .map(|t| t.name())
        .collect();
        let every: Vec<&str> = RedisTest::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(all, every);
        let t = RedisTest::select("GET,Set").unwrap();
        assert_eq!(t, vec![RedisTest::Set, RedisTest::Get]);
        let t = RedisTest::select("lrange_500").unwrap();
        assert_eq!(t, vec![RedisTest::LrangePrefill, RedisTest::Lrange500]);
        let t = RedisTest::select("ping").unwrap();
        assert_eq!(t, vec![RedisTest::PingInline, RedisTest::PingMbulk]);
        assert_eq!(RedisTest::select("sett").unwrap_err().flag, "--tests");
        assert!(RedisTest::select("lrange_prefill").is_err());
        assert!(RedisTest::select(",").is_err());
    }

    #[test]
    fn memtier_flags_parse() {
        assert_eq!(MemtierSpec::ratio("1:10").unwrap(), (1, 10));
        assert!(MemtierSpec::ratio("0:0").is_err());
        assert!(MemtierSpec::ratio("1").is_err());
        assert_eq!(
            KeyPattern::parse("s:z").unwrap(),
            (KeyPattern::Sequential, KeyPattern::Zipf)
        );
        assert_eq!(
            KeyPattern::parse("G").unwrap(),
            (KeyPattern::Gaussian, KeyPattern::Gaussian)
        );
        assert_eq!(KeyPattern::parse("X").unwrap_err().flag, "--key-pattern");
        assert_eq!(
            KeyPattern::parse("P").unwrap(),
            (KeyPattern::Parallel, KeyPattern::Parallel)
        );
        assert_eq!(
            MemtierCommand::words(" SET  __key__ \"a b\" ").unwrap(),
            ["SET", "__key__", "a b"]
        );
        assert!(MemtierCommand::words("SET \"x").is_err());
        assert!(MemtierCommand::words("  ").is_err());
        assert_eq!(ValueSizes::range("32-128").unwrap().bounds(), (32, 128));
        assert_eq!(
            ValueSizes::list("32:1,1024:3").unwrap(),
            ValueSizes::List {
                sizes: vec![(32, 1), (1024, 3)]
            }
        );
        assert!(ValueSizes::list("32:0").unwrap().validate().is_err());
        assert!(ValueSizes::range("9-3").unwrap().validate().is_err());
    }

    #[test]
    fn titles_are_redis_benchmarks() {
        assert_eq!(
            RedisTest::Lrange500.title(),
            "LRANGE_500 (first 450 elements)"
        );
        assert_eq!(RedisTest::Mset.title(), "MSET (10 keys)");
        let json = serde_json::to_string(&RedisTest::PingInline).unwrap();
        assert_eq!(json, "\"ping_inline\"");
    }
}
