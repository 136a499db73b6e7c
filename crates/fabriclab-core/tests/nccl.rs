//! The NCCL model and nccl-tests: schedules that compute what NCCL
//! promises, bandwidth limited by the right part (NVLink inside a server,
//! the NICs between servers), nccl-tests' format, determinism and errors.

use fabriclab_core::config::{self, FabricSpec};
use fabriclab_core::nccl::{Algorithm, CollCall, Comm, Costs, NcclColl, Protocol};
use fabriclab_core::report;
use fabriclab_core::tools::nccl_tests::{self, Options};
use fabriclab_core::topology::Topology;

fn fabric(servers: u32, gpus: u32, nic_gbps: f64, nvlink_gbps: f64) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "transport = \"infiniband\"\n[gpu]\ngpus_per_server = {gpus}\nnvlink_gbps = {nvlink_gbps}\n\
         [topology]\nkind = \"rail_optimized\"\nservers = {servers}\nspines = 2\n\
         nic_gbps = {nic_gbps}\nlinks_per_pair = 4\n[ib]\nmtu = 4096\n"
    ))
    .unwrap()
}

mod common;
use common::nccl_opts as opts;

#[test]
fn every_collective_computes_what_nccl_promises() {
    let spec = fabric(3, 4, 100.0, 3600.0);
    let topo = Topology::build(&spec).unwrap();
    let g = spec.gpu.clone().unwrap();
    for (servers, gpus, chans) in [(1, 4, 2), (3, 4, 3), (3, 1, 1), (2, 3, 4)] {
        let mut comm = Comm::new(&topo, &g, servers, gpus).unwrap();
        comm.channels = chans;
        let n = comm.n();
        for (coll, algo) in [
            (NcclColl::AllReduce, Algorithm::Ring),
            (NcclColl::AllReduce, Algorithm::Tree),
            (NcclColl::AllGather, Algorithm::Ring),
            (NcclColl::ReduceScatter, Algorithm::Ring),
            (NcclColl::Broadcast, Algorithm::Ring),
            (NcclColl::Reduce, Algorithm::Ring),
            (NcclColl::AllToAll, Algorithm::Ring),
            (NcclColl::SendRecv, Algorithm::Ring),
        ] {
            // LL's 32 KiB steps: 8192 floats, so 20011 elements take
            // several loops with a ragged last one.
            for count in [1u64, 7, 20_011] {
                let call = CollCall {
                    coll,
                    count,
                    elem_bytes: 4,
                    root: n - 1,
                    proto: Protocol::Ll,
                    algo,
                };
                common::check_nccl_call(&comm, &call, 7)
                    .unwrap_or_else(|e| panic!("{coll:?} {algo:?} {servers}x{gpus} {count}: {e}"));
            }
        }
    }
}

#[test]
fn one_server_is_limited_by_nvlink() {
    // 8 GPUs, 1 GiB AllReduce: the ring moves 2(n-1)/n S per GPU over its
    // NVLink, so busbw is the NVLink rate (450 GB/s) less the latency.
    let run = |nvlink: f64| {
        let spec = fabric(1, 8, 400.0, nvlink);
        let mut o = opts("all_reduce_perf", 1, 1 << 30);
        o.nccl.proto = Some("Simple".into());
        o.nccl.algo = Some("Ring".into());
        nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].busbw
    };
    // The per-step costs of the Simple protocol (NCCL's 3.4 us NVLink hop)
    // sit in each channel's ring, so a ring reaches about 80 % of NVLink
    // (a Ring all_reduce on 8 H100s measures 360-380 GB/s; NVLS reaches
    // 480, `tests/nvls.rs`).
    let bw = run(3600.0);
    assert!(bw > 0.75 * 450.0 && bw < 450.0, "{bw}");
    // Twice the NVLink: much faster. The NIC rate plays no part.
    let bw2 = run(7200.0);
    assert!(bw2 / bw > 1.5, "{bw} {bw2}");
    let spec = fabric(1, 8, 100.0, 3600.0);
    let mut o = opts("all_reduce_perf", 1, 1 << 30);
    o.nccl.proto = Some("Simple".into());
    o.nccl.algo = Some("Ring".into());
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    assert_eq!(r.rows[0].busbw, bw);
    assert_eq!(r.run.mpi.net_bytes, 0);
}

