//! PFC deadlock detection, the PFC watchdog and PFC storms from a stuck
//! host NIC (net/pfc_guard.rs).

mod common;

use common::flow;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::{FlowResult, FlowSpec, Flows};
use fabriclab_core::units::Time;
use fabriclab_core::Error;

/// `n` switches in a ring, one host on each, 100G, 1 MB of buffer per
/// switch: shortest-path routing sends the two-hop flows across the ring.
fn ring(n: usize, extra: &str) -> FabricSpec {
    let mut t = String::from("name = \"ring\"\n[topology]\nkind = \"explicit\"\n");
    for i in 0..n {
        t += &format!("[[topology.nodes]]\nname = \"h{i}\"\nkind = \"host\"\n");
    }
    for i in 0..n {
        t += &format!("[[topology.nodes]]\nname = \"s{i}\"\nkind = \"switch\"\n");
    }
    for i in 0..n {
        t += &format!(
            "[[topology.links]]\na = \"h{i}\"\nb = \"s{i}\"\ngbps = 100\ndelay_ns = 1000\n"
        );
        t += &format!(
            "[[topology.links]]\na = \"s{i}\"\nb = \"s{}\"\ngbps = 100\ndelay_ns = 1000\n",
            (i + 1) % n
        );
    }
    t += "[switch]\nbuffer_bytes = 1000000\n[cc]\nalgorithm = \"none\"\n";
    t += extra;
    FabricSpec::from_toml(&t).unwrap()
}

/// Every host sends `bytes` to the host two switches further round.
fn ring_flows(n: usize, bytes: u64) -> Vec<FlowSpec> {
    (0..n)
        .map(|i| flow(&format!("h{i}"), &format!("h{}", (i + 2) % n), bytes))
        .collect()
}

fn run(
    spec: &FabricSpec,
    flows: &[FlowSpec],
    limit: Option<Time>,
) -> (Sim, Outcome, Vec<FlowResult>) {
    let mut net = Net::new(spec, 1).unwrap();
    net.enable_audit();
    let app = Flows::new(&net, flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(limit);
    let res = sim.app::<Flows>(id).unwrap().results();
    (sim, outcome, res)
}

#[test]
fn a_ring_with_shortest_path_routing_deadlocks_and_the_cycle_is_named() {
    let spec = ring(5, "");
    let (sim, outcome, res) = run(&spec, &ring_flows(5, 8 << 20), Some(Time::ms(50)));
    assert_eq!(outcome, Outcome::Deadlock);
    assert!(res.iter().any(|r| r.completed_ps.is_none()));
    let d = &sim.net.deadlocks()[0];
    assert_eq!(d.priority, 3);
    // The five ring links, each egress paused by the next switch, in order
    // round the ring from the lowest port.
    let hops: Vec<(String, String)> = d
        .ports
        .iter()
        .map(|p| (p.node.clone(), p.peer.clone()))
        .collect();
    assert_eq!(hops.len(), 5, "{hops:?}");
    for w in 0..5 {
        let (a, b) = &hops[w];
        let (c, _) = &hops[(w + 1) % 5];
        assert_eq!(b, c, "each queue waits on the next switch's: {hops:?}");
        assert!(a.starts_with('s') && b.starts_with('s'));
    }
    // Found one detection time (1 ms by default) after the cycle froze.
    assert!(d.time_ps >= d.paused_since_ps + 1_000_000_000, "{d:?}");
    assert!(d.time_ps <= d.paused_since_ps + 1_200_000_000, "{d:?}");
    let msg = sim.net.deadlock_error().to_string();
    assert!(
        msg.contains("PFC deadlock on priority 3") && msg.contains("s0 -> s1"),
        "{msg}"
    );
    assert!(matches!(sim.net.deadlock_error(), Error::Deadlock(_)));
    // Nothing was dropped: a deadlock in a lossless class loses nothing.
    assert!(sim.net.port_reports().iter().all(|p| p.counters.drops == 0));
}

#[test]
fn with_action_continue_the_deadlock_is_recorded_once_and_the_run_goes_on() {
    let spec = ring(5, "[pfc.deadlock]\naction = \"continue\"\n");
    let (sim, outcome, _) = run(&spec, &ring_flows(5, 8 << 20), Some(Time::ms(6)));
    assert_eq!(outcome, Outcome::TimeLimit);
    assert_eq!(sim.net.deadlocks().len(), 1);
}

#[test]
fn detection_can_be_turned_off_and_then_the_run_only_ends_at_its_limit() {
    let spec = ring(5, "[pfc.deadlock]\ndetect_us = 0\n");
    let (sim, outcome, _) = run(&spec, &ring_flows(5, 8 << 20), Some(Time::ms(4)));
    assert_eq!(outcome, Outcome::TimeLimit);
    assert!(sim.net.deadlocks().is_empty());
}

#[test]
fn the_same_traffic_on_a_clean_leaf_spine_does_not_deadlock() {
    // Ten hosts on five leaves, each sending to a host two leaves away, and
    // an incast on top: PFC pauses plenty, up-down routing has no cycle.
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 5\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[switch]\nbuffer_bytes = 1000000\n\
         [cc]\nalgorithm = \"none\"\n[pfc.deadlock]\ndetect_us = 20\n",
    )
    .unwrap();
    let mut flows: Vec<FlowSpec> = (0..10)
        .map(|i| flow(&format!("h{i}"), &format!("h{}", (i + 4) % 10), 4 << 20))
        .collect();
    flows.extend((1..10).map(|i| flow(&format!("h{i}"), "h0", 1 << 20)));
    let (sim, outcome, res) = run(&spec, &flows, None);
    assert_eq!(outcome, Outcome::Finished);
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    assert!(sim.net.deadlocks().is_empty());
    let pauses: u64 = sim
        .net
        .port_reports()
        .iter()
        .map(|p| p.counters.pause_rx)
        .sum();
    assert!(
        pauses > 100,
        "the case must pause to mean anything: {pauses}"
    );
}

