//! Every collective algorithm computes what MPI promises: each schedule is
//! run by the data interpreter (random step order, sends that complete only
//! when matched) on many communicator sizes, counts and roots, and compared
//! with the result computed directly. Order-keeping algorithms are also run
//! with a non-commutative operator. Message counts of a few algorithms are
//! pinned by hand arithmetic, forcing a different algorithm must change the
//! schedule, and large schedules stay small.

use fabriclab_core::mpi::coll::{
    build, build_tuned, expected, initial, reduce_scatter_block, Coll, CollArgs, Tuning, ALL,
};
use fabriclab_core::mpi::interp::{run, RedOp};
use fabriclab_core::mpi::sched::{Op, Rank, Schedule, MIN_MESSAGE_BYTES};
use fabriclab_core::Error;

const SIZES: [u32; 11] = [1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32];

fn args(coll: Coll, p: u32, count: u64, root: Rank) -> CollArgs {
    let eb = if coll.reduces() { 4 } else { 1 };
    CollArgs {
        root,
        ..CollArgs::new(coll, p, count, eb)
    }
}

/// Build, run with several seeds and compare every defined result; the
/// send buffers must come out untouched. Returns false if the algorithm
/// rejects this size.
fn check(a: &CollArgs, alg: &str, op: RedOp, seeds: u64) -> bool {
    let s = match build(a, alg) {
        Ok(s) => s,
        Err(Error::InvalidArgument(m)) if m.contains("only works on 2 ranks") => return false,
        Err(e) => panic!("{a:?} {alg}: {e}"),
    };
    if let Err(e) = s.check() {
        panic!("{a:?} {alg}: {e}");
    }
    let init = initial(a, op);
    let want = expected(a, &init, op);
    for seed in 0..seeds {
        let out = run(&s, init.clone(), op, seed)
            .unwrap_or_else(|e| panic!("{a:?} {alg} seed {seed}: {e}"));
        for (r, (o, w)) in out.iter().zip(&want).enumerate() {
            assert_eq!(
                o.send, init[r].send,
                "{a:?} {alg}: rank {r} wrote its send buffer"
            );
            if let Some(w) = w {
                assert!(
                    &o.recv == w,
                    "{a:?} {alg} seed {seed}: rank {r} got a wrong result"
                );
            }
        }
    }
    true
}

fn counts(p: u32) -> Vec<u64> {
    vec![0, 1, p as u64 - 1, p as u64 + 3, 300]
}

/// Small segments: 3 elements each.
fn segmented(mut a: CollArgs) -> CollArgs {
    a.segment_bytes = Some(3 * a.elem_bytes as u64);
    a
}

fn sweep(coll: Coll) {
    for &alg in coll.algorithms() {
        let mut ran = 0;
        for p in SIZES {
            let roots: Vec<Rank> = if coll.rooted() {
                vec![0, p - 1]
            } else {
                vec![0]
            };
            for &root in &roots {
                for n in counts(p) {
                    if check(&args(coll, p, n, root), alg, RedOp::Sum, 3) {
                        ran += 1;
                    }
                }
                let long = args(coll, p, 40 + 3 * p as u64, root);
                check(&segmented(long), alg, RedOp::Sum, 2);
            }
        }
        assert!(ran > 0, "{} {alg} never ran", coll.name());
    }
}

#[test]
fn allreduce_algorithms_compute_the_sum_on_every_rank() {
    sweep(Coll::Allreduce);
}

#[test]
fn reduce_algorithms_compute_the_sum_at_the_root() {
    sweep(Coll::Reduce);
}

#[test]
fn bcast_algorithms_deliver_the_root_buffer() {
    sweep(Coll::Bcast);
}

#[test]
fn allgather_and_allgatherv_algorithms_concatenate_in_rank_order() {
    sweep(Coll::Allgather);
    sweep(Coll::Allgatherv);
}

