//! The kv workload on MariaDB: one InnoDB table per dataset (`kv_NAME`,
//! the 16-byte key the primary key), markers in `kv_markers`, and one
//! stored procedure per dataset, `kv_txn_NAME`, that runs a whole
//! transaction (START TRANSACTION ... COMMIT, rolled back on any error):
//! one prepared CALL, one round trip. A transaction of one kind of part
//! (only point reads, only a range, only writes) is one plain statement
//! instead, atomic on its own. MariaDB procedures take no arrays,
//! so keys travel concatenated (all are 16 bytes), values concatenated
//! with their lengths beside them (2 bytes each, big-endian). Writes are
//! sorted by key here, so two writers never wait on each other in a cycle.

use std::collections::HashMap;
use std::sync::Arc;

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::my::command::Param;
use loadrig_wire::my::response::Row;
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Params, Value};

use super::conn::Answer;
use super::{open, reason, MariadbTarget, MyConn};
use crate::sql::SqlAdmin;

/// A dataset's table, procedure and statements.
#[derive(Debug)]
pub(crate) struct Names {
    dataset: String,
    table: String,
    call: String,
}

impl Names {
    pub(crate) fn new(dataset: &str) -> Names {
        Names {
            dataset: dataset.to_string(),
            table: format!("kv_{dataset}"),
            call: format!("CALL kv_txn_{dataset}(?, ?, ?, ?, ?, ?, ?)"),
        }
    }

    fn schema(&self) -> String {
        let (t, d) = (&self.table, &self.dataset);
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (
    k VARBINARY(16) NOT NULL PRIMARY KEY,
    v MEDIUMBLOB NOT NULL
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS kv_markers (
    dataset VARCHAR(64) NOT NULL PRIMARY KEY,
    marker TEXT NOT NULL
) ENGINE = InnoDB;
DROP PROCEDURE IF EXISTS kv_txn_{d};
CREATE PROCEDURE kv_txn_{d}(IN r BLOB, IN gs VARBINARY(16), IN ge VARBINARY(16), IN gl INT,
                            IN wk BLOB, IN wv MEDIUMBLOB, IN wl BLOB)
BEGIN
    DECLARE found INT DEFAULT 0;
    DECLARE ranged INT DEFAULT 0;
    DECLARE c INT DEFAULT 0;
    DECLARE i INT DEFAULT 0;
    DECLARE n INT DEFAULT 0;
    DECLARE off INT DEFAULT 1;
    DECLARE len INT DEFAULT 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SET n = LENGTH(r) DIV 16;
    WHILE i < n DO
        SELECT COUNT(v) INTO c FROM {t} WHERE k = SUBSTRING(r, 16 * i + 1, 16);
        SET found = found + c;
        SET i = i + 1;
    END WHILE;
    IF gl > 0 THEN
        SELECT COUNT(s.v) INTO ranged
          FROM (SELECT v FROM {t} WHERE k >= gs AND k < ge ORDER BY k LIMIT gl) s;
    END IF;
    SET i = 0;
    SET n = LENGTH(wk) DIV 16;
    WHILE i < n DO
        SET len = ORD(SUBSTRING(wl, 2 * i + 1, 1)) * 256 + ORD(SUBSTRING(wl, 2 * i + 2, 1));
        INSERT INTO {t} (k, v) VALUES (SUBSTRING(wk, 16 * i + 1, 16), SUBSTRING(wv, off, len))
            ON DUPLICATE KEY UPDATE v = VALUES(v);
        SET off = off + len;
        SET i = i + 1;
    END WHILE;
    COMMIT;
    SELECT found, ranged;
END;"
        )
    }
}

/// An engine connection (hand written), and for the cold path (load,
/// read-back) a mysql_async connection opened on first use.
pub struct MyKvConn {
    conn: MyConn<TxnDone>,
    names: Arc<Names>,
    opts: Opts,
    /// How long opening the cold path's connection may take.
    limit: std::time::Duration,
    admin: Option<Conn>,
}

/// The statements of the hot path, numbered: the procedure is prepared
/// as the connection opens (number 0), the one-part shapes on first use,
/// one per count of keys.
const CALL: usize = 0;
const READS: u64 = 1 << 32;
const RANGE: u64 = 2 << 32;
const WRITES: u64 = 3 << 32;

/// What one transaction's answer becomes, read row by row.
pub enum KvFold {
    /// Point reads: every key asked (a key asked twice is found twice).
    Reads { asked: Vec<Key>, found: u32 },
    /// A range read: rows so far.
    Range { rows: u32 },
    /// Writes: the OK is the answer.
    Writes,
    /// The procedure: its one row of (found, ranged).
    Call { counts: Option<(i64, i64)> },
}

impl Answer for TxnDone {
    type Fold = KvFold;

