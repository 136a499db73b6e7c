//! NVLink SHARP (NCCL's NVLS and NVLS-Tree): schedules that compute what
//! NCCL promises, NVLink traffic that follows the switch's arithmetic,
//! NCCL's selection between NVLS and the rings, and the options that turn
//! it off.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::nccl::{self, Algorithm, CollCall, Comm, NcclColl, Protocol};
use fabriclab_core::tools::nccl_tests;
use fabriclab_core::topology::Topology;

mod common;
use common::nccl_opts as opts;

fn fabric(servers: u32, gpus: u32, nic_gbps: f64) -> FabricSpec {
    fabric_with(servers, gpus, nic_gbps, "")
}

/// A rail-optimized IB fabric of H100 servers; `gpu` adds `[gpu]` keys.
fn fabric_with(servers: u32, gpus: u32, nic_gbps: f64, gpu: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n[gpu]\ngpus_per_server = {gpus}\n{gpu}\
         [topology]\nkind = \"rail_optimized\"\nservers = {servers}\nspines = 2\n\
         nic_gbps = {nic_gbps}\nlinks_per_pair = 4\n[ib]\nmtu = 4096\n"
    ))
    .unwrap()
}

fn run(spec: &FabricSpec, test: &str, nodes: u32, bytes: u64, algo: &str) -> nccl_tests::Row {
    let mut o = opts(test, nodes, bytes);
    if !algo.is_empty() {
        o.nccl.algo = Some(algo.into());
    }
    nccl_tests::run(spec, &o, 1, None).unwrap().rows.remove(0)
}

#[test]
fn nvls_schedules_compute_what_nccl_promises() {
    let spec = fabric(3, 4, 100.0);
    let topo = Topology::build(&spec).unwrap();
    let g = spec.gpu.clone().unwrap();
    for (servers, gpus, chans) in [(1, 4, 2), (1, 3, 5), (3, 4, 3), (2, 3, 2), (3, 2, 4)] {
        let mut comm = Comm::new(&topo, &g, servers, gpus).unwrap();
        comm.channels = chans;
        let colls: &[NcclColl] = if servers == 1 {
            &[
                NcclColl::AllReduce,
                NcclColl::AllGather,
                NcclColl::ReduceScatter,
            ]
        } else {
            &[NcclColl::AllReduce]
        };
        let algo = if servers == 1 {
            Algorithm::Nvls
        } else {
            Algorithm::NvlsTree
        };
        for &coll in colls {
            // 128 KiB chunks of floats: 32768 elements per head, so
            // 300,000 elements take several loops with a ragged last one.
            for count in [1u64, 7, 20_011, 300_000] {
                let call = CollCall {
                    coll,
                    count,
                    elem_bytes: 4,
                    root: 0,
                    proto: Protocol::Simple,
                    algo,
                };
                assert!(nccl::coll::nvls_applies(&comm, &call));
                for seed in [3, 4] {
                    common::check_nccl_call(&comm, &call, seed).unwrap_or_else(|e| {
                        panic!("{coll:?} {servers}x{gpus} ch {chans} count {count}: {e}")
                    });
                }
            }
        }
    }
}

