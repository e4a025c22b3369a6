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

use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Row, Statement, Value};

use super::{failure, int, reason, Done, MariadbTarget, MyConn};
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

/// A connection running the procedure, and the dataset for the cold path.
pub struct MyKvConn {
    conn: MyConn<TxnDone>,
    names: Arc<Names>,
}

/// The procedure's arguments for one transaction.
fn params(txn: &Txn) -> Vec<Value> {
    let r: Vec<u8> = txn.reads.iter().flatten().copied().collect();
    let (gs, ge, gl) = match &txn.range {
        Some(g) => (g.start.to_vec(), g.end.to_vec(), i64::from(g.limit)),
        None => (Vec::new(), Vec::new(), 0),
    };
    let mut order: Vec<usize> = (0..txn.writes.len()).collect();
    order.sort_by_key(|&i| txn.writes.keys()[i]);
    let (mut wk, mut wv, mut wl) = (Vec::new(), Vec::new(), Vec::new());
    for i in order {
        if let Some((k, v)) = txn.writes.get(i) {
            wk.extend_from_slice(k);
            wv.extend_from_slice(v);
            wl.extend_from_slice(&u16::try_from(v.len()).unwrap_or(u16::MAX).to_be_bytes());
        }
    }
    vec![
        r.into(),
        gs.into(),
        ge.into(),
        gl.into(),
        wk.into(),
        wv.into(),
        wl.into(),
    ]
}

async fn call(
    mut conn: Conn,
    statements: Arc<[Statement]>,
    args: Vec<Value>,
    tag: Tag,
) -> Done<TxnDone> {
    let Some(statement) = statements.first() else {
        return (Some(conn), Reply::Broken(OpError::new(ErrorKind::Protocol)));
    };
    match conn
        .exec_first::<Row, _, _>(statement, Params::Positional(args))
        .await
    {
        Ok(row) => {
            let counts = row.as_ref().and_then(|r| int(r, 0).zip(int(r, 1)));
            let result = match counts {
                Some((found, ranged)) => Ok(TxnDone {
                    found: u32::try_from(found).unwrap_or(0),
                    ranged: u32::try_from(ranged).unwrap_or(0),
                }),
                None => Err(OpError::new(ErrorKind::Protocol)),
            };
            (Some(conn), Reply::Done { tag, result })
        }
        Err(e @ mysql_async::Error::Server(_)) => (Some(conn), failure(tag, &e)),
        Err(e) => (None, failure(tag, &e)),
    }
}

impl MyKvConn {
    /// The idle connection, for the cold path (nothing is in flight there).
    async fn idle(&mut self) -> Result<&mut Conn, TargetError> {
        if self.conn.idle.is_none() {
            self.conn
                .reconnect()
                .await
                .map_err(|_| self.failed("cannot reconnect".into()))?;
        }
        let reason = "a call is still in flight".to_string();
        let failed = self.failed(reason);
        self.conn.idle.as_mut().ok_or(failed)
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
enum Plan {
    /// Point reads: the distinct keys asked for, and every key asked for
    /// (a key asked twice is found twice).
    Reads {
        sql: String,
        distinct: Vec<Value>,
        asked: Vec<Key>,
    },
    Range {
        sql: String,
        args: Vec<Value>,
    },
    /// Writes in key order, so that two writers never wait in a cycle.
    Writes {
        sql: String,
        args: Vec<Value>,
    },
    Call(Vec<Value>),
}

fn plan(table: &str, txn: &Txn) -> Plan {
    let (reads, range, writes) = (!txn.reads.is_empty(), txn.range, !txn.writes.is_empty());
    match (reads, range, writes) {
        (true, None, false) => {
            let mut distinct = txn.reads.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let places = vec!["?"; distinct.len()].join(", ");
            Plan::Reads {
                sql: format!("SELECT k, v FROM {table} WHERE k IN ({places})"),
                distinct: distinct.iter().map(|k| k.to_vec().into()).collect(),
                asked: txn.reads.clone(),
            }
        }
        (false, Some(g), false) => Plan::Range {
            sql: format!("SELECT v FROM {table} WHERE k >= ? AND k < ? ORDER BY k LIMIT ?"),
            args: vec![
                g.start.to_vec().into(),
                g.end.to_vec().into(),
                i64::from(g.limit).into(),
            ],
        },
        (false, None, true) => {
            let mut order: Vec<usize> = (0..txn.writes.len()).collect();
            // Stable: of two writes of one key, the later stays later and wins.
            order.sort_by_key(|&i| txn.writes.keys()[i]);
            let places = vec!["(?, ?)"; order.len()].join(", ");
            let mut args = Vec::with_capacity(2 * order.len());
            for i in order {
                if let Some((k, v)) = txn.writes.get(i) {
                    args.push(k.to_vec().into());
                    args.push(v.to_vec().into());
                }
            }
            Plan::Writes {
                sql: format!(
                    "INSERT INTO {table} (k, v) VALUES {places} ON DUPLICATE KEY UPDATE v = VALUES(v)"
                ),
                args,
            }
        }
        _ => Plan::Call(params(txn)),
    }
}

async fn run_plan(
    mut conn: Conn,
    statements: Arc<[Statement]>,
    plan: Plan,
    tag: Tag,
) -> Done<TxnDone> {
    let outcome = match plan {
        Plan::Call(args) => return call(conn, statements, args, tag).await,
        Plan::Reads {
            sql,
            distinct,
            asked,
        } => conn
            .exec::<(Vec<u8>, Vec<u8>), _, _>(sql, Params::Positional(distinct))
            .await
            .map(|rows| {
                let here: std::collections::HashSet<Vec<u8>> =
                    rows.into_iter().map(|(k, _)| k).collect();
                TxnDone {
                    found: asked.iter().filter(|k| here.contains(&k[..])).count() as u32,
                    ranged: 0,
                }
            }),
        Plan::Range { sql, args } => conn
            .exec::<Row, _, _>(sql, Params::Positional(args))
            .await
            .map(|rows| TxnDone {
                found: 0,
                ranged: u32::try_from(rows.len()).unwrap_or(u32::MAX),
            }),
        Plan::Writes { sql, args } => conn
            .exec_drop(sql, Params::Positional(args))
            .await
            .map(|()| TxnDone::default()),
    };
    match outcome {
        Ok(done) => (
            Some(conn),
            Reply::Done {
                tag,
                result: Ok(done),
            },
        ),
        Err(e @ mysql_async::Error::Server(_)) => (Some(conn), failure(tag, &e)),
        Err(e) => (None, failure(tag, &e)),
    }
}

impl KvConn for MyKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let plan = plan(&self.names.table, txn);
        self.conn.submit(Box::new(move |conn, statements| {
            run_plan(conn, statements, plan, tag).boxed()
        }));
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
        let conn = self.idle().await?;
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
        let conn = self.idle().await?;
        let rows: Result<Vec<(Vec<u8>, Vec<u8>)>, _> =
            conn.exec(sql, Params::Positional(args)).await;
        let rows = rows.map_err(|e| self.failed(reason(&e)))?;
        let mut by_key: HashMap<Vec<u8>, Vec<u8>> = rows.into_iter().collect();
        Ok(keys.iter().map(|k| by_key.remove(&k[..])).collect())
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
        })
    }
}
