//! `loadrig pgbench` on the real PostgreSQL (`scripts/services up
//! postgres`), each test in a schema of its own (`PGOPTIONS='-c
//! search_path=S'`, as pgbench itself takes it): the tables `-i` makes
//! against the ones pgbench makes, the builtins in each query mode,
//! verified, their words against a real pgbench run's (golden files from
//! it), a lost update caught, and a custom script with `\set`, `\if`,
//! `\gset` and `\sleep`, its mistakes refused before the load.

use std::process::Command;

use crate::common::{need_server, Run, BIN};
use crate::golden::mask;

const PORT: u16 = 5432;

/// A schema of the test's own, made afresh and dropped when done.
struct Schema(String);

impl Schema {
    fn new(name: &str) -> Schema {
        need_server("postgres", PORT);
        let s = Schema(format!("loadrig_pgb_{name}"));
        s.psql(&format!(
            "DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}",
            s.0
        ));
        s
    }

    fn env(&self, c: &mut Command) {
        c.env("PGHOST", "127.0.0.1")
            .env("PGPORT", PORT.to_string())
            .env("PGUSER", "bench")
            .env("PGPASSWORD", "bench")
            .env("PGDATABASE", "bench")
            .env("PGOPTIONS", format!("-c search_path={}", self.0))
            .env("NO_COLOR", "1");
    }

    /// `loadrig pgbench ARGS`.
    fn loadrig(&self, args: &[&str]) -> Run {
        let mut c = Command::new(BIN);
        c.arg("pgbench").args(args);
        self.env(&mut c);
        c.output().expect("loadrig runs").into()
    }

    /// The real pgbench (Debian's postgresql-client).
    fn pgbench(&self, args: &[&str]) -> Run {
        let mut c = Command::new("pgbench");
        c.args(args);
        self.env(&mut c);
        c.output().expect("pgbench runs").into()
    }

    /// psql's unaligned, tuples-only answer.
    fn psql(&self, sql: &str) -> String {
        let mut c = Command::new("psql");
        c.args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql]);
        self.env(&mut c);
        let r: Run = c.output().expect("psql runs").into();
        assert_eq!(r.code, 0, "{sql}\n{}", r.dump());
        r.stdout.trim().to_string()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let mut c = Command::new("psql");
        c.args([
            "-X",
            "-q",
            "-c",
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0),
        ]);
        self.env(&mut c);
        let _ = c.output();
    }
}

const COLUMNS: &str = "SELECT string_agg(table_name || '.' || column_name || ' ' || data_type
    || coalesce('(' || character_maximum_length || ')', '') || ' ' || is_nullable, ', '
    ORDER BY table_name, ordinal_position)
    FROM information_schema.columns WHERE table_schema = current_schema()";