#[test]
fn across_servers_the_nics_limit_the_bus_bandwidth() {
    // 2 servers x 8 GPUs, one 100G NIC each: ring busbw is the server's
    // eight NICs' goodput (8 x 12.5 GB/s less IB overheads), not NVLink.
    let run = |nic: f64, nvlink: f64| {
        let spec = fabric(2, 8, nic, nvlink);
        let mut o = opts("all_reduce_perf", 2, 256 << 20);
        o.nccl.proto = Some("Simple".into());
        o.nccl.algo = Some("Ring".into());
        let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
        assert!(r.run.mpi.net_bytes > 0 && r.run.mpi.shm_bytes > 0);
        r.rows[0].busbw
    };
    let bw = run(100.0, 3600.0);
    assert!(bw > 0.85 * 100.0 && bw < 100.0, "{bw}");
    let faster_nvlink = run(100.0, 7200.0);
    assert!(
        (faster_nvlink / bw - 1.0).abs() < 0.03,
        "{bw} {faster_nvlink}"
    );
    let faster_nic = run(200.0, 3600.0);
    assert!(faster_nic / bw > 1.8, "{bw} {faster_nic}");
}

#[test]
fn output_matches_the_nccl_tests_format() {
    let spec = fabric(2, 8, 400.0, 3600.0);
    let mut o = opts("all_reduce_perf", 2, 8);
    o.max_bytes = Some(1 << 20);
    o.step_factor = Some(2);
    o.ngpus = Some(1);
    o.iters = Some(20);
    o.warmup_iters = Some(5);
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    let text = report::nccl_tests::text(&r);
    let sample = include_str!("data/nccl_tests_all_reduce_2x8_h100.txt");
    let lines: Vec<&str> = text.lines().collect();
    let want: Vec<&str> = sample.lines().collect();
    // The parameter line (but maxBytes), the header lines, the footer
    // labels are nccl-tests' own.
    assert_eq!(
        lines[0].replace("maxBytes 1048576", "maxBytes 8589934592"),
        want[0]
    );
    for i in 19..23 {
        assert_eq!(lines[i], want[i], "header line {i}");
    }
    assert_eq!(lines[2], "# Using devices");
    assert!(lines[3].starts_with("#  Rank  0 Group  0 Pid  10000 on         h0 device  0"));
    assert!(lines[18].contains(" on         h1 device  7 ") && lines[18].ends_with("HBM3"));
    // Rows: every column ends where the sample's do.
    let ends = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
            .collect()
    };
    assert_eq!(
        ends(lines[23]),
        ends(want[23]),
        "{}\n{}",
        lines[23],
        want[23]
    );
    assert!(lines[23].starts_with("           8             2     float     sum      -1"));
    let n_rows = 18; // 8 B .. 1 MiB
    assert_eq!(lines[23 + n_rows], "# Out of bounds values : 0 OK");
    assert!(lines[24 + n_rows].starts_with("# Avg bus bandwidth    : "));
    // #wrong was checked up to 512 KiB (then N/A) and is 0.
    assert!(r.rows[..17].iter().all(|x| x.wrong == Some(0)));
    assert_eq!(r.rows[17].wrong, None);
    // One process per GPU (-g 1): a pid per rank, as in the sample.
    let pid = |l: &str| l.split_whitespace().nth(6).unwrap().to_string();
    assert_eq!(pid(lines[3]), "10000");
    assert_eq!(pid(lines[4]), "10001");
    // -g 8: one process drives a server's 8 GPUs, so its ranks share a pid.
    o.ngpus = Some(8);
    o.max_bytes = Some(8);
    let text = report::nccl_tests::text(&nccl_tests::run(&spec, &o, 1, None).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains(" nGpus 8 "), "{}", lines[0]);
    let pids: Vec<String> = lines[3..19].iter().map(|l| pid(l)).collect();
    assert!(pids[..8].iter().all(|p| p == "10000"), "{pids:?}");
    assert!(pids[8..].iter().all(|p| p == "10001"), "{pids:?}");
}

#[test]
fn busbw_is_algbw_times_the_programs_factor() {
    let spec = fabric(2, 4, 100.0, 3600.0);
    for (test, f) in [
        ("all_reduce_perf", 2.0 * 7.0 / 8.0),
        ("all_gather_perf", 7.0 / 8.0),
        ("reduce_scatter_perf", 7.0 / 8.0),
        ("alltoall_perf", 7.0 / 8.0),
        ("broadcast_perf", 1.0),
        ("reduce_perf", 1.0),
        ("sendrecv_perf", 1.0),
    ] {
        let r = nccl_tests::run(&spec, &opts(test, 2, 1 << 20), 1, None).unwrap();
        let row = &r.rows[0];
        assert!((row.busbw / row.algbw - f).abs() < 1e-9, "{test}");
        assert!((row.algbw - row.size as f64 / row.time_us / 1e3).abs() < 1e-9);
        assert_eq!(row.wrong, Some(0), "{test}");
        if test == "all_gather_perf" {
            // size is the whole output, count the per-rank elements.
            assert_eq!((row.size, row.count), (1 << 20, (1 << 20) / 4 / 8));
        }
    }
}

