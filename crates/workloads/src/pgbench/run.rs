//! One transaction of a pgbench script, interpreted, and the engine's
//! driver that runs one at a time on its connection.
//!
//! A transaction is several round trips (and maybe a `\sleep`), so the
//! driver keeps it as one boxed future, made in `send` and polled by
//! `recv` until it ends: one allocation per transaction, beside several
//! round trips. The future holds the connection through an owned lock,
//! so a transaction dropped at a timeout gives the connection back to be
//! reconnected. `recv` polls the stored future: dropping `recv` loses
//! nothing (cancel safe).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadrig_engine::rng::Rng;
use loadrig_engine::{Driver, Event, Tag};
use loadrig_metrics::{ErrorKind, OpError};
use tokio::sync::Mutex;

use super::expr::{Env, Value};
use super::script::{Cmd, Script, Sql};
use super::{Compiled, PgbenchConn};

/// What a transaction ended with, and the connection's lock given back.
type Txn = Result<(), OpError>;
type Running = Pin<Box<dyn Future<Output = (Txn, Vec<u64>)> + Send>>;

/// A script error during the load (an undefined variable a `\gset`
/// should have set, a division by zero): counted, not propagated.
const SCRIPT: OpError = OpError::server("script");

/// Run `script` once on `conn`: `timing` gets, per command, the
/// microseconds spent and one count (`2 * k`, `2 * k + 1`). Command `k`
/// is prepared under key `keys + k` (a key per command, whichever
/// branches a transaction takes).
pub(super) async fn transaction<C: PgbenchConn>(
    conn: &mut C,
    script: &Script,
    keys: usize,
    vars: &mut HashMap<String, Value>,
    rng: &mut Rng,
    default_seed: i64,
    timing: &mut [u64],
) -> Txn {
    let lines = &script.lines;
    let mut pc = 0;
    while let Some(line) = lines.get(pc) {
        let started = Instant::now();
        let mut next = pc + 1;
        let mut env = Env {
            vars,
            rng,
            default_seed,
        };
        match &line.cmd {
            Cmd::Set(name, e) => {
                let v = e.eval(&mut env).map_err(|_| SCRIPT)?;
                vars.insert(name.clone(), v);
            }
            Cmd::Sleep(s) => {
                let n = s
                    .amount
                    .eval(&mut env)
                    .and_then(|v| v.as_int())
                    .map_err(|_| SCRIPT)?;
                let us = u64::try_from(n).unwrap_or(0).saturating_mul(s.unit_us);
                tokio::time::sleep(Duration::from_micros(us)).await;
            }
            Cmd::If { cond, else_at } => {
                if !cond
                    .eval(&mut env)
                    .and_then(|v| v.truth())
                    .map_err(|_| SCRIPT)?
                {
                    next = else_branch(script, *else_at, vars, rng, default_seed)?;
                }
            }
            // Reached in order, an \elif ends the branch taken before it
            // (a false condition's jump evaluates it in `else_branch`).
            Cmd::Elif { .. } => next = end_of(script, pc) + 1,
            Cmd::Else { end_at } => next = end_at + 1,
            Cmd::Endif => {}
            Cmd::Sql(sql) => {
                run_sql(conn, keys + pc, sql, vars).await?;
            }
        }
        if let Some(t) = timing.get_mut(2 * pc..2 * pc + 2) {
            t[0] += started.elapsed().as_micros() as u64;
            t[1] += 1;
        }
        pc = next;
    }
    Ok(())
}

/// After a false `\if`: the first `\elif` whose condition holds, the
/// `\else`, or the `\endif`; the index of the command to run next.
fn else_branch(
    script: &Script,
    mut at: usize,
    vars: &HashMap<String, Value>,
    rng: &mut Rng,
    default_seed: i64,
) -> Result<usize, OpError> {
    loop {
        match script.lines.get(at).map(|l| &l.cmd) {
            Some(Cmd::Elif { cond, else_at }) => {
                let mut env = Env {
                    vars,
                    rng,
                    default_seed,
                };
                if cond
                    .eval(&mut env)
                    .and_then(|v| v.truth())
                    .map_err(|_| SCRIPT)?
                {
                    return Ok(at + 1);
                }
                at = *else_at;
            }
            // The \else's body, or past the \endif.
            _ => return Ok(at + 1),
        }
    }
}

/// The `\endif` of the `\if` chain an `\elif` at `at` belongs to.
fn end_of(script: &Script, mut at: usize) -> usize {
    loop {
        match script.lines.get(at).map(|l| &l.cmd) {
            Some(Cmd::Elif { else_at, .. }) => at = *else_at,
            Some(Cmd::Else { end_at }) => return *end_at,
            _ => return at,
        }
    }
}

