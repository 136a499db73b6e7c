//! Sandia Cbench's bisection tests, `rotate` and `rotate_latency`, on the
//! simulated fabric.
//!
//! Both split the job in halves (an odd rank count leaves the last rank
//! out) and, for every rotation r = 0 .. np/2 - 1, pair rank i of the lower
//! half with rank np/2 + (i + r) mod np/2 of the upper half; all pairs run
//! at once, so every rotation is one bisection of the machine under load.
//! Each test of a rotation is a barrier of the whole job, a zero-byte
//! `MPI_Sendrecv` within each pair (untimed), then the timed loop:
//! - `rotate`: the lower rank sends 10 x 8 MiB with `MPI_Ssend`, the upper
//!   one receives; per pair, time per message = elapsed / 10, best of 3
//!   tests; rate = bytes x 1e-6 / time, in MB/s;
//! - `rotate_latency`: 10 000 round trips of 0 bytes (`MPI_Send` then
//!   `MPI_Recv`, answered in kind), one test; latency = elapsed / 10 000 /
//!   2, in us.
//!
//! Per rotation Cbench prints every pair's figure (lower ranks in order),
//! min, max, average and, for bandwidth, the aggregate (sum) and the
//! aggregate floor (min x pairs); then overall min and max, the average
//! over rotations of the per-rotation averages and, for bandwidth, of the
//! aggregates.
//!
//! The message size, iterations, tests and the number of rotations can be
//! changed (Cbench compiles them in); fewer rotations keep large jobs
//! within a simulation budget, and the report says how many ran. Left out:
//! the MPI_Reduce / MPI_Gather of the timings after each rotation
//! (untimed, between two barriers).

use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::mpi::job::{Job, JobSpec};
use crate::mpi::patterns;
use crate::mpi::program::{Phase, Timing};
use crate::mpi::run::{run_program, ProgramSpec, Progress, RunEnv, RunSummary};
use crate::mpi::sched::{Rank, Schedule};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// Most tests per rotation one run takes (each is a phase held in memory).
pub const MAX_TESTS: u32 = 1_000;

/// The tests, by program name.
pub const TESTS: [&str; 2] = ["rotate", "rotate_latency"];

/// Cbench's options (its compiled-in constants, overridable).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// `rotate` or `rotate_latency`.
    pub test: String,
    /// The job: ranks, ranks per host, hosts, placement.
    pub job: JobSpec,
    /// What runs beside the job and what is recorded.
    #[serde(default)]
    pub env: RunEnv,
    /// Message size, bytes (8 MiB for rotate, 0 for rotate_latency).
    #[serde(default)]
    pub bytes: Option<u64>,
    /// Messages (rotate) or round trips (rotate_latency) per test
    /// (10 / 10 000).
    #[serde(default)]
    pub iterations: Option<u32>,
    /// Tests per rotation, best kept (3 / 1).
    #[serde(default)]
    pub tests: Option<u32>,
    /// Run only the first this many rotations (default all np/2).
    #[serde(default)]
    pub rotations: Option<u32>,
}

/// One pair of one rotation.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairResult {
    /// Rotation.
    pub rotation: u32,
    /// Lower-half rank (the sender in rotate).
    pub rank: u32,
    /// Its partner.
    pub peer: u32,
    /// Host of `rank`.
    pub host: String,
    /// Host of `peer`.
    pub peer_host: String,
    /// Best time per message (rotate) or per round trip (latency) over
    /// the tests, us.
    pub time_us: f64,
    /// MB/s (rotate) or us (rotate_latency), as Cbench prints it.
    pub value: f64,
}

/// One rotation's line.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Rotation {
    /// Rotation number.
    pub rotation: u32,
    /// Smallest pair figure.
    pub min: f64,
    /// Largest pair figure.
    pub max: f64,
    /// Average over pairs.
    pub ave: f64,
    /// Sum over pairs (rotate).
    pub aggregate: f64,
    /// min x pairs (rotate).
    pub aggregate_floor: f64,
}

