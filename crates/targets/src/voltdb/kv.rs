//! The kv workload on VoltDB: one table per dataset (`kv_NAME`, the
//! 16-byte key its primary key, partitioned on it), markers in
//! `kv_markers` (replicated), and one Java procedure per dataset,
//! `kv_NAME.Txn`, compiled at prepare like the Voter's: a transaction is
//! one call. Its keys fall in any partition, so it is a multi-partition
//! procedure (VoltDB runs those one at a time across the cluster); keys
//! travel concatenated (all 16 bytes), values with their lengths, as on
//! MariaDB. The load phase calls VoltDB's own single-partition
//! `KV_NAME.upsert` per row, pipelined.

use loadrig_engine::CountsBytes;
use loadrig_engine::Tag;
use loadrig_metrics::{ErrorKind, OpError};
use loadrig_wire::volt::Value;
use loadrig_workloads::kv::{Key, KvBackend, KvConn, Rows, Txn, TxnDone};
use loadrig_workloads::{Reply, TargetError};

use super::{procs, scalar_answer, Admin, Answer, VoltConn, VoltTarget};

/// The Java procedure, `DATASET` replaced by the dataset's name. VoltDB
/// takes at most 200 statements per `voltExecuteSQL`, hence the chunks.
const TXN_JAVA: &str = r#"package loadrig_kv;

import java.util.Arrays;
import org.voltdb.SQLStmt;
import org.voltdb.VoltProcedure;
import org.voltdb.VoltTable;

public class KvTxn_DATASET extends VoltProcedure {
    public final SQLStmt get = new SQLStmt("SELECT v FROM kv_DATASET WHERE k = ?;");
    public final SQLStmt range = new SQLStmt(
        "SELECT v FROM kv_DATASET WHERE k >= ? AND k < ? ORDER BY k LIMIT ?;");
    public final SQLStmt put = new SQLStmt("UPSERT INTO kv_DATASET (k, v) VALUES (?, ?);");

    public long run(byte[] r, byte[] gs, byte[] ge, int gl, byte[] wk, byte[] wv, byte[] wl) {
        long found = 0;
        long ranged = 0;
        int n = r.length / 16;
        for (int i = 0; i < n; i += 200) {
            int end = Math.min(n, i + 200);
            for (int j = i; j < end; j++) {
                voltQueueSQL(get, Arrays.copyOfRange(r, 16 * j, 16 * j + 16));
            }
            for (VoltTable t : voltExecuteSQL()) {
                if (t.advanceRow()) {
                    t.getVarbinary(0);
                    found++;
                }
            }
        }
        if (gl > 0) {
            voltQueueSQL(range, gs, ge, gl);
            VoltTable t = voltExecuteSQL()[0];
            while (t.advanceRow()) {
                t.getVarbinary(0);
                ranged++;
            }
        }
        int m = wk.length / 16;
        int off = 0;
        for (int i = 0; i < m; i += 200) {
            int end = Math.min(m, i + 200);
            for (int j = i; j < end; j++) {
                int len = ((wl[2 * j] & 0xff) << 8) | (wl[2 * j + 1] & 0xff);
                voltQueueSQL(put, Arrays.copyOfRange(wk, 16 * j, 16 * j + 16),
                             Arrays.copyOfRange(wv, off, off + len));
                off += len;
            }
            voltExecuteSQL(end == m);
        }
        return found | (ranged << 32);
    }
}
"#;

/// A dataset's names.
#[derive(Debug)]
pub(crate) struct Names {
    dataset: String,
    table: String,
    /// VoltDB's own single-partition upsert of the table.
    upsert: String,
    /// The transaction procedure's class.
    txn: String,
}

impl Names {
    pub(crate) fn new(dataset: &str) -> Names {
        Names {
            dataset: dataset.to_string(),
            table: format!("kv_{dataset}"),
            upsert: format!("KV_{}.upsert", dataset.to_uppercase()),
            txn: format!("KvTxn_{dataset}"),
        }
    }

