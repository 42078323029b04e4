//! A per-CPU timeline picture (SVG): one lane per CPU, who ran when over a window, one
//! colour per task group (tasks of a group in shades of it, labelled with their comm where
//! there is room), idle in light grey, spinning on a lock as a red band under the lane.
//!
//! Memory is bounded: each lane is a row of at most `2 × COLUMNS` time columns, each
//! holding the time each task ran in it; when a run outgrows the row, neighbouring columns
//! are merged and the column width doubles. A column is drawn in the colour of the task
//! that ran longest in it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use smallvec::SmallVec;

use super::{Kind, Output, OutputSummary, Rec, RunInfo, TaskInfo, Window};
use crate::engine::Time;

/// Columns of the picture.
pub const COLUMNS: usize = 1200;

#[derive(Clone, Default)]
struct Col {
    /// (task key, ns run in this column).
    occ: SmallVec<[(u32, u64); 2]>,
    spin: u64,
}

struct TaskMeta {
    comm: String,
    pid: u32,
    group: usize,
    shade: usize,
}

/// The timeline output; writes its SVG at the end.
pub struct Timeline {
    path: PathBuf,
    info: RunInfo,
    title: String,
    origin: Time,
    end: Time,
    bin: Time,
    lanes: Vec<Vec<Col>>,
    cur: Vec<(u32, Time)>,
    spin_since: Vec<Option<Time>>,
    metas: Vec<TaskMeta>,
    key_of: BTreeMap<u32, u32>,
    groups: Vec<(String, usize)>,
}

/// Group colours (Tableau 10, colour-blind-aware order).
const PALETTE: [(u8, u8, u8); 10] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0x59, 0xa1, 0x4f),
    (0xb0, 0x7a, 0xa1),
    (0x76, 0xb7, 0xb2),
    (0xed, 0xc9, 0x48),
    (0x9c, 0x75, 0x5f),
    (0xff, 0x9d, 0xa7),
    (0xe1, 0x57, 0x59),
    (0xba, 0xb0, 0xac),
];

