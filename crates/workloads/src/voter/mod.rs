//! VoltDB's Voter: a phone-in contest. One operation is one vote, an atomic
//! transaction on the server (check the contestant, check the caller's vote
//! limit, look up the state, insert). The client counts what the server
//! answered; afterwards the server's tables must agree exactly.

mod area_codes;
mod generator;

use std::future::Future;

use loadrig_engine::CountsBytes;
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{OpError, Snapshot};
use loadrig_report::fmt::{group, group_i};
use loadrig_spec::{RunSpec, VoterSpec, CONTESTANT_NAMES};
use serde::{Deserialize, Serialize};

pub use area_codes::AREA_CODES;
pub use generator::CallGenerator;

use crate::{Bench, Check, Reply, Results, TargetError, TargetInfo, Verdict};

/// One vote as the Vote procedure receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vote {
    pub phone: i64,
    pub contestant: i32,
    pub max_votes: i32,
}

/// The Vote procedure's answer (its return codes 0, 1, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoteResult {
    Accepted,
    InvalidContestant,
    OverLimit,
}

impl VoteResult {
    /// From the procedure's return code; anything else is a protocol error.
    pub fn from_code(code: i64) -> Option<VoteResult> {
        match code {
            0 => Some(VoteResult::Accepted),
            1 => Some(VoteResult::InvalidContestant),
            2 => Some(VoteResult::OverLimit),
            _ => None,
        }
    }
}

/// The state of an area code, "XX" when unknown (step 3 of the procedure).
pub fn state_of(phone: i64) -> &'static str {
    let code = phone / 10_000_000;
    AREA_CODES
        .iter()
        .find(|(c, _)| i64::from(*c) == code)
        .map_or("XX", |(_, s)| s)
}

/// Domain counters: `invalid`, `over_limit`, then `accepted.N` per contestant.
const INVALID: u16 = 0;
const OVER_LIMIT: u16 = 1;
const ACCEPTED_BASE: u16 = 2;

/// What the server holds for the Voter, counted by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoterCounts {
    pub votes: i64,
    /// Votes per contestant number 1..=12 (index 0 is contestant 1).
    pub per_contestant: Vec<i64>,
    /// Phone numbers holding more than the vote limit.
    pub phones_over_limit: i64,
}

impl VoterCounts {
    /// From the server's totals and its (contestant number, votes) rows;
    /// contestants outside 1..=12 are not the Voter's and are ignored.
    pub fn from_rows(
        votes: i64,
        phones_over_limit: i64,
        per: impl IntoIterator<Item = (i64, i64)>,
    ) -> VoterCounts {
        let mut per_contestant = vec![0i64; CONTESTANT_NAMES.len()];
        for (n, count) in per {
            if let Some(slot) = usize::try_from(n - 1)
                .ok()
                .and_then(|i| per_contestant.get_mut(i))
            {
                *slot = count;
            }
        }
        VoterCounts {
            votes,
            per_contestant,
            phones_over_limit,
        }
    }
}

/// The Voter's counting queries in plain SQL, the same on every SQL
/// target, so the figures verification compares are defined once.
pub mod sql {
    /// One row: votes in total, and phone numbers holding more than `max_votes`.
    pub fn totals(max_votes: u32) -> String {
        format!(
            "SELECT (SELECT COUNT(*) FROM votes),
                    (SELECT COUNT(*) FROM (SELECT phone_number FROM votes
                        GROUP BY phone_number HAVING COUNT(*) > {max_votes}) AS over_limit)"
        )
    }

    /// Rows of (contestant number, votes).
    pub const PER_CONTESTANT: &str =
        "SELECT contestant_number, COUNT(*) FROM votes GROUP BY contestant_number";

    /// Rows of (contestant name, votes), most first.
    pub const STANDINGS: &str = "SELECT c.contestant_name, COUNT(v.contestant_number) AS n
           FROM contestants c
           LEFT JOIN votes v ON v.contestant_number = c.contestant_number
          GROUP BY c.contestant_number, c.contestant_name
          ORDER BY n DESC, c.contestant_number";
}

/// The Voter capability: what a target must do to run the Voter.
pub trait VoterBackend: TargetInfo {
    type Conn: VoterConn;

    /// Create schema and procedures and initialise the contestants and
    /// area codes; idempotent.
    fn prepare(&self, contestants: u8) -> impl Future<Output = Result<(), TargetError>>;
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// Server-side counts; `max_votes` is the limit to check phones against.
    /// `None`: the target keeps no data, so there is nothing to verify.
    fn counts(
        &self,
        max_votes: u32,
    ) -> impl Future<Output = Result<Option<VoterCounts>, TargetError>>;
    /// Votes per contestant name, from the server, most first; `None`
    /// when the target keeps no data.
    fn standings(&self) -> impl Future<Output = Result<Option<Vec<(String, i64)>>, TargetError>>;
    fn teardown(&self) -> impl Future<Output = Result<(), TargetError>>;
}

