//! The files a command names, checked against the filesystem before
//! anything opens: each file a run writes named once, none of them the
//! SQLite database it runs on, `--out` writable; `verify`'s SQLite file
//! there to be read.

use loadrig_spec::SpecError;

use super::RunArgs;

/// Each file a run writes named once, and none of them the SQLite
/// database it runs on (a report written over it would destroy it):
/// checked before anything opens.
pub fn check_files(run: &RunArgs, target: &str) -> Result<(), SpecError> {
    use std::path::Path;
    let files: Vec<(&str, &Path)> = [
        ("--out", run.report_out()?.map(|p| p.as_path())),
        ("--html", run.html.as_deref()),
        ("--hdr-log", run.hdr_log.as_deref()),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.filter(|p| *p != Path::new("-")).map(|p| (flag, p)))
    .collect();
    let db = sqlite_file(target);
    for (i, (flag, path)) in files.iter().enumerate() {
        let bad = |why: String| SpecError::new(flag, why);
        if let Some((other, _)) = files[..i].iter().find(|(_, p)| same_file(p, path)) {
            return Err(bad(format!("{} is {other}'s file too", path.display())));
        }
        if db.is_some_and(|db| same_file(db, path)) {
            return Err(bad(format!(
                "{} is the SQLite database the run writes to",
                path.display()
            )));
        }
    }
    Ok(())
}

pub use loadrig_targets::sqlite_file;

/// Whether two paths name one file: the same device and inode when both
/// exist, else the same absolute path.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        },
    }
}

/// `--out` must name a file that can be written, checked before the run
/// rather than found out after it: not a folder, in a folder that exists
/// and takes new files (the report is written there atomically).
pub fn check_out(out: &std::path::Path, csv: bool) -> Result<(), SpecError> {
    let bad = |why: String| SpecError::new("--out", why);
    if out == std::path::Path::new("-") {
        return match csv {
            true => Err(bad("- (standard output) is taken by --csv".to_string())),
            false => Ok(()),
        };
    }
    // A device or a FIFO is written in place (Report::write).
    if std::fs::metadata(out).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    if out.is_dir() {
        return Err(bad(format!("{} is a folder, not a file", out.display())));
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!("the folder {} does not exist", dir.display())));
    }
    tempfile::Builder::new()
        .prefix(".loadrig-out-check")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| bad(format!("cannot write in {}: {e}", dir.display())))
}
