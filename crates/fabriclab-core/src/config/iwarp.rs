//! The `[iwarp]` section of an iWARP fabric (`transport = "iwarp"`): RDMA
//! over TCP offloaded to the NIC, on Ethernet links and switches.
//!
//! Everything Ethernet keeps its meaning on an iWARP fabric (`[switch]`,
//! `[pfc]`, `[ecn]`, `[qos]`, ECMP); `[nic]` gives the RNIC's send and
//! receive latencies; `[mpi]` is unchanged. What RoCE's RC transport and
//! DCQCN configure does not apply: `[cc]` defaults to off when the file
//! leaves it out, and `cc.algorithm = "dcqcn"`, `nic.roce_mtu`,
//! `nic.ack_every_packets`, `nic.ack_timeout_exponent` or an `[ib]` section
//! are `InvalidFabric` errors naming the `[iwarp]` key to use instead.
//!
//! Defaults follow the Chelsio T3 and its OFED driver (iw_cxgb3, OFED
//! 1.2-1.4) where the driver source says so: MPA markers off
//! (`markers_enabled = 0`), MPA CRC on (`crc_enabled = 1`), Nagle off
//! (`V_NAGLE(0)` in the connection's opt0), no delayed ACK (opt0 leaves
//! `F_DELACK` clear; the T3's delayed-ACK timer, unused then, is 50 ms),
//! receive window 256 KiB (`rcv_win`), minimum RTO 250 ms (`TP_RTO_MIN` in
//! cxgb3's `t3_hw.c`, the TCP engine's floor), maximum RTO 64 s. The rest
//! is *(approx.)*: timestamps on (the T3's TP negotiates them; iw_cxgb3
//! subtracts 12 from the MSS when they are), NewReno (iw_cxgb3's default
//! congestion flavour 1 is Tahoe in the T3 CPL enumeration, which is not
//! modelled; NewReno is the closest), the initial window of RFC 3390, the
//! first RTO equal to the minimum (the handshake and MPA exchange, not
//! modelled, would have given an RTT sample far below it).

use crate::config::TcpCc;
use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// The `[iwarp]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IwarpSpec {
    /// IP MTU of the RNIC's port (IP packet size), bytes: 576..9216.
    pub mtu_bytes: u32,
    /// The TCP timestamps option (12 bytes per segment) is in use.
    pub tcp_timestamps: bool,
    /// MPA markers (4 bytes every 512 bytes of stream).
    pub mpa_markers: bool,
    /// MPA CRC32c on every FPDU.
    pub mpa_crc: bool,
    /// Congestion control of the offloaded TCP: reno (NewReno), cubic or
    /// dctcp.
    pub congestion: TcpCc,
    /// ECN with reno or cubic: segments are ECN-capable and an ECN-Echo
    /// halves the window once per window of data (RFC 3168's reaction).
    /// DCTCP is always ECN-capable.
    pub ecn: bool,
    /// Receive window every RNIC advertises, bytes.
    pub rcv_wnd_bytes: u64,
    /// Initial congestion window, segments; absent = RFC 3390's
    /// min(4 MSS, max(2 MSS, 4380 B)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_cwnd_segments: Option<u32>,
    /// Minimum retransmission timeout, ms.
    pub rto_min_ms: f64,
    /// Retransmission timeout before the first RTT sample, ms.
    pub rto_initial_ms: f64,
    /// Maximum retransmission timeout (backoff cap), ms.
    pub rto_max_ms: f64,
    /// Delayed-ACK timer, ms; 0 = every segment is ACKed at once.
    pub delayed_ack_ms: f64,
}

impl Default for IwarpSpec {
    fn default() -> Self {
        IwarpSpec {
            mtu_bytes: crate::wire::HOST_MTU,
            tcp_timestamps: true,
            mpa_markers: false,
            mpa_crc: true,
            congestion: TcpCc::Reno,
            ecn: false,
            rcv_wnd_bytes: 256 << 10,
            init_cwnd_segments: None,
            rto_min_ms: 250.0,
            rto_initial_ms: 250.0,
            rto_max_ms: 64_000.0,
            delayed_ack_ms: 0.0,
        }
    }
}

impl IwarpSpec {
    /// TCP maximum segment size of the offloaded connections, bytes.
    pub fn mss(&self) -> u32 {
        crate::wire::iwarp_mss(self.mtu_bytes, self.tcp_timestamps)
    }

    /// Largest ULPDU (DDP header + payload) per segment (RFC 5044).
    pub fn mulpdu(&self) -> u32 {
        crate::wire::mpa_mulpdu(self.mss(), self.mpa_markers, self.mpa_crc)
    }

