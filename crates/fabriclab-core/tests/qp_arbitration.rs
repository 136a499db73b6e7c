//! The NIC's choice among its QPs (`[nic] qp_arbitration`) on the ns-3
//! HPCC cross-check's 16-host all-to-all: DCQCN paces the inter-leaf QPs
//! (their traffic meets at the 4:1 uplinks) while the intra-leaf ones run
//! at line rate. Under `ring` a paced QP that becomes eligible again waits
//! behind every QP already waiting; under `cyclic` (ns-3's order) it waits
//! only until the scan reaches it, so the paced QPs get more of the NIC:
//! inter-leaf flows finish earlier and intra-leaf ones later. Both rules
//! move the same bytes and repeat bit for bit.

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::traffic::flows::FlowSpec;

fn fabric(arbitration: &str) -> FabricSpec {
    let text = include_str!("../../../validation/ns3_hpcc_16.toml").replace(
        "qp_arbitration = \"cyclic\"",
        &format!("qp_arbitration = \"{arbitration}\""),
    );
    FabricSpec::from_toml(&text).unwrap()
}

/// Every ordered pair of the 16 hosts, 512 KiB each; true where both
/// hosts are on one leaf (8 hosts per leaf).
fn all_to_all() -> (Vec<FlowSpec>, Vec<bool>) {
    let mut flows = Vec::new();
    let mut intra = Vec::new();
    for s in 0..16 {
        for d in 0..16 {
            if s != d {
                flows.push(flow(&format!("h{s}"), &format!("h{d}"), 512 << 10));
                intra.push(s / 8 == d / 8);
            }
        }
    }
    (flows, intra)
}

/// Mean completion time, us, of the intra-leaf and the inter-leaf flows.
fn means(arbitration: &str) -> (f64, f64, u64) {
    let (flows, intra) = all_to_all();
    let (sim, res) = run_flows(&fabric(arbitration), &flows, 1);
    let mean = |want: bool| {
        let t: Vec<f64> = res
            .iter()
            .zip(&intra)
            .filter(|(_, &i)| i == want)
            .map(|(r, _)| (r.completed_ps.unwrap() - r.start_ps) as f64 / 1e6)
            .collect();
        t.iter().sum::<f64>() / t.len() as f64
    };
    let rx: u64 = switch_total(&sim, |c| c.tx_bytes);
    (mean(true), mean(false), rx)
}

#[test]
fn cyclic_order_gives_paced_qps_more_of_the_nic_than_the_ring() {
    let (ring_intra, ring_inter, ring_bytes) = means("ring");
    let (cyc_intra, cyc_inter, cyc_bytes) = means("cyclic");
    println!(
        "ring {ring_intra:.1} / {ring_inter:.1} us, cyclic {cyc_intra:.1} / {cyc_inter:.1} us"
    );
    assert!(
        cyc_inter < ring_inter,
        "inter-leaf: {cyc_inter} vs {ring_inter}"
    );
    assert!(
        cyc_intra > ring_intra,
        "intra-leaf: {cyc_intra} vs {ring_intra}"
    );
    // The same data crosses the switches (ACK and CNP counts may differ).
    assert!(
        (cyc_bytes as f64 / ring_bytes as f64 - 1.0).abs() < 0.02,
        "{cyc_bytes} vs {ring_bytes}"
    );
    assert_eq!(means("cyclic"), (cyc_intra, cyc_inter, cyc_bytes));
}
