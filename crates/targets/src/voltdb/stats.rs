//! VoltDB's own statistics per lap: `@Statistics MEMORY 0` and
//! `@Statistics PROCEDUREPROFILE 0` (since the server started) on a
//! logged-in connection of its own to the first host, kept between
//! samples (docs/explanations/resources.md). Each table has a row per host (MEMORY) or
//! per procedure (PROCEDUREPROFILE): the series are their sums.

use loadrig_wire::volt as vw;
use loadrig_workloads::stats::{Reading, Sampled, Series, StatsSource};

use crate::url::TargetUrl;

use super::{status_class, Link};

/// MEMORY's column, the reading's name, whether it is a counter, and
/// the scale (the columns are kilobytes but `TUPLECOUNT`).
const MEMORY: &[(Series, f64)] = &[
    (("RSS", "voltdb.rss_bytes", false), 1024.0),
    (("JAVAUSED", "voltdb.java_used_bytes", false), 1024.0),
    (("JAVAUNUSED", "voltdb.java_unused_bytes", false), 1024.0),
    (("TUPLEDATA", "voltdb.tuple_data_bytes", false), 1024.0),
    (("INDEXMEMORY", "voltdb.index_bytes", false), 1024.0),
    (("TUPLECOUNT", "voltdb.tuples", false), 1.0),
];

/// PROCEDUREPROFILE's counts, summed over the procedures.
const PROFILE: &[Series] = &[
    ("INVOCATIONS", "voltdb.invocations", true),
    ("ABORTS", "voltdb.aborts", true),
    ("FAILURES", "voltdb.failures", true),
];

/// Every series, for `loadrig targets`.
pub(crate) const SERIES: &[Series] = &[
    MEMORY[0].0,
    MEMORY[1].0,
    MEMORY[2].0,
    MEMORY[3].0,
    MEMORY[4].0,
    MEMORY[5].0,
    PROFILE[0],
    PROFILE[1],
    PROFILE[2],
];

pub(crate) struct VoltStatistics {
    at: std::sync::Arc<TargetUrl>,
    via: std::sync::Arc<crate::settings::Connector>,
    link: Option<Link>,
}

impl VoltStatistics {
    pub(crate) fn new(
        at: std::sync::Arc<TargetUrl>,
        via: std::sync::Arc<crate::settings::Connector>,
    ) -> VoltStatistics {
        VoltStatistics {
            at,
            via,
            link: None,
        }
    }
}

/// `@Statistics COMPONENT 0`'s first table.
async fn statistics(link: &mut Link, component: &str) -> Result<vw::VoltTable, String> {
    let params = [vw::Value::String(component.into()), vw::Value::Integer(0)];
    vw::encode_invocation(&mut link.sock.wbuf, "@Statistics", 1, &params)
        .map_err(|e| e.to_string())?;
    let r = link
        .response()
        .await
        .map_err(|e| format!("@Statistics {component}: {e}"))?;
    if !r.status.is_success() {
        let why = r.status_string.as_deref().unwrap_or(status_class(r.status));
        return Err(format!("@Statistics {component}: {why}"));
    }
    r.tables
        .into_iter()
        .next()
        .ok_or_else(|| format!("@Statistics {component}: no table"))
}

/// The sum of each named column over the rows, scaled.
fn sums<'a>(t: &vw::VoltTable, wanted: impl Iterator<Item = (&'a Series, f64)>) -> Vec<Reading> {
    wanted
        .filter_map(|((column, name, counter), scale)| {
            let c = t.column_index(column)?;
            let sum: f64 = (0..t.row_count())
                .filter_map(|r| {
                    let v = t.get(r, c)?;
                    v.as_i64().map(|i| i as f64).or_else(|| v.as_f64())
                })
                .sum();
            Some(Reading {
                name,
                value: sum * scale,
                counter: *counter,
            })
        })
        .collect()
}

impl StatsSource for VoltStatistics {
    fn name(&self) -> String {
        format!("voltdb @Statistics on {}", self.at.server(0).2)
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let mut link = match self.link.take() {
                Some(l) => l,
                None => {
                    Link::open(&self.at, &self.via, 0)
                        .await
                        .map_err(|e| e.to_string())?
                        .0
                }
            };
            let memory = statistics(&mut link, "MEMORY").await?;
            let profile = statistics(&mut link, "PROCEDUREPROFILE").await?;
            // Kept only after whole answers: a failure reconnects.
            self.link = Some(link);
            let mut got = sums(&memory, MEMORY.iter().map(|(s, k)| (s, *k)));
            got.extend(sums(&profile, PROFILE.iter().map(|s| (s, 1.0))));
            Ok(got)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vw::{Column, Value, VoltType};

    #[test]
    fn rows_are_summed_and_kilobytes_scaled() {
        let col = |name: &str, ty| Column {
            name: name.into(),
            ty,
        };
        let t = vw::VoltTable::new(
            vec![
                col("HOSTNAME", VoltType::String),
                col("RSS", VoltType::Integer),
                col("TUPLECOUNT", VoltType::BigInt),
            ],
            vec![
                vec![
                    Value::String("a".into()),
                    Value::Integer(2),
                    Value::BigInt(5),
                ],
                vec![
                    Value::String("b".into()),
                    Value::Integer(1),
                    Value::BigInt(7),
                ],
            ],
        )
        .unwrap();
        let got = sums(&t, MEMORY.iter().map(|(s, k)| (s, *k)));
        assert_eq!(
            got,
            vec![
                Reading::level("voltdb.rss_bytes", 3072.0),
                Reading::level("voltdb.tuples", 12.0)
            ]
        );
    }
}
