//! HPL stopped (Ctrl-C) between two tests: the report holds the test that
//! ended, marked interrupted, and the text ends after its line as real
//! HPL's output does when it is killed. A file of its own: the stop is a
//! process-wide flag, which would stop the runs of other tests running
//! beside it in one test binary.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::interrupt;
use fabriclab_core::report;
use fabriclab_core::tools::hpl::{self, Options};
use fabriclab_core::units::Time;

#[test]
fn a_run_stopped_after_its_first_test_reports_that_test() {
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = 8\n\
         host_link_gbps = 100\nuplink_gbps = 100\n",
    )
    .unwrap();
    let opts: Options =
        serde_json::from_str(r#"{"n":[2048],"nb":[128],"grids":[[2,4],[4,2]],"samples":0}"#)
            .unwrap();
    let whole = hpl::run(&spec, &opts, 1, None).unwrap();
    assert_eq!(whole.tests.len(), 2);
    assert!(!whole.interrupted);

    // Stop when the first test reports itself done.
    let mut ends = 0;
    let mut stop = |_: Time, _: u64, _: usize, _: usize, label: &str| {
        if label == "done" {
            ends += 1;
            interrupt::request();
        }
    };
    let stopped = hpl::run(&spec, &opts, 1, Some(&mut stop));
    assert!(interrupt::take(), "the stop is left for the caller to see");
    let stopped = stopped.unwrap();
    assert_eq!(ends, 1);
    assert!(stopped.interrupted);
    assert_eq!(stopped.tests.len(), 1);
    let (a, b) = (&stopped.tests[0], &whole.tests[0]);
    assert_eq!(
        (a.variant.as_str(), a.time_s, a.gflops),
        (b.variant.as_str(), b.time_s, b.gflops)
    );
    let text = report::hpl::text(&stopped);
    let full = report::hpl::text(&whole);
    let first_test_end = full.find("HPL_pdgesv() end time").unwrap();
    assert!(
        text.contains(&full[..first_test_end]),
        "the header and the first test as in the whole run"
    );
    assert_eq!(text.matches("HPL_pdgesv() end time").count(), 1);
    assert!(!text.contains("Finished") && !text.contains("End of Tests."));

    // Stopped before any test ended: an error, nothing to report.
    interrupt::request();
    let none = hpl::run(&spec, &opts, 1, None);
    assert!(interrupt::take());
    let e = none.unwrap_err().to_string();
    assert!(e.contains("before its first test ended"), "{e}");
}
