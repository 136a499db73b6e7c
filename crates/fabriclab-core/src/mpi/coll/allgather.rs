//! MPI_Allgather algorithms of Open MPI's `coll_base_allgather.c`, also used
//! for MPI_Allgatherv with equal counts: linear (the selected gather to 0,
//! then the selected bcast), Bruck (radix 2, with the final local
//! rotation), recursive doubling (powers of two; Bruck otherwise, as Open
//! MPI falls back), ring, neighbour exchange (even p; ring otherwise) and
//! the two-process exchange.
//!
//! Left out: MPI_IN_PLACE, the k-ary Bruck radix other than 2, sparbit and
//! direct messaging; Open MPI's allgatherv Bruck uses an indexed datatype
//! instead of the final rotation, modelled here by the allgather one.

use super::super::sched::{Buf, Region};
use super::prog::{sub, whole, Prog};
use super::tuning::Ctx;
use super::{bcast, gather, Coll};
use crate::error::{arg_err, Result};

/// Allgather of `cx.count` elements per rank from Send into Recv.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str) -> Result<()> {
    let (p, c) = (cx.p, cx.count);
    let send = whole(Buf::Send, c);
    let recv = whole(Buf::Recv, p as u64 * c);
    match alg {
        "linear" => {
            let gc = cx.sub(Coll::Gather, c, 0);
            gather::run_gather(ps, &gc, gc.pick(), send, recv)?;
            let bc = cx.sub(Coll::Bcast, p as u64 * c, 0);
            bcast::run(ps, &bc, bc.pick(), recv)?;
        }
        "bruck" => bruck(ps, send, recv),
        "recursive_doubling" if p.is_power_of_two() => recursive_doubling(ps, send, recv),
        "recursive_doubling" => bruck(ps, send, recv),
        "ring" => ring(ps, send, recv),
        "neighbor" if p % 2 == 0 => neighbor(ps, send, recv),
        "neighbor" => ring(ps, send, recv),
        "two_proc" => two_proc(ps, send, recv),
        other => return arg_err(format!("{other:?} is not an allgather algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_allgather_intra_bruck`: own block at the front, then at
/// distance 1, 2, 4, ... send the first blocks to rank - d and append the
/// ones from rank + d; ranks other than 0 rotate their result into place
/// through a scratch buffer.
fn bruck(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let c = send.count;
    for pg in ps.iter_mut() {
        let r = pg.me;
        pg.copy(send, sub(recv, 0, c));
        let mut d = 1u32;
        while d < p {
            let blocks = if d <= p / 2 { d } else { p - d } as u64;
            let (from, to) = ((r + d) % p, (r + p - d) % p);
            pg.sendrecv(
                to,
                sub(recv, 0, blocks * c),
                from,
                sub(recv, d as u64 * c, blocks * c),
            );
            d <<= 1;
        }
        if r != 0 {
            let (head, tail) = ((p - r) as u64 * c, r as u64 * c);
            let shift = pg.tmp(head);
            pg.copy(sub(recv, 0, head), shift);
            pg.copy(sub(recv, head, tail), sub(recv, 0, tail));
            pg.copy(shift, sub(recv, tail, head));
        }
    }
}

/// `ompi_coll_base_allgather_intra_recursivedoubling` (p a power of two):
/// exchange the blocks gathered so far with rank ^ d, doubling d.
fn recursive_doubling(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let c = send.count;
    for pg in ps.iter_mut() {
        let r = pg.me;
        pg.copy(send, sub(recv, r as u64 * c, c));
        let mut at = r;
        let mut d = 1u32;
        while d < p {
            let remote = r ^ d;
            let len = d as u64 * c;
            let mine = sub(recv, at as u64 * c, len);
            let theirs = if r < remote {
                sub(recv, (at + d) as u64 * c, len)
            } else {
                at -= d;
                sub(recv, at as u64 * c, len)
            };
            pg.sendrecv(remote, mine, remote, theirs);
            d <<= 1;
        }
    }
}

/// `ompi_coll_base_allgather_intra_ring`: p-1 steps passing blocks right.
pub(crate) fn ring(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let c = send.count;
    let blk = |b: u32| sub(recv, b as u64 * c, c);
    for pg in ps.iter_mut() {
        let r = pg.me;
        pg.copy(send, blk(r));
        for i in 0..p - 1 {
            let recv_from = (r + 2 * p - i - 1) % p;
            let send_from = (r + p - i) % p;
            pg.sendrecv((r + 1) % p, blk(send_from), (r + p - 1) % p, blk(recv_from));
        }
    }
}

/// `ompi_coll_base_allgather_intra_neighborexchange` (even p): swap one
/// block with one neighbour, then p/2 - 1 swaps of two blocks alternating
/// between the two neighbours.
fn neighbor(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let c = send.count;
    let blk = |b: u32, n: u64| sub(recv, b as u64 * c, n * c);
    for pg in ps.iter_mut() {
        let r = pg.me;
        pg.copy(send, blk(r, 1));
        let even = r % 2 == 0;
        let (nb, mut from, step): ([u32; 2], [u32; 2], [i64; 2]) = if even {
            ([(r + 1) % p, (r + p - 1) % p], [r, r], [2, -2])
        } else {
            let left = (r + p - 1) % p;
            ([left, (r + 1) % p], [left, left], [-2, 2])
        };
        pg.sendrecv(nb[0], blk(r, 1), nb[0], blk(nb[0], 1));
        let mut send_from = if even { r } else { from[0] };
        for i in 1..p / 2 {
            let ip = (i % 2) as usize;
            from[ip] = ((from[ip] as i64 + step[ip] + p as i64) % p as i64) as u32;
            pg.sendrecv(nb[ip], blk(send_from, 2), nb[ip], blk(from[ip], 2));
            send_from = from[ip];
        }
    }
}

/// `ompi_coll_base_allgather_intra_two_procs`: one exchange, then the own
/// block copied into place.
fn two_proc(ps: &mut [Prog], send: Region, recv: Region) {
    let c = send.count;
    for pg in ps.iter_mut() {
        let (r, remote) = (pg.me, pg.me ^ 1);
        pg.sendrecv(remote, send, remote, sub(recv, remote as u64 * c, c));
        pg.copy(send, sub(recv, r as u64 * c, c));
    }
}
