//! The issue-2 benchmarks: all-to-all WRITEs at time zero on the benchmark
//! fabrics, timed on the wall clock.
//!
//! `a2a-32`: 32 hosts (8 leaves x 4, 4 spines, 100G, 1 us links, MTU 4096,
//! PFC), 512 KiB from every host to every other (992 QPs), without or with
//! DCQCN. `a2a-128`: 128 hosts (8 leaves x 16, 8 spines, 4:1), MTU 1024,
//! 32 MB buffers, DCQCN, 512 KiB all-to-all (16,256 QPs). `ns3-hpcc-64`:
//! the 64-host fabric of the ns-3 HPCC cross-check
//! (`validation/ns3_hpcc_64.toml`, DCQCN), 512 KiB all-to-all (4,032 QPs).
//! `perm-64k`: 65,536 hosts on a k = 64 three-tier fat tree (5,120
//! switches of 64 ports, 1:1), each host sending 512 KiB to the host half
//! the fabric away (a shift permutation: every flow crosses the core);
//! meant for the flow backend, it measures what a fabric of that size
//! costs to build (`build_s`) and to run.
//! Reported: fabric build time, wall time, events and events per second, packets forwarded by
//! switches and per second, peak resident memory of the process, peak
//! packets in flight and the memory per packet in flight, simulated time.

use crate::config::{preset, Backend, CcAlgorithm, FabricSpec};
use crate::error::{arg_err, Result};
use crate::net::Net;
use crate::sim::{Outcome, Sim};
use crate::traffic::flows::{FlowSpec, Flows};
use crate::units::Time;
use serde::Serialize;

/// Figures of one benchmark run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Backend that ran it ("packet" or "flow").
    pub backend: String,
    /// Congestion control used.
    pub cc: String,
    /// Hosts.
    pub hosts: u32,
    /// QPs (flows).
    pub qps: u32,
    /// Bytes per flow.
    pub bytes_per_flow: u64,
    /// Wall-clock seconds of the simulation loop (build excluded).
    pub wall_s: f64,
    /// Wall-clock seconds building the fabric (topology, ports, routing
    /// tables) and connecting the flows, before the loop. None for the
    /// tool-driven benchmarks, whose tools build inside their runs.
    pub build_s: Option<f64>,
    /// Events processed.
    pub events: u64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Packets forwarded by switches (on the flow backend, which moves no
    /// packets, the packets its transfers amount to).
    pub packets_forwarded: u64,
    /// Forwarded packets per wall second.
    pub packets_per_s: f64,
    /// True on the flow backend: `packets_forwarded` and `packets_per_s`
    /// are the packets its transfers amount to (MTU arithmetic), not
    /// packets a switch forwarded.
    pub packets_estimated: bool,
    /// Simulated time at the end, us.
    pub sim_time_us: f64,
    /// Completion of the last flow, us.
    pub last_completion_us: f64,
    /// Peak resident memory of the whole process, MB (Linux; 0 elsewhere).
    pub peak_rss_mb: f64,
    /// Most packets alive at once (queued, on a wire or in a NIC; the
    /// packet pool's high-water mark). None where not measured: the flow
    /// backend (no packets) and the tool-driven benchmarks.
    pub peak_packets_in_flight: Option<u64>,
    /// What the run added to the process's peak resident memory (packets,
    /// queues, wires, pending events, the workload's results; the fabric,
    /// its routing and the QPs were built before) divided by the peak
    /// packets in flight, bytes: an upper bound of the memory a packet in
    /// flight costs. None where no packet was in flight or none was
    /// measured.
    pub run_bytes_per_packet_in_flight: Option<f64>,
    /// How the run ended.
    pub outcome: Outcome,
    /// The flow backend's own figures (flows, rate recomputations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_stats: Option<crate::net::FlowStats>,
}

/// Benchmark names.
pub const BENCHES: [&str; 8] = [
    "a2a-32",
    "a2a-128",
    "ns3-hpcc-64",
    "a2a-1024",
    "perm-64k",
    "allreduce-1k",
    "allreduce-16k",
    "nccl-1024",
];

