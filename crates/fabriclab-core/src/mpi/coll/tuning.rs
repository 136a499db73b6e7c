//! The knobs an MPI library passes along with an algorithm number (fan-outs,
//! radices, request limits) and the choice of sub-collectives for the
//! algorithms that call other collectives.
//!
//! Open MPI's `coll_tuned_decision_fixed.c` (v4.1 to v5) calls every
//! algorithm with segment size 0 (no segmentation), fan-out 0 for bcast
//! (which `build_chain` turns into 1, the pipeline) and 2 for reduce; the
//! knomial radix, alltoall and scatter request limits come from MCA
//! variables whose defaults are 4, 0 (no limit) and 0. Forcing an algorithm
//! through `coll_tuned_<coll>_algorithm` uses the MCA defaults instead
//! (chain fan-out 4). Segment sizes are not here: they come from
//! [`super::CollArgs::segment_bytes`] (None = 0, as both paths pass).

use super::{Coll, CollArgs};

/// Algorithm parameters that are not part of the call itself.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// Number of chains of the bcast `chain` algorithm (0 = 1 chain).
    pub bcast_chain_fanout: u32,
    /// Number of chains of the reduce `chain` algorithm.
    pub reduce_chain_fanout: u32,
    /// Radix of the bcast `knomial` tree.
    pub knomial_radix: u32,
    /// Maximum outstanding segment sends of a reduce leaf (0 = no limit).
    pub reduce_max_requests: u32,
    /// Maximum outstanding sends (and receives) of alltoall `linear_sync`
    /// (0 = no limit, which makes it post everything like `linear`).
    pub alltoall_max_requests: u32,
    /// Scatter `linear_nb` sends every n-th message blocking (0 or 1 = never).
    pub scatter_blocking_send_ratio: u32,
    /// Radix of MPICH's k-dissemination barrier (2 = plain dissemination).
    pub dissemination_radix: u32,
    /// Picks the algorithm of a sub-collective: the reduce and bcast of
    /// allreduce `nonoverlapping`, the gather and bcast of allgather
    /// `linear`, the reduce of reduce_scatter `nonoverlapping`. Open MPI
    /// calls the communicator's own selection there, so the selection rules
    /// can be plugged in; the default is [`default_sub_algorithm`].
    pub sub_algorithm: fn(&CollArgs) -> &'static str,
}

/// Sub-collective choice when no selection rules are plugged in: binomial
/// trees (in-order binary for non-commutative reductions, the only tree
/// Open MPI keeps rank order with).
pub fn default_sub_algorithm(args: &CollArgs) -> &'static str {
    match args.coll {
        Coll::Reduce if !args.commutative => "in_order_binary",
        Coll::Reduce | Coll::Bcast | Coll::Gather | Coll::Scatter => "binomial",
        c => c.algorithms()[0],
    }
}

impl Tuning {
    /// What Open MPI's fixed decision rules pass (the default).
    pub const FIXED: Tuning = Tuning {
        bcast_chain_fanout: 0,
        reduce_chain_fanout: 2,
        knomial_radix: 4,
        reduce_max_requests: 0,
        alltoall_max_requests: 0,
        scatter_blocking_send_ratio: 0,
        dissemination_radix: 2,
        sub_algorithm: default_sub_algorithm,
    };

    /// What Open MPI passes when an algorithm is forced with
    /// `coll_tuned_use_dynamic_rules` and the MCA defaults.
    pub const FORCED: Tuning = Tuning {
        bcast_chain_fanout: 4,
        reduce_chain_fanout: 4,
        ..Tuning::FIXED
    };
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning::FIXED
    }
}

/// Everything an algorithm builder needs to know about the call.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'t> {
    /// The collective being built (for sub-collective choices).
    pub coll: Coll,
    /// Communicator size.
    pub p: u32,
    /// Elements, with the meaning of the (sub-)collective being built.
    pub count: u64,
    /// Root.
    pub root: u32,
    /// Whether the operator commutes.
    pub commutative: bool,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// Segment size in bytes (0: none).
    pub seg_bytes: u64,
    /// Knobs.
    pub tuning: &'t Tuning,
}

impl<'t> Ctx<'t> {
    /// The same call as seen by sub-collective `coll` with `count`, `root`.
    pub fn sub(&self, coll: Coll, count: u64, root: u32) -> Ctx<'t> {
        Ctx {
            coll,
            count,
            root,
            ..*self
        }
    }

    /// Elements per segment (`COLL_BASE_COMPUTED_SEGCOUNT`).
    pub fn segcount(&self) -> u64 {
        super::tree::segcount(self.seg_bytes, self.elem_bytes, self.count)
    }

    /// The algorithm the tuning picks for this (sub-)call.
    pub fn pick(&self) -> &'static str {
        let args = CollArgs {
            coll: self.coll,
            p: self.p,
            count: self.count,
            root: self.root,
            elem_bytes: self.elem_bytes,
            commutative: self.commutative,
            segment_bytes: (self.seg_bytes > 0).then_some(self.seg_bytes),
        };
        (self.tuning.sub_algorithm)(&args)
    }
}
