//! Wire formats: how many bytes each kind of RoCEv2 and TCP packet occupies
//! on the wire, and the analytic goodput that follows.
//!
//! Counted per frame: preamble + SFD (8), inter-frame gap (12), Ethernet
//! header (14, +4 with an 802.1Q tag), IPv4 (20), then for RoCEv2 UDP (8),
//! BTH (12), the extended transport header of the packet kind (RETH 16,
//! AETH 4) and ICRC (4), or for TCP the TCP header (20) with the timestamps
//! option Linux sends (12), and FCS (4). A frame shorter than the 64 B
//! Ethernet minimum is padded. Not modelled: IPv6, immediate data, atomics,
//! GRH, TCP SACK blocks.

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

/// Bytes on the wire of a RoCEv2 packet with `payload` bytes of data.
#[inline]
pub fn roce_wire_bytes(payload: u32, ext: Ext, vlan: bool) -> u32 {
    let ext_b = match ext {
        Ext::None => 0,
        Ext::Reth => RETH,
        Ext::Aeth => AETH,
    };
    let l2 = ETH + if vlan { VLAN } else { 0 };
    let frame = l2 + IPV4 + UDP + BTH + ext_b + payload + ICRC + FCS;
    PREAMBLE_SFD + IFG + frame.max(MIN_FRAME)
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
        // A 2-byte WRITE: 14+20+8+12+16+2+4+4 = 80.
        assert_eq!(roce_wire_bytes(2, Ext::Reth, false), 100);
        assert_eq!(PFC_FRAME_WIRE, 84);
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
