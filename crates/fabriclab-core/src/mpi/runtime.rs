//! The MPI runtime: runs each rank's [`Schedule`] on the simulated fabric,
//! turning sends and receives into the messages an MPI library would put on
//! the wire or in shared memory.
//!
//! Point-to-point protocol (Open MPI / UCX over RC, see [`MpiParams`]):
//! - between hosts, messages up to the eager limit go as one RDMA SEND of
//!   header + payload; the sender completes once the payload is copied out
//!   of its buffer; the receiver copies it into the user buffer when it
//!   matches. Larger messages send a request-to-send; on a match the
//!   receiver pulls the data with RDMA READs of at most the fragment size
//!   and returns a completion message (or, in write mode, sends
//!   clear-to-send and the sender pushes RDMA WRITEs then a completion);
//! - between ranks on one host, eager messages are copied in and out of a
//!   shared segment, larger ones copied once (CMA/xpmem-like) after a
//!   request-to-send; copies share the host's memory bandwidth (fluid
//!   model, [`super::memory`]);
//! - matching is by (source, tag) in arrival order, with posted and
//!   unexpected queues per rank;
//! - each rank has one CPU: send and receive overheads and reductions are
//!   serialised on it.
//!
//! Left out: progress rules (a rank progresses rendezvous whenever a
//! message arrives, as with a progress thread or while polling in Wait),
//! flow control of eager credits, and copies occupying the CPU (they run
//! concurrently with the rank's overheads).

use super::memory::MemHosts;
use super::sched::{Op, Rank, Schedule};
use crate::config::{MpiParams, QpSharing, Rndv};
use crate::net::{AppEvent, Net, OpKind, QpId};
use crate::units::Time;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// Handle of a schedule registered with [`Runtime::add_schedule`].
pub type SchedId = u32;

const NONE: u32 = u32::MAX;

/// Counters of the runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MpiCounters {
    /// Messages sent eagerly between hosts.
    pub eager_msgs: u64,
    /// Messages sent by rendezvous between hosts.
    pub rndv_msgs: u64,
    /// Messages through shared memory.
    pub shm_msgs: u64,
    /// Payload bytes between hosts.
    pub net_bytes: u64,
    /// Payload bytes through shared memory.
    pub shm_bytes: u64,
    /// Messages that arrived before their receive was posted.
    pub unexpected: u64,
    /// Queue pairs created.
    pub qps: u64,
}

/// A schedule with its reverse dependencies, ready to run.
struct Prepared {
    s: Schedule,
    /// Per rank, per step: the steps waiting for it.
    dependents: Vec<Vec<Vec<u32>>>,
}

struct RankState {
    sched: u32,
    epoch: u32,
    waiting: Vec<u32>,
    left: u32,
    cpu_free: Time,
    posted: HashMap<(Rank, u32), VecDeque<u32>>,
    unexpected: HashMap<(Rank, u32), VecDeque<u32>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Eager,
    Rts,
    ShmEager,
    ShmRts,
}

/// A message header (eager or request-to-send) and, for rendezvous, the
/// state of its transfer.
struct Msg {
    kind: Kind,
    src: Rank,
    dst: Rank,
    tag: u32,
    bytes: u64,
    send_step: u32,
    send_epoch: u32,
    recv_step: u32,
    recv_epoch: u32,
    /// Sides (sender, receiver) not yet complete; freed at zero.
    refs: u8,
}

/// Deferred actions, run by app timers.
#[derive(Clone, Copy, Debug)]
enum Cont {
    Issue { rank: Rank, step: u32, epoch: u32 },
    Done { rank: Rank, step: u32, epoch: u32 },
    RecvFinish { rank: Rank, step: u32, epoch: u32 },
    ShmCopiedIn { msg: u32 },
    Arrive { msg: u32 },
    ShmPulled { msg: u32 },
    SendDone { msg: u32 },
}

// Network token layout: message id << 3 | what.
const T_HDR: u64 = 0;
const T_CTS: u64 = 1;
const T_FIN: u64 = 2;
const T_DATA: u64 = 3;
// App timer tokens: bit 63 set = memory model tick.
const TIMER_MEM: u64 = 1 << 63;

