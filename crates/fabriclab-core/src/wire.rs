//! Wire formats: how many bytes each kind of RoCEv2, InfiniBand and TCP
//! packet occupies on the wire, and the analytic goodput that follows.
//!
//! Counted per frame: preamble + SFD (8), inter-frame gap (12), Ethernet
//! header (14, +4 with an 802.1Q tag), IPv4 (20), then for RoCEv2 UDP (8),
//! BTH (12), the extended transport header of the packet kind (RETH 16,
//! AETH 4), the payload padded to a multiple of 4 bytes (BTH PadCnt:
//! RoCEv2 carries InfiniBand's transport unchanged) and ICRC (4), or for
//! TCP the TCP header (20) with the timestamps option Linux sends (12),
//! and FCS (4). A frame shorter than the 64 B
//! Ethernet minimum is padded. InfiniBand (same subnet, no GRH): LRH (8),
//! BTH (12), the extended header as RoCE's, the payload padded to a
//! multiple of 4 bytes (BTH PadCnt), ICRC (4) and VCRC (2); no preamble, no
//! inter-frame gap, no minimum size; the line code (8b/10b up to QDR,
//! 64b/66b from FDR) is folded into the data rate as IB quotes it (see
//! [`IB_LINK_SPEEDS`]). Link-level flow-control packets are 6 bytes.
//! iWARP (RDMAP over DDP over MPA over TCP, RFC 5040/5041/5044): each TCP
//! segment carries one whole FPDU (MPA-aware TCP): MPA length (2), the DDP
//! header (tagged 14 for WRITE and READ response data, untagged 18 for SEND
//! and READ request, the READ request adding its 28 bytes of RDMAP fields),
//! the payload, a pad to a multiple of 4 and the MPA CRC32c (4); optional
//! MPA markers add 4 bytes every 512 bytes of the TCP stream. The segment
//! then pays Ethernet, IPv4 and TCP as above (the timestamps option being
//! a choice of the fabric; see [`iwarp_wire_bytes`]). Not modelled: IPv6,
//! immediate data, atomics, GRH, TCP SACK blocks, IB start and end-of-packet
//! delimiters and idle symbols, several FPDUs packed in one segment.

/// Preamble and start-of-frame delimiter.
pub const PREAMBLE_SFD: u32 = 8;
/// Minimum inter-frame gap.
pub const IFG: u32 = 12;
/// Ethernet II header (no VLAN tag).
pub const ETH: u32 = 14;
/// 802.1Q tag.
pub const VLAN: u32 = 4;
/// IPv4 header without options.
pub const IPV4: u32 = 20;
/// UDP header.
pub const UDP: u32 = 8;
/// InfiniBand base transport header.
pub const BTH: u32 = 12;
/// RDMA extended transport header (first WRITE packet, READ request).
pub const RETH: u32 = 16;
/// ACK extended transport header (ACK, NAK, READ responses).
pub const AETH: u32 = 4;
/// Invariant CRC.
pub const ICRC: u32 = 4;
/// Ethernet frame check sequence.
pub const FCS: u32 = 4;
/// Minimum Ethernet frame (header to FCS).
pub const MIN_FRAME: u32 = 64;
/// A PFC pause frame on the wire: 64 B frame + preamble + IFG.
pub const PFC_FRAME_WIRE: u32 = MIN_FRAME + PREAMBLE_SFD + IFG;
/// The RoCE path MTUs a NIC accepts.
pub const ROCE_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// TCP header without options.
pub const TCP: u32 = 20;
/// TCP timestamps option as Linux sends it (NOP, NOP, kind 8: 12 bytes).
pub const TCP_TIMESTAMPS: u32 = 12;
/// Ethernet MTU of a host interface by default (IP packet size).
pub const HOST_MTU: u32 = 1500;

/// TCP maximum segment size (payload) for a host MTU, with the timestamps
/// option: 1500 -> 1448.
#[inline]
pub fn tcp_mss(host_mtu: u32) -> u32 {
    host_mtu - IPV4 - TCP - TCP_TIMESTAMPS
}

