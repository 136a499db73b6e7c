//! Classes sharing a switch egress: DWRR weights between two lossless
//! priorities, checked against the share the weights give by hand.

mod common;
use common::*;

const MIB: u64 = 1 << 20;

#[test]
fn dwrr_weights_share_a_congested_egress_in_their_ratio() {
    // h1 (priority 3, weight 3) and h2 (priority 2, weight 1) each send 8
    // MiB to h0 at line rate; leaf0 -> h0 is the bottleneck, and PFC on
    // both priorities keeps both queues backlogged. While both send, the
    // egress gives 3/4 of its bytes to priority 3, so that flow ends at
    // 8 MiB / (3/4 of the link) and the other at 16 MiB / the link (the
    // link is busy throughout): the first ends at 2/3 of the second's time.
    // With the weights ignored, both would end together.
    let spec = one_switch(
        3,
        "[nic]\nroce_mtu = 4096\n[cc]\nalgorithm = \"none\"\n\
         [pfc]\nenabled = true\npriorities = [2, 3]\n\
         [qos]\ndwrr_weights = [1, 1, 1, 3, 1, 1, 1, 1]\n",
    );
    let mut hi = flow("h1", "h0", 8 * MIB);
    hi.priority = Some(3);
    let mut lo = flow("h2", "h0", 8 * MIB);
    lo.priority = Some(2);
    let (sim, res) = run_flows(&spec, &[hi, lo], 1);
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
    let (t_hi, t_lo) = (
        res[0].delivered_ps.unwrap() as f64,
        res[1].delivered_ps.unwrap() as f64,
    );
    // The second's end: 16 MiB at the MTU's goodput (4,096 B per 4,178 B
    // on the wire), plus the fabric's latency (a few us).
    let both_ps = (16 * MIB * 8) as f64 * 4178.0 / 4096.0 / 100e9 * 1e12;
    println!(
        "priority 3 done at {:.1} us, priority 2 at {:.1} us ({:.4}), both at line rate {:.1} us",
        t_hi / 1e6,
        t_lo / 1e6,
        t_hi / t_lo,
        both_ps / 1e6
    );
    assert!((t_lo / both_ps - 1.0).abs() < 0.01, "{t_lo} vs {both_ps}");
    assert!((t_hi / t_lo - 2.0 / 3.0).abs() < 0.01, "{}", t_hi / t_lo);
}
