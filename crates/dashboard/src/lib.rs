//! loadrig's live terminal dashboard (`--dashboard`, docs/guides/dashboard.md).
//!
//! A thread of its own owns the terminal: it is handed each lap's
//! figures ([`Tick`]) on a bounded channel, redraws at most ten times a
//! second, and reads the keys; `q` or Ctrl-C call the quit hook it was
//! given (the binary raises SIGINT, so the run stops exactly as after a
//! signal). Nothing here runs on the engine's workers: a lap is handed
//! over by the session's sink, and a full channel drops the lap rather
//! than wait. The terminal is restored on every way out (`term.rs`).
//!
//! | part | file |
//! |---|---|
//! | a lap's figures, their wire form, the sum over processes | `tick.rs` |
//! | what is shown, kept between redraws | `board.rs` |
//! | the screen | `draw.rs` |
//! | raw mode and its restoring | `term.rs` |

mod board;
mod draw;
mod term;
mod tick;

pub use board::{Goal, Setup};
pub use term::restore as restore_terminal;
pub use tick::{Sum, Tick, WireError, MAX_LINE};

use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use board::Board;

/// The shortest time between two redraws.
const REDRAW: Duration = Duration::from_millis(100);
/// Laps waiting for the drawing thread; more are dropped.
const QUEUE: usize = 64;

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

enum Msg {
    Tick(Box<Tick>),
    Server(Vec<(String, f64)>),
    End(Option<String>),
}

/// A running dashboard, shared by reference (the parent of `--processes`
/// feeds it from a thread per child). Dropping it ends it and restores
/// the terminal.
pub struct Dashboard {
    tx: Mutex<Option<SyncSender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Dashboard {
    /// Take the terminal (standard output, which must be one) and start
    /// drawing. `quit` is called once when `q` or Ctrl-C is pressed.
    pub fn start(setup: Setup, quit: Box<dyn Fn() + Send>) -> Result<Dashboard, Error> {
        let term = term::open()?;
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("loadrig-dashboard".into())
            .spawn(move || run(term, Board::new(setup), &rx, quit.as_ref()));
        match thread {
            Ok(t) => Ok(Dashboard {
                tx: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(t)),
            }),
            Err(e) => {
                term::restore();
                Err(Error::Terminal(e))
            }
        }
    }

    /// A lap closed; dropped if the drawing thread is that far behind.
    pub fn tick(&self, t: Tick) {
        self.send(Msg::Tick(Box::new(t)));
    }

    /// The server's latest sample.
    pub fn server(&self, readings: Vec<(String, f64)>) {
        self.send(Msg::Server(readings));
    }

    fn send(&self, m: Msg) {
        if let Ok(tx) = self.tx.lock() {
            if let Some(tx) = tx.as_ref() {
                let _ = tx.try_send(m);
            }
        }
    }

    /// The run is over: the last frame, with the verdict, then the
    /// terminal restored. Later calls do nothing.
    pub fn finish(&self, verdict: Option<String>) {
        let tx = self.tx.lock().ok().and_then(|mut t| t.take());
        if let Some(tx) = tx {
            let _ = tx.send(Msg::End(verdict));
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = thread {
            let _ = t.join();
        }
        term::restore();
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.finish(None);
    }
}

/// The drawing thread: laps in, keys read, the screen redrawn when
/// something changed and the last redraw is [`REDRAW`] old.
fn run(mut term: term::Term, mut board: Board, rx: &mpsc::Receiver<Msg>, quit: &dyn Fn()) {
    let mut dirty = true;
    let mut drawn = Instant::now() - REDRAW;
    loop {
        match rx.recv_timeout(Duration::from_millis(25)) {
            Ok(Msg::Tick(t)) => {
                board.tick(*t);
                dirty = true;
            }
            Ok(Msg::Server(s)) => board.server = s,
            Ok(Msg::End(verdict)) => {
                board.verdict = verdict;
                board.ended = true;
                let _ = term.draw(|f| draw::screen(f, &board));
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        while event::poll(Duration::ZERO).unwrap_or(false) {
            match event::read() {
                Ok(Event::Key(k))
                    if k.kind == KeyEventKind::Press && is_quit(k.code, k.modifiers) =>
                {
                    if !board.stopping {
                        board.stopping = true;
                        quit();
                    }
                    dirty = true;
                }
                Ok(Event::Resize(..)) => {
                    let _ = term.autoresize();
                    dirty = true;
                }
                _ => {}
            }
        }
        if dirty && drawn.elapsed() >= REDRAW {
            let _ = term.draw(|f| draw::screen(f, &board));
            drawn = Instant::now();
            dirty = false;
        }
    }
    term::restore();
}

fn is_quit(code: KeyCode, mods: KeyModifiers) -> bool {
    matches!(code, KeyCode::Char('q') | KeyCode::Esc)
        || (code == KeyCode::Char('c') && mods.contains(KeyModifiers::CONTROL))
}
