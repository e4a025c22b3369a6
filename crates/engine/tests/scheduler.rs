//! The scheduler under tokio's paused clock: time only moves when every
//! task waits, so these timings are exact, not flaky.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loadrig_engine::{run, Driver, EngineConfig, Event, Outcome, Tag};
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::{Arrival, Dispatch, LoadSpec, Pacing, Shard, Stop};
use tokio::time::Instant;

/// What the test server saw: (index, sent at, in flight after the send).
type Log = Arc<Mutex<Vec<(u64, Instant, usize)>>>;

/// A single-queue server: each request takes `service`, one after the
/// other per connection; nothing completes inside the stall window.
struct SingleQueue {
    service: Duration,
    stall: Option<(Instant, Instant)>,
    queue: VecDeque<(Tag, Instant)>,
    busy_until: Option<Instant>,
    log: Log,
}

impl SingleQueue {
    fn new(service: Duration, stall: Option<(Instant, Instant)>, log: Log) -> Self {
        SingleQueue {
            service,
            stall,
            queue: VecDeque::new(),
            busy_until: None,
            log,
        }
    }
}

impl Driver for SingleQueue {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let now = Instant::now();
        let begin = self.busy_until.map_or(now, |b| b.max(now));
        let mut done = begin + self.service;
        if let Some((s0, s1)) = self.stall {
            if done >= s0 && begin < s1 {
                done = done.max(s1);
            }
        }
        self.busy_until = Some(done);
        self.queue.push_back((tag, done));
        self.log
            .lock()
            .unwrap()
            .push((index, now, self.queue.len()));
        0
    }

    async fn recv(&mut self) -> Event {
        let Some(&(tag, due)) = self.queue.front() else {
            return Event::Broken(OpError::new(ErrorKind::Protocol));
        };
        tokio::time::sleep_until(due).await;
        self.queue.pop_front();
        Event::Done {
            tag,
            result: Ok(None),
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        Ok(())
    }
}

fn config(load: LoadSpec) -> EngineConfig {
    EngineConfig {
        spin: Duration::ZERO,
        phase: 0,
        load,
        seed: 1,
        warmup: Duration::ZERO,
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(10),
        kinds: 1,
        domains: 0,
        listeners: 0,
        drain: Duration::ZERO,
    }
}

fn load(pacing: Pacing, connections: u32, stop: Stop) -> LoadSpec {
    LoadSpec {
        clients: connections,
        connections,
        pipeline: 1,
        pacing,
        dispatch: Dispatch::Direct,
        stop,
        max_lag_secs: 60.0,
        shard: Shard::WHOLE,
        stages: None,
    }
}

async fn drive(
    cfg: EngineConfig,
    service: Duration,
    stall: Option<(Duration, Duration)>,
) -> (Outcome, Log) {
    let log: Log = Arc::default();
    let start = Instant::now() + Duration::from_millis(10);
    let stall = stall.map(|(a, b)| (start + a, start + b));
    let drivers = (0..cfg.load.connections)
        .map(|_| SingleQueue::new(service, stall, log.clone()))
        .collect();
    let out = run(
        &cfg,
        drivers,
        start,
        Arc::new(AtomicBool::new(false)),
        |_| {},
    )
    .await;
    (out, log)
}

#[tokio::test(start_paused = true)]
async fn closed_loop_issues_every_index_once() {
    let cfg = config(load(Pacing::Steady, 3, Stop::Count(1_000)));
    let (out, log) = drive(cfg, Duration::from_micros(100), None).await;
    assert_eq!(out.measured.ops(), 1_000);
    let mut seen: Vec<u64> = log.lock().unwrap().iter().map(|e| e.0).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..1_000).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn open_loop_issues_the_scheduled_count_at_the_scheduled_times() {
    let rate = Pacing::Rate {
        rate: 1_000.0,
        arrival: Arrival::Regular,
    };
    let cfg = config(load(rate, 4, Stop::Seconds(2.0)));
    let t0 = Instant::now() + Duration::from_millis(10);
    let (out, log) = drive(cfg, Duration::from_micros(200), None).await;
    assert_eq!(out.measured.ops(), 2_000);
    for &(index, sent, _) in log.lock().unwrap().iter() {
        // Op i is due at i/rate; the timer may wake up to 1 ms late.
        let due = t0 + Duration::from_micros(index * 1_000);
        let late = sent.saturating_duration_since(due);
        assert!(
            sent >= due && late <= Duration::from_millis(1),
            "op {index} sent {late:?} late"
        );
    }
    let lat = &out.measured.kinds[0].latency;
    assert!(lat.max() <= Duration::from_micros(1_200), "{:?}", lat.max());
}

