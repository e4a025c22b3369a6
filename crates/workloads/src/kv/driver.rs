//! The kv workload's driver: one transaction per operation over any
//! [`KvConn`], keys read, range rows, keys written and keys missing
//! counted, and the write transactions acknowledged, left in doubt or
//! failed handed to the [`Ledger`] when the driver is dropped.

use std::sync::Arc;

use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::OpError;

use super::data::Generator;
use super::ledger::{Account, Acked, Ledger, Times};
use super::{KvConn, Txn};
use crate::Reply;

/// Domain counters, as [`Driver::take_counts`] fills them.
/// `keys_read`: point reads that found their key; `range_keys`: rows
/// range reads returned; `keys_written`: writes of acknowledged
/// transactions; `keys_missing`: point reads or range rows that were not
/// there (every row is loaded, so any is a fault).
pub const DOMAINS: [&str; 4] = ["keys_read", "range_keys", "keys_written", "keys_missing"];
const READ: usize = 0;
const RANGED: usize = 1;
const WRITTEN: usize = 2;
pub(super) const MISSING: usize = 3;

/// No operation in flight under a tag.
const IDLE: u64 = u64::MAX;

/// The operation in flight under a tag, and when it was sent (µs since
/// the ledger's epoch).
#[derive(Debug, Clone, Copy)]
struct Sent {
    index: u64,
    at: u64,
}

const NONE: Sent = Sent { index: IDLE, at: 0 };

/// The engine's driver for the kv workload over any [`KvConn`].
pub struct KvDriver<C> {
    conn: C,
    gen: Arc<Generator>,
    txn: Txn,
    /// The operation in flight under each tag ([`IDLE`]: none).
    in_flight: Vec<Sent>,
    /// Keys read, written, missing since the last `take_counts`.
    counts: [u64; 4],
    /// Write transactions acknowledged, in doubt and failed, handed to
    /// `ledger` when the driver is dropped (nothing shared on the hot
    /// path; the ledger is read for its epoch only).
    account: Account,
    ledger: Arc<Ledger>,
}

impl<C> KvDriver<C> {
    /// A driver on `conn`, its transactions from `gen`, its ledger handed
    /// to `ledger` when it is dropped.
    pub(super) fn new(conn: C, gen: Arc<Generator>, ledger: Arc<Ledger>) -> Self {
        KvDriver {
            conn,
            gen,
            txn: Txn::default(),
            in_flight: Vec::new(),
            counts: [0; DOMAINS.len()],
            account: Account::default(),
            ledger,
        }
    }

    /// Every transaction in flight may or may not have committed.
    fn all_in_doubt(&mut self) {
        let writes = self.gen.writes() > 0;
        for s in &mut self.in_flight {
            if s.index != IDLE && writes {
                self.account.doubt.push(s.index);
            }
            *s = NONE;
        }
    }
}

impl<C> Drop for KvDriver<C> {
    fn drop(&mut self) {
        self.all_in_doubt();
        self.ledger.put(std::mem::take(&mut self.account));
    }
}

impl<C: KvConn> Driver for KvDriver<C> {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        self.gen.fill(index, &mut self.txn);
        let t = tag as usize;
        if t >= self.in_flight.len() {
            self.in_flight.resize(t + 1, NONE);
        }
        self.in_flight[t] = Sent {
            index,
            at: self.ledger.now_us(),
        };
        self.conn.submit(&self.txn, tag);
        0
    }

    async fn recv(&mut self) -> Event {
        match self.conn.recv().await {
            Reply::Broken(e) => {
                self.all_in_doubt();
                Event::Broken(e)
            }
            Reply::Done { tag, result } => {
                let sent = self
                    .in_flight
                    .get_mut(tag as usize)
                    .map_or(NONE, |s| std::mem::replace(s, NONE));
                let index = sent.index;
                let writes = self.gen.writes();
                match result {
                    Ok(done) => {
                        let reads = u64::from(self.gen.reads());
                        let found = u64::from(done.found);
                        self.counts[READ] += found;
                        self.counts[RANGED] += u64::from(done.ranged);
                        self.counts[MISSING] += reads.saturating_sub(found)
                            + self.gen.range_rows().saturating_sub(u64::from(done.ranged));
                        if writes > 0 && index != IDLE {
                            self.counts[WRITTEN] += u64::from(writes);
                            self.account.acked.push(Acked {
                                index,
                                times: Times {
                                    sent: sent.at,
                                    answered: self.ledger.now_us(),
                                },
                            });
                        }
                    }
                    Err(e) => {
                        if writes > 0 && index != IDLE {
                            if e.kind.in_doubt() {
                                self.account.doubt.push(index);
                            } else {
                                self.account.failed.push(index);
                            }
                        }
                    }
                }
                Event::Done {
                    tag,
                    result: result.map(|_| None),
                }
            }
        }
    }

    fn reconnect(&mut self) -> impl std::future::Future<Output = Result<(), OpError>> + Send {
        // A timeout leads here without a reply: what was in flight may
        // have committed.
        self.all_in_doubt();
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        for (d, c) in domains.iter_mut().zip(&mut self.counts) {
            *d += std::mem::take(c);
        }
    }
}
