//! DCQCN reaction point: the per-QP rate state machine at the sender.
//!
//! Implements the DCQCN paper's algorithm (alpha estimate, multiplicative
//! cut, fast recovery, additive and hyper increase driven by a timer and a
//! byte counter, each counting its expirations since the last cut) with the
//! ConnectX firmware's documented timing (NVIDIA "DCQCN Parameters" and the
//! `mlxconfig` register descriptions, see `config/cc.rs`):
//!
//! - The rate limiter is allocated by a flow's first CNP, which sets alpha
//!   to `initial_alpha_value`; it is released when the rate climbs back to
//!   line rate (`rpg_max_rate`), so the next congestion episode starts again
//!   from the initial alpha.
//! - Alpha (`alpha_update = "period"`, ConnectX) is updated once per alpha
//!   period (`dce_tcp_rtt`), periods timed from the CNP that allocated the
//!   limiter: up by g if a CNP arrived in the period, however many, else
//!   down by the factor (1 - g). With a CNP per marked packet a QP may get
//!   a dozen CNPs in a 1 us period; they count once. The DCQCN paper's
//!   reaction point (`"cnp"`) raises alpha on every CNP and decays it for
//!   each whole period without one. Both are evaluated lazily, when alpha
//!   is next needed.
//! - Cuts follow `rate_reduce_monitor_period`: "if a CNP is received during
//!   the interval, the flow rate is reduced at the beginning of the next
//!   interval", with intervals timed from the CNP that allocated the
//!   limiter. A CNP is never ignored, only deferred. A period of zero cuts
//!   on every CNP at once, as the paper's reaction point does.
//! - A cut resets both increase counters and restarts the increase timer
//!   (`rpg_time_reset` is the time between increases "if no CNPs are
//!   received").
//! - The target rate follows the current rate on a cut always with
//!   `clamp_tgt_rate`, after a byte-counter increase always, and after a
//!   timer increase with `clamp_tgt_rate_after_time_inc`.
//!
//! Not modelled: `rpg_min_dec_fac` (the largest single cut; the default 50 %
//! never binds since a cut by alpha/2 <= 1/2 is at most 50 %) and
//! `rate_to_set_on_first_cnp` (the default 0 keeps the rate the flow had,
//! which is line rate before its first CNP).

use super::{ReactionPoint, Timers};
use crate::config::DcqcnParams;
use crate::units::{Rate, Time};

/// Timer slot of the rate-increase timer.
pub const INCREASE_TIMER: usize = 0;
/// Timer slot of the deferred cut (end of a rate-reduce monitor period).
pub const CUT_TIMER: usize = 1;

/// Parameters converted to simulation units.
#[derive(Clone, Debug)]
pub struct DcqcnConf {
    /// Alpha gain.
    pub g: f64,
    /// Alpha when the rate limiter is allocated (first CNP).
    pub initial_alpha: f64,
    /// Alpha decay period.
    pub alpha_period: Time,
    /// Alpha once per period with a "CNP arrived" bit (else on every CNP).
    pub alpha_per_period: bool,
    /// Rate-increase timer period.
    pub increase_period: Time,
    /// Byte counter, bytes (0: none; the timer's stage alone decides).
    pub byte_counter: u64,
    /// Fast-recovery steps.
    pub f: u32,
    /// Additive increase, b/s.
    pub rai_bps: f64,
    /// Hyper increase, b/s.
    pub rhai_bps: f64,
    /// Minimum rate, b/s.
    pub min_rate_bps: f64,
    /// Rate-reduce monitor period (zero: cut on every CNP at once).
    pub cut_period: Time,
    /// CNP interval at the notification point.
    pub cnp_interval: Time,
    /// The interval spaces a port's CNPs (else each QP's).
    pub cnp_per_port: bool,
    /// CNPs ride on ACKs (ns-3 HPCC) instead of packets of their own.
    pub cnp_on_ack: bool,
    /// RT = RC on every cut.
    pub clamp_target: bool,
    /// RT = RC on a cut after a timer-driven increase too.
    pub clamp_after_time_inc: bool,
    /// A rate change re-times the pending departure.
    pub retime: bool,
}

