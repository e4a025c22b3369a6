//! The engine's runtime threads: thread-per-core, each thread a
//! current-thread tokio runtime with a `LocalSet`, and the workers dealt
//! to them round robin (worker `k` on thread `k mod N`).
//!
//! Thread 0 is the caller's own (the binary's current-thread runtime, which
//! also runs the collector); [`Threads`] starts the other `N - 1`, each
//! waiting for jobs. A worker never moves between threads, so it shares its
//! thread's recorder (`record`) without atomics or locks.
//!
//! A socket belongs to the runtime whose reactor it was registered with
//! when it was made, and a connection is opened before the engine runs.
//! So the session opens connection `k` through [`Threads::homed`]: the
//! connect future is polled with thread `k mod N`'s runtime entered, and
//! what it makes (sockets, timers, a client's background task) belongs to
//! that thread, which then serves it with no hand-off between threads.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::ThreadHooks;

/// A job for a thread: made there, so it may hold what cannot cross threads.
pub(crate) type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// The engine's threads beyond the caller's.
pub struct Threads {
    lanes: Vec<Lane>,
    /// What the sockets need of each thread, run on all of them.
    hooks: Option<ThreadHooks>,
}

struct Lane {
    handle: Handle,
    jobs: mpsc::UnboundedSender<Job>,
}

impl Threads {
    /// The caller's thread alone, with no hooks: no thread is started.
    pub fn one() -> Threads {
        Threads {
            lanes: Vec::new(),
            hooks: None,
        }
    }

    /// `n` threads in all: the caller's and `n - 1` started here, each
    /// with its own current-thread runtime, each running `hooks` (the
    /// caller's runtime takes their park hook itself:
    /// [`ThreadHooks::on_park`]). The threads end when this is dropped and
    /// their jobs are done.
    pub fn new(n: usize, hooks: Option<ThreadHooks>) -> std::io::Result<Threads> {
        let mut lanes = Vec::with_capacity(n.saturating_sub(1));
        for k in 1..n {
            let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name(format!("loadrig-{k}"))
                .spawn(move || {
                    // Built on the thread that drives it, so a failure to
                    // build is reported, not dropped in an async context.
                    let mut builder = tokio::runtime::Builder::new_current_thread();
                    let rt = match ThreadHooks::on_park(hooks, builder.enable_all()).build() {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(rt.handle().clone()));
                    let local = tokio::task::LocalSet::new();
                    // Waiting for jobs parks on this runtime's reactor, so
                    // connections being opened for this thread progress.
                    local.block_on(&rt, async move {
                        while let Some(job) = rx.recv().await {
                            job().await;
                        }
                    });
                })?;
            let handle = ready_rx
                .recv()
                .map_err(|_| std::io::Error::other("an engine thread ended at start"))??;
            lanes.push(Lane { handle, jobs });
        }
        Ok(Threads { lanes, hooks })
    }

    /// The hooks each thread runs.
    pub fn hooks(&self) -> Option<ThreadHooks> {
        self.hooks
    }

    /// How many threads run workers, the caller's included.
    pub fn count(&self) -> usize {
        self.lanes.len() + 1
    }

    /// The thread worker `k` runs on.
    pub fn of(&self, worker: usize) -> usize {
        worker % self.count()
    }

    /// `fut` (opening worker `worker`'s connection), polled so that what it
    /// registers belongs to the runtime of the thread that worker runs on.
    pub fn homed<F: Future>(&self, worker: usize, fut: F) -> Homed<F> {
        let handle = match self.of(worker) {
            0 => None,
            t => self.lanes.get(t - 1).map(|l| l.handle.clone()),
        };
        Homed {
            handle,
            fut: Box::pin(fut),
        }
    }

    /// Run `job` on thread `t` (1..count); `false` when that thread is gone.
    pub(crate) fn send(&self, t: usize, job: Job) -> bool {
        self.lanes
            .get(t.wrapping_sub(1))
            .is_some_and(|l| l.jobs.send(job).is_ok())
    }
}

/// A future polled with another thread's runtime entered (see
/// [`Threads::homed`]). Boxed: it runs once per connection, at set-up.
pub struct Homed<F> {
    handle: Option<Handle>,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for Homed<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _entered = this.handle.as_ref().map(Handle::enter);
        this.fut.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket opened through `homed` is served by its thread: the
    /// connect completes while the caller's runtime only waits.
    #[test]
    fn a_homed_connect_registers_with_its_thread() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async {
            let threads = Threads::new(3, None).expect("threads");
            assert_eq!((threads.count(), threads.of(4)), (3, 1));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let accept = tokio::spawn(async move { listener.accept().await.map(|_| ()) });
            let name = threads
                .homed(1, async {
                    let s = tokio::net::TcpStream::connect(addr).await;
                    (s.is_ok(), std::thread::current().name().map(str::to_owned))
                })
                .await;
            // Polled here, on the caller's thread, registered with thread 1's.
            assert!(name.0);
            assert_eq!(name.1, std::thread::current().name().map(str::to_owned));
            accept.await.expect("join").expect("accept");
        });
    }
}
