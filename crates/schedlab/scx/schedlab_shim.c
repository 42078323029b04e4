/* schedlab's kfunc shim, compiled into every sched_ext scheduler schedlab loads: each
 * kfunc and helper the scheduler calls forwards to schedlab through one table of
 * function pointers that the loader fills (policy/scx/cabi/mod.rs) before the first call.
 * Written for schedlab, MIT/Apache-2.0. */
#include "vmlinux.h"
#include "bpf/bpf_helpers.h"

struct schedlab_kfuncs {
	void *(*map_lookup)(void *map, const void *key);
	void *(*map_lookup_percpu)(void *map, const void *key, u32 cpu);
	long (*map_update)(void *map, const void *key, const void *value, u64 flags);
	long (*map_delete)(void *map, const void *key);
	long (*map_push)(void *map, const void *value, u64 flags);
	long (*map_pop)(void *map, void *value, int peek);
	void *(*task_storage_get)(void *map, struct task_struct *p, void *value, u64 flags);
	long (*task_storage_delete)(void *map, struct task_struct *p);
	void *(*cgrp_storage_get)(void *map, u64 cgid, void *value, u64 flags);
	long (*cgrp_storage_delete)(void *map, u64 cgid);
	u64 (*ktime)(void);
	u32 (*cpu)(void);
	u32 (*prandom)(void);
	s32 (*create_dsq)(u64 dsq_id, s32 node);
	s32 (*select_cpu_dfl)(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle);
	void (*dispatch)(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags, int vtime_set);
	u32 (*dispatch_nr_slots)(void);
	void (*dispatch_cancel)(void);
	bool (*consume)(u64 dsq_id);
	void (*kick_cpu)(s32 cpu, u64 flags);
	s32 (*dsq_nr_queued)(u64 dsq_id);
	void (*destroy_dsq)(u64 dsq_id);
	void (*error)(const char *msg, s64 code, int is_exit);
	bool (*test_and_clear_cpu_idle)(s32 cpu);
	s32 (*pick_idle_cpu)(const cpumask_t *allowed, u64 flags, int any);
	bool (*task_running)(const struct task_struct *p);
	s32 (*task_cpu)(const struct task_struct *p);
	u32 (*nr_cpu_ids)(void);
	const struct cpumask *(*idle_cpumask)(void);
	const struct cpumask *(*idle_smtmask)(void);
	const struct cpumask *(*possible_cpumask)(void);
	struct task_struct *(*task_from_pid)(s32 pid);
	u32 (*reenqueue_local)(void);
	long (*timer_init)(struct bpf_timer *t, void *map, u64 flags);
	long (*timer_set_callback)(struct bpf_timer *t, void *cb);
	long (*timer_start)(struct bpf_timer *t, u64 nsecs, u64 flags);
	long (*timer_cancel)(struct bpf_timer *t);
	int (*iter_dsq_new)(struct bpf_iter_scx_dsq *it, u64 dsq_id, u64 flags);
	struct task_struct *(*iter_dsq_next)(struct bpf_iter_scx_dsq *it);
	void (*iter_dsq_destroy)(struct bpf_iter_scx_dsq *it);
	bool (*dispatch_from_dsq)(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags);
	void (*events)(struct scx_event_stats *events);
};

struct schedlab_kfuncs schedlab_kf;

