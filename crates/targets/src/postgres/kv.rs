//! The kv workload on PostgreSQL: one table per dataset (`kv_NAME`, keys
//! and values `bytea`, the key the primary key), markers in `kv_markers`,
//! and one PL/pgSQL function per dataset, `kv_txn_NAME`, that runs a whole
//! transaction: so a transaction is one prepared call in autocommit, one
//! round trip. Writes go in key order, so two writers never wait on each
//! other in a cycle (no deadlocks); calls in flight are pipelined as the
//! Voter's are, on loadrig's own client ([`super::conn`]). The load and
//! the read-back (`put_rows`, `get_rows`) go over a tokio-postgres
//! connection of their own, opened at their first use.

use std::sync::Arc;

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::pg::{self, DataRow};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};
use tokio_postgres::Client;

use super::conn::{Expect, Wire};
use super::{open, reason, Connect, PostgresTarget};
use crate::sql::SqlAdmin;

/// The names and statements of one dataset.
#[derive(Debug)]
pub(crate) struct Sql {
    dataset: String,
    table: String,
    call: String,
    /// Point reads alone: one statement, its own snapshot.
    reads: String,
    /// A range alone.
    range: String,
    /// One point read alone: the simplest statement, as pgbench's `-S`.
    point: String,
    put: String,
    get: String,
}

impl Sql {
    pub(crate) fn new(dataset: &str) -> Sql {
        let table = format!("kv_{dataset}");
        Sql {
            dataset: dataset.to_string(),
            call: format!("SELECT kv_txn_{dataset}($1, $2, $3, $4, $5, $6)"),
            reads: format!(
                "SELECT count(t.v) FROM unnest($1::bytea[]) AS q(k) JOIN {table} t ON t.k = q.k"
            ),
            point: format!("SELECT v FROM {table} WHERE k = $1"),
            range: format!(
                "SELECT count(s.v) FROM (SELECT v FROM {table} WHERE k >= $1 AND k < $2
                 ORDER BY k LIMIT $3) s"
            ),
            put: format!(
                "INSERT INTO {table} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                 ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
            ),
            get: format!(
                "SELECT t.v FROM unnest($1::bytea[]) WITH ORDINALITY AS q(k, o)
                 LEFT JOIN {table} t ON t.k = q.k ORDER BY q.o"
            ),
            table,
        }
    }

    fn schema(&self) -> String {
        let (t, d) = (&self.table, &self.dataset);
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (k bytea PRIMARY KEY, v bytea NOT NULL);
CREATE TABLE IF NOT EXISTS kv_markers (dataset text PRIMARY KEY, marker text NOT NULL);
CREATE OR REPLACE FUNCTION kv_txn_{d}(r bytea[], gs bytea, ge bytea, gl integer,
                                      wk bytea[], wv bytea[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    found bigint := 0;
    ranged bigint := 0;
    w record;
BEGIN
    IF cardinality(r) > 0 THEN
        -- Each key asked for counts, twice if asked twice.
        SELECT count(t.v) INTO found FROM unnest(r) AS q(k) JOIN {t} t ON t.k = q.k;
    END IF;
    IF gl > 0 THEN
        SELECT count(s.v) INTO ranged
          FROM (SELECT v FROM {t} WHERE k >= gs AND k < ge ORDER BY k LIMIT gl) s;
    END IF;
    FOR w IN SELECT u.k, u.v FROM unnest(wk, wv) WITH ORDINALITY AS u(k, v, o)
             ORDER BY u.k, u.o LOOP
        INSERT INTO {t} (k, v) VALUES (w.k, w.v) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
    END LOOP;
    RETURN found | (ranged << 32);
END $$;"
        )
    }
}

/// The statements a connection parses, by index: the function call, and
/// the plain statements a transaction of only point reads, only a range or
/// one point read uses instead (a statement is its own snapshot: no
/// function, no PL/pgSQL, for what needs none).
const CALL: usize = 0;
const READS: usize = 1;
const RANGE: usize = 2;
const POINT: usize = 3;

