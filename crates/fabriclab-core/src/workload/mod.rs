//! Workloads: programs that drive the network through the [`crate::sim::App`]
//! interface. `flows` moves bulk data (incasts, all-to-all, background
//! traffic); `perftest` imitates the perftest suite.

pub mod flows;
pub mod imb;
pub mod osu;
pub mod perftest;
