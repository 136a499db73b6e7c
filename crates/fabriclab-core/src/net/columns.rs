//! Tables sent to the Python layer as one JSON array per column
//! (`{"node": [...], "tx_bytes": [...], ...}`) rather than one object per
//! row: port and QP counters, and telemetry rows (and, with [`col`], the
//! flows tool's table).
//!
//! A column is written straight from the rows, with no intermediate tree.
//! On a 32,768-host fabric the port table alone has 131,000 rows; as
//! objects, Python's `json.loads` and `DataFrame.from_records` spent 1.8 s
//! on it, more than the run. Columns are a third of the JSON and what a
//! DataFrame is built from fastest.
//!
//! A column exists when some row has the field. A row that lacks a
//! flattened optional group (InfiniBand counters on an Ethernet port,
//! dynamic ECN on a host port) has `null` there, which pandas reads as a
//! missing value, as it did for the missing key of a row object. Left out:
//! any other table layout; these are a transport between the core and
//! the Python layer, not a file format.

use super::{PortReport, PortSampleRow, QpReport, Sample};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// One column of a table of rows, serialised as a JSON array straight from
/// the rows.
pub(crate) struct Column<'a, T, F>(&'a [T], F);

impl<'a, T, V: Serialize, F: Fn(&'a T) -> V> Serialize for Column<'a, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(&self.1))
    }
}

/// The column `f` of `rows`.
pub(crate) fn col<'a, T, V, F: Fn(&'a T) -> V>(rows: &'a [T], f: F) -> Column<'a, T, F> {
    Column(rows, f)
}

/// Port telemetry rows as one array per column (`{"time_ps": [...],
/// "node": [...], ...}`), for `#[serde(serialize_with)]`.
pub fn port_rows_as_columns<S: Serializer>(
    rows: &[PortSampleRow],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(7))?;
    m.serialize_entry("time_ps", &col(rows, |r| r.time_ps))?;
    m.serialize_entry("node", &col(rows, |r| r.node.as_str()))?;
    m.serialize_entry("port", &col(rows, |r| r.port))?;
    m.serialize_entry("peer", &col(rows, |r| r.peer.as_str()))?;
    m.serialize_entry("queue_bytes", &col(rows, |r| r.queue_bytes))?;
    m.serialize_entry("tx_bytes", &col(rows, |r| r.tx_bytes))?;
    m.serialize_entry("paused", &col(rows, |r| r.paused))?;
    m.end()
}

/// QP telemetry rows as one array per column, like
/// [`port_rows_as_columns`].
pub fn qp_rows_as_columns<S: Serializer>(
    rows: &[Sample],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(5))?;
    m.serialize_entry("time_ps", &col(rows, |r| r.time_ps))?;
    m.serialize_entry("qp", &col(rows, |r| r.qp))?;
    m.serialize_entry("acked_bytes", &col(rows, |r| r.acked_bytes))?;
    m.serialize_entry("rx_bytes", &col(rows, |r| r.rx_bytes))?;
    m.serialize_entry("rate_bps", &col(rows, |r| r.rate_bps))?;
    m.end()
}

