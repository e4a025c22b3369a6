//! The peers' habits and the messages that say what was meant: each
//! command's standard error lines (notes and errors) against one golden
//! file, habits.txt, so a hint reworded or lost shows as a diff. None
//! needs a server: a run that would connect names a port nothing listens
//! on (1), and a header is read with LOADRIG_PARSE_ONLY.

use std::process::Command;

use crate::common::{loadrig, Run};
use crate::golden::golden;

/// Each command, and whether it runs parse-only (its header line).
const CASES: &[(&[&str], bool)] = &[
    // redis-benchmark's -d is a value's size: a note, then the run.
    (
        &[
            "run",
            "redis",
            "--tests",
            "set",
            "-d",
            "100",
            "-t",
            "redis://127.0.0.1:1",
        ],
        false,
    ),
    (
        &[
            "run",
            "memcache",
            "-d",
            "64",
            "-t",
            "memcache://127.0.0.1:1",
        ],
        false,
    ),
    // With a unit, or with --value-size given, no note.
    (
        &[
            "run",
            "redis",
            "--tests",
            "set",
            "-d",
            "100s",
            "-t",
            "redis://127.0.0.1:1",
        ],
        false,
    ),
    (
        &[
            "run",
            "redis",
            "-d",
            "1",
            "--value-size",
            "100",
            "-t",
            "redis://127.0.0.1:1",
        ],
        false,
    ),
    // -n counts per test in run redis, as redis-benchmark's does.
    (&["run", "redis", "-n", "5000"], true),
    (&["run", "redis", "--tests", "set", "-n", "5000"], true),
    (&["run", "redis", "--tests", "set,get", "-d", "2s"], true),
    (
        &["redis-benchmark", "--cluster", "-p", "7001", "-t", "set"],
        true,
    ),
    // A target with no scheme; a TLS server whose CA is not given.
    (&["run", "redis", "-t", "127.0.0.1:6379"], false),
    (&["run", "memcache", "-t", "127.0.0.1:11211"], false),
    (&["run", "voter", "-t", "127.0.0.1:5432"], false),
    (&["run", "http", "-t", "https://127.0.0.1:8443/"], false),
    // memtier's -P (protocol) and a -r where only run redis has one.
    (&["run", "redis", "-P", "redis"], false),
    (&["run", "voter", "-r", "100"], false),
    // A typo'd --tests: no tip to pass it after --.
    (&["run", "redis", "--test", "set"], false),
    // Thresholds: k6's form and any percentile, a time with its unit.
    (&["run", "redis", "--threshold", "p(95)<200"], false),
    (&["run", "redis", "--threshold", "p99<5"], false),
    (
        &[
            "run",
            "redis",
            "--threshold",
            "p(99.99)<200ms",
            "--tests",
            "set",
        ],
        true,
    ),
];

fn run(args: &[&str], parse_only: bool) -> Run {
    if !parse_only {
        return loadrig(args);
    }
    Command::new(env!("CARGO_BIN_EXE_loadrig"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("LOADRIG_PARSE_ONLY", "1")
        .output()
        .expect("the loadrig binary runs")
        .into()
}

#[test]
fn each_habit_gets_its_line() {
    let mut text = String::new();
    for (args, parse_only) in CASES {
        let r = run(args, *parse_only);
        text.push_str(&format!(
            "$ loadrig {}  (exit {})\n",
            args.join(" "),
            r.code
        ));
        let said = r.stderr.lines().chain(r.stdout.lines()).filter(|l| {
            l.starts_with("note:") || l.starts_with("error:") || l.starts_with("loadrig ")
        });
        for line in said {
            text.push_str(&line.replace(env!("CARGO_PKG_VERSION"), "VERSION"));
            text.push('\n');
        }
    }
    golden("habits.txt", &text);
}

/// `loadrig targets` and `loadrig workloads` print the registries' rows,
/// nothing kept by hand beside them: each target's schemes, workloads and
/// line; each workload's targets and line; and every flag a workload's
/// line names is one `run WORKLOAD` takes, in loadrig's meaning.
#[test]
fn the_listings_say_what_the_registries_hold() {
    let targets = loadrig(&["targets"]).stdout;
    for d in loadrig_targets::TARGETS {
        let row = targets
            .lines()
            .find(|l| l.split_whitespace().next() == Some(d.name))
            .unwrap_or_else(|| panic!("no row for {}:\n{targets}", d.name));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], d.schemes.join(","), "{row}");
        assert_eq!(
            cells[2],
            d.workloads().collect::<Vec<_>>().join(","),
            "{row}"
        );
        assert!(row.ends_with(d.about), "{row}\n  registry: {}", d.about);
    }
    let workloads = loadrig(&["workloads"]).stdout;
    for w in loadrig_workloads::WORKLOADS {
        let row = workloads
            .lines()
            .find(|l| l.split_whitespace().next() == Some(w.name))
            .unwrap_or_else(|| panic!("no row for {}:\n{workloads}", w.name));
        let running: Vec<&str> = loadrig_targets::TARGETS
            .iter()
            .filter(|d| d.runs(w.name))
            .map(|d| d.name)
            .collect();
        assert_eq!(
            row.split_whitespace().nth(1),
            Some(&*running.join(",")),
            "{row}"
        );
        assert!(row.ends_with(w.about), "{row}");
        let help = loadrig(&["run", w.name, "--help"]).stdout;
        for flag in w
            .about
            .split([' ', '(', ')', ','])
            .filter(|t| t.starts_with('-'))
        {
            let flag = flag.trim_end_matches(['.', ';']);
            assert!(
                help.split(|c: char| c.is_whitespace() || c == ',')
                    .any(|t| t == flag),
                "{}: its line names {flag}, which `run {}` does not take",
                w.name,
                w.name
            );
        }
    }
}

/// One etcd member: the durability line printed before connecting and
/// the commits line after the member list is read say one thing (the
/// first once claimed "a majority of the cluster's members", the second
/// "one member, no replication").
#[test]
fn an_etcd_members_two_lines_agree() {
    crate::common::need_server("etcd", 2379);
    let _lock = crate::common::hold("etcd");
    let r = loadrig(&[
        "run",
        "kv",
        "--target",
        "etcd://127.0.0.1:2379",
        "--test",
        "write1",
        "--rows",
        "1000",
        "-n",
        "200",
        "-q",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let out = format!("{}{}", r.stdout, r.stderr);
    let line = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line:\n{}", r.dump()))
            .to_string()
    };
    let (before, after) = (line("durability: "), line("commits: "));
    assert!(after.ends_with("one member, no replication"), "{after}");
    assert!(!before.contains("the cluster's members"), "{before}");
    let promise = |l: &str| l.split(';').next().unwrap_or("").to_string();
    assert_eq!(promise(&before), promise(&after));
}
