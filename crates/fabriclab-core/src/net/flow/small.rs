//! Small messages on the flow backend: one packet of at most
//! `[sim] flow_small_bytes` of payload (MPI's request-to-send and
//! completion headers, small eager messages, a perftest's small writes)
//! is sent as a packet, outside the max-min solve. READ requests (no
//! payload; RoCE and InfiniBand) are sent the same way whatever that
//! limit (`flow_read_request` in `mod.rs`).
//!
//! Why: as a fluid flow such a message starts and ends a flow of a few
//! nanoseconds, and each start and end re-solves the rates of every flow
//! that shares a link with it. Under an MPI all-to-all with every
//! rendezvous in flight (Open MPI's linear algorithm) two thirds of the
//! flows were these headers, and nearly every event refilled hundreds of
//! flows. Their bandwidth is negligible beside the data they announce (a
//! header of 40 B is 0.2 % of a 64 KiB rendezvous' wire bytes), so
//! leaving it out of the fluid changes the other flows' rates by no more
//! than that.
//!
//! What it models, at the head of its QP (the messages before it on the
//! QP have left):
//! - the wait for its turn at the NIC: the packet engine's NIC serves the
//!   QPs that have data packet by packet (`ready.rs`); a QP that becomes
//!   ready waits, under `ring`, for the packet on the wire (half of one on
//!   average) and one packet of every other QP with data: (n - 1/2) full
//!   packets at the host port's rate, n the other flows on the host port;
//!   under `cyclic`, about half a round: n / 2 packets; right after its
//!   QP's own last packet (the message before it ended a flow, or was a
//!   small message or READ requests that just left), a whole
//!   round under either rule: n packets;
//! - then the packet engine's per-hop arithmetic (serialisation,
//!   cut-through or store and forward, switch latency, propagation), each
//!   port serving the small packets first come first served: a port busy
//!   with one delays the next (an incast of small messages queues at the
//!   port into its host). Each port keeps the turns (start and end of
//!   serialisation) given to small packets that are not over yet, and a
//!   packet takes the first gap between them, from when it comes in, that
//!   holds it;
//! - `Received` the NIC's receive latency after its last bit is in, and
//!   `Completed` when its ACK is back, as for a flow; the QP stays busy
//!   until its last bit has left the host, so that nothing posted on it
//!   meanwhile (a READ request, another small message with a shorter wait)
//!   overtakes it.
//!
//! Left out: the fluid flows' packets in the switches' queues (the flow
//! backend has no queues), PFC pauses of the host port, and the small
//! packets' bandwidth in the fluid flows' shares. A port's turns are
//! given as the packets are sent, which is not always the order in which
//! they reach it: a turn is never moved for a packet sent later, which
//! takes a gap before it only if it fits there whole.

use super::{count_ports, Msg, MsgKind};
use crate::config::QpArbitration;
use crate::net::Net;
use crate::units::Time;
use crate::wire::Ext;

/// What a QP did just before it may send a packet: its wait for the NIC's
/// turn starts a whole round behind the other QPs when its own last packet
/// has just left (the end of its flow, or its own packet), about half a
/// round when it was idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Before {
    /// Idle, or its next message was not ready.
    Idle,
    /// Its flow has just ended (the flow is still counted on the links).
    Flow,
    /// Its own last packet has just left (a small message, READ requests,
    /// or a flow that was not continued and is off the links already).
    Packet,
}

impl Net {
    /// Whether message `m` of QP `q` goes as a small packet: a WRITE or
    /// SEND of one packet with at most `flow_small_bytes` of payload on an
    /// RDMA QP (TCP and iWARP keep their flows: their framing and byte
    /// stream are the flows').
    pub(super) fn flow_is_small(&self, q: u32, m: &Msg) -> bool {
        let fnet = self.flow.as_ref().expect("flow backend");
        fnet.small_bytes > 0
            && matches!(m.kind, MsgKind::Write | MsgKind::Send)
            && m.bytes <= fnet.small_bytes
            && m.bytes <= self.p.mtu as u64
            && fnet.iwarp.is_none()
            && fnet.qps[q as usize].tcp == u32::MAX
    }

