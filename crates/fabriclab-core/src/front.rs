//! The JSON front door used by the Python bindings (and usable from any
//! language): every function takes strings and returns a JSON document, so
//! the binding layer stays a few lines per function.
//!
//! A `fabric` argument is the TOML text of a fabric. A preset's text comes
//! from its own entry point ([`crate::config::preset_toml`], Python's
//! `_core.preset_toml`), so a name and a text are never told apart by
//! guessing.

use crate::config::{preset_names, CcAlgorithm, FabricSpec};
use crate::error::{Error, Result};
use crate::net::Net;
use crate::report;
use crate::sim::Sim;
use crate::traffic::flows::{FlowSpec, Flows};
use crate::traffic::perftest;
use crate::units::Time;
use serde_json::json;

/// Fabric TOML text, parsed and validated.
pub fn resolve_fabric(fabric: &str) -> Result<FabricSpec> {
    FabricSpec::from_toml(fabric)
}

/// Check `fabric` (fabric TOML text) as every run does, without running
/// anything: its sections and its graph.
pub fn fabric_check(fabric: &str) -> Result<()> {
    resolve_fabric(fabric).map(|_| ())
}

/// The TOML text of `fabric` (fabric TOML text) with
/// `[sim] backend` set to `backend` ("packet" or "flow"), validated.
pub fn fabric_with_backend(fabric: &str, backend: &str) -> Result<String> {
    let mut spec = resolve_fabric(fabric)?;
    spec.sim.backend = crate::config::Backend::parse(backend)?;
    spec.validate()?;
    Ok(spec.to_toml())
}

/// The option fields `tool`'s JSON options accept, as a JSON list
/// ([`crate::option_fields`]).
pub fn option_fields_json(tool: &str) -> Result<String> {
    let fields = crate::option_fields::option_fields(tool)?;
    Ok(serde_json::to_string(&fields).expect("a list of strings"))
}

/// Names of the presets, as a JSON list.
pub fn presets_json() -> String {
    serde_json::to_string(&preset_names()).expect("json")
}

/// A fabric's hosts, switches and links.
pub fn fabric_info_json(fabric: &str) -> Result<String> {
    let spec = resolve_fabric(fabric)?;
    let net = Net::new(&spec, 1)?;
    let t = net.topology();
    let names = |host: bool| -> Vec<&str> {
        t.nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| (*i < t.n_hosts) == host)
            .map(|(_, n)| n.name.as_str())
            .collect()
    };
    let links: Vec<_> = t
        .links
        .iter()
        .map(|l| {
            json!({
                "a": t.nodes[l.a].name, "b": t.nodes[l.b].name,
                "gbps": l.rate.as_gbps_f64(), "delay_ns": l.delay.as_ns_f64(),
            })
        })
        .collect();
    // The DCQCN parameters in force (preset and overrides resolved), where
    // RoCE QPs run DCQCN (not on the flow backend, which has no queues).
    let dcqcn = if spec.transport.is_roce()
        && spec.cc.algorithm == CcAlgorithm::Dcqcn
        && spec.sim.backend == crate::config::Backend::Packet
    {
        serde_json::to_value(spec.cc.dcqcn()?).expect("json")
    } else {
        serde_json::Value::Null
    };
    Ok(json!({
        "name": spec.name,
        "description": spec.description,
        "hosts": names(true),
        "switches": names(false),
        "links": links,
        "toml": spec.to_toml(),
        "dcqcn": dcqcn,
        "backend": spec.sim.backend.name(),
    })
    .to_string())
}

