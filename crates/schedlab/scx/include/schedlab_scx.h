/* schedlab's own sched_ext header for its example schedulers (scx:@fifo, @vtime,
 * @central): the struct_ops macros and the kfunc declarations, written from the
 * documented 6.12 API. The kernel's own examples use their include/scx instead.
 * Written for schedlab, MIT/Apache-2.0. */
#ifndef SCHEDLAB_SCX_H
#define SCHEDLAB_SCX_H

#include "vmlinux.h"
#include "bpf/bpf_helpers.h"
#include "bpf/bpf_tracing.h"

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)
#define SCX_OPS_DEFINE(name, ...) \
	SEC(".struct_ops.link") struct sched_ext_ops name = { __VA_ARGS__, };

s32 scx_bpf_create_dsq(u64 dsq_id, s32 node);
s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle);
void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags);
void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags);
bool scx_bpf_dsq_move_to_local(u64 dsq_id);
u32 scx_bpf_dispatch_nr_slots(void);
s32 scx_bpf_dsq_nr_queued(u64 dsq_id);
void scx_bpf_kick_cpu(s32 cpu, u64 flags);
bool scx_bpf_test_and_clear_cpu_idle(s32 cpu);
u32 scx_bpf_nr_cpu_ids(void);
s32 scx_bpf_task_cpu(const struct task_struct *p);
void scx_bpf_error_bstr(char *fmt, unsigned long long *data, u32 data_len);

#define scx_bpf_error(fmt, args...) ({ \
	static char ___fmt[] = fmt; \
	unsigned long long ___param[___bpf_narg(args) + 1] = {}; \
	___bpf_fill(___param, args); \
	scx_bpf_error_bstr(___fmt, ___param, sizeof(___param)); \
})

static inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

#endif
