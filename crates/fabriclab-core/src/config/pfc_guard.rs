//! What guards a lossless fabric against PFC gone wrong: deadlock
//! detection (`[pfc.deadlock]`), the switches' PFC watchdog
//! (`[pfc.watchdog]`), and the fault that calls for it, a host NIC that
//! stops draining and pauses its switch for ever (`[[pfc_storms]]`).
//!
//! Deadlock detection is on by default (1 ms, stop the run): a PFC deadlock
//! never resolves, and without it a run would only end at its time limit.
//! The watchdog is off by default, as on most switches until configured;
//! its defaults are SONiC's `pfcwd start_default` (200 ms detection, 200 ms
//! restoration, 200 ms polling, action drop). See `net/pfc_guard.rs` for
//! the model and what it leaves out.

use super::time_us;
use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// What to do when a PFC deadlock is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlockAction {
    /// End the run with outcome `Deadlock` (the tools then fail with an
    /// error naming the cycle).
    Stop,
    /// Record the deadlock and go on (to watch a watchdog break it, say).
    Continue,
}

/// PFC deadlock detection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeadlockSpec {
    /// A cycle of switch egress queues, each holding packets that came in
    /// through the ingress that pauses the one before it, all paused
    /// without a break for this long, is a deadlock, us. 0 turns the
    /// detection off.
    pub detect_us: f64,
    /// What to do when one is found.
    pub action: DeadlockAction,
}

impl Default for DeadlockSpec {
    fn default() -> Self {
        DeadlockSpec {
            detect_us: 1_000.0,
            action: DeadlockAction::Stop,
        }
    }
}

impl DeadlockSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == DeadlockSpec::default()
    }
}

/// What the watchdog does to a queue in a PFC storm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogAction {
    /// Drop the queue's packets and every new one for it, and the packets
    /// of that priority arriving from the storming port; PFC is neither
    /// honoured nor sent on that port and priority (SONiC's default).
    Drop,
    /// Ignore the storming port's pauses and keep sending: the queue is
    /// lossy on that port until restored.
    Forward,
}

/// The switches' PFC watchdog, as SONiC's pfcwd (and the vendors'
/// equivalents) run it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WatchdogSpec {
    /// A lossless egress queue paused without a break for this long, seen
    /// at a poll, is in a storm, us.
    pub detection_us: f64,
    /// A stormed queue is restored once no PFC frame has come in on it for
    /// this long, seen at a poll, us.
    pub restoration_us: f64,
    /// The watchdog looks at the queues every `poll_us`.
    pub poll_us: f64,
    /// What it does to a stormed queue.
    pub action: WatchdogAction,
}

impl Default for WatchdogSpec {
    fn default() -> Self {
        WatchdogSpec {
            detection_us: 200_000.0,
            restoration_us: 200_000.0,
            poll_us: 200_000.0,
            action: WatchdogAction::Drop,
        }
    }
}

/// A host NIC whose receive side stops draining: from `start_us` it
/// discards what arrives and sends XOFF on every lossless priority without
/// end (refreshed before each pause runs out), until `end_us` if given
/// (then XON). The NIC bug behind the "PFC storms" of Guo et al.,
/// SIGCOMM 2016.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcStorm {
    /// The host.
    pub host: String,
    /// When its NIC stops draining, us from the start of the run.
    pub start_us: f64,
    /// When it recovers, us; absent = never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_us: Option<f64>,
}

pub(crate) fn validate(
    deadlock: &DeadlockSpec,
    watchdog: Option<&WatchdogSpec>,
    storms: &[PfcStorm],
    pfc_on: bool,
    infiniband: bool,
) -> Result<()> {
    time_us("pfc.deadlock.detect_us", deadlock.detect_us)?;
    if let Some(w) = watchdog {
        for (field, v) in [
            ("pfc.watchdog.detection_us", w.detection_us),
            ("pfc.watchdog.restoration_us", w.restoration_us),
            ("pfc.watchdog.poll_us", w.poll_us),
        ] {
            time_us(field, v)?;
            if v < 0.001 {
                return fabric_err(format!(
                    "{field} = {v} us is below 1 ns; the watchdog needs a positive time"
                ));
            }
        }
        if !pfc_on {
            return fabric_err(
                "pfc.watchdog watches lossless queues, but PFC is off (pfc.enabled = false); \
                 enable PFC or drop [pfc.watchdog]",
            );
        }
    }
    for (i, s) in storms.iter().enumerate() {
        time_us(&format!("pfc_storms[{i}].start_us"), s.start_us)?;
        if let Some(end) = s.end_us {
            time_us(&format!("pfc_storms[{i}].end_us"), end)?;
            if end <= s.start_us {
                return fabric_err(format!(
                    "pfc_storms[{i}] ({}): end_us ({end}) must come after start_us ({})",
                    s.host, s.start_us
                ));
            }
        }
        if !pfc_on {
            // InfiniBand has no PFC (credits pace its links): no setting
            // would make a storm possible there.
            let fix = if infiniband {
                "an Ethernet transport with pfc.enabled = true; InfiniBand has no PFC"
            } else {
                "pfc.enabled = true"
            };
            return fabric_err(format!(
                "pfc_storms[{i}] ({}): a PFC storm needs PFC ({fix})",
                s.host
            ));
        }
    }
    Ok(())
}
