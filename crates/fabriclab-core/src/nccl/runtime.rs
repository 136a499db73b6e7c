//! The NCCL runtime: runs NCCL schedules ([`super::coll`]) on GPU ranks,
//! the way NCCL's kernels and proxy threads move data.
//!
//! - Between GPUs of one server a send is the kernel storing into the
//!   peer's buffer over NVLink: a fluid transfer on the NVSwitch crossbar
//!   ([`NvLink`]), after which the send step is done; the data is usable
//!   at the receiver one NVLink latency and the protocol's per-hop cost
//!   later. With LL and LL128 the message goes in pieces, usable from the
//!   first, which the receiver passes on as they come ([`Streams`]).
//! - Between servers the kernel hands the data to the proxy (the send step
//!   is done at once) and the NIC on the receiver's rail writes it into the
//!   receiver's buffer with an RDMA WRITE on an RC QP of that channel
//!   (PXN: when that NIC is not the sender's own, the data crosses NVLink
//!   to the GPU that owns it first; with `NCCL_PXN_DISABLE` the sender's
//!   own NIC writes to the receiver's own). PCIe latency is paid at each end;
//!   without GPUDirect RDMA the data is also copied through host memory at
//!   each end at the PCIe rate. The receiver sees it after the protocol's
//!   per-hop cost.
//! - NVLink SHARP (NVLS): a switch reduction starts once the reader and
//!   every other GPU of its group have posted their parts, as one NVLink
//!   transfer out of every GPU of the group and into the reader
//!   ([`NvLink::start_group`]); a multicast is one transfer out of the
//!   sender and into every GPU of the group, delivered to each receiver
//!   one NVLink latency later. Both run at the server's `nvls_efficiency`
//!   of NVLink's rate.
//! - Data bytes become wire bytes by the protocol's line format.
//! - A rank starts a call after NCCL's fixed per-call latency.
//! - Messages of one (sender, receiver, channel) are delivered in order.
//! - Reductions and copies are fused into the transfers by NCCL's kernels:
//!   they cost nothing here.
//!
//! On the flow backend, the calls given by
//! [`NcclRuntime::set_fluid_calls`] are not run step by step: each of
//! their channels is one fluid coflow ([`super::fluid`]), and every rank
//! ends the call its cost after the last one started it; a chain call
//! (Broadcast, Reduce) ends each rank's part from the ranks' own start
//! times instead ([`super::chain_calls`]), so back-to-back calls overlap
//! as they do here.
//!
//! - A connection's buffer has [`NCCL_STEPS`] slots of one message each
//!   (NCCL's `NCCL_STEPS`; a chunk is at most one step), so a sender runs
//!   at most that far ahead of its receiver (`Conn`). Over NVLink the
//!   sender's kernel writes into the receiver's slots: it may start
//!   message k once the receiver has consumed message k - 8 (it sees that
//!   one NVLink latency later). Over the network there are two buffers,
//!   as in NCCL's net transport (`transport/net.cc`): the kernel writes
//!   into the sender's own slots, free again when the proxy's RDMA WRITE
//!   of the message 8 before has completed (acknowledged), and the proxy
//!   posts message k only when the receiver's proxy has posted the
//!   receive for it, that is when message k - 8 was consumed; the
//!   receiver tells the sender with a small RDMA WRITE (the IB plugin's
//!   clear-to-send, [`CTS_BYTES`]) one PCIe latency after its kernel
//!   freed the slot. Without these credits a chain's root (Broadcast,
//!   Reduce) would end at once and the ranks' average time would fall
//!   below what the NIC can carry. A message is consumed when the receive
//!   step that takes it is done; the rank's use of the data after that
//!   (forwarding it) is not waited for.
//!
//! Left out: GPU compute contention (SM count per channel), host CPU
//! costs, NCCL's shared buffers for P2P operations (`NCCL_SHARED_STEPS`)
//! and the slices within a step (a slot is freed whole).

use super::chain_calls::ChainCalls;
use super::coll::CollCall;
use super::comm::Comm;
use super::fluid::{self, FluidCost, GpuLinks};
use super::nvlink::{Group, NvLink};
use super::params::{Algorithm, Costs, Protocol, NCCL_STEPS};
use super::streams::{self, Streams, Taken};
use crate::config::GpuSpec;
use crate::mpi::program::Executor;
use crate::mpi::runtime::{MpiCounters, SchedId};
use crate::mpi::sched::{Op, Rank, Schedule};
use crate::net::{AppEvent, Net, OpKind, QpId};
use crate::units::{Rate, Time};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

const NONE: u32 = u32::MAX;
/// Wire bytes of the receiver's clear-to-send: the IB plugin's RDMA WRITE
/// of one 64-byte `ncclIbSendFifo` entry into the sender's FIFO.
pub const CTS_BYTES: u64 = 64;
/// Timer tokens with this bit are the NVLink model's.
const TIMER_NVL: u64 = 1 << 63;

struct Prepared {
    s: Schedule,
    dependents: Vec<Vec<Vec<u32>>>,
}

struct RankState {
    sched: u32,
    epoch: u32,
    waiting: Vec<u32>,
    left: u32,
    posted: HashMap<(Rank, u32), VecDeque<u32>>,
    arrived: HashMap<(Rank, u32), VecDeque<u32>>,
}

struct Msg {
    src: Rank,
    dst: Rank,
    tag: u32,
    wire: u64,
    seq: u64,
    /// Of a message that holds a slot: its index among those of its
    /// connection.
    slot: u64,
    proto: Protocol,
    algo: Algorithm,
    kind: MsgKind,
    /// LL or LL128 over NVLink: its stream ([`Streams`]); else `NONE`.
    stream: u32,
}

/// What a message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgKind {
    /// Data of a send step: it takes a slot of the connection's buffer.
    Slotted,
    /// Data that takes no slot (NVLink SHARP's multicast copies).
    Free,
    /// The receiver's clear-to-send for connection (src, dst, tag),
    /// travelling from dst's NIC to src's.
    Cts,
}

