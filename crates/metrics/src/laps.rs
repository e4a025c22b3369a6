//! The lap store: every lap of a short run, and a bounded number of them
//! however long a run goes (docs/explanations/resources.md section 3).
//!
//! The last [`RECENT`] laps are kept as they were; older ones are merged
//! [`GROUP`] to one (minutes, at the default one-second lap). Once there
//! are [`COARSE_MAX`] merged laps, neighbours merge pairwise and each
//! merged lap spans twice as many. So a store never holds more than
//! `RECENT + COARSE_MAX` laps: a 24-hour run at one-second laps keeps
//! its last ten minutes lap by lap and the rest as 1,430 minute laps.

use crate::{Histo, Lap};

/// Laps kept as they were: the last ten minutes at one-second laps.
pub const RECENT: usize = 600;
/// Older laps merged this many to one: minutes at one-second laps.
pub const GROUP: usize = 60;
/// The most merged laps; beyond it they merge pairwise.
pub const COARSE_MAX: usize = 1_440;

/// Something kept per lap that merges with the one after it.
pub trait Coarsen {
    /// `later` (the lap right after this one) folded into this one.
    fn absorb(&mut self, later: Self);
}

/// The laps of a run, coarsened as it grows.
#[derive(Debug)]
pub struct LapStore<T> {
    /// Merged laps, oldest first, each of up to `group` original laps.
    coarse: Vec<(T, usize)>,
    /// The most original laps a merged one holds now.
    group: usize,
    /// The recent laps, as they were.
    recent: std::collections::VecDeque<T>,
    /// How many recent laps are kept, and the most merged laps.
    keep: usize,
    coarse_max: usize,
}

impl<T: Coarsen> Default for LapStore<T> {
    fn default() -> Self {
        LapStore::with_limits(RECENT, GROUP, COARSE_MAX)
    }
}

impl<T: Coarsen> LapStore<T> {
    /// A store keeping `recent` laps as they were and merging older ones
    /// `group` to one, at most `coarse_max` of them (the defaults are
    /// [`RECENT`], [`GROUP`], [`COARSE_MAX`]; tests use small ones).
    pub fn with_limits(recent: usize, group: usize, coarse_max: usize) -> LapStore<T> {
        LapStore {
            coarse: Vec::new(),
            group: group.max(1),
            recent: std::collections::VecDeque::new(),
            keep: recent,
            coarse_max: coarse_max.max(2),
        }
    }

    pub fn push(&mut self, lap: T) {
        self.recent.push_back(lap);
        if self.recent.len() <= self.keep {
            return;
        }
        let Some(old) = self.recent.pop_front() else {
            return;
        };
        match self.coarse.last_mut() {
            Some((acc, n)) if *n < self.group => {
                acc.absorb(old);
                *n += 1;
            }
            _ => self.coarse.push((old, 1)),
        }
        if self.coarse.len() > self.coarse_max {
            self.halve();
        }
    }

    /// Merge neighbouring merged laps pairwise; each now spans twice as many.
    fn halve(&mut self) {
        let mut merged = Vec::with_capacity(self.coarse.len() / 2 + 1);
        let mut it = std::mem::take(&mut self.coarse).into_iter();
        while let Some((mut a, n)) = it.next() {
            let mut total = n;
            if let Some((b, m)) = it.next() {
                a.absorb(b);
                total += m;
            }
            merged.push((a, total));
        }
        self.coarse = merged;
        self.group *= 2;
    }

