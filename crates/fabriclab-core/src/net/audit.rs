//! The conservation audit (opt-in: `FABRICLAB_AUDIT=1` in the environment,
//! `fabriclab --audit ...` on the command line; always on in the test
//! suite). At the end of every run it checks, and names what breaks:
//!
//! - per Ethernet switch and priority: bytes in = bytes out + dropped +
//!   lost to link failures inside the switch + still queued (frames lost
//!   on a wire were counted out already; PFC frames are not data);
//! - no drop in a lossless priority but the watchdog's (a link failure's
//!   losses are counted apart);
//! - per RC QP: messages posted = completed + failed in error + still in
//!   flight;
//! - per switch port and priority: XOFFs sent = XONs sent (or cleared by
//!   the watchdog) + 1 if the port still holds its upstream paused.
//!
//! On InfiniBand the switch books are kept over all priorities (several
//! share a VL): bytes in = out + queued + waiting for credits, nothing
//! dropped; there is no PFC to match. What it leaves out: iWARP's and
//! TCP's streams (bytes, not messages). The flow backend has no packets:
//! its books are kept in fluid terms (`flow/audit.rs`).
//!
//! When off, the packet path pays one `audit.is_some()` test at each
//! counting point.

use super::packet::{PktId, PktKind};
use super::{Net, PortIdx};
use crate::error::Error;

/// Counters kept while auditing, per global port and priority.
pub(crate) struct Audit {
    rx: Vec<[u64; 8]>,
    tx: Vec<[u64; 8]>,
    dropped: Vec<[u64; 8]>,
    /// Lossless drops that were not the watchdog's.
    lossless_dropped: Vec<[u64; 8]>,
    lost: Vec<[u64; 8]>,
    xoff: Vec<[u64; 8]>,
    xon: Vec<[u64; 8]>,
    /// Per QP: messages posted, completed, failed.
    posted: Vec<u64>,
    done: Vec<u64>,
    failed: Vec<u64>,
}

pub use crate::config::sim::audit_enabled_by_env as enabled_by_env;

/// Bytes the audit keeps per port: seven rows of eight `u64` counters
/// (the fabric's memory estimate counts them when the audit is on).
const _: () = assert!(7 * 64 == crate::config::sim::AUDIT_PORT_BYTES);

impl Audit {
    pub fn new(ports: usize) -> Box<Audit> {
        let z = vec![[0u64; 8]; ports];
        Box::new(Audit {
            rx: z.clone(),
            tx: z.clone(),
            dropped: z.clone(),
            lossless_dropped: z.clone(),
            lost: z.clone(),
            xoff: z.clone(),
            xon: z,
            posted: Vec::new(),
            done: Vec::new(),
            failed: Vec::new(),
        })
    }

    fn qp(&mut self, q: u32) -> usize {
        let i = q as usize;
        if self.posted.len() <= i {
            self.posted.resize(i + 1, 0);
            self.done.resize(i + 1, 0);
            self.failed.resize(i + 1, 0);
        }
        i
    }
}

impl Net {
    /// A data frame reached switch port `pi` (its ingress).
    #[inline]
    pub(crate) fn audit_rx(&mut self, pi: PortIdx, pkt: PktId) {
        if let Some(a) = self.audit.as_deref_mut() {
            let p = self.pkts.get(pkt);
            a.rx[pi as usize][p.prio as usize] += p.wire as u64;
        }
    }

    /// A frame started leaving port `pi` of a switch.
    #[inline]
    pub(crate) fn audit_tx(&mut self, pi: PortIdx, prio: u8, kind: PktKind, wire: u64) {
        if let Some(a) = self.audit.as_deref_mut() {
            if !matches!(kind, PktKind::Pause | PktKind::FlowCtl) {
                a.tx[pi as usize][prio as usize] += wire;
            }
        }
    }

    /// A packet dropped at switch port `pi` (by the watchdog or not).
    pub(crate) fn audit_drop(&mut self, pi: PortIdx, pkt: PktId, watchdog: bool) {
        let lossless = self.p.lossless;
        if let Some(a) = self.audit.as_deref_mut() {
            let p = self.pkts.get(pkt);
            let prio = p.prio as usize;
            a.dropped[pi as usize][prio] += p.wire as u64;
            if lossless[prio] && !watchdog {
                a.lossless_dropped[pi as usize][prio] += p.wire as u64;
            }
        }
    }

