//! TCP congestion control: NewReno, CUBIC and DCTCP window arithmetic, in
//! segments as Linux keeps `snd_cwnd`.
//!
//! - Slow start: cwnd grows by the segments each ACK covers (doubling per
//!   RTT with an ACK every two segments), up to ssthresh.
//! - NewReno avoidance: +1 segment per window of ACKed segments
//!   (`tcp_cong_avoid_ai`); on loss ssthresh = cwnd / 2.
//! - CUBIC (Linux `tcp_cubic.c`, C = 0.4, beta = 717/1024, fast convergence,
//!   TCP-friendly region): the cubic target W(t) = C (t - K)^3 + W_max sets
//!   how many ACKs earn one segment; on loss ssthresh = 0.7 cwnd. Left out:
//!   HyStart, the idle-restart epoch shift; the cubic target is computed
//!   in floating point rather than Linux's fixed point.
//! - DCTCP (RFC 8257, Linux `tcp_dctcp.c`): NewReno growth; alpha = (1 - g)
//!   alpha + g F once per window of data with g = 1/16, F the fraction of
//!   ACKed bytes that carried ECN-Echo, alpha starting at 1; an ECN-Echo
//!   cuts the window to cwnd (1 - alpha / 2) once per window; a loss halves
//!   it (Linux >= 5.1).

use crate::config::TcpCc;
use crate::units::Time;

/// CUBIC's C (Linux: bic_scale 41 x 10 / 1024).
const CUBIC_C: f64 = 410.0 / 1024.0;
/// CUBIC's beta, scaled by 1024.
const CUBIC_BETA: u32 = 717;
/// Linux's `beta_scale` for the TCP-friendly window estimate.
const CUBIC_BETA_SCALE: u32 = 8 * (1024 + CUBIC_BETA) / 3 / (1024 - CUBIC_BETA);
/// DCTCP's gain g = 1/16.
pub const DCTCP_G: f64 = 1.0 / 16.0;

/// The window state every algorithm works on (segments).
#[derive(Clone, Debug)]
pub(crate) struct Window {
    pub cwnd: u32,
    /// ACKed segments towards the next increase in avoidance.
    pub cwnd_cnt: u32,
    pub ssthresh: u32,
}

impl Window {
    /// Slow start: grow by `acked` up to ssthresh; returns what is left.
    fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh.max(self.cwnd));
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd;
        left
    }

    /// One segment per `w` ACKed segments (Linux `tcp_cong_avoid_ai`).
    fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Cubic {
    last_max_cwnd: u32,
    epoch_start: Option<Time>,
    origin: f64,
    k: f64,
    tcp_cwnd: u32,
    ack_cnt: u32,
}

impl Cubic {
    /// ACKs per one-segment increase (Linux `bictcp_update`).
    fn cnt(&mut self, cwnd: u32, acked: u32, now: Time, min_rtt: Time) -> u32 {
        self.ack_cnt += acked;
        let epoch = match self.epoch_start {
            Some(t) => t,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0.0;
                    self.origin = cwnd as f64;
                } else {
                    self.k = ((self.last_max_cwnd - cwnd) as f64 / CUBIC_C).cbrt();
                    self.origin = self.last_max_cwnd as f64;
                }
                now
            }
        };
        let t = (now + min_rtt - epoch).as_secs_f64();
        let delta = CUBIC_C * (t - self.k).abs().powi(3);
        let target = if t < self.k {
            self.origin - delta
        } else {
            self.origin + delta
        };
        let target = target.max(0.0).floor() as u64;
        let mut cnt = if target > cwnd as u64 {
            (cwnd as u64 / (target - cwnd as u64)) as u32
        } else {
            100 * cwnd
        };
        if self.last_max_cwnd == 0 && cnt > 20 {
            cnt = 20;
        }
        // TCP-friendly region: what Reno would have by now.
        let reno_per = ((cwnd * CUBIC_BETA_SCALE) >> 3).max(1);
        while self.ack_cnt > reno_per {
            self.ack_cnt -= reno_per;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            cnt = cnt.min(max_cnt);
        }
        cnt.max(2)
    }

    fn ssthresh(&mut self, cwnd: u32) -> u32 {
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            cwnd * (1024 + CUBIC_BETA) / 2048
        } else {
            cwnd
        };
        (cwnd * CUBIC_BETA / 1024).max(2)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Dctcp {
    /// The estimate of the fraction of marked bytes.
    pub alpha: f64,
    acked: u64,
    marked: u64,
    /// End of the current observation window (a sequence number).
    window_end: u64,
}

/// A connection's congestion control.
#[derive(Clone, Debug)]
pub(crate) enum Cc {
    Reno,
    Cubic(Cubic),
    Dctcp(Dctcp),
}

impl Cc {
    pub fn new(kind: TcpCc) -> Cc {
        match kind {
            TcpCc::Reno => Cc::Reno,
            TcpCc::Cubic => Cc::Cubic(Cubic::default()),
            TcpCc::Dctcp => Cc::Dctcp(Dctcp {
                alpha: 1.0,
                acked: 0,
                marked: 0,
                window_end: 0,
            }),
        }
    }

    pub fn kind(&self) -> TcpCc {
        match self {
            Cc::Reno => TcpCc::Reno,
            Cc::Cubic(_) => TcpCc::Cubic,
            Cc::Dctcp(_) => TcpCc::Dctcp,
        }
    }

    /// Segments are ECN-capable (ECT) and ECN-Echo is acted on.
    pub fn ecn(&self) -> bool {
        matches!(self, Cc::Dctcp(_))
    }

