//! The flow-level backend: every message (but the smallest, `small.rs`)
//! is a fluid flow at its max-min fair share of the links on the path the
//! packet engine would route it.
//!
//! What it models, per RC queue pair (the same `Net::connect` / `post` API
//! and `AppEvent`s as the packet engine, so every workload runs on it):
//! - the path: the packet engine's routing tables and ECMP hash with the
//!   QP's UDP source port drawn from the same seeded stream (so the same
//!   collisions; the MPI layer's ports are keyed by job and rank pair,
//!   `Net::connect_keyed`, so they do not depend on the order in which
//!   timing makes it connect), D-mod-K on InfiniBand, least-loaded
//!   minimal next hop at flow start under adaptive routing;
//! - the size on the wire: every packet's headers and framing as the
//!   packet engine builds them (`Params::wire_bytes`, iWARP's FPDUs), so a
//!   link's capacity is shared in wire bytes and goodput follows;
//! - a QP's messages go one after the other (the next starts when the
//!   previous one's last byte has left the host), and the host link is the
//!   NIC's limit. A message that is ready when the previous one ends
//!   continues its flow (same path, same share: the rates of ending one
//!   flow and starting the next at the same instant, without the solve);
//! - a WRITE or SEND of one packet of at most `[sim] flow_small_bytes`
//!   (256 B by default: MPI's protocol headers, small eager messages) is
//!   sent as a packet outside the max-min solve, after its turn at the
//!   NIC behind the QPs with data (`small.rs`);
//! - a READ's request, like an ACK, takes no bandwidth in the fluid
//!   shares: at the head of its QP it is sent as a packet, with its turn at
//!   the NIC and at the ports as a small message (`small.rs`; on iWARP, in
//!   the TCP stream, it crosses the path at once on idle ports); the
//!   response is queued on the responder's QP when the request
//!   arrives (behind what that QP has posted by then, as in the packet
//!   engine) and is a flow of that QP. Responses ready
//!   behind an unsignaled one run on in the same flow up to the next
//!   signaled one (a rendezvous transfer's fragments: one flow, one event,
//!   the same times as a chain of continued flows);
//! - timing: the fluid runs at the pace of the flow's bottleneck link; that
//!   link ends the message's last packet at the fluid's end plus the time
//!   the stream's first packet took to reach it, and the last packet then
//!   crosses the rest of the path behind the one before it, as the packet
//!   engine moves packets on idle ports (serialisation per hop, cut-through
//!   or store and forward, switch latency, propagation; `flow_tail`);
//!   `Received` comes the NIC's receive latency later, and `Completed`
//!   when the ACK, sent back the same way without taking bandwidth, has
//!   arrived. One message on an idle fabric thus takes the packet engine's
//!   time (exactly for one packet or equal full ones).
//!
//! What it leaves out (see `config/sim.rs`): queues, PFC, ECN and DCQCN
//! dynamics (flows get their fair share at once), drops and
//! retransmission, ACK and CNP bandwidth, queue telemetry (refused),
//! InfiniBand's credits (a fabric whose credit loop would cap a link is
//! refused, `limits.rs`; an HCA's drain rate caps the link into its host). Link failures are approximated: a pulled link's capacity is
//! 0 until it is back, and every active flow takes its new path when the
//! fabric has converged (`failures.rs`; the ends' early detection and the
//! losses are not modelled; `FlowStats::link_events_approximated` says a
//! run had some). Port counters count each
//! message's wire bytes and packets when it completes.

mod audit;
pub(crate) mod limits;
mod maxmin;
mod small;
use small::Before;
mod tcp;

pub(crate) use maxmin::MaxMin;

use super::counters::QpCounters;
use super::qp::{stream_owner, NO_QP};
use super::verbs::{AppEvent, OpKind};
use super::{Ev, Net, QpId};
use crate::units::Time;
use crate::wire::{Ddp, Ext, ROCEV2_UDP_PORT};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// What a fluid flow carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum MsgKind {
    Write,
    Send,
    ReadReq,
    ReadResp,
    /// Bytes an application wrote into a TCP connection (`tcp.rs`).
    Tcp,
}

/// What happens later at a known time (`Ev::FlowLater`).
#[derive(Copy, Clone, Debug)]
enum Later {
    /// READ requests reach the responder QP, which queues the response.
    ReadArrive { peer: u32, m: Msg },
    /// TCP bytes reach the receiving application.
    TcpRx { conn: u32, bytes: u64, segs: u32 },
    /// Their ACK reaches the sender: `rtt` after the last segment left,
    /// the flow then at `rate_bps`.
    TcpAck {
        conn: u32,
        bytes: u64,
        segs: u32,
        rtt: Time,
        rate_bps: f64,
    },
}

/// A message, or `reps` identical ones posted back to back (a rendezvous
/// transfer's fragments: one entry, not a thousand).
#[derive(Copy, Clone, Debug)]
struct Msg {
    kind: MsgKind,
    bytes: u64,
    token: u64,
    ready: Time,
    notify: bool,
    reps: u32,
}

impl Msg {
    fn same_as(&self, o: &Msg) -> bool {
        (self.kind, self.bytes, self.token, self.ready, self.notify)
            == (o.kind, o.bytes, o.token, o.ready, o.notify)
    }
}

/// Take one message off the front of `msgs`.
fn pop_one(msgs: &mut VecDeque<Msg>) -> Option<Msg> {
    let front = msgs.front_mut()?;
    if front.reps > 1 {
        front.reps -= 1;
        return Some(Msg { reps: 1, ..*front });
    }
    msgs.pop_front()
}

/// Count `wire` bytes in `npkts` packets out of each port of `path` and
/// into its peer.
fn count_ports(
    ports: &mut [super::port::Port],
    path: impl Iterator<Item = u32>,
    wire: u64,
    npkts: u32,
) {
    for pi in path {
        let peer_port = ports[pi as usize].peer;
        let c = &mut ports[pi as usize].tx;
        c.tx_bytes += wire;
        c.tx_packets += npkts as u64;
        let c = &mut ports[peer_port as usize].rx;
        c.rx_bytes += wire;
        c.rx_packets += npkts as u64;
    }
}

/// A queue pair of the flow backend.
pub(crate) struct FQp {
    pub host: u32,
    pub peer_host: u32,
    pub peer_qp: u32,
    pub sport: u16,
    /// Destination port of the 5-tuple (RoCEv2's 4791, or TCP's).
    pub dport: u16,
    pub prio: u8,
    pub app: u32,
    /// The TCP connection this QP carries (u32::MAX: an RDMA QP).
    pub tcp: u32,
    msgs: VecDeque<Msg>,
    /// A flow is active or its start is scheduled.
    busy: bool,
    /// The active flow, if any.
    flow: u32,
    /// The QP's path while the routing tables hold (empty: not known
    /// yet; never kept under adaptive routing, which picks per flow).
    path: Box<[u32]>,
    /// The QP has been routed before (its next use keeps the path).
    routed: bool,
    /// How long this QP's ACK (of `ack_wire` bytes) takes back over the
    /// peer's path on idle ports (`Time::NEVER`: not known yet): the per-hop
    /// arithmetic only shifts with the start time, so one figure serves.
    ack_delay: Time,
    pub counters: QpCounters,
    /// For a READ responder stream, the QP it serves (`responder.rs`);
    /// `NO_QP` for a QP of its own.
    pub owner: u32,
    /// This QP's responder stream, once a READ has needed one (`NO_QP`).
    pub resp: u32,
}

impl FQp {
    /// An idle RDMA QP of `host`, joined to `peer_qp` of `peer_host`.
    pub(crate) fn new(
        (host, peer_host, peer_qp): (u32, u32, u32),
        sport: u16,
        prio: u8,
        app: u32,
    ) -> FQp {
        FQp {
            host,
            peer_host,
            peer_qp,
            sport,
            dport: ROCEV2_UDP_PORT,
            prio,
            app,
            tcp: u32::MAX,
            msgs: VecDeque::new(),
            busy: false,
            flow: u32::MAX,
            path: Box::default(),
            routed: false,
            ack_delay: Time::NEVER,
            counters: QpCounters::default(),
            owner: NO_QP,
            resp: NO_QP,
        }
    }
}

