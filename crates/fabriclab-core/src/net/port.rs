//! A port: eight priority queues, the egress scheduler, serialisation, the
//! wire to the peer, and the PFC pause state of the egress.
//!
//! Scheduling order: PFC frames first (they are never paused), then the
//! strict priorities from 7 down, then (on a host) the NIC's data, then DWRR
//! among the other priorities. A paused priority is skipped; the packet on
//! the wire when a pause arrives is finished. The wire is a FIFO of
//! (arrival time, packet) with at most one pending `Arrive` event however
//! many packets are in flight. A switch's port-to-port latency is added on
//! the wire into the switch; with cut-through the switch sees the packet
//! once its first 64 bytes are in, and its egress never ends before the
//! ingress has received the last bit. On InfiniBand, flow-control packets
//! ride the PFC frames' queue and credits are handled in `ib/` (two hooks
//! below, in `start_tx` and `on_arrive`).

use super::counters::{PortCounters, RxCounters, TxCounters};
use super::packet::{PktId, PktKind};
use super::{Ev, Net, PortIdx};
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// Bytes a cut-through switch reads before forwarding.
const CUT_THROUGH_BYTES: u64 = 64;

/// DWRR visits each class at most this many times per pick before it
/// serves the first eligible class whatever its deficit (quanta smaller than
/// a packet).
const DWRR_ROUNDS_CAP: u32 = 4;

/// One priority's state at a port, in one cache line: its egress queue,
/// the queue's bytes and its DWRR deficit, and the port's ingress
/// accounting for that priority (switch ports). A packet's hop reads one
/// of these per port instead of one line per array.
#[derive(Default)]
#[repr(C, align(64))]
pub(crate) struct PrioState {
    /// Packets queued at this egress.
    pub queue: VecDeque<PktId>,
    /// Bytes of the frames in `queue` (no preamble or inter-frame gap).
    pub qbytes: u64,
    /// Bytes held in the switch buffer by packets that entered through this
    /// port (reserve and shared pool).
    pub ing_bytes: u64,
    /// Of those, bytes in this port's PFC headroom.
    pub hdrm_bytes: u64,
    /// DWRR deficit, wire bytes (set through [`Port::set_deficit`]).
    deficit: u32,
    /// This priority is paused at the peer by this port's XOFF.
    pub xoff: bool,
}

