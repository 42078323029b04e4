//! Every preset by name: the P6 presets of [`super::preset`], the many-core preset built
//! from the shipped host file, the 1024-CPU NUMA preset, and `host` ([`super::host`]).
//!
//! Design: the tables of costs live in `preset` and `host`; this module only names and
//! builds them, so neither of those imports the other.

use super::layout::Buses;
use super::preset::{piii700, Costs, CpuIds, Limits, Preset, PRESETS};

/// The modern many-core preset's name.
pub const MANYCORE: &str = "modern-2s-64";

/// A modern two-socket machine for scale studies: 2 packages × 16 cores × 2 SMT threads
/// (64 CPUs), one LLC and one NUMA node per package. Per-core costs are
/// the shipped measured host's (`data/host.json`, a current AMD EPYC core); a line moved
/// between the sockets costs twice a line moved within one (inferred: public Skylake-SP
/// and EPYC figures put a remote-socket cache-to-cache transfer at about twice a local
/// one). CPUs are numbered package by package with SMT siblings adjacent (CPUs 2k and 2k+1
/// share core k), so `--cpus 32` boots one whole package and `bus_of` is the package.
pub fn manycore() -> &'static Preset {
    static P: std::sync::OnceLock<Preset> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let h = super::host::HostFile::parse(super::host::SHIPPED, "data/host.json")
            .expect("the shipped host file loads (a unit test checks it)");
        let n = 64;
        let core: Vec<usize> = (0..n).map(|c| c / 2).collect();
        let package: Vec<usize> = (0..n).map(|c| c / 32).collect();
        let mut costs = h.costs.clone();
        costs.c2c_cross_bus_line_ns = 2 * costs.c2c_line_ns;
        Preset {
            name: MANYCORE,
            description: "2 sockets x 16 cores x 2 SMT (64 CPUs), LLC and NUMA node per socket; \
                          per-core costs of the measured host (data/host.json)",
            cpus: n,
            buses: Buses::Every(32), // a package: c2c_cross_bus_line_ns between them
            shared_bus: false,
            topology: Some(CpuIds {
                core,
                llc: package.clone(),
                node: package,
                package: Vec::new(),
                distance: Vec::new(),
                node_reclaim_distance: None,
            }),
            costs,
            limits: Limits {
                ram_mb: 256 * 1024,
                max_threads: 2_000_000,
                nproc: 1_000_000,
                file_max: 1 << 24,
                pid_max: super::preset::PID_MAX,
                nproc_binds_root: true,
                kmem_kb: None,
            },
            lowmem_mb: None,
            limits_measured: false,
            pid_max_sysctl: None,
            // A scale-study machine: tuned, as such boxes are, so that no release's
            // default file table stops a large run (its limits before releases existed).
            file_max_sysctl: Some(1 << 24),
        }
    })
}

/// The 1024-CPU NUMA preset's name.
pub const NUMA1024: &str = "numa-1024";

/// CPUs of [`NUMA1024`].
const NUMA_CPUS: usize = 1024;

/// CPUs per node of [`NUMA1024`]: two Itanium 2 on one front-side bus and one SHUB.
const NUMA_NODE_CPUS: usize = 2;

