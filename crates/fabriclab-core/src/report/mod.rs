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
pub mod table;
