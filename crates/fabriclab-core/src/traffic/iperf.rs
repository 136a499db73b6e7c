//! iperf3 (TCP) on the simulated fabric: a client sending to a server over
//! `-P` parallel connections for `-t` seconds, with interval reports every
//! `-i` seconds and a summary, as iperf 3.12 computes them.
//!
//! The client writes blocks of `-l` bytes (default 128 KiB). Without `-b`
//! it writes whenever the socket's send buffer has room; with `-b` each
//! stream is paced as iperf3 paces it (a token bucket on the average rate
//! since the start: block k of a stream is released at k x l x 8 / rate).
//! Like iperf3, the sender counts the bytes it wrote and the receiver the
//! bytes it read. So the client's first interval includes what filled the
//! socket's send buffer (`[tcp] snd_buf_bytes`, 4 MiB) and can exceed the
//! line rate on a short interval, as real iperf3's does; the server's
//! figures (`--get-server-output`, and the receiver summary) count bytes
//! that crossed the link and stay at or under the TCP goodput. The sender
//! stops writing at `-t` and the receiver's
//! summary closes when the end-of-test message would reach it (half the
//! stream's smoothed RTT later). Interval figures come from the connection
//! counters at each boundary, as iperf3 reads TCP_INFO: retransmitted
//! segments, snd_cwnd, the advertised receive window, srtt and rttvar.
//!
//! The run is an [`App`]: foreground by default (it ends the run), or
//! background beside another workload ([`Iperf::into_background`]), where
//! the report covers the intervals completed when the foreground ends.
//! Not modelled: UDP, reverse and bidirectional modes, `-n`/`-k`, `-O`
//! omit periods, `-w` socket buffers, the control connection itself.

use crate::config::{FabricSpec, TcpCc};
use crate::error::{arg_err, Result};
use crate::net::{AppEvent, Net, PortReport, TcpId, TcpReport};
use crate::sim::{App, Outcome, Sim};
use crate::traffic::flows::{FlowSpec, Flows};
pub use crate::traffic::iperf_stats::*;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// iperf3's options (the TCP client's, as far as a fabric model needs).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Options {
    /// Host running the client (the sender).
    pub client: String,
    /// Host running the server (the receiver).
    pub server: String,
    /// `-P`: parallel streams (1..=128).
    pub parallel: u32,
    /// `-b`: target bitrate per stream, bits/s; 0 = unlimited (TCP default).
    pub bitrate_bps: f64,
    /// `-t`: seconds of sending (default 1: simulated time is costly;
    /// iperf3's own default is 10).
    pub time_s: f64,
    /// `-i`: seconds between interval reports; 0 = one interval for the
    /// whole run (default 0.1; iperf3's is 1).
    pub interval_s: f64,
    /// `-l`: bytes per write (default 128 KiB).
    pub length: u64,
    /// `-C`: congestion control (reno, cubic, dctcp); default the fabric's.
    pub congestion: Option<String>,
    /// RDMA flows on the fabric during the run.
    pub background: Vec<FlowSpec>,
    /// `--get-server-output`: the client also prints the server's report
    /// (its intervals count the bytes the server read).
    pub get_server_output: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            client: "h0".into(),
            server: "h1".into(),
            parallel: 1,
            bitrate_bps: 0.0,
            time_s: 1.0,
            interval_s: 0.1,
            length: 128 << 10,
            congestion: None,
            background: Vec::new(),
            get_server_output: false,
        }
    }
}

