//! The MPI library's host-side model: software overheads, protocol
//! thresholds, shared-memory and memory-copy speeds, how ranks share queue
//! pairs, and whose collective selection rules apply. It is the `[mpi]`
//! section of a fabric file, because these are properties of the cluster's
//! hosts and software stack as much as the links are.
//!
//! Defaults follow Open MPI 4.1 over verbs/UCX on ConnectX-class NICs
//! (Open MPI's `btl_openib`/UCX defaults): 12 KiB network eager limit, 4 KiB shared-memory
//! eager limit, rendezvous by RDMA READ in 512 KiB fragments, Open MPI's
//! coll/tuned fixed rules. The per-message overheads and copy speeds are
//! typical of current x86 servers *(approx.)*; presets calibrate them.
//!
//! Left out: progress threads and the need to be inside an MPI call for
//! rendezvous to progress (the receiver is assumed to be polling), and
//! registration-cache misses (buffers are assumed registered).

use crate::error::{fabric_err, Result};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// How rendezvous moves the data once sender and receiver have matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Rndv {
    /// The receiver pulls with RDMA READ, then sends a completion (UCX's
    /// default `get_zcopy`).
    #[default]
    Read,
    /// The receiver sends clear-to-send, the sender pushes with RDMA WRITE
    /// and a completion message.
    Write,
}

/// Which queue pairs carry a pair of ranks' traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QpSharing {
    /// One RC QP per pair of communicating ranks (UCX's RC transport).
    #[default]
    PerRankPair,
    /// One RC QP per pair of hosts, shared by all their ranks.
    PerHostPair,
}

/// The `[mpi]` section of a fabric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MpiSpec {
    /// CPU time to post a send (matching header, descriptor), ns.
    pub send_overhead_ns: f64,
    /// CPU time to complete a receive (matching, completion), ns.
    pub recv_overhead_ns: f64,
    /// Largest message sent eagerly between hosts, bytes.
    pub eager_limit_bytes: u64,
    /// Largest message sent eagerly through shared memory, bytes.
    pub shm_eager_limit_bytes: u64,
    /// Rendezvous data movement between hosts.
    pub rndv: Rndv,
    /// Rendezvous data is moved in RDMA operations of at most this size.
    pub rndv_fragment_bytes: u64,
    /// Bytes of MPI header on every network message (match info).
    pub header_bytes: u64,
    /// One-way latency of a shared-memory message (flag write to poll), ns.
    pub shm_latency_ns: f64,
    /// Speed of one core copying memory (eager copies, shared memory,
    /// packing), GB/s (10^9 bytes per second).
    pub memcpy_gbps: f64,
    /// Memory bandwidth of a host, shared by all its ranks' copies, GB/s.
    pub host_memory_gbps: f64,
    /// Speed of a reduction (e.g. MPI_SUM on floats) by one core, GB/s of
    /// input.
    pub reduce_gbps: f64,
    /// Queue-pair sharing between ranks.
    pub qp_sharing: QpSharing,
    /// Collective selection rules: "openmpi" or "mpich".
    pub library: String,
    /// CPU time of an MPI call that has nothing to move (a collective of
    /// zero bytes returns after its argument checks), ns. Calls that move
    /// data pay it inside `send_overhead_ns` and `recv_overhead_ns`, which
    /// were calibrated on whole calls. Default 30 ns, calibrated on IMB's
    /// zero-byte collective rows (0.03 us in the IMB sample output).
    pub call_overhead_ns: f64,
}

impl Default for MpiSpec {
    fn default() -> Self {
        MpiSpec {
            send_overhead_ns: 100.0,
            recv_overhead_ns: 100.0,
            eager_limit_bytes: 12288,
            shm_eager_limit_bytes: 4096,
            rndv: Rndv::Read,
            rndv_fragment_bytes: 524288,
            header_bytes: 40,
            shm_latency_ns: 200.0,
            memcpy_gbps: 12.0,
            host_memory_gbps: 100.0,
            reduce_gbps: 6.0,
            qp_sharing: QpSharing::PerRankPair,
            library: "openmpi".into(),
            call_overhead_ns: 30.0,
        }
    }
}