    fn schema(&self) -> String {
        let t = &self.table;
        format!(
            "CREATE TABLE {t} (k VARBINARY(16) NOT NULL, v VARBINARY(65535) NOT NULL, PRIMARY KEY (k));
             PARTITION TABLE {t} ON COLUMN k;
             CREATE PROCEDURE FROM CLASS loadrig_kv.{};",
            self.txn
        )
    }
}

/// The kv procedure's answers: a transaction's packed counts, or (for the
/// load's upserts, `true`) only whether it succeeded.
pub struct KvAnswers;

impl Answer for KvAnswers {
    type Pending = bool;
    type Out = TxnDone;

    fn decode(upsert: &bool, frame: &[u8]) -> Result<TxnDone, OpError> {
        let v = scalar_answer(frame)?;
        if *upsert {
            return Ok(TxnDone::default());
        }
        let packed = v.ok_or(OpError::new(ErrorKind::Protocol))?;
        Ok(TxnDone {
            found: (packed & 0xffff_ffff) as u32,
            ranged: (packed >> 32) as u32,
        })
    }
}

/// A connection and the dataset's names.
pub struct VoltKvConn {
    conn: VoltConn<KvAnswers>,
    names: std::sync::Arc<Names>,
    /// The admin link for reading rows back, opened on first use.
    target: std::sync::Arc<crate::url::TargetUrl>,
    via: std::sync::Arc<crate::settings::Connector>,
}

impl KvConn for VoltKvConn {
    fn submit(&mut self, txn: &Txn, tag: Tag) {
        let r: Vec<u8> = txn.reads.iter().flatten().copied().collect();
        let (gs, ge, gl): (&[u8], &[u8], i32) = match &txn.range {
            Some(g) => (&g.start, &g.end, i32::try_from(g.limit).unwrap_or(i32::MAX)),
            None => (&[], &[], 0),
        };
        let (mut wk, mut wv, mut wl) = (Vec::new(), Vec::new(), Vec::new());
        for (k, v) in txn.writes.iter() {
            wk.extend_from_slice(k);
            wv.extend_from_slice(v);
            wl.extend_from_slice(&u16::try_from(v.len()).unwrap_or(u16::MAX).to_be_bytes());
        }
        let params = (&r[..], gs, ge, gl, &wk[..], &wv[..], &wl[..]);
        self.conn.invoke(&self.names.txn, tag, params, false);
    }

    async fn recv(&mut self) -> Reply<TxnDone> {
        self.conn.next().await
    }

    async fn reconnect(&mut self) -> Result<(), OpError> {
        self.conn.reconnect().await
    }

    async fn put_rows(&mut self, rows: &Rows) -> Result<(), TargetError> {
        let upsert = self.names.upsert.clone();
        for (i, (k, v)) in rows.iter().enumerate() {
            let tag = u32::try_from(i).unwrap_or(u32::MAX);
            self.conn.invoke(&upsert, tag, (&k[..], v), true);
        }
        for _ in 0..rows.len() {
            match self.conn.next().await {
                Reply::Done { result: Ok(_), .. } => {}
                Reply::Done { result: Err(e), .. } | Reply::Broken(e) => {
                    return Err(TargetError::Prepare {
                        target: self.target.label(),
                        reason: format!("{upsert}: {e:?}"),
                    })
                }
            }
        }
        Ok(())
    }

    async fn get_rows(&mut self, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
        let list: Vec<String> = keys.iter().map(|k| format!("x'{}'", hex(k))).collect();
        let sql = format!(
            "SELECT k, v FROM {} WHERE k IN ({});",
            self.names.table,
            list.join(", ")
        );
        // A cold-path link of its own: the engine connection's answers
        // are transactions'.
        let target = VoltTarget::new((*self.target).clone(), self.via.clone());
        let tables = target.admin().await?.sql(&sql).await?;
        let mut by_key = std::collections::HashMap::new();
        if let Some(t) = tables.first() {
            for r in 0..t.row_count() {
                if let (Some(Value::VarBinary(k)), Some(Value::VarBinary(v))) =
                    (t.get(r, 0), t.get(r, 1))
                {
                    by_key.insert(k.to_vec(), v.to_vec());
                }
            }
        }
        Ok(keys.iter().map(|k| by_key.remove(&k[..])).collect())
    }
}

