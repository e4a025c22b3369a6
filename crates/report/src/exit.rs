//! The exit codes of every loadrig command (docs/reference/exit-codes.md),
//! recorded in each report as its run's `exit_code`.

/// The run completed and every check held.
pub const OK: i32 = 0;
/// The run completed but a check failed (verification, error rate, Ctrl-C).
pub const CHECK_FAILED: i32 = 1;
/// Bad usage or bad input.
pub const USAGE: i32 = 2;
/// The target could not be reached or prepared.
pub const TARGET: i32 = 3;
/// `--strict`: the run passed every other check, but its measurement was
/// judged INVALID (`Report::validity`, docs/explanations/validity.md).
pub const INVALID: i32 = 4;
/// `loadrig ab`: B is worse than A beyond the threshold, with 95%
/// confidence (docs/guides/capacity.md). Ten and up are the A/B verdicts, far
/// from the run's own codes (0 to 3, and the few next to them kept for
/// the run), so a CI script tells a regression from a broken run.
pub const AB_FAIL: i32 = 10;
/// `loadrig ab`: the interval on B/A straddles the threshold; more rounds
/// (or a quieter machine) would decide.
pub const AB_INCONCLUSIVE: i32 = 11;
