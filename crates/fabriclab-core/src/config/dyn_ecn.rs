//! Dynamic ECN: switches that retune each queue's marking thresholds while
//! traffic runs, instead of keeping the configured (static) ones.
//!
//! Huawei's "AI ECN" (the EANTC seed's feature under test) and ACC
//! (SIGCOMM 2021) watch, per egress queue, the queue length, the port's
//! output rate and the rate of ECN-marked packets, and pick new (Kmin,
//! Kmax, Pmax) from a discrete set, rewarding high link utilisation and
//! short queues. Their policies are learned and not published. fabriclab's
//! `mode = "dynamic"` is a rule-based controller with the same inputs, the
//! same kind of action and the same objective (`net/dyn_ecn.rs`):
//!
//! - every `interval_us`, for each ECN-marking queue that saw traffic;
//! - if the port's output rate stayed below `target_utilization` of its
//!   line rate while the queue ran empty, after marking in this or the
//!   previous interval, the senders were slowed more than the congestion
//!   needed: thresholds double (mark later);
//! - if the queue never fell below `target_queue_us` of drain time at line
//!   rate over the whole interval (a standing queue) while the port ran at
//!   `target_utilization` or more, and some of its packets still left
//!   unmarked, marking came too late: thresholds halve (mark earlier); a
//!   queue whose every packet was marked is left alone, since marking
//!   harder cannot tell the senders more;
//! - otherwise the thresholds stay;
//! - Kmin and Kmax move together, in powers of two of the configured
//!   `[ecn]` values, at most `steps_down` halvings below them and
//!   `steps_up` doublings above; Pmax stays as configured.
//!
//! Left out: the learned agents' other inputs (incast degree, the share of
//! short and long flows), any coordination between switches, and Pmax as a
//! tuned value.

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// Whether the ECN thresholds are fixed or tuned at run time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    /// The configured Kmin, Kmax, Pmax for the whole run.
    #[default]
    Static,
    /// Thresholds retuned per queue every interval (see the module docs).
    Dynamic,
}

/// The `[ecn.dynamic]` table: the controller's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DynamicEcnSpec {
    /// Control interval, us. Shorter intervals react to transient queues
    /// (see `docs/seeds.md` for the EANTC runs at 50, 100 and 200 us).
    pub interval_us: f64,
    /// Output rate, as a fraction of line rate, below which a drained
    /// queue counts as over-throttled.
    pub target_utilization: f64,
    /// A queue that never falls below this many microseconds of drain time
    /// at line rate over an interval is a standing queue.
    pub target_queue_us: f64,
    /// Most halvings of Kmin and Kmax below the configured values.
    pub steps_down: u32,
    /// Most doublings of Kmin and Kmax above the configured values.
    pub steps_up: u32,
}

impl Default for DynamicEcnSpec {
    fn default() -> Self {
        DynamicEcnSpec {
            interval_us: 200.0,
            target_utilization: 0.9,
            target_queue_us: 20.0,
            steps_down: 3,
            steps_up: 4,
        }
    }
}

impl DynamicEcnSpec {
    /// True for the defaults (left out of a printed fabric).
    pub fn is_default(&self) -> bool {
        *self == DynamicEcnSpec::default()
    }

    /// Check the values; the message names the field to change.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("ecn.dynamic.interval_us", self.interval_us),
            ("ecn.dynamic.target_queue_us", self.target_queue_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return fabric_err(format!(
                    "{name} must be a positive number of microseconds, got {v}"
                ));
            }
        }
        let u = self.target_utilization;
        if !(u > 0.0 && u <= 1.0) {
            return fabric_err(format!(
                "ecn.dynamic.target_utilization must be in (0, 1], got {u}"
            ));
        }
        if self.steps_down > 20 || self.steps_up > 20 {
            return fabric_err("ecn.dynamic.steps_down and steps_up must be at most 20");
        }
        Ok(())
    }
}
