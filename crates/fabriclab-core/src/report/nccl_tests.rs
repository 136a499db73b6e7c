//! nccl-tests' text output, as nccl-tests 2.13 prints it (the format of
//! the real sample in the project's format references): the parameter
//! line, the device lines, the two header lines of out-of-place and
//! in-place columns, rows of `%12li  %12li  %8s  %6s  %6i` then per half
//! `  %7s  %6.2f  %6.2f  %5s`, and the footer.
//!
//! Device lines name each rank's server and GPU; process ids and PCI bus
//! ids are not simulated: the pid is 10000 + the rank's process, where a
//! process drives `-g` GPUs (`nGpus`, so with `-g 8` eight ranks share a
//! pid, as in nccl-tests), and the bus id follows the GPU index.

use crate::tools::nccl_tests::Report;
use std::fmt::Write;

/// nccl-tests' time column: `%7.0f` from 10 ms, `%7.1f` from 100 us,
/// else `%7.2f`.
pub fn time_str(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{us:7.0}")
    } else if us >= 100.0 {
        format!("{us:7.1}")
    } else {
        format!("{us:7.2}")
    }
}

/// The report in nccl-tests' text format.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let step = match r.step_factor {
        Some(f) => format!("{f}(factor)"),
        None => format!("{}(bytes)", r.step_bytes),
    };
    let _ = writeln!(
        o,
        "# nThread 1 nGpus {} minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} \
         agg iters: 1 validation: {} graph: 0",
        r.ngpus,
        r.min_bytes,
        r.max_bytes,
        r.warmup_iters,
        r.iters,
        r.check.min(1)
    );
    o.push_str("#\n# Using devices\n");
    for rank in 0..r.nranks {
        let (s, g) = (rank / r.gpus_per_node, rank % r.gpus_per_node);
        let _ = writeln!(
            o,
            "#  Rank {rank:2} Group  0 Pid {:6} on {:>10} device {g:2} [0000:{:02x}:00] {}",
            10000 + rank / r.ngpus.max(1),
            format!("h{s}"),
            0x10 + g * 0x10,
            r.gpu_model
        );
    }
    o.push_str("#\n");
    let _ = writeln!(
        o,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          ",
        "", "", "", "", ""
    );
    let half_h = format!(
        "  {:>7}  {:>6}  {:>6} {:>6}",
        "time", "algbw", "busbw", "#wrong"
    );
    let _ = writeln!(
        o,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{half_h}{half_h}",
        "size", "count", "type", "redop", "root"
    );
    let half_u = format!(
        "  {:>7}  {:>6}  {:>6}  {:>5}",
        "(us)", "(GB/s)", "(GB/s)", ""
    );
    let _ = writeln!(
        o,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{half_u}{half_u}",
        "(B)", "(elements)", "", "", ""
    );
    for row in &r.rows {
        let wrong = row.wrong.map_or("N/A".to_string(), |w| w.to_string());
        let half = format!(
            "  {}  {:6.2}  {:6.2}  {:>5}",
            time_str(row.time_us),
            row.algbw,
            row.busbw,
            wrong
        );
        let _ = writeln!(
            o,
            "{:12}  {:12}  {:>8}  {:>6}  {:6}{half}{half}",
            row.size, row.count, r.datatype, r.redop, r.root
        );
    }
    if r.run.interrupted {
        // Stopped (Ctrl-C): the sizes that completed, without the summary
        // nccl-tests prints only at its end (it read "0 OK" and an average
        // of 0 when nothing had completed).
        return o;
    }
    let bad = r.rows.iter().filter(|x| x.wrong.unwrap_or(0) > 0).count() * 2;
    let _ = writeln!(
        o,
        "# Out of bounds values : {bad} {}",
        if bad == 0 { "OK" } else { "FAILED" }
    );
    let _ = writeln!(o, "# Avg bus bandwidth    : {} ", g_format(r.avg_busbw));
    o
}

/// C's `%g`: six significant digits, trailing zeros removed.
pub fn g_format(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{:.5e}", v);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_and_g_formats_match_nccl_tests() {
        assert_eq!(time_str(135.8), "  135.8");
        assert_eq!(time_str(24361.2), "  24361");
        assert_eq!(time_str(12.345), "  12.35");
        assert_eq!(g_format(70.742), "70.742");
        assert_eq!(g_format(338.8214), "338.821");
        assert_eq!(g_format(0.5), "0.5");
    }
}
