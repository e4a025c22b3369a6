//! What each client sent and received, kept by its driver (no sharing on
//! the hot path) and handed to the run's [`Tallies`] when the driver is
//! dropped at the end of the run. Verification and the per-client
//! figures (nats-bench's min/avg/max/stddev, Chut's per-client lines)
//! are computed from these.

use std::sync::Mutex;

/// One client's account. A `--processes` child hands its clients' to the
/// parent in its report (chat), so it reads and writes as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientTally {
    /// The client's number (its stamp's publisher id).
    pub client: u32,
    /// Whether it publishes (a publisher, requester or chat member).
    pub sends: bool,
    /// Whether it receives (a subscriber or chat member).
    pub receives: bool,
    /// Messages the broker took: written (fire and forget) or
    /// acknowledged, or requests answered.
    pub sent: u64,
    /// Messages in flight when the connection failed: each may or may not
    /// have reached the broker.
    pub in_doubt: u64,
    /// Wall-clock span of the sends, ns since the Unix epoch (0: none).
    pub first_sent_ns: u64,
    pub last_sent_ns: u64,
    /// Messages received for the first time (a new sequence number of
    /// their publisher), including ones that came out of order.
    pub received: u64,
    /// Messages whose sequence number was the latest seen again.
    pub duplicated: u64,
    /// Messages below the highest sequence number seen from their
    /// publisher: late, after a later one.
    pub out_of_order: u64,
    /// Payloads without a loadrig stamp (someone else's messages).
    pub foreign: u64,
    /// Wall-clock span of the receipts, ns since the Unix epoch (0: none).
    pub first_received_ns: u64,
    pub last_received_ns: u64,
    /// Chat: messages sent to each member of the group, by position in it.
    pub to: Vec<u64>,
}

impl ClientTally {
    /// A send confirmed at `now_ns`.
    #[inline]
    pub fn sent_at(&mut self, now_ns: u64) {
        self.sent += 1;
        if self.first_sent_ns == 0 {
            self.first_sent_ns = now_ns;
        }
        self.last_sent_ns = now_ns;
    }

    /// A receipt at `now_ns`.
    #[inline]
    pub fn received_at(&mut self, now_ns: u64) {
        if self.first_received_ns == 0 {
            self.first_received_ns = now_ns;
        }
        self.last_received_ns = now_ns;
    }

    /// Messages per second over the client's own span of sends.
    pub fn send_rate(&self) -> f64 {
        rate(self.sent, self.first_sent_ns, self.last_sent_ns)
    }

    /// Messages per second over the client's own span of receipts.
    pub fn receive_rate(&self) -> f64 {
        rate(
            self.received + self.duplicated,
            self.first_received_ns,
            self.last_received_ns,
        )
    }
}

/// `n` events from `first` to `last` (ns): as nats-bench rates a client,
/// by its own start and end.
fn rate(n: u64, first: u64, last: u64) -> f64 {
    let span = last.saturating_sub(first) as f64 / 1e9;
    if n == 0 {
        0.0
    } else if span <= 0.0 {
        n as f64
    } else {
        n as f64 / span
    }
}

/// Every client's account, gathered as drivers end.
#[derive(Debug, Default)]
pub struct Tallies(Mutex<Vec<ClientTally>>);

impl Tallies {
    /// Add (or, for a client seen before, fold in) one account.
    pub fn put(&self, t: ClientTally) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match all.iter_mut().find(|a| a.client == t.client) {
            Some(a) => a.add(&t),
            None => all.push(t),
        }
    }

    /// The accounts so far, by client number.
    pub fn all(&self) -> Vec<ClientTally> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        all.sort_by_key(|t| t.client);
        all
    }

    /// Accounts of clients not seen before, as they are: another
    /// process's, renumbered past this one's (no search for a match, so
    /// 100,000 of them cost a copy).
    pub fn adopt(&self, ts: Vec<ClientTally>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend(ts);
    }

    /// Forget every account (before a new run).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl ClientTally {
    fn add(&mut self, o: &ClientTally) {
        self.sends |= o.sends;
        self.receives |= o.receives;
        self.sent += o.sent;
        self.in_doubt += o.in_doubt;
        self.received += o.received;
        self.duplicated += o.duplicated;
        self.out_of_order += o.out_of_order;
        self.foreign += o.foreign;
        self.first_sent_ns = min_set(self.first_sent_ns, o.first_sent_ns);
        self.last_sent_ns = self.last_sent_ns.max(o.last_sent_ns);
        self.first_received_ns = min_set(self.first_received_ns, o.first_received_ns);
        self.last_received_ns = self.last_received_ns.max(o.last_received_ns);
        if self.to.len() < o.to.len() {
            self.to.resize(o.to.len(), 0);
        }
        for (a, b) in self.to.iter_mut().zip(&o.to) {
            *a += b;
        }
    }
}

/// The smaller of two times, 0 meaning "none".
fn min_set(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// min, mean, max and (population) standard deviation, as nats-bench
/// reports its clients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub stddev: f64,
}

impl Spread {
    pub fn of(xs: &[f64]) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let avg = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n;
        Some(Spread {
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            avg,
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_use_the_clients_own_span() {
        let mut t = ClientTally::default();
        t.sent_at(1_000_000_000);
        for _ in 0..9 {
            t.sent_at(1_500_000_000);
        }
        t.sent_at(2_000_000_000);
        assert_eq!(t.sent, 11);
        assert!((t.send_rate() - 11.0).abs() < 1e-9);
        assert_eq!(ClientTally::default().receive_rate(), 0.0);
    }

    #[test]
    fn accounts_of_one_client_fold() {
        let all = Tallies::default();
        all.put(ClientTally {
            client: 3,
            sent: 2,
            first_sent_ns: 10,
            last_sent_ns: 20,
            to: vec![1, 1],
            ..ClientTally::default()
        });
        all.put(ClientTally {
            client: 3,
            sent: 1,
            first_sent_ns: 5,
            last_sent_ns: 30,
            to: vec![0, 1],
            ..ClientTally::default()
        });
        all.put(ClientTally {
            client: 1,
            ..ClientTally::default()
        });
        let got = all.all();
        assert_eq!(got[0].client, 1);
        assert_eq!(got[1].sent, 3);
        assert_eq!((got[1].first_sent_ns, got[1].last_sent_ns), (5, 30));
        assert_eq!(got[1].to, vec![1, 2]);
    }

    #[test]
    fn spread_is_population_stddev() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.min, s.avg, s.max, s.stddev), (2.0, 5.0, 9.0, 2.0));
        assert!(Spread::of(&[]).is_none());
    }
}