impl DcqcnConf {
    /// Convert resolved parameters.
    pub fn new(p: &DcqcnParams) -> Self {
        DcqcnConf {
            g: p.g,
            initial_alpha: p.initial_alpha,
            alpha_period: Time::from_ns_f64(p.alpha_period_us * 1e3),
            alpha_per_period: p.alpha_update == crate::config::AlphaUpdate::Period,
            increase_period: Time::from_ns_f64(p.rate_increase_period_us * 1e3),
            byte_counter: p.byte_counter_bytes,
            f: p.fast_recovery_steps,
            rai_bps: p.rai_mbps * 1e6,
            rhai_bps: p.rhai_mbps * 1e6,
            min_rate_bps: p.min_rate_mbps * 1e6,
            cut_period: Time::from_ns_f64(p.min_time_between_cuts_us * 1e3),
            cnp_interval: Time::from_ns_f64(p.cnp_interval_us * 1e3),
            cnp_per_port: p.cnp_scope == crate::config::CnpScope::Port,
            cnp_on_ack: p.cnp_on_ack,
            clamp_target: p.clamp_target_rate,
            clamp_after_time_inc: p.clamp_target_rate_after_time_inc,
            retime: p.retime_on_rate_change,
        }
    }
}

/// What a CNP asks of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CnpAction {
    /// The rate was cut now: (re)arm the increase timer.
    Cut,
    /// A cut is due at this time: arm the cut timer for it.
    CutAt(Time),
    /// A cut is already pending; nothing to do.
    Pending,
}

/// Reaction-point state of one QP.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    /// Current rate RC, b/s.
    pub rc: f64,
    /// Target rate RT, b/s.
    pub rt: f64,
    /// Congestion estimate alpha.
    pub alpha: f64,
    line: f64,
    /// The rate limiter is allocated (from a first CNP until line rate).
    active: bool,
    /// Start of the rate-reduce monitor periods (the allocating CNP).
    origin: Time,
    /// Start of the alpha period in progress (per-period update), or the
    /// last update (per-CNP update).
    alpha_updated: Time,
    /// A CNP arrived in the alpha period in progress (per-period update).
    cnp_in_period: bool,
    cut_pending: bool,
    t_count: u32,
    b_count: u32,
    bytes: u64,
    timer_inc_since_cut: bool,
    byte_inc_since_cut: bool,
}

impl Dcqcn {
    /// A QP starting at line rate, no rate limiter allocated.
    pub fn at_line_rate(line: Rate) -> Self {
        let l = line.as_bps() as f64;
        Dcqcn {
            rc: l,
            rt: l,
            alpha: 1.0,
            line: l,
            active: false,
            origin: Time::ZERO,
            alpha_updated: Time::ZERO,
            cnp_in_period: false,
            cut_pending: false,
            t_count: 0,
            b_count: 0,
            bytes: 0,
            timer_inc_since_cut: false,
            byte_inc_since_cut: false,
        }
    }

    /// True when below line rate (the increase timer must run).
    pub fn limited(&self) -> bool {
        self.rc < self.line
    }

    /// True while the rate limiter is allocated.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Bring alpha up to `now`: the updates of every alpha period that
    /// ended at or before `now`. Per period, the first of them counts the
    /// CNP bit; the rest are decays.
    fn update_alpha(&mut self, now: Time, c: &DcqcnConf) {
        let period = c.alpha_period.0.max(1);
        let mut periods = (now - self.alpha_updated).0 / period;
        if periods == 0 {
            return;
        }
        self.alpha_updated += Time(periods * period);
        if self.cnp_in_period {
            self.cnp_in_period = false;
            self.alpha = (1.0 - c.g) * self.alpha + c.g;
            periods -= 1;
        }
        self.alpha *= (1.0 - c.g).powi(periods.min(i32::MAX as u64) as i32);
    }

