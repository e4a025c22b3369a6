//! FoundationDB's key-value tests (its benchmarking guide: write1,
//! write10, read10, mix, range) over any ordered, transactional store.
//!
//! This module owns the kv *capability*: what a target must do to run
//! them. One engine operation is one transaction ([`Txn`]): point reads,
//! at most one range read and writes, committed together; the connection
//! answers once per transaction with what it read ([`TxnDone`]). The cold
//! path (load, marker, count, read back) is on the same types, so a target
//! implements two traits: [`KvBackend`] and [`KvConn`].
//!
//! Keys are [`KEY_LEN`] bytes, ordered by their bytes (the workload makes
//! them so that byte order is row order); values are opaque bytes. A
//! target stores them as they are, in one keyspace named by the dataset
//! ([`KvBackend::use_dataset`]): a table, a key prefix, a directory.

mod bench;
pub mod data;
mod verify;

use std::future::Future;

use loadrig_engine::Tag;
use loadrig_metrics::OpError;

use crate::{Reply, TargetError, TargetInfo};

pub use bench::{KvBench, KvDriver, DOMAINS};

/// Every key is this long (the guide's 16 bytes).
pub const KEY_LEN: usize = 16;

/// One key, as stored.
pub type Key = [u8; KEY_LEN];

/// Rows to write: keys with their values, in order, in two flat buffers
/// so a driver reuses them from one transaction to the next without
/// allocating. The same key may appear twice; the later write wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    keys: Vec<Key>,
    data: Vec<u8>,
    /// `ends[i]`: where value `i` ends in `data` (it starts where `i - 1`
    /// ends).
    ends: Vec<usize>,
}

impl Rows {
    pub fn clear(&mut self) {
        self.keys.clear();
        self.data.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, key: Key, value: &[u8]) {
        self.keys.push(key);
        self.data.extend_from_slice(value);
        self.ends.push(self.data.len());
    }

    /// Add a row whose value `fill` appends to the buffer it is given
    /// (no copy through a temporary).
    pub fn push_with(&mut self, key: Key, fill: impl FnOnce(&mut Vec<u8>)) {
        self.keys.push(key);
        fill(&mut self.data);
        self.ends.push(self.data.len());
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[Key] {
        &self.keys
    }

    /// Row `i`: its key and value.
    pub fn get(&self, i: usize) -> Option<(&Key, &[u8])> {
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        Some((self.keys.get(i)?, self.data.get(start..*self.ends.get(i)?)?))
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Key, &[u8])> + '_ {
        (0..self.len()).map(|i| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            (&self.keys[i], &self.data[start..self.ends[i]])
        })
    }
}

/// A range read: the keys `>= start` and `< end`, in key order, at most
/// `limit` of them (FoundationDB's `getRange(begin, end, limit)`, etcd's
/// `Range` with `range_end` and `limit`, SQL's `ORDER BY k LIMIT n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeRead {
    pub start: Key,
    pub end: Key,
    pub limit: u32,
}

/// One transaction as the driver hands it to [`KvConn::submit`]: its
/// point reads, its range read and its writes, done atomically, committed
/// once. A transaction without writes needs no commit (the guide's read10
/// and range): a target may run it as a read-only snapshot. The order
/// inside is the target's: reads see the data as of the transaction's
/// start or later, never another transaction's partial writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    pub reads: Vec<Key>,
    pub range: Option<RangeRead>,
    pub writes: Rows,
}

impl Txn {
    pub fn clear(&mut self) {
        self.reads.clear();
        self.range = None;
        self.writes.clear();
    }

    /// Whether the transaction writes nothing (needs no commit).
    pub fn read_only(&self) -> bool {
        self.writes.is_empty()
    }
}

/// What a committed transaction read. Keys that do not exist are not
/// errors (the driver counts them); values are not handed back on the hot
/// path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnDone {
    /// Point reads that found their key.
    pub found: u32,
    /// Rows the range read returned.
    pub ranged: u32,
}

/// The kv capability: what a target must do to run the kv workload.
///
/// Cold-path methods take `&self` and may be called while connections
/// exist; none is called while a run's transactions are in flight.
pub trait KvBackend: TargetInfo {
    type Conn: KvConn;

