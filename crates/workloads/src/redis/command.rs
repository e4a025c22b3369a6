//! What each redis-benchmark test sends and how its reply is read.
//!
//! A test's command is encoded once, as redis-benchmark does, into a
//! [`Template`]: the RESP bytes plus the offsets of every `__rand_int__`
//! in them. Sending is a copy of the template and, with `-r`, twelve
//! digits written over each placeholder (the placeholder is twelve bytes
//! long, so lengths never change). Replies are classified without
//! allocating: ok, a domain count (hit, miss, added), or an error.

use bytes::BytesMut;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_spec::RedisTest;
use loadrig_wire::kv::resp::{self, Reply};

/// The placeholder redis-benchmark replaces with a random 12-digit number.
pub const RAND: &[u8] = b"__rand_int__";
/// Digits written over [`RAND`].
pub const RAND_DIGITS: usize = 12;
/// redis-benchmark --cluster's hash tag placeholder: its three bytes
/// between the braces become a tag of the connection's master's slots.
pub const TAG: &[u8] = b"{tag}";

/// redis-benchmark's value bytes (its `genBenchmarkRandomData`): a 32-bit
/// linear congruential generator seeded with 1234, one byte `'0' + 6 bits`
/// per step. `-d 3` gives `VXK`, what redis-benchmark stores.
pub fn benchmark_data(len: usize) -> Vec<u8> {
    let mut state: u32 = 1234;
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            b'0' + ((state >> 16) & 63) as u8
        })
        .collect()
}

/// One command, encoded, with the offsets of its placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Where each `__rand_int__` starts in `bytes`, in order.
    pub rand: Vec<usize>,
    /// Where each `{tag}` starts in `bytes`.
    pub tag: Vec<usize>,
}

impl Template {
    /// A command of bulk strings.
    pub fn command(parts: &[&[u8]]) -> Template {
        let mut buf = BytesMut::new();
        resp::encode_command(&mut buf, parts);
        Template::raw(&buf)
    }

    /// Bytes sent as they are (an inline command).
    pub fn raw(bytes: &[u8]) -> Template {
        let at = |pattern: &[u8]| -> Vec<usize> {
            bytes
                .windows(pattern.len())
                .enumerate()
                .filter(|(_, w)| *w == pattern)
                .map(|(i, _)| i)
                .collect()
        };
        Template {
            bytes: bytes.to_vec(),
            rand: at(RAND),
            tag: at(TAG),
        }
    }

