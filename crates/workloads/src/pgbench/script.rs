//! pgbench's script files, parsed: SQL commands (ended by `;` outside
//! quotes, or by a meta-command on the same line) and the meta-commands
//! `\set`, `\sleep`, `\gset`, `\aset`, `\if`, `\elif`, `\else`,
//! `\endif`. Each command remembers its line, so a mistake is one line
//! naming `file:line`, found before the load.
//!
//! Variables in SQL (`:name`, not `::type`) become `$n` parameters for
//! the extended and prepared modes, or the value's text in simple mode,
//! as pgbench does (also inside quotes: pgbench does not look at them).

use super::expr::{self, Expr};

/// A script's mistake: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ScriptError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// A piece of an SQL command's text: literal text or a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Var(String),
}

/// One SQL command.
#[derive(Debug, Clone, PartialEq)]
pub struct Sql {
    pub pieces: Vec<Piece>,
    /// The text with `$1..$n` for the variables, and the variables in
    /// parameter order (a variable used twice is one parameter).
    pub numbered: String,
    pub params: Vec<String>,
    /// `\gset [prefix]` (false) or `\aset [prefix]` (true) after it.
    pub store: Option<(String, bool)>,
}

/// A `\sleep`'s length: a number or a variable, in microseconds per unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Sleep {
    pub amount: Expr,
    pub unit_us: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Sql(Sql),
    Set(String, Expr),
    Sleep(Sleep),
    /// `\if` and `\elif` jump to `else_at` when false; `\else` and the
    /// end of a taken branch jump to the `\endif`.
    If {
        cond: Expr,
        else_at: usize,
    },
    Elif {
        cond: Expr,
        else_at: usize,
    },
    Else {
        end_at: usize,
    },
    Endif,
}

/// One command, its first line's text (for `-r`) and its line number.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub cmd: Cmd,
    pub text: String,
    pub line: usize,
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub lines: Vec<Line>,
}

/// Variables every script may read without setting them.
pub const BUILTIN_VARS: [&str; 4] = ["scale", "client_id", "random_seed", "default_seed"];

impl Script {
    /// Parse `text`, named `file` in messages; `defined`: the `-D` names.
    pub fn parse(file: &str, text: &str, defined: &[&str]) -> Result<Script, ScriptError> {
        let bad = |line: usize, message: String| ScriptError {
            file: file.to_string(),
            line,
            message,
        };
        let mut lines: Vec<Line> = Vec::new();
        let mut sql = String::new();
        let mut sql_line = 0;
        let mut quote: Option<char> = None;
        for (n, raw) in text.lines().enumerate() {
            let n = n + 1;
            let mut rest = raw;
            if quote.is_none() && sql.trim().is_empty() && rest.trim_start().starts_with('\\') {
                meta(rest.trim(), n, &mut lines).map_err(|m| bad(n, m))?;
                continue;
            }
            while !rest.is_empty() {
                if sql.trim().is_empty() {
                    sql_line = n;
                }
                match split_sql(rest, &mut quote) {
                    Split::End(upto, after) => {
                        sql.push_str(upto);
                        push_sql(&mut lines, &mut sql, sql_line);
                        rest = after;
                    }
                    Split::Meta(upto, meta_text) => {
                        sql.push_str(upto);
                        push_sql(&mut lines, &mut sql, sql_line);
                        meta(meta_text.trim(), n, &mut lines).map_err(|m| bad(n, m))?;
                        rest = "";
                    }
                    Split::More(all) => {
                        sql.push_str(all);
                        sql.push('\n');
                        rest = "";
                    }
                }
            }
        }
        if !sql.trim().is_empty() {
            push_sql(&mut lines, &mut sql, sql_line);
        }
        let mut script = Script { lines };
        script.link_ifs().map_err(|(l, m)| bad(l, m))?;
        script.check_vars(defined).map_err(|(l, m)| bad(l, m))?;
        if script.lines.is_empty() {
            return Err(bad(1, "empty command list for script".into()));
        }
        Ok(script)
    }

    /// Set each `\if`'s and `\elif`'s false jump and each `\else`'s end.
    fn link_ifs(&mut self) -> Result<(), (usize, String)> {
        let mut open: Vec<Vec<usize>> = Vec::new();
        for i in 0..self.lines.len() {
            match self.lines[i].cmd {
                Cmd::If { .. } => open.push(vec![i]),
                Cmd::Elif { .. } | Cmd::Else { .. } => {
                    let arms = open
                        .last_mut()
                        .ok_or((self.lines[i].line, "\\elif or \\else without \\if".into()))?;
                    if arms
                        .last()
                        .is_some_and(|&a| matches!(self.lines[a].cmd, Cmd::Else { .. }))
                    {
                        return Err((self.lines[i].line, "\\elif or \\else after \\else".into()));
                    }
                    arms.push(i);
                }
                Cmd::Endif => {
                    let arms = open
                        .pop()
                        .ok_or((self.lines[i].line, "\\endif without \\if".into()))?;
                    self.link_arms(&arms, i);
                }
                _ => {}
            }
        }
        match open.last().and_then(|a| a.first()) {
            Some(&i) => Err((self.lines[i].line, "\\if without \\endif".into())),
            None => Ok(()),
        }
    }

