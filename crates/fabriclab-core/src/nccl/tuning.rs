//! NCCL's choice of algorithm and protocol: the cost model of NCCL 2.22.3
//! (`src/graph/tuning.cc`: `ncclTopoTuneModel`, `ncclTopoGetAlgoTime`;
//! the selection loop of `src/enqueue.cc`) for the Ring, Tree, NVLS and
//! NVLS-Tree algorithms with the LL, LL128 and Simple protocols.
//!
//! For each (algorithm, protocol) the model gives a latency and a
//! bandwidth; a call of `n` bytes is estimated to take
//! `latency + n / (1000 x bandwidth)` us, and NCCL runs the pair with the
//! least estimate (scanning Tree before Ring, LL before LL128 before
//! Simple; a tie keeps the first). The tables and factors are NCCL's, each
//! named after its variable in `tuning.cc` (`docs/nccl.md` has them with
//! their values):
//! - bus bandwidth = channels x the graph's bandwidth per channel, then
//!   LL x 0.5 (capped by `llMaxBws`), LL128 x 0.92 (x 0.7 with one GPU per
//!   node; capped per channel), Tree x 0.92 (capped per channel), Tree
//!   LL x 1/3.8, Tree LL128 x 7/9 on one node or 120/128 on several,
//!   x 0.85 for a tree whose network traffic all goes through one GPU;
//!   then to algorithm bandwidth: x nRanks / nsteps for Ring, x 0.5 for
//!   Tree;
//! - latency = `baseLat` + the hops' `hwLat` (NVLink inside a node, the
//!   network between nodes, never less than the network overhead on
//!   several nodes), Tree: 2 x (chain hops + log2(nodes) network hops);
//!   Broadcast and Reduce: a hop per step, since each channel's ring is
//!   on its own rail (not NCCL's `sameChannels`);
//! - per size: Tree's bandwidth x `treeCorrectionFactor`, and Ring/Simple
//!   AllReduce on several nodes with at least 64 bytes per channel and
//!   rank: latency x 1.4 (x 1.9 before Ampere).
//!
//! What the topology search (`search.cc`) would find is taken from the
//! fabric instead of searched: the channels are the communicator's, the
//! bandwidth per channel is the bottleneck a channel's ring shares (a GPU's
//! NVLink on one node; on several, the lesser of NVLink and the server's
//! NICs over its GPUs), the intra-node path is NVLink (NVSwitch), the
//! network adds no latency of its own (`latencyInter` 0, as NCCL's IB
//! plugin reports), the CPU is Intel's (network overhead 1 us), and trees
//! send all of a server's network traffic through one GPU
//! (`NCCL_TOPO_PATTERN_TREE`, as `coll.rs` builds them).
//!
//! NVLS and NVLS-Tree (Simple only): bandwidth = the NVLS graph's
//! channels x min(`bwIntra`, `bwInter`) (NVLS-Tree on more than 2 nodes:
//! `bwInter` / 2) x 5/6; latency = `hwLat[NVLINK]` 25 us (NVLS; `baseLat`
//! 0), + 2 x log2(nodes) x `hwLat[NET][NVLSTree]` 14 us (NVLS-Tree). NVLS
//! runs AllReduce, AllGather and ReduceScatter on one node (NCCL disables
//! it on several without CollNet); NVLS-Tree AllReduce on several nodes.
//! Their graph is taken from the fabric as well: one channel per GPU of a
//! server (each GPU heads one), whose NVLink carries G + 1 channels' data
//! (the head's part twice), so `bwIntra` = NVLink / (G + 1); `bwInter` =
//! the server's NICs over its GPUs. Without NVLink SHARP (`[gpu] nvls`
//! off, or `NCCL_NVLS_ENABLE=0`) the NVLS graph is empty (bandwidth 0).
//!
//! Algorithms are scanned in NCCL's order (Tree, Ring, NVLS, NVLS-Tree;
//! a tie keeps the first). A forced `NCCL_ALGO` that the node count
//! disables (NVLS on several nodes, NVLS-Tree on one) leaves no algorithm
//! enabled, which NCCL answers by enabling Ring and Tree.
//!
//! Left out: CollNet and PAT (not modelled), tuner plugins, the number of
//! operations batched in one launch (one here).

