//! Wire formats: how many bytes each kind of RoCEv2 packet occupies on the
//! wire, and the analytic goodput that follows.
//!
//! Counted per frame: preamble + SFD (8), inter-frame gap (12), Ethernet
//! header (14, +4 with an 802.1Q tag), IPv4 (20), UDP (8), BTH (12), the
//! extended transport header of the packet kind (RETH 16, AETH 4), ICRC (4)
//! and FCS (4). A frame shorter than the 64 B Ethernet minimum is padded.
//! Not modelled: IPv6, immediate data, atomics, GRH.

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
}
