//! memtier_benchmark's flags (its `--help`) as a `loadrig run redis
//! --ratio` line. memtier counts clients per thread and requests per
//! client; loadrig counts both in total, so they are multiplied out.

use super::{escape, help, host_port, notes, number, refused, takes, Bad, Given, Opt, Run};

// memtier's defaults, applied where loadrig's differ.
const HOST: &str = "127.0.0.1";
const PORT: &str = "6379";
const THREADS: &str = "4";
const CLIENTS: &str = "50";
const REQUESTS: &str = "10000";
const RATIO: &str = "1:10";
const DATA_SIZE: &str = "32";

const NOT_REDIS: &str = "only the Redis protocol is taken (memcached: `loadrig memaslap`)";

pub(super) const OPTS: &[Opt] = &[
    takes(
        &["-s", "--server"],
        Some("ADDR"),
        "the server's host in --target",
    )
    .or(HOST),
    takes(
        &["-p", "--port"],
        Some("PORT"),
        "the server's port in --target",
    )
    .or(PORT),
    refused(
        &["-S", "--unix-socket"],
        Some("SOCKET"),
        "Unix sockets are not taken; give -s and -p",
    ),
    takes(
        &["-P", "--protocol"],
        Some("PROTOCOL"),
        "redis (or resp2) only",
    ),
    takes(
        &["-a", "--authenticate"],
        Some("CREDENTIALS"),
        "PASSWORD or USER:PASSWORD in --target",
    ),
    takes(
        &["-n", "--requests"],
        Some("NUMBER"),
        "requests per client, times the clients: --requests",
    )
    .or(REQUESTS),
    takes(
        &["-c", "--clients"],
        Some("NUMBER"),
        "clients per thread, times -t: --clients",
    )
    .or(CLIENTS),
    takes(&["-t", "--threads"], Some("NUMBER"), "--threads").or(THREADS),
    takes(&["--test-time"], Some("SECS"), "--duration instead of -n"),
    takes(&["--ratio"], Some("SET:GET"), "--ratio").or(RATIO),
    takes(&["--pipeline"], Some("NUMBER"), "--pipeline"),
    takes(&["-d", "--data-size"], Some("SIZE"), "--value-size").or(DATA_SIZE),
    takes(&["--data-size-range"], Some("MIN-MAX"), "--data-size-range"),
    takes(
        &["--data-size-list"],
        Some("SIZE:WEIGHT,..."),
        "--data-size-list",
    ),
    takes(&["--key-prefix"], Some("PREFIX"), "--key-prefix"),
    takes(&["--key-minimum"], Some("NUMBER"), "--key-minimum"),
    takes(&["--key-maximum"], Some("NUMBER"), "--key-maximum"),
    takes(&["--key-pattern"], Some("SET:GET"), "--key-pattern"),
    takes(&["--key-zipf-exp"], Some("EXP"), "--key-zipf-exp"),
    takes(
        &["--select-db"],
        Some("DB"),
        "--dbnum (SELECT only when given)",
    ),
    takes(
        &["--rate-limiting"],
        Some("RPS"),
        "requests per second per connection, times the clients: --rate",
    ),
    notes(
        &["--hide-histogram"],
        None,
        "loadrig prints no histogram unless asked (--hdr-log)",
    ),
    notes(
        &["--data-verify"],
        None,
        "every GET's value is checked here anyway",
    ),
    refused(&["--cluster-mode"], None, "cluster mode is not taken"),
    refused(
        &["-x", "--run-count"],
        Some("NUMBER"),
        "one run per command; run loadrig again",
    ),
    refused(
        &["-o", "--out-file"],
        Some("FILE"),
        "the output is on standard output; the report: `loadrig run redis --out`",
    ),
    refused(
        &["--json-out-file"],
        Some("FILE"),
        "the report is `loadrig run redis --out FILE`",
    ),
    takes(
        &["--command"],
        Some("COMMAND"),
        "--command (repeatable; __key__ and __data__ as memtier's)",
    ),
    takes(
        &["--command-ratio"],
        Some("RATIO"),
        "--command-ratio, of the --command before it",
    ),
    takes(
        &["--command-key-pattern"],
        Some("PATTERN"),
        "--command-key-pattern (R, S, G, Z or P), of the --command before it",
    ),
    refused(
        &["--key-stddev"],
        Some("NUMBER"),
        "the Gaussian pattern's width is loadrig's own",
    ),
    refused(
        &["--key-median"],
        Some("NUMBER"),
        "the Gaussian pattern's centre is loadrig's own",
    ),
    refused(
        &["--expiry-range"],
        Some("MIN-MAX"),
        "keys are written without expiry (they are checked afterwards)",
    ),
    refused(
        &["--reconnect-interval"],
        Some("NUMBER"),
        "connections are kept",
    ),
    refused(
        &["--multi-key-get"],
        Some("NUMBER"),
        "GETs are one key each",
    ),
    refused(&["--randomize"], None, "runs are a function of --seed"),
    refused(
        &["--distinct-client-seed"],
        None,
        "runs are a function of --seed",
    ),
    refused(&["--version"], None, "this is loadrig: `loadrig --version`"),
    help(&["-h", "--help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    match g.get("-P") {
        None | Some("redis") | Some("resp2") => {}
        Some(_) => return Err(("-P", NOT_REDIS.into())),
    }
    if let Some(w) = g.words.first() {
        return Err((
            "-s",
            format!("'{w}' is not a flag; memtier takes only flags"),
        ));
    }
    if g.has("-s") || g.has("-p") || g.has("-a") {
        let at = host_port(g.get("-s").unwrap_or(HOST), g.get("-p").unwrap_or(PORT));
        let who = match g.get("-a") {
            Some(cred) => match cred.split_once(':') {
                Some((u, p)) => format!("{}:{}@", escape(u), escape(p)),
                None => format!(":{}@", escape(cred)),
            },
            None => String::new(),
        };
        run.set("--target", format!("redis://{who}{at}"));
    }
    let threads = number("-t", g.get("-t").unwrap_or(THREADS))?;
    let per_thread = number("-c", g.get("-c").unwrap_or(CLIENTS))?;
    let clients = per_thread.saturating_mul(threads);
    run.set("--threads", threads.to_string());
    run.set("--clients", clients.to_string());
    match (g.get("--test-time"), g.get("-n")) {
        (Some(t), _) => run.set("--duration", t),
        (None, Some("allkeys")) => {
            return Err((
                "-n",
                "allkeys is not taken; give a number of requests".into(),
            ))
        }
        (None, n) => {
            let each = number("-n", n.unwrap_or(REQUESTS))?;
            run.set("--requests", each.saturating_mul(clients).to_string());
        }
    }
    commands(g, run)?;
    if !g.has("--command") {
        run.set("--ratio", g.get("--ratio").unwrap_or(RATIO));
    }
    if !g.has("--data-size-range") && !g.has("--data-size-list") {
        run.set("--value-size", g.get("-d").unwrap_or(DATA_SIZE));
    }
    for (peer, flag) in [
        ("--pipeline", "--pipeline"),
        ("--data-size-range", "--data-size-range"),
        ("--data-size-list", "--data-size-list"),
        ("--key-prefix", "--key-prefix"),
        ("--key-minimum", "--key-minimum"),
        ("--key-maximum", "--key-maximum"),
        ("--key-zipf-exp", "--key-zipf-exp"),
        ("--select-db", "--dbnum"),
    ] {
        run.pass(g, peer, flag);
    }
    if !g.has("--command") {
        run.pass(g, "--key-pattern", "--key-pattern");
    }
    if let Some(r) = g.get("--rate-limiting") {
        let each = number("--rate-limiting", r)?;
        run.set("--rate", each.saturating_mul(clients).to_string());
    }
    Ok(())
}

/// memtier's `--command`s, each with the `--command-ratio` and
/// `--command-key-pattern` given after it (before the next command), as
/// memtier applies them: one of each per command on the run line.
fn commands(g: &Given, run: &mut Run) -> Result<(), Bad> {
    let mut each: Vec<(&str, &str, &str)> = Vec::new();
    for (name, value) in &g.flags {
        let v = value.as_deref().unwrap_or_default();
        match (*name, each.last_mut()) {
            ("--command", _) => each.push((v, "1", "R")),
            ("--command-ratio", Some(c)) => c.1 = v,
            ("--command-key-pattern", Some(c)) => c.2 = v,
            ("--command-ratio" | "--command-key-pattern", None) => {
                return Err((name, "comes after the --command it is for".into()))
            }
            _ => {}
        }
    }
    for (command, _, _) in &each {
        run.set("--command", *command);
    }
    for (_, ratio, _) in &each {
        run.set("--command-ratio", *ratio);
    }
    for (_, _, pattern) in &each {
        run.set("--command-key-pattern", *pattern);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;

    #[test]
    fn clients_and_requests_are_multiplied_out() {
        let w = run(
            Peer::MemtierBenchmark,
            &[
                "-s",
                "127.0.0.1",
                "-p",
                "6379",
                "-c",
                "5",
                "-t",
                "2",
                "-n",
                "100",
                "--ratio=1:4",
            ],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--target redis://127.0.0.1:6379 --threads 2 --clients 10 --requests 1000 --ratio 1:4 --value-size 32"
        );
        let w = run(
            Peer::MemtierBenchmark,
            &["--test-time", "3", "-d", "100", "--key-pattern", "G:G"],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--threads 4 --clients 200 --duration 3 --ratio 1:10 --value-size 100 --key-pattern G:G"
        );
        let w = run(
            Peer::MemtierBenchmark,
            &[
                "--command=SET __key__ __data__",
                "--command-ratio=2",
                "--ratio=1:1",
                "--command",
                "GET __key__",
                "--command-key-pattern=P",
                "-n",
                "5",
            ],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--threads 4 --clients 200 --requests 1000 --command SET __key__ __data__ --command GET __key__ \
             --command-ratio 2 --command-ratio 1 --command-key-pattern R --command-key-pattern P --value-size 32"
        );
        let e = run(Peer::MemtierBenchmark, &["--command-ratio", "2"]).unwrap_err();
        assert!(e.starts_with("memtier_benchmark --command-ratio: "), "{e}");
        let e = run(Peer::MemtierBenchmark, &["-P", "memcache_text"]).unwrap_err();
        assert!(e.starts_with("memtier_benchmark -P: "), "{e}");
    }
}
