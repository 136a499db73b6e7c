//! What a collective's buffers hold: their sizes per rank, a deterministic
//! input, and the result MPI promises, computed directly (without any
//! algorithm) so that schedules run by the interpreter can be checked
//! against it.

use super::super::interp::{RankBufs, RedOp};
use super::super::sched::BufSizes;
use super::reduce_scatter::block;
use super::{Coll, CollArgs};
use crate::rng::splitmix64;

/// Buffer sizes per rank, in elements: Allreduce send = recv = count;
/// Reduce send = recv = count (non-roots may use recv as scratch); Bcast
/// send 0, recv count; Allgather(v) and Gather send count, recv p x count;
/// Scatter send p x count, recv count; Alltoall p x count both;
/// Reduce_scatter send count, recv the rank's block; Barrier 0 / 0.
pub fn buf_sizes(args: &CollArgs) -> BufSizes {
    let (p, n) = (args.p, args.count);
    let pn = p as u64 * n;
    let per_rank = |r: u32| -> (u64, u64) {
        match args.coll {
            Coll::Allreduce | Coll::Reduce => (n, n),
            Coll::Bcast => (0, n),
            Coll::Allgather | Coll::Allgatherv | Coll::Gather => (n, pn),
            Coll::Scatter => (pn, n),
            Coll::Alltoall => (pn, pn),
            Coll::ReduceScatter => (n, block(n, p, r)),
            Coll::Barrier => (0, 0),
        }
    };
    let (send, recv) = (0..p).map(per_rank).unzip();
    BufSizes { send, recv }
}

/// A value for element `i` of buffer `which` (0 send, 1 recv) of rank `r`.
/// For [`RedOp::Affine`] it is a map x -> a x + b with a odd (never zero).
fn value(op: RedOp, r: u32, which: u64, i: u64) -> u64 {
    let h = splitmix64(((r as u64) << 40) ^ (which << 36) ^ i ^ 0x5eed);
    match op {
        RedOp::Sum => h >> 8,
        RedOp::Affine => ((h >> 32) | 1) << 32 | (h & 0xffff_ffff),
    }
}

/// Deterministic, distinct input for every rank and element; receive
/// buffers start with distinct garbage (except that the root's Bcast
/// buffer holds the data to broadcast).
pub fn initial(args: &CollArgs, op: RedOp) -> Vec<RankBufs> {
    let sizes = buf_sizes(args);
    (0..args.p)
        .map(|r| {
            let send = (0..sizes.send[r as usize])
                .map(|i| value(op, r, 0, i))
                .collect();
            let recv = (0..sizes.recv[r as usize])
                .map(|i| value(op, r, 1, i))
                .collect();
            RankBufs { send, recv }
        })
        .collect()
}

/// The receive buffer MPI promises each rank after the call (None where
/// the standard leaves it undefined, e.g. at non-roots of Reduce and
/// Gather). Reductions combine ranks in order, x0 op x1 op ... op x(p-1).
pub fn expected(args: &CollArgs, init: &[RankBufs], op: RedOp) -> Vec<Option<Vec<u64>>> {
    let (p, n, root) = (args.p as usize, args.count as usize, args.root as usize);
    let reduced = || -> Vec<u64> {
        (0..n)
            .map(|i| (1..p).fold(init[0].send[i], |acc, r| op.apply(acc, init[r].send[i])))
            .collect()
    };
    let concat = || -> Vec<u64> { init.iter().flat_map(|b| b.send.iter().copied()).collect() };
    match args.coll {
        Coll::Allreduce => vec![Some(reduced()); p],
        Coll::Reduce => (0..p).map(|r| (r == root).then(reduced)).collect(),
        Coll::Bcast => vec![Some(init[root].recv.clone()); p],
        Coll::Allgather | Coll::Allgatherv => vec![Some(concat()); p],
        Coll::Gather => (0..p).map(|r| (r == root).then(concat)).collect(),
        Coll::Scatter => (0..p)
            .map(|r| Some(init[root].send[r * n..(r + 1) * n].to_vec()))
            .collect(),
        Coll::Alltoall => (0..p)
            .map(|r| {
                Some(
                    (0..p)
                        .flat_map(|j| init[j].send[r * n..(r + 1) * n].iter().copied())
                        .collect(),
                )
            })
            .collect(),
        Coll::ReduceScatter => {
            let all = reduced();
            let mut at = 0;
            (0..p)
                .map(|r| {
                    let len = block(args.count, args.p, r as u32) as usize;
                    at += len;
                    Some(all[at - len..at].to_vec())
                })
                .collect()
        }
        Coll::Barrier => vec![Some(Vec::new()); p],
    }
}
