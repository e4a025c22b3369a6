//! The kv workload (FoundationDB's tests) end to end: each test of the
//! guide on each target verifies with its counts asserted, the dataset is
//! reused by a second run, a store that acknowledges writes it does not
//! keep fails verification (exit 1), and bad shapes exit 2 with one line.

use std::path::Path;

use crate::common::{assert_all_ok, assert_verified, domain, loadrig, run_reported, Run};

/// Rows of the tests' datasets: small, so each run loads in a blink.
const ROWS: u64 = 10_000;
/// Transactions per run.
const N: u64 = 2_000;

/// The guide's tests: name, point reads, writes, range rows per transaction.
const TESTS: [(&str, u64, u64, u64); 5] = [
    ("write1", 0, 1, 0),
    ("write10", 0, 10, 0),
    ("read10", 10, 0, 0),
    ("mix", 9, 1, 0),
    ("range", 0, 0, 100),
];

/// One test on `target`: every transaction ok, the counts exact, verified.
pub(crate) fn each_test_verifies(target: &str, dataset: &str) {
    for (test, reads, writes, range) in TESTS {
        let n = N.to_string();
        let rows = ROWS.to_string();
        let mut args = vec![
            "run",
            "kv",
            "--target",
            target,
            "--test",
            test,
            "-n",
            &n,
            "--clients",
            "20",
            "--rows",
            &rows,
            "--dataset",
            dataset,
            "-q",
        ];
        if range > 0 {
            // The guide's 1,000 keys is the default; 100 keeps runs short.
            args.extend(["--range-length", "100"]);
        }
        let (r, report) = run_reported(&args);
        assert_eq!(r.code, 0, "{test} on {target}: {}", r.dump());
        assert_all_ok(&r, &report, N);
        assert_verified(&r, &report);
        assert_eq!(domain(&report, "keys_read"), reads * N, "{test}");
        assert_eq!(domain(&report, "keys_written"), writes * N, "{test}");
        assert_eq!(domain(&report, "range_keys"), range * N, "{test}");
        assert_eq!(domain(&report, "keys_missing"), 0, "{test}");
        assert!(
            r.stdout.contains("in the guide's units: "),
            "{test}: {}",
            r.dump()
        );
    }
}

fn verdict_summary(report: &loadrig_report::Report) -> String {
    report
        .verification
        .as_ref()
        .and_then(|v| v.verdict.as_ref())
        .map(|v| v.summary.clone())
        .unwrap_or_default()
}

#[test]
fn sqlite_runs_every_test_of_the_guide_verified() {
    each_test_verifies("sqlite://", "kv");
}

#[test]
fn with_no_target_the_mix_runs_on_sqlite_and_speaks_the_guides_units() {
    let (r, report) = run_reported(&["run", "kv", "--rows", "10000", "-n", "3000"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 3_000);
    assert_verified(&r, &report);
    assert!(r.stdout.contains("kv on sqlite://"), "{}", r.dump());
    assert!(r.stdout.contains("synchronous=NORMAL"), "{}", r.dump());
    assert!(
        r.stdout
            .contains("test: mix of FoundationDB's benchmarking guide"),
        "{}",
        r.dump()
    );
    let units = r
        .stdout
        .lines()
        .find(|l| l.starts_with("in the guide's units: "))
        .unwrap_or_else(|| panic!("no guide units:\n{}", r.dump()));
    assert!(
        units.contains("reads/s + ") && units.contains("writes/s"),
        "{units}"
    );
    // 100 clients and 60 seconds are the defaults (given -n here).
    assert!(r.stdout.contains("100 clients"), "{}", r.dump());
    assert_eq!(domain(&report, "keys_read"), 27_000);
    assert_eq!(domain(&report, "keys_written"), 3_000);
}

fn file_target(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("kv.db").display())
}

