//! Switch forwarding: routing lookup, buffer admission, PFC frames, and ECN
//! marking at dequeue.
//!
//! A packet arriving at a switch (after the port-to-port latency, see
//! `port.rs`) is routed, admitted by the MMU against its ingress port, and
//! queued on its egress priority queue. When it starts leaving, its buffer is
//! released (which may send XON upstream) and, if it is ECN-capable (RoCE
//! data, or a TCP segment of an ECN connection) in an ECN-enabled priority
//! (by default the lossless ones), it may be CE-marked with the RED
//! probability of the egress queue depth it leaves behind (marking at
//! dequeue, as the HPCC ns-3 code does, gives the fastest feedback).
//! Segments that are not ECN-capable are never marked (nor dropped early).
//! An InfiniBand switch forwards through `ib/credits.rs` instead.

use super::mmu::Admit;
use super::packet::{Packet, PktId, PktKind, F_CE, F_ECT};
use super::{Ev, Net, PortIdx};
use crate::rng::Rng;
use crate::wire::PFC_FRAME_WIRE;

/// RED marking on the bytes `q` a departing packet leaves in its queue:
/// never at or below `kmin`, always at or above `kmax`, and in between with
/// probability `pmax x (q - kmin) / (kmax - kmin)`, drawn from `rng`, which
/// is left untouched outside the ramp.
#[inline]
pub(crate) fn ecn_mark(q: u64, kmin: u64, kmax: u64, pmax: f64, rng: &mut Rng) -> bool {
    if q <= kmin {
        false
    } else if q >= kmax {
        true
    } else {
        let prob = pmax * (q - kmin) as f64 / (kmax - kmin) as f64;
        rng.next_f64() < prob
    }
}

impl Net {
    /// A note for the tools' output when a lossless priority dropped
    /// frames because PFC headroom overflowed (a fabric that allows it, as
    /// a real switch configured so would): how many, and where to look.
    pub fn headroom_note(&self) -> Option<String> {
        let (frames, bytes, pi) = self.headroom_drops;
        if frames == 0 {
            return None;
        }
        let port = &self.ports[pi as usize];
        let names = &self.topo.nodes;
        Some(format!(
            "{frames} frame(s), {bytes} B, of lossless priorities were dropped: the PFC headroom \
             overflowed (first at {} from {}, whose headroom is {} B); raise switch.headroom_bytes \
             or leave it out to derive it from the link's rate and delay",
            names[port.node as usize].name, names[port.peer_node as usize].name, port.headroom
        ))
    }

    /// A packet arrived at switch `node` through its port `in_port` (the
    /// caller has the node at hand: reading it here would touch another
    /// line of the port).
    pub(crate) fn switch_receive(&mut self, node: u32, in_port: PortIdx, pkt: PktId) {
        if self.ib.is_some() {
            return self.ib_switch_receive(in_port, pkt);
        }
        let p = self.pkts.get_mut(pkt);
        p.ingress = in_port;
        let (src, dst, sport, dport) = (p.src, p.dst, p.sport, p.dport);
        let (prio, size) = (p.prio as usize, p.wire as u64);
        // The buffer holds the frame; drop counters count wire bytes.
        let stored = size - self.p.framing as u64;
        debug_assert_eq!(node, self.ports[in_port as usize].node);
        let out = if self.ar.is_some() {
            self.adaptive_port(node, (src, dst, sport, dport), prio)
        } else {
            self.routing.next_port(node, src, dst, sport, dport)
        };
        if self.fail.is_some() && (out == super::routing::NO_ROUTE || !self.ports[out as usize].up)
        {
            // A link failure: no route yet, or a dead port not yet detected.
            let at = if out == super::routing::NO_ROUTE {
                in_port
            } else {
                out
            };
            self.audit_lost(at, pkt);
            return self.lose(at, pkt);
        }
        if self.storms_active != 0 && self.watchdog_blocks(in_port, out, prio) {
            let at = if self.ports[out as usize].storm & (1 << prio) != 0 {
                out
            } else {
                in_port
            };
            return self.watchdog_drop(at, pkt, prio);
        }
        let sw = node as usize - self.topo.n_hosts;
        let admit = if self.p.lossless[prio] {
            self.mmus[sw].admit_lossless(&mut self.ports[in_port as usize], prio, stored)
        } else {
            let q = self.ports[out as usize].prio[prio].qbytes;
            self.mmus[sw].admit_lossy(&mut self.ports[in_port as usize], prio, stored, q)
        };
        match admit {
            Admit::Drop => {
                // Headroom overflow is the ingress port's; tail drop the egress's.
                let at = if self.p.lossless[prio] {
                    let d = &mut self.headroom_drops;
                    if d.0 == 0 {
                        d.2 = in_port;
                    }
                    d.0 += 1;
                    d.1 += size;
                    in_port
                } else {
                    out
                };
                self.ports[at as usize].c.add_drop(prio, size);
                self.audit_drop(at, pkt, false);
                self.pkts.free(pkt);
            }
            Admit::Ok { pause } => {
                let ip = &mut self.ports[in_port as usize];
                ip.rx.peak_buffer_bytes = ip.rx.peak_buffer_bytes.max(ip.ing_total);
                if pause {
                    self.send_pfc(in_port, prio as u8, true);
                }
                self.packets_forwarded += 1;
                self.enqueue(out, pkt);
            }
        }
    }

