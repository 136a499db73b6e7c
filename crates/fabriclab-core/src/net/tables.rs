//! Plain-text summary tables of counters (for the CLI). On the flow
//! backend the columns of what it does not model (drops, ECN marks, PFC
//! pauses, queues; retransmissions, CNPs and the QPs' rate-limiter rate;
//! TCP's losses, window and RTT) read `n/a`, never 0.
//! [`Net::failed_run_counters`] gives them, with the counters as columns,
//! to the error of a run that failed.

use crate::config::Backend;
use crate::net::{Net, PortReport, QpReport, TcpReport};
use std::fmt::Write;

/// `value` as text, or `n/a` where `backend` does not model it.
fn or_na(backend: Backend, value: impl std::fmt::Display) -> String {
    match backend {
        Backend::Packet => value.to_string(),
        Backend::Flow => "n/a".into(),
    }
}

/// A table of the ports that carried traffic or saw an event (with credit
/// columns instead of PFC and ECN ones on an InfiniBand fabric, and a
/// `lost` column when a link failure lost packets, and the watchdog's
/// storms and drops when the PFC watchdog acted).
pub fn ports(ports: &[PortReport], backend: Backend) -> String {
    if ports.first().is_some_and(|p| p.ib.is_some()) {
        return ib_ports(ports, backend);
    }
    let na = |v: String| or_na(backend, v);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>9} {:>8} {:>8} {:>11} {:>11} {:>11}",
        "node",
        "port",
        "peer",
        "tx_bytes",
        "rx_bytes",
        "drops",
        "ecn_marks",
        "pause_tx",
        "pause_rx",
        "paused_us",
        "peak_q_KB",
        "peak_buf_KB"
    );
    let lost = ports.iter().any(|p| p.counters.lost_packets > 0);
    if lost {
        out.pop();
        out.push_str(&format!(" {:>7}\n", "lost"));
    }
    let watchdog = ports.iter().any(|p| p.counters.wd_storms > 0);
    if watchdog {
        out.pop();
        out.push_str(&format!(" {:>9} {:>8}\n", "wd_storms", "wd_drops"));
    }
    let dynamic = ports.iter().any(|p| p.dyn_ecn.is_some());
    if dynamic {
        out.pop();
        out.push_str(&format!(
            " {:>7} {:>9} {:>9}\n",
            "ecn_adj", "kmin_KB", "kmax_KB"
        ));
    }
    for p in ports {
        let c = &p.counters;
        if c.tx_packets + c.rx_packets + c.pause_tx + c.pause_rx + c.drops + c.lost_packets == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>9} {:>8} {:>8} {:>11} {:>11} {:>11}",
            p.node,
            p.port,
            p.peer,
            c.tx_bytes,
            c.rx_bytes,
            na(c.drops.to_string()),
            na(c.ecn_marks.to_string()),
            na(c.pause_tx.to_string()),
            na(c.pause_rx.to_string()),
            na(format!("{:.3}", c.paused_ps as f64 / 1e6)),
            na(format!("{:.1}", c.peak_queue_bytes as f64 / 1e3)),
            na(format!("{:.1}", c.peak_buffer_bytes as f64 / 1e3))
        );
        if lost {
            out.pop();
            let _ = writeln!(out, " {:>7}", c.lost_packets);
        }
        if watchdog {
            out.pop();
            let _ = writeln!(out, " {:>9} {:>8}", c.wd_storms, c.wd_drops);
        }
        if dynamic {
            out.pop();
            match &p.dyn_ecn {
                Some(d) => {
                    let _ = writeln!(
                        out,
                        " {:>7} {:>9.1} {:>9.1}",
                        d.ecn_adjustments,
                        d.ecn_kmin_bytes as f64 / 1e3,
                        d.ecn_kmax_bytes as f64 / 1e3
                    );
                }
                None => {
                    let _ = writeln!(out, " {:>7} {:>9} {:>9}", "-", "-", "-");
                }
            }
        }
    }
    out
}