/// An SGI Altix 3700-class machine of 1024 CPUs under one kernel: 512 nodes (SHUB ASICs)
/// of two 1.3 GHz Itanium 2 (Madison, 3 MB L3) on one front-side bus, joined by a
/// NUMAlink fat tree of routers. The machine facts are published (cited on each line of
/// [`numa1024_costs`]); the kernel-path costs are the P6 table's cycle counts at the
/// Itanium's clock (inferred, said in place). CPUs are numbered node by node, so
/// `--cpus 96` boots nodes 0-47 and `bus_of` is the node.
///
/// Model: two distances only. A line moved within a node costs `c2c_line_ns`, between
/// any two nodes `c2c_cross_bus_line_ns`, set at the average router path of a 512-node
/// fat tree: the model has no per-hop distance (NUMAlink adds ≈ 50 ns per router, so
/// the real spread around that average is a few hundred ns). The front-side buses are
/// not queued (`shared_bus: false`, as for [`MANYCORE`]): the P6 bus model is not
/// calibrated for the Itanium 2 bus.
pub fn numa1024() -> &'static Preset {
    static P: std::sync::OnceLock<Preset> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let n = NUMA_CPUS;
        let node: Vec<usize> = (0..n).map(|c| c / NUMA_NODE_CPUS).collect();
        Preset {
            name: NUMA1024,
            description: "SGI Altix 3700-class: 1024 x Itanium 2 1.3 GHz (3 MB L3), 512 NUMA \
                          nodes of 2 CPUs on a bus, NUMAlink fat tree",
            cpus: n,
            buses: Buses::Every(NUMA_NODE_CPUS), // a node: c2c_cross_bus_line_ns between them
            shared_bus: false,
            topology: Some(CpuIds {
                // One thread per core, a private L3 per CPU (Madison has no SMT, and
                // its caches are on the die of each processor).
                core: (0..n).collect(),
                llc: (0..n).collect(),
                node,
                package: Vec::new(),
                distance: Vec::new(),
                node_reclaim_distance: None,
            }),
            costs: numa1024_costs(),
            limits: Limits {
                // Columbia's Altix nodes: 2 GB per processor (top500.org, system 7288).
                pid_max: 4 * 1024 * 1024,
                file_max: 1 << 24,
                ..Limits::for_ram(2 * 1024 * 1024)
            },
            lowmem_mb: None,
            limits_measured: false,
            // Large SGI systems raised kernel.pid_max for their thousands of tasks (a
            // run of 100 000 tasks needs it under 2.6.0's PID_MAX_DEFAULT).
            pid_max_sysctl: Some(4 * 1024 * 1024),
            file_max_sysctl: Some(1 << 24),
        }
    })
}

