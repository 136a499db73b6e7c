//! The data interpreter: runs a [`Schedule`] on real buffers, without a
//! network, to prove that an algorithm computes what the MPI operation
//! promises.
//!
//! Steps start in a random order among those whose dependencies are met
//! (seeded, so a failure is reproducible), which shakes out missing
//! dependencies. Sends complete only once matched by a receive (the MPI
//! standard's rule that a correct program must not rely on buffering), so a
//! schedule that only works with eager buffering deadlocks here. Buffer
//! hazards are detected exactly: starting a step that writes a region still
//! being sent or received, or reads a region still being received, is an
//! error, as it is a data race in a real MPI program.
//!
//! Elements are `u64` values. Reductions use either wrapping addition
//! (MPI_SUM) or a non-commutative but associative operator (composition of
//! affine maps modulo 2^32), so that algorithms claiming to keep rank order
//! are checked for it.

use super::sched::{Buf, Op, Rank, Region, Schedule};
use crate::rng::Rng;
use std::collections::{HashMap, VecDeque};

/// Reduction operator for the interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedOp {
    /// Wrapping addition (commutative).
    Sum,
    /// Composition of affine maps x -> a x + b (mod 2^32), element packed as
    /// (a << 32 | b): associative, not commutative.
    Affine,
}

impl RedOp {
    /// `l (op) r`.
    pub fn apply(self, l: u64, r: u64) -> u64 {
        match self {
            RedOp::Sum => l.wrapping_add(r),
            RedOp::Affine => {
                let (a1, b1) = (l >> 32, l & 0xffff_ffff);
                let (a2, b2) = (r >> 32, r & 0xffff_ffff);
                let a = a1.wrapping_mul(a2) & 0xffff_ffff;
                let b = (a2.wrapping_mul(b1).wrapping_add(b2)) & 0xffff_ffff;
                (a << 32) | b
            }
        }
    }
}

/// Final buffers of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankBufs {
    /// The send buffer.
    pub send: Vec<u64>,
    /// The receive buffer.
    pub recv: Vec<u64>,
}

struct Pending {
    rank: Rank,
    step: u32,
    region: Region,
    writes: bool,
}

fn overlaps(a: &Region, b: &Region) -> bool {
    a.buf == b.buf
        && a.count > 0
        && b.count > 0
        && a.off < b.off + b.count
        && b.off < a.off + a.count
}

