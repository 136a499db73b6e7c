//! Host memory bandwidth as a shared resource: concurrent copies on one
//! host (shared-memory messages, eager copies, packing) progress as fluid
//! flows. Each copy is done by a core (the rank that performs it: the
//! sender copying into a shared buffer, the receiver copying out or
//! pulling a single-copy message); a core's copies share its copy speed,
//! and the busy cores together share the host's memory bandwidth, equally
//! (processor sharing at both levels). So one rank receiving 64 messages
//! at once copies them one core's worth at a time, as an MPI library's
//! progress loop does, not 64 cores' worth.
//!
//! One pending timer per host, lazily invalidated by a generation counter:
//! a change (a copy starting or ending) recomputes every active copy's
//! progress and the next completion. Cost per change is quadratic in the
//! copies active on that host (a few dozen: a window of messages).
//!
//! Left out: caches (a copy that fits in cache is not faster), NUMA.

use crate::net::Net;
use crate::units::{Rate, Time};

struct Host<T> {
    /// (what, bytes left, core).
    active: Vec<(T, f64, u32)>,
    last: Time,
    gen: u64,
}

/// The hosts' memory systems; `T` is what the caller wants back when a
/// copy finishes.
pub struct MemHosts<T> {
    hosts: Vec<Host<T>>,
    per_copy: f64,
    total: f64,
}

const GEN_BITS: u64 = 40;

fn bytes_per_ps(r: Rate) -> f64 {
    r.as_bps() as f64 / 8.0 / 1e12
}

impl<T: Copy> MemHosts<T> {
    /// `n` hosts; one copy runs at most at `per_copy`, all copies of a host
    /// together at most at `total`.
    pub fn new(n: usize, per_copy: Rate, total: Rate) -> MemHosts<T> {
        MemHosts {
            hosts: (0..n)
                .map(|_| Host {
                    active: Vec::new(),
                    last: Time::ZERO,
                    gen: 0,
                })
                .collect(),
            per_copy: bytes_per_ps(per_copy),
            total: bytes_per_ps(total),
        }
    }

    /// Each active copy's rate on `host`, bytes/ps: its core's share of
    /// the host (at most one core's speed), split among that core's copies.
    fn rates(&self, host: usize) -> Vec<f64> {
        let active = &self.hosts[host].active;
        let same_core = |c: u32| active.iter().filter(|a| a.2 == c).count();
        let mut cores: Vec<u32> = active.iter().map(|a| a.2).collect();
        cores.sort_unstable();
        cores.dedup();
        let per_core = self.per_copy.min(self.total / cores.len().max(1) as f64);
        active
            .iter()
            .map(|a| per_core / same_core(a.2) as f64)
            .collect()
    }

    fn advance(&mut self, host: usize, now: Time) {
        let rates = self.rates(host);
        let h = &mut self.hosts[host];
        let dt = (now - h.last).as_ps() as f64;
        if dt > 0.0 {
            for (a, r) in h.active.iter_mut().zip(&rates) {
                a.1 -= r * dt;
            }
        }
        h.last = now;
    }

    fn reschedule(&mut self, net: &mut Net, app: u32, host: usize, flag: u64) {
        let rates = self.rates(host);
        let h = &mut self.hosts[host];
        h.gen += 1;
        let soonest = (h.active.iter().zip(&rates))
            .map(|(a, r)| a.1.max(0.0) / r)
            .reduce(f64::min);
        if let Some(ps) = soonest {
            let ps = ps.ceil() as u64;
            let token = flag | ((host as u64) << GEN_BITS) | (h.gen & ((1 << GEN_BITS) - 1));
            net.set_app_timer(app, net.now() + Time::ps(ps), token);
        }
    }

    /// Start copying `bytes` on `host` by `core` (the rank doing it);
    /// `what` comes back from [`MemHosts::tick`] when done. Timer tokens
    /// carry `flag`.
    pub fn start(
        &mut self,
        net: &mut Net,
        app: u32,
        (host, core): (u32, u32),
        bytes: u64,
        what: T,
        flag: u64,
    ) {
        let host = host as usize;
        self.advance(host, net.now());
        self.hosts[host].active.push((what, bytes as f64, core));
        self.reschedule(net, app, host, flag);
    }

    /// Handle a timer token (without `flag`); finished copies are appended
    /// to `done`. Stale tokens are ignored.
    pub fn tick(&mut self, net: &mut Net, app: u32, token: u64, flag: u64, done: &mut Vec<T>) {
        let host = (token >> GEN_BITS) as usize;
        let gen = token & ((1 << GEN_BITS) - 1);
        if self.hosts[host].gen & ((1 << GEN_BITS) - 1) != gen {
            return;
        }
        self.advance(host, net.now());
        let h = &mut self.hosts[host];
        let mut i = 0;
        while i < h.active.len() {
            if h.active[i].1 <= 1e-3 {
                done.push(h.active.remove(i).0);
            } else {
                i += 1;
            }
        }
        self.reschedule(net, app, host, flag);
    }
}
