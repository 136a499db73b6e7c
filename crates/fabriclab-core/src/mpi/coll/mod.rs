//! Collective operations and the names of the algorithms that implement
//! them, as MPI libraries call them.
//!
//! This file fixes the vocabulary shared by the algorithm builders (one file
//! per collective), the selection rules ([`super::select`]) and the
//! benchmark drivers: which collectives exist, what their `count` means,
//! and which algorithm names each accepts.

use super::sched::Rank;
use crate::error::{arg_err, Result};

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
