//! The BPF scheduler's side of the seam: `struct sched_ext_ops` as a trait, and the
//! kfuncs it calls (`scx_bpf_*`) as methods of [`Kf`], the context of one callback.
//!
//! A callback runs inside the ext class with the locks the kernel holds for it (the
//! CPU's run-queue lock for `enqueue`, `dispatch`, `tick`, `running`, `stopping`…; none
//! for `select_cpu`); each kfunc takes the locks its kernel counterpart takes — a DSQ's own
//! spinlock for a shared DSQ — and charges what it touches, so a shared DSQ contends on a
//! many-CPU machine exactly as any other spinlock does.

use crate::kernel::sched::Shared;
use crate::kernel::task::TaskId;
use crate::machine::CpuId;
use crate::policy::SchedCtx;

use super::ExtState;

/// `enum scx_public_consts` and the flags of `include/linux/sched/ext.h` and `ext.c`
/// (6.12).
pub mod consts {
    /// `SCX_SLICE_DFL`: 20 ms.
    pub const SCX_SLICE_DFL: u64 = 20_000_000;
    /// `SCX_SLICE_INF`.
    pub const SCX_SLICE_INF: u64 = u64::MAX;
    /// `SCX_DSQ_FLAG_BUILTIN`.
    pub const SCX_DSQ_FLAG_BUILTIN: u64 = 1 << 63;
    /// `SCX_DSQ_FLAG_LOCAL_ON`.
    pub const SCX_DSQ_FLAG_LOCAL_ON: u64 = 1 << 62;
    /// `SCX_DSQ_INVALID`.
    pub const SCX_DSQ_INVALID: u64 = SCX_DSQ_FLAG_BUILTIN;
    /// `SCX_DSQ_GLOBAL`.
    pub const SCX_DSQ_GLOBAL: u64 = SCX_DSQ_FLAG_BUILTIN | 1;
    /// `SCX_DSQ_LOCAL`.
    pub const SCX_DSQ_LOCAL: u64 = SCX_DSQ_FLAG_BUILTIN | 2;
    /// `SCX_DSQ_LOCAL_ON` (| cpu).
    pub const SCX_DSQ_LOCAL_ON: u64 = SCX_DSQ_FLAG_BUILTIN | SCX_DSQ_FLAG_LOCAL_ON;
    /// `SCX_DSQ_LOCAL_CPU_MASK`.
    pub const SCX_DSQ_LOCAL_CPU_MASK: u64 = 0xffff_ffff;
    /// `SCX_ENQ_WAKEUP` (`ENQUEUE_WAKEUP`).
    pub const SCX_ENQ_WAKEUP: u64 = 1;
    /// `SCX_ENQ_HEAD` (`ENQUEUE_HEAD`).
    pub const SCX_ENQ_HEAD: u64 = 1 << 4;
    /// `SCX_ENQ_PREEMPT`.
    pub const SCX_ENQ_PREEMPT: u64 = 1 << 32;
    /// `SCX_ENQ_REENQ`.
    pub const SCX_ENQ_REENQ: u64 = 1 << 40;
    /// `SCX_ENQ_LAST`.
    pub const SCX_ENQ_LAST: u64 = 1 << 41;
    /// `SCX_ENQ_DSQ_PRIQ` (internal: a vtime insert).
    pub const SCX_ENQ_DSQ_PRIQ: u64 = 1 << 57;
    /// `SCX_DEQ_SLEEP` (`DEQUEUE_SLEEP`).
    pub const SCX_DEQ_SLEEP: u64 = 1;
    /// `SCX_KICK_IDLE`.
    pub const SCX_KICK_IDLE: u64 = 1;
    /// `SCX_KICK_PREEMPT`.
    pub const SCX_KICK_PREEMPT: u64 = 2;
    /// `SCX_KICK_WAIT`.
    pub const SCX_KICK_WAIT: u64 = 4;
    /// `SCX_PICK_IDLE_CORE`.
    pub const SCX_PICK_IDLE_CORE: u64 = 1;
    /// `SCX_WAKE_FORK` (`WF_FORK`).
    pub const SCX_WAKE_FORK: u64 = 0x04;
    /// `SCX_WAKE_TTWU` (`WF_TTWU`).
    pub const SCX_WAKE_TTWU: u64 = 0x08;
    /// `SCX_WAKE_SYNC` (`WF_SYNC`).
    pub const SCX_WAKE_SYNC: u64 = 0x10;
    /// `SCX_DSP_DFL_MAX_BATCH`.
    pub const SCX_DSP_DFL_MAX_BATCH: usize = 32;
    /// `SCX_DSP_MAX_LOOPS`.
    pub const SCX_DSP_MAX_LOOPS: u32 = 32;
    /// `SCX_EXIT_ERROR`.
    pub const SCX_EXIT_ERROR: i64 = 1024;
}

