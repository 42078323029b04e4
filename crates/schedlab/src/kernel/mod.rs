//! The simulated kernel, a type of its own ([`Kernel`]), split along its objects: CPUs and
//! their frame interpreter (`cpu.rs`), boot (`boot.rs`), the process lifecycle
//! (`process.rs`), pipes (`pipe.rs`), sockets (`socket.rs`), the other system calls
//! (`syscall.rs`), wait queues ([`waitq`]), byte streams and files ([`chan`]), tasks
//! ([`task`]); the scheduler core and the scheduling-class seam ([`sched`]); and the
//! vocabulary everything above shares: identifiers ([`types`]) and the program ABI
//! ([`abi`]). The kernel owns the scheduling class and the tasks' programs; it knows no
//! policy and no workload.
//!
//! # How a CPU runs
//!
//! Every CPU executes the top `Frame` (`frame.rs`) of its current task's kernel stack (the
//! idle task included). Frames that touch state other CPUs can see — system call bodies,
//! wake-ups, `schedule()`, interrupt handlers — run only when the CPU's local clock equals
//! global simulated time ("synced"); work charged by a frame advances the local clock and
//! the CPU resumes with a `Resume` event when global time catches up. Pure frames (user
//! mode bookkeeping, `ret_from_sys_call` checks) may run ahead. User-mode computation is
//! interruptible: a tick or IPI that lands inside it rewinds the CPU to the interrupt time.
//! Interrupts that land while the CPU is in the kernel are held pending and taken at the
//! next frame boundary, as `spin_lock_irq` sections and the non-preemptible 2.4 kernel did.
//!
//! # Serialization rules (the modelled locks)
//!
//! * Run queues and everything a class keeps are protected by the class's own locks,
//!   taken through [`sched::SchedCtx`]: the core takes the run-queue lock the class names
//!   (`SchedClass::rq_lockp`) around `schedule()`'s pick and the wake-up's enqueue; the
//!   class takes any other (2.4: one `runqueue_lock` for every CPU; MQ and O(1): one lock
//!   per CPU, a second one only by trylock or in CPU order). Lock order and which hook is
//!   called with which lock held: [`sched`].
//! * Class hooks run atomically at the time their first lock is granted; see
//!   [`crate::machine::spinlock`] for the ticket model and what it approximates.
//! * Wait queues, pipes and sockets are not locked in the model (their locks are
//!   uncontended per-object locks in the workloads we run); their costs are in the
//!   per-call constants.
//!
//! # Task states
//!
//! A task is in exactly one [`task::TaskState`]. `Running` tasks are on a CPU
//! (`on_cpu`) or in a policy's run queue; sleeping tasks are on wait queues or timers;
//! zombies wait for their parent. A task is never on two CPUs; a CPU's time is always
//! exactly one of running, scheduler, spinning or idle ([`Acct`]).

pub mod abi;
mod boot;
pub mod chan;
mod cpu;
pub mod events;
pub(crate) mod frame;
pub mod initial;
pub mod kmem;
pub mod limits;
pub mod net;
mod pipe;
mod process;
pub mod release;
pub mod sched;
pub mod schedstat;
mod socket;
mod syscall;
pub mod task;
mod tcp;
pub mod types;
mod udp;
mod usync;
pub mod waitq;

use crate::engine::{EventQueue, SimRng, Time};
use crate::machine::hotline::HotLine;
use crate::machine::{CacheModel, CpuId, Interconnect, LockId, Machine, SpinLock};

use abi::{Program, Record};
use sched::{SchedClass, SchedCtx};

use chan::{Fd, File, Stream};
use task::{Task, TaskId, TaskState};
use types::WakeList;
use waitq::{WaitQueue, WqId};

/// What a CPU's time is spent on. Every nanosecond of every CPU is in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acct {
    /// A task runs: user mode and system calls.
    Running = 0,
    /// Scheduler work: `schedule()`, wake-up placement, ticks, balancing, switches.
    Sched = 1,
    /// Spinning on a contended lock.
    Spin = 2,
    /// Idle (halted or coming out of halt).
    Idle = 3,
}

