//! The narrow interface between workloads and the network: connect QPs,
//! post work requests, and receive completions as [`AppEvent`]s.
//!
//! Workloads never touch a queue or a packet. They post WRITE, READ or SEND
//! work requests with a token of their choice and are told, through the
//! simulation's event queue, when a request completes at the requester
//! (`Completed`) and when data has landed at the responder (`Received`, used
//! by ping-pong latency tests that poll memory or post receives).

use super::qp::{Qp, QpSched};
use super::verbs::{AppEvent, OpKind, QpFailure, QpId};
use super::{Ev, Net, PortCounters, QpCounters};
use crate::error::{arg_err, Result};
use crate::rng::{splitmix64, Rng};
use crate::units::{Rate, Time};

/// Pending workload events, delivered through the event queue.
#[derive(Default)]
pub(crate) struct Mailbox {
    slots: Vec<(u32, AppEvent)>,
    free: Vec<u32>,
}

impl Mailbox {
    pub fn take(&mut self, slot: u32) -> (u32, AppEvent) {
        self.free.push(slot);
        self.slots[slot as usize]
    }
}

/// A port's identity and counters, for reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortReport {
    /// Node owning the port.
    pub node: String,
    /// Port index within the node.
    pub port: u32,
    /// Node at the other end.
    pub peer: String,
    /// Link rate, Gb/s.
    pub rate_gbps: f64,
    /// The counters.
    #[serde(flatten)]
    pub counters: PortCounters,
    /// InfiniBand counters (credits, flow-control packets, FECN), on
    /// InfiniBand fabrics only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ib: Option<super::ib::IbPortCounters>,
    /// Dynamic-ECN state of the port's data-priority queue, on switch ports
    /// of fabrics with `[ecn] mode = "dynamic"` only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub dyn_ecn: Option<super::DynEcnPort>,
}

/// A QP's identity and counters, for reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct QpReport {
    /// QP index.
    pub qp: u32,
    /// Host of this end.
    pub host: String,
    /// Host of the other end.
    pub peer: String,
    /// Priority.
    pub prio: u8,
    /// Current sending rate, Gb/s.
    pub rate_gbps: f64,
    /// The counters.
    #[serde(flatten)]
    pub counters: QpCounters,
}

/// Two UDP source ports from `rng` in the ephemeral range 49152-65535:
/// a connection's two QPs'.
fn ephemeral_ports(rng: &mut Rng) -> (u16, u16) {
    let mut one = || 49152 + (rng.next_u64() % 16384) as u16;
    (one(), one())
}

impl Net {
    pub(crate) fn deliver(&mut self, at: Time, app: u32, ev: AppEvent) {
        let mb = &mut self.mailbox;
        let slot = if let Some(s) = mb.free.pop() {
            mb.slots[s as usize] = (app, ev);
            s
        } else {
            mb.slots.push((app, ev));
            mb.slots.len() as u32 - 1
        };
        self.q.schedule(at, Ev::App(slot));
    }

    /// RC QPs that exhausted their retries so far, in order.
    pub fn qp_failures(&self) -> &[QpFailure] {
        &self.qp_failures
    }

    /// Why a work request completed in error: the first QP failure, in a
    /// sentence.
    pub fn qp_failure_reason(&self) -> String {
        self.qp_failures.first().map_or_else(
            || "a work request completed in error".to_string(),
            QpFailure::describe,
        )
    }

    /// Index of a host by name (`h0`, ...), or an `UnknownHost` error.
    pub fn host(&self, name: &str) -> Result<u32> {
        self.topo.host_index(name).map(|h| h as u32)
    }

    /// Number of hosts.
    pub fn n_hosts(&self) -> u32 {
        self.topo.n_hosts as u32
    }

    /// Line rate of a host's NIC.
    pub fn host_rate(&self, host: u32) -> Rate {
        self.nics[host as usize].rate
    }

    /// Create a connected pair of RC QPs between hosts `a` and `b`, owned by
    /// workloads `app_a` and `app_b`, on priority `prio` (default: the
    /// fabric's data priority). Each QP gets a pseudo-random UDP source port
    /// from the run seed (the ECMP entropy). On an iWARP fabric the pair is
    /// carried by two offloaded TCP connections, whose client port is
    /// `a`'s QP's.
    pub fn connect(
        &mut self,
        a: u32,
        b: u32,
        app_a: u32,
        app_b: u32,
        prio: Option<u8>,
    ) -> Result<(QpId, QpId)> {
        self.connect_via(a, b, app_a, app_b, prio, (None, None))
    }

