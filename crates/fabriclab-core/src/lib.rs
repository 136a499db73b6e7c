//! # fabriclab-core
//!
//! A packet-level discrete-event simulator of RDMA and HPC network fabrics:
//! leaf-spine topologies, shared-buffer switches with PFC and ECN, RoCEv2 RC
//! transport with DCQCN, TCP beside it, and the benchmarks people run on
//! such fabrics (perftest, IMB and OSU on an MPI model, iperf3).
//!
//! Layers, each using only itself and those below it (checked by
//! `scripts/check_layers.py`), lowest first:
//!
//! - base: [`units`] (integer-picosecond time, rates), [`wire`] (per-packet
//!   overheads), [`rng`], [`error`], [`interrupt`], [`numfmt`] (C's `%g`);
//! - [`engine`]: the event queue and lazily cancelled timers;
//! - [`config`]: the fabric file's sections and presets, each checking its
//!   own values (it never builds a graph);
//! - [`topology`]: the graph a spec describes, and the whole check of a
//!   spec ([`config::FabricSpec::validate`]);
//! - [`net`]: ports, switches, NICs, QPs, transports and their congestion
//!   control ([`net::cc`]), the flow-level backend (`[sim] backend =
//!   "flow"`: each message a fluid flow at its max-min fair share on the
//!   packet engine's routes, for fabrics of thousands of hosts); programs
//!   reach it only through [`net::Net::connect`] / [`net::Net::post`] and
//!   the events of [`net::AppEvent`];
//! - [`sim`]: the event loop and the [`sim::App`] trait every program
//!   implements;
//! - [`traffic`]: generators below MPI (flows, perftest, iperf);
//! - [`mpi`]: the MPI library model (collectives, selection rules,
//!   eager/rendezvous over RC QPs, shared memory);
//! - [`nccl`]: the NCCL library model (GPU communicators, ring
//!   collectives, NVLink and PXN), on the MPI layer's schedules;
//! - [`tools`]: the benchmarks built on MPI (IMB, OSU, Cbench, HPL) and
//!   fio;
//! - [`report`]: the real tools' output formats;
//! - the entry points: [`front`] (JSON in and out, for the Python layer),
//!   [`bench`](mod@bench), [`option_fields`].
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
pub mod nccl;
pub mod net;
pub mod numfmt;
pub mod option_fields;
pub mod report;
pub mod rng;
pub mod sim;
pub mod tools;
pub mod topology;
pub mod traffic;
pub mod units;
pub mod wire;

pub use error::{Error, Result};
pub use traffic::{iperf, perftest};
