//! Redis's own statistics per lap: `INFO` on a connection of its own to
//! the first server of the URL (docs/explanations/resources.md).

use std::sync::Arc;

use loadrig_wire::kv::resp;
use loadrig_workloads::redis::Value;
use loadrig_workloads::stats::{pick, Reading, Sampled, Series, StatsSource};

use crate::settings::Connector;
use crate::url::TargetUrl;

use super::Link;

/// INFO's field, the reading's name, and whether it is a counter.
pub(crate) const SERIES: &[Series] = &[
    ("used_memory", "redis.used_memory", false),
    ("connected_clients", "redis.connected_clients", false),
    ("blocked_clients", "redis.blocked_clients", false),
    (
        "instantaneous_ops_per_sec",
        "redis.instantaneous_ops_per_sec",
        false,
    ),
    ("total_commands_processed", "redis.commands", true),
    ("evicted_keys", "redis.evicted_keys", true),
    ("expired_keys", "redis.expired_keys", true),
    ("keyspace_hits", "redis.keyspace_hits", true),
    ("keyspace_misses", "redis.keyspace_misses", true),
    ("rejected_connections", "redis.rejected_connections", true),
    ("total_net_input_bytes", "redis.net_input_bytes", true),
    ("total_net_output_bytes", "redis.net_output_bytes", true),
    ("used_cpu_user", "redis.cpu_user_secs", true),
    ("used_cpu_sys", "redis.cpu_sys_secs", true),
    // A level: one that falls is a restart (the validity verdict's
    // `target` check, docs/explanations/validity.md).
    ("uptime_in_seconds", "redis.uptime_secs", false),
];

pub(crate) struct RedisInfo {
    pub at: Arc<TargetUrl>,
    via: Arc<Connector>,
    link: Option<Link>,
}

impl RedisInfo {
    pub(crate) fn new(at: Arc<TargetUrl>, via: Arc<Connector>) -> RedisInfo {
        RedisInfo {
            at,
            via,
            link: None,
        }
    }
}

impl StatsSource for RedisInfo {
    fn name(&self) -> String {
        "redis INFO".into()
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let mut link = match self.link.take() {
                Some(l) => l,
                None => Link::open(&self.at, &self.via, 0, 0)
                    .await
                    .map_err(|e| e.to_string())?,
            };
            resp::encode_command(&mut link.sock.wbuf, &[b"INFO"]);
            let text = match link.reply().await.map_err(|e| e.to_string())? {
                Value::Bulk(Some(t)) => String::from_utf8_lossy(&t).into_owned(),
                other => return Err(format!("INFO answered {other:?}")),
            };
            // Kept only after a whole answer: a failure reconnects.
            self.link = Some(link);
            Ok(parse(&text))
        })
    }
}

fn parse(text: &str) -> Vec<Reading> {
    let pairs = text.lines().filter_map(|l| {
        let (k, v) = l.split_once(':')?;
        Some((k.to_string(), v.to_string()))
    });
    pick(pairs, SERIES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_text_gives_its_series() {
        let got = parse("# Memory\r\nused_memory:100\r\nused_cpu_sys:1.5\r\n");
        assert_eq!(
            got,
            vec![
                Reading::level("redis.used_memory", 100.0),
                Reading::counter("redis.cpu_sys_secs", 1.5)
            ]
        );
    }
}
