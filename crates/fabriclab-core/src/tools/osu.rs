//! OSU Micro-Benchmarks (7.x) on the simulated fabric.
//!
//! Point-to-point: osu_latency (ping-pong loop, latency = time / (2
//! iterations)), osu_bw (windows of 64 sends answered by a 1-byte
//! acknowledgement; MB/s = bytes x window x iterations / time / 10^6),
//! osu_bibw (both sides send a window), osu_mbw_mr (np/2 pairs, rank i
//! with rank i + np/2; MB/s = pairs x bytes x window x iterations over the
//! senders' mean time, as OSU's `calc_bw`, and messages/s). Left out: the
//! barrier OSU 7.x puts before each window (the pairs' windows run back
//! to back). Collectives
//! (allreduce, alltoall, allgather, bcast, reduce, gather, scatter,
//! barrier): each call timed on its own with a barrier after it, per-rank
//! average, then average, min and max over ranks. Defaults as OSU's:
//! sizes 1 B to 4 MiB (point-to-point) or 1 MiB (collectives) in powers of
//! two; iterations 10000 / skip 100 (latency), 100 / 10 (bandwidth), 1000 /
//! 200 (collectives), with 1000 / 10, 20 / 2 and 100 / 10 above 8 KiB.
//! MPI_CHAR everywhere, as OSU 7.4 prints. `-i` and `-x` set both the small-
//! and large-message counts.
//!
//! `-z` (osu_latency): tail latencies, OSU's way: each timed iteration's
//! round trip halved, sorted, the value at rank round(iterations x p /
//! 100) (50, 90 and 99 by default).
//!
//! Left out: `-z` on the other tests, GPU buffers and validation (`-c`).

use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::mpi::coll::{self, Coll, CollArgs};
use crate::mpi::job::JobSpec;
use crate::mpi::patterns;
use crate::mpi::program::{Phase, Timing};
use crate::mpi::run::{run_program, Lowered, ProgramSpec, Progress, RunEnv, RunSummary, Tuning};
use crate::mpi::sched::Schedule;
use crate::mpi::select;
use serde::{Deserialize, Serialize};

/// The tests, by program name.
pub const TESTS: [&str; 12] = [
    "osu_latency",
    "osu_bw",
    "osu_bibw",
    "osu_mbw_mr",
    "osu_allreduce",
    "osu_alltoall",
    "osu_allgather",
    "osu_bcast",
    "osu_reduce",
    "osu_gather",
    "osu_scatter",
    "osu_barrier",
];

/// Messages per window in the bandwidth tests.
pub const WINDOW: u32 = 64;
/// Above this size OSU uses its "large" iteration counts.
pub const LARGE: u64 = 8192;

/// OSU's options.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// Program name (`osu_allreduce` or `allreduce`).
    pub test: String,
    /// The job: ranks, ranks per host, hosts, placement.
    pub job: JobSpec,
    /// What runs beside the job and what is recorded.
    #[serde(default)]
    pub env: RunEnv,
    /// MPI library override and simulation budget.
    #[serde(default)]
    pub tuning: Tuning,
    /// `-m [min:]max`, bytes.
    #[serde(default)]
    pub sizes: Option<(u64, u64)>,
    /// `-i`.
    #[serde(default)]
    pub iterations: Option<u32>,
    /// `-x`.
    #[serde(default)]
    pub warmup: Option<u32>,
    /// `-f`: print min, max and iterations (collectives).
    #[serde(default)]
    pub full: bool,
    /// Forced algorithm for the collective.
    #[serde(default)]
    pub algorithm: Option<String>,
    /// `-z`: tail-latency percentiles (osu_latency), whole numbers as
    /// OSU takes them, at most 5 (`OMB_STAT_MAX_NUM`).
    #[serde(default)]
    pub tail_lat: Option<Vec<u32>>,
}

