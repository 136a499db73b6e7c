//! MPI_Gather and MPI_Scatter algorithms of Open MPI's `coll_base_gather.c`
//! and `coll_base_scatter.c` (basic linear, in-order binomial tree,
//! linear_sync with its zero-byte go-ahead and first segment, linear_nb),
//! and the linear MPI_Scatterv of coll/basic used under reduce_scatter.
//!
//! Binomial trees work on ranks shifted by the root; a root other than 0
//! gathers into (scatters from) a scratch buffer in shifted order and
//! rotates it, as Open MPI does. Left out: MPI_IN_PLACE.

use super::super::sched::{Buf, Rank, Region};
use super::prog::{sub, whole, Prog};
use super::tree::{in_order_bmtree, segcount};
use super::tuning::Ctx;
use crate::error::{arg_err, Result};

/// Gather or scatter of `cx.count` elements per rank, Send to Recv.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str, scatter: bool) -> Result<()> {
    let (p, c) = (cx.p as u64, cx.count);
    if scatter {
        run_scatter(ps, cx, alg, whole(Buf::Send, p * c), whole(Buf::Recv, c))
    } else {
        run_gather(ps, cx, alg, whole(Buf::Send, c), whole(Buf::Recv, p * c))
    }
}

/// Gather `sbuf` of every rank into `rbuf` (p blocks) at `cx.root`.
pub(crate) fn run_gather(
    ps: &mut [Prog],
    cx: &Ctx,
    alg: &str,
    sbuf: Region,
    rbuf: Region,
) -> Result<()> {
    let (p, root, c) = (cx.p, cx.root, cx.count);
    let blk = |i: u32| sub(rbuf, i as u64 * c, c);
    match alg {
        // ompi_coll_base_gather_intra_basic_linear: blocking receives in
        // rank order.
        "basic_linear" => {
            for pg in ps.iter_mut() {
                if pg.me != root {
                    pg.send(root, sbuf);
                    continue;
                }
                for i in 0..p {
                    if i == root {
                        pg.copy(sbuf, blk(i));
                    } else {
                        pg.recv(i, blk(i));
                    }
                }
            }
        }
        "binomial" => gather_binomial(ps, root, sbuf, rbuf),
        // ompi_coll_base_gather_intra_linear_sync: each non-root waits for
        // a zero-byte go-ahead, then sends a first segment and the rest; the
        // root posts both receives, sends the go-ahead and waits for the
        // first segment before moving to the next rank.
        "linear_sync" => {
            let first = segcount(cx.seg_bytes, cx.elem_bytes, c);
            let nothing = sub(rbuf, 0, 0);
            for pg in ps.iter_mut() {
                if pg.me != root {
                    pg.recv(root, nothing);
                    pg.send(root, sub(sbuf, 0, first));
                    pg.send(root, sub(sbuf, first, c - first));
                    continue;
                }
                let mut rest = Vec::new();
                for i in (0..p).filter(|&i| i != root) {
                    let head = pg.irecv(i, sub(blk(i), 0, first));
                    pg.send(i, nothing);
                    rest.push(pg.irecv(i, sub(blk(i), first, c - first)));
                    pg.wait(&[head]);
                }
                pg.copy(sbuf, blk(root));
                pg.wait(&rest);
            }
        }
        other => return arg_err(format!("{other:?} is not a gather algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_gather_intra_binomial`: inner nodes (even shifted rank)
/// collect their subtree behind their own block, one blocking receive per
/// child, and send it all up.
fn gather_binomial(ps: &mut [Prog], root: Rank, sbuf: Region, rbuf: Region) {
    let p = ps.len() as u32;
    let c = sbuf.count;
    for pg in ps.iter_mut() {
        let r = pg.me;
        let t = in_order_bmtree(p, root, r);
        let v = (r + p - root) % p;
        let buf = if r == root && root == 0 {
            rbuf
        } else if v % 2 == 0 {
            pg.tmp(p as u64 * c)
        } else {
            sbuf
        };
        if v % 2 == 0 {
            pg.copy(sbuf, sub(buf, 0, c));
            let mut total = c;
            for &child in &t.children {
                let vk = (child + p - root) % p;
                let n = (vk - v).min(p - vk) as u64 * c;
                pg.recv(child, sub(buf, total, n));
                total += n;
            }
            if let Some(parent) = t.parent {
                pg.send(parent, sub(buf, 0, total));
            }
        } else {
            pg.send(t.parent.expect("odd shifted ranks are leaves"), sbuf);
        }
        if r == root && root != 0 {
            let (head, tail) = ((p - root) as u64 * c, root as u64 * c);
            pg.copy(sub(buf, 0, head), sub(rbuf, tail, head));
            pg.copy(sub(buf, head, tail), sub(rbuf, 0, tail));
        }
    }
}

/// Scatter `sbuf` (p blocks, at `cx.root`) into `rbuf` of every rank.
fn run_scatter(ps: &mut [Prog], cx: &Ctx, alg: &str, sbuf: Region, rbuf: Region) -> Result<()> {
    let (p, root, c) = (cx.p, cx.root, cx.count);
    let blk = |i: u32| sub(sbuf, i as u64 * c, c);
    match alg {
        // ompi_coll_base_scatter_intra_basic_linear: blocking sends in rank
        // order. ompi_coll_base_scatter_intra_linear_nb: isends, every n-th
        // one blocking (n = scatter_blocking_send_ratio, 0: none), then
        // wait for all.
        "basic_linear" | "linear_nb" => {
            let nb = alg == "linear_nb";
            let ratio = cx.tuning.scatter_blocking_send_ratio;
            let ratio = if ratio <= 1 { 0 } else { ratio };
            for pg in ps.iter_mut() {
                if pg.me != root {
                    pg.recv(root, rbuf);
                    continue;
                }
                let mut reqs = Vec::new();
                for i in 0..p {
                    if i == root {
                        pg.copy(blk(i), rbuf);
                    } else if nb && (ratio == 0 || i % ratio != 0) {
                        reqs.push(pg.isend(i, blk(i)));
                    } else {
                        pg.send(i, blk(i));
                    }
                }
                pg.wait(&reqs);
            }
        }
        "binomial" => scatter_binomial(ps, root, sbuf, rbuf),
        other => return arg_err(format!("{other:?} is not a scatter algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_scatter_intra_binomial`: the mirror image of the
/// binomial gather (a root other than 0 first rotates its buffer).
fn scatter_binomial(ps: &mut [Prog], root: Rank, sbuf: Region, rbuf: Region) {
    let p = ps.len() as u32;
    let c = rbuf.count;
    for pg in ps.iter_mut() {
        let r = pg.me;
        let t = in_order_bmtree(p, root, r);
        let v = (r + p - root) % p;
        if v % 2 != 0 {
            pg.recv(t.parent.expect("odd shifted ranks are leaves"), rbuf);
            continue;
        }
        let buf = if r == root && root == 0 {
            sbuf
        } else {
            pg.tmp(p as u64 * c)
        };
        if r == root {
            if root != 0 {
                let (head, tail) = ((p - root) as u64 * c, root as u64 * c);
                pg.copy(sub(sbuf, tail, head), sub(buf, 0, head));
                pg.copy(sub(sbuf, 0, tail), sub(buf, head, tail));
            }
        } else {
            let n = (v & v.wrapping_neg()).min(p - v) as u64 * c;
            pg.recv(t.parent.expect("non-root"), sub(buf, 0, n));
        }
        pg.copy(sub(buf, 0, c), rbuf);
        let mut total = c;
        for &child in &t.children {
            let vk = (child + p - root) % p;
            let n = (vk - v).min(p - vk) as u64 * c;
            pg.send(child, sub(buf, total, n));
            total += n;
        }
    }
}

/// coll/basic's `mca_coll_basic_scatterv_intra`: the root sends each
/// non-empty block with a blocking send in rank order; empty blocks are
/// skipped on both sides. `counts[i]` elements from `src` at `displ[i]`.
pub(crate) fn scatterv_linear(
    ps: &mut [Prog],
    root: Rank,
    src: Region,
    counts: &[u64],
    dst: Region,
) {
    let mut displ = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &n in counts {
        displ.push(at);
        at += n;
    }
    for pg in ps.iter_mut() {
        let r = pg.me as usize;
        if pg.me != root {
            if counts[r] > 0 {
                pg.recv(root, sub(dst, 0, counts[r]));
            }
            continue;
        }
        for (i, (&n, &d)) in counts.iter().zip(&displ).enumerate() {
            if n == 0 {
                continue;
            }
            if i == r {
                pg.copy(sub(src, d, n), sub(dst, 0, n));
            } else {
                pg.send(i as Rank, sub(src, d, n));
            }
        }
    }
}
