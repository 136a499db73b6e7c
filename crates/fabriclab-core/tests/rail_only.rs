//! Rail-only fabrics (`kind = "rail_only"`): no switch joins two rails,
//! so a QP between rails is refused with a clear error, and NCCL, whose
//! PXN moves cross-rail data over NVLink first, runs every collective on
//! them as it does on a rail-optimized fabric.

mod common;

use fabriclab_core::config::FabricSpec;
use fabriclab_core::mpi::job::{Job, JobSpec};
use fabriclab_core::net::Net;
use fabriclab_core::tools::nccl_tests::{self, Options};
use fabriclab_core::topology::Topology;
use fabriclab_core::traffic::flows::{FlowSpec, Flows};

/// `servers` servers of 4 GPUs (4 rails) in SUs of `su`, with `spines`
/// spines (per rail when rail-only).
fn spec(kind: &str, servers: u32, su: u32, spines: u32, backend: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n[sim]\nbackend = \"{backend}\"\n\
         [gpu]\ngpus_per_server = 4\nnvlink_gbps = 3600\n\
         [topology]\nkind = \"{kind}\"\nservers = {servers}\nservers_per_su = {su}\n\
         spines = {spines}\nnic_gbps = 200\nlinks_per_pair = 2\n[ib]\nmtu = 4096\n"
    ))
    .unwrap()
}

#[test]
fn each_rail_is_a_network_of_its_own() {
    // 2 SUs of 2 servers, 4 rails, 2 spines per rail.
    let t = Topology::build(&spec("rail_only", 4, 2, 2, "packet")).unwrap();
    let hosts = 16;
    let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(t.n_hosts, hosts);
    // 2 SUs x 4 rail leaves, then 4 rails x 2 spines.
    assert_eq!(names[hosts], "su0.rail0");
    assert_eq!(names[hosts + 8], "rail0.spine0");
    assert_eq!(names[hosts + 15], "rail3.spine1");
    assert_eq!(t.nodes.len(), hosts + 8 + 8);
    // Host links, then each leaf to its rail's 2 spines x 2 links.
    assert_eq!(t.links.len(), hosts + 8 * 2 * 2);
    let rail = |name: &str| {
        let after = name.split("rail").nth(1).unwrap();
        after.split('.').next().unwrap().parse::<u32>().unwrap()
    };
    for l in &t.links[hosts..] {
        assert_eq!(
            rail(names[l.a]),
            rail(names[l.b]),
            "{} - {}",
            names[l.a],
            names[l.b]
        );
    }
    // One island per rail: NIC j of every server.
    let isl = t.host_islands();
    for h in 0..hosts {
        assert_eq!(isl[h], isl[h % 4]);
        assert_ne!(isl[h], isl[(h + 1) % hosts]);
    }
}

#[test]
fn one_su_needs_no_spine_and_two_do() {
    let t = Topology::build(&spec("rail_only", 3, 3, 0, "packet")).unwrap();
    // 12 NICs on 4 leaves, nothing else.
    assert_eq!(t.nodes.len(), 12 + 4);
    assert_eq!(t.links.len(), 12);
    let e = FabricSpec::from_toml(&spec_text("rail_only", 4, 2, 0)).unwrap_err();
    assert!(
        e.to_string().contains("spines = 0 with 2 scalable units"),
        "{e}"
    );
    let e = FabricSpec::from_toml(&spec_text("rail_optimized", 4, 4, 0)).unwrap_err();
    assert!(e.to_string().contains("kind = \"rail_only\""), "{e}");
}

fn spec_text(kind: &str, servers: u32, su: u32, spines: u32) -> String {
    format!(
        "[gpu]\ngpus_per_server = 4\n[topology]\nkind = \"{kind}\"\nservers = {servers}\n\
         servers_per_su = {su}\nspines = {spines}\nnic_gbps = 200\n"
    )
}

#[test]
fn a_qp_between_rails_is_refused_and_one_on_a_rail_runs() {
    let net = Net::new(&spec("rail_only", 4, 2, 1, "packet"), 1).unwrap();
    let flow = |src: &str, dst: &str| FlowSpec::write(src, dst, 1 << 20);
    let e = Flows::new(&net, &[flow("h0.nic0", "h3.nic1")])
        .err()
        .unwrap();
    let m = e.to_string();
    assert!(
        m.contains("no network path between h0.nic0 and h3.nic1"),
        "{m}"
    );
    assert!(m.contains("rail-only"), "{m}");
    // Same rail, across the SUs (through rail 1's spine): fine.
    assert!(Flows::new(&net, &[flow("h0.nic1", "h3.nic1")]).is_ok());
    // An MPI job over NICs of two rails is refused before it runs.
    let topo = Topology::build(&spec("rail_only", 4, 2, 1, "packet")).unwrap();
    let js = |hosts: &[&str]| JobSpec {
        np: Some(hosts.len() as u32),
        hosts: Some(hosts.iter().map(|h| h.to_string()).collect()),
        ..JobSpec::default()
    };
    let e = Job::place(&topo, &js(&["h0.nic2", "h1.nic2", "h2.nic3"])).unwrap_err();
    assert!(e.to_string().contains("no network path"), "{e}");
    assert!(Job::place(&topo, &js(&["h0.nic2", "h1.nic2", "h3.nic2"])).is_ok());
}

