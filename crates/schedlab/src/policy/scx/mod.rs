//! `scx`: sched_ext as Linux 6.12's `kernel/sched/ext.c` runs it, with the BPF scheduler
//! behind [`ScxOps`] — a scheduler's C source compiled natively ([`cabi`]) or a Rust one.
//!
//! Design (sched_ext.md; ext.c function names): a runnable task is *queued* on its CPU's
//! run queue (`SCX_TASK_QUEUED`) and sits in at most one dispatch queue (DSQ): its CPU's
//! local DSQ, the global DSQ of its CPU's NUMA node (`global_dsqs[node]`, as Debian's
//! 6.12 has it), or one the scheduler created (FIFO or vtime-ordered); or in
//! none, owned by the BPF scheduler between `ops.enqueue` and a later dispatch. A wake-up
//! asks `ops.select_cpu` for the CPU (which may dispatch directly), then `ops.enqueue`
//! (likewise); `schedule()` runs `balance_one`: keep `prev` while it has slice, else the
//! local DSQ, else the global DSQ, else `ops.dispatch` in a loop, its dispatches buffered
//! and flushed after each call (`finish_dispatch`). Slices run down by the time a task
//! runs (`update_curr_scx`); at zero the tick reschedules. The built-in idle mask
//! answers `scx_bpf_select_cpu_dfl`; on a machine with SMT it keeps ext.c's idle-core
//! mask too (`idle_masks.smt`: CPUs whose whole core is idle), which
//! `scx_bpf_select_cpu_dfl` and `scx_bpf_pick_idle_cpu` try first. `scx_bpf_error` (or an invalid verdict, or the
//! watchdog) ends the BPF scheduler: at once every task goes through the global DSQ in
//! FIFO order (ext.c's bypass mode); at the next tick the disable path moves every task
//! to the fair class (EEVDF, sharing the run queues' locks), which runs them from then
//! on; the report says why.
//!
//! Costs: each CPU's run queue has its spinlock, the global DSQ and each created DSQ
//! theirs (`dsq->lock`), all the machine's spinlocks; a DSQ's list head and the idle mask
//! are lines priced by the coherence model. A shared DSQ on 8 CPUs contends as 2.4's
//! `runqueue_lock` did.
//!
//! Invariants (checked by [`Ext::check`]): a task is on at most one DSQ, and one on a DSQ
//! is queued and not running; a local DSQ holds only tasks of that CPU.
//!
//! Cgroups: one, the root (`ops.cgroup_init` runs for it at enable; every task is in
//! it), as a run with no cgroup hierarchy set up has.
//!
//! Not modelled: other sched classes than this one and the idle class (no RT, so
//! `cpu_acquire`/`cpu_release` never run), `SCX_KICK_WAIT`'s wait, core scheduling,
//! cgroups below the root.

pub mod cabi;
pub mod ops;

use crate::kernel::sched::Curr;
use std::collections::{BTreeMap, VecDeque};

use crate::engine::Time;
use crate::kernel::task::{TaskId, TaskState};
use crate::machine::{CpuId, LineId, LockId};
use crate::policy::fair::entity::LoadWeight;

use super::{PolicyInfo, SchedClass, SchedCtx, Shared, Wake};
use crate::machine::Machine;
use crate::spec::{Params, SpecError};

use ops::consts::*;
pub use ops::{Has, Kf, ScxOps};

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "scx",
    about: "sched_ext (Linux 6.12 ext.c) running a scheduler's C source: scx:src=FILE.bpf.c, scx:@fifo, @vtime, @central",
    params: PARAMS,
    build,
};

crate::options! {
    /// Options of `scx`.
    pub struct Options in PARAMS {
        /// The scheduler's source.
        src: String = text("@fifo")
            .help("the scheduler: a sched_ext C source (FILE.bpf.c) compiled natively, or a shipped example (@fifo, @vtime, @central)")
            .source("sched_ext.md; scx/examples");
        /// A shared object built before.
        so: String = text("none")
            .help("a scheduler already built as a shared object (with schedlab's headers and shim) instead of src")
            .source("sched_ext.md");
        /// The scheduler's own headers.
        include: String = text("auto")
            .help("the scheduler's include directory (auto: include/ beside the source, as the kernel's tools/sched_ext has it)")
            .source("tools/sched_ext/include");
        /// Knobs the loader sets.
        set: String = text("none")
            .help("globals the loader sets before the scheduler starts (its rodata knobs), NAME=VALUE;NAME=VALUE")
            .source("libbpf skeleton rodata");
        /// Timer frequency.
        hz: u32 = hz("250").source("modern.md §0 (Debian amd64 config: HZ=250)");
    }
}

fn build(p: &Params, m: &Machine) -> Result<Box<dyn SchedClass>, SpecError> {
    let o = Options::from_params(p);
    let source = if o.so != "none" {
        cabi::Source::SharedObject(o.so.clone().into())
    } else if let Some(name) = o.src.strip_prefix('@') {
        let (n, _) = cabi::EXAMPLES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| {
                let names: Vec<String> = cabi::EXAMPLES
                    .iter()
                    .map(|(n, _)| format!("@{n}"))
                    .collect();
                SpecError::Invalid(format!(
                    "unknown example scheduler '@{name}' (accepted: {}, or src=FILE.bpf.c)",
                    names.join(", ")
                ))
            })?;
        cabi::Source::Example(n)
    } else {
        cabi::Source::File(o.src.clone().into())
    };
    let mut set = Vec::new();
    for kv in o
        .set
        .split(';')
        .filter(|kv| !kv.is_empty() && *kv != "none")
    {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            SpecError::Invalid(format!(
                "scx set={kv}: expected NAME=VALUE (several separated by ';')"
            ))
        })?;
        set.push((k.to_string(), v.to_string()));
    }
    let spec = cabi::Spec {
        source,
        include: (o.include != "auto").then(|| o.include.clone().into()),
        set,
    };
    let ops = cabi::load(&spec).map_err(SpecError::Invalid)?;
    // The class the tasks return to if the scheduler ends: 6.12's, EEVDF at its defaults.
    let eevdf = &crate::policy::fair::INFO_EEVDF;
    let fair_params = crate::spec::resolve(
        "policy",
        &crate::spec::Spec::parse("policy", eevdf.name)?,
        eevdf.params,
    )?;
    let fair = (eevdf.build)(&fair_params, m)?;
    Ok(Box::new(
        Ext::new(Box::new(ops), o.hz, p.to_map()).with_fair(fair),
    ))
}

/// Where a task waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// A CPU's local DSQ.
    Local(CpuId),
    /// `SCX_DSQ_GLOBAL`: one per NUMA node (`global_dsqs[node]`).
    Global(usize),
    /// A DSQ the scheduler created.
    User(u64),
}

impl On {
    /// The DSQ's id as the scheduler names it (a local one as `SCX_DSQ_LOCAL_ON | cpu`).
    pub fn dsq_id(self) -> u64 {
        match self {
            On::Local(c) => SCX_DSQ_LOCAL_ON | c as u64,
            On::Global(_) => SCX_DSQ_GLOBAL,
            On::User(id) => id,
        }
    }
}

/// A shared dispatch queue (`struct scx_dispatch_q`).
pub struct Dsq {
    /// `dsq->id`.
    pub id: u64,
    lock: LockId,
    line: LineId,
    fifo: VecDeque<TaskId>,
    priq: BTreeMap<(u64, u64), TaskId>,
    seq: u64,
}

