//! MPI on the simulated fabric: schedules of point-to-point steps, the
//! collective algorithms of real MPI libraries compiled into them, and the
//! runtime that runs them over RoCE queue pairs and shared memory.
//!
//! Layers: [`sched`] (the schedule IR shared by everything), [`interp`]
//! (runs schedules on real buffers to check algorithms), [`coll`] (the
//! collectives and their algorithm names), [`select`] (which algorithm
//! Open MPI or MPICH would pick for a call).

pub mod coll;
pub mod footprint;
pub mod interp;
pub mod job;
pub mod memory;
pub mod patterns;
pub mod program;
pub mod run;
pub mod runtime;
pub mod sched;
pub mod select;

#[cfg(test)]
mod tests {
    use super::interp::{run, RankBufs, RedOp};
    use super::sched::{Buf, BufSizes, Region, Schedule};

    /// A ring allgather written by hand: the interpreter must deliver every
    /// block to every rank, and must flag a missing dependency as a race.
    fn ring(p: u32, with_deps: bool) -> Schedule {
        let bufs = BufSizes {
            send: vec![1; p as usize],
            recv: vec![p as u64; p as usize],
        };
        let mut s = Schedule::new(p, 4, bufs, "ring");
        for r in 0..p {
            let rs = &mut s.ranks[r as usize];
            let right = (r + 1) % p;
            let left = (r + p - 1) % p;
            let mut prev = rs.copy(
                Region::new(Buf::Send, 0, 1),
                Region::new(Buf::Recv, r as u64, 1),
                &[],
            );
            for k in 0..p - 1 {
                let sb = ((r + p - k) % p) as u64;
                let rb = ((r + p - k - 1) % p) as u64;
                let deps: Vec<u32> = if with_deps { vec![prev] } else { vec![] };
                let a = rs.send(right, 0, Region::new(Buf::Recv, sb, 1), &deps);
                let b = rs.recv(left, 0, Region::new(Buf::Recv, rb, 1), &deps);
                prev = if with_deps {
                    rs.copy(
                        Region::new(Buf::Recv, rb, 1),
                        Region::new(Buf::Recv, rb, 1),
                        &[a, b],
                    )
                } else {
                    b
                };
            }
        }
        s
    }

    #[test]
    fn interpreter_runs_a_ring_allgather() {
        for p in [2u32, 3, 5, 8] {
            let s = ring(p, true);
            let init = (0..p)
                .map(|r| RankBufs {
                    send: vec![100 + r as u64],
                    recv: vec![0; p as usize],
                })
                .collect();
            let out = run(&s, init, RedOp::Sum, 7).unwrap();
            for o in &out {
                assert_eq!(o.recv, (0..p as u64).map(|r| 100 + r).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn interpreter_flags_races_and_deadlocks() {
        let s = ring(4, false);
        let init: Vec<RankBufs> = (0..4)
            .map(|r| RankBufs {
                send: vec![r],
                recv: vec![0; 4],
            })
            .collect();
        let errs = (0..20)
            .filter(|&seed| run(&s, init.clone(), RedOp::Sum, seed).is_err())
            .count();
        assert!(
            errs > 0,
            "a ring without dependencies must be caught as a race"
        );
        // Two ranks that both receive first: deadlock under MPI semantics.
        let bufs = BufSizes {
            send: vec![1, 1],
            recv: vec![1, 1],
        };
        let mut d = Schedule::new(2, 4, bufs, "dead");
        for r in 0..2u32 {
            let rs = &mut d.ranks[r as usize];
            let a = rs.recv(1 - r, 0, Region::new(Buf::Recv, 0, 1), &[]);
            rs.send(1 - r, 0, Region::new(Buf::Send, 0, 1), &[a]);
        }
        let init = vec![
            RankBufs {
                send: vec![1],
                recv: vec![0]
            };
            2
        ];
        let e = run(&d, init, RedOp::Sum, 1).unwrap_err();
        assert!(e.contains("deadlock"), "{e}");
    }

    #[test]
    fn affine_operator_is_associative_not_commutative() {
        let op = RedOp::Affine;
        let (a, b, c) = ((3u64 << 32) | 5, (7u64 << 32) | 11, (2u64 << 32) | 1);
        assert_eq!(op.apply(op.apply(a, b), c), op.apply(a, op.apply(b, c)));
        assert_ne!(op.apply(a, b), op.apply(b, a));
    }
}
