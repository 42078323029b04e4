//! Boot: CPUs and their idle tasks, the class's queues, and init running the workload's
//! first program.
//!
//! Order (determinism: everything below happens in this order, at time 0): idle tasks
//! `0..cpus`; `class.init`; `task_fork` for each idle task; init (pid 1) running the root
//! program, woken on CPU 0; one `Resume` per CPU in CPU order; the first tick of CPU `c` at
//! `tick + phase[c]`, the phases drawn from the seed in CPU order (local APIC timers are not
//! in phase, but all see the same `jiffies`; [`super::initial`]).

use crate::engine::{EventQueue, SimRng, Time};
use crate::machine::{CacheModel, Interconnect, Machine};

use super::abi::{Program, Record};
use super::frame::Frame;
use super::sched::SchedClass;
use super::task::{SchedPolicy, Task, TaskState, TaskStats};
use super::{Cpu, Event, Kernel, KernelStats};

/// The ChaCha stream of a seed that the scheduler's draws come from (0: workloads, 1: the
/// initial conditions).
const SCHED_RNG_STREAM: u64 = 2;

impl Kernel {
    /// Boot `machine` under `class`, with init running `root`; `seed` seeds the run's
    /// random source.
    pub fn boot(
        machine: Machine,
        class: Box<dyn SchedClass>,
        root: Box<dyn Program>,
        seed: u64,
    ) -> Kernel {
        let n = machine.cpus;
        let costs = machine.costs();
        let hz = class.hz();
        let hrtimers = class.hrtimers();
        let tick_ns = Machine::tick_ns(hz);
        let kmem_sizes = class.release().kmem();
        let mut k = Kernel {
            now: 0,
            hz,
            hrtimers,
            tick_ns,
            queue: EventQueue::new(),
            rng: SimRng::new(seed),
            sched_rng: SimRng::stream(seed, SCHED_RNG_STREAM),
            initial: super::initial::Initial::new(seed, costs),
            tasks: Vec::new(),
            cpus: Vec::with_capacity(n),
            idle_cpus: Default::default(),
            state_map: Default::default(),
            locks: Vec::new(),
            cache: CacheModel::for_costs(n, costs, (0..n).map(|c| machine.bus_of(c)).collect()),
            ic: Interconnect::new(machine.layout.clone(), costs, machine.model),
            waitqs: Vec::new(),
            usync: Vec::new(),
            streams: Vec::new(),
            skb_written: vec![0; machine.cpus],
            skb_llc: (0..machine.cpus).map(|c| machine.bus_of(c)).collect(),
            skb_written_llc: vec![0; machine.layout.buses()],
            pipe_written: vec![0; machine.cpus],
            pipe_written_llc: vec![0; machine.layout.buses()],
            skb_pages_owner: None,
            sock_locks: Vec::new(),
            sock_taken: None,
            lo_wakes: Vec::new(),
            files: Vec::new(),
            file_lines: Vec::new(),
            mm_lines: Vec::new(),
            open_files: 0,
            live_tasks: 0,
            nr_threads: 0,
            next_pid: 1,
            next_mm: 1,
            stats: KernelStats::default(),
            machine,
            class,
            programs: Vec::new(),
            rec: Record::default(),
            limit_hit: None,
            kmem: Default::default(),
            kmem_sizes,
            stopped: false,
            stop_at: None,
            trace: None,
            net: None,
        };
        for c in 0..n {
            let phase = k.initial.tick_phase(tick_ns);
            k.boot_cpu(c, phase);
        }
        let indexed = crate::kernel::sched::IdleCpus::wanted(n, k.machine.model.coherence)
            && k.class.uses_idle_index();
        k.idle_cpus = crate::kernel::sched::IdleCpus::new(&k.cpus, indexed);
        let (class, mut ctx) = k.sched(0);
        class.init(&mut ctx);
        for c in 0..n {
            class.task_fork(&mut ctx, c as u32, None);
        }
        // Only the cost rule's debug check reads it.
        #[cfg(debug_assertions)]
        {
            let rq_locks: Vec<_> = (0..n).map(|c| class.rq_lockp(c)).collect();
            k.state_map.set_rq_locks(&rq_locks);
        }
        let init = k.create_task(None, root, 1, 0, k.online_mask(), 0);
        k.next_mm = 2;
        k.start_program(init, None);
        k.wake_up_new_task(0, init, None);
        for c in 0..n {
            k.queue.push(
                0,
                Event::Resume {
                    cpu: c as u16,
                    gen: 0,
                },
            );
        }
        for c in 0..n {
            let at = tick_ns + k.cpus[c].tick_phase;
            k.queue.push(at, Event::Tick { cpu: c as u16 });
        }
        k
    }

    /// CPU `c` and its idle task, the tick `phase` into the tick period.
    fn boot_cpu(&mut self, c: usize, phase: Time) {
        let wq = self.new_waitq();
        self.tasks.push(Task {
            pid: 0,
            mm: 0,
            comm: None,
            nice: 0,
            policy: SchedPolicy::Other,
            rt_priority: 0,
            cpus_allowed: crate::machine::CpuMask::single(c),
            processor: c,
            last_ran: Some(c),
            last_in: 0,
            state: TaskState::Running,
            on_cpu: Some(c),
            need_resched: false,
            need_resched_at: 0,
            is_idle: true,
            parent: None,
            children: Vec::new(),
            child_slot: 0,
            zombies: Default::default(),
            wait_chldexit: wq,
            kstack: vec![Frame::Idle],
            ret: 0,
            wq_regs: Vec::new(),
            stats: TaskStats::default(),
            born_at: 0,
            start_offset: 0,
            woken_at: crate::kernel::task::NOT_WOKEN,
        });
        self.programs.push(None);
        self.cpus.push(Cpu {
            curr: c as u32,
            curr_seen: crate::kernel::sched::Published::new(c as u32),
            idle: c as u32,
            clock: 0,
            acct: [0; 4],
            halted: false,
            user: None,
            gen: 0,
            pending_ticks: 0,
            pending_ipi: false,
            hrtimers_fired: crate::kernel::types::WakeList::new(),
            active_mm: 0,
            timers: Vec::new(),
            delacks: Vec::new(),
            tick_phase: phase,
            nr_switches: 0,
            migrate: None,
            locks_held: 0,
        });
    }
}
