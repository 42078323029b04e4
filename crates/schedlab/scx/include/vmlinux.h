/* schedlab's stand-in for a bpftool-generated vmlinux.h: the kernel types and constants
 * a sched_ext scheduler uses, laid out as schedlab's loader (policy/scx/cabi/mod.rs) mirrors
 * them. Compiled as ordinary native code: a scheduler sees the simulated kernel through
 * these structs and the kfuncs of schedlab_shim.c. Written for schedlab, MIT/Apache-2.0. */
#ifndef SCHEDLAB_VMLINUX_H
#define SCHEDLAB_VMLINUX_H

#include <stdbool.h>
#include <stddef.h>

typedef signed char s8;
typedef unsigned char u8;
typedef short s16;
typedef unsigned short u16;
typedef int s32;
typedef unsigned int u32;
typedef long long s64;
typedef unsigned long long u64;
typedef s8 __s8;
typedef u8 __u8;
typedef s16 __s16;
typedef u16 __u16;
typedef s32 __s32;
typedef u32 __u32;
typedef s64 __s64;
typedef u64 __u64;
typedef u32 __be32;
typedef u64 __be64;
typedef long atomic_long_t;
typedef int atomic_t;
typedef _Bool __bool;

/* 1024 CPUs: schedlab's largest machine. */
#define SCHEDLAB_NR_CPUS 1024
struct cpumask {
	unsigned long bits[SCHEDLAB_NR_CPUS / (8 * sizeof(unsigned long))];
};
typedef struct cpumask cpumask_t;
struct bpf_cpumask {
	struct cpumask cpumask;
	int usage;
};

struct task_struct;
/* The parts of a run queue schedulers read through scx_bpf_cpu_rq(). */
struct rq {
	struct task_struct *curr;
	int cpu;
	unsigned int nr_running;
};
/* The cgroup fields schedulers read; schedlab has one cgroup, the root (id 1). */
struct kernfs_node {
	u64 id;
};
struct cgroup {
	int level;
	struct kernfs_node *kn;
	struct cgroup *ancestors[];
};
struct scx_dispatch_q;
struct bpf_iter_scx_dsq {
	u64 __opaque[6];
};
struct bpf_iter_num {
	u64 __opaque[1];
};
struct bpf_iter_bits {
	u64 __opaque[2];
};
struct bpf_list_head {
	u64 __opaque[2];
};
struct bpf_list_node {
	u64 __opaque[3];
};
struct bpf_rb_root {
	u64 __opaque[2];
};
struct bpf_rb_node {
	u64 __opaque[4];
};
struct bpf_spin_lock {
	u32 val;
};
struct bpf_timer {
	u64 __opaque[2];
};
struct bpf_refcount {
	u32 __opaque[1];
};

struct sched_ext_entity {
	struct scx_dispatch_q *dsq;
	u32 dsq_seq;
	u32 weight;
	s32 sticky_cpu;
	s32 holding_cpu;
	atomic_long_t ops_state;
	unsigned long runnable_at;
	u64 ddsp_dsq_id;
	u64 ddsp_enq_flags;
	u64 slice;
	u64 dsq_vtime;
	u32 flags;
	bool disallow;
};

struct sched_entity {
	u64 exec_start;
	u64 sum_exec_runtime;
	u64 vruntime;
};

struct task_struct {
	unsigned int __state;
	int pid;
	int tgid;
	unsigned int flags;
	int prio;
	int static_prio;
	int normal_prio;
	int nr_cpus_allowed;
	unsigned short migration_disabled;
	char comm[16];
	const cpumask_t *cpus_ptr;
	cpumask_t cpus_mask;
	struct sched_entity se;
	struct sched_ext_entity scx;
	/* schedlab's task id: not a kernel field. */
	u32 __schedlab_id;
};

enum scx_public_consts {
	SCX_OPS_NAME_LEN = 128,
	SCX_SLICE_DFL = 20 * 1000000,
	SCX_CPUPERF_ONE = 1024,
};
#define BPF_MAX_LOOPS (8 * 1024 * 1024)
#define SCX_SLICE_INF ((u64)-1)

enum scx_dsq_id_flags {
	SCX_DSQ_FLAG_BUILTIN = 1ULL << 63,
	SCX_DSQ_FLAG_LOCAL_ON = 1ULL << 62,
	SCX_DSQ_INVALID = (1ULL << 63) | 0,
	SCX_DSQ_GLOBAL = (1ULL << 63) | 1,
	SCX_DSQ_LOCAL = (1ULL << 63) | 2,
	SCX_DSQ_LOCAL_ON = (1ULL << 63) | (1ULL << 62),
	SCX_DSQ_LOCAL_CPU_MASK = 0xffffffffULL,
};

