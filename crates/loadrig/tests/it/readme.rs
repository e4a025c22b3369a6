//! The README's and the guides' commands, run: every `loadrig ...` line
//! of the fenced code blocks of README.md and docs/guides/*.md goes
//! through the real binary against the real servers,
//! scaled down by the rewrites in [`SCALE`] and [`PATHS`], or is listed in
//! [`EXCLUDED`] with the reason it cannot run here. A block's commands run
//! in order in one scratch directory (a report one writes, the next one
//! merges, verifies or plots). A command shown with its output (`$ loadrig
//! ...` then what it printed) must print lines of the same shape.
//!
//! Blocks marked ```sh hold commands, one a line (`\` continues one,
//! `#` starts a comment); a plain block holds output, and commands only
//! after a `$ ` prompt.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common::{hold, need_server, Run, BIN};

/// Commands that cannot run here: a substring of the command, and why.
/// One that matches no command of any file the test reads is stale and
/// fails the test.
const EXCLUDED: &[(&str, &str)] = &[
    (
        "loadrig sweep --param 'target=redis://127.0.0.1:6379;redis://127.0.0.1:6379,6380;...'",
        "redis-servers on 6380-6382 that scripts/redis-graphs starts, and `...` in the list",
    ),
    (
        "loadrig wrk -t1 -c50 -d10s http://127.0.0.1:$p/",
        "a line of a shell loop ($p); the same `loadrig wrk` over four ports is \
         http.rs's `run http` over 8088-8091",
    ),
];

/// Scaling: in a command containing the first string, the value of the
/// flag (second) becomes the third (`-d60s` glued counts as the flag too).
/// Each keeps the command's shape and makes it take about a second.
const SCALE: &[(&str, &str, &str, &str)] = &[
    // capacity's probes and ab's rounds: a second each, two rounds.
    (
        "loadrig capacity ",
        "--probe-duration",
        "1s",
        "probe length",
    ),
    ("loadrig ab ", "--rounds", "2", "rounds"),
    ("loadrig ab ", "-d", "1s", "each round's runs"),
    // Counts: a few thousand operations, not 100,000s.
    ("loadrig run ", "-n", "2000", "counts"),
    ("loadrig redis-benchmark ", "-n", "2000", "counts"),
    ("loadrig nats-bench ", "-n", "2000", "counts"),
    // `run redis` runs every test (21) with -n each.
    ("loadrig run redis", "-n", "500", "counts per test"),
    ("-- run redis", "-n", "500", "counts per point of a sweep"),
    // Durations: one second (an open loop still schedules, laps still print).
    ("loadrig run ", "-d", "1s", "durations"),
    ("loadrig run ", "--duration", "1", "durations"),
    (
        "-- run ",
        "-d",
        "300ms",
        "durations of a sweep's points (8 and 9 of them)",
    ),
    ("loadrig wrk ", "-d", "1s", "wrk's duration (glued: -d60s)"),
    (
        "loadrig memtier_benchmark ",
        "--test-time",
        "1",
        "memtier's duration",
    ),
    ("loadrig memaslap ", "-t", "1s", "memaslap's duration"),
    (
        "--stages",
        "--stages",
        "1s:2000,1s:=2000",
        "a ramp and a hold of a second each",
    ),
    (
        "--warmup",
        "--warmup",
        "1s",
        "warm-up before the measured second",
    ),
    // Chut's largest run is 15,000 clients: two groups here.
    ("loadrig run chat ", "-G", "2", "chat groups"),
    // Three processes on VoltDB: two (each a debug build connecting its clients).
    ("loadrig run ", "--processes", "2", "processes"),
    (
        "loadrig run ",
        "--start-delay",
        "2",
        "a start far enough for two debug processes",
    ),
    // A rate that the debug build meets on a shared machine.
    (
        "loadrig run voter -n 1M",
        "--rate",
        "2k",
        "the open loop's rate",
    ),
];

