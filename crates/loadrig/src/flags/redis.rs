//! The redis workload's flags: redis-benchmark's and memtier's.

use std::borrow::Cow;

use clap::Args;
use loadrig_spec::{
    KeyPattern, MemtierCommand, MemtierSpec, RedisSpec, RedisTest, SpecError, ValueSizes,
    WorkloadSpec,
};

use super::{Defaults, RunArgs};

pub(super) const REDIS_HELP: &str =
    "As redis-benchmark, with loadrig's flags: -t is --target and -d --duration here as in every \
workload (redis-benchmark's -t and -d are --tests and --value-size; `loadrig redis-benchmark ...` \
takes its flags as it spells them). What a run does: docs/reference/workloads.md, section redis.";

/// redis-benchmark's: 50 clients, one thread, the local server.
pub(super) const REDIS_DEFAULTS: Defaults = Defaults {
    clients: 50,
    threads: Some(1),
    target: "redis://127.0.0.1:6379",
    duration: None,
};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("memtier").args(["ratio", "commands"]).multiple(true)))]
#[command(next_help_heading = "Redis workload")]
pub struct RedisArgs {
    /// Tests, comma separated, as redis-benchmark names them [default: all]
    ///
    /// Tests, comma separated, as redis-benchmark names them: ping (=
    /// ping_inline,ping_mbulk), set, get, incr, lpush, rpush, lpop, rpop,
    /// sadd, hset, spop, zadd, zpopmin, lrange (=
    /// lrange_100,lrange_300,lrange_500,lrange_600), mset, xadd [default: all]
    #[arg(long = "tests", value_name = "TESTS")]
    pub tests: Option<String>,
    /// Bytes of each value written (SET, LPUSH, RPUSH, HSET, MSET, XADD)
    #[arg(
        long = "value-size",
        alias = "data-size",
        value_name = "BYTES",
        default_value_t = 3
    )]
    pub data_size: usize,
    /// Random keys: __rand_int__ becomes a number below this [default: fixed keys]
    ///
    /// Random keys: __rand_int__ in keys, members and scores becomes a
    /// 12-digit number below this, per command [default: fixed keys].
    #[arg(short = 'r', long = "keyspace", value_name = "KEYSPACELEN")]
    pub keyspace: Option<u64>,
    /// The logical database of the keys [default: the connection's, no SELECT]
    ///
    /// The logical database the workload's keys live in: SELECT is sent
    /// only when this is given.
    #[arg(long, value_name = "DB")]
    pub dbnum: Option<u32>,
    /// The target is a Redis Cluster, as redis-benchmark --cluster
    ///
    /// The target is a Redis Cluster, as redis-benchmark --cluster (the
    /// same as --target redis+cluster://...).
    #[arg(long)]
    pub cluster: bool,
    /// On a cluster, the keys without redis-benchmark's hash tag
    ///
    /// On a cluster, the tests' keys without redis-benchmark --cluster's
    /// hash tag: each key goes to its own slot's master, so a connection's
    /// pipeline is spread over every master.
    #[arg(long)]
    pub no_cluster_tags: bool,
    /// A command of your own instead of the tests, after --
    ///
    /// A command of your own instead of the tests, after --: __rand_int__ is
    /// drawn as with -r, __data__ is the --value-size bytes.
    #[arg(last = true, value_name = "COMMAND", conflicts_with = "tests")]
    pub command: Vec<String>,
    /// memtier_benchmark's load: SETs and GETs in this ratio (e.g. 1:10)
    ///
    /// memtier_benchmark's load instead of the tests: SETs and GETs in this
    /// ratio (e.g. 1:10), both in one run.
    #[arg(long, value_name = "SETS:GETS", conflicts_with_all = ["tests", "command"])]
    pub ratio: Option<String>,
    /// With --ratio: keys drawn R, S, G, Z or P; SET:GET for each its own
    ///
    /// With --ratio: keys drawn R (uniform), S (sequential), G (Gaussian),
    /// Z (Zipf) or P (parallel: each connection its share); SET:GET for
    /// each its own.
    #[arg(long, value_name = "P[:P]", default_value = "R:R", requires = "ratio")]
    pub key_pattern: String,
    /// With --ratio or --command: a key is this prefix and a number
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "memtier-",
        requires = "memtier"
    )]
    pub key_prefix: String,
    /// With --ratio or --command: the smallest key number
    #[arg(long, value_name = "N", default_value_t = 0, requires = "memtier")]
    pub key_minimum: u64,
    /// With --ratio or --command: the largest key number
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000_000,
        requires = "memtier"
    )]
    pub key_maximum: u64,
    /// With --ratio or --command: the exponent of the Zipf pattern (Z)
    #[arg(long, value_name = "EXP", default_value_t = 1.0, requires = "memtier")]
    pub key_zipf_exp: f64,
    /// With --ratio or --command: value sizes uniform in this range, instead of --value-size
    #[arg(
        long,
        value_name = "MIN-MAX",
        requires = "memtier",
        conflicts_with = "data_size_list"
    )]
    pub data_size_range: Option<String>,
    /// With --ratio or --command: value sizes from this weighted list, instead of --value-size
    #[arg(long, value_name = "SIZE:WEIGHT,...", requires = "memtier")]
    pub data_size_list: Option<String>,
    /// memtier's --command: this command instead of the tests or the SET:GET mix (repeatable, each in its ratio); __key__ is a key (--key-prefix and a number), __data__ a value
    #[arg(
        long = "command",
        value_name = "COMMAND",
        help_heading = "Redis workload: memtier's commands",
        conflicts_with_all = ["tests", "command", "ratio"]
    )]
    pub commands: Vec<String>,
    /// The ratio of each --command, in their order (default 1 each)
    #[arg(
        long,
        value_name = "N",
        help_heading = "Redis workload: memtier's commands",
        requires = "commands"
    )]
    pub command_ratio: Vec<u32>,
    /// The key pattern of each --command, in their order: R, S, G, Z or P, as --key-pattern (default R each)
    #[arg(
        long,
        value_name = "P",
        help_heading = "Redis workload: memtier's commands",
        requires = "commands"
    )]
    pub command_key_pattern: Vec<String>,
}

