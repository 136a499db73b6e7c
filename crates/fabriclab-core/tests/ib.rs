//! InfiniBand link layer: IB overheads in latency and bandwidth to the
//! picosecond, credit-based flow control against hand arithmetic (a slow
//! receiver stops its upstream port exactly when the credits run out),
//! lossless incasts, congestion spreading by credit starvation, and
//! repeatable runs. Routing and congestion control are in `ib_routing_cc.rs`,
//! the calibrated presets and MPI in `ib_presets.rs`.

mod common;
use common::*;
use fabriclab_core::config::{CcAlgorithm, FabricSpec};
use fabriclab_core::net::Net;
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::report;
use fabriclab_core::sim::Sim;
use fabriclab_core::traffic::flows::Flows;
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{ib_credits, ib_wire_bytes, ib_write_goodput_gbps, Ext, IB_FCP_BYTES};

/// A leaf-spine InfiniBand fabric at 100G with extra TOML appended.
fn ib_leaf_spine(spines: u32, leaves: u32, hpl: u32, extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n[topology]\nkind = \"leaf_spine\"\nspines = {spines}\n\
         leaves = {leaves}\nhosts_per_leaf = {hpl}\nhost_link_gbps = 100\nuplink_gbps = 100\n{extra}"
    ))
    .unwrap()
}

fn opts(test: Test, client: &str, server: &str) -> Options {
    Options {
        test,
        client: client.into(),
        server: server.into(),
        iters: Some(300),
        report_gbits: true,
        ..Default::default()
    }
}

#[test]
fn an_ib_fabric_turns_the_ethernet_sections_off_and_round_trips() {
    let spec = ib_leaf_spine(2, 2, 2, "");
    assert!(spec.is_infiniband());
    assert!(!spec.pfc.enabled && !spec.ecn.enabled);
    assert_eq!(spec.cc.algorithm, CcAlgorithm::None);
    assert_eq!(spec.switch.latency_ns, 100.0);
    assert_eq!(spec.ib_spec().mtu, 4096);
    let again = FabricSpec::from_toml(&spec.to_toml()).unwrap();
    assert!(again.is_infiniband() && !again.pfc.enabled);
    // A RoCE fabric serialises exactly as before: no transport key.
    let roce = fabriclab_core::config::preset("heps").unwrap();
    assert!(!roce.to_toml().contains("transport") && !roce.to_toml().contains("[ib"));
}

/// A chain a - s0 - ... - b of IB switches, cables 10 + 37 i ns.
fn ib_chain(hops: usize, forwarding: &str) -> FabricSpec {
    let mut t = String::from("transport = \"infiniband\"\n[topology]\nkind = \"explicit\"\n");
    let mut chain = vec!["a".to_string()];
    chain.extend((0..hops).map(|i| format!("s{i}")));
    chain.push("b".into());
    for n in &chain {
        let kind = if n.starts_with('s') { "switch" } else { "host" };
        t += &format!("[[topology.nodes]]\nname = \"{n}\"\nkind = \"{kind}\"\n");
    }
    for (i, w) in chain.windows(2).enumerate() {
        t += &format!(
            "[[topology.links]]\na = \"{}\"\nb = \"{}\"\ngbps = 100\ndelay_ns = {}\n",
            w[0],
            w[1],
            10 + 37 * i
        );
    }
    t += &format!(
        "[switch]\nlatency_ns = 130\nforwarding = \"{forwarding}\"\n\
         [nic]\ntx_latency_ns = 600\nrx_latency_ns = 400\n"
    );
    FabricSpec::from_toml(&t).unwrap()
}

