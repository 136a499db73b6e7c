//! `fabriclab-bench NAME [CC [BACKEND]]`: run a benchmark without Python
//! and print its figures as JSON (progress on stderr).

// Large arrays on huge pages, as in the Python extension.
#[global_allocator]
static ALLOC: fabriclab_core::engine::HugePageAlloc = fabriclab_core::engine::HugePageAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 || args.len() > 4 {
        eprintln!("usage: fabriclab-bench a2a-32|a2a-128|ns3-hpcc-64|a2a-1024|perm-64k|allreduce-1k|allreduce-16k|nccl-1024 [none|dcqcn|\"\"] [packet|flow]");
        std::process::exit(2);
    }
    let cc = args.get(2).map(String::as_str).unwrap_or("");
    let backend = match fabriclab_core::config::Backend::parse(
        args.get(3).map(String::as_str).unwrap_or("packet"),
    ) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("fabriclab-bench: {e}");
            std::process::exit(2);
        }
    };
    let mut progress = |t: fabriclab_core::units::Time, ev: u64| {
        eprintln!("  ... simulated {:.1} us, {ev} events", t.as_us_f64());
    };
    match fabriclab_core::bench::run_on(&args[1], cc, backend, Some(&mut progress)) {
        Ok(r) => println!("{}", serde_json::to_string_pretty(&r).expect("json")),
        Err(e) => {
            eprintln!("fabriclab-bench: {e}");
            std::process::exit(2);
        }
    }
}
