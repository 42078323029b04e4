//! One SVG per table: published against simulated, in two steps — [`describe`] decides
//! what to draw (a [`Plot`]: pure data, tested), [`render`] draws it with plotters.
//!
//! The rules (issue 17 item 8):
//!
//! 1. **x is categorical**: one slot per row, labelled with the row's own label
//!    (rotated when the labels would not fit side by side).
//! 2. **Lines only along a parameter sweep**: two neighbouring rows are joined when their
//!    labels differ in exactly one number, which grows (`2cpu/4tasks` → `2cpu/8tasks`);
//!    `2cpu/128tasks` → `4cpu/2tasks`, or rows naming different counters, stay apart.
//! 3. **Log scale** when the positive values span more than [`LOG_SPAN`] (1.5 decades).
//! 4. **Grey-safe styles**: published = filled marker, solid line; simulated = open
//!    marker, dashed line; each policy its own marker shape (and colour). The legend,
//!    right of the plot, draws each series with its own line and marker.
//! 5. **No hidden points**: within a row each series has its own x offset (dodge).
//! 6. **Spread**: a simulated cell run with several seeds gets a min–max error bar.

use std::path::Path;

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Table;

/// Values spanning more than this ratio (max / min) get a log y axis: 10^1.5.
pub const LOG_SPAN: f64 = 31.622_776_601_683_793;

const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// A simulated value and its spread over the seeds it was run with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The reported value (the median of the repeats).
    pub value: f64,
    /// Smallest repeat.
    pub min: f64,
    /// Largest repeat.
    pub max: f64,
}

impl Spread {
    /// One run: no spread.
    pub fn one(v: f64) -> Spread {
        Spread {
            value: v,
            min: v,
            max: v,
        }
    }
}

/// One drawn point.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Index of its row (x slot).
    pub row: usize,
    /// x position: the row index plus the series' dodge offset.
    pub x: f64,
    /// Value.
    pub y: f64,
    /// Error bar (min, max) when the value has a spread.
    pub bar: Option<(f64, f64)>,
}

/// One series: a policy's published or simulated values.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Index of the policy (colour and marker shape).
    pub policy: usize,
    /// Simulated (open marker, dashed line) or published (filled, solid).
    pub simulated: bool,
    /// Points in row order.
    pub points: Vec<Point>,
    /// Line segments (indices into `points`) along a parameter sweep.
    pub segments: Vec<(usize, usize)>,
}

/// Everything [`render`] draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// y axis description (the unit).
    pub y_desc: String,
    /// x tick labels: the rows' own labels, in table order.
    pub x_labels: Vec<String>,
    /// Log y axis.
    pub log_y: bool,
    /// y range drawn.
    pub y_range: (f64, f64),
    /// The series, published before simulated for each policy.
    pub series: Vec<Series>,
}

/// Numbers and the text between them: `2cpu/16tasks` → `[2, "cpu/", 16, "tasks"]`.
fn tokens(label: &str) -> Vec<Result<u64, String>> {
    let mut out: Vec<Result<u64, String>> = Vec::new();
    for ch in label.chars() {
        match (ch.to_digit(10), out.last_mut()) {
            (Some(d), Some(Ok(n))) => *n = n.saturating_mul(10).saturating_add(d as u64),
            (Some(d), _) => out.push(Ok(d as u64)),
            (None, Some(Err(s))) => s.push(ch),
            (None, _) => out.push(Err(ch.to_string())),
        }
    }
    out
}

/// True when row `b` follows row `a` along a parameter sweep: the same words, exactly one
/// number different, and larger.
pub fn is_sweep_step(a: &str, b: &str) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.len() != tb.len() {
        return false;
    }
    let mut changed = 0;
    for (x, y) in ta.iter().zip(&tb) {
        match (x, y) {
            (Err(s), Err(t)) if s == t => {}
            (Ok(m), Ok(n)) if m == n => {}
            (Ok(m), Ok(n)) if n > m => changed += 1,
            _ => return false,
        }
    }
    changed == 1
}