/// Fields are laid out by use, in 64-byte lines (pinned by the assertions
/// below), so that a packet's hop touches few lines of each port: the first
/// line holds what every event of the port reads, the second the
/// transmitter's state and egress counters, the third the ingress totals
/// and counters; then one line per priority ([`PrioState`]: queue, bytes,
/// DWRR deficit, ingress accounting), the other counters, and what is read
/// rarely (pause timers, PFC frames waiting).
#[repr(C, align(64))]
pub(crate) struct Port {
    // --- line 0: every event ---
    pub wire: VecDeque<(Time, PktId)>,
    pub rate: Rate,
    pub delay: Time,
    pub node: u32,
    pub peer: u32,
    pub peer_node: u32,
    pub to_switch: bool,
    pub busy: bool,
    /// Bit p is set when priority queue p holds a packet.
    pub nonempty: u8,
    pub rr: u8,
    // --- line 1: transmitter ---
    pub total_qbytes: u64,
    pub tx_end: Time,
    pub txdone_seq: u64,
    /// The traffic counters of this egress (the rest are in `c`).
    pub tx: TxCounters,
    /// The link is up (false between a failure and its repair).
    pub up: bool,
    /// The current frame's `TxDone` was not scheduled (nothing was queued
    /// behind it): its place in the event order is `txdone_seq` at
    /// `tx_end`, and it is scheduled there only if something arrives to
    /// send before then (`Net::port_free`).
    pub txdone_lazy: bool,
    /// On a switch port, bit p: the watchdog took priority p out of
    /// lossless service; on a host port, nonzero: its NIC is not draining
    /// (a PFC storm). Read only while `Net::storms_active` is nonzero.
    pub storm: u8,
    /// Bit p: the last PFC frame this port put on the wire for priority p
    /// was an XOFF, so its peer is paused (counts `pause_starts`; cleared
    /// when the link goes down, which ends the peer's pause).
    pub pfc_peer_paused: u8,
    /// Bit p is set whenever `paused_until[p]` may lie in the future (set
    /// by an XOFF, cleared once seen expired), so that the scheduler reads
    /// the pause timers only for the priorities that have been paused.
    pub pause_armed: u8,
    /// `pfc_out` holds a frame (kept here so that a transmit need not read
    /// the line `pfc_out` is on; both change only through `push_pfc`,
    /// `pop_pfc` and `take_pfc`).
    pfc_queued: bool,
    /// Bit p is set when priority p's DWRR deficit is nonzero, so that
    /// clearing the deficits of empty classes touches only their lines.
    deficit_nz: u8,
    /// Into a cut-through switch that has a port faster than this link: a
    /// frame bound for such a port is stored and forwarded there, since
    /// the faster egress would underrun (`Net::start_tx`).
    pub ct_underrun: bool,
    /// Fills line 1 (the assertions below check the count).
    _line1_pad: [u8; 8],
    // --- line 2: ingress totals and the traffic counters ---
    /// Bytes in the switch buffer that entered through this port.
    pub ing_total: u64,
    /// PFC headroom of this port as an ingress (switch ports).
    pub headroom: u64,
    /// The traffic counters of this ingress (the rest are in `c`).
    pub rx: RxCounters,
    // --- lines 3-10 ---
    pub prio: [PrioState; 8],
    /// Every other counter; its traffic fields stay zero (they are kept in
    /// `tx` and `rx`): read a port's counters with [`Port::counters`].
    pub c: PortCounters,
    // --- rarely read ---
    /// End of the pause in force per priority (read only where
    /// `pause_armed` has the priority's bit).
    pub paused_until: [Time; 8],
    /// PFC frames waiting to go out (ahead of everything).
    pfc_out: VecDeque<PktId>,
    /// Time of the pending `Wake`, if any (to avoid duplicates).
    pub wake_at: Time,
    pub pause_since: [Option<Time>; 8],
    /// When the last XOFF was sent, per priority (refresh bookkeeping).
    pub xoff_at: [Time; 8],
}

// The layout above, line by line.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<PrioState>() == 64);
    assert!(offset_of!(Port, total_qbytes) == 64);
    assert!(offset_of!(Port, ing_total) == 128);
    assert!(offset_of!(Port, prio) == 192);
    assert!(size_of::<TxCounters>() == 24 && size_of::<RxCounters>() == 24);
    // The fabric's memory estimate counts a port and its link's records
    // (about 96 bytes) per link end.
    assert!(size_of::<Port>() as u64 + 96 <= crate::config::memory::PORT_BYTES);
};

impl Port {
    pub fn new(
        node: u32,
        peer: u32,
        peer_node: u32,
        to_switch: bool,
        rate: Rate,
        delay: Time,
    ) -> Port {
        Port {
            node,
            peer,
            peer_node,
            to_switch,
            rate,
            delay,
            headroom: 0,
            prio: Default::default(),
            total_qbytes: 0,
            up: true,
            storm: 0,
            txdone_lazy: false,
            tx_end: Time::ZERO,
            txdone_seq: 0,
            pfc_out: VecDeque::new(),
            busy: false,
            paused_until: [Time::ZERO; 8],
            pause_since: [None; 8],
            rr: 0,
            nonempty: 0,
            wire: VecDeque::new(),
            wake_at: Time::NEVER,
            ing_total: 0,
            tx: TxCounters::default(),
            rx: RxCounters::default(),
            deficit_nz: 0,
            ct_underrun: false,
            _line1_pad: [0; 8],
            xoff_at: [Time::ZERO; 8],
            pfc_peer_paused: 0,
            pause_armed: 0,
            pfc_queued: false,
            c: PortCounters::default(),
        }
    }

