//! A simulation run: the network plus the workloads driving it.
//!
//! Workloads implement [`App`]; they start at time zero, post work on the
//! network and react to the [`AppEvent`]s it delivers. The run ends when
//! every foreground workload is done (background traffic, such as an
//! incast running beside a latency test, does not keep a run alive), when
//! nothing is left to happen, at the time limit, or when a PFC deadlock is
//! found (`net/pfc_guard.rs`). A run that stops with foreground work
//! unfinished and no event left is reported as stalled, never as a silent
//! success.

use crate::net::{AppEvent, Ev, Net};
use crate::units::Time;
use std::any::Any;

/// A workload.
pub trait App: Any {
    /// Called once at time zero with the workload's own id (for
    /// [`Net::connect`] and [`Net::set_app_timer`]).
    fn start(&mut self, net: &mut Net, me: u32);
    /// Called for every event addressed to this workload.
    fn on_event(&mut self, net: &mut Net, me: u32, ev: AppEvent);
    /// True once the workload has finished (foreground workloads only).
    fn done(&self) -> bool;
    /// Background workloads do not keep the run alive.
    fn background(&self) -> bool {
        false
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// Every foreground workload finished.
    Finished,
    /// No event left (only possible without foreground workloads).
    Drained,
    /// The time limit was reached first.
    TimeLimit,
    /// Foreground work was unfinished and nothing could happen any more.
    Stalled,
    /// The user asked to stop (Ctrl-C; [`crate::interrupt`]), or telemetry
    /// reached its row limit ([`Net::telemetry_check`] says so).
    Interrupted,
    /// A PFC deadlock was found and `[pfc.deadlock] action = "stop"`
    /// ([`Net::deadlocks`] names its ports).
    Deadlock,
}

/// The network and its workloads.
pub struct Sim {
    /// The network.
    pub net: Net,
    apps: Vec<Box<dyn App>>,
    started: usize,
}

/// Flow backend: events between looks at the wall clock for progress.
const FLOW_CHUNK_EVENTS: u64 = 16;
/// Flow backend: wall time between progress reports.
const FLOW_WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl Sim {
    /// A simulation of `net` with no workload yet.
    pub fn new(net: Net) -> Sim {
        Sim {
            net,
            apps: Vec::new(),
            started: 0,
        }
    }

    /// Add a workload; returns its id.
    pub fn add_app(&mut self, app: Box<dyn App>) -> u32 {
        self.apps.push(app);
        self.apps.len() as u32 - 1
    }

    /// A workload, to read its results after the run.
    pub fn app<T: App>(&self, id: u32) -> Option<&T> {
        let a: &dyn Any = self.apps.get(id as usize)?.as_ref();
        a.downcast_ref::<T>()
    }

    /// Run until every foreground workload is done, or `limit`.
    pub fn run(&mut self, limit: Option<Time>) -> Outcome {
        self.run_with_progress(limit, None)
    }

    /// Like [`Sim::run`], calling `progress` every 2^20 events.
    pub fn run_with_progress(
        &mut self,
        limit: Option<Time>,
        mut progress: Option<&mut dyn FnMut(Time, u64)>,
    ) -> Outcome {
        self.run_watched(limit, &mut |sim: &Sim| {
            if let Some(p) = progress.as_mut() {
                p(sim.net.now(), sim.net.events_processed());
            }
        })
    }

    /// Like [`Sim::run`], calling `watch` with the simulation every 2^20
    /// events (to report progress from the workloads' own state); on the
    /// flow backend, whose events can each cost a rate recomputation over
    /// many flows, every half second of wall time instead.
    pub fn run_watched(&mut self, limit: Option<Time>, watch: &mut dyn FnMut(&Sim)) -> Outcome {
        let flow = self.net.flow.is_some();
        let chunk = if flow { FLOW_CHUNK_EVENTS } else { 1 << 20 };
        let mut last = std::time::Instant::now();
        loop {
            let target = self.net.events_processed() + chunk;
            match self.run_until_events(limit, target) {
                None if flow && last.elapsed() < FLOW_WATCH_EVERY => {}
                None => {
                    watch(self);
                    last = std::time::Instant::now();
                }
                Some(o) => {
                    // With the audit on (the test suite), a debug build
                    // stops at the first run whose books do not balance;
                    // the tools report it as an error in any build.
                    if cfg!(debug_assertions) && self.net.audit_strict {
                        if let Err(e) = self.net.audit_check() {
                            panic!("{e}");
                        }
                    }
                    return o;
                }
            }
        }
    }

    /// Run until `events` events have been processed (None) or the run
    /// ends (Some(outcome)). A run that stops at its time limit has
    /// simulated up to it: the clock reads the limit; the flow backend then
    /// counts what its flows under way have sent.
    fn run_until_events(&mut self, limit: Option<Time>, events: u64) -> Option<Outcome> {
        let outcome = self.run_events(limit, events);
        if let (Some(Outcome::TimeLimit), Some(t)) = (outcome, limit) {
            self.net.q.advance_to(t);
        }
        if outcome.is_some() {
            self.net.flow_count_under_way();
        }
        outcome
    }

    fn run_events(&mut self, limit: Option<Time>, events: u64) -> Option<Outcome> {
        let limit = limit.unwrap_or(Time::NEVER);
        for i in self.started..self.apps.len() {
            self.apps[i].start(&mut self.net, i as u32);
        }
        self.started = self.apps.len();
        let foreground = self.apps.iter().any(|a| !a.background());
        if foreground && self.foreground_done() {
            return Some(Outcome::Finished);
        }
        if crate::interrupt::poll() {
            return Some(Outcome::Interrupted);
        }
        // Ctrl-C is polled every 65,536 packet-engine events, and every
        // event on the flow backend, whose events can take milliseconds.
        let mask = if self.net.flow.is_some() { 0 } else { 0xffff };
        while self.net.events_processed() < events {
            if self.net.events_processed() & mask == mask && crate::interrupt::poll() {
                return Some(Outcome::Interrupted);
            }
            let Some((_, ev)) = self.net.q.pop_until(limit) else {
                return Some(if !self.net.q.is_empty() {
                    Outcome::TimeLimit
                } else if foreground {
                    Outcome::Stalled
                } else {
                    Outcome::Drained
                });
            };
            if let Ev::App(slot) = ev {
                let (app, aev) = self.net.mailbox.take(slot);
                self.apps[app as usize].on_event(&mut self.net, app, aev);
                if foreground && self.foreground_done() {
                    return Some(Outcome::Finished);
                }
            } else {
                self.net.handle(ev);
                if matches!(ev, Ev::PfcCheck) && self.net.deadlock_halt() {
                    return Some(Outcome::Deadlock);
                }
                // Telemetry at its row limit stops the run; the tools that
                // sample turn it into an error (`Net::telemetry_check`).
                if matches!(ev, Ev::Sample) && self.net.telemetry_full() {
                    return Some(Outcome::Interrupted);
                }
            }
        }
        None
    }

    fn foreground_done(&self) -> bool {
        self.apps
            .iter()
            .filter(|a| !a.background())
            .all(|a| a.done())
    }
}
