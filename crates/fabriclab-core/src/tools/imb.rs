//! Intel MPI Benchmarks (IMB-MPI1) on the simulated fabric.
//!
//! Runs the MPI-1 benchmarks the way IMB does (see the formats README):
//! message lengths 0 and 2^min..2^max (`-msglog`), repetitions
//! min(1000, 40 MiB / length) (`-iter` replaces 1000), warm-up calls
//! before the first length of each section only, as `IMB_warm_up` does
//! (`iter == 0`): repetitions / 10, at least 10 (IMB's WARMUP_PERCENT), process
//! counts npmin, 2 npmin, ..., np (`-npmin`, default 2) with the other
//! ranks waiting in a barrier; reductions on MPI_FLOAT (lengths that are
//! not a multiple of 4 are skipped), data movement on MPI_BYTE with the
//! per-rank block as #bytes; collectives timed call by call with an
//! untimed barrier after each, PingPong/PingPing/Sendrecv/Exchange timed
//! as a loop. Per rank time = sum / repetitions; t_min, t_max, t_avg over
//! ranks; MB/s with 10^6 and t_max (PingPong: half the round trip).
//!
//! The collective algorithm is what the fabric's MPI library would select
//! (Open MPI's coll/tuned fixed rules by default), or the one forced per
//! collective; the report records it for every row.
//!
//! Left out: IMB's `-time` limit per sample (repetitions follow the volume
//! rule only) and the multi-instance (`-multi`) mode.

use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::mpi::coll::{self, Coll, CollArgs};
use crate::mpi::footprint::JobMemory;
use crate::mpi::job::JobSpec;
use crate::mpi::patterns;
use crate::mpi::program::{Phase, Timing};
use crate::mpi::run::{run_program, Lowered, ProgramSpec, Progress, RunEnv, RunSummary, Tuning};
use crate::mpi::sched::Schedule;
use crate::mpi::select::{self, Library};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The benchmarks, in IMB's default order.
pub const BENCHMARKS: [&str; 14] = [
    "PingPong",
    "PingPing",
    "Sendrecv",
    "Exchange",
    "Allreduce",
    "Reduce",
    "Reduce_scatter",
    "Allgather",
    "Allgatherv",
    "Gather",
    "Scatter",
    "Alltoall",
    "Bcast",
    "Barrier",
];

/// IMB's options.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Benchmarks by name (case-insensitive); empty = all, in IMB order.
    #[serde(default)]
    pub benchmarks: Vec<String>,
    /// The job: ranks, ranks per host, hosts, placement.
    pub job: JobSpec,
    /// What runs beside the job and what is recorded.
    #[serde(default)]
    pub env: RunEnv,
    /// MPI library override and simulation budget.
    #[serde(default)]
    pub tuning: Tuning,
    /// `-msglog min:max` (default 0:22).
    #[serde(default)]
    pub msglog: Option<(u32, u32)>,
    /// `-npmin` (default 2).
    #[serde(default)]
    pub npmin: Option<u32>,
    /// `-iter`: repetitions for small messages (default 1000).
    #[serde(default)]
    pub iter: Option<u32>,
    /// `-root_shift on`.
    #[serde(default)]
    pub root_shift: bool,
    /// Forced algorithm per collective (`allreduce = "ring"`).
    #[serde(default)]
    pub algorithms: BTreeMap<String, String>,
}

impl Options {
    /// `benchmarks` on exactly `np` ranks (`-npmin np`), everything else
    /// at IMB's defaults.
    pub fn at_np(benchmarks: &[&str], np: u32) -> Options {
        Options {
            benchmarks: benchmarks.iter().map(|s| s.to_string()).collect(),
            job: JobSpec::with_np(np),
            env: RunEnv::default(),
            tuning: Tuning::default(),
            msglog: None,
            npmin: Some(np),
            iter: None,
            root_shift: false,
            algorithms: Default::default(),
        }
    }
}

pub use crate::mpi::run::MAX_VOLUME;

/// One row of a benchmark's table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// #bytes.
    pub bytes: u64,
    /// #repetitions.
    pub reps: u32,
    /// t_min, us.
    pub t_min_us: f64,
    /// t_max, us.
    pub t_max_us: f64,
    /// t_avg, us.
    pub t_avg_us: f64,
    /// Mbytes/sec (PingPong, PingPing, Sendrecv, Exchange).
    pub mbytes_per_sec: Option<f64>,
    /// The algorithm that ran (collectives).
    pub algorithm: String,
}

