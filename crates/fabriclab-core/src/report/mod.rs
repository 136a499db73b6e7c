//! Reports in the real tools' own formats, so that users' parsers and
//! plotting scripts keep working. String formatting lives here, never in the
//! engine.

pub mod cbench;
pub mod cjson;
pub mod fio;
pub mod hpl;
pub mod imb;
pub mod iperf;
pub mod nccl_tests;
pub mod osu;
pub mod perftest;
/// The counter tables, which live with the counters (`net/tables.rs`):
/// a failed run's error carries them.
pub use crate::net::tables as table;

/// What a saved file's free text adds on the flow backend, so that a
/// flow-level estimate does not pass for a packet-level run.
pub(crate) fn flow_suffix(backend: crate::config::Backend) -> &'static str {
    match backend {
        crate::config::Backend::Flow => ", flow backend",
        crate::config::Backend::Packet => "",
    }
}
