//! Link failures: a cable pulled at a given time, what is lost with it, and
//! how routing catches up.
//!
//! When a link goes down, both directions stop at once: the packets on its
//! wires and in the egress queues of its two ports are lost (counted as
//! `lost_packets` / `lost_bytes` of the port), PFC pauses on it end, and
//! whatever is routed to a dead port is lost there too. Routing then
//! catches up in two steps (`[failover]` in the fabric):
//!
//! - after `detect_us`, the two nodes at the ends of the link stop using it
//!   (loss of signal; hardware ECMP member removal). A switch whose only
//!   way towards a destination was that link now has no route and loses
//!   the packets (a spine that lost its only cable to a leaf, until the
//!   other leaves stop sending through it);
//! - after `converge_us`, every switch routes around it (the routing
//!   protocol's withdrawal and FIB updates): the forwarding tables are those
//!   of the fabric without the link, shortest paths over every remaining
//!   link, as a link-state IGP computes them. A spine that lost its cable
//!   to a leaf therefore sends what still reaches it for that leaf down
//!   to another leaf and up through another spine (a valley path), and
//!   PFC may pause in both directions on the links it uses. An eBGP Clos
//!   whose spines share one AS number (RFC 7938) has no such path: that
//!   spine drops the packets instead. Not modelled: BGP's path rules.
//!
//! A link that comes back up carries traffic at once; its ends use it again
//! after `detect_us` and the rest of the fabric after `converge_us` (but a
//! link the fabric had converged without is used again only at
//! `converge_us`: the shortest paths are computed once for all switches).
//! ECMP is not resilient: when a group loses or regains a member, the
//! flows of that group are re-hashed over the new member list.
//!
//! RC QPs recover what was lost by their retransmission timeout (or a NAK
//! when later packets take another path); TCP by its own. A QP whose peer
//! stays unreachable exhausts its retry count (`nic.retry_cnt` timeouts in
//! a row) and fails: its work completes in error and the tools report a
//! transport retry error. Not modelled: InfiniBand (refused at
//! validation), one-way failures; on iWARP, whose TCP streams would retry
//! for ever, validation refuses failures that cut hosts off for good.

use super::packet::{PktId, PktKind};
use super::routing::Routing;
use super::{Ev, Net, PortIdx};
use crate::units::Time;

/// One step of a link's failure and repair.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkStep {
    /// The cable is pulled.
    Down,
    /// The cable is back.
    Up,
    /// The link's two ends learn its state (true = up).
    Local(bool),
    /// The whole fabric has converged on its state (true = up).
    Global(bool),
}

/// Failure state of a network with scheduled link failures.
pub(crate) struct Failures {
    /// The two ports of each failing link.
    links: Vec<[PortIdx; 2]>,
    detect: Time,
    converge: Time,
    /// Per port: its node has detected the link down and stopped using it.
    local_down: Vec<bool>,
    /// Per port: the fabric routes without this link.
    global_down: Vec<bool>,
    seed: u64,
    /// The flow backend's tables of the intact fabric, kept from its first
    /// re-route: a flow with no way around the failures keeps the way they
    /// give, through the dead link, and stalls there (`Net::flow_path`).
    pub(crate) intact: Option<Routing>,
}

impl Failures {
    pub fn new(
        links: Vec<[PortIdx; 2]>,
        detect: Time,
        converge: Time,
        ports: usize,
        seed: u64,
    ) -> Failures {
        Failures {
            links,
            detect,
            converge,
            local_down: vec![false; ports],
            global_down: vec![false; ports],
            seed,
            intact: None,
        }
    }
}

