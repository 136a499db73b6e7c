//! The selection rules, checked against the rule files rather than against
//! their Rust transcription.
//!
//! `tests/data/` holds the rule files as condensed from the libraries'
//! sources (Open MPI's `coll_tuned_decision_fixed.c` as `if` chains, MPICH's
//! `generic.json` as flat first-match rules), plus the pieces those files
//! lack (Open MPI allgatherv / scatter / reduce_scatter, MPICH allgatherv)
//! condensed the same way. This test parses and evaluates them with its own
//! small interpreters and compares every answer with `select()`, over
//! communicator sizes 2..5000 and message sizes at, just below and just
//! above every threshold in the files.

use std::collections::{BTreeMap, BTreeSet};

use fabriclab_core::mpi::coll::{self, Coll, CollArgs};
use fabriclab_core::mpi::select::{select, Library};
use fabriclab_core::Error;

const OMPI_FILES: [&str; 2] = [
    include_str!("data/ompi_coll_tuned_fixed_decisions.txt"),
    include_str!("data/ompi_coll_tuned_fixed_decisions_extra.txt"),
];
const MPICH_FILES: [&str; 2] = [
    include_str!("data/mpich_coll_selection_flat.txt"),
    include_str!("data/mpich_allgatherv_flat.txt"),
];

const SIZES_P: [u32; 29] = [
    2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 100, 127, 128, 168, 255, 256, 511, 512,
    1000, 2047, 2048, 4095, 4096, 5000,
];
const MIB8: u64 = 8 << 20;

/// The largest power of two <= n (MPICH's `MPL_pof2`).
fn pof2(n: u32) -> u64 {
    let mut p = 1u64;
    while p <= n as u64 {
        p <<= 1;
    }
    p >> 1
}

#[path = "selection/ompi_file.rs"]
mod ompi_file;

#[path = "selection/mpich_file.rs"]
mod mpich_file;

/// Open MPI's names where they differ from this crate's.
fn ompi_name(coll: Coll, name: &str) -> &'static str {
    let name = match (coll, name) {
        (Coll::ReduceScatter, "non-overlapping") => "nonoverlapping",
        // Allgatherv "default": gatherv to rank 0 then bcast, the twin of
        // allgather's "linear" (gather + bcast).
        (Coll::Allgatherv, "default") => "linear",
        _ => name,
    };
    coll.check_algorithm(name).expect("name in the vocabulary")
}

/// MPICH's algorithms mapped to this crate's names (as documented in
/// select/mpich.rs).
fn mpich_name(name: &str) -> &'static str {
    match name {
        "MPIR_Bcast_intra_binomial"
        | "MPIR_Reduce_intra_binomial"
        | "MPIR_Gather_intra_binomial"
        | "MPIR_Scatter_intra_binomial" => "binomial",
        "MPIR_Bcast_intra_scatter_recursive_doubling_allgather" => "scatter_allgather",
        "MPIR_Bcast_intra_scatter_ring_allgather" => "scatter_allgather_ring",
        "MPIR_Allreduce_intra_recursive_doubling"
        | "MPIR_Allgather_intra_recursive_doubling"
        | "MPIR_Allgatherv_intra_recursive_doubling" => "recursive_doubling",
        // Zero-byte commutative allreduce: no node level on a flat
        // communicator (assumption, see select/mpich.rs).
        "MPIR_Allreduce_intra_smp" => "recursive_doubling",
        "MPIR_Allreduce_intra_reduce_scatter_allgather"
        | "MPIR_Reduce_intra_reduce_scatter_gather" => "rabenseifner",
        "MPIR_Allgather_intra_brucks" | "MPIR_Allgatherv_intra_brucks" => "bruck",
        "MPIR_Allgather_intra_ring" | "MPIR_Allgatherv_intra_ring" => "ring",
        "MPIR_Reduce_scatter_intra_recursive_halving" => "recursive_halving",
        "MPIR_Reduce_scatter_intra_pairwise" | "MPIR_Alltoall_intra_pairwise" => "pairwise",
        "MPIR_Reduce_scatter_intra_noncommutative"
        | "MPIR_Reduce_scatter_intra_recursive_doubling" => "butterfly",
        "MPIR_Barrier_intra_k_dissemination" => "dissemination",
        "MPIR_Alltoall_intra_brucks" => "modified_bruck",
        "MPIR_Alltoall_intra_scattered" => "linear_sync",
        other => panic!("no mapping for MPICH algorithm {other}"),
    }
}