/// One "# Benchmarking X / #processes = N" section.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Section {
    /// Benchmark name as IMB prints it.
    pub bench: String,
    /// Processes taking part.
    pub np: u32,
    /// Processes waiting in a barrier meanwhile.
    pub waiting: u32,
    /// Rows.
    pub rows: Vec<Row>,
}

/// A whole IMB run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The command line IMB would have been given.
    pub calling_sequence: String,
    /// Shortest message, bytes.
    pub min_len: u64,
    /// Longest message, bytes.
    pub max_len: u64,
    /// Benchmarks in order.
    pub benchmarks: Vec<String>,
    /// Sections in order.
    pub sections: Vec<Section>,
    /// Measurements the simulation budget ran with fewer repetitions than
    /// IMB's rule asks (`max_volume`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lowered: Vec<Lowered>,
    /// Counters, times and background runs.
    #[serde(flatten)]
    pub run: RunSummary,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    PingPong,
    PingPing,
    Sendrecv,
    Exchange,
    Coll(Coll),
}

fn kind(name: &str) -> Result<(&'static str, Kind)> {
    let canon = BENCHMARKS
        .iter()
        .find(|b| b.eq_ignore_ascii_case(name))
        .copied();
    let Some(b) = canon else {
        return arg_err(format!(
            "unknown IMB benchmark {name:?}; use one of {}",
            BENCHMARKS.join(" ")
        ));
    };
    let k = match b {
        "PingPong" => Kind::PingPong,
        "PingPing" => Kind::PingPing,
        "Sendrecv" => Kind::Sendrecv,
        "Exchange" => Kind::Exchange,
        other => Kind::Coll(Coll::parse(other)?),
    };
    Ok((b, k))
}

/// IMB's repetitions for a message length.
pub fn repetitions(bytes: u64, iter: u32) -> u32 {
    const OVERALL_VOL: u64 = 40 << 20;
    match OVERALL_VOL.checked_div(bytes) {
        None => iter,
        Some(n) => n.clamp(1, iter as u64) as u32,
    }
}

/// Warm-up calls before the first message length of a section whose
/// first length runs `reps` repetitions.
pub fn warmup(reps: u32) -> u32 {
    (reps / 10).max(10)
}

struct Plan {
    scheds: Vec<Schedule>,
    /// The job's memory as planned, to refuse it before it is compiled.
    mem: JobMemory,
    phases: Vec<Phase>,
    /// Per phase: (section index, bytes, algorithm).
    rows: Vec<(usize, u64, String)>,
    sections: Vec<Section>,
    barrier_ids: BTreeMap<u32, u32>,
    /// Measurements the budget ran with fewer repetitions.
    lowered: Vec<Lowered>,
}

impl Plan {
    fn add(&mut self, s: Schedule) -> Result<u32> {
        self.mem.add(&s)?;
        self.scheds.push(s);
        Ok(self.scheds.len() as u32 - 1)
    }

    /// Compile `copies` calls of `args` (one per root when the root
    /// rotates), refused before compiling when the job would not fit.
    fn compile(&self, args: &CollArgs, alg: &str, copies: u32) -> Result<Schedule> {
        self.mem.precheck(args, alg, copies)?;
        coll::build(args, alg)
    }

    fn barrier(&mut self, n: u32, lib: Library, forced: Option<&String>) -> Result<u32> {
        if let Some(&id) = self.barrier_ids.get(&n) {
            return Ok(id);
        }
        let args = CollArgs::new(Coll::Barrier, n, 0, 1);
        let alg = match forced {
            Some(a) => a.clone(),
            None => select::select(lib, &args).algorithm.to_string(),
        };
        let s = self.compile(&args, &alg, 1)?;
        let id = self.add(s)?;
        self.barrier_ids.insert(n, id);
        Ok(id)
    }
}

/// The process counts IMB runs a collective on.
fn process_counts(np: u32, npmin: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut n = npmin.min(np).max(1);
    while n < np {
        v.push(n);
        n *= 2;
    }
    v.push(np);
    v
}

