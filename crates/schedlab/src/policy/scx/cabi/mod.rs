//! A sched_ext scheduler's C source as native code: compiled with the system C compiler
//! against schedlab's stand-ins for `vmlinux.h` and libbpf's headers (`scx/include`),
//! linked with the kfunc shim (`scx/schedlab_shim.c`), cached by content hash, loaded with
//! `dlopen`, and called through its `struct sched_ext_ops`.
//!
//! Design: each run loads its own copy of the shared object, so the scheduler's globals
//! and maps are the run's alone (runs go on in parallel threads). A callback runs with
//! the run's kfunc context published in a thread-local; the shim's table of function
//! pointers ([`KfTable`]) leads each kfunc back to it. Every task has a C `struct
//! task_struct` ([`CTask`]) whose `scx` fields are copied in before a callback that names
//! the task and copied back after; kfuncs that change them refresh the copy. Maps live
//! here ([`maps`]), keyed by the address of their definition, their shape read at load
//! from the BTF the compiler writes beside the code ([`btf`]), as libbpf reads it.
//!
//! Invariants: the thread-local context is set only while a callback runs and is
//! cleared on return; a kfunc called outside a callback is an error, not a crash.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};

use crate::kernel::task::TaskId;
use crate::machine::CpuId;

use super::ops::{Has, Kf, ScxOps};

mod btf;
mod build;
mod maps;

pub use build::{build, Source, Spec, EXAMPLES};
use maps::*;

const NR_CPUS: usize = 1024;
const MASK_WORDS: usize = NR_CPUS / 64;

/// `struct cpumask` of schedlab's `vmlinux.h`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CpuMaskC {
    bits: [u64; MASK_WORDS],
}

/// `struct sched_ext_entity` of schedlab's `vmlinux.h`.
#[repr(C)]
#[derive(Clone, Copy)]
struct SchedExtEntity {
    dsq: *mut c_void,
    dsq_seq: u32,
    weight: u32,
    sticky_cpu: i32,
    holding_cpu: i32,
    ops_state: i64,
    runnable_at: u64,
    ddsp_dsq_id: u64,
    ddsp_enq_flags: u64,
    slice: u64,
    dsq_vtime: u64,
    flags: u32,
    disallow: bool,
}

/// `struct sched_entity` (the parts of schedlab's `vmlinux.h`).
#[repr(C)]
#[derive(Clone, Copy)]
struct SchedEntity {
    exec_start: u64,
    sum_exec_runtime: u64,
    vruntime: u64,
}

/// `struct task_struct` of schedlab's `vmlinux.h`.
#[repr(C)]
pub struct CTask {
    state: u32,
    pid: i32,
    tgid: i32,
    flags: u32,
    prio: i32,
    static_prio: i32,
    normal_prio: i32,
    nr_cpus_allowed: i32,
    migration_disabled: u16,
    comm: [u8; 16],
    cpus_ptr: *const CpuMaskC,
    cpus_mask: CpuMaskC,
    se: SchedEntity,
    scx: SchedExtEntity,
    schedlab_id: u32,
}

type TaskP = *mut CTask;

/// `struct sched_ext_ops` of schedlab's `vmlinux.h`.
#[repr(C)]
struct SchedExtOps {
    select_cpu: Option<unsafe extern "C" fn(TaskP, i32, u64) -> i32>,
    enqueue: Option<unsafe extern "C" fn(TaskP, u64)>,
    dequeue: Option<unsafe extern "C" fn(TaskP, u64)>,
    dispatch: Option<unsafe extern "C" fn(i32, TaskP)>,
    tick: Option<unsafe extern "C" fn(TaskP)>,
    runnable: Option<unsafe extern "C" fn(TaskP, u64)>,
    running: Option<unsafe extern "C" fn(TaskP)>,
    stopping: Option<unsafe extern "C" fn(TaskP, bool)>,
    quiescent: Option<unsafe extern "C" fn(TaskP, u64)>,
    yield_: Option<unsafe extern "C" fn(TaskP, TaskP) -> bool>,
    core_sched_before: *const c_void,
    set_weight: Option<unsafe extern "C" fn(TaskP, u32)>,
    set_cpumask: *const c_void,
    update_idle: Option<unsafe extern "C" fn(i32, bool)>,
    cpu_acquire: *const c_void,
    cpu_release: *const c_void,
    init_task: Option<unsafe extern "C" fn(TaskP, *mut InitTaskArgs) -> i32>,
    exit_task: Option<unsafe extern "C" fn(TaskP, *mut ExitTaskArgs)>,
    enable: Option<unsafe extern "C" fn(TaskP)>,
    disable: Option<unsafe extern "C" fn(TaskP)>,
    dump: *const c_void,
    dump_cpu: *const c_void,
    dump_task: *const c_void,
    cgroup_init: Option<unsafe extern "C" fn(*mut c_void, *mut CgroupInitArgs) -> i32>,
    cgroup_exit: *const c_void,
    cgroup_prep_move: *const c_void,
    cgroup_move: *const c_void,
    cgroup_cancel_move: *const c_void,
    cgroup_set_weight: *const c_void,
    cpu_online: *const c_void,
    cpu_offline: *const c_void,
    init: Option<unsafe extern "C" fn() -> i32>,
    exit: Option<unsafe extern "C" fn(*mut ExitInfo)>,
    dispatch_max_batch: u32,
    flags: u64,
    timeout_ms: u32,
    exit_dump_len: u32,
    hotplug_seq: u64,
    name: [c_char; 128],
}

#[repr(C)]
struct InitTaskArgs {
    fork: bool,
    cgroup: *mut c_void,
}

#[repr(C)]
struct CgroupInitArgs {
    weight: u32,
}

#[repr(C)]
struct ExitTaskArgs {
    cancelled: bool,
}

#[repr(C)]
struct ExitInfo {
    kind: i32,
    exit_code: i64,
    reason: *const c_char,
    bt: *mut u64,
    bt_len: u32,
    msg: *mut c_char,
    dump: *mut c_char,
}

