//! BPF maps: each lives here, keyed by the address of its definition in the scheduler's
//! data. The definitions come from the scheduler's BTF at load ([`super::btf`], as libbpf
//! reads them); a map's storage is made at its first use. The helpers find a map by its
//! address, whatever type the C code holds it as — an inner map looked up in an array of
//! maps arrives as a `void *`.
//!
//! Not modelled: per-CPU copies of PERCPU_HASH values (one shared copy), LRU eviction
//! (a full LRU hash refuses as a plain one does).

use std::collections::BTreeMap;
use std::ffi::c_void;

use super::btf::MapDef;
use super::{id_of, with, Ptr, Runtime, TaskP};

/// A map's storage.
enum MapData {
    /// ARRAY (one copy), PERCPU_ARRAY (one per CPU), ARRAY_OF_MAPS (inner maps'
    /// addresses): values of `value_size` bytes, each in whole words.
    Array(Vec<Vec<u64>>),
    /// HASH and its kinds; HASH_OF_MAPS.
    Hash(BTreeMap<Vec<u8>, Box<[u64]>>),
    /// QUEUE (FIFO) or STACK.
    Queue(std::collections::VecDeque<Box<[u64]>>),
    /// TASK_STORAGE (per task id) and CGRP_STORAGE (per cgroup id).
    Local(BTreeMap<u64, Box<[u64]>>),
}

/// A map the scheduler defined: where its definition sits, and what it says.
#[derive(Clone, Debug)]
pub(super) struct MapSym {
    pub def: MapDef,
    /// The definition's size in bytes, with the inner maps a map of maps starts with.
    pub size: usize,
}

pub(super) struct Map {
    kind: u32,
    ks: usize,
    vs: usize,
    max: usize,
    data: MapData,
}

const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_MAP_TYPE_ARRAY_OF_MAPS: u32 = 12;
const BPF_MAP_TYPE_HASH_OF_MAPS: u32 = 13;
const BPF_MAP_TYPE_QUEUE: u32 = 22;
const BPF_MAP_TYPE_STACK: u32 = 23;
const BPF_MAP_TYPE_TASK_STORAGE: u32 = 29;
const BPF_MAP_TYPE_CGRP_STORAGE: u32 = 32;
const BPF_NOEXIST: u64 = 1;
const BPF_EXIST: u64 = 2;

/// The map types the model keeps; the loader refuses the others.
pub(super) fn modelled(kind: u32) -> bool {
    matches!(kind, 1..=2 | 5..=6 | 9..=10 | 12..=13 | 22..=23 | 29 | 32)
}

fn words(bytes: usize) -> usize {
    bytes.div_ceil(8).max(1)
}

impl Map {
    /// The storage of the map defined at `addr`: a map of maps starts with the inner
    /// maps its definition's `values` names, at their indices (libbpf's
    /// `init_map_in_map_slots`).
    fn new(sym: &MapSym, addr: usize, nr_cpus: usize) -> Map {
        let d = &sym.def;
        let (vs, max) = (d.value_size as usize, d.max_entries as usize);
        let inner: Vec<u64> = match d.values_offset {
            Some(off) => {
                let n = (sym.size.saturating_sub(off as usize) / 8).min(max);
                // SAFETY: `values` lies inside the definition's `size` bytes.
                (0..n)
                    .map(|i| unsafe { ((addr + off as usize + 8 * i) as *const u64).read() })
                    .collect()
            }
            None => Vec::new(),
        };
        let data = match d.kind {
            BPF_MAP_TYPE_ARRAY => MapData::Array(vec![vec![0; words(vs) * max]]),
            BPF_MAP_TYPE_PERCPU_ARRAY => MapData::Array(vec![vec![0; words(vs) * max]; nr_cpus]),
            BPF_MAP_TYPE_ARRAY_OF_MAPS => {
                let mut slots = vec![0; max];
                slots[..inner.len()].copy_from_slice(&inner);
                MapData::Array(vec![slots])
            }
            BPF_MAP_TYPE_HASH_OF_MAPS => MapData::Hash(
                inner
                    .iter()
                    .enumerate()
                    .filter(|(_, &m)| m != 0)
                    .map(|(i, &m)| {
                        (
                            (i as u32).to_ne_bytes().to_vec(),
                            vec![m].into_boxed_slice(),
                        )
                    })
                    .collect(),
            ),
            BPF_MAP_TYPE_QUEUE | BPF_MAP_TYPE_STACK => MapData::Queue(Default::default()),
            BPF_MAP_TYPE_TASK_STORAGE | BPF_MAP_TYPE_CGRP_STORAGE => {
                MapData::Local(BTreeMap::new())
            }
            _ => MapData::Hash(BTreeMap::new()),
        };
        Map {
            kind: d.kind,
            ks: d.key_size as usize,
            vs,
            max,
            data,
        }
    }

