//! One runtime thread's measurements: the recorder every worker on that
//! thread records into, and the hand-over of its snapshots to the collector
//! at lap boundaries.
//!
//! Histograms and counters live once per thread, not once per connection:
//! a thread serving 5,000 connections holds one latency histogram per kind,
//! not 5,000, so memory and the lap hand-over cost do not grow with the
//! connections, and the histograms a thread records into stay in its cache.
//! The recorder is an `Rc<RefCell<..>>` shared by the workers of one
//! thread (they run on one `LocalSet`), so recording is a plain borrow and
//! field update: no atomics, no locks. A borrow is never held across an
//! `.await`, so it can never be found taken.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use loadrig_metrics::Snapshot;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::collect::Report;

/// The recorder of one thread, shared by its workers.
pub(crate) type Shared = Rc<RefCell<Recorder>>;

/// How long after a lap boundary a thread hands its lap over: the workers
/// fold their bytes and outstanding counts in at the boundary itself, and
/// the collector closes the lap 20 ms after it (`collect::GRACE`).
const HAND_OVER_AFTER: Duration = Duration::from_millis(5);

pub(crate) struct Recorder {
    /// [warm-up, measured], since the last hand-over.
    pub snaps: [Snapshot; 2],
    /// Operations outstanding per worker of this thread, as each last said.
    pending: Vec<u64>,
    /// The latest completion or delivery of the thread's finished workers.
    last_event: Option<Instant>,
    thread: usize,
    shape: (usize, usize),
    tx: UnboundedSender<Report>,
}

impl Recorder {
    pub fn shared(
        thread: usize,
        workers: usize,
        shape: (usize, usize),
        tx: UnboundedSender<Report>,
    ) -> Shared {
        Rc::new(RefCell::new(Recorder {
            snaps: [
                Snapshot::new(shape.0, shape.1),
                Snapshot::new(shape.0, shape.1),
            ],
            pending: vec![0; workers],
            last_event: None,
            thread,
            shape,
            tx,
        }))
    }

    /// Worker `local` of this thread has `outstanding` operations.
    pub fn set_pending(&mut self, local: usize, outstanding: u64) {
        if let Some(p) = self.pending.get_mut(local) {
            *p = outstanding;
        }
    }

    /// A worker of this thread is done; its last event was `at`.
    pub fn finished(&mut self, local: usize, at: Option<Instant>) {
        self.set_pending(local, 0);
        self.last_event = self.last_event.max(at);
    }

    /// Hand the snapshots since the last hand-over to the collector and
    /// start fresh ones; `last`: the thread's workers are all done.
    pub fn hand_over(&mut self, last: bool) {
        let fresh = || Snapshot::new(self.shape.0, self.shape.1);
        // Handed over unsettled: the collector's merge folds `same` into
        // both histograms.
        let snaps = [
            std::mem::replace(&mut self.snaps[0], fresh()),
            std::mem::replace(&mut self.snaps[1], fresh()),
        ];
        // The collector outlives every thread's workers; if it is gone
        // the run is over and there is no one left to tell.
        let _ = self.tx.send(Report {
            thread: self.thread,
            snaps,
            pending: self.pending.iter().sum(),
            last,
            last_event: self.last_event,
        });
    }
}

/// Hand the thread's lap over shortly after each lap boundary, for as long
/// as the thread's workers run (the caller aborts this task after them).
pub(crate) async fn laps(rec: Shared, start: Instant, interval: Duration) {
    let mut next = start + interval + HAND_OVER_AFTER;
    loop {
        tokio::time::sleep_until(next).await;
        rec.borrow_mut().hand_over(false);
        let now = Instant::now();
        while next <= now {
            next += interval;
        }
    }
}
