//! iWARP: RDMA queue pairs carried by TCP offloaded to the NIC (RDMAP over
//! DDP over MPA over TCP, RFC 5040/5041/5044), on Ethernet links and
//! switches (PFC, ECN marking, ECMP and the shared-buffer MMU all apply).
//!
//! What is modelled:
//! - a QP is two one-way offloaded TCP connections of `net::tcp` (one per
//!   direction, created by `Net::connect`): the QP's send stream, and its
//!   peer's. The reverse connection's ports are the forward one's swapped,
//!   so data both ways and the ACKs of both hash like one TCP 4-tuple in
//!   ECMP (the active side's ephemeral port, the listener's
//!   [`IWARP_PORT`]);
//! - framing: every posted message becomes a run of FPDUs in its QP's TCP
//!   stream, each carried alone in one segment (MPA-aware TCP): MPA length,
//!   DDP tagged (WRITE, READ response) or untagged (SEND, READ request with
//!   its RDMAP fields) header, at most MULPDU - header bytes of payload,
//!   pad, CRC, and optional markers (`wire.rs` holds the arithmetic). TCP
//!   sequence numbers count FPDU bytes (markers excluded: they are added
//!   to the segment's wire size from its stream offset);
//! - timing: a posted message enters the stream `[nic] tx_latency_ns` after
//!   the post (doorbell, WQE and DMA), as RoCE's; from then on the RNIC's
//!   TCP engine sends, ACKs and retransmits with no further latency;
//!   completions and arrivals are made visible `[nic] rx_latency_ns` after
//!   the event that causes them;
//! - semantics: a WRITE or SEND completes at the requester when TCP has
//!   acknowledged its last byte; `Received` fires at the responder when its
//!   last byte is delivered in order; a READ is a read-request message on
//!   the requester's stream, after whose delivery (+ receive latency + send
//!   latency) the responder's RNIC appends the read response to its own
//!   stream; the READ completes when the response's last byte is delivered
//!   at the requester;
//! - reliability and congestion control are TCP's (`net::tcp`, offloaded
//!   stack): NewReno by default, fast retransmit and recovery, RTO with the
//!   `[iwarp]` floor, delayed ACKs if configured, ECN (RFC 3168 halving or
//!   DCTCP) if asked. No DCQCN, no PSNs, no go-back-N NAKs. QP counters
//!   count the QP's segments: sent, retransmitted (`retx_packets`) and TCP
//!   timeouts.
//!
//! Left out: the TCP handshake and MPA negotiation (connections are open
//! at creation), several FPDUs per segment, pure ACKs instead of ACKs
//! piggybacked on reverse data, the RNIC's send-window limit (iw_cxgb3's
//! `snd_win`), DDP placement of out-of-order segments (in-order delivery
//! only), receive-queue exhaustion and the terminate protocol, per-QP round
//! robin inside the RNIC (segments queue at the host port in the order the
//! connections emit them).

mod rdma;

use crate::net::verbs::OpKind;
use crate::units::Time;
use crate::wire::{mpa_fpdu_bytes, Ddp};
use std::collections::VecDeque;

/// TCP port of the listening side of every iWARP connection (perftest's
/// default port).
pub const IWARP_PORT: u16 = 18515;

/// One posted message of a QP's send stream.
#[derive(Clone, Debug)]
pub(crate) struct IwMsg {
    /// First stream byte (FPDU bytes).
    pub start: u64,
    /// Stream byte after its last FPDU.
    pub end: u64,
    pub op: OpKind,
    /// Payload bytes (read size for a READ request).
    pub bytes: u64,
    pub token: u64,
    /// When the RNIC may start sending it.
    pub ready_at: Time,
    /// Report the completion to the owning workload.
    pub notify: bool,
}

impl IwMsg {
    fn ddp(&self) -> Ddp {
        match self.op {
            OpKind::Write | OpKind::ReadResp => Ddp::Tagged,
            OpKind::Send => Ddp::Untagged,
            OpKind::Read => Ddp::ReadRequest,
        }
    }
}

/// A message of the peer's stream, awaited by the receiving QP.
#[derive(Clone, Debug)]
pub(crate) struct RxMsg {
    pub end: u64,
    pub op: OpKind,
    pub bytes: u64,
    pub token: u64,
    /// A READ's requester wants its completion (carried by the request
    /// and its response).
    pub notify: bool,
}

