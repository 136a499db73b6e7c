//! InfiniBand routing and congestion control: D-mod-K forwarding tables
//! against Ethernet's ECMP hashing on the same leaf-spine (path collisions
//! counted, and what they cost), and FECN/BECN congestion control sparing
//! an incast's victim flow.

mod common;
use common::*;
use fabriclab_core::config::{Backend, FabricSpec};
use fabriclab_core::net::{Net, QpId};
use std::collections::HashMap;

/// 4 leaves x 4 hosts, 4 spines, one 100G link per leaf-spine pair; the
/// Ethernet one with PFC and no DCQCN, so that routing alone differs.
fn leaf_spine(transport: &str) -> FabricSpec {
    let cc = if transport == "roce" {
        "[cc]\nalgorithm = \"none\"\n"
    } else {
        ""
    };
    FabricSpec::from_toml(&format!(
        "transport = \"{transport}\"\n[topology]\nkind = \"leaf_spine\"\nspines = 4\nleaves = 4\n\
         hosts_per_leaf = 4\nhost_link_gbps = 100\nuplink_gbps = 100\n{cc}"
    ))
    .unwrap()
}

/// Collisions of a set of flows: over every switch egress they use, the
/// flows beyond the first.
fn collisions(net: &mut Net, pairs: &[(u32, u32)]) -> usize {
    let mut load: HashMap<(String, u32), usize> = HashMap::new();
    for &(s, d) in pairs {
        let (qp, _) = net.connect(s, d, 0, 0, None).unwrap();
        for hop in net.qp_path(qp) {
            *load.entry(hop).or_default() += 1;
        }
    }
    load.values().map(|&n| n - 1).sum()
}

#[test]
fn a_shift_permutation_has_no_collision_with_d_mod_k_and_some_with_ecmp() {
    // h_i -> h_(i+4): every leaf sends its 4 hosts to the next leaf's 4.
    // D-mod-K sends destination d up port d mod 4 and each spine reaches d
    // by one port: 4 flows on 4 up-links per leaf, one flow per spine down-
    // link. ECMP hashes each QP's UDP source port independently: 4 flows on
    // 4 up-links collide unless the hash happens to be a permutation (4! /
    // 4^4 = 9.4 % per leaf).
    let shift: Vec<(u32, u32)> = (0..16).map(|i| (i, (i + 4) % 16)).collect();
    let mut ib = Net::new(&leaf_spine("infiniband"), 1).unwrap();
    assert_eq!(collisions(&mut ib, &shift), 0);
    let ecmp: Vec<usize> = (1..=5)
        .map(|seed| collisions(&mut Net::new(&leaf_spine("roce"), seed).unwrap(), &shift))
        .collect();
    println!("shift permutation: D-mod-K 0 collisions; ECMP, seeds 1..5: {ecmp:?}");
    assert!(ecmp.iter().all(|&c| c > 0), "{ecmp:?}");

    // The reverse: destinations equal mod 4 (h4, h8, h12 from leaf0) all
    // take leaf0's up-port 0 under D-mod-K: 2 collisions, always.
    let same_residue = [(0, 4), (1, 8), (2, 12)];
    let mut ib = Net::new(&leaf_spine("infiniband"), 1).unwrap();
    assert_eq!(collisions(&mut ib, &same_residue), 2);
    let ecmp: Vec<usize> = (1..=5)
        .map(|seed| {
            collisions(
                &mut Net::new(&leaf_spine("roce"), seed).unwrap(),
                &same_residue,
            )
        })
        .collect();
    println!("destinations equal mod 4: D-mod-K 2 collisions; ECMP, seeds 1..5: {ecmp:?}");
    assert!(ecmp.iter().any(|&c| c < 2), "{ecmp:?}");
}

#[test]
fn d_mod_k_on_a_three_level_fat_tree_spreads_a_pod_over_every_core() {
    // k = 8: 128 hosts, 4 per edge switch, 16 per pod, 16 cores. Going up,
    // an edge switch takes aggregation switch d mod 4 and that one core
    // (d / 4) mod 4 (Zahavi's D-mod-K, the second level divided by the
    // first level's 4 up-links). A shift by one pod (h_i -> h_(i+16)) then
    // has no collision: the 16 destinations of a pod differ in (d mod 4,
    // d / 4 mod 4), so the pod's 16 flows take 16 different cores. With
    // d mod 4 at both levels (before 2026-11-29) only 4 cores carried
    // traffic, 4 flows on each link to them, and every flow ran at a
    // quarter of the line rate.
    let spec = FabricSpec::from_toml(
        "transport = \"infiniband\"\n[topology]\nkind = \"fat_tree\"\nk = 8\nhost_link_gbps = 100\n",
    )
    .unwrap();
    let shift: Vec<(u32, u32)> = (0..128).map(|i| (i, (i + 16) % 128)).collect();
    let mut net = Net::new(&spec, 1).unwrap();
    let mut cores: HashMap<String, usize> = HashMap::new();
    let mut load: HashMap<(String, u32), usize> = HashMap::new();
    for &(s, d) in &shift {
        let (qp, _) = net.connect(s, d, 0, 0, None).unwrap();
        for hop in net.qp_path(qp) {
            if hop.0.starts_with("core") {
                *cores.entry(hop.0.clone()).or_default() += 1;
            }
            *load.entry(hop).or_default() += 1;
        }
    }
    assert_eq!(cores.len(), 16, "{cores:?}");
    assert!(cores.values().all(|&n| n == 8), "{cores:?}");
    let collisions: usize = load.values().map(|&n| n - 1).sum();
    assert_eq!(collisions, 0);
    // And at line rate: 1 MiB per flow ends when it would alone, on both
    // backends (1 MiB at 100G with IB's per-packet overheads, about 86 us,
    // plus the path's latency).
    let alone = run_flows(&spec, &[flow("h0", "h16", 1 << 20)], 1).1[0]
        .completed_ps
        .unwrap();
    for backend in [Backend::Packet, Backend::Flow] {
        let mut spec = spec.clone();
        spec.sim.backend = backend;
        let flows: Vec<_> = (shift.iter())
            .map(|&(s, d)| flow(&format!("h{s}"), &format!("h{d}"), 1 << 20))
            .collect();
        let res = run_flows(&spec, &flows, 1).1;
        let last = res.iter().map(|r| r.completed_ps.unwrap()).max().unwrap();
        println!(
            "{backend:?}: shift by a pod, last flow {:.2} us, one alone {:.2} us",
            last as f64 / 1e6,
            alone as f64 / 1e6
        );
        assert!((last as f64) < alone as f64 * 1.05, "{last} vs {alone}");
    }
}