/// Events of the simulation.
#[allow(missing_docs)] // fields are named by their variant docs
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A CPU's local clock has been reached: continue its frames. Stale if `gen` differs.
    Resume { cpu: u16, gen: u32 },
    /// Timer interrupt on a CPU.
    Tick { cpu: u16 },
    /// A reschedule IPI arrives.
    Ipi { cpu: u16 },
    /// A high-resolution timer of `task`, armed on `cpu`, expires.
    HrTimer { cpu: u16, task: TaskId },
}

/// The timer slack of a SCHED_OTHER task (`init_task.timer_slack_ns`, Linux ≥ 2.6.28:
/// 50 µs): an hrtimer sleep may end this much after its instant, and on a quiet CPU does.
pub const TIMER_SLACK_NS: Time = 50_000;

/// A user-mode pass over a working set in progress on a CPU (`Kernel::compute`).
#[derive(Clone, Copy, Debug)]
pub struct UserPass {
    /// When the pass (re)started on this CPU.
    pub start: Time,
    /// When it ends unless interrupted: `start` + refill stall + `compute`.
    pub end: Time,
    /// Computation in the pass, ns (the stall is the rest of `end − start`).
    pub compute: Time,
    /// The working set's size, bytes.
    pub ws: u64,
    /// Bytes of the set this step of the pass touches.
    pub todo: u64,
    /// Bytes of the set the pass had left to touch when this step began (`todo` of them
    /// now, the rest in the `Compute` frame that continues it).
    pub rest: u64,
}

/// Per-CPU state.
pub struct Cpu {
    /// Task running now (the idle task when idle).
    pub curr: TaskId,
    /// `curr` as other CPUs read it without a lock (2.4's `aligned_data[cpu].curr`,
    /// `sys_sched_yield`, `reschedule_idle`): the value of the reader's moment.
    pub curr_seen: crate::kernel::sched::Published<TaskId>,
    /// This CPU's idle task.
    pub idle: TaskId,
    /// Local clock: time up to which this CPU's work is accounted.
    pub clock: Time,
    /// Time by category, indexed by [`Acct`].
    pub acct: [Time; 4],
    /// Halted in the idle loop, waiting for an interrupt.
    pub halted: bool,
    /// When in user-mode compute: the pass in progress.
    pub user: Option<UserPass>,
    /// Generation of the pending `Resume` event.
    pub gen: u32,
    /// Interrupts held while in the kernel.
    pub pending_ticks: u32,
    /// A reschedule IPI is held.
    pub pending_ipi: bool,
    /// Tasks whose high-resolution timer expired, its interrupt held (in expiry order).
    pub hrtimers_fired: crate::kernel::types::WakeList,
    /// The mm loaded in the MMU (lazy TLB: idle keeps the previous one).
    pub active_mm: u32,
    /// Sleep timers armed on this CPU: (expiry jiffy, task).
    pub timers: Vec<(u64, TaskId)>,
    /// Delayed-ACK timers armed on this CPU: (expiry jiffy, the stream whose reader owes
    /// the ACK), in arming order ([`tcp`]).
    pub delacks: Vec<(u64, u32)>,
    /// Offset of this CPU's tick within the tick period.
    pub tick_phase: Time,
    /// Context switches on this CPU.
    pub nr_switches: u64,
    /// A task `schedule()` took off this CPU because its affinity no longer allows it
    /// here; the core places it on an allowed CPU once it is switched out.
    pub migrate: Option<TaskId>,
    /// Spinlocks this CPU holds now: a hook must return with none, checked after every
    /// hook without looking at every lock of a 1 024-CPU machine.
    pub locks_held: u32,
}

