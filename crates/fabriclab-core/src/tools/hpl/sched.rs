//! HPL's right-looking LU factorisation, one iteration at a time, compiled
//! into MPI schedules that run on the simulated fabric.
//!
//! The matrix (order N) is distributed block-cyclically in NB x NB blocks
//! over a P x Q process grid (row-major: rank = row x Q + column). Panel k
//! (columns k NB .. k NB + jb) lives in process column k mod Q; its
//! diagonal block in process row k mod P. One iteration, as HPL's
//! `HPL_pdgesv` runs it:
//! - **panel factorisation** in the panel's process column: for each of the
//!   jb columns, local work (the panel's share of m jb^2 - jb^3/3 flops at
//!   the panel rate) then the pivot search, an all-reduce of 2 jb + 4
//!   doubles among the P processes by binary exchange (`HPL_pdmxswp`);
//! - **panel broadcast** along every process row, (m_p + jb) jb + jb
//!   doubles, by HPL's topologies: 1ring, 1ringM (the next column gets it
//!   first), 2ring, 2ringM, Blong (spread the pieces, then roll them round)
//!   and BlongM;
//! - **row swap and U broadcast** in every process column, over the
//!   column's trailing columns: binary exchange (log2 P exchanges of the
//!   jb x n U block) or spread-roll ("long": the pivot rows gathered to the
//!   diagonal row, spread in P pieces, rolled round the column); "mix"
//!   picks binary exchange up to the swapping threshold of columns;
//! - **update**: dtrsm and DGEMM, 2 m n jb + jb^2 n flops at the DGEMM rate.
//!
//! With look-ahead depth 1 (`HPL_pdgesvK2`) the iteration that updates with
//! panel k first updates panel k+1's columns, factors panel k+1 and starts
//! its broadcast, then updates the rest; every rank finishes the iteration
//! once it holds panel k+1 (HPL's `HPL_bwait`). Depth 0 factors,
//! broadcasts and updates with panel k in turn. Computation runs beside
//! MPI progress, as if HPL probed the broadcast between update chunks
//! without delay.
//!
//! Left out: which rows the pivots come from (the swap assumes each process
//! row holds jb / P of them), the recursion inside the panel factorisation
//! (NBMIN, NDIV, RFACT and PFACT name the variant but cost the same), DGEMM
//! efficiency falling on small trailing matrices, depth above 1, the
//! backward substitution and the matrix generation, and the residual check.

use crate::mpi::sched::{Buf, BufSizes, Op, Rank, Region, Schedule, StepId};

/// Panel broadcast topology (HPL.dat's BCASTs 0..5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bcast {
    /// 0: increasing ring.
    Ring1,
    /// 1: increasing ring, the next column served first.
    Ring1M,
    /// 2: two rings.
    Ring2,
    /// 3: two rings, the next column served first.
    Ring2M,
    /// 4: spread the pieces, then roll them round ("long").
    Blong,
    /// 5: Blong after serving the next column first.
    BlongM,
}

impl Bcast {
    /// All six, in HPL's numbering.
    pub const ALL: [Bcast; 6] = [
        Bcast::Ring1,
        Bcast::Ring1M,
        Bcast::Ring2,
        Bcast::Ring2M,
        Bcast::Blong,
        Bcast::BlongM,
    ];

    /// The name HPL prints ("1ringM").
    pub fn name(self) -> &'static str {
        match self {
            Bcast::Ring1 => "1ring",
            Bcast::Ring1M => "1ringM",
            Bcast::Ring2 => "2ring",
            Bcast::Ring2M => "2ringM",
            Bcast::Blong => "Blong",
            Bcast::BlongM => "BlongM",
        }
    }

    /// HPL.dat's number (the digit in the T/V code).
    pub fn code(self) -> u32 {
        Bcast::ALL.iter().position(|&b| b == self).unwrap() as u32
    }
}

