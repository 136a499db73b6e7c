//! NCCL's rings and trees on the flow backend: each channel of a call is
//! one fluid coflow, so a 1,024-GPU AllReduce costs a few thousand route
//! look-ups instead of millions of messages.
//!
//! What it models, per call:
//! - the edges NCCL's kernels use: channel c's ring (AllReduce, AllGather,
//!   ReduceScatter), its chain from the root along the ring (Broadcast,
//!   Reduce), or its tree both ways (Tree AllReduce), the same as the
//!   schedules of [`super::coll`];
//! - each edge's route: NVLink inside a server (the sender's egress and
//!   the receiver's ingress), or, between servers, NVLink to the GPU on
//!   the receiver's rail when the sender's NIC is another (PXN) and then
//!   the network path of that rail's QP of the channel, the flow backend's
//!   routing with its ECMP hash ([`Net::flow_route`]);
//! - rates: every edge of a channel carries the same data stream, so the
//!   channel runs at one rate; the channels share the links max-min
//!   fairly, each channel loading a link with the wire bytes (protocol
//!   lines, packet headers) of every one of its edges that crosses it
//!   (weighted progressive filling);
//! - time: the call starts when its last rank calls it (chains: see
//!   below) and ends, for every rank, after NCCL's launch cost, the bytes
//!   of the busiest edge at the channel's rate, and the latency of the
//!   dependency chain the detailed schedules have (per hop: NVLink or
//!   PCIe, network and NIC latency of one chunk, the protocol's per-hop
//!   cost, host staging without GPUDirect, whose copies are also a
//!   resource of each NIC host, out and in, at `pcie_gbps`):
//!   - ring (every rank starts with data): each loop of the channel takes
//!     its hops' latencies, so `bytes / rate + loops x hops x mean hop
//!     latency`;
//!   - tree (data enters at the leaves): a chunk is stored and forwarded
//!     at each hop, so the pipeline fills in `hops x chunk / rate` plus
//!     the latencies along the deepest path, up and back down, then
//!     streams `bytes / rate`;
//!   - with LL and LL128 an NVLink hop passes on a piece of the chunk
//!     (`super::streams`), not all of it, before the next hop starts,
//!     except into a rank that sends on over the network; the rest of
//!     the chunk streams behind the first piece (rings, trees, chains);
//!   - chain (Broadcast, Reduce; data enters at one end): the channels'
//!     first chunks are followed hop by hop, all channels at once, each
//!     hop's transfer sharing the links max-min with the other channels'
//!     transfers of the moment and with the streams of the channels
//!     whose first chunk crossed the hop before (the rest of their data,
//!     at their rate, until it is through): a small fluid simulation of
//!     the fill;
//!     then each rank takes the rest at the pace of the slowest hop before
//!     it, but no further ahead of the next rank than the buffer slots of
//!     the packet runtime allow (`NCCL_STEPS` chunks over NVLink, twice
//!     that over the network: see `chain_ends`), so the root and the
//!     ranks before a slower hop end early, by that much. These are the
//!     times of a call every rank starts at once ([`ChainTimes`]); ranks
//!     that start it at different times, as back-to-back calls do, end
//!     it as [`super::chain_calls`] derives from them.
//!
//!   Without contention these are the detailed schedules' times; tests
//!   compare the two.
//! - NVLS-Tree ([`super::nvls`]): each channel's part headed by one GPU
//!   of every server is a coflow of its own: the tree between the heads
//!   (one rail), both ways, and on every server's NVSwitch the part out of
//!   every GPU and into the head (the in-switch reduction) and out of the
//!   head and into every GPU (the multicast), each at `weight` of the
//!   ports. How the pipeline fills depends on what binds the part's
//!   rate. NVLink: the tree's hops have room, its first chunk crosses
//!   them as if alone, and the reduction and the multicast take a chunk
//!   at the part's rate each. The network: every stage (reduction, each
//!   level of the tree up, each level down, multicast) passes the first
//!   chunk at the rate it gets while it runs alone, since the parts reach
//!   each stage together; that counts every stage in full, and where the
//!   first estimate is smaller (deeper trees, whose parts overlap their
//!   stages) the part takes it.
//!
//! Left out: everything the flow backend leaves out, and more: the call
//! sees the links as they are when it starts (other traffic, failures and
//! repairs during it are not seen; `nccl_tests` refuses background
//! traffic and link failures with it); a channel's edges are not slowed
//! one by one (a ring runs at the rate of its most loaded link, which is
//! what the real ring's data dependencies impose); a call other than a
//! chain starts when its last rank calls it, so back-to-back rings and
//! trees do not overlap (their ranks end a call close together, so there
//! is little to overlap); a chain's fill keeps the channels in step and
//! follows their first chunks, the streams behind them only as a load at
//! the channel's rate, so on long chains it is early at the head and late
//! at the tail, and contention between channels that the packet core
//! shows with 8 channels on 8 NICs is not seen (`docs/nccl.md`).

use super::coll::{CollCall, NcclColl};
use super::comm::Comm;
use super::cut::{chunk, pieces};
use super::params::{Costs, Protocol, NCCL_STEPS};
use super::streams;
use crate::mpi::sched::Rank;
use crate::net::{Net, QpId};
use crate::units::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// NVLink resources are numbered from here (network ports below).
const NVL: u32 = 1 << 31;
/// Without GPUDirect, each NIC host's copy through host memory, out and
/// in, is a resource too (`(host * 2 + inbound)` from here).
const PCIE: u32 = NVL | (1 << 30);
/// A link counts as saturated when this little of it is left.
const EPS: f64 = 1e-9;

/// The servers' links the fluid model needs.
#[derive(Clone, Copy, Debug)]
pub struct GpuLinks {
    /// NVLink per GPU per direction, bytes per ps.
    pub nvlink_bpps: f64,
    /// NVLink latency.
    pub nvlink_lat: Time,
    /// PCIe latency (paid at each end of a network hop).
    pub pcie_lat: Time,
    /// Without GPUDirect RDMA: the host-memory staging rate, bytes per ps.
    pub staging_bpps: Option<f64>,
    /// NVLink SHARP's port capacity per byte (1 / `nvls_efficiency`).
    pub nvls_weight: f64,
}

/// What a call costs: its duration and what it moved.
#[derive(Clone, Debug, Default)]
pub struct FluidCost {
    /// From the last rank's start to the last rank's end.
    pub time: Time,
    /// From the last rank's start to each rank's end (for chains: when
    /// every rank starts at once; see `chains`).
    pub rank_end: Vec<Time>,
    /// Data bytes that crossed the network.
    pub net_bytes: u64,
    /// Data bytes that crossed NVLink.
    pub shm_bytes: u64,
    /// Messages (chunks) the detailed schedule would send between
    /// servers (through a NIC, PXN's included)...
    pub net_msgs: u64,
    /// ... and inside a server (NVLink hops, NVLS copies), as the packet
    /// runtime counts them (`eager_msgs` and `shm_msgs`).
    pub shm_msgs: u64,
    /// Per network route: its ports, and the wire bytes and packets the
    /// call puts on them.
    pub ports: Vec<(Vec<u32>, u64, u64)>,
    /// When every channel is a chain (Broadcast, Reduce) through every
    /// rank: each chain's times, from which ranks that start the call at
    /// different times end it ([`super::chain_calls`]). Empty otherwise.
    pub chains: Vec<ChainTimes>,
}

