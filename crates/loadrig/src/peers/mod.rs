//! The peers' own command lines: `loadrig redis-benchmark ARGS...` and its
//! siblings take the words a peer tool takes, spelled as its manual spells
//! them, and turn them into the `loadrig run WORKLOAD ...` line that runs
//! the same load. That line is then parsed like any other, so a peer's
//! command runs through the one spec, plan and engine (and a
//! `--processes` child is started as for `run`).
//!
//! Each peer is a table of its flags ([`Opt`]) and a function from the
//! flags given to the run line. A flag the table does not know, or knows
//! and refuses, ends the program with one line naming it (exit 2): a peer's
//! flag is never dropped in silence. A flag that is taken but changes
//! nothing here (an output preference) prints a note on standard error.
//! What each peer's flags become: docs/reference/peers.md.

mod memaslap;
mod memtier;
mod nats_bench;
mod pgbench;
mod redis_benchmark;
mod wrk;

use std::ffi::OsString;

/// The peer tools whose command lines loadrig takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    RedisBenchmark,
    MemtierBenchmark,
    Memaslap,
    NatsBench,
    Wrk,
    Pgbench,
}

/// A peer's command line that cannot be run: the flag and why.
#[derive(Debug, thiserror::Error)]
#[error("{peer} {flag}: {why}")]
pub struct PeerError {
    pub peer: &'static str,
    pub flag: String,
    pub why: String,
}

/// How a peer's flags are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Every flag a word of its own, its value the next word
    /// (redis-benchmark's own parser).
    Words,
    /// getopt_long: `-c50` or `-c 50`, `--connections=50` or
    /// `--connections 50`, switches bundled (`-qL`) (wrk, memaslap, memtier).
    Getopt,
    /// Go's flag package: `-np 2`, `--np 2`, `-np=2` (nats-bench).
    Go,
}

/// One flag of a peer.
#[derive(Debug)]
pub(crate) struct Opt {
    /// Its spellings, the first the one shown (`-c`, `--connections`).
    names: &'static [&'static str],
    /// The value's name, `None` for a switch.
    value: Option<&'static str>,
    does: Does,
    /// The peer's default, when the run line applies it (the constant
    /// the translation uses, so the list cannot drift from it).
    default: Option<&'static str>,
}

impl Opt {
    /// The same flag with the default the translation applies.
    const fn or(mut self, default: &'static str) -> Opt {
        self.default = Some(default);
        self
    }
}

#[derive(Debug)]
enum Does {
    /// Taken: what it becomes here.
    Takes(&'static str),
    /// Taken, but it changes nothing here: the note printed when given.
    Notes(&'static str),
    /// Known and refused: why.
    Refused(&'static str),
    /// Prints the flag list.
    Help,
}

/// A flag's spellings.
type Names = &'static [&'static str];
/// A flag's value's name (`None`: a switch).
type Value = Option<&'static str>;

const fn opt(names: Names, value: Value, does: Does) -> Opt {
    Opt {
        names,
        value,
        does,
        default: None,
    }
}

const fn takes(names: Names, value: Value, what: &'static str) -> Opt {
    opt(names, value, Does::Takes(what))
}

const fn notes(names: Names, value: Value, note: &'static str) -> Opt {
    opt(names, value, Does::Notes(note))
}

const fn refused(names: Names, value: Value, why: &'static str) -> Opt {
    opt(names, value, Does::Refused(why))
}

const fn help(names: Names) -> Opt {
    opt(names, None, Does::Help)
}

/// The flags given, in order, by their first spelling, and the other words.
#[derive(Debug, Default)]
pub(crate) struct Given {
    flags: Vec<(&'static str, Option<String>)>,
    words: Vec<String>,
    /// Words after `--`, as given.
    after: Vec<String>,
}

impl Given {
    /// The last value given to a flag (a later one wins, as in the peers).
    fn get(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| *n == name)
    }

    /// Every value given to a repeatable flag, in order.
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.flags
            .iter()
            .filter(move |(n, _)| *n == name)
            .filter_map(|(_, v)| v.as_deref())
    }
}

/// What a peer's command line becomes.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// `loadrig run ...`, and notes for standard error.
    Run {
        args: Vec<OsString>,
        notes: Vec<String>,
    },
    /// The peer's flag list (its `--help`).
    Help(String),
}

