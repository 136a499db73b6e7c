//! What an MPI job will take in memory, known before it allocates, so that
//! a job too large for the machine is refused with the figure instead of
//! swapping or being killed half-way through compiling its schedules.
//!
//! Counted: the compiled schedules (every step with its dependency list,
//! and the runtime's reverse lists built from them), the queue pairs the
//! job will connect (one pair per pair of ranks that exchange messages, at
//! most one per pair of ranks of the job, each [`crate::net::qp_pair_bytes`]
//! plus the runtime's connection entry, and with a rendezvous by READ the
//! connection's responder stream, [`crate::net::responder_stream_bytes`]), the ranks' own state and the
//! fabric ([`crate::config::memory::estimate_bytes`]). Left out: messages
//! in flight and packets, which are bounded by the run's concurrency rather
//! than by its size (the packet benchmarks report them per packet in
//! flight), and per-call samples.
//!
//! A schedule of up to [`PROBE_RANKS`] ranks is cheap to compile (a few MB
//! at most), so it is measured exactly once compiled. A larger collective is
//! estimated before it is compiled: the same call (same algorithm, same
//! element count) is compiled at 64, 128 and 256 ranks (48, 96 and 192
//! when p is not a power of two, since algorithms such as recursive
//! doubling change shape on such sizes), and the growth of
//! its per-rank steps, dependencies and peers per doubling of p is
//! extrapolated to the real communicator size (see `extrapolate`). That
//! is exact for per-rank work constant, logarithmic or linear in p
//! (linear, pairwise, ring, trees, recursive doubling) at powers of two,
//! and on other sizes within 0.8x to 2.5x (a test checks every algorithm
//! at 600 and 1,024 ranks; the low side is logarithmic algorithms, whose
//! remainder steps on sizes that are not powers of two it misses, and
//! whose footprints are small: what fills memory is per-rank work linear
//! in p, which it gets exactly). A forced
//! algorithm that falls back to a cheaper one only above 256 ranks (ring
//! Allreduce with fewer elements than ranks) is overestimated; a refusal
//! says it is an estimate. The memory available is the least of the
//! machine's, the cgroup's and `FABRICLAB_MEMORY_LIMIT`
//! ([`crate::config::memory::available_bytes`]).

use super::coll::{self, CollArgs};
use super::sched::{Op, Schedule, Step};
use crate::config::memory::{available_bytes, available_bytes_beside, estimate_bytes};
use crate::config::FabricSpec;
use crate::error::{arg_err, Result};

/// Communicators up to this size are compiled and measured, larger ones
/// estimated from compiles at a quarter, a half and this size.
pub const PROBE_RANKS: u32 = 256;

/// Heap and inline bytes of a step beyond its dependency entries: the step
/// itself, the allocator's header of its dependency list, and the
/// runtime's reverse list (inline part and header).
const STEP_BYTES: u64 = std::mem::size_of::<Step>() as u64 + 16 + 24 + 16;
/// Bytes per dependency: one `u32` in the step's list and one in the
/// runtime's reverse list.
const DEP_BYTES: u64 = 8;
/// Bytes of the runtime's map entry for one connection, beyond the QPs.
const CONN_BYTES: u64 = 48;
/// Bytes per rank of runtime and program state (matching queues, position,
/// per-phase totals), without per-step buffers.
const RANK_BYTES: u64 = 512;

/// The size of a compiled schedule, in what memory scales with.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Footprint {
    /// Steps over all ranks.
    pub steps: f64,
    /// Dependency entries over all steps.
    pub deps: f64,
    /// Distinct pairs of ranks that exchange messages.
    pub pairs: f64,
}