#[test]
fn the_collisions_cost_what_they_should() {
    // The shift permutation of 1 MiB flows: on InfiniBand every flow has
    // its own links and they all finish together; with ECMP (PFC, no
    // DCQCN) the flows that share an up-link take two or three times as
    // long.
    let flows: Vec<_> = (0..16)
        .map(|i| flow(&format!("h{i}"), &format!("h{}", (i + 4) % 16), 1 << 20))
        .collect();
    let span = |spec: &FabricSpec| {
        let (_, res) = run_flows(spec, &flows, 1);
        let t: Vec<u64> = res.iter().map(|r| r.delivered_ps.unwrap()).collect();
        (
            *t.iter().min().unwrap() as f64,
            *t.iter().max().unwrap() as f64,
        )
    };
    let (ib_min, ib_max) = span(&leaf_spine("infiniband"));
    let (eth_min, eth_max) = span(&leaf_spine("roce"));
    println!(
        "1 MiB shift permutation: IB {:.1}..{:.1} us, RoCE/ECMP {:.1}..{:.1} us",
        ib_min / 1e6,
        ib_max / 1e6,
        eth_min / 1e6,
        eth_max / 1e6
    );
    assert!(ib_max / ib_min < 1.01);
    assert!(eth_max / ib_max > 1.6);
}

/// Two leaves and a spine with 400G up-links (so that no link but h4's is
/// oversubscribed); an incast onto h4 from h0, h1, h2 (leaf0) and h5, and
/// a victim h3 -> h6 through the same spine links.
fn incast_with_victim(cc: bool) -> (f64, u64, u64, u16) {
    let spec = FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\n\
         hosts_per_leaf = 4\nhost_link_gbps = 100\nuplink_gbps = 400\n\
         host_link_delay_ns = 100\nuplink_delay_ns = 100\n[ib.cc]\nenabled = {cc}\n"
    ))
    .unwrap();
    let mut flows = vec![flow("h3", "h6", 4 << 20)];
    for src in ["h0", "h1", "h2", "h5"] {
        flows.push(flow(src, "h4", 4 << 20));
    }
    let net = Net::new(&spec, 1).unwrap();
    let app = fabriclab_core::traffic::flows::Flows::new(&net, &flows).unwrap();
    let mut sim = fabriclab_core::sim::Sim::new(net);
    let id = sim.add_app(Box::new(app));
    sim.run(None);
    let res = sim
        .app::<fabriclab_core::traffic::flows::Flows>(id)
        .unwrap()
        .results();
    assert!(res.iter().all(|r| r.completed_ps.is_some()));
    let marks: u64 = sim
        .net
        .port_reports()
        .iter()
        .map(|p| p.ib.as_ref().unwrap().fecn_marks)
        .sum();
    // BECNs reaching the victim's QP (0) and the hot senders' (2, 4, ...).
    let qps = sim.net.qp_reports();
    let becn_victim = qps[0].counters.cnps_rx;
    let becn_hot: u64 = qps.iter().skip(1).map(|q| q.counters.cnps_rx).sum();
    // The root marks the hot flows; the victim's packets are marked only in
    // passing (a spine port between two credit stalls).
    assert!(becn_victim * 10 <= becn_hot, "{becn_victim} vs {becn_hot}");
    let ccti = (0..qps.len() as u32)
        .map(|q| sim.net.ib_ccti(QpId(q)))
        .max()
        .unwrap();
    assert_eq!(switch_total(&sim, |c| c.drops), 0);
    (res[0].delivered_ps.unwrap() as f64, marks, becn_hot, ccti)
}

#[test]
fn congestion_control_slows_the_victim_less() {
    // Without CC the victim's packets queue behind the hot ones in leaf1's
    // input buffer from the spine (credit starvation): it gets about the
    // incast's share of 25 Gb/s. With CC the root (leaf1 -> h4) marks the
    // hot flows, their sources slow down, the buffers drain and the victim
    // gets most of its 100 Gb/s (4 MiB alone: 339 us).
    let (off, marks_off, becn_off, _) = incast_with_victim(false);
    let (on, marks_on, becn_on, ccti) = incast_with_victim(true);
    println!(
        "victim 4 MiB beside a 4-to-1 incast: CC off {:.1} us ({marks_off} FECN), CC on {:.1} us \
         ({marks_on} FECN, {becn_on} BECN to the hot senders, CCTI at the end {ccti})",
        off / 1e6,
        on / 1e6
    );
    assert_eq!((marks_off, becn_off), (0, 0), "CC is off by default");
    assert!(marks_on > 0 && becn_on > 0);
    assert!(on < 0.6 * off, "CC on {on} vs off {off}");
}
