//! PFC gone wrong, and what guards against it: deadlock detection, the
//! switches' PFC watchdog, and the stuck host NIC that causes PFC storms.
//!
//! **Deadlock.** A set of switch egress queues can wait on each other for
//! ever: egress A is paused by the ingress at the far end of its link,
//! that ingress's buffer is held by packets queued on egress B of the next
//! switch, which is paused in turn, and so on round a cycle (a cyclic
//! buffer dependency; up-down routing in a Clos cannot make one, a bounce
//! after a link failure or a loop in an explicit topology can). Detection:
//! once a switch-to-switch egress has been paused without a break for
//! `pfc.deadlock.detect_us`, the switches' paused queues are examined: an
//! edge runs from egress (p, prio) to egress (q, prio) of the next switch
//! when q's queue holds a packet that came in through p's peer, both being
//! paused without a break for the detection time and holding packets. A
//! cycle of such edges is reported (time, priority, the ports in order) and
//! ends the run (`Outcome::Deadlock`) or is recorded and the run goes on.
//! The check runs only while a switch-to-switch pause lasts: a run without
//! long pauses pays nothing.
//!
//! **Watchdog** (`[pfc.watchdog]`, as SONiC's pfcwd): every `poll_us` each
//! switch egress queue of a lossless priority is looked at. One paused
//! without a break for at least `detection_us` is in a storm: it stops
//! honouring PFC frames from its link and (action `drop`) its packets are
//! dropped, as is every packet routed to it and every packet of that
//! priority arriving from that link, and no XOFF is sent back on it; or
//! (action `forward`) it keeps sending although paused, and no XOFF is sent
//! on it. Once no PFC frame has come in on it for `restoration_us`, seen at
//! a poll, it is restored. Per port: storms detected and restored, packets
//! the watchdog dropped (also counted in `drops`, so that conservation
//! holds). Simplified: detection is on continuous pause (SONiC's scripts
//! read hardware counters at each poll: PFC frames received, packets sent,
//! queue occupancy; a queue paused for the whole interval passes them all);
//! the polling interval is not scaled with the port count.
//!
//! **Storm source** (`[[pfc_storms]]`): a host NIC whose receive side stops
//! draining discards what arrives (counted as drops at its port) and sends
//! XOFF on every lossless priority, refreshed before the pause runs out,
//! until it recovers (XON).

use super::packet::PktId;
use super::{Ev, Net, PortIdx};
use crate::config::{DeadlockAction, FabricSpec, WatchdogAction};
use crate::error::{fabric_err, Result};
use crate::units::Time;
use serde::Serialize;

/// One end of a port in a deadlock report: `node`'s port number `port`
/// (within the node) towards `peer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadlockPort {
    /// The switch owning the egress.
    pub node: String,
    /// Port number within the node.
    pub port: u32,
    /// The node at the other end of its link.
    pub peer: String,
}

/// A PFC deadlock found during a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Deadlock {
    /// When it was found, ps.
    pub time_ps: u64,
    /// The priority deadlocked.
    pub priority: u8,
    /// Since when every queue of the cycle has been paused, ps.
    pub paused_since_ps: u64,
    /// The egress queues of the cycle, each paused by the ingress of the
    /// next one's switch.
    pub ports: Vec<DeadlockPort>,
}

impl Deadlock {
    /// One line for an error message.
    pub fn describe(&self) -> String {
        let path: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("{} -> {}", p.node, p.peer))
            .collect();
        format!(
            "PFC deadlock on priority {} found at {:.3} us: the egress queues {} wait on \
             each other in a cycle, all paused since {:.3} us. Break the cycle: route without \
             the bounce or loop (check [[link_failures]] and explicit links), enable \
             [pfc.watchdog], or make the priority lossy",
            self.priority,
            self.time_ps as f64 / 1e6,
            path.join(", "),
            self.paused_since_ps as f64 / 1e6
        )
    }
}

struct Watchdog {
    detection: Time,
    restoration: Time,
    poll: Time,
    drop: bool,
    /// Per port, per priority: when the last PFC frame came in.
    last_rx: Vec<[Time; 8]>,
}

/// A host whose NIC stops draining.
struct Storm {
    host: u32,
    start: Time,
    end: Option<Time>,
}

