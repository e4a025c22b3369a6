//! The Voter's callers, as VoltDB's Voter client generates them, made a pure
//! function of (seed, operation index).
//!
//! VoltDB's client builds one skew map per client process; here the map is
//! built once from the run's seed, so that any process computing vote `i`
//! of a run gets the same vote, which is what lets a run be split by index.

use loadrig_engine::rng::Rng;
use loadrig_spec::{VoterGenerator, VoterSpec};

use super::{Vote, AREA_CODES};

/// Contestant number of a vote for nobody (1% of VoltDB's calls).
pub const INVALID_CONTESTANT: i32 = 999;

#[derive(Debug, Clone)]
pub struct CallGenerator {
    seed: u64,
    contestants: u32,
    max_votes: i32,
    kind: VoterGenerator,
    phones: Option<u64>,
    /// Per area code, the contestant its callers favour.
    skew: [u8; AREA_CODES.len()],
}

impl CallGenerator {
    pub fn new(spec: &VoterSpec, seed: u64) -> Self {
        let n = u32::from(spec.contestants.max(1));
        let mut rng = Rng::stream(seed, 0x564f_5445);
        let mut skew = [1u8; AREA_CODES.len()];
        for (i, s) in skew.iter_mut().enumerate() {
            // 30% of area codes favour contestant 1; the rest follow sin(i).
            if !rng.chance(0.30) {
                *s = ((i as f64).sin().abs() * f64::from(n)) as u32 as u8 % n as u8 + 1;
            }
        }
        let max_votes = match spec.generator {
            VoterGenerator::Voltdb => spec.max_votes,
            // The Erlvolt bench ran with a limit nobody reaches.
            VoterGenerator::Erlvolt => spec.max_votes.max(20_000),
        };
        CallGenerator {
            seed,
            contestants: n,
            max_votes: max_votes.min(i32::MAX as u32) as i32,
            kind: spec.generator,
            phones: spec.phones,
            skew,
        }
    }

    /// Vote number `index` of the run.
    #[inline]
    pub fn call(&self, index: u64) -> Vote {
        let mut rng = Rng::for_op(self.seed, index);
        // A small phone space: caller k lives in area k mod 305, number k / 305.
        let caller = self.phones.map(|n| rng.below(n));
        let areas = AREA_CODES.len() as u64;
        let area = match caller {
            Some(k) => (k % areas) as usize,
            None => rng.below(areas) as usize,
        };
        let n = u64::from(self.contestants);
        let contestant = match self.kind {
            VoterGenerator::Voltdb => {
                let mut c = i32::from(self.skew[area]);
                if rng.chance(0.50) {
                    c = rng.below(n) as i32 + 1;
                }
                if rng.below(100) == 0 {
                    c = INVALID_CONTESTANT;
                }
                c
            }
            VoterGenerator::Erlvolt => rng.below(n) as i32 + 1,
        };
        let local = match caller {
            Some(k) => (k / areas) % 10_000_000,
            None => rng.below(10_000_000),
        };
        let phone = i64::from(AREA_CODES[area].0) * 10_000_000 + local as i64;
        Vote {
            phone,
            contestant,
            max_votes: self.max_votes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(generator: VoterGenerator) -> VoterSpec {
        VoterSpec {
            contestants: 6,
            max_votes: 2,
            generator,
            phones: None,
        }
    }

    #[test]
    fn votes_are_pure_functions_of_seed_and_index() {
        let a = CallGenerator::new(&spec(VoterGenerator::Voltdb), 42);
        let b = CallGenerator::new(&spec(VoterGenerator::Voltdb), 42);
        for i in [0, 1, 77, 1 << 40] {
            assert_eq!(a.call(i), b.call(i));
        }
    }

    #[test]
    fn voltdb_mix_has_skew_and_one_percent_invalid() {
        let g = CallGenerator::new(&spec(VoterGenerator::Voltdb), 7);
        let mut per = [0u32; 7];
        let mut invalid = 0;
        for i in 0..100_000 {
            let v = g.call(i);
            assert!(AREA_CODES
                .iter()
                .any(|(c, _)| i64::from(*c) == v.phone / 10_000_000));
            match v.contestant {
                INVALID_CONTESTANT => invalid += 1,
                c @ 1..=6 => per[c as usize] += 1,
                c => panic!("contestant {c}"),
            }
        }
        assert!((800..1_200).contains(&invalid), "invalid {invalid}");
        // Contestant 1 is favoured by 30% of the area codes.
        assert!(
            per[1] > per[2..].iter().copied().max().unwrap_or(0),
            "{per:?}"
        );
    }

    #[test]
    fn a_small_phone_space_has_that_many_callers() {
        let mut s = spec(VoterGenerator::Voltdb);
        s.phones = Some(10);
        let g = CallGenerator::new(&s, 7);
        let mut phones: Vec<i64> = (0..1_000).map(|i| g.call(i).phone).collect();
        phones.sort_unstable();
        phones.dedup();
        assert_eq!(phones.len(), 10);
    }

    #[test]
    fn erlvolt_mix_is_uniform_and_valid() {
        let g = CallGenerator::new(&spec(VoterGenerator::Erlvolt), 7);
        for i in 0..10_000 {
            let v = g.call(i);
            assert!((1..=6).contains(&v.contestant));
            assert_eq!(v.max_votes, 20_000);
        }
    }
}