/// One row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// Size, bytes (0 for barrier).
    pub bytes: u64,
    /// Average latency over ranks, us (latency tests and collectives).
    pub avg_us: Option<f64>,
    /// Minimum over ranks, us.
    pub min_us: Option<f64>,
    /// Maximum over ranks, us.
    pub max_us: Option<f64>,
    /// Bandwidth, MB/s (bandwidth tests).
    pub mb_per_s: Option<f64>,
    /// Messages per second (osu_mbw_mr).
    pub msgs_per_s: Option<f64>,
    /// Timed iterations.
    pub iterations: u32,
    /// The collective algorithm that ran.
    pub algorithm: String,
    /// `-z`: (percentile, latency in us), OSU's tail latencies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tail_us: Vec<(u32, f64)>,
}

/// An OSU run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Program name.
    pub test: String,
    /// Ranks.
    pub np: u32,
    /// `-f` given.
    pub full: bool,
    /// Rows.
    pub rows: Vec<Row>,
    /// Measurements the simulation budget ran with fewer repetitions than
    /// OSU's counts ask (`max_volume`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lowered: Vec<Lowered>,
    /// Counters, times and background runs.
    #[serde(flatten)]
    pub run: RunSummary,
}

/// Canonical program name (`allreduce` -> `osu_allreduce`).
pub fn canonical(test: &str) -> Result<&'static str> {
    let t = test.to_ascii_lowercase();
    let t = t.strip_prefix("osu_").unwrap_or(&t);
    TESTS.iter().find(|n| n[4..] == *t).copied().map_or_else(
        || {
            arg_err(format!(
                "unknown OSU test {test:?}; use one of {}",
                TESTS.join(" ")
            ))
        },
        Ok,
    )
}

fn coll_of(test: &str) -> Option<Coll> {
    match test {
        "osu_latency" | "osu_bw" | "osu_bibw" | "osu_mbw_mr" => None,
        t => Coll::parse(&t[4..]).ok(),
    }
}

