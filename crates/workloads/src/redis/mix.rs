//! memtier_benchmark's load on the redis workload (`--ratio SETS:GETS`):
//! SETs and GETs mixed in one run, keys `PREFIX` + a number drawn from
//! `[key_min, key_max]` by pattern (uniform, sequential, Gaussian, Zipf),
//! values of a fixed size, a uniform range or a weighted list. Every
//! choice is a pure function of (seed, operation index); of each
//! `sets + gets` consecutive indices the first `sets` are SETs, memtier's
//! fixed interleaving.
//!
//! Every value written is a prefix of one byte string (redis-benchmark's
//! generator, as long as the largest size), so a GET's value is checked
//! without knowing which SET wrote it: a prefix of that string, of a size
//! the run writes.

use std::collections::HashSet;

use bytes::BytesMut;
use loadrig_engine::rng::Rng;
use loadrig_metrics::{ErrorKind, OpError, Snapshot, Span};
use loadrig_report::fmt::group;
use loadrig_spec::{KeyPattern, MemtierSpec, ValueSizes};
use loadrig_wire::kv::resp::{self, Reply};

use super::command::{self, error_class, GET_HITS, GET_MISSES};
use super::commands::{Compiled, Shape};
use super::read::{scan, Reader};
use super::RedisBackend;
use crate::{Check, Results, TargetError, Verdict};

/// The mix's operation kinds.
pub const KINDS: [&str; 2] = ["SET", "GET"];
pub const SET: usize = 0;
pub const GET: usize = 1;

/// Largest number of SETs whose keys the exact check computes.
const MAX_EXACT_SETS: u64 = 2_000_000;

/// The mix, ready to draw operations.
#[derive(Debug)]
pub struct Mix {
    pub spec: MemtierSpec,
    /// Key numbers in the range: `key_max - key_min + 1` (saturated).
    range: u64,
    zipf: Zipf,
    /// Values are prefixes of this.
    pub data: Vec<u8>,
    /// Cumulative weights of a size list.
    weights: Vec<(usize, u64)>,
    seed: u64,
    /// Cumulative ratios of the kinds (SET, GET; or the commands).
    cycle: Vec<u64>,
    /// Each kind's key pattern.
    patterns: Vec<KeyPattern>,
    /// memtier's `--command`s, compiled; empty for the SET:GET mix.
    commands: Vec<Compiled>,
    /// Whether a GET's value is checked: every command writes values as
    /// the mix knows them (`SET __key__ __data__`) or only reads.
    checked_gets: bool,
    /// The engine's connections, for the parallel pattern.
    clients: u64,
}

impl Mix {
    pub fn new(spec: MemtierSpec, seed: u64) -> Mix {
        let range = (spec.key_max - spec.key_min).saturating_add(1);
        let (_, max) = spec.sizes.bounds();
        let mut acc = 0u64;
        let weights = match &spec.sizes {
            ValueSizes::List { sizes } => sizes
                .iter()
                .map(|&(size, w)| {
                    acc += u64::from(w);
                    (size, acc)
                })
                .collect(),
            _ => Vec::new(),
        };
        let commands: Vec<Compiled> = spec.commands.iter().map(Compiled::new).collect();
        let (ratios, patterns): (Vec<u32>, Vec<KeyPattern>) = if spec.commands.is_empty() {
            (
                vec![spec.sets, spec.gets],
                vec![spec.set_pattern, spec.get_pattern],
            )
        } else {
            spec.commands.iter().map(|c| (c.ratio, c.pattern)).unzip()
        };
        let cycle = ratios
            .iter()
            .scan(0u64, |acc, &r| {
                *acc += u64::from(r);
                Some(*acc)
            })
            .collect();
        let checked_gets = commands.iter().all(|c| c.shape != Shape::Other);
        Mix {
            zipf: Zipf::new(range as f64, spec.zipf_exp),
            range,
            data: command::benchmark_data(max),
            weights,
            spec,
            seed,
            cycle,
            patterns,
            commands,
            checked_gets,
            clients: 1,
        }
    }