impl Dsq {
    fn new(ctx: &mut SchedCtx<'_>, id: u64, name: &'static str) -> Dsq {
        let line = ctx.new_line(name, None);
        Dsq {
            id,
            lock: ctx.new_lock(name, Some(line)),
            line,
            fifo: VecDeque::new(),
            priq: BTreeMap::new(),
            seq: 0,
        }
    }

    /// Tasks queued (`dsq->nr`).
    pub fn nr(&self) -> usize {
        self.fifo.len() + self.priq.len()
    }
}

/// A task's `struct sched_ext_entity`, the parts the model keeps.
#[derive(Clone, Debug, Default)]
pub struct TaskScx {
    /// `p->scx.slice`, ns.
    pub slice: u64,
    /// `p->scx.dsq_vtime`.
    pub dsq_vtime: u64,
    /// `p->scx.weight`.
    pub weight: u32,
    /// `SCX_TASK_QUEUED`: runnable, on its CPU's run queue.
    pub queued: bool,
    /// Owned by the BPF scheduler (ops state `SCX_OPSS_QUEUED`): enqueued, not dispatched.
    pub owned: bool,
    /// The DSQ it waits on.
    pub on: Option<On>,
    /// Its key on a vtime DSQ.
    priq_key: (u64, u64),
    /// A direct dispatch recorded by `select_cpu` or `enqueue`: (dsq id, enq flags).
    ddsp: Option<(u64, u64)>,
    /// When it last started running (`se.exec_start`).
    exec_start: Time,
    /// When it last became runnable without running (`runnable_at`, for the watchdog).
    runnable_at: Option<Time>,
}

/// One buffered dispatch (`struct scx_dsp_buf_ent`).
#[derive(Clone, Copy, Debug)]
struct Disp {
    p: TaskId,
    dsq_id: u64,
    enq_flags: u64,
}

/// The class's state: what the kfuncs act on.
#[derive(Default)]
pub struct ExtState {
    rq_lock: Vec<LockId>,
    local: Vec<VecDeque<TaskId>>,
    /// The global DSQs, one per NUMA node.
    global: Vec<Dsq>,
    /// NUMA node per CPU.
    node: Vec<usize>,
    user: BTreeMap<u64, Dsq>,
    /// Per task.
    pub tasks: Vec<TaskScx>,
    /// The built-in idle mask (`idle_masks.cpu`).
    idle: Vec<bool>,
    /// `idle_masks.smt`: CPUs whose whole core is idle (kept only when SMT is active).
    smt_idle: Vec<bool>,
    /// Each CPU's SMT siblings among the booted CPUs, itself included (`cpu_smt_mask`).
    siblings: Vec<Vec<CpuId>>,
    /// `sched_smt_active()`: some booted core has two CPUs.
    smt_active: bool,
    idle_line: Option<LineId>,
    /// Rotates `cpumask_any_and_distribute`'s start.
    idle_cursor: usize,
    in_balance: Vec<bool>,
    dsp_buf: Vec<Disp>,
    /// Tasks dispatched by the current `ops.dispatch` (`dspc->nr_tasks`).
    dsp_nr: u32,
    max_batch: usize,
    /// The task `select_cpu` or `enqueue` is deciding about (`direct_dispatch_task`).
    ddsp_task: Option<TaskId>,
    /// Why the BPF scheduler ended, if it did.
    exit: Option<String>,
    /// Runnable tasks were moved to the global DSQ after the scheduler ended.
    drained: bool,
    flags: u64,
    timeout: Time,
    next_watchdog: Time,
    stats: Stats,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    enqueues: u64,
    direct_dispatches: u64,
    dispatch_calls: u64,
    dispatched: u64,
    consumed: u64,
    consumed_remote: u64,
    moved: u64,
    kicks: u64,
    keep_prev: u64,
    select_cpu_dfl_idle: u64,
}

impl ExtState {
    fn ended(&self) -> bool {
        self.exit.is_some()
    }

    /// `scx_ops_error`: the first error ends the scheduler.
    pub fn error(&mut self, msg: String) {
        if self.exit.is_none() {
            self.exit = Some(msg);
        }
    }

    fn dsq_mut(&mut self, on: On) -> Option<&mut Dsq> {
        match on {
            On::Global(n) => self.global.get_mut(n),
            On::User(id) => self.user.get_mut(&id),
            On::Local(_) => None,
        }
    }

    /// `find_global_dsq(p)`: the global DSQ of the node of `p`'s CPU.
    fn global_of(&self, ctx: &SchedCtx<'_>, p: TaskId) -> On {
        On::Global(self.node[ctx.task(p).processor])
    }

    /// `find_dsq_for_dispatch`: a local DSQ's CPU, or a shared DSQ; an invalid one is an
    /// error and falls back to the global DSQ, as ext.c does.
    fn find_dsq_for_dispatch(
        &mut self,
        ctx: &SchedCtx<'_>,
        rq: CpuId,
        dsq_id: u64,
        p: TaskId,
    ) -> On {
        if dsq_id == SCX_DSQ_LOCAL {
            return On::Local(rq);
        }
        if dsq_id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON {
            let cpu = (dsq_id & SCX_DSQ_LOCAL_CPU_MASK) as usize;
            if cpu < ctx.nr_cpus() {
                return On::Local(cpu);
            }
            self.error(format!("invalid cpu {cpu} in SCX_DSQ_LOCAL_ON verdict"));
            return self.global_of(ctx, p);
        }
        if dsq_id == SCX_DSQ_GLOBAL {
            return self.global_of(ctx, p);
        }
        if self.user.contains_key(&dsq_id) {
            return On::User(dsq_id);
        }
        let t = ctx.task(p);
        self.error(format!(
            "non-existent DSQ 0x{dsq_id:x} for {}[{}]",
            t.comm.as_deref().unwrap_or("task"),
            t.pid
        ));
        self.global_of(ctx, p)
    }

    /// `dispatch_enqueue`: put `p` on `on` (a shared DSQ under its lock).
    fn dispatch_enqueue(&mut self, ctx: &mut SchedCtx<'_>, on: On, p: TaskId, mut enq_flags: u64) {
        ctx.trace_dsq(p, "dsq_insert", on.dsq_id());
        let t = &mut self.tasks[p as usize];
        debug_assert!(t.on.is_none(), "task {p} already on {:?}", t.on);
        t.owned = false;
        let (vtime, head) = (
            t.dsq_vtime,
            enq_flags & (SCX_ENQ_HEAD | SCX_ENQ_PREEMPT) != 0,
        );
        if let On::Local(c) = on {
            if enq_flags & SCX_ENQ_DSQ_PRIQ != 0 {
                self.error("cannot use vtime ordering for built-in DSQs".into());
            }
            ctx.write(Shared::Task(p));
            if head {
                self.local[c].push_front(p);
            } else {
                self.local[c].push_back(p);
            }
            self.tasks[p as usize].on = Some(on);
            self.local_dsq_post_enq(ctx, c, p, enq_flags);
            return;
        }
        if matches!(on, On::Global(_)) && enq_flags & SCX_ENQ_DSQ_PRIQ != 0 {
            self.error("cannot use vtime ordering for built-in DSQs".into());
            enq_flags &= !SCX_ENQ_DSQ_PRIQ;
        }
        let mut err = None;
        let dsq = self.dsq_mut(on).expect("a shared DSQ that exists");
        ctx.lock(dsq.lock);
        ctx.write(Shared::Line(dsq.line));
        ctx.write(Shared::Task(p));
        dsq.seq += 1;
        let key = (vtime, dsq.seq);
        if enq_flags & SCX_ENQ_DSQ_PRIQ != 0 {
            if !dsq.fifo.is_empty() {
                err = Some(format!(
                    "DSQ ID 0x{:016x} already had FIFO-enqueued tasks",
                    dsq.id
                ));
            }
            dsq.priq.insert(key, p);
        } else {
            if !dsq.priq.is_empty() {
                err = Some(format!(
                    "DSQ ID 0x{:016x} already had PRIQ-enqueued tasks",
                    dsq.id
                ));
            }
            if head {
                dsq.fifo.push_front(p);
            } else {
                dsq.fifo.push_back(p);
            }
        }
        let l = dsq.lock;
        ctx.unlock(l);
        let t = &mut self.tasks[p as usize];
        t.on = Some(on);
        t.priq_key = key;
        if let Some(e) = err {
            self.error(e);
        }
    }