/// Run an OSU test on `spec`.
pub fn run(
    spec: &FabricSpec,
    o: &Options,
    seed: u64,
    progress: Option<Progress<'_>>,
) -> Result<Report> {
    let test = canonical(&o.test)?;
    let coll = coll_of(test);
    let pt2pt = coll.is_none();
    let np = o.job.np()?;
    match test {
        "osu_latency" | "osu_bw" | "osu_bibw" if np != 2 => {
            return arg_err(format!("{test} needs exactly 2 processes, got -np {}", np))
        }
        "osu_mbw_mr" if np < 2 || np % 2 != 0 => {
            return arg_err(format!(
                "osu_mbw_mr needs an even number of processes, got -np {}",
                np
            ))
        }
        _ if np < 2 => return arg_err(format!("{test} needs at least 2 processes")),
        _ => {}
    }
    let max_default = if pt2pt { 1 << 22 } else { 1 << 20 };
    let (lo, hi) = o.sizes.unwrap_or((1, max_default));
    if lo > hi || hi > (1 << 30) {
        return arg_err(format!(
            "-m {lo}:{hi} is not a valid size range (min <= max <= 1 GiB)"
        ));
    }
    let lib = o.tuning.library(spec)?;
    if let (Some(a), Some(c)) = (&o.algorithm, coll) {
        c.check_algorithm(a)?;
    } else if o.algorithm.is_some() {
        return arg_err(format!(
            "{test} is not a collective; --algorithm does not apply"
        ));
    }
    let mut sizes: Vec<u64> = Vec::new();
    if coll == Some(Coll::Barrier) {
        sizes.push(0);
    } else {
        // OSU's loop: from MIN, doubling (`size = size ? size * 2 : 1`),
        // so -m 3:40 runs 3, 6, 12 and 24 B. A collective has no 0-byte
        // call: its sizes start at 1.
        let mut s = lo;
        if s == 0 {
            if pt2pt {
                sizes.push(0);
            }
            s = 1;
        }
        while s <= hi {
            sizes.push(s);
            s *= 2;
        }
        if sizes.is_empty() {
            return arg_err(format!(
                "-m {lo}:{hi}: {test} has no 0-byte call; give a largest size of 1 or more"
            ));
        }
    }
    let counts = |bytes: u64| -> (u32, u32) {
        let large = bytes > LARGE;
        let (i, x) = match (test, large) {
            ("osu_latency", false) => (10000, 100),
            ("osu_latency", true) => (1000, 10),
            ("osu_bw" | "osu_bibw" | "osu_mbw_mr", false) => (100, 10),
            ("osu_bw" | "osu_bibw" | "osu_mbw_mr", true) => (20, 2),
            (_, false) => (1000, 200),
            (_, true) => (100, 10),
        };
        (o.iterations.unwrap_or(i), o.warmup.unwrap_or(x))
    };
    if o.iterations == Some(0) {
        return arg_err("-i must be at least 1");
    }
    if let Some(ps) = &o.tail_lat {
        if test != "osu_latency" {
            return arg_err(format!(
                "-z (tail latency) is modelled for osu_latency only, not {test}"
            ));
        }
        if let Some(p) = ps
            .iter()
            .enumerate()
            .find_map(|(i, p)| ps[..i].contains(p).then_some(p))
        {
            return arg_err(format!("-z lists percentile {p} twice; give each once"));
        }
        if ps.is_empty() || ps.len() > 5 || ps.iter().any(|p| !(1..=100).contains(p)) {
            return arg_err(
                "-z takes 1 to 5 whole percentiles from 1 to 100 (OSU's limits), e.g. -z 50,90,99",
            );
        }
    }
    let n = np;
    let mut mem = crate::mpi::footprint::JobMemory::new(spec, n);
    let mut scheds: Vec<Schedule> = Vec::new();
    let mut phases = Vec::new();
    let mut algs = Vec::new();
    let mut barrier_id = None;
    let mut barrier = |scheds: &mut Vec<Schedule>| -> Result<u32> {
        if let Some(b) = barrier_id {
            return Ok(b);
        }
        let args = CollArgs::new(Coll::Barrier, n, 0, 1);
        let alg = select::select(lib, &args).algorithm;
        scheds.push(coll::build(&args, alg)?);
        let id = scheds.len() as u32 - 1;
        barrier_id = Some(id);
        Ok(id)
    };
    let pairs: Vec<(u32, u32)> = (0..n / 2).map(|i| (i, i + n / 2)).collect();
    let mut lowered = Vec::new();
    for &bytes in &sizes {
        let (iters, skip) = counts(bytes);
        let (s, alg) = match test {
            "osu_latency" => (patterns::pingpong(n, 0, 1, bytes), String::new()),
            "osu_bw" => (
                patterns::window(n, &pairs, bytes, WINDOW, false),
                String::new(),
            ),
            "osu_bibw" => (
                patterns::window(n, &pairs, bytes, WINDOW, true),
                String::new(),
            ),
            "osu_mbw_mr" => (
                patterns::window(n, &pairs, bytes, WINDOW, false),
                String::new(),
            ),
            _ => {
                let c = coll.expect("collective");
                let args = CollArgs::new(c, n, bytes, 1);
                let alg = match &o.algorithm {
                    Some(a) => a.clone(),
                    None => select::select(lib, &args).algorithm.to_string(),
                };
                mem.precheck(&args, &alg, 1)?;
                (coll::build(&args, &alg)?, alg)
            }
        };
        mem.add(&s)?;
        let asked = iters;
        let (iters, skip) = match o.tuning.max_volume() {
            0 => (iters, skip),
            cap => {
                let n = s.reps_within(iters, cap, crate::mpi::sched::MIN_MESSAGE_BYTES);
                (n, skip.min(n))
            }
        };
        if iters < asked {
            lowered.push(Lowered {
                label: format!("{test} {bytes} B"),
                asked,
                ran: iters,
            });
        }
        let timing = if pt2pt {
            Timing::Loop
        } else {
            Timing::PerCall {
                barrier: barrier(&mut scheds)?,
            }
        };
        scheds.push(s);
        phases.push(Phase {
            scheds: vec![scheds.len() as u32 - 1],
            setup: None,
            n,
            warmup: skip,
            reps: iters,
            timing,
            label: format!("{test} {bytes} B"),
        });
        algs.push(alg);
    }
    let program = ProgramSpec {
        scheds,
        sync: patterns::sync_barrier(n),
        phases: phases.clone(),
        // -z needs each iteration's end (Loop timing keeps them).
        keep_samples: o.tail_lat.is_some(),
        executor: None,
    };
    let r = run_program(spec, &o.job, &o.env, program, seed, progress)?;
    let mut rows = Vec::new();
    for ((&bytes, alg), (ph, res)) in sizes.iter().zip(algs).zip(phases.iter().zip(&r.phases)) {
        let iters = ph.reps as f64;
        let t0 = res.rank_total[0].as_secs_f64();
        let mut row = Row {
            bytes,
            avg_us: None,
            min_us: None,
            max_us: None,
            mb_per_s: None,
            msgs_per_s: None,
            iterations: ph.reps,
            algorithm: alg,
            tail_us: Vec::new(),
        };
        match test {
            "osu_latency" => {
                row.avg_us = Some(t0 * 1e6 / (2.0 * iters));
                if let Some(ps) = &o.tail_lat {
                    row.tail_us = tail_latencies(&res.call_ends[0], res.rank_total[0], ph.reps, ps);
                }
            }
            "osu_bw" | "osu_bibw" | "osu_mbw_mr" => {
                let dirs = if test == "osu_bibw" { 2.0 } else { 1.0 };
                // OSU's `calc_bw`: every pair's messages over the senders'
                // mean time (`MPI_Reduce` of their times, divided by the
                // pairs), not the sum of the pairs' rates: the two differ
                // when pairs run at different rates (one through shared
                // memory, one over the network). One pair: its own rate.
                let mean_s = pairs
                    .iter()
                    .map(|&(a, _)| res.rank_total[a as usize].as_secs_f64())
                    .sum::<f64>()
                    / pairs.len() as f64;
                let rate = pairs.len() as f64 * iters * WINDOW as f64 * dirs / mean_s;
                row.mb_per_s = Some(rate * bytes as f64 / 1e6);
                row.msgs_per_s = Some(rate);
            }
            _ => {
                let per: Vec<f64> = res
                    .rank_total
                    .iter()
                    .map(|t| t.as_us_f64() / iters)
                    .collect();
                row.avg_us = Some(per.iter().sum::<f64>() / per.len() as f64);
                row.min_us = Some(per.iter().copied().fold(f64::INFINITY, f64::min));
                row.max_us = Some(per.iter().copied().fold(0.0, f64::max));
            }
        }
        rows.push(row);
    }
    Ok(Report {
        test: test.to_string(),
        np,
        full: o.full,
        rows,
        lowered,
        run: r.summary,
    })
}