impl Net {
    /// A step of failing link `i` (an index into the scheduled links).
    #[cold]
    #[inline(never)]
    /// Where to look when a run stalled (nothing left to happen with work
    /// unfinished), for the tools' errors: a host link that is down (its
    /// QPs wait for it when no timer runs: the flow backend, or
    /// `ack_timeout_exponent = 0`), other links that are down (a flow with
    /// no way left waits on the flow backend), packets lost with no timer
    /// to resend them, else PFC.
    pub fn stall_hint(&self) -> String {
        if self.flow.as_ref().is_some_and(|f| f.beyond_clock) {
            return "a flow would end beyond what the simulator's clock holds (106 days of \
                    simulated time): use smaller flows or faster links"
                .into();
        }
        let hosts: Vec<String> = (0..self.topo.n_hosts as u32)
            .filter_map(|h| self.link_down_at(h))
            .collect();
        if !hosts.is_empty() {
            return format!(
                "the link of {} is down and never comes back up ([[link_failures]]): a host's \
                 QPs wait for its own link, so give it an up_us or move the flows off that host",
                hosts.join(", ")
            );
        }
        let down = self.links_down();
        if !down.is_empty() && self.flow.is_some() {
            return format!(
                "the links {} are down and never come back up ([[link_failures]]): a flow with \
                 no path left waits for them on the flow backend, which models no timeouts (the \
                 packet engine's QPs would time out and fail); give them an up_us or move the \
                 flows off the hosts they cut off",
                down.join(", ")
            );
        }
        if self.flow.is_some() {
            return "the flow backend stalled with work unfinished and no link down, an error \
                    of fabriclab's flow model rather than of the input: --backend packet runs \
                    the same input"
                .into();
        }
        let lost: u64 = self
            .ports
            .iter()
            .map(|p| p.c.lost_packets + p.c.drops)
            .sum();
        if lost > 0 && self.p.rto == Time::NEVER {
            return format!(
                "{lost} packet(s) were dropped or lost and nic.ack_timeout_exponent = 0 turns \
                 the retransmission timer off, so a lost tail is never resent: set an exponent \
                 (14, the default, is 67 ms)"
            );
        }
        "look for a PFC deadlock or a pause storm in the port counters".into()
    }

    /// `host`'s own link as `host-switch` when it is down.
    pub(crate) fn link_down_at(&self, host: u32) -> Option<String> {
        let p = &self.ports[self.nics[host as usize].port as usize];
        (!p.up).then(|| self.link_name(p))
    }

    /// The links that are down now, each once, as `a-b`.
    pub(crate) fn links_down(&self) -> Vec<String> {
        (self.ports.iter())
            .filter(|p| !p.up && p.node < p.peer_node)
            .map(|p| self.link_name(p))
            .collect()
    }

    fn link_name(&self, p: &super::port::Port) -> String {
        let names = &self.topo.nodes;
        format!(
            "{}-{}",
            names[p.node as usize].name, names[p.peer_node as usize].name
        )
    }

    pub(crate) fn on_link(&mut self, i: u32, step: LinkStep) {
        let now = self.now();
        let f = self.fail.as_ref().expect("link events only with failures");
        let (ends, detect, converge) = (f.links[i as usize], f.detect, f.converge);
        if self.flow.is_some() {
            return self.flow_on_link(ends, i, step, converge);
        }
        match step {
            LinkStep::Down | LinkStep::Up => {
                let up = step == LinkStep::Up;
                for pi in ends {
                    if up {
                        self.ports[pi as usize].up = true;
                    } else {
                        self.port_down(pi);
                    }
                }
                if up {
                    for pi in ends {
                        self.try_tx(pi);
                    }
                }
                self.q
                    .schedule(now + detect, Ev::Link(i, LinkStep::Local(up)));
                self.q
                    .schedule(now + converge, Ev::Link(i, LinkStep::Global(up)));
            }
            LinkStep::Local(up) => {
                let f = self.fail.as_mut().expect("failures");
                for pi in ends {
                    f.local_down[pi as usize] = !up;
                }
                self.rebuild_routing();
            }
            LinkStep::Global(up) => {
                let f = self.fail.as_mut().expect("failures");
                for pi in ends {
                    f.global_down[pi as usize] = !up;
                }
                self.rebuild_routing();
            }
        }
    }