    /// `local_dsq_post_enq`: a CPU not already picking is told to reschedule when its
    /// current task is preempted (`SCX_ENQ_PREEMPT`) or it is idle.
    fn local_dsq_post_enq(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId, p: TaskId, enq_flags: u64) {
        if self.in_balance[c] {
            return;
        }
        let curr = ctx.read(Curr(c));
        let idle = curr == ctx.idle_task(c);
        if enq_flags & SCX_ENQ_PREEMPT != 0 && curr != p && !idle {
            self.tasks[curr as usize].slice = 0;
            ctx.resched_cpu(c);
        } else if idle {
            ctx.resched_idle(c);
        } else if c != ctx.cpu() {
            // ext.c enqueues on another CPU's local DSQ under that CPU's rq lock, so it
            // never misses the CPU going idle in between; here it may be on the way.
            ctx.resched_idle_later(c);
        }
    }

    /// `dispatch_dequeue`: take `p` off its DSQ, if any.
    fn dispatch_dequeue(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        let Some(on) = self.tasks[p as usize].on.take() else {
            return;
        };
        match on {
            On::Local(c) => {
                let q = &mut self.local[c];
                let i = q.iter().position(|&x| x == p).expect("on its local DSQ");
                q.remove(i);
            }
            shared => {
                let key = self.tasks[p as usize].priq_key;
                let dsq = self.dsq_mut(shared).expect("its DSQ exists");
                ctx.lock(dsq.lock);
                ctx.write(Shared::Line(dsq.line));
                if dsq.priq.remove(&key).is_none() {
                    let i = dsq.fifo.iter().position(|&x| x == p).expect("on its DSQ");
                    dsq.fifo.remove(i);
                }
                let l = dsq.lock;
                ctx.unlock(l);
            }
        }
    }

    /// `scx_bpf_dispatch[_vtime]`: directly (from `select_cpu`/`enqueue` for that task),
    /// or into this CPU's dispatch buffer.
    fn dispatch(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        dsq_id: u64,
        slice: u64,
        vtime: Option<u64>,
        mut enq_flags: u64,
    ) {
        let t = &mut self.tasks[p as usize];
        t.slice = if slice > 0 { slice } else { t.slice.max(1) };
        if let Some(v) = vtime {
            t.dsq_vtime = v;
            enq_flags |= SCX_ENQ_DSQ_PRIQ;
        }
        ctx.write(Shared::Task(p));
        if self.ddsp_task == Some(p) {
            // mark_direct_dispatch
            if self.tasks[p as usize].ddsp.is_some() {
                let pid = ctx.task(p).pid;
                self.error(format!("task[{pid}] already direct-dispatched"));
                return;
            }
            self.tasks[p as usize].ddsp = Some((dsq_id, enq_flags));
            return;
        }
        if self.dsp_buf.len() >= self.max_batch {
            self.error(format!("dispatch buffer overflow (max {})", self.max_batch));
            return;
        }
        self.dsp_buf.push(Disp {
            p,
            dsq_id,
            enq_flags,
        });
        self.dsp_nr += 1;
    }

    /// `flush_dispatch_buf` → `finish_dispatch` for each entry: a task the scheduler
    /// still owns goes where it was dispatched; a stale entry (dequeued or dispatched
    /// meanwhile) is dropped.
    fn flush_dispatch_buf(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId) {
        let buf = std::mem::take(&mut self.dsp_buf);
        for d in buf {
            if !self.tasks[d.p as usize].owned {
                continue;
            }
            self.stats.dispatched += 1;
            let on = self.find_dsq_for_dispatch(ctx, cpu, d.dsq_id, d.p);
            self.dispatch_to(ctx, cpu, on, d.p, d.enq_flags);
        }
    }

    /// A dispatch's destination: a local DSQ takes the task to that CPU
    /// (`dispatch_to_local_dsq`), or to the global DSQ where it may not run.
    fn dispatch_to(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        rq: CpuId,
        on: On,
        p: TaskId,
        enq_flags: u64,
    ) {
        match on {
            On::Local(c) => {
                if !ctx.allowed(p, c) {
                    let g = self.global_of(ctx, p);
                    self.dispatch_enqueue(ctx, g, p, enq_flags);
                    return;
                }
                self.move_to_cpu(ctx, rq, p, c);
                self.dispatch_enqueue(ctx, on, p, enq_flags);
            }
            shared => self.dispatch_enqueue(ctx, shared, p, enq_flags),
        }
    }

    /// `move_remote_task_to_local_dsq`: `p` joins `c`'s run queue; the source queue's
    /// lock is taken for the move when it is not the one held (`rq`'s).
    fn move_to_cpu(&mut self, ctx: &mut SchedCtx<'_>, rq: CpuId, p: TaskId, c: CpuId) {
        let src = ctx.task(p).processor;
        if src == c {
            return;
        }
        let locks: Vec<LockId> = [src, c]
            .into_iter()
            .filter(|&x| x != rq)
            .map(|x| self.rq_lock[x])
            .collect();
        for &l in &locks {
            ctx.lock(l);
        }
        ctx.set_task_cpu(p, c);
        for &l in locks.iter().rev() {
            ctx.unlock(l);
        }
    }

    /// `consume_dispatch_q`: the first task of `on` that may run on `cpu` moves to its
    /// local DSQ.
    fn consume(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, on: On) -> bool {
        let Some(dsq) = self.dsq_mut(on) else {
            return false;
        };
        // The lockless emptiness test reads the queue's line.
        ctx.read(Shared::Line(dsq.line));
        if dsq.nr() == 0 {
            return false;
        }
        ctx.lock(dsq.lock);
        let order: Vec<TaskId> = dsq.priq.values().chain(dsq.fifo.iter()).copied().collect();
        let l = dsq.lock;
        let found = order.into_iter().find(|&p| {
            ctx.read(Shared::Task(p));
            ctx.allowed(p, cpu)
        });
        ctx.unlock(l);
        let Some(p) = found else {
            return false;
        };
        self.dispatch_dequeue(ctx, p);
        ctx.trace_dsq(p, "dsq_move_to_local", on.dsq_id());
        if ctx.task(p).processor != cpu {
            self.stats.consumed_remote += 1;
        }
        self.stats.consumed += 1;
        self.move_to_cpu(ctx, cpu, p, cpu);
        self.dispatch_enqueue(ctx, On::Local(cpu), p, 0);
        true
    }

