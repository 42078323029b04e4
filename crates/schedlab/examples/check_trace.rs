//! Decode a Perfetto trace with schedlab's message definitions and check it (per-CPU time
//! order and `sched_switch` continuity, traces.md §2.4):
//! `cargo run --release -p schedlab --example check_trace -- FILE.perfetto-trace [--from-boot]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: check_trace FILE.perfetto-trace [--from-boot]");
        std::process::exit(2);
    };
    let from_boot = args.iter().any(|a| a == "--from-boot");
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("check_trace: {path}: {e}");
        std::process::exit(2)
    });
    let t = schedlab::trace::perfetto::decode(&bytes).unwrap_or_else(|e| {
        eprintln!("check_trace: {e}");
        std::process::exit(1)
    });
    match schedlab::trace::check::check(&t, from_boot) {
        Ok(f) => println!("{path}: ok: {f:?}"),
        Err(e) => {
            eprintln!("check_trace: {path}: {e}");
            std::process::exit(1)
        }
    }
}