/// Run `s` with the given initial buffers (`init[r]`), returning the final
/// buffers, or a description of the deadlock, race or size mismatch found.
pub fn run(
    s: &Schedule,
    init: Vec<RankBufs>,
    op: RedOp,
    seed: u64,
) -> std::result::Result<Vec<RankBufs>, String> {
    let p = s.p() as usize;
    if init.len() != p {
        return Err(format!("{} initial buffers for {} ranks", init.len(), p));
    }
    s.check()?;
    // Buffers per rank: [send, recv, tmp0, tmp1, ...].
    let mut bufs: Vec<Vec<Vec<u64>>> = init
        .into_iter()
        .enumerate()
        .map(|(r, b)| {
            let mut v = vec![b.send, b.recv];
            for &t in &s.ranks[r].tmp_elems {
                v.push(vec![0; t as usize]);
            }
            v
        })
        .collect();
    for (r, b) in bufs.iter().enumerate() {
        if b[0].len() as u64 != s.bufs.send[r] || b[1].len() as u64 != s.bufs.recv[r] {
            return Err(format!("rank {r}: initial buffers have the wrong sizes"));
        }
    }
    let bi = |b: Buf| match b {
        Buf::Send => 0usize,
        Buf::Recv => 1,
        Buf::Tmp(k) => 2 + k as usize,
    };
    // Dependency bookkeeping.
    let mut waiting: Vec<Vec<u32>> = Vec::with_capacity(p);
    let mut dependents: Vec<Vec<Vec<u32>>> = Vec::with_capacity(p);
    let mut ready: Vec<(Rank, u32)> = Vec::new();
    for (r, rs) in s.ranks.iter().enumerate() {
        let mut w = Vec::with_capacity(rs.steps.len());
        let mut d = vec![Vec::new(); rs.steps.len()];
        for (i, st) in rs.steps.iter().enumerate() {
            w.push(st.deps.len() as u32);
            for &x in &st.deps {
                d[x as usize].push(i as u32);
            }
            if st.deps.is_empty() {
                ready.push((r as Rank, i as u32));
            }
        }
        waiting.push(w);
        dependents.push(d);
    }
    let total: usize = s.n_steps();
    let mut done_count = 0usize;
    let mut done: Vec<Vec<bool>> = s.ranks.iter().map(|r| vec![false; r.steps.len()]).collect();
    // Channels: per (src, dst, tag), messages in flight and posted receives.
    let mut msgs: Inflight = HashMap::new();
    let mut posted: Posted = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    // Switch reductions: contributions in flight and reductions waiting,
    // per (contributor, reader, tag); per reduction step, the parts still
    // missing and the parts by group position.
    let mut offers: Inflight = HashMap::new();
    let mut reading: Posted = HashMap::new();
    let mut parts: Parts = HashMap::new();
    // Multicasts: copies not yet received, per (sender, step).
    let mut mc_left: HashMap<(Rank, u32), u32> = HashMap::new();
    let mut rng = Rng::new(seed, 0x1e7e);

    let complete = |r: Rank,
                    i: u32,
                    done: &mut Vec<Vec<bool>>,
                    waiting: &mut Vec<Vec<u32>>,
                    ready: &mut Vec<(Rank, u32)>,
                    pending: &mut Vec<Pending>,
                    done_count: &mut usize| {
        done[r as usize][i as usize] = true;
        *done_count += 1;
        pending.retain(|x| !(x.rank == r && x.step == i));
        for &d in &dependents[r as usize][i as usize] {
            let w = &mut waiting[r as usize][d as usize];
            *w -= 1;
            if *w == 0 {
                ready.push((r, d));
            }
        }
    };

    while !ready.is_empty() {
        let k = (rng.next_u64() % ready.len() as u64) as usize;
        let (r, i) = ready.swap_remove(k);
        let step = &s.ranks[r as usize].steps[i as usize];
        // Hazards against steps of this rank still in flight.
        let (reads, writes): (Vec<Region>, Vec<Region>) = match step.op {
            Op::Send { src, .. } => (vec![src], vec![]),
            Op::Recv { dst, .. } => (vec![], vec![dst]),
            Op::Reduce { src, dst } => (vec![src, dst], vec![dst]),
            Op::Copy { src, dst } => (vec![src], vec![dst]),
            Op::Compute { .. } => (vec![], vec![]),
            Op::SwitchSend { src, .. } => (vec![src], vec![]),
            Op::SwitchReduce { src, dst, .. } => (vec![src], vec![dst]),
            // A multicast of a region into itself leaves it as it is.
            Op::Multicast { src, dst, .. } if src == dst => (vec![src], vec![]),
            Op::Multicast { src, dst, .. } => (vec![src], vec![dst]),
        };
        for x in pending.iter().filter(|x| x.rank == r) {
            let clash = writes.iter().any(|w| overlaps(w, &x.region))
                || (x.writes && reads.iter().any(|g| overlaps(g, &x.region)));
            if clash {
                return Err(format!(
                    "rank {r} step {i} ({:?}) touches {:?} while step {} is still {} it",
                    step.op,
                    x.region,
                    x.step,
                    if x.writes {
                        "receiving into"
                    } else {
                        "sending"
                    }
                ));
            }
        }
        let rb = &mut bufs[r as usize];
        // The steps this one's start completes (itself, matched peers).
        let mut ends: Vec<(Rank, u32)> = Vec::new();
        match step.op {
            Op::Send { to, tag, src } => {
                let b = &rb[bi(src.buf)];
                let data = b[src.off as usize..(src.off + src.count) as usize].to_vec();
                msgs.entry((r, to, tag)).or_default().push_back((i, data));
                pending.push(Pending {
                    rank: r,
                    step: i,
                    region: src,
                    writes: false,
                });
                let matched = try_match((r, to, tag), &mut msgs, &mut posted, &mut bufs, s, &bi)?;
                ends.extend(sides(matched, s, &mut mc_left));
            }
            Op::Recv { from, tag, dst } => {
                posted.entry((from, r, tag)).or_default().push_back(i);
                pending.push(Pending {
                    rank: r,
                    step: i,
                    region: dst,
                    writes: true,
                });
                let matched = try_match((from, r, tag), &mut msgs, &mut posted, &mut bufs, s, &bi)?;
                ends.extend(sides(matched, s, &mut mc_left));
            }
            Op::Multicast { tag, src, dst, .. } => {
                let data =
                    rb[bi(src.buf)][src.off as usize..(src.off + src.count) as usize].to_vec();
                rb[bi(dst.buf)][dst.off as usize..(dst.off + dst.count) as usize]
                    .copy_from_slice(&data);
                pending.push(Pending {
                    rank: r,
                    step: i,
                    region: src,
                    writes: false,
                });
                let peers: Vec<Rank> = step.op.group_peers(r).collect();
                mc_left.insert((r, i), peers.len() as u32);
                if peers.is_empty() {
                    ends.push((r, i));
                }
                for q in peers {
                    msgs.entry((r, q, tag))
                        .or_default()
                        .push_back((i, data.clone()));
                    let m = try_match((r, q, tag), &mut msgs, &mut posted, &mut bufs, s, &bi)?;
                    ends.extend(sides(m, s, &mut mc_left));
                }
            }
            Op::SwitchSend { to, tag, src } => {
                let data =
                    rb[bi(src.buf)][src.off as usize..(src.off + src.count) as usize].to_vec();
                offers.entry((r, to, tag)).or_default().push_back((i, data));
                pending.push(Pending {
                    rank: r,
                    step: i,
                    region: src,
                    writes: false,
                });
                let m = try_switch((r, to, tag), &mut offers, &mut reading, &mut parts, s)?;
                ends.extend(reduced(m, s, op, &mut parts, &mut bufs, &bi));
            }
            Op::SwitchReduce {
                first,
                tag,
                src,
                dst,
                ..
            } => {
                let own =
                    rb[bi(src.buf)][src.off as usize..(src.off + src.count) as usize].to_vec();
                let peers: Vec<Rank> = step.op.group_peers(r).collect();
                let mut got = vec![Vec::new(); peers.len() + 1];
                got[(r - first) as usize] = own;
                parts.insert((r, i), (peers.len() as u32, got));
                pending.push(Pending {
                    rank: r,
                    step: i,
                    region: dst,
                    writes: true,
                });
                let mut m = Vec::new();
                for q in peers {
                    reading.entry((q, r, tag)).or_default().push_back(i);
                    m.extend(try_switch(
                        (q, r, tag),
                        &mut offers,
                        &mut reading,
                        &mut parts,
                        s,
                    )?);
                }
                // A group of one reduces its own part at once.
                if m.is_empty() && parts[&(r, i)].0 == 0 {
                    m.push((r, u32::MAX, r, i));
                }
                ends.extend(reduced(m, s, op, &mut parts, &mut bufs, &bi));
            }
            Op::Reduce { src, dst } => {
                let a = rb[bi(src.buf)][src.off as usize..(src.off + src.count) as usize].to_vec();
                let d = &mut rb[bi(dst.buf)][dst.off as usize..(dst.off + dst.count) as usize];
                for (x, y) in d.iter_mut().zip(a) {
                    *x = op.apply(y, *x);
                }
                ends.push((r, i));
            }
            Op::Copy { src, dst } => {
                let a = rb[bi(src.buf)][src.off as usize..(src.off + src.count) as usize].to_vec();
                rb[bi(dst.buf)][dst.off as usize..(dst.off + dst.count) as usize]
                    .copy_from_slice(&a);
                ends.push((r, i));
            }
            Op::Compute { .. } => ends.push((r, i)),
        }
        for (x, y) in ends {
            complete(
                x,
                y,
                &mut done,
                &mut waiting,
                &mut ready,
                &mut pending,
                &mut done_count,
            );
        }
    }
    if done_count != total {
        let mut stuck = Vec::new();
        for (r, d) in done.iter().enumerate() {
            if let Some(i) = d.iter().position(|x| !x) {
                stuck.push(format!(
                    "rank {r} at step {i} ({:?})",
                    s.ranks[r].steps[i].op
                ));
            }
            if stuck.len() >= 4 {
                break;
            }
        }
        return Err(format!(
            "deadlock: {} of {} steps never completed; first stuck: {}",
            total - done_count,
            total,
            stuck.join("; ")
        ));
    }
    Ok(bufs
        .into_iter()
        .map(|mut v| {
            v.truncate(2);
            let recv = v.pop().unwrap();
            let send = v.pop().unwrap();
            RankBufs { send, recv }
        })
        .collect())
}