    /// One packet of `wire` bytes crossing this port's link, its
    /// serialisation starting at `now` and never ending before `rx_end`
    /// (when its last bit reached this node): (end of serialisation, last
    /// bit at the peer, when the peer sees it). Into a switch the
    /// switch's `latency` is added, and with cut-through the switch sees
    /// the packet once its first 64 bytes are in (but not before its last
    /// bit plus the latency would allow it to finish). The packet engine
    /// uses it per packet; the flow backend for a message's last packet.
    #[inline]
    pub fn hop(
        &self,
        now: Time,
        rx_end: Time,
        wire: u64,
        cut_through: bool,
        latency: Time,
    ) -> (Time, Time, Time) {
        let tx_end = (now + self.rate.tx_time(wire)).max(rx_end);
        let rx_end = tx_end + self.delay;
        let arrive = if !self.to_switch {
            rx_end
        } else if cut_through {
            (now + self.rate.tx_time(wire.min(CUT_THROUGH_BYTES)) + self.delay + latency)
                .min(rx_end + latency)
        } else {
            rx_end + latency
        };
        (tx_end, rx_end, arrive)
    }

    #[inline]
    pub fn paused(&self, prio: usize, now: Time) -> bool {
        self.pause_armed & (1 << prio) != 0 && self.paused_until[prio] > now
    }

    /// Priorities (bit p) paused at `now`; clears the armed bits of the
    /// pauses found expired.
    #[inline]
    pub fn paused_mask(&mut self, now: Time) -> u8 {
        let mut armed = self.pause_armed;
        let mut paused = 0u8;
        while armed != 0 {
            let p = armed.trailing_zeros() as usize;
            armed &= armed - 1;
            if self.paused_until[p] > now {
                paused |= 1 << p;
            }
        }
        self.pause_armed = paused;
        paused
    }

    /// This port's counters.
    pub fn counters(&self) -> PortCounters {
        self.c.with_traffic(&self.tx, &self.rx)
    }

    /// Priority `i`'s DWRR deficit.
    #[inline]
    pub fn deficit(&self, i: usize) -> u32 {
        self.prio[i].deficit
    }

    /// Set priority `i`'s DWRR deficit.
    #[inline]
    pub fn set_deficit(&mut self, i: usize, d: u32) {
        self.prio[i].deficit = d;
        if d == 0 {
            self.deficit_nz &= !(1 << i);
        } else {
            self.deficit_nz |= 1 << i;
        }
    }

    /// Zero the deficits of the classes of `mask` (bit p: priority p),
    /// touching only those that are not already zero.
    #[inline]
    fn clear_deficits(&mut self, mask: u8) {
        let mut nz = mask & self.deficit_nz;
        self.deficit_nz &= !nz;
        while nz != 0 {
            self.prio[nz.trailing_zeros() as usize].deficit = 0;
            nz &= nz - 1;
        }
    }

    /// Queue a PFC frame (or an InfiniBand credit update) ahead of
    /// everything.
    pub fn push_pfc(&mut self, pkt: PktId) {
        self.pfc_out.push_back(pkt);
        self.pfc_queued = true;
    }

    /// The next queued PFC frame, if any.
    #[inline]
    fn pop_pfc(&mut self) -> Option<PktId> {
        if !self.pfc_queued {
            return None;
        }
        let pkt = self.pfc_out.pop_front();
        self.pfc_queued = !self.pfc_out.is_empty();
        pkt
    }

    /// Every queued PFC frame, taken off the port (a link going down).
    pub fn take_pfc(&mut self) -> VecDeque<PktId> {
        self.pfc_queued = false;
        std::mem::take(&mut self.pfc_out)
    }