    /// The same mix on `clients` engine connections (operation `i` is
    /// connection `i mod clients`'s), which the parallel pattern splits
    /// the keys among.
    pub fn on_clients(mut self, clients: u64) -> Mix {
        self.clients = clients.max(1);
        self
    }

    /// The names of the kinds: SET and GET, or the commands' words.
    pub fn titles(&self) -> Vec<String> {
        if self.spec.commands.is_empty() {
            KINDS.iter().map(|k| k.to_string()).collect()
        } else {
            self.spec.commands.iter().map(|c| c.title()).collect()
        }
    }

    /// The kind of operation `index`, by memtier's interleaving: of each
    /// cycle of the ratios added up, the first `ratio[0]` are kind 0, ...
    #[inline]
    pub fn kind(&self, index: u64) -> usize {
        let at = index % self.cycle.last().copied().unwrap_or(1).max(1);
        self.cycle.iter().position(|&c| at < c).unwrap_or(0)
    }

    /// Whether kind `kind` writes values the mix knows (a SET).
    pub fn writes(&self, kind: usize) -> bool {
        match self.commands.get(kind) {
            Some(c) => c.shape == Shape::Set,
            None => self.commands.is_empty() && kind == SET,
        }
    }

    /// Whether kind `kind` reads a key's value (a GET).
    fn reads(&self, kind: usize) -> bool {
        match self.commands.get(kind) {
            Some(c) => c.shape == Shape::Get,
            None => self.commands.is_empty() && kind == GET,
        }
    }

    /// Whether kind `kind` draws a value size.
    fn sized(&self, kind: usize) -> bool {
        match self.commands.get(kind) {
            Some(c) => c.uses_data,
            None => kind == SET,
        }
    }

    /// How many operations of `index`'s kind come before it.
    fn ordinal(&self, index: u64) -> u64 {
        let total = self.cycle.last().copied().unwrap_or(1).max(1);
        let (round, at) = (index / total, index % total);
        let kind = self.kind(index);
        let start = kind
            .checked_sub(1)
            .and_then(|k| self.cycle.get(k))
            .copied()
            .unwrap_or(0);
        let width = self.cycle.get(kind).copied().unwrap_or(total) - start;
        round * width + (at - start)
    }

    /// Operation `index`: its kind, key number and (for a kind that sends
    /// a value) value size.
    #[inline]
    pub fn draw(&self, index: u64) -> (usize, u64, usize) {
        let mut rng = Rng::for_op(self.seed, index);
        let kind = self.kind(index);
        let pattern = self
            .patterns
            .get(kind)
            .copied()
            .unwrap_or(KeyPattern::Random);
        let key = self.key(pattern, index, &mut rng);
        let size = if self.sized(kind) {
            self.size(&mut rng)
        } else {
            0
        };
        (kind, key, size)
    }

    fn key(&self, pattern: KeyPattern, index: u64, rng: &mut Rng) -> u64 {
        let n = self.range;
        let offset = match pattern {
            KeyPattern::Random => rng.below(n),
            // The op's place among its kind's, as memtier counts them.
            KeyPattern::Sequential => self.ordinal(index) % n,
            KeyPattern::Gaussian => {
                // Box-Muller; memtier's defaults: the middle, a sixth of the range.
                let (u1, u2) = (rng.unit(), rng.unit());
                let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = (n as f64 - 1.0) / 2.0 + z * n as f64 / 6.0;
                x.round().clamp(0.0, n as f64 - 1.0) as u64
            }
            KeyPattern::Zipf => self.zipf.sample(rng).saturating_sub(1).min(n - 1),
            // The connection's share of the range, walked in turn: the
            // op's place among its kind's, shared by the connections.
            KeyPattern::Parallel => {
                let c = self.clients.min(n);
                let worker = index % self.clients % c;
                let (from, to) = (n * worker / c, n * (worker + 1) / c);
                from + (self.ordinal(index) / self.clients) % (to - from)
            }
        };
        self.spec.key_min + offset
    }

