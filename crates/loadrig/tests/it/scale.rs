//! Many connections at a small cost each (issue #21, docs/scale.md): a
//! scaled-down run of 2,000 connections against the real Redis, every
//! request answered, verified, and the client's peak memory under a bound
//! taken from measurement. The full sizes are in bench/scale.

use crate::common::{assert_all_ok, assert_verified, need_server, run_reported};

/// Peak resident memory allowed for 2,000 Redis connections: measured at
/// about 20 MiB (some 10 MiB of binary and runtime, then about 5 KiB a
/// connection; docs/scale.md), against 266 MiB when each connection kept
/// its own histograms and 16 KiB buffers. Twice the measurement, so a
/// noisy machine does not fail it and a return to per-connection
/// histograms (over 100 KiB each) does.
const PEAK_BOUND: u64 = 40 << 20;

#[test]
fn two_thousand_redis_connections_all_ok_in_little_memory() {
    need_server("redis", 6379);
    let (r, report) = run_reported(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        "12",
        "--tests",
        "set,get",
        "-c",
        "2000",
        "-n",
        "40000",
        "-q",
        "--max-error-rate",
        "0",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 80_000);
    assert_verified(&r, &report);
    let peak = report.client.max_rss_bytes;
    assert!(
        peak > 0 && peak < PEAK_BOUND,
        "peak memory {} MiB, bound {} MiB\n{}",
        peak >> 20,
        PEAK_BOUND >> 20,
        r.dump()
    );
}