    /// The initial window in segments.
    pub fn init_cwnd(&self) -> u32 {
        self.init_cwnd_segments.unwrap_or_else(|| {
            let mss = self.mss();
            (4 * mss).min((2 * mss).max(4380)) / mss
        })
    }

    /// Check every value is possible.
    pub fn validate(&self) -> Result<()> {
        if !(576..=9216).contains(&self.mtu_bytes) {
            return fabric_err(format!(
                "iwarp.mtu_bytes must be between 576 and 9216 bytes (the IP MTU of the \
                 RNIC's port), got {}",
                self.mtu_bytes
            ));
        }
        let mss = self.mss() as u64;
        if self.rcv_wnd_bytes < 2 * mss {
            return fabric_err(format!(
                "iwarp.rcv_wnd_bytes = {} must hold at least two segments ({} bytes)",
                self.rcv_wnd_bytes,
                2 * mss
            ));
        }
        if self.rcv_wnd_bytes > 1 << 30 {
            return fabric_err("iwarp.rcv_wnd_bytes is limited to 1 GiB (window scaling)");
        }
        if self
            .init_cwnd_segments
            .is_some_and(|w| !(1..=1_000_000).contains(&w))
        {
            return fabric_err(format!(
                "iwarp.init_cwnd_segments must be between 1 and 1,000,000, got {}",
                self.init_cwnd_segments.unwrap_or(0)
            ));
        }
        for (field, v) in [
            ("iwarp.rto_min_ms", self.rto_min_ms),
            ("iwarp.rto_initial_ms", self.rto_initial_ms),
            ("iwarp.rto_max_ms", self.rto_max_ms),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return fabric_err(format!("{field} must be a positive time in ms, got {v}"));
            }
            super::time_ms(field, v)?;
        }
        if self.rto_max_ms < self.rto_min_ms {
            return fabric_err("iwarp.rto_max_ms must be at least iwarp.rto_min_ms");
        }
        if !(self.delayed_ack_ms.is_finite() && self.delayed_ack_ms >= 0.0) {
            return fabric_err(format!(
                "iwarp.delayed_ack_ms must be zero (no delayed ACK) or positive, got {}",
                self.delayed_ack_ms
            ));
        }
        super::time_ms("iwarp.delayed_ack_ms", self.delayed_ack_ms)?;
        Ok(())
    }
}

/// Transport checks of an iWARP fabric: RoCE- and IB-only settings are
/// errors that say what to use instead.
pub(super) fn validate(spec: &super::FabricSpec) -> Result<()> {
    if spec.ib.is_some() {
        return fabric_err(
            "the [ib] section applies to InfiniBand fabrics only, but this fabric is iWARP \
             (transport = \"iwarp\"): remove [ib]; the offloaded TCP is set in [iwarp]",
        );
    }
    if spec.cc.algorithm != super::CcAlgorithm::None {
        return fabric_err(
            "[cc] algorithm = \"dcqcn\" is RoCE congestion control, but this fabric is iWARP, \
             whose TCP has its own: remove [cc] (or set cc.algorithm = \"none\") and choose \
             iwarp.congestion (reno, cubic or dctcp), with iwarp.ecn = true for ECN",
        );
    }
    let nic = &spec.nic;
    let eth = super::NicSpec::default();
    if nic.roce_mtu != eth.roce_mtu {
        return fabric_err(
            "nic.roce_mtu is the RoCE path MTU; on an iWARP fabric set iwarp.mtu_bytes (the \
             IP MTU, e.g. 9000 for jumbo frames)",
        );
    }
    if nic.ack_every_packets != eth.ack_every_packets {
        return fabric_err(
            "nic.ack_every_packets is RoCE's ACK coalescing; iWARP's TCP ACKs every segment \
             or by iwarp.delayed_ack_ms",
        );
    }
    if nic.ack_timeout_exponent != eth.ack_timeout_exponent {
        return fabric_err(
            "nic.ack_timeout_exponent is RoCE's retransmission timeout; on an iWARP fabric \
             set iwarp.rto_min_ms (and rto_initial_ms, rto_max_ms)",
        );
    }
    if nic.retry_cnt != eth.retry_cnt || nic.rnr_retry != eth.rnr_retry {
        return fabric_err(
            "nic.retry_cnt and nic.rnr_retry are the RC transport's retry counts; iWARP's \
             offloaded TCP retransmits by iwarp.rto_min_ms / rto_max_ms instead",
        );
    }
    spec.iwarp.clone().unwrap_or_default().validate()
}