/// Run benchmark `name` with congestion control `cc` ("none", "dcqcn", or
/// "" for the benchmark's default) on the packet backend. `progress` gets
/// (sim time, events).
pub fn run(
    name: &str,
    cc: &str,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<BenchResult> {
    run_on(name, cc, Backend::Packet, progress)
}

/// A scale benchmark's fabric: a k-ary three-tier fat tree of 100G links
/// (1:1, k^3 / 4 hosts), 1 us cables, MTU 1024, PFC; k = 16 for a2a-1024,
/// k = 64 for perm-64k.
fn fat_tree_bench(name: &str, k: u32) -> Result<FabricSpec> {
    let hosts = k * k * k / 4;
    FabricSpec::from_toml(&format!(
        r#"
name = "bench-{name}"
description = "scale benchmark: k = {k} fat tree, {hosts} hosts, 100G, 1:1"
[topology]
kind = "fat_tree"
k = {k}
host_link_gbps = 100
host_link_delay_ns = 1000
edge_agg_delay_ns = 1000
agg_core_delay_ns = 1000
"#
    ))
}

/// A three-tier fat tree of `k` pods with `hosts_per_edge` hosts per edge
/// switch, 100G everywhere, 1 us cables, no congestion control.
fn fat_tree_mpi(k: u32, hosts_per_edge: u32) -> Result<FabricSpec> {
    let edge_radix = (hosts_per_edge + k / 2).max(k);
    FabricSpec::from_toml(&format!(
        r#"
name = "bench-fat-tree-k{k}"
[topology]
kind = "fat_tree"
k = {k}
hosts_per_edge = {hosts_per_edge}
edge_radix = {edge_radix}
host_link_gbps = 100
host_link_delay_ns = 1000
edge_agg_delay_ns = 1000
agg_core_delay_ns = 1000
[cc]
algorithm = "none"
"#
    ))
}

/// 128 H100 servers (1,024 GPUs, one 400G NDR NIC each) in 4 scalable
/// units of 32 on a rail-optimized fabric: 32 rail leaves, 16 spines, two
/// links from every leaf to every spine (1:1).
fn h100_rail_1024() -> Result<FabricSpec> {
    FabricSpec::from_toml(include_str!("../../../scenarios/h100_1024.fabric.toml"))
}

/// A tool's progress callback (sim time, events, phase counts, label)
/// passing sim time and events on to the benchmark's.
fn tool_progress<'a, 'b: 'a>(
    progress: &'a mut Option<&'b mut dyn FnMut(Time, u64)>,
) -> impl FnMut(Time, u64, usize, usize, &str) + use<'a, 'b> {
    move |t, ev, _, _, _| {
        if let Some(p) = progress.as_mut() {
            p(t, ev);
        }
    }
}

