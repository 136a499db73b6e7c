//! iperf3 on the simulated fabric: paced and unlimited runs, the interval
//! and summary arithmetic, the JSON document, background mode beside
//! another workload, option errors, determinism.

mod common;

use fabriclab_core::config::preset;
use fabriclab_core::iperf::{self, Iperf, Options};
use fabriclab_core::net::Net;
use fabriclab_core::report;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::units::Time;
use fabriclab_core::wire::tcp_goodput_gbps;
use fabriclab_core::Error;

fn opts(client: &str, server: &str) -> Options {
    Options {
        client: client.into(),
        server: server.into(),
        ..Default::default()
    }
}

fn paced() -> Options {
    Options {
        parallel: 2,
        bitrate_bps: 20e9,
        time_s: 0.01,
        interval_s: 0.002,
        ..opts("h1", "h0")
    }
}

#[test]
fn two_paced_streams_of_20g_give_five_intervals_at_40g() {
    let fabric = preset("heps").unwrap();
    let r = iperf::run(&fabric, &paced(), 1).unwrap();
    print!("{}", report::iperf::text(&r));
    let res = &r.results;
    assert_eq!(res.intervals.len(), 5);
    for (k, iv) in res.intervals.iter().enumerate() {
        assert_eq!(iv.streams.len(), 2);
        assert!((iv.sum.start - 0.002 * k as f64).abs() < 1e-12);
        assert!((iv.sum.seconds - 0.002).abs() < 1e-12);
        let gbps = iv.sum.bits_per_second / 1e9;
        // Whole 128 KiB blocks at 20 Gb/s per stream: within one block per
        // stream per interval of 40 Gb/s.
        assert!((gbps - 40.0).abs() < 1.1, "interval {k}: {gbps}");
        assert_eq!(
            iv.sum.bytes,
            iv.streams.iter().map(|s| s.bytes).sum::<u64>()
        );
    }
    let sent = res.sum_sent.bits_per_second / 1e9;
    let got = res.sum_received.bits_per_second / 1e9;
    assert!((sent - 40.0).abs() < 0.3, "{sent}");
    assert!((got - 40.0).abs() < 0.5, "{got}");
    assert!(res.complete);
    assert_eq!(r.outcome, Outcome::Finished);
    assert_eq!(res.sum_sent.retransmits, Some(0));
}

#[test]
fn an_unlimited_stream_fills_the_link_at_the_tcp_goodput() {
    let fabric = preset("heps").unwrap();
    let o = Options {
        time_s: 0.01,
        interval_s: 0.002,
        ..opts("h0", "h4")
    };
    let r = iperf::run(&fabric, &o, 1).unwrap();
    print!("{}", report::iperf::text(&r));
    let want = tcp_goodput_gbps(100.0, 1500, false);
    let last = r.results.intervals.last().unwrap();
    let gbps = last.sum.bits_per_second / 1e9;
    assert!((gbps - want).abs() / want < 0.03, "{gbps} vs {want}");
    let rx = r.results.sum_received.bits_per_second / 1e9;
    assert!(rx > 0.9 * want && rx < want * 1.001, "{rx}");
}

#[test]
fn the_json_document_has_iperf3s_layout_and_parses() {
    let fabric = preset("heps").unwrap();
    let r = iperf::run(&fabric, &paced(), 1).unwrap();
    let doc = report::iperf::json(&r);
    assert!(doc.starts_with("{\n\t\"start\":\t{\n\t\t\"connected\":\t[{\n\t\t\t\t\"socket\":\t5,"));
    assert!(doc.ends_with("}\n"));
    let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(v["start"]["test_start"]["num_streams"], 2);
    assert_eq!(v["intervals"].as_array().unwrap().len(), 5);
    assert_eq!(v["end"]["streams"][1]["sender"]["socket"], 7);
    assert_eq!(v["end"]["sender_tcp_congestion"], "cubic");
}

#[test]
fn iperf_runs_in_the_background_of_another_workload() {
    // A foreground RDMA flow of 4 MiB ends the run; iperf reports the
    // intervals completed by then.
    let fabric = preset("heps").unwrap();
    let net = Net::new(&fabric, 1).unwrap();
    let o = Options {
        time_s: 1.0,
        interval_s: 0.0001,
        ..opts("h1", "h0")
    };
    let ip = Iperf::new(&net, &o).unwrap().into_background();
    let fg = fabriclab_core::traffic::flows::Flows::new(&net, &[common::flow("h2", "h3", 4 << 20)])
        .unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(ip));
    sim.add_app(Box::new(fg));
    assert_eq!(sim.run(Some(Time::ms(100))), Outcome::Finished);
    let end = sim.net.now();
    let res = sim.app::<Iperf>(id).unwrap().results(&sim.net);
    println!(
        "foreground ended at {end}; {} intervals",
        res.intervals.len()
    );
    assert!(!res.complete);
    assert_eq!(
        res.intervals.len() as u64,
        end.as_ps() / Time::us(100).as_ps()
    );
    assert!(res.sum_sent.bytes > 0);
}

