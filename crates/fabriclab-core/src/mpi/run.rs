//! Running an MPI [`Program`] on a fabric: build the network, place the
//! job, add background traffic (flows that repeat for as long as the job
//! runs), run to completion with optional progress, and collect what the
//! benchmark drivers need.

use super::job::{Job, JobSpec};
use super::program::{Phase, PhaseResult, Program};
use super::runtime::MpiCounters;
use super::sched::Schedule;
use super::select::Library;
use crate::config::FabricSpec;
use crate::error::{Error, Result};
use crate::net::{Net, PortReport, PortSampleRow, QpReport};
use crate::sim::{Outcome, Sim};
use crate::traffic::flows::{FlowSpec, Flows};
use crate::traffic::iperf::{self, Iperf};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// What a run produced.
#[derive(Clone, Debug)]
pub struct ProgramRun {
    /// Per phase.
    pub phases: Vec<PhaseResult>,
    /// Counters, times and background runs, as the reports give them.
    pub summary: RunSummary,
}

/// What every MPI tool reports about the run beside its own tables: the
/// end of IMB's, OSU's and Cbench's reports (flattened into them, so the
/// JSON keeps one level) and the source of HPL's.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// MPI runtime counters.
    pub mpi: MpiCounters,
    /// Port counters at the end; in JSON one array per column.
    #[serde(serialize_with = "crate::net::port_reports_as_columns")]
    pub ports: Vec<PortReport>,
    /// Port telemetry (with `telemetry_us`), every port every period; in
    /// JSON one array per column.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::net::port_rows_as_columns"
    )]
    pub port_samples: Vec<PortSampleRow>,
    /// QP counters at the end (the job's and background flows'); in JSON one array per column.
    #[serde(serialize_with = "crate::net::qp_reports_as_columns")]
    pub qps: Vec<QpReport>,
    /// Simulated time at the end, us.
    pub sim_time_us: f64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Background iperf runs, in the order given.
    pub iperf: Vec<iperf::Report>,
    /// The run was stopped (Ctrl-C) before its end: the tool's tables hold
    /// the measurements that completed. Absent from the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// What runs beside an MPI job and what is recorded of it, shared by every
/// MPI tool's options (nested as `env`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEnv {
    /// Other traffic on the fabric during the run (flows, usually with
    /// `repeat = true`), e.g. an incast beside the job.
    #[serde(default)]
    pub background: Vec<FlowSpec>,
    /// iperf3 TCP traffic during the run (each a client/server pair with
    /// its streams, rate and duration; it stops with the job).
    #[serde(default)]
    pub background_iperf: Vec<iperf::Options>,
    /// Sample every port's queue, bytes sent and pause state every this
    /// many microseconds (the report's `port_samples`; off by default).
    #[serde(default)]
    pub telemetry_us: Option<f64>,
}

/// Default simulation budget per message length of IMB and OSU: 1 GiB
/// moved in all. IMB's own rule (40 MiB per rank and length) lets an
/// Alltoall of 32 ranks move 40 GiB per length; simulated packet by packet
/// that is minutes per length, and a deterministic fabric reaches its
/// steady state in far fewer calls. The repetitions column always shows
/// what ran.
pub const MAX_VOLUME: u64 = 1 << 30;

/// How a benchmark's collectives are chosen and how much it may move
/// (IMB and OSU, nested as `tuning`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tuning {
    /// Override the fabric's MPI library for selection ("openmpi"/"mpich").
    #[serde(default)]
    pub library: Option<String>,
    /// Simulation budget (not an option of the real tools): fewer
    /// repetitions where one message length would move more than this many
    /// bytes through the fabric in all (default [`MAX_VOLUME`]; 0 = the
    /// tool's own counts always).
    #[serde(default)]
    pub max_volume: Option<u64>,
}

impl Tuning {
    /// The library whose selection rules apply: this override, else the
    /// fabric's.
    pub fn library(&self, spec: &FabricSpec) -> Result<Library> {
        Library::parse(self.library.as_deref().unwrap_or(&spec.mpi.library))
    }

    /// The budget in bytes (0 = none).
    pub fn max_volume(&self) -> u64 {
        self.max_volume.unwrap_or(MAX_VOLUME)
    }
}

