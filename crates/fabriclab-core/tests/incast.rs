//! Incast through one leaf: PFC keeps it lossless and line-rate; without PFC
//! and with a small buffer, go-back-N recovers every byte exactly once.

mod common;
use common::*;

const MIB: u64 = 1 << 20;

#[test]
fn pfc_incast_is_lossless_pauses_and_runs_at_line_rate() {
    let spec = one_switch(16, "[nic]\nroce_mtu = 4096\n[cc]\nalgorithm = \"none\"\n");
    let (sim, res) = run_flows(&spec, &incast(15, MIB), 1);
    assert_eq!(
        switch_total(&sim, |c| c.drops),
        0,
        "PFC must make the incast lossless"
    );
    let pauses = switch_total(&sim, |c| c.pause_tx);
    assert!(pauses > 0, "the congested leaf must send pause frames");
    // Every pause started was ended by an XON before the run ended; the
    // other frames are refreshes of a pause in force (every 167 us at
    // 100G), so a port sends at least two frames per pause it starts.
    let starts = switch_total(&sim, |c| c.pause_starts);
    assert!(
        starts > 0 && 2 * starts <= pauses,
        "{starts} starts, {pauses} frames"
    );
    for p in sim.net.port_reports() {
        assert!(2 * p.counters.pause_starts <= p.counters.pause_tx, "{p:?}");
    }
    let last = res.iter().map(|r| r.delivered_ps.unwrap()).max().unwrap();
    // No earlier than bytes / line rate, and within 5 % of it.
    let ideal_ps = (15 * MIB * 8) as f64 / 100e9 * 1e12;
    let ratio = last as f64 / ideal_ps;
    println!(
        "last byte at {:.1} us, ideal {:.1} us, ratio {ratio:.4}, pauses {pauses}",
        last as f64 / 1e6,
        ideal_ps / 1e6
    );
    assert!(ratio >= 1.0, "faster than the line rate: {ratio}");
    assert!(
        ratio <= 1.05,
        "more than 5 % above bytes / line rate: {ratio}"
    );
    for q in sim.net.qp_reports() {
        assert_eq!(q.counters.retx_packets, 0);
    }
}

/// A lossy 16-port switch with a small buffer, no congestion control.
fn lossy(buffer_bytes: u64) -> fabriclab_core::config::FabricSpec {
    one_switch(
        16,
        &format!(
            "[nic]\nroce_mtu = 4096\nack_timeout_exponent = 6\n[cc]\nalgorithm = \"none\"\n\
             [pfc]\nenabled = false\n[switch]\nbuffer_bytes = {buffer_bytes}\n"
        ),
    )
}

#[test]
fn without_pfc_a_small_buffer_drops_and_go_back_n_delivers_every_byte_once() {
    // Eight senders: see the next test for fifteen.
    let spec = lossy(200_000);
    let n = 8;
    let (sim, res) = run_flows(&spec, &incast(n, MIB), 1);
    assert!(sim.net.qp_failures().is_empty());
    let drops = switch_total(&sim, |c| c.drops);
    assert!(
        drops > 0,
        "a 200 KB buffer must overflow under a 15:1 incast"
    );
    assert_eq!(switch_total(&sim, |c| c.pause_tx), 0);
    let qps = sim.net.qp_reports();
    let retx: u64 = qps.iter().map(|q| q.counters.retx_packets).sum();
    assert!(retx > 0, "losses must be recovered by retransmission");
    // Every byte delivered exactly once: each receiver QP got exactly the
    // message in order, and each flow completed once.
    for r in &res {
        assert!(r.delivered_ps.is_some() && r.completed_ps.is_some());
        assert_eq!(r.messages, 1);
    }
    let rx: u64 = qps.iter().map(|q| q.counters.rx_payload_bytes).sum();
    assert_eq!(rx, n as u64 * MIB);
    // Conservation at the switch: bytes in = bytes out + bytes dropped.
    let rx_sw = switch_total(&sim, |c| c.rx_bytes);
    let tx_sw = switch_total(&sim, |c| c.tx_bytes);
    let drop_sw = switch_total(&sim, |c| c.drop_bytes);
    assert_eq!(rx_sw, tx_sw + drop_sw);
    println!("drops {drops}, retransmitted packets {retx}");
}

