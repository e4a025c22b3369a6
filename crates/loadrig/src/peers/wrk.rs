//! wrk's flags (and wrk2's `-R`) as a `loadrig run http` line.

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
    help(&["--help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    for (peer, flag) in [
        ("-t", "--threads"),
        ("-c", "--clients"),
        ("-d", "--duration"),
        ("-T", "--timeout"),
        ("-R", "--rate"),
    ] {
        run.pass(g, peer, flag);
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