impl CountsBytes for VoltKvConn {
    fn take_bytes(&mut self) -> (u64, u64) {
        self.conn.take_bytes()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

impl VoltTarget {
    async fn kv_marker_table(&self, a: &mut Admin<'_>) -> Result<(), TargetError> {
        let tables = a.catalog("TABLES", "TABLE_NAME").await?;
        if !tables.iter().any(|t| t == "KV_MARKERS") {
            a.ddl("CREATE TABLE kv_markers (dataset VARCHAR(64) NOT NULL, marker VARCHAR(1024) NOT NULL, PRIMARY KEY (dataset));")
                .await?;
        }
        Ok(())
    }
}

impl KvBackend for VoltTarget {
    type Conn = VoltKvConn;

    fn use_dataset(&mut self, name: &str) {
        self.kv = std::sync::Arc::new(Names::new(name));
    }

    fn transactions(&self) -> String {
        format!(
            "one call per transaction of the Java procedure {} (multi-partition: its keys fall \
             anywhere); ranges by the primary key across partitions; the load by VoltDB's own \
             single-partition upsert, pipelined",
            self.kv.txn
        )
    }

    async fn prepare(&self) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        self.kv_marker_table(&mut a).await?;
        let tables = a.catalog("TABLES", "TABLE_NAME").await?;
        if tables.iter().any(|t| *t == self.kv.table.to_uppercase()) {
            return Ok(());
        }
        let source = TXN_JAVA.replace("DATASET", &self.kv.dataset);
        let path = format!("loadrig_kv/{}.java", self.kv.txn);
        let jar = tokio::task::spawn_blocking(move || procs::jar_of(&[(&path, &source)]))
            .await
            .map_err(|e| self.failed(e.to_string()))?
            .map_err(|e| self.failed(e))?;
        a.call(
            "@UpdateClasses",
            &[Value::VarBinary(jar.into()), Value::Null],
        )
        .await?;
        a.ddl(&self.kv.schema()).await
    }

    async fn marker(&self) -> Result<Option<String>, TargetError> {
        let mut a = self.admin().await?;
        let t = a
            .sql(&format!(
                "SELECT marker FROM kv_markers WHERE dataset = '{}';",
                self.kv.dataset
            ))
            .await?;
        Ok(t.first().and_then(|t| t.get_str(0, 0)).map(str::to_string))
    }

    async fn set_marker(&self, marker: &str) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        a.sql(&format!(
            "UPSERT INTO kv_markers (dataset, marker) VALUES ('{}', '{}');",
            self.kv.dataset,
            marker.replace('\'', "''")
        ))
        .await
        .map(|_| ())
    }

    async fn clear(&self) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        a.sql(&format!("TRUNCATE TABLE {};", self.kv.table)).await?;
        a.sql(&format!(
            "DELETE FROM kv_markers WHERE dataset = '{}';",
            self.kv.dataset
        ))
        .await
        .map(|_| ())
    }

    async fn count(&self) -> Result<u64, TargetError> {
        let mut a = self.admin().await?;
        let n = a
            .scalar(&format!("SELECT COUNT(*) FROM {};", self.kv.table))
            .await?;
        Ok(n.max(0) as u64)
    }

    async fn teardown(&self) -> Result<(), TargetError> {
        let mut a = self.admin().await?;
        a.ddl(&format!(
            "DROP PROCEDURE {} IF EXISTS; DROP TABLE {} IF EXISTS;",
            self.kv.txn, self.kv.table
        ))
        .await
    }

    async fn connect(&self) -> Result<Self::Conn, TargetError> {
        Ok(VoltKvConn {
            conn: self.conn().await?,
            names: self.kv.clone(),
            target: self.at.clone(),
            via: self.via.clone(),
        })
    }
}
