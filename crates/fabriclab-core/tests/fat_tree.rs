//! The fat-tree builder: its shape and names, latency over 1, 3 and 5
//! switches as the sum of its parts, the edge's oversubscription in a
//! cross-pod exchange against the bound by hand, and its errors.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::topology::Topology;
use fabriclab_core::traffic::flows::{FlowSpec, Flows};
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{roce_wire_bytes, Ext};

fn fat_tree(k: u32, hpe: u32, extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"fat_tree\"\nk = {k}\nhosts_per_edge = {hpe}\nedge_radix = {}\nhost_link_gbps = 100\n\
         host_link_delay_ns = 10\nedge_agg_delay_ns = 50\nagg_core_delay_ns = 100\n\
         [nic]\nroce_mtu = 4096\ntx_latency_ns = 600\nrx_latency_ns = 400\n{extra}",
        (hpe + k / 2).max(k)
    ))
    .unwrap()
}

#[test]
fn k4_has_the_shape_and_names_of_al_fares_fat_tree() {
    let t = Topology::build(&fat_tree(4, 2, "")).unwrap();
    // 16 hosts, 8 edge + 8 aggregation + 4 core switches; 16 host links,
    // 4 pods x (2 x 2 edge-agg + 2 x 2 agg-core) = 32 fabric links.
    assert_eq!(t.n_hosts, 16);
    assert_eq!(t.nodes.len(), 16 + 8 + 8 + 4);
    assert_eq!(t.links.len(), 16 + 32);
    let name = |i: usize| t.nodes[i].name.as_str();
    assert_eq!(
        (name(16), name(24), name(32), name(35)),
        ("edge0", "agg0", "core0", "core3")
    );
    // h5 hangs off edge2 (pod 1); agg2 (pod 1, j = 0) reaches core0 and core1.
    assert_eq!(name(t.links[5].b), "edge2");
    let cores_of_agg2: Vec<&str> = t
        .links
        .iter()
        .filter(|l| name(l.a) == "agg2")
        .map(|l| name(l.b))
        .filter(|n| n.starts_with("core"))
        .collect();
    assert_eq!(cores_of_agg2, ["core0", "core1"]);
    // The preset: k = 8, 128 hosts.
    let p = fabriclab_core::config::preset("fat-tree").unwrap();
    assert_eq!(Topology::build(&p).unwrap().n_hosts, 128);
}

#[test]
fn write_lat_equals_the_sum_of_its_parts_over_1_3_and_5_switches() {
    // Store-and-forward, 450 ns a switch: one edge (h0 -> h1), one pod
    // (h0 -> h2, edge-agg-edge), across pods (h0 -> h15, through a core).
    let spec = fat_tree(
        4,
        2,
        "[switch]\nlatency_ns = 450\nforwarding = \"store_and_forward\"\n",
    );
    let wire = roce_wire_bytes(2, Ext::Reth, false) as u64;
    let ser = Rate::gbps(100).tx_time(wire);
    for (dst, delays) in [
        ("h1", vec![10, 10]),
        ("h2", vec![10, 50, 50, 10]),
        ("h15", vec![10, 50, 100, 100, 50, 10]),
    ] {
        let mut want = Time::ns(600 + 400);
        for d in &delays {
            want += ser + Time::ns(*d);
        }
        want += Time::ns(450 * (delays.len() as u64 - 1));
        let o = Options {
            test: Test::WriteLat,
            client: "h0".into(),
            server: dst.into(),
            iters: Some(100),
            ..Default::default()
        };
        let r = perftest::run(&spec, &o, 1).unwrap();
        let got_ps = (r.lat[0].t_typical_us * 2e6).round() as u64;
        assert_eq!(got_ps, 2 * want.as_ps(), "h0 -> {dst}");
    }
}

/// Every host writes `bytes` to every host in the other pods, all at once;
/// returns the time the last byte lands and the busiest link's wire time
/// (its bytes sent at its rate), ps.
fn cross_pod_exchange(k: u32, hpe: u32, bytes: u64) -> (u64, u64) {
    // PFC only: the capacity of the tree, not a congestion control.
    let spec = fat_tree(k, hpe, "[cc]\nalgorithm = \"none\"\n");
    let hosts = k * (k / 2) * hpe;
    let pod = |h: u32| h / ((k / 2) * hpe);
    let mut flows = Vec::new();
    for a in 0..hosts {
        for b in 0..hosts {
            if pod(a) != pod(b) {
                flows.push(FlowSpec::write(format!("h{a}"), format!("h{b}"), bytes));
            }
        }
    }
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let res = sim.app::<Flows>(id).unwrap().results();
    let last = res.iter().map(|r| r.delivered_ps.unwrap()).max().unwrap();
    let busiest = sim
        .net
        .port_reports()
        .iter()
        .map(|p| (p.counters.tx_bytes as f64 * 8.0 / (p.rate_gbps * 1e9) * 1e12) as u64)
        .max()
        .unwrap();
    (last, busiest)
}