/// A Cbench run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// `rotate` or `rotate_latency`.
    pub test: String,
    /// Ranks in the job.
    pub np: u32,
    /// Host of every rank.
    pub rank_hosts: Vec<String>,
    /// Message size, bytes.
    pub bytes: u64,
    /// Loop iterations per test.
    pub iterations: u32,
    /// Tests per rotation.
    pub tests: u32,
    /// Rotations the full test has (np/2).
    pub rotations_total: u32,
    /// Every pair of every rotation that ran.
    pub pairs: Vec<PairResult>,
    /// Per rotation.
    pub rotations: Vec<Rotation>,
    /// Overall smallest pair figure.
    pub overall_min: f64,
    /// Overall largest pair figure.
    pub overall_max: f64,
    /// Average over rotations of the per-rotation averages.
    pub average_link: f64,
    /// Average over rotations of the aggregates (rotate).
    pub average_aggregate: f64,
    /// Counters, times and background runs.
    #[serde(flatten)]
    pub run: RunSummary,
}

/// Canonical test name (`rotate_bw` and `rotlat` too).
pub fn canonical(test: &str) -> Result<&'static str> {
    match test.to_ascii_lowercase().replace('-', "_").as_str() {
        "rotate" | "rotate_bw" | "rotate_bandwidth" => Ok("rotate"),
        "rotate_latency" | "rotate_lat" | "rotlat" => Ok("rotate_latency"),
        _ => arg_err(format!(
            "unknown Cbench test {test:?}; use rotate or rotate_latency"
        )),
    }
}

