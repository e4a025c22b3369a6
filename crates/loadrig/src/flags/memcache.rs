//! The memcache workload's flags: memaslap's.

use clap::Args;
use loadrig_spec::{MemcacheSpec, MemtierSpec, SpecError, WorkloadSpec};

use super::Defaults;

pub(super) const MEMCACHE_HELP: &str =
    "As memaslap: clients on windows of keys, every value read checked, the server's \
counters compared afterwards. What a run does: docs/reference/workloads.md, section memcache.";

/// memaslap's: 16 concurrencies, one thread, the local server.
pub(super) const MEMCACHE_DEFAULTS: Defaults = Defaults {
    clients: 16,
    threads: Some(1),
    target: "memcache://127.0.0.1:11211",
    duration: None,
};

#[derive(Debug, Args)]
#[command(next_help_heading = "Memcache workload")]
pub struct MemcacheArgs {
    /// The binary protocol (memaslap's -B); text otherwise
    #[arg(long)]
    pub binary: bool,
    /// Sets to gets, per window (memaslap's get:set 9:1 is 1:9)
    #[arg(long, value_name = "SETS:GETS", default_value = "1:9")]
    pub ratio: String,
    /// Bytes of every key, 16 to 250
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub key_size: usize,
    /// Bytes of every value, or MIN-MAX (each key's size fixed within the range)
    #[arg(long, value_name = "BYTES|MIN-MAX", default_value = "1024")]
    pub value_size: String,
    /// Keys per client (k = 1024, m = 1024*1024, as memaslap's --win_size)
    #[arg(long, value_name = "KEYS", default_value = "10k")]
    pub window: String,
    /// Keys per get request (memaslap's --division): text one get line, binary GetKQs and a Noop
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub multiget: u32,
    /// Fraction of gets whose values are compared byte for byte (the length is always checked)
    #[arg(long, value_name = "FRACTION", default_value_t = 1.0)]
    pub verify_gets: f64,
}

impl MemcacheArgs {
    pub fn spec(&self) -> Result<WorkloadSpec, SpecError> {
        let (sets, gets) = MemtierSpec::ratio(&self.ratio)?;
        let (value_min, value_max) = MemcacheSpec::value_sizes(&self.value_size)?;
        Ok(WorkloadSpec::Memcache(MemcacheSpec {
            binary: self.binary,
            sets,
            gets,
            key_size: self.key_size,
            value_min,
            value_max,
            window: MemcacheSpec::count("--window", &self.window)?,
            multiget: self.multiget,
            verify_gets: self.verify_gets,
        }))
    }
}
