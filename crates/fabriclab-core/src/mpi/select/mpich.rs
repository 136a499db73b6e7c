//! MPICH's collective selection for a flat intra-communicator.
//!
//! MPICH picks algorithms with a decision tree read from JSON
//! (`maint/tuning/coll/mpir/generic.json`): at each level the first key
//! whose condition holds is taken, so each function below is that tree's
//! branch for `comm_type=intra` read top to bottom, with the
//! `comm_hierarchy=parent` branches dropped (a flat communicator is not a
//! parent communicator; only `comm_hierarchy=any` applies).
//!
//! Provenance: the rules as flattened in
//! `shared/formats/mpich_coll_selection_flat.txt` (pmodels/mpich main
//! @6a79bf6575); allgatherv, missing there, from the same JSON file read at
//! pmodels/mpich @7e03fe85 (identical to allgather's rules). Condition
//! semantics from `src/mpi/coll/src/csel.c` (@4ba78bc6) and the current
//! `mpir_csel.h` / `csel_tree.c`:
//! - `avg_msg_size` = type size x count for bcast, allreduce, reduce, and
//!   x sendcount (the per-peer block) for alltoall;
//! - `total_msg_size` = type size x recvcount x comm size for allgather,
//!   type size x sum(recvcounts) for allgatherv and reduce_scatter;
//! - `count<pow2`: `count < MPL_pof2(comm_size)`, the largest power of two
//!   <= comm size (allreduce, reduce);
//! - `comm_size<N` is strict (`csel_tree.c` rewrites it as `<= N-1`; older
//!   csel.c revisions such as @4ba78bc6 tested `<= N`, which makes
//!   `comm_size<8` also take 8 ranks);
//! - `is_op_built_in`: all predefined MPI reduction operators commute, so a
//!   non-commutative operator is a user-defined one: built-in = commutative;
//! - `is_block_regular` (reduce_scatter): all blocks equal, i.e. `count` is
//!   a multiple of p under IMB's split (see [`CollArgs::count`]);
//! - `is_sendbuf_inplace` (alltoall): no.
//!
//! Names: MPICH's algorithms are mapped onto this crate's (Open MPI
//! coll/base) names; where MPICH has no same-named algorithm the closest is
//! used and the rule text says which MPICH function it stands for:
//! - `MPIR_Alltoall_intra_scattered` -> `linear_sync`: it posts isend/irecv
//!   in batches of `MPIR_CVAR_ALLTOALL_THROTTLE` (32) peers, a bounded
//!   number of outstanding requests as linear_sync has;
//! - `MPIR_Reduce_scatter_intra_noncommutative` -> `butterfly`: both are
//!   Traff's butterfly (EuroPVM/MPI 2005);
//! - `MPIR_Reduce_scatter_intra_recursive_doubling` (non-commutative, any
//!   p) -> `butterfly`: the only algorithm of the list that keeps operand
//!   order on any p in log2(p) rounds (nonoverlapping is the other
//!   order-safe one, but it is a reduce + scatterv);
//! - `MPIR_Allreduce_intra_smp` (picked for zero-byte commutative
//!   allreduce) -> `recursive_doubling`: a flat communicator has no node
//!   level, and the zero-byte non-commutative branch next to it picks
//!   recursive doubling.
//!
//! MPICH passes no segment size with any of these.

use super::Choice;
use crate::mpi::coll::{Coll, CollArgs};

/// The largest power of two <= `n` (MPICH's `MPL_pof2`; 0 for 0).
fn pof2(n: u32) -> u64 {
    if n == 0 {
        0
    } else {
        1u64 << (31 - n.leading_zeros())
    }
}

