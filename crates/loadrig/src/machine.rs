//! What this machine can hold, asked before any load: a run whose planned
//! memory (connections, requests in flight, the queue, times the
//! processes) is more than the memory available now is refused at once,
//! with the estimate and the flag that drives it (docs/reference/limits.md).

use loadrig_spec::{Dispatch, RunSpec, SpecError};

use loadrig_report::fmt::bytes;

/// Refuse a run that plans more memory than the machine has available.
/// Where `/proc/meminfo` cannot be read, nothing is refused.
pub fn admit(spec: &RunSpec) -> Result<(), SpecError> {
    let Some(available) = mem_available() else {
        return Ok(());
    };
    check(spec, available)
}

fn check(spec: &RunSpec, available: u64) -> Result<(), SpecError> {
    let planned = spec.load.planned(spec.processes);
    if planned.total() <= available {
        return Ok(());
    }
    // The flag that drives the largest share of the estimate.
    let flag = if planned.connections >= planned.slots.max(planned.queue) {
        if spec.processes > 1 {
            "--processes"
        } else {
            "--clients"
        }
    } else if planned.queue >= planned.slots {
        "--queue"
    } else if matches!(spec.load.dispatch, Dispatch::Managed { .. }) {
        "--slots"
    } else {
        "--pipeline"
    };
    Err(SpecError::new(
        flag,
        format!(
            "this run would hold about {} at once (connections, requests in flight, queue), \
             more than the {} this machine has available",
            bytes(planned.total()),
            bytes(available)
        ),
    ))
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(args: &str) -> RunSpec {
        let args: Vec<&str> = args.split_whitespace().collect();
        crate::flags::tests::parse(&args).expect("valid flags")
    }

    #[test]
    fn a_run_bigger_than_the_machine_is_refused_naming_its_flag() {
        let gib = 1 << 30;
        assert!(check(&spec("-c 100"), gib).is_ok());
        let e = check(&spec("-c 100000"), gib).unwrap_err();
        assert_eq!(e.flag, "--clients");
        assert!(e.to_string().contains("available"), "{e}");
        let e = check(&spec("-c 10 --queue 9000000 --slots 10"), 64 << 20).unwrap_err();
        assert_eq!(e.flag, "--queue");
    }

    #[test]
    fn this_machine_says_what_it_has() {
        assert!(mem_available().is_some_and(|b| b > 0));
    }
}