#[test]
fn small_messages_pick_a_low_latency_protocol() {
    let spec = fabric(2, 8, 400.0, 3600.0);
    let mut o = opts("all_reduce_perf", 2, 8);
    o.max_bytes = Some(1 << 30);
    o.step_factor = Some(1 << 11);
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    let algos: Vec<&str> = r.rows.iter().map(|x| x.algo.as_str()).collect();
    // NCCL's model: 8 bytes on 2 servers take the tree's few hops with
    // LL (6.8 + 2 x (7 x 0.6 + 5.0) = 25.2 us against the ring's 43.4);
    // at 1 GiB LL's half-rate lines lose and NVLS-Tree's bandwidth wins
    // (8 x 50 x 5/6 = 333 GB/s against the ring's 213), or without
    // NVLink SHARP the ring's.
    assert_eq!(algos.first(), Some(&"Tree/LL"), "{algos:?}");
    assert_eq!(algos.last(), Some(&"NVLSTree/Simple"), "{algos:?}");
    o.nccl.nvls_enable = Some(false);
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    let last = r.rows.last().unwrap().algo.as_str();
    assert!(
        last.starts_with("Ring/") && !last.ends_with("/LL"),
        "{last}"
    );
    // NCCL_ALGO=Ring keeps the ring, with LL at 8 bytes.
    o.nccl.algo = Some("ring".into());
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    assert_eq!(r.rows[0].algo, "Ring/LL");
}

#[test]
fn same_seed_same_results_on_both_backends() {
    for backend in ["packet", "flow"] {
        let mut spec = fabric(2, 4, 100.0, 3600.0);
        spec.sim.backend = config::Backend::parse(backend).unwrap();
        let o = opts("alltoall_perf", 2, 1 << 20);
        let a = nccl_tests::run(&spec, &o, 5, None).unwrap();
        let b = nccl_tests::run(&spec, &o, 5, None).unwrap();
        assert_eq!(a.rows, b.rows, "{backend}");
        assert!(a.rows[0].busbw > 0.0);
    }
}

#[test]
fn bad_input_says_what_to_change() {
    let spec = fabric(2, 8, 400.0, 3600.0);
    let err =
        |o: &Options, spec: &FabricSpec| nccl_tests::run(spec, o, 1, None).unwrap_err().to_string();
    let e = err(&opts("all_reduce_perf", 3, 1024), &spec);
    assert!(e.contains("--nodes"), "{e}");
    let e = err(&opts("all_reduce_perf", 1, 1023), &spec);
    assert!(e.contains("not a multiple of the float size"), "{e}");
    let e = err(&opts("allreduce_perf", 1, 1024), &spec);
    assert!(e.contains("all_reduce_perf"), "{e}");
    let mut o = opts("all_reduce_perf", 1, 1024);
    o.nccl.algo = Some("CollNet".into());
    assert!(err(&o, &spec).contains("not modelled"));
    let plain = config::preset("leaf-spine").unwrap();
    assert!(err(&opts("all_reduce_perf", 1, 1024), &plain).contains("[gpu]"));
    let e = FabricSpec::from_toml(
        "[topology]\nkind = \"rail_optimized\"\nservers = 2\nspines = 1\nnic_gbps = 400\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs a [gpu] section"), "{e}");
}

#[test]
fn gpu_presets_build_with_readable_names() {
    for name in ["h100-rail-ib", "h100-rail-roce", "h100-rail-only-ib"] {
        let spec = config::preset(name).unwrap();
        let t = Topology::build(&spec).unwrap();
        assert_eq!(t.n_hosts, 256);
        assert_eq!(t.host_index("h3.nic5").unwrap(), 29);
        let names = t.host_names();
        assert_eq!(names[29], "h3.nic5");
        // NIC 5 of every server hangs off rail leaf 5.
        let leaf = t.nodes.iter().position(|n| n.name == "su0.rail5").unwrap();
        assert!(t.links.iter().any(|l| l.a == 29 && l.b == leaf));
    }
}

