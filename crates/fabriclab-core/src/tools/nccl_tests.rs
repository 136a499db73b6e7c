//! nccl-tests (NVIDIA/nccl-tests) on the simulated fabric: the `*_perf`
//! programs with their options, run by the NCCL model of `crate::nccl` on
//! the GPU servers of the fabric's `[gpu]` section.
//!
//! What each program measures, as nccl-tests' `BenchTime` does: one
//! untimed call, warm-up calls, a barrier, then `-n` calls back to back
//! timed as a loop from each rank's exit of the barrier to the end of its
//! last call (no synchronisation between the calls), time per call
//! averaged over ranks (`-a 1`). (nccl-tests runs its warm-up calls once
//! before all sizes; here each size runs its own, after its sync call.) `size` is the larger per-rank buffer; algbw = size /
//! time; busbw = algbw x the program's factor (`doc/PERFORMANCE.md`):
//! 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
//! alltoall, 1 for broadcast, reduce and sendrecv. Sizes run from `-b` to
//! `-e`, times `-f` when it is above 1, else plus `-i`.
//!
//! `#wrong` is the data interpreter's check of the schedule that ran
//! (`mpi/interp.rs`, with sums): the count of wrong elements, for sizes up
//! to [`CHECK_ELEMS`] elements over all ranks; above that, and with
//! `-c 0`, `N/A`. In-place calls run the schedule of the out-of-place
//! ones: the only difference in NCCL, the first copy out of the send
//! buffer, is fused into the first step and costs nothing in the model,
//! so one simulation gives both columns.
//!
//! Left out: threads (`-t`), CUDA graphs (`-G`), blocking mode (`-z`),
//! `-d all` / `-o all`, gather/scatter/hypercube, and NCCL's CollNet and
//! PAT algorithms. The algorithm and protocol of each size (Ring, Tree,
//! NVLS, NVLS-Tree) are NCCL's choice by its tuning model
//! (`nccl/tuning.rs`) unless forced.

use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::mpi::footprint::{Footprint, JobMemory};
use crate::mpi::interp::{self, RankBufs, RedOp};
use crate::mpi::job::{Job, JobSpec};
use crate::mpi::patterns;
use crate::mpi::program::{MakeExecutor, Phase, Timing};
use crate::mpi::run::{
    run_program, Lowered, ProgramSpec, Progress, RunEnv, RunSummary, MAX_VOLUME,
};
use crate::mpi::sched::{Rank, Schedule};
use crate::nccl::{self, Algorithm, CollCall, Comm, NcclColl, NcclEnv, Protocol};
use crate::rng::splitmix64;
use crate::topology::Topology;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// The programs, by name.
pub const TESTS: [&str; 7] = [
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "broadcast_perf",
    "reduce_perf",
    "alltoall_perf",
    "sendrecv_perf",
];

/// NCCL's `NCCL_P2P_LL_THRESHOLD` default: point-to-point messages up to
/// this many bytes use LL, larger ones Simple.
pub const P2P_LL_THRESHOLD: u64 = 16384;

/// Above this many elements over all ranks the data check is skipped.
pub const CHECK_ELEMS: u64 = 1 << 22;