/// OSU's tail latencies of a ping-pong loop, in us: each of the last
/// `reps` iterations' round trip halved (from the end of the one before,
/// or for the first timed one from the loop's start), sorted, and for each
/// percentile p the value at rank round(reps x p / 100)
/// (`omb_calculate_tail_lat`).
fn tail_latencies(
    ends: &[crate::units::Time],
    total: crate::units::Time,
    reps: u32,
    ps: &[u32],
) -> Vec<(u32, f64)> {
    let n = reps as usize;
    if ends.len() < n || n == 0 {
        return Vec::new();
    }
    let first = ends.len() - n;
    let start = ends[ends.len() - 1].as_ps() - total.as_ps();
    let mut lat: Vec<f64> = (first..ends.len())
        .map(|i| {
            let from = if i == first {
                start
            } else {
                ends[i - 1].as_ps()
            };
            (ends[i].as_ps() - from) as f64 / 2e6
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    ps.iter()
        .map(|&p| {
            let rank = ((n as f64 * f64::from(p) / 100.0).round() as usize).clamp(1, n);
            (p, lat[rank - 1])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::tail_latencies;
    use crate::units::Time;

    #[test]
    fn tail_latencies_take_osus_rank_of_the_halved_round_trips() {
        // Two warm-up iterations, then round trips of 2, 4, 6, 8 and 10 us
        // (half: 1, 2, 3, 4, 5 us) in the order 6, 2, 10, 4, 8.
        let mut t = 100u64;
        let mut ends = vec![Time::us(50), Time::us(100)];
        for rtt in [6u64, 2, 10, 4, 8] {
            t += rtt;
            ends.push(Time::us(t));
        }
        let total = Time::us(30);
        let tail = tail_latencies(&ends, total, 5, &[50, 90, 99, 20]);
        // Ranks round(2.5) = 3, round(4.5) = 5, round(4.95) = 5, 1.
        assert_eq!(tail, vec![(50, 3.0), (90, 5.0), (99, 5.0), (20, 1.0)]);
    }
}
