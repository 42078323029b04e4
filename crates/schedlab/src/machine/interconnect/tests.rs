//! The directory and the buses against their invariants and one-by-one pricing.

use super::*;
use crate::machine::{catalog, Preset};

fn layout(p: &Preset, cpus: usize) -> std::sync::Arc<Layout> {
    std::sync::Arc::new(Layout::of(p, cpus))
}

fn ic(model: Model) -> Interconnect {
    let p = catalog::find("piii700-1m").unwrap();
    Interconnect::new(layout(p, 8), &p.costs, model)
}

/// `a` and `b` took the same traffic: equal counters and bus calendars, and a later
/// stream into `cpu` at `later` finds the same free slots on both.
fn same_traffic(
    a: &mut Interconnect,
    b: &mut Interconnect,
    later: Time,
    cpu: CpuId,
) -> Result<(), proptest::test_runner::TestCaseError> {
    proptest::prop_assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    let buses = |x: &Interconnect| format!("{:?}", x.bus_stats().collect::<Vec<_>>());
    proptest::prop_assert_eq!(buses(a), buses(b));
    for x in [&mut *a, &mut *b] {
        x.stream(later, 40, None, cpu);
    }
    proptest::prop_assert_eq!(buses(a), buses(b));
    Ok(())
}

/// The same scattered reads and writes of task lines (`(cpu, task, time, write)`) on
/// both interconnects, with a copy after each when `copies` (loading the buses).
fn scatter(
    a: &mut Interconnect,
    b: &mut Interconnect,
    before: &[(usize, u32, Time, bool)],
    copies: bool,
) {
    let n = a.layout.cpus();
    for &(w, p, t, write) in before {
        for x in [&mut *a, &mut *b] {
            if write {
                x.write_task(t, w, p);
            } else {
                x.read_task(t, w, p);
            }
            if copies {
                x.stream(t, 6, Some(w), (w + 1) % n);
            }
        }
    }
}

/// `a` walks its task list as one recalculation at `t`, `b` reads then writes each
/// listed line in id order at the walk's moment: the same cost.
fn recalc_both(
    a: &mut Interconnect,
    b: &mut Interconnect,
    cpu: CpuId,
    t: Time,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let examine = a.costs.task_examine_ns;
    let walked = a.recalc_walk(t, cpu, examine);
    let mut now = t;
    let listed: Vec<u32> = b.tasks.listed.iter().collect();
    for p in listed {
        now += examine + b.read_task(now, cpu, p);
        now += b.write_task(now, cpu, p);
    }
    proptest::prop_assert_eq!(walked, now - t);
    proptest::prop_assert_eq!(&a.tasks.clock, &b.tasks.clock);
    Ok(())
}

/// The same accesses on both, each costing the same: `(cpu, task, time, write)`.
fn same_accesses(
    a: &mut Interconnect,
    b: &mut Interconnect,
    ops: &[(usize, u32, Time, bool)],
) -> Result<(), proptest::test_runner::TestCaseError> {
    for &(w, p, t, write) in ops {
        let w = w % a.layout.cpus();
        let (x, y) = if write {
            (a.write_task(t, w, p), b.write_task(t, w, p))
        } else {
            (a.read_task(t, w, p), b.read_task(t, w, p))
        };
        proptest::prop_assert_eq!(x, y, "cpu {} task {} write {}", w, p, write);
    }
    Ok(())
}

/// A directory with `listed` in the task list on both interconnects.
fn list_both(a: &mut Interconnect, b: &mut Interconnect, listed: &[u32]) {
    for &p in listed {
        a.list_task(p);
        b.list_task(p);
    }
}

