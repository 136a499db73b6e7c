//! GPU servers (`[gpu]`): the hosts of the fabric are the NICs of servers
//! that hold `gpus_per_server` GPUs each, joined inside the server by
//! NVLink through NVSwitch and to their NICs by PCIe.
//!
//! With a `[gpu]` section, the fabric's hosts (network endpoints) are
//! grouped in order into servers of `nics_per_server` NICs: server s owns
//! hosts s x nics .. (s + 1) x nics - 1. The builders name them
//! `h{s}.nic{j}`; the GPUs are `h{s}.g{k}`, and GPU k uses NIC
//! k / (gpus_per_server / nics_per_server). Ranks of GPU programs (NCCL)
//! are GPUs.
//!
//! NVLink is modelled as a non-blocking crossbar (NVSwitch): each GPU has
//! `nvlink_gbps` of NVLink in each direction, shared max-min fairly by the
//! transfers it sends or receives, plus `nvlink_latency_ns` per transfer
//! (`nccl/nvlink.rs`). PCIe between a GPU and its NIC adds
//! `pcie_latency_ns` per network transfer at each end; with `gpudirect =
//! false` the data is staged through host memory, which adds a copy at
//! `pcie_gbps` before the NIC sends and after it receives.
//!
//! NVLink SHARP (`nvls`, NVSwitch gen 3 in HGX/DGX H100 and later: the
//! switch reduces and multicasts, NCCL's NVLS algorithms) is on by
//! default from compute capability 90. Its reductions and multicasts run
//! at `nvls_efficiency` of NVLink's rate, 0.70 by default, derived from
//! NCCL's own constants: NVLS reaches 0.85 (`nvlsEfficiency` for Hopper,
//! `src/graph/tuning.cc` from 2.23) of the NVLink bandwidth NCCL counts
//! per H100 link, 20.6 GB/s (`SM90_NVLINK_BW`, `src/graph/topo.h`), where
//! `nvlink_gbps` counts 25 GB/s per link: 0.85 x 20.6 / 25 = 0.70
//! (`docs/nccl.md` says why, and what 0.85 alone would give).
//!
//! Defaults: an HGX/DGX H100 server (8 H100 SXM GPUs, NVLink 4 at 18 links
//! x 25 GB/s = 450 GB/s per direction per GPU, NVIDIA H100 datasheet;
//! one ConnectX-7 per GPU on PCIe Gen5 x16, 32 GT/s x 16 lanes = 512 Gb/s
//! raw, PCI-SIG). The latencies are calibrated, not measured: see
//! `docs/nccl.md`.
//!
//! Left out: NVLink without NVSwitch (direct GPU-to-GPU links of older
//! servers), PCIe switch contention between a GPU and its NIC and a PCIe
//! link slower than the NIC (refused), CPU and NUMA placement.

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// The `[gpu]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpuSpec {
    /// GPUs in each server.
    pub gpus_per_server: u32,
    /// NICs in each server (default: one per GPU). Must divide the GPUs.
    pub nics_per_server: Option<u32>,
    /// The GPU's name, as nccl-tests prints it on its device lines.
    pub model: String,
    /// NVLink bandwidth of one GPU in each direction, Gb/s.
    pub nvlink_gbps: f64,
    /// Latency of one NVLink transfer (GPU to GPU through NVSwitch), ns.
    pub nvlink_latency_ns: f64,
    /// PCIe bandwidth between a GPU and its NIC (and host memory), Gb/s.
    pub pcie_gbps: f64,
    /// PCIe latency between a GPU and its NIC, ns.
    pub pcie_latency_ns: f64,
    /// GPUDirect RDMA: the NIC reads and writes GPU memory directly.
    pub gpudirect: bool,
    /// The GPUs' CUDA compute capability x 10 (90 Hopper, 80 Ampere, 70
    /// Volta): which rows of NCCL's tuning tables apply, and whether LL128
    /// is on by default (70, 80 and 90 only).
    pub compute_capability: u32,
    /// NVLink SHARP: NVSwitch reduces and multicasts (NCCL's NVLS and
    /// NVLS-Tree). Default: on from compute capability 90 with more than
    /// one GPU per server.
    pub nvls: Option<bool>,
    /// Rate of NVLink SHARP's reductions and multicasts relative to
    /// NVLink's (0 to 1).
    pub nvls_efficiency: f64,
}

impl Default for GpuSpec {
    fn default() -> Self {
        GpuSpec {
            gpus_per_server: 8,
            nics_per_server: None,
            model: "NVIDIA H100 80GB HBM3".into(),
            nvlink_gbps: 3600.0,
            nvlink_latency_ns: 800.0,
            pcie_gbps: 512.0,
            pcie_latency_ns: 500.0,
            gpudirect: true,
            compute_capability: 90,
            nvls: None,
            nvls_efficiency: NVLS_EFFICIENCY_H100,
        }
    }
}

