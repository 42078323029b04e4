//! Scheduling domains built from the machine's topology (modern.md §2, §6.1;
//! topology.c: sd_init, build_sched_groups, sd_degenerate, sd_parent_degenerate,
//! sched_init_numa; x86 smpboot.c: build_sched_topology).
//!
//! Levels bottom-up, as 6.1 and 6.12 build them on x86: **SMT** (threads of a core),
//! **MC** (CPUs sharing the last-level cache), **PKG** (x86's `cpu_cpu_mask`: the CPUs of
//! the CPU's NUMA node) unless some package holds several nodes
//! (`x86_has_numa_in_package`: NPS2/4, SNC), then **NODE** (`sched_init_numa`'s identity
//! distance: the node) and one **NUMA** level per larger distance in the SLIT (the nodes
//! within that distance of the CPU's node). A domain spanning one CPU is dropped, and so
//! is a parent spanning the same CPUs as its child (`sd_parent_degenerate`: with one
//! group its flags add nothing), so on one node PKG, NODE and NUMA fold away. Groups
//! are the child's spans (single CPUs at the bottom), listed from the CPU's own group
//! and then wrapping upward, as `build_sched_groups` links them. A NUMA level whose
//! distance exceeds `node_reclaim_distance` (`RECLAIM_DISTANCE` 30; AMD Zen sets 32,
//! arch/x86/kernel/cpu/amd.c) loses `SD_BALANCE_EXEC`, `SD_BALANCE_FORK` and
//! `SD_WAKE_AFFINE` (sd_init).
//!
//! What the presets give: the P6 boxes have single-threaded CPUs with a private L2 each
//! on one memory, so the kernel builds exactly one domain, PKG over all online CPUs with
//! one-CPU groups (`imbalance_pct` 117, `cache_nice_tries` 1), and no `sd_llc`: wake-ups
//! never scan for idle CPUs (§6.1 [I]). `modern-2s-64` has SMT, MC (package) and NUMA;
//! `numa-1024` (512 nodes of 2 CPUs) PKG (a node) and NUMA; `zen3-2s` SMT, MC (a CCX),
//! PKG and NUMA at NPS1 and SMT, MC, NODE, NUMA, NUMA at NPS2/4. Other shapes are for
//! tests ([`Topology::new`]).
//!
//! Not modelled: CLS (no preset's cores share an L2), ITMT/asym packing, and overlapping
//! NUMA spans (a SLIT that is not symmetric by blocks gives each node its own span, but
//! the groups are the child spans met first, not `build_overlap_sched_groups`' masks).

use crate::machine::{CpuId, CpuMask, Machine};

/// `SD_BALANCE_NEWIDLE`.
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
/// `SD_BALANCE_EXEC`.
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
/// `SD_BALANCE_FORK`.
pub const SD_BALANCE_FORK: u32 = 1 << 2;
/// `SD_BALANCE_WAKE` (set on no default level).
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
/// `SD_WAKE_AFFINE`.
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
/// `SD_SHARE_CPUCAPACITY` (SMT).
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
/// `SD_SHARE_LLC` (6.1: `SD_SHARE_PKG_RESOURCES`).
pub const SD_SHARE_LLC: u32 = 1 << 9;
/// `SD_SERIALIZE`.
pub const SD_SERIALIZE: u32 = 1 << 10;
/// `SD_PREFER_SIBLING`.
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
/// `SD_NUMA`.
pub const SD_NUMA: u32 = 1 << 14;

const SD_BASE: u32 =
    SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING;

