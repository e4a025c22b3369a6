//! A pure, synchronous codec for the key-value protocols loadrig drives:
//! RESP2 (Redis) and memcached's text and binary protocols. No sockets, no
//! async runtime, just bytes in and bytes out, on the hot path of a load
//! generator.
//!
//! Layers, as in mini-redis, one module per protocol:
//!
//! - **bytes → request**: encoders append a request to a caller-owned
//!   [`bytes::BytesMut`] (the connection's write buffer), integers formatted
//!   on the stack, nothing allocated.
//! - **bytes → frame**: a parser looks at the front of a read buffer and
//!   says `Ok(None)` when a whole reply is not there yet (never an error),
//!   or returns the reply and how many bytes it took, so the caller can
//!   `advance` past it and parse the next pipelined one.
//! - **frame → typed reply**: replies borrow from the read buffer (a GET's
//!   value is a slice, not a copy); multi-element replies (RESP arrays,
//!   memcached multi-get) are validated once and then iterated lazily.
//!
//! Modules:
//!
//! - [`resp`]: commands as arrays of bulk strings; replies of the five RESP2
//!   types, with limits on bulk length, array count and nesting.
//! - [`memcache::text`]: get/gets (one or many keys), set/add/replace,
//!   delete, incr/decr; `VALUE … END` blocks, status lines, error lines,
//!   numbers.
//! - [`memcache::binary`]: the 24-byte header, Get/GetK/GetQ/GetKQ,
//!   Set/SetQ, Delete, Noop with opaque; response packets as header fields
//!   and extras/key/value slices.
//!
//! Parsers never panic and never allocate on any input: every length from
//! the wire is checked against the bytes present and against a sanity limit
//! (public constants in each module) before it is used, so a hostile or
//! corrupt stream can neither make a reader buffer without bound nor
//! recurse. Encoders that can fail (memcached keys with spaces, lengths a
//! header cannot hold) leave the buffer exactly as it was.
//!
//! ```
//! use bytes::{Buf, BytesMut};
//! use loadrig_wire::kv::memcache::text::{self, Response, StoreCmd, StoreOpts};
//!
//! let mut out = BytesMut::new();
//! text::encode_store(&mut out, StoreCmd::Set, b"k", b"v", StoreOpts::default()).unwrap();
//! text::encode_get(&mut out, b"k").unwrap();
//! assert_eq!(&out[..], b"set k 0 0 1\r\nv\r\nget k\r\n");
//!
//! let mut input = BytesMut::from(&b"STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n"[..]);
//! let (r, n) = text::parse_response(&input).unwrap().unwrap();
//! assert_eq!(r, Response::Stored);
//! input.advance(n);
//! let (r, _) = text::parse_response(&input).unwrap().unwrap();
//! let Response::Values(items) = r else { unreachable!() };
//! assert_eq!(items.first().map(|i| i.value), Some(&b"v"[..]));
//! ```

pub mod memcache;
mod num;
pub mod resp;
use crate::step;
