//! Hello on PostgreSQL: `helloworld` and the `hello_insert()` and
//! `hello_select()` functions from `sql/postgres/hello.sql`, one prepared
//! call per operation; a Select is checked against the row expected.

use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::hello::{HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD};
use loadrig_workloads::Reply;

use super::{reply_err, PgConn};

pub(super) const SCHEMA: &str = include_str!("../../sql/postgres/hello.sql");

const SELECT: usize = 0;
const INSERT: usize = 1;
pub(super) const CALLS: &[&str] = &[
    "SELECT hello, world FROM hello_select($1)",
    "SELECT hello_insert($1, $2, $3)",
];

pub(super) const TEARDOWN: &str = "
DROP FUNCTION IF EXISTS hello_insert(VARCHAR, VARCHAR, VARCHAR);
DROP FUNCTION IF EXISTS hello_select(VARCHAR);
DROP TABLE IF EXISTS helloworld;
";

/// The preloaded dialects, one statement, idempotent.
pub(super) fn preload() -> String {
    let rows: Vec<String> = DIALECTS
        .iter()
        .map(|(h, w, d)| format!("('{h}', '{w}', '{d}')"))
        .collect();
    format!(
        "INSERT INTO helloworld (hello, world, dialect) VALUES {} ON CONFLICT DO NOTHING",
        rows.join(", ")
    )
}

/// A Select's row against what it should be: a missing or different row
/// is a verification failure, not a server error.
fn checked(row: Option<tokio_postgres::Row>, expect: (&str, &str)) -> Result<(), OpError> {
    let found = row.and_then(|r| {
        let h: &str = r.try_get(0).ok()?;
        let w: &str = r.try_get(1).ok()?;
        Some(h == expect.0 && w == expect.1)
    });
    match found {
        Some(true) => Ok(()),
        _ => Err(OpError::new(ErrorKind::Verification)),
    }
}

impl HelloConn for PgConn<()> {
    fn call(&mut self, op: &HelloOp, tag: Tag) {
        let client = self.client.clone();
        let op = *op;
        let statement = self.statement(match op {
            HelloOp::Select { .. } => SELECT,
            HelloOp::Insert { .. } => INSERT,
        });
        self.push(
            async move {
                let Some(statement) = statement else {
                    return Reply::Broken(OpError::new(ErrorKind::Protocol));
                };
                let result = match op {
                    HelloOp::Select { dialect, expect } => {
                        match client.query_opt(&statement, &[&dialect]).await {
                            Ok(row) => checked(row, expect),
                            Err(e) => return reply_err(tag, &e),
                        }
                    }
                    HelloOp::Insert { dialect } => {
                        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                            [&INSERTED_HELLO, &INSERTED_WORLD, &dialect.as_str()];
                        match client.query_one(&statement, &params).await {
                            // 0: the dialect was there already, so no row was added.
                            Ok(row) => match row.try_get::<_, i32>(0) {
                                Ok(1) => Ok(()),
                                Ok(_) => Err(OpError::server("23505")),
                                Err(_) => Err(OpError::new(ErrorKind::Protocol)),
                            },
                            Err(e) => return reply_err(tag, &e),
                        }
                    }
                };
                Reply::Done { tag, result }
            }
            .boxed(),
        );
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        PgConn::reconnect(self).await
    }
}