#[tokio::test(start_paused = true)]
async fn a_ramp_issues_each_operation_when_the_count_reaches_its_index() {
    // 1,000/s to 5,000/s over 4 s: 12,000 operations, op i due at the t
    // where 1000 t + 500 t^2 = i.
    let rate = Pacing::Rate {
        rate: 3_000.0,
        arrival: Arrival::Regular,
    };
    // 16 connections: each a few ms between sends, past the mock's 1 ms ticks.
    let mut l = load(rate, 16, Stop::Seconds(4.0));
    l.stages = Some(loadrig_spec::Stages::parse("4s:5000", 1_000.0).unwrap());
    let t0 = Instant::now() + Duration::from_millis(10);
    let (out, log) = drive(config(l), Duration::from_micros(100), None).await;
    assert_eq!(out.measured.ops(), 12_000);
    let mut per_second = [0u32; 4];
    for &(index, sent, _) in log.lock().unwrap().iter() {
        let i = index as f64;
        let t = (-1_000.0 + (1e6 + 2_000.0 * i).sqrt()) / 1_000.0;
        let due = t0 + Duration::from_secs_f64(t);
        let late = sent.saturating_duration_since(due);
        assert!(
            // The timer wheel ticks in milliseconds; due times fall between.
            sent + Duration::from_micros(1) >= due && late <= Duration::from_micros(1_500),
            "op {index} sent {late:?} late"
        );
        per_second[t as usize] += 1;
    }
    assert_eq!(per_second, [1_500, 2_500, 3_500, 4_500]);
}

#[tokio::test(start_paused = true)]
async fn a_stall_shows_in_latency_not_in_service_time() {
    // The timer wheel ticks in milliseconds, so the server takes 1 ms and
    // the rate leaves it room to catch up after the stall.
    let rate = Pacing::Rate {
        rate: 500.0,
        arrival: Arrival::Regular,
    };
    let cfg = config(load(rate, 1, Stop::Seconds(4.0)));
    let stall = (Duration::from_millis(1_000), Duration::from_millis(1_200));
    let (out, _) = drive(cfg, Duration::from_millis(1), Some(stall)).await;
    let k = &out.measured.kinds[0];
    assert_eq!(k.count(), 2_000);
    const MS: u64 = 1_000_000;
    // The operations scheduled in the stall waited for it: up to 200 ms late.
    assert!(
        k.latency.max() >= Duration::from_millis(199),
        "{:?}",
        k.latency.max()
    );
    let late = k.latency.inner().count_between(50 * MS, u64::MAX);
    assert!(late >= 75, "only {late} operations were late");
    // Only the one in flight when it began served the stall.
    assert_eq!(k.service.inner().count_between(5 * MS, u64::MAX), 1);
    assert!(k.service.percentile(99.0) <= Duration::from_millis(2));
}

#[tokio::test(start_paused = true)]
async fn send_lag_is_recorded_in_the_open_loop_only() {
    let rate = Pacing::Rate {
        rate: 500.0,
        arrival: Arrival::Regular,
    };
    // One connection, 1 ms per request, a 200 ms stall: operations due in
    // the stall wait for the connection, and that wait is their send lag.
    let cfg = config(load(rate, 1, Stop::Seconds(2.0)));
    let stall = (Duration::from_millis(500), Duration::from_millis(700));
    let (out, _) = drive(cfg, Duration::from_millis(1), Some(stall)).await;
    let k = &out.measured.kinds[0];
    assert_eq!(
        k.send_lag.len(),
        k.count(),
        "one send lag per operation sent"
    );
    // A free connection sends on time (the paused clock is exact: a
    // lag of 0, read back as the top of the histogram's lowest bucket).
    assert!(k.send_lag.percentile(50.0) < Duration::from_micros(1));
    // Held behind the stall: late by up to its length, and latency is
    // that lag plus the service time.
    assert!(
        k.send_lag.max() >= Duration::from_millis(195),
        "{:?}",
        k.send_lag.max()
    );
    assert!(k.latency.max() >= k.send_lag.max());

    // The closed loop sends when due: nothing recorded.
    let cfg = config(load(Pacing::Steady, 2, Stop::Count(500)));
    let (out, _) = drive(cfg, Duration::from_micros(100), None).await;
    assert!(out.measured.kinds[0].send_lag.is_empty());
}

