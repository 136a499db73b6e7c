//! An MPI benchmark program: a sequence of timed phases, each repeating one
//! operation on the first `n` ranks of the job, the way IMB and OSU time
//! them, run as one simulation workload.
//!
//! Every phase starts with a barrier of the whole job (IMB and OSU line
//! ranks up before each message size). Then either
//! - `PerCall`: each call is timed on its own from the rank's clock, and
//!   an untimed barrier of the `n` ranks follows it (IMB collectives,
//!   OSU collectives), or
//! - `Loop`: the calls run back to back and the whole loop is timed
//!   (IMB PingPong/Sendrecv/Exchange, osu_latency, osu_bw), or
//! - `LoopAfterBarrier`: the same, but the untimed calls are followed by
//!   a barrier of the phase's ranks and each rank's clock starts when it
//!   leaves it (nccl-tests' `BenchTime`: the sync call, stream
//!   synchronisation, `Barrier`, then the timed loop).
//!
//! A phase may open with one untimed setup call (Cbench's zero-byte
//! `MPI_Sendrecv` that lines each pair up before its clock starts). Warm-up
//! calls run next and are not timed. Ranks beyond `n` wait in the next
//! barrier, as IMB's "additional processes waiting in MPI_Barrier".
//! The result of a phase is, per rank, the summed timed duration.

use super::job::Job;
use super::runtime::{MpiCounters, Runtime, SchedId};
use super::sched::{Rank, Schedule};
use crate::config::MpiParams;
use crate::net::{AppEvent, Net};
use crate::sim::App;
use crate::units::Time;

/// What runs a program's schedules on the fabric: the MPI runtime
/// ([`Runtime`]) or another communication library's (NCCL's, in
/// `crate::nccl`). The program only starts schedules on ranks and learns
/// when they finish.
pub trait Executor {
    /// Register a schedule (its ranks are the job's ranks 0..p).
    fn add_schedule(&mut self, s: Schedule) -> SchedId;
    /// Start `rank` on schedule `id`; the rank must be idle.
    fn start(&mut self, net: &mut Net, rank: Rank, id: SchedId);
    /// Handle an event addressed to the owning workload.
    fn handle(&mut self, net: &mut Net, ev: AppEvent);
    /// Ranks that finished their schedule since the last call.
    fn take_finished(&mut self, out: &mut Vec<Rank>);
    /// The rank's clock (when it can next start something).
    fn clock(&self, net: &Net, rank: Rank) -> Time;
    /// True once a work request completed in error (the job is lost).
    fn failed(&self) -> bool;
    /// Counters so far.
    fn counters(&self) -> MpiCounters;
}

impl Executor for Runtime {
    fn add_schedule(&mut self, s: Schedule) -> SchedId {
        Runtime::add_schedule(self, s)
    }
    fn start(&mut self, net: &mut Net, rank: Rank, id: SchedId) {
        Runtime::start(self, net, rank, id)
    }
    fn handle(&mut self, net: &mut Net, ev: AppEvent) {
        Runtime::handle(self, net, ev)
    }
    fn take_finished(&mut self, out: &mut Vec<Rank>) {
        Runtime::take_finished(self, out)
    }
    fn clock(&self, net: &Net, rank: Rank) -> Time {
        Runtime::clock(self, net, rank)
    }
    fn failed(&self) -> bool {
        Runtime::failed(self)
    }
    fn counters(&self) -> MpiCounters {
        Runtime::counters(self).clone()
    }
}

/// Makes the executor of a program when the run starts: (network, the
/// placed job, the workload's id).
pub type MakeExecutor = Box<dyn FnOnce(&Net, &Job, u32) -> Box<dyn Executor>>;

/// How a phase is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Time each call; run this barrier schedule (untimed) after it.
    PerCall {
        /// Barrier of the phase's ranks.
        barrier: SchedId,
    },
    /// Time the loop of calls as a whole.
    Loop,
    /// Time the loop of calls as a whole, from this barrier schedule
    /// (untimed) after the untimed calls.
    LoopAfterBarrier {
        /// Barrier of the phase's ranks.
        barrier: SchedId,
    },
}

/// One timed measurement.
#[derive(Clone, Debug)]
pub struct Phase {
    /// Schedules of the calls, used in turn (call i runs
    /// `scheds[i % len]`, e.g. a rotating root).
    pub scheds: Vec<SchedId>,
    /// An untimed call before the first one (warm-up included).
    pub setup: Option<SchedId>,
    /// Ranks taking part: 0..n.
    pub n: u32,
    /// Untimed calls first.
    pub warmup: u32,
    /// Timed calls.
    pub reps: u32,
    /// How calls are timed.
    pub timing: Timing,
    /// What it measures, for progress lines ("Alltoall np=32 65536 B").
    pub label: String,
}

