//! The validity verdict: whether a run's measurement can be trusted, as
//! a list of checks, each with its figure and threshold (docs/explanations/validity.md
//! says each statistic, its threshold and its source). A pure function of
//! the report (and the spec in it), so `loadrig run`, `merge` and a later
//! look at the file agree. A check that cannot be judged (no laps, the
//! closed loop for punctuality) is left out, never passed by default; a
//! verdict with no check at all is not valid.

mod stationarity;
mod trend;

use loadrig_spec::{Pacing, Shard};
use serde::{Deserialize, Serialize};

use crate::fmt::{dur, group, seconds, sig3};
use crate::{LapReport, Report};
use stationarity::stationarity;

pub use trend::{mser, normal_cdf, trend, Trend};

/// The verdict on one run's measurement, as the report stores it
/// (`validity`). `valid` holds exactly when there is at least one check
/// and every check is ok.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub valid: bool,
    pub checks: Vec<ValidityCheck>,
    /// The warm-up that would have left out the start-up transient, in
    /// seconds, when the one run was too short; `None` otherwise.
    pub warmup_suggested_secs: Option<f64>,
}

/// One check: `ok` when `figure` is on the right side of `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidityCheck {
    pub name: String,
    pub ok: bool,
    pub figure: f64,
    pub threshold: f64,
    pub unit: String,
    /// The figure in words, as the summary prints it for a failed check.
    pub detail: String,
}

/// Send lag p99 may be at most this share of the mean time between one
/// worker's intended starts.
pub const PUNCTUALITY_SHARE: f64 = 0.10;
/// The achieved sending rate within this share of `--rate` (Lancet).
pub const RATE_TOLERANCE: f64 = 0.10;
/// Engine threads busier than this share of their time are saturated.
pub const HEADROOM_BUSY: f64 = 0.90;
/// Fewest measured laps a trend is judged on.
pub const MIN_LAPS: usize = 10;
/// A trend is significant below this p-value, per series.
pub const TREND_ALPHA: f64 = 0.01;
/// A significant trend (or a start-up transient) matters past this share
/// of the series' level.
pub const DRIFT_LIMIT: f64 = 0.10;
/// A start-up transient stands this many standard errors from the rest.
pub const TRANSIENT_Z: f64 = 3.0;
/// Observations a percentile needs above it to be an estimate.
pub const ABOVE_NEEDED: f64 = 10.0;

/// The observations percentile `p` (0 to 100) needs for [`ABOVE_NEEDED`]
/// of them to lie above it: 10,000 for p99.9.
pub fn samples_needed(p: f64) -> u64 {
    (ABOVE_NEEDED / (1.0 - p / 100.0)).round() as u64
}

impl Validity {
    /// `measurement: valid`, or `measurement: INVALID (check: detail; ...)`.
    pub fn line(&self) -> String {
        if self.valid {
            return "measurement: valid".to_string();
        }
        let failed: Vec<String> = self
            .checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        match failed.is_empty() {
            true => "measurement: INVALID (nothing could be judged)".to_string(),
            false => format!("measurement: INVALID ({})", failed.join("; ")),
        }
    }
}

impl Report {
    /// The verdict on this report's measurement (see the module).
    pub fn validity(&self) -> Validity {
        let mut checks = Vec::new();
        checks.extend(punctuality(self));
        checks.extend(offered(self));
        checks.extend(headroom(self));
        checks.push(shed(self));
        let (stationarity, warmup) = stationarity(self);
        checks.extend(stationarity);
        checks.extend(samples(self));
        checks.push(same_target(self));
        Validity {
            valid: !checks.is_empty() && checks.iter().all(|c| c.ok),
            checks,
            warmup_suggested_secs: warmup,
        }
    }

    /// The stored verdict, or one computed now for a report written
    /// before verdicts were kept.
    pub fn validity_or_judge(&self) -> Validity {
        self.validity.clone().unwrap_or_else(|| self.validity())
    }
}

fn check(name: &str, ok: bool, figure: f64, threshold: f64, unit: &str) -> ValidityCheck {
    ValidityCheck {
        name: name.to_string(),
        ok,
        figure,
        threshold,
        unit: unit.to_string(),
        detail: String::new(),
    }
}

fn with(mut c: ValidityCheck, detail: String) -> ValidityCheck {
    c.detail = detail;
    c
}

