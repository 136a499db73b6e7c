//! A priority queue of timed events with deterministic tie-breaking.
//!
//! Every event carries the key `(time << 64) | insertion sequence`, and
//! events pop in key order. Storage has tiers so that the structure being
//! worked on stays small and cache-resident however many timers (one per
//! QP, say) are pending far ahead:
//!
//! - `run`: the events of the current time slot ([`SLOT_PS`] wide), sorted
//!   once when the slot becomes current (radix sort on the time offset);
//! - `late`: a small heap for events scheduled into the current slot after
//!   it was sorted (control frames that serialise in a few ns);
//! - `ring`: unsorted buckets for each of the next [`RING_SLOTS`] slots,
//!   filled by a plain push;
//! - `far`: a binary heap for events beyond the ring, moved into the ring
//!   as it advances.
//!
//! An event of `run` or of a ring bucket carries a 64-bit key, its offset
//! in the slot (16 bits) and its sequence (48 bits): the slot is the
//! bucket's. `late` and `far` keep the full 128-bit key. Buckets and the
//! slot sort then move 24-byte entries instead of 32-byte ones, a quarter
//! less memory for the structure that every packet on the wire passes
//! through.
//!
//! Every event in `run` and `late` is earlier than every event elsewhere,
//! so the earlier of their two heads is the global minimum: the order is
//! exactly that of a single heap. The current slot stays that of the last
//! popped event until the next pop finds it empty and moves on to the next
//! non-empty slot: events scheduled meanwhile, at or after the current
//! time, go to their own slots. (Moving on at once, or starting the slots
//! at the first event scheduled into an empty queue, made every event
//! scheduled before that slot's time "late": an RTO armed far ahead by the
//! first packet of a run sent the whole run through the heap.)

use crate::units::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Width of a time slot, in picoseconds (2^16 ps = 65.5 ns).
const SLOT_PS: u64 = 1 << 16;
// The slot sort radix-sorts the offset in a slot as two 8-bit digits.
const _: () = assert!(SLOT_PS == 1 << 16);
/// Slots covered by the ring of buckets (2^14 slots = 1.07 ms).
const RING_SLOTS: u64 = 1 << 14;
/// Buckets of the next `HOT_SLOTS` slots fill densely (packets on the
/// wire); they reuse emptied allocations. Further buckets mostly hold a few
/// timers each and grow from nothing, so that memory stays proportional to
/// the pending events.
const HOT_SLOTS: u64 = 64;
/// Emptied bucket allocations kept for reuse by hot buckets.
const SPARE_BUCKETS: usize = 64;

/// Bits of a slotted key that hold the insertion sequence: 2.8e14 events,
/// over 300 days of the engine at 10 M events/s.
const SEQ_BITS: u32 = 48;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
// The offset in a slot fills the slotted key's other 16 bits.
const _: () = assert!(SLOT_PS == 1 << (64 - SEQ_BITS));

/// An event with its full key (in `late` and `far`).
#[derive(Clone, Copy)]
struct Entry<E> {
    /// Time in the high 64 bits, insertion sequence in the low 64 bits.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    #[inline]
    fn slot(&self) -> u64 {
        ((self.key >> 64) as u64) / SLOT_PS
    }

    /// The same event in its slot's bucket.
    #[inline]
    fn slotted(self) -> Slotted<E> {
        let offset = ((self.key >> 64) as u64) % SLOT_PS;
        Slotted {
            key: (offset << SEQ_BITS) | (self.key as u64 & SEQ_MASK),
            event: self.event,
        }
    }
}

/// An event in a ring bucket or in `run`, whose slot is the bucket's.
#[derive(Clone, Copy)]
struct Slotted<E> {
    /// Picoseconds into the slot in the high 16 bits, insertion sequence
    /// in the low 48: the same order as the full key within one slot.
    key: u64,
    event: E,
}

impl<E> Slotted<E> {
    /// Picoseconds into its slot.
    #[inline]
    fn offset(&self) -> usize {
        (self.key >> SEQ_BITS) as usize
    }

    /// The full key, given the event's slot.
    #[inline]
    fn full_key(&self, slot: u64) -> u128 {
        let at = slot * SLOT_PS + (self.key >> SEQ_BITS);
        ((at as u128) << 64) | (self.key & SEQ_MASK) as u128
    }
}

