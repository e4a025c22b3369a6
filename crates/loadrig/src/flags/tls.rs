//! The TLS flags of every command that connects (docs/guides/tls.md): what the
//! server's certificate is checked against. The URL says whether TLS is
//! used (`rediss://`, `tls://`, `mqtts://`, `https://`, `?sslmode=`).

use std::path::PathBuf;

use clap::Args;

/// Its heading is the flattening struct's (`next_help_heading` there).
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Trust the CA certificates in this PEM file instead of the web PKI roots
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not check the server's certificate (the connection is encrypted, not authenticated)
    #[arg(long)]
    pub insecure: bool,
}

impl TlsArgs {
    /// What the target's TLS connections trust; a `--cacert` that cannot
    /// be read or holds no certificate is a usage error.
    pub fn trust(&self) -> Result<loadrig_targets::TlsTrust, loadrig_spec::SpecError> {
        loadrig_targets::TlsTrust::new(self.cacert.as_deref(), self.insecure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        tls: TlsArgs,
    }

    #[test]
    fn a_cacert_that_is_not_there_is_a_usage_error() {
        let t = T::parse_from(["t", "--cacert", "/nonexistent/ca.pem", "--insecure"]);
        assert!(t.tls.insecure);
        let e = t.tls.trust().expect_err("refused");
        assert_eq!(e.flag, "--cacert");
    }
}