/// Run perftest; `options` is the JSON form of [`perftest::Options`].
pub fn perftest_json(
    fabric: &str,
    options: &str,
    seed: u64,
    progress: OnTick<'_>,
) -> Result<String> {
    let spec = resolve_fabric(fabric)?;
    let opts: perftest::Options = parse_options("perftest options", options)?;
    let mut p = progress.map(|f| {
        move |t: Time, ev: u64, done: f64, total: f64, unit: &'static str, label: &str| {
            f(&Tick {
                sim_us: t.as_us_f64(),
                events: ev,
                done,
                total: Some(total),
                unit,
                label,
            })
        }
    });
    let cb = p
        .as_mut()
        .map(|f| f as &mut dyn FnMut(Time, u64, f64, f64, &'static str, &str));
    let r = perftest::run_with_progress(&spec, &opts, seed, cb)?;
    report_json(
        &spec,
        [
            ("test", opts.test.name().into()),
            ("text", report::perftest::text(&r).into()),
            ("out_json", report::perftest::json(&r).into()),
            (
                "ports_table",
                report::table::ports(&r.ports, spec.sim.backend).into(),
            ),
            (
                "qps_table",
                report::table::qps(&r.qps, spec.sim.backend).into(),
            ),
        ],
        &r,
    )
}

/// A tool's result as JSON: the backend, its texts (strings, or lists of
/// them) and its report, the report written field by field, never through
/// a `serde_json::Value` tree (it may hold a row per QP or telemetry rows,
/// by the million).
fn report_json<const N: usize>(
    spec: &FabricSpec,
    texts: [(&'static str, serde_json::Value); N],
    report: &impl serde::Serialize,
) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Out<'a, R> {
        backend: &'a str,
        #[serde(flatten)]
        texts: std::collections::BTreeMap<&'static str, serde_json::Value>,
        report: &'a R,
    }
    to_json(&Out {
        backend: spec.sim.backend.name(),
        texts: texts.into_iter().collect(),
        report,
    })
}

/// Run iperf3; `options` is the JSON form of
/// [`crate::traffic::iperf::Options`]. Returns the client's text, the `-J`
/// document, the report, and port and TCP counter tables.
pub fn iperf_json(fabric: &str, options: &str, seed: u64) -> Result<String> {
    let spec = resolve_fabric(fabric)?;
    let opts: crate::traffic::iperf::Options = parse_options("iperf options", options)?;
    let r = crate::traffic::iperf::run(&spec, &opts, seed)?;
    report_json(
        &spec,
        [
            ("text", report::iperf::text(&r).into()),
            ("json", report::iperf::json(&r).into()),
            (
                "ports_table",
                report::table::ports(&r.ports, spec.sim.backend).into(),
            ),
            (
                "tcp_table",
                report::table::tcp(&r.tcp, spec.sim.backend).into(),
            ),
        ],
        &r,
    )
}

/// Run a set of flows; `flows` is a JSON list of [`FlowSpec`].
/// `sample_us` turns on per-QP telemetry; `limit_us` bounds simulated time;
/// `progress` gets the flows completed every 2^20 events and at the end.
pub fn flows_json(
    fabric: &str,
    flows: &str,
    seed: u64,
    sample_us: Option<f64>,
    limit_us: Option<f64>,
    mut progress: OnTick<'_>,
) -> Result<String> {
    let spec = resolve_fabric(fabric)?;
    let specs: Vec<FlowSpec> = parse_options("flows", flows)?;
    if !specs.is_empty() && specs.iter().all(|s| s.repeat) && limit_us.is_none() {
        return Err(Error::InvalidArgument(
            "every flow repeats, so nothing would end the run: give a time limit \
             (--limit-us, limit_us=) or a flow that does not repeat"
                .into(),
        ));
    }
    let mut net = Net::new(&spec, seed)?;
    let app = Flows::new(&net, &specs)?;
    if let Some(s) = sample_us {
        if !(s.is_finite() && s >= 0.001) {
            return Err(Error::InvalidArgument(format!(
                "sample period must be at least 0.001 us, got {s} us"
            )));
        }
        net.telemetry_supported()?;
        net.enable_sampling(Time::from_ns_f64(s * 1e3));
    }
    let limit = match limit_us {
        Some(l) if !(l.is_finite() && l > 0.0) => {
            return Err(Error::InvalidArgument(format!(
                "time limit must be positive, got {l} us"
            )))
        }
        Some(l) if l > crate::config::MAX_SETTING_US => {
            return Err(Error::InvalidArgument(format!(
                "time limit {} us is longer than any run (at most {:e} us)",
                crate::config::show_f64(l),
                crate::config::MAX_SETTING_US
            )))
        }
        Some(l) => Some(Time::from_ns_f64(l * 1e3)),
        None => None,
    };
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    // Every 2^20 events, then once at the end ("done", as the MPI tools).
    let mut tick = |s: &Sim, label: &str| {
        if let Some(f) = progress.as_mut() {
            let (done, total) = s.app::<Flows>(id).expect("flows").progress();
            f(&Tick {
                sim_us: s.net.now().as_us_f64(),
                events: s.net.events_processed(),
                done: done as f64,
                total: Some(total as f64),
                unit: "flows",
                label,
            });
        }
    };
    let outcome = sim.run_watched(limit, &mut |s: &Sim| tick(s, "flows"));
    sim.net.audit_check()?;
    sim.net.telemetry_check()?;
    sim.net.telemetry_final_sample();
    tick(&sim, "done");
    let res = sim.app::<Flows>(id).expect("flows").results();
    let unfinished = (res.iter())
        .filter(|f| f.completed_ps.is_none() && f.failed_ps.is_none())
        .count();
    let stall_error = (outcome == crate::sim::Outcome::Stalled && unfinished > 0).then(|| {
        format!(
            "{unfinished} of {} flow(s) never finished: the run stalled at {:.3} us with \
             nothing left to happen ({})",
            res.len(),
            sim.net.now().as_us_f64(),
            sim.net.stall_hint()
        )
    });
    let ports = sim.net.port_reports();
    let qps = sim.net.qp_reports();
    let port_samples = sim.net.port_sample_rows();
    /// Field by field, never through a `serde_json::Value` tree (a million
    /// flows, or telemetry rows by the million).
    #[derive(serde::Serialize)]
    struct Out<'a> {
        backend: &'a str,
        deadlock_error: Option<String>,
        /// With outcome "Stalled" and flows unfinished: why, for the
        /// command line's error.
        stall_error: Option<String>,
        /// What the run did that the user may not have meant (lossless
        /// drops), one line each.
        notes: Vec<String>,
        deadlocks: &'a [crate::net::Deadlock],
        events: u64,
        flow_stats: Option<&'a crate::net::FlowStats>,
        #[serde(serialize_with = "crate::traffic::flows::results_as_columns")]
        flows: Vec<crate::traffic::flows::FlowResult>,
        outcome: crate::sim::Outcome,
        #[serde(serialize_with = "crate::net::port_rows_as_columns")]
        port_samples: &'a [crate::net::PortSampleRow],
        #[serde(serialize_with = "crate::net::port_reports_as_columns")]
        ports: &'a [crate::net::PortReport],
        ports_table: String,
        qp_failures: &'a [crate::net::QpFailure],
        #[serde(serialize_with = "crate::net::qp_reports_as_columns")]
        qps: &'a [crate::net::QpReport],
        #[serde(serialize_with = "crate::net::qp_rows_as_columns")]
        samples: &'a [crate::net::Sample],
        sim_time_ps: u64,
    }
    to_json(&Out {
        backend: spec.sim.backend.name(),
        deadlock_error: (outcome == crate::sim::Outcome::Deadlock)
            .then(|| sim.net.deadlock_error().message().to_string()),
        stall_error,
        notes: (sim.net.headroom_note().into_iter())
            .chain(link_failures_note(sim.net.flow_stats()))
            .chain(late_failures_note(&spec, sim.net.now()))
            .collect(),
        deadlocks: sim.net.deadlocks(),
        events: sim.net.events_processed(),
        flow_stats: sim.net.flow_stats(),
        flows: res,
        outcome,
        port_samples: &port_samples,
        ports: &ports,
        ports_table: report::table::ports(&ports, spec.sim.backend),
        qp_failures: sim.net.qp_failures(),
        qps: &qps,
        samples: sim.net.samples(),
        sim_time_ps: sim.net.now().0,
    })
}

