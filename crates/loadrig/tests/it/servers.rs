//! The Voter and Hello on the real servers on loopback (PostgreSQL and
//! MariaDB, started by `scripts/services up postgres mariadb`), and the one
//! line a user gets when a server refuses the login or is not there.
//!
//! Runs on one server share the `bench` database's tables (a run's
//! teardown drops them), so each server has one test that runs its cases
//! in turn; the two servers' tests may run in parallel.

use std::process::Command;

use std::time::{Duration, Instant};

use crate::common::{
    assert_all_ok, assert_some_failed, assert_verified, domain, hold, loadrig, need_server, report,
    run_reported,
};
use crate::expect::{hello_inserts, votes, Votes};

/// How to reach one server: the URL, and its command-line client for
/// checking and cleaning up behind the binary's back.
struct Server {
    name: &'static str,
    port: u16,
    url: &'static str,
    scheme: &'static str,
    product: &'static str,
    /// SQL whose answer is the server's version, as the report should
    /// carry it after `product`.
    version_sql: &'static str,
    durability: &'static str,
    bad_password: &'static str,
    client: fn(&str) -> Command,
    drop_voter: &'static str,
    /// SQL whose output is SQL that ends every other session of `bench`.
    kill_sessions: &'static str,
}

const POSTGRES: Server = Server {
    name: "postgres",
    port: 5432,
    url: "postgres://bench:bench@127.0.0.1/bench",
    scheme: "postgres",
    product: "PostgreSQL ",
    version_sql: "SHOW server_version",
    durability: "synchronous_commit=",
    bad_password: "password authentication failed for user",
    client: psql,
    drop_voter: "DROP FUNCTION IF EXISTS voter_vote(BIGINT, INTEGER, INTEGER);
        DROP VIEW IF EXISTS v_votes_by_contestant_number_state;
        DROP TABLE IF EXISTS votes, votes_by_phone, contestants, area_code_state;",
    kill_sessions: "SELECT 'SELECT pg_terminate_backend(' || pid || ');' FROM pg_stat_activity
        WHERE usename = 'bench' AND pid <> pg_backend_pid()",
};

const MARIADB: Server = Server {
    name: "mariadb",
    port: 3306,
    url: "mysql://bench:bench@127.0.0.1/bench",
    scheme: "mysql",
    product: "MariaDB ",
    version_sql: "SELECT VERSION()",
    durability: "innodb_flush_log_at_trx_commit=",
    bad_password: "Access denied for user 'bench'",
    client: mariadb,
    drop_voter: "DROP PROCEDURE IF EXISTS voter_vote;
        DROP VIEW IF EXISTS v_votes_by_contestant_number_state;
        DROP TABLE IF EXISTS votes, votes_by_phone, contestants, area_code_state;",
    kill_sessions: "SELECT CONCAT('KILL ', id, ';') FROM information_schema.processlist
        WHERE user = 'bench' AND id <> CONNECTION_ID() AND command <> 'Daemon'",
};

fn psql(sql: &str) -> Command {
    let mut c = Command::new("psql");
    c.args([
        "-h",
        "127.0.0.1",
        "-U",
        "bench",
        "-d",
        "bench",
        "-v",
        "ON_ERROR_STOP=1",
    ])
    .args(["-At", "-c", sql])
    .env("PGPASSWORD", "bench");
    c
}

fn mariadb(sql: &str) -> Command {
    let mut c = Command::new("mariadb");
    c.args([
        "-h",
        "127.0.0.1",
        "-P",
        "3306",
        "-u",
        "bench",
        "-pbench",
        "bench",
    ])
    .args(["-N", "-B", "-e", sql]);
    c
}

