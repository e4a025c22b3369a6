//! The worker loop: the one place operations start and complete.
//!
//! A worker owns one driver (one connection), its share of the callers and
//! of the operation indices; it records into its thread's recorder
//! (`record`), not into snapshots of its own. Each turn it serves
//! held and queued operations, asks its [`Source`] for start tokens while
//! slots are free, and then waits for whichever comes first: a completion,
//! the next intended start, or housekeeping (laps, timeouts, Ctrl-C).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::{Dispatch, Stop};
use tokio::time::Instant;

use crate::curve::Curve;
use crate::pace::{Indices, Next, Share, Source, Token};
use crate::record::Shared;
use crate::slots::Slots;
use crate::timer::Timer;
use crate::{Driver, EngineConfig, Event, WARMUP_INDEX_BASE};

/// A listener's drain goes on while deliveries arrive, for at most this
/// many drain periods after the last issuing worker was done.
const DRAIN_CAP: u32 = 10;

/// Housekeeping (stop flag, drain) runs at least this often, and no less
/// often than the timeout; a timeout itself is checked when the oldest
/// operation in flight falls due. Not a fixed 100 ms tick while busy: with
/// thousands of connections, each waiting far longer than that for its
/// answer, ticks would outnumber operations (docs/explanations/client-cost.md).
const CHECK_EVERY: Duration = Duration::from_millis(500);
/// After a stop signal, what is in flight has this long (or the timeout,
/// if shorter) to be answered; then it fails as a timeout, in doubt for
/// verification, so a stop ends promptly (docs/reference/limits.md).
const STOP_GRACE: Duration = Duration::from_secs(1);
/// Tokens one turn may admit before the loop yields (fairness, and no spin
/// when every token fails at once, e.g. a full queue).
const ADMIT_BUDGET: u32 = 256;
/// Completions between voluntary yields, for drivers that are always ready.
const YIELD_EVERY: u32 = 64;
const WARMUP: usize = 0;
const MEASURED: usize = 1;

/// How a worker learns that it, or the run, is over.
pub(crate) struct Ends {
    /// Ctrl-C.
    pub stop: Arc<AtomicBool>,
    /// Issuing workers not yet done; listening workers drain once it is 0.
    pub talking: Arc<AtomicUsize>,
    /// This worker issues nothing and only listens.
    pub listener: bool,
    /// Its thread's park hook ([`crate::ThreadHooks`]), called between
    /// the polls of a spin; none without hooks.
    pub park: Option<fn()>,
}

/// Direct mode holds one operation waiting for a slot; managed mode a bounded queue.
struct Admission {
    /// Managed mode: operations waiting for a slot (bounded).
    queue: VecDeque<(Token, usize)>,
    queue_cap: usize,
    managed: bool,
    /// Direct mode: the one operation waiting for a slot.
    held: Option<(Token, usize)>,
}

/// The connection's health: up or down since when, and the backoff between attempts.
#[repr(C)]
struct LinkState {
    connected: bool,
    down_since: Option<Instant>,
    backoff: Duration,
}

/// The worker's own times: where it started, its next lap and housekeeping, and the limits it applies.
#[repr(C)]
struct Clock {
    next_check: Instant,
    max_lag: Duration,
    timeout: Duration,
    interval: Duration,
    start: Instant,
    next_lap: Instant,
}

/// How a worker comes to an end: the run's stop flag, its own drain, and whether it has gone quiet.
#[repr(C)]
struct Ending {
    /// The last completion, delivery or broken connection: the run's end.
    last_event: Option<Instant>,
    /// The last completion or delivery: what a drain waits on.
    last_arrival: Option<Instant>,
    /// When a listening worker saw the last issuing worker done: its
    /// drain starts there ([`Ending::drain_until`]).
    drain_from: Option<Instant>,
    stop: Arc<AtomicBool>,
    stopping: bool,
    /// When this worker saw the stop signal: in-flight operations get
    /// [`STOP_GRACE`] from here.
    stopped_at: Option<Instant>,
    /// This worker has issued and settled everything (said once).
    quiet: bool,
    talking: Arc<AtomicUsize>,
    drain: Duration,
    /// `-n`: the run owes an account of every operation, issued or not.
    counted: bool,
}

