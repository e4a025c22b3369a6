//! Erlvolt's hello world: the smallest procedure call there is, so it
//! measures round trip and driver overhead. A handful of dialects is
//! preloaded; operations read them at random and, with `--insert-ratio`,
//! insert new ones, each read checked against what was stored.

use std::future::Future;

use loadrig_engine::rng::Rng;
use loadrig_engine::CountsBytes;
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{OpError, Snapshot};
use loadrig_spec::{HelloSpec, RunSpec};
use serde::{Deserialize, Serialize};

use crate::{Bench, Check, Reply, Results, TargetError, TargetInfo, Verdict};

/// (hello, world, dialect) rows preloaded by prepare.
pub const DIALECTS: [(&str, &str, &str); 5] = [
    ("Hello", "World", "English"),
    ("Bonjour", "Monde", "French"),
    ("Hola", "Mundo", "Spanish"),
    ("Hej", "Verden", "Danish"),
    ("Ciao", "Mondo", "Italian"),
];

pub const SELECT: usize = 0;
pub const INSERT: usize = 1;
/// Domain counter: rows inserted.
const INSERTED: u16 = 0;

/// A dialect key made from an operation index: unique per index, at most
/// 15 characters (base 36 of a u64 is at most 13 digits, plus a prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DialectKey {
    len: u8,
    buf: [u8; 15],
}

impl DialectKey {
    pub fn new(index: u64) -> Self {
        let mut digits = [0u8; 13];
        let mut n = index;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize];
            n /= 36;
            if n == 0 {
                break;
            }
        }
        let mut buf = [0u8; 15];
        buf[0] = b'x';
        let len = digits.len() - i;
        buf[1..=len].copy_from_slice(&digits[i..]);
        DialectKey {
            len: (len + 1) as u8,
            buf,
        }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits and letters were written.
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("x")
    }
}

/// One Hello operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloOp {
    /// Insert(hello, world, dialect) with a fresh dialect.
    Insert { dialect: DialectKey },
    /// Select(dialect); the answer must be `expect`.
    Select {
        dialect: &'static str,
        expect: (&'static str, &'static str),
    },
}

impl HelloOp {
    /// Operation `index` of a run: a pure function of (seed, index).
    pub fn of(spec: &HelloSpec, seed: u64, index: u64) -> HelloOp {
        let mut rng = Rng::for_op(seed, index);
        if spec.insert_ratio > 0.0 && rng.chance(spec.insert_ratio) {
            HelloOp::Insert {
                dialect: DialectKey::new(index),
            }
        } else {
            let (h, w, d) = DIALECTS[rng.below(DIALECTS.len() as u64) as usize];
            HelloOp::Select {
                dialect: d,
                expect: (h, w),
            }
        }
    }

    pub fn kind(&self) -> usize {
        match self {
            HelloOp::Select { .. } => SELECT,
            HelloOp::Insert { .. } => INSERT,
        }
    }
}

/// Inserted rows carry these words.
pub const INSERTED_HELLO: &str = "Hi";
pub const INSERTED_WORLD: &str = "Earth";

/// The Hello capability.
pub trait HelloBackend: TargetInfo {
    type Conn: HelloConn;

    /// Create the table and preload [`DIALECTS`]; idempotent.
    fn prepare(&self) -> impl Future<Output = Result<(), TargetError>>;
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>>;
    /// Rows in helloworld, counted by the server; `None` when the target
    /// keeps no data.
    fn rows(&self) -> impl Future<Output = Result<Option<i64>, TargetError>>;
    fn teardown(&self) -> impl Future<Output = Result<(), TargetError>>;
}

/// One connection that can call Insert and Select. A Select whose row
/// differs from `expect` completes with a verification error.
pub trait HelloConn: CountsBytes + Send + 'static {
    fn call(&mut self, op: &HelloOp, tag: Tag);
    fn recv(&mut self) -> impl Future<Output = Reply<()>> + Send;
    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send;
}

pub struct HelloDriver<C> {
    conn: C,
    spec: HelloSpec,
    seed: u64,
    /// Kind of the operation in flight under each tag.
    kinds: Vec<u8>,
}

impl<C: HelloConn> Driver for HelloDriver<C> {
    fn kind_of(&self, index: u64) -> usize {
        HelloOp::of(&self.spec, self.seed, index).kind()
    }