struct Flow {
    qp: u32,
    /// The (last) message it carries.
    msg: Msg,
    /// Messages it carries (READ responses run together) and their payload.
    count: u32,
    payload: u64,
    wire_bytes: u64,
    last_wire: u32,
    npkts: u32,
    rem_bytes: f64,
    last: Time,
    gen: u32,
    /// Wire bytes and packets already counted on the ports of paths it
    /// left (a link failure re-routed it): the rest is counted on its
    /// last path when it ends.
    counted_wire: u64,
    counted_pkts: u32,
    /// Payload already counted on its QPs (a run that stopped with the
    /// flow under way counts what it had sent).
    counted_payload: u64,
}

/// Bytes of a connected QP pair with one message on the flow backend (for
/// memory estimates): the two QPs, one flow, the first buffer of a message
/// queue (four entries) and a cached path (up to six hops of a fat tree).
pub(crate) const QP_PAIR_BYTES: usize = 2 * std::mem::size_of::<FQp>()
    + std::mem::size_of::<Flow>()
    + 4 * std::mem::size_of::<Msg>()
    + 6 * 4;

/// Figures of a flow-backend run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FlowStats {
    /// Flows started or continued: one per message, except READ requests
    /// (no bandwidth, like ACKs) and READ responses merged into the flow of
    /// the one before.
    pub flows: u64,
    /// READ responses carried in the flow of the response before them
    /// (ready behind an unsignaled one: the fragments of one transfer).
    pub merged: u64,
    /// Rate recomputations.
    pub solves: u64,
    /// Flows whose rates were recomputed, summed over recomputations.
    pub flows_refilled: u64,
    /// Messages that continued their QP's flow (ready when the previous
    /// one ended: no rate recomputation).
    pub continued: u64,
    /// Flows completed in a batch after the first (quantum batching).
    pub batched: u64,
    /// Most flows active at once.
    pub peak_active: u64,
    /// Link failures and repairs approximated (capacity 0, re-routing at
    /// convergence; nothing lost or retransmitted).
    pub link_events_approximated: u64,
    /// Small messages sent as packets outside the fluid model (`small.rs`,
    /// `[sim] flow_small_bytes`).
    pub small: u64,
}

/// State of the flow backend.
pub(crate) struct FlowNet {
    pub mm: MaxMin,
    pub qps: Vec<FQp>,
    flows: Vec<Flow>,
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    tick_at: Time,
    quantum: Time,
    dirty: bool,
    changed: Vec<(u32, f64)>,
    pub stats: FlowStats,
    /// iWARP framing (MULPDU, timestamps), on iWARP fabrics.
    iwarp: Option<(u32, bool, bool)>,
    /// Actions due later (`Ev::FlowLater`), slots reused through
    /// `later_free`.
    later: Vec<Later>,
    later_free: Vec<u32>,
    /// The client QP of each TCP connection (u32::MAX: none yet).
    tcp_qps: Vec<u32>,
    /// Messages ready when their QP's flow ends continue it, and READ
    /// responses run together (tests turn this off to check that it
    /// changes nothing).
    pub continue_flows: bool,
    /// A flow's end fell beyond the horizon the clock holds (it is not
    /// scheduled; the run stalls and the tools say why).
    pub beyond_clock: bool,
    /// The audit's books (`audit.rs`), when the audit is on.
    pub(crate) audit: Option<Box<audit::FlowAudit>>,
    /// Messages of one packet with at most this payload go outside the
    /// fluid model (`small.rs`; 0: none).
    small_bytes: u64,
    /// Per port: the turns (start, end of serialisation) given to small
    /// packets and READ requests that are not over, in time order
    /// (`small.rs`).
    small_turns: Vec<Vec<(Time, Time)>>,
    /// The NICs' send arbitration (`[nic] qp_arbitration`), for a small
    /// packet's or a READ request's wait for its turn.
    arbitration: crate::config::QpArbitration,
}

/// How the flow backend runs (`[sim]`, `[nic]`).
pub(crate) struct FlowOptions {
    /// Completions within this time of each other are batched.
    pub quantum: Time,
    /// iWARP framing (MULPDU, VLAN tag, TCP timestamps), on iWARP fabrics.
    pub iwarp: Option<(u32, bool, bool)>,
    /// `[sim] flow_small_bytes`.
    pub small_bytes: u64,
    /// `[nic] qp_arbitration`.
    pub arbitration: crate::config::QpArbitration,
}

/// The latest time a flow may end at: half the clock's range (106 days),
/// so that the latencies added after it cannot overflow.
const HORIZON_PS: u64 = u64::MAX / 2;

/// Path ports of a flow (egress ports, host port first).
type Path = Vec<u32>;

/// Where one message of a QP goes on the flow backend and what it costs
/// alone on idle ports (NCCL's fluid collectives, `nccl/fluid.rs`, share
/// the links themselves).
#[derive(Clone, Debug)]
pub struct FlowRoute {
    /// Egress ports of the QP's path, its host's port first.
    pub ports: Vec<u32>,
    /// Each port's capacity now, b/s (0 while its cable is out).
    pub cap_bps: Vec<f64>,
    /// Wire bytes of the message (every packet's headers and framing).
    pub wire_bytes: u64,
    /// Its packets.
    pub packets: u32,
    /// From the end of its fluid transfer (its wire bytes at the pace of
    /// the path's slowest link, from the host) to `Received` at the peer:
    /// the stream reaching that link, its last packet across the rest
    /// behind the one before it, then the NIC's receive latency, as a flow
    /// alone on the flow backend. (Before 2026-11-29 the last packet left
    /// the host at the fluid's end, so a slower link downstream was
    /// crossed twice.)
    pub tail: Time,
}

/// Capacity `i` of a route's `cap_bps`, a link that is down (0) ranking
/// after every live one: the tail is taken at the slowest live link.
fn cap_bps_of(cap_bps: &[f64], i: usize) -> f64 {
    match cap_bps[i] {
        c if c > 0.0 => c,
        _ => f64::INFINITY,
    }
}

impl FlowNet {
    pub fn new(cap_bps: Vec<f64>, o: FlowOptions) -> FlowNet {
        FlowNet {
            small_turns: vec![Vec::new(); cap_bps.len()],
            mm: MaxMin::new(cap_bps),
            qps: Vec::new(),
            flows: Vec::new(),
            heap: BinaryHeap::new(),
            tick_at: Time::NEVER,
            quantum: o.quantum,
            dirty: false,
            changed: Vec::new(),
            stats: FlowStats::default(),
            iwarp: o.iwarp,
            later: Vec::new(),
            later_free: Vec::new(),
            tcp_qps: Vec::new(),
            continue_flows: true,
            beyond_clock: false,
            audit: None,
            small_bytes: o.small_bytes,
            arbitration: o.arbitration,
        }
    }

    /// Keep the audit's books from now on (`audit.rs`).
    pub(crate) fn enable_audit(&mut self) {
        if self.audit.is_none() {
            self.audit = Some(Box::default());
        }
    }

    /// Rate of QP `q`'s active flow, b/s (0 when idle).
    pub fn qp_rate_bps(&self, q: u32) -> f64 {
        let f = self.qps[q as usize].flow;
        if f == u32::MAX {
            0.0
        } else {
            self.mm.rate_bps(f)
        }
    }

    fn settle(&mut self, f: u32, now: Time, old_bps: f64) {
        let fl = &mut self.flows[f as usize];
        let dt = (now - fl.last).0 as f64;
        fl.rem_bytes = (fl.rem_bytes - old_bps * dt / 8e12).max(0.0);
        fl.last = now;
    }

    fn schedule_finish(&mut self, f: u32, now: Time) {
        let rate = self.mm.rate_bps(f);
        let fl = &mut self.flows[f as usize];
        fl.gen = fl.gen.wrapping_add(1);
        if rate > 0.0 {
            let ps = (fl.rem_bytes * 8e12 / rate).ceil();
            if now.0 as f64 + ps > HORIZON_PS as f64 {
                self.beyond_clock = true;
                return;
            }
            self.heap.push(Reverse((now.0 + ps as u64, f, fl.gen)));
        }
    }
}

