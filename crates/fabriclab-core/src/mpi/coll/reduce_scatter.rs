//! MPI_Reduce_scatter algorithms of Open MPI's `coll_base_reduce_scatter.c`
//! (nonoverlapping = the selected reduce to rank 0 + linear scatterv,
//! recursive halving, ring, butterfly) and MPICH's pairwise exchange
//! (`MPIR_Reduce_scatter_intra_pairwise`).
//!
//! Rank r receives `count / p` elements, the first `count % p` ranks one
//! more (IMB's split). Recursive halving, ring and pairwise reduce in
//! arrival order (commutative operators only, as in the libraries);
//! butterfly keeps rank order. Left out: MPI_IN_PLACE.

use super::super::sched::{Buf, Region, StepId};
use super::prog::{sub, whole, Prog};
use super::rsag::fold;
use super::tuning::Ctx;
use super::{gather, reduce, Coll};
use crate::error::{arg_err, Result};

/// Elements rank r receives out of `count` over `p` ranks.
pub fn block(count: u64, p: u32, r: u32) -> u64 {
    count / p as u64 + u64::from((r as u64) < count % p as u64)
}

/// Reduce-scatter of `cx.count` elements from Send into Recv.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str) -> Result<()> {
    let (p, n) = (cx.p, cx.count);
    let counts: Vec<u64> = (0..p).map(|r| block(n, p, r)).collect();
    let mut displs = vec![0u64; p as usize];
    for r in 1..p as usize {
        displs[r] = displs[r - 1] + counts[r - 1];
    }
    let send = whole(Buf::Send, n);
    let recv = whole(Buf::Recv, counts[0]);
    let out = |r: u32| sub(recv, 0, counts[r as usize]);
    match alg {
        // ompi_coll_base_reduce_scatter_intra_nonoverlapping.
        "nonoverlapping" => {
            let full = ps[0].tmp(n);
            let rc = cx.sub(Coll::Reduce, n, 0);
            reduce::run(ps, &rc, rc.pick(), send, full)?;
            gather::scatterv_linear(ps, 0, full, &counts, recv);
        }
        "recursive_halving" => recursive_halving(ps, send, &counts, &displs, &out),
        "ring" => ring(ps, send, &counts, &displs, &out),
        "butterfly" => butterfly(ps, send, &counts, &displs, &out),
        // MPIR_Reduce_scatter_intra_pairwise: own block first, then p-1
        // sendrecvs (send the block of r+i, receive mine from r-i).
        "pairwise" => {
            for pg in ps.iter_mut() {
                let r = pg.me;
                let mine = |i: u32| sub(send, displs[i as usize], counts[i as usize]);
                pg.copy(mine(r), out(r));
                let tmp = pg.tmp(counts[r as usize]);
                for i in 1..p {
                    let (src, dst) = ((r + p - i) % p, (r + i) % p);
                    pg.sendrecv(dst, mine(dst), src, tmp);
                    pg.reduce(tmp, out(r));
                }
            }
        }
        other => return arg_err(format!("{other:?} is not a reduce_scatter algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_reduce_scatter_intra_basic_recursivehalving`: fold to
/// p' ranks (even ranks below 2r send everything to the odd ones), halve
/// the block range log2 p' times (empty halves are not sent), then the odd
/// ranks pass the even ones their blocks.
fn recursive_halving(
    ps: &mut [Prog],
    send: Region,
    counts: &[u64],
    displs: &[u64],
    out: &dyn Fn(u32) -> Region,
) {
    let p = ps.len() as u32;
    let n = send.count;
    let (pof2, rem) = fold(p);
    let tcounts: Vec<u64> = (0..pof2 as usize)
        .map(|i| {
            if i < rem as usize {
                counts[2 * i] + counts[2 * i + 1]
            } else {
                counts[i + rem as usize]
            }
        })
        .collect();
    let mut tdispl = vec![0u64; pof2 as usize + 1];
    for i in 0..pof2 as usize {
        tdispl[i + 1] = tdispl[i] + tcounts[i];
    }
    for pg in ps.iter_mut() {
        let r = pg.me;
        let (rbuf, res) = (pg.tmp(n), pg.tmp(n));
        pg.copy(send, res);
        let tr = if r < 2 * rem {
            if r % 2 == 0 {
                pg.send(r + 1, res);
                None
            } else {
                pg.recv(r - 1, rbuf);
                pg.reduce(rbuf, res);
                Some(r / 2)
            }
        } else {
            Some(r - rem)
        };
        if let Some(tr) = tr {
            let (mut si, mut ri, mut last) = (0usize, 0usize, pof2 as usize);
            let mut mask = pof2 as usize >> 1;
            while mask > 0 {
                let tp = tr as usize ^ mask;
                let peer = if tp < rem as usize {
                    tp * 2 + 1
                } else {
                    tp + rem as usize
                } as u32;
                let (scount, rcount) = if (tr as usize) < tp {
                    si = ri + mask;
                    (tdispl[last] - tdispl[si], tdispl[si] - tdispl[ri])
                } else {
                    ri = si + mask;
                    (tdispl[ri] - tdispl[si], tdispl[last] - tdispl[ri])
                };
                let landing = sub(rbuf, tdispl[ri], rcount);
                let req = (rcount > 0).then(|| pg.irecv(peer, landing));
                if scount > 0 {
                    pg.send(peer, sub(res, tdispl[si], scount));
                }
                if let Some(q) = req {
                    pg.wait(&[q]);
                    pg.reduce(landing, sub(res, tdispl[ri], rcount));
                }
                si = ri;
                last = ri + mask;
                mask >>= 1;
            }
            pg.copy(sub(res, displs[r as usize], counts[r as usize]), out(r));
        }
        if r < 2 * rem {
            if r % 2 == 0 {
                if counts[r as usize] > 0 {
                    pg.recv(r + 1, out(r));
                }
            } else if counts[r as usize - 1] > 0 {
                let theirs = sub(res, displs[r as usize - 1], counts[r as usize - 1]);
                pg.send(r - 1, theirs);
            }
        }
    }
}

/// `ompi_coll_base_reduce_scatter_intra_ring`: the allreduce ring's
/// reduce-scatter half on the user's uneven blocks, through a full-size
/// accumulator and two receive buffers of the largest block.
fn ring(
    ps: &mut [Prog],
    send: Region,
    counts: &[u64],
    displs: &[u64],
    out: &dyn Fn(u32) -> Region,
) {
    let p = ps.len() as u32;
    let most = counts.iter().copied().max().unwrap_or(0);
    for pg in ps.iter_mut() {
        let r = pg.me;
        let acc = pg.tmp(send.count);
        let in0 = pg.tmp(most);
        let inb = [in0, if p > 2 { pg.tmp(most) } else { in0 }];
        let blk = |b: u32| sub(acc, displs[b as usize], counts[b as usize]);
        let slot = |i: usize, b: u32| sub(inb[i], 0, counts[b as usize]);
        pg.copy(send, acc);
        let (to, from) = ((r + 1) % p, (r + p - 1) % p);
        let mut reqs: [Option<StepId>; 2] = [Some(pg.irecv(from, slot(0, (r + p - 2) % p))), None];
        pg.send(to, blk(from));
        let mut inbi = 0;
        for k in 2..p {
            let prev = (r + p - k) % p;
            inbi ^= 1;
            reqs[inbi] = Some(pg.irecv(from, slot(inbi, (r + 2 * p - 1 - k) % p)));
            pg.wait(&[reqs[inbi ^ 1].take().unwrap()]);
            pg.reduce(slot(inbi ^ 1, prev), blk(prev));
            pg.send(to, blk(prev));
        }
        pg.wait(&[reqs[inbi].take().unwrap()]);
        pg.reduce(slot(inbi, r), blk(r));
        pg.copy(blk(r), out(r));
    }
}

/// Reverse the low `bits` bits of `x` (`ompi_mirror_perm`).
fn mirror(x: u32, bits: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (32 - bits)
    }
}

/// `ompi_coll_base_reduce_scatter_intra_butterfly` (Träff): fold to p'
/// ranks (even ranks below 2r drop out), a butterfly on halving block
/// ranges reducing in rank order, then results travel to their owners along
/// the mirror permutation (the folded ranks get theirs from there).
fn butterfly(
    ps: &mut [Prog],
    send: Region,
    counts: &[u64],
    displs: &[u64],
    out: &dyn Fn(u32) -> Region,
) {
    let p = ps.len() as u32;
    let n = send.count;
    let (pof2, rem) = fold(p);
    let bits = pof2.trailing_zeros();
    let first = |b: u32| if b < rem { 2 * b } else { rem + b } as usize;
    let last = |b: u32| if b < rem { 2 * b + 1 } else { b + rem } as usize;
    let span = |lo: u32, hi: u32| displs[last(hi)] + counts[last(hi)] - displs[first(lo)];
    let peer_of = |v: u32| if v < rem { v * 2 + 1 } else { v + rem };
    for pg in ps.iter_mut() {
        let r = pg.me;
        let (mut psend, mut precv) = (pg.tmp(n), pg.tmp(n));
        pg.copy(send, psend);
        let vrank = if r < 2 * rem {
            if r % 2 == 0 {
                pg.send(r + 1, psend);
                None
            } else {
                pg.recv(r - 1, precv);
                pg.reduce(precv, psend);
                Some(r / 2)
            }
        } else {
            Some(r - rem)
        };
        let Some(v) = vrank else {
            // Open MPI's (rank + 1) / 2, the same for these even ranks.
            let peer = peer_of(mirror(r / 2, bits));
            pg.recv(peer, out(r));
            continue;
        };
        let (mut nblocks, mut si, mut ri) = (pof2, 0u32, 0u32);
        let mut mask = 1;
        while mask < pof2 {
            let vpeer = v ^ mask;
            let peer = peer_of(vpeer);
            nblocks /= 2;
            if v & mask == 0 {
                si += nblocks;
            } else {
                ri += nblocks;
            }
            let s = sub(psend, displs[first(si)], span(si, si + nblocks - 1));
            let (rd, rn) = (displs[first(ri)], span(ri, ri + nblocks - 1));
            pg.sendrecv(peer, s, peer, sub(precv, rd, rn));
            if v < vpeer {
                pg.reduce(sub(psend, rd, rn), sub(precv, rd, rn));
                std::mem::swap(&mut psend, &mut precv);
            } else {
                pg.reduce(sub(precv, rd, rn), sub(psend, rd, rn));
            }
            si = ri;
            mask <<= 1;
        }
        let vpeer = mirror(v, bits);
        let peer = peer_of(vpeer);
        let mut index = first(si);
        let piece = |i: usize| sub(psend, displs[i], counts[i]);
        if vpeer < rem {
            pg.send(peer - 1, piece(index));
            index += 1;
        }
        if vpeer != v {
            pg.sendrecv(peer, piece(index), peer, out(r));
        } else {
            pg.copy(piece(r as usize), out(r));
        }
    }
}
