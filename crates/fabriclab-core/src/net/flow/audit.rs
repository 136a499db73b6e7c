//! The flow backend's audit: the conservation audit's books (`net/audit.rs`)
//! in fluid terms, on with it (`FABRICLAB_AUDIT=1`, `fabriclab --audit`,
//! always in the test suite). It checks, and names what breaks:
//!
//! - at every rate recomputation, on every link of a flow whose rate
//!   changed: the flows' rates sum to no more than the link's capacity, and
//!   each such flow has a bottleneck (a saturated link of its path where no
//!   flow is faster): the allocation is max-min fair where it moved;
//! - at the end of the run, the same on every link (when the last
//!   recomputation is done);
//! - every flow has delivered its bytes when it ends: the integral of its
//!   rates since it started equals its wire bytes (to a picosecond of
//!   rounding at its rate), so no rate change went unaccounted;
//! - every path runs from the QP's host, port by port, to its peer's host;
//! - RC messages (WRITE, SEND, READ) posted = completed + in flight (queued
//!   on a QP, carried by a flow, or a READ request on its way).
//!
//! What it leaves out: TCP's byte stream (as the packet audit does), and
//! NCCL's fluid collectives, which share the links outside this solver
//! (`nccl/fluid.rs`).

use super::maxmin::MaxMin;
use super::{Later, MsgKind};
use crate::net::Net;

/// The flow audit's counters and the first violation seen during the run.
#[derive(Default)]
pub(crate) struct FlowAudit {
    /// RC messages posted (a READ counts once, when posted).
    pub posted: u64,
    /// RC messages completed.
    pub done: u64,
    /// Rate recomputations checked.
    pub solves_checked: u64,
    /// Flows checked at their end.
    pub flows_checked: u64,
    /// The first violation (the run goes on; `Net::audit_check` reports it).
    pub first_error: Option<String>,
}

impl FlowAudit {
    /// Keep `msg` if it is the first violation.
    pub fn fail(&mut self, msg: String) {
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }

    /// Check the links of the flows whose rates moved in a solve.
    pub fn check_solve(&mut self, mm: &MaxMin, changed: &[(u32, f64)]) {
        self.solves_checked += 1;
        if self.first_error.is_some() {
            return;
        }
        let flows: Vec<u32> = changed.iter().map(|&(f, _)| f).collect();
        if let Err(e) = mm.check_max_min(&flows) {
            self.fail(format!(
                "after rate recomputation {}: {e}",
                self.solves_checked
            ));
        }
    }

    /// A flow with `rem_bytes` left at its last settlement, at `rate_bps`
    /// for `dt_ps` since then, ends now; it carries `wire_bytes`.
    pub fn check_end(
        &mut self,
        flow: u32,
        rem_bytes: f64,
        rate_bps: f64,
        dt_ps: u64,
        wire_bytes: u64,
    ) {
        self.flows_checked += 1;
        let left = rem_bytes - rate_bps * dt_ps as f64 / 8e12;
        // The end is rounded up to a whole picosecond at the flow's rate;
        // and the float sums lose about one part in 1e12 per settlement.
        let slack = rate_bps * 2.0 / 8e12 + 1e-9 * wire_bytes as f64 + 1e-6;
        if left.abs() > slack {
            self.fail(format!(
                "flow {flow} ended with {left:.3} of its {wire_bytes} wire bytes {} \
                 (its rates integrate to {:.3} B)",
                if left > 0.0 { "unsent" } else { "sent twice" },
                wire_bytes as f64 - left
            ));
        }
    }
}

impl Net {
    /// With the audit on: check that QP `q`'s `path` runs host to host.
    pub(super) fn flow_audit_path(&mut self, q: u32, path: &[u32]) {
        let fnet = self.flow.as_deref_mut().expect("flow backend");
        let Some(a) = fnet.audit.as_deref_mut() else {
            return;
        };
        let qp = &fnet.qps[q as usize];
        let ports = &self.ports;
        let at = |p: u32| (ports[p as usize].node, ports[p as usize].peer_node);
        if let Some(e) = path_break(at, path, qp.host, qp.peer_host) {
            let name = |n: u32| self.topo.nodes[n as usize].name.as_str();
            a.fail(format!(
                "QP {q} ({} -> {}): its path {path:?} is broken: {e}",
                name(qp.host),
                name(qp.peer_host)
            ));
        }
    }

