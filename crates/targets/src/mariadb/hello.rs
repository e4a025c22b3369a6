//! Hello on MariaDB: `helloworld` and the `hello_insert` and
//! `hello_select` procedures from `sql/mariadb/hello.sql`, one prepared
//! CALL per operation; a Select is checked against the row expected.

use std::sync::Arc;

use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_workloads::hello::{HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD};
use loadrig_workloads::Reply;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Statement};

use super::{failure, int, text, Done, MyConn};

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
fn outcome(op: &HelloOp, row: Option<&Row>) -> Result<(), OpError> {
    match op {
        HelloOp::Select { expect, .. } => {
            let found = row.and_then(|r| text(r, 0).zip(text(r, 1)));
            match found {
                Some((h, w)) if h == expect.0 && w == expect.1 => Ok(()),
                _ => Err(OpError::new(ErrorKind::Verification)),
            }
        }
        HelloOp::Insert { .. } => match row.and_then(|r| int(r, 0)) {
            Some(1) => Ok(()),
            Some(_) => Err(OpError::server("23000")),
            None => Err(OpError::new(ErrorKind::Protocol)),
        },
    }
}

async fn call(mut conn: Conn, statements: Arc<[Statement]>, op: HelloOp, tag: Tag) -> Done<()> {
    let (index, params) = match &op {
        HelloOp::Select { dialect, .. } => (SELECT, vec![(*dialect).into()]),
        HelloOp::Insert { dialect } => (
            INSERT,
            vec![
                INSERTED_HELLO.into(),
                INSERTED_WORLD.into(),
                dialect.as_str().into(),
            ],
        ),
    };
    let Some(statement) = statements.get(index) else {
        return (Some(conn), Reply::Broken(OpError::new(ErrorKind::Protocol)));
    };
    let params = mysql_async::Params::Positional(params);
    match conn.exec_first::<Row, _, _>(statement, params).await {
        Ok(row) => {
            let result = outcome(&op, row.as_ref());
            (Some(conn), Reply::Done { tag, result })
        }
        Err(e @ mysql_async::Error::Server(_)) => (Some(conn), failure(tag, &e)),
        Err(e) => (None, failure(tag, &e)),
    }
}

impl HelloConn for MyConn<()> {
    fn call(&mut self, op: &HelloOp, tag: Tag) {
        let op = *op;
        self.submit(Box::new(move |conn, statements| {
            call(conn, statements, op, tag).boxed()
        }));
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        MyConn::reconnect(self).await
    }
}