/// The shim's `struct schedlab_kfuncs`: one entry per kfunc, in its order.
#[repr(C)]
struct KfTable {
    map_lookup: unsafe extern "C" fn(*mut c_void, *const c_void) -> *mut c_void,
    map_lookup_percpu: unsafe extern "C" fn(*mut c_void, *const c_void, u32) -> *mut c_void,
    map_update: unsafe extern "C" fn(*mut c_void, *const c_void, *const c_void, u64) -> i64,
    map_delete: unsafe extern "C" fn(*mut c_void, *const c_void) -> i64,
    map_push: unsafe extern "C" fn(*mut c_void, *const c_void, u64) -> i64,
    map_pop: unsafe extern "C" fn(*mut c_void, *mut c_void, i32) -> i64,
    task_storage_get: unsafe extern "C" fn(*mut c_void, TaskP, *mut c_void, u64) -> *mut c_void,
    task_storage_delete: unsafe extern "C" fn(*mut c_void, TaskP) -> i64,
    cgrp_storage_get: unsafe extern "C" fn(*mut c_void, u64, *mut c_void, u64) -> *mut c_void,
    cgrp_storage_delete: unsafe extern "C" fn(*mut c_void, u64) -> i64,
    ktime: unsafe extern "C" fn() -> u64,
    cpu: unsafe extern "C" fn() -> u32,
    prandom: unsafe extern "C" fn() -> u32,
    create_dsq: unsafe extern "C" fn(u64, i32) -> i32,
    select_cpu_dfl: unsafe extern "C" fn(TaskP, i32, u64, *mut bool) -> i32,
    dispatch: unsafe extern "C" fn(TaskP, u64, u64, u64, u64, i32),
    dispatch_nr_slots: unsafe extern "C" fn() -> u32,
    dispatch_cancel: unsafe extern "C" fn(),
    consume: unsafe extern "C" fn(u64) -> bool,
    kick_cpu: unsafe extern "C" fn(i32, u64),
    dsq_nr_queued: unsafe extern "C" fn(u64) -> i32,
    destroy_dsq: unsafe extern "C" fn(u64),
    error: unsafe extern "C" fn(*const c_char, i64, i32),
    test_and_clear_cpu_idle: unsafe extern "C" fn(i32) -> bool,
    pick_idle_cpu: unsafe extern "C" fn(*const CpuMaskC, u64, i32) -> i32,
    task_running: unsafe extern "C" fn(TaskP) -> bool,
    task_cpu: unsafe extern "C" fn(TaskP) -> i32,
    nr_cpu_ids: unsafe extern "C" fn() -> u32,
    idle_cpumask: unsafe extern "C" fn() -> *const CpuMaskC,
    idle_smtmask: unsafe extern "C" fn() -> *const CpuMaskC,
    possible_cpumask: unsafe extern "C" fn() -> *const CpuMaskC,
    task_from_pid: unsafe extern "C" fn(i32) -> TaskP,
    reenqueue_local: unsafe extern "C" fn() -> u32,
    timer_init: unsafe extern "C" fn(*mut c_void, *mut c_void, u64) -> i64,
    timer_set_callback: unsafe extern "C" fn(*mut c_void, *mut c_void) -> i64,
    timer_start: unsafe extern "C" fn(*mut c_void, u64, u64) -> i64,
    timer_cancel: unsafe extern "C" fn(*mut c_void) -> i64,
    iter_dsq_new: unsafe extern "C" fn(*mut DsqIterC, u64, u64) -> i32,
    iter_dsq_next: unsafe extern "C" fn(*mut DsqIterC) -> TaskP,
    iter_dsq_destroy: unsafe extern "C" fn(*mut DsqIterC),
    dispatch_from_dsq: unsafe extern "C" fn(*mut DsqIterC, TaskP, u64, u64) -> bool,
    events: unsafe extern "C" fn(*mut ScxEventStats),
}

/// `struct scx_event_stats` (6.15+).
#[repr(C)]
#[derive(Default)]
struct ScxEventStats {
    select_cpu_fallback: i64,
    dispatch_local_dsq_offline: i64,
    dispatch_keep_last: i64,
    enq_skip_exiting: i64,
    enq_skip_migration_disabled: i64,
    refill_slice_dfl: i64,
    bypass_duration: i64,
    bypass_dispatch: i64,
    bypass_activate: i64,
}

/// `struct bpf_iter_scx_dsq` as the shim uses its words: [0] unused, [1] flags,
/// [2] slice, [3] vtime (set by `scx_bpf_dispatch_from_dsq_set_*`).
#[repr(C)]
struct DsqIterC {
    opaque: [u64; 6],
}

/// `SCX_DSQ_ITER_REV`.
const SCX_DSQ_ITER_REV: u64 = 1 << 16;
/// `__SCX_DSQ_ITER_HAS_SLICE`.
const SCX_DSQ_ITER_HAS_SLICE: u64 = 1 << 30;
/// `__SCX_DSQ_ITER_HAS_VTIME`.
const SCX_DSQ_ITER_HAS_VTIME: u64 = 1 << 31;

/// A DSQ iteration in progress: the DSQ, its sequence number when it began, the tasks
/// then on it and how far the walk is.
struct DsqIter {
    dsq: u64,
    seq: u64,
    tasks: Vec<TaskId>,
    next: usize,
}

/// A `struct bpf_timer` the scheduler initialised.
#[derive(Clone, Copy, Debug, Default)]
struct CTimer {
    /// The map whose value holds it (the callback's first argument).
    map: usize,
    /// `int cb(void *map, void *key, void *value)`.
    cb: usize,
    /// When it fires, if armed.
    expires: Option<u64>,
    /// The CPU that armed it (where it fires: `BPF_F_TIMER_CPU_PIN`, and in the model
    /// always).
    cpu: usize,
}

/// What a loaded scheduler keeps beside the class: its library, tasks and maps.
struct Runtime {
    timers: BTreeMap<usize, CTimer>,
    /// Task by the address of its C task's `cpus_mask` (what `p->cpus_ptr` points at).
    by_mask: BTreeMap<usize, TaskId>,
    /// Task by pid (`bpf_task_from_pid`).
    by_pid: BTreeMap<i32, TaskId>,
    tasks: Vec<Option<Box<CTask>>>,
    maps: BTreeMap<usize, Map>,
    /// The scheduler's map definitions, by address.
    map_syms: BTreeMap<usize, MapSym>,
    /// DSQ iterations in progress, by the iterator's address.
    iters: BTreeMap<usize, DsqIter>,
    idle_mask: Box<CpuMaskC>,
    smt_mask: Box<CpuMaskC>,
    possible: Box<CpuMaskC>,
    nr_cpus: usize,
    rng: u64,
}

