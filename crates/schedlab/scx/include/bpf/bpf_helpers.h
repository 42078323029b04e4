/* schedlab's stand-in for libbpf's bpf_helpers.h: the BPF-only constructs as ordinary C
 * for a scheduler compiled natively, and the helpers as calls into schedlab (through the
 * function table of schedlab_shim.c). Written for schedlab, MIT/Apache-2.0. */
#ifndef SCHEDLAB_BPF_HELPERS_H
#define SCHEDLAB_BPF_HELPERS_H

#include "vmlinux.h"

#define SEC(name) __attribute__((section(name), used))
#define __ksym
#define __kconfig __attribute__((weak))
#ifndef __weak
#define __weak __attribute__((weak))
#endif
#define __hidden __attribute__((visibility("hidden")))
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef __noinline
#define __noinline __attribute__((noinline))
#endif
#define __arg_ctx
#define __arg_nonnull
#define __arg_trusted
#define __arg_arena
#define __kptr
#define __kptr_untrusted
#define __percpu_kptr
#define __uptr
#define __nullable
#define __ref
#define __rcu

#ifndef barrier
#define barrier() __asm__ __volatile__("" ::: "memory")
#endif
#ifndef offsetof
#define offsetof(t, m) __builtin_offsetof(t, m)
#endif
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif
#ifndef NULL
#define NULL ((void *)0)
#endif

/* Map definitions as libbpf's: the loader reads each map's shape from the BTF the
 * compiler writes (-gbtf), so a helper needs only the map's address. */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __array(name, val) typeof(val) *name[]
#define __ulong(name, val) enum { ___bpf_concat(__unique_value, __COUNTER__) = val } name
#define ___bpf_concat(a, b) a##b

void *bpf_map_lookup_elem(void *map, const void *key);
void *bpf_map_lookup_percpu_elem(void *map, const void *key, u32 cpu);
long bpf_map_update_elem(void *map, const void *key, const void *value, u64 flags);
long bpf_map_delete_elem(void *map, const void *key);
long bpf_map_push_elem(void *map, const void *value, u64 flags);
long bpf_map_pop_elem(void *map, void *value);
long bpf_map_peek_elem(void *map, void *value);
void *bpf_task_storage_get(void *map, struct task_struct *task, void *value, u64 flags);
long bpf_task_storage_delete(void *map, struct task_struct *task);
void *bpf_cgrp_storage_get(void *map, struct cgroup *cgroup, void *value, u64 flags);
long bpf_cgrp_storage_delete(void *map, struct cgroup *cgroup);

u64 bpf_ktime_get_ns(void);
u32 bpf_get_smp_processor_id(void);
u32 bpf_get_prandom_u32(void);
long bpf_probe_read_kernel(void *dst, u32 size, const void *src);
long bpf_probe_read_kernel_str(void *dst, u32 size, const void *src);
#define bpf_probe_read(dst, size, src) bpf_probe_read_kernel(dst, size, src)
void *bpf_kptr_xchg(void *map_value, void *ptr);
long bpf_timer_init(struct bpf_timer *timer, void *map, u64 flags);
long bpf_timer_set_callback(struct bpf_timer *timer, void *callback_fn);
long bpf_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags);
long bpf_timer_cancel(struct bpf_timer *timer);
#define bpf_spin_lock(l) ((void)(l))
#define bpf_spin_unlock(l) ((void)(l))
#define bpf_printk(fmt, ...) ((void)0)
#define bpf_ksym_exists(sym) (!!(sym))

/* Counted loops: plain C loops, which is what the verifier lets a program express. */
#define bpf_for(i, start, end) for ((i) = (start); (i) < (end); (i)++)
#define bpf_repeat(n) for (int ___i = 0; ___i < (n); ___i++)

/* Open-coded iterators: new, next until NULL, destroy when the loop is left (the cleanup
 * attribute runs it on break and return too). */
#define bpf_for_each(type, cur, args...)                                                   \
	for (struct bpf_iter_##type ___it                                                    \
		     __attribute__((aligned(8), cleanup(bpf_iter_##type##_destroy))),          \
	     *___p __attribute__((unused)) = (bpf_iter_##type##_new(&___it, ##args), (void *)0); \
	     ((cur) = bpf_iter_##type##_next(&___it));)

/* Argument counting and packing for the bstr kfuncs' formats. */
#define ___bpf_nth(_, _1, _2, _3, _4, _5, _6, _7, _8, _9, _a, _b, _c, N, ...) N
#define ___bpf_narg(...) ___bpf_nth(_, ##__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define ___bpf_fill0(arr, p, x) do {} while (0)
#define ___bpf_fill1(arr, p, x) arr[p] = (unsigned long long)(x)
#define ___bpf_fill2(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill1(arr, p + 1, args)
#define ___bpf_fill3(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill2(arr, p + 1, args)
#define ___bpf_fill4(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill3(arr, p + 1, args)
#define ___bpf_fill5(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill4(arr, p + 1, args)
#define ___bpf_fill6(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill5(arr, p + 1, args)
#define ___bpf_fill7(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill6(arr, p + 1, args)
#define ___bpf_fill8(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill7(arr, p + 1, args)
#define ___bpf_fill9(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill8(arr, p + 1, args)
#define ___bpf_fill10(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill9(arr, p + 1, args)
#define ___bpf_fill11(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill10(arr, p + 1, args)
#define ___bpf_fill12(arr, p, x, args...) arr[p] = (unsigned long long)(x); ___bpf_fill11(arr, p + 1, args)
#define ___bpf_apply(fn, n) ___bpf_concat(fn, n)
#define ___bpf_fill(arr, args...) ___bpf_apply(___bpf_fill, ___bpf_narg(args))(arr, 0, ##args)

#endif
