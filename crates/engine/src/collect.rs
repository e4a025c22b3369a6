//! The collector: merges the threads' snapshots at lap boundaries into lap
//! figures and run totals, and shows each lap to the caller as it closes.
//! It receives one [`Handover`] per engine thread per lap, however many
//! connections each thread serves.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadrig_metrics::{ClientLap, LapStore, LapView, ProcSample, Snapshot};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, MissedTickBehavior};

use crate::{EngineConfig, Lap, Outcome};

/// How long after a lap boundary the collector waits for the workers'
/// snapshots of that lap; later ones count in the next lap.
const GRACE: Duration = Duration::from_millis(20);

/// What a thread hands over to the collector
/// ([`Recorder::hand_over`](crate::record::Recorder::hand_over)): its
/// workers' snapshots since its last hand-over. Named for the hand-over,
/// not a report: the run's report is `loadrig_report::Report`, made from
/// the collector's totals.
pub(crate) struct Handover {
    /// The engine thread (`lanes`), not a connection.
    pub thread: usize,
    /// [warm-up, measured].
    pub snaps: [Snapshot; 2],
    /// Operations started and not completed.
    pub pending: u64,
    /// The thread's workers whose connection is up.
    pub connections: u64,
    /// Bytes (sent, received) by the thread's sockets since its last hand-over.
    pub traffic: (u64, u64),
    /// The thread's workers are all done; this is its final hand-over.
    pub last: bool,
    /// The thread's latest completion, delivery or broken connection so
    /// far (its workers' as of their last fold).
    pub last_event: Option<Instant>,
}

