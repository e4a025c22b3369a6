//! A proxy that loses writes the way a broken store does: every write is
//! acknowledged by the real server behind it, and the server's own
//! counters add up, but every `every`-th write lands under another key
//! (its first byte changed), so the key the client wrote is not there;
//! or it lands with its value's first byte changed ([`Harm::Value`]).
//! Replies pass back untouched, so pipelining and timing are the server's.
//! Commands are parsed on the way in only to find the writes: RESP
//! (`SET`, Redis; or `MSET` of a given number of keys, kv's write
//! transactions, whose first key is harmed) and memcached's text
//! protocol (`set`).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The protocol whose writes are counted and harmed.
#[derive(Debug, Clone, Copy)]
pub enum Proto {
    Resp,
    /// RESP, the writes being `MSET`s of exactly this many keys (kv's
    /// transactions, not its load or its clean-up, which carry more).
    RespMset(usize),
    MemcacheText,
}

/// What happens to every `every`-th write.
#[derive(Debug, Clone, Copy)]
pub enum Harm {
    /// Stored under another key: the one written is missing.
    Key,
    /// Stored with another value.
    Value,
}

pub struct Lossy {
    pub port: u16,
    /// Writes renamed, over every connection.
    pub lost: Arc<AtomicU64>,
}

impl Lossy {
    /// Proxy a fresh local port to `127.0.0.1:upstream`, harming every
    /// `every`-th write.
    pub fn start(upstream: u16, proto: Proto, every: u64, harm: Harm) -> Lossy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let writes = Arc::new(AtomicU64::new(0));
        let lost = Arc::new(AtomicU64::new(0));
        let (w, l) = (writes.clone(), lost.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || copy(s2, c2));
                let (w, l) = (w.clone(), l.clone());
                std::thread::spawn(move || rewrite(client, server, (proto, harm), every, &w, &l));
            }
        });
        Lossy { port, lost }
    }
}

/// Server to client, as it comes.
fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Client to server, whole commands at a time, every `every`-th write's
/// key or value changed in place (same length, so the framing stands).
fn rewrite(
    mut from: TcpStream,
    mut to: TcpStream,
    (proto, harm): (Proto, Harm),
    every: u64,
    writes: &AtomicU64,
    lost: &AtomicU64,
) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut done = 0;
        while let Some((len, write)) = command(&buf[done..], proto) {
            if let Some((key, value)) = write {
                let at = match harm {
                    Harm::Key => key,
                    Harm::Value => value,
                };
                if writes.fetch_add(1, Ordering::Relaxed) % every == every - 1 {
                    lost.fetch_add(1, Ordering::Relaxed);
                    let b = &mut buf[done + at];
                    *b = if *b == b'~' { b'!' } else { b'~' };
                }
            }
            done += len;
        }
        if to.write_all(&buf[..done]).is_err() {
            break;
        }
        buf.drain(..done);
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Where a write's key and value start.
type Written = Option<(usize, usize)>;

/// The length of the whole command at the start of `b`, and where its key
/// and value start when it is a write; `None` while it is incomplete.
fn command(b: &[u8], proto: Proto) -> Option<(usize, Written)> {
    match proto {
        Proto::Resp => resp(b, None),
        Proto::RespMset(keys) => resp(b, Some(keys)),
        Proto::MemcacheText => memcache(b),
    }
}

fn line(b: &[u8], from: usize) -> Option<usize> {
    b.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|i| from + i)
}

fn number(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// `*N\r\n` then N bulk strings; an inline command is one line. The
/// writes are `SET`s, or `MSET`s of `mset` keys.
fn resp(b: &[u8], mset: Option<usize>) -> Option<(usize, Written)> {
    let end = line(b, 0)?;
    if b.first() != Some(&b'*') {
        return Some((end + 2, None));
    }
    let n = number(&b[1..end])?;
    let mut pos = end + 2;
    let mut args = Vec::new();
    for _ in 0..n {
        let e = line(b, pos)?;
        let size = usize::try_from(number(b.get(pos + 1..e)?)?).ok()?;
        let start = e + 2;
        if b.len() < start + size + 2 {
            return None;
        }
        args.push((start, size));
        pos = start + size + 2;
    }
    let name = args.first().map(|&(at, size)| &b[at..at + size]);
    let is_set = match mset {
        None => name.is_some_and(|n| n.eq_ignore_ascii_case(b"set")) && n >= 3,
        Some(keys) => {
            name.is_some_and(|n| n.eq_ignore_ascii_case(b"mset")) && n as usize == 1 + 2 * keys
        }
    };
    Some((pos, is_set.then(|| (args[1].0, args[2].0))))
}

/// `set <key> <flags> <exptime> <bytes> [noreply]\r\n<data>\r\n`; any
/// other command is one line.
fn memcache(b: &[u8]) -> Option<(usize, Written)> {
    let end = line(b, 0)?;
    let head = &b[..end];
    if !head.starts_with(b"set ") {
        return Some((end + 2, None));
    }
    let bytes = head.split(|c| *c == b' ').nth(4).and_then(number)?;
    let total = end + 2 + usize::try_from(bytes).ok()? + 2;
    (b.len() >= total).then_some((total, Some((4, end + 2))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_framed_and_writes_found() {
        let set = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$2\r\nab\r\n";
        assert_eq!(resp(set, None), Some((set.len(), Some((17, 28)))));
        assert_eq!(&set[28..30], b"ab");
        assert_eq!(&set[17..22], b"key:1");
        assert_eq!(resp(&set[..set.len() - 1], None), None);
        assert_eq!(resp(b"*1\r\n$4\r\nPING\r\n", None), Some((14, None)));
        let mset = b"*3\r\n$4\r\nMSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        assert_eq!(resp(mset, Some(1)), Some((mset.len(), Some((18, 25)))));
        assert_eq!(resp(mset, Some(2)), Some((mset.len(), None)));
        assert_eq!(resp(mset, None), Some((mset.len(), None)));
        let mc = b"set kk 0 0 2\r\nab\r\nget kk\r\n";
        assert_eq!(memcache(mc), Some((18, Some((4, 14)))));
        assert_eq!(memcache(&mc[18..]), Some((8, None)));
        assert_eq!(memcache(&mc[..10]), None);
    }
}