/// One chain's times in a call that every rank starts at once, by
/// position along the chain.
#[derive(Clone, Debug, Default)]
pub struct ChainTimes {
    /// The ranks from the one the data starts at.
    pub order: Vec<Rank>,
    /// Each rank's position in `order`.
    pub pos: Vec<u32>,
    /// When each position is done, launch cost included.
    pub end: Vec<Time>,
    /// When the first chunk is complete at each position, after the
    /// launch (the root's: zero).
    pub first: Vec<Time>,
    /// Whether the hop from each position to the next is NVLink.
    pub local: Vec<bool>,
    /// Chunks of the call on this chain.
    pub chunks: u64,
}

/// How data enters a channel's pattern.
enum Shape {
    /// Every rank starts with data; `hops` per loop.
    Ring { hops: u32 },
    /// From the first rank of `order` to the last, edge j from order[j]
    /// to order[j + 1].
    Chain { order: Vec<Rank> },
    /// Up every tree edge to the root, then back down: each rank's
    /// parent, and the edges to and from it.
    Tree {
        parent: Vec<Option<Rank>>,
        up: Vec<usize>,
        down: Vec<usize>,
    },
}

/// One channel's pattern: its edges and how much each carries.
struct Pattern {
    edges: Vec<(Rank, Rank)>,
    shape: Shape,
    /// Data bytes of the busiest edge, of its largest chunk, and the
    /// channel's loops (ring).
    bytes: u64,
    chunk: u64,
    loops: u64,
    /// NVLS-Tree: the local GPU that heads this part on every server.
    nvls_head: Option<u32>,
}

