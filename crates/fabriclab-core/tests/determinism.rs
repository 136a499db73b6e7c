//! Same fabric, workload and seed: identical results, bit for bit. A
//! different seed changes ECMP choices.

mod common;
use common::*;
use fabriclab_core::config::preset;

fn all_to_all_on_heps(seed: u64) -> (Vec<String>, Vec<Option<u64>>) {
    let spec = preset("heps").unwrap();
    let mut flows = Vec::new();
    for s in 0..8 {
        for d in 24..32 {
            flows.push(flow(&format!("h{s}"), &format!("h{d}"), 256 * 1024));
        }
    }
    let (sim, res) = run_flows(&spec, &flows, seed);
    let ports: Vec<String> = sim
        .net
        .port_reports()
        .iter()
        .map(|p| format!("{p:?}"))
        .collect();
    let done = res.iter().map(|r| r.completed_ps).collect();
    (ports, done)
}

#[test]
fn same_seed_gives_identical_counters_and_completion_times() {
    let a = all_to_all_on_heps(42);
    let b = all_to_all_on_heps(42);
    assert_eq!(a, b);
}

#[test]
fn a_different_seed_changes_ecmp_choices() {
    let spine_bytes = |seed| {
        let (ports, _) = all_to_all_on_heps(seed);
        ports
            .into_iter()
            .filter(|p| p.contains("node: \"spine"))
            .collect::<Vec<_>>()
    };
    assert_ne!(spine_bytes(1), spine_bytes(2));
}