    /// Called by the port when a packet leaves a switch queue.
    pub(crate) fn on_switch_dequeue(&mut self, out: PortIdx, pkt: PktId, prio: usize) {
        if self.ib.is_some() {
            return self.ib_switch_dequeue(out, pkt, prio);
        }
        let (kind, flags) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.flags)
        };
        self.release_switch_buffer(out, pkt, prio);
        let sw = self.ports[out as usize].node as usize - self.topo.n_hosts;
        let ect = kind.is_data() || (kind == PktKind::TcpData && flags & F_ECT != 0);
        if self.p.ecn && self.p.ecn_prio[prio] && ect {
            let q = self.ports[out as usize].prio[prio].qbytes;
            let (kmin, kmax) = match &self.decn {
                None => (self.p.kmin, self.p.kmax),
                Some(d) => d.thresholds(out, prio),
            };
            let mark = ecn_mark(q, kmin, kmax, self.p.pmax, &mut self.mmus[sw].rng);
            if mark {
                self.pkts.get_mut(pkt).flags |= F_CE;
                self.ports[out as usize].c.ecn_marks += 1;
            }
            if self.decn.is_some() {
                // The controller compares the queue with the bytes the line
                // carries in its target delay: wire bytes, framing included.
                let q_wire = self.queued_wire_bytes(out as usize, prio);
                self.dyn_ecn_departure(out, prio, q_wire, mark);
            }
        }
    }

    /// Release the switch buffer a queued packet held (its ingress may
    /// send XON).
    pub(crate) fn release_switch_buffer(&mut self, out: PortIdx, pkt: PktId, prio: usize) {
        let (in_port, stored) = (self.pkts.get(pkt).ingress, self.stored_bytes(pkt));
        let sw = self.ports[out as usize].node as usize - self.topo.n_hosts;
        if self.mmus[sw].release(&mut self.ports[in_port as usize], prio, stored) {
            self.send_pfc(in_port, prio as u8, false);
        }
    }

    /// Send XOFF (`pause`) or XON for `prio` out of switch port `pi`.
    pub(crate) fn send_pfc(&mut self, pi: PortIdx, prio: u8, pause: bool) {
        let now = self.now();
        if pause && self.storms_active != 0 && self.watchdog_silences(pi, prio) {
            return;
        }
        let port = &mut self.ports[pi as usize];
        let was = port.prio[prio as usize].xoff;
        port.prio[prio as usize].xoff = pause;
        let quanta = if pause { self.p.pause_quanta as u64 } else { 0 };
        if pause {
            port.xoff_at[prio as usize] = now;
            // Refresh halfway through the pause time while still congested.
            let half = port.rate.tx_time(quanta * 64 / 2);
            self.q.schedule(now + half, Ev::PfcRefresh(pi, prio));
        }
        if self.audit.is_some() {
            self.audit_pfc(pi, prio, pause, was);
        }
        let port = &mut self.ports[pi as usize];
        if !port.up {
            return; // the link is down: nothing to tell
        }
        let node = port.node;
        let pkt = self.pkts.alloc(Packet {
            kind: PktKind::Pause,
            prio,
            flags: 0,
            sport: 0,
            dport: 0,
            src: node,
            dst: node,
            dst_qp: 0,
            psn: 0,
            payload: 0,
            wire: PFC_FRAME_WIRE,
            ingress: pi,
            aux: quanta,
            token: 0,
            rx_end: now,
        });
        self.ports[pi as usize].push_pfc(pkt);
        self.try_tx(pi);
    }

    pub(crate) fn on_pfc_refresh(&mut self, pi: PortIdx, prio: u8) {
        let now = self.now();
        let port = &self.ports[pi as usize];
        let half = port.rate.tx_time(self.p.pause_quanta as u64 * 64 / 2);
        if port.prio[prio as usize].xoff && now >= port.xoff_at[prio as usize] + half {
            self.send_pfc(pi, prio, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks out of `n` departures leaving `q` bytes behind.
    fn marks(q: u64, n: u32) -> u32 {
        let mut rng = Rng::new(7, 1);
        (0..n)
            .filter(|_| ecn_mark(q, 100_000, 1_000_000, 0.2, &mut rng))
            .count() as u32
    }

    #[test]
    fn no_mark_at_or_below_kmin_and_the_draws_are_kept() {
        let mut rng = Rng::new(7, 1);
        assert!(!ecn_mark(0, 100_000, 1_000_000, 0.2, &mut rng));
        assert!(!ecn_mark(100_000, 100_000, 1_000_000, 0.2, &mut rng));
        assert!(ecn_mark(1_000_000, 100_000, 1_000_000, 0.2, &mut rng));
        assert!(ecn_mark(5_000_000, 100_000, 1_000_000, 0.2, &mut rng));
        // None of the four drew a number: the stream is where it started.
        assert_eq!(rng.next_u64(), Rng::new(7, 1).next_u64());
    }

    #[test]
    fn the_ramp_marks_with_pmax_times_the_fraction_above_kmin() {
        // A quarter and three quarters up the ramp: p = 0.2 x 1/4 = 0.05
        // and 0.2 x 3/4 = 0.15. Over 100,000 departures the binomial sd is
        // 69 and 113 marks; 4 sd apart from 5,000 and 15,000 leaves out
        // pmax ignored (25,000 / 75,000), the ramp read backwards (15,000 /
        // 5,000) and the ramp measured from zero (6,500 / 15,500).
        let n = 100_000;
        let quarter = marks(100_000 + 900_000 / 4, n);
        let three_quarters = marks(100_000 + 3 * 900_000 / 4, n);
        assert!((quarter as i64 - 5_000).abs() < 4 * 69, "{quarter}");
        assert!(
            (three_quarters as i64 - 15_000).abs() < 4 * 113,
            "{three_quarters}"
        );
        // Just above kmin and just below kmax.
        assert!(marks(100_001, n) < 5);
        let top = marks(999_999, n);
        assert!((top as i64 - 20_000).abs() < 4 * 127, "{top}");
    }
}
