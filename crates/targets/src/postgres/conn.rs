//! The hot path's PostgreSQL client (docs/guides/postgres.md), hand written on
//! the shared [`Socket`] and `loadrig_wire::pg`: a connection logs in
//! (SCRAM-SHA-256, md5, cleartext or trust; TLS first when `sslmode` asks),
//! parses its statements once, named `s0`, `s1`..., and then each call
//! appends Bind, Execute and Sync to the write buffer. A Sync per call
//! makes each call its own implicit transaction: an error fails that call
//! only, and its ReadyForQuery says where its answer ends.
//!
//! Calls in flight wait in a FIFO with the function that reads their
//! answer; `recv` reads the answers where they lie in the read buffer
//! (BindComplete, DataRow, CommandComplete or ErrorResponse, then
//! ReadyForQuery; notices, parameter changes and notifications skipped).
//! Both buffers and the FIFO live here and a frame leaves the buffer only
//! once read, so dropping `recv` (the engine serves a timer) loses nothing.
//! Bytes that are not the protocol break the connection, never the process.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::pg::{self, tag, Auth, DataRow, MAX_FRAME};
use loadrig_workloads::Reply;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};

use super::{sqlstate_class, SslMode};
use crate::settings::Connector;
use crate::socket::{said, Socket};
use crate::tls::Check;

/// The largest read step: answers on the hot path are a few dozen bytes
/// per call, so this is many calls' worth.
const READ_CHUNK: usize = 16 * 1024;

/// The statements' names, by index: static, so a call names its statement
/// without formatting.
const NAMES: [&str; 8] = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];

/// What a connection needs to log in.
#[derive(Debug)]
pub(crate) struct Login {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: String,
    pub(super) password: Option<String>,
    pub(super) database: String,
    /// `options` of the startup message (`-c search_path=...`), if any.
    pub(super) options: Option<String>,
    pub(super) mode: SslMode,
    /// The target's settings: how long opening a connection may take (TCP,
    /// TLS, login and the statements' Parse together), what TLS trusts.
    pub(super) via: Arc<Connector>,
}

/// What a call's answer must hold, for the calls that check what they
/// read (Hello's Select: the two text cells); empty otherwise.
pub(crate) type Expect = (&'static str, &'static str);

