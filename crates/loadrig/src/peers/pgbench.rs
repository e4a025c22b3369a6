//! pgbench's flags (PostgreSQL 15's `pgbench --help`) as a `loadrig run
//! pgbench` line, or with `-i` a `loadrig prepare pgbench --init` line.
//! The server comes from `-h -p -U` and the database name, else from
//! libpq's variables (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
//! `PGDATABASE`); `PGOPTIONS='-c search_path=S'` becomes the target's
//! `?search_path=S`, so a line that works for pgbench works here.

use super::{escape, help, host_port, notes, number, refused, takes, Bad, Given, Opt, Run};

/// pgbench's transactions per client when neither -t nor -T is given.
const TRANSACTIONS: &str = "10";
const HOST: &str = "127.0.0.1";
const PORT: &str = "5432";

pub(super) const OPTS: &[Opt] = &[
    takes(
        &["-i", "--initialize"],
        None,
        "`loadrig prepare pgbench --init`: make the four tables",
    ),
    takes(
        &["-I", "--init-steps"],
        Some("STEPS"),
        "--init-steps (of dtgGvpf)",
    ),
    takes(&["-F", "--fillfactor"], Some("NUM"), "--fillfactor"),
    takes(
        &["-s", "--scale"],
        Some("NUM"),
        "--scale (with -i; a run reads it from pgbench_branches)",
    ),
    takes(&["--foreign-keys"], None, "--foreign-keys"),
    notes(
        &["-q", "--quiet"],
        None,
        "loadrig's prepare prints one line",
    ),
    refused(
        &["--index-tablespace"],
        Some("TS"),
        "tablespaces are not taken",
    ),
    refused(&["--tablespace"], Some("TS"), "tablespaces are not taken"),
    refused(
        &["--partition-method"],
        Some("M"),
        "partitions are not taken",
    ),
    refused(&["--partitions"], Some("NUM"), "partitions are not taken"),
    refused(
        &["--unlogged-tables"],
        None,
        "unlogged tables are not taken",
    ),
    takes(
        &["-b", "--builtin"],
        Some("NAME[@W]"),
        "--builtin (repeatable)",
    ),
    takes(&["-f", "--file"], Some("FILE[@W]"), "--file (repeatable)"),
    takes(
        &["-N", "--skip-some-updates"],
        None,
        "--builtin simple-update",
    ),
    takes(&["-S", "--select-only"], None, "--builtin select-only"),
    takes(&["-c", "--client"], Some("NUM"), "--clients").or("1"),
    takes(&["-C", "--connect"], None, "--connect-each"),
    takes(
        &["-D", "--define"],
        Some("VAR=VALUE"),
        "--define (repeatable)",
    ),
    takes(&["-j", "--jobs"], Some("NUM"), "--threads").or("1"),
    refused(
        &["-l", "--log"],
        None,
        "per-transaction logs are not written; --out keeps the histograms",
    ),
    takes(
        &["-L", "--latency-limit"],
        Some("NUM"),
        "--latency-limit (ms)",
    ),
    takes(&["-M", "--protocol"], Some("MODE"), "--query-mode"),
    takes(&["-n", "--no-vacuum"], None, "--no-vacuum"),
    takes(
        &["-P", "--progress"],
        Some("NUM"),
        "--interval: a lap line every NUM seconds",
    ),
    takes(
        &["-r", "--report-per-command"],
        None,
        "--report-per-command",
    ),
    takes(&["-R", "--rate"], Some("NUM"), "--rate: the open loop"),
    takes(
        &["-t", "--transactions"],
        Some("NUM"),
        "--requests NUM times -c",
    )
    .or(TRANSACTIONS),
    takes(&["-T", "--time"], Some("NUM"), "--duration"),
    refused(
        &["-v", "--vacuum-all"],
        None,
        "the four tables are not vacuumed; -n or pgbench's own vacuum",
    ),
    refused(
        &["--aggregate-interval"],
        Some("NUM"),
        "per-transaction logs are not written",
    ),
    refused(
        &["--failures-detailed"],
        None,
        "failures are counted by SQLSTATE class in loadrig's table",
    ),
    notes(
        &["--log-prefix"],
        Some("PREFIX"),
        "no per-transaction log is written",
    ),
    refused(
        &["--max-tries"],
        Some("NUM"),
        "a failed transaction is not retried",
    ),
    notes(
        &["--progress-timestamp"],
        None,
        "lap lines count seconds from the start",
    ),
    takes(&["--random-seed"], Some("SEED"), "--seed (a number)"),
    refused(
        &["--sampling-rate"],
        Some("NUM"),
        "per-transaction logs are not written",
    ),
    refused(
        &["--show-script"],
        Some("NAME"),
        "docs/reference/pgbench.md lists the builtins' text",
    ),
    notes(
        &["--verbose-errors"],
        None,
        "errors are counted by SQLSTATE class",
    ),
    notes(&["-d", "--debug"], None, "no debug output"),
    takes(
        &["-h", "--host"],
        Some("HOSTNAME"),
        "the server's host in --target",
    ),
    takes(
        &["-p", "--port"],
        Some("PORT"),
        "the server's port in --target",
    ),
    takes(
        &["-U", "--username"],
        Some("USERNAME"),
        "the user in --target",
    ),
    refused(
        &["-V", "--version"],
        None,
        "this is loadrig: `loadrig --version`",
    ),
    help(&["-?", "--help"]),
];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The target URL from the flags and libpq's variables.
fn target(g: &Given) -> Result<String, Bad> {
    let user = g
        .get("-U")
        .map(str::to_string)
        .or_else(|| env("PGUSER"))
        .or_else(|| env("USER"))
        .ok_or(("-U", "no user: give -U or PGUSER".to_string()))?;
    let host = g.get("-h").map(str::to_string).or_else(|| env("PGHOST"));
    let host = host.unwrap_or_else(|| HOST.to_string());
    if host.starts_with('/') {
        return Err(("-h", "Unix sockets are not taken; give a host name".into()));
    }
    let port = g.get("-p").map(str::to_string).or_else(|| env("PGPORT"));
    let db = g
        .words
        .first()
        .cloned()
        .or_else(|| env("PGDATABASE"))
        .unwrap_or_else(|| user.clone());
    let who = match env("PGPASSWORD") {
        Some(p) => format!("{}:{}", escape(&user), escape(&p)),
        None => escape(&user),
    };
    let mut url = format!(
        "postgres://{who}@{}/{db}",
        host_port(&host, port.as_deref().unwrap_or(PORT))
    );
    if let Some(opts) = env("PGOPTIONS") {
        let schema = opts
            .trim()
            .strip_prefix("-c")
            .map(str::trim)
            .and_then(|o| o.strip_prefix("search_path="))
            .ok_or((
                "PGOPTIONS",
                "only '-c search_path=SCHEMA' is taken".to_string(),
            ))?;
        url.push_str(&format!("?search_path={schema}"));
    }
    Ok(url)
}

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    if g.words.len() > 1 {
        return Err((
            "DBNAME",
            format!("one database name, not {}", g.words.join(" ")),
        ));
    }
    run.set("--target", target(g)?);
    if g.has("-i") {
        run.command = Some("prepare");
        run.switch("--init");
        for (peer, flag) in [
            ("-s", "--scale"),
            ("-F", "--fillfactor"),
            ("-I", "--init-steps"),
        ] {
            run.pass(g, peer, flag);
        }
        if g.has("--foreign-keys") {
            run.switch("--foreign-keys");
        }
        return Ok(());
    }
    scripts(g, run);
    let clients = number("-c", g.get("-c").unwrap_or("1"))?;
    run.set("--clients", clients.to_string());
    run.set("--threads", g.get("-j").unwrap_or("1"));
    match (g.get("-T"), g.get("-t")) {
        (Some(_), Some(_)) => return Err(("-T", "give -T or -t, not both".into())),
        (Some(t), None) => run.set("--duration", t),
        (None, t) => {
            let t = number("-t", t.unwrap_or(TRANSACTIONS))?;
            run.set("--requests", (t * clients).to_string());
        }
    }
    for (peer, flag) in [
        ("-R", "--rate"),
        ("-L", "--latency-limit"),
        ("-M", "--query-mode"),
        ("-P", "--interval"),
    ] {
        run.pass(g, peer, flag);
    }
    if let Some(seed) = g.get("--random-seed") {
        run.set("--seed", number("--random-seed", seed)?.to_string());
    }
    for d in g.all("-D") {
        run.set("--define", d);
    }
    for (peer, flag) in [
        ("-r", "--report-per-command"),
        ("-n", "--no-vacuum"),
        ("-C", "--connect-each"),
    ] {
        if g.has(peer) {
            run.switch(flag);
        }
    }
    Ok(())
}