impl Peer {
    /// The name the peer's binary has (and the subcommand's).
    pub fn name(self) -> &'static str {
        match self {
            Peer::RedisBenchmark => "redis-benchmark",
            Peer::MemtierBenchmark => "memtier_benchmark",
            Peer::Memaslap => "memaslap",
            Peer::NatsBench => "nats-bench",
            Peer::Wrk => "wrk",
            Peer::Pgbench => "pgbench",
        }
    }

    fn style(self) -> Style {
        match self {
            Peer::RedisBenchmark => Style::Words,
            Peer::NatsBench => Style::Go,
            Peer::MemtierBenchmark | Peer::Memaslap | Peer::Wrk | Peer::Pgbench => Style::Getopt,
        }
    }

    fn opts(self) -> &'static [Opt] {
        match self {
            Peer::RedisBenchmark => redis_benchmark::OPTS,
            Peer::MemtierBenchmark => memtier::OPTS,
            Peer::Memaslap => memaslap::OPTS,
            Peer::NatsBench => nats_bench::OPTS,
            Peer::Wrk => wrk::OPTS,
            Peer::Pgbench => pgbench::OPTS,
        }
    }

    /// The workload the peer's load is.
    fn workload(self) -> &'static str {
        match self {
            Peer::RedisBenchmark | Peer::MemtierBenchmark => "redis",
            Peer::Memaslap => "memcache",
            Peer::NatsBench => "pubsub",
            Peer::Wrk => "http",
            Peer::Pgbench => "pgbench",
        }
    }

    /// The peer's words as a `loadrig run` line (or its flag list).
    pub fn line(self, args: &[OsString]) -> Result<Line, PeerError> {
        let words = args
            .iter()
            .map(|a| {
                a.to_str().map(str::to_string).ok_or_else(|| PeerError {
                    peer: self.name(),
                    flag: a.to_string_lossy().into_owned(),
                    why: "not UTF-8".into(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let given = self.scan(&words)?;
        if given
            .flags
            .iter()
            .any(|(n, _)| self.find(n).is_some_and(|o| matches!(o.does, Does::Help)))
        {
            return Ok(Line::Help(self.flag_list()));
        }
        let mut notes = Vec::new();
        for (name, _) in &given.flags {
            if let Some(Opt {
                does: Does::Notes(note),
                ..
            }) = self.find(name)
            {
                notes.push(format!("{} {name}: {note}", self.name()));
            }
        }
        let mut line = Run::default();
        match self {
            Peer::RedisBenchmark => redis_benchmark::line(&given, &mut line),
            Peer::MemtierBenchmark => memtier::line(&given, &mut line),
            Peer::Memaslap => memaslap::line(&given, &mut line),
            Peer::NatsBench => nats_bench::line(&given, &mut line),
            Peer::Wrk => wrk::line(&given, &mut line),
            Peer::Pgbench => pgbench::line(&given, &mut line),
        }
        .map_err(|(flag, why)| PeerError {
            peer: self.name(),
            flag: flag.to_string(),
            why,
        })?;
        notes.extend(
            line.notes
                .into_iter()
                .map(|n| format!("{}: {n}", self.name())),
        );
        let command = line.command.unwrap_or("run");
        let mut args: Vec<OsString> =
            vec!["loadrig".into(), command.into(), self.workload().into()];
        args.extend(line.words.into_iter().map(OsString::from));
        Ok(Line::Run { args, notes })
    }

    /// `run WORKLOAD ...` of a translated line, for messages: a password
    /// in a URL masked.
    pub fn run_words(self, args: &[OsString]) -> String {
        let words: Vec<String> = args
            .iter()
            .skip(1)
            .map(|a| loadrig_spec::secret::mask_text(&a.to_string_lossy()))
            .collect();
        words.join(" ")
    }

    fn find(self, name: &str) -> Option<&'static Opt> {
        self.opts().iter().find(|o| o.names.contains(&name))
    }

    /// Words into flags and other words, in the peer's style.
    fn scan(self, words: &[String]) -> Result<Given, PeerError> {
        let bad = |flag: &str, why: String| PeerError {
            peer: self.name(),
            flag: flag.to_string(),
            why,
        };
        let unknown = |flag: &str| {
            bad(
                flag,
                format!(
                    "not a flag of {} that loadrig knows (`loadrig {} --help` lists them)",
                    self.name(),
                    self.name()
                ),
            )
        };
        let mut given = Given::default();
        let mut i = 0;
        while let Some(word) = words.get(i) {
            i += 1;
            if word == "--" {
                given.after.extend(words[i..].iter().cloned());
                break;
            }
            if !word.starts_with('-') || word.len() == 1 {
                given.words.push(word.clone());
                continue;
            }
            // (spelling looked up, value attached to the word)
            let found = self.spellings(word);
            for (name, attached) in found {
                let opt = self.find(&name).ok_or_else(|| unknown(&name))?;
                let value = match (opt.value, attached) {
                    (None, Some(_)) if self.style() == Style::Go => {
                        // Go's booleans take `-tls=true`.
                        None
                    }
                    (None, Some(_)) => return Err(bad(&name, "takes no value".into())),
                    (None, None) => None,
                    (Some(_), Some(v)) => Some(v),
                    (Some(what), None) => {
                        let v = words
                            .get(i)
                            .ok_or_else(|| bad(&name, format!("needs a value ({what})")))?;
                        i += 1;
                        Some(v.clone())
                    }
                };
                if let Does::Refused(why) = opt.does {
                    return Err(bad(&name, why.to_string()));
                }
                given.flags.push((opt.names[0], value));
            }
        }
        Ok(given)
    }

    /// The flags one word spells, in this peer's style, each with the
    /// value attached to it, if any: `-c50` and `-qL` (getopt's bundled
    /// switches, a value ending the word), `--name=v`, Go's `-name=v`.
    fn spellings(self, word: &str) -> Vec<(String, Option<String>)> {
        let mut found: Vec<(String, Option<String>)> = Vec::new();
        match self.style() {
            Style::Words => found.push((word.to_string(), None)),
            Style::Go => {
                let bare = word.trim_start_matches('-');
                match bare.split_once('=') {
                    Some((n, v)) => found.push((format!("-{n}"), Some(v.to_string()))),
                    None => found.push((format!("-{bare}"), None)),
                }
            }
            Style::Getopt if word.starts_with("--") => match word.split_once('=') {
                Some((n, v)) => found.push((n.to_string(), Some(v.to_string()))),
                None => found.push((word.to_string(), None)),
            },
            Style::Getopt => {
                let mut rest = word.get(1..).unwrap_or("");
                while let Some(c) = rest.chars().next() {
                    let name = format!("-{c}");
                    rest = &rest[c.len_utf8()..];
                    let wants = self.find(&name).is_some_and(|o| o.value.is_some());
                    if wants && !rest.is_empty() {
                        found.push((name, Some(rest.to_string())));
                        break;
                    }
                    found.push((name, None));
                }
            }
        }
        found
    }

    /// The peer's flags and what each does here, one line each.
    pub fn flag_list(self) -> String {
        let spell = |o: &Opt| {
            let mut s = o.names.join(", ");
            if let Some(v) = o.value {
                s.push(' ');
                s.push_str(v);
            }
            s
        };
        let width = self
            .opts()
            .iter()
            .map(|o| spell(o).len())
            .max()
            .unwrap_or(0);
        let mut out = format!(
            "loadrig {} ARGS...: {}'s flags, as `loadrig run {}`\n",
            self.name(),
            self.name(),
            self.workload()
        );
        out.push_str(&format!(
            "defaults not listed are `loadrig run {}`'s (its --help shows them; docs/reference/peers.md)\n",
            self.workload()
        ));
        for o in self.opts() {
            let what = match o.does {
                Does::Takes(w) => match o.default {
                    Some(d) => format!("{w} [default: {d}]"),
                    None => w.to_string(),
                },
                Does::Notes(n) => format!("taken, changes nothing: {n}"),
                Does::Refused(w) => format!("refused: {w}"),
                Does::Help => "this list".to_string(),
            };
            let lines = wrap(&what, COLUMNS.saturating_sub(width + 4).max(30));
            for (i, line) in lines.iter().enumerate() {
                let name = if i == 0 { spell(o) } else { String::new() };
                out.push_str(&format!("  {name:<width$}  {line}\n"));
            }
        }
        out
    }
}

/// The width the flag lists fit in.
const COLUMNS: usize = 100;

/// Words into lines of at most `width` characters (a longer word alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// The run line being built, and notes for standard error.
#[derive(Debug, Default)]
pub(crate) struct Run {
    words: Vec<String>,
    notes: Vec<String>,
    /// The command, when not `run` (pgbench's `-i` is `prepare`).
    command: Option<&'static str>,
}

impl Run {
    /// `--flag value`.
    fn set(&mut self, flag: &str, value: impl Into<String>) {
        self.words.push(flag.to_string());
        self.words.push(value.into());
    }

    /// `--flag`.
    fn switch(&mut self, flag: &str) {
        self.words.push(flag.to_string());
    }

    /// A peer's flag passed on under loadrig's name, when given.
    fn pass(&mut self, given: &Given, peer: &str, flag: &str) {
        if let Some(v) = given.get(peer) {
            self.set(flag, v);
        }
    }
}

/// A failed translation: the peer's flag and why.
type Bad = (&'static str, String);

/// A whole number as a peer writes it.
fn number(flag: &'static str, v: &str) -> Result<u64, Bad> {
    v.trim()
        .parse::<u64>()
        .map_err(|_| (flag, format!("'{v}' is not a whole number")))
}

/// A password or user in a URL: everything but unreserved characters
/// %-escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `HOST:PORT` or `[V6]:PORT` with the port's default.
fn host_port(host: &str, port: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn run(peer: Peer, words: &[&str]) -> Result<Vec<String>, String> {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        match peer.line(&args).map_err(|e| e.to_string())? {
            Line::Run { args, .. } => Ok(args
                .into_iter()
                .skip(3)
                .map(|a| a.into_string().unwrap())
                .collect()),
            Line::Help(_) => Err("help".into()),
        }
    }

    #[test]
    fn getopt_words_bundle_and_attach() {
        let w = run(
            Peer::Wrk,
            &["-t2", "-c50", "-d3s", "--latency", "http://h:1/"],
        )
        .unwrap();
        assert_eq!(
            w,
            [
                "--threads",
                "2",
                "--clients",
                "50",
                "--duration",
                "3s",
                "--latency",
                "http://h:1/"
            ]
        );
        let w = run(Peer::Wrk, &["--threads=2", "-c", "5", "http://h:1/"]).unwrap();
        assert_eq!(w, ["--threads", "2", "--clients", "5", "http://h:1/"]);
    }

    #[test]
    fn unknown_and_refused_flags_are_named() {
        let e = run(Peer::Wrk, &["-Z", "http://h/"]).unwrap_err();
        assert!(e.starts_with("wrk -Z: not a flag of wrk"), "{e}");
        let e = run(Peer::Wrk, &["-s", "pipeline.lua", "http://h/"]).unwrap_err();
        assert!(e.starts_with("wrk -s: "), "{e}");
        let e = run(Peer::RedisBenchmark, &["-c"]).unwrap_err();
        assert!(e.starts_with("redis-benchmark -c: needs a value"), "{e}");
    }

    #[test]
    fn help_lists_every_flag() {
        for peer in [
            Peer::RedisBenchmark,
            Peer::MemtierBenchmark,
            Peer::Memaslap,
            Peer::NatsBench,
            Peer::Wrk,
            Peer::Pgbench,
        ] {
            let Ok(Line::Help(text)) = peer.line(&["--help".into()]) else {
                panic!("{} --help", peer.name())
            };
            for o in peer.opts() {
                assert!(text.contains(o.names[0]), "{}: {}", peer.name(), o.names[0]);
            }
        }
    }

    #[test]
    fn flag_lists_fit_100_columns() {
        for peer in [
            Peer::RedisBenchmark,
            Peer::MemtierBenchmark,
            Peer::Memaslap,
            Peer::NatsBench,
            Peer::Wrk,
            Peer::Pgbench,
        ] {
            for line in peer.flag_list().lines() {
                assert!(line.len() <= COLUMNS, "{}: {line}", peer.name());
            }
        }
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
    }

    #[test]
    fn passwords_are_escaped_in_urls_and_masked_in_messages() {
        assert_eq!(escape("p@ss:w/rd"), "p%40ss%3Aw%2Frd");
        let Ok(Line::Run { args, .. }) =
            Peer::RedisBenchmark.line(&["-a".into(), "s3cret".into(), "-c".into(), "x".into()])
        else {
            panic!("a run line")
        };
        let shown = Peer::RedisBenchmark.run_words(&args);
        assert!(
            !shown.contains("s3cret") && shown.contains("--clients x"),
            "{shown}"
        );
        assert_eq!(host_port("::1", "6379"), "[::1]:6379");
    }
}
