//! One truth per fact: the tables of targets and workloads in the README
//! and in docs/reference/targets.md say what the registries in code hold
//! (`loadrig targets` and `loadrig workloads` print those rows; see
//! habits.rs), and a run's header says what runs.

use std::path::PathBuf;

use loadrig_targets::{Descriptor, TARGETS};
use loadrig_workloads::WORKLOADS;

use crate::common::loadrig;

fn read(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A Markdown table's rows from its header line on, as cells.
fn table(text: &str, header_starts: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip_while(|l| !l.starts_with(header_starts))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            // `\|` inside a cell is a bar of its text, not a border.
            l.replace("\\|", "\u{0}")
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('\u{0}', "|"))
                .collect()
        })
        .collect()
}

/// The registry's target a column heading names: its name or a scheme,
/// lowercased, spaces as hyphens (`Redis Cluster` is `redis-cluster`,
/// `PostgreSQL` the scheme `postgresql`).
fn target_named(heading: &str) -> Option<&'static Descriptor> {
    let key = heading.to_lowercase().replace(' ', "-");
    TARGETS
        .iter()
        .find(|d| d.name == key || d.schemes.contains(&key.as_str()))
}

/// The README's matrix: a column per target, a row per workload (or
/// workloads), `x` exactly where the registry says the target runs it.
#[test]
fn the_readmes_matrix_is_the_registrys() {
    let readme = read("README.md");
    let rows = table(&readme, "| workload |");
    let (head, body) = rows
        .split_first()
        .expect("README has the | workload | table");
    let columns: Vec<&Descriptor> = head[1..head.len() - 1]
        .iter()
        .map(|h| target_named(h).unwrap_or_else(|| panic!("README column {h}: no such target")))
        .collect();
    for d in TARGETS {
        assert!(
            columns.iter().any(|c| c.name == d.name),
            "README's matrix has no column for {}",
            d.name
        );
    }
    let mut seen = Vec::new();
    for row in body {
        for w in row[0].split(", ").map(|w| w.trim_matches('`')) {
            seen.push(w.to_string());
            for (d, cell) in columns.iter().zip(&row[1..]) {
                assert_eq!(
                    cell == "x",
                    d.runs(w),
                    "README: {w} on {} is '{cell}'; the registry says {}",
                    d.name,
                    d.runs(w)
                );
            }
        }
    }
    for w in WORKLOADS {
        assert!(
            seen.iter().any(|s| s == w.name),
            "README: no row for {}",
            w.name
        );
    }
}

/// docs/reference/targets.md: a row per target, whose URLs use its
/// schemes; what the registry's line says of TLS and of whose client
/// runs the load, the row says too.
#[test]
fn the_targets_reference_is_the_registrys() {
    let doc = read("docs/reference/targets.md");
    let rows = table(&doc, "| target | URL |");
    for d in TARGETS {
        let row = rows[1..]
            .iter()
            .find(|r| r[1].contains(&format!("`{}://", d.schemes[0])))
            .unwrap_or_else(|| panic!("targets.md: no row with a {}:// URL", d.schemes[0]));
        let (url, notes) = (&row[1], &row[2]);
        for scheme in url
            .split('`')
            .filter_map(|c| c.split_once("://").map(|(s, _)| s))
        {
            let scheme = scheme.rsplit(' ').next().unwrap_or(scheme);
            assert!(
                d.schemes.contains(&scheme) || d.name == "redis-cluster" && scheme == "redis",
                "targets.md: {scheme}:// in {}'s row, not one of its schemes {:?}",
                d.name,
                d.schemes
            );
        }
        for fact in ["no TLS", "own"] {
            assert_eq!(
                d.about.contains(fact),
                notes.contains(fact),
                "{}: the registry's line and targets.md differ on '{fact}':\n  registry: {}\n  doc: {notes}",
                d.name,
                d.about
            );
        }
    }
}

/// A preset's clients give way to --clients in the header and in
/// Erlvolt's client line (a preset once kept saying 100 clients).
#[test]
fn the_header_says_the_clients_given_over_a_presets() {
    let r = loadrig(&[
        "run",
        "voter",
        "--preset",
        "vbd",
        "--clients",
        "50",
        "-t",
        "null://",
        "-n",
        "2000",
    ]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let header = r.stdout.lines().next().unwrap_or_default();
    assert!(header.contains(" 50 clients,"), "{header}");
    assert!(!r.stdout.contains("100 clients"), "{}", r.dump());
    let client = r
        .stdout
        .lines()
        .find(|l| l.starts_with("Client 'VBD'"))
        .unwrap_or_else(|| panic!("no Client line:\n{}", r.dump()));
    assert!(client.contains(" 50 bursts,"), "{client}");
}
