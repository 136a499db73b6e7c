//! HPL 2.3's output (`HPL.out`): the banner, the parameter list
//! (`HPL_pdinfo`, at most 8 values a line), one T/V block per test
//! (`HPL_pdtest`) and the summary (`HPL_pddriver`).
//!
//! Nothing is solved, so the text is that of a run whose threshold is 0 or
//! less: no residual description, no residual lines, and the summary counts
//! "tests completed without checking". Start and end times are the
//! simulated clock from the Unix epoch, printed as `ctime` does.

use crate::tools::hpl::{Report, Settings};
use std::fmt::Write;

const EQ: &str = "================================================================================";
const DASH: &str =
    "--------------------------------------------------------------------------------";

/// `x` as C's `%.{prec}e` ("3.0302e+01").
pub fn c_exp(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$e}");
    let (m, e) = s.split_once('e').expect("exponent");
    let e: i32 = e.parse().expect("integer exponent");
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// Seconds since the Unix epoch as `ctime` prints them, without the
/// newline ("Thu Jan  1 00:00:00 1970").
pub fn ctime(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WD[days.rem_euclid(7) as usize],
        MO[month as usize - 1],
        day,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        year
    )
}

/// One parameter line: `label` then the values, 8 a line, continuation
/// lines indented by 8 spaces.
fn list(out: &mut String, label: &str, vals: &[String]) {
    out.push_str(label);
    for (i, v) in vals.iter().enumerate() {
        if i > 0 && i % 8 == 0 {
            out.push_str("\n        ");
        }
        let _ = write!(out, "{v:>8} ");
    }
    out.push('\n');
}

fn nums<T: std::fmt::Display>(v: &[T]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn facts(v: &[u32]) -> Vec<String> {
    v.iter()
        .map(|&f| ["Left", "Crout", "Right"][f as usize].to_string())
        .collect()
}

fn header(out: &mut String, s: &Settings) {
    let _ = writeln!(out, "{EQ}");
    out.push_str(
        "HPLinpack 2.3  --  High-Performance Linpack benchmark  --   December 2, 2018\n\
         Written by A. Petitet and R. Clint Whaley,  Innovative Computing Laboratory, UTK\n\
         Modified by Piotr Luszczek, Innovative Computing Laboratory, UTK\n\
         Modified by Julien Langou, University of Colorado Denver\n",
    );
    let _ = writeln!(out, "{EQ}");
    out.push_str(
        "\nAn explanation of the input/output parameters follows:\n\
         T/V    : Wall time / encoded variant.\n\
         N      : The order of the coefficient matrix A.\n\
         NB     : The partitioning blocking factor.\n\
         P      : The number of process rows.\n\
         Q      : The number of process columns.\n\
         Time   : Time in seconds to solve the linear system.\n\
         Gflops : Rate of execution for solving the linear system.\n\
         \nThe following parameter values will be used:\n\n",
    );
    list(out, "N      :", &nums(&s.n));
    list(out, "NB     :", &nums(&s.nb));
    let _ = writeln!(
        out,
        "PMAP   : {}-major process mapping",
        if s.row_major { "Row" } else { "Column" }
    );
    let ps: Vec<u32> = s.grids.iter().map(|g| g[0]).collect();
    let qs: Vec<u32> = s.grids.iter().map(|g| g[1]).collect();
    list(out, "P      :", &nums(&ps));
    list(out, "Q      :", &nums(&qs));
    list(out, "PFACT  :", &facts(&s.pfact));
    list(out, "NBMIN  :", &nums(&s.nbmin));
    list(out, "NDIV   :", &nums(&s.ndiv));
    list(out, "RFACT  :", &facts(&s.rfact));
    let bc: Vec<String> = s
        .bcast
        .iter()
        .map(|&b| {
            crate::tools::hpl::sched::Bcast::ALL[b as usize]
                .name()
                .to_string()
        })
        .collect();
    list(out, "BCAST  :", &bc);
    list(out, "DEPTH  :", &nums(&s.depth));
    let swap = match s.swap {
        0 => "Binary-exchange".to_string(),
        1 => "Spread-roll (long)".to_string(),
        _ => format!("Mix (threshold = {})", s.swap_threshold),
    };
    let form = |notrans: bool| {
        if notrans {
            "no-transposed form"
        } else {
            "transposed form"
        }
    };
    let _ = writeln!(out, "SWAP   : {swap}");
    let _ = writeln!(out, "L1     : {}", form(s.l1_notrans));
    let _ = writeln!(out, "U      : {}", form(s.u_notrans));
    let _ = writeln!(out, "EQUIL  : {}", if s.equil { "yes" } else { "no" });
    let _ = writeln!(out, "ALIGN  : {} double precision words\n", s.align);
}

/// HPL's text for `r`.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, &r.settings);
    for t in &r.tests {
        let _ = writeln!(out, "{EQ}");
        let _ = writeln!(
            out,
            "T/V                N    NB     P     Q               Time                 Gflops"
        );
        let _ = writeln!(out, "{DASH}");
        let _ = writeln!(
            out,
            "{}{:>12} {:>5} {:>5} {:>5} {:>18.2}     {:>18}",
            t.variant,
            t.n,
            t.nb,
            t.p,
            t.q,
            t.time_s,
            c_exp(t.gflops, 4)
        );
        let start = t.start_s.floor() as u64;
        let end = (t.start_s + t.time_s).floor() as u64;
        let _ = writeln!(out, "HPL_pdgesv() start time {}\n", ctime(start));
        let _ = writeln!(out, "HPL_pdgesv() end time   {}\n", ctime(end));
    }
    let _ = writeln!(out, "{EQ}");
    if r.interrupted {
        return out;
    }
    let _ = writeln!(
        out,
        "\nFinished {:6} tests with the following results:",
        r.tests.len()
    );
    let _ = writeln!(
        out,
        "         {:6} tests completed without checking,",
        r.tests.len()
    );
    let _ = writeln!(
        out,
        "         {:6} tests skipped because of illegal input values.",
        0
    );
    let _ = writeln!(out, "{DASH}");
    let _ = writeln!(out, "\nEnd of Tests.");
    let _ = writeln!(out, "{EQ}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_exponent_and_ctime_match_c() {
        assert_eq!(c_exp(30.302, 4), "3.0302e+01");
        assert_eq!(c_exp(1.34976e5, 4), "1.3498e+05");
        assert_eq!(c_exp(0.00123, 3), "1.230e-03");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        // The golden sample's start time, Sat Nov 21 04:25:10 2026.
        assert_eq!(ctime(1_795_235_110), "Sat Nov 21 04:25:10 2026");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
