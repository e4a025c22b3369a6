//! The engine's MariaDB connection, hand written on [`Socket`] and the
//! codec in `loadrig_wire::my`: a login with `mysql_native_password`,
//! statements prepared once per connection, then each call one
//! `COM_STMT_EXECUTE` with binary parameters whose answer (OK, ERR, or
//! binary result sets) is read where it lies in the read buffer.
//!
//! The server reads commands one after another, so calls are written
//! without waiting for the answers before them and answered in order: a
//! FIFO of what is in flight says whose answer comes next. A statement first
//! met on the hot path (the kv shapes) is prepared on the way: its
//! `COM_STMT_PREPARE` goes out followed at once by executes naming
//! MariaDB's "last prepared" id, and the id read from the answer serves the
//! calls after.
//!
//! Cancel safety: `submit` only encodes into the write buffer; `recv`
//! parses whole packets already read (no await) and otherwise waits in
//! [`Socket::fill`], so dropping it loses nothing.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use bytes::Buf;
use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::my::command::{self, Param, LAST_PREPARED};
use loadrig_wire::my::login::{self, AuthReply, Login, NATIVE_PASSWORD};
use loadrig_wire::my::response::{Event, PrepareOk, PrepareReader, Response, Row, ServerError};
use loadrig_wire::my::{self, MyError};
use loadrig_workloads::Reply;

use super::error_class;
use crate::settings::Connector;
use crate::socket::Socket;

/// The read buffer grows in steps of this (answers are small: a row or an OK).
const READ_CHUNK: usize = 4 * 1024;

/// Who logs in where, and the statements every connection prepares as it
/// opens (the Voter's and Hello's calls; kv prepares its shapes on the way).
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub database: String,
    /// The target's settings: how long connecting, logging in and
    /// preparing may take, the source address, the reply limit.
    pub via: Arc<Connector>,
}

/// What one call's answer becomes: rows folded as they are read, then the
/// workload's result.
pub trait Answer: Sized + Send + 'static {
    /// What a call keeps while its answer is read.
    type Fold: Send + 'static;
    /// A row of the first result set.
    fn row(fold: &mut Self::Fold, row: &Row<'_>);
    /// The answer is complete and was not an error.
    fn finish(fold: Self::Fold) -> Result<Self, OpError>;
}

/// A statement of this connection: its SQL and, once the server said, its id.
struct Stmt {
    key: u64,
    sql: String,
    id: Option<u32>,
}

/// Whose answer comes next.
enum InFlight<F> {
    /// A prepare sent on the way (statement index).
    Prepare(usize),
    /// An engine operation.
    Call { tag: Tag, fold: F },
}

/// What a packet did to the answer at the front of the FIFO.
enum Step {
    More,
    Prepared(usize, Result<PrepareOk, ServerError>),
    Answered(Result<(), ServerError>),
}

/// One MariaDB connection of the engine.
pub struct MyConn<R: Answer> {
    sock: Socket,
    account: Account,
    stmts: Vec<Stmt>,
    /// How many of `stmts` are prepared at every (re)connect.
    fixed: usize,
    /// The statement whose prepare went out last on this socket.
    last_prepared: Option<usize>,
    fifo: VecDeque<InFlight<R::Fold>>,
    response: Response,
    prepare: PrepareReader,
    /// Bytes of sockets replaced since the last `take_bytes`.
    carried: (u64, u64),
}

impl<R: Answer> MyConn<R> {
    /// Log in and prepare `fixed` (their indices are their statement numbers).
    pub(crate) async fn open(account: Account, fixed: &[&str]) -> io::Result<MyConn<R>> {
        let stmts: Vec<Stmt> = fixed
            .iter()
            .enumerate()
            .map(|(i, sql)| Stmt {
                key: i as u64,
                sql: (*sql).to_string(),
                id: None,
            })
            .collect();
        let (sock, ids) = dial(&account, &stmts).await?;
        let mut conn = MyConn {
            sock,
            account,
            stmts,
            fixed: fixed.len(),
            last_prepared: None,
            fifo: VecDeque::new(),
            response: Response::default(),
            prepare: PrepareReader::default(),
            carried: (0, 0),
        };
        conn.set_ids(&ids);
        Ok(conn)
    }

