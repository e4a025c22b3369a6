//! `--pin` / `--cpus LIST`: process k of a run on its own CPU, as the Rai
//! DS guide's `taskset -c` does. The list is `--cpus` (`0,2,4-7`) or, with
//! `--pin` alone, the CPUs this process may run on (its affinity mask), in
//! order. A process pins itself with `sched_setaffinity` before any thread
//! starts (its runtime and engine threads inherit the mask); the `--processes`
//! parent stays unpinned and hands child k `--cpus=<the k-th CPU>`. The
//! report's `environment.cpu` (and each process's record in a merged
//! report) says which CPU a pinned process ran on.

use loadrig_spec::SpecError;

/// The highest CPU number a `cpu_set_t` holds.
fn max_cpu() -> usize {
    8 * std::mem::size_of::<libc::cpu_set_t>() - 1
}

/// `0,2,4-7` as CPU numbers, in the order given, each once.
pub fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("'{s}' is not a CPU list (e.g. 0,2,4-7)");
    let mut cpus: Vec<usize> = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: usize = lo.parse().map_err(|_| bad())?;
        let hi: usize = hi.parse().map_err(|_| bad())?;
        if lo > hi || hi > max_cpu() {
            return Err(bad());
        }
        for c in lo..=hi {
            if cpus.contains(&c) {
                return Err(format!("'{s}' names CPU {c} twice"));
            }
            cpus.push(c);
        }
    }
    Ok(cpus)
}

/// The CPUs this process may run on, lowest first.
#[allow(unsafe_code)]
pub fn allowed() -> std::io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel writes
    // at most size_of::<cpu_set_t>() bytes into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        set
    };
    // SAFETY: CPU_ISSET reads the set within its size (c <= max_cpu()).
    Ok((0..=max_cpu())
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The CPU list of `--pin` / `--cpus` for `processes` processes: `None`
/// when neither is given. Every CPU must be one this process may run on,
/// and each process needs one of its own.
pub fn plan(
    pin: bool,
    cpus: Option<&[usize]>,
    processes: u32,
) -> Result<Option<Vec<usize>>, SpecError> {
    let flag = if cpus.is_some() { "--cpus" } else { "--pin" };
    let may = allowed()
        .map_err(|e| SpecError::new(flag, format!("cannot read this process's CPUs: {e}")))?;
    let list = match (pin, cpus) {
        (_, Some(list)) => list.to_vec(),
        (true, None) => may.clone(),
        (false, None) => return Ok(None),
    };
    if let Some(c) = list.iter().find(|c| !may.contains(c)) {
        return Err(SpecError::new(
            flag,
            format!(
                "CPU {c} is not one this process may run on ({})",
                text(&may)
            ),
        ));
    }
    if list.len() < processes as usize {
        return Err(SpecError::new(
            flag,
            format!(
                "{processes} processes need a CPU each, {} given ({})",
                list.len(),
                text(&list)
            ),
        ));
    }
    Ok(Some(list))
}

/// Pin this process (the calling thread, and every thread it starts from
/// now on) to `cpu`.
#[allow(unsafe_code)]
pub fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: the set is built in place within its size (cpu <= max_cpu(),
    // checked by `plan` against the allowed CPUs), and handed to the kernel
    // with that size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn text(cpus: &[usize]) -> String {
    let words: Vec<String> = cpus.iter().map(usize::to_string).collect();
    format!("CPUs {}", words.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_take_ranges_in_the_order_given() {
        assert_eq!(parse_list("3,0-1"), Ok(vec![3, 0, 1]));
        assert_eq!(parse_list(" 2 "), Ok(vec![2]));
        for bad in ["", "a", "2-1", "1,1", "0-99999"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn each_process_needs_a_cpu_it_may_run_on() {
        let may = allowed().unwrap();
        assert!(!may.is_empty());
        assert_eq!(plan(false, None, 4).unwrap(), None);
        assert_eq!(plan(true, None, 1).unwrap(), Some(may.clone()));
        let e = plan(true, None, may.len() as u32 + 1).unwrap_err();
        assert!(e.to_string().starts_with("--pin:"), "{e}");
        let e = plan(false, Some(&[max_cpu()]), 1).unwrap_err();
        assert!(e.to_string().contains("may run on"), "{e}");
    }
}
