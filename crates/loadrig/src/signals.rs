//! Signals. SIGINT (Ctrl-C), SIGTERM and SIGHUP all ask the run to stop:
//! the load ends, what is in flight drains briefly, the report is written
//! and the exit code is 1 (the Rai DS guide's HUP: "stop now and report
//! the rate accurately"). A second signal ends the process at once, so a
//! stuck verification never needs `kill -9`. The parent of `--processes`
//! passes every signal on to its children, and a child dies with its
//! parent (`PR_SET_PDEATHSIG`), so no child is ever left loading a target.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::signal::unix::{signal, Signal, SignalKind};

/// What the run watches: whether to stop, and whom to tell.
#[derive(Clone, Default)]
pub struct Watch {
    /// Set by the first signal.
    pub stop: Arc<AtomicBool>,
    /// Children of `--processes`, by process id.
    children: Arc<Mutex<Vec<i32>>>,
}

impl Watch {
    /// A child to pass signals on to.
    pub fn adopt(&self, pid: u32) {
        if let (Ok(pid), Ok(mut c)) = (i32::try_from(pid), self.children.lock()) {
            c.push(pid);
        }
    }

    /// A child that has been reaped: its id may soon be another's.
    pub fn release(&self, pid: u32) {
        if let (Ok(pid), Ok(mut c)) = (i32::try_from(pid), self.children.lock()) {
            c.retain(|&p| p != pid);
        }
    }

    fn tell_children(&self, sig: i32) {
        if let Ok(c) = self.children.lock() {
            for &pid in c.iter() {
                kill(pid, sig);
            }
        }
    }
}

/// The three signals that stop a run.
struct Stopping {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Stopping {
    fn hook() -> std::io::Result<Stopping> {
        Ok(Stopping {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The number of the next one to come.
    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
    }
}

/// Start watching (inside the runtime). Where the signals cannot be
/// hooked (never on Linux), Ctrl-C alone is watched.
pub fn watch() -> Watch {
    let w = Watch::default();
    let Ok(mut signals) = Stopping::hook() else {
        let stop = w.stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.store(true, Ordering::Relaxed);
            }
        });
        return w;
    };
    let watch = w.clone();
    tokio::spawn(async move {
        let first = signals.next().await;
        watch.stop.store(true, Ordering::Relaxed);
        watch.tell_children(first);
        let second = signals.next().await;
        watch.tell_children(libc::SIGKILL);
        // The one exit outside main's: asked twice, the user wants out
        // now, not after whatever the run is waiting for (a dashboard
        // gives the terminal back first).
        loadrig_dashboard::restore_terminal();
        std::process::exit(128 + second);
    });
    w
}

/// A child of `--processes` asks the kernel to send it SIGTERM when its
/// parent dies, then checks the parent is still there (it may have died
/// before the request). False: the parent is gone.
pub fn die_with_parent() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and
    // touches no memory of ours; getppid cannot fail.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        libc::getppid() != 1
    }
}

fn kill(pid: i32, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: kill takes two integers and touches no memory of ours; a
    // child that already exited makes it fail with ESRCH, which is fine.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Raise SIGINT in this process: what `q` or Ctrl-C at the dashboard
/// do (the terminal in raw mode sends no signal of its own), so the run
/// stops exactly as after one from outside.
pub fn interrupt_self() {
    kill(std::process::id() as i32, libc::SIGINT);
}