#[test]
fn a_lossy_fifteen_to_one_incast_collapses_into_go_back_n_timeouts() {
    // Every sender times out at the same instant and resends at line rate
    // in lockstep: at each packet time the switch has room for one of the
    // arriving packets, and ties go the same way every time, so each round
    // of timeouts lets a few more packets through: go-back-N incast
    // collapse, the failure lossy RoCE without congestion control is known
    // for, made sharper here by the model's perfect synchrony (no timer
    // jitter). The transport timer is the IB spec's (restarted by an ACK
    // that makes progress, not by later sends), so a sender whose packets
    // get through now and then keeps its retries; it fails only after
    // retry_cnt + 1 timeouts in a row without progress. Until 2026-11-26
    // every send pushed the timer back, which spaced the rounds further
    // apart and let the last senders run out of retries at two of these
    // three buffer sizes; none does now. Counted at three buffer sizes:
    // the senders retransmit their incast several times over, time out
    // repeatedly, and the last completion is far past the line-rate bound.
    let packets = 15 * MIB / 4096;
    // 15 MiB of 4 KiB frames through one 100G port: the line-rate bound.
    let bound_ps = packets as f64 * (4096.0 + 82.0) * 8.0 / 100e9 * 1e12;
    for buffer in [190_000, 200_000, 210_000] {
        let (sim, res) = run_flows(&lossy(buffer), &incast(15, MIB), 1);
        for f in sim.net.qp_failures() {
            assert_eq!((f.peer.as_str(), f.retries), ("h0", 7));
        }
        let failed = sim.net.qp_failures().len();
        let done = res.iter().filter(|r| r.completed_ps.is_some()).count();
        let errs = res.iter().filter(|r| r.error.is_some()).count();
        assert_eq!((done + errs, errs), (15, failed));
        let qps = sim.net.qp_reports();
        let retx: u64 = qps.iter().map(|q| q.counters.retx_packets).sum();
        assert!(retx > 4 * packets, "{buffer} B: {retx} retransmitted");
        let timeouts = qps.iter().map(|q| q.counters.timeouts).max().unwrap();
        assert!(timeouts >= 8, "{buffer} B: at most {timeouts} timeouts");
        let last = res.iter().filter_map(|r| r.completed_ps).max().unwrap();
        assert!(
            last as f64 > 1.5 * bound_ps,
            "{buffer} B: last at {last} ps"
        );
    }
}

#[test]
fn lossless_incast_conserves_bytes_at_the_switch() {
    let spec = one_switch(16, "[nic]\nroce_mtu = 4096\n");
    let (sim, _) = run_flows(&spec, &incast(15, MIB), 3);
    let rx_sw = switch_total(&sim, |c| c.rx_bytes);
    let tx_sw = switch_total(&sim, |c| c.tx_bytes);
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
    assert_eq!(rx_sw, tx_sw);
    assert_eq!(
        sim.net.packets_in_flight(),
        0,
        "every packet returned to the pool"
    );
}

