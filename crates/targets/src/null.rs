//! The `null` target: every operation completes in process, optionally
//! after a delay, and nothing is stored. It measures the engine's own cost
//! and lets the scheduler be tested end to end without a server.

use std::collections::VecDeque;
use std::time::Duration;

use loadrig_engine::rng::Rng;
use loadrig_engine::CountsBytes;
use loadrig_engine::{Tag, Timer};
use loadrig_metrics::OpError;
use loadrig_spec::{SpecError, CONTESTANT_NAMES};
use loadrig_workloads::hello::{HelloBackend, HelloConn, HelloOp};
use loadrig_workloads::voter::{Vote, VoteResult, VoterBackend, VoterConn, VoterCounts};
use loadrig_workloads::TargetInfo;
use loadrig_workloads::{Reply, TargetError};
use tokio::time::Instant;

use crate::{parse_duration, query_pairs};

/// How long a null operation takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NullDelay {
    None,
    Fixed(Duration),
    /// Uniform between the two, drawn per operation.
    Uniform(Duration, Duration),
}

#[derive(Debug, Clone)]
pub struct NullTarget {
    pub delay: NullDelay,
}

impl NullTarget {
    /// Parse what follows `null://`: `?delay=D` or `?delay=A-B`.
    pub fn parse(rest: &str) -> Result<NullTarget, SpecError> {
        let query = rest.split_once('?').map_or("", |(_, q)| q);
        let mut delay = NullDelay::None;
        for (k, v) in query_pairs(query) {
            let bad = || {
                SpecError::new(
                    "--target",
                    format!("null: bad delay '{v}' (e.g. delay=100us or delay=50us-2ms)"),
                )
            };
            match k {
                "delay" => {
                    delay = match v.split_once('-') {
                        Some((a, b)) => {
                            let (a, b) = (
                                parse_duration(a).ok_or_else(bad)?,
                                parse_duration(b).ok_or_else(bad)?,
                            );
                            if a > b {
                                return Err(bad());
                            }
                            NullDelay::Uniform(a, b)
                        }
                        None => NullDelay::Fixed(parse_duration(v).ok_or_else(bad)?),
                    }
                }
                other => {
                    return Err(SpecError::new(
                        "--target",
                        format!("null: unknown option '{other}' (only delay)"),
                    ));
                }
            }
        }
        Ok(NullTarget { delay })
    }

    fn conn(&self) -> NullConn {
        NullConn {
            delay: self.delay,
            rng: Rng::stream(0, 0x4e55_4c4c),
            queue: VecDeque::new(),
            timer: Timer::new(),
        }
    }
}

/// Completions in send order, each due `delay` after its send.
pub struct NullConn {
    delay: NullDelay,
    rng: Rng,
    /// Each completion: its tag, when it is due, and whether it refuses
    /// (a vote for nobody).
    queue: VecDeque<(Tag, Option<Instant>, bool)>,
    /// tokio's sleep alone would round a 100 us delay up to a millisecond.
    timer: Timer,
}

/// No bytes: there is no target.
impl CountsBytes for NullConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        (0, 0)
    }
}

impl NullConn {
    fn push(&mut self, tag: Tag, refuse: bool) {
        let due = match self.delay {
            NullDelay::None => None,
            NullDelay::Fixed(d) => Some(Instant::now() + d),
            NullDelay::Uniform(a, b) => {
                let span = (b - a).as_nanos() as u64;
                Some(Instant::now() + a + Duration::from_nanos(self.rng.below(span.max(1))))
            }
        };
        self.queue.push_back((tag, due, refuse));
    }

    async fn next(&mut self) -> Option<(Tag, bool)> {
        let &(tag, due, refuse) = self.queue.front()?;
        if let Some(due) = due {
            // Cancel safe: the entry leaves the queue only once it is due.
            self.timer.sleep_until(due).await;
        }
        self.queue.pop_front();
        Some((tag, refuse))
    }
}

impl VoterConn for NullConn {
    fn vote(&mut self, vote: &Vote, tag: Tag) {
        // The Vote procedure's first check, as every server makes it: a
        // vote for nobody on the list is refused. Accepted, it would be an
        // ok operation that no tally can place (the counts stopped adding
        // up: 1,000 ok, 991 accepted, 0 refused). The generator votes for
        // 1..=contestants or for nobody (999), so the longest list decides
        // exactly, also in a --processes child, which does not prepare.
        let on_list = (1..=CONTESTANT_NAMES.len() as i32).contains(&vote.contestant);
        self.push(tag, !on_list);
    }

    async fn recv(&mut self) -> Reply<VoteResult> {
        match self.next().await {
            Some((tag, refuse)) => Reply::Done {
                tag,
                result: Ok(if refuse {
                    VoteResult::InvalidContestant
                } else {
                    VoteResult::Accepted
                }),
            },
            None => Reply::Broken(OpError::new(loadrig_metrics::ErrorKind::Protocol)),
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.queue.clear();
        Ok(())
    }
}

impl HelloConn for NullConn {
    fn call(&mut self, _op: &HelloOp, tag: Tag) {
        self.push(tag, false);
    }

    async fn recv(&mut self) -> Reply<()> {
        match self.next().await {
            Some((tag, _)) => Reply::Done {
                tag,
                result: Ok(()),
            },
            None => Reply::Broken(OpError::new(loadrig_metrics::ErrorKind::Protocol)),
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.queue.clear();
        Ok(())
    }
}

impl VoterBackend for NullTarget {
    type Conn = NullConn;

    async fn prepare(&self, _contestants: u8) -> Result<(), TargetError> {
        Ok(())
    }

    async fn connect(&self) -> Result<NullConn, TargetError> {
        Ok(self.conn())
    }

    async fn counts(&self, _max_votes: u32) -> Result<Option<VoterCounts>, TargetError> {
        Ok(None)
    }

    async fn standings(&self) -> Result<Option<Vec<(String, i64)>>, TargetError> {
        Ok(None)
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        Ok(())
    }
}

impl HelloBackend for NullTarget {
    type Conn = NullConn;

    async fn prepare(&self) -> Result<(), TargetError> {
        Ok(())
    }

    async fn connect(&self) -> Result<NullConn, TargetError> {
        Ok(self.conn())
    }

    async fn rows(&self) -> Result<Option<i64>, TargetError> {
        Ok(None)
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        Ok(())
    }
}

impl TargetInfo for NullTarget {
    async fn server_version(&self) -> Option<String> {
        None
    }

    fn durability(&self) -> Option<String> {
        None
    }

    fn max_depth(&self) -> usize {
        usize::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_delays() {
        assert_eq!(NullTarget::parse("").unwrap().delay, NullDelay::None);
        assert_eq!(
            NullTarget::parse("?delay=2ms").unwrap().delay,
            NullDelay::Fixed(Duration::from_millis(2))
        );
        assert_eq!(
            NullTarget::parse("?delay=50us-1ms").unwrap().delay,
            NullDelay::Uniform(Duration::from_micros(50), Duration::from_millis(1))
        );
        assert_eq!(
            NullTarget::parse("?delay=fast").unwrap_err().flag,
            "--target"
        );
        assert!(NullTarget::parse("?delay=2ms-1ms").is_err());
    }
}