/// A measurement whose repetitions the simulation budget
/// ([`Tuning::max_volume`]) lowered below the tool's own count: reported,
/// so that a budget never silently changes what was asked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lowered {
    /// The measurement ("Alltoall np=16 1048576 B").
    pub label: String,
    /// The tool's own count (IMB's repetitions, OSU's iterations).
    pub asked: u32,
    /// What ran.
    pub ran: u32,
}

/// The program of an MPI run: one schedule per phase, the job-wide
/// barrier between phases, and what each phase measures.
pub struct ProgramSpec {
    /// Schedules, indexed by the phases.
    pub scheds: Vec<Schedule>,
    /// The barrier run between phases.
    pub sync: Schedule,
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// Keep every repetition's time (HPL), not only the totals.
    pub keep_samples: bool,
    /// Run the schedules with this executor instead of the MPI runtime
    /// (NCCL's), and place the job as it says.
    pub executor: Option<(super::job::Job, super::program::MakeExecutor)>,
}

/// The sampling period of a `telemetry_us` option, checked.
pub fn telemetry_period(us: Option<f64>) -> Result<Option<Time>> {
    match us {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 0.001 => Ok(Some(Time::from_ns_f64(v * 1e3))),
        Some(v) => Err(Error::InvalidArgument(format!(
            "telemetry_us must be a sampling period of at least 0.001 us, got {v}"
        ))),
    }
}

/// Progress callback: (simulated time, events so far, phases done,
/// phases, label of the phase in progress).
pub type Progress<'a> = &'a mut dyn FnMut(Time, u64, usize, usize, &str);