#[test]
fn tree_chunks_shrink_to_fill_the_pipeline_as_nccl_does() {
    use fabriclab_core::nccl::coll::tree_chunk_bytes;
    let spec = fabric(8, 8, 400.0, 3600.0);
    let topo = Topology::build(&spec).unwrap();
    let g = spec.gpu.clone().unwrap();
    // Depth: 7 GPUs of chain + log2(8) = 3 levels between servers.
    assert_eq!(Comm::new(&topo, &g, 8, 8).unwrap().tree_depth(), 10);
    assert_eq!(Comm::new(&topo, &g, 1, 8).unwrap().tree_depth(), 7);
    assert_eq!(Comm::new(&topo, &g, 5, 2).unwrap().tree_depth(), 3);
    // 16 channels, depth 10. 1 GiB: 128 chunks of 512 KiB per channel,
    // at least 80: kept.
    assert_eq!(tree_chunk_bytes(1 << 30, 16, 10), 512 << 10);
    // 128 MiB: 16 per channel < 80 -> 256 KiB (32) -> 128 KiB (64, the
    // first floor); 64 >= 40, so no further.
    assert_eq!(tree_chunk_bytes(128 << 20, 16, 10), 128 << 10);
    // 32 MiB: 128 KiB gives 16 < 40 -> 64 KiB (32 >= 10).
    assert_eq!(tree_chunk_bytes(32 << 20, 16, 10), 64 << 10);
    // 1 MiB: down to the last floor, 32 KiB.
    assert_eq!(tree_chunk_bytes(1 << 20, 16, 10), 32 << 10);
}

/// nccl-tests' time of one call on `servers` x 8 GPUs on `backend`.
fn time_on(backend: &str, servers: u32, test: &str, algo: &str, proto: &str, bytes: u64) -> f64 {
    let mut spec = fabric(servers, 8, 400.0, 3600.0);
    spec.sim.backend = config::Backend::parse(backend).unwrap();
    let mut o = opts(test, servers, bytes);
    o.nccl.algo = Some(algo.into());
    o.nccl.proto = Some(proto.into());
    nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].time_us
}

#[test]
fn flow_backend_coflows_agree_with_the_packet_core() {
    // (servers, program, algorithm, protocol, bytes, tolerance): the
    // bandwidth-bound calls within 5 % (the ring's NICs, the tree's), the
    // latency-bound ones within 5 % (the hops' latencies add up the same
    // way); the tree at 512 MiB within 12 % (the packet core's pieces do
    // not stream as evenly as a fluid). docs/nccl.md has the whole table.
    for (servers, test, algo, proto, bytes, tol) in [
        (2, "all_reduce_perf", "ring", "simple", 8 << 10, 0.05),
        (2, "all_reduce_perf", "ring", "simple", 512 << 20, 0.05),
        (4, "all_reduce_perf", "ring", "simple", 512 << 20, 0.05),
        (2, "all_reduce_perf", "ring", "ll", 512 << 20, 0.05),
        (4, "all_reduce_perf", "tree", "simple", 8 << 10, 0.05),
        (4, "all_reduce_perf", "tree", "simple", 512 << 20, 0.12),
        (2, "all_gather_perf", "ring", "simple", 512 << 20, 0.05),
        (2, "broadcast_perf", "ring", "simple", 512 << 20, 0.05),
    ] {
        let packet = time_on("packet", servers, test, algo, proto, bytes);
        let flow = time_on("flow", servers, test, algo, proto, bytes);
        let err = flow / packet - 1.0;
        assert!(
            err.abs() < tol,
            "{servers} servers {test} {algo}/{proto} {bytes} B: packet {packet:.1} us, flow {flow:.1} us"
        );
    }
}

#[test]
fn flow_backend_ring_time_is_the_nic_bound_by_hand() {
    // 4 servers x 8 GPUs, 16 channels, two per rail: each channel's ring
    // crosses each 400G NIC once, so a channel gets half a NIC: 200 Gb/s
    // of wire in packets of 4096 data bytes and 26 of headers; the
    // busiest edge carries 2 (n - 1) / n of the channel's 1/16 of 1 GiB,
    // after Ring/Simple's 8.4 us launch.
    let spec = {
        let mut s = fabric(4, 8, 400.0, 3600.0);
        s.sim.backend = config::Backend::Flow;
        s
    };
    let mut o = opts("all_reduce_perf", 4, 1 << 30);
    o.nccl.algo = Some("ring".into());
    o.nccl.proto = Some("simple".into());
    let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
    let n = 32.0;
    let edge_bytes = 2.0 * (n - 1.0) / n * (1u64 << 30) as f64 / 16.0;
    // Goodput of 200 Gb/s with IB's per-packet overhead (LRH 8, BTH 12,
    // ICRC 4, VCRC 2; RETH 16 on the first packet of a WRITE, ignored).
    let goodput = 200e9 / 8.0 * 4096.0 / (4096.0 + 26.0);
    let want_us = edge_bytes / goodput * 1e6 + 8.4;
    let got = r.rows[0].time_us;
    assert!(
        (got / want_us - 1.0).abs() < 0.01,
        "{got} us, by hand {want_us} us"
    );
    // Traffic is accounted on the ports and in the counters.
    assert!(r.run.mpi.net_bytes > 0 && r.run.mpi.shm_bytes > 0);
}

