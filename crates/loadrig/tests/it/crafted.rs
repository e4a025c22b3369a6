//! Crafted reports: every number of a real report pushed, one at a time,
//! to an extreme (1e308, -1, 2^64 - 1, 10^12), then read by the offline
//! commands (`merge`, `compare`, `plot`, `verify`). Each must end with a
//! documented exit code (0 to 3; never 101 from a panic or 134 from an
//! abort) under an address-space limit of 1 GiB, so a report can make
//! them allocate no more than a bound, and no number makes them panic.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::loadrig;

const EXTREMES: [f64; 4] = [1e308, -1.0, 18_446_744_073_709_551_615.0, 1e12];

/// Every numeric leaf of `v`, by its path (arrays: their first two items).
fn numbers(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                at.push(k.clone());
                numbers(v, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().take(2).enumerate() {
                at.push(i.to_string());
                numbers(v, at, out);
                at.pop();
            }
        }
        Value::Number(_) => out.push(at.clone()),
        _ => {}
    }
}

fn set(v: &mut Value, path: &[String], to: f64) {
    let mut v = v;
    for k in path {
        v = match v {
            Value::Object(m) => m.get_mut(k).unwrap(),
            Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
    }
    // Whole numbers stay whole, so they parse as the integers they were.
    *v = match (to.fract() == 0.0, to) {
        (true, t) if (0.0..1.8e19).contains(&t) => Value::from(t as u64),
        (true, t) if t < 0.0 && t > -1e18 => Value::from(t as i64),
        (_, t) => Value::from(t),
    };
}

/// `loadrig ARGS` under the address-space limit: its exit code.
fn limited(args: &[&str]) -> (i32, String) {
    let out = Command::new("prlimit")
        .arg("--as=1073741824")
        .arg("--")
        .arg(crate::common::BIN)
        .args(args)
        .output()
        .expect("prlimit runs (util-linux)");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn campaign(base: &Path, commands: &[&[&str]]) {
    let report: Value = serde_json::from_slice(&std::fs::read(base).unwrap()).unwrap();
    let mut paths = Vec::new();
    numbers(&report, &mut Vec::new(), &mut paths);
    assert!(paths.len() > 50, "too few numbers: {}", paths.len());
    let dir = tempfile::tempdir().unwrap();
    let crafted = dir.path().join("c.json");
    let c = crafted.to_str().unwrap();
    let mut bad = Vec::new();
    for path in &paths {
        for to in EXTREMES {
            let mut r = report.clone();
            set(&mut r, path, to);
            std::fs::write(&crafted, serde_json::to_vec(&r).unwrap()).unwrap();
            for cmd in commands {
                let args: Vec<&str> = cmd.iter().map(|a| if *a == "C" { c } else { a }).collect();
                let (code, err) = limited(&args);
                if !(0..=3).contains(&code) || err.contains("panicked") {
                    bad.push(format!(
                        "{} = {to}: {args:?} exit {code}: {err}",
                        path.join(".")
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} cases:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn crafted_numbers_in_a_report_end_the_offline_commands_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let svg = dir.path().join("p.svg");
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://",
        "-n",
        "500",
        "-q",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let plot = ["plot", "C", "-o", svg.to_str().unwrap()];
    campaign(
        &base,
        &[
            &["merge", "C", "C", "--force"],
            &["compare", "C", "C"],
            &plot,
        ],
    );
}

#[test]
fn crafted_numbers_in_a_report_end_verify_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let url = format!("sqlite://{}", dir.path().join("v.db").display());
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        &url,
        "-n",
        "500",
        "-q",
        "--out",
        base.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    campaign(&base, &[&["verify", "C"]]);
}
