//! Benchmark tools above the MPI layer, each imitating a real program's
//! options and figures: `imb` (Intel MPI Benchmarks), `osu` (OSU
//! micro-benchmarks), `cbench` (Sandia Cbench's rotate bisection tests),
//! `hpl` (High-Performance Linpack), and `fio` (block I/O against remote
//! storage targets, on the [`crate::sim::App`] interface directly).
//!
//! They may use every layer below (MPI, the traffic generators, the
//! network); the reports in [`crate::report`] format what they return.

pub mod cbench;
pub mod fio;
pub mod hpl;
pub mod imb;
pub mod nccl_tests;
pub mod osu;