    /// Name the keyspace every later call uses (validated by the spec:
    /// 1 to 32 of `[a-z0-9_]`). Called once, first, before `prepare`.
    fn use_dataset(&mut self, name: &str);

    /// How a transaction travels on this target and how ranges are served,
    /// for the report, e.g. "one round trip per transaction: a PL/pgSQL
    /// function" or "MULTI/EXEC; ranges from a sorted-set index".
    fn transactions(&self) -> String;

    /// Create the schema (table, procedures) if missing; keeps any data.
    fn prepare(&self) -> impl Future<Output = Result<(), TargetError>>;

    /// Connections the load phase may use at once (1 where the target has
    /// one writer anyway).
    fn load_connections(&self) -> usize {
        4
    }

    /// The marker stored with the dataset (set by [`KvBackend::set_marker`]),
    /// or `None` when there is none (never loaded, or cleared).
    fn marker(&self) -> impl Future<Output = Result<Option<String>, TargetError>>;

    /// Store `marker` beside the dataset, durably, replacing any other.
    /// It is not a row: [`KvBackend::count`] does not count it and no
    /// range read of the rows returns it (rows' keys start with `k`; keep
    /// the marker outside that keyspace or in a table of its own).
    fn set_marker(&self, marker: &str) -> impl Future<Output = Result<(), TargetError>>;

    /// Remove every row of the dataset and its marker.
    fn clear(&self) -> impl Future<Output = Result<(), TargetError>>;

    /// Rows in the dataset (not the marker).
    fn count(&self) -> impl Future<Output = Result<u64, TargetError>>;

    /// Remove the schema and data (unless kept); a target whose data is
    /// the user's file may do nothing.
    fn teardown(&self) -> impl Future<Output = Result<(), TargetError>>;

    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
}

/// One connection: transactions on the hot path (possibly many in flight),
/// bulk writes and read back on the cold path.
pub trait KvConn: Send + 'static {
    /// Queue a transaction under `tag`; must not block. The connection
    /// copies what it needs: the driver reuses `txn` for the next one.
    fn submit(&mut self, txn: &Txn, tag: Tag);

    /// The next answer. Cancel safe. A transaction that failed is
    /// `Done` with its error (a conflict, a server error, a timeout); a
    /// connection that failed is `Broken`.
    fn recv(&mut self) -> impl Future<Output = Reply<TxnDone>> + Send;

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;

    /// Bytes sent and received since the last call, where known.
    fn take_bytes(&mut self) -> (u64, u64) {
        (0, 0)
    }

    /// Cold path: write `rows` (insert or overwrite) and commit, in as few
    /// round trips as the target allows (a batch of up to a few thousand
    /// rows; a target with a smaller limit per transaction, such as etcd's
    /// 128 operations, splits it: atomicity across the batch is not
    /// needed). Used by the load phase, several connections at once, and to
    /// put loaded values back after a run.
    fn put_rows(&mut self, rows: &Rows) -> impl Future<Output = Result<(), TargetError>> + Send;

    /// Cold path: the values of `keys`, in the same order (`None`: no
    /// such key). Up to a few thousand keys per call.
    fn get_rows(
        &mut self,
        keys: &[Key],
    ) -> impl Future<Output = Result<Vec<Option<Vec<u8>>>, TargetError>> + Send;
}

/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: KvBackend + 'static>(self, backend: B) -> Self::Output;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_values_apart() {
        let mut r = Rows::default();
        r.push([b'a'; KEY_LEN], b"one");
        r.push_with([b'b'; KEY_LEN], |v| v.extend_from_slice(b""));
        r.push([b'c'; KEY_LEN], b"three");
        assert_eq!(r.len(), 3);
        assert_eq!(r.get(0), Some((&[b'a'; KEY_LEN], &b"one"[..])));
        assert_eq!(r.get(1), Some((&[b'b'; KEY_LEN], &b""[..])));
        assert_eq!(r.get(2), Some((&[b'c'; KEY_LEN], &b"three"[..])));
        assert_eq!(r.get(3), None);
        let all: Vec<_> = r.iter().map(|(_, v)| v.len()).collect();
        assert_eq!(all, [3, 0, 5]);
        r.clear();
        assert!(r.is_empty());
    }
}
