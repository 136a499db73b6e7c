//! The RDMA NIC: queue-pair scheduling, RC transport and DCQCN end points.
//!
//! Sending: QPs with eligible data sit in a round-robin ring; a QP held back
//! by its rate limiter or by the NIC's send latency waits in a time-ordered
//! heap; a QP whose priority is paused by PFC is parked until XON. The port
//! pulls one packet at a time when it is free, so the cost per packet is
//! O(log active QPs) and never a scan over all QPs.
//!
//! Reliability (RC): cumulative ACKs every `ack_every_packets` packets, at
//! the end of each message and for every duplicate packet (IB spec C9-105);
//! a NAK (sequence error) on the first PSN gap of an episode; go-back-N from the NAKed PSN; a retransmission timeout of
//! 4.096 us x 2^exponent that rewinds to the oldest unacknowledged PSN.
//! Out-of-order packets are discarded (no out-of-order placement).
//!
//! Congestion control: the notification point sends at most one CNP per
//! port or QP per interval for CE-marked data (`cc::CnpPolicy`); the
//! reaction point (`cc/`, DCQCN today) sets the rate of the QP's limiter. The limiter spaces packets by wire size / rate; when
//! the rate changes, the rest of the current gap is paid at the new rate.
//!
//! Simplifications, on purpose: a READ response is a message of the
//! responder's READ responder stream (`responder.rs`), acknowledged by the
//! requester like WRITE data (real IB needs no ACKs for responses; here
//! they cost a few small packets on the reverse path). The receiving host
//! never runs out of buffer, so a NIC never sends PFC frames (unless `[[pfc_storms]]` makes it stuck) and
//! never sends an RNR NAK. The transport retry count is enforced: after
//! `nic.retry_cnt` retransmissions in a row without progress (on timeout
//! or on a NAK sequence error, which the IB spec counts alike), the next
//! one puts the QP in the error state (`qp_fail`). Here `retry_cnt = 7`
//! means 7 retries: only `rnr_retry = 7` means "for ever" in verbs
//! (Soft-RoCE also reads `retry_cnt = 7` that way; this model does not).
//! On InfiniBand a QP whose next packet lacks link credits is parked by
//! `ib/credits.rs` (the hook in `nic_next_packet`).

use super::cc::Timers;
use super::packet::{Packet, PktId, PktKind, F_CE, F_ECE, F_FIRST, F_LAST, F_RETX, F_SILENT};
use super::qp::{stream_owner, Msg, Sched};
use super::verbs::{AppEvent, OpKind};
use super::{Ev, Net};
use crate::units::Time;
use crate::wire::{Ext, ROCEV2_UDP_PORT};
use std::cmp::Reverse;

impl Net {
    /// Make a QP with unsent data schedulable.
    pub(crate) fn qp_activate(&mut self, q: u32) {
        let now = self.now();
        let s = &mut self.qsched[q as usize];
        if s.sched != Sched::Idle || !s.has_unsent {
            return;
        }
        let at = s.eligible_at;
        let nic = &mut self.nics[self.qps[q as usize].host as usize];
        let port = nic.port;
        if at <= now {
            s.sched = Sched::Ready;
            nic.ready.push(q);
            if !self.ports[port as usize].busy {
                self.try_tx(port);
            }
        } else {
            s.sched = Sched::Waiting;
            self.qps[q as usize].wait_at = at;
            nic.waiting.push(Reverse((at, q)));
            self.wake_port_at(port, at);
        }
    }

    /// Refresh the scheduler's copy of QP `q`'s send state; called after
    /// every change to its PSNs, pacing or messages.
    #[inline]
    fn sync_sched(&mut self, q: u32) {
        let qp = &self.qps[q as usize];
        let s = &mut self.qsched[q as usize];
        s.has_unsent = qp.has_unsent();
        s.eligible_at = qp.eligible_at();
    }