/// Which CPUs share what: per CPU, the ids of its core, last-level cache, node and
/// package, and the node distances.
///
/// Invariant: the ids never change after [`Topology::new`], which derives `siblings` from
/// `core` once (the kernel's `cpu_smt_mask`), so a wake-up asks "which CPUs share my
/// core?" without a walk over every CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Core id per CPU (CPUs with equal ids are SMT siblings).
    pub core: Vec<usize>,
    /// LLC id per CPU.
    pub llc: Vec<usize>,
    /// NUMA node per CPU.
    pub node: Vec<usize>,
    /// Package per CPU.
    pub package: Vec<usize>,
    /// `distance[a][b]` between nodes (the SLIT).
    pub distance: Vec<Vec<u32>>,
    /// `node_reclaim_distance`.
    pub reclaim_distance: u32,
    /// Per CPU: the CPUs of its core, itself included, ascending.
    siblings: Vec<Vec<CpuId>>,
    /// True when some core has more than one CPU.
    smt: bool,
}

/// `RECLAIM_DISTANCE` (include/linux/topology.h).
pub const RECLAIM_DISTANCE: u32 = 30;

impl Topology {
    /// A topology from explicit ids (tests): one package per node, distance 10 within a
    /// node and 20 between two.
    pub fn new(core: Vec<usize>, llc: Vec<usize>, node: Vec<usize>) -> Topology {
        let package = node.clone();
        Topology::with_numa(core, llc, node, package, Vec::new(), RECLAIM_DISTANCE)
    }

    /// A topology with its packages and node distances (empty `distance`: 10 within a
    /// node, 20 between two).
    pub fn with_numa(
        core: Vec<usize>,
        llc: Vec<usize>,
        node: Vec<usize>,
        package: Vec<usize>,
        distance: Vec<Vec<u32>>,
        reclaim_distance: u32,
    ) -> Topology {
        assert!(core.len() == llc.len() && llc.len() == node.len() && node.len() == package.len());
        let mut of_core: std::collections::BTreeMap<usize, Vec<CpuId>> = Default::default();
        for (c, &k) in core.iter().enumerate() {
            of_core.entry(k).or_default().push(c);
        }
        let siblings: Vec<Vec<CpuId>> = core.iter().map(|k| of_core[k].clone()).collect();
        let smt = siblings.iter().any(|s| s.len() > 1);
        let nodes = node.iter().max().map_or(1, |m| m + 1);
        let distance = if distance.is_empty() {
            (0..nodes)
                .map(|a| (0..nodes).map(|b| if a == b { 10 } else { 20 }).collect())
                .collect()
        } else {
            assert!(distance.len() >= nodes, "a distance row per node");
            distance
        };
        Topology {
            core,
            llc,
            node,
            package,
            distance,
            reclaim_distance,
            siblings,
            smt,
        }
    }

    /// The CPUs sharing `cpu`'s core, `cpu` included, ascending (`cpu_smt_mask`).
    pub fn siblings(&self, cpu: CpuId) -> &[CpuId] {
        &self.siblings[cpu]
    }

    /// True when some core has SMT siblings.
    pub fn has_smt(&self) -> bool {
        self.smt
    }

    /// Distinct cores in `group` as `update_sg_lb_stats` counts them (`sg->cores`):
    /// runs of equal core ids, the group's CPUs being listed core by core.
    pub fn cores_in(&self, group: &[CpuId]) -> usize {
        group
            .iter()
            .enumerate()
            .filter(|&(k, &c)| k == 0 || self.core[c] != self.core[group[k - 1]])
            .count()
    }

    /// What the booted machine has: its preset's topology (the `host` preset's comes from
    /// sysfs), or for the P6 presets one thread per core, a private L2 per CPU, one node
    /// (see the module doc). `maxcpus=` keeps the first `m.cpus` CPUs.
    pub fn of_machine(m: &Machine) -> Topology {
        let n = m.cpus;
        match &m.preset.topology {
            Some(ids) => Topology::with_numa(
                ids.core[..n].to_vec(),
                ids.llc[..n].to_vec(),
                ids.node[..n].to_vec(),
                if ids.package.is_empty() {
                    ids.node[..n].to_vec()
                } else {
                    ids.package[..n].to_vec()
                },
                ids.distance.clone(),
                ids.node_reclaim_distance.unwrap_or(RECLAIM_DISTANCE),
            ),
            None => Topology::new((0..n).collect(), (0..n).collect(), vec![0; n]),
        }
    }