    /// The flow backend's books at the end of a run (None: audit off);
    /// the first violation in words.
    pub(crate) fn flow_audit_check(&self) -> Option<Result<(), String>> {
        let fnet = self.flow.as_deref()?;
        let a = fnet.audit.as_deref()?;
        if let Some(e) = &a.first_error {
            return Some(Err(e.clone()));
        }
        if !fnet.dirty {
            if let Err(e) = fnet.mm.check_max_min(&fnet.mm.live_flows()) {
                return Some(Err(format!("at the end of the run: {e}")));
            }
        }
        // RC messages in flight: queued, carried by a flow, or a READ
        // request on its way to the responder.
        let rc = |k: MsgKind| k != MsgKind::Tcp;
        let queued: u64 = (fnet.qps.iter())
            .flat_map(|qp| qp.msgs.iter())
            .filter(|m| rc(m.kind))
            .map(|m| m.reps as u64)
            .sum();
        let carried: u64 = (fnet.qps.iter())
            .filter(|qp| qp.flow != u32::MAX)
            .map(|qp| &fnet.flows[qp.flow as usize])
            .filter(|fl| rc(fl.msg.kind))
            .map(|fl| fl.count as u64)
            .sum();
        let mut free = vec![false; fnet.later.len()];
        for &i in &fnet.later_free {
            free[i as usize] = true;
        }
        let requests: u64 = (fnet.later.iter().zip(&free))
            .filter_map(|(l, &f)| match l {
                Later::ReadArrive { m, .. } if !f => Some(m.reps as u64),
                _ => None,
            })
            .sum();
        let in_flight = queued + carried + requests;
        if a.posted != a.done + in_flight {
            return Some(Err(format!(
                "{} RC messages posted but {} completed + {in_flight} in flight ({queued} queued, \
                 {carried} in flows, {requests} READ requests on their way)",
                a.posted, a.done
            )));
        }
        Some(Ok(()))
    }
}

