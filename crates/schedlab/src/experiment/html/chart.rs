//! The pages' charts: SVG drawn here, categorical x, one focusable point per value with
//! its tip, markers that differ by shape as well as colour.

use std::fmt::Write as _;

use super::esc;
use crate::experiment::plot;

/// Okabe–Ito colours, safe for the common colour-vision deficiencies.
const COLOURS: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// One series of a chart: points at category indices.
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Colour and marker index.
    pub style: usize,
    /// Filled (published) or open (simulated) markers, solid or dashed line.
    pub published: bool,
    /// (category index, value, tip text).
    pub points: Vec<(usize, f64, String)>,
}

/// A chart of categorical x (`categories`) against values, one polyline per series
/// joined only along a parameter sweep, a log axis when the values span more than 1.5
/// decades (the rules of the SVG plots, [`plot`]). Each point is focusable
/// and carries its tip.
pub fn chart(title: &str, unit: &str, categories: &[String], series: &[Series]) -> String {
    draw(title, unit, categories, series, (720.0, 300.0))
}

/// [`chart`] at a small size, for a finding's evidence.
pub fn small_chart(title: &str, categories: &[String], series: &[Series]) -> String {
    draw(title, "", categories, series, (380.0, 210.0))
}

fn draw(
    title: &str,
    unit: &str,
    categories: &[String],
    series: &[Series],
    (w, h): (f64, f64),
) -> String {
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .collect();
    if values.is_empty() || categories.is_empty() {
        return String::new();
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let log = plot::wants_log(&values);
    let (y0, y1) = if log {
        (lo.log10().floor(), hi.log10().ceil())
    } else {
        // Values of one sign start the axis at zero, so bar-like comparisons hold.
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
    };
    let (left, right) = (64.0, if w < 500.0 { 40.0 } else { 48.0 });
    // The legend's rows sit above the plot and the x labels, rotated, below it: the
    // picture grows with both (`h` is the plot's share), so neither eats the plot.
    let per_row = ((w - left) / 220.0).floor().max(1.0) as usize;
    let top = 14.0 + 12.0 * series.len().div_ceil(per_row) as f64;
    let longest = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0);
    let bottom = (16.0 + 0.64 * 6.2 * longest as f64).clamp(40.0, 240.0);
    let pw = w - left - right;
    let ph = h - 94.0;
    let h = top + ph + bottom;
    let n = categories.len();
    let x = |i: usize| left + pw * (i as f64 + 0.5) / n as f64;
    let y = |v: f64| {
        let t = if log {
            (v.max(1e-300).log10() - y0) / (y1 - y0)
        } else {
            (v - y0) / (y1 - y0)
        };
        top + ph * (1.0 - t)
    };
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg viewBox=\"0 0 {w} {h}\" role=\"group\" aria-label=\"{}\">",
        esc(title)
    );
    // Axes and ticks.
    let _ = write!(
        o,
        "<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"#888\"/>\
         <line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>",
        top + ph,
        top + ph,
        left + pw,
        top + ph
    );
    let ticks: Vec<f64> = if log {
        (y0 as i32..=y1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=4).map(|i| y0 + (y1 - y0) * i as f64 / 4.0).collect()
    };
    for t in ticks {
        let yy = y(t);
        let _ = write!(
            o,
            "<line x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{}\" y2=\"{yy:.1}\" stroke=\"#eee\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + pw,
            left - 4.0,
            yy + 4.0,
            esc(&plot::tick_label(t))
        );
    }
    let _ = write!(
        o,
        "<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}{}</text>",
        top + ph / 2.0,
        top + ph / 2.0,
        esc(unit),
        if log { " (log)" } else { "" }
    );
    let step = n.div_ceil(24).max(1);
    for (i, c) in categories.iter().enumerate() {
        if i % step == 0 {
            let (xx, yy) = (x(i), top + ph + 10.0);
            let _ = write!(
                o,
                "<text x=\"{xx:.1}\" y=\"{yy}\" transform=\"rotate(40 {xx:.1} {yy})\">{}</text>",
                esc(c)
            );
        }
    }
    for s in series {
        let colour = COLOURS[s.style % COLOURS.len()];
        let mut pts = s.points.clone();
        pts.sort_by_key(|p| p.0);
        for w2 in pts.windows(2) {
            if w2[1].0 == w2[0].0 + 1
                && plot::is_sweep_step(&categories[w2[0].0], &categories[w2[1].0])
            {
                let _ = write!(
                    o,
                    "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1.5\"{}/>",
                    x(w2[0].0),
                    y(w2[0].1),
                    x(w2[1].0),
                    y(w2[1].1),
                    if s.published { "" } else { " stroke-dasharray=\"5 3\"" }
                );
            }
        }
        for (i, v, tipt) in &pts {
            if !v.is_finite() {
                continue;
            }
            let fill = if s.published { colour } else { "#fff" };
            let _ = write!(
                o,
                "{}",
                marker(
                    s.style,
                    x(*i),
                    y(*v),
                    colour,
                    fill,
                    &format!("{}: {tipt}", s.name)
                )
            );
        }
    }
    // Legend.
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[s.style % COLOURS.len()];
        let (lx, ly) = (
            left + 8.0 + (k % per_row) as f64 * 220.0,
            12.0 + (k / per_row) as f64 * 12.0,
        );
        let fill = if s.published { colour } else { "#fff" };
        let _ = write!(
            o,
            "{}<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            legend_marker(s.style, lx, ly - 4.0, colour, fill),
            lx + 8.0,
            ly,
            esc(&s.name)
        );
    }
    o.push_str("</svg>");
    o
}

fn shape(style: usize, x: f64, y: f64, r: f64) -> String {
    match style % 4 {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\""),
        1 => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\"",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            "<path d=\"M{x:.1} {:.1} L{:.1} {:.1} L{:.1} {:.1} Z\"",
            y - r * 1.2,
            x + r * 1.1,
            y + r * 0.9,
            x - r * 1.1,
            y + r * 0.9
        ),
        _ => format!(
            "<path d=\"M{x:.1} {:.1} L{:.1} {y:.1} L{x:.1} {:.1} L{:.1} {y:.1} Z\"",
            y - r * 1.3,
            x + r * 1.3,
            y + r * 1.3,
            x - r * 1.3
        ),
    }
}

fn marker(style: usize, x: f64, y: f64, colour: &str, fill: &str, tip: &str) -> String {
    format!(
        "{} class=\"pt\" tabindex=\"0\" role=\"img\" fill=\"{fill}\" stroke=\"{colour}\" \
         stroke-width=\"1.5\" data-tip=\"{}\" aria-label=\"{}\"/>",
        shape(style, x, y, 4.0),
        esc(tip),
        esc(tip),
    )
}

fn legend_marker(style: usize, x: f64, y: f64, colour: &str, fill: &str) -> String {
    format!(
        "{} fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
        shape(style, x, y, 4.0)
    )
}
