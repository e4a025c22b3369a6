//! One run, start to end, for any (workload, target): connect, prepare,
//! record the baseline, wait for the start, drive the engine, verify
//! against the server, print the results, write the report, and choose
//! the exit code. [`drive`] picks the process's part: the whole run here
//! ([`single`]; a child of `--processes` only connects, runs and writes its
//! report), or the parent of `--processes` ([`parent`]), which does the
//! rest once. Both end through [`conclude`]; neither calls the other.
//! A shard of a many-host run (`--no-prepare`) runs as a child does; the
//! parts done once are [`phases`].

mod conclude;
mod deadline;
pub use deadline::Deadlines;
mod parent;
pub mod phases;
mod sampler;
mod single;

use std::path::PathBuf;

use loadrig_spec::RunSpec;
use loadrig_workloads::Bench;

use crate::flags::ChildLine;
use crate::start::StartRule;

/// Output choices and the process's part, none of them in the run spec.
pub struct Options {
    pub quiet: bool,
    /// `--resources`: the client's resources on each lap line.
    pub resources: bool,
    /// `--server-stats on`: sample the server's statistics per lap.
    pub server_stats: bool,
    pub csv: bool,
    /// `--json`: the summary as one JSON object on standard output.
    pub json: bool,
    pub out: Option<PathBuf>,
    /// `--hdr-log`: the laps as an HdrHistogram interval log.
    pub hdr_log: Option<PathBuf>,
    /// `--html`: the report as one self-contained page.
    pub html: Option<PathBuf>,
    /// When the load begins; `None`: as soon as the connections are open.
    pub start: Option<StartRule>,
    pub role: Role,
    /// What the engine's threads run for the sockets (`--io uring`).
    pub hooks: Option<loadrig_engine::ThreadHooks>,
    /// The CPU this process pinned itself to (`--pin`, `--cpus`), if it did.
    pub cpu: Option<usize>,
    /// The source addresses of `--bind`, as the report records them.
    pub sources: Vec<String>,
}

impl Options {
    /// Standard output carries data (CSV, JSON, or the report with `--out -`),
    /// so the human text goes to standard error.
    pub fn data_on_stdout(&self) -> bool {
        self.csv
            || self.json
            || self.out.as_deref().is_some_and(|p| {
                p == std::path::Path::new("-") || p == std::path::Path::new("/dev/stdout")
            })
    }
}

/// This process's part in the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// The whole run in this process.
    Single,
    /// The parent of `--processes`: it prepares, starts the children with
    /// these arguments (plus each one's shard, start and report file),
    /// merges, verifies and tears down.
    /// `cpus`: `--pin`/`--cpus`, child k on the k-th.
    Parent {
        child: ChildLine,
        cpus: Option<Vec<usize>>,
    },
    /// One of the parent's children: connect, run, write the report.
    /// A shard of `--no-prepare` plays this part too.
    Child,
}

pub async fn drive<B: Bench>(bench: B, spec: &RunSpec, opts: &Options) -> anyhow::Result<i32> {
    match &opts.role {
        Role::Parent { child, cpus } => {
            parent::parent(bench, spec, opts, child, cpus.as_deref()).await
        }
        Role::Single | Role::Child => single::single(bench, spec, opts).await,
    }
}