/// The cost table of [`NUMA1024`].
///
/// Sources: [TAMU] Texas A&M Supercomputing Facility, "cosmos" SGI Altix 3700 hardware
/// page (sc.tamu.edu/systems/cosmos/hardware.shtml): 1.3 GHz Madison; L1D 16 KB 4-way,
/// L2 256 KB, L3 3 MB 12-way, 128-byte lines, L3 load latency 14 clocks; 2 processors per
/// node on one FSB, 2 nodes per C-brick; NUMAlink 3 fat tree, "50 nanosecs / router",
/// "5 routing hops maximum" at 128 CPUs. [7CPU] 7-cpu.com, Intel Itanium 2 (1.3 GHz
/// Madison, HP rx2600): L3 miss = 35 cycles + 160 ns; RAM read 840 MB/s at a 4-byte
/// stride; 16 KB pages. [SGI] SGI Altix 4700 record press release (supercomputingonline,
/// 2007): 1,024 Itanium 2 under one Linux image.
pub fn numa1024_costs() -> Costs {
    let p6 = piii700(3 * 1024 * 1024);
    // Inferred: the kernel paths (2.4/2.6 C code) take the P6's cycles at the Itanium's
    // 1300 MHz; no per-path Itanium Linux figure was found. A lower bound: the Itanium's
    // register stack makes entries and switches dearer than a P6's.
    let at_clock = |ns: u64| ns * 700 / 1300;
    // [7CPU]: 35 cycles at 1.3 GHz ≈ 27 ns to miss the L3, then 160 ns of DRAM.
    let mem_latency_ns = 27 + 160;
    Costs {
        cpu_mhz: 1300, // [TAMU]
        syscall_ns: at_clock(p6.syscall_ns),
        switch_ns: at_clock(p6.switch_ns),
        switch_mm_ns: at_clock(p6.switch_mm_ns),
        schedule_ns: at_clock(p6.schedule_ns),
        wakeup_ns: at_clock(p6.wakeup_ns),
        task_examine_ns: at_clock(p6.task_examine_ns),
        mem_latency_ns,
        // Inferred: the P6's invalidation; on Altix the SHUB directory sends it.
        upgrade_ns: p6.upgrade_ns,
        // Unused (`shared_bus: false`): a 128-byte line is 8 transfers of the 128-bit
        // bus at 400 MT/s, 4 slots of 5 ns.
        bus_slot_ns: 5,
        line_slots: 4,
        // Inferred: ia64 keeps the task_struct at the base of its 32 KB (two 16 KB
        // pages) kernel stack, as i386 did in 8 KB.
        task_align_bytes: 32 * 1024,
        waitq_entry_ns: at_clock(p6.waitq_entry_ns),
        lock_ns: at_clock(p6.lock_ns),
        // Inferred: a dirty line from the other CPU of the node is a snoop hit on the
        // shared FSB, a memory-latency-class miss as on the P6 (B§6.3).
        c2c_line_ns: mem_latency_ns,
        c2c_stream_line_ns: None,
        c2c_smt_line_ns: None,
        c2c_cross_package_line_ns: None,
        // Inferred: the local miss plus the request and the reply each crossing the
        // average router path of a 512-node fat tree, 4 routers (the 128-CPU tree's
        // maximum is 5 [TAMU]; 512 nodes of 8-port routers average about 4), at 50 ns a
        // router [TAMU]: 187 + 2 × 4 × 50.
        c2c_cross_bus_line_ns: mem_latency_ns + 2 * 4 * 50,
        pipe_call_ns: at_clock(p6.pipe_call_ns),
        unix_call_ns: at_clock(p6.unix_call_ns),
        tcp_sendmsg_ns: at_clock(p6.tcp_sendmsg_ns),
        tcp_recvmsg_ns: at_clock(p6.tcp_recvmsg_ns),
        tcp_segment_ns: at_clock(p6.tcp_segment_ns),
        tcp_ack_ns: at_clock(p6.tcp_ack_ns),
        udp_sendmsg_ns: at_clock(p6.udp_sendmsg_ns),
        udp_recvmsg_ns: at_clock(p6.udp_recvmsg_ns),
        skb_cold_ns: None,
        skb_depth_ns: super::preset::DepthCurve::EMPTY,
        pipe_depth_ns: super::preset::DepthCurve::EMPTY,
        l2_latency_ns_per_kb: None,
        l2_line_ps: None,
        mem_line_ps: None,
        llc_bytes: None,
        llc_ways: None,
        llc_line_ps: None,
        skb_remote_ns: None,
        skb_page_shared_ns: None,
        skb_shared_ns: super::preset::DepthCurve::EMPTY,
        task_refill_ns: super::preset::DepthCurve::EMPTY,
        wake_refill_ns: super::preset::DepthCurve::EMPTY,
        mm_refill_ns: super::preset::DepthCurve::EMPTY,
        tcp_mss_bytes: p6.tcp_mss_bytes,
        tcp_wmem_max_bytes: p6.tcp_wmem_max_bytes,
        tcp_connect_ns: at_clock(p6.tcp_connect_ns),
        copy_ns_per_kb: at_clock(p6.copy_ns_per_kb),
        sum_ns_per_kb: at_clock(p6.sum_ns_per_kb),
        fork_ns: at_clock(p6.fork_ns),
        fork_child_ns: at_clock(p6.fork_child_ns),
        clone_ns: at_clock(p6.clone_ns),
        file_create_ns: at_clock(p6.file_create_ns),
        exec_ns: at_clock(p6.exec_ns),
        exit_ns: at_clock(p6.exit_ns),
        wait_ns: at_clock(p6.wait_ns),
        poll_ns: at_clock(p6.poll_ns),
        poll_fd_ns: at_clock(p6.poll_fd_ns),
        tick_ns: at_clock(p6.tick_ns),
        irq_ns: at_clock(p6.irq_ns),
        ipi_send_ns: at_clock(p6.ipi_send_ns),
        // Inferred: the P6's calibrated delivery; on Altix an IPI is a write to the
        // target's SHUB over the same routers, not a faster path.
        ipi_latency_ns: p6.ipi_latency_ns,
        idle_exit_ns: at_clock(p6.idle_exit_ns),
        line_bytes: 128,     // [TAMU]: L2 and L3 blocks
        l1_bytes: 16 * 1024, // [TAMU]
        // The model's last private level: the 3 MB 12-way L3 [TAMU].
        l2_bytes: 3 * 1024 * 1024,
        l1_ways: 4,            // [TAMU]
        l2_ways: 12,           // [TAMU]
        page_bytes: 16 * 1024, // [7CPU]: ia64 Linux's 16 KB pages
        // [TAMU]: an L3 hit, 14 clocks at 1.3 GHz.
        l2_line_ns: 14 * 1000 / 1300,
        // [7CPU]: 840 MB/s ⇒ a 128-byte line per 152 ns.
        mem_line_ns: 128 * 1000 / 840,
        // Inferred: the P6's task_struct and used stack, doubled for 64-bit structures
        // and the register backing store.
        kernel_footprint_bytes: 2 * p6.kernel_footprint_bytes,
        skb_overhead_bytes: p6.skb_overhead_bytes,
        // PIPE_SIZE = PAGE_SIZE: 16 KB on ia64.
        pipe_buf_bytes: 16 * 1024,
        unix_sndbuf_bytes: p6.unix_sndbuf_bytes,
        tcp_sndbuf_bytes: p6.tcp_sndbuf_bytes,
        idle_poll: false,
    }
}