/// Check that `path` (egress ports) runs from `src` to `dst`:
/// `ports[p] = (node, peer_node)`. The hop that breaks, or None.
pub(crate) fn path_break(
    ports: impl Fn(u32) -> (u32, u32),
    path: &[u32],
    src: u32,
    dst: u32,
) -> Option<String> {
    let mut at = src;
    for (i, &p) in path.iter().enumerate() {
        let (node, peer) = ports(p);
        if node != at {
            return Some(format!(
                "hop {i} leaves node {node}, but the path was at node {at}"
            ));
        }
        at = peer;
    }
    (at != dst).then(|| format!("it ends at node {at}, not at the peer's host {dst}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{preset, Backend};
    use crate::sim::{Outcome, Sim};
    use crate::traffic::flows::{FlowSpec, Flows};
    use crate::units::Time;

    /// 200 WRITEs, READs and SENDs among the fat-tree preset's hosts,
    /// started over 50 us, with the audit on.
    fn audited_run(limit_us: Option<u64>) -> Sim {
        let mut spec = preset("fat-tree").unwrap();
        spec.sim.backend = Backend::Flow;
        let mut net = Net::new(&spec, 5).unwrap();
        net.enable_audit();
        let n = net.n_hosts() as u64;
        let flows: Vec<FlowSpec> = (0..200u64)
            .map(|i| FlowSpec {
                src: format!("h{}", i % n),
                dst: format!("h{}", (i * 7 + 3) % n),
                bytes: 10_000 + 3_000 * i,
                op: ["write", "read", "send"][i as usize % 3].into(),
                start_us: (i % 50) as f64,
                priority: None,
                repeat: false,
                via: None,
                return_via: None,
            })
            .filter(|f| f.src != f.dst)
            .collect();
        let app = Flows::new(&net, &flows).unwrap();
        let mut sim = Sim::new(net);
        sim.add_app(Box::new(app));
        let outcome = sim.run(limit_us.map(Time::us));
        if limit_us.is_none() {
            assert_eq!(outcome, Outcome::Finished);
        }
        sim
    }

    fn books(sim: &Sim) -> &FlowAudit {
        sim.net.flow.as_deref().unwrap().audit.as_deref().unwrap()
    }

    #[test]
    fn the_audit_checks_every_flow_and_recomputation_of_a_run() {
        let sim = audited_run(None);
        let a = books(&sim);
        assert!(sim.net.audit_check().is_ok(), "{:?}", sim.net.audit_check());
        let stats = &sim.net.flow.as_deref().unwrap().stats;
        assert_eq!(a.posted, a.done);
        assert!(a.posted >= 190, "{} messages", a.posted);
        assert_eq!(a.flows_checked, stats.flows - stats.continued);
        assert_eq!(a.solves_checked, stats.solves);
    }

    #[test]
    fn a_flow_ended_before_its_rates_delivered_its_bytes_fails_the_audit() {
        let mut sim = audited_run(Some(60));
        let now = sim.net.now();
        let fnet = sim.net.flow.as_deref_mut().unwrap();
        let q = (fnet.qps.iter())
            .position(|qp| qp.flow != u32::MAX)
            .expect("a flow is active");
        let f = fnet.qps[q].flow;
        // Its end rescheduled 1 ns from now, as a rate change that was not
        // settled would misplace it.
        let fl = &mut fnet.flows[f as usize];
        fl.gen = fl.gen.wrapping_add(1);
        let early = Time(now.0 + 1000);
        fnet.heap.push(std::cmp::Reverse((early.0, f, fl.gen)));
        sim.net.flow_tick_at(early);
        assert_eq!(sim.run(None), Outcome::Finished);
        let e = sim.net.audit_check().unwrap_err().to_string();
        assert!(
            e.contains(&format!("flow backend: flow {f} ended with")) && e.contains("unsent"),
            "{e}"
        );
    }

    #[test]
    fn a_message_that_vanished_fails_the_audit() {
        let mut sim = audited_run(None);
        let fnet = sim.net.flow.as_deref_mut().unwrap();
        fnet.audit.as_deref_mut().unwrap().posted += 1;
        let e = sim.net.audit_check().unwrap_err().to_string();
        assert!(
            e.contains("RC messages posted but") && e.contains("0 in flight"),
            "{e}"
        );
    }

    #[test]
    fn a_flow_that_delivered_its_bytes_passes_and_one_short_fails() {
        let mut a = FlowAudit::default();
        // 1,000 B at 8 Gb/s take 1,000,000 ps.
        a.check_end(0, 1000.0, 8e9, 1_000_000, 1000);
        assert!(a.first_error.is_none());
        a.check_end(1, 1000.0, 8e9, 999_000, 1000);
        let e = a.first_error.expect("1 B unsent");
        assert!(
            e.contains("flow 1 ended with 1.000 of its 1000 wire bytes unsent"),
            "{e}"
        );
        assert_eq!(a.flows_checked, 2);
    }

    #[test]
    fn paths_must_run_host_to_host() {
        // Ports: 0 = host 0 -> switch 2, 1 = switch 2 -> host 1, 2 = switch 3 -> host 1.
        let ports = |p: u32| [(0, 2), (2, 1), (3, 1)][p as usize];
        assert_eq!(path_break(ports, &[0, 1], 0, 1), None);
        let e = path_break(ports, &[0, 2], 0, 1).unwrap();
        assert!(
            e.contains("hop 1 leaves node 3, but the path was at node 2"),
            "{e}"
        );
        let e = path_break(ports, &[0], 0, 1).unwrap();
        assert!(e.contains("ends at node 2"), "{e}");
    }

    #[test]
    fn an_over_capacity_link_is_reported() {
        let mut mm = MaxMin::new(vec![10.0]);
        let a = mm.add(&[0]);
        let mut changed = Vec::new();
        mm.solve(&mut changed);
        let mut audit = FlowAudit::default();
        audit.check_solve(&mm, &changed);
        assert!(audit.first_error.is_none());
        // The link loses capacity and nothing is re-solved.
        mm.set_cap(0, 5.0);
        audit.check_solve(&mm, &[(a, 10.0)]);
        let e = audit.first_error.expect("over capacity");
        assert!(e.contains("link 0 over capacity"), "{e}");
    }
}
