//! InfiniBand: the credit-based link layer, HCA receive buffers, static
//! D-mod-K routing and congestion control, beside the Ethernet models.
//!
//! On an InfiniBand fabric (`transport = "infiniband"`) every port keeps,
//! per virtual lane, the credits its peer has granted (as the receiver's
//! FCCL: total 64 B blocks granted) and the credits it has used (FCTBS);
//! a packet leaves only when its blocks fit (`credits.rs`). Receivers hold
//! packets in per-VL buffers (switch input ports, HCA receive buffers,
//! `hca.rs`) and give the blocks back with a 6-byte flow-control packet
//! sent upstream, ahead of data but after the packet on the wire, when a
//! switch starts forwarding the packet or an HCA has moved it to memory.
//! A flow-control packet carries the credits as they are when it starts
//! out, so one waiting per VL is enough: later frees ride along. Nothing is
//! ever dropped, no PFC frame or MMU is involved, and congestion spreads by
//! credit starvation, counted per port and VL (`credit_stalled_ps`).
//!
//! Routing is the subnet manager's: one egress per (switch, destination),
//! the destination's index modulo the number of min-hop ports
//! (`routing.rs`). Congestion control (`cc.rs`) is FECN at the switches,
//! BECN from the receiving HCA and an injection delay from a table at the
//! source QP.
//!
//! Left out: the initial link training and periodic (unchanged) credit
//! updates, VL15 and subnet management traffic, VL arbitration tables (the
//! `[qos]` scheduler is used), IPoIB (TCP is refused on IB fabrics), the
//! FCTBS/FCCL 12-bit wrap (counters are 64-bit), LMC/multipath LIDs,
//! adaptive routing, credit-loop (deadlock) checks for non-tree topologies.

mod cc;
mod credits;
mod hca;
mod routing;

pub(crate) use routing::pin_dmodk;

use super::packet::{Packet, PktId};
use super::{Net, PortIdx};
use crate::config::{FabricSpec, NodeKind, MAX_VLS};
use crate::topology::Topology;
use crate::units::{Rate, Time};
use crate::wire::IB_CREDIT_BYTES;
use serde::Serialize;
use std::collections::VecDeque;

/// InfiniBand counters of one port (flattened into its port report).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IbPortCounters {
    /// Per VL: time this egress had a packet it could not send for lack of
    /// credits (and nothing credited left to send on that VL), ps.
    pub credit_stalled_ps: Vec<u64>,
    /// Credit stalls that ended (all VLs).
    pub credit_stalls: u64,
    /// Flow-control packets sent (credit updates for this port's ingress).
    pub fcp_tx: u64,
    /// Flow-control packets received (credit updates for this egress).
    pub fcp_rx: u64,
    /// Data packets FECN-marked at this egress.
    pub fecn_marks: u64,
    /// Peak bytes held in this port's ingress buffer of one VL.
    pub peak_vl_buffer_bytes: u64,
    /// Peak bytes queued at this egress, packets waiting for credits
    /// included (the Ethernet `peak_queue_bytes` counts credited ones only).
    pub peak_vl_queue_bytes: u64,
}

/// One credit stall of a port's VL (see [`Net::enable_credit_log`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreditStall {
    /// Node owning the egress port.
    pub node: String,
    /// Port index within the node.
    pub port: u32,
    /// The VL.
    pub vl: u8,
    /// When the port ran out of credits for the VL's next packet, ps.
    pub start_ps: u64,
    /// When credits came back and the VL sent again, ps.
    pub end_ps: u64,
}

/// Per-port state: credits as a sender, buffer as a receiver.
pub(crate) struct IbPort {
    // --- egress: credits granted by the peer ---
    pub sent: [u64; MAX_VLS],
    pub limit: [u64; MAX_VLS],
    /// Packets waiting for credits, per VL.
    pub waitq: [VecDeque<PktId>; MAX_VLS],
    pub wait_bytes: [u64; MAX_VLS],
    /// Credited packets in the port's queues not yet sent (switch ports),
    /// and their blocks (taken from `limit` but not yet sent).
    pub queued: [u32; MAX_VLS],
    pub queued_blocks: [u64; MAX_VLS],
    /// When the last credited packet of the VL finishes leaving.
    pub last_tx_end: [Time; MAX_VLS],
    pub stall_since: [Option<Time>; MAX_VLS],
    pub mark_count: u32,
    // --- ingress: this port's buffer ---
    pub capacity: u64,
    pub used: [u64; MAX_VLS],
    pub freed: [u64; MAX_VLS],
    pub received: [u64; MAX_VLS],
    /// VLs with a flow-control packet waiting to go out (bit per VL).
    pub fcp_pending: u16,
    pub c: IbPortCounters,
}

/// An HCA: packets waiting to be moved to host memory (receive side), and
/// QPs waiting for credits (send side), per VL, in the order they stopped.
#[derive(Default)]
pub(crate) struct Hca {
    pub drain: VecDeque<(PortIdx, PktId)>,
    pub parked: [VecDeque<u32>; MAX_VLS],
}

/// Congestion-control state of a QP (the sending side).
#[derive(Clone, Default)]
pub(crate) struct CcQp {
    pub ccti: u16,
    pub base: Option<Rate>,
    pub timer: crate::engine::Timer,
}