/// True when the positive values span more than [`LOG_SPAN`] and none is ≤ 0.
pub fn wants_log(values: &[f64]) -> bool {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    lo > 0.0 && hi / lo > LOG_SPAN
}

/// What to draw for `table` with each cell's simulated value (and spread).
pub fn describe(table: &Table, simulated: &[Option<Spread>]) -> Plot {
    let mut rows: Vec<&str> = Vec::new();
    let mut policies: Vec<&str> = Vec::new();
    // determinism: rows and policies in order of first appearance.
    for c in &table.cells {
        if !rows.contains(&c.row.as_str()) {
            rows.push(&c.row);
        }
        if !policies.contains(&c.policy.as_str()) {
            policies.push(&c.policy);
        }
    }
    let joins: Vec<bool> = rows.windows(2).map(|w| is_sweep_step(w[0], w[1])).collect();
    // Dodge: within a row, the series present there (slot 2·policy + simulated) side by
    // side around the row's tick, in slot order.
    let mut present: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
    for (ci, c) in table.cells.iter().enumerate() {
        let row = rows.iter().position(|r| *r == c.row).expect("row");
        let pi = policies
            .iter()
            .position(|p| *p == c.policy)
            .expect("policy");
        let sim = simulated.get(ci).copied().flatten();
        if c.value.is_some_and(f64::is_finite) {
            present[row].push(2 * pi);
        }
        if sim.is_some_and(|s| s.value.is_finite()) {
            present[row].push(2 * pi + 1);
        }
    }
    for p in &mut present {
        p.sort_unstable();
        p.dedup();
    }
    let most = present.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = (0.8 / most as f64).min(0.2);
    let mut series = Vec::new();
    let mut values = Vec::new();
    for (pi, p) in policies.iter().enumerate() {
        for simulated_kind in [false, true] {
            let slot = 2 * pi + simulated_kind as usize;
            let mut points: Vec<Point> = Vec::new();
            for (ci, c) in table.cells.iter().enumerate() {
                if c.policy != *p {
                    continue;
                }
                let row = rows.iter().position(|r| *r == c.row).expect("row");
                let (y, bar) = if simulated_kind {
                    match simulated.get(ci).copied().flatten() {
                        Some(s) => (s.value, (s.max > s.min).then_some((s.min, s.max))),
                        None => continue,
                    }
                } else {
                    match c.value {
                        Some(v) => (v, None),
                        None => continue,
                    }
                };
                if !y.is_finite() {
                    continue;
                }
                let here = &present[row];
                let at = here.iter().position(|&k| k == slot).unwrap_or(0);
                let dx = (at as f64 - (here.len() as f64 - 1.0) / 2.0) * width;
                values.push(y);
                if let Some((lo, hi)) = bar {
                    values.extend([lo, hi]);
                }
                points.push(Point {
                    row,
                    x: row as f64 + dx,
                    y,
                    bar,
                });
            }
            points.sort_by_key(|p| p.row);
            let segments = (1..points.len())
                .filter(|&i| points[i].row == points[i - 1].row + 1 && joins[points[i - 1].row])
                .map(|i| (i - 1, i))
                .collect();
            if points.is_empty() {
                continue;
            }
            series.push(Series {
                name: format!(
                    "{p} {}",
                    if simulated_kind {
                        "simulated"
                    } else {
                        "published"
                    }
                ),
                policy: pi,
                simulated: simulated_kind,
                points,
                segments,
            });
        }
    }
    let log_y = wants_log(&values);
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let y_range = if values.is_empty() {
        (0.0, 1.0)
    } else if log_y {
        (lo / 1.4, hi * 1.4)
    } else if hi > 0.0 {
        (0.0, hi * 1.08)
    } else {
        (lo * 1.08, 0.0)
    };
    Plot {
        title: format!("{} — {}", table.id, table.title),
        y_desc: table.unit.clone(),
        x_labels: rows.iter().map(|s| s.to_string()).collect(),
        log_y,
        y_range,
        series,
    }
}

