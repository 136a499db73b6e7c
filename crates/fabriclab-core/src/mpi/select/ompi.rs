//! Open MPI's coll/tuned fixed decision rules, as tables.
//!
//! Each `ompi_coll_tuned_<coll>_intra_dec_fixed` function in
//! `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c` is a chain of
//! `if (communicator_size < P) { if (total_dsize < T) alg = A; ... }` arms;
//! here each arm is one [`Arm`], in source order, so the first arm whose
//! size test passes decides, and inside it the first `total_dsize < T`.
//!
//! Provenance:
//! - allreduce (both trees), alltoall, allgather, bcast, reduce (both
//!   trees), gather, barrier: transcribed from
//!   `shared/formats/ompi_coll_tuned_fixed_decisions.txt` (condensed from
//!   open-mpi/ompi main @8efebee745; identical in v4.1.6 and v5.0.9), and
//!   checked against the C source below.
//! - allgatherv, scatter, reduce_scatter: transcribed from the C source,
//!   read in jiaxiyan/ompi @9ad0c30b (a fork of main) and
//!   BullSequana/OpenMPI5 @c3318e2f (the v5.0 line); the three functions
//!   are identical in both (and in a 2025 copy of main).
//! - Parameters passed with the algorithm (same sources): every
//!   `*_intra_do_this` call passes segment size 0, which coll/base's
//!   `COLL_BASE_COMPUTED_SEGCOUNT` reads as one segment (no
//!   segmentation); reduce and allgather pass `faninout = 2` on main (0 on
//!   v5.0.x, which `build_chain` turns into 1); bcast passes 0, so its
//!   chain is a single chain (`ompi_coll_base_topo_build_chain` forces a
//!   fanout below 1 to 1) and its knomial tree uses the MCA default radix
//!   `coll_tuned_bcast_knomial_radix = 4` (coll_tuned_bcast.c).
//!
//! Sizes: `total_dsize` is `dsize * count` — the whole vector for
//! allreduce, reduce, bcast and reduce_scatter (the sum of `rcounts`), the
//! per-peer block for alltoall, allgather, gather and scatter, and for
//! allgatherv the per-rank size (sum of `rcounts` / p), which with equal
//! counts is the block. With this crate's [`CollArgs`] all of these are
//! [`CollArgs::total_dsize`].
//!
//! What the algorithms then do with these parameters is theirs, but two
//! consequences are worth knowing when reading a choice: `segmented_ring`
//! with segment size 0 runs coll/base's plain ring (its "count < size *
//! segcount" special case), and allgather `recursive_doubling` on a
//! non-power-of-two communicator falls back to a radix-2 Bruck.

use super::Choice;
use crate::mpi::coll::{Coll, CollArgs};

/// Which communicator sizes an arm covers, as the source writes the test.
#[derive(Clone, Copy, Debug)]
enum Ranks {
    /// `communicator_size == n`.
    Eq(u32),
    /// `communicator_size < n`.
    Lt(u32),
    /// The trailing `else`.
    Else,
}

/// One `if (communicator_size ...) { ... }` arm: the `total_dsize < T ->
/// alg` steps in order, then the arm's `else` algorithm. Algorithms are
/// Open MPI's numbers (1-based), as in the source.
struct Arm {
    ranks: Ranks,
    below: &'static [(u64, u8)],
    otherwise: u8,
}

const fn eq(n: u32, below: &'static [(u64, u8)], otherwise: u8) -> Arm {
    Arm {
        ranks: Ranks::Eq(n),
        below,
        otherwise,
    }
}

const fn lt(n: u32, below: &'static [(u64, u8)], otherwise: u8) -> Arm {
    Arm {
        ranks: Ranks::Lt(n),
        below,
        otherwise,
    }
}

const fn other(below: &'static [(u64, u8)], otherwise: u8) -> Arm {
    Arm {
        ranks: Ranks::Else,
        below,
        otherwise,
    }
}

/// A decision function: Open MPI's algorithm numbering mapped to this
/// crate's names (index = number - 1), and its arms.
struct Decision {
    algs: &'static [&'static str],
    arms: &'static [Arm],
}

const ALLREDUCE_ALGS: &[&str] = &[
    "basic_linear",
    "nonoverlapping",
    "recursive_doubling",
    "ring",
    "segmented_ring",
    "rabenseifner",
];