    /// A packet lost inside a switch (queued for, or routed to, a dead
    /// port; no route left).
    pub(crate) fn audit_lost(&mut self, pi: PortIdx, pkt: PktId) {
        if let Some(a) = self.audit.as_deref_mut() {
            let p = self.pkts.get(pkt);
            a.lost[pi as usize][p.prio as usize] += p.wire as u64;
        }
    }

    /// Switch port `pi` sent XOFF (`pause`) or XON for `prio`, or the
    /// watchdog cleared its XOFF (counted as an XON); `was` is the XOFF
    /// state before.
    pub(crate) fn audit_pfc(&mut self, pi: PortIdx, prio: u8, pause: bool, was: bool) {
        if let Some(a) = self.audit.as_deref_mut() {
            let (i, p) = (pi as usize, prio as usize);
            match (was, pause) {
                (false, true) => a.xoff[i][p] += 1,
                (true, false) => a.xon[i][p] += 1,
                _ => {}
            }
        }
    }

    /// A message was posted on QP `q` (`n` = 1), completed (`done`) or
    /// failed in error.
    pub(crate) fn audit_msg(&mut self, q: u32, what: MsgEvent, n: u64) {
        if let Some(a) = self.audit.as_deref_mut() {
            let i = a.qp(q);
            match what {
                MsgEvent::Posted => a.posted[i] += n,
                MsgEvent::Done => a.done[i] += n,
                MsgEvent::Failed => a.failed[i] += n,
            }
        }
    }

    /// Check the books; the first violation as an error naming where and
    /// the numbers. Ok when the audit is off.
    pub fn audit_check(&self) -> Result<(), Error> {
        if let Some(r) = self.flow_audit_check() {
            return r.map_err(|e| audit_err(format!("flow backend: {e}")));
        }
        let Some(a) = self.audit.as_deref() else {
            return Ok(());
        };
        let name = |n: u32| self.topo.nodes[n as usize].name.as_str();
        if let Some(ib) = self.ib.as_deref() {
            // InfiniBand: lossless by credits, packets queued on a port or
            // waiting for credits in its VL queues; over all priorities
            // (several map to one VL).
            for sw in self.topo.n_hosts..self.topo.nodes.len() {
                let ports = self.node_ports[sw] as usize..self.node_ports[sw + 1] as usize;
                let all = |v: &Vec<[u64; 8]>| -> u64 { v[ports.clone()].iter().flatten().sum() };
                let queued: u64 = ports.clone().map(|p| self.port_queued_wire_bytes(p)).sum();
                let waiting: u64 = ports
                    .clone()
                    .map(|p| ib.ports[p].wait_bytes.iter().sum::<u64>())
                    .sum();
                let (rx, tx, dropped) = (all(&a.rx), all(&a.tx), all(&a.dropped));
                if rx != tx + queued + waiting || dropped != 0 {
                    return Err(audit_err(format!(
                        "InfiniBand switch {}: {rx} B in but {tx} B out + {queued} B queued + \
                         {waiting} B waiting for credits + {dropped} B dropped",
                        name(sw as u32)
                    )));
                }
            }
        } else {
            for sw in self.topo.n_hosts..self.topo.nodes.len() {
                let ports = self.node_ports[sw]..self.node_ports[sw + 1];
                for prio in 0..8 {
                    let sum = |v: &Vec<[u64; 8]>| -> u64 {
                        ports.clone().map(|p| v[p as usize][prio]).sum()
                    };
                    let queued: u64 = ports
                        .clone()
                        .map(|p| self.queued_wire_bytes(p as usize, prio))
                        .sum();
                    let (rx, tx, dropped, lost) =
                        (sum(&a.rx), sum(&a.tx), sum(&a.dropped), sum(&a.lost));
                    if rx != tx + dropped + lost + queued {
                        return Err(audit_err(format!(
                            "switch {} priority {prio}: {rx} B in but {tx} B out + {dropped} B \
                             dropped + {lost} B lost to link failures + {queued} B queued = {} B",
                            name(sw as u32),
                            tx + dropped + lost + queued
                        )));
                    }
                    let ll = sum(&a.lossless_dropped);
                    if ll > 0 {
                        return Err(Error::Audit(format!(
                            "conservation audit failed: switch {} dropped {ll} B in lossless \
                             priority {prio}, not by the PFC watchdog or a link failure: its PFC \
                             headroom overflowed (switch.headroom_bytes too small for the link's \
                             rate and delay, or a pause that came too late)",
                            name(sw as u32)
                        )));
                    }
                }
                for p in ports.clone() {
                    let port = &self.ports[p as usize];
                    for prio in 0..8 {
                        let (off, on) = (a.xoff[p as usize][prio], a.xon[p as usize][prio]);
                        let held = port.prio[prio].xoff as u64;
                        if off != on + held {
                            return Err(audit_err(format!(
                                "switch {} port {} (to {}) priority {prio}: {off} XOFF but {on} \
                                 XON, {} paused now",
                                name(port.node),
                                p - self.node_ports[sw],
                                name(port.peer_node),
                                if held == 1 { "still" } else { "not" }
                            )));
                        }
                    }
                }
            }
        }
        for (q, qp) in self.qps.iter().enumerate() {
            if q >= a.posted.len() {
                break;
            }
            let in_flight = qp.msgs.len() as u64;
            let (posted, done, failed) = (a.posted[q], a.done[q], a.failed[q]);
            if posted != done + failed + in_flight {
                return Err(audit_err(format!(
                    "QP {q} ({} -> {}): {posted} messages posted but {done} completed + \
                     {failed} failed + {in_flight} in flight",
                    name(qp.host),
                    name(qp.peer_host)
                )));
            }
        }
        Ok(())
    }
}

