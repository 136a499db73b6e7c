//! DCQCN reaction point: the per-QP rate state machine at the sender.
//!
//! Implements the DCQCN paper's algorithm (alpha estimate, multiplicative
//! cut on CNP, fast recovery, additive and hyper increase driven by a timer
//! and a byte counter, each counting its expirations since the last cut).
//! Alpha decay is evaluated lazily: instead of a timer firing every alpha
//! period for every QP, the number of elapsed periods since the last update
//! is applied at once when alpha is next needed. The rate-increase timer runs
//! only while the QP is below line rate. Not modelled: the ConnectX "rate
//! reduce monitor period" quantisation of CNP handling beyond the minimum
//! time between cuts.

use crate::config::DcqcnParams;
use crate::engine::Timer;
use crate::units::{Rate, Time};

/// Parameters converted to simulation units.
#[derive(Clone, Debug)]
pub struct DcqcnConf {
    /// Alpha gain.
    pub g: f64,
    /// Alpha decay period.
    pub alpha_period: Time,
    /// Rate-increase timer period.
    pub increase_period: Time,
    /// Byte counter, bytes.
    pub byte_counter: u64,
    /// Fast-recovery steps.
    pub f: u32,
    /// Additive increase, b/s.
    pub rai_bps: f64,
    /// Hyper increase, b/s.
    pub rhai_bps: f64,
    /// Minimum rate, b/s.
    pub min_rate_bps: f64,
    /// Minimum time between cuts.
    pub min_cut_gap: Time,
    /// CNP interval at the notification point.
    pub cnp_interval: Time,
    /// RT = RC on every cut, or only on the first cut after an increase.
    pub clamp_target: bool,
}

impl DcqcnConf {
    /// Convert resolved parameters.
    pub fn new(p: &DcqcnParams) -> Self {
        DcqcnConf {
            g: p.g,
            alpha_period: Time::from_ns_f64(p.alpha_period_us * 1e3),
            increase_period: Time::from_ns_f64(p.rate_increase_period_us * 1e3),
            byte_counter: p.byte_counter_bytes,
            f: p.fast_recovery_steps,
            rai_bps: p.rai_mbps * 1e6,
            rhai_bps: p.rhai_mbps * 1e6,
            min_rate_bps: p.min_rate_mbps * 1e6,
            min_cut_gap: Time::from_ns_f64(p.min_time_between_cuts_us * 1e3),
            cnp_interval: Time::from_ns_f64(p.cnp_interval_us * 1e3),
            clamp_target: p.clamp_target_rate,
        }
    }
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
    alpha_updated: Time,
    last_cut: Option<Time>,
    t_count: u32,
    b_count: u32,
    bytes: u64,
    increased_since_cut: bool,
    /// The rate-increase timer.
    pub timer: Timer,
}

impl Dcqcn {
    /// A QP starting at line rate.
    pub fn new(line: Rate) -> Self {
        let l = line.as_bps() as f64;
        Dcqcn {
            rc: l,
            rt: l,
            alpha: 1.0,
            line: l,
            alpha_updated: Time::ZERO,
            last_cut: None,
            t_count: 0,
            b_count: 0,
            bytes: 0,
            increased_since_cut: true,
            timer: Timer::default(),
        }
    }

    /// Current sending rate.
    pub fn rate(&self) -> Rate {
        Rate(self.rc.round().max(1.0) as u64)
    }

    /// True when below line rate (the increase timer must run).
    pub fn limited(&self) -> bool {
        self.rc < self.line
    }

    fn decay_alpha(&mut self, now: Time, c: &DcqcnConf) {
        let periods = (now - self.alpha_updated).0 / c.alpha_period.0.max(1);
        if periods > 0 {
            self.alpha *= (1.0 - c.g).powi(periods.min(i32::MAX as u64) as i32);
            self.alpha_updated += Time(periods * c.alpha_period.0);
        }
    }

    /// A CNP arrived. Returns true if the rate was cut (the caller then
    /// (re)arms the increase timer).
    pub fn on_cnp(&mut self, now: Time, c: &DcqcnConf) -> bool {
        if let Some(t) = self.last_cut {
            if now - t < c.min_cut_gap {
                return false;
            }
        }
        self.decay_alpha(now, c);
        if c.clamp_target || self.increased_since_cut {
            self.rt = self.rc;
        }
        self.increased_since_cut = false;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(c.min_rate_bps);
        self.alpha = (1.0 - c.g) * self.alpha + c.g;
        self.alpha_updated = now;
        self.last_cut = Some(now);
        self.t_count = 0;
        self.b_count = 0;
        self.bytes = 0;
        true
    }

    /// The increase timer fired.
    pub fn on_timer(&mut self, c: &DcqcnConf) {
        self.t_count += 1;
        self.increase(c);
    }

