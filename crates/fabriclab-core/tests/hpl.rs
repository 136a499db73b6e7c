//! HPL on the fabric: pure computation to the picosecond on one rank, the
//! panel broadcast's bytes by hand, the sampled estimate against the run of
//! every iteration, look-ahead and the network's share, HPL's output
//! format against the real HPL 2.3 sample, determinism and errors.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::report;
use fabriclab_core::tools::hpl::{self, hpl_flops, strata, IterSample, Options};

fn opts(json: &str) -> Options {
    serde_json::from_str(json).unwrap()
}

/// One leaf of 8 hosts at `gbps`, 1 us cables, RoCE MTU 4096.
fn fabric(gbps: u32) -> FabricSpec {
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = 8\n\
         host_link_gbps = {gbps}\nuplink_gbps = {gbps}\nhost_link_delay_ns = 1000\n\
         [nic]\nroce_mtu = 4096\n"
    ))
    .unwrap()
}

fn run(spec: &FabricSpec, json: &str) -> hpl::Report {
    hpl::run(spec, &opts(json), 1, None).unwrap()
}

#[test]
fn one_rank_is_pure_computation_to_the_picosecond() {
    // N = 256, NB = 64: 4 panels. DGEMM at 100 GFLOPS (10 ps a flop), the
    // panel at 25 GFLOPS (40 ps a flop). With one rank nothing is sent; the
    // time is every panel factorisation plus every update, by hand:
    // panel k: m jb^2 - jb^3 / 3 with m = N - k NB;
    // update k: 2 t t NB + NB^2 t with t = N - (k + 1) NB trailing order.
    for depth in [0, 1] {
        let r = run(
            &fabric(100),
            &format!(
                r#"{{"n":[256],"nb":[64],"grids":[[1,1]],"depth":[{depth}],"samples":0,
                    "dgemm_gflops":100,"pfact_gflops":25}}"#
            ),
        );
        let (n, nb) = (256u64, 64u64);
        let mut ps = 0u64;
        for k in 0..4 {
            let m = n - k * nb;
            ps += 40 * (m * nb * nb - nb * nb * nb / 3);
            let t = n - (k + 1) * nb;
            ps += 10 * (2 * t * t * nb + nb * nb * t);
        }
        let t = &r.tests[0];
        assert_eq!((t.time_s * 1e12).round() as u64, ps, "depth {depth}");
        assert_eq!(t.net_bytes, 0);
        let gflops = hpl_flops(256) / (ps as f64 * 1e-12) / 1e9;
        assert!((t.gflops - gflops).abs() < 1e-9 * gflops);
    }
}

#[test]
fn the_panel_broadcast_carries_each_panel_once_per_hop() {
    // 1 x 2, depth 0, every iteration: with one process row there is no
    // pivot search and no row swap on the network; each panel k crosses the
    // one hop as (rows + jb) jb + jb doubles, rows = N - k NB.
    let r = run(
        &fabric(100),
        r#"{"n":[1000],"nb":[64],"grids":[[1,2]],"depth":[0],"bcast":["1ring"],"samples":0}"#,
    );
    let mut bytes = 0u64;
    for k in 0..16u64 {
        let jb = 64.min(1000 - k * 64);
        bytes += 8 * ((1000 - k * 64 + jb) * jb + jb);
    }
    assert_eq!(r.tests[0].net_bytes, bytes);
    assert_eq!(r.tests[0].iterations, 16);
}

#[test]
fn fewer_than_three_strata_are_refused_and_three_stay_close() {
    // One stratum scaled its middle sample by all the iterations: 112 % of
    // the DGEMM peak on N = 4000, 2 x 2 (a bad-input hunt, 2026-11-26).
    let base = r#""n":[4000],"nb":[64],"grids":[[2,2]],"dgemm_gflops":50"#;
    for n in [1, 2] {
        let e = hpl::run(
            &fabric(100),
            &opts(&format!("{{{base},\"samples\":{n}}}")),
            1,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("at least 3 strata"), "{e}");
    }
    let exact = run(&fabric(100), &format!("{{{base},\"samples\":0}}")).tests[0].clone();
    let three = run(&fabric(100), &format!("{{{base},\"samples\":3}}")).tests[0].clone();
    let rel = (three.time_s - exact.time_s) / exact.time_s;
    assert!(rel.abs() < 0.02, "{rel}");
    assert!(
        three.gflops < 4.0 * 50.0,
        "{} Gflops above the peak",
        three.gflops
    );
}

