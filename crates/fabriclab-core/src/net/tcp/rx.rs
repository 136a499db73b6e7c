//! The TCP receiver: in-order delivery to the application, out-of-order
//! data held until the hole is filled, and when to ACK.
//!
//! ACK policy (RFC 5681 / 1122, Linux-like): an ACK as soon as more than one
//! full segment is unacknowledged, otherwise after the delayed-ACK timer;
//! at once for out-of-order or duplicate data (the duplicate ACKs that drive
//! fast retransmit) and for data that fills a hole. The timestamp echoed is
//! that of the earliest segment the ACK covers (RFC 7323's TS.Recent rule).
//! DCTCP receivers ACK at once when the CE state of arriving data changes,
//! so that the ECN-Echo of every ACK describes exactly the data it covers
//! (RFC 8257 section 3.2).

use crate::net::packet::{Packet, PktId, PktKind, F_CE, F_ECE};
use crate::net::{AppEvent, Ev, Net};

impl Net {
    /// A TCP packet reached its host's NIC: TCP acts on it after the
    /// stack's receive latency.
    /// An offloaded (iWARP) connection's RNIC acts on it at once.
    pub(crate) fn tcp_arrive(&mut self, pkt: PktId) {
        let c = self.pkts.get(pkt).dst_qp;
        if self.tcp.conns[c as usize].iw.is_some() {
            return self.on_tcp_rx(pkt);
        }
        let at = self.now() + self.tcp.conf.rx_lat;
        self.q.schedule(at, Ev::TcpRx(pkt));
    }

    pub(crate) fn on_tcp_rx(&mut self, pkt: PktId) {
        let p = *self.pkts.get(pkt);
        self.pkts.free(pkt);
        match p.kind {
            PktKind::TcpData => self.tcp_on_segment(&p),
            PktKind::TcpAck => self.tcp_on_ack(p.dst_qp, p.aux, p.token, p.flags & F_ECE != 0),
            _ => debug_assert!(false, "not a TCP packet"),
        }
    }

    fn tcp_on_segment(&mut self, p: &Packet) {
        let now = self.now();
        let c = p.dst_qp;
        let iw = self.tcp.conns[c as usize].iw;
        let conf = super::stack(&self.tcp.conf, &self.tcp.nic, iw.is_some());
        let (mss, delack_on, delack) = (conf.mss as u64, conf.delack_on, conf.delack);
        let (seq, end) = (p.aux, p.aux + p.payload as u64);
        let ce = p.flags & F_CE != 0;
        let conn = &mut self.tcp.conns[c as usize];
        conn.c.rx_segments += 1;
        if ce {
            conn.c.rx_ce_segments += 1;
        }
        if conn.ecn && ce != conn.ce_state {
            // ACK what came before with the old CE state, then switch.
            if conn.rcv_nxt > conn.last_ack_sent {
                self.tcp_send_ack(c);
            }
            self.tcp.conns[c as usize].ce_state = ce;
        }
        let conn = &mut self.tcp.conns[c as usize];
        if seq <= conn.last_ack_sent && p.token >= conn.ts_recent {
            conn.ts_recent = p.token;
        }
        if end <= conn.rcv_nxt {
            conn.c.rx_duplicates += 1;
            self.tcp_send_ack(c);
            return;
        }
        if seq > conn.rcv_nxt {
            conn.c.rx_out_of_order += 1;
            conn.hold(seq, end);
            self.tcp_send_ack(c);
            return;
        }
        let from = conn.rcv_nxt;
        let filled_hole = !conn.ooo.is_empty();
        conn.rcv_nxt = end;
        conn.pull_held();
        let bytes = conn.rcv_nxt - from;
        conn.c.rx_bytes += bytes;
        if let Some(q) = iw {
            let rcv_nxt = conn.rcv_nxt;
            self.iwarp_delivered(q, rcv_nxt);
        }
        let conn = &mut self.tcp.conns[c as usize];
        if conn.notify_delivery {
            let app = conn.app;
            let ev = AppEvent::TcpDelivered {
                conn: super::TcpId(c),
                offset: from,
                bytes,
            };
            self.deliver(now, app, ev);
        }
        let conn = &mut self.tcp.conns[c as usize];
        if !delack_on || filled_hole || conn.rcv_nxt - conn.last_ack_sent > mss {
            self.tcp_send_ack(c);
        } else if conn.delack.due().is_none() {
            let at = now + delack;
            let g = conn.delack.arm(at);
            self.q.schedule(at, Ev::TcpDelAck(c, g));
        }
    }

    /// Send a cumulative ACK for connection `c` now.
    fn tcp_send_ack(&mut self, c: u32) {
        let now = self.now();
        let offload = self.tcp.conns[c as usize].iw.is_some();
        let conf = super::stack(&self.tcp.conf, &self.tcp.nic, offload);
        let (at, wire) = (now + conf.tx_lat, conf.wire_bytes(0));
        let conn = &mut self.tcp.conns[c as usize];
        let prio = conn.prio;
        conn.last_ack_sent = conn.rcv_nxt;
        conn.delack.cancel();
        conn.c.acks_tx += 1;
        let flags = if conn.ecn && conn.ce_state { F_ECE } else { 0 };
        let pkt = self.pkts.alloc(Packet {
            kind: PktKind::TcpAck,
            prio,
            flags,
            sport: conn.dport,
            dport: conn.sport,
            src: conn.dst,
            dst: conn.src,
            dst_qp: c,
            psn: 0,
            payload: 0,
            wire,
            ingress: 0,
            aux: conn.rcv_nxt,
            token: conn.ts_recent,
            rx_end: at,
        });
        self.q.schedule(at, Ev::Inject(pkt));
    }

    pub(crate) fn on_tcp_delack(&mut self, c: u32, g: u32) {
        let conn = &mut self.tcp.conns[c as usize];
        if conn.delack.fire(g) && conn.rcv_nxt > conn.last_ack_sent {
            self.tcp_send_ack(c);
        }
    }
}
