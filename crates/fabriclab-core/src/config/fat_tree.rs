//! The three-tier fat-tree builder (the k-ary fat tree of Al-Fares et al.,
//! "A scalable, commodity data center network architecture", 2008): k pods,
//! each of k/2 edge and k/2 aggregation switches fully meshed, and (k/2)^2
//! core switches; aggregation switch j of every pod links to cores
//! j k/2 .. j k/2 + k/2 - 1. With k/2 hosts per edge switch it is
//! non-blocking (k^3/4 hosts); more hosts per edge oversubscribe the edge
//! by hosts_per_edge / (k/2), on edge switches of more ports than k
//! (`edge_radix`, which says how many: hosts and k/2 uplinks must fit, as
//! on a real edge switch of 48 host ports and 16 uplinks).
//!
//! Names: hosts `h0..` in edge order (edge 0 holds h0..h(hosts_per_edge-1)),
//! switches `edge0..` (pod-major: pod p holds edge p k/2 ..), `agg0..` and
//! `core0..`. Routing needs nothing special: the shortest-path ECMP groups
//! of `net/routing.rs` are the fat tree's up-down paths.
//!
//! Left out: other fat-tree families (XGFT with arbitrary arities,
//! tapered cores), and per-tier switch models (every switch is the
//! fabric's `[switch]`).

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// Parameters of the fat-tree builder.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeSpec {
    /// Switch radix: an even number of pods and ports per switch.
    pub k: u32,
    /// Hosts per edge switch (default k/2, non-blocking).
    #[serde(default)]
    pub hosts_per_edge: Option<u32>,
    /// Ports of an edge switch (default k): its hosts and its k/2 uplinks
    /// must fit. Above k to oversubscribe the edge.
    #[serde(default)]
    pub edge_radix: Option<u32>,
    /// Host-to-edge link rate, Gb/s.
    pub host_link_gbps: f64,
    /// Edge-aggregation and aggregation-core link rate, Gb/s (default the
    /// host rate).
    #[serde(default)]
    pub fabric_link_gbps: Option<f64>,
    /// Host cable delay, ns (default 10, about 2 m).
    #[serde(default)]
    pub host_link_delay_ns: Option<f64>,
    /// Edge-aggregation delay, ns (default 50, about 10 m).
    #[serde(default)]
    pub edge_agg_delay_ns: Option<f64>,
    /// Aggregation-core delay, ns (default 100, about 20 m).
    #[serde(default)]
    pub agg_core_delay_ns: Option<f64>,
}

/// The largest fabric the builder makes.
pub const MAX_HOSTS: u64 = 65_536;

impl FatTreeSpec {
    /// Hosts per edge switch.
    pub fn hosts_per_edge(&self) -> u32 {
        self.hosts_per_edge.unwrap_or(self.k / 2)
    }

    /// Number of hosts: k pods x k/2 edges x hosts per edge.
    pub fn hosts(&self) -> u64 {
        (self.k as u64)
            .saturating_mul((self.k / 2) as u64)
            .saturating_mul(self.hosts_per_edge() as u64)
    }

    /// Rate of the switch-to-switch links, Gb/s.
    pub fn fabric_gbps(&self) -> f64 {
        self.fabric_link_gbps.unwrap_or(self.host_link_gbps)
    }

    /// Check the values; the message names the key to change.
    pub fn validate(&self) -> Result<()> {
        if self.k < 2 || self.k % 2 == 1 {
            return fabric_err(format!(
                "topology.k = {} for a fat tree: use an even switch radix of at least 2",
                self.k
            ));
        }
        if self.hosts_per_edge == Some(0) {
            return fabric_err("topology.hosts_per_edge is 0: a fabric needs hosts");
        }
        let (hosts, up) = (self.hosts_per_edge() as u64, (self.k / 2) as u64);
        let radix = self.edge_radix.unwrap_or(self.k) as u64;
        if hosts + up > radix {
            let how = if self.edge_radix.is_some() {
                format!("topology.edge_radix = {radix}")
            } else {
                format!("k = {}, the default of topology.edge_radix", self.k)
            };
            return fabric_err(format!(
                "topology.hosts_per_edge = {hosts} with k = {}: an edge switch needs {hosts} host \
                 ports and {up} uplinks, more than its {how}; lower hosts_per_edge, or set \
                 topology.edge_radix to at least {} (an edge switch of that many ports, which \
                 oversubscribes the edge {hosts}:{up})",
                self.k,
                hosts + up
            ));
        }
        if self.hosts() > MAX_HOSTS {
            // k^3 / 4 in 128 bits: the 64-bit product saturates. Whole
            // hosts, but for counts no fabric comes near (k = 2^31: 2^91).
            let n = self.k as u128 * (self.k / 2) as u128 * self.hosts_per_edge() as u128;
            let hosts = if n < 1_000_000_000_000_000 {
                n.to_string()
            } else {
                crate::numfmt::fmt_g(n as f64, 4)
            };
            return fabric_err(format!(
                "a fat tree with k = {} and {} hosts per edge has {} hosts, over the {MAX_HOSTS} \
                 the builder makes; lower k or hosts_per_edge",
                self.k,
                self.hosts_per_edge(),
                hosts
            ));
        }
        super::positive_rate("topology.host_link_gbps", self.host_link_gbps)?;
        super::positive_rate("topology.fabric_link_gbps", self.fabric_gbps())?;
        for (what, v) in [
            ("host_link_delay_ns", self.host_link_delay_ns),
            ("edge_agg_delay_ns", self.edge_agg_delay_ns),
            ("agg_core_delay_ns", self.agg_core_delay_ns),
        ] {
            if let Some(v) = v {
                super::non_negative(&format!("topology.{what}"), v)?;
            }
        }
        Ok(())
    }
}
