//! The packet-level network: hosts with RDMA NICs, switches, links.
//!
//! [`Net`] owns every component in arenas (ports, switches, QPs, packets)
//! and the event queue; components refer to each other by index. Event
//! handling is split by concern over the files of this module:
//! `port` (egress scheduling, serialisation, the wire), `switch`
//! (forwarding, shared buffer, PFC, ECN), `nic` (queue pairs, RC transport,
//! DCQCN reaction and notification points), `routing` (forwarding tables and
//! ECMP), `tcp` (the hosts' TCP senders and receivers), `ib` (InfiniBand's
//! credit-based link layer, D-mod-K routing and congestion control, which
//! replace PFC, ECMP and DCQCN on an InfiniBand fabric), `iwarp` (QPs
//! carried by offloaded TCP connections of `tcp` instead of the RC
//! transport of `nic`, on an iWARP fabric). Workloads talk to
//! the network only through the methods in `api.rs` and `tcp/api.rs`:
//! connect, post, write, and the events delivered to their [`App`].
//!
//! [`App`]: crate::sim::App

mod adaptive;
mod api;
mod audit;
pub mod cc;
pub(crate) mod columns;
pub mod counters;
mod dyn_ecn;
mod failures;
pub(crate) mod flow;
pub mod ib;
pub mod iwarp;
mod mmu;
mod nic;
pub mod packet;
mod pfc_guard;
mod port;
mod qp;
pub(crate) mod ready;
mod responder;
pub(crate) mod routing;
mod switch;
pub mod tables;
pub mod tcp;
mod telemetry;
mod verbs;

pub use api::{qp_pair_bytes, responder_stream_bytes, PortReport, QpReport};
pub use audit::AuditSummary;
pub use columns::{
    port_reports_as_columns, port_rows_as_columns, qp_reports_as_columns, qp_rows_as_columns,
};
pub use counters::{PortCounters, QpCounters};
pub use dyn_ecn::DynEcnPort;
pub use failures::LinkStep;
pub use flow::{FlowRoute, FlowStats};
pub use pfc_guard::{Deadlock, DeadlockPort};
pub use tcp::{TcpCounters, TcpId, TcpReport};
pub use telemetry::{PortSample, PortSampleRow, Sample, ROW_BYTES as TELEMETRY_ROW_BYTES};
pub use verbs::{
    wc_status_str, AppEvent, OpKind, QpFailure, QpId, WC_RETRY_EXC_ERR, WC_WR_FLUSH_ERR,
};

use crate::config::{CcAlgorithm, FabricSpec, Forwarding, NodeKind};
use crate::engine::EventQueue;
use crate::error::Result;
use crate::rng::Rng;
use crate::topology::Topology;
use crate::units::{Rate, Time};
use cc::{CcConf, CnpPolicy};
use mmu::SwitchMmu;
use packet::PacketPool;
use port::Port;
use qp::Qp;
use routing::Routing;

/// Index of a port (one end of a link; its egress direction).
pub type PortIdx = u32;

