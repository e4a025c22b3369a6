//! The plan: turn a run spec and a `--target` into a concrete
//! (workload, target) pair. This is the one place that matches on both;
//! from here on everything is generic over [`Bench`] and statically
//! dispatched.

use loadrig_spec::{RunSpec, WorkloadSpec};
use loadrig_targets::Target;
use loadrig_workloads::hello::HelloBench;
#[cfg(feature = "memcache")]
use loadrig_workloads::memcache::MemcacheBench;
#[cfg(any(feature = "nats", feature = "mqtt", feature = "redis"))]
use loadrig_workloads::pubsub::{ChatBench, PubSubBench};
#[cfg(feature = "redis")]
use loadrig_workloads::redis::RedisBench;
use loadrig_workloads::voter::VoterBench;
use loadrig_workloads::TargetError;

/// Call `$body` with `$bench` bound to the Bench for this workload and
/// target; each arm is its own monomorphised copy of the run.
macro_rules! with_bench {
    ($spec:expr, $target:expr, |$bench:ident| $body:expr) => {{
        let seed = $spec.seed;
        match (&$spec.workload, $target) {
            #[cfg(feature = "sqlite")]
            (WorkloadSpec::Voter(v), Target::Sqlite(t)) => {
                let $bench = VoterBench {
                    backend: t,
                    spec: v.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "postgres")]
            (WorkloadSpec::Voter(v), Target::Postgres(t)) => {
                let $bench = VoterBench {
                    backend: t,
                    spec: v.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "mysql")]
            (WorkloadSpec::Voter(v), Target::Mariadb(t)) => {
                let $bench = VoterBench {
                    backend: t,
                    spec: v.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "voltdb")]
            (WorkloadSpec::Voter(v), Target::Voltdb(t)) => {
                let $bench = VoterBench {
                    backend: t,
                    spec: v.clone(),
                    seed,
                };
                $body
            }
            (WorkloadSpec::Voter(v), Target::Null(t)) => {
                let $bench = VoterBench {
                    backend: t,
                    spec: v.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "sqlite")]
            (WorkloadSpec::Hello(h), Target::Sqlite(t)) => {
                let $bench = HelloBench {
                    backend: t,
                    spec: h.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "postgres")]
            (WorkloadSpec::Hello(h), Target::Postgres(t)) => {
                let $bench = HelloBench {
                    backend: t,
                    spec: h.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "mysql")]
            (WorkloadSpec::Hello(h), Target::Mariadb(t)) => {
                let $bench = HelloBench {
                    backend: t,
                    spec: h.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "voltdb")]
            (WorkloadSpec::Hello(h), Target::Voltdb(t)) => {
                let $bench = HelloBench {
                    backend: t,
                    spec: h.clone(),
                    seed,
                };
                $body
            }
            (WorkloadSpec::Hello(h), Target::Null(t)) => {
                let $bench = HelloBench {
                    backend: t,
                    spec: h.clone(),
                    seed,
                };
                $body
            }
            #[cfg(feature = "redis")]
            (WorkloadSpec::Redis(r), Target::Redis(t)) => {
                // Which keys SET and MSET wrote is known only for the
                // whole index space and no warm-up.
                let whole = $spec.load.shard.count == 1 && $spec.warmup_secs == 0.0;
                let $bench = RedisBench::new(t, r.clone(), seed, $spec.load.stop, whole);
                $body
            }
            #[cfg(feature = "nats")]
            (WorkloadSpec::Pubsub(p), Target::Nats(t)) => {
                let $bench = PubSubBench::new(t, p.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "nats")]
            (WorkloadSpec::Chat(c), Target::Nats(t)) => {
                let $bench = ChatBench::new(t, c.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "mqtt")]
            (WorkloadSpec::Pubsub(p), Target::Mqtt(t)) => {
                let $bench = PubSubBench::new(t, p.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "mqtt")]
            (WorkloadSpec::Chat(c), Target::Mqtt(t)) => {
                let $bench = ChatBench::new(t, c.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "redis")]
            (WorkloadSpec::Pubsub(p), Target::Redis(t)) => {
                let $bench = PubSubBench::new(t, p.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "redis")]
            (WorkloadSpec::Chat(c), Target::Redis(t)) => {
                let $bench = ChatBench::new(t, c.clone(), seed, $spec.load.stop);
                $body
            }
            #[cfg(feature = "memcache")]
            (WorkloadSpec::Memcache(m), Target::Memcache(t)) => {
                // One window per connection over every process (see the
                // workload's load module); which keys the sets wrote is
                // known only for the whole index space and no warm-up.
                let shards = $spec.load.shard.count.max($spec.processes);
                let windows = u64::from($spec.load.connections) * u64::from(shards);
                let whole = $spec.load.shard.count == 1 && $spec.warmup_secs == 0.0;
                let $bench =
                    MemcacheBench::new(t, m.clone(), windows, seed, $spec.load.stop, whole);
                $body
            }
            // `open` refuses these: the target does not list the workload.
            #[allow(unreachable_patterns)]
            (w, t) => Err(anyhow::Error::from(TargetError::Unsupported(format!(
                "--target: {} cannot run {}",
                t.descriptor().name,
                w.name()
            )))),
        }
    }};
}

/// Open the target a spec names, checking it can run the workload.
pub fn open(spec: &RunSpec, url: Option<&str>) -> anyhow::Result<Target> {
    let target = Target::open(url)?;
    let d = target.descriptor();
    if !d.workloads.contains(&spec.workload.name()) {
        return Err(TargetError::Unsupported(format!(
            "--target: {} cannot run {} (it runs {})",
            d.name,
            spec.workload.name(),
            d.workloads.join(", ")
        ))
        .into());
    }
    Ok(target)
}

/// Run the spec against the target; returns the exit code.
pub async fn run(
    spec: &RunSpec,
    target: Target,
    opts: &crate::run::Options,
) -> anyhow::Result<i32> {
    with_bench!(spec, target, |bench| crate::run::drive(bench, spec, opts)
        .await)
}

/// Verify a kept database against a report; returns the exit code.
pub async fn verify(report: &loadrig_report::Report, target: Target) -> anyhow::Result<i32> {
    let spec = &report.spec;
    with_bench!(spec, target, |bench| crate::verify::check(bench, report)
        .await)
}