#[test]
fn ib_write_lat_is_the_sum_of_its_parts_with_ib_overheads() {
    // A 2-byte first WRITE packet: LRH 8 + BTH 12 + RETH 16 + 4 (payload
    // padded) + ICRC 4 + VCRC 2 = 46 B, no preamble or gap (RoCE: 100 B).
    let wire = ib_wire_bytes(2, Ext::Reth) as u64;
    assert_eq!(wire, 46);
    let rate = Rate::gbps(100);
    for hops in [1usize, 3] {
        let props: u64 = (0..=hops as u64).map(|i| 10 + 37 * i).sum();
        let base = Time::ns(600 + 400 + props);
        // Store-and-forward serialises on every link; cut-through once,
        // plus the switch latency and the first min(64, packet) bytes.
        let sf =
            base + Time((hops as u64 + 1) * rate.tx_time(wire).0) + Time::ns(130 * hops as u64);
        let ct =
            base + rate.tx_time(wire) + Time(hops as u64 * (Time::ns(130) + rate.tx_time(wire)).0);
        for (fwd, want) in [("store_and_forward", sf), ("cut_through", ct)] {
            let r =
                perftest::run(&ib_chain(hops, fwd), &opts(Test::WriteLat, "a", "b"), 1).unwrap();
            let got_ps = (r.lat[0].t_typical_us * 2e6).round() as u64;
            assert_eq!(got_ps, 2 * want.as_ps(), "{fwd}, {hops} switch(es)");
            assert_eq!(r.lat[0].t_min_us, r.lat[0].t_max_us);
        }
    }
}

#[test]
fn ib_write_bw_reaches_the_ib_goodput_and_reports_an_ib_link() {
    // 99.4 % of the data rate at MTU 4096 (RoCE: 98.0 %), 97.5 % at 1024.
    let spec = ib_leaf_spine(2, 2, 2, "");
    for mtu in [1024u32, 4096] {
        let o = Options {
            mtu: Some(mtu),
            ..opts(Test::WriteBw, "h0", "h2")
        };
        let r = perftest::run(&spec, &o, 1).unwrap();
        let (got, want) = (r.bw[0].bw_avg_gbps, ib_write_goodput_gbps(100.0, mtu));
        println!("IB MTU {mtu}: ib_write_bw {got:.3} Gb/s, analytic {want:.3}");
        assert!(
            (got - want).abs() / want < 0.01,
            "MTU {mtu}: {got} vs {want}"
        );
        let text = report::perftest::text(&r);
        assert!(
            text.contains("Link type       : IB")
                && text.contains(&format!("Mtu             : {mtu}[B]"))
        );
        assert!(report::perftest::json(&r).contains("\"Link_type\": \"IB\""));
        // Lossless by credits: no PFC frame anywhere.
        assert!(r
            .ports
            .iter()
            .all(|p| p.counters.pause_tx == 0 && p.counters.drops == 0));
    }
}

#[test]
fn read_send_and_bidirectional_perftests_run_over_ib() {
    let spec = ib_leaf_spine(2, 2, 2, "");
    let want = ib_write_goodput_gbps(100.0, 4096);
    for t in [Test::ReadBw, Test::SendBw] {
        let g = perftest::run(&spec, &opts(t, "h0", "h2"), 1).unwrap().bw[0].bw_avg_gbps;
        assert!((g - want).abs() / want < 0.02, "{t:?}: {g}");
    }
    let o = Options {
        bidirectional: true,
        ..opts(Test::WriteBw, "h0", "h2")
    };
    let g = perftest::run(&spec, &o, 1).unwrap().bw[0].bw_avg_gbps;
    assert!(
        (g - 2.0 * want).abs() / (2.0 * want) < 0.02,
        "bidirectional {g}"
    );
    let lat = |t| perftest::run(&spec, &opts(t, "h0", "h2"), 1).unwrap().lat[0].t_avg_us;
    let (w, r, s) = (lat(Test::WriteLat), lat(Test::ReadLat), lat(Test::SendLat));
    println!("IB leaf-spine: write_lat {w:.3} us, read_lat {r:.3} us, send_lat {s:.3} us");
    assert!(r > 1.8 * w && (s - w).abs() < 0.01);
}

