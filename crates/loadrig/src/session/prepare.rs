//! Before the load: connect, prepare and record the baseline (a shard
//! connects only).

use loadrig_workloads::{Bench, TargetInfo};

use super::Session;

/// What was there before the load.
pub struct Before {
    pub server_version: Option<String>,
    /// `Null` for a shard, which records none.
    pub baseline: serde_json::Value,
}

impl<B: Bench> Session<'_, B> {
    /// Connect only: a shard neither prepares nor records a baseline.
    pub(super) async fn connect(&mut self) -> Before {
        self.console.phase("connect");
        Before {
            server_version: self
                .deadlines
                .ask(self.bench.target().server_version())
                .await,
            baseline: serde_json::Value::Null,
        }
    }

    /// Connect, prepare and record the baseline (recorded even with
    /// --no-verify, so `loadrig verify REPORT` can check later).
    /// A signal ends preparing at once: a load of ten million rows is not
    /// waited for. Nothing was measured, so no report: exit 1.
    pub(super) async fn prepare(&mut self) -> anyhow::Result<Before> {
        self.console.phase("connect");
        let server_version = self
            .deadlines
            .ask(self.bench.target().server_version())
            .await;
        let unread = self.bench.target().unread();
        if !unread.is_empty() {
            self.console
                .line(&format!("not read from the server: {}", unread.join("; ")));
        }
        self.console.phase("prepare");
        let interrupted =
            || anyhow::anyhow!("interrupted by a signal while preparing: nothing was run");
        let d = &self.deadlines;
        super::unless_stopped(false, &self.stop, d.cold("prepare", self.bench.prepare()))
            .await
            .ok_or_else(interrupted)??;
        let baseline = super::unless_stopped(
            false,
            &self.stop,
            d.cold("the baseline", self.bench.baseline()),
        )
        .await
        .ok_or_else(interrupted)??;
        Ok(Before {
            server_version,
            baseline,
        })
    }
}
