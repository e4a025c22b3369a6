//! memtier_benchmark's `--command` templates, compiled once: each word
//! split into literal bytes and the `__key__` / `__data__` placeholders,
//! so that sending is copying literals and the operation's key and value
//! straight into the RESP command (no string replaced per operation).
//!
//! A command's shape says what its reply can be checked against: `SET
//! __key__ __data__` writes a value the run knows (its keys are found
//! afterwards), `GET __key__` reads one; anything else is only told apart
//! by an error reply.

use bytes::BytesMut;
use loadrig_spec::MemtierCommand;
use loadrig_wire::step::Decimal;

/// memtier's placeholder for the operation's key.
pub const KEY: &str = "__key__";
/// memtier's placeholder for the operation's value.
pub const DATA: &str = "__data__";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Vec<u8>),
    Key,
    Data,
}

/// What a command's replies can be checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `SET __key__ __data__`: an OK, and the key holds the value after.
    Set,
    /// `GET __key__`: a value this run writes, or nothing.
    Get,
    /// Anything else: any reply but an error.
    Other,
}

/// One `--command`, ready to send.
#[derive(Debug, Clone)]
pub struct Compiled {
    args: Vec<Vec<Piece>>,
    pub shape: Shape,
    /// Whether a value is drawn for it (a `__data__` in it).
    pub uses_data: bool,
}

impl Compiled {
    pub fn new(c: &MemtierCommand) -> Compiled {
        let args: Vec<Vec<Piece>> = c.args.iter().map(|a| pieces(a)).collect();
        let name = c.args.first().map(|s| s.to_ascii_uppercase());
        let shape = match (name.as_deref(), &args[..]) {
            (Some("SET"), [_, k, d]) if k[..] == [Piece::Key] && d[..] == [Piece::Data] => {
                Shape::Set
            }
            (Some("GET"), [_, k]) if k[..] == [Piece::Key] => Shape::Get,
            _ => Shape::Other,
        };
        let uses_data = args.iter().flatten().any(|p| *p == Piece::Data);
        Compiled {
            args,
            shape,
            uses_data,
        }
    }

    /// Append the command with `key` and `value` in its placeholders.
    #[inline]
    pub fn write(&self, out: &mut BytesMut, key: &[u8], value: &[u8]) {
        out.extend_from_slice(b"*");
        out.extend_from_slice(Decimal::new(self.args.len() as u64).as_bytes());
        out.extend_from_slice(b"\r\n");
        for arg in &self.args {
            let len: usize = arg
                .iter()
                .map(|p| match p {
                    Piece::Literal(b) => b.len(),
                    Piece::Key => key.len(),
                    Piece::Data => value.len(),
                })
                .sum();
            out.extend_from_slice(b"$");
            out.extend_from_slice(Decimal::new(len as u64).as_bytes());
            out.extend_from_slice(b"\r\n");
            for p in arg {
                out.extend_from_slice(match p {
                    Piece::Literal(b) => b,
                    Piece::Key => key,
                    Piece::Data => value,
                });
            }
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// A word split at its placeholders.
fn pieces(word: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = word;
    loop {
        let next = [(KEY, Piece::Key), (DATA, Piece::Data)]
            .into_iter()
            .filter_map(|(p, piece)| rest.find(p).map(|at| (at, p.len(), piece)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, len, piece)) = next else {
            break;
        };
        if at > 0 {
            out.push(Piece::Literal(rest.as_bytes()[..at].to_vec()));
        }
        out.push(piece);
        rest = &rest[at + len..];
    }
    if !rest.is_empty() || out.is_empty() {
        out.push(Piece::Literal(rest.as_bytes().to_vec()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadrig_spec::KeyPattern;

    fn compiled(line: &str) -> Compiled {
        Compiled::new(&MemtierCommand {
            args: MemtierCommand::words(line).unwrap(),
            ratio: 1,
            pattern: KeyPattern::Random,
        })
    }

    #[test]
    fn placeholders_are_filled_anywhere_in_a_word() {
        let c = compiled("HSET h:__key__ f __data____data__");
        let mut out = BytesMut::new();
        c.write(&mut out, b"k1", b"vv");
        assert_eq!(
            &out[..],
            b"*4\r\n$4\r\nHSET\r\n$4\r\nh:k1\r\n$1\r\nf\r\n$4\r\nvvvv\r\n"
        );
        assert_eq!((c.shape, c.uses_data), (Shape::Other, true));
        let mut out = BytesMut::new();
        compiled("PING \"\"").write(&mut out, b"k", b"v");
        assert_eq!(&out[..], b"*2\r\n$4\r\nPING\r\n$0\r\n\r\n");
    }

    #[test]
    fn shapes() {
        assert_eq!(compiled("set __key__ __data__").shape, Shape::Set);
        assert_eq!(compiled("GET __key__").shape, Shape::Get);
        assert_eq!(compiled("SET x:__key__ __data__").shape, Shape::Other);
        assert_eq!(compiled("SET __key__ __data__ NX").shape, Shape::Other);
        assert!(!compiled("GET __key__").uses_data);
    }
}
