//! After everything is shown: drop what the run made (unless `--keep`),
//! or leave it when a signal cut the run short; then the run's last
//! lines, why it failed.

use loadrig_workloads::Bench;

use super::verify::Verified;
use super::Session;

impl<B: Bench> Session<'_, B> {
    /// Drop what the run made, unless `--keep`; nothing for a shard; what
    /// stays when a signal cut the verification short, said so.
    pub(super) async fn teardown_after(&mut self, checked: &Verified) -> anyhow::Result<()> {
        if !checked.prepared {
            return Ok(());
        }
        if checked.cut_short {
            self.console
                .line("clean-up ... skipped (interrupted): what the run wrote stays on the target");
        } else {
            self.deadlines
                .cold("clean-up", self.bench.finish(self.spec.keep))
                .await?;
        }
        Ok(())
    }

    /// Why the run failed, one line each: the last lines it prints.
    pub(super) fn failed_lines(&mut self, reasons: &[String]) {
        for r in reasons {
            self.console.line(&format!("check failed: {r}"));
        }
    }
}
