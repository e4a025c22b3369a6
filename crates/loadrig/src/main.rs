//! The `loadrig` binary: flags -> run spec -> plan -> engine -> report ->
//! printers. This file is the one exit point: it prints an error as one
//! line and picks the exit code (docs/engine.md section 7).

mod compare;
mod exit;
mod flags;
mod machine;
mod manual;
mod merge;
mod peers;
mod pin;
mod plan;
mod plot;
mod print;
mod run;
mod signals;
mod start;
mod sweep;
mod verify;

use anyhow::Context;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use loadrig_report::Report;

use flags::{Cli, Command};

/// A line on standard output. A reader that went away (`loadrig targets |
/// head -1`) is not an error: what is left to print is dropped, quietly.
/// Any other failure (a full disk) is kept, and the exit point says so
/// and exits 2: a report or table lost is not a result ([`stdout_written`]).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::stdout_written(writeln!(std::io::stdout().lock(), $($arg)*));
    }};
}

/// [`say!`] without the line's end.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        $crate::stdout_written(write!(out, $($arg)*).and_then(|()| out.flush()));
    }};
}

/// The first failure to write standard output, other than its reader
/// going away.
static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Keep `r`'s failure, if it is one that loses output.
pub fn stdout_written(r: std::io::Result<()>) {
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = STDOUT_FAILED.set(e.to_string());
        }
    }
}

fn main() {
    let code = code();
    // What is still buffered goes now, so its failure is seen too.
    stdout_written(std::io::Write::flush(&mut std::io::stdout()));
    let code = match STDOUT_FAILED.get() {
        Some(e) => {
            eprintln!("error: writing standard output: {e}");
            code.max(exit::USAGE)
        }
        None => code,
    };
    std::process::exit(code);
}

/// What the program does and the code it exits with.
fn code() -> i32 {
    // The matches are kept: a parent of --processes passes the flags the
    // user gave on to its children, as given.
    let mut parsed = parse(std::env::args_os());
    // A peer's command line becomes a `run` line, parsed as one; its
    // errors say which line they come from (they name loadrig's flags).
    let mut context = String::new();
    if let Some((peer, args)) = parsed.as_ref().ok().and_then(|(cli, _)| cli.command.peer()) {
        match peer.line(args) {
            Ok(peers::Line::Run { args, notes }) => {
                for n in notes {
                    eprintln!("{}", loadrig_spec::printable(&n));
                }
                context = format!("{} as `loadrig {}`: ", peer.name(), peer.run_words(&args));
                parsed = parse(args);
            }
            Ok(peers::Line::Help(text)) => {
                crate::say_part!("{text}");
                return exit::OK;
            }
            Err(e) => {
                eprintln!("error: {}", loadrig_spec::printable(&e.to_string()));
                return exit::USAGE;
            }
        }
    }
    match parsed {
        Ok((cli, matches)) => match execute(cli, &matches) {
            Ok(code) => code,
            Err(e) => {
                let line = format!("{context}{}", one_line(&e));
                eprintln!("error: {}", loadrig_spec::printable(&line));
                exit::code_of(&e)
            }
        },
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                crate::say_part!("{e}");
                exit::OK
            }
            // `loadrig` or `loadrig run` alone: the help, as a usage error
            // (a script that ran it meant something else).
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                eprint!("{e}");
                exit::USAGE
            }
            _ => {
                // clap's message and its tip ("a similar argument
                // exists"), on one line; the usage text it adds is one
                // `--help` away.
                let text = e.to_string();
                let mut lines = text.lines().map(str::trim).filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                });
                let first = lines.next().unwrap_or("error: bad usage").to_string();
                let rest: Vec<&str> = lines
                    .map(|l| l.trim_start_matches('[').trim_end_matches(']'))
                    .collect();
                let line = match rest.is_empty() {
                    true => first,
                    false => format!("{first} ({})", rest.join("; ")),
                };
                let line = match line.strip_prefix("error: ") {
                    Some(message) if !context.is_empty() => format!("error: {context}{message}"),
                    _ => line,
                };
                eprintln!("{}", loadrig_spec::printable(&line));
                exit::USAGE
            }
        },
    }
}