/// Runs whose size comes from defaults: these get a size added when
/// they name none (the prefix the command starts with, what is added).
const DEFAULT_SIZED: &[(&str, &str, &str)] = &[
    // Voter, Hello: 100,000 operations by default.
    (
        "loadrig run voter",
        "-n 2000",
        "Voter's default 100,000 votes",
    ),
    (
        "loadrig run hello",
        "-n 2000",
        "Hello's default 100,000 inserts",
    ),
    // kv: 60 s and 1,000,000 rows loaded first.
    (
        "loadrig run kv",
        "-d 1s --rows 1000 -c 10",
        "kv's default 100 clients, 60 s over 1,000,000 rows",
    ),
    // redis: 21 tests of 100,000 each.
    (
        "loadrig run redis",
        "-n 500",
        "redis-benchmark's default 100,000 per test",
    ),
    ("loadrig run memcache", "-d 1s", "memaslap's default 600 s"),
    (
        "loadrig run pubsub",
        "-n 2000",
        "nats-bench's default 100,000 messages",
    ),
    ("loadrig run chat", "--duration 1", "Chut's T = 10 s"),
    ("loadrig run http", "-d 1s", "wrk's default 10 s"),
];

/// Flags that size a run: a command naming one is not given a default size.
const SIZING: &[&str] = &[
    "--help",
    "-n",
    "-d",
    "--duration",
    "--requests",
    "--test-time",
];

/// Paths outside the scratch directory, and placeholders, as the test
/// writes them (`{dir}`: the block's scratch directory).
const PATHS: &[(&str, &str)] = &[
    // SQLite files and such under /tmp: the block's directory.
    ("/tmp/", "{dir}/"),
    // Installed files: into the scratch directory.
    ("/etc/bash_completion.d/loadrig", "loadrig.bash"),
    ("/usr/local/share/man/man1", "man1"),
    // A chart written into the repository: beside the others.
    ("docs/img/", ""),
    // `-t set,get,...,mset`: the tests named, without the ellipsis.
    (",...,", ","),
    // A file the repository holds, named from its root: from the test's
    // scratch directory, by its full path.
    (
        "docs/examples/",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples/"),
    ),
];

/// The placeholder `URL` (a whole word): a SQLite file for the many-hosts
/// sequence, nginx's WebDAV directory for `run http`.
fn url_for(command: &str, dir: &Path) -> String {
    if command.contains("loadrig run http") {
        "http://127.0.0.1:8088/dav/".into()
    } else {
        format!("sqlite://{}/hosts.db", dir.display())
    }
}

/// Exit codes other than 0 the README allows (a substring, the codes, why).
const EXIT_CODES: &[(&str, &[i32], &str)] = &[
    (
        "loadrig ab ",
        &[0, 10, 11],
        "a verdict: PASS, FAIL or INCONCLUSIVE, which two scaled-down rounds may not decide",
    ),
    (
        "loadrig capacity ",
        &[0, 1],
        "exit 1 when even the first rate fails, as a probe judged INVALID (punctuality) \
         on a machine busy with the suite does",
    ),
    (
        "--threshold 'p99<5ms'",
        &[0, 1],
        "a CI gate: exit 1 when p99 is over 5 ms, which a shared machine may be",
    ),
    (
        "--method POST",
        &[1],
        "scripts/services' nginx takes no POST: every answer a 4xx, counted as failed",
    ),
];