    fn size(&self, rng: &mut Rng) -> usize {
        match &self.spec.sizes {
            ValueSizes::Fixed { size } => *size,
            ValueSizes::Range { min, max } => min + rng.below((max - min + 1) as u64) as usize,
            ValueSizes::List { .. } => {
                let total = self.weights.last().map_or(1, |w| w.1);
                let r = rng.below(total);
                self.weights.iter().find(|w| r < w.1).map_or(0, |w| w.0)
            }
        }
    }

    /// The key for number `n`, into `key` (cleared first).
    #[inline]
    pub fn key_name(&self, n: u64, key: &mut Vec<u8>) {
        key.clear();
        key.extend_from_slice(self.spec.key_prefix.as_bytes());
        crate::push_decimal(key, n);
    }

    /// Append operation `index`'s command; returns its kind.
    #[inline]
    pub fn write(&self, index: u64, out: &mut BytesMut, key: &mut Vec<u8>) -> usize {
        let (kind, n, size) = self.draw(index);
        self.key_name(n, key);
        if let Some(c) = self.commands.get(kind) {
            c.write(out, key, self.data.get(..size).unwrap_or(&self.data));
        } else if kind == SET {
            let value = self.data.get(..size).unwrap_or(&self.data);
            resp::encode_cmd3(out, b"SET", key.as_slice(), value);
        } else {
            resp::encode_cmd2(out, b"GET", key.as_slice());
        }
        kind
    }

    /// Whether `v` is a value this run writes.
    pub fn valid(&self, v: &[u8]) -> bool {
        let sized = match &self.spec.sizes {
            ValueSizes::Fixed { size } => v.len() == *size,
            ValueSizes::Range { min, max } => (*min..=*max).contains(&v.len()),
            ValueSizes::List { sizes } => sizes.iter().any(|s| s.0 == v.len()),
        };
        sized && self.data.starts_with(v)
    }

    /// What a reply means: a SET's OK; a GET's hit (a value this run
    /// writes, else a verification error) or miss; an error by class.
    /// A command of the user's own that is neither SET nor GET: any reply
    /// but an error.
    #[inline]
    pub fn classify(&self, kind: usize, reply: Reply<'_>) -> Result<Option<u16>, OpError> {
        let (set, get) = (self.writes(kind), self.reads(kind));
        match reply {
            Reply::Error(msg) => Err(OpError::server(error_class(msg))),
            Reply::Simple(b"OK") if set => Ok(None),
            Reply::Bulk(Some(v)) if get && (self.valid(v) || !self.checked_gets) => {
                Ok(Some(GET_HITS))
            }
            Reply::Bulk(Some(_)) if get => Err(OpError::new(ErrorKind::Verification)),
            Reply::Bulk(None) if get => Ok(Some(GET_MISSES)),
            _ if !set && !get && !self.commands.is_empty() => Ok(None),
            _ => Err(OpError::new(ErrorKind::Protocol)),
        }
    }

    /// The keys the run's SETs wrote (those that failed too: the caller
    /// allows for them), recomputed from the indices each worker issued;
    /// `None` when the counts carry no spans (an old report).
    fn written(&self, spans: &[Span]) -> Option<Vec<Vec<u8>>> {
        if spans.is_empty() {
            return None;
        }
        // Past the cap, an even sample of each worker's indices.
        let issued = loadrig_metrics::issued(spans, 0);
        let step = usize::try_from(issued.div_ceil(MAX_EXACT_SETS).max(1)).unwrap_or(usize::MAX);
        let numbers: HashSet<u64> = spans
            .iter()
            .flat_map(|s| (0..s.count).step_by(step).map(|k| s.index(k)))
            .filter(|&i| self.writes(self.kind(i)))
            .map(|i| self.draw(i).1)
            .collect();
        Some(
            numbers
                .into_iter()
                .map(|k| {
                    let mut key = Vec::new();
                    self.key_name(k, &mut key);
                    key
                })
                .collect(),
        )
    }
}