/// NVLink SHARP's rate relative to `nvlink_gbps` on H100: NCCL's
/// `nvlsEfficiency` (0.85) x its 20.6 GB/s per NVLink 4 link over the
/// link's 25 GB/s.
pub const NVLS_EFFICIENCY_H100: f64 = 0.85 * 20.6 / 25.0;

/// The most GPUs a server may hold.
pub const MAX_GPUS_PER_SERVER: u32 = 64;

impl GpuSpec {
    /// NICs per server.
    pub fn nics(&self) -> u32 {
        self.nics_per_server.unwrap_or(self.gpus_per_server)
    }

    /// GPUs sharing each NIC.
    pub fn gpus_per_nic(&self) -> u32 {
        self.gpus_per_server / self.nics().max(1)
    }

    /// Whether the servers have NVLink SHARP (`nvls`, or its default).
    pub fn has_nvls(&self) -> bool {
        self.nvls
            .unwrap_or(self.compute_capability >= 90 && self.gpus_per_server > 1)
    }

    /// Check the values on their own; the message names the key to change.
    pub fn validate(&self) -> Result<()> {
        let g = self.gpus_per_server;
        if g == 0 || g > MAX_GPUS_PER_SERVER {
            return fabric_err(format!(
                "gpu.gpus_per_server = {g}: use 1 to {MAX_GPUS_PER_SERVER}"
            ));
        }
        let n = self.nics();
        if n == 0 || n > g || g % n != 0 {
            return fabric_err(format!(
                "gpu.nics_per_server = {n} must divide gpu.gpus_per_server = {g} \
                 (one NIC per GPU, or one per pair, ...)"
            ));
        }
        if self.model.trim().is_empty() {
            return fabric_err("gpu.model is empty; name the GPU (e.g. \"NVIDIA H100 80GB HBM3\")");
        }
        super::positive_rate("gpu.nvlink_gbps", self.nvlink_gbps)?;
        super::positive_rate("gpu.pcie_gbps", self.pcie_gbps)?;
        super::non_negative("gpu.nvlink_latency_ns", self.nvlink_latency_ns)?;
        super::non_negative("gpu.pcie_latency_ns", self.pcie_latency_ns)?;
        let e = self.nvls_efficiency;
        if !(e > 0.0 && e <= 1.0) {
            return fabric_err(format!(
                "gpu.nvls_efficiency = {e}: give NVLink SHARP's rate as a fraction of NVLink's, \
                 above 0 and at most 1 (0.70 for H100)"
            ));
        }
        let cc = self.compute_capability;
        if !(60..=120).contains(&cc) {
            return fabric_err(format!(
                "gpu.compute_capability = {cc}: give the CUDA compute capability times ten \
                 (90 for H100, 80 for A100, 70 for V100)"
            ));
        }
        if self.nvls == Some(true) && (cc < 90 || g < 2) {
            return fabric_err(format!(
                "gpu.nvls = true needs NVSwitch gen 3 (compute capability 90 or more) and \
                 at least 2 GPUs per server; this server has compute capability {cc} and {g} GPUs"
            ));
        }
        Ok(())
    }

    /// Name of GPU `k` of server `s`.
    pub fn gpu_name(s: u32, k: u32) -> String {
        format!("h{s}.g{k}")
    }

    /// Name of NIC `j` of server `s` (the fabric host).
    pub fn nic_name(s: u32, j: u32) -> String {
        format!("h{s}.nic{j}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_an_h100_server() {
        let g = GpuSpec::default();
        g.validate().unwrap();
        assert_eq!((g.nics(), g.gpus_per_nic()), (8, 1));
        // 450 GB/s per direction.
        assert_eq!(g.nvlink_gbps / 8.0, 450.0);
    }

    #[test]
    fn nics_must_divide_gpus() {
        let g = GpuSpec {
            nics_per_server: Some(3),
            ..GpuSpec::default()
        };
        let e = g.validate().unwrap_err().to_string();
        assert!(e.contains("gpu.nics_per_server = 3"), "{e}");
        let g = GpuSpec {
            nics_per_server: Some(4),
            ..GpuSpec::default()
        };
        g.validate().unwrap();
        assert_eq!(g.gpus_per_nic(), 2);
    }

    #[test]
    fn bad_values_name_the_key() {
        for (g, key) in [
            (
                GpuSpec {
                    gpus_per_server: 0,
                    ..GpuSpec::default()
                },
                "gpu.gpus_per_server",
            ),
            (
                GpuSpec {
                    nvlink_gbps: -1.0,
                    ..GpuSpec::default()
                },
                "gpu.nvlink_gbps",
            ),
            (
                GpuSpec {
                    pcie_latency_ns: f64::NAN,
                    ..GpuSpec::default()
                },
                "gpu.pcie_latency_ns",
            ),
        ] {
            let e = g.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