/// nccl-tests' `all_reduce_perf -b 8 -e 8G -f 2` (20 timed calls after 5
/// warm-up ones per size, NCCL's own choice of algorithm and protocol) on
/// 1,024 GPUs; `last_completion_us` is the 8 GiB call's time.
fn run_nccl(
    name: &str,
    mut spec: FabricSpec,
    backend: Backend,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<BenchResult> {
    use crate::tools::nccl_tests;
    spec.sim.backend = backend;
    let o = nccl_tests::Options {
        test: "all_reduce_perf".into(),
        nodes: Some(128),
        min_bytes: Some(8),
        max_bytes: Some(8 << 30),
        step_factor: Some(2),
        ..nccl_tests::Options::default()
    };
    let mut progress = progress;
    let mut cb = tool_progress(&mut progress);
    let r = nccl_tests::run(&spec, &o, 1, Some(&mut cb))?;
    let last = r.rows.last().map_or(0.0, |row| row.time_us);
    let t = ToolRun {
        hosts: r.nranks,
        bytes_per_flow: 8 << 30,
        forwarded: 0,
        last_completion_us: last,
    };
    Ok(t.result(name, backend, "not modelled", &r.run))
}

/// MPI_Allreduce of 1 GiB, one rank per host, with the algorithm Open MPI's
/// fixed rules pick (Rabenseifner at these sizes), as IMB times it once.
fn run_allreduce(
    name: &str,
    mut spec: FabricSpec,
    backend: Backend,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<BenchResult> {
    use crate::tools::imb;
    spec.sim.backend = backend;
    let np = crate::topology::Topology::build(&spec)?.n_hosts as u32;
    let opts = imb::Options {
        msglog: Some((30, 30)),
        iter: Some(1),
        ..imb::Options::at_np(&["Allreduce"], np)
    };
    let mut progress = progress;
    let mut cb = tool_progress(&mut progress);
    let r = imb::run(&spec, &opts, 1, Some(&mut cb))?;
    let row = r
        .sections
        .iter()
        .flat_map(|s| &s.rows)
        .find(|row| row.bytes == 1 << 30);
    // Stopped (Ctrl-C) before the 1 GiB row: nothing to report (it used
    // to panic here).
    let Some(row) = row else {
        return Err(crate::Error::Stopped(format!(
            "{name}: stopped before the 1 GiB Allreduce completed"
        )));
    };
    // Ports come in node order, hosts (one port each) first: the rest are
    // the switches' egresses.
    let fwd: u64 = r.run.ports[np as usize..]
        .iter()
        .map(|p| p.counters.tx_packets)
        .sum();
    let cc = if backend == Backend::Flow {
        "not modelled"
    } else {
        "none"
    };
    let t = ToolRun {
        hosts: np,
        bytes_per_flow: 1 << 30,
        forwarded: fwd,
        last_completion_us: row.t_avg_us,
    };
    Ok(t.result(name, backend, cc, &r.run))
}

/// What a tool-driven benchmark (nccl-1024, allreduce-*) measured beside
/// its run's summary.
struct ToolRun {
    hosts: u32,
    bytes_per_flow: u64,
    forwarded: u64,
    last_completion_us: f64,
}

impl ToolRun {
    fn result(
        self,
        name: &str,
        backend: Backend,
        cc: &str,
        run: &crate::mpi::run::RunSummary,
    ) -> BenchResult {
        BenchResult {
            name: name.into(),
            backend: backend.name().into(),
            cc: cc.into(),
            hosts: self.hosts,
            qps: run.mpi.qps as u32,
            bytes_per_flow: self.bytes_per_flow,
            wall_s: run.wall_s,
            events: run.events,
            events_per_s: run.events as f64 / run.wall_s,
            packets_forwarded: self.forwarded,
            packets_per_s: self.forwarded as f64 / run.wall_s,
            packets_estimated: backend == Backend::Flow,
            sim_time_us: run.sim_time_us,
            last_completion_us: self.last_completion_us,
            peak_rss_mb: peak_rss_mb(),
            peak_packets_in_flight: None,
            run_bytes_per_packet_in_flight: None,
            outcome: Outcome::Finished,
            flow_stats: None,
            build_s: None,
        }
    }
}

/// Run benchmark `name` on `backend`: `a2a-32`, `a2a-128` (the issue-2
/// fabrics), `ns3-hpcc-64` (the 64-host all-to-all of the ns-3 HPCC
/// cross-check, `validation/ns3_hpcc_64.toml`, 512 KiB per pair), `a2a-1024` (a k = 16 fat tree; meant for the flow backend,
/// the packet backend needs hours), `perm-64k` (a shift permutation on
/// 65,536 hosts of a k = 64 fat tree; meant for the flow backend), `allreduce-1k` and `allreduce-16k`
/// (MPI_Allreduce of 1 GiB on 1,024 hosts of a k = 16 fat tree and on
/// 16,384 hosts of a k = 32 fat tree with 32 hosts per edge, 2:1 at the
/// edge; `last_completion_us` is IMB's t_avg), `nccl-1024` (nccl-tests'
/// all_reduce_perf from 8 B to 8 GiB on 1,024 H100 GPUs; the flow
/// backend's coflows, the packet backend would need hours).
pub fn run_on(
    name: &str,
    cc: &str,
    backend: Backend,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<BenchResult> {
    match name {
        "allreduce-1k" => return run_allreduce(name, fat_tree_mpi(16, 8)?, backend, progress),
        "allreduce-16k" => return run_allreduce(name, fat_tree_mpi(32, 32)?, backend, progress),
        "nccl-1024" => return run_nccl(name, h100_rail_1024()?, backend, progress),
        _ => {}
    }
    let (mut spec, default_cc) = match name {
        "a2a-32" => (preset("bench-a2a-32")?, "none"),
        "a2a-128" => (preset("bench-a2a-128")?, "dcqcn"),
        "ns3-hpcc-64" => (
            FabricSpec::from_toml(include_str!("../../../validation/ns3_hpcc_64.toml"))?,
            "dcqcn",
        ),
        "a2a-1024" => (fat_tree_bench(name, 16)?, "none"),
        "perm-64k" => (fat_tree_bench(name, 64)?, "none"),
        _ => {
            return arg_err(format!(
                "unknown benchmark {name:?}; use one of {}",
                BENCHES.join(", ")
            ))
        }
    };
    spec.sim.backend = backend;
    let cc = if cc.is_empty() { default_cc } else { cc };
    spec.cc.algorithm = match cc {
        "none" => CcAlgorithm::None,
        "dcqcn" => CcAlgorithm::Dcqcn,
        other => {
            return arg_err(format!(
                "unknown congestion control {other:?}; use none or dcqcn"
            ))
        }
    };
    let bytes = 512 * 1024;
    let t_build = std::time::Instant::now();
    let net = Net::new(&spec, 1)?;
    let n = net.n_hosts();
    let flow = |s: u32, d: u32| FlowSpec::write(format!("h{s}"), format!("h{d}"), bytes);
    let flows: Vec<FlowSpec> = if name == "perm-64k" {
        (0..n).map(|s| flow(s, (s + n / 2) % n)).collect()
    } else {
        (0..n)
            .flat_map(|s| (0..n).filter(move |&d| d != s).map(move |d| (s, d)))
            .map(|(s, d)| flow(s, d))
            .collect()
    };
    let app = Flows::new(&net, &flows)?;
    let build_s = t_build.elapsed().as_secs_f64();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let rss_before_mb = current_rss_mb();
    let t0 = std::time::Instant::now();
    let outcome = sim.run_with_progress(None, progress);
    let wall = t0.elapsed().as_secs_f64();
    sim.net.audit_check()?;
    let res = sim.app::<Flows>(id).expect("flows").results();
    let last = res.iter().filter_map(|r| r.completed_ps).max().unwrap_or(0);
    let events = sim.net.events_processed();
    let fwd = sim.net.packets_forwarded();
    let peak_pkts = sim.net.peak_packets_in_flight() as u64;
    let rss = peak_rss_mb();
    Ok(BenchResult {
        name: name.into(),
        backend: backend.name().into(),
        // The flow backend shares links max-min: no congestion control runs.
        cc: if backend == Backend::Flow {
            "not modelled".into()
        } else {
            cc.into()
        },
        hosts: n,
        qps: flows.len() as u32,
        bytes_per_flow: bytes,
        wall_s: wall,
        events,
        events_per_s: events as f64 / wall,
        packets_forwarded: fwd,
        packets_per_s: fwd as f64 / wall,
        packets_estimated: backend == Backend::Flow,
        sim_time_us: sim.net.now().as_us_f64(),
        last_completion_us: last as f64 / 1e6,
        peak_rss_mb: rss,
        peak_packets_in_flight: (backend == Backend::Packet).then_some(peak_pkts),
        run_bytes_per_packet_in_flight: (backend == Backend::Packet && peak_pkts > 0)
            .then(|| (rss - rss_before_mb).max(0.0) * 1024.0 * 1024.0 / peak_pkts as f64),
        outcome,
        flow_stats: sim.net.flow_stats().cloned(),
        build_s: Some(build_s),
    })
}

/// Peak resident set size of this process, MB (from /proc; 0 if unknown).
pub fn peak_rss_mb() -> f64 {
    proc_status_mb("VmHWM:")
}

/// Resident set size of this process now, MB (from /proc; 0 if unknown).
fn current_rss_mb() -> f64 {
    proc_status_mb("VmRSS:")
}

fn proc_status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_name_is_known_and_others_are_refused() {
        // The ns-3 HPCC fabric is read from validation/ at build time; the
        // flow backend runs it in a moment.
        let r = run_on("ns3-hpcc-64", "", Backend::Flow, None).unwrap();
        assert_eq!((r.hosts, r.qps, r.bytes_per_flow), (64, 4032, 524_288));
        assert_eq!(r.outcome, Outcome::Finished);
        assert_eq!(r.peak_packets_in_flight, None);
        assert_eq!(r.run_bytes_per_packet_in_flight, None);
        assert!(r.build_s.is_some_and(|s| s > 0.0), "{:?}", r.build_s);
        let e = run_on("a2a-64", "", Backend::Packet, None).unwrap_err();
        for name in BENCHES {
            assert!(e.to_string().contains(name), "{e}");
        }
    }

    #[test]
    fn the_packet_backend_reports_packets_in_flight() {
        let r = run("a2a-32", "none", None).unwrap();
        // A regression pin, read off the run (docs/benchmarks.md records
        // it): a change in the event count is a change in the engine.
        assert_eq!(r.events, 1_009_819);
        // By hand: 8 leaves x 4 hosts; of a host's 31 flows 3 stay on its
        // leaf (one switch) and 28 cross a spine (three), so the 992 flows
        // make 3 x 992 - 2 x 32 x 3 = 2,784 switch hops. Each flow is 128
        // packets of 4,096 B and 8 ACKs (one per 16 packets).
        assert_eq!(r.packets_forwarded, (128 + 8) * (3 * 992 - 2 * 32 * 3));
        let peak = r.peak_packets_in_flight.unwrap();
        assert!(peak > 1000, "{peak}");
        // The memory per packet in flight is measured on the process's
        // resident set, which the suite's other threads share: only its
        // presence is checked here (the figure is a benchmark's).
        assert!(r.run_bytes_per_packet_in_flight.is_some());
    }
}
