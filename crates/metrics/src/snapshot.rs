//! A worker's measurements over one span (an interval, a phase, a run).
//! A worker records into its own snapshot with plain field updates, and
//! snapshots merge by addition, so the hot path shares nothing.

use std::time::Duration;

use crate::{ErrorKind, Histo, OpError, Span};

/// Error counts of one operation kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Indexed by [`ErrorKind::index`].
    pub by_kind: [u64; ErrorKind::ALL.len()],
    /// Server errors by class; a handful of entries, so a linear scan.
    pub server_classes: Vec<(&'static str, u64)>,
}

impl ErrorCounts {
    #[inline]
    pub fn count(&mut self, e: OpError) {
        self.by_kind[e.kind.index()] += 1;
        if e.kind == ErrorKind::Server {
            match self.server_classes.iter_mut().find(|(c, _)| *c == e.class) {
                Some((_, n)) => *n += 1,
                None => self.server_classes.push((e.class, 1)),
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.by_kind.iter().fold(0, |a, b| a.saturating_add(*b))
    }

    pub fn get(&self, k: ErrorKind) -> u64 {
        self.by_kind[k.index()]
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.by_kind.iter_mut().zip(other.by_kind) {
            *a = a.saturating_add(b);
        }
        for &(class, n) in &other.server_classes {
            match self.server_classes.iter_mut().find(|(c, _)| *c == class) {
                Some((_, m)) => *m = m.saturating_add(n),
                None => self.server_classes.push((class, n)),
            }
        }
    }
}

/// Measurements of one operation kind.
#[derive(Debug, Clone, Default)]
pub struct KindStats {
    /// Completion minus intended start (coordinated omission corrected).
    pub latency: Histo,
    /// Completion minus actual send.
    pub service: Histo,
    /// Successes whose latency and service time were the same (the closed
    /// loop starts an operation when it is due), recorded once instead of
    /// twice on the hot path ([`Snapshot::ok_same`]); [`Snapshot::settle`]
    /// and `merge` fold them into both histograms, so a snapshot that has
    /// been handed over or merged has this empty.
    pub same: Histo,
    /// Actual send minus intended start, per operation sent, in the open
    /// loop and bursts: how late the generator itself was (pgbench's
    /// schedule lag). Empty in the closed loop, where it is 0 by
    /// construction and not recorded.
    pub send_lag: Histo,
    pub ok: u64,
    /// Of `ok`, the deliveries: messages a listener received that no
    /// operation of its own asked for (docs/explanations/rates.md). They are counted
    /// and rated apart from the operations a run issued.
    pub delivered: u64,
    pub errors: ErrorCounts,
}

impl KindStats {
    /// Everything recorded under this kind: operations settled, or for a
    /// kind of deliveries, the messages received.
    pub fn count(&self) -> u64 {
        self.ok.saturating_add(self.errors.total())
    }

    /// Operations of this kind that succeeded, deliveries not included.
    pub fn ok_ops(&self) -> u64 {
        self.ok.saturating_sub(self.delivered)
    }

    pub fn merge(&mut self, o: &KindStats) {
        self.latency.add(&o.latency);
        self.service.add(&o.service);
        self.send_lag.add(&o.send_lag);
        if !o.same.is_empty() {
            self.latency.add(&o.same);
            self.service.add(&o.same);
        }
        // Counts saturate: snapshots rebuilt from a report file may hold
        // any number.
        self.ok = self.ok.saturating_add(o.ok);
        self.delivered = self.delivered.saturating_add(o.delivered);
        self.errors.merge(&o.errors);
    }

    /// Fold `same` into latency and service time.
    fn settle(&mut self) {
        if !self.same.is_empty() {
            self.latency.add(&self.same);
            self.service.add(&self.same);
            self.same.reset();
        }
    }
}

/// Everything measured over a span, for a fixed set of operation kinds and
/// domain counters (their names live with the workload).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub kinds: Vec<KindStats>,
    /// Workload-defined counters (voter: accepted per contestant, invalid,
    /// over limit), indexed as the workload names them.
    pub domains: Vec<u64>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Connections re-established after a failure.
    pub reconnects: u64,
    /// Connection attempts that failed.
    pub connect_failures: u64,
    /// Connections that gave up on the target (down for longer than the
    /// timeout) before the run's end.
    pub gave_up: u64,
    /// The indices each worker issued, added once by each worker when it
    /// is done (see [`Span`]); merged by concatenation.
    pub spans: Vec<Span>,
}

impl Snapshot {
    pub fn new(kinds: usize, domains: usize) -> Self {
        Snapshot {
            kinds: vec![KindStats::default(); kinds],
            domains: vec![0; domains],
            ..Snapshot::default()
        }
    }