    /// The next data packet of host `host`'s NIC, if any QP may send now.
    pub(crate) fn nic_next_packet(&mut self, host: u32) -> Option<PktId> {
        let now = self.now();
        let h = host as usize;
        let port = self.nics[h].port;
        while let Some(&Reverse((t, q))) = self.nics[h].waiting.peek() {
            if t > now {
                break;
            }
            self.nics[h].waiting.pop();
            let s = &mut self.qsched[q as usize];
            if s.sched != Sched::Waiting || self.qps[q as usize].wait_at != t {
                // Superseded by an earlier entry (see `qp_rate_changed`).
                continue;
            }
            s.sched = Sched::Ready;
            self.nics[h].ready.push(q);
        }
        loop {
            if let Some(ahead) = self.nics[h].ready.ahead(8) {
                crate::engine::prefetch(&self.qsched[ahead as usize]);
            }
            let Some(q) = self.nics[h].ready.pop() else {
                if let Some(&Reverse((t, _))) = self.nics[h].waiting.peek() {
                    self.wake_port_at(port, t);
                }
                return None;
            };
            debug_assert!({
                let (qp, s) = (&self.qps[q as usize], &self.qsched[q as usize]);
                s.has_unsent == qp.has_unsent() && s.eligible_at == qp.eligible_at()
            });
            let s = &mut self.qsched[q as usize];
            if !s.has_unsent {
                s.sched = Sched::Idle;
                continue;
            }
            let at = s.eligible_at;
            if at > now {
                s.sched = Sched::Waiting;
                self.qps[q as usize].wait_at = at;
                self.nics[h].waiting.push(Reverse((at, q)));
                continue;
            }
            let prio = s.prio as usize;
            if self.ports[port as usize].paused(prio, now) {
                self.qsched[q as usize].sched = Sched::Parked;
                self.nics[h].parked[prio].push(q);
                continue;
            }
            if self.ib.is_some() && !self.ib_nic_take_credits(h, q) {
                continue; // parked by ib/credits.rs until credits return
            }
            self.nics[h].ready.served(q);
            // The next QP of the ring is asked for when this packet is out.
            if let Some(next) = self.nics[h].ready.ahead(0) {
                crate::engine::prefetch(&self.qsched[next as usize]);
                crate::engine::prefetch(&self.qps[next as usize]);
            }
            let pkt = self.build_data_packet(q);
            let s = &mut self.qsched[q as usize];
            if s.has_unsent {
                let at = s.eligible_at;
                if at <= now {
                    s.sched = Sched::Ready;
                    self.nics[h].ready.push(q);
                } else {
                    s.sched = Sched::Waiting;
                    self.qps[q as usize].wait_at = at;
                    self.nics[h].waiting.push(Reverse((at, q)));
                }
            } else {
                s.sched = Sched::Idle;
            }
            return Some(pkt);
        }
    }

    /// PFC on the host port lifted priority `prio`: unpark its QPs.
    pub(crate) fn nic_unpark(&mut self, host: u32, prio: usize) {
        let nic = &mut self.nics[host as usize];
        for q in nic.parked[prio].drain(..) {
            self.qsched[q as usize].sched = Sched::Ready;
            nic.ready.push(q);
        }
    }