#[test]
fn a_loaded_dataset_is_reused_and_loaded_again_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let run = |extra: &[&str]| -> Run {
        let mut args = vec![
            "run", "kv", "--target", &target, "--rows", "5000", "-n", "500",
        ];
        args.extend(extra);
        let (r, report) = run_reported(&args);
        assert_eq!(r.code, 0, "{}", r.dump());
        assert_verified(&r, &report);
        r
    };
    assert!(run(&[]).stdout.contains("load: 5,000 rows in "));
    // The run's writes were put back: the same dataset serves the next run.
    assert!(run(&["--test", "write10"])
        .stdout
        .contains("load: reused dataset kv"));
    assert!(run(&["--load"]).stdout.contains("load: 5,000 rows in "));
    // Other rows or another seed: another dataset, loaded.
    assert!(run(&["--seed", "7"])
        .stdout
        .contains("load: 5,000 rows in "));
    // --keep leaves the run's writes: the next run must not trust the data.
    run(&["--keep", "--test", "write1"]);
    assert!(run(&["--seed", "7"])
        .stdout
        .contains("load: 5,000 rows in "));
}

#[test]
fn a_store_that_drops_acknowledged_writes_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let args = |n: &str| {
        vec![
            "run", "kv", "--target", &target, "--rows", "5000", "-n", n, "--test", "write1",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let first = loadrig(&args("10").iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(first.code, 0, "{}", first.dump());
    // From now on the store acknowledges every write to the upper half of
    // the keys and keeps none of them.
    let db = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER drop_writes BEFORE INSERT ON kv_kv WHEN NEW.k >= 'k000000000002500'
         BEGIN SELECT RAISE(IGNORE); END;",
    )
    .unwrap();
    drop(db);
    let a = args("1000");
    let (r, report) = run_reported(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 1, "{}", r.dump());
    assert_all_ok(&r, &report, 1_000);
    let summary = verdict_summary(&report);
    assert!(
        summary.starts_with("FAILED") && summary.contains("acknowledged writes missing"),
        "{summary}"
    );
}

/// A run that keeps its data keeps its ledger in its report: `loadrig
/// verify REPORT` later knows every acknowledged write, as the run did,
/// and finds the same lost ones (without the ledger it could only check
/// that each value it sampled had some writer).
#[test]
fn verify_of_a_kept_report_knows_the_runs_writes() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let out = dir.path().join("r.json");
    let run = |n: &str, keep: &[&str]| {
        let mut args = vec![
            "run",
            "kv",
            "--target",
            &target,
            "--rows",
            "5000",
            "-n",
            n,
            "--test",
            "write1",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(keep);
        loadrig(&args)
    };
    let sql = |batch: &str| {
        let db = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
        db.execute_batch(batch).unwrap();
    };
    // The loaded data as it is before the kept run.
    let r = run("10", &[]);
    assert_eq!(r.code, 0, "{}", r.dump());
    sql("CREATE TABLE before_run AS SELECT * FROM kv_kv");
    let r = run("500", &["--keep"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    verify_knows_then_misses(&out, 500, sql);
}

/// `loadrig verify REPORT` knows the report's `acked` acknowledged
/// writes; then, every one of them undone (the rows put back from
/// `before_run`, each holding a value of the right form, so only the
/// ledger can tell), it fails naming them.
fn verify_knows_then_misses(report: &Path, acked: u64, sql: impl Fn(&str)) {
    let verify = || loadrig(&["verify", report.to_str().unwrap()]);
    let v = verify();
    assert_eq!(v.code, 0, "{}", v.dump());
    let known = format!(" {acked} acknowledged, 0 in-doubt and 0 failed write transactions");
    assert!(v.stdout.contains(&known), "{}", v.dump());
    sql("DELETE FROM kv_kv; INSERT INTO kv_kv SELECT * FROM before_run");
    let v = verify();
    assert_eq!(v.code, 1, "{}", v.dump());
    assert!(
        v.stdout.contains("acknowledged writes missing"),
        "{}",
        v.dump()
    );
}

/// Shards of one kv run (`loadrig prepare`, two `--no-prepare` shards,
/// `merge --prepared`): the merged report carries each shard's ledger,
/// so `loadrig verify MERGED` checks every acknowledged write of both,
/// and catches them all undone, where a sample could not.
#[test]
fn verify_of_merged_shards_knows_every_shards_writes() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let common = [
        "kv", "--target", &target, "--rows", "5000", "-n", "600", "--test", "write1",
    ];
    let sql = |batch: &str| {
        let db = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
        db.execute_batch(batch).unwrap();
    };
    let prep = path("prep.json");
    let mut args = vec!["prepare"];
    args.extend(common);
    args.extend(["--out", &prep]);
    let p = loadrig(&args);
    assert_eq!(p.code, 0, "{}", p.dump());
    sql("CREATE TABLE before_run AS SELECT * FROM kv_kv");
    let mut shards = Vec::new();
    for i in 0..2 {
        let (shard, out) = (format!("{i}/2"), path(&format!("s{i}.json")));
        let mut args = vec!["run"];
        args.extend(common);
        args.extend(["--no-prepare", "--shard", &shard, "--out", &out, "-q"]);
        let r = loadrig(&args);
        assert_eq!(r.code, 0, "{}", r.dump());
        shards.push(out);
    }
    let merged = path("merged.json");
    let m = loadrig(&[
        "merge",
        &shards[0],
        &shards[1],
        "--prepared",
        &prep,
        "-o",
        &merged,
    ]);
    assert_eq!(m.code, 0, "{}", m.dump());
    verify_knows_then_misses(Path::new(&merged), 600, sql);
}

#[test]
fn bad_shapes_exit_2_with_one_line() {
    for (args, flag) in [
        (
            &["--test", "range", "--range-length", "0"][..],
            "--range-length",
        ),
        (&["--reads", "0", "--writes", "0"][..], "--reads"),
        (&["--value-size", "100-8"][..], "--value-size"),
    ] {
        let mut all = vec!["run", "kv"];
        all.extend(args);
        let r = loadrig(&all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.dump());
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", r.dump());
        assert!(lines[0].contains(flag), "{args:?}: {}", r.dump());
    }
}

const POSTGRES: &str = "postgres://bench:bench@127.0.0.1/bench";

/// SQL run by psql as the tests' user, behind the binary's back.
fn psql(sql: &str) {
    let out = std::process::Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "bench",
            "-d",
            "bench",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ])
        .env("PGPASSWORD", "bench")
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn postgres_runs_every_test_of_the_guide_verified() {
    // servers.rs kills every session of the tests' user mid-run.
    let _one_at_a_time = crate::common::hold("postgres");
    crate::common::need_server("postgres", 5432);
    each_test_verifies(POSTGRES, "it_each");
}

#[test]
fn postgres_links_cut_mid_run_leave_writes_in_doubt_and_verify_holds() {
    // servers.rs kills every session of the tests' user mid-run.
    let _one_at_a_time = crate::common::hold("postgres");
    crate::common::need_server("postgres", 5432);
    links_cut_mid_run("postgres", 5432, &[]);
}

/// With calls pipelined (4 per connection), several in doubt per cut link.
#[test]
fn mariadb_links_cut_mid_run_leave_writes_in_doubt_and_verify_holds() {
    // servers.rs kills every session of the tests\' user mid-run.
    let _one_at_a_time = crate::common::hold("mariadb");
    crate::common::need_server("mariadb", 3306);
    links_cut_mid_run("mysql", 3306, &["--pipeline", "4"]);
}

/// The same over io_uring (`--io uring`): a cut link's receive fails on
/// the ring, the connection is opened again and served by the ring.
#[test]
fn mariadb_links_cut_over_uring_leave_writes_in_doubt_and_verify_holds() {
    // servers.rs kills every session of the tests\' user mid-run.
    let _one_at_a_time = crate::common::hold("mariadb");
    crate::common::need_server("mariadb", 3306);
    // A dataset of its own: the other MariaDB cut runs at the same time.
    links_cut_mid_run(
        "mysql",
        3306,
        &[
            "--pipeline",
            "4",
            "--io",
            "uring",
            "--threads",
            "2",
            "--dataset",
            "it_cut_uring",
        ],
    );
}

/// write10 through a relay whose links are cut after the first lap: the
/// cut transactions are counted errors and in doubt, and verification holds.
fn links_cut_mid_run(scheme: &str, port: u16, extra: &[&str]) {
    let relay = crate::common::Relay::start(port);
    let target = format!("{scheme}://bench:bench@127.0.0.1:{}/bench", relay.port);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut args = vec![
        "run",
        "kv",
        "--target",
        &target,
        "--test",
        "write10",
        "--rows",
        "10000",
        "--clients",
        "20",
        "--duration",
        "3",
        "--interval",
        "0.2",
        // The cut links' transactions fail (counted, in doubt): past the
        // default 1% gate on a short run, and not what is judged here.
        "--max-error-rate",
        "0.2",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--dataset") {
        args.extend(["--dataset", "it_cut"]);
    }
    let mut run = crate::common::Running::start(&args);
    run.until_first_lap();
    assert!(relay.cut() >= 1, "no link to cut");
    let r = run.finish();
    assert_eq!(r.code, 0, "{}", r.dump());
    let report = crate::common::report(&out);
    assert!(report.measured.errors > 0, "{}", r.dump());
    assert!(report.measured.ok > 0, "{}", r.dump());
    assert_verified(&r, &report);
    // The ledger's in-doubt transactions are the engine's in-doubt errors
    // (io, timeout, protocol), one for one: the verdict's figure and the
    // report's counts agree, and neither is zero.
    let summary = verdict_summary(&report);
    let ledger: u64 = summary
        .split(" in-doubt")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no in-doubt count: {summary}"));
    let counted: u64 = report
        .measured
        .kinds
        .iter()
        .chain(&report.warmup.kinds)
        .flat_map(|k| &k.errors)
        .filter(|(e, _)| ["io", "timeout", "protocol"].contains(&e.as_str()))
        .map(|(_, n)| n)
        .sum();
    assert!(ledger > 0, "{summary}");
    assert_eq!(ledger, counted, "{summary}\n{}", r.dump());
}

#[test]
fn postgres_dropping_acknowledged_writes_fails_verification() {
    // servers.rs kills every session of the tests' user mid-run.
    let _one_at_a_time = crate::common::hold("postgres");
    crate::common::need_server("postgres", 5432);
    let args = |n: &'static str| {
        [
            "run",
            "kv",
            "--target",
            POSTGRES,
            "--rows",
            "5000",
            "--dataset",
            "it_drop",
            "-n",
            n,
            "--clients",
            "10",
            "--test",
            "write1",
            "--load",
        ]
    };
    let first = loadrig(&args("10"));
    assert_eq!(first.code, 0, "{}", first.dump());
    // The server acknowledges every write to the upper half of the keys
    // and keeps none: a trigger that turns them into nothing.
    psql(
        "CREATE OR REPLACE FUNCTION it_drop_writes() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RETURN NULL; END $$;
         DROP TRIGGER IF EXISTS drop_writes ON kv_it_drop;
         CREATE TRIGGER drop_writes BEFORE INSERT ON kv_it_drop FOR EACH ROW
           WHEN (NEW.k >= 'k000000000002500'::bytea) EXECUTE FUNCTION it_drop_writes();",
    );
    let mut a = args("1000").to_vec();
    a.pop(); // no --load: the loaded data stays, with the trigger
    let (r, report) = run_reported(&a);
    psql("DROP TRIGGER IF EXISTS drop_writes ON kv_it_drop;");
    assert_eq!(r.code, 1, "{}", r.dump());
    assert_all_ok(&r, &report, 1_000);
    let summary = verdict_summary(&report);
    assert!(
        summary.starts_with("FAILED") && summary.contains("acknowledged writes missing"),
        "{summary}"
    );
}