/// Reads a call's answer from its first row (`None`: no row came).
pub(crate) type Decode<R> = fn(Option<DataRow<'_>>, Expect) -> Result<R, OpError>;

/// One connection: its socket, its statements, its calls in flight.
pub struct Wire<R> {
    sock: Socket,
    login: Arc<Login>,
    sql: Arc<[String]>,
    /// Calls in flight, oldest first.
    calls: VecDeque<(Tag, Decode<R>, Expect)>,
    /// The oldest call's answer so far: from its first row, or its error.
    answer: Option<Result<R, OpError>>,
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
}

impl<R> Wire<R> {
    /// Connect, log in and parse `sql` (at most eight statements).
    pub(crate) async fn open(login: Arc<Login>, sql: Arc<[String]>) -> Result<Wire<R>, String> {
        let sock = open(&login, &sql).await?;
        Ok(Wire {
            sock,
            login,
            sql,
            calls: VecDeque::new(),
            answer: None,
            carried: (0, 0),
        })
    }

    /// Queue a call of statement `statement` with `count` parameters that
    /// `params` writes (`loadrig_wire::pg::param_*`). Never blocks: the
    /// bytes go out at the next `next`.
    #[inline]
    pub(crate) fn call(
        &mut self,
        statement: usize,
        count: u16,
        (tag, decode, expect): (Tag, Decode<R>, Expect),
        params: impl FnOnce(&mut BytesMut),
    ) {
        // An unknown index names the unnamed statement, which is never
        // parsed: the server refuses the call, the connection lives on.
        let name = NAMES.get(statement).copied().unwrap_or_default();
        let w = &mut self.sock.wbuf;
        pg::bind(w, name, count, params);
        pg::execute(w);
        pg::sync(w);
        self.calls.push_back((tag, decode, expect));
    }

    /// The oldest call's answer. Cancel safe.
    pub(crate) async fn next(&mut self) -> Reply<R> {
        loop {
            match self.step() {
                Ok(Some(reply)) => return reply,
                Ok(None) => {}
                Err(e) => return Reply::Broken(e),
            }
            if self.calls.is_empty() {
                return Reply::Broken(OpError::new(ErrorKind::Protocol));
            }
            if self.sock.fill().await.is_err() {
                return Reply::Broken(OpError::new(ErrorKind::Io));
            }
        }
    }

    /// Read the frames in the buffer up to the end of the oldest call's
    /// answer (`Ok(None)`: not all there yet).
    fn step(&mut self) -> Result<Option<Reply<R>>, OpError> {
        let protocol = || OpError::new(ErrorKind::Protocol);
        loop {
            let f = match pg::frame(&self.sock.rbuf, MAX_FRAME) {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(None),
                Err(_) => return Err(protocol()),
            };
            let mut done = None;
            match f.tag {
                tag::DATA_ROW | tag::COMMAND_COMPLETE | tag::EMPTY_QUERY
                    if self.answer.is_none() =>
                {
                    let &(_, decode, expect) = self.calls.front().ok_or_else(protocol)?;
                    let row = match f.tag {
                        tag::DATA_ROW => Some(DataRow::new(f.body).map_err(|_| protocol())?),
                        _ => None,
                    };
                    self.answer = Some(decode(row, expect));
                }
                // Further rows, or the end of a call already answered.
                tag::DATA_ROW | tag::COMMAND_COMPLETE | tag::EMPTY_QUERY => {}
                tag::ERROR => {
                    let class = pg::error_field(f.body, b'C')
                        .and_then(|c| std::str::from_utf8(c).ok())
                        .map_or("other", sqlstate_class);
                    let fatal = matches!(
                        pg::error_field(f.body, b'V').or(pg::error_field(f.body, b'S')),
                        Some(b"FATAL" | b"PANIC")
                    );
                    if fatal {
                        // The session ends and its transaction with it: the
                        // oldest call failed; the connection breaks at the
                        // next read.
                        if let Some((tag, _, _)) = self.calls.pop_front() {
                            self.answer = None;
                            done = Some(Reply::Done {
                                tag,
                                result: Err(OpError::server(class)),
                            });
                        }
                    } else {
                        self.answer = Some(Err(OpError::server(class)));
                    }
                }
                tag::READY => {
                    let (tag, _, _) = self.calls.pop_front().ok_or_else(protocol)?;
                    let result = self.answer.take().unwrap_or_else(|| Err(protocol()));
                    done = Some(Reply::Done { tag, result });
                }
                tag::BIND_COMPLETE
                | tag::NOTICE
                | tag::PARAMETER_STATUS
                | tag::NOTIFICATION
                | tag::NO_DATA => {}
                _ => return Err(protocol()),
            }
            let len = f.len;
            self.sock.rbuf.advance(len);
            if done.is_some() {
                return Ok(done);
            }
        }
    }

    /// A fresh connection, statements parsed again; calls in flight are lost.
    pub(crate) async fn reconnect(&mut self) -> Result<(), OpError> {
        self.calls.clear();
        self.answer = None;
        let sock = open(&self.login, &self.sql)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        let old = std::mem::replace(&mut self.sock, sock);
        self.retire(old);
        Ok(())
    }

    /// Say goodbye on `sock` if it takes the bytes now; keep its counts.
    fn retire(&mut self, mut sock: Socket) {
        sock.wbuf.clear();
        pg::terminate(&mut sock.wbuf);
        let _ = sock.flush();
        let (sent, received) = sock.take_bytes();
        self.carried = (self.carried.0 + sent, self.carried.1 + received);
    }
}

impl<R> CountsBytes for Wire<R> {
    /// Bytes sent and received since the last call.
    fn take_bytes(&mut self) -> (u64, u64) {
        let (sent, received) = self.sock.take_bytes();
        let (s, r) = std::mem::take(&mut self.carried);
        (sent + s, received + r)
    }
}

/// The reason a connection did not open, in the words a user needs.
async fn open(login: &Login, sql: &[String]) -> Result<Socket, String> {
    let limit = login.via.handshake_limit();
    tokio::time::timeout(limit, handshake(login, sql))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "connected, but no startup answer within {}s",
                limit.as_secs_f64()
            ))
        })
}

fn io(e: std::io::Error) -> String {
    said(&e, "PostgreSQL")
}

fn not_pg(e: pg::PgError) -> String {
    format!("not a PostgreSQL server ({e})")
}

/// The message of an ErrorResponse.
fn message(body: &[u8]) -> String {
    pg::error_field(body, b'M').map_or_else(
        || "the server refused".to_string(),
        |m| String::from_utf8_lossy(m).into_owned(),
    )
}

