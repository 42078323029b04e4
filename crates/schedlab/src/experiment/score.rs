//! Scores of a simulated table against the published one.
//!
//! * **order** — of the policy pairs within a row whose published values are more than
//!   10 % apart, the share the simulation orders the same way (a tie counts as wrong).
//! * **ratio** — median over all policy pairs within a row of the factor (≥ 1) between the
//!   simulated ratio `s_a/s_b` and the published ratio `p_a/p_b`.
//! * **magnitude** — median over cells of the factor (≥ 1) between simulated and published
//!   value (`max_factor` is the worst cell).
//! * **rho** — per policy, Spearman's rank correlation between published and simulated
//!   values across the rows (ties get average ranks; needs ≥ 3 cells).
//!
//! Cells without a published value, or whose simulation failed, are left out (and
//! counted in `missing`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Table;

/// The scores of one table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TableScore {
    /// Table id.
    pub id: String,
    /// Share of well-separated pairs ordered as published (`None`: no such pair).
    pub order: Option<f64>,
    /// Number of pairs behind `order`.
    pub order_pairs: usize,
    /// Median ratio factor.
    pub ratio: Option<f64>,
    /// Median magnitude factor.
    pub magnitude: Option<f64>,
    /// Worst magnitude factor.
    pub max_factor: Option<f64>,
    /// Spearman rho per policy.
    pub rho: BTreeMap<String, f64>,
    /// Cells compared.
    pub cells: usize,
    /// Cells left out (no published value or no simulated value).
    pub missing: usize,
}

/// Factor ≥ 1 between two positive numbers.
pub fn factor(a: f64, b: f64) -> f64 {
    if a >= b {
        a / b
    } else {
        b / a
    }
}

/// Median of a non-empty list.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[idx[k]] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson on ranks); `None` under 3 points or no spread.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 3 || x.len() != y.len() {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Cells of one row: (cell index, published, simulated).
type Row<'a> = (&'a str, Vec<(usize, f64, f64)>);

/// Score `table` given the simulated value of each cell (`None` = failed).
pub fn score(table: &Table, simulated: &[Option<f64>]) -> TableScore {
    let mut rows: Vec<Row> = Vec::new();
    let mut missing = 0;
    let mut per_policy: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut mags = Vec::new();
    for (i, cell) in table.cells.iter().enumerate() {
        let (Some(p), Some(s)) = (cell.value, simulated.get(i).copied().flatten()) else {
            missing += 1;
            continue;
        };
        if p > 0.0 && s > 0.0 {
            mags.push(factor(s, p));
        }
        let e = per_policy.entry(cell.policy.as_str()).or_default();
        e.0.push(p);
        e.1.push(s);
        match rows.iter_mut().find(|(r, _)| *r == cell.row) {
            Some((_, v)) => v.push((i, p, s)),
            None => rows.push((cell.row.as_str(), vec![(i, p, s)])),
        }
    }
    let (mut agree, mut pairs, mut ratios) = (0usize, 0usize, Vec::new());
    for (_, cells) in &rows {
        for a in 0..cells.len() {
            for b in a + 1..cells.len() {
                let (_, pa, sa) = cells[a];
                let (_, pb, sb) = cells[b];
                if pa > 0.0 && pb > 0.0 && factor(pa, pb) > 1.10 {
                    pairs += 1;
                    if (pa - pb).signum() == (sa - sb).signum() && sa != sb {
                        agree += 1;
                    }
                }
                if pa > 0.0 && pb > 0.0 && sa > 0.0 && sb > 0.0 {
                    ratios.push(factor(sa / sb, pa / pb));
                }
            }
        }
    }
    let rho = per_policy
        .into_iter()
        .filter_map(|(pol, (p, s))| spearman(&p, &s).map(|r| (pol.to_string(), r)))
        .collect();
    TableScore {
        id: table.id.clone(),
        order: (pairs > 0).then(|| agree as f64 / pairs as f64),
        order_pairs: pairs,
        ratio: median(ratios),
        max_factor: mags.iter().copied().reduce(f64::max),
        magnitude: median(mags),
        rho,
        cells: table.cells.len() - missing,
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cell, Table};
    use super::*;

    fn cell(row: &str, policy: &str, value: f64) -> Cell {
        Cell {
            cpus: 2,
            policy: policy.into(),
            workload: "w".into(),
            value: Some(value),
            row: row.into(),
            metric: None,
            machine: None,
            search: None,
        }
    }

    fn table(cells: Vec<Cell>) -> Table {
        Table {
            id: "T".into(),
            title: "t".into(),
            source: "s".into(),
            held_out: false,
            unit: "us".into(),
            better: "lower".into(),
            machine: "piii700-1m".into(),
            note: String::new(),
            on_request: false,
            cells,
        }
    }

    #[test]
    fn scores_a_hand_made_table() {
        // Row r1: a=10, b=20 (apart), c=10.5 (within 10 % of a). Row r2: a=30, b=15.
        let t = table(vec![
            cell("r1", "a", 10.0),
            cell("r1", "b", 20.0),
            cell("r1", "c", 10.5),
            cell("r2", "a", 30.0),
            cell("r2", "b", 15.0),
            cell("r3", "a", 5.0),
        ]);
        // Simulated: r1 a=12 b=18 c=30 ; r2 a=20 b=25 (wrong order) ; r3 a=10.
        let sim = vec![
            Some(12.0),
            Some(18.0),
            Some(30.0),
            Some(20.0),
            Some(25.0),
            Some(10.0),
        ];
        let s = score(&t, &sim);
        // Pairs apart by >10 %: r1 (a,b) ok, r1 (b,c) ok (20>10.5, 18<30: wrong!), r2 (a,b) wrong.
        // r1 (a,c): 10 vs 10.5 is within 10 %: not counted.
        assert_eq!(s.order_pairs, 3);
        assert!((s.order.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // Magnitude factors: 1.2, 1.111, 2.857, 1.5, 1.667, 2.0 -> median (1.5+1.667)/2.
        assert!((s.magnitude.unwrap() - (1.5 + 25.0 / 15.0) / 2.0).abs() < 1e-9);
        assert!((s.max_factor.unwrap() - 30.0 / 10.5).abs() < 1e-9);
        // Ratios: r1 a/b 0.5 vs 0.667 -> 1.333; a/c .952 vs .4 -> 2.381; b/c 1.905 vs .6 -> 3.175;
        // r2 a/b 2.0 vs 0.8 -> 2.5. Median of 4 = (2.381+2.5)/2.
        let expect = ((10.0 / 10.5) / (12.0 / 30.0) + 2.5) / 2.0;
        assert!((s.ratio.unwrap() - expect).abs() < 1e-9, "{:?}", s.ratio);
        // Policy a over rows: published 10,30,5 ; simulated 12,20,10 -> same ranks: rho 1.
        assert!((s.rho["a"] - 1.0).abs() < 1e-12);
        assert!(!s.rho.contains_key("b"), "two points are not enough");
        assert_eq!((s.cells, s.missing), (6, 0));
    }

    #[test]
    fn failed_cells_are_left_out() {
        let t = table(vec![cell("r", "a", 1.0), cell("r", "b", 2.0)]);
        let s = score(&t, &[Some(1.0), None]);
        assert_eq!((s.cells, s.missing, s.order_pairs), (1, 1, 0));
        assert_eq!(s.order, None);
        assert_eq!(s.magnitude, Some(1.0));
    }

    #[test]
    fn spearman_handles_ties_and_inversions() {
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).is_none());
        let r = spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(r > 0.9 && r < 1.0);
    }
}