#[test]
fn gather_and_scatter_algorithms_move_blocks_to_and_from_the_root() {
    sweep(Coll::Gather);
    sweep(Coll::Scatter);
}

#[test]
fn alltoall_algorithms_transpose_the_blocks() {
    sweep(Coll::Alltoall);
}

#[test]
fn reduce_scatter_algorithms_leave_each_rank_its_reduced_block() {
    sweep(Coll::ReduceScatter);
}

/// Whether every rank's exit (all its steps complete) waits for every other
/// rank's arrival: from the steps of any rank a, dependencies and matched
/// messages reach some step of every rank b.
fn every_exit_waits_for_every_entry(s: &Schedule) -> bool {
    use std::collections::HashMap;
    let p = s.ranks.len();
    let mut base = vec![0usize; p + 1];
    for (r, rs) in s.ranks.iter().enumerate() {
        base[r + 1] = base[r] + rs.steps.len();
    }
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); base[p]];
    let mut sends = HashMap::new();
    for (r, rs) in s.ranks.iter().enumerate() {
        for (i, st) in rs.steps.iter().enumerate() {
            for &d in &st.deps {
                next[base[r] + d as usize].push(base[r] + i);
            }
            if let Op::Send { to, tag, .. } = st.op {
                sends.insert((r as Rank, to, tag), base[r] + i);
            }
        }
    }
    for (r, rs) in s.ranks.iter().enumerate() {
        for (i, st) in rs.steps.iter().enumerate() {
            if let Op::Recv { from, tag, .. } = st.op {
                next[sends[&(from, r as Rank, tag)]].push(base[r] + i);
            }
        }
    }
    (0..p).all(|a| {
        let mut seen = vec![false; base[p]];
        let mut stack: Vec<usize> = (base[a]..base[a + 1]).collect();
        while let Some(x) = stack.pop() {
            if !std::mem::replace(&mut seen[x], true) {
                stack.extend(&next[x]);
            }
        }
        (0..p).all(|b| seen[base[b]..base[b + 1]].iter().any(|&x| x))
    })
}

#[test]
fn barrier_algorithms_let_no_rank_leave_before_all_arrive() {
    sweep(Coll::Barrier);
    for &alg in Coll::Barrier.algorithms() {
        for p in SIZES
            .into_iter()
            .filter(|&p| p > 1 && (alg != "two_proc" || p == 2))
        {
            let s = build(&CollArgs::new(Coll::Barrier, p, 0, 1), alg).unwrap();
            assert!(
                every_exit_waits_for_every_entry(&s),
                "barrier {alg} on {p} ranks"
            );
        }
    }
}

/// Algorithms Open MPI (or MPICH) may run for non-commutative operators
/// must combine ranks in order: checked with composition of affine maps.
#[test]
fn order_keeping_algorithms_are_correct_for_non_commutative_operators() {
    let keep = [
        (
            Coll::Allreduce,
            &[
                "basic_linear",
                "nonoverlapping",
                "recursive_doubling",
                "rabenseifner",
            ][..],
        ),
        (
            Coll::Reduce,
            &["linear", "in_order_binary", "rabenseifner"][..],
        ),
        (Coll::ReduceScatter, &["nonoverlapping", "butterfly"][..]),
    ];
    for (coll, algs) in keep {
        for alg in algs {
            for p in SIZES {
                let roots: Vec<Rank> = if coll.rooted() {
                    vec![0, p / 2, p - 1]
                } else {
                    vec![0]
                };
                for root in roots {
                    for n in [1, p as u64 + 3, 97] {
                        let mut a = args(coll, p, n, root);
                        a.commutative = false;
                        check(&a, alg, RedOp::Affine, 3);
                        check(&segmented(a), alg, RedOp::Affine, 2);
                    }
                }
            }
        }
    }
}