/// Whole-run counters the kernel keeps.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct KernelStats {
    /// All context switches (`nr_switches`, idle included).
    pub context_switches: u64,
    /// Switches whose incoming task is not an idle task.
    pub task_switches: u64,
    /// Task switches whose incoming task last ran on another CPU.
    pub unaffine_switches: u64,
    /// Changes of a task's run-queue CPU made by the policy (`set_task_cpu`).
    pub migrations: u64,
    /// Reschedule IPIs sent.
    pub ipis: u64,
    /// Successful `try_to_wake_up`s.
    pub wakeups: u64,
    /// Timer ticks handled.
    pub ticks: u64,
    /// System calls.
    pub syscalls: u64,
    /// TCP data segments sent.
    pub tcp_segments: u64,
    /// TCP pure ACKs sent.
    pub tcp_acks: u64,
    /// TCP ACKs that rode on a data segment (pingpong mode, `tcp_delack=on`).
    pub tcp_piggybacked_acks: u64,
    /// TCP ACKs the delayed-ACK timer sent alone (`tcp_delack=on`).
    pub tcp_delayed_acks: u64,
    /// ACKs whose `write_space` woke a TCP socket's sleepers.
    pub tcp_write_space_wakes: u64,
    /// UDP datagrams sent.
    pub udp_datagrams: u64,
    /// UDP datagrams dropped at a full receive buffer or a closed peer.
    pub udp_drops: u64,
    /// TCP calls that found their socket owned by another task and slept in `lock_sock`.
    pub sock_lock_waits: u64,
    /// Lines of pipe and socket state pulled from the CPU that wrote them last.
    pub stream_state_transfers: u64,
    /// AF_UNIX skbs read on another CPU than their writer's, priced by `skb_remote_ns`
    /// (counted only where the preset has that cost).
    pub skb_remote: u64,
    /// AF_UNIX skbs read after their writer's CPU had written more skb bytes than its L2
    /// holds (counted only where the preset prices skbs by depth: `skb_cold_ns`).
    pub skb_cold: u64,
    /// What the depths of the skbs read cost in all (`skb_depth_ns` or the step), ns.
    pub skb_depth_ns: u64,
    /// What switched-in tasks' refills cost by reuse distance in all (`task_refill_ns`,
    /// `wake_refill_ns`, `mm_refill_ns`), ns.
    pub switch_refill_ns: u64,
    /// Reads that freed skbs after another CPU had touched the skb allocator's shared
    /// state (priced `skb_shared_ns` by depth, or, cold skbs only, `skb_page_shared_ns`).
    pub skb_page_pulls: u64,
    /// What those pulls cost in all, ns.
    pub skb_shared_ns: u64,
    /// 6.x pipes: writes that found every slot of the ring taken and slept.
    pub pipe_full_waits: u64,
    /// 6.x pipes: reads of a full ring, each waking one writer.
    pub pipe_writer_wakes: u64,
    /// 6.x pipes: what the depth of the data read cost in all (`pipe_depth_ns`), ns.
    pub pipe_depth_ns: u64,
    /// `files_struct` lines pulled by `fget` from the CPU that took `file_lock` last.
    pub files_line_transfers: u64,
    /// `mm->cpu_vm_mask` lines pulled by `switch_mm` from the CPU that set a bit last.
    pub vm_mask_transfers: u64,
    /// Time the pulls of mm lines waited for the line to finish moving elsewhere.
    pub mm_line_wait_ns: Time,
    /// Pulls of mm lines (each of the two lines counts).
    pub mm_line_pulls: u64,
    /// SysV `semop` calls.
    pub semops: u64,
    /// `semop` calls that slept.
    pub semop_sleeps: u64,
    /// Tasks created (fork and clone).
    pub forks: u64,
    /// Tasks moved off a CPU their new affinity excludes (`sched_setaffinity`).
    pub affinity_moves: u64,
    /// `schedule()` calls.
    pub schedule_calls: u64,
    /// Time inside the scheduler's part of `schedule()`, from requesting the run-queue
    /// lock to releasing it (the class's pick, with its spins, scans and balancing).
    pub schedule_ns: Time,
    /// Of which acquiring locks (spinning, the atomic, line transfers).
    pub schedule_lock_ns: Time,
    /// Wake-up latency: from a task's wake-up (or a new task's first) to its switch-in.
    pub wakeup_latency: crate::engine::Histogram,
}

