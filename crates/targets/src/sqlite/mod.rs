//! Embedded SQLite, the default target.
//!
//! SQLite has one writer at a time, so many clients writing through many
//! connections would spend their time in lock waits. Instead one database
//! thread owns the connection and serves every client: it takes whatever
//! calls are waiting (up to [`MAX_BATCH`]), runs them one after the other
//! inside one transaction, commits once, and only then answers them (group
//! commit). Each call is still atomic and isolated (they run serially), an
//! answer is only sent for a committed call, and clients keep many calls in
//! flight without blocking the async runtime.
//!
//! Durability: WAL journal, `synchronous=NORMAL` by default (a commit
//! survives a crash of loadrig but not a power cut), `?sync=full` for an
//! fsync per commit (on the writer, as it must be), `?sync=off` for none.
//! Checkpoints, which sync the disk even at NORMAL, run on a thread of
//! their own ([`checkpoint`]), off the writer's path. What the target says
//! about durability names the database's directory and its filesystem
//! ([`place`]): a temporary database on tmpfs measures memory, not a disk.

mod checkpoint;
mod hello;
mod kv;
mod place;
mod voter;

use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::OpError;
use loadrig_spec::SpecError;
use loadrig_workloads::hello::HelloOp;
use loadrig_workloads::kv::{Txn, TxnDone};
use loadrig_workloads::voter::{Vote, VoteResult};
use loadrig_workloads::TargetInfo;
use loadrig_workloads::{Reply, TargetError};
use rusqlite::{Connection, ErrorCode};
use tokio::sync::{mpsc as amp, oneshot};

use crate::query_pairs;

/// The most calls one transaction carries.
const MAX_BATCH: usize = 4_096;

/// The synchronous setting, as SQLite names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    Off,
    Normal,
    Full,
}

impl Sync {
    fn pragma(self) -> &'static str {
        match self {
            Sync::Off => "OFF",
            Sync::Normal => "NORMAL",
            Sync::Full => "FULL",
        }
    }
}

type Admin = Box<dyn FnOnce(&mut Connection) + Send>;

/// Work for the database thread.
enum Job {
    Vote {
        vote: Vote,
        tag: Tag,
        reply: amp::UnboundedSender<Reply<VoteResult>>,
    },
    Hello {
        op: HelloOp,
        tag: Tag,
        reply: amp::UnboundedSender<Reply<()>>,
    },
    Kv {
        txn: Box<Txn>,
        sql: std::sync::Arc<kv::Sql>,
        tag: Tag,
        reply: amp::UnboundedSender<Reply<TxnDone>>,
    },
    /// Set-up, counts and other cold-path work, run between batches.
    Admin(Admin),
}

pub struct SqliteTarget {
    path: PathBuf,
    sync: Sync,
    /// The database file's directory and its filesystem type.
    place: (PathBuf, String),
    /// The file opened (device, inode): the path must still name it when
    /// the run is verified, or what was verified is not what the path
    /// holds.
    file: Option<(u64, u64)>,
    jobs: mpsc::Sender<Job>,
    /// The kv workload's statements, for the dataset it names.
    kv: std::sync::Arc<kv::Sql>,
    /// Declared before `_temp`: it stops (and checkpoints) before the
    /// folder goes.
    checkpointer: checkpoint::Checkpointer,
    /// Keeps a temporary database alive; dropping it removes the folder.
    _temp: Option<tempfile::TempDir>,
}

impl SqliteTarget {
    /// Open what follows `sqlite://`: empty for a fresh temporary database,
    /// or a path (`sqlite:///abs/file.db`), with `?sync=off|normal|full`.
    pub fn open(rest: &str) -> Result<SqliteTarget, crate::OpenError> {
        let (path, query) = crate::url::sqlite_parts(rest);
        let mut sync = Sync::Normal;
        for (k, v) in query_pairs(query) {
            sync = match (k, v.to_ascii_lowercase().as_str()) {
                ("sync", "off") => Sync::Off,
                ("sync", "normal") => Sync::Normal,
                ("sync", "full") => Sync::Full,
                _ => {
                    return Err(SpecError::new(
                        "--target",
                        format!("sqlite: unknown option '{k}={v}' (only sync=off|normal|full)"),
                    )
                    .into())
                }
            };
        }
        let unreachable = |reason: String| TargetError::Unreachable {
            target: format!("sqlite://{path}"),
            reason,
        };
        let (path, temp) = if path.is_empty() {
            let dir = tempfile::Builder::new()
                .prefix("loadrig-")
                .tempdir()
                .map_err(|e| unreachable(format!("cannot make a temporary folder: {e}")))?;
            (dir.path().join("loadrig.db"), Some(dir))
        } else {
            (PathBuf::from(path), None)
        };
        let mut conn = Connection::open(&path).map_err(|e| unreachable(e.to_string()))?;
        configure(&mut conn, sync).map_err(|e| unreachable(e.to_string()))?;
        // After `configure`: the file is in WAL mode before a second
        // connection opens it.
        let (tx, rx) = mpsc::channel();
        let checkpointer = checkpoint::Checkpointer::start(&path, sync, temp.is_none(), tx.clone())
            .map_err(unreachable)?;
        let place = place::of(&path);
        let file = identity(&path);
        thread::Builder::new()
            .name("loadrig-sqlite".into())
            .spawn(move || serve(conn, rx))
            .map_err(|e| unreachable(format!("cannot start the database thread: {e}")))?;
        Ok(SqliteTarget {
            path,
            sync,
            place,
            file,
            jobs: tx,
            kv: std::sync::Arc::new(kv::Sql::new("kv")),
            checkpointer,
            _temp: temp,
        })
    }