    /// True when some package holds CPUs of two nodes (`x86_has_numa_in_package`).
    pub fn numa_in_package(&self) -> bool {
        let mut node_of_package: std::collections::BTreeMap<usize, usize> = Default::default();
        self.package
            .iter()
            .zip(&self.node)
            .any(|(&p, &n)| *node_of_package.entry(p).or_insert(n) != n)
    }

    /// The distinct node distances of the booted nodes, ascending (`sched_init_numa`'s
    /// levels; the first is the identity distance).
    pub fn numa_distances(&self) -> Vec<u32> {
        let nodes: std::collections::BTreeSet<usize> = self.node.iter().copied().collect();
        let d: std::collections::BTreeSet<u32> = nodes
            .iter()
            .flat_map(|&a| nodes.iter().map(move |&b| (a, b)))
            .map(|(a, b)| self.distance[a][b])
            .collect();
        d.into_iter().collect()
    }

    /// CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.core.len()
    }
}

/// One scheduling domain of one CPU (`struct sched_domain`), with its balancing state.
#[derive(Clone, Debug)]
pub struct Domain {
    /// Level name (SMT, MC, PKG, NUMA).
    pub level: &'static str,
    /// CPUs spanned, ascending.
    pub span: Vec<CpuId>,
    /// The same CPUs as a mask (`sched_domain_span`): what `load_balance` starts its
    /// `env->cpus` from and tests CPUs against in one word read.
    pub span_mask: CpuMask,
    /// Groups, this CPU's first, then wrapping upward; each ascending.
    pub groups: Groups,
    /// Per group: the child level's flags (`sg->flags`; SMT groups carry
    /// `SD_SHARE_CPUCAPACITY`).
    pub group_flags: Vec<u32>,
    /// `SD_*` flags.
    pub flags: u32,
    /// `imbalance_pct`.
    pub imbalance_pct: u64,
    /// `cache_nice_tries`.
    pub cache_nice_tries: u32,
    /// `busy_factor`.
    pub busy_factor: u64,
    /// `min_interval`, ms.
    pub min_interval: u64,
    /// `max_interval`, ms.
    pub max_interval: u64,
    /// `balance_interval`, ms.
    pub balance_interval: u64,
    /// `last_balance`, jiffies.
    pub last_balance: u64,
    /// `nr_balance_failed`.
    pub nr_balance_failed: u32,
    /// `max_newidle_lb_cost`, ns.
    pub max_newidle_lb_cost: u64,
    /// `last_decay_max_lb_cost`, ns of simulated time.
    pub last_decay_max_lb_cost: u64,
    /// `newidle_call`: newly idle balances tried or skipped, halved at 1024 (NI_RANDOM).
    pub newidle_call: u32,
    /// `newidle_success`: of those, the ones that pulled, each weighted by the inverse of
    /// the odds it ran with.
    pub newidle_success: u32,
    /// `newidle_ratio`: the success per 1024 at the last halving; the odds, in 1024ths,
    /// that the next newly idle balance runs.
    pub newidle_ratio: u32,
}

/// A domain's groups (`sched_group`s) in one array: the balancer reads every group of
/// the domain that spans all CPUs at each newly idle balance, and 512 groups of their
/// own allocations were 512 pointer chases there.
///
/// Invariant: `bounds` starts at 0, ascends and ends at `cpus.len()`; group `g` is
/// `cpus[bounds[g]..bounds[g + 1]]`, `cores[g]` its cores as `sg->cores` counts them
/// ([`Topology::cores_in`]).
#[derive(Clone, Debug)]
pub struct Groups {
    cpus: Vec<CpuId>,
    bounds: Vec<u32>,
    cores: Vec<u32>,
}