use super::coll::NcclColl;
use super::params::{Algorithm, Protocol};

/// `baseLat` [Tree, Ring][LL, LL128, Simple], us.
pub const BASE_LAT: [[f64; 3]; 2] = [[6.8, 14.0, 0.0], [6.6, 14.0, 8.4]];
/// `hwLat[NVLINK]` \[Tree, Ring\]\[protocol\], us.
pub const HW_LAT_NVLINK: [[f64; 3]; 2] = [[0.6, 1.25, 28.0], [0.6, 1.9, 3.4]];
/// `hwLat[NET]` \[Tree, Ring\]\[protocol\], us.
pub const HW_LAT_NET: [[f64; 3]; 2] = [[5.0, 8.5, 28.0], [2.7, 4.0, 14.0]];
/// `llMaxBws` [row][nodes 1, 2, 4+], GB/s: rows Volta, Ampere, Hopper on
/// one node; on several, row 0 (Intel CPUs) or 1 (AMD).
pub const LL_MAX_BWS: [[f64; 3]; 3] = [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0], [141.0, 45.0, 35.0]];
/// `perChMaxRingLL128Bws` \[Volta, Ampere, Hopper\]\[nodes\], GB/s.
pub const PER_CH_MAX_RING_LL128_BWS: [[f64; 3]; 3] =
    [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 36.7]];
/// `perChMaxTreeLL128Bws` \[Volta, Ampere, Hopper\]\[nodes\], GB/s.
pub const PER_CH_MAX_TREE_LL128_BWS: [[f64; 3]; 3] =
    [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 29.0]];
/// `perChMaxTreeBws` \[Volta, Ampere, Hopper\]\[nodes\], GB/s.
pub const PER_CH_MAX_TREE_BWS: [[f64; 3]; 3] =
    [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [38.7, 41.4, 36.0]];
/// `treeCorrectionFactor` [protocol][floor(log2(bytes / 64))].
pub const TREE_CORRECTION: [[f64; 23]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9,
    ],
];
/// `getNetOverhead` on an Intel CPU, us.
pub const NET_OVERHEAD_US: f64 = 1.0;
/// `hwLat[NVLINK][NVLS]` = `[NVLSTree]` (Simple), us.
pub const HW_LAT_NVLINK_NVLS: f64 = 25.0;
/// `hwLat[NET][NVLSTree]` (Simple), us.
pub const HW_LAT_NET_NVLS_TREE: f64 = 14.0;
/// NVLS's bus-to-algorithm bandwidth ratio.
pub const NVLS_RATIO: f64 = 5.0 / 6.0;

/// NCCL's NVLS graph: its channels and bandwidths per channel, GB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NvlsGraph {
    /// Channels (`nChannels`).
    pub channels: u32,
    /// `bwIntra`.
    pub bw_intra: f64,
    /// `bwInter`.
    pub bw_inter: f64,
}

/// What the model needs of a communicator and its fabric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    /// The collective.
    pub coll: NcclColl,
    /// Ranks (GPUs).
    pub ranks: u32,
    /// Nodes (servers).
    pub nodes: u32,
    /// Channels.
    pub channels: u32,
    /// The graph's bandwidth per channel, GB/s (`bwIntra` = `bwInter`).
    pub bw_per_channel: f64,
    /// The GPUs' compute capability (80 Ampere, 90 Hopper).
    pub compute_capability: u32,
    /// The NVLS graph (None: no NVLink SHARP).
    pub nvls: Option<NvlsGraph>,
}