/// Row-swapping algorithm (HPL.dat's SWAP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swap {
    /// 0: binary exchange.
    BinExch,
    /// 1: spread-roll ("long").
    Long,
    /// 2: binary exchange up to the threshold of columns, long above.
    Mix,
}

/// One HPL test as the schedules need it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Matrix order N.
    pub n: u64,
    /// Block size NB.
    pub nb: u64,
    /// Process rows P.
    pub p: u32,
    /// Process columns Q.
    pub q: u32,
    /// Row-major process mapping (PMAP 0).
    pub row_major: bool,
    /// Panel broadcast.
    pub bcast: Bcast,
    /// Row swapping.
    pub swap: Swap,
    /// Mix: binary exchange up to this many columns.
    pub swap_threshold: u64,
    /// Look-ahead depth, 0 or 1.
    pub depth: u32,
    /// DGEMM (update) time per flop, ps.
    pub update_ps_per_flop: f64,
    /// Panel factorisation time per flop, ps.
    pub pfact_ps_per_flop: f64,
}

/// Message kinds, in the tag.
const T_PIVOT: u32 = 0;
const T_BCAST: u32 = 1;
const T_SWAP: u32 = 2;
const T_SWAP_LA: u32 = 3;
/// Tag offsets of the spread and roll steps within a kind.
const SPREAD: u32 = 1 << 18;
const ROLL: u32 = 1 << 19;

impl Plan {
    /// Number of panels, ceil(N / NB).
    pub fn panels(&self) -> u64 {
        self.n.div_ceil(self.nb)
    }

    /// Width of panel k.
    pub fn width(&self, k: u64) -> u64 {
        self.nb.min(self.n - k * self.nb)
    }

    /// Rank of grid position (row, col).
    pub fn rank(&self, row: u32, col: u32) -> Rank {
        if self.row_major {
            row * self.q + col
        } else {
            col * self.p + row
        }
    }

    /// Of the rows (or columns) from block `from` to N, how many process
    /// `who` of `procs` owns (HPL's numroc).
    fn owned(&self, from: u64, procs: u32, who: u32) -> u64 {
        let k_all = self.panels();
        if from >= k_all {
            return 0;
        }
        let (pr, w) = (procs as u64, who as u64);
        let upto = |x: u64| (x + pr - 1 - w) / pr;
        let blocks = upto(k_all) - upto(from);
        let last = k_all - 1;
        let short = if last % pr == w {
            self.nb - self.width(last)
        } else {
            0
        };
        blocks * self.nb - short
    }

    /// Rows from block `from` on owned by process row `p`.
    pub fn rows(&self, from: u64, p: u32) -> u64 {
        self.owned(from, self.p, p)
    }

    /// Columns from block `from` on owned by process column `q`.
    pub fn cols(&self, from: u64, q: u32) -> u64 {
        self.owned(from, self.q, q)
    }

    /// Flops of the update with panel k at process row `p` over `ncols`
    /// local columns: DGEMM 2 m n jb plus dtrsm jb^2 n.
    pub fn update_flops(&self, k: u64, p: u32, ncols: u64) -> u64 {
        let jb = self.width(k);
        2 * self.rows(k + 1, p) * ncols * jb + jb * jb * ncols
    }

    /// Flops of panel k's factorisation at process row `p`: its share of
    /// m jb^2 - jb^3 / 3.
    pub fn pfact_flops(&self, k: u64, p: u32) -> u64 {
        let jb = self.width(k);
        let m = self.rows(k, p);
        let tri = if (k % self.p as u64) as u32 == p {
            jb * jb * jb / 3
        } else {
            0
        };
        (m * jb * jb).saturating_sub(tri)
    }

    /// Doubles of panel k's broadcast in process row `p`.
    pub fn panel_elems(&self, k: u64, p: u32) -> u64 {
        let jb = self.width(k);
        (self.rows(k, p) + jb) * jb + jb
    }