/// Sort the events of one slot latest first by their full key. Small
/// buckets use an insertion sort on the full key; up to 256 events, one
/// counting pass on the top bits of the offset in the slot, as many
/// buckets as events (the usual slot holds a few dozen, for which the
/// two-pass radix's 512 counters cost more than the events); beyond, a
/// stable two-pass radix sort on the 16-bit offset. Then one insertion
/// pass on the full key puts what remains in order: events of one counting
/// bucket, and events of equal time out of sequence order (rare: a bucket
/// receives direct schedules in sequence order; only an event scheduled
/// with a reserved sequence number, see [`EventQueue::schedule_reserved`],
/// can arrive behind later ones).
fn sort_slot<E: Copy>(v: &mut [Slotted<E>], scratch: &mut Vec<Slotted<E>>) {
    if v.len() <= 24 {
        insertion_sort(v);
        return;
    }
    if v.len() <= 256 {
        // One counting pass on the top bits of the offset, as many buckets
        // as events (16 to 256), then the full-key insertion pass below
        // finishes the order within each bucket.
        let bits = (usize::BITS - (v.len() - 1).leading_zeros()).clamp(4, 8);
        let shift = 16 - bits;
        let mut cnt = [0u32; 256];
        for e in v.iter() {
            cnt[e.offset() >> shift] += 1;
        }
        let mut start = 0;
        for c in cnt[..1 << bits].iter_mut() {
            let n = *c;
            *c = start;
            start += n;
        }
        scratch.clear();
        scratch.extend_from_slice(v);
        let last = v.len() - 1;
        for e in scratch.iter() {
            let d = e.offset() >> shift;
            v[last - cnt[d] as usize] = *e;
            cnt[d] += 1;
        }
        insertion_sort(v);
        return;
    }
    let mut lo = [0usize; 256];
    let mut hi = [0usize; 256];
    for e in v.iter() {
        lo[e.offset() & 255] += 1;
        hi[e.offset() >> 8] += 1;
    }
    for counts in [&mut lo, &mut hi] {
        let mut start = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = start;
            start += n;
        }
    }
    // Ascending by the low byte into `scratch`, then by the high byte back
    // into `v` with ascending position p stored at `last - p`.
    scratch.clear();
    scratch.extend_from_slice(v);
    for e in v.iter() {
        let d = e.offset() & 255;
        scratch[lo[d]] = *e;
        lo[d] += 1;
    }
    let last = v.len() - 1;
    for e in scratch.iter() {
        let d = e.offset() >> 8;
        v[last - hi[d]] = *e;
        hi[d] += 1;
    }
    // Equal times out of sequence order (rare): an insertion pass on the
    // full key, linear when nothing is out of place.
    insertion_sort(v);
}

/// Sort latest first by the full key; linear on a sorted slice.
fn insertion_sort<E: Copy>(v: &mut [Slotted<E>]) {
    for i in 1..v.len() {
        if v[i - 1].key < v[i].key {
            let e = v[i];
            let mut j = i;
            while j > 0 && v[j - 1].key < e.key {
                v[j] = v[j - 1];
                j -= 1;
            }
            v[j] = e;
        }
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest key pops first.
        other.key.cmp(&self.key)
    }
}

