//! Link failures: what a pulled cable loses, when routing routes around it,
//! how RC recovers, and that a flow elsewhere does not notice.
//!
//! Fabric: 2 spines, 2 leaves x 2 hosts, 100G, 1 us links, RoCE MTU 4096,
//! PFC on, no CC; detection 50 us, convergence 200 us, RC timeout
//! 4.096 us x 2^8 = 1.05 ms. One 4 MiB WRITE h0 -> h2 crosses a spine.

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::{FlowResult, Flows};

const MIB: u64 = 1 << 20;
const DOWN_US: f64 = 100.0;
const DETECT_US: f64 = 50.0;
const CONVERGE_US: f64 = 200.0;

fn spec(failures: &str) -> FabricSpec {
    spec_leaves(2, failures)
}

fn spec_leaves(leaves: u32, failures: &str) -> FabricSpec {
    fabric(leaves, 2, "", failures)
}

/// The test fabric with `leaves` x `hosts` and extra `[switch]` settings.
fn fabric(leaves: u32, hosts: u32, switch: &str, failures: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        r#"
[topology]
kind = "leaf_spine"
spines = 2
leaves = {leaves}
hosts_per_leaf = {hosts}
host_link_gbps = 100
uplink_gbps = 100
host_link_delay_ns = 1000
uplink_delay_ns = 1000
[switch]
{switch}
[nic]
roce_mtu = 4096
ack_timeout_exponent = 8
[cc]
algorithm = "none"
[failover]
detect_us = {DETECT_US}
converge_us = {CONVERGE_US}
{failures}
"#
    ))
    .unwrap()
}

fn fail(a: &str, b: &str, up: Option<f64>) -> String {
    let up = up.map_or(String::new(), |u| format!("up_us = {u}\n"));
    format!("[[link_failures]]\na = \"{a}\"\nb = \"{b}\"\ndown_us = {DOWN_US}\n{up}")
}

struct Run {
    sim: Sim,
    res: Vec<FlowResult>,
}

fn run(spec: &FabricSpec, flows: &[fabriclab_core::traffic::flows::FlowSpec]) -> Run {
    let (sim, res) = run_flows(spec, flows, 1);
    Run { sim, res }
}

/// The spine the h0 -> h2 flow crosses without failures.
fn spine_of_flow() -> String {
    let net = Net::new(&spec(""), 1).unwrap();
    let mut sim = Sim::new(net);
    let app = Flows::new(&sim.net, &[flow("h0", "h2", MIB)]).unwrap();
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let qp = sim.app::<Flows>(id).unwrap().qp(0).unwrap();
    let path = sim.net.qp_path(qp);
    assert_eq!(path.len(), 3, "{path:?}");
    let spine = sim
        .net
        .topology()
        .nodes
        .iter()
        .position(|n| n.name == path[1].0);
    sim.net.topology().nodes[spine.unwrap()].name.clone()
}

fn other_spine(s: &str) -> &'static str {
    if s == "spine0" {
        "spine1"
    } else {
        "spine0"
    }
}

/// Every wire byte a host sent reached a host, or was dropped or lost.
fn assert_conserved(net: &Net) {
    let reports = net.port_reports();
    let hosts: Vec<_> = reports.iter().filter(|p| p.node.starts_with('h')).collect();
    let tx: u64 = hosts.iter().map(|p| p.counters.tx_bytes).sum();
    let rx: u64 = hosts.iter().map(|p| p.counters.rx_bytes).sum();
    let dropped: u64 = reports.iter().map(|p| p.counters.drop_bytes).sum();
    let lost: u64 = reports.iter().map(|p| p.counters.lost_bytes).sum();
    assert_eq!(
        tx,
        rx + dropped + lost,
        "tx {tx} rx {rx} dropped {dropped} lost {lost}"
    );
    assert_eq!(net.packets_in_flight(), 0);
}

fn total(net: &Net, f: impl Fn(&fabriclab_core::net::PortCounters) -> u64) -> u64 {
    net.port_reports().iter().map(|p| f(&p.counters)).sum()
}