    /// [`Net::connect`], with the two UDP source ports drawn from the run
    /// seed and `key` instead of from the order of connections: a workload
    /// that connects lazily, in an order its timing decides (the MPI
    /// layer, on first use of a rank pair), gets the same ports, so the
    /// same ECMP paths, on both backends and whatever the order. `key`
    /// names the connection (e.g. the job and the rank pair); two
    /// connections with one key share their ports.
    pub fn connect_keyed(
        &mut self,
        a: u32,
        b: u32,
        app: u32,
        prio: Option<u8>,
        key: u64,
    ) -> Result<(QpId, QpId)> {
        let prio = self.check_pair(a, b, prio)?;
        let ports = ephemeral_ports(&mut Rng::new(self.seed, splitmix64(key) | 1 << 63));
        self.connect_ports(a, b, (app, app), prio, ports, (None, None))
    }

    /// [`Net::connect`], with the paths pinned through switches: `via.0`
    /// for what `a` sends (its sends and WRITEs, its READ requests, the
    /// ACKs of `b`'s data), `via.1` for what `b` sends. A pinned QP's UDP
    /// source port is the first, counting on from its pseudo-random one,
    /// whose ECMP path passes through the switch (as a user pins a RoCE
    /// flow by its source port); an unpinned direction is hashed as usual.
    /// Needs ECMP: an error on InfiniBand (routed by destination) or with
    /// adaptive routing, or when no path of the fabric's ECMP groups from
    /// the one host to the other passes there.
    pub fn connect_via(
        &mut self,
        a: u32,
        b: u32,
        app_a: u32,
        app_b: u32,
        prio: Option<u8>,
        via: (Option<u32>, Option<u32>),
    ) -> Result<(QpId, QpId)> {
        let prio = self.check_pair(a, b, prio)?;
        let ports = ephemeral_ports(&mut self.rng_qp);
        self.connect_ports(a, b, (app_a, app_b), prio, ports, via)
    }

    /// Hosts `a` and `b` can be connected on priority `prio` (default:
    /// the data priority): the priority, or an error that says what to
    /// change.
    fn check_pair(&self, a: u32, b: u32, prio: Option<u8>) -> Result<u8> {
        let n = self.n_hosts();
        if a >= n || b >= n {
            return arg_err(format!(
                "host index out of range (the fabric has {n} hosts)"
            ));
        }
        if a == b {
            return arg_err(format!(
                "cannot connect host {} to itself over the network; pick two different hosts",
                self.topo.nodes[a as usize].name
            ));
        }
        self.check_reachable(a, b)?;
        let prio = prio.unwrap_or(self.p.data_prio);
        if prio > 7 {
            return arg_err(format!("priority {prio} is out of range 0..7"));
        }
        Ok(prio)
    }

    /// Connect hosts `a` and `b` (checked by `check_pair`) with UDP
    /// source ports `sa` and `sb`, moved on to pass through `via`'s
    /// switches.
    fn connect_ports(
        &mut self,
        a: u32,
        b: u32,
        (app_a, app_b): (u32, u32),
        prio: u8,
        (mut sa, mut sb): (u16, u16),
        via: (Option<u32>, Option<u32>),
    ) -> Result<(QpId, QpId)> {
        let qa = self.qps.len() as u32;
        let qb = qa + 1;
        if let Some(sw) = via.0 {
            sa = self.sport_through(a, b, sa, sw)?;
        }
        if let Some(sw) = via.1 {
            sb = self.sport_through(b, a, sb, sw)?;
        }
        if self.flow.is_some() {
            return Ok(self.flow_connect((a, app_a, sa), (b, app_b, sb), prio));
        }
        let (ra, rb) = (self.host_rate(a), self.host_rate(b));
        let cc = self.p.cc.as_ref();
        self.qps.push(Qp::new(a, b, qb, sa, prio, app_a, ra, cc));
        self.qps.push(Qp::new(b, a, qa, sb, prio, app_b, rb, cc));
        self.qsched.push(QpSched::new(prio));
        self.qsched.push(QpSched::new(prio));
        if self.iwarp.is_some() {
            self.iwarp_connect(qa, qb, sa, prio);
        }
        Ok((QpId(qa), QpId(qb)))
    }