/// Which callbacks a scheduler has (`SCX_HAS_OP`): an absent one takes ext.c's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Has {
    /// `ops.select_cpu`.
    pub select_cpu: bool,
    /// `ops.enqueue`.
    pub enqueue: bool,
    /// `ops.dequeue`.
    pub dequeue: bool,
    /// `ops.dispatch`.
    pub dispatch: bool,
    /// `ops.tick`.
    pub tick: bool,
    /// `ops.runnable`.
    pub runnable: bool,
    /// `ops.running`.
    pub running: bool,
    /// `ops.stopping`.
    pub stopping: bool,
    /// `ops.quiescent`.
    pub quiescent: bool,
    /// `ops.yield`.
    pub yield_: bool,
    /// `ops.update_idle`.
    pub update_idle: bool,
}

/// `struct sched_ext_ops`: what a BPF scheduler implements. Every callback gets the
/// kfunc context; defaults are ext.c's behaviour for an absent callback, and [`Has`]
/// says which are present (ext.c tests presence, not behaviour).
pub trait ScxOps: Send {
    /// `ops.name`.
    fn name(&self) -> String;
    /// Present callbacks.
    fn has(&self) -> Has;
    /// `ops.flags` (`SCX_OPS_ENQ_LAST`…).
    fn flags(&self) -> u64 {
        0
    }
    /// `ops.dispatch_max_batch` (0: the default, 32).
    fn dispatch_max_batch(&self) -> usize {
        0
    }
    /// `ops.timeout_ms` (0: the default, 30 s).
    fn timeout_ms(&self) -> u64 {
        0
    }
    /// `ops.init`: 0 or a negative errno.
    fn init(&mut self, k: &mut Kf<'_, '_>) -> i32 {
        let _ = k;
        0
    }
    /// `ops.cgroup_init` for the root cgroup (weight 100, `CGROUP_WEIGHT_DFL`): 0 or a
    /// negative errno.
    fn cgroup_init(&mut self, k: &mut Kf<'_, '_>) -> i32 {
        let _ = k;
        0
    }
    /// `ops.exit`.
    fn exit(&mut self, k: &mut Kf<'_, '_>, kind: i64, reason: &str) {
        let _ = (k, kind, reason);
    }
    /// `ops.init_task`: 0 or a negative errno.
    fn init_task(&mut self, k: &mut Kf<'_, '_>, p: TaskId, fork: bool) -> i32 {
        let _ = (k, p, fork);
        0
    }
    /// `ops.exit_task`.
    fn exit_task(&mut self, k: &mut Kf<'_, '_>, p: TaskId, cancelled: bool) {
        let _ = (k, p, cancelled);
    }
    /// `ops.enable`.
    fn enable(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let _ = (k, p);
    }
    /// `ops.disable`.
    fn disable(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let _ = (k, p);
    }
    /// `ops.select_cpu`: the CPU for `p` (≥ 0), or an error value.
    fn select_cpu(&mut self, k: &mut Kf<'_, '_>, p: TaskId, prev: CpuId, wake_flags: u64) -> i32 {
        let _ = (k, p, wake_flags);
        prev as i32
    }
    /// `ops.enqueue`.
    fn enqueue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        let _ = (k, p, enq_flags);
    }
    /// `ops.dequeue`.
    fn dequeue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, deq_flags: u64) {
        let _ = (k, p, deq_flags);
    }
    /// `ops.dispatch`: `prev` is the task leaving the CPU if it is still this class's.
    fn dispatch(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId, prev: Option<TaskId>) {
        let _ = (k, cpu, prev);
    }
    /// `ops.tick`.
    fn tick(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let _ = (k, p);
    }
    /// `ops.runnable`.
    fn runnable(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        let _ = (k, p, enq_flags);
    }
    /// `ops.running`.
    fn running(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let _ = (k, p);
    }
    /// `ops.stopping`.
    fn stopping(&mut self, k: &mut Kf<'_, '_>, p: TaskId, runnable: bool) {
        let _ = (k, p, runnable);
    }
    /// `ops.quiescent`.
    fn quiescent(&mut self, k: &mut Kf<'_, '_>, p: TaskId, deq_flags: u64) {
        let _ = (k, p, deq_flags);
    }
    /// `ops.yield` (`to` is never set: no `yield_to` in the model).
    fn yield_(&mut self, k: &mut Kf<'_, '_>, p: TaskId) -> bool {
        let _ = (k, p);
        false
    }
    /// `ops.update_idle`.
    fn update_idle(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId, idle: bool) {
        let _ = (k, cpu, idle);
    }
    /// Not an op: the scheduler's BPF timers armed on `cpu` that are due now fire
    /// (the class asks at each tick of `cpu`).
    fn timers(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId) {
        let _ = (k, cpu);
    }
}