/// NCCL's scan order of the algorithms modelled.
pub const SCAN: [Algorithm; 4] = [
    Algorithm::Tree,
    Algorithm::Ring,
    Algorithm::Nvls,
    Algorithm::NvlsTree,
];

fn a_index(a: Algorithm) -> usize {
    match a {
        Algorithm::Tree => 0,
        Algorithm::Ring => 1,
        Algorithm::Nvls | Algorithm::NvlsTree => unreachable!("NVLS has its own tables"),
    }
}

fn p_index(p: Protocol) -> usize {
    match p {
        Protocol::Ll => 0,
        Protocol::Ll128 => 1,
        Protocol::Simple => 2,
    }
}

/// floor(log2(n)) (0 for n < 2).
fn log2i(n: u64) -> i32 {
    if n < 2 {
        0
    } else {
        63 - n.leading_zeros() as i32
    }
}

impl Setting {
    fn cc_index(&self) -> usize {
        match self.compute_capability {
            90.. => 2,
            80..=89 => 1,
            _ => 0,
        }
    }

    fn node_index(&self) -> usize {
        (self.nodes.clamp(1, 3) - 1) as usize
    }

    /// NCCL's number of steps of the collective's ring.
    fn nsteps(&self) -> f64 {
        let n = self.ranks as f64;
        match self.coll {
            NcclColl::AllReduce => 2.0 * (n - 1.0),
            NcclColl::AllGather | NcclColl::ReduceScatter => n - 1.0,
            _ => n,
        }
    }

    /// Whether NCCL models the pair at all (Tree: AllReduce only; NVLS:
    /// AllReduce, AllGather and ReduceScatter; NVLS-Tree: AllReduce; both
    /// Simple only; LL128: by default on NVLink servers of one Volta,
    /// Ampere or Hopper kind).
    pub fn enabled(&self, a: Algorithm, p: Protocol) -> bool {
        let coll_ok = match a {
            Algorithm::Ring => true,
            Algorithm::Tree | Algorithm::NvlsTree => self.coll == NcclColl::AllReduce,
            Algorithm::Nvls => matches!(
                self.coll,
                NcclColl::AllReduce | NcclColl::AllGather | NcclColl::ReduceScatter
            ),
        };
        let proto_ok = if a.is_nvls() {
            p == Protocol::Simple
        } else {
            p != Protocol::Ll128 || matches!(self.compute_capability, 70 | 80 | 90)
        };
        coll_ok && proto_ok && self.ranks > 1
    }

    /// Whether NCCL enables `a` at all on this many nodes (`algoEnable`):
    /// not NVLS-Tree on one node, not NVLS on several (no CollNet).
    pub fn algo_enabled(&self, a: Algorithm) -> bool {
        match a {
            Algorithm::NvlsTree => self.nodes > 1,
            Algorithm::Nvls => self.nodes == 1,
            _ => true,
        }
    }

    /// NVLS and NVLS-Tree's algorithm bandwidth, GB/s.
    fn nvls_bandwidth(&self, a: Algorithm) -> f64 {
        let Some(g) = self.nvls else {
            return 0.0;
        };
        // NVLS-Tree on more than 2 nodes: half the network bandwidth.
        let bw = if a == Algorithm::NvlsTree && self.nodes > 2 {
            g.bw_intra.min(g.bw_inter / 2.0)
        } else {
            g.bw_intra.min(g.bw_inter)
        };
        g.channels as f64 * bw * NVLS_RATIO
    }

