//! The Voter on VoltDB, as VoltDB's example defines it: `votes`
//! partitioned on phone_number, contestants and area codes replicated, the
//! two views, `Vote` a partitioned Java procedure, `Initialize` a Java
//! procedure, `Results` a SQL one (`sql/voltdb/voter.sql`,
//! `java/voter/*.java`). Counts for verification come from the server
//! through `@AdHoc`.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::CONTESTANT_NAMES;
use loadrig_wire::volt::Value;
use loadrig_workloads::voter::{
    Vote, VoteResult, VoterBackend, VoterConn, VoterCounts, AREA_CODES,
};
use loadrig_workloads::{Reply, TargetError};

use super::{procs, scalar_answer, Admin, Answer, VoltConn, VoltTarget};

const SCHEMA: &str = include_str!("../../sql/voltdb/voter.sql");

const TEARDOWN: &str = "
DROP PROCEDURE Results IF EXISTS;
DROP PROCEDURE Vote IF EXISTS;
DROP PROCEDURE Initialize IF EXISTS;
DROP VIEW v_votes_by_phone_number IF EXISTS;
DROP VIEW v_votes_by_contestant_number_state IF EXISTS;
DROP TABLE votes IF EXISTS;
DROP TABLE contestants IF EXISTS;
DROP TABLE area_code_state IF EXISTS;
";

const PROCEDURES: [&str; 3] = ["VOTE", "INITIALIZE", "RESULTS"];
const TABLES: [&str; 3] = ["VOTES", "CONTESTANTS", "AREA_CODE_STATE"];

/// Vote's answer: its return code.
pub struct Votes;

impl Answer for Votes {
    type Pending = ();
    type Out = VoteResult;

    #[inline]
    fn decode(_: &(), frame: &[u8]) -> Result<VoteResult, OpError> {
        scalar_answer(frame)?
            .and_then(VoteResult::from_code)
            .ok_or(OpError::new(ErrorKind::Protocol))
    }
}

impl VoterConn for VoltConn<Votes> {
    #[inline]
    fn vote(&mut self, v: &Vote, tag: Tag) {
        self.invoke(
            "Vote",
            tag,
            (v.phone, v.contestant, i64::from(v.max_votes)),
            (),
        );
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        VoltConn::reconnect(self).await
    }
}

impl VoltTarget {
    /// Schema and procedures, unless all of them are there already; a
    /// partial schema (a run that died in set-up) is removed first.
    async fn voter_schema(&self, a: &mut Admin<'_>) -> Result<(), TargetError> {
        let procs = a.catalog("PROCEDURES", "PROCEDURE_NAME").await?;
        let tables = a.catalog("TABLES", "TABLE_NAME").await?;
        let has = |list: &[String], name: &str| list.iter().any(|n| n == name);
        let present = PROCEDURES.iter().filter(|p| has(&procs, p)).count()
            + TABLES.iter().filter(|t| has(&tables, t)).count();
        if present == PROCEDURES.len() + TABLES.len() {
            return Ok(());
        }
        if present > 0 {
            a.ddl(TEARDOWN).await?;
        }
        let jar = tokio::task::spawn_blocking(procs::voter_jar)
            .await
            .map_err(|e| self.failed(e.to_string()))?
            .map_err(|e| self.failed(e))?;
        a.call(
            "@UpdateClasses",
            &[Value::VarBinary(jar.into()), Value::Null],
        )
        .await?;
        a.ddl(SCHEMA).await
    }
}

/// Initialize's arguments: the names, and the area codes as `code:ST` pairs.
fn fixed_data() -> (String, String) {
    let names = CONTESTANT_NAMES.join(",");
    let areas: Vec<String> = AREA_CODES.iter().map(|(c, s)| format!("{c}:{s}")).collect();
    (names, areas.join(","))
}

impl VoterBackend for VoltTarget {
    type Conn = VoltConn<Votes>;

    async fn prepare(&self, contestants: u8) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        self.voter_schema(&mut a).await?;
        let (names, areas) = fixed_data();
        a.call(
            "Initialize",
            &[
                Value::Integer(i32::from(contestants)),
                Value::String(names),
                Value::String(areas),
            ],
        )
        .await?;
        Ok(())
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        self.conn().await
    }

    async fn counts(&self, max_votes: u32) -> Result<Option<VoterCounts>, TargetError> {
        let mut a = self.admin().await?;
        let votes = a.scalar("SELECT COUNT(*) FROM votes;").await?;
        let over = a
            .scalar(&format!(
                "SELECT COUNT(*) FROM v_votes_by_phone_number WHERE num_votes > {max_votes};"
            ))
            .await?;
        let tables = a
            .sql("SELECT contestant_number, COUNT(*) FROM votes GROUP BY contestant_number;")
            .await?;
        let per = tables.first().map_or_else(Vec::new, |t| {
            (0..t.row_count())
                .filter_map(|r| Some((t.get_i64(r, 0)?, t.get_i64(r, 1)?)))
                .collect()
        });
        Ok(Some(VoterCounts::from_rows(votes, over, per)))
    }

    async fn standings(&self) -> Result<Option<Vec<(String, i64)>>, TargetError> {
        let mut a = self.admin().await?;
        let results = a.call("Results", &[]).await?.tables;
        let mut rows: Vec<(String, i64)> = results.first().map_or_else(Vec::new, |t| {
            (0..t.row_count())
                .filter_map(|r| Some((t.get_str(r, 0)?.to_string(), t.get_i64(r, 2)?)))
                .collect()
        });
        // Results joins the view, so contestants without votes are missing.
        let all = a
            .sql("SELECT contestant_name FROM contestants ORDER BY contestant_number;")
            .await?;
        if let Some(t) = all.first() {
            for r in 0..t.row_count() {
                if let Some(name) = t.get_str(r, 0) {
                    if !rows.iter().any(|(n, _)| n == name) {
                        rows.push((name.to_string(), 0));
                    }
                }
            }
        }
        Ok(Some(rows))
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        a.ddl(TEARDOWN).await?;
        a.call(
            "@UpdateClasses",
            &[Value::Null, Value::String(procs::VOTER_PACKAGE.to_string())],
        )
        .await?;
        Ok(())
    }
}