/// nccl-tests' options.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Program (`all_reduce_perf` or `all_reduce`).
    pub test: String,
    /// Servers taking part (default 1).
    #[serde(default)]
    pub nodes: Option<u32>,
    /// GPUs per server taking part (default: all of the server's).
    #[serde(default)]
    pub gpus_per_node: Option<u32>,
    /// `-g`: GPUs per process (printed; the ranks are GPUs either way).
    #[serde(default)]
    pub ngpus: Option<u32>,
    /// `-b`, bytes (default 32 MiB).
    #[serde(default)]
    pub min_bytes: Option<u64>,
    /// `-e`, bytes (default 32 MiB).
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// `-f` (default 1: additive steps).
    #[serde(default)]
    pub step_factor: Option<u64>,
    /// `-i`, bytes (default 1 MiB).
    #[serde(default)]
    pub step_bytes: Option<u64>,
    /// `-n` (default 20).
    #[serde(default)]
    pub iters: Option<u32>,
    /// `-w` (default 5, as nccl-tests 2.13 whose output format this is).
    #[serde(default)]
    pub warmup_iters: Option<u32>,
    /// `-c` (default 1).
    #[serde(default)]
    pub check: Option<u32>,
    /// `-d` (default float).
    #[serde(default)]
    pub datatype: Option<String>,
    /// `-o` (default sum).
    #[serde(default)]
    pub op: Option<String>,
    /// `-r` (default 0).
    #[serde(default)]
    pub root: Option<u32>,
    /// NCCL's environment: NCCL_ALGO, NCCL_PROTO, channels.
    #[serde(default)]
    pub nccl: NcclEnv,
    /// What runs beside the job and what is recorded.
    #[serde(default)]
    pub env: RunEnv,
    /// Simulation budget (not an option of nccl-tests): fewer timed calls
    /// where one size would move more than this many bytes through the
    /// fabric in all (default [`MAX_VOLUME`]; 0 = `-n` always).
    #[serde(default)]
    pub max_volume: Option<u64>,
}

/// One size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// `size` column, bytes.
    pub size: u64,
    /// `count` column, elements.
    pub count: u64,
    /// Time per call, us (out-of-place; in-place runs the same schedule).
    pub time_us: f64,
    /// GB/s (10^9 B/s).
    pub algbw: f64,
    /// GB/s.
    pub busbw: f64,
    /// Wrong elements, or None when not checked.
    pub wrong: Option<u64>,
    /// NCCL algorithm and protocol that ran ("Ring/Simple").
    pub algo: String,
    /// Channels.
    pub channels: u32,
    /// Timed calls that ran.
    pub iters: u32,
}

/// An nccl-tests run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Program name.
    pub test: String,
    /// Servers.
    pub nodes: u32,
    /// GPUs per server.
    pub gpus_per_node: u32,
    /// Ranks.
    pub nranks: u32,
    /// `-g`.
    pub ngpus: u32,
    /// `-b`, `-e`.
    pub min_bytes: u64,
    /// `-e`.
    pub max_bytes: u64,
    /// `-f` (>1) or None.
    pub step_factor: Option<u64>,
    /// `-i`.
    pub step_bytes: u64,
    /// `-w`, `-n`, `-c`.
    pub warmup_iters: u32,
    /// `-n`.
    pub iters: u32,
    /// `-c`.
    pub check: u32,
    /// Type name.
    pub datatype: String,
    /// Reduction name, "none" for data movement.
    pub redop: String,
    /// Root column (-1 where none).
    pub root: i64,
    /// GPU name and the server of every rank.
    pub gpu_model: String,
    /// Per size.
    pub rows: Vec<Row>,
    /// Sizes the simulation budget ran with fewer calls than `-n`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lowered: Vec<Lowered>,
    /// Mean of every busbw cell (both columns).
    pub avg_busbw: f64,
    /// Counters, times and background runs.
    #[serde(flatten)]
    pub run: RunSummary,
}

/// Canonical program name (`all_reduce` -> `all_reduce_perf`).
pub fn canonical(test: &str) -> Result<&'static str> {
    let t = test.trim().to_ascii_lowercase();
    let t = t.strip_suffix("_perf").unwrap_or(&t);
    TESTS
        .iter()
        .find(|n| n.strip_suffix("_perf") == Some(t))
        .copied()
        .map_or_else(
            || {
                arg_err(format!(
                    "unknown nccl-tests program {test:?}; use one of {}",
                    TESTS.join(" ")
                ))
            },
            Ok,
        )
}

/// Bytes of a datatype name, with nccl-tests' names.
pub fn type_bytes(name: &str) -> Result<u32> {
    Ok(match name {
        "int8" | "char" | "uint8" => 1,
        "half" | "float16" | "bfloat16" => 2,
        "int32" | "int" | "uint32" | "float" | "float32" => 4,
        "int64" | "uint64" | "double" | "float64" => 8,
        other => {
            return arg_err(format!(
                "unknown datatype {other:?}; use int8 uint8 int32 uint32 int64 uint64 half \
                 float double bfloat16"
            ))
        }
    })
}

