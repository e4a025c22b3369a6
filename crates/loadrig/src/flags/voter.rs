//! The Voter's flags and the Erlvolt bench's presets.

use clap::{Args, ValueEnum};
use loadrig_spec::{Preset, VoterGenerator, VoterSpec, WorkloadSpec};

use super::{with_default, Defaults, DEFAULT_CLIENTS};

pub(super) const PRESETS_HELP: &str =
    "--preset is one of the Erlvolt bench's setups; flags given explicitly win over \
it. The presets' values: docs/reference/workloads.md, section voter and hello.";

pub(super) const DB_DEFAULTS: Defaults = Defaults {
    clients: DEFAULT_CLIENTS,
    threads: None,
    target: "sqlite://",
    duration: None,
};

/// The Voter's presets (the Erlvolt bench's `make bench-v..`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VoterPresetArg {
    /// Voter, steady, direct: 200 clients (Erlvolt bench-vsd)
    Vsd,
    /// Voter, steady, managed: 200 clients, queue 100000, 200 slots (bench-vsm)
    Vsm,
    /// Voter, bursts, managed: 100 clients, bursts of 1 per client every 1 ms, limit 1, queue 10000, 100 slots (bench-vbm)
    Vbm,
    /// Voter, bursts, direct: 100 clients, bursts of 1 per client every 5 ms, limit 1 (bench-vbd)
    Vbd,
}

impl VoterPresetArg {
    pub(super) fn preset(self) -> Preset {
        match self {
            VoterPresetArg::Vsd => Preset::Vsd,
            VoterPresetArg::Vsm => Preset::Vsm,
            VoterPresetArg::Vbm => Preset::Vbm,
            VoterPresetArg::Vbd => Preset::Vbd,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GeneratorArg {
    Voltdb,
    Erlvolt,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Voter workload")]
pub struct VoterArgs {
    /// Contestants, 1 to 12
    #[arg(long, default_value_t = 6)]
    pub contestants: u8,
    #[arg(
        long,
        help = with_default(
            "Votes one phone number may cast",
            format_args!("{MAX_VOTES_VOLTDB}; {MAX_VOTES_ERLVOLT} with --generator erlvolt")
        )
    )]
    pub max_votes: Option<u32>,
    /// Whose caller mix: VoltDB's client (skewed, 1% invalid) or the Erlvolt bench (uniform) [default: voltdb; erlvolt with --preset]
    #[arg(long, value_enum)]
    pub generator: Option<GeneratorArg>,
    /// Callers come from only this many phone numbers (to make them collide)
    #[arg(long, value_name = "N")]
    pub phones: Option<u64>,
    /// An Erlvolt bench setup: sets the defaults above; flags given explicitly win
    #[arg(long, value_enum)]
    pub preset: Option<VoterPresetArg>,
}

/// Votes per phone number: VoltDB's example client allows 2, the Erlvolt
/// bench 20,000 (so its uniform callers are never over the limit).
const MAX_VOTES_VOLTDB: u32 = 2;
const MAX_VOTES_ERLVOLT: u32 = 20_000;

impl VoterArgs {
    pub fn spec(&self, preset: Option<Preset>) -> WorkloadSpec {
        let erlvolt = preset.is_some_and(|p| p.defaults().erlvolt_generator);
        let generator = match self.generator {
            Some(GeneratorArg::Voltdb) => VoterGenerator::Voltdb,
            Some(GeneratorArg::Erlvolt) => VoterGenerator::Erlvolt,
            None if erlvolt => VoterGenerator::Erlvolt,
            None => VoterGenerator::Voltdb,
        };
        let default_max = match generator {
            VoterGenerator::Voltdb => MAX_VOTES_VOLTDB,
            VoterGenerator::Erlvolt => MAX_VOTES_ERLVOLT,
        };
        WorkloadSpec::Voter(VoterSpec {
            contestants: self.contestants,
            max_votes: self.max_votes.unwrap_or(default_max),
            generator,
            phones: self.phones,
        })
    }
}
