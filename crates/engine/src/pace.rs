//! Sources of start tokens: the one thing that differs between the load
//! models. A [`Source`] hands the worker loop the next operation index and
//! its intended start time, or says what to wait for. Closed loop, open
//! loop and bursts are variants of one enum, matched in one place, so
//! there is one worker loop, not one per mode.

use std::time::Duration;

use loadrig_spec::{Arrival, Pacing};
use tokio::time::Instant;

use crate::curve::Curve;
use crate::rng::Rng;

/// An operation allowed to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub index: u64,
    /// When the operation should start; latency is measured from here.
    pub intended: Instant,
}

/// What the worker should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Token(Token),
    /// Nothing is due before this instant.
    At(Instant),
    /// Nothing starts until an operation completes.
    Completion,
    /// The open loop fell more than the maximum lag behind: `count`
    /// operations from index `first` (every `stride`-th) would each be
    /// dropped on arrival, so they are passed over in one step and counted
    /// as dropped by the worker (docs/reference/limits.md, "wall-clock bound").
    Dropped {
        first: u64,
        stride: u64,
        count: u64,
    },
    /// This phase issues nothing more.
    Done,
}

/// The operation indices of one worker: `first, first + stride, ...` below `end`.
#[derive(Debug, Clone)]
pub(crate) struct Indices {
    next: u64,
    stride: u64,
    end: u64,
    /// Read only at the end, for the span issued.
    first: u64,
}

impl Indices {
    pub fn new(first: u64, stride: u64, end: u64) -> Self {
        Indices {
            next: first,
            stride: stride.max(1),
            end,
            first,
        }
    }

    /// The indices taken so far, as a span of `phase`.
    pub fn taken(&self, phase: u32) -> loadrig_metrics::Span {
        let count = if self.next <= self.first {
            0
        } else {
            (self.next - self.first).div_ceil(self.stride)
        };
        loadrig_metrics::Span {
            phase,
            first: self.first,
            stride: self.stride,
            count,
        }
    }

    fn peek(&self) -> Option<u64> {
        (self.next < self.end).then_some(self.next)
    }

    fn advance(&mut self) {
        self.next = self.next.saturating_add(self.stride);
    }

    /// Pass over `n` indices at once.
    fn skip(&mut self, n: u64) {
        self.next = self.next.saturating_add(self.stride.saturating_mul(n));
    }

    /// Indices not yet taken.
    pub fn remaining(&self) -> u64 {
        if self.next >= self.end {
            0
        } else {
            (self.end - 1 - self.next) / self.stride + 1
        }
    }
}

#[derive(Debug, Clone)]
enum Pace {
    Steady {
        max_outstanding: usize,
    },
    Rate {
        /// When the count of operations due reaches a value.
        curve: Curve,
        /// Where this worker is on the count axis: its next operation is
        /// due when the count reaches `u`.
        u: f64,
        /// This worker's mean step along the count axis: the workers.
        step: f64,
        gaps: Gaps,
        origin: Instant,
        /// When `u` is due; `None` once the schedule has ended.
        next: Option<Instant>,
    },
    Burst {
        size: u32,
        delay: Duration,
        limit: usize,
        /// Operations of the current burst still to issue.
        left: u32,
        /// When the current burst started (its operations' intended start).
        at: Instant,
        sleeping_until: Option<Instant>,
    },
}

/// Start tokens for one worker in one phase. Laid out by hand
/// (`repr(C)`), in the order [`Source::next`] reads it: at thousands of
/// connections a closed loop's next token misses one cache line here
/// instead of three (cachegrind, docs/explanations/client-cost.md).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct Source {
    finished: bool,
    indices: Indices,
    /// No operation starts at or after this instant (duration stop).
    deadline: Option<Instant>,
    pace: Pace,
    /// An operation later than this is dropped rather than started.
    max_lag: Duration,
}

/// How this worker's share of the load is sized.
pub(crate) struct Share {
    /// Callers this worker serves.
    pub callers: u32,
    pub pipeline: u32,
    /// This worker's position among all workers of all shards, and their number.
    pub global: u64,
    pub total: u64,
}

impl Source {
    pub fn new(
        pacing: &Pacing,
        curve: Option<Curve>,
        share: &Share,
        indices: Indices,
        origin: Instant,
        limits: (Option<Instant>, Duration),
        seed: u64,
    ) -> Source {
        let (deadline, max_lag) = limits;
        let callers = share.callers.max(1) as usize;
        let pace = match *pacing {
            Pacing::Steady => Pace::Steady {
                max_outstanding: callers * share.pipeline.max(1) as usize,
            },
            Pacing::Rate { rate, arrival } => {
                // The operations are dealt evenly; worker g's first is
                // operation g, due when the count reaches g, so the
                // merged schedule interleaves.
                let step = share.total as f64;
                let mut gaps = Gaps::new(arrival, seed, share.global);
                let u = share.global as f64 + gaps.draw(step).unwrap_or(0.0);
                let mut curve = curve.unwrap_or_else(|| Curve::constant(rate));
                let next = at(origin, curve.time_of(u));
                Pace::Rate {
                    curve,
                    u,
                    step,
                    gaps,
                    origin,
                    next,
                }
            }
            Pacing::Burst {
                size,
                delay_ms,
                limit,
            } => Pace::Burst {
                size: size.saturating_mul(callers as u32),
                delay: Duration::from_secs_f64(delay_ms / 1e3),
                limit: limit as usize * callers,
                left: size.saturating_mul(callers as u32),
                at: origin,
                sleeping_until: None,
            },
        };
        Source {
            pace,
            indices,
            deadline,
            max_lag,
            finished: false,
        }
    }

