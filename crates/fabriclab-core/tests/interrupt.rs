//! Stopping a run from outside (its own test binary: the flag is
//! process-wide and would stop the other tests' runs).

mod common;
use common::flows_outcome;
use fabriclab_core::config::preset;
use fabriclab_core::interrupt;
use fabriclab_core::sim::Outcome;
use fabriclab_core::traffic::flows::FlowSpec;

fn flows() -> Vec<FlowSpec> {
    (1..16)
        .map(|s| FlowSpec::write(format!("h{s}"), "h0", 4 << 20))
        .collect()
}

#[test]
fn a_requested_stop_ends_every_run_until_it_is_taken() {
    let spec = preset("heps").unwrap();
    let run = || flows_outcome(&spec, &flows());
    let (whole, events) = run();
    assert_eq!(whole, Outcome::Finished);
    assert!(events > 100_000, "{events}");
    interrupt::request();
    let (o, ev) = run();
    assert_eq!(o, Outcome::Interrupted);
    assert_eq!(ev, 0, "stopped before its first event");
    // Still set: a tool running several simulations stops them all.
    assert_eq!(run().0, Outcome::Interrupted);
    assert!(interrupt::take());
    assert!(!interrupt::take());
    assert_eq!(run(), (whole, events));
}