/// What a phase measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseResult {
    /// Per participating rank: total timed duration.
    pub rank_total: Vec<Time>,
    /// Per participating rank: every timed call's duration (PerCall only,
    /// when samples were requested).
    pub samples: Vec<Vec<Time>>,
    /// Timed calls.
    pub reps: u32,
    /// Simulated time when the phase ended at its last rank.
    pub end: Time,
    /// Loop timing, when samples were requested: per participating rank,
    /// when each call (warm-up included) ended.
    pub call_ends: Vec<Vec<Time>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Sync,
    Setup,
    Call,
    After,
    /// In the barrier between the untimed calls and the timed loop.
    Lined,
    Waiting,
}

#[derive(Clone, Copy, Debug)]
struct RankPos {
    phase: usize,
    stage: Stage,
    /// Calls done in this phase (warm-up included).
    call: u32,
    t0: Time,
}

/// The workload: runs `phases` in order on the ranks of `job`.
pub struct Program {
    job: Job,
    params: MpiParams,
    pending_scheds: Vec<Schedule>,
    /// Schedule id of the whole-job barrier (the last one registered).
    sync: SchedId,
    phases: Vec<Phase>,
    keep_samples: bool,
    make: Option<MakeExecutor>,
    rt: Option<Box<dyn Executor>>,
    pos: Vec<RankPos>,
    results: Vec<PhaseResult>,
    ranks_done: usize,
    finished: Vec<Rank>,
}

impl Program {
    /// A program of `phases` over `schedules` (ids are indices into it).
    /// `sync` is a barrier schedule of the whole job, added last.
    pub fn new(
        job: Job,
        params: MpiParams,
        mut schedules: Vec<Schedule>,
        sync: Schedule,
        phases: Vec<Phase>,
        keep_samples: bool,
    ) -> Program {
        debug_assert_eq!(sync.p(), job.np());
        schedules.push(sync);
        let sync = schedules.len() as SchedId - 1;
        let results = phases
            .iter()
            .map(|ph| PhaseResult {
                rank_total: vec![Time::ZERO; ph.n as usize],
                samples: vec![Vec::new(); if keep_samples { ph.n as usize } else { 0 }],
                reps: ph.reps,
                end: Time::ZERO,
                call_ends: vec![Vec::new(); if keep_samples { ph.n as usize } else { 0 }],
            })
            .collect();
        let np = job.np() as usize;
        Program {
            job,
            params,
            pending_scheds: schedules,
            sync,
            phases,
            keep_samples,
            make: None,
            rt: None,
            pos: vec![
                RankPos {
                    phase: 0,
                    stage: Stage::Sync,
                    call: 0,
                    t0: Time::ZERO,
                };
                np
            ],
            results,
            ranks_done: 0,
            finished: Vec::new(),
        }
    }

    /// Run the schedules with the executor `make` builds instead of the
    /// MPI runtime.
    pub fn with_executor(mut self, make: MakeExecutor) -> Program {
        self.make = Some(make);
        self
    }

    /// Results per phase (complete once the run finished).
    pub fn results(&self) -> &[PhaseResult] {
        &self.results
    }

    /// The runtime's counters.
    pub fn counters(&self) -> MpiCounters {
        self.rt.as_ref().map(|r| r.counters()).unwrap_or_default()
    }

    /// The lowest rank placed on host `host` (index), if any.
    pub fn first_rank_on(&self, host: u32) -> Option<u32> {
        self.job
            .rank_host
            .iter()
            .position(|&h| h == host)
            .map(|r| r as u32)
    }

    /// True once the job is lost: a work request completed in error.
    pub fn failed(&self) -> bool {
        self.rt.as_ref().is_some_and(|r| r.failed())
    }

    /// Phases fully done by every rank.
    pub fn phases_done(&self) -> usize {
        self.pos.iter().map(|p| p.phase).min().unwrap_or(0)
    }

    /// Calls done by the slowest rank in its phase, and that phase's
    /// calls (warm-up and setup included).
    pub fn calls_progress(&self) -> (usize, usize) {
        let i = self.phases_done();
        let Some(ph) = self.phases.get(i) else {
            // All done: the last phase's calls.
            let calls = self
                .phases
                .last()
                .map_or(1, |ph| ph.warmup.saturating_add(ph.reps) as usize);
            return (calls, calls);
        };
        let done = self
            .pos
            .iter()
            .filter(|p| p.phase == i)
            .map(|p| p.call as usize)
            .min()
            .unwrap_or(0);
        (done, ph.warmup.saturating_add(ph.reps) as usize)
    }

    /// The label of the phase the slowest rank is in.
    pub fn current_label(&self) -> &str {
        self.phases
            .get(self.phases_done())
            .map_or("finishing", |p| p.label.as_str())
    }