#[test]
fn flow_backend_coflows_are_deterministic_and_refuse_what_they_cannot_see() {
    let mut spec = fabric(4, 8, 400.0, 3600.0);
    spec.sim.backend = config::Backend::Flow;
    let mut o = opts("all_reduce_perf", 4, 8);
    o.max_bytes = Some(1 << 30);
    o.step_factor = Some(64);
    let a = nccl_tests::run(&spec, &o, 9, None).unwrap();
    let b = nccl_tests::run(&spec, &o, 9, None).unwrap();
    assert_eq!(a.rows, b.rows);
    assert!(a.rows.iter().all(|r| r.wrong.unwrap_or(0) == 0));
    // Background traffic would not be seen: refused, with the way out.
    o.env.background = vec![fabriclab_core::traffic::flows::FlowSpec {
        src: "h0.nic0".into(),
        dst: "h1.nic0".into(),
        bytes: 1 << 20,
        op: "write".into(),
        start_us: 0.0,
        priority: None,
        repeat: true,
        via: None,
        return_via: None,
    }];
    let e = nccl_tests::run(&spec, &o, 9, None).unwrap_err().to_string();
    assert!(
        e.contains("--backend packet") && e.contains("background"),
        "{e}"
    );
}

/// nccl-tests' time of one call on 2 servers x `gpus` GPUs (a NIC each),
/// with GPUDirect on or off and the host copy at `pcie_gbps`.
fn time_gdr(backend: &str, gpus: u32, gdr: bool, pcie_gbps: f64, test: &str, bytes: u64) -> f64 {
    let mut spec = fabric(2, gpus, 400.0, 3600.0);
    spec.sim.backend = config::Backend::parse(backend).unwrap();
    let g = spec.gpu.as_mut().unwrap();
    g.gpudirect = gdr;
    g.pcie_gbps = pcie_gbps;
    let mut o = opts(test, 2, bytes);
    o.nccl.algo = Some("ring".into());
    o.nccl.proto = Some("simple".into());
    nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].time_us
}

#[test]
fn without_gpudirect_the_host_copy_bounds_the_rate_on_both_backends() {
    // One GPU and one NIC per server: a 64 MiB sendrecv crosses the
    // network both ways, and without GPUDirect every byte is copied
    // through host memory at 50 Gb/s at each end, one copy at a time
    // (the 400G NIC is 8x faster): 64 MiB x 8 / 50 Gb/s = 10,737 us, plus
    // latencies of a few us. With GPUDirect the NIC bounds it (about 1.4 ms).
    let bound_us = (64u64 << 20) as f64 * 8.0 / 50e9 * 1e6;
    for backend in ["packet", "flow"] {
        let on = time_gdr(backend, 1, true, 50.0, "sendrecv_perf", 64 << 20);
        let off = time_gdr(backend, 1, false, 50.0, "sendrecv_perf", 64 << 20);
        assert!(on < bound_us / 5.0, "{backend}: with GPUDirect {on:.1} us");
        assert!(
            off >= bound_us && off < bound_us * 1.02,
            "{backend}: without GPUDirect {off:.1} us, the copies alone take {bound_us:.1} us"
        );
    }
    // 2 x 8 GPUs: the packet runtime's copies, one at a time per NIC, and
    // the flow backend's copy resources agree (before 2026-11-28 the
    // packet runtime's copy took 1/1000 of its time and GPUDirect off
    // changed nothing there).
    for (test, bytes) in [
        ("all_reduce_perf", 64u64 << 20),
        ("sendrecv_perf", 64 << 20),
    ] {
        let packet = time_gdr("packet", 8, false, 50.0, test, bytes);
        let flow = time_gdr("flow", 8, false, 50.0, test, bytes);
        let on = time_gdr("packet", 8, true, 50.0, test, bytes);
        assert!(
            packet > 2.0 * on,
            "{test}: GPUDirect off {packet:.1} us, on {on:.1} us"
        );
        assert!(
            (flow / packet - 1.0).abs() < 0.05,
            "{test}: packet {packet:.1} us, flow {flow:.1} us"
        );
    }
}

