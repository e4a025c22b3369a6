//! The Voter on SQLite: schema, Initialize, Vote, counts and standings.
//! Vote runs on the database thread inside a batch transaction; the
//! views mirror VoltDB's materialized views as plain views over an index.

use loadrig_metrics::OpError;
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_workloads::voter::{
    sql, Vote, VoteResult, VoterBackend, VoterConn, VoterCounts, AREA_CODES,
};
use loadrig_workloads::{Reply, TargetError};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{Job, SqliteConn, SqliteTarget};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS contestants (
    contestant_number INTEGER PRIMARY KEY,
    contestant_name VARCHAR(50) NOT NULL
);
CREATE TABLE IF NOT EXISTS area_code_state (
    area_code SMALLINT PRIMARY KEY,
    state VARCHAR(2) NOT NULL
);
CREATE TABLE IF NOT EXISTS votes (
    phone_number BIGINT NOT NULL,
    state VARCHAR(2) NOT NULL,
    contestant_number INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS votes_phone_number ON votes (phone_number);
CREATE VIEW IF NOT EXISTS v_votes_by_phone_number AS
    SELECT phone_number, COUNT(*) AS num_votes FROM votes GROUP BY phone_number;
CREATE VIEW IF NOT EXISTS v_votes_by_contestant_number_state AS
    SELECT contestant_number, state, COUNT(*) AS num_votes FROM votes
    GROUP BY contestant_number, state;
";

/// The Vote procedure: the four steps, in order, in the caller's transaction.
pub(super) fn vote(tx: &Transaction<'_>, v: &Vote) -> rusqlite::Result<VoteResult> {
    let known = tx
        .prepare_cached("SELECT 1 FROM contestants WHERE contestant_number = ?1")?
        .exists([v.contestant])?;
    if !known {
        return Ok(VoteResult::InvalidContestant);
    }
    let cast: i64 = tx
        .prepare_cached("SELECT COUNT(*) FROM votes WHERE phone_number = ?1")?
        .query_row([v.phone], |r| r.get(0))?;
    if cast >= i64::from(v.max_votes) {
        return Ok(VoteResult::OverLimit);
    }
    let mut state = *b"XX";
    tx.prepare_cached("SELECT state FROM area_code_state WHERE area_code = ?1")?
        .query_row([v.phone / 10_000_000], |r| {
            if let Ok(s) = r.get_ref(0)?.as_str() {
                if let [a, b] = s.as_bytes() {
                    state = [*a, *b];
                }
            }
            Ok(())
        })
        .optional()?;
    let state = std::str::from_utf8(&state).unwrap_or("XX");
    tx.prepare_cached(
        "INSERT INTO votes (phone_number, state, contestant_number) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![v.phone, state, v.contestant])?;
    Ok(VoteResult::Accepted)
}

/// Back from the byte the batch carried.
pub(super) fn result_of(code: u8) -> VoteResult {
    match code {
        0 => VoteResult::Accepted,
        1 => VoteResult::InvalidContestant,
        _ => VoteResult::OverLimit,
    }
}

impl VoterConn for SqliteConn<VoteResult> {
    #[inline]
    fn vote(&mut self, vote: &Vote, tag: loadrig_engine::Tag) {
        let job = Job::Vote {
            vote: *vote,
            tag,
            reply: self.tx.clone(),
        };
        self.submit(job);
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.reset();
        Ok(())
    }
}

impl VoterBackend for SqliteTarget {
    type Conn = SqliteConn<VoteResult>;

    async fn prepare(&self, contestants: u8) -> Result<(), TargetError> {
        self.admin(move |c| {
            let tx = c.transaction()?;
            tx.execute_batch(SCHEMA)?;
            {
                let mut ins = tx.prepare("INSERT OR IGNORE INTO contestants VALUES (?1, ?2)")?;
                for (i, name) in CONTESTANT_NAMES
                    .iter()
                    .take(usize::from(contestants))
                    .enumerate()
                {
                    ins.execute(params![i as i64 + 1, name])?;
                }
                let mut ins =
                    tx.prepare("INSERT OR IGNORE INTO area_code_state VALUES (?1, ?2)")?;
                for (code, state) in AREA_CODES {
                    ins.execute(params![code, state])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(SqliteConn::new(self.jobs.clone()))
    }

    async fn counts(&self, max_votes: u32) -> Result<Option<VoterCounts>, TargetError> {
        self.admin(move |c| {
            let (votes, over) =
                c.query_row(&sql::totals(max_votes), [], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let mut q = c.prepare(sql::PER_CONTESTANT)?;
            let per = q
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<(i64, i64)>>>()?;
            Ok(Some(VoterCounts::from_rows(votes, over, per)))
        })
        .await
    }

    async fn standings(&self) -> Result<Option<Vec<(String, i64)>>, TargetError> {
        self.admin(|c| {
            let mut q = c.prepare(sql::STANDINGS)?;
            let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
        })
        .await
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        // A temporary database goes with its folder; a named file is the
        // user's, and stays.
        Ok(())
    }
}
