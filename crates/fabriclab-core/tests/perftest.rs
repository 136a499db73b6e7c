//! perftest on simulated fabrics: goodput, the HEPS seed figures, and
//! latency equal to the sum of its parts, to the picosecond.

mod common;
use common::*;
use fabriclab_core::config::{preset, FabricSpec};
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{roce_wire_bytes, write_goodput_gbps, Ext};

fn opts(test: Test, client: &str, server: &str) -> Options {
    Options {
        test,
        client: client.into(),
        server: server.into(),
        iters: Some(500),
        report_gbits: true,
        ..Default::default()
    }
}

#[test]
fn write_bw_64k_reaches_the_analytic_goodput_of_the_mtu_within_1_percent() {
    let fabric = preset("leaf-spine").unwrap();
    for mtu in [1024u32, 4096] {
        let o = Options {
            mtu: Some(mtu),
            ..opts(Test::WriteBw, "h0", "h4")
        };
        let r = perftest::run(&fabric, &o, 1).unwrap();
        let got = r.bw[0].bw_avg_gbps;
        let want = write_goodput_gbps(100.0, mtu, false);
        println!("MTU {mtu}: {got:.3} Gb/s, analytic {want:.3}");
        assert!(
            (got - want).abs() / want < 0.01,
            "MTU {mtu}: {got} vs {want}"
        );
        assert!(r.bw[0].bw_peak >= r.bw[0].bw_avg * 0.999);
    }
}

#[test]
fn heps_reproduces_the_papers_92_gbps_and_3_72_us() {
    let fabric = preset("heps").unwrap();
    let bw = perftest::run(&fabric, &opts(Test::WriteBw, "h0", "h4"), 1).unwrap();
    let gbps = bw.bw[0].bw_avg;
    assert!(
        (gbps - 92.0).abs() / 92.0 < 0.03,
        "ib_write_bw {gbps} Gb/s vs 92"
    );
    let lat = perftest::run(&fabric, &opts(Test::WriteLat, "h0", "h4"), 1).unwrap();
    let us = lat.lat[0].t_avg_us;
    // Calibrated (the NIC latencies were set from it): the model must give
    // it to the precision it is published at.
    assert!((us - 3.72).abs() < 0.005, "ib_write_lat {us} us vs 3.72");
    println!("HEPS: ib_write_bw {gbps:.2} Gb/s, ib_write_lat {us:.3} us");
}

/// 2-byte one-way latency by hand: NIC send latency, then per link the
/// serialisation and propagation, per switch its latency, then NIC receive
/// latency. Store-and-forward serialises the frame on every link.
fn by_hand_store_and_forward(nic_tx: Time, nic_rx: Time, links: &[(Rate, Time)], sw: Time) -> Time {
    let wire = roce_wire_bytes(2, Ext::Reth, false) as u64;
    let mut t = nic_tx + nic_rx;
    for (i, &(rate, prop)) in links.iter().enumerate() {
        t += rate.tx_time(wire) + prop;
        if i + 1 < links.len() {
            t += sw;
        }
    }
    t
}

fn explicit(forwarding: &str, hops: usize) -> FabricSpec {
    // A chain: a - s0 - s1 - ... - b with different delays per link.
    let mut nodes = String::from(
        "[[topology.nodes]]\nname = \"a\"\nkind = \"host\"\n[[topology.nodes]]\nname = \"b\"\nkind = \"host\"\n",
    );
    for i in 0..hops {
        nodes += &format!("[[topology.nodes]]\nname = \"s{i}\"\nkind = \"switch\"\n");
    }
    let mut chain = vec!["a".to_string()];
    chain.extend((0..hops).map(|i| format!("s{i}")));
    chain.push("b".into());
    let mut links = String::new();
    for (i, w) in chain.windows(2).enumerate() {
        links += &format!(
            "[[topology.links]]\na = \"{}\"\nb = \"{}\"\ngbps = 100\ndelay_ns = {}\n",
            w[0],
            w[1],
            10 + 37 * i
        );
    }
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"explicit\"\n{nodes}{links}\n[switch]\nlatency_ns = 450\nforwarding = \"{forwarding}\"\n\
         [nic]\ntx_latency_ns = 600\nrx_latency_ns = 400\n"
    ))
    .unwrap()
}

