//! IMB-MPI1's text output, laid out exactly as IMB 2021 prints it: the
//! header block, one section per (benchmark, process count) with a
//! separator of 13 characters per column, right-aligned 13-wide columns
//! (`%13d` for counts, `%13.2f` for times and rates), the "additional
//! processes waiting in MPI_Barrier" line, and the closing line.
//!
//! The host facts IMB prints (date, machine, kernel) describe the
//! simulation instead, so that the same run prints the same text.

use crate::config::Backend;
use crate::tools::imb::{Report, Section};
use std::fmt::Write;

fn columns(bench: &str) -> &'static [&'static str] {
    match bench {
        "PingPong" | "PingPing" => &["#bytes", "#repetitions", "t[usec]", "Mbytes/sec"],
        "Sendrecv" | "Exchange" => &[
            "#bytes",
            "#repetitions",
            "t_min[usec]",
            "t_max[usec]",
            "t_avg[usec]",
            "Mbytes/sec",
        ],
        "Barrier" => &["#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]"],
        _ => &[
            "#bytes",
            "#repetitions",
            "t_min[usec]",
            "t_max[usec]",
            "t_avg[usec]",
        ],
    }
}

fn section(out: &mut String, s: &Section) {
    let cols = columns(&s.bench);
    let sep = format!("#{}", "-".repeat(13 * cols.len() - 1));
    let _ = writeln!(out, "{sep}");
    let _ = writeln!(out, "# Benchmarking {} ", s.bench);
    let _ = writeln!(out, "# #processes = {} ", s.np);
    if s.waiting > 0 {
        let _ = writeln!(
            out,
            "# ( {} additional processes waiting in MPI_Barrier)",
            s.waiting
        );
    }
    let _ = writeln!(out, "{sep}");
    for c in cols {
        let _ = write!(out, "{c:>13}");
    }
    out.push('\n');
    for r in &s.rows {
        match s.bench.as_str() {
            "PingPong" | "PingPing" => {
                let _ = writeln!(
                    out,
                    "{:>13}{:>13}{:>13.2}{:>13.2}",
                    r.bytes,
                    r.reps,
                    r.t_max_us,
                    r.mbytes_per_sec.unwrap_or(0.0)
                );
            }
            "Sendrecv" | "Exchange" => {
                let _ = writeln!(
                    out,
                    "{:>13}{:>13}{:>13.2}{:>13.2}{:>13.2}{:>13.2}",
                    r.bytes,
                    r.reps,
                    r.t_min_us,
                    r.t_max_us,
                    r.t_avg_us,
                    r.mbytes_per_sec.unwrap_or(0.0)
                );
            }
            "Barrier" => {
                let _ = writeln!(
                    out,
                    "{:>13}{:>13.2}{:>13.2}{:>13.2}",
                    r.reps, r.t_min_us, r.t_max_us, r.t_avg_us
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "{:>13}{:>13}{:>13.2}{:>13.2}{:>13.2}",
                    r.bytes, r.reps, r.t_min_us, r.t_max_us, r.t_avg_us
                );
            }
        }
    }
    out.push('\n');
}

/// The report in IMB-MPI1's text format; `fabric` names the fabric in the
/// header.
pub fn text(r: &Report, fabric: &str, backend: Backend) -> String {
    let mut o = String::new();
    let bar = "#----------------------------------------------------------------";
    let _ = writeln!(o, "{bar}");
    let _ = writeln!(o, "#    Intel(R) MPI Benchmarks 2021.11, MPI-1 part");
    let _ = writeln!(o, "{bar}");
    let _ = writeln!(o, "# Date                  : simulated by fabriclab");
    let _ = writeln!(o, "# Machine               : fabriclab");
    let _ = writeln!(o, "# System                : {fabric}");
    let _ = writeln!(o, "# Release               : {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(
        o,
        "# Version               : {}-level simulation",
        backend.name()
    );
    let _ = writeln!(o, "# MPI Version           : 3.1");
    let _ = writeln!(o, "# MPI Thread Environment: \n\n");
    let _ = writeln!(o, "# Calling sequence was: \n");
    let _ = writeln!(o, "# {} \n", r.calling_sequence);
    let _ = writeln!(o, "# Minimum message length in bytes:   {}", r.min_len);
    let _ = writeln!(o, "# Maximum message length in bytes:   {}", r.max_len);
    let _ = writeln!(o, "#");
    let _ = writeln!(o, "# MPI_Datatype                   :   MPI_BYTE ");
    let _ = writeln!(o, "# MPI_Datatype for reductions    :   MPI_FLOAT ");
    let _ = writeln!(o, "# MPI_Op                         :   MPI_SUM  ");
    let _ = writeln!(o, "# \n# \n");
    let _ = writeln!(o, "# List of Benchmarks to run:\n");
    for b in &r.benchmarks {
        let _ = writeln!(o, "# {b}");
    }
    o.push('\n');
    // A stopped run (Ctrl-C) ends after its last completed measurement,
    // as a killed IMB's output does.
    let stopped = r.run.interrupted;
    for s in r.sections.iter().filter(|s| !stopped || !s.rows.is_empty()) {
        section(&mut o, s);
    }
    if !stopped {
        let _ = writeln!(o, "\n# All processes entering MPI_Finalize\n");
    }
    o
}
