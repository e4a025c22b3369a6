//! `--json`: the summary as one JSON object on standard output, the human
//! text on standard error; its shape (`loadrig.summary/1`, docs/reference/json.md)
//! is a golden file, its numbers are the report's.

use crate::common::{assert_all_ok, run_reported};
use crate::golden::{golden, shape};

fn summary(stdout: &str) -> serde_json::Value {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line on standard output:\n{stdout}");
    serde_json::from_str(lines[0]).expect("the summary is JSON")
}

#[test]
fn json_prints_one_object_whose_numbers_are_the_reports() {
    let (r, report) = run_reported(&[
        "run",
        "hello",
        "--target",
        "null",
        "-n",
        "1000",
        "--insert-ratio",
        "0.5",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 1000);
    assert!(
        r.stderr.contains("overall: "),
        "human text on stderr: {}",
        r.dump()
    );
    let s = summary(&r.stdout);
    let mut lines = Vec::new();
    shape(&s, "", &mut lines);
    golden("summary-shape.txt", &(lines.join("\n") + "\n"));
    assert_eq!(s["schema"], "loadrig.summary/1");
    assert_eq!(s["workload"], "hello");
    assert_eq!(s["ops"], 1000);
    assert_eq!(s["ok"], 1000);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["throughput"], report.measured.throughput);
    let kinds = s["kinds"].as_array().unwrap();
    assert_eq!(kinds.len(), report.measured.kinds.len());
    for (k, want) in kinds.iter().zip(&report.measured.kinds) {
        assert_eq!(k["name"], want.name.as_str());
        assert_eq!(k["ok"], want.ok);
        assert_eq!(k["latency_us"]["p99"], want.latency.p99_us);
    }
    let total: u64 = kinds.iter().map(|k| k["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 1000);
    // The verdict on the measurement, as the report holds it.
    let validity = report.validity.as_ref().expect("a verdict in the report");
    assert_eq!(s["validity"], serde_json::to_value(validity).unwrap());
    assert_eq!(s["measurement"], validity.line().as_str());
}

#[test]
fn json_names_the_failed_checks_and_the_exit_code() {
    let (r, report) = run_reported(&[
        "run",
        "voter",
        "--target",
        "null",
        "-n",
        "500",
        "--threshold",
        "throughput>1000000000000",
        "--json",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let s = summary(&r.stdout);
    assert_eq!(s["exit_code"], 1);
    assert_eq!(report.exit_code, 1);
    let failed = s["failed_checks"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{s}");
    assert!(
        failed[0]
            .as_str()
            .unwrap()
            .contains("throughput>1000000000000"),
        "{s}"
    );
    assert!(
        r.stderr
            .contains("check failed: threshold throughput>1000000000000"),
        "{}",
        r.dump()
    );
}

#[test]
fn json_and_csv_together_are_refused() {
    let r = crate::common::loadrig(&["run", "voter", "--target", "null", "--json", "--csv"]);
    assert_eq!(r.code, 2, "{}", r.dump());
}
