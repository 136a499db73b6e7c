//! fio on simulated fabrics: one I/O's latency equal to the sum of its
//! parts to the picosecond, throughput bounded by the target's media rate
//! or its link, Little's law at depth, lossless storage incast, the EANTC
//! storage bed against its published figures, determinism and errors.

mod common;
use fabriclab_core::config::{preset, FabricSpec};
use fabriclab_core::tools::fio::{self, Options, RESPONSE_BYTES};
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{roce_wire_bytes, write_goodput_gbps, Ext};
use fabriclab_core::Error;

/// One store-and-forward switch, `n` hosts at 25G with 1 us cables.
fn star(n: u32) -> FabricSpec {
    star_with(n, "")
}

fn star_with(n: u32, extra: &str) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = {n}\n\
         host_link_gbps = 25\nuplink_gbps = 25\nhost_link_delay_ns = 1000\n\
         [switch]\nlatency_ns = 450\nforwarding = \"store_and_forward\"\n\
         [nic]\ntx_latency_ns = 600\nrx_latency_ns = 400\nroce_mtu = 1024\n{extra}"
    ))
    .unwrap()
}

fn opts(clients: &[&str], targets: &[&str]) -> Options {
    Options {
        clients: clients.iter().map(|s| s.to_string()).collect(),
        targets: targets.iter().map(|s| s.to_string()).collect(),
        runtime_s: 0.002,
        ..Default::default()
    }
}

#[test]
fn a_write_at_depth_1_takes_the_sum_of_its_parts_to_the_picosecond() {
    // 512 B in one packet (MTU 1024), a 1000 MB/s device (512 ns), 10 us
    // of device latency, 1 us of submission.
    let o = Options {
        bs: 512,
        target_write_mbps: 1000.0,
        target_latency_us: 10.0,
        submit_us: 1.0,
        ..opts(&["h0"], &["h1"])
    };
    let r = fio::run(&star(2), &o, 1).unwrap();
    let link = Rate::gbps(25);
    let one_way = |wire: u32| {
        Time::ns(600)
            + link.tx_time(wire as u64)
            + Time::ns(1000)
            + Time::ns(450)
            + link.tx_time(wire as u64)
            + Time::ns(1000)
            + Time::ns(400)
    };
    let data = roce_wire_bytes(512, Ext::Reth, false);
    let answer = roce_wire_bytes(RESPONSE_BYTES as u32, Ext::None, false);
    let clat = one_way(data) + Time::ns(512) + Time::us(10) + one_way(answer);
    let c = &r.clients[0];
    println!("clat {} ps by hand, {:?} measured", clat.as_ps(), c.clat_ns);
    // fio reports whole nanoseconds (its clock's unit): the sum truncated.
    assert_eq!(c.clat_ns.min, (clat.as_ps() / 1000) as f64);
    assert_eq!(c.clat_ns.max, c.clat_ns.min, "an idle fabric has no jitter");
    assert!((c.lat_ns.mean - c.clat_ns.mean - 1000.0).abs() < 1e-6);
    // Back to back for 2 ms: one I/O per (slat + clat).
    let per_io_ps = (clat + Time::us(1)).as_ps();
    let expect = 2_000_000_000 / per_io_ps;
    assert!(
        c.total_ios.abs_diff(expect) <= 1,
        "{} vs {expect}",
        c.total_ios
    );
}