/// Runs schedules for the ranks of one job.
pub struct Runtime {
    p: MpiParams,
    me: u32,
    rank_host: Vec<u32>,
    ranks: Vec<RankState>,
    scheds: Vec<Rc<Prepared>>,
    conns: HashMap<(u32, u32), (QpId, QpId)>,
    msgs: Vec<Option<Msg>>,
    free_msgs: Vec<u32>,
    conts: Vec<Option<Cont>>,
    free_conts: Vec<u32>,
    mem: MemHosts<Cont>,
    finished: Vec<Rank>,
    counters: MpiCounters,
    /// A work request completed in error (its QP ran out of RC retries):
    /// the job is lost, as an MPI library aborts it.
    failed: bool,
}

impl Runtime {
    /// A runtime for ranks placed on `rank_host`, owned by workload `me`.
    pub fn new(net: &Net, rank_host: Vec<u32>, p: MpiParams, me: u32) -> Runtime {
        let ranks = rank_host
            .iter()
            .map(|_| RankState {
                sched: NONE,
                epoch: 0,
                waiting: Vec::new(),
                left: 0,
                cpu_free: Time::ZERO,
                posted: HashMap::new(),
                unexpected: HashMap::new(),
            })
            .collect();
        let mem = MemHosts::new(net.n_hosts() as usize, p.memcpy, p.host_memory);
        Runtime {
            p,
            me,
            rank_host,
            ranks,
            scheds: Vec::new(),
            conns: HashMap::new(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            conts: Vec::new(),
            free_conts: Vec::new(),
            mem,
            finished: Vec::new(),
            counters: MpiCounters::default(),
            failed: false,
        }
    }

    /// Register a schedule (its ranks are the job's ranks 0..p).
    pub fn add_schedule(&mut self, s: Schedule) -> SchedId {
        debug_assert!(s.p() as usize <= self.ranks.len());
        let dependents = s.dependents();
        self.scheds.push(Rc::new(Prepared { s, dependents }));
        self.scheds.len() as SchedId - 1
    }

    /// The schedule registered as `id`.
    pub fn schedule(&self, id: SchedId) -> &Schedule {
        &self.scheds[id as usize].s
    }

    /// Counters so far.
    pub fn counters(&self) -> &MpiCounters {
        &self.counters
    }

    /// The time a rank's CPU is next free (what MPI_Wtime would read when
    /// it next looks).
    pub fn clock(&self, net: &Net, rank: Rank) -> Time {
        self.ranks[rank as usize].cpu_free.max(net.now())
    }

    /// Ranks that finished their schedule since the last call.
    pub fn take_finished(&mut self, out: &mut Vec<Rank>) {
        out.append(&mut self.finished);
    }

    /// Start `rank` on schedule `id`; the rank must be idle. A rank with
    /// nothing to do in the schedule finishes at once, after the call
    /// overhead when nobody has anything to do in it.
    pub fn start(&mut self, net: &mut Net, rank: Rank, id: SchedId) {
        let sched = Rc::clone(&self.scheds[id as usize]);
        let st = &mut self.ranks[rank as usize];
        debug_assert_eq!(st.sched, NONE, "rank {rank} is busy");
        let steps = sched
            .s
            .ranks
            .get(rank as usize)
            .map_or(&[][..], |r| &r.steps[..]);
        st.epoch += 1;
        if steps.is_empty() {
            // A call with nothing to move still costs its entry and
            // argument checks; a rank idle in a call that others make
            // (the ranks outside a ping-pong) costs nothing.
            if sched.s.empty_call {
                st.cpu_free = st.cpu_free.max(net.now()) + self.p.call_overhead;
            }
            self.finished.push(rank);
            return;
        }
        st.sched = id;
        st.left = steps.len() as u32;
        st.waiting.clear();
        st.waiting.extend(steps.iter().map(|s| s.deps.len() as u32));
        let epoch = st.epoch;
        for (i, s) in steps.iter().enumerate() {
            if s.deps.is_empty() {
                self.start_step(net, rank, i as u32, epoch);
            }
        }
    }

    /// True once a work request completed in error (the job is lost).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Handle an event addressed to the owning workload.
    pub fn handle(&mut self, net: &mut Net, ev: AppEvent) {
        match ev {
            AppEvent::Timer { token } if token & TIMER_MEM != 0 => {
                let mut done = Vec::new();
                self.mem
                    .tick(net, self.me, token & !TIMER_MEM, TIMER_MEM, &mut done);
                for c in done {
                    self.run_cont(net, c);
                }
            }
            AppEvent::Timer { token } => {
                let c = self.conts[token as usize]
                    .take()
                    .expect("live continuation");
                self.free_conts.push(token as u32);
                self.run_cont(net, c);
            }
            AppEvent::Received { token, .. } => {
                let (id, what) = ((token >> 3) as u32, token & 7);
                match what {
                    T_HDR => self.arrive(net, id),
                    T_CTS => self.on_cts(net, id),
                    T_FIN => self.on_fin(net, id),
                    // Write mode: a data fragment landed; the completion
                    // message that follows it on the QP finishes the receive.
                    _ => debug_assert_eq!(what, T_DATA, "unexpected token {token}"),
                }
            }
            AppEvent::Completed { token, op, .. } => {
                debug_assert_eq!(token & 7, T_DATA);
                let id = (token >> 3) as u32;
                // Only a message's last fragment is signaled.
                let m = self.msgs[id as usize].as_mut().expect("live message");
                match op {
                    // Read mode: the receiver has the data; tell the sender.
                    OpKind::Read => {
                        let (src, dst) = (m.src, m.dst);
                        let qp = self.qp(net, dst, src);
                        let hdr = self.p.header;
                        net.post_unsignaled(qp, OpKind::Send, hdr, tok(id, T_FIN))
                            .expect("valid QP");
                        self.recv_finish(net, id);
                    }
                    // Write mode: the sender's buffer is free.
                    _ => {
                        let (src, ss, se) = (m.src, m.send_step, m.send_epoch);
                        self.release(id);
                        self.defer(
                            net,
                            Time::ZERO,
                            Cont::Done {
                                rank: src,
                                step: ss,
                                epoch: se,
                            },
                        );
                    }
                }
            }
            AppEvent::Failed { .. } => self.failed = true,
            AppEvent::TcpWritable { .. } | AppEvent::TcpDelivered { .. } => {}
        }
    }

    // ----- steps -----

    fn prepared(&self, rank: Rank) -> Rc<Prepared> {
        Rc::clone(&self.scheds[self.ranks[rank as usize].sched as usize])
    }

    fn start_step(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        let pr = self.prepared(rank);
        let eb = pr.s.elem_bytes as u64;
        match pr.s.ranks[rank as usize].steps[step as usize].op {
            Op::Send { to, src, .. } => {
                let bytes = src.count * eb;
                let same_host = self.rank_host[rank as usize] == self.rank_host[to as usize];
                let mut cost = self.p.o_send;
                if !same_host && bytes <= self.p.eager_limit {
                    cost += self.p.memcpy.tx_time(bytes);
                }
                self.cpu(net, rank, cost, Cont::Issue { rank, step, epoch });
            }
            Op::Recv { from, tag, .. } => {
                let st = &mut self.ranks[rank as usize];
                let hit = st
                    .unexpected
                    .get_mut(&(from, tag))
                    .and_then(|q| q.pop_front());
                match hit {
                    Some(id) => self.matched(net, rank, step, epoch, id),
                    None => st.posted.entry((from, tag)).or_default().push_back(step),
                }
            }
            Op::Reduce { src, .. } => {
                let t = self.p.reduce.tx_time(src.count * eb);
                self.cpu(net, rank, t, Cont::Done { rank, step, epoch });
            }
            Op::Copy { src, .. } => {
                let host = self.rank_host[rank as usize];
                let c = Cont::Done { rank, step, epoch };
                self.mem
                    .start(net, self.me, (host, rank), src.count * eb, c, TIMER_MEM);
            }
            Op::Compute { ps } => {
                // Wall time beside MPI progress, not the MPI CPU clock.
                self.defer(net, Time(ps), Cont::Done { rank, step, epoch });
            }
            Op::SwitchSend { .. } | Op::SwitchReduce { .. } | Op::Multicast { .. } => {
                unreachable!("NVLink SHARP steps belong to NCCL's schedules, not MPI's")
            }
        }
    }

    fn issue(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        let pr = self.prepared(rank);
        let Op::Send { to, tag, src } = pr.s.ranks[rank as usize].steps[step as usize].op else {
            unreachable!("issue is for sends")
        };
        let bytes = src.count * pr.s.elem_bytes as u64;
        let host = self.rank_host[rank as usize];
        let same_host = host == self.rank_host[to as usize];
        let kind = match (same_host, bytes) {
            (true, b) if b <= self.p.shm_eager_limit => Kind::ShmEager,
            (true, _) => Kind::ShmRts,
            (false, b) if b <= self.p.eager_limit => Kind::Eager,
            (false, _) => Kind::Rts,
        };
        let id = self.new_msg(Msg {
            kind,
            src: rank,
            dst: to,
            tag,
            bytes,
            send_step: step,
            send_epoch: epoch,
            recv_step: NONE,
            recv_epoch: 0,
            refs: 2,
        });
        match kind {
            Kind::ShmEager => {
                self.counters.shm_msgs += 1;
                self.counters.shm_bytes += bytes;
                // The sender copies into the shared buffer.
                self.mem.start(
                    net,
                    self.me,
                    (host, rank),
                    bytes,
                    Cont::ShmCopiedIn { msg: id },
                    TIMER_MEM,
                );
            }
            Kind::ShmRts => {
                self.counters.shm_msgs += 1;
                self.counters.shm_bytes += bytes;
                let lat = self.p.shm_latency;
                self.defer(net, lat, Cont::Arrive { msg: id });
            }
            Kind::Eager => {
                self.counters.eager_msgs += 1;
                self.counters.net_bytes += bytes;
                let qp = self.qp(net, rank, to);
                net.post_unsignaled(qp, OpKind::Send, self.p.header + bytes, tok(id, T_HDR))
                    .expect("valid QP");
                // The payload is already copied out: the send is complete.
                self.msgs[id as usize].as_mut().unwrap().refs -= 1;
                self.step_done(net, rank, step, epoch);
            }
            Kind::Rts => {
                self.counters.rndv_msgs += 1;
                self.counters.net_bytes += bytes;
                let qp = self.qp(net, rank, to);
                net.post_unsignaled(qp, OpKind::Send, self.p.header, tok(id, T_HDR))
                    .expect("valid QP");
            }
        }
    }

    /// A header (eager data or request-to-send) reaches its receiver.
    fn arrive(&mut self, net: &mut Net, id: u32) {
        let (dst, src, tag) = {
            let m = self.msgs[id as usize].as_ref().expect("live message");
            (m.dst, m.src, m.tag)
        };
        let st = &mut self.ranks[dst as usize];
        let hit = st.posted.get_mut(&(src, tag)).and_then(|q| q.pop_front());
        match hit {
            Some(step) => {
                let epoch = st.epoch;
                self.matched(net, dst, step, epoch, id);
            }
            None => {
                self.counters.unexpected += 1;
                st.unexpected.entry((src, tag)).or_default().push_back(id);
            }
        }
    }

    /// Receive `step` of `rank` matched message `id`.
    fn matched(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32, id: u32) {
        let host = self.rank_host[rank as usize];
        let m = self.msgs[id as usize].as_mut().expect("live message");
        m.recv_step = step;
        m.recv_epoch = epoch;
        let (kind, bytes, src) = (m.kind, m.bytes, m.src);
        match kind {
            Kind::Eager => {
                self.release(id);
                let t = self.p.o_recv + self.p.memcpy.tx_time(bytes);
                self.cpu(net, rank, t, Cont::Done { rank, step, epoch });
            }
            Kind::ShmEager => {
                self.release(id);
                let c = Cont::RecvFinish { rank, step, epoch };
                // The receiver copies out of it.
                self.mem
                    .start(net, self.me, (host, rank), bytes, c, TIMER_MEM);
            }
            Kind::ShmRts => {
                // Single copy: the receiver pulls the sender's buffer.
                self.mem.start(
                    net,
                    self.me,
                    (host, rank),
                    bytes,
                    Cont::ShmPulled { msg: id },
                    TIMER_MEM,
                );
            }
            Kind::Rts => {
                let qp = self.qp(net, rank, src);
                match self.p.rndv {
                    Rndv::Read => self.post_fragments(net, qp, OpKind::Read, bytes, id),
                    Rndv::Write => {
                        net.post_unsignaled(qp, OpKind::Send, self.p.header, tok(id, T_CTS))
                            .expect("valid QP");
                    }
                }
            }
        }
    }

    /// Write mode: clear-to-send reached the sender; push the data.
    fn on_cts(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_mut().expect("live message");
        let (src, dst, bytes) = (m.src, m.dst, m.bytes);
        let qp = self.qp(net, src, dst);
        self.post_fragments(net, qp, OpKind::Write, bytes, id);
        net.post_unsignaled(qp, OpKind::Send, self.p.header, tok(id, T_FIN))
            .expect("valid QP");
    }

    /// Post rendezvous message `id`'s `bytes` on `qp` in fragments, only the
    /// last one signaled: an RC QP completes in order, so its completion
    /// says the data has all moved (the others' completions carried no
    /// news, and cost an event each).
    fn post_fragments(&mut self, net: &mut Net, qp: QpId, op: OpKind, bytes: u64, id: u32) {
        let frag = self.p.rndv_fragment;
        let mut left = bytes;
        while left > frag {
            net.post_unsignaled(qp, op, frag, tok(id, T_DATA))
                .expect("valid QP");
            left -= frag;
        }
        net.post(qp, op, left, tok(id, T_DATA)).expect("valid QP");
    }

    /// A completion message arrived: at the sender (read mode) or at the
    /// receiver (write mode).
    fn on_fin(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        match self.p.rndv {
            Rndv::Read => {
                let (src, ss, se) = (m.src, m.send_step, m.send_epoch);
                self.release(id);
                self.step_done(net, src, ss, se);
            }
            Rndv::Write => self.recv_finish(net, id),
        }
    }

    /// The receiver of rendezvous message `id` has its data.
    fn recv_finish(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        let (rank, step, epoch) = (m.dst, m.recv_step, m.recv_epoch);
        self.release(id);
        let t = self.p.o_recv;
        self.cpu(net, rank, t, Cont::Done { rank, step, epoch });
    }

    fn run_cont(&mut self, net: &mut Net, c: Cont) {
        match c {
            Cont::Issue { rank, step, epoch } => self.issue(net, rank, step, epoch),
            Cont::Done { rank, step, epoch } => self.step_done(net, rank, step, epoch),
            Cont::RecvFinish { rank, step, epoch } => {
                let t = self.p.o_recv;
                self.cpu(net, rank, t, Cont::Done { rank, step, epoch });
            }
            Cont::ShmCopiedIn { msg } => {
                let m = self.msgs[msg as usize].as_mut().expect("live message");
                m.refs -= 1;
                let (src, ss, se) = (m.src, m.send_step, m.send_epoch);
                let lat = self.p.shm_latency;
                self.defer(net, lat, Cont::Arrive { msg });
                self.step_done(net, src, ss, se);
            }
            Cont::Arrive { msg } => self.arrive(net, msg),
            Cont::ShmPulled { msg } => {
                let m = self.msgs[msg as usize].as_ref().expect("live message");
                let (dst, rs, re) = (m.dst, m.recv_step, m.recv_epoch);
                let lat = self.p.shm_latency;
                self.defer(net, lat, Cont::SendDone { msg });
                self.release(msg);
                let t = self.p.o_recv;
                self.cpu(
                    net,
                    dst,
                    t,
                    Cont::Done {
                        rank: dst,
                        step: rs,
                        epoch: re,
                    },
                );
            }
            Cont::SendDone { msg } => {
                let m = self.msgs[msg as usize].as_ref().expect("live message");
                let (src, ss, se) = (m.src, m.send_step, m.send_epoch);
                self.release(msg);
                self.step_done(net, src, ss, se);
            }
        }
    }

    fn step_done(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        let st = &mut self.ranks[rank as usize];
        debug_assert_eq!(st.epoch, epoch, "step of a finished schedule");
        let pr = Rc::clone(&self.scheds[st.sched as usize]);
        st.left -= 1;
        if st.left == 0 {
            st.sched = NONE;
            self.finished.push(rank);
            return;
        }
        for &d in &pr.dependents[rank as usize][step as usize] {
            let w = &mut self.ranks[rank as usize].waiting[d as usize];
            *w -= 1;
            if *w == 0 {
                self.start_step(net, rank, d, epoch);
            }
        }
    }

    // ----- helpers -----

    /// Run `c` after `dur` of this rank's CPU time.
    fn cpu(&mut self, net: &mut Net, rank: Rank, dur: Time, c: Cont) {
        let st = &mut self.ranks[rank as usize];
        let at = st.cpu_free.max(net.now()) + dur;
        st.cpu_free = at;
        let id = self.new_cont(c);
        net.set_app_timer(self.me, at, id as u64);
    }

    /// Run `c` after `dur` of wall time (not using the CPU).
    fn defer(&mut self, net: &mut Net, dur: Time, c: Cont) {
        let id = self.new_cont(c);
        let at = net.now() + dur;
        net.set_app_timer(self.me, at, id as u64);
    }

    fn new_cont(&mut self, c: Cont) -> u32 {
        match self.free_conts.pop() {
            Some(i) => {
                self.conts[i as usize] = Some(c);
                i
            }
            None => {
                self.conts.push(Some(c));
                self.conts.len() as u32 - 1
            }
        }
    }

    fn new_msg(&mut self, m: Msg) -> u32 {
        match self.free_msgs.pop() {
            Some(i) => {
                self.msgs[i as usize] = Some(m);
                i
            }
            None => {
                self.msgs.push(Some(m));
                self.msgs.len() as u32 - 1
            }
        }
    }

    /// One side of message `id` is done with it; free it when both are.
    fn release(&mut self, id: u32) {
        let m = self.msgs[id as usize].as_mut().expect("live message");
        m.refs = m.refs.saturating_sub(1);
        if m.refs == 0 {
            self.msgs[id as usize] = None;
            self.free_msgs.push(id);
        }
    }

    /// The QP endpoint at `from`'s host for traffic between ranks `from`
    /// and `to`, connecting on first use.
    fn qp(&mut self, net: &mut Net, from: Rank, to: Rank) -> QpId {
        let (ha, hb) = (self.rank_host[from as usize], self.rank_host[to as usize]);
        let key = match self.p.qp_sharing {
            QpSharing::PerRankPair => (from.min(to), from.max(to)),
            QpSharing::PerHostPair => (ha.min(hb), ha.max(hb)),
        };
        let lo_is_from = match self.p.qp_sharing {
            QpSharing::PerRankPair => from <= to,
            QpSharing::PerHostPair => ha <= hb,
        };
        let (lo_host, hi_host) = if lo_is_from { (ha, hb) } else { (hb, ha) };
        let me = self.me;
        let counters = &mut self.counters;
        // Ports keyed by the job and the pair, not by the order in which
        // timing makes the pairs connect: the same paths on both backends.
        let (qlo, qhi) = *self.conns.entry(key).or_insert_with(|| {
            counters.qps += 2;
            let k = crate::rng::key_of(&[me as u64, key.0 as u64, key.1 as u64]);
            net.connect_keyed(lo_host, hi_host, me, None, k)
                .expect("hosts of the job")
        });
        if lo_is_from {
            qlo
        } else {
            qhi
        }
    }
}

fn tok(id: u32, what: u64) -> u64 {
    ((id as u64) << 3) | what
}
