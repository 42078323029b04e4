//! Building a scheduler: its C source compiled natively against schedlab's headers and
//! shim, cached by content hash (the source, the headers, the scheduler's own include
//! tree). The compiler also writes the BTF of the scheduler's types (`-gbtf`), from which
//! the loader reads the map definitions as libbpf does.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::COPIES;

/// schedlab's headers and shim, as shipped.
pub(super) const FILES: &[(&str, &str)] = &[
    (
        "vmlinux.h",
        include_str!("../../../../scx/include/vmlinux.h"),
    ),
    (
        "bpf/bpf_helpers.h",
        include_str!("../../../../scx/include/bpf/bpf_helpers.h"),
    ),
    (
        "bpf/bpf_tracing.h",
        include_str!("../../../../scx/include/bpf/bpf_tracing.h"),
    ),
    (
        "bpf/bpf_core_read.h",
        include_str!("../../../../scx/include/bpf/bpf_core_read.h"),
    ),
    (
        "schedlab_scx.h",
        include_str!("../../../../scx/include/schedlab_scx.h"),
    ),
    (
        "schedlab_shim.c",
        include_str!("../../../../scx/schedlab_shim.c"),
    ),
];

/// The example schedulers (`scx:@NAME`).
pub const EXAMPLES: &[(&str, &str)] = &[
    ("fifo", include_str!("../../../../scx/examples/fifo.bpf.c")),
    (
        "vtime",
        include_str!("../../../../scx/examples/vtime.bpf.c"),
    ),
    (
        "central",
        include_str!("../../../../scx/examples/central.bpf.c"),
    ),
];

/// How a scheduler is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A C source file.
    File(PathBuf),
    /// A shipped example, by name.
    Example(&'static str),
    /// A shared object built before.
    SharedObject(PathBuf),
}

/// What `scx:` names: the scheduler, where its own headers are, knobs to set.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The scheduler.
    pub source: Source,
    /// Its `include/` directory (default: `include` beside the source).
    pub include: Option<PathBuf>,
    /// `rodata` knobs: (name, value).
    pub set: Vec<(String, String)>,
}