/// Cost of `call` on `comm` with each channel a coflow. `connect` gives
/// the QP of (sender NIC host, receiver NIC host, channel). None when a
/// channel cannot move (a link on its path has no capacity) or the
/// backend is not the flow backend.
pub fn cost(
    net: &mut Net,
    comm: &Comm,
    links: &GpuLinks,
    call: &CollCall,
    connect: &mut dyn FnMut(&mut Net, u32, u32, u32) -> QpId,
) -> Option<FluidCost> {
    let n = comm.n();
    let costs = Costs::of(call.algo, call.proto);
    let mut out = FluidCost {
        time: costs.launch,
        ..FluidCost::default()
    };
    out.rank_end = vec![costs.launch; n as usize];
    if n == 1 || call.count == 0 {
        return Some(out);
    }
    let eb = call.elem_bytes.max(1) as u64;
    let nvls = super::coll::nvls_applies(comm, call);
    let pats: Vec<(u32, Pattern)> = (0..comm.channels.max(1))
        .flat_map(|ch| {
            let pats = if nvls {
                nvls_tree_patterns(comm, call, ch)
            } else {
                pattern(comm, call, ch).into_iter().collect()
            };
            pats.into_iter().map(move |p| (ch, p))
        })
        .collect();
    // Per channel: demand per resource (wire bytes per data byte), each
    // edge's latency (ps), and the routes to count bytes on.
    let mut cap: HashMap<u32, f64> = HashMap::new();
    let mut demand: Vec<Vec<(u32, f64)>> = Vec::new();
    let mut lats: Vec<Vec<f64>> = Vec::new();
    // Per channel and edge: the data bytes of a chunk that must be in
    // before the next hop may start on it (the whole chunk, or with LL
    // and LL128 over NVLink one piece of it: `super::streams`).
    let mut units: Vec<Vec<f64>> = Vec::new();
    // NVLS-Tree: each stage's demand alone (the switch's reduction, the
    // tree's up edges, its down edges, the multicast) and each edge's
    // latency without its chunk's transfer.
    let mut phases: Vec<Vec<Vec<(u32, f64)>>> = Vec::new();
    let mut fixed: Vec<Vec<f64>> = Vec::new();
    // Chains (Broadcast, Reduce): each edge's own demand, for the rate its
    // first chunk gets beside the other channels' at the same hop.
    let mut edge_dem: Vec<Vec<Vec<(u32, f64)>>> = Vec::new();
    for (ch, p) in &pats {
        let chain = matches!(p.shape, Shape::Chain { .. });
        let mut eds: Vec<Vec<(u32, f64)>> = Vec::new();
        let mut ph: Vec<HashMap<u32, f64>> = vec![HashMap::new(); 2];
        let mut fx = Vec::with_capacity(p.edges.len());
        let stages = if p.nvls_head.is_some() {
            stages_of(p)
        } else {
            Vec::new()
        };
        // Adds to stage `k`'s demand, on NVLS-Tree parts only.
        let add = |ph: &mut Vec<HashMap<u32, f64>>, k: usize, res: u32, w: f64| {
            if p.nvls_head.is_some() {
                if ph.len() <= k {
                    ph.resize(k + 1, HashMap::new());
                }
                *ph[k].entry(res).or_default() += w;
            }
        };
        let c_bytes = (p.chunk * eb).max(1);
        let proto_wire = call.proto.wire_bytes(c_bytes);
        let pf = proto_wire as f64 / c_bytes as f64;
        let edge_bytes = p.bytes * eb;
        let chunks = edge_bytes.div_ceil(c_bytes);
        let n_pieces = if call.proto == Protocol::Simple {
            1.0
        } else {
            streams::pieces(proto_wire) as f64
        };
        let mut d: HashMap<u32, f64> = HashMap::new();
        let mut lat = Vec::with_capacity(p.edges.len());
        let mut unit = Vec::with_capacity(p.edges.len());
        for (ei, &(a, b)) in p.edges.iter().enumerate() {
            if chain {
                eds.push(Vec::new());
            }
            // Adds to this edge's own demand, on chains only.
            let mut own = |res: u32, w: f64| {
                if chain {
                    eds[ei].push((res, w));
                }
            };
            let stage = stages.get(ei).copied().unwrap_or(2);
            let (sa, sb) = (comm.server(a), comm.server(b));
            let (ga, gb) = (comm.gpu(a), comm.gpu(b));
            let nvl = |s: u32, g: u32, inbound: u32| NVL | ((s * comm.gpus + g) * 2 + inbound);
            if sa == sb {
                out.shm_msgs += chunks;
            } else {
                out.net_msgs += chunks;
            }
            let (ha, hb, pxn) = comm.net_path(a, b);
            if sa == sb || pxn {
                // NVLink: the whole hop, or PXN's first leg.
                *d.entry(nvl(sa, ga, 0)).or_default() += pf;
                *d.entry(nvl(sa, gb, 1)).or_default() += pf;
                own(nvl(sa, ga, 0), pf);
                own(nvl(sa, gb, 1), pf);
                cap.insert(nvl(sa, ga, 0), links.nvlink_bpps);
                cap.insert(nvl(sa, gb, 1), links.nvlink_bpps);
                out.shm_bytes += edge_bytes;
            }
            // A chunk alone on the hop: at its slowest resource's rate.
            let nvl_solo = proto_wire as f64 / links.nvlink_bpps;
            if sa == sb {
                lat.push((links.nvlink_lat + costs.nvlink_hop).0 as f64 + nvl_solo / n_pieces);
                fx.push((links.nvlink_lat + costs.nvlink_hop).0 as f64);
                unit.push(c_bytes as f64 / n_pieces);
                continue;
            }
            unit.push(c_bytes as f64);
            let mut l = 0.0;
            let mut f = 0.0;
            if pxn {
                // PXN: the chunk is in the proxy GPU before it is posted.
                l += links.nvlink_lat.0 as f64 + nvl_solo;
                f += links.nvlink_lat.0 as f64;
                add(&mut ph, stage, nvl(sa, ga, 0), pf);
                add(&mut ph, stage, nvl(sa, gb, 1), pf);
            }
            let qp = connect(net, ha, hb, *ch);
            let r = net.flow_route(qp, proto_wire)?;
            let wf = r.wire_bytes as f64 / c_bytes as f64;
            let mut slowest = f64::INFINITY;
            for (&pi, &bps) in r.ports.iter().zip(&r.cap_bps) {
                *d.entry(pi).or_default() += wf;
                own(pi, wf);
                add(&mut ph, stage, pi, wf);
                cap.insert(pi, bps / 8.0 / 1e12);
                slowest = slowest.min(bps / 8.0 / 1e12);
            }
            l += r.wire_bytes as f64 / slowest;
            if let Some(s) = links.staging_bpps {
                // The copies through host memory at both ends bound the
                // rate, as the packet runtime's one copy at a time does.
                for (host, inbound) in [(ha, 0), (hb, 1)] {
                    *d.entry(PCIE | (host * 2 + inbound)).or_default() += pf;
                    own(PCIE | (host * 2 + inbound), pf);
                    add(&mut ph, stage, PCIE | (host * 2 + inbound), pf);
                    cap.insert(PCIE | (host * 2 + inbound), s);
                }
            }
            let staging = links
                .staging_bpps
                .map_or(0.0, |s| (proto_wire as f64 / s).ceil());
            let hop = 2.0 * links.pcie_lat.0 as f64 + (r.tail + costs.net_hop).0 as f64;
            l += 2.0 * staging + hop;
            f += hop;
            lat.push(l);
            fx.push(f);
            out.net_bytes += edge_bytes;
            out.ports
                .push((r.ports, r.wire_bytes * chunks, r.packets as u64 * chunks));
        }
        if let Some(h) = p.nvls_head {
            // Every server's switch: the part out of each GPU and into
            // the head (reduction), out of the head and into each GPU
            // (multicast).
            let w = links.nvls_weight * pf;
            let g = comm.gpus;
            for sv in 0..comm.servers {
                for k in 0..g {
                    // The head's ports carry its part twice.
                    let load = if k == h { 2.0 * w } else { w };
                    for inbound in 0..2 {
                        let port = NVL | ((sv * g + k) * 2 + inbound);
                        *d.entry(port).or_default() += load;
                        cap.insert(port, links.nvlink_bpps);
                        // The reduction: every GPU's part out, the sum into
                        // the head; the multicast: the total out of the
                        // head, into every GPU.
                        let (own, head) = if inbound == 0 { (0, 1) } else { (1, 0) };
                        add(&mut ph, own, port, w);
                        if k == h {
                            add(&mut ph, head, port, w);
                        }
                    }
                }
                out.shm_bytes += 2 * (g as u64 - 1) * edge_bytes;
                out.shm_msgs += 2 * (g as u64 - 1) * chunks;
            }
        }
        let sorted = |m: HashMap<u32, f64>| {
            let mut v: Vec<(u32, f64)> = m.into_iter().collect();
            v.sort_unstable_by_key(|x| x.0);
            v
        };
        demand.push(sorted(d));
        if phases.len() < ph.len() {
            phases.resize(ph.len(), vec![Vec::new(); demand.len() - 1]);
        }
        for (k, all) in phases.iter_mut().enumerate() {
            all.push(
                ph.get_mut(k)
                    .map_or_else(Vec::new, |m| sorted(std::mem::take(m))),
            );
        }
        // A hop that needs the chunk whole after one that passed it on
        // piece by piece waits for the rest of it.
        if n_pieces > 1.0 {
            // A hop into a rank that sends on over the network (or PXN)
            // must bring the chunk in whole before that hop starts.
            let rest = proto_wire as f64 / links.nvlink_bpps * (1.0 - 1.0 / n_pieces);
            for e in before_whole(&p.shape, &unit, c_bytes as f64) {
                unit[e] = c_bytes as f64;
                lat[e] += rest;
            }
        }
        lats.push(lat);
        fixed.push(fx);
        units.push(unit);
        edge_dem.push(eds);
    }
    let rates = fill(&demand, &cap);
    // Chains: how fast each hop streams once every channel streams through
    // it (all channels' j-th edges together, max-min), and when each
    // channel's first chunk reaches each rank, the channels' first chunks
    // sharing the links they cross at the same time.
    let hops = edge_dem.iter().map(Vec::len).max().unwrap_or(0);
    let mut hop_rate: Vec<Vec<f64>> = edge_dem.iter().map(|e| vec![0.0; e.len()]).collect();
    for j in 0..hops {
        let who: Vec<usize> = (0..edge_dem.len())
            .filter(|&i| edge_dem[i].len() > j)
            .collect();
        let dem: Vec<Vec<(u32, f64)>> = who.iter().map(|&i| edge_dem[i][j].clone()).collect();
        for (&i, r) in who.iter().zip(fill(&dem, &caps_of(&dem, &cap))) {
            hop_rate[i][j] = r;
        }
    }
    // Behind its first chunk, each channel streams the rest of its data
    // at its rate through the hops that chunk has passed.
    let streams_behind: Vec<StreamBehind> = pats
        .iter()
        .zip(&rates)
        .map(|((_, p), &r)| StreamBehind {
            rate_bpps: r,
            bytes: (p.bytes * eb) as f64,
        })
        .collect();
    let first_at =
        first_chunks_through_chains(&edge_dem, &lats, &fixed, &units, &streams_behind, &cap);
    let stage_rates: Vec<Vec<f64>> = if nvls {
        phases.iter().map(|d| fill(d, &cap)).collect()
    } else {
        Vec::new()
    };
    // Which resources the rates fill: an NVLS-Tree part whose network
    // links (or, without GPUDirect, host copies) are full is bound by the
    // network path, otherwise by NVLink.
    let mut used: HashMap<u32, f64> = HashMap::new();
    if nvls {
        for (d, r) in demand.iter().zip(&rates) {
            for &(res, w) in d {
                *used.entry(res).or_default() += w * r;
            }
        }
    }
    let full = |res: u32| used.get(&res).copied().unwrap_or(0.0) >= cap[&res] * (1.0 - 1e-6);
    let nvlink = |res: u32| (NVL..PCIE).contains(&res);
    let net_bound: Vec<bool> = demand
        .iter()
        .map(|d| nvls && d.iter().any(|&(res, _)| !nvlink(res) && full(res)))
        .collect();
    let mut ends = vec![0.0f64; n as usize];
    let mut chains: Vec<ChainTimes> = Vec::new();
    for (i, (((_, p), rate), lat)) in pats.iter().zip(&rates).zip(&lats).enumerate() {
        if *rate <= 0.0 {
            return None;
        }
        let bytes = (p.bytes * eb) as f64;
        let c = (p.chunk * eb) as f64;
        if let Shape::Ring { hops } = p.shape {
            let mean = lat.iter().sum::<f64>() / lat.len() as f64;
            let t = (bytes / rate).max(p.loops as f64 * hops as f64 * mean);
            ends.iter_mut().for_each(|e| *e = e.max(t));
            continue;
        }
        // A pipe: the first chunk reaches each rank after the hops on
        // its way (stored and forwarded at each), the rest streams behind
        // it at the channel's rate.
        let stream = (bytes - c).max(0.0) / rate;
        if let Shape::Chain { order } = &p.shape {
            let hop = ChainHops {
                first_at: &first_at[i],
                solo: &lat
                    .iter()
                    .zip(&fixed[i])
                    .map(|(l, f)| l - f)
                    .collect::<Vec<_>>(),
                rate: &hop_rate[i],
                unit: &units[i],
            };
            let (at, first) = chain_ends(comm, order, &hop, bytes, c, *rate);
            for (&r, &e) in order.iter().zip(&at) {
                ends[r as usize] = ends[r as usize].max(e);
            }
            chains.push(ChainTimes {
                pos: {
                    let mut pos = vec![u32::MAX; n as usize];
                    for (p, &r) in order.iter().enumerate() {
                        pos[r as usize] = p as u32;
                    }
                    pos
                },
                end: at
                    .iter()
                    .map(|&e| costs.launch + Time(e.ceil() as u64))
                    .collect(),
                first: first.iter().map(|&f| Time(f.ceil() as u64)).collect(),
                local: order
                    .windows(2)
                    .map(|w| comm.server(w[0]) == comm.server(w[1]))
                    .collect(),
                chunks: (bytes / c).ceil().max(1.0) as u64,
                order: order.clone(),
            });
            continue;
        }
        let firsts = first_chunk(p, lat, c / rate);
        if p.nvls_head.is_some() {
            // NVLS-Tree. Where NVLink bounds the part, the tree's hops have
            // room to spare, so its first chunk crosses them as if alone;
            // the reduction and the multicast, on the full NVLink ports,
            // take a chunk at the part's rate each. Every GPU gets the
            // multicast.
            let mut first = firsts.iter().copied().fold(0.0, f64::max)
                + 2.0 * (links.nvlink_lat.0 as f64 + c / rate);
            if net_bound[i] {
                // The network bounds the part: a pipeline of stages, the
                // switch's reduction, the tree up level by level, back
                // down level by level, the multicast. The first chunk
                // passes each stage at the rate that stage gets while it
                // runs alone (every part's reductions start together; the
                // deepest edges fill the network before the next level has
                // a sum to send, and so on; the totals come down and the
                // multicasts drain it); the other chunks follow at the rate
                // of all stages together. Plus the latencies along the way.
                let fill: f64 = phases
                    .iter()
                    .zip(&stage_rates)
                    .filter(|(d, _)| !d[i].is_empty())
                    .map(|(_, r)| c / r[i].max(EPS))
                    .sum();
                let lat_only = first_chunk(p, &fixed[i], 0.0)
                    .iter()
                    .copied()
                    .fold(0.0, f64::max);
                // That counts every stage in full, as if no two overlapped;
                // on trees of several levels the parts, which do not
                // progress in step, overlap them, and the NVLink-bound
                // estimate is the smaller there (docs/nccl.md, measured on
                // 2-8 servers).
                first = first.min(lat_only + 2.0 * links.nvlink_lat.0 as f64 + fill);
            }
            let t = first + stream;
            ends.iter_mut().for_each(|e| *e = e.max(t));
            continue;
        }
        // With LL and LL128 over NVLink the first piece is in at `at`,
        // the rest of the chunk streams behind it.
        for (r, (end, at)) in ends.iter_mut().zip(firsts).enumerate() {
            let behind = (c - unit_in(&p.shape, &units[i], r).unwrap_or(c)) / rate;
            *end = end.max(at + stream + behind);
        }
    }
    out.rank_end = ends
        .iter()
        .map(|&e| costs.launch + Time(e.ceil() as u64))
        .collect();
    out.time = out.rank_end.iter().copied().max().unwrap_or(costs.launch);
    if chains.len() == pats.len() && chains.iter().all(|c| c.order.len() == n as usize) {
        out.chains = chains;
    }
    Some(out)
}