    /// Send QP `q`'s head message, small (`flow_is_small`) and ready at
    /// `t` (`before`: what the QP did just before): returns when
    /// its last bit has left the host, or None (the message stays queued)
    /// when a link of its path is down, where it waits as a flow would.
    pub(super) fn flow_small_send(&mut self, q: u32, t: Time, before: Before) -> Option<Time> {
        let fnet = self.flow.as_ref().expect("flow backend");
        let m = *fnet.qps[q as usize]
            .msgs
            .front()
            .expect("a message is ready");
        let (wire, _, npkts) = self.flow_wire(m.kind, m.bytes);
        debug_assert_eq!(npkts, 1, "a small message is one packet");
        let (out, arrive) = self.flow_one_packet(q, t, before, (wire, 1), true)?;
        let fnet = self.flow.as_mut().expect("flow backend");
        super::pop_one(&mut fnet.qps[q as usize].msgs);
        fnet.stats.small += 1;
        let peer = fnet.qps[q as usize].peer_qp;
        let c = &mut fnet.qps[q as usize].counters;
        c.tx_payload_bytes += m.bytes;
        c.tx_packets += 1;
        fnet.qps[peer as usize].counters.rx_payload_bytes += m.bytes;
        self.flow_delivered(q, m, (1, m.bytes), arrive);
        Some(out)
    }

    /// `train` packets of `wire` bytes each that QP `q` sends from `t`
    /// (`before`: what the QP did just before): the first's turn at
    /// the NIC and at the ports of the path, as the module says; each
    /// further one a round of the NIC later (one packet of each other QP
    /// with data, then its own). Counts the train on the path's ports.
    /// Returns when the last has left the host and when the first has
    /// arrived, or None when a link of its path is down and `down_waits`
    /// (the caller keeps it queued).
    pub(super) fn flow_one_packet(
        &mut self,
        q: u32,
        t: Time,
        before: Before,
        (wire, train): (u64, u32),
        down_waits: bool,
    ) -> Option<(Time, Time)> {
        let full = self.p.wire_bytes(self.p.mtu, Ext::None) as u64;
        let rr = self.flow.as_ref().expect("flow backend").arbitration;
        self.with_path(q, |net, path| {
            let mm = &net.flow.as_ref().expect("flow backend").mm;
            if down_waits && path.iter().any(|&p| mm.cap_bps(p) <= 0.0) {
                return None;
            }
            // Its turn at the NIC: one packet of each other QP with data.
            let others = mm.flows_on(path[0]) as u64 - (before == Before::Flow) as u64;
            net.flow_audit_path(q, path);
            let round = net.ports[path[0] as usize].rate.tx_time(full).0;
            let wait_ps = match (others, rr, before) {
                (0, _, _) => 0,
                // Its own last packet just left: behind all the others.
                (n, _, Before::Flow | Before::Packet) => round * n,
                (n, QpArbitration::Ring, Before::Idle) => round * (2 * n - 1) / 2,
                (n, QpArbitration::Cyclic, Before::Idle) => round * n / 2,
            };
            let (mut now, mut rx_end) = (t + Time(wait_ps), t);
            let mut out = t;
            let now_ev = net.now();
            for (k, &pi) in path.iter().enumerate() {
                let fnet = net.flow.as_mut().expect("flow backend");
                let mut turns = std::mem::take(&mut fnet.small_turns[pi as usize]);
                let done = turns.partition_point(|&(_, e)| e <= now_ev);
                turns.drain(..done);
                // The first gap between the turns given, from its arrival,
                // that holds its serialisation.
                let (mut start, mut i) = (now, 0);
                let (tx_end, end, arrive) = loop {
                    while i < turns.len() && turns[i].1 <= start {
                        i += 1;
                    }
                    let hop = net.flow_hop(pi, path.get(k + 1).copied(), start, rx_end, wire);
                    if i == turns.len() || hop.0 <= turns[i].0 {
                        turns.insert(i, (start, hop.0));
                        break hop;
                    }
                    start = start.max(turns[i].1);
                    i += 1;
                };
                net.flow.as_mut().expect("flow backend").small_turns[pi as usize] = turns;
                if k == 0 {
                    out = tx_end;
                }
                (now, rx_end) = (arrive, end);
            }
            count_ports(
                &mut net.ports,
                path.iter().copied(),
                wire * train as u64,
                train,
            );
            let next = net.ports[path[0] as usize].rate.tx_time(wire).0 + round * others;
            Some((out + Time(next * (train as u64 - 1)), now))
        })
    }
}