/// Deadlock detection, watchdog and storm state of a network.
pub(crate) struct PfcGuard {
    /// Deadlock detection time (zero = off).
    detect: Time,
    stop: bool,
    /// Time of the pending deadlock check, `NEVER` if none.
    check_at: Time,
    deadlocks: Vec<Deadlock>,
    /// Set when a deadlock should end the run.
    pub halt: bool,
    wd: Option<Watchdog>,
    storms: Vec<Storm>,
}

impl PfcGuard {
    /// The guard of a packet-level fabric with PFC, or None when nothing
    /// is to be guarded.
    pub fn new(spec: &FabricSpec, n_ports: usize, hosts: &[&str]) -> Result<Option<Box<Self>>> {
        let pfc = &spec.pfc;
        let pfc_on = pfc.enabled && !pfc.priorities.is_empty();
        let mut storms = Vec::new();
        for (i, s) in spec.pfc_storms.iter().enumerate() {
            let Some(h) = hosts.iter().position(|&n| n == s.host) else {
                return fabric_err(format!(
                    "pfc_storms[{i}]: no host named {:?} (a storm comes from a host NIC; \
                     `fabriclab fabric show` lists the hosts)",
                    s.host
                ));
            };
            storms.push(Storm {
                host: h as u32,
                start: Time::from_ns_f64(s.start_us * 1e3),
                end: s.end_us.map(|e| Time::from_ns_f64(e * 1e3)),
            });
        }
        let guarded = !storms.is_empty() || pfc.watchdog.is_some();
        if guarded && spec.sim.backend == crate::config::Backend::Flow {
            return fabric_err(
                "[pfc.watchdog] and [[pfc_storms]] act on queues and PFC frames, which the flow \
                 backend does not model; use sim.backend = \"packet\"",
            );
        }
        if guarded && spec.is_infiniband() {
            return fabric_err(
                "[pfc.watchdog] and [[pfc_storms]] are about Ethernet PFC; InfiniBand uses \
                 credit-based flow control instead",
            );
        }
        if !pfc_on
            || spec.is_infiniband()
            || spec.sim.backend == crate::config::Backend::Flow
            || (pfc.deadlock.detect_us == 0.0 && !guarded)
        {
            return Ok(None);
        }
        let wd = pfc.watchdog.as_ref().map(|w| Watchdog {
            detection: Time::from_ns_f64(w.detection_us * 1e3),
            restoration: Time::from_ns_f64(w.restoration_us * 1e3),
            poll: Time::from_ns_f64(w.poll_us * 1e3),
            drop: w.action == WatchdogAction::Drop,
            last_rx: vec![[Time::ZERO; 8]; n_ports],
        });
        Ok(Some(Box::new(PfcGuard {
            detect: Time::from_ns_f64(pfc.deadlock.detect_us * 1e3),
            stop: pfc.deadlock.action == DeadlockAction::Stop,
            check_at: Time::NEVER,
            deadlocks: Vec::new(),
            halt: false,
            wd,
            storms,
        })))
    }

    /// The events that start the guard's work (storms, the first poll).
    pub fn first_events(&self) -> Vec<(Time, Ev)> {
        let mut out = Vec::new();
        for (i, s) in self.storms.iter().enumerate() {
            out.push((s.start, Ev::PfcStorm(i as u32, true)));
            if let Some(end) = s.end {
                out.push((end, Ev::PfcStorm(i as u32, false)));
            }
        }
        if let Some(w) = &self.wd {
            out.push((w.poll, Ev::WatchdogPoll));
        }
        out
    }
}

impl Net {
    /// Deadlocks found so far.
    pub fn deadlocks(&self) -> &[Deadlock] {
        self.guard.as_ref().map_or(&[], |g| &g.deadlocks)
    }

    /// True once a deadlock has ended the run.
    pub(crate) fn deadlock_halt(&self) -> bool {
        self.guard.as_ref().is_some_and(|g| g.halt)
    }

    /// The error a tool reports for a run that ended in a deadlock.
    pub fn deadlock_error(&self) -> crate::Error {
        let msg = self.deadlocks().last().map_or_else(
            || "the run ended in a PFC deadlock".to_string(),
            Deadlock::describe,
        );
        crate::Error::Deadlock(msg)
    }

