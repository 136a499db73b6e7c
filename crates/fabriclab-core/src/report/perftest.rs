//! perftest's text and `--out_json` output.
//!
//! Column layouts follow perftest's own format strings (RESULT_FMT,
//! REPORT_FMT, RESULT_FMT_LAT, REPORT_FMT_LAT); the banner lists the
//! simulated device's settings in perftest's layout.

use crate::traffic::perftest::{Report, Test};
use std::fmt::Write;

const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

fn banner(r: &Report, out: &mut String) {
    let test = r.options.test;
    let kind = if test.is_bw() { "BW" } else { "Latency" };
    let bidir = if r.options.bidirectional {
        "Bidirectional "
    } else {
        ""
    };
    let title = format!("{} {bidir}{kind} Test", test.verb());
    let _ = writeln!(out, "{RESULT_LINE}");
    let _ = writeln!(out, "{:>width$}", title, width = 20 + title.len());
    let _ = writeln!(out, " Dual-port       : OFF\t\tDevice         : fabriclab0");
    // perftest names the verbs transport: IB for InfiniBand and RoCE, IW
    // for iWARP.
    let transport = if r.iwarp { "IW" } else { "IB" };
    let _ = writeln!(
        out,
        " Number of qps   : {}\t\tTransport type : {transport}",
        r.options.qps
    );
    let _ = writeln!(out, " Connection type : RC\t\tUsing SRQ      : OFF");
    let _ = writeln!(out, " TX depth        : {}", r.tx_depth);
    if test.is_bw() {
        let cq = r.options.cq_mod.unwrap_or(100).min(r.tx_depth);
        let _ = writeln!(out, " CQ Moderation   : {cq}");
    }
    let _ = writeln!(out, " Mtu             : {}[B]", r.mtu);
    let link = if r.infiniband { "IB" } else { "Ethernet" };
    let _ = writeln!(out, " Link type       : {link}");
    if matches!(test, Test::ReadBw | Test::ReadLat) {
        let _ = writeln!(out, " Outstand reads  : {}", r.tx_depth);
    } else {
        let _ = writeln!(out, " Max inline data : 0[B]");
    }
    let _ = writeln!(out, " rdma_cm QPs\t : OFF");
    let _ = writeln!(out, " Data ex. method : Ethernet");
    let _ = writeln!(
        out,
        " Simulated hosts : client {} -> server {}",
        r.options.client, r.options.server
    );
    let _ = writeln!(out, "{RESULT_LINE}");
}

/// The whole text output of a run, as perftest prints it.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    banner(r, &mut out);
    let test = r.options.test;
    if test.is_bw() {
        let unit = if r.options.report_gbits {
            "Gb/sec"
        } else {
            "MiB/sec"
        };
        let _ = writeln!(
            out,
            " #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"
        );
        for row in &r.bw {
            if r.options.report_gbits && row.bw_avg < 0.1 {
                let _ = writeln!(
                    out,
                    " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}",
                    row.bytes, row.iters, row.bw_peak, row.bw_avg, row.msg_rate_mpps
                );
            } else {
                let _ = writeln!(
                    out,
                    " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t     {:<7.6}",
                    row.bytes, row.iters, row.bw_peak, row.bw_avg, row.msg_rate_mpps
                );
            }
        }
    } else {
        let _ = writeln!(
            out,
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    \
             t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
        );
        for row in &r.lat {
            let _ = writeln!(
                out,
                " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
                row.bytes,
                row.iters,
                row.t_min_us,
                row.t_max_us,
                row.t_typical_us,
                row.t_avg_us,
                row.t_stdev_us,
                row.p99_us,
                row.p999_us
            );
        }
    }
    let _ = writeln!(out, "{RESULT_LINE}");
    out
}

/// The `--out_json` document (perftest keeps the last size only).
pub fn json(r: &Report) -> String {
    let test = r.options.test;
    let kind = if test.is_bw() { "BW" } else { "Latency" };
    let bidir = if r.options.bidirectional {
        "Bidirectional_"
    } else {
        ""
    };
    let mut info = serde_json::Map::new();
    let mut put = |k: &str, v: serde_json::Value| {
        info.insert(k.into(), v);
    };
    put("test", format!("{}_{bidir}{kind}_Test", test.verb()).into());
    put("Dual_port", "OFF".into());
    put("Device", "fabriclab0".into());
    put("Number_of_qps", r.options.qps.into());
    put("Transport_type", "IB".into());
    put("Connection_type", "RC".into());
    put("Using_SRQ", "OFF".into());
    put("TX_depth", r.tx_depth.into());
    if test.is_bw() {
        put(
            "CQ_Moderation",
            r.options.cq_mod.unwrap_or(100).min(r.tx_depth).into(),
        );
    }
    put("Mtu", r.mtu.into());
    put(
        "Link_type",
        if r.infiniband { "IB" } else { "Ethernet" }.into(),
    );
    put("Max_inline_data", 0.into());
    put("rdma_cm_QPs", "OFF".into());
    put("Data_ex_method", "Ethernet".into());
    let round = |x: f64, d: i32| (x * 10f64.powi(d)).round() / 10f64.powi(d);
    // A run stopped before its first size completed has no results (an
    // empty object, where real perftest, killed, writes no file).
    let results = if let (true, Some(row)) = (test.is_bw(), r.bw.last()) {
        serde_json::json!({
            "MsgSize": row.bytes,
            "n_iterations": row.iters,
            "BW_peak": round(row.bw_peak, 2),
            "BW_average": round(row.bw_avg, 2),
            "MsgRate": round(row.msg_rate_mpps, 6),
        })
    } else if let (false, Some(row)) = (test.is_bw(), r.lat.last()) {
        serde_json::json!({
            "MsgSize": row.bytes,
            "n_iterations": row.iters,
            "t_min": round(row.t_min_us, 2),
            "t_max": round(row.t_max_us, 2),
            "t_typical": round(row.t_typical_us, 2),
            "t_avg": round(row.t_avg_us, 2),
            "t_stdev": round(row.t_stdev_us, 2),
            "percentile_99": round(row.p99_us, 2),
            "percentile_99.9": round(row.p999_us, 2),
        })
    } else {
        serde_json::json!({})
    };
    let doc = serde_json::json!({ "test_info": info, "results": results });
    serde_json::to_string_pretty(&doc).expect("json")
}