/// Zipf over `1..=n` with exponent `s`, by rejection-inversion (Hörmann
/// and Derflinger, "Rejection-inversion to generate variates from
/// monotone discrete distributions", 1996): constant time and memory
/// whatever `n`, as Apache Commons RNG samples it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub(crate) fn new(n: f64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1.0),
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// `prefix[0-9]*` with the glob characters of the prefix escaped, for SCAN.
fn pattern(prefix: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(prefix.len() + 1);
    for b in prefix.bytes() {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            p.push(b'\\');
        }
        p.push(b);
    }
    p.extend_from_slice(b"[0-9]*");
    p
}

/// After the run: no GET read a value this run would not write, and every
/// key the run SET (recomputed from the indices it issued, in every mode)
/// is on one of the servers holding such a value, but for the SETs that
/// failed (each may have left its key out).
pub(super) async fn verify<B: RedisBackend>(
    mix: &Mix,
    backend: &B,
    db: u32,
    counted: &Snapshot,
) -> Result<Verdict, TargetError> {
    let kinds = || counted.kinds.iter().enumerate();
    let wrong = kinds()
        .map(|(_, k)| k.errors.get(ErrorKind::Verification))
        .sum::<u64>() as i64;
    let mut checks = vec![Check::new(
        "GETs that read a value this run does not write",
        0,
        wrong,
    )];
    let mut said = vec![if mix.checked_gets {
        "every value read was one this run writes"
    } else {
        "the values read not checked (a command writes values of its own)"
    }
    .to_string()];
    let sets_failed = kinds()
        .filter(|(i, _)| mix.writes(*i))
        .map(|(_, k)| k.count() - k.ok)
        .sum::<u64>() as i64;
    let written = mix.written(&counted.spans);
    match written {
        Some(keys) if !keys.is_empty() => {
            let mut found = vec![false; keys.len()];
            let mut bad = 0i64;
            let mut refused = None;
            for s in 0..backend.servers() {
                let mut r = Reader::new(backend.admin(s, db).await?);
                let values = match r.values(&keys).await? {
                    Ok(v) => v,
                    Err(verb) => {
                        refused = Some(verb);
                        break;
                    }
                };
                for (i, v) in values.into_iter().enumerate() {
                    if let Some(v) = v {
                        found[i] = true;
                        bad += i64::from(!mix.valid(&v));
                    }
                }
            }
            if let Some(verb) = refused {
                said.push(format!(
                    "the keys SET not checked (the server refused MGET and {verb})"
                ));
            } else {
                let missing = found.iter().filter(|f| !**f).count() as i64;
                checks.push(Check::new("keys SET and missing", 0, missing).in_doubt(sets_failed));
                checks.push(Check::new("keys SET holding another value", 0, bad));
                said.push(match missing {
                    0 => format!("{} keys SET, all there", group(keys.len() as u64)),
                    m => format!(
                        "{} keys SET, {} missing (failed SETs may explain {})",
                        group(keys.len() as u64),
                        group(m as u64),
                        group(sets_failed as u64)
                    ),
                });
            }
        }
        Some(_) if !(0..mix.cycle.len()).any(|k| mix.writes(k)) => {
            said.push("no SET __key__ __data__ among the commands: the writes not checked".into())
        }
        Some(_) => {}
        None => said.push("the keys SET not checked (a report without the indices issued)".into()),
    }
    Ok(Verdict::from_checks(checks, said.join(", ")))
}

/// Hits and misses of the GETs.
pub(super) fn results(counted: &Snapshot) -> Results {
    let d = |i: u16| counted.domains.get(usize::from(i)).copied().unwrap_or(0);
    Results {
        lines: std::iter::once(format!(
            "GET: {} hits, {} misses",
            group(d(GET_HITS)),
            group(d(GET_MISSES))
        ))
        .chain(super::check::redirects(counted))
        .collect(),
        ..Results::default()
    }
}

