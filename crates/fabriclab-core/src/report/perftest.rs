//! perftest's text and `--out_json` output.
//!
//! Column layouts follow perftest's own format strings (RESULT_FMT,
//! REPORT_FMT, RESULT_FMT_LAT, REPORT_FMT_LAT); the banner lists the
//! simulated device's settings in perftest's layout.

use crate::rng::splitmix64;
use crate::traffic::perftest::{Report, Test, MAX_OUTSTANDING_READS};
use std::fmt::Write;

const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

/// perftest's default inline size: 220 B for WRITE and 236 B for SEND
/// latency tests (`DEF_INLINE_WRITE`, `DEF_INLINE_SEND_RC_UC`), none for
/// bandwidth tests. Shown as the tool's setting; the NIC model has no
/// separate inline path (its latency figures are calibrated on runs that
/// used these defaults).
fn max_inline(test: Test) -> u32 {
    match test {
        Test::WriteLat => 220,
        Test::SendLat => 236,
        _ => 0,
    }
}

/// RoCE (not InfiniBand, not iWARP): perftest shows a GID index and GIDs.
fn roce(r: &Report) -> bool {
    !r.infiniband && !r.iwarp
}

/// perftest's verbs transport: IB for InfiniBand and RoCE, IW for iWARP.
fn transport(r: &Report) -> &'static str {
    if r.iwarp {
        "IW"
    } else {
        "IB"
    }
}

/// `rdma_cm QPs` and `Data ex. method`: iWARP connects its QPs through the
/// RDMA connection manager (iw_cm), the others exchange over Ethernet.
fn exchange(r: &Report) -> (&'static str, &'static str) {
    if r.iwarp {
        ("ON", "rdma_cm")
    } else {
        ("OFF", "Ethernet")
    }
}

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
    let _ = writeln!(
        out,
        " Number of qps   : {}\t\tTransport type : {}",
        r.options.qps,
        transport(r)
    );
    let _ = writeln!(out, " Connection type : RC\t\tUsing SRQ      : OFF");
    // perftest 6.x, on every test (older versions printed these two
    // lines with one column on latency tests).
    let _ = writeln!(out, " PCIe relax order: ON\t\tLock-free      : OFF");
    let _ = writeln!(
        out,
        " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF"
    );
    let _ = writeln!(out, " TX depth        : {}", r.tx_depth);
    if test.is_bw() {
        let _ = writeln!(out, " CQ Moderation   : {}", r.cq_mod);
        let _ = writeln!(out, " CQE Poll Batch  : 16");
    }
    let _ = writeln!(out, " Mtu             : {}[B]", ibv_mtu(r.mtu));
    let link = if r.infiniband { "IB" } else { "Ethernet" };
    let _ = writeln!(out, " Link type       : {link}");
    if roce(r) {
        // The RoCEv2 GID of a ConnectX port's IPv4 address.
        let _ = writeln!(out, " GID index       : 3");
    }
    if test.is_read() {
        let _ = writeln!(out, " Outstand reads  : {MAX_OUTSTANDING_READS}");
    } else {
        let _ = writeln!(out, " Max inline data : {}[B]", max_inline(test));
    }
    let (rdma_cm, method) = exchange(r);
    let _ = writeln!(out, " rdma_cm QPs\t : {rdma_cm}");
    let _ = writeln!(out, " Data ex. method : {method}");
    let _ = writeln!(
        out,
        " Simulated hosts : client {} -> server {}",
        r.options.client, r.options.server
    );
    let _ = writeln!(out, "{RESULT_LINE}");
    addresses(r, out);
    let _ = writeln!(out, "{RESULT_LINE}");
}

/// C's `%#0{width}x`: `0x` and zero padding to `width` characters, and
/// for zero no `0x` at all (perftest's "LID 0000" on RoCE).
fn c_hex(v: u64, width: usize) -> String {
    if v == 0 {
        return "0".repeat(width);
    }
    format!("0x{v:0>pad$x}", pad = width.saturating_sub(2))
}