/// One connection able to call Vote, possibly many calls in flight.
pub trait VoterConn: CountsBytes + Send + 'static {
    /// Queue a call; must not block.
    fn vote(&mut self, vote: &Vote, tag: Tag);
    /// The next answer. Cancel safe.
    fn recv(&mut self) -> impl Future<Output = Reply<VoteResult>> + Send;
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
}

/// The engine's driver for the Voter over any [`VoterConn`].
pub struct VoterDriver<C> {
    conn: C,
    calls: CallGenerator,
    /// Contestant of the vote in flight under each tag, to count acceptances.
    contestant: Vec<u8>,
}

impl<C: VoterConn> Driver for VoterDriver<C> {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let vote = self.calls.call(index);
        let t = tag as usize;
        if t >= self.contestant.len() {
            self.contestant.resize(t + 1, 0);
        }
        self.contestant[t] = vote.contestant.clamp(0, 255) as u8;
        self.conn.vote(&vote, tag);
        0
    }

    async fn recv(&mut self) -> Event {
        match self.conn.recv().await {
            Reply::Broken(e) => Event::Broken(e),
            Reply::Done { tag, result } => {
                let result = result.map(|r| {
                    Some(match r {
                        VoteResult::InvalidContestant => INVALID,
                        VoteResult::OverLimit => OVER_LIMIT,
                        VoteResult::Accepted => {
                            let c = self.contestant.get(tag as usize).copied().unwrap_or(1);
                            ACCEPTED_BASE + u16::from(c.max(1)) - 1
                        }
                    })
                });
                Event::Done { tag, result }
            }
        }
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }
}

/// The tallies of a run, from the domain counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tallies {
    pub accepted: u64,
    pub per_contestant: Vec<u64>,
    pub invalid: u64,
    pub over_limit: u64,
    pub failed: u64,
    /// Failed after being sent (connection lost, timeout): may have committed.
    pub in_doubt: u64,
}

impl Tallies {
    pub fn from(counted: &Snapshot, contestants: u8) -> Tallies {
        let d = |i: u16| counted.domains.get(usize::from(i)).copied().unwrap_or(0);
        let per_contestant: Vec<u64> = (0..u16::from(contestants))
            .map(|c| d(ACCEPTED_BASE + c))
            .collect();
        Tallies {
            accepted: per_contestant.iter().sum(),
            per_contestant,
            invalid: d(INVALID),
            over_limit: d(OVER_LIMIT),
            failed: counted.errors(),
            in_doubt: counted.in_doubt(),
        }
    }
}
/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: VoterBackend + 'static>(self, backend: B) -> Self::Output;
}

/// The Voter on one backend.
pub struct VoterBench<B> {
    pub backend: B,
    pub spec: VoterSpec,
    pub seed: u64,
}

impl<B: VoterBackend> VoterBench<B> {
    pub fn new(backend: B, own: &VoterSpec, run: &RunSpec) -> Self {
        VoterBench {
            backend,
            spec: own.clone(),
            seed: run.seed,
        }
    }
}

impl<B: VoterBackend> Bench for VoterBench<B> {
    type Driver = VoterDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        vec!["vote"]
    }

    fn domains(&self) -> Vec<String> {
        let mut d = vec!["invalid".to_string(), "over_limit".to_string()];
        d.extend((1..=self.spec.contestants).map(|c| format!("accepted.{c}")));
        d
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        self.backend.prepare(self.spec.contestants).await
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let c = self.backend.counts(self.spec.max_votes).await?;
        Ok(c.map_or(serde_json::Value::Null, |c| {
            serde_json::to_value(c).unwrap_or_default()
        }))
    }

    async fn connect(&self, _worker: u32) -> Result<Self::Driver, TargetError> {
        Ok(VoterDriver {
            conn: self.backend.connect().await?,
            calls: CallGenerator::new(&self.spec, self.seed),
            contestant: Vec::new(),
        })
    }

    async fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let Some(after) = self.backend.counts(self.spec.max_votes).await? else {
            return Ok(Verdict::skipped("the target keeps no data"));
        };
        let before: VoterCounts = serde_json::from_value(baseline.clone()).unwrap_or_default();
        Ok(verdict(
            &before,
            &after,
            &Tallies::from(counted, self.spec.contestants),
        ))
    }

    async fn results(&mut self, counted: &Snapshot) -> Result<Results, TargetError> {
        let t = Tallies::from(counted, self.spec.contestants);
        let standings = self.backend.standings().await?;
        Ok(results(&t, standings.as_deref()))
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep {
            Ok(())
        } else {
            self.backend.teardown().await
        }
    }
}

