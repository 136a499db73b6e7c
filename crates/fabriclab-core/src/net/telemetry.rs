//! Opt-in telemetry: every sampling period, one row per port (queue
//! depth, bytes sent, PFC pause state) and, if asked, one per QP (bytes
//! acknowledged and received, current rate), and a last sample at the
//! run's end ([`Net::telemetry_final_sample`]).
//!
//! Rows are kept in memory until the run ends, then handed to the reports
//! and the Python layer (as named rows, JSON with one array per column,
//! then a DataFrame: about [`ROW_BYTES`] each at the peak). A period too short for the run would
//! fill the machine's memory, so a run holds at most a quarter of the
//! memory available in rows ([`row_limit`]): the sample that would go past
//! it is not taken, the run stops there, and [`Net::telemetry_check`] turns
//! that into an error that says what to change. Not modelled: sampling
//! costs nothing in simulated time, and the samples are exact (no counter
//! polling jitter).

use super::{Ev, Net};
use crate::error::Result;
use crate::units::Time;

/// Peak bytes of one telemetry row on its way from the core to a Python
/// DataFrame, with a margin. Measured: `fabriclab.hpl(n=[2000], nb=[200],
/// grids=["1x2"], telemetry_us=1)` on the leaf-spine preset peaks at
/// 1,715 MB with 4,813,312 rows (188 MB without telemetry): 0.32 KB a row,
/// sent as one JSON array per column ([`super::port_rows_as_columns`]). It was
/// 1.3 KB while the front end built a `serde_json::Value` tree of one
/// object per row.
pub const ROW_BYTES: u64 = 400;

/// Most telemetry rows (ports' and QPs' together) one run keeps: a quarter
/// of the memory available ([`crate::config::memory::available_bytes`]) at
/// [`ROW_BYTES`] each, between 100,000 and 20,000,000 (14 M on a machine
/// with 23 GB free).
pub fn row_limit() -> usize {
    let have = crate::config::memory::available_bytes().unwrap_or(8 << 30);
    (have / 4 / ROW_BYTES).clamp(100_000, 20_000_000) as usize
}

/// The telemetry state of a net.
#[derive(Default)]
pub(crate) struct Telemetry {
    period: Option<Time>,
    /// Sampling includes the per-QP rows (not only the ports').
    qps: bool,
    samples: Vec<Sample>,
    port_samples: Vec<PortSample>,
    /// [`row_limit`] when sampling started.
    limit: usize,
    /// The sample time at which the next sample would have gone past
    /// `limit`, and the rows it would have added.
    full: Option<(Time, usize)>,
}

/// A telemetry sample row (opt-in; see [`Net::enable_sampling`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Sample {
    /// Sample time, ps.
    pub time_ps: u64,
    /// QP index.
    pub qp: u32,
    /// Payload bytes of messages acknowledged so far (sending side).
    pub acked_bytes: u64,
    /// Payload bytes received in order from the peer so far.
    pub rx_bytes: u64,
    /// Current sending rate, b/s.
    pub rate_bps: u64,
}

/// A port telemetry row (opt-in; see [`Net::enable_sampling`]): the state
/// of one port's egress at a sample time.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortSample {
    /// Sample time, ps.
    pub time_ps: u64,
    /// Global port index ([`Net::port_ends`] names its two ends).
    pub port: u32,
    /// Bytes queued for transmission now, all priorities (frames as
    /// stored: no preamble or inter-frame gap).
    pub queue_bytes: u64,
    /// Bytes transmitted so far (wire bytes, as the port counters).
    pub tx_bytes: u64,
    /// Whether PFC holds any priority of this port paused now.
    pub paused: bool,
}

/// A port telemetry row with the port's ends named: the egress of
/// `node`'s port number `port` (within the node) towards `peer`.
#[derive(Clone, Debug, serde::Serialize, PartialEq, Eq)]
pub struct PortSampleRow {
    /// Sample time, ps.
    pub time_ps: u64,
    /// Node owning the port.
    pub node: String,
    /// Port number within the node.
    pub port: u32,
    /// Node at the other end of the link.
    pub peer: String,
    /// Bytes queued for transmission, all priorities (frames as stored:
    /// no preamble or inter-frame gap).
    pub queue_bytes: u64,
    /// Wire bytes transmitted so far.
    pub tx_bytes: u64,
    /// PFC holds a priority of the port paused.
    pub paused: bool,
}

impl Net {
    /// An error unless queue telemetry can be recorded: the flow backend
    /// has no queues or PFC state to sample.
    pub fn telemetry_supported(&self) -> Result<()> {
        if self.flow.is_some() {
            return crate::error::arg_err(
                "telemetry samples queues and PFC state, which the flow backend does not \
                 model; use the packet backend for telemetry ([sim] backend = \"packet\" in the \
                 fabric, --backend packet, or backend=\"packet\" in Python)",
            );
        }
        Ok(())
    }

