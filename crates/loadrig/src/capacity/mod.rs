//! `loadrig capacity --slo EXPR... -- run WORKLOAD ARGS...`: the highest
//! open-loop rate at which every SLO holds, verification passes and the
//! measurement is valid. Each probe is a sweep point ([`crate::sweep`]):
//! a child `loadrig run` at one `--rate`, with `--warmup`, `--duration`
//! and `--seed` added, whose report is judged ([`probe`]); the rates come
//! from [`search`] (bracket by doubling, then bisect). Every probe's
//! report and log stay in DIR, with capacity.csv (the sweep's CSV, so
//! `plot` reads it), capacity.svg and capacity.html (the latency against
//! throughput curve, the knee marked: [`curve`]). Ctrl-C reaches the
//! running probe, which writes its report marked interrupted; the search
//! stops there and says what the probes done show. docs/guides/capacity.md.

mod curve;
mod probe;
mod search;

use std::ffi::OsString;
use std::sync::atomic::Ordering;

use anyhow::Context;
use loadrig_spec::{SpecError, Threshold};

use crate::exit;
use crate::flags::CapacityArgs;
use probe::{Outcome, Probe};
use search::Search;

/// The run's flags `capacity` sets on every probe: given in the run line
/// too, they would contradict it.
const SET_BY_CAPACITY: [(&str, Option<&str>); 6] = [
    ("--rate", Some("-R")),
    ("--duration", Some("-d")),
    ("--requests", Some("-n")),
    ("--warmup", None),
    ("--seed", None),
    ("--out", Some("-o")),
];

pub fn run(args: &CapacityArgs) -> anyhow::Result<i32> {
    let slos = args
        .slo
        .iter()
        .map(|s| Threshold::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    check(args)?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let signals = crate::sweep::watch_signals()?;
    let need = samples_for(&slos);
    let mut search = Search::new(args.from, args.max, args.resolution / 100.0);
    let mut probes: Vec<Probe> = Vec::new();
    while let Some(rate) = search.next() {
        if signals.stop.load(Ordering::Relaxed) {
            break;
        }
        eprintln!("[probe {}] {} ops/s ...", probes.len() + 1, rate);
        let fixed = [
            (
                "duration",
                format!("{}s", probe_secs(args.probe_duration, need, rate)),
            ),
            ("warmup", format!("{}s", args.warmup)),
            ("seed", args.seed.to_string()),
        ];
        let mut p = probe::run(&signals, &args.dir, &args.run, &fixed, rate, probes.len())?;
        p.judge_slos(&slos);
        eprintln!("      {}", curve::probe_line(&p));
        // A run line the run refuses, or a target it cannot reach, is no
        // rate's failure: the search cannot go on.
        if p.report.is_none() && matches!(p.code, Some(exit::USAGE | exit::TARGET)) {
            eprintln!("error: probe at {rate}/s: {}", p.reasons.join("; "));
            return Ok(p.code.unwrap_or(exit::USAGE));
        }
        let outcome = p.outcome;
        probes.push(p);
        match outcome {
            Outcome::Unknown => break,
            o => search.record(rate, o == Outcome::Pass),
        }
    }
    let interrupted = signals.stop.load(Ordering::Relaxed);
    let answer = curve::Answer::of(&search, &probes, &slos, args.max, interrupted);
    curve::finish(&args.dir, &answer, &probes, &slos)?;
    Ok(answer.code)
}

/// The search's own flags make sense, and the run line leaves the rate,
/// The observations a probe needs for its measurement to be valid: enough
/// above p99 (what the verdict relies on) and above each percentile an
/// SLO names.
fn samples_for(slos: &[Threshold]) -> u64 {
    use loadrig_report::validity::samples_needed;
    slos.iter()
        .filter_map(|t| t.metric.percentile())
        .filter(|p| *p < 100.0)
        .chain([99.0])
        .map(samples_needed)
        .max()
        .unwrap_or(0)
}

/// A probe's measured seconds: `--probe-duration`, or longer where its
/// rate would not gather `need` observations in it (a quarter more, for
/// the warm-up's edge and a kind's share): a slow probe is a long one.
fn probe_secs(probe_duration: f64, need: u64, rate: f64) -> f64 {
    let floor = need as f64 * 1.25 / rate.max(1.0);
    probe_duration.max(floor.ceil())
}

/// the durations, the seed and the report to the search.
fn check(args: &CapacityArgs) -> Result<(), SpecError> {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(args.from) || !positive(args.max) || args.max < args.from {
        return Err(SpecError::new(
            "--from",
            format!(
                "--from {} and --max {}: rates above 0, --max at least --from",
                args.from, args.max
            ),
        ));
    }
    if !positive(args.resolution) {
        return Err(SpecError::new("--resolution", "above 0%"));
    }
    if !positive(args.probe_duration) {
        return Err(SpecError::new("--probe-duration", "longer than 0s"));
    }
    if let Some(word) = set_twice(&args.run) {
        return Err(SpecError::new(
            "capacity",
            format!("the run line gives {word}: capacity sets the rate, the durations, the seed and the report of each probe (--from, --probe-duration, --warmup, --seed, --dir)"),
        ));
    }
    Ok(())
}

/// The first word of the run line (before a `--` of its own) that sets
/// what `capacity` sets.
fn set_twice(run: &[OsString]) -> Option<String> {
    let words = run
        .iter()
        .map(|w| w.to_string_lossy())
        .take_while(|w| w != "--");
    for w in words {
        for (long, short) in SET_BY_CAPACITY {
            let as_long = w == long || w.starts_with(&format!("{long}="));
            let as_short = short.is_some_and(|s| w.starts_with(s) && !w.starts_with("--"));
            if as_long || as_short {
                return Some(w.into_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// A slow probe runs long enough for its p99 (or an SLO's p99.9) to
    /// rest on enough samples; a fast one keeps --probe-duration.
    #[test]
    fn a_slow_probe_gathers_the_samples_its_percentiles_need() {
        let p99 = [Threshold::parse("p99<5ms").unwrap()];
        let p999 = [Threshold::parse("p99.9<5ms").unwrap()];
        assert_eq!(samples_for(&p99), 1_000);
        assert_eq!(samples_for(&p999), 10_000);
        assert_eq!(probe_secs(5.0, 1_000, 100.0), 13.0);
        assert_eq!(probe_secs(5.0, 1_000, 10_000.0), 5.0);
        assert_eq!(probe_secs(5.0, 10_000, 1_000.0), 13.0);
    }

    #[test]
    fn the_run_line_leaves_the_rate_and_the_durations_to_the_search() {
        assert_eq!(
            set_twice(&words(&["redis", "-c", "4", "--tests", "get"])),
            None
        );
        for given in [
            "--rate=5",
            "-R5",
            "--duration",
            "-d",
            "-n100",
            "--seed=1",
            "--out",
        ] {
            let run = words(&["redis", given, "--tests", "get"]);
            assert_eq!(set_twice(&run).as_deref(), Some(given));
        }
        // A redis command of one's own may say anything.
        assert_eq!(
            set_twice(&words(&["redis", "--", "SET", "-R", "--rate"])),
            None
        );
    }
}
