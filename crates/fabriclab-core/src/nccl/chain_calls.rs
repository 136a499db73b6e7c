//! Chain calls (Broadcast, Reduce) on the flow backend when the ranks
//! start them at different times, as they do back to back.
//!
//! A chain's fluid cost ([`super::fluid`]) says when each position ends
//! if every rank starts the call at once: `E[p]` (launch included), and
//! when the first chunk is complete there, `F[p]` (after the launch). On
//! the packet core a rank starts its next call as soon as its own part of
//! the last one is done, so the root feeds call q + 1 into the chain
//! while the far ranks still take call q, and the calls overlap. Waiting
//! for the last rank, as the other coflows do, would make every call pay
//! the chain's whole fill again. Here each position `p` of each chain ends
//! at the latest of:
//!
//! - its own start plus what it does once the data is there:
//!   `s[p] + E[p] - F[p]` (the chunks wait in its buffer, it takes them
//!   at the chain's pace);
//! - the end of the position before it on the chain plus the lag between
//!   the two: `e[p - 1] + E[p] - E[p - 1]` (the data comes from there);
//! - the next position's hold on it, through the buffer slots
//!   ([`NCCL_STEPS`] chunks over NVLink, twice that over the network, as
//!   in `fluid::chain_ends`): if the call has more chunks than the slots,
//!   the next rank must start it, `s[p + 1] + E[p] - F[p + 1]`; if it has
//!   no more, the next rank must have ended the call the slots reach back
//!   to, `e'[p + 1]` of call `q - ceil(slots / chunks)` on the same chain.
//!
//! Started together, every position ends at `E[p]`, the one-call cost.
//! A rank's end is the latest over the chains (channels) through it.
//!
//! Left out: the chains' links are shared as in a call of its own (the
//! tail of one call and the head of the next on one link are not slowed
//! by each other beyond the lag above), and the next rank's hold counts
//! its start, not each chunk it takes.

use super::fluid::FluidCost;
use super::params::NCCL_STEPS;
use crate::mpi::sched::Rank;
use crate::units::Time;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Calls kept after they end, for the slot term of later calls of few
/// chunks (at most `2 x NCCL_STEPS` calls back).
const KEEP_CALLS: u64 = 2 * NCCL_STEPS;

/// One chain call in progress.
struct Call {
    cost: Rc<FluidCost>,
    /// Per rank: when it started the call, and its epoch then.
    start: Vec<Option<(Time, u32)>>,
    /// Per chain, per position: when it ends.
    end: Vec<Vec<Option<Time>>>,
    /// Per rank: chains through it not yet ended.
    left: Vec<u32>,
    /// Per rank: its latest end over the chains ended so far.
    latest: Vec<Time>,
    /// Ranks whose end is known.
    done: u32,
}

/// A rank whose part of a chain call is over: (rank, epoch, end time).
pub type ChainEnd = (Rank, u32, Time);

/// The chain calls of one communicator, by call index (each rank's count
/// of its fluid calls: NCCL's ranks make the same calls in the same
/// order).
#[derive(Default)]
pub struct ChainCalls {
    calls: BTreeMap<u64, Call>,
}

impl ChainCalls {
    /// Whether some rank has started call `k` and not every rank has
    /// ended it yet (a call is forgotten only once every rank has ended
    /// it, so a call not here is one nobody has started yet).
    pub fn started(&self, k: u64) -> bool {
        self.calls.contains_key(&k)
    }

