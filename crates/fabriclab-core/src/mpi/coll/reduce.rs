//! MPI_Reduce algorithms of Open MPI's `coll_base_reduce.c`: basic linear,
//! the generic segmented tree reduce (`ompi_coll_base_reduce_generic`) over
//! chains, pipeline, binary and in-order binomial trees, the in-order binary
//! tree for non-commutative operators, and Rabenseifner's reduce-scatter +
//! binomial gather (`redscat_gather`).
//!
//! Reductions are `dst = src (op) dst` with the lower ranks' data on the
//! left wherever Open MPI keeps order. Left out: MPI_IN_PLACE, and the
//! synchronous mode of the sends of a leaf with limited outstanding
//! requests (modelled as standard sends).

use super::super::sched::{Rank, Region, StepId};
use super::prog::{sub, Prog};
use super::rsag::{self, fold};
use super::tree::{chain, in_order_bintree, in_order_bmtree, kary, nsegs, Tree};
use super::tuning::Ctx;
use crate::error::{arg_err, Result};

/// Reduce `sbuf` (every rank) into `rbuf` at `cx.root` (`rbuf` is only
/// used at the root).
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str, sbuf: Region, rbuf: Region) -> Result<()> {
    let (p, root) = (cx.p, cx.root);
    match alg {
        "linear" => linear(ps, root, sbuf, rbuf),
        "chain" => {
            let f = cx.tuning.reduce_chain_fanout;
            generic(ps, cx, sbuf, rbuf, root, |r| chain(p, root, r, f))
        }
        "pipeline" => generic(ps, cx, sbuf, rbuf, root, |r| chain(p, root, r, 1)),
        "binary" => generic(ps, cx, sbuf, rbuf, root, |r| kary(p, root, r, 2)),
        "binomial" => generic(ps, cx, sbuf, rbuf, root, |r| in_order_bmtree(p, root, r)),
        "in_order_binary" => {
            // The in-order tree is rooted at p-1; a different root gets the
            // result from there at the end.
            let io = p - 1;
            let acc = if io != root {
                ps[io as usize].tmp(sbuf.count)
            } else {
                rbuf
            };
            generic(ps, cx, sbuf, acc, io, |r| in_order_bintree(p, r));
            if io != root {
                ps[root as usize].recv(io, rbuf);
                ps[io as usize].send(root, acc);
            }
        }
        "rabenseifner" => rabenseifner(ps, cx, sbuf, rbuf),
        other => return arg_err(format!("{other:?} is not a reduce algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_reduce_intra_basic_linear`: everyone sends to the root,
/// which starts from rank p-1's data and folds in ranks p-2 .. 0 on the
/// left, receiving them one at a time into one scratch buffer.
pub(crate) fn linear(ps: &mut [Prog], root: Rank, sbuf: Region, rbuf: Region) {
    let p = ps.len() as u32;
    for pg in ps.iter_mut() {
        if pg.me != root {
            pg.send(root, sbuf);
            continue;
        }
        let tmp = pg.tmp(sbuf.count);
        if root == p - 1 {
            pg.copy(sbuf, rbuf);
        } else {
            pg.recv(p - 1, rbuf);
        }
        for i in (0..p - 1).rev() {
            if i == root {
                pg.reduce(sbuf, rbuf);
            } else {
                pg.recv(i, tmp);
                pg.reduce(tmp, rbuf);
            }
        }
    }
}

/// `ompi_coll_base_reduce_generic` over `tree` rooted at `troot`, whose
/// accumulator is `acc_root` (other inner nodes use scratch). Per segment,
/// an inner node receives from each child in turn (double-buffered, the
/// first child straight into the accumulator for commutative operators),
/// reduces as each arrives, and sends the segment up; leaves send their
/// segments with blocking sends (or a window of `reduce_max_requests`).
fn generic(
    ps: &mut [Prog],
    cx: &Ctx,
    sbuf: Region,
    acc_root: Region,
    troot: Rank,
    tree: impl Fn(Rank) -> Tree,
) {
    let n = sbuf.count;
    let seg = cx.segcount();
    let ns = nsegs(n, seg);
    let comm = cx.commutative;
    let len = |s: u64| if s + 1 == ns { n - s * seg } else { seg };
    for pg in ps.iter_mut() {
        let t = tree(pg.me);
        if t.children.is_empty() {
            let parent = t.parent.expect("a leaf has a parent");
            leaf(
                pg,
                parent,
                sbuf,
                seg,
                ns,
                cx.tuning.reduce_max_requests as u64,
            );
            continue;
        }
        let nch = t.children.len();
        let accum = if pg.me == troot { acc_root } else { pg.tmp(n) };
        if !comm {
            pg.copy(sbuf, accum);
        }
        let in0 = pg.tmp(seg);
        let inb = [in0, if ns > 1 || nch > 1 { pg.tmp(seg) } else { in0 }];
        let mut reqs: [Option<StepId>; 2] = [None, None];
        let (mut inbi, mut recvcount) = (0usize, 0u64);
        'segments: for s in 0..=ns {
            let prevcount = recvcount;
            recvcount = if s < ns { len(s) } else { seg };
            for (i, &child) in t.children.iter().enumerate() {
                if s < ns {
                    let dst = if i == 0 && comm {
                        sub(accum, s * seg, recvcount)
                    } else {
                        sub(inb[inbi], 0, recvcount)
                    };
                    reqs[inbi] = Some(pg.irecv(child, dst));
                }
                if let Some(q) = reqs[inbi ^ 1].take() {
                    pg.wait(&[q]);
                }
                if i > 0 {
                    let src = if i == 1 && comm {
                        sub(sbuf, s * seg, recvcount)
                    } else {
                        sub(inb[inbi ^ 1], 0, recvcount)
                    };
                    pg.reduce(src, sub(accum, s * seg, recvcount));
                } else if s > 0 {
                    let src = if nch <= 1 && comm {
                        sub(sbuf, (s - 1) * seg, prevcount)
                    } else {
                        sub(inb[inbi ^ 1], 0, prevcount)
                    };
                    let acc = sub(accum, (s - 1) * seg, prevcount);
                    pg.reduce(src, acc);
                    if let Some(parent) = t.parent {
                        pg.send(parent, acc);
                    }
                    if s == ns {
                        break 'segments;
                    }
                }
                inbi ^= 1;
            }
        }
    }
}

/// A leaf of the generic reduce: blocking segment sends, or at most
/// `max_reqs` outstanding when that limit is below the segment count.
fn leaf(pg: &mut Prog, parent: Rank, sbuf: Region, seg: u64, ns: u64, max_reqs: u64) {
    let n = sbuf.count;
    let part = |s: u64| sub(sbuf, s * seg, if s + 1 == ns { n - s * seg } else { seg });
    if max_reqs == 0 || ns <= max_reqs {
        (0..ns).for_each(|s| pg.send(parent, part(s)));
        return;
    }
    let mut slots: Vec<StepId> = (0..max_reqs).map(|s| pg.isend(parent, part(s))).collect();
    let mut c = 0;
    for s in max_reqs..ns {
        pg.wait(&[slots[c]]);
        slots[c] = pg.isend(parent, part(s));
        c = (c + 1) % max_reqs as usize;
    }
    pg.wait(&slots);
}

/// `ompi_coll_base_reduce_intra_redscat_gather`: recursive-halving
/// reduce-scatter, then a binomial gather of the pieces to the root along
/// the same windows backwards. An odd root below 2r (one that dropped out)
/// takes the place of virtual rank 0. Falls back to basic linear for
/// non-commutative operators or counts under p'.
fn rabenseifner(ps: &mut [Prog], cx: &Ctx, sbuf: Region, rbuf: Region) {
    let (p, root, n) = (cx.p, cx.root, sbuf.count);
    let (pof2, rem) = fold(p);
    if pof2 < 2 || n < pof2 as u64 || !cx.commutative {
        return linear(ps, root, sbuf, rbuf);
    }
    let nsteps = pof2.trailing_zeros() as usize;
    let mut work = Vec::with_capacity(p as usize);
    let mut scratch = Vec::with_capacity(p as usize);
    for pg in ps.iter_mut() {
        scratch.push(pg.tmp(n));
        let w = if pg.me == root { rbuf } else { pg.tmp(n) };
        pg.copy(sbuf, w);
        work.push(w);
    }
    let wins = rsag::reduce_scatter(ps, n, &work, &scratch);
    let odd_root = root < 2 * rem && root % 2 != 0;
    let vroot = if root < 2 * rem {
        if odd_root {
            0
        } else {
            root / 2
        }
    } else {
        root - rem
    };
    for (pg, mut w) in ps.iter_mut().zip(wins) {
        let wk = work[pg.me as usize];
        if odd_root && pg.me == root {
            // Take over virtual rank 0's windows (always the lower half).
            let mut wsize = n;
            w.rcount = Vec::new();
            w.scount = Vec::new();
            for _ in 0..nsteps {
                w.rcount.push(wsize / 2);
                w.scount.push(wsize - wsize / 2);
                wsize /= 2;
            }
            w.rindex = vec![0; nsteps];
            w.sindex = w.rcount.clone();
            pg.recv(0, sub(wk, 0, w.rcount[nsteps - 1]));
            w.vrank = Some(0);
        } else if odd_root && w.vrank == Some(0) {
            pg.send(root, sub(wk, 0, w.rcount[nsteps - 1]));
            w.vrank = None;
        }
        let Some(v) = w.vrank else { continue };
        let mut step = nsteps;
        let mut mask = pof2 >> 1;
        while mask > 0 {
            step -= 1;
            let vdest = v ^ mask;
            let dest = if vdest == 0 && odd_root {
                root
            } else {
                rsag::real(vdest, rem)
            };
            if (vdest >> step) << step == (vroot >> step) << step {
                pg.send(dest, sub(wk, w.rindex[step], w.rcount[step]));
                break;
            }
            pg.recv(dest, sub(wk, w.sindex[step], w.scount[step]));
            mask >>= 1;
        }
    }
}
