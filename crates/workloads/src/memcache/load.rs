//! What each operation of the memcache workload is, as a pure function of
//! (seed, index), and what every key and value looks like.
//!
//! **Windows.** Operation `i` belongs to window `w = i mod W`, where `W` is
//! the number of connections over every process: the engine deals indices
//! `g, g + W, ...` to worker `g`, so each connection works on its own
//! window of keys, as each of memaslap's concurrencies does. Within a
//! window, operation `j = i div W` is a set when `j mod (sets + gets) <
//! sets`, memaslap's proportion kept exactly window by window.
//!
//! **Keys.** The `s`-th set of a window writes slot `s mod window`, so the
//! window fills from slot 0 and then is overwritten in turn. A get reads
//! `multiget` consecutive slots (wrapping) from a start drawn uniformly
//! among the slots its window's earlier sets wrote, so gets find what
//! the run wrote, as memaslap's gets do; before the first set of a window
//! it draws from the whole window (a miss, unless an earlier run left the
//! key). Earlier operations of a window were sent earlier on the same
//! connection, and memcached answers a connection in order.
//!
//! A key is `lr`, the window in 6 hex digits, the slot in 8, then `-` up to
//! `--key-size`. Its value's length (in the `--value-size` range) and
//! bytes (a slice of one table of random letters, as memaslap's values
//! are) are hashes of (window, slot): a value is a function of its key,
//! whatever the seed, so any get, and any later read, can be checked.

use loadrig_engine::rng::{mix64, Rng};
use loadrig_spec::MemcacheSpec;

/// The operation kinds, as memcached names the commands.
pub const KINDS: [&str; 2] = ["set", "get"];
pub const SET: usize = 0;
pub const GET: usize = 1;

/// The domain counters: keys found and not found by gets, key by key (a
/// multiget counts each of its keys, as memcached's own counters do).
pub const DOMAINS: [&str; 2] = ["get_hits", "get_misses"];
pub const GET_HITS: usize = 0;
pub const GET_MISSES: usize = 1;

/// What a key starts with.
const PREFIX: &[u8; 2] = b"lr";
/// Where the digits end and the padding begins.
const NAMED: usize = 16;
/// Bytes of table beyond the largest value, so values start at many places.
const TABLE_SLACK: usize = 64 * 1024;
/// The table's seed: fixed, so a value does not depend on the run's seed.
const TABLE_SEED: u64 = 0x6c72_6d63_7461_626c;

/// One operation, drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: usize,
    pub window: u64,
    /// A set's slot; a get's first slot.
    pub slot: u64,
    /// A get's slots wrap within `0..span` (the slots written so far).
    pub span: u64,
    /// A get whose values are compared byte for byte.
    pub check: bool,
}

impl Op {
    /// Whether a get's request named slot `slot` of window `window`.
    pub fn asked(&self, keys: u32, window: u64, slot: u64) -> bool {
        window == self.window
            && slot < self.span
            && (slot + self.span - self.slot) % self.span < u64::from(keys).min(self.span)
    }

    /// The `k`-th slot a get asks for.
    #[inline]
    pub fn nth(&self, k: u32) -> u64 {
        (self.slot + u64::from(k)) % self.span
    }
}

/// The load, ready to draw operations. Shared by every connection.
#[derive(Debug)]
pub struct Load {
    pub spec: MemcacheSpec,
    /// `W`: windows, one per connection over every process.
    pub windows: u64,
    seed: u64,
    cycle: u64,
    /// Values are slices of this.
    table: Vec<u8>,
    /// A key with its padding, digits to be written.
    template: Vec<u8>,
}

