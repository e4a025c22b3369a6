//! Golden files for text, CSV and JSON shape. Numbers and durations are
//! masked (they differ run to run); everything else must match exactly,
//! and the numbers that follow from the run's flags and seed (operations,
//! errors, the Voter's outcome) are asserted beside each file.
//!
//! `UPDATE_GOLDEN=1 cargo test` (exactly `1`, and never with `CI` set)
//! rewrites the files after a deliberate change, and fails: an update run
//! can never pass, so a blessed output is always looked at (`git diff`)
//! and tested by a second, ordinary run. `scripts/test` ends by checking
//! that the suite left the folder as git has it.

use std::path::PathBuf;

use loadrig_report::fmt::group;
use loadrig_report::Report;

use crate::common::{assert_all_ok, json, loadrig, run_reported, Run};
use crate::expect::{standings, votes, Votes};

/// Whether this run rewrites the golden files.
fn updating() -> bool {
    std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") && std::env::var_os("CI").is_none()
}

pub(crate) fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if updating() {
        let old = std::fs::read_to_string(&path).ok();
        if old.as_deref() != Some(actual) {
            std::fs::write(&path, actual).unwrap();
        }
        panic!(
            "{name}: {} by UPDATE_GOLDEN=1; review `git diff`, then run the tests without it",
            if old.as_deref() == Some(actual) {
                "unchanged"
            } else {
                "rewritten"
            }
        );
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 creates it)", path.display()));
    if expected != actual {
        let mut diff = String::new();
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            if e != a {
                diff.push_str(&format!(
                    "line {}:\n  expected: {e}\n  actual:   {a}\n",
                    i + 1
                ));
            }
        }
        let (ne, na) = (expected.lines().count(), actual.lines().count());
        if ne != na {
            diff.push_str(&format!("{ne} lines expected, {na} printed\n"));
        }
        panic!("{name} differs from its golden file:\n{diff}--- actual\n{actual}");
    }
}

/// Mask numbers as `#` and durations as `#t`, and fold runs of spaces;
/// the verdict on the measurement, which a busy machine changes, as
/// `measurement: VERDICT` (the validity tests check it).
pub(crate) fn mask(text: &str) -> String {
    let text: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| match l.starts_with("measurement: ") {
            true => "measurement: VERDICT\n",
            false => l,
        })
        .collect();
    let text = text.concat();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == ',' || *n == '.')
            {
                chars.next();
            }
            let mut unit = String::new();
            while let Some(&u) = chars.peek().filter(|u| u.is_ascii_alphabetic()) {
                unit.push(u);
                chars.next();
            }
            out.push('#');
            match unit.as_str() {
                "ns" | "us" | "ms" | "s" => out.push('t'),
                _ => out.push_str(&unit),
            }
        } else {
            out.push(c);
        }
    }
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Every path in a JSON document with its type, arrays by their first element.
pub(crate) fn shape(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                shape(v, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => match a.first() {
            Some(first) => shape(first, &format!("{path}[]"), out),
            None => out.push(format!("{path}: []")),
        },
        Value::Null => out.push(format!("{path}: null")),
        Value::Bool(_) => out.push(format!("{path}: bool")),
        Value::Number(_) => out.push(format!("{path}: number")),
        Value::String(_) => out.push(format!("{path}: string")),
    }
}

#[test]
fn targets_and_workloads_listings() {
    golden("targets.txt", &loadrig(&["targets"]).stdout);
    golden("workloads.txt", &loadrig(&["workloads"]).stdout);
}

/// The Voter's counts behind a masked output: every one of `n` votes
/// succeeded, and accepted + rejected = `n`.
pub(crate) fn votes_add_up(r: &Run, report: &Report, n: u64) {
    assert_all_ok(r, report, n);
    let t = Votes::counted(report);
    assert_eq!(t.accepted + t.invalid + t.over_limit, n, "{t:?}");
    let line = format!(
        "votes: accepted {}, rejected invalid contestant {}, rejected over limit {}, failed 0",
        group(t.accepted),
        group(t.invalid),
        group(t.over_limit)
    );
    assert!(r.stdout.contains(&line), "no '{line}':\n{}", r.dump());
}