impl Net {
    /// Connect a QP pair `(host, app, UDP source port)` of each end.
    pub(crate) fn flow_connect(
        &mut self,
        (a, app_a, sa): (u32, u32, u16),
        (b, app_b, sb): (u32, u32, u16),
        prio: u8,
    ) -> (QpId, QpId) {
        let fnet = self.flow.as_mut().expect("flow backend");
        let qa = fnet.qps.len() as u32;
        let qb = qa + 1;
        fnet.qps.push(FQp::new((a, b, qb), sa, prio, app_a));
        fnet.qps.push(FQp::new((b, a, qa), sb, prio, app_b));
        (QpId(qa), QpId(qb))
    }

    pub(crate) fn flow_post(&mut self, q: u32, op: OpKind, bytes: u64, token: u64, notify: bool) {
        let kind = match op {
            OpKind::Write => MsgKind::Write,
            OpKind::Send => MsgKind::Send,
            OpKind::Read => MsgKind::ReadReq,
            OpKind::ReadResp => MsgKind::ReadResp,
        };
        self.flow_post_kind(q, kind, bytes, token, notify);
    }

    fn flow_post_kind(&mut self, q: u32, kind: MsgKind, bytes: u64, token: u64, notify: bool) {
        let ready = self.now() + self.p.nic_tx;
        let fnet = self.flow.as_mut().expect("flow backend");
        if let Some(a) = fnet.audit.as_deref_mut() {
            if !matches!(kind, MsgKind::Tcp | MsgKind::ReadResp) {
                a.posted += 1;
            }
        }
        self.flow_push(
            q,
            Msg {
                kind,
                bytes,
                token,
                ready,
                notify,
                reps: 1,
            },
        );
    }

    fn flow_push(&mut self, q: u32, m: Msg) {
        let fnet = self.flow.as_mut().expect("flow backend");
        let qp = &mut fnet.qps[q as usize];
        match qp.msgs.back_mut() {
            Some(back) if back.same_as(&m) => back.reps += m.reps,
            _ => qp.msgs.push_back(m),
        }
        if !qp.busy {
            qp.busy = true;
            let at = m.ready.max(self.q.now());
            self.q.schedule(at, Ev::FlowStart(q));
        }
    }

    /// Run `f` with QP `q`'s path, from the QP's cache when it has one.
    /// A QP keeps its path from its second use on, while the routing
    /// tables hold (a million one-message QPs of an all-to-all keep none);
    /// under adaptive routing every flow start chooses.
    fn with_path<R>(&mut self, q: u32, f: impl FnOnce(&mut Net, &[u32]) -> R) -> R {
        let fnet = self.flow.as_mut().expect("flow backend");
        let qp = &mut fnet.qps[q as usize];
        let mut path = std::mem::take(&mut qp.path);
        let keep = self.ar.is_none() && std::mem::replace(&mut qp.routed, true);
        if path.is_empty() {
            path = self.flow_path(q).into_boxed_slice();
        }
        let r = f(self, &path);
        if keep {
            self.flow.as_mut().expect("flow backend").qps[q as usize].path = path;
        }
        r
    }

    /// Flow backend: the route and cost of a WRITE of `bytes` on `qp`
    /// (None on the packet backend).
    pub fn flow_route(&self, qp: QpId, bytes: u64) -> Option<FlowRoute> {
        let fnet = self.flow.as_ref()?;
        let ports = self.flow_path(qp.0);
        let cap_bps: Vec<f64> = ports.iter().map(|&p| fnet.mm.cap_bps(p)).collect();
        let (wire_bytes, last_wire, packets) = self.flow_wire(MsgKind::Write, bytes);
        // Any origin will do: the arithmetic only shifts with it. The
        // fluid runs at the pace of the path's slowest link (the first of
        // them), as one flow alone gets: the last packet crosses it once.
        let end = Time::from_ns_f64(1e6);
        let slowest = (0..ports.len())
            .min_by(|&a, &b| cap_bps_of(&cap_bps, a).total_cmp(&cap_bps_of(&cap_bps, b)))
            .unwrap_or(0);
        let arrive = self.tail_from(&ports, slowest, end, (wire_bytes, last_wire, packets));
        Some(FlowRoute {
            ports,
            cap_bps,
            wire_bytes,
            packets,
            tail: arrive + self.p.nic_rx - end,
        })
    }

    /// Flow backend: count `wire` bytes in `packets` packets out of each
    /// of `ports` and into its peer (traffic the flow solver did not carry
    /// itself, e.g. NCCL's fluid collectives).
    pub fn flow_account(&mut self, ports: &[u32], wire: u64, packets: u64) {
        for &pi in ports {
            let peer = self.ports[pi as usize].peer;
            let c = &mut self.ports[pi as usize].tx;
            c.tx_bytes += wire;
            c.tx_packets += packets;
            let c = &mut self.ports[peer as usize].rx;
            c.rx_bytes += wire;
            c.rx_packets += packets;
        }
    }

    /// When an ACK of `wire` bytes for QP `q`, leaving its peer's host at
    /// `at`, is in at `q`'s host (last bit): the peer's path on idle ports.
    /// The delay is kept per QP while the routing tables hold (and computed
    /// each time under adaptive routing).
    fn flow_ack_arrival(&mut self, q: u32, at: Time, wire: u32) -> Time {
        let fnet = self.flow.as_ref().expect("flow backend");
        let cached = fnet.qps[q as usize].ack_delay;
        if cached != Time::NEVER {
            return at + cached;
        }
        let peer = fnet.qps[q as usize].peer_qp;
        let back = self.flow_path(peer);
        let delay = self.flow_packet_arrival(back, Time::ZERO, wire) - Time::ZERO;
        if self.ar.is_none() {
            self.flow.as_mut().expect("flow backend").qps[q as usize].ack_delay = delay;
        }
        at + delay
    }

    /// The egress ports from QP `q`'s host to its peer: the packet
    /// engine's forwarding for its 5-tuple.
    fn flow_path(&self, q: u32) -> Path {
        let qp = &self.flow.as_ref().expect("flow backend").qps[q as usize];
        let (src, dst) = (qp.host, qp.peer_host);
        let first = self.nics[src as usize].port;
        let mut path = vec![first];
        let mut node = self.ports[first as usize].peer_node;
        while node != dst {
            let mut out = if self.ar.is_some() {
                self.flow_adaptive_port(node, src, dst, qp.sport, qp.dport)
            } else {
                self.routing.next_port(node, src, dst, qp.sport, qp.dport)
            };
            if out == super::routing::NO_ROUTE {
                // No way around the failed links (a host's own cable): the
                // flow keeps the intact fabric's way through the dead link,
                // whose capacity is 0, and stalls there until it is back.
                let intact = self.fail.as_ref().and_then(|f| f.intact.as_ref());
                if let Some(r) = intact {
                    out = r.next_port(node, src, dst, qp.sport, qp.dport);
                }
            }
            assert!(out != super::routing::NO_ROUTE, "flow backend: no route");
            path.push(out);
            node = self.ports[out as usize].peer_node;
        }
        path
    }

    /// Adaptive routing at flow start: the minimal next hop with the
    /// fewest active flows, ties to the ECMP choice.
    fn flow_adaptive_port(&self, node: u32, src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
        let group = self.routing.group(node, dst);
        if group.len() <= 1 {
            return group.first().copied().unwrap_or(super::routing::NO_ROUTE);
        }
        let mm = &self.flow.as_ref().expect("flow backend").mm;
        let start = self.routing.pick(node, src, dst, sport, dport, group.len());
        let mut best = group[start];
        for k in 1..group.len() {
            let p = group[(start + k) % group.len()];
            if mm.flows_on(p) < mm.flows_on(best) {
                best = p;
            }
        }
        best
    }

