//! Congestion control of the RDMA queue pairs: the interface between the
//! NIC's RC transport (`nic.rs`) and an algorithm, and the registry of the
//! algorithms there are.
//!
//! An algorithm has two ends, as DCQCN names them:
//!
//! - the **notification point** at the receiver, which turns congestion
//!   marks (ECN CE on data packets) into notifications back to the sender.
//!   Algorithms of the DCQCN family share one, configured by a
//!   [`CnpPolicy`] (how often, per port or per QP, as a packet of its own
//!   or on the ACK); the NIC runs it.
//! - the **reaction point** at the sender: per-QP state that sets the rate
//!   of the QP's limiter, driven by what the NIC tells it (a packet sent, a
//!   notification arrived, a timer it armed fired). It is the
//!   [`ReactionPoint`] trait. It never touches the event queue: it asks for
//!   timers through [`Timers`], and the NIC arms them (lazily invalidated
//!   [`Timer`]s, events `Ev::CcTimer`) and re-times the QP's pending
//!   departure when the rate moved.
//!
//! Adding an algorithm (HPCC, Swift, UEC NSCC ...) is one new file here
//! implementing [`ReactionPoint`], one variant in [`CcConf`] and [`QpCc`]'s
//! [`Rp`] (the compiler then lists the matches to extend), and its section
//! in `config/cc.rs` (a `CcAlgorithm` variant and its parameters).
//! `docs/architecture.md` walks through it.
//!
//! Left out of the interface, for now: signals other than CNPs (the
//! in-band telemetry HPCC reads from ACKs, Swift's delay samples) and a
//! congestion window beside the rate; an algorithm that needs them adds a
//! method with a default body and a call from the NIC where the signal
//! arrives. InfiniBand's congestion control (`ib/cc.rs`) and TCP's
//! (`tcp/cc.rs`) are separate: their signals and units differ.

pub mod dcqcn;

use crate::config::{CcAlgorithm, CcSpec};
use crate::engine::Timer;
use crate::error::Result;
use crate::units::{Rate, Time};

/// How many timers an algorithm may keep per QP.
pub const CC_TIMERS: usize = 2;

/// The timers a reaction point asks the NIC to (re)arm, by slot. Arming a
/// slot makes its pending event stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timers {
    arm: [Option<Time>; CC_TIMERS],
}

impl Timers {
    /// (Re)arm timer `slot` to fire at `at`.
    #[inline]
    pub fn arm(&mut self, slot: usize, at: Time) {
        self.arm[slot] = Some(at);
    }

    /// The requests, by slot.
    #[inline]
    pub fn requests(&self) -> impl Iterator<Item = (usize, Time)> + '_ {
        self.arm
            .iter()
            .enumerate()
            .filter_map(|(k, at)| at.map(|t| (k, t)))
    }
}

/// The notification point of the DCQCN family: a CE-marked data packet
/// makes a CNP unless one left within `interval` (of the receiving port, or
/// of the QP); marks in between make none, now or later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CnpPolicy {
    /// Least time between two CNPs of one limiter.
    pub interval: Time,
    /// The limiter is the receiving port's (else each QP's).
    pub per_port: bool,
    /// The CNP rides on the ACK or NAK of the marked packet (ns-3 HPCC)
    /// instead of a packet of its own.
    pub on_ack: bool,
}

/// A reaction point: one QP's rate state at the sender.
///
/// Each handler gets the algorithm's parameters (`Conf`, shared by every
/// QP of the fabric) and may ask for timers; after each, the NIC reads
/// [`ReactionPoint::rate`] and paces the QP by it.
pub trait ReactionPoint {
    /// Parameters in simulation units.
    type Conf;
    /// A QP at line rate `line`, before any notification.
    fn new(line: Rate, conf: &Self::Conf) -> Self;
    /// The rate the limiter allows now.
    fn rate(&self) -> Rate;
    /// The QP put `wire_bytes` on the wire (called per packet: keep it
    /// cheap). The gap after this packet is paid at the rate this leaves.
    fn on_sent(&mut self, wire_bytes: u64, conf: &Self::Conf);
    /// A congestion notification (CNP) arrived for this QP.
    fn on_notification(&mut self, now: Time, conf: &Self::Conf, timers: &mut Timers);
    /// Timer `slot`, armed through [`Timers`], fired (stale ones never reach
    /// here).
    fn on_timer(&mut self, now: Time, slot: usize, conf: &Self::Conf, timers: &mut Timers);
}

