//! The `loadrig` binary: flags (`flags/`, a peer's line through `peers/`)
//! -> run spec and target (`launch.rs`) -> plan (`plan.rs`) -> session
//! (`session/`) -> report -> presentation (`loadrig_present`). This file
//! is the one exit point: it prints an error as one line and picks the
//! exit code (docs/reference/exit-codes.md); each command is one line of
//! [`execute`].

mod ab;
mod capacity;
mod exit;
mod export;
mod flags;
mod habits;
mod launch;
mod listing;
mod machine;
mod manual;
mod peers;
mod pin;
mod plan;
mod session;
mod signals;
mod start;
mod sweep;

use clap::{ArgMatches, CommandFactory, FromArgMatches};

use flags::{Cli, Command};
use launch::Launch;

fn main() {
    let code = code();
    let code = match loadrig_present::out::stdout_failure() {
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
                loadrig_present::say_part!("{text}");
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
                let line = format!("{context}{}", loadrig_present::one_line(&e));
                eprintln!("error: {}", loadrig_spec::printable(&line));
                exit::code_of(&e)
            }
        },
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                loadrig_present::say_part!("{e}");
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
                // clap's tip to pass a word after `--` is dropped: after
                // `--`, run redis sends the words to Redis as a command.
                let mut lines = text.lines().map(str::trim).filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                        && !l.contains("tip: to pass '")
                });
                let first = lines.next().unwrap_or("error: bad usage").to_string();
                let mut rest: Vec<&str> = lines
                    .map(|l| l.trim_start_matches('[').trim_end_matches(']'))
                    .collect();
                rest.extend(habits::refusal_hint(&e));
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
            listing::targets();
            Ok(exit::OK)
        }
        Command::Workloads => {
            listing::workloads();
            Ok(exit::OK)
        }
        Command::Run { workload } => Launch::open(&workload)?.run(matches),
        Command::Prepare { workload } => Launch::open(&workload)?.prepare(),
        Command::Teardown { workload } => Launch::open(&workload)?.teardown(),
        Command::Verify(v) => launch::verify(&v),
        Command::Merge(m) => loadrig_present::merge::run(&loadrig_present::merge::MergeArgs {
            reports: &m.reports,
            prepared: m.prepared.as_deref(),
            out: m.out.as_deref(),
            force: m.force,
        }),
        Command::Compare(c) => {
            loadrig_present::compare::run(&c.baseline, &c.candidate, c.max_regression)
        }
        Command::Plot(p) => loadrig_present::plot::run(&p.files, &p.out, p.gnuplot.as_deref()),
        Command::Report(r) => loadrig_present::plot::html::report_command(&r.reports, &r.out),
        Command::Sweep(s) => sweep::run(&s),
        Command::Capacity(c) => capacity::run(&c),
        Command::Ab(a) => ab::run(&a),
        // Taken apart into a `run` line before this (`main`).
        Command::RedisBenchmark(_)
        | Command::MemtierBenchmark(_)
        | Command::Memaslap(_)
        | Command::NatsBench(_)
        | Command::Wrk(_)
        | Command::Pgbench(_) => Ok(exit::USAGE),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { markdown: true, .. } => manual::markdown(),
        Command::Man { dir, .. } => manual::man(dir.as_deref()),
    }
}

/// See [`PARSE_ONLY_ENV`].
fn parse_only(command: &Command) -> anyhow::Result<i32> {
    match command {
        Command::Run { workload }
        | Command::Prepare { workload }
        | Command::Teardown { workload } => {
            let launch = Launch::open(workload)?;
            loadrig_present::say!("{}", loadrig_present::print::header(&launch.spec));
        }
        _ => loadrig_present::say!("parsed"),
    }
    Ok(exit::OK)
}
