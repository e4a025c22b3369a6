//! The knobs of the message-broker workloads: `pubsub` (nats-bench's
//! publishers and subscribers) and `chat` (Chut's social groups).

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// The size of the stamp every message starts with (publisher, sequence,
/// intended send time); a message is at least this long.
pub const MIN_MESSAGE_SIZE: usize = 24;

/// Largest message: NATS's default `max_payload` (1 MiB).
pub const MAX_MESSAGE_SIZE: usize = 1 << 20;

/// `pubsub`: publishers send to one subject, every subscriber receives
/// every message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PubSubSpec {
    /// Publishers: the run's clients, each with its connection.
    pub pubs: u32,
    /// Subscribers, each with its connection.
    pub subs: u32,
    /// Bytes per message, stamp included.
    pub size: usize,
    /// Request-reply (NATS): each publish carries a reply subject, the
    /// subscribers answer, and an operation is one round trip.
    pub request: bool,
    /// Seconds subscribers keep receiving after the last publish.
    pub drain_secs: f64,
    /// The subject publishers send to (nats-bench's `<subject>`); a
    /// request's reply subjects go under it. `None`: one of the run's
    /// own. The processes of one run share the one their parent picks.
    /// Absent from specs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// Longest `--subject`: room left for a reply subject under it.
pub const MAX_SUBJECT: usize = 200;

impl PubSubSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.pubs == 0 {
            return Err(SpecError::new("--pubs", "must be at least 1"));
        }
        if let Some(s) = &self.subject {
            check_subject(s)?;
        }
        check_size(self.size)?;
        if self.request && self.subs == 0 {
            return Err(SpecError::new(
                "--request",
                "needs at least one subscriber to answer (--subs)",
            ));
        }
        check_drain(self.drain_secs)
    }
}

/// How chat clients pace their messages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ChatMode {
    /// Each client sends as fast as the broker takes it.
    Stress,
    /// Each client sends one message every `think_secs`.
    Realistic { think_secs: f64 },
}

/// `chat`: `groups` x `per_group` clients; each listens on its own inbox
/// and sends to a random other member of its group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatSpec {
    pub groups: u32,
    pub per_group: u32,
    pub mode: ChatMode,
    /// Bytes per message, stamp included.
    pub size: usize,
    /// Seconds clients keep listening after the last send.
    pub drain_secs: f64,
    /// Seconds a client pauses after each delivery before it reads the
    /// next (Chut's listener delay: a slow reader, asked for). Absent
    /// from specs written before it existed: 0.
    #[serde(default)]
    pub listener_delay_secs: f64,
}

impl ChatSpec {
    pub fn clients(&self) -> u32 {
        self.groups.saturating_mul(self.per_group)
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        if self.groups == 0 {
            return Err(SpecError::new("--groups", "must be at least 1"));
        }
        if self.per_group < 2 {
            return Err(SpecError::new(
                "--per-group",
                "must be at least 2: a client sends to another member of its group",
            ));
        }
        if self.groups.checked_mul(self.per_group).is_none() {
            return Err(SpecError::new(
                "--groups",
                "groups x clients per group is too many",
            ));
        }
        if let ChatMode::Realistic { think_secs } = self.mode {
            crate::bounds::seconds("--think", think_secs, false)?;
        }
        crate::bounds::seconds("--listener-delay", self.listener_delay_secs, true)?;
        check_size(self.size)?;
        check_drain(self.drain_secs)
    }
}

fn check_size(size: usize) -> Result<(), SpecError> {
    if !(MIN_MESSAGE_SIZE..=MAX_MESSAGE_SIZE).contains(&size) {
        return Err(SpecError::new(
            "--value-size",
            format!(
                "must be between {MIN_MESSAGE_SIZE} (the stamp each message carries) and {MAX_MESSAGE_SIZE} bytes, got {size}"
            ),
        ));
    }
    Ok(())
}

/// Words of letters, digits, `-` and `_` joined by single dots: what NATS,
/// MQTT (a dot becomes `/`) and Redis all take as it is, with no wildcard.
fn check_subject(s: &str) -> Result<(), SpecError> {
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if s.len() > MAX_SUBJECT || !s.split('.').all(word) {
        return Err(SpecError::new(
            "--subject",
            format!(
                "'{s}' is not a subject: words of letters, digits, '-' and '_' joined by single dots, at most {MAX_SUBJECT} bytes"
            ),
        ));
    }
    Ok(())
}

fn check_drain(secs: f64) -> Result<(), SpecError> {
    crate::bounds::seconds("--drain", secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One publisher, one subscriber, 128 bytes: valid.
    fn one_to_one() -> PubSubSpec {
        PubSubSpec {
            pubs: 1,
            subs: 1,
            size: 128,
            request: false,
            drain_secs: 1.0,
            subject: None,
        }
    }

    #[test]
    fn sizes_hold_the_stamp() {
        let mut s = one_to_one();
        assert!(s.validate().is_ok());
        s.size = 23;
        assert_eq!(s.validate().unwrap_err().flag, "--value-size");
        s.size = 24;
        s.subs = 0;
        s.request = true;
        assert_eq!(s.validate().unwrap_err().flag, "--request");
    }

    #[test]
    fn subjects_are_dotted_words() {
        let mut s = PubSubSpec {
            subject: Some("bench.run-1.t_2".into()),
            ..one_to_one()
        };
        assert!(s.validate().is_ok());
        for bad in [
            "",
            "a..b",
            ".a",
            "a.",
            "a.*",
            "a.>",
            "a b",
            "a/b",
            &"x".repeat(201),
        ] {
            s.subject = Some(bad.to_string());
            assert_eq!(s.validate().unwrap_err().flag, "--subject", "{bad:?}");
        }
    }

    #[test]
    fn chat_needs_a_peer() {
        let mut c = ChatSpec {
            groups: 2,
            per_group: 1,
            mode: ChatMode::Stress,
            size: 64,
            drain_secs: 1.0,
            listener_delay_secs: 0.0,
        };
        assert_eq!(c.validate().unwrap_err().flag, "--per-group");
        c.per_group = 20;
        assert_eq!(c.clients(), 40);
        c.mode = ChatMode::Realistic { think_secs: 0.0 };
        assert_eq!(c.validate().unwrap_err().flag, "--think");
    }
}
