//! Today's machines, from published descriptions: `zen3-2s` (2 × EPYC 7763), `spr-2s`
//! (2 × Xeon Platinum 8480+), `icx-2s` (2 × Xeon Gold 6338) and `haswell-4c` (Core
//! i7-4790). Every topology fact and every cost carries its source, printed by
//! `schedlab list machines --detail NAME`; `docs/machine-facts.md` holds the tables they
//! were read from.
//!
//! Design: a [`Part`] is the facts of one processor — clock, caches, cores, threads and
//! LLCs per socket, nodes per socket, the SLIT, the measured line ping-pong at each
//! distance, the idle-exit latency of the kernel's C1 table — and [`build`] turns a part
//! and a socket count into a [`Preset`]: CPUs numbered as Linux enumerates them (the
//! first thread of every core, package by package, then the second threads: siblings are
//! `n` and `n + cores`), one "bus" per LLC ([`Buses::PerLlc`]), and a cost table. The
//! kernel paths' costs are the shipped host file's measurements (`data/host.json`, a
//! 2.45 GHz Zen 3 core under KVM) taken as cycle counts at the part's base clock; what
//! that file did not measure is the P6 table's cycles at that clock; the memory system
//! and the IPIs are the part's own, since a virtual machine's IPIs (VM exits) are not a
//! bare-metal box's.
//!
//! Variants: `sockets=N` boots the first N packages with all their threads, numbered as
//! an N-socket box would number them; `nps=1|2|4` (zen3-2s) splits each socket into NUMA
//! nodes as the BIOS option does. Each variant is built once and kept for the run.
//!
//! Invariants: a preset's CPU count is `sockets × cores × threads`; LLC, node and package
//! ids nest (an LLC within a node within a package); `sources` names every cost field.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use crate::engine::Time;

use super::layout::Buses;
use super::preset::{piii700, Costs, CpuIds, Limits, Preset};

/// The names of the presets this module builds.
pub const NAMES: &[&str] = &["zen3-2s", "spr-2s", "icx-2s", "haswell-4c"];

/// The facts of one processor part and the box it sits in.
struct Part {
    name: &'static str,
    /// One line for `list machines` (the full box).
    description: &'static str,
    /// Packages in the full box.
    sockets: usize,
    cores_per_socket: usize,
    threads_per_core: usize,
    cores_per_llc: usize,
    /// Base clock, MHz.
    mhz: u64,
    l1: (u64, u64),
    /// The last private level: (bytes, ways).
    l2: (u64, u64),
    /// L2 load-to-use, ns per line.
    l2_line_ns: Time,
    /// An L2 miss as the part serves it: its L3.
    llc_ns: Time,
    /// Streaming read from DRAM, ns per 64-byte line, one core.
    mem_line_ns: Time,
    /// Line ping-pong: SMT siblings, same LLC, other LLC of the package, other package.
    smt_ns: Time,
    llc_c2c_ns: Time,
    cross_llc_ns: Option<Time>,
    cross_package_ns: Time,
    /// Exit latency of the shallowest halt state (C1) of the kernel's idle table.
    c1_exit_ns: Time,
    /// SLIT within a package (between its nodes) and between packages.
    slit_near: u32,
    slit_far: u32,
    /// `node_reclaim_distance` as the kernel sets it on this vendor.
    reclaim_distance: Option<u32>,
    /// NUMA nodes per socket the BIOS offers (AMD's NPS); `[1]`: none to choose.
    nps: &'static [usize],
    /// RAM of the full box, MB.
    ram_mb: u64,
    /// Source of each fact above, by cost field or topology fact.
    sources: &'static [(&'static str, &'static str)],
}

