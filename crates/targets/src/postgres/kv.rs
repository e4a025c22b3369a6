//! The kv workload on PostgreSQL: one table per dataset (`kv_NAME`, keys
//! and values `bytea`, the key the primary key), markers in `kv_markers`,
//! and one PL/pgSQL function per dataset, `kv_txn_NAME`, that runs a whole
//! transaction: so a transaction is one prepared call in autocommit, one
//! round trip. Writes go in key order, so two writers never wait on each
//! other in a cycle (no deadlocks); calls in flight are pipelined as the
//! Voter's are.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesOrdered, StreamExt};
use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::{open, reason, reply_err, Connect, PostgresTarget, Unopened};
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

/// One connection: its prepared statements, the calls in flight in order.
pub struct PgKvConn {
    config: Arc<Connect>,
    sql: Arc<Sql>,
    client: Arc<Client>,
    prepared: Prepared,
    inflight: FuturesOrdered<BoxFuture<'static, Reply<TxnDone>>>,
}

/// The function call, and the plain statements a transaction of only
/// point reads or only a range uses instead (a statement is its own
/// snapshot: no function, no PL/pgSQL, for what needs none).
#[derive(Clone)]
struct Prepared {
    call: Statement,
    reads: Statement,
    range: Statement,
}

async fn open_kv(config: &Connect, sql: &Sql) -> Result<(Client, Prepared), Unopened> {
    let client = open(config).await?;
    let prepared = Prepared {
        call: client.prepare(&sql.call).await?,
        reads: client.prepare(&sql.reads).await?,
        range: client.prepare(&sql.range).await?,
    };
    Ok((client, prepared))
}

impl PgKvConn {
    fn failed(&self, e: &tokio_postgres::Error) -> TargetError {
        TargetError::Prepare {
            target: format!("postgres dataset {}", self.sql.dataset),
            reason: reason(e),
        }
    }
}

impl KvConn for PgKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let (client, prepared) = (self.client.clone(), self.prepared.clone());
        // The call owns its data: the driver reuses `txn`.
        let reads = txn.reads.clone();
        let range = txn.range;
        let writes = txn.writes.clone();
        self.inflight.push_back(
            async move {
                let r: Vec<&[u8]> = reads.iter().map(|k| &k[..]).collect();
                let (gs, ge, gl): (&[u8], &[u8], i32) = match &range {
                    Some(g) => (&g.start, &g.end, i32::try_from(g.limit).unwrap_or(i32::MAX)),
                    None => (&[], &[], 0),
                };
                let wk: Vec<&[u8]> = writes.keys().iter().map(|k| &k[..]).collect();
                let wv: Vec<&[u8]> = writes.iter().map(|(_, v)| v).collect();
                let gl64 = i64::from(gl);
                // Which statement, and where its one number goes.
                let (answer, (statement, params)): (fn(i64) -> TxnDone, _) =
                    match (r.is_empty(), range.is_some(), wk.is_empty()) {
                        (false, false, true) => (
                            |n| TxnDone {
                                found: n as u32,
                                ranged: 0,
                            },
                            (&prepared.reads, vec![&r as &(dyn ToSql + Sync)]),
                        ),
                        (true, true, true) => (
                            |n| TxnDone {
                                found: 0,
                                ranged: n as u32,
                            },
                            (
                                &prepared.range,
                                vec![&gs as &(dyn ToSql + Sync), &ge, &gl64],
                            ),
                        ),
                        _ => (
                            |packed| TxnDone {
                                found: (packed & 0xffff_ffff) as u32,
                                ranged: (packed >> 32) as u32,
                            },
                            (
                                &prepared.call,
                                vec![&r as &(dyn ToSql + Sync), &gs, &ge, &gl, &wk, &wv],
                            ),
                        ),
                    };
                match client.query_one(statement, &params).await {
                    Ok(row) => {
                        let result = row
                            .try_get::<_, i64>(0)
                            .map(answer)
                            .map_err(|_| OpError::new(ErrorKind::Protocol));
                        Reply::Done { tag, result }
                    }
                    Err(e) => reply_err(tag, &e),
                }
            }
            .boxed(),
        );
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        // Cancel safe: a call leaves the queue only with its answer.
        self.inflight
            .next()
            .await
            .unwrap_or(Reply::Broken(OpError::new(ErrorKind::Protocol)))
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.inflight = FuturesOrdered::new();
        let (client, prepared) = open_kv(&self.config, &self.sql)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        self.client = Arc::new(client);
        self.prepared = prepared;
        Ok(())
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        let k: Vec<&[u8]> = rows.keys().iter().map(|k| &k[..]).collect();
        let v: Vec<&[u8]> = rows.iter().map(|(_, v)| v).collect();
        self.client
            .execute(self.sql.put.as_str(), &[&k, &v])
            .await
            .map(|_| ())
            .map_err(|e| self.failed(&e))
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let k: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let rows = self
            .client
            .query(self.sql.get.as_str(), &[&k])
            .await
            .map_err(|e| self.failed(&e))?;
        rows.iter()
            .map(|r| r.try_get::<_, Option<Vec<u8>>>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| self.failed(&e))
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
             point reads or only a range; ranges walk the primary key's B-tree; writes in key order",
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
        let (client, prepared) =
            open_kv(&self.config, &self.kv)
                .await
                .map_err(|e| TargetError::Unreachable {
                    target: self.at.label(),
                    reason: e.reason(),
                })?;
        Ok(PgKvConn {
            config: self.config.clone(),
            sql: self.kv.clone(),
            client: Arc::new(client),
            prepared,
            inflight: FuturesOrdered::new(),
        })
    }
}
