//! The stationarity check (docs/explanations/validity.md): a trend over the measured
//! laps (Mann-Kendall with Sen's slope) on throughput, p50 and p99, and a
//! start-up transient past the warm-up (MSER), with the warm-up that
//! would have left it out.

use super::trend::{mser, trend, Trend};
use super::{
    check, samples_needed, with, ValidityCheck, DRIFT_LIMIT, MIN_LAPS, TRANSIENT_Z, TREND_ALPHA,
};
use crate::fmt::sig3;
use crate::{decode_hdr, LapReport, Report};

/// Stationarity over the measured laps, and the warm-up that would have
/// sufficed (see [`stationary`]); not judged below [`MIN_LAPS`].
pub(super) fn stationarity(r: &Report) -> (Option<ValidityCheck>, Option<f64>) {
    let measured = r.laps.iter().filter(|l| !l.warmup).count();
    if measured < MIN_LAPS {
        return (None, None);
    }
    let series = Series::of(&r.laps);
    stationary(&series)
}

/// Per lap: its throughput and its latency's mean, p50 and p99 (laps
/// without a latency, or too few samples for the percentile, left out of
/// its series); `warmup` of each.
struct Series {
    warmup: Vec<bool>,
    length: Vec<f64>,
    throughput: Vec<f64>,
    mean: Vec<Option<f64>>,
    p50: Vec<Option<f64>>,
    p99: Vec<Option<f64>>,
}

impl Series {
    fn of(laps: &[LapReport]) -> Series {
        let mut s = Series {
            warmup: Vec::new(),
            length: Vec::new(),
            throughput: Vec::new(),
            mean: Vec::new(),
            p50: Vec::new(),
            p99: Vec::new(),
        };
        for l in laps.iter().filter(|l| l.length_secs > 0.0) {
            s.warmup.push(l.warmup);
            s.length.push(l.length_secs);
            s.throughput.push(l.ok as f64 / l.length_secs);
            let h = decode_hdr(&l.latency_hdr).ok().filter(|h| !h.is_empty());
            let at = |f: &dyn Fn(&loadrig_metrics::Histo) -> std::time::Duration| {
                h.as_ref().map(|h| f(h).as_secs_f64())
            };
            // A lap's percentile enters its series only with enough
            // samples above it (as in the samples check): a p99 of 200
            // values is their second largest, noise a trend test would
            // take for a trend.
            let enough = |p: f64| h.as_ref().is_some_and(|h| h.len() >= samples_needed(p));
            s.mean.push(at(&|h| h.mean()));
            s.p50
                .push(at(&|h| h.percentile(50.0)).filter(|_| enough(50.0)));
            s.p99
                .push(at(&|h| h.percentile(99.0)).filter(|_| enough(99.0)));
        }
        s
    }

    /// The measured part of `xs`, laps without a value left out.
    fn measured(&self, xs: &[Option<f64>]) -> Vec<f64> {
        xs.iter()
            .zip(&self.warmup)
            .filter(|(_, w)| !**w)
            .filter_map(|(x, _)| *x)
            .collect()
    }
}

/// The check: a significant Mann-Kendall trend (p < [`TREND_ALPHA`]) on
/// throughput, p50 or p99 (each over at least [`MIN_LAPS`] laps) whose Sen
/// drift exceeds [`DRIFT_LIMIT`], or a
/// start-up transient past the warm-up (MSER on the mean latency and the
/// throughput) that moved the level by more than [`DRIFT_LIMIT`].
fn stationary(s: &Series) -> (Option<ValidityCheck>, Option<f64>) {
    let through: Vec<Option<f64>> = s.throughput.iter().map(|x| Some(*x)).collect();
    let named = [("throughput", &through), ("p50", &s.p50), ("p99", &s.p99)];
    let mut worst: Option<(&str, Trend)> = None;
    for (name, xs) in named {
        let xs = s.measured(xs);
        if xs.len() < MIN_LAPS {
            continue;
        }
        let Some(t) = trend(&xs) else {
            continue;
        };
        let matters = t.p < TREND_ALPHA && t.drift.abs() > DRIFT_LIMIT;
        if matters && worst.is_none_or(|(_, w)| t.drift.abs() > w.drift.abs()) {
            worst = Some((name, t));
        }
    }
    let transient = [&through, &s.mean]
        .into_iter()
        .filter_map(|xs| start_up(s, xs))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let warmup = transient.map(|(_, secs)| secs);
    let drift = worst.map_or(0.0, |(_, t)| t.drift.abs());
    let figure = drift.max(transient.map_or(0.0, |t| t.0));
    let ok = worst.is_none() && transient.is_none();
    let c = check("stationarity", ok, figure * 100.0, DRIFT_LIMIT * 100.0, "%");
    let mut said = Vec::new();
    if let Some((name, t)) = worst {
        let way = if t.drift > 0.0 { "rose" } else { "fell" };
        said.push(format!(
            "{name} {way} {}% over the measured laps (Mann-Kendall z {}, p {})",
            sig3(t.drift.abs() * 100.0),
            sig3(t.z),
            p_value(t.p)
        ));
    }
    if let Some((share, secs)) = transient {
        said.push(format!(
            "a start-up transient of {}% past the warm-up: --warmup {}s would have left it out (MSER)",
            sig3(share * 100.0),
            secs.ceil()
        ));
    }
    if said.is_empty() {
        said.push(format!(
            "no trend past {:.0}% in throughput, p50 or p99 over {} laps",
            DRIFT_LIMIT * 100.0,
            s.measured(&through).len()
        ));
    }
    (Some(with(c, said.join(", "))), warmup)
}

fn p_value(p: f64) -> String {
    match p < 0.001 {
        true => "<0.001".to_string(),
        false => sig3(p),
    }
}

/// MSER's cut of `xs` over all laps (warm-up included), when it falls
/// past the warm-up and the measured laps it cuts differ from the rest
/// by more than [`DRIFT_LIMIT`] and by more than [`TRANSIENT_Z`]
/// standard errors: that share and the warm-up, in seconds, that would
/// have cut them.
fn start_up(s: &Series, xs: &[Option<f64>]) -> Option<(f64, f64)> {
    let kept: Vec<(usize, f64)> = xs
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.map(|x| (i, x)))
        .collect();
    let values: Vec<f64> = kept.iter().map(|(_, x)| *x).collect();
    let d = mser(&values)?;
    let &(cut, _) = kept.get(d)?;
    let warm = s.warmup.iter().filter(|w| **w).count();
    if d == 0 || cut <= warm {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let first: Vec<f64> = kept[..d]
        .iter()
        .filter(|(i, _)| *i >= warm)
        .map(|(_, x)| *x)
        .collect();
    let rest = &values[d..];
    let level = mean(rest);
    if first.is_empty() || level == 0.0 {
        return None;
    }
    // Past noise too: the cut laps' mean more than TRANSIENT_Z standard
    // errors (of the rest's spread) from the rest's, so that a noisy
    // series' first laps are not taken for a transient.
    let sd = (rest.iter().map(|x| (x - level).powi(2)).sum::<f64>() / rest.len() as f64).sqrt();
    let gap = (mean(&first) - level).abs();
    let share = gap / level.abs();
    let beyond_noise = gap > TRANSIENT_Z * sd / (first.len() as f64).sqrt();
    (share > DRIFT_LIMIT && beyond_noise).then(|| (share, s.length[..cut].iter().sum()))
}