/// Files a command reads that the README never shows being written:
/// made before the first command that names them (not after `--out`,
/// `-o` or `>`), in the block's directory. `Some(args)`: by loadrig;
/// `None`: by [`fixture_text`].
const FIXTURES: &[(&str, Option<&[&str]>)] = &[
    (
        "r.json",
        Some(&["run", "voter", "-n", "2000", "-q", "--out", "r.json"]),
    ),
    (
        "base.json",
        Some(&["run", "voter", "-n", "2000", "-q", "--out", "base.json"]),
    ),
    // Two shards of one run: `merge a.json b.json` joins them.
    (
        "a.json",
        Some(&[
            "run", "voter", "--target", "null://", "-n", "2000", "-q", "--shard", "0/2", "--out",
            "a.json",
        ]),
    ),
    (
        "b.json",
        Some(&[
            "run", "voter", "--target", "null://", "-n", "2000", "-q", "--shard", "1/2", "--out",
            "b.json",
        ]),
    ),
    // new.json is base.json again: compare's exit code does not hang on timing.
    ("new.json", None),
    // redis-benchmark's --csv files, as loadrig's redis-benchmark writes them.
    ("localhost.csv", None),
    ("kernel.csv", None),
    ("onload.csv", None),
    ("redis-benchmark.csv", None),
    // start_ms.sh's memaslap configuration (peers.rs has the same).
    ("ms.cfg", None),
    ("req.json", None),
    // A sweep's CSV (docs/guides/charts.md plots one it did not make).
    (
        "sweep/sweep.csv",
        Some(&[
            "sweep",
            "--param",
            "clients=1,2",
            "-o",
            "sweep",
            "--",
            "run",
            "voter",
            "--target",
            "null://",
            "-n",
            "200",
        ]),
    ),
];

fn fixture_text(name: &str, dir: &Path) -> Vec<u8> {
    match name {
        "new.json" => {
            make_fixture("base.json", dir);
            std::fs::read(dir.join("base.json")).unwrap()
        }
        "localhost.csv" | "kernel.csv" | "onload.csv" | "redis-benchmark.csv" => {
            need_server("redis", 6379);
            let _redis = hold("redis-db0");
            let r = loadrig_in(
                dir,
                &["redis-benchmark", "-t", "set,get", "-n", "1000", "--csv"],
            );
            assert_eq!(r.code, 0, "{name}: {}", r.dump());
            r.stdout.into_bytes()
        }
        "ms.cfg" => b"key\n16 16 1\nvalue\n128 128 1\ncmd\n0 0.1\n1 0.9\n".to_vec(),
        "req.json" => b"{\"hello\": 1}\n".to_vec(),
        _ => unreachable!("{name} has no text"),
    }
}

fn make_fixture(name: &str, dir: &Path) {
    if dir.join(name).exists() {
        return;
    }
    let (_, how) = FIXTURES.iter().find(|(n, _)| *n == name).unwrap();
    match how {
        Some(args) => {
            let r = loadrig_in(dir, args);
            assert_eq!(r.code, 0, "fixture {name}: {}", r.dump());
        }
        None => {
            let body = fixture_text(name, dir);
            std::fs::write(dir.join(name), body).unwrap();
        }
    }
}

fn loadrig_in(dir: &Path, args: &[&str]) -> Run {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the loadrig binary runs")
        .into()
}

/// One command as the README writes it.
#[derive(Debug)]
struct Cmd {
    /// Its first line in README.md.
    line: usize,
    text: String,
    /// The output shown after it (`$ ` prompt blocks), if any.
    sample: Vec<String>,
    /// Run as written (an [`OUTPUTS`] sample's size), or scaled down.
    scaled: bool,
}

/// Output blocks shown apart from their command (after some prose): the
/// line the block starts with, and the command that prints it. Run at the
/// README's size: the standings' winner is the one of that many votes.
const OUTPUTS: &[(&str, &str)] = &[(
    "loadrig 0.1.0  voter on sqlite://  steady, direct, 32 clients, 100,000 ops, seed 42",
    // `cargo run --release -- run voter` in "Two commands".
    "loadrig run voter",
)];

/// A fenced block's `loadrig` commands, in order.
#[derive(Debug)]
struct Block {
    /// The file it is in, from the repository's root (`README.md`).
    file: String,
    cmds: Vec<Cmd>,
}

/// The text before a `#` that starts a comment (outside quotes, at the
/// start or after a space).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// Whether a command line runs loadrig (after `VAR=value` assignments).
fn runs_loadrig(text: &str) -> bool {
    let mut words = text.split_whitespace();
    loop {
        match words.next() {
            Some("loadrig") => return true,
            Some(w) if w.contains('=') && !w.starts_with('-') => continue,
            _ => return false,
        }
    }
}

