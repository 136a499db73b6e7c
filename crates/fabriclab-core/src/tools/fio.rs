//! fio on the simulated fabric: client hosts doing block I/O against remote
//! storage targets over RDMA, as a distributed file system or NVMe over
//! Fabrics does, with fio's job options and figures.
//!
//! Each client host runs `numjobs` jobs; each job keeps `iodepth` I/Os of
//! `bs` bytes in flight for `runtime_s` (fio's `time_based`), spreading
//! them over the targets round robin (fio's default `file_service_type`
//! over several files). One I/O:
//!
//! - submission costs `submit_us` of the job's CPU (fio's slat); jobs
//!   submit one I/O at a time;
//! - a write sends its `bs` bytes to the target with an RDMA WRITE; a read
//!   sends a 64-byte command (SEND) and the target WRITEs the data back;
//! - the target's device moves the data at its media rate
//!   (`target_write_mbps` / `target_read_mbps`, one FIFO per target), then
//!   answers after `target_latency_us` (the device and storage stack's own
//!   time, pipelined: it does not hold the device) with a 16-byte SEND;
//! - the I/O completes when that answer lands at the client (fio's clat
//!   ends; lat = slat + clat), and the job submits the next one.
//!
//! Figures count the I/Os completed after `ramp_time_s` until the end,
//! bandwidth and IOPS samples are taken every `avg_time_ms` of that window
//! (fio's `bw_avg_time`/`iops_avg_time`), and percentiles are exact over
//! the completed I/Os (fio's own are read from a log-linear histogram,
//! within about 1.6 %). Not modelled: the clients' CPU beyond the fixed
//! submission cost, page cache and file systems, mixed read/write
//! (`rwmixread`), rate limits (`rate`, `rate_iops`), and I/Os still in
//! flight when the run ends (fio waits for them; they are not counted).

use crate::config::FabricSpec;
use crate::error::{arg_err, Result};
use crate::net::{AppEvent, Net, OpKind, PortReport, QpId};
use crate::sim::{App, Outcome, Sim};
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// Bytes of a read command capsule (client to target).
pub const COMMAND_BYTES: u64 = 64;
/// Bytes of a completion capsule (target to client).
pub const RESPONSE_BYTES: u64 = 16;

/// fio's job options (those a fabric model needs) and the storage model.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Options {
    /// Job name (fio's `[section]`).
    pub name: String,
    /// `rw`: randwrite, randread, write or read (sequential and random are
    /// the same to the fabric).
    pub rw: String,
    /// `bs`: block size, bytes.
    pub bs: u64,
    /// `iodepth`: I/Os in flight per job.
    pub iodepth: u32,
    /// `numjobs`: jobs per client host.
    pub numjobs: u32,
    /// `runtime`, seconds (default 0.05: simulated time is costly; the
    /// EANTC runs used 100 s).
    pub runtime_s: f64,
    /// `ramp_time`, seconds before figures are counted.
    pub ramp_time_s: f64,
    /// Hosts running fio.
    pub clients: Vec<String>,
    /// Storage target hosts (fio's files, one per target).
    pub targets: Vec<String>,
    /// Media write rate of one target, MB/s (10^6 B/s).
    pub target_write_mbps: f64,
    /// Media read rate of one target, MB/s.
    pub target_read_mbps: f64,
    /// Device and storage-stack time per I/O at the target, us.
    pub target_latency_us: f64,
    /// Submission cost per I/O at the client (fio's slat), us.
    pub submit_us: f64,
    /// Bandwidth and IOPS sample period, ms (fio's `bw_avg_time`).
    pub avg_time_ms: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            name: "fio".into(),
            rw: "randwrite".into(),
            bs: 4096,
            iodepth: 1,
            numjobs: 1,
            runtime_s: 0.05,
            ramp_time_s: 0.0,
            clients: vec!["h0".into()],
            targets: vec!["h1".into()],
            // Two ES3600P V3 SSDs per server (EANTC seed): 2 x 1.7 GB/s
            // write, 2 x 2.9 GB/s read.
            target_write_mbps: 3400.0,
            target_read_mbps: 5800.0,
            target_latency_us: 28.0,
            submit_us: 1.0,
            avg_time_ms: 500.0,
        }
    }
}