/// Every preset: [`PRESETS`], then [`MANYCORE`], [`NUMA1024`], today's machines
/// ([`super::today`]) and `host` (when its file loads).
pub fn all() -> Vec<&'static Preset> {
    let mut v: Vec<&'static Preset> = PRESETS.iter().collect();
    v.push(manycore());
    v.push(numa1024());
    v.extend(
        super::today::NAMES
            .iter()
            .filter_map(|n| super::today::find(n)),
    );
    v.extend(super::host::preset().ok());
    v
}

/// Look a preset up by name: one of [`PRESETS`], `host` ([`super::host`]),
/// [`MANYCORE`], [`NUMA1024`] or today's ([`super::today::NAMES`]).
pub fn find(name: &str) -> Option<&'static Preset> {
    lookup(name).ok()
}

/// Look a preset up by name, saying why not in one line (an unknown name, or a `host`
/// file that does not load).
pub fn lookup(name: &str) -> Result<&'static Preset, crate::spec::SpecError> {
    if name == super::host::NAME {
        return super::host::preset().map_err(crate::spec::SpecError::Invalid);
    }
    if name == MANYCORE {
        return Ok(manycore());
    }
    if name == NUMA1024 {
        return Ok(numa1024());
    }
    if let Some(p) = super::today::find(name) {
        return Ok(p);
    }
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let mut names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        names.push(super::host::NAME);
        names.push(MANYCORE);
        names.push(NUMA1024);
        names.extend(super::today::NAMES);
        crate::spec::SpecError::unknown("machine", name, &names)
    })
}

/// What [`NUMA1024`]'s own facts set (cited in [`numa1024_costs`]); its other costs are
/// the P6 table's, at the Itanium's clock where they are CPU work.
const NUMA1024_SOURCES: &[(&str, &str)] = &[
    (
        "cpu_mhz",
        "1.3 GHz Madison [TAMU: Texas A&M cosmos SGI Altix 3700 hardware page]",
    ),
    (
        "mem_latency_ns",
        "35 cycles to miss the L3 + 160 ns of DRAM [7CPU: 7-cpu.com, Itanium 2]",
    ),
    (
        "upgrade_ns",
        "INFERRED: the P6's invalidation; on Altix the SHUB directory sends it",
    ),
    (
        "bus_slot_ns",
        "unused (no queued bus): a 128-byte line is 8 transfers of the 128-bit bus at 400 MT/s",
    ),
    ("line_slots", "unused (no queued bus): as bus_slot_ns"),
    (
        "task_align_bytes",
        "INFERRED: ia64 keeps the task_struct at the base of its 32 KB kernel stack",
    ),
    (
        "c2c_line_ns",
        "INFERRED: a snoop hit on the node's shared FSB, a memory-latency-class miss as on the P6",
    ),
    (
        "c2c_cross_bus_line_ns",
        "INFERRED: the local miss + request and reply each crossing 4 routers at 50 ns [TAMU]",
    ),
    (
        "ipi_latency_ns",
        "INFERRED: the P6's calibrated delivery (an IPI is a write to the target's SHUB)",
    ),
    ("line_bytes", "128-byte L2 and L3 blocks [TAMU]"),
    ("l1_bytes", "16 KB L1D [TAMU]"),
    (
        "l2_bytes",
        "the last private level: the 3 MB 12-way L3 [TAMU]",
    ),
    ("l1_ways", "4-way [TAMU]"),
    ("l2_ways", "12-way [TAMU]"),
    ("page_bytes", "ia64 Linux's 16 KB pages [7CPU]"),
    ("l2_line_ns", "an L3 hit, 14 clocks at 1.3 GHz [TAMU]"),
    ("mem_line_ns", "840 MB/s [7CPU]: a 128-byte line per 152 ns"),
    (
        "kernel_footprint_bytes",
        "INFERRED: the P6's, doubled for 64-bit structures and the register backing store",
    ),
    ("pipe_buf_bytes", "PIPE_SIZE = PAGE_SIZE: 16 KB on ia64"),
];

