//! The `chat` workload (Chut's social groups): `--groups` G x
//! `--per-group` CPG clients, one connection each. Every client listens
//! on its own inbox and sends to a random other member of its group; in
//! `stress` mode as fast as the broker takes it, in `realistic` mode one
//! message per think time (the engine's open loop at clients / think).
//! After the last send, clients keep listening for the drain period, so
//! that every message is counted as delivered or lost, not guessed.
//!
//! The report prints Chut's lines exactly, then what Chut did not say:
//! losses, duplicates, reorders (delivery latency is the `deliver` row
//! of the latency table; client CPU and memory are in the summary).

use std::sync::Arc;
use std::time::Duration;

use loadrig_metrics::Snapshot;
use loadrig_report::fmt::group;
use loadrig_spec::{ChatSpec, RunSpec, Stop};
use serde_json::value::RawValue;

use super::client::{Client, ClientDriver, ClientRole, DOMAINS, SEND};
use super::fanout::{run_prefix, subscribe_failed};
use super::tally::ClientTally;
use super::{PubSubBackend, PubSubConn};
use crate::{Bench, Check, Results, TargetError, Verdict};

/// The chat workload on one broker.
pub struct ChatBench<B> {
    pub backend: B,
    pub spec: ChatSpec,
    pub stop: Stop,
    client: Arc<Client>,
    /// `--processes`: each runs `spec.groups` groups of its own (as each
    /// runs `--clients` of its own in other workloads); 1 in a child.
    processes: u32,
}

impl<B: PubSubBackend> ChatBench<B> {
    pub fn new(backend: B, own: &ChatSpec, run: &RunSpec) -> Self {
        let (spec, stop) = (own.clone(), run.load.stop);
        let mut client = Client::new(run_prefix(), spec.size, run.seed);
        client.listener_delay = Duration::from_secs_f64(spec.listener_delay_secs);
        let client = Arc::new(client);
        ChatBench {
            backend,
            spec,
            stop,
            client,
            processes: run.processes.max(1),
        }
    }
}

impl<B: PubSubBackend> Bench for ChatBench<B> {
    type Driver = ClientDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        vec!["send", "deliver"]
    }

    fn domains(&self) -> Vec<String> {
        DOMAINS.iter().map(|d| d.to_string()).collect()
    }

    fn drain(&self) -> Duration {
        Duration::from_secs_f64(self.spec.drain_secs)
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        self.client.tallies.clear();
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        Ok(serde_json::Value::Null)
    }

    async fn connect(&self, n: u32) -> Result<Self::Driver, TargetError> {
        let size = self.spec.per_group;
        let first = n / size * size;
        let mut conn = self.backend.connect(u64::from(n)).await?;
        conn.subscribe(&self.client.inbox(n))
            .await
            .map_err(|e| subscribe_failed(&self.backend.label(), e))?;
        // Stress sends as fast as the broker takes it: taken, not written
        // into a socket buffer the broker reads seconds later.
        conn.confirm_by_round_trip();
        let role = ClientRole::Member { first, size };
        Ok(ClientDriver::new(conn, self.client.clone(), role, n))
    }

    async fn verify(
        &mut self,
        _baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let all = self.client.tallies.all();
        let t = Totals::of(&all, self.spec.per_group);
        let send_errors = counted.kinds.get(SEND).map_or(0, |k| k.errors.total());
        let in_doubt = t.in_doubt.max(send_errors);
        let mut checks = vec![
            Check::new("messages received", t.sent as i64, t.received as i64)
                .in_doubt(in_doubt as i64),
            Check::new("messages duplicated", 0, t.duplicated as i64),
            Check::new("messages out of order", 0, t.out_of_order as i64),
        ];
        if in_doubt == 0 {
            checks.push(Check::new("clients short of messages", 0, t.short as i64));
        }
        let ok = format!(
            "{} sent = {} received, each once and in order",
            group(t.sent),
            group(t.received)
        );
        let mut v = Verdict::from_checks(checks, ok);
        if let Some(why) = self.backend.queue_limit().filter(|_| t.received < t.sent) {
            v.summary = format!("{}; {why}", v.summary);
        }
        Ok(v)
    }

    async fn results(&mut self, _counted: &Snapshot) -> Result<Results, TargetError> {
        let all = self.client.tallies.all();
        let t = Totals::of(&all, self.spec.per_group);
        let secs = match self.stop {
            Stop::Seconds(s) => s,
            Stop::Count(_) => t.send_span,
        };
        // Chut's rates are over its T and per group and client
        // (docs/explanations/rates.md): said once, above its lines.
        let mut lines = vec![
            "Chut's lines (its rates: over T, per group, per client; loadrig's are the table and overall line):"
                .to_string(),
        ];
        lines.extend(chut_lines(
            self.spec.groups.saturating_mul(self.processes),
            self.spec.per_group,
            secs,
            t.sent,
            t.all_received,
        ));
        lines.push(format!(
            "lost {} of {} sent ({} clients short), duplicated {}, out of order {}, in doubt {}",
            group(t.sent.saturating_sub(t.received)),
            group(t.sent),
            group(t.short),
            group(t.duplicated),
            group(t.out_of_order),
            group(t.in_doubt)
        ));
        lines.extend(self.backend.delivery().map(|d| format!("delivery: {d}")));
        Ok(Results {
            lines,
            ..Results::default()
        })
    }

    async fn finish(&mut self, _keep: bool) -> Result<(), TargetError> {
        Ok(())
    }

    /// A child's clients' tallies: its groups are whole and its subjects
    /// private, so they are all the parent needs to verify its part.
    fn share(&self) -> Option<Box<RawValue>> {
        serde_json::value::to_raw_value(&self.client.tallies.all()).ok()
    }

    /// Process k's clients become clients k x G x CPG and on, so that the
    /// groups of different processes stay apart (a group is CPG numbers
    /// from a multiple of CPG).
    fn gather(&mut self, shares: Vec<Option<Box<RawValue>>>) -> Result<(), serde_json::Error> {
        let each = self.spec.clients();
        for (k, share) in shares.into_iter().enumerate() {
            let Some(share) = share else { continue };
            let mut tallies: Vec<ClientTally> = serde_json::from_str(share.get())?;
            let first = (k as u32).saturating_mul(each);
            for t in &mut tallies {
                t.client = t.client.saturating_add(first);
            }
            self.client.tallies.adopt(tallies);
        }
        Ok(())
    }
}

