//! What the http workload checks after a run, and how it cleans up.
//!
//! A `GET`: no body during the run differed from the first one seen, and
//! afterwards every server still serves that body (so several ports are
//! checked to serve the same content). A `PUT`: every path the run may
//! have written is read back (`GET`), on each server until found; every
//! acknowledged `PUT` must be there with its body, up to the ones in
//! doubt (sent, and the connection failed before the answer, or a server
//! error). Which paths were written is recomputed from the indices the run
//! issued (the counts' spans), in every mode.
//! Clean-up deletes the run's directory on every server.
//!
//! Responses are read as during the run ([`Reader`]): bodies hashed as
//! they stream, never held whole.

use std::time::Duration;

use loadrig_metrics::{Check, ErrorKind, Snapshot};
use loadrig_report::fmt::group;

use super::load::{Load, DOMAINS, REOPENED, RESUMED};
use super::response::{Reader, Response};
use super::HttpBackend;
use crate::stream::ByteStream;
use crate::{Results, TargetError, Verdict};

/// How long a cold-path exchange may take.
const COLD_TIMEOUT: Duration = Duration::from_secs(30);

/// Requests in flight while reading back.
const BATCH: usize = 64;

fn failed(label: &str, what: &str, why: impl std::fmt::Display) -> TargetError {
    TargetError::Prepare {
        target: label.to_string(),
        reason: format!("{what}: {why}"),
    }
}

/// One response read back: its status and, for a `200`, its body's
/// (length, hash).
struct Got {
    status: u16,
    print: Option<(u64, u64)>,
}

/// A cold-path connection to one server, opened when first needed. A
/// keep-alive connection ends when the server says so (nginx closes one
/// after `keepalive_requests`, 1,000 by default) or after an idle
/// timeout: the requests it left unanswered are sent again on a new one.
/// They are `GET`s and `DELETE`s of the run's own paths, which a second
/// try leaves as one would.
struct Cold<'a, B: HttpBackend> {
    backend: &'a B,
    server: usize,
    authority: String,
    conn: Option<B::Conn>,
    reader: Reader,
    /// The connection open now has answered: a close after that is the
    /// end of a keep-alive connection, one before it a failure (else a
    /// server that closes at once would be reopened forever).
    answered: bool,
}

/// Why reading a response stopped short.
enum Cut {
    /// The server closed the connection (or reset it).
    Closed,
    Failed(String),
}

impl<'a, B: HttpBackend> Cold<'a, B> {
    fn new(backend: &'a B, server: usize) -> Self {
        Cold {
            backend,
            server,
            authority: backend.authority(server),
            conn: None,
            reader: Reader::new(false, true),
            answered: false,
        }
    }

    /// Send `requests` (method, path), in order, and read one response to
    /// each within `limit`.
    async fn exchange(
        &mut self,
        what: &str,
        requests: &[(&str, String)],
        limit: Duration,
    ) -> Result<Vec<Got>, TargetError> {
        match tokio::time::timeout(limit, self.each(what, requests)).await {
            Ok(got) => got,
            Err(_) => {
                // Requests are left unanswered on it.
                self.conn = None;
                let why = format!("no answer in {:.1} s", limit.as_secs_f64());
                Err(failed(&self.backend.label(), what, why))
            }
        }
    }

    async fn each(
        &mut self,
        what: &str,
        requests: &[(&str, String)],
    ) -> Result<Vec<Got>, TargetError> {
        let mut got = Vec::with_capacity(requests.len());
        if let Some(c) = &mut self.conn {
            write(c, &self.authority, requests);
        }
        while got.len() < requests.len() {
            if self.conn.is_none() {
                let rest = requests.get(got.len()..).unwrap_or_default();
                self.open(rest).await?;
            }
            let Some(c) = &mut self.conn else {
                continue;
            };
            match next(c, &mut self.reader).await {
                Ok(r) => {
                    got.push(Got {
                        status: r.status,
                        print: r.print,
                    });
                    self.answered = true;
                    if !r.keep_alive {
                        self.conn = None;
                    }
                }
                Err(Cut::Closed) if self.answered => self.conn = None,
                Err(cut) => {
                    self.conn = None;
                    let why = match cut {
                        Cut::Closed => "the server closed the connection unanswered".to_string(),
                        Cut::Failed(why) => why,
                    };
                    return Err(failed(&self.backend.label(), what, why));
                }
            }
        }
        Ok(got)
    }

