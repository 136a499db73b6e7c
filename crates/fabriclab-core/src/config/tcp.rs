//! The hosts' TCP stack: what a fabric file says in its `[tcp]` section.
//!
//! TCP runs beside RDMA in its own (by default lossy) priority. Defaults are
//! Linux's where Linux has one: initial window 10 segments, minimum RTO
//! 200 ms, initial RTO 1 s, delayed-ACK timer 40 ms (TCP_DELACK_MIN),
//! receive window 6 MiB (tcp_rmem max), send buffer 4 MiB (tcp_wmem max),
//! 256 KiB of a socket's data at most in the host's queues (TCP small
//! queues, tcp_limit_output_bytes of Linux 4.x), CUBIC. The stack latencies
//! (system call, TCP/IP, driver and NIC DMA, each way) are *(approx.)*.

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// TCP congestion-control algorithms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpCc {
    /// NewReno (RFC 5681 / 6582): AIMD with fast recovery on partial ACKs.
    Reno,
    /// CUBIC (RFC 9438, Linux tcp_cubic without HyStart).
    #[default]
    Cubic,
    /// DCTCP (RFC 8257): ECN-capable, window cut by alpha / 2.
    Dctcp,
}

impl TcpCc {
    /// Parse a name as Linux spells it (`reno`, `cubic`, `dctcp`;
    /// `newreno` is accepted for `reno`).
    pub fn parse(name: &str) -> Result<TcpCc> {
        match name.trim().to_ascii_lowercase().as_str() {
            "reno" | "newreno" => Ok(TcpCc::Reno),
            "cubic" => Ok(TcpCc::Cubic),
            "dctcp" => Ok(TcpCc::Dctcp),
            other => crate::error::arg_err(format!(
                "unknown TCP congestion control {other:?}; use reno, cubic or dctcp"
            )),
        }
    }

    /// The name Linux reports (`tcp_congestion`).
    pub fn name(self) -> &'static str {
        match self {
            TcpCc::Reno => "reno",
            TcpCc::Cubic => "cubic",
            TcpCc::Dctcp => "dctcp",
        }
    }
}

/// The `[tcp]` section.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpSpec {
    /// Priority (traffic class) of TCP segments and ACKs; lossy unless it is
    /// listed in `pfc.priorities`.
    pub priority: u8,
    /// Host interface MTU (IP packet size); MSS = MTU - 52 with timestamps.
    pub host_mtu: u32,
    /// Congestion control of connections that do not name one.
    pub congestion: TcpCc,
    /// Receive window the receivers advertise, bytes.
    pub rcv_wnd_bytes: u64,
    /// Send buffer: how far the application may write ahead of what the
    /// peer has acknowledged, bytes.
    pub snd_buf_bytes: u64,
    /// Initial congestion window, segments.
    pub init_cwnd_segments: u32,
    /// Minimum retransmission timeout, ms.
    pub rto_min_ms: f64,
    /// Retransmission timeout before the first RTT sample, ms.
    pub rto_initial_ms: f64,
    /// Maximum retransmission timeout (backoff cap), ms.
    pub rto_max_ms: f64,
    /// Delayed-ACK timer, ms (a second full segment is ACKed at once).
    pub delayed_ack_ms: f64,
    /// TCP small queues: bytes of one connection at most in its host's
    /// port queues.
    pub tsq_bytes: u64,
    /// From a segment built by TCP to its entering the host port's queue,
    /// ns (stack, driver, NIC DMA).
    pub tx_latency_ns: f64,
    /// From a segment's last bit in to TCP acting on it, ns.
    pub rx_latency_ns: f64,
}

impl Default for TcpSpec {
    fn default() -> Self {
        TcpSpec {
            priority: 0,
            host_mtu: crate::wire::HOST_MTU,
            congestion: TcpCc::Cubic,
            rcv_wnd_bytes: 6 << 20,
            snd_buf_bytes: 4 << 20,
            init_cwnd_segments: 10,
            rto_min_ms: 200.0,
            rto_initial_ms: 1000.0,
            rto_max_ms: 120_000.0,
            delayed_ack_ms: 40.0,
            tsq_bytes: 256 << 10,
            tx_latency_ns: 1000.0,
            rx_latency_ns: 1000.0,
        }
    }
}

impl TcpSpec {
    /// Check every value is possible.
    pub fn validate(&self) -> Result<()> {
        if self.priority > 7 {
            return fabric_err(format!(
                "tcp.priority {} is out of range 0..7",
                self.priority
            ));
        }
        if !(576..=9216).contains(&self.host_mtu) {
            return fabric_err(format!(
                "tcp.host_mtu must be between 576 and 9216 bytes, got {}",
                self.host_mtu
            ));
        }
        let mss = crate::wire::tcp_mss(self.host_mtu) as u64;
        if self.rcv_wnd_bytes < 2 * mss || self.snd_buf_bytes < 2 * mss {
            return fabric_err(format!(
                "tcp.rcv_wnd_bytes and tcp.snd_buf_bytes must hold at least two segments \
                 ({} bytes)",
                2 * mss
            ));
        }
        if self.rcv_wnd_bytes > 1 << 30 {
            return fabric_err("tcp.rcv_wnd_bytes is limited to 1 GiB (window scaling)");
        }
        if !(1..=1_000_000).contains(&self.init_cwnd_segments) {
            return fabric_err(format!(
                "tcp.init_cwnd_segments must be between 1 and 1,000,000, got {}",
                self.init_cwnd_segments
            ));
        }
        if self.tsq_bytes < mss {
            return fabric_err(format!(
                "tcp.tsq_bytes must hold at least one segment ({mss} bytes)"
            ));
        }
        for (field, v) in [
            ("tcp.rto_min_ms", self.rto_min_ms),
            ("tcp.rto_initial_ms", self.rto_initial_ms),
            ("tcp.rto_max_ms", self.rto_max_ms),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return fabric_err(format!("{field} must be positive, got {v}"));
            }
            super::time_ms(field, v)?;
        }
        if self.rto_max_ms < self.rto_min_ms {
            return fabric_err("tcp.rto_max_ms must be at least tcp.rto_min_ms");
        }
        super::time_ms("tcp.delayed_ack_ms", self.delayed_ack_ms)?;
        super::time_ns("tcp.tx_latency_ns", self.tx_latency_ns)?;
        super::time_ns("tcp.rx_latency_ns", self.rx_latency_ns)?;
        Ok(())
    }
}
