//! NCCL's knobs and protocol constants: the algorithm and protocol a
//! collective runs with, its channels, and what each protocol costs.
//!
//! Protocols (NCCL `src/include/device.h`, `src/graph/tuning.cc`):
//! - Simple: data in 4 MiB buffers (`NCCL_BUFFSIZE`) of 8 steps
//!   (`NCCL_STEPS`), so 512 KiB per step, synchronised by flags after each
//!   step: full bandwidth, the highest latency;
//! - LL (low latency): 8-byte lines of 4 data bytes and a 4-byte flag, so
//!   half the bandwidth, the lowest latency;
//! - LL128: 128-byte lines of 120 data bytes and an 8-byte flag (15/16 of
//!   the bandwidth), the latency in between.
//!
//! On the wire a message of `b` data bytes is `b / efficiency` bytes.
//! Latency per hop is the protocol's, from NCCL's own tuning model
//! (`hwLat`, `baseLat` of `tuning.cc`): the simulated network supplies
//! the NIC, switch and wire part of a network hop, so the software part
//! added per network hop is NCCL's figure less a typical fabric latency
//! (calibrated, `docs/nccl.md`).
//!
//! NVLS and NVLS-Tree (NVLink SHARP) run with Simple only, as in NCCL;
//! their per-call cost is NCCL's NVLS latency (`hwLat[NVLINK][NVLS]`, 25
//! us, with `baseLat` 0) charged once per call, and a network hop of
//! NVLS-Tree costs `hwLat[NET][NVLSTree]` (14 us) less the fabric's part.
//!
//! Left out: NCCL's runtime auto-tuning of channels and threads per
//! architecture (channels default from the NICs), CollNet/SHARP, PAT.

use crate::error::{arg_err, Result};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// A protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Protocol {
    /// 8-byte lines, half of them flags.
    #[serde(rename = "LL")]
    Ll,
    /// 128-byte lines, 8 bytes of flag.
    #[serde(rename = "LL128")]
    Ll128,
    /// Plain buffers and flags per step.
    Simple,
}

/// An algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Ring: every rank sends to the next one.
    Ring,
    /// Double binary tree across servers, chain inside each server.
    Tree,
    /// NVLink SHARP on one server: NVSwitch reduces and multicasts.
    Nvls,
    /// NVLink SHARP inside each server, a double binary tree between
    /// servers (several servers only).
    NvlsTree,
}

impl Protocol {
    /// All protocols, in NCCL's order.
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    /// NCCL's name (`NCCL_PROTO`).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    /// Parse an `NCCL_PROTO` value (one protocol, any case).
    pub fn parse(s: &str) -> Result<Protocol> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ll" => Ok(Protocol::Ll),
            "ll128" => Ok(Protocol::Ll128),
            "simple" => Ok(Protocol::Simple),
            _ => arg_err(format!(
                "unknown NCCL protocol {s:?}; use \"LL\", \"LL128\" or \"Simple\""
            )),
        }
    }

    /// Data bytes per wire byte.
    pub fn efficiency(self) -> f64 {
        match self {
            Protocol::Ll => 0.5,
            Protocol::Ll128 => 120.0 / 128.0,
            Protocol::Simple => 1.0,
        }
    }

    /// Wire bytes of a message of `data` bytes.
    pub fn wire_bytes(self, data: u64) -> u64 {
        match self {
            // 4 data bytes per 8-byte line.
            Protocol::Ll => data.div_ceil(4) * 8,
            // 120 data bytes per 128-byte line.
            Protocol::Ll128 => data.div_ceil(120) * 128,
            Protocol::Simple => data,
        }
    }

    /// Data bytes a connection moves per step (one of the `NCCL_STEPS` =
    /// 8 slots of its buffer). Simple: 4 MiB / 8. LL: 8 lines of 16 B per
    /// thread x 512 threads x 8 steps = 512 KiB of lines, half of it data.
    /// LL128: 120 elements of 8 B per thread x 640 threads x 8 steps,
    /// 120/128 of it data.
    pub fn step_bytes(self) -> u64 {
        match self {
            Protocol::Simple => (4 << 20) / 8,
            Protocol::Ll => 8 * 16 * 512 / 2,
            Protocol::Ll128 => 120 * 8 * 640 / 128 * 120,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl Algorithm {
    /// NCCL's name (`NCCL_ALGO`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "Ring",
            Algorithm::Tree => "Tree",
            Algorithm::Nvls => "NVLS",
            Algorithm::NvlsTree => "NVLSTree",
        }
    }

    /// Whether this is one of NVLink SHARP's algorithms.
    pub fn is_nvls(self) -> bool {
        matches!(self, Algorithm::Nvls | Algorithm::NvlsTree)
    }

    /// Parse an `NCCL_ALGO` value (one algorithm, any case).
    pub fn parse(s: &str) -> Result<Algorithm> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ring" => Ok(Algorithm::Ring),
            "tree" => Ok(Algorithm::Tree),
            "nvls" => Ok(Algorithm::Nvls),
            "nvlstree" => Ok(Algorithm::NvlsTree),
            "collnet" | "collnetdirect" | "collnetchain" | "pat" => arg_err(format!(
                "NCCL algorithm {s:?} is not modelled; use \"Ring\", \"Tree\", \"NVLS\" or \"NVLSTree\""
            )),
            _ => arg_err(format!(
                "unknown NCCL algorithm {s:?}; use \"Ring\", \"Tree\", \"NVLS\" or \"NVLSTree\""
            )),
        }
    }

    fn index(self) -> usize {
        match self {
            Algorithm::Ring => 0,
            Algorithm::Tree => 1,
            Algorithm::Nvls | Algorithm::NvlsTree => unreachable!("NVLS has its own costs"),
        }
    }
}