    /// Rank `rank` (epoch `epoch`) starts call `k` at `now`; `cost` has
    /// the call's chains. Returns the ranks whose end is now known, with
    /// their end (never before `now`).
    pub fn start(
        &mut self,
        k: u64,
        cost: &Rc<FluidCost>,
        rank: Rank,
        epoch: u32,
        now: Time,
    ) -> Vec<ChainEnd> {
        let n = cost.chains[0].order.len();
        let call = self.calls.entry(k).or_insert_with(|| Call {
            cost: Rc::clone(cost),
            start: vec![None; n],
            end: cost
                .chains
                .iter()
                .map(|c| vec![None; c.order.len()])
                .collect(),
            left: vec![cost.chains.len() as u32; n],
            latest: vec![Time::ZERO; n],
            done: 0,
        });
        call.start[rank as usize] = Some((now, epoch));
        let mut work: Vec<(u64, usize, usize)> = Vec::new();
        for (ch, c) in cost.chains.iter().enumerate() {
            let p = c.pos[rank as usize] as usize;
            work.push((k, ch, p));
            if p > 0 {
                work.push((k, ch, p - 1));
            }
        }
        let mut out = Vec::new();
        while let Some((k, ch, p)) = work.pop() {
            let Some(e) = self.resolve(k, ch, p, now) else {
                continue;
            };
            let call = self.calls.get_mut(&k).expect("call in progress");
            call.end[ch][p] = Some(e);
            let r = call.cost.chains[ch].order[p] as usize;
            call.left[r] -= 1;
            call.latest[r] = call.latest[r].max(e);
            if call.left[r] == 0 {
                call.done += 1;
                let epoch = call.start[r].expect("started").1;
                out.push((r as Rank, epoch, call.latest[r]));
            }
            if p + 1 < call.end[ch].len() {
                work.push((k, ch, p + 1));
            }
            if p > 0 {
                // Later calls of few chunks on the same chain that wait
                // for this end.
                let cost = Rc::clone(&call.cost);
                for (&k2, later) in self.calls.range(k + 1..=k + KEEP_CALLS) {
                    if same_chain(&later.cost, &cost, ch) {
                        work.push((k2, ch, p - 1));
                    }
                }
            }
        }
        self.prune();
        out
    }

    /// When position `p` of chain `ch` of call `k` ends, if what it
    /// depends on is known (and it is not ended yet).
    fn resolve(&self, k: u64, ch: usize, p: usize, now: Time) -> Option<Time> {
        let call = &self.calls[&k];
        if call.end[ch][p].is_some() {
            return None;
        }
        let c = &call.cost.chains[ch];
        let (s, _) = call.start[c.order[p] as usize]?;
        let diff = |a: Time, b: Time| a.0 as i128 - b.0 as i128;
        let mut e = s.0 as i128 + diff(c.end[p], c.first[p]);
        if p > 0 {
            let before = call.end[ch][p - 1]?;
            e = e.max(before.0 as i128 + diff(c.end[p], c.end[p - 1]));
        }
        if p + 1 < c.order.len() {
            let slots = if c.local[p] {
                NCCL_STEPS
            } else {
                2 * NCCL_STEPS
            };
            if c.chunks > slots {
                let (s_next, _) = call.start[c.order[p + 1] as usize]?;
                e = e.max(s_next.0 as i128 + diff(c.end[p], c.first[p + 1]));
            } else if let Some(back) = k.checked_sub(slots.div_ceil(c.chunks)) {
                if let Some(old) = self.calls.get(&back) {
                    if same_chain(&old.cost, &call.cost, ch) {
                        e = e.max(old.end[ch][p + 1]?.0 as i128);
                    }
                }
            }
        }
        Some(Time((e.max(now.0 as i128)) as u64))
    }

    /// Forget calls every rank has ended that no later call can look
    /// back to.
    fn prune(&mut self) {
        let open = self
            .calls
            .iter()
            .find(|(_, c)| c.done < c.left.len() as u32)
            .map(|(&k, _)| k);
        let Some(&last) = self.calls.keys().next_back() else {
            return;
        };
        let keep_from = open.unwrap_or(last + 1).saturating_sub(KEEP_CALLS);
        while let Some(old) = self.calls.first_entry() {
            if *old.key() >= keep_from {
                break;
            }
            old.remove();
        }
    }
}