/// The kernel: its state, the scheduling class it calls, and each task's program.
pub struct Kernel {
    /// Global simulated time (the time of the event being handled).
    pub now: Time,
    /// The machine.
    pub machine: Machine,
    /// Timer frequency of the policy's kernel.
    pub hz: u32,
    /// High-resolution timers (the policy's kernel is ≥ 2.6.16): sleeps end at their
    /// instant plus [`TIMER_SLACK_NS`], on an interrupt of their own.
    pub hrtimers: bool,
    /// Tick period.
    pub tick_ns: Time,
    pub(crate) queue: EventQueue<Event>,
    /// The run's random source (the workloads').
    pub rng: SimRng,
    /// The scheduler's random source (`sched_rng()`, NI_RANDOM's die): stream 2 of the
    /// seed, so that a policy's draws never shift a workload's.
    pub sched_rng: SimRng,
    /// The seeded initial conditions (tick phases, task start offsets): a stream of the
    /// seed of its own.
    pub initial: initial::Initial,
    /// Task table; ids are never reused.
    pub tasks: Vec<Task>,
    /// CPUs.
    pub cpus: Vec<Cpu>,
    /// The CPUs running their idle task, for the walks over every CPU (above 64 CPUs
    /// without the coherence model).
    pub(crate) idle_cpus: sched::IdleCpus,
    /// Whose scheduler state each declared line is.
    pub(crate) state_map: sched::StateMap,
    /// Lock table.
    pub locks: Vec<SpinLock>,
    /// Caches.
    pub cache: CacheModel,
    /// Buses and the directory of scheduler lines.
    pub ic: Interconnect,
    /// Wait queues.
    pub waitqs: Vec<WaitQueue>,
    /// The pthread objects of the run ([`usync`]), by id.
    pub(crate) usync: Vec<usync::Object>,
    /// Streams.
    pub streams: Vec<Stream>,
    /// AF_UNIX skb bytes (truesize) written per CPU: the clock of [`chan::Ageing`].
    pub(crate) skb_written: Vec<u64>,
    /// Each CPU's last-level cache (its "bus"), and the skb bytes written per LLC so far:
    /// beyond its L2 an skb's depth is what every CPU of its LLC wrote after it.
    pub(crate) skb_llc: Vec<usize>,
    pub(crate) skb_written_llc: Vec<u64>,
    /// 6.x pipe data bytes written per CPU and per LLC: the clocks of a pipe page's
    /// reuse distance ([`chan::PipeStamp`], `pipe_depth_ns`).
    pub(crate) pipe_written: Vec<u64>,
    pub(crate) pipe_written_llc: Vec<u64>,
    /// The CPU that last freed a cold AF_UNIX skb: the allocator's shared state (slab
    /// node lists, page allocator zone, memcg page counter) is in its cache.
    pub(crate) skb_pages_owner: Option<CpuId>,
    /// TCP socket locks (`lock_sock`), by the fd of their endpoint ([`tcp`]).
    pub(crate) sock_locks: Vec<tcp::SockLock>,
    /// The socket lock the running system call body took, released by a
    /// [`frame::Frame::ReleaseSock`] once the body's work has elapsed.
    /// Receive queues a packet over loopback reached in the running system call body:
    /// their readers are woken once the body's work has elapsed ([`frame::Frame::WakeQueue`]).
    pub(crate) lo_wakes: Vec<WqId>,
    pub(crate) sock_taken: Option<Fd>,
    /// File table.
    pub files: Vec<File>,
    /// Each file's `f_count` line, by fd: what a shared table's `fget` writes (6.x).
    pub(crate) file_lines: Vec<SharedLine>,
    /// Per mm (the threads of one `clone(CLONE_VM|CLONE_FILES)` family share one
    /// `mm_struct` and one `files_struct`): the CPUs that wrote their shared lines last.
    pub(crate) mm_lines: Vec<MmLines>,
    /// Open files (for `file-max`).
    pub open_files: u64,
    /// User tasks not yet exited.
    pub live_tasks: u64,
    /// `nr_threads`: tasks in the task list, zombies included (created and not yet
    /// released; the idle tasks are not in the list). What 2.4's `for_each_task` walks.
    pub(crate) nr_threads: u64,
    pub(crate) next_pid: u32,
    pub(crate) next_mm: u32,
    /// Counters.
    pub stats: KernelStats,
    /// The scheduling class.
    pub(crate) class: Box<dyn SchedClass>,
    /// Each task's program (`None` for the idle tasks and reaped tasks).
    pub(crate) programs: Vec<Option<Box<dyn Program>>>,
    /// What the programs recorded.
    pub rec: Record,
    /// The first resource limit that refused a call, to name it in the run's error.
    pub limit_hit: Option<limits::Limit>,
    /// Low memory the workload holds ([`kmem`]).
    pub kmem: kmem::KmemUse,
    /// The sizes of what the policy's release allocates ([`release::Kmem`]).
    pub(crate) kmem_sizes: release::Kmem,
    /// The workload asked to stop, or failed: no more frames run.
    pub(crate) stopped: bool,
    /// When the last task left its CPU (or the workload stopped): the run ends there.
    pub(crate) stop_at: Option<Time>,
    /// The trace observer, if a trace was asked for (`None`: one check per event point).
    pub(crate) trace: Option<Box<dyn crate::kernel::events::TraceSink>>,
    /// The loopback path's shared locks and lines ([`net`]), made at the first packet.
    pub(crate) net: Option<Box<net::NetShared>>,
}

