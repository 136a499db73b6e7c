//! NCCL's collectives as [`Schedule`]s: the ring algorithms of NCCL's
//! device code (`src/device/all_reduce.h`, `all_gather.h`,
//! `reduce_scatter.h`, `broadcast.h`, `reduce.h`) and its point-to-point
//! operations (AllToAll and Send/Recv as grouped sends and receives).
//!
//! Data is cut the way NCCL cuts it: a loop covers channels x ranks x
//! chunk elements (AllReduce) or channels x chunk elements of each rank's
//! block (the others), each channel runs its own ring on its share, and a
//! chunk is at most one step of the protocol's buffer
//! ([`Protocol::step_bytes`]). Steps of one channel depend only on the data
//! they need (so a rank forwards a chunk as soon as it has it), and a
//! channel's next loop starts after its previous one, as NCCL's kernel
//! runs loops in order. Reductions and copies are fused into the
//! transfers in NCCL's kernels; they are steps here (for the data
//! interpreter) and cost no time in the NCCL runtime.
//!
//! Tags are channels; point-to-point uses channel 0.
//!
//! Tree AllReduce (NCCL's `runTreeSplit` in idea): on each channel's tree
//! ([`Comm::tree`]: a chain of GPUs inside each server, a double binary
//! tree between servers), each piece is reduced from the leaves to the
//! root, every rank adding what its children send, then broadcast from
//! the root back down; the two passes are pipelined piece by piece and a
//! piece goes down as soon as it is complete at the root.
//!
//! Tree with Simple cuts its pieces smaller on small calls, as NCCL does
//! to fill the tree's pipeline ([`tree_chunk_bytes`]).
//!
//! NVLS and NVLS-Tree (NVLink SHARP) are in [`super::nvls`].
//!
//! Left out: CollNet, NCCL's Tree for other collectives (it has
//! none), and the sizes NCCL aligns chunks to (16 bytes for Simple).

use super::comm::Comm;
use super::cut::{chunk, pieces};
use super::params::{Algorithm, Protocol};
use crate::mpi::sched::{Buf, BufSizes, Rank, RankSchedule, Region, Schedule, StepId};

/// An NCCL collective (or nccl-tests' point-to-point pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NcclColl {
    /// ncclAllReduce of `count` elements.
    AllReduce,
    /// ncclAllGather of `count` elements per rank.
    AllGather,
    /// ncclReduceScatter of `count` elements per rank (each rank sends
    /// `count` x ranks).
    ReduceScatter,
    /// ncclBroadcast of `count` elements from `root`.
    Broadcast,
    /// ncclReduce of `count` elements to `root`.
    Reduce,
    /// AllToAll of `count` elements per pair (grouped sends and receives).
    AllToAll,
    /// Each rank sends `count` elements to rank + 1 and receives from
    /// rank - 1 (nccl-tests' sendrecv).
    SendRecv,
}

/// What to build.
#[derive(Clone, Copy, Debug)]
pub struct CollCall {
    /// The operation.
    pub coll: NcclColl,
    /// Elements (per the operation's meaning above).
    pub count: u64,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// Root of Broadcast and Reduce.
    pub root: Rank,
    /// Protocol (sets the chunk size).
    pub proto: Protocol,
    /// Algorithm (Tree applies to AllReduce; the others run rings).
    pub algo: Algorithm,
}

impl CollCall {
    /// Whether the call runs NCCL's Tree (AllReduce only; the other
    /// collectives run rings whatever the algorithm).
    pub fn is_tree(&self) -> bool {
        self.algo == Algorithm::Tree && self.coll == NcclColl::AllReduce
    }
}

fn whole(buf: Buf, count: u64) -> Region {
    Region::new(buf, 0, count)
}

/// Build the schedule of `call` on `comm`.
pub fn build(comm: &Comm, call: &CollCall) -> Schedule {
    build_in_chunks(comm, call, ring_unit(comm, call))
}