void *bpf_map_lookup_elem(void *m, const void *k) { return schedlab_kf.map_lookup(m, k); }
void *bpf_map_lookup_percpu_elem(void *m, const void *k, u32 cpu) { return schedlab_kf.map_lookup_percpu(m, k, cpu); }
long bpf_map_update_elem(void *m, const void *k, const void *v, u64 f) { return schedlab_kf.map_update(m, k, v, f); }
long bpf_map_delete_elem(void *m, const void *k) { return schedlab_kf.map_delete(m, k); }
long bpf_map_push_elem(void *m, const void *v, u64 f) { return schedlab_kf.map_push(m, v, f); }
long bpf_map_pop_elem(void *m, void *v) { return schedlab_kf.map_pop(m, v, 0); }
long bpf_map_peek_elem(void *m, void *v) { return schedlab_kf.map_pop(m, v, 1); }
void *bpf_task_storage_get(void *m, struct task_struct *p, void *v, u64 f) { return schedlab_kf.task_storage_get(m, p, v, f); }
long bpf_task_storage_delete(void *m, struct task_struct *p) { return schedlab_kf.task_storage_delete(m, p); }
void *bpf_cgrp_storage_get(void *m, struct cgroup *c, void *v, u64 f) { return c ? schedlab_kf.cgrp_storage_get(m, c->kn->id, v, f) : NULL; }
long bpf_cgrp_storage_delete(void *m, struct cgroup *c) { return c ? schedlab_kf.cgrp_storage_delete(m, c->kn->id) : -22; }

u64 bpf_ktime_get_ns(void) { return schedlab_kf.ktime(); }
u32 bpf_get_smp_processor_id(void) { return schedlab_kf.cpu(); }
u32 bpf_get_prandom_u32(void) { return schedlab_kf.prandom(); }

long bpf_probe_read_kernel(void *dst, u32 size, const void *src)
{
	__builtin_memcpy(dst, src, size);
	return 0;
}

long bpf_probe_read_kernel_str(void *dst, u32 size, const void *src)
{
	char *d = dst;
	const char *s = src;
	u32 i = 0;
	if (!size)
		return 0;
	if (!s) {
		d[0] = 0;
		return 1;
	}
	for (; i + 1 < size && s[i]; i++)
		d[i] = s[i];
	d[i] = 0;
	return i + 1;
}

void *bpf_kptr_xchg(void *map_value, void *ptr)
{
	void **slot = map_value;
	void *old = *slot;
	*slot = ptr;
	return old;
}

