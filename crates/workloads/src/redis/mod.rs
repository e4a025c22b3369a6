//! The redis workload: redis-benchmark's tests (and, with its flags, its
//! load), each test run after the other as its own phase over fresh
//! connections, as redis-benchmark does.
//!
//! It speaks to a [`RedisBackend`]: anything that carries RESP2 commands
//! over pipelined FIFO connections ([`RespConn`]) and answers cold-path
//! commands ([`RespAdmin`]). The workload encodes the commands itself
//! ([`command::Template`], with `loadrig_wire::kv`) and reads each reply
//! where it lies in the connection's read buffer; the target moves bytes,
//! logs in and selects the database.
//!
//! The [`RedisBench`] here runs the tests one after the other (memtier's
//! mix, `--ratio`, in one run) with a [`RedisDriver`] per connection.
//! Verification (`check`) compares what the server holds after the run
//! with what the client counted, structure by structure.

mod check;
pub mod command;
pub mod commands;
mod driver;
pub mod mix;
mod read;

use std::future::Future;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use loadrig_engine::rng::mix64;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError, Snapshot};
use loadrig_spec::{RedisSpec, RedisTest, RunSpec};
use loadrig_wire::kv::resp::{self, Reply};

use crate::stream::{ByteStream, InFlight};
use crate::{Bench, Results, TargetError, TargetInfo, Verdict};
use command::Template;
use driver::Mode;
use mix::Mix;

pub use driver::{test_seed, RedisDriver};

/// A reply as the cold path keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Simple(Vec<u8>),
    Error(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
}

impl Value {
    /// An owned copy of a parsed reply.
    pub fn of(r: Reply<'_>) -> Value {
        match r {
            Reply::Simple(s) => Value::Simple(s.to_vec()),
            Reply::Error(e) => Value::Error(String::from_utf8_lossy(e).into_owned()),
            Reply::Integer(n) => Value::Integer(n),
            Reply::Bulk(b) => Value::Bulk(b.map(<[u8]>::to_vec)),
            Reply::Array(a) => Value::Array(a.map(|a| a.iter().map(Value::of).collect())),
        }
    }

    /// A bulk string's bytes; `None` for anything else (a missing key).
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bulk(Some(b)) => Some(b),
            _ => None,
        }
    }

    /// An integer reply, or a bulk string holding one (GET of a counter).
    pub fn integer(&self) -> Option<i64> {
        match self {
            Value::Integer(n) => Some(*n),
            Value::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }
}

/// A command for the cold path: its parts, the name first.
pub type Command = Vec<Vec<u8>>;

/// Build a [`Command`] from its parts.
pub fn cmd<P: AsRef<[u8]>>(parts: &[P]) -> Command {
    parts.iter().map(|p| p.as_ref().to_vec()).collect()
}
/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: RedisBackend + 'static>(self, backend: B) -> Self::Output;
}

/// The redis capability: servers that speak RESP2.
pub trait RedisBackend: TargetInfo {
    type Conn: ByteStream;
    type Admin: RespAdmin;

    /// How many servers the target names; engine connections are dealt
    /// over them round robin, and checks add up what each one holds.
    fn servers(&self) -> usize;
    /// Whether the target is a Redis Cluster, whose connections give key
    /// tags ([`ByteStream::key_tag`]).
    fn cluster(&self) -> bool {
        false
    }
    /// Engine connection `worker`, logged in, on logical database `db`:
    /// its server (or on a cluster its master) is `worker` mod their
    /// number, the round robin of the peers, and known afterwards, so
    /// verification knows which tag a write took.
    fn connect(
        &self,
        db: u32,
        worker: u32,
    ) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// A cold-path connection to server `server`, on database `db`.
    fn admin(
        &self,
        server: usize,
        db: u32,
    ) -> impl Future<Output = Result<Self::Admin, TargetError>>;
}

/// A cold-path connection: commands out, whole replies back.
pub trait RespAdmin {
    /// Send `commands` pipelined and return their replies in order. An
    /// error reply is a [`Value::Error`], not an `Err`: the caller says
    /// what it means.
    fn call(
        &mut self,
        commands: &[Command],
    ) -> impl Future<Output = Result<Vec<Value>, TargetError>>;