    /// The flow backend's approximation of a failure: the link's capacity
    /// is 0 from the pull to its repair (the flows on it stall), and the
    /// fabric re-routes at the convergence time, when every active flow
    /// takes its new path (the ends' early detection is not modelled).
    fn flow_on_link(&mut self, ends: [PortIdx; 2], i: u32, step: LinkStep, converge: Time) {
        let now = self.now();
        match step {
            LinkStep::Down | LinkStep::Up => {
                let up = step == LinkStep::Up;
                for pi in ends {
                    self.ports[pi as usize].up = up;
                    let cap = if up {
                        self.ports[pi as usize].rate.as_bps() as f64
                    } else {
                        0.0
                    };
                    self.flow_set_capacity(pi, cap);
                }
                self.q
                    .schedule(now + converge, Ev::Link(i, LinkStep::Global(up)));
            }
            LinkStep::Local(_) => {}
            LinkStep::Global(up) => {
                let f = self.fail.as_mut().expect("failures");
                for pi in ends {
                    f.global_down[pi as usize] = !up;
                }
                let before = self.rebuild_routing_with(false);
                let f = self.fail.as_mut().expect("failures");
                // The first tables replaced are the intact fabric's.
                f.intact.get_or_insert(before);
                self.flow_reroute_all();
            }
        }
    }

    fn rebuild_routing(&mut self) {
        self.rebuild_routing_with(true);
    }

    /// Tables without the links the fabric converged around and, with
    /// `local`, without the ports their own switches detected down; returns
    /// the tables they replace.
    fn rebuild_routing_with(&mut self, local: bool) -> Routing {
        let f = self.fail.as_ref().expect("failures");
        let local_down: &[bool] = if local { &f.local_down } else { &[] };
        let masked = Routing::build_masked(
            &self.topo,
            &self.ports,
            &self.node_ports,
            f.seed,
            &f.global_down,
            local_down,
        );
        std::mem::replace(&mut self.routing, masked)
    }

    /// Port `pi`'s link went down: lose what is on its wire and in its
    /// queues, and end the pauses of its egress.
    fn port_down(&mut self, pi: PortIdx) {
        let now = self.now();
        let port = &mut self.ports[pi as usize];
        port.up = false;
        port.pfc_peer_paused = 0;
        // Frames in flight never arrive (their `Arrive` event finds the
        // wire changed and does nothing); the one being serialised still
        // ends its `TxDone`, which keeps the port's transmitter consistent.
        let wire = std::mem::take(&mut port.wire);
        let pfc = port.take_pfc();
        for pkt in pfc {
            self.pkts.free(pkt);
        }
        for (_, pkt) in wire {
            self.lose(pi, pkt);
        }
        let node = self.ports[pi as usize].node;
        let switch = self.is_switch(node);
        for prio in 0..8 {
            while let Some(pkt) = self.ports[pi as usize].prio[prio].queue.pop_front() {
                let (stored, kind) = (self.stored_bytes(pkt), self.pkts.get(pkt).kind);
                let port = &mut self.ports[pi as usize];
                port.prio[prio].qbytes -= stored;
                port.total_qbytes -= stored;
                if switch {
                    self.release_switch_buffer(pi, pkt, prio);
                } else if kind == PktKind::TcpData {
                    self.tcp_left_host(pkt);
                }
                if switch {
                    self.audit_lost(pi, pkt);
                }
                self.lose(pi, pkt);
            }
            let port = &mut self.ports[pi as usize];
            port.nonempty &= !(1 << prio);
            if port.pause_since[prio].is_some() {
                port.paused_until[prio] = now;
                port.settle_pause(prio, now);
                self.on_unpause(pi, prio);
            }
        }
    }

    /// A packet lost at (or on the wire of) port `pi` to a link failure.
    pub(crate) fn lose(&mut self, pi: PortIdx, pkt: PktId) {
        let (kind, wire) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.wire as u64)
        };
        if !matches!(kind, PktKind::Pause | PktKind::FlowCtl) {
            let c = &mut self.ports[pi as usize].c;
            c.lost_packets += 1;
            c.lost_bytes += wire;
        }
        self.pkts.free(pkt);
    }
}