/// The processes this report covers and the shards of the whole run.
fn parts(r: &Report) -> (f64, f64) {
    let parts = r.processes.len().max(1);
    let shard = r.spec.load.shard;
    let whole = match (r.processes.is_empty(), shard == Shard::WHOLE) {
        (true, _) | (false, false) => shard.count as usize,
        (false, true) => parts,
    };
    (parts as f64, whole.max(1) as f64)
}

/// The open loop's rate over the part of the run this report covers,
/// and the mean time between one worker's intended starts.
fn paced(r: &Report) -> Option<(f64, f64)> {
    let Pacing::Rate { rate, .. } = r.spec.load.pacing else {
        return None;
    };
    let (parts, whole) = parts(r);
    let workers = f64::from(r.spec.load.connections) * whole;
    Some((rate * parts / whole, workers / rate))
}

/// Punctuality (open loop): send lag p99, the worst kind's, against
/// [`PUNCTUALITY_SHARE`] of a worker's mean inter-arrival time.
fn punctuality(r: &Report) -> Option<ValidityCheck> {
    let (_, gap) = paced(r)?;
    let lag = r
        .measured
        .kinds
        .iter()
        .filter(|k| k.send_lag.count > 0)
        .map(|k| k.send_lag.p99_us / 1e6)
        .reduce(f64::max)?;
    let limit = PUNCTUALITY_SHARE * gap;
    let ok = lag <= limit;
    let c = check("punctuality", ok, lag * 1e3, limit * 1e3, "ms");
    let cmp = if ok { "<=" } else { ">" };
    Some(with(
        c,
        format!(
            "send-lag p99 {} {cmp} {:.0}% of the {} mean inter-arrival per worker",
            dur(seconds(lag)),
            PUNCTUALITY_SHARE * 100.0,
            dur(seconds(gap))
        ),
    ))
}

/// An operation that never left: dropped past `--max-lag`, or refused by
/// a full queue.
fn never_sent(errors: &[(String, u64)]) -> u64 {
    errors
        .iter()
        .filter(|(name, _)| name == "dropped" || name == "queue_full")
        .map(|(_, n)| n)
        .sum()
}

/// Offered against achieved (open loop): the operations sent (completed,
/// failed, not dropped) per second against `--rate`; the worst kind when
/// the kinds ran one after the other.
fn offered(r: &Report) -> Option<ValidityCheck> {
    let (rate, _) = paced(r)?;
    let m = &r.measured;
    let one_by_one = m.kinds.iter().any(|k| k.elapsed_secs.is_some());
    let mut rates: Vec<(u64, u64, f64)> = Vec::new();
    if one_by_one {
        for k in m.kinds.iter().filter(|k| k.delivered < k.count) {
            let ops = k.count - k.delivered;
            rates.push((ops, never_sent(&k.errors), k.secs(m.elapsed_secs)));
        }
    } else {
        let lost = m.kinds.iter().map(|k| never_sent(&k.errors)).sum();
        rates.push((m.ops, lost, m.elapsed_secs));
    }
    let (ops, lost, secs) = rates
        .into_iter()
        .filter(|(_, _, secs)| *secs > 0.0)
        .min_by(|a, b| {
            let sent = |x: &(u64, u64, f64)| x.0.saturating_sub(x.1) as f64 / x.2;
            sent(a).total_cmp(&sent(b))
        })?;
    let sent = ops.saturating_sub(lost) as f64 / secs;
    let ok = (sent / rate - 1.0).abs() <= RATE_TOLERANCE;
    let c = check("offered", ok, sent, rate, "/s");
    Some(with(
        c,
        format!(
            "sent {}/s of the {}/s scheduled ({}%), {} of {} not sent",
            group(sent.round() as u64),
            group(rate.round() as u64),
            sig3(100.0 * sent / rate),
            group(lost),
            group(ops)
        ),
    ))
}

/// Client headroom: the client's CPU over the measured laps against its
/// engine threads (CPU an embedded database spent on its own threads is
/// taken out in the same proportion as from the run's total).
fn headroom(r: &Report) -> Option<ValidityCheck> {
    let cpu = |l: &LapReport| {
        l.client
            .map_or(0.0, |c| c.cpu_user_secs + c.cpu_system_secs)
    };
    let measured: Vec<&LapReport> = r
        .laps
        .iter()
        .filter(|l| !l.warmup && l.client.is_some())
        .collect();
    let time: f64 = measured.iter().map(|l| l.length_secs).sum();
    if time <= 0.0 {
        return None;
    }
    let all: f64 = r.laps.iter().map(cpu).sum();
    let own = match all > 0.0 {
        true => (r.client.cpu_secs / all).min(1.0),
        false => 1.0,
    };
    let busy: f64 = measured.iter().map(|l| cpu(l)).sum::<f64>() * own;
    let (parts, _) = parts(r);
    let threads = r.spec.threads as f64 * parts;
    let share = busy / (time * threads);
    let ok = share <= HEADROOM_BUSY;
    let c = check("headroom", ok, share * 100.0, HEADROOM_BUSY * 100.0, "%");
    let cmp = if ok { "<=" } else { ">" };
    Some(with(
        c,
        format!(
            "client cpu {}% of its {} engine thread(s) {cmp} {:.0}%",
            sig3(share * 100.0),
            threads,
            HEADROOM_BUSY * 100.0
        ),
    ))
}