    /// A CNP arrived.
    pub fn on_cnp(&mut self, now: Time, c: &DcqcnConf) -> CnpAction {
        if self.active {
            self.update_alpha(now, c);
            if c.alpha_per_period {
                self.cnp_in_period = true;
            } else {
                self.alpha = (1.0 - c.g) * self.alpha + c.g;
                self.alpha_updated = now;
            }
        } else {
            // The first CNP allocates the rate limiter.
            self.active = true;
            self.origin = now;
            self.alpha = c.initial_alpha;
            self.alpha_updated = now;
            self.cnp_in_period = false;
            self.rt = self.rc;
            self.t_count = 0;
            self.b_count = 0;
            self.bytes = 0;
            self.timer_inc_since_cut = false;
            self.byte_inc_since_cut = false;
        }
        if self.cut_pending {
            return CnpAction::Pending;
        }
        let p = c.cut_period.0;
        if p == 0 {
            self.cut(now, c);
            return CnpAction::Cut;
        }
        self.cut_pending = true;
        let k = (now - self.origin).0 / p + 1;
        CnpAction::CutAt(self.origin + Time(k * p))
    }

    /// The deferred cut is due (the caller then (re)arms the increase timer).
    pub fn on_cut_timer(&mut self, now: Time, c: &DcqcnConf) {
        self.cut_pending = false;
        self.cut(now, c);
    }

    fn cut(&mut self, now: Time, c: &DcqcnConf) {
        self.update_alpha(now, c);
        if c.clamp_target
            || self.byte_inc_since_cut
            || (c.clamp_after_time_inc && self.timer_inc_since_cut)
        {
            self.rt = self.rc;
        }
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(c.min_rate_bps);
        self.t_count = 0;
        self.b_count = 0;
        self.bytes = 0;
        self.timer_inc_since_cut = false;
        self.byte_inc_since_cut = false;
    }

    /// The increase timer fired.
    pub fn on_increase_timer(&mut self, c: &DcqcnConf) {
        self.t_count += 1;
        self.timer_inc_since_cut = true;
        self.increase(c);
    }

    fn increase(&mut self, c: &DcqcnConf) {
        let (t, b) = (self.t_count, self.b_count);
        if c.byte_counter == 0 {
            // No byte counter: the timer's stage alone, as ns-3 HPCC's
            // Mellanox model runs it (F timer events of fast recovery, one
            // additive step, then a hyper step per event).
            if t > c.f + 1 {
                self.rt += c.rhai_bps;
            } else if t > c.f {
                self.rt += c.rai_bps;
            }
        } else if t > c.f && b > c.f {
            let i = t.min(b) - c.f;
            self.rt += i as f64 * c.rhai_bps;
        } else if t > c.f || b > c.f {
            self.rt += c.rai_bps;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        // Within a rounding error of line rate: snap to it, stop, and
        // release the rate limiter unless a cut is already due.
        if self.line - self.rc < 1.0 {
            self.rc = self.line;
            if !self.cut_pending {
                self.active = false;
            }
        }
    }
}

impl ReactionPoint for Dcqcn {
    type Conf = DcqcnConf;

    fn new(line: Rate, _conf: &DcqcnConf) -> Self {
        Dcqcn::at_line_rate(line)
    }

    #[inline]
    fn rate(&self) -> Rate {
        Rate(self.rc.round().max(1.0) as u64)
    }

    /// `wire` bytes were sent; may trigger a byte-counter increase.
    #[inline]
    fn on_sent(&mut self, wire: u64, c: &DcqcnConf) {
        if !self.limited() || c.byte_counter == 0 {
            return;
        }
        self.bytes += wire;
        if self.bytes >= c.byte_counter {
            self.bytes -= c.byte_counter;
            self.b_count += 1;
            self.byte_inc_since_cut = true;
            self.increase(c);
        }
    }

    /// A CNP: a cut now restarts the increase timer; a deferred one arms
    /// the cut timer.
    fn on_notification(&mut self, now: Time, c: &DcqcnConf, timers: &mut Timers) {
        match self.on_cnp(now, c) {
            CnpAction::Cut => timers.arm(INCREASE_TIMER, now + c.increase_period),
            CnpAction::CutAt(at) => timers.arm(CUT_TIMER, at),
            CnpAction::Pending => {}
        }
    }

