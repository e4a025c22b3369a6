//! `loadrig completions SHELL` and `loadrig man`: the shell completion
//! scripts (clap_complete), the manual page (clap_mangen) and the
//! Markdown command-line reference (`loadrig man --markdown`, which is
//! docs/reference/cli.md), made from the same command definition as
//! `--help`, so they cannot drift from it.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::exit;
use crate::flags::Cli;

/// Print the completion script for `shell` on standard output.
pub fn completions(shell: Shell) -> anyhow::Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "loadrig", &mut out);
    write_out(&out)
}

/// Print the manual page (roff) on standard output: the synopsis, the
/// subcommands and the top-level options. With `dir`, write a page per
/// command instead (`loadrig-run-redis.1`: its flags), for `man -M`.
pub fn man(dir: Option<&Path>) -> anyhow::Result<i32> {
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(Cli::command(), dir))
                .with_context(|| format!("writing the manual pages to {}", dir.display()))?;
            Ok(exit::OK)
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            write_out(&out)
        }
    }
}

/// The width the Markdown reference's help text is wrapped at, whatever
/// the terminal: the file must not depend on who generated it.
const MARKDOWN_WIDTH: usize = 100;

/// Print the command-line reference as Markdown on standard output: a
/// contents list, then each command's `--help` (long form) under its own
/// heading, depth first, hidden commands left out.
pub fn markdown() -> anyhow::Result<i32> {
    let mut cmd = Cli::command().term_width(MARKDOWN_WIDTH);
    cmd.build();
    let mut commands = Vec::new();
    visible_commands(&cmd, &mut commands);
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from loadrig's command definition by `loadrig man --markdown`;\n\
         do not edit. After changing a flag or its help, regenerate it with\n\n\
         ```sh\n\
         cargo run -p loadrig -- man --markdown > docs/reference/cli.md\n\
         ```\n\n\
         (the suite's `manual::the_cli_reference_is_current` fails while it is stale).\n\
         `loadrig prepare WORKLOAD` and `loadrig teardown WORKLOAD` take the flags of\n\
         `loadrig run WORKLOAD`.\n\n",
    );
    for c in &commands {
        let name = c.get_bin_name().unwrap_or_else(|| c.get_name());
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        out.push_str(&format!("- [`{name}`](#{}): {about}\n", anchor(name)));
    }
    for c in commands {
        let name = c.get_bin_name().unwrap_or_else(|| c.get_name()).to_string();
        let help = c.term_width(MARKDOWN_WIDTH).render_long_help().to_string();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        out.push_str(&format!(
            "\n## {name}\n\n```text\n{}\n```\n",
            help.join("\n")
        ));
    }
    write_out(out.as_bytes())
}

/// Commands whose subcommands are `run`'s workloads with `run`'s flags:
/// listed once, under `loadrig run`.
const SAME_AS_RUN: [&str; 2] = ["prepare", "teardown"];

/// `cmd` and its subcommands, depth first, without the hidden ones, the
/// `help` subcommands clap adds, or the workloads of [`SAME_AS_RUN`].
fn visible_commands(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
    out.push(cmd.clone());
    if SAME_AS_RUN.contains(&cmd.get_name()) {
        return;
    }
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        visible_commands(sub, out);
    }
}

/// The anchor GitHub gives a heading: lower case, spaces as dashes, other
/// punctuation but `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Standard output may be a pipe that closed (`loadrig man | head`): that
/// ends the program quietly, as `say!` does.
fn write_out(bytes: &[u8]) -> anyhow::Result<i32> {
    let _ = std::io::stdout().lock().write_all(bytes);
    Ok(exit::OK)
}