    fn consume_kfunc(&mut self, ctx: &mut SchedCtx<'_>, dsq_id: u64) -> bool {
        let cpu = ctx.cpu();
        let on = match dsq_id {
            SCX_DSQ_GLOBAL => On::Global(self.node[cpu]),
            id if self.user.contains_key(&id) => On::User(id),
            id => {
                self.error(format!("non-existent DSQ 0x{id:x}"));
                return false;
            }
        };
        self.consume(ctx, cpu, on)
    }

    /// `bpf_iter_scx_dsq_new`: the tasks queued on user DSQ `id` now, in its order
    /// (reversed for `SCX_DSQ_ITER_REV`), and the DSQ's sequence number — a task queued
    /// later is not visited, nor one that left. 6.12 iterates user DSQs only.
    fn dsq_iter_new(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        id: u64,
        rev: bool,
    ) -> Option<(u64, Vec<TaskId>)> {
        let dsq = self.user.get(&id)?;
        ctx.lock(dsq.lock);
        ctx.read(Shared::Line(dsq.line));
        let mut order: Vec<TaskId> = dsq.priq.values().chain(dsq.fifo.iter()).copied().collect();
        let (seq, l) = (dsq.seq, dsq.lock);
        ctx.unlock(l);
        if rev {
            order.reverse();
        }
        Some((seq, order))
    }

    /// Whether `p` is still on user DSQ `id`, queued no later than `seq`
    /// (`bpf_iter_scx_dsq_next`'s test, and `scx_dispatch_from_dsq`'s).
    fn on_dsq_since(&self, p: TaskId, id: u64, seq: u64) -> bool {
        let t = &self.tasks[p as usize];
        t.on == Some(On::User(id)) && t.priq_key.1 <= seq
    }

    /// `scx_dispatch_from_dsq`: move `p`, still on user DSQ `src` since before the
    /// iteration began, to `dst` (any DSQ, a local one taking it to that CPU), with the
    /// slice and vtime the iterator carries.
    #[allow(clippy::too_many_arguments)]
    fn dispatch_from_dsq(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        src: u64,
        seq: u64,
        p: TaskId,
        dst: u64,
        enq_flags: u64,
        slice: Option<u64>,
        vtime: Option<u64>,
    ) -> bool {
        if !self.on_dsq_since(p, src, seq) {
            return false;
        }
        let t = &mut self.tasks[p as usize];
        if let Some(v) = vtime {
            t.dsq_vtime = v;
        }
        if let Some(s) = slice {
            t.slice = s;
        }
        let cpu = ctx.cpu();
        self.dispatch_dequeue(ctx, p);
        ctx.trace_dsq(p, "dsq_move", src);
        self.stats.moved += 1;
        let on = self.find_dsq_for_dispatch(ctx, cpu, dst, p);
        self.dispatch_to(ctx, cpu, on, p, enq_flags);
        true
    }

    fn create_dsq(&mut self, ctx: &mut SchedCtx<'_>, id: u64) -> i32 {
        if id & SCX_DSQ_FLAG_BUILTIN != 0 {
            return -22; // -EINVAL
        }
        if self.user.contains_key(&id) {
            return -17; // -EEXIST
        }
        let d = Dsq::new(ctx, id, "dsq->lock");
        self.user.insert(id, d);
        0
    }

    fn destroy_dsq(&mut self, id: u64) {
        if let Some(d) = self.user.get(&id) {
            if d.nr() > 0 {
                self.error(format!("destroying non-empty DSQ 0x{id:x}"));
                return;
            }
            self.user.remove(&id);
        }
    }

    fn dsq_nr_queued(&mut self, ctx: &mut SchedCtx<'_>, id: u64) -> i32 {
        if id == SCX_DSQ_LOCAL {
            return self.local[ctx.cpu()].len() as i32;
        }
        if id & SCX_DSQ_LOCAL_ON == SCX_DSQ_LOCAL_ON {
            let c = (id & SCX_DSQ_LOCAL_CPU_MASK) as usize;
            return self.local.get(c).map_or(-2, |q| q.len() as i32);
        }
        if id == SCX_DSQ_GLOBAL {
            return self.global.iter().map(Dsq::nr).sum::<usize>() as i32;
        }
        match self.dsq_mut(On::User(id)) {
            Some(d) => {
                ctx.read(Shared::Line(d.line));
                d.nr() as i32
            }
            None => -2, // -ENOENT
        }
    }

    /// `scx_bpf_kick_cpu`: an IPI that makes `cpu` reschedule (`SCX_KICK_IDLE`: only if
    /// it is idle; `SCX_KICK_PREEMPT`: its task's slice is cleared first).
    fn kick_cpu(&mut self, ctx: &mut SchedCtx<'_>, cpu: i32, flags: u64) {
        let Some(c) = usize::try_from(cpu).ok().filter(|&c| c < ctx.nr_cpus()) else {
            self.error(format!("invalid cpu {cpu}"));
            return;
        };
        self.stats.kicks += 1;
        let curr = ctx.read(Curr(c));
        let idle = curr == ctx.idle_task(c);
        if flags & SCX_KICK_IDLE != 0 {
            if idle {
                ctx.resched_idle(c);
            } else if c != ctx.cpu() {
                // kick_one_cpu_if_idle runs under the target's rq lock (see above).
                ctx.resched_idle_later(c);
            }
            return;
        }
        if flags & SCX_KICK_PREEMPT != 0 && !idle {
            self.tasks[curr as usize].slice = 0;
        }
        ctx.resched_cpu(c);
    }

    /// `test_and_clear_cpu_idle`: claim `c` — with SMT its core leaves the idle-core mask
    /// (only `c` if the core was not wholly idle).
    fn test_and_clear_idle(&mut self, ctx: &mut SchedCtx<'_>, c: CpuId) -> bool {
        let line = self.idle_line.expect("booted");
        ctx.read(Shared::Line(line));
        if self.smt_active
            && c < self.siblings.len()
            && self.siblings[c].iter().any(|&s| self.smt_idle[s])
        {
            ctx.write(Shared::Line(line));
            for &s in &self.siblings[c] {
                self.smt_idle[s] = false;
            }
        }
        if self.idle.get(c).copied().unwrap_or(false) {
            ctx.write(Shared::Line(line));
            self.idle[c] = false;
            return true;
        }
        false
    }

    /// `__scx_update_idle`'s masks: `cpu` joins or leaves the idle mask; with SMT, a core
    /// all of whose CPUs are idle is in the idle-core mask, and leaves it with the first.
    fn update_idle_masks(&mut self, cpu: CpuId, idle: bool) {
        self.idle[cpu] = idle;
        if !self.smt_active {
            return;
        }
        let whole = idle && self.siblings[cpu].iter().all(|&s| self.idle[s]);
        for &s in &self.siblings[cpu] {
            if !idle {
                self.smt_idle[s] = false;
            } else if whole {
                self.smt_idle[s] = true;
            }
        }
    }

