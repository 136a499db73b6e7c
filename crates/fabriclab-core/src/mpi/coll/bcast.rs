//! MPI_Bcast algorithms of Open MPI's `coll_base_bcast.c`: basic linear,
//! the generic segmented tree pipeline (`ompi_coll_base_bcast_intra_generic`)
//! over chains, pipeline, binary, binomial and k-nomial trees, the split
//! binary tree, and the binomial-scatter + allgather variants (recursive
//! doubling and ring, as MPICH's scatter_*_allgather).
//!
//! The broadcast buffer is the same region at every rank (the root's holds
//! the data). Receive sizes are exact (Open MPI posts upper bounds and reads
//! the received size from the status; here the sizes are computed the way
//! the senders compute them).

use super::super::sched::{Rank, Region};
use super::prog::{sub, Prog};
use super::tree::{self, bmtree, chain, kary, kmtree, nsegs, Tree};
use super::tuning::Ctx;
use crate::error::{arg_err, Result};

/// Broadcast `buf` (the same region at every rank) from `cx.root`.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str, buf: Region) -> Result<()> {
    let (p, root) = (cx.p, cx.root);
    let seg = cx.segcount();
    match alg {
        "basic_linear" => linear(ps, root, buf),
        "chain" => {
            let f = cx.tuning.bcast_chain_fanout;
            generic(ps, buf, seg, |r| chain(p, root, r, f))
        }
        "pipeline" => generic(ps, buf, seg, |r| chain(p, root, r, 1)),
        "split_binary_tree" => split_bintree(ps, cx, buf),
        "binary_tree" => generic(ps, buf, seg, |r| kary(p, root, r, 2)),
        "binomial" => generic(ps, buf, seg, |r| bmtree(p, root, r)),
        "knomial" => {
            let k = cx.tuning.knomial_radix;
            generic(ps, buf, seg, |r| kmtree(p, root, r, k))
        }
        "scatter_allgather" => scatter_allgather(ps, cx, buf, false),
        "scatter_allgather_ring" => scatter_allgather(ps, cx, buf, true),
        other => return arg_err(format!("{other:?} is not a bcast algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_bcast_intra_basic_linear`: the root isends to every
/// other rank and waits for all.
pub(crate) fn linear(ps: &mut [Prog], root: Rank, buf: Region) {
    let p = ps.len() as u32;
    for pg in ps.iter_mut() {
        if pg.me == root {
            let reqs: Vec<_> = (0..p)
                .filter(|&i| i != root)
                .map(|i| pg.isend(i, buf))
                .collect();
            pg.wait(&reqs);
        } else {
            pg.recv(root, buf);
        }
    }
}

/// `ompi_coll_base_bcast_intra_generic`: segments flow down `tree`; an
/// inner node posts the receive of segment s+1 before forwarding segment s
/// to all its children and waiting for those sends.
pub(crate) fn generic(ps: &mut [Prog], buf: Region, seg: u64, tree: impl Fn(Rank) -> Tree) {
    let n = buf.count;
    let ns = nsegs(n, seg);
    let part = |s: u64| sub(buf, s * seg, if s + 1 == ns { n - s * seg } else { seg });
    for pg in ps.iter_mut() {
        let t = tree(pg.me);
        let forward = |pg: &mut Prog, s: u64| {
            let reqs: Vec<_> = t.children.iter().map(|&c| pg.isend(c, part(s))).collect();
            pg.wait(&reqs);
        };
        match t.parent {
            None => (0..ns).for_each(|s| forward(pg, s)),
            Some(parent) => {
                let mut prev = pg.irecv(parent, part(0));
                for s in 1..ns {
                    let cur = pg.irecv(parent, part(s));
                    pg.wait(&[prev]);
                    if !t.children.is_empty() {
                        forward(pg, s - 1);
                    }
                    prev = cur;
                }
                pg.wait(&[prev]);
                if !t.children.is_empty() {
                    forward(pg, ns - 1);
                }
            }
        }
    }
}

/// `ompi_coll_base_bcast_intra_split_bintree`: the root sends the first
/// half down the left subtree of a binary tree and the second half down the
/// right one (blocking sends, segmented), then every left node swaps halves
/// with its right twin; for an even size the last rank gets its missing half
/// from the root. Messages under two elements (or under a segment) fall
/// back to the pipeline.
fn split_bintree(ps: &mut [Prog], cx: &Ctx, buf: Region) {
    let (p, root, n, eb) = (cx.p, cx.root, buf.count, cx.elem_bytes as u64);
    let mut seg_bytes = cx.seg_bytes;
    let counts = [n.div_ceil(2), n / 2];
    let (segc, nseg) = if seg_bytes > 0 {
        seg_bytes = seg_bytes.max(eb);
        let sc = seg_bytes / eb;
        ([sc, sc], [nsegs(counts[0], sc), nsegs(counts[1], sc)])
    } else {
        (counts, [1, 1])
    };
    if counts[1] == 0 || seg_bytes > counts[1] * eb {
        let sc = tree::segcount(seg_bytes, cx.elem_bytes, n);
        return generic(ps, buf, sc, |r| chain(p, root, r, 1));
    }
    let half = [sub(buf, 0, counts[0]), sub(buf, counts[0], counts[1])];
    let part = |h: usize, s: u64| {
        let len = if s + 1 == nseg[h] {
            counts[h] - s * segc[h]
        } else {
            segc[h]
        };
        sub(half[h], s * segc[h], len)
    };
    for pg in ps.iter_mut() {
        let me = pg.me;
        let t = kary(p, root, me, 2);
        let lr = (((me + p - root) % p + 1) % 2) as usize;
        if me == root {
            for s in 0..nseg[0] {
                for (h, &c) in t.children.iter().enumerate().take(2) {
                    if s < nseg[h] {
                        pg.send(c, part(h, s));
                    }
                }
            }
        } else {
            let parent = t.parent.expect("non-root has a parent");
            if t.children.is_empty() {
                (0..nseg[lr]).for_each(|s| pg.recv(parent, part(lr, s)));
            } else {
                let mut base = pg.irecv(parent, part(lr, 0));
                for s in 1..nseg[lr] {
                    let next = pg.irecv(parent, part(lr, s));
                    pg.wait(&[base]);
                    t.children.iter().for_each(|&c| pg.send(c, part(lr, s - 1)));
                    base = next;
                }
                pg.wait(&[base]);
                t.children
                    .iter()
                    .for_each(|&c| pg.send(c, part(lr, nseg[lr] - 1)));
            }
        }
        // Step 2: swap halves with the twin in the other subtree.
        let pair = if lr == 0 {
            (me + 1) % p
        } else {
            (me + p - 1) % p
        };
        let last = (root + p - 1) % p;
        if p % 2 != 0 {
            if me != root {
                pg.sendrecv(pair, half[lr], pair, half[1 - lr]);
            }
        } else if me == root {
            pg.send(last, half[1]);
        } else if me == last {
            pg.recv(root, half[1]);
        } else {
            pg.sendrecv(pair, half[lr], pair, half[1 - lr]);
        }
    }
}

/// `ompi_coll_base_bcast_intra_scatter_allgather(_ring)`: a binomial-tree
/// scatter of ceil(count/p)-element blocks, then a recursive-doubling
/// allgather (with the recursive-halving patch-up for non-powers of two)
/// or a ring allgather. Counts under p fall back to basic linear.
fn scatter_allgather(ps: &mut [Prog], cx: &Ctx, buf: Region, ring: bool) {
    let (p, root, n) = (cx.p, cx.root, buf.count);
    let p64 = p as u64;
    if n < p64 {
        return linear(ps, root, buf);
    }
    let sc = n.div_ceil(p64);
    let rect = |a: u64, b: u64| a.saturating_sub(b);
    // Block range [off, off + len) of the buffer, clamped when empty.
    let blk = |off: u64, len: u64| sub(buf, if len == 0 { off.min(n) } else { off }, len);
    let real = |v: u32| (v + root) % p;
    // ps[r] is rank r's program.
    let at = |v: u32| real(v) as usize;

    // Binomial scatter, vranks in increasing order (parents first).
    let mut got = vec![0u64; p as usize];
    got[0] = n;
    for v in 0..p {
        let pg = &mut ps[at(v)];
        let mut curr = got[v as usize];
        let mut mask = if v == 0 {
            tree::next_pow2(p - 1)
        } else {
            v & v.wrapping_neg()
        };
        if v != 0 && rect(n, v as u64 * sc) > 0 {
            pg.recv(real(v - mask), blk(v as u64 * sc, curr));
        }
        mask >>= 1;
        while mask > 0 {
            if v + mask < p {
                let amount = rect(curr, sc * mask as u64);
                if amount > 0 {
                    got[(v + mask) as usize] = amount;
                    pg.send(real(v + mask), blk(sc * (v + mask) as u64, amount));
                    curr -= amount;
                }
            }
            mask >>= 1;
        }
    }
    let mine = |v: u32| sc.min(rect(n, v as u64 * sc));

    if ring {
        for v in 0..p {
            let pg = &mut ps[at(v)];
            let (left, right) = ((pg.me + p - 1) % p, (pg.me + 1) % p);
            let (mut sb, mut rb) = (v, (v + p - 1) % p);
            for _ in 1..p {
                let s = blk(sb as u64 * sc, mine(sb));
                let r = blk(rb as u64 * sc, mine(rb));
                pg.sendrecv(right, s, left, r);
                sb = rb;
                rb = (rb + p - 1) % p;
            }
        }
        return;
    }

    // Recursive doubling, in lockstep over ranks (sizes depend on peers).
    let mut curr: Vec<u64> = (0..p).map(mine).collect();
    let mut last = vec![0u64; p as usize];
    let down = |x: u32, m: u32| x / m * m;
    let mut mask = 1u32;
    while mask < p {
        let before = curr.clone();
        for v in 0..p {
            let vr = v ^ mask;
            if vr < p {
                let pg = &mut ps[at(v)];
                let s = blk(down(v, mask) as u64 * sc, before[v as usize]);
                let r = blk(down(vr, mask) as u64 * sc, before[vr as usize]);
                pg.sendrecv(real(vr), s, real(vr), r);
                curr[v as usize] += before[vr as usize];
                last[v as usize] = before[vr as usize];
            }
        }
        // Ranks of a lower subtree whose upper partner subtree is cut short
        // forward the upper data among themselves by recursive halving.
        let mut rh = mask >> 1;
        while rh > 0 {
            let mut recvs = Vec::new();
            for v in 0..p {
                let t = down(v, mask);
                if down(v ^ mask, mask) as u64 + mask as u64 <= p as u64 {
                    continue;
                }
                let have = p as i64 - t as i64 - mask as i64;
                let off = sc * (t + mask) as u64;
                let (vr, tr) = (v ^ rh, down(v, rh << 1) as i64);
                let pg = &mut ps[at(v)];
                if vr > v && (v as i64) < tr + have && vr as i64 >= tr + have {
                    pg.send(real(vr), blk(off, last[v as usize]));
                } else if vr < v && (vr as i64) < tr + have && v as i64 >= tr + have {
                    let amount = last[vr as usize];
                    pg.recv(real(vr), blk(off, amount));
                    recvs.push((v, amount));
                }
            }
            for (v, amount) in recvs {
                last[v as usize] = amount;
                curr[v as usize] += amount;
            }
            rh >>= 1;
        }
        mask <<= 1;
    }
}
