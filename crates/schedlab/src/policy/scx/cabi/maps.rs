//! BPF maps: each lives here, keyed by the address of its definition in the scheduler's
//! data, created at load from its BTF definition ([`super::btf`]); the helpers find a
//! map by that address, whatever type the C code holds it as.

use std::collections::BTreeMap;
use std::ffi::c_void;

use super::{id_of, with, Ptr, Runtime, TaskP};

/// A map's storage.
enum MapData {
    /// ARRAY (one copy) or PERCPU_ARRAY (one per CPU): values of `vs` bytes.
    Array(Vec<Vec<u64>>),
    /// HASH and its kinds.
    Hash(BTreeMap<Vec<u8>, Box<[u64]>>),
    /// QUEUE (FIFO) or STACK.
    Queue(std::collections::VecDeque<Box<[u64]>>),
    /// TASK_STORAGE: per task id.
    Task(BTreeMap<u32, Box<[u64]>>),
}

pub(super) struct Map {
    kind: u32,
    vs: usize,
    max: usize,
    data: MapData,
}

const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_MAP_TYPE_QUEUE: u32 = 22;
const BPF_MAP_TYPE_STACK: u32 = 23;
const BPF_MAP_TYPE_TASK_STORAGE: u32 = 29;
const BPF_NOEXIST: u64 = 1;
const BPF_EXIST: u64 = 2;

fn words(bytes: usize) -> usize {
    bytes.div_ceil(8).max(1)
}

impl Runtime {
    /// The map element holding address `addr` (a timer in a map value): its key and
    /// the element's address.
    pub(super) fn element_of(&mut self, addr: usize) -> Option<(Vec<u8>, usize)> {
        for map in self.maps.values_mut() {
            let w = words(map.vs) * 8;
            match &mut map.data {
                MapData::Array(copies) => {
                    for copy in copies.iter_mut() {
                        let base = copy.as_mut_ptr() as usize;
                        if (base..base + copy.len() * 8).contains(&addr) {
                            let i = (addr - base) / w;
                            return Some(((i as u32).to_ne_bytes().to_vec(), base + i * w));
                        }
                    }
                }
                MapData::Hash(h) => {
                    for (k, v) in h.iter_mut() {
                        let base = v.as_mut_ptr() as usize;
                        if (base..base + v.len() * 8).contains(&addr) {
                            return Some((k.clone(), base));
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    pub(super) fn map(
        &mut self,
        m: *mut c_void,
        kind: u32,
        vs: u32,
        max: u32,
        nr_cpus: usize,
    ) -> &mut Map {
        self.maps.entry(m as usize).or_insert_with(|| {
            let (vs, max) = (vs as usize, max as usize);
            let data = match kind {
                BPF_MAP_TYPE_ARRAY => MapData::Array(vec![vec![0; words(vs) * max]]),
                BPF_MAP_TYPE_PERCPU_ARRAY => {
                    MapData::Array(vec![vec![0; words(vs) * max]; nr_cpus])
                }
                BPF_MAP_TYPE_QUEUE | BPF_MAP_TYPE_STACK => MapData::Queue(Default::default()),
                BPF_MAP_TYPE_TASK_STORAGE => MapData::Task(BTreeMap::new()),
                _ => MapData::Hash(BTreeMap::new()),
            };
            Map {
                kind,
                vs,
                max,
                data,
            }
        })
    }
}

unsafe fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    std::slice::from_raw_parts(p as *const u8, n)
}

pub(super) unsafe extern "C" fn kf_map_lookup(
    m: *mut c_void,
    key: *const c_void,
    ks: u32,
    kind: u32,
    vs: u32,
    max: u32,
) -> *mut c_void {
    with(|k, rt| {
        let (n, cpu) = (rt.nr_cpus, k.cpu());
        let map = rt.map(m, kind, vs, max, n);
        let w = words(map.vs);
        match &mut map.data {
            MapData::Array(copies) => {
                let i = unsafe { (key as *const u32).read_unaligned() } as usize;
                if i >= map.max {
                    return Ptr(std::ptr::null_mut());
                }
                let copy = if copies.len() > 1 {
                    &mut copies[cpu]
                } else {
                    &mut copies[0]
                };
                Ptr(copy[i * w..].as_mut_ptr() as *mut c_void)
            }
            MapData::Hash(h) => {
                let kb = unsafe { bytes(key, ks as usize) }.to_vec();
                Ptr(h
                    .get_mut(&kb)
                    .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr() as *mut c_void))
            }
            _ => Ptr(std::ptr::null_mut()),
        }
    })
    .0
}

pub(super) unsafe extern "C" fn kf_map_update(
    m: *mut c_void,
    key: *const c_void,
    value: *const c_void,
    flags: u64,
    ks: u32,
    kind: u32,
    vs: u32,
    max: u32,
) -> i64 {
    with(|k, rt| {
        let (n, cpu) = (rt.nr_cpus, k.cpu());
        let map = rt.map(m, kind, vs, max, n);
        let (vsz, w) = (map.vs, words(map.vs));
        let val = unsafe { bytes(value, vsz) };
        match &mut map.data {
            MapData::Array(copies) => {
                let i = unsafe { (key as *const u32).read_unaligned() } as usize;
                if i >= map.max {
                    return -7; // -E2BIG
                }
                if flags == BPF_NOEXIST {
                    return -17;
                }
                let copy = if copies.len() > 1 {
                    &mut copies[cpu]
                } else {
                    &mut copies[0]
                };
                let dst = &mut copy[i * w..(i + 1) * w];
                // SAFETY: dst holds w words ≥ vsz bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(val.as_ptr(), dst.as_mut_ptr() as *mut u8, vsz)
                };
                0
            }
            MapData::Hash(h) => {
                let kb = unsafe { bytes(key, ks as usize) }.to_vec();
                let exists = h.contains_key(&kb);
                if (flags == BPF_NOEXIST && exists) || (flags == BPF_EXIST && !exists) {
                    return if exists { -17 } else { -2 };
                }
                if !exists && h.len() >= map.max {
                    return -7;
                }
                let slot = h.entry(kb).or_insert_with(|| vec![0; w].into_boxed_slice());
                // SAFETY: the slot holds w words ≥ vsz bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(val.as_ptr(), slot.as_mut_ptr() as *mut u8, vsz)
                };
                0
            }
            _ => -22,
        }
    })
}

pub(super) unsafe extern "C" fn kf_map_delete(
    m: *mut c_void,
    key: *const c_void,
    ks: u32,
    kind: u32,
    vs: u32,
    max: u32,
) -> i64 {
    with(|_k, rt| {
        let n = rt.nr_cpus;
        let map = rt.map(m, kind, vs, max, n);
        match &mut map.data {
            MapData::Hash(h) => {
                let kb = unsafe { bytes(key, ks as usize) }.to_vec();
                if h.remove(&kb).is_some() {
                    0
                } else {
                    -2
                }
            }
            _ => -22,
        }
    })
}

pub(super) unsafe extern "C" fn kf_map_push(
    m: *mut c_void,
    value: *const c_void,
    _flags: u64,
    kind: u32,
    vs: u32,
    max: u32,
) -> i64 {
    with(|_k, rt| {
        let n = rt.nr_cpus;
        let map = rt.map(m, kind, vs, max, n);
        let (vsz, w, cap) = (map.vs, words(map.vs), map.max);
        match &mut map.data {
            MapData::Queue(q) => {
                if q.len() >= cap {
                    return -7;
                }
                let mut v = vec![0u64; w].into_boxed_slice();
                // SAFETY: v holds w words ≥ vsz bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        value as *const u8,
                        v.as_mut_ptr() as *mut u8,
                        vsz,
                    )
                };
                q.push_back(v);
                0
            }
            _ => -22,
        }
    })
}