impl Load {
    pub fn new(spec: MemcacheSpec, windows: u64, seed: u64) -> Load {
        let mut rng = Rng::stream(TABLE_SEED, 0);
        const LETTERS: &[u8; 62] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let table = (0..spec.value_max + TABLE_SLACK)
            .map(|_| LETTERS[rng.below(LETTERS.len() as u64) as usize])
            .collect();
        let mut template = vec![b'-'; spec.key_size.max(NAMED)];
        template[..2].copy_from_slice(PREFIX);
        Load {
            cycle: u64::from(spec.sets) + u64::from(spec.gets),
            windows: windows.max(1),
            seed,
            table,
            template,
            spec,
        }
    }

    /// Set or get: the window's proportion.
    #[inline]
    pub fn kind(&self, index: u64) -> usize {
        if (index / self.windows) % self.cycle < u64::from(self.spec.sets) {
            SET
        } else {
            GET
        }
    }

    /// Sets among a window's first `j` operations.
    #[inline]
    pub fn sets_before(&self, j: u64) -> u64 {
        let sets = u64::from(self.spec.sets);
        (j / self.cycle) * sets + (j % self.cycle).min(sets)
    }

    /// Operation `index`.
    #[inline]
    pub fn op(&self, index: u64) -> Op {
        let window = index % self.windows;
        let j = index / self.windows;
        let before = self.sets_before(j);
        let size = self.spec.window;
        if (j % self.cycle) < u64::from(self.spec.sets) {
            return Op {
                kind: SET,
                window,
                slot: before % size,
                span: 1,
                check: false,
            };
        }
        let span = match before.min(size) {
            0 => size,
            n => n,
        };
        let mut rng = Rng::for_op(self.seed, index);
        let slot = rng.below(span);
        let p = self.spec.verify_gets;
        let check = p >= 1.0 || (p > 0.0 && rng.chance(p));
        Op {
            kind: GET,
            window,
            slot,
            span,
            check,
        }
    }

    /// The key of `slot` in `window`, into `key` (of `--key-size` bytes).
    #[inline]
    pub fn key(&self, window: u64, slot: u64, key: &mut [u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let Some(named) = key.get_mut(2..NAMED) else {
            return;
        };
        let (w, s) = named.split_at_mut(6);
        for (i, d) in w.iter_mut().enumerate() {
            *d = HEX[((window >> (4 * (5 - i))) & 0xf) as usize];
        }
        for (i, d) in s.iter_mut().enumerate() {
            *d = HEX[((slot >> (4 * (7 - i))) & 0xf) as usize];
        }
    }

    /// A key buffer, padded, with its digits still to write.
    pub fn key_buffer(&self) -> Vec<u8> {
        self.template.clone()
    }

    /// The (window, slot) a key of this run's shape names, if it is one.
    pub fn parse_key(&self, key: &[u8]) -> Option<(u64, u64)> {
        if key.len() != self.template.len() || key.get(..2)? != PREFIX {
            return None;
        }
        if key.get(NAMED..)? != self.template.get(NAMED..)? {
            return None;
        }
        let hex = |digits: &[u8]| {
            digits.iter().try_fold(0u64, |acc, &d| {
                let v = (d as char).to_digit(16)?;
                // Lower case only, as `key` writes them.
                (!d.is_ascii_uppercase()).then_some(acc << 4 | u64::from(v))
            })
        };
        Some((hex(key.get(2..8)?)?, hex(key.get(8..NAMED)?)?))
    }

    /// The value of `slot` in `window`: its length and bytes are hashes of
    /// the two.
    #[inline]
    pub fn value(&self, window: u64, slot: u64) -> &[u8] {
        let h = mix64(window << 32 ^ slot ^ TABLE_SEED);
        let (min, max) = (self.spec.value_min, self.spec.value_max);
        let size = min + (h % (max - min + 1) as u64) as usize;
        let room = self.table.len() - size + 1;
        let at = ((h >> 32) % room as u64) as usize;
        self.table.get(at..at + size).unwrap_or_default()
    }

    /// Operations of window `w` among indices `0..n`.
    pub fn ops_in(&self, w: u64, n: u64) -> u64 {
        if n > w {
            (n - 1 - w) / self.windows + 1
        } else {
            0
        }
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
            window: 100,
            multiget: 1,
            verify_gets: 1.0,
        }
    }