/// A chain's hops, by position: when its first chunk is complete at
/// each position (`first_at`, the root's at 0), each hop's transfer of a
/// chunk alone (`solo`) and its rate once every channel streams through
/// it (`rate`, data bytes per ps).
struct ChainHops<'a> {
    first_at: &'a [f64],
    solo: &'a [f64],
    rate: &'a [f64],
    /// Data bytes of a chunk each hop needs in before the next starts
    /// (a piece with LL and LL128 over NVLink, else the chunk).
    unit: &'a [f64],
}

/// When each position of a chain (`order`, from the rank the data starts
/// at) is done: once it has taken the last chunk and its own last chunk
/// has gone on.
///
/// Chunk k reaches rank p, unhindered, `k` chunk times after its first
/// chunk (the last, smaller one in proportion), a chunk time being that of
/// the slowest hop before p (ranks past the chain's slowest hop: the
/// channel's `rate`). But a rank takes chunk k only once its chunk k - 1
/// is written on, and it writes chunk j, as the packet runtime's buffer
/// slots allow ([`NCCL_STEPS`] = 8):
/// - over NVLink, into the next rank's slots, once that rank took chunk
///   j - 8;
/// - to the network, into its own slots, once the WRITE of chunk j - 8
///   completed: that chunk reached the next rank, which its proxy posted
///   only once the next rank took chunk j - 16.
///
/// So a rank that would run ahead (the root, the ranks before a slower
/// hop) waits for the ones after it. The root has its data at the start;
/// over NVLink a rank's last write takes the hop's transfer (of a piece,
/// with LL and LL128, whose chunks stream in behind their first piece).
/// Also returns when the first chunk is complete at each position.
fn chain_ends(
    comm: &Comm,
    order: &[Rank],
    hop: &ChainHops,
    bytes: f64,
    c: f64,
    rate: f64,
) -> (Vec<f64>, Vec<f64>) {
    let n = (bytes / c).ceil().max(1.0) as usize;
    let slots = NCCL_STEPS as usize;
    let m = order.len();
    // The slowest hop, by its streaming chunk time.
    let slowest = (0..m - 1)
        .max_by(|&a, &b| hop.rate[b].total_cmp(&hop.rate[a]))
        .unwrap_or(0);
    // The chunk time at each position: of the slowest hop before it.
    let mut tau = vec![0.0; m];
    let mut worst = 0.0f64;
    for (p, t) in tau.iter_mut().enumerate().skip(1) {
        worst = worst.max(c / hop.rate[p - 1].max(EPS));
        *t = if p > slowest {
            c / rate
        } else {
            worst.min(c / rate)
        };
    }
    // When the first chunk is complete at rank p: its first piece (or
    // all of it) came at `first_at`, the rest streams behind at the pace
    // of the hops that passed it on piece by piece since the last rank
    // that had it whole.
    let mut first = vec![0.0; m];
    let mut pace = f64::INFINITY;
    for (p, f) in first.iter_mut().enumerate().skip(1) {
        let u = hop.unit[p - 1];
        *f = hop.first_at[p];
        if u < c {
            pace = pace.min(hop.rate[p - 1]);
            *f += (c - u) / pace.max(EPS);
        } else {
            pace = f64::INFINITY;
        }
    }
    // When chunk k reaches rank p unhindered (the root has them all).
    let reach = |p: usize, k: usize| -> f64 {
        if p == 0 {
            return 0.0;
        }
        let done = if k + 1 == n {
            bytes - c
        } else {
            (k as f64) * c
        };
        first[p] + done / c * tau[p]
    };
    // From the tail back: when rank p + 1 takes each chunk.
    let mut next: Vec<f64> = Vec::new();
    let mut ends = vec![0.0; m];
    for p in (0..m).rev() {
        let r = order[p];
        let local = order
            .get(p + 1)
            .is_some_and(|&q| comm.server(r) == comm.server(q));
        // When rank p may write chunk j on (none before: no wait).
        let written = |j: usize| -> f64 {
            if p + 1 == m || j < slots {
                return f64::NEG_INFINITY;
            }
            if local {
                return next[j - slots];
            }
            let landed = reach(p + 1, j - slots);
            match j.checked_sub(2 * slots) {
                Some(i) => landed.max(next[i]),
                None => landed,
            }
        };
        let take: Vec<f64> = (0..n)
            .map(|k| match k {
                0 => reach(p, 0),
                _ => reach(p, k).max(written(k - 1)),
            })
            .collect();
        let mut end = take[n - 1].max(written(n - 1)).max(0.0);
        if local {
            // The kernel's write of its last chunk (piece) takes the hop's
            // transfer; the root writes its first chunks whole, back to back.
            let write = hop.solo[p].max(hop.unit[p] / hop.rate[p].max(EPS));
            if p == 0 {
                let ahead = n.min(slots) as f64;
                end = end.max(if hop.unit[p] >= c {
                    (ahead - 1.0) * write
                } else {
                    ahead * write * c / hop.unit[p] - write
                });
            }
            end += write;
        }
        ends[p] = end;
        next = take;
    }
    (ends, first)
}

