//! The `pubsub` workload (nats-bench): `--pubs` publishers send to one
//! subject, each of `--subs` subscribers should receive every message,
//! once, in order per publisher. With `--request` (NATS) a publish carries
//! a reply subject, every subscriber answers, and an operation is one
//! round trip, complete at its first answer.
//!
//! Publishers are the engine's connections (its load model paces them:
//! closed loop, `--rate`, `-n` or `--duration`); subscribers are
//! listeners that issue nothing and drain after the last publish.

use std::sync::Arc;
use std::time::Duration;

use loadrig_metrics::Snapshot;
use loadrig_report::fmt::group;
use loadrig_spec::{PubSubSpec, RunSpec, Stop};
use serde_json::value::RawValue;

use super::client::{Client, ClientDriver, ClientRole, DOMAINS, SEND};
use super::tally::{ClientTally, Spread};
use super::{PubSubBackend, PubSubConn};
use crate::{Bench, Check, Results, TargetError, Verdict};

/// The pubsub workload on one broker.
pub struct PubSubBench<B> {
    pub backend: B,
    pub spec: PubSubSpec,
    pub stop: Stop,
    client: Arc<Client>,
    /// The run's number of this process's first client: shard k of a run
    /// (`--processes`) numbers its clients from k x (pubs + subs), so
    /// that every publisher's stamp, and every client's tally, is its own
    /// over the whole run.
    first: u32,
}

impl<B: PubSubBackend> PubSubBench<B> {
    pub fn new(backend: B, own: &PubSubSpec, run: &RunSpec) -> Self {
        let (spec, stop) = (own.clone(), run.load.stop);
        let mut client = Client::new(run_prefix(), spec.size, run.seed);
        if let Some(s) = &spec.subject {
            client = client.on_subject(s);
        }
        let shard = run.load.shard;
        // The processes of one run share a subject (their parent's pick
        // or --subject); a shard of a many-host run, which may not take
        // --subject, has one of its own and all its publishers.
        client.alone = shard.count <= 1 || spec.subject.is_none();
        let first = shard
            .index
            .saturating_mul(spec.pubs.saturating_add(spec.subs));
        PubSubBench {
            backend,
            spec,
            stop,
            client: Arc::new(client),
            first,
        }
    }

    fn label(&self) -> String {
        self.backend.label()
    }
}

/// `lr.<8 hex digits>`: this run's subjects, apart from any other run's
/// on the same broker.
pub(crate) fn run_prefix() -> String {
    let nanos = super::client::unix_now();
    let id = loadrig_engine::rng::mix64(nanos ^ (u64::from(std::process::id()) << 32));
    format!("lr.{:08x}", id as u32)
}

/// A subject of a run's own, `lr.<8 hex digits>.t`: what a pubsub run
/// publishes to without `--subject`, and what the parent of `--processes`
/// gives its children to share.
pub fn fresh_subject() -> String {
    format!("{}.t", run_prefix())
}

/// A subscription the broker refused or a connection that broke while
/// making it.
pub(crate) fn subscribe_failed(target: &str, e: loadrig_metrics::OpError) -> TargetError {
    TargetError::Prepare {
        target: target.to_string(),
        reason: format!("subscribe failed: {e}"),
    }
}

