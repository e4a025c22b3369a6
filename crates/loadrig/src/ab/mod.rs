//! `loadrig ab [--rounds N] [--metric M] [--threshold P] -- A... -- run B...`:
//! two `loadrig run` command lines in alternating rounds (A then B, then B
//! then A, ...), each run a child of this binary as a sweep point is
//! ([`crate::sweep::run_child`]), its report and log kept in DIR. One
//! figure per run, the paired ratio B/A per round, a 95% interval on the
//! ratio and the verdict ([`stats`]): PASS (exit 0), FAIL
//! ([`exit::AB_FAIL`]) or INCONCLUSIVE ([`exit::AB_INCONCLUSIVE`]). A run
//! that fails its own checks (exit code, verification) ends the
//! comparison with exit 1: its figure means nothing. A run whose
//! measurement is INVALID is said so on standard error, and counts: a
//! closed loop on one machine saturates the client by design, and the
//! comparison is of the whole system, client included. What `bench/ab`
//! did by hand. docs/guides/capacity.md.

mod stats;

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context;
use loadrig_metrics::Histo;
use loadrig_report::Report;
use loadrig_spec::SpecError;

use crate::exit;
use crate::flags::{AbArgs, AbMetric};
use crate::signals::Watch;
use crate::sweep::{child_args_with, failed_status, run_child};
use stats::Verdict;

/// The two command lines: the words after the first `--` up to the first
/// `--` followed by `run` are A, the rest B (so A may hold a `--` of its
/// own, a redis command).
pub fn split(runs: &[OsString]) -> Result<(Vec<OsString>, Vec<OsString>), SpecError> {
    let at = runs
        .windows(2)
        .position(|w| w[0] == "--" && w[1] == "run")
        .ok_or_else(|| {
            SpecError::new(
                "ab",
                "two command lines: ab -- run WORKLOAD ARGS... -- run WORKLOAD ARGS...",
            )
        })?;
    let (a, b) = (runs[..at].to_vec(), runs[at + 1..].to_vec());
    if a.is_empty() {
        return Err(SpecError::new("ab", "command line A is empty"));
    }
    Ok((a, b))
}

/// Higher is better for this figure.
fn higher_better(m: AbMetric) -> bool {
    m == AbMetric::Throughput
}

fn metric_name(m: AbMetric) -> &'static str {
    match m {
        AbMetric::Throughput => "throughput",
        AbMetric::P50 => "p50",
        AbMetric::P90 => "p90",
        AbMetric::P99 => "p99",
        AbMetric::P999 => "p99.9",
        AbMetric::Avg => "avg",
        AbMetric::Cpu => "cpu/op",
    }
}

/// The figure `m` of a report: ops/s, ms of latency over every kind, or
/// microseconds of client CPU per operation.
pub fn figure(r: &Report, m: AbMetric) -> Result<f64, String> {
    let mut all = Histo::new();
    for k in &r.measured.kinds {
        all.add(&k.latency.histogram()?);
    }
    let ms = |p: f64| all.percentile(p).as_nanos() as f64 / 1e6;
    Ok(match m {
        AbMetric::Throughput => r.measured.throughput,
        AbMetric::P50 => ms(50.0),
        AbMetric::P90 => ms(90.0),
        AbMetric::P99 => ms(99.0),
        AbMetric::P999 => ms(99.9),
        AbMetric::Avg => all.mean().as_nanos() as f64 / 1e6,
        AbMetric::Cpu => r.client.cpu_us_per_op,
    })
}

