//! A NIC's queue pairs that may send now, and the order it serves them in
//! (`[nic] qp_arbitration`).
//!
//! - `ring` (the default): first come, first served. A QP that becomes
//!   eligible (its rate limiter's gap is over, PFC lifted, new work) joins
//!   the back of the ring, behind every QP already waiting, and a QP that
//!   sent a packet and may send again at once goes to the back too: round
//!   robin in which a late joiner waits a full round.
//! - `cyclic`: a fixed cyclic order, the order in which the QPs were
//!   created, scanned from the QP after the last one that sent: the ns-3
//!   HPCC simulator's NIC (`RdmaEgressQueue::GetNextQindex` with its
//!   `m_rrlast`). A late joiner waits until the scan reaches its place,
//!   about half a round on average, so QPs paced below their share by
//!   DCQCN get more of the NIC than under `ring`.
//!
//! NICs do not document their send arbitration; `ring` is the model's
//! default and `cyclic` exists for like-for-like cross-checks against ns-3
//! (`docs/validation.md`). QP ids grow in creation order on every host,
//! so the id is the cyclic position. Both rules cost O(1) (`ring`) or
//! O(log n) (`cyclic`) per packet, never a scan.

pub use crate::config::QpArbitration;
use std::collections::{BTreeSet, VecDeque};

/// The eligible QPs of one NIC.
pub(crate) enum Ready {
    Ring(VecDeque<u32>),
    Cyclic {
        /// Eligible QPs by id (= creation order).
        set: BTreeSet<u32>,
        /// The QP that sent last: the scan starts after it.
        last: Option<u32>,
    },
}

impl Ready {
    pub fn new(rule: QpArbitration) -> Ready {
        match rule {
            QpArbitration::Ring => Ready::Ring(VecDeque::new()),
            QpArbitration::Cyclic => Ready::Cyclic {
                set: BTreeSet::new(),
                last: None,
            },
        }
    }

    /// QP `q` may send now.
    #[inline]
    pub fn push(&mut self, q: u32) {
        match self {
            Ready::Ring(r) => r.push_back(q),
            Ready::Cyclic { set, .. } => {
                set.insert(q);
            }
        }
    }

    /// The next QP to consider (taken out; the caller puts it back where
    /// it belongs).
    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        match self {
            Ready::Ring(r) => r.pop_front(),
            Ready::Cyclic { set, last } => {
                let after = last.map_or(0, |l| l.saturating_add(1));
                let q = set.range(after..).next().or_else(|| set.first()).copied()?;
                set.remove(&q);
                Some(q)
            }
        }
    }

    /// QP `q` sent a packet: the cyclic scan goes on after it.
    #[inline]
    pub fn served(&mut self, q: u32) {
        if let Ready::Cyclic { last, .. } = self {
            *last = Some(q);
        }
    }

    /// The QP `n` places ahead, when it is cheap to tell (a prefetch hint;
    /// the ring only).
    #[inline]
    pub fn ahead(&self, n: usize) -> Option<u32> {
        match self {
            Ready::Ring(r) => r.get(n).copied(),
            Ready::Cyclic { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(rule: QpArbitration, pushes: &[u32], served_first: Option<u32>) -> Vec<u32> {
        let mut r = Ready::new(rule);
        if let Some(q) = served_first {
            r.served(q);
        }
        for &q in pushes {
            r.push(q);
        }
        std::iter::from_fn(|| r.pop()).collect()
    }

    #[test]
    fn ring_serves_in_arrival_order_and_cyclic_from_after_the_last_sender() {
        assert_eq!(
            order(QpArbitration::Ring, &[5, 2, 9, 1], Some(3)),
            [5, 2, 9, 1]
        );
        // After QP 3 sent: 5, 9, then wrap to 1, 2.
        assert_eq!(
            order(QpArbitration::Cyclic, &[5, 2, 9, 1], Some(3)),
            [5, 9, 1, 2]
        );
        assert_eq!(order(QpArbitration::Cyclic, &[5, 2], None), [2, 5]);
    }

    #[test]
    fn a_late_joiner_waits_behind_everyone_on_the_ring_but_not_in_the_cycle() {
        // QPs 1 and 4 wait; QP 1 sends, and QP 2 becomes eligible. The
        // ring serves the QPs already waiting first; the cycle serves QP 2,
        // the next after QP 1 in creation order.
        let mut ring = Ready::new(QpArbitration::Ring);
        let mut cyc = Ready::new(QpArbitration::Cyclic);
        for r in [&mut ring, &mut cyc] {
            r.push(1);
            r.push(4);
            r.served(1);
            r.push(2); // eligible again after QP 1 sent
        }
        assert_eq!(ring.pop(), Some(1));
        assert_eq!(cyc.pop(), Some(2), "the scan after QP 1 reaches 2 first");
    }
}
