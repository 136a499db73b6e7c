//! perftest on the simulated fabric: ib_write_bw, ib_write_lat, ib_read_bw,
//! ib_read_lat, ib_send_bw, ib_send_lat between two named hosts.
//!
//! The drivers post work the way perftest does and compute what perftest
//! computes from the same time stamps (see `shared/formats/README.md` and
//! perftest's `print_report_bw` / `print_report_lat`):
//! - bandwidth tests keep `tx_depth` requests outstanding per QP (READ
//!   capped at 16 outstanding reads), stamp every post and completion, and
//!   report BW average = size x N / (last completion - first post), BW peak
//!   from the best (completions / time) window at CQ-moderation boundaries,
//!   and the message rate;
//! - latency tests ping-pong (WRITE and SEND: each side answers when the
//!   peer's message has landed; READ: the client re-posts on completion) and
//!   report, from the iters-1 gaps between posts, halved for WRITE and SEND,
//!   sorted with the two largest dropped: t_min, t_max, the median
//!   (t_typical), t_avg, t_stdev, 99 % and 99.9 % percentiles.
//!
//! With `-a` each size runs in a fresh simulation of the same fabric and
//! seed (background traffic restarts with it). Duration mode (`-D`) runs
//! for the given simulated time and measures the middle half (perftest's
//! margins of a quarter at each end). Bandwidth tests post from one
//! thread per side, one work request per `nic.post_send_ns` at most (the
//! message rate of small messages). Not modelled: inline data, post lists,
//! CQ polling cost, UD/UC/XRC/DC transports, multiple ports.

use crate::config::{check_mtu, FabricSpec};
use crate::error::{arg_err, Error, Result};
use crate::net::{AppEvent, Net, OpKind, PortReport, QpId, QpReport};
use crate::sim::{App, Outcome, Sim};
use crate::traffic::flows::{FlowSpec, Flows};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// Bytes of a QP pair's two report rows on their way out (the reports,
/// their JSON, the Python layer's DataFrame rows), beside the QPs
/// themselves ([`Net::qp_pair_bytes`]), for refusing a `-q` too large for
/// memory before it allocates.
const QP_REPORT_BYTES: u64 = 2_000;

/// Which perftest program.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Test {
    /// ib_write_bw
    #[default]
    #[serde(rename = "ib_write_bw")]
    WriteBw,
    /// ib_write_lat
    #[serde(rename = "ib_write_lat")]
    WriteLat,
    /// ib_read_bw
    #[serde(rename = "ib_read_bw")]
    ReadBw,
    /// ib_read_lat
    #[serde(rename = "ib_read_lat")]
    ReadLat,
    /// ib_send_bw
    #[serde(rename = "ib_send_bw")]
    SendBw,
    /// ib_send_lat
    #[serde(rename = "ib_send_lat")]
    SendLat,
}

impl Test {
    /// Parse a program name (`ib_write_bw`, ...).
    pub fn parse(name: &str) -> Result<Test> {
        serde_json::from_value(serde_json::Value::String(name.into())).map_err(|_| {
            Error::InvalidArgument(format!(
                "unknown perftest {name:?}; use one of ib_write_bw, ib_write_lat, ib_read_bw, \
                 ib_read_lat, ib_send_bw, ib_send_lat"
            ))
        })
    }
    /// The program name.
    pub fn name(self) -> &'static str {
        match self {
            Test::WriteBw => "ib_write_bw",
            Test::WriteLat => "ib_write_lat",
            Test::ReadBw => "ib_read_bw",
            Test::ReadLat => "ib_read_lat",
            Test::SendBw => "ib_send_bw",
            Test::SendLat => "ib_send_lat",
        }
    }
    /// True for the bandwidth programs.
    pub fn is_bw(self) -> bool {
        matches!(self, Test::WriteBw | Test::ReadBw | Test::SendBw)
    }
    /// True for the RDMA READ programs.
    pub fn is_read(self) -> bool {
        matches!(self, Test::ReadBw | Test::ReadLat)
    }
    /// The verb.
    pub fn op(self) -> OpKind {
        match self {
            Test::WriteBw | Test::WriteLat => OpKind::Write,
            Test::ReadBw | Test::ReadLat => OpKind::Read,
            Test::SendBw | Test::SendLat => OpKind::Send,
        }
    }
    /// perftest's verb name in its banner and JSON.
    pub fn verb(self) -> &'static str {
        match self.op() {
            OpKind::Write => "RDMA_Write",
            OpKind::Read => "RDMA_Read",
            _ => "Send",
        }
    }
    fn default_iters(self) -> u64 {
        if self == Test::WriteBw {
            5000
        } else {
            1000
        }
    }
}