/// One run of a round: its figure, or why it has none.
fn one_run(
    signals: &Watch,
    dir: &Path,
    run: &[OsString],
    stem: &str,
    m: AbMetric,
) -> anyhow::Result<Result<f64, String>> {
    let report_path = dir.join(format!("{stem}.json"));
    let log_path = dir.join(format!("{stem}.log"));
    let cmd = child_args_with(run, &[], &report_path);
    let code = run_child(signals, cmd, &report_path, &log_path)?;
    if !report_path.exists() {
        return Ok(Err(failed_status(code, &log_path)));
    }
    let report =
        Report::read(&report_path).with_context(|| format!("reading {}", report_path.display()))?;
    let validity = report.validity_or_judge();
    if !validity.valid {
        eprintln!("note: {stem}: {}", validity.line());
    }
    if report.interrupted || code != Some(0) {
        return Ok(Err(format!(
            "exit {} (see {stem}.log)",
            code.map_or("by signal".into(), |c| c.to_string())
        )));
    }
    Ok(figure(&report, m))
}

pub fn run(args: &AbArgs) -> anyhow::Result<i32> {
    let (a, b) = split(&args.runs)?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let signals = crate::sweep::watch_signals()?;
    let name = metric_name(args.metric);
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    for round in 0..args.rounds as usize {
        let mut order = [("A", &a), ("B", &b)];
        if round % 2 == 1 {
            order.reverse();
        }
        let mut got = [0.0; 2];
        for (side, line) in order {
            if signals.stop.load(Ordering::Relaxed) {
                break;
            }
            let stem = format!("round-{:02}-{side}", round + 1);
            match one_run(&signals, &args.dir, line, &stem, args.metric)? {
                Ok(v) => got[usize::from(side == "B")] = v,
                Err(_) if signals.stop.load(Ordering::Relaxed) => break,
                Err(why) => {
                    eprintln!("error: round {} {side}: {why}", round + 1);
                    return Ok(exit::CHECK_FAILED);
                }
            }
        }
        if signals.stop.load(Ordering::Relaxed) {
            eprintln!("interrupted after {} complete rounds", pairs.len());
            break;
        }
        println!(
            "round {} ({} first): A {name} {:.3}, B {:.3}, B/A {:.3}",
            round + 1,
            order[0].0,
            got[0],
            got[1],
            got[1] / got[0]
        );
        pairs.push((got[0], got[1]));
    }
    Ok(conclude(args, &pairs, signals.stop.load(Ordering::Relaxed)))
}

/// The ratio, its interval and the verdict, printed; the exit code.
fn conclude(args: &AbArgs, pairs: &[(f64, f64)], interrupted: bool) -> i32 {
    let name = metric_name(args.metric);
    let Some(r) = stats::ratio(pairs) else {
        println!(
            "INCONCLUSIVE: {} rounds with a figure above 0, two needed",
            pairs.len()
        );
        return if interrupted {
            exit::CHECK_FAILED
        } else {
            exit::AB_INCONCLUSIVE
        };
    };
    let better = if higher_better(args.metric) {
        "higher"
    } else {
        "lower"
    };
    println!(
        "B/A {name}: {:.3} (95% interval {:.3} to {:.3}, {} rounds; {better} is better)",
        r.mean,
        r.low,
        r.high,
        pairs.len()
    );
    let t = args.threshold;
    let (line, code) = match stats::verdict(&r, higher_better(args.metric), t / 100.0) {
        Verdict::Pass => (format!("PASS: B is not worse than A by more than {t}%"), exit::OK),
        Verdict::Fail => (format!("FAIL: B is worse than A by more than {t}%"), exit::AB_FAIL),
        Verdict::Inconclusive => (
            format!("INCONCLUSIVE: the interval holds both no change and a change beyond {t}%: more rounds would tell"),
            exit::AB_INCONCLUSIVE,
        ),
    };
    println!("{line}");
    if interrupted {
        exit::CHECK_FAILED
    } else {
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_second_line_starts_at_a_separator_before_run() {
        let (a, b) = split(&words(&[
            "run", "redis", "--", "SET", "k", "v", "--", "run", "redis", "-c", "2",
        ]))
        .unwrap();
        assert_eq!(a, words(&["run", "redis", "--", "SET", "k", "v"]));
        assert_eq!(b, words(&["run", "redis", "-c", "2"]));
        assert!(split(&words(&["run", "redis"])).is_err());
        assert!(split(&words(&["--", "run", "redis"])).is_err());
    }
}