/// Bytes on the wire of a TCP/IPv4 segment with `payload` bytes of data
/// (0 for a pure ACK), timestamps option included.
#[inline]
pub fn tcp_wire_bytes(payload: u32, vlan: bool) -> u32 {
    let l2 = ETH + if vlan { VLAN } else { 0 };
    let frame = l2 + IPV4 + TCP + TCP_TIMESTAMPS + payload + FCS;
    PREAMBLE_SFD + IFG + frame.max(MIN_FRAME)
}

/// Goodput of a long TCP stream of full segments at `line_gbps`.
pub fn tcp_goodput_gbps(line_gbps: f64, host_mtu: u32, vlan: bool) -> f64 {
    let mss = tcp_mss(host_mtu);
    line_gbps * mss as f64 / tcp_wire_bytes(mss, vlan) as f64
}

/// MPA header: the ULPDU length field.
pub const MPA_LEN: u32 = 2;
/// MPA trailer: CRC32c.
pub const MPA_CRC: u32 = 4;
/// An MPA marker (a 4-byte pointer back to the FPDU start).
pub const MPA_MARKER: u32 = 4;
/// MPA markers sit every this many bytes of the TCP stream.
pub const MPA_MARKER_PERIOD: u32 = 512;
/// DDP tagged header with the RDMAP control byte (WRITE, READ response):
/// DDP control 1, RDMAP control 1, STag 4, tagged offset 8.
pub const DDP_TAGGED: u32 = 14;
/// DDP untagged header with the RDMAP control byte (SEND, READ request):
/// DDP control 1, RDMAP control 1, reserved / invalidate STag 4, queue
/// number 4, message sequence number 4, message offset 4.
pub const DDP_UNTAGGED: u32 = 18;
/// RDMAP READ request fields (RFC 5040 4.4): sink STag 4, sink tagged
/// offset 8, read size 4, source STag 4, source tagged offset 8.
pub const RDMAP_READ_REQ: u32 = 28;

/// The DDP/RDMAP header of an iWARP segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ddp {
    /// Tagged (RDMA WRITE, READ response): 14 bytes.
    Tagged,
    /// Untagged (SEND): 18 bytes.
    Untagged,
    /// Untagged READ request: 18 + 28 bytes, no payload.
    ReadRequest,
}

impl Ddp {
    /// Header bytes of the ULPDU before the payload.
    #[inline]
    pub fn header_bytes(self) -> u32 {
        match self {
            Ddp::Tagged => DDP_TAGGED,
            Ddp::Untagged => DDP_UNTAGGED,
            Ddp::ReadRequest => DDP_UNTAGGED + RDMAP_READ_REQ,
        }
    }
}

/// MPA framing of one FPDU carrying `ulpdu` bytes (DDP header + payload):
/// length field, pad to a multiple of 4, CRC (when `crc`). Markers are
/// counted separately ([`mpa_markers`]).
#[inline]
pub fn mpa_fpdu_bytes(ulpdu: u32, crc: bool) -> u32 {
    (MPA_LEN + ulpdu).next_multiple_of(4) + if crc { MPA_CRC } else { 0 }
}

/// MPA markers falling in `len` bytes of FPDU data that start at offset
/// `seq` of the marker-free stream. Marker k sits just before data byte
/// 508 k (508 data bytes + 4 of marker = the 512-byte period), so the count
/// is the multiples of 508 in [seq, seq + len).
#[inline]
pub fn mpa_markers(seq: u64, len: u32) -> u32 {
    let period = (MPA_MARKER_PERIOD - MPA_MARKER) as u64;
    let end = seq + len as u64;
    (end.div_ceil(period) - seq.div_ceil(period)) as u32
}

/// MULPDU (RFC 5044 section 8.1.1): the largest ULPDU (DDP header +
/// payload) whose FPDU fits an effective MSS of `emss` bytes:
/// EMSS - (6 + EMSS mod 4) without markers, EMSS - (6 + 4 ceil(EMSS / 512)
/// + EMSS mod 4) with them. (Without CRC the 4 CRC bytes are free too.)
pub fn mpa_mulpdu(emss: u32, markers: bool, crc: bool) -> u32 {
    let marker_room = if markers {
        MPA_MARKER * emss.div_ceil(MPA_MARKER_PERIOD)
    } else {
        0
    };
    let crc_b = if crc { MPA_CRC } else { 0 };
    emss - (MPA_LEN + crc_b + emss % 4 + marker_room)
}

