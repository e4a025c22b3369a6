//! Standard output, for every command: lines written with [`say!`](crate::say) and
//! [`say_part!`](crate::say_part), and the first failure to write them kept for the
//! binary's exit point ([`stdout_failure`]). A reader that went away
//! (`loadrig targets | head -1`) is not a failure: what is left to print
//! is dropped, quietly. Any other (a full disk) is: a report or table
//! lost is not a result, and the binary exits 2.

use std::sync::OnceLock;

/// A line on standard output (see the module).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::out::stdout_written(writeln!(std::io::stdout().lock(), $($arg)*));
    }};
}

/// [`say!`](crate::say) without the line's end.
#[macro_export]
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        $crate::out::stdout_written(write!(out, $($arg)*).and_then(|()| out.flush()));
    }};
}

/// The first failure to write standard output, other than its reader
/// going away.
static STDOUT_FAILED: OnceLock<String> = OnceLock::new();

/// Keep `r`'s failure, if it is one that loses output.
pub fn stdout_written(r: std::io::Result<()>) {
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = STDOUT_FAILED.set(e.to_string());
        }
    }
}

/// What is still buffered written now, and the first failure to write
/// standard output, if there was one.
pub fn stdout_failure() -> Option<&'static str> {
    stdout_written(std::io::Write::flush(&mut std::io::stdout()));
    STDOUT_FAILED.get().map(String::as_str)
}

/// An error and its causes on one line, each cause once.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ")
}
