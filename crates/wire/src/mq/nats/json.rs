//! Owns the JSON of `INFO` and `CONNECT`: kept as the raw slice, with a
//! minimal scanner that finds one top-level field's value when asked. No
//! serde, no allocation, no recursion; nothing is scanned unless a field is
//! asked for.
//!
//! The scanner walks the top-level object key by key and skips values
//! whole (strings honouring escapes, nested objects and arrays by depth),
//! so a key inside a nested object or inside a string is never mistaken
//! for a top-level one. It does not validate the JSON beyond what finding
//! a field needs: malformed JSON yields `None`, never a panic or an error.

/// The JSON argument of an `INFO` or `CONNECT`, borrowed from the read
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Json<'a>(&'a [u8]);

impl<'a> Json<'a> {
    /// Wraps raw JSON text.
    pub fn new(raw: &'a [u8]) -> Self {
        Self(raw)
    }

    /// The raw JSON text, as received.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The raw text of the top-level field `key`'s value (a string keeps
    /// its quotes), or `None` if there is no such field or the JSON breaks
    /// before it. Keys are compared as written, escapes not decoded; the
    /// first of duplicate keys wins.
    pub fn field(&self, key: &str) -> Option<&'a [u8]> {
        let mut c = Cursor { s: self.0, pos: 0 };
        c.ws();
        c.eat(b'{')?;
        loop {
            c.ws();
            if c.peek()? == b'}' {
                return None;
            }
            let k = c.string()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            let start = c.pos;
            c.value()?;
            let v = self.0.get(start..c.pos)?;
            if k == key.as_bytes() {
                return Some(v);
            }
            c.ws();
            match c.peek()? {
                b',' => c.pos = c.pos.saturating_add(1),
                _ => return None,
            }
        }
    }

    /// A string field's content, if it holds no escapes (`server_id`,
    /// `version` and the like never do) and is UTF-8.
    pub fn str_field(&self, key: &str) -> Option<&'a str> {
        let v = self.field(key)?;
        let inner = v.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        if inner.contains(&b'\\') {
            return None;
        }
        std::str::from_utf8(inner).ok()
    }

    /// An unsigned integer field (no sign, fraction or exponent).
    pub fn u64_field(&self, key: &str) -> Option<u64> {
        crate::step::parse_u64(self.field(key)?)
    }

    /// A `true`/`false` field.
    pub fn bool_field(&self, key: &str) -> Option<bool> {
        match self.field(key)? {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// `INFO`'s `max_payload`: the largest payload the server accepts.
    pub fn max_payload(&self) -> Option<u64> {
        self.u64_field("max_payload")
    }

    /// `INFO`'s `server_id`.
    pub fn server_id(&self) -> Option<&'a str> {
        self.str_field("server_id")
    }

    /// `INFO`'s `version` (of nats-server), or `CONNECT`'s (of the client).
    pub fn version(&self) -> Option<&'a str> {
        self.str_field("version")
    }
}

/// A position in JSON text. Every method returns `None` at the end of the
/// text or on a byte that cannot come next.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos = self.pos.saturating_add(1);
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.bump()? == want).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos = self.pos.saturating_add(1);
        }
    }

    /// A string at the cursor; returns its content between the quotes,
    /// escapes left as they are.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.pos;
        loop {
            match self.bump()? {
                b'"' => return self.s.get(start..self.pos.saturating_sub(1)),
                b'\\' => {
                    self.bump()?;
                }
                _ => {}
            }
        }
    }

    /// Skips one value: a string, an object or array (by depth, strings
    /// inside skipped whole), or a scalar (number, `true`, `false`, `null`)
    /// up to the next delimiter.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth = depth.saturating_add(1),
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                self.pos = self.pos.saturating_add(1);
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos = self.pos.saturating_add(1);
                }
            }
            _ => {
                let start = self.pos;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                        break;
                    }
                    self.pos = self.pos.saturating_add(1);
                }
                (self.pos > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Json;

    const INFO: &[u8] = br#"{"server_id":"Zk0GQ3JBSrg3oyxCRRlE09","version":"1.2.0","proto":1,"go":"go1.10.3","host":"0.0.0.0","port":4222,"max_payload":1048576,"client_id":2392}"#;

    #[test]
    fn finds_top_level_fields() {
        let j = Json::new(INFO);
        assert_eq!(j.server_id(), Some("Zk0GQ3JBSrg3oyxCRRlE09"));
        assert_eq!(j.version(), Some("1.2.0"));
        assert_eq!(j.max_payload(), Some(1_048_576));
        assert_eq!(j.u64_field("client_id"), Some(2392));
        assert_eq!(j.field("host"), Some(&br#""0.0.0.0""#[..]));
        assert_eq!(j.field("nope"), None);
        assert_eq!(j.u64_field("version"), None);
    }

    #[test]
    fn nested_and_quoted_keys_are_not_top_level() {
        let j = Json::new(
            br#" { "a" : {"max_payload":1,"x":["}",{"y":"\""}]} , "name":"max_payload\"", "connect_urls":["1:2","3:4"], "max_payload" : 7 , "ok":true }"#,
        );
        assert_eq!(j.max_payload(), Some(7));
        assert_eq!(j.bool_field("ok"), Some(true));
        assert_eq!(j.field("connect_urls"), Some(&br#"["1:2","3:4"]"#[..]));
        // An escaped string is found raw but not offered as &str.
        assert_eq!(j.field("name"), Some(&br#""max_payload\"""#[..]));
        assert_eq!(j.str_field("name"), None);
    }

    #[test]
    fn broken_json_is_none_not_a_panic() {
        for bad in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"a\"",
            b"{\"a\":",
            b"{\"a\":}",
            b"{\"a\":1 \"max_payload\":2}",
            b"{\"a\":\"unterminated",
            b"{\"a\":{\"b\":[1,2}",
            b"{\"max_payload\":-1}",
            b"{\"max_payload\":1e3}",
            b"not json",
        ] {
            assert_eq!(Json::new(bad).max_payload(), None, "{bad:?}");
        }
        // Fields before the break are still found.
        assert_eq!(Json::new(b"{\"max_payload\":5,").max_payload(), Some(5));
    }
}