    fn build_data_packet(&mut self, q: u32) -> PktId {
        let now = self.now();
        let mtu = self.p.mtu as u64;
        let qp = &mut self.qps[q as usize];
        let m = &qp.msgs[qp.cur];
        let idx = qp.snd_nxt - m.first_psn;
        let first = idx == 0;
        let last = idx + 1 == m.npkts;
        let (kind, payload, ext, aux) = match m.op {
            OpKind::Read => (PktKind::ReadReq, 0, Ext::Reth, m.bytes),
            op => {
                let payload = (m.bytes - idx as u64 * mtu).min(mtu) as u32;
                let (kind, ext) = match op {
                    OpKind::Write => (PktKind::Write, if first { Ext::Reth } else { Ext::None }),
                    OpKind::Send => (PktKind::Send, Ext::None),
                    _ => (
                        PktKind::ReadResp,
                        if first || last { Ext::Aeth } else { Ext::None },
                    ),
                };
                (kind, payload, ext, m.bytes)
            }
        };
        let wire = self.p.wire_bytes(payload, ext);
        let mut flags = 0;
        if first {
            flags |= F_FIRST;
        }
        if last {
            flags |= F_LAST;
        }
        // A READ request and its response carry whether the requester
        // asked for a completion (a response's `notify` is its requester's).
        if !m.notify && (m.op == OpKind::Read || (last && m.op == OpKind::ReadResp)) {
            flags |= F_SILENT;
        }
        if qp.snd_nxt < qp.snd_max {
            flags |= F_RETX;
            qp.counters.retx_packets += 1;
        }
        let pkt = Packet {
            kind,
            prio: qp.prio,
            flags,
            sport: qp.sport,
            dport: ROCEV2_UDP_PORT,
            src: qp.host,
            dst: qp.peer_host,
            dst_qp: qp.peer_qp,
            psn: qp.snd_nxt,
            payload,
            wire,
            ingress: 0,
            aux,
            token: m.token,
            rx_end: now,
        };
        qp.snd_nxt += 1;
        qp.snd_max = qp.snd_max.max(qp.snd_nxt);
        if last {
            qp.cur += 1;
        }
        qp.counters.tx_payload_bytes += payload as u64;
        qp.counters.tx_packets += 1;
        // The rate limiter is the QP's, for its READ responder stream too
        // (`responder.rs`). The byte counter may raise the rate at once;
        // the packet's gap is then paid at the new rate (see
        // `qp_rate_changed`).
        let lim = stream_owner(q, qp.owner);
        let lq = &mut self.qps[lim as usize];
        if let (Some(cc), Some(conf)) = (lq.cc.as_mut(), self.p.cc.as_ref()) {
            cc.on_sent(wire as u64, conf);
        }
        // Pace by the current rate.
        let rate = lq.rate();
        let qp = &mut self.qps[q as usize];
        qp.next_tx = now + rate.tx_time(wire as u64);
        // Retransmission timer (the IB transport timer): started by a send
        // when none is running, restarted by an ACK that makes progress
        // (`on_ack`), never pushed back by later sends, so that a QP whose
        // packets trickle out but are never acknowledged (its peer stopped
        // draining) still times out. One live event, deadline moved lazily.
        if qp.rto.due().is_none() && self.p.rto != Time::NEVER {
            qp.rto_deadline = now + self.p.rto;
            let g = qp.rto.arm(qp.rto_deadline);
            self.q.schedule(qp.rto_deadline, Ev::Rto(q, g));
        }
        self.sync_sched(q);
        self.pkts.alloc(pkt)
    }

    /// A control packet (ACK/NAK/CNP) from QP `q` to its peer, sent after
    /// the NIC's receive-processing latency.
    fn send_control(&mut self, q: u32, kind: PktKind, aux: u64) {
        let payload = if kind == PktKind::Cnp { 16 } else { 0 };
        let ext = if kind == PktKind::Cnp {
            Ext::None
        } else {
            Ext::Aeth
        };
        let at = self.now() + self.p.nic_rx;
        let qp = &mut self.qps[q as usize];
        let flags = if matches!(kind, PktKind::Ack | PktKind::Nak)
            && std::mem::take(&mut qp.cnp_on_next_ack)
        {
            qp.counters.cnps_tx += 1;
            F_ECE
        } else {
            0
        };
        let pkt = self.pkts.alloc(Packet {
            kind,
            prio: self.p.ctrl_prio,
            flags,
            sport: qp.sport,
            dport: ROCEV2_UDP_PORT,
            src: qp.host,
            dst: qp.peer_host,
            dst_qp: qp.peer_qp,
            psn: 0,
            payload: 0,
            wire: self.p.wire_bytes(payload, ext),
            ingress: 0,
            aux,
            token: 0,
            rx_end: at,
        });
        self.q.schedule(at, Ev::Inject(pkt));
    }