#[test]
fn a_pulled_cable_on_the_path_loses_packets_until_the_fabric_routes_around_it() {
    let spine = spine_of_flow();
    let base = run(&spec(""), &[flow("h0", "h2", 4 * MIB)]);
    let r = run(
        &spec(&fail(&spine, "leaf1", None)),
        &[flow("h0", "h2", 4 * MIB)],
    );
    let done = r.res[0].delivered_ps.unwrap();
    let base_done = base.res[0].delivered_ps.unwrap();
    let lost = total(&r.sim.net, |c| c.lost_packets);
    println!(
        "no failure: {:.1} us; {spine}-leaf1 pulled at {DOWN_US} us: {:.1} us, {lost} packets lost",
        base_done as f64 / 1e6,
        done as f64 / 1e6
    );
    assert!(lost > 0);
    // Nothing gets through the dead spine: the flow can only finish on the
    // other one, which leaf0 uses from the convergence on. At worst it
    // then resends the whole message at line rate.
    let converged = (DOWN_US + CONVERGE_US) * 1e6;
    let wire_per_pkt = 4096.0 + 78.0; // RoCE MTU 4096 + headers, RETH on each
    let resend_all = (4 * MIB / 4096) as f64 * wire_per_pkt * 8.0 / 100e9 * 1e12;
    assert!(done as f64 > converged, "done at {done} ps");
    assert!(
        done as f64 <= converged + resend_all + 20e6,
        "done at {done} ps"
    );
    // Delivered exactly once, in order.
    let rx_qp = r.res[0].clone();
    assert_eq!(rx_qp.bytes, 4 * MIB);
    let flows_qp = r.sim.net.qp_reports();
    let rx: u64 = flows_qp.iter().map(|q| q.counters.rx_payload_bytes).sum();
    assert_eq!(rx, 4 * MIB);
    // The flow now crosses the other spine.
    let qp = fabriclab_core::net::QpId(0);
    let path = r.sim.net.qp_path(qp);
    assert_eq!(path[1].0, other_spine(&spine), "{path:?}");
    assert_conserved(&r.sim.net);
    // Lossless class: no buffer drops, only failure losses.
    assert_eq!(total(&r.sim.net, |c| c.drops), 0);
}

#[test]
fn recovery_is_by_one_nak_and_losses_sit_at_the_dead_link() {
    let spine = spine_of_flow();
    let r = run(
        &spec(&fail(&spine, "leaf1", None)),
        &[flow("h0", "h2", 4 * MIB)],
    );
    let q = &r.sim.net.qp_reports()[0];
    assert!(
        q.counters.retx_packets > 0,
        "retransmissions {}",
        q.counters.retx_packets
    );
    // The WRITE is still sending when routing moves it to the other spine
    // (4 MiB at 100G takes about 340 us; the cable goes at 100 us): the
    // first packet through the new path is out of sequence, the receiver
    // NAKs it, and the sender goes back without waiting for its 1 ms timer.
    assert_eq!(
        (q.counters.naks_rx, q.counters.timeouts),
        (1, 0),
        "{:?}",
        q.counters
    );
    // Losses are at the spine: on its wire to leaf1, in its queue, routed to
    // the dead port before detection, or without a route after it.
    for p in r.sim.net.port_reports() {
        if p.counters.lost_packets > 0 {
            assert!(
                p.node == spine || (p.node == "leaf1" && p.peer == spine),
                "lost at {} -> {}",
                p.node,
                p.peer
            );
        }
    }
}

#[test]
fn a_failure_off_the_path_changes_nothing() {
    // A third leaf's cable: neither the data (leaf0 -> leaf1) nor the ACKs
    // (leaf1 -> leaf0, which may hash to the other spine) cross it, and the
    // ECMP groups towards leaf1 and leaf0 keep their members.
    let base = run(&spec_leaves(3, ""), &[flow("h0", "h2", 4 * MIB)]);
    let r = run(
        &spec_leaves(3, &fail("spine0", "leaf2", None)),
        &[flow("h0", "h2", 4 * MIB)],
    );
    assert_eq!(r.res[0].delivered_ps, base.res[0].delivered_ps);
    assert_eq!(total(&r.sim.net, |c| c.lost_packets), 0);
    let qb = &base.sim.net.qp_reports()[0].counters;
    let qr = &r.sim.net.qp_reports()[0].counters;
    assert_eq!(qb, qr);
}

