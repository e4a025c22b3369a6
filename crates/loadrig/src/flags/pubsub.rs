//! The pubsub workload's flags: nats-bench's.

use clap::Args;
use loadrig_spec::{PubSubSpec, RunSpec, SpecError, WorkloadSpec};

use super::{seconds, ChildLine, Defaults, RunArgs};

pub(super) const PUBSUB_HELP: &str =
    "As nats-bench: publishers to one subject, every subscriber should receive every \
message. What a run does: docs/reference/workloads.md, section pubsub.";

/// The message brokers' (pubsub, chat): the local NATS server.
pub(super) const BROKER_DEFAULTS: Defaults = Defaults {
    clients: 1,
    threads: None,
    target: "nats://127.0.0.1:4222",
    duration: None,
};

/// pubsub and chat size their clients themselves (--pubs/--subs,
/// --groups/--per-group), each client with its own connection.
pub(super) fn one_connection_per_client(run: &RunArgs) -> Result<(), SpecError> {
    if run.clients.is_some() {
        return Err(SpecError::new(
            "--clients",
            "this workload counts its clients itself (pubsub: --pubs and --subs; chat: --groups x --per-group)",
        ));
    }
    if run.connections.is_some() {
        return Err(SpecError::new(
            "--connections",
            "every pubsub or chat client has its own connection",
        ));
    }
    if run.keep {
        return Err(SpecError::new(
            "--keep",
            "pubsub and chat leave nothing on the broker to keep",
        ));
    }
    Ok(())
}

/// The processes of one pubsub run (`--processes`) publish and subscribe
/// to one subject: every subscriber should receive every publisher's
/// message, whichever process holds it. Without `--subject` the parent
/// picks one of the run's own when its spec is made ([`PubSubArgs::spec`])
/// and gives it to every child ([`subject_for_children`]); the spec, the
/// merged report's, records it.
pub fn subject_for_children(spec: &RunSpec, child: &mut ChildLine) {
    if let WorkloadSpec::Pubsub(PubSubSpec {
        subject: Some(s), ..
    }) = &spec.workload
    {
        let given = child
            .args
            .iter()
            .any(|a| a.to_string_lossy().starts_with("--subject="));
        if !given {
            child.args.push(format!("--subject={s}").into());
        }
    }
}

/// The shards of a many-host run (`--shard`, `--shards`) each verify
/// their own subscribers against their own publishers, so they cannot
/// share a subject: refused rather than verified wrong. (The children of
/// `--processes`, given `--shard` by their parent, are verified together.)
pub(super) fn no_subject_across_hosts(run: &RunArgs, pubsub: &PubSubArgs) -> Result<(), SpecError> {
    if pubsub.subject.is_some() && !run.child && (run.shard.is_some() || run.shards.is_some()) {
        return Err(SpecError::new(
            "--subject",
            "the shards of a many-host pubsub run are verified apart and cannot share a subject; \
             --processes runs one subject over several processes",
        ));
    }
    Ok(())
}

/// A publisher keeps `--pipeline` messages in flight; there is no queue
/// of waiting calls in front of it.
pub(super) fn no_managed_mode(run: &RunArgs) -> Result<(), SpecError> {
    for (given, flag) in [
        (run.queue.is_some(), "--queue"),
        (run.slots.is_some(), "--slots"),
    ] {
        if given {
            return Err(SpecError::new(
                flag,
                "pubsub's publishers keep --pipeline messages in flight; managed mode is not taken",
            ));
        }
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Pubsub workload")]
pub struct PubSubArgs {
    /// Publishers, each with its connection (nats-bench -np)
    #[arg(
        long = "pubs",
        visible_alias = "np",
        value_name = "N",
        default_value_t = 1
    )]
    pub pubs: u32,
    /// Subscribers, each with its connection; each should receive every message (nats-bench -ns)
    #[arg(
        long = "subs",
        visible_alias = "ns",
        value_name = "N",
        default_value_t = 1
    )]
    pub subs: u32,
    /// Bytes per message, the 24-byte stamp included (nats-bench -ms)
    #[arg(
        long = "value-size",
        aliases = ["size", "ms"],
        value_name = "BYTES",
        default_value_t = 128
    )]
    pub size: usize,
    /// Request-reply (NATS): each message carries a reply subject, subscribers answer, an operation is one round trip
    #[arg(long)]
    pub request: bool,
    /// After the last publish, subscribers go on receiving until nothing
    /// has arrived for this long (at most ten times this)
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "2")]
    pub drain: f64,
    /// The subject to publish to (nats-bench's <subject>; replies go under it) [default: one of the run's own, shared by its --processes]
    #[arg(long, value_name = "SUBJECT")]
    pub subject: Option<String>,
}

impl PubSubArgs {
    /// One connection per client; no more runtime threads than
    /// connections (a lone publisher costs less on one).
    pub(super) fn defaults(&self) -> Defaults {
        Defaults {
            clients: self.pubs,
            threads: Some(
                super::cores().min((self.pubs as usize).saturating_add(self.subs as usize)),
            ),
            ..BROKER_DEFAULTS
        }
    }

    /// The parent of `--processes` picks the run's subject here, when
    /// none is given, so the spec is whole before it is validated.
    pub fn spec(&self, run: &RunArgs) -> WorkloadSpec {
        let parent = run.processes.is_some_and(|k| k > 1) && !run.child;
        let subject = match (&self.subject, parent) {
            (None, true) => Some(loadrig_workloads::pubsub::fresh_subject()),
            (given, _) => given.clone(),
        };
        WorkloadSpec::Pubsub(PubSubSpec {
            pubs: self.pubs,
            subs: self.subs,
            size: self.size,
            request: self.request,
            drain_secs: self.drain,
            subject,
        })
    }
}