    /// What runs before the first iteration: with look-ahead, panel 0's
    /// factorisation and broadcast; without, nothing.
    pub fn prologue(&self) -> Schedule {
        let mut b = Builder::new(self, 0);
        if self.depth > 0 {
            let start = vec![Vec::new(); self.p as usize];
            let done = b.pfact(0, start);
            b.bcast(0, &done);
        }
        b.finish("HPL prologue")
    }

    /// Iteration k: the update with panel k (and, with look-ahead, panel
    /// k+1's factorisation and broadcast).
    pub fn iteration(&self, k: u64) -> Schedule {
        let mut b = Builder::new(self, k);
        let (pp, qq) = (self.p, self.q);
        let none = || vec![Vec::new(); pp as usize];
        if self.depth == 0 {
            let qk = (k % qq as u64) as u32;
            let done = b.pfact(k, none());
            let has = b.bcast(k, &done);
            for q in 0..qq {
                let start: Vec<Vec<StepId>> = (0..pp)
                    .map(|p| {
                        if q == qk {
                            done[p as usize].clone()
                        } else {
                            has[b.plan.rank(p, q) as usize].clone()
                        }
                    })
                    .collect();
                let n = self.cols(k + 1, q);
                let sw = b.swap(k, q, n, start, T_SWAP);
                b.update(k, q, n, &sw);
            }
            return b.finish("HPL iteration");
        }
        let next = k + 1 < self.panels();
        let qn = ((k + 1) % qq as u64) as u32;
        for q in 0..qq {
            let n = self.cols(k + 1, q);
            if next && q == qn {
                let la = self.width(k + 1);
                let sw = b.swap(k, q, la, none(), T_SWAP_LA);
                let up = b.update(k, q, la, &sw);
                let done = b.pfact(k + 1, up);
                b.bcast(k + 1, &done);
                let sw = b.swap(k, q, n - la, done, T_SWAP);
                b.update(k, q, n - la, &sw);
            } else {
                let sw = b.swap(k, q, n, none(), T_SWAP);
                b.update(k, q, n, &sw);
            }
        }
        b.finish("HPL iteration")
    }
}

/// Builds one schedule: per-rank steps with HPL's message tags.
struct Builder<'a> {
    plan: &'a Plan,
    s: Schedule,
    k: u64,
    max_send: Vec<u64>,
    max_recv: Vec<u64>,
}

