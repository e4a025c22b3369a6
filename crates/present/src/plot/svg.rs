//! Charts as SVG text, drawn by hand: line charts (linear, log, or
//! HdrHistogram's percentile axis) and grouped horizontal bar charts.
//! No font is embedded and none is needed here: text is SVG `<text>` in
//! the generic `sans-serif` family, laid out by whatever shows the file
//! (a browser, an image viewer), so nothing is loaded at run time and a
//! fresh machine draws the same file. ARCHITECTURE.md says why this and
//! not a charting crate or a JavaScript library.

use std::fmt::Write as _;

/// Series colours, in order (distinct in print and to most colour-blind
/// readers: the Okabe-Ito set less its yellow).
const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// How x values are placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum XAxis {
    Linear,
    /// log10 of x (x > 0): a sweep over 1, 2, 4 ... 128.
    Log,
    /// x is a percentile (0..100) placed at log10(1 / (1 - p/100)), as
    /// HdrHistogram's plotter places it: 90 %, 99 %, 99.9 % equally apart.
    Percentile,
}

/// The highest percentile axis decade drawn (99.999 %).
const PERCENTILE_DECADES: f64 = 5.0;

impl XAxis {
    fn place(self, x: f64) -> f64 {
        match self {
            XAxis::Linear => x,
            XAxis::Log => x.max(f64::MIN_POSITIVE).log10(),
            XAxis::Percentile => {
                let rest = (1.0 - x / 100.0).max(10f64.powf(-PERCENTILE_DECADES));
                (1.0 / rest).log10()
            }
        }
    }
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_axis: XAxis,
    pub lines: Vec<Line>,
    /// x values of points that failed (a sweep's), marked on the x axis.
    pub failed: Vec<f64>,
}

/// Grouped horizontal bars: one group per category, one bar per series.
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub categories: Vec<String>,
    /// (series name, one value per category; `None` where it has none).
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// A chart of either shape.
#[derive(Debug, Clone)]
pub enum Chart {
    Line(LineChart),
    Bar(BarChart),
}

impl Chart {
    pub fn svg(&self) -> String {
        match self {
            Chart::Line(c) => c.svg(),
            Chart::Bar(c) => c.svg(),
        }
    }
}

const WIDTH: f64 = 900.0;
const FONT: &str = r#"font-family="sans-serif""#;

/// Text safe inside SVG and HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// A tick label: short, without trailing zeros (12k, 1.5M, 0.25).
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (x, unit) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    // About four significant digits: 13.83k, 125.4k, 0.253.
    let decimals = match x.abs() {
        a if a >= 100.0 => 1,
        a if a >= 10.0 => 2,
        _ => 3,
    };
    let mut s = format!("{x:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".into();
    }
    format!("{s}{unit}")
}

/// Round steps (1, 2, 5 x 10^n) covering `0..=max` in about five ticks.
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    let mut t = Vec::new();
    let mut v = first;
    while v <= hi + step * 1e-9 && t.len() < 50 {
        t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    t
}

/// The top of a value axis from 0: the largest value, rounded up to a tick.
fn nice_top(max: f64) -> f64 {
    if !(max.is_finite()) || max <= 0.0 {
        return 1.0;
    }
    let ticks = nice_ticks(0.0, max);
    let step = if ticks.len() > 1 {
        ticks[1] - ticks[0]
    } else {
        max
    };
    (max / step).ceil() * step
}

fn legend(out: &mut String, names: &[(&str, &str, bool)], x: f64, y: f64) {
    let mut cx = x;
    for (name, col, dashed) in names {
        let dash = if *dashed {
            r#" stroke-dasharray="6 3""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<line x1="{cx}" y1="{y}" x2="{}" y2="{y}" stroke="{col}" stroke-width="3"{dash}/><text x="{}" y="{}" {FONT} font-size="12">{}</text>"#,
            cx + 22.0,
            cx + 27.0,
            y + 4.0,
            escape(name)
        );
        cx += 40.0 + 7.0 * name.chars().count() as f64;
    }
}

/// A chart's opening: the `<svg>` element `h` high, a white background
/// and the title, centred.
fn open(o: &mut String, h: f64, title: &str) {
    let _ = write!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}" role="img"><title>{t}</title><rect width="100%" height="100%" fill="#ffffff"/><text x="{}" y="24" {FONT} font-size="16" font-weight="bold" text-anchor="middle">{t}</text>"##,
        WIDTH / 2.0,
        t = escape(title)
    );
}

