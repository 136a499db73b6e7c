//! Counters: always on, a handful of integer adds per packet.
//!
//! Port counters count data-path frames (RoCE data, ACK, NAK, CNP) in
//! `tx_*`/`rx_*`; PFC frames are counted only in `pause_tx`/`pause_rx`
//! (and the pauses they begin in `pause_starts`), so
//! that for every switch `sum(rx_bytes) = sum(tx_bytes) + sum(drop_bytes)`
//! once its buffers are empty.

use serde::Serialize;

impl PortCounters {
    /// A packet of `wire` bytes and priority `prio` dropped here.
    #[inline]
    pub(crate) fn add_drop(&mut self, prio: usize, wire: u64) {
        self.drops += 1;
        self.drop_bytes += wire;
        self.drops_by_prio[prio] += 1;
    }
}

/// The counters a port's egress moves with every packet, kept apart from
/// the others so that they share a cache line with the transmitter's state
/// (`Port`); a port's [`PortCounters`] carries them
/// ([`PortCounters::with_traffic`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxCounters {
    /// [`PortCounters::tx_bytes`].
    pub tx_bytes: u64,
    /// [`PortCounters::tx_packets`].
    pub tx_packets: u64,
    /// [`PortCounters::peak_queue_bytes`].
    pub peak_queue_bytes: u64,
}

/// The counters a port's ingress moves with every packet, beside its
/// buffer totals (`Port`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RxCounters {
    /// [`PortCounters::rx_bytes`].
    pub rx_bytes: u64,
    /// [`PortCounters::rx_packets`].
    pub rx_packets: u64,
    /// [`PortCounters::peak_buffer_bytes`].
    pub peak_buffer_bytes: u64,
}

impl PortCounters {
    /// These counters with the traffic ones taken from `tx` and `rx`.
    pub(crate) fn with_traffic(&self, tx: &TxCounters, rx: &RxCounters) -> PortCounters {
        let TxCounters {
            tx_bytes,
            tx_packets,
            peak_queue_bytes,
        } = *tx;
        let RxCounters {
            rx_bytes,
            rx_packets,
            peak_buffer_bytes,
        } = *rx;
        PortCounters {
            tx_bytes,
            tx_packets,
            rx_bytes,
            rx_packets,
            peak_queue_bytes,
            peak_buffer_bytes,
            ..self.clone()
        }
    }
}

/// Counters of one port (one direction's egress plus the reverse ingress).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PortCounters {
    /// Wire bytes transmitted: on Ethernet each frame plus its 20 B of
    /// preamble, SFD and inter-frame gap, so that `tx_bytes x 8 / time` is
    /// the link's utilisation. A switch's octet counter (`ifHCOutOctets`)
    /// counts the frame alone: `tx_bytes - 20 x tx_packets` (InfiniBand
    /// has no framing to take off).
    pub tx_bytes: u64,
    /// Packets transmitted.
    pub tx_packets: u64,
    /// Wire bytes received (as `tx_bytes`).
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets dropped at this port (egress tail drop or ingress headroom
    /// overflow).
    pub drops: u64,
    /// Wire bytes of the dropped packets.
    pub drop_bytes: u64,
    /// Dropped packets per priority (to tell a lossless class's drops,
    /// which must be zero, from a lossy one's).
    pub drops_by_prio: [u64; 8],
    /// Packets ECN-marked (CE) at this egress.
    pub ecn_marks: u64,
    /// PFC frames sent (XOFF and XON).
    pub pause_tx: u64,
    /// PFC pauses started here: XOFF frames put on the wire while the peer
    /// was not already paused for that priority by this port, so neither
    /// XONs nor the refresh of a pause in force. The number of pause
    /// episodes, which is what the ns-3 HPCC simulator's PFC log counts (it
    /// never refreshes a pause).
    pub pause_starts: u64,
    /// PFC frames received.
    pub pause_rx: u64,
    /// Total time any priority of this egress was paused, ps (summed over
    /// priorities).
    pub paused_ps: u64,
    /// Peak egress queue depth (all priorities), bytes of frames stored
    /// (no preamble or inter-frame gap).
    pub peak_queue_bytes: u64,
    /// Peak switch buffer held by packets that entered through this port,
    /// bytes of frames stored.
    pub peak_buffer_bytes: u64,
    /// Packets lost to a link failure at this port: on its wire when the
    /// link went down, in its queues, routed to it while it was down, or
    /// (at an ingress) with no route left.
    pub lost_packets: u64,
    /// Wire bytes of the lost packets.
    pub lost_bytes: u64,
    /// PFC storms the watchdog found on this egress (queues taken out of
    /// lossless service).
    pub wd_storms: u64,
    /// Queues of this egress the watchdog restored.
    pub wd_restores: u64,
    /// Packets the watchdog dropped at this port (also in `drops`).
    pub wd_drops: u64,
}

/// Counters of one queue pair (the sending side of its data stream).
/// In declaration order in memory: the send side's fill the first 64
/// bytes, which `Qp`'s layout relies on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[repr(C)]
pub struct QpCounters {
    /// Payload bytes sent (retransmissions included).
    pub tx_payload_bytes: u64,
    /// Data packets sent (retransmissions included).
    pub tx_packets: u64,
    /// Payload bytes acknowledged by the peer.
    pub acked_bytes: u64,
    /// Data packets retransmitted (go-back-N and timeouts).
    pub retx_packets: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// NAKs received.
    pub naks_rx: u64,
    /// CNPs received (reaction point).
    pub cnps_rx: u64,
    /// CNPs sent (notification point, for the peer's stream).
    pub cnps_tx: u64,
    /// Payload bytes received in order from the peer.
    pub rx_payload_bytes: u64,
    /// Data packets received out of order or duplicated (discarded).
    pub rx_discarded: u64,
    /// Messages completed (acknowledged) on this QP.
    pub messages_done: u64,
}

impl QpCounters {
    /// Add `o`'s counts to these (a QP's two streams in one row).
    pub(crate) fn add(&mut self, o: &QpCounters) {
        // Destructured, so that a new counter cannot be left out.
        let QpCounters {
            tx_payload_bytes,
            tx_packets,
            acked_bytes,
            retx_packets,
            timeouts,
            naks_rx,
            cnps_rx,
            cnps_tx,
            rx_payload_bytes,
            rx_discarded,
            messages_done,
        } = o;
        self.tx_payload_bytes += tx_payload_bytes;
        self.tx_packets += tx_packets;
        self.acked_bytes += acked_bytes;
        self.retx_packets += retx_packets;
        self.timeouts += timeouts;
        self.naks_rx += naks_rx;
        self.cnps_rx += cnps_rx;
        self.cnps_tx += cnps_tx;
        self.rx_payload_bytes += rx_payload_bytes;
        self.rx_discarded += rx_discarded;
        self.messages_done += messages_done;
    }
}