impl Ending {
    /// When a listening worker stops receiving: `drain` after the last
    /// issuing worker was done, or after its own last delivery when that
    /// is later, but no later than [`DRAIN_CAP`] drains after the first.
    fn drain_until(&self) -> Option<Instant> {
        let from = self.drain_from?;
        let quiet = self.last_arrival.map_or(from, |last| last.max(from));
        Some((quiet + self.drain).min(from + self.drain * DRAIN_CAP))
    }
}

/// Whether a worker listens: beside issuing operations, or instead of
/// issuing (a subscriber).
struct Listening {
    /// Keeps calling `recv` with nothing in flight (see `Driver::listens`).
    listen: bool,
    /// Issues nothing (a subscriber of a pub/sub run).
    listener: bool,
}

#[repr(C)]
pub(crate) struct Worker<D> {
    // Laid out by hand (`repr(C)`): first what one operation reads and
    // writes, then the driver, then what only housekeeping, laps and the
    // run's edges use. With thousands of connections a worker has left the
    // processor's caches by the time its next answer comes, and each cache
    // line an operation touches is one more miss (docs/explanations/client-cost.md).
    source: Source,
    /// The thread's recorder, and this worker's place among its workers.
    rec: Shared,
    phase: usize,
    since_yield: u32,
    /// The open loop and bursts: operations have intended starts, so the
    /// worker wakes for them precisely and records each one's send lag.
    paced: bool,
    /// Whether it issues, listens, or both.
    listening: Listening,
    /// Whether the connection is up, and the reconnect backoff.
    link: LinkState,
    /// Operations in flight by tag (see `slots`).
    slots: Slots,
    /// Lap, housekeeping and timeout times.
    clock: Clock,
    /// How the worker comes to an end: stop flag, drain, quiet.
    ending: Ending,
    /// Direct or managed: the operation held for a slot, or the queue.
    admit: Admission,
    driver: D,
    local: usize,
    /// The measured phase's source, waiting for the warm-up to end
    /// (boxed: taken once, and every connection's task would carry its
    /// size).
    main: Option<Box<Source>>,
    /// The precise wake-up for the next intended start (see `timer`).
    timer: Timer,
    /// The last stretch before an intended start spent polling (`--spin`).
    spin: Duration,
    /// The thread's park hook, for a spin (see [`Ends::park`]).
    park: Option<fn()>,
    /// Per-kind counts of operations passed over (reused, see `pass_over`).
    tally: Vec<u64>,
    /// The indices this worker issued, for verification (cold: touched at
    /// the warm-up's end, a stop and the worker's end).
    issued: Issued,
}

/// What a worker's [`Span`]s are made of.
///
/// [`Span`]: loadrig_metrics::Span
struct Issued {
    /// The run's phase, written into each span.
    phase: u32,
    /// The warm-up's span, once the warm-up has handed over to the
    /// measured source.
    warm: Option<loadrig_metrics::Span>,
    /// Operations taken from a source and then let go without being
    /// accounted for (a stop clearing the held one and the queue), by
    /// phase: the last ones taken, so the span ends before them.
    unissued: [u64; 2],
}

/// tokio's sleep as one branch of the worker's wait, polled only when it
/// may have fired. With thousands of connections the sleep's memory is one
/// more cache miss per operation otherwise (docs/explanations/client-cost.md).
///
/// Why skipping is safe: the loop makes a new wait each turn, and only for
/// an instant later than the clock it just read, resetting the sleep (and
/// clearing `registered`) whenever that instant changes. A sleep that fired
/// fired at an instant now past, so it has been reset since. A sleep
/// polled since its last reset therefore has not fired and holds this
/// task's waker: the wait's first poll can say "not yet" without touching
/// it. A later poll of the same wait means the task woke, maybe for the
/// sleep, and polls it.
fn coarse<'a>(
    mut sleep: Pin<&'a mut tokio::time::Sleep>,
    registered: &'a mut bool,
) -> impl Future<Output = ()> + 'a {
    let mut first = true;
    std::future::poll_fn(move |cx| {
        if std::mem::take(&mut first) && *registered {
            return std::task::Poll::Pending;
        }
        let polled = sleep.as_mut().poll(cx);
        *registered = polled.is_pending();
        polled
    })
}

