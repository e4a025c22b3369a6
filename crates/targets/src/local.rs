//! A server running on this machine, found by the port it listens on:
//! `/proc/net/tcp{,6}` gives the listening socket's inode, the process
//! holding a descriptor to `socket:[inode]` is the server. Its CPU and
//! resident memory (with those of its direct children: PostgreSQL serves
//! each connection from a child process) are sampled once per lap like
//! any statistic (docs/explanations/resources.md). Reading another user's descriptors
//! needs the same user or root; without it there is no such source.

use std::collections::HashSet;

use loadrig_metrics::ProcSample;
use loadrig_workloads::stats::{Reading, Sampled, StatsSource};

/// The only source of a target that has no statistics of its own: its
/// first server's process, when it runs on this machine (`names`: as in
/// [`process_on`]).
pub(crate) fn first_process(
    at: &crate::url::TargetUrl,
    names: &'static [&'static str],
) -> Vec<Box<dyn StatsSource>> {
    let (host, port) = at.servers.first().cloned().unwrap_or_default();
    process_on(&host, port, names).into_iter().collect()
}

/// The local process listening on `port`, when `host` is this machine.
/// `names` are what the server's process is usually called (its
/// `/proc/PID/comm`): those processes are looked at first, then every
/// other.
pub(crate) fn process_on(
    host: &str,
    port: u16,
    names: &'static [&'static str],
) -> Option<Box<dyn StatsSource>> {
    is_local(host).then(|| {
        Box::new(LocalProcess {
            port,
            names,
            pid: None,
        }) as Box<dyn StatsSource>
    })
}

/// Whether `host` names this machine (loopback).
fn is_local(host: &str) -> bool {
    matches!(host, "localhost" | "::1" | "[::1]") || host.starts_with("127.")
}

struct LocalProcess {
    port: u16,
    names: &'static [&'static str],
    /// Found at the first sample, looked for again when it is gone.
    pid: Option<u32>,
}

impl StatsSource for LocalProcess {
    fn name(&self) -> String {
        match self.pid {
            Some(pid) => format!("process {pid} (port {})", self.port),
            None => format!("process on port {}", self.port),
        }
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let pid = match self.pid {
                Some(pid) => pid,
                None => listener_pid(self.port, self.names).ok_or_else(|| {
                    format!("no process of ours found listening on port {}", self.port)
                })?,
            };
            let Some(own) = ProcSample::of(pid) else {
                self.pid = None;
                return Err(format!("process {pid} is gone"));
            };
            self.pid = Some(pid);
            let (mut cpu, mut rss) = (own.user + own.system, own.rss_bytes);
            for child in children(pid) {
                cpu += child.user + child.system;
                rss += child.rss_bytes;
            }
            Ok(vec![
                Reading::counter("process.cpu_secs", cpu.as_secs_f64()),
                Reading::level("process.rss_bytes", rss as f64),
            ])
        })
    }
}

/// A setting of the local server listening on `host:port`, read from the
/// configuration file its command line names (one of `flags`, then the
/// file): the file and
/// the setting's last value there, `None` as the value when the file does
/// not set it. `Err` says why nothing could be read: not this machine, no
/// process of ours on the port, a command line without `flag`, a file that
/// cannot be read. Lines are `key value`, `#` comments; `include_dir DIR`
/// reads DIR's `*.conf` files after, in name order (Mosquitto's format).
pub(crate) fn setting_of(
    host: &str,
    port: u16,
    names: &[&str],
    flags: &[&str],
    key: &str,
) -> Result<(String, Option<String>), String> {
    if !is_local(host) {
        return Err(format!("{host} is not this machine"));
    }
    let pid = listener_pid(port, names)
        .ok_or_else(|| format!("no process of ours listens on port {port}"))?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map_err(|e| format!("process {pid}'s command line: {e}"))?;
    let mut args = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let file = args
        .by_ref()
        .find(|a| flags.contains(&a.as_str()))
        .and_then(|_| args.next())
        .ok_or_else(|| {
            format!(
                "process {pid} was started without {} (its defaults hold)",
                flags.join(" or ")
            )
        })?;
    // A relative name is the process's, not ours.
    let cwd = std::path::PathBuf::from(format!("/proc/{pid}/cwd"));
    let text = std::fs::read_to_string(cwd.join(&file)).map_err(|e| format!("{file}: {e}"))?;
    let mut value = last_value(&text, key);
    for (_, dir) in settings(&text).filter(|(k, _)| *k == "include_dir") {
        let mut confs: Vec<_> = std::fs::read_dir(cwd.join(dir))
            .map_err(|e| format!("{dir}: {e}"))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "conf"))
            .collect();
        confs.sort();
        for conf in confs {
            if let Some(v) = std::fs::read_to_string(&conf)
                .ok()
                .and_then(|t| last_value(&t, key))
            {
                value = Some(v);
            }
        }
    }
    Ok((file, value))
}

/// `key value` lines of a configuration file, comments and blanks left out.
fn settings(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(char::is_whitespace))
        .map(|(k, v)| (k, v.trim()))
}

/// The last value `key` is given in `text`.
fn last_value(text: &str, key: &str) -> Option<String> {
    settings(text)
        .filter(|(k, _)| *k == key)
        .last()
        .map(|(_, v)| v.to_string())
}