impl Footprint {
    /// Measured on a compiled schedule (memory: one list of one rank's
    /// peers at a time).
    pub fn of(s: &Schedule) -> Footprint {
        let (mut steps, mut deps, mut ends) = (0u64, 0u64, 0u64);
        let mut peers: Vec<u32> = Vec::new();
        for (me, rs) in s.ranks.iter().enumerate() {
            steps += rs.steps.len() as u64;
            peers.clear();
            for st in &rs.steps {
                deps += st.deps.len() as u64;
                match st.op {
                    Op::Send { to, .. } => peers.push(to),
                    Op::Recv { from, .. } => peers.push(from),
                    Op::SwitchSend { to, .. } => peers.push(to),
                    Op::SwitchReduce { .. } | Op::Multicast { .. } => {
                        peers.extend(st.op.group_peers(me as u32))
                    }
                    _ => {}
                }
            }
            peers.sort_unstable();
            peers.dedup();
            ends += peers.len() as u64;
        }
        Footprint {
            steps: steps as f64,
            deps: deps as f64,
            // Every send has its receive at the peer: each pair is seen
            // from both of its ends.
            pairs: ends as f64 / 2.0,
        }
    }

    /// Bytes of the steps and dependency lists (QPs are counted per job,
    /// since schedules share them).
    pub fn schedule_bytes(&self) -> f64 {
        self.steps * STEP_BYTES as f64 + self.deps * DEP_BYTES as f64
    }
}

/// A per-rank quantity measured at `p0`, `2 p0` and `4 p0` ranks (`f`),
/// extrapolated to `p` ranks and multiplied by `p`. The growth per
/// doubling of p is taken as geometric, with the ratio of the last two
/// increments (`r`): exact for `a + b p^e` (r = 2^e: constant, linear,
/// quadratic per-rank work) and for `a + b log p` (r = 1: trees). A ratio
/// below 1 is read as 1, and p as the next probe size times a power of
/// two at or above it, both of which can only overestimate.
fn extrapolate(p0: u32, f: [f64; 3], p: u32) -> f64 {
    let per = [
        f[0] / p0 as f64,
        f[1] / (2 * p0) as f64,
        f[2] / (4 * p0) as f64,
    ];
    let (d1, d2) = (per[1] - per[0], per[2] - per[1]);
    // Whole doublings, rounded up: per-rank work of trees steps up at
    // powers of two, and rounding up is the safe side for the rest.
    let k = (p as f64 / (4 * p0) as f64).log2().ceil();
    let grown = if d2 <= 0.0 {
        0.0
    } else if d1 <= 0.0 {
        // Growth starts between the last two probes: take it as linear.
        d2 * (2f64.powf(k + 1.0) - 2.0)
    } else {
        let r = (d2 / d1).max(1.0);
        if r == 1.0 {
            d2 * k
        } else {
            d2 * r * (r.powf(k) - 1.0) / (r - 1.0)
        }
    };
    (per[2] + grown) * p as f64
}

/// The footprint of compiling `args` with `algorithm`, without compiling
/// it at its size (see the module's notes); errors are the compiler's.
pub fn estimate(args: &CollArgs, algorithm: &str) -> Result<Footprint> {
    let probe = |p: u32| -> Result<Footprint> {
        let a = CollArgs {
            p,
            root: args.root % p,
            ..args.clone()
        };
        Ok(Footprint::of(&coll::build(&a, algorithm)?))
    };
    let p = args.p;
    if p <= PROBE_RANKS {
        return probe(p);
    }
    // Probes that are powers of two exactly when p is one, since several
    // algorithms change shape on other sizes (recursive doubling).
    let p0 = if p.is_power_of_two() {
        PROBE_RANKS / 4
    } else {
        PROBE_RANKS * 3 / 16
    };
    let f = [probe(p0)?, probe(2 * p0)?, probe(4 * p0)?];
    let at = |g: fn(&Footprint) -> f64| extrapolate(p0, [g(&f[0]), g(&f[1]), g(&f[2])], p);
    Ok(Footprint {
        steps: at(|x| x.steps),
        deps: at(|x| x.deps),
        pairs: at(|x| x.pairs).min(p as f64 * (p as f64 - 1.0) / 2.0),
    })
}