    pub fn len(&self) -> usize {
        self.coarse.len() + self.recent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The laps kept, oldest first.
    pub fn into_vec(self) -> Vec<T> {
        self.coarse
            .into_iter()
            .map(|(l, _)| l)
            .chain(self.recent)
            .collect()
    }
}

impl Coarsen for Lap {
    fn absorb(&mut self, later: Lap) {
        // Counts add; times, levels and what was pending are the later's.
        let merged = match (Histo::decode(&self.latency), Histo::decode(&later.latency)) {
            (Ok(mut a), Ok(b)) => {
                a.add(&b);
                Some(a.encode())
            }
            _ => None,
        };
        if let Some(m) = merged {
            self.latency = m;
        }
        absorb_kinds(&mut self.kinds, later.kinds);
        self.elapsed = later.elapsed;
        self.length += later.length;
        self.unix_ms = later.unix_ms;
        self.warmup &= later.warmup;
        self.ok += later.ok;
        self.errors += later.errors;
        self.delivered += later.delivered;
        self.pending = later.pending;
        let (c, l) = (&mut self.client, later.client);
        c.cpu_user += l.cpu_user;
        c.cpu_system += l.cpu_system;
        c.rss_bytes = l.rss_bytes;
        c.bytes_sent += l.bytes_sent;
        c.bytes_received += l.bytes_received;
        c.connections = l.connections;
        c.reconnects += l.reconnects;
    }
}

/// Each kind's histogram of `later` added to the same kind's of `into`
/// (a side that cannot be read keeps `into`'s).
fn absorb_kinds(into: &mut Vec<Vec<u8>>, later: Vec<Vec<u8>>) {
    if into.is_empty() {
        *into = later;
        return;
    }
    for (a, b) in into.iter_mut().zip(later) {
        if let (Ok(mut ha), Ok(hb)) = (Histo::decode(a), Histo::decode(&b)) {
            ha.add(&hb);
            *a = ha.encode();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lap(i: u64) -> Lap {
        let mut h = Histo::new();
        h.record(Duration::from_micros(100 + i % 1000));
        Lap {
            elapsed: Duration::from_secs(i + 1),
            length: Duration::from_secs(1),
            unix_ms: 1_000 * (i + 1),
            warmup: false,
            ok: 1,
            errors: 0,
            delivered: 0,
            pending: i,
            latency: h.encode(),
            kinds: vec![h.encode(), Histo::new().encode()],
            client: crate::ClientLap {
                bytes_sent: 10,
                rss_bytes: i,
                ..Default::default()
            },
        }
    }

    /// A short run keeps every lap as it was.
    #[test]
    fn a_short_run_keeps_every_lap() {
        let mut s = LapStore::default();
        (0..RECENT as u64).for_each(|i| s.push(lap(i)));
        let v = s.into_vec();
        assert_eq!(v.len(), RECENT);
        assert!(v.iter().all(|l| l.length == Duration::from_secs(1)));
    }

    /// A long run, scaled down (recent 60, groups of 6, at most 24 merged:
    /// the defaults divided by 10 and 60, so the pairwise merges happen
    /// after 60 + 144 laps instead of 600 + 86,400): at most 84 laps
    /// however many are pushed, nothing lost (every operation and byte
    /// counted once, the latency histograms merged), the recent laps as
    /// they were, times in order.
    #[test]
    fn a_long_run_stays_bounded_and_loses_nothing() {
        let n = 3_000u64;
        let mut s = LapStore::with_limits(60, 6, 24);
        let mut most = 0;
        for i in 0..n {
            s.push(lap(i));
            most = most.max(s.len());
        }
        assert!(most <= 60 + 24, "{most}");
        let v = s.into_vec();
        assert_eq!(v.iter().map(|l| l.ok).sum::<u64>(), n);
        assert_eq!(v.iter().map(|l| l.client.bytes_sent).sum::<u64>(), 10 * n);
        assert_eq!(
            v.iter().map(|l| l.length).sum::<Duration>(),
            Duration::from_secs(n)
        );
        let hist: u64 = v
            .iter()
            .map(|l| Histo::decode(&l.latency).unwrap().len())
            .sum();
        assert_eq!(hist, n);
        let first_kind: u64 = v
            .iter()
            .map(|l| Histo::decode(&l.kinds[0]).unwrap().len())
            .sum();
        assert_eq!(first_kind, n, "each kind's lap histograms merged too");
        assert!(v.windows(2).all(|w| w[0].unix_ms < w[1].unix_ms));
        let last = v.last().unwrap();
        assert_eq!(
            (last.unix_ms, last.pending, last.client.rss_bytes),
            (1_000 * n, n - 1, n - 1)
        );
        assert!(v[v.len() - 60..]
            .iter()
            .all(|l| l.length == Duration::from_secs(1)));
        // 2,940 laps merged: 24 groups of 96 hold too few, so groups of
        // 6 doubled five times, 192 laps each.
        assert_eq!(v[0].length, Duration::from_secs(192));
    }
}