#[test]
fn a_line_written_elsewhere_is_a_transfer_then_a_hit() {
    let mut x = ic(Model::default());
    let c = x.costs;
    assert_eq!(x.read_task(0, 0, 5), c.mem_latency_ns);
    assert_eq!(x.read_task(1_000, 0, 5), c.l2_line_ns);
    // CPU 1 (same bus) reads it clean from memory, then writes it: CPU 0's copy is
    // invalidated, and CPU 0's next read pulls the dirty line from CPU 1.
    assert_eq!(x.read_task(1_500, 1, 5), c.mem_latency_ns);
    assert_eq!(x.write_task(2_000, 1, 5), c.upgrade_ns);
    assert_eq!(x.read_task(3_000, 0, 5), c.c2c_line_ns);
    // CPU 4 (other bus) writes it without a copy: read for ownership from memory.
    assert_eq!(x.write_task(4_000, 4, 5), c.mem_latency_ns);
    assert_eq!(x.read_task(5_000, 0, 5), c.c2c_cross_bus_line_ns);
    // A write to a line shared across the buses invalidates through the filter.
    let up = x.write_task(6_000, 0, 5);
    assert_eq!(up, c.upgrade_ns + c.c2c_cross_bus_line_ns - c.c2c_line_ns);
    assert_eq!(x.stats.cross_bus_transfers, 1);
    x.check().unwrap();
}

#[test]
fn transfers_at_one_time_queue_on_the_bus_unless_it_is_off() {
    let mut x = ic(Model::default());
    let c = x.costs;
    let a = x.transfer(0, Some(1), 0);
    let b = x.transfer(0, Some(2), 3);
    assert_eq!(a, c.c2c_line_ns);
    assert_eq!(b, c.c2c_line_ns + c.line_slots * c.bus_slot_ns);
    // The other bus is idle.
    assert_eq!(x.transfer(0, Some(5), 4), c.c2c_line_ns);
    let mut off = ic(Model {
        bus: false,
        ..Model::default()
    });
    assert_eq!(off.transfer(0, Some(1), 0), c.c2c_line_ns);
    assert_eq!(off.transfer(0, Some(2), 3), c.c2c_line_ns);
}

proptest::proptest! {
    /// A walk priced as one call (memory runs as paced bus streams) costs, and
    /// leaves the directory, buses and counters, exactly as one read per task at
    /// the walk's moment does — hits, transfers and bus queueing mixed in.
    #[test]
    fn a_walk_costs_what_its_reads_one_by_one_cost(
        writes in proptest::collection::vec((0usize..8, 0u32..300, 0u64..4_000), 0..200),
        walk in proptest::collection::vec(0u32..300, 0..400),
        cpu in 0usize..8,
        model in 0usize..3,
    ) {
        let model = match model {
            0 => Model::default(),
            1 => Model { bus: false, ..Model::default() },
            _ => Model { coherence: false, ..Model::default() },
        };
        let (mut a, mut b) = (ic(model), ic(model));
        for &(w, p, t) in &writes {
            // Writes and copies at scattered times make lines dirty elsewhere and
            // load both buses.
            for x in [&mut a, &mut b] {
                x.write_task(t, w, p);
                x.stream(t, 6, Some(w), (w + 1) % 8);
            }
        }
        let examine = a.costs.task_examine_ns;
        let walked = a.read_tasks(2_000, cpu, walk.iter().copied(), examine);
        let mut t = 2_000;
        for &p in &walk {
            t += examine + b.read_task(t, cpu, p);
        }
        proptest::prop_assert_eq!(walked, t - 2_000);
        same_traffic(&mut a, &mut b, 2_500, cpu)?;
    }
}