    /// Close the books on a pause that ended (by XON or expiry) by `now`.
    pub fn settle_pause(&mut self, prio: usize, now: Time) {
        if let Some(since) = self.pause_since[prio] {
            if self.paused_until[prio] <= now {
                self.c.paused_ps += (self.paused_until[prio].max(since) - since).0;
                self.pause_since[prio] = None;
            }
        }
    }
}

impl Net {
    /// Bytes packet `pkt` occupies in a queue or a switch buffer: its frame,
    /// without the preamble and gap that its wire size counts.
    #[inline]
    pub(crate) fn stored_bytes(&self, pkt: PktId) -> u64 {
        (self.pkts.get(pkt).wire - self.p.framing) as u64
    }

    /// Wire bytes of the packets queued on port `pi` at priority `prio`
    /// (the queue's stored bytes plus each packet's framing), for the books
    /// kept in wire bytes.
    pub(crate) fn queued_wire_bytes(&self, pi: usize, prio: usize) -> u64 {
        let port = &self.ports[pi];
        port.prio[prio].qbytes + self.p.framing as u64 * port.prio[prio].queue.len() as u64
    }

    /// [`Net::queued_wire_bytes`] over every priority of port `pi`.
    pub(crate) fn port_queued_wire_bytes(&self, pi: usize) -> u64 {
        (0..8).map(|prio| self.queued_wire_bytes(pi, prio)).sum()
    }

    /// Put a packet on a port's egress queue (no admission checks).
    #[inline]
    pub(crate) fn enqueue(&mut self, pi: PortIdx, pkt: PktId) {
        let prio = self.pkts.get(pkt).prio as usize;
        let stored = self.stored_bytes(pkt);
        let port = &mut self.ports[pi as usize];
        port.prio[prio].queue.push_back(pkt);
        port.nonempty |= 1 << prio;
        port.prio[prio].qbytes += stored;
        port.total_qbytes += stored;
        port.tx.peak_queue_bytes = port.tx.peak_queue_bytes.max(port.total_qbytes);
        if !port.busy || port.txdone_lazy {
            self.try_tx(pi);
        }
    }

    /// Whether port `pi`'s transmitter is free now. A frame whose `TxDone`
    /// was left unscheduled is over if that event's place in the order has
    /// passed (it would have found nothing to send); otherwise its `TxDone`
    /// is scheduled now, in that same place, since something may be sent.
    #[inline]
    fn port_free(&mut self, pi: PortIdx) -> bool {
        let port = &mut self.ports[pi as usize];
        if !port.busy {
            return true;
        }
        if !port.txdone_lazy {
            return false;
        }
        port.txdone_lazy = false;
        if self.q.passed(port.tx_end, port.txdone_seq) {
            port.busy = false;
            return true;
        }
        let (at, seq) = (port.tx_end, port.txdone_seq);
        self.q.schedule_reserved(at, seq, Ev::TxDone(pi));
        false
    }

    /// Start sending the next packet if the port is idle and one is eligible.
    pub(crate) fn try_tx(&mut self, pi: PortIdx) {
        let now = self.now();
        if !self.port_free(pi) {
            return;
        }
        let port = &mut self.ports[pi as usize];
        if !port.up {
            return;
        }
        if let Some(pkt) = port.pop_pfc() {
            self.start_tx(pi, pkt);
            return;
        }
        // Strict priorities, highest first.
        let mut strict = port.nonempty & self.p.strict_mask;
        while strict != 0 {
            let prio = 7 - strict.leading_zeros() as usize;
            if !port.paused(prio, now) {
                let pkt = self.dequeue(pi, prio);
                self.start_tx(pi, pkt);
                return;
            }
            strict &= !(1 << prio);
        }
        let node = port.node;
        if !self.is_switch(node) {
            if let Some(pkt) = self.nic_next_packet(node) {
                self.start_tx(pi, pkt);
                return;
            }
        }
        if let Some(prio) = self.dwrr_pick(pi, now) {
            let pkt = self.dequeue(pi, prio);
            self.start_tx(pi, pkt);
        }
    }