    /// The deferred cut restarts the increase timer; an increase re-arms
    /// it while the rate is below line rate.
    fn on_timer(&mut self, now: Time, slot: usize, c: &DcqcnConf, timers: &mut Timers) {
        if slot == CUT_TIMER {
            self.on_cut_timer(now, c);
            timers.arm(INCREASE_TIMER, now + c.increase_period);
        } else {
            self.on_increase_timer(c);
            if self.limited() {
                timers.arm(INCREASE_TIMER, now + c.increase_period);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> DcqcnConf {
        DcqcnConf::new(&DcqcnParams::connectx())
    }

    /// A CNP, with its deferred cut carried out at once if there is one.
    fn cnp_and_cut(d: &mut Dcqcn, now: Time, c: &DcqcnConf) {
        match d.on_cnp(now, c) {
            CnpAction::CutAt(at) => d.on_cut_timer(at, c),
            CnpAction::Cut | CnpAction::Pending => {}
        }
    }

    #[test]
    fn the_first_cnp_allocates_the_limiter_and_cuts_at_the_next_period() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        assert!(!d.active());
        // The first CNP, long after the QP was created: alpha starts at the
        // initial value, not at a value decayed since creation.
        let t = Time::us(10_000);
        assert_eq!(d.on_cnp(t, &c), CnpAction::CutAt(t + c.cut_period));
        assert!(d.active());
        assert_eq!(d.alpha, c.initial_alpha);
        assert_eq!(d.rc, 100e9, "no cut before the period ends");
        d.on_cut_timer(t + c.cut_period, &c);
        // Four alpha periods of decay, then the cut by alpha/2.
        let a = c.initial_alpha * (1.0 - c.g).powi(4);
        assert!((d.rc - 100e9 * (1.0 - a / 2.0)).abs() < 1.0);
        assert_eq!(d.rt, 100e9);
    }

    #[test]
    fn cnps_within_a_monitor_period_are_deferred_not_ignored() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        cnp_and_cut(&mut d, Time::ZERO, &c); // cut at 4 us
        let rc = d.rc;
        // A CNP at 5 us cuts at the next period boundary (8 us), and a
        // second one before then adds nothing.
        assert_eq!(d.on_cnp(Time::us(5), &c), CnpAction::CutAt(Time::us(8)));
        assert_eq!(d.on_cnp(Time::us(7), &c), CnpAction::Pending);
        assert_eq!(d.rc, rc);
        d.on_cut_timer(Time::us(8), &c);
        assert!(d.rc < rc);
        // ConnectX (no clamping, no increase since): the target stays at
        // the rate before the first cut.
        assert_eq!(d.rt, 100e9);
    }

    #[test]
    fn connectx_raises_alpha_once_per_period_with_a_cnp() {
        let c = conf();
        let g = c.g;
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        d.on_cnp(Time::ZERO, &c);
        let a0 = d.alpha;
        // Periods [0, 1), [1, 2), [2, 3) us from the first CNP. Five CNPs in
        // the third period count once; it ends at 3 us.
        for ns in [2_100, 2_300, 2_500, 2_700, 2_900] {
            d.on_cnp(Time::ns(ns), &c);
        }
        // Two decays (periods 1 and 2), then the CNP bit of period 3.
        d.update_alpha(Time::us(3), &c);
        let a = (1.0 - g) * (a0 * (1.0 - g).powi(2)) + g;
        assert!((d.alpha - a).abs() < 1e-12, "{} vs {a}", d.alpha);
        // The phase stays that of the first CNP: a CNP at 3.9 us is in the
        // period ending at 4 us, and the one after decays.
        d.on_cnp(Time::ns(3_900), &c);
        d.update_alpha(Time::ns(5_000), &c);
        let a = ((1.0 - g) * a + g) * (1.0 - g);
        assert!((d.alpha - a).abs() < 1e-12);
        // A CNP exactly at 6 us belongs to the period [6, 7) us; one at
        // 7.5 us to [7, 8). A cut at 8 us, a period boundary, sees the
        // update of the period ending then (ns-3 runs its cut 1 ns after
        // the alpha update).
        d.on_cnp(Time::us(6), &c);
        d.on_cnp(Time::ns(7_500), &c);
        let rc = d.rc;
        d.on_cut_timer(Time::us(8), &c);
        let a = (1.0 - g) * ((1.0 - g) * (a * (1.0 - g)) + g) + g;
        assert!((d.alpha - a).abs() < 1e-12, "{} vs {a}", d.alpha);
        assert!((d.rc - rc * (1.0 - a / 2.0)).abs() < 1.0);
    }

    #[test]
    fn the_paper_raises_alpha_on_every_cnp() {
        let c = DcqcnConf::new(&DcqcnParams::paper());
        let g = c.g;
        let mut d = Dcqcn::at_line_rate(Rate::gbps(40));
        d.on_cnp(Time::ZERO, &c);
        let a0 = d.alpha;
        d.on_cnp(Time::us(2), &c);
        d.on_cnp(Time::us(3), &c);
        let a = (1.0 - g) * ((1.0 - g) * a0 + g) + g;
        assert!((d.alpha - a).abs() < 1e-12);
        // 55 us periods from the last CNP: 120 us later, two decays.
        d.update_alpha(Time::us(123), &c);
        assert!((d.alpha - a * (1.0 - g).powi(2)).abs() < 1e-12);
    }

    #[test]
    fn the_paper_cuts_on_every_cnp_and_clamps_the_target() {
        let c = DcqcnConf::new(&DcqcnParams::paper());
        let mut d = Dcqcn::at_line_rate(Rate::gbps(40));
        assert_eq!(d.on_cnp(Time::ZERO, &c), CnpAction::Cut);
        assert_eq!(d.rc, 20e9, "initial alpha 1: the first cut halves");
        let rc = d.rc;
        assert_eq!(d.on_cnp(Time::us(100), &c), CnpAction::Cut);
        assert_eq!(d.rt, rc);
    }

    #[test]
    fn a_timer_increase_clamps_the_target_at_the_next_cut() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        cnp_and_cut(&mut d, Time::ZERO, &c);
        d.on_increase_timer(&c);
        let rc = d.rc;
        cnp_and_cut(&mut d, Time::us(301), &c);
        assert_eq!(d.rt, rc);
        let off = DcqcnConf {
            clamp_after_time_inc: false,
            ..conf()
        };
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        cnp_and_cut(&mut d, Time::ZERO, &off);
        d.on_increase_timer(&off);
        cnp_and_cut(&mut d, Time::us(301), &off);
        assert_eq!(d.rt, 100e9, "only a byte-counter increase clamps then");
    }

