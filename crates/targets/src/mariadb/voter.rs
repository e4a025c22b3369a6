//! The Voter on MariaDB: schema and the `voter_vote` procedure from
//! `sql/mariadb/voter.sql`, fixed data, one prepared CALL per vote, and
//! the counts and standings the verification reads back.

use std::sync::Arc;

use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_workloads::voter::{Vote, VoteResult, VoterConn, AREA_CODES};
use loadrig_workloads::Reply;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Row, Statement};

use super::{failure, int, Done, MyConn};
use crate::sql::sql_rows;

pub(super) const SCHEMA: &str = include_str!("../../sql/mariadb/voter.sql");

/// The engine's one statement: a vote is one round trip, one transaction.
pub(super) const CALLS: &[&str] = &["CALL voter_vote(?, ?, ?)"];

pub(super) const TEARDOWN: &str = "
DROP PROCEDURE IF EXISTS voter_vote;
DROP VIEW IF EXISTS v_votes_by_contestant_number_state;
DROP TABLE IF EXISTS votes, votes_by_phone, contestants, area_code_state;
";

/// Contestants 1..=n and the area codes, each one statement, idempotent.
pub(super) fn fixed_data(contestants: u8) -> String {
    let names = CONTESTANT_NAMES.iter().take(usize::from(contestants));
    let contestants = sql_rows(names.enumerate().map(|(i, n)| (i as i64 + 1, *n)));
    let areas = sql_rows(AREA_CODES.iter().map(|(c, s)| (i64::from(*c), *s)));
    format!(
        "INSERT IGNORE INTO contestants (contestant_number, contestant_name) VALUES {contestants};
         INSERT IGNORE INTO area_code_state (area_code, state) VALUES {areas};"
    )
}

/// One vote: the procedure's one-row result set carries the code.
async fn vote(mut conn: Conn, statements: Arc<[Statement]>, v: Vote, tag: Tag) -> Done<VoteResult> {
    let Some(statement) = statements.first() else {
        return (Some(conn), Reply::Broken(OpError::new(ErrorKind::Protocol)));
    };
    let params = (v.phone, v.contestant, v.max_votes);
    match conn.exec_first::<Row, _, _>(statement, params).await {
        Ok(row) => {
            let code = row.as_ref().and_then(|r| int(r, 0));
            let result = code
                .and_then(VoteResult::from_code)
                .ok_or(OpError::new(ErrorKind::Protocol));
            (Some(conn), Reply::Done { tag, result })
        }
        Err(e @ mysql_async::Error::Server(_)) => (Some(conn), failure(tag, &e)),
        Err(e) => (None, failure(tag, &e)),
    }
}

impl VoterConn for MyConn<VoteResult> {
    fn vote(&mut self, v: &Vote, tag: Tag) {
        let v = *v;
        self.submit(Box::new(move |conn, statements| {
            vote(conn, statements, v, tag).boxed()
        }));
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        MyConn::reconnect(self).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_data_is_idempotent_sql() {
        let sql = fixed_data(1);
        assert!(sql.contains("VALUES (1, 'Edwina Burnam');"));
        assert!(sql.contains("(202, 'DC')"));
        assert_eq!(sql.matches("INSERT IGNORE").count(), 2);
    }
}