/// iWARP state of one QP (same index as `Net::qps`).
#[derive(Clone, Debug, Default)]
pub(crate) struct IwQp {
    /// The TCP connection carrying this QP's send stream.
    pub tx_conn: u32,
    /// End of the posted stream.
    pub stream_end: u64,
    /// Posted messages not yet acknowledged, in stream order.
    pub msgs: VecDeque<IwMsg>,
    /// `msgs[..released]` have been handed to TCP.
    pub released: usize,
    /// Messages of the peer's stream not yet delivered here, in order.
    pub rx: VecDeque<RxMsg>,
}

/// Per-fabric iWARP parameters and the QPs' state.
pub(crate) struct Iwarp {
    /// Largest ULPDU per segment.
    pub mulpdu: u32,
    pub crc: bool,
    pub markers: bool,
    pub qps: Vec<IwQp>,
}

impl Iwarp {
    /// The iWARP state of a fabric built from `spec`.
    pub fn new(spec: &crate::config::IwarpSpec) -> Iwarp {
        Iwarp {
            mulpdu: spec.mulpdu(),
            crc: spec.mpa_crc,
            markers: spec.mpa_markers,
            qps: Vec::new(),
        }
    }

    /// Payload of a full FPDU of this DDP kind.
    #[inline]
    fn max_payload(&self, ddp: Ddp) -> u64 {
        match ddp {
            Ddp::ReadRequest => 0,
            d => (self.mulpdu - d.header_bytes()) as u64,
        }
    }

    /// (FPDU bytes, payload bytes) of the FPDU that starts `off` stream
    /// bytes into message `m`.
    pub fn fpdu_at(&self, m: &IwMsg, off: u64) -> (u32, u64) {
        let ddp = m.ddp();
        let hdr = ddp.header_bytes();
        let pmax = self.max_payload(ddp);
        if pmax == 0 {
            return (mpa_fpdu_bytes(hdr, self.crc), 0);
        }
        let full = mpa_fpdu_bytes(hdr + pmax as u32, self.crc) as u64;
        let k = off / full;
        debug_assert_eq!(off % full, 0, "segments start at FPDU boundaries");
        let payload = m.bytes.saturating_sub(k * pmax).min(pmax);
        (mpa_fpdu_bytes(hdr + payload as u32, self.crc), payload)
    }

    /// Stream bytes of a message of `bytes` payload of kind `op`.
    pub fn stream_bytes(&self, op: OpKind, bytes: u64) -> u64 {
        let m = IwMsg {
            start: 0,
            end: 0,
            op,
            bytes,
            token: 0,
            ready_at: Time::ZERO,
            notify: false,
        };
        let ddp = m.ddp();
        let pmax = self.max_payload(ddp);
        if pmax == 0 {
            return mpa_fpdu_bytes(ddp.header_bytes(), self.crc) as u64;
        }
        let full = mpa_fpdu_bytes(ddp.header_bytes() + pmax as u32, self.crc) as u64;
        let n = bytes.div_ceil(pmax).max(1);
        let last = bytes - (n - 1) * pmax;
        (n - 1) * full + mpa_fpdu_bytes(ddp.header_bytes() + last as u32, self.crc) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::IwarpSpec;

    #[test]
    fn a_message_is_cut_into_full_fpdus_and_a_tail() {
        let iw = Iwarp::new(&IwarpSpec {
            mtu_bytes: 9000,
            ..Default::default()
        });
        // MULPDU 8942: 8928 B of WRITE payload per 8948-byte FPDU.
        assert_eq!(iw.mulpdu, 8942);
        // 20000 B = 8928 + 8928 + 2144; the tail FPDU is 2 + 14 + 2144 =
        // 2160 (a multiple of 4) + 4 = 2164.
        assert_eq!(iw.stream_bytes(OpKind::Write, 20000), 2 * 8948 + 2164);
        let m = IwMsg {
            start: 0,
            end: 2 * 8948 + 2164,
            op: OpKind::Write,
            bytes: 20000,
            token: 0,
            ready_at: Time::ZERO,
            notify: true,
        };
        assert_eq!(iw.fpdu_at(&m, 0), (8948, 8928));
        assert_eq!(iw.fpdu_at(&m, 2 * 8948), (2164, 2144));
        // SEND: untagged, 8942 - 18 = 8924 per FPDU; a 0-byte SEND is one
        // FPDU of 2 + 18 = 20 + 4 = 24 bytes; a READ request 52 bytes.
        assert_eq!(iw.stream_bytes(OpKind::Send, 8924), 8948);
        assert_eq!(iw.stream_bytes(OpKind::Send, 0), 24);
        assert_eq!(iw.stream_bytes(OpKind::Read, 1 << 20), 52);
    }
}
