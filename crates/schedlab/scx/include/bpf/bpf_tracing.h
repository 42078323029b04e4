/* schedlab's stand-in for libbpf's bpf_tracing.h: a BPF_PROG is an ordinary C function
 * with its arguments as written. Written for schedlab, MIT/Apache-2.0. */
#ifndef SCHEDLAB_BPF_TRACING_H
#define SCHEDLAB_BPF_TRACING_H
#include "bpf_helpers.h"
#define BPF_PROG(name, args...) name(args)
#endif
