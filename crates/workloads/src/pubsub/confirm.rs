//! Publishes confirmed by a round trip, for a protocol whose broker
//! acknowledges nothing (NATS, MQTT QoS 0).
//!
//! A fire-and-forget publish written to the socket is not yet taken by
//! the broker. A publisher that counts it done writes as fast as the
//! kernel buffers it, and a broker slower than that reads it seconds
//! later: a chat stress run on Mosquitto at QoS 0 held 20-55 MB in its
//! clients' send queues and 17-21 MB in the broker's receive queues, and
//! delivery took 9 s at the median. A broker handles one client's packets
//! in order, so its answer to a ping (NATS `PONG`, MQTT `PINGRESP`) means
//! it has read and routed every publish written before the ping. With
//! [`RoundTrips`], a publish is done at the answer to the first ping
//! written after it, and `--pipeline` bounds what a publisher has waiting
//! in front of the broker. chat asks for it (its stress mode sends "as
//! fast as the broker takes it"); pubsub keeps nats-bench's rule, done
//! when written.

use std::collections::VecDeque;

use loadrig_engine::Tag;

/// The publishes of one connection waiting for the answer to a ping.
#[derive(Debug, Default)]
pub(super) struct RoundTrips {
    /// Tags not yet confirmed, oldest first.
    waiting: VecDeque<Tag>,
    /// How many of `waiting` (from the front) each unanswered ping
    /// covers, oldest ping first.
    pings: VecDeque<usize>,
    /// How many of `waiting` (from the back) no ping covers yet.
    uncovered: usize,
    /// How many of `waiting` (from the front) an answer confirmed, not
    /// yet handed out.
    confirmed: usize,
}

impl RoundTrips {
    /// A publish queued under `tag`.
    #[inline]
    pub fn publish(&mut self, tag: Tag) {
        self.waiting.push_back(tag);
        self.uncovered += 1;
    }

    /// Whether publishes were queued since the last ping.
    #[inline]
    pub fn ping_due(&self) -> bool {
        self.uncovered > 0
    }

    /// A ping was queued: it covers what no ping covered. (Every ping the
    /// connection writes during the run must be recorded, keep-alives
    /// too, as answers come in order.)
    #[inline]
    pub fn pinged(&mut self) {
        self.pings.push_back(std::mem::take(&mut self.uncovered));
    }

    /// An answer to the oldest ping arrived.
    #[inline]
    pub fn answered(&mut self) {
        let covered = self.pings.pop_front().unwrap_or(0);
        self.confirmed = (self.confirmed + covered).min(self.waiting.len());
    }

    /// The next confirmed publish, if any.
    #[inline]
    pub fn next_confirmed(&mut self) -> Option<Tag> {
        if self.confirmed == 0 {
            return None;
        }
        self.confirmed -= 1;
        self.waiting.pop_front()
    }

    /// A new connection: what waited is the driver's to count in doubt,
    /// and no answer is owed.
    pub fn clear(&mut self) {
        *self = RoundTrips::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each answer confirms exactly what its ping covered, in order; a
    /// ping with nothing new to cover (a keep-alive) confirms nothing.
    #[test]
    fn an_answer_confirms_what_its_ping_covered() {
        let mut r = RoundTrips::default();
        assert!(!r.ping_due());
        r.publish(1);
        r.publish(2);
        assert!(r.ping_due());
        r.pinged();
        r.publish(3);
        r.pinged();
        r.pinged(); // a keep-alive: covers nothing
        assert_eq!(r.next_confirmed(), None, "no answer yet");
        r.answered();
        assert_eq!(r.next_confirmed(), Some(1));
        assert_eq!(r.next_confirmed(), Some(2));
        assert_eq!(r.next_confirmed(), None, "3 waits for the second answer");
        r.answered();
        assert_eq!(r.next_confirmed(), Some(3));
        r.answered();
        r.answered(); // an answer to no ping of ours
        assert_eq!(r.next_confirmed(), None);
        r.publish(4);
        r.clear();
        assert!(!r.ping_due());
        assert_eq!(r.next_confirmed(), None);
    }
}