/// [`build`] with the ring, tree and point-to-point schedules cut in
/// chunks of `unit` elements (what `build` takes from the call; a probe of
/// a shorter call keeps a longer one's cut, `super::footprint`). NVLS
/// schedules keep their own chunk.
pub(crate) fn build_in_chunks(comm: &Comm, call: &CollCall, unit: u64) -> Schedule {
    let n = comm.n();
    let c = call.count;
    let pn = n as u64 * c;
    let (send, recv): (u64, u64) = match call.coll {
        NcclColl::AllReduce | NcclColl::Reduce => (c, c),
        NcclColl::Broadcast => (0, c),
        NcclColl::AllGather => (c, pn),
        NcclColl::ReduceScatter => (pn, c),
        NcclColl::AllToAll => (pn, pn),
        NcclColl::SendRecv => (c, c),
    };
    let bufs = BufSizes {
        send: vec![send; n as usize],
        recv: vec![recv; n as usize],
    };
    let tree = call.is_tree();
    let nvls = nvls_applies(comm, call);
    let name = match call.coll {
        NcclColl::AllToAll | NcclColl::SendRecv => "p2p",
        _ if tree => "tree",
        _ if nvls && comm.servers > 1 => "nvls_tree",
        _ if nvls => "nvls",
        _ => "ring",
    };
    let mut s = Schedule::new(n, call.elem_bytes, bufs, name);
    if c == 0 {
        // NCCL discards a collective of no elements (enqueue.cc: "Empty
        // collectives can be discarded"): no kernel, nothing moves, for
        // every collective alike.
        s.empty_call = true;
        return s;
    }
    if nvls {
        match call.coll {
            NcclColl::AllReduce => super::nvls::all_reduce(comm, &mut s, c),
            NcclColl::AllGather => super::nvls::all_gather(comm, &mut s, c),
            _ => super::nvls::reduce_scatter(comm, &mut s, c),
        }
        s.empty_call = s.ranks.iter().all(|r| r.steps.is_empty());
        return s;
    }
    let b = Builder {
        comm,
        unit: unit.max(1),
        chans: comm.channels.max(1),
    };
    match call.coll {
        NcclColl::AllReduce if tree => b.tree_all_reduce(&mut s.ranks, c),
        NcclColl::AllReduce => b.all_reduce(&mut s.ranks, c),
        NcclColl::AllGather => b.all_gather(&mut s.ranks, c),
        NcclColl::ReduceScatter => b.reduce_scatter(&mut s.ranks, c),
        NcclColl::Broadcast => b.chain(&mut s.ranks, c, call.root, false),
        NcclColl::Reduce => b.chain(&mut s.ranks, c, call.root, true),
        NcclColl::AllToAll => b.all_to_all(&mut s.ranks, c),
        NcclColl::SendRecv => b.send_recv(&mut s.ranks, c),
    }
    s.empty_call = s.ranks.iter().all(|r| r.steps.is_empty());
    s
}

/// Elements of one chunk of the ring, tree and point-to-point schedules:
/// one step of the protocol's buffer (smaller for Tree on small calls).
pub(crate) fn ring_unit(comm: &Comm, call: &CollCall) -> u64 {
    let tree = call.is_tree();
    let step = if tree && call.proto == Protocol::Simple {
        tree_chunk_bytes(
            call.count * call.elem_bytes as u64,
            comm.channels.max(1),
            comm.tree_depth(),
        )
    } else {
        call.proto.step_bytes()
    };
    (step / call.elem_bytes.max(1) as u64).max(1)
}

/// Elements one loop of `call`'s schedule covers ([`super::cut::pieces`]:
/// channels x ranks x chunk for ring AllReduce, channels x GPUs per server
/// x chunk for NVLS AllReduce, channels x chunk for the other collectives,
/// one chunk per pair for point-to-point). A call of `count` elements
/// runs `ceil(count / loop)` loops, each of at most the steps of a full
/// one, which is what sizes a schedule before it is built
/// ([`crate::tools::nccl_tests`]).
pub fn loop_elems(comm: &Comm, call: &CollCall) -> u64 {
    let chans = comm.channels.max(1) as u64;
    if nvls_applies(comm, call) {
        let unit = (super::nvls::NVLS_CHUNK_BYTES / call.elem_bytes.max(1) as u64).max(1);
        let per = if call.coll == NcclColl::AllReduce {
            comm.gpus as u64
        } else {
            1
        };
        return chans * per * unit;
    }
    let unit = ring_unit(comm, call);
    let tree = call.is_tree();
    match call.coll {
        NcclColl::AllToAll | NcclColl::SendRecv => unit,
        NcclColl::AllReduce if !tree => chans * comm.n() as u64 * unit,
        _ => chans * unit,
    }
}

