//! Collective operations and the names of the algorithms that implement
//! them, as MPI libraries call them.
//!
//! This file fixes the vocabulary shared by the algorithm builders (one file
//! per collective), the selection rules ([`super::select`]) and the
//! benchmark drivers: which collectives exist, what their `count` means,
//! and which algorithm names each accepts; and [`build`], which compiles a
//! call with a named algorithm into a [`Schedule`] with the message
//! pattern, sizes, ordering and local work of the Open MPI coll/base (or,
//! for MPICH-only names, MPICH) implementation.
//!
//! ```
//! use fabriclab_core::mpi::coll::{build, expected, initial, Coll, CollArgs};
//! use fabriclab_core::mpi::interp::{run, RedOp};
//!
//! // Ring allreduce of 100 floats on 6 ranks: 2(p-1) messages per rank.
//! let args = CollArgs::new(Coll::Allreduce, 6, 100, 4);
//! let s = build(&args, "ring").unwrap();
//! let init = initial(&args, RedOp::Sum);
//! let out = run(&s, init.clone(), RedOp::Sum, 1).unwrap();
//! let want = expected(&args, &init, RedOp::Sum);
//! assert!(out.iter().zip(&want).all(|(o, w)| Some(&o.recv) == w.as_ref()));
//! ```

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod data;
mod gather;
mod prog;
mod reduce;
mod reduce_scatter;
mod rsag;
mod tree;
mod tuning;

pub use data::{buf_sizes, expected, initial};
pub use reduce_scatter::block as reduce_scatter_block;
pub use tuning::{default_sub_algorithm, Tuning};

use super::sched::{Buf, Rank, Region, Schedule};
use crate::error::{arg_err, Result};
use prog::{whole, Prog};
use tuning::Ctx;

/// An MPI collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Coll {
    /// MPI_Allreduce.
    Allreduce,
    /// MPI_Reduce.
    Reduce,
    /// MPI_Bcast.
    Bcast,
    /// MPI_Allgather.
    Allgather,
    /// MPI_Allgatherv (equal counts, as IMB runs it).
    Allgatherv,
    /// MPI_Gather.
    Gather,
    /// MPI_Scatter.
    Scatter,
    /// MPI_Alltoall.
    Alltoall,
    /// MPI_Reduce_scatter.
    ReduceScatter,
    /// MPI_Barrier.
    Barrier,
}

/// Every collective, in a stable order.
pub const ALL: [Coll; 10] = [
    Coll::Allreduce,
    Coll::Reduce,
    Coll::Bcast,
    Coll::Allgather,
    Coll::Allgatherv,
    Coll::Gather,
    Coll::Scatter,
    Coll::Alltoall,
    Coll::ReduceScatter,
    Coll::Barrier,
];