/// perftest's exchange of QP identifiers: one `local address` line per
/// QP, then one `remote address` line per QP, each followed by the GID
/// on RoCE. The identifiers are the simulation's own, deterministic and
/// of no consequence: the LID is the host's index + 1 on InfiniBand
/// (0 elsewhere, as on Ethernet), the QPN, PSN, RKey and virtual address
/// are derived from the host and QP numbers, and the GID maps the address
/// 10.x.y.z built from the host's index + 1.
fn addresses(r: &Report, out: &mut String) {
    let test = r.options.test;
    let read = test.is_read();
    let rdma = !matches!(test, Test::SendBw | Test::SendLat);
    let (client, server) = r.hosts;
    for (side, node) in [("local", client), ("remote", server)] {
        let node = u64::from(node);
        for i in 0..u64::from(r.options.qps) {
            let lid = if r.infiniband { node + 1 } else { 0 };
            let mut line = format!(
                " {side} address: LID {} QPN {} PSN {}",
                c_hex(lid, 4),
                c_hex((0x0100 + node * 0x40 + i) & 0xff_ffff, 6),
                c_hex(splitmix64(node << 32 | i) & 0xff_ffff, 6)
            );
            if read {
                let _ = write!(line, " OUT {}", c_hex(u64::from(MAX_OUTSTANDING_READS), 4));
            }
            if rdma {
                let _ = write!(
                    line,
                    " RKey {} VAddr {}",
                    c_hex(0x1f_0000 + (node & 0xff) * 0x100, 8),
                    c_hex(0x7f00_0000_0000 + ((node & 0xfff) << 28) + (i << 22), 16)
                );
            }
            let _ = writeln!(out, "{line}");
            if roce(r) {
                let ip = node + 1;
                let _ = writeln!(
                    out,
                    " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:{:02}:{:02}:{:02}",
                    (ip >> 16) & 0xff,
                    (ip >> 8) & 0xff,
                    ip & 0xff
                );
            }
        }
    }
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
    } else if r.options.duration_s.is_some() {
        // perftest's duration mode: the average over the measured middle
        // and transactions per second (a round trip each; perftest halves
        // the round trip for WRITE and SEND, not for READ).
        let _ = writeln!(
            out,
            " #bytes        #iterations       t_avg[usec]    tps average"
        );
        let rtt_factor = if test == Test::ReadLat { 1.0 } else { 2.0 };
        for row in &r.lat {
            let tps = if row.t_avg_us > 0.0 {
                1e6 / (row.t_avg_us * rtt_factor)
            } else {
                0.0
            };
            let _ = writeln!(
                out,
                " {:<7}       {}            {:<7.2}        {:<7.2}",
                row.bytes, row.iters, row.t_avg_us, tps
            );
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

/// The MTU as perftest prints it: the verbs `ibv_mtu` of the port (256 to
/// 4096 B), the largest not above the link's (an iWARP port on a 9000 B
/// Ethernet MTU reports 4096, a 1500 B one 1024).
fn ibv_mtu(bytes: u32) -> u32 {
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| m <= bytes)
        .unwrap_or(256)
}

/// The `--out_json` document (perftest keeps the last size only), in
/// perftest's own layout: one key per line, no indentation, its key order,
/// numbers with its decimals (`"BW_average": 393.80`).
pub fn json(r: &Report) -> String {
    let test = r.options.test;
    let kind = if test.is_bw() { "BW" } else { "Latency" };
    let bidir = if r.options.bidirectional {
        "Bidirectional_"
    } else {
        ""
    };
    let s = |v: &str| format!("\"{v}\"");
    let mut info: Vec<(&str, String)> = vec![
        ("test", s(&format!("{}_{bidir}{kind}_Test", test.verb()))),
        ("Dual_port", s("OFF")),
        ("Device", s("fabriclab0")),
        ("Number_of_qps", r.options.qps.to_string()),
        ("Transport_type", s(transport(r))),
        ("Connection_type", s("RC")),
        ("Using_SRQ", s("OFF")),
        ("PCIe_relax_order", s("ON")),
        ("ibv_wr_API", s("ON")),
        ("TX_depth", r.tx_depth.to_string()),
    ];
    if test.is_bw() {
        info.push(("CQ_Moderation", r.cq_mod.to_string()));
    }
    info.push(("Mtu", ibv_mtu(r.mtu).to_string()));
    info.push(("Link_type", s(if r.infiniband { "IB" } else { "Ethernet" })));
    if test.is_read() {
        info.push(("Outstand_reads", MAX_OUTSTANDING_READS.to_string()));
    } else {
        info.push(("Max_inline_data", max_inline(test).to_string()));
    }
    let (rdma_cm, method) = exchange(r);
    info.push(("rdma_cm_QPs", s(rdma_cm)));
    info.push(("Use_ROCm_memory", s("OFF")));
    info.push(("Use_MUSA_memory", s("OFF")));
    info.push(("Data_ex_method", s(method)));
    if r.backend == crate::config::Backend::Flow {
        // Not perftest's: a saved file says it is a flow-level estimate
        // (the JSON's readers skip keys they do not know, as perftest
        // itself adds keys from version to version).
        info.push(("Simulator", s("fabriclab flow backend")));
    }
    // A run stopped before its first size completed has no results (an
    // empty object, where real perftest, killed, writes no file).
    let results: Vec<(&str, String)> = if let (true, Some(row)) = (test.is_bw(), r.bw.last()) {
        vec![
            ("MsgSize", row.bytes.to_string()),
            ("n_iterations", row.iters.to_string()),
            ("BW_peak", format!("{:.2}", row.bw_peak)),
            ("BW_average", format!("{:.2}", row.bw_avg)),
            ("MsgRate", format!("{:.6}", row.msg_rate_mpps)),
        ]
    } else if let (false, Some(row)) = (test.is_bw(), r.lat.last()) {
        vec![
            ("MsgSize", row.bytes.to_string()),
            ("n_iterations", row.iters.to_string()),
            ("t_min", format!("{:.2}", row.t_min_us)),
            ("t_max", format!("{:.2}", row.t_max_us)),
            ("t_typical", format!("{:.2}", row.t_typical_us)),
            ("t_avg", format!("{:.2}", row.t_avg_us)),
            ("t_stdev", format!("{:.2}", row.t_stdev_us)),
            ("percentile_99", format!("{:.2}", row.p99_us)),
            ("percentile_99.9", format!("{:.2}", row.p999_us)),
        ]
    } else {
        Vec::new()
    };
    let block = |pairs: &[(&str, String)]| {
        pairs
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v}"))
            .collect::<Vec<_>>()
            .join(",\n")
    };
    let results = if results.is_empty() {
        "\"results\": {}".to_string()
    } else {
        format!("\"results\": {{\n{}\n}}", block(&results))
    };
    format!(
        "{{\n\"test_info\": {{\n{}\n}},\n{results}\n}}\n",
        block(&info)
    )
}