/// Everything InfiniBand adds to the network.
pub(crate) struct Ib {
    pub vls: usize,
    pub sl_to_vl: [u8; 16],
    pub ports: Vec<IbPort>,
    pub hcas: Vec<Hca>,
    pub drain_rate: Option<Rate>,
    pub cc: Option<cc::CcConf>,
    pub cc_qps: Vec<CcQp>,
    pub credit_log: Option<Vec<(PortIdx, u8, Time, Time)>>,
    /// Reused buffer of packets released by a credit update.
    pub scratch: Vec<PktId>,
    /// QPs in some HCA's `parked` list.
    pub qp_parked: Vec<bool>,
}

impl Ib {
    /// Credit state for every port, given as its (node, peer node) pairs
    /// in port order.
    pub fn new(spec: &FabricSpec, topo: &Topology, ports: impl Iterator<Item = (u32, u32)>) -> Ib {
        let ib = spec.ib_spec();
        let vls = ib.vls as usize;
        let blocks = |bytes: u64| bytes / IB_CREDIT_BYTES;
        let cap_of = |node: u32| match topo.nodes[node as usize].kind {
            NodeKind::Switch => blocks(ib.switch_vl_buffer_bytes),
            NodeKind::Host => blocks(ib.hca_vl_buffer_bytes),
        };
        let ports = ports
            .map(|(node, peer_node)| {
                let mut limit = [0; MAX_VLS];
                limit[..vls].fill(cap_of(peer_node));
                IbPort {
                    sent: [0; MAX_VLS],
                    limit,
                    waitq: Default::default(),
                    wait_bytes: [0; MAX_VLS],
                    queued: [0; MAX_VLS],
                    queued_blocks: [0; MAX_VLS],
                    last_tx_end: [Time::ZERO; MAX_VLS],
                    stall_since: [None; MAX_VLS],
                    mark_count: 0,
                    capacity: cap_of(node),
                    used: [0; MAX_VLS],
                    freed: [0; MAX_VLS],
                    received: [0; MAX_VLS],
                    fcp_pending: 0,
                    c: IbPortCounters {
                        credit_stalled_ps: vec![0; vls],
                        ..Default::default()
                    },
                }
            })
            .collect();
        Ib {
            vls,
            sl_to_vl: ib.sl_to_vl(),
            ports,
            hcas: (0..topo.n_hosts).map(|_| Hca::default()).collect(),
            drain_rate: ib.hca_drain_gbps.map(Rate::from_gbps_f64),
            cc: ib.cc.enabled.then(|| cc::CcConf::new(&ib)),
            cc_qps: Vec::new(),
            credit_log: None,
            scratch: Vec::new(),
            qp_parked: Vec::new(),
        }
    }

    /// The VL of a packet of priority (SL) `prio`.
    #[inline]
    pub fn vl(&self, prio: u8) -> usize {
        self.sl_to_vl[prio as usize & 15] as usize
    }
}

/// A flow-control packet starts out on port `pi`: it carries the credits
/// granted on its VL as they are now (FCCL = buffer + blocks freed so far).
pub(crate) fn stamp_fcp(ib: Option<&mut Ib>, pi: PortIdx, p: &mut Packet) {
    let Some(ib) = ib else { return };
    let port = &mut ib.ports[pi as usize];
    let vl = p.prio as usize;
    p.aux = port.capacity + port.freed[vl];
    port.fcp_pending &= !(1 << vl);
    port.c.fcp_tx += 1;
}

impl Net {
    /// A NIC-generated control packet (ACK, NAK, BECN) enters its host
    /// port once it has credits.
    pub(crate) fn ib_inject(&mut self, pkt: PktId) {
        let src = self.pkts.get(pkt).src as usize;
        let port = self.nics[src].port;
        self.ib_enqueue(port, pkt);
    }

    /// InfiniBand counters of port `pi` (with stalls still in progress).
    pub(crate) fn ib_port_counters(&self, pi: PortIdx) -> Option<IbPortCounters> {
        let ib = self.ib.as_ref()?;
        let port = &ib.ports[pi as usize];
        let mut c = port.c.clone();
        let now = self.now();
        for (vl, since) in port.stall_since.iter().enumerate().take(ib.vls) {
            if let Some(t) = since.filter(|&t| t < now) {
                c.credit_stalled_ps[vl] += (now - t).0;
            }
        }
        Some(c)
    }

    /// Record every credit stall from now on (InfiniBand fabrics; off by
    /// default, costs nothing when off).
    pub fn enable_credit_log(&mut self) {
        if let Some(ib) = self.ib.as_mut() {
            ib.credit_log.get_or_insert_with(Vec::new);
        }
    }

    /// The credit stalls recorded since [`Net::enable_credit_log`], in the
    /// order they ended.
    pub fn credit_log(&self) -> Vec<CreditStall> {
        let Some(log) = self.ib.as_ref().and_then(|ib| ib.credit_log.as_ref()) else {
            return Vec::new();
        };
        log.iter()
            .map(|&(pi, vl, start, end)| {
                let port = &self.ports[pi as usize];
                CreditStall {
                    node: self.topo.nodes[port.node as usize].name.clone(),
                    port: pi - self.node_ports[port.node as usize],
                    vl,
                    start_ps: start.0,
                    end_ps: end.0,
                }
            })
            .collect()
    }

    /// True when the fabric's links are InfiniBand.
    pub fn is_infiniband(&self) -> bool {
        self.ib.is_some()
    }
}