s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) { return schedlab_kf.create_dsq(dsq_id, node); }
s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu, u64 wake_flags, bool *is_idle)
{ return schedlab_kf.select_cpu_dfl(p, prev_cpu, wake_flags, is_idle); }
void scx_bpf_dispatch(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{ schedlab_kf.dispatch(p, dsq_id, slice, 0, enq_flags, 0); }
void scx_bpf_dispatch_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags)
{ schedlab_kf.dispatch(p, dsq_id, slice, vtime, enq_flags, 1); }
/* The 6.13+ names of the same kfuncs. */
void scx_bpf_dsq_insert(struct task_struct *p, u64 dsq_id, u64 slice, u64 enq_flags)
{ schedlab_kf.dispatch(p, dsq_id, slice, 0, enq_flags, 0); }
void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq_id, u64 slice, u64 vtime, u64 enq_flags)
{ schedlab_kf.dispatch(p, dsq_id, slice, vtime, enq_flags, 1); }
u32 scx_bpf_dispatch_nr_slots(void) { return schedlab_kf.dispatch_nr_slots(); }
void scx_bpf_dispatch_cancel(void) { schedlab_kf.dispatch_cancel(); }
bool scx_bpf_consume(u64 dsq_id) { return schedlab_kf.consume(dsq_id); }
bool scx_bpf_dsq_move_to_local(u64 dsq_id) { return schedlab_kf.consume(dsq_id); }
void scx_bpf_kick_cpu(s32 cpu, u64 flags) { schedlab_kf.kick_cpu(cpu, flags); }
s32 scx_bpf_dsq_nr_queued(u64 dsq_id) { return schedlab_kf.dsq_nr_queued(dsq_id); }
void scx_bpf_destroy_dsq(u64 dsq_id) { schedlab_kf.destroy_dsq(dsq_id); }
u32 scx_bpf_reenqueue_local(void) { return schedlab_kf.reenqueue_local(); }
bool scx_bpf_test_and_clear_cpu_idle(s32 cpu) { return schedlab_kf.test_and_clear_cpu_idle(cpu); }
s32 scx_bpf_pick_idle_cpu(const cpumask_t *allowed, u64 flags) { return schedlab_kf.pick_idle_cpu(allowed, flags, 0); }
s32 scx_bpf_pick_any_cpu(const cpumask_t *allowed, u64 flags) { return schedlab_kf.pick_idle_cpu(allowed, flags, 1); }
bool scx_bpf_task_running(const struct task_struct *p) { return schedlab_kf.task_running(p); }
s32 scx_bpf_task_cpu(const struct task_struct *p) { return schedlab_kf.task_cpu(p); }
u32 scx_bpf_nr_cpu_ids(void) { return schedlab_kf.nr_cpu_ids(); }
const struct cpumask *scx_bpf_get_idle_cpumask(void) { return schedlab_kf.idle_cpumask(); }
const struct cpumask *scx_bpf_get_idle_smtmask(void) { return schedlab_kf.idle_smtmask(); }
void scx_bpf_put_idle_cpumask(const struct cpumask *m) { (void)m; }
const struct cpumask *scx_bpf_get_possible_cpumask(void) { return schedlab_kf.possible_cpumask(); }
const struct cpumask *scx_bpf_get_online_cpumask(void) { return schedlab_kf.possible_cpumask(); }
void scx_bpf_put_cpumask(const struct cpumask *m) { (void)m; }
struct task_struct *bpf_task_from_pid(s32 pid) { return schedlab_kf.task_from_pid(pid); }
struct task_struct *bpf_task_acquire(struct task_struct *p) { return p; }
void bpf_task_release(struct task_struct *p) { (void)p; }
long bpf_timer_init(struct bpf_timer *t, void *map, u64 flags) { return schedlab_kf.timer_init(t, map, flags); }
long bpf_timer_set_callback(struct bpf_timer *t, void *cb) { return schedlab_kf.timer_set_callback(t, cb); }
long bpf_timer_start(struct bpf_timer *t, u64 nsecs, u64 flags) { return schedlab_kf.timer_start(t, nsecs, flags); }
long bpf_timer_cancel(struct bpf_timer *t) { return schedlab_kf.timer_cancel(t); }
/* DSQ iteration (ext.c's bpf_iter_scx_dsq_*): the iterator's words are
 * [0] schedlab's cursor, [1] flags (SCX_DSQ_ITER_REV, __SCX_DSQ_ITER_HAS_SLICE/VTIME),
 * [2] the slice and [3] the vtime a move applies. */
#define SL_ITER_HAS_SLICE (1ULL << 30)
#define SL_ITER_HAS_VTIME (1ULL << 31)
int bpf_iter_scx_dsq_new(struct bpf_iter_scx_dsq *it, u64 dsq_id, u64 flags) { return schedlab_kf.iter_dsq_new(it, dsq_id, flags); }
struct task_struct *bpf_iter_scx_dsq_next(struct bpf_iter_scx_dsq *it) { return schedlab_kf.iter_dsq_next(it); }
void bpf_iter_scx_dsq_destroy(struct bpf_iter_scx_dsq *it) { schedlab_kf.iter_dsq_destroy(it); }
void scx_bpf_dispatch_from_dsq_set_slice(struct bpf_iter_scx_dsq *it, u64 slice)
{ it->__opaque[2] = slice; it->__opaque[1] |= SL_ITER_HAS_SLICE; }
void scx_bpf_dispatch_from_dsq_set_vtime(struct bpf_iter_scx_dsq *it, u64 vtime)
{ it->__opaque[3] = vtime; it->__opaque[1] |= SL_ITER_HAS_VTIME; }
bool scx_bpf_dispatch_from_dsq(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags)
{ return schedlab_kf.dispatch_from_dsq(it, p, dsq_id, enq_flags); }
bool scx_bpf_dispatch_vtime_from_dsq(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags)
{ return schedlab_kf.dispatch_from_dsq(it, p, dsq_id, enq_flags | SCX_ENQ_DSQ_PRIQ); }
/* The 6.13+ names. */
void scx_bpf_dsq_move_set_slice(struct bpf_iter_scx_dsq *it, u64 slice) { scx_bpf_dispatch_from_dsq_set_slice(it, slice); }
void scx_bpf_dsq_move_set_vtime(struct bpf_iter_scx_dsq *it, u64 vtime) { scx_bpf_dispatch_from_dsq_set_vtime(it, vtime); }
bool scx_bpf_dsq_move(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags)
{ return scx_bpf_dispatch_from_dsq(it, p, dsq_id, enq_flags); }
bool scx_bpf_dsq_move_vtime(struct bpf_iter_scx_dsq *it, struct task_struct *p, u64 dsq_id, u64 enq_flags)
{ return scx_bpf_dispatch_vtime_from_dsq(it, p, dsq_id, enq_flags); }