/// One progress report of a long run, handed to the caller's callback
/// every 2^20 events or so and once at the end (the Python layer draws it
/// as a progress bar or a line).
#[derive(Clone, Debug)]
pub struct Tick<'a> {
    /// Simulated time, us.
    pub sim_us: f64,
    /// Events processed so far.
    pub events: u64,
    /// Work done, in `unit`s.
    pub done: f64,
    /// Work in all, when known beforehand.
    pub total: Option<f64>,
    /// What `done` counts: "measurements" (IMB, OSU, Cbench: one per
    /// message size and process count), "calls" (HPL), "ms" (fio's
    /// simulated run time), "us" (a benchmark's simulated time), "flows"
    /// (flows completed), "iterations" (perftest's messages completed;
    /// with `-D`, "us" of its simulated time).
    pub unit: &'static str,
    /// What runs now (the measurement, or the benchmark's name).
    pub label: &'a str,
}

/// A caller's progress callback (none: no progress).
pub type OnTick<'a> = Option<&'a mut dyn FnMut(&Tick<'_>)>;

/// Run a benchmark (see [`crate::bench`]), reporting progress to
/// `progress`.
pub fn bench_json(name: &str, cc: &str, backend: &str, progress: OnTick<'_>) -> Result<String> {
    let mut p = progress.map(|f| {
        move |t: Time, ev: u64| {
            let us = t.as_us_f64();
            f(&Tick {
                sim_us: us,
                events: ev,
                done: us,
                total: None,
                unit: "us",
                label: name,
            })
        }
    });
    let cb = p.as_mut().map(|f| f as &mut dyn FnMut(Time, u64));
    let backend = if backend.is_empty() {
        crate::config::Backend::Packet
    } else {
        crate::config::Backend::parse(backend)?
    };
    let r = crate::bench::run_on(name, cc, backend, cb)?;
    Ok(serde_json::to_string(&r).expect("json"))
}

/// Parse `options` as `O`, run `run` on the fabric with an optional
/// progress printer, and return `{text, iperf_text, ports_table, report}`
/// (what every MPI benchmark driver returns; `tool` names it in errors).
fn run_mpi_json<O, R: serde::Serialize>(
    fabric: &str,
    options: &str,
    tool: &str,
    progress: OnTick<'_>,
    run: impl FnOnce(&FabricSpec, &O, Option<crate::mpi::run::Progress<'_>>) -> Result<R>,
    text: impl FnOnce(&FabricSpec, &R) -> String,
    parts: impl FnOnce(
        &R,
    ) -> (
        &[crate::traffic::iperf::Report],
        &[crate::net::PortReport],
        &[crate::net::QpReport],
    ),
) -> Result<String>
where
    O: serde::de::DeserializeOwned,
{
    let spec = resolve_fabric(fabric)?;
    let opts: O = parse_options(&format!("{tool} options"), options)?;
    // HPL runs one long phase whose calls are the progress; the others
    // one phase per measurement.
    let unit = if tool == "HPL" {
        "calls"
    } else {
        "measurements"
    };
    let mut p = progress.map(|f| {
        move |t: Time, ev: u64, done: usize, total: usize, label: &str| {
            f(&Tick {
                sim_us: t.as_us_f64(),
                events: ev,
                done: done as f64,
                total: Some(total as f64),
                unit,
                label,
            })
        }
    });
    let cb = p
        .as_mut()
        .map(|f| f as &mut dyn FnMut(Time, u64, usize, usize, &str));
    let r = run(&spec, &opts, cb)?;
    let (iperf, ports, qps) = parts(&r);
    report_json(
        &spec,
        [
            ("text", text(&spec, &r).into()),
            ("notes", losses_notes(&spec, ports, qps).into()),
            (
                "iperf_text",
                iperf
                    .iter()
                    .map(report::iperf::text)
                    .collect::<Vec<_>>()
                    .into(),
            ),
            (
                "ports_table",
                report::table::ports(ports, spec.sim.backend).into(),
            ),
        ],
        &r,
    )
}

/// `value` as JSON text, written straight from its fields.
fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::InvalidArgument(format!("the result could not be written as JSON: {e}"))
    })
}

