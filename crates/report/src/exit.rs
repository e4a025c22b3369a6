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