impl Coll {
    /// Lower-case name (`allreduce`, `reduce_scatter`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Coll::Allreduce => "allreduce",
            Coll::Reduce => "reduce",
            Coll::Bcast => "bcast",
            Coll::Allgather => "allgather",
            Coll::Allgatherv => "allgatherv",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::Alltoall => "alltoall",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Barrier => "barrier",
        }
    }

    /// Parse a name (case-insensitive; `-` and `_` are equivalent).
    pub fn parse(s: &str) -> Result<Coll> {
        let k = s.to_ascii_lowercase().replace('-', "_");
        ALL.iter().copied().find(|c| c.name() == k).map_or_else(
            || {
                arg_err(format!(
                    "unknown collective {s:?}; use one of {}",
                    ALL.map(|c| c.name()).join(", ")
                ))
            },
            Ok,
        )
    }

    /// Whether the operation reduces data (and so costs compute time and
    /// depends on the operator's commutativity).
    pub fn reduces(self) -> bool {
        matches!(self, Coll::Allreduce | Coll::Reduce | Coll::ReduceScatter)
    }

    /// Whether the operation has a root.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Coll::Reduce | Coll::Bcast | Coll::Gather | Coll::Scatter
        )
    }

    /// The algorithm names accepted for this collective (Open MPI coll/base
    /// names; MPICH's algorithms map onto these, see [`super::select`]).
    pub fn algorithms(self) -> &'static [&'static str] {
        match self {
            Coll::Allreduce => &[
                "basic_linear",
                "nonoverlapping",
                "recursive_doubling",
                "ring",
                "segmented_ring",
                "rabenseifner",
            ],
            Coll::Reduce => &[
                "linear",
                "chain",
                "pipeline",
                "binary",
                "binomial",
                "in_order_binary",
                "rabenseifner",
            ],
            Coll::Bcast => &[
                "basic_linear",
                "chain",
                "pipeline",
                "split_binary_tree",
                "binary_tree",
                "binomial",
                "knomial",
                "scatter_allgather",
                "scatter_allgather_ring",
            ],
            Coll::Allgather | Coll::Allgatherv => &[
                "linear",
                "bruck",
                "recursive_doubling",
                "ring",
                "neighbor",
                "two_proc",
            ],
            Coll::Gather => &["basic_linear", "binomial", "linear_sync"],
            Coll::Scatter => &["basic_linear", "binomial", "linear_nb"],
            Coll::Alltoall => &[
                "linear",
                "pairwise",
                "modified_bruck",
                "linear_sync",
                "two_proc",
            ],
            Coll::ReduceScatter => &[
                "nonoverlapping",
                "recursive_halving",
                "ring",
                "butterfly",
                "pairwise",
            ],
            Coll::Barrier => &[
                "linear",
                "double_ring",
                "recursive_doubling",
                "bruck",
                "two_proc",
                "tree",
                "dissemination",
            ],
        }
    }

    /// Check an algorithm name for this collective; the error lists the
    /// valid names.
    pub fn check_algorithm(self, alg: &str) -> Result<&'static str> {
        let k = alg.to_ascii_lowercase().replace('-', "_");
        match self.algorithms().iter().find(|a| **a == k) {
            Some(a) => Ok(a),
            None => arg_err(format!(
                "{alg:?} is not an algorithm of {}; use one of {}",
                self.name(),
                self.algorithms().join(", ")
            )),
        }
    }
}

/// One call of a collective, as the algorithms need to know it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollArgs {
    /// The operation.
    pub coll: Coll,
    /// Communicator size.
    pub p: u32,
    /// Elements, meaning per collective: the vector length for Allreduce,
    /// Reduce and Bcast; the per-rank block for Allgather(v), Gather,
    /// Scatter and Alltoall (each rank sends `count` to every peer in
    /// Alltoall); the total vector length for Reduce_scatter (rank r gets
    /// `count / p` elements, the first `count % p` ranks one more, as IMB
    /// splits it); ignored for Barrier.
    pub count: u64,
    /// Root of rooted collectives.
    pub root: Rank,
    /// Bytes per element: 4 (MPI_FLOAT) for reductions, 1 (MPI_BYTE) for
    /// data movement, as IMB uses them.
    pub elem_bytes: u32,
    /// Whether the reduction operator commutes (MPI_SUM does).
    pub commutative: bool,
    /// Segment size for segmented / pipelined algorithms, bytes (None: the
    /// algorithm's default, as the library's fixed rules would pick it).
    pub segment_bytes: Option<u64>,
}

impl CollArgs {
    /// `count` elements of `elem_bytes` on `p` ranks, root 0, commutative,
    /// default segmentation.
    pub fn new(coll: Coll, p: u32, count: u64, elem_bytes: u32) -> CollArgs {
        CollArgs {
            coll,
            p,
            count,
            root: 0,
            elem_bytes,
            commutative: true,
            segment_bytes: None,
        }
    }

    /// Bytes as the selection rules see them: Open MPI's `total_dsize`
    /// (datatype size x count; the per-peer block for alltoall, allgather,
    /// gather and scatter).
    pub fn total_dsize(&self) -> u64 {
        self.count * self.elem_bytes as u64
    }
}

