//! pgbench on PostgreSQL: its four tables made as pgbench 15 makes them
//! (same names, columns, fillfactor, keys; `g` and `G` both generate the
//! rows on the server), and the engine's connections on tokio-postgres,
//! which gives each command the protocol `-M` asks for: one Query
//! (simple), an unnamed statement parsed with each call (extended; its
//! parameter types learnt once per command), or a statement parsed once
//! per connection (prepared). Variables are sent as the type the server
//! gave the parameter.

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use loadrig_engine::CountsBytes;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::{PgbenchSpec, QueryMode};
use loadrig_workloads::pgbench::expr::Value;
use loadrig_workloads::pgbench::script::{Piece, Sql};
use loadrig_workloads::pgbench::{PgbenchBackend, PgbenchConn, Row, Sums};
use loadrig_workloads::TargetError;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use super::{open, sqlstate_class, Connect, PostgresTarget};
use crate::sql::SqlAdmin;

const TABLES: &str = "pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// pgbench's DDL (its `initCreateTables`), fillfactor `{ff}`.
fn create(ff: u32) -> String {
    format!(
        "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22));
create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor={ff});
create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor={ff});
create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor={ff});"
    )
}

/// pgbench's server-side generation (its `initGenerateDataServerSide`).
fn generate(scale: u32) -> String {
    format!(
        "truncate table {TABLES};
insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {scale}) as bid;
insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, {t}) as tid;
insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, {a}) as aid;",
        t = u64::from(scale) * 10,
        a = u64::from(scale) * 100_000,
    )
}

const VACUUM: &str = "vacuum analyze pgbench_branches;
vacuum analyze pgbench_tellers;
vacuum analyze pgbench_accounts;
vacuum analyze pgbench_history;";

const KEYS: &str = "alter table pgbench_branches add primary key (bid);
alter table pgbench_tellers add primary key (tid);
alter table pgbench_accounts add primary key (aid);";

const FOREIGN: &str = "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers;
alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts;";

/// Whether all four tables are there.
const THERE: &str = "SELECT (to_regclass('pgbench_branches') IS NOT NULL
    AND to_regclass('pgbench_tellers') IS NOT NULL
    AND to_regclass('pgbench_accounts') IS NOT NULL
    AND to_regclass('pgbench_history') IS NOT NULL)::int";

const SUMS: &str = "SELECT (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches)::bigint,
    (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers)::bigint,
    (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts)::bigint,
    (SELECT coalesce(sum(delta), 0) FROM pgbench_history)::bigint,
    (SELECT count(*) FROM pgbench_history)::bigint";

impl PostgresTarget {
    async fn there(&self) -> Result<bool, TargetError> {
        let rows = self.int_rows(THERE).await?;
        Ok(rows.first().and_then(|r| r.first()) == Some(&1))
    }
}

impl PgbenchBackend for PostgresTarget {
    type Conn = PgbenchPg;

    async fn init(&self, spec: &PgbenchSpec) -> Result<Vec<(char, Duration)>, TargetError> {
        let client = self.admin().await?;
        let mut took = Vec::new();
        for step in spec.steps().chars().filter(|c| !c.is_whitespace()) {
            let started = Instant::now();
            let sql = match step {
                'd' => format!("drop table if exists {TABLES};"),
                't' => create(spec.fillfactor),
                'g' | 'G' => generate(spec.scale),
                'v' => VACUUM.to_string(),
                'p' => KEYS.to_string(),
                'f' => FOREIGN.to_string(),
                other => {
                    return Err(TargetError::Unsupported(format!(
                        "-I: unknown step '{other}'"
                    )))
                }
            };
            // One statement at a time: VACUUM refuses a transaction block,
            // which a batch of several statements is.
            for statement in sql.split_inclusive(";\n") {
                client
                    .batch_execute(statement)
                    .await
                    .map_err(|e| self.failed(e))?;
            }
            took.push((step, started.elapsed()));
        }
        Ok(took)
    }

    async fn scale(&self) -> Result<Option<i64>, TargetError> {
        if !self.there().await? {
            return Ok(None);
        }
        let rows = self
            .int_rows("SELECT count(*) FROM pgbench_branches")
            .await?;
        Ok(rows.first().and_then(|r| r.first()).copied())
    }

    async fn vacuum(&self) -> Result<(), TargetError> {
        let client = self.admin().await?;
        for statement in [
            "vacuum pgbench_branches",
            "vacuum pgbench_tellers",
            "truncate pgbench_history",
        ] {
            client
                .batch_execute(statement)
                .await
                .map_err(|e| self.failed(e))?;
        }
        Ok(())
    }

    async fn sums(&self) -> Result<Option<Sums>, TargetError> {
        if !self.there().await? {
            return Ok(None);
        }
        let rows = self.int_rows(SUMS).await?;
        match rows.first().map(Vec::as_slice) {
            Some(&[branches, tellers, accounts, history, history_rows]) => Ok(Some(Sums {
                branches,
                tellers,
                accounts,
                history,
                history_rows,
            })),
            _ => Err(self.bad_row()),
        }
    }

    async fn connect(&self, mode: QueryMode) -> Result<PgbenchPg, TargetError> {
        let client = self.admin().await?;
        Ok(PgbenchPg {
            client,
            config: self.config.clone(),
            mode,
            prepared: HashMap::new(),
            types: HashMap::new(),
        })
    }

    async fn drop_tables(&self) -> Result<(), TargetError> {
        self.script(&format!("drop table if exists {TABLES};"))
            .await
    }
}

