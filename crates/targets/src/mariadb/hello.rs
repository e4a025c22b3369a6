//! Hello on MariaDB: `helloworld` and the `hello_insert` and
//! `hello_select` procedures from `sql/mariadb/hello.sql`, one prepared
//! CALL per operation; a Select is checked against the row expected.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::my::command::Param;
use loadrig_wire::my::response::Row;
use loadrig_workloads::hello::{HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD};
use loadrig_workloads::Reply;

use super::conn::Answer;
use super::MyConn;

pub(super) const SCHEMA: &str = include_str!("../../sql/mariadb/hello.sql");

const SELECT: usize = 0;
const INSERT: usize = 1;
pub(super) const CALLS: &[&str] = &["CALL hello_select(?)", "CALL hello_insert(?, ?, ?)"];

pub(super) const TEARDOWN: &str = "
DROP PROCEDURE IF EXISTS hello_insert;
DROP PROCEDURE IF EXISTS hello_select;
DROP TABLE IF EXISTS helloworld;
";

/// The preloaded dialects, one statement, idempotent.
pub(super) fn preload() -> String {
    let rows: Vec<String> = DIALECTS
        .iter()
        .map(|(h, w, d)| format!("('{h}', '{w}', '{d}')"))
        .collect();
    format!(
        "INSERT IGNORE INTO helloworld (hello, world, dialect) VALUES {}",
        rows.join(", ")
    )
}

/// What one operation's first row means: a Select's row must be the one
/// expected (missing or different fails verification); an Insert's
/// `inserted` is 0 when the dialect was there already, so no row was added.
fn outcome(op: &HelloOp, row: &Row<'_>) -> Result<(), OpError> {
    match op {
        HelloOp::Select { expect, .. } => {
            let found = row.bytes(0).zip(row.bytes(1));
            match found {
                Some((h, w)) if h == expect.0.as_bytes() && w == expect.1.as_bytes() => Ok(()),
                _ => Err(OpError::new(ErrorKind::Verification)),
            }
        }
        HelloOp::Insert { .. } => match row.int(0) {
            Some(1) => Ok(()),
            Some(_) => Err(OpError::server("23000")),
            None => Err(OpError::new(ErrorKind::Protocol)),
        },
    }
}

/// An operation and, once its first row was read, what that row meant.
pub struct HelloFold {
    op: HelloOp,
    outcome: Option<Result<(), OpError>>,
}

impl Answer for () {
    type Fold = HelloFold;

    fn row(fold: &mut HelloFold, row: &Row<'_>) {
        if fold.outcome.is_none() {
            fold.outcome = Some(outcome(&fold.op, row));
        }
    }

    fn finish(fold: HelloFold) -> Result<(), OpError> {
        // No row at all: a Select found nothing, an Insert said nothing.
        fold.outcome.unwrap_or(match fold.op {
            HelloOp::Select { .. } => Err(OpError::new(ErrorKind::Verification)),
            HelloOp::Insert { .. } => Err(OpError::new(ErrorKind::Protocol)),
        })
    }
}

impl HelloConn for MyConn<()> {
    fn call(&mut self, op: &HelloOp, tag: Tag) {
        let fold = HelloFold {
            op: *op,
            outcome: None,
        };
        match op {
            HelloOp::Select { dialect, .. } => {
                MyConn::call(self, SELECT, &[Param::Bytes(dialect.as_bytes())], tag, fold)
            }
            HelloOp::Insert { dialect } => {
                let params = [
                    Param::Bytes(INSERTED_HELLO.as_bytes()),
                    Param::Bytes(INSERTED_WORLD.as_bytes()),
                    Param::Bytes(dialect.as_str().as_bytes()),
                ];
                MyConn::call(self, INSERT, &params, tag, fold)
            }
        }
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        MyConn::reconnect(self).await
    }
}