/* scx_bpf_events (6.15+): the counters the model keeps, the others zero. */
void scx_bpf_events(struct scx_event_stats *events, unsigned long size)
{
	struct scx_event_stats e = {};
	schedlab_kf.events(&e);
	__builtin_memcpy(events, &e, size < sizeof(e) ? size : sizeof(e));
}

/* CPU performance: the modelled machines run at one fixed frequency, so every CPU's
 * capacity and current performance are SCX_CPUPERF_ONE and a target set changes nothing
 * (ext.c passes it to schedutil, cpufreq_update_util). */
u32 scx_bpf_cpuperf_cap(s32 cpu) { (void)cpu; return SCX_CPUPERF_ONE; }
u32 scx_bpf_cpuperf_cur(s32 cpu) { (void)cpu; return SCX_CPUPERF_ONE; }
void scx_bpf_cpuperf_set(s32 cpu, u32 perf) { (void)cpu; (void)perf; }

/* Cgroups: the root alone (ext.c's root_task_group), every task in it. */
static struct kernfs_node sl_root_kn = { .id = 1 };
struct cgroup schedlab_root_cgrp = { .level = 0, .kn = &sl_root_kn, .ancestors = { &schedlab_root_cgrp } };
struct cgroup *scx_bpf_task_cgroup(struct task_struct *p) { (void)p; return &schedlab_root_cgrp; }
struct cgroup *bpf_cgroup_acquire(struct cgroup *c) { return c; }
void bpf_cgroup_release(struct cgroup *c) { (void)c; }
struct cgroup *bpf_cgroup_ancestor(struct cgroup *c, int level)
{ return c && level >= 0 && level <= c->level ? c->ancestors[level] : NULL; }
struct cgroup *bpf_cgroup_from_id(u64 cgid) { return cgid == 1 ? &schedlab_root_cgrp : NULL; }

/* Allocated objects (bpf_obj_new: the "type id" is the object's size, see
 * bpf_core_read.h) and the red-black tree kfuncs over them, kept as a list sorted by the
 * scheduler's less() — equal keys after the ones already there, as rb_add places them.
 * A node's words: [0] the next node, [1] whether it is in a tree. */
void *calloc(unsigned long n, unsigned long size);
void free(void *p);
void *bpf_obj_new_impl(u64 size, void *meta) { (void)meta; return calloc(1, size); }
void bpf_obj_drop_impl(void *p, void *meta) { (void)meta; free(p); }
void *bpf_refcount_acquire_impl(void *p, void *meta) { (void)meta; return p; }
int bpf_rbtree_add_impl(struct bpf_rb_root *root, struct bpf_rb_node *node,
			bool (less)(struct bpf_rb_node *a, const struct bpf_rb_node *b),
			void *meta, u64 off)
{
	(void)meta;
	(void)off;
	if (node->__opaque[1])
		return -22;
	struct bpf_rb_node **pp = (struct bpf_rb_node **)&root->__opaque[0];
	while (*pp && !less(node, *pp))
		pp = (struct bpf_rb_node **)&(*pp)->__opaque[0];
	node->__opaque[0] = (u64)(unsigned long)*pp;
	node->__opaque[1] = 1;
	*pp = node;
	return 0;
}
struct bpf_rb_node *bpf_rbtree_first(struct bpf_rb_root *root) { return (struct bpf_rb_node *)(unsigned long)root->__opaque[0]; }
struct bpf_rb_node *bpf_rbtree_remove(struct bpf_rb_root *root, struct bpf_rb_node *node)
{
	if (!node->__opaque[1])
		return NULL;
	struct bpf_rb_node **pp = (struct bpf_rb_node **)&root->__opaque[0];
	while (*pp && *pp != node)
		pp = (struct bpf_rb_node **)&(*pp)->__opaque[0];
	if (!*pp)
		return NULL;
	*pp = (struct bpf_rb_node *)(unsigned long)node->__opaque[0];
	node->__opaque[0] = 0;
	node->__opaque[1] = 0;
	return node;
}

