//! Helpers shared by the integration tests.
#![allow(dead_code)]

use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::{Net, PortSample};
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::tools::imb;
use fabriclab_core::tools::nccl_tests;
use fabriclab_core::traffic::flows::{FlowResult, FlowSpec, Flows};

/// One leaf with `hosts` hosts at 100G, 1 us cables, store-and-forward,
/// plus extra TOML appended (sections override nothing already set).
pub fn one_switch(hosts: u32, extra: &str) -> FabricSpec {
    let text = format!(
        r#"
[topology]
kind = "leaf_spine"
spines = 0
leaves = 1
hosts_per_leaf = {hosts}
host_link_gbps = 100
uplink_gbps = 100
host_link_delay_ns = 1000
{extra}
"#
    );
    FabricSpec::from_toml(&text).unwrap()
}

pub fn flow(src: &str, dst: &str, bytes: u64) -> FlowSpec {
    FlowSpec::write(src, dst, bytes)
}

/// Run a set of flows to completion; returns the sim and flow results.
pub fn run_flows(spec: &FabricSpec, flows: &[FlowSpec], seed: u64) -> (Sim, Vec<FlowResult>) {
    let net = Net::new(spec, seed).unwrap();
    let app = Flows::new(&net, flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(None);
    assert_eq!(outcome, Outcome::Finished);
    let res = sim.app::<Flows>(id).unwrap().results();
    (sim, res)
}

/// Run a set of flows (seed 1) to whatever end; returns how it ended and
/// the events processed (for stops from outside).
pub fn flows_outcome(spec: &FabricSpec, flows: &[FlowSpec]) -> (Outcome, u64) {
    let net = Net::new(spec, 1).unwrap();
    let app = Flows::new(&net, flows).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    let o = sim.run(None);
    (o, sim.net.events_processed())
}

/// Incast of `n` senders (h1..hn) onto h0, `bytes` each.
pub fn incast(n: u32, bytes: u64) -> Vec<FlowSpec> {
    (1..=n)
        .map(|i| flow(&format!("h{i}"), "h0", bytes))
        .collect()
}

/// Sum a port counter over every port of the switches.
pub fn switch_total(sim: &Sim, f: impl Fn(&fabriclab_core::net::PortCounters) -> u64) -> u64 {
    sim.net
        .port_reports()
        .iter()
        .filter(|p| !p.node.starts_with('h'))
        .map(|p| f(&p.counters))
        .sum()
}

/// IMB options for `benchmarks` on `np` ranks, run at exactly `np` ranks
/// (`-npmin np`), everything else at IMB's defaults.
pub fn imb_opts(benchmarks: &[&str], np: u32) -> imb::Options {
    imb::Options::at_np(benchmarks, np)
}

/// The telemetry samples of the egress of `node` towards `peer` (the first
/// such port), in time order.
pub fn port_series<'a>(net: &'a Net, node: &str, peer: &str) -> Vec<&'a PortSample> {
    let port = (0..).find(|&p| net.port_ends(p) == (node, peer)).unwrap();
    net.port_samples()
        .iter()
        .filter(|s| s.port == port)
        .collect()
}

/// One-way time of an MPI eager message of `b` payload bytes across one
/// store-and-forward switch with 1 us cables at 100G, by hand: send
/// overhead and copy, NIC send latency (500 ns), the frame of `wire` bytes
/// serialised on both links plus propagation, `switch_ns`, NIC receive
/// latency (300 ns), receive overhead and copy.
pub fn eager_one_way(
    m: &fabriclab_core::config::MpiParams,
    b: u64,
    wire: u64,
    switch_ns: u64,
) -> fabriclab_core::units::Time {
    use fabriclab_core::units::{Rate, Time};
    let link = Rate::gbps(100).tx_time(wire) + Time::ns(1000);
    m.o_send
        + m.memcpy.tx_time(b)
        + Time::ns(500)
        + link
        + Time::ns(switch_ns)
        + link
        + Time::ns(300)
        + m.o_recv
        + m.memcpy.tx_time(b)
}

/// nccl-tests' options for `test` at one size, `bytes`, on `nodes`
/// servers: 2 timed calls, no warm-up.
pub fn nccl_opts(test: &str, nodes: u32, bytes: u64) -> nccl_tests::Options {
    nccl_tests::Options {
        test: test.into(),
        nodes: Some(nodes),
        min_bytes: Some(bytes),
        max_bytes: Some(bytes),
        iters: Some(2),
        warmup_iters: Some(0),
        ..nccl_tests::Options::default()
    }
}

/// Build `call`'s NCCL schedule on `comm` and run it on the data
/// interpreter (sums, `seed`), from distinct values per rank and element;
/// Err says which rank got what wrong, or what the interpreter found.
pub fn check_nccl_call(
    comm: &fabriclab_core::nccl::Comm,
    call: &fabriclab_core::nccl::CollCall,
    seed: u64,
) -> Result<(), String> {
    use fabriclab_core::mpi::interp::{self, RankBufs, RedOp};
    let n = comm.n();
    let s = fabriclab_core::nccl::coll::build(comm, call);
    let init: Vec<RankBufs> = (0..n)
        .map(|r| RankBufs {
            send: (0..s.bufs.send[r as usize])
                .map(|i| (r as u64) << 32 | i)
                .collect(),
            recv: (0..s.bufs.recv[r as usize]).map(|i| !i).collect(),
        })
        .collect();
    let want = nccl_tests::expected(call, &init, n);
    let got = interp::run(&s, init, RedOp::Sum, seed)?;
    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
        if w.as_ref().is_some_and(|w| &g.recv != w) {
            return Err(format!("rank {r} has the wrong result"));
        }
    }
    Ok(())
}