impl Options {
    /// Check the values; returns the congestion control named (if any).
    pub fn validate(&self) -> Result<Option<TcpCc>> {
        if self.parallel == 0 || self.parallel > 128 {
            return arg_err(format!(
                "-P {}: the number of parallel streams must be between 1 and 128",
                self.parallel
            ));
        }
        if !(self.bitrate_bps.is_finite() && self.bitrate_bps >= 0.0) {
            return arg_err(format!(
                "-b {}: the target bitrate must be zero (unlimited) or a positive rate in bits/s",
                self.bitrate_bps
            ));
        }
        if self.bitrate_bps > 0.0 && self.bitrate_bps < 1.0 {
            return arg_err(
                "-b: a target bitrate below 1 bit/s is not a rate; use 0 for unlimited",
            );
        }
        if !(self.time_s.is_finite() && self.time_s > 0.0) {
            return arg_err(format!(
                "-t {}: the duration must be a positive number of seconds",
                self.time_s
            ));
        }
        if self.time_s < 1e-6 {
            return arg_err(format!(
                "-t {}: a test lasts at least 1 us",
                crate::config::show_f64(self.time_s)
            ));
        }
        if self.time_s > 3600.0 {
            return arg_err(format!(
                "-t {}: at most an hour of simulated time",
                self.time_s
            ));
        }
        if !(self.interval_s.is_finite() && self.interval_s >= 0.0) {
            return arg_err(format!(
                "-i {}: the interval must be zero (none) or a positive number of seconds",
                self.interval_s
            ));
        }
        if self.interval_s > 0.0 && self.interval_s < 1e-6 {
            return arg_err(format!(
                "-i {}: intervals are at least 1 us",
                self.interval_s
            ));
        }
        if self.interval_s > 3600.0 {
            return arg_err(format!(
                "-i {}: at most an hour (iperf3 itself allows 60 s)",
                self.interval_s
            ));
        }
        if self.length == 0 {
            return arg_err("-l 0: the write length must be at least 1 byte");
        }
        // iperf3's MAX_BLOCKSIZE for TCP. A larger write would also be
        // counted by the sender at once, where a real write() blocks until
        // the socket buffer has taken it all.
        if self.length > 1 << 20 {
            return arg_err(format!(
                "-l {}: block size too large (maximum = 1048576 bytes), as iperf3",
                self.length
            ));
        }
        self.congestion.as_deref().map(TcpCc::parse).transpose()
    }

    /// Interval boundaries, ps: every `-i` up to `-t`, then `-t` itself
    /// (a last interval shorter than a tenth of `-i` is merged, as iperf3
    /// drops such a stub).
    pub fn boundaries(&self) -> Vec<Time> {
        let end = Time::from_ns_f64(self.time_s * 1e9);
        let mut b = Vec::new();
        if self.interval_s > 0.0 {
            let step = Time::from_ns_f64(self.interval_s * 1e9);
            let mut t = step;
            while t.as_ps().saturating_add(step.as_ps() / 10) < end.as_ps() {
                b.push(t);
                t += step;
            }
        }
        b.push(end);
        b
    }
}

const TOK_BOUNDARY: u64 = 1 << 40;
const TOK_RX_END: u64 = 2 << 40;
const TOK_RELEASE: u64 = 3 << 40;

struct Stream {
    conn: Option<TcpId>,
    written: u64,
    /// Paced mode: blocks released so far, and the pending release timer.
    blocks: u64,
    timer_at: Option<Time>,
}

/// The iperf3 client and server as one workload.
pub struct Iperf {
    client: u32,
    server: u32,
    cc: Option<TcpCc>,
    rate_bps: u64,
    length: u64,
    boundaries: Vec<Time>,
    streams: Vec<Stream>,
    samples: Vec<Sample>,
    rx_end: Option<Sample>,
    stopped: bool,
    background: bool,
}