    fn set_ids(&mut self, ids: &[u32]) {
        for (s, id) in self.stmts.iter_mut().zip(ids) {
            s.id = Some(*id);
        }
    }

    /// The statement numbered `key`, added (unprepared) with `sql()` when new.
    pub(crate) fn statement(&mut self, key: u64, sql: impl FnOnce() -> String) -> usize {
        if let Some(i) = self.stmts.iter().position(|s| s.key == key) {
            return i;
        }
        self.stmts.push(Stmt {
            key,
            sql: sql(),
            id: None,
        });
        self.stmts.len() - 1
    }

    /// Queue a call of statement `stmt` (an index from `statement` or of
    /// the fixed list); never blocks.
    pub(crate) fn call(&mut self, stmt: usize, params: &[Param<'_>], tag: Tag, fold: R::Fold) {
        let Some(s) = self.stmts.get(stmt) else {
            return;
        };
        let id = match s.id {
            Some(id) => id,
            None => {
                if self.last_prepared != Some(stmt) {
                    command::prepare(&mut self.sock.wbuf, &s.sql);
                    self.fifo.push_back(InFlight::Prepare(stmt));
                    self.last_prepared = Some(stmt);
                }
                LAST_PREPARED
            }
        };
        command::execute(&mut self.sock.wbuf, id, params);
        self.fifo.push_back(InFlight::Call { tag, fold });
    }

    /// The next answer. Cancel safe.
    pub(crate) async fn next(&mut self) -> Reply<R> {
        loop {
            match self.step() {
                Ok(Some(reply)) => return reply,
                Ok(None) => {}
                Err(e) => return Reply::Broken(e),
            }
            if self.fifo.is_empty() {
                // Nothing asked: nothing can come (the engine never waits so).
                return Reply::Broken(OpError::new(ErrorKind::Io));
            }
            if let Err(e) = self.sock.fill().await {
                return Reply::Broken(link_error(&e));
            }
        }
    }

    /// Consume whole packets already read, up to the end of a call's answer.
    fn step(&mut self) -> Result<Option<Reply<R>>, OpError> {
        let protocol = |_: MyError| OpError::new(ErrorKind::Protocol);
        loop {
            let Some((packet, payload)) = my::packet(&self.sock.rbuf).map_err(protocol)? else {
                return Ok(None);
            };
            let step = match self.fifo.front_mut() {
                None => return Err(OpError::new(ErrorKind::Protocol)),
                Some(InFlight::Prepare(stmt)) => {
                    match self.prepare.feed(payload).map_err(protocol)? {
                        None => Step::More,
                        Some(answer) => Step::Prepared(*stmt, answer),
                    }
                }
                Some(InFlight::Call { fold, .. }) => {
                    match self.response.feed(payload).map_err(protocol)? {
                        None => Step::More,
                        Some(Event::Row(row)) => {
                            R::row(fold, &row);
                            Step::More
                        }
                        Some(Event::Done(r)) => Step::Answered(r),
                    }
                }
            };
            self.sock.rbuf.advance(packet.size);
            match step {
                Step::More => {}
                Step::Prepared(stmt, answer) => {
                    self.fifo.pop_front();
                    self.prepared(stmt, answer);
                }
                Step::Answered(r) => {
                    if let Some(InFlight::Call { tag, fold }) = self.fifo.pop_front() {
                        let result = match r {
                            Ok(()) => R::finish(fold),
                            Err(e) => Err(server_error(&e)),
                        };
                        return Ok(Some(Reply::Done { tag, result }));
                    }
                }
            }
        }
    }

    /// A prepare sent on the way answered: its id serves the next calls;
    /// after a failure the next call prepares again.
    fn prepared(&mut self, stmt: usize, answer: Result<PrepareOk, ServerError>) {
        self.prepare = PrepareReader::default();
        match answer {
            Ok(ok) => {
                if let Some(s) = self.stmts.get_mut(stmt) {
                    s.id = Some(ok.id);
                }
            }
            Err(_) => {
                if self.last_prepared == Some(stmt) {
                    self.last_prepared = None;
                }
            }
        }
    }

    /// A fresh connection, fixed statements prepared again, the others on
    /// their next call; calls in flight are lost.
    pub(crate) async fn reconnect(&mut self) -> Result<(), OpError> {
        self.fifo.clear();
        self.response = Response::default();
        self.prepare = PrepareReader::default();
        self.last_prepared = None;
        for s in &mut self.stmts {
            s.id = None;
        }
        let fixed = self.stmts.get(..self.fixed).unwrap_or_default();
        let (sock, ids) = dial(&self.account, fixed)
            .await
            .map_err(|_| OpError::new(ErrorKind::Connect))?;
        let (sent, received) = self.sock.take_bytes();
        self.carried = (self.carried.0 + sent, self.carried.1 + received);
        self.sock = sock;
        self.set_ids(&ids);
        Ok(())
    }
}

impl<R: Answer> CountsBytes for MyConn<R> {
    /// Bytes sent and received since the last call.
    fn take_bytes(&mut self) -> (u64, u64) {
        let (sent, received) = self.sock.take_bytes();
        let (s, r) = std::mem::take(&mut self.carried);
        (sent + s, received + r)
    }
}

/// A server error as a counted, static class.
fn server_error(e: &ServerError) -> OpError {
    OpError::server(error_class(e.code, e.state()))
}

/// A failed link is an I/O error; bytes that cannot be the protocol, a
/// protocol error.
fn link_error(e: &io::Error) -> OpError {
    match e.kind() {
        io::ErrorKind::InvalidData => OpError::new(ErrorKind::Protocol),
        _ => OpError::new(ErrorKind::Io),
    }
}

fn invalid(e: MyError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn refused(e: &ServerError) -> io::Error {
    io::Error::other(format!("{} ({})", e.message, e.code))
}

/// Connect, log in and prepare `stmts`, all within the account's timeout;
/// the socket and the statements' ids.
async fn dial(account: &Account, stmts: &[Stmt]) -> io::Result<(Socket, Vec<u32>)> {
    let t = account.via.handshake_limit();
    let mut sock = Socket::connect(&account.via, &account.host, account.port, READ_CHUNK).await?;
    let login = async {
        log_in(&mut sock, account).await?;
        let mut ids = Vec::with_capacity(stmts.len());
        for s in stmts {
            command::prepare(&mut sock.wbuf, &s.sql);
            let mut reader = PrepareReader::default();
            let ok = loop {
                if let Some(answer) = read(&mut sock, |p| reader.feed(p)).await?.1 {
                    break answer.map_err(|e| refused(&e))?;
                }
            };
            ids.push(ok.id);
        }
        Ok::<_, io::Error>(ids)
    };
    let ids = tokio::time::timeout(t, login)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "login timed out"))??;
    Ok((sock, ids))
}