    /// Window growth on an ACK of `acked` segments (only called when the
    /// connection is using its window).
    pub fn on_ack(&mut self, w: &mut Window, acked: u32, now: Time, min_rtt: Time) {
        let mut acked = acked;
        if w.cwnd < w.ssthresh {
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let per = match self {
            Cc::Reno | Cc::Dctcp(_) => w.cwnd,
            Cc::Cubic(c) => c.cnt(w.cwnd, acked, now, min_rtt),
        };
        w.cong_avoid_ai(per, acked);
    }

    /// ssthresh after a loss (fast retransmit or timeout).
    pub fn loss_ssthresh(&mut self, cwnd: u32) -> u32 {
        match self {
            Cc::Reno | Cc::Dctcp(_) => (cwnd / 2).max(2),
            Cc::Cubic(c) => c.ssthresh(cwnd),
        }
    }

    /// A retransmission timeout: CUBIC forgets its epoch and W_max.
    pub fn on_timeout(&mut self) {
        if let Cc::Cubic(c) = self {
            *c = Cubic::default();
        }
    }

    /// DCTCP accounting of an ACK of `bytes` new bytes; updates alpha at
    /// the end of each window of data.
    pub fn on_ack_bytes(&mut self, bytes: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        if let Cc::Dctcp(d) = self {
            d.acked += bytes;
            if ece {
                d.marked += bytes;
            }
            if snd_una >= d.window_end {
                if d.acked > 0 {
                    let f = d.marked as f64 / d.acked as f64;
                    d.alpha = (1.0 - DCTCP_G) * d.alpha + DCTCP_G * f;
                }
                d.acked = 0;
                d.marked = 0;
                d.window_end = snd_nxt;
            }
        }
    }

    /// ssthresh on an ECN-Echo (DCTCP: cwnd (1 - alpha / 2)).
    pub fn ecn_ssthresh(&self, cwnd: u32) -> u32 {
        match self {
            Cc::Dctcp(d) => ((cwnd as f64 * (1.0 - d.alpha / 2.0)) as u32).max(2),
            _ => (cwnd / 2).max(2),
        }
    }

    /// DCTCP's alpha (None for the others).
    pub fn alpha(&self) -> Option<f64> {
        match self {
            Cc::Dctcp(d) => Some(d.alpha),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(cwnd: u32, ssthresh: u32) -> Window {
        Window {
            cwnd,
            cwnd_cnt: 0,
            ssthresh,
        }
    }

    #[test]
    fn slow_start_doubles_with_an_ack_every_two_segments() {
        let mut cc = Cc::new(TcpCc::Reno);
        let mut w = win(10, u32::MAX);
        for _ in 0..5 {
            cc.on_ack(&mut w, 2, Time::ZERO, Time::ZERO);
        }
        assert_eq!(w.cwnd, 20);
    }

    #[test]
    fn reno_avoidance_adds_one_segment_per_window() {
        let mut cc = Cc::new(TcpCc::Reno);
        let mut w = win(100, 50);
        for _ in 0..50 {
            cc.on_ack(&mut w, 2, Time::ZERO, Time::ZERO);
        }
        assert_eq!(w.cwnd, 101);
        assert_eq!(cc.loss_ssthresh(100), 50);
    }

    #[test]
    fn cubic_cuts_to_0_7_and_converges_fast() {
        let mut cc = Cc::new(TcpCc::Cubic);
        assert_eq!(cc.loss_ssthresh(1000), 700);
        // A second loss below the last maximum remembers a lower W_max.
        assert_eq!(cc.loss_ssthresh(800), 560);
        if let Cc::Cubic(c) = &cc {
            assert_eq!(c.last_max_cwnd, 800 * 1741 / 2048);
        }
        assert_eq!(CUBIC_BETA_SCALE, 15);
    }

    #[test]
    fn cubic_grows_back_to_w_max_around_k() {
        // After a loss at 1000, cwnd 700 reaches W_max at K = cbrt(300 / C)
        // = 9.1 s (with a 100 ms RTT, where the cubic curve is above what
        // Reno would reach; at short RTTs the TCP-friendly region rules).
        let mut cc = Cc::new(TcpCc::Cubic);
        let mut w = win(1000, u32::MAX);
        w.ssthresh = cc.loss_ssthresh(1000);
        w.cwnd = w.ssthresh;
        let k = (300.0 / CUBIC_C).cbrt();
        let rtt = Time::ms(100);
        let mut t = Time::ZERO;
        while t.as_secs_f64() < k {
            let acks = w.cwnd / 2;
            for _ in 0..acks {
                cc.on_ack(&mut w, 2, t, rtt);
            }
            t += rtt;
        }
        assert!((990..=1010).contains(&w.cwnd), "cwnd {} at K", w.cwnd);
    }

    #[test]
    fn dctcp_alpha_follows_the_marked_fraction() {
        let mut cc = Cc::new(TcpCc::Dctcp);
        // Every window fully marked keeps alpha at 1; unmarked windows decay
        // it by 15/16 each.
        cc.on_ack_bytes(1000, true, 1000, 2000);
        assert_eq!(cc.alpha(), Some(1.0));
        cc.on_ack_bytes(1000, false, 2000, 3000);
        assert_eq!(cc.alpha(), Some(15.0 / 16.0));
        assert_eq!(cc.ecn_ssthresh(100), 53);
        assert_eq!(cc.loss_ssthresh(100), 50);
    }
}