/// Elements sent per message, per rank.
fn sends(s: &Schedule) -> Vec<Vec<u64>> {
    s.ranks
        .iter()
        .map(|r| {
            r.steps
                .iter()
                .filter_map(|st| match st.op {
                    Op::Send { src, .. } => Some(src.count),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn message_counts_and_sizes_match_hand_arithmetic() {
    // Ring allreduce: 2(p-1) messages of count/p per rank.
    let s = build(&CollArgs::new(Coll::Allreduce, 8, 800, 4), "ring").unwrap();
    assert!(sends(&s)
        .iter()
        .all(|m| m.len() == 14 && m.iter().all(|&n| n == 100)));
    assert_eq!(s.bytes_sent(), 8 * 14 * 100 * 4);
    // Uneven blocks: 803 = 3 blocks of 101 and 5 of 100.
    let s = build(&CollArgs::new(Coll::Allreduce, 8, 803, 4), "ring").unwrap();
    assert_eq!(s.bytes_sent(), (2 * 7 * 803) * 4);
    // Recursive doubling allreduce, power of two: log2 p full messages.
    let s = build(
        &CollArgs::new(Coll::Allreduce, 16, 1000, 4),
        "recursive_doubling",
    )
    .unwrap();
    assert!(sends(&s).iter().all(|m| m == &vec![1000; 4]));
    // ... and 12 ranks fold 4 pairs first: ranks 0, 2, 4, 6 only send twice.
    let s = build(
        &CollArgs::new(Coll::Allreduce, 12, 10, 4),
        "recursive_doubling",
    )
    .unwrap();
    let m = sends(&s);
    assert_eq!(m[0].len(), 1);
    assert_eq!(m[1].len(), 4);
    assert_eq!(m[11].len(), 3);
    // Rabenseifner, power of two: 2 log2 p messages, 2 (p-1)/p count bytes.
    let s = build(&CollArgs::new(Coll::Allreduce, 8, 800, 4), "rabenseifner").unwrap();
    assert!(sends(&s)
        .iter()
        .all(|m| m.len() == 6 && m.iter().sum::<u64>() == 2 * 700));
    // Pairwise alltoall: p-1 messages of count.
    let s = build(&CollArgs::new(Coll::Alltoall, 7, 50, 1), "pairwise").unwrap();
    assert!(sends(&s).iter().all(|m| m == &vec![50; 6]));
    // Modified Bruck alltoall, 8 ranks: 3 messages of 4 blocks.
    let s = build(&CollArgs::new(Coll::Alltoall, 8, 10, 1), "modified_bruck").unwrap();
    assert!(sends(&s).iter().all(|m| m == &vec![40; 3]));
    // Binomial bcast: p-1 messages in all, each the whole buffer.
    for p in [5, 16, 31] {
        let s = build(&CollArgs::new(Coll::Bcast, p, 64, 1), "binomial").unwrap();
        let all: Vec<u64> = sends(&s).concat();
        assert_eq!(all, vec![64; p as usize - 1]);
    }
    // Segmented pipeline bcast: (p-1) x segments messages.
    let mut a = CollArgs::new(Coll::Bcast, 6, 1000, 1);
    a.segment_bytes = Some(100);
    assert_eq!(
        sends(&build(&a, "pipeline").unwrap()).concat().len(),
        5 * 10
    );
    // Recursive doubling allgather on 8 ranks: c, 2c, 4c.
    let s = build(
        &CollArgs::new(Coll::Allgather, 8, 3, 1),
        "recursive_doubling",
    )
    .unwrap();
    assert!(sends(&s).iter().all(|m| m == &vec![3, 6, 12]));
    // Linear barrier: 2(p-1) empty messages.
    let s = build(&CollArgs::new(Coll::Barrier, 9, 0, 1), "linear").unwrap();
    assert_eq!(sends(&s).concat(), vec![0; 16]);
    // Linear gather: p-1 messages into the root.
    let s = build(&CollArgs::new(Coll::Gather, 9, 5, 1), "basic_linear").unwrap();
    assert_eq!(s.bytes_sent(), 8 * 5);
    // Reduce_scatter blocks follow IMB's split.
    assert_eq!(
        (0..4)
            .map(|r| reduce_scatter_block(10, 4, r))
            .collect::<Vec<_>>(),
        vec![3, 3, 2, 2]
    );
}

#[test]
fn forcing_another_algorithm_changes_the_schedule() {
    // Pairs both libraries run identically wherever both are valid: a
    // two-process algorithm on 2 ranks is one exchange, like the general
    // pairwise / Bruck / recursive doubling / dissemination exchange.
    let same = [
        (Coll::Alltoall, "pairwise", "two_proc"),
        (Coll::Barrier, "recursive_doubling", "two_proc"),
        (Coll::Barrier, "bruck", "two_proc"),
        (Coll::Barrier, "two_proc", "dissemination"),
    ];
    let knobs = Tuning {
        alltoall_max_requests: 2,
        dissemination_radix: 3,
        ..Tuning::FORCED
    };
    for coll in ALL {
        let algs = coll.algorithms();
        for (i, a) in algs.iter().enumerate() {
            for b in &algs[i + 1..] {
                if same.contains(&(coll, *a, *b)) {
                    continue;
                }
                let mut differ = false;
                'search: for p in [2u32, 3, 4, 5, 8, 12] {
                    for n in [1u64, 7, 100] {
                        for seg in [None, Some(8)] {
                            for t in [&Tuning::FIXED, &knobs] {
                                let mut x = CollArgs::new(coll, p, n, 4);
                                x.segment_bytes = seg;
                                let (Ok(s), Ok(u)) = (build_tuned(&x, a, t), build_tuned(&x, b, t))
                                else {
                                    continue;
                                };
                                if s.ranks != u.ranks {
                                    differ = true;
                                    break 'search;
                                }
                            }
                        }
                    }
                }
                assert!(
                    differ,
                    "{} {a} and {b} always give the same schedule",
                    coll.name()
                );
            }
        }
    }
}

#[test]
fn defaults_follow_open_mpi_fixed_rules_where_they_make_algorithms_coincide() {
    // The fixed rules pass no segment size: segmented ring is the ring.
    let a = CollArgs::new(Coll::Allreduce, 8, 4096, 4);
    assert_eq!(
        build(&a, "segmented_ring").unwrap().ranks,
        build(&a, "ring").unwrap().ranks
    );
    // ... and bcast chain fan-out 0, which Open MPI turns into a pipeline.
    let a = CollArgs::new(Coll::Bcast, 8, 4096, 1);
    assert_eq!(
        build(&a, "chain").unwrap().ranks,
        build(&a, "pipeline").unwrap().ranks
    );
    // No alltoall request limit: linear_sync posts everything like linear.
    let a = CollArgs::new(Coll::Alltoall, 8, 64, 1);
    assert_eq!(
        build(&a, "linear_sync").unwrap().ranks,
        build(&a, "linear").unwrap().ranks
    );
    // With a limit, at most that many sends are ever ready at once.
    let t = Tuning {
        alltoall_max_requests: 2,
        ..Tuning::FIXED
    };
    let s = build_tuned(&a, "linear_sync", &t).unwrap();
    let init = initial(&a, RedOp::Sum);
    let out = run(&s, init.clone(), RedOp::Sum, 3).unwrap();
    assert_eq!(
        Some(&out[5].recv),
        expected(&a, &init, RedOp::Sum)[5].as_ref()
    );
    let free_sends = s.ranks[0]
        .steps
        .iter()
        .filter(|st| matches!(st.op, Op::Send { .. }) && st.deps.len() == 1)
        .count();
    assert_eq!(
        free_sends, 2,
        "only the first window of sends waits for nothing but the copy"
    );
}

#[test]
fn schedules_for_512_ranks_and_4_mib_stay_small() {
    let p = 512u32;
    let steps = |coll, count, eb, alg| {
        build(&CollArgs::new(coll, p, count, eb), alg)
            .unwrap()
            .n_steps()
    };
    let pp = (p * p) as usize;
    // Alltoall of 4 MiB per peer: O(p) steps per rank.
    assert!(steps(Coll::Alltoall, 4 << 20, 1, "pairwise") <= 3 * pp);
    assert!(steps(Coll::Alltoall, 4 << 20, 1, "linear") <= 3 * pp);
    assert!(steps(Coll::Alltoall, 4 << 20, 1, "modified_bruck") <= 6 * pp);
    // Allreduce of 4 MiB of floats.
    assert!(steps(Coll::Allreduce, 1 << 20, 4, "ring") <= 5 * pp);
    assert!(steps(Coll::Allreduce, 1 << 20, 4, "rabenseifner") <= 60 * p as usize);
    assert!(steps(Coll::Allreduce, 1 << 20, 4, "recursive_doubling") <= 40 * p as usize);
    // Segmented: 64 KiB segments of a 4 MiB pipeline bcast.
    let mut a = CollArgs::new(Coll::Bcast, p, 4 << 20, 1);
    a.segment_bytes = Some(64 << 10);
    assert!(build(&a, "pipeline").unwrap().n_steps() <= 3 * 64 * p as usize);
}

#[test]
fn bad_requests_are_invalid_arguments_that_say_what_to_use() {
    let a = CollArgs::new(Coll::Allreduce, 4, 10, 4);
    let e = build(&a, "bogus").unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("rabenseifner"),
        "{e}"
    );
    let e = build(&CollArgs::new(Coll::Allreduce, 0, 10, 4), "ring").unwrap_err();
    assert!(e.to_string().contains("p = 0"), "{e}");
    let e = build(&CollArgs::new(Coll::Alltoall, 3, 10, 1), "two_proc").unwrap_err();
    assert!(e.to_string().contains("2 ranks"), "{e}");
    let mut b = CollArgs::new(Coll::Bcast, 4, 10, 1);
    b.root = 4;
    assert!(build(&b, "binomial").is_err());
    // Every name builds, with Open MPI's spelling variants.
    assert!(build(&CollArgs::new(Coll::Reduce, 4, 10, 4), "in-order_binary").is_ok());
    for coll in ALL {
        for alg in coll.algorithms() {
            let p = if *alg == "two_proc" { 2 } else { 6 };
            assert!(
                build(&CollArgs::new(coll, p, 10, 4), alg).is_ok(),
                "{} {alg}",
                coll.name()
            );
        }
    }
}

#[test]
fn a_budget_counts_each_message_as_at_least_a_minimum_frame() {
    // Linear all-to-all of 1 B on 512 ranks: 261,632 messages a
    // repetition, each counted as a 64 B frame (16.7 MB): 64 repetitions
    // fit in 1 GiB. Counted as their bytes, 4,104 fitted, so the tools'
    // 1,000 all ran (261 M messages).
    let s = build(&args(Coll::Alltoall, 512, 1, 0), "linear").unwrap();
    assert_eq!(s.bytes_sent(), 512 * 511);
    assert_eq!(s.budget_bytes(MIN_MESSAGE_BYTES), 512 * 511 * 64);
    assert_eq!(s.reps_within(1000, 1 << 30, MIN_MESSAGE_BYTES), 64);
    // Counted by bytes alone (nccl-tests), all 1,000 fit.
    assert_eq!(s.reps_within(1000, 1 << 30, 0), 1000);
    // Large messages count their bytes: 64 KiB to each of 31 peers from
    // 32 ranks is 65 MB a repetition, 16 of them in 1 GiB.
    let big = build(&args(Coll::Alltoall, 32, 65536, 0), "linear").unwrap();
    assert_eq!(big.budget_bytes(MIN_MESSAGE_BYTES), big.bytes_sent());
    assert_eq!(big.reps_within(1000, 1 << 30, MIN_MESSAGE_BYTES), 16);
}