    fn dwrr_pick(&mut self, pi: PortIdx, now: Time) -> Option<usize> {
        let strict = self.p.strict_mask;
        let port = &mut self.ports[pi as usize];
        if port.nonempty & !strict == 0 {
            return None;
        }
        let mask = !port.paused_mask(now) & port.nonempty & !strict;
        if mask == 0 {
            return None;
        }
        let pkts = &self.pkts;
        let head_wire = |port: &Port, i: usize| pkts.get(*port.prio[i].queue.front().unwrap()).wire;
        if mask.is_power_of_two() {
            let size = head_wire(port, mask.trailing_zeros() as usize);
            return Some(dwrr_sole(port, mask, size, &self.p.dwrr_quantum));
        }
        Some(dwrr_walk(port, mask, head_wire, &self.p.dwrr_quantum))
    }

    /// Take the head of a priority queue, with switch buffer accounting.
    fn dequeue(&mut self, pi: PortIdx, prio: usize) -> PktId {
        let port = &mut self.ports[pi as usize];
        let pkt = port.prio[prio].queue.pop_front().unwrap();
        if let Some(&next) = port.prio[prio].queue.front() {
            self.pkts.prefetch(next);
        } else {
            port.nonempty &= !(1 << prio);
        }
        let stored = (self.pkts.get(pkt).wire - self.p.framing) as u64;
        port.prio[prio].qbytes -= stored;
        port.total_qbytes -= stored;
        let node = port.node;
        if self.is_switch(node) {
            self.on_switch_dequeue(pi, pkt, prio);
        } else if self.pkts.get(pkt).kind == PktKind::TcpData {
            self.tcp_left_host(pkt);
        }
        pkt
    }

    /// Whether the cut-through switch at the end of port `pi` stores and
    /// forwards `pkt`: its egress there is faster than `pi`'s link (any
    /// member of the packet's next-hop group), so that sending it as it
    /// comes in would underrun. Switches fall back to store-and-forward
    /// between a slower ingress and a faster egress.
    #[inline(never)]
    fn ct_stores(&self, pi: PortIdx, pkt: PktId) -> bool {
        let p = self.pkts.get(pkt);
        if matches!(p.kind, PktKind::Pause | PktKind::FlowCtl) {
            return false; // not forwarded
        }
        let port = &self.ports[pi as usize];
        let group = self.routing.group(port.peer_node, p.dst);
        group
            .iter()
            .any(|&q| self.ports[q as usize].rate > port.rate)
    }

    /// Serialise a packet onto the wire.
    pub(crate) fn start_tx(&mut self, pi: PortIdx, pkt: PktId) {
        let now = self.now();
        let cut_through = self.p.cut_through;
        let latency = self.p.switch_latency;
        let stores = self.ports[pi as usize].ct_underrun && self.ct_stores(pi, pkt);
        let p = self.pkts.get_mut(pkt);
        let port = &mut self.ports[pi as usize];
        let wire = p.wire as u64;
        let (tx_end, rx_end, arrive) =
            port.hop(now, p.rx_end, wire, cut_through && !stores, latency);
        port.busy = true;
        if p.kind == PktKind::Pause {
            port.c.pause_tx += 1;
            let bit = 1u8 << p.prio;
            if p.aux == 0 {
                port.pfc_peer_paused &= !bit;
            } else if port.pfc_peer_paused & bit == 0 {
                port.pfc_peer_paused |= bit;
                port.c.pause_starts += 1;
            }
        } else if p.kind == PktKind::FlowCtl {
            // InfiniBand credit update: carries the credits as they are now.
            super::ib::stamp_fcp(self.ib.as_deref_mut(), pi, p);
        } else {
            port.tx.tx_bytes += wire;
            port.tx.tx_packets += 1;
        }
        p.rx_end = rx_end;
        let audit = (p.prio, p.kind);
        let was_empty = port.wire.is_empty();
        debug_assert!(port.wire.back().is_none_or(|&(t, _)| t <= arrive));
        port.wire.push_back((arrive, pkt));
        // A switch port with nothing queued behind this frame keeps its
        // `TxDone` in reserve (a fifth of the events on large runs would
        // find nothing to send); hosts (the NIC decides what is next),
        // adaptive routing (it reads `busy`), InfiniBand and link failures
        // always schedule it.
        if port.nonempty == 0
            && !port.pfc_queued
            && self.lazy_txdone
            && port.node as usize >= self.topo.n_hosts
        {
            port.txdone_lazy = true;
            port.tx_end = tx_end;
            port.txdone_seq = self.q.reserve_seq();
        } else {
            self.q.schedule(tx_end, Ev::TxDone(pi));
        }
        if was_empty {
            self.q.schedule(arrive, Ev::Arrive(pi));
        }
        if self.audit.is_some() && self.is_switch(self.ports[pi as usize].node) {
            self.audit_tx(pi, audit.0, audit.1, wire);
        }
    }