    fn row(fold: &mut KvFold, row: &Row<'_>) {
        match fold {
            KvFold::Reads { asked, found } => {
                if let Some(k) = row.bytes(0) {
                    let n = asked.iter().filter(|a| a[..] == *k).count();
                    *found = found.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
                }
            }
            KvFold::Range { rows } => *rows = rows.saturating_add(1),
            KvFold::Writes => {}
            KvFold::Call { counts } => {
                if counts.is_none() {
                    *counts = row.int(0).zip(row.int(1));
                }
            }
        }
    }

    fn finish(fold: KvFold) -> Result<TxnDone, OpError> {
        Ok(match fold {
            KvFold::Reads { found, .. } => TxnDone { found, ranged: 0 },
            KvFold::Range { rows } => TxnDone {
                found: 0,
                ranged: rows,
            },
            KvFold::Writes => TxnDone::default(),
            KvFold::Call { counts } => match counts {
                Some((found, ranged)) => TxnDone {
                    found: u32::try_from(found).unwrap_or(0),
                    ranged: u32::try_from(ranged).unwrap_or(0),
                },
                None => return Err(OpError::new(ErrorKind::Protocol)),
            },
        })
    }
}

/// The procedure's arguments for one transaction: reads' keys
/// concatenated, the range, writes' keys, values and value lengths
/// concatenated in key order.
struct CallArgs {
    r: Vec<u8>,
    range: Option<(Key, Key, i64)>,
    wk: Vec<u8>,
    wv: Vec<u8>,
    wl: Vec<u8>,
}

fn call_args(txn: &Txn) -> CallArgs {
    let r: Vec<u8> = txn.reads.iter().flatten().copied().collect();
    let range = txn
        .range
        .as_ref()
        .map(|g| (g.start, g.end, i64::from(g.limit)));
    let (mut wk, mut wv, mut wl) = (Vec::new(), Vec::new(), Vec::new());
    for i in key_order(txn) {
        if let Some((k, v)) = txn.writes.get(i) {
            wk.extend_from_slice(k);
            wv.extend_from_slice(v);
            wl.extend_from_slice(&u16::try_from(v.len()).unwrap_or(u16::MAX).to_be_bytes());
        }
    }
    CallArgs {
        r,
        range,
        wk,
        wv,
        wl,
    }
}

/// The writes' indices in key order; stable, so of two writes of one key
/// the later stays later and wins.
fn key_order(txn: &Txn) -> Vec<usize> {
    let mut order: Vec<usize> = (0..txn.writes.len()).collect();
    order.sort_by_key(|&i| txn.writes.keys()[i]);
    order
}

impl MyKvConn {
    /// The cold path's connection, opened on first use.
    async fn admin(&mut self) -> Result<&mut Conn, TargetError> {
        if self.admin.is_none() {
            let conn = open(&self.opts, self.limit)
                .await
                .map_err(|e| self.failed(reason(&e)))?;
            self.admin = Some(conn);
        }
        let failed = self.failed("no connection".to_string());
        self.admin.as_mut().ok_or(failed)
    }

    fn failed(&self, reason: String) -> TargetError {
        TargetError::Prepare {
            target: format!("mariadb dataset {}", self.names.dataset),
            reason,
        }
    }
}