    pub(crate) fn on_inject(&mut self, pkt: PktId) {
        let src = self.pkts.get(pkt).src as usize;
        let port = self.nics[src].port;
        if !self.ports[port as usize].up {
            if self.pkts.get(pkt).kind == PktKind::TcpData {
                self.tcp_left_host(pkt);
            }
            return self.lose(port, pkt);
        }
        self.enqueue(port, pkt);
    }

    /// A packet arrived at host `host`'s NIC (last bit in).
    pub(crate) fn nic_receive(&mut self, _host: u32, pkt: PktId) {
        if matches!(self.pkts.get(pkt).kind, PktKind::TcpData | PktKind::TcpAck) {
            return self.tcp_arrive(pkt);
        }
        let p = *self.pkts.get(pkt);
        self.pkts.free(pkt);
        match p.kind {
            PktKind::Ack | PktKind::Nak => {
                self.on_ack(p.dst_qp, p.aux as u32, p.kind == PktKind::Nak);
                if p.flags & F_ECE != 0 {
                    // A CNP carried on the ACK (`[cc] cnp_on_ack`).
                    self.on_cnp(p.dst_qp);
                }
            }
            PktKind::Cnp => self.on_cnp(p.dst_qp),
            PktKind::Pause => unreachable!("PFC frames are handled by the port"),
            PktKind::TcpData | PktKind::TcpAck => unreachable!("TCP is handled above"),
            _ => self.on_data(&p),
        }
    }

    fn on_data(&mut self, p: &Packet) {
        let now = self.now();
        let q = p.dst_qp;
        let ack_every = self.p.ack_every;
        if p.flags & F_CE != 0 {
            if let Some(np) = &self.p.cnp {
                // The limiter is the receiving port's or the QP's (both of
                // its streams); a marked packet inside the interval makes
                // no CNP, now or later.
                let owner = self.qp_owner(q);
                let last = if np.per_port {
                    let host = self.qps[q as usize].host;
                    &mut self.nics[host as usize].last_cnp
                } else {
                    &mut self.qps[owner as usize].last_cnp
                };
                if last.is_none_or(|t| now - t >= np.interval) {
                    *last = Some(now);
                    let qp = &mut self.qps[q as usize];
                    if np.on_ack {
                        // It leaves with the ACK or NAK this packet causes
                        // (or, with coalesced ACKs, the next one: marks in
                        // between make one CNP, counted when it leaves).
                        qp.cnp_on_next_ack = true;
                    } else {
                        qp.counters.cnps_tx += 1;
                        self.send_control(q, PktKind::Cnp, 0);
                    }
                }
            }
        }
        let qp = &mut self.qps[q as usize];
        let last = p.flags & F_LAST != 0;
        if p.psn == qp.rcv_nxt {
            qp.rcv_nxt += 1;
            qp.nak_sent = false;
            qp.counters.rx_payload_bytes += p.payload as u64;
            qp.rx_msg_bytes += p.payload as u64;
            qp.unacked += 1;
            let ack_now = last || qp.unacked >= ack_every;
            let rcv_nxt = qp.rcv_nxt;
            if last {
                let bytes = std::mem::take(&mut qp.rx_msg_bytes);
                let app = qp.app;
                let at = now + self.p.nic_rx;
                match p.kind {
                    PktKind::Write | PktKind::Send => {
                        let op = if p.kind == PktKind::Write {
                            OpKind::Write
                        } else {
                            OpKind::Send
                        };
                        self.deliver(
                            at,
                            app,
                            AppEvent::Received {
                                qp: super::QpId(q),
                                token: p.token,
                                bytes,
                                op,
                            },
                        );
                    }
                    PktKind::ReadResp if p.flags & F_SILENT != 0 => {}
                    PktKind::ReadResp => {
                        // Received by the requester's READ responder
                        // stream, completed on the QP that posted it.
                        let owner = self.qp_owner(q);
                        self.deliver(
                            at,
                            app,
                            AppEvent::Completed {
                                qp: super::QpId(owner),
                                token: p.token,
                                op: OpKind::Read,
                            },
                        );
                    }
                    PktKind::ReadReq => {
                        // The responder DMA-reads host memory and answers
                        // on its READ responder stream, beside its own
                        // posted work (`responder.rs`).
                        let ready = at + self.p.nic_tx;
                        let notify = p.flags & F_SILENT == 0;
                        let r = self.read_responder(q);
                        self.push_msg(r, OpKind::ReadResp, p.aux, p.token, ready, notify);
                    }
                    _ => {}
                }
            }
            if ack_now {
                self.qps[q as usize].unacked = 0;
                self.send_control(q, PktKind::Ack, rcv_nxt as u64);
            }
        } else if p.psn > qp.rcv_nxt {
            qp.counters.rx_discarded += 1;
            if !qp.nak_sent {
                qp.nak_sent = true;
                let e = qp.rcv_nxt as u64;
                self.send_control(q, PktKind::Nak, e);
            }
        } else {
            // A duplicate (a go-back-N resend of what already landed): the
            // responder acknowledges it again (IB spec C9-105), so that a
            // requester whose ACK was coalesced away or lost learns of the
            // progress instead of timing out until its retries run out.
            qp.counters.rx_discarded += 1;
            let e = qp.rcv_nxt as u64;
            self.send_control(q, PktKind::Ack, e);
        }
    }

