//! The RC transport retry count: a QP whose peer is cut off exhausts its
//! retries and fails, and the tools above it report a transport retry
//! error as the real ones do.

use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use fabriclab_core::perftest::{self, Options, Test};
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::tools::imb;
use fabriclab_core::traffic::flows::{FlowResult, FlowSpec, Flows};
use fabriclab_core::units::Time;
use fabriclab_core::Error;

/// Two leaves of two hosts, one spine; h1's cable is pulled at 10 us
/// (and put back at `up_us` if given). ACK timeout 4.096 us x 2^8 =
/// 1,048.576 us, `retry_cnt` retries.
fn fabric(retry_cnt: u32, up_us: Option<f64>) -> FabricSpec {
    let up = up_us.map_or(String::new(), |u| format!("up_us = {u}\n"));
    FabricSpec::from_toml(&format!(
        "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n\
         [nic]\nack_timeout_exponent = 8\nretry_cnt = {retry_cnt}\n\
         [[link_failures]]\na = \"h1\"\nb = \"leaf0\"\ndown_us = 10\n{up}"
    ))
    .unwrap()
}

const RTO_PS: u64 = 4_096_000 << 8;

/// A 1 KiB WRITE h0 -> h1 posted at 20 us.
fn one_write_spec() -> FlowSpec {
    FlowSpec {
        src: "h0".into(),
        dst: "h1".into(),
        bytes: 1024,
        op: "write".into(),
        start_us: 20.0,
        priority: None,
        repeat: false,
        via: None,
        return_via: None,
    }
}

/// One 1 KiB WRITE h0 -> h1 posted at 20 us, after the cable pull.
fn one_write(spec: &FabricSpec) -> (Sim, Outcome, FlowResult) {
    let net = Net::new(spec, 1).unwrap();
    let flows = [one_write_spec()];
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(Some(Time::ms(100)));
    let r = sim.app::<Flows>(id).unwrap().results()[0].clone();
    (sim, outcome, r)
}

#[test]
fn a_qp_whose_peer_is_cut_off_fails_after_retry_cnt_retries() {
    for retry_cnt in [0, 3, 7] {
        let (sim, outcome, r) = one_write(&fabric(retry_cnt, None));
        assert_eq!(outcome, Outcome::Finished, "the failed flow ends the run");
        // Sent at 20 us + the NIC's 0.5 us; each timeout resends at once;
        // the (retry_cnt + 1)-th timeout fails the QP.
        let t0 = 20_500_000u64;
        let fail = t0 + (retry_cnt as u64 + 1) * RTO_PS;
        let f = &sim.net.qp_failures()[0];
        assert_eq!(f.time_ps, fail, "retry_cnt {retry_cnt}");
        assert_eq!((f.host.as_str(), f.peer.as_str()), ("h0", "h1"));
        assert_eq!((f.retries, f.failed_wrs), (retry_cnt, 1));
        // The completion in error reaches the workload the NIC's receive
        // latency (0.3 us) later.
        assert_eq!(r.failed_ps, Some(fail + 300_000));
        assert_eq!(r.error.as_deref(), Some("transport retry counter exceeded"));
        assert_eq!(r.completed_ps, None);
        let qp = &sim.net.qp_reports()[0];
        assert_eq!(qp.counters.timeouts, retry_cnt as u64 + 1);
        assert_eq!(qp.counters.retx_packets, retry_cnt as u64);
    }
}

#[test]
fn a_link_back_before_the_retries_run_out_loses_nothing() {
    // Back at 1.5 ms, used again by leaf0 1 ms later (failover.detect_us):
    // the third retransmission (at 20.5 us + 3 RTO = 3,166 us) gets through.
    let (sim, _, r) = one_write(&fabric(3, Some(1500.0)));
    assert!(sim.net.qp_failures().is_empty());
    let done = r.completed_ps.expect("completes");
    assert!(
        done > 20_500_000 + 3 * RTO_PS && done < 20_500_000 + 4 * RTO_PS,
        "{done}"
    );
    assert_eq!(sim.net.qp_reports()[0].counters.timeouts, 3);
}

