//! Hello on PostgreSQL: `helloworld` and the `hello_insert()` and
//! `hello_select()` functions from `sql/postgres/hello.sql`, one prepared
//! call per operation; a Select is checked against the row expected.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::pg::{self, DataRow};
use loadrig_workloads::hello::{HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD};
use loadrig_workloads::Reply;

use super::conn::Expect;
use super::PgConn;

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
fn checked(row: Option<DataRow<'_>>, expect: Expect) -> Result<(), OpError> {
    let found = row.and_then(|r| Some((r.get(0).ok()??, r.get(1).ok()??)));
    match found {
        Some((h, w)) if h == expect.0.as_bytes() && w == expect.1.as_bytes() => Ok(()),
        _ => Err(OpError::new(ErrorKind::Verification)),
    }
}

/// `hello_insert`'s answer: 1 a row was added; 0 the dialect was there
/// already, so no row was added.
fn inserted(row: Option<DataRow<'_>>, _: Expect) -> Result<(), OpError> {
    match row.and_then(|r| r.get(0).ok().flatten()).and_then(pg::int) {
        Some(1) => Ok(()),
        Some(_) => Err(OpError::server("23505")),
        None => Err(OpError::new(ErrorKind::Protocol)),
    }
}

impl HelloConn for PgConn<()> {
    fn call(&mut self, op: &HelloOp, tag: Tag) {
        match *op {
            HelloOp::Select { dialect, expect } => {
                PgConn::call(self, SELECT, 1, (tag, checked, expect), |b| {
                    pg::param_bytes(b, dialect.as_bytes());
                });
            }
            HelloOp::Insert { dialect } => {
                PgConn::call(self, INSERT, 3, (tag, inserted, ("", "")), |b| {
                    pg::param_bytes(b, INSERTED_HELLO.as_bytes());
                    pg::param_bytes(b, INSERTED_WORLD.as_bytes());
                    pg::param_bytes(b, dialect.as_str().as_bytes());
                });
            }
        }
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        PgConn::reconnect(self).await
    }
}