const MILAN_SOURCES: &[(&str, &str)] = &[
    ("topology", "2 x 64 cores x 2 threads; LLC CPUs 0-7,128-135 ... (8 cores a CCX, 16 CCXs); NPS1 node0 0-63,128-191 (posted lscpu of 2 x EPYC 7763, docs/machine-facts.md)"),
    ("slit", "10 / 12 within a socket / 32 between sockets (posted numactl -H of a 2 x EPYC 7Y83, NPS2; NPS4 taken alike)"),
    ("reclaim_distance", "32: arch/x86/kernel/cpu/amd.c init_amd_zen_common (family >= 0x17)"),
    ("cpu_mhz", "2.45 GHz base (AMD EPYC 7763 product page; Techgage Milan SKU table)"),
    ("l1", "32 KiB 8-way L1d per core (lscpu -C of an EPYC 7Y83)"),
    ("l2", "512 KiB 8-way per core (lscpu -C of an EPYC 7Y83)"),
    ("l2_line_ns", "measured on the shipped host (a 2.45 GHz Zen 3 core): dependent loads over half the L2"),
    ("mem_latency_ns", "measured on the shipped host: dependent loads over 4 x L2, served by the 32 MiB L3 (16-21 ns in a 7Y83's published latency table)"),
    ("mem_line_ns", "measured on the shipped host: streaming read of 64 MB, per line"),
    ("c2c_smt_line_ns", "line ping-pong between SMT siblings ~10 ns (nviennot/core-to-core-latency, EPYC 7R13 and 7773X, Milan)"),
    ("c2c_line_ns", "line ping-pong within a CCX 20-26 ns, 23 taken (nviennot/core-to-core-latency, EPYC 7R13, 7773X)"),
    ("c2c_cross_bus_line_ns", "line ping-pong between CCXs of one socket, median 107 ns (nviennot/core-to-core-latency, EPYC 7R13, 7773X)"),
    ("c2c_cross_package_line_ns", "line ping-pong between sockets, median 197 ns (nviennot/core-to-core-latency, EPYC 7R13)"),
    ("idle_exit_ns", "C1 (ACPI FFH MWAIT 0x0) exit latency 1 us on every posted AMD cpuidle listing (LKML 24 Oct 2021, \"thread wakeup time increased up to 3x\")"),
    ("ram_mb", "512 GB, as Perlmutter's 2 x 7763 CPU nodes (NERSC system description); INFERRED for the class"),
];

const SPR_SOURCES: &[(&str, &str)] = &[
    ("topology", "2 x 56 cores x 2 threads; one LLC a socket; node0 0-55,112-167, node1 56-111,168-223 (posted lscpu of 2 x Xeon 8480+/8480C, docs/machine-facts.md)"),
    ("slit", "10 / 21 between sockets (numactl -H of Aurora's Xeon Max nodes, SNC off, DDR nodes: argonne-lcf user guide)"),
    ("reclaim_distance", "RECLAIM_DISTANCE 30 (include/linux/topology.h): Intel sets none"),
    ("cpu_mhz", "2.0 GHz base (Intel ARK 231746)"),
    ("l1", "48 KiB 12-way L1d per core (lscpu of an 8480+)"),
    ("l2", "2 MiB 16-way per core (lscpu of an 8480+; Xeon Max 9480 lscpu)"),
    ("l2_line_ns", "INFERRED: Golden Cove's 16-cycle L2 load-to-use at the 2.0 GHz base clock"),
    ("mem_latency_ns", "INFERRED: an L3 hit on the mesh about half of a modified line pulled from another core on the same mesh (ICX's MLC 64 ns), scaled by SPR's larger mesh (4 dies): 35 ns; no SPR L3 latency was found"),
    ("mem_line_ns", "INFERRED: one server core streams ~10 GB/s from DRAM, as the shipped host measured (6 ns a line)"),
    ("c2c_smt_line_ns", "INFERRED: Ice Lake-SP's 8.1 ns between siblings (8375C); SPR's not found"),
    ("c2c_line_ns", "INFERRED: 70 ns within a socket, from a second-hand summary of Chips and Cheese's 8480 data (\"under 100 ns\") and ICX's 51 ns median on a smaller mesh"),
    ("c2c_cross_bus_line_ns", "line between sockets ~120-150 ns, 135 taken (second-hand summary of Chips and Cheese's 8480 core-to-core data)"),
    ("c2c_cross_package_line_ns", "= c2c_cross_bus_line_ns: one LLC a package, so a bus is a package"),
    ("idle_exit_ns", "C1 exit latency 1 us (drivers/idle/intel_idle.c spr_cstates, Linux 6.12)"),
    ("ram_mb", "INFERRED: 512 GB, 16 x 32 GB DDR5 (8 channels a socket, one DIMM each)"),
];

