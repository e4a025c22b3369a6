//! The memcache workload's knobs: memaslap's load (get/set proportion, key
//! and value sizes, a window of keys per client, multiget, text or binary
//! protocol) and how many of the values read are compared byte for byte.

use serde::{Deserialize, Serialize};

use crate::SpecError;

/// Shortest key: the 16 characters that name a key's window and slot.
pub const MIN_KEY_SIZE: usize = 16;
/// Longest key memcached accepts.
pub const MAX_KEY_SIZE: usize = 250;
/// Largest value: memcached's largest configurable item (`-I 1024m`);
/// its default limit is 1 MiB, above which a set is a counted server error.
pub const MAX_VALUE_SIZE: usize = 1024 * 1024 * 1024;
/// Most keys in one get: keeps a text `get` line within a few tens of KB.
pub const MAX_MULTIGET: u32 = 100;
/// Most windows (clients over every process): the key names 24 bits.
pub const MAX_WINDOWS: u64 = 1 << 24;

/// memaslap's load on memcached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemcacheSpec {
    /// Binary protocol (`--binary`, memaslap's `-B`); text otherwise.
    pub binary: bool,
    /// `--ratio SETS:GETS`: of every `sets + gets` operations of a window,
    /// the first `sets` are sets.
    pub sets: u32,
    pub gets: u32,
    /// Every key is exactly this long.
    pub key_size: usize,
    /// Value sizes, inclusive; equal for a fixed size. A key's size is a
    /// function of the key, so any value read can be checked.
    pub value_min: usize,
    pub value_max: usize,
    /// Keys per window (memaslap's `--win_size`, per concurrency).
    pub window: u64,
    /// Keys per get request (memaslap's `--division`).
    pub multiget: u32,
    /// Fraction of get hits whose bytes are compared with what the run
    /// writes; every hit's length is checked.
    pub verify_gets: f64,
}

impl MemcacheSpec {
    /// `N` or `MIN-MAX` bytes.
    pub fn value_sizes(s: &str) -> Result<(usize, usize), SpecError> {
        let bad = || {
            SpecError::new(
                "--value-size",
                format!("expected BYTES or MIN-MAX, got '{s}'"),
            )
        };
        let num = |v: &str| v.trim().parse::<usize>().map_err(|_| bad());
        match s.split_once('-') {
            Some((a, b)) => Ok((num(a)?, num(b)?)),
            None => num(s).map(|n| (n, n)),
        }
    }

    /// A count with an optional `k` (1024) or `m` (1024²) suffix, as
    /// memaslap reads `--win_size`.
    pub fn count(flag: &'static str, s: &str) -> Result<u64, SpecError> {
        let t = s.trim();
        let (num, scale) = match t.as_bytes().last() {
            Some(b'k' | b'K') => (&t[..t.len() - 1], 1024),
            Some(b'm' | b'M') => (&t[..t.len() - 1], 1024 * 1024),
            _ => (t, 1),
        };
        num.parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| {
                SpecError::new(
                    flag,
                    format!("expected a count like 10000 or 10k, got '{s}'"),
                )
            })
    }

    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        if self.sets.checked_add(self.gets).unwrap_or(0) == 0 {
            return Err(SpecError::new("--ratio", "needs at least one set or get"));
        }
        if !(MIN_KEY_SIZE..=MAX_KEY_SIZE).contains(&self.key_size) {
            return Err(SpecError::new(
                "--key-size",
                format!("must be between {MIN_KEY_SIZE} and {MAX_KEY_SIZE} bytes"),
            ));
        }
        if self.value_min < 1 || self.value_min > self.value_max || self.value_max > MAX_VALUE_SIZE
        {
            return Err(SpecError::new(
                "--value-size",
                format!("sizes must be between 1 and {MAX_VALUE_SIZE} bytes, the smallest first"),
            ));
        }
        if !(1..=u64::from(u32::MAX)).contains(&self.window) {
            return Err(SpecError::new(
                "--window",
                "must be between 1 and 4294967295 keys",
            ));
        }
        if !(1..=MAX_MULTIGET).contains(&self.multiget) {
            return Err(SpecError::new(
                "--multiget",
                format!("must be between 1 and {MAX_MULTIGET} keys"),
            ));
        }
        if !(0.0..=1.0).contains(&self.verify_gets) {
            return Err(SpecError::new(
                "--verify-gets",
                "must be a fraction between 0 and 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> MemcacheSpec {
        MemcacheSpec {
            binary: false,
            sets: 1,
            gets: 9,
            key_size: 64,
            value_min: 1024,
            value_max: 1024,
            window: 10 * 1024,
            multiget: 1,
            verify_gets: 1.0,
        }
    }

    #[test]
    fn flags_parse_as_memaslap_writes_them() {
        assert_eq!(MemcacheSpec::count("--window", "10k").unwrap(), 10_240);
        assert_eq!(MemcacheSpec::count("--window", "2M").unwrap(), 2 << 20);
        assert_eq!(MemcacheSpec::count("--window", "77").unwrap(), 77);
        assert!(MemcacheSpec::count("--window", "k").is_err());
        assert_eq!(MemcacheSpec::value_sizes("100").unwrap(), (100, 100));
        assert_eq!(MemcacheSpec::value_sizes("10-20").unwrap(), (10, 20));
        assert_eq!(
            MemcacheSpec::value_sizes("x").unwrap_err().flag,
            "--value-size"
        );
    }

    #[test]
    fn bad_values_name_their_flag() {
        assert!(spec().validate().is_ok());
        type Change = fn(&mut MemcacheSpec);
        let cases: [(&str, Change); 6] = [
            ("--key-size", |s| s.key_size = 15),
            ("--key-size", |s| s.key_size = 251),
            ("--value-size", |s| s.value_min = 2000),
            ("--window", |s| s.window = 0),
            ("--multiget", |s| s.multiget = 0),
            ("--verify-gets", |s| s.verify_gets = 1.5),
        ];
        for (flag, change) in cases {
            let mut s = spec();
            change(&mut s);
            assert_eq!(s.validate().unwrap_err().flag, flag);
        }
    }
}
