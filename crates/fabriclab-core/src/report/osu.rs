//! OSU Micro-Benchmarks' text output, laid out as OSU 7.4 prints it: a
//! title line, the datatype line, a header of `%-10s` then 18-wide
//! right-aligned columns (12 for Iterations), rows of `%-10d%18.2f...`;
//! with `-z`, osu_latency's `P%d Tail Lat(us)` columns.

use crate::tools::osu::Report;
use std::fmt::Write;

const VERSION: &str = "v7.4";

fn title(test: &str) -> &'static str {
    match test {
        "osu_latency" => "Latency Test",
        "osu_bw" => "Bandwidth Test",
        "osu_bibw" => "Bi-Directional Bandwidth Test",
        "osu_mbw_mr" => "Multiple Bandwidth / Message Rate Test",
        "osu_allreduce" => "Allreduce Latency Test",
        "osu_alltoall" => "All-to-All Personalized Exchange Latency Test",
        "osu_allgather" => "Allgather Latency Test",
        "osu_bcast" => "Broadcast Latency Test",
        "osu_reduce" => "Reduce Latency Test",
        "osu_gather" => "Gather Latency Test",
        "osu_scatter" => "Scatter Latency Test",
        "osu_barrier" => "Barrier Latency Test",
        _ => "Test",
    }
}

/// The report in OSU's text format.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let t = r.test.as_str();
    if t != "osu_mbw_mr" {
        o.push('\n');
    }
    let _ = writeln!(o, "# OSU MPI {} {VERSION}", title(t));
    if t == "osu_mbw_mr" {
        let _ = writeln!(
            o,
            "# [ pairs: {} ] [ window size: {} ]",
            r.np / 2,
            crate::tools::osu::WINDOW
        );
    }
    if t == "osu_barrier" {
        if r.full {
            let _ = writeln!(
                o,
                "# Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations"
            );
        } else {
            let _ = writeln!(o, "# Avg Latency(us)");
        }
        for row in &r.rows {
            let _ = write!(o, "{:>17.2}", row.avg_us.unwrap_or(0.0));
            if r.full {
                let _ = write!(
                    o,
                    "{:>18.2}{:>18.2}{:>12}",
                    row.min_us.unwrap_or(0.0),
                    row.max_us.unwrap_or(0.0),
                    row.iterations
                );
            }
            o.push('\n');
        }
        return o;
    }
    let _ = writeln!(o, "# Datatype: MPI_CHAR.");
    let _ = write!(o, "{:<10}", "# Size");
    match t {
        "osu_latency" => {
            let _ = write!(o, "{:>18}", "Avg Latency(us)");
            // -z: OSU's "P50 Tail Lat(us)" columns.
            if let Some(first) = r.rows.first() {
                // OSU pads "P%d Tail Lat(us)" as if p had two digits
                // (P100 overflows the column by one, as in OSU).
                for &(p, _) in &first.tail_us {
                    let pad = 18 - "Px Tail Lat(us)".len() - usize::from(p > 9);
                    let _ = write!(o, "{:pad$}P{p} Tail Lat(us)", "");
                }
            }
        }
        "osu_bw" | "osu_bibw" => {
            let _ = write!(o, "{:>18}", "Bandwidth (MB/s)");
        }
        "osu_mbw_mr" => {
            let _ = write!(o, "{:>18}{:>18}", "MB/s", "Messages/s");
        }
        _ => {
            let _ = write!(o, "{:>18}", "Avg Latency(us)");
            if r.full {
                let _ = write!(
                    o,
                    "{:>18}{:>18}{:>12}",
                    "Min Latency(us)", "Max Latency(us)", "Iterations"
                );
            }
        }
    }
    o.push('\n');
    for row in &r.rows {
        let _ = write!(o, "{:<10}", row.bytes);
        match t {
            "osu_bw" | "osu_bibw" => {
                let _ = write!(o, "{:>18.2}", row.mb_per_s.unwrap_or(0.0));
            }
            "osu_mbw_mr" => {
                let _ = write!(
                    o,
                    "{:>18.2}{:>18.2}",
                    row.mb_per_s.unwrap_or(0.0),
                    row.msgs_per_s.unwrap_or(0.0)
                );
            }
            _ => {
                let _ = write!(o, "{:>18.2}", row.avg_us.unwrap_or(0.0));
                for &(_, v) in &row.tail_us {
                    let _ = write!(o, "{v:>18.2}");
                }
                if r.full && t != "osu_latency" {
                    let _ = write!(
                        o,
                        "{:>18.2}{:>18.2}{:>12}",
                        row.min_us.unwrap_or(0.0),
                        row.max_us.unwrap_or(0.0),
                        row.iterations
                    );
                }
            }
        }
        o.push('\n');
    }
    o
}