fn blocks(file: &str, readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = readme.lines().enumerate().map(|(i, l)| (i + 1, l));
    while let Some((_, l)) = lines.next() {
        let Some(info) = l.strip_prefix("```") else {
            continue;
        };
        let shell = matches!(info.trim(), "sh" | "bash" | "shell" | "console");
        let mut block = Block {
            file: file.to_string(),
            cmds: Vec::new(),
        };
        let mut pending: Option<(usize, String)> = None;
        let mut plain: Vec<(usize, String)> = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            plain.push((n, l.to_string()));
            let prompt = l.strip_prefix("$ ");
            if let Some((start, mut text)) = pending.take() {
                // A continued line.
                let part = strip_comment(l).trim();
                match part.strip_suffix('\\') {
                    Some(more) => {
                        text.push(' ');
                        text.push_str(more.trim());
                        pending = Some((start, text));
                    }
                    None => {
                        text.push(' ');
                        text.push_str(part);
                        push_cmd(&mut block, start, text);
                    }
                }
            } else if shell || prompt.is_some() {
                let text = strip_comment(prompt.unwrap_or(l)).trim();
                match text.strip_suffix('\\') {
                    Some(more) => pending = Some((n, more.trim().to_string())),
                    None => push_cmd(&mut block, n, text.to_string()),
                }
            } else if let Some(last) = block.cmds.last_mut() {
                // Output shown after a `$ ` prompt's command.
                last.sample.push(l.to_string());
            }
        }
        let output_of = plain
            .first()
            .and_then(|(_, first)| OUTPUTS.iter().find(|(o, _)| first.starts_with(o)));
        if let (false, true, Some((_, cmd))) = (shell, block.cmds.is_empty(), output_of) {
            block.cmds.push(Cmd {
                line: plain[0].0,
                text: cmd.to_string(),
                sample: plain.into_iter().map(|(_, l)| l).collect(),
                scaled: false,
            });
        }
        if !block.cmds.is_empty() {
            out.push(block);
        }
    }
    out
}

fn push_cmd(block: &mut Block, line: usize, text: String) {
    // Only loadrig's lines (other programs' are the reader's business).
    if runs_loadrig(&text) {
        block.cmds.push(Cmd {
            line,
            text,
            sample: Vec::new(),
            scaled: true,
        });
    }
}

/// The command as the test runs it: scaled, paths in the scratch directory.
fn rewrite(text: &str, dir: &Path) -> String {
    let mut words: Vec<String> = text.split_whitespace().map(String::from).collect();
    for (within, flag, value, _why) in SCALE {
        if !text.contains(within) {
            continue;
        }
        let mut i = 0;
        while i < words.len() {
            if words[i] == *flag && i + 1 < words.len() {
                words[i + 1] = value.to_string();
            } else if flag.len() == 2
                && words[i].starts_with(flag)
                && words[i][2..].starts_with(|c: char| c.is_ascii_digit())
            {
                words[i] = format!("{flag}{value}");
            }
            i += 1;
        }
    }
    // `--` ends loadrig's flags in `run redis ... -- SET ...` and starts the
    // child's in a sweep: the run's own flags are those before it, or before
    // a pipe or a redirection.
    let own_end = words
        .iter()
        .position(|w| ["--", "|", ">"].contains(&w.as_str()))
        .unwrap_or(words.len());
    let cmd = words.join(" ");
    let sized = words[..own_end]
        .iter()
        .any(|w| SIZING.contains(&w.as_str()) || glued_size(w));
    // `--stages` sets the run's length: of what is added, only the rest.
    let staged = words[..own_end].iter().any(|w| w == "--stages");
    if let Some((_, add, _why)) = DEFAULT_SIZED
        .iter()
        .find(|(within, _, _)| cmd.contains(within))
        .filter(|_| !sized)
    {
        let mut added: Vec<String> = add.split_whitespace().map(String::from).collect();
        if staged {
            let pairs: Vec<[String; 2]> = added
                .chunks(2)
                .filter(|p| !["-n", "-d"].contains(&p[0].as_str()))
                .map(|p| [p[0].clone(), p.get(1).cloned().unwrap_or_default()])
                .collect();
            added = pairs
                .into_iter()
                .flatten()
                .filter(|w| !w.is_empty())
                .collect();
        }
        words.splice(own_end..own_end, added);
    }
    // A line of a loop run in the background (`... &`): in the foreground,
    // for its exit code.
    if words.last().is_some_and(|w| w == "&") {
        words.pop();
    }
    let dir_text = dir.display().to_string();
    for w in words.iter_mut() {
        for (from, to) in PATHS {
            *w = w.replace(from, &to.replace("{dir}", &dir_text));
        }
        if w == "URL" {
            *w = url_for(text, dir);
        }
    }
    // Hosts that start at one wall-clock second: a second soon after now.
    if let Some(i) = words.iter().position(|w| w == "--start-at") {
        let start_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 2;
        if i + 1 < words.len() {
            words[i + 1] = start_at.to_string();
        }
    }
    words.join(" ")
}