    /// Move `rank` on after it finished whatever it was running.
    fn advance(&mut self, net: &mut Net, rank: Rank) {
        let rt = self.rt.as_mut().expect("started");
        let now = rt.clock(net, rank);
        let pos = &mut self.pos[rank as usize];
        let Some(ph) = self.phases.get(pos.phase) else {
            // The final barrier is done.
            if pos.stage != Stage::Waiting {
                pos.stage = Stage::Waiting;
                self.ranks_done += 1;
            }
            return;
        };
        let total = ph.warmup.saturating_add(ph.reps);
        let next_call = |call: u32| ph.scheds[call as usize % ph.scheds.len()];
        match pos.stage {
            // The whole-job barrier before phase `pos.phase` is done.
            Stage::Sync => {
                if rank >= ph.n || total == 0 {
                    // Not taking part: wait in the next barrier.
                    pos.phase += 1;
                    rt.start(net, rank, self.sync);
                    return;
                }
                if let Some(setup) = ph.setup {
                    pos.stage = Stage::Setup;
                    rt.start(net, rank, setup);
                    return;
                }
                pos.call = 0;
                pos.stage = Stage::Call;
                pos.t0 = now;
                rt.start(net, rank, next_call(0));
            }
            // The untimed setup call is done: the calls begin.
            Stage::Setup => {
                pos.call = 0;
                if let (0, Timing::LoopAfterBarrier { barrier }) = (ph.warmup, ph.timing) {
                    pos.stage = Stage::Lined;
                    rt.start(net, rank, barrier);
                    return;
                }
                pos.stage = Stage::Call;
                pos.t0 = now;
                rt.start(net, rank, next_call(0));
            }
            // The barrier before the timed loop is done.
            Stage::Lined => {
                pos.stage = Stage::Call;
                pos.t0 = now;
                rt.start(net, rank, next_call(pos.call));
            }
            // A call is done.
            Stage::Call => {
                let timed = pos.call >= ph.warmup;
                pos.call += 1;
                let res = &mut self.results[pos.phase];
                match ph.timing {
                    Timing::PerCall { barrier } => {
                        if timed {
                            let d = now - pos.t0;
                            res.rank_total[rank as usize] += d;
                            if self.keep_samples {
                                res.samples[rank as usize].push(d);
                            }
                        }
                        pos.stage = Stage::After;
                        rt.start(net, rank, barrier);
                    }
                    Timing::Loop | Timing::LoopAfterBarrier { .. } => {
                        if self.keep_samples {
                            res.call_ends[rank as usize].push(now);
                        }
                        if pos.call == ph.warmup {
                            if let (true, Timing::LoopAfterBarrier { barrier }) =
                                (pos.call < total, ph.timing)
                            {
                                pos.stage = Stage::Lined;
                                rt.start(net, rank, barrier);
                                return;
                            }
                            pos.t0 = now;
                        }
                        if pos.call < total {
                            rt.start(net, rank, next_call(pos.call));
                            return;
                        }
                        res.rank_total[rank as usize] = now - pos.t0;
                        res.end = res.end.max(now);
                        pos.phase += 1;
                        pos.stage = Stage::Sync;
                        rt.start(net, rank, self.sync);
                    }
                }
            }
            // The untimed barrier after a call is done.
            Stage::After => {
                if pos.call < total {
                    pos.stage = Stage::Call;
                    pos.t0 = now;
                    rt.start(net, rank, next_call(pos.call));
                    return;
                }
                let res = &mut self.results[pos.phase];
                res.end = res.end.max(now);
                pos.phase += 1;
                pos.stage = Stage::Sync;
                rt.start(net, rank, self.sync);
            }
            Stage::Waiting => {}
        }
    }
}

impl App for Program {
    fn start(&mut self, net: &mut Net, me: u32) {
        let mut rt: Box<dyn Executor> = match self.make.take() {
            Some(make) => make(net, &self.job, me),
            None => Box::new(Runtime::new(
                net,
                self.job.rank_host.clone(),
                self.params.clone(),
                me,
            )),
        };
        for s in self.pending_scheds.drain(..) {
            rt.add_schedule(s);
        }
        self.rt = Some(rt);
        let sync = self.sync;
        for r in 0..self.job.np() {
            // Everyone starts with the barrier before phase 0.
            self.rt.as_mut().unwrap().start(net, r, sync);
        }
        self.drain(net);
    }

    fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
        self.rt.as_mut().expect("started").handle(net, ev);
        self.drain(net);
    }

    fn done(&self) -> bool {
        self.ranks_done == self.pos.len() || self.failed()
    }
}

impl Program {
    fn drain(&mut self, net: &mut Net) {
        loop {
            let mut f = std::mem::take(&mut self.finished);
            self.rt.as_mut().unwrap().take_finished(&mut f);
            if f.is_empty() {
                self.finished = f;
                return;
            }
            for r in f.drain(..) {
                self.advance(net, r);
            }
            self.finished = f;
        }
    }
}
