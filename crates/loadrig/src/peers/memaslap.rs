//! memaslap's flags (libmemcached's `memaslap --help`) as a `loadrig run
//! memcache` line, its `-F` configuration file read for the key size, the
//! value size and the get/set proportion.

use super::{help, notes, number, refused, takes, Bad, Given, Opt, Run};

/// memaslap's operations without -t or -x.
const EXECUTE_NUMBER: &str = "1000000";

pub(super) const OPTS: &[Opt] = &[
    takes(
        &["-s", "--servers"],
        Some("HOST:PORT,..."),
        "--target memcache://HOST:PORT,...",
    ),
    takes(&["-T", "--threads"], Some("N"), "--threads"),
    takes(&["-c", "--concurrency"], Some("N"), "--clients"),
    takes(
        &["-n", "--conn_sock"],
        Some("N"),
        "1 only: one connection per client",
    ),
    takes(&["-x", "--execute_number"], Some("N"), "--requests").or(EXECUTE_NUMBER),
    takes(
        &["-t", "--time"],
        Some("TIME"),
        "--duration instead of -x (10s, 2m, 1h)",
    ),
    takes(
        &["-F", "--cfg_cmd"],
        Some("FILE"),
        "its key, value and cmd sections: --key-size, --value-size, --ratio (one line each)",
    ),
    takes(&["-w", "--win_size"], Some("SIZE"), "--window"),
    takes(&["-X", "--fixed_size"], Some("SIZE"), "--value-size"),
    takes(
        &["-v", "--verify"],
        Some("PROPORTION"),
        "--verify-gets (values are checked here by default: 1)",
    ),
    takes(&["-d", "--division"], Some("N"), "--multiget"),
    takes(
        &["-S", "--stat_freq"],
        Some("TIME"),
        "--interval between lap lines",
    ),
    takes(&["-B", "--binary"], None, "--binary"),
    takes(
        &["-P", "--tps"],
        Some("N"),
        "--rate, the open loop (2k = 2000)",
    ),
    notes(
        &["-o", "--overwrite"],
        Some("PROPORTION"),
        "sets land on the keys of each client's window, overwriting them",
    ),
    refused(
        &["-e", "--exp_verify"],
        Some("PROPORTION"),
        "keys are written without expiry (they are checked afterwards)",
    ),
    refused(
        &["-R", "--reconnect"],
        None,
        "connections are kept (loadrig reconnects after a failure only)",
    ),
    refused(&["-U", "--udp"], None, "UDP is not taken"),
    refused(
        &["-a", "--facebook"],
        None,
        "the facebook test is not taken",
    ),
    refused(
        &["-p", "--rep_write"],
        Some("N"),
        "replication is not taken",
    ),
    refused(
        &["-b", "--verbose"],
        None,
        "errors are counted and shown by kind",
    ),
    refused(
        &["-V", "--version"],
        None,
        "this is loadrig: `loadrig --version`",
    ),
    help(&["-h", "--help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    if let Some(w) = g.words.first() {
        return Err((
            "-s",
            format!("'{w}' is not a flag; memaslap takes only flags"),
        ));
    }
    if let Some(servers) = g.get("-s") {
        run.set("--target", format!("memcache://{servers}"));
    }
    if let Some(n) = g.get("-n") {
        if number("-n", n)? != 1 {
            return Err(("-n", "1 only: every client has one connection".into()));
        }
    }
    for (peer, flag) in [
        ("-T", "--threads"),
        ("-c", "--clients"),
        ("-w", "--window"),
        ("-v", "--verify-gets"),
        ("-d", "--multiget"),
        ("-S", "--interval"),
        ("-P", "--rate"),
    ] {
        run.pass(g, peer, flag);
    }
    match (g.get("-t"), g.get("-x")) {
        (Some(t), _) => run.set("--duration", t),
        (None, x) => run.set("--requests", x.unwrap_or(EXECUTE_NUMBER)),
    }
    if let Some(path) = g.get("-F") {
        let text = std::fs::read_to_string(path).map_err(|e| ("-F", format!("{path}: {e}")))?;
        let cfg = Config::parse(&text).map_err(|why| ("-F", format!("{path}: {why}")))?;
        if let Some(k) = cfg.key {
            run.set("--key-size", k.to_string());
        }
        if let Some((lo, hi)) = cfg.value {
            if !g.has("-X") {
                run.set("--value-size", range(lo, hi));
            }
        }
        if let Some((sets, gets)) = cfg.ratio {
            run.set("--ratio", format!("{sets}:{gets}"));
        }
    }
    run.pass(g, "-X", "--value-size");
    if g.has("-B") {
        run.switch("--binary");
    }
    Ok(())
}

fn range(lo: u64, hi: u64) -> String {
    match lo == hi {
        true => lo.to_string(),
        false => format!("{lo}-{hi}"),
    }
}

/// What loadrig takes from memaslap's configuration file.
#[derive(Debug, Default, PartialEq)]
struct Config {
    key: Option<u64>,
    value: Option<(u64, u64)>,
    /// Sets to gets, as whole numbers.
    ratio: Option<(u64, u64)>,
}

impl Config {
    /// Sections `key`, `value` (lines `START END PROPORTION`) and `cmd`
    /// (lines `TYPE PROPORTION`, 0 set, 1 get); `#` starts a comment.
    fn parse(text: &str) -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut section = "";
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        let (mut sets, mut gets) = (None, None);
        for raw in text.lines() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if matches!(line, "key" | "value" | "cmd") {
                section = if line == "key" {
                    "key"
                } else if line == "value" {
                    "value"
                } else {
                    "cmd"
                };
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            let int = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| format!("'{line}': '{s}' is not a whole number"))
            };
            let share = |s: &str| match s.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(format!("'{line}': '{s}' is not a proportion")),
            };
            match (section, &f[..]) {
                ("key", [a, b, p]) => keys.push((int(a)?, int(b)?, share(p)?)),
                ("value", [a, b, p]) => values.push((int(a)?, int(b)?, share(p)?)),
                ("cmd", [t, p]) => match *t {
                    "0" => sets = Some(share(p)?),
                    "1" => gets = Some(share(p)?),
                    _ => return Err(format!("'{line}': a command is 0 (set) or 1 (get)")),
                },
                ("", _) => {
                    return Err(format!(
                        "'{line}' is outside the key, value and cmd sections"
                    ))
                }
                _ => return Err(format!("'{line}': not a line of the {section} section")),
            }
        }
        match &keys[..] {
            [] => {}
            [(a, b, _)] if a == b => cfg.key = Some(*a),
            [_] => return Err("a key size range is not taken (keys have one size here)".into()),
            _ => return Err("one key line only".into()),
        }
        match &values[..] {
            [] => {}
            [(a, b, _)] if a <= b => cfg.value = Some((*a, *b)),
            [_] => return Err("a value line's start is above its end".into()),
            _ => return Err("one value line only (a range is uniform here)".into()),
        }
        if sets.is_some() || gets.is_some() {
            // Proportions to whole numbers: thousandths, then reduced.
            let s = (sets.unwrap_or(0.0) * 1000.0).round() as u64;
            let g = (gets.unwrap_or(0.0) * 1000.0).round() as u64;
            if s + g == 0 {
                return Err("the cmd proportions are all 0".into());
            }
            let d = gcd(s, g);
            cfg.ratio = Some((s / d, g / d));
        }
        Ok(cfg)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    match b {
        0 => a.max(1),
        _ => gcd(b, a % b),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;
    use super::Config;

    #[test]
    fn the_guides_configuration_is_read() {
        let cfg = Config::parse("# c\nkey\n16 16 1\nvalue\n128 128 1\ncmd\n0 0\n1 1\n").unwrap();
        assert_eq!(
            cfg,
            Config {
                key: Some(16),
                value: Some((128, 128)),
                ratio: Some((0, 1))
            }
        );
        let cfg = Config::parse("cmd\n0 0.1\n1 0.9\n").unwrap();
        assert_eq!(cfg.ratio, Some((1, 9)));
        assert!(Config::parse("key\n16 32 1\n").is_err());
        assert!(Config::parse("16 16 1\n").is_err());
    }

    #[test]
    fn flags_become_run_memcache() {
        let w = run(
            Peer::Memaslap,
            &[
                "-s",
                "127.0.0.1:11211",
                "-d",
                "1",
                "-B",
                "-c",
                "50",
                "-o",
                "1",
                "-t",
                "30s",
            ],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--target memcache://127.0.0.1:11211 --clients 50 --multiget 1 --duration 30s --binary"
        );
        let e = run(Peer::Memaslap, &["-U"]).unwrap_err();
        assert!(e.starts_with("memaslap -U: "), "{e}");
    }
}