/// `if( !ompi_op_is_commute(op) )`: ring, segmented ring and Rabenseifner
/// need a commutative operator.
#[rustfmt::skip]
const ALLREDUCE_NONCOMMUTATIVE: Decision = Decision {
    algs: ALLREDUCE_ALGS,
    arms: &[
        lt(4, &[(131072, 3)], 1),
        lt(8, &[], 3),
        lt(16, &[(1048576, 3)], 2),
        lt(128, &[], 3),
        lt(256, &[(131072, 2), (524288, 3)], 2),
        lt(512, &[(4096, 2), (524288, 3)], 2),
        other(&[(2048, 2)], 3),
    ],
};

#[rustfmt::skip]
const ALLREDUCE_COMMUTATIVE: Decision = Decision {
    algs: ALLREDUCE_ALGS,
    arms: &[
        lt(4, &[(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5)], 6),
        lt(8, &[(16, 4), (8192, 3)], 6),
        lt(16, &[(8192, 3)], 6),
        lt(32, &[(64, 5), (4096, 3)], 6),
        lt(64, &[(128, 5)], 6),
        lt(128, &[(262144, 3)], 6),
        lt(256, &[(131072, 2), (262144, 3)], 6),
        lt(512, &[(4096, 2)], 6),
        lt(2048, &[(2048, 2), (16384, 3)], 6),
        lt(4096, &[(2048, 2), (4096, 5), (16384, 3)], 6),
        other(&[(2048, 2), (16384, 5), (32768, 3)], 6),
    ],
};

#[rustfmt::skip]
const ALLTOALL: Decision = Decision {
    algs: &["linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"],
    arms: &[
        eq(2, &[(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4), (1048576, 5)], 2),
        lt(8, &[(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2)], 1),
        lt(16, &[(262144, 4)], 1),
        lt(32, &[(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1)], 4),
        lt(64, &[(512, 3), (524288, 1)], 4),
        lt(128, &[(1024, 3), (2048, 1), (4096, 4), (262144, 1)], 2),
        lt(256, &[(1024, 3), (2048, 4), (262144, 1)], 2),
        lt(512, &[(1024, 3), (8192, 4), (32768, 1)], 2),
        lt(1024, &[(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1)], 2),
        lt(2048, &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1)], 4),
        lt(4096, &[(1024, 3), (4096, 4), (8192, 1), (131072, 4)], 1),
        other(&[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1)], 4),
    ],
};

#[rustfmt::skip]
const ALLGATHER: Decision = Decision {
    algs: &["linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"],
    arms: &[
        eq(2, &[], 6),
        lt(32, &[], 3),
        lt(64, &[(1024, 3), (65536, 5)], 4),
        lt(128, &[(512, 3), (65536, 5)], 4),
        lt(256, &[(512, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
        lt(512, &[(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5)], 4),
        lt(1024, &[(64, 3), (256, 2), (2048, 3)], 5),
        lt(2048, &[(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3)], 5),
        lt(4096, &[(32, 2), (128, 3), (512, 2), (4096, 3)], 5),
        other(&[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3)], 5),
    ],
};

/// Open MPI's allgatherv algorithm 1 is "default" (gatherv to rank 0, then
/// bcast), the allgatherv twin of allgather's "linear" (gather + bcast).
#[rustfmt::skip]
const ALLGATHERV: Decision = Decision {
    algs: &["linear", "bruck", "ring", "neighbor", "two_proc"],
    arms: &[
        eq(2, &[(2048, 3), (4096, 5), (8192, 3)], 5),
        lt(8, &[(256, 1), (4096, 4), (8192, 3), (16384, 4), (262144, 2)], 4),
        lt(16, &[(1024, 1)], 2),
        lt(32, &[(128, 1), (262144, 2)], 3),
        lt(64, &[(256, 1), (8192, 2)], 3),
        lt(128, &[(256, 1), (4096, 2)], 3),
        lt(256, &[(1024, 2), (65536, 4)], 3),
        lt(512, &[(1024, 2)], 3),
        lt(1024, &[(512, 2), (1024, 1), (4096, 2), (1048576, 4)], 3),
        other(&[(4096, 2)], 4),
    ],
};

const BCAST_ALGS: &[&str] = &[
    "basic_linear",
    "chain",
    "pipeline",
    "split_binary_tree",
    "binary_tree",
    "binomial",
    "knomial",
    "scatter_allgather",
    "scatter_allgather_ring",
];

#[rustfmt::skip]
const BCAST: Decision = Decision {
    algs: BCAST_ALGS,
    arms: &[
        lt(4, &[(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1), (1048576, 6)], 5),
        lt(8, &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1)], 2),
        lt(16, &[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6)], 1),
        lt(32, &[(4096, 7), (1048576, 6)], 8),
        lt(64, &[(2048, 6)], 7),
        lt(128, &[], 7),
        lt(256, &[(2, 6), (16384, 5), (32768, 1), (65536, 5)], 7),
        lt(1024, &[(16384, 7), (32768, 4)], 7),
        lt(2048, &[(524288, 7)], 8),
        lt(4096, &[(262144, 7)], 8),
        other(&[(8192, 7), (16384, 5), (262144, 7)], 8),
    ],
};

