//! Hello on VoltDB: `helloworld` partitioned on dialect and the
//! single-partition procedures `Insert` and `Select` (`sql/voltdb/hello.sql`);
//! a Select is checked against the row expected.

use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::volt as vw;
use loadrig_wire::volt::Value;
use loadrig_workloads::hello::{
    HelloBackend, HelloConn, HelloOp, DIALECTS, INSERTED_HELLO, INSERTED_WORLD,
};
use loadrig_workloads::{Reply, TargetError};

use super::{scalar_answer, status_error, Answer, VoltConn, VoltTarget};

const SCHEMA: &str = include_str!("../../sql/voltdb/hello.sql");

const TEARDOWN: &str = "
DROP PROCEDURE Insert IF EXISTS;
DROP PROCEDURE Select IF EXISTS;
DROP TABLE helloworld IF EXISTS;
";

/// Hello's answers: a Select remembers the row it must find.
pub struct Greetings;

impl Answer for Greetings {
    type Pending = Option<(&'static str, &'static str)>;
    type Out = ();

    fn decode(expect: &Self::Pending, frame: &[u8]) -> Result<(), OpError> {
        let Some((hello, world)) = *expect else {
            return scalar_answer(frame).map(|_| ());
        };
        let r = vw::decode_response(frame).map_err(|_| OpError::new(ErrorKind::Protocol))?;
        if !r.status.is_success() {
            return Err(status_error(r.status));
        }
        let t = r.tables.first();
        let row = t.and_then(|t| Some((t.get_str(0, 0)?, t.get_str(0, 1)?)));
        if row == Some((hello, world)) {
            Ok(())
        } else {
            Err(OpError::new(ErrorKind::Verification))
        }
    }
}

impl HelloConn for VoltConn<Greetings> {
    fn call(&mut self, op: &HelloOp, tag: Tag) {
        match *op {
            HelloOp::Select { dialect, expect } => {
                self.invoke("Select", tag, (dialect,), Some(expect));
            }
            HelloOp::Insert { dialect } => self.invoke(
                "Insert",
                tag,
                (INSERTED_HELLO, INSERTED_WORLD, dialect.as_str()),
                None,
            ),
        }
    }

    async fn recv(&mut self) -> Reply<()> {
        self.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        VoltConn::reconnect(self).await
    }
}

impl HelloBackend for VoltTarget {
    type Conn = VoltConn<Greetings>;

    async fn prepare(&self) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        let procs = a.catalog("PROCEDURES", "PROCEDURE_NAME").await?;
        let tables = a.catalog("TABLES", "TABLE_NAME").await?;
        let has = |list: &[String], name: &str| list.iter().any(|n| n == name);
        let present = usize::from(has(&tables, "HELLOWORLD"))
            + usize::from(has(&procs, "INSERT"))
            + usize::from(has(&procs, "SELECT"));
        if present < 3 {
            if present > 0 {
                a.ddl(TEARDOWN).await?;
            }
            a.ddl(SCHEMA).await?;
        }
        let there = a.sql("SELECT dialect FROM helloworld;").await?;
        let there: Vec<String> = there.first().map_or_else(Vec::new, |t| {
            (0..t.row_count())
                .filter_map(|r| t.get_str(r, 0).map(str::to_string))
                .collect()
        });
        for (hello, world, dialect) in DIALECTS {
            if !there.iter().any(|d| d == dialect) {
                let row = [hello, world, dialect].map(|s| Value::String(s.to_string()));
                a.call("Insert", &row).await?;
            }
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        self.conn().await
    }

    async fn rows(&self) -> Result<Option<i64>, TargetError> {
        let mut a = self.admin().await?;
        Ok(Some(a.scalar("SELECT COUNT(*) FROM helloworld;").await?))
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        self.admin().await?.ddl(TEARDOWN).await
    }
}
