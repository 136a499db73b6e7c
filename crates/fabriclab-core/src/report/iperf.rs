//! iperf3 3.12's client output: the text report and the `-J` document.
//!
//! Text lines follow iperf3's format strings (`report_bw_retrans_cwnd_format`,
//! `report_bw_retrans_format`, `report_bw_format`, the `[SUM]` variants and
//! `report_bw_separator` from iperf_locale.c) and its `unit_snprintf`
//! (adaptive KByte/MByte/GByte in 1024s for transfers and windows,
//! Kbit/Mbit/Gbit in 1000s for rates, 4 significant places). One
//! deviation: times print with two decimals as in iperf3 unless the
//! interval boundaries need more (iperf3 refuses intervals below 0.1 s; a
//! simulation wants them), with the same column positions.
//!
//! The JSON document has iperf3's keys, order and cJSON layout. What iperf3
//! gets from the host OS has fixed simulation values: `system_info` names
//! the simulator, the `timestamp` is the Unix epoch, `cpu_utilization_percent`
//! is all zeros, `sndbuf_actual` / `rcvbuf_actual` are Linux's initial
//! socket buffers (16384 / 131072), `tcp_mss_default` is the fabric's MSS,
//! hosts are named by their fabric names and the cookie derives from the seed.

use super::cjson::{self, J};
use crate::net::tcp::SERVER_PORT;
use crate::traffic::iperf::{Report, ServerIntervalStream, Summary};
use std::fmt::Write;

const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// iperf3's `unit_snprintf` with format 'A' (bytes, adaptive, 1024).
pub fn unit_bytes(bytes: f64) -> String {
    unit(bytes, 1024.0, &["Byte", "KByte", "MByte", "GByte", "TByte"])
}

/// iperf3's `unit_snprintf` with format 'a' (bits, adaptive, 1000) of a
/// rate given in bytes per second.
pub fn unit_bits(bytes_per_s: f64) -> String {
    unit(
        bytes_per_s * 8.0,
        1000.0,
        &["bit", "Kbit", "Mbit", "Gbit", "Tbit"],
    )
}

fn unit(mut x: f64, base: f64, labels: &[&str; 5]) -> String {
    let mut k = 0;
    while x >= base && k < 4 {
        x /= base;
        k += 1;
    }
    let label = labels[k];
    if x < 9.995 {
        format!("{x:4.2} {label}")
    } else if x < 99.95 {
        format!("{x:4.1} {label}")
    } else {
        format!("{x:4.0} {label}")
    }
}

/// Decimals of the interval times: 2, or what the boundaries need (up to 6).
fn decimals(r: &Report) -> usize {
    let bounds = r.options.boundaries();
    (2..=6)
        .find(|&d| {
            let unit = 10u64.pow(12 - d as u32);
            bounds.iter().all(|t| t.as_ps() % unit == 0)
        })
        .unwrap_or(6)
}

fn times(a: f64, b: f64, d: usize) -> String {
    format!("{a:6.d$}-{b:<6.d$}")
}