    fn of_maps(&self) -> bool {
        matches!(
            self.kind,
            BPF_MAP_TYPE_ARRAY_OF_MAPS | BPF_MAP_TYPE_HASH_OF_MAPS
        )
    }
}

impl Runtime {
    /// The map defined at `m`, its storage made at first use; `None` (and the scheduler
    /// ended) for an address that is no map of the scheduler's.
    pub(super) fn map(&mut self, m: *mut c_void, k: &mut super::Kf<'_, '_>) -> Option<&mut Map> {
        let addr = m as usize;
        if !self.maps.contains_key(&addr) {
            let Some(sym) = self.map_syms.get(&addr) else {
                k.error(format!(
                    "bpf map helper called on {m:p}, which is not one of the scheduler's maps"
                ));
                return None;
            };
            let map = Map::new(sym, addr, self.nr_cpus);
            self.maps.insert(addr, map);
        }
        self.maps.get_mut(&addr)
    }

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
}

/// A map value of `w` words holding the `vsz` bytes at `value`.
///
/// # Safety
/// `value` must point at `vsz` readable bytes, and `vsz` ≤ 8 · `w`.
unsafe fn boxed_value(value: *const c_void, vsz: usize, w: usize) -> Box<[u64]> {
    let mut v = vec![0u64; w].into_boxed_slice();
    std::ptr::copy_nonoverlapping(value as *const u8, v.as_mut_ptr() as *mut u8, vsz);
    v
}

unsafe fn bytes<'a>(p: *const c_void, n: usize) -> &'a [u8] {
    std::slice::from_raw_parts(p as *const u8, n)
}

/// `bpf_map_lookup_elem`, or `bpf_map_lookup_percpu_elem` when `cpu` is given: the
/// value's address; for a map of maps, the inner map's.
unsafe fn lookup(m: *mut c_void, key: *const c_void, cpu: Option<u32>) -> *mut c_void {
    with(|k, rt| {
        let this = cpu.map_or(k.cpu(), |c| c as usize);
        let Some(map) = rt.map(m, k) else {
            return Ptr(std::ptr::null_mut());
        };
        let (w, of_maps) = (words(map.vs), map.of_maps());
        let slot: *mut u64 = match &mut map.data {
            MapData::Array(copies) => {
                let i = unsafe { (key as *const u32).read_unaligned() } as usize;
                let which = if copies.len() > 1 { this } else { 0 };
                let Some(copy) = copies.get_mut(which) else {
                    return Ptr(std::ptr::null_mut());
                };
                if i >= map.max {
                    return Ptr(std::ptr::null_mut());
                }
                copy[i * w..].as_mut_ptr()
            }
            MapData::Hash(h) => {
                let kb = unsafe { bytes(key, map.ks) }.to_vec();
                match h.get_mut(&kb) {
                    Some(v) => v.as_mut_ptr(),
                    None => return Ptr(std::ptr::null_mut()),
                }
            }
            _ => return Ptr(std::ptr::null_mut()),
        };
        if of_maps {
            // SAFETY: the slot holds an inner map's address.
            Ptr(unsafe { slot.read() } as usize as *mut c_void)
        } else {
            Ptr(slot as *mut c_void)
        }
    })
    .0
}

pub(super) unsafe extern "C" fn kf_map_lookup(m: *mut c_void, key: *const c_void) -> *mut c_void {
    lookup(m, key, None)
}

pub(super) unsafe extern "C" fn kf_map_lookup_percpu(
    m: *mut c_void,
    key: *const c_void,
    cpu: u32,
) -> *mut c_void {
    lookup(m, key, Some(cpu))
}