/// NCCL's latency table, us, [algorithm][protocol] (Ring, Tree x LL,
/// LL128, Simple): `baseLat` of `tuning.cc`, a fixed cost per call. These
/// are the costs the runtime charges; Tree/Simple takes NCCL 2.24's
/// figures (8.4 us per call, 4 and 14 us per hop), not 2.22's 0 and 28 us,
/// which are a penalty of its selection model (kept in `tuning.rs`, where
/// the choice is made), not a time anything takes.
const BASE_LAT_US: [[f64; 3]; 2] = [[6.6, 14.0, 8.4], [6.8, 14.0, 8.4]];
/// `hwLat[NVLINK]`, us per intra-server hop.
const NVLINK_LAT_US: [[f64; 3]; 2] = [[0.6, 1.9, 3.4], [0.6, 1.25, 4.0]];
/// `hwLat[NET]`, us per network hop.
const NET_LAT_US: [[f64; 3]; 2] = [[2.7, 4.0, 14.0], [5.0, 8.5, 14.0]];
/// `hwLat[NVLINK][NVLS]` and `[NVLSTree]` (Simple), us, with `baseLat`
/// 0: the latency of an NVLS call inside a server.
pub const NVLS_LAT_US: f64 = 25.0;
/// `hwLat[NET][NVLSTree]` (Simple), us per network hop.
pub const NVLS_TREE_NET_LAT_US: f64 = 14.0;
/// The fabric part of NCCL's network hop latency: a small message's
/// one-way time through NIC, two switch hops and the wire on the default
/// fabrics (about 2 us), simulated rather than added.
pub const FABRIC_HOP_US: f64 = 2.0;

/// Per-call and per-hop costs of one (algorithm, protocol).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// Fixed cost per call (kernel launch and set-up).
    pub launch: Time,
    /// Software cost of one NVLink hop, beside the NVLink transfer.
    pub nvlink_hop: Time,
    /// Software cost of one network hop, beside the simulated network.
    pub net_hop: Time,
}

impl Costs {
    /// The costs NCCL's tuning model gives `algo` with `proto`.
    pub fn of(algo: Algorithm, proto: Protocol) -> Costs {
        let us = |v: f64| Time::from_ns_f64(v.max(0.0) * 1e3);
        if algo.is_nvls() {
            // NVLS: the switch's latency once per call; NVLS-Tree's
            // network hops at their own figure.
            return Costs {
                launch: us(NVLS_LAT_US),
                nvlink_hop: Time::ZERO,
                net_hop: us(NVLS_TREE_NET_LAT_US - FABRIC_HOP_US),
            };
        }
        let (a, p) = (algo.index(), proto.index());
        Costs {
            launch: us(BASE_LAT_US[a][p]),
            nvlink_hop: us(NVLINK_LAT_US[a][p]),
            net_hop: us(NET_LAT_US[a][p] - FABRIC_HOP_US),
        }
    }
}