#[tokio::test(start_paused = true)]
async fn bursts_never_exceed_the_limit() {
    let (size, limit) = (10u32, 5usize);
    let burst = Pacing::Burst {
        size,
        delay_ms: 1.0,
        limit: limit as u32,
    };
    let mut l = load(burst, 1, Stop::Count(1_000));
    l.pipeline = 64; // the connection could take far more than the limit
    let (out, log) = drive(config(l), Duration::from_micros(300), None).await;
    assert_eq!(out.measured.ops(), 1_000);
    for &(index, _, in_flight) in log.lock().unwrap().iter() {
        assert!(
            in_flight <= limit + size as usize,
            "op {index}: {in_flight} in flight"
        );
        if index % u64::from(size) == 0 {
            // A burst starts only when at most `limit` are pending.
            assert!(
                in_flight <= limit + 1,
                "burst at op {index} began over the limit: {in_flight}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_managed_queue_counts_queue_full() {
    let rate = Pacing::Rate {
        rate: 10_000.0,
        arrival: Arrival::Poisson,
    };
    let mut l = load(rate, 1, Stop::Count(2_000));
    l.dispatch = Dispatch::Managed { queue: 4, slots: 1 };
    // The server does 1,000/s; 10,000/s are offered.
    let (out, _) = drive(config(l), Duration::from_millis(1), None).await;
    let k = &out.measured.kinds[0];
    let full = k.errors.get(ErrorKind::QueueFull);
    assert_eq!(
        k.count(),
        2_000,
        "every scheduled operation is accounted for"
    );
    assert!(full > 1_000, "queue_full {full}");
    assert_eq!(k.ok + full, 2_000);
}

#[tokio::test(start_paused = true)]
async fn late_operations_beyond_the_bound_are_dropped_and_counted() {
    let rate = Pacing::Rate {
        rate: 500.0,
        arrival: Arrival::Regular,
    };
    let mut l = load(rate, 1, Stop::Seconds(2.0));
    l.max_lag_secs = 0.05;
    let stall = (Duration::from_millis(200), Duration::from_millis(500));
    let (out, _) = drive(config(l), Duration::from_millis(1), Some(stall)).await;
    let k = &out.measured.kinds[0];
    assert_eq!(k.count(), 1_000);
    // Scheduled 200..450 ms: more than 50 ms late when the stall ends.
    let dropped = k.errors.get(ErrorKind::Dropped);
    assert!((110..=140).contains(&dropped), "dropped {dropped}");
    // Everything that started did so within the bound; the one operation
    // in flight through the stall is the only slow one.
    let slow = k.latency.inner().count_between(60_000_000, u64::MAX);
    assert_eq!(slow, 1);
}

/// A server that answers until `dies_after` calls, then refuses every
/// reconnect: the run still ends, and `-n` is accounted for.
struct Dying {
    inner: SingleQueue,
    calls: u32,
    dies_after: u32,
}

impl Driver for Dying {
    fn kind_of(&self, index: u64) -> usize {
        self.inner.kind_of(index)
    }

    fn send(&mut self, index: u64, tag: Tag) -> usize {
        self.calls += 1;
        self.inner.send(index, tag)
    }

    async fn recv(&mut self) -> Event {
        if self.calls > self.dies_after {
            self.inner.queue.clear();
            return Event::Broken(OpError::new(ErrorKind::Io));
        }
        self.inner.recv().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(OpError::new(ErrorKind::Connect))
    }
}

#[tokio::test(start_paused = true)]
async fn a_dying_server_gives_counted_errors_and_the_run_ends() {
    for stop in [Stop::Count(1_000), Stop::Seconds(30.0)] {
        let mut cfg = config(load(Pacing::Steady, 2, stop));
        cfg.timeout = Duration::from_secs(2);
        let log: Log = Arc::default();
        let start = Instant::now();
        let drivers = (0..2)
            .map(|_| Dying {
                inner: SingleQueue::new(Duration::from_millis(1), None, log.clone()),
                calls: 0,
                dies_after: 100,
            })
            .collect();
        let out = run(
            &cfg,
            drivers,
            start,
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )
        .await;
        let k = &out.measured.kinds[0];
        assert_eq!(k.ok, 200, "{stop:?}");
        assert_eq!(
            k.errors.get(ErrorKind::Io),
            2,
            "{stop:?}: the call in flight on each connection"
        );
        assert!(out.measured.connect_failures > 0);
        if let Stop::Count(n) = stop {
            assert_eq!(k.count(), n, "every operation accounted for");
        } else {
            assert!(k.count() < 1_000, "{stop:?}: {}", k.count());
        }
        // Gave up after the timeout, well before the 30 s.
        assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    }
}

/// A broker in a channel: a publisher's sends arrive at the listener
/// `delay` after their intended start.
enum Bus {
    Publisher {
        to: tokio::sync::mpsc::UnboundedSender<Instant>,
        sent: VecDeque<Tag>,
        delay: Duration,
    },
    Listener {
        from: tokio::sync::mpsc::UnboundedReceiver<Instant>,
        /// A message taken from the channel, waiting for its arrival.
        due: Option<(Instant, Instant)>,
        /// Once the publisher is gone, the connection breaks every
        /// millisecond (and reconnects at once).
        breaks: bool,
    },
}

impl Driver for Bus {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    /// The engine must call `send_at`: a message sent without its
    /// intended start is lost here, and the tests count it.
    fn send(&mut self, _index: u64, tag: Tag) -> usize {
        if let Bus::Publisher { sent, .. } = self {
            sent.push_back(tag);
        }
        0
    }

    fn send_at(&mut self, _index: u64, tag: Tag, intended: Instant) -> usize {
        if let Bus::Publisher { to, sent, delay } = self {
            let _ = to.send(intended + *delay);
            sent.push_back(tag);
        }
        0
    }

    async fn recv(&mut self) -> Event {
        match self {
            Bus::Publisher { sent, .. } => match sent.pop_front() {
                Some(tag) => Event::Done {
                    tag,
                    result: Ok(None),
                },
                None => std::future::pending().await,
            },
            Bus::Listener { from, due, breaks } => loop {
                if let Some((arrive, sent)) = *due {
                    tokio::time::sleep_until(arrive).await;
                    *due = None;
                    return Event::Delivered {
                        kind: 1,
                        latency: arrive - sent,
                        domain: None,
                    };
                }
                match from.recv().await {
                    Some(at) => *due = Some((at, at - Duration::from_millis(50))),
                    None if *breaks => {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        return Event::Broken(OpError::new(ErrorKind::Io));
                    }
                    None => std::future::pending().await,
                }
            },
        }
    }

    fn listens(&self) -> bool {
        matches!(self, Bus::Listener { .. })
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        Ok(())
    }
}

/// 100 messages at 1,000/s, each arriving 50 ms after its intended
/// start, to one listener that drains for `drain`.
async fn bus(drain: Duration) -> Outcome {
    bus_breaking(drain, false).await
}

async fn bus_breaking(drain: Duration, breaks: bool) -> Outcome {
    let mut cfg = config(load(
        Pacing::Rate {
            rate: 1000.0,
            arrival: Arrival::Regular,
        },
        1,
        Stop::Count(100),
    ));
    cfg.kinds = 2;
    cfg.listeners = 1;
    cfg.drain = drain;
    let (to, from) = tokio::sync::mpsc::unbounded_channel();
    let drivers = vec![
        Bus::Publisher {
            to,
            sent: VecDeque::new(),
            delay: Duration::from_millis(50),
        },
        Bus::Listener {
            from,
            due: None,
            breaks,
        },
    ];
    let start = Instant::now() + Duration::from_millis(10);
    run(
        &cfg,
        drivers,
        start,
        Arc::new(AtomicBool::new(false)),
        |_| {},
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn listeners_receive_until_the_drain_ends() {
    let out = bus(Duration::from_millis(200)).await;
    assert_eq!(out.measured.kinds[0].ok, 100);
    assert_eq!(out.measured.kinds[1].ok, 100, "every message delivered");
    // The run ends at the last delivery (99 ms + 50 ms), not the drain's end.
    let ms = out.elapsed.as_secs_f64() * 1e3;
    assert!((149.0..=151.0).contains(&ms), "elapsed {ms} ms");
}

#[tokio::test(start_paused = true)]
async fn a_drain_goes_on_while_deliveries_arrive() {
    let out = bus(Duration::from_millis(20)).await;
    assert_eq!(out.measured.kinds[0].ok, 100);
    // Sends at 0..99 ms, each arriving 50 ms later: after the last send
    // they go on arriving a millisecond apart until 149 ms, each within
    // the 20 ms drain of the one before, so the drain goes on and every
    // one is taken (a drain counted from the last send alone took those
    // sent at 0..=70 ms: 71).
    let got = out.measured.kinds[1].ok;
    assert_eq!(got, 100, "delivered {got}");
}

#[tokio::test(start_paused = true)]
async fn a_drain_ends_when_nothing_arrives_for_as_long() {
    let out = bus(Duration::from_micros(500)).await;
    assert_eq!(out.measured.kinds[0].ok, 100);
    // Arrivals a millisecond apart, a drain of half of one: the listener
    // learns the publisher is done at the arrival due at 100 ms (sent at
    // 50 ms) and stops before the next, give or take the timer's
    // millisecond: what was still in flight is missed.
    let got = out.measured.kinds[1].ok;
    assert!((51..60).contains(&got), "delivered {got}");
}

/// A connection that breaks and reconnects is not a delivery: the drain
/// ends a drain after the last message arrived, not at its cap (a
/// 100,000-client run's listeners broke and reconnected through five
/// minutes of 30 s drains).
#[tokio::test(start_paused = true)]
async fn a_breaking_connection_does_not_keep_a_drain_going() {
    let out = bus_breaking(Duration::from_millis(20), true).await;
    assert_eq!(out.measured.kinds[1].ok, 100, "every message delivered");
    // The last arrival at 149 ms, the drain 20 ms after it; the cap
    // (ten drains after the publisher was done at 99 ms) is at 299 ms.
    let ms = out.elapsed.as_secs_f64() * 1e3;
    assert!(ms < 200.0, "elapsed {ms} ms");
}

/// Several engine threads (real clock: each thread has its own runtime):
/// workers dealt round robin still issue every index once, and the
/// threads' recorders add up to every operation, with one lap hand-over
/// per thread rather than per connection.
#[test]
fn threads_share_the_indices_and_their_recorders_add_up() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let threads = loadrig_engine::Threads::new(3, None).unwrap();
        let mut cfg = config(load(Pacing::Steady, 7, Stop::Count(700)));
        cfg.interval = Duration::from_millis(50);
        let log: Log = Arc::default();
        let start = Instant::now() + Duration::from_millis(10);
        let mut drivers = Vec::new();
        for k in 0..7 {
            let d = SingleQueue::new(Duration::from_micros(50), None, log.clone());
            drivers.push(threads.homed(k, async { d }).await);
        }
        let out = loadrig_engine::run_on(
            &cfg,
            &threads,
            drivers,
            start,
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )
        .await;
        assert!(!out.interrupted);
        assert_eq!(out.measured.ops(), 700);
        assert_eq!(out.measured.kinds[0].latency.len(), 700);
        let mut seen: Vec<u64> = log.lock().unwrap().iter().map(|e| e.0).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..700).collect::<Vec<_>>());
        let laps: u64 = out.laps.iter().map(|l| l.ok).sum();
        assert_eq!(laps, 700);
    });
}