    /// An `\if`'s arms (its `\if`, `\elif`s, `\else`) and its `\endif`.
    fn link_arms(&mut self, arms: &[usize], endif: usize) {
        for (k, &a) in arms.iter().enumerate() {
            let next = arms.get(k + 1).copied().unwrap_or(endif);
            match &mut self.lines[a].cmd {
                Cmd::If { else_at, .. } | Cmd::Elif { else_at, .. } => *else_at = next,
                Cmd::Else { end_at } => *end_at = endif,
                _ => {}
            }
        }
    }

    /// Every variable read is set somewhere (by `\set`, `-D` or pgbench
    /// itself), unless a `\gset` or `\aset` may set it from a row.
    fn check_vars(&self, defined: &[&str]) -> Result<(), (usize, String)> {
        if self
            .lines
            .iter()
            .any(|l| matches!(&l.cmd, Cmd::Sql(s) if s.store.is_some()))
        {
            return Ok(());
        }
        let set: Vec<&str> = self
            .lines
            .iter()
            .filter_map(|l| match &l.cmd {
                Cmd::Set(v, _) => Some(v.as_str()),
                _ => None,
            })
            .chain(defined.iter().copied())
            .chain(BUILTIN_VARS)
            .collect();
        for l in &self.lines {
            let mut read = Vec::new();
            match &l.cmd {
                Cmd::Sql(s) => read.extend(s.params.iter().map(String::as_str)),
                Cmd::Set(_, e) | Cmd::If { cond: e, .. } | Cmd::Elif { cond: e, .. } => {
                    e.vars(&mut read)
                }
                Cmd::Sleep(s) => s.amount.vars(&mut read),
                Cmd::Else { .. } | Cmd::Endif => {}
            }
            if let Some(v) = read.iter().find(|v| !set.contains(v)) {
                return Err((l.line, format!("undefined variable \"{v}\"")));
            }
        }
        Ok(())
    }

    /// The SQL commands' count (parameters are prepared per command).
    pub fn sql_count(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l.cmd, Cmd::Sql(_)))
            .count()
    }
}

enum Split<'a> {
    /// A statement ends at `;`: the text through it, the rest of the line.
    End(&'a str, &'a str),
    /// A meta-command (`\gset`) ends the statement: the text before, the
    /// meta-command.
    Meta(&'a str, &'a str),
    /// The statement goes on past this line.
    More(&'a str),
}

/// Where the statement in `s` ends, following quotes across lines.
fn split_sql<'a>(s: &'a str, quote: &mut Option<char>) -> Split<'a> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = char::from(b[i]);
        match *quote {
            Some(q) if c == q => *quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => *quote = Some(c),
                '-' if b.get(i + 1) == Some(&b'-') => return Split::More(&s[..i]),
                ';' => return Split::End(&s[..=i], &s[i + 1..]),
                '\\' => return Split::Meta(&s[..i], &s[i..]),
                _ => {}
            },
        }
        i += 1;
    }
    Split::More(s)
}

fn push_sql(lines: &mut Vec<Line>, sql: &mut String, line: usize) {
    let text = std::mem::take(sql);
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == ";" {
        return;
    }
    let pieces = pieces(trimmed);
    let mut params: Vec<String> = Vec::new();
    let mut numbered = String::new();
    for p in &pieces {
        match p {
            Piece::Text(t) => numbered.push_str(t),
            Piece::Var(v) => {
                let k = match params.iter().position(|p| p == v) {
                    Some(k) => k,
                    None => {
                        params.push(v.clone());
                        params.len() - 1
                    }
                };
                numbered.push_str(&format!("${}", k + 1));
            }
        }
    }
    lines.push(Line {
        text: trimmed.lines().next().unwrap_or("").to_string(),
        cmd: Cmd::Sql(Sql {
            pieces,
            numbered,
            params,
            store: None,
        }),
        line,
    });
}