    #[test]
    fn fast_recovery_halves_the_distance_to_the_target() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        cnp_and_cut(&mut d, Time::ZERO, &c);
        let (rc, rt) = (d.rc, d.rt);
        d.on_increase_timer(&c); // t_count = 1 <= F = 1: fast recovery
        assert!((d.rc - (rc + rt) / 2.0).abs() < 1.0);
        assert_eq!(d.rt, rt);
    }

    #[test]
    fn additive_then_hyper_increase() {
        let c = DcqcnConf::new(&DcqcnParams::paper());
        let mut d = Dcqcn::at_line_rate(Rate::gbps(40));
        d.on_cnp(Time::ZERO, &c);
        d.on_cnp(Time::us(100), &c);
        for _ in 0..=c.f {
            d.on_increase_timer(&c);
        }
        // t_count = F + 1 > F, b_count = 0: additive.
        let rt0 = d.rt;
        d.on_increase_timer(&c);
        assert!((d.rt - (rt0 + c.rai_bps)).abs() < 1.0);
        // Push the byte counter past F as well: hyper increase.
        for _ in 0..=c.f {
            d.on_sent(c.byte_counter, &c);
        }
        let rt1 = d.rt;
        d.on_increase_timer(&c);
        let i = d.t_count.min(d.b_count) - c.f;
        assert!((d.rt - (rt1 + i as f64 * c.rhai_bps).min(40e9)).abs() < 1.0);
    }

