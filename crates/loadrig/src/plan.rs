//! The plan: turn a run spec and a `--target` into a concrete
//! (workload, target) pair. This is the one place that matches on the
//! workload, one arm each; the target registry (`loadrig_targets`) hands
//! over the concrete target, so from here on everything is generic over
//! [`Bench`] and statically dispatched.

use std::future::Future;
use std::pin::Pin;

use loadrig_spec::{RunSpec, WorkloadSpec};
use loadrig_targets::{ClientSettings, Target, Visitor};
use loadrig_workloads::hello::{HelloBackend, HelloBench};
use loadrig_workloads::http::{HttpBackend, HttpBench};
use loadrig_workloads::kv::{KvBackend, KvBench};
use loadrig_workloads::memcache::{MemcacheBackend, MemcacheBench};
use loadrig_workloads::pgbench::{PgbenchBackend, PgbenchBench};
use loadrig_workloads::pubsub::{ChatBench, PubSubBackend, PubSubBench};
use loadrig_workloads::redis::{RedisBackend, RedisBench};
use loadrig_workloads::voter::{VoterBackend, VoterBench};
use loadrig_workloads::{hello, http, kv, memcache, pgbench, pubsub, redis, voter};
use loadrig_workloads::{Bench, Capabilities, TargetError};

/// What to do with the bench once it is built: run it, or verify with it.
/// The future is boxed once per run (cold path); the bench inside it is
/// concrete.
trait UseBench<'a> {
    fn run<B: Bench + 'static>(self, bench: B) -> BenchFuture<'a>;
}

type BenchFuture<'a> = Pin<Box<dyn Future<Output = anyhow::Result<i32>> + 'a>>;

/// The plan's visitor: whichever target was opened, build the spec's
/// workload on it, if the target has the workload's capability.
struct Plan<'a, U> {
    spec: &'a RunSpec,
    user: U,
}

impl<'a, U: UseBench<'a>> Visitor for Plan<'a, U> {
    type Output = Option<BenchFuture<'a>>;

    fn visit<T: Capabilities>(self, t: T) -> Self::Output {
        let Plan { spec, user } = self;
        match &spec.workload {
            WorkloadSpec::Voter(own) => t.voter(ForVoter { own, spec, user }),
            WorkloadSpec::Hello(own) => t.hello(ForHello { own, spec, user }),
            WorkloadSpec::Redis(own) => t.redis(ForRedis { own, spec, user }),
            WorkloadSpec::Memcache(own) => t.memcache(ForMemcache { own, spec, user }),
            WorkloadSpec::Pubsub(own) => t.pubsub(ForPubsub { own, spec, user }),
            WorkloadSpec::Chat(own) => t.pubsub(ForChat { own, spec, user }),
            WorkloadSpec::Http(own) => t.http(ForHttp { own, spec, user }),
            WorkloadSpec::Kv(own) => t.kv(ForKv { own, spec, user }),
            WorkloadSpec::Pgbench(own) => t.pgbench(ForPgbench { own, spec, user }),
        }
    }
}

/// A capability's visitor that builds one workload's bench with the one
/// constructor shape, `new(backend, &own spec, &run spec)`.
macro_rules! build_with {
    ($($visitor:ident: $cap:ident::Visit, $backend:ident => $bench:ident($own:ty);)+) => {$(
        struct $visitor<'a, U> {
            own: &'a $own,
            spec: &'a RunSpec,
            user: U,
        }

        impl<'a, U: UseBench<'a>> $cap::Visit for $visitor<'a, U> {
            type Output = BenchFuture<'a>;

            fn visit<B: $backend + 'static>(self, backend: B) -> BenchFuture<'a> {
                self.user.run($bench::new(backend, self.own, self.spec))
            }
        }
    )+};
}

