//! `loadrig completions SHELL` and `loadrig man`: the shell completion
//! scripts (clap_complete) and the manual page (clap_mangen), made from the
//! same command definition as `--help`, so they cannot drift from it.

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

/// Standard output may be a pipe that closed (`loadrig man | head`): that
/// ends the program quietly, as `say!` does.
fn write_out(bytes: &[u8]) -> anyhow::Result<i32> {
    let _ = std::io::stdout().lock().write_all(bytes);
    Ok(exit::OK)
}
