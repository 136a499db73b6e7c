//! Schedules: what each rank of an MPI operation does, as a small dependency
//! graph of point-to-point steps and local work.
//!
//! A collective algorithm (or a benchmark pattern such as a ping-pong) is
//! compiled once into a [`Schedule`]: for every rank, a list of [`Step`]s
//! (send, receive, reduce, copy), each starting when the earlier steps it
//! depends on have completed. The same schedule is run in two ways: by the
//! data interpreter ([`super::interp`]) on real buffers to prove that the
//! algorithm computes the right result, and by the MPI runtime on the
//! simulated fabric to time it. Sizes are in elements of `elem_bytes` bytes,
//! so algorithms that split a vector (ring, Rabenseifner) split it the way
//! MPI libraries do, on element boundaries.
//!
//! Messages match like MPI messages: by (source, tag) in posting order (the
//! communicator is implicit: one schedule runs at a time per rank).
//!
//! Left out: datatypes other than contiguous vectors, and MPI_IN_PLACE
//! variants (algorithms copy Send into Recv explicitly where MPI would).

/// A rank of the communicator, 0..p.
pub type Rank = u32;

/// The least a message counts for in a repetition budget
/// ([`Schedule::reps_within`]): a minimum Ethernet frame.
pub const MIN_MESSAGE_BYTES: u64 = 64;

/// A rank's buffers. `Send` and `Recv` are the user's buffers of the
/// operation; `Tmp(k)` are scratch buffers an algorithm allocates (sizes in
/// [`RankSchedule::tmp_elems`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    /// The user's send buffer (for Bcast: unused; the data lives in Recv).
    Send,
    /// The user's receive buffer (for Bcast: the broadcast buffer).
    Recv,
    /// Scratch buffer number k.
    Tmp(u8),
}

/// A contiguous range of elements of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The buffer.
    pub buf: Buf,
    /// First element.
    pub off: u64,
    /// Number of elements.
    pub count: u64,
}

impl Region {
    /// `count` elements of `buf` from `off`.
    pub fn new(buf: Buf, off: u64, count: u64) -> Region {
        Region { buf, off, count }
    }
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send `src` to rank `to` with `tag`. The data is taken when the step
    /// starts; the step completes when MPI would complete the send request.
    Send {
        /// Destination rank.
        to: Rank,
        /// Message tag.
        tag: u32,
        /// Data sent.
        src: Region,
    },
    /// Receive from rank `from` with `tag` into `dst`. The matched message
    /// must have exactly `dst.count` elements.
    Recv {
        /// Source rank.
        from: Rank,
        /// Message tag.
        tag: u32,
        /// Where the data lands.
        dst: Region,
    },
    /// Element-wise reduction: `dst[i] = src[i] (op) dst[i]` (`src` is the
    /// left operand, which matters only for non-commutative operations).
    /// Costs CPU time proportional to the bytes reduced.
    Reduce {
        /// Left operand.
        src: Region,
        /// Right operand and result.
        dst: Region,
    },
    /// Local copy (costs memory bandwidth).
    Copy {
        /// From.
        src: Region,
        /// To.
        dst: Region,
    },
    /// Local computation of a fixed duration (an application kernel such
    /// as HPL's DGEMM update). It runs beside the rank's MPI progress, as
    /// if the application polled MPI between chunks of work, so messages
    /// of other steps keep moving meanwhile. Touches no buffer.
    Compute {
        /// Duration, ps.
        ps: u64,
    },
    /// NVLink SHARP (NVSwitch, NCCL's NVLS): offer `src` to the in-switch
    /// reduction rank `to` reads with [`Op::SwitchReduce`]. Completes when
    /// that reduction has read it. Matched by (source, tag) in order, like
    /// a send, but only by a switch reduction.
    SwitchSend {
        /// The rank that reads the reduction.
        to: Rank,
        /// Message tag.
        tag: u32,
        /// This rank's contribution.
        src: Region,
    },
    /// NVLink SHARP's `multimem.ld_reduce`: `dst` = the reduction, in rank
    /// order, of the `n` ranks `first .. first + n` (this rank among them),
    /// this rank's own part being `src` and every other rank's its
    /// [`Op::SwitchSend`] to this rank with `tag`. The switch reads each
    /// contribution and delivers one reduced copy.
    SwitchReduce {
        /// First rank of the group.
        first: Rank,
        /// Ranks in the group.
        n: u32,
        /// Message tag.
        tag: u32,
        /// This rank's contribution.
        src: Region,
        /// The result.
        dst: Region,
    },
    /// NVLink SHARP's `multimem.st`: store `src` into every rank of
    /// `first .. first + n` at once: into this rank's own `dst`, and to
    /// each other rank as a message matched by its [`Op::Recv`] from this
    /// rank with `tag`. The sender's link carries the data once; the
    /// switch copies it to every receiver.
    Multicast {
        /// First rank of the group.
        first: Rank,
        /// Ranks in the group (this one among them).
        n: u32,
        /// Message tag.
        tag: u32,
        /// The data.
        src: Region,
        /// This rank's own copy.
        dst: Region,
    },
}

