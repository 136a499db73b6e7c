//! The RNIC's RDMA side of iWARP: posting messages into a QP's TCP stream,
//! cutting the stream into FPDUs for TCP, and turning TCP's acknowledged
//! and delivered offsets into completions, arrivals and READ responses.

use super::{IwMsg, IwQp, RxMsg, IWARP_PORT};
use crate::net::verbs::{AppEvent, OpKind, QpId};
use crate::net::{Ev, Net};
use crate::units::Time;

impl Net {
    fn iw(&self) -> &super::Iwarp {
        self.iwarp
            .as_deref()
            .expect("iWARP state exists on iWARP fabrics")
    }

    fn iw_mut(&mut self) -> &mut super::Iwarp {
        self.iwarp
            .as_deref_mut()
            .expect("iWARP state exists on iWARP fabrics")
    }

    /// Give the new QP pair (`qa` on host `a`, `qb` on host `b`, `qa`'s
    /// ephemeral port `sport`) its two offloaded TCP connections.
    pub(crate) fn iwarp_connect(&mut self, qa: u32, qb: u32, sport: u16, prio: u8) {
        let (a, b) = (self.qps[qa as usize].host, self.qps[qb as usize].host);
        let ca = self.tcp_open_offload((a, b), (sport, IWARP_PORT), prio, qa);
        let cb = self.tcp_open_offload((b, a), (IWARP_PORT, sport), prio, qb);
        let iw = self.iw_mut();
        debug_assert_eq!(iw.qps.len(), qa as usize);
        for conn in [ca, cb] {
            iw.qps.push(IwQp {
                tx_conn: conn,
                ..Default::default()
            });
        }
    }

    /// Append a message to QP `q`'s stream; the RNIC hands it to TCP at
    /// `ready_at`.
    pub(crate) fn iwarp_post(
        &mut self,
        q: u32,
        op: OpKind,
        bytes: u64,
        token: u64,
        ready_at: Time,
        notify: bool,
    ) {
        let peer = self.qps[q as usize].peer_qp;
        let iw = self.iw_mut();
        let len = iw.stream_bytes(op, bytes);
        let qp = &mut iw.qps[q as usize];
        let start = qp.stream_end;
        qp.stream_end += len;
        let end = qp.stream_end;
        qp.msgs.push_back(IwMsg {
            start,
            end,
            op,
            bytes,
            token,
            ready_at,
            notify,
        });
        // What the DDP headers tell the receiver (message ends, kinds).
        iw.qps[peer as usize].rx.push_back(RxMsg {
            end,
            op,
            bytes,
            token,
            notify,
        });
        self.q
            .schedule(ready_at.max(self.now()), Ev::IwarpRelease(q));
    }

    /// Hand the messages of QP `q` that are ready, in stream order, to TCP.
    pub(crate) fn on_iwarp_release(&mut self, q: u32) {
        let now = self.now();
        let qp = &mut self.iw_mut().qps[q as usize];
        let mut written = None;
        while let Some(m) = qp.msgs.get(qp.released) {
            if m.ready_at > now {
                break;
            }
            written = Some(m.end);
            qp.released += 1;
        }
        let conn = qp.tx_conn;
        if let Some(end) = written {
            let c = &mut self.tcp.conns[conn as usize];
            c.c.app_written_bytes += end - c.written;
            c.written = end;
            self.tcp_try_send(conn);
        }
    }

    /// Index in `qp.msgs` of the message holding stream byte `seq`.
    fn iwarp_msg_at(qp: &IwQp, seq: u64) -> usize {
        let i = qp.msgs.partition_point(|m| m.end <= seq);
        debug_assert!(i < qp.msgs.len() && qp.msgs[i].start <= seq);
        i
    }