    /// The command redis-benchmark sends for `test`: keys
    /// `key:__rand_int__` and `counter:__rand_int__` (`tagged`, on a
    /// cluster: `key:{tag}:__rand_int__`, `counter:{tag}:__rand_int__`),
    /// members `element:__rand_int__`, lists and sets `mylist`, `myset`,
    /// `myhash`, `myzset`, `mystream`. ZADD's score is `__rand_int__` with
    /// `-r`, else 0.
    ///
    /// [`RedisTest::Command`] is `command`, the user's own: each argument
    /// with `__data__` replaced by `data` (memtier's placeholder for the
    /// value; redis-benchmark 7.0 sends it as it is).
    pub fn of(
        test: RedisTest,
        data: &[u8],
        random: bool,
        command: &[String],
        tagged: bool,
    ) -> Template {
        let (key, counter): (&[u8], &[u8]) = if tagged {
            (b"key:{tag}:__rand_int__", b"counter:{tag}:__rand_int__")
        } else {
            (b"key:__rand_int__", b"counter:__rand_int__")
        };
        let member: &[u8] = b"element:__rand_int__";
        match test {
            RedisTest::PingInline => Template::raw(b"PING\r\n"),
            RedisTest::PingMbulk => Template::command(&[b"PING"]),
            RedisTest::Set => Template::command(&[b"SET", key, data]),
            RedisTest::Get => Template::command(&[b"GET", key]),
            RedisTest::Incr => Template::command(&[b"INCR", counter]),
            RedisTest::Lpush | RedisTest::LrangePrefill => {
                Template::command(&[b"LPUSH", b"mylist", data])
            }
            RedisTest::Rpush => Template::command(&[b"RPUSH", b"mylist", data]),
            RedisTest::Lpop => Template::command(&[b"LPOP", b"mylist"]),
            RedisTest::Rpop => Template::command(&[b"RPOP", b"mylist"]),
            RedisTest::Sadd => Template::command(&[b"SADD", b"myset", member]),
            RedisTest::Hset => Template::command(&[b"HSET", b"myhash", member, data]),
            RedisTest::Spop => Template::command(&[b"SPOP", b"myset"]),
            RedisTest::Zadd => {
                let score: &[u8] = if random { RAND } else { b"0" };
                Template::command(&[b"ZADD", b"myzset", score, member])
            }
            RedisTest::Zpopmin => Template::command(&[b"ZPOPMIN", b"myzset"]),
            RedisTest::Lrange100 => Template::command(&[b"LRANGE", b"mylist", b"0", b"99"]),
            RedisTest::Lrange300 => Template::command(&[b"LRANGE", b"mylist", b"0", b"299"]),
            RedisTest::Lrange500 => Template::command(&[b"LRANGE", b"mylist", b"0", b"449"]),
            RedisTest::Lrange600 => Template::command(&[b"LRANGE", b"mylist", b"0", b"599"]),
            RedisTest::Mset => {
                let mut parts: Vec<&[u8]> = vec![b"MSET"];
                for _ in 0..10 {
                    parts.push(key);
                    parts.push(data);
                }
                Template::command(&parts)
            }
            RedisTest::Xadd => Template::command(&[b"XADD", b"mystream", b"*", b"myfield", data]),
            RedisTest::Command => {
                let value = String::from_utf8_lossy(data);
                let args: Vec<String> = command
                    .iter()
                    .map(|a| a.replace("__data__", &value))
                    .collect();
                let parts: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
                Template::command(&parts)
            }
        }
    }

    /// Append the command as it is (placeholders left in, as without
    /// `-r`), each `{tag}` holding `tag` when there is one.
    #[inline]
    pub fn write(&self, out: &mut BytesMut, tag: Option<[u8; 3]>) {
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        self.put_tag(out, at, tag);
    }

    #[inline]
    fn put_tag(&self, out: &mut BytesMut, at: usize, tag: Option<[u8; 3]>) {
        let Some(tag) = tag else { return };
        for &off in &self.tag {
            if let Some(slot) = out.get_mut(at + off + 1..at + off + 4) {
                slot.copy_from_slice(&tag);
            }
        }
    }

    /// Append the command with each placeholder replaced by `draw()`'s
    /// number in 12 digits (its last 12, as redis-benchmark writes them),
    /// and each `{tag}` holding `tag` when there is one.
    #[inline]
    pub fn write_drawn(
        &self,
        out: &mut BytesMut,
        tag: Option<[u8; 3]>,
        mut draw: impl FnMut() -> u64,
    ) {
        let at = out.len();
        out.extend_from_slice(&self.bytes);
        self.put_tag(out, at, tag);
        for &off in &self.rand {
            if let Some(slot) = out.get_mut(at + off..at + off + RAND_DIGITS) {
                put_digits(slot, draw());
            }
        }
    }
}

