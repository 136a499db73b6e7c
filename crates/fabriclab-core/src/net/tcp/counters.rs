//! Per-connection TCP counters, always on (a few integer adds per segment),
//! in the style of [`crate::net::QpCounters`]: the sending side's data
//! stream and congestion state, and the receiving side's delivery.

use serde::Serialize;

/// Counters and current state of one TCP connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TcpCounters {
    /// Bytes the sending application wrote.
    pub app_written_bytes: u64,
    /// Payload bytes sent (retransmissions included).
    pub tx_bytes: u64,
    /// Data segments sent (retransmissions included).
    pub tx_segments: u64,
    /// Data segments retransmitted (fast retransmit, partial ACKs, timeouts).
    pub retx_segments: u64,
    /// Fast retransmits (entries into fast recovery on three duplicate ACKs).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Bytes acknowledged by the receiver.
    pub acked_bytes: u64,
    /// ACKs received.
    pub acks_rx: u64,
    /// Duplicate ACKs received.
    pub dupacks_rx: u64,
    /// ACKs received with ECN-Echo.
    pub ecn_echoes: u64,
    /// Window reductions in response to ECN-Echo (DCTCP).
    pub ecn_cuts: u64,
    /// Congestion window now, bytes.
    pub cwnd_bytes: u64,
    /// Largest congestion window, bytes.
    pub max_cwnd_bytes: u64,
    /// Slow-start threshold now, bytes; 0 while it is still infinite (no
    /// loss or ECN cut yet).
    pub ssthresh_bytes: u64,
    /// Smoothed RTT (RFC 6298), ns; 0 before the first sample.
    pub srtt_ns: u64,
    /// RTT variation (RFC 6298), ns.
    pub rttvar_ns: u64,
    /// Smallest RTT sample, ns.
    pub min_rtt_ns: u64,
    /// Bytes delivered in order to the receiving application.
    pub rx_bytes: u64,
    /// Data segments received.
    pub rx_segments: u64,
    /// Segments received out of order (buffered).
    pub rx_out_of_order: u64,
    /// Segments received that held only data already received.
    pub rx_duplicates: u64,
    /// Segments received with CE (congestion experienced).
    pub rx_ce_segments: u64,
    /// ACKs sent by the receiver.
    pub acks_tx: u64,
}
