//! Presentation: what loadrig shows of a run, read from its laps and its
//! report only. The live lap lines and summaries in each peer's format
//! ([`print`](mod@print)), CSV and JSON, charts and HTML pages ([`plot`]), sweep
//! tables ([`table`]), and the offline commands that read report files:
//! `merge` ([`merge`]), `compare` ([`compare`]), `plot` and `report`.
//! It builds without tokio and without any target's driver: it never
//! connects, never runs anything.

pub mod compare;
pub mod merge;
pub mod out;
pub mod plot;
pub mod print;
pub mod table;

pub use out::one_line;