pub(super) unsafe extern "C" fn kf_map_update(
    m: *mut c_void,
    key: *const c_void,
    value: *const c_void,
    flags: u64,
) -> i64 {
    with(|k, rt| {
        let cpu = k.cpu();
        let Some(map) = rt.map(m, k) else { return -22 };
        if map.of_maps() {
            return -95; // -EOPNOTSUPP: a BPF program cannot update a map of maps
        }
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
                let kb = unsafe { bytes(key, map.ks) }.to_vec();
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

pub(super) unsafe extern "C" fn kf_map_delete(m: *mut c_void, key: *const c_void) -> i64 {
    with(|k, rt| {
        let Some(map) = rt.map(m, k) else { return -22 };
        let ks = map.ks;
        match &mut map.data {
            MapData::Hash(h) => {
                let kb = unsafe { bytes(key, ks) }.to_vec();
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
) -> i64 {
    with(|k, rt| {
        let Some(map) = rt.map(m, k) else { return -22 };
        let (vsz, w, cap) = (map.vs, words(map.vs), map.max);
        match &mut map.data {
            MapData::Queue(q) => {
                if q.len() >= cap {
                    return -7;
                }
                // SAFETY: value points at vsz bytes (the caller's).
                q.push_back(unsafe { boxed_value(value, vsz, w) });
                0
            }
            _ => -22,
        }
    })
}

pub(super) unsafe extern "C" fn kf_map_pop(m: *mut c_void, value: *mut c_void, peek: i32) -> i64 {
    with(|k, rt| {
        let Some(map) = rt.map(m, k) else { return -22 };
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

/// `bpf_{task,cgrp}_storage_get`: the value `owner` (a task's or a cgroup's id) keeps in
/// local-storage map `m`, made (from `value`, or zeroed) with `BPF_LOCAL_STORAGE_GET_F_CREATE`.
unsafe fn storage_get(m: *mut c_void, owner: u64, value: *mut c_void, flags: u64) -> *mut c_void {
    with(|k, rt| {
        let Some(map) = rt.map(m, k) else {
            return Ptr(std::ptr::null_mut());
        };
        let (vsz, w) = (map.vs, words(map.vs));
        let MapData::Local(t) = &mut map.data else {
            return Ptr(std::ptr::null_mut());
        };
        if let std::collections::btree_map::Entry::Vacant(e) = t.entry(owner) {
            if flags & 1 == 0 {
                return Ptr(std::ptr::null_mut());
            }
            let v = if value.is_null() {
                vec![0u64; w].into_boxed_slice()
            } else {
                // SAFETY: value points at vsz bytes.
                unsafe { boxed_value(value, vsz, w) }
            };
            e.insert(v);
        }
        Ptr(t
            .get_mut(&owner)
            .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr() as *mut c_void))
    })
    .0
}

fn storage_delete(m: *mut c_void, owner: u64) -> i64 {
    with(
        |_k, rt| match rt.maps.get_mut(&(m as usize)).map(|m| &mut m.data) {
            Some(MapData::Local(t)) => t.remove(&owner).map_or(-2, |_| 0),
            _ => -2,
        },
    )
}

pub(super) unsafe extern "C" fn kf_task_storage_get(
    m: *mut c_void,
    p: TaskP,
    value: *mut c_void,
    flags: u64,
) -> *mut c_void {
    match id_of(p) {
        Some(id) => storage_get(m, u64::from(id), value, flags),
        None => std::ptr::null_mut(),
    }
}

pub(super) unsafe extern "C" fn kf_task_storage_delete(m: *mut c_void, p: TaskP) -> i64 {
    id_of(p).map_or(-22, |id| storage_delete(m, u64::from(id)))
}

pub(super) unsafe extern "C" fn kf_cgrp_storage_get(
    m: *mut c_void,
    cgid: u64,
    value: *mut c_void,
    flags: u64,
) -> *mut c_void {
    storage_get(m, cgid, value, flags)
}

pub(super) unsafe extern "C" fn kf_cgrp_storage_delete(m: *mut c_void, cgid: u64) -> i64 {
    storage_delete(m, cgid)
}
