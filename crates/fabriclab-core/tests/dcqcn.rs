//! DCQCN on the 15-to-1 incast: how the parameter sets and the two CNP
//! moderation scopes shape the bottleneck queue and the senders' shares.
//!
//! ConnectX moderates CNPs per port (`cnp_scope = "port"`, the `connectx`
//! default; sources in `config/cc.rs` and `docs/dcqcn.md`): one CNP per
//! 4 us for the whole receiving port, so 15 senders get one every ~60 us
//! each, their limiters stay above the PFC-shared rate, and the incast runs
//! as without DCQCN (PFC holds the queue). With per-QP moderation (the
//! DCQCN paper's notification point, and ConnectX-8's per-flow mode) the
//! same ConnectX values collapse every sender to the minimum rate, idle the
//! bottleneck and rebound together; `clamp_tgt_rate = 1` then keeps the
//! queue down (slowly). The DCQCN paper's parameters share fairly.

mod common;
use common::*;
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::Flows;
use fabriclab_core::units::Time;

const MIB: u64 = 1 << 20;

/// One 15-to-1 incast of 1 MiB WRITEs through one leaf.
struct Incast {
    /// Peak depth of the bottleneck queue (leaf0 towards h0), bytes.
    peak: u64,
    /// When each sender's last byte landed, ps.
    delivered: Vec<u64>,
    /// Bytes each sender delivered over the last half of the transfer.
    last_half: Vec<f64>,
    /// That window, ps.
    window: (u64, u64),
    /// CNPs each sender received.
    cnps: Vec<u64>,
}

/// The 15-to-1 incast of 1 MiB WRITEs with `extra` fabric settings, run to
/// its end with telemetry every `sample_us`; the sim and the flows' id.
fn run_incast(extra: &str, sample_us: u64) -> (Sim, u32) {
    let spec = one_switch(16, &format!("{BASE}{extra}"));
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &incast(15, MIB)).unwrap();
    let mut sim = Sim::new(net);
    sim.net.enable_sampling(Time::us(sample_us));
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    (sim, id)
}