#[test]
fn redis_runs_every_test_of_the_guide_verified() {
    crate::common::need_server("redis", 6379);
    each_test_verifies("redis://127.0.0.1:6379", "it_each");
}

#[test]
fn mariadb_runs_every_test_of_the_guide_verified() {
    // servers.rs kills every session of the tests\' user mid-run.
    let _one_at_a_time = crate::common::hold("mariadb");
    crate::common::need_server("mariadb", 3306);
    each_test_verifies("mysql://bench:bench@127.0.0.1/bench", "it_each");
}

/// The parent of `--processes` gathers its children's ledgers: every
/// acknowledged write transaction is known to it, as to one process.
#[test]
fn processes_verify_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let (r, report) = run_reported(&[
        "run",
        "kv",
        "--processes",
        "2",
        "--target",
        &target,
        "--rows",
        "5000",
        "-n",
        "1000",
        "--clients",
        "5",
        "--test",
        "write10",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 1_000);
    assert_verified(&r, &report);
    assert_eq!(domain(&report, "keys_written"), 10_000);
    assert!(
        verdict_summary(&report)
            .contains(" 1,000 acknowledged, 0 in-doubt and 0 failed write transactions"),
        "{}",
        r.dump()
    );
}

#[test]
fn skewed_key_choices_run_and_verify() {
    for keys in ["zipfian", "latest"] {
        let (r, report) = run_reported(&[
            "run",
            "kv",
            "--rows",
            "10000",
            "-n",
            "2000",
            "--clients",
            "20",
            "--keys",
            keys,
            "--test",
            "write10",
        ]);
        assert_eq!(r.code, 0, "{keys}: {}", r.dump());
        assert_all_ok(&r, &report, 2_000);
        assert_verified(&r, &report);
        assert_eq!(domain(&report, "keys_written"), 20_000, "{keys}");
        assert!(
            r.stdout.contains(&format!("keys chosen {keys}")),
            "{}",
            r.dump()
        );
    }
}

