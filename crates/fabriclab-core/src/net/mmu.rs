//! Shared-buffer MMU of a switch: ingress accounting per (port, priority),
//! reserved bytes, a dynamic shared threshold, PFC headroom, and the
//! XOFF/XON decisions.
//!
//! The scheme follows the one the HPCC ns-3 code uses (see the reference
//! notes): each (ingress port, priority) first uses its reserve, then the
//! shared pool up to a dynamic threshold `(buffer - headroom - reserves -
//! shared in use) >> shift`, then its port's headroom. XOFF when the shared
//! use reaches the threshold or headroom is in use; XON when headroom is
//! empty and use + resume offset <= threshold. A lossless packet is dropped
//! only when headroom itself would overflow (a misconfiguration the model
//! must be able to show). Lossy priorities never use headroom: they are
//! tail-dropped when their egress queue exceeds the same dynamic threshold.
//! Bytes are those a switch stores: the frame, header to FCS, without the
//! preamble, SFD and inter-frame gap that a packet's wire size counts
//! (`Net::stored_bytes`); ECN thresholds compare with the same bytes.
//! Not modelled: per-pool service pools, egress accounting limits for the
//! lossless class, ~1 KB cell rounding.

use super::port::Port;
use crate::rng::Rng;

pub(crate) struct SwitchMmu {
    buffer: u64,
    total_headroom: u64,
    reserve: u64,
    total_reserve: u64,
    shared_used: u64,
    shift: u32,
    resume_offset: u64,
    /// Randomness for ECN marking.
    pub rng: Rng,
}

/// What ingress admission decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Buffered; `pause` says the ingress must send XOFF now.
    Ok { pause: bool },
    /// Dropped.
    Drop,
}

impl SwitchMmu {
    pub fn new(
        buffer: u64,
        total_headroom: u64,
        reserve: u64,
        total_reserve: u64,
        shift: u32,
        resume_offset: u64,
        rng: Rng,
    ) -> Self {
        SwitchMmu {
            buffer,
            total_headroom,
            reserve,
            total_reserve,
            shared_used: 0,
            shift,
            resume_offset,
            rng,
        }
    }

    /// The dynamic threshold on one (port, priority)'s shared use.
    #[inline]
    pub fn threshold(&self) -> u64 {
        self.buffer
            .saturating_sub(self.total_headroom + self.total_reserve + self.shared_used)
            >> self.shift
    }

    #[inline]
    fn shared_of(&self, port: &Port, prio: usize) -> u64 {
        port.prio[prio].ing_bytes.saturating_sub(self.reserve)
    }

    /// Admit a packet of a lossless priority arriving on `port`.
    pub fn admit_lossless(&mut self, port: &mut Port, prio: usize, size: u64) -> Admit {
        let thresh = self.threshold();
        if size + port.prio[prio].hdrm_bytes > port.headroom
            && size + self.shared_of(port, prio) > thresh
        {
            return Admit::Drop;
        }
        let new = port.prio[prio].ing_bytes + size;
        if new <= self.reserve {
            port.prio[prio].ing_bytes = new;
        } else if new - self.reserve > thresh {
            port.prio[prio].hdrm_bytes += size;
        } else {
            port.prio[prio].ing_bytes = new;
            self.shared_used += size.min(new - self.reserve);
        }
        port.ing_total += size;
        let thresh = self.threshold();
        let pause = !port.prio[prio].xoff
            && (port.prio[prio].hdrm_bytes > 0 || self.shared_of(port, prio) >= thresh);
        Admit::Ok { pause }
    }

    /// Admit a packet of a lossy priority arriving on `ingress`, bound for
    /// an egress queue currently holding `egress_queue` bytes.
    pub fn admit_lossy(
        &mut self,
        ingress: &mut Port,
        prio: usize,
        size: u64,
        egress_queue: u64,
    ) -> Admit {
        let thresh = self.threshold();
        let pool_full = self.shared_used + size
            > self
                .buffer
                .saturating_sub(self.total_headroom + self.total_reserve);
        if pool_full || egress_queue + size > self.reserve + thresh {
            return Admit::Drop;
        }
        let new = ingress.prio[prio].ing_bytes + size;
        if new > self.reserve {
            self.shared_used += size.min(new - self.reserve);
        }
        ingress.prio[prio].ing_bytes = new;
        ingress.ing_total += size;
        Admit::Ok { pause: false }
    }

    /// A packet that entered on `port` left the switch. Returns true if the
    /// ingress must now send XON.
    pub fn release(&mut self, port: &mut Port, prio: usize, size: u64) -> bool {
        let from_hdrm = port.prio[prio].hdrm_bytes.min(size);
        let rest = size - from_hdrm;
        let from_shared = rest.min(self.shared_of(port, prio));
        port.prio[prio].hdrm_bytes -= from_hdrm;
        port.prio[prio].ing_bytes -= rest;
        port.ing_total -= size;
        self.shared_used -= from_shared;
        if !port.prio[prio].xoff || port.prio[prio].hdrm_bytes > 0 {
            return false;
        }
        let used = self.shared_of(port, prio);
        used == 0 || used + self.resume_offset <= self.threshold()
    }

    /// Bytes of the shared pool in use.
    #[cfg(test)]
    pub fn shared_used(&self) -> u64 {
        self.shared_used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Rate, Time};

    fn port(headroom: u64) -> Port {
        let mut p = Port::new(0, 0, 0, true, Rate::gbps(100), Time::ns(10));
        p.headroom = headroom;
        p
    }

