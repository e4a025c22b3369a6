//! Source addresses (`--bind`, docs/explanations/client-cost.md): the local addresses the
//! hand-written socket targets connect from, dealt to connections round
//! robin. One pair of addresses offers about 28,000 ephemeral ports on
//! Linux; with several source addresses one host opens more connections
//! to one server address than that. The binary parses and checks them
//! here; they reach the connections as [`crate::ClientSettings::sources`],
//! dealt by the opened target. Without any, connections leave from
//! whatever address the kernel picks.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use loadrig_spec::SpecError;

/// The most addresses `--bind` takes (a range can be large by mistake).
pub const MAX_SOURCES: usize = 65_536;

/// Parse `ADDR[,ADDR...]`, each an IP address or an IPv4 range `A-B`
/// (both ends included: `127.0.0.2-127.0.0.9`).
pub fn parse_sources(s: &str) -> Result<Vec<IpAddr>, SpecError> {
    let bad = |why: String| SpecError::new("--bind", why);
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        let not_addr = |w: &str| {
            bad(format!(
                "'{w}' is not an IP address (e.g. 127.0.0.2, or 127.0.0.2-127.0.0.9)"
            ))
        };
        match item.split_once('-') {
            None => out.push(item.parse::<IpAddr>().map_err(|_| not_addr(item))?),
            Some((a, b)) => {
                let a: Ipv4Addr = a.trim().parse().map_err(|_| not_addr(a))?;
                let b: Ipv4Addr = b.trim().parse().map_err(|_| not_addr(b))?;
                let (a, b) = (u32::from(a), u32::from(b));
                if a > b {
                    return Err(bad(format!("the range '{item}' runs backwards")));
                }
                if (b - a) as usize >= MAX_SOURCES {
                    return Err(bad(format!(
                        "the range '{item}' holds more than {MAX_SOURCES} addresses"
                    )));
                }
                out.extend((a..=b).map(|n| IpAddr::V4(Ipv4Addr::from(n))));
            }
        }
        if out.len() > MAX_SOURCES {
            return Err(bad(format!("more than {MAX_SOURCES} addresses")));
        }
    }
    Ok(out)
}

/// Check that each of `sources` is an address of this host (by binding
/// to it): one that is not is a usage error naming `--bind`.
pub fn check_sources(sources: &[IpAddr]) -> Result<(), SpecError> {
    for ip in sources {
        if let Err(e) = std::net::UdpSocket::bind(SocketAddr::new(*ip, 0)) {
            return Err(SpecError::new(
                "--bind",
                format!("{ip} is not an address of this host ({e})"),
            ));
        }
    }
    Ok(())
}

/// `ips` as `--bind` takes them, consecutive IPv4 addresses as a range.
pub(crate) fn as_ranges(ips: &[IpAddr]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let close = |out: &mut Vec<String>, (a, b): (u32, u32)| {
        out.push(if a == b {
            Ipv4Addr::from(a).to_string()
        } else {
            format!("{}-{}", Ipv4Addr::from(a), Ipv4Addr::from(b))
        });
    };
    for ip in ips {
        match (ip, run) {
            (IpAddr::V4(v4), Some((a, b))) if b.checked_add(1) == Some(u32::from(*v4)) => {
                run = Some((a, u32::from(*v4)));
            }
            (IpAddr::V4(v4), _) => {
                if let Some(r) = run.replace((u32::from(*v4), u32::from(*v4))) {
                    close(&mut out, r);
                }
            }
            (IpAddr::V6(v6), _) => {
                if let Some(r) = run.take() {
                    close(&mut out, r);
                }
                out.push(v6.to_string());
            }
        }
    }
    if let Some(r) = run {
        close(&mut out, r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        let v = parse_sources("127.0.0.2,127.0.0.5-127.0.0.7, ::1").unwrap();
        let s: Vec<String> = v.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            s,
            ["127.0.0.2", "127.0.0.5", "127.0.0.6", "127.0.0.7", "::1"]
        );
    }

    #[test]
    fn sources_are_written_back_as_ranges() {
        for given in [
            "127.0.0.2-127.0.0.9",
            "127.0.0.2,127.0.0.4-127.0.0.5,::1,127.0.0.6",
            "10.0.0.255-10.0.1.1",
        ] {
            let ips = parse_sources(given).unwrap();
            assert_eq!(as_ranges(&ips).join(","), given);
            // And they read back as the same addresses.
            assert_eq!(parse_sources(&as_ranges(&ips).join(",")).unwrap(), ips);
        }
        assert!(as_ranges(&[]).is_empty());
    }

    #[test]
    fn bad_sources_name_the_flag() {
        for bad in [
            "127.0.0",
            "127.0.0.9-127.0.0.2",
            "x",
            "",
            "10.0.0.0-10.255.255.255",
        ] {
            let e = parse_sources(bad).expect_err(bad);
            assert_eq!(e.flag, "--bind", "{bad}");
        }
        // TEST-NET-1 is never an address of this host.
        let e = check_sources(&["192.0.2.1".parse().unwrap()]).expect_err("not local");
        assert_eq!(e.flag, "--bind");
        assert!(e.message.contains("192.0.2.1"), "{}", e.message);
    }
}
