//! Where each booted CPU sits, as the line-transfer costs see it: its bus, its package and
//! its core.
//!
//! Design: a line moves between two CPUs at one of four distances — SMT siblings (one
//! core's caches), one bus, two buses of one package, two packages — each a named cost
//! ([`Costs::c2c_smt_line_ns`], [`Costs::c2c_line_ns`], [`Costs::c2c_cross_bus_line_ns`],
//! [`Costs::c2c_cross_package_line_ns`]); the nearer and farther figures a preset does not
//! set fall back to the next one. A "bus" is the unit within which a line moves at
//! `c2c_line_ns`: a ProFusion front-side bus, an Altix node, or on a modern part its
//! last-level cache (a Zen 3 CCX, an Intel mesh), as the preset says ([`Buses`]).
//!
//! Invariants: ids are dense from 0 in CPU order of first appearance; the layout of a
//! machine booted with `maxcpus=` is the first CPUs' of the preset's.

use crate::engine::Time;

use super::{Costs, CpuId, Preset};

/// What a preset's "bus" is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Buses {
    /// `n` CPUs to a bus, numbered bus by bus (ProFusion: 4; an Altix node: 2).
    Every(usize),
    /// One per last-level cache of the preset's topology.
    PerLlc,
}

/// Per booted CPU: bus, package, core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    bus: Vec<u16>,
    package: Vec<u16>,
    core: Vec<u32>,
    buses: usize,
    /// The first CPU of bus 0, and the first CPU on any other bus (if any).
    first_off_bus0: Option<CpuId>,
}

/// Dense ids from 0, in order of first appearance.
fn dense(ids: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut seen: std::collections::BTreeMap<usize, usize> = Default::default();
    ids.map(|i| {
        let next = seen.len();
        *seen.entry(i).or_insert(next)
    })
    .collect()
}

impl Layout {
    /// The layout of the first `cpus` CPUs of `p`.
    pub fn of(p: &Preset, cpus: usize) -> Layout {
        let bus: Vec<usize> = match (p.buses, &p.topology) {
            (Buses::Every(n), _) => (0..cpus).map(|c| c / n.max(1)).collect(),
            (Buses::PerLlc, Some(t)) => dense(t.llc[..cpus].iter().copied()),
            (Buses::PerLlc, None) => vec![0; cpus],
        };
        let package: Vec<usize> = match &p.topology {
            Some(t) if !t.package.is_empty() => dense(t.package[..cpus].iter().copied()),
            _ => bus.clone(),
        };
        let core: Vec<usize> = match &p.topology {
            Some(t) => t.core[..cpus].to_vec(),
            None => (0..cpus).collect(),
        };
        Layout {
            buses: bus.iter().max().map_or(1, |b| b + 1),
            first_off_bus0: bus.iter().position(|&b| b != 0),
            bus: bus.into_iter().map(|b| b as u16).collect(),
            package: package.into_iter().map(|b| b as u16).collect(),
            core: core.into_iter().map(|b| b as u32).collect(),
        }
    }

    /// CPUs laid out.
    pub fn cpus(&self) -> usize {
        self.bus.len()
    }

    /// Buses with a booted CPU.
    pub fn buses(&self) -> usize {
        self.buses
    }

    /// `cpu`'s bus.
    #[inline]
    pub fn bus_of(&self, cpu: CpuId) -> usize {
        usize::from(self.bus[cpu])
    }

    /// `cpu`'s package.
    #[inline]
    pub fn package_of(&self, cpu: CpuId) -> usize {
        usize::from(self.package[cpu])
    }

    /// A CPU on another bus than `cpu`'s: the first of bus 0, or from bus 0 the first
    /// off it (what a TTAS release's invalidation crosses to when spinners sit on
    /// several buses). `None` on a one-bus machine.
    pub fn other_bus_cpu(&self, cpu: CpuId) -> Option<CpuId> {
        let off = self.first_off_bus0?;
        Some(if self.bus[cpu] == 0 { off } else { 0 })
    }

    /// Moving one dirty line from `from`'s cache to `to`'s: by distance, SMT sibling,
    /// same bus, same package, other package.
    #[inline]
    pub fn line_ns(&self, c: &Costs, from: CpuId, to: CpuId) -> Time {
        if from == to {
            0
        } else if self.bus[from] == self.bus[to] {
            if self.core[from] == self.core[to] {
                c.c2c_smt_line_ns.unwrap_or(c.c2c_line_ns)
            } else {
                c.c2c_line_ns
            }
        } else if self.package[from] == self.package[to] {
            c.c2c_cross_bus_line_ns
        } else {
            c.c2c_cross_package_line_ns
                .unwrap_or(c.c2c_cross_bus_line_ns)
        }
    }

    /// What an invalidation reaching a sharer on `remote` adds over one within the bus.
    #[inline]
    pub fn invalidate_extra_ns(&self, c: &Costs, cpu: CpuId, remote: CpuId) -> Time {
        self.line_ns(c, remote, cpu).saturating_sub(c.c2c_line_ns)
    }
}