/// When the first chunk of every chain is complete at each of its
/// positions: all channels start at their roots at once, each hop's
/// transfer shares the links with the other channels' transfers running
/// at the same time (max-min, on each edge's own demand `edge_dem` and
/// no faster than alone: `lat - fixed`, which counts PXN's two legs),
/// then the hop's latency (`fixed`) passes. Each hop moves its `unit` of
/// the chunk before the next starts: the whole chunk, or with LL and LL128
/// over NVLink its first piece (then the times are the first piece's).
/// Once a channel's first chunk (or piece) has crossed a hop, the rest
/// of the channel's data streams through that hop behind it at the
/// channel's rate (`behind`) until it is all through, so a first chunk
/// that reaches a port other channels already stream through gets the
/// max-min room those streams leave ([`stream_room`]; each resource on
/// its own, which keeps a fill step cheap with hundreds of streams).
/// Patterns that are not chains (no `edge_dem`) get an empty list.
fn first_chunks_through_chains(
    edge_dem: &[Vec<Vec<(u32, f64)>>],
    lat: &[Vec<f64>],
    fixed: &[Vec<f64>],
    unit: &[Vec<f64>],
    behind: &[StreamBehind],
    cap: &HashMap<u32, f64>,
) -> Vec<Vec<f64>> {
    /// A transfer's own cap (its solo time) is a resource of its own.
    const SOLO: u32 = u32::MAX - (1 << 20);
    // Per resource: the streams on it, (chain, hop, wire bytes per ps);
    // the streams by end time (non-negative times order as bits).
    let mut load: HashMap<u32, Vec<(usize, usize, f64)>> = HashMap::new();
    let mut ending: BinaryHeap<Reverse<(u64, usize, usize)>> = BinaryHeap::new();
    let mut at: Vec<Vec<f64>> = edge_dem
        .iter()
        .map(|e| {
            if e.is_empty() {
                Vec::new()
            } else {
                vec![0.0; e.len() + 1]
            }
        })
        .collect();
    // Per chain: the hop it is on, the data left of that hop's transfer,
    // or (None) the time its latency ends.
    let mut hop = vec![0usize; edge_dem.len()];
    let mut left: Vec<Option<f64>> = edge_dem
        .iter()
        .enumerate()
        .map(|(i, e)| (!e.is_empty()).then(|| unit[i][0]))
        .collect();
    let mut until = vec![f64::INFINITY; edge_dem.len()];
    let mut now = 0.0;
    loop {
        let moving: Vec<usize> = (0..edge_dem.len()).filter(|&i| left[i].is_some()).collect();
        let waiting = until.iter().copied().fold(f64::INFINITY, f64::min);
        if moving.is_empty() && waiting.is_infinite() {
            return at;
        }
        let stream_end = ending
            .peek()
            .map_or(f64::INFINITY, |Reverse((t, _, _))| f64::from_bits(*t));
        // Each transfer no faster than alone: a cap of its own.
        let mut solo_caps: Vec<(u32, f64)> = Vec::new();
        let dem: Vec<Vec<(u32, f64)>> = moving
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let j = hop[i];
                let solo = (lat[i][j] - fixed[i][j]).max(EPS);
                solo_caps.push((SOLO + k as u32, unit[i][j] / solo));
                let mut d = edge_dem[i][j].clone();
                d.push((SOLO + k as u32, 1.0));
                d
            })
            .collect();
        let mut caps = caps_of(&dem, cap);
        stream_room(&mut caps, &dem, &load);
        caps.extend(solo_caps);
        let rates = fill(&dem, &caps);
        if rates.iter().any(|&r| r <= 0.0) {
            // A link with no capacity: the caller gives up on the call.
            return at;
        }
        let done = moving
            .iter()
            .zip(&rates)
            .map(|(&i, &r)| left[i].unwrap_or(0.0) / r.max(EPS))
            .fold(f64::INFINITY, f64::min);
        let step = done.min(waiting - now).min(stream_end - now).max(0.0);
        now += step;
        for (&i, &r) in moving.iter().zip(&rates) {
            let j = hop[i];
            let l = left[i].unwrap_or(0.0) - r * step;
            if l <= unit[i][j] * 1e-9 {
                left[i] = None;
                until[i] = now + fixed[i][j];
                // The rest of the channel's data follows through this hop.
                let StreamBehind { rate_bpps, bytes } = behind[i];
                let rest = bytes - unit[i][j];
                if rate_bpps.is_finite() && rate_bpps > 0.0 && rest > 0.0 {
                    for &(res, w) in &edge_dem[i][j] {
                        load.entry(res).or_default().push((i, j, w * rate_bpps));
                    }
                    ending.push(Reverse(((now + rest / rate_bpps).to_bits(), i, j)));
                }
            } else {
                left[i] = Some(l);
            }
        }
        while let Some(&Reverse((t, i, j))) = ending.peek() {
            if f64::from_bits(t) > now {
                break;
            }
            ending.pop();
            for &(res, _) in &edge_dem[i][j] {
                if let Some(on) = load.get_mut(&res) {
                    on.retain(|&(a, b, _)| (a, b) != (i, j));
                    if on.is_empty() {
                        load.remove(&res);
                    }
                }
            }
        }
        for i in 0..edge_dem.len() {
            if until[i] <= now {
                until[i] = f64::INFINITY;
                hop[i] += 1;
                at[i][hop[i]] = now;
                if hop[i] < edge_dem[i].len() {
                    left[i] = Some(unit[i][hop[i]]);
                }
            }
        }
    }
}