impl Op {
    /// The group `first .. first + n` of a switch operation, without
    /// `me`; empty for other operations.
    pub fn group_peers(&self, me: Rank) -> impl Iterator<Item = Rank> {
        let (first, n) = match *self {
            Op::SwitchReduce { first, n, .. } | Op::Multicast { first, n, .. } => (first, n),
            _ => (0, 0),
        };
        (first..first + n).filter(move |&r| r != me)
    }
}

/// One step and the earlier steps (indices into the same rank's list) it
/// waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The operation.
    pub op: Op,
    /// Indices of earlier steps of this rank that must complete first.
    pub deps: Vec<u32>,
}

/// Everything one rank does in an operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankSchedule {
    /// Steps in posting order; a step only depends on earlier ones.
    pub steps: Vec<Step>,
    /// Sizes of the scratch buffers `Tmp(0)`, `Tmp(1)`, ... in elements.
    pub tmp_elems: Vec<u64>,
}

/// Step handle returned by the builder, to express dependencies.
pub type StepId = u32;

impl RankSchedule {
    /// Append a step depending on `deps`; returns its id.
    pub fn push(&mut self, op: Op, deps: &[StepId]) -> StepId {
        let id = self.steps.len() as StepId;
        debug_assert!(deps.iter().all(|&d| d < id), "deps must be earlier steps");
        self.steps.push(Step {
            op,
            deps: deps.to_vec(),
        });
        id
    }

    /// Send `src` to `to`.
    pub fn send(&mut self, to: Rank, tag: u32, src: Region, deps: &[StepId]) -> StepId {
        self.push(Op::Send { to, tag, src }, deps)
    }

    /// Receive from `from` into `dst`.
    pub fn recv(&mut self, from: Rank, tag: u32, dst: Region, deps: &[StepId]) -> StepId {
        self.push(Op::Recv { from, tag, dst }, deps)
    }

    /// `dst = src (op) dst`.
    pub fn reduce(&mut self, src: Region, dst: Region, deps: &[StepId]) -> StepId {
        debug_assert_eq!(src.count, dst.count);
        self.push(Op::Reduce { src, dst }, deps)
    }

    /// Copy `src` to `dst`.
    pub fn copy(&mut self, src: Region, dst: Region, deps: &[StepId]) -> StepId {
        debug_assert_eq!(src.count, dst.count);
        self.push(Op::Copy { src, dst }, deps)
    }

    /// Offer `src` to `to`'s in-switch reduction ([`Op::SwitchSend`]).
    pub fn switch_send(&mut self, to: Rank, tag: u32, src: Region, deps: &[StepId]) -> StepId {
        self.push(Op::SwitchSend { to, tag, src }, deps)
    }

    /// `dst` = the in-switch reduction of the group ([`Op::SwitchReduce`]).
    pub fn switch_reduce(
        &mut self,
        group: (Rank, u32),
        tag: u32,
        src: Region,
        dst: Region,
        deps: &[StepId],
    ) -> StepId {
        debug_assert_eq!(src.count, dst.count);
        let (first, n) = group;
        self.push(
            Op::SwitchReduce {
                first,
                n,
                tag,
                src,
                dst,
            },
            deps,
        )
    }

    /// Store `src` into every rank of the group ([`Op::Multicast`]).
    pub fn multicast(
        &mut self,
        group: (Rank, u32),
        tag: u32,
        src: Region,
        dst: Region,
        deps: &[StepId],
    ) -> StepId {
        debug_assert_eq!(src.count, dst.count);
        let (first, n) = group;
        self.push(
            Op::Multicast {
                first,
                n,
                tag,
                src,
                dst,
            },
            deps,
        )
    }

    /// Compute for `ps` picoseconds.
    pub fn compute(&mut self, ps: u64, deps: &[StepId]) -> StepId {
        self.push(Op::Compute { ps }, deps)
    }

    /// Allocate a scratch buffer of `elems` elements; returns it.
    pub fn tmp(&mut self, elems: u64) -> Buf {
        self.tmp_elems.push(elems);
        Buf::Tmp((self.tmp_elems.len() - 1) as u8)
    }