/// Events of the network (plus workload wake-ups).
#[derive(Copy, Clone, Debug)]
pub enum Ev {
    /// The packet at the head of this port's wire reaches the peer.
    Arrive(PortIdx),
    /// The port finished serialising its current packet.
    TxDone(PortIdx),
    /// Retry transmission (pause expired, rate limiter, posted work).
    Wake(PortIdx),
    /// A NIC-generated control packet enters its host port's queues.
    Inject(packet::PktId),
    /// A QP's retransmission timer.
    Rto(u32, u32),
    /// A QP's congestion-control timer (QP, slot, generation).
    CcTimer(u32, u8, u32),
    /// Re-send an XOFF that is still in force (ingress port, priority).
    PfcRefresh(PortIdx, u8),
    /// Deliver a pending event to a workload (slot in the mailbox).
    App(u32),
    /// Take a telemetry sample.
    Sample,
    /// TCP acts on an arrived segment or ACK (after the stack latency).
    TcpRx(packet::PktId),
    /// A TCP connection's retransmission timer.
    TcpRto(u32, u32),
    /// A TCP receiver's delayed-ACK timer.
    TcpDelAck(u32, u32),
    /// A TCP sender may send again (room in the host queues).
    TcpPush(u32),
    /// An InfiniBand HCA finished moving a received packet to memory (host).
    IbDrain(u32),
    /// A QP's InfiniBand CCTI decrease timer (QP, generation).
    IbCcti(u32, u32),
    /// iWARP: posted messages of this QP are ready for its TCP stream.
    IwarpRelease(u32),
    /// A step of a scheduled link failure (failing link, step).
    Link(u32, LinkStep),
    /// End of a dynamic-ECN control interval (switch egress port, priority).
    EcnTick(PortIdx, u8),
    /// Flow backend: a QP's next message starts as a fluid flow.
    FlowStart(u32),
    /// Flow backend: a QP's own last packet has left its host (a small
    /// message, READ requests, or the end of a flow that its next message
    /// does not continue); the next message goes, a NIC round behind it.
    FlowNext(u32),
    /// Flow backend: completions are due; rates are recomputed.
    FlowTick,
    /// Flow backend: an action due now (a slot of `FlowNet::later`: READ
    /// requests reach their responder, TCP data or its ACK arrives).
    FlowLater(u32),
    /// Look for a PFC deadlock (a switch-to-switch pause has lasted).
    PfcCheck,
    /// The PFC watchdog looks at the lossless queues.
    WatchdogPoll,
    /// A host NIC stops (true) or resumes (false) draining: a PFC storm.
    PfcStorm(u32, bool),
}

/// Per-host NIC state (the host's one port is `port`).
pub(crate) struct Nic {
    pub port: PortIdx,
    pub rate: Rate,
    /// QPs with data eligible now, in `[nic] qp_arbitration` order.
    pub ready: ready::Ready,
    /// QPs waiting for their rate limiter or for posted work to be ready.
    pub waiting: std::collections::BinaryHeap<std::cmp::Reverse<(Time, u32)>>,
    /// QPs whose priority is paused, per priority.
    pub parked: [Vec<u32>; 8],
    /// When this port last sent a CNP (DCQCN with `cnp_scope = "port"`).
    pub last_cnp: Option<Time>,
}

/// Static parameters derived from the spec, read on the hot path.
pub(crate) struct Params {
    pub mtu: u32,
    pub vlan: bool,
    pub nic_tx: Time,
    pub nic_rx: Time,
    pub ack_every: u32,
    pub rto: Time,
    /// RC retries on timeout before the QP fails (`nic.retry_cnt`).
    pub retry_cnt: u32,
    pub switch_latency: Time,
    pub cut_through: bool,
    pub data_prio: u8,
    pub ctrl_prio: u8,
    /// Bit p set for each strict priority p.
    pub strict_mask: u8,
    pub dwrr_quantum: [u32; 8],
    pub lossless: [bool; 8],
    pub pause_quanta: u32,
    pub ecn: bool,
    /// Priorities whose egress queues ECN-mark.
    pub ecn_prio: [bool; 8],
    pub kmin: u64,
    pub kmax: u64,
    pub pmax: f64,
    /// The RDMA QPs' congestion control (None: `algorithm = "none"`).
    pub cc: Option<CcConf>,
    /// Its notification point at the receivers.
    pub cnp: Option<CnpPolicy>,
    /// InfiniBand links (IB wire overheads; credits in `Net::ib`).
    pub ib: bool,
    /// Bytes of a packet's wire size that no queue or buffer holds: the
    /// preamble, SFD and inter-frame gap on Ethernet (20), none on
    /// InfiniBand, whose wire size has none.
    pub framing: u32,
}

impl Params {
    /// Bytes on the wire of an RDMA packet of this fabric's link layer.
    #[inline]
    pub fn wire_bytes(&self, payload: u32, ext: crate::wire::Ext) -> u32 {
        if self.ib {
            crate::wire::ib_wire_bytes(payload, ext)
        } else {
            crate::wire::roce_wire_bytes(payload, ext, self.vlan)
        }
    }
}

