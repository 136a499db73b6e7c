//! State of one TCP connection: the sender's byte stream, window and
//! timers at the client host, and the receiver's reassembly state at the
//! server host.
//!
//! Sequence numbers are 64-bit byte offsets from 0 (no wrap, no initial
//! sequence number). Data flows one way, client to server; the reverse
//! direction carries pure ACKs (an iWARP QP uses two connections, one per
//! direction). The RTT estimator follows RFC 6298 with
//! Linux's floor: RTO = SRTT + max(4 RTTVAR, rto_min), doubled per backoff
//! up to rto_max.

use super::cc::{Cc, Window};
use super::counters::TcpCounters;
use crate::engine::Timer;
use crate::units::Time;
use std::collections::BTreeMap;

/// Where the sender is in loss recovery (Linux's CA states, reduced).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CaState {
    /// Normal: slow start or congestion avoidance.
    Open,
    /// Window reduced for ECN-Echo until `high_seq` is ACKed.
    Cwr,
    /// NewReno fast recovery until `recover` is ACKed.
    Recovery,
    /// After a timeout, until `recover` is ACKed (go-back-N).
    Loss,
}

/// RFC 6298 estimator, in picoseconds.
#[derive(Clone, Debug)]
pub(crate) struct Rtt {
    pub srtt: Option<Time>,
    pub rttvar: Time,
    pub min_rtt: Time,
    pub backoff: u32,
    rto_min: Time,
    rto_max: Time,
    rto_initial: Time,
}

impl Rtt {
    pub fn new(rto_min: Time, rto_initial: Time, rto_max: Time) -> Rtt {
        Rtt {
            srtt: None,
            rttvar: Time::ZERO,
            min_rtt: Time::NEVER,
            backoff: 0,
            rto_min,
            rto_max,
            rto_initial,
        }
    }

    /// Take an RTT measurement `r`.
    pub fn sample(&mut self, r: Time) {
        self.min_rtt = self.min_rtt.min(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Time(r.0 / 2);
            }
            Some(s) => {
                let err = s.0.abs_diff(r.0);
                self.rttvar = Time((3 * self.rttvar.0 + err) / 4);
                self.srtt = Some(Time((7 * s.0 + r.0) / 8));
            }
        }
        self.backoff = 0;
    }

    /// The retransmission timeout now, backoff included.
    pub fn rto(&self) -> Time {
        let base = match self.srtt {
            None => self.rto_initial,
            Some(s) => s + Time((4 * self.rttvar.0).max(self.rto_min.0)),
        };
        let shifted = base.0.saturating_mul(1u64 << self.backoff.min(30));
        Time(shifted.min(self.rto_max.0))
    }
}

pub(crate) struct Conn {
    // --- identity ---
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub app: u32,
    /// Priority of its segments and ACKs.
    pub prio: u8,
    /// For a connection offloaded to an iWARP RNIC: the QP whose send
    /// stream it carries (its stack is then `Tcp::nic`).
    pub iw: Option<u32>,
    /// Segments are ECN-capable and ECN-Echo is acted on.
    pub ecn: bool,
    // --- sender ---
    pub cc: Cc,
    pub w: Window,
    pub state: CaState,
    /// Bytes written by the application (the end of the stream so far).
    pub written: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Highest sequence sent + 1.
    pub snd_max: u64,
    pub dupacks: u32,
    /// NewReno's `recover` (None until the first recovery or timeout).
    pub recover: Option<u64>,
    /// End of the current ECN (CWR) reduction.
    pub high_seq: u64,
    /// A partial ACK has restarted the timer in this recovery.
    pub partial_seen: bool,
    /// The last send attempt stopped on the congestion window.
    pub cwnd_limited: bool,
    pub rtt: Rtt,
    pub rto_timer: Timer,
    pub rto_deadline: Time,
    /// Bytes of data segments in the host's queues (TCP small queues).
    pub in_host: u64,
    pub tsq_blocked: bool,
    pub push_pending: bool,
    pub want_writable: bool,
    /// Test hook: first transmissions of these sequence numbers are lost.
    pub lose: Vec<u64>,
    // --- receiver ---
    pub rcv_nxt: u64,
    /// Out-of-order data held: start -> end.
    pub ooo: BTreeMap<u64, u64>,
    pub last_ack_sent: u64,
    pub ts_recent: u64,
    pub delack: Timer,
    /// DCTCP receiver: CE state of the last segment.
    pub ce_state: bool,
    pub notify_delivery: bool,
    // --- observation ---
    pub cwnd_trace: Option<Vec<(Time, u32)>>,
    pub c: TcpCounters,
}

