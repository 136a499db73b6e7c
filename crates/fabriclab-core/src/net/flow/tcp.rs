//! TCP on the flow backend: a connection is a fluid flow at its max-min
//! fair share, what the issue calls "a TCP flow gets its fair share".
//!
//! What it keeps of TCP: the connection's 5-tuple (so ECMP hashes it as the
//! packet engine does), its segments' wire bytes (`[tcp]` MSS, headers and
//! framing, `wire::tcp_wire_bytes`), the send buffer (`[tcp] snd_buf_bytes`:
//! what is written and not yet acknowledged; `AppEvent::TcpWritable` when
//! an ACK makes room), in-order delivery to the receiving application
//! (`AppEvent::TcpDelivered` when asked), and the counters iperf reads. Each
//! write is a message of the connection's client QP, so back-to-back writes
//! are one continuous flow (`mod.rs`); its bytes reach the server when its
//! last segment has crossed the path, and are acknowledged one ACK time
//! later (an ACK per two segments, no bandwidth).
//!
//! What it leaves out: slow start, loss and recovery, the congestion
//! window's sawtooth and DCTCP's ECN reaction (the fair share at once:
//! no retransmissions, `cwnd_bytes` is the share times the RTT), the
//! receive window, and priorities (a lossy TCP class shares links max-min
//! with the RDMA traffic instead of yielding to it).

use super::{Later, MsgKind};
use crate::net::tcp::TcpId;
use crate::net::verbs::AppEvent;
use crate::net::Net;
use crate::units::Time;
use crate::wire::tcp_wire_bytes;

impl Net {
    /// Give TCP connection `conn` (just opened) its QPs: client to server
    /// with the connection's ports, owned by its application.
    pub(crate) fn flow_tcp_connect(&mut self, conn: u32) {
        let c = &self.tcp.conns[conn as usize];
        let (src, dst, sport, dport, app, prio) = (c.src, c.dst, c.sport, c.dport, c.app, c.prio);
        let (qa, qb) = self.flow_connect((src, app, sport), (dst, app, dport), prio);
        let fnet = self.flow.as_mut().expect("flow backend");
        for (q, dp) in [(qa, dport), (qb, sport)] {
            let qp = &mut fnet.qps[q.0 as usize];
            qp.dport = dp;
            qp.tcp = conn;
        }
        if fnet.tcp_qps.len() <= conn as usize {
            fnet.tcp_qps.resize(conn as usize + 1, u32::MAX);
        }
        fnet.tcp_qps[conn as usize] = qa.0;
    }

    /// The application wrote `bytes` into connection `conn`.
    pub(crate) fn flow_tcp_write(&mut self, conn: u32, bytes: u64) {
        let q = self.flow.as_ref().expect("flow backend").tcp_qps[conn as usize];
        self.flow_post_kind(q, MsgKind::Tcp, bytes, conn as u64, false);
    }

    /// Wire bytes of `bytes` of a TCP stream: (total, last segment,
    /// segments), MSS-sized segments with their headers and framing.
    pub(super) fn flow_tcp_wire(&self, bytes: u64) -> (u64, u32, u32) {
        let mss = self.tcp.conf.mss as u64;
        let n = bytes.div_ceil(mss).max(1);
        let last_p = (bytes - (n - 1) * mss) as u32;
        let full = tcp_wire_bytes(mss as u32, self.p.vlan) as u64;
        let last = tcp_wire_bytes(last_p, self.p.vlan);
        ((n - 1) * full + last as u64, last, n as u32)
    }

    /// A write of connection `conn` (client QP `q`) has left: its last
    /// segment started at `start_last` and reaches the server at `arrive`.
    /// Count it, and schedule its delivery and its ACK.
    pub(super) fn flow_tcp_sent(
        &mut self,
        q: u32,
        conn: u32,
        (bytes, segs): (u64, u32),
        (start_last, arrive): (Time, Time),
        rate_bps: f64,
    ) {
        let c = &mut self.tcp.conns[conn as usize].c;
        c.tx_bytes += bytes;
        c.tx_segments += segs as u64;
        let rx = arrive + self.p.nic_rx;
        self.flow_later(rx, Later::TcpRx { conn, bytes, segs });
        let ack = tcp_wire_bytes(0, self.p.vlan);
        let acked = self.flow_ack_arrival(q, rx, ack) + self.p.nic_rx;
        let rtt = acked - start_last;
        let ack = Later::TcpAck {
            conn,
            bytes,
            segs,
            rtt,
            rate_bps,
        };
        self.flow_later(acked, ack);
    }

    /// TCP bytes reach the server's application in order.
    pub(super) fn flow_tcp_rx(&mut self, conn: u32, bytes: u64, segs: u32) {
        let now = self.now();
        let c = &mut self.tcp.conns[conn as usize];
        let from = c.rcv_nxt;
        c.rcv_nxt += bytes;
        c.last_ack_sent = c.rcv_nxt;
        c.c.rx_bytes += bytes;
        c.c.rx_segments += segs as u64;
        c.c.acks_tx += segs.div_ceil(2) as u64;
        if c.notify_delivery {
            let (app, ev) = (
                c.app,
                AppEvent::TcpDelivered {
                    conn: TcpId(conn),
                    offset: from,
                    bytes,
                },
            );
            self.deliver(now, app, ev);
        }
    }

    /// The ACK of `bytes` reaches the client: the send buffer has room;
    /// the round trip and the window (the fair share over it) are updated.
    pub(super) fn flow_tcp_ack(
        &mut self,
        conn: u32,
        (bytes, segs): (u64, u32),
        rtt: Time,
        rate_bps: f64,
    ) {
        let now = self.now();
        let mss = self.tcp.conf.mss as u64;
        let snd_buf = self.tcp.conf.snd_buf;
        let c = &mut self.tcp.conns[conn as usize];
        c.snd_una += bytes;
        c.snd_nxt = c.snd_una.max(c.snd_nxt);
        c.snd_max = c.snd_una.max(c.snd_max);
        let k = &mut c.c;
        k.acked_bytes += bytes;
        k.acks_rx += segs.div_ceil(2) as u64;
        let rtt_ns = rtt.as_ps() / 1000;
        k.srtt_ns = rtt_ns;
        k.min_rtt_ns = if k.min_rtt_ns == 0 {
            rtt_ns
        } else {
            k.min_rtt_ns.min(rtt_ns)
        };
        k.cwnd_bytes = ((rate_bps * rtt.as_secs_f64() / 8.0) as u64).max(mss);
        k.max_cwnd_bytes = k.max_cwnd_bytes.max(k.cwnd_bytes);
        let segs_now = (k.cwnd_bytes / mss).min(u32::MAX as u64) as u32;
        if c.w.cwnd != segs_now {
            c.w.cwnd = segs_now;
            if let Some(t) = c.cwnd_trace.as_mut() {
                t.push((now, segs_now));
            }
        }
        if c.want_writable && snd_buf > c.written - c.snd_una {
            c.want_writable = false;
            let app = c.app;
            self.deliver(now, app, AppEvent::TcpWritable { conn: TcpId(conn) });
        }
    }
}