    /// Record per-QP acked bytes and rate, and every port's queue, bytes
    /// sent and pause state, every `period` (opt-in telemetry).
    pub fn enable_sampling(&mut self, period: Time) {
        self.telemetry.qps = true;
        self.start_sampling(period);
    }

    /// Record every port's queue, bytes sent and pause state every
    /// `period`, without the per-QP rows (an MPI job's QPs are many).
    pub fn enable_port_sampling(&mut self, period: Time) {
        self.start_sampling(period);
    }

    fn start_sampling(&mut self, period: Time) {
        if self.telemetry.period.is_none() {
            self.q.schedule_in(Time::ZERO, Ev::Sample);
            self.telemetry.limit = row_limit();
        }
        self.telemetry.period = Some(period);
    }

    /// Port telemetry rows with each port's ends named (what reports and
    /// the Python layer carry).
    pub fn port_sample_rows(&self) -> Vec<PortSampleRow> {
        self.telemetry
            .port_samples
            .iter()
            .map(|s| {
                let (node, peer) = self.port_ends(s.port);
                PortSampleRow {
                    time_ps: s.time_ps,
                    node: node.to_string(),
                    port: self.port_index_in_node(s.port),
                    peer: peer.to_string(),
                    queue_bytes: s.queue_bytes,
                    tx_bytes: s.tx_bytes,
                    paused: s.paused,
                }
            })
            .collect()
    }

    pub(super) fn on_sample(&mut self) {
        if self.take_sample() {
            if let Some(p) = self.telemetry.period {
                self.q.schedule_in(p, Ev::Sample);
            }
        }
    }

    /// A last sample at the run's end, unless one was just taken (or the
    /// rows are at their limit): without it the last partial period, where
    /// the last flows end, was missing from the rows (a 97 us flow sampled
    /// every 60 us showed 35 % of its bytes unsent). Call once the run is
    /// over, before reading the rows.
    pub fn telemetry_final_sample(&mut self) {
        let t = &self.telemetry;
        let last = t.port_samples.last().map(|s| s.time_ps);
        if t.period.is_none() || t.full.is_some() || last == Some(self.now().0) {
            return;
        }
        self.take_sample();
    }

    /// One sample of every port (and QP, if asked) now; false when the
    /// rows would pass their limit (none taken).
    fn take_sample(&mut self) -> bool {
        let now = self.now();
        let n = if self.telemetry.qps {
            self.qps.len()
        } else {
            0
        };
        let rows = n + self.ports.len();
        let t = &self.telemetry;
        if t.samples.len() + t.port_samples.len() + rows > t.limit {
            // No more samples, and the run stops (`Sim` asks
            // `telemetry_full` after each sample).
            self.telemetry.full = Some((now, rows));
            return false;
        }
        for i in 0..n as u32 {
            // READ responder streams count in their QPs' rows.
            let Some(c) = self.qp_counters_folded(i) else {
                continue;
            };
            self.telemetry.samples.push(Sample {
                time_ps: now.0,
                qp: i,
                acked_bytes: c.acked_bytes,
                rx_bytes: c.rx_payload_bytes,
                rate_bps: self.qps[i as usize].rate().as_bps(),
            });
        }
        for (i, port) in self.ports.iter().enumerate() {
            self.telemetry.port_samples.push(PortSample {
                time_ps: now.0,
                port: i as u32,
                queue_bytes: port.total_qbytes,
                tx_bytes: port.tx.tx_bytes,
                paused: port.paused_until.iter().any(|&t| t > now),
            });
        }
        true
    }

    /// Whether telemetry reached its row limit (the run should stop).
    pub fn telemetry_full(&self) -> bool {
        self.telemetry.full.is_some()
    }

    /// Most telemetry rows this run keeps (`row_limit` when sampling
    /// started; 0 before).
    pub fn telemetry_row_limit(&self) -> usize {
        self.telemetry.limit
    }

    /// An error if telemetry reached its row limit: it names the period,
    /// the simulated time it lasted and what to change.
    pub fn telemetry_check(&self) -> Result<()> {
        let (Some((at, rows)), Some(period)) = (self.telemetry.full, self.telemetry.period) else {
            return Ok(());
        };
        let kept = self.telemetry.samples.len() + self.telemetry.port_samples.len();
        crate::error::arg_err(format!(
            "telemetry every {:.3} us ({rows} rows a sample: ports{}) reached its limit of \
             {} rows (a quarter of the memory available, at about {ROW_BYTES} B a row) at \
             {:.3} us of simulated time ({kept} rows kept) and the run stopped there; sample \
             less often (a larger telemetry_us or sample_us) or run a shorter job",
            period.as_us_f64(),
            if self.telemetry.qps { " and QPs" } else { "" },
            self.telemetry.limit,
            at.as_us_f64(),
        ))
    }

    /// Telemetry samples taken so far.
    pub fn samples(&self) -> &[Sample] {
        &self.telemetry.samples
    }

    /// Port telemetry samples taken so far.
    pub fn port_samples(&self) -> &[PortSample] {
        &self.telemetry.port_samples
    }
}