/// TCP MSS of an offloaded connection for an IP MTU: MTU - IPv4 - TCP,
/// minus the 12-byte timestamps option when it is in use.
#[inline]
pub fn iwarp_mss(ip_mtu: u32, timestamps: bool) -> u32 {
    ip_mtu - IPV4 - TCP - if timestamps { TCP_TIMESTAMPS } else { 0 }
}

/// Bytes on the wire of a TCP/IPv4 segment carrying `tcp_payload` bytes
/// (FPDU bytes and markers; 0 for a pure ACK), with or without the
/// timestamps option.
#[inline]
pub fn iwarp_wire_bytes(tcp_payload: u32, vlan: bool, timestamps: bool) -> u32 {
    let l2 = ETH + if vlan { VLAN } else { 0 };
    let ts = if timestamps { TCP_TIMESTAMPS } else { 0 };
    let frame = l2 + IPV4 + TCP + ts + tcp_payload + FCS;
    PREAMBLE_SFD + IFG + frame.max(MIN_FRAME)
}

/// Goodput of a long iWARP WRITE stream at `line_gbps`: payload share of
/// full segments (MULPDU - 14 bytes of payload each), markers off, CRC on.
pub fn iwarp_write_goodput_gbps(line_gbps: f64, ip_mtu: u32, vlan: bool, ts: bool) -> f64 {
    let emss = iwarp_mss(ip_mtu, ts);
    let payload = mpa_mulpdu(emss, false, true) - DDP_TAGGED;
    let fpdu = mpa_fpdu_bytes(DDP_TAGGED + payload, true);
    line_gbps * payload as f64 / iwarp_wire_bytes(fpdu, vlan, ts) as f64
}

/// InfiniBand local route header.
pub const IB_LRH: u32 = 8;
/// InfiniBand variant CRC (per link).
pub const IB_VCRC: u32 = 2;
/// InfiniBand link-level flow-control packet (op, FCTBS, VL, FCCL, LPCRC).
pub const IB_FCP_BYTES: u32 = 6;
/// InfiniBand flow-control credit: one 64-byte block of a VL buffer.
pub const IB_CREDIT_BYTES: u64 = 64;
/// The InfiniBand MTUs.
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// InfiniBand 4x link speeds: (name, signalling Gb/s, data Gb/s). A fabric
/// file gives link rates as the data rate, which is what IB names quote
/// from EDR on (SDR 4x signals 10 Gb/s and carries 8 Gb/s after 8b/10b;
/// FDR signals 56.25 and carries 54.5 after 64b/66b; EDR 100, HDR 200,
/// HDR100 100 on two lanes, NDR 400, all after 64b/66b).
pub const IB_LINK_SPEEDS: [(&str, f64, f64); 8] = [
    ("SDR", 10.0, 8.0),
    ("DDR", 20.0, 16.0),
    ("QDR", 40.0, 32.0),
    ("FDR", 56.25, 54.545),
    ("EDR", 103.125, 100.0),
    ("HDR100", 103.125, 100.0),
    ("HDR", 206.25, 200.0),
    ("NDR", 412.5, 400.0),
];

/// Which extended header a packet carries besides the BTH.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ext {
    /// None (middle and last WRITE packets, SEND packets).
    None,
    /// RETH (first or only WRITE packet, READ request).
    Reth,
    /// AETH (ACK, NAK, CNP, READ response first/last/only).
    Aeth,
}

/// Bytes on the wire of a RoCEv2 packet with `payload` bytes of data
/// (padded to a multiple of 4, as the BTH's PadCnt says).
#[inline]
pub fn roce_wire_bytes(payload: u32, ext: Ext, vlan: bool) -> u32 {
    let ext_b = match ext {
        Ext::None => 0,
        Ext::Reth => RETH,
        Ext::Aeth => AETH,
    };
    let l2 = ETH + if vlan { VLAN } else { 0 };
    let frame = l2 + IPV4 + UDP + BTH + ext_b + payload.next_multiple_of(4) + ICRC + FCS;
    PREAMBLE_SFD + IFG + frame.max(MIN_FRAME)
}

