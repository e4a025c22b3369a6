//! The server's statistics beside the load (docs/explanations/resources.md section 2):
//! a thread of its own, with its own runtime, samples every source the
//! target offers once per lap, on the laps' grid, on connections of its
//! own, so neither the engine's threads nor their byte counts are
//! touched. A sample that fails or takes too long is counted with its
//! error, never fatal. When the run ends the samples are joined to the
//! laps by wall clock.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use loadrig_metrics::{Coarsen, LapStore};
use loadrig_report::validity::COUNTER_RESETS;
use loadrig_report::{Report, ServerStatsReport};
use loadrig_workloads::stats::{Reading, StatsSource};
use tokio::sync::oneshot;

use super::dashboard::Live;
use super::Sink;

/// The longest one sample may take, whatever the lap.
const SAMPLE_LIMIT: Duration = Duration::from_secs(2);

/// A running sampler, a sink of the session: told when the load
/// begins, it samples on the laps' grid; at the end its samples join the
/// report's laps.
pub struct Sampler {
    /// The laps' grid: when the first lap began, sent once the load starts.
    grid: Option<oneshot::Sender<Instant>>,
    /// Taken when the sampler ends.
    stop: Option<(oneshot::Sender<()>, std::thread::JoinHandle<Samples>)>,
    /// The latest sample, for the dashboard.
    live: Live,
}

/// What a sampler gathered.
#[derive(Debug, Default)]
struct Samples {
    pub sources: Vec<String>,
    /// Coarsened like the laps, so a run of hours stays bounded.
    points: LapStore<Point>,
    taken: u64,
    failures: u64,
    last_error: Option<String>,
    /// Per source: its last sample succeeded, so it holds a connection.
    kept: Vec<bool>,
}

/// One sample of every source: levels as read, counters as their change
/// since the previous sample.
#[derive(Debug, Default)]
struct Point {
    unix_ms: u64,
    levels: BTreeMap<&'static str, f64>,
    counts: BTreeMap<&'static str, f64>,
}

impl Coarsen for Point {
    /// Counts add up, levels are the later sample's.
    fn absorb(&mut self, later: Point) {
        self.unix_ms = later.unix_ms;
        for (k, v) in later.counts {
            *self.counts.entry(k).or_default() += v;
        }
        self.levels.extend(later.levels);
    }
}

impl Sampler {
    /// Start sampling: the counters' base is read at once, and this
    /// returns when it is (or after each source's time limit), so that
    /// the load, started afterwards, is all counted in the laps. `None`
    /// with no source or when the thread cannot start (then the run has
    /// no server series, and says nothing worse).
    pub async fn start(sources: Vec<Box<dyn StatsSource>>, interval: Duration) -> Option<Sampler> {
        if sources.is_empty() {
            return None;
        }
        let bound = SAMPLE_LIMIT * u32::try_from(sources.len()).unwrap_or(u32::MAX);
        let (stop, stopped) = oneshot::channel();
        let (grid, first) = oneshot::channel();
        let (based, base) = oneshot::channel();
        let live = Live::default();
        let latest = live.clone();
        let thread = std::thread::Builder::new()
            .name("loadrig-stats".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                match rt {
                    Ok(rt) => {
                        let until = sample_until(sources, interval, based, first, stopped, latest);
                        rt.block_on(until)
                    }
                    Err(e) => Samples {
                        failures: 1,
                        last_error: Some(format!("no runtime for sampling: {e}")),
                        ..Samples::default()
                    },
                }
            })
            .ok()?;
        // A base that takes longer is late, not fatal: the first lap then
        // holds less than its share.
        let _ = tokio::time::timeout(bound + Duration::from_millis(100), base).await;
        Some(Sampler {
            grid: Some(grid),
            stop: Some((stop, thread)),
            live,
        })
    }

    /// The latest sample as it is taken: levels as read, counters as
    /// their change over the last lap.
    pub fn live(&self) -> Live {
        self.live.clone()
    }

    /// Take a last sample (the run's last lap) and stop.
    fn finish(&mut self) -> Samples {
        let Some((stop, thread)) = self.stop.take() else {
            return Samples::default();
        };
        let _ = stop.send(());
        thread.join().unwrap_or_else(|_| Samples {
            failures: 1,
            last_error: Some("the sampling thread panicked".into()),
            ..Samples::default()
        })
    }
}

impl Sink for Sampler {
    /// The load's first lap began at `first`: sample at each lap's end.
    fn begin(&mut self, first: Instant) {
        if let Some(g) = self.grid.take() {
            let _ = g.send(first);
        }
    }

    fn end(&mut self, report: &mut Report) -> Option<String> {
        let samples = self.finish();
        let line = samples.failure_line();
        samples.attach(report);
        line
    }
}