/// perftest's options (the ones that make sense on a simulated fabric).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Options {
    /// The program.
    pub test: Test,
    /// Client host (the one given a server address on the command line).
    pub client: String,
    /// Server host.
    pub server: String,
    /// `-s`: message size, bytes (default 65536 for bw, 2 for lat).
    pub size: Option<u64>,
    /// `-a`: every size from 2 B to 8 MiB.
    pub all_sizes: bool,
    /// `-n`: iterations (default 5000 for write_bw, 1000 otherwise).
    pub iters: Option<u64>,
    /// `-t`: TX depth (default 128 for bw, 1 for lat).
    pub tx_depth: Option<u32>,
    /// `-b`: bidirectional (bw tests).
    pub bidirectional: bool,
    /// `-D`: run for this many seconds of simulated time instead of `-n`.
    pub duration_s: Option<f64>,
    /// `--mtu`: RoCE (or IB) MTU for this run (default: the fabric's).
    pub mtu: Option<u32>,
    /// `--report_gbits`: bandwidth in Gb/s instead of MiB/s.
    pub report_gbits: bool,
    /// `-q`: number of QPs (bw tests).
    pub qps: u32,
    /// `-Q`: CQ moderation (default 100, capped at the TX depth).
    pub cq_mod: Option<u32>,
    /// Other traffic on the fabric during the test (background flows).
    pub background: Vec<FlowSpec>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            test: Test::WriteBw,
            client: "h0".into(),
            server: "h1".into(),
            size: None,
            all_sizes: false,
            iters: None,
            tx_depth: None,
            bidirectional: false,
            duration_s: None,
            mtu: None,
            report_gbits: false,
            qps: 1,
            cq_mod: None,
            background: Vec::new(),
        }
    }
}

/// One line of a bandwidth report.
#[derive(Clone, Debug, Serialize)]
pub struct BwRow {
    /// Message size, bytes.
    pub bytes: u64,
    /// Iterations (messages) counted.
    pub iters: u64,
    /// BW peak in the report's units.
    pub bw_peak: f64,
    /// BW average in the report's units.
    pub bw_avg: f64,
    /// Message rate, Mpps.
    pub msg_rate_mpps: f64,
    /// BW average in Gb/s whatever the units.
    pub bw_avg_gbps: f64,
}

/// One line of a latency report (microseconds).
#[derive(Clone, Debug, Serialize)]
pub struct LatRow {
    /// Message size, bytes.
    pub bytes: u64,
    /// Iterations.
    pub iters: u64,
    /// Minimum.
    pub t_min_us: f64,
    /// Maximum (after dropping the two largest samples, as perftest does).
    pub t_max_us: f64,
    /// Median.
    pub t_typical_us: f64,
    /// Mean.
    pub t_avg_us: f64,
    /// Standard deviation (perftest truncates each deviation to whole us).
    pub t_stdev_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
}

