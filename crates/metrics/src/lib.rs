//! Measurements that merge: one HDR histogram pair (latency, service time)
//! per operation kind, ok and error counts by a closed set of kinds, domain
//! counts, bytes. A worker owns one [`Snapshot`] and hands it over at each
//! interval; snapshots add up exactly, so percentiles are always recomputed
//! from merged histograms and never averaged.

mod error;
mod histo;
mod laps;
mod outcome;
mod proc;
mod rusage;
mod snapshot;
mod spans;
mod traffic;
mod verdict;

pub use error::{ErrorKind, OpError};
pub use histo::Histo;
pub use laps::{Coarsen, LapStore, COARSE_MAX, GROUP, RECENT};
pub use outcome::{Lap, LapView, Outcome};
pub use proc::{ClientLap, ProcSample};
pub use rusage::{raise_open_files, ProcessUsage, Usage};
pub use snapshot::{ErrorCounts, KindStats, Snapshot};
pub use spans::{issued, Span};
pub use traffic::{count_received, count_sent, take_traffic};
pub use verdict::{Check, Results, Verdict};