/// Operations the client shed: dropped (open loop, past `--max-lag`) or
/// refused by a full queue. Any is a client that could not keep up.
fn shed(r: &Report) -> ValidityCheck {
    let count = |name: &str| -> u64 {
        r.measured
            .kinds
            .iter()
            .flat_map(|k| &k.errors)
            .filter(|(n, _)| n == name)
            .map(|(_, n)| n)
            .sum()
    };
    let (dropped, full) = (count("dropped"), count("queue_full"));
    let n = dropped + full;
    let c = check("shed", n == 0, n as f64, 0.0, "ops");
    with(
        c,
        format!("{} dropped, {} queue_full", group(dropped), group(full)),
    )
}

/// Enough samples: every kind's latency has [`ABOVE_NEEDED`] observations
/// above p99 (the percentile the verdict relies on) and above each
/// percentile a `--threshold` names. A printed percentile short of them
/// (p99.9 of a short run) is marked in the table, and named here.
fn samples(r: &Report) -> Option<ValidityCheck> {
    let mut relied = vec![99.0];
    // p100 is the maximum: one sample, no tail above it to count.
    relied.extend(
        r.spec
            .thresholds
            .iter()
            .filter_map(|t| t.metric.percentile())
            .filter(|p| *p < 100.0),
    );
    let need = relied.iter().map(|p| samples_needed(*p)).max().unwrap_or(0);
    let kinds: Vec<_> = r
        .measured
        .kinds
        .iter()
        .filter(|k| k.latency.count > 0)
        .collect();
    let fewest = kinds.iter().map(|k| k.latency.count).min()?;
    let mut short = Vec::new();
    for k in &kinds {
        for p in [50.0, 90.0, 99.0, 99.9] {
            let n = samples_needed(p);
            if k.latency.count < n {
                short.push(format!(
                    "p{p} of {} has {} samples, {} needed",
                    k.name,
                    group(k.latency.count),
                    group(n)
                ));
                break;
            }
        }
    }
    let c = check(
        "samples",
        fewest >= need,
        fewest as f64,
        need as f64,
        "samples",
    );
    let detail = match short.is_empty() {
        true => format!("every percentile has {ABOVE_NEEDED} samples above it"),
        false => format!("{} (marked * in the table)", short.join(", ")),
    };
    Some(with(c, detail))
}

/// The target stayed the same: no restart seen in the server's series (a
/// counter that went down, an uptime that fell) and no connection that
/// gave up on it. Reconnects are counted in the detail, not failed: a
/// server may close used-up connections (HTTP keep-alive limits).
fn same_target(r: &Report) -> ValidityCheck {
    let resets: f64 = r
        .laps
        .iter()
        .filter_map(|l| l.server.get(COUNTER_RESETS))
        .sum();
    let mut fell = 0u64;
    let mut last: std::collections::BTreeMap<&str, f64> = Default::default();
    for l in &r.laps {
        for (name, v) in l.server.iter().filter(|(n, _)| n.ends_with("uptime_secs")) {
            if last.insert(name, *v).is_some_and(|before| *v < before) {
                fell += 1;
            }
        }
    }
    let restarts = resets as u64 + fell;
    let gave_up = r.measured.gave_up + r.warmup.gave_up;
    let n = restarts + gave_up;
    let c = check("target", n == 0, n as f64, 0.0, "events");
    with(
        c,
        format!(
            "{} restart(s) seen in the server's series, {} connection(s) gave up, {} reconnect(s)",
            group(restarts),
            group(gave_up),
            group(r.measured.reconnects)
        ),
    )
}

/// The server series a sampler adds to a lap for each counter that went
/// down since the sample before (a server restarted).
pub const COUNTER_RESETS: &str = "server.counter_resets";

#[cfg(test)]
mod tests;