/// What a perftest run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The options, resolved.
    pub options: Options,
    /// The backend that ran (the JSON output names the flow backend).
    #[serde(skip)]
    pub backend: crate::config::Backend,
    /// The MTU used (RoCE, or IB on an InfiniBand fabric).
    pub mtu: u32,
    /// The fabric is InfiniBand (perftest's link type `IB`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub infiniband: bool,
    /// The fabric is iWARP (perftest's transport type `IW`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub iwarp: bool,
    /// TX depth (perftest's `-t`, capped at the iterations as perftest
    /// does). READ keeps at most [`MAX_OUTSTANDING_READS`] of them in
    /// flight per QP (perftest's "Outstand reads").
    pub tx_depth: u32,
    /// CQ moderation in force (the first size's; with `-a` every size's).
    pub cq_mod: u32,
    /// Node index of the client and server hosts (for perftest's address
    /// lines).
    #[serde(skip)]
    pub hosts: (u32, u32),
    /// Iterations used (per size).
    pub iters: u64,
    /// Bandwidth lines (bw tests).
    pub bw: Vec<BwRow>,
    /// Latency lines (lat tests).
    pub lat: Vec<LatRow>,
    /// Port counters of the last size's run; in JSON one array per column.
    #[serde(serialize_with = "crate::net::port_reports_as_columns")]
    pub ports: Vec<PortReport>,
    /// QP counters of the last size's run; in JSON one array per column.
    #[serde(serialize_with = "crate::net::qp_reports_as_columns")]
    pub qps: Vec<QpReport>,
    /// How the last run ended (`Interrupted`: stopped by the user; the
    /// lines hold the sizes that completed).
    pub outcome: Outcome,
    /// Simulated time of the last run, ps.
    pub sim_time_ps: u64,
    /// Events processed over all runs.
    pub events: u64,
}

/// Run perftest on `fabric` with `seed`.
pub fn run(fabric: &FabricSpec, opts: &Options, seed: u64) -> Result<Report> {
    run_with_progress(fabric, opts, seed, None)
}

