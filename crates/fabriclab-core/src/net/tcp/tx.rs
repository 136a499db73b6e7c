//! The TCP sender: what to send (window, TCP small queues, Nagle), how
//! ACKs move the window (slow start, avoidance, NewReno fast retransmit and
//! recovery, DCTCP's ECN cut), and the retransmission timer.
//!
//! The retransmission timer keeps one live event per connection and moves
//! its deadline lazily, as the RDMA QPs do: restarting it later costs
//! nothing, and the event re-arms itself when it pops early.

use super::conn::CaState;
use crate::net::packet::{Packet, PktId, PktKind, F_ECT, F_RETX};
use crate::net::{AppEvent, Ev, Net};
use crate::units::Time;

impl Net {
    /// Send what the window, TCP small queues and Nagle allow (an
    /// offloaded connection: what the window allows, in whole FPDUs).
    pub(crate) fn tcp_try_send(&mut self, c: u32) {
        let iw = self.tcp.conns[c as usize].iw;
        let conf = super::stack(&self.tcp.conf, &self.tcp.nic, iw.is_some());
        let (mss, tsq, rwnd) = (conf.mss as u64, conf.tsq, conf.rcv_wnd);
        loop {
            let conn = &mut self.tcp.conns[c as usize];
            if conn.in_host >= tsq {
                conn.tsq_blocked = true;
                return;
            }
            let avail = conn.written - conn.snd_nxt;
            if avail == 0 {
                return;
            }
            let retx = conn.snd_nxt < conn.snd_max;
            let seq = conn.snd_nxt;
            let len = match iw {
                Some(q) => self.iwarp_fpdu_len(q, seq) as u64,
                None => avail.min(mss),
            };
            let conn = &mut self.tcp.conns[c as usize];
            if iw.is_none() && len < mss && !retx && conn.snd_nxt > conn.snd_una {
                return; // Nagle: hold a partial segment while data is in flight
            }
            let wnd = (conn.w.cwnd as u64 * mss).min(rwnd);
            if conn.snd_nxt + len - conn.snd_una > wnd {
                conn.cwnd_limited = true;
                return;
            }
            conn.snd_nxt += len;
            conn.snd_max = conn.snd_max.max(conn.snd_nxt);
            self.tcp_emit(c, seq, len as u32, retx);
        }
    }

    /// Build one data segment and hand it to the host port after the stack's
    /// transmit latency.
    fn tcp_emit(&mut self, c: u32, seq: u64, len: u32, retx: bool) {
        let now = self.now();
        let iw = self.tcp.conns[c as usize].iw;
        let conf = super::stack(&self.tcp.conf, &self.tcp.nic, iw.is_some());
        let tx_lat = conf.tx_lat;
        let wire = match iw {
            Some(q) => conf.wire_bytes(len + self.iwarp_marker_bytes(q, seq, len)),
            None => conf.wire_bytes(len),
        };
        if let Some(q) = iw {
            self.iwarp_sent(q, seq, retx);
        }
        let conn = &mut self.tcp.conns[c as usize];
        conn.c.tx_bytes += len as u64;
        conn.c.tx_segments += 1;
        let mut flags = 0;
        if conn.ecn {
            flags |= F_ECT;
        }
        if retx {
            flags |= F_RETX;
            conn.c.retx_segments += 1;
        }
        if conn.rto_deadline == Time::NEVER {
            let at = now + conn.rtt.rto();
            self.tcp_set_rto(c, at);
        }
        let conn = &mut self.tcp.conns[c as usize];
        if !retx {
            if let Some(i) = conn.lose.iter().position(|&s| s == seq) {
                conn.lose.swap_remove(i);
                return; // test hook: lost before reaching the wire
            }
        }
        conn.in_host += wire as u64;
        let pkt = self.pkts.alloc(Packet {
            kind: PktKind::TcpData,
            prio: conn.prio,
            flags,
            sport: conn.sport,
            dport: conn.dport,
            src: conn.src,
            dst: conn.dst,
            dst_qp: c,
            psn: 0,
            payload: len,
            wire,
            ingress: 0,
            aux: seq,
            // TSval: the sending time, + 1 ps so that 0 means "none".
            token: now.0 + 1,
            rx_end: now + tx_lat,
        });
        self.q.schedule(now + tx_lat, Ev::Inject(pkt));
    }