    /// A new connection, with `requests` written to it.
    async fn open(&mut self, requests: &[(&str, String)]) -> Result<(), TargetError> {
        let mut c = self.backend.connect_to(self.server).await?;
        write(&mut c, &self.authority, requests);
        self.reader.reset();
        self.answered = false;
        self.conn = Some(c);
        Ok(())
    }
}

fn write<C: ByteStream>(c: &mut C, authority: &str, requests: &[(&str, String)]) {
    for (method, path) in requests {
        request(c.out(), method, path, authority);
    }
}

/// The next whole response on `c`, its body hashed as it came.
async fn next<C: ByteStream>(c: &mut C, reader: &mut Reader) -> Result<Response, Cut> {
    loop {
        match reader.read(c.input()) {
            Ok(Some(r)) => return Ok(r),
            Ok(None) => {}
            Err(e) => return Err(Cut::Failed(format!("not an HTTP response ({e})"))),
        }
        match c.fill().await {
            Ok(()) => {}
            Err(e) if e.kind == ErrorKind::Io => return Err(Cut::Closed),
            Err(e) => return Err(Cut::Failed(format!("{} error", e.kind.name()))),
        }
    }
}

fn request(out: &mut bytes::BytesMut, method: &str, path: &str, authority: &str) {
    out.extend_from_slice(
        format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes(),
    );
}

/// `timeout` is the run's `--timeout`, for each server's body afterwards.
pub(super) async fn verify<B: HttpBackend>(
    backend: &B,
    load: &Load,
    timeout: Duration,
    counted: &Snapshot,
) -> Result<Verdict, TargetError> {
    let wrong = counted
        .kinds
        .first()
        .map_or(0, |k| k.errors.get(ErrorKind::Verification)) as i64;
    if load.put {
        return verify_puts(backend, load, counted, wrong).await;
    }
    let mut checks = Vec::new();
    let mut said = Vec::new();
    if load.get {
        checks.push(Check::new(
            "GET bodies unlike the first one the run saw",
            0,
            wrong,
        ));
        // Each server's body now; the reference is the first the run saw,
        // else (a `--processes` parent, whose children saw the bodies)
        // the first server's.
        let mut now = Vec::new();
        let get = [("GET", backend.path().to_string())];
        for s in 0..backend.servers() {
            // A server that does not answer with a body now does not serve
            // the first one: counted, not a reason to stop. Within the
            // run's --timeout: a server that answered nothing during the
            // run need not be waited for longer now.
            let got = Cold::new(backend, s).exchange("GET", &get, timeout).await;
            let first = got.ok().and_then(|g| g.into_iter().next());
            now.push(first.and_then(|g| (g.status == 200).then_some(g.print).flatten()));
        }
        match load.first().or_else(|| now.first().copied().flatten()) {
            Some(first) => {
                let unlike = now.iter().filter(|p| **p != Some(first)).count();
                checks.push(Check::new(
                    "servers whose body afterwards is unlike the first seen",
                    0,
                    unlike as i64,
                ));
                said.push(format!(
                    "every 200 body was the first one seen ({} bytes), and each of {} servers \
                     serves it afterwards",
                    group(first.0),
                    backend.servers()
                ));
            }
            None => said.push("no 200 response, no body to compare".to_string()),
        }
    } else {
        said.push(format!(
            "{} requests: statuses counted, nothing to read back",
            load.spec.method
        ));
    }
    Ok(Verdict::from_checks(checks, said.join("; ")))
}

/// The indices whose `PUT` paths may hold a body: every index the run
/// issued, recomputed from its spans in every mode (by count or by time,
/// warm-up, every process); `None` when the counts carry no spans (a
/// report written before they were kept).
fn written(counted: &Snapshot) -> Option<Vec<u64>> {
    let any = counted.kinds.first().is_some_and(|k| k.count() > 0);
    if counted.spans.is_empty() && any {
        return None;
    }
    let mut all: Vec<u64> = counted.spans.iter().flat_map(|s| s.indices()).collect();
    all.sort_unstable();
    Some(all)
}