/// Events ordered by (time, insertion sequence).
pub struct EventQueue<E> {
    /// Events of slot `cur`, sorted latest first (the next pops from the end).
    run: Vec<Slotted<E>>,
    /// Events scheduled into slot `cur` (or earlier) after `run` was sorted.
    late: BinaryHeap<Entry<E>>,
    /// Unsorted events of slots `cur + 1 .. cur + RING_SLOTS`, by slot mod
    /// `RING_SLOTS`.
    ring: Vec<Vec<Slotted<E>>>,
    /// Events in `ring`.
    ring_len: usize,
    /// Events of slots `cur + RING_SLOTS` and later.
    far: BinaryHeap<Entry<E>>,
    /// Emptied allocations for hot ring buckets.
    spare: Vec<Vec<Slotted<E>>>,
    /// Scratch space of the slot sort.
    scratch: Vec<Slotted<E>>,
    /// The current slot.
    cur: u64,
    seq: u64,
    now: Time,
    /// Key of the last popped event.
    cur_key: u128,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            run: Vec::with_capacity(1024),
            late: BinaryHeap::new(),
            ring: (0..RING_SLOTS).map(|_| Vec::new()).collect(),
            ring_len: 0,
            far: BinaryHeap::new(),
            spare: Vec::new(),
            scratch: Vec::new(),
            cur: 0,
            seq: 0,
            now: Time::ZERO,
            cur_key: 0,
            popped: 0,
        }
    }

    /// The current simulated time (the time of the last popped event).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedule `event` at absolute time `at` (never in the past).
    #[inline]
    pub fn schedule(&mut self, at: Time, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let seq = self.seq;
        self.seq += 1;
        self.insert(at, seq, event);
    }

    /// Put an event with its key in the current slot's heap, the ring or
    /// `far`.
    #[inline]
    fn insert(&mut self, at: Time, seq: u64, event: E) {
        assert!(
            seq <= SEQ_MASK,
            "event queue: more than 2^48 events scheduled"
        );
        let e = Entry {
            key: ((at.0 as u128) << 64) | seq as u128,
            event,
        };
        if e.slot() <= self.cur {
            self.late.push(e);
        } else {
            self.place(e);
        }
    }

    /// Put an event of a slot after `cur` into the ring or `far`. A bucket
    /// receives direct schedules in sequence order, or, when its slot
    /// enters the ring, events from `far` in key order followed by direct
    /// schedules; only reserved events can arrive out of sequence order
    /// (the slot sort puts them back).
    #[inline]
    fn place(&mut self, e: Entry<E>) {
        let slot = e.slot();
        debug_assert!(slot > self.cur);
        if slot - self.cur < RING_SLOTS {
            let bucket = &mut self.ring[(slot % RING_SLOTS) as usize];
            if bucket.capacity() == 0 && slot - self.cur < HOT_SLOTS {
                if let Some(v) = self.spare.pop() {
                    *bucket = v;
                }
            }
            bucket.push(e.slotted());
            self.ring_len += 1;
        } else {
            self.far.push(e);
        }
    }

    /// Take the sequence number an event scheduled now would get, without
    /// scheduling it: a component that may not need the event reserves its
    /// place in the order, and schedules it later with
    /// [`EventQueue::schedule_reserved`] only if it turns out to matter.
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Schedule `event` at `at` with a sequence number taken earlier by
    /// [`EventQueue::reserve_seq`]: it pops exactly where it would have,
    /// had it been scheduled then. `at` must not be before the current
    /// event's key.
    #[inline]
    pub fn schedule_reserved(&mut self, at: Time, seq: u64, event: E) {
        debug_assert!(!self.passed(at, seq), "reserved event already due");
        self.insert(at, seq, event);
    }

    /// Whether an event at (`at`, `seq`) would already have been popped
    /// (its key is below the current event's).
    #[inline]
    pub fn passed(&self, at: Time, seq: u64) -> bool {
        (((at.0 as u128) << 64) | seq as u128) < self.cur_key
    }

    /// Advance the clock to `t` with no event (a run that stopped at a
    /// time limit has simulated up to it); every pending event is later.
    pub fn advance_to(&mut self, t: Time) {
        if t > self.now {
            self.now = t;
            self.cur_key = self.cur_key.max((t.0 as u128) << 64);
        }
    }

    /// Schedule `event` after a delay from now.
    #[inline]
    pub fn schedule_in(&mut self, delay: Time, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// Pop the earliest event and advance time to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_until(Time::NEVER)
    }

    /// Pop the earliest event if it is due no later than `limit`, and
    /// advance time to it.
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, E)> {
        if self.run.is_empty() && self.late.is_empty() {
            self.refill();
        }
        let cur = self.cur;
        let (from_late, key) = match (self.run.last(), self.late.peek()) {
            (Some(r), Some(l)) => {
                let r = r.full_key(cur);
                (l.key < r, r.min(l.key))
            }
            (None, Some(l)) => (true, l.key),
            (Some(r), None) => (false, r.full_key(cur)),
            (None, None) => return None,
        };
        let t = Time((key >> 64) as u64);
        if t > limit {
            return None;
        }
        let event = if from_late {
            self.late.pop().unwrap().event
        } else {
            self.run.pop().unwrap().event
        };
        self.now = t;
        self.cur_key = key;
        self.popped += 1;
        Some((t, event))
    }

    /// Slot `cur` is exhausted: make the next non-empty slot current.
    fn refill(&mut self) {
        loop {
            if self.ring_len == 0 {
                // Jump straight to the slot of the earliest far event.
                let Some(top) = self.far.peek() else { return };
                self.cur = top.slot() - 1;
            }
            self.cur += 1;
            // Slot `cur + RING_SLOTS - 1` came into the ring's range.
            while self
                .far
                .peek()
                .is_some_and(|e| e.slot() < self.cur + RING_SLOTS)
            {
                let e = self.far.pop().unwrap();
                if e.slot() == self.cur {
                    self.late.push(e);
                } else {
                    self.place(e);
                }
            }
            let i = (self.cur % RING_SLOTS) as usize;
            if !self.ring[i].is_empty() {
                let mut bucket = std::mem::take(&mut self.ring[i]);
                self.ring_len -= bucket.len();
                sort_slot(&mut bucket, &mut self.scratch);
                debug_assert!(bucket.windows(2).all(|w| w[0].key > w[1].key));
                let old = std::mem::replace(&mut self.run, bucket);
                if self.spare.len() < SPARE_BUCKETS {
                    self.spare.push(old);
                }
            }
            if !self.run.is_empty() || !self.late.is_empty() {
                return;
            }
        }
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Time> {
        if self.run.is_empty() && self.late.is_empty() {
            self.refill();
        }
        let key = match (self.run.last(), self.late.peek()) {
            (Some(r), Some(l)) => r.full_key(self.cur).min(l.key),
            (Some(r), None) => r.full_key(self.cur),
            (None, Some(l)) => l.key,
            (None, None) => return None,
        };
        Some(Time((key >> 64) as u64))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.run.len() + self.late.len() + self.ring_len + self.far.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events popped so far (the engine's work measure).
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_order() {
        let mut q = EventQueue::new();
        q.schedule(Time::ns(30), 3);
        q.schedule(Time::ns(10), 1);
        q.schedule(Time::ns(20), 2);
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![1, 2, 3]);
        assert_eq!(q.now(), Time::ns(30));
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100 {
            q.schedule(Time::ns(5), i);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn schedule_in_is_relative_to_now() {
        let mut q = EventQueue::new();
        q.schedule(Time::ns(100), 0);
        q.pop();
        q.schedule_in(Time::ns(5), 1);
        assert_eq!(q.pop(), Some((Time::ns(105), 1)));
        assert_eq!(q.events_processed(), 2);
    }

    /// Crowded slots (radix-sorted) with many equal times, filled both
    /// directly and from the far heap, pop in (time, sequence) order.
    #[test]
    fn crowded_slots_pop_in_time_then_sequence_order() {
        let mut q = EventQueue::new();
        // An event at time zero makes slot 0 current, so that later slots
        // fill ring buckets.
        q.schedule(Time::ZERO, u64::MAX);
        let mut want = vec![(0, u64::MAX)];
        let far = SLOT_PS * (RING_SLOTS + 3);
        let mut x = 12345u64;
        for i in 0..3000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let base = if i % 2 == 0 { SLOT_PS } else { far };
            let at = base + (x >> 33) % 64 * 1000;
            q.schedule(Time(at), i);
            want.push((at, i));
        }
        want[1..].sort();
        let got: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(got, want);
    }

    /// Slots of every size class (insertion sort, one counting pass sized
    /// to the slot, two-pass radix) pop in (time, sequence) order, with
    /// equal times and offsets spread over the whole slot or bunched.
    #[test]
    fn slots_of_every_size_pop_in_time_then_sequence_order() {
        for n in [2u64, 24, 25, 41, 100, 255, 256, 257, 600] {
            for spread in [SLOT_PS, 64, 1] {
                let mut q = EventQueue::new();
                q.schedule(Time::ZERO, u64::MAX);
                let mut want = vec![(0, u64::MAX)];
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ n;
                for i in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let at = SLOT_PS * 5 + x % spread;
                    q.schedule(Time(at), i);
                    want.push((at, i));
                }
                want[1..].sort();
                let got: Vec<(u64, u64)> =
                    std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
                assert_eq!(got, want, "{n} events spread over {spread} ps");
            }
        }
    }

    /// The tiered queue pops exactly what one heap keyed by (time, seq)
    /// pops, for delays spanning the current slot, the ring and beyond it,
    /// with many equal times.
    #[test]
    fn order_matches_a_single_heap_across_slots_ring_and_far() {
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let mut seq = 0u64;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let horizon = SLOT_PS * RING_SLOTS;
        let mut now = 0u64;
        for step in 0..200_000u32 {
            let pushes = if step < 1000 { 3 } else { rand() % 3 };
            for _ in 0..pushes {
                let delay = match rand() % 6 {
                    0 => 0,
                    1 => rand() % 100,
                    2 => rand() % SLOT_PS * 3,
                    3 => rand() % horizon,
                    4 => horizon - 5 + rand() % 10,
                    _ => rand() % (horizon * 5),
                };
                let at = now + delay;
                q.schedule(Time(at), step);
                reference.insert((at, seq), step);
                seq += 1;
            }
            assert_eq!(q.len(), reference.len());
            let Some(((t, _), want)) = reference.pop_first() else {
                continue;
            };
            let got = q.pop().unwrap();
            assert_eq!(got, (Time(t), want));
            now = t;
        }
        while let Some(((t, _), want)) = reference.pop_first() {
            assert_eq!(q.pop(), Some((Time(t), want)));
        }
        assert!(q.pop().is_none() && q.is_empty());
    }

    #[test]
    fn a_far_first_event_does_not_make_the_nearer_ones_late() {
        // A run's first packet arms its QP's retransmission timer far
        // ahead before anything else is scheduled; the packets that follow
        // must still go to their own slots, not through the heap of late
        // events (which held every event of the ns-3 HPCC run).
        let mut q = EventQueue::new();
        q.schedule(Time::ms(67), u32::MAX);
        for i in 0..1000u32 {
            q.schedule(Time::ns(100 * (i as u64 + 1)), i);
        }
        assert_eq!(q.late.len(), 0);
        assert_eq!(q.len(), 1001);
        for i in 0..1000u32 {
            assert_eq!(q.pop(), Some((Time::ns(100 * (i as u64 + 1)), i)));
            // The slot stays that of the event just popped: an event at
            // the same time is late (and pops next), a later one is not.
            q.schedule_in(Time::ZERO, 5000 + i);
            assert_eq!(q.late.len(), 1);
            assert_eq!(q.pop(), Some((q.now(), 5000 + i)));
            assert_eq!(q.late.len(), 0);
        }
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(Time::ms(67)));
        assert_eq!(q.pop(), Some((Time::ms(67), u32::MAX)));
        assert!(q.is_empty());
    }

    #[test]
    fn events_scheduled_after_a_look_into_a_later_slot_pop_first() {
        // `peek_time` and `pop_until` below their limit make a later slot
        // current while time stays behind it; events then scheduled
        // between the two (a full key in `late`, below the current slot)
        // still pop first, at their own times, ahead of the slot's events
        // whose keys are rebuilt from the slot.
        let mut q = EventQueue::new();
        q.schedule(Time::ns(10), 0u32);
        assert_eq!(q.pop(), Some((Time::ns(10), 0)));
        q.schedule(Time::ms(1), 1);
        q.schedule(Time::ms(1) + Time(7), 2);
        assert_eq!(q.peek_time(), Some(Time::ms(1)));
        q.schedule(Time::ns(20), 3);
        assert_eq!(q.pop_until(Time::ns(15)), None);
        q.schedule(Time::ns(12), 4);
        q.schedule(Time::ms(1), 5);
        let got: Vec<(Time, u32)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            got,
            [
                (Time::ns(12), 4),
                (Time::ns(20), 3),
                (Time::ms(1), 1),
                (Time::ms(1), 5),
                (Time::ms(1) + Time(7), 2),
            ]
        );
    }

    #[test]
    fn a_reserved_event_pops_where_it_would_have() {
        // Reserve a place at 1 us, schedule 40 others at the same time
        // after it (a ring bucket sorted by the radix sort), then the
        // reserved one: it pops first among them, as if scheduled first.
        let mut q = EventQueue::new();
        q.schedule(Time::ns(1), 0u32);
        q.pop();
        let r = q.reserve_seq();
        for i in 1..=40u32 {
            q.schedule(Time::us(1), i);
        }
        assert!(!q.passed(Time::us(1), r));
        q.schedule_reserved(Time::us(1), r, 99);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order[0], 99);
        assert_eq!(&order[1..], &(1..=40).collect::<Vec<_>>()[..]);
        // Once the current event is later, the reserved place has passed.
        assert!(q.passed(Time::us(1), r));
        // In the current slot too (the late heap).
        let r = q.reserve_seq();
        q.schedule(q.now(), 7);
        q.schedule_reserved(q.now(), r, 6);
        assert_eq!(q.pop().map(|(_, e)| e), Some(6));
        assert_eq!(q.pop().map(|(_, e)| e), Some(7));
    }
}
