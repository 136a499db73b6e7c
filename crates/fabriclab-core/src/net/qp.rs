//! Queue-pair state: the RC send stream (messages, PSNs, go-back-N
//! position) and the receive state for the peer's stream.
//!
//! A QP's send stream is a queue of messages, each occupying a contiguous
//! range of PSNs; `snd_una <= snd_nxt <= next_psn`. A READ request occupies
//! one PSN of the requester's stream; its response is a message of the
//! responder's READ responder stream (`responder.rs`), beside its own
//! posted work.
//! PSNs are 32-bit and do not wrap (2^32 packets per QP is plenty for a run).

use super::cc::{CcConf, QpCc};
use super::counters::QpCounters;
use super::verbs::OpKind;
use crate::engine::Timer;
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// "No QP" in the `owner` and `resp` links of a READ responder stream.
pub(crate) const NO_QP: u32 = u32::MAX;

/// The QP that stream `q` (whose `owner` link is given) stands for: its
/// owner for a READ responder stream, else `q` itself.
#[inline]
pub(crate) fn stream_owner(q: u32, owner: u32) -> u32 {
    if owner == NO_QP {
        q
    } else {
        owner
    }
}

/// One posted message of a send stream.
#[derive(Clone, Debug)]
pub(crate) struct Msg {
    pub token: u64,
    pub op: OpKind,
    pub bytes: u64,
    pub first_psn: u32,
    pub npkts: u32,
    pub ready_at: Time,
    /// Report the completion to the owning workload.
    pub notify: bool,
}

/// Where a QP is in its NIC's scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sched {
    Idle,
    Ready,
    Waiting,
    Parked,
}

/// What the NIC scheduler reads of a QP, kept in a dense array beside the
/// QPs (16 bytes, four to a cache line): a NIC whose port is paused files
/// its ready QPs away without touching their full state. `eligible_at` and
/// `has_unsent` are copies of [`Qp::eligible_at`] and [`Qp::has_unsent`],
/// refreshed by the NIC after every change to a QP's PSNs, pacing or
/// messages.
#[derive(Copy, Clone, Debug)]
pub(crate) struct QpSched {
    pub eligible_at: Time,
    pub has_unsent: bool,
    pub prio: u8,
    pub sched: Sched,
}

impl QpSched {
    /// The scheduler state of a new, idle QP of priority `prio`.
    pub fn new(prio: u8) -> QpSched {
        QpSched {
            eligible_at: Time::ZERO,
            has_unsent: false,
            prio,
            sched: Sched::Idle,
        }
    }
}

/// Fields are laid out by use, in 64-byte lines (pinned by the assertions
/// below): line 0 what every packet built or answered reads (the messages,
/// the PSNs, the addresses), line 1 the sender's pacing and timer, lines 2
/// and 3 the counters (the send-side ones fill line 2) and, after them in
/// line 3, the receive state of the peer's stream; then the congestion
/// control state and what is read rarely.
#[repr(C, align(64))]
pub(crate) struct Qp {
    // --- line 0 ---
    pub msgs: VecDeque<Msg>,
    pub host: u32,
    pub peer_host: u32,
    pub peer_qp: u32,
    pub next_psn: u32,
    pub snd_nxt: u32,
    pub snd_una: u32,
    /// Highest PSN ever sent + 1 (to tell retransmissions).
    pub snd_max: u32,
    pub sport: u16,
    pub prio: u8,
    /// The QP is in the error state (retries exhausted): nothing is sent
    /// and new work completes in error at once.
    pub error: bool,
    // --- line 1: send stream ---
    /// Index in `msgs` of the message holding `snd_nxt`.
    pub cur: usize,
    pub line: Rate,
    /// Earliest departure allowed by the rate limiter (after the last packet).
    pub next_tx: Time,
    /// Key of the QP's live entry in its NIC's waiting heap (entries with
    /// another key are stale and skipped).
    pub wait_at: Time,
    pub rto_deadline: Time,
    pub rto: Timer,
    // --- lines 2-3 ---
    pub counters: QpCounters,
    // --- rest of line 3: receive state for the peer's stream ---
    pub rcv_nxt: u32,
    pub unacked: u32,
    pub rx_msg_bytes: u64,
    pub last_cnp: Option<Time>,
    pub app: u32,
    pub nak_sent: bool,
    /// A CNP waits to ride on this QP's next ACK or NAK (`[cc] cnp_on_ack`).
    pub cnp_on_next_ack: bool,
    // --- line 4 on ---
    /// Congestion-control state (reaction point and its timers).
    pub cc: Option<QpCc>,
    /// Retransmissions on timeout since the last progress (RC retry count).
    pub retries: u32,
    /// For a READ responder stream, the QP it serves (`responder.rs`);
    /// `NO_QP` for a QP of its own.
    pub owner: u32,
    /// This QP's responder stream, once a READ has needed one (`NO_QP`).
    pub resp: u32,
}

// The layout above, line by line.
const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(Qp, cur) == 64);
    assert!(offset_of!(Qp, counters) == 128);
    assert!(offset_of!(QpCounters, rx_payload_bytes) == 64);
    assert!(offset_of!(Qp, cnp_on_next_ack) < 256);
    assert!(offset_of!(Qp, cc) == 256);
};

impl Qp {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        host: u32,
        peer_host: u32,
        peer_qp: u32,
        sport: u16,
        prio: u8,
        app: u32,
        line: Rate,
        cc: Option<&CcConf>,
    ) -> Qp {
        Qp {
            host,
            peer_qp,
            peer_host,
            sport,
            prio,
            app,
            msgs: VecDeque::new(),
            next_psn: 0,
            snd_nxt: 0,
            snd_una: 0,
            snd_max: 0,
            cur: 0,
            line,
            cc: cc.map(|c| c.new_qp(line)),
            next_tx: Time::ZERO,
            wait_at: Time::NEVER,
            rto: Timer::default(),
            rto_deadline: Time::NEVER,
            retries: 0,
            error: false,
            rcv_nxt: 0,
            nak_sent: false,
            cnp_on_next_ack: false,
            unacked: 0,
            last_cnp: None,
            rx_msg_bytes: 0,
            counters: QpCounters::default(),
            owner: NO_QP,
            resp: NO_QP,
        }
    }

    /// Packets posted but not yet (re)sent.
    #[inline]
    pub fn has_unsent(&self) -> bool {
        self.snd_nxt < self.next_psn
    }

    /// Earliest time the next packet may leave (rate limiter, NIC latency).
    #[inline]
    pub fn eligible_at(&self) -> Time {
        let ready = self.msgs.get(self.cur).map_or(Time::ZERO, |m| m.ready_at);
        self.next_tx.max(ready)
    }

    /// Current sending rate.
    pub fn rate(&self) -> Rate {
        self.cc.as_ref().map_or(self.line, |c| c.rate())
    }

    /// Point `cur` at the message holding `snd_nxt`.
    pub fn seek(&mut self) {
        self.cur = self
            .msgs
            .iter()
            .position(|m| self.snd_nxt < m.first_psn + m.npkts)
            .unwrap_or(self.msgs.len());
    }
}