#[test]
fn a_slow_receiver_stops_its_upstream_port_exactly_when_credits_run_out() {
    // h0 -> leaf0 -> h1 at 100G, 100 ns cables, switch latency 100 ns,
    // IB MTU 1024. h1's HCA holds 16 KiB per VL (256 credits of 64 B) and
    // moves packets to memory at only 5 Gb/s.
    let spec = FabricSpec::from_toml(
        "transport = \"infiniband\"\n[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\n\
         hosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = 100\n\
         [nic]\ntx_latency_ns = 500\n[ib]\nmtu = 1024\nhca_vl_buffer_bytes = 16384\nhca_drain_gbps = 5\n",
    )
    .unwrap();
    let mut net = Net::new(&spec, 1).unwrap();
    net.enable_credit_log();
    let app = Flows::new(&net, &[flow("h0", "h1", 64 * 1024)]).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    sim.run(None);
    let res = sim.app::<Flows>(id).unwrap().results();
    assert!(res[0].completed_ps.is_some());

    // By hand. Packets: the first 1024 + 26 + RETH 16 = 1066 B, the others
    // 1050 B; each takes ceil(bytes / 64) = 17 credits, so 256 credits
    // admit 15 packets (255) and not a 16th (272).
    let (first, mid) = (
        ib_wire_bytes(1024, Ext::Reth),
        ib_wire_bytes(1024, Ext::None),
    );
    assert_eq!(
        (first, mid, ib_credits(first), ib_credits(mid)),
        (1066, 1050, 17, 17)
    );
    let line = Rate::gbps(100);
    let (prop, sw, nic_tx) = (Time::ns(100), Time::ns(100), Time::ns(500));
    // Packet 1 leaves h0 at 500 ns; the switch sees its first 64 B after
    // 5.12 ns + 100 ns of cable + 100 ns of latency: S1 = 705.12 ns, when
    // it starts out towards h1 (cut-through). The others follow back to
    // back, so packet 15 ends at S1 + 85.28 + 14 x 84 = 1966.4 ns: the
    // port has then used 255 of its 256 credits and stops.
    let s1 = nic_tx + line.tx_time(64) + prop + sw;
    let stop = s1 + line.tx_time(first as u64) + Time(14 * line.tx_time(mid as u64).0);
    assert_eq!(stop, Time::ps(1_966_400));
    // Packet 1's last bit reaches h1 at S1 + 85.28 + 100 = 890.4 ns; h1
    // moves it to memory in 1066 B / 5 Gb/s = 1705.6 ns and sends a 6-byte
    // flow-control packet (0.48 ns) back over the cable; the switch takes
    // it after its port latency: credits back at 2796.48 ns.
    let t0 = s1 + line.tx_time(first as u64) + prop;
    let drain = Rate::gbps(5).tx_time(first as u64);
    let resume = t0 + drain + line.tx_time(IB_FCP_BYTES as u64) + prop + sw;
    assert_eq!(resume, Time::ps(2_796_480));

    let log = sim.net.credit_log();
    let to_h1: Vec<_> = log
        .iter()
        .filter(|s| s.node == "leaf0" && s.port == 1)
        .collect();
    println!(
        "first stalls of leaf0 -> h1: {:?}",
        to_h1
            .iter()
            .take(3)
            .map(|s| (s.start_ps, s.end_ps))
            .collect::<Vec<_>>()
    );
    assert_eq!(to_h1[0].vl, 3, "SL 3 on VL 3 (default SL-to-VL map)");
    assert_eq!((to_h1[0].start_ps, to_h1[0].end_ps), (stop.0, resume.0));
    // Afterwards one packet per drain time: packet 16 goes at 2796.48 ns
    // and ends 84 ns later, when the port stalls again; packet 2 (1050 B)
    // takes 1680 ns to drain, so its credits return 1680 ns after packet
    // 1's.
    assert_eq!(to_h1[1].start_ps, resume.0 + line.tx_time(mid as u64).0);
    assert_eq!(
        to_h1[1].end_ps,
        resume.0 + Rate::gbps(5).tx_time(mid as u64).0
    );
    // The sender kept its credits; nothing was lost or paused.
    let ports = sim.net.port_reports();
    let table = report::table::ports(&ports, fabriclab_core::config::Backend::Packet);
    println!("{table}");
    assert!(table.contains("cred_stall_us") && !table.contains("pause_tx"));
    assert!(ports
        .iter()
        .all(|p| p.counters.drops == 0 && p.counters.pause_tx == 0));
    let h1 = ports.iter().find(|p| p.node == "h1").unwrap();
    assert!(h1.ib.as_ref().unwrap().peak_vl_buffer_bytes <= 16384);
}

