//! `--dashboard` (docs/guides/dashboard.md): the session's side of the
//! live terminal dashboard (`loadrig-dashboard`). Each lap becomes a
//! [`Tick`] (a few counts and the lap's latency histogram, every kind
//! together) handed to the dashboard's own thread, or, in a child of
//! `--processes`, written as one line on standard output for the parent,
//! which sums its children's laps by index into its dashboard. Where
//! standard output is not a terminal (or carries data) the run keeps its
//! lap lines and says so once on standard error. `q` or Ctrl-C at the
//! dashboard raise SIGINT, so the run stops exactly as after a signal.

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};

use loadrig_dashboard::{Dashboard, Goal, Setup, Sum, Tick, MAX_LINE};
use loadrig_metrics::{ErrorKind, Histo, LapView};
use loadrig_report::Report;
use loadrig_spec::{RunSpec, Stop};
use loadrig_workloads::Bench;

use super::{Options, Session, Sink};
use crate::signals;

/// The server's latest sample, as the sampler publishes it.
pub type Live = Arc<Mutex<Vec<(String, f64)>>>;

/// The dashboard, if `--dashboard` asked for one and standard output is
/// a terminal; otherwise `None`, with the line saying so printed.
pub fn open(spec: &RunSpec, opts: &Options, processes: u32) -> Option<Arc<Dashboard>> {
    if !opts.dashboard {
        return None;
    }
    if !std::io::stdout().is_terminal() || opts.data_on_stdout() {
        eprintln!("--dashboard: standard output is not a terminal; lap lines instead");
        return None;
    }
    let goal = match spec.load.stop {
        Stop::Count(n) => Goal::Ops(n),
        Stop::Seconds(s) => Goal::Secs(s),
    };
    let setup = Setup {
        title: format!(
            "{} on {}",
            spec.workload.name(),
            loadrig_spec::printable(&spec.masked().target)
        ),
        goal,
        processes,
    };
    match Dashboard::start(setup, Box::new(signals::interrupt_self)) {
        Ok(d) => Some(Arc::new(d)),
        Err(e) => {
            eprintln!("--dashboard: {e}; lap lines instead");
            None
        }
    }
}

/// The figures of one lap.
pub fn tick(index: u64, lap: &LapView<'_>) -> Tick {
    let mut latency = Histo::new();
    let mut errors = std::collections::BTreeMap::new();
    for k in &lap.lap.kinds {
        latency.add(&k.latency);
        latency.add(&k.same);
        for (kind, n) in ErrorKind::ALL.iter().zip(k.errors.by_kind) {
            if n > 0 {
                *errors.entry(kind.name().to_string()).or_default() += n;
            }
        }
    }
    Tick {
        index,
        elapsed: lap.elapsed,
        length: lap.length,
        warmup: lap.warmup,
        ok: lap.lap.ok_ops(),
        errors,
        in_flight: lap.pending,
        cpu: lap.client.cpu_user + lap.client.cpu_system,
        rss_bytes: lap.client.rss_bytes,
        latency,
        measured: lap.measured,
        measured_ops: lap.total.ops(),
        processes: 1,
    }
}

/// Where a lap goes: the screen, or the parent of `--processes`.
enum Out {
    Screen(Arc<Dashboard>, Option<Live>),
    Feed,
}

/// The sink: each lap to the dashboard (or the parent), and at the end
/// the validity verdict onto the last frame.
pub struct DashSink {
    out: Out,
    laps: u64,
}

impl Sink for DashSink {
    fn lap(&mut self, lap: &LapView<'_>) {
        let t = tick(self.laps, lap);
        self.laps += 1;
        match &self.out {
            Out::Screen(d, live) => {
                if let Some(s) = live.as_ref().and_then(|l| l.lock().ok()) {
                    d.server(s.clone());
                }
                d.tick(t);
            }
            Out::Feed => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", t.to_line());
                let _ = out.flush();
            }
        }
    }

    fn end(&mut self, report: &mut Report) -> Option<String> {
        if let Out::Screen(d, _) = &self.out {
            d.finish(Some(report.validity().line()));
        }
        None
    }
}

impl<B: Bench> Session<'_, B> {
    /// With `--dashboard` (or `--lap-feed`), its sink, registered last;
    /// `live`: the sampler's latest sample, when it runs. The console
    /// holds its lines while the dashboard is up (`measure` releases them).
    pub(super) fn watch_live(&mut self, live: Option<Live>) {
        let out = if self.opts.lap_feed {
            Out::Feed
        } else {
            match open(self.spec, self.opts, 1) {
                Some(d) => {
                    self.console.hold();
                    Out::Screen(d, live)
                }
                None => return,
            }
        };
        self.sinks.push(Box::new(DashSink { out, laps: 0 }));
    }
}

/// The parent's side: read one child's standard output to its end, each
/// lap line into the sum and the sums onto the dashboard; other lines
/// are dropped. Lines are read at most [`MAX_LINE`] bytes at a time.
pub fn follow(child: impl Read, sum: &Mutex<Sum>, d: &Dashboard) {
    let mut r = BufReader::new(child);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = r
            .by_ref()
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(t) = Tick::from_line(&String::from_utf8_lossy(&line)) else {
            continue;
        };
        let done = sum.lock().map(|mut s| s.add(t)).unwrap_or_default();
        for t in done {
            d.tick(t);
        }
    }
    for t in sum.lock().map(|mut s| s.ended()).unwrap_or_default() {
        d.tick(t);
    }
}
