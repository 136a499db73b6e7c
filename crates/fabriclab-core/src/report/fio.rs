//! fio 3.33's output for a simulated run: the normal text report and the
//! `--output-format=json` document, one job entry per client host.
//!
//! Numbers use fio's rules: `num2str` for IOPS, bandwidth and sizes (a
//! value that does not fit the field is scaled by 1000 or 1024 with k/M/G
//! or Ki/Mi/Gi and given the decimals that still fit), latency units that
//! move from nsec to usec to msec as fio's `nsec_to_usec`/`nsec_to_msec`
//! decide (from min, max and stdev), latencies in whole nanoseconds as
//! fio's clock gives them, percentiles as the middle of fio's histogram
//! bucket, scaled down rounding up, in rows of four (three when they need
//! seven digits), and latency buckets in rows of five. As with fio's client
//! mode, each line of a host's text report starts with `<host> `. Lines
//! fio fills from the operating system are left out (cpu, disk stats), and
//! the JSON's OS fields are zeros; the IO depth, submit and complete
//! histograms are those of the simulated engine (the job's depth, one I/O
//! per call). With several clients, client mode's "All clients" summary
//! follows (no percentiles or bandwidth samples there, as in fio's).

use crate::tools::fio::{ClientResult, Report, Stat};
use std::fmt::Write;