const ICX_SOURCES: &[(&str, &str)] = &[
    ("topology", "2 x 32 cores x 2 threads; one LLC a socket; node0 0-31,64-95, node1 32-63,96-127 (posted lscpu of 2 x Xeon Gold 6338)"),
    ("slit", "10 / 21 (posted lscpu/numactl of 2 x Xeon Gold 6338)"),
    ("reclaim_distance", "RECLAIM_DISTANCE 30 (include/linux/topology.h): Intel sets none"),
    ("cpu_mhz", "2.0 GHz base (Intel ARK 212285)"),
    ("l1", "48 KiB 12-way L1d per core (posted lscpu of a 6338)"),
    ("l2", "1.25 MiB 20-way per core (posted lscpu of a 6338)"),
    ("l2_line_ns", "INFERRED: Sunny Cove's 14-cycle L2 load-to-use at the 2.0 GHz base clock"),
    ("mem_latency_ns", "INFERRED: an L3 hit on the mesh about half of a modified line pulled from another core (Intel MLC on a Xeon 8360Y: 64 ns): 32 ns"),
    ("mem_line_ns", "INFERRED: one server core streams ~10 GB/s from DRAM, as the shipped host measured (6 ns a line)"),
    ("c2c_smt_line_ns", "line ping-pong between siblings 8.1 ns (nviennot/core-to-core-latency, Xeon 8375C, Ice Lake-SP)"),
    ("c2c_line_ns", "line ping-pong within a socket, median 51 ns (nviennot/core-to-core-latency, Xeon 8375C)"),
    ("c2c_cross_bus_line_ns", "line ping-pong between sockets, median 108 ns (nviennot/core-to-core-latency, Xeon 8375C)"),
    ("c2c_cross_package_line_ns", "= c2c_cross_bus_line_ns: one LLC a package, so a bus is a package"),
    ("idle_exit_ns", "C1 exit latency 1 us (drivers/idle/intel_idle.c icx_cstates, Linux 6.12)"),
    ("ram_mb", "INFERRED: 256 GB, 16 x 16 GB DDR4 (8 channels a socket)"),
];

const HASWELL_SOURCES: &[(&str, &str)] = &[
    ("topology", "4 cores x 2 threads, siblings n and n+4 (a 4C/8T Intel client's dmesg: domain-0 span=0,4 level=SMT, LKML 24 Jan 2022); one 8 MiB LLC; one node"),
    ("slit", "one node: none"),
    ("reclaim_distance", "one node: unused"),
    ("cpu_mhz", "3.6 GHz base (i7-4790 spec page; CPU-Z report, 3600 MHz stock)"),
    ("l1", "32 KiB 8-way L1d per core (Core Temp report for the 4790K; 4770K cpuid dump)"),
    ("l2", "256 KiB 8-way per core (same reports)"),
    ("l2_line_ns", "L2 hit 12 cycles at 3.6 GHz (7-cpu.com, Haswell)"),
    ("mem_latency_ns", "L3 hit 36 cycles at 3.6 GHz (7-cpu.com, Haswell)"),
    ("mem_line_ns", "INFERRED: a desktop core streams ~16 GB/s from dual-channel DDR3-1600 (25.6 GB/s peak): 4 ns a line"),
    ("c2c_smt_line_ns", "INFERRED: ~7 ns between siblings (Skylake 6.9, Broadwell-EP 7.6: nviennot/core-to-core-latency)"),
    ("c2c_line_ns", "line ping-pong between cores 20.5-21.6 ns, 21 taken (nviennot/core-to-core-latency, i5-4590, same die)"),
    ("c2c_cross_bus_line_ns", "unused: one LLC, so one bus (set to c2c_line_ns)"),
    ("c2c_cross_package_line_ns", "= c2c_line_ns: one package"),
    ("idle_exit_ns", "C1 exit latency 2 us (drivers/idle/intel_idle.c hsw_cstates, Linux 6.12)"),
    ("ram_mb", "INFERRED: 16 GB, a typical i7-4790 desktop (2 x 8 GB DDR3)"),
];