/// [`MpiSpec`] in simulation units.
#[derive(Clone, Debug)]
pub struct MpiParams {
    /// Send overhead.
    pub o_send: Time,
    /// Receive overhead.
    pub o_recv: Time,
    /// Eager limit between hosts, bytes.
    pub eager_limit: u64,
    /// Eager limit in shared memory, bytes.
    pub shm_eager_limit: u64,
    /// Rendezvous mode.
    pub rndv: Rndv,
    /// Rendezvous fragment, bytes.
    pub rndv_fragment: u64,
    /// Header bytes.
    pub header: u64,
    /// Shared-memory latency.
    pub shm_latency: Time,
    /// One core's copy speed.
    pub memcpy: Rate,
    /// A host's memory bandwidth.
    pub host_memory: Rate,
    /// One core's reduction speed.
    pub reduce: Rate,
    /// QP sharing.
    pub qp_sharing: QpSharing,
    /// Selection rules (library name, checked by the selection module).
    pub library: String,
    /// CPU time of a call with nothing to move.
    pub call_overhead: Time,
}

fn positive(field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        return fabric_err(format!("mpi.{field} must be a positive number, got {v}"));
    }
    Ok(())
}

/// A host memory rate in GB/s: positive, and within what a rate in bits per
/// second can hold (1 kB/s to 10 PB/s), so that it never rounds to zero.
fn memory_rate(field: &str, gbytes_per_s: f64) -> Result<()> {
    positive(field, gbytes_per_s)?;
    if !(1e-6..=1e7).contains(&gbytes_per_s) {
        return fabric_err(format!(
            "mpi.{field} = {gbytes_per_s} GB/s: give a memory rate between 1e-6 and 1e7 GB/s"
        ));
    }
    Ok(())
}

/// A time in ns: zero or more, and no longer than any run
/// ([`super::MAX_SETTING_US`]), so that sums of overheads cannot wrap.
fn non_negative(field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return fabric_err(format!("mpi.{field} must be zero or more, got {v}"));
    }
    super::time_ns(&format!("mpi.{field}"), v)
}

impl MpiSpec {
    /// Check every field; the error names the field and what to change.
    pub fn validate(&self) -> Result<()> {
        self.params().map(|_| ())
    }

    /// Convert to simulation units (validating).
    pub fn params(&self) -> Result<MpiParams> {
        non_negative("send_overhead_ns", self.send_overhead_ns)?;
        non_negative("recv_overhead_ns", self.recv_overhead_ns)?;
        non_negative("shm_latency_ns", self.shm_latency_ns)?;
        non_negative("call_overhead_ns", self.call_overhead_ns)?;
        memory_rate("memcpy_gbps", self.memcpy_gbps)?;
        memory_rate("host_memory_gbps", self.host_memory_gbps)?;
        memory_rate("reduce_gbps", self.reduce_gbps)?;
        if self.rndv_fragment_bytes < 4096 {
            return fabric_err(format!(
                "mpi.rndv_fragment_bytes must be at least 4096, got {}",
                self.rndv_fragment_bytes
            ));
        }
        // Each is posted as one RDMA message, at most 2 GiB.
        for (name, v) in [
            ("mpi.rndv_fragment_bytes", self.rndv_fragment_bytes),
            ("mpi.eager_limit_bytes", self.eager_limit_bytes),
            ("mpi.shm_eager_limit_bytes", self.shm_eager_limit_bytes),
            ("mpi.header_bytes", self.header_bytes),
        ] {
            if v > 1 << 31 {
                return fabric_err(format!(
                    "{name} = {v} is more than the 2 GiB an RDMA message can carry"
                ));
            }
        }
        let library = self.library.to_ascii_lowercase();
        if !["openmpi", "ompi", "mpich"].contains(&library.as_str()) {
            return fabric_err(format!(
                "mpi.library {:?} is unknown; use \"openmpi\" or \"mpich\"",
                self.library
            ));
        }
        let gb = |g: f64| Rate::from_gbps_f64(g * 8.0);
        Ok(MpiParams {
            o_send: Time::from_ns_f64(self.send_overhead_ns),
            o_recv: Time::from_ns_f64(self.recv_overhead_ns),
            eager_limit: self.eager_limit_bytes,
            shm_eager_limit: self.shm_eager_limit_bytes,
            rndv: self.rndv,
            rndv_fragment: self.rndv_fragment_bytes,
            header: self.header_bytes,
            shm_latency: Time::from_ns_f64(self.shm_latency_ns),
            memcpy: gb(self.memcpy_gbps),
            host_memory: gb(self.host_memory_gbps),
            reduce: gb(self.reduce_gbps),
            qp_sharing: self.qp_sharing,
            library,
            call_overhead: Time::from_ns_f64(self.call_overhead_ns),
        })
    }
}