/// Deferred actions.
#[derive(Clone, Copy, Debug)]
enum Cont {
    Start {
        rank: Rank,
        step: u32,
        epoch: u32,
    },
    Done {
        rank: Rank,
        step: u32,
        epoch: u32,
    },
    /// NVLink part done: (msg, the send step to finish, whether the data
    /// goes on to the network).
    NvDone {
        msg: u32,
        step: u32,
        epoch: u32,
    },
    Post {
        msg: u32,
    },
    Arrive {
        msg: u32,
    },
    /// Try to send piece `k` of stream message `msg` (its send step's
    /// gates may hold it).
    SendPiece {
        msg: u32,
        step: u32,
        epoch: u32,
        k: u32,
    },
    /// NVLink moved piece `k` of stream message `msg`.
    PieceDone {
        msg: u32,
        step: u32,
        epoch: u32,
        k: u32,
    },
    /// One more piece of stream `id` is in its receiver's buffer.
    PieceIn {
        id: u32,
    },
    /// The receiver of connection (src, dst, tag) consumed a message: its
    /// proxy sends the clear-to-send (network connections).
    SendCts {
        src: Rank,
        dst: Rank,
        tag: u32,
    },
    /// The sender of connection (src, dst, tag) learns that its receiver
    /// has a slot free again.
    Credit {
        src: Rank,
        dst: Rank,
        tag: u32,
    },
    /// A switch reduction or multicast moved its data (index into
    /// `groups`).
    GroupDone {
        id: u32,
    },
}

/// A step of some rank: (rank, step, epoch).
type StepRef = (Rank, u32, u32);

/// An NVLink SHARP transfer in progress: the steps it ends, and for a
/// multicast the messages it delivers.
struct GroupOp {
    /// The reduction or multicast step.
    owner: StepRef,
    /// The contributions a reduction read.
    offers: Vec<StepRef>,
    /// The copies a multicast delivers.
    msgs: Vec<u32>,
}

/// A send step of rank `rank`: `bytes` of data to `to` with `tag`.
#[derive(Clone, Copy, Debug)]
struct SendStep {
    rank: Rank,
    step: u32,
    epoch: u32,
    to: Rank,
    tag: u32,
    bytes: u64,
}

/// One (sender, receiver, tag) connection: message order and the credits
/// of its buffer slots (see the module's description).
#[derive(Default)]
struct Conn {
    /// Sequence number of the next message.
    sent: u64,
    /// Messages written so far that hold a slot (NVLink SHARP's multicast
    /// copies do not).
    slots: u64,
    /// Sequence number of the next message to deliver.
    delivered: u64,
    /// Arrivals waiting for their turn.
    early: Vec<u32>,
    /// Messages the receiver consumed, as the sender knows.
    freed: u64,
    /// Network: messages whose RDMA WRITE completed (the sender's own
    /// slots free again).
    acked: u64,
    /// Send steps waiting for a slot.
    kernel_wait: VecDeque<SendStep>,
    /// Network: messages staged for the proxy, waiting for the receiver's
    /// clear-to-send.
    post_wait: VecDeque<u32>,
}

/// Runs NCCL schedules on the ranks of a communicator.
pub struct NcclRuntime {
    comm: Comm,
    me: u32,
    /// Protocol of each schedule (by id; absent: the default).
    choices: Vec<(Algorithm, Protocol)>,
    default_proto: Protocol,
    ranks: Vec<RankState>,
    scheds: Vec<Rc<Prepared>>,
    /// Per (sender NIC host, receiver NIC host, tag): the RC connection's
    /// two QPs, the sender's end and the receiver's (which carries the
    /// clear-to-send back).
    conns: HashMap<(u32, u32, u32), (QpId, QpId)>,
    msgs: Vec<Option<Msg>>,
    free_msgs: Vec<u32>,
    conts: Vec<Option<Cont>>,
    free_conts: Vec<u32>,
    /// Per (src, dst, tag): the order of its messages and its credits.
    order: HashMap<(Rank, Rank, u32), Conn>,
    /// Per QP: the connections of its RDMA WRITEs not yet completed, in
    /// posting order (an RC QP completes in order).
    inflight: HashMap<u32, VecDeque<(Rank, Rank, u32)>>,
    nvl: NvLink<Cont>,
    finished: Vec<Rank>,
    counters: MpiCounters,
    failed: bool,
    /// By schedule id: the call to run as fluid coflows instead.
    fluid: Vec<Option<CollCall>>,
    fluid_cost: HashMap<u32, Rc<FluidCost>>,
    /// Ranks that started the current fluid call, with their epochs.
    fluid_started: Vec<(Rank, u32)>,
    /// Per rank: fluid calls started so far (the index of its next).
    fluid_calls: Vec<u64>,
    /// Chain calls in progress.
    chain_calls: ChainCalls,
    /// The servers' NVLink, PCIe and NVLink SHARP figures (the same the
    /// flow backend's coflows use).
    links: GpuLinks,
    /// Without GPUDirect: when each host's copy through host memory is
    /// free, per NIC host and direction (out, in); see [`Self::staging_delay`].
    pcie_free: HashMap<(u32, bool), Time>,
    /// Switch contributions posted, per (contributor, reader, tag).
    offers: HashMap<(Rank, Rank, u32), VecDeque<StepRef>>,
    /// Switch reductions posted, per (reader, tag).
    reads: HashMap<(Rank, u32), VecDeque<StepRef>>,
    groups: Vec<Option<GroupOp>>,
    free_groups: Vec<u32>,
    /// LL and LL128 messages over NVLink still coming in, and the steps
    /// that pass their lines on.
    streams: Streams<Cont>,
}