#[test]
fn perftest_prints_perftests_completion_error_and_fails() {
    let opts = Options {
        test: Test::WriteBw,
        client: "h0".into(),
        server: "h1".into(),
        size: Some(65536),
        iters: Some(100),
        ..Default::default()
    };
    let e = perftest::run(&fabric(2, None), &opts, 1).unwrap_err();
    let Error::TransportRetry(msg, tool, counters) = &e else {
        panic!("{e:?}")
    };
    // The failed run's counters come with the error, as columns and as
    // the tables --counters prints, the packets lost among them.
    let c: serde_json::Value = serde_json::from_str(counters).unwrap();
    let lost: u64 = (c["ports"]["lost_packets"].as_array().unwrap().iter())
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(lost > 0, "{counters}");
    assert!(c["ports_table"].as_str().unwrap().contains("lost"));
    assert!(c["qps_table"].as_str().unwrap().contains("retx"));
    assert!(
        msg.contains("transport retry counter exceeded on QP") && msg.contains("h0 -> h1"),
        "{msg}"
    );
    let lines: Vec<&str> = tool.lines().collect();
    assert_eq!(lines[0], " Completion with error at client");
    assert_eq!(lines[1], " Failed status 12: wr_id 0 syndrom 0x81");
    assert!(
        lines[2].starts_with("scnt=") && lines[2].contains(", ccnt="),
        "{tool}"
    );
    assert_eq!(
        lines[3],
        " Failed to complete run_iter_bw function successfully"
    );
    assert!(e.is_run_failure());
}

#[test]
fn an_mpi_job_with_a_rank_cut_off_fails_with_the_libraries_lines() {
    let o = imb::Options {
        msglog: Some((16, 16)),
        ..imb::Options::at_np(&["PingPong"], 2)
    };
    // Ranks 0 and 1 on h0 and h1 (one per host, in order).
    let e = imb::run(&fabric(1, None), &o, 1, None).unwrap_err();
    let Error::TransportRetry(msg, tool, _) = &e else {
        panic!("{e:?}")
    };
    assert!(msg.starts_with("the MPI job failed at "), "{msg}");
    assert!(msg.contains("transport retry counter exceeded"), "{msg}");
    assert!(
        tool.contains("Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81"),
        "{tool}"
    );
    assert!(tool.contains("exited on signal 6 (Aborted)."), "{tool}");
}

#[test]
fn retry_counts_are_three_bit_fields() {
    let base = "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[nic]\n";
    for (field, needle) in [
        ("retry_cnt = 8", "nic.retry_cnt"),
        ("rnr_retry = 9", "nic.rnr_retry"),
    ] {
        let e = FabricSpec::from_toml(&format!("{base}{field}\n")).unwrap_err();
        assert!(
            e.to_string().contains(needle) && e.to_string().contains("0 and 7"),
            "{e}"
        );
    }
}

#[test]
fn a_fio_job_whose_target_is_cut_off_stops_with_fios_io_error() {
    use fabriclab_core::tools::fio;
    // The target h2's leaf loses its only uplink at 10 us.
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[nic]\nack_timeout_exponent = 8\nretry_cnt = 1\n\
         [[link_failures]]\na = \"leaf1\"\nb = \"spine0\"\ndown_us = 10\n",
    )
    .unwrap();
    let opts = fio::Options {
        clients: vec!["h0".into()],
        targets: vec!["h2".into()],
        runtime_s: 0.02,
        ..Default::default()
    };
    let e = fio::run(&spec, &opts, 1).unwrap_err();
    let Error::TransportRetry(msg, tool, _) = &e else {
        panic!("{e:?}")
    };
    assert!(
        msg.starts_with("fio job fio failed: transport retry counter exceeded"),
        "{msg}"
    );
    assert!(
        tool.starts_with("fio: io_u error on file h2: Input/output error: write offset="),
        "{tool}"
    );
}

