//! Cbench rotate and rotate_latency output, laid out as their `printf`s
//! print it: a `process N on HOST` line per rank (in rank order here; a
//! real run interleaves them), a `rotate R ** v , v , ** min=...` line per
//! rotation with `%.2lf` figures, then the summary lines.

use crate::tools::cbench::Report;
use std::fmt::Write;

/// The report in Cbench's text format.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    for (rank, host) in r.rank_hosts.iter().enumerate() {
        let _ = writeln!(o, "process {rank} on {host}");
    }
    let bw = r.test == "rotate";
    for rot in &r.rotations {
        let _ = write!(o, "rotate {} ** ", rot.rotation);
        for p in r.pairs.iter().filter(|p| p.rotation == rot.rotation) {
            let _ = write!(o, "{:.2} , ", p.value);
        }
        if bw {
            let _ = writeln!(
                o,
                "** min={:.2} max={:.2} ave={:.2} aggregate={:.2} aggregate_floor={:.2}",
                rot.min, rot.max, rot.ave, rot.aggregate, rot.aggregate_floor
            );
        } else {
            let _ = writeln!(
                o,
                "** min={:.2} max={:.2} ave={:.2}",
                rot.min, rot.max, rot.ave
            );
        }
    }
    o.push('\n');
    if bw {
        let _ = writeln!(
            o,
            "Min Unidirectional Link Bandwidth: {:.2} MB/s",
            r.overall_min
        );
        let _ = writeln!(
            o,
            "Max Unidirectional Link Bandwidth: {:.2} MB/s",
            r.overall_max
        );
        let _ = writeln!(
            o,
            "Average Link Unidirectional Bandwidth: {:.2} MB/s",
            r.average_link
        );
        let _ = writeln!(
            o,
            "Average Aggregate Unidirectional Bandwidth: {:.2} MB/s",
            r.average_aggregate
        );
    } else {
        let _ = writeln!(o, "Min Link Latency: {:.2} us", r.overall_min);
        let _ = writeln!(o, "Max Link Latency: {:.2} us", r.overall_max);
        let _ = writeln!(o, "Average Link Latency: {:.2} us", r.average_link);
    }
    let _ = writeln!(
        o,
        "Using {} byte messages, {} tests of {} iterations",
        r.bytes, r.tests, r.iterations
    );
    o
}