/// The data a channel has behind its first chunk, streamed once that
/// chunk has crossed a hop.
#[derive(Clone, Copy, Debug)]
struct StreamBehind {
    /// The channel's rate (data bytes per ps).
    rate_bpps: f64,
    /// The channel's data bytes in all.
    bytes: f64,
}

/// Lower the capacities `caps` (bytes per ps) of the resources the
/// transfers `dem` use to what the streams on them leave (`load`: each
/// stream's wire bytes per ps), by max-min between the streams and the
/// `m` transfers on a resource, each transfer counted as one flow: the
/// level `x` with sum(min(stream, x)) + m x = cap, so the transfers get
/// `m x` (`cap` less the streams when they all fit under the level).
fn stream_room(
    caps: &mut HashMap<u32, f64>,
    dem: &[Vec<(u32, f64)>],
    load: &HashMap<u32, Vec<(usize, usize, f64)>>,
) {
    if load.is_empty() {
        return;
    }
    let mut users: HashMap<u32, u32> = HashMap::new();
    for &(res, _) in dem.iter().flatten() {
        *users.entry(res).or_default() += 1;
    }
    for (res, c) in caps.iter_mut() {
        if let (Some(on), Some(&m)) = (load.get(res), users.get(res)) {
            let mut rates: Vec<f64> = on.iter().map(|&(_, _, r)| r).collect();
            rates.sort_by(f64::total_cmp);
            *c = m as f64 * level(*c, &rates, m);
        }
    }
}

/// The max-min level of `m` flows that want all they can beside flows
/// that want `sorted` (ascending) on a resource of capacity `cap`.
fn level(cap: f64, sorted: &[f64], m: u32) -> f64 {
    let mut left = cap;
    for (k, &r) in sorted.iter().enumerate() {
        let x = left / (sorted.len() - k + m as usize) as f64;
        if r > x {
            return x;
        }
        left -= r;
    }
    left / m as f64
}

/// The edges before edge `e` of a pattern: the hops whose data it
/// carries on (a ring's previous hop, a chain's, the children's edges up
/// into a rank, the edge down into its parent or, below the root, the
/// root's children's edges up).
fn before(shape: &Shape, edges: usize, e: usize) -> Vec<usize> {
    match shape {
        Shape::Ring { .. } => vec![(e + edges - 1) % edges],
        Shape::Chain { .. } => e.checked_sub(1).into_iter().collect(),
        Shape::Tree { parent, up, down } => {
            let ups_into = |q: usize| -> Vec<usize> {
                (0..parent.len())
                    .filter(|&c| parent[c] == Some(q as Rank))
                    .map(|c| up[c])
                    .collect()
            };
            if let Some(r) = up.iter().position(|&x| x == e) {
                return ups_into(r);
            }
            let Some(r) = down.iter().position(|&x| x == e) else {
                return Vec::new();
            };
            let q = parent[r].expect("an edge down has a parent") as usize;
            match parent[q] {
                Some(_) => vec![down[q]],
                None => ups_into(q),
            }
        }
    }
}

