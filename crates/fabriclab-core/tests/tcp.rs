//! TCP on the simulated fabric: wire arithmetic and latency by hand,
//! goodput, slow start, fast retransmit versus timeout, fairness, DCTCP
//! against CUBIC at a shared bottleneck, exactly-once in-order delivery,
//! determinism, and TCP in a lossy class beside lossless RDMA.

mod common;
mod tcp_support;

use common::switch_total;
use fabriclab_core::config::{FabricSpec, TcpCc};
use fabriclab_core::sim::Outcome;
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{tcp_goodput_gbps, tcp_wire_bytes};
use tcp_support::*;

const MSS: u64 = 1448;

/// One switch, `hosts` hosts at 100G with `delay_ns` cables, plus TOML.
fn fabric(hosts: u32, delay_ns: u64, extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = {hosts}\n\
         host_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = {delay_ns}\n{extra}"
    ))
    .unwrap()
}

#[test]
fn one_full_segment_takes_123_04_ns_on_a_100g_wire() {
    // (1448 + 90) B x 8 / 100 Gb/s = 123.04 ns.
    assert_eq!(tcp_wire_bytes(1448, false), 1538);
    assert_eq!(Rate::gbps(100).tx_time(1538), Time::ps(123_040));
}

#[test]
fn one_way_latency_of_a_segment_is_the_sum_of_its_parts() {
    // Store-and-forward through one switch: stack transmit latency, two
    // serialisations and two cables, the switch latency, stack receive
    // latency, to the picosecond.
    let spec = fabric(
        2,
        1000,
        "[switch]\nforwarding = \"store_and_forward\"\nlatency_ns = 450\n\
         [tcp]\ntx_latency_ns = 1500\nrx_latency_ns = 700\n",
    );
    for payload in [100u64, MSS] {
        let (sim, id, outcome) = run_bulk(
            &spec,
            BulkApp::new(vec![bulk("h0", "h1", payload, None)]),
            1,
            None,
        );
        assert_eq!(outcome, Outcome::Finished);
        let ser = Rate::gbps(100).tx_time(tcp_wire_bytes(payload as u32, false) as u64);
        let want = Time::ns(1500 + 2 * 1000 + 450 + 700) + ser + ser;
        let got = app(&sim, id).logs[0].finished.unwrap();
        assert_eq!(got, want, "{payload} B");
    }
}