pub(crate) async fn collect(
    cfg: &EngineConfig,
    mut rx: UnboundedReceiver<Handover>,
    threads: usize,
    start: Instant,
    mut on_lap: impl FnMut(&LapView<'_>),
) -> Outcome {
    let blank = || Snapshot::new(cfg.kinds, cfg.domains);
    let measure_start = start + cfg.warmup;
    let mut warmup = blank();
    let mut measured = blank();
    let mut lap = blank();
    let mut pending = vec![0u64; threads.max(1)];
    let mut up = vec![0u64; threads.max(1)];
    // Bytes of the lap being collected, as the threads' hand-overs said.
    let mut traffic = (0u64, 0u64);
    let mut live = threads;
    let mut laps = Laps {
        start,
        measure_start,
        last: start,
        latest: None,
        kept: LapStore::default(),
        proc: ProcSample::own(),
    };
    let mut ticks = tokio::time::interval_at(start + cfg.interval + GRACE, cfg.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);

    // Threads heard from since the last lap closed (or finished): a lap
    // whose threads have not all handed over by its grace waits for them, up
    // to half an interval, so a thread that was busy or descheduled at the
    // boundary does not leave the lap empty and double the next one.
    let mut heard = vec![false; threads.max(1)];
    // Threads done: nothing more to wait for from them.
    let mut done = vec![false; threads.max(1)];
    let all_heard = |heard: &[bool], done: &[bool]| heard.iter().zip(done).all(|(h, d)| *h || *d);
    let mut waiting: Option<Instant> = None;
    let hold = tokio::time::sleep_until(start);
    tokio::pin!(hold);
    while live > 0 {
        tokio::select! {
            msg = rx.recv() => {
                let Some(r) = msg else { break };
                warmup.merge(&r.snaps[0]);
                measured.merge(&r.snaps[1]);
                lap.merge(&r.snaps[0]);
                lap.merge(&r.snaps[1]);
                if let Some(p) = pending.get_mut(r.thread) {
                    *p = if r.last { 0 } else { r.pending };
                }
                traffic.0 += r.traffic.0;
                traffic.1 += r.traffic.1;
                if let Some(u) = up.get_mut(r.thread) {
                    *u = r.connections;
                }
                if let Some(h) = heard.get_mut(r.thread) {
                    *h = true;
                }
                laps.latest = laps.latest.max(r.last_event);
                if r.last {
                    live -= 1;
                    if let Some(d) = done.get_mut(r.thread) {
                        *d = true;
                    }
                }
                if let Some(boundary) = waiting {
                    if all_heard(&heard, &done) {
                        waiting = None;
                        heard.iter_mut().for_each(|h| *h = false);
                        laps.close(boundary, &mut lap, &measured, (pending.iter().sum(), up.iter().sum(), std::mem::take(&mut traffic)), &mut on_lap);
                    }
                }
            }
            at = ticks.tick(), if waiting.is_none() => {
                let boundary = at - GRACE;
                if all_heard(&heard, &done) {
                    heard.iter_mut().for_each(|h| *h = false);
                    laps.close(boundary, &mut lap, &measured, (pending.iter().sum(), up.iter().sum(), std::mem::take(&mut traffic)), &mut on_lap);
                } else {
                    waiting = Some(boundary);
                    hold.as_mut().reset(boundary + cfg.interval / 2);
                }
            }
            () = &mut hold, if waiting.is_some() => {
                if let Some(boundary) = waiting.take() {
                    heard.iter_mut().for_each(|h| *h = false);
                    laps.close(boundary, &mut lap, &measured, (pending.iter().sum(), up.iter().sum(), std::mem::take(&mut traffic)), &mut on_lap);
                }
            }
        }
    }
    // The run ends at its last completion or delivery, not when the
    // workers noticed (a drain's idle tail is not the run's time).
    let now = Instant::now();
    let end = laps.latest.map_or(now, |t| t.min(now));
    if lap.ops() > 0 || lap.deliveries() > 0 || laps.kept.is_empty() {
        laps.close(
            end.max(laps.last),
            &mut lap,
            &measured,
            (0, up.iter().sum(), traffic),
            &mut on_lap,
        );
    }
    Outcome {
        warmup,
        measured,
        elapsed: end.saturating_duration_since(measure_start),
        laps: laps.kept.into_vec(),
        interrupted: false,
    }
}

/// Lap boundaries and the laps kept for the report.
struct Laps {
    start: Instant,
    measure_start: Instant,
    /// End of the previous lap.
    last: Instant,
    /// The run's latest completion, delivery or broken connection the
    /// threads have handed over.
    latest: Option<Instant>,
    /// Coarsened as the run grows, so a run of hours stays bounded.
    kept: LapStore<Lap>,
    /// This process's CPU and memory at the end of the previous lap.
    proc: Option<ProcSample>,
}

impl Laps {
    /// Close the lap ending at `end` with `(pending, connections up, bytes
    /// sent and received)`:
    /// show it, keep it, and empty `lap`. The one read of `/proc/self/stat`
    /// per lap is here, on the collector's cold path.
    fn close(
        &mut self,
        end: Instant,
        lap: &mut Snapshot,
        measured: &Snapshot,
        (pending, connections, (bytes_sent, bytes_received)): (u64, u64, (u64, u64)),
        on_lap: &mut impl FnMut(&LapView<'_>),
    ) {
        let now = ProcSample::own();
        let (cpu_user, cpu_system) = match (&now, &self.proc) {
            (Some(n), Some(p)) => n.cpu_since(p),
            _ => Default::default(),
        };
        let client = ClientLap {
            cpu_user,
            cpu_system,
            rss_bytes: now.map_or(0, |n| n.rss_bytes),
            bytes_sent,
            bytes_received,
            connections,
            reconnects: lap.reconnects,
        };
        self.proc = now.or(self.proc);
        // A total's rate is over the time up to the latest event, as the
        // run's overall rate is over the time up to its last: laps in which
        // nothing arrives (a drain's tail) do not dilute it, and the last
        // lap's total is the overall one.
        let active = self.latest.map_or(end, |t| t.min(end));
        let view = LapView {
            elapsed: end.saturating_duration_since(self.start),
            length: end.saturating_duration_since(self.last),
            warmup: end <= self.measure_start,
            lap,
            total: measured,
            measured: end.saturating_duration_since(self.measure_start),
            active: active.saturating_duration_since(self.measure_start),
            pending,
            client,
        };
        on_lap(&view);
        self.kept.push(Lap {
            elapsed: view.elapsed,
            length: view.length,
            unix_ms: unix_ms(),
            warmup: view.warmup,
            ok: lap.ok_ops(),
            errors: lap.errors(),
            delivered: lap.deliveries(),
            pending,
            latency: lap.latency_all().encode(),
            kinds: match lap.kinds.len() {
                0 | 1 => Vec::new(),
                _ => lap.kinds.iter().map(|k| k.latency.encode()).collect(),
            },
            client,
        });
        self.last = end;
        lap.reset();
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