/// The context of the callback running on this thread.
struct Current {
    kf: *mut Kf<'static, 'static>,
    rt: *mut Runtime,
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// A loaded C scheduler.
pub struct CScx {
    /// The shim's root `struct cgroup`.
    root_cgroup: *mut c_void,
    /// Globals the C schedulers' loaders set to the CPUs they find
    /// (`libbpf_num_possible_cpus()`: scx_central.c's `nr_cpu_ids`, scx_flatcg.c's and
    /// scx_nest.c's `nr_cpus`) that `set=` left alone: (name, size), filled at init.
    loader_cpus: Vec<(String, u64)>,
    _lib: libloading::Library,
    ops: *const SchedExtOps,
    rt: Box<Runtime>,
    name: String,
}

// SAFETY: the library and its globals belong to this one run and are used only from the
// thread that runs it; the class moves between threads only between runs.
unsafe impl Send for CScx {}

static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Load the scheduler `spec` names.
pub fn load(spec: &Spec) -> Result<CScx, String> {
    let so = build(spec)?;
    // A private copy: this run's globals and maps are its own.
    let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy = std::env::temp_dir().join(format!("schedlab-scx-{}-{n}.so", std::process::id()));
    std::fs::copy(&so, &copy).map_err(|e| format!("cannot copy {}: {e}", so.display()))?;
    let bytes = std::fs::read(&so).map_err(|e| format!("cannot read {}: {e}", so.display()))?;
    let symbols = find_symbols(&bytes)?;
    // SAFETY: loading a scheduler schedlab built (or the user named) runs its
    // initialisers; it is ordinary native code by design.
    let lib = unsafe {
        libloading::os::unix::Library::open(Some(&copy), libc::RTLD_NOW | libc::RTLD_LOCAL)
    }
    .map_err(|e| format!("cannot load {}: {e}", so.display()))?;
    let _ = std::fs::remove_file(&copy);
    let lib: libloading::Library = lib.into();
    let ops_name = symbols.ops.clone().ok_or_else(|| {
        format!(
            "{}: no struct sched_ext_ops in section .struct_ops.link (SCX_OPS_DEFINE)",
            so.display()
        )
    })?;
    // SAFETY: the symbols are data objects of the types the headers declare.
    let (ops, table) = unsafe {
        let ops: libloading::Symbol<*const SchedExtOps> = lib
            .get(ops_name.as_bytes())
            .map_err(|e| format!("{ops_name}: {e}"))?;
        let table: libloading::Symbol<*mut KfTable> = lib
            .get(b"schedlab_kf")
            .map_err(|e| format!("{}: not built with schedlab's shim: {e}", so.display()))?;
        (*ops, *table)
    };
    // SAFETY: the table is the shim's global of this layout.
    unsafe { table.write(KF_TABLE) };
    let map_syms = map_syms(&symbols, table as usize)?;
    // Newer scx headers read the kernel's enums from `__SCX_<NAME>` globals the loader
    // fills from BTF (enums.autogen.bpf.h): fill the ones the 6.12 ABI defines.
    for (name, size) in &symbols.data {
        let Some(v) = name.strip_prefix("__SCX_").and_then(scx_enum) else {
            continue;
        };
        // SAFETY: as for `set=` below: a global of `size` bytes.
        unsafe { write_global(&lib, name, *size, v)? };
    }
    for (name, value) in &spec.set {
        let (_, size) = symbols
            .data
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| format!("set={name}: the scheduler has no global '{name}'"))?;
        let v: u64 = match value.as_str() {
            "true" | "on" => 1,
            "false" | "off" => 0,
            v => v.parse().map_err(|_| {
                format!("set={name}={v}: not an integer (accepted: integers, true|false)")
            })?,
        };
        // SAFETY: the symbol is a global of `size` bytes.
        unsafe { write_global(&lib, name, *size, v)? };
    }
    let loader_cpus = symbols
        .data
        .iter()
        .filter(|(n, _)| {
            matches!(n.as_str(), "nr_cpu_ids" | "nr_cpus") && !spec.set.iter().any(|(s, _)| s == n)
        })
        .cloned()
        .collect();
    // SAFETY: ops points at the scheduler's struct sched_ext_ops.
    let name = unsafe { CStr::from_ptr((*ops).name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: the shim's global of that name.
    let root_cgroup = unsafe {
        *lib.get::<*mut c_void>(b"schedlab_root_cgrp")
            .map_err(|e| format!("{}: not built with schedlab's shim: {e}", so.display()))?
    };
    Ok(CScx {
        root_cgroup,
        loader_cpus,
        _lib: lib,
        ops,
        rt: Box::new(Runtime {
            timers: BTreeMap::new(),
            by_mask: BTreeMap::new(),
            by_pid: BTreeMap::new(),
            tasks: Vec::new(),
            maps: BTreeMap::new(),
            map_syms,
            iters: BTreeMap::new(),
            idle_mask: Box::new(CpuMaskC {
                bits: [0; MASK_WORDS],
            }),
            smt_mask: Box::new(CpuMaskC {
                bits: [0; MASK_WORDS],
            }),
            possible: Box::new(CpuMaskC {
                bits: [0; MASK_WORDS],
            }),
            nr_cpus: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
        }),
        name: if name.is_empty() { "scx".into() } else { name },
    })
}

/// The scheduler's maps by their address in this run's copy, their definitions read from
/// its BTF (the object's `schedlab_kf` gives the load base).
fn map_syms(symbols: &Symbols, kf_table: usize) -> Result<BTreeMap<usize, MapSym>, String> {
    if symbols.maps.is_empty() {
        return Ok(BTreeMap::new());
    }
    let raw = symbols.btf.as_deref().ok_or(
        "the compiler wrote no BTF for the scheduler's maps (accepted: gcc 12 or later, which writes it with -gbtf; set CC=gcc)",
    )?;
    let btf = btf::Btf::parse(raw)?;
    let base = kf_table
        - symbols
            .kf_table
            .ok_or("no schedlab_kf: not built with schedlab's shim")? as usize;
    let mut out = BTreeMap::new();
    for (name, addr, size) in &symbols.maps {
        let def = btf.map_def(name)?;
        if !modelled(def.kind) {
            return Err(format!(
                "map '{name}': BPF map type {} is not modelled (accepted: hash, array, per-CPU array and hash, LRU hash, array and hash of maps, queue, stack, task storage)",
                def.kind
            ));
        }
        out.insert(
            base + *addr as usize,
            MapSym {
                def,
                size: *size as usize,
            },
        );
    }
    Ok(out)
}

/// Write `v` into the scheduler's global `name` of `size` bytes, its page made writable
/// first (a `const volatile` knob may sit in .rodata: the BPF loader writes it before the
/// program runs).
///
/// # Safety
/// `name` must be a data object of `size` bytes in `lib`.
unsafe fn write_global(
    lib: &libloading::Library,
    name: &str,
    size: u64,
    v: u64,
) -> Result<(), String> {
    let p: libloading::Symbol<*mut u8> = lib
        .get(name.as_bytes())
        .map_err(|e| format!("{name}: {e}"))?;
    let addr = *p;
    let page = (addr as usize) & !4095;
    libc::mprotect(
        page as *mut c_void,
        8192,
        libc::PROT_READ | libc::PROT_WRITE,
    );
    match size {
        1 => addr.write(v as u8),
        2 => (addr as *mut u16).write_unaligned(v as u16),
        4 => (addr as *mut u32).write_unaligned(v as u32),
        _ => (addr as *mut u64).write_unaligned(v),
    }
    Ok(())
}

/// The 6.12 value of the sched_ext enum constant `SCX_<name>`, for the globals newer
/// headers read them from.
fn scx_enum(name: &str) -> Option<u64> {
    use super::ops::consts::*;
    Some(match name {
        "OPS_NAME_LEN" => 128,
        "SLICE_DFL" => SCX_SLICE_DFL,
        "SLICE_INF" => SCX_SLICE_INF,
        "DSQ_FLAG_BUILTIN" => SCX_DSQ_FLAG_BUILTIN,
        "DSQ_FLAG_LOCAL_ON" => SCX_DSQ_FLAG_LOCAL_ON,
        "DSQ_INVALID" => SCX_DSQ_INVALID,
        "DSQ_GLOBAL" => SCX_DSQ_GLOBAL,
        "DSQ_LOCAL" => SCX_DSQ_LOCAL,
        "DSQ_LOCAL_ON" => SCX_DSQ_LOCAL_ON,
        "DSQ_LOCAL_CPU_MASK" => SCX_DSQ_LOCAL_CPU_MASK,
        "ENQ_WAKEUP" => SCX_ENQ_WAKEUP,
        "ENQ_HEAD" => SCX_ENQ_HEAD,
        "ENQ_PREEMPT" => SCX_ENQ_PREEMPT,
        "ENQ_REENQ" => SCX_ENQ_REENQ,
        "ENQ_LAST" => SCX_ENQ_LAST,
        "ENQ_CLEAR_OPSS" => 1 << 56,
        "ENQ_DSQ_PRIQ" => SCX_ENQ_DSQ_PRIQ,
        "KICK_IDLE" => SCX_KICK_IDLE,
        "KICK_PREEMPT" => SCX_KICK_PREEMPT,
        "KICK_WAIT" => SCX_KICK_WAIT,
        "TASK_QUEUED" => 1,
        "TASK_RESET_RUNNABLE_AT" => 1 << 2,
        "TASK_DEQD_FOR_SLEEP" => 1 << 3,
        "TASK_STATE_SHIFT" => 8,
        "TASK_STATE_BITS" => 2,
        "TASK_STATE_MASK" => 3 << 8,
        "TASK_CURSOR" => 1 << 31,
        "TASK_NONE" => 0,
        "TASK_INIT" => 1,
        "TASK_READY" => 2,
        "TASK_ENABLED" => 3,
        "TASK_NR_STATES" => 4,
        "TASK_DSQ_ON_PRIQ" => 1,
        _ => return None,
    })
}

struct Symbols {
    ops: Option<String>,
    data: Vec<(String, u64)>,
    /// The globals in `.maps`: (name, address in the object, size).
    maps: Vec<(String, u64, u64)>,
    /// `schedlab_kf`'s address in the object (to find the load base).
    kf_table: Option<u64>,
    /// The `.BTF` section.
    btf: Option<Vec<u8>>,
}

/// The ops struct (the object in `.struct_ops.link` or `.struct_ops`) and the global
/// data objects with their sizes, the maps and the BTF.
fn find_symbols(bytes: &[u8]) -> Result<Symbols, String> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    let f = object::File::parse(bytes).map_err(|e| format!("not a shared object: {e}"))?;
    let mut ops = None;
    let (mut data, mut maps, mut kf_table) = (Vec::new(), Vec::new(), None);
    for s in f.symbols() {
        if s.kind() != SymbolKind::Data {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        let section = s
            .section_index()
            .and_then(|i| f.section_by_index(i).ok())
            .and_then(|sec| sec.name().ok().map(str::to_string))
            .unwrap_or_default();
        if section == ".struct_ops.link" || section == ".struct_ops" {
            ops = Some(name.to_string());
        }
        if section == ".maps" && !maps.iter().any(|(n, _, _)| n == name) {
            maps.push((name.to_string(), s.address(), s.size()));
        }
        if name == "schedlab_kf" {
            kf_table = Some(s.address());
        }
        data.push((name.to_string(), s.size()));
    }
    let btf = f
        .section_by_name(".BTF")
        .and_then(|sec| sec.data().ok())
        .map(<[u8]>::to_vec);
    Ok(Symbols {
        ops,
        data,
        maps,
        kf_table,
        btf,
    })
}

/// Run `f` with the current callback's context; outside a callback, nothing happens.
fn with<R: Default>(f: impl FnOnce(&mut Kf<'static, 'static>, &mut Runtime) -> R) -> R {
    CURRENT.with(|c| {
        let Some(cur) = c.take() else {
            return R::default();
        };
        let (kf, rt) = (cur.kf, cur.rt);
        c.set(Some(cur));
        // SAFETY: both pointers are live for the whole callback that set them (see
        // `CScx::enter`), and the scheduler runs on this thread only.
        unsafe { f(&mut *kf, &mut *rt) }
    })
}

fn id_of(p: TaskP) -> Option<TaskId> {
    // SAFETY: a task pointer the scheduler got from schedlab.
    (!p.is_null()).then(|| unsafe { (*p).schedlab_id })
}

impl Runtime {
    /// The C task of `p`, with the kernel's current values.
    fn task(&mut self, k: &Kf<'_, '_>, p: TaskId) -> TaskP {
        let i = p as usize;
        if self.tasks.len() <= i {
            self.tasks.resize_with(i + 1, || None);
        }
        let t = self.tasks[i].get_or_insert_with(|| {
            let mut mask = CpuMaskC {
                bits: [0; MASK_WORDS],
            };
            for c in 0..k.nr_cpus() {
                if k.allowed(p, c) {
                    mask.bits[c / 64] |= 1 << (c % 64);
                }
            }
            let mut t = Box::new(CTask {
                state: 0,
                pid: k.pid(p) as i32,
                tgid: k.pid(p) as i32,
                flags: 0,
                prio: 120,
                static_prio: 120,
                normal_prio: 120,
                nr_cpus_allowed: mask.bits.iter().map(|w| w.count_ones() as i32).sum(),
                migration_disabled: 0,
                comm: [0; 16],
                cpus_ptr: std::ptr::null(),
                cpus_mask: mask,
                se: SchedEntity {
                    exec_start: 0,
                    sum_exec_runtime: 0,
                    vruntime: 0,
                },
                scx: SchedExtEntity {
                    dsq: std::ptr::null_mut(),
                    dsq_seq: 0,
                    weight: 100,
                    sticky_cpu: -1,
                    holding_cpu: -1,
                    ops_state: 0,
                    runnable_at: 0,
                    ddsp_dsq_id: super::ops::consts::SCX_DSQ_INVALID,
                    ddsp_enq_flags: 0,
                    slice: 0,
                    dsq_vtime: 0,
                    flags: 0,
                    disallow: false,
                },
                schedlab_id: p,
            });
            t.cpus_ptr = &t.cpus_mask;
            t
        });
        self.by_mask.insert(t.cpus_ptr as usize, p);
        self.by_pid.insert(t.pid, p);
        t.scx.slice = k.slice(p);
        t.scx.dsq_vtime = k.dsq_vtime(p);
        t.scx.weight = k.weight(p);
        &mut **t
    }

    /// After a callback: the fields the scheduler wrote go back to the kernel.
    fn sync_back(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        if let Some(Some(t)) = self.tasks.get(p as usize) {
            let (slice, vtime) = (t.scx.slice, t.scx.dsq_vtime);
            k.set_slice(p, slice);
            k.set_dsq_vtime(p, vtime);
        }
    }

    /// A kfunc changed `p`'s fields: the C copy follows.
    fn refresh(&mut self, k: &Kf<'_, '_>, p: TaskId) {
        if let Some(Some(t)) = self.tasks.get_mut(p as usize) {
            t.scx.slice = k.slice(p);
            t.scx.dsq_vtime = k.dsq_vtime(p);
        }
    }
}

unsafe extern "C" fn kf_ktime() -> u64 {
    with(|k, _| k.now())
}

unsafe extern "C" fn kf_cpu() -> u32 {
    with(|k, _| k.cpu() as u32)
}

unsafe extern "C" fn kf_prandom() -> u32 {
    with(|_, rt| {
        // splitmix64 over the run's own state: deterministic per run.
        rt.rng = rt.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rt.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32
    })
}

unsafe extern "C" fn kf_create_dsq(id: u64, _node: i32) -> i32 {
    with(|k, _| k.create_dsq(id))
}

unsafe extern "C" fn kf_select_cpu_dfl(
    p: TaskP,
    prev: i32,
    wake_flags: u64,
    is_idle: *mut bool,
) -> i32 {
    let Some(id) = id_of(p) else { return prev };
    let (cpu, idle) = with(|k, _| k.select_cpu_dfl(id, prev, wake_flags));
    if !is_idle.is_null() {
        // SAFETY: the caller's bool.
        unsafe { *is_idle = idle };
    }
    cpu
}

unsafe extern "C" fn kf_dispatch(
    p: TaskP,
    dsq: u64,
    slice: u64,
    vtime: u64,
    flags: u64,
    vtime_set: i32,
) {
    let Some(id) = id_of(p) else { return };
    with(|k, rt| {
        if vtime_set != 0 {
            k.dispatch_vtime(id, dsq, slice, vtime, flags);
        } else {
            k.dispatch(id, dsq, slice, flags);
        }
        rt.refresh(k, id);
    })
}

unsafe extern "C" fn kf_dispatch_nr_slots() -> u32 {
    with(|k, _| k.dispatch_nr_slots())
}

unsafe extern "C" fn kf_dispatch_cancel() {
    with(|k, _| k.dispatch_cancel())
}

unsafe extern "C" fn kf_consume(dsq: u64) -> bool {
    with(|k, _| k.consume(dsq))
}

unsafe extern "C" fn kf_kick_cpu(cpu: i32, flags: u64) {
    with(|k, _| k.kick_cpu(cpu, flags))
}

unsafe extern "C" fn kf_dsq_nr_queued(dsq: u64) -> i32 {
    with(|k, _| k.dsq_nr_queued(dsq))
}

unsafe extern "C" fn kf_destroy_dsq(dsq: u64) {
    with(|k, _| k.destroy_dsq(dsq))
}

unsafe extern "C" fn kf_error(msg: *const c_char, code: i64, is_exit: i32) {
    // SAFETY: the shim passes a NUL-terminated buffer.
    let text = unsafe { CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned();
    with(|k, _| {
        if is_exit != 0 {
            k.error(format!("exit {code}: {text}"));
        } else {
            k.error(text);
        }
    })
}

unsafe extern "C" fn kf_test_and_clear_cpu_idle(cpu: i32) -> bool {
    with(|k, _| k.test_and_clear_cpu_idle(cpu))
}

unsafe extern "C" fn kf_pick_idle_cpu(allowed: *const CpuMaskC, flags: u64, any: i32) -> i32 {
    with(|k, rt| {
        // The mask given is nearly always a task's own (`p->cpus_ptr`).
        match rt.by_mask.get(&(allowed as usize)).copied() {
            Some(p) if any != 0 => k.pick_any_cpu(p, flags),
            Some(p) => k.pick_idle_cpu(p, flags),
            None if allowed.is_null() => -22,
            None => {
                // A mask of the scheduler's own: the first idle CPU in it.
                // SAFETY: a cpumask the scheduler passed.
                let m = unsafe { &*allowed };
                (0..k.nr_cpus())
                    .find(|&c| {
                        m.bits[c / 64] >> (c % 64) & 1 == 1 && k.test_and_clear_cpu_idle(c as i32)
                    })
                    .map_or(if any != 0 { 0 } else { -16 }, |c| c as i32)
            }
        }
    })
}

unsafe extern "C" fn kf_task_running(p: TaskP) -> bool {
    let Some(id) = id_of(p) else { return false };
    with(|k, _| k.task_running(id))
}

unsafe extern "C" fn kf_task_cpu(p: TaskP) -> i32 {
    let Some(id) = id_of(p) else { return -1 };
    with(|k, _| k.task_cpu(id) as i32)
}

unsafe extern "C" fn kf_nr_cpu_ids() -> u32 {
    with(|k, _| k.nr_cpus() as u32)
}

unsafe extern "C" fn kf_idle_cpumask() -> *const CpuMaskC {
    with(|k, rt| {
        let mut m = CpuMaskC {
            bits: [0; MASK_WORDS],
        };
        for c in 0..k.nr_cpus() {
            if k.cpu_idle(c) {
                m.bits[c / 64] |= 1 << (c % 64);
            }
        }
        *rt.idle_mask = m;
        Ptr(&*rt.idle_mask as *const CpuMaskC as *mut c_void)
    })
    .0 as *const CpuMaskC
}

/// `scx_bpf_get_idle_smtmask`: CPUs of wholly idle cores (the idle mask without SMT).
unsafe extern "C" fn kf_idle_smtmask() -> *const CpuMaskC {
    with(|k, rt| {
        let mut m = CpuMaskC {
            bits: [0; MASK_WORDS],
        };
        for c in 0..k.nr_cpus() {
            if k.core_idle(c) {
                m.bits[c / 64] |= 1 << (c % 64);
            }
        }
        *rt.smt_mask = m;
        Ptr(&*rt.smt_mask as *const CpuMaskC as *mut c_void)
    })
    .0 as *const CpuMaskC
}

unsafe extern "C" fn kf_possible_cpumask() -> *const CpuMaskC {
    with(|k, rt| {
        for c in 0..k.nr_cpus() {
            rt.possible.bits[c / 64] |= 1 << (c % 64);
        }
        Ptr(&*rt.possible as *const CpuMaskC as *mut c_void)
    })
    .0 as *const CpuMaskC
}

unsafe extern "C" fn kf_task_from_pid(pid: i32) -> TaskP {
    with(|k, rt| match rt.by_pid.get(&pid).copied() {
        Some(p) => Ptr(rt.task(k, p) as *mut c_void),
        None => Ptr(std::ptr::null_mut()),
    })
    .0 as TaskP
}

unsafe extern "C" fn kf_reenqueue_local() -> u32 {
    0
}

unsafe extern "C" fn kf_timer_init(t: *mut c_void, map: *mut c_void, _flags: u64) -> i64 {
    with(|_, rt| {
        let timer = rt.timers.entry(t as usize).or_default();
        if timer.map != 0 {
            return -16; // -EBUSY: initialised already
        }
        timer.map = map as usize;
        0
    })
}

unsafe extern "C" fn kf_timer_set_callback(t: *mut c_void, cb: *mut c_void) -> i64 {
    with(|_, rt| match rt.timers.get_mut(&(t as usize)) {
        Some(timer) => {
            timer.cb = cb as usize;
            0
        }
        None => -22,
    })
}

unsafe extern "C" fn kf_timer_start(t: *mut c_void, nsecs: u64, flags: u64) -> i64 {
    with(|k, rt| {
        let (now, cpu) = (k.now(), k.cpu());
        match rt.timers.get_mut(&(t as usize)) {
            Some(timer) if timer.cb != 0 => {
                timer.expires = Some(if flags & 1 != 0 { nsecs } else { now + nsecs });
                timer.cpu = cpu;
                0
            }
            _ => -22,
        }
    })
}

/// `bpf_timer_cancel`: 1 if the timer was armed, 0 if not, −EINVAL if never initialised.
unsafe extern "C" fn kf_timer_cancel(t: *mut c_void) -> i64 {
    with(|_, rt| match rt.timers.get_mut(&(t as usize)) {
        Some(timer) => i64::from(timer.expires.take().is_some()),
        None => -22,
    })
}

/// `bpf_iter_scx_dsq_new`: 0, −EINVAL for unknown flags, −ENOENT for a DSQ that is not
/// a user DSQ (next() then yields nothing).
unsafe extern "C" fn kf_iter_dsq_new(it: *mut DsqIterC, dsq: u64, flags: u64) -> i32 {
    // SAFETY: the scheduler's iterator, on its stack.
    let words = unsafe { &mut (*it).opaque };
    *words = [0; 6];
    with(|k, rt| {
        rt.iters.remove(&(it as usize));
        if flags & !SCX_DSQ_ITER_REV != 0 {
            return -22;
        }
        let Some((seq, tasks)) = k.dsq_iter_new(dsq, flags & SCX_DSQ_ITER_REV != 0) else {
            return -2;
        };
        words[1] = flags;
        rt.iters.insert(
            it as usize,
            DsqIter {
                dsq,
                seq,
                tasks,
                next: 0,
            },
        );
        0
    })
}

/// `bpf_iter_scx_dsq_next`: the next task still on the DSQ since the walk began.
unsafe extern "C" fn kf_iter_dsq_next(it: *mut DsqIterC) -> TaskP {
    with(|k, rt| {
        let Some(iter) = rt.iters.get_mut(&(it as usize)) else {
            return Ptr(std::ptr::null_mut());
        };
        while let Some(&p) = iter.tasks.get(iter.next) {
            iter.next += 1;
            let (dsq, seq) = (iter.dsq, iter.seq);
            if k.dsq_iter_visible(p, dsq, seq) {
                return Ptr(rt.task(k, p) as *mut c_void);
            }
        }
        Ptr(std::ptr::null_mut())
    })
    .0 as TaskP
}

unsafe extern "C" fn kf_iter_dsq_destroy(it: *mut DsqIterC) {
    with(|_, rt| {
        rt.iters.remove(&(it as usize));
    })
}

/// `scx_bpf_dispatch_from_dsq`: the slice and vtime set on the iterator apply to this
/// move only.
unsafe extern "C" fn kf_dispatch_from_dsq(
    it: *mut DsqIterC,
    p: TaskP,
    dst: u64,
    enq_flags: u64,
) -> bool {
    let Some(id) = id_of(p) else { return false };
    // SAFETY: the scheduler's iterator.
    let words = unsafe { &mut (*it).opaque };
    let slice = (words[1] & SCX_DSQ_ITER_HAS_SLICE != 0).then_some(words[2]);
    let vtime = (words[1] & SCX_DSQ_ITER_HAS_VTIME != 0).then_some(words[3]);
    words[1] &= !(SCX_DSQ_ITER_HAS_SLICE | SCX_DSQ_ITER_HAS_VTIME);
    with(|k, rt| {
        let Some(iter) = rt.iters.get(&(it as usize)) else {
            return false;
        };
        let (src, seq) = (iter.dsq, iter.seq);
        let moved = k.dispatch_from_dsq(src, seq, id, dst, enq_flags, slice, vtime);
        rt.refresh(k, id);
        moved
    })
}

/// `scx_bpf_events`: a prev task kept (`SCX_EV_DISPATCH_KEEP_LAST`) and the bypass
/// counters are the model's; it has no offline CPUs, exiting-task or migration-disabled
/// skips, or default-slice refills to count.
unsafe extern "C" fn kf_events(out: *mut ScxEventStats) {
    let (keep_last, bypassing) = with(|k, _| k.event_counts());
    // SAFETY: the shim's zeroed struct.
    let e = unsafe { &mut *out };
    e.dispatch_keep_last = keep_last as i64;
    e.bypass_activate = i64::from(bypassing);
}

/// A raw pointer with a default (null), for [`with`].
struct Ptr(*mut c_void);
impl Default for Ptr {
    fn default() -> Self {
        Ptr(std::ptr::null_mut())
    }
}

const KF_TABLE: KfTable = KfTable {
    map_lookup: kf_map_lookup,
    map_lookup_percpu: kf_map_lookup_percpu,
    map_update: kf_map_update,
    map_delete: kf_map_delete,
    map_push: kf_map_push,
    map_pop: kf_map_pop,
    task_storage_get: kf_task_storage_get,
    task_storage_delete: kf_task_storage_delete,
    cgrp_storage_get: kf_cgrp_storage_get,
    cgrp_storage_delete: kf_cgrp_storage_delete,
    ktime: kf_ktime,
    cpu: kf_cpu,
    prandom: kf_prandom,
    create_dsq: kf_create_dsq,
    select_cpu_dfl: kf_select_cpu_dfl,
    dispatch: kf_dispatch,
    dispatch_nr_slots: kf_dispatch_nr_slots,
    dispatch_cancel: kf_dispatch_cancel,
    consume: kf_consume,
    kick_cpu: kf_kick_cpu,
    dsq_nr_queued: kf_dsq_nr_queued,
    destroy_dsq: kf_destroy_dsq,
    error: kf_error,
    test_and_clear_cpu_idle: kf_test_and_clear_cpu_idle,
    pick_idle_cpu: kf_pick_idle_cpu,
    task_running: kf_task_running,
    task_cpu: kf_task_cpu,
    nr_cpu_ids: kf_nr_cpu_ids,
    idle_cpumask: kf_idle_cpumask,
    idle_smtmask: kf_idle_smtmask,
    possible_cpumask: kf_possible_cpumask,
    task_from_pid: kf_task_from_pid,
    reenqueue_local: kf_reenqueue_local,
    timer_init: kf_timer_init,
    timer_set_callback: kf_timer_set_callback,
    timer_start: kf_timer_start,
    timer_cancel: kf_timer_cancel,
    iter_dsq_new: kf_iter_dsq_new,
    iter_dsq_next: kf_iter_dsq_next,
    iter_dsq_destroy: kf_iter_dsq_destroy,
    dispatch_from_dsq: kf_dispatch_from_dsq,
    events: kf_events,
};

impl CScx {
    /// Run `f` (the C call) as a callback: the context published, the tasks it names
    /// synced in, and back after.
    fn enter<R>(
        &mut self,
        k: &mut Kf<'_, '_>,
        tasks: &[TaskId],
        f: impl FnOnce(&[TaskP]) -> R,
    ) -> R {
        self.rt.nr_cpus = k.nr_cpus();
        let ptrs: Vec<TaskP> = tasks.iter().map(|&p| self.rt.task(k, p)).collect();
        let cur = Current {
            // SAFETY: the lifetimes are erased only for the duration of this call; the
            // context is taken down before `k` goes out of scope.
            kf: (k as *mut Kf<'_, '_>).cast::<Kf<'static, 'static>>(),
            rt: &mut *self.rt,
        };
        let prev = CURRENT.with(|c| c.replace(Some(cur)));
        let r = f(&ptrs);
        CURRENT.with(|c| c.set(prev));
        for &p in tasks {
            self.rt.sync_back(k, p);
        }
        r
    }

    /// A `void op(struct task_struct *p)` callback, if the scheduler has it.
    fn task_op(&mut self, k: &mut Kf<'_, '_>, op: Option<unsafe extern "C" fn(TaskP)>, p: TaskId) {
        if let Some(f) = op {
            // SAFETY: the scheduler's callback, with the context set.
            self.enter(k, &[p], |t| unsafe { f(t[0]) });
        }
    }

    /// A `void op(struct task_struct *p, u64 flags)` callback, if the scheduler has it.
    fn task_flags_op(
        &mut self,
        k: &mut Kf<'_, '_>,
        op: Option<unsafe extern "C" fn(TaskP, u64)>,
        p: TaskId,
        flags: u64,
    ) {
        if let Some(f) = op {
            // SAFETY: the scheduler's callback, with the context set.
            self.enter(k, &[p], |t| unsafe { f(t[0], flags) });
        }
    }

    fn ops(&self) -> &SchedExtOps {
        // SAFETY: the ops struct lives as long as the library.
        unsafe { &*self.ops }
    }
}

impl ScxOps for CScx {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn has(&self) -> Has {
        let o = self.ops();
        Has {
            select_cpu: o.select_cpu.is_some(),
            enqueue: o.enqueue.is_some(),
            dequeue: o.dequeue.is_some(),
            dispatch: o.dispatch.is_some(),
            tick: o.tick.is_some(),
            runnable: o.runnable.is_some(),
            running: o.running.is_some(),
            stopping: o.stopping.is_some(),
            quiescent: o.quiescent.is_some(),
            yield_: o.yield_.is_some(),
            update_idle: o.update_idle.is_some(),
        }
    }

    fn flags(&self) -> u64 {
        self.ops().flags
    }

    fn dispatch_max_batch(&self) -> usize {
        self.ops().dispatch_max_batch as usize
    }

    fn timeout_ms(&self) -> u64 {
        self.ops().timeout_ms as u64
    }

    fn init(&mut self, k: &mut Kf<'_, '_>) -> i32 {
        let cpus = k.nr_cpus() as u64;
        for (name, size) in &self.loader_cpus {
            // SAFETY: a global of `size` bytes in the scheduler's library, found by load.
            if let Err(e) = unsafe { write_global(&self._lib, name, *size, cpus) } {
                k.error(e);
                return -22;
            }
        }
        match self.ops().init {
            // SAFETY: the scheduler's callback, with the context set.
            Some(f) => self.enter(k, &[], |_| unsafe { f() }),
            None => 0,
        }
    }

    fn exit(&mut self, k: &mut Kf<'_, '_>, kind: i64, reason: &str) {
        let Some(f) = self.ops().exit else { return };
        let reason_c = std::ffi::CString::new(reason.replace('\0', " ")).unwrap_or_default();
        let mut msg = vec![0 as c_char; 1024];
        let mut dump = vec![0 as c_char; 1];
        let mut info = ExitInfo {
            kind: kind as i32,
            exit_code: 0,
            reason: reason_c.as_ptr(),
            bt: std::ptr::null_mut(),
            bt_len: 0,
            msg: msg.as_mut_ptr(),
            dump: dump.as_mut_ptr(),
        };
        // SAFETY: the scheduler's callback with a valid exit info.
        self.enter(k, &[], |_| unsafe { f(&mut info) });
    }

    fn cgroup_init(&mut self, k: &mut Kf<'_, '_>) -> i32 {
        let Some(f) = self.ops().cgroup_init else {
            return 0;
        };
        let (root, mut args) = (self.root_cgroup, CgroupInitArgs { weight: 100 });
        // SAFETY: the scheduler's callback, with the shim's root cgroup.
        self.enter(k, &[], |_| unsafe { f(root, &mut args) })
    }

    fn init_task(&mut self, k: &mut Kf<'_, '_>, p: TaskId, fork: bool) -> i32 {
        let Some(f) = self.ops().init_task else {
            return 0;
        };
        let mut args = InitTaskArgs {
            fork,
            cgroup: self.root_cgroup,
        };
        // SAFETY: the scheduler's callback.
        self.enter(k, &[p], |t| unsafe { f(t[0], &mut args) })
    }

    fn exit_task(&mut self, k: &mut Kf<'_, '_>, p: TaskId, cancelled: bool) {
        if let Some(f) = self.ops().exit_task {
            let mut args = ExitTaskArgs { cancelled };
            // SAFETY: the scheduler's callback.
            self.enter(k, &[p], |t| unsafe { f(t[0], &mut args) });
        }
        if let Some(t) = self.rt.tasks.get_mut(p as usize).and_then(Option::take) {
            self.rt.by_mask.remove(&(t.cpus_ptr as usize));
            self.rt.by_pid.remove(&t.pid);
        }
    }

    fn enable(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let op = self.ops().enable;
        self.task_op(k, op, p);
    }

    fn disable(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let op = self.ops().disable;
        self.task_op(k, op, p);
    }

    fn select_cpu(&mut self, k: &mut Kf<'_, '_>, p: TaskId, prev: CpuId, wake_flags: u64) -> i32 {
        match self.ops().select_cpu {
            // SAFETY: the scheduler's callback.
            Some(f) => self.enter(k, &[p], |t| unsafe { f(t[0], prev as i32, wake_flags) }),
            None => prev as i32,
        }
    }

    fn enqueue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        let op = self.ops().enqueue;
        self.task_flags_op(k, op, p, enq_flags);
    }

    fn dequeue(&mut self, k: &mut Kf<'_, '_>, p: TaskId, deq_flags: u64) {
        let op = self.ops().dequeue;
        self.task_flags_op(k, op, p, deq_flags);
    }

    fn dispatch(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId, prev: Option<TaskId>) {
        let Some(f) = self.ops().dispatch else { return };
        let tasks: Vec<TaskId> = prev.into_iter().collect();
        // SAFETY: the scheduler's callback.
        self.enter(k, &tasks, |t| unsafe {
            f(
                cpu as i32,
                t.first().copied().unwrap_or(std::ptr::null_mut()),
            )
        });
    }

    fn tick(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let op = self.ops().tick;
        self.task_op(k, op, p);
    }

    fn runnable(&mut self, k: &mut Kf<'_, '_>, p: TaskId, enq_flags: u64) {
        let op = self.ops().runnable;
        self.task_flags_op(k, op, p, enq_flags);
    }

    fn running(&mut self, k: &mut Kf<'_, '_>, p: TaskId) {
        let op = self.ops().running;
        self.task_op(k, op, p);
    }

    fn stopping(&mut self, k: &mut Kf<'_, '_>, p: TaskId, runnable: bool) {
        if let Some(f) = self.ops().stopping {
            // SAFETY: the scheduler's callback.
            self.enter(k, &[p], |t| unsafe { f(t[0], runnable) });
        }
    }

    fn quiescent(&mut self, k: &mut Kf<'_, '_>, p: TaskId, deq_flags: u64) {
        let op = self.ops().quiescent;
        self.task_flags_op(k, op, p, deq_flags);
    }

    fn yield_(&mut self, k: &mut Kf<'_, '_>, p: TaskId) -> bool {
        match self.ops().yield_ {
            // SAFETY: the scheduler's callback.
            Some(f) => self.enter(k, &[p], |t| unsafe { f(t[0], std::ptr::null_mut()) }),
            None => false,
        }
    }

    fn update_idle(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId, idle: bool) {
        if let Some(f) = self.ops().update_idle {
            // SAFETY: the scheduler's callback.
            self.enter(k, &[], |_| unsafe { f(cpu as i32, idle) });
        }
    }

    fn timers(&mut self, k: &mut Kf<'_, '_>, cpu: CpuId) {
        let now = k.now();
        let mut due: Vec<(u64, usize)> = self
            .rt
            .timers
            .iter()
            .filter(|(_, t)| t.cpu == cpu && t.expires.is_some_and(|e| e <= now))
            .map(|(&a, t)| (t.expires.unwrap_or(0), a))
            .collect();
        due.sort_unstable();
        for (_, addr) in due {
            let t = self.rt.timers.get_mut(&addr).expect("a due timer");
            t.expires = None;
            let (map, cb) = (t.map, t.cb);
            let Some((mut key, value)) = self.rt.element_of(addr) else {
                continue;
            };
            // SAFETY: the callback the scheduler set, `int cb(void *map, void *key,
            // void *value)`, with its map, the element's key and the element.
            let f: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> i32 =
                unsafe { std::mem::transmute(cb) };
            self.enter(k, &[], |_| unsafe {
                f(
                    map as *mut c_void,
                    key.as_mut_ptr() as *mut c_void,
                    value as *mut c_void,
                )
            });
        }
    }
}