    pub(crate) fn on_tx_done(&mut self, pi: PortIdx) {
        self.ports[pi as usize].busy = false;
        self.try_tx(pi);
    }

    /// The head of port `pi`'s wire reaches the peer port.
    pub(crate) fn on_arrive(&mut self, pi: PortIdx) {
        if self.fail.is_some() {
            // A link failure empties the wire; its pending event is then stale.
            let now = self.now();
            match self.ports[pi as usize].wire.front() {
                Some(&(t, _)) if t == now => {}
                _ => return,
            }
        }
        let port = &mut self.ports[pi as usize];
        let (_, pkt) = port.wire.pop_front().unwrap();
        if let Some(&(t, next)) = port.wire.front() {
            self.q.schedule(t, Ev::Arrive(pi));
            self.pkts.prefetch(next);
        }
        let (peer, peer_node) = (port.peer, port.peer_node);
        let (kind, wire) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.wire as u64)
        };
        let rx = &mut self.ports[peer as usize];
        if kind == PktKind::Pause {
            rx.c.pause_rx += 1;
            self.on_pause_frame(peer, pkt);
            return;
        }
        if kind == PktKind::FlowCtl {
            return self.ib_on_fcp(peer, pkt);
        }
        rx.rx.rx_bytes += wire;
        rx.rx.rx_packets += 1;
        if self.is_switch(peer_node) {
            if self.audit.is_some() {
                self.audit_rx(peer, pkt);
            }
            self.switch_receive(peer_node, peer, pkt);
        } else if self.storms_active != 0 && self.ports[peer as usize].storm != 0 {
            self.storm_discard(peer, pkt);
        } else if self.ib.is_some() {
            self.ib_hca_arrive(peer, pkt);
        } else {
            self.nic_receive(peer_node, pkt);
        }
    }

    /// A PFC frame arrived at port `pi`: pause or resume its egress.
    fn on_pause_frame(&mut self, pi: PortIdx, pkt: PktId) {
        let now = self.now();
        let (prio, quanta) = {
            let p = self.pkts.get(pkt);
            (p.prio as usize, p.aux)
        };
        self.pkts.free(pkt);
        if self.guard.is_some() && !self.guard_pause_rx(pi, prio) {
            return; // the watchdog no longer honours this queue's pauses
        }
        let port = &mut self.ports[pi as usize];
        port.settle_pause(prio, now);
        if quanta == 0 {
            if let Some(since) = port.pause_since[prio].take() {
                port.c.paused_ps += (now - since).0;
            }
            port.paused_until[prio] = now;
            self.on_unpause(pi, prio);
        } else {
            let until = now + port.rate.tx_time(quanta * 64);
            if port.pause_since[prio].is_none() {
                port.pause_since[prio] = Some(now);
            }
            port.paused_until[prio] = until;
            port.pause_armed |= 1 << prio;
            // Wake at expiry in case no XON comes.
            self.q.schedule(until, Ev::Wake(pi));
            if self.guard.is_some() {
                self.guard_paused(pi);
            }
        }
    }

    pub(crate) fn on_unpause(&mut self, pi: PortIdx, prio: usize) {
        let node = self.ports[pi as usize].node;
        if !self.is_switch(node) {
            self.nic_unpark(node, prio);
        }
        self.try_tx(pi);
    }

    pub(crate) fn on_wake(&mut self, pi: PortIdx) {
        let now = self.now();
        let port = &mut self.ports[pi as usize];
        if port.wake_at == now {
            port.wake_at = Time::NEVER;
        }
        for prio in 0..8 {
            let port = &mut self.ports[pi as usize];
            if port.pause_since[prio].is_some() && port.paused_until[prio] <= now {
                port.settle_pause(prio, now);
                self.on_unpause(pi, prio);
            }
        }
        self.try_tx(pi);
    }

    /// Ask for a `Wake` of port `pi` at `at` unless one is due earlier.
    pub(crate) fn wake_port_at(&mut self, pi: PortIdx, at: Time) {
        let port = &mut self.ports[pi as usize];
        if at < port.wake_at {
            port.wake_at = at;
            self.q.schedule(at, Ev::Wake(pi));
        }
    }
}

