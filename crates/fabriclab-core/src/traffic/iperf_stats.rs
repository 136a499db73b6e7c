//! iperf3's statistics from samples of the connection counters taken at
//! the interval boundaries: per-interval figures per stream and summed,
//! and the sender and receiver summaries, with iperf3 3.12's fields and
//! arithmetic (bits per second = bytes x 8 / seconds of the interval; the
//! RTT figures are the kernel's srtt in microseconds as iperf3 reads them
//! from TCP_INFO at each boundary; the receiver summary's `seconds` is the
//! sender's duration, as iperf3 reports it).

use crate::net::tcp::SERVER_PORT;
use crate::net::{Net, TcpId};
use crate::units::Time;
use serde::Serialize;

/// One stream's counters at a boundary.
#[derive(Clone, Debug, Default)]
pub struct StreamSample {
    /// Bytes the client wrote.
    pub written: u64,
    /// Bytes the server received in order.
    pub delivered: u64,
    /// Retransmitted segments so far.
    pub retx: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Smoothed RTT, us.
    pub rtt_us: u64,
    /// RTT variation, us.
    pub rttvar_us: u64,
}

/// All streams' counters at one time.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When.
    pub at: Time,
    /// Per stream.
    pub streams: Vec<StreamSample>,
}

impl Sample {
    /// Read the counters of `conns`; `written(i)` is what the client wrote
    /// on stream i.
    pub fn take(net: &Net, at: Time, conns: &[TcpId], written: impl Fn(usize) -> u64) -> Sample {
        let streams = conns
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let k = net.tcp_counters(c);
                StreamSample {
                    written: written(i),
                    delivered: k.rx_bytes,
                    retx: k.retx_segments,
                    cwnd: k.cwnd_bytes,
                    rtt_us: k.srtt_ns / 1000,
                    rttvar_us: k.rttvar_ns / 1000,
                }
            })
            .collect();
        Sample { at, streams }
    }
}

/// A stream's connection, as iperf3's "connected" list shows it.
#[derive(Clone, Debug, Serialize)]
pub struct StreamInfo {
    /// iperf3's socket number (5, 7, 9, ...).
    pub socket: u32,
    /// Client host.
    pub local_host: String,
    /// Client port.
    pub local_port: u16,
    /// Server host.
    pub remote_host: String,
    /// Server port.
    pub remote_port: u16,
}

/// One stream in one interval.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalStream {
    /// Socket number.
    pub socket: u32,
    /// Start, s.
    pub start: f64,
    /// End, s.
    pub end: f64,
    /// Length, s.
    pub seconds: f64,
    /// Bytes written in the interval.
    pub bytes: u64,
    /// bytes x 8 / seconds.
    pub bits_per_second: f64,
    /// Segments retransmitted in the interval.
    pub retransmits: u64,
    /// Congestion window at the end, bytes.
    pub snd_cwnd: u64,
    /// Peer's receive window, bytes.
    pub snd_wnd: u64,
    /// Smoothed RTT at the end, us.
    pub rtt: u64,
    /// RTT variation at the end, us.
    pub rttvar: u64,
    /// Path MTU, bytes.
    pub pmtu: u32,
}

/// All streams of one interval, summed.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalSum {
    /// Start, s.
    pub start: f64,
    /// End, s.
    pub end: f64,
    /// Length, s.
    pub seconds: f64,
    /// Bytes.
    pub bytes: u64,
    /// bytes x 8 / seconds.
    pub bits_per_second: f64,
    /// Retransmitted segments.
    pub retransmits: u64,
}

/// One interval report.
#[derive(Clone, Debug, Serialize)]
pub struct Interval {
    /// Per stream.
    pub streams: Vec<IntervalStream>,
    /// Summed.
    pub sum: IntervalSum,
}

