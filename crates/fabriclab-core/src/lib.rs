//! # fabriclab-core
//!
//! A packet-level discrete-event simulator of RDMA and HPC network fabrics:
//! leaf-spine topologies, shared-buffer switches with PFC and ECN, RoCEv2 RC
//! transport with DCQCN, TCP beside it, and the benchmarks people run on
//! such fabrics (perftest, IMB and OSU on an MPI model, iperf3).
//!
//! Layers, each knowing only the one below: [`engine`] (integer-picosecond
//! time, event queue, timers), [`net`] (ports, switches, NICs, QPs),
//! workloads ([`workload`]) built on the narrow [`net::Net::post`] /
//! [`sim::App`] interface, and reports ([`report`]) in the real tools'
//! formats. Beside the packet engine, `[sim] backend = "flow"` gives a
//! flow-level backend (`net/flow/`): the same API and workloads, each
//! message a fluid flow at its max-min fair share on the packet engine's
//! routes, for fabrics of thousands of hosts.
//!
//! ```
//! use fabriclab_core::{config, perftest};
//!
//! // ib_write_bw between two hosts on different leaves of the HEPS fabric.
//! let fabric = config::preset("heps").unwrap();
//! let opts = perftest::Options {
//!     test: perftest::Test::WriteBw,
//!     client: "h0".into(),
//!     server: "h4".into(),
//!     iters: Some(200),
//!     ..Default::default()
//! };
//! let report = perftest::run(&fabric, &opts, 1).unwrap();
//! let gbps = report.bw[0].bw_avg_gbps;
//! assert!((gbps - 92.6).abs() < 1.0, "{gbps}");
//! ```
#![warn(missing_docs)]

pub mod bench;
pub mod config;
pub mod engine;
pub mod error;
pub mod front;
pub mod interrupt;
pub mod mpi;
pub mod net;
pub mod option_fields;
pub mod report;
pub mod rng;
pub mod sim;
pub mod topology;
pub mod units;
pub mod wire;
pub mod workload;

pub use error::{Error, Result};
pub use workload::{iperf, perftest};
