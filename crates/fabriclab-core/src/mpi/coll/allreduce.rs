//! MPI_Allreduce algorithms of Open MPI's `coll_base_allreduce.c`: basic
//! linear (linear reduce + linear bcast), nonoverlapping (the selected
//! reduce, then the selected bcast), recursive doubling, ring, segmented
//! ring and Rabenseifner's reduce-scatter + allgather (`redscat_allgather`).
//!
//! Fallbacks are Open MPI's: ring below p elements runs recursive doubling,
//! the segmented ring below p segments runs the ring, Rabenseifner for
//! non-commutative operators or counts under p' runs basic linear. Left
//! out: MPI_IN_PLACE, the Bine and allgather_reduce variants.

use super::super::sched::{Buf, Region, StepId};
use super::prog::{sub, whole, Prog};
use super::rsag::{self, fold};
use super::tree::{floor_pow2, Blocks};
use super::tuning::Ctx;
use super::{bcast, reduce, Coll};
use crate::error::{arg_err, Result};

/// Allreduce of `cx.count` elements from Send into Recv.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str) -> Result<()> {
    let n = cx.count;
    let (send, recv) = (whole(Buf::Send, n), whole(Buf::Recv, n));
    match alg {
        "basic_linear" => basic_linear(ps, send, recv),
        "nonoverlapping" => {
            let rc = cx.sub(Coll::Reduce, n, 0);
            reduce::run(ps, &rc, rc.pick(), send, recv)?;
            let bc = cx.sub(Coll::Bcast, n, 0);
            bcast::run(ps, &bc, bc.pick(), recv)?;
        }
        "recursive_doubling" => recursive_doubling(ps, send, recv),
        "ring" => ring(ps, send, recv),
        "segmented_ring" => segmented_ring(ps, cx, send, recv),
        "rabenseifner" => rabenseifner(ps, cx, send, recv),
        other => return arg_err(format!("{other:?} is not an allreduce algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_allreduce_intra_basic_linear`.
fn basic_linear(ps: &mut [Prog], send: Region, recv: Region) {
    reduce::linear(ps, 0, send, recv);
    bcast::linear(ps, 0, recv);
}

/// `ompi_coll_base_allreduce_intra_recursivedoubling`: the first 2r ranks
/// pair up (even sends to odd, which reduces), p' ranks exchange whole
/// vectors log2 p' times (keeping rank order in each reduction), and the
/// odd ranks hand the result back.
fn recursive_doubling(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let adj = floor_pow2(p);
    let extra = p - adj;
    for pg in ps.iter_mut() {
        let r = pg.me;
        let mine = pg.tmp(send.count);
        pg.copy(send, mine);
        let (mut ts, mut tr) = (mine, recv);
        let newrank = if r < 2 * extra {
            if r % 2 == 0 {
                pg.send(r + 1, ts);
                None
            } else {
                pg.recv(r - 1, tr);
                pg.reduce(tr, ts);
                Some(r >> 1)
            }
        } else {
            Some(r - extra)
        };
        if let Some(nr) = newrank {
            let mut d = 1;
            while d < adj {
                let nrem = nr ^ d;
                let remote = if nrem < extra {
                    nrem * 2 + 1
                } else {
                    nrem + extra
                };
                pg.sendrecv(remote, ts, remote, tr);
                if r < remote {
                    pg.reduce(ts, tr);
                    std::mem::swap(&mut ts, &mut tr);
                } else {
                    pg.reduce(tr, ts);
                }
                d <<= 1;
            }
        }
        if r < 2 * extra {
            if r % 2 == 0 {
                pg.recv(r + 1, recv);
                ts = recv;
            } else {
                pg.send(r - 1, ts);
            }
        }
        pg.copy(ts, recv);
    }
}

/// The reduce-scatter loop of the ring algorithms for one rank: block
/// `part(b)` of every rank travels right p-1 times, reduced on the way,
/// through two alternating receive buffers.
fn ring_reduce(pg: &mut Prog, p: u32, inb: [Region; 2], part: &dyn Fn(u32) -> Region) {
    let r = pg.me;
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    let slot = |i: usize, b: u32| sub(inb[i], 0, part(b).count);
    let mut reqs: [Option<StepId>; 2] = [Some(pg.irecv(from, slot(0, from))), None];
    pg.send(to, part(r));
    let mut inbi = 0;
    for k in 2..p {
        let prev = (r + p - k + 1) % p;
        inbi ^= 1;
        reqs[inbi] = Some(pg.irecv(from, slot(inbi, (r + p - k) % p)));
        pg.wait(&[reqs[inbi ^ 1].take().unwrap()]);
        pg.reduce(slot(inbi ^ 1, prev), part(prev));
        pg.send(to, part(prev));
    }
    pg.wait(&[reqs[inbi].take().unwrap()]);
    let last = (r + 1) % p;
    pg.reduce(slot(inbi, last), part(last));
}

/// The allgather half of the ring algorithms: p-1 sendrecvs passing the
/// reduced blocks right.
fn ring_gather(pg: &mut Prog, p: u32, blk: &dyn Fn(u32) -> Region) {
    let r = pg.me;
    let (to, from) = ((r + 1) % p, (r + p - 1) % p);
    for k in 0..p - 1 {
        let rf = (r + p - k) % p;
        let sf = (r + 1 + p - k) % p;
        pg.sendrecv(to, blk(sf), from, blk(rf));
    }
}

/// `ompi_coll_base_allreduce_intra_ring`: reduce-scatter then allgather
/// around the ring, in p blocks (the first `count % p` one larger).
fn ring(ps: &mut [Prog], send: Region, recv: Region) {
    let p = ps.len() as u32;
    let n = send.count;
    if n < p as u64 {
        return recursive_doubling(ps, send, recv);
    }
    let b = Blocks::new(n, p as u64);
    let blk = |k: u32| sub(recv, b.off(k as u64), b.len(k as u64));
    for pg in ps.iter_mut() {
        pg.copy(send, recv);
        let in0 = pg.tmp(b.early);
        let inb = [in0, if p > 2 { pg.tmp(b.early) } else { in0 }];
        ring_reduce(pg, p, inb, &blk);
        ring_gather(pg, p, &blk);
    }
}

/// `ompi_coll_base_allreduce_intra_ring_segmented`: the ring reduce-scatter
/// repeated over phases (each block split into `num_phases` pieces sized
/// from the segment size), then one ring allgather of whole blocks. Below p
/// segments it is the ring.
fn segmented_ring(ps: &mut [Prog], cx: &Ctx, send: Region, recv: Region) {
    let p = ps.len() as u32;
    let (n, p64) = (send.count, p as u64);
    let seg = cx.segcount();
    if n < p64 * seg {
        return ring(ps, send, recv);
    }
    let mut phases = n / (p64 * seg);
    let rest = n % (p64 * seg);
    if rest >= p64 && rest > (p64 * seg) / 2 {
        phases += 1;
    }
    let b = Blocks::new(n, p64);
    let max_seg = Blocks::new(b.early, phases).early;
    let blk = |k: u32| sub(recv, b.off(k as u64), b.len(k as u64));
    for pg in ps.iter_mut() {
        pg.copy(send, recv);
        let in0 = pg.tmp(max_seg);
        let inb = [in0, if p > 2 { pg.tmp(max_seg) } else { in0 }];
        for phase in 0..phases {
            let part = |k: u32| {
                let ph = Blocks::new(b.len(k as u64), phases);
                sub(recv, b.off(k as u64) + ph.off(phase), ph.len(phase))
            };
            ring_reduce(pg, p, inb, &part);
        }
        ring_gather(pg, p, &blk);
    }
}

/// `ompi_coll_base_allreduce_intra_redscat_allgather`: recursive-halving
/// reduce-scatter, recursive-doubling allgather over the same windows
/// backwards, and the result sent to the ranks folded out.
fn rabenseifner(ps: &mut [Prog], cx: &Ctx, send: Region, recv: Region) {
    let p = ps.len() as u32;
    let n = send.count;
    let (pof2, rem) = fold(p);
    if !cx.commutative || n < pof2 as u64 {
        return basic_linear(ps, send, recv);
    }
    let mut scratch = Vec::with_capacity(p as usize);
    for pg in ps.iter_mut() {
        scratch.push(pg.tmp(n));
        pg.copy(send, recv);
    }
    let work = vec![recv; p as usize];
    let wins = rsag::reduce_scatter(ps, n, &work, &scratch);
    for (pg, w) in ps.iter_mut().zip(wins) {
        let r = pg.me;
        if let Some(v) = w.vrank {
            let mut step = w.rindex.len();
            let mut mask = pof2 >> 1;
            while mask > 0 {
                step -= 1;
                let dest = rsag::real(v ^ mask, rem);
                let mine = sub(recv, w.rindex[step], w.rcount[step]);
                let theirs = sub(recv, w.sindex[step], w.scount[step]);
                pg.sendrecv(dest, mine, dest, theirs);
                mask >>= 1;
            }
        }
        if r < 2 * rem {
            if r % 2 != 0 {
                pg.recv(r - 1, recv);
            } else {
                pg.send(r + 1, recv);
            }
        }
    }
}