proptest::proptest! {
    /// A recalculation walk priced lazily — one by one only the lines held
    /// somewhere, the rest as memory streams, what it leaves applied when a line is
    /// next accessed — costs exactly what a read then a write per listed task at the
    /// walk's moment do, and leaves a directory that prices every later access, walk
    /// and recalculation the same: lines held elsewhere dirty or shared (on this bus
    /// and the other), evicted, hit; tasks exiting and created between the walks;
    /// with and without bus and coherence.
    #[test]
    fn a_recalc_walk_costs_what_its_reads_and_writes_one_by_one_cost(
        listed in proptest::collection::btree_set(0u32..300, 0..250),
        before in proptest::collection::vec(
            (0usize..8, 0u32..300, 0u64..4_000, proptest::bool::ANY), 0..200),
        between in proptest::collection::vec(
            (0usize..8, 0u32..320, 3_000u64..6_000, proptest::bool::ANY), 0..200),
        exits in proptest::collection::vec(0u32..300, 0..20),
        born in proptest::collection::vec(300u32..320, 0..10),
        cpu in 0usize..8,
        model in 0usize..4,
    ) {
        let model = match model {
            0 => Model::default(),
            1 => Model { bus: false, ..Model::default() },
            2 => Model { coherence: false, ..Model::default() },
            _ => Model { bus: false, coherence: false, ..Model::default() },
        };
        let (mut a, mut b) = (ic(model), ic(model));
        let listed: Vec<u32> = listed.into_iter().collect();
        list_both(&mut a, &mut b, &listed);
        // Writes and reads at scattered times leave lines dirty or shared elsewhere;
        // copies load both buses.
        scatter(&mut a, &mut b, &before, true);
        recalc_both(&mut a, &mut b, cpu, 2_000)?;
        // Exits and births, then accesses by every CPU: the same costs.
        for &p in &exits {
            a.forget_task(p);
            b.forget_task(p);
        }
        list_both(&mut a, &mut b, &born);
        same_accesses(&mut a, &mut b, &between)?;
        // A run-queue walk and a second recalculation, by other CPUs.
        let examine = a.costs.task_examine_ns;
        let other = (cpu + 5) % 8;
        let (x, y) = (a.read_tasks(7_000, other, listed.iter().copied(), examine),
            b.read_tasks(7_000, other, listed.iter().copied(), examine));
        proptest::prop_assert_eq!(x, y);
        recalc_both(&mut a, &mut b, (cpu + 3) % 8, 9_000)?;
        same_accesses(&mut a, &mut b, &before)?;
        same_traffic(&mut a, &mut b, 12_500, cpu)?;
        a.check().unwrap();
    }
}

proptest::proptest! {
    /// The same on a machine past 64 CPUs (several sharer words, paged stamps), a
    /// walk's CPU and the writers spread over the nodes.
    #[test]
    fn a_recalc_walk_past_64_cpus_costs_what_one_by_one_costs(
        listed in proptest::collection::btree_set(0u32..200, 0..180),
        before in proptest::collection::vec(
            (0usize..130, 0u32..200, 0u64..4_000, proptest::bool::ANY), 0..150),
        cpu in 0usize..130,
        bus in proptest::bool::ANY,
    ) {
        let p = catalog::find("numa-1024").unwrap();
        let model = Model { bus, ..Model::default() };
        let mk = || Interconnect::new(layout(p, 130), &p.costs, model);
        let (mut a, mut b) = (mk(), mk());
        let listed: Vec<u32> = listed.into_iter().collect();
        list_both(&mut a, &mut b, &listed);
        scatter(&mut a, &mut b, &before, false);
        recalc_both(&mut a, &mut b, cpu, 2_000)?;
        let later: Vec<_> = before.iter().map(|&(w, p, t, wr)| (w, p, t + 5_000, wr)).collect();
        same_accesses(&mut a, &mut b, &later)?;
        recalc_both(&mut a, &mut b, (cpu + 77) % 130, 11_000)?;
        same_accesses(&mut a, &mut b, &later)?;
        proptest::prop_assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
        let buses = |x: &Interconnect| format!("{:?}", x.bus_stats().collect::<Vec<_>>());
        proptest::prop_assert_eq!(buses(&a), buses(&b));
    }
}

/// A recalculation over 10 000 tasks prices one by one only the lines accessed
/// since the previous one (and the last walk's tail): the simulator's work does not
/// grow with the tasks.
#[test]
fn a_recalc_names_only_the_lines_held_somewhere() {
    let mut x = ic(Model::default());
    let examine = x.costs.task_examine_ns;
    let tail = u64::from(x.tasks.capacity.div_ceil(2));
    for p in 0..10_000 {
        x.list_task(p);
    }
    // The first walk finds every line just listed (each may hold a copy).
    x.recalc_walk(0, 0, examine);
    assert_eq!(x.recalc_lines_named, 10_000);
    for round in 1..4u64 {
        for p in (0..10_000).step_by(500) {
            x.read_task(1_000_000 * round, (p % 8) as CpuId, p);
        }
        let before = x.recalc_lines_named;
        let cost = x.recalc_walk(1_000_000 * round + 500_000, 3, examine);
        assert!(x.recalc_lines_named - before <= 20 + tail, "round {round}");
        // The walk still costs the modelled kernel every task.
        assert!(
            cost >= 10_000 * (examine + x.costs.mem_latency_ns),
            "round {round}"
        );
    }
    assert_eq!(x.listed_tasks(), 10_000);
    x.check().unwrap();
}