/// nccl-tests' time of `bytes` (Ring/Simple on one channel, or NCCL's
/// choice) on `servers` x `gpus` with 100G NICs: the average of `iters`
/// calls back to back.
fn chain_time(
    backend: &str,
    test: &str,
    servers: u32,
    gpus: u32,
    bytes: u64,
    one_channel: bool,
    iters: u32,
) -> f64 {
    let mut spec = fabric(servers, gpus, 100.0, 3600.0);
    spec.sim.backend = config::Backend::parse(backend).unwrap();
    let mut o = opts(test, servers, bytes);
    o.iters = Some(iters);
    if one_channel {
        o.nccl.algo = Some("ring".into());
        o.nccl.proto = Some("simple".into());
        o.nccl.min_nchannels = Some(1);
        o.nccl.max_nchannels = Some(1);
    }
    nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].time_us
}

/// One 512 KiB Simple chunk on a 100G InfiniBand link: 128 packets of
/// 4096 data bytes and 26 of headers (LRH, BTH, ICRC, VCRC), the first
/// with a 16-byte RETH, at 12.5 bytes per ns.
const CHUNK_US: f64 = (524_288.0 + 128.0 * 26.0 + 16.0) / 12.5 / 1e3;

#[test]
fn a_chains_root_runs_at_most_nccl_steps_chunks_ahead() {
    // Broadcast from one GPU to another server's over one channel: 16
    // (8 MiB) or 64 (32 MiB) chunks of 512 KiB. The receiver has the last
    // chunk after all of them crossed the NIC; the root writes chunk k into
    // its buffer only once the RDMA WRITE of chunk k - 8 completed, so it
    // ends 8 chunk times before the receiver, not at once. nccl-tests
    // averages the two: 12 (60) chunk times plus latencies (launch, PCIe,
    // the network hop: some 10-40 us), where a root unpaced by the buffer
    // slots would make it 8 (32) chunk times.
    let small = chain_time("packet", "broadcast_perf", 2, 1, 8 << 20, true, 1);
    let large = chain_time("packet", "broadcast_perf", 2, 1, 32 << 20, true, 1);
    for (t, chunks) in [(small, 12.0), (large, 60.0)] {
        let lat = t - chunks * CHUNK_US;
        assert!(
            (5.0..40.0).contains(&lat),
            "{t:.1} us for {chunks} chunk times of {CHUNK_US:.2} us"
        );
    }
    // The root's lead is the same 8 chunks at any size: 48 chunk times
    // between the two averages.
    let d = (large - small) / CHUNK_US;
    assert!((d - 48.0).abs() < 0.5, "{d:.2} chunk times");
}

#[test]
fn a_chain_forwards_its_chunks_in_order() {
    // Broadcast over 8 servers, one GPU each, one channel, 16 chunks: a
    // rank forwards each chunk as it takes it, so rank p (p >= 1) has
    // the last one after 16 chunk times, p - 1 more chunk times (a chunk
    // stored and forwarded at each hop before it) and p hops' latency
    // (about 14 us each); the root ends 8 chunk times in. Average: (8 + 7
    // x 16 + 21) / 8 chunk times plus 28/8 x 14 us, about 791 us, plus
    // the launch and PCIe latencies. A rank that staged a burst of chunks
    // last first (its proxy posting them in reverse) would hold each hop
    // for 8 chunk times: about 1,020 us.
    let t = chain_time("packet", "broadcast_perf", 8, 1, 8 << 20, true, 1);
    let hand = (8.0 + 7.0 * 16.0 + 21.0) / 8.0 * CHUNK_US + 28.0 / 8.0 * 14.0;
    assert!(
        t > hand && t < hand * 1.05,
        "{t:.1} us against {hand:.1} us by hand"
    );
}

#[test]
fn flow_backend_chains_overlap_back_to_back_calls() {
    // nccl-tests times 20 calls back to back. On the packet core a rank
    // starts its next call when its own part of the last is done, so the
    // root feeds the next call into the chain while the far ranks still
    // take the last one; the flow backend's chain calls end each rank
    // from the ranks' own start times (`nccl/chain_calls.rs`), so the
    // fill is not paid again by every call. Within 7 % (0.94-1.00
    // measured; 1.26-1.51 when every call waited for its last rank; the
    // 2 x 8 case runs LL128, whose fill over NVLink the two backends
    // pipeline piece by piece, `nccl/streams.rs`, with more contention
    // between the channels' pieces on the packet core).
    for (test, servers, gpus, bytes) in [
        ("broadcast_perf", 2, 8, 8u64 << 20),
        ("broadcast_perf", 8, 8, 1 << 20),
        ("reduce_perf", 4, 4, 8 << 20),
    ] {
        let packet = chain_time("packet", test, servers, gpus, bytes, false, 20);
        let flow = chain_time("flow", test, servers, gpus, bytes, false, 20);
        let again = chain_time("flow", test, servers, gpus, bytes, false, 20);
        assert_eq!(flow, again, "the same inputs give the same time");
        assert!(
            (flow / packet - 1.0).abs() < 0.07,
            "{test} {servers}x{gpus} {bytes} B: packet {packet:.1} us, flow {flow:.1} us"
        );
    }
}