impl Groups {
    /// No group yet, room for `cpus` CPUs in all.
    fn with_capacity(cpus: usize) -> Groups {
        Groups {
            cpus: Vec::with_capacity(cpus),
            bounds: vec![0],
            cores: Vec::new(),
        }
    }

    /// Append the group `group` of `cores` cores.
    fn push(&mut self, group: &[CpuId], cores: usize) {
        self.cpus.extend_from_slice(group);
        self.bounds.push(self.cpus.len() as u32);
        self.cores.push(cores as u32);
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.cores.len()
    }

    /// True when there is no group.
    pub fn is_empty(&self) -> bool {
        self.cores.is_empty()
    }

    /// Group `g`'s CPUs, ascending.
    #[inline]
    pub fn cpus(&self, g: usize) -> &[CpuId] {
        &self.cpus[self.bounds[g] as usize..self.bounds[g + 1] as usize]
    }

    /// Group `g`'s cores (`sg->cores`, [`Topology::cores_in`]).
    #[inline]
    pub fn cores(&self, g: usize) -> usize {
        self.cores[g] as usize
    }

    /// The groups' CPUs, group by group.
    pub fn iter(&self) -> impl Iterator<Item = &[CpuId]> + '_ {
        (0..self.len()).map(|g| self.cpus(g))
    }
}

impl Domain {
    /// CPUs spanned.
    pub fn span_weight(&self) -> usize {
        self.span.len()
    }

    /// True when the domain spans `cpu`.
    pub fn contains(&self, cpu: CpuId) -> bool {
        self.span_mask.test(cpu)
    }
}

struct LevelDef {
    name: &'static str,
    flags: u32,
    imbalance_pct: u64,
    cache_nice_tries: u32,
    /// What the level's span is, per CPU.
    span: LevelSpan,
}

/// The CPUs a level spans around a CPU.
#[derive(Clone, Copy)]
enum LevelSpan {
    Core,
    Llc,
    Node,
    /// The nodes within this distance of the CPU's node.
    Distance(u32),
}

/// `sd_init`'s defaults for a level with no `SD_SHARE_*` or `SD_NUMA` flag.
const fn plain_level(name: &'static str, span: LevelSpan) -> LevelDef {
    LevelDef {
        name,
        flags: SD_BASE,
        imbalance_pct: 117,
        cache_nice_tries: 1,
        span,
    }
}

/// The topology levels x86 gives `build_sched_domains`, NUMA's appended
/// (`build_sched_topology`, `sched_init_numa`).
fn levels_of(t: &Topology) -> Vec<LevelDef> {
    let mut levels = vec![
        LevelDef {
            name: "SMT",
            flags: SD_BASE | SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
            imbalance_pct: 110,
            cache_nice_tries: 0,
            span: LevelSpan::Core,
        },
        LevelDef {
            name: "MC",
            flags: SD_BASE | SD_SHARE_LLC,
            imbalance_pct: 117,
            cache_nice_tries: 1,
            span: LevelSpan::Llc,
        },
    ];
    if !t.numa_in_package() {
        levels.push(plain_level("PKG", LevelSpan::Node));
    }
    levels.push(plain_level("NODE", LevelSpan::Node));
    for d in t.numa_distances().into_iter().skip(1) {
        let mut flags = (SD_BASE & !SD_PREFER_SIBLING) | SD_NUMA | SD_SERIALIZE;
        if d > t.reclaim_distance {
            flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        }
        levels.push(LevelDef {
            name: "NUMA",
            flags,
            imbalance_pct: 117,
            cache_nice_tries: 2,
            span: LevelSpan::Distance(d),
        });
    }
    levels
}