/// Whether chain `ch` of call `a` runs through the ranks of chain `ch` of
/// call `b`, in the same order.
fn same_chain(a: &Rc<FluidCost>, b: &Rc<FluidCost>, ch: usize) -> bool {
    match (a.chains.get(ch), b.chains.get(ch)) {
        (Some(x), Some(y)) => Rc::ptr_eq(a, b) || x.order == y.order,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::fluid::ChainTimes;

    /// A call of one chain 0 -> 1 -> 2 over NVLink: ends 100, 130, 160
    /// us when started together, first chunk at 0, 10, 20 us.
    fn cost(chunks: u64) -> Rc<FluidCost> {
        Rc::new(FluidCost {
            chains: vec![ChainTimes {
                order: vec![0, 1, 2],
                pos: vec![0, 1, 2],
                end: [100, 130, 160].map(Time::us).to_vec(),
                first: [0, 10, 20].map(Time::us).to_vec(),
                local: vec![true, true],
                chunks,
            }],
            ..FluidCost::default()
        })
    }

    /// A call with `chains` copies of the chain of [`cost`].
    fn cost_of(chunks: u64, chains: usize) -> Rc<FluidCost> {
        let one = cost(chunks).chains[0].clone();
        Rc::new(FluidCost {
            chains: vec![one; chains],
            ..FluidCost::default()
        })
    }

    fn ends(out: Vec<ChainEnd>) -> Vec<(Rank, u64)> {
        out.into_iter()
            .map(|(r, _, t)| (r, t.0 / 1_000_000))
            .collect()
    }

    #[test]
    fn ranks_that_start_together_end_at_the_one_call_times() {
        let c = cost(32);
        let mut calls = ChainCalls::default();
        let t = Time::us(5);
        assert!(
            calls.start(0, &c, 0, 0, t).is_empty(),
            "the root waits for rank 1"
        );
        assert!(
            calls.start(0, &c, 2, 0, t).is_empty(),
            "rank 1 has not started"
        );
        let mut got = ends(calls.start(0, &c, 1, 0, t));
        got.sort();
        assert_eq!(got, [(0, 105), (1, 135), (2, 165)]);
    }

    #[test]
    fn a_late_rank_holds_the_one_before_it_and_delays_the_one_after() {
        // 32 chunks, more than the 8 slots: the root cannot end before
        // rank 1 has started and taken all but the last 8 chunks.
        let c = cost(32);
        let mut calls = ChainCalls::default();
        assert!(calls.start(0, &c, 0, 0, Time::ZERO).is_empty());
        assert!(calls.start(0, &c, 2, 0, Time::ZERO).is_empty());
        // Rank 1 starts 50 us late: the root ends at 50 + 100 - 10, rank 1
        // at the later of 50 + (130 - 10) and 140 + (130 - 100), rank 2 at
        // 170 + (160 - 130).
        let mut got = ends(calls.start(0, &c, 1, 0, Time::us(50)));
        got.sort();
        assert_eq!(got, [(0, 140), (1, 170), (2, 200)]);
    }

    #[test]
    fn calls_of_few_chunks_let_a_rank_run_one_call_ahead_at_most() {
        // 8 chunks fill the 8 slots: a rank may end call q once the next
        // rank ended call q - 1, whether or not it started call q.
        let c = cost(8);
        let mut calls = ChainCalls::default();
        let mut got = Vec::new();
        for r in 0..3 {
            got.extend(ends(calls.start(0, &c, r, 0, Time::ZERO)));
        }
        got.sort();
        assert_eq!(got, [(0, 100), (1, 130), (2, 160)]);
        // The root starts call 1 at its end of call 0 and ends it without
        // waiting for rank 1's start, but not before rank 1's end of call
        // 0 (130): 100 + 100.
        assert_eq!(ends(calls.start(1, &c, 0, 0, Time::us(100))), [(0, 200)]);
        // Call 2: the root now needs rank 1's end of call 1, unknown.
        assert!(calls.start(2, &c, 0, 0, Time::us(200)).is_empty());
        // Rank 1 starts call 1 at 130: it ends at the later of 130 + 120
        // and 200 + 30, and so frees the root's call 2 (200 + 100, or
        // rank 1's 250).
        let mut got = ends(calls.start(1, &c, 1, 0, Time::us(130)));
        got.sort();
        assert_eq!(got, [(0, 300), (1, 250)]);
    }

    #[test]
    fn a_later_call_on_fewer_chains_waits_only_on_its_own() {
        // A call on two chains, then one on a single chain (a channel with
        // no data has none) that the root starts while rank 1 has not yet
        // started the first: rank 1's ends of the first call, on both
        // chains, concern only the second call's one chain.
        let (two, one) = (cost_of(8, 2), cost_of(8, 1));
        let mut calls = ChainCalls::default();
        assert_eq!(ends(calls.start(0, &two, 0, 0, Time::ZERO)), [(0, 100)]);
        // The root's call 1 waits for rank 1's end of call 0 (8 chunks
        // fill the 8 slots).
        assert_eq!(ends(calls.start(1, &one, 0, 0, Time::us(100))), []);
        // Rank 1 starts call 0 at 100 us: it ends at 100 + 120, and the
        // root's call 1 then at 220 (100 + 100 alone).
        let mut got = ends(calls.start(0, &two, 1, 0, Time::us(100)));
        got.sort();
        assert_eq!(got, [(0, 220), (1, 220)]);
        assert_eq!(ends(calls.start(0, &two, 2, 0, Time::us(100))), [(2, 250)]);
    }
}