/// The command line as clap takes it apart, with the matches kept.
fn parse(
    words: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<(Cli, ArgMatches), clap::Error> {
    Cli::command()
        .try_get_matches_from(words)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)))
}

/// The error and its causes on one line.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}

/// With this variable set (to anything), the binary parses its command
/// line and stops before it reads, connects or writes anything: the flags
/// (clap), and for `run`, `prepare` and `teardown` the second stage too (the
/// target URL, environment included, and the run spec). It prints the run's
/// header line, or `parsed`, and exits 0. How the Kubernetes manifests'
/// command lines are checked without a cluster (tests/it/kube.rs), the argv
/// exactly as a pod would run it.
const PARSE_ONLY_ENV: &str = "LOADRIG_PARSE_ONLY";

fn execute(cli: Cli, matches: &ArgMatches) -> anyhow::Result<i32> {
    if std::env::var_os(PARSE_ONLY_ENV).is_some() {
        return parse_only(&cli.command);
    }
    match cli.command {
        Command::Targets => {
            print_targets();
            Ok(exit::OK)
        }
        Command::Workloads => {
            print_workloads();
            Ok(exit::OK)
        }
        Command::Run { workload } => {
            let (target, mut spec) = open_run(&workload)?;
            let args = workload.parts()?.run;
            machine::admit(&spec)?;
            if let Some(out) = &args.out {
                check_out(out, args.csv)?;
            }
            if let Some(start) = args.start() {
                start.check(std::time::SystemTime::now())?;
            }
            if spec.realtime {
                // Tried here, and given up at once, so that a process that
                // may not gets one line before anything connects.
                loadrig_engine::Fifo::enter().map_err(|e| {
                    loadrig_spec::SpecError::new(
                        "--realtime",
                        format!(
                            "this process may not use SCHED_FIFO ({e}): it needs root, \
                             CAP_SYS_NICE or a real-time priority limit (ulimit -r)"
                        ),
                    )
                })?;
            }
            if spec.awake {
                // Likewise: the request is made and withdrawn at once.
                loadrig_engine::Awake::enter().map_err(|e| {
                    loadrig_spec::SpecError::new(
                        "--awake",
                        format!(
                            "cannot ask the kernel to keep the CPUs awake ({e}): it needs root"
                        ),
                    )
                })?;
            }
            if args.child && !signals::die_with_parent() {
                anyhow::bail!("the parent of this --child process is gone");
            }
            // Each process on a CPU of its own: the parent hands them out,
            // any other process pins itself before its threads start.
            let cpus = args
                .cpus
                .as_deref()
                .map(pin::parse_list)
                .transpose()
                .map_err(|e| loadrig_spec::SpecError::new("--cpus", e))?;
            let parent = !args.child && spec.processes > 1;
            let cpus = pin::plan(
                args.pin,
                cpus.as_deref(),
                if parent { spec.processes } else { 1 },
            )?;
            let role = if args.child {
                run::Role::Child
            } else if parent {
                let mut child = flags::child_line(matches);
                flags::share_subject(&mut spec, &mut child);
                run::Role::Parent {
                    child,
                    cpus: cpus.clone(),
                }
            } else {
                run::Role::Single
            };
            if let (false, Some(&cpu)) = (parent, cpus.as_deref().and_then(<[usize]>::first)) {
                pin::pin(cpu).with_context(|| format!("pinning this process to CPU {cpu}"))?;
            }
            let opts = run::Options {
                quiet: args.quiet,
                resources: args.resources,
                server_stats: args.server_stats == flags::OnOff::On,
                csv: args.csv,
                json: args.json,
                out: args.out.clone(),
                hdr_log: args.hdr_log.clone(),
                html: args.html.clone(),
                start: args.start(),
                role,
            };
            runtime()?.block_on(plan::run(&spec, target, &opts))
        }
        Command::Prepare { workload } => {
            let (target, spec) = open_run(&workload)?;
            let args = workload.parts()?.run;
            if let Some(out) = &args.out {
                check_out(out, false)?;
            }
            runtime()?.block_on(plan::prepare(
                &spec,
                target,
                args.out.as_deref(),
                args.quiet,
            ))
        }
        Command::Teardown { workload } => {
            let (target, spec) = open_run(&workload)?;
            let quiet = workload.parts()?.run.quiet;
            runtime()?.block_on(plan::teardown(&spec, target, quiet))
        }
        Command::Merge(m) => merge::run(&m),
        Command::Compare(c) => compare::run(&c.baseline, &c.candidate, c.max_regression),
        Command::Plot(p) => plot::run(&p.files, &p.out, p.gnuplot.as_deref()),
        Command::Report(r) => {
            let reports = r
                .reports
                .iter()
                .map(|p| Report::read(p).map(|rep| (plot::stem(p), rep)))
                .collect::<Result<Vec<_>, _>>()?;
            let refs: Vec<(String, &Report)> =
                reports.iter().map(|(n, r)| (n.clone(), r)).collect();
            plot::html::write_reports(&r.out, &refs)?;
            println!("wrote {}", r.out.display());
            Ok(exit::OK)
        }
        Command::Sweep(s) => sweep::run(&s),
        // Taken apart into a `run` line before this (`main`).
        Command::RedisBenchmark(_)
        | Command::MemtierBenchmark(_)
        | Command::Memaslap(_)
        | Command::NatsBench(_)
        | Command::Wrk(_) => Ok(exit::USAGE),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { dir } => manual::man(dir.as_deref()),
        Command::Verify(v) => {
            v.tls.apply()?;
            let report = Report::read(&v.report)?;
            let url = v
                .target
                .clone()
                .unwrap_or_else(|| report.spec.target.clone());
            // It opens what exists and creates nothing: a SQLite file that
            // is not there is refused, not made anew and found empty.
            if let Some(db) = sqlite_file(&url).filter(|db| !db.exists()) {
                anyhow::bail!(loadrig_spec::SpecError::new(
                    "--target",
                    format!("no SQLite database at {}: nothing to verify", db.display())
                ));
            }
            let target = plan::open(report.spec.workload.name(), Some(&url))?;
            runtime()?.block_on(plan::verify(&report, target))
        }
    }
}

