//! Rabenseifner's recursive-halving reduce-scatter, the first half of
//! Open MPI's `ompi_coll_base_allreduce_intra_redscat_allgather` and
//! `ompi_coll_base_reduce_intra_redscat_gather` (identical there).
//!
//! Step 1 folds a non-power-of-two communicator onto p' = 2^floor(log2 p)
//! ranks: in each of the first 2r pairs the even rank keeps the lower half
//! of the vector and the odd rank the upper half, they swap halves, reduce,
//! and the odd rank sends its reduced half to the even one and drops out.
//! Step 2 halves the window and doubles the distance log2 p' times. The
//! allgather (allreduce) or binomial gather (reduce) that follows walks the
//! same windows backwards, so they are returned per rank.

use super::super::sched::Region;
use super::prog::{sub, Prog};
use super::tree::floor_pow2;

/// One rank's windows after the reduce-scatter (only meaningful when
/// `vrank` is Some).
#[derive(Clone, Debug, Default)]
pub(crate) struct Windows {
    /// Rank among the p' remaining ones (None: dropped out in step 1).
    pub vrank: Option<u32>,
    /// Per step: start of the half kept.
    pub rindex: Vec<u64>,
    /// Per step: size of the half kept.
    pub rcount: Vec<u64>,
    /// Per step: start of the half given away.
    pub sindex: Vec<u64>,
    /// Per step: size of the half given away.
    pub scount: Vec<u64>,
}

/// p' and r = p - p'.
pub(crate) fn fold(p: u32) -> (u32, u32) {
    let pof2 = floor_pow2(p);
    (pof2, p - pof2)
}

/// Real rank of virtual rank `v`.
pub(crate) fn real(v: u32, rem: u32) -> u32 {
    if v < rem {
        v * 2
    } else {
        v + rem
    }
}

/// Steps 1 and 2 for every rank; `work[r]` holds rank r's input (the
/// result accumulates there), `scratch[r]` is an n-element buffer.
pub(crate) fn reduce_scatter(
    ps: &mut [Prog],
    n: u64,
    work: &[Region],
    scratch: &[Region],
) -> Vec<Windows> {
    let p = ps.len() as u32;
    let (pof2, rem) = fold(p);
    let nsteps = pof2.trailing_zeros() as usize;
    let mut out = Vec::with_capacity(p as usize);
    for pg in ps.iter_mut() {
        let r = pg.me;
        let (wk, tmp) = (work[r as usize], scratch[r as usize]);
        let mut w = Windows::default();
        if r < 2 * rem {
            let (lh, rh) = (n / 2, n - n / 2);
            if r % 2 != 0 {
                pg.sendrecv(r - 1, sub(wk, 0, lh), r - 1, sub(tmp, lh, rh));
                pg.reduce(sub(tmp, lh, rh), sub(wk, lh, rh));
                pg.send(r - 1, sub(wk, lh, rh));
            } else {
                pg.sendrecv(r + 1, sub(wk, lh, rh), r + 1, sub(tmp, 0, lh));
                pg.reduce(sub(tmp, 0, lh), sub(wk, 0, lh));
                pg.recv(r + 1, sub(wk, lh, rh));
                w.vrank = Some(r / 2);
            }
        } else {
            w.vrank = Some(r - rem);
        }
        if let Some(v) = w.vrank {
            w.rindex = vec![0; nsteps];
            w.sindex = vec![0; nsteps];
            w.rcount = vec![0; nsteps];
            w.scount = vec![0; nsteps];
            let mut wsize = n;
            for step in 0..nsteps {
                let dest = real(v ^ (1 << step), rem);
                if r < dest {
                    w.rcount[step] = wsize / 2;
                    w.scount[step] = wsize - w.rcount[step];
                    w.sindex[step] = w.rindex[step] + w.rcount[step];
                } else {
                    w.scount[step] = wsize / 2;
                    w.rcount[step] = wsize - w.scount[step];
                    w.rindex[step] = w.sindex[step] + w.scount[step];
                }
                let keep = sub(wk, w.rindex[step], w.rcount[step]);
                let give = sub(wk, w.sindex[step], w.scount[step]);
                pg.sendrecv(dest, give, dest, sub(tmp, w.rindex[step], w.rcount[step]));
                pg.reduce(sub(tmp, w.rindex[step], w.rcount[step]), keep);
                if step + 1 < nsteps {
                    w.rindex[step + 1] = w.rindex[step];
                    w.sindex[step + 1] = w.rindex[step];
                    wsize = w.rcount[step];
                }
            }
        }
        out.push(w);
    }
    out
}