fn incast_run(extra: &str) -> Incast {
    let (sim, id) = run_incast(extra, 5);
    let peak = sim
        .net
        .port_between("leaf0", "h0")
        .unwrap()
        .peak_queue_bytes;
    let flows = sim.app::<Flows>(id).unwrap();
    let delivered: Vec<u64> = flows
        .results()
        .iter()
        .map(|r| r.delivered_ps.unwrap())
        .collect();
    // The last half of the transfer, while every sender still has data:
    // from half the completion time of the whole incast until the first
    // sender finishes. Per-sender goodput over it comes from the receiving
    // QPs' in-order bytes, sampled every 5 us.
    let end = *delivered.iter().max().unwrap();
    let first_done = *delivered.iter().min().unwrap();
    let half = end / 2;
    let samples = sim.net.samples();
    let at = |t: u64, qp: u32| {
        samples
            .iter()
            .filter(|s| s.qp == qp && s.time_ps <= t)
            .map(|s| s.rx_bytes)
            .next_back()
            .unwrap_or(0)
    };
    let last_half = (0..15)
        .map(|i| {
            let rx_qp = flows.peer_qp(i).unwrap().0;
            at(first_done, rx_qp).saturating_sub(at(half, rx_qp)) as f64
        })
        .collect();
    let cnps = (0..15)
        .map(|i| sim.net.qp_counters(flows.qp(i).unwrap()).cnps_rx)
        .collect();
    Incast {
        peak,
        delivered,
        last_half,
        window: (half, first_done),
        cnps,
    }
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

const BASE: &str = "[nic]\nroce_mtu = 4096\n";
const NO_CC: &str = "[cc]\nalgorithm = \"none\"\n";
const CONNECTX: &str = "[cc]\nalgorithm = \"dcqcn\"\n";
/// The ConnectX values with one CNP limiter per QP.
const CONNECTX_PER_QP: &str = "[cc]\nalgorithm = \"dcqcn\"\ncnp_scope = \"qp\"\n";

/// Jain's index over the last half of the transfer; a sender that finished
/// before the last half began did not share it at all.
fn fairness(r: &Incast, name: &str) -> f64 {
    let ms = |t: u64| t as f64 / 1e9;
    println!(
        "{name}: peak {} KB, senders done {:.3}..{:.3} ms",
        r.peak / 1000,
        ms(*r.delivered.iter().min().unwrap()),
        ms(*r.delivered.iter().max().unwrap())
    );
    assert!(
        r.window.1 > r.window.0,
        "{name}: a sender finished at {:.3} ms, before the last half began at {:.3} ms: {:?}",
        ms(r.window.1),
        ms(r.window.0),
        r.delivered
    );
    let j = jain(&r.last_half);
    println!(
        "{name}: Jain's index over [{:.3}, {:.3}] ms: {j:.3}",
        ms(r.window.0),
        ms(r.window.1)
    );
    j
}

#[test]
#[ignore = "not what ConnectX defaults do (docs/dcqcn.md): with per-port CNP \
            moderation each of the 15 senders gets one CNP per ~60 us, its limiter \
            stays above its PFC-shared 6.7 Gb/s, and PFC holds the queue at the \
            no-DCQCN peak (pinned by per_port_cnp_moderation_...); with per-QP \
            moderation they collapse to 1 Mb/s and rebound together (pinned by \
            per_qp_cnps_idle_the_bottleneck_...)"]
fn dcqcn_keeps_the_bottleneck_queue_far_below_its_no_cc_peak() {
    let off = incast_run(NO_CC).peak;
    let on = incast_run(CONNECTX).peak;
    println!(
        "bottleneck peak queue: no CC {} KB, DCQCN {} KB",
        off / 1000,
        on / 1000
    );
    assert!(on * 3 < off, "DCQCN peak {on} vs {off}");
}

#[test]
fn connectx_defaults_cut_every_sender_and_keep_the_share_pfc_gives() {
    // Without congestion control PFC's round robin shares the port equally
    // (Jain about 1). With the ConnectX defaults every sender is notified
    // and cut (per-port moderation spreads one CNP per 4 us over the 15),
    // and the cuts must not unbalance that share.
    let none = incast_run(NO_CC);
    assert!(none.cnps.iter().all(|&c| c == 0));
    assert!(fairness(&none, "no CC") >= 0.99);
    let r = incast_run(CONNECTX);
    let j = fairness(&r, "ConnectX defaults");
    println!("CNPs per sender: {:?}", r.cnps);
    assert!(
        r.cnps.iter().all(|&c| c >= 5),
        "CNPs per sender {:?}",
        r.cnps
    );
    assert!(j >= 0.95, "Jain {j}: {:?}", r.last_half);
}

#[test]
fn senders_raised_from_the_minimum_rate_do_not_sit_out_the_old_gap() {
    // At 1 Mb/s a 4 KB packet is followed by a 33 ms gap. Once the timer
    // has raised the rate, the rest of that gap is paid at the new rate;
    // before, the incast took 34 ms instead of about 1.3 ms.
    let r = incast_run(CONNECTX);
    let ideal_ps = (15 * MIB * 8) as f64 / 100e9 * 1e12;
    let last = *r.delivered.iter().max().unwrap() as f64;
    println!(
        "last byte at {:.3} ms, {:.2} x bytes / line rate",
        last / 1e9,
        last / ideal_ps
    );
    assert!(last < 2.0 * ideal_ps, "last byte at {last} ps");
}

#[test]
fn per_qp_cnps_with_clamp_tgt_rate_keep_the_queue_down_and_share_fairly() {
    // Per-QP CNP moderation and clamp_tgt_rate = 1: every cut sets the
    // target rate to the current
    // rate, so the senders recover from the congestion episode gradually
    // instead of all at once. The price: they climb back from the minimum
    // rate by additive and hyper steps, and the incast takes 12.4 ms
    // instead of 1.6 ms with the defaults.
    let off = incast_run(NO_CC).peak;
    let r = incast_run(&format!("{CONNECTX_PER_QP}clamp_target_rate = true\n"));
    let j = fairness(&r, "ConnectX per-QP CNPs, clamp_tgt_rate = 1");
    println!("no CC peak {} KB", off / 1000);
    assert!(r.peak * 3 < off, "DCQCN peak {} vs {off}", r.peak);
    assert!(j >= 0.95, "Jain {j}: {:?}", r.last_half);
}

#[test]
fn the_paper_parameters_share_fairly() {
    let r = incast_run(&format!("{CONNECTX}preset = \"paper\"\n"));
    let j = fairness(&r, "DCQCN paper");
    assert!(j >= 0.95, "Jain {j}: {:?}", r.last_half);
}

#[test]
fn per_qp_cnps_idle_the_bottleneck_then_rebound_together() {
    // The ConnectX values with a CNP limiter per QP, pinned through port
    // telemetry: the first backlog drains with every packet marked, a CNP
    // and a cut every 4 us per sender take all 15 to the 1 Mb/s minimum,
    // the bottleneck link then sits idle with data still to send, and 300
    // us after their last cut the senders' timers recover them together
    // (target rate still at line rate), which refills the queue to nearly
    // the no-DCQCN peak.
    let off = incast_run(NO_CC).peak;
    let (sim, id) = run_incast(CONNECTX_PER_QP, 10);
    let first_done = sim
        .app::<Flows>(id)
        .unwrap()
        .results()
        .iter()
        .map(|r| r.delivered_ps.unwrap())
        .min()
        .unwrap();
    let rows = port_series(&sim.net, "leaf0", "h0");
    // Idle 10 us periods (under one frame sent) before any sender is done.
    let idle: Vec<u64> = rows
        .windows(2)
        .filter(|w| w[1].time_ps < first_done && w[1].tx_bytes - w[0].tx_bytes < 4200)
        .map(|w| w[0].time_ps / 1_000_000)
        .collect();
    let first_peak = rows
        .iter()
        .filter(|s| s.time_ps <= 100_000_000)
        .map(|s| s.queue_bytes)
        .max()
        .unwrap();
    let idle_end = *idle.last().unwrap_or(&0) * 1_000_000;
    let rebound = rows
        .iter()
        .filter(|s| s.time_ps > idle_end)
        .map(|s| s.queue_bytes)
        .max()
        .unwrap();
    println!(
        "first peak {} KB (within 100 us), idle 10-us periods at {:?} us, rebound peak {} KB, \
         no-CC peak {} KB",
        first_peak / 1000,
        idle,
        rebound / 1000,
        off / 1000
    );
    assert!(first_peak * 3 < off, "first peak {first_peak} vs {off}");
    assert!(idle.len() >= 20, "idle periods {idle:?}");
    assert!(rebound * 10 >= off * 9, "rebound {rebound} vs {off}");
}

/// ConnectX's per-port CNP moderation, by hand: the receiving port sends
/// at most one CNP per 4 us whichever QP the marked packet was for, so over
/// a span T it sends at most T / 4 us + 1; spread over 15 senders that is
/// too little feedback to pull their limiters below the PFC-shared rate:
/// the bottleneck never idles, the queue reaches the no-DCQCN peak (PFC
/// holds it) and the incast ends at about bytes / line rate.
#[test]
fn per_port_cnp_moderation_spaces_the_ports_cnps_and_leaves_the_incast_to_pfc() {
    let (sim, id) = run_incast(CONNECTX, 10);
    let flows = sim.app::<Flows>(id).unwrap();
    let end = flows
        .results()
        .iter()
        .map(|r| r.delivered_ps.unwrap())
        .max()
        .unwrap();
    let rx: Vec<_> = (0..15).map(|i| flows.peer_qp(i).unwrap()).collect();
    let sent: u64 = rx.iter().map(|&q| sim.net.qp_counters(q).cnps_tx).sum();
    let per_qp: Vec<u64> = rx.iter().map(|&q| sim.net.qp_counters(q).cnps_tx).collect();
    let most = end / 4_000_000 + 1;
    println!(
        "CNPs from h0: {sent} (at most {most} in {} us), per QP {per_qp:?}",
        end / 1_000_000
    );
    assert!(sent <= most, "{sent} > {most}");
    // Every sender got some, and the port was near its limit while marked.
    assert!(per_qp.iter().all(|&n| n > 0), "{per_qp:?}");
    assert!(sent * 2 > most, "{sent} of {most}");
    // The incast: no idle bottleneck, the no-DCQCN peak, line-rate end.
    let off = incast_run(NO_CC).peak;
    let peak = sim
        .net
        .port_between("leaf0", "h0")
        .unwrap()
        .peak_queue_bytes;
    assert!(peak * 10 >= off * 9, "peak {peak} vs no CC {off}");
    let ideal_ps = (15 * MIB * 8) as f64 / 100e9 * 1e12;
    assert!((end as f64) < 1.05 * ideal_ps, "{end} ps vs {ideal_ps}");
    let rows = port_series(&sim.net, "leaf0", "h0");
    let idle = rows
        .windows(2)
        .filter(|w| w[1].time_ps < end && w[1].tx_bytes - w[0].tx_bytes < 4200)
        .count();
    assert_eq!(idle, 0);
}

/// Lossy RoCE (PFC off) with DCQCN: the default ECN priorities are the
/// lossless ones, of which there are none, so DCQCN's data queue used to go
/// unmarked and DCQCN silently did nothing. The RoCE data priority is now
/// marked by default whenever DCQCN runs; an explicit empty list still
/// turns marking off.
#[test]
fn lossy_roce_with_dcqcn_still_marks_its_data_queue() {
    let marks_and_cnps = |extra: &str| {
        let (sim, id) = run_incast(&format!("[pfc]\nenabled = false\n{CONNECTX}{extra}"), 10);
        let flows = sim.app::<Flows>(id).unwrap();
        let cnps: u64 = (0..15)
            .map(|i| sim.net.qp_counters(flows.peer_qp(i).unwrap()).cnps_tx)
            .sum();
        let marks = sim.net.port_between("leaf0", "h0").unwrap().ecn_marks;
        (marks, cnps)
    };
    let (marks, cnps) = marks_and_cnps("");
    assert!(marks > 0 && cnps > 0, "marks {marks}, CNPs {cnps}");
    assert_eq!(marks_and_cnps("[ecn]\npriorities = []\n"), (0, 0));
}

/// `cnp_on_ack`: the ns-3 HPCC simulator's notification point, a CNP flag
/// on the ACK of the marked packet instead of a CNP packet. With an ACK per
/// packet and a CNP per marked packet, the receiver sends exactly one
/// packet per data packet (its ACKs), every flag reaches its sender, and
/// DCQCN still holds the incast's queue down as with CNP packets.
#[test]
fn cnps_carried_on_acks_add_no_packets_and_still_cut_the_senders() {
    let data_packets = 15 * MIB / 4096;
    let run = |on_ack: bool| {
        let spec = one_switch(
            16,
            &format!(
                "[nic]\nroce_mtu = 4096\nack_every_packets = 1\n\
                 [cc]\nalgorithm = \"dcqcn\"\npreset = \"paper\"\n\
                 cnp_interval_us = 0\ncnp_on_ack = {on_ack}\n"
            ),
        );
        let (sim, id) = {
            let net = Net::new(&spec, 1).unwrap();
            let app = Flows::new(&net, &incast(15, MIB)).unwrap();
            let mut sim = Sim::new(net);
            let id = sim.add_app(Box::new(app));
            assert_eq!(sim.run(None), Outcome::Finished);
            (sim, id)
        };
        let flows = sim.app::<Flows>(id).unwrap();
        let (mut tx, mut rx) = (0, 0);
        for i in 0..15 {
            tx += sim.net.qp_counters(flows.peer_qp(i).unwrap()).cnps_tx;
            rx += sim.net.qp_counters(flows.qp(i).unwrap()).cnps_rx;
        }
        let h0_sent = sim.net.port_between("h0", "leaf0").unwrap().tx_packets;
        let peak = sim
            .net
            .port_between("leaf0", "h0")
            .unwrap()
            .peak_queue_bytes;
        (tx, rx, h0_sent, peak)
    };
    let (tx, rx, sent, peak) = run(true);
    assert!(tx > 100, "{tx} CNPs");
    assert_eq!(tx, rx, "every flag reaches its sender");
    assert_eq!(sent, data_packets, "ACKs only, one per data packet");
    let (tx_pkt, rx_pkt, sent_pkt, peak_pkt) = run(false);
    assert_eq!(tx_pkt, rx_pkt);
    assert_eq!(sent_pkt, data_packets + tx_pkt, "ACKs and CNP packets");
    let no_cc = incast_run(NO_CC).peak;
    for p in [peak, peak_pkt] {
        assert!(p * 2 < no_cc, "peak {p} vs no CC {no_cc}");
    }
}
