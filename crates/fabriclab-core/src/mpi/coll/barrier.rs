//! MPI_Barrier algorithms of Open MPI's `coll_base_barrier.c` (linear,
//! double ring, recursive doubling, Bruck, two-process, tree) and MPICH's
//! k-dissemination (`MPIR_Barrier_intra_k_dissemination`; with k = 2, its
//! default, the same exchanges as Open MPI's Bruck). All messages are empty.
//!
//! Left out: the linear barrier's `MPI_ANY_SOURCE` receives (each names its
//! sender here) and the synchronous mode of some sends (the runtime decides
//! completion of a zero-byte send as for any other).

use super::super::sched::{Buf, Region};
use super::prog::Prog;
use super::tree::{floor_pow2, next_pow2};
use super::tuning::Ctx;
use crate::error::{arg_err, Result};

const Z: Region = Region {
    buf: Buf::Recv,
    off: 0,
    count: 0,
};

/// `ompi_coll_base_sendrecv_zero`.
fn exchange(pg: &mut Prog, to: u32, from: u32) {
    pg.sendrecv(to, Z, from, Z);
}

/// A barrier over `cx.p` ranks.
pub(crate) fn run(ps: &mut [Prog], cx: &Ctx, alg: &str) -> Result<()> {
    let p = cx.p;
    match alg {
        // ompi_coll_base_barrier_intra_basic_linear: everyone reports to 0,
        // which then releases them one by one.
        "linear" => {
            for pg in ps.iter_mut() {
                if pg.me > 0 {
                    pg.send(0, Z);
                    pg.recv(0, Z);
                } else {
                    let reqs: Vec<_> = (1..p).map(|i| pg.irecv(i, Z)).collect();
                    pg.wait(&reqs);
                    (1..p).for_each(|i| pg.send(i, Z));
                }
            }
        }
        // ompi_coll_base_barrier_intra_doublering: a token goes round twice.
        "double_ring" => {
            for pg in ps.iter_mut() {
                let (r, left, right) = (pg.me, (pg.me + p - 1) % p, (pg.me + 1) % p);
                for _ in 0..2 {
                    if r > 0 {
                        pg.recv(left, Z);
                    }
                    pg.send(right, Z);
                    if r == 0 {
                        pg.recv(left, Z);
                    }
                }
            }
        }
        "recursive_doubling" => recursive_doubling(ps),
        // ompi_coll_base_barrier_intra_bruck: exchange with rank +- 2^k.
        "bruck" => {
            for pg in ps.iter_mut() {
                let mut d = 1;
                while d < p {
                    let (to, from) = ((pg.me + d) % p, (pg.me + p - d) % p);
                    exchange(pg, to, from);
                    d <<= 1;
                }
            }
        }
        "two_proc" => {
            for pg in ps.iter_mut() {
                let o = pg.me ^ 1;
                exchange(pg, o, o);
            }
        }
        "tree" => tree(ps),
        "dissemination" => dissemination(ps, cx.tuning.dissemination_radix),
        other => return arg_err(format!("{other:?} is not a barrier algorithm")),
    }
    Ok(())
}

/// `ompi_coll_base_barrier_intra_recursivedoubling`: ranks above p' check
/// in with rank - p', p' ranks run recursive doubling, then release them.
fn recursive_doubling(ps: &mut [Prog]) {
    let p = ps.len() as u32;
    let adj = floor_pow2(p);
    for pg in ps.iter_mut() {
        let r = pg.me;
        if adj != p {
            if r >= adj {
                exchange(pg, r - adj, r - adj);
            } else if r < p - adj {
                pg.recv(r + adj, Z);
            }
        }
        if r < adj {
            let mut mask = 1;
            while mask < adj {
                let remote = r ^ mask;
                mask <<= 1;
                if remote < adj {
                    exchange(pg, remote, remote);
                }
            }
        }
        if adj != p && r < p - adj {
            pg.send(r + adj, Z);
        }
    }
}

/// `ompi_coll_base_barrier_intra_tree`: fan in up a binomial tree, fan out
/// back down.
fn tree(ps: &mut [Prog]) {
    let p = ps.len() as u32;
    let depth = if p.is_power_of_two() { p } else { next_pow2(p) };
    for pg in ps.iter_mut() {
        let r = pg.me;
        let mut jump = 1;
        while jump < depth {
            let partner = r ^ jump;
            if partner & (jump - 1) == 0 && partner < p {
                if partner > r {
                    pg.recv(partner, Z);
                } else if partner < r {
                    pg.send(partner, Z);
                }
            }
            jump <<= 1;
        }
        jump = depth >> 1;
        while jump > 0 {
            let partner = r ^ jump;
            if partner & (jump - 1) == 0 && partner < p {
                if partner > r {
                    pg.send(partner, Z);
                } else if partner < r {
                    pg.recv(partner, Z);
                }
            }
            jump >>= 1;
        }
    }
}

/// `MPIR_Barrier_intra_k_dissemination`: in phase i send to rank + j k^i
/// and receive from rank - j k^i (j = 1..k-1), the receives of a phase
/// waited for only once the next phase has posted its first receive.
fn dissemination(ps: &mut [Prog], radix: u32) {
    let p = ps.len() as u32;
    let k = radix.min(p);
    for pg in ps.iter_mut() {
        let r = pg.me;
        if k == 2 {
            let mut mask = 1;
            while mask < p {
                exchange(pg, (r + mask) % p, (r + p - mask) % p);
                mask <<= 1;
            }
            continue;
        }
        let (mut phases, mut pk) = (0, 1u64);
        while pk < p as u64 {
            pk *= k as u64;
            phases += 1;
        }
        let mut shift = 1u64;
        let mut prev: Vec<_> = Vec::new();
        for i in 0..phases {
            let (mut recvs, mut sends) = (Vec::new(), Vec::new());
            for j in 1..k as u64 {
                let to = ((r as u64 + j * shift) % p as u64) as u32;
                let back = (j * shift) % p as u64;
                let from = ((r as u64 + p as u64 - back) % p as u64) as u32;
                recvs.push(pg.irecv(from, Z));
                if i > 0 && j == 1 {
                    pg.wait(&prev);
                }
                sends.push(pg.isend(to, Z));
            }
            pg.wait(&sends);
            prev = recvs;
            shift *= k as u64;
        }
        pg.wait(&prev);
    }
}
