//! MPI_Alltoall algorithms of Open MPI's `coll_base_alltoall.c`: basic
//! linear (every receive and send posted at once), pairwise exchange,
//! modified Bruck, linear_sync (a bounded number of outstanding sends and
//! receives) and the two-process exchange.
//!
//! Bruck sends non-contiguous blocks through a derived datatype; here the
//! datatype engine's packing and unpacking are explicit copies through
//! contiguous scratch buffers, followed by Open MPI's own copy of the
//! received blocks back into its working buffer. `linear_sync` replaces a
//! completed request with the next one of the same kind (MPI_Waitany); the
//! schedule lets request k+K wait for request k, the order they are
//! posted in. Left out: MPI_IN_PLACE.

use super::super::sched::{Buf, Region};
use super::prog::{sub, whole, Prog};
use super::tuning::Ctx;
use crate::error::{arg_err, Result};

/// Alltoall of `cx.count` elements per pair, Send to Recv.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str) -> Result<()> {
    let (p, c) = (cx.p, cx.count);
    let send = whole(Buf::Send, p as u64 * c);
    let recv = whole(Buf::Recv, p as u64 * c);
    let blk = move |b: Region, i: u32| sub(b, i as u64 * c, c);
    match alg {
        "linear" => linear_sync(ps, send, recv, c, 0),
        "linear_sync" => linear_sync(ps, send, recv, c, cx.tuning.alltoall_max_requests),
        // ompi_coll_base_alltoall_intra_pairwise: at step k send to r+k and
        // receive from r-k; the local block is copied last (step p).
        "pairwise" => {
            for pg in ps.iter_mut() {
                let r = pg.me;
                for k in 1..p {
                    let (to, from) = ((r + k) % p, (r + p - k) % p);
                    pg.sendrecv(to, blk(send, to), from, blk(recv, from));
                }
                pg.copy(blk(send, r), blk(recv, r));
            }
        }
        "modified_bruck" => bruck(ps, send, recv, c),
        // ompi_coll_base_alltoall_intra_two_procs.
        "two_proc" => {
            for pg in ps.iter_mut() {
                let (r, o) = (pg.me, pg.me ^ 1);
                pg.sendrecv(o, blk(send, o), o, blk(recv, o));
                pg.copy(blk(send, r), blk(recv, r));
            }
        }
        other => return arg_err(format!("{other:?} is not an alltoall algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_alltoall_intra_linear_sync` (and, with no limit,
/// `ompi_coll_base_alltoall_intra_basic_linear`, which posts the same
/// requests in the same order): local copy, receives from r+1, r+2, ...,
/// sends to r-1, r-2, ..., at most `max_reqs` of each outstanding (0: all).
fn linear_sync(ps: &mut [Prog], send: Region, recv: Region, c: u64, max_reqs: u32) {
    let p = ps.len() as u32;
    let blk = |b: Region, i: u32| sub(b, i as u64 * c, c);
    let k = if max_reqs == 0 || max_reqs > p - 1 {
        p - 1
    } else {
        max_reqs
    } as usize;
    for pg in ps.iter_mut() {
        let r = pg.me;
        pg.copy(blk(send, r), blk(recv, r));
        if p == 1 {
            continue;
        }
        let mut recvs = Vec::with_capacity(p as usize - 1);
        let mut sends = Vec::with_capacity(p as usize - 1);
        for i in 0..k as u32 {
            let from = (r + 1 + i) % p;
            recvs.push(pg.irecv(from, blk(recv, from)));
        }
        for i in 0..k as u32 {
            let to = (r + 2 * p - 1 - i) % p;
            sends.push(pg.isend(to, blk(send, to)));
        }
        for i in k as u32..p - 1 {
            let from = (r + 1 + i) % p;
            let slot = recvs[i as usize - k];
            recvs.push(pg.irecv_after(from, blk(recv, from), &[slot]));
            let to = (r + 2 * p - 1 - i) % p;
            let slot = sends[i as usize - k];
            sends.push(pg.isend_after(to, blk(send, to), &[slot]));
        }
        // Only the requests nobody replaced are still to be waited for;
        // the others are implied through their replacements.
        let tail: Vec<_> = recvs[recvs.len() - k..]
            .iter()
            .chain(&sends[sends.len() - k..])
            .copied()
            .collect();
        pg.wait(&tail);
    }
}

/// `ompi_coll_base_alltoall_intra_bruck`: rotate the send buffer up by the
/// rank, then for d = 1, 2, 4, ... send every block whose index has bit d
/// set to rank + d and receive the same blocks from rank - d, and finally
/// rotate (and reverse) the blocks into the receive buffer.
fn bruck(ps: &mut [Prog], send: Region, recv: Region, c: u64) {
    let p = ps.len() as u32;
    // Runs of consecutive blocks exchanged at distance d.
    let runs = |d: u32| -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        let mut i = d;
        while i < p {
            v.push((i, if i + d >= p { p - i } else { d }));
            i += 2 * d;
        }
        v
    };
    let mut most = 0u64;
    let mut d = 1u32;
    while d < p {
        most = most.max(runs(d).iter().map(|&(_, n)| n as u64).sum());
        d <<= 1;
    }
    for pg in ps.iter_mut() {
        let r = pg.me;
        let tmp = pg.tmp(p as u64 * c);
        let head = (p - r) as u64 * c;
        pg.copy(sub(send, r as u64 * c, head), sub(tmp, 0, head));
        pg.copy(sub(send, 0, r as u64 * c), sub(tmp, head, r as u64 * c));
        let (packed, unpacked) = (pg.tmp(most * c), pg.tmp(most * c));
        let mut d = 1u32;
        while d < p {
            let rs = runs(d);
            let total: u64 = rs.iter().map(|&(_, n)| n as u64 * c).sum();
            let mut at = 0;
            for &(i, n) in &rs {
                let len = n as u64 * c;
                pg.copy(sub(tmp, i as u64 * c, len), sub(packed, at, len));
                at += len;
            }
            let (to, from) = ((r + d) % p, (r + p - d) % p);
            pg.sendrecv(to, sub(packed, 0, total), from, sub(unpacked, 0, total));
            at = 0;
            for &(i, n) in &rs {
                let len = n as u64 * c;
                pg.copy(sub(unpacked, at, len), sub(recv, i as u64 * c, len));
                at += len;
            }
            for &(i, n) in &rs {
                let blocks = sub(recv, i as u64 * c, n as u64 * c);
                pg.copy(blocks, sub(tmp, i as u64 * c, n as u64 * c));
            }
            d <<= 1;
        }
        for i in 0..p {
            let j = (r + p - i) % p;
            pg.copy(sub(tmp, i as u64 * c, c), sub(recv, j as u64 * c, c));
        }
    }
}
