//! Credit-based link-level flow control per virtual lane.
//!
//! A sender may start a packet on VL v only if its blocks (64 B each, of
//! the whole packet) fit in FCCL(v) - FCTBS(v): the receiver's grant minus
//! what was sent. Packets bound for a port (a switch forwarding, a host's
//! ACKs) wait in a FIFO per VL until their blocks fit and then enter the
//! port's queues holding their credits, so the `[qos]` scheduler only ever
//! sees packets that may go; an HCA's data packets take their credits when
//! the NIC builds them: a QP whose next packet does not fit is parked in
//! the HCA's list for the VL and rescheduled, in order, when credits come
//! back (only as many as the returned credits can carry, so a credit
//! update costs O(QPs it wakes), never a scan of all parked QPs).
//!
//! Receivers count each packet's blocks in their VL buffer on arrival and
//! free them when a switch dequeues the packet for forwarding (cut-through
//! reads it out as it goes) or an HCA has moved it to memory; the freed
//! blocks go back upstream in a 6-byte flow-control packet in the port's
//! control queue (ahead of data, after the packet on the wire), one per VL
//! at a time. The update reaches the sender after its serialisation, the
//! cable and, into a switch, the switch's port latency (its PHY and link
//! layer), like any packet. Credit-stalled time per (port, VL) runs from
//! the moment a VL has a packet it cannot send and nothing credited left
//! to send, to the moment credits let it send again.

use super::super::packet::{Packet, PktId, PktKind};
use super::super::qp::Sched;
use super::super::{Net, PortIdx};
use crate::wire::{ib_credits, ib_wire_bytes, Ext, IB_FCP_BYTES};

impl Net {
    /// Queue packet `pkt` on egress `out` as soon as its VL has credits.
    pub(crate) fn ib_enqueue(&mut self, out: PortIdx, pkt: PktId) {
        let now = self.now();
        let (prio, wire) = {
            let p = self.pkts.get(pkt);
            (p.prio, p.wire)
        };
        let switch = self.is_switch(self.ports[out as usize].node);
        let queued_bytes = self.ports[out as usize].total_qbytes;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let vl = ib.vl(prio);
        let port = &mut ib.ports[out as usize];
        let need = ib_credits(wire);
        let fits = port.waitq[vl].is_empty() && port.limit[vl] - port.sent[vl] >= need;
        if fits {
            port.sent[vl] += need;
            port.queued[vl] += switch as u32;
            port.queued_blocks[vl] += need * switch as u64;
        } else {
            port.waitq[vl].push_back(pkt);
            port.wait_bytes[vl] += wire as u64;
            if port.stall_since[vl].is_none() && (!switch || port.queued[vl] == 0) {
                port.stall_since[vl] = Some(now.max(port.last_tx_end[vl]));
            }
        }
        let waiting: u64 = port.wait_bytes.iter().sum();
        let depth = queued_bytes + waiting + if fits { wire as u64 } else { 0 };
        port.c.peak_vl_queue_bytes = port.c.peak_vl_queue_bytes.max(depth);
        if fits {
            self.enqueue(out, pkt);
        }
    }

    /// An HCA's NIC is about to build QP `q`'s next packet: take its
    /// credits, or say no and park the QP (idle, in the HCA's list for its
    /// VL) until credits return.
    pub(crate) fn ib_nic_take_credits(&mut self, host: usize, q: u32) -> bool {
        let now = self.now();
        let (prio, wire) = self.ib_next_data_packet(q);
        let out = self.nics[host].port as usize;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let vl = ib.vl(prio);
        let port = &mut ib.ports[out];
        let need = ib_credits(wire);
        if port.waitq[vl].is_empty() && port.limit[vl] - port.sent[vl] >= need {
            port.sent[vl] += need;
            return true;
        }
        port.stall_since[vl].get_or_insert(now);
        if ib.qp_parked.len() <= q as usize {
            ib.qp_parked.resize(self.qps.len(), false);
        }
        if !std::mem::replace(&mut ib.qp_parked[q as usize], true) {
            ib.hcas[host].parked[vl].push_back(q);
        }
        self.qsched[q as usize].sched = Sched::Idle;
        false
    }

