//! wrk's flags (and wrk2's `-R`) as a `loadrig run http` line. wrk
//! checks no certificate of an `https://` server; loadrig does, so the
//! line also takes loadrig's own `--cacert` and `--insecure`.

use super::{help, refused, takes, Bad, Given, Opt, Run};

pub(super) const OPTS: &[Opt] = &[
    takes(&["-c", "--connections"], Some("N"), "--clients"),
    takes(&["-d", "--duration"], Some("T"), "--duration"),
    takes(&["-t", "--threads"], Some("N"), "--threads"),
    refused(&["-s", "--script"], Some("S"), "Lua scripts are not run; `loadrig run http` has --method, --body, -H and -P (pipeline.lua)"),
    takes(&["-H", "--header"], Some("H"), "--header (repeatable)"),
    takes(&["-L", "--latency"], None, "--latency: wrk's distribution and wrk2's spectrum"),
    takes(&["-T", "--timeout"], Some("T"), "--timeout"),
    takes(&["-R", "--rate"], Some("T"), "wrk2's rate: --rate, the open loop"),
    refused(&["-U", "--u_latency"], None, "wrk2's uncorrected latency is loadrig's service time, printed beside latency"),
    refused(&["-B", "--batch_latency"], None, "latency is measured per request"),
    refused(&["-v", "--version"], None, "this is loadrig: `loadrig --version`"),
    takes(&["--cacert"], Some("FILE"), "loadrig's --cacert: https:// certificates are checked (wrk checks none)"),
    takes(&["--insecure"], None, "loadrig's --insecure: no certificate check, as wrk"),
    help(&["--help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    for (peer, flag) in [
        ("-t", "--threads"),
        ("-c", "--clients"),
        ("-d", "--duration"),
        ("-T", "--timeout"),
        ("-R", "--rate"),
        ("--cacert", "--cacert"),
    ] {
        run.pass(g, peer, flag);
    }
    if g.has("--insecure") {
        run.switch("--insecure");
    }
    for h in g.all("-H") {
        run.set("--header", h);
    }
    if g.has("-L") {
        run.switch("--latency");
    }
    match g.words.iter().chain(&g.after).collect::<Vec<_>>()[..] {
        [url] => run.words.push(url.clone()),
        [] => return Err(("URL", "wrk needs the URL, as its last word".into())),
        [_, second, ..] => return Err(("URL", format!("one URL only ('{second}' is a second)"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;

    #[test]
    fn https_takes_loadrigs_tls_flags() {
        let w = run(
            Peer::Wrk,
            &["-c4", "--cacert", "ca.pem", "--insecure", "https://h:8443/"],
        )
        .unwrap();
        let line = w.join(" ");
        assert!(line.contains("--cacert ca.pem"), "{line}");
        assert!(line.contains("--insecure"), "{line}");
        assert_eq!(w.last().map(String::as_str), Some("https://h:8443/"));
    }
}
