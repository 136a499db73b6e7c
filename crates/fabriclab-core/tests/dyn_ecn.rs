//! Dynamic ECN (`[ecn] mode = "dynamic"`): the controller's two moves on
//! traffic where the right move is plain, its bounds, that it costs nothing
//! when off or idle, and its errors.

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::{DynEcnPort, Net};
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::Flows;
use fabriclab_core::units::Time;
use fabriclab_core::Error;

const MIB: u64 = 1 << 20;

fn dyn_state(sim: &Sim, node: &str, peer: &str) -> DynEcnPort {
    sim.net
        .port_reports()
        .into_iter()
        .find(|p| p.node == node && p.peer == peer)
        .and_then(|p| p.dyn_ecn)
        .expect("a switch port with dynamic ECN")
}

/// Three senders that ignore ECN (no congestion control) onto h0, 8 MiB
/// each: PFC holds a standing queue at leaf0 -> h0 for about 2 ms.
fn standing_queue(ecn: &str) -> Sim {
    let spec = one_switch(
        4,
        &format!("[cc]\nalgorithm = \"none\"\n[ecn]\nkmin_bytes = 100000\nkmax_bytes = 40000000\npmax = 0.01\n{ecn}"),
    );
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &incast(3, 8 * MIB)).unwrap();
    let mut sim = Sim::new(net);
    sim.net.enable_sampling(Time::us(10));
    sim.add_app(Box::new(app));
    sim
}

#[test]
fn a_standing_queue_marked_too_little_gets_earlier_thresholds() {
    // The queue never falls below 20 us of drain time (250 KB at 100G)
    // while the port runs at line rate, and most packets leave unmarked:
    // every 200 us interval halves Kmin and Kmax, down to steps_down = 3
    // halvings: 100 000 / 8 = 12 500 B and 40 000 000 / 8 = 5 000 000 B.
    let mut sim = standing_queue("mode = \"dynamic\"\n");
    assert_eq!(sim.run(Some(Time::us(1500))), Outcome::TimeLimit);
    let rows = port_series(&sim.net, "leaf0", "h0");
    let min_q = rows
        .iter()
        .filter(|s| s.time_ps >= 100_000_000)
        .map(|s| s.queue_bytes)
        .min()
        .unwrap();
    println!("queue from 100 us to 1.5 ms: at least {min_q} B");
    assert!(min_q > 250_000);
    let d = dyn_state(&sim, "leaf0", "h0");
    println!("{d:?}");
    assert_eq!(d.ecn_kmin_bytes, 12_500);
    assert_eq!(d.ecn_kmax_bytes, 5_000_000);
    assert_eq!(d.ecn_adjustments, 3);
}

#[test]
fn the_ladder_stops_at_steps_down_and_static_ecn_reports_nothing() {
    let mut sim = standing_queue("mode = \"dynamic\"\n[ecn.dynamic]\nsteps_down = 1\n");
    sim.run(Some(Time::us(1500)));
    let d = dyn_state(&sim, "leaf0", "h0");
    assert_eq!((d.ecn_kmin_bytes, d.ecn_kmax_bytes), (50_000, 20_000_000));
    assert_eq!(d.ecn_adjustments, 1);
    let mut sim = standing_queue("");
    sim.run(Some(Time::us(1500)));
    assert!(sim.net.port_reports().iter().all(|p| p.dyn_ecn.is_none()));
}

/// Four waves, 2 ms apart, of the 15-to-1 incast of 1 MiB WRITEs with
/// DCQCN (ConnectX values with per-QP CNP moderation, where static
/// thresholds over-throttle: tests/dcqcn.rs) and the default ECN thresholds (5 KB /
/// 200 KB / 1 %). Returns the sim and each wave's completion time after
/// its start, ps.
fn incast_waves(ecn: &str) -> (Sim, Vec<u64>) {
    let spec = one_switch(
        16,
        &format!(
            "[nic]\nroce_mtu = 4096\n[cc]\nalgorithm = \"dcqcn\"\ncnp_scope = \"qp\"\n[ecn]\n{ecn}"
        ),
    );
    let net = Net::new(&spec, 1).unwrap();
    let mut flows = Vec::new();
    for w in 0..4 {
        for mut f in incast(15, MIB) {
            f.start_us = 2000.0 * w as f64;
            flows.push(f);
        }
    }
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let r = sim.app::<Flows>(id).unwrap().results();
    let waves = (0..4)
        .map(|w| {
            let done = r[w * 15..w * 15 + 15]
                .iter()
                .map(|r| r.delivered_ps.unwrap())
                .max()
                .unwrap();
            done - 2_000_000_000 * w as u64
        })
        .collect();
    (sim, waves)
}

