//! A stopped MPI tool reports what it completed (its own test binary: the
//! stop flag is process-wide and would stop other tests' runs).

use fabriclab_core::config::preset;
use fabriclab_core::interrupt;
use fabriclab_core::tools::imb;
use fabriclab_core::units::Time;

fn pingpong(msglog: (u32, u32)) -> imb::Options {
    imb::Options {
        msglog: Some(msglog),
        ..imb::Options::at_np(&["PingPong"], 2)
    }
}

#[test]
fn a_stopped_imb_run_keeps_the_measurements_it_completed() {
    let spec = preset("eantc-hpc").unwrap();
    // Stop at the first progress tick (after about 2^20 events): the small
    // sizes are done by then, the 4 MiB one is not.
    let mut stop = |_: Time, _: u64, _: usize, _: usize, _: &str| interrupt::request();
    let r = imb::run(&spec, &pingpong((0, 22)), 1, Some(&mut stop)).unwrap();
    assert!(interrupt::take(), "the stop was asked for");
    assert!(r.run.interrupted);
    let done = r.sections[0].rows.len();
    assert!(done > 3 && done < 24, "{done} of 24 sizes");
    // Those rows are the ones an uninterrupted run gives.
    let whole = imb::run(&spec, &pingpong((0, 3)), 1, None).unwrap();
    assert!(!whole.run.interrupted);
    let json = |rows: &[imb::Row]| serde_json::to_string(rows).unwrap();
    assert_eq!(
        json(&r.sections[0].rows[..5]),
        json(&whole.sections[0].rows)
    );
    // The text ends after the last completed measurement, as a killed
    // IMB's does, and the JSON says it was stopped.
    let text =
        fabriclab_core::report::imb::text(&r, "eantc-hpc", fabriclab_core::config::Backend::Packet);
    assert!(!text.contains("MPI_Finalize"), "{text}");
    assert!(serde_json::to_string(&r)
        .unwrap()
        .contains("\"interrupted\":true"));
    assert!(!serde_json::to_string(&whole)
        .unwrap()
        .contains("interrupted"));
}
