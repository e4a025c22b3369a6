//! wrk's closing block for the http workload, in wrk 4's wording and
//! number formats (its `units.c` and `print_stats`), so that scripts that
//! read wrk's output (`grep Requests/sec`) read loadrig's; with
//! `--latency`, wrk's distribution and then wrk2's "Detailed Percentile
//! spectrum" in HdrHistogram's percentile-distribution text (`.hgrm`),
//! which HdrHistogram's plotter reads. Figures come from the report alone.
//!
//! Where loadrig measures otherwise than wrk (docs/guides/http.md):
//! - Latency is loadrig's (from the intended start, so wrk2's corrected
//!   latency in the open loop), in microseconds with the fraction kept.
//! - `Req/Sec` is per thread, as wrk's, but sampled once per lap
//!   (`--interval`, 1 s) rather than every 100 ms; partial laps are left
//!   out.
//! - Requests are the responses: those that completed and those with a
//!   4xx/5xx status or a body unlike the first (wrk counts every
//!   response). Socket errors: `read` counts I/O and protocol errors
//!   (loadrig does not tell a failed write from a failed read), `connect`
//!   failed connection attempts, `timeout` requests past `--timeout`.

use loadrig_metrics::{ErrorKind, Histo};
use loadrig_report::{KindReport, Measured, Report};
use loadrig_spec::{Stop, WorkloadSpec};

/// wrk's `format_units`: divide by `scale` while the amount is at least
/// 85% of it and a larger unit follows, then `p` decimals and the unit.
fn units(n: f64, scale: f64, base: &str, names: &[&str], p: usize) -> String {
    let mut amt = n;
    let mut unit = base;
    let mut i = 0;
    while i + 1 < names.len() && amt >= scale * 0.85 {
        amt /= scale;
        unit = names[i];
        i += 1;
    }
    format!("{amt:.p$}{unit}")
}

fn time_us(n: f64) -> String {
    if n >= 1_000_000.0 {
        units(n / 1_000_000.0, 60.0, "s", &["m", "h"], 2)
    } else {
        units(n, 1000.0, "us", &["ms", "s"], 2)
    }
}

fn time_s(n: f64) -> String {
    units(n, 60.0, "s", &["m", "h"], 0)
}

fn metric(n: f64) -> String {
    units(n, 1000.0, "", &["k", "M", "G", "T", "P"], 2)
}

fn binary(n: f64) -> String {
    units(n, 1024.0, "", &["K", "M", "G", "T", "P"], 2)
}

/// wrk's `print_units`: right-aligned in `width`, two spaces of it left
/// for the unit, less the letters the unit takes.
fn cell(msg: &str, width: usize) -> String {
    let b = msg.as_bytes();
    let alpha = |i: usize| b.len() >= i && b[b.len() - i].is_ascii_alphabetic();
    let pad = 2 - usize::from(alpha(1)) - usize::from(alpha(2));
    let w = width - pad;
    let shown: String = msg.chars().take(w).collect();
    format!("{shown:>w$}{}", &"  "[..pad])
}

/// Mean, standard deviation (of a sample, as wrk), max, and the share of
/// values within one deviation of the mean, in percent.
struct Stats {
    mean: f64,
    stdev: f64,
    max: f64,
    within: f64,
}

impl Stats {
    /// From (value, count) pairs.
    fn of(values: &[(f64, u64)]) -> Stats {
        let n: u64 = values.iter().map(|v| v.1).sum();
        if n == 0 {
            return Stats {
                mean: 0.0,
                stdev: 0.0,
                max: 0.0,
                within: 0.0,
            };
        }
        let mean = values.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / n as f64;
        let stdev = if n < 2 {
            0.0
        } else {
            let sq: f64 = values
                .iter()
                .map(|(v, c)| (v - mean).powi(2) * *c as f64)
                .sum();
            (sq / (n - 1) as f64).sqrt()
        };
        let max = values.iter().map(|v| v.0).fold(0.0, f64::max);
        let inside: u64 = values
            .iter()
            .filter(|(v, _)| (v - mean).abs() <= stdev)
            .map(|v| v.1)
            .sum();
        Stats {
            mean,
            stdev,
            max,
            within: 100.0 * inside as f64 / n as f64,
        }
    }

    fn line(&self, name: &str, fmt: fn(f64) -> String) -> String {
        format!(
            "    {name:<10}{}{}{}{:8.2}%",
            cell(&fmt(self.mean), 8),
            cell(&fmt(self.stdev), 10),
            cell(&fmt(self.max), 9),
            self.within
        )
    }
}

