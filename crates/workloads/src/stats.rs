//! A server's own statistics, sampled once per lap beside the load: what
//! a target offers (its protocol's statistics command, and its process's
//! CPU and memory when it runs on this machine), read on a connection of
//! its own by a cold-path thread (docs/explanations/resources.md). Never on the hot
//! path, so boxed and dynamic.

use std::future::Future;
use std::pin::Pin;

/// One value a sample read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// `source.name`, e.g. `redis.used_memory`.
    pub name: &'static str,
    pub value: f64,
    /// A count since the server started: the report keeps its change over
    /// the lap, not the count. Otherwise a level (memory, connections).
    pub counter: bool,
}

impl Reading {
    pub fn level(name: &'static str, value: f64) -> Reading {
        Reading {
            name,
            value,
            counter: false,
        }
    }

    pub fn counter(name: &'static str, value: f64) -> Reading {
        Reading {
            name,
            value,
            counter: true,
        }
    }
}

/// One series a source offers: the server's own name for it, the
/// reading's name (`source.name`), and whether it is a counter.
pub type Series = (&'static str, &'static str, bool);

/// What one sample returns: the readings, or why there are none.
pub type Sampled<'a> = Pin<Box<dyn Future<Output = Result<Vec<Reading>, String>> + 'a>>;

/// One source of a server's statistics. It opens its own connection at
/// its first sample and again after a failure; a failed sample is
/// counted by the caller, never fatal.
pub trait StatsSource: Send {
    /// What it reads, for the report (`redis INFO`, `process 1234`).
    fn name(&self) -> String;
    /// Read the statistics now.
    fn sample(&mut self) -> Sampled<'_>;
}

/// Pick the readings named in `wanted` out of `name:value` text (Redis's
/// INFO, memcached's `stats`, MariaDB's status rows): `wanted` pairs the
/// server's name with the reading's and says whether it is a counter.
pub fn pick(pairs: impl Iterator<Item = (String, String)>, wanted: &[Series]) -> Vec<Reading> {
    let mut out = Vec::with_capacity(wanted.len());
    for (key, value) in pairs {
        let Some((_, name, counter)) = wanted.iter().find(|(k, _, _)| *k == key) else {
            continue;
        };
        if let Ok(v) = value.trim().parse::<f64>() {
            out.push(Reading {
                name,
                value: v,
                counter: *counter,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_wanted_numbers_are_picked() {
        let text = "used_memory:1024\r\nredis_version:7.0\r\nevicted_keys:3\r\nbad:x\r\n";
        let pairs = text.lines().filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.to_string(), v.to_string()))
        });
        let got = pick(
            pairs,
            &[
                ("used_memory", "redis.used_memory", false),
                ("evicted_keys", "redis.evicted_keys", true),
                ("bad", "redis.bad", false),
            ],
        );
        assert_eq!(
            got,
            vec![
                Reading::level("redis.used_memory", 1024.0),
                Reading::counter("redis.evicted_keys", 3.0)
            ]
        );
    }
}
