//! nats-bench's flags (Go's flag package: `-np 2`, `--np=2`) as a
//! `loadrig run pubsub` line.

use super::{help, number, refused, takes, Bad, Given, Opt, Run};

/// nats-bench's subscribers: none unless -ns.
const SUBSCRIBERS: &str = "0";

/// The bytes of loadrig's stamp, the smallest message it sends.
const STAMP: u64 = 24;

pub(super) const OPTS: &[Opt] = &[
    takes(
        &["-s"],
        Some("URLS"),
        "--target (nats://h:4222, several separated by commas)",
    ),
    takes(&["-np", "-pub"], Some("N"), "--pubs"),
    takes(&["-ns", "-sub"], Some("N"), "--subs").or(SUBSCRIBERS),
    takes(
        &["-n", "-msgs"],
        Some("N"),
        "--requests, messages over all publishers",
    ),
    takes(&["-ms", "-size"], Some("BYTES"), "--value-size"),
    refused(
        &["-csv"],
        Some("FILE"),
        "nats-bench's CSV is not written; `loadrig run pubsub --out FILE` keeps every count",
    ),
    refused(
        &["-tls"],
        None,
        "TLS is not taken by loadrig's nats-bench line",
    ),
    refused(
        &["-creds"],
        Some("FILE"),
        "credentials files are not read; give nats://USER:PASSWORD@HOST",
    ),
    help(&["-h", "-help"]),
];

pub(super) fn line(g: &Given, run: &mut Run) -> Result<(), Bad> {
    if let Some(urls) = g.get("-s") {
        // nats-bench's list repeats the scheme; loadrig's names it once.
        let servers: Vec<&str> = urls
            .split(',')
            .map(|u| u.trim().trim_start_matches("nats://"))
            .collect();
        run.set("--target", format!("nats://{}", servers.join(",")));
    }
    run.pass(g, "-np", "--pubs");
    run.pass(g, "-n", "--requests");
    if let Some(ms) = g.get("-ms") {
        // Every message carries loadrig's stamp (latency, loss, order).
        let size = number("-ms", ms)?;
        if size < STAMP {
            run.notes.push(format!(
                "-ms {size}: sent as {STAMP} bytes, the stamp each message carries (latency, losses, order)"
            ));
        }
        run.set("--value-size", size.max(STAMP).to_string());
    }
    // nats-bench's default is no subscriber.
    run.set("--subs", g.get("-ns").unwrap_or(SUBSCRIBERS));
    match &g.words[..] {
        [] | [_] => {}
        [_, second, ..] => {
            return Err((
                "SUBJECT",
                format!("one subject only ('{second}' is a second)"),
            ))
        }
    }
    if let Some(subject) = g.words.first() {
        run.notes.push(format!(
            "subject '{subject}': loadrig publishes on a subject of the run's own (lr.<8 hex digits>.t), apart from other runs; `loadrig run pubsub --subject {subject}` publishes on '{subject}'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::Peer;

    #[test]
    fn single_dash_words_become_run_pubsub() {
        let w = run(
            Peer::NatsBench,
            &["-np", "2", "-ns", "3", "-n", "1000", "-ms", "16", "foo"],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--pubs 2 --requests 1000 --value-size 24 --subs 3"
        );
        let w = run(
            Peer::NatsBench,
            &["-s", "nats://a:4222,nats://b:4223", "--np=1", "foo"],
        )
        .unwrap();
        assert_eq!(
            w.join(" "),
            "--target nats://a:4222,b:4223 --pubs 1 --subs 0"
        );
        let e = run(Peer::NatsBench, &["-np", "2", "-x", "foo"]).unwrap_err();
        assert!(e.starts_with("nats-bench -x: "), "{e}");
    }
}
