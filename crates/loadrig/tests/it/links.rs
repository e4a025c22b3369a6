//! The docs' links and the pages the code names, resolved: every relative
//! Markdown link of README.md, ARCHITECTURE.md and docs/**/*.md names a
//! file that exists, and every `docs/....md` that a source file, a script,
//! a bench or a page names in its text exists too (help texts and error
//! messages send readers to pages that move). No server, no binary.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files under `dir` whose names end in one of `exts`, depth first.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "target" || name == "results" {
            continue;
        }
        if p.is_dir() {
            files(&p, exts, out);
        } else if exts.iter().any(|e| name.ends_with(e)) || exts.contains(&"") {
            out.push(p);
        }
    }
}

/// The Markdown pages whose links are checked.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    files(&root().join("docs"), &[".md"], &mut out);
    out
}

/// The text outside fenced code blocks (a link in a sample is not one).
fn prose(md: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, l) in md.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, l));
        }
    }
    out
}

/// The targets of a line's inline links (`[text](target)`), without a
/// title or a `#fragment`; external ones (a scheme, `mailto:`) left out.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external {
            out.push(target);
        }
        rest = &rest[end..];
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                checked += 1;
                if !dir.join(target).exists() {
                    let shown = page.strip_prefix(root()).unwrap_or(&page);
                    broken.push(format!("{}:{n}: ({target})", shown.display()));
                }
            }
        }
    }
    // The pages' links found (a parser that finds none checks nothing).
    assert!(checked >= 10, "only {checked} relative links found");
    assert!(
        broken.is_empty(),
        "{} links to files that do not exist:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// `docs/....md` names in a text: `docs/` then letters, digits, `-`, `_`
/// and `/`, ending in `.md`.
fn page_names(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("docs/") {
        let start = from + i;
        let tail = &text[start..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_/.".contains(c)))
            .unwrap_or(tail.len());
        let name = tail[..len].trim_end_matches('.');
        // `.../docs/...` is another tree's (docs.rs, a peer's repository).
        let own = start == 0 || !text[..start].ends_with(['/', '.', '-', '_']);
        // `docs/` then a name, not a pattern (`docs/....md`, `docs/*.md`).
        let named = name[5..].starts_with(|c: char| c.is_ascii_alphanumeric());
        if own && named && name.ends_with(".md") {
            out.push(name);
        }
        from = start + len.max(5);
    }
    out
}

#[test]
fn every_named_page_exists() {
    let mut sources = Vec::new();
    for dir in ["crates", "scripts", "bench", "deploy", ".ci", "docs"] {
        files(&root().join(dir), &[""], &mut sources);
    }
    let mut missing = Vec::new();
    let mut named = 0;
    for file in sources {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // a binary file (an image, a fixture)
        };
        for (n, line) in text.lines().enumerate() {
            for name in page_names(line) {
                named += 1;
                if !root().join(name).exists() {
                    let shown = file.strip_prefix(root()).unwrap_or(&file);
                    missing.push(format!("{}:{}: {name}", shown.display(), n + 1));
                }
            }
        }
    }
    assert!(named >= 50, "only {named} page names found");
    assert!(
        missing.is_empty(),
        "{} names of pages that do not exist:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn links_and_names_are_found_as_written() {
    let line = "see [the model](../explanations/measurement.md#load) and \
                [wrk](https://github.com/wg/wrk), [csv](csv.md \"title\"), [](#here)";
    assert_eq!(
        link_targets(line),
        ["../explanations/measurement.md", "csv.md"]
    );
    let md = "a [x](a.md)\n```\n[y](b.md)\n```\n[z](c.md)\n";
    let found: Vec<&str> = prose(md)
        .iter()
        .flat_map(|(_, l)| link_targets(l))
        .collect();
    assert_eq!(found, ["a.md", "c.md"]);
    assert_eq!(
        page_names("(docs/guides/tls.md). docs/img/x.svg, docs.rs/x/docs/y.md docs/*.md"),
        ["docs/guides/tls.md"]
    );
}