/// The memory of one MPI job as its tool plans it: the fabric, the ranks,
/// the schedules compiled so far and the QPs they will connect.
#[derive(Clone, Debug)]
pub struct JobMemory {
    np: u32,
    base: f64,
    schedules: f64,
    pairs: f64,
    qp_bytes: f64,
    limit: Option<u64>,
    /// What the refusal calls the job and its ranks.
    job: &'static str,
}

impl JobMemory {
    /// A job of `np` ranks on `spec`, checked against the memory available
    /// now (read once: what the job allocates later is what it counts).
    pub fn new(spec: &FabricSpec, np: u32) -> JobMemory {
        // A rendezvous by READ gives a connection its responder stream.
        let reads = if spec.mpi.rndv == crate::config::Rndv::Read {
            crate::net::responder_stream_bytes(spec.sim.backend)
        } else {
            0
        };
        JobMemory {
            np,
            base: estimate_bytes(spec) as f64 + np as f64 * RANK_BYTES as f64,
            schedules: 0.0,
            pairs: 0.0,
            qp_bytes: (crate::net::qp_pair_bytes(spec.sim.backend) + reads + CONN_BYTES) as f64,
            limit: available_bytes(),
            job: "MPI job",
        }
    }

    /// The same, named an NCCL job in its refusal (its ranks are GPUs).
    pub fn for_nccl(mut self) -> JobMemory {
        self.job = "NCCL job";
        self
    }

    /// The same, checked against `limit` bytes instead (tests).
    pub fn with_limit(mut self, limit: u64) -> JobMemory {
        self.limit = Some(limit);
        self
    }

    fn qps_bytes(&self, pairs: f64) -> f64 {
        let most = self.np as f64 * (self.np as f64 - 1.0) / 2.0;
        pairs.min(most) * self.qp_bytes
    }

    /// Bytes the job needs with `extra` schedules on top of what it has.
    fn need_with(&self, extra: &Footprint, copies: u32) -> f64 {
        self.base
            + self.schedules
            + extra.schedule_bytes() * copies as f64
            + self.qps_bytes(self.pairs + extra.pairs * copies as f64)
    }

    /// Bytes the job needs as planned so far.
    pub fn need_bytes(&self) -> u64 {
        self.need_with(&Footprint::default(), 0) as u64
    }

    fn check(&self, need: f64, what: &str) -> Result<()> {
        let Some(have) = self.limit else {
            return Ok(());
        };
        if need <= have as f64 {
            return Ok(());
        }
        arg_err(format!(
            "this {} ({} ranks) needs about {:.1} GB (schedules, queue pairs and the fabric; \
             {what}), more than the {:.1} GB available; use fewer ranks, fewer message sizes or \
             another algorithm (or a machine with more memory, or set FABRICLAB_MEMORY_LIMIT)",
            self.job,
            self.np,
            need / 1e9,
            have as f64 / 1e9
        ))
    }

    /// Refuse `copies` compiles of `args` with `algorithm` before
    /// compiling them when the job would then not fit (communicators larger
    /// than [`PROBE_RANKS`]; smaller ones are counted once compiled).
    pub fn precheck(&self, args: &CollArgs, algorithm: &str, copies: u32) -> Result<()> {
        if args.p <= PROBE_RANKS {
            return Ok(());
        }
        let f = estimate(args, algorithm)?;
        let each = if copies == 1 { "" } else { " each" };
        let what = format!(
            "estimated before compiling {copies} x {} ({algorithm}, {:.1} M steps{each})",
            args.coll.name(),
            f.steps / 1e6
        );
        self.check(self.need_with(&f, copies), &what)
    }

    /// Refuse a schedule of footprint `f` (an estimate, said in `what`)
    /// before it is built, when the job would then not fit.
    pub fn precheck_footprint(&self, f: &Footprint, what: &str) -> Result<()> {
        self.check(self.need_with(f, 1), what)
    }