/// Port counter rows ([`PortReport`], with its flattened counter groups)
/// as one array per column, in the order of a row's fields. A test checks
/// that the columns are exactly the rows' fields, so a new counter cannot
/// be left out.
pub fn port_reports_as_columns<S: Serializer>(
    rows: &[PortReport],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(None)?;
    m.serialize_entry("node", &col(rows, |r| r.node.as_str()))?;
    m.serialize_entry("port", &col(rows, |r| r.port))?;
    m.serialize_entry("peer", &col(rows, |r| r.peer.as_str()))?;
    m.serialize_entry("rate_gbps", &col(rows, |r| r.rate_gbps))?;
    m.serialize_entry("tx_bytes", &col(rows, |r| r.counters.tx_bytes))?;
    m.serialize_entry("tx_packets", &col(rows, |r| r.counters.tx_packets))?;
    m.serialize_entry("rx_bytes", &col(rows, |r| r.counters.rx_bytes))?;
    m.serialize_entry("rx_packets", &col(rows, |r| r.counters.rx_packets))?;
    m.serialize_entry("drops", &col(rows, |r| r.counters.drops))?;
    m.serialize_entry("drop_bytes", &col(rows, |r| r.counters.drop_bytes))?;
    m.serialize_entry("drops_by_prio", &col(rows, |r| r.counters.drops_by_prio))?;
    m.serialize_entry("ecn_marks", &col(rows, |r| r.counters.ecn_marks))?;
    m.serialize_entry("pause_tx", &col(rows, |r| r.counters.pause_tx))?;
    m.serialize_entry("pause_starts", &col(rows, |r| r.counters.pause_starts))?;
    m.serialize_entry("pause_rx", &col(rows, |r| r.counters.pause_rx))?;
    m.serialize_entry("paused_ps", &col(rows, |r| r.counters.paused_ps))?;
    m.serialize_entry(
        "peak_queue_bytes",
        &col(rows, |r| r.counters.peak_queue_bytes),
    )?;
    m.serialize_entry(
        "peak_buffer_bytes",
        &col(rows, |r| r.counters.peak_buffer_bytes),
    )?;
    m.serialize_entry("lost_packets", &col(rows, |r| r.counters.lost_packets))?;
    m.serialize_entry("lost_bytes", &col(rows, |r| r.counters.lost_bytes))?;
    m.serialize_entry("wd_storms", &col(rows, |r| r.counters.wd_storms))?;
    m.serialize_entry("wd_restores", &col(rows, |r| r.counters.wd_restores))?;
    m.serialize_entry("wd_drops", &col(rows, |r| r.counters.wd_drops))?;
    if rows.iter().any(|r| r.ib.is_some()) {
        m.serialize_entry(
            "credit_stalled_ps",
            &col(rows, |r| ib(r).map(|i| &i.credit_stalled_ps)),
        )?;
        m.serialize_entry(
            "credit_stalls",
            &col(rows, |r| ib(r).map(|i| i.credit_stalls)),
        )?;
        m.serialize_entry("fcp_tx", &col(rows, |r| ib(r).map(|i| i.fcp_tx)))?;
        m.serialize_entry("fcp_rx", &col(rows, |r| ib(r).map(|i| i.fcp_rx)))?;
        m.serialize_entry("fecn_marks", &col(rows, |r| ib(r).map(|i| i.fecn_marks)))?;
        m.serialize_entry(
            "peak_vl_buffer_bytes",
            &col(rows, |r| ib(r).map(|i| i.peak_vl_buffer_bytes)),
        )?;
        m.serialize_entry(
            "peak_vl_queue_bytes",
            &col(rows, |r| ib(r).map(|i| i.peak_vl_queue_bytes)),
        )?;
    }
    if rows.iter().any(|r| r.dyn_ecn.is_some()) {
        m.serialize_entry(
            "ecn_adjustments",
            &col(rows, |r| r.dyn_ecn.as_ref().map(|e| e.ecn_adjustments)),
        )?;
        m.serialize_entry(
            "ecn_kmin_bytes",
            &col(rows, |r| r.dyn_ecn.as_ref().map(|e| e.ecn_kmin_bytes)),
        )?;
        m.serialize_entry(
            "ecn_kmax_bytes",
            &col(rows, |r| r.dyn_ecn.as_ref().map(|e| e.ecn_kmax_bytes)),
        )?;
    }
    m.end()
}

/// QP counter rows ([`QpReport`]) as one array per column, like
/// [`port_reports_as_columns`].
pub fn qp_reports_as_columns<S: Serializer>(
    rows: &[QpReport],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(16))?;
    m.serialize_entry("qp", &col(rows, |r| r.qp))?;
    m.serialize_entry("host", &col(rows, |r| r.host.as_str()))?;
    m.serialize_entry("peer", &col(rows, |r| r.peer.as_str()))?;
    m.serialize_entry("prio", &col(rows, |r| r.prio))?;
    m.serialize_entry("rate_gbps", &col(rows, |r| r.rate_gbps))?;
    m.serialize_entry("tx_payload_bytes", &col(rows, |r| qc(r).tx_payload_bytes))?;
    m.serialize_entry("tx_packets", &col(rows, |r| qc(r).tx_packets))?;
    m.serialize_entry("acked_bytes", &col(rows, |r| qc(r).acked_bytes))?;
    m.serialize_entry("retx_packets", &col(rows, |r| qc(r).retx_packets))?;
    m.serialize_entry("timeouts", &col(rows, |r| qc(r).timeouts))?;
    m.serialize_entry("naks_rx", &col(rows, |r| qc(r).naks_rx))?;
    m.serialize_entry("cnps_rx", &col(rows, |r| qc(r).cnps_rx))?;
    m.serialize_entry("cnps_tx", &col(rows, |r| qc(r).cnps_tx))?;
    m.serialize_entry("rx_payload_bytes", &col(rows, |r| qc(r).rx_payload_bytes))?;
    m.serialize_entry("rx_discarded", &col(rows, |r| qc(r).rx_discarded))?;
    m.serialize_entry("messages_done", &col(rows, |r| qc(r).messages_done))?;
    m.end()
}

/// A QP row's counters.
fn qc(r: &QpReport) -> &super::QpCounters {
    &r.counters
}

/// A port row's InfiniBand counters, if it has them.
fn ib(r: &PortReport) -> Option<&super::ib::IbPortCounters> {
    r.ib.as_ref()
}