/// Bytes on the wire of an InfiniBand packet with `payload` bytes of data
/// (the payload padded to a multiple of 4).
#[inline]
pub fn ib_wire_bytes(payload: u32, ext: Ext) -> u32 {
    let ext_b = match ext {
        Ext::None => 0,
        Ext::Reth => RETH,
        Ext::Aeth => AETH,
    };
    IB_LRH + BTH + ext_b + payload.next_multiple_of(4) + ICRC + IB_VCRC
}

/// Flow-control credits (64-byte blocks) a packet of `wire` bytes takes.
#[inline]
pub fn ib_credits(wire: u32) -> u64 {
    (wire as u64).div_ceil(IB_CREDIT_BYTES)
}

/// Goodput of a long InfiniBand WRITE stream at `data_gbps` (the data
/// rate): payload share of full-MTU middle packets.
pub fn ib_write_goodput_gbps(data_gbps: f64, mtu: u32) -> f64 {
    data_gbps * mtu as f64 / ib_wire_bytes(mtu, Ext::None) as f64
}

/// Goodput of a long WRITE stream at `line_gbps`: payload share of the wire
/// for full-MTU middle packets, ignoring the one RETH per message.
pub fn write_goodput_gbps(line_gbps: f64, mtu: u32, vlan: bool) -> f64 {
    line_gbps * mtu as f64 / roce_wire_bytes(mtu, Ext::None, vlan) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_middle_write_packet_carries_82_bytes_of_overhead() {
        assert_eq!(roce_wire_bytes(1024, Ext::None, false), 1024 + 82);
        assert_eq!(roce_wire_bytes(4096, Ext::None, true), 4096 + 86);
    }

    #[test]
    fn goodput_matches_the_reference_figures() {
        assert!((write_goodput_gbps(100.0, 1024, false) - 92.59).abs() < 0.01);
        assert!((write_goodput_gbps(100.0, 2048, false) - 96.15).abs() < 0.01);
        assert!((write_goodput_gbps(100.0, 4096, false) - 98.04).abs() < 0.01);
    }

    #[test]
    fn small_frames_are_padded_to_64_bytes() {
        // ACK: 14+20+8+12+4+4+4 = 66 > 64, no padding.
        assert_eq!(roce_wire_bytes(0, Ext::Aeth, false), 86);
        // A 2-byte WRITE: 14+20+8+12+16+2 (+2 pad)+4+4 = 82.
        assert_eq!(roce_wire_bytes(2, Ext::Reth, false), 102);
        // The pad brings the payload to a multiple of 4: 1, 2, 4 and 5
        // bytes take 4, 4, 4 and 8 (the helper measured 99, 100, 102 and
        // 103 B a message before, and 123.7 Mpps at -s 2, above the 122.5
        // Mpps a 102 B frame allows at 100 Gb/s).
        let w = |n| roce_wire_bytes(n, Ext::Reth, false);
        assert_eq!([w(1), w(2), w(4), w(5)], [102, 102, 102, 106]);
        assert_eq!(roce_wire_bytes(1024, Ext::None, false), 1024 + 82);
        assert_eq!(PFC_FRAME_WIRE, 84);
    }

    #[test]
    fn an_ib_packet_carries_26_bytes_of_overhead_and_no_framing() {
        // LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B around a middle packet.
        assert_eq!(ib_wire_bytes(4096, Ext::None), 4096 + 26);
        // First WRITE packet: + RETH 16; a 2-byte payload is padded to 4.
        assert_eq!(ib_wire_bytes(2, Ext::Reth), 8 + 12 + 16 + 4 + 4 + 2);
        // ACK: LRH + BTH + AETH + ICRC + VCRC = 30 B, no 64 B minimum.
        assert_eq!(ib_wire_bytes(0, Ext::Aeth), 30);
        // 4122 B = 64.4 blocks: 65 credits; 1050 B: 17 credits.
        assert_eq!(ib_credits(4122), 65);
        assert_eq!(ib_credits(1050), 17);
        assert_eq!(ib_credits(64), 1);
        // 99.4 % at 4 KB (IB's 26-byte LRH+BTH+CRCs per 4 KB packet), against RoCE's 98.0 %.
        assert!((ib_write_goodput_gbps(100.0, 4096) - 99.369).abs() < 0.001);
        // SDR 4x: 10 Gb/s of signalling, 8 Gb/s of data (8b/10b).
        assert_eq!(IB_LINK_SPEEDS[0], ("SDR", 10.0, 8.0));
    }

    #[test]
    fn iwarp_framing_by_hand() {
        // MTU 9000 with timestamps: EMSS = 9000 - 20 - 20 - 12 = 8948.
        assert_eq!(iwarp_mss(9000, true), 8948);
        assert_eq!(iwarp_mss(9000, false), 8960);
        // MULPDU = 8948 - (6 + 8948 mod 4 = 0) = 8942; a WRITE segment
        // then carries 8942 - 14 = 8928 bytes of payload, and its FPDU is
        // 2 + 8942 (already a multiple of 4) + 4 = 8948: the whole EMSS.
        assert_eq!(mpa_mulpdu(8948, false, true), 8942);
        assert_eq!(mpa_fpdu_bytes(14 + 8928, true), 8948);
        // On the wire: 8 + 12 + 14 + 20 + 20 + 12 + 8948 + 4 = 9038.
        assert_eq!(iwarp_wire_bytes(8948, false, true), 9038);
        // Goodput at 10 Gb/s: 10 x 8928 / 9038 = 9.8783 Gb/s.
        assert!((iwarp_write_goodput_gbps(10.0, 9000, false, true) - 9.87829).abs() < 1e-5);
        // EMSS 1448 (MTU 1500): 1448 mod 4 = 0, MULPDU 1442; with markers
        // 4 x ceil(1448 / 512) = 12 more: 1430.
        assert_eq!(mpa_mulpdu(1448, false, true), 1442);
        assert_eq!(mpa_mulpdu(1448, true, true), 1430);
        // EMSS 1450: 1450 mod 4 = 2 -> 1450 - 8 = 1442.
        assert_eq!(mpa_mulpdu(1450, false, true), 1442);
        // A 2-byte WRITE: ULPDU 14 + 2 = 16, 2 + 16 = 18 padded to 20,
        // + CRC 4 = 24; frame 14 + 20 + 32 + 24 + 4 = 94, 114 on the wire.
        assert_eq!(mpa_fpdu_bytes(16, true), 24);
        assert_eq!(iwarp_wire_bytes(24, false, true), 114);
        // A READ request: ULPDU 18 + 28 = 46, 2 + 46 = 48, + 4 = 52.
        assert_eq!(Ddp::ReadRequest.header_bytes(), 46);
        assert_eq!(mpa_fpdu_bytes(46, true), 52);
        // A pure ACK with timestamps: 14 + 20 + 32 + 4 = 70, 90 on the wire;
        // without: 58 B frame padded to 64, 84 on the wire.
        assert_eq!(iwarp_wire_bytes(0, false, true), 90);
        assert_eq!(iwarp_wire_bytes(0, false, false), 84);
        // Markers every 508 data bytes: one before byte 0, one before 508.
        assert_eq!(mpa_markers(0, 508), 1);
        assert_eq!(mpa_markers(0, 509), 2);
        assert_eq!(mpa_markers(1, 507), 0);
        assert_eq!(mpa_markers(1016, 1), 1);
    }

    #[test]
    fn a_full_tcp_segment_is_1538_bytes_on_the_wire() {
        // MSS = 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps) = 1448.
        assert_eq!(tcp_mss(1500), 1448);
        // 8 + 12 + 14 + 20 + 20 + 12 + 1448 + 4 = 1538: the 1500 B IP
        // packet plus 38 B of Ethernet framing.
        assert_eq!(tcp_wire_bytes(1448, false), 1538);
        assert_eq!(tcp_wire_bytes(1448, true), 1542);
        // A pure ACK: 14 + 20 + 32 + 4 = 70 B frame (no padding), 90 on the wire.
        assert_eq!(tcp_wire_bytes(0, false), 90);
        // Goodput at 100G: 100 x 1448 / 1538 = 94.148 Gb/s.
        assert!((tcp_goodput_gbps(100.0, 1500, false) - 94.148).abs() < 0.001);
        // Jumbo frames: MSS 8948, 9038 B on the wire.
        assert_eq!(tcp_wire_bytes(tcp_mss(9000), false), 9038);
    }
}
