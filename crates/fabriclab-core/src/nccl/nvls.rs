//! NCCL's NVLS algorithms (NVLink SHARP) as [`Schedule`]s: NVSwitch
//! reduces the GPUs' data in the switch (`multimem.ld_reduce`) and stores
//! the result into every GPU at once (`multimem.st`), so a GPU's NVLink
//! carries its data out once and the result in once, where a ring carries
//! 2(n-1)/n of it each way (NCCL `src/device/all_reduce.h`,
//! `all_gather.h`, `reduce_scatter.h`, the NVLS paths).
//!
//! - AllReduce (NVLS, one server; NVLS-Tree, several): each channel's
//!   loop covers G x [`NVLS_CHUNK_BYTES`] of data, cut into one part per
//!   GPU; channel c's part k is reduced by its head, GPU (c + k) mod G, of
//!   each server: every GPU offers the part to the switch
//!   ([`Op::SwitchSend`]), the head reads the server's sum
//!   ([`Op::SwitchReduce`]), and, on several servers, the heads of that
//!   part (on one rail) reduce the servers' sums up channel c's double
//!   binary tree between servers and send the total back down, as NCCL's
//!   NVLS-Tree does; the head then multicasts the total into every GPU of
//!   its server ([`Op::Multicast`]).
//! - AllGather (one server): every GPU multicasts its block.
//! - ReduceScatter (one server): every GPU reads its block's sum from the
//!   switch.
//!
//! Tags are channels. A connection's messages (and a pair's switch
//! offers) are posted in order, so they match in order.
//!
//! Left out: NVLS on several servers without CollNet (NCCL disables it;
//! AllGather and ReduceScatter fall back to rings there), user-buffer
//! registration (NCCL copies through its NVLS buffers either way; those
//! copies are local and cost nothing here), NVLS's separate scatter,
//! reduce and gather warps (their work is the transfers above).
//!
//! [`Op::SwitchSend`]: crate::mpi::sched::Op::SwitchSend
//! [`Op::SwitchReduce`]: crate::mpi::sched::Op::SwitchReduce
//! [`Op::Multicast`]: crate::mpi::sched::Op::Multicast

use super::comm::{dtree_parent, Comm};
use super::cut::{chunk, pieces};
use crate::mpi::sched::{Buf, Rank, RankSchedule, Region, Schedule, StepId};
use std::collections::HashMap;

/// NCCL's NVLS chunk (`NCCL_NVLS_CHUNKSIZE`, 128 KiB): the data one head
/// reduces per step.
pub const NVLS_CHUNK_BYTES: u64 = 128 << 10;

/// Steps of one rank that must stay in order: its last step per
/// (kind, peer, tag), so a connection's messages match in order.
#[derive(Default)]
struct Fifo {
    last: HashMap<(u8, Rank, u32), StepId>,
}

/// Kinds of ordered steps.
const SEND: u8 = 0;
const RECV: u8 = 1;
const OFFER: u8 = 2;
const CAST: u8 = 3;
const READ: u8 = 4;

/// The builder's state: per rank its FIFO.
struct Nvls<'a> {
    comm: &'a Comm,
    unit: u64,
    chans: u32,
    fifo: Vec<Fifo>,
}

impl Nvls<'_> {
    /// Push a step of rank `r` after `deps` and after the rank's previous
    /// step of `key` = (kind, peer, tag), which it then becomes.
    fn ordered(
        &mut self,
        r: Rank,
        key: (u8, Rank, u32),
        deps: &[StepId],
        push: impl FnOnce(&[StepId]) -> StepId,
    ) -> StepId {
        let f = &mut self.fifo[r as usize];
        let mut d = deps.to_vec();
        d.extend(f.last.get(&key));
        let id = push(&d);
        f.last.insert(key, id);
        id
    }

    fn send(
        &mut self,
        rs: &mut RankSchedule,
        r: Rank,
        to: Rank,
        tag: u32,
        src: Region,
        deps: &[StepId],
    ) -> StepId {
        self.ordered(r, (SEND, to, tag), deps, |d| rs.send(to, tag, src, d))
    }

    fn recv(
        &mut self,
        rs: &mut RankSchedule,
        r: Rank,
        from: Rank,
        tag: u32,
        dst: Region,
        deps: &[StepId],
    ) -> StepId {
        self.ordered(r, (RECV, from, tag), deps, |d| rs.recv(from, tag, dst, d))
    }

    fn offer(&mut self, rs: &mut RankSchedule, r: Rank, to: Rank, tag: u32, src: Region) -> StepId {
        self.ordered(r, (OFFER, to, tag), &[], |d| {
            rs.switch_send(to, tag, src, d)
        })
    }

    fn read(
        &mut self,
        rs: &mut RankSchedule,
        r: Rank,
        tag: u32,
        src: Region,
        dst: Region,
    ) -> StepId {
        let grp = self.group(r);
        self.ordered(r, (READ, r, tag), &[], |d| {
            rs.switch_reduce(grp, tag, src, dst, d)
        })
    }

    /// Multicast `src` into the server's GPUs (this one's copy: `dst`).
    fn cast(
        &mut self,
        rs: &mut RankSchedule,
        r: Rank,
        tag: u32,
        src: Region,
        dst: Region,
        deps: &[StepId],
    ) -> StepId {
        let grp = self.group(r);
        self.ordered(r, (CAST, r, tag), deps, |d| {
            rs.multicast(grp, tag, src, dst, d)
        })
    }

    /// The ranks of `r`'s server: (first, count).
    fn group(&self, r: Rank) -> (Rank, u32) {
        let g = self.comm.gpus;
        (self.comm.server(r) * g, g)
    }
}