#[test]
fn throughput_is_the_media_rate_or_the_link_whichever_is_lower() {
    // Four clients at depth 8 of 64 KiB onto one target, PFC only (DCQCN
    // with the ConnectX defaults loses some of the link on this incast,
    // see tests/dcqcn.rs).
    let run = |mbps: f64| {
        let o = Options {
            bs: 64 << 10,
            iodepth: 8,
            target_write_mbps: mbps,
            ramp_time_s: 0.001,
            runtime_s: 0.008,
            ..opts(&["h0", "h1", "h2", "h3"], &["h4"])
        };
        let fabric = star_with(5, "[cc]\nalgorithm = \"none\"\n");
        let r = fio::run(&fabric, &o, 1).unwrap();
        let total: f64 = r.clients.iter().map(|c| c.bw_bytes).sum();
        let drops: u64 = r.ports.iter().map(|p| p.counters.drops).sum();
        assert_eq!(drops, 0, "the lossless class drops nothing");
        (total, r)
    };
    // A slow device (1000 MB/s) is the bottleneck ...
    let (slow, _) = run(1000.0);
    println!("device-bound: {:.1} MB/s", slow / 1e6);
    assert!((slow / 1e9 - 1.0).abs() < 0.02, "{slow}");
    // ... a fast one (10 GB/s) leaves the target's 25G link as the bound:
    // RoCE goodput at MTU 1024 (fio counts the I/Os that complete in the
    // window, so up to the 2 MiB in flight at its start count too).
    let (fast, r) = run(10_000.0);
    let goodput = write_goodput_gbps(25.0, 1024, false) * 1e9 / 8.0;
    println!(
        "link-bound: {:.1} MB/s, goodput {:.1} MB/s",
        fast / 1e6,
        goodput / 1e6
    );
    assert!((fast / goodput - 1.0).abs() < 0.02, "{fast}");
    // Little's law: 32 I/Os in flight at that rate.
    let mean_lat_s: f64 = r.clients.iter().map(|c| c.lat_ns.mean).sum::<f64>() / 4.0 / 1e9;
    let little = 32.0 * (64 << 10) as f64 / fast;
    println!(
        "mean latency {:.1} us, Little {:.1} us",
        mean_lat_s * 1e6,
        little * 1e6
    );
    assert!((mean_lat_s - little).abs() / little < 0.05);
}

#[test]
fn reads_are_bounded_by_the_read_rate() {
    let o = Options {
        rw: "randread".into(),
        bs: 64 << 10,
        iodepth: 8,
        target_read_mbps: 1500.0,
        ramp_time_s: 0.001,
        runtime_s: 0.004,
        ..opts(&["h0", "h1"], &["h2"])
    };
    let r = fio::run(&star(3), &o, 1).unwrap();
    let total: f64 = r.clients.iter().map(|c| c.bw_bytes).sum();
    assert!((total / 1.5e9 - 1.0).abs() < 0.02, "{total}");
}

#[test]
fn eantc_storage_4m_depth_32_meets_the_published_throughput() {
    // EANTC: "IOPS ... reached up to 248.8 per node, with up to 1.0
    // GBytes/s write throughput" (11 clients, 4 targets at 25GbE); the
    // 4 MB depth-32 average delay without dynamic ECN was about 148 ms
    // (figure 9: -19.0 ms is 12.8 %). Four targets take at most 4 x 25G,
    // so 11 clients share about 11.6 GB/s of goodput.
    let o = Options {
        bs: 4 << 20,
        iodepth: 32,
        ramp_time_s: 0.15,
        runtime_s: 0.1,
        ..opts(
            &[
                "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10",
            ],
            &["h12", "h13", "h14", "h15"],
        )
    };
    let r = fio::run(&preset("eantc-storage").unwrap(), &o, 1).unwrap();
    let iops: f64 = r.clients.iter().map(|c| c.iops).sum::<f64>() / 11.0;
    let lat_ms: f64 = r.clients.iter().map(|c| c.lat_ns.mean).sum::<f64>() / 11.0 / 1e6;
    println!("per node: {iops:.1} IOPS, average latency {lat_ms:.1} ms");
    assert!((iops - 248.8).abs() / 248.8 < 0.10, "{iops}");
    assert!(lat_ms > 100.0 && lat_ms < 160.0, "{lat_ms}");
    // Little's law: 32 I/Os always in flight, so the mean latency is 32 /
    // IOPS. Per client the 0.1 s window holds only 25 or 26 completions
    // (250 or 260 IOPS), so it is checked on the average over the 11.
    // (The published pair does not satisfy it: 32 / 248.8 IOPS is 128.6
    // ms, not 148 ms; the report's latency and IOPS come from different
    // runs or averages. The IOPS is what is matched.)
    let little_ms = 32e3 / iops;
    assert!(
        (lat_ms / little_ms - 1.0).abs() < 0.02,
        "{lat_ms} ms vs 32 / {iops} IOPS"
    );
}