/// `dwrr_pick` when exactly one class (`mask`, one bit) may send, which is
/// the usual case: the round-robin walk in closed form, leaving the same
/// deficits and pointer as the walk would, cap included. The walk goes from
/// the pointer to the class (zeroing the deficits of empty classes it
/// passes, adding the class's quantum on arrival), then checks the class
/// once per round of eight, adding a quantum each round, until its deficit
/// covers the head packet (`size` wire bytes) or the cap is reached.
fn dwrr_sole(port: &mut Port, mask: u8, size: u32, quantum: &[u32; 8]) -> usize {
    let e = mask.trailing_zeros() as usize;
    let start = port.rr as usize;
    let steps = (e + 8 - start) & 7;
    let q = quantum[e];
    let first = port.deficit(e) + if steps > 0 { q } else { 0 };
    let served = (0..DWRR_ROUNDS_CAP).find(|&k| first + k * q >= size);
    let visited = match served {
        Some(0) => (((1u16 << steps) - 1) as u8).rotate_left(start as u32),
        _ => !mask,
    };
    port.clear_deficits(visited & !port.nonempty);
    match served {
        Some(k) => {
            port.set_deficit(e, first + k * q - size);
            port.rr = e as u8;
        }
        // Every class visited DWRR_ROUNDS_CAP times: the pointer is back
        // where it started, the class got a quantum each round.
        None => port.set_deficit(e, port.deficit(e) + DWRR_ROUNDS_CAP * q),
    }
    e
}

