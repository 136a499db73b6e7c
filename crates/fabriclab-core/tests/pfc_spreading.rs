//! PFC congestion spreading: a congested downstream port pauses its
//! upstream switch, and a victim flow that shares the paused link but not
//! the congested port is slowed (head-of-line blocking).

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;

fn two_leaves() -> FabricSpec {
    FabricSpec::from_toml(
        r#"
[topology]
kind = "leaf_spine"
spines = 1
leaves = 2
hosts_per_leaf = 4
host_link_gbps = 100
uplink_gbps = 100
host_link_delay_ns = 500
uplink_delay_ns = 500
[switch]
buffer_bytes = 4000000
[nic]
roce_mtu = 4096
[cc]
algorithm = "none"
"#,
    )
    .unwrap()
}

#[test]
fn congestion_spreads_upstream_and_slows_a_victim_flow() {
    let spec = two_leaves();
    let mib = 1u64 << 20;
    let victim = flow("h3", "h6", 4 * mib);
    let (_, alone) = run_flows(&spec, std::slice::from_ref(&victim), 1);
    let alone_ps = alone[0].delivered_ps.unwrap();

    // Incast onto h4 from three hosts of leaf0 and one of leaf1.
    let mut flows = vec![victim];
    for src in ["h0", "h1", "h2", "h5"] {
        flows.push(flow(src, "h4", 4 * mib));
    }
    let (sim, res) = run_flows(&spec, &flows, 1);
    let shared_ps = res[0].delivered_ps.unwrap();
    let net = &sim.net;
    // The congested leaf pauses the spine, the spine pauses leaf0's uplink.
    let spine_to_leaf1 = net.port_between("spine0", "leaf1").unwrap();
    let leaf0_up = net.port_between("leaf0", "spine0").unwrap();
    let leaf1_to_h4 = net.port_between("leaf1", "h4").unwrap();
    let leaf1_to_h6 = net.port_between("leaf1", "h6").unwrap();
    println!(
        "victim alone {:.1} us, with incast {:.1} us; spine->leaf1 paused {:.1} us ({} frames), \
         leaf0->spine paused {:.1} us ({} frames)",
        alone_ps as f64 / 1e6,
        shared_ps as f64 / 1e6,
        spine_to_leaf1.paused_ps as f64 / 1e6,
        spine_to_leaf1.pause_rx,
        leaf0_up.paused_ps as f64 / 1e6,
        leaf0_up.pause_rx
    );
    assert!(spine_to_leaf1.pause_rx > 0 && spine_to_leaf1.paused_ps > 0);
    assert!(
        leaf0_up.pause_rx > 0 && leaf0_up.paused_ps > 0,
        "pause must propagate to leaf0"
    );
    // The victim's own egress port was never congested...
    assert!(leaf1_to_h6.peak_queue_bytes < leaf1_to_h4.peak_queue_bytes / 10);
    // ...yet it finished much later than alone.
    assert!(
        shared_ps as f64 > 1.5 * alone_ps as f64,
        "victim not slowed: {shared_ps} vs {alone_ps}"
    );
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
}