/// The text output of the client.
pub fn text(r: &Report) -> String {
    let res = &r.results;
    let d = decimals(r);
    let many = res.streams.len() > 1;
    let mut out = String::new();
    let server = &r.options.server;
    let _ = writeln!(out, "Connecting to host {server}, port {SERVER_PORT}");
    for s in &res.streams {
        let _ = writeln!(
            out,
            "[{:>3}] local {} port {} connected to {} port {}",
            s.socket, s.local_host, s.local_port, s.remote_host, s.remote_port
        );
    }
    // -i 0 turns iperf3's periodic reports off: the summary alone (the
    // JSON and the DataFrame keep the one whole-run interval).
    let periodic = r.options.interval_s > 0.0;
    if periodic && !res.intervals.is_empty() {
        let head = "[ ID] Interval           Transfer     Bitrate";
        let tcp = if res.tcp_info {
            "         Retr  Cwnd"
        } else {
            ""
        };
        let _ = writeln!(out, "{head}{tcp}");
    }
    let shown = if periodic { &res.intervals[..] } else { &[] };
    for (k, iv) in shown.iter().enumerate() {
        if k > 0 && many {
            let _ = writeln!(out, "{SEPARATOR}");
        }
        for s in &iv.streams {
            let head = format!(
                "[{:>3}] {} sec  {}s  {}s/sec",
                s.socket,
                times(s.start, s.end, d),
                unit_bytes(s.bytes as f64),
                unit_bits(s.bits_per_second / 8.0),
            );
            let _ = if res.tcp_info {
                let cwnd = unit_bytes(s.snd_cwnd as f64);
                writeln!(out, "{head}  {:>3}   {cwnd}s       ", s.retransmits)
            } else {
                writeln!(out, "{head}                  ")
            };
        }
        if many {
            let s = &iv.sum;
            let head = format!(
                "[SUM] {} sec  {}s  {}s/sec",
                times(s.start, s.end, d),
                unit_bytes(s.bytes as f64),
                unit_bits(s.bits_per_second / 8.0),
            );
            let _ = if res.tcp_info {
                writeln!(out, "{head}  {:>3}             ", s.retransmits)
            } else {
                writeln!(out, "{head}                  ")
            };
        }
    }
    let _ = writeln!(out, "{SEPARATOR}");
    let retr = if res.tcp_info { "         Retr" } else { "" };
    let _ = writeln!(out, "[ ID] Interval           Transfer     Bitrate{retr}");
    let line = |id: &str, s: &Summary, role: &str| -> String {
        let head = format!(
            "[{id}] {} sec  {}s  {}s/sec",
            times(s.start, s.end, d),
            unit_bytes(s.bytes as f64),
            unit_bits(s.bits_per_second / 8.0)
        );
        match s.retransmits {
            Some(n) => format!("{head}  {n:>3}             {role}\n"),
            None => format!("{head}                  {role}\n"),
        }
    };
    for e in &res.end_streams {
        let id = format!("{:>3}", e.sender.socket.unwrap_or(0));
        out += &line(&id, &e.sender, "sender");
        out += &line(&id, &e.receiver, "receiver");
    }
    if many {
        out += &line("SUM", &res.sum_sent, "sender");
        out += &line("SUM", &res.sum_received, "receiver");
    }
    if r.options.get_server_output {
        out += &server_text(r, d, &line);
    }
    out += "\niperf Done.\n";
    out
}

/// The server's own report, as `--get-server-output` shows it after the
/// client's summary: its intervals count the bytes it read. The control
/// connection's port is one below the first stream's (it is opened
/// first; not simulated).
fn server_text(r: &Report, d: usize, line: &dyn Fn(&str, &Summary, &str) -> String) -> String {
    let res = &r.results;
    let many = res.streams.len() > 1;
    let rule = "-----------------------------------------------------------";
    let mut out = String::from("\nServer output:\n");
    let _ = writeln!(
        out,
        "{rule}\nServer listening on {SERVER_PORT} (test #1)\n{rule}"
    );
    if let Some(first) = res.streams.first() {
        let _ = writeln!(
            out,
            "Accepted connection from {}, port {}",
            first.local_host,
            first.local_port.saturating_sub(1)
        );
    }
    for s in &res.streams {
        let _ = writeln!(
            out,
            "[{:>3}] local {} port {} connected to {} port {}",
            s.socket, s.remote_host, s.remote_port, s.local_host, s.local_port
        );
    }
    let head = "[ ID] Interval           Transfer     Bitrate";
    let shown = if r.options.interval_s > 0.0 {
        &res.server_intervals[..]
    } else {
        &[]
    };
    if !shown.is_empty() {
        let _ = writeln!(out, "{head}");
    }
    let row = |id: &str, s: &ServerIntervalStream| {
        format!(
            "[{id}] {} sec  {}s  {}s/sec                  \n",
            times(s.start, s.end, d),
            unit_bytes(s.bytes as f64),
            unit_bits(s.bits_per_second / 8.0)
        )
    };
    for (k, iv) in shown.iter().enumerate() {
        if k > 0 && many {
            let _ = writeln!(out, "{SEPARATOR}");
        }
        for s in &iv.streams {
            out += &row(&format!("{:>3}", s.socket), s);
        }
        if many {
            out += &row("SUM", &iv.sum);
        }
    }
    let _ = writeln!(out, "{SEPARATOR}\n{head}");
    for e in &res.end_streams {
        let id = format!("{:>3}", e.receiver.socket.unwrap_or(0));
        out += &line(&id, &e.receiver, "receiver");
    }
    if many {
        out += &line("SUM", &res.sum_received, "receiver");
    }
    out
}

fn summary(s: &Summary) -> J {
    summary_as(s, true)
}