#[test]
fn sampled_iterations_estimate_the_full_run() {
    // 128 iterations on 2 x 4: 8 strata simulate, back to back, blocks of
    // Q = 4 iterations after one lead-in each (40 iterations) and land
    // within 1.5 % of the run of every iteration.
    let base = r#""n":[16384],"nb":[128],"grids":[[2,4]],"dgemm_gflops":50"#;
    let exact = run(&fabric(100), &format!("{{{base},\"samples\":0}}")).tests[0].clone();
    assert_eq!(exact.simulated_iterations, 128);
    let t = run(&fabric(100), &format!("{{{base}}}")).tests[0].clone();
    let rel = (t.time_s - exact.time_s) / exact.time_s;
    println!(
        "exact {:.4} s, 8 strata {:.4} s ({} of 128 iterations simulated): {:+.2} %",
        exact.time_s,
        t.time_s,
        t.simulated_iterations,
        rel * 100.0
    );
    assert_eq!(t.simulated_iterations, 40);
    assert!(rel.abs() < 0.015, "{rel}");
    assert_eq!(t.samples.len(), 8);
    assert!(t.samples.iter().all(|s| s.measured == 4));
    assert_eq!(t.samples.iter().map(|s| s.weight).sum::<u64>(), 128);
    assert!(exact.net_bytes > 2 * t.net_bytes);
}

#[test]
fn the_sum_over_strata_is_exact_for_a_quadratic() {
    // t(k) = 3 + 2k + k^2 / 10 over 100 iterations in 7 strata.
    let f = |k: u64| 3.0 + 2.0 * k as f64 + (k * k) as f64 / 10.0;
    // One measured iteration per stratum: its time is f at its index.
    let samples: Vec<IterSample> = strata(100, 7)
        .into_iter()
        .map(|(lo, w)| {
            let (k, m) = hpl::measured(lo, w, 1);
            IterSample {
                k,
                measured: m,
                n_left: 0,
                time_s: f(k),
                weight: w,
            }
        })
        .collect();
    let exact: f64 = (0..100).map(f).sum();
    let est = hpl::sum_iterations(&samples);
    assert!((est - exact).abs() < 1e-9 * exact, "{est} vs {exact}");
}

#[test]
fn strata_cover_every_iteration_once() {
    for (k, s) in [(64, 16), (10, 3), (5, 16), (1, 1), (2604, 16)] {
        let st = strata(k, s);
        assert_eq!(st.iter().map(|x| x.1).sum::<u64>(), k);
        let mut next = 0;
        for &(lo, w) in &st {
            assert_eq!(lo, next, "{k} {s}: {st:?}");
            let (k0, m) = hpl::measured(lo, w, 8);
            assert!(k0 >= lo && k0 + m <= lo + w && m == w.min(8));
            next += w;
        }
    }
}

#[test]
fn look_ahead_and_a_faster_network_raise_the_rate() {
    // The panel factorisation (slow, at a quarter of the DGEMM rate) sits
    // on the critical path without look-ahead; a 10G network stretches the
    // broadcast and the swap that a 100G one hides.
    let base = r#""n":[6144],"nb":[128],"grids":[[2,4]],"samples":0,"dgemm_gflops":50"#;
    let g = |gbps: u32, depth: u32| {
        let r = run(&fabric(gbps), &format!("{{{base},\"depth\":[{depth}]}}"));
        r.tests[0].gflops
    };
    let (d1, d0, slow) = (g(100, 1), g(100, 0), g(10, 1));
    println!("100G depth 1: {d1:.1}, depth 0: {d0:.1}, 10G depth 1: {slow:.1} GFLOPS (peak 400)");
    assert!(d1 > 1.05 * d0, "{d1} vs {d0}");
    assert!(d1 > 1.1 * slow, "{d1} vs {slow}");
    assert!(d1 < 400.0);
}

#[test]
fn every_broadcast_and_swap_runs_and_costs_about_the_same_at_p_and_q_of_2() {
    let mut rates = Vec::new();
    for bc in ["1ring", "1ringM", "2ring", "2ringM", "blong", "blongM"] {
        for swap in ["bin-exch", "long", "mix"] {
            let r = run(
                &fabric(100),
                &format!(
                    r#"{{"n":[2048],"nb":[64],"grids":[[2,2]],"bcast":["{bc}"],"swap":"{swap}","samples":0}}"#
                ),
            );
            rates.push(r.tests[0].gflops);
        }
    }
    let (lo, hi) = rates
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi < 1.15 * lo, "{rates:?}");
}