    /// A PFC frame came in on port `pi` for `prio` (already counted).
    /// Returns false when the frame is to be ignored (a queue the watchdog
    /// took out of lossless service).
    pub(crate) fn guard_pause_rx(&mut self, pi: PortIdx, prio: usize) -> bool {
        let now = self.now();
        let Some(g) = self.guard.as_deref_mut() else {
            return true;
        };
        if let Some(w) = g.wd.as_mut() {
            w.last_rx[pi as usize][prio] = now;
        }
        let port = &self.ports[pi as usize];
        if port.storm & (1 << prio) != 0 && self.is_switch(port.node) {
            return false;
        }
        true
    }

    /// A pause took hold of switch egress `pi` (called after its state is
    /// updated): make sure a deadlock check is due when it has lasted.
    pub(crate) fn guard_paused(&mut self, pi: PortIdx) {
        let now = self.now();
        let port = &self.ports[pi as usize];
        if !self.is_switch(port.node) || !self.is_switch(port.peer_node) {
            return;
        }
        let Some(g) = self.guard.as_deref_mut() else {
            return;
        };
        if g.detect == Time::ZERO || g.check_at != Time::NEVER {
            return;
        }
        g.check_at = now + g.detect;
        self.q.schedule(g.check_at, Ev::PfcCheck);
    }

    /// Is switch egress (pi, prio) paused without a break since at most
    /// `by`, with packets queued? Returns the start of the pause.
    fn stuck_since(&self, pi: PortIdx, prio: usize, by: Time) -> Option<Time> {
        let now = self.now();
        let port = &self.ports[pi as usize];
        let since = port.pause_since[prio]?;
        (since <= by && port.paused_until[prio] > now && !port.prio[prio].queue.is_empty())
            .then_some(since)
    }

    pub(crate) fn on_pfc_check(&mut self) {
        let now = self.now();
        let Some(g) = self.guard.as_deref_mut() else {
            return;
        };
        g.check_at = Time::NEVER;
        let detect = g.detect;
        let by = Time(now.0.saturating_sub(detect.0));
        let first_switch_port = self.node_ports[self.topo.n_hosts];
        // When to look again: when the oldest pause still in force has
        // lasted the detection time (or a detection time from now).
        let mut next = Time::NEVER;
        let mut found = None;
        for prio in (0..8).filter(|&p| self.p.lossless[p]) {
            let mut stuck: Vec<(PortIdx, Time)> = Vec::new();
            for pi in first_switch_port..self.ports.len() as u32 {
                let port = &self.ports[pi as usize];
                if !self.is_switch(port.peer_node) {
                    continue;
                }
                if let Some(since) = port.pause_since[prio] {
                    if port.paused_until[prio] > now {
                        let due = since + detect;
                        next = next.min(if due > now { due } else { now + detect });
                    }
                }
                if let Some(since) = self.stuck_since(pi, prio, by) {
                    stuck.push((pi, since));
                }
            }
            if stuck.len() >= 2 {
                if let Some(cycle) = self.find_cycle(&stuck, prio) {
                    found = Some((prio, cycle));
                    break;
                }
            }
        }
        if let Some((prio, cycle)) = found {
            let d = self.deadlock_report(now, prio, &cycle);
            let g = self.guard.as_deref_mut().expect("guard");
            // The same cycle, still stuck, is reported once.
            let known = g.deadlocks.iter().any(|k| {
                (k.priority, k.paused_since_ps, &k.ports)
                    == (d.priority, d.paused_since_ps, &d.ports)
            });
            if !known {
                g.deadlocks.push(d);
            }
            if g.stop {
                g.halt = true;
                return;
            }
            // Going on: look again a detection time later.
            next = next.max(now + detect);
        }
        if next != Time::NEVER {
            // Never more often than an eighth of the detection time.
            let at = next.max(now + Time((detect.0 / 8).max(1)));
            self.guard.as_deref_mut().expect("guard").check_at = at;
            self.q.schedule(at, Ev::PfcCheck);
        }
    }

