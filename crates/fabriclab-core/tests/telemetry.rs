//! Opt-in telemetry: per-port samples of queue depth, bytes sent and pause
//! state, checked against line-rate arithmetic and the port counters.

mod common;
use common::*;
use fabriclab_core::config::FabricSpec;
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::traffic::flows::Flows;
use fabriclab_core::units::Time;
use fabriclab_core::wire::{roce_wire_bytes, Ext};

#[test]
fn port_samples_follow_line_rate_and_end_at_the_counters() {
    // One 1 MiB WRITE h0 -> h1 through one switch at 100G, MTU 4096,
    // sampled every microsecond. While the transfer runs, the switch port
    // towards h1 sends 100 Gb/s x 1 us = 12 500 wire bytes per sample
    // period, give or take the one frame in serialisation at each edge;
    // its queue never holds more than a frame or two (equal rates).
    let spec = one_switch(2, "[nic]\nroce_mtu = 4096\n");
    let (sim, id, outcome) = sampled_write(&spec, 1 << 20, Time::us(1));
    assert_eq!(outcome, Outcome::Finished);
    let done = sim.app::<Flows>(id).unwrap().results()[0]
        .delivered_ps
        .unwrap();
    let frame = roce_wire_bytes(4096, Ext::None, false) as i64;
    let rows = port_series(&sim.net, "leaf0", "h1");
    assert!(rows
        .windows(2)
        .all(|w| w[1].time_ps - w[0].time_ps == 1_000_000));
    let busy: Vec<_> = rows
        .windows(2)
        .filter(|w| w[0].time_ps >= 10_000_000 && w[1].time_ps + 10_000_000 <= done)
        .map(|w| (w[1].tx_bytes - w[0].tx_bytes) as i64)
        .collect();
    assert!(busy.len() > 50, "{} busy periods", busy.len());
    for d in &busy {
        assert!((d - 12_500).abs() <= frame, "{d} bytes in 1 us");
    }
    let mean = busy.iter().sum::<i64>() as f64 / busy.len() as f64;
    assert!((mean - 12_500.0).abs() < 250.0, "mean {mean}");
    assert!(rows
        .iter()
        .all(|s| s.queue_bytes <= 2 * frame as u64 && !s.paused));
    // Sent bytes never decrease and never pass the final counter.
    let total = sim.net.port_between("leaf0", "h1").unwrap().tx_bytes;
    assert!(rows.windows(2).all(|w| w[1].tx_bytes >= w[0].tx_bytes));
    assert!(rows.last().unwrap().tx_bytes <= total);
}

#[test]
fn port_samples_show_pfc_pauses_and_the_incast_queue() {
    // A 4-to-1 incast with PFC on and no congestion control: the queue
    // towards h0 builds and the senders' host ports are paused at times;
    // the deepest sampled queue never exceeds the port's recorded peak.
    let spec = one_switch(5, "[cc]\nalgorithm = \"none\"\n");
    let flows: Vec<_> = (1..5)
        .map(|i| flow(&format!("h{i}"), "h0", 4 << 20))
        .collect();
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &flows).unwrap();
    let mut sim = Sim::new(net);
    sim.net.enable_sampling(Time::us(2));
    sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    let port_of = |a: &str, b: &str| (0..).find(|&p| sim.net.port_ends(p) == (a, b)).unwrap();
    let bottleneck = port_of("leaf0", "h0");
    let deepest = sim
        .net
        .port_samples()
        .iter()
        .filter(|s| s.port == bottleneck)
        .map(|s| s.queue_bytes)
        .max()
        .unwrap();
    let peak = sim
        .net
        .port_between("leaf0", "h0")
        .unwrap()
        .peak_queue_bytes;
    assert!(deepest > 0 && deepest <= peak, "{deepest} vs {peak}");
    let paused_host = sim
        .net
        .port_samples()
        .iter()
        .any(|s| s.paused && sim.net.port_ends(s.port).0.starts_with('h'));
    assert!(paused_host, "no sender host port was ever sampled paused");
}

#[test]
fn an_mpi_job_samples_every_port_and_ends_at_the_counters() {
    // IMB Alltoall on 4 ranks of one switch with telemetry every 5 us:
    // every port of the fabric (4 host ports, 4 switch ports) at every
    // sample, no per-QP rows, a last sample at the job's end (less than a
    // period after the one before), and the bytes sent by it equal to the
    // port counter.
    use fabriclab_core::tools::imb;
    let spec = one_switch(4, "");
    let mut o = imb_opts(&["Alltoall"], 4);
    o.msglog = Some((10, 12));
    o.env.telemetry_us = Some(5.0);
    let r = imb::run(&spec, &o, 1, None).unwrap();
    let times: std::collections::BTreeSet<u64> =
        r.run.port_samples.iter().map(|s| s.time_ps).collect();
    assert!(times.len() > 10, "{} samples", times.len());
    assert_eq!(r.run.port_samples.len(), times.len() * 8);
    let period: Vec<u64> = times
        .iter()
        .zip(times.iter().skip(1))
        .map(|(a, b)| b - a)
        .collect();
    let (last_gap, whole) = period.split_last().unwrap();
    assert!(whole.iter().all(|&p| p == 5_000_000), "{period:?}");
    assert!(*last_gap > 0 && *last_gap <= 5_000_000, "{period:?}");
    let end_ps = (r.run.sim_time_us * 1e6).round() as u64;
    assert_eq!(*times.last().unwrap(), end_ps);
    for p in &r.run.ports {
        let last = r
            .run
            .port_samples
            .iter()
            .filter(|s| s.node == p.node && s.port == p.port)
            .map(|s| s.tx_bytes)
            .max()
            .unwrap();
        let sent = p.counters.tx_bytes;
        assert_eq!(last, sent, "{} -> {}", p.node, p.peer);
    }
    // Off by default, and a bad period says what to change.
    o.env.telemetry_us = None;
    assert!(imb::run(&spec, &o, 1, None)
        .unwrap()
        .run
        .port_samples
        .is_empty());
    o.env.telemetry_us = Some(0.0);
    let e = imb::run(&spec, &o, 1, None).unwrap_err().to_string();
    assert!(e.contains("telemetry_us"), "{e}");
}