/// A summary object; `sender` is iperf3's flag of the reporting side.
fn summary_as(s: &Summary, sender: bool) -> J {
    let mut v: Vec<(&str, J)> = Vec::new();
    if let Some(sock) = s.socket {
        v.push(("socket", sock.into()));
    }
    v.push(("start", s.start.into()));
    v.push(("end", s.end.into()));
    v.push(("seconds", s.seconds.into()));
    v.push(("bytes", s.bytes.into()));
    v.push(("bits_per_second", s.bits_per_second.into()));
    if let Some(n) = s.retransmits {
        v.push(("retransmits", n.into()));
    }
    if let Some([cwnd, wnd, max_rtt, min_rtt, mean_rtt]) = s.tcp {
        v.push(("max_snd_cwnd", cwnd.into()));
        v.push(("max_snd_wnd", wnd.into()));
        v.push(("max_rtt", max_rtt.into()));
        v.push(("min_rtt", min_rtt.into()));
        v.push(("mean_rtt", mean_rtt.into()));
    }
    v.push(("sender", sender.into()));
    J::obj(v)
}

/// The `connected` list of the start section, from the client's side or
/// (`server`) the server's.
fn connected(r: &Report, server: bool) -> J {
    let rows = r.results.streams.iter().map(|s| {
        let (local, remote) = (
            (s.local_host.as_str(), s.local_port as u32),
            (s.remote_host.as_str(), s.remote_port as u32),
        );
        let (me, peer) = if server {
            (remote, local)
        } else {
            (local, remote)
        };
        J::obj(vec![
            ("socket", s.socket.into()),
            ("local_host", me.0.into()),
            ("local_port", me.1.into()),
            ("remote_host", peer.0.into()),
            ("remote_port", peer.1.into()),
        ])
    });
    J::Arr(rows.collect())
}

/// The server's document inside the client's (`server_output_json`, with
/// `--get-server-output`): its connections, its intervals (bytes read)
/// and its receiver summaries. iperf3's server document also carries its
/// own `start` details and CPU figures, left out here.
fn server_json(r: &Report) -> J {
    let res = &r.results;
    let connected = connected(r, true);
    let one = |s: &ServerIntervalStream, socket: bool| {
        let mut v: Vec<(&str, J)> = Vec::new();
        if socket {
            v.push(("socket", s.socket.into()));
        }
        v.extend([
            ("start", s.start.into()),
            ("end", s.end.into()),
            ("seconds", s.seconds.into()),
            ("bytes", s.bytes.into()),
            ("bits_per_second", s.bits_per_second.into()),
            ("omitted", false.into()),
            ("sender", false.into()),
        ]);
        J::obj(v)
    };
    let intervals = res
        .server_intervals
        .iter()
        .map(|iv| {
            let streams = iv.streams.iter().map(|s| one(s, true)).collect();
            J::obj(vec![
                ("streams", J::Arr(streams)),
                ("sum", one(&iv.sum, false)),
            ])
        })
        .collect();
    let streams = res
        .end_streams
        .iter()
        .map(|e| J::obj(vec![("receiver", summary_as(&e.receiver, false))]))
        .collect();
    J::obj(vec![
        ("start", J::obj(vec![("connected", connected)])),
        ("intervals", J::Arr(intervals)),
        (
            "end",
            J::obj(vec![
                ("streams", J::Arr(streams)),
                ("sum_received", summary_as(&res.sum_received, false)),
            ]),
        ),
    ])
}