impl Iperf {
    /// A run of `opts` on `net` (host names resolved, options checked).
    pub fn new(net: &Net, opts: &Options) -> Result<Iperf> {
        let cc = opts.validate()?;
        net.tcp_supported()?;
        if let (Some(cc), crate::config::Backend::Flow) = (cc, net.backend()) {
            return arg_err(format!(
                "-C {}: the flow backend shares each link max-min fairly between TCP streams \
                 and models no congestion control, so every -C would give the same figures; \
                 drop -C, or use --backend packet to see {} at work",
                cc.name(),
                cc.name()
            ));
        }
        let client = net.host(&opts.client)?;
        let server = net.host(&opts.server)?;
        net.check_reachable(client, server)?;
        if client == server {
            return arg_err(format!(
                "client and server are both {}; iperf runs between two hosts",
                opts.client
            ));
        }
        let streams = (0..opts.parallel)
            .map(|_| Stream {
                conn: None,
                written: 0,
                blocks: 0,
                timer_at: None,
            })
            .collect();
        Ok(Iperf {
            client,
            server,
            cc,
            rate_bps: opts.bitrate_bps.round() as u64,
            length: opts.length,
            boundaries: opts.boundaries(),
            streams,
            samples: Vec::new(),
            rx_end: None,
            stopped: false,
            background: false,
        })
    }

    /// Run beside a foreground workload: never keeps the run alive.
    pub fn into_background(mut self) -> Self {
        self.background = true;
        self
    }

    /// The connections (after the start).
    pub fn conns(&self) -> Vec<TcpId> {
        self.streams.iter().filter_map(|s| s.conn).collect()
    }

    /// The figures of the intervals completed so far, and the summary.
    pub fn results(&self, net: &Net) -> Results {
        Results::build(net, &self.conns(), &self.samples, self.rx_end.as_ref())
    }

    fn end(&self) -> Time {
        *self.boundaries.last().expect("at least the end")
    }

    fn sample(&self, net: &Net) -> Sample {
        Sample::take(net, net.now(), &self.conns(), |i| self.streams[i].written)
    }

    /// Write what the pacing and the send buffer allow on stream `i`.
    fn write(&mut self, net: &mut Net, me: u32, i: usize) {
        let now = net.now();
        let (rate, len, end) = (self.rate_bps, self.length, self.end());
        let s = &mut self.streams[i];
        let conn = s.conn.expect("connected");
        if self.stopped || now >= end {
            return;
        }
        let release = |k: u64| -> Time {
            let ps = (k as u128 * len as u128 * 8 * 1_000_000_000_000).div_ceil(rate as u128);
            Time(ps.min(u64::MAX as u128) as u64)
        };
        loop {
            if rate > 0 && release(s.blocks) > now {
                if s.timer_at.is_none() && release(s.blocks) < end {
                    s.timer_at = Some(release(s.blocks));
                    net.set_app_timer(me, release(s.blocks), TOK_RELEASE | i as u64);
                }
                return;
            }
            if net.tcp_send_space(conn) == 0 {
                net.tcp_notify_writable(conn);
                return;
            }
            net.tcp_write(conn, len);
            s.written += len;
            s.blocks += 1;
        }
    }
}

impl App for Iperf {
    fn start(&mut self, net: &mut Net, me: u32) {
        for i in 0..self.streams.len() {
            let conn = net
                .tcp_connect(self.client, self.server, me, self.cc)
                .expect("validated hosts");
            self.streams[i].conn = Some(conn);
        }
        self.samples.push(self.sample(net));
        for i in 0..self.streams.len() {
            self.write(net, me, i);
        }
        net.set_app_timer(me, self.boundaries[0], TOK_BOUNDARY);
    }

