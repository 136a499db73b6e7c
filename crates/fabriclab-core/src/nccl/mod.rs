//! The NCCL library model: communicators of GPU ranks on servers of
//! `[gpu]` (`config/gpu.rs`), NCCL's collectives as schedules
//! ([`coll`]), and a runtime that moves their data the way NCCL does
//! ([`runtime`]): NVLink inside a server ([`nvlink`]), RDMA WRITEs on the
//! rail of the receiving GPU between servers, with each protocol's line
//! format and per-hop costs ([`params`]).
//!
//! Schedules are the MPI layer's ([`crate::mpi::sched`]), so the data
//! interpreter proves NCCL's algorithms compute what NCCL promises, and
//! the MPI layer's [`crate::mpi::program::Program`] times them.

pub mod chain_calls;
pub mod coll;
pub mod comm;
pub mod cut;
pub mod fluid;
pub mod footprint;
pub mod nvlink;
pub mod nvls;
pub mod params;
pub mod runtime;
pub mod streams;
pub mod tuning;

pub use coll::{CollCall, NcclColl};
pub use comm::Comm;
pub use params::{Algorithm, Costs, NcclEnv, Protocol};
pub use runtime::NcclRuntime;