/// The context of one callback: the class's state and the kernel's, for the kfuncs.
pub struct Kf<'a, 'b> {
    pub(super) st: &'a mut ExtState,
    pub(super) ctx: &'a mut SchedCtx<'b>,
}

impl Kf<'_, '_> {
    /// `bpf_get_smp_processor_id()`: the simulated CPU running the callback.
    pub fn cpu(&self) -> CpuId {
        self.ctx.cpu()
    }

    /// `bpf_ktime_get_ns()`: simulated time.
    pub fn now(&self) -> u64 {
        self.ctx.now()
    }

    /// CPUs booted (`scx_bpf_nr_cpu_ids`).
    pub fn nr_cpus(&self) -> usize {
        self.ctx.nr_cpus()
    }

    /// `p->pid`.
    pub fn pid(&self, p: TaskId) -> u32 {
        self.ctx.task(p).pid
    }

    /// Whether `p` may run on `cpu` (`p->cpus_ptr`).
    pub fn allowed(&self, p: TaskId, cpu: CpuId) -> bool {
        self.ctx.allowed(p, cpu)
    }

    /// `p->scx.slice`.
    pub fn slice(&self, p: TaskId) -> u64 {
        self.st.tasks[p as usize].slice
    }

    /// Set `p->scx.slice`.
    pub fn set_slice(&mut self, p: TaskId, ns: u64) {
        self.st.tasks[p as usize].slice = ns;
    }

    /// `p->scx.dsq_vtime`.
    pub fn dsq_vtime(&self, p: TaskId) -> u64 {
        self.st.tasks[p as usize].dsq_vtime
    }

    /// Set `p->scx.dsq_vtime`.
    pub fn set_dsq_vtime(&mut self, p: TaskId, v: u64) {
        self.st.tasks[p as usize].dsq_vtime = v;
    }

    /// `p->scx.weight` (100 at nice 0).
    pub fn weight(&self, p: TaskId) -> u32 {
        self.st.tasks[p as usize].weight
    }

    /// `scx_bpf_dispatch` / `scx_bpf_dsq_insert`.
    pub fn dispatch(&mut self, p: TaskId, dsq_id: u64, slice: u64, enq_flags: u64) {
        self.st
            .dispatch(self.ctx, p, dsq_id, slice, None, enq_flags);
    }

    /// `scx_bpf_dispatch_vtime` / `scx_bpf_dsq_insert_vtime`.
    pub fn dispatch_vtime(
        &mut self,
        p: TaskId,
        dsq_id: u64,
        slice: u64,
        vtime: u64,
        enq_flags: u64,
    ) {
        self.st
            .dispatch(self.ctx, p, dsq_id, slice, Some(vtime), enq_flags);
    }

    /// `scx_bpf_consume` / `scx_bpf_dsq_move_to_local`: move the first task of `dsq_id`
    /// to this CPU's local DSQ.
    pub fn consume(&mut self, dsq_id: u64) -> bool {
        self.st.consume_kfunc(self.ctx, dsq_id)
    }

    /// `bpf_iter_scx_dsq_new`: (the DSQ's sequence number, its tasks in order), or
    /// `None` (−ENOENT) for a DSQ that is not a user DSQ.
    pub fn dsq_iter_new(&mut self, dsq_id: u64, rev: bool) -> Option<(u64, Vec<TaskId>)> {
        self.st.dsq_iter_new(self.ctx, dsq_id, rev)
    }

    /// Whether `p` is still on user DSQ `dsq_id`, queued no later than `seq`; the
    /// iterator's look at it is charged.
    pub fn dsq_iter_visible(&mut self, p: TaskId, dsq_id: u64, seq: u64) -> bool {
        self.ctx.read(Shared::Task(p));
        self.st.on_dsq_since(p, dsq_id, seq)
    }

