//! The kv workload on SQLite: one table per dataset (`kv_NAME`, a
//! `WITHOUT ROWID` table keyed by the 16-byte key, so a range read is a
//! walk of the primary key's B-tree), markers in `kv_markers`. A
//! transaction runs on the database thread inside the batch's transaction
//! and a savepoint of its own (a failed statement undoes that transaction
//! only); the batch commits once for all (group commit).

use std::sync::Arc;

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::OpError;
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{admin, Job, SqliteConn, SqliteTarget};

/// The statements of one dataset's table.
#[derive(Debug)]
pub(super) struct Sql {
    dataset: String,
    table: String,
    get: String,
    put: String,
    range: String,
}

impl Sql {
    pub(super) fn new(dataset: &str) -> Sql {
        let table = format!("kv_{dataset}");
        Sql {
            dataset: dataset.to_string(),
            get: format!("SELECT v FROM {table} WHERE k = ?1"),
            put: format!(
                "INSERT INTO {table} (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
            ),
            range: format!("SELECT v FROM {table} WHERE k >= ?1 AND k < ?2 ORDER BY k LIMIT ?3"),
            table,
        }
    }

    fn schema(&self) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS kv_markers (dataset TEXT PRIMARY KEY, marker TEXT NOT NULL);",
            t = self.table
        )
    }
}

/// One transaction, in the batch's transaction, under a savepoint.
/// Returns what it read, packed for the batch's answer ([`done_of`]).
pub(super) fn run(tx: &Transaction<'_>, sql: &Sql, txn: &Txn) -> rusqlite::Result<u64> {
    // A savepoint only where something could be half done: reads alone
    // change nothing.
    let sp = (!txn.read_only()).then(|| tx.execute_batch("SAVEPOINT t"));
    if let Some(r) = sp {
        r?;
    }
    let body = || -> rusqlite::Result<TxnDone> {
        let mut done = TxnDone::default();
        if !txn.reads.is_empty() {
            let mut get = tx.prepare_cached(&sql.get)?;
            for k in &txn.reads {
                let hit = get
                    .query_row([&k[..]], |r| Ok(r.get_ref(0)?.as_bytes()?.len()))
                    .optional()?;
                done.found += u32::from(hit.is_some());
            }
        }
        if let Some(range) = &txn.range {
            let mut q = tx.prepare_cached(&sql.range)?;
            let mut rows = q.query(params![&range.start[..], &range.end[..], range.limit])?;
            while let Some(r) = rows.next()? {
                let _ = r.get_ref(0)?.as_bytes()?.len();
                done.ranged += 1;
            }
        }
        if !txn.writes.is_empty() {
            let mut put = tx.prepare_cached(&sql.put)?;
            for (k, v) in txn.writes.iter() {
                put.execute(params![&k[..], v])?;
            }
        }
        Ok(done)
    };
    match body() {
        Ok(done) => {
            if !txn.read_only() {
                tx.execute_batch("RELEASE t")?;
            }
            Ok(u64::from(done.found) | u64::from(done.ranged) << 32)
        }
        Err(e) => {
            if !txn.read_only() {
                tx.execute_batch("ROLLBACK TO t; RELEASE t")?;
            }
            Err(e)
        }
    }
}

/// Back from the batch's answer.
pub(super) fn done_of(packed: u64) -> TxnDone {
    TxnDone {
        found: packed as u32,
        ranged: (packed >> 32) as u32,
    }
}

/// A client's connection to the database thread, knowing its dataset.
pub struct SqliteKvConn {
    conn: SqliteConn<TxnDone>,
    sql: Arc<Sql>,
}

impl SqliteKvConn {
    async fn admin<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, TargetError> {
        admin(&self.conn.jobs, f)
            .await
            .map_err(|reason| TargetError::Prepare {
                target: format!("sqlite dataset {}", self.sql.dataset),
                reason,
            })
    }
}

/// No bytes: the database runs inside this process.
impl CountsBytes for SqliteKvConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        (0, 0)
    }
}

impl KvConn for SqliteKvConn {
    #[inline]
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let job = Job::Kv {
            txn: Box::new(txn.clone()),
            sql: self.sql.clone(),
            tag,
            reply: self.conn.tx.clone(),
        };
        self.conn.submit(job);
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        self.conn.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.conn.reset();
        Ok(())
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        let (rows, sql) = (rows.clone(), self.sql.clone());
        self.admin(move |c| {
            let tx = c.transaction()?;
            {
                let mut put = tx.prepare_cached(&sql.put)?;
                for (k, v) in rows.iter() {
                    put.execute(params![&k[..], v])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let (keys, sql) = (keys.to_vec(), self.sql.clone());
        self.admin(move |c| {
            let mut get = c.prepare_cached(&sql.get)?;
            keys.iter()
                .map(|k| get.query_row([&k[..]], |r| r.get(0)).optional())
                .collect()
        })
        .await
    }
}

impl KvBackend for SqliteTarget {
    type Conn = SqliteKvConn;

    fn use_dataset(&mut self, name: &str) {
        self.kv = Arc::new(Sql::new(name));
    }

    fn transactions(&self) -> String {
        "each transaction's statements in a savepoint on the one database thread, \
         up to 4,096 transactions per commit (group commit); ranges walk the primary key \
         (WITHOUT ROWID table)"
            .to_string()
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        let schema = self.kv.schema();
        self.admin(move |c| c.execute_batch(&schema)).await
    }

    /// One writer: more connections would only queue behind it.
    fn load_connections(&self) -> usize {
        1
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        let name = self.kv.dataset.clone();
        self.admin(move |c| {
            c.query_row(
                "SELECT marker FROM kv_markers WHERE dataset = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
        })
        .await
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        let (name, marker) = (self.kv.dataset.clone(), marker.to_string());
        self.admin(move |c| {
            c.execute(
                "INSERT OR REPLACE INTO kv_markers (dataset, marker) VALUES (?1, ?2)",
                [name, marker],
            )
            .map(|_| ())
        })
        .await
    }

    async fn clear(&self) -> Result<(), TargetError> {
        let sql = self.kv.clone();
        self.admin(move |c| {
            // Dropping the table is far quicker than deleting its rows.
            c.execute_batch(&format!("DROP TABLE IF EXISTS {};", sql.table))?;
            c.execute_batch(&sql.schema())?;
            c.execute("DELETE FROM kv_markers WHERE dataset = ?1", [&sql.dataset])
                .map(|_| ())
        })
        .await
    }

    async fn count(&self) -> Result<u64, TargetError> {
        let q = format!("SELECT COUNT(*) FROM {}", self.kv.table);
        self.admin(move |c| c.query_row(&q, [], |r| r.get::<_, i64>(0)))
            .await
            .map(|n| n.max(0) as u64)
    }

    /// `loadrig teardown kv`: the dataset's table and marker go; the file,
    /// the user's, stays.
    async fn teardown(&self) -> Result<(), TargetError> {
        let sql = self.kv.clone();
        self.admin(move |c| {
            c.execute_batch(&format!("DROP TABLE IF EXISTS {};", sql.table))?;
            c.execute("DELETE FROM kv_markers WHERE dataset = ?1", [&sql.dataset])
                .map(|_| ())
        })
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(SqliteKvConn {
            conn: SqliteConn::new(self.jobs.clone()),
            sql: self.kv.clone(),
        })
    }
}
