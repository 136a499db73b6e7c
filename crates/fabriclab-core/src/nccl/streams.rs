//! LL and LL128 over NVLink: a receiver forwards each line as it arrives.
//!
//! With the LL protocols NCCL's sending kernel stores lines (8 bytes with
//! LL, 128 with LL128), each with its own flag, straight into the peer
//! GPU's buffer, and the peer's kernel polls the flags and passes each
//! line on (reduced or copied) as soon as it is there (`prims_ll.h`,
//! `prims_ll128.h`). A message through a chain of GPUs therefore does not
//! wait at each GPU for the whole step: the first line is usable one
//! NVLink latency and the protocol's per-hop cost after the sender began,
//! and the last one that long after the sender's last.
//!
//! The runtime models this with *streams*: an LL or LL128 message over
//! NVLink goes in [`pieces`] (up to [`PIECES`] equal parts of its wire
//! bytes), one NVLink transfer each, one after the other. Its receive step
//! takes it when its first piece is in: the steps that depend on the
//! receive (a reduction, the send to the next GPU) may start, and they
//! carry the stream as a *gate*. The receive itself counts as done, its
//! buffer slot is freed and the rank's call may end only when the last
//! piece is in. A send over NVLink with open gates sends its piece k only
//! once every gate has that share of its own pieces in (its data cannot
//! leave before it came). Everything else that needs the data whole waits
//! for its gates to close before it starts: a send to another server
//! (NCCL's proxy posts a step's RDMA WRITE only once every line of the
//! step is in its buffer, `transport/net.cc`) and NVLink SHARP's
//! reductions and multicasts.
//!
//! Pieces keep the NVLink ports' accounting exact (no byte leaves before
//! it is in) at the cost of a quantised pipeline: each hop adds one piece
//! time, an eighth of the step's, where NCCL's lines add next to nothing.
//! Simple stores and forwards whole steps, as NCCL's Simple protocol
//! signals a step (or a slice of it) at once; its slices are left out.

use crate::mpi::sched::Rank;
use std::collections::HashMap;

/// Most pieces a stream is cut into.
pub const PIECES: u32 = 8;
/// Fewest wire bytes in a piece (below, fewer pieces).
pub const PIECE_MIN_BYTES: u64 = 4096;

/// Pieces of a stream of `wire` bytes.
pub fn pieces(wire: u64) -> u32 {
    wire.div_ceil(PIECE_MIN_BYTES).clamp(1, PIECES as u64) as u32
}

/// Wire bytes of piece `k` of `n` of a stream of `wire` bytes.
pub fn piece_bytes(wire: u64, k: u32, n: u32) -> u64 {
    let (k, n) = (k as u64, n as u64);
    wire * (k + 1) / n - wire * k / n
}

/// A receive step that took a stream's message before its last piece came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The receiving rank.
    pub rank: Rank,
    /// Its receive step.
    pub step: u32,
    /// The rank's call.
    pub epoch: u32,
}

struct Stream<C> {
    /// The message.
    msg: u32,
    /// Its pieces, and those in so far.
    n: u32,
    pieces_in: u32,
    taken: Option<Taken>,
    /// What waits for more of it.
    waiters: Vec<C>,
}

/// What one more piece in means.
pub struct PieceIn<C> {
    /// The stream's message.
    pub msg: u32,
    /// Its first piece: the message is usable.
    pub first: bool,
    /// Its last: the stream is in whole; the receive that took it, if
    /// one did, is over.
    pub last: bool,
    /// That receive.
    pub taken: Option<Taken>,
    /// What waited for more of the stream (to check again).
    pub waiters: Vec<C>,
}

/// Streams still coming in, and the gates of steps on them.
pub struct Streams<C> {
    /// Streams not yet in whole, by id; an id absent here is in.
    live: HashMap<u32, Stream<C>>,
    next: u32,
    /// Per (rank, step): streams whose data the step passes on.
    gates: HashMap<(Rank, u32), Vec<u32>>,
}

impl<C> Default for Streams<C> {
    fn default() -> Self {
        Streams {
            live: HashMap::new(),
            next: 0,
            gates: HashMap::new(),
        }
    }
}

impl<C> Streams<C> {
    /// A new stream of `n` pieces carrying message `msg`, none in yet.
    pub fn open(&mut self, msg: u32, n: u32) -> u32 {
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        self.live.insert(
            id,
            Stream {
                msg,
                n: n.max(1),
                pieces_in: 0,
                taken: None,
                waiters: Vec::new(),
            },
        );
        id
    }

    /// Whether stream `id` is in whole.
    pub fn is_in(&self, id: u32) -> bool {
        !self.live.contains_key(&id)
    }

    /// One more piece of stream `id` is in.
    pub fn piece_in(&mut self, id: u32) -> PieceIn<C> {
        let s = self.live.get_mut(&id).expect("a stream not yet in");
        s.pieces_in += 1;
        let (msg, first, last) = (s.msg, s.pieces_in == 1, s.pieces_in == s.n);
        let waiters = std::mem::take(&mut s.waiters);
        let taken = if last {
            self.live.remove(&id).and_then(|s| s.taken)
        } else {
            None
        };
        PieceIn {
            msg,
            first,
            last,
            taken,
            waiters,
        }
    }

