//! Cbench rotate and rotate_latency against hand arithmetic: pairs on a
//! non-blocking switch reach the RDMA READ goodput, pairs sharing one
//! oversubscribed uplink split it, zero-byte latency equals the ping-pong
//! of the same fabric, a synchronous send of an eager message waits for its
//! match; the text has the real tool's line shapes; runs repeat bit for bit.

mod common;

use fabriclab_core::config::FabricSpec;
use fabriclab_core::mpi::job::JobSpec;
use fabriclab_core::tools::{cbench, osu};
use fabriclab_core::wire::{roce_wire_bytes, Ext};

fn opts(test: &str, np: u32) -> cbench::Options {
    cbench::Options {
        test: test.into(),
        job: JobSpec::with_np(np),
        env: Default::default(),
        bytes: None,
        iterations: None,
        tests: None,
        rotations: None,
    }
}

/// `leaves` x `hpl` hosts at 100G, `spines` spines with one 100G link per
/// leaf, RoCE MTU 4096.
fn leaf_spine(leaves: u32, hpl: u32, spines: u32) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = {spines}\nleaves = {leaves}\nhosts_per_leaf = {hpl}\n\
         host_link_gbps = 100\nuplink_gbps = 100\nhost_link_delay_ns = 500\nuplink_delay_ns = 500\n\
         [nic]\nroce_mtu = 4096\n"
    ))
    .unwrap()
}

/// MB/s of RDMA READ responses at 100G, RoCE MTU 4096 (rendezvous data),
/// in 512 KiB fragments ([`read_wire_us`]).
fn read_goodput_mbs() -> f64 {
    (512 * 1024) as f64 / read_wire_us(512 * 1024)
}

/// Wire time at 100G, us, of the READ responses that move `bytes` in
/// rendezvous fragments of 512 KiB at RoCE MTU 4096: per fragment, 128
/// packets of which only the first and the last carry an AETH (the
/// middle ones carry none, as the IBTA's READ Response Middle).
fn read_wire_us(bytes: u64) -> f64 {
    let frag = 512 * 1024;
    assert_eq!(bytes % frag, 0);
    let packets = frag / 4096;
    let plain = roce_wire_bytes(4096, Ext::None, false) as u64;
    let aeth = roce_wire_bytes(4096, Ext::Aeth, false) as u64;
    let per_frag = (packets - 2) * plain + 2 * aeth;
    (bytes / frag * per_frag) as f64 / 12500.0
}

#[test]
fn pairs_on_a_non_blocking_switch_reach_the_read_goodput() {
    let spec = common::one_switch(8, "[nic]\nroce_mtu = 4096\n");
    let mut o = opts("rotate", 8);
    o.tests = Some(1);
    let r = cbench::run(&spec, &o, 1, None).unwrap();
    assert_eq!(r.rotations.len(), 4);
    assert_eq!(r.pairs.len(), 16);
    let wire_us = read_wire_us(8 << 20);
    // The same test with 2 MiB messages: the handshake costs the same
    // whatever the size, so the time beyond the READ responses' wire time
    // is the same to the ns, for every pair of every rotation.
    let mut small = opts("rotate", 8);
    small.tests = Some(1);
    small.bytes = Some(2 << 20);
    let r2 = cbench::run(&spec, &small, 1, None).unwrap();
    let extra_2mib = r2.pairs[0].time_us - read_wire_us(2 << 20);
    for (p, p2) in r.pairs.iter().zip(&r2.pairs) {
        // Each 8 MiB message: its READ responses back to back, plus the
        // rendezvous handshake: request to send, READ request, completion,
        // three one-way crossings of two 1 us cables each (6 us) plus the
        // NICs' and the switch's latencies and the MPI overheads.
        let extra = p.time_us - wire_us;
        assert!(
            (6.0..14.0).contains(&extra),
            "pair {}->{} rotation {}: {:.2} us per message, {wire_us:.2} us on the wire",
            p.rank,
            p.peer,
            p.rotation,
            p.time_us
        );
        let extra2 = p2.time_us - read_wire_us(2 << 20);
        assert!(
            (extra - extra_2mib).abs() < 0.001 && (extra2 - extra_2mib).abs() < 0.001,
            "{extra} vs {extra2}"
        );
    }
    for rot in &r.rotations {
        let sum: f64 = r
            .pairs
            .iter()
            .filter(|p| p.rotation == rot.rotation)
            .map(|p| p.value)
            .sum();
        assert!((rot.aggregate - sum).abs() < 1e-9);
        assert!((rot.ave - sum / 4.0).abs() < 1e-9);
        assert!((rot.aggregate_floor - 4.0 * rot.min).abs() < 1e-9);
    }
    println!("{}", fabriclab_core::report::cbench::text(&r));
}