/// MPICH's decision for `args` on a flat intra-communicator.
pub(super) fn select(args: &CollArgs) -> Choice {
    let p = args.p;
    let bytes = args.total_dsize();
    let pow2 = p.is_power_of_two();
    let comm = args.commutative;
    let (alg, mpich_fn, why): (&'static str, &'static str, String) = match args.coll {
        Coll::Bcast => {
            let avg = bytes;
            if p < 8 {
                ("binomial", "MPIR_Bcast_intra_binomial", "p<8".into())
            } else if pow2 && avg <= 12288 {
                (
                    "binomial",
                    "MPIR_Bcast_intra_binomial",
                    "p pow2 & avg<=12288".into(),
                )
            } else if pow2 && avg <= 524288 {
                (
                    "scatter_allgather",
                    "MPIR_Bcast_intra_scatter_recursive_doubling_allgather",
                    "p pow2 & 12288<avg<=524288".into(),
                )
            } else if pow2 {
                (
                    "scatter_allgather_ring",
                    "MPIR_Bcast_intra_scatter_ring_allgather",
                    "p pow2 & avg>524288".into(),
                )
            } else if avg <= 12288 {
                (
                    "binomial",
                    "MPIR_Bcast_intra_binomial",
                    "p not pow2 & avg<=12288".into(),
                )
            } else {
                (
                    "scatter_allgather_ring",
                    "MPIR_Bcast_intra_scatter_ring_allgather",
                    "p not pow2 & avg>12288".into(),
                )
            }
        }
        Coll::Allreduce => {
            let avg = bytes;
            let builtin = comm;
            let pof2 = pof2(p);
            if avg == 0 && comm {
                (
                    "recursive_doubling",
                    "MPIR_Allreduce_intra_smp; flat communicator, assumed",
                    "avg<=0 & commutative".into(),
                )
            } else if avg == 0 {
                (
                    "recursive_doubling",
                    "MPIR_Allreduce_intra_recursive_doubling",
                    "avg<=0 & non-commutative".into(),
                )
            } else if avg <= 8 {
                (
                    "recursive_doubling",
                    "MPIR_Allreduce_intra_recursive_doubling",
                    "avg<=8".into(),
                )
            } else if !builtin {
                (
                    "recursive_doubling",
                    "MPIR_Allreduce_intra_recursive_doubling",
                    "user op".into(),
                )
            } else if args.count < pof2 {
                (
                    "recursive_doubling",
                    "MPIR_Allreduce_intra_recursive_doubling",
                    format!("built-in op & count<pof2(p)={pof2}"),
                )
            } else {
                (
                    "rabenseifner",
                    "MPIR_Allreduce_intra_reduce_scatter_allgather",
                    format!("built-in op & count>=pof2(p)={pof2}"),
                )
            }
        }
        Coll::Allgather | Coll::Allgatherv => {
            let total = bytes.saturating_mul(p as u64);
            let (rd, ring, brucks) = match args.coll {
                Coll::Allgather => (
                    "MPIR_Allgather_intra_recursive_doubling",
                    "MPIR_Allgather_intra_ring",
                    "MPIR_Allgather_intra_brucks",
                ),
                _ => (
                    "MPIR_Allgatherv_intra_recursive_doubling",
                    "MPIR_Allgatherv_intra_ring",
                    "MPIR_Allgatherv_intra_brucks",
                ),
            };
            if pow2 && total < 524288 {
                ("recursive_doubling", rd, "p pow2 & total<524288".into())
            } else if pow2 {
                ("ring", ring, "p pow2 & total>=524288".into())
            } else if total < 81920 {
                ("bruck", brucks, "p not pow2 & total<81920".into())
            } else {
                ("ring", ring, "p not pow2 & total>=81920".into())
            }
        }
        Coll::Reduce => {
            let avg = bytes;
            let builtin = comm;
            let pof2 = pof2(p);
            if avg <= 2048 {
                ("binomial", "MPIR_Reduce_intra_binomial", "avg<=2048".into())
            } else if builtin && args.count < pof2 {
                (
                    "binomial",
                    "MPIR_Reduce_intra_binomial",
                    format!("built-in op & count<pof2(p)={pof2}"),
                )
            } else if builtin {
                (
                    "rabenseifner",
                    "MPIR_Reduce_intra_reduce_scatter_gather",
                    format!("built-in op & count>=pof2(p)={pof2}"),
                )
            } else {
                ("binomial", "MPIR_Reduce_intra_binomial", "user op".into())
            }
        }
        Coll::ReduceScatter => {
            let total = bytes;
            let regular = args.count.checked_rem(p as u64) == Some(0);
            if comm && total < 524288 {
                (
                    "recursive_halving",
                    "MPIR_Reduce_scatter_intra_recursive_halving",
                    "commutative & total<524288".into(),
                )
            } else if comm {
                (
                    "pairwise",
                    "MPIR_Reduce_scatter_intra_pairwise",
                    "commutative & total>=524288".into(),
                )
            } else if regular && pow2 {
                (
                    "butterfly",
                    "MPIR_Reduce_scatter_intra_noncommutative",
                    "non-commutative & equal blocks & p pow2".into(),
                )
            } else {
                (
                    "butterfly",
                    "MPIR_Reduce_scatter_intra_recursive_doubling; closest match",
                    "non-commutative".into(),
                )
            }
        }
        Coll::Gather => ("binomial", "MPIR_Gather_intra_binomial", String::new()),
        Coll::Scatter => ("binomial", "MPIR_Scatter_intra_binomial", String::new()),
        Coll::Barrier => (
            "dissemination",
            "MPIR_Barrier_intra_k_dissemination, k=2",
            String::new(),
        ),
        Coll::Alltoall => {
            let avg = bytes;
            if p < 8 && avg <= 32768 {
                (
                    "linear_sync",
                    "MPIR_Alltoall_intra_scattered, 32 peers at a time",
                    "p<8 & avg<=32768".into(),
                )
            } else if p < 8 {
                (
                    "pairwise",
                    "MPIR_Alltoall_intra_pairwise",
                    "p<8 & avg>32768".into(),
                )
            } else if avg <= 256 {
                (
                    "modified_bruck",
                    "MPIR_Alltoall_intra_brucks",
                    "avg<=256".into(),
                )
            } else if avg <= 32768 {
                (
                    "linear_sync",
                    "MPIR_Alltoall_intra_scattered, 32 peers at a time",
                    "256<avg<=32768".into(),
                )
            } else {
                (
                    "pairwise",
                    "MPIR_Alltoall_intra_pairwise",
                    "avg>32768".into(),
                )
            }
        }
    };
    let mut rule = format!("mpich {}", args.coll.name());
    if !why.is_empty() {
        rule += " ";
        rule += &why;
    }
    rule += &format!(" -> {alg} ({mpich_fn})");
    Choice {
        algorithm: alg,
        segment_bytes: None,
        rule,
    }
}