    /// Credits came back for `vl` on host `host`'s port: reschedule parked
    /// QPs, in the order they stopped, as long as their next packets fit.
    /// Returns how many were rescheduled.
    fn ib_unpark(&mut self, host: usize, vl: usize, mut budget: u64) -> usize {
        let mut woken = 0;
        loop {
            let ib = self.ib.as_mut().expect("InfiniBand");
            let Some(&q) = ib.hcas[host].parked[vl].front() else {
                break;
            };
            let qp = &self.qps[q as usize];
            if self.qsched[q as usize].sched == Sched::Idle && qp.has_unsent() {
                let need = ib_credits(self.ib_next_data_packet(q).1);
                if need > budget {
                    break;
                }
                budget -= need;
                woken += 1;
            }
            let ib = self.ib.as_mut().expect("InfiniBand");
            ib.hcas[host].parked[vl].pop_front();
            ib.qp_parked[q as usize] = false;
            self.qp_activate(q);
        }
        woken
    }

    /// Priority and wire size of QP `q`'s next data packet (the shape
    /// `nic::build_data_packet` gives it).
    fn ib_next_data_packet(&self, q: u32) -> (u8, u32) {
        let qp = &self.qps[q as usize];
        let m = &qp.msgs[qp.cur];
        let idx = qp.snd_nxt - m.first_psn;
        let (first, last) = (idx == 0, idx + 1 == m.npkts);
        let mtu = self.p.mtu as u64;
        let payload = (m.bytes.saturating_sub(idx as u64 * mtu)).min(mtu) as u32;
        use crate::net::OpKind;
        let (payload, ext) = match m.op {
            OpKind::Read => (0, Ext::Reth),
            OpKind::Write if first => (payload, Ext::Reth),
            OpKind::ReadResp if first || last => (payload, Ext::Aeth),
            _ => (payload, Ext::None),
        };
        (qp.prio, ib_wire_bytes(payload, ext))
    }

    /// A packet reached switch port `in_port`: count it in the VL buffer,
    /// route it (static LFT) and queue it for its egress.
    pub(crate) fn ib_switch_receive(&mut self, in_port: PortIdx, pkt: PktId) {
        let p = self.pkts.get_mut(pkt);
        p.ingress = in_port;
        let (src, dst, sport, dport, prio, wire) = (p.src, p.dst, p.sport, p.dport, p.prio, p.wire);
        self.ib_buffer_in(in_port, prio, wire);
        let node = self.ports[in_port as usize].node;
        let out = self.routing.next_port(node, src, dst, sport, dport);
        self.packets_forwarded += 1;
        self.ib_enqueue(out, pkt);
    }

    /// Count an arriving packet's blocks in port `pi`'s VL buffer.
    pub(super) fn ib_buffer_in(&mut self, pi: PortIdx, prio: u8, wire: u32) {
        let peer = self.ports[pi as usize].peer as usize;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let vl = ib.vl(prio);
        let need = ib_credits(wire);
        let sent_by_peer = ib.ports[peer].sent[vl];
        let port = &mut ib.ports[pi as usize];
        port.used[vl] += need;
        port.received[vl] += need;
        debug_assert!(port.used[vl] <= port.capacity, "VL buffer overflow");
        debug_assert!(port.received[vl] <= sent_by_peer, "credits not taken");
        port.c.peak_vl_buffer_bytes = port
            .c
            .peak_vl_buffer_bytes
            .max(port.used[vl] * crate::wire::IB_CREDIT_BYTES);
    }

    /// A switch egress starts sending `pkt`: its ingress buffer blocks go
    /// back upstream; FECN marking (congestion control) happens here.
    pub(crate) fn ib_switch_dequeue(&mut self, out: PortIdx, pkt: PktId, prio: usize) {
        let now = self.now();
        let (in_port, wire, rx_end) = {
            let p = self.pkts.get(pkt);
            (p.ingress, p.wire, p.rx_end)
        };
        let tx_end = (now + self.ports[out as usize].rate.tx_time(wire as u64)).max(rx_end);
        let ib = self.ib.as_mut().expect("InfiniBand");
        let vl = ib.vl(prio as u8);
        let port = &mut ib.ports[out as usize];
        port.queued[vl] -= 1;
        port.queued_blocks[vl] -= ib_credits(wire);
        port.last_tx_end[vl] = tx_end;
        if port.queued[vl] == 0 && !port.waitq[vl].is_empty() && port.stall_since[vl].is_none() {
            port.stall_since[vl] = Some(tx_end);
        }
        if ib.cc.is_some() {
            self.ib_mark_fecn(out, pkt, prio, vl);
        }
        self.ib_buffer_out(in_port, vl, ib_credits(wire));
    }