    /// Run `f` on the database thread and wait for its answer.
    async fn admin<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, TargetError> {
        admin(&self.jobs, f)
            .await
            .map_err(|reason| self.failed(reason))
    }

    fn failed(&self, reason: String) -> TargetError {
        TargetError::Prepare {
            target: self.label(),
            reason,
        }
    }

    fn label(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }

    /// CPU the database thread and the checkpoint thread have used.
    async fn threads_cpu(&self) -> Vec<(&'static str, std::time::Duration)> {
        let writer = self
            .admin(|_| {
                let u = loadrig_metrics::ProcessUsage::thread();
                Ok(u.user + u.system)
            })
            .await;
        match writer {
            Ok(w) => vec![("writer", w), ("checkpointer", self.checkpointer.cpu())],
            Err(_) => Vec::new(),
        }
    }

    fn version() -> String {
        format!("SQLite {}", rusqlite::version())
    }

    fn durability(&self) -> String {
        format!(
            "journal_mode=WAL, synchronous={} ({}), group commit by one database thread, \
             checkpoints on their own thread; database in {} ({})",
            self.sync.pragma(),
            match self.sync {
                Sync::Off => "no fsync: a crash of the machine can lose or corrupt recent commits",
                Sync::Normal =>
                    "commits survive a crash of loadrig, the last ones may be lost in a power cut",
                Sync::Full => "fsync on every commit",
            },
            self.place.0.display(),
            self.place.1,
        )
    }
}

/// Run `f` on the database thread behind `jobs` and wait for its answer;
/// the error in words.
async fn admin<T: Send + 'static>(
    jobs: &mpsc::Sender<Job>,
    f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = oneshot::channel();
    let job: Admin = Box::new(move |c| {
        let _ = tx.send(f(c));
    });
    let gone = || "the database thread stopped".to_string();
    jobs.send(Job::Admin(job)).map_err(|_| gone())?;
    rx.await.map_err(|_| gone())?.map_err(|e| e.to_string())
}

fn configure(conn: &mut Connection, sync: Sync) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", sync.pragma())?;
    // The checkpoint thread copies the WAL back; here it would sync the
    // disk while every queued call waits.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // Other processes (--processes, a user's shell) may hold the lock briefly.
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// The database thread: batches of calls, one transaction each.
fn serve(mut conn: Connection, jobs: mpsc::Receiver<Job>) {
    let mut batch: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    let mut pending_admin: Option<Admin> = None;
    while let Ok(first) = jobs.recv() {
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Admin(f) => {
                    pending_admin = Some(f);
                    break;
                }
                call => batch.push(call),
            }
            if batch.len() < MAX_BATCH {
                next = jobs.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            run_batch(&mut conn, &mut batch);
        }
        if let Some(f) = pending_admin.take() {
            f(&mut conn);
        }
    }
}