fn coll_of(test: &str) -> NcclColl {
    match test {
        "all_reduce_perf" => NcclColl::AllReduce,
        "all_gather_perf" => NcclColl::AllGather,
        "reduce_scatter_perf" => NcclColl::ReduceScatter,
        "broadcast_perf" => NcclColl::Broadcast,
        "reduce_perf" => NcclColl::Reduce,
        "alltoall_perf" => NcclColl::AllToAll,
        _ => NcclColl::SendRecv,
    }
}

/// nccl-tests' bus bandwidth factor of a collective on `n` ranks.
pub fn bus_factor(coll: NcclColl, n: u32) -> f64 {
    let n = n as f64;
    match coll {
        NcclColl::AllReduce => 2.0 * (n - 1.0) / n,
        NcclColl::AllGather | NcclColl::ReduceScatter | NcclColl::AllToAll => (n - 1.0) / n,
        NcclColl::Broadcast | NcclColl::Reduce | NcclColl::SendRecv => 1.0,
    }
}

/// (size column, count column, the count the schedule takes) of `bytes`.
fn counts(coll: NcclColl, bytes: u64, ts: u64, n: u64) -> (u64, u64, u64) {
    let total = bytes / ts;
    match coll {
        NcclColl::AllGather | NcclColl::ReduceScatter | NcclColl::AllToAll => {
            let base = total / n;
            (base * n * ts, base, base)
        }
        _ => (total * ts, total, total),
    }
}

/// NCCL's tuning model of a call on `comm` ([`nccl::tuning`]): the
/// graph's bandwidth per channel is the ring's bus bandwidth shared by the
/// channels: a GPU's NVLink on one server, on several the lesser of that
/// and the server's NICs together (each channel leaves a server on its
/// own rail). With NVLink SHARP (`nvls`), the NVLS graph has one channel
/// per GPU, each GPU's NVLink carrying G + 1 of them (`bwIntra` = NVLink
/// / (G + 1)), and `bwInter` a GPU's share of the NICs.
pub fn tuning_setting(
    coll: NcclColl,
    comm: &Comm,
    nvlink_gbps: f64,
    nic_gbps: f64,
    compute_capability: u32,
    nvls: bool,
) -> nccl::tuning::Setting {
    let bus_gbps = if comm.servers > 1 {
        nvlink_gbps.min(nic_gbps * comm.nics as f64)
    } else {
        nvlink_gbps
    };
    let g = comm.gpus;
    let nvls = (nvls && g > 1).then(|| {
        let bw_intra = nvlink_gbps / 8.0 / (g + 1) as f64;
        nccl::tuning::NvlsGraph {
            channels: g,
            bw_intra,
            bw_inter: if comm.servers > 1 {
                nic_gbps / 8.0 / comm.gpus_per_nic as f64
            } else {
                bw_intra
            },
        }
    });
    nccl::tuning::Setting {
        coll,
        ranks: comm.n(),
        nodes: comm.servers,
        channels: comm.channels.max(1),
        bw_per_channel: bus_gbps / 8.0 / comm.channels.max(1) as f64,
        compute_capability,
        nvls,
    }
}

