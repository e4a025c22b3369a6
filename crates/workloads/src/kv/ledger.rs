//! The kv drivers' ledger: which write transactions were acknowledged
//! (and when each was sent and answered), left in doubt or failed. The
//! drivers hand it their accounts when they are dropped; a `--processes`
//! child hands it to its parent ([`Ledger::share`], [`Ledger::gather`]),
//! and a run that keeps its data stores it in its report, so `loadrig
//! verify REPORT` checks what the run itself would have.
//!
//! The times order two acknowledged writes of one row: a write answered
//! before another was sent came first, so the row must not end holding
//! it (the later one was lost). Times are microseconds since the
//! ledger's epoch; a child's are moved onto its parent's epoch by the
//! difference of their wall clocks, so a little slack ([`SLACK_US`])
//! stands between "before" and "at the same time".

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Two writes closer than this are taken as concurrent: either may be
/// the row's last.
pub(super) const SLACK_US: u64 = 100;

/// Times of a transaction whose times are not known (a ledger read from
/// a report without them): it orders nothing.
const UNKNOWN: Times = Times {
    sent: 0,
    answered: u64::MAX,
};

/// When a transaction was sent and answered, microseconds since the
/// ledger's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Times {
    pub sent: u64,
    pub answered: u64,
}

/// An acknowledged write transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Acked {
    pub index: u64,
    pub times: Times,
}

/// One driver's account, handed over when it is dropped.
#[derive(Debug, Default)]
pub(super) struct Account {
    pub acked: Vec<Acked>,
    pub doubt: Vec<u64>,
    /// Failed cleanly (the target said no): must not have landed.
    pub failed: Vec<u64>,
}

/// The transactions this process's drivers wrote with, gathered as they
/// are dropped.
#[derive(Debug)]
pub struct Ledger {
    epoch: Instant,
    epoch_unix_us: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Whether drivers ran in this process, or a ledger was gathered (not
    /// so in `loadrig verify` of a report that kept none).
    drove: bool,
    account: Account,
    /// The wall clock the account's times count from: this process's
    /// epoch once its drivers put theirs, else the earliest gathered.
    frame_unix_us: Option<u64>,
}

impl Default for Ledger {
    fn default() -> Self {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Ledger {
            epoch: Instant::now(),
            epoch_unix_us: unix,
            inner: Mutex::default(),
        }
    }
}

/// Indices `first, first + step, ...`, `count` of them.
type Run = (u64, u64, u64);

/// A ledger as JSON: the acknowledged transactions as runs of one step
/// (sorted, they are a few runs broken where one failed), their times as
/// differences (sent from the previous one's sent, answered from its
/// own sent), and the wall clock of the epoch.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Share {
    acked: Vec<Run>,
    #[serde(default)]
    times: Vec<i64>,
    #[serde(default)]
    epoch_unix_us: u64,
    doubt: Vec<u64>,
    failed: Vec<u64>,
}

/// `indices` (sorted) as runs of one step.
fn runs(indices: impl Iterator<Item = u64>) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for i in indices {
        match out.last_mut() {
            Some((first, step, n)) if *n == 1 && i > *first => {
                *step = i - *first;
                *n = 2;
            }
            Some((first, step, n)) if first.checked_add(step.saturating_mul(*n)) == Some(i) => {
                *n += 1;
            }
            _ => out.push((i, 1, 1)),
        }
    }
    out
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Microseconds since the epoch, now.
    pub(super) fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    pub fn drove(&self) {
        self.lock().drove = true;
    }

    pub(super) fn put(&self, account: Account) {
        let mut l = self.lock();
        l.frame_unix_us.get_or_insert(self.epoch_unix_us);
        l.account.acked.extend(account.acked);
        l.account.doubt.extend(account.doubt);
        l.account.failed.extend(account.failed);
    }

    /// This process's ledger as JSON: for its `--processes` parent, or
    /// its report; `None` when no driver ran.
    pub fn share(&self) -> Option<Box<serde_json::value::RawValue>> {
        let l = self.lock();
        if !l.drove {
            return None;
        }
        let mut acked = l.account.acked.clone();
        acked.sort_unstable_by_key(|a| a.index);
        // Times all known or none: one unknown would shift the rest.
        let mut times = Vec::new();
        if acked.iter().all(|a| a.times != UNKNOWN) {
            let mut prev = 0i64;
            for a in &acked {
                let sent = i64::try_from(a.times.sent).unwrap_or(i64::MAX);
                let answered = i64::try_from(a.times.answered).unwrap_or(i64::MAX);
                times.push(sent.saturating_sub(prev));
                times.push(answered.saturating_sub(sent));
                prev = sent;
            }
        }
        let share = Share {
            acked: runs(acked.iter().map(|a| a.index)),
            times,
            epoch_unix_us: l.frame_unix_us.unwrap_or(self.epoch_unix_us),
            doubt: l.account.doubt.clone(),
            failed: l.account.failed.clone(),
        };
        serde_json::value::to_raw_value(&share).ok()
    }

    /// Ledgers written by [`Ledger::share`] (the children of
    /// `--processes`, or a report's), as one. A run past 2^32 indices is
    /// not one a process wrote: refused.
    pub fn gather(
        &self,
        shares: Vec<Option<Box<serde_json::value::RawValue>>>,
    ) -> Result<(), serde_json::Error> {
        let shares = shares
            .into_iter()
            .flatten()
            .map(|s| serde_json::from_str::<Share>(s.get()))
            .collect::<Result<Vec<Share>, _>>()?;
        let mut l = self.lock();
        let earliest = shares.iter().map(|s| s.epoch_unix_us).min();
        let frame = match (l.frame_unix_us, earliest) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) => return Ok(()),
        };
        l.frame_unix_us = Some(frame);
        for s in shares {
            let acked = adopt(&s, frame)?;
            l.account.acked.extend(acked);
            l.account.doubt.extend(s.doubt);
            l.account.failed.extend(s.failed);
            l.drove = true;
        }
        Ok(())
    }

    /// Acknowledged transactions sorted by index, in-doubt ones sorted,
    /// and the failed ones; `None` without a ledger.
    pub(super) fn sorted(&self) -> Option<(Vec<Acked>, Vec<u64>, Vec<u64>)> {
        let l = self.lock();
        if !l.drove {
            return None;
        }
        let (mut a, mut d) = (l.account.acked.clone(), l.account.doubt.clone());
        a.sort_unstable_by_key(|a| a.index);
        d.sort_unstable();
        Some((a, d, l.account.failed.clone()))
    }
}