impl Options {
    /// True for reads.
    pub fn is_read(&self) -> bool {
        self.rw.ends_with("read")
    }

    /// Check the values; the message names the option to change.
    pub fn validate(&self) -> Result<()> {
        if !["randwrite", "randread", "write", "read"].contains(&self.rw.as_str()) {
            return arg_err(format!(
                "rw={}: use randwrite, randread, write or read (mixed read/write is not modelled)",
                self.rw
            ));
        }
        if self.bs == 0 || self.bs > 1 << 30 {
            return arg_err(format!(
                "bs={}: the block size must be 1 B to 1 GiB",
                self.bs
            ));
        }
        if self.iodepth == 0 || self.iodepth > 4096 {
            return arg_err(format!("iodepth={}: use 1 to 4096", self.iodepth));
        }
        if self.numjobs == 0 || self.numjobs > 256 {
            return arg_err(format!("numjobs={}: use 1 to 256", self.numjobs));
        }
        for (name, v, max) in [
            ("runtime", self.runtime_s, 3600.0),
            ("ramp_time", self.ramp_time_s, 3600.0),
        ] {
            if !(v.is_finite() && (0.0..=max).contains(&v)) {
                return arg_err(format!(
                    "{name}={v}: use a number of seconds between 0 and {max}"
                ));
            }
        }
        if self.runtime_s <= 0.0 {
            return arg_err(format!(
                "runtime={}: use a number of seconds above 0, at most 3600 (the test's length)",
                self.runtime_s
            ));
        }
        for (name, v) in [
            ("target_write_mbps", self.target_write_mbps),
            ("target_read_mbps", self.target_read_mbps),
            ("avg_time_ms", self.avg_time_ms),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return arg_err(format!("{name}={v}: must be a positive number"));
            }
        }
        // A device rate is held in bits per second: 1 kB/s is the least
        // that does not round towards zero, 10 PB/s more than any device.
        for (name, v) in [
            ("target_write_mbps", self.target_write_mbps),
            ("target_read_mbps", self.target_read_mbps),
        ] {
            if !(1e-3..=1e10).contains(&v) {
                return arg_err(format!(
                    "{name}={v}: give a device rate between 0.001 and 1e10 MB/s"
                ));
            }
        }
        // fio's own minimum for avg_msec is 1 ms (a window of samples per
        // picosecond would not fit in memory).
        if self.avg_time_ms < 1.0 {
            return arg_err(format!(
                "avg_time_ms={}: fio averages over at least 1 ms",
                self.avg_time_ms
            ));
        }
        for (name, v) in [
            ("target_latency_us", self.target_latency_us),
            ("submit_us", self.submit_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return arg_err(format!("{name}={v}: must be zero or a positive number"));
            }
            // An I/O that takes longer than the whole test never completes:
            // the run would report io=0B as if it were a measurement.
            let test_us = (self.ramp_time_s + self.runtime_s) * 1e6;
            if v >= test_us {
                return arg_err(format!(
                    "{name}={v}: longer than the whole test (ramp_time + runtime = {} us), so no \
                     I/O would complete; give less, or a longer runtime",
                    crate::numfmt::fmt_g(test_us, 6)
                ));
            }
        }
        if self.name.trim().is_empty() {
            return arg_err("name is empty: give the job a name (fio's --name)");
        }
        if self.clients.is_empty() || self.targets.is_empty() {
            return arg_err("fio needs at least one client host and one target host");
        }
        for (what, hosts) in [("client", &self.clients), ("target", &self.targets)] {
            if let Some((_, h)) = hosts
                .iter()
                .enumerate()
                .find(|(i, h)| hosts[..*i].contains(h))
            {
                return arg_err(format!(
                    "{h} is listed twice as a {what}; name each host once"
                ));
            }
        }
        if let Some(h) = self.clients.iter().find(|c| self.targets.contains(c)) {
            return arg_err(format!(
                "{h} is both a client and a target; storage goes over the network between two hosts"
            ));
        }
        Ok(())
    }
}