/// nccl-tests' options: `test` at `bytes` on `nodes` servers, 2 calls.
fn opts(test: &str, nodes: u32, bytes: u64, pxn_disable: bool) -> Options {
    let mut o = common::nccl_opts(test, nodes, bytes);
    o.nccl.pxn_disable = Some(pxn_disable);
    o
}

fn nccl_pxn(spec: &FabricSpec, test: &str, bytes: u64, pxn_disable: bool) -> nccl_tests::Row {
    let o = opts(test, 4, bytes, pxn_disable);
    nccl_tests::run(spec, &o, 1, None).unwrap().rows[0].clone()
}

fn nccl(spec: &FabricSpec, test: &str, bytes: u64) -> nccl_tests::Row {
    nccl_pxn(spec, test, bytes, false)
}

#[test]
fn nccl_runs_on_rails_alone_as_on_a_rail_optimized_fabric() {
    // One SU: the rail-optimized fabric's spines carry none of NCCL's
    // traffic (PXN keeps every network hop on a rail), so removing them
    // changes no time. Data checked (#wrong 0) where nccl-tests' check
    // fits (256 KiB on 16 GPUs).
    let (only, opt) = (
        spec("rail_only", 4, 4, 0, "packet"),
        spec("rail_optimized", 4, 4, 2, "packet"),
    );
    for test in ["all_reduce_perf", "alltoall_perf", "all_gather_perf"] {
        let (a, b) = (nccl(&only, test, 256 << 10), nccl(&opt, test, 256 << 10));
        assert_eq!(a.wrong, Some(0), "{test}");
        assert_eq!(b.wrong, Some(0), "{test}");
        let (a, b) = (nccl(&only, test, 16 << 20), nccl(&opt, test, 16 << 20));
        assert!(
            (a.time_us / b.time_us - 1.0).abs() < 0.01,
            "{test}: rail-only {} us, rail-optimized {} us",
            a.time_us,
            b.time_us
        );
    }
}

#[test]
fn two_sus_of_rails_run_on_both_backends() {
    // Rings cross between SUs on each rail's own spines.
    for backend in ["packet", "flow"] {
        let s = spec("rail_only", 4, 2, 1, backend);
        let r = nccl(&s, "all_reduce_perf", 16 << 20);
        assert!(r.busbw > 0.0, "{backend}");
        // 4 rails x 200 Gb/s per server: busbw cannot pass 100 GB/s.
        assert!(r.busbw < 100.0, "{backend}: {}", r.busbw);
    }
}

#[test]
fn without_pxn_data_crosses_rails_in_the_network() {
    // Rail-only: NCCL_PXN_DISABLE leaves no path between rails.
    let o = opts("alltoall_perf", 2, 1 << 20, true);
    let e = nccl_tests::run(&spec("rail_only", 4, 4, 0, "packet"), &o, 1, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no network path") && e.contains("NCCL_PXN_DISABLE"),
        "{e}"
    );
    // Rail-optimized: the same programs compute the same data either way,
    // and without PXN AllToAll moves no byte over NVLink between servers:
    // its shared-memory counter holds the intra-server pairs only.
    let opt = spec("rail_optimized", 4, 4, 2, "packet");
    for test in ["alltoall_perf", "all_reduce_perf"] {
        let (on, off) = (
            nccl_pxn(&opt, test, 256 << 10, false),
            nccl_pxn(&opt, test, 256 << 10, true),
        );
        assert_eq!((on.wrong, off.wrong), (Some(0), Some(0)), "{test}");
    }
    let counters = |pxn_disable: bool| {
        let o = opts("alltoall_perf", 4, 4 << 20, pxn_disable);
        nccl_tests::run(&opt, &o, 1, None).unwrap().run.mpi
    };
    let (on, off) = (counters(false), counters(true));
    // 16 GPUs, 4 per server: of each GPU's 15 peers 3 share its server;
    // of the 12 others, 9 are on another rail (PXN's NVLink legs).
    assert_eq!(on.net_bytes, off.net_bytes);
    assert_eq!(on.shm_bytes * 3, off.shm_bytes * 12);
}
