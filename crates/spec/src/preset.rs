//! Presets: the Erlvolt bench's named setups (`make bench-vsd` and its
//! siblings in etc/bench/Makefile of voltdb-client-erlang), so a run can be
//! compared with the numbers that bench printed. A preset only supplies
//! defaults; every flag given explicitly wins over it.

use serde::{Deserialize, Serialize};

use crate::{Dispatch, Pacing};

/// One of the Erlvolt bench's setups. Voter presets run the Voter with the
/// Erlvolt caller mix; `Hsd` runs Hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Voter, steady, direct (`bench-vsd`, Erlvolt's standard bench).
    Vsd,
    /// Voter, steady, managed (`bench-vsm`).
    Vsm,
    /// Voter, bursts, managed (`bench-vbm`).
    Vbm,
    /// Voter, bursts, direct (`bench-vbd`).
    Vbd,
    /// Hello, steady, direct (`bench-hsd`).
    Hsd,
}

/// The defaults a preset sets. Per-client counts follow loadrig's model
/// (`--burst` and `--limit` count per client), so Erlvolt's "bursts of 100
/// from 100 workers" is a burst of 1 per client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PresetDefaults {
    pub clients: u32,
    pub requests: u64,
    pub pacing: Pacing,
    pub dispatch: Dispatch,
    /// The Voter's Erlvolt caller mix (uniform contestants, 20,000 votes per phone).
    pub erlvolt_generator: bool,
}

impl Preset {
    /// The workload the preset runs.
    pub fn workload(self) -> &'static str {
        match self {
            Preset::Hsd => "hello",
            _ => "voter",
        }
    }

    /// Upper-case name, as the Erlvolt bench labels its output.
    pub fn label(self) -> &'static str {
        match self {
            Preset::Vsd => "VSD",
            Preset::Vsm => "VSM",
            Preset::Vbm => "VBM",
            Preset::Vbd => "VBD",
            Preset::Hsd => "HSD",
        }
    }

    /// What the preset is, in a few words: no numbers, which the flags
    /// may change (`--preset vbd --clients 50`); the header states the
    /// ones that run.
    pub fn about(self) -> &'static str {
        match self {
            Preset::Vsd => "Erlvolt: voter, steady, direct",
            Preset::Vsm => "Erlvolt: voter, steady, managed",
            Preset::Vbm => "Erlvolt: voter, bursts, managed",
            Preset::Vbd => "Erlvolt: voter, bursts, direct",
            Preset::Hsd => "Erlvolt: hello, steady, direct",
        }
    }

    /// The values, from the Makefile's `erl ... -s bench run` lines
    /// (ACallTarget, Rhythm, ABurstSize, ADelay, Mode, AQueueSize, ASlots, ATarget).
    pub fn defaults(self) -> PresetDefaults {
        let steady = |clients, dispatch| PresetDefaults {
            clients,
            requests: 100_000,
            pacing: Pacing::Steady,
            dispatch,
            erlvolt_generator: true,
        };
        let bursts = |delay_ms, dispatch| PresetDefaults {
            clients: 100,
            requests: 100_000,
            pacing: Pacing::Burst {
                size: 1,
                delay_ms,
                limit: 1,
            },
            dispatch,
            erlvolt_generator: true,
        };
        match self {
            // VSD voter 100000 steady 200 x direct x x x
            Preset::Vsd => steady(200, Dispatch::Direct),
            // VSM voter 100000 steady 200 x managed 100000 200 100
            Preset::Vsm => steady(
                200,
                Dispatch::Managed {
                    queue: 100_000,
                    slots: 200,
                },
            ),
            // VBM voter 100000 bursts 100 1 managed 10000 100 100
            Preset::Vbm => bursts(
                1.0,
                Dispatch::Managed {
                    queue: 10_000,
                    slots: 100,
                },
            ),
            // VBD voter 100000 bursts 100 5 direct x x 100
            Preset::Vbd => bursts(5.0, Dispatch::Direct),
            // HSD hello 100000 steady 200 x direct x x x
            Preset::Hsd => PresetDefaults {
                erlvolt_generator: false,
                ..steady(200, Dispatch::Direct)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_count_per_client() {
        let d = Preset::Vbd.defaults();
        assert_eq!(d.clients, 100);
        assert_eq!(
            d.pacing,
            Pacing::Burst {
                size: 1,
                delay_ms: 5.0,
                limit: 1
            }
        );
        assert_eq!(d.dispatch, Dispatch::Direct);
    }

    #[test]
    fn names_round_trip_through_serde() {
        for p in [
            Preset::Vsd,
            Preset::Vsm,
            Preset::Vbm,
            Preset::Vbd,
            Preset::Hsd,
        ] {
            let text = serde_json::to_string(&p).unwrap();
            assert_eq!(text, format!("\"{}\"", p.label().to_lowercase()));
        }
    }
}