/// Token bits: the I/O's index, and which message of it this is.
const TOK_DATA: u64 = 1 << 40;
const TOK_CMD: u64 = 2 << 40;
const TOK_RESP: u64 = 3 << 40;
const TOK_KIND: u64 = 3 << 40;
/// Timer tokens.
const TOK_END: u64 = 1 << 44;
const TOK_DEVICE: u64 = 2 << 44;
const TOK_SUBMIT: u64 = 3 << 44;
const TOK_TIMER: u64 = 3 << 44;

/// One job's tallies over the counted window.
#[derive(Clone, Debug, Default)]
struct JobStats {
    /// Completed I/Os: (completion time, clat), ps.
    done: Vec<(u64, u64)>,
}

struct Job {
    client: usize,
    /// QP towards each target (client side) and its peer (target side).
    qps: Vec<(QpId, QpId)>,
    next_target: usize,
    /// When the job's CPU is next free to submit.
    cpu_free: Time,
    stats: JobStats,
}

#[derive(Clone, Copy)]
struct Io {
    job: u32,
    target: u32,
    /// When fio started submitting it (lat starts here).
    submitted: Time,
}

/// The fio workload: clients and targets as one App.
pub struct Fio {
    opts: Options,
    clients: Vec<u32>,
    targets: Vec<u32>,
    jobs: Vec<Job>,
    ios: Vec<Io>,
    /// Per target: when its device is next free.
    device_free: Vec<Time>,
    /// Per target: device completions pending (io index), in time order.
    pending: Vec<std::collections::VecDeque<(Time, u32)>>,
    /// QP (target side) -> (job, target) for arrivals at targets.
    qp_owner: std::collections::HashMap<u32, (u32, u32)>,
    start: Time,
    end: Time,
    ended: bool,
    /// `rw` is a read.
    read: bool,
    /// The device's media rate for `rw`.
    device_rate: Rate,
    device_latency: Time,
    slat: Time,
    /// The first I/O whose transfer completed in error (its QP ran out of
    /// retries): fio stops the job there (`continue_on_error=none`).
    failed: Option<u32>,
}

impl Fio {
    /// The error of a job stopped by an I/O whose transfer failed, with
    /// the line fio prints for an I/O error.
    fn io_error(&self, net: &Net, io: u32) -> crate::error::Error {
        let i = &self.ios[io as usize];
        let target = &net.topology().nodes[self.targets[i.target as usize] as usize].name;
        let dir = if self.read { "read" } else { "write" };
        let tool = format!(
            "fio: io_u error on file {target}: Input/output error: {dir} offset={}, buflen={}",
            io as u64 * self.opts.bs,
            self.opts.bs
        );
        let why = net.qp_failure_reason();
        crate::error::Error::TransportRetry(
            format!("fio job {} failed: {why}", self.opts.name),
            tool,
            net.failed_run_counters(),
        )
    }

    /// A run of `opts` on `net` (hosts resolved, options checked).
    pub fn new(net: &Net, opts: &Options) -> Result<Fio> {
        // Unknown hosts first: `--clients h0-h99` on 16 hosts is about h16,
        // not about the client ranges overlapping the targets.
        let clients = opts
            .clients
            .iter()
            .map(|h| net.host(h))
            .collect::<Result<Vec<_>>>()?;
        let targets = opts
            .targets
            .iter()
            .map(|h| net.host(h))
            .collect::<Result<Vec<_>>>()?;
        opts.validate()?;
        for &c in &clients {
            for &t in &targets {
                net.check_reachable(c, t)?;
            }
        }
        let start = Time::from_ns_f64(opts.ramp_time_s * 1e9);
        let end = start + Time::from_ns_f64(opts.runtime_s * 1e9);
        let jobs = clients.len() * opts.numjobs as usize;
        Ok(Fio {
            opts: opts.clone(),
            device_free: vec![Time::ZERO; targets.len()],
            pending: vec![Default::default(); targets.len()],
            clients,
            targets,
            jobs: Vec::with_capacity(jobs),
            ios: Vec::new(),
            qp_owner: Default::default(),
            start,
            end,
            ended: false,
            read: opts.is_read(),
            device_rate: Rate::from_gbps_f64(
                if opts.is_read() {
                    opts.target_read_mbps
                } else {
                    opts.target_write_mbps
                } * 8e-3,
            ),
            device_latency: Time::from_ns_f64(opts.target_latency_us * 1e3),
            slat: Time::from_ns_f64(opts.submit_us * 1e3),
            failed: None,
        })
    }

