//! The load model of docs/explanations/measurement.md section 1: who issues operations (callers),
//! over how many connections, how starts are paced, how they are dispatched,
//! and when the run stops.

use serde::{Deserialize, Serialize};

use crate::bounds::{self, MAX_BURST, MAX_CLIENTS, MAX_DEPTH, MAX_QUEUE, MAX_RATE, MIN_RATE};
use crate::stages::Stages;
use crate::SpecError;

/// How operations get their start times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum Pacing {
    /// Closed loop: each caller issues its next operation when its previous
    /// one completes (Erlvolt `steady`, redis-benchmark `-c`).
    Steady,
    /// Open loop: `rate` operations per second in total, scheduled whatever
    /// the target does (wrk2 `-R`).
    Rate { rate: f64, arrival: Arrival },
    /// Erlvolt `bursts`: `size` at once, wait until at most `limit` are
    /// pending, sleep `delay_ms`, repeat.
    Burst {
        size: u32,
        delay_ms: f64,
        limit: u32,
    },
}

/// Inter-arrival times of the open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    Regular,
    Poisson,
}

/// What stands between callers and connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Dispatch {
    /// No queue: a caller waits for a free slot on its connection.
    Direct,
    /// A bounded queue of `queue` waiting operations in front of the
    /// connections, at most `slots` in flight per connection; an operation
    /// that finds the queue full fails as `queue_full`.
    Managed { queue: u32, slots: u32 },
}

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// This many operations in total over all callers (and all shards).
    Count(u64),
    /// Measure for this many seconds.
    Seconds(f64),
}

/// This process's part of a run split by operation index (`--shard i/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parse `i/N` (0 <= i < N).
    pub fn parse(s: &str) -> Result<Shard, SpecError> {
        let bad = || {
            SpecError::new(
                "--shard",
                format!("expected i/N with 0 <= i < N, got '{s}'"),
            )
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The whole load model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Callers (workers in the closed loop).
    pub clients: u32,
    /// Connections to the target; callers are spread over them.
    pub connections: u32,
    /// Requests each caller keeps in flight (closed loop) or each
    /// connection may carry per caller (open loop, direct).
    pub pipeline: u32,
    pub pacing: Pacing,
    pub dispatch: Dispatch,
    pub stop: Stop,
    /// Open loop: an operation that cannot start within this many seconds
    /// of its intended start is counted as `dropped` instead.
    pub max_lag_secs: f64,
    pub shard: Shard,
    /// Open loop: the rate as a schedule of stages (`--stages`); `pacing`'s
    /// rate is then the schedule's mean and `stop` its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Stages>,
}

impl LoadSpec {
    /// The requests one connection must carry must fit what the target
    /// allows (`max`).
    pub fn check_depth(&self, max: usize) -> Result<(), SpecError> {
        let per_conn = self.clients.div_ceil(self.connections.max(1)) as usize;
        let (depth, flag) = match self.dispatch {
            Dispatch::Direct => (per_conn * self.pipeline as usize, "--pipeline"),
            Dispatch::Managed { slots, .. } => (slots as usize, "--slots"),
        };
        if depth > max {
            return Err(SpecError::new(
                flag,
                format!(
                    "{depth} requests in flight per connection, but this target allows at most {max}"
                ),
            ));
        }
        Ok(())
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        bounds::count("--clients", self.clients.into(), 1, MAX_CLIENTS.into())?;
        bounds::count(
            "--connections",
            self.connections.into(),
            1,
            MAX_CLIENTS.into(),
        )?;
        if self.connections > self.clients {
            return Err(SpecError::new(
                "--connections",
                format!(
                    "{} connections for {} clients: each connection needs a client",
                    self.connections, self.clients
                ),
            ));
        }
        bounds::count("--pipeline", self.pipeline.into(), 1, MAX_DEPTH.into())?;
        match self.pacing {
            Pacing::Steady => {}
            Pacing::Rate { rate, .. } => {
                if !(MIN_RATE..=MAX_RATE).contains(&rate) {
                    return Err(SpecError::new(
                        "--rate",
                        format!("must be from one an hour to {MAX_RATE:e} operations a second"),
                    ));
                }
            }
            Pacing::Burst {
                size,
                delay_ms,
                limit,
            } => {
                bounds::count("--burst", size.into(), 1, MAX_BURST.into())?;
                bounds::count("--limit", limit.into(), 0, MAX_BURST.into())?;
                bounds::seconds("--burst-delay", delay_ms / 1e3, true)?;
            }
        }
        if let Dispatch::Managed { queue, slots } = self.dispatch {
            bounds::count("--slots", slots.into(), 1, MAX_DEPTH.into())?;
            bounds::count("--queue", queue.into(), 0, MAX_QUEUE)?;
        }
        match self.stop {
            Stop::Count(0) => return Err(SpecError::new("-n", "must be at least 1")),
            Stop::Count(_) => {}
            Stop::Seconds(s) => bounds::seconds("--duration", s, false)?,
        }
        bounds::seconds("--max-lag", self.max_lag_secs, false)?;
        if let Some(st) = &self.stages {
            st.validate()?;
            if !matches!(self.pacing, Pacing::Rate { .. }) {
                return Err(SpecError::new(
                    "--stages",
                    "is for the open loop (not --burst)",
                ));
            }
        }
        Ok(())
    }

    /// The memory the load holds at once over `processes` processes
    /// ([`bounds::Planned`]).
    pub fn planned(&self, processes: u32) -> bounds::Planned {
        let (slots, queue) = match self.dispatch {
            Dispatch::Direct => (u64::from(self.clients) * u64::from(self.pipeline), 0),
            Dispatch::Managed { queue, slots } => (
                u64::from(self.connections) * u64::from(slots),
                u64::from(queue),
            ),
        };
        bounds::Planned::of(self.connections.into(), slots, queue, processes.into())
    }

    /// Callers served by connection `k` (callers are dealt round robin).
    pub fn callers_on(&self, k: u32) -> u32 {
        let (c, n) = (self.clients, self.connections);
        c / n + u32::from(k < c % n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LoadSpec {
        LoadSpec {
            clients: 4,
            connections: 4,
            pipeline: 1,
            pacing: Pacing::Steady,
            dispatch: Dispatch::Direct,
            stop: Stop::Count(10),
            max_lag_secs: 10.0,
            shard: Shard::WHOLE,
            stages: None,
        }
    }

    #[test]
    fn rate_zero_names_the_flag() {
        let mut l = base();
        l.pacing = Pacing::Rate {
            rate: 0.0,
            arrival: Arrival::Regular,
        };
        assert_eq!(l.validate().unwrap_err().flag, "--rate");
    }

    #[test]
    fn callers_are_dealt_evenly() {
        let mut l = base();
        l.clients = 10;
        l.connections = 4;
        let v: Vec<u32> = (0..4).map(|k| l.callers_on(k)).collect();
        assert_eq!(v, vec![3, 3, 2, 2]);
    }

    #[test]
    fn shard_parses_and_rejects() {
        assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
        assert!(Shard::parse("3/3").is_err());
        assert!(Shard::parse("x").is_err());
    }
}