void bpf_rcu_read_lock(void) {}
void bpf_rcu_read_unlock(void) {}

/* cpumask kfuncs: plain bit operations on schedlab's 1024-bit masks. */
#define SL_WORDS (SCHEDLAB_NR_CPUS / (8 * sizeof(unsigned long)))
#define SL_BITS (8 * sizeof(unsigned long))
static struct bpf_cpumask sl_masks[4096];
static int sl_nmasks;
struct bpf_cpumask *bpf_cpumask_create(void)
{
	if (sl_nmasks >= 4096)
		return NULL;
	struct bpf_cpumask *m = &sl_masks[sl_nmasks++];
	__builtin_memset(m, 0, sizeof(*m));
	m->usage = 1;
	return m;
}
struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *m) { m->usage++; return m; }
void bpf_cpumask_release(struct bpf_cpumask *m) { m->usage--; }
bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *m)
{ return cpu < SCHEDLAB_NR_CPUS && (m->bits[cpu / SL_BITS] >> (cpu % SL_BITS)) & 1; }
void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *m)
{ if (cpu < SCHEDLAB_NR_CPUS) m->cpumask.bits[cpu / SL_BITS] |= 1UL << (cpu % SL_BITS); }
void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{ if (cpu < SCHEDLAB_NR_CPUS) m->cpumask.bits[cpu / SL_BITS] &= ~(1UL << (cpu % SL_BITS)); }
bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *m)
{ bool b = bpf_cpumask_test_cpu(cpu, &m->cpumask); bpf_cpumask_set_cpu(cpu, m); return b; }
bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *m)
{ bool b = bpf_cpumask_test_cpu(cpu, &m->cpumask); bpf_cpumask_clear_cpu(cpu, m); return b; }
void bpf_cpumask_clear(struct bpf_cpumask *m) { __builtin_memset(&m->cpumask, 0, sizeof(m->cpumask)); }
void bpf_cpumask_setall(struct bpf_cpumask *m)
{
	u32 n = schedlab_kf.nr_cpu_ids();
	bpf_cpumask_clear(m);
	for (u32 c = 0; c < n; c++)
		bpf_cpumask_set_cpu(c, m);
}
u32 bpf_cpumask_first(const struct cpumask *m)
{
	for (u32 c = 0; c < SCHEDLAB_NR_CPUS; c++)
		if (bpf_cpumask_test_cpu(c, m))
			return c;
	return SCHEDLAB_NR_CPUS;
}
u32 bpf_cpumask_first_zero(const struct cpumask *m)
{
	for (u32 c = 0; c < SCHEDLAB_NR_CPUS; c++)
		if (!bpf_cpumask_test_cpu(c, m))
			return c;
	return SCHEDLAB_NR_CPUS;
}
u32 bpf_cpumask_weight(const struct cpumask *m)
{
	u32 n = 0;
	for (u32 w = 0; w < SL_WORDS; w++)
		n += __builtin_popcountl(m->bits[w]);
	return n;
}
bool bpf_cpumask_empty(const struct cpumask *m) { return bpf_cpumask_weight(m) == 0; }
bool bpf_cpumask_full(const struct cpumask *m) { return bpf_cpumask_weight(m) >= schedlab_kf.nr_cpu_ids(); }
bool bpf_cpumask_and(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{
	bool any = false;
	for (u32 w = 0; w < SL_WORDS; w++)
		any |= (d->cpumask.bits[w] = a->bits[w] & b->bits[w]) != 0;
	return any;
}
void bpf_cpumask_or(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{ for (u32 w = 0; w < SL_WORDS; w++) d->cpumask.bits[w] = a->bits[w] | b->bits[w]; }
void bpf_cpumask_xor(struct bpf_cpumask *d, const struct cpumask *a, const struct cpumask *b)
{ for (u32 w = 0; w < SL_WORDS; w++) d->cpumask.bits[w] = a->bits[w] ^ b->bits[w]; }
bool bpf_cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{ for (u32 w = 0; w < SL_WORDS; w++) if (a->bits[w] != b->bits[w]) return false; return true; }
bool bpf_cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{ for (u32 w = 0; w < SL_WORDS; w++) if (a->bits[w] & b->bits[w]) return true; return false; }
bool bpf_cpumask_subset(const struct cpumask *a, const struct cpumask *b)
{ for (u32 w = 0; w < SL_WORDS; w++) if (a->bits[w] & ~b->bits[w]) return false; return true; }
void bpf_cpumask_copy(struct bpf_cpumask *d, const struct cpumask *s) { d->cpumask = *s; }
u32 bpf_cpumask_any_distribute(const struct cpumask *m) { return bpf_cpumask_first(m); }
u32 bpf_cpumask_any_and_distribute(const struct cpumask *a, const struct cpumask *b)
{
	for (u32 c = 0; c < SCHEDLAB_NR_CPUS; c++)
		if (bpf_cpumask_test_cpu(c, a) && bpf_cpumask_test_cpu(c, b))
			return c;
	return SCHEDLAB_NR_CPUS;
}

/* The bstr kfuncs: the format with its u64 arguments, formatted here. */
static void sl_format(char *out, u32 n, const char *fmt, const unsigned long long *data, u32 data_len)
{
	u32 o = 0, a = 0, na = data_len / 8;
	for (const char *f = fmt; *f && o + 1 < n; f++) {
		if (*f != '%') {
			out[o++] = *f;
			continue;
		}
		f++;
		if (*f == '%') {
			out[o++] = '%';
			continue;
		}
		while (*f == 'l' || *f == 'h' || *f == 'z' || (*f >= '0' && *f <= '9') || *f == '-')
			f++;
		unsigned long long v = a < na ? data[a++] : 0;
		char tmp[32];
		int t = 0;
		if (*f == 's') {
			const char *s = (const char *)(unsigned long)v;
			while (s && *s && o + 1 < n)
				out[o++] = *s++;
			continue;
		}
		int neg = *f == 'd' || *f == 'i';
		int hex = *f == 'x' || *f == 'p';
		if (*f == 'p' && o + 3 < n) {
			out[o++] = '0';
			out[o++] = 'x';
		}
		if (neg && (long long)v < 0) {
			out[o++] = '-';
			v = -(long long)v;
		}
		do {
			unsigned d = hex ? v % 16 : v % 10;
			tmp[t++] = d < 10 ? '0' + d : 'a' + d - 10;
			v = hex ? v / 16 : v / 10;
		} while (v && t < 31);
		while (t && o + 1 < n)
			out[o++] = tmp[--t];
		if (!*f)
			break;
	}
	out[o] = 0;
}

void scx_bpf_error_bstr(char *fmt, unsigned long long *data, u32 data_len)
{
	char msg[1024];
	sl_format(msg, sizeof(msg), fmt, data, data_len);
	schedlab_kf.error(msg, 0, 0);
}

void scx_bpf_exit_bstr(s64 exit_code, char *fmt, unsigned long long *data, u32 data_len)
{
	char msg[1024];
	sl_format(msg, sizeof(msg), fmt, data, data_len);
	schedlab_kf.error(msg, exit_code, 1);
}

void scx_bpf_dump_bstr(char *fmt, unsigned long long *data, u32 data_len)
{
	(void)fmt;
	(void)data;
	(void)data_len;
}
