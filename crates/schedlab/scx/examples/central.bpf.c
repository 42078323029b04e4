/* scx:@central — central dispatch: every runnable task waits in one BPF queue map, and
 * only the central CPU (CPU 0) takes tasks out of it, handing each to the local DSQ of a
 * CPU with nothing queued and kicking that CPU. Other CPUs never choose for themselves: an
 * idle one asks the central CPU for work by kicking it. All scheduling decisions are one
 * CPU's, as in the kernel's scx_central, written here from its description.
 * Written for schedlab, MIT/Apache-2.0. */
#include "schedlab_scx.h"

#define CENTRAL 0
#define FALLBACK_DSQ 1

const volatile u64 slice_us = 20000;

struct bpf_cpumask;
bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask);
struct task_struct *bpf_task_from_pid(s32 pid);
void bpf_task_release(struct task_struct *p);

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 65536);
	__type(value, s32);
} central_q SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, u64);
	__uint(max_entries, 3); /* [handed out, to the central CPU itself, queue full] */
} stats SEC(".maps");

static void stat(u32 i)
{
	u64 *c = bpf_map_lookup_elem(&stats, &i);
	if (c)
		(*c)++;
}

s32 BPF_STRUCT_OPS(central_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	/* Placement is the central CPU's business: stay where the task was. */
	return prev_cpu;
}

void BPF_STRUCT_OPS(central_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 pid = p->pid;

	if (bpf_map_push_elem(&central_q, &pid, 0)) {
		stat(2);
		scx_bpf_dsq_insert(p, FALLBACK_DSQ, slice_us * 1000, enq_flags);
		return;
	}
	scx_bpf_kick_cpu(CENTRAL, SCX_KICK_IDLE);
}

/* Hand one queued task to @cpu's local DSQ; false when the queue is empty. */
static bool hand_out(s32 cpu)
{
	s32 pid;
	struct task_struct *p;

	if (bpf_map_pop_elem(&central_q, &pid))
		return false;
	p = bpf_task_from_pid(pid);
	if (!p)
		return true; /* it exited meanwhile */
	if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_us * 1000, 0);
	else
		scx_bpf_dsq_insert(p, FALLBACK_DSQ, slice_us * 1000, 0);
	bpf_task_release(p);
	return true;
}

void BPF_STRUCT_OPS(central_dispatch, s32 cpu, struct task_struct *prev)
{
	u32 nr = scx_bpf_nr_cpu_ids();

	if (cpu != CENTRAL) {
		if (scx_bpf_dsq_move_to_local(FALLBACK_DSQ))
			return;
		/* Ask for work: the central CPU dispatches when it schedules. */
		scx_bpf_kick_cpu(CENTRAL, SCX_KICK_PREEMPT);
		return;
	}
	/* One dispatch buffer per call: keep a slot for the central CPU's own task. */
	for (u32 c = 0; c < nr && scx_bpf_dispatch_nr_slots() > 1; c++) {
		if (c == CENTRAL || scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | c))
			continue;
		if (!hand_out(c))
			break;
		stat(0);
		scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
	}
	if (hand_out(CENTRAL)) {
		stat(1);
		return;
	}
	scx_bpf_dsq_move_to_local(FALLBACK_DSQ);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(central_init)
{
	return scx_bpf_create_dsq(FALLBACK_DSQ, -1);
}

SCX_OPS_DEFINE(central_ops,
	       .select_cpu = (void *)central_select_cpu,
	       .enqueue = (void *)central_enqueue,
	       .dispatch = (void *)central_dispatch,
	       .init = (void *)central_init,
	       .name = "central");