/// How one transaction goes to the server: a transaction of one kind of
/// part is one plain statement, atomic on its own (InnoDB reads one
/// consistent snapshot per statement; a multi-row upsert is all or
/// nothing), without the procedure's cost; a mixed one is the procedure.
impl KvConn for MyKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let table = &self.names.table;
        let conn = &mut self.conn;
        let (reads, range, writes) = (!txn.reads.is_empty(), txn.range, !txn.writes.is_empty());
        match (reads, range, writes) {
            (true, None, false) => {
                // Every key asked, duplicates too: the SQL depends only on
                // the count, and IN finds a row once however often named.
                let n = txn.reads.len();
                let stmt = conn.statement(READS | n as u64, || {
                    let places = vec!["?"; n].join(", ");
                    format!("SELECT k, v FROM {table} WHERE k IN ({places})")
                });
                let params: Vec<Param<'_>> =
                    txn.reads.iter().map(|k| Param::Bytes(&k[..])).collect();
                let fold = KvFold::Reads {
                    asked: txn.reads.clone(),
                    found: 0,
                };
                conn.call(stmt, &params, tag, fold);
            }
            (false, Some(g), false) => {
                let stmt = conn.statement(RANGE, || {
                    format!("SELECT v FROM {table} WHERE k >= ? AND k < ? ORDER BY k LIMIT ?")
                });
                let params = [
                    Param::Bytes(&g.start),
                    Param::Bytes(&g.end),
                    Param::Int(i64::from(g.limit)),
                ];
                conn.call(stmt, &params, tag, KvFold::Range { rows: 0 });
            }
            (false, None, true) => {
                let n = txn.writes.len();
                let stmt = conn.statement(WRITES | n as u64, || {
                    let places = vec!["(?, ?)"; n].join(", ");
                    format!(
                        "INSERT INTO {table} (k, v) VALUES {places} ON DUPLICATE KEY UPDATE v = VALUES(v)"
                    )
                });
                let mut params = Vec::with_capacity(2 * n);
                for i in key_order(txn) {
                    if let Some((k, v)) = txn.writes.get(i) {
                        params.push(Param::Bytes(&k[..]));
                        params.push(Param::Bytes(v));
                    }
                }
                conn.call(stmt, &params, tag, KvFold::Writes);
            }
            _ => {
                let a = call_args(txn);
                let (gs, ge, gl) = match &a.range {
                    Some((s, e, l)) => (&s[..], &e[..], *l),
                    None => (&[][..], &[][..], 0),
                };
                let params = [
                    Param::Bytes(&a.r),
                    Param::Bytes(gs),
                    Param::Bytes(ge),
                    Param::Int(gl),
                    Param::Bytes(&a.wk),
                    Param::Bytes(&a.wv),
                    Param::Bytes(&a.wl),
                ];
                conn.call(CALL, &params, tag, KvFold::Call { counts: None });
            }
        }
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        self.conn.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.conn.reconnect().await
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        if rows.is_empty() {
            return Ok(());
        }
        let places = vec!["(?, ?)"; rows.len()].join(", ");
        let sql = format!(
            "INSERT INTO {} (k, v) VALUES {places} ON DUPLICATE KEY UPDATE v = VALUES(v)",
            self.names.table
        );
        let mut args: Vec<Value> = Vec::with_capacity(2 * rows.len());
        for (k, v) in rows.iter() {
            args.push(k.to_vec().into());
            args.push(v.to_vec().into());
        }
        let conn = self.admin().await?;
        let r = conn.exec_drop(sql, Params::Positional(args)).await;
        r.map_err(|e| self.failed(reason(&e)))
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let places = vec!["?"; keys.len()].join(", ");
        let sql = format!(
            "SELECT k, v FROM {} WHERE k IN ({places})",
            self.names.table
        );
        let args: Vec<Value> = keys.iter().map(|k| k.to_vec().into()).collect();
        let conn = self.admin().await?;
        let rows: Result<Vec<(Vec<u8>, Vec<u8>)>, _> =
            conn.exec(sql, Params::Positional(args)).await;
        let rows = rows.map_err(|e| self.failed(reason(&e)))?;
        let mut by_key: HashMap<Vec<u8>, Vec<u8>> = rows.into_iter().collect();
        Ok(keys.iter().map(|k| by_key.remove(&k[..])).collect())
    }
}

impl CountsBytes for MyKvConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }
}

impl KvBackend for MariadbTarget {
    type Conn = MyKvConn;

    fn use_dataset(&mut self, name: &str) {
        self.kv = Arc::new(Names::new(name));
    }

    fn transactions(&self) -> String {
        format!(
            "one round trip per transaction: a prepared CALL of the stored procedure kv_txn_{} \
             (START TRANSACTION ... COMMIT inside), or one plain statement when the transaction \
             is only point reads, only a range or only writes; ranges walk the primary key; \
             writes in key order",
            self.kv.dataset
        )
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        self.script(&self.kv.schema()).await
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        let mut conn = self.admin().await?;
        let m: Option<String> = conn
            .exec_first(
                "SELECT marker FROM kv_markers WHERE dataset = ?",
                (self.kv.dataset.as_str(),),
            )
            .await
            .map_err(|e| self.failed(e))?;
        Ok(m)
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        let mut conn = self.admin().await?;
        conn.exec_drop(
            "REPLACE INTO kv_markers (dataset, marker) VALUES (?, ?)",
            (self.kv.dataset.as_str(), marker),
        )
        .await
        .map_err(|e| self.failed(e))
    }

    async fn clear(&self) -> Result<(), TargetError> {
        self.script(&format!(
            "TRUNCATE TABLE {t}; DELETE FROM kv_markers WHERE dataset = '{d}';",
            t = self.kv.table,
            d = self.kv.dataset
        ))
        .await
    }

    async fn count(&self) -> Result<u64, TargetError> {
        let n = crate::sql::count(self, &format!("SELECT COUNT(*) FROM {}", self.kv.table)).await?;
        Ok(n.max(0) as u64)
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        self.script(&format!(
            "DROP PROCEDURE IF EXISTS kv_txn_{d}; DROP TABLE IF EXISTS {t};
             DELETE FROM kv_markers WHERE dataset = '{d}';",
            t = self.kv.table,
            d = self.kv.dataset
        ))
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(MyKvConn {
            conn: self.conn(&[self.kv.call.as_str()]).await?,
            names: self.kv.clone(),
            opts: self.opts.clone(),
            limit: self.via.handshake_limit(),
            admin: None,
        })
    }
}