/// Rows added = accepted, per contestant too (exactly, unless votes were
/// left in doubt by a lost connection), and no phone over the limit that
/// was not over it before.
pub fn verdict(before: &VoterCounts, after: &VoterCounts, t: &Tallies) -> Verdict {
    let added = after.votes - before.votes;
    let doubt = t.in_doubt as i64;
    let mut checks =
        vec![Check::new("rows added = votes accepted", t.accepted as i64, added).in_doubt(doubt)];
    for (i, &n) in t.per_contestant.iter().enumerate() {
        let at = |c: &VoterCounts| c.per_contestant.get(i).copied().unwrap_or(0);
        checks.push(
            Check::new(
                format!("votes for {} (#{})", CONTESTANT_NAMES[i], i + 1),
                n as i64,
                at(after) - at(before),
            )
            .in_doubt(doubt),
        );
    }
    checks.push(Check::new(
        "phones over the vote limit",
        before.phones_over_limit,
        after.phones_over_limit,
    ));
    let sign = if added >= 0 { "+" } else { "" };
    let summary = if doubt == 0 {
        format!(
            "{} accepted = {sign}{} rows",
            group(t.accepted),
            group_i(added)
        )
    } else {
        format!(
            "{} accepted, {} in doubt after lost connections: {sign}{} rows",
            group(t.accepted),
            group(t.in_doubt),
            group_i(added)
        )
    };
    Verdict::from_checks(checks, summary)
}

/// The tallies, the standings table and the winner.
pub fn results(t: &Tallies, standings: Option<&[(String, i64)]>) -> Results {
    let lines = vec![format!(
        "votes: accepted {}, rejected invalid contestant {}, rejected over limit {}, failed {}",
        group(t.accepted),
        group(t.invalid),
        group(t.over_limit),
        group(t.failed)
    )];
    let rows = standings
        .unwrap_or_default()
        .iter()
        .map(|(name, votes)| vec![name.clone(), group_i(*votes)])
        .collect();
    let footer = match standings.map(|s| s.first()) {
        Some(Some((name, votes))) => vec![format!("winner: {name} with {} votes", group_i(*votes))],
        Some(None) => vec!["winner: none (no votes)".to_string()],
        None => vec!["standings: none (the target keeps no data)".to_string()],
    };
    Results {
        lines,
        header: vec!["contestant".to_string(), "votes".to_string()],
        rows,
        footer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_row_fails_the_verdict() {
        let before = VoterCounts {
            votes: 10,
            per_contestant: vec![5, 5],
            phones_over_limit: 0,
        };
        let mut after = VoterCounts {
            votes: 13,
            per_contestant: vec![7, 6],
            phones_over_limit: 0,
        };
        let t = Tallies {
            accepted: 3,
            per_contestant: vec![2, 1],
            ..Tallies::default()
        };
        assert_eq!(verdict(&before, &after, &t).passed, Some(true));
        after.votes = 12;
        after.per_contestant[0] = 6;
        let v = verdict(&before, &after, &t);
        assert_eq!(v.passed, Some(false));
        assert!(
            v.summary
                .contains("rows added = votes accepted: expected 3, found 2"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn votes_in_doubt_may_or_may_not_have_landed() {
        let before = VoterCounts {
            votes: 0,
            per_contestant: vec![0, 0],
            phones_over_limit: 0,
        };
        let t = Tallies {
            accepted: 3,
            per_contestant: vec![2, 1],
            in_doubt: 2,
            ..Tallies::default()
        };
        let counts = |a: i64, b: i64| VoterCounts {
            votes: a + b,
            per_contestant: vec![a, b],
            phones_over_limit: 0,
        };
        // Both in-doubt votes landed, or one, or none: all consistent.
        for (a, b) in [(2, 1), (3, 1), (3, 2), (4, 1)] {
            let v = verdict(&before, &counts(a, b), &t);
            assert_eq!(v.passed, Some(true), "{a} {b}: {}", v.summary);
            assert!(v.summary.contains("2 in doubt"), "{}", v.summary);
        }
        // Fewer rows than acknowledged, or more than could be in doubt.
        for (a, b) in [(1, 1), (4, 2)] {
            let v = verdict(&before, &counts(a, b), &t);
            assert_eq!(v.passed, Some(false), "{a} {b}: {}", v.summary);
        }
    }

    #[test]
    fn states_come_from_the_area_code() {
        assert_eq!(state_of(2_025_550_123), "DC");
        assert_eq!(state_of(9_075_550_123), "AK");
        assert_eq!(state_of(1_005_550_123), "XX");
    }
}
