//! The run specification: the validated, serialisable description of one
//! run. Flags become a [`RunSpec`] (checked here, without I/O); the plan
//! turns it into connections; every report stores it, so a report says
//! exactly what produced it.

pub mod bounds;
mod facts;
mod http;
mod kv;
mod load;
mod memcache;
mod pgbench;
mod preset;
mod pubsub;
mod redis;
pub mod secret;
mod stages;
mod threshold;
mod until;
mod workload;

use serde::{Deserialize, Serialize};

pub use facts::TargetFacts;
pub use http::{HttpSpec, MAX_BODY_SIZE};
pub use kv::{
    KeyChoice, KvSpec, KvTest, DEFAULT_RANGE_LENGTH, DEFAULT_ROWS, DEFAULT_VALUE_MAX,
    DEFAULT_VALUE_MIN, MAX_PER_TXN, MAX_ROWS, MAX_VALUE_SIZE, MIN_VALUE_SIZE,
};
pub use load::{Arrival, Dispatch, LoadSpec, Pacing, Shard, Stop};
pub use memcache::{MemcacheSpec, MAX_KEY_SIZE, MAX_MULTIGET, MAX_WINDOWS, MIN_KEY_SIZE};
pub use pgbench::{PgbenchSpec, QueryMode, ScriptSpec, DEFAULT_INIT_STEPS, MAX_SCALE};
pub use preset::{Preset, PresetDefaults};
pub use pubsub::{ChatMode, ChatSpec, PubSubSpec, MAX_MESSAGE_SIZE, MIN_MESSAGE_SIZE};
pub use redis::{
    KeyPattern, MemtierCommand, MemtierSpec, RedisSpec, RedisTest, ValueSizes, MAX_DATA_SIZE,
};
pub use stages::{Stage, Stages};
pub use threshold::{Cmp, Metric, Threshold};
pub use until::{Until, FIGURES};
pub use workload::{
    CsvDialect, HelloSpec, OutputStyle, VoterGenerator, VoterSpec, WorkloadSpec, CONTESTANT_NAMES,
};

/// A flag or value that does not make sense. Always names the flag, so the
/// binary can print one clear line and exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct SpecError {
    pub flag: &'static str,
    pub message: String,
}

impl SpecError {
    pub fn new(flag: &'static str, message: impl Into<String>) -> Self {
        SpecError {
            flag,
            message: message.into(),
        }
    }
}

/// Everything that determines a run. Two runs with equal specs against
/// equal targets issue the same operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub workload: WorkloadSpec,
    /// The target as given, with any password masked.
    pub target: String,
    pub load: LoadSpec,
    /// Every operation is a pure function of (seed, operation index).
    pub seed: u64,
    /// Seconds of load before measuring (run, not counted).
    pub warmup_secs: f64,
    /// Seconds between lap lines.
    pub interval_secs: f64,
    /// Runtime threads driving the load.
    pub threads: usize,
    /// Seconds an operation may stay unanswered before it fails as a timeout.
    pub timeout_secs: f64,
    /// Fail the run (exit 1) when errors exceed this fraction of operations.
    pub max_error_rate: Option<f64>,
    /// What the run must meet besides (`--threshold`), for CI.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Threshold>,
    /// Check the target's data after the run.
    pub verify: bool,
    /// Keep the schema and data after the run.
    pub keep: bool,
    /// The Erlvolt setup the defaults came from, if any (flags given
    /// explicitly win over it, so `load` is what ran).
    #[serde(default)]
    pub preset: Option<Preset>,
    /// Local processes, each running shard k of this many with `load`
    /// (so `clients` and `connections` count per process); their reports
    /// are merged. 1: a plain run.
    #[serde(default = "one")]
    pub processes: u32,
    /// This process prepares before its load and tears down after it.
    /// `false` (`--no-prepare`): a shard of a many-host run, which creates
    /// and drops nothing; `loadrig prepare` and `loadrig teardown` do that
    /// once, and the merged report is verified once (docs/explanations/measurement.md
    /// section 6). Absent from reports of plain runs.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub prepare: bool,
    /// The engine's threads ran under `SCHED_FIFO` during the load
    /// (`--realtime`, paced loads only). Absent when they did not.
    #[serde(default, skip_serializing_if = "is_no")]
    pub realtime: bool,
    /// Paced loads: the last this many seconds before each intended start
    /// are spent polling, not asleep (`--spin`). Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spin_secs: f64,
    /// The machine's CPUs were kept out of their idle states during the
    /// load (`--awake`: a PM QoS latency request of 0). Absent when not.
    #[serde(default, skip_serializing_if = "is_no")]
    pub awake: bool,
    /// The hand-written clients moved their bytes through io_uring during
    /// the load (`--io uring`). Absent when through epoll.
    #[serde(default, skip_serializing_if = "is_no")]
    pub io_uring: bool,
    /// `--until`: a duration run ends early once this interval is narrow
    /// enough. Absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
    /// `--abort-after`: the run stops once a threshold has been broken in
    /// every lap for this many seconds (k6's abortOnFail with
    /// delayAbortEval). Absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_after_secs: Option<f64>,
}