/// Charge `ns` of work in category `cat` to `cpu`, advancing its clock (and, for running
/// time, its current task's runtime).
#[inline]
pub(crate) fn charge(cpus: &mut [Cpu], tasks: &mut [Task], cpu: CpuId, ns: Time, cat: Acct) {
    let c = &mut cpus[cpu];
    c.clock += ns;
    c.acct[cat as usize] += ns;
    if cat == Acct::Running {
        let curr = c.curr;
        tasks[curr as usize].stats.runtime_ns += ns;
    }
}

impl Kernel {
    /// Charge `ns` of work in category `cat` to `cpu`, advancing its clock.
    #[inline]
    pub fn charge(&mut self, cpu: CpuId, ns: Time, cat: Acct) {
        charge(&mut self.cpus, &mut self.tasks, cpu, ns, cat);
    }

    /// `jiffies` at time `t`.
    #[inline]
    pub fn jiffies_at(&self, t: Time) -> u64 {
        t / self.tick_ns
    }

    /// The task struct of `p`.
    #[inline]
    pub fn task(&self, p: TaskId) -> &Task {
        &self.tasks[p as usize]
    }

    /// Mutable task struct of `p`.
    #[inline]
    pub fn task_mut(&mut self, p: TaskId) -> &mut Task {
        &mut self.tasks[p as usize]
    }

    /// The affinity mask of every CPU online.
    pub fn online_mask(&self) -> crate::machine::CpuMask {
        crate::machine::CpuMask::all(self.cpus.len())
    }

    /// Number of CPUs online.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Create a lock named `name`.
    pub fn new_lock(&mut self, name: &'static str) -> LockId {
        self.locks.push(SpinLock::new(name));
        (self.locks.len() - 1) as LockId
    }

    /// Create a wait queue.
    pub fn new_waitq(&mut self) -> WqId {
        self.waitqs.push(WaitQueue::default());
        (self.waitqs.len() - 1) as WqId
    }