/// fio's `num2str(num, maxlen, base)`: the number in at most `maxlen`
/// digits, scaled with a unit prefix when it does not fit.
pub fn num2str(num: f64, maxlen: usize, base: f64, binary: bool) -> String {
    let prefixes: [&str; 5] = if binary {
        ["", "Ki", "Mi", "Gi", "Ti"]
    } else {
        ["", "k", "M", "G", "T"]
    };
    let digits = |v: f64| format!("{}", v.round().max(0.0) as u64).len();
    let mut v = num;
    let mut k = 0;
    while digits(v) > maxlen && k < 4 {
        v /= base;
        k += 1;
    }
    if k == 0 {
        return format!("{}{}", v.round() as u64, prefixes[0]);
    }
    let int_digits = digits(v.trunc());
    let decimals = maxlen.saturating_sub(int_digits + 1);
    let mut s = format!("{v:.decimals$}");
    if decimals > 0 {
        // fio drops trailing zeros of the fraction.
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    format!("{s}{}", prefixes[k])
}

/// The unit fio prints a latency line in, and the divisor from ns: fio's
/// `nsec_to_msec` then `nsec_to_usec` (stat.h), which move up only when
/// the minimum, the maximum and the standard deviation are all large
/// (min above 2 ms, max above 99.999 ms and stdev above 1 ms for msec;
/// 2 us, 99.999 us and 1 us for usec), so a constant latency stays in
/// nsec.
fn lat_unit(s: &Stat) -> (&'static str, f64) {
    let (min, max) = (s.min.floor(), s.max.floor());
    if min > 2_000_000.0 && max > 99_999_999.0 && s.stddev > 1_000_000.0 {
        ("msec", 1e6)
    } else if min > 2_000.0 && max > 99_999.0 && s.stddev > 1_000.0 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn stat_line(out: &mut String, pre: &str, label: &str, s: &Stat) {
    let (unit, div) = lat_unit(s);
    let _ = writeln!(
        out,
        // fio's `avg=%5.02f, stdev=%5.02f`.
        "{pre}{label} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        // fio divides integer nanoseconds: min and max truncate.
        num2str((s.min / div).floor(), 6, 1000.0, false),
        num2str((s.max / div).floor(), 6, 1000.0, false),
        s.mean / div,
        s.stddev / div
    );
}

/// fio's `bw` or `iops` sample line.
fn sample_line(out: &mut String, pre: &str, label: &str, per: &str, s: &Stat) {
    let _ = writeln!(
        out,
        // fio's `min=%5llu, max=%5llu, ..., avg=%5.02f, stdev=%5.02f`.
        "{pre}   {label}: min={:5}, max={:5}{per}, avg={:5.2}, stdev={:5.2}, samples={}",
        s.min.round() as u64,
        s.max.round() as u64,
        s.mean,
        s.stddev,
        s.n
    );
}

fn percentiles(out: &mut String, pre: &str, c: &ClientResult) {
    let min = c.clat_percentiles.first().map_or(0.0, |p| p.1);
    let max = c.clat_percentiles.last().map_or(0.0, |p| p.1);
    let (unit, steps) = if min > 2_000_000.0 && max > 99_999_999.0 {
        ("msec", 2u32)
    } else if min > 2_000.0 && max > 99_999.0 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    };
    let _ = writeln!(out, "{pre}    clat percentiles ({unit}):");
    // fio scales each value down by 1000 per step, rounding up.
    let vals: Vec<u64> = c
        .clat_percentiles
        .iter()
        .map(|&(_, v)| (0..steps).fold(v as u64, |x, _| x.div_ceil(1000)))
        .collect();
    // fio's `time_width = max(5, log10(maxv / divisor) + 1)`: the digits
    // of the largest value divided down without rounding.
    let width = ((max as u64) / 1000u64.pow(steps)).to_string().len().max(5);
    // fio's `per_line = (80 - 7) / (precision + 10 + time_width)`.
    let per_line = 73 / (2 + 10 + width);
    let n = vals.len();
    for (row, chunk) in c.clat_percentiles.chunks(per_line).enumerate() {
        let mut line = format!("{pre}     |");
        for (k, &(p, _)) in chunk.iter().enumerate() {
            let i = row * per_line + k;
            let sep = if i + 1 < n { "," } else { "" };
            let _ = write!(line, " {p:5.2}th=[{:>width$}]{sep}", vals[i]);
        }
        let _ = writeln!(out, "{line}");
    }
}

fn lat_buckets(out: &mut String, pre: &str, c: &ClientResult) {
    // Buckets 0..10 are nsec, 10..20 usec, the rest msec (then >= 2000).
    let groups: [(&str, std::ops::Range<usize>, f64); 3] = [
        ("nsec", 0..10, 1.0),
        ("usec", 10..20, 1e3),
        ("msec", 20..c.lat_buckets.len(), 1e6),
    ];
    for (unit, range, div) in groups {
        let items: Vec<String> = c.lat_buckets[range]
            .iter()
            .filter(|(_, f)| *f > 0.0)
            .map(|&(b, f)| {
                let pct = (f * 100.0).max(0.01);
                if b == 0 {
                    format!(">=2000={pct:.2}%")
                } else {
                    format!("{}={pct:.2}%", (b as f64 / div).round() as u64)
                }
            })
            .collect();
        for chunk in items.chunks(5) {
            let _ = writeln!(out, "{pre}  lat ({unit})   : {}", chunk.join(", "));
        }
    }
}

/// fio's submit and complete histograms (I/Os per call, buckets 0, 1-4,
/// 5-8, ...) for one I/O per call.
const SUBMIT_LINE: &str = "0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%";
const SUBMIT_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

/// The IO depth bucket (of fio's 1, 2, 4, ..., >=64) that `depth` falls in.
fn depth_bucket(depth: u32) -> usize {
    [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .rposition(|&b| depth >= b)
        .unwrap_or(0)
}

fn depth_line(depth: u32) -> String {
    let buckets = [1u32, 2, 4, 8, 16, 32, 64];
    let at = depth_bucket(depth);
    buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let label = if *b == 64 {
                ">=64".to_string()
            } else {
                b.to_string()
            };
            format!("{label}={}%", if i == at { "100.0" } else { "0.0" })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text report: per client host, fio's job header, group report and
/// run status, each line prefixed with `<host> `.
pub fn text(r: &Report) -> String {
    let o = &r.options;
    let mut out = String::new();
    let dir = if o.is_read() { "read" } else { "write" };
    for c in &r.clients {
        let pre = format!("<{}> ", c.host);
        let _ = writeln!(
            out,
            "{pre}{}: (g=0): rw={}, bs=(R) {bs}B-{bs}B, (W) {bs}B-{bs}B, (T) {bs}B-{bs}B, ioengine=rdma, iodepth={}",
            o.name,
            o.rw,
            o.iodepth,
            bs = o.bs
        );
        // fio prints the first job of a group and "..." for its copies.
        if c.jobs > 1 {
            let _ = writeln!(out, "{pre}...");
        }
        let _ = writeln!(out, "{pre}fio-3.33 (fabriclab simulation)");
        let _ = writeln!(
            out,
            "{pre}Starting {} process{}",
            c.jobs,
            if c.jobs == 1 { "" } else { "es" }
        );
        let _ = writeln!(out, "{pre}");
        let _ = writeln!(
            out,
            "{pre}{}: (groupid=0, jobs={}): err= 0: pid=0: simulated",
            o.name, c.jobs
        );
        let runtime_ms = c.runtime_ms.round() as u64;
        direction_and_latency(&mut out, &pre, r, c, "B/s");
        if c.total_ios > 0 {
            percentiles(&mut out, &pre, c);
        }
        if c.bw_kib_s.n > 0 {
            sample_line(&mut out, &pre, "bw (  KiB/s)", ", per=100.00%", &c.bw_kib_s);
            sample_line(&mut out, &pre, "iops        ", "", &c.iops_samples);
        }
        lat_buckets(&mut out, &pre, c);
        depth_and_issue_lines(&mut out, &pre, r, c);
        let _ = writeln!(
            out,
            "{pre}     latency   : target=0, window=0, percentile=100.00%, depth={}",
            o.iodepth
        );
        let _ = writeln!(out, "{pre}");
        let _ = writeln!(out, "{pre}Run status group 0 (all jobs):");
        let bw_bin = num2str(c.bw_bytes, 4, 1024.0, true);
        let bw_dec = num2str(c.bw_bytes, 4, 1000.0, false);
        let _ = writeln!(
            out,
            "{pre}  {}: bw={bw_bin}B/s ({bw_dec}B/s), {bw_bin}B/s-{bw_bin}B/s ({bw_dec}B/s-{bw_dec}B/s), io={}B ({}B), run={runtime_ms}-{runtime_ms}msec",
            dir.to_uppercase(),
            num2str(c.io_bytes as f64, 4, 1024.0, true),
            num2str(c.io_bytes as f64, 4, 1000.0, false),
        );
        out.push('\n');
    }
    if let Some(all) = r.all_clients() {
        all_clients(&mut out, r, &all);
    }
    out
}

/// fio's client-mode summary of all clients: the group line, the
/// direction line (bandwidth without `B/s`, as fio prints it there), the
/// latency statistics and buckets, and the depth and issue lines.
fn all_clients(out: &mut String, r: &Report, c: &ClientResult) {
    let _ = writeln!(
        out,
        "All clients: (groupid=0, jobs={}): err= 0: pid=0: simulated",
        c.jobs
    );
    // fio prints the bandwidth without B/s there.
    direction_and_latency(out, "", r, c, "");
    lat_buckets(out, "", c);
    depth_and_issue_lines(out, "", r, c);
}

/// fio's direction line (IOPS, bandwidth with `per_s` after each figure,
/// bytes and runtime) and, with I/Os done, its slat, clat and lat lines.
fn direction_and_latency(out: &mut String, pre: &str, r: &Report, c: &ClientResult, per_s: &str) {
    let o = &r.options;
    let dir = if o.is_read() { "read" } else { "write" };
    let _ = writeln!(
        out,
        "{pre}  {dir}: IOPS={}, BW={}{per_s} ({}{per_s})({}B/{}msec){}",
        num2str(c.iops, 4, 1000.0, false),
        num2str(c.bw_bytes, 4, 1024.0, true),
        num2str(c.bw_bytes, 4, 1000.0, false),
        num2str(c.io_bytes as f64, 4, 1024.0, true),
        c.runtime_ms.round() as u64,
        // fio counts zone resets for writes (none off zoned devices).
        if o.is_read() { "" } else { "; 0 zone resets" }
    );
    if c.total_ios > 0 {
        stat_line(out, pre, "    slat", &c.slat_ns);
        stat_line(out, pre, "    clat", &c.clat_ns);
        stat_line(out, pre, "     lat", &c.lat_ns);
    }
}

/// fio's IO depth, submit and complete histograms and issued I/Os. The
/// simulated engine keeps the job's depth and submits and reaps one I/O
/// per call (fio's 1-4 bucket).
fn depth_and_issue_lines(out: &mut String, pre: &str, r: &Report, c: &ClientResult) {
    let o = &r.options;
    let _ = writeln!(out, "{pre}  IO depths    : {}", depth_line(o.iodepth));
    let _ = writeln!(out, "{pre}     submit    : {SUBMIT_LINE}");
    let _ = writeln!(out, "{pre}     complete  : {SUBMIT_LINE}");
    let (rd, wr) = if o.is_read() {
        (c.total_ios, 0)
    } else {
        (0, c.total_ios)
    };
    let _ = writeln!(
        out,
        "{pre}     issued rwts: total={rd},{wr},0,0 short=0,0,0,0 dropped=0,0,0,0"
    );
}

/// fio's JSON values: integers and doubles print differently.
enum F {
    I(i64),
    D(f64),
    S(String),
    O(Vec<(String, F)>),
}

fn o(pairs: Vec<(&str, F)>) -> F {
    F::O(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn print(f: &F, indent: usize, out: &mut String) {
    match f {
        F::I(v) => {
            let _ = write!(out, "{v}");
        }
        F::D(v) => {
            let _ = write!(out, "{v:.6}");
        }
        F::S(s) => {
            let _ = write!(out, "{}", serde_json::to_string(s).expect("a string"));
        }
        F::O(kv) => {
            out.push_str("{\n");
            for (i, (k, v)) in kv.iter().enumerate() {
                let _ = write!(out, "{:w$}\"{k}\" : ", "", w = indent + 2);
                print(v, indent + 2, out);
                out.push_str(if i + 1 < kv.len() { ",\n" } else { "\n" });
            }
            let _ = write!(out, "{:w$}}}", "", w = indent);
        }
    }
}

fn stat_json(s: &Stat, with_pct: Option<&ClientResult>) -> F {
    let mut v = vec![
        ("min", F::I(s.min.round() as i64)),
        ("max", F::I(s.max.round() as i64)),
        ("mean", F::D(s.mean)),
        ("stddev", F::D(s.stddev)),
        ("N", F::I(s.n as i64)),
    ];
    if let Some(c) = with_pct {
        v.push((
            "percentile",
            F::O(
                c.clat_percentiles
                    .iter()
                    .map(|&(p, x)| (format!("{p:.6}"), F::I(x.round() as i64)))
                    .collect(),
            ),
        ));
    }
    o(v)
}

fn empty_dir() -> F {
    let zero = || stat_json(&Stat::default(), None);
    o(vec![
        ("io_bytes", F::I(0)),
        ("io_kbytes", F::I(0)),
        ("bw_bytes", F::I(0)),
        ("bw", F::I(0)),
        ("iops", F::D(0.0)),
        ("runtime", F::I(0)),
        ("total_ios", F::I(0)),
        ("short_ios", F::I(0)),
        ("drop_ios", F::I(0)),
        ("slat_ns", zero()),
        ("clat_ns", zero()),
        ("lat_ns", zero()),
        ("bw_min", F::I(0)),
        ("bw_max", F::I(0)),
        ("bw_agg", F::D(0.0)),
        ("bw_mean", F::D(0.0)),
        ("bw_dev", F::D(0.0)),
        ("bw_samples", F::I(0)),
        ("iops_min", F::I(0)),
        ("iops_max", F::I(0)),
        ("iops_mean", F::D(0.0)),
        ("iops_stddev", F::D(0.0)),
        ("iops_samples", F::I(0)),
    ])
}

/// fio's IO depth and submit/complete histograms as JSON objects.
fn depth_json(depth: u32) -> (F, F, F) {
    let at = depth_bucket(depth);
    let level = ["1", "2", "4", "8", "16", "32", ">=64"]
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), F::D(if i == at { 100.0 } else { 0.0 })))
        .collect();
    let calls = || {
        SUBMIT_KEYS
            .iter()
            .map(|k| (k.to_string(), F::D(if *k == "4" { 100.0 } else { 0.0 })))
            .collect()
    };
    (F::O(level), F::O(calls()), F::O(calls()))
}

fn dir_json(c: &ClientResult) -> F {
    let b = &c.bw_kib_s;
    let i = &c.iops_samples;
    o(vec![
        ("io_bytes", F::I(c.io_bytes as i64)),
        ("io_kbytes", F::I((c.io_bytes / 1024) as i64)),
        ("bw_bytes", F::I(c.bw_bytes.round() as i64)),
        ("bw", F::I((c.bw_bytes / 1024.0).round() as i64)),
        ("iops", F::D(c.iops)),
        ("runtime", F::I(c.runtime_ms.round() as i64)),
        ("total_ios", F::I(c.total_ios as i64)),
        ("short_ios", F::I(0)),
        ("drop_ios", F::I(0)),
        ("slat_ns", stat_json(&c.slat_ns, None)),
        ("clat_ns", stat_json(&c.clat_ns, Some(c))),
        ("lat_ns", stat_json(&c.lat_ns, None)),
        ("bw_min", F::I(b.min.round() as i64)),
        ("bw_max", F::I(b.max.round() as i64)),
        ("bw_agg", F::D(if b.n > 0 { 100.0 } else { 0.0 })),
        ("bw_mean", F::D(b.mean)),
        ("bw_dev", F::D(b.stddev)),
        ("bw_samples", F::I(b.n as i64)),
        ("iops_min", F::I(i.min.round() as i64)),
        ("iops_max", F::I(i.max.round() as i64)),
        ("iops_mean", F::D(i.mean)),
        ("iops_stddev", F::D(i.stddev)),
        ("iops_samples", F::I(i.n as i64)),
    ])
}

/// The `--output-format=json` document: fio's keys, a job per client host
/// (with its `hostname`), and the run's options as `global options`.
pub fn json(r: &Report) -> String {
    let opt = &r.options;
    let s = |v: String| F::S(v);
    let global = o(vec![
        ("ioengine", s("rdma".into())),
        ("rw", s(opt.rw.clone())),
        ("bs", s(opt.bs.to_string())),
        ("iodepth", s(opt.iodepth.to_string())),
        ("numjobs", s(opt.numjobs.to_string())),
        ("runtime", s(format!("{}", opt.runtime_s))),
        ("ramp_time", s(format!("{}", opt.ramp_time_s))),
        ("time_based", s("1".into())),
        ("group_reporting", s("1".into())),
    ]);
    let jobs: Vec<F> = r
        .clients
        .iter()
        .map(|c| {
            let (level, submit, complete) = depth_json(opt.iodepth);
            let (read, write) = if opt.is_read() {
                (dir_json(c), empty_dir())
            } else {
                (empty_dir(), dir_json(c))
            };
            o(vec![
                ("jobname", s(opt.name.clone())),
                ("hostname", s(c.host.clone())),
                ("groupid", F::I(0)),
                ("error", F::I(0)),
                ("eta", F::I(0)),
                (
                    "elapsed",
                    F::I(((opt.runtime_s + opt.ramp_time_s).ceil()) as i64),
                ),
                ("read", read),
                ("write", write),
                ("trim", empty_dir()),
                (
                    "sync",
                    o(vec![
                        ("total_ios", F::I(0)),
                        ("lat_ns", stat_json(&Stat::default(), None)),
                    ]),
                ),
                // The group's jobs' runtimes summed, as fio's group
                // reporting has it (2 jobs of 3 s: 6000, where the
                // direction's runtime is 3001).
                (
                    "job_runtime",
                    F::I((c.runtime_ms * opt.numjobs as f64).round() as i64),
                ),
                ("usr_cpu", F::D(0.0)),
                ("sys_cpu", F::D(0.0)),
                ("ctx", F::I(0)),
                ("majf", F::I(0)),
                ("minf", F::I(0)),
                ("iodepth_level", level),
                ("iodepth_submit", submit),
                ("iodepth_complete", complete),
                (
                    "latency_ns",
                    F::O(
                        c.lat_buckets[..10]
                            .iter()
                            .map(|&(b, f)| (b.to_string(), F::D(f * 100.0)))
                            .collect(),
                    ),
                ),
                (
                    "latency_us",
                    F::O(
                        c.lat_buckets[10..20]
                            .iter()
                            .map(|&(b, f)| ((b / 1000).to_string(), F::D(f * 100.0)))
                            .collect(),
                    ),
                ),
                (
                    "latency_ms",
                    F::O(
                        c.lat_buckets[20..]
                            .iter()
                            .map(|&(b, f)| {
                                let k = if b == 0 {
                                    ">=2000".to_string()
                                } else {
                                    (b / 1_000_000).to_string()
                                };
                                (k, F::D(f * 100.0))
                            })
                            .collect(),
                    ),
                ),
                ("latency_depth", F::I(opt.iodepth as i64)),
                ("latency_target", F::I(0)),
                ("latency_percentile", F::D(100.0)),
                ("latency_window", F::I(0)),
            ])
        })
        .collect();
    let doc = F::O(vec![
        ("fio version".into(), s("fio-3.33".into())),
        ("timestamp".into(), F::I(0)),
        ("timestamp_ms".into(), F::I(0)),
        (
            "time".into(),
            s(format!(
                "simulated by fabriclab{}",
                super::flow_suffix(r.backend)
            )),
        ),
        ("global options".into(), global),
        ("jobs".into(), F::O(vec![])),
    ]);
    // "jobs" is an array; print it by hand after the object's other keys.
    let mut out = String::new();
    let F::O(mut top) = doc else { unreachable!() };
    top.pop();
    out.push_str("{\n");
    for (k, v) in &top {
        let _ = write!(out, "  \"{k}\" : ");
        print(v, 2, &mut out);
        out.push_str(",\n");
    }
    out.push_str("  \"jobs\" : [\n");
    for (i, j) in jobs.iter().enumerate() {
        out.push_str("    ");
        print(j, 4, &mut out);
        out.push_str(if i + 1 < jobs.len() { ",\n" } else { "\n" });
    }
    out.push_str("  ],\n  \"disk_util\" : [\n  ]\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::{lat_unit, num2str, Stat};

    #[test]
    fn latency_units_follow_fios_rule_on_min_max_and_stdev() {
        let st = |min: f64, max: f64, stddev: f64| Stat {
            min,
            max,
            mean: (min + max) / 2.0,
            stddev,
            n: 2,
        };
        // The golden sample: clat min 17 us, max 4,076 us, stdev 71 us.
        assert_eq!(lat_unit(&st(17_000.0, 4_076_000.0, 71_090.0)).0, "usec");
        // slat there: min 1,104 ns is not above 2 us, so nsec.
        assert_eq!(lat_unit(&st(1_104.0, 1_083_800.0, 3_984.0)).0, "nsec");
        // A constant 37.6 us latency: max not above 99,999 ns, stdev 0.
        assert_eq!(lat_unit(&st(37_578.0, 37_578.0, 0.0)).0, "nsec");
        assert_eq!(lat_unit(&st(37_578.0, 200_000.0, 500.0)).0, "nsec");
        assert_eq!(lat_unit(&st(2_001.0, 100_000.0, 1_001.0)).0, "usec");
        assert_eq!(lat_unit(&st(2_000.0, 100_000.0, 1_001.0)).0, "nsec");
        // msec needs all three: min above 2 ms, max above 99.999 ms, stdev above 1 ms.
        assert_eq!(
            lat_unit(&st(2_000_001.0, 100_000_000.0, 1_000_001.0)).0,
            "msec"
        );
        assert_eq!(
            lat_unit(&st(2_000_001.0, 100_000_000.0, 999_999.0)).0,
            "usec"
        );
        assert_eq!(
            lat_unit(&st(19_000_000.0, 21_000_000.0, 400_000.0)).0,
            "usec"
        );
    }

    #[test]
    fn num2str_matches_fio() {
        // From the golden sample: IOPS=166k, BW=649MiB/s (680MB/s),
        // (1947MiB/...), slat max=1083.8k.
        assert_eq!(num2str(166_066.0, 4, 1000.0, false), "166k");
        assert_eq!(num2str(680_320_085.0, 4, 1024.0, true), "649Mi");
        assert_eq!(num2str(680_320_085.0, 4, 1000.0, false), "680M");
        assert_eq!(num2str(2_041_640_576.0, 4, 1024.0, true), "1947Mi");
        assert_eq!(num2str(1_083_770.0, 6, 1000.0, false), "1083.8k");
        assert_eq!(num2str(9845.0, 4, 1000.0, false), "9845");
        assert_eq!(num2str(12_345.0, 4, 1000.0, false), "12.3k");
        assert_eq!(num2str(17.0, 6, 1000.0, false), "17");
    }
}