    /// The next step, given the time and the operations this worker has
    /// started but not completed (in flight, queued or held).
    pub fn next(&mut self, now: Instant, outstanding: usize) -> Next {
        if self.finished {
            return Next::Done;
        }
        let Some(index) = self.indices.peek() else {
            return self.finish();
        };
        let intended = match &mut self.pace {
            Pace::Steady { max_outstanding } => {
                if outstanding >= *max_outstanding {
                    return Next::Completion;
                }
                if self.deadline.is_some_and(|d| now >= d) {
                    return self.finish();
                }
                now
            }
            Pace::Rate {
                curve,
                u,
                step,
                gaps,
                origin,
                next,
            } => {
                let Some(due) = *next else {
                    return self.finish();
                };
                if self.deadline.is_some_and(|d| due >= d) {
                    return self.finish();
                }
                if due > now {
                    return Next::At(due);
                }
                let behind = now.saturating_duration_since(due);
                if behind > self.max_lag {
                    return self.pass_over(index, now);
                }
                *u += gaps.draw(*step).unwrap_or(*step);
                *next = at(*origin, curve.time_of(*u));
                due
            }
            Pace::Burst {
                size,
                delay,
                limit,
                left,
                at,
                sleeping_until,
            } => {
                if let Some(until) = *sleeping_until {
                    if now < until {
                        return Next::At(until);
                    }
                    *sleeping_until = None;
                    *left = *size;
                    *at = until;
                }
                if *left == 0 {
                    if outstanding > *limit {
                        return Next::Completion;
                    }
                    let until = now + *delay;
                    *sleeping_until = Some(until);
                    return Next::At(until);
                }
                if self.deadline.is_some_and(|d| *at >= d) {
                    return self.finish();
                }
                *left -= 1;
                *at
            }
        };
        self.indices.advance();
        Next::Token(Token { index, intended })
    }

    /// The schedule is more than the maximum lag behind `now`: every
    /// start due before `now - max_lag` would be dropped when it arrived,
    /// so they are counted in one step instead of one by one. A rate far
    /// above what the client can send then costs time in proportion to
    /// the run's length, not to its rate. Random gaps pass over the
    /// expected number of starts in the gap.
    fn pass_over(&mut self, first: u64, now: Instant) -> Next {
        let Pace::Rate {
            curve,
            u,
            step,
            origin,
            next,
            ..
        } = &mut self.pace
        else {
            return Next::Completion;
        };
        let since = |t: Instant| t.saturating_duration_since(*origin).as_secs_f64();
        let starts_by = |t: f64| ((curve.count_at(t) - *u) / *step).ceil().max(1.0);
        let mut count = starts_by(since(now.checked_sub(self.max_lag).unwrap_or(now)));
        if let Some(d) = self.deadline {
            count = count.min(starts_by(since(d)));
        }
        // f64 to u64 saturates; the remaining indices bound it again.
        let count = (count as u64).min(self.indices.remaining()).max(1);
        *u += count as f64 * *step;
        *next = at(*origin, curve.time_of(*u));
        let stride = self.indices.stride;
        self.indices.skip(count);
        Next::Dropped {
            first,
            stride,
            count,
        }
    }

    fn finish(&mut self) -> Next {
        self.finished = true;
        Next::Done
    }

    /// Stop issuing (Ctrl-C, give-up).
    pub fn stop(&mut self) {
        self.finished = true;
    }

    /// Operations of this phase that will not be issued.
    pub fn remaining(&self) -> u64 {
        self.indices.remaining()
    }

    /// The indices this source has handed out, as a span of `phase`.
    pub fn taken(&self, phase: u32) -> loadrig_metrics::Span {
        self.indices.taken(phase)
    }

    pub fn is_done(&self) -> bool {
        self.finished
    }
}

/// `origin` plus `secs`, if the schedule reaches that far.
fn at(origin: Instant, secs: Option<f64>) -> Option<Instant> {
    let secs = secs?;
    // A time past what a Duration holds is never reached.
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| origin.checked_add(d))
}

/// Steps along the count axis between one worker's operations: regular
/// (no draw) or random with the given mean.
#[derive(Debug, Clone)]
enum Gaps {
    Regular,
    Poisson(Rng),
}