    /// Submit I/O `io` of job `j` (its slot is free): the job's CPU spends
    /// `submit_us`, then the request leaves.
    fn submit(&mut self, net: &mut Net, me: u32, io: u32) {
        let now = net.now();
        if now >= self.end {
            return;
        }
        let j = self.ios[io as usize].job as usize;
        let slat = self.slat;
        let job = &mut self.jobs[j];
        let at = job.cpu_free.max(now);
        job.cpu_free = at + slat;
        let target = job.next_target;
        job.next_target = (target + 1) % job.qps.len();
        self.ios[io as usize] = Io {
            job: j as u32,
            target: target as u32,
            submitted: at,
        };
        if at + slat > now {
            net.set_app_timer(me, at + slat, TOK_SUBMIT | io as u64);
        } else {
            self.send_request(net, io);
        }
    }

    /// The request of I/O `io` leaves the client (its submission is done).
    fn send_request(&mut self, net: &mut Net, io: u32) {
        let Io { job, target, .. } = self.ios[io as usize];
        let qp = self.jobs[job as usize].qps[target as usize].0;
        let r = if self.read {
            net.post_unsignaled(qp, OpKind::Send, COMMAND_BYTES, TOK_CMD | io as u64)
        } else {
            net.post_unsignaled(qp, OpKind::Write, self.opts.bs, TOK_DATA | io as u64)
        };
        r.expect("a connected QP");
    }

    /// The target's device takes I/O `io` now (write data landed, or a
    /// read command arrived).
    fn device_start(&mut self, net: &mut Net, me: u32, io: u32) {
        let t = self.ios[io as usize].target as usize;
        let begin = self.device_free[t].max(net.now());
        let done = begin + self.device_rate.tx_time(self.opts.bs);
        self.device_free[t] = done;
        let at = done + self.device_latency;
        // Completions of one target leave in order: a FIFO device and a
        // fixed latency.
        self.pending[t].push_back((at, io));
        if self.pending[t].len() == 1 {
            net.set_app_timer(me, at, TOK_DEVICE | t as u64);
        }
    }

    /// Target `t`'s device finished its oldest I/O: answer the client.
    fn device_done(&mut self, net: &mut Net, me: u32, t: usize) {
        let (_, io) = self.pending[t].pop_front().expect("a pending I/O");
        if let Some(&(next, _)) = self.pending[t].front() {
            net.set_app_timer(me, next, TOK_DEVICE | t as u64);
        }
        let Io { job, target, .. } = self.ios[io as usize];
        let qp = self.jobs[job as usize].qps[target as usize].1;
        if self.read {
            net.post_unsignaled(qp, OpKind::Write, self.opts.bs, TOK_DATA | io as u64)
                .expect("a connected QP");
        }
        net.post_unsignaled(qp, OpKind::Send, RESPONSE_BYTES, TOK_RESP | io as u64)
            .expect("a connected QP");
    }

    /// I/O `io` completed at its client.
    fn complete(&mut self, net: &mut Net, me: u32, io: u32) {
        let now = net.now();
        let Io { job, submitted, .. } = self.ios[io as usize];
        if now >= self.start && now <= self.end {
            // lat runs from the start of the submission; clat after it.
            let clat = (now - submitted).saturating_sub(self.slat);
            self.jobs[job as usize]
                .stats
                .done
                .push((now.as_ps(), clat.as_ps()));
        }
        self.submit(net, me, io);
    }
}