/// An SQL text cut at its variables: `:name`, not `::type`.
fn pieces(sql: &str) -> Vec<Piece> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' && b.get(i + 1) == Some(&b':') {
            text.push_str("::");
            i += 2;
            continue;
        }
        if b[i] == b':'
            && b.get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if !text.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut text)));
            }
            out.push(Piece::Var(sql[start..j].to_string()));
            i = j;
            continue;
        }
        let ch = sql[i..].chars().next().unwrap_or(' ');
        text.push(ch);
        i += ch.len_utf8();
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// A meta-command's line into `lines`.
fn meta(text: &str, n: usize, lines: &mut Vec<Line>) -> Result<(), String> {
    let body = text.trim_start_matches('\\');
    let (word, args) = body
        .split_once(char::is_whitespace)
        .map_or((body, ""), |(w, a)| (w, a.trim()));
    let cmd = match word {
        "set" => {
            let (var, e) = args
                .split_once(char::is_whitespace)
                .ok_or("missing argument in \\set")?;
            if !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("invalid variable name \"{var}\""));
            }
            Cmd::Set(var.to_string(), expr::parse(e)?)
        }
        "sleep" => Cmd::Sleep(sleep(args)?),
        "gset" | "aset" => {
            let last = lines
                .last_mut()
                .ok_or(format!("\\{word} must follow an SQL command"))?;
            match &mut last.cmd {
                Cmd::Sql(s) if s.store.is_none() => {
                    s.store = Some((args.to_string(), word == "aset"));
                    return Ok(());
                }
                _ => return Err(format!("\\{word} must follow an SQL command")),
            }
        }
        "if" => Cmd::If {
            cond: expr::parse(args)?,
            else_at: 0,
        },
        "elif" => Cmd::Elif {
            cond: expr::parse(args)?,
            else_at: 0,
        },
        "else" => Cmd::Else { end_at: 0 },
        "endif" => Cmd::Endif,
        "setshell" | "shell" | "startpipeline" | "endpipeline" | "syncpipeline" => {
            return Err(format!(
                "\\{word} is not taken by loadrig (docs/reference/pgbench.md)"
            ))
        }
        other => return Err(format!("invalid command \\{other}")),
    };
    lines.push(Line {
        cmd,
        text: text.to_string(),
        line: n,
    });
    Ok(())
}

/// `\sleep N [us|ms|s]`, N a number or `:variable`.
fn sleep(args: &str) -> Result<Sleep, String> {
    let mut words = args.split_whitespace();
    let amount = words.next().ok_or("missing argument in \\sleep")?;
    let unit_us = match words.next() {
        None | Some("s") => 1_000_000,
        Some("ms") => 1_000,
        Some("us") => 1,
        Some(u) => {
            return Err(format!(
                "unrecognized time unit \"{u}\" (must be us, ms or s)"
            ))
        }
    };
    if words.next().is_some() {
        return Err("too many arguments in \\sleep".into());
    }
    let amount = if amount.starts_with(':') || amount.parse::<i64>().is_ok() {
        expr::parse(amount)?
    } else {
        return Err(format!("invalid sleep time \"{amount}\""));
    };
    Ok(Sleep { amount, unit_us })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\\set aid random(1, 100000 * :scale)
-- a comment
\\set d 10
BEGIN;
UPDATE t SET v = v + :d WHERE id = :aid AND x::int = :d;
SELECT v FROM t
  WHERE id = :aid \\gset p_
\\if :p_v > 5
  \\sleep 1 ms
\\elif :d = 3
  SELECT 1; SELECT 2;
\\else
  SELECT ':aid';
\\endif
END;
";

    #[test]
    fn commands_lines_and_params() {
        let s = Script::parse("t.sql", SCRIPT, &[]).unwrap();
        let kinds: Vec<(usize, &str)> = s.lines.iter().map(|l| (l.line, l.text.as_str())).collect();
        assert_eq!(
            kinds[3],
            (
                5,
                "UPDATE t SET v = v + :d WHERE id = :aid AND x::int = :d;"
            )
        );
        let Cmd::Sql(up) = &s.lines[3].cmd else {
            panic!()
        };
        assert_eq!(
            up.numbered,
            "UPDATE t SET v = v + $1 WHERE id = $2 AND x::int = $1;"
        );
        assert_eq!(up.params, ["d", "aid"]);
        let Cmd::Sql(sel) = &s.lines[4].cmd else {
            panic!()
        };
        assert_eq!(sel.store, Some(("p_".to_string(), false)));
        assert_eq!(s.lines[4].line, 6);
        assert!(matches!(s.lines[5].cmd, Cmd::If { else_at: 7, .. }));
        assert!(matches!(s.lines[7].cmd, Cmd::Elif { else_at: 10, .. }));
        assert!(matches!(s.lines[10].cmd, Cmd::Else { end_at: 12 }));
        assert_eq!(s.sql_count(), 7);
    }

    #[test]
    fn mistakes_name_the_line() {
        for (text, line, says) in [
            ("\\set x random(1,\n", 1, "end of expression"),
            ("SELECT 1;\n\\if 1\nSELECT 2;\n", 2, "without \\endif"),
            ("\\endif\n", 1, "without \\if"),
            ("\\gset\n", 1, "must follow"),
            ("SELECT 1;\n\\sleep 1 min\n", 2, "time unit"),
            (
                "SELECT 1;\nSELECT :nope;\n",
                2,
                "undefined variable \"nope\"",
            ),
            ("\\set a :b + 1\n", 1, "undefined variable \"b\""),
            ("\\shell ls\n", 1, "not taken"),
            ("\\bogus\n", 1, "invalid command"),
        ] {
            let e = Script::parse("f.sql", text, &[]).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(says), "{text}: {e}");
        }
        assert!(Script::parse("f.sql", "SELECT :x;", &["x"]).is_ok());
    }
}