/// A line chart's plot area: its place on the page (`h` high in all),
/// the x range it spans (placed on `axis`) and the y axis's top.
struct Frame {
    axis: XAxis,
    h: f64,
    left: f64,
    top: f64,
    pw: f64,
    ph: f64,
    x0: f64,
    x1: f64,
    ytop: f64,
}

impl Frame {
    /// The page x of a value.
    fn sx(&self, x: f64) -> f64 {
        self.sxp(self.axis.place(x))
    }

    /// The page x of a value already placed on the axis.
    fn sxp(&self, px: f64) -> f64 {
        self.left + (px - self.x0) / (self.x1 - self.x0) * self.pw
    }

    /// The page y of a value.
    fn sy(&self, y: f64) -> f64 {
        self.top + self.ph - y / self.ytop * self.ph
    }

    /// The x ticks of a log axis: 1, 2 and 5 of each decade in range.
    fn log_ticks(&self) -> Vec<(f64, String)> {
        let mut t = Vec::new();
        let (lo, hi) = (self.x0.floor() as i32, self.x1.ceil() as i32);
        for e in lo..=hi {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(e);
                let p = v.log10();
                if p >= self.x0 - 1e-9 && p <= self.x1 + 1e-9 {
                    t.push((self.sxp(p), short(v)));
                }
            }
        }
        t
    }
}

/// The label of the percentile axis's tick `d` decades in: 0%, 90%,
/// 99%, 99.9% ...
fn percentile_label(d: i32) -> String {
    match d {
        0 => "0%".to_string(),
        1 => "90%".to_string(),
        _ => format!(
            "99{}{}%",
            if d > 2 { "." } else { "" },
            "9".repeat(d as usize - 2)
        ),
    }
}

impl LineChart {
    /// Whether a point can be drawn: finite, and above 0 on a log axis.
    fn drawable(&self, p: &(f64, f64)) -> bool {
        p.0.is_finite() && p.1.is_finite() && (self.x_axis != XAxis::Log || p.0 > 0.0)
    }

    /// The plot area, spanning every drawable point and failed x.
    fn frame(&self) -> Frame {
        let (h, left, right, top, bottom) = (420.0, 80.0, 40.0, 40.0, 80.0);
        let pts = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter())
            .filter(|p| self.drawable(p));
        let (mut x0, mut x1, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
        for &(x, y) in pts {
            let px = self.x_axis.place(x);
            x0 = x0.min(px);
            x1 = x1.max(px);
            ymax = ymax.max(y);
        }
        for &f in &self.failed {
            let px = self.x_axis.place(f);
            x0 = x0.min(px);
            x1 = x1.max(px);
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if self.x_axis == XAxis::Percentile {
            x0 = 0.0;
            x1 = x1.ceil().max(1.0);
        }
        if (x1 - x0).abs() < f64::EPSILON {
            (x0, x1) = (x0 - 1.0, x1 + 1.0);
        }
        Frame {
            axis: self.x_axis,
            h,
            left,
            top,
            pw: WIDTH - left - right,
            ph: h - top - bottom,
            x0,
            x1,
            ytop: nice_top(ymax),
        }
    }

    /// The x ticks, as (page x, label).
    fn x_ticks(&self, f: &Frame) -> Vec<(f64, String)> {
        match self.x_axis {
            XAxis::Linear => {
                // Whole-number x values (clients, servers) get whole-number ticks.
                let integral = self
                    .lines
                    .iter()
                    .flat_map(|l| l.points.iter().map(|p| p.0))
                    .chain(self.failed.iter().copied())
                    .all(|x| x.fract() == 0.0);
                nice_ticks(f.x0, f.x1)
                    .into_iter()
                    .filter(|v| !integral || v.fract() == 0.0)
                    .map(|v| (f.sxp(v), short(v)))
                    .collect()
            }
            XAxis::Log => f.log_ticks(),
            XAxis::Percentile => (0..=(f.x1 as i32))
                .map(|d| (f.sxp(f64::from(d)), percentile_label(d)))
                .collect(),
        }
    }

    /// The grid: y ticks with their lines, x ticks with theirs, the plot
    /// area's border and the axes' labels.
    fn grid(&self, o: &mut String, f: &Frame) {
        let (left, top, pw, ph) = (f.left, f.top, f.pw, f.ph);
        for v in nice_ticks(0.0, f.ytop) {
            let y = f.sy(v);
            let _ = write!(
                o,
                r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" {FONT} font-size="11" text-anchor="end">{}</text>"##,
                left + pw,
                left - 6.0,
                y + 4.0,
                short(v)
            );
        }
        for (x, label) in &self.x_ticks(f) {
            let _ = write!(
                o,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#f0f0f0"/><text x="{x:.1}" y="{:.1}" {FONT} font-size="11" text-anchor="middle">{}</text>"##,
                top + ph,
                top + ph + 16.0,
                escape(label)
            );
        }
        let _ = write!(
            o,
            r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" {FONT} font-size="12" text-anchor="middle">{}</text><text x="16" y="{:.1}" {FONT} font-size="12" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"##,
            left + pw / 2.0,
            top + ph + 36.0,
            escape(&self.x_label),
            top + ph / 2.0,
            top + ph / 2.0,
            escape(&self.y_label)
        );
    }

    /// Each line as a polyline, with a dot per point when it has few.
    fn polylines(&self, o: &mut String, f: &Frame) {
        for (i, l) in self.lines.iter().enumerate() {
            let col = colour(i);
            let path: Vec<String> = l
                .points
                .iter()
                .filter(|p| self.drawable(p))
                .map(|&(x, y)| format!("{:.1},{:.1}", f.sx(x), f.sy(y)))
                .collect();
            if path.is_empty() {
                continue;
            }
            let dash = if l.dashed {
                r#" stroke-dasharray="6 3""#
            } else {
                ""
            };
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{col}" stroke-width="2"{dash} points="{}"/>"#,
                path.join(" ")
            );
            if path.len() <= 40 {
                for p in &path {
                    let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                    let _ = write!(o, r#"<circle cx="{x}" cy="{y}" r="3" fill="{col}"/>"#);
                }
            }
        }
    }

    /// The chart as one `<svg>` element, 420 high.
    pub fn svg(&self) -> String {
        let f = self.frame();
        let mut o = String::new();
        open(&mut o, f.h, &self.title);
        self.grid(&mut o, &f);
        self.polylines(&mut o, &f);
        // The failed points, a cross each on the x axis.
        for &x in &self.failed {
            let x = f.sx(x);
            let _ = write!(
                o,
                r##"<text x="{x:.1}" y="{:.1}" {FONT} font-size="14" fill="#c00000" text-anchor="middle">✗</text>"##,
                f.top + f.ph - 4.0
            );
        }
        let names: Vec<(&str, &str, bool)> = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.as_str(), colour(i), l.dashed))
            .collect();
        legend(&mut o, &names, f.left, f.h - 18.0);
        o.push_str("</svg>");
        o
    }
}