    /// Flow backend: port `pi`'s link capacity becomes `cap_bps` (0 while
    /// the cable is out).
    pub(crate) fn flow_set_capacity(&mut self, pi: u32, cap_bps: f64) {
        let now = self.now();
        let fnet = self.flow.as_mut().expect("flow backend");
        fnet.mm.set_cap(pi, cap_bps);
        fnet.stats.link_events_approximated += 1;
        fnet.dirty = true;
        self.flow_tick_at(now);
    }

    /// Flow backend: after the routing tables changed, every active flow
    /// takes its QP's new path (ECMP re-hashes over the new groups, as the
    /// packet engine's switches do), keeping what it has left to send.
    pub(crate) fn flow_reroute_all(&mut self) {
        let now = self.now();
        let fnet = self.flow.as_mut().expect("flow backend");
        for qp in &mut fnet.qps {
            qp.path = Box::default();
            qp.ack_delay = Time::NEVER;
        }
        let n = fnet.qps.len();
        for q in 0..n as u32 {
            let f = self.flow.as_ref().expect("flow backend").qps[q as usize].flow;
            if f == u32::MAX {
                continue;
            }
            let path = self.flow_path(q);
            self.flow_audit_path(q, &path);
            let fnet = self.flow.as_mut().expect("flow backend");
            if fnet.mm.path(f).eq(path.iter().copied()) {
                continue;
            }
            // What it sent so far crossed the old path's ports.
            self.flow_count_sent(f, now);
            let fnet = self.flow.as_mut().expect("flow backend");
            fnet.mm.remove(f);
            let g = fnet.mm.add(&path);
            debug_assert_eq!(f, g, "a removed flow's slot is reused at once");
            let fl = &mut fnet.flows[f as usize];
            fl.gen = fl.gen.wrapping_add(1); // its scheduled end no longer holds
            fnet.dirty = true;
        }
        self.flow_tick_at(now);
    }

    /// Count what flow `f` has sent by `now`, beyond what was counted
    /// before, on its path's ports and its QPs (packets and payload in
    /// proportion to its wire bytes): before it leaves a path, and when a
    /// run stops with it under way.
    fn flow_count_sent(&mut self, f: u32, now: Time) {
        let Net { flow, ports, .. } = self;
        let fnet = flow.as_mut().expect("flow backend");
        let old = fnet.mm.rate_bps(f);
        fnet.settle(f, now, old);
        let fl = &mut fnet.flows[f as usize];
        let total = fl.wire_bytes.max(1);
        let sent = ((fl.wire_bytes as f64 - fl.rem_bytes).max(0.0) as u64).min(fl.wire_bytes);
        let share = |n: u64| (n as u128 * sent as u128 / total as u128) as u64;
        let wire = sent.saturating_sub(fl.counted_wire);
        let pkts = (share(fl.npkts as u64) as u32).saturating_sub(fl.counted_pkts);
        let payload = share(fl.payload).saturating_sub(fl.counted_payload);
        fl.counted_wire += wire;
        fl.counted_pkts += pkts;
        fl.counted_payload += payload;
        let q = fl.qp;
        count_ports(ports, fnet.mm.path(f), wire, pkts);
        let peer = fnet.qps[q as usize].peer_qp;
        let c = &mut fnet.qps[q as usize].counters;
        c.tx_payload_bytes += payload;
        c.tx_packets += pkts as u64;
        fnet.qps[peer as usize].counters.rx_payload_bytes += payload;
    }

    /// The run stops (a time limit, an interruption, or its foreground
    /// work done): count what the flows under way have sent by now, as
    /// the packet engine's counters have it packet by packet.
    pub(crate) fn flow_count_under_way(&mut self) {
        let now = self.now();
        let Some(fnet) = self.flow.as_deref() else {
            return;
        };
        let active: Vec<u32> = (fnet.qps.iter())
            .map(|qp| qp.flow)
            .filter(|&f| f != u32::MAX)
            .collect();
        for f in active {
            self.flow_count_sent(f, now);
        }
    }

    /// Wire bytes of a message: (total, last packet, packets).
    fn flow_wire(&self, kind: MsgKind, bytes: u64) -> (u64, u32, u32) {
        if kind == MsgKind::Tcp {
            return self.flow_tcp_wire(bytes);
        }
        if let Some((mulpdu, vlan, ts)) = self.flow.as_ref().and_then(|f| f.iwarp) {
            let ddp = match kind {
                MsgKind::Write | MsgKind::ReadResp => Ddp::Tagged,
                MsgKind::Send => Ddp::Untagged,
                MsgKind::ReadReq => Ddp::ReadRequest,
                MsgKind::Tcp => unreachable!("TCP bytes are framed above"),
            };
            let payload = if kind == MsgKind::ReadReq { 0 } else { bytes };
            let per = (mulpdu - ddp.header_bytes()) as u64;
            let seg = |p: u64| {
                let fpdu = crate::wire::mpa_fpdu_bytes(ddp.header_bytes() + p as u32, true);
                crate::wire::iwarp_wire_bytes(fpdu, vlan, ts)
            };
            let n = payload.div_ceil(per).max(1);
            let last_p = payload - (n - 1) * per;
            let last = seg(last_p);
            return ((n - 1) * seg(per) as u64 + last as u64, last, n as u32);
        }
        let mtu = self.p.mtu as u64;
        if kind == MsgKind::ReadReq {
            let w = self.p.wire_bytes(0, Ext::Reth);
            return (w as u64, w, 1);
        }
        let n = bytes.div_ceil(mtu).max(1);
        let last_p = (bytes - (n - 1) * mtu) as u32;
        let (first_ext, mid_ext, last_ext) = match kind {
            MsgKind::Write => (Ext::Reth, Ext::None, Ext::None),
            MsgKind::ReadResp => (Ext::Aeth, Ext::None, Ext::Aeth),
            _ => (Ext::None, Ext::None, Ext::None),
        };
        if n == 1 {
            let w = self.p.wire_bytes(last_p, first_ext);
            return (w as u64, w, 1);
        }
        let first = self.p.wire_bytes(mtu as u32, first_ext) as u64;
        let mid = self.p.wire_bytes(mtu as u32, mid_ext) as u64;
        let last = self.p.wire_bytes(last_p, last_ext);
        (first + (n - 2) * mid + last as u64, last, n as u32)
    }

    /// When one packet of `wire` bytes whose serialisation at the first
    /// port of `path` starts at `start` reaches the end of the path (last
    /// bit in), on idle ports: the packet engine's per-hop arithmetic.
    fn flow_packet_arrival(
        &self,
        path: impl IntoIterator<Item = u32>,
        start: Time,
        wire: u32,
    ) -> Time {
        self.flow_packet_behind(path, (start, wire), None)
    }

    /// When the last packet `(start, wire)` reaches the end of `path`, the
    /// packet `ahead` (its start and size) in front of it: at every hop the
    /// last packet starts when it is in and the port has sent the one
    /// ahead (FIFO), on ports otherwise idle.
    fn flow_packet_behind(
        &self,
        path: impl IntoIterator<Item = u32>,
        (start, wire): (Time, u32),
        ahead: Option<(Time, u32)>,
    ) -> Time {
        let (mut now, mut rx_end) = (start, start);
        let mut prev = ahead.map(|(t, w)| (t, t, w as u64));
        let mut path = path.into_iter().peekable();
        while let Some(pi) = path.next() {
            let next = path.peek().copied();
            if let Some((p_now, p_rx, w)) = prev {
                let (p_tx_end, p_end, p_arrive) = self.flow_hop(pi, next, p_now, p_rx, w);
                now = now.max(p_tx_end);
                prev = Some((p_arrive, p_end, w));
            }
            let (_, end, arrive) = self.flow_hop(pi, next, now, rx_end, wire as u64);
            (now, rx_end) = (arrive, end);
        }
        now
    }

