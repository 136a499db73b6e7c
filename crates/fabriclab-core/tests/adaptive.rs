//! Adaptive routing against ECMP on a non-blocking leaf-spine: four flows
//! from one leaf to another whose ECMP hashes collide on an uplink take
//! twice the ideal time under ECMP; adaptive routing spreads them over the
//! spines (relaxed ordering per packet, at the price of reordering that
//! RoCE's go-back-N pays for; strict ordering per flowlet, which cannot
//! move a flow that never pauses).

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::wire::write_goodput_gbps;

const MIB: u64 = 1 << 20;

/// Two leaves of four hosts, four spines (one 100G link per leaf each):
/// non-blocking, so four leaf-to-leaf flows fit at line rate when each
/// takes its own spine. PFC on, no congestion control.
fn fabric(routing: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 4\nleaves = 2\nhosts_per_leaf = 4\n\
         host_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = 500\nuplink_delay_ns = 500\n\
         [nic]\nroce_mtu = 4096\n[cc]\nalgorithm = \"none\"\n{routing}"
    ))
    .unwrap()
}

fn four_flows() -> Vec<fabriclab_core::traffic::flows::FlowSpec> {
    (0..4)
        .map(|i| flow(&format!("h{i}"), &format!("h{}", i + 4), 4 * MIB))
        .collect()
}

const ADAPTIVE: &str = "[routing]\nmode = \"adaptive\"\n";
const STRICT: &str = "[routing]\nmode = \"adaptive\"\nordering = \"strict\"\n";

struct Run {
    last_us: f64,
    uplinks_used: usize,
    retransmits: u64,
    naks: u64,
    events: u64,
}

fn run(routing: &str, seed: u64) -> Run {
    run_these(routing, seed, &four_flows())
}

fn run_these(routing: &str, seed: u64, flows: &[fabriclab_core::traffic::flows::FlowSpec]) -> Run {
    let spec = fabric(routing);
    let (sim, res) = run_flows(&spec, flows, seed);
    // Every byte delivered, once: the receivers accepted exactly the
    // flows' bytes (out-of-order arrivals are discarded and resent).
    let accepted: u64 = sim
        .net
        .qp_reports()
        .iter()
        .map(|q| q.counters.rx_payload_bytes)
        .sum();
    assert_eq!(
        accepted,
        flows.iter().map(|f| f.bytes).sum::<u64>(),
        "{routing}"
    );
    let last_ps = res.iter().map(|r| r.delivered_ps.unwrap()).max().unwrap();
    let uplinks_used = (0..4)
        .filter(|s| {
            sim.net
                .port_between("leaf0", &format!("spine{s}"))
                .unwrap()
                .tx_bytes
                > MIB
        })
        .count();
    let qps = sim.net.qp_reports();
    Run {
        last_us: last_ps as f64 / 1e6,
        uplinks_used,
        retransmits: qps.iter().map(|q| q.counters.retx_packets).sum(),
        naks: qps.iter().map(|q| q.counters.naks_rx).sum(),
        events: sim.net.events_processed(),
    }
}

