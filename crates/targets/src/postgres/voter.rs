//! The Voter on PostgreSQL: schema and `voter_vote()` from
//! `sql/postgres/voter.sql`, fixed data, one prepared call per vote, and
//! the counts and standings the verification reads back.

use futures_util::FutureExt;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_workloads::voter::{Vote, VoteResult, VoterConn, AREA_CODES};
use loadrig_workloads::Reply;

use super::{reply_err, PgConn};
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
    fn vote(&mut self, vote: &Vote, tag: Tag) {
        let (client, statement, v) = (self.client.clone(), self.statement(0), *vote);
        self.push(
            async move {
                let Some(statement) = statement else {
                    return Reply::Broken(OpError::new(ErrorKind::Protocol));
                };
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                    [&v.phone, &v.contestant, &v.max_votes];
                let code = match client.query_one(&statement, &params).await {
                    Ok(row) => row.try_get::<_, i32>(0),
                    Err(e) => return reply_err(tag, &e),
                };
                let result = match code {
                    Ok(c) => {
                        VoteResult::from_code(i64::from(c)).ok_or(OpError::new(ErrorKind::Protocol))
                    }
                    Err(_) => Err(OpError::new(ErrorKind::Protocol)),
                };
                Reply::Done { tag, result }
            }
            .boxed(),
        );
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        PgConn::reconnect(self).await
    }
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