/// Two leaves of two hosts and one spine; h0's NIC stops draining at
/// 20 us. h1 -> h0 and h2 -> h0 run into the storm; h3 -> h2 and
/// h2 -> h3 are innocent bystanders on the other leaf, and h2 also sends
/// to h1 across the spine.
fn storm_case(extra: &str) -> (Sim, Outcome, Vec<FlowResult>) {
    run(&storm_spec(extra), &storm_flows(), Some(Time::ms(8)))
}

fn storm_spec(extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[switch]\nbuffer_bytes = 2000000\n\
         [cc]\nalgorithm = \"none\"\n\
         [[pfc_storms]]\nhost = \"h0\"\nstart_us = 20\n{extra}"
    ))
    .unwrap()
}

fn storm_flows() -> Vec<FlowSpec> {
    vec![
        flow("h1", "h0", 16 << 20),
        flow("h2", "h0", 16 << 20),
        flow("h2", "h1", 16 << 20),
        flow("h3", "h2", 16 << 20),
        flow("h2", "h3", 16 << 20),
    ]
}

fn port<'a>(
    reps: &'a [fabriclab_core::net::PortReport],
    node: &str,
    peer: &str,
) -> &'a fabriclab_core::net::PortCounters {
    &reps
        .iter()
        .find(|p| p.node == node && p.peer == peer)
        .unwrap()
        .counters
}

#[test]
fn a_stuck_nic_spreads_a_pfc_storm_upstream_without_the_watchdog() {
    let (sim, outcome, res) = storm_case("");
    assert_eq!(outcome, Outcome::TimeLimit);
    let reps = sim.net.port_reports();
    // leaf0 is paused towards h0 from 20 us to the end...
    let to_h0 = port(&reps, "leaf0", "h0");
    assert!(to_h0.paused_ps > 7_900_000_000, "{}", to_h0.paused_ps);
    // ... which backs up through the spine into leaf1 and its hosts: the
    // storm spreads, and even h2 -> h3, which never goes near h0, is stuck
    // behind h2's paused NIC.
    assert!(port(&reps, "spine0", "leaf0").paused_ps > 5_000_000_000);
    assert!(port(&reps, "leaf1", "spine0").paused_ps > 5_000_000_000);
    assert!(port(&reps, "h2", "leaf1").paused_ps > 5_000_000_000);
    let done = |s: &str, d: &str| {
        res.iter()
            .find(|r| r.src == s && r.dst == d)
            .unwrap()
            .completed_ps
    };
    assert_eq!(done("h2", "h3"), None);
    assert_eq!(done("h2", "h1"), None);
    // No cycle in a leaf-spine: not a deadlock, and nothing dropped in the
    // fabric (only h0's NIC discards what still reaches it).
    assert!(sim.net.deadlocks().is_empty());
    assert!(reps
        .iter()
        .filter(|p| p.node != "h0")
        .all(|p| p.counters.drops == 0));
    assert!(reps.iter().all(|p| p.counters.wd_storms == 0));
}