#[test]
fn voter_text_output() {
    let (r, report) = run_reported(&[
        "run",
        "voter",
        "--target",
        "null",
        "-n",
        "1000",
        "--interval",
        "1h",
        "--seed",
        "7",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    // The null target keeps nothing, so no limit: it refuses only the
    // votes for nobody, exactly those the generator drew.
    votes_add_up(&r, &report, 1000);
    let invalid = votes(&report.spec, 1000).invalid;
    let want = Votes {
        accepted: 1000 - invalid,
        invalid,
        over_limit: 0,
    };
    assert_eq!(Votes::counted(&report), want, "{}", r.dump());
    golden("voter-null.txt", &mask(&r.stdout));
}

/// One client: the votes arrive in index order, so the standings (names
/// and order, which the golden file keeps) are the generator's, exactly.
#[test]
fn voter_sqlite_text_output() {
    let (r, report) = run_reported(&[
        "run",
        "voter",
        "-n",
        "2000",
        "--interval",
        "1h",
        "--clients",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    votes_add_up(&r, &report, 2000);
    assert_eq!(Votes::counted(&report), votes(&report.spec, 2000));
    let want: Vec<Vec<String>> = standings(&report.spec, 2000)
        .into_iter()
        .map(|(name, n)| vec![name, group(n)])
        .collect();
    assert_eq!(report.results.rows, want, "{}", r.dump());
    // The temporary database's name differs every run, and its filesystem
    // machine to machine (`sqlite::` checks both).
    let text = mask(&r.stdout);
    let text: String = text
        .lines()
        .map(|l| {
            if let Some((promise, _)) = l.split_once("; database in ") {
                format!("{promise}; database in TEMP (FS)")
            } else if l.starts_with("loadrig ") {
                l.split_whitespace()
                    .map(|w| {
                        if w.starts_with("sqlite://") {
                            "sqlite://TEMP"
                        } else {
                            w
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    golden("voter-sqlite.txt", &text);
}

#[test]
fn report_json_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&["run", "voter", "-n", "2000", "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &crate::common::report(&out), 2000);
    let mut lines = Vec::new();
    shape(&json(&out), "", &mut lines);
    golden("report-shape.txt", &(lines.join("\n") + "\n"));
}

#[test]
fn csv_output() {
    let (r, report) = run_reported(&[
        "run",
        "hello",
        "--target",
        "null",
        "-n",
        "1000",
        "--insert-ratio",
        "0.5",
        "--csv",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        5,
        "header and two rows per kind:\n{}",
        r.stdout
    );
    for l in &lines {
        assert_eq!(l.split(',').count(), 13, "{l}");
    }
    // Mask field by field: a CSV's commas are not thousands separators.
    let masked: Vec<String> = lines
        .iter()
        .map(|l| {
            l.split(',')
                .map(|f| if f.parse::<f64>().is_ok() { "#" } else { f })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    golden("hello-null.csv", &(masked.join("\n") + "\n"));
    // The counts the mask hides: selects and inserts as the seed draws
    // them, every one ok, latency and service rows alike.
    assert_all_ok(&r, &report, 1000);
    let inserts = crate::expect::hello_inserts(&report.spec, 1000);
    let counts: Vec<(String, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].to_string(), f[3].to_string())
        })
        .collect();
    let pair = |n: u64| (n.to_string(), n.to_string());
    let (s, i) = (pair(1000 - inserts), pair(inserts));
    assert_eq!(counts, [s.clone(), s, i.clone(), i], "{}", r.stdout);
}

/// pubsub's output with one set of rates (docs/explanations/rates.md): the header
/// counts publishers and subscribers, operations (publishes) and
/// deliveries apart in the lap line, the table and the overall line,
/// nats-bench's own lines labelled as its, subscribers numbered alike.
#[test]
fn pubsub_text_output() {
    let _brokers = crate::common::hold("brokers");
    crate::common::need_server("nats", 4222);
    let r = loadrig(&[
        "run",
        "pubsub",
        "--target",
        "nats://127.0.0.1:4222",
        "--pubs",
        "1",
        "--subs",
        "2",
        "-n",
        "2000",
        "--interval",
        "1h",
        "--seed",
        "7",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    golden("pubsub-nats.txt", &mask(&r.stdout));
}

/// The Erlvolt bench's lines of a run with a preset: its parameter line,
/// its lap line, its overall and closing lines, and over two processes
/// its total line; the counts in them are the run's.
#[test]
fn erlvolt_lines_with_a_preset() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("v.db").display());
    let mut text = String::new();
    for (preset, processes) in [("vsd", "1"), ("vbm", "2")] {
        let (r, report) = run_reported(&[
            "run",
            "voter",
            "--target",
            &db,
            "--preset",
            preset,
            "-c",
            "4",
            "-n",
            "2000",
            "--interval",
            "1h",
            "--processes",
            processes,
        ]);
        votes_add_up(&r, &report, 2000);
        let accepted = Votes::counted(&report).accepted;
        let label = preset.to_uppercase();
        assert!(
            r.stdout.contains(&format!(
                "Client '{label}' overall: {} T/sec throughput, 0.00% fails, total transactions: 2,000, fails: 0, total time: ",
                group(report.measured.throughput as u64)
            )),
            "{}",
            r.dump()
        );
        assert!(
            r.stdout
                .contains(&format!(", database: +{} new votes\n", group(accepted))),
            "{}",
            r.dump()
        );
        let erlvolt = r.stdout.lines().filter(|l| {
            l.starts_with("Client ")
                || l.starts_with("Total transactions")
                || l.contains(", bench started ")
        });
        text.push_str(&mask(&(erlvolt.collect::<Vec<_>>().join("\n") + "\n")));
    }
    golden("voter-erlvolt.txt", &text);
}