/// Whether `call` runs NVLink SHARP's schedules ([`super::nvls`]): NVLS
/// or NVLS-Tree forced or chosen, on a collective and communicator that
/// have them (AllReduce; AllGather and ReduceScatter on one server), with
/// more than one GPU per server. Anything else runs rings.
pub fn nvls_applies(comm: &Comm, call: &CollCall) -> bool {
    call.algo.is_nvls()
        && comm.gpus > 1
        && call.count > 0
        && match call.coll {
            NcclColl::AllReduce => true,
            NcclColl::AllGather | NcclColl::ReduceScatter => comm.servers == 1,
            _ => false,
        }
}

/// NCCL's chunk for Tree with Simple (`enqueue.cc`): one 512 KiB step,
/// halved while the call would give each channel fewer than 8 x depth
/// chunks (down to 128 KiB), 4 x depth (down to 64 KiB), then depth (down
/// to 32 KiB), so that the tree's pipeline fills.
pub fn tree_chunk_bytes(bytes: u64, channels: u32, depth: u32) -> u64 {
    let mut chunk = Protocol::Simple.step_bytes();
    let d = depth as u64;
    let per = |chunk: u64| bytes / (channels as u64 * chunk);
    for (times, floor) in [(8, 131_072), (4, 65_536), (1, 32_768)] {
        while per(chunk) < times * d && chunk > floor {
            chunk /= 2;
        }
    }
    chunk
}

struct Builder<'a> {
    comm: &'a Comm,
    unit: u64,
    chans: u32,
}