impl NcclRuntime {
    /// A runtime for `comm` on GPU servers `g`, running calls with
    /// `proto` on rings unless [`NcclRuntime::set_schedule_choices`] says
    /// otherwise, owned by workload `me`.
    pub fn new(net: &Net, comm: Comm, g: &GpuSpec, proto: Protocol, me: u32) -> Self {
        let servers = (net.n_hosts() / g.nics().max(1)) as usize;
        let n = comm.n() as usize;
        NcclRuntime {
            nvl: NvLink::new(
                servers,
                g.gpus_per_server as usize,
                Rate::from_gbps_f64(g.nvlink_gbps),
            ),
            comm,
            me,
            choices: Vec::new(),
            default_proto: proto,
            ranks: (0..n)
                .map(|_| RankState {
                    sched: NONE,
                    epoch: 0,
                    waiting: Vec::new(),
                    left: 0,
                    posted: HashMap::new(),
                    arrived: HashMap::new(),
                })
                .collect(),
            scheds: Vec::new(),
            conns: HashMap::new(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            conts: Vec::new(),
            free_conts: Vec::new(),
            order: HashMap::new(),
            inflight: HashMap::new(),
            finished: Vec::new(),
            counters: MpiCounters::default(),
            failed: false,
            fluid: Vec::new(),
            fluid_cost: HashMap::new(),
            fluid_started: Vec::new(),
            fluid_calls: vec![0; n],
            chain_calls: ChainCalls::default(),
            links: GpuLinks {
                nvlink_bpps: g.nvlink_gbps / 8.0 / 1e3,
                nvlink_lat: Time::from_ns_f64(g.nvlink_latency_ns),
                pcie_lat: Time::from_ns_f64(g.pcie_latency_ns),
                staging_bpps: (!g.gpudirect).then(|| g.pcie_gbps / 8.0 / 1e3),
                nvls_weight: 1.0 / g.nvls_efficiency,
            },
            pcie_free: HashMap::new(),
            offers: HashMap::new(),
            reads: HashMap::new(),
            groups: Vec::new(),
            free_groups: Vec::new(),
            streams: Streams::default(),
        }
    }

    /// Calls to run as fluid coflows (flow backend), by schedule id; their
    /// schedules are markers of one empty step per rank, which this
    /// runtime ends at each rank's time from the coflows' cost.
    pub fn set_fluid_calls(&mut self, calls: Vec<Option<CollCall>>) {
        self.fluid = calls;
    }

    /// Rank `rank` starts fluid call `call` (schedule `id`). A chain call
    /// (Broadcast, Reduce) ends each rank's part from the ranks' own start
    /// times ([`ChainCalls`]); any other call waits for every rank, then
    /// ends each rank's part after its cost.
    fn start_fluid(&mut self, net: &mut Net, rank: Rank, id: SchedId, call: CollCall) {
        let epoch = self.ranks[rank as usize].epoch;
        let k = self.fluid_calls[rank as usize];
        self.fluid_calls[rank as usize] += 1;
        let Some(cost) = self.fluid_cost_of(net, id, &call) else {
            self.failed = true;
            return;
        };
        if cost.chains.is_empty() {
            self.fluid_started.push((rank, epoch));
            if self.fluid_started.len() < self.comm.n() as usize {
                return;
            }
            self.account_fluid(net, &cost);
            for (rank, epoch) in std::mem::take(&mut self.fluid_started) {
                self.end_fluid(net, rank, epoch, cost.rank_end[rank as usize]);
            }
            return;
        }
        if !self.chain_calls.started(k) {
            self.account_fluid(net, &cost);
        }
        let now = net.now();
        for (rank, epoch, at) in self.chain_calls.start(k, &cost, rank, epoch, now) {
            self.end_fluid(net, rank, epoch, at - now);
        }
    }

    /// Rank `rank` (epoch `epoch`) ends its fluid call `after` from now.
    fn end_fluid(&mut self, net: &mut Net, rank: Rank, epoch: u32, after: Time) {
        let c = Cont::Done {
            rank,
            step: 0,
            epoch,
        };
        self.defer(net, after, c);
    }

    /// The cost of fluid call `call` (schedule `id`), computed once.
    fn fluid_cost_of(
        &mut self,
        net: &mut Net,
        id: SchedId,
        call: &CollCall,
    ) -> Option<Rc<FluidCost>> {
        if let Some(c) = self.fluid_cost.get(&id) {
            return Some(Rc::clone(c));
        }
        let Self {
            comm,
            conns,
            counters,
            me,
            links,
            ..
        } = self;
        let mut connect = |net: &mut Net, a: u32, b: u32, ch: u32| {
            conns
                .entry((a, b, ch))
                .or_insert_with(|| {
                    counters.qps += 2;
                    connect_channel(net, *me, a, b, ch)
                })
                .0
        };
        let c = Rc::new(fluid::cost(net, comm, links, call, &mut connect)?);
        self.fluid_cost.insert(id, Rc::clone(&c));
        Some(c)
    }

    /// Count what a fluid call moved.
    fn account_fluid(&mut self, net: &mut Net, cost: &FluidCost) {
        self.counters.net_bytes += cost.net_bytes;
        self.counters.shm_bytes += cost.shm_bytes;
        self.counters.eager_msgs += cost.net_msgs;
        self.counters.shm_msgs += cost.shm_msgs;
        for (ports, wire, pkts) in &cost.ports {
            net.flow_account(ports, *wire, *pkts);
        }
    }

    /// The algorithm and protocol of each schedule, by id (schedules
    /// beyond the list run rings with the default protocol).
    pub fn set_schedule_choices(&mut self, choices: Vec<(Algorithm, Protocol)>) {
        self.choices = choices;
    }

    fn choice_of(&self, rank: Rank) -> (Algorithm, Protocol) {
        let id = self.ranks[rank as usize].sched;
        self.choices
            .get(id as usize)
            .copied()
            .unwrap_or((Algorithm::Ring, self.default_proto))
    }

    fn defer(&mut self, net: &mut Net, after: Time, c: Cont) {
        let id = if let Some(i) = self.free_conts.pop() {
            self.conts[i as usize] = Some(c);
            i
        } else {
            self.conts.push(Some(c));
            self.conts.len() as u32 - 1
        };
        net.set_app_timer(self.me, net.now() + after, id as u64);
    }

    fn new_msg(&mut self, m: Msg) -> u32 {
        if let Some(i) = self.free_msgs.pop() {
            self.msgs[i as usize] = Some(m);
            i
        } else {
            self.msgs.push(Some(m));
            self.msgs.len() as u32 - 1
        }
    }

    fn prepared(&self, rank: Rank) -> Rc<Prepared> {
        Rc::clone(&self.scheds[self.ranks[rank as usize].sched as usize])
    }

    fn start_step(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        let pr = self.prepared(rank);
        let eb = pr.s.elem_bytes as u64;
        let op = pr.s.ranks[rank as usize].steps[step as usize].op;
        // What leaves the GPU other than by its own NVLink stores needs
        // the data whole: a send to another server, a switch operation.
        let whole = match op {
            Op::Send { to, .. } => self.comm.server(rank) != self.comm.server(to),
            Op::SwitchSend { .. } | Op::SwitchReduce { .. } | Op::Multicast { .. } => true,
            Op::Recv { .. } | Op::Reduce { .. } | Op::Copy { .. } | Op::Compute { .. } => false,
        };
        if whole {
            if let Some(id) = self.streams.short(rank, step, 1, 1) {
                self.streams.wait(id, Cont::Start { rank, step, epoch });
                return;
            }
        }
        match op {
            Op::Send { to, tag, src } => {
                let s = SendStep {
                    rank,
                    step,
                    epoch,
                    to,
                    tag,
                    bytes: src.count * eb,
                };
                self.send(net, s);
            }
            Op::Recv { from, tag, .. } => {
                let st = &mut self.ranks[rank as usize];
                match st.arrived.get_mut(&(from, tag)).and_then(|q| q.pop_front()) {
                    Some(id) => self.receive(net, id, rank, step, epoch),
                    None => st.posted.entry((from, tag)).or_default().push_back(step),
                }
            }
            Op::Reduce { .. } | Op::Copy { .. } => self.step_done(net, rank, step, epoch),
            Op::Compute { ps } => self.defer(net, Time(ps), Cont::Done { rank, step, epoch }),
            Op::SwitchSend { to, tag, .. } => {
                let q = self.offers.entry((rank, to, tag)).or_default();
                q.push_back((rank, step, epoch));
                self.try_reduce(net, to, tag, eb);
            }
            Op::SwitchReduce { tag, .. } => {
                let q = self.reads.entry((rank, tag)).or_default();
                q.push_back((rank, step, epoch));
                self.try_reduce(net, rank, tag, eb);
            }
            Op::Multicast { tag, src, .. } => {
                self.multicast(net, (rank, step, epoch), tag, src.count * eb, &pr);
            }
        }
    }

    fn new_group(&mut self, op: GroupOp) -> u32 {
        if let Some(i) = self.free_groups.pop() {
            self.groups[i as usize] = Some(op);
            i
        } else {
            self.groups.push(Some(op));
            self.groups.len() as u32 - 1
        }
    }

    /// The GPUs of the ranks `first .. first + n` (one server), as bits.
    fn gpu_mask(&self, first: Rank, n: u32) -> u64 {
        (first..first + n).fold(0, |m, r| m | 1 << self.comm.gpu(r))
    }

    /// Start the next switch reduction read by `reader` with `tag` once
    /// every other GPU of its group has offered its part.
    fn try_reduce(&mut self, net: &mut Net, reader: Rank, tag: u32, eb: u64) {
        let Some(&(_, step, _)) = self.reads.get(&(reader, tag)).and_then(|q| q.front()) else {
            return;
        };
        let pr = self.prepared(reader);
        let op = pr.s.ranks[reader as usize].steps[step as usize].op;
        let Op::SwitchReduce { first, n, dst, .. } = op else {
            unreachable!("reads hold switch reductions")
        };
        let peers: Vec<Rank> = op.group_peers(reader).collect();
        let ready = peers.iter().all(|&m| {
            self.offers
                .get(&(m, reader, tag))
                .is_some_and(|q| !q.is_empty())
        });
        if !ready {
            return;
        }
        let owner = self
            .reads
            .get_mut(&(reader, tag))
            .and_then(|q| q.pop_front())
            .expect("a posted reduction");
        let offers: Vec<StepRef> = peers
            .iter()
            .map(|&m| {
                self.offers
                    .get_mut(&(m, reader, tag))
                    .and_then(|q| q.pop_front())
                    .expect("a posted offer")
            })
            .collect();
        let (srcs, dsts) = (self.gpu_mask(first, n), 1 << self.comm.gpu(reader));
        let op = GroupOp {
            owner,
            offers,
            msgs: Vec::new(),
        };
        self.start_switch(net, srcs, dsts, dst.count * eb, op);
    }

    /// Multicast `bytes` from `owner`'s rank to every GPU of its group.
    fn multicast(&mut self, net: &mut Net, owner: StepRef, tag: u32, bytes: u64, pr: &Prepared) {
        let a = owner.0;
        let op = pr.s.ranks[a as usize].steps[owner.1 as usize].op;
        let Op::Multicast { first, n, .. } = op else {
            unreachable!("a multicast")
        };
        let msgs = op
            .group_peers(a)
            .map(|b| self.queue_msg(a, b, tag, bytes, MsgKind::Free))
            .collect();
        let (srcs, dsts) = (1 << self.comm.gpu(a), self.gpu_mask(first, n));
        let op = GroupOp {
            owner,
            offers: Vec::new(),
            msgs,
        };
        self.start_switch(net, srcs, dsts, bytes, op);
    }

    /// Start an NVLink SHARP transfer of `bytes` out of the GPUs `srcs`
    /// and into `dsts` of the owner's server.
    fn start_switch(&mut self, net: &mut Net, srcs: u64, dsts: u64, bytes: u64, op: GroupOp) {
        let copies = (op.offers.len() + op.msgs.len()) as u64;
        self.counters.shm_msgs += copies;
        self.counters.shm_bytes += bytes * copies;
        let server = self.comm.server(op.owner.0);
        let x = Group {
            srcs,
            dsts,
            weight: self.links.nvls_weight,
        };
        let what = Cont::GroupDone {
            id: self.new_group(op),
        };
        self.nvl
            .start_group(net, self.me, server, x, bytes, what, TIMER_NVL);
    }

    /// A switch reduction or multicast moved its data: the contributions
    /// and the multicast step end now; the reduced data and the copies
    /// are usable one NVLink latency later.
    fn group_done(&mut self, net: &mut Net, id: u32) {
        let g = self.groups[id as usize]
            .take()
            .expect("live group transfer");
        self.free_groups.push(id);
        for (rank, step, epoch) in g.offers {
            self.step_done(net, rank, step, epoch);
        }
        let (rank, step, epoch) = g.owner;
        if g.msgs.is_empty()
            && matches!(
                self.prepared(rank).s.ranks[rank as usize].steps[step as usize].op,
                Op::SwitchReduce { .. }
            )
        {
            self.defer(net, self.links.nvlink_lat, Cont::Done { rank, step, epoch });
            return;
        }
        self.step_done(net, rank, step, epoch);
        for msg in g.msgs {
            self.defer(net, self.links.nvlink_lat, Cont::Arrive { msg });
        }
    }

    /// A send step: once the connection has a slot for it (see the
    /// module's description), now or when one frees.
    fn send(&mut self, net: &mut Net, s: SendStep) {
        let key = (s.rank, s.to, s.tag);
        self.order.entry(key).or_default().kernel_wait.push_back(s);
        self.wake_sends(net, key);
    }

    /// Whether the sender of connection `key` may write its next message:
    /// into the receiver's slots (NVLink) or its own (network).
    fn has_slot(&self, key: (Rank, Rank, u32)) -> bool {
        let Some(conn) = self.order.get(&key) else {
            return true;
        };
        let local = self.comm.server(key.0) == self.comm.server(key.1);
        conn.slots < if local { conn.freed } else { conn.acked } + NCCL_STEPS
    }

    /// Start the send steps of connection `key` that have a slot now.
    fn wake_sends(&mut self, net: &mut Net, key: (Rank, Rank, u32)) {
        while self.has_slot(key) {
            let Some(s) = self
                .order
                .get_mut(&key)
                .and_then(|c| c.kernel_wait.pop_front())
            else {
                return;
            };
            self.send_now(net, s);
        }
    }

    fn send_now(&mut self, net: &mut Net, s: SendStep) {
        let SendStep {
            rank: a,
            step,
            epoch,
            to: b,
            tag,
            bytes,
        } = s;
        let wire = self.choice_of(a).1.wire_bytes(bytes);
        let id = self.queue_msg(a, b, tag, wire, MsgKind::Slotted);
        let c = &self.comm;
        let (sa, sb) = (c.server(a), c.server(b));
        let (ga, gb) = (c.gpu(a), c.gpu(b));
        if sa == sb {
            self.counters.shm_msgs += 1;
            self.counters.shm_bytes += bytes;
            if self.choice_of(a).1 != Protocol::Simple {
                // LL and LL128: piece by piece, each usable at once.
                let n = streams::pieces(wire);
                let stream = self.streams.open(id, n);
                self.msgs[id as usize]
                    .as_mut()
                    .expect("live message")
                    .stream = stream;
                self.send_piece(net, id, step, epoch, 0);
                return;
            }
            let what = Cont::NvDone {
                msg: id,
                step,
                epoch,
            };
            self.nvl
                .start(net, self.me, sa, ga, gb, wire, what, TIMER_NVL);
            return;
        }
        self.counters.eager_msgs += 1;
        self.counters.net_bytes += bytes;
        let (ha, _, pxn) = c.net_path(a, b);
        // PXN: out through the NIC on the receiver's rail, after NVLink.
        if pxn {
            self.counters.shm_bytes += bytes;
            let what = Cont::NvDone {
                msg: id,
                step,
                epoch,
            };
            self.nvl
                .start(net, self.me, sa, ga, gb, wire, what, TIMER_NVL);
            return;
        }
        // The message is staged before the step's dependents run: a send
        // they start at once is staged behind it (the proxy posts in order).
        let d = self.links.pcie_lat + self.staging_delay(net.now(), ha, false, wire);
        self.defer(net, d, Cont::Post { msg: id });
        self.step_done(net, a, step, epoch);
    }

    /// A message of `wire` bytes from `a` to `b` with `tag`, next in
    /// that connection's order.
    fn queue_msg(&mut self, a: Rank, b: Rank, tag: u32, wire: u64, kind: MsgKind) -> u32 {
        let (algo, proto) = self.choice_of(a);
        let o = self.order.entry((a, b, tag)).or_default();
        let seq = o.sent;
        o.sent += 1;
        let slot = o.slots;
        if kind == MsgKind::Slotted {
            o.slots += 1;
        }
        self.new_msg(Msg {
            src: a,
            dst: b,
            tag,
            wire,
            seq,
            slot,
            proto,
            algo,
            kind,
            stream: NONE,
        })
    }

    /// Without GPUDirect RDMA, the wait from `at` until a message of
    /// `wire` bytes has been copied through host memory on NIC host
    /// `host`'s side, going out (`inbound` false) or coming in: at
    /// `pcie_gbps`, one copy at a time per host and direction (PCIe is full
    /// duplex), so the host copy bounds the bandwidth as well as adding
    /// latency. Zero with GPUDirect.
    fn staging_delay(&mut self, at: Time, host: u32, inbound: bool, wire: u64) -> Time {
        let Some(bpp) = self.links.staging_bpps else {
            return Time::ZERO;
        };
        let copy = Time::ps((wire as f64 / bpp).ceil() as u64);
        let free = self.pcie_free.entry((host, inbound)).or_insert(Time::ZERO);
        let end = (*free).max(at) + copy;
        *free = end;
        end - at
    }

    /// Message `id` is staged for the proxy: its RDMA WRITE goes out once
    /// the receiver has a slot for it (its clear-to-send came).
    fn post(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        let key = (m.src, m.dst, m.tag);
        let conn = self.order.get_mut(&key).expect("ordered connection");
        conn.post_wait.push_back(id);
        self.wake_posts(net, key);
    }

    /// Post the staged messages of connection `key` that have a slot at
    /// the receiver now.
    fn wake_posts(&mut self, net: &mut Net, key: (Rank, Rank, u32)) {
        loop {
            let Some(conn) = self.order.get_mut(&key) else {
                return;
            };
            let Some(&id) = conn.post_wait.front() else {
                return;
            };
            let slot = self.msgs[id as usize].as_ref().expect("live message").slot;
            if slot >= conn.freed + NCCL_STEPS {
                return;
            }
            conn.post_wait.pop_front();
            self.post_now(net, id);
        }
    }

    /// The RC connection of this communicator from NIC host `ha` to `hb`
    /// for `tag`: its QP at `ha` and its QP at `hb`.
    fn qp(&mut self, net: &mut Net, ha: u32, hb: u32, tag: u32) -> (QpId, QpId) {
        let me = self.me;
        *self.conns.entry((ha, hb, tag)).or_insert_with(|| {
            self.counters.qps += 2;
            connect_channel(net, me, ha, hb, tag)
        })
    }

    /// The RDMA WRITE of message `id` between the NICs of
    /// [`Comm::net_path`] (with PXN, the sender's server's NIC on the
    /// receiver's rail); its completion frees the sender's slot.
    fn post_now(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        let (ha, hb, _) = self.comm.net_path(m.src, m.dst);
        let (key, wire) = ((m.src, m.dst, m.tag), m.wire);
        let qp = self.qp(net, ha, hb, key.2).0;
        self.inflight.entry(qp.0).or_default().push_back(key);
        net.post(qp, OpKind::Write, wire, id as u64)
            .expect("valid QP");
    }

    /// The receiver of connection (src, dst, tag) consumed a message
    /// that held a slot: the sender learns it over NVLink, or from the
    /// receiver's clear-to-send over the network.
    fn consumed(&mut self, net: &mut Net, src: Rank, dst: Rank, tag: u32) {
        if self.comm.server(src) == self.comm.server(dst) {
            self.defer(net, self.links.nvlink_lat, Cont::Credit { src, dst, tag });
        } else {
            self.defer(net, self.links.pcie_lat, Cont::SendCts { src, dst, tag });
        }
    }

    /// The receiver's proxy sends the clear-to-send, from the receiver's
    /// NIC back to the sender's, on the receiver's end of the connection
    /// (as the IB plugin writes into the sender's FIFO).
    fn send_cts(&mut self, net: &mut Net, src: Rank, dst: Rank, tag: u32) {
        let (ha, hb, _) = self.comm.net_path(src, dst);
        let id = self.new_msg(Msg {
            src,
            dst,
            tag,
            wire: CTS_BYTES,
            seq: 0,
            slot: 0,
            proto: Protocol::Simple,
            algo: Algorithm::Ring,
            kind: MsgKind::Cts,
            stream: NONE,
        });
        let qp = self.qp(net, ha, hb, tag).1;
        net.post_unsignaled(qp, OpKind::Write, CTS_BYTES, id as u64)
            .expect("valid QP");
    }

    /// The sender of connection (src, dst, tag) has one more slot at the
    /// receiver.
    fn credit(&mut self, net: &mut Net, src: Rank, dst: Rank, tag: u32) {
        let conn = self
            .order
            .get_mut(&(src, dst, tag))
            .expect("ordered connection");
        conn.freed += 1;
        if self.comm.server(src) == self.comm.server(dst) {
            self.wake_sends(net, (src, dst, tag));
        } else {
            self.wake_posts(net, (src, dst, tag));
        }
    }

    /// Message `id` is in the receiver's memory: deliver it in order.
    fn arrive(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        let key = (m.src, m.dst, m.tag);
        let o = self.order.get_mut(&key).expect("ordered connection");
        if m.seq != o.delivered {
            o.early.push(id);
            return;
        }
        let mut ready = vec![id];
        o.delivered += 1;
        loop {
            let next = o.delivered;
            let Some(i) = o.early.iter().position(|&x| {
                self.msgs[x as usize]
                    .as_ref()
                    .is_some_and(|m| m.seq == next)
            }) else {
                break;
            };
            ready.push(o.early.swap_remove(i));
            o.delivered += 1;
        }
        for id in ready {
            self.deliver(net, id);
        }
    }

    fn deliver(&mut self, net: &mut Net, id: u32) {
        let (dst, src, tag) = {
            let m = self.msgs[id as usize].as_ref().expect("live message");
            (m.dst, m.src, m.tag)
        };
        let st = &mut self.ranks[dst as usize];
        match st.posted.get_mut(&(src, tag)).and_then(|q| q.pop_front()) {
            Some(step) => {
                let epoch = st.epoch;
                self.receive(net, id, dst, step, epoch);
            }
            None => st.arrived.entry((src, tag)).or_default().push_back(id),
        }
    }

    /// Receive step `step` of `rank` takes message `id`: at once if it is
    /// in whole; at its first line if it is a stream still coming in (its
    /// dependents start, gated on the stream; the receive ends, and its
    /// slot frees, when the stream is in).
    fn receive(&mut self, net: &mut Net, id: u32, rank: Rank, step: u32, epoch: u32) {
        let stream = self.msgs[id as usize]
            .as_ref()
            .expect("live message")
            .stream;
        if stream == NONE || self.streams.is_in(stream) {
            self.take(net, id);
            self.step_done(net, rank, step, epoch);
            return;
        }
        let t = Taken { rank, step, epoch };
        self.streams.take(stream, t);
        self.release_dependents(net, rank, step, epoch);
    }

    /// Piece `k` of stream message `msg` goes over NVLink once every gate
    /// of its send step has as large a share of its own data in.
    fn send_piece(&mut self, net: &mut Net, msg: u32, step: u32, epoch: u32, k: u32) {
        let m = self.msgs[msg as usize].as_ref().expect("live message");
        let (src, dst, wire) = (m.src, m.dst, m.wire);
        let n = streams::pieces(wire);
        if let Some(g) = self.streams.short(src, step, k + 1, n) {
            let c = Cont::SendPiece {
                msg,
                step,
                epoch,
                k,
            };
            self.streams.wait(g, c);
            return;
        }
        let c = &self.comm;
        let (server, ga, gb) = (c.server(src), c.gpu(src), c.gpu(dst));
        let what = Cont::PieceDone {
            msg,
            step,
            epoch,
            k,
        };
        let bytes = streams::piece_bytes(wire, k, n);
        self.nvl
            .start(net, self.me, server, ga, gb, bytes, what, TIMER_NVL);
    }

    /// One more piece of stream `id` is in: with the first its message
    /// arrives; with the last the receive that took it ends (its slot is
    /// free); what waited for the stream checks again.
    fn piece_in(&mut self, net: &mut Net, id: u32) {
        let p = self.streams.piece_in(id);
        if p.first {
            self.arrive(net, p.msg);
        }
        if let Some(t) = p.taken {
            self.take(net, p.msg);
            self.count_done(t.rank, t.epoch);
        }
        for c in p.waiters {
            self.run_cont(net, c);
        }
    }

    /// A receive step took message `id`: its slot is free again.
    fn take(&mut self, net: &mut Net, id: u32) {
        let m = self.msgs[id as usize].as_ref().expect("live message");
        let (src, dst, tag, kind) = (m.src, m.dst, m.tag, m.kind);
        self.release(id);
        if kind == MsgKind::Slotted {
            self.consumed(net, src, dst, tag);
        }
    }

    fn release(&mut self, id: u32) {
        self.msgs[id as usize] = None;
        self.free_msgs.push(id);
    }

    fn step_done(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        // The last step has no dependents: the rank is finished before
        // anything else is started.
        if self.ranks[rank as usize].left == 1 {
            self.release_dependents(net, rank, step, epoch);
            self.count_done(rank, epoch);
        } else {
            self.count_done(rank, epoch);
            self.release_dependents(net, rank, step, epoch);
        }
    }

    /// One more step of `rank`'s call is over; the call ends with its last.
    fn count_done(&mut self, rank: Rank, epoch: u32) {
        let st = &mut self.ranks[rank as usize];
        debug_assert_eq!(st.epoch, epoch, "a step of an old call");
        st.left -= 1;
        if st.left == 0 {
            st.sched = NONE;
            self.finished.push(rank);
        }
    }

    /// Start the dependents of `rank`'s `step` that wait for nothing else,
    /// passing on the step's open gates ([`Streams`]).
    fn release_dependents(&mut self, net: &mut Net, rank: Rank, step: u32, epoch: u32) {
        let st = &mut self.ranks[rank as usize];
        debug_assert_eq!(st.epoch, epoch, "a step of an old call");
        let pr = Rc::clone(&self.scheds[st.sched as usize]);
        let deps = &pr.dependents[rank as usize][step as usize];
        let mut ready = Vec::new();
        for &d in deps {
            let w = &mut st.waiting[d as usize];
            *w -= 1;
            if *w == 0 {
                ready.push(d);
            }
        }
        self.streams.pass_on(rank, step, deps);
        for d in ready {
            self.start_step(net, rank, d, epoch);
        }
    }

    fn run_cont(&mut self, net: &mut Net, c: Cont) {
        match c {
            Cont::Start { rank, step, epoch } => self.start_step(net, rank, step, epoch),
            Cont::Done { rank, step, epoch } => self.step_done(net, rank, step, epoch),
            Cont::NvDone { msg, step, epoch } => {
                let m = self.msgs[msg as usize].as_ref().expect("live message");
                let c = &self.comm;
                let (src, wire) = (m.src, m.wire);
                let local = c.server(m.src) == c.server(m.dst);
                let ha = c.net_path(m.src, m.dst).0;
                let hop = Costs::of(m.algo, m.proto).nvlink_hop;
                // Delivery or staging first, then the step's dependents (in
                // the order of the connection's messages, as in `send_now`).
                if local {
                    let d = self.links.nvlink_lat + hop;
                    self.defer(net, d, Cont::Arrive { msg });
                } else {
                    let copy =
                        self.staging_delay(net.now() + self.links.nvlink_lat, ha, false, wire);
                    let d = self.links.nvlink_lat + self.links.pcie_lat + copy;
                    self.defer(net, d, Cont::Post { msg });
                }
                self.step_done(net, src, step, epoch);
            }
            Cont::Post { msg } => self.post(net, msg),
            Cont::Arrive { msg } => self.arrive(net, msg),
            Cont::SendPiece {
                msg,
                step,
                epoch,
                k,
            } => self.send_piece(net, msg, step, epoch, k),
            Cont::PieceDone {
                msg,
                step,
                epoch,
                k,
            } => {
                let m = self.msgs[msg as usize].as_ref().expect("live message");
                let (src, n, stream) = (m.src, streams::pieces(m.wire), m.stream);
                let d = self.links.nvlink_lat + Costs::of(m.algo, m.proto).nvlink_hop;
                self.defer(net, d, Cont::PieceIn { id: stream });
                if k + 1 < n {
                    self.send_piece(net, msg, step, epoch, k + 1);
                } else {
                    self.step_done(net, src, step, epoch);
                }
            }
            Cont::PieceIn { id } => self.piece_in(net, id),
            Cont::SendCts { src, dst, tag } => self.send_cts(net, src, dst, tag),
            Cont::Credit { src, dst, tag } => self.credit(net, src, dst, tag),
            Cont::GroupDone { id } => self.group_done(net, id),
        }
    }
}

impl Executor for NcclRuntime {
    fn add_schedule(&mut self, s: Schedule) -> SchedId {
        let dependents = s.dependents();
        self.scheds.push(Rc::new(Prepared { s, dependents }));
        self.scheds.len() as SchedId - 1
    }