/// Run Intel MPI Benchmarks; `options` is the JSON form of
/// [`crate::tools::imb::Options`]. Progress lines go to stderr when
/// `progress` is true.
pub fn imb_json(fabric: &str, options: &str, seed: u64, progress: OnTick<'_>) -> Result<String> {
    use crate::tools::imb;
    run_mpi_json(
        fabric,
        options,
        "IMB",
        progress,
        |spec, o: &imb::Options, cb| imb::run(spec, o, seed, cb),
        |spec, r| {
            let name = if spec.name.is_empty() {
                "custom fabric"
            } else {
                &spec.name
            };
            report::imb::text(r, name, spec.sim.backend)
        },
        |r| (&r.run.iperf, &r.run.ports, &r.run.qps),
    )
}

/// Run an OSU micro-benchmark; `options` is the JSON form of
/// [`crate::tools::osu::Options`].
pub fn osu_json(fabric: &str, options: &str, seed: u64, progress: OnTick<'_>) -> Result<String> {
    use crate::tools::osu;
    run_mpi_json(
        fabric,
        options,
        "OSU",
        progress,
        |spec, o: &osu::Options, cb| osu::run(spec, o, seed, cb),
        |_, r| report::osu::text(r),
        |r| (&r.run.iperf, &r.run.ports, &r.run.qps),
    )
}