impl Builder<'_> {
    /// Per rank and channel: the last step of the channel's previous loop.
    fn fresh(&self, n: u32) -> Vec<Vec<Option<StepId>>> {
        vec![vec![None; self.chans as usize]; n as usize]
    }

    fn all_reduce(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        if n == 1 {
            ranks[0].copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]);
            return;
        }
        let copy: Vec<StepId> = ranks
            .iter_mut()
            .map(|r| r.copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]))
            .collect();
        let tmps: Vec<Vec<Buf>> = ranks
            .iter_mut()
            .map(|r| (0..self.chans).map(|_| r.tmp(self.unit)).collect())
            .collect();
        let mut last = self.fresh(n);
        let mut last_send = self.fresh(n);
        let rings: Vec<Vec<(Rank, Rank)>> = (0..self.chans)
            .map(|c| self.comm.ring_neighbours(c))
            .collect();
        let pos: Vec<Vec<u32>> = (0..self.chans)
            .map(|c| positions(&self.comm.ring(c)))
            .collect();
        for (_, ch, start, len) in pieces(count, self.chans, n as u64, self.unit) {
            let chi = ch as usize;
            for r in 0..n {
                let (prev, next) = rings[chi][r as usize];
                let p = pos[chi][r as usize];
                let rs = &mut ranks[r as usize];
                let tmp = tmps[r as usize][chi];
                let at = |k: u32| chunk(start, len, n, k % n);
                let first = last[r as usize][chi].unwrap_or(copy[r as usize]);
                let mut gate = vec![first];
                let mut sends = Vec::with_capacity(n as usize);
                // A connection's messages leave in order (its FIFO).
                let mut prev_send: Option<StepId> = last_send[r as usize][chi];
                // Reduce-scatter: n - 1 steps.
                for s in 0..n - 1 {
                    let (o, k) = at(p + n - s);
                    let snd = (k > 0).then(|| {
                        let deps: Vec<StepId> = gate.iter().copied().chain(prev_send).collect();
                        rs.send(next, ch, Region::new(Buf::Recv, o, k), &deps)
                    });
                    prev_send = snd.or(prev_send);
                    sends.push(snd);
                    let (o2, k2) = at(p + 2 * n - s - 1);
                    if k2 > 0 {
                        let rv = rs.recv(prev, ch, Region::new(tmp, 0, k2), &gate);
                        let red = rs.reduce(
                            Region::new(tmp, 0, k2),
                            Region::new(Buf::Recv, o2, k2),
                            &[rv],
                        );
                        gate = vec![red];
                    }
                }
                // All-gather: n - 1 steps.
                for s in 0..n - 1 {
                    let (o, k) = at(p + 1 + n - s);
                    if k > 0 {
                        let deps: Vec<StepId> = gate.iter().copied().chain(prev_send).collect();
                        prev_send = Some(rs.send(next, ch, Region::new(Buf::Recv, o, k), &deps));
                    }
                    let (o2, k2) = at(p + n - s);
                    if k2 > 0 {
                        // The chunk received here left in reduce-scatter step s.
                        let mut deps = gate.clone();
                        deps.extend(sends[s as usize]);
                        let rv = rs.recv(prev, ch, Region::new(Buf::Recv, o2, k2), &deps);
                        gate = vec![rv];
                    }
                }
                last[r as usize][chi] = rs.last();
                last_send[r as usize][chi] = prev_send;
            }
        }
    }

    fn tree_all_reduce(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        let copy: Vec<StepId> = ranks
            .iter_mut()
            .map(|r| r.copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]))
            .collect();
        if n == 1 {
            return;
        }
        let trees: Vec<_> = (0..self.chans).map(|c| self.comm.tree(c)).collect();
        // A scratch buffer per child, per channel.
        let tmps: Vec<Vec<Vec<Buf>>> = ranks
            .iter_mut()
            .enumerate()
            .map(|(r, rs)| {
                trees
                    .iter()
                    .map(|t| t[r].children.iter().map(|_| rs.tmp(self.unit)).collect())
                    .collect()
            })
            .collect();
        // Per rank and channel: the previous piece's last reduction, its
        // send up, its receive from above, and its sends down (by child).
        let (mut reduced, mut sent_up, mut got_down) =
            (self.fresh(n), self.fresh(n), self.fresh(n));
        let mut sent_down: Vec<Vec<Vec<Option<StepId>>>> =
            trees
                .iter()
                .fold(vec![Vec::new(); n as usize], |mut acc, t| {
                    for (r, node) in t.iter().enumerate() {
                        acc[r].push(vec![None; node.children.len()]);
                    }
                    acc
                });
        for (_, ch, start, len) in pieces(count, self.chans, 1, self.unit) {
            let chi = ch as usize;
            let piece = Region::new(Buf::Recv, start, len);
            for r in 0..n as usize {
                let node = &trees[chi][r];
                let rs = &mut ranks[r];
                // Up: the children's partial sums into scratch (free once
                // the previous piece's reductions are done), added in turn.
                let free = reduced[r][chi].unwrap_or(copy[r]);
                let mut acc = free;
                for (k, &child) in node.children.iter().enumerate() {
                    let t = Region::new(tmps[r][chi][k], 0, len);
                    let rv = rs.recv(child, ch, t, &[free]);
                    acc = rs.reduce(t, piece, &[rv, acc]);
                }
                reduced[r][chi] = Some(acc);
                // Then to the parent (after the previous piece: FIFO), and
                // the result back from it; the root has it already.
                let done = match node.parent {
                    Some(p) => {
                        let deps: Vec<StepId> =
                            [Some(acc), sent_up[r][chi]].into_iter().flatten().collect();
                        let up = rs.send(p, ch, piece, &deps);
                        sent_up[r][chi] = Some(up);
                        let deps: Vec<StepId> =
                            [Some(up), got_down[r][chi]].into_iter().flatten().collect();
                        let rv = rs.recv(p, ch, piece, &deps);
                        got_down[r][chi] = Some(rv);
                        rv
                    }
                    None => acc,
                };
                // Down: the result to every child.
                for (k, &child) in node.children.iter().enumerate() {
                    let prev = &mut sent_down[r][chi][k];
                    let deps: Vec<StepId> = [Some(done), *prev].into_iter().flatten().collect();
                    *prev = Some(rs.send(child, ch, piece, &deps));
                }
            }
        }
    }

    fn all_gather(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        let copy: Vec<StepId> = (0..n)
            .map(|r| {
                let dst = Region::new(Buf::Recv, r as u64 * count, count);
                ranks[r as usize].copy(whole(Buf::Send, count), dst, &[])
            })
            .collect();
        if n == 1 {
            return;
        }
        let mut last = self.fresh(n);
        let mut last_send = self.fresh(n);
        for (_, ch, start, len) in pieces(count, self.chans, 1, self.unit) {
            let chi = ch as usize;
            let ring = self.comm.ring(ch);
            let nb = self.comm.ring_neighbours(ch);
            let pos = positions(&ring);
            for r in 0..n {
                let (prev, next) = nb[r as usize];
                let p = pos[r as usize];
                let rs = &mut ranks[r as usize];
                let block = |q: u32| {
                    Region::new(
                        Buf::Recv,
                        ring[(q % n) as usize] as u64 * count + start,
                        len,
                    )
                };
                let first = last[r as usize][chi].unwrap_or(copy[r as usize]);
                let deps: Vec<StepId> = [Some(first), last_send[r as usize][chi]]
                    .into_iter()
                    .flatten()
                    .collect();
                let mut sent = rs.send(next, ch, block(p), &deps);
                let mut gate = first;
                for k in 1..n {
                    let rv = rs.recv(prev, ch, block(p + n - k), &[gate]);
                    if k < n - 1 {
                        // After the previous send: the connection's FIFO.
                        sent = rs.send(next, ch, block(p + n - k), &[rv, sent]);
                    }
                    gate = rv;
                }
                last[r as usize][chi] = rs.last();
                last_send[r as usize][chi] = Some(sent);
            }
        }
    }

    fn reduce_scatter(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        if n == 1 {
            ranks[0].copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]);
            return;
        }
        let tmps: Vec<Vec<[Buf; 2]>> = ranks
            .iter_mut()
            .map(|r| {
                (0..self.chans)
                    .map(|_| [r.tmp(self.unit), r.tmp(self.unit)])
                    .collect()
            })
            .collect();
        let mut last = self.fresh(n);
        let mut last_send = self.fresh(n);
        for (_, ch, start, len) in pieces(count, self.chans, 1, self.unit) {
            let chi = ch as usize;
            let ring = self.comm.ring(ch);
            let nb = self.comm.ring_neighbours(ch);
            let pos = positions(&ring);
            for r in 0..n {
                let (prev, next) = nb[r as usize];
                let p = pos[r as usize];
                let rs = &mut ranks[r as usize];
                let t = tmps[r as usize][chi];
                let mine = |q: u32| {
                    Region::new(
                        Buf::Send,
                        ring[(q % n) as usize] as u64 * count + start,
                        len,
                    )
                };
                // The scratch buffers are free once the last loop's sends
                // left (a connection's sends match in order).
                let gate0: Vec<StepId> = last[r as usize][chi]
                    .into_iter()
                    .chain(last_send[r as usize][chi])
                    .collect();
                // Step 0: this rank's own contribution to block p - 1.
                let mut prev_send = rs.send(next, ch, mine(p + n - 1), &gate0);
                let mut gate = gate0;
                // Sends out of the scratch buffers, by step.
                let mut from_tmp: Vec<StepId> = Vec::new();
                for s in 0..n - 1 {
                    let q = p + 2 * n - 2 - s;
                    if s == n - 2 {
                        // The last partial: block p, into the result.
                        let out = Region::new(Buf::Recv, start, len);
                        let rv = rs.recv(prev, ch, out, &gate);
                        rs.reduce(mine(q), out, &[rv]);
                    } else {
                        let buf = Region::new(t[(s % 2) as usize], 0, len);
                        let mut deps = gate.clone();
                        if s >= 2 {
                            // This buffer left two steps ago.
                            deps.push(from_tmp[s as usize - 2]);
                        }
                        let rv = rs.recv(prev, ch, buf, &deps);
                        let red = rs.reduce(mine(q), buf, &[rv]);
                        prev_send = rs.send(next, ch, buf, &[red, prev_send]);
                        from_tmp.push(prev_send);
                        gate = vec![red];
                    }
                }
                last[r as usize][chi] = rs.last();
                last_send[r as usize][chi] = Some(prev_send);
            }
        }
    }

    /// Broadcast (a pipeline from the root down its ring) or Reduce (the
    /// same chain towards the root, reducing on the way).
    fn chain(&self, ranks: &mut [RankSchedule], count: u64, root: Rank, reduce: bool) {
        let n = self.comm.n();
        let tmps: Vec<Vec<Buf>> = if reduce {
            ranks
                .iter_mut()
                .map(|r| (0..self.chans).map(|_| r.tmp(self.unit)).collect())
                .collect()
        } else {
            Vec::new()
        };
        if reduce {
            for r in 0..n {
                ranks[r as usize].copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]);
            }
        }
        if n == 1 {
            return;
        }
        let mut last = self.fresh(n);
        for (_, ch, start, len) in pieces(count, self.chans, 1, self.unit) {
            let chi = ch as usize;
            let ring = self.comm.ring(ch);
            let rp = positions(&ring)[root as usize];
            // Order from the root: the root, then the ring after it.
            let order: Vec<Rank> = (0..n).map(|i| ring[((rp + i) % n) as usize]).collect();
            let piece = Region::new(Buf::Recv, start, len);
            for (i, &r) in order.iter().enumerate() {
                let rs = &mut ranks[r as usize];
                let gate: Vec<StepId> = last[r as usize][chi]
                    .into_iter()
                    .chain(if reduce {
                        rs.steps.first().map(|_| 0)
                    } else {
                        None
                    })
                    .collect();
                if reduce {
                    // Towards the root: the tail starts, each adds its own.
                    let (up, down) = ((i > 0).then(|| order[i - 1]), order.get(i + 1).copied());
                    let mut g = gate;
                    if let Some(d) = down {
                        let t = Region::new(tmps[r as usize][chi], 0, len);
                        let rv = rs.recv(d, ch, t, &g);
                        g = vec![rs.reduce(t, piece, &[rv])];
                    }
                    if let Some(u) = up {
                        rs.send(u, ch, piece, &g);
                    }
                } else {
                    let mut g = gate;
                    if i > 0 {
                        g = vec![rs.recv(order[i - 1], ch, piece, &g)];
                    }
                    if i + 1 < order.len() {
                        rs.send(order[i + 1], ch, piece, &g);
                    }
                }
                last[r as usize][chi] = rs.last();
            }
        }
    }

    fn all_to_all(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        for r in 0..n {
            let rs = &mut ranks[r as usize];
            let own = Region::new(Buf::Send, r as u64 * count, count);
            rs.copy(own, Region::new(Buf::Recv, r as u64 * count, count), &[]);
            // Peers in the order NCCL's grouped calls post them: r + i.
            for i in 1..n {
                let to = (r + i) % n;
                let from = (r + n - i) % n;
                let (mut s_prev, mut r_prev): (Option<StepId>, Option<StepId>) = (None, None);
                for (o, k) in split(count, self.unit) {
                    let src = Region::new(Buf::Send, to as u64 * count + o, k);
                    let dst = Region::new(Buf::Recv, from as u64 * count + o, k);
                    s_prev = Some(rs.send(to, 0, src, &s_prev.into_iter().collect::<Vec<_>>()));
                    r_prev = Some(rs.recv(from, 0, dst, &r_prev.into_iter().collect::<Vec<_>>()));
                }
            }
        }
    }

    fn send_recv(&self, ranks: &mut [RankSchedule], count: u64) {
        let n = self.comm.n();
        for r in 0..n {
            let rs = &mut ranks[r as usize];
            if n == 1 {
                rs.copy(whole(Buf::Send, count), whole(Buf::Recv, count), &[]);
                continue;
            }
            let (mut s_prev, mut r_prev): (Option<StepId>, Option<StepId>) = (None, None);
            for (o, k) in split(count, self.unit) {
                let deps: Vec<StepId> = s_prev.into_iter().collect();
                s_prev = Some(rs.send((r + 1) % n, 0, Region::new(Buf::Send, o, k), &deps));
                let deps: Vec<StepId> = r_prev.into_iter().collect();
                r_prev = Some(rs.recv((r + n - 1) % n, 0, Region::new(Buf::Recv, o, k), &deps));
            }
        }
    }
}

/// `count` elements in pieces of at most `unit`: (offset, elements).
fn split(count: u64, unit: u64) -> Vec<(u64, u64)> {
    (0..count.div_ceil(unit))
        .map(|i| (i * unit, unit.min(count - i * unit)))
        .collect()
}

/// Position of every rank in `ring`.
fn positions(ring: &[Rank]) -> Vec<u32> {
    let mut pos = vec![0; ring.len()];
    for (i, &r) in ring.iter().enumerate() {
        pos[r as usize] = i as u32;
    }
    pos
}
