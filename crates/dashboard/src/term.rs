//! The terminal: raw mode on, the cursor hidden, and restored on every
//! way out (the end of the run, an error, a panic anywhere: a panic hook
//! restores it before the panic is printed). The dashboard draws on the
//! main screen, not the alternate one, so its last frame (with the
//! verdict) stays above the summary printed after it.

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

/// The terminal is in raw mode and ours.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Raw mode, the screen cleared, the panic hook in place.
pub fn open() -> io::Result<Term> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut t = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    t.clear()?;
    t.hide_cursor()?;
    Ok(t)
}

/// Leave raw mode and show the cursor on the screen's last line, so what
/// is printed next goes below the dashboard. Once, whoever calls first.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = terminal::disable_raw_mode();
    let mut out = io::stdout();
    let rows = terminal::size().map_or(0, |(_, rows)| rows);
    let _ = execute!(out, cursor::Show, cursor::MoveTo(0, rows.saturating_sub(1)));
    let _ = writeln!(out);
    let _ = out.flush();
}