/// Remove every key this run may have written: PREFIX and a digit (so
/// that other keys under the prefix in a shared database stay). A server
/// that refuses SCAN or DEL keeps them.
pub(super) async fn clean<B: RedisBackend>(
    mix: &Mix,
    backend: &B,
    db: u32,
) -> Result<(), TargetError> {
    let pattern = pattern(&mix.spec.key_prefix);
    for s in 0..backend.servers() {
        let mut r = Reader::new(backend.admin(s, db).await?);
        let keys: Vec<Vec<u8>> = scan(&mut r.a, &pattern)
            .await?
            .unwrap_or_default()
            .into_iter()
            .collect();
        r.delete(&keys).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: KeyPattern, sizes: ValueSizes) -> MemtierSpec {
        MemtierSpec {
            sets: 1,
            gets: 10,
            set_pattern: pattern,
            get_pattern: pattern,
            key_prefix: "memtier-".into(),
            key_min: 100,
            key_max: 1099,
            zipf_exp: 1.0,
            sizes,
            commands: Vec::new(),
        }
    }

    #[test]
    fn the_ratio_interleaves_exactly() {
        let m = Mix::new(spec(KeyPattern::Random, ValueSizes::Fixed { size: 3 }), 1);
        let sets = (0..11_000).filter(|&i| m.kind(i) == SET).count();
        assert_eq!(sets, 1_000);
        assert_eq!((m.kind(0), m.kind(1), m.kind(11)), (SET, GET, SET));
    }

    #[test]
    fn patterns_stay_in_range_with_their_shapes() {
        for p in [
            KeyPattern::Random,
            KeyPattern::Sequential,
            KeyPattern::Gaussian,
            KeyPattern::Zipf,
            KeyPattern::Parallel,
        ] {
            let m = Mix::new(spec(p, ValueSizes::Fixed { size: 3 }), 7).on_clients(10);
            let keys: Vec<u64> = (0..50_000).map(|i| m.draw(i).1).collect();
            assert!(keys.iter().all(|k| (100..=1099).contains(k)), "{p:?}");
            let low = keys.iter().filter(|&&k| k < 200).count() as f64 / keys.len() as f64;
            let mid = keys.iter().filter(|&&k| (550..650).contains(&k)).count() as f64
                / keys.len() as f64;
            match p {
                KeyPattern::Random | KeyPattern::Sequential | KeyPattern::Parallel => {
                    assert!((0.08..0.12).contains(&low), "{p:?} {low}");
                    assert!((0.08..0.12).contains(&mid), "{p:?} {mid}");
                }
                // Within 0.3 sd of the middle: about 24%.
                KeyPattern::Gaussian => assert!((0.2..0.28).contains(&mid), "{mid}"),
                // Zipf(1) over 1000 keys: the first 100 ranks hold ~69%.
                KeyPattern::Zipf => assert!((0.6..0.78).contains(&low), "{low}"),
            }
        }
        // Each kind walks the keys in turn: SETs are indices 0, 11, 22, ...
        let m = Mix::new(
            spec(KeyPattern::Sequential, ValueSizes::Fixed { size: 3 }),
            7,
        );
        assert_eq!((m.draw(0).1, m.draw(11).1, m.draw(22).1), (100, 101, 102));
        assert_eq!((m.draw(1).1, m.draw(2).1, m.draw(12).1), (100, 101, 110));
        assert_eq!(m.draw(11 * 1000).1, 100);
    }

    #[test]
    fn sizes_and_values() {
        let m = Mix::new(
            spec(
                KeyPattern::Random,
                ValueSizes::List {
                    sizes: vec![(4, 1), (64, 3)],
                },
            ),
            3,
        );
        let sizes: Vec<usize> = (0..44_000)
            .filter(|&i| m.kind(i) == SET)
            .map(|i| m.draw(i).2)
            .collect();
        let big = sizes.iter().filter(|&&s| s == 64).count() as f64 / sizes.len() as f64;
        assert!(sizes.iter().all(|&s| s == 4 || s == 64));
        assert!((0.7..0.8).contains(&big), "{big}");
        assert!(m.valid(&m.data[..4]) && m.valid(&m.data[..64]));
        assert!(!m.valid(&m.data[..5]) && !m.valid(b"VXKx"));
        let mut out = BytesMut::new();
        let mut key = Vec::new();
        assert_eq!(m.write(0, &mut out, &mut key), SET);
        assert!(key.starts_with(b"memtier-"));
        assert!(out.starts_with(b"*3\r\n$3\r\nSET\r\n"));
        let r = ValueSizes::Range { min: 10, max: 20 };
        let m = Mix::new(spec(KeyPattern::Random, r), 3);
        assert!((0..1000)
            .map(|i| m.draw(i * 11).2)
            .all(|s| (10..=20).contains(&s)));
    }

    #[test]
    fn replies_are_classified() {
        let m = Mix::new(spec(KeyPattern::Random, ValueSizes::Fixed { size: 3 }), 3);
        assert_eq!(
            m.classify(GET, Reply::Bulk(Some(b"VXK"))),
            Ok(Some(GET_HITS))
        );
        assert_eq!(m.classify(GET, Reply::Bulk(None)), Ok(Some(GET_MISSES)));
        assert_eq!(
            m.classify(GET, Reply::Bulk(Some(b"VX"))).unwrap_err().kind,
            ErrorKind::Verification
        );
        assert_eq!(m.classify(SET, Reply::Simple(b"OK")), Ok(None));
        assert_eq!(
            m.classify(SET, Reply::Error(b"OOM no")),
            Err(OpError::server("OOM"))
        );
    }

    #[test]
    fn commands_take_turns_by_ratio_with_their_own_patterns() {
        let mut s = spec(KeyPattern::Random, ValueSizes::Fixed { size: 3 });
        let command = |line: &str, ratio, pattern| loadrig_spec::MemtierCommand {
            args: loadrig_spec::MemtierCommand::words(line).unwrap(),
            ratio,
            pattern,
        };
        s.commands = vec![
            command("SET __key__ __data__", 2, KeyPattern::Sequential),
            command("GET __key__", 1, KeyPattern::Parallel),
            command("INCR n:__key__", 1, KeyPattern::Random),
        ];
        let m = Mix::new(s, 5).on_clients(4);
        let kinds: Vec<usize> = (0..8).map(|i| m.kind(i)).collect();
        assert_eq!(kinds, [0, 0, 1, 2, 0, 0, 1, 2]);
        // The SETs walk the keys in turn, whichever indices they have.
        assert_eq!((m.draw(0).1, m.draw(1).1, m.draw(4).1), (100, 101, 102));
        // Parallel: connection i mod 4 walks its quarter in turn.
        let gets: Vec<u64> = (0..4000)
            .filter(|i| i % 4 == 2 && m.kind(*i) == 1)
            .collect();
        let keys: Vec<u64> = gets.iter().map(|&i| m.draw(i).1).collect();
        assert!(keys.iter().all(|k| (600..850).contains(k)), "{keys:?}");
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 250);
        assert!(m.writes(0) && !m.writes(1) && !m.writes(2) && !m.checked_gets);
        assert_eq!(m.titles()[2], "INCR n:__key__");
        let mut out = BytesMut::new();
        let mut key = Vec::new();
        assert_eq!(m.write(3, &mut out, &mut key), 2);
        assert!(out.starts_with(b"*2\r\n$4\r\nINCR\r\n$"));
        assert_eq!(m.classify(2, Reply::Integer(3)), Ok(None));
        assert_eq!(m.classify(1, Reply::Bulk(Some(b"x"))), Ok(Some(GET_HITS)));
    }

    #[test]
    fn scan_patterns_escape_globs() {
        assert_eq!(pattern("a*b"), b"a\\*b[0-9]*");
        assert_eq!(pattern("memtier-"), b"memtier-[0-9]*");
    }
}