/// Build every CPU's domains, bottom-up (`build_sched_domains`).
pub fn build_domains(t: &Topology) -> Vec<Vec<Domain>> {
    let n = t.nr_cpus();
    let levels = levels_of(t);
    // Per level, the CPUs of each id, ascending: a span is a lookup, so building every
    // CPU's domains is O(CPUs²) in all, not O(CPUs³) (1024 CPUs: a few ms). A NUMA
    // level's id is the node its span is centred on.
    let id_of = |level: usize, cpu: CpuId| -> usize {
        match levels[level].span {
            LevelSpan::Core => t.core[cpu],
            LevelSpan::Llc => t.llc[cpu],
            LevelSpan::Node | LevelSpan::Distance(_) => t.node[cpu],
        }
    };
    let members: Vec<std::collections::BTreeMap<usize, Vec<CpuId>>> = (0..levels.len())
        .map(|level| {
            let mut m: std::collections::BTreeMap<usize, Vec<CpuId>> = Default::default();
            match levels[level].span {
                LevelSpan::Distance(d) => {
                    let nodes: std::collections::BTreeSet<usize> = t.node.iter().copied().collect();
                    for &a in &nodes {
                        let span = (0..n).filter(|&c| t.distance[a][t.node[c]] <= d);
                        m.insert(a, span.collect());
                    }
                }
                _ => {
                    for c in 0..n {
                        m.entry(id_of(level, c)).or_default().push(c);
                    }
                }
            }
            m
        })
        .collect();
    let span_of = |level: usize, cpu: CpuId| -> &[CpuId] { &members[level][&id_of(level, cpu)] };
    let mut covered = vec![false; n];
    (0..n)
        .map(|cpu| {
            let mut out: Vec<Domain> = Vec::new();
            let mut child_span: &[CpuId] = &[cpu];
            let mut child_level: Option<usize> = None;
            for (li, l) in levels.iter().enumerate() {
                let span = span_of(li, cpu);
                if span.len() <= 1 || span == child_span {
                    // sd_degenerate / sd_parent_degenerate: nothing new to balance.
                    continue;
                }
                // Groups: the spans of the child level's domains of the CPUs spanned,
                // starting from this CPU's and wrapping (build_sched_groups).
                let mut groups = Groups::with_capacity(span.len());
                let mut group_flags = Vec::new();
                let start = span.iter().position(|&c| c == cpu).unwrap_or(0);
                for k in 0..span.len() {
                    let c = &span[(start + k) % span.len()];
                    if covered[*c] {
                        continue;
                    }
                    let g = match child_level {
                        Some(cl) => span_of(cl, *c),
                        None => std::slice::from_ref(c),
                    };
                    for &m in g {
                        covered[m] = true;
                    }
                    group_flags.push(child_level.map_or(0, |cl| levels[cl].flags));
                    groups.push(g, t.cores_in(g));
                }
                for &c in span {
                    covered[c] = false;
                }
                let w = span.len() as u64;
                out.push(Domain {
                    level: l.name,
                    span: span.to_vec(),
                    span_mask: CpuMask::from_cpus(span.iter().copied()),
                    groups,
                    group_flags,
                    flags: l.flags,
                    imbalance_pct: l.imbalance_pct,
                    cache_nice_tries: l.cache_nice_tries,
                    busy_factor: 16,
                    min_interval: w,
                    max_interval: 2 * w,
                    balance_interval: w,
                    last_balance: 0,
                    nr_balance_failed: 0,
                    max_newidle_lb_cost: 0,
                    last_decay_max_lb_cost: 0,
                    // sd_init: "50% success rate".
                    newidle_call: 512,
                    newidle_success: 256,
                    newidle_ratio: 512,
                });
                child_span = span;
                child_level = Some(li);
            }
            out
        })
        .collect()
}

/// `sd_llc` of each CPU: the index of its highest `SD_SHARE_LLC` domain, if any.
pub fn sd_llc(domains: &[Vec<Domain>]) -> Vec<Option<usize>> {
    domains
        .iter()
        .map(|ds| ds.iter().rposition(|d| d.flags & SD_SHARE_LLC != 0))
        .collect()
}