/// Compile one call of `args.coll` with the named algorithm (an Open MPI
/// coll/base name, see [`Coll::algorithms`]) into a schedule, with the
/// knobs Open MPI's fixed decision rules pass ([`Tuning::FIXED`]).
///
/// A communicator of one rank gets the local copy Open MPI's coll/self
/// does, whatever the algorithm. A count of 0 (except Barrier) gets an
/// empty schedule marked [`Schedule::empty_call`] (each rank pays the call
/// overhead): Open MPI's MPI layer returns before calling any algorithm. Algorithms fall back where the library's do (for example ring
/// allreduce below p elements runs recursive doubling); the schedule keeps
/// the requested name.
pub fn build(args: &CollArgs, algorithm: &str) -> Result<Schedule> {
    build_tuned(args, algorithm, &Tuning::FIXED)
}

/// [`build`] with explicit knobs (fan-outs, request limits, the choice of
/// sub-collectives).
pub fn build_tuned(args: &CollArgs, algorithm: &str, tuning: &Tuning) -> Result<Schedule> {
    let alg = args.coll.check_algorithm(algorithm)?;
    let p = args.p;
    if p == 0 {
        return arg_err(format!(
            "{} needs at least one rank (p = 0)",
            args.coll.name()
        ));
    }
    if args.coll.rooted() && args.root >= p {
        return arg_err(format!(
            "root {} is not a rank of a {p}-rank communicator",
            args.root
        ));
    }
    if args.elem_bytes == 0 {
        return arg_err("elem_bytes must be at least 1");
    }
    if tuning.knomial_radix < 2 || tuning.dissemination_radix < 2 {
        return arg_err("tree radices (knomial_radix, dissemination_radix) must be at least 2");
    }
    let mut s = Schedule::new(p, args.elem_bytes, buf_sizes(args), alg);
    if p == 1 {
        self_copy(&mut s, args);
        s.empty_call = s.n_steps() == 0;
        return Ok(s);
    }
    if alg == "two_proc" && p != 2 {
        return arg_err(format!(
            "{} algorithm two_proc only works on 2 ranks, not {p}; use one of {}",
            args.coll.name(),
            args.coll.algorithms().join(", ")
        ));
    }
    if args.count == 0 && args.coll != Coll::Barrier {
        s.empty_call = true;
        return Ok(s);
    }
    let cx = Ctx {
        coll: args.coll,
        p,
        count: args.count,
        root: args.root,
        commutative: args.commutative,
        elem_bytes: args.elem_bytes,
        seg_bytes: args.segment_bytes.unwrap_or(0),
        tuning,
    };
    let mut ps = Prog::all(&mut s);
    let n = args.count;
    match args.coll {
        Coll::Allreduce => allreduce::run(&mut ps, &cx, alg)?,
        Coll::Reduce => reduce::run(&mut ps, &cx, alg, whole(Buf::Send, n), whole(Buf::Recv, n))?,
        Coll::Bcast => bcast::run(&mut ps, &cx, alg, whole(Buf::Recv, n))?,
        Coll::Allgather | Coll::Allgatherv => allgather::run(&mut ps, &cx, alg)?,
        Coll::Gather => gather::run(&mut ps, &cx, alg, false)?,
        Coll::Scatter => gather::run(&mut ps, &cx, alg, true)?,
        Coll::Alltoall => alltoall::run(&mut ps, &cx, alg)?,
        Coll::ReduceScatter => reduce_scatter::run(&mut ps, &cx, alg)?,
        Coll::Barrier => barrier::run(&mut ps, &cx, alg)?,
    }
    drop(ps);
    debug_assert_eq!(s.check(), Ok(()));
    Ok(s)
}

/// What coll/self does on a one-rank communicator: copy Send to Recv.
fn self_copy(s: &mut Schedule, args: &CollArgs) {
    let n = match args.coll {
        Coll::Bcast | Coll::Barrier => 0,
        _ => args.count,
    };
    if n > 0 {
        let r = Region::new(Buf::Send, 0, n);
        s.ranks[0].copy(r, Region::new(Buf::Recv, 0, n), &[]);
    }
}
