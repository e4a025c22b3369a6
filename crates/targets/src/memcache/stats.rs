//! memcached's own statistics per lap: `stats` on a connection of its own
//! to the first server of the URL (docs/explanations/resources.md).

use std::sync::Arc;

use bytes::Buf;
use loadrig_wire::kv::memcache::text;
use loadrig_workloads::stats::{pick, Sampled, Series, StatsSource};

use crate::socket::{PlainDial, Socket};

/// `stats`'s name, the reading's name, and whether it is a counter.
pub(crate) const SERIES: &[Series] = &[
    ("curr_connections", "memcached.curr_connections", false),
    ("bytes", "memcached.bytes", false),
    ("curr_items", "memcached.curr_items", false),
    ("cmd_get", "memcached.cmd_get", true),
    ("cmd_set", "memcached.cmd_set", true),
    ("get_hits", "memcached.get_hits", true),
    ("get_misses", "memcached.get_misses", true),
    ("evictions", "memcached.evictions", true),
    ("bytes_read", "memcached.bytes_read", true),
    ("bytes_written", "memcached.bytes_written", true),
    ("rusage_user", "memcached.cpu_user_secs", true),
    ("rusage_system", "memcached.cpu_sys_secs", true),
    // A level: one that falls is a restart (docs/explanations/validity.md).
    ("uptime", "memcached.uptime_secs", false),
];

pub(crate) struct McStats {
    dial: Arc<PlainDial>,
    sock: Option<Socket>,
}

impl McStats {
    pub(crate) fn new(dial: Arc<PlainDial>) -> McStats {
        McStats { dial, sock: None }
    }
}

impl StatsSource for McStats {
    fn name(&self) -> String {
        "memcached stats".into()
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let mut sock = match self.sock.take() {
                Some(s) => s,
                None => self.dial.open(0).await?,
            };
            text::encode_stats(&mut sock.wbuf);
            loop {
                match text::parse_stats(&sock.rbuf) {
                    Ok(Some((stats, n))) => {
                        let pairs = stats.iter().map(|(k, v)| {
                            (
                                String::from_utf8_lossy(k).into_owned(),
                                String::from_utf8_lossy(v).into_owned(),
                            )
                        });
                        let got = pick(pairs, SERIES);
                        sock.rbuf.advance(n);
                        // Kept only after a whole answer: a failure reconnects.
                        self.sock = Some(sock);
                        return Ok(got);
                    }
                    Ok(None) => sock.fill().await.map_err(|e| e.to_string())?,
                    Err(e) => return Err(format!("stats answered: {e}")),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stats_answer_gives_its_series() {
        let answer = b"STAT pid 1\r\nSTAT curr_connections 11\r\nSTAT rusage_user 0.5\r\nSTAT version 1.6\r\nEND\r\n";
        let (stats, n) = text::parse_stats(answer).unwrap().unwrap();
        assert_eq!(n, answer.len());
        let pairs = stats.iter().map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        });
        let got = pick(pairs, SERIES);
        let names: Vec<(&str, f64, bool)> =
            got.iter().map(|r| (r.name, r.value, r.counter)).collect();
        assert_eq!(
            names,
            [
                ("memcached.curr_connections", 11.0, false),
                ("memcached.cpu_user_secs", 0.5, true)
            ]
        );
    }
}