/// Run an nccl-tests program on `spec`.
pub fn run(
    spec: &FabricSpec,
    o: &Options,
    seed: u64,
    mut progress: Option<Progress<'_>>,
) -> Result<Report> {
    let test = canonical(&o.test)?;
    let Some(g) = spec.gpu.clone() else {
        return arg_err(
            "nccl-tests needs GPU servers: the fabric has no [gpu] section (use a GPU preset \
             such as h100-rail-ib, or add [gpu])",
        );
    };
    let coll = coll_of(test);
    let topo = Topology::build(spec)?;
    let nodes = o.nodes.unwrap_or(1);
    let gpn = o.gpus_per_node.unwrap_or(g.gpus_per_server);
    let mut comm = Comm::new(&topo, &g, nodes, gpn)?;
    let n = comm.n();
    let ngpus = o.ngpus.unwrap_or(1);
    if ngpus == 0 || gpn % ngpus != 0 {
        return arg_err(format!("-g {ngpus} must divide the GPUs per node ({gpn})"));
    }
    let dtype = o.datatype.clone().unwrap_or_else(|| "float".into());
    let ts = type_bytes(&dtype)? as u64;
    let op = o.op.clone().unwrap_or_else(|| "sum".into());
    if !["sum", "prod", "min", "max", "avg"].contains(&op.as_str()) {
        return arg_err(format!(
            "unknown reduction {op:?}; use sum prod min max avg"
        ));
    }
    let root = o.root.unwrap_or(0);
    if root >= n {
        return arg_err(format!("-r {root} is not a rank (the job has {n} ranks)"));
    }
    let lo = o.min_bytes.unwrap_or(32 << 20);
    let hi = o.max_bytes.unwrap_or(32 << 20);
    if lo > hi {
        return arg_err(format!("-b {lo} is above -e {hi}"));
    }
    if hi > 1 << 40 {
        return arg_err(format!(
            "-e {hi} is beyond any GPU's memory (at most 1 TiB)"
        ));
    }
    for (flag, b) in [("-b", lo), ("-e", hi)] {
        if b % ts != 0 {
            return arg_err(format!(
                "{flag} {b} is not a multiple of the {dtype} size ({ts} bytes)"
            ));
        }
    }
    let factor = o.step_factor.unwrap_or(1);
    let step = o.step_bytes.unwrap_or(1 << 20);
    if factor <= 1 && step == 0 {
        return arg_err("-i 0 with no -f would never reach -e; give -i or -f");
    }
    let iters = o.iters.unwrap_or(20);
    if iters == 0 {
        return arg_err("-n must be at least 1");
    }
    let warmup = o.warmup_iters.unwrap_or(5);
    let check = o.check.unwrap_or(1);
    let algo = o.nccl.algorithm()?;
    let forced = o.nccl.protocol()?;
    comm.channels = o
        .nccl
        .channels((2 * g.nics()).clamp(2, nccl::params::MAX_CHANNELS))?;
    comm.pxn = !o.nccl.pxn_disable.unwrap_or(false);
    // NVLink SHARP: where the servers have it, unless NCCL_NVLS_ENABLE=0.
    let nvls = g.has_nvls() && o.nccl.nvls_enable.unwrap_or(true);
    if !comm.pxn && nodes > 1 {
        // Without PXN, data crosses between rails in the network: server
        // 0's first NIC must reach every NIC server 1 uses.
        let hosts = comm.rank_hosts();
        let g = comm.gpus as usize;
        let pair: Vec<u32> = std::iter::once(hosts[0])
            .chain(hosts[g..2 * g].iter().copied())
            .collect();
        topo.check_joined(&pair).map_err(|e| {
            crate::error::Error::InvalidArgument(format!(
                "{} (NCCL_PXN_DISABLE: without PXN, NCCL sends between rails through \
                 the network; leave PXN on)",
                e.message()
            ))
        })?;
    }
    let nic_gbps = topo
        .links
        .iter()
        .find(|l| l.a < topo.n_hosts || l.b < topo.n_hosts)
        .map_or(0.0, |l| l.rate.as_gbps_f64());
    let mut sizes = Vec::new();
    let mut s = lo;
    loop {
        sizes.push(s);
        let next = if factor > 1 {
            s.saturating_mul(factor)
        } else {
            s + step
        };
        if next > hi || next == s {
            break;
        }
        s = next;
    }
    // The flow backend runs rings and trees as fluid coflows
    // (`nccl/fluid.rs`); point-to-point keeps its messages, and so does
    // a single server (NVLink only: few messages, and the detailed
    // schedule's lock-step channels are what NCCL measures there).
    let fluid = spec.sim.backend == crate::config::Backend::Flow
        && comm.servers > 1
        && !matches!(coll, NcclColl::AllToAll | NcclColl::SendRecv);
    if fluid {
        let other = if !o.env.background.is_empty() || !o.env.background_iperf.is_empty() {
            Some("background traffic")
        } else if !spec.link_failures.is_empty() {
            Some("link failures")
        } else {
            None
        };
        if let Some(what) = other {
            return arg_err(format!(
                "{test} on the flow backend runs each call as fluid coflows on the links as they \
                 are when it starts, so {what} would not be seen; use --backend packet"
            ));
        }
    }
    // Schedules are sized before they are built, so that a sweep to a
    // size the machine cannot hold is refused instead of aborting.
    let mut memory = JobMemory::new(spec, n).for_nccl();
    let mut sizer = nccl::footprint::Sizer::default();
    // The calls, planned before any is compiled.
    let mut plan = Vec::with_capacity(sizes.len());
    for &bytes in &sizes {
        let (size, count, sched_count) = counts(coll, bytes, ts, n as u64);
        let setting = tuning_setting(
            coll,
            &comm,
            g.nvlink_gbps,
            nic_gbps,
            g.compute_capability,
            nvls,
        );
        let per_peer = if coll == NcclColl::AllToAll {
            size / n as u64
        } else {
            size
        };
        let (algo, proto) = match coll {
            // Point-to-point: NCCL's p2p path, LL up to its threshold.
            NcclColl::AllToAll | NcclColl::SendRecv => (
                Algorithm::Ring,
                forced.unwrap_or(if per_peer <= P2P_LL_THRESHOLD {
                    Protocol::Ll
                } else {
                    Protocol::Simple
                }),
            ),
            _ => setting.choose(size, algo, forced),
        };
        let call = CollCall {
            coll,
            count: sched_count,
            elem_bytes: ts as u32,
            root,
            proto,
            algo,
        };
        plan.push((size, count, call));
    }
    // The long calls' footprints, from probes of one and two loops (the
    // fluid calls compile no schedule).
    let estimates: Vec<Option<Footprint>> = plan
        .iter()
        .map(|(_, _, call)| (!fluid).then(|| sizer.estimate(&comm, call)).flatten())
        .collect();
    {
        // The long calls alone: a sweep that cannot fit is refused before
        // it compiles anything.
        let (mut long, mut from) = (Footprint::default(), None);
        for ((size, _, _), f) in plan.iter().zip(&estimates) {
            if let Some(f) = f {
                long.steps += f.steps;
                long.deps += f.deps;
                long.pairs = long.pairs.max(f.pairs);
                from.get_or_insert(*size);
            }
        }
        if let Some(from) = from {
            memory.precheck_footprint(
                &long,
                &format!(
                    "estimated before compiling, for the sizes from {from} B alone: {:.1} M \
                     steps; a smaller -e fits in less",
                    long.steps / 1e6
                ),
            )?;
        }
    }
    let mut fluid_calls: Vec<Option<CollCall>> = Vec::new();
    let mut scheds: Vec<Schedule> = Vec::new();
    let mut phases = Vec::new();
    let mut meta = Vec::new();
    let mut lowered = Vec::new();
    for (&(size, count, call), estimate) in plan.iter().zip(estimates) {
        let (sched_count, algo, proto) = (call.count, call.algo, call.proto);
        let checked = check > 0 && sched_count.saturating_mul(n as u64) * 2 <= CHECK_ELEMS;
        let (sc, wrong) = if fluid {
            let wrong = checked.then(|| {
                let sc = nccl::coll::build(&comm, &call);
                wrong_elements(&call, &sc, n, seed)
            });
            (coflow_marker(n, &call), wrong)
        } else {
            if let Some(p) = progress.as_deref_mut() {
                p(
                    Time::ZERO,
                    0,
                    0,
                    sizes.len(),
                    &format!("compiling {test} {size} B"),
                );
            }
            if let Some(f) = estimate {
                memory.precheck_footprint(
                    &f,
                    &format!(
                        "estimated before compiling {test} at {size} B, {:.1} M steps",
                        f.steps / 1e6
                    ),
                )?;
            }
            let sc = nccl::coll::build(&comm, &call);
            memory.add(&sc)?;
            let wrong = checked.then(|| wrong_elements(&call, &sc, n, seed));
            (sc, wrong)
        };
        fluid_calls.push(fluid.then_some(call));
        let ran = match o.max_volume.unwrap_or(MAX_VOLUME) {
            0 => iters,
            cap => sc.reps_within(iters, cap, 0),
        };
        if ran < iters {
            lowered.push(Lowered {
                label: format!("{test} {size} B"),
                asked: iters,
                ran,
            });
        }
        scheds.push(sc);
        phases.push(Phase {
            scheds: vec![scheds.len() as u32 - 1],
            // nccl-tests' one untimed call, then the warm-up calls.
            setup: Some(scheds.len() as u32 - 1),
            n,
            warmup: warmup.min(ran),
            reps: ran,
            // Set below, once the barrier's schedule has its id.
            timing: Timing::Loop,
            label: format!("{test} {size} B"),
        });
        meta.push((
            size,
            count,
            wrong,
            format!("{}/{}", algo.name(), proto.name()),
            (algo, proto),
        ));
    }
    // nccl-tests' `Barrier` between the sync call and the timed loop: a
    // schedule after the sizes' (beyond `choices`, so it runs with the
    // first size's protocol, as the barrier between sizes does).
    scheds.push(patterns::sync_barrier(n));
    let barrier = scheds.len() as u32 - 1;
    for ph in &mut phases {
        ph.timing = Timing::LoopAfterBarrier { barrier };
    }
    let rank_host = comm.rank_hosts();
    let job = Job {
        rank_host: rank_host.clone(),
        ppn: gpn / g.gpus_per_nic().max(1),
        hosts: {
            let mut h = rank_host.clone();
            h.dedup();
            h
        },
    };
    // Each size runs its own protocol (the barrier between sizes, the
    // last schedule, the first size's).
    let proto0 = meta.first().map_or(Protocol::Simple, |m| m.4 .1);
    let choices: Vec<(Algorithm, Protocol)> = meta.iter().map(|m| m.4).collect();
    let (gg, cc) = (g.clone(), comm.clone());
    let make: MakeExecutor = Box::new(move |net, _job, me| {
        let mut rt = nccl::NcclRuntime::new(net, cc, &gg, proto0, me);
        rt.set_schedule_choices(choices);
        rt.set_fluid_calls(fluid_calls);
        Box::new(rt)
    });
    let program = ProgramSpec {
        scheds,
        sync: patterns::sync_barrier(n),
        phases: phases.clone(),
        keep_samples: false,
        executor: Some((job, make)),
    };
    let r = run_program(spec, &JobSpec::with_np(n), &o.env, program, seed, progress)?;
    let bf = bus_factor(coll, n);
    let mut rows = Vec::new();
    for ((size, count, wrong, algo, _), (ph, res)) in
        meta.into_iter().zip(phases.iter().zip(&r.phases))
    {
        let per: f64 = res.rank_total.iter().map(|t| t.as_us_f64()).sum::<f64>()
            / res.rank_total.len().max(1) as f64
            / ph.reps as f64;
        let algbw = if per > 0.0 {
            size as f64 / per / 1e3
        } else {
            0.0
        };
        rows.push(Row {
            size,
            count,
            time_us: per,
            algbw,
            busbw: algbw * bf,
            wrong,
            algo,
            channels: comm.channels,
            iters: ph.reps,
        });
    }
    let avg_busbw = if rows.is_empty() {
        0.0
    } else {
        rows.iter().map(|r| r.busbw).sum::<f64>() / rows.len() as f64
    };
    let reduction = matches!(
        coll,
        NcclColl::AllReduce | NcclColl::ReduceScatter | NcclColl::Reduce
    );
    let rooted = matches!(coll, NcclColl::Broadcast | NcclColl::Reduce);
    Ok(Report {
        test: test.to_string(),
        nodes,
        gpus_per_node: gpn,
        nranks: n,
        ngpus,
        min_bytes: lo,
        max_bytes: hi,
        step_factor: (factor > 1).then_some(factor),
        step_bytes: step,
        warmup_iters: warmup,
        iters,
        check,
        datatype: dtype,
        redop: if reduction || coll == NcclColl::SendRecv {
            op
        } else {
            "none".into()
        },
        root: if rooted { root as i64 } else { -1 },
        gpu_model: g.model.clone(),
        rows,
        lowered,
        avg_busbw,
        run: r.summary,
    })
}

