//! The exit code an error that ended the program chooses (the codes:
//! `loadrig_report::exit`, docs/reference/exit-codes.md).

use loadrig_spec::SpecError;
use loadrig_targets::OpenError;
use loadrig_workloads::TargetError;

pub use loadrig_report::exit::{
    AB_FAIL, AB_INCONCLUSIVE, CHECK_FAILED, INVALID, OK, TARGET, USAGE,
};

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
        if cause.is::<loadrig_report::ReportError>()
            || cause.is::<loadrig_present::plot::InputError>()
        {
            return USAGE;
        }
    }
    CHECK_FAILED
}
