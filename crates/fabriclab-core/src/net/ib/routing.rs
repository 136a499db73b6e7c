//! InfiniBand routing: static destination-based linear forwarding tables,
//! as a subnet manager computes them.
//!
//! Each switch has one egress port per destination LID (a host's LID is
//! its index plus one): among the min-hop ports towards the destination (the same
//! candidates Ethernet's ECMP groups hold, in port order), the one at
//! position `destination index mod number of candidates`. On a two-level
//! leaf-spine or fat tree this is D-mod-K routing (Zahavi et al.; OpenSM's
//! fat-tree engine spreads destinations the same way): consecutive
//! destinations leave a leaf on consecutive up-ports, and each spine
//! reaches each destination by one port, so a shift permutation between
//! leaves uses every up-link once, where ECMP hashing collides. Every
//! packet to a destination follows one path whatever its source or QP.
//! Left out: LMC (several LIDs per port), deeper fat trees (whose D-mod-K
//! divides by the lower levels' arity), up/down or LASH for non-tree
//! topologies (min-hop routes on a graph with cycles may deadlock with
//! credits, which is not checked), adaptive routing, SHIELD.

use super::super::routing::Routing;

/// Replace every ECMP group by its D-mod-K member.
pub(crate) fn pin_dmodk(routing: &mut Routing) {
    routing.pin_dmodk();
}