/// The schedule the MPI program executor sees for a call run as coflows:
/// one empty step per rank, which marks where the call sits in each
/// rank's program. The runtime (`NcclRuntime::set_fluid_calls`) ends each
/// rank's step at the time the call's coflows give it; the data moves in
/// `nccl/fluid.rs`, and `#wrong` checks the detailed schedule.
fn coflow_marker(n: Rank, call: &CollCall) -> Schedule {
    let bufs = crate::mpi::sched::BufSizes {
        send: vec![0; n as usize],
        recv: vec![0; n as usize],
    };
    let mut s = Schedule::new(n, call.elem_bytes, bufs, "fluid");
    for r in &mut s.ranks {
        r.compute(0, &[]);
    }
    s
}

/// Run the schedule on real buffers and count the elements that differ
/// from what NCCL promises (sums).
fn wrong_elements(call: &CollCall, s: &Schedule, n: Rank, seed: u64) -> u64 {
    let init: Vec<RankBufs> = (0..n)
        .map(|r| RankBufs {
            send: (0..s.bufs.send[r as usize])
                .map(|i| splitmix64((r as u64) << 40 ^ i ^ 0xacc) >> 8)
                .collect(),
            recv: (0..s.bufs.recv[r as usize])
                .map(|i| splitmix64((r as u64) << 40 ^ i ^ 0xbad) >> 8)
                .collect(),
        })
        .collect();
    let want = expected(call, &init, n);
    match interp::run(s, init, RedOp::Sum, seed) {
        Ok(out) => out
            .iter()
            .zip(&want)
            .map(|(got, w)| match w {
                Some(w) => {
                    got.recv.iter().zip(w).filter(|(a, b)| a != b).count() as u64
                        + w.len().abs_diff(got.recv.len()) as u64
                }
                None => 0,
            })
            .sum(),
        // A schedule the interpreter cannot run computes nothing right.
        Err(_) => s.bufs.recv.iter().sum(),
    }
}