const PARTS: &[Part] = &[
    Part {
        name: "zen3-2s",
        description: "2 x AMD EPYC 7763 (Zen 3): 2 x 64 cores x 2 SMT (256 CPUs), 16 CCXs of \
                      8 cores with 32 MB L3; nps=1|2|4, sockets=1|2",
        sockets: 2,
        cores_per_socket: 64,
        threads_per_core: 2,
        cores_per_llc: 8,
        mhz: 2445,
        l1: (32 * 1024, 8),
        l2: (512 * 1024, 8),
        l2_line_ns: 3,
        llc_ns: 18,
        mem_line_ns: 6,
        smt_ns: 10,
        llc_c2c_ns: 23,
        cross_llc_ns: Some(107),
        cross_package_ns: 197,
        c1_exit_ns: 1_000,
        slit_near: 12,
        slit_far: 32,
        reclaim_distance: Some(32),
        nps: &[1, 2, 4],
        ram_mb: 512 * 1024,
        sources: MILAN_SOURCES,
    },
    Part {
        name: "spr-2s",
        description: "2 x Intel Xeon Platinum 8480+ (Sapphire Rapids): 2 x 56 cores x 2 SMT \
                      (224 CPUs), one 105 MB LLC a socket; sockets=1|2",
        sockets: 2,
        cores_per_socket: 56,
        threads_per_core: 2,
        cores_per_llc: 56,
        mhz: 2000,
        l1: (48 * 1024, 12),
        l2: (2 * 1024 * 1024, 16),
        l2_line_ns: 8,
        llc_ns: 35,
        mem_line_ns: 6,
        smt_ns: 8,
        llc_c2c_ns: 70,
        cross_llc_ns: None,
        cross_package_ns: 135,
        c1_exit_ns: 1_000,
        slit_near: 10,
        slit_far: 21,
        reclaim_distance: None,
        nps: &[1],
        ram_mb: 512 * 1024,
        sources: SPR_SOURCES,
    },
    Part {
        name: "icx-2s",
        description: "2 x Intel Xeon Gold 6338 (Ice Lake-SP): 2 x 32 cores x 2 SMT (128 CPUs), \
                      one 48 MB LLC a socket; sockets=1|2",
        sockets: 2,
        cores_per_socket: 32,
        threads_per_core: 2,
        cores_per_llc: 32,
        mhz: 2000,
        l1: (48 * 1024, 12),
        l2: (1280 * 1024, 20),
        l2_line_ns: 7,
        llc_ns: 32,
        mem_line_ns: 6,
        smt_ns: 8,
        llc_c2c_ns: 51,
        cross_llc_ns: None,
        cross_package_ns: 108,
        c1_exit_ns: 1_000,
        slit_near: 10,
        slit_far: 21,
        reclaim_distance: None,
        nps: &[1],
        ram_mb: 256 * 1024,
        sources: ICX_SOURCES,
    },
    Part {
        name: "haswell-4c",
        description: "Intel Core i7-4790 (Haswell desktop): 4 cores x 2 SMT (8 CPUs), one \
                      8 MB LLC",
        sockets: 1,
        cores_per_socket: 4,
        threads_per_core: 2,
        cores_per_llc: 4,
        mhz: 3600,
        l1: (32 * 1024, 8),
        l2: (256 * 1024, 8),
        l2_line_ns: 3,
        llc_ns: 10,
        mem_line_ns: 4,
        smt_ns: 7,
        llc_c2c_ns: 21,
        cross_llc_ns: None,
        cross_package_ns: 21,
        c1_exit_ns: 2_000,
        slit_near: 10,
        slit_far: 10,
        reclaim_distance: None,
        nps: &[1],
        ram_mb: 16 * 1024,
        sources: HASWELL_SOURCES,
    },
];

/// A variant of a part: how many of its sockets boot, and NUMA nodes per socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variant {
    /// Packages booted.
    pub sockets: usize,
    /// NUMA nodes per package (zen3-2s's NPS).
    pub nps: usize,
}

fn part(name: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.name == name)
}

/// The preset `name` in its full configuration (all sockets, one node per socket), if
/// this module builds it.
pub fn find(name: &str) -> Option<&'static Preset> {
    let p = part(name)?;
    Some(variant_of(
        p,
        Variant {
            sockets: p.sockets,
            nps: 1,
        },
    ))
}

/// The preset `name` with `sockets` packages (`None`: all) and `nps` nodes a package
/// (`None`: 1), or why not, in one line.
pub fn variant(
    name: &str,
    sockets: Option<usize>,
    nps: Option<usize>,
) -> Result<&'static Preset, String> {
    let Some(p) = part(name) else {
        let (what, accepted) = match (sockets, nps) {
            (_, Some(_)) => ("nps=", "zen3-2s"),
            _ => ("sockets=", "zen3-2s, spr-2s, icx-2s, haswell-4c"),
        };
        return Err(format!(
            "{what} is not an option of machine {name} (accepted by: {accepted})"
        ));
    };
    let sockets = sockets.unwrap_or(p.sockets);
    if sockets == 0 || sockets > p.sockets {
        return Err(format!(
            "sockets={sockets} is not possible on {name}: it has {} (accepted: 1..={})",
            p.sockets, p.sockets
        ));
    }
    let nps = nps.unwrap_or(1);
    if p.nps.len() == 1 && nps != 1 {
        return Err(format!(
            "nps={nps} is not an option of machine {name} (NPS is AMD's; accepted by: zen3-2s)"
        ));
    }
    if !p.nps.contains(&nps) {
        let accepted: Vec<String> = p.nps.iter().map(usize::to_string).collect();
        return Err(format!(
            "nps={nps} is not possible (accepted: {})",
            accepted.join(", ")
        ));
    }
    Ok(variant_of(p, Variant { sockets, nps }))
}