#[test]
fn a_host_cable_put_back_lets_the_flow_finish_after_the_fabric_relearns_it() {
    let up_us = 400.0;
    let r = run(
        &spec(&fail("h2", "leaf1", Some(up_us))),
        &[flow("h0", "h2", 4 * MIB)],
    );
    let done = r.res[0].delivered_ps.unwrap() as f64;
    // Down at 100 us, converged without h2 at 300 us, back at 400 us, used
    // by its leaf at 450 us, but by the fabric only at 600 us.
    let relearned = (up_us + CONVERGE_US) * 1e6;
    println!(
        "h2's cable back at {up_us} us: flow done at {:.1} us",
        done / 1e6
    );
    assert!(done > relearned, "done at {done} ps");
    let rx: u64 = r
        .sim
        .net
        .qp_reports()
        .iter()
        .map(|q| q.counters.rx_payload_bytes)
        .sum();
    assert_eq!(rx, 4 * MIB);
    assert!(total(&r.sim.net, |c| c.lost_packets) > 0);
    assert!(r.sim.net.qp_reports()[0].counters.timeouts > 0);
    assert_conserved(&r.sim.net);
}

#[test]
fn an_incast_across_a_failing_spine_stays_drop_free_and_completes() {
    // Eight senders on leaf0 and leaf1, all to h8 on leaf2, while spine0
    // loses its cable to leaf2: PFC stays lossless (no buffer drops), the
    // buffer of the flushed queue is released, and every byte arrives.
    let spec = fabric(
        3,
        4,
        "buffer_bytes = 2000000",
        &fail("spine0", "leaf2", None),
    );
    let flows: Vec<_> = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"]
        .iter()
        .map(|s| flow(s, "h8", MIB))
        .collect();
    let r = run(&spec, &flows);
    let lost = total(&r.sim.net, |c| c.lost_packets);
    let last = r.res.iter().filter_map(|f| f.delivered_ps).max().unwrap();
    println!(
        "incast: {lost} packets lost, {} PFC frames, last byte at {:.1} us",
        total(&r.sim.net, |c| c.pause_tx),
        last as f64 / 1e6
    );
    assert!(lost > 0, "the failure should hit the incast");
    assert!(r.res.iter().all(|f| f.delivered_ps.is_some()));
    assert_eq!(total(&r.sim.net, |c| c.drops), 0);
    assert!(
        total(&r.sim.net, |c| c.pause_tx) > 0,
        "the incast should pause"
    );
    // Pauses started: on a link that stayed up every one was ended by an
    // XON; on the failed link a pause in force is ended by the failure.
    assert!(total(&r.sim.net, |c| c.pause_starts) > 0);
    for p in r.sim.net.port_reports() {
        let c = &p.counters;
        let failed = matches!(
            (p.node.as_str(), p.peer.as_str()),
            ("spine0", "leaf2") | ("leaf2", "spine0")
        );
        assert!(c.pause_starts <= c.pause_tx, "{p:?}");
        assert!(failed || 2 * c.pause_starts <= c.pause_tx, "{p:?}");
    }
    let rx: u64 = r
        .sim
        .net
        .qp_reports()
        .iter()
        .map(|q| q.counters.rx_payload_bytes)
        .sum();
    assert_eq!(rx, 8 * MIB);
    assert_conserved(&r.sim.net);
}

#[test]
fn same_failure_and_seed_give_identical_results() {
    let spine = spine_of_flow();
    let s = spec(&fail(&spine, "leaf1", Some(250.0)));
    let flows = incast(3, 2 * MIB);
    let a = run(&s, &flows);
    let b = run(&s, &flows);
    let key = |r: &Run| {
        (
            r.res.iter().map(|f| f.delivered_ps).collect::<Vec<_>>(),
            format!("{:?}", r.sim.net.port_reports()),
            r.sim.net.events_processed(),
        )
    };
    assert_eq!(key(&a), key(&b));
}