    fn on_ack(&mut self, q: u32, expected: u32, nak: bool) {
        let now = self.now();
        let at = now + self.p.nic_rx;
        let mut qp = &mut self.qps[q as usize];
        if nak {
            qp.counters.naks_rx += 1;
        }
        if expected > qp.snd_una && expected <= qp.snd_max {
            qp.snd_una = expected;
            qp.retries = 0;
            let app = qp.app;
            while let Some(m) = qp.msgs.front() {
                if m.first_psn + m.npkts > expected {
                    break;
                }
                let m = qp.msgs.pop_front().unwrap();
                if self.audit.is_some() {
                    self.audit_msg(q, super::audit::MsgEvent::Done, 1);
                    qp = &mut self.qps[q as usize];
                }
                qp.cur = qp.cur.saturating_sub(1);
                qp.counters.messages_done += 1;
                qp.counters.acked_bytes += m.bytes;
                // A READ completes when its response has landed, not when
                // the request is acknowledged.
                // (A response's `notify` is its requester's.)
                if m.notify && !matches!(m.op, OpKind::Read | OpKind::ReadResp) {
                    let ev = AppEvent::Completed {
                        qp: super::QpId(q),
                        token: m.token,
                        op: m.op,
                    };
                    self.deliver(at, app, ev);
                }
                qp = &mut self.qps[q as usize];
            }
            if qp.snd_una >= qp.next_psn {
                qp.rto.cancel();
            } else if self.p.rto != Time::NEVER {
                qp.rto_deadline = now + self.p.rto;
            }
            if qp.snd_nxt < qp.snd_una {
                qp.snd_nxt = qp.snd_una;
                qp.seek();
            }
            self.sync_sched(q);
        }
        let qp = &mut self.qps[q as usize];
        if nak && expected < qp.snd_nxt && expected >= qp.snd_una {
            // A NAK-sequence-error retransmission counts against the retry
            // count like a timeout (IB spec 12.7.38; an ACK with progress,
            // as above, resets it).
            if qp.retries >= self.p.retry_cnt {
                return self.qp_fail(q);
            }
            qp.retries += 1;
            qp.snd_nxt = expected;
            qp.seek();
            self.sync_sched(q);
            self.qp_activate(q);
        }
    }