impl App for Fio {
    fn start(&mut self, net: &mut Net, me: u32) {
        for &c in &self.clients {
            for _ in 0..self.opts.numjobs {
                let qps = self
                    .targets
                    .iter()
                    .map(|&t| net.connect(c, t, me, me, None).expect("validated hosts"))
                    .collect::<Vec<_>>();
                let j = self.jobs.len() as u32;
                for (t, &(_, tq)) in qps.iter().enumerate() {
                    self.qp_owner.insert(tq.0, (j, t as u32));
                }
                self.jobs.push(Job {
                    client: c as usize,
                    qps,
                    next_target: 0,
                    cpu_free: Time::ZERO,
                    stats: JobStats::default(),
                });
            }
        }
        for j in 0..self.jobs.len() {
            for _ in 0..self.opts.iodepth {
                let io = self.ios.len() as u32;
                self.ios.push(Io {
                    job: j as u32,
                    target: 0,
                    submitted: Time::ZERO,
                });
                self.submit(net, me, io);
            }
        }
        net.set_app_timer(me, self.end, TOK_END);
    }

    fn on_event(&mut self, net: &mut Net, me: u32, ev: AppEvent) {
        match ev {
            AppEvent::Received { token, .. } => {
                let io = (token & 0xff_ffff_ffff) as u32;
                match token & TOK_KIND {
                    // Write data or a read command at the target.
                    TOK_DATA if !self.read => self.device_start(net, me, io),
                    TOK_CMD => self.device_start(net, me, io),
                    TOK_RESP => self.complete(net, me, io),
                    _ => {} // read data landing at the client
                }
            }
            AppEvent::Failed { token, .. } if self.failed.is_none() => {
                self.failed = Some((token & 0xff_ffff_ffff) as u32);
                self.ended = true;
            }
            AppEvent::Timer { token } => match token & TOK_TIMER {
                TOK_END => self.ended = true,
                TOK_DEVICE => self.device_done(net, me, (token & 0xffff_ffff) as usize),
                TOK_SUBMIT => self.send_request(net, (token & 0xff_ffff_ffff) as u32),
                _ => {}
            },
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.ended
    }
}

/// Summary statistics of a set of values, as fio prints them (the unit is
/// the field's that holds the `Stat`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stat {
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Number of values.
    pub n: u64,
}