/// Deficit weighted round robin over the classes of `mask` (those that may
/// send: queued, not strict, not paused); `head_wire` gives the wire bytes
/// of a class's head packet. The pointer walks the classes; arriving at an
/// eligible class adds its quantum; a class whose deficit covers its head
/// packet is served; empty classes lose their deficit. After
/// `DWRR_ROUNDS_CAP` rounds (quanta smaller than a packet) the first
/// eligible class is served.
fn dwrr_walk(
    port: &mut Port,
    mask: u8,
    head_wire: impl Fn(&Port, usize) -> u32,
    quantum: &[u32; 8],
) -> usize {
    for _ in 0..DWRR_ROUNDS_CAP * 8 {
        let i = port.rr as usize;
        if mask & (1 << i) != 0 {
            let size = head_wire(port, i);
            if port.deficit(i) >= size {
                port.set_deficit(i, port.deficit(i) - size);
                return i;
            }
        } else if port.nonempty & (1 << i) == 0 {
            port.clear_deficits(1 << i);
        }
        port.rr = (port.rr + 1) & 7;
        let j = port.rr as usize;
        if mask & (1 << j) != 0 {
            port.set_deficit(j, port.deficit(j) + quantum[j]);
        }
    }
    mask.trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port_with(nonempty: u8, rr: u8, deficit: [u32; 8]) -> Port {
        let mut p = Port::new(0, 1, 1, true, Rate::gbps(100), Time::ns(1));
        p.nonempty = nonempty;
        p.rr = rr;
        for (i, &d) in deficit.iter().enumerate() {
            p.set_deficit(i, d);
        }
        p
    }

    /// Every deficit, checking that the nonzero mask agrees with them.
    fn deficits(p: &Port) -> [u32; 8] {
        let d: [u32; 8] = std::array::from_fn(|i| p.deficit(i));
        let nz = (0..8).fold(0u8, |m, i| m | (u8::from(d[i] != 0) << i));
        assert_eq!(nz, p.deficit_nz, "deficit mask out of step with {d:?}");
        d
    }

    /// The closed form leaves exactly the walk's state behind, on random
    /// states: pointer anywhere, deficits and quanta above and below the
    /// packet size (the cap is reached when four quanta do not cover it),
    /// other classes queued (paused) or empty with stale deficits.
    #[test]
    fn sole_class_closed_form_matches_the_walk() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut capped = 0;
        for _ in 0..100_000 {
            let e = next(8) as usize;
            let mask = 1u8 << e;
            let nonempty = next(256) as u8 | mask;
            let rr = next(8) as u8;
            let deficit: [u32; 8] = std::array::from_fn(|_| next(10_000) as u32);
            let quantum: [u32; 8] = std::array::from_fn(|_| 1 + next(6_000) as u32);
            let size = 64 + next(9_000) as u32;
            if deficit[e] + 4 * quantum[e] < size {
                capped += 1;
            }
            let mut walk = port_with(nonempty, rr, deficit);
            let mut sole = port_with(nonempty, rr, deficit);
            let a = dwrr_walk(&mut walk, mask, |_, _| size, &quantum);
            let b = dwrr_sole(&mut sole, mask, size, &quantum);
            assert_eq!((a, walk.rr, deficits(&walk)), (b, sole.rr, deficits(&sole)));
            assert_eq!(a, e);
        }
        assert!(capped > 1_000, "the cap must be exercised ({capped})");
    }

    /// Two classes with equal quanta share the port packet for packet when
    /// their packets are equal, and by bytes when they are not.
    #[test]
    fn walk_shares_by_bytes() {
        let mut p = port_with(0b11, 0, [0; 8]);
        let quantum = [1_500; 8];
        let sizes = [1_500u32, 500];
        let mut bytes = [0u64; 2];
        for _ in 0..4_000 {
            let i = dwrr_walk(&mut p, 0b11, |_, i| sizes[i], &quantum);
            bytes[i] += sizes[i] as u64;
        }
        let ratio = bytes[0] as f64 / bytes[1] as f64;
        assert!((ratio - 1.0).abs() < 0.01, "{bytes:?}");
        // Equal packets: strictly alternating, one each per round.
        let mut p = port_with(0b11, 0, [0; 8]);
        let order: Vec<usize> = (0..8)
            .map(|_| dwrr_walk(&mut p, 0b11, |_, _| 1_500, &quantum))
            .collect();
        assert_eq!(order, [1, 0, 1, 0, 1, 0, 1, 0]);
    }

    /// Quanta in the ratio of the weights share the port in that ratio:
    /// 4,500 against 1,500 B per round with 1,500 B packets is three
    /// packets of class 0 per packet of class 1, exactly, every round.
    #[test]
    fn walk_shares_by_the_weights() {
        let mut quantum = [1_500; 8];
        quantum[0] = 4_500;
        let mut p = port_with(0b11, 0, [0; 8]);
        let mut count = [0u32; 2];
        for n in 1..=4_000 {
            count[dwrr_walk(&mut p, 0b11, |_, _| 1_500, &quantum)] += 1;
            if n % 4 == 0 {
                assert_eq!(count, [3 * n / 4, n / 4], "after {n} packets");
            }
        }
    }
}