/// Place `job` on `spec` with what `env` adds beside it and run
/// `program`.
pub fn run_program(
    spec: &FabricSpec,
    job: &JobSpec,
    env: &RunEnv,
    program: ProgramSpec,
    seed: u64,
    mut progress: Option<Progress<'_>>,
) -> Result<ProgramRun> {
    let t0 = std::time::Instant::now();
    let ProgramSpec {
        scheds,
        sync,
        phases,
        keep_samples,
        executor,
    } = program;
    let telemetry = telemetry_period(env.telemetry_us)?;
    super::footprint::check_job(spec, job.np()?, &scheds)?;
    let mut net = Net::new(spec, seed)?;
    if let Some(period) = telemetry {
        net.telemetry_supported()?;
        net.enable_port_sampling(period);
    }
    let (placed, make) = match executor {
        Some((job, make)) => (job, Some(make)),
        None => (Job::place(net.topology(), job)?, None),
    };
    let params = spec.mpi.params()?;
    let n_phases = phases.len();
    let mut prog = Program::new(placed, params, scheds, sync, phases, keep_samples);
    if let Some(make) = make {
        prog = prog.with_executor(make);
    }
    let bg = if env.background.is_empty() {
        None
    } else {
        Some(Flows::new(&net, &env.background)?.into_background())
    };
    let iperfs = env
        .background_iperf
        .iter()
        .map(|o| {
            // Its options came as CLIENT:SERVER:RATE[:STREAMS], not as
            // iperf's -b and -P: say which run and which field.
            Iperf::new(&net, o)
                .map(Iperf::into_background)
                .map_err(|e| match e {
                    Error::InvalidArgument(m) => Error::InvalidArgument(format!(
                        "background iperf {}:{}: {m} (RATE is -b, STREAMS is -P)",
                        o.client, o.server
                    )),
                    e => e,
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(prog));
    if let Some(bg) = bg {
        sim.add_app(Box::new(bg));
    }
    let iperf_ids: Vec<u32> = iperfs
        .into_iter()
        .map(|a| sim.add_app(Box::new(a)))
        .collect();
    let outcome = match progress.as_mut() {
        Some(p) => sim.run_watched(None, &mut |s: &Sim| {
            let prog = s.app::<Program>(id).expect("program");
            // One long phase (HPL): its calls are the progress.
            let (done, total) = if n_phases == 1 {
                prog.calls_progress()
            } else {
                (prog.phases_done(), n_phases)
            };
            p(
                s.net.now(),
                s.net.events_processed(),
                done,
                total,
                prog.current_label(),
            );
        }),
        None => sim.run(None),
    };
    sim.net.audit_check()?;
    sim.net.telemetry_check()?;
    sim.net.telemetry_final_sample();
    let prog = sim.app::<Program>(id).expect("program");
    if outcome == Outcome::Deadlock {
        return Err(sim.net.deadlock_error());
    }
    if prog.failed() {
        return Err(mpi_retry_error(&sim.net, prog));
    }
    if outcome == Outcome::Stalled {
        // Nothing left to happen with ranks still waiting: an MPI-level
        // deadlock (receives whose sends never come), since PFC deadlocks
        // and unreachable peers end the run on their own above.
        return Err(Error::Deadlock(format!(
            "MPI deadlock: the job stalled at {:.3} us in {} ({} of {} phases done) with \
             nothing left to happen: ranks wait for messages that are never sent",
            sim.net.now().as_us_f64(),
            prog.current_label(),
            prog.phases_done(),
            n_phases
        )));
    }
    let interrupted = outcome == Outcome::Interrupted;
    if outcome != Outcome::Finished && !interrupted {
        return Err(Error::InvalidArgument(format!(
            "the MPI job did not finish ({outcome:?} at {} with {} of {} phases done)",
            sim.net.now(),
            prog.phases_done(),
            n_phases
        )));
    }
    if let (Some(p), false) = (progress.as_mut(), interrupted) {
        // In the unit of the ticks before: calls of one long phase (HPL),
        // else phases.
        let (done, total) = if n_phases == 1 {
            prog.calls_progress()
        } else {
            (n_phases, n_phases)
        };
        p(
            sim.net.now(),
            sim.net.events_processed(),
            done,
            total,
            "done",
        );
    }
    let summary = RunSummary {
        mpi: prog.counters(),
        ports: sim.net.port_reports(),
        port_samples: sim.net.port_sample_rows(),
        qps: sim.net.qp_reports(),
        sim_time_us: sim.net.now().as_us_f64(),
        events: sim.net.events_processed(),
        wall_s: t0.elapsed().as_secs_f64(),
        iperf: iperf_ids
            .iter()
            .zip(&env.background_iperf)
            .map(|(&i, o)| {
                let app = sim.app::<Iperf>(i).expect("iperf");
                app.report(&sim.net, o, seed, outcome)
            })
            .collect(),
        interrupted,
    };
    // A stopped run keeps the phases every rank finished.
    let done = if interrupted {
        prog.phases_done()
    } else {
        n_phases
    };
    Ok(ProgramRun {
        phases: prog.results()[..done.min(prog.results().len())].to_vec(),
        summary,
    })
}

/// The error of a job lost to a transport retry error, with what Open MPI
/// over UCX prints when it happens: UCX's mlx5 completion-error lines on
/// the rank that saw it (then the process aborts) and mpirun's notice.
/// Process ids are not simulated: they print as the rank.
fn mpi_retry_error(net: &Net, prog: &Program) -> Error {
    let Some(f) = net.qp_failures().first() else {
        return Error::TransportRetry(
            "the MPI job failed: a work request completed in error".into(),
            String::new(),
            net.failed_run_counters(),
        );
    };
    let host = net.host(&f.host).unwrap_or(0);
    let rank = prog.first_rank_on(host).unwrap_or(0);
    let link = if net.ib.is_some() { "IB" } else { "RoCE" };
    let tag = format!("[{}:{rank}:0:{rank}]", f.host);
    let tool = format!(
        "{tag} ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/{link} \
         (synd 0x15 vend 0x81 hw_synd 0/0)\n\
         {tag} ib_mlx5_log.c:143  RC QP 0x{:x} wqe[0]: RDMA_WRITE\n\
         --------------------------------------------------------------------------\n\
         mpirun noticed that process rank {rank} with PID {rank} on node {} exited on \
         signal 6 (Aborted).\n\
         --------------------------------------------------------------------------",
        f.qp, f.host
    );
    Error::TransportRetry(
        format!(
            "the MPI job failed at {:.3} us: rank {rank} on {}: {}",
            f.time_ps as f64 / 1e6,
            f.host,
            f.describe()
        ),
        tool,
        net.failed_run_counters(),
    )
}