#[test]
fn output_matches_hpl_2_3_line_for_line_up_to_the_results() {
    // The golden HPL.dat (N 2000, NB 128, grids 1x2 and 2x1) gives the
    // golden sample's banner and parameter list byte for byte, and T/V
    // lines of the same layout.
    let golden = include_str!("data/hpl_sample.txt");
    let dat = include_str!("data/hpl_HPL.dat");
    let o = Options {
        hpl_dat: Some(dat.to_string()),
        ..Options::default()
    };
    let r = hpl::run(&fabric(100), &o, 1, None).unwrap();
    let text = report::hpl::text(&r);
    let upto = |s: &str| {
        s[..s
            .find("- The matrix A")
            .unwrap_or(s.find("T/V   ").unwrap())]
            .to_string()
    };
    let ours_head = &text[..text.find("\n==========").unwrap()];
    let gold_head = upto(golden);
    assert!(
        gold_head.starts_with(ours_head),
        "ours:\n{ours_head}\n---\ngolden:\n{gold_head}"
    );
    let tv = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("WR") || l.starts_with("T/V "))
            .map(String::from)
            .collect()
    };
    let (ours, gold) = (tv(&text), tv(golden));
    assert_eq!(ours.len(), gold.len());
    for (a, b) in ours.iter().zip(&gold) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        let fields = |s: &str| {
            s.split_whitespace()
                .take(5)
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(fields(a), fields(b));
    }
    assert!(text.contains("Finished      2 tests with the following results:"));
    assert!(text.contains("              2 tests completed without checking,"));
    assert_eq!(r.tests[0].variant, "WR11C2R4");
    assert_eq!((r.tests[1].p, r.tests[1].q), (2, 1));
    // Explicit settings win over the file's.
    let o = Options {
        hpl_dat: Some(dat.to_string()),
        n: Some(vec![1024]),
        bcast: Some(vec!["blong".into()]),
        ..Options::default()
    };
    let r = hpl::run(&fabric(100), &o, 1, None).unwrap();
    assert_eq!(r.tests[0].n, 1024);
    assert_eq!(r.tests[0].variant, "WR14C2R4");
}

#[test]
fn same_seed_same_result() {
    let j = r#"{"n":[6000],"nb":[96],"grids":[[2,3]],"samples":4}"#;
    let a = run(&fabric(100), j);
    let b = run(&fabric(100), j);
    assert_eq!(a.tests[0].time_s.to_bits(), b.tests[0].time_s.to_bits());
    assert_eq!(a.tests[0].events, b.tests[0].events);
}

#[test]
fn bad_input_says_what_to_change() {
    let cases = [
        (r#"{"grids":[[1,2]]}"#, "problem size"),
        (r#"{"n":[100]}"#, "process grid"),
        (r#"{"n":[0],"job":{"np":2}}"#, "at least 1"),
        (r#"{"n":[100],"job":{"np":2},"nb":[0]}"#, "block size"),
        (r#"{"n":[100],"job":{"np":2},"depth":[2]}"#, "depth 2"),
        (
            r#"{"n":[100],"grids":[[4,4]],"job":{"np":8}}"#,
            "needs 16 processes",
        ),
        (
            r#"{"n":[100],"job":{"np":2},"bcast":["3ring"]}"#,
            "unknown broadcast",
        ),
        (
            r#"{"n":[100],"job":{"np":2},"swap":"fast"}"#,
            "unknown swap",
        ),
        (
            r#"{"n":[100],"job":{"np":2},"dgemm_gflops":-1}"#,
            "positive rate",
        ),
        (
            r#"{"n":[100],"job":{"np":2},"hpl_dat":"HPL input\n"}"#,
            "ends before",
        ),
        (r#"{"n":[100],"job":{"np":64}}"#, "hosts"),
        // 65536 x 65536 wrapped in u32 (to 0: "np must be at least 1").
        (
            r#"{"n":[100],"grids":[[65536,65536]]}"#,
            "4294967296 processes",
        ),
        // The clock would wrap (213 days of ps): 2/3 x 1e21 flops at 2 x 50 GF.
        (
            r#"{"n":[10000000],"job":{"np":2},"dgemm_gflops":50}"#,
            "days",
        ),
    ];
    for (j, want) in cases {
        let e = hpl::run(&fabric(100), &opts(j), 1, None)
            .err()
            .unwrap_or_else(|| panic!("{j} ran"))
            .to_string();
        assert!(e.contains(want), "{j}: {e}");
    }
    // Absurd rates print as numbers, not 300 digits.
    let e = hpl::run(
        &fabric(100),
        &opts(r#"{"n":[2000],"grids":[[2,2]],"dgemm_gflops":1e-300}"#),
        1,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("at 1e-300 GFLOPS each would take about ")
            && e.contains("e+29")
            && e.len() < 300,
        "{e}"
    );
}