    /// A successful operation of kind `kind`, with an optional domain count.
    #[inline]
    pub fn ok(&mut self, kind: usize, latency: Duration, service: Duration, domain: Option<u16>) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.ok += 1;
            k.latency.record(latency);
            k.service.record(service);
        }
        if let Some(d) = domain.and_then(|d| self.domains.get_mut(usize::from(d))) {
            *d += 1;
        }
    }

    /// [`Snapshot::ok`] for an operation whose latency and service time
    /// are both `d`: one histogram record instead of two. Call
    /// [`Snapshot::settle`] before anyone reads the histograms.
    #[inline]
    pub fn ok_same(&mut self, kind: usize, d: Duration, domain: Option<u16>) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.ok += 1;
            k.same.record(d);
        }
        if let Some(d) = domain.and_then(|d| self.domains.get_mut(usize::from(d))) {
            *d += 1;
        }
    }

    /// A delivery of kind `kind` (see [`KindStats::delivered`]), `latency`
    /// after it was meant to leave its sender: recorded as
    /// [`Snapshot::ok_same`] does, and counted as a delivery.
    #[inline]
    pub fn delivery(&mut self, kind: usize, latency: Duration, domain: Option<u16>) {
        self.ok_same(kind, latency, domain);
        if let Some(k) = self.kinds.get_mut(kind) {
            k.delivered += 1;
        }
    }

    /// An operation of kind `kind` handed to its connection `lag` after
    /// its intended start (the open loop's send lag).
    #[inline]
    pub fn lagged(&mut self, kind: usize, lag: Duration) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.send_lag.record(lag);
        }
    }

    /// Fold what [`Snapshot::ok_same`] recorded into both histograms.
    pub fn settle(&mut self) {
        self.kinds.iter_mut().for_each(KindStats::settle);
    }

    /// A failed operation. Its latency is recorded too when it was sent, so
    /// slow failures show; operations that never started (queue_full,
    /// dropped) have no timing.
    #[inline]
    pub fn failed(&mut self, kind: usize, err: OpError, timing: Option<(Duration, Duration)>) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.errors.count(err);
            if let Some((latency, service)) = timing {
                k.latency.record(latency);
                k.service.record(service);
            }
        }
    }

    /// `n` operations that were never started because they were more than
    /// the maximum lag late (counted in one step: see the engine's pace).
    pub fn dropped(&mut self, kind: usize, n: u64) {
        if let Some(k) = self.kinds.get_mut(kind) {
            k.errors.by_kind[ErrorKind::Dropped.index()] += n;
        }
    }

    /// Operations issued and settled (deliveries not included).
    pub fn ops(&self) -> u64 {
        self.kinds
            .iter()
            .map(|k| k.count().saturating_sub(k.delivered))
            .fold(0, u64::saturating_add)
    }

    /// Operations that succeeded (deliveries not included).
    pub fn ok_ops(&self) -> u64 {
        self.kinds
            .iter()
            .map(KindStats::ok_ops)
            .fold(0, u64::saturating_add)
    }

    /// Messages received by listeners (docs/explanations/rates.md).
    pub fn deliveries(&self) -> u64 {
        self.kinds
            .iter()
            .map(|k| k.delivered)
            .fold(0, u64::saturating_add)
    }

    pub fn errors(&self) -> u64 {
        self.kinds
            .iter()
            .map(|k| k.errors.total())
            .fold(0, u64::saturating_add)
    }

    /// Latency of the operations of all kinds together; kinds that are
    /// deliveries are left out (their latency is another measure: from a
    /// sender's intended start to a listener's read).
    pub fn latency_all(&self) -> Histo {
        let mut h = Histo::new();
        for k in self.kinds.iter().filter(|k| k.delivered == 0) {
            h.add(&k.latency);
        }
        h
    }

    /// Add `other` into `self`. Shapes grow to fit, so snapshots from
    /// different sources merge.
    pub fn merge(&mut self, other: &Snapshot) {
        if self.kinds.len() < other.kinds.len() {
            self.kinds
                .resize_with(other.kinds.len(), KindStats::default);
        }
        for (a, b) in self.kinds.iter_mut().zip(&other.kinds) {
            a.merge(b);
        }
        if self.domains.len() < other.domains.len() {
            self.domains.resize(other.domains.len(), 0);
        }
        for (a, b) in self.domains.iter_mut().zip(&other.domains) {
            *a = a.saturating_add(*b);
        }
        self.bytes_sent = self.bytes_sent.saturating_add(other.bytes_sent);
        self.bytes_received = self.bytes_received.saturating_add(other.bytes_received);
        self.reconnects = self.reconnects.saturating_add(other.reconnects);
        self.connect_failures = self.connect_failures.saturating_add(other.connect_failures);
        self.gave_up = self.gave_up.saturating_add(other.gave_up);
        self.spans.extend_from_slice(&other.spans);
    }

    /// Zero every count, keeping allocations for reuse.
    pub fn reset(&mut self) {
        for k in &mut self.kinds {
            k.latency.reset();
            k.service.reset();
            k.same.reset();
            k.send_lag.reset();
            k.ok = 0;
            k.delivered = 0;
            k.errors = ErrorCounts::default();
        }
        self.domains.iter_mut().for_each(|d| *d = 0);
        self.bytes_sent = 0;
        self.bytes_received = 0;
        self.reconnects = 0;
        self.connect_failures = 0;
        self.gave_up = 0;
        self.spans.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator, so the test needs no crate.
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    /// Deliveries are counted apart: one publish to three subscribers is
    /// one operation and three deliveries (docs/explanations/rates.md); send lag
    /// merges like the other histograms.
    #[test]
    fn deliveries_are_not_operations_and_send_lag_merges() {
        let us = Duration::from_micros;
        let mut publisher = Snapshot::new(2, 3);
        publisher.ok(0, us(50), us(40), None);
        publisher.lagged(0, us(10));
        let mut subscriber = Snapshot::new(2, 3);
        for _ in 0..3 {
            subscriber.delivery(1, us(70), Some(0));
        }
        let mut all = Snapshot::new(2, 3);
        all.merge(&publisher);
        all.merge(&subscriber);
        assert_eq!((all.ops(), all.ok_ops(), all.deliveries()), (1, 1, 3));
        assert_eq!(all.kinds[1].count(), 3);
        assert_eq!(all.kinds[0].send_lag.len(), 1);
        assert_eq!(
            all.kinds[0].send_lag.max(),
            publisher.kinds[0].send_lag.max()
        );
        // The laps' latency is the operations', not the deliveries'.
        assert_eq!(all.latency_all().len(), 1);
        all.reset();
        assert_eq!((all.deliveries(), all.kinds[0].send_lag.len()), (0, 0));
    }

    /// The counts themselves, not only their agreement between one
    /// snapshot and several merged: successes, failures by kind and
    /// server class, operations dropped unsent, and their totals.
    #[test]
    fn counts_are_what_was_recorded() {
        let us = Duration::from_micros;
        let mut s = Snapshot::new(2, 3);
        for _ in 0..3 {
            s.ok(0, us(10), us(5), Some(2));
        }
        for _ in 0..2 {
            s.ok_same(1, us(20), Some(1));
        }
        s.failed(0, OpError::server("40001"), Some((us(30), us(30))));
        s.failed(0, OpError::server("40001"), None);
        s.failed(1, OpError::new(ErrorKind::Timeout), None);
        s.dropped(1, 5);
        s.dropped(1, 2);
        s.dropped(9, 1);
        assert_eq!((s.kinds[0].ok, s.kinds[1].ok), (3, 2));
        assert_eq!(s.domains, vec![0, 2, 3]);
        let e0 = &s.kinds[0].errors;
        assert_eq!(e0.total(), 2);
        assert_eq!(e0.server_classes, vec![("40001", 2)]);
        let e1 = &s.kinds[1].errors;
        assert_eq!(e1.get(ErrorKind::Dropped), 7);
        assert_eq!(e1.get(ErrorKind::Timeout), 1);
        assert!(e1.server_classes.is_empty(), "a timeout has no class");
        assert_eq!((s.ops(), s.ok_ops(), s.errors()), (15, 5, 10));
        assert_eq!(s.kinds[0].latency.len(), 4, "a failure sent is timed");
    }

    /// A snapshot merged into a smaller one (another source's shape)
    /// grows to hold it, nothing dropped.
    #[test]
    fn a_merge_grows_to_fit() {
        let us = Duration::from_micros;
        let mut small = Snapshot::new(1, 1);
        let mut big = Snapshot::new(3, 4);
        big.ok(2, us(10), us(5), Some(3));
        small.merge(&big);
        assert_eq!(small.kinds.len(), 3);
        assert_eq!(small.kinds[2].ok, 1);
        assert_eq!(small.domains, vec![0, 0, 0, 1]);
        // And a smaller one into a bigger keeps the bigger shape.
        big.merge(&Snapshot::new(1, 1));
        assert_eq!((big.kinds.len(), big.domains.len()), (3, 4));
    }

    #[test]
    fn merging_workers_equals_recording_everything_in_one() {
        let mut one = Snapshot::new(2, 3);
        let mut workers: Vec<Snapshot> = (0..7).map(|_| Snapshot::new(2, 3)).collect();
        let mut s = 42;
        for i in 0..50_000u64 {
            let lat = Duration::from_nanos(lcg(&mut s) % 50_000_000 + 1);
            let svc = lat / 2;
            let kind = (i % 2) as usize;
            let w = &mut workers[(lcg(&mut s) % 7) as usize];
            if i % 5 == 0 {
                // The closed loop's case: one record, settled later.
                one.ok(kind, lat, lat, None);
                w.ok_same(kind, lat, None);
            } else if i % 97 == 0 {
                let e = OpError::server("40001");
                one.failed(kind, e, Some((lat, svc)));
                w.failed(kind, e, Some((lat, svc)));
            } else {
                let d = Some((i % 3) as u16);
                one.ok(kind, lat, svc, d);
                w.ok(kind, lat, svc, d);
            }
        }
        let mut merged = Snapshot::new(2, 3);
        for (i, w) in workers.iter_mut().enumerate() {
            // Settled or not, a merge counts `same` in both histograms.
            if i % 2 == 0 {
                w.settle();
                assert!(w.kinds.iter().all(|k| k.same.is_empty()));
            }
            merged.merge(w);
        }
        assert_eq!(merged.ops(), one.ops());
        assert_eq!(merged.domains, one.domains);
        for (a, b) in merged.kinds.iter().zip(&one.kinds) {
            assert_eq!(a.errors, b.errors);
            assert_eq!(a.ok, b.ok);
            for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                assert_eq!(a.latency.percentile(p), b.latency.percentile(p));
                assert_eq!(a.service.percentile(p), b.service.percentile(p));
            }
            assert_eq!(a.latency.inner(), b.latency.inner());
        }
    }
}