    fn on_cnp(&mut self, q: u32) {
        let now = self.now();
        let Some(conf) = self.p.cc.as_ref() else {
            return;
        };
        // A READ responder stream's CNPs slow its QP's limiter.
        let q = self.qp_owner(q);
        let qp = &mut self.qps[q as usize];
        qp.counters.cnps_rx += 1;
        let old = qp.rate();
        let Some(cc) = qp.cc.as_mut() else { return };
        let timers = cc.on_notification(now, conf);
        self.cc_reacted(q, old, timers);
    }

    /// A congestion-control timer of QP `q` fired (stale generations are
    /// ignored).
    pub(crate) fn on_cc_timer(&mut self, q: u32, slot: u8, g: u32) {
        let now = self.now();
        let Some(conf) = self.p.cc.as_ref() else {
            return;
        };
        let qp = &mut self.qps[q as usize];
        let old = qp.rate();
        let Some(cc) = qp.cc.as_mut() else {
            return;
        };
        if !cc.timers[slot as usize].fire(g) {
            return;
        }
        let timers = cc.on_timer(now, slot as usize, conf);
        self.cc_reacted(q, old, timers);
    }

    /// After a reaction point ran: arm the timers it asked for, then
    /// re-time the QP's pending departure if its rate moved from `old`.
    fn cc_reacted(&mut self, q: u32, old: crate::units::Rate, timers: Timers) {
        if let Some(cc) = self.qps[q as usize].cc.as_mut() {
            for (slot, at) in timers.requests() {
                let g = cc.timers[slot].arm(at);
                self.q.schedule(at, Ev::CcTimer(q, slot as u8, g));
            }
        }
        self.qp_rate_changed(q, old);
    }

    /// QP `q`'s rate limiter changed from `old` to the current rate. The
    /// limiter is a shaper whose credit accrues at its current rate: the
    /// part of the last packet's gap not yet elapsed is paid at the new
    /// rate. Without this a QP paced at the ConnectX minimum rate (one 4 KB
    /// packet per 33 ms at 1 Mb/s) sat out the whole gap although its rate
    /// had been raised 300 us later. Both streams of the QP (`responder.rs`)
    /// are re-timed. `[cc] retime_on_rate_change = false` keeps the pending
    /// departure, as ns-3 HPCC's Mellanox DCQCN does (it writes the rate
    /// alone; only HPCC's own `RdmaHw::ChangeRate` re-times).
    pub(crate) fn qp_rate_changed(&mut self, q: u32, old: crate::units::Rate) {
        let new = self.qps[q as usize].rate();
        // ns-3 HPCC's DCQCN writes the rate alone (`[cc]
        // retime_on_rate_change = false`): the next gap is at the new rate.
        if new == old || !self.p.cc.as_ref().is_none_or(|c| c.retimes_pending()) {
            return;
        }
        self.stream_retime(q, old, new);
        if let Some(s) = self.qp_sibling(q) {
            self.stream_retime(s, old, new);
        }
    }

    /// Re-time stream `q`'s pending departure from rate `old` to `new`.
    fn stream_retime(&mut self, q: u32, old: crate::units::Rate, new: crate::units::Rate) {
        let now = self.now();
        let qp = &mut self.qps[q as usize];
        if qp.next_tx <= now {
            return;
        }
        let left = (qp.next_tx - now).0 as u128;
        qp.next_tx = now + Time((left * old.0 as u128).div_ceil(new.0 as u128) as u64);
        self.sync_sched(q);
        let qp = &mut self.qps[q as usize];
        if self.qsched[q as usize].sched == Sched::Waiting {
            // A later departure is found when the old entry comes due; an
            // earlier one needs an entry of its own.
            let at = qp.eligible_at();
            if at < qp.wait_at {
                qp.wait_at = at;
                let h = qp.host as usize;
                self.nics[h].waiting.push(Reverse((at, q)));
                let port = self.nics[h].port;
                self.wake_port_at(port, at);
            }
        }
    }