/// One engine connection for pgbench's scripts.
pub struct PgbenchPg {
    client: Client,
    config: Arc<Connect>,
    mode: QueryMode,
    /// `-M prepared`: each command's statement, by key.
    prepared: HashMap<usize, Statement>,
    /// `-M extended`: each command's parameter types, by key.
    types: HashMap<usize, Vec<Type>>,
}

impl CountsBytes for PgbenchPg {
    fn take_bytes(&mut self) -> (u64, u64) {
        // tokio-postgres does not say what it moved.
        (0, 0)
    }
}

/// What a failed call counts as.
fn op_error(e: &tokio_postgres::Error) -> OpError {
    match e.as_db_error() {
        Some(db) => OpError::server(sqlstate_class(db.code().code())),
        None if e.is_closed() => OpError::new(ErrorKind::Io),
        None => match e.source().and_then(|s| s.downcast_ref::<std::io::Error>()) {
            Some(_) => OpError::new(ErrorKind::Io),
            None => OpError::server("client"),
        },
    }
}

impl PgbenchPg {
    async fn simple(&self, sql: &Sql, values: &[Value]) -> Result<Vec<Row>, OpError> {
        let mut text = String::new();
        for p in &sql.pieces {
            match p {
                Piece::Text(t) => text.push_str(t),
                Piece::Var(v) => {
                    let k = sql.params.iter().position(|p| p == v).unwrap_or(0);
                    text.push_str(&values.get(k).map(Value::text).unwrap_or_default());
                }
            }
        }
        let said = self
            .client
            .simple_query(&text)
            .await
            .map_err(|e| op_error(&e))?;
        Ok(said
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some(
                    (0..r.len())
                        .map(|i| {
                            let v = r.get(i).map_or(Value::Null, |t| Value::Text(t.to_string()));
                            (r.columns()[i].name().to_string(), v)
                        })
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }

    async fn typed(
        &mut self,
        key: usize,
        sql: &Sql,
        values: &[Value],
    ) -> Result<Vec<Row>, OpError> {
        let params: Vec<Param<'_>> = values.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let rows = if self.mode == QueryMode::Prepared {
            if !self.prepared.contains_key(&key) {
                let st = self
                    .client
                    .prepare(&sql.numbered)
                    .await
                    .map_err(|e| op_error(&e))?;
                self.prepared.insert(key, st);
            }
            let st = &self.prepared[&key];
            self.client.query(st, &refs).await
        } else {
            if !self.types.contains_key(&key) {
                let st = self
                    .client
                    .prepare(&sql.numbered)
                    .await
                    .map_err(|e| op_error(&e))?;
                self.types.insert(key, st.params().to_vec());
            }
            let typed: Vec<(&(dyn ToSql + Sync), Type)> = refs
                .iter()
                .zip(self.types[&key].iter())
                .map(|(r, t)| (*r, t.clone()))
                .collect();
            self.client.query_typed(&sql.numbered, &typed).await
        }
        .map_err(|e| op_error(&e))?;
        rows.iter().map(read_row).collect()
    }
}

/// A typed row as `\gset` reads it.
fn read_row(r: &tokio_postgres::Row) -> Result<Row, OpError> {
    let bad = |_| OpError::server("gset type");
    r.columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let v = match *c.type_() {
                Type::INT2 => r
                    .try_get::<_, Option<i16>>(i)
                    .map_err(bad)?
                    .map(|v| Value::Int(v.into())),
                Type::INT4 => r
                    .try_get::<_, Option<i32>>(i)
                    .map_err(bad)?
                    .map(|v| Value::Int(v.into())),
                Type::INT8 => r.try_get::<_, Option<i64>>(i).map_err(bad)?.map(Value::Int),
                Type::FLOAT4 => r
                    .try_get::<_, Option<f32>>(i)
                    .map_err(bad)?
                    .map(|v| Value::Double(v.into())),
                Type::FLOAT8 => r
                    .try_get::<_, Option<f64>>(i)
                    .map_err(bad)?
                    .map(Value::Double),
                Type::BOOL => r
                    .try_get::<_, Option<bool>>(i)
                    .map_err(bad)?
                    .map(Value::Bool),
                _ => r
                    .try_get::<_, Option<String>>(i)
                    .map_err(bad)?
                    .map(Value::Text),
            };
            Ok((c.name().to_string(), v.unwrap_or(Value::Null)))
        })
        .collect()
}

impl PgbenchConn for PgbenchPg {
    async fn exec(
        &mut self,
        key: usize,
        sql: &Sql,
        values: &[Value],
        _rows: bool,
    ) -> Result<Vec<Row>, OpError> {
        match self.mode {
            QueryMode::Simple => self.simple(sql, values).await,
            QueryMode::Extended | QueryMode::Prepared => self.typed(key, sql, values).await,
        }
    }

    async fn rollback(&mut self) {
        let _ = self.client.simple_query("ROLLBACK").await;
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.client = open(&self.config)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        self.prepared.clear();
        self.types.clear();
        Ok(())
    }
}

/// A variable as the parameter type the server gave it.
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        let v = self.0;
        if *v == Value::Null {
            return Ok(IsNull::Yes);
        }
        match *ty {
            Type::INT2 => i16::try_from(v.as_int()?)?.to_sql(ty, out),
            Type::INT4 => i32::try_from(v.as_int()?)?.to_sql(ty, out),
            Type::INT8 => v.as_int()?.to_sql(ty, out),
            Type::FLOAT4 => (v.as_double()? as f32).to_sql(ty, out),
            Type::FLOAT8 => v.as_double()?.to_sql(ty, out),
            Type::BOOL => v.truth()?.to_sql(ty, out),
            _ => v.text().as_str().to_sql(&Type::TEXT, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}
