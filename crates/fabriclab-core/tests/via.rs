//! Pinning a flow's path through a switch (`FlowSpec::via`): the QP's UDP
//! source port is chosen so that ECMP takes the data through it, on both
//! backends; what cannot be pinned is refused with what to change.

mod common;
use common::*;
use fabriclab_core::config::{Backend, FabricSpec};
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::{FlowSpec, Flows};

/// Two leaves of four hosts under four spines (h0-h3 on leaf0).
fn two_leaves(extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!("{TWO_LEAVES}{extra}")).unwrap()
}

/// The same on another transport ("iwarp", "infiniband").
fn two_leaves_on(transport: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!("transport = \"{transport}\"\n{TWO_LEAVES}")).unwrap()
}

const TWO_LEAVES: &str = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 4\n\
                          spines = 4\nhost_link_gbps = 100\nuplink_gbps = 100\n";

fn via(src: &str, dst: &str, op: &str, sw: &str) -> FlowSpec {
    FlowSpec {
        op: op.into(),
        via: Some(sw.into()),
        ..flow(src, dst, 64 << 10)
    }
}

#[test]
fn every_pinned_flow_crosses_its_spine_on_both_backends() {
    // Sixteen flows leaf0 -> leaf1, four per spine: each path (read off the
    // routing tables) and each spine's downlink counters say so.
    let flows: Vec<FlowSpec> = (0..16)
        .map(|i| {
            let (s, d) = (format!("h{}", i % 4), format!("h{}", 4 + i / 4));
            via(&s, &d, "write", &format!("spine{}", i % 4))
        })
        .collect();
    for backend in [Backend::Packet, Backend::Flow] {
        let mut spec = two_leaves("");
        spec.sim.backend = backend;
        let net = Net::new(&spec, 7).unwrap();
        let app = Flows::new(&net, &flows).unwrap();
        let mut sim = Sim::new(net);
        let id = sim.add_app(Box::new(app));
        assert_eq!(sim.run(None), Outcome::Finished, "{backend:?}");
        let app = sim.app::<Flows>(id).unwrap();
        for (i, f) in flows.iter().enumerate() {
            let path = sim.net.qp_path(app.qp(i).unwrap());
            assert_eq!(path.len(), 3, "{path:?}");
            assert_eq!(
                Some(&path[1].0),
                f.via.as_ref(),
                "{backend:?} flow {i}: {path:?}"
            );
        }
        // Each spine sent a quarter of the data bytes towards leaf1.
        let down: Vec<u64> = (0..4)
            .map(|s| {
                sim.net
                    .port_between(&format!("spine{s}"), "leaf1")
                    .unwrap()
                    .tx_bytes
            })
            .collect();
        assert!(
            down.iter().all(|&b| b == down[0] && b > 4 * (64 << 10)),
            "{down:?}"
        );
    }
}

#[test]
fn a_pinned_read_pins_its_responses() {
    // A READ's data comes from the destination: h4's responses cross
    // spine2 on their way to h0.
    let spec = two_leaves("");
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &[via("h0", "h4", "read", "spine2")]).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let peer = sim.app::<Flows>(id).unwrap().peer_qp(0).unwrap();
    assert_eq!(sim.net.qp_path(peer)[1].0, "spine2");
    let resp = sim.net.port_between("spine2", "leaf0").unwrap().tx_bytes;
    assert!(resp > 64 << 10, "{resp}");
}

#[test]
fn the_return_path_is_pinned_apart_from_the_data() {
    // A WRITE's ACKs come back through spine3 while its data crosses
    // spine1; a READ's request goes through spine0 and its responses
    // through spine2.
    let spec = two_leaves("");
    let write = FlowSpec {
        return_via: Some("spine3".into()),
        ..via("h0", "h4", "write", "spine1")
    };
    let read = FlowSpec {
        return_via: Some("spine0".into()),
        ..via("h1", "h5", "read", "spine2")
    };
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &[write, read]).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let app = sim.app::<Flows>(id).unwrap();
    let spine = |q| sim.net.qp_path(q)[1].0.clone();
    assert_eq!(spine(app.qp(0).unwrap()), "spine1");
    assert_eq!(spine(app.peer_qp(0).unwrap()), "spine3");
    assert_eq!(spine(app.qp(1).unwrap()), "spine0");
    assert_eq!(spine(app.peer_qp(1).unwrap()), "spine2");
}

#[test]
fn what_cannot_be_pinned_says_what_to_change() {
    let err = |spec: &FabricSpec, f: FlowSpec| {
        let net = Net::new(spec, 1).unwrap();
        Flows::new(&net, &[f]).err().expect("an error").to_string()
    };
    let ecmp = two_leaves("");
    let e = err(&ecmp, via("h0", "h4", "write", "spine9"));
    assert!(
        e.contains("no switch \"spine9\"") && e.contains("spine0"),
        "{e}"
    );
    let e = err(&ecmp, via("h0", "h4", "write", "h2"));
    assert!(e.contains("no switch \"h2\""), "{e}");
    // Within one leaf no path crosses a spine.
    let e = err(&ecmp, via("h0", "h1", "write", "spine0"));
    assert!(
        e.contains("no ECMP path from h0 to h1 passes through it"),
        "{e}"
    );
    let ar = two_leaves("[routing]\nmode = \"adaptive\"\n");
    let e = err(&ar, via("h0", "h4", "write", "spine0"));
    assert!(e.contains("adaptive routing"), "{e}");
    for (transport, needle) in [("iwarp", "iWARP"), ("infiniband", "D-mod-K")] {
        let e = err(
            &two_leaves_on(transport),
            via("h0", "h4", "write", "spine0"),
        );
        assert!(e.contains(needle), "{transport}: {e}");
    }
}

#[test]
fn pinned_flows_repeat_bit_for_bit() {
    let flows: Vec<FlowSpec> = (0..4)
        .map(|i| via(&format!("h{i}"), "h4", "write", "spine1"))
        .collect();
    let spec = two_leaves("");
    let (_, a) = run_flows(&spec, &flows, 3);
    let (_, b) = run_flows(&spec, &flows, 3);
    let t = |r: &[fabriclab_core::traffic::flows::FlowResult]| {
        r.iter().map(|x| x.delivered_ps).collect::<Vec<_>>()
    };
    assert_eq!(t(&a), t(&b));
}
