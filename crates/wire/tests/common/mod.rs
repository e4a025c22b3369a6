//! Helpers shared by the codecs' integration tests: expected bytes written
//! by hand in annotated hex, the "every prefix is incomplete" check, and a
//! small deterministic PRNG.
#![allow(dead_code)]

use std::fmt::Debug;

/// Parses whitespace-separated hex (`"80 00 | 00 05"`), ignoring `|`
/// separators and anything after `#` on a line, so expected packets can be
/// annotated field by field.
pub fn hex(s: &str) -> Vec<u8> {
    s.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split_whitespace())
        .filter(|t| *t != "|")
        .flat_map(|t| {
            assert!(t.len() % 2 == 0, "odd hex token {t}");
            (0..t.len())
                .step_by(2)
                .map(move |i| u8::from_str_radix(&t[i..i + 2], 16).expect("hex"))
        })
        .collect()
}

/// Concatenates byte pieces.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// The bytes of `s` preceded by their big-endian `i32` length (VoltDB's
/// strings).
pub fn lp(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// Wraps a body (version byte first) in VoltDB's 4-byte length prefix.
pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// Asserts that `parse` (a parser reduced to the length it consumed, see
/// [`len_of`]) finds exactly one whole frame of `frame.len()` bytes in
/// `frame`, still finds it (same length) with trailing bytes after it, and
/// calls every strict prefix incomplete: never an error, never a frame.
pub fn assert_frame<E: Debug>(frame: &[u8], parse: impl Fn(&[u8]) -> Result<Option<usize>, E>) {
    for cut in 0..frame.len() {
        match parse(&frame[..cut]) {
            Ok(None) => {}
            Ok(Some(n)) => panic!(
                "prefix of {cut}/{} bytes parsed as a frame of {n}: {:?}",
                frame.len(),
                String::from_utf8_lossy(&frame[..cut])
            ),
            Err(e) => panic!(
                "prefix of {cut}/{} bytes is an error {e:?}: {:?}",
                frame.len(),
                String::from_utf8_lossy(&frame[..cut])
            ),
        }
    }
    match parse(frame) {
        Ok(Some(n)) => assert_eq!(n, frame.len(), "whole frame length"),
        Ok(None) => panic!("whole frame is incomplete"),
        Err(e) => panic!("whole frame is an error {e:?}"),
    }
    let mut longer = frame.to_vec();
    // What could follow in any of the protocols: RESP, memcached binary,
    // NATS, MQTT.
    longer.extend_from_slice(b"+trailing\r\n\x81\x00PING\r\n\x30\x00\xff");
    match parse(&longer) {
        Ok(Some(n)) => assert_eq!(n, frame.len(), "frame length with bytes after it"),
        other => panic!("frame followed by more bytes: {other:?}"),
    }
}

/// Reduces a parser's answer to the number of bytes it consumed.
#[macro_export]
macro_rules! len_of {
    ($parse:path) => {
        |b: &[u8]| $parse(b).map(|o| o.map(|(_, n)| n))
    };
}

/// A small deterministic PRNG (xorshift64) for the fuzz loops.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// What a protocol's fuzz loop mixes in: single bytes that matter to its
/// parsers, and whole tokens of its grammar.
pub struct Dict {
    pub interesting: &'static [u8],
    pub tokens: &'static [&'static [u8]],
}

/// One of `seeds` (sometimes two back to back, as pipelined), changed a
/// few times: bytes replaced, cut, inserted, removed, a slice repeated, a
/// byte nudged by one (byte 1 half the time: MQTT's remaining length), a
/// token of the grammar put in.
pub fn mutate(rng: &mut XorShift, seeds: &[Vec<u8>], dict: &Dict) -> Vec<u8> {
    let interesting = dict.interesting;
    let mut b = seeds[rng.below(seeds.len())].clone();
    if rng.below(4) == 0 {
        b.extend_from_slice(&seeds[rng.below(seeds.len())]);
    }
    for _ in 0..=rng.below(4) {
        let len = b.len();
        match rng.below(8) {
            0 if len > 0 => b[rng.below(len)] = rng.next() as u8,
            1 if len > 0 => b[rng.below(len)] = interesting[rng.below(interesting.len())],
            2 => b.truncate(rng.below(len + 1)),
            3 => b.insert(
                rng.below(len + 1),
                interesting[rng.below(interesting.len())],
            ),
            4 if len > 0 => {
                b.remove(rng.below(len));
            }
            5 if len > 0 => {
                let from = rng.below(len);
                let to = from + rng.below(len - from + 1);
                let piece = b[from..to].to_vec();
                let at = rng.below(len + 1);
                b.splice(at..at, piece);
            }
            6 if len > 1 => {
                let at = if rng.below(2) == 0 { 1 } else { rng.below(len) };
                b[at] = b[at].wrapping_add(if rng.below(2) == 0 { 1 } else { 0xff });
            }
            _ => {
                let t = dict.tokens[rng.below(dict.tokens.len())];
                let at = rng.below(len + 1);
                b.splice(at..at, t.iter().copied());
            }
        }
    }
    b
}

/// Random bytes, or a run of the grammar's tokens in random order.
pub fn noise(rng: &mut XorShift, dict: &Dict) -> Vec<u8> {
    if rng.below(2) == 0 {
        let cap = if rng.below(8) == 0 { 512 } else { 40 };
        (0..rng.below(cap)).map(|_| rng.next() as u8).collect()
    } else {
        let parts: Vec<&[u8]> = (0..rng.below(24))
            .map(|_| dict.tokens[rng.below(dict.tokens.len())])
            .collect();
        parts.concat()
    }
}