/// An 800G spine above 100G hosts (eantc-hpc's leaves, one spine): a
/// 28-to-1 incast across the spine stays lossless. The headroom derived
/// for each port covers what this model has in flight after a pause: two
/// cable delays and the upstream's reaction, the IEEE response kept as a
/// time above 100G (here longer than the switches' pipeline latency).
/// Before, 74,676 packets of the lossless class were dropped here.
#[test]
fn an_incast_across_an_800g_spine_is_lossless() {
    let mut spec = fabriclab_core::config::preset("eantc-hpc").unwrap();
    if let fabriclab_core::config::TopologySpec::LeafSpine(ls) = &mut spec.topology {
        ls.spines = 1;
        ls.uplink_gbps = 800.0;
    }
    spec.cc.algorithm = fabriclab_core::config::CcAlgorithm::None;
    let flows: Vec<_> = (4..32).map(|s| flow(&format!("h{s}"), "h0", MIB)).collect();
    let (sim, res) = run_flows(&spec, &flows, 1);
    assert_eq!(switch_total(&sim, |c| c.drops), 0, "lossless class dropped");
    assert!(
        switch_total(&sim, |c| c.pause_tx) > 0,
        "the incast must pause"
    );
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    // 28 MiB through h0's 100G port: no faster than that, and no
    // retransmission timeout's worth slower.
    let last = res.iter().map(|r| r.delivered_ps.unwrap()).max().unwrap();
    let ideal_ps = (28 * MIB * 8) as f64 / 100e9 * 1e12;
    let ratio = last as f64 / ideal_ps;
    println!(
        "last byte at {:.1} us, {ratio:.3} x bytes / line rate",
        last as f64 / 1e6
    );
    assert!((1.0..1.1).contains(&ratio), "{ratio}");
}

/// The derived headroom by hand: 100G, 15 ns cable, 1,100 B frames, 600 ns
/// switches on both ends (1.2 us of pipeline, inside the 2.02 us response
/// budget); at 800G, where the response is kept as a time; and with 5 us
/// switches, whose pipeline outlasts the budget.
#[test]
fn derived_headroom_by_hand() {
    use fabriclab_core::net::auto_headroom;
    use fabriclab_core::units::{Rate, Time};
    let pfc = fabriclab_core::wire::PFC_FRAME_WIRE as u64;
    // 100G: 12.5 B/ns x 30 ns = 375 B of cable; + 2,200 + 84 + 25,216.
    let h = auto_headroom(Rate::gbps(100), Time::ns(15), 1100, Time::ns(1200));
    assert_eq!(h, 375 + 2_200 + pfc + 25_216);
    // 800G: 100 B/ns x 30 ns = 3,000 B; response 2,017.28 ns = 201,728 B.
    let h = auto_headroom(Rate::gbps(800), Time::ns(15), 1100, Time::ns(1200));
    assert_eq!(h, 3_000 + 2_200 + pfc + 201_728);
    // 100G, 10 us of pipeline: 125,000 B while the upstream reacts.
    let h = auto_headroom(Rate::gbps(100), Time::ns(15), 1100, Time::ns(10_000));
    assert_eq!(h, 375 + 2_200 + pfc + 125_000);
}

#[test]
fn switch_queues_count_the_frames_they_store() {
    // Three one-packet WRITEs (4 KiB, MTU 4096) reach the leaf at the same
    // instant: one goes straight onto h0's link, two wait. The queue holds
    // their frames, header to FCS: the wire size less preamble, SFD and
    // inter-frame gap (8 + 12 B). Port counters stay in wire bytes.
    use fabriclab_core::wire::{roce_wire_bytes, Ext, IFG, PREAMBLE_SFD};
    let spec = one_switch(4, "[nic]\nroce_mtu = 4096\n[cc]\nalgorithm = \"none\"\n");
    let (sim, res) = run_flows(&spec, &incast(3, 4096), 1);
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    let wire = roce_wire_bytes(4096, Ext::Reth, false) as u64;
    let frame = wire - (PREAMBLE_SFD + IFG) as u64;
    assert_eq!(frame, 4096 + 14 + 20 + 8 + 12 + 16 + 4 + 4);
    let ports = sim.net.port_reports();
    let to_h0 = ports
        .iter()
        .find(|p| !p.node.starts_with('h') && p.peer == "h0")
        .unwrap();
    assert_eq!(to_h0.counters.peak_queue_bytes, 2 * frame);
    assert_eq!(to_h0.counters.tx_bytes, 3 * wire);
}
