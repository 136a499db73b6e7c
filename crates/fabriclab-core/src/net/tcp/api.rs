//! What workloads see of TCP: open a connection, write bytes, be told when
//! the send buffer has room again (and, if asked, when data reaches the
//! receiving application), and read the connection's counters.

use super::cc::Cc;
use super::conn::{Conn, Rtt};
use super::{TcpCounters, SERVER_PORT};
use crate::config::TcpCc;
use crate::error::{arg_err, Result};
use crate::net::Net;
use crate::units::Time;
use serde::Serialize;

/// Handle of a TCP connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TcpId(pub u32);

/// A connection's identity, settings and counters, for reports.
#[derive(Clone, Debug, Serialize)]
pub struct TcpReport {
    /// Connection index.
    pub conn: u32,
    /// Sending host.
    pub client: String,
    /// Receiving host.
    pub server: String,
    /// Client's (ephemeral) port.
    pub sport: u16,
    /// Server's port.
    pub dport: u16,
    /// Congestion control.
    pub cc: &'static str,
    /// DCTCP's alpha now (DCTCP connections only).
    pub dctcp_alpha: Option<f64>,
    /// The counters.
    #[serde(flatten)]
    pub counters: TcpCounters,
}

impl Net {
    /// Ok when the fabric carries TCP (Ethernet); an error naming what to
    /// change on an InfiniBand fabric (IPoIB is not modelled).
    pub fn tcp_supported(&self) -> Result<()> {
        if self.p.ib {
            return arg_err(
                "TCP runs over Ethernet here; this fabric is InfiniBand and IPoIB is not \
                 modelled: run TCP workloads (iperf) on a RoCE fabric",
            );
        }
        Ok(())
    }

    /// Open a TCP connection from `client` to `server` (host indexes),
    /// owned by workload `app`, with congestion control `cc` (default: the
    /// fabric's `[tcp] congestion`). The connection is established at once
    /// (no handshake); its client port is a pseudo-random ephemeral port.
    pub fn tcp_connect(
        &mut self,
        client: u32,
        server: u32,
        app: u32,
        cc: Option<TcpCc>,
    ) -> Result<TcpId> {
        let n = self.n_hosts();
        if client >= n || server >= n {
            return arg_err(format!(
                "host index out of range (the fabric has {n} hosts)"
            ));
        }
        self.tcp_supported()?;
        if client == server {
            return arg_err(format!(
                "cannot open a TCP connection from host {} to itself over the network; \
                 pick two different hosts",
                self.topo.nodes[client as usize].name
            ));
        }
        self.check_reachable(client, server)?;
        let conf = &self.tcp.conf;
        let cc = Cc::new(cc.unwrap_or(conf.default_cc));
        let rtt = Rtt::new(conf.rto_min, conf.rto_initial, conf.rto_max);
        let sport = 32768 + (self.tcp.rng.next_u64() % 28232) as u16;
        let id = self.tcp.conns.len() as u32;
        let mut conn = Conn::new(
            client,
            server,
            sport,
            SERVER_PORT,
            app,
            cc,
            conf.init_cwnd,
            rtt,
        );
        conn.prio = conf.prio;
        conn.publish(self.now(), conf.mss);
        self.tcp.conns.push(conn);
        if self.flow.is_some() {
            self.flow_tcp_connect(id);
        }
        Ok(TcpId(id))
    }

    /// Open a connection offloaded to the RNIC of host `src` towards `dst`
    /// (iWARP fabrics only), carrying the send stream of QP `qp` on
    /// priority `prio`, with ports (`sport`, `dport`).
    pub(crate) fn tcp_open_offload(
        &mut self,
        (src, dst): (u32, u32),
        (sport, dport): (u16, u16),
        prio: u8,
        qp: u32,
    ) -> u32 {
        let conf = self
            .tcp
            .nic
            .as_ref()
            .expect("offloaded TCP exists on iWARP fabrics");
        let cc = Cc::new(conf.default_cc);
        let rtt = Rtt::new(conf.rto_min, conf.rto_initial, conf.rto_max);
        let mut conn = Conn::new(src, dst, sport, dport, u32::MAX, cc, conf.init_cwnd, rtt);
        conn.prio = prio;
        conn.iw = Some(qp);
        conn.ecn |= conf.ecn;
        conn.publish(self.now(), conf.mss);
        self.tcp.conns.push(conn);
        self.tcp.conns.len() as u32 - 1
    }