    /// Algorithm bandwidth of (a, p), GB/s (`bandwidths[coll][a][p]`).
    pub fn bandwidth(&self, a: Algorithm, p: Protocol) -> f64 {
        if !self.enabled(a, p) {
            return 0.0;
        }
        if a.is_nvls() {
            return self.nvls_bandwidth(a);
        }
        let (cc, ni) = (self.cc_index(), self.node_index());
        let ch = self.channels as f64;
        let ll_row = if self.nodes == 1 { cc } else { 0 };
        let ll_max = LL_MAX_BWS[ll_row][ni];
        let ppn = self.ranks as f64 / self.nodes as f64;
        let mut bus = ch * self.bw_per_channel;
        match (a, p) {
            (Algorithm::Ring, Protocol::Ll) => bus = ll_max.min(bus * 0.5),
            (Algorithm::Ring, Protocol::Ll128) => {
                let f = if ppn < 2.0 { 0.7 } else { 0.92 };
                bus = (bus * f).min(ch * PER_CH_MAX_RING_LL128_BWS[cc][ni]);
            }
            (Algorithm::Ring, Protocol::Simple) => {}
            (_, _) => {
                bus = (bus * 0.92).min(ch * PER_CH_MAX_TREE_BWS[cc][ni]);
                match p {
                    Protocol::Ll => bus = (bus / 3.8).min(ll_max),
                    Protocol::Ll128 => {
                        let f = if self.nodes == 1 {
                            7.0 / 9.0
                        } else {
                            120.0 / 128.0
                        };
                        bus = (bus * f).min(ch * PER_CH_MAX_TREE_LL128_BWS[cc][ni]);
                    }
                    Protocol::Simple => {}
                }
                // All of a server's network traffic through one GPU.
                bus *= 0.85;
            }
        }
        let ratio = match a {
            Algorithm::Ring => self.ranks as f64 / self.nsteps(),
            _ => 0.5,
        };
        bus * ratio
    }

    /// Latency of (a, p), us (`latencies[coll][a][p]`).
    pub fn latency(&self, a: Algorithm, p: Protocol) -> f64 {
        match a {
            Algorithm::Nvls => return HW_LAT_NVLINK_NVLS,
            Algorithm::NvlsTree => {
                let hops = 2.0 * log2i(self.nodes as u64) as f64;
                return HW_LAT_NVLINK_NVLS + hops * HW_LAT_NET_NVLS_TREE;
            }
            _ => {}
        }
        let (ai, pi) = (a_index(a), p_index(p));
        let lat = BASE_LAT[ai][pi];
        let intra = HW_LAT_NVLINK[ai][pi];
        let inter = HW_LAT_NET[ai][pi];
        let nodes = self.nodes as f64;
        match a {
            Algorithm::Ring => match self.coll {
                NcclColl::Broadcast | NcclColl::Reduce => {
                    // Channels whose rings differ (each its own rail: not
                    // `sameChannels`): a hop per step, Simple at Tree's
                    // Simple figure.
                    let table = if self.nodes == 1 {
                        &HW_LAT_NVLINK
                    } else {
                        &HW_LAT_NET
                    };
                    let hop = if p == Protocol::Simple {
                        table[0][pi]
                    } else {
                        table[1][pi]
                    };
                    lat + self.nsteps() * hop
                }
                _ => {
                    let inter_steps = match self.coll {
                        NcclColl::AllReduce if self.nodes > 1 => 2.0 * nodes,
                        NcclColl::AllReduce => 0.0,
                        _ => nodes - 1.0,
                    };
                    let overhead = if self.nodes > 1 {
                        NET_OVERHEAD_US * if p == Protocol::Simple { 3.0 } else { 1.0 }
                    } else {
                        0.0
                    };
                    lat + (self.nsteps() - inter_steps) * intra.max(overhead) + inter_steps * inter
                }
            },
            _ => {
                let chain = (self.ranks / self.nodes) as f64 - 1.0;
                lat + 2.0 * (chain * intra + log2i(self.nodes as u64) as f64 * inter)
            }
        }
    }