#[test]
fn an_mpi_program_whose_ranks_wait_on_each_other_is_an_mpi_deadlock() {
    use fabriclab_core::mpi::job::JobSpec;
    use fabriclab_core::mpi::patterns;
    use fabriclab_core::mpi::program::{Phase, Timing};
    use fabriclab_core::mpi::run::{run_program, ProgramSpec, RunEnv};
    use fabriclab_core::mpi::sched::{Buf, BufSizes, Region, Schedule};
    // Each rank receives before it sends: every send has its receive (the
    // schedule passes its check), yet neither rank ever sends.
    let bufs = BufSizes {
        send: vec![1024, 1024],
        recv: vec![1024, 1024],
    };
    let mut s = Schedule::new(2, 8, bufs, "cycle");
    for (r, peer) in [(0usize, 1u32), (1, 0)] {
        let rank = &mut s.ranks[r];
        let got = rank.recv(peer, 0, Region::new(Buf::Recv, 0, 1024), &[]);
        rank.send(peer, 0, Region::new(Buf::Send, 0, 1024), &[got]);
    }
    s.check().unwrap();
    let sync = patterns::sync_barrier(2);
    let phases = vec![Phase {
        scheds: vec![0],
        setup: None,
        n: 2,
        warmup: 0,
        reps: 1,
        timing: Timing::Loop,
        label: "cycle".into(),
    }];
    let program = ProgramSpec {
        scheds: vec![s],
        sync,
        phases,
        keep_samples: false,
        executor: None,
    };
    let env = RunEnv::default();
    let e = run_program(
        &fabric(7, None),
        &JobSpec::with_np(2),
        &env,
        program,
        1,
        None,
    )
    .map(|_| ())
    .expect_err("a deadlock");
    assert!(matches!(e, Error::Deadlock(_)), "{e:?}");
    assert!(
        e.to_string().contains("MPI deadlock") && e.to_string().contains("cycle"),
        "{e}"
    );
}

/// A receiver that stops draining for good (a PFC storm, no watchdog):
/// the sender is paused with data outstanding, its resends cannot leave,
/// and its transport timer still counts the periods without an
/// acknowledgement, so the QP fails at (retry_cnt + 1) timeouts after its
/// first unacknowledged packet left, instead of waiting forever (found by
/// a bad-input hunt: `fabriclab flows` simulated hours).
#[test]
fn a_sender_paused_for_good_by_a_stuck_receiver_fails_after_its_retries() {
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 2\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n\
         [nic]\nack_timeout_exponent = 8\nretry_cnt = 3\n\
         [[pfc_storms]]\nhost = \"h2\"\nstart_us = 1\n",
    )
    .unwrap();
    let net = Net::new(&spec, 1).unwrap();
    let flows = [FlowSpec {
        dst: "h2".into(),
        bytes: 4 << 20,
        start_us: 0.0,
        ..one_write_spec()
    }];
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(Some(Time::ms(1000)));
    assert_eq!(outcome, Outcome::Finished, "the failed flow ends the run");
    let r = &sim.app::<Flows>(id).unwrap().results()[0];
    assert!(r.completed_ps.is_none() && r.error.is_some(), "{r:?}");
    let f = &sim.net.qp_failures()[0];
    // The first packet leaves at the NIC's 0.5 us; its ACK never comes.
    assert_eq!(f.time_ps, 500_000 + 4 * RTO_PS, "{f:?}");
    assert_eq!(f.retries, 3);
}

#[test]
fn ack_timeout_exponent_0_is_no_timeout() {
    // The IB spec's Local ACK Timeout 0 is infinite. With h1 cut off for
    // good, the WRITE neither times out nor fails: it waits (where any
    // other exponent fails it after retry_cnt + 1 timeouts).
    let mut spec = fabric(0, None);
    spec.nic.ack_timeout_exponent = 0;
    let (sim, outcome, r) = one_write(&spec);
    // Still waiting at the 100 ms limit (95 retry_cnt-0 timeouts' worth).
    assert_eq!(outcome, Outcome::TimeLimit);
    assert_eq!((r.completed_ps, r.failed_ps), (None, None));
    let qps = sim.net.qp_reports();
    assert!(qps
        .iter()
        .all(|q| q.counters.timeouts == 0 && q.counters.retx_packets == 0));
    // On a healthy path, nothing is retransmitted (a 4.096 us timer
    // would have fired behind a 1 MiB transfer's queue).
    let spec = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 2\nhosts_per_leaf = 2\n\
         host_link_gbps = 100\nuplink_gbps = 100\n[nic]\nack_timeout_exponent = 0\n",
    )
    .unwrap();
    let flows = [FlowSpec {
        bytes: 1 << 20,
        start_us: 0.0,
        ..one_write_spec()
    }];
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    assert!(sim
        .net
        .qp_reports()
        .iter()
        .all(|q| q.counters.retx_packets == 0));
}
