//! An NCCL communicator: which GPU each rank is, which NIC it sends
//! through, and the rings of its channels.
//!
//! Ranks are GPUs in server order (rank r is GPU r mod g of server
//! r / g with g GPUs per server taking part), as `mpirun` with one process
//! per GPU places them. Channel c's ring visits the servers in order and,
//! inside each, the GPUs starting from local GPU c mod g, so that it leaves
//! a server from the GPU before it and enters the next one at GPU c mod g:
//! every ring crosses between servers on one rail, the NIC of GPU c mod g,
//! and consecutive channels use consecutive rails, as NCCL's topology
//! search lays rings on rail-optimized servers.
//!
//! A message between servers goes out through the NIC on the receiver's
//! rail (NCCL's PXN): when that is not the sender's own NIC, the data
//! first crosses NVLink to the GPU that owns it. With PXN disabled
//! (`NCCL_PXN_DISABLE=1`, [`Comm::pxn`] false) it leaves through the
//! sender's own NIC and arrives at the receiver's own, crossing between
//! rails in the network ([`Comm::net_path`]).
//!
//! Trees (NCCL's Tree algorithm, `src/graph/trees.cc` in idea): between
//! servers a double binary tree, two binary trees over the servers in
//! which every server is a leaf in one of them (the second tree is the
//! first shifted by one server when their number is odd, mirrored when
//! it is even). NCCL duplicates its tree channels: the second half of
//! the channels repeats the first half's NICs on the other tree, so
//! channel c uses tree (c / (channels / 2)) mod 2 and every rail carries
//! both trees (a server is inside one and a leaf of the other on each
//! NIC). Inside a server the GPUs form
//! a chain in the order of channel c's ring; its first GPU (c mod g, the
//! GPU of rail c) is the server's node in the tree between servers.

use crate::config::GpuSpec;
use crate::error::{arg_err, Result};
use crate::mpi::sched::Rank;
use crate::topology::Topology;

/// The communicator's layout on the fabric.
#[derive(Clone, Debug)]
pub struct Comm {
    /// GPUs per server taking part.
    pub gpus: u32,
    /// Servers taking part (the fabric's first ones).
    pub servers: u32,
    /// GPUs sharing each NIC.
    pub gpus_per_nic: u32,
    /// NICs per server.
    pub nics: u32,
    /// Channels.
    pub channels: u32,
    /// NCCL's PXN (default on): see [`Comm::net_path`].
    pub pxn: bool,
}

impl Comm {
    /// `servers` servers of `gpus` GPUs each on a fabric of GPU servers.
    pub fn new(topo: &Topology, g: &GpuSpec, servers: u32, gpus: u32) -> Result<Comm> {
        if servers == 0 {
            return arg_err("--nodes 0: a communicator needs at least one server");
        }
        if gpus == 0 {
            return arg_err("--gpus-per-node 0: a communicator needs at least one GPU per server");
        }
        if gpus > g.gpus_per_server {
            return arg_err(format!(
                "{gpus} GPUs per node asked for, but the fabric's servers hold {} \
                 (gpu.gpus_per_server); lower --gpus-per-node",
                g.gpus_per_server
            ));
        }
        let have = (topo.n_hosts / g.nics() as usize) as u32;
        if servers > have {
            return arg_err(format!(
                "{servers} nodes asked for, but the fabric has {have} GPU servers; \
                 lower --nodes or use a larger fabric"
            ));
        }
        Ok(Comm {
            gpus,
            servers,
            gpus_per_nic: g.gpus_per_nic(),
            nics: g.nics(),
            channels: 1,
            pxn: true,
        })
    }

    /// Number of ranks.
    pub fn n(&self) -> u32 {
        self.gpus * self.servers
    }

    /// Server of a rank.
    pub fn server(&self, r: Rank) -> u32 {
        r / self.gpus
    }

    /// GPU index of a rank inside its server.
    pub fn gpu(&self, r: Rank) -> u32 {
        r % self.gpus
    }

    /// NIC index (rail) of a GPU.
    pub fn nic_of_gpu(&self, gpu: u32) -> u32 {
        gpu / self.gpus_per_nic
    }

    /// Fabric host index of NIC `nic` of `server`.
    pub fn nic_host(&self, server: u32, nic: u32) -> u32 {
        server * self.nics + nic
    }

    /// How a message from rank `a` reaches rank `b` of another server:
    /// (sending NIC's host, receiving NIC's host, whether the data first
    /// crosses NVLink to the GPU of the receiver's rail). With PXN both
    /// NICs are on the receiver's rail; without, each GPU's own.
    pub fn net_path(&self, a: Rank, b: Rank) -> (u32, u32, bool) {
        let (ra, rb) = (self.nic_of_gpu(self.gpu(a)), self.nic_of_gpu(self.gpu(b)));
        let (sa, sb) = (self.server(a), self.server(b));
        if self.pxn {
            (self.nic_host(sa, rb), self.nic_host(sb, rb), ra != rb)
        } else {
            (self.nic_host(sa, ra), self.nic_host(sb, rb), false)
        }
    }