/// `-b`, `-f`, `-S`, `-N` in order; tpcb-like when none is given.
fn scripts(g: &Given, run: &mut Run) {
    let mut any = false;
    for (name, value) in &g.flags {
        match (*name, value) {
            ("-b", Some(v)) => run.set("--builtin", v.as_str()),
            ("-f", Some(v)) => run.set("--file", v.as_str()),
            ("-S", _) => run.set("--builtin", "select-only"),
            ("-N", _) => run.set("--builtin", "simple-update"),
            _ => continue,
        }
        any = true;
    }
    if !any {
        run.set("--builtin", "tpcb-like");
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;

    #[test]
    fn pgbench_lines_become_run_pgbench() {
        let w = run(
            Peer::Pgbench,
            &[
                "-h", "db", "-U", "u", "-c", "4", "-j2", "-T", "5", "-S", "-M", "prepared", "-P",
                "1", "-r", "bench",
            ],
        )
        .unwrap();
        let w = w.join(" ");
        assert!(w.starts_with("--target postgres://u"), "{w}");
        assert!(w.contains("@db:5432/bench"), "{w}");
        assert!(
            w.ends_with("--builtin select-only --clients 4 --threads 2 --duration 5 --query-mode prepared --interval 1 --report-per-command"),
            "{w}"
        );
        let w = run(
            Peer::Pgbench,
            &[
                "-U", "u", "-c", "3", "-t", "7", "-b", "si@2", "-f", "x.sql", "-D", "a=1",
            ],
        )
        .unwrap()
        .join(" ");
        assert!(
            w.contains(
                "--builtin si@2 --file x.sql --clients 3 --threads 1 --requests 21 --define a=1"
            ),
            "{w}"
        );
        let w = run(
            Peer::Pgbench,
            &["-U", "u", "-i", "-s", "3", "--foreign-keys"],
        )
        .unwrap()
        .join(" ");
        assert!(w.ends_with("--init --scale 3 --foreign-keys"), "{w}");
    }

    #[test]
    fn refusals_name_the_flag() {
        for (args, flag) in [
            (&["-U", "u", "-l"][..], "-l"),
            (&["-U", "u", "-T", "1", "-t", "1"][..], "-T"),
            (&["-U", "u", "--max-tries", "3"][..], "--max-tries"),
            (&["-U", "u", "-h", "/run/pg"][..], "-h"),
            (&["-U", "u", "a", "b"][..], "DBNAME"),
        ] {
            let e = run(Peer::Pgbench, args).unwrap_err();
            assert!(e.starts_with(&format!("pgbench {flag}: ")), "{e}");
        }
    }
}