impl<B: PubSubBackend> Bench for PubSubBench<B> {
    type Driver = ClientDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        let send = if self.spec.request {
            "request"
        } else {
            "publish"
        };
        vec![send, "deliver"]
    }

    fn domains(&self) -> Vec<String> {
        DOMAINS.iter().map(|d| d.to_string()).collect()
    }

    fn listeners(&self) -> usize {
        self.spec.subs as usize
    }

    fn drain(&self) -> Duration {
        Duration::from_secs_f64(self.spec.drain_secs)
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        if self.spec.request && !self.backend.request_reply() {
            return Err(TargetError::Unsupported(format!(
                "--request: {} has no request-reply (NATS has)",
                self.label()
            )));
        }
        self.client.tallies.clear();
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        // A broker keeps nothing to count: the subscribers are the record.
        Ok(serde_json::Value::Null)
    }

    async fn connect(&self, n: u32) -> Result<Self::Driver, TargetError> {
        let id = self.first.saturating_add(n);
        let mut conn = self.backend.connect(u64::from(id)).await?;
        let role = match (n < self.spec.pubs, self.spec.request) {
            (true, false) => ClientRole::Publisher,
            (true, true) => ClientRole::Requester,
            (false, _) => ClientRole::Subscriber,
        };
        let subject = match role {
            ClientRole::Requester => Some([self.client.inbox(id).as_slice(), b".*"].concat()),
            ClientRole::Subscriber => Some(self.client.topic()),
            _ => None,
        };
        if let Some(s) = subject {
            conn.subscribe(&s)
                .await
                .map_err(|e| subscribe_failed(&self.label(), e))?;
        }
        Ok(ClientDriver::new(conn, self.client.clone(), role, id))
    }

    async fn verify(
        &mut self,
        _baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let all = self.client.tallies.all();
        let (pubs, subs): (Vec<_>, Vec<_>) = all.iter().partition(|t| t.sends);
        if subs.is_empty() {
            return Ok(Verdict::skipped("no subscribers"));
        }
        let sent: u64 = pubs.iter().map(|t| t.sent).sum();
        let send_errors = counted.kinds.get(SEND).map_or(0, |k| k.errors.total());
        let in_doubt = pubs
            .iter()
            .map(|t| t.in_doubt)
            .sum::<u64>()
            .max(send_errors);
        let mut checks = Vec::new();
        // Numbered as in nats-bench's Sub lines and the table: [1], [2], ...
        for (i, s) in subs.iter().enumerate() {
            let who = format!("subscriber [{}]", i + 1);
            checks.push(
                Check::new(format!("{who} received"), sent as i64, s.received as i64)
                    .in_doubt(in_doubt as i64),
            );
            checks.push(Check::new(
                format!("{who} duplicated"),
                0,
                s.duplicated as i64,
            ));
            checks.push(Check::new(
                format!("{who} out of order"),
                0,
                s.out_of_order as i64,
            ));
        }
        let ok = format!(
            "{} messages to each of {} subscribers, each once and in order",
            group(sent),
            subs.len()
        );
        let mut v = Verdict::from_checks(checks, ok);
        let lost = subs.iter().any(|s| s.received < sent);
        if let Some(why) = self.backend.queue_limit().filter(|_| lost) {
            v.summary = format!("{}; {why}", v.summary);
        }
        Ok(v)
    }

    async fn results(&mut self, _counted: &Snapshot) -> Result<Results, TargetError> {
        let all = self.client.tallies.all();
        let mut r = report(&self.label(), self.spec.size, &all);
        // nats-bench's rates are not loadrig's (docs/explanations/rates.md): said once,
        // above its lines.
        r.lines.insert(0, NATS_BENCH_LABEL.to_string());
        r.lines
            .extend(self.backend.delivery().map(|d| format!("delivery: {d}")));
        Ok(r)
    }

    async fn finish(&mut self, _keep: bool) -> Result<(), TargetError> {
        Ok(())
    }

    /// A child's clients' tallies: its subscribers received every
    /// process's messages, and its publishers' sends are part of what
    /// every subscriber of the run should have.
    fn share(&self) -> Option<Box<RawValue>> {
        serde_json::value::to_raw_value(&self.client.tallies.all()).ok()
    }

    /// The children's tallies, numbered over the whole run already
    /// (`first`): taken as they are.
    fn gather(&mut self, shares: Vec<Option<Box<RawValue>>>) -> Result<(), serde_json::Error> {
        for share in shares.into_iter().flatten() {
            let tallies: Vec<ClientTally> = serde_json::from_str(share.get())?;
            self.client.tallies.adopt(tallies);
        }
        Ok(())
    }
}

