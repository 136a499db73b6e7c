//! Limits the packet engine sees and the flow backend does not, found
//! before a run so that the flow backend refuses it rather than report a
//! rate no real link reaches.
//!
//! InfiniBand's credit loop: a sender may have at most the receiver's VL
//! buffer in flight on a link, and a packet's credits come back one loop
//! after it starts (its serialisation, the cable, the receiver's latency
//! before it frees the blocks, the 6-byte flow-control packet and the
//! cable back). A buffer smaller than that loop's bandwidth-delay product
//! caps the link below its rate with no sharing at all (32 KiB over 1 km
//! of cable: about 22 Gb/s of 100), which a fluid model of link sharing
//! cannot show. The estimate leaves out queueing and the receiver's own
//! forwarding; on that 1 km case (200 ns switches) it gives 22.0 Gb/s
//! of wire bytes where the packet engine carries 22.4 (22.2 of data). A
//! link is refused when the bound is under
//! [`SLACK`] of its rate (a few per cent either way at the edge).
//!
//! Modelled instead, not refused: the HCA's drain rate (`[ib]
//! hca_drain_gbps`), which caps the link into each host (`Net::new`).
//! Left out, and said in the docs: TCP's receive window, which the flow
//! backend's TCP does not have (`tcp.rs`).

use super::super::port::Port;
use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::topology::Topology;
use crate::units::{Rate, Time};
use crate::wire::{ib_credits, ib_wire_bytes, Ext, IB_CREDIT_BYTES, IB_FCP_BYTES};

/// A link is refused when its credit bound is under this share of its rate.
pub const SLACK: f64 = 0.95;

/// The most a link's credit loop lets through, b/s, with what sets it:
/// (bound, packets the buffer holds, packet wire bytes, loop time).
pub fn credit_bound(
    rate: Rate,
    delay: Time,
    buffer_bytes: u64,
    mtu: u32,
    into_switch: bool,
    from_switch: bool,
    switch_latency: Time,
) -> (f64, u64, u32, Time) {
    let wire = ib_wire_bytes(mtu, Ext::Reth);
    let packets = (buffer_bytes / IB_CREDIT_BYTES) / ib_credits(wire);
    let lat = |switch: bool| if switch { switch_latency } else { Time::ZERO };
    let loop_time = rate.tx_time(wire as u64)
        + delay
        + lat(into_switch)
        + rate.tx_time(IB_FCP_BYTES as u64)
        + delay
        + lat(from_switch);
    let bound = packets as f64 * wire as f64 * 8.0 / (loop_time.0 as f64 * 1e-12);
    (bound, packets, wire, loop_time)
}

/// An error naming the first link whose credit loop caps it under
/// [`SLACK`] of its rate (InfiniBand fabrics on the flow backend).
pub fn check(spec: &FabricSpec, topo: &Topology, ports: &[Port]) -> Result<()> {
    if !spec.is_infiniband() {
        return Ok(());
    }
    let ib = spec.ib_spec();
    let latency = Time::from_ns_f64(spec.switch.latency_ns);
    let h = topo.n_hosts;
    for p in ports {
        let (from_switch, into_switch) = (p.node as usize >= h, p.peer_node as usize >= h);
        let buffer = if into_switch {
            ib.switch_vl_buffer_bytes
        } else {
            ib.hca_vl_buffer_bytes
        };
        let (bound, packets, wire, loop_time) = credit_bound(
            p.rate,
            p.delay,
            buffer,
            ib.mtu,
            into_switch,
            from_switch,
            latency,
        );
        let rate = p.rate.as_bps() as f64;
        if bound < SLACK * rate {
            let names = &topo.nodes;
            return arg_err(format!(
                "the flow backend does not model InfiniBand's credit loop, which limits the \
                 link {}-{} to about {:.1} of its {:.1} Gb/s here: its receiver's VL buffer of \
                 {buffer} B holds {packets} packet(s) of {wire} B, whose credits come back \
                 {:.2} us after each starts (serialisation, cable both ways, switch latency); \
                 run it on the packet backend (--backend packet, [sim] backend = \"packet\"), or \
                 give the links more buffer ([ib] switch_vl_buffer_bytes, hca_vl_buffer_bytes)",
                names[p.node as usize].name,
                names[p.peer_node as usize].name,
                bound / 1e9,
                rate / 1e9,
                loop_time.as_us_f64(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credit_bound_is_the_buffer_over_the_loop() {
        // 100G, 5 us of cable (1 km), 32 KiB into a switch of 100 ns, MTU
        // 4096: a 4,138 B packet (LRH 8, BTH 12, RETH 16, CRCs 6) is 65
        // blocks, so 512 / 65 = 7 fit. Loop: 331.04 ns + 5 us + 100 ns +
        // 0.48 ns + 5 us = 10.43152 us; bound 7 x 4,138 x 8 / 10.43152 us
        // = 22.21 Gb/s.
        let (bound, packets, wire, t) = credit_bound(
            Rate::from_gbps_f64(100.0),
            Time::from_ns_f64(5000.0),
            32768,
            4096,
            true,
            false,
            Time::from_ns_f64(100.0),
        );
        assert_eq!((packets, wire), (7, 4138));
        assert_eq!(t, Time::from_ns_f64(10431.52));
        assert!((bound / 1e9 - 22.2135).abs() < 1e-3, "{bound}");
        // 2 m of cable: the same buffer covers the loop many times over.
        let (bound, ..) = credit_bound(
            Rate::from_gbps_f64(100.0),
            Time::from_ns_f64(10.0),
            32768,
            4096,
            true,
            false,
            Time::from_ns_f64(100.0),
        );
        assert!(bound > 4.0 * 100e9, "{bound}");
    }
}
