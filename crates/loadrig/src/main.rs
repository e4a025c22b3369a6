//! The `loadrig` binary: flags -> run spec -> plan -> engine -> report ->
//! printers. This file is the one exit point: it prints an error as one
//! line and picks the exit code (docs/engine.md section 7).

mod compare;
mod exit;
mod flags;
mod machine;
mod merge;
mod plan;
mod plot;
mod print;
mod run;
mod signals;
mod start;
mod sweep;
mod verify;

use clap::{ArgMatches, CommandFactory, FromArgMatches};
use loadrig_report::Report;

use flags::{Cli, Command};

/// A line on standard output. A reader that went away (`loadrig targets |
/// head -1`) is not an error: what is left to print is dropped, quietly.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// [`say!`] without the line's end.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = write!(out, $($arg)*);
        let _ = out.flush();
    }};
}

fn main() {
    // The matches are kept: a parent of --processes passes the flags the
    // user gave on to its children, as given.
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let code = match parsed {
        Ok((cli, matches)) => match execute(cli, &matches) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {}", loadrig_spec::printable(&one_line(&e)));
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
                eprintln!("{}", loadrig_spec::printable(&line));
                exit::USAGE
            }
        },
    };
    std::process::exit(code);
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

fn execute(cli: Cli, matches: &ArgMatches) -> anyhow::Result<i32> {
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
            let parts = workload.parts()?;
            let args = parts.run;
            // The target first: it parses its URL and states the facts
            // the spec is resolved against, before anything connects.
            let target = plan::open(parts.workload.name(), Some(parts.target()))?;
            let spec = parts.spec(&target.facts(parts.target()))?;
            machine::admit(&spec)?;
            if let Some(out) = &args.out {
                check_out(out, args.csv)?;
            }
            if let Some(start) = args.start() {
                start.check(std::time::SystemTime::now())?;
            }
            if args.child && !signals::die_with_parent() {
                anyhow::bail!("the parent of this --child process is gone");
            }
            let role = if args.child {
                run::Role::Child
            } else if spec.processes > 1 {
                run::Role::Parent {
                    child: flags::child_line(matches),
                }
            } else {
                run::Role::Single
            };
            let opts = run::Options {
                quiet: args.quiet,
                resources: args.resources,
                server_stats: args.server_stats == flags::OnOff::On,
                csv: args.csv,
                out: args.out.clone(),
                hdr_log: args.hdr_log.clone(),
                html: args.html.clone(),
                start: args.start(),
                role,
            };
            runtime()?.block_on(plan::run(&spec, target, &opts))
        }
        Command::Merge(m) => merge::run(&m.reports, m.out.as_deref(), m.force),
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
        Command::Verify(v) => {
            let report = Report::read(&v.report)?;
            let url = v
                .target
                .clone()
                .unwrap_or_else(|| report.spec.target.clone());
            let target = plan::open(report.spec.workload.name(), Some(&url))?;
            runtime()?.block_on(plan::verify(&report, target))
        }
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