    /// Put `task` to sleep on `wq` (state `Interruptible`, non-exclusive entry).
    pub(crate) fn sleep_on(&mut self, task: TaskId, wq: WqId) {
        self.sleep_on_as(task, wq, false, TaskState::Interruptible);
    }

    /// Put `task` to sleep on `wq` in `state`, as an `exclusive` entry or not.
    pub(crate) fn sleep_on_as(
        &mut self,
        task: TaskId,
        wq: WqId,
        exclusive: bool,
        state: TaskState,
    ) {
        self.tasks[task as usize].state = state;
        self.waitqs[wq as usize].add(task, exclusive);
        self.tasks[task as usize].wq_regs.push(wq);
    }

    /// Remove `task` from every wait queue it registered on.
    pub(crate) fn unregister_waits(&mut self, task: TaskId) {
        let regs = std::mem::take(&mut self.tasks[task as usize].wq_regs);
        for wq in &regs {
            self.waitqs[*wq as usize].remove(task);
        }
        let mut regs = regs;
        regs.clear();
        self.tasks[task as usize].wq_regs = regs;
    }

    /// A stream's data or room wake-up of `wq`'s sleepers (`sock_def_readable`,
    /// `unix_write_space`, the pipe's): the waiters and whether the wake-up is
    /// synchronous, which is the release's ([`release::Release::sync_data_wakeups`]).
    pub(crate) fn data_wake(&mut self, cpu: CpuId, wq: WqId) -> (WakeList, bool) {
        let sync = self.class.release().sync_data_wakeups();
        (self.take_waiters(cpu, wq, 0), sync)
    }

    /// `__wake_up_common` walk: take the sleeping waiters of `wq` to wake (at most
    /// `nr_exclusive` exclusive ones; 0 = all), charging the walk to `cpu`. The result is
    /// in reverse wake order, ready for a [`frame::Frame::Wake`].
    pub(crate) fn take_waiters(&mut self, cpu: CpuId, wq: WqId, nr_exclusive: u32) -> WakeList {
        let q = &mut self.waitqs[wq as usize];
        if q.waiters.is_empty() {
            return WakeList::new();
        }
        let tasks = &self.tasks;
        let mut woken = WakeList::new();
        let mut exclusive_left = nr_exclusive;
        let mut walked = 0u64;
        let mut stop = false;
        // The walk in queue order, taking the woken entries out in place.
        q.waiters.retain(|w| {
            if stop {
                return true;
            }
            walked += 1;
            if !tasks[w.task as usize].state.is_sleeping() {
                return true;
            }
            woken.push(w.task);
            if w.exclusive && nr_exclusive > 0 {
                exclusive_left -= 1;
                stop = exclusive_left == 0;
            }
            false
        });
        for &t in &woken {
            let regs = &mut self.tasks[t as usize].wq_regs;
            if let Some(i) = regs.iter().position(|&r| r == wq) {
                regs.swap_remove(i);
            }
        }
        let cost = walked * self.machine.costs().waitq_entry_ns;
        self.charge(cpu, cost, Acct::Running);
        woken.reverse();
        woken
    }

    /// The scheduling class and a context for one of its hooks on `cpu`. Hooks run
    /// synced: a lock requested from a CPU whose clock ran ahead of global time would be
    /// reserved in the future and make every other CPU spin.
    #[inline]
    pub(crate) fn sched(&mut self, cpu: CpuId) -> (&mut dyn SchedClass, SchedCtx<'_>) {
        debug_assert!(
            self.cpus[cpu].clock <= self.now,
            "scheduler hook on cpu {cpu} at local {} ns, ahead of global {} ns",
            self.cpus[cpu].clock,
            self.now
        );
        self.split(cpu)
    }