/// Each variant built so far, kept for the process's life (a run names a few).
fn variant_of(p: &'static Part, v: Variant) -> &'static Preset {
    static BUILT: OnceLock<Mutex<BTreeMap<(&'static str, Variant), &'static Preset>>> =
        OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    built
        .entry((p.name, v))
        .or_insert_with(|| Box::leak(Box::new(build(p, v))))
}

/// The CPU ids of `v` of `p`, numbered as Linux enumerates them: thread `t` of core `k`
/// of package `s` is CPU `t × sockets × cores + s × cores + k`.
fn enumerate(p: &Part, v: Variant) -> CpuIds {
    let (cores, n) = (p.cores_per_socket, v.sockets * p.cores_per_socket);
    let cpus = n * p.threads_per_core;
    let socket = |c: usize| (c % n) / cores;
    let core_in = |c: usize| c % cores;
    let llcs_per_socket = cores / p.cores_per_llc;
    let cores_per_node = cores / v.nps;
    let nodes = v.sockets * v.nps;
    let node_of = |c: usize| socket(c) * v.nps + core_in(c) / cores_per_node;
    let distance = (0..nodes)
        .map(|a| {
            (0..nodes)
                .map(|b| match (a == b, a / v.nps == b / v.nps) {
                    (true, _) => 10,
                    (false, true) => p.slit_near,
                    (false, false) => p.slit_far,
                })
                .collect()
        })
        .collect();
    CpuIds {
        core: (0..cpus).map(|c| c % n).collect(),
        llc: (0..cpus)
            .map(|c| socket(c) * llcs_per_socket + core_in(c) / p.cores_per_llc)
            .collect(),
        node: (0..cpus).map(node_of).collect(),
        package: (0..cpus).map(socket).collect(),
        distance: if nodes > 1 { distance } else { Vec::new() },
        node_reclaim_distance: p.reclaim_distance,
    }
}

/// The host file's kernel-path costs as cycles at `mhz`; what it did not measure, the
/// P6 table's cycles at `mhz`.
fn kernel_paths(mhz: u64) -> Costs {
    let h = super::host::HostFile::parse(super::host::SHIPPED, "data/host.json")
        .expect("the shipped host file loads (a unit test checks it)");
    let (hc, p6) = (h.costs, piii700(1024 * 1024));
    let host = |ns: Time| ns * hc.cpu_mhz / mhz;
    let era = |ns: Time| ns * 700 / mhz;
    Costs {
        cpu_mhz: mhz,
        syscall_ns: host(hc.syscall_ns),
        switch_ns: host(hc.switch_ns),
        switch_mm_ns: host(hc.switch_mm_ns),
        schedule_ns: host(hc.schedule_ns),
        wakeup_ns: host(hc.wakeup_ns),
        task_examine_ns: host(hc.task_examine_ns),
        waitq_entry_ns: host(hc.waitq_entry_ns),
        lock_ns: host(hc.lock_ns),
        pipe_call_ns: host(hc.pipe_call_ns),
        unix_call_ns: host(hc.unix_call_ns),
        skb_cold_ns: hc.skb_cold_ns.map(host),
        // Depths are this host's cache geometry, not the part's: the step applies.
        skb_depth_ns: super::preset::DepthCurve::EMPTY,
        skb_remote_ns: hc.skb_remote_ns.map(host),
        skb_page_shared_ns: hc.skb_page_shared_ns.map(host),
        skb_shared_ns: super::preset::DepthCurve::EMPTY,
        task_refill_ns: super::preset::DepthCurve::EMPTY,
        wake_refill_ns: super::preset::DepthCurve::EMPTY,
        mm_refill_ns: super::preset::DepthCurve::EMPTY,
        copy_ns_per_kb: host(hc.copy_ns_per_kb),
        sum_ns_per_kb: host(hc.sum_ns_per_kb),
        fork_ns: host(hc.fork_ns),
        fork_child_ns: host(hc.fork_child_ns),
        clone_ns: host(hc.clone_ns),
        file_create_ns: host(hc.file_create_ns),
        exit_ns: host(hc.exit_ns),
        wait_ns: host(hc.wait_ns),
        poll_ns: host(hc.poll_ns),
        poll_fd_ns: host(hc.poll_fd_ns),
        tcp_sendmsg_ns: era(p6.tcp_sendmsg_ns),
        tcp_recvmsg_ns: era(p6.tcp_recvmsg_ns),
        tcp_segment_ns: era(p6.tcp_segment_ns),
        tcp_ack_ns: era(p6.tcp_ack_ns),
        tcp_connect_ns: era(p6.tcp_connect_ns),
        udp_sendmsg_ns: era(p6.udp_sendmsg_ns),
        udp_recvmsg_ns: era(p6.udp_recvmsg_ns),
        exec_ns: era(p6.exec_ns),
        tick_ns: era(p6.tick_ns),
        irq_ns: era(p6.irq_ns),
        ..hc
    }
}

/// Cycles of a bare-metal IPI (Shinjuku, NSDI 2019, Table 1: posted interrupts without
/// VM exits on a 2.3 GHz Xeon E5-2658): the sender's 298, the rest of the 1 993 to the
/// handler.
const IPI_SEND_CYCLES: u64 = 298;
const IPI_DELIVERY_CYCLES: u64 = 1_993 - 298;
const IPI_MEASURED_MHZ: u64 = 2_300;

fn build(p: &Part, v: Variant) -> Preset {
    let ids = enumerate(p, v);
    let cpus = ids.core.len();
    let mut costs = kernel_paths(p.mhz);
    costs.l1_bytes = p.l1.0;
    costs.l1_ways = p.l1.1;
    costs.l2_bytes = p.l2.0;
    costs.l2_ways = p.l2.1;
    costs.l2_line_ns = p.l2_line_ns;
    costs.mem_latency_ns = p.llc_ns;
    costs.mem_line_ns = p.mem_line_ns;
    costs.c2c_smt_line_ns = Some(p.smt_ns);
    costs.c2c_line_ns = p.llc_c2c_ns;
    costs.c2c_cross_bus_line_ns = p.cross_llc_ns.unwrap_or(p.cross_package_ns);
    costs.c2c_cross_package_line_ns = p.cross_llc_ns.map(|_| p.cross_package_ns);
    costs.upgrade_ns = p.llc_c2c_ns / 2;
    // The delivery is the interconnect's (ns, not the core's clock); the send is the
    // core's ICR write.
    costs.ipi_send_ns = IPI_SEND_CYCLES * 1000 / p.mhz;
    costs.ipi_latency_ns = IPI_DELIVERY_CYCLES * 1000 / IPI_MEASURED_MHZ;
    costs.idle_exit_ns = p.c1_exit_ns;
    costs.idle_poll = false;
    let ram_mb = p.ram_mb * v.sockets as u64 / p.sockets as u64;
    let name: &'static str = p.name;
    let description: &'static str = if v.sockets == p.sockets && v.nps == 1 {
        p.description
    } else {
        Box::leak(
            format!(
                "{} [sockets={}, nps={}: {cpus} CPUs]",
                p.description, v.sockets, v.nps
            )
            .into_boxed_str(),
        )
    };
    Preset {
        name,
        description,
        cpus,
        buses: Buses::PerLlc,
        shared_bus: false,
        topology: Some(ids),
        costs,
        limits: Limits {
            ram_mb,
            // fork_init: max_threads = RAM / (8 × THREAD_SIZE), 16 KB stacks.
            max_threads: ram_mb * 1024 / (8 * 16),
            nproc: ram_mb * 1024 / (8 * 16) / 2,
            // files_init: 10 % of RAM in 1 KB units.
            file_max: ram_mb * 1024 / 10,
            // pid_idr_init: 1024 per possible CPU, at least 32768.
            pid_max: (1024 * cpus as u64).max(32768),
            nproc_binds_root: false,
            kmem_kb: None,
        },
        lowmem_mb: None,
        limits_measured: false,
        pid_max_sysctl: None,
        file_max_sysctl: None,
    }
}

/// Where each cost and topology fact of `name` comes from, if this module builds it:
/// the part's own facts, then the rules [`kernel_paths`] and [`build`] apply.
pub fn sources(name: &str) -> Option<Vec<(&'static str, String)>> {
    let p = part(name)?;
    let mut out: Vec<(&'static str, String)> =
        p.sources.iter().map(|&(k, v)| (k, v.to_string())).collect();
    let h = super::host::HostFile::parse(super::host::SHIPPED, "data/host.json").ok()?;
    let scaled = |k: &str| match h.sources.get(k) {
        Some(how) => format!(
            "INFERRED: the shipped host's cycles at {} MHz ({how})",
            p.mhz
        ),
        None => "the shipped host file did not measure it: the field's default (see its doc)"
            .to_string(),
    };
    let era = format!(
        "INFERRED: the P6 table's cycles at {} MHz (the host file did not measure it)",
        p.mhz
    );
    let own = |k: &str| out.iter().any(|(o, _)| *o == k);
    let mut add: Vec<(&'static str, String)> = Vec::new();
    for k in [
        "syscall_ns",
        "switch_ns",
        "switch_mm_ns",
        "schedule_ns",
        "wakeup_ns",
        "task_examine_ns",
        "waitq_entry_ns",
        "lock_ns",
        "pipe_call_ns",
        "unix_call_ns",
        "skb_cold_ns",
        "copy_ns_per_kb",
        "sum_ns_per_kb",
        "fork_ns",
        "fork_child_ns",
        "clone_ns",
        "file_create_ns",
        "exit_ns",
        "wait_ns",
        "poll_ns",
        "poll_fd_ns",
    ] {
        if !own(k) {
            add.push((k, scaled(k)));
        }
    }
    for k in [
        "tcp_sendmsg_ns",
        "tcp_recvmsg_ns",
        "tcp_segment_ns",
        "tcp_ack_ns",
        "tcp_connect_ns",
        "udp_sendmsg_ns",
        "udp_recvmsg_ns",
        "exec_ns",
        "tick_ns",
        "irq_ns",
    ] {
        add.push((k, era.clone()));
    }
    let fixed: &[(&'static str, &str)] = &[
        ("upgrade_ns", "INFERRED: half a line transfer within the LLC (an invalidation without data), as the host file infers"),
        ("ipi_send_ns", "298 cycles at the part's clock: the sender's share of a posted-interrupt IPI without VM exits (Kaffes et al., Shinjuku, NSDI 2019, Table 1); a bare-metal x2APIC figure was not found"),
        ("ipi_latency_ns", "1 695 cycles of a 2.3 GHz Xeon E5-2658 as ns: the rest of Shinjuku's 1 993-cycle send-to-handler IPI (NSDI 2019, Table 1)"),
        ("l1_bytes", "see l1"),
        ("l1_ways", "see l1"),
        ("l2_bytes", "see l2 (the last private level)"),
        ("l2_ways", "see l2"),
        ("idle_poll", "cpuidle halts idle CPUs (idle=poll not assumed)"),
        ("bus_slot_ns", "unused: no shared front-side bus on this preset"),
        ("line_slots", "unused: no shared front-side bus on this preset"),
    ];
    for &(k, v) in fixed {
        add.push((k, v.to_string()));
    }
    for (k, v) in &h.sources {
        let Some(&(k, _)) = super::preset::cost_docs().iter().find(|f| f.0 == k) else {
            continue;
        };
        if !own(k) && !add.iter().any(|(o, _)| *o == k) {
            add.push((k, format!("the shipped host's: {v}")));
        }
    }
    out.extend(add);
    let costs = serde_json::to_value(&find(name)?.costs).ok()?;
    for (f, _) in super::preset::cost_docs() {
        if !out.iter().any(|(k, _)| k == f) && costs.get(*f).is_none_or(|v| v.is_null()) {
            out.push((
                f,
                "unset on this part: the field's fallback applies".to_string(),
            ));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Layout, Machine};

    fn ids(name: &str, sockets: Option<usize>, nps: Option<usize>) -> CpuIds {
        variant(name, sockets, nps)
            .unwrap()
            .topology
            .clone()
            .unwrap()
    }

    #[test]
    fn cpus_are_numbered_as_linux_enumerates_them() {
        let z = ids("zen3-2s", None, None);
        assert_eq!(z.core.len(), 256);
        // Siblings n and n + 128; the LLC of CPU 0 is 0-7 and 128-135.
        assert_eq!(z.core[5], z.core[133]);
        let llc0: Vec<usize> = (0..256).filter(|&c| z.llc[c] == z.llc[0]).collect();
        let want: Vec<usize> = (0..8).chain(128..136).collect();
        assert_eq!(llc0, want);
        // NPS1: node0 0-63,128-191.
        let node0: Vec<usize> = (0..256).filter(|&c| z.node[c] == 0).collect();
        assert_eq!(node0, (0..64).chain(128..192).collect::<Vec<_>>());
        assert_eq!(z.package[64], 1);
        assert_eq!(z.package[191], 0);
        // NPS4: eight nodes of 16 cores and their siblings, SLIT 10/12/32.
        let z4 = ids("zen3-2s", None, Some(4));
        assert_eq!(z4.node[16], 1);
        assert_eq!(z4.node[16 + 128], 1);
        assert_eq!(z4.distance[0], vec![10, 12, 12, 12, 32, 32, 32, 32]);
        // One socket is a 128-CPU box: siblings n and n + 64.
        let z1 = ids("zen3-2s", Some(1), None);
        assert_eq!(z1.core.len(), 128);
        assert_eq!(z1.core[3], z1.core[67]);
        assert!(z1.distance.is_empty());
        let s = ids("spr-2s", None, None);
        assert_eq!((s.core.len(), s.core[1], s.core[113]), (224, 1, 1));
        assert_eq!(s.node[55], 0);
        assert_eq!(s.node[56], 1);
        assert_eq!(s.node[167], 0);
        let i = ids("icx-2s", None, None);
        assert_eq!((i.core.len(), i.node[95], i.node[96]), (128, 0, 1));
        let h = ids("haswell-4c", None, None);
        assert_eq!(h.core, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(h.llc, vec![0; 8]);
    }

    #[test]
    fn a_line_costs_its_distance() {
        let p = find("zen3-2s").unwrap();
        let l = Layout::of(p, p.cpus);
        let c = &p.costs;
        assert_eq!(l.buses(), 16);
        assert_eq!(l.line_ns(c, 0, 128), 10, "SMT siblings");
        assert_eq!(l.line_ns(c, 0, 7), 23, "one CCX");
        assert_eq!(l.line_ns(c, 0, 8), 107, "two CCXs of a socket");
        assert_eq!(l.line_ns(c, 0, 64), 197, "two sockets");
        assert_eq!(l.line_ns(c, 200, 64), 107, "socket 1's CCXs");
        let i = find("icx-2s").unwrap();
        let li = Layout::of(i, i.cpus);
        assert_eq!(li.buses(), 2);
        assert_eq!(li.line_ns(&i.costs, 0, 31), 51);
        assert_eq!(li.line_ns(&i.costs, 0, 32), 108);
        assert_eq!(li.line_ns(&i.costs, 0, 64), 8);
        // maxcpus=16 keeps CPUs 0-15: two CCXs.
        let m = Machine::boot(p, Some(16)).unwrap();
        assert_eq!((m.layout.buses(), m.bus_of(15)), (2, 1));
    }

    #[test]
    fn variants_refuse_what_the_part_lacks_in_one_line() {
        let e = variant("spr-2s", None, Some(2)).unwrap_err();
        assert!(e.contains("accepted by: zen3-2s"), "{e}");
        let e = variant("zen3-2s", Some(3), None).unwrap_err();
        assert!(e.contains("accepted: 1..=2"), "{e}");
        let e = variant("zen3-2s", None, Some(3)).unwrap_err();
        assert!(e.contains("accepted: 1, 2, 4"), "{e}");
        let e = variant("piii700-1m", Some(1), None).unwrap_err();
        assert!(e.contains("sockets= is not an option"), "{e}");
        let e = Machine::boot_spec("icx-2s:nps=2", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("nps=2 is not an option of machine icx-2s"),
            "{e}"
        );
        let m = Machine::boot_spec("icx-2s:sockets=1", None).unwrap();
        assert_eq!(m.cpus, 64);
    }

    #[test]
    fn every_cost_of_every_part_has_a_source() {
        for name in NAMES {
            let s = sources(name).unwrap();
            let costs = serde_json::to_value(&find(name).unwrap().costs).unwrap();
            for (f, _) in crate::machine::preset::cost_docs() {
                let src = s.iter().find(|(k, _)| k == f);
                let src = src.unwrap_or_else(|| panic!("{name}: no source for {f}"));
                let unset = costs.get(*f).is_none_or(|v| v.is_null());
                // An unset field says so, or which field stands for it.
                let says_unset = src.1.starts_with("unset") || src.1.starts_with('=');
                assert_eq!(unset, says_unset, "{name}: {f}: {}", src.1);
            }
        }
    }
}
