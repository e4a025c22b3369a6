//! MariaDB's own statistics per lap: `SHOW GLOBAL STATUS`, on a
//! connection of its own (docs/explanations/resources.md).

use loadrig_workloads::stats::{pick, Sampled, Series, StatsSource};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};

/// The status variable, the reading's name, and whether it is a counter.
pub(crate) const SERIES: &[Series] = &[
    ("Threads_connected", "mariadb.threads_connected", false),
    ("Threads_running", "mariadb.threads_running", false),
    ("Questions", "mariadb.questions", true),
    ("Com_select", "mariadb.com_select", true),
    ("Com_insert", "mariadb.com_insert", true),
    ("Com_update", "mariadb.com_update", true),
    ("Com_call_procedure", "mariadb.com_call_procedure", true),
    ("Com_commit", "mariadb.com_commit", true),
    ("Com_rollback", "mariadb.com_rollback", true),
    (
        "Innodb_row_lock_waits",
        "mariadb.innodb_row_lock_waits",
        true,
    ),
    (
        "Innodb_buffer_pool_read_requests",
        "mariadb.innodb_buffer_pool_read_requests",
        true,
    ),
    (
        "Innodb_buffer_pool_reads",
        "mariadb.innodb_buffer_pool_reads",
        true,
    ),
    ("Bytes_received", "mariadb.bytes_received", true),
    ("Bytes_sent", "mariadb.bytes_sent", true),
];

pub(crate) struct Status {
    opts: Opts,
    /// How long opening its connection may take.
    limit: std::time::Duration,
    conn: Option<Conn>,
}

impl Status {
    pub(crate) fn new(opts: Opts, limit: std::time::Duration) -> Status {
        Status {
            opts,
            limit,
            conn: None,
        }
    }
}

impl StatsSource for Status {
    fn name(&self) -> String {
        "mariadb SHOW GLOBAL STATUS".into()
    }

    fn sample(&mut self) -> Sampled<'_> {
        Box::pin(async move {
            let mut conn = match self.conn.take() {
                Some(c) => c,
                None => super::open(&self.opts, self.limit)
                    .await
                    .map_err(|e| super::reason(&e))?,
            };
            let rows: Vec<(String, String)> = conn
                .query("SHOW GLOBAL STATUS")
                .await
                .map_err(|e| super::reason(&e))?;
            self.conn = Some(conn);
            Ok(pick(rows.into_iter(), SERIES))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_rows_give_their_series() {
        let rows = [
            ("Threads_connected", "9"),
            ("Questions", "120"),
            ("Uptime", "5"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let got = pick(rows.into_iter(), SERIES);
        let names: Vec<(&str, f64, bool)> =
            got.iter().map(|r| (r.name, r.value, r.counter)).collect();
        assert_eq!(
            names,
            [
                ("mariadb.threads_connected", 9.0, false),
                ("mariadb.questions", 120.0, true)
            ]
        );
    }
}
