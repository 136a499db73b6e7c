//! Program-order builder: writes one rank's steps the way a C implementation
//! issues them, so that dependencies follow the code's posting and waiting.
//!
//! An MPI algorithm is a sequence of calls: non-blocking posts (`isend`,
//! `irecv`), waits on some of them, blocking calls (a post followed by its
//! wait) and local work (copy, reduce). A step posted at some point of the
//! program can only start once everything waited before that point has
//! completed; [`Prog`] tracks that frontier and keeps it small by dropping
//! entries already implied by a later-waited step. Two posts with no wait in
//! between are independent, exactly as in MPI.
//!
//! Tags: MPI libraries use one tag per collective and rely on
//! non-overtaking order. Here the k-th message from rank a to rank b (in
//! program order) gets tag k on both sides, which matches them identically
//! and stays unambiguous when the interpreter starts independent posts in
//! any order. Left out: `MPI_ANY_SOURCE` (algorithms that use it, such as
//! the linear barrier, name the peer instead) and synchronous-mode sends.

use super::super::sched::{Buf, Op, Rank, RankSchedule, Region, Schedule, StepId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NEVER: u32 = u32::MAX;

/// Multiplicative hash for rank keys (the default SipHash is needlessly slow
/// for the p^2 peer counters of an alltoall).
#[derive(Default)]
pub(crate) struct RankHasher(u64);

impl Hasher for RankHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (x as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type PeerMap = HashMap<Rank, u32, BuildHasherDefault<RankHasher>>;

/// `count` elements of `r` from element `off` of `r`.
pub(crate) fn sub(r: Region, off: u64, count: u64) -> Region {
    debug_assert!(off + count <= r.count, "{r:?} has no [{off}, +{count})");
    Region::new(r.buf, r.off + off, count)
}

/// One rank's program being written.
pub(crate) struct Prog<'a> {
    rs: &'a mut RankSchedule,
    /// This rank.
    pub me: Rank,
    /// Steps that must complete before anything posted now may start.
    after: Vec<StepId>,
    /// Bumped at every wait.
    gen: u32,
    /// Per step: `gen` when it was posted.
    posted: Vec<u32>,
    /// Per step: `gen` right after it was waited (NEVER if not yet).
    waited: Vec<u32>,
    sent: PeerMap,
    recvd: PeerMap,
}

impl<'a> Prog<'a> {
    /// One program per rank of `s` (which must have no steps yet).
    pub fn all(s: &'a mut Schedule) -> Vec<Prog<'a>> {
        s.ranks
            .iter_mut()
            .enumerate()
            .map(|(r, rs)| {
                debug_assert!(rs.steps.is_empty());
                Prog {
                    rs,
                    me: r as Rank,
                    after: Vec::new(),
                    gen: 0,
                    posted: Vec::new(),
                    waited: Vec::new(),
                    sent: PeerMap::default(),
                    recvd: PeerMap::default(),
                }
            })
            .collect()
    }

    fn post(&mut self, op: Op, extra: &[StepId]) -> StepId {
        let id = if extra.is_empty() {
            self.rs.push(op, &self.after)
        } else {
            let mut deps = self.after.clone();
            for &e in extra {
                if !deps.contains(&e) {
                    deps.push(e);
                }
            }
            self.rs.push(op, &deps)
        };
        self.posted.push(self.gen);
        self.waited.push(NEVER);
        id
    }

    /// Non-blocking send of `src` to `to`.
    pub fn isend(&mut self, to: Rank, src: Region) -> StepId {
        self.isend_after(to, src, &[])
    }

    /// Non-blocking send that also waits for `extra` (a request slot being
    /// reused, as in windowed algorithms that wait for one request before
    /// re-posting into its slot).
    pub fn isend_after(&mut self, to: Rank, src: Region, extra: &[StepId]) -> StepId {
        let seq = self.sent.entry(to).or_insert(0);
        let tag = *seq;
        *seq += 1;
        self.post(Op::Send { to, tag, src }, extra)
    }

    /// Non-blocking receive into `dst` from `from`.
    pub fn irecv(&mut self, from: Rank, dst: Region) -> StepId {
        self.irecv_after(from, dst, &[])
    }

    /// Non-blocking receive that also waits for `extra` (see
    /// [`Prog::isend_after`]).
    pub fn irecv_after(&mut self, from: Rank, dst: Region, extra: &[StepId]) -> StepId {
        let seq = self.recvd.entry(from).or_insert(0);
        let tag = *seq;
        *seq += 1;
        self.post(Op::Recv { from, tag, dst }, extra)
    }

    /// Wait for `ids`: everything posted later depends on them.
    pub fn wait(&mut self, ids: &[StepId]) {
        if ids.is_empty() {
            return;
        }
        let newest = ids.iter().map(|&i| self.posted[i as usize]).max().unwrap();
        self.gen += 1;
        // A frontier entry waited no later than `newest` was a dependency
        // of that post already.
        let waited = &self.waited;
        self.after.retain(|&x| waited[x as usize] > newest);
        for &i in ids {
            if self.waited[i as usize] == NEVER {
                self.waited[i as usize] = self.gen;
                self.after.push(i);
            }
        }
    }

    /// Blocking send.
    pub fn send(&mut self, to: Rank, src: Region) {
        let s = self.isend(to, src);
        self.wait(&[s]);
    }

    /// Blocking receive.
    pub fn recv(&mut self, from: Rank, dst: Region) {
        let r = self.irecv(from, dst);
        self.wait(&[r]);
    }

    /// Open MPI's `ompi_coll_base_sendrecv_actual` (and MPICH's
    /// `MPIC_Sendrecv`): post the receive, send, wait for both.
    pub fn sendrecv(&mut self, to: Rank, src: Region, from: Rank, dst: Region) {
        let r = self.irecv(from, dst);
        let s = self.isend(to, src);
        self.wait(&[s, r]);
    }

    /// Local copy (skipped when empty or in place).
    pub fn copy(&mut self, src: Region, dst: Region) {
        debug_assert_eq!(src.count, dst.count);
        if src.count == 0 || src == dst {
            return;
        }
        let c = self.post(Op::Copy { src, dst }, &[]);
        self.wait(&[c]);
    }

    /// `dst = src (op) dst` (skipped when empty).
    pub fn reduce(&mut self, src: Region, dst: Region) {
        debug_assert_eq!(src.count, dst.count);
        if src.count == 0 {
            return;
        }
        let c = self.post(Op::Reduce { src, dst }, &[]);
        self.wait(&[c]);
    }

    /// A scratch buffer of `elems` elements, as a region.
    pub fn tmp(&mut self, elems: u64) -> Region {
        debug_assert!(self.rs.tmp_elems.len() < 256, "too many scratch buffers");
        Region::new(self.rs.tmp(elems), 0, elems)
    }
}

/// The whole of a user buffer `buf` of `count` elements.
pub(crate) fn whole(buf: Buf, count: u64) -> Region {
    Region::new(buf, 0, count)
}