    /// Length of the FPDU (the TCP segment) that starts at byte `seq` of
    /// QP `q`'s stream.
    pub(crate) fn iwarp_fpdu_len(&self, q: u32, seq: u64) -> u32 {
        let iw = self.iw();
        let qp = &iw.qps[q as usize];
        let m = &qp.msgs[Self::iwarp_msg_at(qp, seq)];
        iw.fpdu_at(m, seq - m.start).0
    }

    /// MPA marker bytes in the segment [seq, seq + len) of QP `q`'s stream.
    #[inline]
    pub(crate) fn iwarp_marker_bytes(&self, _q: u32, seq: u64, len: u32) -> u32 {
        if self.iw().markers {
            crate::wire::MPA_MARKER * crate::wire::mpa_markers(seq, len)
        } else {
            0
        }
    }

    /// QP counters of a segment of QP `q`'s stream leaving the RNIC.
    pub(crate) fn iwarp_sent(&mut self, q: u32, seq: u64, retx: bool) {
        let iw = self.iw();
        let qp = &iw.qps[q as usize];
        let m = &qp.msgs[Self::iwarp_msg_at(qp, seq)];
        let payload = iw.fpdu_at(m, seq - m.start).1;
        let c = &mut self.qps[q as usize].counters;
        c.tx_packets += 1;
        c.tx_payload_bytes += payload;
        if retx {
            c.retx_packets += 1;
        }
    }

    /// TCP acknowledged QP `q`'s stream up to `ack`: complete the messages
    /// that end there or before.
    pub(crate) fn iwarp_acked(&mut self, q: u32, ack: u64) {
        let at = self.now() + self.p.nic_rx;
        let app = self.qps[q as usize].app;
        loop {
            let qp = &mut self.iw_mut().qps[q as usize];
            let Some(m) = qp.msgs.front() else { break };
            if m.end > ack {
                break;
            }
            let m = qp.msgs.pop_front().expect("front exists");
            qp.released -= 1;
            let c = &mut self.qps[q as usize].counters;
            c.messages_done += 1;
            c.acked_bytes += m.bytes;
            // A READ completes when its response has landed (a response's
            // `notify` is its requester's).
            if m.notify && !matches!(m.op, OpKind::Read | OpKind::ReadResp) {
                let ev = AppEvent::Completed {
                    qp: QpId(q),
                    token: m.token,
                    op: m.op,
                };
                self.deliver(at, app, ev);
            }
        }
    }

    /// TCP delivered QP `q`'s stream in order up to `rcv_nxt` at the peer:
    /// the messages that end there have landed.
    pub(crate) fn iwarp_delivered(&mut self, q: u32, rcv_nxt: u64) {
        let r = self.qps[q as usize].peer_qp;
        let at = self.now() + self.p.nic_rx;
        let app = self.qps[r as usize].app;
        loop {
            let rx = &mut self.iw_mut().qps[r as usize].rx;
            let Some(m) = rx.front() else { break };
            if m.end > rcv_nxt {
                break;
            }
            let m = rx.pop_front().expect("front exists");
            let qp = QpId(r);
            match m.op {
                OpKind::Write | OpKind::Send => {
                    self.qps[r as usize].counters.rx_payload_bytes += m.bytes;
                    let ev = AppEvent::Received {
                        qp,
                        token: m.token,
                        bytes: m.bytes,
                        op: m.op,
                    };
                    self.deliver(at, app, ev);
                }
                OpKind::ReadResp => {
                    self.qps[r as usize].counters.rx_payload_bytes += m.bytes;
                    if !m.notify {
                        continue; // an unsignaled READ
                    }
                    let ev = AppEvent::Completed {
                        qp,
                        token: m.token,
                        op: OpKind::Read,
                    };
                    self.deliver(at, app, ev);
                }
                OpKind::Read => {
                    // The responder's RNIC reads host memory and answers on
                    // its own stream.
                    let ready = at + self.p.nic_tx;
                    self.iwarp_post(r, OpKind::ReadResp, m.bytes, m.token, ready, m.notify);
                }
            }
        }
    }
}