impl Sql {
    /// The engine's statements, in the order of the indexes above.
    fn calls(&self) -> Arc<[String]> {
        [&self.call, &self.reads, &self.range, &self.point]
            .into_iter()
            .cloned()
            .collect()
    }
}

/// One connection: the calls in flight on loadrig's client, and a
/// tokio-postgres client for the cold path, opened when first needed.
pub struct PgKvConn {
    wire: Wire<TxnDone>,
    config: Arc<Connect>,
    sql: Arc<Sql>,
    admin: Option<Client>,
}

/// The one number a statement returns, or none.
fn number(row: Option<DataRow<'_>>) -> Result<i64, OpError> {
    row.and_then(|r| r.get(0).ok().flatten())
        .and_then(pg::int)
        .ok_or(OpError::new(ErrorKind::Protocol))
}

fn found(row: Option<DataRow<'_>>, _: Expect) -> Result<TxnDone, OpError> {
    Ok(TxnDone {
        found: number(row)? as u32,
        ranged: 0,
    })
}

fn ranged(row: Option<DataRow<'_>>, _: Expect) -> Result<TxnDone, OpError> {
    Ok(TxnDone {
        found: 0,
        ranged: number(row)? as u32,
    })
}

/// A point read's row is its key found; no row, not found.
fn point(row: Option<DataRow<'_>>, _: Expect) -> Result<TxnDone, OpError> {
    Ok(TxnDone {
        found: u32::from(row.is_some()),
        ranged: 0,
    })
}

/// The function's answer: point reads found in the low 32 bits, range
/// rows in the high.
fn packed(row: Option<DataRow<'_>>, _: Expect) -> Result<TxnDone, OpError> {
    let n = number(row)?;
    Ok(TxnDone {
        found: (n & 0xffff_ffff) as u32,
        ranged: (n >> 32) as u32,
    })
}

const NONE: Expect = ("", "");

impl PgKvConn {
    fn failed(&self, e: &tokio_postgres::Error) -> TargetError {
        TargetError::Prepare {
            target: format!("postgres dataset {}", self.sql.dataset),
            reason: reason(e),
        }
    }

    /// The cold path's client, opened at the first use.
    async fn admin(&mut self) -> Result<&Client, TargetError> {
        if self.admin.is_none() {
            let client = open(&self.config).await.map_err(|e| TargetError::Prepare {
                target: format!("postgres dataset {}", self.sql.dataset),
                reason: e.reason(),
            })?;
            self.admin = Some(client);
        }
        self.admin.as_ref().ok_or_else(|| TargetError::Prepare {
            target: format!("postgres dataset {}", self.sql.dataset),
            reason: "no connection".to_string(),
        })
    }
}

/// A range's bounds and limit as parameters.
fn range_params(b: &mut bytes::BytesMut, g: &loadrig_workloads::kv::RangeRead, limit: Limit) {
    pg::param_bytes(b, &g.start);
    pg::param_bytes(b, &g.end);
    let n = i32::try_from(g.limit).unwrap_or(i32::MAX);
    match limit {
        Limit::Int8 => pg::param_i64(b, i64::from(n)),
        Limit::Int4 => pg::param_i32(b, n),
    }
}

/// The limit's type: `LIMIT $3` is a `bigint`; the function's is an `integer`.
#[derive(Clone, Copy)]
enum Limit {
    Int8,
    Int4,
}