const REDUCE_ALGS: &[&str] = &[
    "linear",
    "chain",
    "pipeline",
    "binary",
    "binomial",
    "in_order_binary",
    "rabenseifner",
];

/// Only linear and in-order binary keep the operand order.
#[rustfmt::skip]
const REDUCE_NONCOMMUTATIVE: Decision = Decision {
    algs: REDUCE_ALGS,
    arms: &[
        lt(4, &[(8, 6)], 1),
        lt(8, &[], 1),
        lt(16, &[(1024, 6), (8192, 1), (16384, 6), (262144, 1)], 6),
        lt(128, &[], 6),
        lt(256, &[(512, 6), (1024, 1)], 6),
        other(&[], 6),
    ],
};

#[rustfmt::skip]
const REDUCE_COMMUTATIVE: Decision = Decision {
    algs: REDUCE_ALGS,
    arms: &[
        lt(4, &[(8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2)], 3),
        lt(8, &[(4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5)], 1),
        lt(16, &[(8192, 4)], 5),
        lt(32, &[(4096, 4)], 5),
        lt(256, &[], 5),
        lt(512, &[(8192, 5), (16384, 6)], 5),
        lt(2048, &[], 5),
        lt(4096, &[(512, 5), (1024, 6), (8192, 5), (16384, 6)], 5),
        other(&[(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6)], 5),
    ],
};

const REDUCE_SCATTER_ALGS: &[&str] = &["nonoverlapping", "recursive_halving", "ring", "butterfly"];

/// "Non commutative algorithm capability needs re-investigation.
/// Defaulting to non overlapping for non commutative ops."
#[rustfmt::skip]
const REDUCE_SCATTER_NONCOMMUTATIVE: Decision = Decision {
    algs: REDUCE_SCATTER_ALGS,
    arms: &[
        other(&[], 1),
    ],
};

#[rustfmt::skip]
const REDUCE_SCATTER_COMMUTATIVE: Decision = Decision {
    algs: REDUCE_SCATTER_ALGS,
    arms: &[
        lt(4, &[(65536, 3), (131072, 4)], 3),
        lt(8, &[(8, 1), (262144, 2)], 3),
        lt(32, &[(262144, 2)], 3),
        lt(64, &[(64, 1), (2048, 2), (524288, 4)], 3),
        lt(128, &[(256, 1), (512, 2), (2048, 4), (4096, 2)], 4),
        lt(256, &[(256, 1), (512, 2)], 4),
        lt(512, &[(256, 1), (1024, 2)], 4),
        lt(1024, &[(512, 1), (2048, 2), (8192, 4), (16384, 2)], 4),
        lt(2048, &[(512, 1), (4096, 2), (16384, 4), (32768, 2)], 4),
        lt(4096, &[(512, 1), (4096, 2)], 4),
        other(&[(1024, 1), (8192, 2)], 4),
    ],
};

#[rustfmt::skip]
const GATHER: Decision = Decision {
    algs: &["basic_linear", "binomial", "linear_sync"],
    arms: &[
        lt(4, &[(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2)], 3),
        lt(8, &[(1024, 2), (8192, 1), (32768, 2), (262144, 1)], 3),
        lt(256, &[], 2),
        lt(512, &[(2048, 2), (8192, 1)], 2),
        other(&[], 2),
    ],
};