    /// Ids of every step so far (to make a step wait for all of them).
    pub fn all(&self) -> Vec<StepId> {
        (0..self.steps.len() as StepId).collect()
    }

    /// The last step, if any (for chains).
    pub fn last(&self) -> Option<StepId> {
        self.steps.len().checked_sub(1).map(|i| i as StepId)
    }
}

/// Sizes of the user buffers of every rank, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufSizes {
    /// Elements of `Send` per rank.
    pub send: Vec<u64>,
    /// Elements of `Recv` per rank.
    pub recv: Vec<u64>,
}

/// A compiled operation: one [`RankSchedule`] per rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Per rank.
    pub ranks: Vec<RankSchedule>,
    /// Bytes per element (4 for MPI_FLOAT, 1 for MPI_BYTE).
    pub elem_bytes: u32,
    /// User buffer sizes.
    pub bufs: BufSizes,
    /// A short name of the algorithm, as the MPI library would call it.
    pub algorithm: String,
    /// An MPI call that moves nothing (a collective of zero elements, or
    /// on one rank with nothing to copy): no steps, but each rank pays the
    /// library's call overhead. False for schedules that are not one MPI
    /// call (HPL's phases, idle ranks of a pattern).
    pub empty_call: bool,
}

impl Schedule {
    /// An empty schedule for `p` ranks.
    pub fn new(p: u32, elem_bytes: u32, bufs: BufSizes, algorithm: &str) -> Schedule {
        Schedule {
            ranks: vec![RankSchedule::default(); p as usize],
            elem_bytes,
            bufs,
            algorithm: algorithm.to_string(),
            empty_call: false,
        }
    }

    /// Per rank, per step: the later steps that wait for it (the reverse
    /// of `deps`), what a runtime needs to release steps as others end.
    pub fn dependents(&self) -> Vec<Vec<Vec<u32>>> {
        self.ranks
            .iter()
            .map(|rs| {
                let mut d = vec![Vec::new(); rs.steps.len()];
                for (i, st) in rs.steps.iter().enumerate() {
                    for &x in &st.deps {
                        d[x as usize].push(i as u32);
                    }
                }
                d
            })
            .collect()
    }

