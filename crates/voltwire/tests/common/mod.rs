//! Helpers shared by the integration tests: writing expected bytes by hand.
#![allow(dead_code)]

/// Parses whitespace-separated hex (`"00 0a ff"`), ignoring `|` separators
/// and anything after `#` on a line, so expected frames can be annotated.
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

/// The bytes of `s` preceded by their big-endian `i32` length.
pub fn lp(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// Concatenates byte pieces.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Wraps a body (version byte first) in a 4-byte length prefix.
pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}
