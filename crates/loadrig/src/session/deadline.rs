//! Every wait on the target has an end, derived from `--timeout`
//! (docs/reference/limits.md): opening one connection, its protocol handshake
//! included, takes at most `--timeout`; preparing (a schema, procedures
//! compiled), a baseline, verifying and cleaning up at most twelve times
//! that. A target that accepts and then says nothing is unreachable after
//! the first, not a hang.

use std::future::Future;
use std::time::Duration;

use loadrig_spec::RunSpec;
use loadrig_workloads::TargetError;

/// How many `--timeout`s a cold-path step (prepare, verify, clean-up) may
/// take: VoltDB compiling its procedures takes tens of seconds.
const COLD_STEPS: f64 = 12.0;

/// The two deadlines of a run, and the target's name for the errors.
#[derive(Debug, Clone)]
pub struct Deadlines {
    connect: Duration,
    cold: Duration,
    target: String,
}

impl Deadlines {
    pub fn of(spec: &RunSpec) -> Deadlines {
        Deadlines {
            connect: Duration::from_secs_f64(spec.timeout_secs),
            cold: Duration::from_secs_f64(spec.timeout_secs * COLD_STEPS),
            target: spec.target.clone(),
        }
    }

    /// Opening a connection (or asking the server's version): at most
    /// `--timeout`.
    pub async fn connect<T>(
        &self,
        what: &str,
        f: impl Future<Output = Result<T, TargetError>>,
    ) -> Result<T, TargetError> {
        tokio::time::timeout(self.connect, f)
            .await
            .unwrap_or_else(|_| {
                Err(TargetError::Unreachable {
                    target: self.target.clone(),
                    reason: format!(
                        "no answer within {} ({what}; --timeout)",
                        secs(self.connect)
                    ),
                })
            })
    }

    /// A step of the cold path: at most twelve `--timeout`s.
    pub async fn cold<T>(
        &self,
        what: &str,
        f: impl Future<Output = Result<T, TargetError>>,
    ) -> Result<T, TargetError> {
        tokio::time::timeout(self.cold, f)
            .await
            .unwrap_or_else(|_| {
                Err(TargetError::Prepare {
                    target: self.target.clone(),
                    reason: format!("{what} took more than {} (12 x --timeout)", secs(self.cold)),
                })
            })
    }

    /// A question whose answer may be missing (the server's version):
    /// none after `--timeout`.
    pub async fn ask<T>(&self, f: impl Future<Output = Option<T>>) -> Option<T> {
        tokio::time::timeout(self.connect, f).await.ok().flatten()
    }
}

fn secs(d: Duration) -> String {
    loadrig_report::fmt::dur(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_silent_target_is_unreachable_after_the_timeout() {
        let d = Deadlines {
            connect: Duration::from_millis(30),
            cold: Duration::from_millis(60),
            target: "postgres://u:***@h/db".to_string(),
        };
        let hang = std::future::pending::<Result<(), TargetError>>();
        let e = d.connect("the handshake", hang).await.unwrap_err();
        assert!(matches!(e, TargetError::Unreachable { .. }));
        assert!(e.to_string().contains("no answer within 30"), "{e}");
        let e = d
            .cold("prepare", std::future::pending::<Result<(), TargetError>>())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("prepare took more than 60"), "{e}");
        assert_eq!(d.ask(std::future::pending::<Option<u8>>()).await, None);
    }
}
