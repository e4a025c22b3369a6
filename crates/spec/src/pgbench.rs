//! pgbench's knobs: the initialisation (`-i`: scale, fillfactor, foreign
//! keys, steps) and the scripts a run draws its transactions from, each
//! kept as its text so a report says exactly what ran.

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// pgbench's default initialisation steps: drop, create tables, generate
/// data client-side, vacuum, primary keys.
pub const DEFAULT_INIT_STEPS: &str = "dtgvp";

/// The largest scale taken (pgbench allows more; 100,000 accounts a unit).
pub const MAX_SCALE: u32 = 10_000;

/// How statements are sent (pgbench's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QueryMode {
    /// One Query message, variables substituted into the text.
    #[default]
    Simple,
    /// Parse, Bind, Execute each time, variables as parameters.
    Extended,
    /// Parsed once per connection, then Bind and Execute.
    Prepared,
}

impl QueryMode {
    /// pgbench's own word for it.
    pub fn word(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

/// One script a run draws from: `<builtin: ...>` or a file's name, its
/// text and its weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptSpec {
    /// pgbench's name for it: `<builtin: TPC-B (sort of)>` or the file.
    pub name: String,
    /// The builtin's short name (`tpcb-like`), `None` for a file.
    pub builtin: Option<String>,
    pub text: String,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgbenchSpec {
    /// `-i`: the tables are (re)made by prepare as these steps say.
    pub init: bool,
    /// `-s`: branches; 10 tellers and 100,000 accounts each.
    pub scale: u32,
    /// `-F`: the tables' fillfactor, 10 to 100.
    pub fillfactor: u32,
    /// `--foreign-keys`: the `f` step added to the steps.
    pub foreign_keys: bool,
    /// `-I`: the steps, each one of `dtgGvpf`.
    pub init_steps: String,
    pub scripts: Vec<ScriptSpec>,
    /// `-M`.
    pub mode: QueryMode,
    /// `-D NAME=VALUE`, in order.
    pub defines: Vec<(String, String)>,
    /// `-r`: per-statement latencies.
    pub per_statement: bool,
    /// `-n`: no vacuum before the run.
    pub no_vacuum: bool,
    /// `--latency-limit` in milliseconds: transactions over it are counted late.
    pub latency_limit_ms: Option<f64>,
    /// `-C`: a new connection for each transaction.
    pub reconnect: bool,
}

impl Default for PgbenchSpec {
    fn default() -> Self {
        PgbenchSpec {
            init: false,
            scale: 1,
            fillfactor: 100,
            foreign_keys: false,
            init_steps: DEFAULT_INIT_STEPS.to_string(),
            scripts: Vec::new(),
            mode: QueryMode::Simple,
            defines: Vec::new(),
            per_statement: false,
            no_vacuum: false,
            latency_limit_ms: None,
            reconnect: false,
        }
    }
}

impl PgbenchSpec {
    /// The steps `-i` runs: `-I`'s, with `f` added by `--foreign-keys`.
    pub fn steps(&self) -> String {
        let mut s = self.init_steps.clone();
        if self.foreign_keys && !s.contains('f') {
            s.push('f');
        }
        s
    }

    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        if self.scale == 0 || self.scale > MAX_SCALE {
            return Err(SpecError::new("-s", format!("must be 1 to {MAX_SCALE}")));
        }
        if !(10..=100).contains(&self.fillfactor) {
            return Err(SpecError::new("-F", "must be 10 to 100"));
        }
        if let Some(c) = self.init_steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
            return Err(SpecError::new(
                "-I",
                format!("unknown step '{c}' (steps are d, t, g, G, v, p, f)"),
            ));
        }
        if !self.init && self.scripts.is_empty() {
            return Err(SpecError::new("-b", "no script to run"));
        }
        if self.scripts.iter().any(|s| s.weight == 0) && self.scripts.iter().all(|s| s.weight == 0)
        {
            return Err(SpecError::new("-b", "every script has weight 0"));
        }
        if self
            .latency_limit_ms
            .is_some_and(|l| l.is_nan() || l <= 0.0)
        {
            return Err(SpecError::new("--latency-limit", "must be more than 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_keys_add_the_f_step_once() {
        let mut s = PgbenchSpec {
            init: true,
            foreign_keys: true,
            ..PgbenchSpec::default()
        };
        assert_eq!(s.steps(), "dtgvpf");
        s.init_steps = "dtf".into();
        assert_eq!(s.steps(), "dtf");
        s.init_steps = "dtx".into();
        assert_eq!(s.validate().unwrap_err().flag, "-I");
    }
}