impl<D: Driver> Worker<D> {
    pub fn new(
        cfg: &EngineConfig,
        id: usize,
        driver: D,
        start: Instant,
        ends: Ends,
        rec: Shared,
        local: usize,
    ) -> Self {
        let load = &cfg.load;
        let k = id as u32;
        let callers = load.callers_on(k);
        let total = u64::from(load.connections) * u64::from(load.shard.count);
        let share = Share {
            callers,
            pipeline: load.pipeline,
            global: u64::from(load.shard.index) * u64::from(load.connections) + u64::from(k),
            total,
        };
        let (depth, queue_cap, managed) = match load.dispatch {
            Dispatch::Direct => ((callers * load.pipeline) as usize, 0, false),
            Dispatch::Managed { queue, slots } => {
                let n = load.connections;
                let q = queue / n + u32::from(k < queue % n);
                (slots as usize, q as usize, true)
            }
        };
        let measure_start = start + cfg.warmup;
        let (end, deadline) = match load.stop {
            // A listener's share of the indices is empty.
            _ if ends.listener => (0, None),
            Stop::Count(n) => (n, None),
            Stop::Seconds(s) => (
                WARMUP_INDEX_BASE,
                Some(measure_start + Duration::from_secs_f64(s)),
            ),
        };
        let max_lag = Duration::from_secs_f64(load.max_lag_secs);
        let main = Source::new(
            &load.pacing,
            load.stages.as_ref().map(Curve::stages),
            &share,
            Indices::new(share.global, total, end),
            measure_start,
            (deadline, max_lag),
            cfg.seed,
        );
        let (source, phase, main) = if cfg.warmup.is_zero() || ends.listener {
            (main, MEASURED, None)
        } else {
            // A warm-up holds the rate the first stage starts from.
            let warm = load
                .stages
                .as_ref()
                .map(|st| Curve::constant(st.segments().next().map_or(0.0, |(_, _, r0, _)| r0)));
            let warm = Source::new(
                &load.pacing,
                warm,
                &share,
                Indices::new(WARMUP_INDEX_BASE + share.global, total, u64::MAX),
                start,
                (Some(measure_start), max_lag),
                cfg.seed ^ WARMUP_INDEX_BASE,
            );
            (warm, WARMUP, Some(Box::new(main)))
        };
        let listen = ends.listener || driver.listens();
        Worker {
            driver,
            slots: Slots::new(depth, start),
            admit: Admission {
                queue: VecDeque::with_capacity(queue_cap.min(1 << 16)),
                queue_cap,
                managed,
                held: None,
            },
            source,
            phase,
            main,
            rec,
            local,
            clock: Clock {
                max_lag,
                timeout: cfg.timeout,
                interval: cfg.interval,
                start,
                next_lap: start + cfg.interval,
                next_check: start,
            },
            ending: Ending {
                stop: ends.stop,
                stopping: false,
                stopped_at: None,
                quiet: false,
                talking: ends.talking,
                drain: cfg.drain,
                drain_from: None,
                last_event: None,
                last_arrival: None,
                counted: matches!(load.stop, Stop::Count(_)),
            },
            listening: Listening {
                listen,
                listener: ends.listener,
            },
            tally: Vec::new(),
            issued: Issued {
                phase: cfg.phase,
                warm: None,
                unissued: [0; 2],
            },
            link: LinkState {
                connected: true,
                down_since: None,
                backoff: Duration::from_millis(50),
            },
            since_yield: 0,
            paced: !matches!(load.pacing, loadrig_spec::Pacing::Steady),
            timer: Timer::new(),
            spin: cfg.spin,
            park: ends.park,
        }
    }

