//! How switches choose among equal-cost next hops: static ECMP hashing or
//! adaptive routing.
//!
//! `[routing] mode = "ecmp"` (the default) hashes each packet's 5-tuple
//! with the switch's seed, so a flow keeps one path whatever the load.
//! `mode = "adaptive"` lets each switch pick, among the same minimal next
//! hops, the one whose egress queue (the packet's priority) holds the
//! fewest bytes, as adaptive-routing switch ASICs do from their local
//! queue state (Sandia's Woven EFX-1000 at the edge of its internal fat
//! tree; NVIDIA Spectrum-X; Broadcom's dynamic load balancing):
//! - `ordering = "relaxed"`: every packet is placed on its own, so a flow
//!   spreads over the paths and its packets may arrive out of order;
//! - `ordering = "strict"`: a flow moves only after it has been idle for
//!   `flowlet_gap_us` at that switch (flowlet switching), so that the
//!   packets it already sent leave before any take the new path.
//!
//! Not modelled: remote congestion information (only the deciding switch's
//! own queues count), weighted ECMP, InfiniBand adaptive routing (refused:
//! InfiniBand fabrics route D-mod-K).

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// How next hops are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutingMode {
    /// Hash of the 5-tuple, per-switch seed.
    #[default]
    Ecmp,
    /// Least-loaded egress queue among the minimal next hops.
    Adaptive,
}

/// Packet ordering under adaptive routing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ordering {
    /// Per-packet choice; packets of a flow may be reordered.
    #[default]
    Relaxed,
    /// Per-flowlet choice; a flow moves only after an idle gap.
    Strict,
}

/// The `[routing]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSpec {
    /// "ecmp" or "adaptive".
    pub mode: RoutingMode,
    /// "relaxed" or "strict" (adaptive only).
    pub ordering: Ordering,
    /// Idle time after which a flow may move under strict ordering, us.
    pub flowlet_gap_us: f64,
}

impl Default for RoutingSpec {
    fn default() -> Self {
        RoutingSpec {
            mode: RoutingMode::Ecmp,
            ordering: Ordering::Relaxed,
            flowlet_gap_us: 50.0,
        }
    }
}

impl RoutingSpec {
    /// True for the defaults (left out of a printed fabric).
    pub fn is_default(&self) -> bool {
        *self == RoutingSpec::default()
    }

    /// Check the values; `infiniband` fabrics route statically.
    pub fn validate(&self, infiniband: bool) -> Result<()> {
        if !(self.flowlet_gap_us.is_finite() && self.flowlet_gap_us > 0.0) {
            return fabric_err(format!(
                "routing.flowlet_gap_us must be a positive number of microseconds, got {}",
                self.flowlet_gap_us
            ));
        }
        if infiniband && self.mode == RoutingMode::Adaptive {
            return fabric_err(
                "routing.mode = \"adaptive\" is modelled on Ethernet fabrics only; \
                 InfiniBand fabrics route D-mod-K: remove [routing] or set mode = \"ecmp\"",
            );
        }
        if self.mode == RoutingMode::Ecmp && self.ordering != Ordering::Relaxed {
            return fabric_err(
                "routing.ordering applies to mode = \"adaptive\" only (ECMP keeps every flow on \
                 one path); set mode = \"adaptive\" or remove ordering",
            );
        }
        // A gap other than the default where no flowlet is cut would be
        // ignored: say so rather than run without it.
        if self.ordering != Ordering::Strict
            && self.flowlet_gap_us != RoutingSpec::default().flowlet_gap_us
        {
            return fabric_err(format!(
                "routing.flowlet_gap_us = {} applies to mode = \"adaptive\" with ordering = \
                 \"strict\" only (flowlet switching); set both, or remove flowlet_gap_us",
                self.flowlet_gap_us
            ));
        }
        Ok(())
    }
}