    /// `Port::hop` of port `pi` for a packet whose next port is `next`
    /// (None at the path's end): a cut-through switch stores and forwards
    /// into a port faster than `pi`'s link, as `Net::start_tx` has it.
    fn flow_hop(
        &self,
        pi: u32,
        next: Option<u32>,
        now: Time,
        rx_end: Time,
        wire: u64,
    ) -> (Time, Time, Time) {
        let port = &self.ports[pi as usize];
        let stores =
            port.ct_underrun && next.is_some_and(|n| self.ports[n as usize].rate > port.rate);
        let ct = self.p.cut_through && !stores;
        port.hop(now, rx_end, wire, ct, self.p.switch_latency)
    }

    /// When flow `f`, whose fluid transfer ends at `at`, has its last
    /// packet at the end of its path (last bit in); and when that packet
    /// started at the host, were the fluid's end its last byte out.
    ///
    /// The fluid runs at the pace of its bottleneck link `b` (the max-min
    /// solution's, the host's own port when the flow has none): the stream
    /// reaches `b` when its first packet does, `D_before(b)` after it left
    /// the host on idle ports, and `b` ends the last packet `at +
    /// D_before(b)`; from there the last packet crosses the rest of the
    /// path behind the packet before it (a short last packet does not
    /// overtake a full one through store-and-forward switches). With `b`
    /// the host port this is the last packet leaving the host at `at`; a
    /// slower link further on is crossed once, at the fluid's pace, not
    /// again by the last packet.
    fn flow_tail(&self, f: u32, at: Time) -> (Time, Time) {
        let fnet = self.flow.as_ref().expect("flow backend");
        let (mm, fl) = (&fnet.mm, &fnet.flows[f as usize]);
        let path: Vec<u32> = mm.path(f).collect();
        let host = &self.ports[path[0] as usize];
        let last = fl.last_wire;
        let start_last = Time(at.0.saturating_sub(host.rate.tx_time(last as u64).0));
        let b = mm.bottleneck_of(f);
        let bi = path.iter().position(|&p| p == b).unwrap_or(0);
        let arrive = self.tail_from(&path, bi, at, (fl.wire_bytes, last, fl.npkts));
        (start_last, arrive)
    }

    /// When the last packet of a message of `wire_bytes` in `npkts`
    /// packets, the last `last` bytes, is at the end of `path` (last bit
    /// in), its fluid transfer ending at `at` at the pace of the link out
    /// of `path[bi]` ([`Net::flow_tail`]).
    fn tail_from(
        &self,
        path: &[u32],
        bi: usize,
        at: Time,
        (wire_bytes, last, npkts): (u64, u32, u32),
    ) -> Time {
        // The packets before the last: full ones (their mean size, the
        // first's extension header spread over them).
        let full = if npkts > 1 {
            ((wire_bytes - last as u64) / (npkts as u64 - 1)) as u32
        } else {
            last
        };
        let (mut now, mut rx_end) = (Time::ZERO, Time::ZERO);
        for (k, &pi) in path[..bi].iter().enumerate() {
            let (_, end, arrive) =
                self.flow_hop(pi, path.get(k + 1).copied(), now, rx_end, full as u64);
            (now, rx_end) = (arrive, end);
        }
        let d_before = now - Time::ZERO;
        let rate_b = self.ports[path[bi] as usize].rate;
        let end_b = at + d_before;
        let start_b = Time(end_b.0.saturating_sub(rate_b.tx_time(last as u64).0));
        let ahead = (npkts > 1).then(|| {
            (
                Time(start_b.0.saturating_sub(rate_b.tx_time(full as u64).0)),
                full,
            )
        });
        self.flow_packet_behind(path[bi..].iter().copied(), (start_b, last), ahead)
    }

    /// QP `q` may send now (`Ev::FlowStart`), or its packet has just
    /// left its host (`Ev::FlowNext`, `after_packet`).
    pub(crate) fn on_flow_start(&mut self, q: u32, after_packet: bool) {
        let now = self.now();
        self.flow_advance(q, now, None, after_packet);
    }

    /// QP `q` may send from `t` (now, or later within the batching
    /// quantum); `ended` is its flow whose message just ended. A READ
    /// request or a small message at the head goes as a packet; the next
    /// data message continues `ended` or starts a flow; with nothing ready
    /// the QP waits or idles. `after_packet`: the QP's own packet has just
    /// left the host (a next packet waits a whole NIC round).
    fn flow_advance(&mut self, q: u32, t: Time, ended: Option<u32>, after_packet: bool) {
        let now = self.now();
        let fnet = self.flow.as_mut().expect("flow backend");
        if ended.is_some() && !(fnet.continue_flows && self.ar.is_none()) {
            // The next message gets a flow of its own, started at `t`.
            self.flow_release(q, ended, t);
            return;
        }
        let before = match (ended, after_packet) {
            (Some(_), _) => Before::Flow,
            (None, true) => Before::Packet,
            (None, false) => Before::Idle,
        };
        loop {
            let fnet = self.flow.as_mut().expect("flow backend");
            match fnet.qps[q as usize].msgs.front().copied() {
                Some(m) if m.ready <= t && m.kind == MsgKind::ReadReq => {
                    // Packets with their turns at the NIC, like a small
                    // message; the QP is busy until they have left (on
                    // iWARP they go on at once, in the TCP stream).
                    fnet.qps[q as usize].msgs.pop_front();
                    if let Some(out) = self.flow_read_request(q, m, t, before) {
                        self.flow_leave(q, ended);
                        self.q.schedule(out, Ev::FlowNext(q));
                        return;
                    }
                }
                Some(m) if m.ready <= t && self.flow_is_small(q, &m) => {
                    // Sent as a packet. The QP stays busy until it is out
                    // of the host, so that nothing posted meanwhile
                    // overtakes it.
                    if let Some(out) = self.flow_small_send(q, t, before) {
                        self.flow_leave(q, ended);
                        self.q.schedule(out, Ev::FlowNext(q));
                        return;
                    }
                    break; // a link of its path is down: a flow waits there
                }
                Some(m) if m.ready <= t => break,
                _ => {
                    self.flow_release(q, ended, t);
                    return;
                }
            }
        }
        let fl = self.flow_take(q, t);
        let fnet = self.flow.as_mut().expect("flow backend");
        fnet.stats.flows += 1;
        match ended {
            // Same path, same share: what it has to send from now is the
            // new message plus what the old one had left between now and `t`.
            Some(f) => {
                fnet.stats.continued += 1;
                let rate = fnet.mm.rate_bps(f);
                let gen = fnet.flows[f as usize].gen;
                fnet.flows[f as usize] = Flow {
                    rem_bytes: fl.wire_bytes as f64 + rate * (t - now).0 as f64 / 8e12,
                    last: now,
                    gen,
                    ..fl
                };
                // The tick that ended the old message schedules the end.
                fnet.schedule_finish(f, now);
            }
            None => {
                debug_assert_eq!(t, now, "a new flow starts now");
                let f = self.with_path(q, |net, path| {
                    net.flow_audit_path(q, path);
                    net.flow.as_mut().expect("flow backend").mm.add(path)
                });
                let fnet = self.flow.as_mut().expect("flow backend");
                fnet.qps[q as usize].flow = f;
                fnet.stats.peak_active = fnet.stats.peak_active.max(fnet.mm.active() as u64);
                if f as usize == fnet.flows.len() {
                    fnet.flows.push(fl);
                } else {
                    let gen = fnet.flows[f as usize].gen;
                    fnet.flows[f as usize] = Flow { gen, ..fl };
                }
                fnet.dirty = true;
                self.flow_tick_at(now);
            }
        }
    }

    /// QP `q` has no flow from `t`: `ended` (if any) leaves the links, and
    /// the QP's next message starts a flow when ready (not before `t`) or
    /// the QP goes idle.
    fn flow_release(&mut self, q: u32, ended: Option<u32>, t: Time) {
        self.flow_leave(q, ended);
        let fnet = self.flow.as_mut().expect("flow backend");
        let qp = &mut fnet.qps[q as usize];
        match qp.msgs.front() {
            // Ready as its own flow ends: a packet of it waits a whole
            // round, as when the flow is continued (`Before::Flow`).
            Some(next) if ended.is_some() && next.ready <= t => self.q.schedule(t, Ev::FlowNext(q)),
            Some(next) => self.q.schedule(next.ready.max(t), Ev::FlowStart(q)),
            None => qp.busy = false,
        }
    }