    /// Number of ranks.
    pub fn p(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Total number of steps over all ranks.
    pub fn n_steps(&self) -> usize {
        self.ranks.iter().map(|r| r.steps.len()).sum()
    }

    /// Total bytes sent by all ranks.
    pub fn bytes_sent(&self) -> u64 {
        let eb = self.elem_bytes as u64;
        self.ranks
            .iter()
            .flat_map(|r| r.steps.iter())
            .map(|s| match s.op {
                Op::Send { src, .. } | Op::SwitchSend { src, .. } => src.count * eb,
                Op::Multicast { src, n, .. } => src.count * eb * n.saturating_sub(1) as u64,
                _ => 0,
            })
            .sum()
    }

    /// What one repetition weighs against a budget: every message's bytes,
    /// each counting at least `min_message` (a multicast once per
    /// receiver).
    pub fn budget_bytes(&self, min_message: u64) -> u64 {
        let eb = self.elem_bytes as u64;
        self.ranks
            .iter()
            .flat_map(|r| r.steps.iter())
            .map(|s| match s.op {
                Op::Send { src, .. } | Op::SwitchSend { src, .. } => {
                    (src.count * eb).max(min_message)
                }
                Op::Multicast { src, n, .. } => {
                    (src.count * eb).max(min_message) * n.saturating_sub(1) as u64
                }
                _ => 0,
            })
            .sum()
    }

    /// Repetitions that keep the fabric's traffic within `max_bytes`:
    /// `reps` capped at `max_bytes / budget_bytes(min_message)` but at
    /// least 1. The MPI tools count each message as at least
    /// [`MIN_MESSAGE_BYTES`]: small messages cost the simulation per
    /// message, not per byte, and counted as their bytes alone (or nothing,
    /// at 0 B) a 512-rank all-to-all of 1 B ran its 1,000 repetitions of
    /// 261,632 messages under any budget. nccl-tests counts bytes (0).
    pub fn reps_within(&self, reps: u32, max_bytes: u64, min_message: u64) -> u32 {
        match max_bytes.checked_div(self.budget_bytes(min_message)) {
            Some(n) => (n.min(reps as u64) as u32).max(1),
            None => reps,
        }
    }

    /// Number of elements of `buf` at `rank`.
    pub fn buf_elems(&self, rank: Rank, buf: Buf) -> u64 {
        match buf {
            Buf::Send => self.bufs.send[rank as usize],
            Buf::Recv => self.bufs.recv[rank as usize],
            Buf::Tmp(k) => self.ranks[rank as usize]
                .tmp_elems
                .get(k as usize)
                .copied()
                .unwrap_or(0),
        }
    }

    /// Check the structure: dependencies point backwards, regions stay in
    /// their buffers, peers exist, and every send has a matching receive
    /// of the same size (matched by (source, destination, tag) in order).
    /// Returns a description of the first problem found.
    pub fn check(&self) -> std::result::Result<(), String> {
        use std::collections::HashMap;
        let p = self.p();
        let mut sends: HashMap<(Rank, Rank, u32), Vec<u64>> = HashMap::new();
        let mut recvs: HashMap<(Rank, Rank, u32), Vec<u64>> = HashMap::new();
        // Contributions to switch reductions, and what those read.
        let mut offers: HashMap<(Rank, Rank, u32), Vec<u64>> = HashMap::new();
        let mut reads: HashMap<(Rank, Rank, u32), Vec<u64>> = HashMap::new();
        for (r, rs) in self.ranks.iter().enumerate() {
            let r = r as Rank;
            for (i, s) in rs.steps.iter().enumerate() {
                if s.deps.iter().any(|&d| d as usize >= i) {
                    return Err(format!("rank {r} step {i} depends on a later step"));
                }
                let regions: Vec<Region> = match s.op {
                    Op::Send { to, tag, src } => {
                        if to >= p || to == r {
                            return Err(format!("rank {r} step {i} sends to rank {to}"));
                        }
                        sends.entry((r, to, tag)).or_default().push(src.count);
                        vec![src]
                    }
                    Op::Recv { from, tag, dst } => {
                        if from >= p || from == r {
                            return Err(format!("rank {r} step {i} receives from rank {from}"));
                        }
                        recvs.entry((from, r, tag)).or_default().push(dst.count);
                        vec![dst]
                    }
                    Op::Reduce { src, dst } | Op::Copy { src, dst } => {
                        if src.count != dst.count {
                            return Err(format!("rank {r} step {i}: operand sizes differ"));
                        }
                        vec![src, dst]
                    }
                    Op::Compute { .. } => vec![],
                    Op::SwitchSend { to, tag, src } => {
                        if to >= p || to == r {
                            return Err(format!("rank {r} step {i} offers to rank {to}"));
                        }
                        offers.entry((r, to, tag)).or_default().push(src.count);
                        vec![src]
                    }
                    Op::SwitchReduce {
                        first,
                        n,
                        tag,
                        src,
                        dst,
                    }
                    | Op::Multicast {
                        first,
                        n,
                        tag,
                        src,
                        dst,
                    } => {
                        if src.count != dst.count {
                            return Err(format!("rank {r} step {i}: operand sizes differ"));
                        }
                        if r < first || r >= first + n || first + n > p {
                            return Err(format!(
                                "rank {r} step {i}: group {first}..{} is not the ranks' or \
                                 leaves this rank out",
                                first + n
                            ));
                        }
                        let reduce = matches!(s.op, Op::SwitchReduce { .. });
                        for q in s.op.group_peers(r) {
                            if reduce {
                                reads.entry((q, r, tag)).or_default().push(dst.count);
                            } else {
                                sends.entry((r, q, tag)).or_default().push(src.count);
                            }
                        }
                        vec![src, dst]
                    }
                };
                for g in regions {
                    let cap = self.buf_elems(r, g.buf);
                    if g.off + g.count > cap {
                        return Err(format!(
                            "rank {r} step {i}: {:?}[{}..{}] overflows its {} elements",
                            g.buf,
                            g.off,
                            g.off + g.count,
                            cap
                        ));
                    }
                }
            }
        }
        if offers != reads {
            for k in offers.keys().chain(reads.keys()) {
                if offers.get(k) != reads.get(k) {
                    return Err(format!(
                        "switch contributions {}->{} tag {} of sizes {:?} are read as {:?}",
                        k.0,
                        k.1,
                        k.2,
                        offers.get(k),
                        reads.get(k)
                    ));
                }
            }
        }
        if sends != recvs {
            for (k, v) in &sends {
                if recvs.get(k) != Some(v) {
                    return Err(format!(
                        "sends {}->{} tag {} of sizes {:?} are received as {:?}",
                        k.0,
                        k.1,
                        k.2,
                        v,
                        recvs.get(k)
                    ));
                }
            }
            for (k, v) in &recvs {
                if !sends.contains_key(k) {
                    return Err(format!(
                        "receives {}->{} tag {} of sizes {:?} have no matching send",
                        k.0, k.1, k.2, v
                    ));
                }
            }
        }
        Ok(())
    }
}
