//! One runtime thread's measurements: the recorder every worker on that
//! thread records into, and the hand-over of its snapshots to the collector
//! at lap boundaries.
//!
//! Histograms and counters live once per thread, not once per connection:
//! a thread serving 5,000 connections holds one latency histogram per kind,
//! not 5,000, so memory and the lap hand-over cost do not grow with the
//! connections, and the histograms a thread records into stay in its cache.
//! The thread's lap is handed over by the first of its workers to pass
//! the lap boundary ([`Recorder::lap_passed`]).
//! The recorder is an `Rc<RefCell<..>>` shared by the workers of one
//! thread (they run on one `LocalSet`), so recording is a plain borrow and
//! field update: no atomics, no locks. A borrow is never held across an
//! `.await`, so it can never be found taken.

use loadrig_metrics::Snapshot;
use std::cell::RefCell;
use std::rc::Rc;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::collect::Handover;

/// The recorder of one thread, shared by its workers.
pub(crate) type Shared = Rc<RefCell<Recorder>>;

pub(crate) struct Recorder {
    /// [warm-up, measured], since the last hand-over.
    pub snaps: [Snapshot; 2],
    /// Operations outstanding per worker of this thread, as each last said.
    pending: Vec<u64>,
    /// Whether each worker of this thread had its connection up, as each
    /// last said (at its lap fold).
    up: Vec<bool>,
    /// The latest completion, delivery or broken connection its workers
    /// have folded (at each lap and at their end).
    last_event: Option<Instant>,
    /// The lap boundary last handed over.
    handed: Option<Instant>,
    thread: usize,
    shape: (usize, usize),
    tx: UnboundedSender<Handover>,
}

impl Recorder {
    pub fn shared(
        thread: usize,
        workers: usize,
        shape: (usize, usize),
        tx: UnboundedSender<Handover>,
    ) -> Shared {
        Rc::new(RefCell::new(Recorder {
            snaps: [
                Snapshot::new(shape.0, shape.1),
                Snapshot::new(shape.0, shape.1),
            ],
            pending: vec![0; workers],
            up: vec![true; workers],
            last_event: None,
            handed: None,
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

    /// Worker `local` of this thread has its connection up, or not.
    pub fn set_up(&mut self, local: usize, up: bool) {
        if let Some(u) = self.up.get_mut(local) {
            *u = up;
        }
    }

    /// A worker of this thread is done; its last event was `at`. Its
    /// link counts as it was when the worker finished (set by its last
    /// fold), so the last lap says how many connections the run ended with.
    pub fn finished(&mut self, local: usize, at: Option<Instant>) {
        self.set_pending(local, 0);
        self.saw(at);
    }

    /// A worker of this thread folded its latest event, `at`.
    pub fn saw(&mut self, at: Option<Instant>) {
        self.last_event = self.last_event.max(at);
    }

    /// A worker of this thread passed the lap boundary `at`: the first to
    /// do so hands the thread's lap over, as soon as the boundary is seen
    /// (a busy thread's workers notice it between two of their turns, a
    /// waiting one's are woken for it), so the collector's 20 ms grace is
    /// left to the thread. Bytes folded by the thread's later workers
    /// count in the next lap.
    pub fn lap_passed(&mut self, at: Instant) {
        if self.handed.is_none_or(|h| at > h) {
            self.handed = Some(at);
            self.hand_over(false);
        }
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
        let _ = self.tx.send(Handover {
            thread: self.thread,
            snaps,
            pending: self.pending.iter().sum(),
            connections: self.up.iter().filter(|u| **u).count() as u64,
            // This thread's sockets' bytes, up to now: the hand-over runs
            // on the thread itself.
            traffic: loadrig_metrics::take_traffic(),
            last,
            last_event: self.last_event,
        });
    }
}