/// Write `path` (SVG) for `table` with the simulated value of each cell.
pub fn plot_table(table: &Table, simulated: &[Option<Spread>], path: &Path) -> Result<(), String> {
    render(&describe(table, simulated), path)
}

/// A y tick: `0`, `2.5`, `40`, `120k`, `1.5M` (no trailing `.0`).
pub fn tick_label(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let a = v.abs();
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.4}"))
    }
}

/// Pixel width of `text` at `size` (plotters' SVG font size is `size / 1.24` px).
fn text_px(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.58).ceil() as i32
}

const LABEL_SIZE: f64 = 13.0;
const MARKER: i32 = 5;

/// Draw `plot` into the SVG file `path`.
pub fn render(plot: &Plot, path: &Path) -> Result<(), String> {
    let n = plot.x_labels.len().max(1);
    // Room for the series side by side in the fullest row (markers ≈ 12 px).
    let most = (0..n)
        .map(|r| {
            let here = |s: &Series| s.points.iter().filter(|p| p.row == r).count();
            plot.series.iter().map(here).sum::<usize>()
        })
        .max()
        .unwrap_or(1) as i32;
    let slot_px = (12 * most).max(48);
    let plot_w = (n as i32 * slot_px).clamp(420, 3200);
    let widest = plot
        .x_labels
        .iter()
        .map(|l| text_px(l, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    let rotate = widest + 8 > plot_w / n as i32;
    let label_h = if rotate { widest + 4 } else { 24 };
    let legend_w = plot
        .series
        .iter()
        .map(|s| text_px(&s.name, 13.0))
        .chain([text_px("min–max over seeds", 13.0)])
        .max()
        .unwrap_or(0)
        + 70;
    let title_w = text_px(&plot.title, 16.0) + 24;
    let (w, h) = ((plot_w + 90 + legend_w).max(title_w), 440 + label_h);
    let root = SVGBackend::new(path, (w as u32, h as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    root.draw(&Text::new(
        plot.title.clone(),
        (12, 10),
        TextStyle::from(("sans-serif", 16).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Top)),
    ))
    .map_err(|e| e.to_string())?;
    let (area, legend) = root.margin(30, 0, 0, 0).split_horizontally(w - legend_w);
    let (lo, hi) = plot.y_range;
    let x = -0.5..(n as f64 - 0.5);
    let mut b = ChartBuilder::on(&area);
    b.margin(12)
        .x_label_area_size(label_h as u32 + 22)
        .y_label_area_size(70);
    let drawn = if plot.log_y {
        let c = b
            .build_cartesian_2d(x, (lo..hi).log_scale())
            .map_err(|e| e.to_string())?;
        draw(plot, c, &root, rotate)
    } else {
        let c = b.build_cartesian_2d(x, lo..hi).map_err(|e| e.to_string())?;
        draw(plot, c, &root, rotate)
    };
    drawn.map_err(|e| e.to_string())?;
    draw_legend(plot, &legend).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

type Res = Result<(), DrawingAreaErrorKind<std::io::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn colour(policy: usize) -> RGBColor {
    COLOURS[policy % COLOURS.len()]
}

/// A marker of policy `policy`'s shape at pixel `(x, y)`: filled (published) or open.
fn marker<'a>(
    policy: usize,
    filled: bool,
    at: (i32, i32),
) -> DynElement<'a, SVGBackend<'a>, (i32, i32)> {
    let col = colour(policy);
    let style = if filled {
        col.filled()
    } else {
        col.stroke_width(2)
    };
    let r = MARKER;
    let outline: Vec<(i32, i32)> = match policy % 5 {
        0 => return (EmptyElement::at(at) + Circle::new((0, 0), r, style)).into_dyn(),
        1 => vec![(0, -r - 1), (r + 1, r), (-r - 1, r)],
        2 => vec![(-r, -r), (r, -r), (r, r), (-r, r)],
        3 => vec![(0, -r - 2), (r + 1, 0), (0, r + 2), (-r - 1, 0)],
        _ => vec![(-r - 1, -r), (r + 1, -r), (0, r + 1)],
    };
    if filled {
        (EmptyElement::at(at) + Polygon::new(outline, style)).into_dyn()
    } else {
        let mut closed = outline.clone();
        closed.push(outline[0]);
        (EmptyElement::at(at) + PathElement::new(closed, style)).into_dyn()
    }
}

/// Dashes between two pixel points.
fn dashes(a: (i32, i32), b: (i32, i32)) -> Vec<[(i32, i32); 2]> {
    let (dx, dy) = ((b.0 - a.0) as f64, (b.1 - a.1) as f64);
    let len = (dx * dx + dy * dy).sqrt();
    let (on, off) = (6.0, 4.0);
    let mut out = Vec::new();
    let mut s = 0.0;
    while s < len {
        let e = (s + on).min(len);
        let p = |t: f64| {
            (
                a.0 + (dx * t / len).round() as i32,
                a.1 + (dy * t / len).round() as i32,
            )
        };
        out.push([p(s), p(e)]);
        s += on + off;
    }
    out
}

fn line(root: &Area, a: (i32, i32), b: (i32, i32), policy: usize, dashed: bool) -> Res {
    let style = colour(policy).stroke_width(2);
    if dashed {
        for d in dashes(a, b) {
            root.draw(&PathElement::new(d.to_vec(), style))?;
        }
        Ok(())
    } else {
        root.draw(&PathElement::new(vec![a, b], style))
    }
}

fn draw<'a, Y>(
    plot: &Plot,
    mut chart: ChartContext<
        'a,
        SVGBackend<'a>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, Y>,
    >,
    root: &Area<'a>,
    rotate: bool,
) -> Res
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(RGBColor(245, 245, 245))
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc(plot.y_desc.clone())
        .y_label_formatter(&|v| tick_label(*v))
        .draw()?;
    let area = chart.plotting_area();
    let px = |x: f64, y: f64| area.map_coordinate(&(x, y));
    // x tick labels: the rows' own, under their slot.
    let (_, y_bottom) = px(0.0, plot.y_range.0);
    let style = TextStyle::from(("sans-serif", LABEL_SIZE).into_font()).color(&BLACK);
    for (i, l) in plot.x_labels.iter().enumerate() {
        let (x, _) = px(i as f64, plot.y_range.0);
        root.draw(&PathElement::new(
            vec![(x, y_bottom), (x, y_bottom + 5)],
            BLACK,
        ))?;
        if rotate {
            let s = style
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center));
            root.draw(&Text::new(l.clone(), (x, y_bottom + 8), s))?;
        } else {
            let s = style.pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(l.clone(), (x, y_bottom + 8), s))?;
        }
    }
    // Row separators: light vertical lines between slots.
    let (_, y_top) = px(0.0, plot.y_range.1);
    for i in 1..plot.x_labels.len() {
        let (x, _) = px(i as f64 - 0.5, plot.y_range.0);
        root.draw(&PathElement::new(
            vec![(x, y_top), (x, y_bottom)],
            RGBColor(225, 225, 225),
        ))?;
    }
    for s in &plot.series {
        for &(a, b) in &s.segments {
            let (p, q) = (&s.points[a], &s.points[b]);
            line(root, px(p.x, p.y), px(q.x, q.y), s.policy, s.simulated)?;
        }
        for p in &s.points {
            if let Some((lo, hi)) = p.bar {
                let (x, y0) = px(p.x, lo);
                let (_, y1) = px(p.x, hi);
                let st = colour(s.policy).stroke_width(1);
                root.draw(&PathElement::new(vec![(x, y0), (x, y1)], st))?;
                root.draw(&PathElement::new(vec![(x - 3, y0), (x + 3, y0)], st))?;
                root.draw(&PathElement::new(vec![(x - 3, y1), (x + 3, y1)], st))?;
            }
            root.draw(&marker(s.policy, !s.simulated, px(p.x, p.y)))?;
        }
    }
    Ok(())
}

