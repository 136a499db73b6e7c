//! The HCA's receive side on InfiniBand: a receive buffer per VL whose
//! blocks are granted to the switch port upstream, and the move of each
//! packet into host memory that frees them.
//!
//! By default an HCA consumes a packet as its last bit arrives (the buffer
//! only bounds what is in flight). With `ib.hca_drain_gbps` it moves
//! packets to memory one at a time at that rate, in arrival order, as a
//! host whose PCIe or memory cannot keep up: its buffer fills, its credits
//! run out and the switch port feeding it stops. A packet is handed to the
//! RC transport (`nic.rs`) once moved; there the FECN of congestion control
//! is answered with a BECN and a BECN is taken by the sender (`cc.rs`).
//! Left out: receive-queue (SRQ/RNR) exhaustion, which IB answers with RNR
//! NAKs rather than with credits.

use super::super::packet::{PktId, PktKind};
use super::super::{Ev, Net, PortIdx};
use crate::wire::ib_credits;

impl Net {
    /// A packet's last bit reached host port `pi` (its counters done).
    pub(crate) fn ib_hca_arrive(&mut self, pi: PortIdx, pkt: PktId) {
        let (prio, wire) = {
            let p = self.pkts.get(pkt);
            (p.prio, p.wire)
        };
        self.ib_buffer_in(pi, prio, wire);
        let host = self.ports[pi as usize].node as usize;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let Some(rate) = ib.drain_rate else {
            return self.ib_hca_consume(pi, pkt);
        };
        let hca = &mut ib.hcas[host];
        hca.drain.push_back((pi, pkt));
        if hca.drain.len() == 1 {
            self.q
                .schedule_in(rate.tx_time(wire as u64), Ev::IbDrain(host as u32));
        }
    }

    /// The HCA of `host` finished moving the head packet to memory.
    pub(crate) fn on_ib_drain(&mut self, host: u32) {
        let ib = self.ib.as_mut().expect("InfiniBand");
        let rate = ib.drain_rate.expect("drain rate");
        let hca = &mut ib.hcas[host as usize];
        let (pi, pkt) = hca.drain.pop_front().expect("a packet being moved");
        if let Some(&(_, next)) = hca.drain.front() {
            let wire = self.pkts.get(next).wire as u64;
            self.q.schedule_in(rate.tx_time(wire), Ev::IbDrain(host));
        }
        self.ib_hca_consume(pi, pkt);
    }

    /// The packet is in host memory: free its blocks, then let the RC
    /// transport (or congestion control, for a BECN) act on it.
    fn ib_hca_consume(&mut self, pi: PortIdx, pkt: PktId) {
        let p = *self.pkts.get(pkt);
        let vl = self.ib.as_ref().expect("InfiniBand").vl(p.prio);
        self.ib_buffer_out(pi, vl, ib_credits(p.wire));
        let host = self.ports[pi as usize].node;
        if p.kind == PktKind::Cnp {
            self.pkts.free(pkt);
            // A READ responder stream's BECNs slow its QP (`responder.rs`).
            let q = self.qp_owner(p.dst_qp);
            return self.ib_on_becn(q);
        }
        if p.kind.is_data() && p.flags & super::super::packet::F_CE != 0 {
            self.ib_send_becn(&p);
        }
        self.nic_receive(host, pkt);
    }
}
