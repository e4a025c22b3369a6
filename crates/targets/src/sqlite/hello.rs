//! Hello on SQLite: Insert and Select against `helloworld`.

use loadrig_metrics::OpError;
use loadrig_workloads::hello::{
    HelloBackend, HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD,
};
use loadrig_workloads::{Reply, TargetError};
use rusqlite::{params, Transaction};

use super::{Job, SqliteConn, SqliteTarget};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS helloworld (
    hello VARCHAR(15),
    world VARCHAR(15),
    dialect VARCHAR(15) PRIMARY KEY
);
";

/// Insert or Select; a Select that finds another row fails verification.
pub(super) fn call(tx: &Transaction<'_>, op: &HelloOp) -> rusqlite::Result<()> {
    match op {
        HelloOp::Insert { dialect } => {
            tx.prepare_cached(
                "INSERT INTO helloworld (hello, world, dialect) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![INSERTED_HELLO, INSERTED_WORLD, dialect.as_str()])?;
            Ok(())
        }
        HelloOp::Select { dialect, expect } => {
            let mut matched = false;
            tx.prepare_cached("SELECT hello, world FROM helloworld WHERE dialect = ?1")?
                .query_row([dialect], |r| {
                    matched = r.get_ref(0)?.as_str().ok() == Some(expect.0)
                        && r.get_ref(1)?.as_str().ok() == Some(expect.1);
                    Ok(())
                })?;
            if matched {
                Ok(())
            } else {
                Err(rusqlite::Error::QueryReturnedNoRows)
            }
        }
    }
}

impl HelloConn for SqliteConn<()> {
    fn call(&mut self, op: &HelloOp, tag: loadrig_engine::Tag) {
        let job = Job::Hello {
            op: *op,
            tag,
            reply: self.tx.clone(),
        };
        self.submit(job);
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.reset();
        Ok(())
    }
}

impl HelloBackend for SqliteTarget {
    type Conn = SqliteConn<()>;

    async fn prepare(&self) -> Result<(), TargetError> {
        self.admin(|c| {
            let tx = c.transaction()?;
            tx.execute_batch(SCHEMA)?;
            {
                let mut ins =
                    tx.prepare("INSERT OR REPLACE INTO helloworld VALUES (?1, ?2, ?3)")?;
                for (h, w, d) in DIALECTS {
                    ins.execute(params![h, w, d])?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(SqliteConn::new(self.jobs.clone()))
    }

    async fn rows(&self) -> Result<Option<i64>, TargetError> {
        self.admin(|c| {
            c.query_row("SELECT COUNT(*) FROM helloworld", [], |r| r.get(0))
                .map(Some)
        })
        .await
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        Ok(())
    }
}