async fn run_sql<C: PgbenchConn>(
    conn: &mut C,
    key: usize,
    sql: &Sql,
    vars: &mut HashMap<String, Value>,
) -> Txn {
    let mut values = Vec::with_capacity(sql.params.len());
    for p in &sql.params {
        values.push(vars.get(p).ok_or(SCRIPT)?.clone());
    }
    let want = sql.store.is_some();
    let rows = match conn.exec(key, sql, &values, want).await {
        Ok(rows) => rows,
        Err(e) => {
            if e.kind == ErrorKind::Server {
                // Out of a transaction block the error left aborted.
                conn.rollback().await;
            }
            return Err(e);
        }
    };
    if let Some((prefix, all)) = &sql.store {
        if !all && rows.len() != 1 {
            return Err(OpError::server("gset"));
        }
        for row in rows {
            for (col, v) in row {
                vars.insert(format!("{prefix}{col}"), v);
            }
        }
    }
    Ok(())
}

/// The engine's connection: one transaction in flight at a time.
pub struct PgbenchDriver<C> {
    conn: Arc<Mutex<C>>,
    plan: Arc<Compiled>,
    seed: u64,
    /// This client's variables before each transaction (`-D`, `scale`,
    /// `client_id`, `random_seed`).
    base: HashMap<String, Value>,
    /// `-C`: a new connection for each transaction.
    fresh: bool,
    running: Option<(Tag, usize, Running)>,
    /// Per command of every script: microseconds, count (see
    /// [`super::Compiled::domains`]), since the last `take_counts`.
    timing: Vec<u64>,
}

impl<C: PgbenchConn> PgbenchDriver<C> {
    pub(super) fn new(conn: C, plan: Arc<Compiled>, seed: u64, client: u32) -> Self {
        let mut base = plan.base.clone();
        base.insert("client_id".into(), Value::Int(i64::from(client)));
        let timing = vec![0; plan.timing_len()];
        PgbenchDriver {
            conn: Arc::new(Mutex::new(conn)),
            fresh: plan.fresh,
            plan,
            seed,
            base,
            running: None,
            timing,
        }
    }
}

impl<C: PgbenchConn> Driver for PgbenchDriver<C> {
    fn kind_of(&self, index: u64) -> usize {
        self.plan.pick(&mut Rng::for_op(self.seed, index))
    }

    fn send(&mut self, index: u64, tag: Tag) -> usize {
        let mut rng = Rng::for_op(self.seed, index);
        let kind = self.plan.pick(&mut rng);
        let plan = self.plan.clone();
        let conn = self.conn.clone();
        let mut vars = self.base.clone();
        let fresh = self.fresh;
        let default_seed = self.seed as i64;
        let mut timing = vec![0u64; plan.scripts[kind].timing_len];
        self.running = Some((
            tag,
            kind,
            Box::pin(async move {
                let mut c = conn.lock_owned().await;
                if fresh {
                    if let Err(e) = c.reconnect().await {
                        return (Err(e), timing);
                    }
                }
                let s = &plan.scripts[kind];
                let r = transaction(
                    &mut *c,
                    &s.script,
                    s.keys,
                    &mut vars,
                    &mut rng,
                    default_seed,
                    &mut timing,
                )
                .await;
                (r, timing)
            }),
        ));
        kind
    }

    async fn recv(&mut self) -> Event {
        let Some((tag, kind, running)) = self.running.as_mut() else {
            return std::future::pending().await;
        };
        let (tag, kind) = (*tag, *kind);
        let (result, timing) = running.await;
        self.running = None;
        let at = self.plan.scripts[kind].timing_at;
        for (t, v) in self.timing[at..].iter_mut().zip(timing) {
            *t += v;
        }
        match result {
            Err(e) if matches!(e.kind, ErrorKind::Io | ErrorKind::Protocol) => Event::Broken(e),
            result => Event::Done {
                tag,
                result: result.map(|()| None),
            },
        }
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        // A transaction cut by a timeout gives the connection back.
        self.running = None;
        self.conn.lock().await.reconnect().await
    }

    fn take_counts(&mut self, domains: &mut [u64]) {
        for (d, t) in domains.iter_mut().zip(self.timing.iter_mut()) {
            *d += std::mem::take(t);
        }
    }

    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.try_lock().map_or((0, 0), |mut c| c.take_bytes())
    }
}