/// Run an nccl-tests program; `options` is the JSON form of
/// [`crate::tools::nccl_tests::Options`].
pub fn nccl_tests_json(
    fabric: &str,
    options: &str,
    seed: u64,
    progress: OnTick<'_>,
) -> Result<String> {
    use crate::tools::nccl_tests;
    run_mpi_json(
        fabric,
        options,
        "nccl-tests",
        progress,
        |spec, o: &nccl_tests::Options, cb| nccl_tests::run(spec, o, seed, cb),
        |_, r| report::nccl_tests::text(r),
        |r| (&r.run.iperf, &r.run.ports, &r.run.qps),
    )
}

/// Run a Cbench rotate test; `options` is the JSON form of
/// [`crate::tools::cbench::Options`].
pub fn cbench_json(fabric: &str, options: &str, seed: u64, progress: OnTick<'_>) -> Result<String> {
    use crate::tools::cbench;
    run_mpi_json(
        fabric,
        options,
        "Cbench",
        progress,
        |spec, o: &cbench::Options, cb| cbench::run(spec, o, seed, cb),
        |_, r| report::cbench::text(r),
        |r| (&r.run.iperf, &r.run.ports, &r.run.qps),
    )
}

/// Run HPL; `options` is the JSON form of
/// [`crate::tools::hpl::Options`]. Returns HPL's text, the port table
/// and the report.
pub fn hpl_json(fabric: &str, options: &str, seed: u64, progress: OnTick<'_>) -> Result<String> {
    use crate::tools::hpl;
    run_mpi_json(
        fabric,
        options,
        "HPL",
        progress,
        |spec, o: &hpl::Options, cb| hpl::run(spec, o, seed, cb),
        |_, r| report::hpl::text(r),
        |r| (&r.iperf, &r.ports, &r.qps),
    )
}

/// Run fio; `options` is the JSON form of [`crate::tools::fio::Options`].
/// Returns fio's text, its JSON document, the port table and the report;
/// progress lines (simulated time against the run's end) go to stderr
/// when `progress` is true.
pub fn fio_json(fabric: &str, options: &str, seed: u64, progress: OnTick<'_>) -> Result<String> {
    use crate::tools::fio;
    let spec = resolve_fabric(fabric)?;
    let opts: fio::Options = parse_options("fio options", options)?;
    let total_ms = (opts.ramp_time_s + opts.runtime_s) * 1e3;
    let mut p = progress.map(|f| {
        move |t: Time, ev: u64| {
            f(&Tick {
                sim_us: t.as_us_f64(),
                events: ev,
                done: t.as_us_f64() / 1e3,
                total: Some(total_ms),
                unit: "ms",
                label: "fio",
            })
        }
    });
    let cb = p.as_mut().map(|f| f as &mut dyn FnMut(Time, u64));
    let r = fio::run_with_progress(&spec, &opts, seed, cb)?;
    report_json(
        &spec,
        [
            ("text", report::fio::text(&r).into()),
            ("json", report::fio::json(&r).into()),
            (
                "ports_table",
                report::table::ports(&r.ports, spec.sim.backend).into(),
            ),
        ],
        &r,
    )
}

/// A tool's options from their JSON (nothing may follow it); an error
/// names the option (its path, as `size` or `background[0].bytes`) and
/// says what it takes, in words rather than Rust types or JSON positions.
fn parse_options<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let err = options_err(what, e.inner());
        match (err, path.as_str()) {
            (Error::InvalidArgument(msg), p) if p != "." && p != "?" => {
                let tail = msg
                    .strip_prefix(&format!("{what}: "))
                    .unwrap_or(&msg)
                    .to_string();
                Error::InvalidArgument(format!("{what}: {p}: {tail}"))
            }
            (err, _) => err,
        }
    })?;
    de.end().map_err(|e| options_err(what, &e))?;
    Ok(value)
}