#[test]
fn a_heavy_incast_never_drops_a_packet() {
    // 15 senders onto one host through one switch: 30 MiB into a 100G port.
    let spec = ib_leaf_spine(0, 1, 16, "");
    let (sim, res) = run_flows(&spec, &incast(15, 2 << 20), 1);
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    let ports = sim.net.port_reports();
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
    assert!(ports
        .iter()
        .all(|p| p.counters.pause_tx == 0 && p.counters.pause_rx == 0));
    // Every byte in left again, and no VL buffer ever held more than its
    // 32 KiB.
    assert_eq!(
        switch_total(&sim, |c| c.rx_bytes),
        switch_total(&sim, |c| c.tx_bytes)
    );
    assert!(ports
        .iter()
        .all(|p| p.ib.as_ref().unwrap().peak_vl_buffer_bytes <= 32768));
    // The senders were held back by credits, not by pause frames.
    let stalled: u64 = ports
        .iter()
        .filter(|p| p.node != "h0" && p.node.starts_with('h'))
        .map(|p| p.ib.as_ref().unwrap().credit_stalled_ps[3])
        .sum();
    println!(
        "15-to-1 incast: senders credit-stalled {:.1} us in all",
        stalled as f64 / 1e6
    );
    assert!(stalled > 0);
    // And the port into h0 stayed busy: the last byte lands when 30 MiB of
    // IB packets (4,096 B of payload in 4,122 B: LRH, BTH, ICRC, VCRC; a
    // RETH on each WRITE's first) have crossed it at 100G, plus the
    // path's latency and the credits' start-up, under 1 %.
    let packets = (2u64 << 20) / 4096;
    let wire = ib_wire_bytes(4096, Ext::None) as u64 * packets + 16;
    let ideal_ps = (15 * wire * 8) as f64 / 100e9 * 1e12;
    let last = res.iter().map(|r| r.delivered_ps.unwrap()).max().unwrap() as f64;
    println!(
        "last byte at {:.1} us, {:.4} x the port's bound",
        last / 1e6,
        last / ideal_ps
    );
    assert!(
        last >= ideal_ps && last < 1.01 * ideal_ps,
        "{last} vs {ideal_ps}"
    );
}