/// A stream's or the sum's figures over the whole run (`retransmits` and
/// the window/RTT fields are the sender's only).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Socket number (None for sums).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// Start, s (0).
    pub start: f64,
    /// End, s.
    pub end: f64,
    /// Seconds.
    pub seconds: f64,
    /// Bytes sent (written) or received (read).
    pub bytes: u64,
    /// bytes x 8 / seconds (receiver: / its end).
    pub bits_per_second: f64,
    /// Retransmitted segments (sender).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// (max_snd_cwnd, max_snd_wnd, max_rtt, min_rtt, mean_rtt) (sender of
    /// a stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<[u64; 5]>,
}

/// Sender and receiver summaries of one stream.
#[derive(Clone, Debug, Serialize)]
pub struct EndStream {
    /// As the client saw it.
    pub sender: Summary,
    /// As the server saw it.
    pub receiver: Summary,
}

/// One stream's interval as the server reports it: the bytes it read.
#[derive(Clone, Debug, Serialize)]
pub struct ServerIntervalStream {
    /// Socket number.
    pub socket: u32,
    /// Interval start, s.
    pub start: f64,
    /// Interval end, s.
    pub end: f64,
    /// Length, s.
    pub seconds: f64,
    /// Bytes read in order in the interval.
    pub bytes: u64,
    /// bytes x 8 / seconds.
    pub bits_per_second: f64,
}

/// One interval of the server's report, per stream and summed (the sum
/// has no socket).
#[derive(Clone, Debug, Serialize)]
pub struct ServerInterval {
    /// Per stream.
    pub streams: Vec<ServerIntervalStream>,
    /// Summed over the streams.
    pub sum: ServerIntervalStream,
}

/// Intervals and summaries of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// The connections.
    pub streams: Vec<StreamInfo>,
    /// Interval reports completed.
    pub intervals: Vec<Interval>,
    /// The server's intervals (same boundaries, bytes read).
    pub server_intervals: Vec<ServerInterval>,
    /// Per-stream summaries.
    pub end_streams: Vec<EndStream>,
    /// Sum of the senders.
    pub sum_sent: Summary,
    /// Sum of the receivers.
    pub sum_received: Summary,
    /// The run reached its end (false: cut short as a background run).
    pub complete: bool,
    /// The sender's TCP_INFO figures (retransmits, window, RTT) are
    /// modelled: false on the flow backend, whose fluid TCP has none, and
    /// whose reports then leave them out, as iperf3 does where the kernel
    /// gives no TCP_INFO.
    #[serde(skip)]
    pub tcp_info: bool,
}

fn bps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