/// An option the JSON front door could not take, in the user's terms: the
/// JSON is written by the Python layer, not by the user, so its line and
/// column say nothing, and "unknown variant" is the parser's word for a
/// value that is not one of the choices.
fn options_err(what: &str, e: &serde_json::Error) -> Error {
    let mut msg = e.to_string();
    if let Some(i) = msg.rfind(" at line ") {
        msg.truncate(i);
    }
    // A whole number beyond every integer type reaches serde as a float.
    const FLOAT: &str = "invalid type: floating point `";
    if let Some(rest) = msg.strip_prefix(FLOAT) {
        let num = rest.split('`').next().unwrap_or("");
        if num
            .parse::<f64>()
            .is_ok_and(|x| x.fract() == 0.0 && x.abs() >= 9.2e18)
        {
            msg = format!(
                "invalid value: `{num}` is too large{}",
                &rest[num.len() + 1..]
            );
        }
    }
    let msg = msg
        .replace("unknown variant `", "unknown value `")
        .replace("`, expected one of ", "`; use one of ")
        .replace("`, expected `", "`; use `");
    let msg = crate::error::types_in_words(&msg);
    Error::InvalidArgument(format!("{what}: {msg}"))
}

/// On the flow backend, the note that the run's link failures were
/// approximated (none when it had none, or ran on the packet engine).
fn link_failures_note(stats: Option<&crate::net::FlowStats>) -> Option<String> {
    let n = stats?.link_events_approximated;
    (n > 0).then(|| {
        format!(
            "flow backend: the link failures were approximated ({n} capacity changes, one per \
             direction of a cable going down or coming back): capacity 0 while down, flows \
             re-routed at convergence; no detection, losses or retransmission (--backend packet \
             gives the transient)"
        )
    })
}

/// Notes on an MPI job that lost packets or waited on RC timeouts: a
/// benchmark's tables show such a stall only if it fell inside a timed
/// loop, so the notes say it happened (with the job's simulated time).
fn losses_notes(
    spec: &FabricSpec,
    ports: &[crate::net::PortReport],
    qps: &[crate::net::QpReport],
) -> Vec<String> {
    let mut notes = Vec::new();
    let lost: u64 = ports.iter().map(|p| p.counters.lost_packets).sum();
    if lost > 0 {
        notes.push(format!(
            "{lost} packet(s) were lost to link failures ([[link_failures]]; the lost column \
             of --counters says where)"
        ));
    }
    let timed_out: Vec<u64> = (qps.iter())
        .map(|q| q.counters.timeouts)
        .filter(|&t| t > 0)
        .collect();
    if !timed_out.is_empty() {
        let each = if spec.is_iwarp() {
            "TCP's own retransmission timeouts (iWARP)".to_string()
        } else {
            format!(
                "{:.3} us each (nic.ack_timeout_exponent = {})",
                4.096 * 2f64.powi(spec.nic.ack_timeout_exponent as i32),
                spec.nic.ack_timeout_exponent
            )
        };
        notes.push(format!(
            "{} retransmission timeout(s) on {} QP(s), {each}: the job waited on them, and a \
             benchmark's figures show them only where they fell inside its timed loops",
            timed_out.iter().sum::<u64>(),
            timed_out.len(),
        ));
    }
    notes
}