/// Where each cost of `p` comes from, in the cost table's order: (field, value, source).
/// Today's presets and `host` carry their own; [`MANYCORE`] is the host's with one
/// inference; the P6-derived presets cite the field docs of [`Costs`] where they keep the
/// P6 value and say how they derived any other.
pub fn cost_sources(p: &Preset) -> Vec<(&'static str, serde_json::Value, String)> {
    let values = serde_json::to_value(&p.costs).unwrap_or_default();
    let own: Vec<(String, String)> = if let Some(s) = super::today::sources(p.name) {
        s.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    } else if p.name == super::host::NAME || p.name == MANYCORE {
        let mut s: Vec<(String, String)> = super::host::file()
            .map(|h| h.sources.into_iter().collect())
            .unwrap_or_default();
        if p.name == MANYCORE {
            s.retain(|(k, _)| k != "c2c_cross_bus_line_ns");
            s.push((
                "c2c_cross_bus_line_ns".into(),
                "INFERRED: twice c2c_line_ns (public Skylake-SP and EPYC figures put a \
                 remote-socket transfer at about twice a local one)"
                    .into(),
            ));
        }
        s
    } else if p.name == NUMA1024 {
        NUMA1024_SOURCES
            .iter()
            .map(|&(k, v)| (k.into(), v.into()))
            .collect()
    } else {
        Vec::new()
    };
    let p6 = serde_json::to_value(piii700(p.costs.l2_bytes)).unwrap_or_default();
    super::preset::cost_docs()
        .iter()
        .map(|(field, doc)| {
            let value = values
                .get(*field)
                .cloned()
                .unwrap_or(serde_json::Value::Null);
            let source = match own.iter().find(|(k, _)| k == field) {
                Some((_, s)) => s.clone(),
                None if value.is_null() => "unset: the field's fallback applies".to_string(),
                None if p.name == super::host::NAME || p.name == MANYCORE => {
                    "not in the host file".to_string()
                }
                None if p6.get(*field) == Some(&value) => format!("P6: {doc}"),
                None => format!(
                    "INFERRED: the P6 table's cycles at {} MHz (the kernel paths' CPU work \
                     scales with the clock)",
                    p.costs.cpu_mhz
                ),
            };
            (*field, value, source)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_names_a_source_for_every_cost() {
        let fields = serde_json::to_value(Costs {
            c2c_smt_line_ns: Some(1),
            c2c_cross_package_line_ns: Some(1),
            l2_line_ps: Some(1),
            mem_line_ps: Some(1),
            llc_bytes: Some(1),
            llc_ways: Some(1),
            llc_line_ps: Some(1),
            skb_depth_ns: vec![[1, 1]].try_into().unwrap(),
            pipe_depth_ns: vec![[1, 1]].try_into().unwrap(),
            skb_shared_ns: vec![[1, 1]].try_into().unwrap(),
            task_refill_ns: vec![[1, 1]].try_into().unwrap(),
            wake_refill_ns: vec![[1, 1]].try_into().unwrap(),
            mm_refill_ns: vec![[1, 1]].try_into().unwrap(),
            ..piii700(1024)
        })
        .unwrap();
        let docs = super::super::preset::cost_docs();
        // The docs list is the struct's fields, in order.
        let keys: Vec<&str> = fields
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, docs.iter().map(|d| d.0).collect::<Vec<_>>());
        for p in all() {
            let s = cost_sources(p);
            assert_eq!(s.len(), docs.len(), "{}", p.name);
            for (f, v, src) in s {
                assert!(!src.trim().is_empty(), "{}: {f}", p.name);
                // An unset field says so, or which field stands for it; a set one has
                // a source.
                if v.is_null() {
                    assert!(
                        src.starts_with("unset") || src.starts_with('='),
                        "{}: {f}",
                        p.name
                    );
                } else {
                    assert!(!src.starts_with("unset"), "{}: {f} = {v}: {src}", p.name);
                }
            }
        }
        let p6 = cost_sources(lookup("piii700-1m").unwrap());
        let mhz = p6.iter().find(|s| s.0 == "cpu_mhz").unwrap();
        assert!(mhz.2.contains("B§6.1"), "{}", mhz.2);
        let stp1 = cost_sources(lookup("osdl-stp1").unwrap());
        let sys = stp1.iter().find(|s| s.0 == "syscall_ns").unwrap();
        assert!(sys.2.contains("1000 MHz"), "{}", sys.2);
    }
}