#[test]
fn oversubscribing_the_edge_slows_a_cross_pod_exchange_as_the_arithmetic_says() {
    // k = 4: an edge has 2 up-links. With 2 hosts per edge each host's
    // cross-pod bytes have its own 100G (non-blocking); with 4 hosts per
    // edge (2:1) they share 2 x 100G among 4, and there is twice as much
    // to send (24 other-pod hosts instead of 12). Bound by hand: a host's
    // cross-pod bytes x hosts per edge / (2 x 100G), and never less than
    // its own link's time. Measured 1.4-1.7 x the bound: ECMP hashes each
    // edge's 24 or 96 cross-pod flows onto 2 up-links unevenly, so the
    // busiest link carries more than its share, and that link's own bytes
    // set the end.
    let bytes = 128 * 1024u64;
    let mut times = Vec::new();
    for hpe in [2u32, 4] {
        let others = 4 * 2 * hpe - 2 * hpe; // hosts in the other 3 pods
        let per_host = others as u64 * bytes;
        let wire_s = |b: u64| b as f64 * 8.0 / 100e9;
        let bound_s = wire_s(per_host).max(wire_s(per_host * hpe as u64) / 2.0);
        let (last, busiest) = cross_pod_exchange(4, hpe, bytes);
        let (t_s, busiest_s) = (last as f64 * 1e-12, busiest as f64 * 1e-12);
        println!(
            "{hpe} hosts per edge: {:.1} us, bound {:.1} us ({:.2} x), busiest link {:.1} us ({:.3} x)",
            t_s * 1e6,
            bound_s * 1e6,
            t_s / bound_s,
            busiest_s * 1e6,
            t_s / busiest_s
        );
        assert!(t_s >= bound_s, "{t_s} below the bound {bound_s}");
        assert!(t_s < 2.0 * bound_s, "{t_s} vs bound {bound_s}");
        // What the uneven hashing leaves: the busiest link's own bytes at
        // its rate, which the exchange cannot beat and, with that link
        // kept busy by PFC's backlog, ends within 5 % of (1.019 and 1.012
        // x measured).
        assert!(
            t_s >= busiest_s && t_s < 1.05 * busiest_s,
            "{t_s} vs the busiest link's {busiest_s}"
        );
        times.push(t_s);
    }
    assert!(times[1] > 3.0 * times[0], "{times:?}");
}

#[test]
fn impossible_fat_trees_say_what_to_change() {
    let bad = |topo: &str| {
        let text = format!("[topology]\nkind = \"fat_tree\"\n{topo}");
        FabricSpec::from_toml(&text)
            .and_then(|s| s.validate().map(|_| s))
            .err()
            .unwrap_or_else(|| panic!("{topo} was accepted"))
            .to_string()
    };
    assert!(bad("k = 5\nhost_link_gbps = 100\n").contains("even switch radix"));
    assert!(bad("k = 0\nhost_link_gbps = 100\n").contains("even switch radix"));
    assert!(bad("k = 4\nhosts_per_edge = 0\nhost_link_gbps = 100\n").contains("needs hosts"));
    assert!(bad("k = 4\nhost_link_gbps = -1\n").contains("host_link_gbps"));
    assert!(bad("k = 4\nhost_link_gbps = 100\nfabric_link_gbps = 0\n").contains("fabric_link_gbps"));
    assert!(bad("k = 128\nhost_link_gbps = 100\n").contains("lower k"));
    assert!(
        bad("k = 4\nhost_link_gbps = 100\nedge_agg_delay_ns = -5\n").contains("edge_agg_delay_ns")
    );
    assert!(bad("k = 4\nhost_link_gbps = 100\nradix = 4\n").contains("radix"));
    // An edge switch holds its hosts and k/2 uplinks (QA finding: 100
    // hosts on a 4-port edge were accepted): more needs edge_radix.
    let e = bad("k = 4\nhosts_per_edge = 100\nhost_link_gbps = 100\n");
    assert!(
        e.contains("hosts_per_edge = 100") && e.contains("edge_radix to at least 102"),
        "{e}"
    );
    let e = bad("k = 4\nhosts_per_edge = 3\nedge_radix = 4\nhost_link_gbps = 100\n");
    assert!(e.contains("topology.edge_radix = 4"), "{e}");
}

#[test]
fn a_fat_tree_too_large_names_its_host_count_in_whole_hosts() {
    // k = 128: 128 x 64 x 64 = 524,288 hosts (it printed "5.243e+05").
    let e =
        FabricSpec::from_toml("[topology]\nkind = \"fat_tree\"\nk = 128\nhost_link_gbps = 100\n")
            .and_then(|s| Topology::build(&s).map(|_| ()))
            .unwrap_err()
            .to_string();
    assert!(e.contains("has 524288 hosts, over the 65536"), "{e}");
}