fn ib_ports(ports: &[PortReport], backend: Backend) -> String {
    let na = |v: String| or_na(backend, v);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>10} {:>13} {:>7} {:>8} {:>11} {:>11}",
        "node",
        "port",
        "peer",
        "tx_bytes",
        "rx_bytes",
        "drops",
        "fecn_marks",
        "cred_stall_us",
        "stalls",
        "fcp_tx",
        "peak_q_KB",
        "peak_vl_KB"
    );
    for p in ports {
        let (c, Some(ib)) = (&p.counters, &p.ib) else {
            continue;
        };
        if c.tx_packets + c.rx_packets + c.drops == 0 {
            continue;
        }
        let stalled: u64 = ib.credit_stalled_ps.iter().sum();
        let _ = writeln!(
            out,
            "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>10} {:>13} {:>7} {:>8} {:>11} {:>11}",
            p.node,
            p.port,
            p.peer,
            c.tx_bytes,
            c.rx_bytes,
            na(c.drops.to_string()),
            na(ib.fecn_marks.to_string()),
            na(format!("{:.3}", stalled as f64 / 1e6)),
            na(ib.credit_stalls.to_string()),
            na(ib.fcp_tx.to_string()),
            na(format!("{:.1}", ib.peak_vl_queue_bytes as f64 / 1e3)),
            na(format!("{:.1}", ib.peak_vl_buffer_bytes as f64 / 1e3))
        );
    }
    out
}

/// A table of the QPs that sent or received data.
pub fn qps(qps: &[QpReport], backend: Backend) -> String {
    let na = |v: String| or_na(backend, v);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:<8} {:<8} {:>14} {:>14} {:>8} {:>8} {:>8} {:>10}",
        "qp", "host", "peer", "tx_payload", "rx_payload", "retx", "cnps_rx", "cnps_tx", "rate_Gbps"
    );
    for q in qps {
        let c = &q.counters;
        if c.tx_packets + c.rx_payload_bytes == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "{:>5} {:<8} {:<8} {:>14} {:>14} {:>8} {:>8} {:>8} {:>10}",
            q.qp,
            q.host,
            q.peer,
            c.tx_payload_bytes,
            c.rx_payload_bytes,
            na(c.retx_packets.to_string()),
            na(c.cnps_rx.to_string()),
            na(c.cnps_tx.to_string()),
            na(format!("{:.2}", q.rate_gbps))
        );
    }
    out
}

/// A table of the TCP connections.
pub fn tcp(conns: &[TcpReport], backend: Backend) -> String {
    let na = |v: String| or_na(backend, v);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:<8} {:<8} {:<6} {:>14} {:>14} {:>8} {:>6} {:>5} {:>9} {:>11} {:>9}",
        "conn",
        "client",
        "server",
        "cc",
        "tx_bytes",
        "rx_bytes",
        "retx",
        "fast_r",
        "rtos",
        "ecn_echo",
        "cwnd_KB",
        "srtt_us"
    );
    for t in conns {
        let c = &t.counters;
        let _ = writeln!(
            out,
            "{:>5} {:<8} {:<8} {:<6} {:>14} {:>14} {:>8} {:>6} {:>5} {:>9} {:>11} {:>9}",
            t.conn,
            t.client,
            t.server,
            t.cc,
            c.tx_bytes,
            c.rx_bytes,
            na(c.retx_segments.to_string()),
            na(c.fast_retransmits.to_string()),
            na(c.timeouts.to_string()),
            na(c.ecn_echoes.to_string()),
            na(format!("{:.1}", c.cwnd_bytes as f64 / 1e3)),
            na(format!("{:.1}", c.srtt_ns as f64 / 1e3))
        );
    }
    out
}

impl Net {
    /// The port and QP counters as they stand, as JSON for a failed run's
    /// error ([`crate::Error::TransportRetry`]): `ports` and `qps` one
    /// array per column, `ports_table` and `qps_table` as `--counters`
    /// prints them. Empty if they cannot be written.
    #[cold]
    pub fn failed_run_counters(&self) -> String {
        #[derive(serde::Serialize)]
        struct Counters {
            #[serde(serialize_with = "crate::net::port_reports_as_columns")]
            ports: Vec<PortReport>,
            #[serde(serialize_with = "crate::net::qp_reports_as_columns")]
            qps: Vec<QpReport>,
            ports_table: String,
            qps_table: String,
        }
        let backend = if self.flow.is_some() {
            Backend::Flow
        } else {
            Backend::Packet
        };
        let (ports, qps) = (self.port_reports(), self.qp_reports());
        let c = Counters {
            ports_table: self::ports(&ports, backend),
            qps_table: self::qps(&qps, backend),
            ports,
            qps,
        };
        serde_json::to_string(&c).unwrap_or_default()
    }
}