    /// `MGET keys`, each value handed to `seen(i, value)` (`None`: no
    /// such key) where the reply lies, nothing copied; verification reads
    /// every written key this way. `Ok(Err(reply))`: the reply was not the
    /// keys' values (an error reply when the server refuses MGET).
    fn mget_each(
        &mut self,
        keys: &[Vec<u8>],
        seen: &mut impl FnMut(usize, Option<&[u8]>),
    ) -> impl Future<Output = Result<Result<(), Value>, TargetError>> {
        async move {
            let mut c: Command = Vec::with_capacity(keys.len() + 1);
            c.push(b"MGET".to_vec());
            c.extend(keys.iter().cloned());
            match self.call(&[c]).await?.pop().unwrap_or(Value::Bulk(None)) {
                Value::Array(Some(vals)) if vals.len() == keys.len() => {
                    for (i, v) in vals.iter().enumerate() {
                        seen(i, v.bytes());
                    }
                    Ok(Ok(()))
                }
                other => Ok(Err(other)),
            }
        }
    }

    /// On a Redis Cluster, per master in the slot map's order, the hash
    /// tags of the slots it serves, in slot order: what an engine
    /// connection on that master draws its keys' tag from
    /// ([`ByteStream::key_tag`]), as
    /// the map reads now. Empty for anything else.
    fn master_tags(&self) -> Vec<Vec<[u8; 3]>> {
        Vec::new()
    }
}

/// One pipelined RESP connection over the target's byte stream: commands
/// are appended to the write buffer, replies are parsed where they lie
/// and come back in order, each answering the oldest tag.
pub struct RespConn<S> {
    stream: S,
    tags: InFlight<Tag>,
}

const PROTOCOL: OpError = OpError {
    kind: ErrorKind::Protocol,
    class: "",
};

impl<S: ByteStream> RespConn<S> {
    pub fn new(stream: S) -> Self {
        RespConn {
            stream,
            tags: InFlight::new(),
        }
    }

    /// The write buffer: append one whole command, then call
    /// [`queued`](RespConn::queued).
    #[inline]
    pub fn out(&mut self) -> &mut BytesMut {
        self.stream.out()
    }

    /// The command just appended is answered under `tag`.
    #[inline]
    pub fn queued(&mut self, tag: Tag) {
        self.stream.sent();
        let input = self.stream.input();
        self.tags.push(tag, input);
    }

    /// The next reply, if it is whole in the read buffer: `f` sees it with
    /// its tag, and it leaves the buffer. `None`: not all here yet.
    /// `Some(Err)`: bytes that are not RESP, or a reply nobody asked for;
    /// the stream is out of step.
    #[inline]
    pub fn next<R>(&mut self, f: impl FnOnce(Tag, Reply<'_>) -> R) -> Option<Result<R, OpError>> {
        if self.tags.stray() {
            return Some(Err(PROTOCOL));
        }
        match resp::parse_reply(self.stream.input()) {
            Ok(None) => None,
            Ok(Some((reply, n))) => {
                // A reply with nothing in flight: the stream is not ours.
                let Some(tag) = self.tags.pop() else {
                    return Some(Err(PROTOCOL));
                };
                let out = f(tag, reply);
                self.stream.input().advance(n);
                Some(Ok(out))
            }
            Err(_) => Some(Err(PROTOCOL)),
        }
    }

    /// A fresh connection; what was in flight is forgotten.
    pub async fn reconnect(&mut self) -> Result<(), OpError> {
        self.tags.clear();
        self.stream.reconnect().await
    }

    /// Bytes sent and received since the last call.
    pub fn take_bytes(&mut self) -> (u64, u64) {
        self.stream.take_bytes()
    }

    /// The byte stream underneath.
    pub fn stream(&mut self) -> &mut S {
        &mut self.stream
    }
}

/// The redis workload on one backend.
pub struct RedisBench<B> {
    pub backend: B,
    pub spec: RedisSpec,
    pub seed: u64,
    /// The engine's connections: operation `i` is worker `i mod
    /// connections`'s (the engine strides the indices so).
    pub connections: u64,
    /// The value every write sends (redis-benchmark's bytes).
    data: Arc<[u8]>,
    /// The test the next connections run (an index into `spec.tests`).
    current: usize,
    template: Arc<Template>,
    /// The tests' titles, the run's operation kinds.
    titles: Vec<&'static str>,
    /// `--ratio`: memtier's mix instead of the tests.
    mix: Option<Arc<Mix>>,
}

impl<B: RedisBackend> RedisBench<B> {
    pub fn new(backend: B, own: &RedisSpec, run: &RunSpec) -> Self {
        let (mut spec, seed) = (own.clone(), run.seed);
        // redis-benchmark --cluster's key placement: the tests' keys tagged.
        spec.tagged = backend.cluster() && !spec.no_cluster_tags && spec.mix.is_none();
        let data: Arc<[u8]> = command::benchmark_data(spec.data_size).into();
        let first = spec.tests.first().copied().unwrap_or(RedisTest::PingInline);
        let template = Arc::new(Template::of(
            first,
            &data,
            spec.keyspace.is_some(),
            &spec.command,
            spec.tagged,
        ));
        // A command of one's own is titled by its command line; the
        // engine names kinds with static strings, and this one is made
        // once per process, so it is leaked rather than threaded through.
        let titles = spec
            .tests
            .iter()
            .map(|&t| match t {
                RedisTest::Command => &*Box::leak(spec.title(t).into_boxed_str()),
                t => t.title(),
            })
            .collect();
        let connections = u64::from(run.load.connections);
        let mix = spec
            .mix
            .clone()
            .map(|m| Arc::new(Mix::new(m, mix64(seed ^ 0x006d_6978)).on_clients(connections)));
        // memtier's commands are titled by their words, leaked as above.
        let titles = match &mix {
            Some(m) => m
                .titles()
                .into_iter()
                .map(|t| &*Box::leak(t.into_boxed_str()))
                .collect(),
            None => titles,
        };
        RedisBench {
            mix,
            backend,
            spec,
            seed,
            connections,
            data,
            current: 0,
            template,
            titles,
        }
    }