/// Run IMB on `spec`.
pub fn run(
    spec: &FabricSpec,
    o: &Options,
    seed: u64,
    progress: Option<Progress<'_>>,
) -> Result<Report> {
    let (lo, hi) = o.msglog.unwrap_or((0, 22));
    if lo > hi || hi > 30 {
        return arg_err(format!(
            "-msglog {lo}:{hi} is out of range; use min:max with min <= max <= 30"
        ));
    }
    let iter = o.iter.unwrap_or(1000);
    if iter == 0 {
        return arg_err("-iter must be at least 1");
    }
    let npmin = o.npmin.unwrap_or(2);
    if npmin == 0 {
        return arg_err("-npmin must be at least 1");
    }
    let np = o.job.np()?;
    let lib = o.tuning.library(spec)?;
    let mut forced: std::collections::HashMap<Coll, String> = Default::default();
    for (c, a) in &o.algorithms {
        let c = Coll::parse(c)?;
        forced.insert(c, c.check_algorithm(a)?.to_string());
    }
    let names: Vec<&str> = if o.benchmarks.is_empty() {
        BENCHMARKS.to_vec()
    } else {
        o.benchmarks.iter().map(String::as_str).collect()
    };
    let kinds: Vec<(&'static str, Kind)> = names.iter().map(|n| kind(n)).collect::<Result<_>>()?;
    if np < 2 && kinds.iter().any(|(_, k)| !matches!(k, Kind::Coll(_))) {
        return arg_err("PingPong, PingPing, Sendrecv and Exchange need -np 2 or more");
    }
    let mut sizes = vec![0u64];
    sizes.extend((lo..=hi).map(|k| 1u64 << k));
    let mut plan = Plan {
        scheds: Vec::new(),
        mem: JobMemory::new(spec, np),
        phases: Vec::new(),
        rows: Vec::new(),
        sections: Vec::new(),
        barrier_ids: BTreeMap::new(),
        lowered: Vec::new(),
    };
    for &(bench, k) in &kinds {
        let counts = match k {
            Kind::PingPong | Kind::PingPing => vec![2],
            _ => process_counts(np, npmin),
        };
        for n in counts {
            let si = plan.sections.len();
            plan.sections.push(Section {
                bench: bench.to_string(),
                np: n,
                waiting: np - n,
                rows: Vec::new(),
            });
            if k == Kind::Coll(Coll::Barrier) {
                let reps = iter;
                let bar = plan.barrier(n, lib, forced.get(&Coll::Barrier))?;
                let alg = plan.scheds[bar as usize].algorithm.clone();
                plan.phases.push(Phase {
                    scheds: vec![bar],
                    setup: None,
                    n,
                    warmup: warmup(reps),
                    reps,
                    timing: Timing::PerCall { barrier: bar },
                    label: format!("Barrier np={n}"),
                });
                plan.rows.push((si, 0, alg));
                continue;
            }
            let mut first = true;
            for &bytes in &sizes {
                let reduction = matches!(k, Kind::Coll(c) if c.reduces());
                if reduction && bytes % 4 != 0 {
                    continue;
                }
                let warm = if first {
                    warmup(repetitions(bytes, iter))
                } else {
                    0
                };
                first = false;
                let imb_reps = repetitions(bytes, iter);
                let (scheds, timing, alg) = match k {
                    Kind::PingPong => (
                        vec![patterns::pingpong(n, 0, 1, bytes)],
                        Timing::Loop,
                        String::new(),
                    ),
                    Kind::PingPing => (
                        vec![patterns::pingping(n, 0, 1, bytes)],
                        Timing::Loop,
                        String::new(),
                    ),
                    Kind::Sendrecv => (
                        vec![patterns::sendrecv(n, bytes)],
                        Timing::Loop,
                        String::new(),
                    ),
                    Kind::Exchange => (
                        vec![patterns::exchange(n, bytes)],
                        Timing::Loop,
                        String::new(),
                    ),
                    Kind::Coll(c) => {
                        let eb = if reduction { 4 } else { 1 };
                        let mut args = CollArgs::new(c, n, bytes / eb as u64, eb);
                        let alg = match forced.get(&c) {
                            Some(a) => a.clone(),
                            None => select::select(lib, &args).algorithm.to_string(),
                        };
                        if !o.root_shift || !c.rooted() {
                            (vec![plan.compile(&args, &alg, 1)?], Timing::Loop, alg)
                        } else {
                            plan.mem.precheck(&args, &alg, n)?;
                            let mut v = Vec::with_capacity(n as usize);
                            for root in 0..n {
                                args.root = root;
                                v.push(coll::build(&args, &alg)?);
                            }
                            (v, Timing::Loop, alg)
                        }
                    }
                };
                let timing = match (k, timing) {
                    (Kind::Coll(_), _) => Timing::PerCall {
                        barrier: plan.barrier(n, lib, forced.get(&Coll::Barrier))?,
                    },
                    (_, t) => t,
                };
                let reps = match o.tuning.max_volume() {
                    0 => imb_reps,
                    cap => {
                        scheds[0].reps_within(imb_reps, cap, crate::mpi::sched::MIN_MESSAGE_BYTES)
                    }
                };
                if reps < imb_reps {
                    plan.lowered.push(Lowered {
                        label: format!("{bench} np={n} {bytes} B"),
                        asked: imb_reps,
                        ran: reps,
                    });
                }
                let warm = warm.min(reps.max(1));
                let ids = scheds
                    .into_iter()
                    .map(|s| plan.add(s))
                    .collect::<Result<Vec<_>>>()?;
                plan.phases.push(Phase {
                    scheds: ids,
                    setup: None,
                    n,
                    warmup: warm,
                    reps,
                    timing,
                    label: format!("{bench} np={n} {bytes} B"),
                });
                plan.rows.push((si, bytes, alg));
            }
        }
    }
    let sync = patterns::sync_barrier(np);
    let Plan {
        scheds,
        phases,
        rows,
        mut sections,
        lowered,
        ..
    } = plan;
    let kinds_of: Vec<Kind> = sections
        .iter()
        .map(|s| kind(&s.bench).map(|x| x.1))
        .collect::<Result<_>>()?;
    let program = ProgramSpec {
        scheds,
        sync,
        phases: phases.clone(),
        keep_samples: false,
        executor: None,
    };
    let r = run_program(spec, &o.job, &o.env, program, seed, progress)?;
    for ((si, bytes, alg), (ph, res)) in rows.into_iter().zip(phases.iter().zip(&r.phases)) {
        let k = kinds_of[si];
        let reps = ph.reps as f64;
        let per_rank: Vec<f64> = res
            .rank_total
            .iter()
            .map(|t| t.as_us_f64() / reps)
            .collect();
        let per_rank: Vec<f64> = match k {
            Kind::PingPong => per_rank[..2].iter().map(|t| t / 2.0).collect(),
            Kind::PingPing => per_rank[..2].to_vec(),
            _ => per_rank,
        };
        let t_min = per_rank.iter().copied().fold(f64::INFINITY, f64::min);
        let t_max = per_rank.iter().copied().fold(0.0, f64::max);
        let t_avg = per_rank.iter().sum::<f64>() / per_rank.len() as f64;
        let factor = match k {
            Kind::PingPong | Kind::PingPing => Some(1.0),
            Kind::Sendrecv => Some(2.0),
            Kind::Exchange => Some(4.0),
            Kind::Coll(_) => None,
        };
        let mbytes_per_sec = factor.map(|f| {
            if t_max > 0.0 {
                f * bytes as f64 / t_max
            } else {
                0.0
            }
        });
        sections[si].rows.push(Row {
            bytes,
            reps: ph.reps,
            t_min_us: t_min,
            t_max_us: t_max,
            t_avg_us: t_avg,
            mbytes_per_sec,
            algorithm: alg,
        });
    }
    let mut seq = format!(
        "IMB-MPI1 {}",
        kinds.iter().map(|k| k.0).collect::<Vec<_>>().join(" ")
    );
    if let Some((a, b)) = o.msglog {
        seq += &format!(" -msglog {a}:{b}");
    }
    if let Some(n) = o.npmin {
        seq += &format!(" -npmin {n}");
    }
    if let Some(n) = o.iter {
        seq += &format!(" -iter {n}");
    }
    if o.root_shift {
        seq += " -root_shift on";
    }
    Ok(Report {
        calling_sequence: seq,
        min_len: 0,
        max_len: 1 << hi,
        benchmarks: kinds.iter().map(|k| k.0.to_string()).collect(),
        sections,
        lowered,
        run: r.summary,
    })
}