#[test]
fn write_lat_2b_equals_the_sum_of_its_parts_over_1_and_3_hops() {
    for hops in [1usize, 3] {
        let fabric = explicit("store_and_forward", hops);
        let r = perftest::run(&fabric, &opts(Test::WriteLat, "a", "b"), 1).unwrap();
        let links: Vec<(Rate, Time)> = (0..=hops)
            .map(|i| (Rate::gbps(100), Time::ns(10 + 37 * i as u64)))
            .collect();
        let want = by_hand_store_and_forward(Time::ns(600), Time::ns(400), &links, Time::ns(450));
        // perftest halves the round trip; every sample is identical here.
        let got_ps = (r.lat[0].t_typical_us * 2e6).round() as u64;
        assert_eq!(got_ps, 2 * want.as_ps(), "{hops} switch(es)");
        assert_eq!(
            r.lat[0].t_min_us, r.lat[0].t_max_us,
            "an idle fabric has no jitter"
        );
    }
}

#[test]
fn cut_through_latency_serialises_once_plus_a_header_per_switch() {
    let hops = 3;
    let fabric = explicit("cut_through", hops);
    let r = perftest::run(&fabric, &opts(Test::WriteLat, "a", "b"), 1).unwrap();
    let rate = Rate::gbps(100);
    let wire = roce_wire_bytes(2, Ext::Reth, false) as u64;
    let props: u64 = (0..=hops as u64).map(|i| 10 + 37 * i).sum();
    let want = Time::ns(600 + 400 + props)
        + rate.tx_time(wire)
        + Time(hops as u64 * (Time::ns(450) + rate.tx_time(64)).as_ps());
    let got_ps = (r.lat[0].t_typical_us * 2e6).round() as u64;
    assert_eq!(got_ps, 2 * want.as_ps());
}

#[test]
fn read_lat_is_a_full_round_trip_and_slower_than_write_lat() {
    let fabric = preset("heps").unwrap();
    let w = perftest::run(&fabric, &opts(Test::WriteLat, "h0", "h4"), 1).unwrap();
    let r = perftest::run(&fabric, &opts(Test::ReadLat, "h0", "h4"), 1).unwrap();
    let s = perftest::run(&fabric, &opts(Test::SendLat, "h0", "h4"), 1).unwrap();
    assert!(r.lat[0].t_avg_us > 1.8 * w.lat[0].t_avg_us);
    assert!((s.lat[0].t_avg_us - w.lat[0].t_avg_us).abs() < 0.01);
}

#[test]
fn read_and_send_bw_approach_line_rate_and_bidirectional_doubles() {
    let fabric = preset("leaf-spine").unwrap();
    let want = write_goodput_gbps(100.0, 4096, false);
    for t in [Test::ReadBw, Test::SendBw] {
        let r = perftest::run(&fabric, &opts(t, "h0", "h4"), 1).unwrap();
        let g = r.bw[0].bw_avg_gbps;
        assert!((g - want).abs() / want < 0.02, "{t:?}: {g}");
    }
    let o = Options {
        bidirectional: true,
        ..opts(Test::WriteBw, "h0", "h4")
    };
    let r = perftest::run(&fabric, &o, 1).unwrap();
    assert!(
        (r.bw[0].bw_avg_gbps - 2.0 * want).abs() / (2.0 * want) < 0.02,
        "{}",
        r.bw[0].bw_avg_gbps
    );
}

