//! Dynamic ECN at the switches: per egress queue, marking thresholds that
//! a controller retunes every interval (the rule is in `config/dyn_ecn.rs`).
//!
//! Each (switch egress port, ECN priority) queue keeps its current step on
//! the threshold ladder and what it saw over the current interval, updated
//! when a packet leaves the queue: the depth left behind (its minimum), how
//! many packets were marked, whether the queue ran empty. A queue's first
//! departure after an idle spell arms its interval timer; at the end of an
//! interval the controller reads the port's output bytes over it, decides,
//! and re-arms only if the queue saw traffic, so an idle fabric has no
//! controller events. Fabrics with static ECN build none of this.
//!
//! Left out: the port's share of bandwidth per priority (utilisation is the
//! whole port's output, as a switch's port counters give it).

use super::{Ev, Net, PortIdx};
use crate::config::{DynamicEcnSpec, EcnMode, EcnSpec};
use crate::units::Time;

/// One queue's controller state.
#[derive(Clone, Debug)]
struct QueueCtl {
    /// Step on the ladder: thresholds are the configured ones x 2^step.
    step: i32,
    kmin: u64,
    kmax: u64,
    /// The interval timer is armed.
    armed: bool,
    /// Port tx bytes when the interval began.
    tx_at_start: u64,
    /// Smallest depth left behind by a departure this interval.
    min_q: u64,
    departures: u32,
    drained: bool,
    marks: u32,
    marks_before: u32,
}

/// Dynamic-ECN state of every switch egress queue.
pub(crate) struct DynEcn {
    interval: Time,
    target_util: f64,
    target_queue: Time,
    steps_down: i32,
    steps_up: i32,
    base_kmin: u64,
    base_kmax: u64,
    /// Indexed by port x 8 + priority.
    q: Vec<QueueCtl>,
    /// Threshold changes made, per port.
    pub(crate) changes: Vec<u64>,
}

impl DynEcn {
    /// The state for `ecn` over `ports` ports, or `None` with static ECN.
    pub(crate) fn new(ecn: &EcnSpec, ports: usize) -> Option<Box<DynEcn>> {
        (ecn.enabled && ecn.mode == EcnMode::Dynamic).then(|| {
            let d: &DynamicEcnSpec = &ecn.dynamic;
            let ctl = QueueCtl {
                step: 0,
                kmin: ecn.kmin_bytes,
                kmax: ecn.kmax_bytes,
                armed: false,
                tx_at_start: 0,
                min_q: u64::MAX,
                departures: 0,
                drained: false,
                marks: 0,
                marks_before: 0,
            };
            Box::new(DynEcn {
                interval: Time::from_ns_f64(d.interval_us * 1e3),
                target_util: d.target_utilization,
                target_queue: Time::from_ns_f64(d.target_queue_us * 1e3),
                steps_down: d.steps_down as i32,
                steps_up: d.steps_up as i32,
                base_kmin: ecn.kmin_bytes,
                base_kmax: ecn.kmax_bytes,
                q: vec![ctl; ports * 8],
                changes: vec![0; ports],
            })
        })
    }

    /// Current (Kmin, Kmax) of a queue.
    #[inline]
    pub(crate) fn thresholds(&self, port: PortIdx, prio: usize) -> (u64, u64) {
        let c = &self.q[port as usize * 8 + prio];
        (c.kmin, c.kmax)
    }
}

/// A switch port's dynamic-ECN state, for reports (its data-priority
/// queue).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DynEcnPort {
    /// Threshold changes the controller made on this port (all priorities).
    pub ecn_adjustments: u64,
    /// Kmin of the data-priority queue at the end of the run, bytes.
    pub ecn_kmin_bytes: u64,
    /// Kmax of the data-priority queue at the end of the run, bytes.
    pub ecn_kmax_bytes: u64,
}

/// `x` scaled by 2^step, saturating.
fn scaled(x: u64, step: i32) -> u64 {
    if step >= 0 {
        x.saturating_mul(1u64 << step.min(62))
    } else {
        x >> (-step).min(63)
    }
}