/// `--spin`'s ceiling: past a millisecond, tokio's own timer is as good.
pub const MAX_SPIN_SECS: f64 = 1e-3;

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

fn is_no(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl RunSpec {
    /// Rules a workload imposes on the load model, applied once the flags
    /// are read: chat's realistic mode is the open loop at clients / think
    /// time, each client's sends a think apart, so it takes no other pacing.
    /// The rate is the run's, over every process or shard, each of which
    /// has clients of its own.
    pub fn apply_workload_rules(&mut self) -> Result<(), SpecError> {
        if let WorkloadSpec::Chat(chat) = &self.workload {
            if let ChatMode::Realistic { think_secs } = chat.mode {
                if self.load.pacing != Pacing::Steady {
                    return Err(SpecError::new(
                        "--rate",
                        "--mode realistic paces each client by --think",
                    ));
                }
                let parts = self.load.shard.count.max(self.processes).max(1);
                self.load.pacing = Pacing::Rate {
                    rate: f64::from(self.load.clients) * f64::from(parts) / think_secs,
                    arrival: Arrival::Regular,
                };
            }
        }
        Ok(())
    }

    /// Cross-field checks that no single flag can make.
    /// This spec as output and reports show it: the target and every
    /// header that carries a credential masked ([`secret`]). A run keeps
    /// the real one; what a report holds cannot log in again.
    pub fn masked(&self) -> RunSpec {
        let mut s = self.clone();
        s.target = secret::mask_text(&s.target);
        if let WorkloadSpec::Http(h) = &mut s.workload {
            h.headers = h.headers.iter().map(|h| secret::mask_header(h)).collect();
        }
        s
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        self.load.validate()?;
        self.workload.validate()?;
        bounds::seconds("--interval", self.interval_secs, false)?;
        if let Some(w) = self.abort_after_secs {
            bounds::seconds("--abort-after", w, false)?;
            if self.thresholds.is_empty() {
                return Err(SpecError::new(
                    "--abort-after",
                    "needs a --threshold to watch (e.g. --threshold 'p99<5ms' --abort-after 10s)",
                ));
            }
        }
        if self.interval_secs < bounds::MIN_INTERVAL_SECS {
            return Err(SpecError::new("--interval", "must be at least 1ms"));
        }
        bounds::seconds("--timeout", self.timeout_secs, false)?;
        bounds::seconds("--warmup", self.warmup_secs, true)?;
        bounds::count(
            "--processes",
            self.processes.into(),
            1,
            bounds::MAX_PROCESSES.into(),
        )?;
        if self.realtime && self.load.pacing == Pacing::Steady {
            return Err(SpecError::new(
                "--realtime",
                "needs a paced load (--rate or --burst): a closed loop never sleeps, and \
                 under SCHED_FIFO it would keep the cores from the server it measures",
            ));
        }
        bounds::seconds("--spin", self.spin_secs, true)?;
        if self.spin_secs > MAX_SPIN_SECS {
            return Err(SpecError::new("--spin", "must be at most 1ms"));
        }
        if self.spin_secs > 0.0 && self.load.pacing == Pacing::Steady {
            return Err(SpecError::new(
                "--spin",
                "needs a paced load (--rate or --burst): only an intended start can be spun for",
            ));
        }
        if self.until.is_some() && !matches!(self.load.stop, Stop::Seconds(_)) {
            return Err(SpecError::new(
                "--until",
                "needs a duration run (--duration): it ends the run early, up to then",
            ));
        }
        if self.until.is_some() && self.processes > 1 {
            return Err(SpecError::new(
                "--until",
                "cannot be used with --processes: each process sees only its own laps",
            ));
        }
        if self.processes > 1 && self.load.shard.count > 1 {
            return Err(SpecError::new(
                "--processes",
                "cannot be used with --shard (the processes are the shards)",
            ));
        }
        if let Some(p) = self.preset {
            if p.workload() != self.workload.name() {
                return Err(SpecError::new(
                    "--preset",
                    format!(
                        "{} runs {}, not {}",
                        p.label().to_lowercase(),
                        p.workload(),
                        self.workload.name()
                    ),
                ));
            }
        }
        if let WorkloadSpec::Memcache(_) = self.workload {
            let shards = self.load.shard.count.max(self.processes);
            if u64::from(self.load.connections) * u64::from(shards) > MAX_WINDOWS {
                return Err(SpecError::new(
                    "--connections",
                    format!("the memcache workload names at most {MAX_WINDOWS} windows (connections over every process)"),
                ));
            }
        }
        if self.threads == 0 || self.threads > bounds::MAX_THREADS {
            return Err(SpecError::new(
                "--threads",
                format!("must be from 1 to {}", bounds::MAX_THREADS),
            ));
        }
        if let Some(r) = self.max_error_rate {
            if !(0.0..=1.0).contains(&r) {
                return Err(SpecError::new(
                    "--max-error-rate",
                    "must be a fraction between 0 and 1",
                ));
            }
        }
        Ok(())
    }
}

/// `s` with control characters shown as escapes (`\u{1b}`): what a user
/// typed is echoed in headers and errors, and must not drive the terminal.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec as written before presets and processes existed.
    const OLD: &str = r#"{
        "workload": {"name": "hello", "insert_ratio": 0.0},
        "target": "null",
        "load": {"clients": 2, "connections": 2, "pipeline": 1,
                 "pacing": {"model": "steady"}, "dispatch": {"mode": "direct"},
                 "stop": {"count": 10}, "max_lag_secs": 10.0,
                 "shard": {"index": 0, "count": 1}},
        "seed": 42, "warmup_secs": 0.0, "interval_secs": 1.0, "threads": 2,
        "timeout_secs": 10.0, "max_error_rate": null, "verify": true, "keep": false
    }"#;

    #[test]
    fn specs_written_before_presets_and_processes_still_read() {
        let spec: RunSpec = serde_json::from_str(OLD).unwrap();
        assert_eq!(spec.preset, None);
        assert_eq!(spec.processes, 1);
        assert!(spec.validate().is_ok());
    }

    fn chat(mode: ChatMode, pacing: Pacing) -> RunSpec {
        let mut spec: RunSpec = serde_json::from_str(OLD).unwrap();
        (spec.load.clients, spec.load.connections) = (50, 50);
        spec.workload = WorkloadSpec::Chat(ChatSpec {
            groups: 10,
            per_group: 5,
            mode,
            size: 64,
            drain_secs: 2.0,
            listener_delay_secs: 0.0,
        });
        spec.load.pacing = pacing;
        spec
    }

    #[test]
    fn chat_realistic_is_the_open_loop_at_clients_over_think() {
        let mut s = chat(ChatMode::Realistic { think_secs: 5.0 }, Pacing::Steady);
        s.apply_workload_rules().unwrap();
        assert_eq!(
            s.load.pacing,
            Pacing::Rate {
                rate: 10.0,
                arrival: Arrival::Regular
            }
        );
        // Four processes (or shards) of 50 clients each: 200 clients.
        for (processes, count) in [(4, 1), (1, 4)] {
            let mut s = chat(ChatMode::Realistic { think_secs: 5.0 }, Pacing::Steady);
            s.processes = processes;
            s.load.shard = Shard { index: 0, count };
            s.apply_workload_rules().unwrap();
            assert_eq!(
                s.load.pacing,
                Pacing::Rate {
                    rate: 40.0,
                    arrival: Arrival::Regular
                }
            );
        }
        let rate = Pacing::Rate {
            rate: 100.0,
            arrival: Arrival::Regular,
        };
        let mut s = chat(ChatMode::Realistic { think_secs: 5.0 }, rate);
        assert_eq!(s.apply_workload_rules().unwrap_err().flag, "--rate");
        let mut s = chat(ChatMode::Stress, rate);
        s.apply_workload_rules().unwrap();
        assert_eq!(s.load.pacing, rate);
    }
}