/// Message sizes around every threshold, plus 0 and 8 MiB.
fn sizes(thresholds: &[u64]) -> BTreeSet<u64> {
    let mut s: BTreeSet<u64> = [0, MIB8].into();
    for &t in thresholds {
        s.extend([t.saturating_sub(1), t, t + 1]);
    }
    s
}

/// Every call to compare on `p` ranks: each size as bytes (1-byte
/// elements) and as 4-byte elements, counts around pof2(p) (MPICH's
/// `count<pow2`), and counts that split evenly over p.
fn calls(coll: Coll, p: u32, sizes: &BTreeSet<u64>) -> Vec<CollArgs> {
    let mut shapes: BTreeSet<(u64, u32)> = BTreeSet::new();
    for &s in sizes {
        shapes.insert((s, 1));
        shapes.insert((s / 4, 4));
    }
    let q = pof2(p);
    for c in [q - 1, q, q + 1, p as u64, 1000 * p as u64] {
        shapes.insert((c, 1));
        shapes.insert((c, 4));
    }
    let mut out = Vec::new();
    for (count, elem) in shapes {
        for commutative in [true, false] {
            let mut a = CollArgs::new(coll, p, count, elem);
            a.commutative = commutative;
            out.push(a);
        }
    }
    out
}

#[test]
fn open_mpi_choices_match_the_decision_file() {
    let sections: Vec<_> = OMPI_FILES
        .iter()
        .flat_map(|f| ompi_file::parse(f))
        .collect();
    let colls: BTreeSet<&str> = sections.iter().map(|s| s.coll.as_str()).collect();
    let all: BTreeSet<&str> = coll::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(colls, all, "the Open MPI files cover every collective");

    let mut ts = Vec::new();
    for s in &sections {
        ompi_file::thresholds(&s.tree, &mut ts);
    }
    let sizes = sizes(&ts);
    let (mut compared, mut wrong) = (0usize, Vec::new());
    for sec in &sections {
        let coll = Coll::parse(&sec.coll).unwrap();
        let table: BTreeMap<u32, &'static str> = sec
            .algs
            .iter()
            .map(|(n, name)| (*n, ompi_name(coll, name)))
            .collect();
        for &p in &SIZES_P {
            for a in calls(coll, p, &sizes) {
                // total_dsize of the file header: dsize x count (the
                // per-peer / per-rank block where the call has one).
                let size = a.count * a.elem_bytes as u64;
                let n = ompi_file::eval(&sec.tree, p, size, a.commutative);
                let want = table[&n];
                let got = select(Library::OpenMpi, &a);
                compared += 1;
                if got.algorithm != want && wrong.len() < 20 {
                    wrong.push(format!(
                        "{} p={p} size={size} commutative={}: file says {want}, select says {} ({})",
                        sec.coll, a.commutative, got.algorithm, got.rule
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared > 50_000, "only {compared} calls compared");
    eprintln!("open mpi: {compared} calls agree with the decision files");
}

#[test]
fn mpich_choices_match_the_json_rules() {
    let mut rules = BTreeMap::new();
    for f in MPICH_FILES {
        mpich_file::parse(f, &mut rules);
    }
    let colls: BTreeSet<&str> = rules.keys().map(|s| s.as_str()).collect();
    let all: BTreeSet<&str> = coll::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(colls, all, "the MPICH files cover every collective");

    let mut ts = Vec::new();
    for r in rules.values() {
        mpich_file::thresholds(r, &mut ts);
    }
    let sizes = sizes(&ts);
    let (mut compared, mut wrong) = (0usize, Vec::new());
    for (name, rs) in &rules {
        let coll = Coll::parse(name).unwrap();
        for &p in &SIZES_P {
            for a in calls(coll, p, &sizes) {
                let bytes = a.count * a.elem_bytes as u64;
                let call = mpich_file::Call {
                    p,
                    avg: bytes,
                    total: match coll {
                        Coll::Allgather | Coll::Allgatherv => bytes * p as u64,
                        _ => bytes,
                    },
                    count: a.count,
                    commutative: a.commutative,
                    regular: a.count % p as u64 == 0,
                };
                let mpich_alg = mpich_file::eval(rs, &call);
                let want = mpich_name(mpich_alg);
                let got = select(Library::Mpich, &a);
                compared += 1;
                if got.algorithm != want && wrong.len() < 20 {
                    wrong.push(format!(
                        "{name} p={p} count={} x {} B commutative={}: rules say {mpich_alg} = {want}, \
                         select says {} ({})",
                        a.count, a.elem_bytes, a.commutative, got.algorithm, got.rule
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared > 20_000, "only {compared} calls compared");
    eprintln!("mpich: {compared} calls agree with the JSON rules");
}

fn pick(lib: Library, coll: Coll, p: u32, bytes: u64, elem: u32, commutative: bool) -> String {
    let mut a = CollArgs::new(coll, p, bytes / elem as u64, elem);
    a.commutative = commutative;
    select(lib, &a).algorithm.to_string()
}

#[test]
fn well_known_picks() {
    use Coll::*;
    use Library::*;
    // Open MPI, coll/tuned fixed rules.
    assert_eq!(
        pick(OpenMpi, Allreduce, 32, 4 << 20, 4, true),
        "rabenseifner"
    );
    assert_eq!(
        pick(OpenMpi, Allreduce, 16, 1024, 4, true),
        "recursive_doubling"
    );
    assert_eq!(
        pick(OpenMpi, Allreduce, 32, 4 << 20, 4, false),
        "recursive_doubling"
    );
    assert_eq!(
        pick(OpenMpi, Allreduce, 300, 4 << 20, 4, false),
        "nonoverlapping"
    );
    assert_eq!(pick(OpenMpi, Alltoall, 32, 1 << 20, 1, true), "linear_sync");
    assert_eq!(pick(OpenMpi, Alltoall, 2, 32, 1, true), "two_proc");
    assert_eq!(pick(OpenMpi, Alltoall, 64, 16, 1, true), "modified_bruck");
    assert_eq!(pick(OpenMpi, Barrier, 32, 0, 1, true), "recursive_doubling");
    assert_eq!(pick(OpenMpi, Barrier, 5, 0, 1, true), "linear");
    assert_eq!(pick(OpenMpi, Barrier, 128, 0, 1, true), "bruck");
    assert_eq!(pick(OpenMpi, Allgather, 2, 1024, 1, true), "two_proc");
    assert_eq!(
        pick(OpenMpi, Allgather, 16, 1 << 20, 1, true),
        "recursive_doubling"
    );
    assert_eq!(pick(OpenMpi, Bcast, 64, 1 << 20, 1, true), "knomial");
    assert_eq!(
        pick(OpenMpi, Bcast, 16, 1 << 20, 1, true),
        "scatter_allgather"
    );
    assert_eq!(pick(OpenMpi, Reduce, 64, 1 << 20, 4, true), "binomial");
    assert_eq!(
        pick(OpenMpi, Reduce, 64, 1 << 20, 4, false),
        "in_order_binary"
    );
    assert_eq!(pick(OpenMpi, Gather, 64, 1024, 1, true), "binomial");
    assert_eq!(pick(OpenMpi, Scatter, 64, 1 << 20, 1, true), "linear_nb");
    assert_eq!(pick(OpenMpi, ReduceScatter, 32, 1 << 20, 4, true), "ring");
    assert_eq!(
        pick(OpenMpi, ReduceScatter, 64, 1 << 20, 4, false),
        "nonoverlapping"
    );
    assert_eq!(pick(OpenMpi, Allgatherv, 64, 64, 1, true), "linear");
    // MPICH, mpir/generic.json on a flat communicator.
    assert_eq!(
        pick(Mpich, Allgather, 32, 1024, 1, true),
        "recursive_doubling"
    );
    assert_eq!(pick(Mpich, Allgather, 32, 1 << 20, 1, true), "ring");
    assert_eq!(pick(Mpich, Allgather, 33, 1024, 1, true), "bruck");
    assert_eq!(pick(Mpich, Allreduce, 32, 4, 4, true), "recursive_doubling");
    assert_eq!(pick(Mpich, Allreduce, 32, 1 << 20, 4, true), "rabenseifner");
    // 16 floats on 32 ranks: count < pof2(32) keeps recursive doubling.
    assert_eq!(
        pick(Mpich, Allreduce, 32, 64, 4, true),
        "recursive_doubling"
    );
    assert_eq!(
        pick(Mpich, Allreduce, 32, 1 << 20, 4, false),
        "recursive_doubling"
    );
    assert_eq!(pick(Mpich, Bcast, 7, 1 << 20, 1, true), "binomial");
    assert_eq!(pick(Mpich, Bcast, 8, 1 << 16, 1, true), "scatter_allgather");
    assert_eq!(
        pick(Mpich, Bcast, 8, 1 << 20, 1, true),
        "scatter_allgather_ring"
    );
    assert_eq!(pick(Mpich, Alltoall, 32, 64, 1, true), "modified_bruck");
    assert_eq!(pick(Mpich, Alltoall, 32, 4096, 1, true), "linear_sync");
    assert_eq!(pick(Mpich, Alltoall, 32, 1 << 20, 1, true), "pairwise");
    assert_eq!(pick(Mpich, Barrier, 32, 0, 1, true), "dissemination");
    assert_eq!(pick(Mpich, ReduceScatter, 8, 1 << 20, 4, true), "pairwise");
    assert_eq!(pick(Mpich, ReduceScatter, 8, 1024, 4, false), "butterfly");
}

#[test]
fn rules_read_as_the_source_does() {
    let mut a = CollArgs::new(Coll::Allreduce, 32, 1 << 20, 4);
    let c = select(Library::OpenMpi, &a);
    assert_eq!(
        c.rule,
        "ompi allreduce commutative p<64 & size>=128 -> rabenseifner"
    );
    a.p = 5000;
    a.count = 1000;
    let c = select(Library::OpenMpi, &a);
    assert_eq!(c.rule, "ompi allreduce commutative p>=4096 & 2048<=size<16384 -> segmented_ring (segment size 0: coll/base runs the plain ring)");
    let b = CollArgs::new(Coll::Barrier, 100, 0, 1);
    assert_eq!(
        select(Library::OpenMpi, &b).rule,
        "ompi barrier p<256 -> bruck"
    );
    let r = CollArgs::new(Coll::Allreduce, 32, 1 << 20, 4);
    let c = select(Library::Mpich, &r);
    assert!(
        c.rule
            .contains("MPIR_Allreduce_intra_reduce_scatter_allgather"),
        "{}",
        c.rule
    );
}

#[test]
fn every_choice_is_an_algorithm_of_its_collective() {
    for lib in [Library::OpenMpi, Library::Mpich] {
        for coll in coll::ALL {
            for p in (1..=70).chain([127, 128, 129, 1000, 4096, 5000, 100_000]) {
                for bytes in [0u64, 1, 7, 8, 9, 100, 4096, 65536, 1 << 20, 64 << 20] {
                    for elem in [1u32, 4, 8] {
                        for commutative in [true, false] {
                            let mut a = CollArgs::new(coll, p, bytes / elem as u64, elem);
                            a.commutative = commutative;
                            let c = select(lib, &a);
                            assert!(
                                coll.algorithms().contains(&c.algorithm),
                                "{} {} -> {}",
                                lib.name(),
                                coll.name(),
                                c.algorithm
                            );
                            assert!(c.rule.contains(c.algorithm), "{}", c.rule);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn fixed_rules_pass_no_segment_size() {
    // Open MPI's *_intra_dec_fixed pass segsize 0 (one segment) with every
    // algorithm; MPICH's picks take none.
    for lib in [Library::OpenMpi, Library::Mpich] {
        for coll in coll::ALL {
            for p in SIZES_P {
                for bytes in [0u64, 1024, 1 << 20, MIB8] {
                    let c = select(lib, &CollArgs::new(coll, p, bytes, 1));
                    assert_eq!(c.segment_bytes, None, "{}", c.rule);
                }
            }
        }
    }
}

#[test]
fn library_names_parse_and_bad_ones_say_what_to_use() {
    assert_eq!(Library::parse("openmpi").unwrap(), Library::OpenMpi);
    assert_eq!(Library::parse("OMPI").unwrap(), Library::OpenMpi);
    assert_eq!(Library::parse("Open-MPI").unwrap(), Library::OpenMpi);
    assert_eq!(Library::parse("mpich").unwrap(), Library::Mpich);
    for lib in [Library::OpenMpi, Library::Mpich] {
        assert_eq!(Library::parse(lib.name()).unwrap(), lib);
    }
    let e = Library::parse("mvapich").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(
        e.to_string().contains("mvapich") && e.to_string().contains("mpich"),
        "{e}"
    );
}
