//! Live output and summaries: the header, phases, lap lines (or a progress
//! bar), the results, the per-kind latency table and the overall line.
//! Human output goes to standard output, or to standard error when the
//! machine-readable CSV takes standard output.

pub mod csv;
pub mod erlvolt;
pub mod http;
pub mod intervals;
pub mod json;
pub mod memtier;
pub mod pgbench;
pub mod redis;
mod stages;

use std::io::{IsTerminal, Write};
use std::time::Duration;

use loadrig_metrics::LapView;
use loadrig_metrics::Results;
use loadrig_metrics::Snapshot;
use loadrig_report::fmt;
use loadrig_report::fmt::group;
use loadrig_report::validity::{samples_needed, ABOVE_NEEDED};
use loadrig_report::{Measured, Report};
use loadrig_spec::{Dispatch, Pacing, RunSpec, Stop, WorkloadSpec};

use fmt::{dur, rate};

/// Where human-readable output goes, and how.
pub struct Printer {
    out: Box<dyn Write>,
    /// Where a sequential run's test lines go when they are all that
    /// standard output carries (redis-benchmark's `-q`).
    tests_out: Option<Box<dyn Write>>,
    quiet: bool,
    /// A progress bar on standard error (quiet, on a terminal).
    bar: bool,
    total_ops: Option<u64>,
    total_secs: Option<f64>,
    /// `--resources`: the client's CPU, memory, bytes and connections
    /// after each lap line.
    resources: bool,
    /// The Erlvolt bench's setup this run follows: its lines, not loadrig's laps.
    preset: Option<loadrig_spec::Preset>,
    /// `--max-error-rate`: a test failing more than this gets no rate line.
    gate: Option<f64>,
    /// While a dashboard has the terminal: the real writers, the lines
    /// held back instead ([`Printer::hold`]).
    held: Option<Held>,
}

/// The writers set aside while output is held, and what was held.
struct Held {
    out: Box<dyn Write>,
    tests_out: Option<Box<dyn Write>>,
    lines: Buffer,
    tests: Buffer,
}

/// Lines held back, at most [`Buffer::MAX`] bytes (beyond, dropped: a
/// run's console writes a few lines while its laps go to a dashboard).
#[derive(Clone, Default)]
struct Buffer(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl Buffer {
    const MAX: usize = 1 << 20;

    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.borrow_mut())
    }
}