impl<'a> Builder<'a> {
    fn new(plan: &'a Plan, k: u64) -> Builder<'a> {
        let np = plan.p * plan.q;
        let bufs = BufSizes {
            send: vec![0; np as usize],
            recv: vec![0; np as usize],
        };
        Builder {
            plan,
            s: Schedule::new(np, 8, bufs, "hpl"),
            k,
            max_send: vec![0; np as usize],
            max_recv: vec![0; np as usize],
        }
    }

    fn finish(mut self, name: &str) -> Schedule {
        self.s.bufs.send = self.max_send;
        self.s.bufs.recv = self.max_recv;
        self.s.algorithm = name.to_string();
        self.s
    }

    /// Iterations overlap at most by one; 16 tag generations keep any two
    /// that could meet apart.
    fn tag(&self, kind: u32, idx: u32) -> u32 {
        debug_assert!(idx < 1 << 20);
        (((self.k % 16) as u32) << 24) | (kind << 20) | idx
    }

    fn send(&mut self, from: Rank, to: Rank, tag: u32, elems: u64, deps: &[StepId]) -> StepId {
        let m = &mut self.max_send[from as usize];
        *m = (*m).max(elems);
        let src = Region::new(Buf::Send, 0, elems);
        self.s.ranks[from as usize].push(Op::Send { to, tag, src }, deps)
    }

    fn recv(&mut self, at: Rank, from: Rank, tag: u32, elems: u64, deps: &[StepId]) -> StepId {
        let m = &mut self.max_recv[at as usize];
        *m = (*m).max(elems);
        let dst = Region::new(Buf::Recv, 0, elems);
        self.s.ranks[at as usize].push(Op::Recv { from, tag, dst }, deps)
    }

    fn compute(&mut self, r: Rank, flops: u64, ps_per_flop: f64, deps: &[StepId]) -> Vec<StepId> {
        if flops == 0 {
            return deps.to_vec();
        }
        let ps = (flops as f64 * ps_per_flop).round() as u64;
        vec![self.s.ranks[r as usize].compute(ps, deps)]
    }

    /// The update with panel k over `n` local columns of process column
    /// `q`, after `ready` (per process row).
    fn update(&mut self, k: u64, q: u32, n: u64, ready: &[Vec<StepId>]) -> Vec<Vec<StepId>> {
        let rate = self.plan.update_ps_per_flop;
        (0..self.plan.p)
            .map(|p| {
                let r = self.plan.rank(p, q);
                let f = if n == 0 {
                    0
                } else {
                    self.plan.update_flops(k, p, n)
                };
                self.compute(r, f, rate, &ready[p as usize])
            })
            .collect()
    }

    /// Panel k's factorisation in its process column, each process row
    /// starting after `start`; returns each row's last steps.
    fn pfact(&mut self, k: u64, mut last: Vec<Vec<StepId>>) -> Vec<Vec<StepId>> {
        let plan = self.plan;
        let q = (k % plan.q as u64) as u32;
        let jb = plan.width(k);
        let rate = plan.pfact_ps_per_flop;
        if plan.p == 1 {
            let r = plan.rank(0, q);
            return vec![self.compute(r, plan.pfact_flops(k, 0), rate, &last[0])];
        }
        let per_col: Vec<u64> = (0..plan.p).map(|p| plan.pfact_flops(k, p) / jb).collect();
        for c in 0..jb {
            for p in 0..plan.p {
                let r = plan.rank(p, q);
                last[p as usize] = self.compute(r, per_col[p as usize], rate, &last[p as usize]);
            }
            let idx = (c as u32) << 4;
            self.exchange(q, 2 * jb + 4, &mut last, T_PIVOT, idx);
        }
        last
    }

    /// Binary exchange of `elems` doubles among the P processes of column
    /// `q` (the processes beyond the largest power of two fold in first
    /// and get the result back last); `last` is updated per process row.
    fn exchange(&mut self, q: u32, elems: u64, last: &mut [Vec<StepId>], kind: u32, idx: u32) {
        let plan = self.plan;
        let pp = plan.p;
        let p2 = 1u32 << (31 - pp.leading_zeros());
        let rk = |p: u32| plan.rank(p, q);
        for p in p2..pp {
            let t = self.tag(kind, idx);
            let a = self.send(rk(p), rk(p - p2), t, elems, &last[p as usize].clone());
            let lo = (p - p2) as usize;
            let b = self.recv(rk(p - p2), rk(p), t, elems, &last[lo].clone());
            last[p as usize] = vec![a];
            last[lo] = vec![b];
        }
        let mut stage = 0;
        while (1 << stage) < p2 {
            let t = self.tag(kind, idx + 1 + stage);
            for p in 0..p2 {
                let partner = p ^ (1 << stage);
                let deps = last[p as usize].clone();
                let a = self.send(rk(p), rk(partner), t, elems, &deps);
                let b = self.recv(rk(p), rk(partner), t, elems, &deps);
                last[p as usize] = vec![a, b];
            }
            stage += 1;
        }
        for p in p2..pp {
            let t = self.tag(kind, idx + 15);
            let lo = (p - p2) as usize;
            let a = self.send(rk(p - p2), rk(p), t, elems, &last[lo].clone());
            let b = self.recv(rk(p), rk(p - p2), t, elems, &last[p as usize].clone());
            last[lo] = vec![a];
            last[p as usize] = vec![b];
        }
    }

    /// Panel k's broadcast along every process row, the root of row p
    /// starting after `ready[p]`. Returns, per rank, the steps after which
    /// it holds the panel (the root's `ready`).
    fn bcast(&mut self, k: u64, ready: &[Vec<StepId>]) -> Vec<Vec<StepId>> {
        let plan = self.plan;
        let root = (k % plan.q as u64) as u32;
        let mut has = vec![Vec::new(); (plan.p * plan.q) as usize];
        for p in 0..plan.p {
            let elems = plan.panel_elems(k, p);
            let members: Vec<Rank> = (0..plan.q)
                .map(|j| plan.rank(p, (root + j) % plan.q))
                .collect();
            has[members[0] as usize] = ready[p as usize].clone();
            self.bcast_row(&members, elems, ready[p as usize].clone(), &mut has);
        }
        has
    }

    /// One row's broadcast from `m[0]` to the rest of `m` (in ring order).
    fn bcast_row(
        &mut self,
        m: &[Rank],
        elems: u64,
        root_deps: Vec<StepId>,
        has: &mut [Vec<StepId>],
    ) {
        let qn = m.len();
        if qn < 2 {
            return;
        }
        let t = |b: &Self, i: u32| b.tag(T_BCAST, i);
        // Root's sends go one after the other.
        let mut root_last = root_deps;
        let direct =
            |b: &mut Self, to: usize, root_last: &mut Vec<StepId>, has: &mut [Vec<StepId>]| {
                let tag = t(b, to as u32);
                let s = b.send(m[0], m[to], tag, elems, root_last);
                *root_last = vec![s];
                let r = b.recv(m[to], m[0], tag, elems, &[]);
                has[m[to] as usize] = vec![r];
            };
        let modified = matches!(
            self.plan.bcast,
            Bcast::Ring1M | Bcast::Ring2M | Bcast::BlongM
        );
        let rest: Vec<usize> = if modified && qn > 2 {
            direct(self, 1, &mut root_last, has);
            (2..qn).collect()
        } else {
            (1..qn).collect()
        };
        match self.plan.bcast {
            Bcast::Ring1 | Bcast::Ring1M => self.chain(m, &rest, elems, &mut root_last, has),
            Bcast::Ring2 | Bcast::Ring2M => {
                let h = rest.len().div_ceil(2);
                self.chain(m, &rest[..h], elems, &mut root_last, has);
                self.chain(m, &rest[h..], elems, &mut root_last, has);
            }
            Bcast::Blong | Bcast::BlongM => self.spread_roll(m, &rest, elems, &mut root_last, has),
        }
    }

    /// Root sends to `idx[0]`, which forwards to `idx[1]`, and so on.
    fn chain(
        &mut self,
        m: &[Rank],
        idx: &[usize],
        elems: u64,
        root_last: &mut Vec<StepId>,
        has: &mut [Vec<StepId>],
    ) {
        let mut from = 0usize;
        for &to in idx {
            let tag = self.tag(T_BCAST, to as u32);
            let deps = if from == 0 {
                root_last.clone()
            } else {
                has[m[from] as usize].clone()
            };
            let s = self.send(m[from], m[to], tag, elems, &deps);
            if from == 0 {
                *root_last = vec![s];
            }
            let r = self.recv(m[to], m[from], tag, elems, &[]);
            has[m[to] as usize] = vec![r];
            from = to;
        }
    }

    /// Root spreads one piece to each of `idx`, which then roll the pieces
    /// round until each holds all of them.
    fn spread_roll(
        &mut self,
        m: &[Rank],
        idx: &[usize],
        elems: u64,
        root_last: &mut Vec<StepId>,
        has: &mut [Vec<StepId>],
    ) {
        let n = idx.len();
        if n == 0 {
            return;
        }
        let piece = |i: usize| elems / n as u64 + u64::from((i as u64) < elems % n as u64);
        // Spread.
        let mut got: Vec<Vec<StepId>> = Vec::with_capacity(n);
        for (i, &to) in idx.iter().enumerate() {
            let tag = self.tag(T_BCAST, to as u32);
            let s = self.send(m[0], m[to], tag, piece(i), root_last);
            *root_last = vec![s];
            let r = self.recv(m[to], m[0], tag, piece(i), &[]);
            got.push(vec![r]);
        }
        // Roll: at step s member i passes piece (i - s) to member i + 1.
        let mut all: Vec<Vec<StepId>> = got.clone();
        for s in 0..n - 1 {
            let tag = self.tag(T_BCAST, ROLL + s as u32);
            let mut next_got = vec![Vec::new(); n];
            for i in 0..n {
                let to = (i + 1) % n;
                let pc = (i + n - s) % n;
                let snd = self.send(m[idx[i]], m[idx[to]], tag, piece(pc), &got[i]);
                all[i].push(snd);
                let from = (i + n - 1) % n;
                let pr = (from + n - s) % n;
                let r = self.recv(m[idx[i]], m[idx[from]], tag, piece(pr), &[]);
                next_got[i] = vec![r];
                all[i].push(r);
            }
            got = next_got;
        }
        for (i, &j) in idx.iter().enumerate() {
            has[m[j] as usize] = std::mem::take(&mut all[i]);
        }
    }

    /// Row swap and U broadcast for panel k over `n` local columns of
    /// process column `q`, each row starting after `start`; returns each
    /// row's last steps.
    fn swap(
        &mut self,
        k: u64,
        q: u32,
        n: u64,
        mut last: Vec<Vec<StepId>>,
        kind: u32,
    ) -> Vec<Vec<StepId>> {
        let plan = self.plan;
        let pp = plan.p;
        if n == 0 || pp == 1 {
            return last;
        }
        let jb = plan.width(k);
        let binary = match plan.swap {
            Swap::BinExch => true,
            Swap::Long => false,
            Swap::Mix => n <= plan.swap_threshold,
        };
        if binary {
            self.exchange(q, jb * n, &mut last, kind, 0);
            return last;
        }
        // Spread-roll, rows taken relative to the diagonal row.
        let dr = (k % pp as u64) as u32;
        let row = |i: u32| (dr + i) % pp;
        let rk = |i: u32| plan.rank(row(i), q);
        let piece = |i: u32| (jb / pp as u64 + u64::from((i as u64) < jb % pp as u64)) * n;
        // Gather each row's pivot rows to the diagonal row.
        let mut root_deps = last[dr as usize].clone();
        for i in 1..pp {
            if piece(i) == 0 {
                continue;
            }
            let tag = self.tag(kind, i);
            let s = self.send(rk(i), rk(0), tag, piece(i), &last[row(i) as usize].clone());
            last[row(i) as usize] = vec![s];
            let r = self.recv(rk(0), rk(i), tag, piece(i), &last[dr as usize].clone());
            root_deps.push(r);
        }
        // Spread the U pieces back out.
        let mut root_last = root_deps;
        for i in 1..pp {
            if piece(i) == 0 {
                continue;
            }
            let tag = self.tag(kind, SPREAD + i);
            let s = self.send(rk(0), rk(i), tag, piece(i), &root_last);
            root_last = vec![s];
            let deps = last[row(i) as usize].clone();
            let r = self.recv(rk(i), rk(0), tag, piece(i), &deps);
            last[row(i) as usize] = vec![r];
        }
        last[dr as usize] = root_last;
        // Roll: at step s, position i passes piece (i - s) to i + 1.
        let mut got = last.clone();
        let mut all = last;
        let pu = pp as usize;
        for s in 0..pu - 1 {
            let tag = self.tag(kind, ROLL + s as u32);
            let mut next_got = vec![Vec::new(); pu];
            for i in 0..pu {
                let (ri, to, from) = (row(i as u32), (i + 1) % pu, (i + pu - 1) % pu);
                let pc = piece(((i + pu - s) % pu) as u32);
                let pr = piece(((from + pu - s) % pu) as u32);
                let mut next = got[ri as usize].clone();
                if pc > 0 {
                    let snd = self.send(rk(i as u32), rk(to as u32), tag, pc, &got[ri as usize]);
                    all[ri as usize].push(snd);
                }
                if pr > 0 {
                    let r = self.recv(rk(i as u32), rk(from as u32), tag, pr, &[]);
                    all[ri as usize].push(r);
                    next = vec![r];
                }
                next_got[ri as usize] = next;
            }
            got = next_got;
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(n: u64, nb: u64, p: u32, q: u32) -> Plan {
        Plan {
            n,
            nb,
            p,
            q,
            row_major: true,
            bcast: Bcast::Ring1M,
            swap: Swap::Mix,
            swap_threshold: 64,
            depth: 1,
            update_ps_per_flop: 1.0,
            pfact_ps_per_flop: 1.0,
        }
    }

    #[test]
    fn block_cyclic_counts_add_up() {
        // N = 1000, NB = 64: 16 panels, the last 40 wide.
        let pl = plan(1000, 64, 3, 5);
        assert_eq!(pl.panels(), 16);
        assert_eq!(pl.width(15), 40);
        for from in 0..16 {
            let left = 1000 - from * 64;
            let rows: u64 = (0..3).map(|p| pl.rows(from, p)).sum();
            let cols: u64 = (0..5).map(|q| pl.cols(from, q)).sum();
            assert_eq!((rows, cols), (left, left), "from block {from}");
        }
        // Blocks 0, 3, 6, 9, 12, 15 are process row 0's: 5 x 64 + 40.
        assert_eq!(pl.rows(0, 0), 360);
        assert_eq!(pl.rows(1, 0), 296);
        assert_eq!(pl.rows(16, 0), 0);
    }

    #[test]
    fn flop_counts_cover_the_lu_factorisation() {
        // Summed over every panel and process, update and panel flops make
        // up 2/3 N^3 to leading order (the rest is O(N^2 NB)).
        let pl = plan(4096, 64, 2, 3);
        let mut total = 0u64;
        for k in 0..pl.panels() {
            for p in 0..2 {
                total += pl.pfact_flops(k, p);
                for q in 0..3 {
                    total += pl.update_flops(k, p, pl.cols(k + 1, q));
                }
            }
        }
        let lu = 2.0 / 3.0 * 4096f64.powi(3);
        let rel = (total as f64 - lu) / lu;
        assert!(rel.abs() < 0.05, "{total} vs {lu}: {rel}");
    }

    #[test]
    fn schedules_are_well_formed_for_every_variant() {
        for &bc in &Bcast::ALL {
            for swap in [Swap::BinExch, Swap::Long, Swap::Mix] {
                for depth in [0, 1] {
                    for (p, q) in [(1, 1), (1, 4), (3, 1), (2, 3), (5, 4)] {
                        let mut pl = plan(700, 32, p, q);
                        pl.bcast = bc;
                        pl.swap = swap;
                        pl.depth = depth;
                        let pro = pl.prologue();
                        pro.check().unwrap();
                        for k in [0, 1, 7, pl.panels() - 2, pl.panels() - 1] {
                            let s = pl.iteration(k);
                            s.check().unwrap_or_else(|e| {
                                panic!("{bc:?} {swap:?} depth {depth} {p}x{q} k {k}: {e}")
                            });
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_broadcast_moves_the_panel_to_every_other_column_once_per_ring_hop() {
        // 1ring over Q = 4 in one process row: 3 hops of the whole panel.
        let mut pl = plan(256, 64, 1, 4);
        pl.bcast = Bcast::Ring1;
        pl.depth = 0;
        pl.swap = Swap::BinExch;
        let s = pl.iteration(0);
        let elems = pl.panel_elems(0, 0);
        assert_eq!(elems, (256 + 64) * 64 + 64);
        // P = 1: no pivot messages and no swap; only the broadcast.
        assert_eq!(s.bytes_sent(), 3 * elems * 8);
        // Blong: the root spreads the panel once; the roll moves each of
        // the 3 pieces to the 2 other receivers.
        pl.bcast = Bcast::Blong;
        let s = pl.iteration(0);
        assert_eq!(s.bytes_sent(), (elems + 2 * elems) * 8);
    }

    /// Messages of a binary exchange among P: the processes beyond the
    /// largest power of two p2 fold in and out (two each), the p2 others
    /// exchange log2 p2 times.
    fn exchange_messages(p: u64) -> u64 {
        let p2 = 1u64 << (63 - p.leading_zeros());
        2 * (p - p2) + p2 * p2.trailing_zeros() as u64
    }

    #[test]
    fn every_broadcast_moves_the_panel_to_each_other_column_once() {
        // P = 1: no pivot or swap traffic. Each ring variant forwards the
        // whole panel over Q - 1 hops; Blong spreads it in Q - 1 pieces
        // and rolls each piece to the Q - 2 other receivers: Q - 1 panels
        // as well. A variant that sent the panel twice, or fell back to
        // another that does, would move more.
        for q in [2, 3, 5, 8] {
            for &bc in &Bcast::ALL {
                let mut pl = plan(1024, 64, 1, q);
                pl.bcast = bc;
                pl.depth = 0;
                let elems = pl.panel_elems(0, 0);
                assert_eq!(elems, (1024 + 64) * 64 + 64);
                let got = pl.iteration(0).bytes_sent();
                assert_eq!(got, (q as u64 - 1) * elems * 8, "{bc:?} Q = {q}");
            }
        }
    }

    #[test]
    fn pivots_and_row_swaps_move_what_hpl_sends() {
        // N = 1024, NB = 64, Q = 1, iteration 0 without look-ahead: jb =
        // 64 pivot searches, each a binary exchange of 2 jb + 4 = 132
        // doubles, then the row swap over n = 960 trailing columns.
        // bin-exch: one binary exchange of the jb x n U block. long: the
        // pivot rows of every other process row gathered to the diagonal
        // row and spread back (2 (jb - piece 0) n), then P - 1 roll steps
        // that each pass all P pieces on ((P - 1) jb n). Mix at a
        // threshold of 64 columns takes long here.
        let (jb, n) = (64u64, 960u64);
        for p in [2u32, 3, 4, 5] {
            let pivots = jb * (2 * jb + 4) * exchange_messages(p as u64);
            let piece0 = (jb / p as u64 + u64::from(jb % p as u64 > 0)) * n;
            let long = 2 * (jb * n - piece0) + (p as u64 - 1) * jb * n;
            for (swap, swapped) in [
                (Swap::BinExch, jb * n * exchange_messages(p as u64)),
                (Swap::Long, long),
                (Swap::Mix, long),
            ] {
                let mut pl = plan(1024, 64, p, 1);
                pl.swap = swap;
                pl.depth = 0;
                let got = pl.iteration(0).bytes_sent();
                assert_eq!(got, (pivots + swapped) * 8, "{swap:?} P = {p}");
            }
        }
        // Mix below its threshold is the binary exchange: the last panel
        // of N = 1024 leaves no column, the one before leaves 64.
        let mut pl = plan(1024, 64, 4, 1);
        pl.depth = 0;
        let k = pl.panels() - 2;
        let got = pl.iteration(k).bytes_sent();
        assert_eq!(
            got,
            (jb * (2 * jb + 4) + jb * 64) * exchange_messages(4) * 8
        );
    }
}
