//! The commands that read reports and never re-run (`plot`, `report`,
//! `compare`, `merge`'s checks), `sweep`, `--hdr-log` and `--html`, end
//! to end with the real binary: a sweep over three values writes three
//! reports and one CSV; plot reads a loadrig report and a real
//! redis-benchmark CSV; compare's exit code on a made-up regression; the
//! HTML page in a real headless Chromium (no console errors, a screenshot
//! that is not blank); the interval log read by PyPI's hdrhistogram.
//! Chromium comes from Debian's `chromium` package and python3's
//! `hdrhistogram` from PyPI (`scripts/test` installs both): missing, the
//! test fails and says so.

use std::path::Path;
use std::process::Command;

use crate::common::{assert_all_ok, assert_verified, json, loadrig, need_server, report};
use crate::golden::{golden, mask};

fn python(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/plot_check.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for this test (scripts/test): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "plot_check.py {args:?}:\n{text}");
    text
}

#[test]
fn sweep_over_three_values_writes_three_reports_and_one_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let gp = dir.path().join("gp");
    let html = dir.path().join("sweep.html");
    let r = loadrig(&[
        "sweep",
        "--param",
        "clients=1,2,4",
        "-o",
        out.to_str().unwrap(),
        "--gnuplot",
        gp.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--",
        "run",
        "voter",
        "--target",
        "null://?delay=50us",
        "-n",
        "3000",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    for (row, clients) in rows.iter().zip([1u32, 2, 4]) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[1], clients.to_string(), "{row}");
        assert_eq!(f[3], "ok", "{row}");
        assert_eq!(f[10], "3000", "{row}: every operation counted");
        let rep = report(&out.join(f[13]));
        assert_all_ok(&r, &rep, 3000);
        assert_eq!(
            rep.spec.load.clients, clients,
            "{row}: the child got --clients"
        );
        let tput: f64 = f[4].parse().unwrap();
        assert!((tput - rep.measured.throughput).abs() < 0.01, "{row}");
        // The client's own cost, as the point's report gives it.
        let cpu: f64 = f[14].parse().unwrap();
        assert!(cpu > 0.0, "{row}: the client's CPU per operation");
        assert!((cpu - rep.client.cpu_us_per_op).abs() < 0.001, "{row}");
        let peak: f64 = f[15].parse().unwrap();
        let mib = rep.client.max_rss_bytes as f64 / (1024.0 * 1024.0);
        assert!(
            peak > 1.0 && (peak - mib).abs() < 0.1,
            "{row}: peak {peak} MiB"
        );
    }
    // The shape: the header exactly, then every field with its digits
    // as `#`.
    let shape: Vec<String> = csv
        .lines()
        .take(1)
        .map(String::from)
        .chain(csv.lines().skip(1).map(|l| {
            l.split(',')
                .map(|f| {
                    if f.parse::<f64>().is_ok() {
                        "#".to_string()
                    } else {
                        f.chars()
                            .map(|c| if c.is_ascii_digit() { '#' } else { c })
                            .collect()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        }))
        .collect();
    golden("sweep-csv.txt", &(shape.join("\n") + "\n"));
    // The terminal table, progress with time left, the chart, gnuplot's files.
    assert_eq!(r.stdout.lines().filter(|l| l.ends_with("  ok")).count(), 3);
    assert!(r.stderr.contains("[3/3] clients=4"), "{}", r.dump());
    assert!(r.stderr.contains("left)"), "{}", r.dump());
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(svg.contains("Throughput against clients") && svg.contains("Latency against clients"));
    assert!(
        svg.contains("Client CPU per operation against clients")
            && svg.contains("Client peak memory against clients"),
        "the client's cost against the parameter"
    );
    let rate = std::fs::read_to_string(gp.join("clients.rate")).unwrap();
    let xs: Vec<&str> = rate.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(xs, ["1", "2", "4"], "{rate}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    // plot reads the sweep's CSV back.
    let svg2 = dir.path().join("again.svg");
    let p = loadrig(&[
        "plot",
        out.join("sweep.csv").to_str().unwrap(),
        "-o",
        svg2.to_str().unwrap(),
    ]);
    assert_eq!(p.code, 0, "{}", p.dump());
    assert!(std::fs::read_to_string(&svg2)
        .unwrap()
        .contains("Throughput against clients"));
}

/// A point that fails is a row marked failed, and the sweep exits 1.
#[test]
fn a_failed_point_is_marked_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let r = loadrig(&[
        "sweep",
        "--param",
        "clients=2,0,3",
        "-o",
        out.to_str().unwrap(),
        "--",
        "voter",
        "--target",
        "null://",
        "-n",
        "500",
    ]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let rows: Vec<Vec<String>> = csv.lines().skip(1).map(split).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert_eq!(rows[0][3], "ok");
    assert!(
        rows[1][3].starts_with("failed: exit 2") && rows[1][3].contains("--clients"),
        "{csv}"
    );
    assert_eq!(rows[1][4], "", "no figures for a failed point");
    assert_eq!(rows[2][3], "ok");
}

fn split(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// plot reads a loadrig report of the redis workload and redis-benchmark's
/// own `--csv` output of the same tests: one bar chart, a series each.
#[test]
fn plot_reads_a_loadrig_report_and_a_real_redis_benchmark_csv() {
    need_server("redis", 6379);
    let _db0 = crate::common::hold("redis-db0");
    let dir = tempfile::tempdir().unwrap();
    let rb = dir.path().join("redis-benchmark.csv");
    let theirs = Command::new("redis-benchmark")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            "6379",
            "-n",
            "2000",
            "-t",
            "set,get,incr",
            "--csv",
        ])
        .output()
        .expect("redis-benchmark runs (scripts/services up redis installs redis-tools)");
    assert!(theirs.status.success());
    std::fs::write(&rb, &theirs.stdout).unwrap();
    let text = String::from_utf8_lossy(&theirs.stdout).into_owned();
    assert!(text.starts_with("\"test\",\"rps\""), "{text}");
    let ours = dir.path().join("loadrig.json");
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--tests",
        "set,get,incr",
        "-n",
        "2000",
        "--out",
        ours.to_str().unwrap(),
    ]);
    assert_all_ok(&r, &report(&ours), 6000);
    let svg = dir.path().join("both.svg");
    let p = loadrig(&[
        "plot",
        rb.to_str().unwrap(),
        ours.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(p.code, 0, "{}", p.dump());
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
    assert!(s.contains("Requests per second by test"), "{s}");
    for t in [">SET<", ">GET<", ">INCR<", ">redis-benchmark<", ">loadrig<"] {
        assert!(s.contains(t), "{t} missing");
    }
    // Three bars per series: the first series' colour, then the second's.
    assert_eq!(s.matches(r##"fill="#0072B2"/><text"##).count(), 3, "{s}");
    assert_eq!(s.matches(r##"fill="#D55E00"/><text"##).count(), 3, "{s}");
    // The report's own charts: laps over time, the percentile spectrum.
    assert!(s.contains("Throughput over time") && s.contains("Latency by percentile"));
    assert!(s.contains(">99.9%<"));
    // A file that is neither is bad input: exit 2.
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let bad = loadrig(&["plot", junk.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(bad.code, 2, "{}", bad.dump());
}

fn voter_report(path: &Path, extra: &[&str]) -> serde_json::Value {
    voter_on("null://?delay=20us-3ms", path, extra)
}

fn voter_on(target: &str, path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        "voter",
        "--target",
        target,
        "-n",
        "6000",
        "--clients",
        "8",
        "--interval",
        "0.2",
        "--out",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let r = loadrig(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    json(path)
}

/// A made-up regression: B is A with its throughput 20 % lower and its
/// p99 half as high again. Exit 1 at 10 %, 0 at 60 %, 2 for bad input.
/// Both measurements are made valid and given a throughput interval of
/// ±2 %, so the row says `slower` (and A against itself `no sig. diff.`);
/// an INVALID measurement with no regression exits 4.
#[test]
fn compare_exits_1_on_a_made_up_regression() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let mut v = voter_report(&a, &[]);
    let t = v["measured"]["throughput"].as_f64().unwrap();
    let judged = |v: &mut serde_json::Value, t: f64, valid: bool| {
        v["validity"] =
            serde_json::json!({"valid": valid, "checks": [], "warmup_suggested_secs": null});
        v["intervals"] = serde_json::json!({"laps": 12, "kinds": [],
            "throughput": {"point": t, "low": t * 0.98, "high": t * 1.02}});
    };
    judged(&mut v, t, true);
    std::fs::write(&a, serde_json::to_vec(&v).unwrap()).unwrap();
    v["measured"]["throughput"] = (t * 0.8).into();
    judged(&mut v, t * 0.8, true);
    let p99 = v["measured"]["kinds"][0]["latency"]["p99_us"]
        .as_f64()
        .unwrap();
    v["measured"]["kinds"][0]["latency"]["p99_us"] = (p99 * 1.5).into();
    std::fs::write(&b, serde_json::to_vec(&v).unwrap()).unwrap();
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());

    let r = loadrig(&["compare", sa, sb]);
    assert_eq!(r.code, 1, "{}", r.dump());
    assert!(
        r.stdout.contains("-20.0%  slower         REGRESSION"),
        "{}",
        r.dump()
    );
    assert!(
        r.stdout.contains("+50.0%  -              REGRESSION"),
        "{}",
        r.dump()
    );
    golden("compare-table.txt", &mask(&r.stdout));

    let same = loadrig(&["compare", sa, sa]);
    assert_eq!(same.code, 0, "{}", same.dump());
    assert!(
        same.stdout.contains("+0.0%  no sig. diff."),
        "{}",
        same.dump()
    );
    let loose = loadrig(&["compare", sa, sb, "--max-regression", "60%"]);
    assert_eq!(loose.code, 0, "{}", loose.dump());
    let missing = dir.path().join("missing.json");
    let bad = loadrig(&["compare", sa, missing.to_str().unwrap()]);
    assert_eq!(bad.code, 2, "{}", bad.dump());
    let bad_pct = loadrig(&["compare", sa, sb, "--max-regression", "lots"]);
    assert_eq!(bad_pct.code, 2, "{}", bad_pct.dump());
    // B measured INVALID: nothing to conclude, exit 4, and said why.
    v["validity"]["valid"] = false.into();
    std::fs::write(&b, serde_json::to_vec(&v).unwrap()).unwrap();
    let invalid = loadrig(&["compare", sa, sb, "--max-regression", "60%"]);
    assert_eq!(invalid.code, 4, "{}", invalid.dump());
    assert!(
        invalid.stdout.contains("b: measurement: INVALID"),
        "{}",
        invalid.dump()
    );
}

/// `--hdr-log`: an interval log PyPI's hdrhistogram reads, one interval
/// per measured lap, the counts the report's; every `hdr` in the report
/// is in the compressed form ("HISTF...").
#[test]
fn the_interval_log_and_the_reports_histograms_read_in_python() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let log = dir.path().join("r.hlog");
    let v = voter_report(&out, &["--hdr-log", log.to_str().unwrap()]);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("#[Histogram log format version"));
    assert!(text.contains("\n#[StartTime: ") && text.contains("\n#[BaseTime: "));
    assert!(text.contains(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
    ));
    let checked = python(&["hlog", log.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(checked.contains(", 6000 values"), "{checked}");
    let intervals: usize = checked.split(' ').next().unwrap().parse().unwrap();
    assert!(intervals >= 2, "laps of 0.2 s: {checked}");
    let kind = &v["measured"]["kinds"][0];
    for m in ["latency", "service"] {
        assert!(kind[m]["hdr"].as_str().unwrap().starts_with("HISTF"), "{m}");
    }
    for l in v["laps"].as_array().unwrap() {
        assert!(l["latency_hdr"].as_str().unwrap().starts_with("HISTF"));
    }
}

/// Chromium, headless, with the flags this machine's closed network needs.
pub(crate) fn chromium(profile: &Path, extra: &[String], page: &Path) -> (String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("chromium is needed (scripts/test installs Debian's chromium): {e}")
        });
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "chromium failed ({}; scripts/test installs it):\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// `--html` on run and `loadrig report`: one page, loaded in a real
/// headless Chromium: the DOM has the header, the verdict and the
/// charts, the console has no error, and the screenshot is not blank.
#[test]
fn the_html_report_loads_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let page = dir.path().join("run.html");
    // SQLite keeps the votes: the page shows a real verdict.
    let db = format!("sqlite://{}", dir.path().join("v.db").display());
    voter_on(&db, &out, &["--html", page.to_str().unwrap()]);
    let rep = report(&out);
    assert_verified(
        &crate::common::Run {
            code: 0,
            stdout: String::new(),
            stderr: String::new(),
        },
        &rep,
    );
    let again = dir.path().join("report.html");
    let r = loadrig(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for p in [&page, &again] {
        let html = std::fs::read_to_string(p).unwrap();
        // Self-contained: nothing fetched, no script.
        for banned in ["<script", "http://", "https://", "<link", "@import"] {
            let outside_svg_ns = html.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !outside_svg_ns.contains(banned),
                "{banned} in {}",
                p.display()
            );
        }
    }
    let (dom, log) = chromium(
        &dir.path().join("profile-dom"),
        &["--dump-dom".to_string()],
        &page,
    );
    for want in [
        "sqlite://",
        "Verification: <span class=\"pass\">passed</span>",
        "SQLite 3.",
        "Latency by percentile",
        "Throughput over time",
        "<polyline",
    ] {
        assert!(dom.contains(want), "{want} not in the DOM:\n{dom}");
    }
    assert!(dom.matches("<svg").count() >= 3, "{dom}");
    for bad in ["Uncaught", "ERROR:CONSOLE", ":CONSOLE("] {
        assert!(
            !log.contains(bad),
            "console error in chromium's log:\n{log}"
        );
    }
    let shot = dir.path().join("shot.png");
    let (_, log) = chromium(
        &dir.path().join("profile-shot"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400".to_string(),
        ],
        &page,
    );
    assert!(
        !log.contains("Uncaught") && !log.contains("ERROR:CONSOLE"),
        "{log}"
    );
    let pixels = python(&["png", shot.to_str().unwrap()]);
    let nonwhite: u64 = pixels
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{pixels}"));
    assert!(pixels.starts_with("1200 x 2400"), "{pixels}");
    // Text, tables and three charts: well over 2 % of the page.
    assert!(nonwhite > 1200 * 2400 / 50, "{pixels}");

    // `plot -o x.png` goes through the same Chromium.
    let png = dir.path().join("plot.png");
    let p = loadrig(&["plot", out.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert_eq!(p.code, 0, "{}", p.dump());
    let pixels = python(&["png", png.to_str().unwrap()]);
    assert!(pixels.starts_with("1000 x "), "{pixels}");
    assert!(!pixels.contains(", 0 non-white"), "{pixels}");
}

/// One process's report given twice is refused by merge (it would count
/// every operation twice); a report whose histogram lies about its
/// length, or is `/dev/zero`, is refused by plot as a bad input naming
/// the file (exit 2, one line), not read for ever or failed as a check.
#[test]
fn merge_and_plot_refuse_a_report_twice_and_bad_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let r = loadrig(
        &["run", "hello", "--target", "null://", "-n", "100", "-q"]
            .into_iter()
            .chain(["--out", a.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let sa = a.to_str().unwrap();
    let twice = loadrig(&["merge", sa, sa]);
    assert_eq!(twice.code, 2, "{}", twice.dump());
    assert!(
        twice.stderr.contains("report 2 is report 1 again"),
        "{}",
        twice.dump()
    );
    assert_eq!(twice.stderr.lines().count(), 1, "{}", twice.dump());

    let mut v = json(&a);
    // HdrHistogram's compressed cookie, then a payload length of
    // 0x7ffffff0 bytes, then the first four of them.
    v["measured"]["kinds"][0]["latency"]["hdr"] = "HISTBH////B4nAEC".into();
    let lying = dir.path().join("lying.json");
    std::fs::write(&lying, v.to_string()).unwrap();
    let svg = dir.path().join("p.svg");
    for (file, says) in [
        (lying.to_str().unwrap(), "lying.json: "),
        ("/dev/zero", "/dev/zero: larger than"),
    ] {
        let p = loadrig(&["plot", file, "-o", svg.to_str().unwrap()]);
        assert_eq!(p.code, 2, "{file}: {}", p.dump());
        assert_eq!(p.stderr.lines().count(), 1, "{file}: {}", p.dump());
        assert!(p.stderr.contains(says), "{file}: {}", p.dump());
    }
}

/// merge refuses reports of different runs (another seed) unless
/// `--force`, and warns when they did not run at the same time.
#[test]
fn merge_refuses_different_runs_and_warns_on_no_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    for (p, seed, shard) in [(&a, "1", "0/2"), (&b, "2", "1/2")] {
        let r = loadrig(&[
            "run",
            "voter",
            "--target",
            "null://?delay=100us",
            "-n",
            "2000",
            "--seed",
            seed,
            "--shard",
            shard,
            "--out",
            p.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.dump());
    }
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let refused = loadrig(&["merge", sa, sb]);
    assert_eq!(refused.code, 2, "{}", refused.dump());
    assert!(
        refused.stderr.contains("seed 2, report 1 seed 1"),
        "{}",
        refused.dump()
    );
    let forced = loadrig(&["merge", "--force", sa, sb]);
    assert_eq!(forced.code, 0, "{}", forced.dump());
    // One ran after the other: they never overlapped.
    assert!(
        forced
            .stderr
            .contains("warning: the reports ran together for 0.000 s"),
        "{}",
        forced.dump()
    );
    // Another load model is another run too.
    let c = dir.path().join("c.json");
    let r = loadrig(&[
        "run",
        "voter",
        "--target",
        "null://?delay=100us",
        "-n",
        "2000",
        "--seed",
        "1",
        "--clients",
        "3",
        "--shard",
        "1/2",
        "--out",
        c.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let other = loadrig(&["merge", sa, c.to_str().unwrap()]);
    assert_eq!(other.code, 2, "{}", other.dump());
    assert!(other.stderr.contains("load.clients"), "{}", other.dump());
}
