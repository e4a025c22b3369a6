//! A Redis-compatible server that implements a subset of the commands:
//! `PING`, `SET`, `GET`, `INCR` and `DEL` on one in-memory keyspace shared
//! by its connections; everything else (`SELECT`, `MGET`, `INFO`,
//! `CONFIG`, `SCAN`, ...) is refused as such servers refuse it, with
//! `-ERR unknown command`.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::delayed::read_command;
use super::own_server;

/// The keys the server holds, for the test to look at.
pub type Keys = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// Start one on a free port: its port, its stop flag, its keys.
pub fn start() -> (u16, Arc<AtomicBool>, Keys) {
    let keys: Keys = Arc::default();
    let held = keys.clone();
    let (port, stop) = own_server(move |conn, _| {
        let Ok(mut out) = conn.try_clone() else {
            return;
        };
        let mut r = BufReader::new(conn);
        while let Some(c) = read_command(&mut r) {
            let reply = answer(&held, &c);
            // Flushed per reply: pipelined commands are answered in order.
            if out.write_all(&reply).is_err() {
                return;
            }
        }
    });
    (port, stop, keys)
}

fn answer(keys: &Keys, c: &[Vec<u8>]) -> Vec<u8> {
    let mut keys = keys.lock().unwrap();
    let name = c
        .first()
        .map(|n| n.to_ascii_uppercase())
        .unwrap_or_default();
    let bulk = |v: Option<&Vec<u8>>| match v {
        Some(v) => [format!("${}\r\n", v.len()).as_bytes(), v, b"\r\n"].concat(),
        None => b"$-1\r\n".to_vec(),
    };
    match (name.as_slice(), c.len()) {
        (b"PING", 1) => b"+PONG\r\n".to_vec(),
        (b"SET", 3) => {
            keys.insert(c[1].clone(), c[2].clone());
            b"+OK\r\n".to_vec()
        }
        (b"GET", 2) => bulk(keys.get(&c[1])),
        (b"INCR", 2) => {
            let old = keys.get(&c[1]).map_or(Some(0), |v| {
                std::str::from_utf8(v).ok()?.parse::<i64>().ok()
            });
            match old {
                Some(n) => {
                    keys.insert(c[1].clone(), (n + 1).to_string().into_bytes());
                    format!(":{}\r\n", n + 1).into_bytes()
                }
                None => b"-ERR value is not an integer or out of range\r\n".to_vec(),
            }
        }
        (b"DEL", n) if n > 1 => {
            let gone = c[1..].iter().filter(|k| keys.remove(*k).is_some()).count();
            format!(":{gone}\r\n").into_bytes()
        }
        _ => format!(
            "-ERR unknown command '{}'\r\n",
            String::from_utf8_lossy(c.first().map_or(&b""[..], |n| n))
        )
        .into_bytes(),
    }
}