async fn sample_until(
    mut sources: Vec<Box<dyn StatsSource>>,
    interval: Duration,
    based: oneshot::Sender<()>,
    first: oneshot::Receiver<Instant>,
    mut stopped: oneshot::Receiver<()>,
    live: Live,
) -> Samples {
    let mut out = Samples {
        kept: vec![false; sources.len()],
        ..Samples::default()
    };
    let mut last: BTreeMap<&'static str, f64> = BTreeMap::new();
    // The sample before the load is the counters' base (and opens the
    // connections), not a lap's.
    sample(&mut sources, &mut last, &mut out).await;
    let _ = based.send(());
    let mut next = tokio::select! {
        _ = &mut stopped => None,
        f = first => f.ok().map(|f| tokio::time::Instant::from_std(f) + interval),
    };
    while let Some(at) = next {
        let ending = tokio::select! {
            _ = &mut stopped => true,
            () = tokio::time::sleep_until(at) => false,
        };
        let mut point = sample(&mut sources, &mut last, &mut out).await;
        point.unix_ms = unix_ms();
        publish(&point, &live);
        out.points.push(point);
        if ending {
            break;
        }
        let now = tokio::time::Instant::now();
        let mut n = at;
        while n <= now {
            n += interval;
        }
        next = Some(n);
    }
    out.sources = sources.iter().map(|s| s.name()).collect();
    out
}

/// One sample of every source: levels as read, counters as their change
/// since `last`.
async fn sample(
    sources: &mut [Box<dyn StatsSource>],
    last: &mut BTreeMap<&'static str, f64>,
    out: &mut Samples,
) -> Point {
    let mut point = Point::default();
    for (s, kept) in sources.iter_mut().zip(out.kept.iter_mut()) {
        out.taken += 1;
        let mut got = sample_one(s.as_mut()).await;
        // A source keeps its connection from one sample to the next, and
        // the server may have closed it meanwhile (an idle timeout during
        // a long wait for `--start-at`): a sample that fails on a kept
        // connection is taken once more, on a new one.
        if got.is_err() && *kept {
            got = sample_one(s.as_mut()).await;
        }
        *kept = got.is_ok();
        match got {
            Ok(readings) => {
                for r in readings {
                    if !r.counter {
                        point.levels.insert(r.name, r.value);
                    } else if let Some(b) = last.insert(r.name, r.value) {
                        // Rounded: CPU seconds as floats leave 1e-15
                        // crumbs in a difference.
                        let change = ((r.value - b).max(0.0) * 1e6).round() / 1e6;
                        point.counts.insert(r.name, change);
                        // A count since the server started that fell
                        // to under half: the server started again (the
                        // validity verdict's `target` check). Not any
                        // fall: a process's CPU read from /proc can step
                        // back a little as its threads come and go.
                        if r.value < b / 2.0 {
                            *point.counts.entry(COUNTER_RESETS).or_default() += 1.0;
                        }
                    }
                }
            }
            Err(e) => {
                out.failures += 1;
                out.last_error = Some(format!("{}: {e}", s.name()));
            }
        }
    }
    point
}

/// The latest sample, for whoever watches live.
fn publish(point: &Point, live: &Live) {
    if let Ok(mut l) = live.lock() {
        l.clear();
        let all = point.levels.iter().chain(&point.counts);
        l.extend(all.map(|(k, v)| ((*k).to_string(), *v)));
    }
}

/// One sample of one source, within [`SAMPLE_LIMIT`].
async fn sample_one(s: &mut dyn StatsSource) -> Result<Vec<Reading>, String> {
    match tokio::time::timeout(SAMPLE_LIMIT, s.sample()).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer in {} ms", SAMPLE_LIMIT.as_millis())),
    }
}

impl Samples {
    /// Put each sample into the lap it belongs to (the lap whose end is
    /// nearest its wall clock, merged laps of a long run included), and
    /// the sampler's account into the report. Every sample lands in some
    /// lap: one taken late (a busy machine) or two nearest the same lap
    /// add their counts there, so a counter's laps sum to its change over
    /// the run.
    fn attach(self, report: &mut Report) {
        for point in self.points.into_vec() {
            let nearest = report
                .laps
                .iter_mut()
                .map(|l| ((l.unix_ms as f64 - point.unix_ms as f64).abs(), l))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, lap)) = nearest {
                for (k, v) in point.levels {
                    lap.server.insert(k.to_string(), v);
                }
                for (k, v) in point.counts {
                    *lap.server.entry(k.to_string()).or_default() += v;
                }
            }
        }
        report.server_stats = Some(ServerStatsReport {
            sources: self.sources,
            samples: self.taken,
            failures: self.failures,
            last_error: self.last_error,
        });
    }

    /// A line for the summary when samples failed.
    fn failure_line(&self) -> Option<String> {
        (self.failures > 0).then(|| {
            format!(
                "server stats: {} of {} samples failed (last: {})",
                self.failures,
                self.taken,
                self.last_error.as_deref().unwrap_or("?")
            )
        })
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