    /// Retransmit the first unacknowledged segment (fast retransmit and
    /// partial ACKs), whatever the window says.
    fn tcp_retransmit_head(&mut self, c: u32) {
        let mss = self.tcp.conf.mss as u64;
        let conn = &self.tcp.conns[c as usize];
        let (una, max) = (conn.snd_una, conn.snd_max);
        if una >= max {
            return;
        }
        let len = match conn.iw {
            Some(q) => self.iwarp_fpdu_len(q, una) as u64,
            None => (max - una).min(mss),
        };
        self.tcp_emit(c, una, len as u32, true);
    }

    /// Point the retransmission timer at `at`.
    fn tcp_set_rto(&mut self, c: u32, at: Time) {
        let conn = &mut self.tcp.conns[c as usize];
        conn.rto_deadline = at;
        if conn.rto_timer.due().is_none_or(|d| d > at) {
            let g = conn.rto_timer.arm(at);
            self.q.schedule(at, Ev::TcpRto(c, g));
        }
    }

    /// A data segment of connection `pkt.dst_qp` left its host's queues.
    pub(crate) fn tcp_left_host(&mut self, pkt: PktId) {
        let (c, wire) = {
            let p = self.pkts.get(pkt);
            (p.dst_qp, p.wire as u64)
        };
        let tsq = self.tcp.conf.tsq;
        let conn = &mut self.tcp.conns[c as usize];
        conn.in_host -= wire;
        if conn.tsq_blocked && conn.in_host <= tsq / 2 && !conn.push_pending {
            conn.tsq_blocked = false;
            conn.push_pending = true;
            self.q.schedule(self.now(), Ev::TcpPush(c));
        }
    }

    pub(crate) fn on_tcp_push(&mut self, c: u32) {
        self.tcp.conns[c as usize].push_pending = false;
        self.tcp_try_send(c);
    }

    /// An ACK for connection `c`: cumulative `ack`, echoed timestamp
    /// `tsecr` (ps), ECN-Echo `ece`.
    pub(crate) fn tcp_on_ack(&mut self, c: u32, ack: u64, tsecr: u64, ece: bool) {
        let now = self.now();
        let iw = self.tcp.conns[c as usize].iw;
        let mss = super::stack(&self.tcp.conf, &self.tcp.nic, iw.is_some()).mss as u64;
        let conn = &mut self.tcp.conns[c as usize];
        conn.c.acks_rx += 1;
        if ece {
            conn.c.ecn_echoes += 1;
        }
        if ack > conn.snd_max {
            return;
        }
        if ack > conn.snd_una {
            if let Some(q) = iw {
                self.iwarp_acked(q, ack);
            }
            let conn = &mut self.tcp.conns[c as usize];
            let acked = ack - conn.snd_una;
            let flight_pkts = (conn.snd_nxt.max(ack) - conn.snd_una).div_ceil(mss) as u32;
            let acked_pkts = (acked.div_ceil(mss) as u32).max(1);
            conn.snd_una = ack;
            conn.snd_nxt = conn.snd_nxt.max(ack);
            conn.c.acked_bytes += acked;
            conn.dupacks = 0;
            if tsecr > 0 && tsecr <= now.0 + 1 {
                conn.rtt.sample(Time(now.0 + 1 - tsecr));
            }
            let (una, nxt) = (conn.snd_una, conn.snd_nxt);
            conn.cc.on_ack_bytes(acked, ece, una, nxt);
            let mut grow = true;
            match conn.state {
                CaState::Recovery => {
                    grow = false;
                    if conn.recover.is_some_and(|r| ack >= r) {
                        conn.state = CaState::Open;
                        conn.w.cwnd = conn.w.ssthresh;
                        conn.w.cwnd_cnt = 0;
                    } else {
                        // Partial ACK: retransmit the next hole, deflate.
                        conn.w.cwnd = (conn.w.cwnd.saturating_sub(acked_pkts) + 1).max(1);
                        let first = !conn.partial_seen;
                        conn.partial_seen = true;
                        self.tcp_retransmit_head(c);
                        if !first {
                            self.tcp_after_ack(c, now);
                            return;
                        }
                    }
                }
                CaState::Loss => {
                    if conn.recover.is_some_and(|r| ack >= r) {
                        conn.state = CaState::Open;
                    }
                }
                CaState::Cwr => {
                    grow = false;
                    if ack > conn.high_seq {
                        conn.state = CaState::Open;
                    }
                }
                CaState::Open => {}
            }
            let conn = &mut self.tcp.conns[c as usize];
            if ece && conn.ecn && conn.state == CaState::Open {
                conn.w.ssthresh = conn.cc.ecn_ssthresh(conn.w.cwnd);
                conn.w.cwnd = conn.w.ssthresh;
                conn.w.cwnd_cnt = 0;
                conn.high_seq = conn.snd_nxt;
                conn.state = CaState::Cwr;
                conn.c.ecn_cuts += 1;
                grow = false;
            }
            let in_ss = conn.w.cwnd < conn.w.ssthresh;
            let limited = conn.cwnd_limited || (in_ss && conn.w.cwnd < 2 * flight_pkts);
            if grow && limited {
                let min_rtt = match conn.rtt.min_rtt {
                    Time::NEVER => Time::ZERO,
                    t => t,
                };
                conn.cc.on_ack(&mut conn.w, acked_pkts, now, min_rtt);
            }
            conn.cwnd_limited = false;
            // Restart the timer on new data (or stop it when all is ACKed).
            if conn.snd_una >= conn.snd_max {
                conn.rto_deadline = Time::NEVER;
                conn.rto_timer.cancel();
            } else {
                let at = now + conn.rtt.rto();
                self.tcp_set_rto(c, at);
            }
            self.tcp_after_ack(c, now);
        } else if ack == conn.snd_una && conn.snd_una < conn.snd_max {
            conn.c.dupacks_rx += 1;
            conn.dupacks += 1;
            if conn.state == CaState::Recovery {
                conn.w.cwnd += 1; // inflation: a segment has left the network
            } else if conn.dupacks == 3
                && conn.state != CaState::Loss
                && conn.recover.is_none_or(|r| ack > r)
            {
                conn.c.fast_retransmits += 1;
                conn.w.ssthresh = conn.cc.loss_ssthresh(conn.w.cwnd);
                conn.w.cwnd = conn.w.ssthresh + 3;
                conn.w.cwnd_cnt = 0;
                conn.recover = Some(conn.snd_max);
                conn.state = CaState::Recovery;
                conn.partial_seen = false;
                self.tcp_retransmit_head(c);
            }
            self.tcp_after_ack(c, now);
        }
    }