    /// QP `q` has no flow: `ended` (if any) leaves the links.
    fn flow_leave(&mut self, q: u32, ended: Option<u32>) {
        let fnet = self.flow.as_mut().expect("flow backend");
        if let Some(f) = ended {
            fnet.mm.remove(f);
            fnet.dirty = true;
        }
        fnet.qps[q as usize].flow = u32::MAX;
    }

    /// Take QP `q`'s head message (ready by `t`) as a flow's load; READ
    /// responses that are ready behind an unsignaled one run on with it,
    /// up to the first signaled one (the fragments of one transfer: no
    /// completion comes between them, so one flow carries them exactly as
    /// a chain of continued flows would).
    fn flow_take(&mut self, q: u32, t: Time) -> Flow {
        let fnet = self.flow.as_mut().expect("flow backend");
        let merge = fnet.continue_flows;
        let m = pop_one(&mut fnet.qps[q as usize].msgs).expect("a message is ready");
        let (mut wire_bytes, mut last_wire, mut npkts) = self.flow_wire(m.kind, m.bytes);
        let mut fl = Flow {
            qp: q,
            msg: m,
            count: 1,
            payload: m.bytes,
            wire_bytes: 0,
            last_wire: 0,
            npkts: 0,
            rem_bytes: 0.0,
            last: t,
            gen: 0,
            counted_wire: 0,
            counted_pkts: 0,
            counted_payload: 0,
        };
        while merge && fl.msg.kind == MsgKind::ReadResp && !fl.msg.notify {
            let fnet = self.flow.as_mut().expect("flow backend");
            let msgs = &mut fnet.qps[q as usize].msgs;
            let Some(&n) = msgs.front() else { break };
            if n.kind != MsgKind::ReadResp || n.ready > t {
                break;
            }
            // Unsignaled ones all at once; a signaled one ends the run.
            let k = if n.notify {
                pop_one(msgs);
                1
            } else {
                msgs.pop_front();
                n.reps
            };
            fnet.stats.merged += k as u64;
            let (w, lw, np) = self.flow_wire(n.kind, n.bytes);
            wire_bytes += k as u64 * w;
            npkts += k * np;
            last_wire = lw;
            fl.msg = Msg { reps: 1, ..n };
            fl.count += k;
            fl.payload += k as u64 * n.bytes;
        }
        fl.wire_bytes = wire_bytes;
        fl.last_wire = last_wire;
        fl.npkts = npkts;
        fl.rem_bytes = wire_bytes as f64;
        fl
    }

    /// READ requests of QP `q` (`m.reps` of them, one packet each) are
    /// sent from `t` (`before`: what the QP did just before). Like an
    /// ACK a request takes no bandwidth in the fluid shares, but on RoCE
    /// and InfiniBand it waits its turn at the NIC and at the ports as a
    /// small message does (`small.rs`: the packet engine's NIC serves a
    /// request as a packet of its QP, round-robin with the other QPs'
    /// data), each further request of the entry one round later; returns
    /// when the last has left the host (the QP is busy until then). On
    /// iWARP, whose requests ride the connection's TCP stream, they cross
    /// the path at once on idle ports and the QP goes on (None). On a path
    /// with a link down they go all the same (a request is not a flow that
    /// could wait there). The responder's QP queues the responses when the
    /// first request arrives.
    fn flow_read_request(&mut self, q: u32, m: Msg, t: Time, before: Before) -> Option<Time> {
        let (wire, _, npkts) = self.flow_wire(MsgKind::ReadReq, m.bytes);
        let npkts = npkts * m.reps;
        let iwarp = self.flow.as_ref().expect("flow backend").iwarp.is_some();
        let (out, arrive) = if iwarp {
            let arrive = self.with_path(q, |net, path| {
                count_ports(
                    &mut net.ports,
                    path.iter().copied(),
                    wire * m.reps as u64,
                    npkts,
                );
                net.flow_packet_arrival(path.iter().copied(), t, wire as u32)
            });
            (None, arrive)
        } else {
            debug_assert_eq!(npkts, m.reps, "a READ request is one packet");
            let (out, arrive) = self
                .flow_one_packet(q, t, before, (wire, m.reps), false)
                .expect("READ requests go whatever the links");
            (Some(out), arrive)
        };
        let fnet = self.flow.as_mut().expect("flow backend");
        let peer = fnet.qps[q as usize].peer_qp;
        fnet.qps[q as usize].counters.tx_packets += npkts as u64;
        // The responder queues the response when the request arrives (as
        // the packet engine does), behind what its QP has posted by then.
        self.flow_later(arrive, Later::ReadArrive { peer, m });
        out
    }

    /// Do `what` at `at`.
    fn flow_later(&mut self, at: Time, what: Later) {
        let fnet = self.flow.as_mut().expect("flow backend");
        let slot = match fnet.later_free.pop() {
            Some(i) => {
                fnet.later[i as usize] = what;
                i
            }
            None => {
                fnet.later.push(what);
                fnet.later.len() as u32 - 1
            }
        };
        self.q.schedule(at, Ev::FlowLater(slot));
    }

    pub(crate) fn on_flow_later(&mut self, slot: u32) {
        let fnet = self.flow.as_mut().expect("flow backend");
        let what = fnet.later[slot as usize];
        fnet.later_free.push(slot);
        match what {
            // The responder reads host memory and queues the response on
            // its READ responder stream, beside its own posted work (on
            // iWARP in order in the QP's TCP stream, as the packet engine).
            Later::ReadArrive { peer, m } => {
                let iwarp = fnet.iwarp.is_some();
                let ready = self.now() + self.p.nic_rx + self.p.nic_tx;
                let r = if iwarp {
                    peer
                } else {
                    self.flow_read_responder(peer)
                };
                self.flow_push(
                    r,
                    Msg {
                        kind: MsgKind::ReadResp,
                        ready,
                        ..m
                    },
                );
            }
            Later::TcpRx { conn, bytes, segs } => self.flow_tcp_rx(conn, bytes, segs),
            Later::TcpAck {
                conn,
                bytes,
                segs,
                rtt,
                rate_bps,
            } => self.flow_tcp_ack(conn, (bytes, segs), rtt, rate_bps),
        }
    }

    fn flow_tick_at(&mut self, at: Time) {
        let fnet = self.flow.as_mut().expect("flow backend");
        if at < fnet.tick_at {
            fnet.tick_at = at;
            self.q.schedule(at, Ev::FlowTick);
        }
    }

    pub(crate) fn on_flow_tick(&mut self) {
        let now = self.now();
        let fnet = self.flow.as_mut().expect("flow backend");
        if fnet.tick_at != now {
            return; // superseded by an earlier tick
        }
        fnet.tick_at = Time::NEVER;
        // Completions due within the quantum.
        let horizon = now.0.saturating_add(fnet.quantum.0);
        let mut done = Vec::new();
        while let Some(&Reverse((at, f, gen))) = fnet.heap.peek() {
            if at > horizon {
                break;
            }
            fnet.heap.pop();
            if fnet.flows[f as usize].gen == gen {
                fnet.flows[f as usize].gen = gen.wrapping_add(1);
                done.push((Time(at.max(now.0)), f));
            }
        }
        if done.len() > 1 {
            fnet.stats.batched += done.len() as u64 - 1;
        }
        for (at, f) in done {
            self.flow_complete(f, at);
        }
        let fnet = self.flow.as_mut().expect("flow backend");
        if fnet.dirty {
            fnet.dirty = false;
            let mut changed = std::mem::take(&mut fnet.changed);
            changed.clear();
            let before = fnet.mm.refilled;
            fnet.mm.solve(&mut changed);
            fnet.stats.solves += 1;
            fnet.stats.flows_refilled += fnet.mm.refilled - before;
            if let Some(a) = fnet.audit.as_deref_mut() {
                a.check_solve(&fnet.mm, &changed);
            }
            for &(f, old) in &changed {
                fnet.settle(f, now, old);
                fnet.schedule_finish(f, now);
            }
            fnet.changed = changed;
            // Keep the heap from filling with superseded entries.
            if fnet.heap.len() > 4 * fnet.mm.active() + 4096 {
                let flows = &fnet.flows;
                let live: Vec<_> = fnet
                    .heap
                    .drain()
                    .filter(|Reverse((_, f, g))| flows[*f as usize].gen == *g)
                    .collect();
                fnet.heap = live.into();
            }
        }
        // Next tick: the earliest live completion.
        let fnet = self.flow.as_mut().expect("flow backend");
        while let Some(&Reverse((at, f, gen))) = fnet.heap.peek() {
            if fnet.flows[f as usize].gen == gen {
                self.flow_tick_at(Time(at));
                break;
            }
            fnet.heap.pop();
        }
    }