    fn on_event(&mut self, net: &mut Net, me: u32, ev: AppEvent) {
        match ev {
            AppEvent::TcpWritable { conn } => {
                if let Some(i) = self.streams.iter().position(|s| s.conn == Some(conn)) {
                    self.write(net, me, i);
                }
            }
            AppEvent::Timer { token } if token & TOK_RELEASE == TOK_RELEASE => {
                let i = (token & 0xffff_ffff) as usize;
                self.streams[i].timer_at = None;
                self.write(net, me, i);
            }
            AppEvent::Timer { token } if token == TOK_BOUNDARY => {
                self.samples.push(self.sample(net));
                let k = self.samples.len() - 1;
                if k < self.boundaries.len() {
                    net.set_app_timer(me, self.boundaries[k], TOK_BOUNDARY);
                } else {
                    // -t reached: stop writing; the server closes its books
                    // when the end-of-test message would reach it.
                    self.stopped = true;
                    let srtt = net.tcp_counters(self.streams[0].conn.unwrap()).srtt_ns;
                    let at = net.now() + Time::ns((srtt / 2).max(1));
                    net.set_app_timer(me, at, TOK_RX_END);
                }
            }
            AppEvent::Timer { token } if token == TOK_RX_END => {
                self.rx_end = Some(self.sample(net));
            }
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.rx_end.is_some()
    }

    fn background(&self) -> bool {
        self.background
    }
}

/// A whole iperf run: its options, the figures and the fabric's counters.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The options.
    pub options: Options,
    /// The backend that ran (the JSON output names the flow backend).
    #[serde(skip)]
    pub backend: crate::config::Backend,
    /// Congestion control used.
    pub congestion: String,
    /// TCP maximum segment size, bytes.
    pub mss: u32,
    /// Host MTU (iperf's pmtu), bytes.
    pub host_mtu: u32,
    /// Run-seed-derived cookie (iperf's is random).
    pub cookie: String,
    /// Intervals and summary.
    #[serde(flatten)]
    pub results: Results,
    /// How the simulation ended.
    pub outcome: Outcome,
    /// Simulated time at the end, ps.
    pub sim_time_ps: u64,
    /// Events processed.
    pub events: u64,
    /// Port counters; in JSON one array per column.
    #[serde(serialize_with = "crate::net::port_reports_as_columns")]
    pub ports: Vec<PortReport>,
    /// TCP connection counters.
    pub tcp: Vec<TcpReport>,
}

/// Run iperf on `fabric` with `opts`.
pub fn run(fabric: &FabricSpec, opts: &Options, seed: u64) -> Result<Report> {
    let net = Net::new(fabric, seed)?;
    let app = Iperf::new(&net, opts)?;
    let bg = Flows::new(&net, &opts.background)?.into_background();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    if !opts.background.is_empty() {
        sim.add_app(Box::new(bg));
    }
    let outcome = sim.run(None);
    sim.net.audit_check()?;
    if outcome == Outcome::Deadlock {
        return Err(sim.net.deadlock_error());
    }
    let app = sim.app::<Iperf>(id).expect("iperf");
    Ok(app.report(&sim.net, opts, seed, outcome))
}

impl Iperf {
    /// The report of this run so far (also for a background run beside
    /// another workload, after that workload's run).
    pub fn report(&self, net: &Net, opts: &Options, seed: u64, outcome: Outcome) -> Report {
        let results =
            if self.rx_end.is_none() && self.samples.last().is_some_and(|s| s.at < net.now()) {
                // Cut short (a background run whose foreground ended): like an
                // interrupted iperf3, the summary covers the time until the stop,
                // with the partial interval.
                let mut samples = self.samples.clone();
                samples.push(self.sample(net));
                Results::build(net, &self.conns(), &samples, None)
            } else {
                self.results(net)
            };
        let conn = self.conns()[0];
        Report {
            options: opts.clone(),
            backend: net.backend(),
            congestion: net.tcp_cc(conn).name().into(),
            mss: net.tcp_mss(),
            host_mtu: net.tcp_host_mtu(),
            cookie: cookie(seed),
            results,
            outcome,
            sim_time_ps: net.now().as_ps(),
            events: net.events_processed(),
            ports: net.port_reports(),
            tcp: net.tcp_reports(),
        }
    }
}

/// 36 characters of [a-z2-7] from the seed (iperf3's cookie alphabet).
fn cookie(seed: u64) -> String {
    let mut rng = crate::rng::Rng::new(seed, 9);
    let abc = b"abcdefghijklmnopqrstuvwxyz234567";
    (0..36)
        .map(|_| abc[(rng.next_u64() % 32) as usize] as char)
        .collect()
}
