/* schedlab's stand-in for libbpf's bpf_core_read.h: no relocation is needed natively —
 * every field of schedlab's vmlinux.h exists as declared. Written for schedlab,
 * MIT/Apache-2.0. */
#ifndef SCHEDLAB_BPF_CORE_READ_H
#define SCHEDLAB_BPF_CORE_READ_H
#include "bpf_helpers.h"
#define bpf_core_field_exists(field) 1
#define bpf_core_type_exists(type) 1
#define bpf_core_enum_value_exists(type, value) 1
/* bpf_obj_new() passes the local type id for the kernel to size the object by: here the
 * size itself stands in for the id (the shim's bpf_obj_new_impl allocates that many). */
#define bpf_core_type_id_local(type) sizeof(type)
#define bpf_core_type_id_kernel(type) 0
#define bpf_core_enum_value(type, value) (value)
#define bpf_core_field_size(field) sizeof(field)
#define bpf_core_type_matches(type) 1
#define bpf_core_read(dst, sz, src) bpf_probe_read_kernel(dst, sz, src)
#define BPF_CORE_READ(src, a, ...) ((src)->a)
#endif