/// Run every call in one transaction; answer only after the commit.
fn run_batch(conn: &mut Connection, batch: &mut Vec<Job>) {
    let outcome = (|| -> rusqlite::Result<Vec<Result<u64, OpError>>> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        for job in batch.iter() {
            let r = match job {
                Job::Vote { vote, .. } => voter::vote(&tx, vote).map(|r| r as u64),
                Job::Hello { op, .. } => hello::call(&tx, op).map(|()| 0),
                Job::Kv { txn, sql, .. } => kv::run(&tx, sql, txn),
                Job::Admin(_) => Ok(0),
            };
            results.push(r.map_err(|e| op_error(&e)));
        }
        tx.commit()?;
        Ok(results)
    })();
    // A failed transaction fails every call in it, with one error.
    let outcome = outcome.map_err(|e| op_error(&e));
    for (i, job) in batch.drain(..).enumerate() {
        let result = match &outcome {
            Ok(results) => results
                .get(i)
                .copied()
                .unwrap_or(Err(OpError::server("SQLITE_INTERNAL"))),
            Err(e) => Err(*e),
        };
        // A client that went away (reconnected, finished) needs no answer.
        match job {
            Job::Vote { tag, reply, .. } => {
                let result = result.map(|r| voter::result_of(r as u8));
                let _ = reply.send(Reply::Done { tag, result });
            }
            Job::Hello { tag, reply, .. } => {
                let _ = reply.send(Reply::Done {
                    tag,
                    result: result.map(|_| ()),
                });
            }
            Job::Kv { tag, reply, .. } => {
                let result = result.map(kv::done_of);
                let _ = reply.send(Reply::Done { tag, result });
            }
            Job::Admin(_) => {}
        }
    }
}

/// A failed statement as a counted error with a static class.
fn op_error(e: &rusqlite::Error) -> OpError {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => OpError::server(match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => "SQLITE_BUSY",
            ErrorCode::ConstraintViolation => "SQLITE_CONSTRAINT",
            ErrorCode::DiskFull => "SQLITE_FULL",
            ErrorCode::SystemIoFailure => "SQLITE_IOERR",
            ErrorCode::ReadOnly => "SQLITE_READONLY",
            ErrorCode::DatabaseCorrupt => "SQLITE_CORRUPT",
            _ => "SQLITE_ERROR",
        }),
        rusqlite::Error::QueryReturnedNoRows => {
            OpError::new(loadrig_metrics::ErrorKind::Verification)
        }
        _ => OpError::server("SQLITE_ERROR"),
    }
}

/// A client's connection: a handle on the database thread and its own
/// answer channel. Many calls may be in flight; answers come back in order.
pub struct SqliteConn<R> {
    jobs: mpsc::Sender<Job>,
    tx: amp::UnboundedSender<Reply<R>>,
    rx: amp::UnboundedReceiver<Reply<R>>,
}

impl<R> SqliteConn<R> {
    fn new(jobs: mpsc::Sender<Job>) -> Self {
        let (tx, rx) = amp::unbounded_channel();
        SqliteConn { jobs, tx, rx }
    }

    fn submit(&mut self, job: Job) {
        if self.jobs.send(job).is_err() {
            // The database thread is gone: make recv report it.
            let _ = self
                .tx
                .send(Reply::Broken(OpError::new(loadrig_metrics::ErrorKind::Io)));
        }
    }

    async fn next(&mut self) -> Reply<R> {
        // We hold a sender ourselves, so the channel never closes under us.
        self.rx
            .recv()
            .await
            .unwrap_or(Reply::Broken(OpError::new(loadrig_metrics::ErrorKind::Io)))
    }

    /// Forget calls in flight: answers to them go to a dropped channel.
    fn reset(&mut self) {
        let (tx, rx) = amp::unbounded_channel();
        self.tx = tx;
        self.rx = rx;
    }
}

/// No bytes: the database runs inside this process.
impl<R> CountsBytes for SqliteConn<R> {
    fn take_bytes(&mut self) -> (u64, u64) {
        (0, 0)
    }
}

impl TargetInfo for SqliteTarget {
    async fn server_version(&self) -> Option<String> {
        Some(SqliteTarget::version())
    }

    fn durability(&self) -> Option<String> {
        Some(SqliteTarget::durability(self))
    }

    fn max_depth(&self) -> usize {
        MAX_BATCH
    }

    /// A fresh temporary database is private to the process that made it.
    fn shared(&self) -> bool {
        self._temp.is_none()
    }

    /// A file the user named is theirs: the run never removes it.
    fn keeps_data(&self) -> bool {
        self._temp.is_none()
    }

    async fn embedded_cpu(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.threads_cpu().await
    }

    /// The file was removed or replaced since it was opened: the open
    /// connection still reads the old one, which nobody can read again.
    fn lost(&self) -> Option<String> {
        let now = identity(&self.path);
        (self.file.is_some() && now != self.file).then(|| {
            format!(
                "the database file {} was {} during the run",
                self.path.display(),
                if now.is_none() { "removed" } else { "replaced" }
            )
        })
    }
}

/// The (device, inode) of the file at `path`, if there is one.
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}