    /// Host of every rank's own NIC (the job's placement).
    pub fn rank_hosts(&self) -> Vec<u32> {
        (0..self.n())
            .map(|r| self.nic_host(self.server(r), self.nic_of_gpu(self.gpu(r))))
            .collect()
    }

    /// Channel `c`'s ring: the ranks in ring order.
    pub fn ring(&self, c: u32) -> Vec<Rank> {
        let g = self.gpus;
        (0..self.servers)
            .flat_map(|s| (0..g).map(move |i| s * g + (c + i) % g))
            .collect()
    }

    /// Channel `c`'s tree: every rank's place in it (see the module's
    /// description).
    pub fn tree(&self, c: u32) -> Vec<TreeNode> {
        let (g, nodes) = (self.gpus, self.servers);
        let mut out = vec![TreeNode::default(); self.n() as usize];
        let chain = |s: u32, i: u32| s * g + (c + i) % g;
        for s in 0..nodes {
            for i in 0..g {
                let r = chain(s, i) as usize;
                if i > 0 {
                    out[r].parent = Some(chain(s, i - 1));
                }
                if i + 1 < g {
                    out[r].children.push(chain(s, i + 1));
                }
            }
        }
        for s in 0..nodes {
            if let Some(p) = dtree_parent(nodes, self.tree_of(c), s) {
                let (head, up) = (chain(s, 0), chain(p, 0));
                out[head as usize].parent = Some(up);
                out[up as usize].children.push(head);
            }
        }
        out
    }

    /// NCCL's tree depth (`channel->tree.depth`): the chain inside a
    /// server plus the height of the tree between servers,
    /// `gpus - 1 + floor(log2(servers))`.
    pub fn tree_depth(&self) -> u32 {
        self.gpus - 1 + self.servers.max(1).ilog2()
    }

    /// Which of the two trees channel `c` uses: NCCL's channels
    /// `[half, 2 half)` are copies of `[0, half)` on the dual tree.
    pub fn tree_of(&self, c: u32) -> u32 {
        (c / (self.channels / 2).max(1)) % 2
    }

    /// Ring channel `c` in both directions: (prev, next) of every rank.
    pub fn ring_neighbours(&self, c: u32) -> Vec<(Rank, Rank)> {
        let ring = self.ring(c);
        let n = ring.len();
        let mut out = vec![(0, 0); n];
        for (i, &r) in ring.iter().enumerate() {
            out[r as usize] = (ring[(i + n - 1) % n], ring[(i + 1) % n]);
        }
        out
    }
}

/// Where a rank sits in one channel's tree: its parent (None at the
/// root) and its children, the chain's next GPU first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeNode {
    /// Towards the root.
    pub parent: Option<Rank>,
    /// Away from it (at most three: the chain's next GPU and two servers).
    pub children: Vec<Rank>,
}

/// The parent of node `r` in NCCL's binary tree over `n` nodes (None for
/// the root, node 0, whose one child is the largest power of two below
/// `n`): clear `r`'s lowest set bit and set the bit above it, or, when
/// that is beyond the last node, only clear it.
pub fn btree_parent(n: u32, r: u32) -> Option<u32> {
    if r == 0 || r >= n {
        return None;
    }
    let bit = r & r.wrapping_neg();
    let up = (r ^ bit) | (bit << 1);
    Some(if up >= n { r ^ bit } else { up })
}

