//! A stopped perftest reports the sizes it completed, and how it ended
//! (its own test binary: the stop flag is process-wide).

use fabriclab_core::config::preset;
use fabriclab_core::interrupt;
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::sim::Outcome;

#[test]
fn a_stopped_perftest_ends_its_report_at_the_sizes_done() {
    let spec = preset("heps").unwrap();
    let opts = Options {
        test: Test::WriteLat,
        client: "h0".into(),
        server: "h4".into(),
        iters: Some(50),
        all_sizes: true,
        ..Default::default()
    };
    // Asked before the first size: nothing completes, and the run says so
    // instead of failing.
    interrupt::request();
    let r = perftest::run(&spec, &opts, 1).unwrap();
    assert!(interrupt::take());
    assert_eq!(r.outcome, Outcome::Interrupted);
    assert!(r.lat.is_empty());
    // Its reports say so too (found by fuzzing: the --out_json document
    // panicked on "one row").
    let doc: serde_json::Value =
        serde_json::from_str(&fabriclab_core::report::perftest::json(&r)).unwrap();
    assert_eq!(doc["results"], serde_json::json!({}));
    let _ = fabriclab_core::report::perftest::text(&r);
    // Not asked: every size, finished.
    let whole = perftest::run(&spec, &opts, 1).unwrap();
    assert_eq!(whole.outcome, Outcome::Finished);
    assert_eq!(whole.lat.len(), 23);
}