#[test]
fn one_server_follows_the_switchs_arithmetic() {
    // 8 GPUs, 1 GiB: every GPU's NVLink carries S out (its part of every
    // reduction) plus S/8 (the multicasts it heads), and S/8 + S in, at
    // 0.70 of 450 GB/s: algbw = 315 / 1.125 = 280 GB/s, busbw x 1.75 =
    // 490 GB/s, against a ring's 2 x 7/8 S each way.
    let busbw = |gpu: &str| {
        run(
            &fabric_with(1, 8, 400.0, gpu),
            "all_reduce_perf",
            1,
            1 << 30,
            "",
        )
        .busbw
    };
    let hand = 1.75 * 0.85 * 20.6 / 25.0 * 450.0 / 1.125;
    let r = run(&fabric(1, 8, 400.0), "all_reduce_perf", 1, 1 << 30, "");
    assert_eq!(r.algo, "NVLS/Simple");
    assert!(
        r.busbw > 0.95 * hand && r.busbw <= hand,
        "{} against {hand}",
        r.busbw
    );
    // The switch's efficiency sets it: at 1.0 it is 1 / 0.70 faster.
    let full = busbw("nvls_efficiency = 1.0\n");
    assert!(
        (full / r.busbw - 25.0 / (0.85 * 20.6)).abs() < 0.05,
        "{full} {}",
        r.busbw
    );
    // Off (the server's or NCCL's switch), the ring runs, at about 80 %
    // of NVLink.
    let off = busbw("nvls = false\n");
    assert!(off < 0.8 * r.busbw && off > 0.75 * 450.0, "{off}");
    let mut o = opts("all_reduce_perf", 1, 1 << 30);
    o.nccl.nvls_enable = Some(false);
    let spec = fabric(1, 8, 400.0);
    let r2 = nccl_tests::run(&spec, &o, 1, None).unwrap();
    assert!(r2.rows[0].algo.starts_with("Ring/"), "{}", r2.rows[0].algo);
    assert_eq!(r2.rows[0].busbw, off);
    // AllGather and ReduceScatter: each GPU's ingress (or egress)
    // carries every block, its own included, so NVLS is no faster than
    // the ring's (n-1)/n here; it runs when NCCL's model picks it.
    for test in ["all_gather_perf", "reduce_scatter_perf"] {
        let r = run(&spec, test, 1, 256 << 20, "NVLS");
        assert_eq!(r.algo, "NVLS/Simple", "{test}");
        let hand = 0.875 * 0.85 * 20.6 / 25.0 * 450.0;
        assert!(
            r.busbw > 0.9 * hand && r.busbw <= hand,
            "{test} {} {hand}",
            r.busbw
        );
    }
}

#[test]
fn across_servers_nvls_tree_follows_nvlink_or_the_nics() {
    // 2 servers of 8, 1 GiB: NVLink carries what it carries on one
    // server; each NIC sends S/8 up or down its rail's tree. With 400G
    // NICs NVLink binds: busbw = 1.875 x 280 = 525 GB/s.
    let r = run(&fabric(2, 8, 400.0), "all_reduce_perf", 2, 1 << 30, "");
    assert_eq!(r.algo, "NVLSTree/Simple");
    let hand = 1.875 * 0.85 * 20.6 / 25.0 * 450.0 / 1.125;
    assert!(
        r.busbw > 0.93 * hand && r.busbw <= hand,
        "{} {hand}",
        r.busbw
    );
    // With 100G NICs they bind: S/8 per NIC at 12.5 GB/s less IB's
    // headers, so busbw = 1.875 x 8 x 12.5 = 187.5 GB/s at most.
    let r = run(
        &fabric(2, 8, 100.0),
        "all_reduce_perf",
        2,
        256 << 20,
        "NVLSTree",
    );
    let nic = 1.875 * 8.0 * 12.5;
    assert!(r.busbw > 0.85 * nic && r.busbw <= nic, "{} {nic}", r.busbw);
    // The data is right through nccl-tests' own check.
    for (nodes, test) in [
        (1, "all_reduce_perf"),
        (2, "all_reduce_perf"),
        (1, "reduce_scatter_perf"),
    ] {
        let spec = fabric(2, 8, 400.0);
        let mut o = opts(test, nodes, 1 << 18);
        o.nccl.algo = Some(if nodes == 1 { "NVLS" } else { "NVLSTree" }.into());
        let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
        assert_eq!(r.rows[0].wrong, Some(0), "{test} {nodes}");
        assert!(r.rows[0].algo.starts_with("NVLS"), "{test} {nodes}");
    }
}

