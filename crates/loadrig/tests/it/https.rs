//! HTTPS over HTTP/1.1 on the real nginx of `scripts/services up
//! nginx-tls` (the test CA's certificate; 8443 offers h2 and http/1.1 by
//! ALPN, 8444 http/1.1 alone): GET over both ports and PUT verified, a
//! certificate no trusted root signed refused in one line naming
//! `--cacert` and `--insecure`, `--insecure` accepting it, the TLS
//! handshake kept out of request latency (a relay holds every server
//! hello), connections the server closes reopened with their TLS session
//! resumed, and `loadrig wrk https://...`.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use crate::common::{
    assert_all_ok, assert_verified, domain, loadrig, need_server, own_server, run_reported,
};

const BOTH: &str = "https://127.0.0.1:8443,8444/";
const DAV: &str = "https://localhost:8443,8444/dav/";

/// The test CA's certificate (or the other CA's), as scripts/services
/// made it.
fn cert(file: &str) -> String {
    let state = std::env::var("LOADRIG_STATE_DIR").unwrap_or_else(|_| "/var/lib/loadrig".into());
    let path = PathBuf::from(state).join("tls").join(file);
    assert!(
        path.exists(),
        "{} is missing: make it with `scripts/services up nginx-tls`",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn nginx_tls() {
    for port in [8443, 8444] {
        need_server("nginx-tls", port);
    }
}

#[test]
fn https_get_and_put_are_verified() {
    nginx_tls();
    let ca = cert("ca.pem");
    let (r, report) = run_reported(&[
        "run", "http", "-q", "-n", "4000", "-c", "4", "-P", "2", "--cacert", &ca, BOTH,
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 4000);
    assert_verified(&r, &report);
    assert!(
        r.stdout
            .contains("and each of 2 servers serves it afterwards"),
        "{}",
        r.dump()
    );
    let (r, report) = run_reported(&[
        "run", "http", "-q", "--method", "PUT", "-n", "2000", "-c", "4", "--seed", "4601",
        "--cacert", &ca, DAV,
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 2000);
    assert_verified(&r, &report);
    assert!(
        r.stdout
            .contains("2,000 of 2,000 paths under /dav/loadrig-4601/"),
        "{}",
        r.dump()
    );
}

#[test]
fn a_certificate_no_trusted_root_signed_is_one_line_naming_the_flags() {
    nginx_tls();
    for trust in [vec![], vec!["--cacert".to_string(), cert("other-ca.pem")]] {
        let mut args = vec!["run", "http", "-q", "-n", "100", "https://127.0.0.1:8443/"];
        args.extend(trust.iter().map(String::as_str));
        let r = loadrig(&args);
        assert_eq!(r.code, 3, "{}", r.dump());
        let errors: Vec<&str> = r.stderr.lines().filter(|l| l.contains("error: ")).collect();
        assert_eq!(errors.len(), 1, "one error line\n{}", r.dump());
        assert!(
            errors[0].contains("cannot reach https://127.0.0.1:8443/")
                && errors[0].contains("TLS: invalid peer certificate: UnknownIssuer")
                && errors[0].ends_with("--cacert FILE trusts its CA, --insecure skips the check)"),
            "{}",
            r.dump()
        );
    }
    let (r, report) = run_reported(&[
        "run",
        "http",
        "-q",
        "-n",
        "500",
        "--insecure",
        "--cacert",
        &cert("other-ca.pem"),
        "https://127.0.0.1:8443/",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 500);
}

/// A relay to nginx's 8444 that holds the server's first bytes (its
/// hello) for `hold`, then moves bytes both ways at once.
fn slow_handshakes(hold: Duration) -> u16 {
    let (port, _done) = own_server(move |client, _| {
        let Ok(server) = TcpStream::connect(("127.0.0.1", 8444)) else {
            return;
        };
        let (mut up_from, mut up_to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut up_from, &mut up_to);
            let _ = up_to.shutdown(Shutdown::Write);
        });
        let (mut down_from, mut down_to) = (server, client);
        let mut buf = [0u8; 16 * 1024];
        let mut first = true;
        while let Ok(n @ 1..) = down_from.read(&mut buf) {
            if std::mem::take(&mut first) {
                std::thread::sleep(hold);
            }
            if down_to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = down_to.shutdown(Shutdown::Write);
    });
    port
}

#[test]
fn the_handshake_is_connect_time_not_request_latency() {
    nginx_tls();
    let hold = Duration::from_millis(400);
    let port = slow_handshakes(hold);
    let url = format!("https://127.0.0.1:{port}/");
    let (r, report) = run_reported(&[
        "run",
        "http",
        "-q",
        "-n",
        "400",
        "-c",
        "4",
        "--cacert",
        &cert("ca.pem"),
        &url,
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 400);
    // Every connection's handshake waited 400 ms for the server's hello;
    // no request did.
    let max_us = report.measured.kinds[0].latency.max_us;
    assert!(
        max_us < hold.as_micros() as f64 / 2.0,
        "a request waited for a handshake: max latency {max_us} us\n{}",
        r.dump()
    );
}

#[test]
fn connections_the_server_closes_resume_their_tls_session() {
    nginx_tls();
    // nginx-tls's /close/ answers every request with `Connection: close`.
    let (r, report) = run_reported(&[
        "run",
        "http",
        "-q",
        "-n",
        "300",
        "-c",
        "2",
        "--cacert",
        &cert("ca.pem"),
        "https://127.0.0.1:8443/close/",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_all_ok(&r, &report, 300);
    let (reopened, resumed) = (domain(&report, "reopened"), domain(&report, "resumed"));
    assert!(reopened >= 290, "reopened {reopened}\n{}", r.dump());
    // A reconnect resumes when a ticket is in the cache: nginx sends
    // them after each handshake, and a connection may close before its
    // ticket is read (2 of 298 in a run).
    assert!(
        resumed * 100 >= reopened * 95,
        "resumed {resumed} of {reopened}\n{}",
        r.dump()
    );
    assert!(
        r.stdout.contains(&format!(
            "loadrig reopened: {reopened} ({resumed} resumed their TLS session)"
        )),
        "{}",
        r.dump()
    );
}

#[test]
fn wrk_takes_https_urls_and_loadrigs_tls_flags() {
    nginx_tls();
    let r = loadrig(&[
        "wrk",
        "-t1",
        "-c8",
        "-d1s",
        "--cacert",
        &cert("ca.pem"),
        "https://127.0.0.1:8443/index.html",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(
        r.stdout.contains(
            "Running 1s test @ https://127.0.0.1:8443/index.html\n  1 threads and 8 connections\n"
        ),
        "{}",
        r.dump()
    );
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .unwrap();
    let rate: f64 = line.split(':').nth(1).unwrap().trim().parse().unwrap();
    assert!(rate > 0.0, "{line}");
    // As wrk, with no certificate check.
    let r = loadrig(&[
        "wrk",
        "-c2",
        "-d1s",
        "--insecure",
        "https://127.0.0.1:8444/",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
}
