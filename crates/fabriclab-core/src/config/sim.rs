//! Which simulation backend runs a fabric: the packet-level engine or the
//! flow-level (fluid) model.
//!
//! `[sim] backend = "packet"` (the default) simulates every packet, queue,
//! PFC pause, ECN mark and DCQCN rate change. `backend = "flow"` moves each
//! message as a fluid flow on the path the packet engine would route it,
//! at its max-min fair share of the links (see `net/flow/`), which is what
//! makes fabrics of thousands of hosts affordable. What the flow backend
//! leaves out, and refuses rather than reporting zeros for: queues, PFC,
//! ECN and DCQCN dynamics, drops and retransmission, and queue telemetry.
//! TCP (iperf) runs as flows at their fair share, without slow start,
//! losses, window dynamics or the receive window (`net/flow/tcp.rs`).
//! InfiniBand has no credits there: a fabric whose VL buffers cannot cover
//! a link's credit loop is refused, and an HCA's drain rate caps the link
//! into its host (`net/flow/limits.rs`). Link failures are
//! approximated (flows stall on a pulled link and re-route when the fabric
//! has converged).
//!
//! `flow_quantum_ns`: flow completions that fall within this time of the
//! earliest pending one are processed together, with one rate
//! recomputation (0 = every completion on its own). Each completion keeps
//! its own time; the other flows' rates are updated up to one quantum late.
//!
//! `flow_small_bytes`: a WRITE or SEND of one packet with at most this much
//! payload (256 B by default) is sent as a packet outside the max-min solve
//! (`net/flow/small.rs`): it waits its turn at the NIC behind the QPs with
//! data and crosses the path by the packet engine's per-hop arithmetic,
//! small packets queueing behind each other at each port; its bandwidth is
//! left out of the fluid shares. 0: every message is a flow. (READ
//! requests, which carry no payload, are sent that way whatever the
//! value, except on iWARP.)

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// The simulation backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// Packet-level discrete-event simulation.
    #[default]
    Packet,
    /// Flow-level (fluid, max-min fair) simulation.
    Flow,
}

impl Backend {
    /// The name used in files, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Packet => "packet",
            Backend::Flow => "flow",
        }
    }

    /// Parse a backend name, with an error that lists the choices.
    pub fn parse(name: &str) -> Result<Backend> {
        match name {
            "packet" => Ok(Backend::Packet),
            "flow" => Ok(Backend::Flow),
            other => Err(crate::Error::InvalidArgument(format!(
                "unknown backend {other:?}; use \"packet\" or \"flow\""
            ))),
        }
    }
}

/// The `[sim]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimSpec {
    /// "packet" or "flow".
    pub backend: Backend,
    /// Flow backend: completions within this many ns are batched.
    pub flow_quantum_ns: f64,
    /// Flow backend: a message of one packet with at most this many bytes
    /// of payload is sent as a packet outside the fluid model (0: every
    /// message is a flow).
    pub flow_small_bytes: u64,
}

/// Default batching quantum of the flow backend, ns.
pub const DEFAULT_FLOW_QUANTUM_NS: f64 = 10.0;

/// Default payload limit of the flow backend's small messages, bytes.
pub const DEFAULT_FLOW_SMALL_BYTES: u64 = 256;

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            backend: Backend::Packet,
            flow_quantum_ns: DEFAULT_FLOW_QUANTUM_NS,
            flow_small_bytes: DEFAULT_FLOW_SMALL_BYTES,
        }
    }
}

impl SimSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == SimSpec::default()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let q = self.flow_quantum_ns;
        if !(q.is_finite() && (0.0..=1e9).contains(&q)) {
            return fabric_err(format!(
                "sim.flow_quantum_ns must be between 0 and 1e9 ns, got {q}"
            ));
        }
        if self.flow_small_bytes > 4096 {
            return fabric_err(format!(
                "sim.flow_small_bytes must be between 0 and 4096 B (one packet), got {}",
                self.flow_small_bytes
            ));
        }
        Ok(())
    }
}

/// Whether the environment asks for the conservation audit
/// (`FABRICLAB_AUDIT` set, and not to `0`; `net/audit.rs`).
pub fn audit_enabled_by_env() -> bool {
    std::env::var("FABRICLAB_AUDIT").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Bytes the audit keeps per port of a packet run (its counters per
/// priority: in, out, dropped, lossless drops, lost, XOFF and XON).
pub const AUDIT_PORT_BYTES: u64 = 7 * 8 * 8;
