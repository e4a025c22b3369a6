//! pgbench's builtin scripts, word for word as pgbench 15 runs them
//! (`pgbench --show-script=NAME`), so that `-r` prints the same lines.

/// (short name, pgbench's description, script).
pub const BUILTINS: [(&str, &str, &str); 3] = [
    (
        "tpcb-like",
        "<builtin: TPC-B (sort of)>",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "simple-update",
        "<builtin: simple update>",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "select-only",
        "<builtin: select only>",
        "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    ),
];

/// The builtin a name or a unique prefix of one names (pgbench takes
/// `-b si` for simple-update).
pub fn find(name: &str) -> Result<(&'static str, &'static str, &'static str), String> {
    let found: Vec<_> = BUILTINS
        .iter()
        .filter(|(n, _, _)| n.starts_with(name) && !name.is_empty())
        .collect();
    match found.as_slice() {
        [one] => Ok(**one),
        [] => Err(format!(
            "no builtin script found for name \"{name}\" (available: tpcb-like, simple-update, select-only)"
        )),
        _ => Err(format!("ambiguous builtin name: \"{name}\"")),
    }
}

/// Whether each committed transaction of the builtin inserts one
/// history row and adds its delta to accounts (and, for tpcb-like, to
/// tellers and branches).
pub fn history_rows(short: &str) -> u64 {
    u64::from(short != "select-only")
}

#[cfg(test)]
mod tests {
    use super::super::script::Script;
    use super::*;

    #[test]
    fn builtins_parse_and_prefixes_find_them() {
        for (n, _, text) in BUILTINS {
            Script::parse(n, text, &[]).unwrap();
        }
        assert_eq!(find("si").unwrap().0, "simple-update");
        assert_eq!(find("tpcb-like").unwrap().0, "tpcb-like");
        assert!(find("s").unwrap_err().contains("ambiguous"));
        assert!(find("x").is_err());
    }
}
