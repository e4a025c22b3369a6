//! redis-benchmark's flags (redis 7's `redis-benchmark --help`) as a
//! `loadrig run redis` line.

use super::{escape, help, host_port, notes, refused, takes, Bad, Given, Opt, Run};

// redis-benchmark's server when -h or -p is given without the other.
const HOST: &str = "127.0.0.1";
const PORT: &str = "6379";

const TLS: &str = "only --tls, --cacert and --insecure of TLS are taken";

pub(super) const OPTS: &[Opt] = &[
    takes(&["-h"], Some("HOST"), "the server's host in --target").or(HOST),
    takes(&["-p"], Some("PORT"), "the server's port in --target").or(PORT),
    refused(
        &["-s"],
        Some("SOCKET"),
        "Unix sockets are not taken; give -h and -p",
    ),
    takes(
        &["-a"],
        Some("PASSWORD"),
        "the password in --target (or REDISCLI_AUTH in the environment)",
    ),
    takes(&["--user"], Some("USER"), "the user in --target (with -a)"),
    takes(&["-u"], Some("URI"), "--target (redis://...)"),
    takes(&["-c"], Some("CLIENTS"), "--clients"),
    takes(&["-n"], Some("REQUESTS"), "--requests, per test"),
    takes(&["-d"], Some("SIZE"), "--value-size"),
    takes(&["--dbnum"], Some("DB"), "--dbnum (SELECT only when given)"),
    refused(&["-3"], None, "RESP3 is not spoken; loadrig speaks RESP2"),
    takes(&["--threads"], Some("NUM"), "--threads"),
    takes(
        &["--cluster"],
        None,
        "--cluster: the server given is a seed node of a Redis Cluster",
    ),
    refused(&["--enable-tracking"], None, "client tracking is not taken"),
    takes(
        &["-k"],
        Some("BOOLEAN"),
        "1: connections are kept (always so here); 0 is refused",
    ),
    takes(&["-r"], Some("KEYSPACELEN"), "--keyspace"),
    takes(&["-P"], Some("NUMREQ"), "--pipeline"),
    notes(
        &["-e"],
        None,
        "server errors are always counted and shown by kind",
    ),
    takes(&["-q"], None, "--quiet: one line per test"),
    notes(
        &["--precision"],
        Some("DIGITS"),
        "latencies are printed with 3 decimals",
    ),
    takes(
        &["--csv"],
        None,
        "--csv: redis-benchmark's CSV on standard output",
    ),
    refused(
        &["-l"],
        None,
        "looping forever is not taken; give -n or run loadrig again",
    ),
    takes(&["-t"], Some("TESTS"), "--tests"),
    refused(
        &["-I"],
        None,
        "idle mode opens connections and sends nothing: not a load",
    ),
    refused(
        &["-x"],
        None,
        "the last argument from standard input is not taken",
    ),
    takes(&["--seed"], Some("NUM"), "--seed"),
    takes(
        &["--tls"],
        None,
        "a rediss:// target (TLS, docs/guides/tls.md)",
    ),
    refused(&["--sni"], Some("HOST"), TLS),
    takes(&["--cacert"], Some("FILE"), "--cacert"),
    refused(&["--cacertdir"], Some("DIR"), TLS),
    takes(&["--insecure"], None, "--insecure"),
    refused(&["--cert"], Some("FILE"), TLS),
    refused(&["--key"], Some("FILE"), TLS),
    refused(&["--tls-ciphers"], Some("LIST"), TLS),
    refused(&["--tls-ciphersuites"], Some("LIST"), TLS),
    refused(&["--version"], None, "this is loadrig: `loadrig --version`"),
    help(&["--help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    match g.get("-k") {
        None | Some("1") => {}
        Some(_) => return Err(("-k", "only 1: loadrig keeps its connections".into())),
    }
    let login = g.has("-a") || g.has("--user");
    let scheme = if g.has("--tls") { "rediss" } else { "redis" };
    if let Some(uri) = g.get("-u") {
        if g.has("-h") || g.has("-p") || login {
            return Err(("-u", "give -u or -h, -p, -a, --user, not both".into()));
        }
        if g.has("--tls") && !uri.starts_with("rediss://") {
            return Err(("--tls", "with -u, give a rediss:// URI".into()));
        }
        run.set("--target", uri);
    } else if g.has("-h") || g.has("-p") || login || g.has("--tls") {
        let at = host_port(g.get("-h").unwrap_or(HOST), g.get("-p").unwrap_or(PORT));
        let who = match (g.get("--user"), g.get("-a")) {
            (Some(u), Some(p)) => format!("{}:{}@", escape(u), escape(p)),
            (None, Some(p)) => format!(":{}@", escape(p)),
            (Some(_), None) => return Err(("--user", "needs -a PASSWORD".into())),
            (None, None) => String::new(),
        };
        run.set("--target", format!("{scheme}://{who}{at}"));
    }
    for (peer, flag) in [
        ("-c", "--clients"),
        ("-n", "--requests"),
        ("-d", "--value-size"),
        ("--dbnum", "--dbnum"),
        ("--threads", "--threads"),
        ("-r", "--keyspace"),
        ("-P", "--pipeline"),
        ("-t", "--tests"),
        ("--seed", "--seed"),
        ("--cacert", "--cacert"),
    ] {
        run.pass(g, peer, flag);
    }
    if g.has("-q") {
        run.switch("--quiet");
    }
    if g.has("--insecure") {
        run.switch("--insecure");
    }
    if g.has("--csv") {
        run.switch("--csv");
    }
    if g.has("--cluster") {
        run.switch("--cluster");
    }
    // redis-benchmark's own command: the words after the flags.
    let command: Vec<&String> = g.words.iter().chain(&g.after).collect();
    if !command.is_empty() {
        if g.has("-t") {
            return Err(("-t", "give tests or a command, not both".into()));
        }
        run.switch("--");
        run.words.extend(command.into_iter().cloned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;

    #[test]
    fn the_guides_lines_become_run_redis() {
        let w = run(
            Peer::RedisBenchmark,
            &[
                "-h",
                "127.0.0.1",
                "-p",
                "6379",
                "-c",
                "50",
                "-P",
                "128",
                "-n",
                "100000",
                "--csv",
            ],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--target redis://127.0.0.1:6379 --clients 50 --requests 100000 --pipeline 128 --csv"
        );
        let w = run(Peer::RedisBenchmark, &["-a", "s:cret", "-t", "get", "-q"]).unwrap();
        assert_eq!(
            w.join(" "),
            "--target redis://:s%3Acret@127.0.0.1:6379 --tests get --quiet"
        );
        let w = run(
            Peer::RedisBenchmark,
            &["--tls", "-p", "6380", "--cacert", "ca.pem", "-t", "get"],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--target rediss://127.0.0.1:6380 --tests get --cacert ca.pem"
        );
        let w = run(Peer::RedisBenchmark, &["-n", "10", "SET", "k", "__data__"]).unwrap();
        assert_eq!(w.join(" "), "--requests 10 -- SET k __data__");
    }

    #[test]
    fn refusals_name_the_flag() {
        for (args, flag) in [
            (&["-l"][..], "-l"),
            (&["-k", "0"][..], "-k"),
            (&["-s", "/tmp/r.sock"][..], "-s"),
            (&["-u", "redis://h", "-h", "h"][..], "-u"),
            (&["-u", "redis://h", "--tls"][..], "--tls"),
            (&["--nope"][..], "--nope"),
        ] {
            let e = run(Peer::RedisBenchmark, args).unwrap_err();
            assert!(e.starts_with(&format!("redis-benchmark {flag}: ")), "{e}");
        }
    }
}