    /// A hook context on `cpu` for a class other than the kernel's own (test beds).
    pub fn ctx(&mut self, cpu: CpuId) -> SchedCtx<'_> {
        self.split(cpu).1
    }

    /// The class, and the parts of the kernel a class may see, borrowed apart.
    #[inline]
    fn split(&mut self, cpu: CpuId) -> (&mut dyn SchedClass, SchedCtx<'_>) {
        let ctx = SchedCtx::new(
            &mut self.tasks,
            &mut self.cpus,
            &mut self.idle_cpus,
            &mut self.state_map,
            &mut self.locks,
            &mut self.ic,
            &mut self.queue,
            &mut self.stats,
            &mut self.sched_rng,
            &self.machine,
            self.tick_ns,
            cpu,
            self.nr_threads,
            self.trace.as_deref_mut(),
        );
        (self.class.as_mut(), ctx)
    }

    /// The scheduling class.
    pub fn class(&self) -> &dyn SchedClass {
        self.class.as_ref()
    }

    /// Check the kernel-level invariants; `Err` names the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.idle_cpus.check(&self.cpus)?;
        for (i, c) in self.cpus.iter().enumerate() {
            let sum: Time = c.acct.iter().sum();
            if sum != c.clock {
                return Err(format!(
                    "cpu {i}: running+scheduler+spinning+idle = {sum} ns but elapsed = {} ns",
                    c.clock
                ));
            }
            let t = &self.tasks[c.curr as usize];
            if t.on_cpu != Some(i) {
                return Err(format!(
                    "cpu {i}: curr pid {} has on_cpu {:?}",
                    t.pid, t.on_cpu
                ));
            }
        }
        for (id, t) in self.tasks.iter().enumerate() {
            if let Some(c) = t.on_cpu {
                if self.cpus[c].curr as usize != id {
                    return Err(format!(
                        "task pid {} claims cpu {c} which runs another task",
                        t.pid
                    ));
                }
                if t.state == TaskState::Dead {
                    return Err(format!("dead task pid {} is on cpu {c}", t.pid));
                }
            }
            for (slot, &child) in t.children.iter().enumerate() {
                let k = &self.tasks[child as usize];
                if k.child_slot as usize != slot || k.parent != Some(id as TaskId) {
                    return Err(format!(
                        "pid {}: child pid {} at slot {slot} has slot {} and parent {:?}",
                        t.pid, k.pid, k.child_slot, k.parent
                    ));
                }
            }
        }
        for (i, s) in self.streams.iter().enumerate() {
            if s.written != s.read + s.len + s.tcp.held {
                return Err(format!(
                    "stream {i}: {} bytes written but {} read and {} buffered",
                    s.written, s.read, s.len
                ));
            }
            let skb_bytes: u64 = s.skbs.iter().map(|b| b.data).sum();
            if s.kind != chan::StreamKind::Pipe && skb_bytes != s.len {
                return Err(format!(
                    "stream {i}: skbs hold {skb_bytes} bytes, len {}",
                    s.len
                ));
            }
        }
        let runtime: Time = self.tasks.iter().map(|t| t.stats.runtime_ns).sum();
        let running: Time = self
            .cpus
            .iter()
            .map(|c| c.acct[Acct::Running as usize])
            .sum();
        if runtime != running {
            return Err(format!(
                "task runtimes sum to {runtime} ns but CPUs ran tasks for {running} ns"
            ));
        }
        self.cache.check()?;
        self.ic.check()?;
        self.class.check(self)
    }
}

/// The lines of one mm that every CPU running its threads writes with a locked
/// operation: `mm->cpu_vm_mask` (`switch_mm`) and `files->file_lock` (`fget`).
#[derive(Clone, Debug, Default)]
pub(crate) struct MmLines {
    vm_mask: SharedLine,
    files: SharedLine,
    /// Tasks holding the mm and its `files_struct` (`mm_users`, `files->count`): created
    /// and not yet exited.
    pub(crate) users: u32,
    /// Per CPU that switched to the mm: its switch count then (`Cpu::nr_switches`), kept
    /// where the preset prices an mm's refill by reuse distance (`mm_refill_ns`).
    pub(crate) last_in: Vec<(CpuId, u64)>,
}