    fn test(&self) -> RedisTest {
        self.spec
            .tests
            .get(self.current)
            .copied()
            .unwrap_or(RedisTest::PingInline)
    }
}

/// Whether an error reply says the client is not logged in, or not
/// allowed (Redis's NOAUTH, WRONGPASS and NOPERM, and the older `ERR`
/// wordings of a missing or wrong password).
fn refuses_login(why: &str) -> bool {
    let code = why.split_whitespace().next().unwrap_or("");
    matches!(code, "NOAUTH" | "WRONGPASS" | "NOPERM")
        || why.starts_with("ERR invalid password")
        || why.starts_with("ERR operation not permitted")
}

impl<B: RedisBackend> Bench for RedisBench<B> {
    type Driver = RedisDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        self.titles.clone()
    }

    fn domains(&self) -> Vec<String> {
        command::DOMAINS.iter().map(|d| d.to_string()).collect()
    }

    fn sequential(&self) -> bool {
        self.mix.is_none()
    }

    fn enter(&mut self, kind: usize) {
        self.current = kind;
        self.template = Arc::new(Template::of(
            self.test(),
            &self.data,
            self.spec.keyspace.is_some(),
            &self.spec.command,
            self.spec.tagged,
        ));
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        // Nothing to create: the tests make their keys. A server that is
        // not there (or refuses the login or the database) is found here,
        // before any load, as redis-benchmark stops at once: every server
        // pinged, and an answer that asks for a login (NOAUTH, WRONGPASS,
        // NOPERM) ends the run with the target's exit code rather than
        // counting every request of the load as failed. Any other answer,
        // garbage included, is left for the load to meet and count.
        for s in 0..self.backend.servers() {
            let mut a = self.backend.admin(s, self.spec.db()).await?;
            let pong = a
                .call(&[cmd(&["PING"])])
                .await
                .ok()
                .and_then(|mut r| r.pop());
            if let Some(Value::Error(why)) = pong {
                if refuses_login(&why) {
                    return Err(TargetError::Unreachable {
                        target: format!("Redis server {}", s + 1),
                        reason: format!("the server wants a login: {why}"),
                    });
                }
            }
        }
        Ok(())
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let b = check::measure(&self.backend, &self.spec).await?;
        Ok(serde_json::to_value(b).unwrap_or_default())
    }

    async fn connect(&self, worker: u32) -> Result<Self::Driver, TargetError> {
        let test = self.test();
        let mode = match &self.mix {
            Some(mix) => Mode::mix(mix.clone()),
            None => Mode::Test {
                test,
                kind: self.current,
                template: self.template.clone(),
                data: self.data.clone(),
                keyspace: self.spec.keyspace,
                seed: test_seed(self.seed, test),
            },
        };
        let conn = RespConn::new(self.backend.connect(self.spec.db(), worker).await?);
        Ok(RedisDriver::new(conn, mode))
    }

    async fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        if let Some(mix) = &self.mix {
            let db = self.spec.db();
            return mix::verify(mix, &self.backend, db, counted).await;
        }
        let before: check::Counts = serde_json::from_value(baseline.clone()).unwrap_or_default();
        let run = check::Checked {
            backend: &self.backend,
            spec: &self.spec,
            seed: self.seed,
            connections: self.connections,
            data: &self.data,
        };
        check::verify(&run, &before, counted).await
    }

    async fn results(&mut self, counted: &Snapshot) -> Result<Results, TargetError> {
        Ok(match &self.mix {
            Some(_) => mix::results(counted),
            None => check::results(&self.spec, counted),
        })
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep {
            return Ok(());
        }
        match &self.mix {
            Some(mix) => mix::clean(mix, &self.backend, self.spec.db()).await,
            None => check::clean(&self.backend, &self.spec).await,
        }
    }
}