/// `n` in exactly `slot.len()` decimal digits, zero padded (higher digits
/// dropped).
#[inline]
pub fn put_digits(slot: &mut [u8], mut n: u64) {
    for b in slot.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Domain counters (index, name): what a reply said beyond "ok".
pub const DOMAINS: [&str; 15] = [
    "get.hits",
    "get.misses",
    "lpop.hits",
    "lpop.misses",
    "rpop.hits",
    "rpop.misses",
    "sadd.added",
    "hset.added",
    "spop.hits",
    "spop.misses",
    "zadd.added",
    "zpopmin.hits",
    "zpopmin.misses",
    "cluster.moved",
    "cluster.ask",
];
pub const GET_HITS: u16 = 0;
pub const GET_MISSES: u16 = 1;
pub const LPOP_HITS: u16 = 2;
pub const LPOP_MISSES: u16 = 3;
pub const RPOP_HITS: u16 = 4;
pub const RPOP_MISSES: u16 = 5;
pub const SADD_ADDED: u16 = 6;
pub const HSET_ADDED: u16 = 7;
pub const SPOP_HITS: u16 = 8;
pub const SPOP_MISSES: u16 = 9;
pub const ZADD_ADDED: u16 = 10;
pub const ZPOPMIN_HITS: u16 = 11;
pub const ZPOPMIN_MISSES: u16 = 12;
/// Redirects a cluster connection followed (counted by the stream, not
/// per reply).
pub const MOVED: u16 = 13;
pub const ASK: u16 = 14;

/// Error codes Redis puts first in an error reply; anything else is
/// counted as `other`.
const CLASSES: [&str; 24] = [
    "ERR",
    "WRONGTYPE",
    "OOM",
    "NOAUTH",
    "WRONGPASS",
    "NOPERM",
    "READONLY",
    "LOADING",
    "BUSY",
    "BUSYKEY",
    "NOSCRIPT",
    "MASTERDOWN",
    "MISCONF",
    "EXECABORT",
    "NOREPLICAS",
    "CROSSSLOT",
    "MOVED",
    "ASK",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "NOGROUP",
    "NOPROTO",
    "UNKILLABLE",
    "UNBLOCKED",
];

/// The static class of an error reply: its first word when Redis uses it
/// as a code (`ERR`, `WRONGTYPE`, `OOM`, ...), else `other`.
pub fn error_class(message: &[u8]) -> &'static str {
    let word = message.split(|&b| b == b' ').next().unwrap_or_default();
    CLASSES
        .iter()
        .find(|c| c.as_bytes() == word)
        .copied()
        .unwrap_or("other")
}

const UNEXPECTED: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "",
};
const WRONG_VALUE: OpError = OpError {
    kind: ErrorKind::Verification,
    class: "",
};