impl Server {
    /// Run SQL through the server's own client: its output, trimmed, or
    /// its error.
    fn try_sql(&self, sql: &str) -> Result<String, String> {
        let out = (self.client)(sql)
            .output()
            .unwrap_or_else(|e| panic!("{}'s command-line client: {e}", self.name));
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn sql(&self, sql: &str) -> String {
        self.try_sql(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The Voter with a small phone space, so the vote limit is hit often
    /// from 32 clients at once; kept, then checked by the server's own client.
    fn voter_keeps_the_limit(&self) {
        self.sql(self.drop_voter);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("voter.json");
        let r = loadrig(&[
            "run",
            "voter",
            "--target",
            self.url,
            "--clients",
            "32",
            "--phones",
            "10",
            "--max-votes",
            "2",
            "-n",
            "5000",
            "--keep",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.dump());
        assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
        let rep = report(&out);
        assert_all_ok(&r, &rep, 5000);
        assert_verified(&r, &rep);
        // 10 phones keep 2 votes each; which ones depends on the race,
        // how many does not.
        let want = votes(&rep.spec, 5000);
        assert_eq!(want.accepted, 20, "{want:?}");
        assert_eq!(Votes::counted(&rep), want, "{}", r.dump());
        assert_eq!(self.sql("SELECT COUNT(*) FROM votes"), "20");
        let most: i64 = self
            .sql("SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM votes GROUP BY phone_number) AS per_phone")
            .parse()
            .unwrap();
        assert!((1..=2).contains(&most), "a phone holds {most} votes");
        // The version the server itself states, whichever is installed.
        let env = &rep.environment;
        let theirs = self.sql(self.version_sql);
        let version = env.server_version.as_deref().unwrap_or_default();
        let number = theirs.split([' ', '-']).next().unwrap_or_default();
        assert!(
            version.starts_with(self.product) && !number.is_empty() && version.contains(number),
            "{env:?}, the server says {theirs}"
        );
        let durability = env.durability.as_deref().unwrap_or_default();
        assert!(durability.starts_with(self.durability), "{env:?}");
        self.sql(self.drop_voter);
    }

    /// Hello with inserts: every select matches and every insert is a row.
    fn hello_verifies(&self) {
        let (r, rep) = run_reported(&[
            "run",
            "hello",
            "--target",
            self.url,
            "--clients",
            "8",
            "-n",
            "3000",
            "--insert-ratio",
            "0.2",
        ]);
        assert_eq!(r.code, 0, "{}", r.dump());
        assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
        assert_all_ok(&r, &rep, 3000);
        assert_verified(&r, &rep);
        let inserts = hello_inserts(&rep.spec, 3000);
        assert_eq!(domain(&rep, "inserted"), inserts, "{}", r.dump());
    }

    /// Exit 3 and exactly one line on stderr that names the problem.
    fn refused(&self, url: &str, needle: &str) {
        let r = loadrig(&["run", "voter", "--target", url, "-n", "10"]);
        assert_eq!(r.code, 3, "{}", r.dump());
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.dump());
        assert!(r.stderr.contains(needle), "{}", r.dump());
        assert!(!r.stderr.contains("wrong"), "password shown: {}", r.dump());
    }

    /// Every connection killed mid-run: errors are counted, connections
    /// come back, the run ends with a report and verify still holds,
    /// allowing for the votes left in doubt.
    fn survives_killed_connections(&self) {
        self.sql(self.drop_voter);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("killed.json");
        let run = {
            let (url, out) = (self.url.to_string(), out.clone());
            std::thread::spawn(move || {
                loadrig(&[
                    "run",
                    "voter",
                    "--target",
                    &url,
                    "--clients",
                    "8",
                    "-d",
                    "4",
                    // The killed sessions' calls fail: counted and in
                    // doubt, not judged by the failure gate here.
                    "--max-error-rate",
                    "0.2",
                    "--out",
                    out.to_str().unwrap(),
                ])
            })
        };
        // Kill once votes are being committed: the load runs.
        let t = Instant::now();
        while !self
            .try_sql("SELECT COUNT(*) FROM votes")
            .is_ok_and(|n| n.parse::<u64>().is_ok_and(|n| n > 0))
        {
            assert!(t.elapsed() < Duration::from_secs(30), "no vote committed");
            std::thread::sleep(Duration::from_millis(20));
        }
        let kills = self.sql(self.kill_sessions);
        assert!(!kills.is_empty(), "no session of the run to kill");
        for kill in kills.lines() {
            // A session may end on its own between the listing and the kill.
            let _ = (self.client)(kill).output();
        }
        let r = run.join().unwrap();
        assert_eq!(r.code, 0, "{}", r.dump());
        assert!(r.stdout.contains("verify ... ok ("), "{}", r.dump());
        assert!(r.stdout.contains("errors: vote: "), "{}", r.dump());
        let rep = report(&out);
        assert_some_failed(&r, &rep, 100);
        assert!(rep.measured.reconnects >= 1, "{}", r.dump());
        self.sql(self.drop_voter);
    }

    fn all_cases(&self) {
        let _one_at_a_time = hold(self.name);
        self.voter_keeps_the_limit();
        self.survives_killed_connections();
        self.hello_verifies();
        let wrong = format!("{}://bench:wrong@127.0.0.1/bench", self.scheme);
        self.refused(&wrong, self.bad_password);
        let nobody = format!("{}://bench:wrong@127.0.0.1:1/bench", self.scheme);
        self.refused(&nobody, "connection refused");
    }
}

#[test]
fn postgres_voter_hello_and_refusals() {
    need_server(POSTGRES.name, POSTGRES.port);
    POSTGRES.all_cases();
}

#[test]
fn mariadb_voter_hello_and_refusals() {
    need_server(MARIADB.name, MARIADB.port);
    MARIADB.all_cases();
}

/// A password from the client tools' environment (PGPASSWORD here), kept
/// off the command line; masked like one given in the URL.
#[test]
fn the_password_can_come_from_the_environment() {
    need_server("postgres", 5432);
    let _one_at_a_time = hold("postgres");
    let out = std::process::Command::new(crate::common::BIN)
        .args([
            "run",
            "hello",
            "--target",
            "postgres://bench@127.0.0.1/bench",
            "-n",
            "200",
        ])
        .env("PGPASSWORD", "bench")
        .output()
        .unwrap();
    let r = crate::common::Run::from(out);
    assert_eq!(r.code, 0, "{}", r.dump());
    // A user without a password in the URL is masked too (it may be a token).
    assert!(
        r.stdout.contains("on postgres://***@127.0.0.1/bench"),
        "{}",
        r.dump()
    );
    assert!(r.stdout.contains("verify ... ok"), "{}", r.dump());
}