    #[test]
    fn without_a_byte_counter_the_timer_alone_goes_on_to_hyper_increase() {
        // ns-3 HPCC's Mellanox stages with F = 1: fast recovery, one
        // additive step, then a hyper step per timer event; bytes sent
        // count for nothing.
        let c = DcqcnConf {
            byte_counter: 0,
            clamp_target: true, // the target starts at the cut rate
            ..conf()
        };
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        // Two cuts: the second sets the target to the rate the first left.
        cnp_and_cut(&mut d, Time::ZERO, &c);
        cnp_and_cut(&mut d, Time::us(5), &c);
        assert!(d.rt < 60e9, "rt {} rc {}", d.rt, d.rc);
        d.on_sent(1 << 40, &c);
        assert_eq!(d.b_count, 0);
        let rt = d.rt;
        d.on_increase_timer(&c); // stage 1: fast recovery
        assert_eq!(d.rt, rt);
        d.on_increase_timer(&c); // stage 2: additive
        assert!((d.rt - (rt + c.rai_bps)).abs() < 1.0);
        let rt2 = d.rt;
        d.on_increase_timer(&c); // stage 3 on: hyper, one R_HAI per event
        assert!((d.rt - (rt2 + c.rhai_bps)).abs() < 1.0);
        let rt3 = d.rt;
        d.on_increase_timer(&c);
        assert!((d.rt - (rt3 + c.rhai_bps).min(100e9)).abs() < 1.0);
    }

    #[test]
    fn alpha_decays_lazily_by_elapsed_periods() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        d.on_cnp(Time::ZERO, &c);
        let a0 = d.alpha;
        d.update_alpha(Time::ns(3_500), &c); // 3 whole periods of 1 us
        assert!((d.alpha - a0 * (1.0 - c.g).powi(3)).abs() < 1e-12);
    }

    #[test]
    fn back_at_line_rate_the_limiter_is_released_and_alpha_restarts() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        cnp_and_cut(&mut d, Time::ZERO, &c);
        while d.limited() {
            d.on_increase_timer(&c);
        }
        assert!(!d.active());
        // Much later, a new episode: alpha is the initial value again.
        assert!(matches!(
            d.on_cnp(Time::us(50_000), &c),
            CnpAction::CutAt(_)
        ));
        assert_eq!(d.alpha, c.initial_alpha);
    }

    #[test]
    fn rate_never_exceeds_line_nor_drops_below_minimum() {
        let c = conf();
        let mut d = Dcqcn::at_line_rate(Rate::gbps(100));
        for i in 0..10_000u64 {
            cnp_and_cut(&mut d, Time::us(5 * i), &c);
        }
        assert!(d.rc >= c.min_rate_bps);
        for _ in 0..100_000 {
            d.on_increase_timer(&c);
        }
        assert!(d.rc <= 100e9);
        assert!(!d.limited());
    }

    #[test]
    fn as_a_reaction_point_it_asks_for_the_timers_the_nic_arms() {
        // ConnectX: the first CNP defers its cut to the end of the 4 us
        // monitor period (cut timer); the cut restarts the 300 us increase
        // timer; an increase below line rate re-arms it.
        let c = conf();
        let mut d = <Dcqcn as ReactionPoint>::new(Rate::gbps(100), &c);
        let mut t = Timers::default();
        d.on_notification(Time::us(10), &c, &mut t);
        assert_eq!(
            t.requests().collect::<Vec<_>>(),
            [(CUT_TIMER, Time::us(14))]
        );
        let mut t = Timers::default();
        d.on_timer(Time::us(14), CUT_TIMER, &c, &mut t);
        assert!(d.rate() < Rate::gbps(100));
        assert_eq!(
            t.requests().collect::<Vec<_>>(),
            [(INCREASE_TIMER, Time::us(314))]
        );
        let mut t = Timers::default();
        d.on_timer(Time::us(314), INCREASE_TIMER, &c, &mut t);
        assert_eq!(
            t.requests().collect::<Vec<_>>(),
            [(INCREASE_TIMER, Time::us(614))]
        );
        // The paper's reaction point cuts at once and arms only the
        // increase timer (55 us).
        let p = DcqcnConf::new(&DcqcnParams::paper());
        let mut d = <Dcqcn as ReactionPoint>::new(Rate::gbps(40), &p);
        let mut t = Timers::default();
        d.on_notification(Time::ZERO, &p, &mut t);
        assert_eq!(d.rate(), Rate::gbps(20));
        assert_eq!(
            t.requests().collect::<Vec<_>>(),
            [(INCREASE_TIMER, Time::us(55))]
        );
    }
}
