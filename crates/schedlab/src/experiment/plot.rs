//! One SVG per table: published against simulated, one colour per policy (published:
//! solid line and filled dots; simulated: dashed line and open dots), rows along x.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use super::Table;

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

/// Points of one policy: (published, simulated), each as (x, y).
type Lines = (Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Write `path` for `table` with the simulated value of each cell.
pub fn plot_table(table: &Table, simulated: &[Option<f64>], path: &Path) -> Result<(), String> {
    let mut rows: Vec<&str> = Vec::new();
    for c in &table.cells {
        if !rows.contains(&c.row.as_str()) {
            rows.push(&c.row);
        }
    }
    // determinism: policies in order of first appearance.
    let mut policies: Vec<&str> = Vec::new();
    for c in &table.cells {
        if !policies.contains(&c.policy.as_str()) {
            policies.push(&c.policy);
        }
    }
    let mut series: BTreeMap<usize, Lines> = BTreeMap::new();
    let mut hi: f64 = 0.0;
    for (i, c) in table.cells.iter().enumerate() {
        let x = rows.iter().position(|r| *r == c.row).unwrap() as f64;
        let pi = policies.iter().position(|p| *p == c.policy).unwrap();
        let e = series.entry(pi).or_default();
        if let Some(v) = c.value {
            e.0.push((x, v));
            hi = hi.max(v);
        }
        if let Some(v) = simulated.get(i).copied().flatten() {
            e.1.push((x, v));
            hi = hi.max(v);
        }
    }
    let hi = if hi > 0.0 { hi * 1.1 } else { 1.0 };
    let height = 480;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let n = rows.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{} — {}", table.id, table.title),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n - 0.5), 0.0..hi)
        .map_err(|e| e.to_string())?;
    let labels = rows.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    chart
        .configure_mesh()
        .x_labels(rows.len().min(30))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(table.unit.clone())
        .x_desc("row")
        .draw()
        .map_err(|e| e.to_string())?;
    for (pi, (published, sim)) in &series {
        let col = COLOURS[pi % COLOURS.len()];
        let name = policies[*pi].to_string();
        if !published.is_empty() {
            chart
                .draw_series(LineSeries::new(published.clone(), col.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(format!("{name} published"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2))
                });
            chart
                .draw_series(
                    published
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, col.filled())),
                )
                .map_err(|e| e.to_string())?;
        }
        if !sim.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(
                    sim.clone(),
                    6,
                    4,
                    col.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(format!("{name} simulated"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 6, y), (x + 12, y)], col.stroke_width(1))
                });
            chart
                .draw_series(
                    sim.iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, col.stroke_width(2))),
                )
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