fn colour(group: usize, shade: usize) -> String {
    let (r, g, b) = PALETTE[group % PALETTE.len()];
    // Shades of the group's colour: 0, +30 %, −25 % towards white/black, in turn.
    let f = [0.0f64, 0.30, -0.25, 0.5, -0.4][shade % 5];
    let m = |c: u8| -> u8 {
        let c = f64::from(c);
        let v = if f >= 0.0 {
            c + (255.0 - c) * f
        } else {
            c * (1.0 + f)
        };
        v.round().clamp(0.0, 255.0) as u8
    };
    format!("#{:02x}{:02x}{:02x}", m(r), m(g), m(b))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A time for the axis.
fn fmt_t(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

impl Timeline {
    /// A timeline of `window` written to `path`, titled `title`.
    pub fn new(path: &Path, info: RunInfo, window: Window, title: String) -> Timeline {
        let cpus = info.cpus;
        let (bin, end) = if window.end == Time::MAX {
            (1, Time::MAX)
        } else {
            (
                (window.end - window.start).div_ceil(COLUMNS as Time).max(1),
                window.end,
            )
        };
        Timeline {
            path: path.to_path_buf(),
            info,
            title,
            origin: window.start,
            end,
            bin,
            lanes: vec![Vec::new(); cpus],
            cur: vec![(0, window.start); cpus],
            spin_since: vec![None; cpus],
            metas: vec![TaskMeta {
                comm: "idle".into(),
                pid: 0,
                group: usize::MAX,
                shade: 0,
            }],
            key_of: BTreeMap::new(),
            groups: Vec::new(),
        }
    }

    fn key(&mut self, t: &TaskInfo) -> u32 {
        if t.pid == 0 {
            return 0;
        }
        if let Some(&k) = self.key_of.get(&t.pid) {
            return k;
        }
        let g = t.group();
        let gi = match self.groups.iter().position(|(n, _)| n == g) {
            Some(i) => i,
            None => {
                self.groups.push((g.to_string(), 0));
                self.groups.len() - 1
            }
        };
        let shade = self.groups[gi].1;
        self.groups[gi].1 += 1;
        self.metas.push(TaskMeta {
            comm: t.comm.clone(),
            pid: t.pid,
            group: gi,
            shade,
        });
        let k = (self.metas.len() - 1) as u32;
        self.key_of.insert(t.pid, k);
        k
    }

    /// Merge column pairs until column `need` fits in `2 × COLUMNS`.
    fn fit(&mut self, mut need: u64) {
        while need >= 2 * COLUMNS as u64 {
            for lane in &mut self.lanes {
                let mut merged: Vec<Col> = Vec::with_capacity(COLUMNS);
                for pair in lane.chunks(2) {
                    let mut c = pair[0].clone();
                    if let Some(d) = pair.get(1) {
                        c.spin += d.spin;
                        for &(k, ns) in &d.occ {
                            match c.occ.iter_mut().find(|(kk, _)| *kk == k) {
                                Some(e) => e.1 += ns,
                                None => c.occ.push((k, ns)),
                            }
                        }
                    }
                    merged.push(c);
                }
                *lane = merged;
            }
            self.bin *= 2;
            need /= 2;
        }
    }

    /// Add `[a, b)` of `key` (or of spinning) on `cpu`.
    fn add(&mut self, cpu: usize, key: Option<u32>, a: Time, b: Time) {
        let (a, b) = (a.max(self.origin), b.min(self.end));
        if b <= a {
            return;
        }
        let last = (b - 1 - self.origin) / self.bin;
        if self.end == Time::MAX {
            self.fit(last);
        }
        let last = (b - 1 - self.origin) / self.bin;
        let lane = &mut self.lanes[cpu];
        if lane.len() <= last as usize {
            lane.resize(last as usize + 1, Col::default());
        }
        let mut c = (a - self.origin) / self.bin;
        while c <= last {
            let lo = self.origin + c * self.bin;
            let hi = lo + self.bin;
            let ns = b.min(hi) - a.max(lo);
            let col = &mut lane[c as usize];
            match key {
                None => col.spin += ns,
                Some(k) => match col.occ.iter_mut().find(|(kk, _)| *kk == k) {
                    Some(e) => e.1 += ns,
                    None => col.occ.push((k, ns)),
                },
            }
            c += 1;
        }
    }

    fn svg(&self, end: Time) -> String {
        let cpus = self.info.cpus;
        let (left, top, lane_h, gap, plot_w) = (64.0, 58.0, 30.0, 8.0, 1200.0);
        let span = end.saturating_sub(self.origin).max(1);
        let cols = span.div_ceil(self.bin).max(1) as usize;
        let px = plot_w * (self.bin as f64) / (span as f64);
        let entries = if self.metas.len() <= 9 {
            self.metas.len() - 1
        } else {
            self.groups.len()
        } + 2;
        let legend_h = 22.0 * entries.div_ceil(6) as f64 + 8.0;
        let h = top + cpus as f64 * (lane_h + gap) + 34.0 + legend_h;
        let w = left + plot_w + 44.0;
        let mut o = String::new();
        let _ = writeln!(
            o,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">"##
        );
        let _ = writeln!(o, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
        let _ = writeln!(
            o,
            r##"<text x="{left}" y="22" font-size="15" font-weight="bold">{}</text>"##,
            esc(&self.title)
        );
        let _ = writeln!(
            o,
            r##"<text x="{left}" y="40" fill="#555555">{} to {} · one lane per CPU · colour = task group · grey = idle · red band = spinning on a lock</text>"##,
            fmt_t(self.origin as f64),
            fmt_t(end as f64)
        );
        for (cpu, lane) in self.lanes.iter().enumerate() {
            let y = top + cpu as f64 * (lane_h + gap);
            let _ = writeln!(
                o,
                r##"<g class="lane" data-cpu="{cpu}"><text x="8" y="{:.1}">CPU {cpu}</text>"##,
                y + lane_h / 2.0 + 4.0
            );
            let _ = writeln!(
                o,
                r##"<rect x="{left}" y="{y:.1}" width="{plot_w}" height="{lane_h}" fill="#f4f4f4" stroke="#cccccc" stroke-width="0.5"/>"##
            );
            // Runs of columns with the same dominant task.
            let dom: Vec<Option<u32>> = (0..cols)
                .map(|c| {
                    lane.get(c).and_then(|col| {
                        col.occ
                            .iter()
                            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                            .map(|e| e.0)
                    })
                })
                .collect();
            let mut c = 0;
            while c < cols {
                let k = dom[c];
                let mut e = c + 1;
                while e < cols && dom[e] == k {
                    e += 1;
                }
                if let Some(k) = k {
                    let m = &self.metas[k as usize];
                    let fill = if k == 0 {
                        "#dddddd".to_string()
                    } else {
                        colour(m.group, m.shade)
                    };
                    let x = left + c as f64 * px;
                    let wd = (e - c) as f64 * px;
                    let _ = write!(
                        o,
                        r##"<rect x="{x:.2}" y="{y:.1}" width="{wd:.2}" height="{lane_h}" fill="{fill}"><title>{} {}</title></rect>"##,
                        esc(&m.comm),
                        if k == 0 {
                            String::new()
                        } else {
                            format!("pid {}", m.pid)
                        }
                    );
                    if k != 0 && wd > 6.5 * m.comm.len() as f64 + 4.0 {
                        let _ = write!(
                            o,
                            r##"<text x="{:.2}" y="{:.1}" text-anchor="middle" font-size="11" fill="#ffffff">{}</text>"##,
                            x + wd / 2.0,
                            y + lane_h / 2.0 + 4.0,
                            esc(&m.comm)
                        );
                    }
                    o.push('\n');
                }
                c = e;
            }
            // Spinning: a band under the lane, opaque in proportion to the time spun.
            let mut c = 0;
            while c < cols {
                let f = |c: usize| {
                    lane.get(c)
                        .map_or(0, |col| (10 * col.spin).div_ceil(self.bin).min(10))
                };
                let q = f(c);
                let mut e = c + 1;
                while e < cols && f(e) == q {
                    e += 1;
                }
                if q > 0 {
                    let _ = writeln!(
                        o,
                        r##"<rect x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="#d62728" fill-opacity="{:.1}"><title>spinning</title></rect>"##,
                        left + c as f64 * px,
                        y + lane_h * 0.7,
                        (e - c) as f64 * px,
                        lane_h * 0.3,
                        q as f64 / 10.0
                    );
                }
                c = e;
            }
            o += "</g>\n";
        }
        // Time axis.
        let ya = top + cpus as f64 * (lane_h + gap);
        let step = {
            let raw = span as f64 / 8.0;
            let p = 10f64.powf(raw.log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * p)
                .find(|s| *s >= raw)
                .unwrap_or(10.0 * p)
        };
        let _ = writeln!(
            o,
            r##"<line x1="{left}" y1="{ya:.1}" x2="{:.1}" y2="{ya:.1}" stroke="#333333"/>"##,
            left + plot_w
        );
        let mut t = 0.0;
        while t <= span as f64 + 0.5 {
            let x = left + plot_w * t / span as f64;
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" y1="{ya:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
                ya + 4.0,
                ya + 16.0,
                fmt_t(self.origin as f64 + t)
            );
            t += step;
        }
        // Legend.
        // Few tasks: each in its shade; else one entry per group.
        let mut items: Vec<(String, String)> = if self.metas.len() <= 9 {
            self.metas[1..]
                .iter()
                .map(|m| {
                    (
                        colour(m.group, m.shade),
                        format!("{} (pid {})", m.comm, m.pid),
                    )
                })
                .collect()
        } else {
            self.groups
                .iter()
                .enumerate()
                .map(|(i, (g, n))| {
                    let s = if *n == 1 { "" } else { "s" };
                    (colour(i, 0), format!("{g} ({n} task{s})"))
                })
                .collect()
        };
        items.push(("#dddddd".into(), "idle".into()));
        items.push(("#d62728".into(), "spinning".into()));
        for (i, (c, label)) in items.iter().enumerate() {
            let x = left + (i % 6) as f64 * 200.0;
            let y = ya + 30.0 + (i / 6) as f64 * 22.0;
            let _ = writeln!(
                o,
                r##"<rect x="{x:.1}" y="{y:.1}" width="14" height="14" fill="{c}"/><text x="{:.1}" y="{:.1}">{}</text>"##,
                x + 20.0,
                y + 11.0,
                esc(label)
            );
        }
        o += "</svg>\n";
        o
    }
}

impl Output for Timeline {
    fn begin(&mut self, ts: Time, _tasks: &[&TaskInfo], running: &[&TaskInfo]) {
        for (cpu, t) in running.iter().enumerate() {
            let k = self.key(t);
            self.cur[cpu] = (k, ts);
        }
    }

    fn record(&mut self, r: &Rec<'_>) {
        match r.kind {
            Kind::Switch { next, .. } => {
                let (k, since) = self.cur[r.cpu];
                self.add(r.cpu, Some(k), since, r.ts);
                let nk = self.key(next);
                self.cur[r.cpu] = (nk, r.ts);
            }
            Kind::SpinBegin { .. } => self.spin_since[r.cpu] = Some(r.ts),
            Kind::SpinEnd { .. } => {
                if let Some(s) = self.spin_since[r.cpu].take() {
                    self.add(r.cpu, None, s, r.ts);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, end: Time) -> std::io::Result<OutputSummary> {
        let end = end.min(self.end);
        for cpu in 0..self.cur.len() {
            let (k, since) = self.cur[cpu];
            self.add(cpu, Some(k), since, end);
        }
        let svg = self.svg(end.max(self.origin + 1));
        std::fs::write(&self.path, &svg)?;
        Ok(OutputSummary {
            what: self.path.display().to_string(),
            bytes: svg.len() as u64,
            events: 0,
            switches: 0,
        })
    }
}
