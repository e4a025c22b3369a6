//! What the SQL servers (PostgreSQL, MariaDB) share: on the cold path of
//! the Voter and Hello, each says how to run a script and read rows of
//! numbers or of (name, number), and the counting written once here reads
//! what the workloads' queries (`voter::sql`) return; and what each says
//! about itself (`TargetInfo`), written once as `sql_target_info!`.

use std::future::Future;

use loadrig_workloads::voter::{sql, VoterCounts};
use loadrig_workloads::TargetError;

/// A SQL server's cold-path access.
pub(crate) trait SqlAdmin {
    /// Run statements; no rows back.
    fn script(&self, sql: &str) -> impl Future<Output = Result<(), TargetError>>;
    /// The rows of a query whose cells are all whole numbers.
    fn int_rows(&self, sql: &str) -> impl Future<Output = Result<Vec<Vec<i64>>, TargetError>>;
    /// The rows of a query of (text, whole number).
    fn named_rows(
        &self,
        sql: &str,
    ) -> impl Future<Output = Result<Vec<(String, i64)>, TargetError>>;
    /// The server answered a row of another shape.
    fn bad_row(&self) -> TargetError;
}

/// The Voter and Hello on a SQL server: the schema and the fixed data by
/// script, engine connections with their calls prepared, counts read back,
/// teardown by script. Only how a connection makes its call differs
/// between servers (each module's `VoterConn`/`HelloConn`).
macro_rules! sql_backends {
    ($target:ty, $conn:ident) => {
        impl loadrig_workloads::voter::VoterBackend for $target {
            type Conn = $conn<loadrig_workloads::voter::VoteResult>;

            async fn prepare(&self, contestants: u8) -> Result<(), TargetError> {
                self.script(voter::SCHEMA).await?;
                self.script(&voter::fixed_data(contestants)).await
            }

            async fn connect(&self) -> Result<Self::Conn, TargetError> {
                self.conn(voter::CALLS).await
            }

            async fn counts(
                &self,
                max_votes: u32,
            ) -> Result<Option<loadrig_workloads::voter::VoterCounts>, TargetError> {
                crate::sql::voter_counts(self, max_votes).await.map(Some)
            }

            async fn standings(&self) -> Result<Option<Vec<(String, i64)>>, TargetError> {
                self.named_rows(loadrig_workloads::voter::sql::STANDINGS)
                    .await
                    .map(Some)
            }

            async fn teardown(&self) -> Result<(), TargetError> {
                self.script(voter::TEARDOWN).await
            }
        }

        impl loadrig_workloads::hello::HelloBackend for $target {
            type Conn = $conn<()>;

            async fn prepare(&self) -> Result<(), TargetError> {
                self.script(hello::SCHEMA).await?;
                self.script(&hello::preload()).await
            }

            async fn connect(&self) -> Result<Self::Conn, TargetError> {
                self.conn(hello::CALLS).await
            }

            async fn rows(&self) -> Result<Option<i64>, TargetError> {
                crate::sql::count(self, "SELECT COUNT(*) FROM helloworld")
                    .await
                    .map(Some)
            }

            async fn teardown(&self) -> Result<(), TargetError> {
                self.script(hello::TEARDOWN).await
            }
        }
    };
}
pub(crate) use sql_backends;

/// What a SQL server target says about itself ([`TargetInfo`]), the same
/// on PostgreSQL and MariaDB: its version (the target's own
/// `server_version`, asked of the server) and durability (read at
/// connect into its `durability` cell), its depth, one runtime thread,
/// and the server's statistics (`stats`: the target's own source) with
/// the local server process found on the first server's port under one
/// of `processes`.
///
/// [`TargetInfo`]: loadrig_workloads::TargetInfo
macro_rules! sql_target_info {
    ($target:ty, max_depth: $depth:expr, stats: $stats:expr, processes: $names:expr $(,)?) => {
        impl loadrig_workloads::TargetInfo for $target {
            async fn server_version(&self) -> Option<String> {
                <$target>::server_version(self).await
            }

            fn durability(&self) -> Option<String> {
                self.durability.get().cloned()
            }

            fn max_depth(&self) -> usize {
                $depth
            }

            /// One, as pgbench's `-j` (docs/guides/mariadb.md: 8% to 12% less CPU per
            /// call than two threads here, at the same throughput).
            fn default_threads(&self) -> Option<usize> {
                Some(1)
            }

            fn server_stats(&self) -> Vec<Box<dyn loadrig_workloads::stats::StatsSource>> {
                let own: fn(&$target) -> Box<dyn loadrig_workloads::stats::StatsSource> = $stats;
                let (host, port, _) = self.at.server(0);
                std::iter::once(own(self))
                    .chain(crate::local::process_on(&host, port, &$names))
                    .collect()
            }
        }
    };
}
pub(crate) use sql_target_info;

/// The Voter's counts: votes, phones over the limit, votes per contestant.
pub(crate) async fn voter_counts(
    db: &impl SqlAdmin,
    max_votes: u32,
) -> Result<VoterCounts, TargetError> {
    let totals = db.int_rows(&sql::totals(max_votes)).await?;
    let (votes, over) = match totals.first().map(Vec::as_slice) {
        Some([votes, over, ..]) => (*votes, *over),
        _ => return Err(db.bad_row()),
    };
    let per = db
        .int_rows(sql::PER_CONTESTANT)
        .await?
        .iter()
        .map(|r| match r.as_slice() {
            [contestant, n, ..] => Ok((*contestant, *n)),
            _ => Err(db.bad_row()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VoterCounts::from_rows(votes, over, per))
}

/// The one number a `SELECT COUNT(*)` returns.
pub(crate) async fn count(db: &impl SqlAdmin, query: &str) -> Result<i64, TargetError> {
    let rows = db.int_rows(query).await?;
    rows.first()
        .and_then(|r| r.first())
        .copied()
        .ok_or_else(|| db.bad_row())
}

/// Rows of constants as SQL `(1, 'a'), (2, 'b')`, for loading the Voter's
/// fixed data in one statement; quotes in text are doubled.
pub(crate) fn sql_rows<'a>(rows: impl Iterator<Item = (i64, &'a str)>) -> String {
    let rows: Vec<String> = rows
        .map(|(n, s)| format!("({n}, '{}')", s.replace('\'', "''")))
        .collect();
    rows.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rows_are_quoted() {
        let rows = sql_rows([(1, "O'Hara"), (2, "AK")].into_iter());
        assert_eq!(rows, "(1, 'O''Hara'), (2, 'AK')");
    }
}