    /// The connection's whole life: wait for the start, then issue and
    /// complete until the source is done. Not an `async fn`: one taking
    /// `mut self` keeps its argument and a moved copy of it, both in the
    /// task (a second worker, 984 bytes for Redis, in every connection's
    /// task). The `async move` block holds the one worker it works on, at
    /// the start of its state.
    #[allow(clippy::manual_async_fn)]
    pub fn run(mut self) -> impl Future<Output = ()> {
        async move {
            let sleep = tokio::time::sleep_until(self.clock.start);
            tokio::pin!(sleep);
            // The first start on time too: tokio's sleep alone would leave it
            // up to a millisecond late. (A wake-up before it is harmless: the
            // loop waits again for what is not yet due.)
            if self.paced {
                self.timer.arm(self.clock.start);
            }
            tokio::select! {
                biased;
                () = &mut sleep => {}
                () = self.timer.fired(), if self.paced => {}
            }
            let mut armed = self.clock.start;
            // The sleep has been polled since it was last reset, so it holds
            // this task's waker and will wake it when `armed` passes.
            let mut registered = false;
            // The clock as last read, when nothing can have waited since.
            let mut fresh: Option<Instant> = None;
            loop {
                let now = fresh.take().unwrap_or_else(Instant::now);
                if now >= self.clock.next_check {
                    self.housekeeping(now);
                }
                if !self.link.connected {
                    // Boxed: reconnecting (a dial, a login, a back-off) is the
                    // largest state this loop can be in and the rarest, and
                    // every connection's task would otherwise carry its size.
                    Box::pin(self.reconnect()).await;
                    continue;
                }
                let due = self.admit(now);
                if self.finished(now) {
                    break;
                }
                let mut wake = due.map_or(self.clock.next_check, |d| d.min(self.clock.next_check));
                if let Some(t) = self.ending.drain_until() {
                    wake = wake.min(t);
                }
                if wake <= now {
                    tokio::task::yield_now().await;
                    continue;
                }
                if wake != armed {
                    sleep.as_mut().reset(wake);
                    armed = wake;
                    registered = false;
                }
                // tokio's sleep is a millisecond coarse: an intended start
                // gets the precise timer too, and whichever fires first wins.
                // With --spin the timer fires that much early and the rest is
                // spun: the task yields until the start is due, and each yield
                // lets the reactor poll (a zero-timeout epoll_wait) and the
                // thread's other tasks run, so no reply waits for the spin.
                let precise = self.paced && due == Some(wake);
                let spinning = precise && wake - now <= self.spin;
                if precise && !spinning {
                    self.timer.arm(wake.checked_sub(self.spin).unwrap_or(wake));
                }
                if spinning {
                    // A spinning thread does not sleep: what the sockets
                    // queued for the thread's sleep (io_uring) goes now.
                    if let Some(park) = self.park {
                        park();
                    }
                }
                tokio::select! {
                    biased;
                    ev = self.driver.recv(), if self.slots.busy() > 0 || self.listening.listen => {
                        let now = Instant::now();
                        self.complete(ev, now);
                        self.since_yield += 1;
                        // Answers that came in with this one (one read, many
                        // pipelined replies) complete at the same instant:
                        // one clock read per read, not per reply.
                        while (self.slots.busy() > 0 || self.listening.listen) && self.link.connected {
                            let Some(ev) = self.driver.try_recv() else { break };
                            self.complete(ev, now);
                            self.since_yield += 1;
                        }
                        fresh = Some(now);
                        if self.since_yield >= YIELD_EVERY {
                            self.since_yield = 0;
                            fresh = None;
                            tokio::task::yield_now().await;
                        }
                    }
                    () = self.timer.fired(), if precise && !spinning => {}
                    () = tokio::task::yield_now(), if spinning => {}
                    () = coarse(sleep.as_mut(), &mut registered) => {}
                }
            }
            self.hand_spans();
            self.fold(true);
        }
    }

    /// Put the spans of indices this worker issued into its thread's
    /// recorder: the warm-up's and the measured source's, each less what
    /// was taken and let go. A source still waiting for the warm-up to
    /// end issued nothing.
    fn hand_spans(&mut self) {
        let current = self.source.taken(self.issued.phase);
        let (warm, measured) = if current.first >= WARMUP_INDEX_BASE {
            // Stopped (or given up) during the warm-up.
            (Some(current), None)
        } else {
            (self.issued.warm, Some(current))
        };
        let mut rec = self.rec.borrow_mut();
        for (which, span) in [(WARMUP, warm), (MEASURED, measured)] {
            let Some(mut span) = span else { continue };
            span.count = span.count.saturating_sub(self.issued.unissued[which]);
            if span.count > 0 {
                rec.snaps[which].spans.push(span);
            }
        }
    }

    fn outstanding(&self) -> usize {
        self.slots.busy() + self.admit.queue.len() + usize::from(self.admit.held.is_some())
    }

