//! MariaDB's own statistics per lap: `SHOW GLOBAL STATUS`, on a
//! connection of its own (docs/resources.md).

use loadrig_workloads::stats::{pick, Sampled, StatsSource};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};

/// The status variable, the reading's name, and whether it is a counter.
const SERIES: &[(&str, &str, bool)] = &[
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

/// The reading names [`SERIES`] offers (for the registry).
pub(crate) const NAMES: &[&str] = &[
    "mariadb.threads_connected",
    "mariadb.threads_running",
    "mariadb.questions",
    "mariadb.com_select",
    "mariadb.com_insert",
    "mariadb.com_update",
    "mariadb.com_call_procedure",
    "mariadb.com_commit",
    "mariadb.com_rollback",
    "mariadb.innodb_row_lock_waits",
    "mariadb.innodb_buffer_pool_read_requests",
    "mariadb.innodb_buffer_pool_reads",
    "mariadb.bytes_received",
    "mariadb.bytes_sent",
];

pub(crate) struct Status {
    opts: Opts,
    conn: Option<Conn>,
}

impl Status {
    pub(crate) fn new(opts: Opts) -> Status {
        Status { opts, conn: None }
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
                None => super::open(&self.opts)
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
    fn names_list_every_series() {
        let names: Vec<&str> = SERIES.iter().map(|s| s.1).collect();
        assert_eq!(names, NAMES);
    }
}