    /// Free `blocks` of port `pi`'s VL buffer and tell the upstream port.
    pub(super) fn ib_buffer_out(&mut self, pi: PortIdx, vl: usize, blocks: u64) {
        let ib = self.ib.as_mut().expect("InfiniBand");
        let port = &mut ib.ports[pi as usize];
        port.used[vl] -= blocks;
        port.freed[vl] += blocks;
        if port.fcp_pending & (1 << vl) != 0 {
            return; // the waiting update will carry these blocks too
        }
        port.fcp_pending |= 1 << vl;
        let node = self.ports[pi as usize].node;
        let fcp = self.pkts.alloc(Packet {
            kind: PktKind::FlowCtl,
            prio: vl as u8,
            flags: 0,
            sport: 0,
            dport: 0,
            src: node,
            dst: node,
            dst_qp: 0,
            psn: 0,
            payload: 0,
            wire: IB_FCP_BYTES,
            ingress: pi,
            aux: 0,
            token: 0,
            rx_end: self.now(),
        });
        self.ports[pi as usize].push_pfc(fcp);
        self.try_tx(pi);
    }

    /// A flow-control packet reached port `pi`: raise its egress's grant
    /// and send what now fits.
    pub(crate) fn ib_on_fcp(&mut self, pi: PortIdx, fcp: PktId) {
        let (vl, fccl) = {
            let p = self.pkts.get(fcp);
            (p.prio as usize, p.aux)
        };
        self.pkts.free(fcp);
        let ib = self.ib.as_mut().expect("InfiniBand");
        let port = &mut ib.ports[pi as usize];
        port.c.fcp_rx += 1;
        if fccl <= port.limit[vl] {
            return;
        }
        port.limit[vl] = fccl;
        self.ib_release(pi, vl);
    }

    /// Credits arrived for `vl` on egress `pi`: move waiting packets that
    /// fit to the port, close the stall, wake the HCA's parked QPs.
    fn ib_release(&mut self, pi: PortIdx, vl: usize) {
        let now = self.now();
        let node = self.ports[pi as usize].node;
        let switch = self.is_switch(node);
        let ib = self.ib.as_mut().expect("InfiniBand");
        let mut moved = std::mem::take(&mut ib.scratch);
        let port = &mut ib.ports[pi as usize];
        while let Some(&pkt) = port.waitq[vl].front() {
            let wire = self.pkts.get(pkt).wire;
            let need = ib_credits(wire);
            if port.limit[vl] - port.sent[vl] < need {
                break;
            }
            port.waitq[vl].pop_front();
            port.wait_bytes[vl] -= wire as u64;
            port.sent[vl] += need;
            port.queued[vl] += switch as u32;
            port.queued_blocks[vl] += need * switch as u64;
            moved.push(pkt);
        }
        let budget = port.limit[vl] - port.sent[vl];
        let waiting = !port.waitq[vl].is_empty();
        let woken = if switch || waiting {
            0
        } else {
            self.ib_unpark(node as usize, vl, budget)
        };
        // The VL resumes when a waiting packet or a parked QP goes (an
        // HCA's QP may then still find too few credits, and stall again).
        let ib = self.ib.as_mut().expect("InfiniBand");
        let port = &mut ib.ports[pi as usize];
        if !moved.is_empty() || woken > 0 {
            if let Some(since) = port.stall_since[vl].take() {
                if since < now {
                    port.c.credit_stalled_ps[vl] += (now - since).0;
                    port.c.credit_stalls += 1;
                    if let Some(log) = ib.credit_log.as_mut() {
                        log.push((pi, vl as u8, since, now));
                    }
                }
            }
        }
        let port = &mut ib.ports[pi as usize];
        if !switch && (waiting || !ib.hcas[node as usize].parked[vl].is_empty()) {
            port.stall_since[vl].get_or_insert(now);
        }
        for &pkt in &moved {
            self.enqueue(pi, pkt);
        }
        moved.clear();
        self.ib.as_mut().expect("InfiniBand").scratch = moved;
        if !switch {
            self.try_tx(pi);
        }
    }
}