/// The simulated network.
pub struct Net {
    pub(crate) q: EventQueue<Ev>,
    pub(crate) topo: Topology,
    pub(crate) p: Params,
    pub(crate) ports: Vec<Port>,
    /// First port of each node; node i owns ports[node_ports[i]..node_ports[i+1]].
    pub(crate) node_ports: Vec<u32>,
    pub(crate) nics: Vec<Nic>,
    pub(crate) mmus: Vec<SwitchMmu>,
    pub(crate) routing: Routing,
    pub(crate) qps: Vec<Qp>,
    /// The scheduler's view of each QP (same index as `qps`).
    pub(crate) qsched: Vec<qp::QpSched>,
    pub(crate) pkts: PacketPool,
    pub(crate) mailbox: api::Mailbox,
    pub(crate) rng_qp: Rng,
    /// The run seed (keyed QP source ports, `Net::connect_keyed`).
    pub(crate) seed: u64,
    pub(crate) packets_forwarded: u64,
    /// Frames of lossless priorities dropped because an ingress port's PFC
    /// headroom overflowed: (frames, wire bytes, the first such port).
    pub(crate) headroom_drops: (u64, u64, PortIdx),
    pub(crate) telemetry: telemetry::Telemetry,
    pub(crate) tcp: tcp::Tcp,
    /// InfiniBand state (credits, HCA buffers, CC), on IB fabrics only.
    pub(crate) ib: Option<Box<ib::Ib>>,
    /// iWARP state (QP streams), on iWARP fabrics only.
    pub(crate) iwarp: Option<Box<iwarp::Iwarp>>,
    /// Scheduled link failures and the routing views of them.
    pub(crate) fail: Option<Box<failures::Failures>>,
    /// Adaptive routing state (with `[routing] mode = "adaptive"`).
    pub(crate) ar: Option<Box<adaptive::Adaptive>>,
    /// Dynamic ECN state (with `[ecn] mode = "dynamic"`).
    pub(crate) decn: Option<Box<dyn_ecn::DynEcn>>,
    /// The flow-level backend's state (with `[sim] backend = "flow"`);
    /// `None` on the packet backend.
    pub(crate) flow: Option<Box<flow::FlowNet>>,
    /// PFC deadlock detection, watchdog and storms (packet backend, PFC on).
    pub(crate) guard: Option<Box<pfc_guard::PfcGuard>>,
    /// Queues out of lossless service (watchdog) plus storming host NICs:
    /// the packet path looks at the ports' `storm` bits only when nonzero.
    pub(crate) storms_active: u32,
    /// RC QPs that exhausted their retries, in order.
    pub(crate) qp_failures: Vec<verbs::QpFailure>,
    /// Switch ports may keep an idle `TxDone` in reserve (`port.rs`): off
    /// with adaptive routing, InfiniBand and link failures.
    pub(crate) lazy_txdone: bool,
    /// The conservation audit's counters (opt-in; `net/audit.rs`).
    pub(crate) audit: Option<Box<audit::Audit>>,
    /// Each host's island (`Topology::host_islands`) when the fabric has
    /// more than one (rail-only fabrics); `None`: every host reaches every
    /// other.
    pub(crate) islands: Option<Vec<u32>>,
    /// The audit was turned on by the environment (the test suite): a
    /// debug build stops at the first run that does not balance.
    pub(crate) audit_strict: bool,
}