    fn count(&mut self, s: &Schedule) {
        let f = Footprint::of(s);
        self.schedules += f.schedule_bytes();
        self.pairs += f.pairs;
    }

    /// Count a compiled schedule; refuse when the job no longer fits.
    pub fn add(&mut self, s: &Schedule) -> Result<()> {
        self.count(s);
        let what = format!("counted once its {} schedule was compiled", s.algorithm);
        self.check(self.need_bytes() as f64, &what)
    }
}

/// Check the whole job once its schedules are compiled, before the fabric
/// is built and the ranks placed (every tool's last check).
pub fn check_job(spec: &FabricSpec, np: u32, scheds: &[Schedule]) -> Result<()> {
    let mut m = JobMemory::new(spec, np);
    for s in scheds {
        m.count(s);
    }
    // The schedules are in memory already, so out of what is free now:
    // counted in the need, they are given back to what is available.
    if m.limit.is_some() {
        m.limit = available_bytes_beside(m.schedules as u64);
    }
    let what = format!("counted over its {} compiled schedules", scheds.len());
    m.check(m.need_bytes() as f64, &what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::coll::Coll;

    /// The estimate against the real compile at 1,024 and 600 ranks, for
    /// every algorithm of every collective: at least 80 % of the compiled
    /// figure (logarithmic algorithms on sizes that are not powers of two,
    /// whose footprints are small) and at most 2.5 times it.
    #[test]
    fn the_estimate_bounds_the_compiled_schedule() {
        let mut bad = Vec::new();
        for p in [600, 1024] {
            for (coll, count, eb) in [
                (Coll::Alltoall, 1024, 1),
                (Coll::Allgather, 1024, 1),
                (Coll::Allreduce, 1 << 20, 4),
                (Coll::Bcast, 1 << 20, 1),
                (Coll::Reduce, 1 << 18, 4),
                (Coll::Gather, 1024, 1),
                (Coll::Scatter, 1024, 1),
                (Coll::ReduceScatter, 1 << 20, 4),
                (Coll::Barrier, 0, 1),
            ] {
                let args = CollArgs::new(coll, p, count, eb);
                for alg in coll.algorithms() {
                    if *alg == "two_proc" {
                        continue;
                    }
                    let real = Footprint::of(&coll::build(&args, alg).unwrap());
                    let est = estimate(&args, alg).unwrap();
                    for (what, e, r) in [
                        ("steps", est.steps, real.steps),
                        ("deps", est.deps, real.deps),
                        ("pairs", est.pairs, real.pairs),
                    ] {
                        if !(e >= r * 0.8 && e <= r * 2.5 + 1.0) {
                            bad.push(format!(
                                "p {p} {} {alg}: {what} estimated {e:.0}, compiled {r:.0} ({:.2}x)",
                                coll.name(),
                                e / r
                            ));
                        }
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// By hand: a linear alltoall of p ranks has, per rank, a local copy
    /// and p-1 receives and p-1 sends; every pair of ranks talks.
    #[test]
    fn a_linear_alltoall_is_counted_by_hand() {
        let p = 64u32;
        let s = coll::build(&CollArgs::new(Coll::Alltoall, p, 8, 1), "linear").unwrap();
        let f = Footprint::of(&s);
        assert_eq!(f.steps, (p * (1 + 2 * (p - 1))) as f64);
        assert_eq!(f.pairs, (p * (p - 1) / 2) as f64);
        // And at 16,384 ranks the estimate is the same arithmetic.
        let p = 16_384u64;
        let e = estimate(&CollArgs::new(Coll::Alltoall, p as u32, 8, 1), "linear").unwrap();
        let steps = (p * (1 + 2 * (p - 1))) as f64;
        assert!(
            (e.steps / steps - 1.0).abs() < 1e-9,
            "{} vs {steps}",
            e.steps
        );
        assert!((e.pairs / (p * (p - 1) / 2) as f64 - 1.0).abs() < 1e-9);
    }

    /// A 16k-rank linear alltoall (537 M steps) is refused before it is
    /// compiled; the Rabenseifner allreduce of the allreduce-16k benchmark
    /// is not, on a machine of this project's size.
    #[test]
    fn a_job_too_large_is_refused_before_compiling() {
        let spec = crate::config::FabricSpec::from_toml(
            &crate::config::preset_toml("leaf-spine")
                .unwrap()
                .replace("leaves = 4", "leaves = 512")
                .replace("hosts_per_leaf = 4", "hosts_per_leaf = 32"),
        )
        .unwrap();
        let m = JobMemory::new(&spec, 16_384).with_limit(24_000_000_000);
        let a2a = CollArgs::new(Coll::Alltoall, 16_384, 1024, 1);
        let e = m.precheck(&a2a, "linear", 1).unwrap_err().to_string();
        assert!(
            e.contains("16384 ranks") && e.contains("estimated before compiling 1 x alltoall"),
            "{e}"
        );
        assert!(e.contains("GB"), "{e}");
        let ar = CollArgs::new(Coll::Allreduce, 16_384, 1 << 28, 4);
        m.precheck(&ar, "rabenseifner", 1).unwrap();
        // Many copies of a small one add up (IMB's rotating roots).
        let g = CollArgs::new(Coll::Gather, 16_384, 1 << 20, 1);
        m.precheck(&g, "basic_linear", 1).unwrap();
        assert!(m.precheck(&g, "basic_linear", 16_384).is_err());
    }

    /// Compiled schedules add up, and a limit below the fabric alone
    /// refuses the first one.
    #[test]
    fn compiled_schedules_add_up() {
        let spec = crate::config::preset("heps").unwrap();
        let s = coll::build(&CollArgs::new(Coll::Alltoall, 32, 8, 1), "pairwise").unwrap();
        let mut m = JobMemory::new(&spec, 32);
        let base = m.need_bytes();
        m.add(&s).unwrap();
        let one = m.need_bytes() - base;
        m.add(&s).unwrap();
        // The second copy adds its steps but no new QPs.
        let two = m.need_bytes() - base;
        let qps = 32.0 * 31.0 / 2.0 * m.qp_bytes;
        assert!((two as f64 - (2.0 * (one as f64 - qps) + qps)).abs() < 2.0);
        let mut tight = JobMemory::new(&spec, 32).with_limit(base);
        assert!(tight.add(&s).is_err());
    }

    /// A rendezvous by READ counts each connection's responder stream (a
    /// second QP pair), one by WRITE does not.
    #[test]
    fn a_rendezvous_by_read_counts_the_responder_streams() {
        let mut spec = crate::config::preset("heps").unwrap();
        let read = JobMemory::new(&spec, 32).qp_bytes;
        spec.mpi.rndv = crate::config::Rndv::Write;
        let write = JobMemory::new(&spec, 32).qp_bytes;
        let stream = crate::net::responder_stream_bytes(spec.sim.backend) as f64;
        assert!(stream > 0.0);
        assert_eq!(read - write, stream);
    }

    /// The allreduce-16k benchmark's call (Rabenseifner, 1 GiB, 16,384
    /// ranks) is estimated exactly: 1,163,264 steps, 114,688 pairs.
    #[test]
    fn the_allreduce_16k_call_is_estimated_exactly() {
        let ar = CollArgs::new(Coll::Allreduce, 16_384, 1 << 28, 4);
        let est = estimate(&ar, "rabenseifner").unwrap();
        let real = Footprint::of(&coll::build(&ar, "rabenseifner").unwrap());
        assert_eq!(est, real);
        assert_eq!((real.steps, real.pairs), (1_163_264.0, 114_688.0));
    }
}