    pub(crate) fn on_rto(&mut self, q: u32, g: u32) {
        let now = self.now();
        let qp = &mut self.qps[q as usize];
        if !qp.rto.fire(g) {
            return;
        }
        if qp.snd_una >= qp.next_psn {
            return;
        }
        if now < qp.rto_deadline {
            let at = qp.rto_deadline;
            let g = qp.rto.arm(at);
            self.q.schedule(at, Ev::Rto(q, g));
            return;
        }
        qp.counters.timeouts += 1;
        if qp.retries >= self.p.retry_cnt {
            return self.qp_fail(q);
        }
        qp.retries += 1;
        qp.snd_nxt = qp.snd_una;
        qp.seek();
        // The timer runs on for the outstanding packets whether or not the
        // resend can leave (a port paused for good by a peer that stopped
        // draining): each period without progress is one more retry, as
        // the HCA counts them, until the QP fails.
        qp.rto_deadline = now + self.p.rto;
        let g = qp.rto.arm(qp.rto_deadline);
        self.q.schedule(qp.rto_deadline, Ev::Rto(q, g));
        self.sync_sched(q);
        self.qp_activate(q);
    }

    /// QP `q` exhausted its retries: it goes to the error state, and its
    /// outstanding work requests complete in error (the oldest with
    /// `IBV_WC_RETRY_EXC_ERR`, the others flushed), signaled or not, as
    /// verbs do. READ responses it was sending are the peer's work and
    /// complete nothing here.
    fn qp_fail(&mut self, q: u32) {
        let now = self.now();
        let at = now + self.p.nic_rx;
        // One QP, one state: its READ responder stream fails with it.
        let owner = self.qp_owner(q);
        let retries = self.qps[q as usize].retries;
        let mut msgs = self.stream_error(owner);
        if let Some(s) = self.qp_sibling(owner) {
            msgs.extend(self.stream_error(s));
        }
        let qp = &self.qps[owner as usize];
        let (app, host, peer) = (qp.app, qp.host, qp.peer_host);
        let mut failed = 0u32;
        for m in msgs.iter().filter(|m| m.op != OpKind::ReadResp) {
            let status = if failed == 0 {
                super::verbs::WC_RETRY_EXC_ERR
            } else {
                super::verbs::WC_WR_FLUSH_ERR
            };
            failed += 1;
            let ev = AppEvent::Failed {
                qp: super::QpId(owner),
                token: m.token,
                op: m.op,
                status,
            };
            self.deliver(at, app, ev);
        }
        self.qp_failures.push(super::verbs::QpFailure {
            time_ps: now.0,
            qp: owner,
            host: self.topo.nodes[host as usize].name.clone(),
            peer: self.topo.nodes[peer as usize].name.clone(),
            retries,
            failed_wrs: failed,
            cause: self.retry_cause(host, peer),
        });
    }

    /// Why a QP's peer stopped answering, as far as the fabric can tell:
    /// a link that is down, links too slow for the ACK timeout, or else a
    /// stuck host.
    fn retry_cause(&self, host: u32, peer: u32) -> String {
        if let Some(own) = self.link_down_at(host) {
            return format!(
                "its own host's link {own} is down, so its NIC could not send (the timeouts \
                 ran on with nothing resent)"
            );
        }
        if let Some(theirs) = self.link_down_at(peer) {
            return format!("the peer's link {theirs} is down");
        }
        let down = self.links_down();
        if !down.is_empty() {
            return format!("a link failure that cut it off (down: {})", down.join(", "));
        }
        let frame = self.p.wire_bytes(self.p.mtu, Ext::None) as u64;
        let slowest = self.ports.iter().map(|p| p.rate).min_by_key(|r| r.as_bps());
        if let Some(rate) = slowest {
            let t = rate.tx_time(frame);
            // A packet and its ACK must cross within the timeout.
            if t + t >= self.p.rto {
                return format!(
                    "no link is down, but one {frame} B frame takes {:.3} us on the slowest link \
                     ({} b/s) and the ACK timeout is {:.3} us: raise nic.ack_timeout_exponent or \
                     speed up the links",
                    t.as_us_f64(),
                    rate.as_bps(),
                    self.p.rto.as_us_f64()
                );
            }
        }
        "a stuck host, or a link failure".into()
    }

