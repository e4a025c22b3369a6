//! The flags of load over time (docs/guides/stages.md): `--stages`, the
//! open loop's rate as a schedule, and `--abort-after`, the early stop on
//! a threshold broken for a sustained window.

use clap::Args;
use loadrig_spec::{Pacing, SpecError, Stages, Stop};

#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Load over time: stages, early stop")]
#[command(group(clap::ArgGroup::new("open").multiple(true)))]
pub struct StagesArgs {
    /// Open loop: the rate as stages TIME:RATE,...: each ramps linearly from the previous rate (the first from --rate, or 0) to RATE over TIME; TIME:=RATE holds RATE (e.g. 30s:1000,2m:5000,30s:0); the run lasts their sum
    #[arg(
        long,
        value_name = "LIST",
        group = "open",
        allow_hyphen_values = true,
        conflicts_with_all = ["requests", "duration", "burst"]
    )]
    pub stages: Option<String>,
    /// Stop the run once a --threshold has been broken in every lap for this long (judged on each lap's own figures; exit 1, the report says when and why)
    #[arg(long, value_name = "TIME", value_parser = super::seconds)]
    pub abort_after: Option<f64>,
}

impl StagesArgs {
    /// The schedule, from `--rate` (or 0), if `--stages` is given.
    pub fn stages(&self, rate: Option<f64>) -> Result<Option<Stages>, SpecError> {
        self.stages
            .as_deref()
            .map(|s| Stages::parse(s, rate.unwrap_or(0.0)))
            .transpose()
    }

    /// With stages, the open loop's rate is their mean and the run lasts
    /// their sum.
    pub fn apply(stages: &Stages, pacing: Pacing, stop: &mut Stop) -> Pacing {
        *stop = Stop::Seconds(stages.secs());
        match pacing {
            Pacing::Rate { arrival, .. } => Pacing::Rate {
                rate: stages.mean_rate(),
                arrival,
            },
            _ => Pacing::Rate {
                rate: stages.mean_rate(),
                arrival: loadrig_spec::Arrival::Regular,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_start_from_the_rate() {
        let a = StagesArgs {
            stages: Some("4s:5000".into()),
            ..StagesArgs::default()
        };
        let st = a.stages(Some(1000.0)).unwrap().unwrap();
        assert_eq!(st.mean_rate(), 3000.0);
        let mut stop = Stop::Count(1);
        let p = StagesArgs::apply(&st, Pacing::Steady, &mut stop);
        assert_eq!(stop, Stop::Seconds(4.0));
        assert!(matches!(p, Pacing::Rate { rate, .. } if rate == 3000.0));
        assert!(StagesArgs::default().stages(None).unwrap().is_none());
    }
}