impl Net {
    /// Build the network of a validated spec with a run seed.
    pub fn new(spec: &FabricSpec, seed: u64) -> Result<Net> {
        spec.validate()?;
        let topo = Topology::build(spec)?;
        let n = topo.nodes.len();
        // Ports: one per link end, grouped by node.
        let mut degree = vec![0u32; n];
        for l in &topo.links {
            degree[l.a] += 1;
            degree[l.b] += 1;
        }
        let mut node_ports = vec![0u32; n + 1];
        for i in 0..n {
            node_ports[i + 1] = node_ports[i] + degree[i];
        }
        let mut next = node_ports.clone();
        let total = node_ports[n] as usize;
        let mut ends: Vec<(usize, usize)> = vec![(0, 0); total]; // (node, link)
        let mut peer = vec![0u32; total];
        let mut link_port = vec![0u32; topo.links.len()];
        for (li, l) in topo.links.iter().enumerate() {
            let pa = next[l.a];
            link_port[li] = pa;
            next[l.a] += 1;
            let pb = next[l.b];
            next[l.b] += 1;
            ends[pa as usize] = (l.a, li);
            ends[pb as usize] = (l.b, li);
            peer[pa as usize] = pb;
            peer[pb as usize] = pa;
        }
        let p = params(spec)?;
        let mut ports: Vec<Port> = (0..total)
            .map(|i| {
                let (node, li) = ends[i];
                let l = &topo.links[li];
                let peer_node = ends[peer[i] as usize].0;
                let to_switch = topo.nodes[peer_node].kind == NodeKind::Switch;
                Port::new(
                    node as u32,
                    peer[i],
                    peer_node as u32,
                    to_switch,
                    l.rate,
                    l.delay,
                )
            })
            .collect();
        if p.cut_through {
            // Cut-through switches store and forward from a slower link
            // into a faster one: mark the links into a switch that has a
            // faster port (`Net::start_tx` checks the packet's egress).
            let mut fastest = vec![Rate(0); n];
            for port in &ports {
                let f = &mut fastest[port.node as usize];
                *f = (*f).max(port.rate);
            }
            for port in ports.iter_mut() {
                port.ct_underrun = port.to_switch && fastest[port.peer_node as usize] > port.rate;
            }
        }
        // Ingress headroom of switch ports, derived from the link unless set.
        let max_frame = if spec.is_iwarp() {
            let iw = spec.iwarp_spec();
            crate::wire::iwarp_wire_bytes(iw.mss(), p.vlan, iw.tcp_timestamps).max(
                crate::wire::tcp_wire_bytes(crate::wire::tcp_mss(spec.tcp.host_mtu), p.vlan),
            )
        } else {
            crate::wire::roce_wire_bytes(p.mtu, crate::wire::Ext::Reth, p.vlan)
        };
        let latency = Time::from_ns_f64(spec.switch.latency_ns);
        for port in ports.iter_mut() {
            // This switch admits a packet its latency after the last bit
            // is in, and an upstream switch acts on a pause its latency
            // after it is in: both are in flight too.
            let pipeline = Time(latency.0 * (1 + port.to_switch as u64));
            port.headroom = spec.switch.headroom_bytes.unwrap_or_else(|| {
                auto_headroom(port.rate, port.delay, max_frame as u64, pipeline)
            });
        }
        let nics = (0..topo.n_hosts)
            .map(|h| Nic {
                port: node_ports[h],
                rate: ports[node_ports[h] as usize].rate,
                ready: ready::Ready::new(spec.nic.qp_arbitration),
                waiting: Default::default(),
                parked: Default::default(),
                last_cnp: None,
            })
            .collect();
        let lossless = p.lossless.iter().filter(|&&b| b).count() as u64;
        let mut mmus = Vec::new();
        for sw in topo.n_hosts..n {
            let range = node_ports[sw]..node_ports[sw + 1];
            // Headroom is set aside only when some priority is lossless.
            let headroom: u64 = if lossless > 0 {
                range
                    .clone()
                    .fold(0u64, |a, i| a.saturating_add(ports[i as usize].headroom))
            } else {
                0
            };
            let reserves = spec
                .switch
                .reserve_bytes
                .saturating_mul(lossless.max(1))
                .saturating_mul(range.len() as u64);
            if headroom.saturating_add(reserves) >= spec.switch.buffer_bytes {
                return Err(crate::Error::InvalidFabric(format!(
                    "switch {} has {} B of buffer but needs {} B of PFC headroom and {} B of \
                     reserves for its {} ports, leaving no shared buffer; increase \
                     switch.buffer_bytes or lower switch.headroom_bytes / switch.reserve_bytes",
                    topo.nodes[sw].name,
                    spec.switch.buffer_bytes,
                    headroom,
                    reserves,
                    range.len()
                )));
            }
            mmus.push(SwitchMmu::new(
                spec.switch.buffer_bytes,
                headroom,
                spec.switch.reserve_bytes,
                reserves,
                spec.switch.dt_shift,
                spec.switch.resume_offset_bytes,
                Rng::new(seed, 1_000_000 + sw as u64),
            ));
        }
        let mut routing = Routing::build(&topo, &ports, &node_ports, seed);
        // Scheduled link failures: each failing link's two ports, and its
        // down (and up) events.
        let mut q = EventQueue::new();
        let mut failing = Vec::new();
        for (i, f) in spec.link_failures.iter().enumerate() {
            for li in crate::topology::failures::resolve(f, i, &topo)? {
                let pa = link_port[li];
                let k = failing.len() as u32;
                failing.push([pa, peer[pa as usize]]);
                q.schedule(
                    Time::from_ns_f64(f.down_us * 1e3),
                    Ev::Link(k, LinkStep::Down),
                );
                if let Some(up) = f.up_us {
                    q.schedule(Time::from_ns_f64(up * 1e3), Ev::Link(k, LinkStep::Up));
                }
            }
        }
        let fail = (!failing.is_empty()).then(|| {
            Box::new(failures::Failures::new(
                failing,
                Time::from_ns_f64(spec.failover.detect_us * 1e3),
                Time::from_ns_f64(spec.failover.converge_us * 1e3),
                total,
                seed,
            ))
        });
        let ib = spec.is_infiniband().then(|| {
            ib::pin_dmodk(&mut routing, &topo, &ports, &node_ports);
            Box::new(ib::Ib::new(
                spec,
                &topo,
                ports.iter().map(|p| (p.node, p.peer_node)),
            ))
        });
        if spec.sim.backend == crate::config::Backend::Flow {
            flow::limits::check(spec, &topo, &ports)?;
        }
        let flow = (spec.sim.backend == crate::config::Backend::Flow).then(|| {
            // An InfiniBand HCA that moves packets to memory slower than
            // its link (`[ib] hca_drain_gbps`, in wire bytes as on the
            // packet engine) bounds everything into its host: the link into
            // it carries no more.
            let drain = (spec.is_infiniband())
                .then(|| spec.ib_spec().hca_drain_gbps)
                .flatten()
                .map(|g| Rate::from_gbps_f64(g).as_bps() as f64);
            let caps = (ports.iter())
                .map(|p| {
                    let bps = p.rate.as_bps() as f64;
                    match drain {
                        Some(d) if (p.peer_node as usize) < topo.n_hosts => bps.min(d),
                        _ => bps,
                    }
                })
                .collect();
            let iwarp = spec.is_iwarp().then(|| {
                let iw = spec.iwarp_spec();
                (iw.mulpdu(), p.vlan, iw.tcp_timestamps)
            });
            let mut fnet = Box::new(flow::FlowNet::new(
                caps,
                flow::FlowOptions {
                    quantum: Time::from_ns_f64(spec.sim.flow_quantum_ns),
                    iwarp,
                    small_bytes: spec.sim.flow_small_bytes,
                    arbitration: spec.nic.qp_arbitration,
                },
            ));
            if audit::enabled_by_env() {
                fnet.enable_audit();
            }
            fnet
        });
        let host_names: Vec<&str> = topo.nodes[..topo.n_hosts]
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        let guard = pfc_guard::PfcGuard::new(spec, total, &host_names)?;
        if let Some(g) = &guard {
            for (at, ev) in g.first_events() {
                q.schedule(at, ev);
            }
        }
        Ok(Net {
            flow,
            guard,
            storms_active: 0,
            qp_failures: Vec::new(),
            lazy_txdone: spec.link_failures.is_empty()
                && !spec.is_infiniband()
                && spec.routing.mode == crate::config::RoutingMode::Ecmp,
            audit: (spec.sim.backend == crate::config::Backend::Packet && audit::enabled_by_env())
                .then(|| audit::Audit::new(total)),
            audit_strict: audit::enabled_by_env(),
            islands: Some(topo.host_islands()).filter(|i| i.iter().any(|&x| x != i[0])),
            q,
            fail,
            ar: adaptive::Adaptive::new(&spec.routing, n - topo.n_hosts),
            decn: dyn_ecn::DynEcn::new(&spec.ecn, total),
            p,
            ports,
            node_ports,
            nics,
            mmus,
            routing,
            qps: Vec::new(),
            qsched: Vec::new(),
            pkts: PacketPool::default(),
            mailbox: Default::default(),
            rng_qp: Rng::new(seed, 7),
            seed,
            packets_forwarded: 0,
            headroom_drops: (0, 0, 0),
            telemetry: Default::default(),
            tcp: tcp::Tcp::new(spec, seed),
            ib,
            iwarp: spec
                .is_iwarp()
                .then(|| Box::new(iwarp::Iwarp::new(&spec.iwarp_spec()))),
            topo,
        })
    }

