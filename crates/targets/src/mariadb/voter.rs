//! The Voter on MariaDB: schema and the `voter_vote` procedure from
//! `sql/mariadb/voter.sql`, fixed data, one prepared CALL per vote, and
//! the counts and standings the verification reads back.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_wire::my::command::Param;
use loadrig_wire::my::response::Row;
use loadrig_workloads::voter::{Vote, VoteResult, VoterConn, AREA_CODES};
use loadrig_workloads::Reply;

use super::conn::Answer;
use super::MyConn;
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

/// A vote's answer: the procedure's one-row result set carries the code.
impl Answer for VoteResult {
    type Fold = Option<i64>;

    fn row(code: &mut Option<i64>, row: &Row<'_>) {
        if code.is_none() {
            *code = row.int(0);
        }
    }

    fn finish(code: Option<i64>) -> Result<VoteResult, OpError> {
        code.and_then(VoteResult::from_code)
            .ok_or(OpError::new(ErrorKind::Protocol))
    }
}

impl VoterConn for MyConn<VoteResult> {
    fn vote(&mut self, v: &Vote, tag: Tag) {
        let params = [
            Param::Int(v.phone),
            Param::Int(i64::from(v.contestant)),
            Param::Int(i64::from(v.max_votes)),
        ];
        self.call(0, &params, tag, None);
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