impl Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut v = self.0.borrow_mut();
        let room = Self::MAX.saturating_sub(v.len()).min(b.len());
        v.extend_from_slice(&b[..room]);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Printer {
    pub fn new(spec: &RunSpec, quiet: bool, csv: bool) -> Printer {
        // redis-benchmark's -q prints a line per test and nothing else:
        // those lines alone on standard output, the rest on standard error.
        let tests_only = quiet && !csv && matches!(spec.workload, WorkloadSpec::Redis(_));
        let out: Box<dyn Write> = if csv || tests_only {
            Box::new(std::io::stderr())
        } else {
            Box::new(std::io::stdout())
        };
        let tests_out: Option<Box<dyn Write>> = match tests_only {
            true => Some(Box::new(std::io::stdout())),
            false => None,
        };
        let (total_ops, total_secs) = match spec.load.stop {
            Stop::Count(n) => (Some(n), None),
            Stop::Seconds(s) => (None, Some(s)),
        };
        Printer {
            out,
            tests_out,
            quiet,
            bar: quiet && std::io::stderr().is_terminal(),
            total_ops,
            total_secs,
            resources: false,
            preset: spec.preset,
            gate: spec.max_error_rate,
            held: None,
        }
    }

    /// Hold every line back until [`Printer::release`]: a dashboard has
    /// the terminal, and a line written under it would stay on its screen.
    pub fn hold(&mut self) {
        if self.held.is_some() {
            return;
        }
        let (lines, tests) = (Buffer::default(), Buffer::default());
        let out = std::mem::replace(&mut self.out, Box::new(lines.clone()));
        let tests_out = self
            .tests_out
            .as_mut()
            .map(|t| std::mem::replace(t, Box::new(tests.clone())));
        self.held = Some(Held {
            out,
            tests_out,
            lines,
            tests,
        });
    }

    /// Write what was held, and write straight on from now.
    pub fn release(&mut self) {
        let Some(h) = self.held.take() else {
            return;
        };
        self.out = h.out;
        let _ = self.out.write_all(&h.lines.take());
        let _ = self.out.flush();
        if let Some(mut t) = h.tests_out {
            crate::out::stdout_written(t.write_all(&h.tests.take()).and_then(|()| t.flush()));
            self.tests_out = Some(t);
        }
    }

    /// Lap lines end with the client's resources in the lap (`--resources`).
    pub fn with_resources(mut self, on: bool) -> Printer {
        self.resources = on;
        self
    }

    /// Write a line. One that cannot be written is dropped here; standard
    /// output that failed is still said, and exits 2, at the exit point
    /// (`stdout_written` in main.rs).
    pub fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
        let _ = self.out.flush();
    }

    /// A phase as it starts: `connect ... prepare ... run ...` on one line.
    pub fn phase(&mut self, name: &str) {
        let _ = write!(self.out, "{name} ... ");
        let _ = self.out.flush();
    }

    pub fn end_phases(&mut self) {
        self.line("");
    }

    /// The header line, then what a commit promises on the target if it
    /// is known before connecting (SQLite: its sync mode, the database's
    /// directory and filesystem). A target that asks its server learns it
    /// later, and the report holds it.
    pub fn header(&mut self, spec: &RunSpec, durability: Option<&str>) {
        self.line(&header(spec));
        if let Some(client) = erlvolt::client_line(spec, self.quiet) {
            self.line(&client);
        }
        if let Some(d) = durability {
            self.line(&format!("durability: {d}"));
        }
    }

    pub fn lap(&mut self, l: &LapView<'_>) {
        if self.held.is_some() {
            return;
        }
        if self.bar {
            self.progress(l);
        } else if !self.quiet {
            let mut line = match self.preset {
                Some(p) => erlvolt::lap_line(p, l),
                None => lap_line(l),
            };
            if self.resources {
                line.push_str(&resource_columns(l));
            }
            self.line(&line);
        }
    }

    fn progress(&mut self, l: &LapView<'_>) {
        let done = match (self.total_ops, self.total_secs) {
            (Some(n), _) if n > 0 => l.total.ops() as f64 / n as f64,
            (_, Some(s)) if s > 0.0 => l.measured.as_secs_f64() / s,
            _ => 0.0,
        }
        .clamp(0.0, 1.0);
        let width = 30;
        let filled = (done * width as f64) as usize;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r  [{}{}] {:>3.0}%  {}/s ",
            "#".repeat(filled),
            ".".repeat(width - filled),
            done * 100.0,
            group(rate(l.total.ok_ops(), l.active) as u64)
        );
        let _ = err.flush();
    }

    /// The line a test of a sequential run ends with (redis-benchmark's
    /// `-q` line for the redis workload), in every mode.
    pub fn test_line(&mut self, title: &str, s: &Snapshot, kind: usize, elapsed: Duration) {
        if let Some(k) = s.kinds.get(kind) {
            // A test that failed beyond the gate has no rate to give: one
            // line on standard error says so, none looks like a result.
            if beyond_gate(k.count(), k.errors.total(), self.gate) {
                let why = k
                    .errors
                    .server_classes
                    .first()
                    .map_or(String::new(), |(c, _)| format!(" ({c})"));
                eprintln!(
                    "{title}: {} of {} requests failed{why}, more than --max-error-rate allows: no rate",
                    percent(k.errors.total(), k.count()),
                    group(k.count())
                );
                return;
            }
            let line = redis::quiet_line(title, k, elapsed);
            match &mut self.tests_out {
                // redis-benchmark's -q lines are the run's data: one lost
                // fails the run (exit 2), as `--json` and `--csv` do.
                Some(out) => {
                    crate::out::stdout_written(writeln!(out, "{line}").and_then(|()| out.flush()))
                }
                None => self.line(&line),
            }
        }
    }

    pub fn end_laps(&mut self) {
        if self.bar && self.held.is_none() {
            let _ = writeln!(std::io::stderr());
        }
    }

    pub fn results(&mut self, r: &Results) {
        for l in &r.lines {
            self.line(l);
        }
        if !r.rows.is_empty() {
            let widths: Vec<usize> = (0..r.header.len())
                .map(|i| {
                    r.rows
                        .iter()
                        .map(|row| row.get(i).map_or(0, String::len))
                        .chain([r.header[i].len()])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let fmt_row = |row: &[String]| {
                row.iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if i == 0 {
                            format!("{c:<w$}", w = widths[i])
                        } else {
                            format!("{c:>w$}", w = widths[i])
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("  ")
            };
            self.line(&format!("  {}", fmt_row(&r.header)));
            for row in &r.rows {
                self.line(&format!("  {}", fmt_row(row)));
            }
        }
        for l in &r.footer {
            self.line(l);
        }
    }

    /// The summary of a report (see [`summary`]).
    pub fn summary(&mut self, report: &Report) -> anyhow::Result<()> {
        for l in summary(report)? {
            self.line(&l);
        }
        Ok(())
    }
}

/// What every run and every merge ends with, read from the report alone
/// (one source for a run, `merge` and what reads reports later): the
/// per-kind table, errors by kind, the overall line, the verdict on the
/// measurement (`measurement: valid`), then what the workload adds to it
/// ([`loadrig_spec::OutputStyle`]).
pub fn summary(report: &Report) -> anyhow::Result<Vec<String>> {
    let measured = report
        .measured
        .snapshot()
        .map_err(|e| anyhow::anyhow!("the report's histograms: {e}"))?;
    let kinds: Vec<&str> = report
        .measured
        .kinds
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    let style = report.spec.workload.output();
    // pgbench's numbers first, as pgbench prints them; loadrig's table after.
    let mut lines = if style.pgbench {
        pgbench::lines(report, &measured)
    } else {
        Vec::new()
    };
    lines.extend(table(&measured, &kinds, &report.measured));
    lines.extend(error_lines(&report.measured));
    lines.extend(intervals::lines(report));
    lines.extend(stages::lines(report));
    lines.push(overall(report));
    lines.push(report.validity_or_judge().line());
    // A run that failed beyond its gate prints no peer's rate line: a
    // script reading `Requests/sec`, `TPS` or `T/sec` must not take a
    // failed run for a result. The overall line above says what did
    // complete, per second, with the failures beside it.
    let m = &report.measured;
    let failed = beyond_gate(m.ops, m.errors, report.spec.max_error_rate);
    if style.net_rate {
        lines.push(net_rate(m));
        if !failed {
            lines.push(memaslap_line(m));
        }
    }
    if style.wrk {
        lines.extend(http::wrk_lines(report, !failed)?);
    }
    if style.guide_units {
        lines.push(guide_units(m));
    }
    let peer =
        style.net_rate || style.wrk || report.spec.preset.is_some() || memtier::styled(report);
    if failed && peer {
        lines.push(format!(
            "no rate in the peer's format: {} of the operations failed, more than --max-error-rate allows",
            percent(m.errors, m.ops)
        ));
    } else {
        lines.extend(erlvolt::closing(report));
        lines.extend(memtier::all_stats(report)?);
    }
    Ok(lines)
}

/// Whether `failed` of `ops` is more than the error gate (`--max-error-rate`)
/// allows.
pub fn beyond_gate(ops: u64, failed: u64, max: Option<f64>) -> bool {
    max.is_some_and(|max| ops > 0 && failed as f64 / ops as f64 > max)
}

/// `12.34%` of `all`.
fn percent(n: u64, all: u64) -> String {
    let p = if all == 0 {
        0.0
    } else {
        100.0 * n as f64 / all as f64
    };
    format!("{p:.2}%")
}

/// The load model (steady, an open loop's rate, bursts), with how the
/// run made itself punctual, if it did.
fn load_model(spec: &RunSpec) -> String {
    let model = match spec.load.pacing {
        Pacing::Steady => "steady".to_string(),
        Pacing::Rate { arrival, .. } if spec.load.stages.is_some() => {
            let n = spec.load.stages.as_ref().map_or(0, |s| s.stages.len());
            format!(
                "open loop in {n} {} {}",
                if n == 1 { "stage" } else { "stages" },
                format!("{arrival:?}").to_lowercase()
            )
        }
        Pacing::Rate { rate, arrival } => {
            format!(
                "open loop {}/s {}",
                group(rate as u64),
                format!("{arrival:?}").to_lowercase()
            )
        }
        Pacing::Burst {
            size,
            delay_ms,
            limit,
        } => format!("bursts of {size}, {delay_ms} ms apart, limit {limit}"),
    };
    let mut punctual = Vec::new();
    if spec.realtime {
        punctual.push("SCHED_FIFO".to_string());
    }
    if spec.awake {
        punctual.push("CPUs awake".to_string());
    }
    if spec.spin_secs > 0.0 {
        punctual.push(format!(
            "spin {}",
            dur(Duration::from_secs_f64(spec.spin_secs))
        ));
    }
    if punctual.is_empty() {
        model
    } else {
        format!("{model} ({})", punctual.join(", "))
    }
}

/// How operations reach the connections (direct or managed), and
/// whether through io_uring.
fn dispatch(spec: &RunSpec) -> String {
    let dispatch = match spec.load.dispatch {
        Dispatch::Direct => "direct".to_string(),
        Dispatch::Managed { queue, slots } => format!("managed (queue {queue}, {slots} slots)"),
    };
    if spec.io_uring {
        format!("{dispatch}, io_uring")
    } else {
        dispatch
    }
}

/// Who issues and who listens, counted as the workload counts them (a
/// pubsub run's subscribers are listeners, not clients of the load).
fn clients(spec: &RunSpec) -> String {
    match &spec.workload {
        WorkloadSpec::Pubsub(p) => format!(
            "{} {}, {} {}",
            group(u64::from(p.pubs)),
            plural(p.pubs, "publisher", "publishers"),
            group(u64::from(p.subs)),
            plural(p.subs, "subscriber", "subscribers"),
        ),
        WorkloadSpec::Chat(c) => format!(
            "{} clients ({} groups of {})",
            group(u64::from(c.clients())),
            group(u64::from(c.groups)),
            c.per_group
        ),
        _ => format!("{} clients", group(u64::from(spec.load.clients))),
    }
}

/// `text` when `shown`, else nothing: a header part only some runs have.
fn when(shown: bool, text: impl FnOnce() -> String) -> String {
    if shown {
        text()
    } else {
        String::new()
    }
}

/// The run's one-line header: what runs against what, the load model,
/// the clients and the stop condition, the seed.
pub fn header(spec: &RunSpec) -> String {
    let load = &spec.load;
    let model = load_model(spec);
    let dispatch = dispatch(spec);
    let clients = clients(spec);
    let conns = when(load.connections != load.clients, || {
        format!(" over {} connections", load.connections)
    });
    let pipeline = when(load.pipeline > 1, || {
        format!(", pipeline {}", load.pipeline)
    });
    let stop = match (load.stop, tests_in_turn(spec)) {
        // redis-benchmark's -n, kept by run redis: each test runs n.
        (Stop::Count(n), tests @ 2..) => format!(
            "{} ops per test, {} in all",
            group(n),
            group(n.saturating_mul(tests))
        ),
        (Stop::Count(n), _) => format!("{} ops", group(n)),
        (Stop::Seconds(s), 2..) => format!("{}s per test", fmt::secs(s)),
        (Stop::Seconds(s), _) => format!("{}s", fmt::secs(s)),
    };
    let warmup = when(spec.warmup_secs > 0.0, || {
        format!(" after {}s warm-up", fmt::secs(spec.warmup_secs))
    });
    let shard = when(load.shard.count > 1, || {
        format!(", shard {}/{}", load.shard.index, load.shard.count)
    });
    let processes = when(spec.processes > 1, || {
        format!(" in each of {} processes", spec.processes)
    });
    let preset = match spec.preset {
        Some(p) => format!("  preset {} ({})", p.label(), p.about()),
        None => String::new(),
    };
    format!(
        "loadrig {}  {} on {}  {model}, {dispatch}, {clients}{conns}{pipeline}{processes}, {stop}{warmup}, seed {}{shard}{preset}",
        env!("CARGO_PKG_VERSION"),
        spec.workload.name(),
        spec.target,
        spec.seed
    )
}

/// How many tests run one after the other, each to the stop condition
/// (run redis's tests; 1 for every other workload).
fn tests_in_turn(spec: &RunSpec) -> u64 {
    match &spec.workload {
        WorkloadSpec::Redis(r) if r.mix.is_none() => r.tests.len() as u64,
        _ => 1,
    }
}

fn plural<'a>(n: u32, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// The client's resources in a lap, as `--resources` adds them to its line:
/// CPU as a share of one core over the lap, resident memory, bytes per
/// second each way, connections up and re-established.
pub fn resource_columns(l: &LapView<'_>) -> String {
    let c = &l.client;
    let secs = l.length.as_secs_f64();
    let per_sec = |b: u64| {
        if secs > 0.0 {
            (b as f64 / secs) as u64
        } else {
            0
        }
    };
    let share = |d: Duration| {
        if secs > 0.0 {
            100.0 * d.as_secs_f64() / secs
        } else {
            0.0
        }
    };
    format!(
        "  cpu usr {:.0}% sys {:.0}%  rss {}  out {}/s in {}/s  conns {} reconn {}",
        share(c.cpu_user),
        share(c.cpu_system),
        fmt::bytes(c.rss_bytes),
        fmt::bytes(per_sec(c.bytes_sent)),
        fmt::bytes(per_sec(c.bytes_received)),
        group(c.connections),
        group(c.reconnects),
    )
}

pub fn lap_line(l: &LapView<'_>) -> String {
    let lat = l.lap.latency_all();
    let (avg, p99, max) = if lat.is_empty() {
        ("-".to_string(), "-".to_string(), "-".to_string())
    } else {
        (dur(lat.mean()), dur(lat.percentile(99.0)), dur(lat.max()))
    };
    let total = if l.warmup {
        "warm-up".to_string()
    } else {
        format!("total {}/s", group(rate(l.total.ok_ops(), l.active) as u64))
    };
    // Deliveries are not operations (docs/explanations/rates.md): their own rate, only
    // in runs that have listeners.
    let delivered = if l.total.deliveries() > 0 || l.lap.deliveries() > 0 {
        format!(
            " delivered lap {}/s total {}",
            group(rate(l.lap.deliveries(), l.length) as u64),
            group(l.total.deliveries())
        )
    } else {
        String::new()
    };
    // Single spaces: 100 columns hold a lap of a fast run.
    format!(
        "  at {:.3}s lap {}/s {total} ok {} fail {} pending {} avg {avg} p99 {p99} max {max}{delivered}",
        l.elapsed.as_secs_f64(),
        group(rate(l.lap.ok_ops(), l.length) as u64),
        group(l.total.ok_ops()),
        group(l.total.errors()),
        group(l.pending),
    )
}

const COLUMNS: [&str; 11] = [
    "count", "ok", "errors", "rate/s", "min", "avg", "p50", "p90", "p99", "p99.9", "max",
];

/// The final latency table: one row for latency, one for service time
/// (and one for send lag in the open loop), per kind; each kind's rate is over its own time when it has one (`m`).
pub fn table(s: &Snapshot, kinds: &[&str], m: &Measured) -> Vec<String> {
    let name_w = kinds.iter().map(|k| k.len()).max().unwrap_or(4).max(4);
    let mut lines = vec![format!(
        "{:<name_w$}  {:<8} {:>10} {:>10} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "kind",
        "measure",
        COLUMNS[0],
        COLUMNS[1],
        COLUMNS[2],
        COLUMNS[3],
        COLUMNS[4],
        COLUMNS[5],
        COLUMNS[6],
        COLUMNS[7],
        COLUMNS[8],
        COLUMNS[9],
        COLUMNS[10]
    )];
    let mut marked = false;
    for (i, k) in s.kinds.iter().enumerate() {
        let name = kinds.get(i).copied().unwrap_or("?");
        let secs = m
            .kinds
            .get(i)
            .map_or(m.elapsed_secs, |r| r.secs(m.elapsed_secs));
        let elapsed = loadrig_report::fmt::seconds(secs);
        // Send lag (actual send minus intended start) only where there
        // is an intended start: the open loop and bursts. In the closed
        // loop it is 0 by construction and not recorded.
        let lag = (!k.send_lag.is_empty()).then_some(("send lag", &k.send_lag));
        let rows = [("latency", &k.latency), ("service", &k.service)]
            .into_iter()
            .chain(lag);
        for (measure, h) in rows {
            let cell = |d: Duration| {
                if h.is_empty() {
                    "-".to_string()
                } else {
                    dur(d)
                }
            };
            marked |= !h.is_empty() && h.len() < samples_needed(99.9);
            // A percentile with fewer than 10 samples above it is no
            // estimate: marked, and the footnote says so (docs/explanations/validity.md).
            let pct = |p: f64| {
                let c = cell(h.percentile(p));
                match !h.is_empty() && h.len() < samples_needed(p) {
                    true => format!("{c}*"),
                    false => c,
                }
            };
            lines.push(format!(
                "{:<name_w$}  {:<8} {:>10} {:>10} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                if measure == "latency" { name } else { "" },
                measure,
                group(k.count()),
                group(k.ok),
                group(k.errors.total()),
                group(rate(k.ok, elapsed) as u64),
                cell(h.min()),
                cell(h.mean()),
                pct(50.0),
                pct(90.0),
                pct(99.0),
                pct(99.9),
                cell(h.max()),
            ));
        }
    }
    if marked {
        lines.push(format!(
            "* fewer than {ABOVE_NEEDED} samples above this percentile: a lower bound at best, not an estimate"
        ));
    }
    lines
}

/// `errors: vote: io 3, server SQLITE_BUSY 2` for kinds that had any.
pub fn error_lines(m: &Measured) -> Vec<String> {
    let mut lines = Vec::new();
    for k in &m.kinds {
        let mut parts: Vec<String> = k
            .errors
            .iter()
            .filter(|(e, n)| e != "server" && *n > 0)
            .map(|(e, n)| format!("{e} {}", group(*n)))
            .collect();
        parts.extend(
            k.server_errors
                .iter()
                .map(|(c, n)| format!("server {c} {}", group(*n))),
        );
        if !parts.is_empty() {
            lines.push(format!("errors: {}: {}", k.name, parts.join(", ")));
        }
    }
    if m.reconnects > 0 || m.connect_failures > 0 {
        lines.push(format!(
            "connections: {} re-established, {} attempts failed",
            group(m.reconnects),
            group(m.connect_failures)
        ));
    }
    lines
}

/// `net rate: ...`: bytes in and out per second of the measured time, as
/// memaslap's `Net_rate`.
pub fn net_rate(m: &Measured) -> String {
    let per_sec = |b: u64| {
        if m.elapsed_secs > 0.0 {
            (b as f64 / m.elapsed_secs) as u64
        } else {
            0
        }
    };
    format!(
        "net rate: {}/s (in {}/s, out {}/s)",
        fmt::bytes(per_sec(m.bytes_sent + m.bytes_received)),
        fmt::bytes(per_sec(m.bytes_received)),
        fmt::bytes(per_sec(m.bytes_sent)),
    )
}

/// memaslap's closing line, in its layout (the Rai DS guide's script reads
/// its seventh word, the TPS): run time, operations, operations per second
/// and bytes in and out per second in MiB.
pub fn memaslap_line(m: &Measured) -> String {
    let per_sec = |v: f64| match m.elapsed_secs > 0.0 {
        true => v / m.elapsed_secs,
        false => 0.0,
    };
    format!(
        "Run time: {:.1}s Ops: {} TPS: {:.0} Net_rate: {:.1}M/s",
        m.elapsed_secs,
        m.ops,
        per_sec(m.ok as f64),
        per_sec((m.bytes_sent + m.bytes_received) as f64) / (1024.0 * 1024.0),
    )
}

/// FoundationDB's guide's units: a transaction's point reads, writes and
/// range rows per second, from the domain counters, beside transactions
/// per second. An operation is a key read or written; keys/s counts the
/// rows range reads returned.
pub fn guide_units(m: &Measured) -> String {
    let count = |name: &str| {
        m.domains
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    };
    let rate = |n: u64| {
        if m.elapsed_secs > 0.0 {
            (n as f64 / m.elapsed_secs) as u64
        } else {
            0
        }
    };
    let (reads, ranged, writes) = (
        count("keys_read"),
        count("range_keys"),
        count("keys_written"),
    );
    let ok: u64 = m.kinds.iter().map(|k| k.ok).sum();
    let mut parts = Vec::new();
    if reads > 0 {
        parts.push(format!("{} reads/s", group(rate(reads))));
    }
    if writes > 0 {
        parts.push(format!("{} writes/s", group(rate(writes))));
    }
    if ranged > 0 {
        parts.push(format!("{} keys/s in ranges", group(rate(ranged))));
    }
    format!(
        "in the guide's units: {} transactions/s; {} = {} operations/s",
        group(rate(ok)),
        if parts.is_empty() {
            "nothing read or written".to_string()
        } else {
            parts.join(" + ")
        },
        group(rate(reads + writes + ranged))
    )
}

/// `overall: ...`; for a merged run `overall (total of K processes): ...`,
/// with the processes' peak memory summed.
pub fn overall(r: &Report) -> String {
    let m = &r.measured;
    let n = r.processes.len();
    let (label, mem) = if n == 0 {
        ("overall".to_string(), "")
    } else {
        let of = if (r.spec.processes as usize) > n {
            format!(" of {}", r.spec.processes)
        } else {
            String::new()
        };
        let noun = if n == 1 && of.is_empty() {
            "process"
        } else {
            "processes"
        };
        (format!("overall (total of {n}{of} {noun})"), " (sum)")
    };
    let fails = if m.ops == 0 {
        0.0
    } else {
        100.0 * m.errors as f64 / m.ops as f64
    };
    let interrupted = if r.interrupted { "  INTERRUPTED" } else { "" };
    let delivered = if m.delivered > 0 {
        format!(
            "  delivered {} ({}/s)",
            group(m.delivered),
            group(m.delivery_rate as u64)
        )
    } else {
        String::new()
    };
    format!(
        "{label}: {}/s  {fails:.2}% fails  {} ops{delivered}  {:.3}s  client cpu {:.0}% ({} us/op)  peak mem {}{mem}{interrupted}",
        group(m.throughput as u64),
        group(m.ops),
        m.elapsed_secs,
        r.client.cpu_percent,
        fmt::sig3(r.client.cpu_us_per_op),
        fmt::bytes(r.client.max_rss_bytes),
    )
}