    /// After an ACK: publish the state, wake a blocked writer, send more.
    fn tcp_after_ack(&mut self, c: u32, now: Time) {
        let offload = self.tcp.conns[c as usize].iw.is_some();
        let conf = super::stack(&self.tcp.conf, &self.tcp.nic, offload);
        let (mss, snd_buf) = (conf.mss, conf.snd_buf);
        let conn = &mut self.tcp.conns[c as usize];
        conn.publish(now, mss);
        if conn.want_writable && conn.written - conn.snd_una < snd_buf {
            conn.want_writable = false;
            let app = conn.app;
            self.deliver(
                now,
                app,
                AppEvent::TcpWritable {
                    conn: super::TcpId(c),
                },
            );
        }
        self.tcp_try_send(c);
    }

    /// The retransmission timer of connection `c` popped.
    pub(crate) fn on_tcp_rto(&mut self, c: u32, g: u32) {
        let now = self.now();
        let offload = self.tcp.conns[c as usize].iw.is_some();
        let mss = super::stack(&self.tcp.conf, &self.tcp.nic, offload).mss;
        let conn = &mut self.tcp.conns[c as usize];
        if !conn.rto_timer.fire(g) || conn.rto_deadline == Time::NEVER {
            return;
        }
        if now < conn.rto_deadline {
            let at = conn.rto_deadline;
            let g = conn.rto_timer.arm(at);
            self.q.schedule(at, Ev::TcpRto(c, g));
            return;
        }
        conn.rto_deadline = Time::NEVER;
        if conn.snd_una >= conn.snd_max {
            return;
        }
        conn.c.timeouts += 1;
        if let Some(q) = conn.iw {
            self.qps[q as usize].counters.timeouts += 1;
        }
        let conn = &mut self.tcp.conns[c as usize];
        if conn.state != CaState::Loss {
            conn.w.ssthresh = conn.cc.loss_ssthresh(conn.w.cwnd);
        }
        conn.cc.on_timeout();
        conn.w.cwnd = 1;
        conn.w.cwnd_cnt = 0;
        conn.recover = Some(conn.snd_max);
        conn.state = CaState::Loss;
        conn.dupacks = 0;
        conn.snd_nxt = conn.snd_una;
        conn.rtt.backoff += 1;
        conn.publish(now, mss);
        self.tcp_try_send(c);
    }
}