    fn finished(&mut self, now: Instant) -> bool {
        let settled = self.phase == MEASURED && self.source.is_done() && self.outstanding() == 0;
        if !settled {
            return false;
        }
        if !self.ending.quiet {
            self.ending.quiet = true;
            self.driver.issued_all();
            if !self.listening.listener {
                self.ending.talking.fetch_sub(1, Ordering::AcqRel);
            }
        }
        if !self.listening.listen || self.ending.stop.load(Ordering::Relaxed) {
            return true;
        }
        // Listening: go on until every issuing worker is done and nothing
        // has arrived for the drain period, or the driver has received all
        // it can expect. Deliveries still arriving are a backlog being
        // read (10,000 subscribers of one process took a second more than
        // a drain of two to read theirs), not a broker that lost them; the
        // cap bounds a stream that never stops.
        let e = &mut self.ending;
        if e.drain_from.is_none() && e.talking.load(Ordering::Acquire) == 0 {
            e.drain_from = Some(now);
        }
        e.drain_until()
            .is_some_and(|t| now >= t || self.driver.caught_up())
    }

    /// Start what may start now; return when the source next has something.
    fn admit(&mut self, now: Instant) -> Option<Instant> {
        let mut budget = ADMIT_BUDGET;
        loop {
            if self.slots.has_free() {
                if let Some((tok, phase)) = self
                    .admit
                    .held
                    .take()
                    .or_else(|| self.admit.queue.pop_front())
                {
                    self.start_op(tok, phase, now);
                    continue;
                }
            } else if self.admit.held.is_some() {
                return None;
            }
            if budget == 0 {
                return Some(now);
            }
            budget -= 1;
            match self.source.next(now, self.outstanding()) {
                Next::Token(tok) => self.offer(tok, now),
                Next::Dropped {
                    first,
                    stride,
                    count,
                } => self.pass_over(first, stride, count),
                Next::At(t) => return Some(t),
                Next::Completion => return None,
                Next::Done => match self.main.take() {
                    Some(main) if !self.ending.stopping => {
                        let mut rec = self.rec.borrow_mut();
                        self.driver.take_counts(&mut rec.snaps[WARMUP].domains);
                        drop(rec);
                        self.issued.warm = Some(self.source.taken(self.issued.phase));
                        self.source = *main;
                        self.phase = MEASURED;
                    }
                    _ => {
                        self.phase = MEASURED;
                        return None;
                    }
                },
            }
        }
    }

    /// A token from the source: start it, queue it, hold it, or count why
    /// not. Lateness is judged when it starts (see `start_op`).
    fn offer(&mut self, tok: Token, now: Instant) {
        let phase = self.phase;
        if self.slots.has_free() {
            self.start_op(tok, phase, now);
        } else if !self.admit.managed {
            self.admit.held = Some((tok, phase));
        } else if self.admit.queue.len() < self.admit.queue_cap {
            self.admit.queue.push_back((tok, phase));
        } else {
            let kind = self.driver.kind_of(tok.index);
            self.rec.borrow_mut().snaps[phase].failed(
                kind,
                OpError::new(ErrorKind::QueueFull),
                None,
            );
        }
    }

    /// Count `count` operations the schedule passed over as dropped, each
    /// under its kind. `kind_of` is pure and cheap, so the tally is a loop
    /// of additions with one recording per kind.
    fn pass_over(&mut self, first: u64, stride: u64, count: u64) {
        let tally = &mut self.tally;
        tally.clear();
        for i in 0..count {
            let kind = self
                .driver
                .kind_of(first.wrapping_add(i.wrapping_mul(stride)));
            if tally.len() <= kind {
                tally.resize(kind + 1, 0);
            }
            tally[kind] += 1;
        }
        let mut rec = self.rec.borrow_mut();
        for (kind, n) in tally.iter().enumerate().filter(|(_, n)| **n > 0) {
            rec.snaps[self.phase].dropped(kind, *n);
        }
    }

    fn start_op(&mut self, tok: Token, phase: usize, now: Instant) {
        let Some(tag) = self.slots.take(now) else {
            return;
        };
        if now.saturating_duration_since(tok.intended) > self.clock.max_lag {
            self.slots.untake(tag);
            let kind = self.driver.kind_of(tok.index);
            self.rec.borrow_mut().snaps[phase].failed(kind, OpError::new(ErrorKind::Dropped), None);
            return;
        }
        let kind = self.driver.send_at(tok.index, tag, tok.intended);
        if self.paced {
            // The closed loop sends when due: its lag is 0 by
            // construction and is not recorded (no per-op cost there).
            self.rec.borrow_mut().snaps[phase]
                .lagged(kind, now.saturating_duration_since(tok.intended));
        }
        self.slots.fill(tag, tok.intended, now, kind, phase);
    }