impl Stat {
    fn of(v: &[f64]) -> Stat {
        if v.is_empty() {
            return Stat::default();
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Stat {
            min: v.iter().cloned().fold(f64::INFINITY, f64::min),
            max: v.iter().cloned().fold(0.0, f64::max),
            mean,
            stddev: var.sqrt(),
            n: v.len() as u64,
        }
    }
}

impl Stat {
    /// The statistics of the union of the sets `parts` summarise: the
    /// extremes, the mean weighted by count and the pooled sample standard
    /// deviation (exact: within- plus between-set sums of squares).
    pub fn pooled(parts: &[&Stat]) -> Stat {
        let parts: Vec<&&Stat> = parts.iter().filter(|s| s.n > 0).collect();
        let n: u64 = parts.iter().map(|s| s.n).sum();
        if n == 0 {
            return Stat::default();
        }
        let mean = parts.iter().map(|s| s.n as f64 * s.mean).sum::<f64>() / n as f64;
        let ss: f64 = parts
            .iter()
            .map(|s| {
                (s.n as f64 - 1.0) * s.stddev * s.stddev + s.n as f64 * (s.mean - mean).powi(2)
            })
            .sum();
        Stat {
            min: parts.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
            max: parts.iter().map(|s| s.max).fold(0.0, f64::max),
            mean,
            stddev: if n > 1 {
                (ss / (n - 1) as f64).sqrt()
            } else {
                0.0
            },
            n,
        }
    }
}

/// fio's default completion-latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// One client host's figures (fio's group report of its jobs).
#[derive(Clone, Debug, Serialize)]
pub struct ClientResult {
    /// The client host.
    pub host: String,
    /// Jobs on it.
    pub jobs: u32,
    /// I/Os completed in the counted window.
    pub total_ios: u64,
    /// Bytes of those I/Os.
    pub io_bytes: u64,
    /// The counted window, ms (fio's runtime).
    pub runtime_ms: f64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Submission latency (constant here), ns.
    pub slat_ns: Stat,
    /// Completion latency, ns.
    pub clat_ns: Stat,
    /// Total latency (slat + clat), ns.
    pub lat_ns: Stat,
    /// clat percentiles (fio's list), ns, as fio reports them: the middle
    /// of its histogram bucket ([`fio_bucket_value`]).
    pub clat_percentiles: Vec<(f64, f64)>,
    /// Bandwidth samples per `avg_time_ms`, KiB/s (fio's `bw` line).
    pub bw_kib_s: Stat,
    /// IOPS samples per `avg_time_ms` (fio's `iops` line).
    pub iops_samples: Stat,
    /// Share of I/Os by total latency, fio's buckets: (upper bound in ns,
    /// fraction); the last bucket (upper bound 0) holds >= 2 s.
    pub lat_buckets: Vec<(u64, f64)>,
}

/// fio's latency buckets' upper bounds, ns (then >= 2000 ms).
fn bucket_bounds() -> Vec<u64> {
    let mut b = Vec::new();
    for scale in [1u64, 1_000, 1_000_000] {
        for x in [2u64, 4, 10, 20, 50, 100, 250, 500, 750, 1000] {
            b.push(x * scale);
        }
    }
    b.push(2_000_000_000);
    b.dedup();
    b
}

/// The value fio reports for a latency of `ns` nanoseconds in a
/// percentile: fio keeps completion latencies in a histogram of 29 groups
/// of 64 buckets (`FIO_IO_U_PLAT_BITS` = 6: exact below 128 ns, then
/// buckets 2^(msb - 6) wide) and prints the middle of the bucket a
/// percentile falls in (stat.c `plat_val_to_idx`, `plat_idx_to_val`), so
/// its percentiles are within 1/128 of the sample.
pub fn fio_bucket_value(ns: u64) -> u64 {
    const BITS: u32 = 6;
    const VAL: u64 = 1 << BITS;
    const NR: u64 = 29 * VAL;
    let idx = if ns == 0 || 63 - ns.leading_zeros() <= BITS {
        ns
    } else {
        let error_bits = 63 - ns.leading_zeros() - BITS;
        let base = u64::from(error_bits + 1) << BITS;
        (base + ((VAL - 1) & (ns >> error_bits))).min(NR - 1)
    };
    if idx < VAL << 1 {
        return idx;
    }
    let error_bits = (idx >> BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(BITS));
    base + (((idx % VAL) as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// Nearest-rank percentile of sorted values (the sample at which the
/// running count first reaches p % of the total, as fio's
/// `calc_clat_percentiles` walks its buckets).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

impl Fio {
    fn client_results(&self, net: &Net) -> Vec<ClientResult> {
        let window_ps = (self.end - self.start).as_ps();
        let avg_ps = (self.opts.avg_time_ms * 1e9) as u64;
        // fio's latencies are whole nanoseconds (its clock's unit).
        let slat_ns = self.slat.as_ns_f64().floor();
        let bounds = bucket_bounds();
        self.clients
            .iter()
            .map(|&c| {
                let jobs: Vec<&Job> = self
                    .jobs
                    .iter()
                    .filter(|j| j.client == c as usize)
                    .collect();
                let done: Vec<(u64, u64)> = jobs
                    .iter()
                    .flat_map(|j| j.stats.done.iter().copied())
                    .collect();
                let mut clat: Vec<f64> = done.iter().map(|&(_, c)| (c / 1000) as f64).collect();
                let lat: Vec<f64> = clat.iter().map(|c| c + slat_ns).collect();
                let slat: Vec<f64> = vec![slat_ns; done.len()];
                let total = done.len() as u64;
                let secs = window_ps as f64 / 1e12;
                // Samples: whole avg_time periods of the window.
                let periods = (window_ps / avg_ps.max(1)) as usize;
                let mut per = vec![0u64; periods];
                for &(t, _) in &done {
                    let k = ((t - self.start.as_ps()) / avg_ps.max(1)) as usize;
                    if k < periods {
                        per[k] += 1;
                    }
                }
                let per_s = avg_ps as f64 / 1e12;
                let iops_samples: Vec<f64> = per.iter().map(|&n| n as f64 / per_s).collect();
                let bw_samples: Vec<f64> = iops_samples
                    .iter()
                    .map(|i| i * self.opts.bs as f64 / 1024.0)
                    .collect();
                let mut buckets = vec![0u64; bounds.len() + 1];
                for &l in &lat {
                    let k = bounds
                        .iter()
                        .position(|&b| l <= b as f64)
                        .unwrap_or(bounds.len());
                    buckets[k] += 1;
                }
                clat.sort_by(|a, b| a.partial_cmp(b).unwrap());
                ClientResult {
                    host: net.topology().nodes[c as usize].name.clone(),
                    jobs: jobs.len() as u32,
                    total_ios: total,
                    io_bytes: total * self.opts.bs,
                    runtime_ms: window_ps as f64 / 1e9,
                    iops: total as f64 / secs,
                    bw_bytes: (total * self.opts.bs) as f64 / secs,
                    slat_ns: Stat::of(&slat),
                    lat_ns: Stat::of(&lat),
                    clat_percentiles: PERCENTILES
                        .iter()
                        .map(|&p| (p, fio_bucket_value(percentile(&clat, p) as u64) as f64))
                        .collect(),
                    clat_ns: Stat::of(&clat),
                    bw_kib_s: Stat::of(&bw_samples),
                    iops_samples: Stat::of(&iops_samples),
                    lat_buckets: buckets
                        .iter()
                        .enumerate()
                        .map(|(k, &n)| {
                            (
                                bounds.get(k).copied().unwrap_or(0),
                                if total > 0 {
                                    n as f64 / total as f64
                                } else {
                                    0.0
                                },
                            )
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// A whole fio run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The options.
    pub options: Options,
    /// The backend that ran (the JSON output names the flow backend).
    #[serde(skip)]
    pub backend: crate::config::Backend,
    /// One entry per client host, in the order given.
    pub clients: Vec<ClientResult>,
    /// How the run ended.
    pub outcome: Outcome,
    /// Simulated time, ps.
    pub sim_time_ps: u64,
    /// Events processed.
    pub events: u64,
    /// The fabric's port counters; in JSON one array per column.
    #[serde(serialize_with = "crate::net::port_reports_as_columns")]
    pub ports: Vec<PortReport>,
}

impl Report {
    /// fio's client-mode "All clients" group: every client's I/Os together
    /// (IOPS, bandwidth and bytes summed, the longest window, latency
    /// statistics pooled, latency buckets weighted by I/Os). None with one
    /// client. It has no percentiles or bandwidth samples (fio prints
    /// none there either).
    pub fn all_clients(&self) -> Option<ClientResult> {
        if self.clients.len() < 2 {
            return None;
        }
        let cs = &self.clients;
        let total: u64 = cs.iter().map(|c| c.total_ios).sum();
        let pool =
            |f: fn(&ClientResult) -> &Stat| Stat::pooled(&cs.iter().map(f).collect::<Vec<_>>());
        let lat_buckets = cs[0]
            .lat_buckets
            .iter()
            .enumerate()
            .map(|(k, &(b, _))| {
                let ios: f64 = cs
                    .iter()
                    .map(|c| c.lat_buckets[k].1 * c.total_ios as f64)
                    .sum();
                (b, if total > 0 { ios / total as f64 } else { 0.0 })
            })
            .collect();
        Some(ClientResult {
            host: "All clients".into(),
            // fio counts the group's members: with group_reporting, one
            // per client (client.c `handle_ts`), whatever its numjobs.
            jobs: cs.len() as u32,
            total_ios: total,
            io_bytes: cs.iter().map(|c| c.io_bytes).sum(),
            runtime_ms: cs.iter().map(|c| c.runtime_ms).fold(0.0, f64::max),
            iops: cs.iter().map(|c| c.iops).sum(),
            bw_bytes: cs.iter().map(|c| c.bw_bytes).sum(),
            slat_ns: pool(|c| &c.slat_ns),
            clat_ns: pool(|c| &c.clat_ns),
            lat_ns: pool(|c| &c.lat_ns),
            clat_percentiles: Vec::new(),
            bw_kib_s: Stat::default(),
            iops_samples: Stat::default(),
            lat_buckets,
        })
    }
}

/// Run fio on a fabric.
pub fn run(fabric: &FabricSpec, opts: &Options, seed: u64) -> Result<Report> {
    run_with_progress(fabric, opts, seed, None)
}

/// Like [`run`], calling `progress(sim_time, events)` every 2^20 events.
pub fn run_with_progress(
    fabric: &FabricSpec,
    opts: &Options,
    seed: u64,
    progress: Option<&mut dyn FnMut(Time, u64)>,
) -> Result<Report> {
    let net = Net::new(fabric, seed)?;
    let app = Fio::new(&net, opts)?;
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run_with_progress(None, progress);
    sim.net.audit_check()?;
    if outcome == Outcome::Deadlock {
        return Err(sim.net.deadlock_error());
    }
    let app = sim.app::<Fio>(id).expect("fio");
    if let Some(io) = app.failed {
        return Err(app.io_error(&sim.net, io));
    }
    let clients = app.client_results(&sim.net);
    if outcome == Outcome::Finished && clients.iter().all(|c| c.total_ios == 0) {
        // fio would print IOPS=0, BW=0: a test too short for one block.
        return arg_err(format!(
            "no I/O completed within the measured {} ms (after a ramp of {} ms): a {} B block \
             takes longer than that; give a longer runtime or a smaller bs",
            crate::numfmt::fmt_g(opts.runtime_s * 1e3, 4),
            crate::numfmt::fmt_g(opts.ramp_time_s * 1e3, 4),
            opts.bs
        ));
    }
    Ok(Report {
        options: opts.clone(),
        backend: sim.net.backend(),
        clients,
        outcome,
        sim_time_ps: sim.net.now().as_ps(),
        events: sim.net.events_processed(),
        ports: sim.net.port_reports(),
    })
}

#[cfg(test)]
mod tests {
    use super::{fio_bucket_value, Stat};

    #[test]
    fn pooled_statistics_equal_those_of_the_union() {
        let a = [3.0, 5.0, 9.0];
        let b = [1.0, 4.0, 4.0, 10.0, 12.0];
        let all: Vec<f64> = a.iter().chain(b.iter()).copied().collect();
        let p = Stat::pooled(&[&Stat::of(&a), &Stat::of(&b), &Stat::default()]);
        let u = Stat::of(&all);
        assert_eq!((p.min, p.max, p.n), (u.min, u.max, u.n));
        assert!((p.mean - u.mean).abs() < 1e-12 && (p.stddev - u.stddev).abs() < 1e-12);
        assert_eq!(Stat::pooled(&[]).n, 0);
    }

    #[test]
    fn percentile_values_are_fios_bucket_middles() {
        // Exact below 128 ns.
        for ns in [0, 1, 64, 100, 127] {
            assert_eq!(fio_bucket_value(ns), ns);
        }
        // 128-255 ns in buckets 2 wide: the middle, 129, 131, ...
        assert_eq!(fio_bucket_value(128), 129);
        assert_eq!(fio_bucket_value(129), 129);
        assert_eq!(fio_bucket_value(130), 131);
        // 520 ns: bucket [520, 528) of width 8, middle 524.
        assert_eq!(fio_bucket_value(520), 524);
        // The golden sample's JSON percentiles are bucket values already.
        for ns in [
            150_528, 160_768, 183_296, 329_728, 577_536, 970_752, 1_826_816,
        ] {
            assert_eq!(fio_bucket_value(ns), ns);
        }
        // Every value lies in its bucket: within half a bucket of the
        // sample, 1/128 of it at most.
        for ns in (1..5_000_000u64).step_by(997) {
            let v = fio_bucket_value(ns);
            assert!(v.abs_diff(ns) * 128 <= ns.max(128), "{ns} -> {v}");
        }
        // From the last group on (2^34 ns, about 17 s) everything is the
        // last bucket.
        assert_eq!(fio_bucket_value(1 << 40), fio_bucket_value(1 << 50));
    }
}
