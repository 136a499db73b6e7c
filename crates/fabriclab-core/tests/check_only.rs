//! Check-only mode: a tool goes through its checks of the input and stops
//! every simulation before its first event; the mode is per thread.

use fabriclab_core::config::{preset, FabricSpec};
use fabriclab_core::interrupt;
use fabriclab_core::net::Net;
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::tools::hpl;
use fabriclab_core::traffic::flows::{FlowSpec, Flows};
use fabriclab_core::Error;

mod common;

fn incast(spec: &FabricSpec) -> (Outcome, u64) {
    let flows: Vec<FlowSpec> = (1..4)
        .map(|s| common::flow(&format!("h{s}"), "h0", 1 << 20))
        .collect();
    let net = Net::new(spec, 1).unwrap();
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    let o = sim.run(None);
    (o, sim.net.events_processed())
}

#[test]
fn a_checked_run_simulates_nothing_and_the_mode_is_this_threads() {
    let spec = preset("heps").unwrap();
    let (whole, events) = incast(&spec);
    assert_eq!(whole, Outcome::Finished);
    assert!(events > 1000, "{events}");
    assert!(!interrupt::checking());
    let (checked, other_thread) = interrupt::check_only(|| {
        assert!(interrupt::checking());
        // Another thread's run (a Dask worker's, say) is not affected.
        let other = std::thread::scope(|s| s.spawn(|| incast(&spec)).join().unwrap());
        (incast(&spec), other)
    });
    assert_eq!(checked, (Outcome::Interrupted, 0));
    assert_eq!(other_thread, (whole, events));
    assert!(!interrupt::checking(), "the mode ends with the call");
    // It is not the process-wide stop: nothing is left to take.
    assert!(!interrupt::take());
    // It ends even when the checked call panics.
    let r = std::panic::catch_unwind(|| interrupt::check_only(|| panic!("boom")));
    assert!(r.is_err());
    assert!(!interrupt::checking());
    assert_eq!(incast(&spec), (whole, events));
}

#[test]
fn a_checked_tool_reports_its_input_errors_and_no_result() {
    let spec = preset("heps").unwrap();
    let opts = |iters: u64| Options {
        test: Test::WriteBw,
        client: "h0".into(),
        server: "h4".into(),
        iters: Some(iters),
        ..Default::default()
    };
    let bad = interrupt::check_only(|| perftest::run(&spec, &opts(0), 1));
    assert!(
        matches!(&bad, Err(Error::InvalidArgument(m)) if m.contains("-n 0")),
        "{bad:?}"
    );
    let good = interrupt::check_only(|| perftest::run(&spec, &opts(1000), 1)).unwrap();
    assert_eq!(good.outcome, Outcome::Interrupted);

    // HPL checks every test of its list and, having no figures, says it
    // stopped: not an input error.
    let hpl_opts = |grids: &str| -> hpl::Options {
        serde_json::from_str(&format!(
            r#"{{"n":[2000,3000],"nb":[128],"grids":{grids},"dgemm_gflops":40}}"#
        ))
        .unwrap()
    };
    let stopped = interrupt::check_only(|| hpl::run(&spec, &hpl_opts("[[2,2],[2,4]]"), 1, None));
    match stopped {
        Err(e @ Error::Stopped(_)) => assert!(!e.is_input_error()),
        other => panic!("{other:?}"),
    }
    let too_big = interrupt::check_only(|| hpl::run(&spec, &hpl_opts("[[2,2],[8,8]]"), 1, None));
    assert!(
        too_big.as_ref().is_err_and(Error::is_input_error),
        "{too_big:?}"
    );
}
