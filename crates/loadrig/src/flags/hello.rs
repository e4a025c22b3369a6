//! Hello's flags.

use clap::{Args, ValueEnum};
use loadrig_spec::{HelloSpec, WorkloadSpec};

/// Hello's preset (the Erlvolt bench's `make bench-hsd`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HelloPresetArg {
    /// Hello, steady, direct: 200 clients (Erlvolt bench-hsd)
    Hsd,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Hello workload")]
pub struct HelloArgs {
    /// Fraction of operations that insert a new dialect (the rest select)
    #[arg(long, default_value_t = 0.0)]
    pub insert_ratio: f64,
    /// An Erlvolt bench setup: sets the defaults above; flags given explicitly win
    #[arg(long, value_enum)]
    pub preset: Option<HelloPresetArg>,
}

impl HelloArgs {
    pub fn spec(&self) -> WorkloadSpec {
        WorkloadSpec::Hello(HelloSpec {
            insert_ratio: self.insert_ratio,
        })
    }
}