    /// `scx_bpf_dispatch_from_dsq` / `scx_bpf_dsq_move` (and the vtime variants, with
    /// `SCX_ENQ_DSQ_PRIQ` in `enq_flags`).
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch_from_dsq(
        &mut self,
        src: u64,
        seq: u64,
        p: TaskId,
        dst: u64,
        enq_flags: u64,
        slice: Option<u64>,
        vtime: Option<u64>,
    ) -> bool {
        self.st
            .dispatch_from_dsq(self.ctx, src, seq, p, dst, enq_flags, slice, vtime)
    }

    /// For `scx_bpf_events`: (prev tasks kept running, whether the scheduler is bypassed).
    pub fn event_counts(&self) -> (u64, bool) {
        (self.st.stats.keep_prev, self.st.ended())
    }

    /// `scx_bpf_create_dsq(dsq_id, node)`: 0 or a negative errno.
    pub fn create_dsq(&mut self, dsq_id: u64) -> i32 {
        self.st.create_dsq(self.ctx, dsq_id)
    }

    /// `scx_bpf_destroy_dsq`.
    pub fn destroy_dsq(&mut self, dsq_id: u64) {
        self.st.destroy_dsq(dsq_id);
    }

    /// `scx_bpf_dsq_nr_queued`: −ENOENT for a DSQ that does not exist.
    pub fn dsq_nr_queued(&mut self, dsq_id: u64) -> i32 {
        self.st.dsq_nr_queued(self.ctx, dsq_id)
    }

    /// `scx_bpf_kick_cpu`.
    pub fn kick_cpu(&mut self, cpu: i32, flags: u64) {
        self.st.kick_cpu(self.ctx, cpu, flags);
    }

    /// `scx_bpf_select_cpu_dfl`: (cpu, is_idle).
    pub fn select_cpu_dfl(&mut self, p: TaskId, prev: i32, wake_flags: u64) -> (i32, bool) {
        self.st.select_cpu_dfl(self.ctx, p, prev, wake_flags)
    }

    /// `scx_bpf_test_and_clear_cpu_idle`.
    pub fn test_and_clear_cpu_idle(&mut self, cpu: i32) -> bool {
        usize::try_from(cpu).is_ok_and(|c| self.st.test_and_clear_idle(self.ctx, c))
    }

    /// `scx_bpf_pick_idle_cpu(cpus_allowed of p, flags)`: −EBUSY when none.
    pub fn pick_idle_cpu(&mut self, p: TaskId, flags: u64) -> i32 {
        self.st
            .pick_idle_cpu(self.ctx, p, flags)
            .map_or(-16, |c| c as i32)
    }

    /// Whether `cpu` is in the idle-core mask (`idle_masks.smt`; the idle mask without
    /// SMT).
    pub fn core_idle(&self, cpu: CpuId) -> bool {
        if self.st.smt_active {
            self.st.smt_idle.get(cpu).copied().unwrap_or(false)
        } else {
            self.cpu_idle(cpu)
        }
    }

    /// `scx_bpf_pick_any_cpu`.
    pub fn pick_any_cpu(&mut self, p: TaskId, flags: u64) -> i32 {
        match self.st.pick_idle_cpu(self.ctx, p, flags) {
            Some(c) => c as i32,
            None => (0..self.ctx.nr_cpus())
                .find(|&c| self.ctx.allowed(p, c))
                .map_or(-16, |c| c as i32),
        }
    }

    /// Whether `cpu` is in the built-in idle mask.
    pub fn cpu_idle(&self, cpu: CpuId) -> bool {
        self.st.idle.get(cpu).copied().unwrap_or(false)
    }

    /// `scx_bpf_task_running`.
    pub fn task_running(&self, p: TaskId) -> bool {
        self.ctx.task(p).on_cpu.is_some()
    }

    /// `scx_bpf_task_cpu`.
    pub fn task_cpu(&self, p: TaskId) -> CpuId {
        self.ctx.task(p).processor
    }

    /// `scx_bpf_error`: the scheduler is ended with `msg`.
    pub fn error(&mut self, msg: String) {
        self.st.error(msg);
    }

    /// `scx_bpf_dispatch_nr_slots`.
    pub fn dispatch_nr_slots(&self) -> u32 {
        (self.st.max_batch - self.st.dsp_buf.len()) as u32
    }

    /// `scx_bpf_dispatch_cancel`.
    pub fn dispatch_cancel(&mut self) {
        self.st.dsp_buf.pop();
    }

    /// Charge `ns` of the scheduler's own work to this CPU (a helper's or a map's cost).
    pub fn charge(&mut self, ns: u64) {
        self.ctx.charge(ns);
    }
}
