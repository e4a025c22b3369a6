//! The peers' habits: a flag loadrig shares with a peer under another
//! meaning, given a value that reads as the peer's, gets one line on
//! standard error saying what loadrig took it as and how to say the
//! peer's meaning. A hint, not a refusal, where loadrig's meaning can be
//! what was meant (`-d 100` may be a 100 s run); a value that cannot be
//! loadrig's is refused where it is parsed (`-t set,get`,
//! flags/redis.rs; wrk's `-t2`, flags/mod.rs).

use clap::parser::ValueSource;
use clap::ArgMatches;
use loadrig_spec::{RunSpec, WorkloadSpec};

/// The hints for `run`'s matches (`loadrig run WORKLOAD ...`) and the
/// spec they made, in the order printed.
pub fn notes(matches: &ArgMatches, spec: &RunSpec) -> Vec<String> {
    let Some(m) = workload_matches(matches) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    notes.extend(bare_duration(m, spec));
    notes
}

/// The matches of the workload's subcommand.
fn workload_matches(matches: &ArgMatches) -> Option<&ArgMatches> {
    let (_, run) = matches.subcommand()?;
    let (_, workload) = run.subcommand()?;
    Some(workload)
}

/// `-d 100` in a workload whose peers' `-d` is a value's size
/// (redis-benchmark, memtier_benchmark): a number with no unit and no
/// `--value-size` beside it reads as the peer's.
fn bare_duration(m: &ArgMatches, spec: &RunSpec) -> Option<String> {
    let peer = match spec.workload {
        WorkloadSpec::Redis(_) => "redis-benchmark's",
        WorkloadSpec::Memcache(_) => "memtier_benchmark's",
        _ => return None,
    };
    let raw = m.get_raw("duration")?.next()?.to_str()?;
    let bare = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
    let size_given = ["data_size", "value_size"].iter().any(|id| given(m, id));
    (bare && !size_given).then(|| {
        format!(
            "note: -d {raw} is the run's length here (--duration, {raw} s); \
             {peer} -d, a value's size in bytes, is --value-size {raw}"
        )
    })
}

/// Whether the flag `id` was on the command line (not a default).
fn given(m: &ArgMatches, id: &str) -> bool {
    m.try_contains_id(id).unwrap_or(false) && m.value_source(id) == Some(ValueSource::CommandLine)
}

/// A sentence to add to clap's refusal where the word refused is a peer's
/// flag with another meaning: memtier's `-P redis` (its protocol; loadrig's
/// `-P` is the pipeline, as redis-benchmark's), and `-r` where loadrig has
/// none (redis-benchmark's keyspace, `run redis` only; the rate is `-R`).
pub fn refusal_hint(e: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg)?;
    if arg.starts_with("--pipeline") {
        let value = text(ContextKind::InvalidValue)?;
        let word = !value.is_empty() && value.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
        return word.then_some(
            "memtier_benchmark's -P, its protocol, is the target URL's scheme here: \
             redis:// or memcache://; loadrig's -P is the pipeline, as redis-benchmark's",
        );
    }
    (arg == "-r").then_some(
        "-r is run redis's --keyspace, as redis-benchmark's; an open loop's rate is -R, --rate",
    )
}