    #[test]
    fn each_window_keeps_the_proportion_and_fills_in_turn() {
        let l = Load::new(spec(), 4, 7);
        // Window 1's operations are indices 1, 5, 9, ...; its first is a set.
        let ops: Vec<Op> = (0..40).map(|j| l.op(1 + 4 * j)).collect();
        assert!(ops.iter().all(|o| o.window == 1));
        let sets: Vec<u64> = ops
            .iter()
            .filter(|o| o.kind == SET)
            .map(|o| o.slot)
            .collect();
        assert_eq!(sets, [0, 1, 2, 3]);
        // Gets read only slots written before them.
        for (j, o) in ops.iter().enumerate() {
            if o.kind == GET {
                assert!(o.slot < l.sets_before(j as u64), "{j}: {o:?}");
            }
        }
        let all = (0..100_000).filter(|&i| l.kind(i) == SET).count();
        assert_eq!(all, 10_000);
        assert_eq!(l.ops_in(1, 9), 2);
        assert_eq!(l.ops_in(3, 3), 0);
        assert_eq!(l.ops_in(0, 4), 1);
    }

    #[test]
    fn keys_name_their_slot_and_values_follow_from_keys() {
        let mut s = spec();
        s.value_min = 10;
        s.value_max = 20;
        let l = Load::new(s, 3, 1);
        let mut key = l.key_buffer();
        assert_eq!(key.len(), 64);
        l.key(2, 0x1234_5678, &mut key);
        assert!(key.starts_with(b"lr00000212345678----"), "{key:?}");
        assert_eq!(l.parse_key(&key), Some((2, 0x1234_5678)));
        assert_eq!(l.parse_key(&key[..63]), None);
        key[20] = b'x';
        assert_eq!(l.parse_key(&key), None);
        let v = l.value(2, 9);
        assert!((10..=20).contains(&v.len()));
        assert_eq!(v, Load::new(spec_sized(10, 20), 9, 99).value(2, 9));
        let sizes: std::collections::HashSet<usize> =
            (0..200).map(|s| l.value(0, s).len()).collect();
        assert!(sizes.len() > 5);
    }

    fn spec_sized(min: usize, max: usize) -> MemcacheSpec {
        MemcacheSpec {
            value_min: min,
            value_max: max,
            ..spec()
        }
    }

    #[test]
    fn a_multiget_asks_for_consecutive_slots() {
        let o = Op {
            kind: GET,
            window: 1,
            slot: 8,
            span: 10,
            check: true,
        };
        assert_eq!((o.nth(0), o.nth(1), o.nth(3)), (8, 9, 1));
        assert!(o.asked(4, 1, 8) && o.asked(4, 1, 1) && !o.asked(4, 1, 2));
        assert!(!o.asked(4, 0, 8) && !o.asked(4, 1, 10));
    }

    #[test]
    fn verify_gets_draws_a_share() {
        let mut s = spec();
        s.verify_gets = 0.25;
        let l = Load::new(s, 1, 3);
        let gets: Vec<Op> = (0..40_000)
            .map(|i| l.op(i))
            .filter(|o| o.kind == GET)
            .collect();
        // Each get is checked exactly when its second draw (after the
        // slot's) falls under the share: a seeded draw, no tolerance.
        for i in (0..40_000).filter(|&i| l.op(i).kind == GET) {
            let o = l.op(i);
            let mut rng = Rng::for_op(3, i);
            rng.below(o.span);
            assert_eq!(o.check, rng.chance(0.25), "op {i}");
        }
        // And about a quarter of them (within 4 sigma).
        let n = gets.len() as f64;
        let share = gets.iter().filter(|o| o.check).count() as f64 / n;
        let sigma = (0.25 * 0.75 / n).sqrt();
        assert!((share - 0.25).abs() < 4.0 * sigma, "{share}");
    }
}