#[test]
fn the_watchdog_contains_the_storm_at_the_first_switch() {
    let (sim, _, res) =
        storm_case("[pfc.watchdog]\ndetection_us = 200\nrestoration_us = 400\npoll_us = 100\n");
    let reps = sim.net.port_reports();
    let to_h0 = port(&reps, "leaf0", "h0");
    assert_eq!(to_h0.wd_storms, 1);
    assert_eq!(to_h0.wd_restores, 0, "h0 pauses for ever: never restored");
    assert!(to_h0.wd_drops > 0);
    // The bystanders finish: h2 shares its NIC among three 16 MiB flows
    // (48 MiB at about 95 Gb/s of goodput is 4.2 ms), plus the few hundred
    // us the storm held it before the watchdog acted.
    let done = |s: &str, d: &str| {
        res.iter()
            .find(|r| r.src == s && r.dst == d)
            .unwrap()
            .completed_ps
    };
    let h2h3 = done("h2", "h3").expect("h2 -> h3 completes");
    assert!(h2h3 < 5_000_000_000, "{h2h3}");
    assert!(done("h2", "h1").is_some());
    assert!(done("h3", "h2").is_some());
    // Once stormed, leaf0 stops pausing for h0 and the spine is released.
    assert!(port(&reps, "spine0", "leaf0").paused_ps < 1_000_000_000);
    // Conservation over the switches, watchdog drops counted as drops:
    // every byte in is out, dropped, or still queued when the run stops,
    // and the ports' counters say the same as the audit's books.
    let a = sim.net.audit_summary().expect("audit on");
    sim.net.audit_check().unwrap();
    assert!(a.dropped_bytes > 0, "{a:?}");
    assert_eq!(a.lost_bytes, 0);
    assert_eq!(
        a.switch_rx_bytes,
        a.switch_tx_bytes + a.dropped_bytes + a.queued_bytes,
        "{a:?}"
    );
    let on_switches = |f: fn(&fabriclab_core::net::PortCounters) -> u64| -> u64 {
        reps.iter()
            .filter(|p| p.node.starts_with("leaf") || p.node.starts_with("spine"))
            .map(|p| f(&p.counters))
            .sum()
    };
    assert_eq!(on_switches(|c| c.rx_bytes), a.switch_rx_bytes);
    assert_eq!(on_switches(|c| c.tx_bytes), a.switch_tx_bytes);
    assert_eq!(on_switches(|c| c.drop_bytes), a.dropped_bytes);
    let wd: u64 = reps.iter().map(|p| p.counters.wd_drops).sum();
    let lossless: u64 = reps
        .iter()
        .filter(|p| p.node.starts_with("leaf") || p.node.starts_with("spine"))
        .map(|p| p.counters.drops_by_prio[3])
        .sum();
    assert_eq!(
        wd, lossless,
        "every lossless drop in the fabric is the watchdog's"
    );
}

