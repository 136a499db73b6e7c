//! Bad input gets a clear error naming what to change, never a panic.

use fabriclab_core::config::{preset, FabricSpec};
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::Error;

fn leaf_spine(extra: &str) -> Result<FabricSpec, Error> {
    FabricSpec::from_toml(&format!("[topology]\nkind = \"leaf_spine\"\n{extra}\n"))
}

#[test]
fn impossible_fabrics_are_rejected_with_the_field_to_change() {
    let cases = [
        ("spines = 2\nleaves = 2\nhosts_per_leaf = 0\nhost_link_gbps = 100\nuplink_gbps = 100", "hosts_per_leaf"),
        ("spines = 2\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = -100\nuplink_gbps = 100", "host_link_gbps"),
        ("spines = 2\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 0", "uplink_gbps"),
        ("spines = 0\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100", "spines"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[nic]\nroce_mtu = 1500", "MTU 1500"),
        // A product that wrapped in u32 (a panic in debug builds).
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[qos]\ndwrr_weights = [1, 1, 1, 70000, 1, 1, 1, 1]\ndwrr_quantum_bytes = 65536", "70000 x qos.dwrr_quantum_bytes 65536"),
        // Values that would wrap the picosecond clock or divide by zero.
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[switch]\nlatency_ns = 1e20", "switch.latency_ns = 1e20 is beyond"),
        // Host and transport times past any run (sums of them wrapped the clock).
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[mpi]\nsend_overhead_ns = 1e15", "mpi.send_overhead_ns = 1e15 ns is longer than any run"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[tcp]\ntx_latency_ns = 1e300", "tcp.tx_latency_ns = 1e300 ns"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[tcp]\nrto_max_ms = 1e300", "tcp.rto_max_ms = 1e300 ms"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[[link_failures]]\na = \"leaf0\"\nb = \"spine0\"\ndown_us = 1e300", "down_us = 1e300 us is longer than any run"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 1e-12\nuplink_gbps = 100", "below 1 kb/s"),
        // Memory rates that round to 0 b/s (a division by zero at run time).
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[mpi]\nmemcpy_gbps = 1e-300", "give a memory rate between 1e-6 and 1e7 GB/s"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[failover]\nconverge_us = 1e30", "longer than any run"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[cc]\nrate_increase_period_us = 1e30", "cc.rate_increase_period_us"),
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[tcp]\ninit_cwnd_segments = 4000000000", "init_cwnd_segments"),
        // Posted as one RDMA message: a panic at run time before.
        ("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[mpi]\nrndv_fragment_bytes = 4294967296", "2 GiB"),
    ];
    for (toml, needle) in cases {
        let e = leaf_spine(toml).unwrap_err();
        assert!(matches!(e, Error::InvalidFabric(_)), "{e:?}");
        assert!(e.to_string().contains(needle), "{needle}: {e}");
    }
}

#[test]
fn a_fat_tree_whose_host_count_would_wrap_is_refused() {
    // k = 4,194,304: k x k/2 x k/2 wrapped u64 to 0 (a panic in debug).
    let e = FabricSpec::from_toml(
        "[topology]\nkind = \"fat_tree\"\nk = 4194304\nhost_link_gbps = 100\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("hosts"), "{e}");
    // k = 2^31: the count saturated and printed as 2^64 - 1 (hunt finding).
    let e = FabricSpec::from_toml(
        "[topology]\nkind = \"fat_tree\"\nk = 2147483648\nhost_link_gbps = 100\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("has 2.476e+27 hosts") && !e.contains("18446744073709551615"),
        "{e}"
    );
}

#[test]
fn a_fabric_too_large_for_any_memory_says_so_without_saturated_numbers() {
    let e = leaf_spine(
        "spines = 4000000000\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\nlinks_per_pair = 4000000000",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("4000000002 switches, over 1.8e19 links")
            && e.contains("use fewer hosts, switches or links")
            && !e.contains("18446744073"),
        "{e}"
    );
}

#[test]
fn malformed_toml_and_unknown_keys_are_parse_errors() {
    assert!(matches!(
        FabricSpec::from_toml("[topology\nkind="),
        Err(Error::Parse(_))
    ));
    let e = leaf_spine("spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\nspine_count = 3")
        .unwrap_err();
    assert!(
        matches!(e, Error::Parse(_)) && e.to_string().contains("spine_count"),
        "{e}"
    );
}

#[test]
fn a_bad_value_in_topology_names_its_key_in_words() {
    // [topology] is read whole (its kind picks the layout): the parser's
    // message points at the table and names a Rust type (hunt finding).
    for (body, want) in [
        ("kind = \"fat_tree\"\nk = -4", "[topology] k: invalid value: integer `-4`, expected a whole number from 0 to 4294967295"),
        ("kind = \"fat_tree\"\nk = 4.0", "[topology] k: invalid type: floating point `4.0`, expected a whole number"),
        ("kind = \"fat_tree\"\nk = 4294967296", "[topology] k: invalid value: integer `4294967296`"),
        ("kind = \"leaf_spine\"\nspines = -2\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100", "[topology] spines: invalid value: integer `-2`"),
        ("kind = \"leaf_spine\"\nspines = \"two\"\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100", "[topology] spines: invalid type: string \"two\", expected a whole number"),
        // the digits of another key's number are not the string (audit)
        ("kind = \"leaf_spine\"\nspines = \"2\"\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100", "[topology] spines: invalid type: string \"2\", expected a whole number"),
        ("kind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\nbogus_key = 1", "[topology] bogus_key: unknown field `bogus_key`"),
    ] {
        let e = FabricSpec::from_toml(&format!("[topology]\n{body}\n")).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::Parse(_)) && text.contains(want), "{text}");
        assert!(!text.contains("u32") && !text.contains('\n'), "{text}");
    }
}

