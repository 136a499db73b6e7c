//! Ctrl-C on the flow backend, whose events can each cost a rate
//! recomputation over many flows: the stop is polled at every event
//! there, not every 65,536 as on the packet engine, so a run with slow
//! events stops at once (it used to take tens of seconds). Its own test
//! binary: the interrupt hook is process-wide.

mod common;
use common::flows_outcome;
use fabriclab_core::config::{preset, Backend};
use fabriclab_core::interrupt;
use fabriclab_core::sim::Outcome;
use fabriclab_core::traffic::flows::FlowSpec;
use std::sync::atomic::{AtomicU64, Ordering};

static POLLS: AtomicU64 = AtomicU64::new(0);
const STOP_AT: u64 = 40;

/// A Ctrl-C that arrives at the 40th look.
fn stop_at_the_40th_poll() -> bool {
    POLLS.fetch_add(1, Ordering::Relaxed) + 1 >= STOP_AT
}

#[test]
fn a_stop_on_the_flow_backend_is_taken_at_the_next_event() {
    let mut spec = preset("heps").unwrap();
    spec.sim.backend = Backend::Flow;
    // 240 flows started 1 us apart: some 480 flow events.
    let flows: Vec<FlowSpec> = (0..240)
        .map(|i| {
            let mut f = FlowSpec::write(format!("h{}", 1 + i % 15), "h0", 1 << 20);
            f.start_us = i as f64;
            f
        })
        .collect();
    let run = || flows_outcome(&spec, &flows);
    let (whole, events) = run();
    assert_eq!(whole, Outcome::Finished);
    assert!(events > 400, "{events}");
    interrupt::set_check(stop_at_the_40th_poll);
    let (o, ev) = run();
    assert_eq!(o, Outcome::Interrupted);
    assert!(ev < STOP_AT, "stopped after {ev} events");
    assert!(interrupt::take());
    // The allreduce benches stopped before their 1 GiB row say so (they
    // panicked: "the 1 GiB row").
    interrupt::request();
    let e = fabriclab_core::bench::run_on("allreduce-1k", "", Backend::Flow, None).unwrap_err();
    assert!(matches!(e, fabriclab_core::Error::Stopped(_)), "{e}");
    assert!(interrupt::take());
}