/// Each recorded latency in microseconds, with its count.
fn latencies_us(h: &Histo) -> Vec<(f64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let inner = h.inner();
    inner
        .iter_recorded()
        .map(|v| {
            let ns = inner.median_equivalent(v.value_iterated_to());
            (ns as f64 / 1e3, v.count_at_value())
        })
        .collect()
}

fn errors(k: &KindReport, kind: ErrorKind) -> u64 {
    k.errors
        .iter()
        .find(|(e, _)| e == kind.name())
        .map_or(0, |(_, n)| *n)
}

/// wrk's first lines: the test's length and target, threads and
/// connections (over every process), and the stats table's heads.
fn opening(r: &Report, procs: u64) -> Vec<String> {
    let secs = match r.spec.load.stop {
        Stop::Seconds(s) => s,
        Stop::Count(_) => r.measured.elapsed_secs,
    };
    vec![
        format!("Running {} test @ {}", time_s(secs), r.spec.target),
        format!(
            "  {} threads and {} connections",
            r.spec.threads as u64 * procs,
            u64::from(r.spec.load.connections) * procs
        ),
        format!(
            "  Thread Stats{:>6}{:>11}{:>8}{:>12}",
            "Avg", "Stdev", "Max", "+/- Stdev"
        ),
    ]
}

/// Every kind's latency added into one histogram.
fn all_latency(m: &Measured) -> anyhow::Result<Histo> {
    let mut latency = Histo::new();
    for k in &m.kinds {
        let h = k
            .latency
            .histogram()
            .map_err(|e| anyhow::anyhow!("the report's histograms: {e}"))?;
        latency.add(&h);
    }
    Ok(latency)
}

/// Per-thread rates, one sample per whole lap of the measured time.
fn thread_rates(r: &Report, procs: u64) -> Vec<(f64, u64)> {
    let interval = r.spec.interval_secs;
    let threads = (r.spec.threads as u64 * procs) as f64;
    r.laps
        .iter()
        .filter(|l| !l.warmup && l.length_secs >= 0.5 * interval && l.length_secs > 0.0)
        .map(|l| ((l.ok + l.errors) as f64 / l.length_secs / threads, 1))
        .collect()
}

/// `--latency`'s lines: wrk's distribution, then wrk2's spectrum.
fn distribution(latency: &Histo) -> Vec<String> {
    let mut out = vec!["  Latency Distribution".to_string()];
    for p in [50.0, 75.0, 90.0, 99.0] {
        let us = if latency.is_empty() {
            0.0
        } else {
            latency.percentile(p).as_nanos() as f64 / 1e3
        };
        out.push(format!("{p:7.0}%{}", cell(&time_us(us), 10)));
    }
    out.push(String::new());
    out.push("  Detailed Percentile spectrum:".to_string());
    out.extend(hgrm(latency, 5, 1e6));
    out
}

/// The responses and the failures, counted as wrk counts them.
struct Answers {
    /// Responses: completed, with a 4xx/5xx status, or a body unlike the first.
    answered: u64,
    non_2xx: u64,
    /// I/O and protocol errors.
    read: u64,
    timeout: u64,
}

impl Answers {
    fn of(m: &Measured) -> Answers {
        let (mut answered, mut non_2xx, mut read, mut timeout) = (0, 0, 0, 0);
        for k in &m.kinds {
            answered += k.ok + errors(k, ErrorKind::Server) + errors(k, ErrorKind::Verification);
            non_2xx += errors(k, ErrorKind::Server);
            read += errors(k, ErrorKind::Io) + errors(k, ErrorKind::Protocol);
            timeout += errors(k, ErrorKind::Timeout);
        }
        Answers {
            answered,
            non_2xx,
            read,
            timeout,
        }
    }
}

/// wrk's closing lines: requests and bytes read, the socket errors and
/// non-2xx responses if any, then (`with_rates`) the rates.
fn closing(m: &Measured, with_rates: bool) -> Vec<String> {
    let a = Answers::of(m);
    let connect = m.connect_failures;
    let mut out = vec![format!(
        "  {} requests in {}, {}B read",
        a.answered,
        time_us(m.elapsed_secs * 1e6),
        binary(m.bytes_received as f64)
    )];
    if connect + a.read + a.timeout > 0 {
        out.push(format!(
            "  Socket errors: connect {connect}, read {}, write 0, timeout {}",
            a.read, a.timeout
        ));
    }
    if a.non_2xx > 0 {
        out.push(format!("  Non-2xx or 3xx responses: {}", a.non_2xx));
    }
    let per_sec = |n: f64| {
        if m.elapsed_secs > 0.0 {
            n / m.elapsed_secs
        } else {
            0.0
        }
    };
    if with_rates {
        out.push(format!("Requests/sec: {:9.2}", per_sec(m.ok as f64)));
        out.push(format!(
            "Transfer/sec: {:>10}B",
            binary(per_sec(m.bytes_received as f64))
        ));
    }
    out
}