fn draw_legend(plot: &Plot, legend: &Area) -> Res {
    let (x0, y0) = (8, 20);
    let style = TextStyle::from(("sans-serif", 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = y0;
    for s in &plot.series {
        line(legend, (x0, y), (x0 + 34, y), s.policy, s.simulated)?;
        legend.draw(&marker(s.policy, !s.simulated, (x0 + 17, y)))?;
        legend.draw(&Text::new(s.name.clone(), (x0 + 42, y), style.clone()))?;
        y += 20;
    }
    if plot
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.bar.is_some()))
    {
        y += 6;
        legend.draw(&PathElement::new(
            vec![(x0 + 17, y - 6), (x0 + 17, y + 6)],
            BLACK,
        ))?;
        legend.draw(&PathElement::new(
            vec![(x0 + 14, y - 6), (x0 + 20, y - 6)],
            BLACK,
        ))?;
        legend.draw(&PathElement::new(
            vec![(x0 + 14, y + 6), (x0 + 20, y + 6)],
            BLACK,
        ))?;
        legend.draw(&Text::new(
            "min–max over seeds",
            (x0 + 42, y),
            style.clone(),
        ))?;
        y += 20;
    }
    if plot.log_y {
        legend.draw(&Text::new("y: log scale", (x0, y + 6), style.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The plot description, not pixels. See: issue 17 item 8.
    use super::*;
    use crate::experiment::Cell;

    fn table(cells: &[(&str, &str, f64)]) -> Table {
        Table {
            id: "T".into(),
            title: "a table".into(),
            source: String::new(),
            held_out: false,
            unit: "us".into(),
            better: "lower".into(),
            machine: "piii700-1m".into(),
            note: String::new(),
            on_request: false,
            cells: cells
                .iter()
                .map(|&(row, policy, v)| Cell {
                    cpus: 2,
                    policy: policy.into(),
                    workload: "lat_pipe".into(),
                    value: Some(v),
                    row: row.into(),
                    metric: None,
                    machine: None,
                    search: None,
                })
                .collect(),
        }
    }

    fn sim(t: &Table) -> Vec<Option<Spread>> {
        t.cells
            .iter()
            .map(|c| c.value.map(|v| Spread::one(v * 1.1)))
            .collect()
    }

    #[test]
    fn rows_that_are_not_a_sweep_get_no_joining_line() {
        let t = table(&[
            ("12runnable/pcp6/remote_better_pct", "mq", 40.0),
            ("12runnable/pcp6/remote_lock_ok_pct", "mq", 60.0),
            ("12runnable/pcp15/remote_better_pct", "mq", 30.0),
            ("lat_pipe", "o1", 10.0),
        ]);
        let p = describe(&t, &sim(&t));
        for s in &p.series {
            assert!(s.segments.is_empty(), "{}: {:?}", s.name, s.segments);
        }
        assert!(!is_sweep_step("2cpu/128tasks", "4cpu/2tasks"));
        assert!(!is_sweep_step("20 groups", "10 groups"));
        assert!(!is_sweep_step("8 tasks", "8 tasks"));
    }

    #[test]
    fn a_sweep_is_joined_along_its_parameter_only() {
        let t = table(&[
            ("2cpu/2tasks", "linux-2.4", 6.0),
            ("2cpu/4tasks", "linux-2.4", 7.0),
            ("2cpu/8tasks", "linux-2.4", 8.0),
            ("4cpu/2tasks", "linux-2.4", 9.0),
            ("4cpu/4tasks", "linux-2.4", 10.0),
        ]);
        let p = describe(&t, &sim(&t));
        assert_eq!(p.series.len(), 2);
        for s in &p.series {
            let rows: Vec<(usize, usize)> = s
                .segments
                .iter()
                .map(|&(a, b)| (s.points[a].row, s.points[b].row))
                .collect();
            assert_eq!(rows, vec![(0, 1), (1, 2), (3, 4)], "{}", s.name);
        }
        assert!(is_sweep_step("5 groups", "10 groups"));
    }

    #[test]
    fn values_spanning_decades_get_a_log_axis() {
        let wide = table(&[("a", "x", 1.0), ("b", "x", 100.0)]);
        assert!(describe(&wide, &sim(&wide)).log_y);
        let narrow = table(&[("a", "x", 10.0), ("b", "x", 200.0)]);
        assert!(!describe(&narrow, &sim(&narrow)).log_y);
        assert!(wants_log(&[0.5, 20.0]) && !wants_log(&[0.0, 20.0]) && !wants_log(&[1.0, 31.0]));
        let p = describe(&wide, &sim(&wide));
        assert!(p.y_range.0 > 0.0 && p.y_range.0 < 1.0 && p.y_range.1 > 110.0);
    }

    #[test]
    fn x_tick_labels_are_the_row_labels_in_table_order() {
        let t = table(&[
            ("5 groups", "a", 1.0),
            ("10 groups", "a", 2.0),
            ("5 groups", "b", 1.5),
            ("20 groups", "b", 3.0),
        ]);
        let p = describe(&t, &sim(&t));
        assert_eq!(p.x_labels, vec!["5 groups", "10 groups", "20 groups"]);
    }

    #[test]
    fn coincident_points_are_drawn_apart_and_styles_differ() {
        let t = table(&[("r", "a", 5.0), ("r", "b", 5.0)]);
        let same: Vec<Option<Spread>> = vec![Some(Spread::one(5.0)); 2];
        let p = describe(&t, &same);
        let xs: Vec<f64> = p.series.iter().map(|s| s.points[0].x).collect();
        assert_eq!(xs.len(), 4);
        for i in 0..xs.len() {
            for j in 0..i {
                assert!((xs[i] - xs[j]).abs() > 0.05, "{xs:?}");
            }
            assert!((xs[i]).abs() < 0.5, "inside the row's slot: {xs:?}");
        }
        // Published and simulated of one policy: same shape, different fill and line.
        assert_eq!(p.series[0].policy, p.series[1].policy);
        assert!(!p.series[0].simulated && p.series[1].simulated);
    }

    #[test]
    fn y_ticks_are_compact() {
        let t: Vec<String> = [0.0, 2.5, 40.0, 120_000.0, 1_500_000.0, 0.01]
            .iter()
            .map(|&v| tick_label(v))
            .collect();
        assert_eq!(t, ["0", "2.5", "40", "120k", "1.5M", "0.01"]);
    }

    #[test]
    fn a_spread_over_seeds_is_an_error_bar() {
        let t = table(&[("r", "a", 5.0)]);
        let s = vec![Some(Spread {
            value: 5.0,
            min: 4.0,
            max: 7.0,
        })];
        let p = describe(&t, &s);
        let sim = p.series.iter().find(|s| s.simulated).unwrap();
        assert_eq!(sim.points[0].bar, Some((4.0, 7.0)));
        assert!(p.y_range.1 >= 7.0);
    }

    #[test]
    fn the_svg_is_well_formed_and_labels_rows_not_row() {
        let t = table(&[
            ("2cpu/2tasks", "linux-2.4", 6.0),
            ("2cpu/4tasks", "linux-2.4", 600.0),
            (
                "12runnable/pcp6/resched_target_is_task_cpu_pct",
                "o1-d1",
                8.0,
            ),
        ]);
        let path = std::env::temp_dir().join(format!("schedlab-plot-{}.svg", std::process::id()));
        plot_table(&t, &sim(&t), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for row in [
            "2cpu/2tasks",
            "2cpu/4tasks",
            "linux-2.4 published",
            "o1-d1 simulated",
        ] {
            assert!(texts.contains(&row), "{row} missing from {texts:?}");
        }
        assert!(!texts.contains(&"row"), "the x axis is not called 'row'");
    }
}
