//! Connections served before the load: while a run waits for its common
//! start (`--start-at`), every connection keeps answering its server
//! ([`Driver::idle`]: a NATS `PONG` for each `PING`), and a connection the
//! server closes meanwhile (nginx's keep-alive timeout, an idle-client
//! limit) is opened again before the load, not found broken by its first
//! operation. docs/explanations/measurement.md section 6.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::{Driver, Threads};

/// A connection re-opened during the wait is not re-opened again sooner
/// than this: a server that accepts and closes at once is not hammered.
const REOPEN_PAUSE: Duration = Duration::from_secs(1);

/// What happened to the connections while they waited.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Waited {
    /// Connections closed (or put out of step) by their server and opened
    /// again.
    pub reopened: u64,
    /// Re-openings that failed: those connections start the load broken,
    /// and the load's reconnects take over (counted there).
    pub failed: u64,
}

/// Serve `drivers` until `until` ends, then return what it gave. Driver
/// `k` is served as if on thread `k mod N` (it was opened there, through
/// [`Threads::homed`]), so what it re-opens stays that thread's.
pub async fn serve_until<D: Driver, T>(
    threads: &Threads,
    drivers: &mut [D],
    until: impl Future<Output = T>,
) -> (T, Waited) {
    let reopened = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let mut serving: FuturesUnordered<_> = drivers
        .iter_mut()
        .enumerate()
        .map(|(k, d)| threads.homed(k, serve(d, &reopened, &failed)))
        .collect();
    let mut until = pin!(until);
    // Every connection served to its end (most drivers have nothing to
    // serve): then only the wait is left.
    let all_served = async { while serving.next().await.is_some() {} };
    let out = match select(until.as_mut(), pin!(all_served)).await {
        Either::Left((out, _)) => out,
        Either::Right(((), _)) => until.await,
    };
    drop(serving);
    let waited = Waited {
        reopened: reopened.load(Ordering::Relaxed),
        failed: failed.load(Ordering::Relaxed),
    };
    (out, waited)
}

/// Serve one connection until it has nothing more to serve or cannot be
/// re-opened; dropped when the load begins (`idle` is cancel safe).
async fn serve<D: Driver>(d: &mut D, reopened: &AtomicU64, failed: &AtomicU64) {
    let mut last = None;
    while d.idle().await.is_err() {
        if let Some(at) = last {
            tokio::time::sleep_until(at + REOPEN_PAUSE).await;
        }
        if d.reconnect().await.is_err() {
            failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        reopened.fetch_add(1, Ordering::Relaxed);
        last = Some(tokio::time::Instant::now());
    }
}
