//! The redis workload's run: one driver per connection sending one
//! test's command (a template copy, placeholders drawn per operation from
//! seed and index) or memtier's SET:GET mix, and the [`Bench`] that runs
//! the tests one after the other (the mix in one run).

use std::future::Future;
use std::sync::Arc;

use loadrig_engine::rng::{mix64, Rng};
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{OpError, Snapshot};
use loadrig_spec::{RedisSpec, RedisTest, RunSpec};

use super::check;
use super::command::{self, classify, Template};
use super::mix::{self, Mix};
use super::{cmd, RedisBackend, RespAdmin, RespConn, Value};
use crate::stream::{self, ByteStream, StreamDriver};
use crate::{Bench, Results, TargetError, Verdict};

/// The seed of test `test`'s operations: each test draws its own keys, as
/// redis-benchmark's tests do, so a GET does not read exactly the keys
/// the SET with the same index wrote.
pub fn test_seed(seed: u64, test: RedisTest) -> u64 {
    let i = RedisTest::ALL.iter().position(|t| *t == test).unwrap_or(0) as u64;
    mix64(seed ^ mix64(0x7265_6469_7300 + i))
}

/// What a connection sends.
enum Mode {
    /// One redis-benchmark test (or one's own command): a template.
    Test {
        test: RedisTest,
        kind: usize,
        template: Arc<Template>,
        data: Arc<[u8]>,
        keyspace: Option<u64>,
        seed: u64,
    },
    /// memtier's SET:GET mix; the kind of each tag in flight, and a key
    /// buffer reused for every command.
    Mix {
        mix: Arc<Mix>,
        kinds: Vec<u8>,
        key: Vec<u8>,
    },
}

/// One engine connection running one test, or the mix.
pub struct RedisDriver<S> {
    conn: RespConn<S>,
    mode: Mode,
}

impl<S: ByteStream> StreamDriver for RedisDriver<S> {
    type Stream = S;

    #[inline]
    fn stream(&mut self) -> &mut S {
        self.conn.stream()
    }
}

impl<S: ByteStream> Driver for RedisDriver<S> {
    fn kind_of(&self, index: u64) -> usize {
        match &self.mode {
            Mode::Test { kind, .. } => *kind,
            Mode::Mix { mix, .. } => mix.kind(index),
        }
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let kind = match &mut self.mode {
            Mode::Test {
                kind,
                template,
                keyspace,
                seed,
                ..
            } => {
                // On a cluster, a tag of this connection's master's slots,
                // chosen by the first key's number: the same number gets
                // the same tag from every connection on that master (a
                // GET finds what a SET there wrote); without -r, one tag
                // per master.
                let key_tag = if template.tag.is_empty() {
                    None
                } else {
                    let first = keyspace.map_or(0, |n| Rng::for_op(*seed, index).below(n));
                    self.conn.stream().key_tag(first)
                };
                let out = self.conn.out();
                match *keyspace {
                    None => template.write(out, key_tag),
                    Some(n) => {
                        let mut rng = Rng::for_op(*seed, index);
                        template.write_drawn(out, key_tag, || rng.below(n));
                    }
                }
                *kind
            }
            Mode::Mix { mix, kinds, key } => {
                let kind = mix.write(index, self.conn.out(), key);
                let t = tag as usize;
                if t >= kinds.len() {
                    kinds.resize(t + 1, 0);
                }
                kinds[t] = kind as u8;
                kind
            }
        };
        self.conn.queued(tag);
        kind
    }

    async fn recv(&mut self) -> Event {
        stream::recv(self).await
    }

    #[inline]
    fn try_recv(&mut self) -> Option<Event> {
        let reply = match &self.mode {
            Mode::Test { test, data, .. } => self
                .conn
                .next(|tag, reply| (tag, classify(*test, reply, data)))?,
            Mode::Mix { mix, kinds, .. } => self.conn.next(|tag, reply| {
                let kind = kinds.get(tag as usize).copied().unwrap_or(0);
                (tag, mix.classify(usize::from(kind), reply))
            })?,
        };
        match reply {
            Ok((tag, result)) => Some(Event::Done { tag, result }),
            Err(e) => Some(Event::Broken(e)),
        }
    }

    fn idle(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        crate::stream::idle(self.stream())
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        let [moved, ask] = self.conn.stream().take_redirects();
        for (d, n) in [(command::MOVED, moved), (command::ASK, ask)] {
            if let Some(c) = domains.get_mut(usize::from(d)) {
                *c += n;
            }
        }
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
    pub(super) data: Arc<[u8]>,
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
        let mix = spec
            .mix
            .clone()
            .map(|m| Arc::new(Mix::new(m, mix64(seed ^ 0x006d_6978))));
        let titles = if mix.is_some() {
            mix::KINDS.to_vec()
        } else {
            titles
        };
        RedisBench {
            mix,
            backend,
            spec,
            seed,
            connections: u64::from(run.load.connections),
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
            Some(mix) => Mode::Mix {
                mix: mix.clone(),
                kinds: Vec::new(),
                key: Vec::with_capacity(mix.spec.key_prefix.len() + 20),
            },
            None => Mode::Test {
                test,
                kind: self.current,
                template: self.template.clone(),
                data: self.data.clone(),
                keyspace: self.spec.keyspace,
                seed: test_seed(self.seed, test),
            },
        };
        Ok(RedisDriver {
            conn: RespConn::new(self.backend.connect(self.spec.db(), worker).await?),
            mode,
        })
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
        check::verify(self, &before, counted).await
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