/// What the user may force, as NCCL's environment variables do.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclEnv {
    /// `NCCL_ALGO`: "Ring" or "Tree" (default: NCCL's choice).
    #[serde(default)]
    pub algo: Option<String>,
    /// `NCCL_PROTO`: "LL", "LL128" or "Simple" (default: NCCL's choice).
    #[serde(default)]
    pub proto: Option<String>,
    /// `NCCL_MIN_NCHANNELS`.
    #[serde(default)]
    pub min_nchannels: Option<u32>,
    /// `NCCL_MAX_NCHANNELS`.
    #[serde(default)]
    pub max_nchannels: Option<u32>,
    /// `NCCL_PXN_DISABLE`: a GPU sends only through its own NIC (no
    /// NVLink hop to the GPU of the receiver's rail). Default false.
    #[serde(default)]
    pub pxn_disable: Option<bool>,
    /// `NCCL_NVLS_ENABLE`: NVLink SHARP where the servers have it
    /// (`[gpu] nvls`). Default true.
    #[serde(default)]
    pub nvls_enable: Option<bool>,
}

/// NCCL's hard limit on channels (`MAXCHANNELS`).
pub const MAX_CHANNELS: u32 = 32;

/// Slots of a connection's buffer (NCCL's `NCCL_STEPS`): a sender runs at
/// most this many messages ahead of its receiver (`nccl/runtime.rs`).
pub const NCCL_STEPS: u64 = 8;

impl NcclEnv {
    /// The forced algorithm, if any.
    pub fn algorithm(&self) -> Result<Option<Algorithm>> {
        self.algo.as_deref().map(Algorithm::parse).transpose()
    }

    /// The forced protocol, if any.
    pub fn protocol(&self) -> Result<Option<Protocol>> {
        self.proto.as_deref().map(Protocol::parse).transpose()
    }

    /// Channels: `default` within the user's bounds and NCCL's limit.
    pub fn channels(&self, default: u32) -> Result<u32> {
        for (k, v) in [
            ("NCCL_MIN_NCHANNELS", self.min_nchannels),
            ("NCCL_MAX_NCHANNELS", self.max_nchannels),
        ] {
            if let Some(v) = v {
                if v == 0 || v > MAX_CHANNELS {
                    return arg_err(format!("{k} = {v}: use 1 to {MAX_CHANNELS}"));
                }
            }
        }
        let lo = self.min_nchannels.unwrap_or(1);
        let hi = self.max_nchannels.unwrap_or(MAX_CHANNELS);
        if lo > hi {
            return arg_err(format!(
                "NCCL_MIN_NCHANNELS = {lo} is above NCCL_MAX_NCHANNELS = {hi}"
            ));
        }
        Ok(default.clamp(lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_follow_the_line_formats() {
        assert_eq!(Protocol::Simple.wire_bytes(1000), 1000);
        assert_eq!(Protocol::Ll.wire_bytes(1000), 2000);
        assert_eq!(Protocol::Ll.wire_bytes(1), 8);
        assert_eq!(Protocol::Ll128.wire_bytes(1200), 1280);
        assert_eq!(Protocol::Ll128.wire_bytes(121), 256);
    }

    #[test]
    fn names_parse_back_and_unknowns_say_what_to_use() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.name()).unwrap(), p);
        }
        assert_eq!(Algorithm::parse("ring").unwrap(), Algorithm::Ring);
        assert_eq!(Algorithm::parse("NVLSTree").unwrap(), Algorithm::NvlsTree);
        let e = Algorithm::parse("collnet").unwrap_err().to_string();
        assert!(e.contains("not modelled"), "{e}");
        let e = Protocol::parse("fast").unwrap_err().to_string();
        assert!(e.contains("\"LL128\""), "{e}");
    }

    #[test]
    fn channels_stay_in_the_bounds() {
        let env = NcclEnv {
            min_nchannels: Some(4),
            max_nchannels: Some(8),
            ..NcclEnv::default()
        };
        assert_eq!(env.channels(2).unwrap(), 4);
        assert_eq!(env.channels(16).unwrap(), 8);
        let bad = NcclEnv {
            max_nchannels: Some(0),
            ..NcclEnv::default()
        };
        assert!(bad.channels(4).is_err());
    }

    #[test]
    fn costs_come_from_the_tuning_tables() {
        let c = Costs::of(Algorithm::Ring, Protocol::Simple);
        assert_eq!(c.launch, Time::from_ns_f64(8400.0));
        assert_eq!(c.nvlink_hop, Time::from_ns_f64(3400.0));
        assert_eq!(c.net_hop, Time::from_ns_f64(12_000.0));
    }
}
