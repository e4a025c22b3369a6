//! The screen, drawn from a [`Board`]: progress, throughput, p50 and p99
//! over the last laps, the latency histogram of the run so far, errors by
//! kind, the client's in-flight, CPU and memory, the server's series, and
//! a last line with the keys or, once over, the validity verdict. Each
//! panel's title carries its current figure, so a screen capture reads.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Gauge, Paragraph, Sparkline};
use ratatui::Frame;

use crate::board::{short_us, thousands, Board};

/// The whole screen.
pub fn screen(f: &mut Frame<'_>, b: &Board) {
    let rows = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(4),
        Constraint::Min(4),
        Constraint::Min(8),
        Constraint::Length(1),
    ])
    .split(f.area());
    progress(f, rows[0], b);
    throughput(f, rows[1], b);
    let halves = Layout::horizontal([Constraint::Percentage(50); 2]).split(rows[2]);
    let (p50, p99) = (b.p50.back().copied(), b.p99.back().copied());
    series(
        f,
        halves[0],
        &b.p50,
        &format!("latency p50 {}", latest(p50)),
        Color::Green,
    );
    series(
        f,
        halves[1],
        &b.p99,
        &format!("latency p99 {}", latest(p99)),
        Color::Yellow,
    );
    let bottom = Layout::horizontal([
        Constraint::Percentage(46),
        Constraint::Percentage(27),
        Constraint::Percentage(27),
    ])
    .split(rows[3]);
    histogram(f, bottom[0], b);
    let side = Layout::vertical([Constraint::Percentage(50); 2]).split(bottom[1]);
    errors(f, side[0], b);
    client(f, side[1], b);
    server(f, bottom[2], b);
    f.render_widget(Paragraph::new(footer(b)), rows[4]);
}

fn latest(us: Option<u64>) -> String {
    us.map_or_else(|| "-".to_string(), short_us)
}

fn block(title: String) -> Block<'static> {
    Block::bordered().title(format!(" {title} "))
}

fn progress(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let (ratio, left) = b.progress();
    let procs = match b.setup.processes {
        1 => String::new(),
        k => format!(", {k} processes summed"),
    };
    let g = Gauge::default()
        .block(block(format!("progress: {}{procs}", b.setup.title)))
        .gauge_style(Style::default().fg(Color::Cyan))
        .ratio(ratio)
        .label(left);
    f.render_widget(g, area);
}

fn throughput(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let now = b.rate.back().map_or("-".to_string(), |r| thousands(*r));
    let title = format!("throughput {now} ops/s");
    series(f, area, &b.rate, &title, Color::Cyan);
}

/// The last laps of a series, as many as the panel is wide.
fn series(
    f: &mut Frame<'_>,
    area: Rect,
    s: &std::collections::VecDeque<u64>,
    title: &str,
    color: Color,
) {
    let width = usize::from(area.width.saturating_sub(2));
    let skip = s.len().saturating_sub(width);
    let data: Vec<u64> = s.iter().skip(skip).copied().collect();
    let w = Sparkline::default()
        .block(block(title.to_string()))
        .style(Style::default().fg(color))
        .data(&data);
    f.render_widget(w, area);
}

fn histogram(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let n = usize::from(area.height.saturating_sub(2)).clamp(1, 16);
    let bars: Vec<Bar<'_>> = b
        .histogram(n)
        .into_iter()
        .map(|(le, count)| {
            Bar::default()
                .label(Line::from(format!("<={:>8}", short_us(le))))
                .value(count)
                .text_value(thousands(count))
        })
        .collect();
    let total = thousands(b.so_far.len());
    let chart = BarChart::default()
        .block(block(format!("latency histogram, {total} ops so far")))
        .direction(Direction::Horizontal)
        .bar_width(1)
        .bar_gap(0)
        .bar_style(Style::default().fg(Color::Magenta))
        .data(BarGroup::default().bars(&bars));
    f.render_widget(chart, area);
}

fn errors(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let total: u64 = b.errors.values().sum();
    let lines: Vec<Line<'_>> = match total {
        0 => vec![Line::from("none")],
        _ => b
            .errors
            .iter()
            .map(|(k, n)| Line::from(format!("{k}: {}", thousands(*n))))
            .collect(),
    };
    let p = Paragraph::new(lines).block(block(format!("errors {}", thousands(total))));
    f.render_widget(p, area);
}

fn client(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let lines = match &b.last {
        None => vec![Line::from("-")],
        Some(t) => {
            let secs = t.length.as_secs_f64();
            let cpu = if secs > 0.0 {
                100.0 * t.cpu.as_secs_f64() / secs
            } else {
                0.0
            };
            vec![
                Line::from(format!("in flight: {}", thousands(t.in_flight))),
                Line::from(format!("cpu: {cpu:.0}%")),
                Line::from(format!("rss: {:.1} MiB", t.rss_bytes as f64 / 1048576.0)),
            ]
        }
    };
    f.render_widget(Paragraph::new(lines).block(block("client".into())), area);
}

fn server(f: &mut Frame<'_>, area: Rect, b: &Board) {
    let lines: Vec<Line<'_>> = match b.server.is_empty() {
        true => vec![Line::from("(--server-stats on)")],
        false => b
            .server
            .iter()
            .map(|(k, v)| Line::from(format!("{k}: {}", figure(*v))))
            .collect(),
    };
    f.render_widget(Paragraph::new(lines).block(block("server".into())), area);
}

/// A server figure: whole numbers as such, others to three places.
fn figure(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        thousands(v.abs() as u64)
    } else {
        format!("{v:.3}")
    }
}

fn footer(b: &Board) -> Line<'static> {
    if let Some(v) = &b.verdict {
        return Line::from(v.clone());
    }
    match (b.ended, b.stopping) {
        (true, _) => Line::from("the run is over"),
        (false, true) => Line::from("stopping: the report is still written"),
        (false, false) => Line::from("q or Ctrl-C: stop the run (the report is still written)"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::board::{Goal, Setup};
    use crate::tick::Tick;

    fn text(t: &Terminal<TestBackend>) -> String {
        let buf = t.backend().buffer();
        let mut s = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                s.push_str(buf[(x, y)].symbol());
            }
            s.push('\n');
        }
        s
    }

    #[test]
    fn every_panel_is_drawn_with_its_figure() {
        let mut b = Board::new(Setup {
            title: "redis get".into(),
            goal: Goal::Secs(10.0),
            processes: 1,
        });
        let mut latency = loadrig_metrics::Histo::new();
        for _ in 0..2000 {
            latency.record(Duration::from_micros(500));
        }
        b.tick(Tick {
            length: Duration::from_secs(1),
            measured: Duration::from_secs(1),
            ok: 2000,
            latency,
            in_flight: 7,
            ..Tick::default()
        });
        b.server = vec![("used_memory".into(), 1024.0)];
        let mut t = Terminal::new(TestBackend::new(120, 40)).expect("a test terminal");
        t.draw(|f| screen(f, &b)).expect("drawn");
        let s = text(&t);
        for want in [
            "progress: redis get",
            "1 s of 10 s, 9 s left",
            "throughput 2,000 ops/s",
            "latency p50 500us",
            "latency p99 500us",
            "latency histogram, 2,000 ops so far",
            "errors 0",
            "in flight: 7",
            "used_memory: 1,024",
            "q or Ctrl-C",
        ] {
            assert!(s.contains(want), "{want:?} not on the screen:\n{s}");
        }
    }
}
