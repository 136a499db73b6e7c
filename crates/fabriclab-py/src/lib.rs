//! fabriclab._core: the Rust core behind the `fabriclab` Python package.
//!
//! Thin wrappers over `fabriclab_core::front`: every function takes strings
//! (a fabric is fabric TOML text, a preset's from `preset_toml`; options are JSON) and
//! returns a JSON document as a string, which `fabriclab.api` turns into
//! Python objects. The simulator runs with the GIL released. Core errors
//! become the exception classes of `fabriclab.errors`, mapped in one place
//! (`to_pyerr`). Ctrl-C stops a run within a few ms: the core's loops
//! poll `signalled` and the call raises `KeyboardInterrupt`.

use fabriclab_core::{config, front, interrupt, Error};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use std::sync::Mutex;

// The simulator's large arrays on huge pages (`fabriclab_core::engine::HugePageAlloc`);
// Python's own objects keep Python's allocator.
#[global_allocator]
static ALLOC: fabriclab_core::engine::HugePageAlloc = fabriclab_core::engine::HugePageAlloc;

/// The `fabriclab.errors` class for a core error kind.
fn class_name(kind: &str) -> &'static str {
    match kind {
        "InvalidFabric" => "FabricError",
        "UnknownHost" => "UnknownHostError",
        "InvalidArgument" => "InvalidArgumentError",
        "Parse" => "ParseError",
        "Deadlock" => "DeadlockError",
        "TransportRetry" => "TransportRetryError",
        "Audit" => "AuditError",
        _ => "FabriclabError",
    }
}