/// The process (the lowest id: a forking server's parent) that holds the
/// socket listening on `port`. Processes named as in `names` are looked
/// at first, then every process, each in the order of their ids, and the
/// first holder ends the search: a descriptor costs a `readlink`, and a
/// load generator started after the server may hold tens of thousands of
/// them (15,000 chat clients, and the broker as many), which a search
/// through every process read for 0.2 s of CPU. With a quiet machine's
/// hundred processes, going through them in order before the NATS server
/// was most of the 4 ms of CPU that sampling the server added to a run.
fn listener_pid(port: u16, names: &[&str]) -> Option<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    let mut all: Vec<u32> = pids().collect();
    all.sort_unstable();
    let named = |pid: &&u32| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| names.contains(&c.trim_end()))
    };
    let holds = |pid: &&u32| holds_any(**pid, &inodes);
    all.iter()
        .filter(named)
        .find(holds)
        .or_else(|| all.iter().find(holds))
        .copied()
}

/// Whether process `pid` has a descriptor to one of the sockets `inodes`.
fn holds_any(pid: u32, inodes: &HashSet<u64>) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).ok().is_some_and(|l| {
            let l = l.to_string_lossy();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| inodes.contains(&n))
        })
    })
}

/// Inodes of the sockets in state LISTEN (0A) on `port`, IPv4 then IPv6.
/// The kernel lists the listening sockets first (its listening table,
/// then the established one), so reading stops at the first other row:
/// the rest can be tens of thousands of connections, and the kernel
/// writes each out as it is read. It writes as much as one read asks for,
/// walking its whole hash of connections when it holds too few to fill
/// it, so reads are small, and IPv6 is read only when IPv4 had none.
fn listening_inodes(port: u16) -> HashSet<u64> {
    use std::io::BufRead;
    let mut out = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if !out.is_empty() {
            break;
        }
        let Ok(file) = std::fs::File::open(table) else {
            continue;
        };
        for row in std::io::BufReader::with_capacity(512, file).lines().skip(1) {
            let Ok(row) = row else { break };
            if row.split_ascii_whitespace().nth(3) != Some("0A") {
                break;
            }
            out.extend(listening_inode(&row, port));
        }
    }
    out
}

/// A row of `/proc/net/tcp`: `sl local rem st ... uid timeout inode`.
fn listening_inode(row: &str, port: u16) -> Option<u64> {
    let f: Vec<&str> = row.split_ascii_whitespace().collect();
    let local_port = f.get(1)?.rsplit_once(':')?.1;
    let ok = u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == "0A";
    ok.then(|| f.get(9)?.parse().ok()).flatten()
}

fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The direct children of `pid`, as sampled now: from each of its
/// threads' `children` list, or where the kernel keeps none, from every
/// process's parent.
fn children(pid: u32) -> Vec<ProcSample> {
    let listed = std::fs::read_dir(format!("/proc/{pid}/task")).map(|tasks| {
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .collect::<Vec<String>>()
    });
    match listed {
        Ok(lists) if !lists.is_empty() => lists
            .iter()
            .flat_map(|l| l.split_ascii_whitespace())
            .filter_map(|c| c.parse().ok())
            .filter_map(ProcSample::of)
            .collect(),
        _ => pids()
            .filter_map(ProcSample::of)
            .filter(|s| s.ppid == pid)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_row_gives_its_inode() {
        let row = "   0: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 2898935 1 0000 100 0 0 10 0";
        assert_eq!(listening_inode(row, 6379), Some(2_898_935));
        assert_eq!(listening_inode(row, 6380), None);
        let established = row.replace(" 0A ", " 01 ");
        assert_eq!(listening_inode(&established, 6379), None);
        assert_eq!(listening_inode("garbage", 6379), None);
    }

    /// This test's own listener is found, and its process is this one.
    #[test]
    fn a_listener_of_this_process_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        assert_eq!(listener_pid(port, &[]), Some(std::process::id()));
        // Named or not, the holder is found.
        let me = std::fs::read_to_string("/proc/self/comm").expect("comm");
        let me: &'static str = Box::leak(me.trim_end().to_owned().into_boxed_str());
        assert_eq!(listener_pid(port, &[me]), Some(std::process::id()));
        assert_eq!(
            listener_pid(port, &["no-such-server"]),
            Some(std::process::id())
        );
        assert!(process_on("10.0.0.1", port, &[]).is_none());
        let mut src = process_on("127.0.0.1", port, &[]).expect("local");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let got = rt.block_on(src.sample()).expect("sampled");
        assert_eq!(got.len(), 2);
        assert!(got[1].value > 1e6, "{got:?}");
    }

    #[test]
    fn a_setting_is_its_last_value() {
        let text = "# max_queued_messages 5\nlistener 1883\nmax_queued_messages 100\n\n  max_queued_messages   10000  \n";
        assert_eq!(
            last_value(text, "max_queued_messages").as_deref(),
            Some("10000")
        );
        assert_eq!(last_value(text, "listener").as_deref(), Some("1883"));
        assert_eq!(last_value(text, "persistence"), None);
    }

    /// This process listens, and its command line has no `-c`: said so.
    #[test]
    fn a_server_started_without_a_config_says_so() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let why = setting_of("127.0.0.1", port, &[], &["--no-such-flag"], "k").unwrap_err();
        assert!(why.contains("without --no-such-flag"), "{why}");
        let why = setting_of("10.0.0.1", port, &[], &["-c"], "k").unwrap_err();
        assert!(why.contains("not this machine"), "{why}");
    }

    /// A child started by any thread of a process is among its children.
    #[test]
    fn a_child_process_is_found() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let mine = children(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(!mine.is_empty(), "no children found");
        assert!(
            mine.iter().all(|c| c.ppid == std::process::id()),
            "{mine:?}"
        );
    }
}