/// `-d3s`: wrk's duration glued to its flag.
fn glued_size(w: &str) -> bool {
    w.len() > 2 && w.starts_with("-d") && w[2..].starts_with(|c: char| c.is_ascii_digit())
}

/// The servers a command talks to: (name for `need_server`, port, the
/// lock other tests take for it, if any), in the one order locks are taken.
fn servers(text: &str) -> Vec<(&'static str, u16, Option<&'static str>)> {
    let mut s = Vec::new();
    let has = |w: &str| text.contains(w);
    if has("postgres://") {
        s.push(("postgres", 5432, Some("postgres")));
    }
    if has("mariadb://") || has("mysql://") {
        s.push(("mariadb", 3306, Some("mariadb")));
    }
    if has("run memcache") || has("loadrig memaslap") {
        s.push(("memcached", 11211, Some("memcached")));
    }
    let redis_target = has("--target redis://") || has("--target rediss://");
    if has("redis+cluster://") || has(" --cluster ") {
        s.push(("redis-cluster", 7001, Some("redis-cluster")));
    } else if has("run redis")
        || has("redis-benchmark ")
        || has("memtier_benchmark")
        || redis_target
    {
        s.push(("redis", 6379, Some("redis-db0")));
    }
    if has("rediss://") {
        s.push(("redis-tls", 6380, None));
    }
    // The second plain Redis of the lines that run over several servers.
    if has("6379,6389") {
        s.push(("redis-2", 6389, None));
    }
    // The lock voltdb.rs and voltdb_cluster.rs take (one shared by the
    // servers without their own: taken once at most, a second would wait
    // on the first).
    if has("voltdb://127.0.0.1:21231") {
        s.push(("voltdb-cluster", 21231, Some("voltdb")));
    } else if has("voltdb://") {
        s.push(("voltdb", 21212, Some("voltdb")));
    }
    if has("etcd://127.0.0.1:23791") {
        s.push(("etcd-cluster", 23791, None));
    } else if has("etcd://") {
        s.push(("etcd", 2379, None));
    }
    if has("127.0.0.1:8088") || has("loadrig run http") || has("loadrig wrk") {
        s.push(("nginx", 8088, None));
    }
    // The lock every test that floods or counts a broker's messages takes
    // (common::hold): last, after redis-db0, as no test takes them the
    // other way round.
    let broker = has("run pubsub") || has("run chat") || has("nats-bench");
    if has("mqtts://") {
        s.push(("mosquitto-tls", 8883, Some("brokers")));
    } else if has("mqtt://") {
        s.push(("mosquitto", 1883, Some("brokers")));
    } else if has("tls://") && broker {
        s.push(("nats-tls", 4443, Some("brokers")));
    } else if broker && !redis_target {
        s.push(("nats", 4222, Some("brokers")));
    } else if broker {
        s.push(("redis", 6379, Some("brokers")));
    }
    s
}

/// The words a line of output starts with, up to the first with a digit
/// (numbers change from run to run, the words do not); empty for a line
/// of numbers or an elision (`...`).
fn shape(line: &str) -> Vec<&str> {
    line.split_whitespace()
        .take_while(|w| !w.contains(|c: char| c.is_ascii_digit()) && *w != "...")
        .collect()
}

