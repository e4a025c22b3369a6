//! The percentiles a report stores, checked against an independent
//! decoder: PyPI's `hdrhistogram` package reads each histogram and
//! recomputes them with the rank rule of HdrHistogram's Java reference
//! (`percentiles.py` beside this file; docs/reference/report.md, "Percentiles").
//! Counts that are multiples of 1,000 are the case the rule is about
//! (p99.9 of 6,000 values is the 5,994th). Needs python3 and the package
//! (`scripts/test` installs it): missing, the test fails and says so.

use std::path::Path;
use std::process::Command;

use crate::common::{json, loadrig};

fn check_with_python(report: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/percentiles.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(report)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for this test (scripts/test): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{}:\n{text}", script.display());
    text
}

#[test]
fn stored_percentiles_match_the_reference_rank_rule() {
    let dir = tempfile::tempdir().unwrap();
    for (name, extra) in [("closed", &[][..]), ("open", &["--rate", "20000"][..])] {
        let out = dir.path().join(format!("{name}.json"));
        let mut args = vec![
            "run",
            "voter",
            "--target",
            "null://?delay=20us-3ms",
            "-n",
            "6000",
            "--clients",
            "8",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let r = loadrig(&args);
        assert_eq!(r.code, 0, "{}", r.dump());
        let report = json(&out);
        let kind = &report["measured"]["kinds"][0];
        assert_eq!(kind["ok"], 6000, "{name}: every vote done\n{}", r.dump());
        assert_eq!(kind["latency"]["count"], 6000, "{name}");
        let checked = check_with_python(&out);
        // Every histogram with values was checked, send lag in the open loop.
        assert!(checked.contains("vote.latency: 6000 values"), "{checked}");
        assert!(checked.contains("vote.service: 6000 values"), "{checked}");
        assert_eq!(
            checked.contains("vote.send_lag: 6000 values"),
            name == "open",
            "{checked}"
        );
    }
}