#[test]
fn flow_backend_chains_agree_with_the_packet_core_on_one_call() {
    // Broadcast and Reduce are chains: their ranks end at different
    // times (the root 8 chunks ahead of the next rank, ranks before a
    // slower hop as far ahead as the buffer slots allow), and the first
    // chunks of the channels share the links they cross together. One
    // call each, one channel or NCCL's choice (8 or 16 channels of
    // LL128); within 8 %.
    for (test, servers, gpus, one) in [
        ("broadcast_perf", 2, 1, true),
        ("broadcast_perf", 8, 1, true),
        ("broadcast_perf", 2, 8, true),
        ("broadcast_perf", 4, 4, false),
        ("broadcast_perf", 8, 8, false),
        ("reduce_perf", 4, 4, false),
    ] {
        let packet = chain_time("packet", test, servers, gpus, 8 << 20, one, 1);
        let flow = chain_time("flow", test, servers, gpus, 8 << 20, one, 1);
        assert!(
            (flow / packet - 1.0).abs() < 0.08,
            "{test} {servers}x{gpus}: packet {packet:.1} us, flow {flow:.1} us"
        );
    }
}

#[test]
fn flow_backend_long_chains_share_ports_with_the_streams_ahead() {
    // A 64 MiB Broadcast through 32-128 H100s with 400G NICs: NCCL picks
    // 16 channels of Ring/LL128, and every GPU's NVLink port carries all
    // 16. A channel's first chunk reaches ports through which the
    // channels ahead of it already stream the rest of their data, and
    // gets what those streams leave (`fluid::first_chunks_through_chains`).
    // Within 8 % of the packet core (0.928-0.944 measured; 0.845-0.892
    // when the fill saw only the other first chunks).
    for servers in [4, 8, 16] {
        let mut spec = fabric(servers, 8, 400.0, 3600.0);
        let mut o = opts("broadcast_perf", servers, 64 << 20);
        o.iters = Some(1);
        let mut time = |backend| {
            spec.sim.backend = config::Backend::parse(backend).unwrap();
            nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].time_us
        };
        let (packet, flow) = (time("packet"), time("flow"));
        assert!(
            (flow / packet - 1.0).abs() < 0.08,
            "{servers}x8: packet {packet:.1} us, flow {flow:.1} us"
        );
    }
}

#[test]
fn ll128_lines_stream_through_a_chain_of_gpus() {
    // Broadcast of one LL128 step (576,000 data bytes, 614,400 wire bytes)
    // from GPU 0 along seven NVLink hops of one server, one channel. The
    // step goes in 8 pieces of 76,800 wire bytes, 170.7 ns each at 450
    // GB/s (each GPU's port carries one transfer at a time); each hop
    // adds the NVLink latency and NCCL's LL128 hop cost L once, as a GPU
    // passes each piece on as soon as it is in (`nccl/streams.rs`). So
    // rank p >= 1 ends at p L + (p + 7) pieces, the root at 8 pieces, and
    // nccl-tests averages the eight: (85 pieces + 28 L) / 8 after the
    // launch. Storing and forwarding the whole step at each hop would take
    // (232 pieces + 28 L) / 8, 3.1 us more. Simple does store and forward:
    // one 512 KiB chunk, (C + 28 (L + C)) / 8. The ranks leave the barrier
    // before the call at different times, which shortens both averages
    // alike (by about 1.2 us), so the test compares their difference.
    let time = |proto: &str, bytes: u64| {
        let mut spec = fabric(1, 8, 100.0, 3600.0);
        spec.sim.backend = config::Backend::parse("packet").unwrap();
        let mut o = opts("broadcast_perf", 1, bytes);
        o.iters = Some(1);
        o.nccl.algo = Some("ring".into());
        o.nccl.proto = Some(proto.into());
        o.nccl.min_nchannels = Some(1);
        o.nccl.max_nchannels = Some(1);
        nccl_tests::run(&spec, &o, 1, None).unwrap().rows[0].time_us
    };
    let hand = |proto: Protocol, unit_us: f64, units: [f64; 2]| {
        let c = Costs::of(Algorithm::Ring, proto);
        let l = 0.8 + c.nvlink_hop.as_us_f64();
        c.launch.as_us_f64() + (units[0] * unit_us + 28.0 * l + units[1] * unit_us) / 8.0
    };
    let piece = 76_800.0 / 450.0 / 1e3;
    let chunk = 524_288.0 / 450.0 / 1e3;
    let simple = hand(Protocol::Simple, chunk, [29.0, 0.0]);
    let streamed = hand(Protocol::Ll128, piece, [85.0, 0.0]);
    let stored = hand(Protocol::Ll128, piece, [232.0, 0.0]);
    let d = time("ll128", 576_000) - time("simple", 524_288);
    assert!(
        (d - (streamed - simple)).abs() < 0.05,
        "LL128 - Simple: {d:.3} us; by hand {:.3} us streamed, {:.3} us stored and forwarded",
        streamed - simple,
        stored - simple
    );
}

