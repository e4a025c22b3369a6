//! The workload's cold-path reads and deletes (SCAN, MGET, GET, a size,
//! DEL), each degrading when the server refuses the command: a server that
//! implements a subset of Redis (or a cluster, or a proxy) answers an error
//! reply, which is not a failed run. A refusal is remembered in [`Lacks`]
//! (MGET falls back to GETs pipelined in batches); only a broken link is an
//! `Err`. Verification then checks what it could read and says what it
//! could not (docs/reference/workloads.md, section "Servers that implement a subset").

use std::collections::{BTreeMap, HashSet};

use super::{cmd, Command, RespAdmin, Value};
use crate::TargetError;

/// What could not be read, by what it was for: `"mylist"` -> `"LLEN"`.
pub type Lacks = BTreeMap<String, String>;

/// Keys a batch of MGET, GET or DEL carries.
const BATCH: usize = 1000;

fn failed(what: &str, why: impl std::fmt::Display) -> TargetError {
    TargetError::Prepare {
        target: "redis".to_string(),
        reason: format!("{what}: {why}"),
    }
}

/// One command's reply: `Ok(Err(reply))` when the server refused it.
async fn ask<A: RespAdmin>(a: &mut A, c: Command) -> Result<Result<Value, String>, TargetError> {
    let what = String::from_utf8_lossy(&c[0]).into_owned();
    match a.call(&[c]).await?.pop() {
        Some(Value::Error(e)) => Ok(Err(e)),
        Some(v) => Ok(Ok(v)),
        None => Err(failed(&what, "no reply")),
    }
}

/// Every key matching `pattern` (SCAN, so the server never blocks);
/// `None` when the server refuses SCAN.
pub(super) async fn scan<A: RespAdmin>(
    a: &mut A,
    pattern: &[u8],
) -> Result<Option<HashSet<Vec<u8>>>, TargetError> {
    let mut keys = HashSet::new();
    let mut cursor = b"0".to_vec();
    loop {
        let c = vec![
            b"SCAN".to_vec(),
            cursor,
            b"MATCH".to_vec(),
            pattern.to_vec(),
            b"COUNT".to_vec(),
            b"1000".to_vec(),
        ];
        let Ok(Value::Array(Some(mut parts))) = ask(a, c).await? else {
            return Ok(None);
        };
        let (Some(Value::Array(Some(batch))), Some(Value::Bulk(Some(next)))) =
            (parts.pop(), parts.pop())
        else {
            return Err(failed("SCAN", "not [cursor, keys]"));
        };
        keys.extend(batch.into_iter().filter_map(|k| match k {
            Value::Bulk(Some(k)) => Some(k),
            _ => None,
        }));
        if next == b"0" {
            return Ok(Some(keys));
        }
        cursor = next;
    }
}

/// A cold-path connection that remembers which reads its server refused.
pub(super) struct Reader<A> {
    pub a: A,
    /// MGET was refused: read key by key.
    pub by_key: bool,
}

impl<A: RespAdmin> Reader<A> {
    pub fn new(a: A) -> Self {
        Reader { a, by_key: false }
    }

    /// Values of `keys` (`None` for a missing key): MGET in batches, or
    /// GETs pipelined when MGET is refused. `Err(command)`: the server
    /// refuses both.
    pub async fn values(
        &mut self,
        keys: &[Vec<u8>],
    ) -> Result<Result<Vec<Option<Vec<u8>>>, &'static str>, TargetError> {
        let mut out = vec![None; keys.len()];
        let read = self
            .each(keys, |i, v| out[i] = v.map(<[u8]>::to_vec))
            .await?;
        Ok(read.map(|()| out))
    }

    /// Each value of `keys` handed to `seen(i, value)` (`None` for a
    /// missing key) as it is read, nothing kept: MGET in batches, or GETs
    /// pipelined when MGET is refused. `Err(command)`: the server refuses
    /// both.
    pub async fn each(
        &mut self,
        keys: &[Vec<u8>],
        mut seen: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<Result<(), &'static str>, TargetError> {
        // Which keys of the batch have been handed over: a cluster's MGET
        // may hand over some slots' values before one slot fails, and the
        // GETs that follow read only the others.
        let mut done = vec![false; keys.len().min(BATCH)];
        for (b, batch) in keys.chunks(BATCH).enumerate() {
            let base = b * BATCH;
            done.fill(false);
            if !self.by_key {
                let read = self
                    .a
                    .mget_each(batch, &mut |i, v| {
                        done[i] = true;
                        seen(base + i, v);
                    })
                    .await?;
                match read {
                    Ok(()) => continue,
                    Err(Value::Error(_)) => self.by_key = true,
                    Err(_) => return Err(failed("MGET", "not an array of the keys' values")),
                }
            }
            let left: Vec<usize> = (0..batch.len()).filter(|&i| !done[i]).collect();
            let gets: Vec<Command> = left
                .iter()
                .map(|&i| cmd(&[&b"GET"[..], &batch[i]]))
                .collect();
            for (&i, v) in left.iter().zip(self.a.call(&gets).await?.iter()) {
                match v {
                    Value::Error(_) => return Ok(Err("GET")),
                    v => seen(base + i, v.bytes()),
                }
            }
        }
        Ok(Ok(()))
    }

    /// An integer reply of `verb key` (LLEN, SCARD, ...); `None` when refused.
    pub async fn size(&mut self, verb: &str, key: &str) -> Result<Option<i64>, TargetError> {
        match ask(&mut self.a, cmd(&[verb, key])).await? {
            Ok(v) => Ok(Some(
                v.integer().ok_or_else(|| failed(verb, "not a number"))?,
            )),
            Err(_) => Ok(None),
        }
    }

    /// Delete `keys`, in batches; `false` when the server refuses DEL.
    pub async fn delete(&mut self, keys: &[Vec<u8>]) -> Result<bool, TargetError> {
        for batch in keys.chunks(BATCH) {
            let mut c: Command = vec![b"DEL".to_vec()];
            c.extend(batch.iter().cloned());
            if ask(&mut self.a, c).await?.is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The line a verdict gives when nothing could be read.
pub(super) fn not_verified(lacks: &Lacks) -> String {
    let mut verbs: Vec<&str> = lacks.values().map(String::as_str).collect();
    verbs.sort_unstable();
    verbs.dedup();
    format!("not verified: the server lacks {}", verbs.join(", "))
}

/// `lacks` as the verdict's note: `mylist (LLEN), key:* (SCAN)`.
pub(super) fn unchecked(lacks: &Lacks) -> String {
    let parts: Vec<String> = lacks.iter().map(|(w, v)| format!("{w} ({v})")).collect();
    format!(
        "not checked, the server refused the read: {}",
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lacks_name_each_command_once() {
        let mut l = Lacks::new();
        l.insert("key:*".into(), "SCAN".into());
        l.insert("counter:*".into(), "SCAN".into());
        l.insert("mylist".into(), "LLEN".into());
        assert_eq!(
            not_verified(&l),
            "not verified: the server lacks LLEN, SCAN"
        );
        assert_eq!(
            unchecked(&l),
            "not checked, the server refused the read: counter:* (SCAN), key:* (SCAN), mylist (LLEN)"
        );
    }
}