/// A core error as an instance of the matching `fabriclab.errors` class,
/// constructed with the message (without the kind prefix).
fn to_pyerr(py: Python<'_>, e: Error) -> PyErr {
    let made = py
        .import("fabriclab.errors")
        .and_then(|m| m.getattr(class_name(e.kind())))
        .and_then(|cls| cls.call1((e.message(),)))
        .and_then(|exc| {
            // What the real tool prints on this failure (perftest's, the
            // MPI library's lines): the CLI shows it before its own line.
            exc.setattr("tool_output", e.tool_output())?;
            // The counters of the run that failed, where the tool kept
            // them (JSON; `fabriclab.errors` reads them on demand).
            exc.setattr("counters_json", e.counters_json())?;
            Ok(exc)
        });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        // fabriclab.errors could not be imported (the extension used on its
        // own): still raise something with the whole message.
        Err(_) => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Run `f` without the GIL and map its error; if the user interrupted it,
/// raise `KeyboardInterrupt` instead of whatever the cut-short run gave.
fn run(py: Python<'_>, f: impl FnOnce() -> Result<String, Error> + Send) -> PyResult<String> {
    let out = py.detach(f);
    if interrupt::take() {
        return Err(stopped(py, out)?);
    }
    out.map_err(|e| to_pyerr(py, e))
}

/// [`run`] for a tool's run, which honours check-only mode
/// ([`set_check_only`]): there it raises the input's error, if any, and
/// otherwise `fabriclab.errors.CheckPassed` (what the cut-short run gave
/// is not a result).
fn run_tool(py: Python<'_>, f: impl FnOnce() -> Result<String, Error> + Send) -> PyResult<String> {
    let out = py.detach(f);
    if interrupt::take() {
        return Err(stopped(py, out)?);
    }
    checked(py, out)?.map_err(|e| to_pyerr(py, e))
}

/// In check-only mode, the end of a tool's call: its input error, or
/// `CheckPassed`. Otherwise `out`, to be finished by the caller.
fn checked(py: Python<'_>, out: Result<String, Error>) -> PyResult<Result<String, Error>> {
    if !interrupt::checking() {
        return Ok(out);
    }
    match out {
        // What a stopped run can still find is its input's errors.
        Err(e) if e.is_input_error() => Err(to_pyerr(py, e)),
        _ => Err(py
            .import("fabriclab.errors")
            .and_then(|m| m.getattr("CheckPassed"))
            .and_then(|cls| cls.call0())
            .map_or_else(|e| e, PyErr::from_value)),
    }
}

/// Turn check-only mode on or off for the calling thread: while it is on,
/// a tool's call checks its input, builds its fabric and simulates
/// nothing, and raises its input error or `CheckPassed`. Calls that are
/// not runs (fabric information, presets) are not affected.
#[pyfunction]
fn set_check_only(on: bool) {
    interrupt::set_checking(on);
}

/// The `KeyboardInterrupt` of a stopped run. What it completed, if its
/// tool reports that (the MPI tools' JSON with `"interrupted": true`,
/// perftest's with the sizes done and `"outcome": "Interrupted"`), rides
/// on it as `partial` for the Python layer.
fn stopped(py: Python<'_>, out: Result<String, Error>) -> PyResult<PyErr> {
    let e = PyKeyboardInterrupt::new_err("interrupted");
    if let Ok(json) = out {
        e.value(py).setattr("partial", json)?;
    }
    Ok(e)
}

/// Like [`run`], handing `f` a progress callback when `progress` is a
/// Python callable: each tick calls it (with the GIL) as
/// `progress(sim_us, events, done, total, unit, label)`. An exception the
/// callable raises stops the run and is raised in place of its result;
/// a `KeyboardInterrupt` (Ctrl-C while the callable ran) stops it as
/// Ctrl-C does anywhere else, with what completed.
/// A tool's run, like [`run_tool`]: it honours check-only mode.
fn run_progress(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    f: impl FnOnce(front::OnTick<'_>) -> Result<String, Error> + Send,
) -> PyResult<String> {
    let failed: Mutex<Option<PyErr>> = Mutex::new(None);
    let out = {
        let (failed, progress) = (&failed, progress.as_ref());
        py.detach(move || {
            let mut tick = progress.map(|callable| {
                move |t: &front::Tick<'_>| {
                    Python::attach(|py| {
                        let mut failed = failed.lock().expect("not poisoned");
                        if failed.is_some() {
                            return;
                        }
                        let args = (t.sim_us, t.events, t.done, t.total, t.unit, t.label);
                        if let Err(e) = callable.call1(py, args) {
                            // A Ctrl-C that lands while the callable runs
                            // is a stop like any other (what completed is
                            // handed over); another exception replaces
                            // the result.
                            if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                                *failed = Some(e);
                            }
                            interrupt::request();
                        }
                    })
                }
            });
            f(tick.as_mut().map(|g| g as &mut dyn FnMut(&front::Tick<'_>)))
        })
    };
    if let Some(e) = failed.into_inner().expect("not poisoned") {
        interrupt::take();
        return Err(e);
    }
    if interrupt::take() {
        return Err(stopped(py, out)?);
    }
    checked(py, out)?.map_err(|e| to_pyerr(py, e))
}

/// The core's interrupt check: run Python's signal handlers (on the main
/// thread; elsewhere this is a no-op) and say whether one raised, as
/// SIGINT's default handler does with `KeyboardInterrupt`.
fn signalled() -> bool {
    Python::attach(|py| py.check_signals().is_err())
}

/// Names of the built-in fabric presets, as a JSON list.
#[pyfunction]
fn presets() -> String {
    front::presets_json()
}

/// The option fields `tool`'s JSON options accept (nested groups as
/// `group.field`), as a JSON list: the schema the Python layer's keyword
/// arguments and scenario keys are tested against.
#[pyfunction]
fn option_fields(py: Python<'_>, tool: &str) -> PyResult<String> {
    front::option_fields_json(tool).map_err(|e| to_pyerr(py, e))
}

/// The nccl-tests programs the core runs, in nccl-tests' order.
#[pyfunction]
fn nccl_tests_programs() -> Vec<&'static str> {
    fabriclab_core::tools::nccl_tests::TESTS.to_vec()
}

/// The TOML text of a preset, calibration comments included.
#[pyfunction]
fn preset_toml(py: Python<'_>, name: &str) -> PyResult<String> {
    config::preset_toml(name)
        .map(str::to_owned)
        .map_err(|e| to_pyerr(py, e))
}

/// A fabric's name, description, hosts, switches, links and normalised TOML,
/// as JSON. `fabric` is fabric TOML text.
#[pyfunction]
fn fabric_info(py: Python<'_>, fabric: String) -> PyResult<String> {
    run(py, || front::fabric_info_json(&fabric))
}

/// Run perftest on `fabric`; `options` is a JSON object of perftest options.
/// Returns the report (text, out_json, tables and figures) as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn perftest(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::perftest_json(&fabric, &options, seed, p)
    })
}

/// Run a JSON list of flows on `fabric`. `sample_us` turns on per-QP
/// telemetry; `limit_us` bounds simulated time; `progress` is called with
/// the flows completed. Returns JSON.
#[pyfunction]
#[pyo3(signature = (fabric, flows, seed=1, sample_us=None, limit_us=None, progress=None))]
fn flows(
    py: Python<'_>,
    fabric: String,
    flows: String,
    seed: u64,
    sample_us: Option<f64>,
    limit_us: Option<f64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::flows_json(&fabric, &flows, seed, sample_us, limit_us, p)
    })
}

