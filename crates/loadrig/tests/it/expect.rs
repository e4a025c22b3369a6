//! What a run must have counted, computed here from the workloads' own
//! generators and the spec its report recorded, never copied from a run.
//!
//! A Voter outcome is order-free: whichever of a phone's valid votes came
//! first, the phone keeps `max_votes` of them and the rest are over the
//! limit; a vote for nobody is refused before the limit is looked at
//! (VoltDB's procedure, and ours on every target). So the accepted,
//! invalid and over-limit totals of votes `0..n` are a pure function of
//! the seed, however many clients or processes issued them.

use std::collections::HashMap;

use loadrig_report::Report;
use loadrig_spec::{RunSpec, VoterSpec, WorkloadSpec, CONTESTANT_NAMES};
use loadrig_workloads::hello::HelloOp;
use loadrig_workloads::voter::CallGenerator;

use crate::common::domain;

/// The Voter's outcome totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Votes {
    pub accepted: u64,
    pub invalid: u64,
    pub over_limit: u64,
}

impl Votes {
    /// What a run's report counted (measured phase).
    pub fn counted(report: &Report) -> Votes {
        let accepted = report
            .measured
            .domains
            .iter()
            .filter(|(n, _)| n.starts_with("accepted."))
            .map(|(_, v)| v)
            .sum();
        Votes {
            accepted,
            invalid: domain(report, "invalid"),
            over_limit: domain(report, "over_limit"),
        }
    }
}

fn voter(spec: &RunSpec) -> &VoterSpec {
    match &spec.workload {
        WorkloadSpec::Voter(v) => v,
        w => panic!("not a Voter run: {}", w.name()),
    }
}

/// Accepted votes per phone: what the server holds, as far as the limit
/// is concerned. A second run on the same database starts from the first's.
#[derive(Debug, Default)]
pub struct Phones(HashMap<i64, u64>);

impl Phones {
    /// Votes `0..n` of the run `spec` describes, on a database already
    /// holding `self`: their totals, and `self` updated.
    pub fn vote(&mut self, spec: &RunSpec, n: u64) -> Votes {
        self.tally(spec, n).0
    }

    /// The totals, and the accepted votes per contestant when the votes
    /// arrive in index order (one client): which of a phone's votes are
    /// kept depends on the order, so only then is this exact.
    fn tally(&mut self, spec: &RunSpec, n: u64) -> (Votes, Vec<u64>) {
        let v = voter(spec);
        let calls = CallGenerator::new(v, spec.seed);
        let mut t = Votes {
            accepted: 0,
            invalid: 0,
            over_limit: 0,
        };
        let mut per = vec![0u64; usize::from(v.contestants)];
        for i in 0..n {
            let call = calls.call(i);
            // The procedure's rule: a contestant that is not on the list.
            if !(1..=i32::from(v.contestants)).contains(&call.contestant) {
                t.invalid += 1;
                continue;
            }
            let held = self.0.entry(call.phone).or_default();
            if *held < u64::try_from(call.max_votes).unwrap() {
                *held += 1;
                t.accepted += 1;
                per[usize::try_from(call.contestant - 1).unwrap()] += 1;
            } else {
                t.over_limit += 1;
            }
        }
        (t, per)
    }
}

/// The standings after votes `0..n` cast in index order (one client) on
/// an empty database: names and votes, most votes first, ties by number.
pub fn standings(spec: &RunSpec, n: u64) -> Vec<(String, u64)> {
    let (_, per) = Phones::default().tally(spec, n);
    let mut rows: Vec<(usize, u64)> = per.into_iter().enumerate().collect();
    rows.sort_by_key(|&(i, votes)| (std::cmp::Reverse(votes), i));
    rows.into_iter()
        .map(|(i, votes)| (CONTESTANT_NAMES[i].to_string(), votes))
        .collect()
}

/// The totals of votes `0..n` of the run `spec` describes, on an empty database.
pub fn votes(spec: &RunSpec, n: u64) -> Votes {
    Phones::default().vote(spec, n)
}

/// The number of inserts among Hello's operations `0..n`.
pub fn hello_inserts(spec: &RunSpec, n: u64) -> u64 {
    let WorkloadSpec::Hello(h) = &spec.workload else {
        panic!("not a Hello run: {}", spec.workload.name());
    };
    (0..n)
        .filter(|&i| matches!(HelloOp::of(h, spec.seed, i), HelloOp::Insert { .. }))
        .count() as u64
}