impl RedisArgs {
    /// With `--cluster`, the `redis://` target as `redis+cluster://`.
    pub fn cluster_url(&self, target: &str) -> Result<Option<Cow<'static, str>>, SpecError> {
        if !self.cluster || target.starts_with("redis+cluster://") {
            return Ok(None);
        }
        match target.strip_prefix("redis://") {
            Some(rest) => Ok(Some(format!("redis+cluster://{rest}").into())),
            None => Err(SpecError::new(
                "--cluster",
                "takes a redis:// or redis+cluster:// target",
            )),
        }
    }

    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        if self.ratio.is_some() || !self.commands.is_empty() {
            let (sets, gets) = match &self.ratio {
                Some(ratio) => MemtierSpec::ratio(ratio)?,
                None => (1, 10),
            };
            let (set_pattern, get_pattern) = KeyPattern::parse(&self.key_pattern)?;
            let commands = self.memtier_commands()?;
            let sizes = match (&self.data_size_range, &self.data_size_list) {
                (Some(r), _) => ValueSizes::range(r)?,
                (None, Some(l)) => ValueSizes::list(l)?,
                (None, None) => ValueSizes::Fixed {
                    size: self.data_size,
                },
            };
            return Ok(WorkloadSpec::Redis(RedisSpec {
                tests: Vec::new(),
                data_size: sizes.bounds().1,
                keyspace: self.keyspace,
                dbnum: self.dbnum,
                command: Vec::new(),
                no_cluster_tags: self.no_cluster_tags,
                tagged: false,
                mix: Some(MemtierSpec {
                    sets,
                    gets,
                    set_pattern,
                    get_pattern,
                    key_prefix: self.key_prefix.clone(),
                    key_min: self.key_minimum,
                    key_max: self.key_maximum,
                    zipf_exp: self.key_zipf_exp,
                    sizes,
                    commands,
                }),
            }));
        }
        let tests = match &self.tests {
            _ if !self.command.is_empty() => vec![RedisTest::Command],
            Some(list) => RedisTest::select(list)?,
            None => RedisTest::ALL.to_vec(),
        };
        Ok(WorkloadSpec::Redis(RedisSpec {
            tests,
            data_size: self.data_size,
            keyspace: self.keyspace,
            dbnum: self.dbnum,
            command: self.command.clone(),
            mix: None,
            no_cluster_tags: self.no_cluster_tags,
            tagged: false,
        }))
    }
}

