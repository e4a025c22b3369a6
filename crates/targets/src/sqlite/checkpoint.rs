//! The checkpointer: copies the WAL back into the database file on a
//! connection and a thread of its own.
//!
//! SQLite's automatic checkpoint runs inside a commit, on the committing
//! connection, once the WAL passes 1,000 pages; there it syncs the WAL and
//! the database file, so the group-commit writer, and every call queued
//! behind it, waits on the disk (p99 in the tens of milliseconds on ext4).
//! The writer turns it off (`wal_autocheckpoint=0`) and this thread runs
//! PASSIVE checkpoints instead, which neither wait for the writer nor make
//! it wait: every [`PERIOD`], or at once while the writer commits
//! [`BACKLOG`] pages or more between two of them. A checkpoint syncs as
//! its connection's `synchronous` says, the writer's setting, so the crash
//! guarantees do not change.
//!
//! A PASSIVE checkpoint copies what was committed when it started, and
//! the WAL starts again from its beginning only when a transaction begins
//! with all of it copied. Under a writer that never pauses that never
//! happens, and the WAL would grow without end (430 MB for the default
//! 100,000 votes). So once it passes [`RESTART`] pages, and a pass has
//! caught up, the writer is parked between two transactions for one short
//! pass ([`restart`]): a few milliseconds, every few hundred milliseconds
//! at full speed. When the target goes, a TRUNCATE checkpoint leaves a
//! kept file whole, with an empty WAL.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use rusqlite::Connection;

use super::{Admin, Job, Sync};

/// The longest a committed page waits before a checkpoint copies it.
const PERIOD: Duration = Duration::from_millis(100);

/// Pages committed since the last pass that make the next start at once
/// (SQLite's own automatic threshold).
const BACKLOG: i64 = 1_000;

/// A WAL this long (in pages: 64 MiB of 4 KiB pages) is started again
/// from its beginning ([`restart`]).
const RESTART: i64 = 16_384;

/// A pass that copied no more than this has caught up with the writer.
const CAUGHT_UP: i64 = 256;

/// Passes over [`RESTART`] before the writer is parked all the same.
const TRIES: u32 = 8;

/// The checkpoint thread, stopped (and joined) on drop.
pub(super) struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// The thread's CPU in nanoseconds, as of its last checkpoint.
    cpu_ns: Arc<AtomicU64>,
}

impl Checkpointer {
    /// Open a second connection on `path` and start the thread. `truncate`:
    /// checkpoint and empty the WAL at the end (a kept file; a temporary
    /// one is removed anyway).
    pub(super) fn start(
        path: &Path,
        sync: Sync,
        truncate: bool,
        jobs: mpsc::Sender<Job>,
    ) -> Result<Checkpointer, String> {
        let conn = Connection::open(path).map_err(|e| e.to_string())?;
        conn.pragma_update(None, "synchronous", sync.pragma())
            .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", 0))
            // PASSIVE never waits; the last TRUNCATE waits this long for
            // other processes' writers (--processes), then leaves the WAL.
            .and_then(|()| conn.busy_timeout(Duration::from_secs(1)))
            .map_err(|e| e.to_string())?;
        let (stop, stopped) = mpsc::channel();
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let cpu = cpu_ns.clone();
        let thread = thread::Builder::new()
            .name("loadrig-sqlite-ckpt".into())
            .spawn(move || run(&conn, &jobs, &stopped, &cpu, truncate))
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
            cpu_ns,
        })
    }

    /// CPU the checkpoint thread had used at its last checkpoint.
    pub(super) fn cpu(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Closing the channel is the signal; the thread ends its wait.
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    conn: &Connection,
    jobs: &mpsc::Sender<Job>,
    stopped: &mpsc::Receiver<()>,
    cpu: &AtomicU64,
    truncate: bool,
) {
    let mut wait = PERIOD;
    // The WAL's length and how much of it was copied, at the last pass.
    let mut last = Wal::default();
    // Passes since the WAL grew past `RESTART`.
    let mut over = 0;
    // Until the target is gone (the channel closes; nothing is sent).
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(wait) {
        // An error (a busy lock, a full disk) is the writer's to report on
        // its next commit; the next period tries again.
        let Ok(now) = checkpoint(conn, "PASSIVE") else {
            wait = PERIOD;
            continue;
        };
        let fresh = now.since(&last);
        last = now;
        wait = if fresh >= BACKLOG {
            Duration::ZERO
        } else {
            PERIOD
        };
        if now.len >= RESTART && fresh > 0 {
            over += 1;
            // Park the writer once the copying has caught up (this pass
            // was short, so the parked one is too), or after a few tries
            // under a writer that outruns it.
            if fresh <= CAUGHT_UP || over >= TRIES {
                if let Some(parked) = restart(conn, jobs) {
                    last = parked;
                }
                over = 0;
                wait = PERIOD;
            } else {
                wait = Duration::ZERO;
            }
        }
        record_cpu(cpu);
    }
    if truncate {
        let _ = checkpoint(conn, "TRUNCATE");
    }
    record_cpu(cpu);
}

/// Copy the last pages with the writer parked between two transactions,
/// so that the whole WAL is in the database file and the writer's next
/// transaction starts the WAL again from its beginning. The writer waits
/// for this one short pass (its two syncs included); what the pass
/// reports, unless the writer is gone.
fn restart(conn: &Connection, jobs: &mpsc::Sender<Job>) -> Option<Wal> {
    let (parked, wait_parked) = mpsc::channel();
    let (resume, wait_resume) = mpsc::channel::<()>();
    let park: Admin = Box::new(move |_| {
        let _ = parked.send(());
        // Returns when `resume` is dropped, whatever happens here.
        let _ = wait_resume.recv();
    });
    jobs.send(Job::Admin(park)).ok()?;
    wait_parked.recv().ok()?;
    let pass = checkpoint(conn, "PASSIVE").ok();
    drop(resume);
    pass
}

/// What a checkpoint reports, in pages.
#[derive(Debug, Default, Clone, Copy)]
struct Wal {
    /// The WAL's length when the checkpoint started.
    len: i64,
    /// How much of it has been copied into the database file.
    copied: i64,
}

impl Wal {
    /// Pages committed between `before` and this checkpoint. A shorter WAL
    /// than before has started again from its beginning.
    fn since(&self, before: &Wal) -> i64 {
        if self.len >= before.len {
            self.len - before.copied
        } else {
            self.len
        }
    }
}

/// Run one checkpoint.
fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<Wal> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok(Wal {
            len: r.get(1)?,
            copied: r.get(2)?,
        })
    })
}

fn record_cpu(cpu: &AtomicU64) {
    let u = loadrig_metrics::ProcessUsage::thread();
    let ns = u64::try_from((u.user + u.system).as_nanos()).unwrap_or(u64::MAX);
    cpu.store(ns, Ordering::Relaxed);
}
