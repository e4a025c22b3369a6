//! The chat workload's flags: Chut's.

use clap::{Args, ValueEnum};
use loadrig_spec::{ChatMode, ChatSpec, SpecError};

use super::seconds;

pub(super) const CHAT_HELP: &str =
    "As Chut's stress test: every client sends to a random other member of its group \
and reads its own inbox. What a run does: docs/reference/workloads.md, section chat.";

/// Chut's T: 10 seconds.
pub(super) const CHAT_SECONDS: f64 = 10.0;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ChatModeArg {
    /// Every client sends as fast as the broker takes it
    Stress,
    /// Every client sends one message per --think
    Realistic,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Chat workload")]
pub struct ChatArgs {
    /// Groups (Chut's G)
    #[arg(long, short = 'G', value_name = "G", default_value_t = 10)]
    pub groups: u32,
    /// Clients per group (Chut's CPG)
    #[arg(
        long = "per-group",
        visible_alias = "cpg",
        value_name = "CPG",
        default_value_t = 5
    )]
    pub per_group: u32,
    /// stress: as fast as possible; realistic: one message per --think per client
    #[arg(long, value_enum, default_value = "stress")]
    pub mode: ChatModeArg,
    /// Realistic mode: time between a client's messages
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "5")]
    pub think: f64,
    /// Bytes per message, the 24-byte stamp included
    #[arg(
        long = "value-size",
        alias = "size",
        value_name = "BYTES",
        default_value_t = 64
    )]
    pub size: usize,
    /// After the last send, clients go on listening until nothing has
    /// arrived for this long (at most ten times this)
    #[arg(long, value_name = "TIME", value_parser = seconds, default_value = "2")]
    pub drain: f64,
    /// A pause after each message a client receives, before it reads the next (Chut's listener delay: slow readers)
    #[arg(long = "listener-delay", value_name = "TIME", value_parser = seconds, default_value = "0")]
    pub listener_delay: f64,
}

impl ChatArgs {
    pub fn spec(&self) -> Result<ChatSpec, SpecError> {
        let spec = ChatSpec {
            groups: self.groups,
            per_group: self.per_group,
            mode: match self.mode {
                ChatModeArg::Stress => ChatMode::Stress,
                ChatModeArg::Realistic => ChatMode::Realistic {
                    think_secs: self.think,
                },
            },
            size: self.size,
            drain_secs: self.drain,
            listener_delay_secs: self.listener_delay,
        };
        spec.validate()?;
        Ok(spec)
    }
}