    /// `scx_pick_idle_cpu`: an idle CPU `p` may use, starting after the last one given
    /// (`cpumask_any_and_distribute`), claimed by clearing its bit; with SMT a CPU of a
    /// wholly idle core first, and with `SCX_PICK_IDLE_CORE` only such a CPU.
    fn pick_idle_cpu(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, flags: u64) -> Option<CpuId> {
        let n = ctx.nr_cpus();
        let line = self.idle_line.expect("booted");
        ctx.read(Shared::Line(line));
        loop {
            let from_core = if self.smt_active {
                (0..n)
                    .map(|k| (self.idle_cursor + 1 + k) % n)
                    .find(|&c| self.smt_idle[c] && ctx.allowed(p, c))
            } else {
                None
            };
            let c = match from_core {
                Some(c) => Some(c),
                None if self.smt_active && flags & SCX_PICK_IDLE_CORE != 0 => return None,
                None => (0..n)
                    .map(|k| (self.idle_cursor + 1 + k) % n)
                    .find(|&c| self.idle[c] && ctx.allowed(p, c)),
            }?;
            self.idle_cursor = c;
            if self.test_and_clear_idle(ctx, c) {
                return Some(c);
            }
        }
    }

    /// `scx_select_cpu_dfl`.
    fn select_cpu_dfl(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: TaskId,
        prev: i32,
        wake_flags: u64,
    ) -> (i32, bool) {
        let this = ctx.cpu();
        let line = self.idle_line.expect("booted");
        ctx.read(Shared::Line(line));
        if wake_flags & SCX_WAKE_SYNC != 0
            && self.idle.iter().any(|&i| i)
            && self.local[this].is_empty()
            && ctx.allowed(p, this)
        {
            return (this as i32, true);
        }
        let prev_ok = usize::try_from(prev)
            .ok()
            .filter(|&pc| pc < ctx.nr_cpus() && ctx.allowed(p, pc));
        // With SMT a wholly idle core beats a partly idle prev_cpu.
        if self.smt_active {
            if let Some(pc) = prev_ok {
                if self.smt_idle[pc] && self.test_and_clear_idle(ctx, pc) {
                    return (prev, true);
                }
            }
            if let Some(c) = self.pick_idle_cpu(ctx, p, SCX_PICK_IDLE_CORE) {
                return (c as i32, true);
            }
        }
        if let Some(pc) = prev_ok {
            if self.test_and_clear_idle(ctx, pc) {
                return (prev, true);
            }
        }
        match self.pick_idle_cpu(ctx, p, 0) {
            Some(c) => (c as i32, true),
            None => (prev, false),
        }
    }
}

/// The ext class with its BPF scheduler.
pub struct Ext {
    ops: Box<dyn ScxOps>,
    has: Has,
    hz: u32,
    options: BTreeMap<String, String>,
    /// The state the kfuncs act on.
    pub st: ExtState,
    /// The fair class the tasks return to when the BPF scheduler ends
    /// (`scx_ops_disable_workfn`), sharing the run queues' locks.
    fair: Option<Box<dyn SchedClass>>,
    /// The tasks run under `fair` now.
    on_fair: bool,
}

impl Ext {
    /// The class running `ops`.
    pub fn new(ops: Box<dyn ScxOps>, hz: u32, options: BTreeMap<String, String>) -> Ext {
        let has = ops.has();
        Ext {
            ops,
            has,
            hz,
            options,
            st: ExtState::default(),
            fair: None,
            on_fair: false,
        }
    }

    /// With `fair` to take the tasks over when the BPF scheduler ends, as the kernel's
    /// disable path moves them to the fair class; without one the run goes on in bypass
    /// mode (every task through the global DSQ).
    pub fn with_fair(mut self, fair: Box<dyn SchedClass>) -> Ext {
        self.fair = Some(fair);
        self
    }

    /// The fair class, once it runs the tasks.
    fn active_fair(&mut self) -> Option<&mut Box<dyn SchedClass>> {
        if self.on_fair {
            self.fair.as_mut()
        } else {
            None
        }
    }

    /// `scx_ops_disable_workfn`: the scheduler's `ops.exit`, then every task leaves the
    /// ext class for the fair one — `__sched_fork`'s per-task state, and each runnable
    /// task dequeued here and enqueued there under its CPU's lock (the current one also
    /// `set_next_task`, as `sched_enq_and_set_task` does); every CPU reschedules. Runs
    /// from the tick with no lock held, as the kernel's worker runs outside the
    /// scheduler; until then the tasks run in bypass mode.
    fn switch_to_fair(&mut self, ctx: &mut SchedCtx<'_>) {
        if !self.st.drained {
            self.st.drained = true;
            let reason = self.st.exit.clone().unwrap_or_default();
            self.call(ctx, |o, k| o.exit(k, SCX_EXIT_ERROR, &reason));
        }
        let Some(mut fair) = self.fair.take() else {
            return;
        };
        let n = self.st.tasks.len() as TaskId;
        for p in 0..n {
            fair.task_fork(ctx, p, None);
        }
        for p in 0..n {
            let t = ctx.task(p);
            let (running, cpu, idle) = (t.on_cpu, t.processor, t.is_idle);
            if idle || !(self.st.tasks[p as usize].queued || running.is_some()) {
                continue;
            }
            self.st.dispatch_dequeue(ctx, p);
            let ts = &mut self.st.tasks[p as usize];
            (ts.queued, ts.owned, ts.runnable_at) = (false, false, None);
            let cpu = running.unwrap_or(cpu);
            let l = self.st.rq_lock[cpu];
            ctx.lock(l);
            fair.enqueue_task(ctx, cpu, p, Wake::default());
            if running.is_some() {
                fair.set_next_task(ctx, cpu, p, p);
            }
            ctx.unlock(l);
        }
        for c in 0..ctx.nr_cpus() {
            if ctx.read(Curr(c)) == ctx.idle_task(c) {
                ctx.resched_idle(c);
            } else {
                ctx.resched_cpu(c);
            }
        }
        self.fair = Some(fair);
        self.on_fair = true;
    }

    /// Run one callback with the kfunc context.
    fn call<R>(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        f: impl FnOnce(&mut dyn ScxOps, &mut Kf<'_, '_>) -> R,
    ) -> R {
        let mut k = Kf {
            st: &mut self.st,
            ctx,
        };
        f(self.ops.as_mut(), &mut k)
    }

    /// `update_curr_scx`: the slice runs down by the time `p` ran.
    fn update_curr(&mut self, ctx: &SchedCtx<'_>, p: TaskId) {
        let now = ctx.now();
        let t = &mut self.st.tasks[p as usize];
        let ran = now.saturating_sub(t.exec_start);
        t.exec_start = now;
        if t.slice != SCX_SLICE_INF {
            t.slice -= t.slice.min(ran);
        }
    }

    /// `do_enqueue_task`.
    fn do_enqueue(&mut self, ctx: &mut SchedCtx<'_>, rq: CpuId, p: TaskId, enq_flags: u64) {
        self.st.stats.enqueues += 1;
        if self.st.ended() {
            self.st.tasks[p as usize].ddsp = None;
            self.st.tasks[p as usize].slice = SCX_SLICE_DFL;
            let g = self.st.global_of(ctx, p);
            self.st.dispatch_enqueue(ctx, g, p, enq_flags);
            return;
        }
        if self.st.tasks[p as usize].ddsp.is_none() {
            if !self.has.enqueue {
                self.st.tasks[p as usize].slice = SCX_SLICE_DFL;
                let g = self.st.global_of(ctx, p);
                self.st.dispatch_enqueue(ctx, g, p, enq_flags);
                return;
            }
            self.st.ddsp_task = Some(p);
            self.st.tasks[p as usize].owned = true;
            self.call(ctx, |o, k| o.enqueue(k, p, enq_flags));
            self.st.ddsp_task = None;
            if self.st.tasks[p as usize].ddsp.is_none() {
                return; // the scheduler keeps it until it dispatches it
            }
        }
        // direct_dispatch
        self.st.stats.direct_dispatches += 1;
        let (dsq_id, flags) = self.st.tasks[p as usize]
            .ddsp
            .take()
            .expect("a direct dispatch");
        let on = self.st.find_dsq_for_dispatch(ctx, rq, dsq_id, p);
        self.st.dispatch_to(ctx, rq, on, p, enq_flags | flags);
    }

