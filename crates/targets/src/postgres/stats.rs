//! PostgreSQL's own statistics per lap: the run's database's row of
//! `pg_stat_database`, on a connection of its own (docs/explanations/resources.md).
//! PostgreSQL publishes a backend's counts when its transaction ends, at
//! most about once a second, so at laps shorter than that the counts
//! come in steps.

use std::sync::Arc;

use loadrig_workloads::stats::{Reading, Sampled, Series, StatsSource};
use tokio_postgres::{Client, SimpleQueryMessage};

/// The column, the reading's name, and whether it is a counter.
pub(crate) const SERIES: &[Series] = &[
    ("numbackends", "postgres.backends", false),
    ("xact_commit", "postgres.xact_commit", true),
    ("xact_rollback", "postgres.xact_rollback", true),
    ("blks_read", "postgres.blks_read", true),
    ("blks_hit", "postgres.blks_hit", true),
    ("tup_fetched", "postgres.tup_fetched", true),
    ("tup_inserted", "postgres.tup_inserted", true),
    ("tup_updated", "postgres.tup_updated", true),
    ("deadlocks", "postgres.deadlocks", true),
];

const QUERY: &str = "SELECT numbackends, xact_commit, xact_rollback, blks_read, blks_hit, \
     tup_fetched, tup_inserted, tup_updated, deadlocks \
     FROM pg_stat_database WHERE datname = current_database()";

pub(crate) struct PgStats {
    config: Arc<super::Connect>,
    client: Option<Client>,
}

impl PgStats {
    pub(crate) fn new(config: Arc<super::Connect>) -> PgStats {
        PgStats {
            config,
            client: None,
        }
    }
}

impl StatsSource for PgStats {
    fn name(&self) -> String {
        "postgres pg_stat_database".into()
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let client = match self.client.take() {
                Some(c) => c,
                None => super::open(&self.config).await.map_err(|e| e.reason())?,
            };
            let rows = client
                .simple_query(QUERY)
                .await
                .map_err(|e| super::reason(&e))?;
            let row = rows
                .iter()
                .find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some(r),
                    _ => None,
                })
                .ok_or("no row for this database in pg_stat_database")?;
            let got = SERIES
                .iter()
                .enumerate()
                .filter_map(|(i, (_, name, counter))| {
                    let value = row.get(i)?.parse().ok()?;
                    Some(Reading {
                        name,
                        value,
                        counter: *counter,
                    })
                })
                .collect();
            self.client = Some(client);
            Ok(got)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_asks_every_column_in_order() {
        let columns: Vec<&str> = SERIES.iter().map(|s| s.0).collect();
        assert!(QUERY.contains(&columns.join(", ")), "{QUERY}");
    }
}
