//! Redis Cluster's key slots: a key belongs to slot `CRC16(key) mod 16384`
//! (CRC16 as XMODEM: polynomial 0x1021, initial value 0), where a key with
//! a hash tag (`{...}`, the first `{` and the first `}` after it, not empty
//! between) is hashed by its tag alone, so that keys sharing a tag share a
//! slot (docs/guides/redis-cluster.md).

/// The number of slots a cluster divides its keys over.
pub const SLOTS: usize = 16_384;

/// `SLOTS - 1`: a CRC16 masked by it is a slot.
const MASK: u16 = 0x3fff;

/// CRC16/XMODEM of `data`.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b).wrapping_shl(8);
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                crc.wrapping_shl(1) ^ 0x1021
            } else {
                crc.wrapping_shl(1)
            };
        }
    }
    crc
}

/// The part of `key` that is hashed: its hash tag, if it has one.
pub fn hashed(key: &[u8]) -> &[u8] {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = key.get(open.checked_add(1)?..)?;
        let close = rest.iter().position(|&b| b == b'}')?;
        if close == 0 {
            None
        } else {
            rest.get(..close)
        }
    });
    tag.unwrap_or(key)
}

/// The slot of `key`, in `0..SLOTS`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed(key)) & MASK
}

/// Bytes a [`slot_tags`] tag is made of (none of them a brace).
const TAG_BYTES: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// For every slot, a three-byte hash tag whose keys fall in it: the first
/// string of [`TAG_BYTES`] (in their order) with that slot. Made once, by
/// hashing every such string (62^3 of them; every slot has at least one).
/// redis-benchmark --cluster writes tags of up to three bytes the same way
/// (docs/guides/redis-cluster.md, "Key placement").
pub fn slot_tags() -> &'static [[u8; 3]] {
    static TAGS: std::sync::OnceLock<Vec<[u8; 3]>> = std::sync::OnceLock::new();
    TAGS.get_or_init(|| {
        let mut tags = vec![[0u8; 3]; SLOTS];
        let mut seen = vec![false; SLOTS];
        for &a in TAG_BYTES {
            for &b in TAG_BYTES {
                for &c in TAG_BYTES {
                    let slot = usize::from(crc16(&[a, b, c]) & MASK);
                    if let (Some(s), Some(t)) = (seen.get_mut(slot), tags.get_mut(slot)) {
                        if !*s {
                            *s = true;
                            *t = [a, b, c];
                        }
                    }
                }
            }
        }
        tags
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_has_a_tag_of_its_own() {
        let tags = slot_tags();
        assert_eq!(tags.len(), SLOTS);
        for (slot, tag) in tags.iter().enumerate() {
            let key = [b"key:{", &tag[..], b"}:000000000042"].concat();
            assert_eq!(usize::from(key_slot(&key)), slot, "{key:?}");
        }
    }

    #[test]
    fn crc16_is_xmodem() {
        // The check value of CRC-16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn slots_as_redis_computes_them() {
        // CLUSTER KEYSLOT on Redis 7.0.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"key:__rand_int__"), 13782);
        assert_eq!(key_slot(b"key:000000000042"), 7803);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(hashed(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hashed(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hashed(b"{"), b"{");
        assert_eq!(hashed(b"}{"), b"}{");
        assert!(usize::from(key_slot(b"\xff\xfe")) < SLOTS);
    }
}