    fn start(&mut self, net: &mut Net, rank: Rank, id: SchedId) {
        let sched = Rc::clone(&self.scheds[id as usize]);
        let st = &mut self.ranks[rank as usize];
        debug_assert_eq!(st.sched, NONE, "rank {rank} is busy");
        let steps = sched
            .s
            .ranks
            .get(rank as usize)
            .map_or(&[][..], |r| &r.steps[..]);
        st.epoch += 1;
        if let Some(Some(call)) = self.fluid.get(id as usize).copied() {
            st.sched = id;
            st.left = 1;
            st.waiting.clear();
            st.waiting.push(0);
            self.start_fluid(net, rank, id, call);
            return;
        }
        if steps.is_empty() {
            self.finished.push(rank);
            return;
        }
        st.sched = id;
        st.left = steps.len() as u32;
        st.waiting.clear();
        st.waiting.extend(steps.iter().map(|s| s.deps.len() as u32));
        let epoch = st.epoch;
        let launch = self
            .choices
            .get(id as usize)
            .map_or(Time::ZERO, |&(a, p)| Costs::of(a, p).launch);
        for (i, s) in steps.iter().enumerate() {
            if s.deps.is_empty() {
                let c = Cont::Start {
                    rank,
                    step: i as u32,
                    epoch,
                };
                self.defer(net, launch, c);
            }
        }
    }