/// The cache directory for built schedulers.
fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SCHEDLAB_CACHE") {
        return PathBuf::from(d).join("scx");
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("schedlab/scx");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/schedlab/scx");
    }
    std::env::temp_dir().join("schedlab-scx")
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Build the shared object for `spec` (or find it in the cache): its path.
pub fn build(spec: &Spec) -> Result<PathBuf, String> {
    let (src_text, src_dir): (String, Option<PathBuf>) = match &spec.source {
        Source::SharedObject(p) => return Ok(p.clone()),
        Source::Example(name) => {
            let (_, text) = EXAMPLES
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| format!("unknown example scheduler '@{name}'"))?;
            (text.to_string(), None)
        }
        Source::File(p) => (
            std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read scheduler source {}: {e}", p.display()))?,
            p.parent().map(Path::to_path_buf),
        ),
    };
    let include = spec
        .include
        .clone()
        .or_else(|| src_dir.as_ref().map(|d| d.join("include")))
        .filter(|d| d.is_dir());
    let mut h = Sha256::new();
    h.update(src_text.as_bytes());
    // The compiler too: one without BTF output builds a different object.
    h.update(std::env::var("CC").unwrap_or_default().as_bytes());
    for (name, text) in FILES {
        h.update(name.as_bytes());
        h.update(text.as_bytes());
    }
    if let Some(inc) = &include {
        hash_dir(&mut h, inc);
        for (head, native) in NATIVE {
            h.update(head.as_bytes());
            h.update(native.as_bytes());
        }
    }
    let key = hex(&h.finalize())[..24].to_string();
    let dir = cache_dir();
    let so = dir.join(format!("{key}.so"));
    if so.is_file() {
        return Ok(so);
    }
    // A build directory of its own: runs in parallel threads may build the same
    // scheduler at once; the last rename into the cache wins, with equal contents.
    let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = dir.join(format!("build-{key}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(work.join("bpf"))
        .map_err(|e| format!("cannot create the scheduler cache {}: {e}", dir.display()))?;
    for (name, text) in FILES {
        std::fs::write(work.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let src = match &spec.source {
        Source::File(p) => p.clone(),
        _ => {
            let p = work.join("scheduler.bpf.c");
            std::fs::write(&p, &src_text).map_err(|e| format!("cannot write the example: {e}"))?;
            p
        }
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let tmp = work.join("scheduler.so");
    let native = match &include {
        // The scheduler's own headers, with the macros written in BPF assembly
        // (MEMBER_VPTR, ARRAY_ELEM_PTR: verifier-visible bounds clamps) in plain C.
        Some(inc) => {
            let native = work.join("sched-include");
            copy_headers_native(inc, &native).map_err(|e| {
                format!("cannot copy the scheduler's headers {}: {e}", inc.display())
            })?;
            Some(native)
        }
        None => None,
    };
    let compile = |btf: bool| -> Result<std::process::Output, String> {
        let mut cmd = std::process::Command::new(&cc);
        cmd.args(["-O2", "-shared", "-fPIC", "-std=gnu11", "-D__bpf__"]);
        // The maps' definitions are read from BTF, as libbpf reads them (GCC 12+).
        cmd.arg(if btf { "-gbtf" } else { "-g0" });
        cmd.args(["-Wno-int-conversion", "-Wno-incompatible-pointer-types"]);
        if let Some(native) = &native {
            cmd.arg("-I").arg(native);
        }
        cmd.arg("-I")
            .arg(&work)
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .arg(work.join("schedlab_shim.c"));
        cmd.output().map_err(|e| {
            format!("cannot run the C compiler '{cc}': {e} (accepted: a cc on PATH, or CC=...)")
        })
    };
    let mut out = compile(true)?;
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("-gbtf") {
        // A compiler without BTF output (GCC before 12, clang for a native target): a
        // scheduler without maps still runs; one with maps is refused at load, saying why.
        out = compile(false)?;
    }
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&work);
        return Err(format!(
            "the scheduler did not compile ({cc}):\n{}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        ));
    }
    std::fs::rename(&tmp, &so).map_err(|e| format!("cannot cache {}: {e}", so.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(so)
}

/// Copy a scheduler's include tree, rewriting the BPF-assembly macros of scx's
/// `common.bpf.h` as the C they stand for.
fn copy_headers_native(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let p = e?.path();
        let dst = to.join(p.file_name().expect("a directory entry has a name"));
        if p.is_dir() {
            copy_headers_native(&p, &dst)?;
        } else {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            std::fs::write(&dst, native_macros(&text))?;
        }
    }
    Ok(())
}

/// The definitions [`native_macros`] puts in place of the headers' own (a `#define` and
/// its continuation lines): for `MEMBER_VPTR` and `ARRAY_ELEM_PTR`, plain C (the member's
/// address; the element's address when the index is in bounds, else NULL — what the BPF
/// assembly computes); for `RESIZABLE_ARRAY`, an array as long as the most CPUs the
/// simulator boots, in the section the loader would resize to the CPUs it found
/// (`RESIZE_ARRAY`, e.g. scx_central.c's per-CPU arrays).
const NATIVE: &[(&str, &str)] = &[
    (
        "#define MEMBER_VPTR(",
        "#define MEMBER_VPTR(base, member) (typeof((base) member) *)(&((base) member))",
    ),
    (
        "#define ARRAY_ELEM_PTR(",
        "#define ARRAY_ELEM_PTR(arr, i, n) (typeof(arr[i]) *)((u64)(i) < (u64)(n) ? (void *)&(arr[i]) : (void *)0)",
    ),
    (
        "#define RESIZABLE_ARRAY(",
        "#define RESIZABLE_ARRAY(elfsec, arr) arr[1024] SEC(\".\"#elfsec\".\"#arr)",
    ),
];

const _: () = assert!(
    crate::machine::cpumask::MAX_CPUS == 1024,
    "RESIZABLE_ARRAY's length"
);

/// The scheduler's headers with [`NATIVE`]'s definitions in place of their own.
fn native_macros(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.lines() {
        if skipping {
            skipping = line.trim_end().ends_with('\\');
            continue;
        }
        if let Some((_, native)) = NATIVE.iter().find(|(head, _)| line.starts_with(head)) {
            out.push_str(native);
            out.push('\n');
            skipping = line.trim_end().ends_with('\\');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn hash_dir(h: &mut Sha256, dir: &Path) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            hash_dir(h, &p);
        } else if let Ok(b) = std::fs::read(&p) {
            h.update(p.to_string_lossy().as_bytes());
            h.update(&b);
        }
    }
}