async fn handshake(login: &Login, sql: &[String]) -> Result<Socket, String> {
    let mut sock = Socket::connect(&login.via, &login.host, login.port, READ_CHUNK)
        .await
        .map_err(io)?;
    if login.mode != SslMode::Disable {
        pg::ssl_request(&mut sock.wbuf);
        sock.fill().await.map_err(io)?;
        // One byte, and nothing after it: bytes sent before the handshake
        // would be trusted as if they came over TLS.
        match (&sock.rbuf[..], login.mode) {
            (b"S", _) => {
                sock.rbuf.clear();
                let check = match login.mode {
                    SslMode::VerifyCa => Check::ChainOnly,
                    _ => Check::Full,
                };
                sock.start_tls_checked(&login.via, &login.host, check)
                    .await
                    .map_err(io)?;
            }
            (b"N", SslMode::Prefer) => sock.rbuf.clear(),
            (b"N", _) => return Err("the server does not offer TLS".to_string()),
            _ => return Err("not a PostgreSQL server (no answer to the TLS request)".into()),
        }
    }
    let mut params = vec![
        ("user", login.user.as_str()),
        ("database", login.database.as_str()),
        ("application_name", "loadrig"),
    ];
    if let Some(o) = &login.options {
        params.push(("options", o));
    }
    pg::startup(&mut sock.wbuf, &params);
    log_in(&mut sock, login).await?;
    if sql.len() > NAMES.len() {
        return Err(format!("{} statements, at most {}", sql.len(), NAMES.len()));
    }
    for (name, s) in NAMES.iter().zip(sql) {
        pg::parse(&mut sock.wbuf, name, s);
    }
    pg::sync(&mut sock.wbuf);
    let mut refused = None;
    loop {
        let Some(f) = pg::frame(&sock.rbuf, MAX_FRAME).map_err(not_pg)? else {
            sock.fill().await.map_err(io)?;
            continue;
        };
        let (t, len) = (f.tag, f.len);
        if t == tag::ERROR {
            refused.get_or_insert_with(|| message(f.body));
        }
        sock.rbuf.advance(len);
        if t == tag::READY {
            return match refused {
                Some(why) => Err(why),
                None => Ok(sock),
            };
        }
    }
}

/// The authentication exchange, up to the first ReadyForQuery.
async fn log_in(sock: &mut Socket, login: &Login) -> Result<(), String> {
    let password = || {
        login
            .password
            .as_deref()
            .map(str::as_bytes)
            .ok_or_else(|| "the server asks for a password and the URL has none".to_string())
    };
    let mut scram: Option<ScramSha256> = None;
    loop {
        let Some(f) = pg::frame(&sock.rbuf, MAX_FRAME).map_err(not_pg)? else {
            sock.fill().await.map_err(io)?;
            continue;
        };
        let (t, len) = (f.tag, f.len);
        match t {
            tag::AUTH => match pg::auth(f.body).map_err(not_pg)? {
                Auth::Ok => {}
                Auth::Cleartext => pg::password(&mut sock.wbuf, password()?),
                Auth::Md5(salt) => {
                    let hash = md5_hash(login.user.as_bytes(), password()?, salt);
                    pg::password(&mut sock.wbuf, hash.as_bytes());
                }
                Auth::Sasl(list) => {
                    if !pg::sasl_mechanisms(list).any(|m| m == SCRAM_SHA_256.as_bytes()) {
                        return Err("the server offers no SASL mechanism but SCRAM-SHA-256-PLUS, which needs channel binding".into());
                    }
                    let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                    pg::sasl_initial(&mut sock.wbuf, SCRAM_SHA_256, s.message());
                    scram = Some(s);
                }
                Auth::SaslContinue(data) => {
                    let s = scram.as_mut().ok_or_else(|| not_pg(pg::PgError::Malformed(t)))?;
                    s.update(data)
                        .map_err(|e| format!("SCRAM-SHA-256: {e}"))?;
                    pg::sasl_response(&mut sock.wbuf, s.message());
                }
                Auth::SaslFinal(data) => {
                    let s = scram.as_mut().ok_or_else(|| not_pg(pg::PgError::Malformed(t)))?;
                    s.finish(data)
                        .map_err(|e| format!("SCRAM-SHA-256: the server's proof is wrong ({e})"))?;
                }
                Auth::Other(code) => {
                    return Err(format!(
                        "the server asks for authentication method {code}, which loadrig does not speak"
                    ))
                }
                _ => return Err(not_pg(pg::PgError::Malformed(t))),
            },
            tag::ERROR => return Err(message(f.body)),
            tag::READY => {
                sock.rbuf.advance(len);
                return Ok(());
            }
            tag::PARAMETER_STATUS | tag::BACKEND_KEY | tag::NOTICE => {}
            other => return Err(not_pg(pg::PgError::UnknownType(other))),
        }
        sock.rbuf.advance(len);
    }
}

impl<R> Drop for Wire<R> {
    /// A Terminate if the socket takes it now, so the server logs a
    /// goodbye and not a lost client.
    fn drop(&mut self) {
        self.sock.wbuf.clear();
        pg::terminate(&mut self.sock.wbuf);
        let _ = self.sock.flush();
    }
}