/// The fabric's algorithm and its parameters (the registry: one variant per
/// algorithm).
#[derive(Clone, Debug)]
pub enum CcConf {
    /// DCQCN.
    Dcqcn(dcqcn::DcqcnConf),
}

impl CcConf {
    /// The `[cc]` section's algorithm, or `None` for `algorithm = "none"`.
    pub fn new(spec: &CcSpec) -> Result<Option<CcConf>> {
        Ok(match spec.algorithm {
            CcAlgorithm::None => None,
            CcAlgorithm::Dcqcn => Some(CcConf::Dcqcn(dcqcn::DcqcnConf::new(&spec.dcqcn()?))),
        })
    }

    /// The notification point the receivers run.
    pub fn notification_point(&self) -> CnpPolicy {
        match self {
            CcConf::Dcqcn(c) => CnpPolicy {
                interval: c.cnp_interval,
                per_port: c.cnp_per_port,
                on_ack: c.cnp_on_ack,
            },
        }
    }

    /// Whether a rate change re-times a QP's pending departure.
    pub fn retimes_pending(&self) -> bool {
        match self {
            CcConf::Dcqcn(c) => c.retime,
        }
    }

    /// Reaction-point state for a new QP at line rate `line`.
    pub fn new_qp(&self, line: Rate) -> QpCc {
        let rp = match self {
            CcConf::Dcqcn(c) => Rp::Dcqcn(dcqcn::Dcqcn::new(line, c)),
        };
        QpCc {
            rp,
            timers: Default::default(),
        }
    }
}

/// One QP's reaction point, by algorithm.
#[derive(Clone, Debug)]
pub enum Rp {
    /// DCQCN.
    Dcqcn(dcqcn::Dcqcn),
}

/// A QP's congestion-control state: its reaction point and the timers the
/// NIC keeps for it.
#[derive(Clone, Debug)]
pub struct QpCc {
    /// The algorithm's state.
    pub rp: Rp,
    /// The live generation of each timer slot.
    pub timers: [Timer; CC_TIMERS],
}

impl QpCc {
    /// The rate the limiter allows now.
    #[inline]
    pub fn rate(&self) -> Rate {
        match &self.rp {
            Rp::Dcqcn(d) => d.rate(),
        }
    }

    /// See [`ReactionPoint::on_sent`].
    #[inline]
    pub fn on_sent(&mut self, wire_bytes: u64, conf: &CcConf) {
        match (&mut self.rp, conf) {
            (Rp::Dcqcn(d), CcConf::Dcqcn(c)) => d.on_sent(wire_bytes, c),
        }
    }

    /// See [`ReactionPoint::on_notification`].
    pub fn on_notification(&mut self, now: Time, conf: &CcConf) -> Timers {
        let mut t = Timers::default();
        match (&mut self.rp, conf) {
            (Rp::Dcqcn(d), CcConf::Dcqcn(c)) => d.on_notification(now, c, &mut t),
        }
        t
    }

    /// See [`ReactionPoint::on_timer`].
    pub fn on_timer(&mut self, now: Time, slot: usize, conf: &CcConf) -> Timers {
        let mut t = Timers::default();
        match (&mut self.rp, conf) {
            (Rp::Dcqcn(d), CcConf::Dcqcn(c)) => d.on_timer(now, slot, c, &mut t),
        }
        t
    }
}
