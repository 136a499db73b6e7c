//! InfiniBand routing: static destination-based linear forwarding tables,
//! as a subnet manager computes them.
//!
//! Each switch has one egress port per destination LID (a host's LID is
//! its index plus one): among the min-hop ports towards the destination (the same
//! candidates Ethernet's ECMP groups hold, in port order), the one at
//! position `(destination index / W) mod number of candidates`, W the
//! product of the up-link counts of the levels below (1 at a leaf; see
//! `Routing::pin_dmodk`). This is D-mod-K routing (Zahavi et al.; OpenSM's
//! fat-tree engine spreads destinations the same way): consecutive
//! destinations leave a leaf on consecutive up-ports, and each spine
//! reaches each destination by one port, so a shift permutation between
//! leaves uses every up-link once, where ECMP hashing collides. Every
//! packet to a destination follows one path whatever its source or QP.
//! On a three-level fat tree the destinations of a pod spread over every
//! core switch, so a shift permutation runs at line rate.
//! Left out: LMC (several LIDs per port), up/down or LASH for non-tree
//! topologies (min-hop routes on a graph with cycles may deadlock with
//! credits, which is not checked), adaptive routing, SHIELD.

use super::super::port::Port;
use super::super::routing::Routing;
use crate::topology::Topology;

/// Replace every ECMP group by its D-mod-K member.
pub(crate) fn pin_dmodk(
    routing: &mut Routing,
    topo: &Topology,
    ports: &[Port],
    node_ports: &[u32],
) {
    routing.pin_dmodk(topo, ports, node_ports);
}