impl RedisArgs {
    /// `--command`s with the ratio and key pattern given in the same place
    /// of `--command-ratio` and `--command-key-pattern`.
    fn memtier_commands(&self) -> Result<Vec<MemtierCommand>, SpecError> {
        let n = self.commands.len();
        for (flag, given) in [
            ("--command-ratio", self.command_ratio.len()),
            ("--command-key-pattern", self.command_key_pattern.len()),
        ] {
            if given > n {
                return Err(SpecError::new(
                    flag,
                    format!("{given} given for {n} --command"),
                ));
            }
        }
        self.commands
            .iter()
            .enumerate()
            .map(|(i, line)| {
                let pattern = match self.command_key_pattern.get(i) {
                    Some(p) if !p.contains(':') => KeyPattern::parse(p)?.0,
                    Some(p) => {
                        return Err(SpecError::new(
                            "--command-key-pattern",
                            format!("one letter per command (R S G Z P), got '{p}'"),
                        ))
                    }
                    None => KeyPattern::Random,
                };
                Ok(MemtierCommand {
                    args: MemtierCommand::words(line)?,
                    ratio: self.command_ratio.get(i).copied().unwrap_or(1),
                    pattern,
                })
            })
            .collect()
    }
}

/// `-t get` from before -t was --target everywhere: a list of tests
/// given as the target is refused with the flag that takes it.
pub(super) fn tests_are_not_a_target(run: &RunArgs) -> Result<(), SpecError> {
    match run.target.as_deref() {
        Some(t) if !t.contains("://") && RedisTest::select(t).is_ok() => Err(SpecError::new(
            "--target",
            format!(
                "'{t}' is a list of tests, not a URL: -t is --target in every \
                 workload; the tests are --tests (or `loadrig redis-benchmark -t {t}`)"
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command, WorkloadArgs};
    use clap::Parser;
    use loadrig_spec::{KeyPattern, MemtierSpec, SpecError, WorkloadSpec};

    /// `loadrig run redis ARGS`' memtier spec; `Err(None)`: clap refused.
    fn mix(args: &[&str]) -> Result<MemtierSpec, Option<SpecError>> {
        let mut all = vec!["loadrig", "run", "redis"];
        all.extend(args);
        let cli = Cli::try_parse_from(all).map_err(|_| None)?;
        let Command::Run {
            workload: WorkloadArgs::Redis { redis, .. },
        } = cli.command
        else {
            panic!("redis")
        };
        match redis.spec().map_err(Some)? {
            WorkloadSpec::Redis(s) => Ok(s.mix.expect("a memtier load")),
            _ => panic!("redis spec"),
        }
    }

    #[test]
    fn commands_take_their_ratios_and_patterns_in_order() {
        let m = mix(&[
            "--command",
            "SET __key__ __data__",
            "--command",
            "GET __key__",
            "--command-ratio",
            "3",
            "--command-key-pattern",
            "S",
            "--key-prefix",
            "k:",
        ])
        .unwrap();
        let c: Vec<(u32, KeyPattern)> = m.commands.iter().map(|c| (c.ratio, c.pattern)).collect();
        assert_eq!(c, [(3, KeyPattern::Sequential), (1, KeyPattern::Random)]);
        assert_eq!(
            (m.commands[1].title(), m.key_prefix.as_str()),
            ("GET __key__".into(), "k:")
        );
        let e = mix(&[
            "--command",
            "GET __key__",
            "--command-ratio",
            "1",
            "--command-ratio",
            "2",
        ]);
        assert_eq!(e.unwrap_err().unwrap().flag, "--command-ratio");
        let e = mix(&["--command", "GET __key__", "--command-key-pattern", "S:G"]);
        assert_eq!(e.unwrap_err().unwrap().flag, "--command-key-pattern");
        // Not with the tests, the mix or a trailing command; no ratio alone.
        assert!(mix(&["--command", "PING", "--ratio", "1:1"])
            .unwrap_err()
            .is_none());
        assert!(mix(&["--command", "PING", "--tests", "get"])
            .unwrap_err()
            .is_none());
        assert!(mix(&["--command-ratio", "2"]).unwrap_err().is_none());
    }
}
