//! Exit codes (docs/engine.md section 7) and the errors that choose them.

use loadrig_spec::SpecError;
use loadrig_targets::OpenError;
use loadrig_workloads::TargetError;

/// The run completed and every check held.
pub const OK: i32 = 0;
/// The run completed but a check failed (verification, error rate, Ctrl-C).
pub const CHECK_FAILED: i32 = 1;
/// Bad usage or bad input.
pub const USAGE: i32 = 2;
/// The target could not be reached or prepared.
pub const TARGET: i32 = 3;

/// The exit code for an error that ended the program.
pub fn code_of(e: &anyhow::Error) -> i32 {
    for cause in e.chain() {
        if cause.is::<SpecError>() {
            return USAGE;
        }
        if let Some(t) = cause.downcast_ref::<TargetError>() {
            return match t {
                TargetError::Unsupported(_) => USAGE,
                _ => TARGET,
            };
        }
        if let Some(o) = cause.downcast_ref::<OpenError>() {
            return match o {
                OpenError::Spec(_) => USAGE,
                OpenError::Target(TargetError::Unsupported(_)) => USAGE,
                OpenError::Target(_) => TARGET,
            };
        }
        if cause.is::<loadrig_report::ReportError>() || cause.is::<crate::plot::InputError>() {
            return USAGE;
        }
    }
    CHECK_FAILED
}