type Matched = Vec<(Rank, u32, Rank, u32)>;
/// Per switch reduction (reader, step): parts still missing, and the
/// parts by group position.
type Parts = HashMap<(Rank, u32), (u32, Vec<Vec<u64>>)>;
type Key = (Rank, Rank, u32);
type Inflight = HashMap<Key, VecDeque<(u32, Vec<u64>)>>;
type Posted = HashMap<Key, VecDeque<u32>>;

fn try_match(
    key: Key,
    msgs: &mut Inflight,
    posted: &mut Posted,
    bufs: &mut [Vec<Vec<u64>>],
    s: &Schedule,
    bi: &dyn Fn(Buf) -> usize,
) -> std::result::Result<Matched, String> {
    let mut out = Vec::new();
    while let Some((si, data, ri)) = next_pair(key, msgs, posted) {
        let (src, dst) = (key.0, key.1);
        let Op::Recv { dst: region, .. } = s.ranks[dst as usize].steps[ri as usize].op else {
            unreachable!("posted queue holds receives")
        };
        if data.len() as u64 != region.count {
            return Err(format!(
                "rank {dst} step {ri} expects {} elements from rank {src} tag {} but step {si} sent {}",
                region.count,
                key.2,
                data.len()
            ));
        }
        let b = &mut bufs[dst as usize][bi(region.buf)];
        b[region.off as usize..(region.off + region.count) as usize].copy_from_slice(&data);
        out.push((src, si, dst, ri));
    }
    Ok(out)
}

