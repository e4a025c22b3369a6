//! The Voter on PostgreSQL: schema and `voter_vote()` from
//! `sql/postgres/voter.sql`, fixed data, one prepared call per vote, and
//! the counts and standings the verification reads back.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_wire::pg::{self, DataRow};
use loadrig_workloads::voter::{Vote, VoteResult, VoterConn, AREA_CODES};
use loadrig_workloads::Reply;

use super::conn::Expect;
use super::PgConn;
use crate::sql::sql_rows;

pub(super) const SCHEMA: &str = include_str!("../../sql/postgres/voter.sql");

/// The engine's one statement: a vote is one round trip, one transaction.
pub(super) const CALLS: &[&str] = &["SELECT voter_vote($1, $2, $3)"];

pub(super) const TEARDOWN: &str = "
DROP FUNCTION IF EXISTS voter_vote(BIGINT, INTEGER, INTEGER);
DROP VIEW IF EXISTS v_votes_by_contestant_number_state;
DROP TABLE IF EXISTS votes, votes_by_phone, contestants, area_code_state;
";

/// Contestants 1..=n and the area codes, each one statement, idempotent.
pub(super) fn fixed_data(contestants: u8) -> String {
    let names = CONTESTANT_NAMES.iter().take(usize::from(contestants));
    let contestants = sql_rows(names.enumerate().map(|(i, n)| (i as i64 + 1, *n)));
    let areas = sql_rows(AREA_CODES.iter().map(|(c, s)| (i64::from(*c), *s)));
    format!(
        "INSERT INTO contestants (contestant_number, contestant_name) VALUES {contestants}
             ON CONFLICT DO NOTHING;
         INSERT INTO area_code_state (area_code, state) VALUES {areas}
             ON CONFLICT DO NOTHING;"
    )
}

impl VoterConn for PgConn<VoteResult> {
    #[inline]
    fn vote(&mut self, vote: &Vote, tag: Tag) {
        self.call(0, 3, (tag, vote_code, ("", "")), |b| {
            pg::param_i64(b, vote.phone);
            pg::param_i32(b, vote.contestant);
            pg::param_i32(b, vote.max_votes);
        });
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        PgConn::reconnect(self).await
    }
}

/// `voter_vote`'s return code (an `integer`) as the vote's result.
fn vote_code(row: Option<DataRow<'_>>, _: Expect) -> Result<VoteResult, OpError> {
    row.and_then(|r| r.get(0).ok().flatten())
        .and_then(pg::int)
        .and_then(VoteResult::from_code)
        .ok_or(OpError::new(ErrorKind::Protocol))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_data_is_idempotent_sql() {
        let sql = fixed_data(2);
        assert!(sql.contains("(1, 'Edwina Burnam'), (2, 'Tabatha Gehling')"));
        assert!(!sql.contains("Kelly Clauss"));
        assert!(sql.contains("(907, 'AK')"));
        assert_eq!(sql.matches("ON CONFLICT DO NOTHING").count(), 2);
    }
}