async fn verify_puts<B: HttpBackend>(
    backend: &B,
    load: &Load,
    counted: &Snapshot,
    wrong: i64,
) -> Result<Verdict, TargetError> {
    let (ok, failed_puts) = counted
        .kinds
        .first()
        .map_or((0, 0), |k| (k.ok as i64, (k.count() - k.ok) as i64));
    let Some(indices) = written(counted) else {
        return Ok(Verdict::skipped(
            "which paths were written is not known (a report without the indices issued): not read back",
        ));
    };
    let label = backend.label();
    // Per index: found with its body (Some(true)), with another (Some(false)).
    let mut found: Vec<Option<bool>> = vec![None; indices.len()];
    for s in 0..backend.servers() {
        let todo: Vec<usize> = (0..indices.len())
            .filter(|&i| found[i] != Some(true))
            .collect();
        if todo.is_empty() {
            break;
        }
        let mut cold = Cold::new(backend, s);
        for batch in todo.chunks(BATCH) {
            let gets: Vec<(&str, String)> = batch
                .iter()
                .map(|&i| ("GET", format!("{}{}", load.dir, indices[i])))
                .collect();
            let got = cold.exchange("GET", &gets, COLD_TIMEOUT).await?;
            for (&i, g) in batch.iter().zip(got) {
                // Bodies compared as the run compares them: by length and
                // hash, computed as they streamed in.
                let matches = g.print == Some(load.print(indices[i]));
                match g.status {
                    200 => found[i] = Some(matches || found[i] == Some(true)),
                    404 => {}
                    s => return Err(failed(&label, "GET", format!("status {s} reading back"))),
                }
            }
        }
    }
    let right = found.iter().filter(|f| **f == Some(true)).count() as i64;
    let other = found.iter().filter(|f| **f == Some(false)).count() as i64;
    let checks = vec![
        Check::new("PUT responses that were wrong", 0, wrong),
        Check::new(
            "paths read back with their body = PUTs acknowledged",
            ok,
            right,
        )
        .in_doubt(failed_puts),
        Check::new("paths read back holding another body", 0, other),
    ];
    let said = format!(
        "{} of {} paths under {} read back with their bodies",
        group(right as u64),
        group(indices.len() as u64),
        load.dir
    );
    Ok(Verdict::from_checks(checks, said))
}

/// The share of each status class, and connections reopened.
pub(super) fn results(counted: &Snapshot) -> Results {
    let d = |i: usize| counted.domains.get(i).copied().unwrap_or(0);
    let total: u64 = (0..REOPENED).map(d).sum();
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    let classes: Vec<String> = (0..REOPENED)
        .filter(|&i| i < 4 || d(i) > 0)
        .map(|i| format!("{} {} ({:.2}%)", DOMAINS[i], group(d(i)), share(d(i))))
        .collect();
    let mut lines = vec![format!("responses: {}", classes.join(", "))];
    if d(REOPENED) > 0 {
        let resumed = match d(RESUMED) {
            0 => String::new(),
            n => format!(" ({} resumed their TLS session)", group(n)),
        };
        lines.push(format!(
            "connections the server closed and loadrig reopened: {}{resumed}",
            group(d(REOPENED))
        ));
    }
    Results {
        lines,
        ..Results::default()
    }
}

/// Delete the run's `PUT` directory, `dir`, on every server.
pub(super) async fn clean<B: HttpBackend>(backend: &B, dir: &str) -> Result<(), TargetError> {
    let label = backend.label();
    let delete = [("DELETE", dir.to_string())];
    for s in 0..backend.servers() {
        let got = Cold::new(backend, s)
            .exchange("DELETE", &delete, COLD_TIMEOUT)
            .await?;
        if let Some(g) = got.iter().find(|g| !matches!(g.status, 200..=299 | 404)) {
            return Err(failed(
                &label,
                "DELETE",
                format!("status {} removing {}", g.status, dir),
            ));
        }
    }
    Ok(())
}