/// A line another CPU wrote and has since evicted (its L2 holds `capacity` task
/// lines, LRU) was written back: the next reader gets it from memory.
#[test]
fn a_dirty_line_evicted_by_its_owner_comes_from_memory() {
    let mut x = ic(Model {
        bus: false,
        ..Model::default()
    });
    let c = x.costs;
    let cap = x.tasks.capacity;
    x.write_task(0, 1, 7);
    assert_eq!(
        x.read_task(10, 0, 7),
        c.c2c_line_ns,
        "still in CPU 1's cache"
    );
    x.write_task(20, 1, 7);
    // CPU 1 touches `capacity` other lines: line 7 is evicted from its cache.
    for p in 100..100 + cap {
        x.read_task(30, 1, p);
    }
    assert_eq!(x.read_task(40, 0, 7), c.mem_latency_ns, "written back");
    x.check().unwrap();
}

proptest::proptest! {
    /// A run of dependent transfers (a pipe's or socket's state pulled from the CPU
    /// that wrote it) costs, and leaves the buses and counters, as one
    /// [`Interconnect::transfer`] after another does, on one bus and across the two.
    #[test]
    fn a_transfer_run_costs_what_its_transfers_one_by_one_cost(
        load in proptest::collection::vec((0usize..8, 0u64..3_000, 1u64..40), 0..60),
        from in 0usize..8,
        cpu in 0usize..8,
        lines in 0u64..12,
        bus in proptest::bool::ANY,
    ) {
        proptest::prop_assume!(from != cpu);
        let model = Model { bus, ..Model::default() };
        let (mut a, mut b) = (ic(model), ic(model));
        for &(w, t, n) in &load {
            for x in [&mut a, &mut b] {
                x.stream(t, n, Some(w), (w + 3) % 8);
            }
        }
        let run = a.transfer_run(1_500, from, cpu, lines);
        let mut t = 1_500;
        for _ in 0..lines {
            t += b.transfer(t, Some(from), cpu);
        }
        proptest::prop_assert_eq!(run, t - 1_500);
        same_traffic(&mut a, &mut b, 1_800, cpu)?;
    }
}

#[test]
fn without_coherence_every_examined_task_is_a_memory_miss() {
    let mut x = ic(Model {
        coherence: false,
        ..Model::default()
    });
    let c = x.costs;
    assert_eq!(x.read_task(0, 0, 1), c.mem_latency_ns);
    assert_eq!(x.read_task(1_000, 0, 1), c.mem_latency_ns);
    assert_eq!(x.write_task(0, 1, 1), 0);
}

/// The directory past 64 CPUs: sharers in every word of the entry, an invalidation
/// that names the remote sharer's bus, and an owner on the last CPU.
#[test]
fn the_directory_holds_sharers_of_1024_cpus() {
    let p = catalog::find("numa-1024").unwrap();
    // Without bus queueing: the costs are the unloaded latencies.
    let flat = Model {
        bus: false,
        ..Model::default()
    };
    let mut x = Interconnect::new(layout(p, 1024), &p.costs, flat);
    let c = x.costs;
    for cpu in [3, 64, 700, 1023] {
        assert_eq!(x.read_task(0, cpu, 9), c.mem_latency_ns, "cpu {cpu}");
    }
    assert_eq!(
        x.read_task(10, 1023, 9),
        c.l2_line_ns,
        "a hit in the last word"
    );
    // CPU 700 writes: the others' copies go, one of them on another node.
    assert_eq!(
        x.tasks.write(9, 700, &x.bus_masks[350 * 16..351 * 16]),
        Source::Upgrade { remote: Some(3) }
    );
    x.check().unwrap();
    assert_eq!(
        x.read_task(20, 1023, 9),
        c.c2c_cross_bus_line_ns,
        "owner on CPU 700"
    );
    // Clean in 700's and 1023's caches now: a third reader gets it from memory.
    assert_eq!(x.read_task(30, 701, 9), c.mem_latency_ns);
    // A write shared only within the node invalidates no other node.
    let mut y = Interconnect::new(layout(p, 1024), &p.costs, flat);
    y.read_task(0, 700, 1);
    y.read_task(0, 701, 1);
    assert_eq!(
        y.tasks.write(1, 700, &y.bus_masks[350 * 16..351 * 16]),
        Source::Upgrade { remote: None }
    );
    y.check().unwrap();
}