    #[inline]
    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let op = HelloOp::of(&self.spec, self.seed, index);
        let t = tag as usize;
        if t >= self.kinds.len() {
            self.kinds.resize(t + 1, 0);
        }
        self.kinds[t] = op.kind() as u8;
        self.conn.call(&op, tag);
        op.kind()
    }

    async fn recv(&mut self) -> Event {
        match self.conn.recv().await {
            Reply::Broken(e) => Event::Broken(e),
            Reply::Done { tag, result } => {
                let inserted = self.kinds.get(tag as usize) == Some(&(INSERT as u8));
                Event::Done {
                    tag,
                    result: result.map(|()| inserted.then_some(INSERTED)),
                }
            }
        }
    }

    fn reconnect(&mut self) -> impl Future<Output = Result<(), OpError>> + Send {
        self.conn.reconnect()
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct HelloBaseline {
    rows: i64,
}
/// Something to do with any target that has this capability: the registry
/// calls it with the concrete backend, so what it builds is monomorphised
/// per target (see [`crate::Capabilities`]).
pub trait Visit {
    type Output;
    fn visit<B: HelloBackend + 'static>(self, backend: B) -> Self::Output;
}

/// Hello on one backend.
pub struct HelloBench<B> {
    pub backend: B,
    pub spec: HelloSpec,
    pub seed: u64,
}

impl<B: HelloBackend> HelloBench<B> {
    pub fn new(backend: B, own: &HelloSpec, run: &RunSpec) -> Self {
        HelloBench {
            backend,
            spec: own.clone(),
            seed: run.seed,
        }
    }
}

impl<B: HelloBackend> Bench for HelloBench<B> {
    type Driver = HelloDriver<B::Conn>;
    type Target = B;

    fn target(&self) -> &B {
        &self.backend
    }

    fn kinds(&self) -> Vec<&'static str> {
        vec!["select", "insert"]
    }

    fn domains(&self) -> Vec<String> {
        vec!["inserted".to_string()]
    }

    async fn prepare(&mut self) -> Result<(), TargetError> {
        self.backend.prepare().await
    }

    async fn baseline(&mut self) -> Result<serde_json::Value, TargetError> {
        let rows = self.backend.rows().await?;
        Ok(rows.map_or(serde_json::Value::Null, |rows| {
            serde_json::to_value(HelloBaseline { rows }).unwrap_or_default()
        }))
    }

    async fn connect(&self, _worker: u32) -> Result<Self::Driver, TargetError> {
        Ok(HelloDriver {
            conn: self.backend.connect().await?,
            spec: self.spec.clone(),
            seed: self.seed,
            kinds: Vec::new(),
        })
    }

    async fn verify(
        &mut self,
        baseline: &serde_json::Value,
        counted: &Snapshot,
    ) -> Result<Verdict, TargetError> {
        let Some(after) = self.backend.rows().await? else {
            return Ok(Verdict::skipped("the target keeps no data"));
        };
        let before: HelloBaseline = serde_json::from_value(baseline.clone()).unwrap_or_default();
        let inserted = counted.domains.first().copied().unwrap_or(0) as i64;
        let mismatched = counted.kinds.get(SELECT).map_or(0, |k| {
            k.errors.get(loadrig_metrics::ErrorKind::Verification)
        }) as i64;
        let doubt = counted.in_doubt_of(INSERT) as i64;
        let checks = vec![
            Check::new(
                "rows added = inserts acknowledged",
                inserted,
                after - before.rows,
            )
            .in_doubt(doubt),
            Check::new("selects that read a wrong row", 0, mismatched),
        ];
        Ok(Verdict::from_checks(
            checks,
            format!(
                "{inserted} inserted = +{} rows, every select matched",
                after - before.rows
            ),
        ))
    }

    async fn results(&mut self, _counted: &Snapshot) -> Result<Results, TargetError> {
        Ok(Results::default())
    }

    async fn finish(&mut self, keep: bool) -> Result<(), TargetError> {
        if keep {
            Ok(())
        } else {
            self.backend.teardown().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_keys_are_short_and_distinct() {
        assert_eq!(DialectKey::new(0).as_str(), "x0");
        assert_eq!(DialectKey::new(35).as_str(), "xz");
        assert_eq!(DialectKey::new(36).as_str(), "x10");
        assert!(DialectKey::new(u64::MAX).as_str().len() <= 15);
        assert_ne!(DialectKey::new(1 << 62), DialectKey::new((1 << 62) + 1));
    }

    #[test]
    fn insert_ratio_is_respected() {
        // Exactly the operations whose first draw falls under the ratio
        // (a count of a seeded draw needs no tolerance), and about a
        // quarter of them (within 4 sigma: 86.6 for 40,000 at 0.25).
        let spec = HelloSpec { insert_ratio: 0.25 };
        let inserts: Vec<u64> = (0..40_000)
            .filter(|&i| HelloOp::of(&spec, 3, i).kind() == INSERT)
            .collect();
        let drawn: Vec<u64> = (0..40_000)
            .filter(|&i| Rng::for_op(3, i).chance(0.25))
            .collect();
        assert_eq!(inserts, drawn);
        assert!(
            (9_654..=10_346).contains(&inserts.len()),
            "{}",
            inserts.len()
        );
    }
}