/// A line written with locked operations: the CPU that wrote it last, and its transfers
/// in time (they queue behind each other).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedLine {
    owner: Option<CpuId>,
    transit: HotLine,
}

/// Which of [`MmLines`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum MmLine {
    VmMask,
    Files,
}

impl Kernel {
    /// `cpu` writes line `which` of `mm`: when another CPU wrote it last, the line comes
    /// from that CPU's cache, after the transfers of it already under way (coherence
    /// model; free without it). Returns the wait and the transfer.
    pub(crate) fn pull_mm_line(&mut self, cpu: CpuId, mm: u32, which: MmLine) -> Time {
        // Without the coherence model no line moves, and nobody needs to know where.
        if !self.ic.model().coherence {
            return 0;
        }
        self.mm_lines_of(mm);
        let l = &mut self.mm_lines[mm as usize];
        let line = match which {
            MmLine::VmMask => &mut l.vm_mask,
            MmLine::Files => &mut l.files,
        };
        let t = self.cpus[cpu].clock;
        let Some((wait, ns)) = line.pull_from(cpu, t, &self.machine, &mut self.ic) else {
            return 0;
        };
        self.stats.mm_line_wait_ns += wait;
        self.stats.mm_line_pulls += 1;
        ns
    }
}

impl Kernel {
    /// The shared lines and users of `mm`.
    pub(crate) fn mm_lines_of(&mut self, mm: u32) -> &mut MmLines {
        let mm = mm as usize;
        if self.mm_lines.len() <= mm {
            self.mm_lines.resize(mm + 1, MmLines::default());
        }
        &mut self.mm_lines[mm]
    }

    /// True when another live task holds `task`'s `files_struct` (its threads).
    pub(crate) fn files_shared(&self, task: TaskId) -> bool {
        let mm = self.tasks[task as usize].mm as usize;
        self.mm_lines.get(mm).is_some_and(|l| l.users > 1)
    }

    /// `cpu` takes a reference on file `fd` (`f_count`, 6.x's `__fget_files`): when
    /// another CPU wrote the count last, its line comes from that CPU's cache.
    pub(crate) fn pull_file_line(&mut self, cpu: CpuId, fd: Fd) -> Time {
        if !self.ic.model().coherence {
            return 0;
        }
        let i = fd as usize;
        if self.file_lines.len() <= i {
            self.file_lines.resize(i + 1, SharedLine::default());
        }
        let t = self.cpus[cpu].clock;
        let Some((wait, ns)) = self.file_lines[i].pull_from(cpu, t, &self.machine, &mut self.ic)
        else {
            return 0;
        };
        self.stats.mm_line_wait_ns += wait;
        self.stats.mm_line_pulls += 1;
        ns
    }
}

impl SharedLine {
    /// `cpu` writes the line at `t`: `None` when it wrote it last (or nobody did), else
    /// the wait for the transfers under way and the whole time, that wait included.
    fn pull_from(
        &mut self,
        cpu: CpuId,
        t: Time,
        machine: &Machine,
        ic: &mut Interconnect,
    ) -> Option<(Time, Time)> {
        let last = self.owner.replace(cpu);
        let from = last.filter(|&o| o != cpu)?;
        let wait = self
            .transit
            .transfer(t, machine.line_transfer_ns(from, cpu));
        Some((wait, wait + ic.transfer_run(t + wait, from, cpu, 1)))
    }

    /// As [`SharedLine::pull_from`], the whole time only (0 for a hit).
    pub(crate) fn pull(
        &mut self,
        cpu: CpuId,
        t: Time,
        machine: &Machine,
        ic: &mut Interconnect,
    ) -> Time {
        self.pull_from(cpu, t, machine, ic).map_or(0, |(_, ns)| ns)
    }
}