/// Every sample line's first words begin a line of the output, in order.
fn check_shape(sample: &[String], printed: &str) -> Result<(), String> {
    let mut out = printed.lines();
    let mut wanted: Vec<Vec<&str>> = sample.iter().map(|l| shape(l)).collect();
    wanted.retain(|w| !w.is_empty());
    // A lap line a second: a shorter run prints fewer of them.
    wanted.dedup();
    for want in wanted {
        let found = out.by_ref().any(|l| shape(l).starts_with(&want));
        if !found {
            return Err(format!("no line starting `{}` in order", want.join(" ")));
        }
    }
    Ok(())
}

fn run_block(block: &Block) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    for cmd in &block.cmds {
        if EXCLUDED.iter().any(|(m, _)| cmd.text.contains(m)) {
            continue;
        }
        let line = if cmd.scaled {
            rewrite(&cmd.text, dir.path())
        } else {
            cmd.text.clone()
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        for (k, w) in words.iter().enumerate() {
            let written =
                k > 0 && ["--out", "-o", ">", "--html", "--hdr-log"].contains(&words[k - 1]);
            if !written && FIXTURES.iter().any(|(n, _)| n == w) {
                make_fixture(w, dir.path());
            }
        }
        let mut locks = Vec::new();
        for (name, port, lock) in servers(&line) {
            need_server(name, port);
            if let Some(lock) = lock {
                locks.push(hold(lock));
            }
        }
        let t = Instant::now();
        let r: Run = Command::new("bash")
            .args(["-o", "pipefail", "-c", &line])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .expect("bash runs")
            .into();
        drop(locks);
        let took = t.elapsed();
        eprintln!(
            "{}:{} {:.1}s exit {}: {line}",
            block.file,
            cmd.line,
            took.as_secs_f64(),
            r.code
        );
        failures.extend(judge(&block.file, cmd, &line, &r));
    }
    failures
}

/// What is wrong with a command's run, if anything: an exit code the
/// file does not allow (see [`EXIT_CODES`]), a panic, or output not of
/// the shape the file shows.
fn judge(file: &str, cmd: &Cmd, line: &str, r: &Run) -> Option<String> {
    let allowed: &[i32] = EXIT_CODES
        .iter()
        .find(|(m, _, _)| cmd.text.contains(m))
        .map_or(&[0], |(_, codes, _)| codes);
    let panicked = r.stderr.contains("panicked at");
    if !allowed.contains(&r.code) || panicked {
        return Some(format!(
            "{file}:{}: `{}` (run as `{line}`) exit {}, expected {allowed:?}\n{}",
            cmd.line,
            cmd.text,
            r.code,
            tail(&r.dump())
        ));
    }
    if cmd.sample.is_empty() {
        return None;
    }
    let printed = format!("{}{}", r.stdout, r.stderr);
    check_shape(&cmd.sample, &printed).err().map(|e| {
        format!(
            "{file}:{}: `{}`: its output is not the shape shown: {e}\n{}",
            cmd.line,
            cmd.text,
            tail(&r.dump())
        )
    })
}

/// The last lines of a run's output: enough to see why, short enough to
/// read many failures (wrk's spectrum is a hundred lines).
fn tail(dump: &str) -> String {
    let lines: Vec<&str> = dump.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// The files whose commands run: README.md, then docs/guides/*.md in
/// name order (their paths from the repository's root).
fn documents() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut guides: Vec<String> = std::fs::read_dir(root.join("docs/guides"))
        .expect("docs/guides is there")
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guides/{n}"))
        .collect();
    guides.sort();
    let mut out = vec!["README.md".to_string()];
    out.extend(guides);
    out
}

/// Every block of every file [`documents`] names.
fn all_blocks() -> Vec<Block> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        out.extend(blocks(&file, &text));
    }
    out
}