    /// Messages of QP `q` (owned by `app`), `m` the last, `count` of them
    /// with `bytes` of payload, are complete: count them and, if `m` is
    /// signaled, tell the owner at `at`.
    fn flow_message_done(
        &mut self,
        q: u32,
        app: u32,
        m: Msg,
        (count, bytes): (u32, u64),
        op: OpKind,
        at: Time,
    ) {
        let fnet = self.flow.as_mut().expect("flow backend");
        if let Some(a) = fnet.audit.as_deref_mut() {
            a.done += count as u64;
        }
        let qp = &mut fnet.qps[q as usize];
        qp.counters.acked_bytes += bytes;
        qp.counters.messages_done += count as u64;
        // A READ response lands on the requester's responder stream and
        // completes on the QP that posted the READ.
        let owner = stream_owner(q, qp.owner);
        if m.notify {
            let ev = AppEvent::Completed {
                qp: QpId(owner),
                token: m.token,
                op,
            };
            self.deliver(at, app, ev);
        }
    }

    /// WRITE or SEND messages of QP `q`, `m` the last, `count` of them
    /// with `payload` bytes, whose last bit reached the peer's host at
    /// `arrive`: `Received` the NIC's receive latency later, `Completed`
    /// when the ACK (no bandwidth) is back.
    fn flow_delivered(&mut self, q: u32, m: Msg, (count, payload): (u32, u64), arrive: Time) {
        let fnet = self.flow.as_ref().expect("flow backend");
        let (peer, app) = (fnet.qps[q as usize].peer_qp, fnet.qps[q as usize].app);
        let peer_app = fnet.qps[peer as usize].app;
        let op = if m.kind == MsgKind::Write {
            OpKind::Write
        } else {
            OpKind::Send
        };
        let nic_rx = self.p.nic_rx;
        self.deliver(
            arrive + nic_rx,
            peer_app,
            AppEvent::Received {
                qp: QpId(peer),
                token: m.token,
                bytes: m.bytes,
                op,
            },
        );
        let ack = self.p.wire_bytes(0, Ext::Aeth);
        let acked = self.flow_ack_arrival(q, arrive + nic_rx, ack);
        self.flow_message_done(q, app, m, (count, payload), op, acked + nic_rx);
    }

    /// Flow `f` has sent its last byte at `at`: count it, tell the
    /// workloads, start the QP's next message.
    fn flow_complete(&mut self, f: u32, at: Time) {
        let fnet = self.flow.as_mut().expect("flow backend");
        if let Some(a) = fnet.audit.as_deref_mut() {
            let fl = &fnet.flows[f as usize];
            let dt = at.0.saturating_sub(fl.last.0);
            a.check_end(f, fl.rem_bytes, fnet.mm.rate_bps(f), dt, fl.wire_bytes);
        }
        let fl = &fnet.flows[f as usize];
        let (q, m) = (fl.qp, fl.msg);
        // Less what was counted on the paths it left.
        let (wire, npkts) = (fl.wire_bytes - fl.counted_wire, fl.npkts - fl.counted_pkts);
        let (peer, peer_app) = {
            let qp = &fnet.qps[q as usize];
            (qp.peer_qp, fnet.qps[qp.peer_qp as usize].app)
        };
        let Net { flow, ports, .. } = self;
        let mm = &flow.as_ref().expect("flow backend").mm;
        count_ports(ports, mm.path(f), wire, npkts);
        let (start_last, arrive) = self.flow_tail(f, at);
        let nic_rx = self.p.nic_rx;
        let (count, payload, counted) = {
            let fl = &self.flow.as_ref().expect("flow backend").flows[f as usize];
            (fl.count, fl.payload, fl.counted_payload)
        };
        {
            // Less what was counted while it was under way.
            let fnet = self.flow.as_mut().expect("flow backend");
            let c = &mut fnet.qps[q as usize].counters;
            c.tx_payload_bytes += payload - counted;
            c.tx_packets += npkts as u64;
            fnet.qps[peer as usize].counters.rx_payload_bytes += payload - counted;
        }
        match m.kind {
            MsgKind::Write | MsgKind::Send => {
                self.flow_delivered(q, m, (count, payload), arrive);
            }
            MsgKind::ReadResp => self.flow_message_done(
                peer,
                peer_app,
                m,
                (count, payload),
                OpKind::Read,
                arrive + nic_rx,
            ),
            MsgKind::Tcp => {
                let fnet = self.flow.as_ref().expect("flow backend");
                let (conn, rate_bps) = (fnet.qps[q as usize].tcp, fnet.mm.rate_bps(f));
                self.flow_tcp_sent(q, conn, (payload, npkts), (start_last, arrive), rate_bps);
            }
            MsgKind::ReadReq => unreachable!("READ requests are not flows"),
        }
        // The QP's next message follows its last byte out.
        self.flow_advance(q, at, Some(f), false);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{preset, Backend};
    use crate::net::verbs::{AppEvent, OpKind};
    use crate::net::Net;
    use crate::net::QpId;
    use crate::rng::Rng;
    use crate::sim::App;
    use crate::sim::{Outcome, Sim};
    use crate::traffic::flows::{FlowSpec, Flows};

    fn run(from_scratch: bool, quantum_ns: f64) -> Vec<(Option<u64>, Option<u64>)> {
        let mut spec = preset("fat-tree").unwrap();
        spec.sim.backend = Backend::Flow;
        spec.sim.flow_quantum_ns = quantum_ns;
        let mut net = Net::new(&spec, 3).unwrap();
        net.flow.as_mut().unwrap().mm.from_scratch = from_scratch;
        // Random sizes and start times over the 128 hosts: flows start and
        // end all through the run, on shared and unshared links.
        let mut rng = Rng::new(11, 2);
        let n = net.n_hosts() as u64;
        let flows: Vec<FlowSpec> = (0..3000)
            .map(|_| {
                let s = rng.next_u64() % n;
                let d = (s + 1 + rng.next_u64() % (n - 1)) % n;
                FlowSpec {
                    src: format!("h{s}"),
                    dst: format!("h{d}"),
                    bytes: 1000 + rng.next_u64() % 400_000,
                    op: "write".into(),
                    start_us: (rng.next_u64() % 200) as f64,
                    priority: None,
                    repeat: false,
                    via: None,
                    return_via: None,
                }
            })
            .collect();
        let app = Flows::new(&net, &flows).unwrap();
        let mut sim = Sim::new(net);
        let id = sim.add_app(Box::new(app));
        assert_eq!(sim.run(None), Outcome::Finished);
        let res = sim.app::<Flows>(id).unwrap().results();
        res.iter()
            .map(|r| (r.delivered_ps, r.completed_ps))
            .collect()
    }

    /// Chains of messages posted at once on QPs that share links (WRITEs,
    /// SENDs and READs, whose responses chain on the responders' QPs), some
    /// posted later so that chains start, end and restart: every time seen.
    struct Chains {
        /// (src, dst, op, message bytes, messages, post time us, only the
        /// last signaled, as the MPI layer posts a transfer's fragments)
        plan: Vec<(u32, u32, OpKind, u64, u32, u64, bool)>,
        qps: Vec<QpId>,
        seen: Vec<(u64, u64)>,
        left: usize,
    }
    impl App for Chains {
        fn start(&mut self, net: &mut Net, me: u32) {
            for (i, &(a, b, _, _, n, at_us, last_only)) in self.plan.iter().enumerate() {
                let (q, _) = net.connect(a, b, me, me, None).unwrap();
                self.qps.push(q);
                self.left += if last_only { 1 } else { n as usize };
                net.set_app_timer(me, crate::units::Time::us(at_us), i as u64);
            }
        }
        fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
            match ev {
                AppEvent::Timer { token } => {
                    let (_, _, op, bytes, n, _, last_only) = self.plan[token as usize];
                    let q = self.qps[token as usize];
                    for k in 0..n {
                        if last_only && k + 1 < n {
                            net.post_unsignaled(q, op, bytes, token * 1000).unwrap();
                        } else {
                            net.post(q, op, bytes, token * 1000 + k as u64).unwrap();
                        }
                    }
                }
                AppEvent::Completed { token, .. } => {
                    self.seen.push((token, net.now().0));
                    self.left -= 1;
                }
                AppEvent::Received { token, .. } => {
                    self.seen.push(((1 << 40) + token, net.now().0))
                }
                _ => {}
            }
        }
        fn done(&self) -> bool {
            self.left == 0 && !self.qps.is_empty()
        }
    }