#[test]
fn voltdb_runs_every_test_of_the_guide_verified() {
    crate::common::need_server("voltdb", 21212);
    // The other VoltDB tests clear the server's leftovers (tables and
    // procedures) and count every procedure call it serves.
    let _one_at_a_time = crate::common::hold("voltdb");
    each_test_verifies("voltdb://127.0.0.1:21212", "it_each");
}

/// A lone point read is its own statement (`SELECT v WHERE k = $1`, as
/// pgbench -S), pipelined 16 deep on each connection: every read finds
/// its key, and every answer comes back to its own call.
#[test]
fn postgres_point_reads_pipelined_find_every_key() {
    crate::common::need_server("postgres", 5432);
    let _one_at_a_time = crate::common::hold("postgres");
    let args = [
        "run",
        "kv",
        "--target",
        POSTGRES,
        "--reads",
        "1",
        "--writes",
        "0",
        "-P",
        "16",
        "--clients",
        "4",
        "-n",
        "4000",
        "--rows",
        "10000",
        "--dataset",
        "it_point",
        "-q",
    ];
    let (r, report) = run_reported(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 4000);
    assert_verified(&r, &report);
    assert_eq!(domain(&report, "keys_read"), 4000, "{}", r.dump());
    assert_eq!(domain(&report, "keys_missing"), 0, "{}", r.dump());
    assert!(
        r.stdout.contains("SELECT v WHERE k = $1"),
        "the transactions line names the statement: {}",
        r.dump()
    );
}