    /// Once the scheduler has ended: every task it held, and every task on its DSQs,
    /// goes to the global DSQ (ext.c's bypass), and the scheduler hears `ops.exit`.
    fn drain(&mut self, ctx: &mut SchedCtx<'_>) {
        if self.st.drained || !self.st.ended() {
            return;
        }
        self.st.drained = true;
        let reason = self.st.exit.clone().unwrap_or_default();
        self.call(ctx, |o, k| o.exit(k, SCX_EXIT_ERROR, &reason));
        let moved: Vec<TaskId> = (0..self.st.tasks.len() as TaskId)
            .filter(|&p| {
                let t = &self.st.tasks[p as usize];
                t.queued && (t.owned || matches!(t.on, Some(On::User(_))))
            })
            .collect();
        for p in moved {
            self.st.dispatch_dequeue(ctx, p);
            let t = &mut self.st.tasks[p as usize];
            t.owned = false;
            t.slice = SCX_SLICE_DFL;
            let g = self.st.global_of(ctx, p);
            self.st.dispatch_enqueue(ctx, g, p, 0);
        }
        for c in 0..ctx.nr_cpus() {
            if ctx.read(Curr(c)) == ctx.idle_task(c) {
                ctx.resched_idle(c);
            }
        }
    }

    fn set_idle(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, idle: bool) {
        if self.st.idle[cpu] == idle {
            return;
        }
        let line = self.st.idle_line.expect("booted");
        ctx.write(Shared::Line(line));
        self.st.update_idle_masks(cpu, idle);
        if self.has.update_idle && !self.st.ended() {
            self.call(ctx, |o, k| o.update_idle(k, cpu, idle));
        }
    }

    /// The watchdog (`scx_watchdog_workfn`): a runnable task not run within the
    /// timeout ends the scheduler.
    fn watchdog(&mut self, ctx: &mut SchedCtx<'_>) {
        let now = ctx.now();
        if now < self.st.next_watchdog || self.st.ended() {
            return;
        }
        self.st.next_watchdog = now + self.st.timeout / 2;
        let stalled = self.st.tasks.iter().enumerate().find_map(|(p, t)| {
            let since = t.runnable_at?;
            (t.queued && now.saturating_sub(since) > self.st.timeout).then_some((p, since))
        });
        if let Some((p, since)) = stalled {
            let task = ctx.task(p as TaskId);
            self.st.error(format!(
                "{}[{}] failed to run for {}.{:03}s",
                task.comm.as_deref().unwrap_or("task"),
                task.pid,
                (now - since) / 1_000_000_000,
                (now - since) / 1_000_000 % 1000
            ));
        }
    }
}