#[test]
fn a_byte_order_mark_before_the_toml_is_skipped() {
    let text = fabriclab_core::config::preset_toml("leaf-spine").unwrap();
    let with_bom = format!("\u{feff}{text}");
    assert_eq!(
        format!("{:?}", FabricSpec::from_toml(&with_bom).unwrap()),
        format!("{:?}", FabricSpec::from_toml(text).unwrap())
    );
}

#[test]
fn disconnected_hosts_and_unknown_nodes_in_explicit_topologies() {
    let disconnected = r#"
[topology]
kind = "explicit"
nodes = [ { name = "a", kind = "host" }, { name = "b", kind = "host" },
          { name = "s1", kind = "switch" }, { name = "s2", kind = "switch" } ]
links = [ { a = "a", b = "s1", gbps = 100 }, { a = "b", b = "s2", gbps = 100 } ]
"#;
    let e = FabricSpec::from_toml(disconnected).unwrap_err();
    assert!(e.to_string().contains("disconnected"), "{e}");
    let unknown = disconnected.replace("{ a = \"b\", b = \"s2\"", "{ a = \"c\", b = \"s2\"");
    let e = FabricSpec::from_toml(&unknown).unwrap_err();
    assert!(
        matches!(e, Error::UnknownHost(_)) && e.to_string().contains("\"c\""),
        "{e}"
    );
    // A name the command line could not address (audit): h:0 in
    // --flow h:0:h1:1K, h0,x in --hosts.
    for bad in ["a:0", "a,x", "a b", "a=1"] {
        let text = disconnected.replace("name = \"a\"", &format!("name = {bad:?}"));
        let e = FabricSpec::from_toml(&text).unwrap_err();
        assert!(
            e.to_string().contains("use as a separator; rename it"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn perftest_rejects_unknown_hosts_and_bad_options() {
    let heps = preset("heps").unwrap();
    let bad = |o: Options| perftest::run(&heps, &o, 1).unwrap_err();
    let base = || Options {
        test: Test::WriteBw,
        client: "h0".into(),
        server: "h4".into(),
        ..Default::default()
    };
    let e = bad(Options {
        server: "h99".into(),
        ..base()
    });
    assert!(
        matches!(e, Error::UnknownHost(_)) && e.to_string().contains("h31"),
        "{e}"
    );
    let e = bad(Options {
        mtu: Some(1000),
        ..base()
    });
    assert!(e.to_string().contains("1000"), "{e}");
    let e = bad(Options {
        iters: Some(2),
        ..base()
    });
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // 2^32 iterations truncated the TX depth to 0 (a "PFC deadlock").
    let e = bad(Options {
        iters: Some(1 << 32),
        ..base()
    });
    assert!(e.to_string().contains("at most 2147483647"), "{e}");
    // Found by fuzzing: -q 2^31 allocated 6.5 GB and aborted.
    let e = bad(Options {
        qps: 1 << 31,
        ..base()
    });
    assert!(e.to_string().contains("24 bits"), "{e}");
    // 16.7 M QP pairs need over 30 GB: refused from the estimate, where
    // the machine has less (on a larger one the run would be legal).
    let need = ((1u64 << 24) - 1) * 2_000;
    if fabriclab_core::config::memory::available_bytes().is_some_and(|have| have < need) {
        let e = bad(Options {
            qps: (1 << 24) - 1,
            ..base()
        });
        assert!(e.to_string().contains("more than the"), "{e}");
    }
    let e = bad(Options {
        server: "h0".into(),
        ..base()
    });
    assert!(e.to_string().contains("two hosts"), "{e}");
    // -D 1e300 ran until killed; -Q 0 was run as 1 without a word.
    let e = bad(Options {
        duration_s: Some(1e300),
        ..base()
    });
    assert!(
        e.to_string().contains("-D 1e300 s is longer than any run"),
        "{e}"
    );
    // -D so short that nothing completes printed 0 iterations and 0 Gb/s.
    let e = bad(Options {
        duration_s: Some(1e-9),
        ..base()
    });
    assert!(
        e.to_string().contains("no 65536 B message completed"),
        "{e}"
    );
    let e = bad(Options {
        cq_mod: Some(0),
        ..base()
    });
    assert!(
        e.to_string()
            .contains("-Q (CQ moderation) must be at least 1"),
        "{e}"
    );
    assert!(Test::parse("ib_write_speed")
        .unwrap_err()
        .to_string()
        .contains("ib_write_bw"));
    assert!(fabriclab_core::config::preset("nope")
        .unwrap_err()
        .to_string()
        .contains("heps"));
}

#[test]
fn a_buffer_smaller_than_its_headroom_is_rejected() {
    let spec = leaf_spine(
        "spines = 1\nleaves = 2\nhosts_per_leaf = 16\nhost_link_gbps = 400\nuplink_gbps = 400\n\
         host_link_delay_ns = 5000\n[switch]\nbuffer_bytes = 100000",
    )
    .unwrap();
    let e = fabriclab_core::net::Net::new(&spec, 1).err().unwrap();
    assert!(e.to_string().contains("switch.buffer_bytes"), "{e}");
}

#[test]
fn a_flow_over_the_rdma_message_limit_is_an_error_not_a_panic() {
    use fabriclab_core::net::Net;
    use fabriclab_core::traffic::flows::{FlowSpec, Flows};
    let net = Net::new(&preset("heps").unwrap(), 1).unwrap();
    let spec = FlowSpec::write("h0", "h4", 1 << 32);
    let e = Flows::new(&net, &[spec])
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("2 GiB"), "{e}");
}

#[test]
fn reserves_whose_sum_would_wrap_are_refused_when_the_fabric_is_built() {
    let spec = leaf_spine(
        "spines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n\
         [switch]\nreserve_bytes = 9223372036854775807",
    )
    .unwrap();
    let e = fabriclab_core::net::Net::new(&spec, 1)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("reserves"), "{e}");
}

/// An MPI job whose schedules would not fit in memory is refused before
/// they are compiled, with the estimate: a linear Alltoall on 16,384 ranks
/// is 2 x 16,384 x 16,383 point-to-point steps (about 537 M, tens of GB).
#[test]
fn an_mpi_job_too_large_for_memory_is_refused_before_compiling() {
    use fabriclab_core::tools::imb;
    if fabriclab_core::config::memory::available_bytes().is_some_and(|b| b > 50_000_000_000) {
        eprintln!("skipped: this machine could hold the job");
        return;
    }
    let spec = leaf_spine(
        "spines = 16\nleaves = 512\nhosts_per_leaf = 32\nhost_link_gbps = 100\nuplink_gbps = 100",
    )
    .unwrap();
    let mut o = imb::Options {
        msglog: Some((10, 10)),
        npmin: Some(16_384),
        ..imb::Options::at_np(&["Alltoall"], 16_384)
    };
    o.algorithms.insert("alltoall".into(), "linear".into());
    let t0 = std::time::Instant::now();
    let e = imb::run(&spec, &o, 1, None).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(
        msg.contains("16384 ranks") && msg.contains("GB") && msg.contains("estimated"),
        "{msg}"
    );
    // Refused from the estimate, not after compiling half of it.
    assert!(t0.elapsed().as_secs() < 30, "{:?}", t0.elapsed());
}

#[test]
fn mpi_job_options_are_checked_in_one_place_for_every_tool() {
    use fabriclab_core::front;
    // The job fields are one nested group (`job`) in every MPI tool's
    // options: a missing or zero -np, and a field the group does not
    // have, get the same clear error from each tool.
    let tools: [(&str, &str); 3] = [
        ("imb", r#""benchmarks": ["PingPong"]"#),
        ("osu", r#""test": "osu_latency""#),
        ("cbench", r#""test": "rotate""#),
    ];
    for (tool, own) in tools {
        let run = |job: &str| {
            let opts = format!("{{{own}, \"job\": {job}}}");
            match tool {
                "imb" => front::imb_json(&leaf_spine_toml(), &opts, 1, None),
                "osu" => front::osu_json(&leaf_spine_toml(), &opts, 1, None),
                _ => front::cbench_json(&leaf_spine_toml(), &opts, 1, None),
            }
            .unwrap_err()
            .to_string()
        };
        let e = run("{}");
        assert!(e.contains("-np is required"), "{tool}: {e}");
        let e = run(r#"{"np": 0}"#);
        assert!(e.contains("-np must be at least 1"), "{tool}: {e}");
        let e = run(r#"{"np": 2, "nodes": 2}"#);
        assert!(e.contains("nodes"), "{tool}: {e}");
        let e = run(r#"{"np": 2, "hosts": ["h0", "h99"]}"#);
        assert!(e.contains("h99"), "{tool}: {e}");
    }
}

/// The `leaf-spine` preset's TOML text (the front door takes fabric text).
fn leaf_spine_toml() -> String {
    fabriclab_core::config::preset_toml("leaf-spine")
        .unwrap()
        .to_string()
}

#[test]
fn flows_that_could_never_end_or_start_are_refused() {
    use fabriclab_core::front::flows_json;
    let heps = fabriclab_core::config::preset_toml("heps").unwrap();
    let run = |flows: &str, limit: Option<f64>| flows_json(heps, flows, 1, None, limit, None);
    // Only repeating flows and no time limit: nothing would end the run.
    let repeat = r#"[{"src": "h0", "dst": "h4", "bytes": 1024, "repeat": true}]"#;
    let e = run(repeat, None).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("give a time limit"),
        "{e}"
    );
    assert!(run(repeat, Some(20.0)).is_ok());
    // A start past the picosecond clock wrapped to a negative FCT.
    let late = r#"[{"src": "h0", "dst": "h4", "bytes": 1024, "start_us": 1e30}]"#;
    let e = run(late, None).unwrap_err();
    assert!(
        e.to_string()
            .contains("start_us = 1e30 us is later than any run"),
        "{e}"
    );
    let e = run(
        r#"[{"src": "h0", "dst": "h4", "bytes": 1024}]"#,
        Some(1e300),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("time limit 1e300 us is longer than any run"),
        "{e}"
    );
}

#[test]
fn a_value_where_a_table_belongs_is_said_in_words() {
    // A Rust type's name means nothing to someone writing TOML (QA
    // finding): `cc = "none"` is a [cc] table, `topology = 3` the
    // [topology] table, an algorithm one of its names.
    let ls = "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
              host_link_gbps = 100\nuplink_gbps = 100\n";
    for (text, want) in [
        (
            format!("cc = \"none\"\n{ls}"),
            "expected a table of keys (a [section] of its own), not a single value",
        ),
        (
            "topology = 3\n".to_string(),
            "expected the [topology] table, with its kind",
        ),
        (
            format!("{ls}[cc]\nalgorithm = 3\n"),
            "expected one of the setting's names, in quotes",
        ),
        (
            format!("{ls}[pfc]\nenabled = \"yes\"\n"),
            "expected a boolean",
        ),
    ] {
        let e = FabricSpec::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
        for rust in ["struct", "enum", "Spec", "wanted"] {
            assert!(!e.contains(rust), "{text}: {e}");
        }
    }
}

#[test]
fn an_unknown_switch_lists_every_tier() {
    // `via=` a switch that is not there: the hint lists each family of
    // switches (QA finding: only the first leaves were named, no spines).
    let topo = fabriclab_core::topology::Topology::build(&preset("heps").unwrap()).unwrap();
    let e = topo.switch_index("bogus").unwrap_err().to_string();
    assert!(
        e.contains("no switch \"bogus\"") && e.contains("leaf0..leaf7 (8)"),
        "{e}"
    );
    assert!(e.contains("spine0..spine"), "{e}");
    let topo = fabriclab_core::topology::Topology::build(&preset("fat-tree").unwrap()).unwrap();
    let e = topo.switch_index("spine0").unwrap_err().to_string();
    assert!(
        e.contains("edge0..edge31 (32)")
            && e.contains("agg0..agg31 (32)")
            && e.contains("core0..core15 (16)"),
        "{e}"
    );
    // Names out of order are listed, not shown as a range.
    let mut text = String::from("[topology]\nkind = \"explicit\"\n");
    for (name, kind) in [
        ("h0", "host"),
        ("h1", "host"),
        ("s10", "switch"),
        ("s2", "switch"),
        ("s3", "switch"),
    ] {
        text += &format!("[[topology.nodes]]\nname = \"{name}\"\nkind = \"{kind}\"\n");
    }
    for (a, b) in [("h0", "s10"), ("h1", "s2"), ("s10", "s3"), ("s2", "s3")] {
        text += &format!("[[topology.links]]\na = \"{a}\"\nb = \"{b}\"\ngbps = 100\n");
    }
    let topo =
        fabriclab_core::topology::Topology::build(&FabricSpec::from_toml(&text).unwrap()).unwrap();
    let e = topo.switch_index("x").unwrap_err().to_string();
    assert!(e.ends_with("its switches are s10, s2, s3"), "{e}");
}
