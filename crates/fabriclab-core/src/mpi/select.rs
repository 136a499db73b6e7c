//! Which algorithm an MPI library runs for a collective call: the fixed
//! selection rules of Open MPI's coll/tuned and of MPICH's JSON tuning,
//! transcribed so that a simulated library picks what the real one would.
//!
//! [`select`] maps a [`Library`] and a call ([`CollArgs`]: collective,
//! communicator size, count, element size, commutativity) to a [`Choice`]:
//! one of `args.coll.algorithms()`, the segment size the library passes
//! with it, and the rule that fired, in words.
//!
//! Where the rules come from (details and the per-collective provenance in
//! `select/ompi.rs` and `select/mpich.rs`):
//! - Open MPI: `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`, the
//!   `*_intra_dec_fixed` functions (thresholds identical in v4.1.6, v5.0.9
//!   and main). Allreduce, alltoall, allgather, bcast, reduce, gather and
//!   barrier as condensed in `shared/formats/ompi_coll_tuned_fixed_decisions.txt`;
//!   allgatherv, scatter and reduce_scatter read from the C source.
//! - MPICH: `maint/tuning/coll/mpir/generic.json` (first matching rule
//!   wins), evaluated the way `src/mpi/coll/src/csel.c` does, as flattened
//!   in `shared/formats/mpich_coll_selection_flat.txt`; allgatherv from the
//!   same JSON file (it is missing from the flattened one).
//!
//! Left out: everything that overrides the fixed rules (Open MPI forced
//! algorithms and dynamic rule files, MPICH `MPIR_CVAR_*_ALGORITHM` and
//! user JSON files); the components that sit above coll/tuned on
//! multi-node communicators (Open MPI coll/han, ucc, hcoll); hierarchical
//! (node-aware) MPICH selections: the communicator is flat
//! (`comm_hierarchy=any`, never `parent`), so MPICH's `_smp` algorithms are
//! never picked, except the zero-byte commutative Allreduce (see
//! `select/mpich.rs`); MPICH's ch4 shared-memory collectives for single-node
//! communicators; derived datatypes (sizes are `count * elem_bytes`);
//! `MPI_IN_PLACE` (IMB and OSU do not use it). Zero-byte calls get what
//! the rules say, even where a library returns before selecting.

mod mpich;
mod ompi;

use super::coll::CollArgs;
use crate::error::{arg_err, Result};

/// An MPI library whose selection rules the simulator imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Library {
    /// Open MPI (coll/tuned fixed decisions).
    OpenMpi,
    /// MPICH (mpir/generic.json).
    Mpich,
}

impl Library {
    /// Parse a library name: `openmpi` / `ompi` / `open-mpi` or `mpich`
    /// (case-insensitive).
    pub fn parse(s: &str) -> Result<Library> {
        let k: String = s
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .collect();
        match k.as_str() {
            "openmpi" | "ompi" => Ok(Library::OpenMpi),
            "mpich" => Ok(Library::Mpich),
            _ => arg_err(format!(
                "unknown MPI library {s:?}; use \"openmpi\" (or \"ompi\") or \"mpich\""
            )),
        }
    }

    /// Lower-case name (`openmpi`, `mpich`).
    pub fn name(self) -> &'static str {
        match self {
            Library::OpenMpi => "openmpi",
            Library::Mpich => "mpich",
        }
    }
}

/// The algorithm a library picks for one call, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Choice {
    /// One of `args.coll.algorithms()` (Open MPI coll/base names; MPICH's
    /// algorithms are mapped onto them as `select/mpich.rs` lists).
    pub algorithm: &'static str,
    /// Segment size the library passes with the algorithm, bytes. `None`:
    /// the call is not segmented. Open MPI's fixed rules pass segment size
    /// 0 with every algorithm, which coll/base reads as one segment (the
    /// whole message); MPICH's picks take no segment size.
    pub segment_bytes: Option<u64>,
    /// The rule that fired, in words, e.g. `ompi allreduce commutative
    /// p<64 & size>=128 -> rabenseifner`.
    pub rule: String,
}

/// The algorithm `lib` runs for the call `args`. The answer is always one
/// of `args.coll.algorithms()`.
///
/// ```
/// use fabriclab_core::mpi::coll::{Coll, CollArgs};
/// use fabriclab_core::mpi::select::{select, Library};
///
/// // MPI_Allreduce of 1 Mi floats (4 MiB) on 32 ranks.
/// let call = CollArgs::new(Coll::Allreduce, 32, 1 << 20, 4);
/// assert_eq!(select(Library::OpenMpi, &call).algorithm, "rabenseifner");
/// assert_eq!(select(Library::Mpich, &call).algorithm, "rabenseifner");
/// ```
pub fn select(lib: Library, args: &CollArgs) -> Choice {
    debug_assert!(args.p >= 1, "a communicator has at least one rank");
    let choice = match lib {
        Library::OpenMpi => ompi::select(args),
        Library::Mpich => mpich::select(args),
    };
    debug_assert!(
        args.coll.algorithms().contains(&choice.algorithm),
        "{} is not an algorithm of {}",
        choice.algorithm,
        args.coll.name()
    );
    choice
}