pub(super) unsafe extern "C" fn kf_map_pop(
    m: *mut c_void,
    value: *mut c_void,
    peek: i32,
    kind: u32,
    vs: u32,
    max: u32,
) -> i64 {
    with(|_k, rt| {
        let n = rt.nr_cpus;
        let map = rt.map(m, kind, vs, max, n);
        let (vsz, stack) = (map.vs, map.kind == BPF_MAP_TYPE_STACK);
        match &mut map.data {
            MapData::Queue(q) => {
                let v = match (peek != 0, stack) {
                    (true, false) => q.front().cloned(),
                    (true, true) => q.back().cloned(),
                    (false, false) => q.pop_front(),
                    (false, true) => q.pop_back(),
                };
                let Some(v) = v else { return -2 };
                // SAFETY: value points at vsz writable bytes (the caller's).
                unsafe {
                    std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, value as *mut u8, vsz)
                };
                0
            }
            _ => -22,
        }
    })
}

pub(super) unsafe extern "C" fn kf_task_storage_get(
    m: *mut c_void,
    p: TaskP,
    value: *mut c_void,
    flags: u64,
    vs: u32,
) -> *mut c_void {
    let Some(id) = id_of(p) else {
        return std::ptr::null_mut();
    };
    with(|_k, rt| {
        let n = rt.nr_cpus;
        let map = rt.map(m, BPF_MAP_TYPE_TASK_STORAGE, vs, u32::MAX, n);
        let (vsz, w) = (map.vs, words(map.vs));
        let MapData::Task(t) = &mut map.data else {
            return Ptr(std::ptr::null_mut());
        };
        if let std::collections::btree_map::Entry::Vacant(e) = t.entry(id) {
            if flags & 1 == 0 {
                return Ptr(std::ptr::null_mut());
            }
            let mut v = vec![0u64; w].into_boxed_slice();
            if !value.is_null() {
                // SAFETY: value points at vsz bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        value as *const u8,
                        v.as_mut_ptr() as *mut u8,
                        vsz,
                    )
                };
            }
            e.insert(v);
        }
        Ptr(t
            .get_mut(&id)
            .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr() as *mut c_void))
    })
    .0
}

pub(super) unsafe extern "C" fn kf_task_storage_delete(m: *mut c_void, p: TaskP) -> i64 {
    let Some(id) = id_of(p) else { return -22 };
    with(
        |_k, rt| match rt.maps.get_mut(&(m as usize)).map(|m| &mut m.data) {
            Some(MapData::Task(t)) => t.remove(&id).map_or(-2, |_| 0),
            _ => -2,
        },
    )
}