    /// Turn the conservation audit on for this network (as
    /// `FABRICLAB_AUDIT=1` does for every network; on the flow backend,
    /// its books in fluid terms). Call before the run.
    pub fn enable_audit(&mut self) {
        if let Some(f) = self.flow.as_deref_mut() {
            f.enable_audit();
        } else if self.audit.is_none() {
            self.audit = Some(audit::Audit::new(self.ports.len()));
        }
        // The caller reads the result ([`Net::audit_check`]).
        self.audit_strict = false;
    }

    /// The backend simulating this network.
    pub fn backend(&self) -> crate::config::Backend {
        if self.flow.is_some() {
            crate::config::Backend::Flow
        } else {
            crate::config::Backend::Packet
        }
    }

    /// Figures of the flow backend's run (None on the packet backend).
    pub fn flow_stats(&self) -> Option<&FlowStats> {
        self.flow.as_ref().map(|f| &f.stats)
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.q.now()
    }

    /// The built topology (names, links).
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// Handle one network event. Workload events (`Ev::App`) are routed by
    /// [`crate::sim::Sim`], not here.
    #[inline]
    pub(crate) fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive(port) => self.on_arrive(port),
            Ev::TxDone(port) => self.on_tx_done(port),
            Ev::Wake(port) => self.on_wake(port),
            Ev::Inject(pkt) if self.ib.is_some() => self.ib_inject(pkt),
            Ev::Inject(pkt) => self.on_inject(pkt),
            Ev::Rto(qp, g) => self.on_rto(qp, g),
            Ev::CcTimer(qp, slot, g) => self.on_cc_timer(qp, slot, g),
            Ev::PfcRefresh(port, prio) => self.on_pfc_refresh(port, prio),
            Ev::Sample => self.on_sample(),
            Ev::TcpRx(pkt) => self.on_tcp_rx(pkt),
            Ev::TcpRto(c, g) => self.on_tcp_rto(c, g),
            Ev::TcpDelAck(c, g) => self.on_tcp_delack(c, g),
            Ev::TcpPush(c) => self.on_tcp_push(c),
            Ev::IbDrain(host) => self.on_ib_drain(host),
            Ev::IbCcti(qp, g) => self.on_ib_ccti(qp, g),
            Ev::IwarpRelease(qp) => self.on_iwarp_release(qp),
            Ev::Link(link, step) => self.on_link(link, step),
            Ev::EcnTick(port, prio) => self.on_ecn_tick(port, prio),
            Ev::FlowStart(qp) => self.on_flow_start(qp, false),
            Ev::FlowNext(qp) => self.on_flow_start(qp, true),
            Ev::FlowTick => self.on_flow_tick(),
            Ev::FlowLater(slot) => self.on_flow_later(slot),
            Ev::PfcCheck => self.on_pfc_check(),
            Ev::WatchdogPoll => self.on_watchdog_poll(),
            Ev::PfcStorm(s, start) => self.on_pfc_storm(s, start),
            Ev::App(_) => debug_assert!(false, "App events are routed by Sim"),
        }
    }

    /// Names of the node owning global port `port` and of the node at the
    /// other end of its link.
    pub fn port_ends(&self, port: u32) -> (&str, &str) {
        let p = &self.ports[port as usize];
        (
            &self.topo.nodes[p.node as usize].name,
            &self.topo.nodes[p.peer_node as usize].name,
        )
    }

    /// Index of global port `port` among its node's ports (as in
    /// [`PortReport::port`]; parallel links share both node names).
    pub fn port_index_in_node(&self, port: u32) -> u32 {
        port - self.node_ports[self.ports[port as usize].node as usize]
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.q.events_processed()
    }

    /// Packets forwarded by switches so far (on the flow backend: the
    /// packets of the messages completed, counted out of switch ports).
    pub fn packets_forwarded(&self) -> u64 {
        if self.flow.is_none() {
            return self.packets_forwarded;
        }
        let first_switch_port = self.node_ports[self.topo.n_hosts] as usize;
        self.ports[first_switch_port..]
            .iter()
            .map(|p| p.tx.tx_packets)
            .sum()
    }

    /// Packets alive in the pool (queued, on a wire, or waiting in a NIC).
    pub fn packets_in_flight(&self) -> usize {
        self.pkts.live()
    }

    /// Most packets alive at once so far (the pool's high-water mark).
    pub fn peak_packets_in_flight(&self) -> usize {
        self.pkts.capacity_used()
    }

    pub(crate) fn is_switch(&self, node: u32) -> bool {
        node as usize >= self.topo.n_hosts
    }
}