#[test]
fn pairs_sharing_one_uplink_split_it() {
    // Two leaves of four hosts, one spine: the four pairs of every rotation
    // (lower half on leaf0, upper half on leaf1) cross the same 100G link.
    // PFC only: without DCQCN's rate cuts the uplink never idles.
    let mut spec = leaf_spine(2, 4, 1);
    spec.cc.algorithm = fabriclab_core::config::CcAlgorithm::None;
    let mut o = opts("rotate", 8);
    o.tests = Some(1);
    o.iterations = Some(4);
    let r = cbench::run(&spec, &o, 1, None).unwrap();
    let g = read_goodput_mbs();
    for rot in &r.rotations {
        println!(
            "rotation {}: min {:.0} max {:.0} aggregate {:.0} of {g:.0}",
            rot.rotation, rot.min, rot.max, rot.aggregate
        );
        assert!(
            rot.aggregate < g && rot.aggregate > 0.95 * g,
            "aggregate {} of {g}",
            rot.aggregate
        );
        assert!(rot.min > 0.2 * g && rot.max < 0.3 * g, "{rot:?}");
    }
}

#[test]
fn zero_byte_latency_is_the_pingpong_of_the_same_fabric() {
    let spec = common::one_switch(4, "");
    let mut o = opts("rotate_latency", 4);
    o.iterations = Some(200);
    let r = cbench::run(&spec, &o, 1, None).unwrap();
    let osu_o: osu::Options = serde_json::from_value(serde_json::json!({
        "test": "osu_latency", "job": {"np": 2}, "sizes": [0, 0], "iterations": 200, "warmup": 0
    }))
    .unwrap();
    let lat = osu::run(&spec, &osu_o, 1, None).unwrap().rows[0]
        .avg_us
        .unwrap();
    // Two pairs at once through one switch do not meet: each sees the
    // latency of a lone ping-pong.
    for p in &r.pairs {
        assert!(
            (p.value - lat).abs() < 1e-6,
            "pair {}: {} us vs osu_latency {lat} us",
            p.rank,
            p.value
        );
    }
    assert!((r.average_link - lat).abs() < 1e-6);
}

#[test]
fn a_synchronous_send_of_an_eager_message_waits_for_its_match() {
    // 0-byte MPI_Ssend: eager, so the sender waits for the receiver's
    // acknowledgement; a message per round trip, as rotate_latency's.
    let spec = common::one_switch(2, "");
    let mut o = opts("rotate", 2);
    o.bytes = Some(0);
    o.iterations = Some(100);
    o.tests = Some(1);
    let r = cbench::run(&spec, &o, 1, None).unwrap();
    let mut l = opts("rotate_latency", 2);
    l.iterations = Some(100);
    let lat = cbench::run(&spec, &l, 1, None).unwrap();
    let ssend_us = r.pairs[0].time_us;
    let rtt_us = 2.0 * lat.pairs[0].value;
    println!("0-byte Ssend {ssend_us:.3} us, round trip {rtt_us:.3} us");
    assert!((ssend_us - rtt_us).abs() < 1e-6);
    assert_eq!(r.pairs[0].value, 0.0, "Cbench prints 0 MB/s for 0 bytes");
}

