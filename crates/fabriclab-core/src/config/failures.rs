//! Link failures: cables pulled (and put back) at given times, and how fast
//! the fabric reacts to them.
//!
//! A fabric may list `[[link_failures]]`: the link (or every parallel link)
//! between two named nodes goes down at `down_us` and, optionally, comes
//! back at `up_us`. `[failover]` sets the two reaction times the network
//! model uses (see `net/failures.rs`): `detect_us`, after which the two
//! switches at the ends of the link stop using it (loss of signal and
//! hardware ECMP member removal), and `converge_us`, after which the whole
//! fabric routes around it (routing-protocol withdrawal and FIB updates).
//!
//! Defaults (approx., typical published figures): detection 1 ms
//! ("sub-millisecond to a few ms"), convergence 100 ms ("tens to hundreds
//! of ms" for BGP withdrawal and FIB update).
//!
//! Not modelled: InfiniBand's subnet-manager re-route (failures are refused
//! on InfiniBand fabrics), BFD timers as such (set `detect_us` to 3 x the
//! BFD interval when the failure is not a loss of signal), partial failures
//! (one direction, errors without loss of signal).

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// How fast the fabric reacts to a link going down or coming back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailoverSpec {
    /// Time from the cable pull (or its return) until the two switches at
    /// its ends stop (or resume) using the link, us.
    pub detect_us: f64,
    /// Time from the cable pull (or its return) until every switch routes
    /// around it (or over it again), us. At least `detect_us`.
    pub converge_us: f64,
}

impl Default for FailoverSpec {
    fn default() -> Self {
        FailoverSpec {
            detect_us: 1_000.0,
            converge_us: 100_000.0,
        }
    }
}

/// One scheduled link failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFailure {
    /// One end of the link (a switch or host name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Which of the parallel links between `a` and `b` (0-based, in the
    /// order `fabriclab fabric show` lists them); absent = all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// When the link goes down, us from the start of the run.
    pub down_us: f64,
    /// When it comes back up, us; absent = it stays down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_us: Option<f64>,
}

impl FailoverSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == FailoverSpec::default()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        for (field, v) in [
            ("failover.detect_us", self.detect_us),
            ("failover.converge_us", self.converge_us),
        ] {
            super::time_us(field, v)?;
        }
        if self.converge_us < self.detect_us {
            return fabric_err(format!(
                "failover.converge_us ({}) must be at least failover.detect_us ({}): the \
                 rest of the fabric cannot learn of a failure before its own ends do",
                self.converge_us, self.detect_us
            ));
        }
        Ok(())
    }
}