/// A bar chart's layout: `n` bars of `bar` high per group of `group`, the
/// plot area (`h` high in all) and the value axis's top.
struct BarFrame {
    n: f64,
    bar: f64,
    group: f64,
    left: f64,
    top: f64,
    pw: f64,
    ph: f64,
    h: f64,
    xtop: f64,
}

impl BarFrame {
    /// The page x of a value.
    fn sx(&self, v: f64) -> f64 {
        self.left + v / self.xtop * self.pw
    }
}

impl BarChart {
    /// The layout: a group per category, the labels' width at the left.
    fn frame(&self) -> BarFrame {
        let n = self.series.len().max(1) as f64;
        let bar = if n > 2.0 { 10.0 } else { 14.0 };
        let group = bar * n + 10.0;
        let label_w = self
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(4) as f64
            * 6.6
            + 16.0;
        let (left, right, top, bottom) = (label_w.max(80.0), 70.0, 40.0, 70.0);
        let ph = group * self.categories.len().max(1) as f64;
        let max = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().flatten())
            .fold(0f64, |a, &b| a.max(b));
        BarFrame {
            n,
            bar,
            group,
            left,
            top,
            pw: WIDTH - left - right,
            ph,
            h: top + ph + bottom,
            xtop: nice_top(max),
        }
    }

    /// Each category's label and its bars, a value beside each bar.
    fn groups(&self, o: &mut String, f: &BarFrame) {
        let (left, bar) = (f.left, f.bar);
        for (ci, cat) in self.categories.iter().enumerate() {
            let gy = f.top + ci as f64 * f.group + 5.0;
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{:.1}" {FONT} font-size="11" text-anchor="end">{}</text>"#,
                left - 6.0,
                gy + bar * f.n / 2.0 + 4.0,
                escape(cat)
            );
            for (si, (_, vals)) in self.series.iter().enumerate() {
                let Some(v) = vals.get(ci).copied().flatten() else {
                    continue;
                };
                let y = gy + si as f64 * bar;
                let _ = write!(
                    o,
                    r#"<rect x="{left}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}" {FONT} font-size="9">{}</text>"#,
                    (f.sx(v) - left).max(0.5),
                    bar - 1.0,
                    colour(si),
                    f.sx(v) + 3.0,
                    y + bar - 3.0,
                    short(v)
                );
            }
        }
    }

    /// The chart as one `<svg>` element, as high as its groups need.
    pub fn svg(&self) -> String {
        let f = self.frame();
        let (left, top, pw, ph) = (f.left, f.top, f.pw, f.ph);
        let mut o = String::new();
        open(&mut o, f.h, &self.title);
        for v in nice_ticks(0.0, f.xtop) {
            let x = f.sx(v);
            let _ = write!(
                o,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{x:.1}" y="{:.1}" {FONT} font-size="11" text-anchor="middle">{}</text>"##,
                top + ph,
                top + ph + 16.0,
                short(v)
            );
        }
        self.groups(&mut o, &f);
        let _ = write!(
            o,
            r##"<line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#444"/><text x="{:.1}" y="{:.1}" {FONT} font-size="12" text-anchor="middle">{}</text>"##,
            top + ph,
            left + pw / 2.0,
            top + ph + 36.0,
            escape(&self.x_label)
        );
        let names: Vec<(&str, &str, bool)> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.0.as_str(), colour(i), false))
            .collect();
        legend(&mut o, &names, left, f.h - 14.0);
        o.push_str("</svg>");
        o
    }
}