    /// An error when no switch path joins hosts `a` and `b` (NICs of two
    /// rails of a rail-only fabric).
    pub(crate) fn check_reachable(&self, a: u32, b: u32) -> Result<()> {
        match &self.islands {
            Some(i) if i[a as usize] != i[b as usize] => Err(self.topo.unjoined(a, b)),
            _ => Ok(()),
        }
    }

    /// Post a work request of `bytes` on `qp`. The NIC starts sending it
    /// after its send latency; the owning workload gets `Completed` with
    /// `token` when it completes.
    pub fn post(&mut self, qp: QpId, op: OpKind, bytes: u64, token: u64) -> Result<()> {
        self.check_post(qp, op, bytes)?;
        if self.flow.is_some() {
            self.flow_post(qp.0, op, bytes, token, true);
            return Ok(());
        }
        let ready = self.now() + self.p.nic_tx;
        if self.iwarp.is_some() {
            self.iwarp_post(qp.0, op, bytes, token, ready, true);
        } else {
            self.push_msg(qp.0, op, bytes, token, ready, true);
        }
        Ok(())
    }

    /// Like [`Net::post`] but unsignaled (verbs' `IBV_SEND_SIGNALED` not
    /// set): no `Completed` event is delivered to the owner. The responder
    /// still gets `Received` for a WRITE or SEND. An RC QP completes its
    /// work requests in order, so a signaled request after unsignaled ones
    /// says they are done too.
    pub fn post_unsignaled(&mut self, qp: QpId, op: OpKind, bytes: u64, token: u64) -> Result<()> {
        self.check_post(qp, op, bytes)?;
        if self.flow.is_some() {
            self.flow_post(qp.0, op, bytes, token, false);
            return Ok(());
        }
        let ready = self.now() + self.p.nic_tx;
        if self.iwarp.is_some() {
            self.iwarp_post(qp.0, op, bytes, token, ready, false);
        } else {
            self.push_msg(qp.0, op, bytes, token, ready, false);
        }
        Ok(())
    }

    /// An error unless a workload may post `op` of `bytes` on `qp`.
    fn check_post(&self, qp: QpId, op: OpKind, bytes: u64) -> Result<()> {
        if qp.0 as usize >= self.n_qps() || self.is_responder_stream(qp.0) {
            return arg_err(format!("no QP {}", qp.0));
        }
        if op == OpKind::ReadResp {
            return arg_err("ReadResp is posted by the NIC, not by a workload");
        }
        if bytes > (1 << 31) {
            return arg_err(format!("message of {bytes} B exceeds the 2 GiB RDMA limit"));
        }
        Ok(())
    }

    /// Deliver `AppEvent::Timer { token }` to workload `app` at `at`.
    pub fn set_app_timer(&mut self, app: u32, at: Time, token: u64) {
        self.deliver(at.max(self.now()), app, AppEvent::Timer { token });
    }

    /// Number of QP indices used so far: the connected QPs and their READ
    /// responder streams, which are the network's own and never reported.
    pub fn n_qps(&self) -> usize {
        match &self.flow {
            Some(f) => f.qps.len(),
            None => self.qps.len(),
        }
    }

    /// Counters of a QP (its READ responder stream's included).
    pub fn qp_counters(&self, qp: QpId) -> QpCounters {
        let folded = match &self.flow {
            Some(f) => f.qp_counters_folded(qp.0),
            None => self.qp_counters_folded(qp.0),
        };
        folded.unwrap_or_default()
    }

    /// Current rate of a QP (on the flow backend: its active flow's fair
    /// share, 0 when it has none).
    pub fn qp_rate(&self, qp: QpId) -> Rate {
        match &self.flow {
            Some(f) => Rate(f.qp_rate_bps(qp.0) as u64),
            None => self.qps[qp.0 as usize].rate(),
        }
    }