/// A connection its server closes `closes` times while the run waits:
/// each close is an `idle` that fails, the first at 10 ms, the next as
/// soon as it is served again; after that it is quiet.
struct Closing {
    closes: u32,
    reopened_at: Vec<Instant>,
}

impl Driver for Closing {
    fn kind_of(&self, _index: u64) -> usize {
        0
    }

    fn send(&mut self, _index: u64, _tag: Tag) -> usize {
        0
    }

    async fn recv(&mut self) -> Event {
        Event::Broken(OpError::new(ErrorKind::Protocol))
    }

    async fn idle(&mut self) -> Result<(), OpError> {
        if self.closes == 0 {
            return std::future::pending().await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.closes -= 1;
        Err(OpError::new(ErrorKind::Io))
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.reopened_at.push(Instant::now());
        Ok(())
    }
}

/// The wait serves the connections: a closed one is opened again at once
/// the first time and at most once a second after that, a quiet one is
/// left alone, and the wait's own end is what ends the serving.
#[tokio::test(start_paused = true)]
async fn the_wait_reopens_closed_connections_at_most_once_a_second() {
    let t0 = Instant::now();
    let mut drivers = vec![
        Closing {
            closes: 3,
            reopened_at: Vec::new(),
        },
        Closing {
            closes: 0,
            reopened_at: Vec::new(),
        },
    ];
    let threads = loadrig_engine::Threads::one();
    let wait = tokio::time::sleep(Duration::from_secs(5));
    let ((), waited) = loadrig_engine::serve_until(&threads, &mut drivers, wait).await;
    assert_eq!(Instant::now() - t0, Duration::from_secs(5));
    assert_eq!(
        waited,
        loadrig_engine::Waited {
            reopened: 3,
            failed: 0
        }
    );
    let at: Vec<Duration> = drivers[0].reopened_at.iter().map(|&t| t - t0).collect();
    assert_eq!(
        at,
        [10, 1010, 2010].map(Duration::from_millis),
        "closed at 10, 20 and 1020 ms"
    );
    assert!(drivers[1].reopened_at.is_empty());
}
