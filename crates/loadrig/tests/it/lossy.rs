//! Lost writes are caught in every mode: by count, by time, with a
//! warm-up, over processes. A proxy of the test's own (`common::lossy`)
//! sits in front of a server of the test's own and sends every tenth write
//! under another key, so each write is acknowledged and the server's own
//! counters add up, but a tenth of the keys written are not there. Each
//! mode runs once through the proxy (verification fails, exit 1, the
//! missing keys counted) and once straight to the server (it passes, every
//! key accounted for), so a check that could not fail would show.

use crate::common::lossy::{Harm, Lossy, Proto};
use crate::common::{check_of, run_reported, verdict};
use crate::memcache::own_memcached;
use crate::redis::own_redis;

/// The modes every writing workload is checked in.
const MODES: &[&[&str]] = &[
    &["-n", "4000"],
    &["-d", "1"],
    &["-n", "3000", "--warmup", "0.5"],
    &["-d", "1", "--warmup", "0.5"],
    &["-d", "1", "--processes", "2"],
];

/// `args` in `mode` against `url`: the verdict's `check` as (expected,
/// found), and whether the run passed.
fn judged(args: &[&str], mode: &[&str], url: &str, check: &str) -> (Option<(i64, i64)>, bool) {
    let mut all = args.to_vec();
    all.extend(["--target", url]);
    all.extend(mode);
    let (r, report) = run_reported(&all);
    let passed = verdict(&report).passed == Some(true);
    assert_eq!(
        r.code,
        if passed { 0 } else { 1 },
        "{mode:?} on {url}\n{}",
        r.dump()
    );
    assert!(
        report.measured.ok > 0,
        "{mode:?}: nothing written\n{}",
        r.dump()
    );
    (check_of(&report, check), passed)
}

#[test]
fn lost_redis_writes_fail_verification_in_every_mode() {
    let server = own_redis();
    let proxy = Lossy::start(server.port, Proto::Resp, 10, Harm::Key);
    let args = ["run", "redis", "--tests", "set", "-r", "1000000", "-c", "4"];
    let direct = format!("redis://127.0.0.1:{}", server.port);
    let lossy = format!("redis://127.0.0.1:{}", proxy.port);
    let check = "keys written (SET/MSET) and missing";
    for mode in MODES {
        let (found, passed) = judged(&args, mode, &direct, check);
        assert!(passed, "{mode:?} straight to Redis: {found:?}");
        assert_eq!(found, Some((0, 0)), "{mode:?} straight to Redis");
        let lost_before = proxy.lost.load(std::sync::atomic::Ordering::Relaxed);
        let (found, passed) = judged(&args, mode, &lossy, check);
        let lost = proxy.lost.load(std::sync::atomic::Ordering::Relaxed) - lost_before;
        assert!(!passed, "{mode:?}: {lost} writes lost and verified ok");
        // Keys drawn twice may hide a loss; at least half of the lost
        // ones are missing.
        let missing = found.map_or(0, |(_, f)| f);
        assert!(
            lost > 10 && missing * 2 >= lost as i64 && missing <= lost as i64,
            "{mode:?}: {lost} lost, {missing} found missing"
        );
    }
}

#[test]
fn lost_memcached_writes_fail_verification_in_every_mode() {
    let server = own_memcached();
    let proxy = Lossy::start(server.port, Proto::MemcacheText, 10, Harm::Key);
    // Small values, so that memcached evicts nothing that would excuse
    // a missing key.
    let args = [
        "run",
        "memcache",
        "--ratio",
        "1:1",
        "--value-size",
        "32",
        "-c",
        "4",
    ];
    let direct = format!("memcache://127.0.0.1:{}", server.port);
    let lossy = format!("memcache://127.0.0.1:{}", proxy.port);
    let check = "keys stored and absent (beyond evictions)";
    for mode in MODES {
        let (found, passed) = judged(&args, mode, &direct, check);
        assert!(passed, "{mode:?} straight to memcached: {found:?}");
        assert_eq!(found, Some((0, 0)), "{mode:?} straight to memcached");
        let (found, passed) = judged(&args, mode, &lossy, check);
        assert!(!passed, "{mode:?}: writes lost and verified ok");
        let missing = found.map_or(0, |(_, f)| f);
        assert!(missing > 0, "{mode:?}: none found missing");
    }
}

/// kv on Redis over 100 rows, each written many times: every write
/// transaction's first row goes elsewhere, so the row keeps an earlier
/// write's value where that transaction was its last writer (about a
/// tenth of the rows). Only the order of the writes tells: the row
/// holds a value some acknowledged transaction wrote, but one answered
/// before another acknowledged write of that row was sent.
#[test]
fn dropped_kv_overwrites_fail_verification_in_every_mode() {
    let server = own_redis();
    // kv's write10 is one MSET of 10 keys; its load and clean-up carry
    // 100, so the dataset itself stays whole.
    let proxy = Lossy::start(server.port, Proto::RespMset(10), 1, Harm::Key);
    let args = ["run", "kv", "--test", "write10", "--rows", "100", "-c", "4"];
    let direct = format!("redis://127.0.0.1:{}", server.port);
    let lossy = format!("redis://127.0.0.1:{}", proxy.port);
    let check = "acknowledged overwrites missing (the row holds an earlier write's value)";
    for mode in MODES {
        let (found, passed) = judged(&args, mode, &direct, check);
        assert!(passed, "{mode:?} straight to Redis: {found:?}");
        assert_eq!(found, Some((0, 0)), "{mode:?} straight to Redis");
        let (found, passed) = judged(&args, mode, &lossy, check);
        let lost = proxy.lost.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            !passed,
            "{mode:?}: overwrites dropped ({lost} so far) and verified ok: {found:?}"
        );
        let stale = found.map_or(0, |(_, f)| f);
        assert!(stale > 0, "{mode:?}: no row found stale");
    }
}

/// A store that keeps every key but changes some values is caught by the
/// after-run comparison of the values (Redis's `key:*` read back,
/// memcached's sample), by count and by time.
#[test]
fn changed_values_fail_verification() {
    let redis = own_redis();
    let memcached = own_memcached();
    let harmed = [
        (
            Lossy::start(redis.port, Proto::Resp, 10, Harm::Value),
            "redis",
            &["run", "redis", "--tests", "set", "-r", "1000000", "-c", "4"][..],
            "keys written holding other data",
        ),
        (
            Lossy::start(memcached.port, Proto::MemcacheText, 10, Harm::Value),
            "memcache",
            &[
                "run",
                "memcache",
                "--ratio",
                "1:0",
                "--value-size",
                "32",
                "-c",
                "4",
            ][..],
            "keys read back holding another value",
        ),
    ];
    for (proxy, scheme, args, check) in &harmed {
        let url = format!("{scheme}://127.0.0.1:{}", proxy.port);
        for mode in [&["-n", "3000"][..], &["-d", "1"]] {
            let (found, passed) = judged(args, mode, &url, check);
            assert!(!passed, "{scheme} {mode:?}: changed values verified ok");
            assert!(
                found.is_some_and(|(want, got)| want == 0 && got > 0),
                "{scheme} {mode:?}: {found:?}"
            );
        }
    }
}