    fn complete(&mut self, ev: Event, now: Instant) {
        self.ending.last_event = Some(now);
        // What arrived keeps a drain going; a connection that broke does
        // not (it would otherwise break, reconnect and break again until
        // the drain's cap: 5 minutes of 30 s drains in a 100,000-client run).
        if !matches!(ev, Event::Broken(_)) {
            self.ending.last_arrival = Some(now);
        }
        match ev {
            Event::Delivered {
                kind,
                latency,
                domain,
            } => self.rec.borrow_mut().snaps[self.phase].delivery(kind, latency, domain),
            Event::Done { tag, result } => {
                let Some(s) = self.slots.release(tag) else {
                    // A driver answered a tag it was not given: count it
                    // as a protocol error rather than trust it.
                    self.rec.borrow_mut().snaps[self.phase].failed(
                        0,
                        OpError::new(ErrorKind::Protocol),
                        None,
                    );
                    return;
                };
                let mut rec = self.rec.borrow_mut();
                let snap = &mut rec.snaps[s.phase];
                match result {
                    // The closed loop sends when due: one duration, one record.
                    Ok(domain) if s.intended == s.sent => {
                        snap.ok_same(s.kind, now - s.sent, domain)
                    }
                    Ok(domain) => snap.ok(s.kind, now - s.intended, now - s.sent, domain),
                    Err(e) => snap.failed(s.kind, e, Some((now - s.intended, now - s.sent))),
                }
            }
            Event::Broken(e) => self.fail_in_flight(e, now),
        }
    }

    /// The connection is gone: everything in flight on it failed.
    fn fail_in_flight(&mut self, e: OpError, now: Instant) {
        let mut rec = self.rec.borrow_mut();
        self.slots.release_all(|slot| {
            let timing = (now - slot.intended, now - slot.sent);
            rec.snaps[slot.phase].failed(slot.kind, e, Some(timing));
        });
        self.link.connected = false;
        self.link.down_since.get_or_insert(now);
    }

    async fn reconnect(&mut self) {
        let now = Instant::now();
        let down_for = now.saturating_duration_since(self.link.down_since.unwrap_or(now));
        if self.ending.stopping || down_for > self.clock.timeout {
            if !self.ending.stopping {
                // Lost before the run's end: the run did not run as asked.
                self.rec.borrow_mut().snaps[self.phase].gave_up += 1;
            }
            self.give_up();
            return;
        }
        match tokio::time::timeout(self.clock.timeout, self.driver.reconnect()).await {
            Ok(Ok(())) => {
                self.link.connected = true;
                self.link.down_since = None;
                self.link.backoff = Duration::from_millis(50);
                self.rec.borrow_mut().snaps[self.phase].reconnects += 1;
            }
            _ => {
                self.rec.borrow_mut().snaps[self.phase].connect_failures += 1;
                tokio::time::sleep(self.link.backoff).await;
                self.link.backoff = (self.link.backoff * 2).min(Duration::from_secs(1));
                let now = Instant::now();
                if now >= self.clock.next_check {
                    self.housekeeping(now);
                }
            }
        }
    }

    /// The target stayed unreachable: what this worker was still to issue
    /// fails as connect errors, so the counts still add up to `-n` (a run
    /// by duration owes no such account).
    fn give_up(&mut self) {
        let conn = OpError::new(ErrorKind::Connect);
        let waiting: Vec<(Token, usize)> = self
            .admit
            .held
            .take()
            .into_iter()
            .chain(self.admit.queue.drain(..))
            .collect();
        let mut rec = self.rec.borrow_mut();
        for (tok, phase) in waiting {
            let kind = self.driver.kind_of(tok.index);
            rec.snaps[phase].failed(kind, conn, None);
        }
        if self.ending.counted && !self.ending.stopping {
            let left = self.main.as_deref().unwrap_or(&self.source).remaining();
            if let Some(k) = rec.snaps[MEASURED].kinds.first_mut() {
                k.errors.by_kind[ErrorKind::Connect.index()] += left;
            }
        }
        drop(rec);
        self.source.stop();
        self.main = None;
        self.phase = MEASURED;
        self.ending.stopping = true;
        self.link.connected = true; // nothing is in flight; let the loop finish
    }