impl SchedClass for Ext {
    fn name(&self) -> &'static str {
        "scx"
    }

    fn options(&self) -> BTreeMap<String, String> {
        self.options.clone()
    }

    fn hz(&self) -> u32 {
        self.hz
    }

    fn release(&self) -> crate::kernel::release::Release {
        crate::kernel::release::Release::V6(12)
    }

    fn hrtimers(&self) -> bool {
        true
    }

    fn init(&mut self, ctx: &mut SchedCtx<'_>) {
        let n = ctx.nr_cpus();
        if let Some(fair) = self.fair.as_mut() {
            // One rq->lock per CPU, whichever class runs its tasks (struct rq's).
            fair.init(ctx);
            self.st.rq_lock = (0..n).map(|c| fair.rq_lockp(c)).collect();
        } else {
            for c in 0..n {
                let line = ctx.new_line("scx_rq", Some(c));
                self.st.rq_lock.push(ctx.new_lock("rq->lock", Some(line)));
            }
        }
        self.st.local = vec![VecDeque::new(); n];
        // scx_idle_reset: the mask starts as the CPUs are — all idle at boot.
        self.st.idle = vec![true; n];
        let core: Vec<usize> = match &ctx.machine().preset.topology {
            Some(ids) => ids.core[..n].to_vec(),
            None => (0..n).collect(),
        };
        self.st.siblings = (0..n)
            .map(|c| (0..n).filter(|&s| core[s] == core[c]).collect())
            .collect();
        self.st.smt_active = self.st.siblings.iter().any(|s| s.len() > 1);
        self.st.smt_idle = vec![self.st.smt_active; n];
        self.st.in_balance = vec![false; n];
        self.st.node = match &ctx.machine().preset.topology {
            Some(ids) => ids.node[..n].to_vec(),
            None => vec![0; n],
        };
        let nodes = self.st.node.iter().max().map_or(1, |m| m + 1);
        self.st.global = (0..nodes)
            .map(|_| Dsq::new(ctx, SCX_DSQ_GLOBAL, "scx_dsq_global"))
            .collect();
        self.st.idle_line = Some(ctx.new_line("scx_idle_mask", None));
        self.st.max_batch = match self.ops.dispatch_max_batch() {
            0 => SCX_DSP_DFL_MAX_BATCH,
            b => b,
        };
        self.st.flags = self.ops.flags();
        let ms = match self.ops.timeout_ms() {
            0 => 30_000,
            t => t.min(30_000),
        };
        self.st.timeout = ms * 1_000_000;
        self.st.next_watchdog = self.st.timeout / 2;
        let ret = self.call(ctx, |o, k| o.init(k));
        if ret < 0 {
            self.st.error(format!("ops.init() failed ({ret})"));
            return;
        }
        // scx_cgroup_init: every cgroup, root first; the model's tasks all live in the
        // root cgroup.
        let ret = self.call(ctx, |o, k| o.cgroup_init(k));
        if ret < 0 {
            self.st
                .error(format!("ops.cgroup_init() failed ({ret}) for cgroup /"));
        }
    }

    fn wake_order(&self) -> crate::kernel::sched::WakeOrder {
        match (self.on_fair, &self.fair) {
            (true, Some(f)) => f.wake_order(),
            _ => crate::kernel::sched::WakeOrder::TaskRqFirst,
        }
    }

    fn balance(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, why: crate::kernel::sched::Balance) {
        if let Some(f) = self.active_fair() {
            f.balance(ctx, cpu, why);
        }
    }

    fn finish_task_switch(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId) {
        if let Some(f) = self.active_fair() {
            f.finish_task_switch(ctx, cpu, prev);
        }
    }

    fn prio_changed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        if let Some(f) = self.active_fair() {
            f.prio_changed(ctx, p);
        }
    }

    fn set_cpus_allowed(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId) {
        if let Some(f) = self.active_fair() {
            f.set_cpus_allowed(ctx, p);
        }
    }

    fn rq_lockp(&self, cpu: CpuId) -> LockId {
        self.st.rq_lock[cpu]
    }

    fn task_on_rq(&self, ctx: &SchedCtx<'_>, p: TaskId) -> bool {
        if let (true, Some(f)) = (self.on_fair, &self.fair) {
            return f.task_on_rq(ctx, p);
        }
        self.st.tasks.get(p as usize).is_some_and(|t| t.queued) || ctx.task(p).on_cpu.is_some()
    }

    fn task_fork(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, parent: Option<TaskId>) {
        if let Some(f) = self.active_fair() {
            return f.task_fork(ctx, p, parent);
        }
        let n = p as usize + 1;
        if self.st.tasks.len() < n {
            self.st.tasks.resize(n, TaskScx::default());
        }
        let w = LoadWeight::of_nice(ctx.task(p).nice).weight;
        self.st.tasks[p as usize] = TaskScx {
            slice: SCX_SLICE_DFL,
            // sched_weight_to_cgroup: 1024 → 100.
            weight: ((w * 100 + 512) / 1024) as u32,
            ..TaskScx::default()
        };
        if ctx.task(p).is_idle || self.st.ended() {
            return;
        }
        let fork = parent.is_some();
        let ret = self.call(ctx, |o, k| o.init_task(k, p, fork));
        if ret < 0 {
            let pid = ctx.task(p).pid;
            self.st
                .error(format!("ops.init_task() failed ({ret}) for task[{pid}]"));
            return;
        }
        self.call(ctx, |o, k| o.enable(k, p));
    }

    fn select_task_rq(&mut self, ctx: &mut SchedCtx<'_>, p: TaskId, wake: Wake) -> CpuId {
        if let Some(f) = self.active_fair() {
            return f.select_task_rq(ctx, p, wake);
        }
        let prev = ctx.task(p).processor;
        let wake_flags = if wake.fork {
            SCX_WAKE_FORK
        } else {
            SCX_WAKE_TTWU | if wake.sync { SCX_WAKE_SYNC } else { 0 }
        };
        let cpu = if self.has.select_cpu && !self.st.ended() {
            self.st.ddsp_task = Some(p);
            let cpu = self.call(ctx, |o, k| o.select_cpu(k, p, prev, wake_flags));
            self.st.ddsp_task = None;
            match usize::try_from(cpu).ok().filter(|&c| c < ctx.nr_cpus()) {
                Some(c) => c,
                None => {
                    self.st
                        .error(format!("invalid CPU {cpu} from ops.select_cpu()"));
                    prev
                }
            }
        } else {
            let (cpu, found) = self.st.select_cpu_dfl(ctx, p, prev as i32, wake_flags);
            if found {
                self.st.stats.select_cpu_dfl_idle += 1;
                let t = &mut self.st.tasks[p as usize];
                t.slice = SCX_SLICE_DFL;
                t.ddsp = Some((SCX_DSQ_LOCAL, 0));
            }
            cpu as usize
        };
        if ctx.allowed(p, cpu) {
            return cpu;
        }
        // select_fallback_rq
        if ctx.allowed(p, prev) {
            prev
        } else {
            (0..ctx.nr_cpus())
                .find(|&c| ctx.allowed(p, c))
                .expect("an allowed CPU")
        }
    }

    fn enqueue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        if let Some(f) = self.active_fair() {
            return f.enqueue_task(ctx, cpu, p, wake);
        }
        let now = ctx.now();
        let t = &mut self.st.tasks[p as usize];
        t.queued = true;
        t.runnable_at = Some(now);
        let enq_flags = if wake.fork { 0 } else { SCX_ENQ_WAKEUP };
        if self.has.runnable && !self.st.ended() {
            self.call(ctx, |o, k| o.runnable(k, p, enq_flags));
        }
        self.do_enqueue(ctx, cpu, p, enq_flags);
    }

    fn dequeue_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        if let Some(f) = self.active_fair() {
            return f.dequeue_task(ctx, cpu, p);
        }
        if !self.st.tasks[p as usize].queued {
            return;
        }
        let live = !self.st.ended();
        if std::mem::take(&mut self.st.tasks[p as usize].owned) && self.has.dequeue && live {
            self.call(ctx, |o, k| o.dequeue(k, p, SCX_DEQ_SLEEP));
        }
        if ctx.task(p).on_cpu.is_some() {
            self.update_curr(ctx, p);
            if self.has.stopping && live {
                self.call(ctx, |o, k| o.stopping(k, p, false));
            }
        }
        if self.has.quiescent && live {
            self.call(ctx, |o, k| o.quiescent(k, p, SCX_DEQ_SLEEP));
        }
        let t = &mut self.st.tasks[p as usize];
        t.queued = false;
        t.runnable_at = None;
        self.st.dispatch_dequeue(ctx, p);
    }

    fn wakeup_preempt(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId, wake: Wake) {
        if let Some(f) = self.active_fair() {
            return f.wakeup_preempt(ctx, cpu, p, wake);
        }
        // wakeup_preempt_scx is empty: preemption among the scheduler's tasks is its own,
        // by kicks and SCX_ENQ_PREEMPT. But the core's wakeup_preempt reschedules a CPU
        // whose current task is of a lower class: an idle CPU the task was placed on
        // wakes and runs balance_one, whatever DSQ the task went to.
        if ctx.read(Curr(cpu)) == ctx.idle_task(cpu) {
            ctx.resched_idle(cpu);
        }
    }

    fn pick_next_task(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
    ) -> Option<TaskId> {
        if let Some(f) = self.active_fair() {
            return f.pick_next_task(ctx, cpu, prev);
        }
        self.drain(ctx);
        let prev_t = ctx.task(prev);
        let prev_on_scx = !prev_t.is_idle;
        let prev_on_rq = prev_on_scx
            && prev_t.state == TaskState::Running
            && self.st.tasks[prev as usize].queued
            && ctx.allowed(prev, cpu);
        if prev_on_scx && prev_t.on_cpu == Some(cpu) {
            self.update_curr(ctx, prev);
        }
        self.st.in_balance[cpu] = true;
        let keep = self.balance_one(ctx, cpu, prev, prev_on_scx, prev_on_rq);
        self.st.in_balance[cpu] = false;
        if keep {
            self.st.stats.keep_prev += 1;
            let t = &mut self.st.tasks[prev as usize];
            if t.slice == 0 {
                t.slice = SCX_SLICE_DFL;
            }
            return Some(prev);
        }
        let Some(&p) = self.st.local[cpu].front() else {
            self.set_idle(ctx, cpu, true);
            return None;
        };
        self.st.dispatch_dequeue(ctx, p);
        let t = &mut self.st.tasks[p as usize];
        if t.slice == 0 {
            t.slice = SCX_SLICE_DFL;
        }
        Some(p)
    }

    fn put_prev_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, prev: TaskId, next: TaskId) {
        if let Some(f) = self.active_fair() {
            return f.put_prev_task(ctx, cpu, prev, next);
        }
        if next == prev || !self.st.tasks[prev as usize].queued {
            return;
        }
        self.update_curr(ctx, prev);
        let live = !self.st.ended();
        if self.has.stopping && live {
            self.call(ctx, |o, k| o.stopping(k, prev, true));
        }
        self.st.tasks[prev as usize].runnable_at = Some(ctx.now());
        if !ctx.allowed(prev, cpu) {
            // The core moves a task whose affinity left this CPU: it is placed anew.
            return;
        }
        if self.st.tasks[prev as usize].slice > 0 && live {
            self.st
                .dispatch_enqueue(ctx, On::Local(cpu), prev, SCX_ENQ_HEAD);
        } else if next == ctx.idle_task(cpu) {
            self.do_enqueue(ctx, cpu, prev, SCX_ENQ_LAST);
            if self.st.tasks[prev as usize].on == Some(On::Local(cpu)) {
                ctx.resched_cpu(cpu);
            }
        } else {
            self.do_enqueue(ctx, cpu, prev, 0);
        }
    }

    fn set_next_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, next: TaskId, prev: TaskId) {
        if let Some(f) = self.active_fair() {
            return f.set_next_task(ctx, cpu, next, prev);
        }
        if next == prev {
            return;
        }
        self.set_idle(ctx, cpu, false);
        let t = &mut self.st.tasks[next as usize];
        t.exec_start = ctx.now();
        t.runnable_at = None;
        if self.has.running && !self.st.ended() {
            self.call(ctx, |o, k| o.running(k, next));
        }
    }

    fn task_tick(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, curr: TaskId, user: bool) {
        if self.st.ended() && self.fair.is_some() && !self.on_fair {
            self.switch_to_fair(ctx);
        }
        if let Some(f) = self.active_fair() {
            return f.task_tick(ctx, cpu, curr, user);
        }
        if cpu == 0 {
            self.watchdog(ctx);
        }
        if self.st.ended() && !self.st.drained {
            // The tasks the scheduler held go to the global DSQ at the next pick.
            ctx.resched_cpu(cpu);
        }
        if !self.st.ended() {
            // BPF timers run from the timer softirq, outside the run-queue lock; the
            // model looks for due ones at the tick (so they fire on a tick boundary).
            self.call(ctx, |o, k| o.timers(k, cpu));
        }
        if ctx.task(curr).is_idle {
            return;
        }
        let l = self.st.rq_lock[cpu];
        ctx.lock(l);
        self.update_curr(ctx, curr);
        if self.has.tick && !self.st.ended() {
            self.call(ctx, |o, k| o.tick(k, curr));
        }
        if self.st.tasks[curr as usize].slice == 0 {
            ctx.resched_cpu(cpu);
        }
        ctx.unlock(l);
    }

    fn yield_task(&mut self, ctx: &mut SchedCtx<'_>, cpu: CpuId, p: TaskId) {
        if let Some(f) = self.active_fair() {
            return f.yield_task(ctx, cpu, p);
        }
        let l = self.st.rq_lock[cpu];
        ctx.lock(l);
        if self.has.yield_ && !self.st.ended() {
            self.call(ctx, |o, k| o.yield_(k, p));
        } else {
            self.st.tasks[p as usize].slice = 0;
        }
        ctx.unlock(l);
        ctx.resched_cpu(cpu);
    }

    fn task_dead(&mut self, ctx: &mut SchedCtx<'_>, parent: TaskId, p: TaskId) {
        if let Some(f) = self.active_fair() {
            return f.task_dead(ctx, parent, p);
        }
        if !self.st.ended() {
            self.call(ctx, |o, k| {
                o.disable(k, p);
                o.exit_task(k, p, false);
            });
        }
    }

    fn counters(&self) -> BTreeMap<String, f64> {
        let s = &self.st.stats;
        let mut m: BTreeMap<String, f64> = [
            ("enqueues", s.enqueues),
            ("direct_dispatches", s.direct_dispatches),
            ("dispatch_calls", s.dispatch_calls),
            ("dispatched", s.dispatched),
            ("consumed", s.consumed),
            ("consumed_remote", s.consumed_remote),
            ("dsq_moves", s.moved),
            ("kicks", s.kicks),
            ("keep_prev", s.keep_prev),
            ("select_cpu_dfl_idle", s.select_cpu_dfl_idle),
            ("user_dsqs", self.st.user.len() as u64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v as f64))
        .collect();
        m.insert("scheduler_ended".into(), self.st.ended() as u64 as f64);
        m.insert("on_fair".into(), self.on_fair as u64 as f64);
        if let (true, Some(f)) = (self.on_fair, &self.fair) {
            m.extend(
                f.counters()
                    .into_iter()
                    .map(|(k, v)| (format!("fair_{k}"), v)),
            );
        }
        m
    }

    fn exit_reason(&self) -> Option<String> {
        self.st
            .exit
            .as_ref()
            .map(|r| format!("{}: {r}", self.ops.name()))
    }

    fn check(&self, k: &crate::kernel::Kernel) -> Result<(), String> {
        if let (true, Some(f)) = (self.on_fair, &self.fair) {
            return f.check(k);
        }
        let mut seen = vec![0u8; self.st.tasks.len()];
        let mut mark = |p: TaskId, on: On| -> Result<(), String> {
            let t = &self.st.tasks[p as usize];
            if t.on != Some(on) || !t.queued {
                return Err(format!("scx: task {p} on {on:?} but recorded {:?}", t.on));
            }
            seen[p as usize] += 1;
            if seen[p as usize] > 1 {
                return Err(format!("scx: task {p} on two DSQs"));
            }
            Ok(())
        };
        for (c, q) in self.st.local.iter().enumerate() {
            for &p in q {
                mark(p, On::Local(c))?;
                if k.tasks[p as usize].processor != c {
                    return Err(format!(
                        "scx: task {p} on cpu {c}'s local DSQ belongs to another CPU"
                    ));
                }
            }
        }
        for (n, d) in self.st.global.iter().enumerate() {
            for &p in d.fifo.iter().chain(d.priq.values()) {
                mark(p, On::Global(n))?;
            }
        }
        for d in self.st.user.values() {
            for &p in d.fifo.iter().chain(d.priq.values()) {
                mark(p, On::User(d.id))?;
            }
        }
        Ok(())
    }
}