/// Run a Cbench rotate test on `spec`.
pub fn run(
    spec: &FabricSpec,
    o: &Options,
    seed: u64,
    progress: Option<Progress<'_>>,
) -> Result<Report> {
    let test = canonical(&o.test)?;
    let bw = test == "rotate";
    let np = o.job.np()?;
    let topo = Topology::build(spec)?;
    let placed = Job::place(&topo, &o.job)?;
    // Cbench leaves the last rank out of an odd job.
    let size = np & !1;
    if size < 2 {
        return arg_err(format!(
            "Cbench {test} must use at least 2 processes, got -np {}",
            np
        ));
    }
    let half = size / 2;
    let bytes = o.bytes.unwrap_or(if bw { 8 << 20 } else { 0 });
    if bytes > 1 << 30 {
        return arg_err(format!(
            "message size {bytes} B is over the 1 GiB limit; lower --bytes"
        ));
    }
    let iterations = o.iterations.unwrap_or(if bw { 10 } else { 10_000 });
    let tests = o.tests.unwrap_or(if bw { 3 } else { 1 });
    if iterations == 0 || tests == 0 {
        return arg_err("--iterations and --tests must be at least 1");
    }
    // Each test of each rotation is a phase of its own, held in memory
    // before the run; Cbench's own defaults are 3 (rotate) and 1.
    if tests > MAX_TESTS {
        return arg_err(format!(
            "--tests {tests} is more than {MAX_TESTS}; Cbench keeps the best of a few (3 by default)"
        ));
    }
    let rotations = match o.rotations {
        None => half,
        Some(0) => return arg_err("--rotations must be at least 1"),
        Some(r) if r > half => {
            return arg_err(format!(
                "--rotations {r} is more than the {half} rotations of -np {}; use 1..{half}",
                np
            ))
        }
        Some(r) => r,
    };
    let params = spec.mpi.params()?;
    let host = |r: Rank| placed.rank_host[r as usize];
    let eager = |a: Rank, b: Rank| {
        let limit = if host(a) == host(b) {
            params.shm_eager_limit
        } else {
            params.eager_limit
        };
        bytes <= limit
    };
    let mut scheds: Vec<Schedule> = Vec::new();
    let mut phases = Vec::new();
    let mut pairs_of = Vec::new();
    for r in 0..rotations {
        let pairs: Vec<(Rank, Rank)> = (0..half)
            .map(|i| (i, patterns::rotate_partner(size, i, r)))
            .collect();
        scheds.push(patterns::pair_sync(np, &pairs));
        let setup = scheds.len() as u32 - 1;
        scheds.push(if bw {
            patterns::ssend_pairs(np, &pairs, bytes, eager)
        } else {
            patterns::pingpong_pairs(np, &pairs, bytes)
        });
        let body = scheds.len() as u32 - 1;
        for k in 0..tests {
            phases.push(Phase {
                scheds: vec![body],
                setup: Some(setup),
                n: size,
                warmup: 0,
                reps: iterations,
                timing: Timing::Loop,
                label: format!("{test} np={} rotation {r} test {k}", np),
            });
        }
        pairs_of.push(pairs);
    }
    let program = ProgramSpec {
        scheds,
        sync: patterns::sync_barrier(np),
        phases,
        keep_samples: false,
        executor: None,
    };
    let run = run_program(spec, &o.job, &o.env, program, seed, progress)?;
    let names = topo.host_names();
    let name = |r: Rank| names[host(r) as usize].clone();
    let mut pairs = Vec::new();
    // A stopped run (Ctrl-C) reports the rotations it completed.
    let complete = run.phases.len() / tests as usize;
    for (r, rp) in pairs_of.iter().enumerate().take(complete) {
        let res = &run.phases[r * tests as usize..(r + 1) * tests as usize];
        for &(a, b) in rp {
            let best = res
                .iter()
                .map(|ph| ph.rank_total[a as usize])
                .min()
                .expect("at least one test");
            let t_s = best.as_secs_f64() / iterations as f64;
            let value = if !bw {
                t_s * 1e6 / 2.0
            } else if t_s > 0.0 {
                bytes as f64 * 1e-6 / t_s
            } else {
                0.0
            };
            pairs.push(PairResult {
                rotation: r as u32,
                rank: a,
                peer: b,
                host: name(a),
                peer_host: name(b),
                time_us: t_s * 1e6,
                value,
            });
        }
    }
    let mut report = Report {
        test: test.to_string(),
        np,
        rank_hosts: (0..np).map(name).collect(),
        bytes,
        iterations,
        tests,
        rotations_total: half,
        pairs,
        rotations: Vec::new(),
        overall_min: 0.0,
        overall_max: 0.0,
        average_link: 0.0,
        average_aggregate: 0.0,
        run: run.summary,
    };
    summarise(&mut report);
    Ok(report)
}

/// Fill in the per-rotation lines and the summary from the pair figures,
/// as Cbench's rank 0 does.
pub fn summarise(r: &mut Report) {
    let n_rot = r.pairs.iter().map(|p| p.rotation + 1).max().unwrap_or(0);
    r.rotations = (0..n_rot)
        .map(|rot| {
            let values: Vec<f64> = r
                .pairs
                .iter()
                .filter(|p| p.rotation == rot)
                .map(|p| p.value)
                .collect();
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let sum: f64 = values.iter().sum();
            Rotation {
                rotation: rot,
                min,
                max: values.iter().copied().fold(0.0, f64::max),
                ave: sum / values.len() as f64,
                aggregate: sum,
                aggregate_floor: min * values.len() as f64,
            }
        })
        .collect();
    // Cbench divides its sums over rotations by np/2, the number of
    // rotations of a full run; here by the rotations that ran.
    let n = r.rotations.len() as f64;
    r.overall_min = r
        .rotations
        .iter()
        .map(|x| x.min)
        .fold(f64::INFINITY, f64::min);
    r.overall_max = r.rotations.iter().map(|x| x.max).fold(0.0, f64::max);
    r.average_link = r.rotations.iter().map(|x| x.ave).sum::<f64>() / n;
    r.average_aggregate = r.rotations.iter().map(|x| x.aggregate).sum::<f64>() / n;
}