/// The block wrk prints, from `Running ...` to `Transfer/sec:`.
/// `with_rates`: with its closing rates (`Requests/sec`, over successful
/// requests only; `Transfer/sec`), left out for a run that failed beyond
/// its error gate.
pub fn wrk_lines(r: &Report, with_rates: bool) -> anyhow::Result<Vec<String>> {
    let WorkloadSpec::Http(own) = &r.spec.workload else {
        return Ok(Vec::new());
    };
    let m = &r.measured;
    let procs = u64::from(r.spec.processes.max(1));
    let mut out = opening(r, procs);
    let latency = all_latency(m)?;
    out.push(Stats::of(&latencies_us(&latency)).line("Latency", time_us));
    out.push(Stats::of(&thread_rates(r, procs)).line("Req/Sec", metric));
    if own.latency {
        out.extend(distribution(&latency));
    }
    out.extend(closing(m, with_rates));
    Ok(out)
}

/// HdrHistogram's percentile distribution (the C library's classic
/// format, as wrk2 prints it): a header, a line per percentile step
/// (`ticks` per halving of the distance to 100%), values divided by
/// `scale` (ns to ms: 1e6), and the footer.
pub fn hgrm(h: &Histo, ticks: u32, scale: f64) -> Vec<String> {
    let mut out = vec![
        format!(
            "{:>12} {:>12} {:>12} {:>12}",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        ),
        String::new(),
    ];
    if h.is_empty() {
        return out;
    }
    let inner = h.inner();
    let digits = usize::from(inner.sigfig());
    let mut total = 0u64;
    for v in inner.iter_quantiles(ticks) {
        total += v.count_since_last_iteration();
        let value = inner.highest_equivalent(v.value_iterated_to()) as f64 / scale;
        let q = v.quantile_iterated_to();
        let inverted = 1.0 / (1.0 - q);
        let inverted = if inverted.is_finite() {
            format!("{inverted:12.2}")
        } else {
            format!("{:>12}", "inf")
        };
        out.push(format!("{value:12.digits$} {q:12.6} {total:12} {inverted}"));
    }
    let mean = inner.mean() / scale;
    let stdev = inner.stdev() / scale;
    let max = inner.max() as f64 / scale;
    let buckets = usize::from(inner.buckets());
    // The counts array holds (buckets + 1) half-buckets of sub-buckets.
    let sub_buckets = 2 * inner.distinct_values() / (buckets + 1);
    out.push(format!(
        "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]"
    ));
    out.push(format!(
        "#[Max     = {max:12.3}, Total count    = {:12}]",
        inner.len()
    ));
    out.push(format!(
        "#[Buckets = {buckets:12}, SubBuckets     = {sub_buckets:12}]"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_wrk_writes_them() {
        assert_eq!(time_us(474.6), "474.60us");
        assert_eq!(time_us(1004.0), "1.00ms");
        assert_eq!(time_us(849.0), "849.00us");
        assert_eq!(time_us(850.0), "0.85ms");
        assert_eq!(time_us(3_030_000.0), "3.03s");
        assert_eq!(time_s(3.0), "3s");
        assert_eq!(time_s(120.0), "2m");
        assert_eq!(metric(33_900.0), "33.90k");
        assert_eq!(metric(500.0), "500.00");
        assert_eq!(binary(32.44 * 1024.0 * 1024.0), "32.44M");
        assert_eq!(cell("1.00ms", 8), "  1.00ms");
        assert_eq!(cell("33.90k", 8), " 33.90k ");
        assert_eq!(cell("500.00", 9), " 500.00  ");
    }

    #[test]
    fn stats_lines_have_wrks_columns() {
        let s = Stats::of(&[(1000.0, 3), (2000.0, 1)]);
        assert_eq!(s.mean, 1250.0);
        assert_eq!(s.within, 75.0);
        assert_eq!(
            s.line("Latency", time_us),
            "    Latency     1.25ms  500.00us   2.00ms   75.00%"
        );
    }

    #[test]
    fn the_spectrum_ends_at_100_percent() {
        let mut h = Histo::new();
        for us in 1..=1000u64 {
            h.record(std::time::Duration::from_micros(us));
        }
        let lines = hgrm(&h, 5, 1e6);
        assert_eq!(
            lines[0],
            "       Value   Percentile   TotalCount 1/(1-Percentile)"
        );
        let last = &lines[lines.len() - 4];
        assert!(
            last.ends_with(" 1.000000         1000          inf"),
            "{last}"
        );
        assert!(lines[lines.len() - 2].starts_with("#[Max     =        1.000"));
        assert!(lines[lines.len() - 1].contains("SubBuckets     =         2048"));
    }
}