enum scx_wake_flags {
	SCX_WAKE_FORK = 0x04,
	SCX_WAKE_TTWU = 0x08,
	SCX_WAKE_SYNC = 0x10,
};

enum scx_enq_flags {
	SCX_ENQ_WAKEUP = 1ULL << 0,
	SCX_ENQ_HEAD = 1ULL << 4,
	SCX_ENQ_CPU_SELECTED = 1ULL << 10,
	SCX_ENQ_PREEMPT = 1ULL << 32,
	SCX_ENQ_REENQ = 1ULL << 40,
	SCX_ENQ_LAST = 1ULL << 41,
	SCX_ENQ_CLEAR_OPSS = 1ULL << 56,
	SCX_ENQ_DSQ_PRIQ = 1ULL << 57,
};

enum scx_deq_flags {
	SCX_DEQ_SLEEP = 1ULL << 0,
	SCX_DEQ_CORE_SCHED_EXEC = 1ULL << 32,
};

enum scx_kick_flags {
	SCX_KICK_IDLE = 1ULL << 0,
	SCX_KICK_PREEMPT = 1ULL << 1,
	SCX_KICK_WAIT = 1ULL << 2,
};

enum scx_dsq_iter_flags {
	SCX_DSQ_ITER_REV = 1U << 16,
	__SCX_DSQ_ITER_HAS_SLICE = 1U << 30,
	__SCX_DSQ_ITER_HAS_VTIME = 1U << 31,
	__SCX_DSQ_ITER_USER_FLAGS = SCX_DSQ_ITER_REV,
};

enum scx_pick_idle_cpu_flags {
	SCX_PICK_IDLE_CORE = 1ULL << 0,
};

enum scx_ops_flags {
	SCX_OPS_KEEP_BUILTIN_IDLE = 1ULL << 0,
	SCX_OPS_ENQ_LAST = 1ULL << 1,
	SCX_OPS_ENQ_EXITING = 1ULL << 2,
	SCX_OPS_SWITCH_PARTIAL = 1ULL << 3,
	SCX_OPS_HAS_CGROUP_WEIGHT = 1ULL << 16,
};

enum scx_exit_kind {
	SCX_EXIT_NONE,
	SCX_EXIT_DONE,
	SCX_EXIT_UNREG = 64,
	SCX_EXIT_UNREG_BPF,
	SCX_EXIT_UNREG_KERN,
	SCX_EXIT_SYSRQ,
	SCX_EXIT_ERROR = 1024,
	SCX_EXIT_ERROR_BPF,
	SCX_EXIT_ERROR_STALL,
};

enum scx_cpu_preempt_reason {
	SCX_CPU_PREEMPT_RT,
	SCX_CPU_PREEMPT_DL,
	SCX_CPU_PREEMPT_STOP,
	SCX_CPU_PREEMPT_UNKNOWN,
};

/* The event counters of 6.15+ (scx_bpf_events). */
struct scx_event_stats {
	s64 SCX_EV_SELECT_CPU_FALLBACK;
	s64 SCX_EV_DISPATCH_LOCAL_DSQ_OFFLINE;
	s64 SCX_EV_DISPATCH_KEEP_LAST;
	s64 SCX_EV_ENQ_SKIP_EXITING;
	s64 SCX_EV_ENQ_SKIP_MIGRATION_DISABLED;
	s64 SCX_EV_REFILL_SLICE_DFL;
	s64 SCX_EV_BYPASS_DURATION;
	s64 SCX_EV_BYPASS_DISPATCH;
	s64 SCX_EV_BYPASS_ACTIVATE;
};

struct scx_exit_info {
	enum scx_exit_kind kind;
	s64 exit_code;
	const char *reason;
	unsigned long *bt;
	u32 bt_len;
	char *msg;
	char *dump;
};

struct scx_init_task_args {
	bool fork;
	struct cgroup *cgroup;
};

struct scx_exit_task_args {
	bool cancelled;
};

struct scx_cgroup_init_args {
	u32 weight;
};

struct scx_cpu_acquire_args {
	int __unused;
};

struct scx_cpu_release_args {
	enum scx_cpu_preempt_reason reason;
	struct task_struct *task;
};

struct scx_dump_ctx {
	enum scx_exit_kind kind;
	s64 exit_code;
	const char *reason;
	u64 at_ns;
	u64 at_jiffies;
};