#[test]
fn init_makes_pgbenchs_four_tables_as_pgbench_does() {
    let ours = Schema::new("init_ours");
    let theirs = Schema::new("init_theirs");
    let r = theirs.pgbench(&["-i", "-I", "dtp"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let r = ours.loadrig(&["-i", "-I", "dtp"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let cols = ours.psql(COLUMNS);
    assert!(
        cols.contains("pgbench_accounts.abalance integer YES"),
        "{cols}"
    );
    assert_eq!(cols, theirs.psql(COLUMNS));
    let keys = "SELECT string_agg(conname || ' ' || contype::text, ', ' ORDER BY conname) FROM pg_constraint
        WHERE connamespace = current_schema()::regnamespace";
    assert_eq!(ours.psql(keys), theirs.psql(keys));

    let r = ours.loadrig(&["-i", "-s", "2", "-F", "90", "--foreign-keys"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_eq!(
        ours.psql("SELECT (SELECT count(*) FROM pgbench_branches) || ' ' || (SELECT count(*) FROM pgbench_tellers) || ' ' || (SELECT count(*) FROM pgbench_accounts) || ' ' || (SELECT count(DISTINCT bid) FROM pgbench_accounts)"),
        "2 20 200000 2"
    );
    assert_eq!(
        ours.psql("SELECT reloptions::text FROM pg_class WHERE oid = 'pgbench_accounts'::regclass"),
        "{fillfactor=90}"
    );
    assert_eq!(
        ours.psql("SELECT count(*) FROM pg_constraint WHERE connamespace = current_schema()::regnamespace AND contype = 'f'"),
        "5"
    );
}

/// loadrig's pgbench block (its first line to the line before loadrig's
/// table), masked as golden files are, spaces squeezed, the initial
/// connection time left out (loadrig prints it before the numbers).
fn shape(text: &str) -> Vec<String> {
    let start = text.find("transaction type:").expect("pgbench's block");
    mask(&text[start..])
        .lines()
        .take_while(|l| !l.starts_with("kind "))
        .filter(|l| !l.starts_with("initial connection time"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn golden_shape(name: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    shape(&std::fs::read_to_string(&path).expect("golden file"))
}

#[test]
fn builtins_run_verified_in_every_query_mode_in_pgbenchs_words() {
    let s = Schema::new("builtins");
    let r = s.loadrig(&["-i"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    for (script, mode) in [
        (&[][..], "simple"),
        (&["-N"][..], "extended"),
        (&["-S"][..], "prepared"),
        (
            &["-b", "tpcb-like@2", "-b", "simple-update"][..],
            "prepared",
        ),
    ] {
        let mut args = vec!["-c", "3", "-j", "2", "-t", "15", "-M", mode];
        args.extend(script);
        let r = s.loadrig(&args);
        assert_eq!(r.code, 0, "{args:?}\n{}", r.dump());
        assert!(
            r.stderr.contains("verify ... ok") || r.stdout.contains("verify ... ok"),
            "{}",
            r.dump()
        );
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(
            all.contains("number of transactions actually processed: 45/45"),
            "{}",
            r.dump()
        );
        assert!(all.contains(&format!("query mode: {mode}")), "{}", r.dump());
    }
    let r = s.loadrig(&["-c", "2", "-T", "2", "-r", "-L", "5"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("initial connection time = "), "{all}");
    assert_eq!(shape(&all), golden_shape("pgbench-tpcb-r.txt"), "{all}");
    let r = s.loadrig(&["-c", "2", "-t", "10", "-S", "-N", "-r"]);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(shape(&all), golden_shape("pgbench-scripts-r.txt"), "{all}");
}

/// tpcb-like without its history insert: the balances move, the history
/// does not.
const LOST: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
END;
";

#[test]
fn a_lost_history_insert_fails_the_tpcb_check() {
    let s = Schema::new("lost");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lost.sql");
    std::fs::write(&file, LOST).unwrap();
    assert_eq!(s.loadrig(&["-i"]).code, 0);
    let r = s.loadrig(&["-c", "2", "-t", "20", "-f", file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("pgbench_accounts's balances moved by sum(pgbench_history.delta): expected 0"),
        "{all}"
    );
    // The same run with the insert verifies.
    let r = s.loadrig(&["-c", "2", "-t", "20"]);
    assert_eq!(r.code, 0, "{}", r.dump());
}

const CUSTOM: &str = "-- a custom script: \\set, \\gset, \\if, \\sleep
\\set n random(1, 9)
\\set half :n / 2 + 0 * :scale
SELECT :n * 2 AS twice, :half AS h \\gset
\\if :twice > 10
  INSERT INTO pgb_custom (n, h, big) VALUES (:n, :h, true);
\\elif :twice = 10
  INSERT INTO pgb_custom (n, h, big) VALUES (:n, :h, NULL);
\\else
  \\sleep 1 ms
  INSERT INTO pgb_custom (n, h, big) VALUES (:n, :h, false);
\\endif
";

#[test]
fn a_custom_script_sets_reads_branches_and_sleeps() {
    let s = Schema::new("custom");
    s.psql("CREATE TABLE pgb_custom (n int, h int, big boolean)");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("custom.sql");
    std::fs::write(&file, CUSTOM).unwrap();
    for mode in ["simple", "extended", "prepared"] {
        let r = s.loadrig(&[
            "-n",
            "-c",
            "2",
            "-t",
            "30",
            "-M",
            mode,
            "-f",
            file.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{mode}\n{}", r.dump());
    }
    let right = "(n > 5 AND big) OR (n = 5 AND big IS NULL) OR (n < 5 AND NOT big)";
    assert_eq!(
        s.psql(&format!("SELECT count(*) || ' ' || count(*) FILTER (WHERE ({right}) AND h = n / 2) || ' ' || count(DISTINCT n) FROM pgb_custom")),
        "180 180 9"
    );
}

#[test]
fn a_scripts_mistakes_name_file_and_line_before_the_load() {
    let s = Schema::new("mistakes");
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("\\set a 1\n\\set b random(1, \nSELECT :a;\n", ":2: "),
        (
            "\\set a 1\nSELECT :a;\nSELECT :nope;\n",
            ":3: undefined variable \"nope\"",
        ),
        ("\\if 1\nSELECT 1;\n", ":1: \\if without \\endif"),
    ] {
        let file = dir.path().join("bad.sql");
        std::fs::write(&file, text).unwrap();
        let r = s.loadrig(&["-n", "-t", "1", "-f", file.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{}", r.dump());
        let line = r
            .stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("");
        assert!(line.contains(&format!("bad.sql{says}")), "{}", r.dump());
        assert!(!r.stderr.contains("run ..."), "{}", r.dump());
    }
}