#[rustfmt::skip]
const SCATTER: Decision = Decision {
    algs: &["basic_linear", "binomial", "linear_nb"],
    arms: &[
        lt(4, &[(2, 3), (131072, 1), (262144, 3)], 1),
        lt(8, &[(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3)], 1),
        lt(16, &[(16384, 2), (1048576, 3)], 1),
        lt(32, &[(16384, 2), (32768, 1)], 3),
        lt(64, &[(512, 2), (8192, 3), (16384, 2)], 3),
        other(&[(512, 2)], 3),
    ],
};

/// "We can only optimize based on com size".
#[rustfmt::skip]
const BARRIER: Decision = Decision {
    algs: &["linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"],
    arms: &[
        lt(4, &[], 3),
        lt(8, &[], 1),
        lt(64, &[], 3),
        lt(256, &[], 4),
        lt(512, &[], 6),
        lt(1024, &[], 4),
        lt(4096, &[], 6),
        other(&[], 4),
    ],
};

/// The fixed decision for `args`.
pub(super) fn select(args: &CollArgs) -> Choice {
    let comm = args.commutative;
    let (decision, variant) = match args.coll {
        Coll::Allreduce if comm => (&ALLREDUCE_COMMUTATIVE, " commutative"),
        Coll::Allreduce => (&ALLREDUCE_NONCOMMUTATIVE, " non-commutative"),
        Coll::Reduce if comm => (&REDUCE_COMMUTATIVE, " commutative"),
        Coll::Reduce => (&REDUCE_NONCOMMUTATIVE, " non-commutative"),
        Coll::ReduceScatter if comm => (&REDUCE_SCATTER_COMMUTATIVE, " commutative"),
        Coll::ReduceScatter => (&REDUCE_SCATTER_NONCOMMUTATIVE, " non-commutative"),
        Coll::Bcast => (&BCAST, ""),
        Coll::Allgather => (&ALLGATHER, ""),
        Coll::Allgatherv => (&ALLGATHERV, ""),
        Coll::Gather => (&GATHER, ""),
        Coll::Scatter => (&SCATTER, ""),
        Coll::Alltoall => (&ALLTOALL, ""),
        Coll::Barrier => (&BARRIER, ""),
    };
    let (alg, why) = decide(decision, args.p, args.total_dsize());
    let mut rule = format!("ompi {}{variant}", args.coll.name());
    if !why.is_empty() {
        rule += " ";
        rule += &why;
    }
    rule += " -> ";
    rule += alg;
    if let Some(note) = note(args.coll, alg) {
        rule += &format!(" ({note})");
    }
    Choice {
        algorithm: alg,
        segment_bytes: None,
        rule,
    }
}

/// Run a decision: the algorithm, and the conditions of the arm and step
/// that chose it (`p<64 & size>=128`).
fn decide(d: &Decision, p: u32, size: u64) -> (&'static str, String) {
    let mut p_floor = None;
    for arm in d.arms {
        let p_test = match arm.ranks {
            Ranks::Eq(n) if p == n => format!("p=={n}"),
            Ranks::Lt(n) if p < n => format!("p<{n}"),
            Ranks::Else => p_floor.map(|n| format!("p>={n}")).unwrap_or_default(),
            Ranks::Eq(_) => continue,
            Ranks::Lt(n) => {
                p_floor = Some(n);
                continue;
            }
        };
        let mut size_floor = None;
        let mut pick = (arm.otherwise, None);
        for &(t, a) in arm.below {
            if size < t {
                pick = (a, Some(t));
                break;
            }
            size_floor = Some(t);
        }
        let size_test = match (size_floor, pick.1) {
            (None, None) => String::new(),
            (None, Some(hi)) => format!("size<{hi}"),
            (Some(lo), None) => format!("size>={lo}"),
            (Some(lo), Some(hi)) => format!("{lo}<=size<{hi}"),
        };
        let why = [p_test, size_test]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" & ");
        return (d.algs[pick.0 as usize - 1], why);
    }
    unreachable!("every decision ends with an else arm")
}

/// Parameters the fixed rules pass that change what the algorithm does.
fn note(coll: Coll, alg: &str) -> Option<&'static str> {
    match (coll, alg) {
        (Coll::Bcast, "knomial") => Some("radix 4"),
        (Coll::Bcast, "chain") => Some("fanout 0, run as 1 chain"),
        (Coll::Reduce, "chain") => Some("fanout 2"),
        (Coll::Allreduce, "segmented_ring") => {
            Some("segment size 0: coll/base runs the plain ring")
        }
        _ => None,
    }
}