    /// `wire` bytes were sent; may trigger a byte-counter increase.
    #[inline]
    pub fn on_sent(&mut self, wire: u64, c: &DcqcnConf) {
        if !self.limited() {
            return;
        }
        self.bytes += wire;
        if self.bytes >= c.byte_counter {
            self.bytes -= c.byte_counter;
            self.b_count += 1;
            self.increase(c);
        }
    }

    fn increase(&mut self, c: &DcqcnConf) {
        self.increased_since_cut = true;
        let (t, b) = (self.t_count, self.b_count);
        if t > c.f && b > c.f {
            let i = t.min(b) - c.f;
            self.rt += i as f64 * c.rhai_bps;
        } else if t > c.f || b > c.f {
            self.rt += c.rai_bps;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        // Within a rounding error of line rate: snap to it and stop.
        if self.line - self.rc < 1.0 {
            self.rc = self.line;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> DcqcnConf {
        DcqcnConf::new(&DcqcnParams::connectx())
    }

    #[test]
    fn first_cnp_halves_the_rate_with_alpha_one() {
        let c = conf();
        let mut d = Dcqcn::new(Rate::gbps(100));
        assert!(d.on_cnp(Time::us(10), &c));
        // alpha decayed 10 periods from 1, then cut by alpha/2.
        let a = (1.0 - c.g).powi(10);
        assert!((d.rc - 100e9 * (1.0 - a / 2.0)).abs() < 1.0);
        assert_eq!(d.rt, 100e9);
        assert!((d.alpha - ((1.0 - c.g) * a + c.g)).abs() < 1e-12);
    }

    #[test]
    fn cuts_closer_than_the_minimum_gap_are_ignored() {
        let c = conf();
        let mut d = Dcqcn::new(Rate::gbps(100));
        assert!(d.on_cnp(Time::us(10), &c));
        let rc = d.rc;
        assert!(!d.on_cnp(Time::us(12), &c));
        assert_eq!(d.rc, rc);
        assert!(d.on_cnp(Time::us(14), &c));
        assert!(d.rc < rc);
        // ConnectX (no clamping): the target stays at the rate before the
        // first cut until the QP has increased again.
        assert_eq!(d.rt, 100e9);
    }

    #[test]
    fn the_paper_clamps_the_target_on_every_cut() {
        let c = DcqcnConf::new(&DcqcnParams::paper());
        let mut d = Dcqcn::new(Rate::gbps(40));
        d.on_cnp(Time::ZERO, &c);
        let rc = d.rc;
        d.on_cnp(Time::us(100), &c);
        assert_eq!(d.rt, rc);
    }

    #[test]
    fn fast_recovery_halves_the_distance_to_the_target() {
        let c = conf();
        let mut d = Dcqcn::new(Rate::gbps(100));
        d.on_cnp(Time::ZERO, &c);
        let (rc, rt) = (d.rc, d.rt);
        d.on_timer(&c); // t_count = 1 <= F = 1: fast recovery
        assert!((d.rc - (rc + rt) / 2.0).abs() < 1.0);
        assert_eq!(d.rt, rt);
    }

    #[test]
    fn additive_then_hyper_increase() {
        let c = DcqcnConf::new(&DcqcnParams::paper());
        let mut d = Dcqcn::new(Rate::gbps(40));
        d.on_cnp(Time::ZERO, &c);
        d.on_cnp(Time::us(100), &c);
        for _ in 0..=c.f {
            d.on_timer(&c);
        }
        // t_count = F + 1 > F, b_count = 0: additive.
        let rt0 = d.rt;
        d.on_timer(&c);
        assert!((d.rt - (rt0 + c.rai_bps)).abs() < 1.0);
        // Push the byte counter past F as well: hyper increase.
        for _ in 0..=c.f {
            d.on_sent(c.byte_counter, &c);
        }
        let rt1 = d.rt;
        d.on_timer(&c);
        let i = d.t_count.min(d.b_count) - c.f;
        assert!((d.rt - (rt1 + i as f64 * c.rhai_bps).min(40e9)).abs() < 1.0);
    }

    #[test]
    fn alpha_decays_lazily_by_elapsed_periods() {
        let c = conf();
        let mut d = Dcqcn::new(Rate::gbps(100));
        d.on_cnp(Time::ZERO, &c);
        let a0 = d.alpha;
        d.decay_alpha(Time::ns(3_500), &c); // 3 whole periods of 1 us
        assert!((d.alpha - a0 * (1.0 - c.g).powi(3)).abs() < 1e-12);
    }

    #[test]
    fn rate_never_exceeds_line_nor_drops_below_minimum() {
        let c = conf();
        let mut d = Dcqcn::new(Rate::gbps(100));
        for i in 0..10_000u64 {
            d.on_cnp(Time::us(5 * i), &c);
        }
        assert!(d.rc >= c.min_rate_bps);
        for _ in 0..100_000 {
            d.on_timer(&c);
        }
        assert!(d.rc <= 100e9);
        assert!(!d.limited());
    }
}
