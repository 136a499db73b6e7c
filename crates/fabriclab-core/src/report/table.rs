//! Plain-text summary tables of counters (for the CLI).

use crate::net::{PortReport, QpReport, TcpReport};
use std::fmt::Write;

/// A table of the ports that carried traffic or saw an event (with credit
/// columns instead of PFC and ECN ones on an InfiniBand fabric, and a
/// `lost` column when a link failure lost packets, and the watchdog's
/// storms and drops when the PFC watchdog acted).
pub fn ports(ports: &[PortReport]) -> String {
    if ports.first().is_some_and(|p| p.ib.is_some()) {
        return ib_ports(ports);
    }
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
            "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>9} {:>8} {:>8} {:>11.3} {:>11.1} {:>11.1}",
            p.node,
            p.port,
            p.peer,
            c.tx_bytes,
            c.rx_bytes,
            c.drops,
            c.ecn_marks,
            c.pause_tx,
            c.pause_rx,
            c.paused_ps as f64 / 1e6,
            c.peak_queue_bytes as f64 / 1e3,
            c.peak_buffer_bytes as f64 / 1e3
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

fn ib_ports(ports: &[PortReport]) -> String {
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
            "{:<10} {:>4} {:<10} {:>14} {:>14} {:>7} {:>10} {:>13.3} {:>7} {:>8} {:>11.1} {:>11.1}",
            p.node,
            p.port,
            p.peer,
            c.tx_bytes,
            c.rx_bytes,
            c.drops,
            ib.fecn_marks,
            stalled as f64 / 1e6,
            ib.credit_stalls,
            ib.fcp_tx,
            ib.peak_vl_queue_bytes as f64 / 1e3,
            ib.peak_vl_buffer_bytes as f64 / 1e3
        );
    }
    out
}

/// A table of the QPs that sent or received data.
pub fn qps(qps: &[QpReport]) -> String {
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
            "{:>5} {:<8} {:<8} {:>14} {:>14} {:>8} {:>8} {:>8} {:>10.2}",
            q.qp,
            q.host,
            q.peer,
            c.tx_payload_bytes,
            c.rx_payload_bytes,
            c.retx_packets,
            c.cnps_rx,
            c.cnps_tx,
            q.rate_gbps
        );
    }
    out
}

/// A table of the TCP connections.
pub fn tcp(conns: &[TcpReport]) -> String {
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
            "{:>5} {:<8} {:<8} {:<6} {:>14} {:>14} {:>8} {:>6} {:>5} {:>9} {:>11.1} {:>9.1}",
            t.conn,
            t.client,
            t.server,
            t.cc,
            c.tx_bytes,
            c.rx_bytes,
            c.retx_segments,
            c.fast_retransmits,
            c.timeouts,
            c.ecn_echoes,
            c.cwnd_bytes as f64 / 1e3,
            c.srtt_ns as f64 / 1e3
        );
    }
    out
}