impl Ext {
    /// `balance_one`: true to keep running `prev`.
    fn balance_one(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        cpu: CpuId,
        prev: TaskId,
        prev_on_scx: bool,
        prev_on_rq: bool,
    ) -> bool {
        let ended = self.st.ended();
        if prev_on_rq && self.st.tasks[prev as usize].slice > 0 && !ended {
            return true;
        }
        let global = On::Global(self.st.node[cpu]);
        if !self.st.local[cpu].is_empty() || self.st.consume(ctx, cpu, global) {
            return false;
        }
        if self.has.dispatch && !ended {
            let mut loops = SCX_DSP_MAX_LOOPS;
            loop {
                self.st.dsp_nr = 0;
                self.st.stats.dispatch_calls += 1;
                let prev_arg = prev_on_scx.then_some(prev);
                self.call(ctx, |o, k| o.dispatch(k, cpu, prev_arg));
                self.st.flush_dispatch_buf(ctx, cpu);
                if prev_on_rq && self.st.tasks[prev as usize].slice > 0 {
                    return true;
                }
                if !self.st.local[cpu].is_empty() || self.st.consume(ctx, cpu, global) {
                    return false;
                }
                loops -= 1;
                if loops == 0 {
                    self.st.kick_cpu(ctx, cpu as i32, 0);
                    break;
                }
                if self.st.dsp_nr == 0 {
                    break;
                }
            }
        }
        prev_on_rq && (self.st.flags & SCX_OPS_ENQ_LAST == 0 || self.st.ended())
    }
}

/// `SCX_OPS_ENQ_LAST`.
pub const SCX_OPS_ENQ_LAST: u64 = 1 << 1;