#[test]
fn an_incast_onto_the_server_raises_its_latency_without_congestion_control() {
    // PFC only: the incast fills the server's leaf port queue, and the
    // ping-pong waits behind it.
    let mut fabric = preset("heps").unwrap();
    fabric.cc.algorithm = fabriclab_core::config::CcAlgorithm::None;
    let quiet = perftest::run(&fabric, &opts(Test::WriteLat, "h0", "h4"), 1).unwrap();
    let mut o = opts(Test::WriteLat, "h0", "h4");
    o.background = (8..16)
        .map(|i| {
            let mut f = flow(&format!("h{i}"), "h4", 1 << 20);
            f.repeat = true;
            f
        })
        .collect();
    let loaded = perftest::run(&fabric, &o, 1).unwrap();
    println!(
        "quiet {:.2} us, under incast {:.2} us",
        quiet.lat[0].t_avg_us, loaded.lat[0].t_avg_us
    );
    assert!(loaded.lat[0].t_avg_us > quiet.lat[0].t_avg_us * 1.5);
    assert!(loaded.lat[0].t_max_us > loaded.lat[0].t_min_us);
}

#[test]
fn a_short_duration_run_stays_under_the_links_goodput() {
    // -D counts the messages completed in the middle half of the run. Over
    // 50 us, 64 KiB messages at 100G take 5.66 us each, so counting whole
    // messages against the window's length read 94.4 Gb/s (9 in 50 us),
    // above what the link carries; divided by the time between the
    // completions that bound them, it stays at the goodput.
    let fabric = preset("leaf-spine").unwrap();
    let want = write_goodput_gbps(100.0, 1024, false);
    for d in [0.0001, 0.00013, 0.001] {
        let o = Options {
            duration_s: Some(d),
            mtu: Some(1024),
            ..opts(Test::WriteBw, "h0", "h4")
        };
        let got = perftest::run(&fabric, &o, 1).unwrap().bw[0].bw_avg_gbps;
        assert!(
            got <= want * 1.0005 && got > want * 0.99,
            "-D {d}: {got} vs {want}"
        );
    }
}

#[test]
fn small_messages_leave_at_one_per_post_send_ns_from_the_posting_thread() {
    // perftest posts from one thread: 2 B WRITEs leave one per
    // nic.post_send_ns (194 ns, 5.15 Mpps), on one QP or four; the run
    // lasts n - 1 post gaps plus the last message's round trip (7 us
    // between heps's leaves, where ib_write_lat reads 3.72 us one way). Without the limit the 128-deep window over the
    // round trip bounded one QP at 40.76 Mpps, 6-8x the 4.0-6.9 Mpps
    // published for ConnectX NICs.
    let mut fabric = preset("heps").unwrap();
    let gap_us = fabric.nic.post_send_ns / 1e3;
    assert_eq!(fabric.nic.post_send_ns, 194.0);
    let o = |qps| Options {
        size: Some(2),
        qps,
        iters: Some(5000),
        ..opts(Test::WriteBw, "h0", "h4")
    };
    for qps in [1u32, 4] {
        let r = perftest::run(&fabric, &o(qps), 1).unwrap();
        let n = 5000.0 * qps as f64;
        let rate = r.bw[0].msg_rate_mpps;
        let (hi, lo) = (n / ((n - 1.0) * gap_us), n / ((n - 1.0) * gap_us + 10.0));
        println!("{qps} QP(s): {rate:.4} Mpps (by hand {lo:.4}-{hi:.4})");
        assert!(rate < hi && rate > lo, "{qps} QPs: {rate}");
    }
    // At 64 KiB the link is the limit, as before.
    let big = perftest::run(
        &fabric,
        &Options {
            size: Some(65536),
            ..o(1)
        },
        1,
    )
    .unwrap();
    let goodput = write_goodput_gbps(100.0, fabric.nic.roce_mtu, false);
    let got = big.bw[0].bw_avg_gbps;
    assert!((got - goodput).abs() / goodput < 0.01, "{got} vs {goodput}");
    // With the limit off the window binds: 128 messages per round trip
    // of about 7 us, some 18 Mpps.
    fabric.nic.post_send_ns = 0.0;
    let r = perftest::run(&fabric, &o(1), 1).unwrap();
    let rate = r.bw[0].msg_rate_mpps;
    assert!(rate > 15.0 && rate < 128.0 / 6.0, "{rate}");
}