/// A share's acknowledged transactions with their times counted from
/// `frame` (wall clock, µs; unknown when the share has none or they do
/// not fit).
fn adopt(s: &Share, frame: u64) -> Result<Vec<Acked>, serde_json::Error> {
    use serde::de::Error;
    let total: u64 = s.acked.iter().map(|r| r.2).fold(0, u64::saturating_add);
    if total > u64::from(u32::MAX) {
        return Err(serde_json::Error::custom(
            "a run of acknowledged transactions too long",
        ));
    }
    let timed = s.times.len() as u64 == total * 2;
    let shift = s.epoch_unix_us as i64 - frame as i64;
    let on_epoch = |t: i64| u64::try_from(t.saturating_add(shift)).ok();
    // Grown as read, not reserved: a crafted share's count is no promise.
    let mut out = Vec::new();
    let (mut k, mut sent) = (0usize, 0i64);
    for &(first, step, n) in &s.acked {
        for j in 0..n {
            let index = first.saturating_add(j.saturating_mul(step));
            let mut times = UNKNOWN;
            if timed {
                sent = sent.saturating_add(s.times[k]);
                let answered = sent.saturating_add(s.times[k + 1]);
                k += 2;
                if let (Some(s), Some(a)) = (on_epoch(sent), on_epoch(answered)) {
                    times = Times {
                        sent: s,
                        answered: a,
                    };
                }
            }
            out.push(Acked { index, times });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(index: u64, sent: u64, answered: u64) -> Acked {
        Acked {
            index,
            times: Times { sent, answered },
        }
    }

    #[test]
    fn a_childs_ledger_reaches_its_parent_whole() {
        assert_eq!(
            runs([1, 5, 9, 13, 30].into_iter()),
            vec![(1, 4, 4), (30, 1, 1)]
        );
        assert_eq!(runs([].into_iter()), vec![]);
        let child = Ledger::default();
        child.drove();
        // One driver of stride 4 (a failure at 8), another of stride 4.
        let a = |i: u64| acked(i, i * 10, i * 10 + 3);
        child.put(Account {
            acked: [12, 0, 16, 4].map(a).to_vec(),
            doubt: vec![20],
            failed: vec![8],
        });
        child.put(Account {
            acked: [1, 5, 9].map(a).to_vec(),
            ..Account::default()
        });
        let parent = Ledger {
            epoch_unix_us: child.epoch_unix_us,
            ..Ledger::default()
        };
        assert!(parent.sorted().is_none());
        parent.gather(vec![child.share(), None]).unwrap();
        let (got, doubt, failed) = parent.sorted().unwrap();
        let want: Vec<Acked> = [0, 1, 4, 5, 9, 12, 16].map(a).to_vec();
        assert_eq!(got, want);
        assert_eq!((doubt, failed), (vec![20], vec![8]));
    }

    #[test]
    fn a_later_epoch_moves_the_times_and_bad_shares_are_refused() {
        let child = Ledger::default();
        child.drove();
        child.put(Account {
            acked: vec![acked(7, 5, 9)],
            ..Account::default()
        });
        let parent = Ledger {
            epoch_unix_us: child.epoch_unix_us - 100,
            ..Ledger::default()
        };
        // Its own drivers' account fixes its frame to its own epoch.
        parent.put(Account::default());
        parent.gather(vec![child.share()]).unwrap();
        assert_eq!(parent.sorted().unwrap().0, vec![acked(7, 105, 109)]);
        // Without times (or with a count that does not match): unknown.
        let bare = Share {
            acked: vec![(3, 1, 1)],
            times: vec![1],
            ..Share::default()
        };
        let l = Ledger::default();
        l.gather(vec![serde_json::value::to_raw_value(&bare).ok()])
            .unwrap();
        assert_eq!(l.sorted().unwrap().0[0].times, UNKNOWN);
        let bad = serde_json::value::to_raw_value(&Share {
            acked: vec![(0, 1, u64::MAX)],
            ..Share::default()
        })
        .unwrap();
        assert!(Ledger::default().gather(vec![Some(bad)]).is_err());
    }
}
