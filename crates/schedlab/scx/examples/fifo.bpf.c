/* scx:@fifo — one global FIFO (SCX_DSQ_GLOBAL): every CPU takes the oldest runnable
 * task. A wake-up goes straight to an idle CPU when the built-in idle tracking finds
 * one. The shared queue's lock is every CPU's: on many CPUs it contends as 2.4's
 * runqueue_lock did. Written for schedlab, MIT/Apache-2.0. */
#include "schedlab_scx.h"

s32 BPF_STRUCT_OPS(fifo_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);

	if (idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void BPF_STRUCT_OPS(fifo_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
}

SCX_OPS_DEFINE(fifo_ops,
	       .select_cpu = (void *)fifo_select_cpu,
	       .enqueue = (void *)fifo_enqueue,
	       .name = "fifo");
