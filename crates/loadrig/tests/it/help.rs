//! `loadrig run WORKLOAD --help` as golden files: the workload's own
//! flags first, under its name, then the load, the output, the
//! connections. The width is fixed (COLUMNS) so the wrapping is too.

use std::process::Command;

use crate::common::{Run, BIN};
use crate::golden::golden;

/// The help as a 100-column terminal shows it.
fn help(args: &[&str]) -> Run {
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env_remove("LOADRIG_TARGET")
        .output()
        .expect("the loadrig binary runs")
        .into()
}

/// The section headings, in order (a line of its own ending with `:`).
fn headings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect()
}

/// `run WORKLOAD --help`: the workload's heading and flag first, then
/// the load, the output, the connections; as its golden file.
fn leads_with(workload: &str, heading: &str, flag: &str) {
    let r = help(&["run", workload, "--help"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let h = headings(&r.stdout);
    assert_eq!(h[0], heading, "{workload}: {h:?}");
    let at = |name: &str| h.iter().position(|x| *x == name);
    let order = ["Load:", "Output:", "Connections and TLS:"].map(at);
    assert!(
        order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]),
        "{workload}: the load, the output, then the connections: {h:?}"
    );
    let first_flag = r.stdout.lines().find(|l| l.trim_start().starts_with('-'));
    assert!(
        first_flag.is_some_and(|l| l.contains(flag)),
        "{workload}: {first_flag:?}"
    );
    golden(&format!("run-{workload}-help.txt"), &r.stdout);
}

#[test]
fn run_redis_help_leads_with_the_tests() {
    leads_with("redis", "Redis workload:", "--tests");
}

#[test]
fn run_voter_help_leads_with_the_contestants() {
    leads_with("voter", "Voter workload:", "--contestants");
}

#[test]
fn run_kv_help_leads_with_the_test() {
    leads_with("kv", "Kv workload:", "--test ");
}

/// `-h` is the summary: one line per flag where the flag's summary fits,
/// and shorter than `--help`.
#[test]
fn dash_h_is_the_summary() {
    let short = help(&["run", "redis", "-h"]);
    let long = help(&["run", "redis", "--help"]);
    assert_eq!(short.code, 0, "{}", short.dump());
    assert_eq!(headings(&short.stdout), headings(&long.stdout));
    assert!(short.stdout.lines().count() * 2 < long.stdout.lines().count());
    golden("run-redis-h.txt", &short.stdout);
}
