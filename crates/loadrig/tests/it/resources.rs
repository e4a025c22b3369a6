//! Resources over time (docs/resources.md): the client's CPU, memory,
//! bytes and connections kept per lap in the report and shown with
//! `--resources`.

use crate::common::{loadrig, need_server, report};

/// Every lap of a Redis run keeps the client's resources: its bytes add
/// up to the run's own byte counts (one count per socket read and write,
/// taken per thread at the lap), every lap while the load runs has all
/// its connections up, CPU and memory were read, and the lap lines carry
/// the columns only when asked.
#[test]
fn client_resources_are_kept_per_lap() {
    need_server("redis", 6379);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        "9",
        "-t",
        "set",
        "-n",
        "40000",
        "-c",
        "8",
        "--interval",
        "0.1",
        "--resources",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.contains(" at ")).collect();
    assert!(!lines.is_empty(), "{}", r.dump());
    for l in &lines {
        assert!(
            l.contains("  cpu usr ") && l.contains(" rss ") && l.contains(" conns "),
            "{l}"
        );
    }
    let rep = report(&out);
    let client: Vec<_> = rep.laps.iter().map(|l| l.client.expect("kept")).collect();
    let out_bytes: u64 = client.iter().map(|c| c.bytes_out).sum();
    let in_bytes: u64 = client.iter().map(|c| c.bytes_in).sum();
    let m = &rep.measured;
    // The laps also hold the login and the prepare's few bytes.
    assert!(
        out_bytes >= m.bytes_sent && out_bytes < m.bytes_sent + 4096,
        "{out_bytes} vs {}",
        m.bytes_sent
    );
    assert!(in_bytes >= m.bytes_received && in_bytes < m.bytes_received + 4096);
    // All but the last lap (the threads are done by then) saw 8 up.
    let (last, before) = client.split_last().unwrap();
    assert!(before.iter().all(|c| c.connections == 8), "{client:?}");
    assert_eq!(last.connections, 0);
    assert!(client
        .iter()
        .all(|c| c.rss_bytes > 1 << 20 && c.reconnects == 0));
    let cpu: f64 = client
        .iter()
        .map(|c| c.cpu_user_secs + c.cpu_system_secs)
        .sum();
    assert!(
        cpu > 0.0 && cpu <= rep.client.cpu_secs + 0.05,
        "{cpu} vs {}",
        rep.client.cpu_secs
    );

    // Without the flag the lines are as they were.
    let plain = loadrig(&[
        "run",
        "redis",
        "--target",
        "redis://127.0.0.1:6379",
        "--dbnum",
        "9",
        "-t",
        "set",
        "-n",
        "2000",
        "-c",
        "2",
    ]);
    assert_eq!(plain.code, 0, "{}", plain.dump());
    assert!(!plain.stdout.contains("cpu usr"), "{}", plain.dump());
}