    /// The application writes `bytes` more into the connection's stream.
    /// Writing is not limited here: a well-behaved writer checks
    /// [`Net::tcp_send_space`] and waits for `AppEvent::TcpWritable`.
    pub fn tcp_write(&mut self, conn: TcpId, bytes: u64) {
        let c = &mut self.tcp.conns[conn.0 as usize];
        c.written += bytes;
        c.c.app_written_bytes += bytes;
        if self.flow.is_some() {
            self.flow_tcp_write(conn.0, bytes);
        } else {
            self.tcp_try_send(conn.0);
        }
    }

    /// Free room in the send buffer: `[tcp] snd_buf_bytes` minus what is
    /// written and not yet acknowledged.
    pub fn tcp_send_space(&self, conn: TcpId) -> u64 {
        let c = &self.tcp.conns[conn.0 as usize];
        self.tcp.conf.snd_buf.saturating_sub(c.written - c.snd_una)
    }

    /// Deliver `AppEvent::TcpWritable` once, when an ACK leaves room in the
    /// send buffer.
    pub fn tcp_notify_writable(&mut self, conn: TcpId) {
        self.tcp.conns[conn.0 as usize].want_writable = true;
    }

    /// Deliver `AppEvent::TcpDelivered` for every advance of the in-order
    /// data at the receiver (off by default: one event per segment).
    pub fn tcp_notify_delivery(&mut self, conn: TcpId, on: bool) {
        self.tcp.conns[conn.0 as usize].notify_delivery = on;
    }

    /// Record (time, cwnd in segments) at every change of the window.
    pub fn tcp_trace_cwnd(&mut self, conn: TcpId) {
        let c = &mut self.tcp.conns[conn.0 as usize];
        c.cwnd_trace = Some(vec![(self.q.now(), c.w.cwnd)]);
    }

    /// The window trace (empty unless [`Net::tcp_trace_cwnd`] was called).
    pub fn tcp_cwnd_trace(&self, conn: TcpId) -> &[(Time, u32)] {
        self.tcp.conns[conn.0 as usize]
            .cwnd_trace
            .as_deref()
            .unwrap_or(&[])
    }

    /// Counters and current state of a connection.
    pub fn tcp_counters(&self, conn: TcpId) -> &TcpCounters {
        &self.tcp.conns[conn.0 as usize].c
    }

    /// (client port, server port) of a connection.
    pub fn tcp_ports(&self, conn: TcpId) -> (u16, u16) {
        let c = &self.tcp.conns[conn.0 as usize];
        (c.sport, c.dport)
    }

    /// Congestion control of a connection.
    pub fn tcp_cc(&self, conn: TcpId) -> TcpCc {
        self.tcp.conns[conn.0 as usize].cc.kind()
    }

    /// Maximum segment size of the hosts' TCP, bytes.
    pub fn tcp_mss(&self) -> u32 {
        self.tcp.conf.mss
    }

    /// Host interface MTU, bytes.
    pub fn tcp_host_mtu(&self) -> u32 {
        self.tcp.conf.host_mtu
    }

    /// The receive window every receiver advertises, bytes.
    pub fn tcp_rcv_wnd(&self) -> u64 {
        self.tcp.conf.rcv_wnd
    }

    /// Test hook: the first transmission of the segment starting at byte
    /// `seq` of the connection's stream is lost (it never reaches the wire).
    pub fn tcp_lose_segment(&mut self, conn: TcpId, seq: u64) {
        self.tcp.conns[conn.0 as usize].lose.push(seq);
    }

    /// Every TCP connection with its counters.
    pub fn tcp_reports(&self) -> Vec<TcpReport> {
        let name = |h: u32| self.topo.nodes[h as usize].name.clone();
        self.tcp
            .conns
            .iter()
            .enumerate()
            .map(|(i, c)| TcpReport {
                conn: i as u32,
                client: name(c.src),
                server: name(c.dst),
                sport: c.sport,
                dport: c.dport,
                cc: c.cc.kind().name(),
                dctcp_alpha: c.cc.alpha(),
                counters: c.c.clone(),
            })
            .collect()
    }

    /// Bytes queued now at the egress of `node`'s port facing `peer` (all
    /// priorities), by names; None if there is no such port.
    pub fn queue_bytes(&self, node: &str, peer: &str) -> Option<u64> {
        let ni = self.topo.nodes.iter().position(|n| n.name == node)?;
        (self.node_ports[ni]..self.node_ports[ni + 1])
            .map(|pi| &self.ports[pi as usize])
            .find(|p| self.topo.nodes[p.peer_node as usize].name == peer)
            .map(|p| p.total_qbytes)
    }
}