/// The next message of `key` in flight and the next step waiting for one,
/// if there are both: (sender's step, data, receiver's step).
fn next_pair(key: Key, msgs: &mut Inflight, posted: &mut Posted) -> Option<(u32, Vec<u64>, u32)> {
    let (mq, pq) = (msgs.get_mut(&key)?, posted.get_mut(&key)?);
    if mq.is_empty() || pq.is_empty() {
        return None;
    }
    let (si, data) = mq.pop_front()?;
    Some((si, data, pq.pop_front()?))
}

/// The steps a set of matches completes: every receive, and every send
/// except a multicast whose other copies are still unreceived.
fn sides(
    matched: Matched,
    s: &Schedule,
    mc_left: &mut HashMap<(Rank, u32), u32>,
) -> Vec<(Rank, u32)> {
    let mut out = Vec::new();
    for (sr, si, rr, ri) in matched {
        out.push((rr, ri));
        if let Op::Multicast { .. } = s.ranks[sr as usize].steps[si as usize].op {
            let left = mc_left.get_mut(&(sr, si)).expect("a started multicast");
            *left -= 1;
            if *left > 0 {
                continue;
            }
        }
        out.push((sr, si));
    }
    out
}

/// Match contributions of `key` = (contributor, reader, tag) with the
/// reader's switch reductions, in order; the data goes into the
/// reduction's parts. Returns (contributor, step, reader, reduction).
fn try_switch(
    key: Key,
    offers: &mut Inflight,
    reading: &mut Posted,
    parts: &mut Parts,
    s: &Schedule,
) -> std::result::Result<Matched, String> {
    let mut out = Vec::new();
    while let Some((si, data, ri)) = next_pair(key, offers, reading) {
        let (src, dst) = (key.0, key.1);
        let Op::SwitchReduce {
            first, dst: region, ..
        } = s.ranks[dst as usize].steps[ri as usize].op
        else {
            unreachable!("reading queues hold switch reductions")
        };
        if data.len() as u64 != region.count {
            return Err(format!(
                "rank {dst} step {ri} reduces {} elements but rank {src} step {si} offers {}",
                region.count,
                data.len()
            ));
        }
        let p = parts.get_mut(&(dst, ri)).expect("a started reduction");
        p.0 -= 1;
        p.1[(src - first) as usize] = data;
        out.push((src, si, dst, ri));
    }
    Ok(out)
}

/// The steps a set of switch matches completes: every contribution, and
/// every reduction that has all its parts (its result written, reduced
/// in rank order). A contribution step of `u32::MAX` stands for none.
fn reduced(
    matched: Matched,
    s: &Schedule,
    op: RedOp,
    parts: &mut Parts,
    bufs: &mut [Vec<Vec<u64>>],
    bi: &dyn Fn(Buf) -> usize,
) -> Vec<(Rank, u32)> {
    let mut out = Vec::new();
    for (sr, si, rr, ri) in matched {
        if si != u32::MAX {
            out.push((sr, si));
        }
        // Still missing parts, or already done by an earlier match.
        if parts.get(&(rr, ri)).is_none_or(|p| p.0 > 0) {
            continue;
        }
        let (_, got) = parts.remove(&(rr, ri)).expect("a started reduction");
        let Op::SwitchReduce { dst, .. } = s.ranks[rr as usize].steps[ri as usize].op else {
            unreachable!("a switch reduction")
        };
        let mut acc = got[0].clone();
        for part in &got[1..] {
            for (a, &b) in acc.iter_mut().zip(part) {
                *a = op.apply(*a, b);
            }
        }
        bufs[rr as usize][bi(dst.buf)][dst.off as usize..(dst.off + dst.count) as usize]
            .copy_from_slice(&acc);
        out.push((rr, ri));
    }
    out
}