/// The parent of node `r` in tree `t` (0 or 1) of the double binary tree
/// over `n` nodes: tree 1 is tree 0 shifted by one node (odd `n`) or
/// mirrored (even `n`), so that a node inside one tree is a leaf of the
/// other.
pub fn dtree_parent(n: u32, t: u32, r: u32) -> Option<u32> {
    if t == 0 {
        return btree_parent(n, r);
    }
    if n % 2 == 1 {
        btree_parent(n, (r + n - 1) % n).map(|p| (p + 1) % n)
    } else {
        btree_parent(n, n - 1 - r).map(|p| n - 1 - p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FabricSpec;

    fn rail_fabric(servers: u32) -> (Topology, GpuSpec) {
        let text = format!(
            "[gpu]\ngpus_per_server = 8\n[topology]\nkind = \"rail_optimized\"\n\
             servers = {servers}\nspines = 2\nnic_gbps = 400\n"
        );
        let spec = FabricSpec::from_toml(&text).unwrap();
        (Topology::build(&spec).unwrap(), spec.gpu.unwrap())
    }

    #[test]
    fn rings_cross_servers_on_one_rail_per_channel() {
        let (t, g) = rail_fabric(2);
        let c = Comm::new(&t, &g, 2, 8).unwrap();
        assert_eq!(c.ring(0), (0..16).collect::<Vec<_>>());
        let r3 = c.ring(3);
        assert_eq!(&r3[..8], &[3, 4, 5, 6, 7, 0, 1, 2]);
        assert_eq!(&r3[8..], &[11, 12, 13, 14, 15, 8, 9, 10]);
        // Channel 3 enters server 1 at GPU 3: rail 3.
        assert_eq!(c.nic_of_gpu(c.gpu(r3[8])), 3);
        assert_eq!(t.nodes[c.rank_hosts()[11] as usize].name, "h1.nic3");
    }

    /// Walk from every node to the root: no cycle, one root.
    fn is_tree(n: u32, parent: impl Fn(u32) -> Option<u32>) -> bool {
        let roots = (0..n).filter(|&r| parent(r).is_none()).count();
        roots == 1
            && (0..n).all(|mut r| {
                for _ in 0..=n {
                    match parent(r) {
                        None => return true,
                        Some(p) => r = p,
                    }
                }
                false
            })
    }

    #[test]
    fn double_binary_trees_are_trees_with_at_most_two_children() {
        for n in 1..=130 {
            for t in 0..2 {
                assert!(is_tree(n, |r| dtree_parent(n, t, r)), "n {n} tree {t}");
                let mut kids = vec![0; n as usize];
                for r in 0..n {
                    if let Some(p) = dtree_parent(n, t, r) {
                        kids[p as usize] += 1;
                    }
                }
                assert!(kids.iter().all(|&k| k <= 2), "n {n} tree {t}: {kids:?}");
            }
            // Every node but one is a leaf in at least one of the trees.
            let inner = |t: u32, r: u32| (0..n).any(|c| dtree_parent(n, t, c) == Some(r));
            let both = (0..n).filter(|&r| inner(0, r) && inner(1, r)).count();
            assert!(both <= 1, "n {n}: {both} nodes inside both trees");
        }
        // By hand, 4 nodes: 0 -> 2 -> {1, 3}; mirrored: 3 -> 1 -> {2, 0}.
        let p0: Vec<_> = (0..4).map(|r| dtree_parent(4, 0, r)).collect();
        assert_eq!(p0, [None, Some(2), Some(0), Some(2)]);
        let p1: Vec<_> = (0..4).map(|r| dtree_parent(4, 1, r)).collect();
        assert_eq!(p1, [Some(1), Some(3), Some(1), None]);
    }

    #[test]
    fn a_channels_tree_chains_the_gpus_and_joins_servers_at_its_rail() {
        let (t, g) = rail_fabric(4);
        let c = Comm::new(&t, &g, 4, 8).unwrap();
        let tree = c.tree(3);
        // Server 0's chain: GPUs 3, 4, ..., 2; GPU 3 heads it.
        assert_eq!(tree[4].parent, Some(3));
        assert_eq!(tree[2].children, Vec::<Rank>::new());
        // Channel 3 uses tree 1 (mirrored): 3 -> 1 -> {0, 2}, between the
        // heads, GPU 3 of each server (rail 3).
        assert_eq!(tree[3].parent, Some(8 + 3));
        assert_eq!(tree[8 + 3].parent, Some(24 + 3));
        assert_eq!(tree[24 + 3].parent, None);
        assert_eq!(tree[8 + 3].children, vec![8 + 4, 3, 16 + 3]);
        assert!(is_tree(32, |r| tree[r as usize].parent));
    }

    #[test]
    fn every_rail_carries_both_trees() {
        let (t, g) = rail_fabric(8);
        let mut c = Comm::new(&t, &g, 8, 8).unwrap();
        c.channels = 16;
        // Channels 0-7 are NCCL's tree channels on rails 0-7, channels
        // 8-15 their copies on the dual tree.
        for ch in 0..16 {
            assert_eq!(c.tree_of(ch), ch / 8, "channel {ch}");
        }
        // On rail 0 (channels 0 and 8) the servers inside tree 0 (0, 4,
        // 2, 6) are leaves of the mirrored tree (inside it: 7, 3, 5, 1).
        let heads = |ch: u32| -> Vec<usize> {
            let tree = c.tree(ch);
            (0..8)
                .map(|s| {
                    let h = (s * 8 + ch % 8) as usize;
                    tree[h]
                        .children
                        .iter()
                        .filter(|&&k| c.server(k) != s)
                        .count()
                })
                .collect()
        };
        let (a, b) = (heads(0), heads(8));
        for s in 0..8 {
            assert!(
                a[s] == 0 || b[s] == 0,
                "server {s} inside both trees on rail 0: {a:?} {b:?}"
            );
        }
        assert_eq!(a.iter().sum::<usize>(), 7);
        assert_eq!(b.iter().sum::<usize>(), 7);
        // One channel: tree 0.
        c.channels = 1;
        assert_eq!(c.tree_of(0), 0);
    }

    #[test]
    fn too_many_nodes_or_gpus_say_what_to_lower() {
        let (t, g) = rail_fabric(2);
        let e = Comm::new(&t, &g, 3, 8).unwrap_err().to_string();
        assert!(e.contains("--nodes") && e.contains("2 GPU servers"), "{e}");
        let e = Comm::new(&t, &g, 2, 9).unwrap_err().to_string();
        assert!(e.contains("--gpus-per-node"), "{e}");
    }
}