fn params(spec: &FabricSpec) -> Result<Params> {
    let mut strict = [false; 8];
    for &p in &spec.qos.strict_priorities {
        strict[p as usize] = true;
    }
    let mut lossless = [false; 8];
    if spec.pfc.enabled {
        for &p in &spec.pfc.priorities {
            lossless[p as usize] = true;
        }
    }
    let mut ecn_prio = lossless;
    if let Some(list) = &spec.ecn.priorities {
        ecn_prio = [false; 8];
        for &p in list {
            ecn_prio[p as usize] = true;
        }
    } else if spec.cc.algorithm == CcAlgorithm::Dcqcn && !spec.is_iwarp() && !spec.is_infiniband() {
        // DCQCN lives on the marks of the RoCE data queue, lossless or not:
        // without PFC (lossy RoCE) the default still marks it, as a switch
        // configured for RoCE marks its queue whatever its pause setting.
        ecn_prio[spec.qos.data_priority as usize] = true;
    }
    let cc = CcConf::new(&spec.cc)?;
    let cnp = cc.as_ref().map(CcConf::notification_point);
    let ib = spec.is_infiniband();
    Ok(Params {
        mtu: if ib {
            spec.ib_spec().mtu
        } else {
            spec.nic.roce_mtu
        },
        vlan: spec.nic.vlan,
        nic_tx: Time::from_ns_f64(spec.nic.tx_latency_ns),
        nic_rx: Time::from_ns_f64(spec.nic.rx_latency_ns),
        ack_every: spec.nic.ack_every_packets,
        // 0 is infinite: no transport timer (the IB spec's Local ACK
        // Timeout, as verbs and the NICs take it).
        rto: match spec.nic.ack_timeout_exponent {
            0 => Time::NEVER,
            e => Time(4_096_000u64 << e),
        },
        retry_cnt: spec.nic.retry_cnt,
        switch_latency: Time::from_ns_f64(spec.switch.latency_ns),
        cut_through: spec.switch.forwarding == Forwarding::CutThrough,
        data_prio: spec.qos.data_priority,
        ctrl_prio: spec.qos.control_priority,
        strict_mask: (0..8).filter(|&p| strict[p]).fold(0, |m, p| m | 1 << p),
        dwrr_quantum: spec
            .qos
            .dwrr_weights
            .map(|w| w * spec.qos.dwrr_quantum_bytes),
        lossless,
        pause_quanta: spec.pfc.pause_quanta,
        ecn: spec.ecn.enabled,
        ecn_prio,
        kmin: spec.ecn.kmin_bytes,
        kmax: spec.ecn.kmax_bytes,
        pmax: spec.ecn.pmax,
        cc,
        cnp,
        ib,
        framing: if ib {
            0
        } else {
            crate::wire::PREAMBLE_SFD + crate::wire::IFG
        },
    })
}

/// PFC headroom for an ingress port: data in flight during two cable
/// delays, the frame being sent upstream when the pause arrives, the frame
/// being sent here when the pause is emitted, the pause frame itself, and
/// what arrives while the upstream reacts. That reaction is budgeted as the
/// IEEE worst-case response of 394 quanta (512 bit times each), 25,216 B,
/// which is 2.02 us at 100G; above 100G the same time (mlx5 sizes headroom
/// in proportion to the speed: reference notes, PFC), and longer when the
/// model's switch `pipeline` is (a switch here admits a packet its latency
/// after the last bit, an upstream switch acts on a pause its latency after
/// it is in; see `Net::new`). Up to 100G with the usual sub-microsecond
/// switches this is the IEEE figure alone.
pub fn auto_headroom(rate: Rate, delay: Time, max_frame: u64, pipeline: Time) -> u64 {
    let cable = rate.bytes_in(Time(delay.0 * 2));
    let response_100g: u64 = 394 * 512 / 8;
    let reaction = Rate::gbps(100).tx_time(response_100g).max(pipeline);
    let response = response_100g.max(rate.bytes_in(reaction));
    cable + 2 * max_frame + crate::wire::PFC_FRAME_WIRE as u64 + response
}