/// [`EXCLUDED`] entries that match no command of any
/// file the test reads (README.md shrinks, its lines move to guides: a
/// match anywhere keeps an entry).
fn stale_entries(blocks: &[Block]) -> Vec<String> {
    let texts: Vec<&str> = blocks
        .iter()
        .flat_map(|b| &b.cmds)
        .map(|c| c.text.as_str())
        .collect();
    let matched = |m: &str| texts.iter().any(|t| t.contains(m));
    EXCLUDED
        .iter()
        .filter(|(m, _)| !matched(m))
        .map(|(m, why)| format!("stale exclusion `{m}` ({why}): no command has it"))
        .collect()
}

#[test]
fn every_documented_command_runs() {
    let blocks = all_blocks();
    let total: usize = blocks.iter().map(|b| b.cmds.len()).sum();
    // The lines found (a parser that finds none checks nothing).
    assert!(
        total >= 60,
        "only {total} loadrig commands found: {blocks:#?}"
    );
    let samples = blocks.iter().flat_map(|b| &b.cmds).filter(|c| !c.scaled);
    assert_eq!(
        samples.count(),
        OUTPUTS.len(),
        "an output block of OUTPUTS no longer begins the way the table says"
    );
    let mut failures = stale_entries(&blocks);
    for block in &blocks {
        failures.extend(run_block(block));
    }
    assert!(
        failures.is_empty(),
        "{} of {total} commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The lines issue #48 found failing as printed, alone (the whole file's
/// test above runs them too, with everything else): the run over two
/// Redis servers (its second one scripts/services' redis-2, no server of
/// the test's own swapped in), memaslap's configuration file from the
/// repository, and the managed queue's overload with the gate off.
#[test]
fn the_lines_once_failing_run_as_printed() {
    const LINES: [&str; 3] = [
        "redis://127.0.0.1:6379,6389",
        "-F docs/examples/ms.cfg",
        "--queue 1000 --slots 100 --rate 50000",
    ];
    let (mut found, mut failures) = (0, Vec::new());
    for mut block in all_blocks() {
        block
            .cmds
            .retain(|c| LINES.iter().any(|l| c.text.contains(l)));
        // The overload is 2 s as printed, and scaled down it overloads
        // nothing: run it as printed.
        for c in &mut block.cmds {
            c.scaled &= !c.text.contains(LINES[2]);
        }
        found += block.cmds.len();
        failures.extend(run_block(&block));
    }
    assert!(found >= 5, "only {found} of the lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn commands_are_found_as_written() {
    let md = "text\n```sh\n# a comment\nPGPASSWORD=x loadrig run voter -n 5   # why\n\
              loadrig sweep --param a=1 \\\n    -- run voter -d 10s\nredis-cli ping\n```\n\
              ```\nloadrig 0.1.0  voter on sqlite://\n```\n\
              ```\n$ loadrig wrk -d3s URL\nloadrig 0.1.0  http on\nkind  measure  count\n```\n";
    let b = blocks("t.md", md);
    let cmds: Vec<(usize, &str)> = b
        .iter()
        .flat_map(|b| b.cmds.iter().map(|c| (c.line, c.text.as_str())))
        .collect();
    assert_eq!(
        cmds,
        [
            (4, "PGPASSWORD=x loadrig run voter -n 5"),
            (5, "loadrig sweep --param a=1 -- run voter -d 10s"),
            (13, "loadrig wrk -d3s URL"),
        ]
    );
    assert_eq!(b[1].cmds[0].sample.len(), 2);
    let dir = Path::new("/d");
    assert_eq!(
        rewrite("loadrig wrk -t2 -c50 -d60s http://h/", dir),
        "loadrig wrk -t2 -c50 -d1s http://h/"
    );
    assert_eq!(
        rewrite(
            "loadrig run voter --target sqlite:///tmp/v.db --out - | jq .x",
            dir
        ),
        "loadrig run voter --target sqlite:///d/v.db --out - -n 2000 | jq .x"
    );
    assert!(check_shape(
        &["kind  measure  count 5".into(), "  at 1.0s lap".into()],
        "x\nkind  measure  count 7\n  at 2.0s lap 5\n"
    )
    .is_ok());
    assert!(check_shape(&["overall: 5".into()], "over: 5\n").is_err());
}