/// The greeting, the login, an auth switch if the server asks one.
async fn log_in(sock: &mut Socket, a: &Account) -> io::Result<()> {
    let (_, greeting) = read(sock, login::parse_greeting).await?;
    let caps = login::agree(greeting.caps).map_err(invalid)?;
    let auth = login::native_password(a.password.as_bytes(), &greeting.scramble);
    let request = Login {
        caps,
        user: &a.user,
        auth: &auth,
        database: &a.database,
    };
    login::encode_login(&mut sock.wbuf, &request);
    // One switch at most: a second one would loop.
    for _ in 0..2 {
        let (seq, reply) = read(sock, login::parse_auth_reply).await?;
        match reply {
            AuthReply::Ok => return Ok(()),
            AuthReply::Err(e) => return Err(refused(&e)),
            AuthReply::Switch { plugin, data } => {
                if plugin != NATIVE_PASSWORD {
                    return Err(invalid(MyError::Plugin(plugin)));
                }
                let auth = login::native_password(a.password.as_bytes(), &data);
                login::encode_auth_data(&mut sock.wbuf, &auth, seq.wrapping_add(1));
            }
        }
    }
    Err(invalid(MyError::Malformed("a second auth switch")))
}

/// The next packet, read by `parse` (what is queued is written first).
async fn read<T>(
    sock: &mut Socket,
    mut parse: impl FnMut(&[u8]) -> Result<T, MyError>,
) -> io::Result<(u8, T)> {
    loop {
        if let Some((p, payload)) = my::packet(&sock.rbuf).map_err(invalid)? {
            let r = parse(payload).map_err(invalid);
            sock.rbuf.advance(p.size);
            return r.map(|t| (p.seq, t));
        }
        sock.fill().await?;
    }
}
