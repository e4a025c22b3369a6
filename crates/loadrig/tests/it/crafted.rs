//! Crafted reports: every number of a real report pushed, one at a time,
//! to an extreme (1e308, -1, 2^64 - 1, 10^12), then read by the offline
//! commands (`merge`, `compare`, `plot`, `verify`). Each must end with a
//! documented exit code (0 to 3; never 101 from a panic or 134 from an
//! abort) under an address-space limit of 1 GiB, so a report can make
//! them allocate no more than a bound, and no number makes them panic.
//! And a report of many laps whose histograms' headers claim the largest
//! range and precision: the memory its reading takes is bounded too.

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

/// A voter run of 500 on `target`, its report written to `out`.
fn report_of_a_run(out: &Path, target: &str) {
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        target,
        "-n",
        "500",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
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
                // 4: compare found a crafted measurement INVALID.
                if !(0..=4).contains(&code) || err.contains("panicked") {
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
    report_of_a_run(&base, "null://");
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
    report_of_a_run(&base, &url);
    campaign(&base, &[&["verify", "C"]]);
}

/// A plain HdrHistogram V2 encoding, base64: a header claiming `digits`
/// significant digits up to `high`, and one count of zero.
fn claimed(digits: u32, high: u64) -> String {
    use base64::Engine;
    let mut v2 = Vec::new();
    v2.extend(0x1c84_9313u32.to_be_bytes());
    v2.extend(1u32.to_be_bytes());
    v2.extend(0u32.to_be_bytes());
    v2.extend(digits.to_be_bytes());
    v2.extend(1u64.to_be_bytes());
    v2.extend(high.to_be_bytes());
    v2.extend(1f64.to_be_bytes());
    v2.push(0);
    base64::engine::general_purpose::STANDARD.encode(v2)
}

/// 600 laps, each histogram's header claiming a range and precision: 5
/// digits up to 2^62 (48 MB of counts each; `merge` took 21 GB of such a
/// report of 125 KB) is refused; the largest accepted, 3 digits up to
/// 2^44, is read within the 1 GiB limit by every offline command.
#[test]
fn histograms_claiming_a_huge_range_cannot_blow_up_memory() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    report_of_a_run(&base, "null://");
    let report: Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    let lap = report["laps"][0].clone();
    for (digits, high, want) in [(5, 1u64 << 62, 2), (3, 1 << 44, 0)] {
        let mut r = report.clone();
        let hdr = claimed(digits, high);
        r["laps"] = (0..600u64)
            .map(|i| {
                let mut l = lap.clone();
                l["unix_ms"] = Value::from(lap["unix_ms"].as_u64().unwrap() + 1000 * i);
                l["latency_hdr"] = Value::from(hdr.clone());
                l
            })
            .collect();
        let path = dir.path().join(format!("laps{digits}.json"));
        std::fs::write(&path, serde_json::to_vec(&r).unwrap()).unwrap();
        let p = path.to_str().unwrap();
        let svg = dir.path().join("p.svg");
        let html = dir.path().join("p.html");
        for args in [
            &["merge", p, p, "--force"][..],
            &["plot", p, "-o", svg.to_str().unwrap()],
            &["report", p, "-o", html.to_str().unwrap()],
        ] {
            let (code, err) = limited(args);
            assert_eq!(code, want, "{digits} digits up to {high}: {args:?}: {err}");
        }
    }
}