impl Net {
    /// The dynamic-ECN report of port `pi` (switch ports, dynamic ECN only).
    pub(crate) fn dyn_ecn_report(&self, pi: PortIdx) -> Option<DynEcnPort> {
        let d = self.decn.as_ref()?;
        if (self.ports[pi as usize].node as usize) < self.topo.n_hosts {
            return None;
        }
        let (kmin, kmax) = d.thresholds(pi, self.p.data_prio as usize);
        Some(DynEcnPort {
            ecn_adjustments: d.changes[pi as usize],
            ecn_kmin_bytes: kmin,
            ecn_kmax_bytes: kmax,
        })
    }

    /// A packet of ECN priority `prio` left switch port `out`, leaving
    /// `q` bytes behind (wire bytes: the time the queue takes to drain at
    /// line rate, as the target queue delay is counted), `marked` or not. Returns nothing; arms the
    /// interval timer if the queue was idle.
    #[inline(never)]
    pub(crate) fn dyn_ecn_departure(&mut self, out: PortIdx, prio: usize, q: u64, marked: bool) {
        let tx = self.ports[out as usize].tx.tx_bytes;
        let d = self.decn.as_mut().expect("dynamic ECN on");
        let c = &mut d.q[out as usize * 8 + prio];
        c.min_q = c.min_q.min(q);
        c.departures += 1;
        c.drained |= q == 0;
        c.marks += marked as u32;
        if !c.armed {
            c.armed = true;
            c.tx_at_start = tx;
            let at = self.q.now() + d.interval;
            self.q.schedule(at, Ev::EcnTick(out, prio as u8));
        }
    }

    /// End of a control interval of queue (`port`, `prio`).
    pub(crate) fn on_ecn_tick(&mut self, port: PortIdx, prio: u8) {
        let prio = prio as usize;
        let p = &self.ports[port as usize];
        let (tx, rate, queued) = (p.tx.tx_bytes, p.rate, p.prio[prio].qbytes);
        let d = self.decn.as_mut().expect("dynamic ECN on");
        let (interval, target_util, target_queue) = (d.interval, d.target_util, d.target_queue);
        let (down, up) = (d.steps_down, d.steps_up);
        let (base_kmin, base_kmax) = (d.base_kmin, d.base_kmax);
        let c = &mut d.q[port as usize * 8 + prio];
        // Output over the interval against what the line could carry.
        let capacity = rate.bytes_in(interval);
        let util = (tx - c.tx_at_start) as f64 / capacity.max(1) as f64;
        let standing = rate.bytes_in(target_queue);
        let drained = c.drained || (c.departures == 0 && queued == 0);
        let before = c.step;
        if util < target_util && drained && c.marks + c.marks_before > 0 {
            c.step = (c.step + 1).min(up);
        } else if util >= target_util
            && c.departures > 0
            && c.min_q > standing
            && c.marks < c.departures
        {
            c.step = (c.step - 1).max(-down);
        }
        if c.step != before {
            c.kmin = scaled(base_kmin, c.step).max(1);
            c.kmax = scaled(base_kmax, c.step).max(c.kmin);
            d.changes[port as usize] += 1;
        }
        let active = c.departures > 0 || queued > 0;
        c.marks_before = c.marks;
        c.marks = 0;
        c.min_q = u64::MAX;
        c.departures = 0;
        c.drained = false;
        c.tx_at_start = tx;
        c.armed = active;
        if active {
            self.q.schedule_in(interval, Ev::EcnTick(port, prio as u8));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scaled;

    #[test]
    fn thresholds_scale_by_powers_of_two() {
        assert_eq!(scaled(7000, 0), 7000);
        assert_eq!(scaled(7000, 2), 28000);
        assert_eq!(scaled(7000, -3), 875);
        assert_eq!(scaled(u64::MAX / 2, 3), u64::MAX);
    }
}