#[test]
fn a_storm_that_ends_is_restored_after_the_restoration_time() {
    let (sim, _, _) = storm_case(
        "end_us = 1000\n[pfc.watchdog]\ndetection_us = 200\nrestoration_us = 300\npoll_us = 100\n",
    );
    let reps = sim.net.port_reports();
    let to_h0 = port(&reps, "leaf0", "h0");
    assert_eq!((to_h0.wd_storms, to_h0.wd_restores), (1, 1));
    // When: h0's last PFC frame (its XON) reaches leaf0 just after 1,000
    // us; the watchdog polls every 100 us and restores at the first poll
    // at least 300 us after it, 1,400 us (at 1,300 us it is a few ns short).
    let spec = storm_spec(
        "end_us = 1000\n[pfc.watchdog]\ndetection_us = 200\nrestoration_us = 300\npoll_us = 100\n",
    );
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &storm_flows()).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    let at = |sim: &mut Sim, us: u64| {
        assert_eq!(sim.run(Some(Time::us(us))), Outcome::TimeLimit);
        let reps = sim.net.port_reports();
        let c = port(&reps, "leaf0", "h0");
        (c.wd_storms, c.wd_restores)
    };
    assert_eq!(at(&mut sim, 1_399), (1, 0));
    assert_eq!(at(&mut sim, 1_401), (1, 1));
}

#[test]
fn watchdog_and_storm_input_is_checked() {
    let base = "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n";
    let cases = [
        (
            "[[pfc_storms]]\nhost = \"h9\"\nstart_us = 1\n",
            "no host named \"h9\"",
        ),
        (
            "[[pfc_storms]]\nhost = \"leaf0\"\nstart_us = 1\n",
            "no host named \"leaf0\"",
        ),
        (
            "[[pfc_storms]]\nhost = \"h0\"\nstart_us = 5\nend_us = 2\n",
            "end_us (2) must come after",
        ),
        (
            "[[pfc_storms]]\nhost = \"h0\"\nstart_us = -1\n",
            "pfc_storms[0].start_us",
        ),
        (
            "[pfc.watchdog]\ndetection_us = 0\n",
            "pfc.watchdog.detection_us",
        ),
        ("[pfc.watchdog]\npoll_us = nan\n", "pfc.watchdog.poll_us"),
        ("[pfc]\nenabled = false\n[pfc.watchdog]\n", "PFC is off"),
        ("[pfc.deadlock]\ndetect_us = -3\n", "pfc.deadlock.detect_us"),
        (
            "[sim]\nbackend = \"flow\"\n[pfc.watchdog]\n",
            "flow backend",
        ),
    ];
    for (extra, needle) in cases {
        let e = FabricSpec::from_toml(&format!("{base}{extra}"))
            .and_then(|s| Net::new(&s, 1).map(|_| ()))
            .unwrap_err();
        assert!(e.to_string().contains(needle), "{needle}: {e}");
    }
    // InfiniBand has no PFC to turn on: the advice says so.
    let e = FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n{base}[[pfc_storms]]\nhost = \"h0\"\nstart_us = 1\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("InfiniBand has no PFC"), "{e}");
}

#[test]
fn restoration_is_counted_from_the_detection_not_from_an_older_frame() {
    // h0 storms for good from 20 us; its NIC refreshes the pause every
    // 167.8 us (65,535 quanta at 100G, refreshed at half time), so its
    // XOFF came in at about 21 us and the next at about 189 us. Detection:
    // the first 10 us poll 100 us into the pause (about 121 us). The
    // queue may come back no sooner than 150 us after it; the old rule
    // counted from the 21 us frame and restored it at 171 us, 50 us after
    // the detection, while the NIC was still storming.
    let extra = "[pfc.watchdog]\ndetection_us = 100\nrestoration_us = 150\npoll_us = 10\n";
    let spec = storm_spec(extra);
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &storm_flows()).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    let counts = |sim: &Sim| {
        let reps = sim.net.port_reports();
        let c = port(&reps, "leaf0", "h0");
        (c.wd_storms, c.wd_restores)
    };
    let mut detected = None;
    for us in (20..=1_000).step_by(5) {
        assert_eq!(sim.run(Some(Time::us(us))), Outcome::TimeLimit);
        let (storms, restores) = counts(&sim);
        if storms == 1 && detected.is_none() {
            detected = Some(us);
        }
        if restores == 1 {
            let d = detected.expect("stormed first");
            assert!(us >= d + 150, "restored at {us} us, detected by {d} us");
            return;
        }
    }
    panic!("never restored in 1 ms: {:?}", counts(&sim));
}