#[test]
fn a_call_of_no_elements_costs_nothing_in_every_program() {
    // NCCL discards a collective of zero elements (no kernel): every
    // program reads 0.00 us at -b 0, as reduce_scatter, broadcast and
    // sendrecv did while all_reduce, all_gather, reduce and alltoall
    // charged the ring's 6.6 us base latency. 16 ranks on 2 servers.
    let spec = fabric(2, 8, 400.0, 450.0);
    for test in nccl_tests::TESTS {
        let row = &nccl_tests::run(&spec, &opts(test, 2, 0), 1, None)
            .unwrap()
            .rows[0];
        assert_eq!((row.count, row.time_us), (0, 0.0), "{test}");
    }
}

#[test]
fn nccl_connections_take_the_same_ecmp_paths_on_both_backends() {
    // The packet runtime connects a channel on its first message, the flow
    // backend's fluid cost in call-plan order: keyed source ports give
    // both the same paths, so the same spine ports carry the data (the
    // flow backend charges no ACK bandwidth: data ports carry megabytes,
    // ACK-only ones kilobytes). Servers of 4 GPUs on a leaf-spine of 4
    // spines x 4 links: the rings cross the spines.
    let uplinks = |backend: &str, test: &str| {
        let mut spec = FabricSpec::from_toml(
            "[gpu]\ngpus_per_server = 4\nnvlink_gbps = 3600\n\
             [topology]\nkind = \"leaf_spine\"\nspines = 4\nleaves = 4\nhosts_per_leaf = 4\n\
             host_link_gbps = 100\nuplink_gbps = 100\nlinks_per_pair = 4\n[nic]\nroce_mtu = 4096\n",
        )
        .unwrap();
        spec.sim.backend = config::Backend::parse(backend).unwrap();
        let mut o = opts(test, 4, 8 << 20);
        o.iters = Some(1);
        o.nccl.algo = Some("ring".into());
        o.nccl.min_nchannels = Some(8);
        let r = nccl_tests::run(&spec, &o, 7, None).unwrap();
        let used: std::collections::BTreeSet<(String, u32)> = r
            .run
            .ports
            .iter()
            .filter(|p| p.node.starts_with("spine") && p.counters.tx_bytes > 1 << 20)
            .map(|p| (p.node.clone(), p.port))
            .collect();
        used
    };
    for test in ["all_reduce_perf", "all_gather_perf"] {
        let packet = uplinks("packet", test);
        let flow = uplinks("flow", test);
        println!(
            "{test}: {} and {} spine ports carry data",
            packet.len(),
            flow.len()
        );
        assert!(packet.len() > 2 && packet.len() < 64, "{packet:?}");
        assert_eq!(packet, flow, "{test}");
    }
}

#[test]
fn transfer_counters_split_network_and_nvlink_messages_alike_on_both_backends() {
    // The flow backend's fluid calls counted every chunk, NVLink hops too,
    // as a network message (eager_msgs 7,770 and shm_msgs 102 against the
    // packet core's 602 and 7,270 on this call): a QA finding.
    let counters = |backend: &str| {
        let mut spec = fabric(2, 8, 400.0, 3600.0);
        spec.sim.backend = config::Backend::parse(backend).unwrap();
        let mut o = opts("all_reduce_perf", 2, 16 << 20);
        o.iters = Some(1);
        let r = nccl_tests::run(&spec, &o, 1, None).unwrap();
        let m = &r.run.mpi;
        (m.eager_msgs, m.shm_msgs, m.net_bytes, m.shm_bytes)
    };
    let (p, f) = (counters("packet"), counters("flow"));
    println!("packet {p:?}, flow {f:?}");
    assert_eq!(p, f);
    assert!(p.1 > 5 * p.0, "{p:?}");
}