/// Cbench rotate's output on 4 ranks (tests/golden/cbench_rotate_sample.txt).
const ROTATE_SAMPLE: &str = "process 0 on vm
process 1 on vm
process 2 on vm
process 3 on vm
rotate 0 ** 7488.02 , 9012.53 , ** min=7488.02 max=9012.53 ave=8250.27 aggregate=16500.55 aggregate_floor=14976.04
rotate 1 ** 2048.44 , 2588.63 , ** min=2048.44 max=2588.63 ave=2318.53 aggregate=4637.07 aggregate_floor=4096.88

Min Unidirectional Link Bandwidth: 2048.44 MB/s
Max Unidirectional Link Bandwidth: 9012.53 MB/s
Average Link Unidirectional Bandwidth: 5284.40 MB/s
Average Aggregate Unidirectional Bandwidth: 10568.81 MB/s
Using 8388608 byte messages, 3 tests of 10 iterations
";

#[test]
fn the_text_reproduces_the_real_sample_from_its_pair_figures() {
    // A run on 4 ranks whose pairs measured the sample's figures gives the
    // sample's text, summary arithmetic included. The sample prints rounded
    // figures; these unrounded ones print as they do and give its sums and
    // averages (7488.02 + 9012.53 would average to 8250.275, not .27).
    let spec = common::one_switch(4, "");
    let mut o = opts("rotate", 4);
    o.iterations = Some(1);
    o.tests = Some(1);
    let mut r = cbench::run(&spec, &o, 1, None).unwrap();
    r.rank_hosts = vec!["vm".into(); 4];
    let figures = [7488.018, 9012.529, 2048.44, 2588.627];
    for (p, mbs) in r.pairs.iter_mut().zip(figures) {
        p.time_us = 8388608.0 / mbs;
        p.value = mbs;
    }
    cbench::summarise(&mut r);
    r.iterations = 10;
    r.tests = 3;
    assert_eq!(fabriclab_core::report::cbench::text(&r), ROTATE_SAMPLE);
}

#[test]
fn an_odd_job_leaves_its_last_rank_out() {
    let spec = common::one_switch(5, "");
    let mut o = opts("rotate_latency", 5);
    o.iterations = Some(10);
    let r = cbench::run(&spec, &o, 1, None).unwrap();
    assert_eq!(r.rank_hosts.len(), 5);
    assert_eq!(r.rotations.len(), 2);
    let pairs: Vec<(u32, u32)> = r.pairs.iter().map(|p| (p.rank, p.peer)).collect();
    assert_eq!(pairs, vec![(0, 2), (1, 3), (0, 3), (1, 2)]);
}

#[test]
fn same_seed_same_report() {
    let spec = leaf_spine(2, 2, 2);
    let mut o = opts("rotate", 4);
    o.iterations = Some(2);
    let a = cbench::run(&spec, &o, 7, None).unwrap();
    let b = cbench::run(&spec, &o, 7, None).unwrap();
    assert_eq!(a.pairs, b.pairs);
    assert_eq!(a.run.events, b.run.events);
}

#[test]
fn bad_options_say_what_to_change() {
    let spec = common::one_switch(4, "");
    let err = |o: cbench::Options| cbench::run(&spec, &o, 1, None).unwrap_err().to_string();
    assert!(err(opts("rotate", 1)).contains("at least 2 processes"));
    assert!(err(opts("pingpong", 4)).contains("rotate or rotate_latency"));
    let mut o = opts("rotate", 4);
    o.rotations = Some(3);
    assert!(err(o).contains("use 1..2"));
    let mut o = opts("rotate", 4);
    o.iterations = Some(0);
    assert!(err(o).contains("at least 1"));
    // Found by fuzzing: 2^31 tests were 2^31 phases allocated up front.
    let mut o = opts("rotate", 4);
    o.tests = Some(1 << 31);
    assert!(err(o).contains("more than 1000"));
    let mut o = opts("rotate", 4);
    o.job.hosts = Some(vec!["h0".into(), "h9".into()]);
    assert!(err(o).contains("h9"));
}
