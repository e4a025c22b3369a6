//! Where the database file lives: its directory and that directory's
//! filesystem type, so that a run says whether it measured a disk (ext4,
//! xfs, ...) or memory (tmpfs). The same command measures either,
//! depending on the machine's temporary directory.
//!
//! The type comes from `/proc/self/mountinfo` (the mount that holds the
//! directory: the longest mount point that is a prefix of it), which
//! names it as `mount` does ("ext4"), where statfs(2) only gives a magic
//! number that ext2, ext3 and ext4 share.

use std::path::{Path, PathBuf};

/// The database file's directory, made absolute, and its filesystem type
/// ("unknown" where the system does not say).
pub(super) fn of(db: &Path) -> (PathBuf, String) {
    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let fs = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|m| fs_type(&m, &dir))
        .unwrap_or_else(|| "unknown".to_string());
    (dir, fs)
}

/// The filesystem type of the mount holding `dir` (absolute, no `..`),
/// from the text of a mountinfo file. Of several mounts on one point the
/// last, which hides the others, wins.
fn fs_type(mountinfo: &str, dir: &Path) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    for line in mountinfo.lines() {
        // "36 35 98:0 /root /mnt/point rw,noatime master:1 - ext4 /dev/vda rw"
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(point), Some(fs)) = (
            left.split(' ').nth(4),
            right.split(' ').next().filter(|f| !f.is_empty()),
        ) else {
            continue;
        };
        let point = unescape(point);
        let depth = Path::new(&point).components().count();
        if dir.starts_with(&point) && best.is_none_or(|(d, _)| depth >= d) {
            best = Some((depth, fs));
        }
    }
    best.map(|(_, fs)| fs.to_string())
}

/// Mount points escape space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /tmp rw,nosuid shared:2 - tmpfs tmpfs rw
24 22 0:22 / /dev/shm rw shared:3 - tmpfs tmpfs rw
25 22 0:23 / /mnt/my\\040disk rw shared:4 - xfs /dev/vdb rw
26 22 0:24 / /tmp rw shared:5 - overlay overlay rw
";

    #[test]
    fn the_deepest_mount_holding_the_directory_wins() {
        let t = |d: &str| fs_type(MOUNTS, Path::new(d));
        assert_eq!(t("/var/tmp").as_deref(), Some("ext4"));
        assert_eq!(t("/dev/shm").as_deref(), Some("tmpfs"));
        assert_eq!(
            t("/dev/shmx").as_deref(),
            Some("ext4"),
            "a prefix of a name is not a parent"
        );
        assert_eq!(t("/mnt/my disk/db").as_deref(), Some("xfs"));
        assert_eq!(
            t("/tmp/loadrig-x").as_deref(),
            Some("overlay"),
            "the last mount on a point hides the others"
        );
        assert_eq!(fs_type("garbage\n", Path::new("/tmp")), None);
    }

    #[test]
    fn this_machine_names_a_type_for_its_temporary_directory() {
        let (dir, fs) = of(&std::env::temp_dir().join("x.db"));
        assert!(dir.is_absolute(), "{}", dir.display());
        if cfg!(target_os = "linux") {
            assert_ne!(fs, "unknown");
        }
    }
}