/// `loadrig teardown kv` drops what `loadrig prepare kv` made: the
/// dataset's table and its marker (the file, the user's, stays).
#[test]
fn teardown_drops_what_prepare_made() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let out = dir.path().join("p.json");
    let p = loadrig(&[
        "prepare",
        "kv",
        "--target",
        &target,
        "--rows",
        "1000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(p.code, 0, "{}", p.dump());
    let tables = || {
        let db = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
        let n: i64 = db
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'kv_kv'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let markers: i64 = db
            .query_row("SELECT count(*) FROM kv_markers", [], |r| r.get(0))
            .unwrap_or(0);
        (n, markers)
    };
    assert_eq!(tables(), (1, 1));
    let t = loadrig(&["teardown", "kv", "--target", &target]);
    assert_eq!(t.code, 0, "{}", t.dump());
    assert_eq!(tables(), (0, 0), "teardown left the dataset");
}

/// Over `--processes`, by time: the parent gathers its children's ledgers
/// and reads back every row they wrote, as one process would. A store that
/// keeps the writes passes with every acknowledged transaction counted; one
/// that drops half of them fails.
#[test]
fn processes_by_time_verify_every_childs_writes() {
    let dir = tempfile::tempdir().unwrap();
    let target = file_target(dir.path());
    let args = [
        "run",
        "kv",
        "--target",
        &target,
        "--rows",
        "5000",
        "--test",
        "write1",
        "-d",
        "1",
        "--processes",
        "2",
    ];
    let (r, report) = run_reported(&args);
    assert_eq!(r.code, 0, "{}", r.dump());
    let summary = verdict_summary(&report);
    let ok = report.measured.ok;
    assert!(
        summary.contains(&format!("{} acknowledged", loadrig_report::fmt::group(ok))),
        "{ok} ok: {summary}"
    );
    let db = rusqlite::Connection::open(dir.path().join("kv.db")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER drop_writes BEFORE INSERT ON kv_kv WHEN NEW.k >= 'k000000000002500'
         BEGIN SELECT RAISE(IGNORE); END;",
    )
    .unwrap();
    drop(db);
    let (r, report) = run_reported(&args);
    assert_eq!(r.code, 1, "{}", r.dump());
    let summary = verdict_summary(&report);
    assert!(
        summary.starts_with("FAILED") && summary.contains("acknowledged writes missing"),
        "{summary}"
    );
}