    /// NCCL's estimate of a call of `bytes` with (a, p), us; None where
    /// the pair is not available.
    pub fn time_us(&self, a: Algorithm, p: Protocol, bytes: u64) -> Option<f64> {
        let mut bw = self.bandwidth(a, p);
        if bw <= 0.0 {
            return None;
        }
        let mut lat = self.latency(a, p);
        let units = bytes >> 6;
        if a == Algorithm::Tree && units > 0 {
            if let Some(f) = TREE_CORRECTION[p_index(p)].get(log2i(units) as usize) {
                bw *= f;
            }
        }
        if a == Algorithm::Ring
            && p == Protocol::Simple
            && self.nodes > 1
            && self.coll == NcclColl::AllReduce
            && bytes / (self.channels as u64 * self.ranks as u64) >= 64
        {
            lat *= if self.compute_capability < 80 {
                1.9
            } else {
                1.4
            };
        }
        Some(lat + bytes as f64 / (1000.0 * bw))
    }

    /// NCCL's choice for a call of `bytes`, among the algorithms and
    /// protocols allowed (`NCCL_ALGO`, `NCCL_PROTO`: None allows all).
    /// A forced algorithm the node count disables leaves Ring and Tree
    /// enabled, as NCCL does when nothing is left; with nothing enabled
    /// that the collective has (Tree or NVLS-Tree forced on AllGather),
    /// NCCL falls back to the ring with the allowed protocols, as its
    /// backup table does.
    pub fn choose(
        &self,
        bytes: u64,
        algo: Option<Algorithm>,
        proto: Option<Protocol>,
    ) -> (Algorithm, Protocol) {
        let pick = |algos: &[Algorithm]| {
            let mut best: Option<(f64, Algorithm, Protocol)> = None;
            for &a in algos {
                for p in Protocol::ALL {
                    if proto.is_some_and(|q| q != p) {
                        continue;
                    }
                    if let Some(t) = self.time_us(a, p, bytes) {
                        if best.is_none_or(|b| t < b.0) {
                            best = Some((t, a, p));
                        }
                    }
                }
            }
            best.map(|(_, a, p)| (a, p))
        };
        let mut algos: Vec<Algorithm> = SCAN
            .into_iter()
            .filter(|&a| algo.is_none_or(|f| f == a) && self.algo_enabled(a))
            .collect();
        if algos.is_empty() {
            algos = vec![Algorithm::Tree, Algorithm::Ring];
        }
        pick(&algos)
            .or_else(|| pick(&[Algorithm::Ring]))
            .unwrap_or((Algorithm::Ring, proto.unwrap_or(Protocol::Simple)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100(coll: NcclColl, nodes: u32, gpus: u32) -> Setting {
        Setting {
            coll,
            ranks: nodes * gpus,
            nodes,
            channels: 16,
            bw_per_channel: if nodes == 1 { 450.0 } else { 400.0 } / 16.0,
            compute_capability: 90,
            nvls: None,
        }
    }

    #[test]
    fn ring_simple_by_hand() {
        // One node, 8 GPUs, AllReduce: bus 16 x 28.125 = 450 GB/s, x 8/14;
        // latency 8.4 + 14 x 3.4 = 56 us.
        let s = h100(NcclColl::AllReduce, 1, 8);
        let bw = s.bandwidth(Algorithm::Ring, Protocol::Simple);
        assert!((bw - 450.0 * 8.0 / 14.0).abs() < 1e-9, "{bw}");
        assert!((s.latency(Algorithm::Ring, Protocol::Simple) - 56.0).abs() < 1e-9);
        let t = s
            .time_us(Algorithm::Ring, Protocol::Simple, 1 << 30)
            .unwrap();
        assert!((t - (56.0 + (1u64 << 30) as f64 / (1000.0 * bw))).abs() < 1e-6);
    }

    #[test]
    fn tree_latency_and_caps_by_hand() {
        // 4 nodes of 8: Tree/LL latency 6.8 + 2 x (7 x 0.6 + 2 x 5.0) =
        // 35.2 us; bandwidth min(16 x 25 x 0.92, 16 x 36.0) = 368, / 3.8,
        // capped by llMaxBws[0][2] = 20.4, x 0.85 x 0.5.
        let s = h100(NcclColl::AllReduce, 4, 8);
        assert!((s.latency(Algorithm::Tree, Protocol::Ll) - 35.2).abs() < 1e-9);
        let bw = s.bandwidth(Algorithm::Tree, Protocol::Ll);
        assert!((bw - 20.4 * 0.85 * 0.5).abs() < 1e-9, "{bw}");
        // Tree only for AllReduce.
        let g = h100(NcclColl::AllGather, 4, 8);
        assert_eq!(g.bandwidth(Algorithm::Tree, Protocol::Simple), 0.0);
        assert_eq!(
            g.choose(1 << 20, Some(Algorithm::Tree), None).0,
            Algorithm::Ring
        );
    }

    #[test]
    fn small_calls_take_low_latency_protocols_and_large_ones_simple() {
        for nodes in [1, 2, 8] {
            let s = h100(NcclColl::AllReduce, nodes, 8);
            assert_eq!(s.choose(8, None, None).1, Protocol::Ll, "{nodes}");
            assert_eq!(s.choose(1 << 33, None, None).1, Protocol::Simple, "{nodes}");
        }
        // Forcing one protocol keeps it.
        let s = h100(NcclColl::AllReduce, 2, 8);
        assert_eq!(
            s.choose(8, None, Some(Protocol::Simple)).1,
            Protocol::Simple
        );
    }

    fn with_nvls(coll: NcclColl, nodes: u32) -> Setting {
        Setting {
            nvls: Some(NvlsGraph {
                channels: 8,
                bw_intra: 450.0 / 9.0,
                bw_inter: 50.0,
            }),
            ..h100(coll, nodes, 8)
        }
    }

    #[test]
    fn nvls_by_hand_and_where_nccl_enables_it() {
        // One node: 8 channels x 50 GB/s x 5/6, 25 us.
        let s = with_nvls(NcclColl::AllReduce, 1);
        let bw = s.bandwidth(Algorithm::Nvls, Protocol::Simple);
        assert!((bw - 8.0 * 50.0 * 5.0 / 6.0).abs() < 1e-9, "{bw}");
        assert_eq!(s.latency(Algorithm::Nvls, Protocol::Simple), 25.0);
        assert_eq!(s.bandwidth(Algorithm::Nvls, Protocol::Ll), 0.0);
        assert_eq!(
            s.choose(1 << 30, None, None),
            (Algorithm::Nvls, Protocol::Simple)
        );
        assert_eq!(s.choose(8, None, None).1, Protocol::Ll);
        // 4 nodes: NVLS-Tree's bwInter is halved; latency 25 + 2 x 2 x 14.
        let s = with_nvls(NcclColl::AllReduce, 4);
        let bw = s.bandwidth(Algorithm::NvlsTree, Protocol::Simple);
        assert!((bw - 8.0 * 25.0 * 5.0 / 6.0).abs() < 1e-9, "{bw}");
        assert_eq!(s.latency(Algorithm::NvlsTree, Protocol::Simple), 81.0);
        // Forced where the node count disables it: Ring and Tree come back.
        let one = with_nvls(NcclColl::AllReduce, 1);
        let two = with_nvls(NcclColl::AllReduce, 2);
        let free = two.choose(1 << 20, Some(Algorithm::Tree), None);
        assert!(!two.choose(1 << 20, Some(Algorithm::Nvls), None).0.is_nvls());
        assert!(!one
            .choose(1 << 30, Some(Algorithm::NvlsTree), None)
            .0
            .is_nvls());
        assert_eq!(free.0, Algorithm::Tree);
        // A collective without it: the ring.
        let b = with_nvls(NcclColl::Broadcast, 1);
        assert_eq!(
            b.choose(1 << 30, Some(Algorithm::Nvls), None).0,
            Algorithm::Ring
        );
        // No NVLink SHARP: never chosen.
        assert_eq!(
            h100(NcclColl::AllReduce, 1, 8)
                .choose(1 << 30, None, None)
                .0,
            Algorithm::Ring
        );
    }
}