    /// Every port with its counters, in node order.
    pub fn port_reports(&self) -> Vec<PortReport> {
        let now = self.now();
        let mut out = Vec::with_capacity(self.ports.len());
        for (node, w) in self.node_ports.windows(2).enumerate() {
            for (k, pi) in (w[0]..w[1]).enumerate() {
                let port = &self.ports[pi as usize];
                let mut counters = port.counters();
                // Include pauses still in force at the end of the run.
                for prio in 0..8 {
                    if let Some(since) = port.pause_since[prio] {
                        counters.paused_ps +=
                            (port.paused_until[prio].min(now).max(since) - since).0;
                    }
                }
                out.push(PortReport {
                    node: self.topo.nodes[node].name.clone(),
                    port: k as u32,
                    peer: self.topo.nodes[port.peer_node as usize].name.clone(),
                    rate_gbps: port.rate.as_gbps_f64(),
                    counters,
                    ib: self.ib_port_counters(pi),
                    dyn_ecn: self.dyn_ecn_report(pi),
                });
            }
        }
        out
    }

    /// Every QP with its counters.
    pub fn qp_reports(&self) -> Vec<QpReport> {
        let row = |i: usize, host: u32, peer: u32, prio: u8, bps: f64, c: &QpCounters| QpReport {
            qp: i as u32,
            host: self.topo.nodes[host as usize].name.clone(),
            peer: self.topo.nodes[peer as usize].name.clone(),
            prio,
            rate_gbps: bps / 1e9,
            counters: c.clone(),
        };
        match &self.flow {
            // TCP connections' QPs are the flow backend's own: reported as
            // TCP connections (`tcp_reports`).
            // READ responder streams are folded into their QPs' rows.
            Some(f) => (f.qps.iter().enumerate())
                .filter(|(_, q)| q.tcp == u32::MAX)
                .filter_map(|(i, q)| {
                    let c = f.qp_counters_folded(i as u32)?;
                    Some(row(
                        i,
                        q.host,
                        q.peer_host,
                        q.prio,
                        f.qp_rate_bps(i as u32),
                        &c,
                    ))
                })
                .collect(),
            None => (self.qps.iter().enumerate())
                .filter_map(|(i, q)| {
                    let c = self.qp_counters_folded(i as u32)?;
                    Some(row(
                        i,
                        q.host,
                        q.peer_host,
                        q.prio,
                        q.rate().as_bps() as f64,
                        &c,
                    ))
                })
                .collect(),
        }
    }

    /// Counters of the port of `node` that faces `peer` (first one if
    /// parallel links), by names.
    pub fn port_between(&self, node: &str, peer: &str) -> Option<PortCounters> {
        let ni = self.topo.nodes.iter().position(|n| n.name == node)?;
        (self.node_ports[ni]..self.node_ports[ni + 1])
            .map(|pi| &self.ports[pi as usize])
            .find(|p| self.topo.nodes[p.peer_node as usize].name == peer)
            .map(|p| p.counters())
    }
}

impl Net {
    /// Bytes a connected QP pair takes on this net's backend
    /// ([`qp_pair_bytes`]).
    pub fn qp_pair_bytes(&self) -> u64 {
        qp_pair_bytes(self.backend())
    }
}

/// Bytes a connected QP pair takes on `backend` with one message posted:
/// the QPs themselves, the NIC scheduler's entries and their message
/// queues' first buffers (packet engine), or the flow backend's QPs, one
/// flow and its cached path. An estimate for refusing runs too large for
/// memory before they allocate (see `traffic::flows`, `mpi::footprint`).
pub fn qp_pair_bytes(backend: crate::config::Backend) -> u64 {
    use std::mem::size_of;
    let per = match backend {
        crate::config::Backend::Flow => super::flow::QP_PAIR_BYTES,
        // Each QP's message queue starts with a buffer of four entries.
        crate::config::Backend::Packet => {
            2 * (size_of::<super::qp::Qp>()
                + size_of::<super::qp::QpSched>()
                + 4 * size_of::<super::qp::Msg>())
        }
    };
    per as u64
}

/// Bytes a connection's READ responder stream pair takes on `backend`,
/// created at its first READ (`net::responder`): a second QP pair, with
/// its scheduler entries and queues, like [`qp_pair_bytes`].
pub fn responder_stream_bytes(backend: crate::config::Backend) -> u64 {
    qp_pair_bytes(backend)
}