/// What each rank's receive buffer must hold (None: undefined).
pub fn expected(call: &CollCall, init: &[RankBufs], n: Rank) -> Vec<Option<Vec<u64>>> {
    let n = n as usize;
    let c = call.count as usize;
    let sum = |len: usize, at: &dyn Fn(usize, usize) -> u64| -> Vec<u64> {
        (0..len)
            .map(|i| (0..n).fold(0u64, |a, r| a.wrapping_add(at(r, i))))
            .collect()
    };
    let root = call.root as usize;
    match call.coll {
        NcclColl::AllReduce => vec![Some(sum(c, &|r, i| init[r].send[i])); n],
        NcclColl::Reduce => (0..n)
            .map(|r| (r == root).then(|| sum(c, &|q, i| init[q].send[i])))
            .collect(),
        NcclColl::Broadcast => vec![Some(init[root].recv.clone()); n],
        NcclColl::AllGather => {
            vec![Some(init.iter().flat_map(|b| b.send.iter().copied()).collect()); n]
        }
        NcclColl::ReduceScatter => (0..n)
            .map(|r| Some(sum(c, &|q, i| init[q].send[r * c + i])))
            .collect(),
        NcclColl::AllToAll => (0..n)
            .map(|r| {
                Some(
                    (0..n)
                        .flat_map(|j| init[j].send[r * c..(r + 1) * c].iter().copied())
                        .collect(),
                )
            })
            .collect(),
        NcclColl::SendRecv => (0..n)
            .map(|r| Some(init[(r + n - 1) % n].send.clone()))
            .collect(),
    }
}