    /// A receive step took stream `id`'s message before its last piece:
    /// the step gates its dependents on the stream.
    pub fn take(&mut self, id: u32, t: Taken) {
        let s = self.live.get_mut(&id).expect("a stream not yet in");
        debug_assert!(s.taken.is_none(), "a stream taken twice");
        s.taken = Some(t);
        self.gates.entry((t.rank, t.step)).or_default().push(id);
    }

    /// `c` runs when the next piece of stream `id` is in.
    pub fn wait(&mut self, id: u32, c: C) {
        self.live
            .get_mut(&id)
            .expect("a stream not yet in")
            .waiters
            .push(c);
    }

    /// A gate of step (`rank`, `step`) that has less than `k` in `n` of
    /// its data in (`n` = `k`: not in whole), if any; the closed gates
    /// are dropped.
    pub fn short(&mut self, rank: Rank, step: u32, k: u32, n: u32) -> Option<u32> {
        if self.gates.is_empty() {
            return None;
        }
        let g = self.gates.get_mut(&(rank, step))?;
        g.retain(|&id| self.live.contains_key(&id));
        let short = g.iter().copied().find(|&id| {
            let s = &self.live[&id];
            (s.pieces_in as u64) * (n as u64) < (k as u64) * (s.n as u64)
        });
        if g.is_empty() {
            self.gates.remove(&(rank, step));
        }
        short
    }

    /// Step (`rank`, `step`) is released: its open gates pass to each of
    /// its `dependents`.
    pub fn pass_on(&mut self, rank: Rank, step: u32, dependents: &[u32]) {
        if self.gates.is_empty() {
            return;
        }
        let Some(mut g) = self.gates.remove(&(rank, step)) else {
            return;
        };
        g.retain(|&id| self.live.contains_key(&id));
        if g.is_empty() {
            return;
        }
        for &d in dependents {
            let to = self.gates.entry((rank, d)).or_default();
            for &id in &g {
                if !to.contains(&id) {
                    to.push(id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(rank: Rank, step: u32) -> Taken {
        Taken {
            rank,
            step,
            epoch: 1,
        }
    }

    #[test]
    fn pieces_cut_a_step_into_equal_parts() {
        assert_eq!(pieces(1), 1);
        assert_eq!(pieces(4096), 1);
        assert_eq!(pieces(4097), 2);
        assert_eq!(pieces(65_536), 8);
        let n = pieces(614_401);
        let parts: Vec<u64> = (0..n).map(|k| piece_bytes(614_401, k, n)).collect();
        assert_eq!(parts.iter().sum::<u64>(), 614_401);
        assert!(parts.iter().all(|&b| b == 76_800 || b == 76_801));
    }

    #[test]
    fn a_stream_is_usable_at_its_first_piece_and_in_at_its_last() {
        let mut s: Streams<&str> = Streams::default();
        let a = s.open(9, 2);
        assert!(!s.is_in(a));
        let p = s.piece_in(a);
        assert!(p.first && !p.last);
        assert_eq!(p.msg, 9);
        s.take(a, taken(3, 0));
        assert_eq!(s.short(3, 0, 1, 2), None, "half is in");
        assert_eq!(s.short(3, 0, 2, 2), Some(a), "not all of it");
        s.wait(a, "send");
        let p = s.piece_in(a);
        assert!(!p.first && p.last);
        assert_eq!(p.taken, Some(taken(3, 0)));
        assert_eq!(p.waiters, vec!["send"]);
        assert!(s.is_in(a));
        assert_eq!(s.short(3, 0, 2, 2), None);
        assert!(s.gates.is_empty(), "closed gates are dropped");
        assert!(s.live.is_empty(), "no stream left open");
    }

    #[test]
    fn shares_compare_streams_of_different_pieces() {
        let mut s: Streams<()> = Streams::default();
        let a = s.open(0, 4);
        s.take(a, taken(0, 0));
        s.piece_in(a);
        s.piece_in(a);
        // Half of `a` is in: a send of 8 pieces may send 4 of them.
        assert_eq!(s.short(0, 0, 4, 8), None);
        assert_eq!(s.short(0, 0, 5, 8), Some(a));
        assert_eq!(s.short(0, 0, 1, 2), None);
    }

    #[test]
    fn gates_pass_through_steps_to_their_dependents() {
        let mut s: Streams<()> = Streams::default();
        let a = s.open(0, 1);
        let b = s.open(1, 1);
        s.take(a, taken(1, 0));
        s.take(b, taken(1, 1));
        // Step 0 and step 1 both feed step 2 (a reduction), which feeds 3.
        s.pass_on(1, 0, &[2]);
        s.pass_on(1, 1, &[2]);
        assert_eq!(s.gates[&(1, 2)], vec![a, b]);
        let _ = s.piece_in(a);
        s.pass_on(1, 2, &[3]);
        assert_eq!(s.gates[&(1, 3)], vec![b], "only open gates pass on");
        assert_eq!(s.short(1, 3, 1, 1), Some(b));
        let _ = s.piece_in(b);
        assert_eq!(s.short(1, 3, 1, 1), None);
        // A rank's gates are its own.
        assert_eq!(s.short(2, 3, 1, 1), None);
    }
}