struct sched_ext_ops {
	s32 (*select_cpu)(struct task_struct *p, s32 prev_cpu, u64 wake_flags);
	void (*enqueue)(struct task_struct *p, u64 enq_flags);
	void (*dequeue)(struct task_struct *p, u64 deq_flags);
	void (*dispatch)(s32 cpu, struct task_struct *prev);
	void (*tick)(struct task_struct *p);
	void (*runnable)(struct task_struct *p, u64 enq_flags);
	void (*running)(struct task_struct *p);
	void (*stopping)(struct task_struct *p, bool runnable);
	void (*quiescent)(struct task_struct *p, u64 deq_flags);
	bool (*yield)(struct task_struct *from, struct task_struct *to);
	bool (*core_sched_before)(struct task_struct *a, struct task_struct *b);
	void (*set_weight)(struct task_struct *p, u32 weight);
	void (*set_cpumask)(struct task_struct *p, const struct cpumask *cpumask);
	void (*update_idle)(s32 cpu, bool idle);
	void (*cpu_acquire)(s32 cpu, struct scx_cpu_acquire_args *args);
	void (*cpu_release)(s32 cpu, struct scx_cpu_release_args *args);
	s32 (*init_task)(struct task_struct *p, struct scx_init_task_args *args);
	void (*exit_task)(struct task_struct *p, struct scx_exit_task_args *args);
	void (*enable)(struct task_struct *p);
	void (*disable)(struct task_struct *p);
	void (*dump)(struct scx_dump_ctx *ctx);
	void (*dump_cpu)(struct scx_dump_ctx *ctx, s32 cpu, bool idle);
	void (*dump_task)(struct scx_dump_ctx *ctx, struct task_struct *p);
	s32 (*cgroup_init)(struct cgroup *cgrp, struct scx_cgroup_init_args *args);
	void (*cgroup_exit)(struct cgroup *cgrp);
	s32 (*cgroup_prep_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_cancel_move)(struct task_struct *p, struct cgroup *from, struct cgroup *to);
	void (*cgroup_set_weight)(struct cgroup *cgrp, u32 weight);
	void (*cpu_online)(s32 cpu);
	void (*cpu_offline)(s32 cpu);
	s32 (*init)(void);
	void (*exit)(struct scx_exit_info *info);
	u32 dispatch_max_batch;
	u64 flags;
	u32 timeout_ms;
	u32 exit_dump_len;
	u64 hotplug_seq;
	char name[SCX_OPS_NAME_LEN];
};

enum bpf_map_type {
	BPF_MAP_TYPE_UNSPEC,
	BPF_MAP_TYPE_HASH,
	BPF_MAP_TYPE_ARRAY,
	BPF_MAP_TYPE_PROG_ARRAY,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	BPF_MAP_TYPE_PERCPU_HASH,
	BPF_MAP_TYPE_PERCPU_ARRAY,
	BPF_MAP_TYPE_STACK_TRACE,
	BPF_MAP_TYPE_CGROUP_ARRAY,
	BPF_MAP_TYPE_LRU_HASH,
	BPF_MAP_TYPE_LRU_PERCPU_HASH,
	BPF_MAP_TYPE_LPM_TRIE,
	BPF_MAP_TYPE_ARRAY_OF_MAPS,
	BPF_MAP_TYPE_HASH_OF_MAPS,
	BPF_MAP_TYPE_DEVMAP,
	BPF_MAP_TYPE_SOCKMAP,
	BPF_MAP_TYPE_CPUMAP,
	BPF_MAP_TYPE_XSKMAP,
	BPF_MAP_TYPE_SOCKHASH,
	BPF_MAP_TYPE_CGROUP_STORAGE,
	BPF_MAP_TYPE_REUSEPORT_SOCKARRAY,
	BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE,
	BPF_MAP_TYPE_QUEUE,
	BPF_MAP_TYPE_STACK,
	BPF_MAP_TYPE_SK_STORAGE,
	BPF_MAP_TYPE_DEVMAP_HASH,
	BPF_MAP_TYPE_STRUCT_OPS,
	BPF_MAP_TYPE_RINGBUF,
	BPF_MAP_TYPE_INODE_STORAGE,
	BPF_MAP_TYPE_TASK_STORAGE,
	BPF_MAP_TYPE_BLOOM_FILTER,
	BPF_MAP_TYPE_USER_RINGBUF,
	BPF_MAP_TYPE_CGRP_STORAGE,
	BPF_MAP_TYPE_ARENA,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
	BPF_F_LOCK = 4,
};

enum {
	BPF_F_TIMER_ABS = 1ULL << 0,
	BPF_F_TIMER_CPU_PIN = 1ULL << 1,
};

enum {
	BPF_F_NO_PREALLOC = 1U << 0,
	BPF_F_MMAPABLE = 1U << 10,
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1ULL << 0,
};

#endif