/// Run benchmark `name` (one of `fabriclab_core::bench::BENCHES`) with
/// congestion control `cc` ("", "none" or "dcqcn") on `backend` ("" or
/// "packet", or "flow"); `progress` is called on each progress tick.
/// Returns JSON.
#[pyfunction]
#[pyo3(name = "bench", signature = (name, cc="", progress=None, backend=""))]
fn run_bench(
    py: Python<'_>,
    name: &str,
    cc: &str,
    progress: Option<Py<PyAny>>,
    backend: &str,
) -> PyResult<String> {
    let (name, cc, backend) = (name.to_owned(), cc.to_owned(), backend.to_owned());
    run_progress(py, progress, |p| front::bench_json(&name, &cc, &backend, p))
}

/// Check fabric TOML text as every run does (sections and graph).
#[pyfunction]
fn fabric_check(py: Python<'_>, fabric: String) -> PyResult<()> {
    run(py, || front::fabric_check(&fabric).map(|()| String::new())).map(|_| ())
}

/// The TOML text of `fabric` with `[sim] backend` set to `backend`.
#[pyfunction]
fn fabric_with_backend(py: Python<'_>, fabric: String, backend: String) -> PyResult<String> {
    run(py, || front::fabric_with_backend(&fabric, &backend))
}

/// Run Intel MPI Benchmarks on `fabric`; `options` is a JSON object of IMB
/// options (benchmarks, np, ppn, hosts, msglog, npmin, iter, root_shift,
/// algorithms). Returns the report (IMB text and figures) as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn imb(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::imb_json(&fabric, &options, seed, p)
    })
}

/// Run an OSU micro-benchmark on `fabric`; `options` is a JSON object of
/// OSU options (test, np, ppn, hosts, sizes, iterations, warmup, full).
/// Returns the report (OSU text and figures) as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn osu(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::osu_json(&fabric, &options, seed, p)
    })
}

/// Run an nccl-tests program on `fabric` (a fabric of GPU servers);
/// `options` is a JSON object of nccl-tests options (test, nodes,
/// gpus_per_node, min_bytes, max_bytes, step_factor, iters, ..., nccl).
/// Returns the report (nccl-tests text and figures) as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn nccl_tests(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::nccl_tests_json(&fabric, &options, seed, p)
    })
}

/// Run a Cbench rotate test on `fabric`; `options` is a JSON object of
/// Cbench options (test, np, ppn, hosts, bytes, iterations, tests,
/// rotations). Returns the report (Cbench text and figures) as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn cbench(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::cbench_json(&fabric, &options, seed, p)
    })
}

/// Run iperf3 on `fabric`; `options` is a JSON object of iperf options
/// (client, server, parallel, bitrate_bps, time_s, interval_s, length,
/// congestion, background). Returns the text, the `-J` document, tables and
/// the report as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1))]
fn iperf(py: Python<'_>, fabric: String, options: String, seed: u64) -> PyResult<String> {
    run_tool(py, || front::iperf_json(&fabric, &options, seed))
}

/// Run fio on `fabric`; `options` is a JSON object of fio options (name,
/// rw, bs, iodepth, numjobs, runtime_s, ramp_time_s, clients, targets and
/// the target model). Returns fio's text and JSON output, the port table
/// and the report as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn fio(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::fio_json(&fabric, &options, seed, p)
    })
}

/// Run HPL on `fabric`; `options` is a JSON object of HPL options (the
/// HPL.dat settings or its text in `hpl_dat`, the job, dgemm_gflops,
/// pfact_gflops, samples). Returns HPL's text, the port table and the
/// report as JSON.
#[pyfunction]
#[pyo3(signature = (fabric, options, seed=1, progress=None))]
fn hpl(
    py: Python<'_>,
    fabric: String,
    options: String,
    seed: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    run_progress(py, progress, |p| {
        front::hpl_json(&fabric, &options, seed, p)
    })
}

/// The Rust core of fabriclab (use the `fabriclab` package, not this).
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    interrupt::set_check(signalled);
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(preset_toml, m)?)?;
    m.add_function(wrap_pyfunction!(option_fields, m)?)?;
    m.add_function(wrap_pyfunction!(nccl_tests_programs, m)?)?;
    m.add_function(wrap_pyfunction!(fabric_info, m)?)?;
    m.add_function(wrap_pyfunction!(fabric_check, m)?)?;
    m.add_function(wrap_pyfunction!(set_check_only, m)?)?;
    m.add_function(wrap_pyfunction!(perftest, m)?)?;
    m.add_function(wrap_pyfunction!(flows, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    m.add_function(wrap_pyfunction!(fabric_with_backend, m)?)?;
    m.add_function(wrap_pyfunction!(imb, m)?)?;
    m.add_function(wrap_pyfunction!(osu, m)?)?;
    m.add_function(wrap_pyfunction!(nccl_tests, m)?)?;
    m.add_function(wrap_pyfunction!(cbench, m)?)?;
    m.add_function(wrap_pyfunction!(iperf, m)?)?;
    m.add_function(wrap_pyfunction!(fio, m)?)?;
    m.add_function(wrap_pyfunction!(hpl, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
