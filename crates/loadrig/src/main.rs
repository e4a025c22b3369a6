//! The `loadrig` binary: flags -> run spec -> plan -> engine -> report ->
//! printers. This file is the one exit point: it prints an error as one
//! line and picks the exit code (docs/engine.md section 7).

mod exit;
mod flags;
mod merge;
mod plan;
mod print;
mod run;
mod start;
mod verify;

use clap::{ArgMatches, CommandFactory, FromArgMatches};
use loadrig_report::Report;

use flags::{Cli, Command};

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
                eprintln!("error: {}", one_line(&e));
                exit::code_of(&e)
            }
        },
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                print!("{e}");
                exit::OK
            }
            _ => {
                // clap's message, first line only: the usage text it adds
                // is one `--help` away.
                let text = e.to_string();
                eprintln!("{}", text.lines().next().unwrap_or("error: bad usage"));
                exit::USAGE
            }
        },
    };
    std::process::exit(code);
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
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
            let role = if args.child {
                run::Role::Child
            } else if spec.processes > 1 {
                run::Role::Parent {
                    child_args: flags::child_args(matches),
                }
            } else {
                run::Role::Single
            };
            let opts = run::Options {
                quiet: args.quiet,
                csv: args.csv,
                out: args.out.clone(),
                start: args.start(),
                role,
            };
            runtime()?.block_on(plan::run(&spec, target, &opts))
        }
        Command::Merge(m) => merge::run(&m.reports, m.out.as_deref()),
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
    println!(
        "{:<wn$} {:<ws$} {:<ww$} about",
        "target", "schemes", "workloads"
    );
    for ((d, s), wl) in targets.iter().zip(&schemes).zip(&workloads) {
        println!("{:<wn$} {s:<ws$} {wl:<ww$} {}", d.name, d.about);
        println!("{:<wn$} {:<ws$} {:<ww$} e.g. {}", "", "", "", d.example);
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
    println!("{:<8} {:<w$} about", "workload", "targets");
    for (name, targets, about) in rows {
        println!("{name:<8} {targets:<w$} {about}");
    }
}