/// Build the NVLS AllReduce of `count` elements of `elem_bytes` on `comm`
/// (NVLS on one server, NVLS-Tree on several).
pub fn all_reduce(comm: &Comm, s: &mut Schedule, count: u64) {
    let mut b = builder(comm, s.elem_bytes);
    let g = comm.gpus;
    let n = comm.n();
    let servers = comm.servers;
    let ranks = &mut s.ranks;
    // Per rank, channel and tree child: a scratch buffer for the child's
    // partial sum, and the step that last used it.
    let trees: Vec<u32> = (0..b.chans).map(|c| comm.tree_of(c)).collect();
    // Per tree (0, 1) and server: its parent and children.
    let mut up = vec![vec![None; servers as usize]; 2];
    let mut kids = vec![vec![Vec::new(); servers as usize]; 2];
    for t in 0..2 {
        for x in 0..servers {
            up[t][x as usize] = dtree_parent(servers, t as u32, x);
            if let Some(p) = up[t][x as usize] {
                kids[t][p as usize].push(x);
            }
        }
    }
    let mut scratch: HashMap<(Rank, u32, u32), (Buf, Option<StepId>)> = HashMap::new();
    for (_, ch, start, len) in pieces(count, b.chans, g as u64, b.unit) {
        for k in 0..g {
            let (o, c) = chunk(start, len, g, k);
            if c == 0 {
                continue;
            }
            let h = (ch + k) % g;
            let part = |buf: Buf| Region::new(buf, o, c);
            for sv in 0..servers {
                let head = sv * g + h;
                // Every GPU offers its part; the head reads the sum.
                for m in sv * g..(sv + 1) * g {
                    if m != head {
                        b.offer(&mut ranks[m as usize], m, head, ch, part(Buf::Send));
                    }
                }
                let rs = &mut ranks[head as usize];
                let mut acc = b.read(rs, head, ch, part(Buf::Send), part(Buf::Recv));
                // NVLS-Tree: the children's sums up, the total back down.
                let t = trees[ch as usize] as usize;
                let children = &kids[t][sv as usize];
                for &x in children {
                    let child = x * g + h;
                    let (tmp, used) = *scratch
                        .entry((head, ch, x))
                        .or_insert_with(|| (rs.tmp(b.unit), None));
                    let into = Region::new(tmp, 0, c);
                    let free: Vec<StepId> = used.into_iter().collect();
                    let rv = b.recv(rs, head, child, ch, into, &free);
                    acc = rs.reduce(into, part(Buf::Recv), &[rv, acc]);
                    scratch.insert((head, ch, x), (tmp, Some(acc)));
                }
                let total = match up[t][sv as usize] {
                    Some(p) => {
                        let up = p * g + h;
                        let sent = b.send(rs, head, up, ch, part(Buf::Recv), &[acc]);
                        b.recv(rs, head, up, ch, part(Buf::Recv), &[sent])
                    }
                    None => acc,
                };
                for &x in children {
                    b.send(rs, head, x * g + h, ch, part(Buf::Recv), &[total]);
                }
                // The total into every GPU of the server.
                b.cast(rs, head, ch, part(Buf::Recv), part(Buf::Recv), &[total]);
                for m in sv * g..(sv + 1) * g {
                    if m != head {
                        b.recv(&mut ranks[m as usize], m, head, ch, part(Buf::Recv), &[]);
                    }
                }
            }
        }
    }
    debug_assert_eq!(ranks.len() as u32, n);
}

/// NVLS AllGather of `count` elements per rank on one server.
pub fn all_gather(comm: &Comm, s: &mut Schedule, count: u64) {
    let mut b = builder(comm, s.elem_bytes);
    let n = comm.n();
    let ranks = &mut s.ranks;
    for (_, ch, start, len) in pieces(count, b.chans, 1, b.unit) {
        for r in 0..n {
            let rs = &mut ranks[r as usize];
            let own = Region::new(Buf::Send, start, len);
            let at = |q: Rank| Region::new(Buf::Recv, q as u64 * count + start, len);
            b.cast(rs, r, ch, own, at(r), &[]);
            for q in 0..n {
                if q != r {
                    b.recv(rs, r, q, ch, at(q), &[]);
                }
            }
        }
    }
}

/// NVLS ReduceScatter of `count` elements per rank on one server.
pub fn reduce_scatter(comm: &Comm, s: &mut Schedule, count: u64) {
    let mut b = builder(comm, s.elem_bytes);
    let n = comm.n();
    let ranks = &mut s.ranks;
    for (_, ch, start, len) in pieces(count, b.chans, 1, b.unit) {
        for r in 0..n {
            let block = |q: Rank| Region::new(Buf::Send, q as u64 * count + start, len);
            for q in 0..n {
                if q != r {
                    b.offer(&mut ranks[q as usize], q, r, ch, block(r));
                }
            }
            let out = Region::new(Buf::Recv, start, len);
            b.read(&mut ranks[r as usize], r, ch, block(r), out);
        }
    }
}

fn builder(comm: &Comm, elem_bytes: u32) -> Nvls<'_> {
    Nvls {
        comm,
        unit: (NVLS_CHUNK_BYTES / elem_bytes.max(1) as u64).max(1),
        chans: comm.channels.max(1),
        fifo: (0..comm.n()).map(|_| Fifo::default()).collect(),
    }
}