    fn mmu() -> SwitchMmu {
        // 1 MB buffer, 100 KB headroom in total, 4 KB reserve, alpha 1/8.
        SwitchMmu::new(1_000_000, 100_000, 4096, 4096, 3, 3072, Rng::new(0, 0))
    }

    #[test]
    fn reserve_is_used_first_then_shared_pool() {
        let mut m = mmu();
        let mut p = port(50_000);
        assert_eq!(
            m.admit_lossless(&mut p, 3, 4096),
            Admit::Ok { pause: false }
        );
        assert_eq!(m.shared_used(), 0);
        m.admit_lossless(&mut p, 3, 1000);
        assert_eq!(m.shared_used(), 1000);
    }

    #[test]
    fn pause_at_the_dynamic_threshold_and_resume_below_it() {
        // By hand, 1,000 B packets: the first four fill the 4,096 B
        // reserve, then the shared use after k packets is S = 1,000k -
        // 4,096 against a threshold T(S) = (1e6 - 104,096 - S) >> 3. The
        // 104th would bring S to 99,904 > T(98,904) = 99,625: it goes to
        // headroom and the port pauses.
        let mut m = mmu();
        let mut p = port(50_000);
        for k in 1..=103 {
            assert_eq!(
                m.admit_lossless(&mut p, 3, 1000),
                Admit::Ok { pause: false },
                "packet {k}"
            );
        }
        assert_eq!(m.shared_used(), 98_904);
        assert_eq!(m.admit_lossless(&mut p, 3, 1000), Admit::Ok { pause: true });
        assert_eq!((p.prio[3].hdrm_bytes, m.shared_used()), (1000, 98_904));
        p.prio[3].xoff = true;
        // XON once headroom is empty and S + 3,072 <= T(S), that is
        // S <= 96,814: the first release empties headroom, the next three
        // take S to 97,904, 96,904 (T = 99,875: 99,976 is still above) and
        // 95,904 (T = 100,000), where the port resumes, long before it is
        // empty.
        let released: Vec<bool> = (0..4).map(|_| m.release(&mut p, 3, 1000)).collect();
        assert_eq!(released, [false, false, false, true]);
        assert_eq!((p.prio[3].hdrm_bytes, m.shared_used()), (0, 95_904));
    }

    #[test]
    fn headroom_overflow_drops() {
        // Buffer 20,000 B, 2,000 B of headroom, no reserve, shift 0: the
        // threshold is 18,000 - S. The k-th 1,000 B packet goes to the
        // shared pool while 1,000k <= 19,000 - 1,000k, so nine do (S =
        // 9,000); the next two fill the headroom; the other 89 are dropped.
        let mut m = SwitchMmu::new(20_000, 2_000, 0, 0, 0, 0, Rng::new(0, 0));
        let mut p = port(2_000);
        let mut drops = 0;
        for _ in 0..100 {
            if m.admit_lossless(&mut p, 3, 1000) == Admit::Drop {
                drops += 1;
            }
        }
        assert_eq!(
            (drops, p.prio[3].hdrm_bytes, m.shared_used()),
            (89, 2_000, 9_000)
        );
    }

    #[test]
    fn lossy_tail_drop_at_the_reserve_plus_the_dynamic_threshold() {
        // Empty pool: T = (1e6 - 104,096) >> 3 = 111,988, so a packet is
        // dropped once its egress queue would pass 4,096 + 111,988 =
        // 116,084 B.
        let mut m = mmu();
        let mut p = port(50_000);
        assert_eq!(m.admit_lossy(&mut p, 0, 1500, 114_585), Admit::Drop);
        assert_eq!(
            m.admit_lossy(&mut p, 0, 1500, 114_584),
            Admit::Ok { pause: false }
        );
        assert_eq!(m.shared_used(), 0, "the first 1,500 B sit in the reserve");
    }

    #[test]
    fn lossy_drops_when_the_shared_pool_is_full_whatever_the_queue() {
        // 1,000 B packets to an empty egress queue: four in the reserve,
        // then S = 1,000k - 4,096, until S = 895,904 (the buffer less
        // headroom and reserves) after the 900th. The 901st finds the pool
        // full, although its queue (0 + 1,000 <= 4,096 + T = 4,096) would
        // take it.
        let mut m = mmu();
        let mut p = port(50_000);
        for k in 1..=900 {
            assert_eq!(
                m.admit_lossy(&mut p, 0, 1000, 0),
                Admit::Ok { pause: false },
                "packet {k}"
            );
        }
        assert_eq!((m.shared_used(), m.threshold()), (895_904, 0));
        assert_eq!(m.admit_lossy(&mut p, 0, 1000, 0), Admit::Drop);
    }

    #[test]
    fn release_returns_every_byte() {
        let mut m = mmu();
        let mut p = port(50_000);
        let mut admitted = 0;
        for _ in 0..200 {
            if m.admit_lossless(&mut p, 3, 1500) != Admit::Drop {
                admitted += 1;
            }
        }
        let total = p.prio[3].ing_bytes + p.prio[3].hdrm_bytes;
        assert_eq!(total, admitted * 1500);
        for _ in 0..admitted {
            m.release(&mut p, 3, 1500);
        }
        assert_eq!(p.prio[3].ing_bytes + p.prio[3].hdrm_bytes, 0);
        assert_eq!(m.shared_used(), 0);
        assert_eq!(p.ing_total, 0);
    }
}