impl Results {
    /// Build from the samples (the first at time zero) and the receiver's
    /// closing sample.
    pub fn build(
        net: &Net,
        conns: &[TcpId],
        samples: &[Sample],
        rx_end: Option<&Sample>,
    ) -> Results {
        let reports = net.tcp_reports();
        let socket = |i: usize| 5 + 2 * i as u32;
        let streams = conns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let r = &reports[c.0 as usize];
                StreamInfo {
                    socket: socket(i),
                    local_host: r.client.clone(),
                    local_port: r.sport,
                    remote_host: r.server.clone(),
                    remote_port: SERVER_PORT,
                }
            })
            .collect();
        let (snd_wnd, pmtu) = (net.tcp_rcv_wnd(), net.tcp_host_mtu());
        let tcp_info = net.backend() == crate::config::Backend::Packet;
        let mut intervals = Vec::new();
        for w in samples.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            let (start, end) = (a.at.as_secs_f64(), b.at.as_secs_f64());
            let seconds = (b.at - a.at).as_secs_f64();
            let per: Vec<IntervalStream> = (0..conns.len())
                .map(|i| {
                    let (x, y) = (&a.streams[i], &b.streams[i]);
                    let bytes = y.written - x.written;
                    IntervalStream {
                        socket: socket(i),
                        start,
                        end,
                        seconds,
                        bytes,
                        bits_per_second: bps(bytes, seconds),
                        retransmits: y.retx - x.retx,
                        snd_cwnd: y.cwnd,
                        snd_wnd,
                        rtt: y.rtt_us,
                        rttvar: y.rttvar_us,
                        pmtu,
                    }
                })
                .collect();
            let bytes = per.iter().map(|s| s.bytes).sum();
            let sum = IntervalSum {
                start,
                end,
                seconds,
                bytes,
                bits_per_second: bps(bytes, seconds),
                retransmits: per.iter().map(|s| s.retransmits).sum(),
            };
            intervals.push(Interval { streams: per, sum });
        }
        let server_intervals = samples
            .windows(2)
            .map(|w| {
                let (a, b) = (&w[0], &w[1]);
                let (start, end) = (a.at.as_secs_f64(), b.at.as_secs_f64());
                let seconds = (b.at - a.at).as_secs_f64();
                let row = |socket, bytes| ServerIntervalStream {
                    socket,
                    start,
                    end,
                    seconds,
                    bytes,
                    bits_per_second: bps(bytes, seconds),
                };
                let streams: Vec<ServerIntervalStream> = (0..conns.len())
                    .map(|i| row(socket(i), b.streams[i].delivered - a.streams[i].delivered))
                    .collect();
                let total = streams.iter().map(|s| s.bytes).sum();
                ServerInterval {
                    streams,
                    sum: row(0, total),
                }
            })
            .collect();
        let last = samples.last().expect("the start sample");
        let rx = rx_end.unwrap_or(last);
        let (t_snd, t_rcv) = (last.at.as_secs_f64(), rx.at.as_secs_f64());
        let end_streams: Vec<EndStream> = (0..conns.len())
            .map(|i| {
                let seen = &samples[1.min(samples.len() - 1)..];
                let rtts: Vec<u64> = seen.iter().map(|s| s.streams[i].rtt_us).collect();
                let max_cwnd = seen.iter().map(|s| s.streams[i].cwnd).max().unwrap_or(0);
                let min_rtt = rtts.iter().copied().filter(|&r| r > 0).min().unwrap_or(0);
                let mean = rtts.iter().sum::<u64>() / (rtts.len() as u64).max(1);
                let max_rtt = rtts.iter().copied().max().unwrap_or(0);
                let (snd, rcv) = (&last.streams[i], &rx.streams[i]);
                EndStream {
                    sender: Summary {
                        socket: Some(socket(i)),
                        start: 0.0,
                        end: t_snd,
                        seconds: t_snd,
                        bytes: snd.written,
                        bits_per_second: bps(snd.written, t_snd),
                        retransmits: tcp_info.then_some(snd.retx),
                        tcp: tcp_info.then_some([max_cwnd, snd_wnd, max_rtt, min_rtt, mean]),
                    },
                    receiver: Summary {
                        socket: Some(socket(i)),
                        start: 0.0,
                        end: t_rcv,
                        seconds: t_snd,
                        bytes: rcv.delivered,
                        bits_per_second: bps(rcv.delivered, t_rcv),
                        retransmits: None,
                        tcp: None,
                    },
                }
            })
            .collect();
        let sent: u64 = end_streams.iter().map(|e| e.sender.bytes).sum();
        let received: u64 = end_streams.iter().map(|e| e.receiver.bytes).sum();
        let sum = |bytes, end, retransmits| Summary {
            socket: None,
            start: 0.0,
            end,
            seconds: end,
            bytes,
            bits_per_second: bps(bytes, end),
            retransmits,
            tcp: None,
        };
        let retx = end_streams
            .iter()
            .filter_map(|e| e.sender.retransmits)
            .sum();
        Results {
            streams,
            intervals,
            server_intervals,
            sum_sent: sum(sent, t_snd, tcp_info.then_some(retx)),
            sum_received: sum(received, t_rcv, None),
            end_streams,
            complete: rx_end.is_some(),
            tcp_info,
        }
    }
}