/// The audit's totals over the whole network (all priorities), to show
/// what was checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AuditSummary {
    /// Data bytes into switches.
    pub switch_rx_bytes: u64,
    /// Data bytes out of switches.
    pub switch_tx_bytes: u64,
    /// Bytes dropped at switches (watchdog's included).
    pub dropped_bytes: u64,
    /// Bytes lost inside switches to link failures.
    pub lost_bytes: u64,
    /// Bytes still queued at switches, in wire bytes as the other totals
    /// (queues themselves hold frames: see `Net::stored_bytes`).
    pub queued_bytes: u64,
    /// XOFF and XON frames sent by switches (state changes).
    pub xoff: u64,
    /// XON (or watchdog clears).
    pub xon: u64,
    /// RC messages posted, completed, failed.
    pub messages_posted: u64,
    /// Completed.
    pub messages_done: u64,
    /// Failed in error.
    pub messages_failed: u64,
}

impl Net {
    /// The audit's totals, or None when the audit is off.
    pub fn audit_summary(&self) -> Option<AuditSummary> {
        let a = self.audit.as_deref()?;
        let first = self.node_ports[self.topo.n_hosts] as usize;
        let all = |v: &Vec<[u64; 8]>| -> u64 { v[first..].iter().flatten().sum() };
        Some(AuditSummary {
            switch_rx_bytes: all(&a.rx),
            switch_tx_bytes: all(&a.tx),
            dropped_bytes: all(&a.dropped),
            lost_bytes: all(&a.lost),
            queued_bytes: (first..self.ports.len())
                .map(|p| self.port_queued_wire_bytes(p))
                .sum(),
            xoff: all(&a.xoff),
            xon: all(&a.xon),
            messages_posted: a.posted.iter().sum(),
            messages_done: a.done.iter().sum(),
            messages_failed: a.failed.iter().sum(),
        })
    }
}

/// What happened to a message, for the audit.
#[derive(Clone, Copy)]
pub(crate) enum MsgEvent {
    Posted,
    Done,
    Failed,
}

fn audit_err(msg: String) -> Error {
    Error::Audit(format!(
        "conservation audit failed: {msg}. This is a bug in fabriclab's model; please \
         report it with the fabric and the command"
    ))
}
