/* scx:@vtime — weighted fair queueing on one shared vtime-ordered DSQ: a task's
 * virtual time advances by the time it ran divided by its weight (nice 0 = 100), the
 * lowest runs first, and a task that slept comes back at most one slice behind the
 * clock of the running tasks. Knob: slice_us (rodata), e.g. scx:@vtime,set=slice_us=5000.
 * Written for schedlab, MIT/Apache-2.0. */
#include "schedlab_scx.h"

#define SHARED_DSQ 1

const volatile u64 slice_us = 20000;

static u64 vclock;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, u64);
	__uint(max_entries, 2); /* [dispatched from the shared DSQ, went straight to idle] */
} counts SEC(".maps");

static void count(u32 i)
{
	u64 *c = bpf_map_lookup_elem(&counts, &i);
	if (c)
		(*c)++;
}

s32 BPF_STRUCT_OPS(vtime_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle) {
		count(1);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_us * 1000, 0);
	}
	return cpu;
}

void BPF_STRUCT_OPS(vtime_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 slice = slice_us * 1000;
	u64 v = p->scx.dsq_vtime;

	if (vtime_before(v, vclock - slice))
		v = vclock - slice;
	scx_bpf_dsq_insert_vtime(p, SHARED_DSQ, slice, v, enq_flags);
}

void BPF_STRUCT_OPS(vtime_dispatch, s32 cpu, struct task_struct *prev)
{
	if (scx_bpf_dsq_move_to_local(SHARED_DSQ))
		count(0);
}

void BPF_STRUCT_OPS(vtime_running, struct task_struct *p)
{
	if (vtime_before(vclock, p->scx.dsq_vtime))
		vclock = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(vtime_stopping, struct task_struct *p, bool runnable)
{
	u64 slice = slice_us * 1000;
	u64 used = p->scx.slice < slice ? slice - p->scx.slice : 0;

	p->scx.dsq_vtime += used * 100 / p->scx.weight;
}

void BPF_STRUCT_OPS(vtime_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vclock;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(vtime_init)
{
	if (!slice_us) {
		scx_bpf_error("slice_us must be positive");
		return -22;
	}
	return scx_bpf_create_dsq(SHARED_DSQ, -1);
}

SCX_OPS_DEFINE(vtime_ops,
	       .select_cpu = (void *)vtime_select_cpu,
	       .enqueue = (void *)vtime_enqueue,
	       .dispatch = (void *)vtime_dispatch,
	       .running = (void *)vtime_running,
	       .stopping = (void *)vtime_stopping,
	       .enable = (void *)vtime_enable,
	       .init = (void *)vtime_init,
	       .name = "vtime");