#[test]
fn adaptive_routing_spreads_flows_that_ecmp_collides() {
    // A seed whose ECMP hashes put two of the four flows on one uplink.
    let seed = (1..50)
        .find(|&s| run("", s).uplinks_used < 4)
        .expect("some seed collides");
    // One flow alone: 4 MiB at the WRITE goodput of RoCE MTU 4096.
    let ideal_us = (4 * MIB) as f64 * 8.0 / (write_goodput_gbps(100.0, 4096, false) * 1e3);
    let ecmp = run("", seed);
    let relaxed = run(ADAPTIVE, seed);
    let strict = run(STRICT, seed);
    for (name, r) in [("ecmp", &ecmp), ("relaxed", &relaxed), ("strict", &strict)] {
        println!(
            "{name}: last byte {:.1} us ({:.2} x ideal {ideal_us:.1}), {} uplinks, {} retransmits",
            r.last_us,
            r.last_us / ideal_us,
            r.uplinks_used,
            r.retransmits
        );
    }
    // ECMP: at least two flows share an uplink, so the last one needs at
    // least twice the time of a flow alone.
    assert!(ecmp.last_us > 1.9 * ideal_us && ecmp.uplinks_used < 4);
    // Relaxed: every uplink used, close to the ideal; packets of a flow
    // overtake each other across the spines, and RoCE's go-back-N answers
    // every gap with a NAK and a resend.
    assert_eq!(relaxed.uplinks_used, 4);
    assert!(relaxed.last_us < 1.15 * ideal_us, "{}", relaxed.last_us);
    assert!(relaxed.naks > 0 && relaxed.retransmits > 0);
    // Strict: the flows' first packets find the uplinks already taken busy
    // and spread; no flow moves afterwards, so nothing is reordered.
    assert_eq!(strict.uplinks_used, 4);
    assert!(strict.last_us < 1.05 * ideal_us, "{}", strict.last_us);
    assert_eq!((strict.naks, strict.retransmits), (0, 0));
}

#[test]
fn under_strict_ordering_a_flow_keeps_its_uplink() {
    // A second flow joins 50 us into the first: under strict ordering the
    // first never moves (it is never idle), so each uplink that carries
    // data carries one flow's bytes whole.
    let mut flows = vec![flow("h0", "h4", 4 * MIB), flow("h1", "h5", 4 * MIB)];
    flows[1].start_us = 50.0;
    let spec = fabric(STRICT);
    let (sim, _) = run_flows(&spec, &flows, 3);
    let mut per_uplink: Vec<u64> = (0..4)
        .map(|s| {
            sim.net
                .port_between("leaf0", &format!("spine{s}"))
                .unwrap()
                .tx_bytes
        })
        .filter(|&b| b > 0)
        .collect();
    per_uplink.sort();
    assert_eq!(per_uplink.len(), 2, "{per_uplink:?}");
    // Each carries one flow: 4 MiB of payload plus its headers.
    let wire = (4 * MIB) as f64 * 100.0 / write_goodput_gbps(100.0, 4096, false);
    for b in per_uplink {
        assert!((b as f64 - wire).abs() < 0.001 * wire, "{b} vs {wire}");
    }
}

#[test]
fn adaptive_runs_repeat_bit_for_bit() {
    let a = run(ADAPTIVE, 5);
    let b = run(ADAPTIVE, 5);
    assert_eq!((a.last_us, a.events, a.naks), (b.last_us, b.events, b.naks));
}

#[test]
fn bad_routing_sections_say_what_to_change() {
    let err = |extra: &str| {
        FabricSpec::from_toml(&format!(
            "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 1\n\
             host_link_gbps = 100\nuplink_gbps = 100\n{extra}"
        ))
        .and_then(|s| s.validate())
        .unwrap_err()
        .to_string()
    };
    assert!(err("[routing]\nmode = \"random\"\n").contains("ecmp"));
    assert!(err("[routing]\nordering = \"strict\"\n").contains("set mode = \"adaptive\""));
    assert!(err("[routing]\nmode = \"adaptive\"\nflowlet_gap_us = 0\n").contains("positive"));
    assert!(err("[routing]\nmode = \"adaptive\"\nhops = 2\n").contains("hops"));
    // A flowlet gap where no flowlet is cut (ECMP, or adaptive without
    // strict ordering) was accepted and ignored.
    for r in ["", "mode = \"adaptive\"\n"] {
        let e = err(&format!("[routing]\n{r}flowlet_gap_us = 5\n"));
        assert!(
            e.contains("applies to mode = \"adaptive\" with ordering = \"strict\""),
            "{e}"
        );
    }
    let ib = format!("transport = \"infiniband\"\n{}", "");
    let msg = FabricSpec::from_toml(&format!(
        "{ib}[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 1\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[routing]\nmode = \"adaptive\"\n"
    ))
    .and_then(|s| s.validate())
    .unwrap_err()
    .to_string();
    assert!(msg.contains("D-mod-K"), "{msg}");
}