#[test]
fn telemetry_that_would_fill_memory_stops_the_run_with_an_error() {
    // Found by fuzzing: a 1 us period on a long HPL run filled 24 GB. Six
    // rows a sample (four ports, two QPs) every nanosecond reach the row
    // limit (a quarter of the memory available at 400 B a row, at least
    // 100,000) after limit / 6 ns of a 256 MiB transfer that lasts 22 ms;
    // the run stops there and says what to change.
    let spec = one_switch(2, "");
    let (sim, _, outcome) = sampled_write(&spec, 256 << 20, Time::ns(1));
    assert_eq!(outcome, Outcome::Interrupted);
    let limit = sim.net.telemetry_row_limit();
    assert!((100_000..=20_000_000).contains(&limit), "{limit}");
    let rows = sim.net.samples().len() + sim.net.port_samples().len();
    assert!(rows <= limit && rows + 6 > limit, "{rows} of {limit}");
    // The sample that would pass the limit is at (rows / 6) ns.
    assert_eq!(sim.net.now(), Time::ns(rows as u64 / 6));
    let e = sim.net.telemetry_check().unwrap_err().to_string();
    assert!(
        e.contains("telemetry every 0.001 us") && e.contains("sample less often"),
        "{e}"
    );
    // Below the limit, the check passes.
    let (sim, _, outcome) = sampled_write(&spec, 1 << 20, Time::us(1));
    assert_eq!(outcome, Outcome::Finished);
    sim.net.telemetry_check().unwrap();
}

#[test]
fn the_last_sample_is_taken_at_the_runs_end() {
    // 1 MiB h0 -> h1 (about 90 us at 100G) sampled every 60 us: samples at
    // 0 and 60 us, then one at the end, where the bytes sent are the
    // counter's. Without it the rows stopped at 60 us with a third of the
    // flow unsent (QA, 2026-11-29).
    let spec = one_switch(2, "[nic]\nroce_mtu = 4096\n");
    let (mut sim, _, outcome) = sampled_write(&spec, 1 << 20, Time::us(60));
    assert_eq!(outcome, Outcome::Finished);
    sim.net.telemetry_final_sample();
    sim.net.telemetry_final_sample(); // once: a second call adds nothing
    let rows = port_series(&sim.net, "h0", "leaf0");
    let times: Vec<u64> = rows.iter().map(|r| r.time_ps).collect();
    assert_eq!(times, vec![0, 60_000_000, sim.net.now().0]);
    let total = sim.net.port_between("h0", "leaf0").unwrap().tx_bytes;
    assert_eq!(rows.last().unwrap().tx_bytes, total);
}

/// One WRITE of `bytes` h0 -> h1 on `spec`, sampled every `period`, run
/// to its end: the sim, the workload's id and how the run ended.
fn sampled_write(spec: &FabricSpec, bytes: u64, period: Time) -> (Sim, u32, Outcome) {
    let net = Net::new(spec, 1).unwrap();
    let app = Flows::new(&net, &[flow("h0", "h1", bytes)]).unwrap();
    let mut sim = Sim::new(net);
    sim.net.enable_sampling(period);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(None);
    (sim, id, outcome)
}

#[test]
fn telemetry_leaves_the_front_end_as_one_array_per_column() {
    // The same run through the JSON front end: every column has one entry
    // per row, in the rows' order, for the ports and for the QPs.
    use fabriclab_core::front;
    let fabric = fabriclab_core::config::preset_toml("leaf-spine").unwrap();
    let flows = r#"[{"src": "h0", "dst": "h4", "bytes": 262144}]"#;
    let out: serde_json::Value =
        serde_json::from_str(&front::flows_json(fabric, flows, 1, Some(2.0), None, None).unwrap())
            .unwrap();
    let ports = &out["port_samples"];
    let n = ports["time_ps"].as_array().unwrap().len();
    assert!(n > 0);
    for c in [
        "time_ps",
        "node",
        "port",
        "peer",
        "queue_bytes",
        "tx_bytes",
        "paused",
    ] {
        assert_eq!(ports[c].as_array().unwrap().len(), n, "{c}");
    }
    let spec = fabriclab_core::config::preset("leaf-spine").unwrap();
    let net = Net::new(&spec, 1).unwrap();
    let app = Flows::new(&net, &[flow("h0", "h4", 262144)]).unwrap();
    let mut sim = Sim::new(net);
    sim.net.enable_sampling(Time::us(2));
    sim.add_app(Box::new(app));
    assert_eq!(sim.run(None), Outcome::Finished);
    sim.net.telemetry_final_sample(); // as the front end does
    let rows = sim.net.port_sample_rows();
    assert_eq!(rows.len(), n);
    let k = n / 2;
    assert_eq!(ports["node"][k], rows[k].node.as_str());
    assert_eq!(ports["tx_bytes"][k], rows[k].tx_bytes);
    let qps = &out["samples"];
    assert_eq!(
        qps["rate_bps"].as_array().unwrap().len(),
        sim.net.samples().len()
    );
    assert_eq!(qps["qp"].as_array().unwrap().len(), sim.net.samples().len());
}