#[test]
fn bad_options_are_clear_errors() {
    let fabric = preset("heps").unwrap();
    let bad = |o: Options| iperf::run(&fabric, &o, 1).unwrap_err();
    let e = bad(Options {
        congestion: Some("bbr".into()),
        ..opts("h0", "h1")
    });
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("bbr")),
        "{e}"
    );
    for o in [
        Options {
            bitrate_bps: -1.0,
            ..opts("h0", "h1")
        },
        Options {
            time_s: 0.0,
            ..opts("h0", "h1")
        },
        Options {
            time_s: -2.0,
            ..opts("h0", "h1")
        },
        Options {
            interval_s: -0.1,
            ..opts("h0", "h1")
        },
        Options {
            parallel: 0,
            ..opts("h0", "h1")
        },
        Options {
            length: 0,
            ..opts("h0", "h1")
        },
        opts("h0", "h0"),
    ] {
        assert!(matches!(bad(o), Error::InvalidArgument(_)));
    }
    // iperf3's own limit on a TCP write, and a test too short to measure
    // (both printed rates of tens of Tb/s).
    let e = bad(Options {
        length: (1 << 20) + 1,
        ..opts("h0", "h1")
    });
    assert!(
        e.to_string()
            .contains("block size too large (maximum = 1048576 bytes)"),
        "{e}"
    );
    let e = bad(Options {
        time_s: 1e-12,
        ..opts("h0", "h1")
    });
    assert!(e.to_string().contains("at least 1 us"), "{e}");
    assert!(matches!(bad(opts("h0", "h99")), Error::UnknownHost(_)));
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let fabric = preset("heps").unwrap();
    let a = iperf::run(&fabric, &paced(), 3).unwrap();
    let b = iperf::run(&fabric, &paced(), 3).unwrap();
    assert_eq!(report::iperf::json(&a), report::iperf::json(&b));
    assert_eq!(report::iperf::text(&a), report::iperf::text(&b));
}

/// Issue 14's case: one unlimited NewReno stream at 100G for 10 ms in 2 ms
/// intervals. The client counts bytes when they are written into the
/// socket (as iperf3 does), so its first interval also holds what filled
/// the 4 MiB send buffer: above the line rate, but by no more than the
/// buffer and one write. Everything the server reports (its intervals with
/// --get-server-output, and the receiver summary) counts bytes that
/// crossed the link and never exceeds the TCP goodput.
#[test]
fn only_the_senders_figures_can_exceed_the_goodput() {
    let fabric = preset("heps").unwrap();
    let o = Options {
        time_s: 0.01,
        interval_s: 0.002,
        congestion: Some("reno".into()),
        get_server_output: true,
        ..opts("h0", "h4")
    };
    let r = iperf::run(&fabric, &o, 1).unwrap();
    let res = &r.results;
    let goodput_bps = tcp_goodput_gbps(100.0, 1500, false) * 1e9;
    // The sender's first interval: over the line rate, explained by the
    // send buffer (4 MiB) plus at most one 128 KiB write.
    let first = &res.intervals[0].sum;
    assert!(first.bits_per_second > 100e9, "{}", first.bits_per_second);
    let excess = first.bytes as f64 - goodput_bps / 8.0 * first.seconds;
    assert!(
        excess > 0.0 && excess <= (4 << 20) as f64 + (128 << 10) as f64,
        "{excess} B beyond the goodput"
    );
    // The server's side, interval by interval and in sum.
    assert_eq!(res.server_intervals.len(), res.intervals.len());
    for iv in &res.server_intervals {
        for s in iv.streams.iter().chain([&iv.sum]) {
            assert!(s.bits_per_second <= goodput_bps * 1.0001, "{s:?}");
        }
    }
    assert!(res.sum_received.bits_per_second <= goodput_bps);
    // Bytes read up to the last boundary are what the intervals add to.
    let read: u64 = res.server_intervals.iter().map(|iv| iv.sum.bytes).sum();
    assert!(read <= res.sum_received.bytes);
    // The outputs carry the server's report.
    let text = report::iperf::text(&r);
    assert!(text.contains("\nServer output:\n"), "{text}");
    assert!(text.contains("Server listening on 5201 (test #1)"));
    let v: serde_json::Value = serde_json::from_str(&report::iperf::json(&r)).unwrap();
    let srv = &v["server_output_json"];
    assert_eq!(srv["intervals"].as_array().unwrap().len(), 5);
    assert_eq!(srv["intervals"][0]["streams"][0]["sender"], false);
    assert_eq!(
        srv["end"]["sum_received"]["bytes"],
        v["end"]["sum_received"]["bytes"]
    );
    // Without the option, neither appears.
    let plain = iperf::run(
        &fabric,
        &Options {
            get_server_output: false,
            ..o
        },
        1,
    )
    .unwrap();
    assert!(!report::iperf::text(&plain).contains("Server output:"));
    assert!(!report::iperf::json(&plain).contains("server_output_json"));
}

#[test]
fn interval_zero_prints_the_summary_alone() {
    // iperf3's -i 0 turns the periodic reports off; the JSON keeps the one
    // whole-run interval.
    let spec = fabriclab_core::config::preset("heps").unwrap();
    let mut o = fabriclab_core::traffic::iperf::Options {
        server: "h4".into(),
        client: "h0".into(),
        time_s: 0.001,
        interval_s: 0.0,
        get_server_output: true,
        ..Default::default()
    };
    let r = fabriclab_core::traffic::iperf::run(&spec, &o, 1).unwrap();
    let text = fabriclab_core::report::iperf::text(&r);
    assert_eq!(r.results.intervals.len(), 1);
    assert_eq!(
        text.matches(" sec ").count(),
        3,
        "sender, receiver and the server's receiver:\n{text}"
    );
    assert!(text.contains("sender") && text.contains("receiver"));
    o.interval_s = 0.0005;
    let r = fabriclab_core::traffic::iperf::run(&spec, &o, 1).unwrap();
    let text = fabriclab_core::report::iperf::text(&r);
    assert!(text.matches(" sec ").count() > 3, "{text}");
}