#[test]
fn bad_failures_are_refused_with_what_to_change() {
    let err = |f: &str| {
        FabricSpec::from_toml(&format!(
            "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
             host_link_gbps = 100\nuplink_gbps = 100\n{f}"
        ))
        .unwrap_err()
        .to_string()
    };
    let e = err("[[link_failures]]\na = \"spine9\"\nb = \"leaf1\"\ndown_us = 1\n");
    assert!(e.contains("no node named \"spine9\""), "{e}");
    let e = err("[[link_failures]]\na = \"leaf0\"\nb = \"leaf1\"\ndown_us = 1\n");
    assert!(e.contains("no link between"), "{e}");
    let e = err("[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 5\nup_us = 2\n");
    assert!(e.contains("up_us (2) must come after down_us (5)"), "{e}");
    let e = err("[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = -1\n");
    assert!(
        e.contains("down_us must be a finite number, zero or positive"),
        "{e}"
    );
    let e = err("[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\nindex = 1\ndown_us = 1\n");
    assert!(
        e.contains("index 1 but there are only 1 parallel links"),
        "{e}"
    );
    // On iWARP a host cut off for good is refused (its TCP streams would
    // retry for ever); on RoCE it is a run whose QPs fail (tests/retry.rs).
    let iwarp = |f: &str| {
        FabricSpec::from_toml(&format!(
            "transport = \"iwarp\"\n[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\n\
             hosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n{f}"
        ))
        .unwrap_err()
        .to_string()
    };
    let e = iwarp("[[link_failures]]\na = \"h1\"\nb = \"leaf0\"\ndown_us = 1\n");
    assert!(e.contains("cut h1 off from h0 for good"), "{e}");
    let e = iwarp(
        "[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\n\
         [[link_failures]]\na = \"leaf0\"\nb = \"spine1\"\ndown_us = 1\n",
    );
    assert!(e.contains("for good"), "{e}");
    let e = err("[failover]\ndetect_us = 10\nconverge_us = 5\n");
    assert!(
        e.contains("failover.converge_us (5) must be at least"),
        "{e}"
    );
    // The same link taken down twice at overlapping times (an identical
    // entry given twice was accepted).
    let twice = "[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\n";
    let e = err(&format!("{twice}{twice}"));
    assert!(e.contains("link_failures[0] and link_failures[1] take the link leaf0 - spine0 down at times that overlap"), "{e}");
    let e = err(
        "[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\nup_us = 10\n\
                 [[link_failures]]\na = \"spine0\"\nb = \"leaf0\"\ndown_us = 5\n",
    );
    assert!(e.contains("overlap"), "{e}");
    // Down, up, down again: a flap, legal.
    assert!(FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n\
         [[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\nup_us = 10\n\
         [[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 20\n"
    )
    .is_ok());
    let e = err("[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\nwhen = 2\n");
    assert!(e.contains("unknown field `when`"), "{e}");
    let ib = FabricSpec::from_toml(
        "transport = \"infiniband\"\n[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\n\
         hosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n\
         [[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1\n",
    )
    .unwrap_err()
    .to_string();
    assert!(ib.contains("not modelled on InfiniBand"), "{ib}");
}

#[test]
fn a_run_stalled_by_a_hosts_own_dead_link_says_which_link() {
    // h0's cable is out for good from the start: its QP waits for the
    // link, nothing else is left to happen, and the tools' errors name
    // the link instead of sending the user after PFC.
    let spec = spec("[[link_failures]]\na = \"h0\"\nb = \"leaf0\"\ndown_us = 0\n");
    let net = Net::new(&spec, 1).unwrap();
    let mut sim = Sim::new(net);
    let app = Flows::new(&sim.net, &[flow("h0", "h2", MIB)]).unwrap();
    sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Stalled);
    let hint = sim.net.stall_hint();
    assert!(hint.contains("the link of h0-leaf0 is down"), "{hint}");
    // Without a dead host link, the hint is PFC's.
    let net = Net::new(&spec_leaves(2, ""), 1).unwrap();
    assert!(net.stall_hint().contains("PFC deadlock"));
}

#[test]
fn the_flow_backend_counts_a_rerouted_flows_bytes_on_the_links_they_crossed() {
    // a - s1 - s2 - b, with a detour s1 - s3 - s2; s1-s2 fails at 100 us
    // and the fabric routes around it 60 us later. The bytes sent before
    // the failure crossed s1-s2 and the rest s1-s3, on both backends (the
    // flow backend put them all on the detour, the path the flow ended on).
    let toml = |backend: &str| {
        format!(
            "[sim]\nbackend = \"{backend}\"\n[topology]\nkind = \"explicit\"\nnodes = [\
             {{name=\"a\",kind=\"host\"}},{{name=\"b\",kind=\"host\"}},{{name=\"s1\",kind=\"switch\"}},\
             {{name=\"s2\",kind=\"switch\"}},{{name=\"s3\",kind=\"switch\"}}]\n\
             links = [{{a=\"a\",b=\"s1\",gbps=100}},{{a=\"b\",b=\"s2\",gbps=100}},{{a=\"s1\",b=\"s2\",gbps=100}},\
             {{a=\"s1\",b=\"s3\",gbps=100}},{{a=\"s3\",b=\"s2\",gbps=100}}]\n\
             [cc]\nalgorithm = \"none\"\n[failover]\ndetect_us = 10\nconverge_us = 50\n\
             [[link_failures]]\na = \"s1\"\nb = \"s2\"\ndown_us = 100\n"
        )
    };
    let tx = |backend: &str| -> (u64, u64, u64) {
        let spec = FabricSpec::from_toml(&toml(backend)).unwrap();
        let r = run(
            &spec,
            &[fabriclab_core::traffic::flows::FlowSpec::write(
                "a",
                "b",
                4 << 20,
            )],
        );
        assert!(r.res[0].completed_ps.is_some(), "{backend}: the flow ends");
        let out = |from: &str, to: &str| -> u64 {
            r.sim
                .net
                .port_reports()
                .iter()
                .filter(|p| p.node == from && p.peer == to)
                .map(|p| p.counters.tx_bytes)
                .sum()
        };
        (out("s1", "s2"), out("s1", "s3"), out("a", "s1"))
    };
    let (pkt_direct, pkt_detour, _) = tx("packet");
    let (flow_direct, flow_detour, flow_host) = tx("flow");
    println!("packet {pkt_direct} + {pkt_detour}, flow {flow_direct} + {flow_detour}");
    assert!(pkt_direct > 0 && pkt_detour > 0);
    // Everything the host sent, once: on the direct link or on the detour.
    assert_eq!(flow_direct + flow_detour, flow_host);
    let near = |a: u64, b: u64| (a as f64 - b as f64).abs() / b as f64;
    assert!(
        near(flow_direct, pkt_direct) < 0.15,
        "{flow_direct} vs {pkt_direct}"
    );
    assert!(
        near(flow_detour, pkt_detour) < 0.15,
        "{flow_detour} vs {pkt_detour}"
    );
}

#[test]
fn on_the_flow_backend_a_flow_cut_off_with_its_host_stalls_until_the_cable_is_back() {
    // h2's own cable is out from 100 to 400 us: after convergence (300 us)
    // the fabric has no way to h2. A flow started before (h0 -> h2) and
    // one started while h2 is unreachable (h1 -> h2 at 350 us) keep the
    // way through the dead cable, stall there, and end once it is back;
    // the flow backend used to panic ("no route") at the re-route.
    let flow_spec = |up: Option<f64>| {
        let mut s = spec(&fail("h2", "leaf1", up));
        s.sim.backend = fabriclab_core::config::Backend::Flow;
        s
    };
    let mut late = flow("h1", "h2", MIB);
    late.start_us = 350.0;
    let r = run(&flow_spec(Some(400.0)), &[flow("h0", "h2", 4 * MIB), late]);
    let done: Vec<f64> = (r.res.iter())
        .map(|f| f.completed_ps.expect("both flows end") as f64 / 1e6)
        .collect();
    println!("flow backend, h2's cable back at 400 us: flows done at {done:?} us");
    // 4 MiB alone take about 350 us at 100G; cut at 100 us, the first has
    // most of its bytes left at 400 us. Both share h2's link afterwards.
    assert!(done.iter().all(|&d| d > 400.0), "{done:?}");
    assert!(done[0] < 400.0 + 400.0, "{done:?}");
    let rx: u64 = (r.sim.net.qp_reports().iter())
        .map(|q| q.counters.rx_payload_bytes)
        .sum();
    assert_eq!(rx, 5 * MIB);
    // Never back: the run stalls (no panic) and the hint names the cable.
    let net = Net::new(&flow_spec(None), 1).unwrap();
    let mut sim = Sim::new(net);
    let app = Flows::new(
        &sim.net,
        &[flow("h0", "h2", 4 * MIB), flow("h0", "h1", MIB)],
    )
    .unwrap();
    sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Stalled);
    assert!(
        sim.net
            .stall_hint()
            .contains("the link of h2-leaf1 is down"),
        "{}",
        sim.net.stall_hint()
    );
}

#[test]
fn a_qp_that_fails_names_the_dead_link_it_failed_on() {
    // h0's own cable pulled while its WRITE is under way: its NIC cannot
    // send, the timer runs on and the QP fails with nothing resent; the
    // cause names h0's own link (it used to blame "a link failure that
    // cut it off", as if the peer were lost). With the peer's cable
    // pulled, the cause names the peer's link.
    for (a, want) in [
        ("h0", "its own host's link h0-leaf0 is down"),
        ("h2", "the peer's link h2-leaf1 is down"),
    ] {
        let spec = spec(&format!(
            "[[link_failures]]\na = \"{a}\"\nb = \"leaf{}\"\ndown_us = 20\n",
            if a == "h0" { 0 } else { 1 }
        ));
        let r = run(&spec, &[flow("h0", "h2", 4 * MIB)]);
        assert!(r.res[0].completed_ps.is_none());
        let reason = r.sim.net.qp_failure_reason();
        assert!(reason.contains(want), "{reason}");
        if a == "h0" {
            assert_eq!(r.sim.net.qp_reports()[0].counters.retx_packets, 0);
        }
    }
}

#[test]
fn a_stall_is_blamed_on_what_caused_it() {
    // The flow backend with leaf0 cut off from both spines for good: the
    // flow waits (no timeouts there), and the hint names the two links,
    // not PFC, which the flow backend does not model.
    let cut = format!(
        "{}{}",
        fail("leaf0", "spine0", None),
        fail("leaf0", "spine1", None)
    );
    let mut s = spec(&cut);
    s.sim.backend = fabriclab_core::config::Backend::Flow;
    let mut sim = Sim::new(Net::new(&s, 1).unwrap());
    sim.add_app(Box::new(
        Flows::new(&sim.net, &[flow("h0", "h2", 4 * MIB)]).unwrap(),
    ));
    assert_eq!(sim.run(None), Outcome::Stalled);
    let hint = sim.net.stall_hint();
    assert!(
        hint.contains("leaf0-spine0, leaf0-spine1 are down") && !hint.contains("PFC"),
        "{hint}"
    );
    // The packet engine with no retransmission timer: a 2 MiB flow pinned
    // through the spine whose link goes down at 100 us is sent by 175 us,
    // before the fabric converges (300 us), so its tail is lost and never
    // resent (no later packet draws a NAK); the hint says so.
    let mut s = spec(&fail("spine0", "leaf1", None));
    s.nic.ack_timeout_exponent = 0;
    let mut pinned = flow("h0", "h2", 2 * MIB);
    pinned.via = Some("spine0".into());
    let mut sim = Sim::new(Net::new(&s, 1).unwrap());
    sim.add_app(Box::new(Flows::new(&sim.net, &[pinned]).unwrap()));
    assert_eq!(sim.run(None), Outcome::Stalled);
    let hint = sim.net.stall_hint();
    assert!(hint.contains("ack_timeout_exponent = 0 turns"), "{hint}");
}