    fn handle(&mut self, net: &mut Net, ev: AppEvent) {
        match ev {
            AppEvent::Timer { token } if token & TIMER_NVL != 0 => {
                let mut done = Vec::new();
                self.nvl.tick(net, token & !TIMER_NVL, &mut done);
                for c in done {
                    self.run_cont(net, c);
                }
                self.nvl.settle(net, self.me, TIMER_NVL);
            }
            AppEvent::Timer { token } => {
                let c = self.conts[token as usize]
                    .take()
                    .expect("live continuation");
                self.free_conts.push(token as u32);
                self.run_cont(net, c);
            }
            AppEvent::Received { token, .. } => {
                let id = token as u32;
                let m = self.msgs[id as usize].as_ref().expect("live message");
                if m.kind == MsgKind::Cts {
                    let (src, dst, tag) = (m.src, m.dst, m.tag);
                    self.release(id);
                    self.credit(net, src, dst, tag);
                    return;
                }
                let hop = Costs::of(m.algo, m.proto).net_hop;
                let (hb, wire) = (self.comm.net_path(m.src, m.dst).1, m.wire);
                let d = self.links.pcie_lat + self.staging_delay(net.now(), hb, true, wire) + hop;
                self.defer(net, d, Cont::Arrive { msg: id });
            }
            AppEvent::Failed { .. } => self.failed = true,
            AppEvent::Completed { qp, .. } => {
                // An RDMA WRITE of data completed: the sender's slot is free.
                let (a, b, tag) = self
                    .inflight
                    .get_mut(&qp.0)
                    .and_then(|q| q.pop_front())
                    .expect("a WRITE in flight on this QP");
                self.order
                    .get_mut(&(a, b, tag))
                    .expect("ordered connection")
                    .acked += 1;
                self.wake_sends(net, (a, b, tag));
            }
            AppEvent::TcpWritable { .. } | AppEvent::TcpDelivered { .. } => {}
        }
    }