#[test]
fn an_over_throttled_bottleneck_gets_later_thresholds_and_later_waves_finish_sooner() {
    // With static thresholds every wave collapses the senders to the
    // minimum rate while the first backlog drains, and the bottleneck
    // idles until their timers recover them (tests/dcqcn.rs). The
    // controller sees the port drained and under target utilisation right
    // after marking, and doubles the thresholds; from the second wave on,
    // fewer marks, less collapse, sooner done.
    let (st, st_waves) = incast_waves("");
    let (dy, dy_waves) = incast_waves("mode = \"dynamic\"\n");
    let ms = |w: &[u64]| w.iter().map(|&t| t as f64 / 1e9).collect::<Vec<_>>();
    let ideal_ps = (15 * MIB * 8) as f64 / 100e9 * 1e12;
    println!(
        "waves done after (ms): static {:?}, dynamic {:?}; bytes / line rate {:.3} ms",
        ms(&st_waves),
        ms(&dy_waves),
        ideal_ps / 1e9
    );
    let (sc, dc) = (
        st.net.port_between("leaf0", "h0").unwrap(),
        dy.net.port_between("leaf0", "h0").unwrap(),
    );
    let d = dyn_state(&dy, "leaf0", "h0");
    println!(
        "marks: static {}, dynamic {}; {d:?}",
        sc.ecn_marks, dc.ecn_marks
    );
    // Same first wave (the controller has not acted yet) ...
    assert_eq!(dy_waves[0], st_waves[0]);
    // ... then each later wave at least 10 % sooner, within 10 % of ideal.
    for w in 1..4 {
        assert!(dy_waves[w] as f64 <= 0.9 * st_waves[w] as f64, "wave {w}");
        assert!((dy_waves[w] as f64) < 1.1 * ideal_ps, "wave {w}");
    }
    assert!(
        dc.ecn_marks * 4 < sc.ecn_marks * 3,
        "{} vs {}",
        dc.ecn_marks,
        sc.ecn_marks
    );
    assert!(
        d.ecn_kmin_bytes > 5_000 && d.ecn_kmax_bytes > 200_000,
        "{d:?}"
    );
    assert!(d.ecn_kmax_bytes <= 200_000 << 4);
    // Lossless: nothing dropped anywhere.
    assert_eq!(switch_total(&dy, |c| c.drops), 0);
}

#[test]
fn a_controller_without_steps_changes_nothing_bit_for_bit() {
    // The controller's bookkeeping draws no random numbers and moves no
    // packet: with no room to move it reproduces static ECN exactly.
    let (st, st_waves) = incast_waves("");
    let (dy, dy_waves) =
        incast_waves("mode = \"dynamic\"\n[ecn.dynamic]\nsteps_up = 0\nsteps_down = 0\n");
    assert_eq!(st_waves, dy_waves);
    let counters = |s: &Sim| {
        s.net
            .port_reports()
            .into_iter()
            .map(|p| p.counters)
            .collect::<Vec<_>>()
    };
    assert_eq!(counters(&st), counters(&dy));
    assert!(dy.net.events_processed() > st.net.events_processed());
}

#[test]
fn queues_without_ecn_traffic_cost_no_controller_events() {
    // Marking on priority 5 only, RoCE data on 3: no queue the controller
    // watches ever carries a packet, so it schedules nothing.
    let run = |ecn: &str| {
        let spec = one_switch(4, &format!("[ecn]\npriorities = [5]\n{ecn}"));
        let (sim, res) = run_flows(&spec, &incast(3, MIB), 1);
        (
            sim.net.events_processed(),
            res.iter().map(|r| r.delivered_ps).collect::<Vec<_>>(),
        )
    };
    assert_eq!(run(""), run("mode = \"dynamic\"\n"));
}

#[test]
fn same_seed_same_result() {
    let (a, aw) = incast_waves("mode = \"dynamic\"\n");
    let (b, bw) = incast_waves("mode = \"dynamic\"\n");
    assert_eq!(aw, bw);
    assert_eq!(a.net.events_processed(), b.net.events_processed());
    let reports = |s: &Sim| format!("{:?}", s.net.port_reports());
    assert_eq!(reports(&a), reports(&b));
}

fn fabric_error(extra: &str) -> String {
    // A top-level key goes before the first table.
    let (top, extra) = match extra.split_once("\n[") {
        Some((t, rest)) if !t.starts_with('[') => (format!("{t}\n"), format!("[{rest}")),
        _ => (String::new(), extra.to_string()),
    };
    let text = format!(
        "{top}[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n{extra}"
    );
    match FabricSpec::from_toml(&text) {
        Err(Error::InvalidFabric(m)) | Err(Error::Parse(m)) => m,
        other => panic!("expected an error for {extra:?}, got {other:?}"),
    }
}

#[test]
fn bad_settings_say_what_to_change() {
    for (extra, needle) in [
        (
            "[ecn]\nenabled = false\nmode = \"dynamic\"\n",
            "ecn.enabled = true",
        ),
        (
            "[ecn.dynamic]\ninterval_us = 100\n",
            "add mode = \"dynamic\"",
        ),
        (
            "[ecn]\nmode = \"dynamic\"\n[ecn.dynamic]\ninterval_us = 0\n",
            "ecn.dynamic.interval_us",
        ),
        (
            "[ecn]\nmode = \"dynamic\"\n[ecn.dynamic]\ntarget_queue_us = -1\n",
            "ecn.dynamic.target_queue_us",
        ),
        (
            "[ecn]\nmode = \"dynamic\"\n[ecn.dynamic]\ntarget_utilization = 1.5\n",
            "ecn.dynamic.target_utilization",
        ),
        (
            "[ecn]\nmode = \"dynamic\"\n[ecn.dynamic]\nsteps_up = 40\n",
            "at most 20",
        ),
        (
            "[ecn]\nmode = \"dynamic\"\nkmin_bytes = 0\n",
            "ecn.kmin_bytes",
        ),
        ("[ecn]\nmode = \"adaptive\"\n", "mode"),
        (
            "[ecn]\nmode = \"dynamic\"\n[ecn.dynamic]\nperiod_us = 5\n",
            "period_us",
        ),
        (
            "transport = \"infiniband\"\n[ecn]\nmode = \"dynamic\"\n",
            "InfiniBand",
        ),
    ] {
        let m = fabric_error(extra);
        assert!(m.contains(needle), "{extra:?}: {m}");
    }
}