impl KvConn for PgKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let keys = |b: &mut bytes::BytesMut, keys: &[Key]| {
            pg::param_bytea_array(b, keys.iter().map(|k| &k[..]));
        };
        match (&txn.reads[..], &txn.range, txn.writes.is_empty()) {
            ([one], None, true) => self.wire.call(POINT, 1, (tag, point, NONE), |b| {
                pg::param_bytes(b, &one[..]);
            }),
            (reads, None, true) if !reads.is_empty() => {
                self.wire
                    .call(READS, 1, (tag, found, NONE), |b| keys(b, reads))
            }
            ([], Some(g), true) => self.wire.call(RANGE, 3, (tag, ranged, NONE), |b| {
                range_params(b, g, Limit::Int8);
            }),
            (reads, range, _) => self.wire.call(CALL, 6, (tag, packed, NONE), |b| {
                keys(b, reads);
                match range {
                    Some(g) => range_params(b, g, Limit::Int4),
                    None => {
                        pg::param_bytes(b, &[]);
                        pg::param_bytes(b, &[]);
                        pg::param_i32(b, 0);
                    }
                }
                keys(b, txn.writes.keys());
                pg::param_bytea_array(b, txn.writes.iter().map(|(_, v)| v));
            }),
        }
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        self.wire.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.wire.reconnect().await
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        let k: Vec<&[u8]> = rows.keys().iter().map(|k| &k[..]).collect();
        let v: Vec<&[u8]> = rows.iter().map(|(_, v)| v).collect();
        let put = self.sql.put.clone();
        let r = self.admin().await?.execute(put.as_str(), &[&k, &v]).await;
        r.map(|_| ()).map_err(|e| self.failed(&e))
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let k: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let get = self.sql.get.clone();
        let rows = self.admin().await?.query(get.as_str(), &[&k]).await;
        let rows = rows.map_err(|e| self.failed(&e))?;
        rows.iter()
            .map(|r| r.try_get::<_, Option<Vec<u8>>>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.failed(&e))
    }
}

impl CountsBytes for PgKvConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.wire.take_bytes()
    }
}

impl KvBackend for PostgresTarget {
    type Conn = PgKvConn;

    fn use_dataset(&mut self, name: &str) {
        self.kv = Arc::new(Sql::new(name));
    }

    fn transactions(&self) -> String {
        format!(
            "one round trip per transaction: the PL/pgSQL function kv_txn_{}(reads, range, writes) \
             as a prepared call in autocommit, or one prepared SELECT when the transaction is only \
             point reads (one read: SELECT v WHERE k = $1) or only a range; calls pipelined on \
             loadrig's own client; ranges walk the primary key's B-tree; writes in key order",
            self.kv.dataset
        )
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        self.script(&self.kv.schema()).await
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        let client = self.admin().await?;
        let row = client
            .query_opt(
                "SELECT marker FROM kv_markers WHERE dataset = $1",
                &[&self.kv.dataset],
            )
            .await
            .map_err(|e| self.failed(e))?;
        row.map(|r| r.try_get(0))
            .transpose()
            .map_err(|_| self.bad_row())
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        let client = self.admin().await?;
        client
            .execute(
                "INSERT INTO kv_markers (dataset, marker) VALUES ($1, $2)
                 ON CONFLICT (dataset) DO UPDATE SET marker = EXCLUDED.marker",
                &[&self.kv.dataset, &marker],
            )
            .await
            .map(|_| ())
            .map_err(|e| self.failed(e))
    }

    async fn clear(&self) -> Result<(), TargetError> {
        self.script(&format!(
            "TRUNCATE {t}; DELETE FROM kv_markers WHERE dataset = '{d}';",
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
            "DROP FUNCTION IF EXISTS kv_txn_{d}(bytea[], bytea, bytea, integer, bytea[], bytea[]);
             DROP TABLE IF EXISTS {t};
             DELETE FROM kv_markers WHERE dataset = '{d}';",
            t = self.kv.table,
            d = self.kv.dataset
        ))
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        let wire = Wire::open(self.login.clone(), self.kv.calls())
            .await
            .map_err(|reason| TargetError::Unreachable {
                target: self.at.label(),
                reason,
            })?;
        Ok(PgKvConn {
            wire,
            config: self.config.clone(),
            sql: self.kv.clone(),
            admin: None,
        })
    }
}