#[test]
fn credit_starvation_spreads_congestion_to_a_victim_flow() {
    // As tests/pfc_spreading.rs, on InfiniBand: an incast onto h4 fills
    // leaf1's input buffer from the spine, the spine runs out of credits
    // towards leaf1, and then leaf0 towards the spine; a victim h3 -> h6
    // that shares those links but not the congested port slows down.
    let spec = ib_leaf_spine(1, 2, 4, "host_link_delay_ns = 100\nuplink_delay_ns = 100\n");
    let mib = 1u64 << 20;
    let victim = flow("h3", "h6", 4 * mib);
    let (_, alone) = run_flows(&spec, std::slice::from_ref(&victim), 1);
    let alone_ps = alone[0].delivered_ps.unwrap();
    let mut flows = vec![victim];
    for src in ["h0", "h1", "h2", "h5"] {
        flows.push(flow(src, "h4", 4 * mib));
    }
    let (sim, res) = run_flows(&spec, &flows, 1);
    let shared_ps = res[0].delivered_ps.unwrap();
    let reports = sim.net.port_reports();
    let port = |node: &str, peer: &str| {
        reports
            .iter()
            .find(|p| p.node == node && p.peer == peer)
            .unwrap()
    };
    let stalled =
        |node: &str, peer: &str| port(node, peer).ib.as_ref().unwrap().credit_stalled_ps[3];
    println!(
        "victim alone {:.1} us, beside the incast {:.1} us; credit-stalled: spine0->leaf1 {:.1} us, \
         leaf0->spine0 {:.1} us, leaf1->h6 {:.1} us",
        alone_ps as f64 / 1e6,
        shared_ps as f64 / 1e6,
        stalled("spine0", "leaf1") as f64 / 1e6,
        stalled("leaf0", "spine0") as f64 / 1e6,
        stalled("leaf1", "h6") as f64 / 1e6,
    );
    // No PFC anywhere: the spreading is credit starvation.
    assert!(reports.iter().all(|p| p.counters.pause_tx == 0
        && p.counters.pause_rx == 0
        && p.counters.paused_ps == 0));
    assert!(
        stalled("spine0", "leaf1") > 0,
        "the spine starves for leaf1's credits"
    );
    assert!(
        stalled("leaf0", "spine0") > 0,
        "and so does leaf0 for the spine's"
    );
    assert_eq!(
        stalled("leaf1", "h6"),
        0,
        "the victim's own egress never lacks credits"
    );
    assert!(
        shared_ps as f64 > 1.5 * alone_ps as f64,
        "victim not slowed: {shared_ps} vs {alone_ps}"
    );
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
}

fn all_to_all(spec: &FabricSpec, seed: u64) -> (Vec<String>, Vec<Option<u64>>) {
    let mut flows = Vec::new();
    for s in 0..4 {
        for d in 4..8 {
            flows.push(flow(&format!("h{s}"), &format!("h{d}"), 256 * 1024));
        }
    }
    let (sim, res) = run_flows(spec, &flows, seed);
    let ports = sim
        .net
        .port_reports()
        .iter()
        .map(|p| format!("{p:?}"))
        .collect();
    (ports, res.iter().map(|r| r.completed_ps).collect())
}

#[test]
fn same_seed_same_result_and_static_routes_ignore_the_seed() {
    let spec = ib_leaf_spine(2, 2, 4, "");
    let a = all_to_all(&spec, 42);
    assert_eq!(a, all_to_all(&spec, 42));
    // Forwarding tables do not hash: another seed takes the same paths.
    assert_eq!(a, all_to_all(&spec, 7));
}

#[test]
fn tcp_is_refused_on_infiniband() {
    let spec = ib_leaf_spine(0, 1, 2, "");
    let o = fabriclab_core::iperf::Options {
        client: "h0".into(),
        server: "h1".into(),
        ..Default::default()
    };
    let e = fabriclab_core::iperf::run(&spec, &o, 1).unwrap_err();
    assert!(
        matches!(e, fabriclab_core::Error::InvalidArgument(_)) && e.to_string().contains("IPoIB"),
        "{e}"
    );
}

#[test]
fn one_vl_shared_by_data_and_acks_still_completes_an_all_to_all() {
    // vls = 1: every SL (data 3, ACKs 6) on VL0, so ACKs wait for the same
    // credits as data; a leaf-spine has no credit loop, so nothing deadlocks.
    let spec = ib_leaf_spine(2, 2, 4, "[ib]\nvls = 1\nswitch_vl_buffer_bytes = 8320\n");
    let mut flows = Vec::new();
    for s in 0..8 {
        for d in 0..8 {
            if s != d {
                flows.push(flow(&format!("h{s}"), &format!("h{d}"), 64 * 1024));
            }
        }
    }
    let (sim, res) = run_flows(&spec, &flows, 3);
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    let ports = sim.net.port_reports();
    assert!(ports.iter().all(|p| p.counters.drops == 0));
    let stalled: u64 = ports
        .iter()
        .map(|p| p.ib.as_ref().unwrap().credit_stalled_ps[0])
        .sum();
    assert!(stalled > 0, "two 4 KB packets of buffer per VL must stall");
}