/// The `-J` document, as iperf3 prints it (cJSON layout, newline-terminated).
pub fn json(r: &Report) -> String {
    let res = &r.results;
    let o = &r.options;
    let rate = o.bitrate_bps.round() as u64;
    let connected = connected(r, false);
    let start = J::obj(vec![
        ("connected", connected),
        ("version", "iperf 3.12".into()),
        (
            "system_info",
            format!(
                "fabriclab {} simulated host{}",
                env!("CARGO_PKG_VERSION"),
                super::flow_suffix(r.backend)
            )
            .into(),
        ),
        (
            "timestamp",
            J::obj(vec![
                ("time", "Thu, 01 Jan 1970 00:00:00 GMT".into()),
                ("timesecs", 0u64.into()),
            ]),
        ),
        (
            "connecting_to",
            J::obj(vec![
                ("host", o.server.as_str().into()),
                ("port", (SERVER_PORT as u32).into()),
            ]),
        ),
        ("cookie", r.cookie.as_str().into()),
        ("tcp_mss_default", r.mss.into()),
        ("target_bitrate", rate.into()),
        ("sock_bufsize", 0u64.into()),
        ("sndbuf_actual", 16384u64.into()),
        ("rcvbuf_actual", 131072u64.into()),
        (
            "test_start",
            J::obj(vec![
                ("protocol", "TCP".into()),
                ("num_streams", o.parallel.into()),
                ("blksize", o.length.into()),
                ("omit", 0u64.into()),
                ("duration", o.time_s.into()),
                ("bytes", 0u64.into()),
                ("blocks", 0u64.into()),
                ("reverse", 0u64.into()),
                ("tos", 0u64.into()),
                ("target_bitrate", rate.into()),
            ]),
        ),
    ]);
    let intervals = res
        .intervals
        .iter()
        .map(|iv| {
            let streams = iv
                .streams
                .iter()
                .map(|s| {
                    let mut v: Vec<(&str, J)> = vec![
                        ("socket", s.socket.into()),
                        ("start", s.start.into()),
                        ("end", s.end.into()),
                        ("seconds", s.seconds.into()),
                        ("bytes", s.bytes.into()),
                        ("bits_per_second", s.bits_per_second.into()),
                    ];
                    if res.tcp_info {
                        v.extend([
                            ("retransmits", s.retransmits.into()),
                            ("snd_cwnd", s.snd_cwnd.into()),
                            ("snd_wnd", s.snd_wnd.into()),
                            ("rtt", s.rtt.into()),
                            ("rttvar", s.rttvar.into()),
                            ("pmtu", s.pmtu.into()),
                        ]);
                    }
                    v.extend([("omitted", false.into()), ("sender", true.into())]);
                    J::obj(v)
                })
                .collect();
            let s = &iv.sum;
            let mut sum: Vec<(&str, J)> = vec![
                ("start", s.start.into()),
                ("end", s.end.into()),
                ("seconds", s.seconds.into()),
                ("bytes", s.bytes.into()),
                ("bits_per_second", s.bits_per_second.into()),
            ];
            if res.tcp_info {
                sum.push(("retransmits", s.retransmits.into()));
            }
            sum.extend([("omitted", false.into()), ("sender", true.into())]);
            let sum = J::obj(sum);
            J::obj(vec![("streams", J::Arr(streams)), ("sum", sum)])
        })
        .collect();
    let streams = res
        .end_streams
        .iter()
        .map(|e| {
            J::obj(vec![
                ("sender", summary(&e.sender)),
                ("receiver", summary(&e.receiver)),
            ])
        })
        .collect();
    let cpu = [
        "host_total",
        "host_user",
        "host_system",
        "remote_total",
        "remote_user",
        "remote_system",
    ]
    .map(|k| (k, J::Num(0.0)))
    .to_vec();
    let mut end = vec![
        ("streams", J::Arr(streams)),
        ("sum_sent", summary(&res.sum_sent)),
        ("sum_received", summary(&res.sum_received)),
        ("cpu_utilization_percent", J::obj(cpu)),
    ];
    // The flow backend models no congestion control: none is named.
    if res.tcp_info {
        end.push(("sender_tcp_congestion", r.congestion.as_str().into()));
        end.push(("receiver_tcp_congestion", r.congestion.as_str().into()));
    }
    let end = J::obj(end);
    let mut doc = vec![
        ("start", start),
        ("intervals", J::Arr(intervals)),
        ("end", end),
    ];
    if o.get_server_output {
        doc.push(("server_output_json", server_json(r)));
    }
    let doc = J::obj(doc);
    cjson::print(&doc) + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_unit_snprintf() {
        // The sample's "2.66 GBytes", "22.8 Gbits", " 895 KBytes", "1023 KBytes".
        assert_eq!(unit_bytes(2.66 * 1073741824.0), "2.66 GByte");
        assert_eq!(unit_bits(22.8e9 / 8.0), "22.8 Gbit");
        assert_eq!(unit_bytes(895.0 * 1024.0), " 895 KByte");
        assert_eq!(unit_bytes(1023.0 * 1024.0), "1023 KByte");
        assert_eq!(unit_bits(0.0), "0.00 bit");
        assert_eq!(times(0.0, 1.0, 2), "  0.00-1.00  ");
    }
}
