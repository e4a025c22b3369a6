//! What an unknown `--target` most likely meant: a bare `host:port` gets
//! the scheme of the target whose example URL uses that port (or, failing
//! that, the first target that runs the workload). Read from the
//! registry's rows, so a new target's port is known without a list kept
//! here.

use crate::TARGETS;

/// A sentence to add to the unknown-scheme error for `url`, if any.
pub(crate) fn scheme_hint(url: &str, workload: Option<&str>) -> Option<String> {
    if url.contains("://") {
        return None;
    }
    let port = port_of(url);
    let runs = |d: &&crate::Descriptor| workload.is_none_or(|w| d.runs(w));
    let by_port = TARGETS
        .iter()
        .filter(runs)
        .find(|d| port.is_some() && port_of(example_authority(d.example)) == port);
    let chosen = by_port.or_else(|| workload.and_then(|_| TARGETS.iter().find(runs)))?;
    let scheme = chosen.schemes.first()?;
    Some(format!(
        "a URL needs a scheme: did you mean {scheme}://{url}?"
    ))
}

/// `127.0.0.1:6379` of `redis://127.0.0.1:6379,6380 (...)`.
fn example_authority(example: &str) -> &str {
    let url = example.split_whitespace().next().unwrap_or("");
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let end = rest.find(['/', '?', ',']).unwrap_or(rest.len());
    &rest[..end]
}

/// The port of `host:port` (the first of several, `h:1,2`).
fn port_of(authority: &str) -> Option<u16> {
    let first = authority.split([',', '/', '?']).next()?;
    first.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_address_gets_the_scheme_of_its_port_or_workload() {
        let hint = |u, w| scheme_hint(u, w).unwrap_or_default();
        assert!(hint("127.0.0.1:6379", Some("redis")).ends_with("redis://127.0.0.1:6379?"));
        assert!(hint("127.0.0.1:11211", None).ends_with("memcache://127.0.0.1:11211?"));
        assert!(hint("127.0.0.1:5432", Some("voter")).ends_with("postgres://127.0.0.1:5432?"));
        assert!(hint("db:1234", Some("memcache")).ends_with("memcache://db:1234?"));
        assert_eq!(scheme_hint("ftp://h", Some("http")), None);
        assert_eq!(scheme_hint("h:1234", None), None);
    }
}