impl Conn {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        src: u32,
        dst: u32,
        sport: u16,
        dport: u16,
        app: u32,
        cc: Cc,
        init_cwnd: u32,
        rtt: Rtt,
    ) -> Conn {
        Conn {
            src,
            dst,
            sport,
            dport,
            app,
            prio: 0,
            iw: None,
            ecn: cc.ecn(),
            cc,
            w: Window {
                cwnd: init_cwnd,
                cwnd_cnt: 0,
                ssthresh: u32::MAX,
            },
            state: CaState::Open,
            written: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            dupacks: 0,
            recover: None,
            high_seq: 0,
            partial_seen: false,
            cwnd_limited: false,
            rtt,
            rto_timer: Timer::default(),
            rto_deadline: Time::NEVER,
            in_host: 0,
            tsq_blocked: false,
            push_pending: false,
            want_writable: false,
            lose: Vec::new(),
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            last_ack_sent: 0,
            ts_recent: 0,
            delack: Timer::default(),
            ce_state: false,
            notify_delivery: false,
            cwnd_trace: None,
            c: TcpCounters::default(),
        }
    }

    /// Refresh the window and RTT figures in the counters (and the trace).
    pub fn publish(&mut self, now: Time, mss: u32) {
        let cwnd = self.w.cwnd as u64 * mss as u64;
        self.c.cwnd_bytes = cwnd;
        self.c.max_cwnd_bytes = self.c.max_cwnd_bytes.max(cwnd);
        self.c.ssthresh_bytes = if self.w.ssthresh == u32::MAX {
            0
        } else {
            self.w.ssthresh as u64 * mss as u64
        };
        if let Some(s) = self.rtt.srtt {
            self.c.srtt_ns = s.0 / 1000;
            self.c.rttvar_ns = self.rtt.rttvar.0 / 1000;
            self.c.min_rtt_ns = self.rtt.min_rtt.0 / 1000;
        }
        if let Some(t) = self.cwnd_trace.as_mut() {
            if t.last().is_none_or(|&(_, w)| w != self.w.cwnd) {
                t.push((now, self.w.cwnd));
            }
        }
    }

    /// Hold out-of-order data [seq, end), merging with what is held.
    pub fn hold(&mut self, seq: u64, end: u64) {
        let (mut s, mut e) = (seq, end);
        if let Some((&ps, &pe)) = self.ooo.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.ooo.remove(&ps);
            }
        }
        while let Some((&ns, &ne)) = self.ooo.range(s..).next() {
            if ns > e {
                break;
            }
            e = e.max(ne);
            self.ooo.remove(&ns);
        }
        self.ooo.insert(s, e);
    }

    /// Move `rcv_nxt` over held data that now follows it.
    pub fn pull_held(&mut self) {
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.pop_first();
            self.rcv_nxt = self.rcv_nxt.max(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_first_sample_then_smoothing_with_the_linux_floor() {
        let mut r = Rtt::new(Time::ms(200), Time::ms(1000), Time::ms(120_000));
        assert_eq!(r.rto(), Time::ms(1000));
        r.sample(Time::us(100));
        assert_eq!(r.srtt, Some(Time::us(100)));
        assert_eq!(r.rttvar, Time::us(50));
        // 100 us + max(200 us, 200 ms) = 200.1 ms.
        assert_eq!(r.rto(), Time::us(200_100));
        r.sample(Time::us(180));
        assert_eq!(r.srtt, Some(Time::us(110)));
        assert_eq!(r.rttvar, Time::ns(57_500));
        r.backoff = 3;
        assert_eq!(r.rto(), Time::us(200_110 * 8));
        r.backoff = 20;
        assert_eq!(r.rto(), Time::ms(120_000));
    }

    #[test]
    fn held_ranges_merge_and_are_pulled_in_order() {
        let mut c = Conn::new(
            0,
            1,
            1,
            2,
            0,
            Cc::new(crate::config::TcpCc::Reno),
            10,
            Rtt::new(Time::ms(200), Time::ms(1000), Time::ms(1000)),
        );
        c.hold(300, 400);
        c.hold(100, 200);
        c.hold(200, 300);
        c.hold(500, 600);
        assert_eq!(c.ooo.len(), 2);
        c.rcv_nxt = 100;
        c.pull_held();
        assert_eq!(c.rcv_nxt, 400);
        assert_eq!(c.ooo.len(), 1);
    }
}
