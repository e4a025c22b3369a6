//! The live terminal dashboard's flags (docs/guides/dashboard.md).

use clap::Args;

#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Dashboard")]
pub struct DashboardArgs {
    /// Watch the run live in the terminal (throughput, p50/p99, histogram, errors, client, server); q or Ctrl-C stops it
    #[arg(long)]
    pub dashboard: bool,
    /// Print each lap as one line for the parent's dashboard (set by the parent of --processes)
    #[arg(long, hide = true)]
    pub lap_feed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        d: DashboardArgs,
    }

    #[test]
    fn the_dashboard_is_off_unless_asked_for() {
        assert!(!T::parse_from(["t"]).d.dashboard);
        let t = T::parse_from(["t", "--dashboard", "--lap-feed"]);
        assert!(t.d.dashboard && t.d.lap_feed);
    }
}