/// Several charts one above the other in one SVG document.
pub fn stack(charts: &[Chart]) -> String {
    let mut body = String::new();
    let mut y = 0.0;
    for c in charts {
        let svg = c.svg();
        let h = svg_height(&svg);
        // The inner <svg> keeps its own size; placed by its y.
        let _ = write!(
            body,
            "{}",
            svg.replacen("<svg ", &format!(r#"<svg y="{y}" "#), 1)
        );
        y += h + 10.0;
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" viewBox="0 0 {WIDTH} {y}">{body}</svg>"#
    )
}

fn svg_height(svg: &str) -> f64 {
    svg.split_once(r#"height=""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(h, _)| h.parse().ok())
        .unwrap_or(420.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            nice_ticks(0.0, 100.0),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(nice_top(87_000.0), 100_000.0);
        assert_eq!(short(125_000.0), "125k");
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(0.25), "0.25");
    }

    #[test]
    fn the_percentile_axis_puts_nines_equally_apart() {
        let p = XAxis::Percentile;
        assert!((p.place(90.0) - 1.0).abs() < 1e-9);
        assert!((p.place(99.0) - 2.0).abs() < 1e-9);
        assert!((p.place(99.9) - 3.0).abs() < 1e-6);
        assert_eq!(p.place(100.0), PERCENTILE_DECADES);
        let c = LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            x_axis: p,
            lines: vec![Line {
                name: "x".into(),
                points: vec![(0.0, 1.0), (99.99, 2.0)],
                dashed: false,
            }],
            failed: Vec::new(),
        };
        let s = c.svg();
        for label in [">0%<", ">90%<", ">99%<", ">99.9%<", ">99.99%<"] {
            assert!(s.contains(label), "{label}");
        }
    }

    #[test]
    fn a_line_chart_is_one_svg_with_every_series_named() {
        let c = LineChart {
            title: "rate <&>".into(),
            x_label: "pipeline".into(),
            y_label: "requests/s".into(),
            x_axis: XAxis::Log,
            lines: vec![
                Line {
                    name: "a".into(),
                    points: vec![(1.0, 10.0), (2.0, 20.0), (4.0, 35.0)],
                    dashed: false,
                },
                Line {
                    name: "b".into(),
                    points: vec![(1.0, 5.0), (4.0, 8.0)],
                    dashed: true,
                },
            ],
            failed: vec![8.0],
        };
        let s = c.svg();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("rate &lt;&amp;&gt;"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains(">a</text>") && s.contains(">b</text>"));
        assert!(s.contains('✗'));
    }

    #[test]
    fn a_bar_chart_draws_a_bar_per_value() {
        let c = BarChart {
            title: "t".into(),
            x_label: "requests/s".into(),
            categories: vec!["SET".into(), "GET".into()],
            series: vec![
                ("one".into(), vec![Some(100.0), Some(120.0)]),
                ("two".into(), vec![None, Some(90.0)]),
            ],
        };
        let s = c.svg();
        assert_eq!(s.matches("<rect x=").count(), 3);
        let both = stack(&[Chart::Bar(c.clone()), Chart::Bar(c)]);
        assert_eq!(both.matches("<svg").count(), 3);
    }
}