    /// Stream `q` enters the error state: nothing more is sent, its timer
    /// stops; its outstanding messages are returned.
    fn stream_error(&mut self, q: u32) -> std::collections::VecDeque<Msg> {
        let qp = &mut self.qps[q as usize];
        qp.error = true;
        qp.rto.cancel();
        let msgs = std::mem::take(&mut qp.msgs);
        self.audit_msg(q, super::audit::MsgEvent::Failed, msgs.len() as u64);
        let qp = &mut self.qps[q as usize];
        qp.cur = 0;
        qp.snd_una = qp.next_psn;
        qp.snd_nxt = qp.next_psn;
        qp.snd_max = qp.snd_max.max(qp.next_psn);
        self.sync_sched(q);
        msgs
    }

    /// Append a message to QP `q`'s send stream.
    pub(crate) fn push_msg(
        &mut self,
        q: u32,
        op: OpKind,
        bytes: u64,
        token: u64,
        ready_at: Time,
        notify: bool,
    ) {
        let mtu = self.p.mtu as u64;
        let qp = &mut self.qps[q as usize];
        if qp.error {
            // A QP in the error state flushes new work at once.
            self.audit_msg(q, super::audit::MsgEvent::Posted, 1);
            self.audit_msg(q, super::audit::MsgEvent::Failed, 1);
            let qp = &mut self.qps[q as usize];
            if op != OpKind::ReadResp {
                let ev = AppEvent::Failed {
                    qp: super::QpId(q),
                    token,
                    op,
                    status: super::verbs::WC_WR_FLUSH_ERR,
                };
                let (app, at) = (qp.app, ready_at);
                self.deliver(at, app, ev);
            }
            return;
        }
        let npkts = match op {
            OpKind::Read => 1,
            _ => bytes.div_ceil(mtu).max(1) as u32,
        };
        qp.msgs.push_back(Msg {
            token,
            op,
            bytes,
            first_psn: qp.next_psn,
            npkts,
            ready_at,
            notify,
        });
        qp.next_psn += npkts;
        self.audit_msg(q, super::audit::MsgEvent::Posted, 1);
        self.sync_sched(q);
        self.qp_activate(q);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::FabricSpec;
    use crate::net::Net;
    use crate::units::{Rate, Time};

    /// A QP's departure pending 10 us from now, its rate raised from 1 to
    /// 100 Gb/s: re-timed, the rest of the gap is paid at the new rate
    /// (10 us x 1 / 100 = 100 ns); with `retime_on_rate_change = false`
    /// (ns-3 HPCC's DCQCN) it keeps its time.
    #[test]
    fn a_rate_change_re_times_the_pending_departure_unless_told_not_to() {
        for (retime, expect) in [(true, Time::ns(100)), (false, Time::us(10))] {
            let spec = FabricSpec::from_toml(&format!(
                "[topology]\nkind = \"leaf_spine\"\nleaves = 1\nhosts_per_leaf = 2\nspines = 1\n\
                 host_link_gbps = 100\nuplink_gbps = 100\n[cc]\nretime_on_rate_change = {retime}\n"
            ))
            .unwrap();
            let mut net = Net::new(&spec, 1).unwrap();
            let (a, _) = net.connect(0, 1, 0, 0, None).unwrap();
            assert_eq!(net.qps[a.0 as usize].rate(), Rate::gbps(100));
            net.qps[a.0 as usize].next_tx = Time::us(10);
            net.qp_rate_changed(a.0, Rate::gbps(1));
            assert_eq!(net.qps[a.0 as usize].next_tx, expect, "retime {retime}");
        }
    }
}
