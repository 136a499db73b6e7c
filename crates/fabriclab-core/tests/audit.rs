//! The conservation audit (net/audit.rs): its books match the port
//! counters, balance mid-run and at the end, and name what breaks.

mod common;

use common::{incast, one_switch};
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::Flows;
use fabriclab_core::units::Time;
use fabriclab_core::Error;

const MIB: u64 = 1 << 20;

fn run(extra: &str, n: u32, limit: Option<Time>) -> (Sim, Outcome) {
    let spec = one_switch(16, extra);
    let mut net = Net::new(&spec, 1).unwrap();
    net.enable_audit();
    let app = Flows::new(&net, &incast(n, MIB)).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    let outcome = sim.run(limit);
    (sim, outcome)
}

#[test]
fn a_lossless_incast_balances_and_the_books_match_the_port_counters() {
    // A 2 MB buffer: the incast pauses the senders.
    let (sim, outcome) = run(
        "[cc]\nalgorithm = \"none\"\n[switch]\nbuffer_bytes = 2000000\n",
        8,
        None,
    );
    assert_eq!(outcome, Outcome::Finished);
    sim.net.audit_check().unwrap();
    let s = sim.net.audit_summary().unwrap();
    // The switch's ports: 16 host links, counted from the switch side.
    let reps = sim.net.port_reports();
    let sw: Vec<_> = reps.iter().filter(|p| !p.node.starts_with('h')).collect();
    assert!(!sw.is_empty());
    let rx: u64 = sw.iter().map(|p| p.counters.rx_bytes).sum();
    let tx: u64 = sw.iter().map(|p| p.counters.tx_bytes).sum();
    assert_eq!((s.switch_rx_bytes, s.switch_tx_bytes), (rx, tx));
    assert_eq!(s.switch_rx_bytes, s.switch_tx_bytes, "drained: all out");
    assert_eq!((s.dropped_bytes, s.queued_bytes), (0, 0));
    // 8 MiB of payload crossed: more than that on the wire.
    assert!(s.switch_rx_bytes > 8 * MIB);
    // Paused and released as often.
    assert!(s.xoff > 0 && s.xoff == s.xon, "{s:?}");
    // One message per flow, all completed.
    assert_eq!(
        (s.messages_posted, s.messages_done, s.messages_failed),
        (8, 8, 0)
    );
}

#[test]
fn the_books_balance_mid_run_with_packets_queued() {
    let (sim, outcome) = run("[cc]\nalgorithm = \"none\"\n", 8, Some(Time::us(200)));
    assert_eq!(outcome, Outcome::TimeLimit);
    sim.net.audit_check().unwrap();
    let s = sim.net.audit_summary().unwrap();
    assert!(s.queued_bytes > 0, "{s:?}");
    assert_eq!(s.switch_rx_bytes, s.switch_tx_bytes + s.queued_bytes);
    assert_eq!(s.messages_posted, 8);
    assert!(s.messages_done < 8);
}

#[test]
fn a_lossy_incast_balances_with_its_drops() {
    let (sim, _) = run(
        "[nic]\nroce_mtu = 4096\nack_timeout_exponent = 6\n[cc]\nalgorithm = \"none\"\n\
         [pfc]\nenabled = false\n[switch]\nbuffer_bytes = 200000\n",
        8,
        None,
    );
    sim.net.audit_check().unwrap();
    let s = sim.net.audit_summary().unwrap();
    assert!(s.dropped_bytes > 0);
    assert_eq!(s.switch_rx_bytes, s.switch_tx_bytes + s.dropped_bytes);
}

#[test]
fn a_lossless_drop_is_named() {
    // 10 KB of headroom cannot absorb what is in flight on 1 us cables at
    // 100G when the pause goes out: lossless packets are dropped.
    let spec = one_switch(
        16,
        "[cc]\nalgorithm = \"none\"\n[switch]\nheadroom_bytes = 10000\n",
    );
    let mut net = Net::new(&spec, 1).unwrap();
    net.enable_audit();
    let app = Flows::new(&net, &incast(15, MIB)).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    // Run without the debug build's stop at the first imbalance: the
    // check is called by hand.
    let outcome = sim.run(Some(Time::us(300)));
    assert_eq!(outcome, Outcome::TimeLimit);
    let e = sim.net.audit_check().unwrap_err();
    assert!(matches!(e, Error::Audit(_)), "{e:?}");
    let m = e.to_string();
    assert!(
        m.contains("dropped") && m.contains("lossless priority 3") && m.contains("headroom"),
        "{m}"
    );
    // The tools' note says the same without the audit, with the counts of
    // the ingress ports' drops.
    let note = sim.net.headroom_note().expect("a note");
    let dropped: u64 = (sim.net.port_reports().iter())
        .filter(|p| p.node == "leaf0")
        .map(|p| p.counters.drops_by_prio[3])
        .sum();
    assert!(
        dropped > 0 && note.starts_with(&format!("{dropped} frame(s), ")),
        "{note}"
    );
    assert!(note.contains("whose headroom is 10000 B"), "{note}");
}
