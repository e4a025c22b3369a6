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
                            "-t",
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
            return Err(SpecError::new("-t", "no test selected"));
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
    /// The logical database the workload's keys live in (`--dbnum`).
    pub dbnum: u32,
    /// With [`RedisTest::Command`]: the command and its arguments, where
    /// `__rand_int__` is drawn as in the tests (with `-r`) and `__data__`
    /// becomes the `-d` bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

/// The largest `-d`: Redis's own bound on a bulk string (512 MiB).
pub const MAX_DATA_SIZE: usize = 512 * 1024 * 1024;

impl RedisSpec {
    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        if self.tests.is_empty() {
            return Err(SpecError::new("-t", "no test selected"));
        }
        let custom = self.tests.contains(&RedisTest::Command);
        if custom == self.command.is_empty() || (custom && self.tests.len() > 1) {
            return Err(SpecError::new(
                "-t",
                "a command of your own (after --) runs alone, without -t",
            ));
        }
        if !(1..=MAX_DATA_SIZE).contains(&self.data_size) {
            return Err(SpecError::new(
                "-d",
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
        assert_eq!(RedisTest::select("sett").unwrap_err().flag, "-t");
        assert!(RedisTest::select("lrange_prefill").is_err());
        assert!(RedisTest::select(",").is_err());
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