    fn take_finished(&mut self, out: &mut Vec<Rank>) {
        out.append(&mut self.finished);
    }

    fn clock(&self, net: &Net, _rank: Rank) -> Time {
        net.now()
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn counters(&self) -> MpiCounters {
        self.counters.clone()
    }
}

/// The RC connection of communicator `me` from NIC host `ha` to `hb` for
/// channel `ch`. Its UDP source ports come from the seed and this key, not
/// from the order in which the connections are made: the packet runtime
/// connects a channel on its first message, the fluid cost in call-plan
/// order, and both must take the same ECMP paths.
fn connect_channel(net: &mut Net, me: u32, ha: u32, hb: u32, ch: u32) -> (QpId, QpId) {
    const NCCL: u64 = 0x4E43_434C; // keeps these keys apart from MPI's
    let key = crate::rng::key_of(&[NCCL, me as u64, ha as u64, hb as u64, ch as u64]);
    net.connect_keyed(ha, hb, me, None, key)
        .expect("hosts of the communicator")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FabricSpec;
    use crate::topology::Topology;

    #[test]
    fn copies_that_hold_no_slot_leave_the_slots_to_sends() {
        // NVLink SHARP's multicast copies go out on the same (head, peer,
        // channel) key as the ring's NVLink sends between those GPUs: ten
        // of them must not use up the 8 slots, or the next ring call on
        // the pair would wait for credits that never come.
        let spec = FabricSpec::from_toml(
            "transport = \"infiniband\"\n[gpu]\ngpus_per_server = 2\n\
             [topology]\nkind = \"rail_optimized\"\nservers = 2\nspines = 1\nnic_gbps = 100\n",
        )
        .unwrap();
        let net = Net::new(&spec, 1).unwrap();
        let g = spec.gpu.clone().unwrap();
        let comm = Comm::new(&Topology::build(&spec).unwrap(), &g, 1, 2).unwrap();
        let mut rt = NcclRuntime::new(&net, comm, &g, Protocol::Simple, 0);
        let key = (0, 1, 0);
        for _ in 0..10 {
            rt.queue_msg(0, 1, 0, 64, MsgKind::Free);
        }
        assert!(rt.has_slot(key));
        for _ in 0..NCCL_STEPS {
            rt.queue_msg(0, 1, 0, 64, MsgKind::Slotted);
        }
        assert!(!rt.has_slot(key), "8 sends fill the 8 slots");
        rt.order.get_mut(&key).unwrap().freed += 1;
        assert!(rt.has_slot(key), "one taken frees one");
        // The copies kept their place in the connection's order.
        assert_eq!(rt.order[&key].sent, 18);
    }
}