/// A perftest run's progress: (simulated time, events, work done, work in
/// all, its unit, the size running). The unit is "iterations" (messages
/// completed: `-n` per QP and direction for the bandwidth tests, `-n`
/// round trips or READs for the latency tests), or with `-D`, whose runs
/// end by time, "us" of simulated time (`-D` per size).
pub type Progress<'a> = &'a mut dyn FnMut(Time, u64, f64, f64, &'static str, &str);

/// [`run`], calling `progress` about every million events and at the end
/// of each size.
pub fn run_with_progress(
    fabric: &FabricSpec,
    opts: &Options,
    seed: u64,
    mut progress: Option<Progress<'_>>,
) -> Result<Report> {
    let mut spec = fabric.clone();
    let infiniband = spec.is_infiniband();
    if let Some(mtu) = opts.mtu {
        if spec.is_iwarp() {
            return arg_err(format!(
                "--mtu {mtu} (perftest's -m) sets the RoCE or InfiniBand path MTU; on an iWARP fabric segments \
                 follow the IP MTU: set iwarp.mtu_bytes in the fabric instead"
            ));
        }
        check_mtu(mtu)?;
        if infiniband {
            spec.ib.get_or_insert_with(Default::default).mtu = mtu;
        } else {
            spec.nic.roce_mtu = mtu;
        }
    }
    let test = opts.test;
    let iters = opts.iters.unwrap_or(test.default_iters());
    if iters < 5 {
        return arg_err(format!("-n {iters}: perftest needs at least 5 iterations"));
    }
    // perftest reads -n into an int.
    if iters > i32::MAX as u64 {
        return arg_err(format!(
            "-n {iters}: perftest takes at most {} iterations",
            i32::MAX
        ));
    }
    if opts.qps == 0 {
        return arg_err("-q must be at least 1");
    }
    if opts.bidirectional && !test.is_bw() {
        return arg_err("-b (bidirectional) applies to the bandwidth tests only");
    }
    if let Some(d) = opts.duration_s {
        if !(d.is_finite() && d > 0.0) {
            return arg_err(format!("-D must be a positive number of seconds, got {d}"));
        }
        if d * 1e6 > crate::config::MAX_SETTING_US {
            return arg_err(format!(
                "-D {} s is longer than any run (at most {} s of simulated time)",
                crate::config::show_f64(d),
                crate::config::MAX_SETTING_US / 1e6
            ));
        }
    }
    if opts.cq_mod == Some(0) {
        return arg_err("-Q (CQ moderation) must be at least 1");
    }
    let mut tx_depth = opts.tx_depth.unwrap_or(if test.is_bw() { 128 } else { 1 });
    if tx_depth == 0 {
        return arg_err("-t (TX depth) must be at least 1");
    }
    if opts.duration_s.is_none() {
        tx_depth = tx_depth.min(iters as u32);
    }
    let sizes: Vec<u64> = if opts.all_sizes {
        (1..24).map(|i| 1u64 << i).collect()
    } else {
        let s = opts.size.unwrap_or(if test.is_bw() { 65536 } else { 2 });
        if s == 0 && test.is_bw() {
            return arg_err("-s 0: bandwidth tests need a message size of at least 1 byte");
        }
        if s > 1 << 31 {
            return arg_err(format!("-s {s}: messages are limited to 2 GiB"));
        }
        vec![s]
    };
    // Check names before any run.
    let probe = Net::new(&spec, seed)?;
    let client = probe.host(&opts.client)?;
    let server = probe.host(&opts.server)?;
    if client == server {
        return arg_err(format!(
            "client and server are both {}; perftest runs between two hosts",
            opts.client
        ));
    }
    probe.check_reachable(client, server)?;
    Flows::new(&probe, &opts.background)?;
    // QP numbers are 24 bits (IBTA); within that, the connections and
    // their report rows must fit in memory (both directions with -b).
    // Measured end to end (the Python call, its DataFrames included) at
    // -q 100000 on the leaf-spine preset: 2.3 KB per QP pair (6.2 KB while
    // the front end built a `serde_json::Value` tree).
    if opts.qps >= 1 << 24 {
        return arg_err(format!(
            "-q {}: a QP number has 24 bits, so an HCA has fewer than 16777216 QPs",
            opts.qps
        ));
    }
    let pairs = opts.qps as u64 * if opts.bidirectional { 2 } else { 1 };
    crate::config::memory::check_workload(
        pairs * (probe.qp_pair_bytes() + QP_REPORT_BYTES),
        &format!("-q {} QPs", opts.qps),
        None,
    )?;
    drop(probe);

    let mut report = Report {
        options: opts.clone(),
        backend: spec.sim.backend,
        mtu: if infiniband {
            spec.ib_spec().mtu
        } else if spec.is_iwarp() {
            spec.iwarp_spec().mtu_bytes
        } else {
            spec.nic.roce_mtu
        },
        infiniband,
        iwarp: spec.is_iwarp(),
        tx_depth,
        cq_mod: cq_moderation(opts, tx_depth, sizes[0]),
        hosts: (client, server),
        iters,
        bw: Vec::new(),
        lat: Vec::new(),
        ports: Vec::new(),
        qps: Vec::new(),
        outcome: Outcome::Finished,
        sim_time_ps: 0,
        events: 0,
    };
    // Iterations of one size, and done before the size that runs.
    let per_size = if test.is_bw() {
        iters * opts.qps as u64 * if opts.bidirectional { 2 } else { 1 }
    } else {
        iters
    };
    // Work per size in the progress's unit: iterations, or with -D
    // simulated microseconds.
    let (per_size, unit) = match opts.duration_s {
        Some(d) => (d * 1e6, "us"),
        None => (per_size as f64, "iterations"),
    };
    let total = per_size * sizes.len() as f64;
    let mut base = 0.0;
    for &size in &sizes {
        let net = Net::new(&spec, seed)?;
        let mut sim = Sim::new(net);
        let cq_mod = cq_moderation(opts, tx_depth, size);
        let duration = opts.duration_s.map(|d| Time::from_ns_f64(d * 1e9));
        let mut fg = Vec::new();
        if test.is_bw() {
            let mk = |src, dst| {
                BwApp::new(
                    test.op(),
                    src,
                    dst,
                    size,
                    iters,
                    if test == Test::ReadBw {
                        tx_depth.min(MAX_OUTSTANDING_READS)
                    } else {
                        tx_depth
                    },
                    opts.qps,
                    duration,
                    Time::from_ns_f64(spec.nic.post_send_ns),
                )
            };
            fg.push(sim.add_app(Box::new(mk(client, server))));
            if opts.bidirectional {
                fg.push(sim.add_app(Box::new(mk(server, client))));
            }
        } else {
            fg.push(sim.add_app(Box::new(LatApp::new(
                test.op(),
                client,
                server,
                size,
                iters,
                duration,
            ))));
        }
        if !opts.background.is_empty() {
            let bg = Flows::new(&sim.net, &opts.background)?.into_background();
            sim.add_app(Box::new(bg));
        }
        let label = format!("{size} B");
        let events_before = report.events;
        let done = |s: &Sim| -> f64 {
            if unit == "us" {
                return s.net.now().as_us_f64();
            }
            fg.iter()
                .map(|&id| {
                    if test.is_bw() {
                        s.app::<BwApp>(id).map_or(0, |a| a.done_count)
                    } else {
                        s.app::<LatApp>(id).map_or(0, |a| a.tposted.len() as u64)
                    }
                })
                .sum::<u64>() as f64
        };
        let outcome = match progress.as_mut() {
            Some(p) => sim.run_watched(duration, &mut |s: &Sim| {
                let now = base + done(s).min(per_size);
                let events = events_before + s.net.events_processed();
                p(s.net.now(), events, now, total, unit, &label)
            }),
            None => sim.run(duration),
        };
        sim.net.audit_check()?;
        if outcome == Outcome::Deadlock {
            return Err(sim.net.deadlock_error());
        }
        for &id in &fg {
            let wc = if test.is_bw() {
                sim.app::<BwApp>(id).and_then(|a| a.failed)
            } else {
                sim.app::<LatApp>(id).and_then(|a| a.failed)
            };
            if let Some(wc) = wc {
                return Err(wc.error(&sim.net, test.is_bw()));
            }
        }
        if outcome == Outcome::Interrupted {
            // Stopped (Ctrl-C): the sizes before this one are the report.
            report.outcome = outcome;
            break;
        }
        let finished = match outcome {
            Outcome::Finished => true,
            Outcome::TimeLimit => duration.is_some(),
            _ => false,
        };
        if !finished {
            return Err(Error::InvalidArgument(format!(
                "{} with {size} B messages could not finish: the simulation {} at {:.3} us \
                 ({})",
                test.name(),
                if outcome == Outcome::Stalled {
                    "stalled"
                } else {
                    "stopped"
                },
                sim.net.now().as_us_f64(),
                sim.net.stall_hint()
            )));
        }
        if test.is_bw() {
            let mut rows = fg.iter().map(|&id| {
                sim.app::<BwApp>(id)
                    .expect("bw app")
                    .row(size, cq_mod, opts.report_gbits)
            });
            let mut row = rows.next().expect("one app");
            for other in rows {
                row.bw_peak += other.bw_peak;
                row.bw_avg += other.bw_avg;
                row.msg_rate_mpps += other.msg_rate_mpps;
                row.bw_avg_gbps += other.bw_avg_gbps;
            }
            if let (Some(d), 0) = (opts.duration_s, row.iters) {
                return arg_err(format!(
                    "-D {} s: no {size} B message completed in the measured middle half of the \
                     run (perftest counts from a quarter to three quarters of -D); give a longer -D",
                    crate::config::show_f64(d)
                ));
            }
            report.bw.push(row);
        } else {
            let app = sim.app::<LatApp>(fg[0]).expect("lat app");
            report.lat.push(app.row(size, test.op() != OpKind::Read)?);
        }
        report.ports = sim.net.port_reports();
        report.qps = sim.net.qp_reports();
        report.outcome = outcome;
        report.sim_time_ps = sim.net.now().0;
        report.events += sim.net.events_processed();
        base += per_size;
        if let Some(p) = progress.as_mut() {
            p(sim.net.now(), report.events, base, total, unit, &label);
        }
    }
    Ok(report)
}

/// Outstanding RDMA READs per QP (ConnectX max_qp_rd_atom).
pub const MAX_OUTSTANDING_READS: u32 = 16;

fn cq_moderation(opts: &Options, tx_depth: u32, size: u64) -> u32 {
    match opts.cq_mod {
        Some(q) => q.clamp(1, tx_depth),
        None if size > 8192 && !opts.all_sizes => 1,
        None => 100.min(tx_depth),
    }
}

/// Bandwidth driver: `tx_depth` outstanding requests per QP.
struct BwApp {
    op: OpKind,
    src: u32,
    dst: u32,
    size: u64,
    iters: u64,
    tx_depth: u32,
    nqps: u32,
    duration: Option<Time>,
    /// The posting thread: at most one work request per `post_gap`
    /// (`nic.post_send_ns`), the next from `next_post` on; the QPs whose
    /// requests wait for it, in the order the loop reached them, and
    /// whether a timer is set for the first.
    post_gap: Time,
    next_post: Time,
    waiting: std::collections::VecDeque<usize>,
    timer_set: bool,
    qps: Vec<QpId>,
    /// Index in `qps` of each QP id, by id (a completion finds its QP in
    /// O(1); a scan of `qps` made `-q 20000` quadratic).
    slot_of: std::collections::HashMap<QpId, usize>,
    posted: Vec<u64>,
    tposted: Vec<Time>,
    tcompleted: Vec<Time>,
    done_count: u64,
    failed: Option<WcError>,
}

/// A work completion in error, as perftest reports it.
#[derive(Clone, Copy, Debug)]
struct WcError {
    status: u32,
    wr_id: u64,
    /// Work requests posted and completed so far (perftest's scnt, ccnt).
    scnt: u64,
    ccnt: u64,
}

impl WcError {
    /// What perftest prints (NOTIFY_COMP_ERROR_SEND, then the line of the
    /// test's main), and the error carrying it.
    fn error(&self, net: &Net, bw: bool) -> Error {
        let tail = if bw {
            " Failed to complete run_iter_bw function successfully"
        } else {
            "Test exited with Error"
        };
        let tool = format!(
            " Completion with error at client\n Failed status {}: wr_id {} syndrom 0x81\n\
             scnt={}, ccnt={}\n{tail}",
            self.status, self.wr_id as i32, self.scnt, self.ccnt
        );
        Error::TransportRetry(
            format!("perftest failed: {}", net.qp_failure_reason()),
            tool,
            net.failed_run_counters(),
        )
    }
}

impl BwApp {
    #[allow(clippy::too_many_arguments)]
    fn new(
        op: OpKind,
        src: u32,
        dst: u32,
        size: u64,
        iters: u64,
        tx_depth: u32,
        nqps: u32,
        duration: Option<Time>,
        post_gap: Time,
    ) -> Self {
        BwApp {
            op,
            src,
            dst,
            size,
            iters,
            tx_depth,
            nqps,
            duration,
            post_gap,
            next_post: Time(0),
            waiting: std::collections::VecDeque::new(),
            timer_set: false,
            qps: Vec::new(),
            slot_of: std::collections::HashMap::new(),
            posted: Vec::new(),
            tposted: Vec::new(),
            tcompleted: Vec::new(),
            done_count: 0,
            failed: None,
        }
    }

    /// QP `k`'s next work request: posted now if the thread is free and
    /// nothing waits before it, else when the thread gets to it.
    fn post(&mut self, net: &mut Net, me: u32, k: usize) {
        self.posted[k] += 1;
        if self.waiting.is_empty() && net.now() >= self.next_post {
            self.post_now(net, k);
        } else {
            self.waiting.push_back(k);
            self.set_timer(net, me);
        }
    }

    fn post_now(&mut self, net: &mut Net, k: usize) {
        let token = self.tposted.len() as u64;
        self.tposted.push(net.now());
        self.next_post = net.now() + self.post_gap;
        net.post(self.qps[k], self.op, self.size, token)
            .expect("validated perftest");
    }

    fn set_timer(&mut self, net: &mut Net, me: u32) {
        if !self.timer_set && !self.waiting.is_empty() {
            self.timer_set = true;
            net.set_app_timer(me, self.next_post, 0);
        }
    }

    fn total(&self) -> u64 {
        self.iters * self.nqps as u64
    }

    fn row(&self, size: u64, cq_mod: u32, gbits: bool) -> BwRow {
        let ff = if gbits { 125_000_000.0 } else { 1_048_576.0 };
        let gb = 125_000_000.0;
        if let Some(d) = self.duration {
            // Middle half of the run: margins of a quarter at each end.
            // perftest divides the messages completed there by the
            // window's length; over its whole seconds that is exact, but
            // over the microseconds a simulation allows, one message more
            // or less is a few per cent (64 KiB at 100G in 50 us read 94.4
            // Gb/s, above the 92.6 the link carries). So the messages are
            // divided by the time from the completion before the first of
            // them to the last: the same figure over whole seconds.
            let (lo, hi) = (Time(d.0 / 4), Time(d.0 - d.0 / 4));
            let tc = &self.tcompleted; // in time order: pushed as they come
            let first = tc.partition_point(|&t| t < lo);
            let end = tc.partition_point(|&t| t < hi);
            let n = (end - first) as u64;
            let secs = match (first.checked_sub(1), end.checked_sub(1)) {
                (Some(before), Some(last)) if n > 0 => (tc[last] - tc[before]).as_secs_f64(),
                _ => (hi - lo).as_secs_f64(),
            };
            let bps = size as f64 * n as f64 / secs;
            return BwRow {
                bytes: size,
                iters: n,
                bw_peak: 0.0,
                bw_avg: bps / ff,
                msg_rate_mpps: n as f64 / secs / 1e6,
                bw_avg_gbps: bps / gb,
            };
        }
        let n = self.tcompleted.len();
        let secs = (self.tcompleted[n - 1] - self.tposted[0]).as_secs_f64();
        let bps = size as f64 * n as f64 / secs;
        // Peak: the best average over windows [post i, completion j], with
        // completions seen at CQ-moderation boundaries (and the last one).
        let tp: Vec<u64> = self.tposted[..n].iter().map(|t| t.0).collect();
        let tc: Vec<u64> = self.tcompleted.iter().map(|t| t.0).collect();
        let best = super::perftest_peak::peak_window_ps(&tp, &tc, cq_mod.max(1) as usize);
        let peak_bps = size as f64 / (best.max(1) as f64 / 1e12);
        BwRow {
            bytes: size,
            iters: self.iters,
            bw_peak: peak_bps / ff,
            bw_avg: bps / ff,
            msg_rate_mpps: n as f64 / secs / 1e6,
            bw_avg_gbps: bps / gb,
        }
    }
}

impl App for BwApp {
    fn start(&mut self, net: &mut Net, me: u32) {
        for _ in 0..self.nqps {
            let (a, _) = net
                .connect(self.src, self.dst, me, me, None)
                .expect("validated hosts");
            self.slot_of.insert(a, self.qps.len());
            self.qps.push(a);
            self.posted.push(0);
        }
        for k in 0..self.qps.len() {
            for _ in 0..self.tx_depth {
                if self.duration.is_none() && self.posted[k] >= self.iters {
                    break;
                }
                self.post(net, me, k);
            }
        }
    }

    fn on_event(&mut self, net: &mut Net, me: u32, ev: AppEvent) {
        match ev {
            AppEvent::Completed { qp, .. } if self.failed.is_none() => {
                self.tcompleted.push(net.now());
                self.done_count += 1;
                let k = self.slot_of[&qp];
                if self.duration.is_some() || self.posted[k] < self.iters {
                    self.post(net, me, k);
                }
            }
            AppEvent::Timer { .. } => {
                self.timer_set = false;
                if self.failed.is_none() {
                    if let Some(k) = self.waiting.pop_front() {
                        self.post_now(net, k);
                    }
                    self.set_timer(net, me);
                }
            }
            AppEvent::Failed { qp, status, .. } if self.failed.is_none() => {
                let k = self.slot_of.get(&qp).copied().unwrap_or(0);
                self.failed = Some(WcError {
                    status,
                    wr_id: k as u64,
                    scnt: self.tposted.len() as u64,
                    ccnt: self.done_count,
                });
            }
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.failed.is_some() || (self.duration.is_none() && self.done_count >= self.total())
    }
}

/// Latency driver: ping-pong (WRITE, SEND) or request/response (READ).
struct LatApp {
    op: OpKind,
    client: u32,
    server: u32,
    size: u64,
    iters: u64,
    duration: Option<Time>,
    cq: Option<QpId>,
    sq: Option<QpId>,
    tposted: Vec<Time>,
    failed: Option<WcError>,
}

impl LatApp {
    fn new(
        op: OpKind,
        client: u32,
        server: u32,
        size: u64,
        iters: u64,
        duration: Option<Time>,
    ) -> Self {
        LatApp {
            op,
            client,
            server,
            size,
            iters,
            duration,
            cq: None,
            sq: None,
            tposted: Vec::new(),
            failed: None,
        }
    }

    fn client_post(&mut self, net: &mut Net) {
        if self.duration.is_none() && self.tposted.len() as u64 >= self.iters {
            return;
        }
        self.tposted.push(net.now());
        let token = self.tposted.len() as u64;
        net.post(self.cq.unwrap(), self.op, self.size, token)
            .expect("validated perftest");
    }

    fn row(&self, size: u64, halve: bool) -> Result<LatRow> {
        let mut d: Vec<u64> = self.tposted.windows(2).map(|w| (w[1] - w[0]).0).collect();
        if d.len() < 3 {
            return arg_err(format!(
                "only {} latency samples were taken; run longer (-n or -D)",
                d.len()
            ));
        }
        let q = if halve { 2.0e6 } else { 1.0e6 }; // ps -> us, and RTT/2
        d.sort_unstable();
        let m = d.len() - 2; // the two largest samples are dropped
        let median = if (m - 1) % 2 == 1 {
            (d[m / 2] + d[m / 2 - 1]) / 2
        } else {
            d[m / 2]
        };
        let avg = d[..m].iter().map(|&x| x as f64 / q).sum::<f64>() / m as f64;
        // perftest truncates each deviation to an integer number of us.
        let var = d[..m]
            .iter()
            .map(|&x| {
                let dev = (avg - x as f64 / q) as i64;
                (dev * dev) as f64
            })
            .sum::<f64>()
            / m as f64;
        let pct = |p: f64| d[((m as f64 * p).ceil() as usize).min(d.len() - 1)] as f64 / q;
        Ok(LatRow {
            bytes: size,
            iters: self.tposted.len() as u64,
            t_min_us: d[0] as f64 / q,
            t_max_us: d[m] as f64 / q,
            t_typical_us: median as f64 / q,
            t_avg_us: avg,
            t_stdev_us: var.sqrt(),
            p99_us: pct(0.99),
            p999_us: pct(0.999),
        })
    }
}

impl App for LatApp {
    fn start(&mut self, net: &mut Net, me: u32) {
        let (c, s) = net
            .connect(self.client, self.server, me, me, None)
            .expect("validated hosts");
        self.cq = Some(c);
        self.sq = Some(s);
        self.client_post(net);
    }

    fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
        match ev {
            AppEvent::Received { qp, token, .. } if Some(qp) == self.sq => {
                // The server answers as soon as the client's message landed.
                net.post(self.sq.unwrap(), self.op, self.size, token)
                    .expect("validated perftest");
            }
            AppEvent::Received { qp, .. } if Some(qp) == self.cq => self.client_post(net),
            AppEvent::Completed {
                qp,
                op: OpKind::Read,
                ..
            } if Some(qp) == self.cq => self.client_post(net),
            AppEvent::Failed { status, .. } if self.failed.is_none() => {
                let n = self.tposted.len() as u64;
                self.failed = Some(WcError {
                    status,
                    wr_id: 0,
                    scnt: n,
                    ccnt: n.saturating_sub(1),
                });
            }
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.failed.is_some()
            || (self.duration.is_none() && self.tposted.len() as u64 >= self.iters)
    }
}