#[test]
fn a_single_flow_on_an_idle_100g_link_reaches_the_tcp_goodput() {
    let spec = fabric(2, 1000, "");
    let bytes = 120 << 20;
    let (sim, id, outcome) = run_bulk(
        &spec,
        BulkApp::new(vec![bulk("h0", "h1", bytes, None)]),
        1,
        None,
    );
    assert_eq!(outcome, Outcome::Finished);
    let log = &app(&sim, id).logs[0];
    // Rate over the second half of the transfer (well after slow start).
    let end = log.finished.unwrap();
    let mid = Time(end.as_ps() / 2);
    let moved = log.delivered - delivered_at(log, mid);
    let gbps = moved as f64 * 8.0 / (end - mid).as_secs_f64() / 1e9;
    let want = tcp_goodput_gbps(100.0, 1500, false);
    let c = counters(&sim, id, 0);
    println!(
        "goodput {gbps:.3} Gb/s (analytic {want:.3}), srtt {} ns, cwnd {} B, retx {}",
        c.srtt_ns, c.cwnd_bytes, c.retx_segments
    );
    assert!((gbps - want).abs() / want < 0.02, "{gbps} vs {want}");
    assert_eq!(c.retx_segments, 0);
    assert_eq!(log.delivered, bytes);
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    // 50 us cables: a ~200 us RTT, long enough for the rounds to stand apart.
    let spec = fabric(2, 50_000, "");
    let mut f = bulk("h0", "h1", 8 << 20, Some(TcpCc::Reno));
    f.trace_cwnd = true;
    let (sim, id, _) = run_bulk(&spec, BulkApp::new(vec![f]), 1, None);
    let conn = app(&sim, id).logs[0].conn.unwrap();
    let trace = sim.net.tcp_cwnd_trace(conn);
    // Group the window changes into rounds (a gap of more than 50 us).
    let mut rounds: Vec<u32> = Vec::new();
    for w in trace.windows(2) {
        if w[1].0 - w[0].0 > Time::us(50) {
            rounds.push(w[0].1);
        }
    }
    println!("window at the end of each round: {rounds:?}");
    assert_eq!(&rounds[..6], &[10, 20, 40, 80, 160, 320]);
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_not_by_a_timeout() {
    let spec = fabric(2, 1000, "");
    for cc in [TcpCc::Reno, TcpCc::Cubic, TcpCc::Dctcp] {
        let mut f = bulk("h0", "h1", 10_000 * MSS, Some(cc));
        f.lose = vec![500 * MSS];
        let (sim, id, outcome) = run_bulk(&spec, BulkApp::new(vec![f]), 1, None);
        assert_eq!(outcome, Outcome::Finished);
        let c = counters(&sim, id, 0);
        let log = &app(&sim, id).logs[0];
        println!(
            "{cc:?}: fast retransmits {}, timeouts {}, retransmitted {}, dupacks {}, finished at {}",
            c.fast_retransmits,
            c.timeouts,
            c.retx_segments,
            c.dupacks_rx,
            log.finished.unwrap()
        );
        assert_eq!(c.fast_retransmits, 1, "{cc:?}");
        assert_eq!(c.timeouts, 0, "{cc:?}");
        assert_eq!(
            c.retx_segments, 1,
            "{cc:?}: only the lost segment is resent"
        );
        assert!(c.dupacks_rx >= 3);
        assert!(log.in_order && log.delivered == 10_000 * MSS);
        assert!(log.finished.unwrap() < Time::ms(10), "no timeout wait");
    }
}

#[test]
fn a_tail_loss_waits_for_a_timeout_of_at_least_200_ms() {
    let spec = fabric(2, 1000, "");
    let segs = 400;
    let mut f = bulk("h0", "h1", segs * MSS, None);
    f.lose = vec![(segs - 1) * MSS];
    let (sim, id, outcome) = run_bulk(&spec, BulkApp::new(vec![f]), 1, None);
    assert_eq!(outcome, Outcome::Finished);
    let c = counters(&sim, id, 0);
    let log = &app(&sim, id).logs[0];
    let last_but_one = log.deliveries[log.deliveries.len() - 2].0;
    let finished = log.finished.unwrap();
    println!(
        "tail loss: timeouts {}, fast retransmits {}, gap {} (srtt {} ns)",
        c.timeouts,
        c.fast_retransmits,
        finished - last_but_one,
        c.srtt_ns
    );
    assert_eq!(c.timeouts, 1);
    assert_eq!(c.fast_retransmits, 0);
    assert_eq!(c.retx_segments, 1);
    assert!(finished - last_but_one >= Time::ms(200));
    assert!(finished < Time::ms(300));
    assert!(log.in_order);
}

/// Four flows into h0 through one 100G port, for `ms` of simulated time.
fn incast_run(cc: TcpCc, extra: &str, ms: u64) -> (fabriclab_core::sim::Sim, u32) {
    let spec = fabric(5, 1000, extra);
    let flows = (1..=4)
        .map(|i| bulk(&format!("h{i}"), "h0", 1 << 40, Some(cc)))
        .collect();
    let mut a = BulkApp::new(flows);
    a.queue = Some(("leaf0".into(), "h0".into(), Time::us(5)));
    let (sim, id, outcome) = run_bulk(&spec, a, 3, Some(Time::ms(ms)));
    assert_eq!(outcome, Outcome::TimeLimit);
    (sim, id)
}

#[test]
fn flows_through_one_bottleneck_share_it_fairly() {
    for cc in [TcpCc::Reno, TcpCc::Cubic] {
        let ms = 60;
        let (sim, id, _) = {
            let (s, i) = incast_run(cc, "[switch]\nbuffer_bytes = 2000000\n", ms);
            (s, i, ())
        };
        let a = app(&sim, id);
        let (t0, t1) = (Time::ms(ms / 3), Time::ms(ms));
        let rates: Vec<f64> = a
            .logs
            .iter()
            .map(|l| {
                (delivered_at(l, t1) - delivered_at(l, t0)) as f64 * 8.0
                    / 1e9
                    / (t1 - t0).as_secs_f64()
            })
            .collect();
        let total: f64 = rates.iter().sum();
        let j = jain(&rates);
        let retx: u64 = (0..4).map(|i| counters(&sim, id, i).retx_segments).sum();
        let rtos: u64 = (0..4).map(|i| counters(&sim, id, i).timeouts).sum();
        println!(
            "{cc:?}: rates {rates:.2?} Gb/s, sum {total:.2}, Jain {j:.4}, retx {retx}, rtos {rtos}"
        );
        assert!(j >= 0.9, "{cc:?}: Jain {j}");
        assert!(
            total > 0.9 * tcp_goodput_gbps(100.0, 1500, false),
            "{cc:?}: {total}"
        );
        assert!(retx > 0, "a tail-drop bottleneck loses packets");
    }
}

#[test]
fn dctcp_holds_the_queue_near_k_without_loss_where_cubic_fills_the_buffer() {
    let k: u64 = 100_000;
    let ecn = format!(
        "[ecn]\nenabled = true\npriorities = [0, 3]\nkmin_bytes = {k}\nkmax_bytes = {k}\npmax = 1.0\n"
    );
    let ms = 20;
    let (dctcp, d_id) = incast_run(TcpCc::Dctcp, &ecn, ms);
    let (cubic, c_id) = incast_run(TcpCc::Cubic, &ecn, ms);
    let stats = |sim: &fabriclab_core::sim::Sim, id: u32| {
        let s: Vec<u64> = app(sim, id)
            .queue_samples
            .iter()
            .filter(|&&(t, _)| t > Time::ms(5))
            .map(|&(_, q)| q)
            .collect();
        let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
        (
            mean,
            *s.iter().max().unwrap(),
            switch_total(sim, |c| c.drops),
        )
    };
    let (d_mean, d_max, d_drops) = stats(&dctcp, d_id);
    let (c_mean, c_max, c_drops) = stats(&cubic, c_id);
    let marks = switch_total(&dctcp, |c| c.ecn_marks);
    let echoes: u64 = (0..4).map(|i| counters(&dctcp, d_id, i).ecn_echoes).sum();
    println!(
        "DCTCP: queue mean {d_mean:.0} B, max {d_max} B, drops {d_drops}, marks {marks}, echoes {echoes}; \
         CUBIC: queue mean {c_mean:.0} B, max {c_max} B, drops {c_drops}"
    );
    assert_eq!(d_drops, 0, "DCTCP must not overflow the buffer");
    assert!(marks > 0 && echoes > 0);
    assert!(
        d_mean > 0.5 * k as f64 && d_mean < 1.5 * k as f64,
        "{d_mean}"
    );
    assert!(d_max < 3 * k, "{d_max}");
    assert!(
        c_drops > 0,
        "CUBIC is not ECN-capable: it fills the buffer and drops"
    );
    assert!(c_max > 5 * k, "{c_max}");
}

#[test]
fn a_lossy_run_delivers_every_byte_exactly_once_and_in_order() {
    // A small buffer and an incast of six flows: many drops, retransmits.
    let spec = fabric(7, 1000, "[switch]\nbuffer_bytes = 600000\n");
    let bytes = 6 << 20;
    let flows = (1..=6)
        .map(|i| bulk(&format!("h{i}"), "h0", bytes + i * 777, Some(TcpCc::Reno)))
        .collect();
    let (sim, id, outcome) = run_bulk(&spec, BulkApp::new(flows), 5, None);
    assert_eq!(outcome, Outcome::Finished);
    let drops = switch_total(&sim, |c| c.drops);
    let mut retx = 0;
    for (i, log) in app(&sim, id).logs.iter().enumerate() {
        let c = counters(&sim, id, i);
        retx += c.retx_segments;
        assert!(log.in_order, "flow {i} got data out of order");
        assert_eq!(log.delivered, log.written, "flow {i}");
        assert_eq!(c.rx_bytes, c.app_written_bytes, "flow {i}");
        assert_eq!(c.acked_bytes, c.app_written_bytes, "flow {i}");
    }
    println!("drops {drops}, retransmitted segments {retx}");
    assert!(drops > 0 && retx > 0, "the run must be lossy");
    assert_eq!(sim.net.packets_in_flight(), 0);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let spec = fabric(5, 1000, "[switch]\nbuffer_bytes = 1000000\n");
    let run = |seed| {
        let flows = (1..=4)
            .map(|i| bulk(&format!("h{i}"), "h0", 4 << 20, Some(TcpCc::Cubic)))
            .collect();
        let (sim, _, _) = run_bulk(&spec, BulkApp::new(flows), seed, None);
        (
            sim.net.now(),
            sim.net.events_processed(),
            format!("{:?}", sim.net.tcp_reports()),
        )
    };
    assert_eq!(run(9), run(9));
}

/// RDMA h1 -> h0 (lossless priority 3, repeating 1 MiB WRITEs in the
/// background) and TCP h2, h3 -> h0 in priority `tcp_prio`, through one
/// switch with a 2 MB buffer.
fn beside_rdma(tcp_prio: u8) -> (fabriclab_core::sim::Sim, u32, u32) {
    use fabriclab_core::net::Net;
    use fabriclab_core::sim::Sim;
    use fabriclab_core::traffic::flows::Flows;
    let spec = fabric(
        4,
        1000,
        &format!("[switch]\nbuffer_bytes = 2000000\n[tcp]\npriority = {tcp_prio}\n"),
    );
    let net = Net::new(&spec, 1).unwrap();
    let mut rdma = common::flow("h1", "h0", 1 << 20);
    rdma.repeat = true;
    let rdma = Flows::new(&net, &[rdma]).unwrap();
    let tcp = BulkApp::new(vec![
        bulk("h2", "h0", 30 << 20, Some(TcpCc::Cubic)),
        bulk("h3", "h0", 30 << 20, Some(TcpCc::Cubic)),
    ]);
    let mut sim = Sim::new(net);
    let r = sim.add_app(Box::new(rdma));
    let t = sim.add_app(Box::new(tcp));
    // Slow start overshoots into the small buffer; NewReno without SACK may
    // need a timeout when a retransmission is lost too.
    assert_eq!(sim.run(Some(Time::ms(1000))), Outcome::Finished);
    (sim, r, t)
}

#[test]
fn tcp_in_a_lossy_class_beside_lossless_rdma_drops_only_tcp() {
    let (sim, r, t) = beside_rdma(0);
    let drops = switch_total(&sim, |c| c.drops);
    let pauses = switch_total(&sim, |c| c.pause_tx);
    let tcp_retx: u64 = (0..2).map(|i| counters(&sim, t, i).retx_segments).sum();
    let rdma_msgs = sim
        .app::<fabriclab_core::traffic::flows::Flows>(r)
        .unwrap()
        .results()[0]
        .messages;
    println!("drops {drops}, pause frames {pauses}, TCP retransmits {tcp_retx}, RDMA messages {rdma_msgs}");
    for q in sim.net.qp_reports() {
        let c = &q.counters;
        assert_eq!(c.retx_packets + c.timeouts + c.naks_rx + c.rx_discarded, 0);
    }
    assert!(drops > 0, "the lossy TCP class is tail-dropped");
    assert!(tcp_retx > 0, "TCP repairs its drops");
    assert!(rdma_msgs > 10, "RDMA keeps moving");
    for log in &app(&sim, t).logs {
        assert!(log.in_order && log.delivered == 30 << 20);
    }
}

#[test]
fn tcp_in_a_pfc_priority_is_paused_and_never_dropped() {
    let (sim, _, t) = beside_rdma(3);
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
    assert!(switch_total(&sim, |c| c.pause_tx) > 0);
    for i in 0..2 {
        assert_eq!(counters(&sim, t, i).retx_segments, 0);
    }
}

#[test]
fn ecmp_spreads_tcp_flows_over_the_spines_by_their_ports() {
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n",
    )
    .unwrap();
    let flows = (0..32).map(|_| bulk("h0", "h2", 256 << 10, None)).collect();
    let (sim, _, outcome) = run_bulk(&spec, BulkApp::new(flows), 1, None);
    assert_eq!(outcome, Outcome::Finished);
    let up: Vec<u64> = ["spine0", "spine1"]
        .iter()
        .map(|s| sim.net.port_between("leaf0", s).unwrap().tx_bytes)
        .collect();
    println!("leaf0 uplink bytes: {up:?}");
    // 32 flows of 256 KiB: each spine carries a fair part (binomial).
    assert!(up.iter().all(|&b| b > 2 << 20), "{up:?}");
}
