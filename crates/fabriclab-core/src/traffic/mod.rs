//! Traffic generators below MPI: programs that drive the network through
//! the [`crate::sim::App`] interface directly. `flows` moves bulk data
//! (incasts, all-to-all, background traffic); `perftest` imitates the
//! perftest suite; `iperf` imitates iperf3 over the hosts' TCP
//! (`iperf_stats` computes its figures).
//!
//! Nothing here knows MPI: the MPI layer ([`crate::mpi`]) uses `flows` and
//! `iperf` for background traffic, and the tools above it
//! ([`crate::tools`]) are built on MPI.

pub mod flows;
pub mod iperf;
pub mod iperf_stats;
pub mod perftest;
pub mod perftest_peak;
