//! pgbench's flags under loadrig's names (`loadrig run pgbench`; pgbench's
//! own spellings are `loadrig pgbench`, in `crate::peers::pgbench`).
//! Script files are read here, bounded, and parsed at once, so a mistake
//! is one line naming file:line (exit 2) before anything connects.

use std::io::Read;
use std::path::Path;

use clap::{Args, ValueEnum};
use loadrig_spec::{PgbenchSpec, QueryMode, ScriptSpec, SpecError, WorkloadSpec};
use loadrig_workloads::pgbench::{builtin, Compiled};

use super::Defaults;

pub(super) const PGBENCH_DEFAULTS: Defaults = Defaults {
    clients: 1,
    threads: Some(1),
    target: "postgres://bench:bench@127.0.0.1/bench",
    duration: None,
};

/// The largest script file read.
const MAX_SCRIPT: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum QueryModeArg {
    /// One Query message, variables written into the text
    Simple,
    /// Parse, Bind and Execute for each command
    Extended,
    /// Each command parsed once per connection
    Prepared,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Pgbench workload")]
pub struct PgbenchArgs {
    /// Make pgbench's four tables first (pgbench -i)
    #[arg(long)]
    pub init: bool,
    /// With --init: branches, each 10 tellers and 100,000 accounts (pgbench -s)
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// With --init: the tables' fillfactor, 10 to 100 (pgbench -F)
    #[arg(long, default_value_t = 100)]
    pub fillfactor: u32,
    /// With --init: add the foreign keys (pgbench --foreign-keys)
    #[arg(long)]
    pub foreign_keys: bool,
    /// With --init: the steps, of dtgGvpf (pgbench -I)
    #[arg(long, default_value = loadrig_spec::DEFAULT_INIT_STEPS)]
    pub init_steps: String,
    /// A builtin script, NAME[@WEIGHT]: tpcb-like, simple-update, select-only (pgbench -b)
    #[arg(long, value_name = "NAME[@WEIGHT]")]
    pub builtin: Vec<String>,
    /// A script file, FILE[@WEIGHT] (pgbench -f)
    #[arg(long, value_name = "FILE[@WEIGHT]")]
    pub file: Vec<String>,
    /// How statements are sent (pgbench -M)
    #[arg(long, value_enum, default_value = "simple")]
    pub query_mode: QueryModeArg,
    /// A variable for every script, NAME=VALUE (pgbench -D)
    #[arg(long, value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// Print each command's average latency (pgbench -r)
    #[arg(long)]
    pub report_per_command: bool,
    /// Do not vacuum (and empty pgbench_history) before the run (pgbench -n)
    #[arg(long)]
    pub no_vacuum: bool,
    /// Count transactions that took longer than this many milliseconds (pgbench --latency-limit)
    #[arg(long, value_name = "MS")]
    pub latency_limit: Option<f64>,
    /// A new connection for each transaction (pgbench -C)
    #[arg(long)]
    pub connect_each: bool,
}

/// `NAME@WEIGHT` into its parts (weight 1 when not given).
fn weighted<'a>(flag: &'static str, v: &'a str) -> Result<(&'a str, u32), SpecError> {
    match v.rsplit_once('@') {
        Some((n, w)) => w
            .parse::<u32>()
            .map(|w| (n, w))
            .map_err(|_| SpecError::new(flag, format!("invalid weight specification: {v}"))),
        None => Ok((v, 1)),
    }
}

/// A script file's text, at most [`MAX_SCRIPT`] bytes.
fn read_script(path: &str) -> Result<String, SpecError> {
    let bad = |why: String| SpecError::new("--file", format!("{path}: {why}"));
    let file = std::fs::File::open(Path::new(path)).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_SCRIPT + 1)
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_SCRIPT {
        return Err(bad(format!("longer than {MAX_SCRIPT} bytes")));
    }
    Ok(text)
}

impl PgbenchArgs {
    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        let mut scripts = Vec::new();
        for b in &self.builtin {
            let (name, weight) = weighted("--builtin", b)?;
            let (short, long, text) =
                builtin::find(name).map_err(|e| SpecError::new("--builtin", e))?;
            scripts.push(ScriptSpec {
                name: long.to_string(),
                builtin: Some(short.to_string()),
                text: text.to_string(),
                weight,
            });
        }
        for f in &self.file {
            let (path, weight) = weighted("--file", f)?;
            scripts.push(ScriptSpec {
                name: path.to_string(),
                builtin: None,
                text: read_script(path)?,
                weight,
            });
        }
        let defines = self
            .define
            .iter()
            .map(|d| {
                d.split_once('=')
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .ok_or_else(|| {
                        SpecError::new("--define", format!("invalid variable definition: \"{d}\""))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let spec = PgbenchSpec {
            init: self.init,
            scale: self.scale,
            fillfactor: self.fillfactor,
            foreign_keys: self.foreign_keys,
            init_steps: self.init_steps.clone(),
            scripts,
            mode: match self.query_mode {
                QueryModeArg::Simple => QueryMode::Simple,
                QueryModeArg::Extended => QueryMode::Extended,
                QueryModeArg::Prepared => QueryMode::Prepared,
            },
            defines,
            per_statement: self.report_per_command,
            no_vacuum: self.no_vacuum,
            latency_limit_ms: self.latency_limit,
            reconnect: self.connect_each,
        };
        // The scripts' mistakes, before anything connects.
        Compiled::new(&spec, 0, false).map_err(|e| SpecError::new("--file", e.to_string()))?;
        Ok(WorkloadSpec::Pgbench(spec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_mistakes() {
        assert_eq!(weighted("-b", "tpcb-like@3").unwrap(), ("tpcb-like", 3));
        assert_eq!(weighted("-b", "se").unwrap(), ("se", 1));
        assert!(weighted("-b", "x@y").is_err());
        let dir = std::env::temp_dir().join(format!("pgb-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("bad.sql");
        std::fs::write(&f, "\\set a 1\nSELECT :b;\n").unwrap();
        let args = PgbenchArgs {
            init: false,
            scale: 1,
            fillfactor: 100,
            foreign_keys: false,
            init_steps: "dtgvp".into(),
            builtin: vec![],
            file: vec![format!("{}@2", f.display())],
            query_mode: QueryModeArg::Simple,
            define: vec![],
            report_per_command: false,
            no_vacuum: false,
            latency_limit: None,
            connect_each: false,
        };
        let e = args.spec().unwrap_err().to_string();
        assert!(e.contains("bad.sql:2: undefined variable \"b\""), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