#[test]
fn nvls_needs_nvswitch_gen3_and_a_forced_algo_falls_back_as_in_nccl() {
    // An A100 server (compute capability 80) has no NVLink SHARP: NVLS
    // forced there is not available, so NCCL's backup ring runs.
    let spec = fabric_with(1, 8, 200.0, "compute_capability = 80\n");
    let r = run(&spec, "all_reduce_perf", 1, 64 << 20, "NVLS");
    assert!(r.algo.starts_with("Ring/"), "{}", r.algo);
    let e = FabricSpec::from_toml(
        "[gpu]\ngpus_per_server = 8\ncompute_capability = 80\nnvls = true\n\
         [topology]\nkind = \"rail_optimized\"\nservers = 1\nspines = 1\nnic_gbps = 200\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("gpu.nvls"), "{e}");
    // NVLS-Tree forced on one server, NVLS on two: not enabled there, so
    // NCCL falls back to Ring and Tree.
    let spec = fabric(2, 8, 400.0);
    assert!(!run(&spec, "all_reduce_perf", 1, 64 << 20, "NVLSTree")
        .algo
        .starts_with("NVLS"));
    assert!(!run(&spec, "all_reduce_perf", 2, 64 << 20, "NVLS")
        .algo
        .starts_with("NVLS"));
    // Broadcast has no NVLS: the ring.
    assert!(run(&spec, "broadcast_perf", 1, 64 << 20, "NVLS")
        .algo
        .starts_with("Ring/"));
}

#[test]
fn nvls_tree_runs_on_the_flow_backend_and_agrees_with_the_packet_core() {
    let time = |backend: &str| {
        let mut spec = fabric(2, 8, 400.0);
        spec.sim.backend = fabriclab_core::config::Backend::parse(backend).unwrap();
        run(&spec, "all_reduce_perf", 2, 64 << 20, "NVLSTree")
    };
    let (p, f) = (time("packet"), time("flow"));
    assert_eq!(p.algo, "NVLSTree/Simple");
    assert_eq!(f.algo, "NVLSTree/Simple");
    assert!(
        (f.time_us / p.time_us - 1.0).abs() < 0.05,
        "{} {}",
        f.time_us,
        p.time_us
    );
}

#[test]
fn nvls_tree_on_the_flow_backend_tracks_the_packet_core_whichever_link_binds() {
    // 2 servers, all_reduce with NVLS-Tree, flow against packet time. At
    // 8 x 400G NVLink SHARP binds; with 100G NICs the network does, and
    // the pipeline's fill is paid stage by stage (docs/nccl.md): the flow
    // backend was 29-56 % slow there until 2026-11-28. Measured now:
    // +0.3 % to +12.2 % against the packet core on this grid.
    for (gpus, gbps) in [(4u32, 100.0), (8, 100.0), (8, 400.0), (4, 400.0)] {
        for mib in [1u64, 8, 64] {
            let time = |backend: &str| {
                let mut spec = fabric(2, gpus, gbps);
                spec.sim.backend = fabriclab_core::config::Backend::parse(backend).unwrap();
                run(&spec, "all_reduce_perf", 2, mib << 20, "NVLSTree").time_us
            };
            let (p, f) = (time("packet"), time("flow"));
            println!(
                "{gpus} GPUs, {gbps}G NICs, {mib} MiB: packet {p:.1} us, flow {f:.1} us ({:.3})",
                f / p
            );
            assert!(
                (f / p - 1.0).abs() < 0.13,
                "{gpus} x {gbps}G, {mib} MiB: flow {f} vs packet {p}"
            );
        }
    }
}

#[test]
fn nvls_tree_on_four_and_eight_servers_tracks_the_packet_core() {
    // Deeper trees: 4 and 8 servers, flow against packet time. The fill
    // is the smaller of the two estimates (docs/nccl.md); measured
    // 2026-11-28: 0.931 to 1.166 on this grid (each estimate alone reached
    // 1.36 and 1.41).
    for (servers, gpus, gbps) in [
        (8u32, 8u32, 100.0),
        (8, 8, 400.0),
        (4, 8, 100.0),
        (4, 8, 400.0),
        (4, 4, 100.0),
    ] {
        for mib in [1u64, 8, 64] {
            let time = |backend: &str| {
                let mut spec = fabric(servers, gpus, gbps);
                spec.sim.backend = fabriclab_core::config::Backend::parse(backend).unwrap();
                run(&spec, "all_reduce_perf", servers, mib << 20, "NVLSTree").time_us
            };
            let (p, f) = (time("packet"), time("flow"));
            println!("{servers} x {gpus} GPUs, {gbps}G NICs, {mib} MiB: packet {p:.1} us, flow {f:.1} us ({:.3})", f / p);
            assert!(
                (f / p - 1.0).abs() < 0.18,
                "{servers} x {gpus} x {gbps}G, {mib} MiB: flow {f} vs packet {p}"
            );
        }
    }
}
