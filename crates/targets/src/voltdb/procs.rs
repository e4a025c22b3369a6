//! The Voter's Java stored procedures: their sources are compiled into
//! this binary, written out at prepare, compiled with `javac --release 8`
//! against the VoltDB jar and packed with `jar`, then sent to the server
//! with `@UpdateClasses`. A compiled jar is kept in the cache directory
//! under a hash of its sources and of the VoltDB jar it was compiled
//! against, so only the first run pays for `javac` (3.5 to 5.5 s here).

use std::path::{Path, PathBuf};
use std::process::Command;

/// (path inside the jar's source tree, source).
const VOTER_SOURCES: &[(&str, &str)] = &[
    (
        "voter/Vote.java",
        include_str!("../../java/voter/Vote.java"),
    ),
    (
        "voter/Initialize.java",
        include_str!("../../java/voter/Initialize.java"),
    ),
];

/// The package the Voter's classes live in, for `@UpdateClasses` deletes.
pub const VOTER_PACKAGE: &str = "voter.*";

/// Where the VoltDB jar is looked for: `LOADRIG_VOLTDB_JAR`, else the
/// directory `scripts/services` fills (`LOADRIG_VOLTDB_LIB`, or
/// `$LOADRIG_CACHE_DIR/voltdb/lib`, default `/var/cache/loadrig/voltdb/lib`).
fn voltdb_jar() -> Result<PathBuf, String> {
    if let Some(j) = std::env::var_os("LOADRIG_VOLTDB_JAR") {
        return Ok(PathBuf::from(j));
    }
    let lib = std::env::var_os("LOADRIG_VOLTDB_LIB")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("voltdb/lib"));
    let found = std::fs::read_dir(&lib).ok().and_then(|dir| {
        dir.filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("voltdb-") && n.ends_with(".jar"))
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.strip_prefix("voltdb-"))
                        .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            })
            .max()
    });
    found.ok_or_else(|| {
        format!(
            "the Voter's Java procedures are compiled against the VoltDB jar, and there is no \
             voltdb-*.jar in {} (run scripts/services up voltdb, or set LOADRIG_VOLTDB_JAR)",
            lib.display()
        )
    })
}

/// Compile the Voter's procedures; the jar's bytes.
pub fn voter_jar() -> Result<Vec<u8>, String> {
    build(VOTER_SOURCES)
}

/// Compile other procedures (the kv workload's, generated per dataset).
pub fn jar_of(sources: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    build(sources)
}

/// `$LOADRIG_CACHE_DIR`, default `/var/cache/loadrig`.
fn cache_dir() -> PathBuf {
    std::env::var_os("LOADRIG_CACHE_DIR")
        .map_or_else(|| PathBuf::from("/var/cache/loadrig"), PathBuf::from)
}

/// The compiled jar from the cache, or compiled now and kept there. The
/// key covers every source (path and text) and the VoltDB jar's path, size
/// and modification time; a cache that cannot be written only costs the
/// next run a compile.
fn build(sources: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    let jar = voltdb_jar()?;
    let kept = cache_dir()
        .join("voltdb/procedures")
        .join(format!("{:016x}.jar", key(sources, &jar)));
    if let Ok(bytes) = std::fs::read(&kept) {
        return Ok(bytes);
    }
    let bytes = compile(sources, &jar)?;
    if let Some(dir) = kept.parent() {
        // Written aside and renamed, so a concurrent run never reads half.
        let aside = kept.with_extension(format!("{}.tmp", std::process::id()));
        let stored = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&aside, &bytes))
            .and_then(|()| std::fs::rename(&aside, &kept));
        if stored.is_err() {
            let _ = std::fs::remove_file(&aside);
        }
    }
    Ok(bytes)
}

/// FNV-1a over the sources and the VoltDB jar's identity: stable across
/// builds of loadrig, unlike the standard library's hasher.
fn key(sources: &[(&str, &str)], jar: &Path) -> u64 {
    let meta = std::fs::metadata(jar).ok();
    let stamp = meta.as_ref().map_or(0, |m| {
        m.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64)
            ^ m.len()
    });
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain([0xffu8].iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (path, text) in sources {
        eat(path.as_bytes());
        eat(text.as_bytes());
    }
    eat(jar.as_os_str().as_encoded_bytes());
    eat(&stamp.to_le_bytes());
    h
}

fn compile(sources: &[(&str, &str)], jar: &Path) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let src = dir.path().join("src");
    let classes = dir.path().join("classes");
    let mut files = Vec::with_capacity(sources.len());
    for (path, text) in sources {
        let p = src.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        files.push(p);
    }
    std::fs::create_dir_all(&classes).map_err(|e| format!("{}: {e}", classes.display()))?;
    run(Command::new("javac")
        .args(["--release", "8", "-nowarn", "-encoding", "UTF-8", "-cp"])
        .arg(jar)
        .arg("-d")
        .arg(&classes)
        .args(&files))?;
    let out = dir.path().join("procedures.jar");
    run(Command::new("jar")
        .arg("cf")
        .arg(&out)
        .arg("-C")
        .arg(&classes)
        .arg("."))?;
    std::fs::read(&out).map_err(|e| format!("{}: {e}", out.display()))
}

/// Run a JDK tool; its complaint, first lines only, on failure.
fn run(cmd: &mut Command) -> Result<(), String> {
    let name = Path::new(cmd.get_program()).display().to_string();
    let out = cmd.output().map_err(|e| {
        format!("cannot run {name} ({e}): the Voter's procedures need a JDK (javac and jar)")
    })?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let first: Vec<&str> = text.lines().take(3).collect();
    Err(format!("{name} failed: {}", first.join(" / ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_follows_every_source_and_the_jar() {
        let jar = Path::new("/nonexistent/voltdb-9.jar");
        let a = key(&[("a/A.java", "class A {}")], jar);
        assert_eq!(a, key(&[("a/A.java", "class A {}")], jar));
        assert_ne!(a, key(&[("a/A.java", "class A { }")], jar));
        assert_ne!(a, key(&[("b/A.java", "class A {}")], jar));
        assert_ne!(
            a,
            key(&[("a/A.java", "class A {}")], Path::new("/x/voltdb-9.jar"))
        );
        // Where one source ends and the next begins is part of the key.
        assert_ne!(
            key(&[("a", "bc"), ("d", "e")], jar),
            key(&[("a", "b"), ("cd", "e")], jar)
        );
    }
}