    fn deadlock_report(&self, now: Time, prio: usize, cycle: &[(PortIdx, Time)]) -> Deadlock {
        let since = cycle.iter().map(|&(_, s)| s).max().unwrap_or(now);
        let ports = cycle
            .iter()
            .map(|&(pi, _)| {
                let p = &self.ports[pi as usize];
                DeadlockPort {
                    node: self.topo.nodes[p.node as usize].name.clone(),
                    port: pi - self.node_ports[p.node as usize],
                    peer: self.topo.nodes[p.peer_node as usize].name.clone(),
                }
            })
            .collect();
        Deadlock {
            time_ps: now.0,
            priority: prio as u8,
            paused_since_ps: since.0,
            ports,
        }
    }

    /// A cycle among `stuck` egresses of `prio`, in order.
    fn find_cycle(&self, stuck: &[(PortIdx, Time)], prio: usize) -> Option<Vec<(PortIdx, Time)>> {
        let index = |pi: PortIdx| stuck.iter().position(|&(q, _)| q == pi);
        // Edges: p -> q when q (a port of p's peer switch) holds a packet
        // that came in through p's peer port.
        let edges: Vec<Vec<usize>> = stuck
            .iter()
            .map(|&(pi, _)| {
                let port = &self.ports[pi as usize];
                let (ingress, node) = (port.peer, port.peer_node as usize);
                (self.node_ports[node]..self.node_ports[node + 1])
                    .filter_map(|q| {
                        let j = index(q)?;
                        self.ports[q as usize].prio[prio]
                            .queue
                            .iter()
                            .any(|&pkt| self.pkts.get(pkt).ingress == ingress)
                            .then_some(j)
                    })
                    .collect()
            })
            .collect();
        // Depth-first search with colours; the first back edge closes a cycle.
        let n = stuck.len();
        let mut colour = vec![0u8; n];
        let mut parent = vec![usize::MAX; n];
        for root in 0..n {
            if colour[root] != 0 {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            colour[root] = 1;
            while let Some(&mut (v, ref mut k)) = stack.last_mut() {
                if *k < edges[v].len() {
                    let w = edges[v][*k];
                    *k += 1;
                    match colour[w] {
                        0 => {
                            colour[w] = 1;
                            parent[w] = v;
                            stack.push((w, 0));
                        }
                        1 => {
                            // Back edge v -> w: the cycle is w .. v.
                            let mut cycle = vec![v];
                            let mut u = v;
                            while u != w {
                                u = parent[u];
                                cycle.push(u);
                            }
                            cycle.reverse();
                            // Start at the lowest port, for a stable report.
                            let start = (0..cycle.len())
                                .min_by_key(|&i| stuck[cycle[i]].0)
                                .unwrap_or(0);
                            cycle.rotate_left(start);
                            return Some(cycle.into_iter().map(|i| stuck[i]).collect());
                        }
                        _ => {}
                    }
                } else {
                    colour[v] = 2;
                    stack.pop();
                }
            }
        }
        None
    }

    /// The watchdog looks at every lossless switch egress queue.
    pub(crate) fn on_watchdog_poll(&mut self) {
        let now = self.now();
        let Some(w) = self.guard.as_ref().and_then(|g| g.wd.as_ref()) else {
            return;
        };
        let (detection, restoration, poll, drop) = (w.detection, w.restoration, w.poll, w.drop);
        let first_switch_port = self.node_ports[self.topo.n_hosts];
        for pi in first_switch_port..self.ports.len() as u32 {
            for prio in 0..8 {
                if !self.p.lossless[prio] {
                    continue;
                }
                let port = &self.ports[pi as usize];
                if port.storm & (1 << prio) != 0 {
                    let w = self.guard.as_ref().and_then(|g| g.wd.as_ref()).expect("wd");
                    if now - w.last_rx[pi as usize][prio] >= restoration {
                        self.ports[pi as usize].storm &= !(1 << prio);
                        self.ports[pi as usize].c.wd_restores += 1;
                        self.storms_active -= 1;
                    }
                    continue;
                }
                let Some(since) = port.pause_since[prio] else {
                    continue;
                };
                if port.paused_until[prio] <= now || now - since < detection {
                    continue;
                }
                self.watchdog_storm(pi, prio, drop);
            }
        }
        // Poll on while anything else can happen.
        if !self.q.is_empty() {
            self.q.schedule(now + poll, Ev::WatchdogPoll);
        }
    }

    /// Take egress (pi, prio) out of lossless service.
    fn watchdog_storm(&mut self, pi: PortIdx, prio: usize, drop: bool) {
        let now = self.now();
        let port = &mut self.ports[pi as usize];
        port.storm |= 1 << prio;
        port.c.wd_storms += 1;
        self.storms_active += 1;
        // Restoration counts from the detection (SONiC's pfc_restore starts
        // its countdown when the queue is stormed, and any PFC frame resets
        // it): a frame from before the detection does not shorten it.
        if let Some(w) = self.guard.as_deref_mut().and_then(|g| g.wd.as_mut()) {
            w.last_rx[pi as usize][prio] = now;
        }
        let port = &mut self.ports[pi as usize];
        // The queue no longer honours the pause in force...
        port.paused_until[prio] = now;
        port.settle_pause(prio, now);
        // ... and no longer pauses the storming link.
        let was = port.prio[prio].xoff;
        port.prio[prio].xoff = false;
        self.audit_pfc(pi, prio as u8, false, was);
        if drop {
            while let Some(pkt) = self.ports[pi as usize].prio[prio].queue.pop_front() {
                let stored = self.stored_bytes(pkt);
                let port = &mut self.ports[pi as usize];
                port.prio[prio].qbytes -= stored;
                port.total_qbytes -= stored;
                self.release_switch_buffer(pi, pkt, prio);
                self.watchdog_drop(pi, pkt, prio);
            }
            self.ports[pi as usize].nonempty &= !(1 << prio);
        }
        self.try_tx(pi);
    }

    /// A packet the watchdog drops at port `pi`.
    pub(crate) fn watchdog_drop(&mut self, pi: PortIdx, pkt: PktId, prio: usize) {
        let wire = self.pkts.get(pkt).wire as u64;
        let c = &mut self.ports[pi as usize].c;
        c.add_drop(prio, wire);
        c.wd_drops += 1;
        self.audit_drop(pi, pkt, true);
        self.pkts.free(pkt);
    }

    /// Whether XOFF for `prio` must not go out of port `pi`: a switch
    /// port whose queue the watchdog took out of lossless service.
    pub(crate) fn watchdog_silences(&self, pi: PortIdx, prio: u8) -> bool {
        let port = &self.ports[pi as usize];
        port.storm & (1 << prio) != 0 && self.is_switch(port.node)
    }

    /// Whether a packet of `prio` from ingress `in_port` to egress `out`
    /// meets a queue the watchdog took out of service with action drop.
    #[inline]
    pub(crate) fn watchdog_blocks(&self, in_port: PortIdx, out: PortIdx, prio: usize) -> bool {
        let bit = 1 << prio;
        (self.ports[out as usize].storm | self.ports[in_port as usize].storm) & bit != 0
            && self
                .guard
                .as_ref()
                .and_then(|g| g.wd.as_ref())
                .is_some_and(|w| w.drop)
    }

    /// A storming host NIC starts (or stops) pausing its switch.
    pub(crate) fn on_pfc_storm(&mut self, storm: u32, start: bool) {
        let Some(g) = self.guard.as_ref() else { return };
        let host = g.storms[storm as usize].host;
        let pi = self.nics[host as usize].port;
        let was = self.ports[pi as usize].storm != 0;
        if was == start {
            return; // overlapping storm entries of one host
        }
        self.ports[pi as usize].storm = if start { 0xff } else { 0 };
        if start {
            self.storms_active += 1;
        } else {
            self.storms_active -= 1;
        }
        for prio in 0..8u8 {
            if self.p.lossless[prio as usize] {
                self.send_pfc(pi, prio, start);
            }
        }
    }

    /// A packet reached host port `pi` whose NIC is not draining: dropped.
    pub(crate) fn storm_discard(&mut self, pi: PortIdx, pkt: PktId) {
        let p = self.pkts.get(pkt);
        let (wire, prio) = (p.wire as u64, p.prio as usize);
        self.ports[pi as usize].c.add_drop(prio, wire);
        self.pkts.free(pkt);
    }
}