/// What `reply` means for `test`: ok (with a domain count), a server
/// error with its class, a value this workload never writes
/// (verification), or a reply of a type the command never gives
/// (protocol; the stream is still in step, so the connection stays).
#[inline]
pub fn classify(test: RedisTest, reply: Reply<'_>, data: &[u8]) -> Result<Option<u16>, OpError> {
    if let Reply::Error(msg) = reply {
        return Err(OpError::server(error_class(msg)));
    }
    let value = |v: &[u8], hit: u16| {
        if v == data {
            Ok(Some(hit))
        } else {
            Err(WRONG_VALUE)
        }
    };
    match (test, reply) {
        (RedisTest::PingInline | RedisTest::PingMbulk, Reply::Simple(b"PONG")) => Ok(None),
        (RedisTest::Set | RedisTest::Mset, Reply::Simple(b"OK")) => Ok(None),
        (RedisTest::Get, Reply::Bulk(Some(v))) => value(v, GET_HITS),
        (RedisTest::Get, Reply::Bulk(None)) => Ok(Some(GET_MISSES)),
        (RedisTest::Lpop, Reply::Bulk(Some(v))) => value(v, LPOP_HITS),
        (RedisTest::Lpop, Reply::Bulk(None)) => Ok(Some(LPOP_MISSES)),
        (RedisTest::Rpop, Reply::Bulk(Some(v))) => value(v, RPOP_HITS),
        (RedisTest::Rpop, Reply::Bulk(None)) => Ok(Some(RPOP_MISSES)),
        (RedisTest::Spop, Reply::Bulk(Some(_))) => Ok(Some(SPOP_HITS)),
        (RedisTest::Spop, Reply::Bulk(None)) => Ok(Some(SPOP_MISSES)),
        (
            RedisTest::Incr | RedisTest::Lpush | RedisTest::Rpush | RedisTest::LrangePrefill,
            Reply::Integer(_),
        ) => Ok(None),
        (RedisTest::Sadd, Reply::Integer(n)) => Ok((n == 1).then_some(SADD_ADDED)),
        (RedisTest::Hset, Reply::Integer(n)) => Ok((n == 1).then_some(HSET_ADDED)),
        (RedisTest::Zadd, Reply::Integer(n)) => Ok((n == 1).then_some(ZADD_ADDED)),
        (RedisTest::Zpopmin, Reply::Array(Some(a))) if a.len() == 2 => Ok(Some(ZPOPMIN_HITS)),
        (RedisTest::Zpopmin, Reply::Array(Some(a))) if a.is_empty() => Ok(Some(ZPOPMIN_MISSES)),
        (
            RedisTest::Lrange100
            | RedisTest::Lrange300
            | RedisTest::Lrange500
            | RedisTest::Lrange600,
            Reply::Array(Some(_)),
        ) => Ok(None),
        (RedisTest::Xadd, Reply::Bulk(Some(_))) => Ok(None),
        // Any answer but an error is an answer to a command of one's own.
        (RedisTest::Command, _) => Ok(None),
        _ => Err(UNEXPECTED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_redis_benchmarks() {
        assert_eq!(benchmark_data(3), b"VXK");
        assert_eq!(benchmark_data(0), b"");
        assert!(benchmark_data(1000)
            .iter()
            .all(|b| (b'0'..b'0' + 64).contains(b)));
    }

    #[test]
    fn templates_are_redis_benchmarks_commands() {
        let t = Template::of(RedisTest::Set, b"VXK", false, &[], false);
        assert_eq!(
            t.bytes,
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nVXK\r\n"
        );
        assert_eq!(t.rand, vec![22]);
        assert_eq!(
            Template::of(RedisTest::PingInline, b"", false, &[], false).bytes,
            b"PING\r\n"
        );
        let m = Template::of(RedisTest::Mset, b"x", true, &[], false);
        assert_eq!(m.rand.len(), 10);
        let z = Template::of(RedisTest::Zadd, b"x", true, &[], false);
        assert_eq!(z.rand.len(), 2);
        let z = Template::of(RedisTest::Zadd, b"x", false, &[], false);
        assert_eq!(z.rand.len(), 1);
        assert!(String::from_utf8_lossy(
            &Template::of(RedisTest::Lrange500, b"x", false, &[], false).bytes
        )
        .contains("449"));
    }

    #[test]
    fn placeholders_become_twelve_digits() {
        let t = Template::of(RedisTest::Get, b"x", true, &[], false);
        let mut out = BytesMut::new();
        let mut n = 41u64;
        let mut draw = || {
            n += 1;
            n
        };
        t.write_drawn(&mut out, None, &mut draw);
        t.write(&mut out, None);
        assert_eq!(
            &out[..],
            &b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n"[..]
        );
        // On a cluster: the tag in every key.
        let t = Template::of(RedisTest::Incr, b"x", true, &[], true);
        out.clear();
        t.write_drawn(&mut out, Some(*b"a1Z"), || 7);
        assert_eq!(
            &out[..],
            &b"*2\r\n$4\r\nINCR\r\n$26\r\ncounter:{a1Z}:000000000007\r\n"[..]
        );
        let mut slot = [0u8; 12];
        put_digits(&mut slot, 1_234_567_890_123_456);
        assert_eq!(&slot, b"567890123456");
    }

    #[test]
    fn replies_are_classified() {
        let d = b"VXK";
        assert_eq!(
            classify(RedisTest::Get, Reply::Bulk(Some(d)), d),
            Ok(Some(GET_HITS))
        );
        assert_eq!(
            classify(RedisTest::Get, Reply::Bulk(None), d),
            Ok(Some(GET_MISSES))
        );
        assert_eq!(
            classify(RedisTest::Get, Reply::Bulk(Some(b"other")), d)
                .unwrap_err()
                .kind,
            ErrorKind::Verification
        );
        assert_eq!(
            classify(
                RedisTest::Set,
                Reply::Error(b"WRONGTYPE Operation against a key"),
                d
            ),
            Err(OpError::server("WRONGTYPE"))
        );
        assert_eq!(
            classify(RedisTest::Set, Reply::Error(b"weird"), d),
            Err(OpError::server("other"))
        );
        assert_eq!(
            classify(RedisTest::Set, Reply::Integer(1), d)
                .unwrap_err()
                .kind,
            ErrorKind::Protocol
        );
        assert_eq!(classify(RedisTest::Sadd, Reply::Integer(0), d), Ok(None));
        assert_eq!(
            classify(RedisTest::Sadd, Reply::Integer(1), d),
            Ok(Some(SADD_ADDED))
        );
        assert_eq!(
            classify(RedisTest::PingInline, Reply::Simple(b"PONG"), d),
            Ok(None)
        );
    }
}