/// The note that some `[[link_failures]]` came after the run ended
/// (`end`), so the results do not show them.
fn late_failures_note(spec: &FabricSpec, end: Time) -> Option<String> {
    let late: Vec<String> = (spec.link_failures.iter().enumerate())
        .filter(|(_, f)| Time::from_ns_f64(f.down_us * 1e3) > end)
        .map(|(i, f)| format!("link_failures[{i}] ({}-{} at {} us)", f.a, f.b, f.down_us))
        .collect();
    (!late.is_empty()).then(|| {
        format!(
            "{} came after the run ended at {:.3} us and had no effect",
            late.join(", "),
            end.as_us_f64()
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failure_after_the_runs_end_gets_a_note() {
        let mut spec = crate::config::preset("leaf-spine").unwrap();
        let f = |down_us| crate::config::LinkFailure {
            a: "spine0".into(),
            b: "leaf1".into(),
            index: None,
            down_us,
            up_us: None,
        };
        spec.link_failures = vec![f(10.0), f(1e9)];
        let note = super::late_failures_note(&spec, super::Time::from_ns_f64(88_744.0)).unwrap();
        assert_eq!(
            note,
            "link_failures[1] (spine0-leaf1 at 1000000000 us) came after the run ended at \
             88.744 us and had no effect"
        );
        spec.link_failures.pop();
        assert!(super::late_failures_note(&spec, super::Time::from_ns_f64(88_744.0)).is_none());
    }

    #[test]
    fn an_option_error_names_the_option_and_what_it_takes() {
        let heps = crate::config::preset_toml("heps").unwrap();
        let perftest_err = |extra: &str| {
            let opts =
                format!(r#"{{"test": "ib_write_bw", "client": "h0", "server": "h1", {extra}}}"#);
            super::perftest_json(heps, &opts, 1, None)
                .unwrap_err()
                .to_string()
        };
        let e = perftest_err(r#""size": -1"#);
        assert!(
            e.contains("perftest options: size: invalid value: integer `-1`, expected a whole number from 0 to"),
            "{e}"
        );
        // Beyond 2^64: serde sees a float; the message says it is too large.
        let e = perftest_err(r#""iters": 99999999999999999999999"#);
        assert!(
            e.contains("perftest options: iters: invalid value: `1e+23` is too large, expected a whole number from 0 to 18446744073709551615"),
            "{e}"
        );
        let e = super::flows_json(
            heps,
            r#"[{"src": "h0", "dst": "h1", "bytes": 1}, {"src": "h0", "dst": "h1", "bytes": 1.5}]"#,
            1,
            None,
            None,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("flows: [1].bytes: invalid type: floating point `1.5`"),
            "{e}"
        );
        // Nothing may follow the options (serde_json::from_str's rule).
        let trailing =
            r#"{"test": "ib_write_bw", "client": "h0", "server": "h1", "iters": 5} junk"#;
        assert!(super::perftest_json(heps, trailing, 1, None).is_err());
    }

    #[test]
    fn option_errors_speak_of_values_not_json_positions() {
        let e = super::perftest_json(
            crate::config::preset_toml("heps").unwrap(),
            r#"{"test": "ib_wirte_bw", "client": "h0", "server": "h1"}"#,
            1,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("unknown value `ib_wirte_bw`; use one of `ib_write_bw`"),
            "{e}"
        );
        assert!(!e.contains("line 1") && !e.contains("variant"), "{e}");
    }

    #[test]
    fn the_flow_backends_tables_say_n_a_where_it_models_nothing() {
        let heps = crate::config::preset_toml("heps").unwrap();
        let opts = r#"{"test": "ib_write_bw", "client": "h0", "server": "h4", "iters": 20}"#;
        let table = |backend: &str, key: &str| -> String {
            let fabric = super::fabric_with_backend(heps, backend).unwrap();
            let out: serde_json::Value =
                serde_json::from_str(&super::perftest_json(&fabric, opts, 1, None).unwrap())
                    .unwrap();
            out[key].as_str().unwrap().to_string()
        };
        // h0's port: tx_bytes, rx_bytes, then drops ... peak_buf_KB.
        let row = |t: &str| -> Vec<String> {
            let line = t.lines().find(|l| l.starts_with("h0 ")).unwrap();
            line.split_whitespace().map(str::to_string).collect()
        };
        let packet = row(&table("packet", "ports_table"));
        let flow = row(&table("flow", "ports_table"));
        assert_eq!(packet[5..], ["0", "0", "0", "0", "0.000", "0.0", "0.0"]);
        assert_eq!(flow[5..], ["n/a"; 7]);
        assert!(flow[3].parse::<u64>().unwrap() > 0, "tx_bytes is modelled");
        // QPs: retx, CNPs and the rate limiter's rate.
        let qp = |t: &str| -> Vec<String> {
            let line = t.lines().nth(1).unwrap();
            line.split_whitespace().map(str::to_string).collect()
        };
        assert_eq!(
            qp(&table("packet", "qps_table"))[5..],
            ["0", "0", "0", "100.00"]
        );
        assert_eq!(qp(&table("flow", "qps_table"))[5..], ["n/a"; 4]);
    }

    #[test]
    fn a_preset_name_is_not_fabric_text() {
        // Names come through their own entry point (`preset_toml`); the
        // front door reads what it is given as TOML.
        let e = super::fabric_info_json("heps").unwrap_err().to_string();
        assert!(e.contains("TOML"), "{e}");
        let text = crate::config::preset_toml("heps").unwrap();
        assert!(super::fabric_info_json(text).is_ok());
    }
}