#[test]
fn same_seed_same_report() {
    let o = Options {
        bs: 16 << 10,
        iodepth: 4,
        ..opts(&["h0", "h1", "h2"], &["h3", "h4"])
    };
    let a = serde_json::to_string(&fio::run(&star(5), &o, 7).unwrap()).unwrap();
    let b = serde_json::to_string(&fio::run(&star(5), &o, 7).unwrap()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn bad_options_say_what_to_change() {
    let fab = star(3);
    let cases: Vec<(Options, &str)> = vec![
        (
            Options {
                rw: "randrw".into(),
                ..opts(&["h0"], &["h1"])
            },
            "rw=randrw",
        ),
        (
            Options {
                bs: 0,
                ..opts(&["h0"], &["h1"])
            },
            "bs=0",
        ),
        (
            Options {
                iodepth: 0,
                ..opts(&["h0"], &["h1"])
            },
            "iodepth=0",
        ),
        (
            Options {
                numjobs: 0,
                ..opts(&["h0"], &["h1"])
            },
            "numjobs=0",
        ),
        (
            Options {
                runtime_s: 0.0,
                ..opts(&["h0"], &["h1"])
            },
            "runtime",
        ),
        (
            Options {
                runtime_s: -1.0,
                ..opts(&["h0"], &["h1"])
            },
            "runtime=-1",
        ),
        (
            Options {
                target_write_mbps: 0.0,
                ..opts(&["h0"], &["h1"])
            },
            "target_write_mbps",
        ),
        (
            // Found by fuzzing: a rate that rounds to 0 b/s divided by zero.
            Options {
                target_write_mbps: 1e-300,
                ..opts(&["h0"], &["h1"])
            },
            "between 0.001 and 1e10 MB/s",
        ),
        (
            Options {
                target_latency_us: -1.0,
                ..opts(&["h0"], &["h1"])
            },
            "target_latency_us",
        ),
        (opts(&["h0"], &["h0"]), "both a client and a target"),
        (
            opts(&["h0", "h0"], &["h1"]),
            "h0 is listed twice as a client",
        ),
        (
            opts(&["h0"], &["h1", "h2", "h1"]),
            "h1 is listed twice as a target",
        ),
        (opts(&[], &["h1"]), "at least one client"),
        (opts(&["h0"], &["h9"]), "h9"),
        // An unknown host is named before the ranges' overlap.
        (opts(&["h0", "h1", "h9"], &["h1"]), "no host \"h9\""),
    ];
    for (o, needle) in cases {
        match fio::run(&fab, &o, 1) {
            Err(Error::InvalidArgument(m)) | Err(Error::UnknownHost(m)) => {
                assert!(m.contains(needle), "{needle}: {m}")
            }
            other => panic!("{needle}: expected an error, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn json_job_runtime_sums_the_groups_jobs_as_fio_does() {
    // fio's group reporting: 2 jobs of 3 s give job_runtime 6000 where the
    // direction's runtime is 3001 (formats/fio_randwrite.json). Three jobs
    // of 10 ms: 30 and 10.
    let o = Options {
        numjobs: 3,
        iodepth: 4,
        runtime_s: 0.01,
        ..opts(&["h0"], &["h4"])
    };
    let json = fabriclab_core::report::fio::json(
        &fio::run(&preset("leaf-spine").unwrap(), &o, 1).unwrap(),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["write"]["runtime"], 10, "{json}");
    assert_eq!(job["job_runtime"], 30, "{json}");
}