/// nats-bench's report: the aggregate, then publishers and subscribers
/// each with their rate, one line per client, and min/avg/max/stddev
/// across clients; then a table of what each subscriber got.
pub(crate) fn report(label: &str, size: usize, all: &[ClientTally]) -> Results {
    let (pubs, subs): (Vec<_>, Vec<_>) = all.iter().partition(|t| t.sends);
    let sent: u64 = pubs.iter().map(|t| t.sent).sum();
    let got = |t: &ClientTally| t.received + t.duplicated;
    let received: u64 = subs.iter().map(|t| got(t)).sum();
    // Each side's (first, last) instant, ns; a side that did nothing has none.
    let ends =
        |ts: &[&ClientTally], first: fn(&ClientTally) -> u64, last: fn(&ClientTally) -> u64| {
            let a = ts.iter().map(|t| first(t)).filter(|&x| x > 0).min()?;
            let b = ts.iter().map(|t| last(t)).max()?;
            Some((a, b))
        };
    let secs = |e: Option<(u64, u64)>| e.map_or(0.0, |(a, b)| b.saturating_sub(a) as f64 / 1e9);
    let pub_ends = ends(&pubs, |t| t.first_sent_ns, |t| t.last_sent_ns);
    let sub_ends = ends(&subs, |t| t.first_received_ns, |t| t.last_received_ns);
    let (pub_span, sub_span) = (secs(pub_ends), secs(sub_ends));
    // The aggregate is timed as nats-bench times its own: over the union
    // of both sides' spans (earliest first, latest last), not the longer
    // of the two, which would leave out the time one side ran ahead.
    let both = match (pub_ends, sub_ends) {
        (Some((a, b)), Some((c, d))) => secs(Some((a.min(c), b.max(d)))),
        (one, other) => secs(one.or(other)),
    };
    let mut lines = vec![format!(
        "{label} Pub/Sub stats: {}",
        rate_line(sent + received, both, size)
    )];
    let side = |lines: &mut Vec<String>,
                name: &str,
                ts: &[&ClientTally],
                n: u64,
                span: f64,
                rate: fn(&ClientTally) -> f64,
                count: fn(&ClientTally) -> u64| {
        if ts.is_empty() {
            return;
        }
        lines.push(format!(" {name} stats: {}", rate_line(n, span, size)));
        let rates: Vec<f64> = ts.iter().map(|t| rate(t)).collect();
        for (i, (t, r)) in ts.iter().zip(&rates).enumerate() {
            lines.push(format!(
                "  [{}] {} msgs/sec ~ {:.2} MB/sec ({} msgs)",
                i + 1,
                group(r.round() as u64),
                r * size as f64 / MB,
                count(t)
            ));
        }
        if let Some(s) = Spread::of(&rates) {
            lines.push(format!(
                "  min {} | avg {} | max {} | stddev {} msgs",
                group(s.min.round() as u64),
                group(s.avg.round() as u64),
                group(s.max.round() as u64),
                group(s.stddev.round() as u64)
            ));
        }
    };
    side(
        &mut lines,
        "Pub",
        &pubs,
        sent,
        pub_span,
        ClientTally::send_rate,
        |t| t.sent,
    );
    side(
        &mut lines,
        "Sub",
        &subs,
        received,
        sub_span,
        ClientTally::receive_rate,
        got,
    );
    // Subscribers numbered as in the Sub lines above: [1], [2], ...
    let rows = subs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            vec![
                format!("[{}]", i + 1),
                group(t.received),
                group(sent.saturating_sub(t.received)),
                group(t.duplicated),
                group(t.out_of_order),
            ]
        })
        .collect();
    // Messages on the run's subject without a loadrig stamp are someone
    // else's: ignored, and said only when there were any.
    let foreign: u64 = all.iter().map(|t| t.foreign).sum();
    let footer = if foreign > 0 {
        vec![format!(
            "{} messages without this run's stamp (another publisher on the subject) were ignored",
            group(foreign)
        )]
    } else {
        Vec::new()
    };
    Results {
        lines,
        header: [
            "subscriber",
            "received",
            "lost",
            "duplicated",
            "out of order",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        footer,
    }
}

/// Above nats-bench's lines: whose definitions they follow.
const NATS_BENCH_LABEL: &str = "nats-bench's lines (its rates: each side over its own span, \
Pub/Sub adds publishes and deliveries; loadrig's are the table and overall line):";

/// nats-bench's megabyte.
const MB: f64 = 1024.0 * 1024.0;

/// `1,234 msgs/sec ~ 0.15 MB/sec`.
fn rate_line(n: u64, secs: f64, size: usize) -> String {
    let r = if secs > 0.0 {
        n as f64 / secs
    } else {
        n as f64
    };
    format!(
        "{} msgs/sec ~ {:.2} MB/sec",
        group(r.round() as u64),
        r * size as f64 / MB
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_rates_each_side_by_its_own_span() {
        let p = ClientTally {
            client: 0,
            sends: true,
            sent: 1000,
            first_sent_ns: 1_000_000_000,
            last_sent_ns: 2_000_000_000,
            ..ClientTally::default()
        };
        // The subscriber starts half a second after the publisher: the
        // union of the spans (1 s to 3 s) differs from the longer span
        // (the subscriber's 1.5 s), so the aggregate shows which rule ran.
        let s = ClientTally {
            client: 1,
            receives: true,
            received: 998,
            duplicated: 2,
            first_received_ns: 1_500_000_000,
            last_received_ns: 3_000_000_000,
            ..ClientTally::default()
        };
        let r = report("NATS", 128, &[p, s]);
        // 2,000 messages over the union's 2 s (over the longer span's
        // 1.5 s it would be 1,333).
        assert_eq!(
            r.lines[0],
            "NATS Pub/Sub stats: 1,000 msgs/sec ~ 0.12 MB/sec"
        );
        assert_eq!(r.lines[1], " Pub stats: 1,000 msgs/sec ~ 0.12 MB/sec");
        assert_eq!(r.lines[2], "  [1] 1,000 msgs/sec ~ 0.12 MB/sec (1000 msgs)");
        assert_eq!(
            r.lines[3],
            "  min 1,000 | avg 1,000 | max 1,000 | stddev 0 msgs"
        );
        assert_eq!(r.lines[4], " Sub stats: 667 msgs/sec ~ 0.08 MB/sec");
        assert_eq!(
            r.rows[0][..5],
            ["[1]", "998", "2", "2", "0"].map(String::from)
        );
    }
}
