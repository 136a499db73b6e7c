//! Workloads: programs that drive the network through the [`crate::sim::App`]
//! interface. `flows` moves bulk data (incasts, all-to-all, background
//! traffic); `perftest` imitates the perftest suite; `iperf` imitates iperf3
//! over the hosts' TCP (`iperf_stats` computes its figures); `cbench` runs
//! Sandia Cbench's rotate bisection tests; `fio` runs block I/O against
//! remote storage targets.

pub mod cbench;
pub mod fio;
pub mod flows;
pub mod hpl;
pub mod hpl_dat;
pub mod hpl_sched;
pub mod imb;
pub mod iperf;
pub mod iperf_stats;
pub mod osu;
pub mod perftest;