/// See [`PARSE_ONLY_ENV`].
fn parse_only(command: &Command) -> anyhow::Result<i32> {
    match command {
        Command::Run { workload }
        | Command::Prepare { workload }
        | Command::Teardown { workload } => {
            let (_, spec) = open_run(workload)?;
            crate::say!("{}", print::header(&spec));
        }
        _ => crate::say!("parsed"),
    }
    Ok(exit::OK)
}

/// A workload's command line (`run`, `prepare`, `teardown`): the target
/// first, since it parses its URL and states the facts the spec is
/// resolved against, before anything connects.
fn open_run(
    workload: &flags::WorkloadArgs,
) -> anyhow::Result<(loadrig_targets::Target, loadrig_spec::RunSpec)> {
    let parts = workload.parts()?;
    check_files(parts.run, parts.target())?;
    parts.run.tls.apply()?;
    parts.run.apply_bind()?;
    parts.run.apply_io()?;
    parts.run.apply_limits();
    // The target first: it parses its URL and states the facts the spec
    // is resolved against, before anything connects.
    let target = plan::open(parts.workload.name(), Some(parts.target()))?;
    let spec = parts.spec(&target.facts(parts.target()))?;
    Ok((target, spec))
}

/// Each file a run writes named once, and none of them the SQLite
/// database it runs on (a report written over it would destroy it):
/// checked before anything opens.
fn check_files(run: &flags::RunArgs, target: &str) -> Result<(), loadrig_spec::SpecError> {
    use std::path::Path;
    let files: Vec<(&str, &Path)> = [
        ("--out", run.out.as_deref()),
        ("--html", run.html.as_deref()),
        ("--hdr-log", run.hdr_log.as_deref()),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.filter(|p| *p != Path::new("-")).map(|p| (flag, p)))
    .collect();
    let db = sqlite_file(target);
    for (i, (flag, path)) in files.iter().enumerate() {
        let bad = |why: String| loadrig_spec::SpecError::new(flag, why);
        if let Some((other, _)) = files[..i].iter().find(|(_, p)| same_file(p, path)) {
            return Err(bad(format!("{} is {other}'s file too", path.display())));
        }
        if db.is_some_and(|db| same_file(db, path)) {
            return Err(bad(format!(
                "{} is the SQLite database the run writes to",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The file a `sqlite://PATH` target names; none for a fresh temporary
/// database (`sqlite://`) or another target.
fn sqlite_file(target: &str) -> Option<&std::path::Path> {
    target
        .strip_prefix("sqlite://")
        .map(|rest| rest.split('?').next().unwrap_or(""))
        .filter(|p| !p.is_empty())
        .map(std::path::Path::new)
}

/// Whether two paths name one file: the same device and inode when both
/// exist, else the same absolute path.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
    }
}

/// `--out` must name a file that can be written, checked before the run
/// rather than found out after it: not a folder, in a folder that exists
/// and takes new files (the report is written there atomically).
fn check_out(out: &std::path::Path, csv: bool) -> Result<(), loadrig_spec::SpecError> {
    let bad = |why: String| loadrig_spec::SpecError::new("--out", why);
    if out == std::path::Path::new("-") {
        return match csv {
            true => Err(bad("- (standard output) is taken by --csv".to_string())),
            false => Ok(()),
        };
    }
    // A device or a FIFO is written in place (Report::write).
    if std::fs::metadata(out).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    if out.is_dir() {
        return Err(bad(format!("{} is a folder, not a file", out.display())));
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!("the folder {} does not exist", dir.display())));
    }
    tempfile::Builder::new()
        .prefix(".loadrig-out-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| bad(format!("cannot write in {}: {e}", dir.display())))
}

/// tokio's current-thread scheduler on the thread that runs `main`: it
/// connects, prepares, collects and prints, and is the engine's thread 0.
/// `--threads N` adds N - 1 engine threads of their own when the load
/// runs (`loadrig_engine::Threads`, thread-per-core), not a work-stealing
/// pool: a connection stays on one thread and records into that thread's
/// measurements.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(loadrig_engine::park_hook)
        .build()?)
}

fn print_targets() {
    let targets = loadrig_targets::TARGETS;
    let schemes: Vec<String> = targets.iter().map(|d| d.schemes.join(",")).collect();
    let workloads: Vec<String> = targets
        .iter()
        .map(|d| d.workloads().collect::<Vec<_>>().join(","))
        .collect();
    let w = |col: &[String], title: &str| {
        col.iter()
            .map(String::len)
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (ws, ww) = (w(&schemes, "schemes"), w(&workloads, "workloads"));
    let wn = targets
        .iter()
        .map(|d| d.name.len())
        .chain([8])
        .max()
        .unwrap_or(8);
    crate::say!(
        "{:<wn$} {:<ws$} {:<ww$} about",
        "target",
        "schemes",
        "workloads"
    );
    for ((d, s), wl) in targets.iter().zip(&schemes).zip(&workloads) {
        crate::say!("{:<wn$} {s:<ws$} {wl:<ww$} {}", d.name, d.about);
        crate::say!("{:<wn$} {:<ws$} {:<ww$} e.g. {}", "", "", "", d.example);
        if !d.stats.is_empty() {
            crate::say!(
                "{:<wn$} {:<ws$} {:<ww$} server stats per lap from {}: {}",
                "",
                "",
                "",
                d.stats_from,
                d.stats.iter().map(|s| s.1).collect::<Vec<_>>().join(", ")
            );
        }
    }
}

fn print_workloads() {
    let rows: Vec<(&str, String, &str)> = loadrig_workloads::WORKLOADS
        .iter()
        .map(|w| {
            let targets: Vec<&str> = loadrig_targets::TARGETS
                .iter()
                .filter(|d| d.runs(w.name))
                .map(|d| d.name)
                .collect();
            (w.name, targets.join(","), w.about)
        })
        .collect();
    let w = rows.iter().map(|r| r.1.len()).chain([7]).max().unwrap_or(7);
    crate::say!("{:<8} {:<w$} about", "workload", "targets");
    for (name, targets, about) in rows {
        crate::say!("{name:<8} {targets:<w$} {about}");
    }
}
