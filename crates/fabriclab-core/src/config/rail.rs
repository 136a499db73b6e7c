//! The rail-optimized builder: the topology of AI training clusters
//! (NVIDIA DGX SuperPOD reference architectures). Servers come in
//! scalable units (SUs); NIC j of every server of an SU goes to the SU's
//! rail leaf j, so GPUs of the same index on different servers are one
//! switch hop apart, and every rail leaf links to every spine.
//!
//! It needs a `[gpu]` section: the number of rails is its NICs per
//! server. Names: hosts `h{s}.nic{j}` in server order (server s owns
//! hosts s x rails ..), leaves `su{u}.rail{j}`, spines `spine{k}`.
//! Routing is the shortest-path ECMP of every builder: same-rail traffic
//! stays on its leaf, other traffic crosses a spine (NCCL sends
//! cross-rail data over NVLink first, PXN, see `nccl/`).
//!
//! The rail-only builder (kind `rail_only`, the design of Wang et al.,
//! "Rail-only: A Low-Cost High-Performance Network for Training LLMs with
//! Trillion Parameters", arXiv 2307.12169, HOTI 2024) takes the same
//! parameters but no switch joins two rails: each rail is a network of
//! its own, its SUs' leaves joined by `spines` spines of that rail (none
//! with one SU: the rail is a single leaf). NVLink inside the servers is
//! the only way between rails, so only NCCL, whose PXN moves cross-rail
//! data to the GPU on the receiver's rail first, can use every GPU pair;
//! a QP between NICs of different rails is refused with an error.
//! Spines are named `rail{j}.spine{k}`.
//!
//! Left out: a third tier above the spines (use the fat-tree builder for
//! three tiers).

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// Parameters of the rail-optimized builder.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailSpec {
    /// Number of servers.
    pub servers: u32,
    /// Servers per scalable unit (default: all of them in one).
    #[serde(default)]
    pub servers_per_su: Option<u32>,
    /// Spine switches (`rail_only`: spines of each rail, 0 with one SU).
    pub spines: u32,
    /// NIC-to-rail-leaf link rate, Gb/s.
    pub nic_gbps: f64,
    /// Leaf-to-spine link rate, Gb/s (default: the NIC rate).
    #[serde(default)]
    pub uplink_gbps: Option<f64>,
    /// Parallel links between each leaf and each spine.
    #[serde(default = "one")]
    pub links_per_pair: u32,
    /// NIC cable delay, ns (default 10, about 2 m).
    #[serde(default)]
    pub host_link_delay_ns: Option<f64>,
    /// Leaf-spine delay, ns (default 50, about 10 m).
    #[serde(default)]
    pub uplink_delay_ns: Option<f64>,
}

fn one() -> u32 {
    1
}

/// The most servers the builder makes.
pub const MAX_SERVERS: u32 = 8192;

impl RailSpec {
    /// Servers per scalable unit.
    pub fn su_size(&self) -> u32 {
        self.servers_per_su.unwrap_or(self.servers)
    }

    /// Number of scalable units.
    pub fn sus(&self) -> u32 {
        self.servers.div_ceil(self.su_size().max(1))
    }

    /// Leaf-to-spine rate, Gb/s.
    pub fn uplink(&self) -> f64 {
        self.uplink_gbps.unwrap_or(self.nic_gbps)
    }

    /// Check the values of a `rail_optimized` (`rail_only` false) or
    /// `rail_only` topology; the message names the key to change.
    pub fn validate(&self, gpu: Option<&super::GpuSpec>, rail_only: bool) -> Result<()> {
        let kind = if rail_only {
            "rail_only"
        } else {
            "rail_optimized"
        };
        if gpu.is_none() {
            return fabric_err(format!(
                "topology kind \"{kind}\" needs a [gpu] section: its rails are the NICs of \
                 each GPU server (add [gpu] with gpus_per_server)"
            ));
        }
        if self.servers == 0 || self.servers > MAX_SERVERS {
            return fabric_err(format!(
                "topology.servers = {}: use 1 to {MAX_SERVERS}",
                self.servers
            ));
        }
        if self.servers_per_su == Some(0) {
            return fabric_err("topology.servers_per_su is 0: an SU holds at least one server");
        }
        if self.spines == 0 && !rail_only {
            return fabric_err(
                "topology.spines = 0: a rail-optimized fabric needs at least one spine; for \
                 rails joined only by NVLink use kind = \"rail_only\"",
            );
        }
        if self.spines == 0 && self.sus() > 1 {
            return fabric_err(format!(
                "topology.spines = 0 with {} scalable units: each rail's leaves need spines \
                 to join them; set spines (per rail) or servers_per_su = servers",
                self.sus()
            ));
        }
        if self.links_per_pair == 0 {
            return fabric_err("topology.links_per_pair must be at least 1");
        }
        super::positive_rate("topology.nic_gbps", self.nic_gbps)?;
        super::positive_rate("topology.uplink_gbps", self.uplink())?;
        for (what, v) in [
            ("host_link_delay_ns", self.host_link_delay_ns),
            ("uplink_delay_ns", self.uplink_delay_ns),
        ] {
            if let Some(v) = v {
                super::non_negative(&format!("topology.{what}"), v)?;
            }
        }
        Ok(())
    }
}