/// The edges that pass chunks on piece by piece (`unit` < `c`) into a
/// rank whose next hop needs the chunk whole.
fn before_whole(shape: &Shape, unit: &[f64], c: f64) -> Vec<usize> {
    let mut out: Vec<usize> = (0..unit.len())
        .filter(|&e| unit[e] >= c)
        .flat_map(|e| before(shape, unit.len(), e))
        .filter(|&b| unit[b] < c)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The unit of the edge a tree's rank `r` gets its result by (down from
/// its parent; the root: up from a child), if any.
fn unit_in(shape: &Shape, unit: &[f64], r: usize) -> Option<f64> {
    let Shape::Tree { parent, up, down } = shape else {
        return None;
    };
    match parent[r] {
        Some(_) => unit.get(down[r]).copied(),
        None => (0..parent.len())
            .filter(|&c| parent[c] == Some(r as Rank))
            .map(|c| unit[up[c]])
            .reduce(f64::max),
    }
}

/// The pipeline stage of each edge of a tree pattern, after the NVLS
/// reduction (0) and multicast (1): 2 + 2 (level - 1) for the edge up from
/// a rank at `level` (1 for the root's children), 3 + 2 (level - 1) for
/// the edge back down to it. Edges of other shapes are stage 2.
fn stages_of(p: &Pattern) -> Vec<usize> {
    let mut stage = vec![2; p.edges.len()];
    let Shape::Tree { parent, up, down } = &p.shape else {
        return stage;
    };
    for r in 0..parent.len() {
        if parent[r].is_none() {
            continue;
        }
        let level = tree_level(parent, r);
        stage[up[r]] = 2 + 2 * (level - 1);
        stage[down[r]] = 3 + 2 * (level - 1);
    }
    stage
}

/// Hops from rank `r` up to the root of the tree given by `parent`.
fn tree_level(parent: &[Option<Rank>], mut r: usize) -> usize {
    let mut level = 0;
    while let Some(q) = parent[r] {
        level += 1;
        r = q as usize;
    }
    level
}

/// When the first chunk of a pipe is complete at each rank: the sum of
/// the hop times on its way (`out`: how long the source takes to send it).
fn first_chunk(p: &Pattern, lat: &[f64], out: f64) -> Vec<f64> {
    match &p.shape {
        Shape::Ring { .. } => Vec::new(),
        Shape::Chain { order } => {
            let mut t = vec![0.0; order.len()];
            let mut sum = 0.0;
            t[order[0] as usize] = out;
            for (j, w) in order.windows(2).enumerate() {
                sum += lat[j];
                t[w[1] as usize] = sum;
            }
            t
        }
        Shape::Tree { parent, up, down } => {
            let n = parent.len();
            let depth = |r: usize| tree_level(parent, r);
            let mut by_depth: Vec<usize> = (0..n).collect();
            by_depth.sort_by_key(|&r| std::cmp::Reverse(depth(r)));
            // Up: a rank has its partial sum once every child's is in.
            let mut up_at = vec![0.0f64; n];
            for &r in &by_depth {
                if let Some(q) = parent[r] {
                    let t = up_at[r] + lat[up[r]];
                    up_at[q as usize] = up_at[q as usize].max(t);
                }
            }
            // Down: from the root, which has the sum when its last child's
            // partial is in.
            let mut t = vec![0.0f64; n];
            for &r in by_depth.iter().rev() {
                t[r] = match parent[r] {
                    None => up_at[r],
                    Some(q) => t[q as usize] + lat[down[r]],
                };
            }
            t
        }
    }
}

/// The capacities of the resources `demand` uses, out of `cap` (which a
/// large fabric fills with many more); resources `cap` lacks are left out.
fn caps_of(demand: &[Vec<(u32, f64)>], cap: &HashMap<u32, f64>) -> HashMap<u32, f64> {
    demand
        .iter()
        .flatten()
        .filter_map(|&(res, _)| cap.get(&res).map(|&c| (res, c)))
        .collect()
}

/// Weighted max-min rates (data bytes per ps) of coflows with `demand`
/// (resource, wire bytes per data byte) over resources of capacity `cap`
/// (bytes per ps): raise every unfrozen coflow's rate together; when a
/// resource fills, freeze the coflows on it.
fn fill(demand: &[Vec<(u32, f64)>], cap: &HashMap<u32, f64>) -> Vec<f64> {
    let mut rate = vec![0.0; demand.len()];
    let mut frozen = vec![false; demand.len()];
    let mut left: HashMap<u32, f64> = cap.clone();
    loop {
        let mut load: HashMap<u32, f64> = HashMap::new();
        for (c, d) in demand.iter().enumerate() {
            if !frozen[c] {
                for &(res, w) in d {
                    *load.entry(res).or_default() += w;
                }
            }
        }
        if load.is_empty() {
            return rate;
        }
        let step = load
            .iter()
            .map(|(res, &w)| left[res].max(0.0) / w)
            .fold(f64::INFINITY, f64::min);
        for (c, r) in rate.iter_mut().enumerate() {
            if !frozen[c] {
                *r += step;
            }
        }
        for (res, w) in &load {
            *left.get_mut(res).expect("a resource with capacity") -= step * w;
        }
        for (c, d) in demand.iter().enumerate() {
            if !frozen[c] && d.iter().any(|(res, _)| left[res] <= EPS * cap[res]) {
                frozen[c] = true;
            }
        }
    }
}

/// Channel `ch`'s pattern for `call` (None when it carries no data).
fn pattern(comm: &Comm, call: &CollCall, ch: u32) -> Option<Pattern> {
    let n = comm.n();
    let chans = comm.channels.max(1);
    let eb = call.elem_bytes.max(1) as u64;
    let tree = call.is_tree();
    let step = if tree && call.proto == Protocol::Simple {
        super::coll::tree_chunk_bytes(call.count * eb, chans, comm.tree_depth())
    } else {
        call.proto.step_bytes()
    };
    let unit = (step / eb).max(1);
    let ring = comm.ring(ch);
    let ring_edges = || -> Vec<(Rank, Rank)> {
        (0..n as usize)
            .map(|i| (ring[i], ring[(i + 1) % n as usize]))
            .collect()
    };
    let (per, total) = match call.coll {
        NcclColl::AllReduce if !tree => (n as u64, call.count),
        NcclColl::AllReduce | NcclColl::Broadcast | NcclColl::Reduce => (1, call.count),
        NcclColl::AllGather | NcclColl::ReduceScatter => (1, call.count),
        NcclColl::AllToAll | NcclColl::SendRecv => return None,
    };
    let mine: Vec<u64> = pieces(total, chans, per, unit)
        .into_iter()
        .filter(|p| p.1 == ch)
        .map(|p| p.3)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let loops = mine.len() as u64;
    let largest = mine.iter().copied().max().unwrap_or(0);
    match call.coll {
        NcclColl::AllReduce if !tree => {
            // Each loop: every chunk but the smallest, twice.
            let bytes = mine
                .iter()
                .map(|&len| 2 * (len - (0..n).map(|k| chunk(0, len, n, k).1).min().unwrap_or(0)))
                .sum();
            Some(Pattern {
                edges: ring_edges(),
                shape: Shape::Ring { hops: 2 * (n - 1) },
                bytes,
                chunk: largest.div_ceil(n as u64),
                loops,
                nvls_head: None,
            })
        }
        NcclColl::AllGather | NcclColl::ReduceScatter => Some(Pattern {
            edges: ring_edges(),
            shape: Shape::Ring { hops: n - 1 },
            bytes: (n as u64 - 1) * mine.iter().sum::<u64>(),
            chunk: largest,
            loops,
            nvls_head: None,
        }),
        NcclColl::Broadcast | NcclColl::Reduce => {
            // From the root along the ring, or towards it for Reduce.
            let rp = ring.iter().position(|&r| r == call.root).unwrap_or(0);
            let mut order: Vec<Rank> = (0..n as usize)
                .map(|i| ring[(rp + i) % n as usize])
                .collect();
            if call.coll == NcclColl::Reduce {
                order.reverse();
            }
            Some(Pattern {
                edges: order.windows(2).map(|w| (w[0], w[1])).collect(),
                shape: Shape::Chain { order },
                bytes: mine.iter().sum(),
                chunk: largest,
                loops,
                nvls_head: None,
            })
        }
        _ => {
            // Tree: up and down every tree edge.
            let nodes = comm.tree(ch);
            let mut edges = Vec::new();
            let mut up = vec![usize::MAX; n as usize];
            let mut down = vec![usize::MAX; n as usize];
            for (r, node) in nodes.iter().enumerate() {
                if let Some(p) = node.parent {
                    up[r] = edges.len();
                    edges.push((r as Rank, p));
                    down[r] = edges.len();
                    edges.push((p, r as Rank));
                }
            }
            Some(Pattern {
                edges,
                shape: Shape::Tree {
                    parent: nodes.iter().map(|x| x.parent).collect(),
                    up,
                    down,
                },
                bytes: mine.iter().sum(),
                chunk: largest,
                loops,
                nvls_head: None,
            })
        }
    }
}

/// NVLS-Tree's coflows of channel `ch`: one per part k, headed by local
/// GPU (ch + k) mod G of every server, its edges the tree between those
/// heads (channel `ch`'s tree between servers), up and down.
fn nvls_tree_patterns(comm: &Comm, call: &CollCall, ch: u32) -> Vec<Pattern> {
    let (g, servers, n) = (comm.gpus, comm.servers, comm.n());
    let eb = call.elem_bytes.max(1) as u64;
    let unit = (super::nvls::NVLS_CHUNK_BYTES / eb).max(1);
    let mine: Vec<(u64, u64)> = pieces(call.count, comm.channels.max(1), g as u64, unit)
        .into_iter()
        .filter(|p| p.1 == ch)
        .map(|p| (p.2, p.3))
        .collect();
    let t = comm.tree_of(ch);
    let mut out = Vec::new();
    for k in 0..g {
        let parts: Vec<u64> = mine
            .iter()
            .map(|&(st, len)| chunk(st, len, g, k).1)
            .collect();
        let bytes: u64 = parts.iter().sum();
        if bytes == 0 {
            continue;
        }
        let h = (ch + k) % g;
        let mut edges = Vec::new();
        let mut parent = vec![None; n as usize];
        let (mut up, mut down) = (vec![usize::MAX; n as usize], vec![usize::MAX; n as usize]);
        for sv in 0..servers {
            if let Some(p) = super::comm::dtree_parent(servers, t, sv) {
                let (r, q) = (sv * g + h, p * g + h);
                parent[r as usize] = Some(q);
                up[r as usize] = edges.len();
                edges.push((r, q));
                down[r as usize] = edges.len();
                edges.push((q, r));
            }
        }
        out.push(Pattern {
            edges,
            shape: Shape::Tree { parent, up, down },
            bytes,
            chunk: parts.iter().copied().max().unwrap_or(0),
            loops: parts.len() as u64,
            nvls_head: Some(h),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progressive_filling_weighs_each_coflows_use_of_a_link() {
        // Two coflows on link 0 (capacity 3): A crosses it twice, B once,
        // so A gets 1 and B 1; B alone on link 1 (capacity 10) is then
        // still held by link 0.
        let cap: HashMap<u32, f64> = [(0, 3.0), (1, 10.0)].into();
        let r = fill(&[vec![(0, 2.0)], vec![(0, 1.0), (1, 1.0)]], &cap);
        assert!(
            (r[0] - 1.0).abs() < 1e-12 && (r[1] - 1.0).abs() < 1e-12,
            "{r:?}"
        );
        // A limited elsewhere (link 2, capacity 0.5) leaves link 0 to B:
        // B = 3 - 2 x 0.5 = 2.
        let cap: HashMap<u32, f64> = [(0, 3.0), (1, 10.0), (2, 0.5)].into();
        let r = fill(&[vec![(0, 2.0), (2, 1.0)], vec![(0, 1.0), (1, 1.0)]], &cap);
        assert!(
            (r[0] - 0.5).abs() < 1e-12 && (r[1] - 2.0).abs() < 1e-12,
            "{r:?}"
        );
        // A link with no capacity gives its coflow no rate.
        let cap: HashMap<u32, f64> = [(0, 0.0), (1, 1.0)].into();
        let r = fill(&[vec![(0, 1.0)], vec![(1, 1.0)]], &cap);
        assert_eq!(r, vec![0.0, 1.0]);
    }

    #[test]
    fn streams_leave_the_first_chunks_what_they_do_not_take() {
        // Link 0 (capacity 100) carries one stream of 30 bytes per ps: a
        // transfer beside it gets the 70 left. Link 1 carries two streams
        // of 45 each, more than their share: the two transfers on it get
        // their max-min share beside them, 2 / 4 of 100 = 50 (not the 10
        // left). Link 3 carries streams of 10 and 80 and one transfer:
        // the 10 fits under the level, so 10 + 2 x = 100, x = 45 for the
        // transfer (and the 80 stream). Link 2 has no stream.
        let mut caps: HashMap<u32, f64> = [(0, 100.0), (1, 100.0), (2, 7.0), (3, 100.0)].into();
        let load: HashMap<u32, Vec<(usize, usize, f64)>> = [
            (0, vec![(0, 0, 30.0)]),
            (1, vec![(0, 1, 45.0), (1, 1, 45.0)]),
            (3, vec![(2, 0, 80.0), (3, 0, 10.0)]),
        ]
        .into();
        let dem = vec![
            vec![(0, 1.0)],
            vec![(1, 1.0), (2, 1.0)],
            vec![(1, 1.0)],
            vec![(3, 1.0)],
        ];
        stream_room(&mut caps, &dem, &load);
        assert_eq!(caps[&0], 70.0);
        assert_eq!(caps[&1], 50.0);
        assert_eq!(caps[&2], 7.0);
        assert_eq!(caps[&3], 45.0);
    }

    #[test]
    fn a_first_chunk_shares_a_link_with_the_stream_of_a_channel_ahead() {
        // Chain A crosses link 1 (1 byte per ps) in one hop with a 10-byte
        // unit: done at 10 ps, then the rest of its 1,000 bytes streams
        // through link 1 at its rate until it is through. Chain B first
        // crosses link 2 with 20 bytes (done at 20 ps), then link 1 with
        // 10 bytes. No hop latency; each transfer alone runs at the
        // link's speed.
        let cap: HashMap<u32, f64> = [(1, 1.0), (2, 1.0)].into();
        let edge_dem = vec![vec![vec![(1, 1.0)]], vec![vec![(2, 1.0)], vec![(1, 1.0)]]];
        let unit = vec![vec![10.0], vec![20.0, 10.0]];
        let lat = unit.clone();
        let fixed = vec![vec![0.0], vec![0.0, 0.0]];
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        let run = |a: (f64, f64), b: (f64, f64)| {
            let behind = [a, b].map(|(rate_bpps, bytes)| StreamBehind { rate_bpps, bytes });
            first_chunks_through_chains(&edge_dem, &lat, &fixed, &unit, &behind, &cap)
        };
        // A streams at 0.25: B gets the 0.75 left, 10 / 0.75 ps.
        let at = run((0.25, 1000.0), (0.25, 1000.0));
        assert!(close(&at[0], &[0.0, 10.0]), "{at:?}");
        assert!(close(&at[1], &[0.0, 20.0, 20.0 + 10.0 / 0.75]), "{at:?}");
        // A streams at 0.75, more than half: B gets its max-min half.
        let at = run((0.75, 1000.0), (0.75, 1000.0));
        assert!(close(&at[1], &[0.0, 20.0, 40.0]), "{at:?}");
        // With no data behind the first chunks, the links are theirs.
        let at = run((0.75, 10.0), (0.75, 20.0));
        assert!(close(&at[1], &[0.0, 20.0, 30.0]), "{at:?}");
        // A stream that has ended leaves the link: A's 10 more bytes at
        // 0.75 are through by 10 + 10 / 0.75 ps; B, from 20 ps, moves at
        // 0.5 until then, and the rest of its 10 bytes at 1.
        let end = 10.0 + 10.0 / 0.75;
        let at = run((0.75, 20.0), (0.75, 1000.0));
        let b_in = end + (10.0 - 0.5 * (end - 20.0));
        assert!(close(&at[1], &[0.0, 20.0, b_in]), "{at:?}");
    }
}