build_with! {
    ForVoter: voter::Visit, VoterBackend => VoterBench(loadrig_spec::VoterSpec);
    ForHello: hello::Visit, HelloBackend => HelloBench(loadrig_spec::HelloSpec);
    ForRedis: redis::Visit, RedisBackend => RedisBench(loadrig_spec::RedisSpec);
    ForMemcache: memcache::Visit, MemcacheBackend => MemcacheBench(loadrig_spec::MemcacheSpec);
    ForPubsub: pubsub::Visit, PubSubBackend => PubSubBench(loadrig_spec::PubSubSpec);
    ForChat: pubsub::Visit, PubSubBackend => ChatBench(loadrig_spec::ChatSpec);
    ForHttp: http::Visit, HttpBackend => HttpBench(loadrig_spec::HttpSpec);
    ForKv: kv::Visit, KvBackend => KvBench(loadrig_spec::KvSpec);
    ForPgbench: pgbench::Visit, PgbenchBackend => PgbenchBench(loadrig_spec::PgbenchSpec);
}

/// Build the spec's workload on the target and hand it to `user`.
fn with_bench<'a, U: UseBench<'a>>(
    spec: &'a RunSpec,
    target: Target,
    user: U,
) -> anyhow::Result<BenchFuture<'a>> {
    let name = target.descriptor().name;
    target.visit(Plan { spec, user }).ok_or_else(|| {
        TargetError::Unsupported(format!(
            "--target: {name} cannot run {}",
            spec.workload.name()
        ))
        .into()
    })
}

/// Open the target a URL names, its connections to take `settings`,
/// checking it can run the workload.
pub fn open(
    workload: &str,
    url: Option<&str>,
    settings: &ClientSettings,
) -> anyhow::Result<Target> {
    let target = Target::open_for(Some(workload), url, settings)?;
    let d = target.descriptor();
    if !d.runs(workload) {
        return Err(TargetError::Unsupported(format!(
            "--target: {} cannot run {workload} (it runs {})",
            d.name,
            d.workloads().collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    Ok(target)
}

struct Drive<'a> {
    spec: &'a RunSpec,
    opts: &'a crate::session::Options,
}

impl<'a> UseBench<'a> for Drive<'a> {
    fn run<B: Bench + 'static>(self, bench: B) -> BenchFuture<'a> {
        Box::pin(crate::session::drive(bench, self.spec, self.opts))
    }
}

struct Verify<'a> {
    report: &'a loadrig_report::Report,
}

impl<'a> UseBench<'a> for Verify<'a> {
    fn run<B: Bench + 'static>(self, bench: B) -> BenchFuture<'a> {
        Box::pin(crate::session::verify_report(bench, self.report))
    }
}

struct Prepare<'a> {
    spec: &'a RunSpec,
    out: Option<&'a std::path::Path>,
    quiet: bool,
}

impl<'a> UseBench<'a> for Prepare<'a> {
    fn run<B: Bench + 'static>(self, bench: B) -> BenchFuture<'a> {
        Box::pin(crate::session::prepare_only(
            bench, self.spec, self.out, self.quiet,
        ))
    }
}

struct Teardown<'a> {
    spec: &'a RunSpec,
    quiet: bool,
}

impl<'a> UseBench<'a> for Teardown<'a> {
    fn run<B: Bench + 'static>(self, bench: B) -> BenchFuture<'a> {
        Box::pin(crate::session::teardown_only(bench, self.spec, self.quiet))
    }
}

/// `loadrig prepare`: prepare the target once and record the baseline in
/// `out`; returns the exit code.
pub async fn prepare(
    spec: &RunSpec,
    target: Target,
    out: Option<&std::path::Path>,
    quiet: bool,
) -> anyhow::Result<i32> {
    with_bench(spec, target, Prepare { spec, out, quiet })?.await
}

/// `loadrig teardown`: drop what prepare made; returns the exit code.
pub async fn teardown(spec: &RunSpec, target: Target, quiet: bool) -> anyhow::Result<i32> {
    with_bench(spec, target, Teardown { spec, quiet })?.await
}

/// Run the spec against the target; returns the exit code.
pub async fn run(
    spec: &RunSpec,
    target: Target,
    opts: &crate::session::Options,
) -> anyhow::Result<i32> {
    with_bench(spec, target, Drive { spec, opts })?.await
}

/// Verify a kept database against a report; returns the exit code.
pub async fn verify(report: &loadrig_report::Report, target: Target) -> anyhow::Result<i32> {
    with_bench(&report.spec, target, Verify { report })?.await
}