/// The run's sums.
#[derive(Debug, Default, PartialEq)]
struct Totals {
    sent: u64,
    in_doubt: u64,
    /// Counted once each.
    received: u64,
    /// Every message that arrived, duplicates included (Chut's count).
    all_received: u64,
    duplicated: u64,
    out_of_order: u64,
    /// Clients that received fewer than were sent to them.
    short: u64,
    /// Seconds from the first send to the last.
    send_span: f64,
}

impl Totals {
    fn of(all: &[ClientTally], per_group: u32) -> Totals {
        let mut t = Totals::default();
        // What each client should have received: the sum over its group
        // of what each member sent to its position.
        let mut expected = std::collections::HashMap::<u32, u64>::new();
        let (mut first, mut last) = (u64::MAX, 0u64);
        for c in all {
            t.sent += c.sent;
            t.in_doubt += c.in_doubt;
            t.received += c.received;
            t.all_received += c.received + c.duplicated;
            t.duplicated += c.duplicated;
            t.out_of_order += c.out_of_order;
            if c.first_sent_ns > 0 {
                first = first.min(c.first_sent_ns);
            }
            last = last.max(c.last_sent_ns);
            let base = c.client / per_group * per_group;
            for (pos, n) in c.to.iter().enumerate() {
                *expected.entry(base + pos as u32).or_default() += n;
            }
        }
        t.short = all
            .iter()
            .filter(|c| c.received < expected.get(&c.client).copied().unwrap_or(0))
            .count() as u64;
        t.send_span = if first <= last {
            (last - first) as f64 / 1e9
        } else {
            0.0
        };
        t
    }
}

/// Chut's report, line for line: the setting, then sent and received
/// and their averages per second, per group, per client and per client
/// per second, numbers written as Chut's Erlang wrote them.
pub fn chut_lines(groups: u32, per_group: u32, secs: f64, sent: u64, received: u64) -> Vec<String> {
    let t = if secs > 0.0 { secs } else { 1.0 };
    let (g, c) = (f64::from(groups), f64::from(groups) * f64::from(per_group));
    let (s, r) = (sent as f64, received as f64);
    vec![
        format!("G:{groups}\tCPG:{per_group}\tT:{}", erlang_time(secs)),
        format!("Sent: {sent}"),
        format!("Received: {received}"),
        format!("Average sent per second: {}", erlang_float(s / t)),
        format!("Average received per second: {}", erlang_float(r / t)),
        format!("Average sent per group: {}", erlang_float(s / g)),
        format!("Average received per group: {}", erlang_float(r / g)),
        format!("Average sent per client: {}", erlang_float(s / c)),
        format!("Average received per client: {}", erlang_float(r / c)),
        format!(
            "Average sent per client per second: {}",
            erlang_float(s / c / t)
        ),
        format!(
            "Average received per client per second: {}",
            erlang_float(r / c / t)
        ),
    ]
}

/// A float as Chut printed it: the shortest digits that read back the
/// same, always with a decimal point (`45773.0`, `1057.408`).
fn erlang_float(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'N', 'i']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Chut's T, whole seconds as an integer.
fn erlang_time(secs: f64) -> String {
    if secs.fract() == 0.0 && secs < 1e15 {
        format!("{}", secs as u64)
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chut_lines_match_chuts_own_run() {
        // G:10 CPG:5 T:10 from Chut's benchmark page.
        let lines = chut_lines(10, 5, 10.0, 528_704, 506_096);
        assert_eq!(
            lines,
            [
                "G:10\tCPG:5\tT:10",
                "Sent: 528704",
                "Received: 506096",
                "Average sent per second: 52870.4",
                "Average received per second: 50609.6",
                "Average sent per group: 52870.4",
                "Average received per group: 50609.6",
                "Average sent per client: 10574.08",
                "Average received per client: 10121.92",
                "Average sent per client per second: 1057.408",
                "Average received per client per second: 1012.192",
            ]
        );
        let lines = chut_lines(10, 10, 10.0, 457_730, 414_082);
        assert_eq!(lines[3], "Average sent per second: 45773.0");
        assert_eq!(lines[7], "Average sent per client: 4577.3");
        assert_eq!(lines[9], "Average sent per client per second: 457.73");
    }

    #[test]
    fn totals_find_the_client_that_missed_a_message() {
        // Group of 2: client 0 sent 3 to client 1 (position 1); client 1
        // sent 2 to client 0; client 1 got only 2.
        let a = ClientTally {
            client: 0,
            sent: 3,
            received: 2,
            to: vec![0, 3],
            ..ClientTally::default()
        };
        let b = ClientTally {
            client: 1,
            sent: 2,
            received: 2,
            to: vec![2, 0],
            ..ClientTally::default()
        };
        let t = Totals::of(&[a, b], 2);
        assert_eq!((t.sent, t.received, t.short), (5, 4, 1));
    }
}