    fn housekeeping(&mut self, now: Instant) {
        if !self.ending.stopping && self.ending.stop.load(Ordering::Relaxed) {
            // Ctrl-C: start nothing more; what is in flight may finish
            // within the grace.
            self.ending.stopping = true;
            self.ending.stopped_at = Some(now);
            self.source.stop();
            self.main = None;
            for (_, phase) in self
                .admit
                .held
                .take()
                .into_iter()
                .chain(self.admit.queue.drain(..))
            {
                self.issued.unissued[phase] += 1;
            }
        }
        let mut oldest = None;
        if let Some(first) = self.slots.oldest_sent() {
            let graced = self
                .ending
                .stopped_at
                .is_some_and(|t| now.saturating_duration_since(t) >= STOP_GRACE);
            if graced || now.saturating_duration_since(first) >= self.clock.timeout {
                self.fail_in_flight(OpError::new(ErrorKind::Timeout), now);
            } else {
                oldest = Some(first);
            }
        }
        if now >= self.clock.next_lap {
            self.fold(false);
            while self.clock.next_lap <= now {
                self.clock.next_lap += self.clock.interval;
            }
            let boundary = self.clock.next_lap - self.clock.interval;
            self.rec.borrow_mut().lap_passed(boundary);
        }
        // The next look: the oldest operation's timeout, the lap, or the
        // stop flag's turn, whichever is first. An operation started after
        // this look falls due no sooner than `timeout` from now.
        let mut next = (now + CHECK_EVERY.min(self.clock.timeout)).min(self.clock.next_lap);
        if let Some(first) = oldest {
            next = next.min(first + self.clock.timeout);
            if let Some(t) = self.ending.stopped_at {
                next = next.min(t + STOP_GRACE);
            }
        }
        self.clock.next_check = next;
    }

    /// At a lap boundary and at the end: fold what the driver tallied
    /// (bytes, domain counts) and what is outstanding into the thread's
    /// recorder, which hands the thread's lap over as a whole.
    fn fold(&mut self, last: bool) {
        let (sent, received) = self.driver.take_bytes();
        let outstanding = self.outstanding() as u64;
        let mut rec = self.rec.borrow_mut();
        let snap = &mut rec.snaps[self.phase];
        snap.bytes_sent += sent;
        snap.bytes_received += received;
        self.driver.take_counts(&mut snap.domains);
        // A worker that gave up is let run out as if connected; its
        // `down_since` still says the link is down.
        rec.set_up(
            self.local,
            self.link.connected && self.link.down_since.is_none(),
        );
        if last {
            rec.finished(self.local, self.ending.last_event);
        } else {
            rec.saw(self.ending.last_event);
            rec.set_pending(self.local, outstanding);
        }
    }
}

#[cfg(test)]
mod tests {
    use loadrig_spec::{LoadSpec, Pacing, Shard};

    use super::*;

    /// A driver that never answers: only the size of the task matters.
    struct Silent;

    impl Driver for Silent {
        fn kind_of(&self, _: u64) -> usize {
            0
        }

        fn send(&mut self, _: u64, _: crate::Tag) -> usize {
            0
        }

        fn recv(&mut self) -> impl Future<Output = Event> + Send {
            std::future::pending()
        }

        async fn reconnect(&mut self) -> Result<(), OpError> {
            Ok(())
        }
    }

    #[test]
    fn a_connection_task_holds_its_worker_once() {
        let cfg = EngineConfig {
            load: LoadSpec {
                clients: 1,
                connections: 1,
                pipeline: 1,
                pacing: Pacing::Steady,
                dispatch: Dispatch::Direct,
                stop: Stop::Count(1),
                max_lag_secs: 60.0,
                shard: Shard::WHOLE,
                stages: None,
            },
            seed: 1,
            warmup: Duration::ZERO,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            kinds: 1,
            domains: 0,
            listeners: 0,
            drain: Duration::ZERO,
            spin: Duration::ZERO,
            phase: 0,
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let rec = crate::record::Recorder::shared(0, 1, (1, 0), tx);
        let ends = Ends {
            stop: Arc::default(),
            talking: Arc::default(),
            listener: false,
            park: None,
        };
        let worker = Worker::new(&cfg, 0, Silent, Instant::now(), ends, rec, 0);
        let size = std::mem::size_of_val(&worker);
        let task = worker.run();
        // An `async fn run(mut self)` holds its argument and a moved copy:
        // twice the worker, and a connection's task 1 KB larger for Redis.
        let own = std::mem::size_of_val(&task) - size;
        assert!(
            own < size,
            "the task holds {own} bytes besides its {size}-byte worker"
        );
    }
}