impl Gaps {
    fn new(arrival: Arrival, seed: u64, worker: u64) -> Gaps {
        let rng = || Rng::stream(seed, 0x5041_4345 ^ worker);
        match arrival {
            Arrival::Regular => Gaps::Regular,
            Arrival::Poisson => Gaps::Poisson(rng()),
        }
    }

    /// A random step of mean `mean`; `None` for regular arrivals.
    fn draw(&mut self, mean: f64) -> Option<f64> {
        match self {
            Gaps::Regular => None,
            // 1 - unit() is in (0, 1], so the logarithm is finite.
            Gaps::Poisson(rng) => Some(-(1.0 - rng.unit()).ln() * mean),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: Duration = Duration::from_secs(10);

    fn share() -> Share {
        Share {
            callers: 1,
            pipeline: 1,
            global: 0,
            total: 1,
        }
    }

    #[test]
    fn steady_waits_for_completion_at_its_window() {
        let now = Instant::now();
        let mut s = Source::new(
            &Pacing::Steady,
            None,
            &share(),
            Indices::new(0, 1, 3),
            now,
            (None, LAG),
            1,
        );
        assert!(matches!(
            s.next(now, 0),
            Next::Token(Token { index: 0, .. })
        ));
        assert_eq!(s.next(now, 1), Next::Completion);
        assert!(matches!(
            s.next(now, 0),
            Next::Token(Token { index: 1, .. })
        ));
        assert!(matches!(
            s.next(now, 0),
            Next::Token(Token { index: 2, .. })
        ));
        assert_eq!(s.next(now, 0), Next::Done);
    }

    #[test]
    fn rate_schedules_evenly_and_stops_at_the_deadline() {
        let t0 = Instant::now();
        let pacing = Pacing::Rate {
            rate: 100.0,
            arrival: Arrival::Regular,
        };
        let end = t0 + Duration::from_secs(1);
        let mut s = Source::new(
            &pacing,
            None,
            &share(),
            Indices::new(0, 1, u64::MAX),
            t0,
            (Some(end), LAG),
            1,
        );
        let mut n = 0;
        let mut now = t0;
        loop {
            match s.next(now, 0) {
                Next::Token(t) => {
                    let want = t0 + Duration::from_secs_f64(n as f64 / 100.0);
                    let diff = if t.intended > want {
                        t.intended - want
                    } else {
                        want - t.intended
                    };
                    assert!(diff < Duration::from_micros(1), "op {n}");
                    n += 1;
                }
                Next::At(t) => now = t,
                Next::Done => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn a_schedule_far_behind_is_passed_over_in_one_step() {
        let t0 = Instant::now();
        let pacing = Pacing::Rate {
            rate: 1000.0,
            arrival: Arrival::Regular,
        };
        let lag = Duration::from_millis(100);
        let end = t0 + Duration::from_secs(10);
        let mut s = Source::new(
            &pacing,
            None,
            &share(),
            Indices::new(0, 1, u64::MAX),
            t0,
            (Some(end), lag),
            1,
        );
        // 1 s late with a 100 ms lag: starts 0..=899 are over 100 ms late
        // (start 899 by 100.1 ms; start 900 by exactly 100 ms, which stays).
        let now = t0 + Duration::from_secs(1);
        assert_eq!(
            s.next(now, 0),
            Next::Dropped {
                first: 0,
                stride: 1,
                count: 900
            }
        );
        assert!(matches!(
            s.next(now, 0),
            Next::Token(Token { index: 900, .. })
        ));
        // Far past the deadline: only the starts before it are passed
        // over (10,000 in all), then the source is done.
        let late = end + Duration::from_secs(3600);
        let (mut dropped, mut issued) = (900, 1);
        loop {
            match s.next(late, 0) {
                Next::Dropped { count, .. } => dropped += count,
                Next::Token(_) => issued += 1,
                Next::Done => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((issued, dropped), (1, 9_999));
    }

    #[test]
    fn bursts_wait_for_the_limit_then_sleep() {
        let t0 = Instant::now();
        let pacing = Pacing::Burst {
            size: 3,
            delay_ms: 1.0,
            limit: 1,
        };
        let mut s = Source::new(
            &pacing,
            None,
            &share(),
            Indices::new(0, 1, 100),
            t0,
            (None, LAG),
            1,
        );
        for i in 0..3 {
            assert!(matches!(s.next(t0, i), Next::Token(_)));
        }
        assert_eq!(s.next(t0, 3), Next::Completion);
        assert_eq!(s.next(t0, 2), Next::Completion);
        assert_eq!(s.next(t0, 1), Next::At(t0 + Duration::from_millis(1)));
        assert_eq!(s.next(t0, 1), Next::At(t0 + Duration::from_millis(1)));
        let t1 = t0 + Duration::from_millis(1);
        assert!(matches!(s.next(t1, 1), Next::Token(Token { intended, .. }) if intended == t1));
    }
}