    fn chains(continue_flows: bool) -> (Vec<(u64, u64)>, u64) {
        let mut spec = preset("fat-tree").unwrap();
        spec.sim.backend = Backend::Flow;
        spec.sim.flow_quantum_ns = 0.0;
        let mut net = Net::new(&spec, 5).unwrap();
        net.flow.as_mut().unwrap().continue_flows = continue_flows;
        let plan = vec![
            (0, 40, OpKind::Write, 65_536, 20, 0, false),
            (1, 40, OpKind::Send, 100_000, 12, 0, false),
            (2, 41, OpKind::Read, 524_288, 6, 0, false),
            (40, 3, OpKind::Write, 4_096, 50, 3, false),
            (5, 40, OpKind::Write, 1_000_000, 3, 20, false),
            (2, 41, OpKind::Read, 30_000, 8, 100, false),
            (6, 7, OpKind::Send, 9_000, 30, 1, false),
            // Rendezvous-like READ transfers both ways on one pair of
            // hosts, fragments unsignaled but the last.
            (8, 9, OpKind::Read, 524_288, 16, 0, true),
            (9, 8, OpKind::Read, 524_288, 9, 2, true),
            (8, 40, OpKind::Read, 100_000, 5, 30, true),
        ];
        let app = Chains {
            plan,
            qps: vec![],
            seen: vec![],
            left: 0,
        };
        let mut sim = Sim::new(net);
        let id = sim.add_app(Box::new(app));
        assert_eq!(sim.run(None), Outcome::Finished);
        let st = sim.net.flow_stats().unwrap();
        if continue_flows {
            // 24 since READ requests wait their turn at the NIC (they
            // arrive spaced by it, so fewer responses are ready together).
            assert!(st.merged >= 20, "{} READ responses merged", st.merged);
        }
        let continued = st.continued;
        let mut seen = sim.app::<Chains>(id).unwrap().seen.clone();
        seen.sort();
        (seen, continued)
    }

    /// A message that continues its QP's flow, and READ responses run
    /// together in one flow, end when they would as flows of their own
    /// started at the same instants (float rounding: a few ps).
    #[test]
    fn continued_flows_end_as_separate_flows_would() {
        let (separate, none) = chains(false);
        let (continued, n) = chains(true);
        assert_eq!(none, 0);
        assert!(n > 100, "{n} messages continued their QP's flow");
        assert_eq!(separate.len(), continued.len());
        let mut worst = 0;
        for (a, b) in separate.iter().zip(&continued) {
            assert_eq!(a.0, b.0);
            worst = worst.max(a.1.abs_diff(b.1));
        }
        println!("{n} continued, worst difference {worst} ps");
        assert!(worst <= 10, "{worst} ps");
    }

    /// A's READ from B leaves at once (A's host is idle); B posts a 1 MiB
    /// WRITE to A on the same QP pair while the request is on its way. The response goes out on
    /// B's READ responder stream beside the WRITE, not behind it: the two
    /// share B's link, on both backends.
    struct ReadBehindWrite {
        qps: Option<(QpId, QpId)>,
        read_done: Option<u64>,
        write_done: Option<u64>,
    }
    impl App for ReadBehindWrite {
        fn start(&mut self, net: &mut Net, me: u32) {
            let (a, b) = net.connect(0, 40, me, me, None).unwrap();
            self.qps = Some((a, b));
            net.post(a, OpKind::Read, 65_536, 1).unwrap();
            // After the request has left A (NIC latency), before it reaches B.
            net.set_app_timer(me, crate::units::Time::ns(1500), 0);
        }
        fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
            match ev {
                AppEvent::Timer { .. } => {
                    let b = self.qps.unwrap().1;
                    net.post(b, OpKind::Write, 1 << 20, 2).unwrap();
                }
                AppEvent::Completed { token: 1, .. } => self.read_done = Some(net.now().0),
                AppEvent::Completed { token: 2, .. } => self.write_done = Some(net.now().0),
                _ => {}
            }
        }
        fn done(&self) -> bool {
            self.read_done.is_some() && self.write_done.is_some()
        }
    }

    #[test]
    fn a_read_response_shares_the_link_with_what_the_responder_posted() {
        let mut times = Vec::new();
        for backend in [Backend::Packet, Backend::Flow] {
            let mut spec = preset("fat-tree").unwrap();
            spec.sim.backend = backend;
            let net = Net::new(&spec, 5).unwrap();
            let mut sim = Sim::new(net);
            let id = sim.add_app(Box::new(ReadBehindWrite {
                qps: None,
                read_done: None,
                write_done: None,
            }));
            assert_eq!(sim.run(None), Outcome::Finished);
            let app = sim.app::<ReadBehindWrite>(id).unwrap();
            times.push((app.read_done.unwrap(), app.write_done.unwrap()));
        }
        let (packet, flow) = (times[0], times[1]);
        println!("packet {packet:?} flow {flow:?} (read, write done, ps)");
        // 64 KiB at half of 100G is 10.5 us, 1 MiB alone 84 us: the READ
        // ends within a few us of the first, long before the WRITE.
        for (read, write) in [packet, flow] {
            assert!(
                read > 10_500_000 && read < 16_000_000,
                "READ done at {read} ps"
            );
            assert!(write > 84_000_000, "WRITE done at {write} ps");
        }
        let rel = (flow.0 as f64 - packet.0 as f64).abs() / packet.0 as f64;
        assert!(
            rel < 0.01,
            "READ done {} ps on the flow backend, {} ps on the packet engine",
            flow.0,
            packet.0
        );
    }

    /// The incremental solves give the completion times of refilling every
    /// flow at every change, to within float rounding (rates equal to 1e-9
    /// keep their scheduled end: a few ps).
    #[test]
    fn incremental_run_equals_refilling_everything() {
        let exact = run(true, 0.0);
        let inc = run(false, 0.0);
        let worst = exact
            .iter()
            .zip(&inc)
            .map(|(a, b)| a.0.unwrap().abs_diff(b.0.unwrap()))
            .max()
            .unwrap();
        println!("worst difference {worst} ps");
        assert!(worst <= 100, "{worst} ps");
    }

    /// Batching completions within a quantum moves completion times by
    /// little at the default 10 ns, and by more for short flows as the
    /// quantum grows (figures in docs/benchmarks.md).
    #[test]
    fn batching_error_is_small() {
        let exact = run(false, 0.0);
        for (q, bound) in [(10.0, 1e-3), (100.0, 1e-2), (1000.0, 0.2)] {
            let batched = run(false, q);
            let worst = exact
                .iter()
                .zip(&batched)
                .map(|(a, b)| {
                    let (x, y) = (a.1.unwrap() as f64, b.1.unwrap() as f64);
                    (y - x).abs() / x
                })
                .fold(0.0, f64::max);
            println!("quantum {q} ns: worst relative change of a completion {worst:.2e}");
            assert!(worst < bound, "{worst}");
        }
    }
}
