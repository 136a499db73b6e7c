//! Routing: shortest-path forwarding tables with ECMP groups, and the
//! per-switch-seeded ECMP hash.
//!
//! For every switch and destination host, the group holds every port whose
//! neighbour is one hop closer to the destination (hosts are never transit).
//! A host has one link, so every switch but its own reaches it as it
//! reaches that switch: the tables hold one group per switch and home
//! switch (a destination class), and each host's own group at its home
//! switch, so that they grow with switches x edge switches, not switches x
//! hosts (a 65,536-host leaf-spine: 34 MB instead of 1.1 GB).
//! A packet picks a member by a hash of its 5-tuple (source and destination
//! address, UDP source port as entropy and UDP destination port 4791 for
//! RoCEv2; TCP source and destination ports for TCP) mixed with
//! the switch's own seed, derived from the run seed: without per-switch seeds
//! all tiers would make correlated choices (polarisation). InfiniBand
//! takes one member per destination instead (`Routing::pin_dmodk`, see
//! `ib/routing.rs`).
//! After a link failure (`failures.rs`) the tables are rebuilt without the
//! links the fabric has converged around, and without the ports a switch
//! has detected down. Adaptive routing (`adaptive.rs`) chooses among the
//! same groups by queue depth. Not modelled: weighted ECMP.

use super::port::Port;
use crate::error::{arg_err, Result};
use crate::rng::splitmix64;
use crate::topology::Topology;
use std::collections::VecDeque;

/// What [`Routing::next_port`] returns when a switch has no way to the
/// destination (a link failure it has detected, before the fabric routes
/// around it).
pub(crate) const NO_ROUTE: u32 = u32::MAX;

/// The length that marks a class's entry at its own home switch: the group
/// is then the destination host's own (`Routing::home`).
const HOME: u32 = u32::MAX;

pub(crate) struct Routing {
    n_hosts: usize,
    /// Destination classes: one per home switch, then one per host with
    /// no usable link (lone: a search of its own).
    n_classes: usize,
    /// (offset, len) into `members` for [switch - n_hosts][class]; len
    /// [`HOME`] at the class's home switch.
    groups: Vec<(u32, u32)>,
    /// Each host's class.
    class_of: Vec<u32>,
    /// Each host's group at its home switch: the port of its link's far
    /// end, or none when that switch does not use it.
    home: Vec<(u32, u32)>,
    members: Vec<u32>,
    seeds: Vec<u64>,
    /// Every group is used as one member (InfiniBand's D-mod-K), not by
    /// hash: `(destination / divisor) mod len`, the divisor that of the
    /// group's first port ([`Routing::pin_dmodk`]).
    dmodk: bool,
    /// Per port, under D-mod-K: the divisor of the destination index when
    /// the group leaving by it goes up (1 otherwise).
    dmodk_div: Vec<u32>,
}

impl Routing {
    pub fn build(topo: &Topology, ports: &[Port], node_ports: &[u32], seed: u64) -> Routing {
        Routing::build_masked(topo, ports, node_ports, seed, &[], &[])
    }

    /// Tables for a fabric whose links at ports with `global_down` set are
    /// gone for every switch, and whose switches do not use their own
    /// ports with `local_down` set (an empty slice: none).
    ///
    /// One breadth-first search over the switches from each home switch
    /// gives every switch's group towards that switch's hosts; a host
    /// whose link is gone (or whose peer is not a switch) gets a search of
    /// its own. Cost: O(home switches x (switches + switch links) +
    /// switches x home switches + hosts); the tables are those of one
    /// search per host (a 32,768-host leaf-spine took 100 s that way).
    pub fn build_masked(
        topo: &Topology,
        ports: &[Port],
        node_ports: &[u32],
        seed: u64,
        global_down: &[bool],
        local_down: &[bool],
    ) -> Routing {
        let gone = |pi: u32| global_down.get(pi as usize).copied().unwrap_or(false);
        let unused = |pi: u32| gone(pi) || local_down.get(pi as usize).copied().unwrap_or(false);
        let n = topo.nodes.len();
        let h = topo.n_hosts;
        let ns = n - h;
        // Classes: each host's home switch (its link's far end), in order
        // of first appearance, then the lone hosts.
        let mut class_of_home = vec![u32::MAX; ns];
        let mut homes = Vec::new();
        let mut class_of = vec![u32::MAX; h];
        let mut lone = Vec::new();
        for d in 0..h {
            let (a, b) = (node_ports[d], node_ports[d + 1]);
            if b - a != 1 || gone(a) || (ports[a as usize].peer_node as usize) < h {
                lone.push(d);
                continue;
            }
            let s = ports[a as usize].peer_node as usize;
            if class_of_home[s - h] == u32::MAX {
                class_of_home[s - h] = homes.len() as u32;
                homes.push(s);
            }
            class_of[d] = class_of_home[s - h];
        }
        for (k, &d) in lone.iter().enumerate() {
            class_of[d] = (homes.len() + k) as u32;
        }
        let nc = homes.len() + lone.len();
        let mut lists = Lists {
            members: Vec::new(),
            single: vec![u32::MAX; ports.len()],
            last_multi: vec![(0u32, 0u32); ns],
            cand: Vec::new(),
        };
        let mut groups = vec![(0u32, 0u32); ns * nc];
        let adj = SwitchAdjacency::new(h, n, node_ports, ports, &gone);
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for (c, &s) in homes.iter().enumerate() {
            adj.hops_from(s, &mut dist, &mut queue);
            for sw in h..n {
                groups[(sw - h) * nc + c] = if sw == s {
                    (0, HOME)
                } else {
                    lists.add(sw - h, adj.towards(sw, &dist, &unused))
                };
            }
        }
        for (k, &d) in lone.iter().enumerate() {
            hops_to_host(d, h, node_ports, ports, &gone, &mut dist, &mut queue);
            for sw in h..n {
                let cand = (dist[sw] != u32::MAX)
                    .then(|| {
                        (node_ports[sw]..node_ports[sw + 1]).filter(|&pi| {
                            let v = ports[pi as usize].peer_node as usize;
                            dist[v] != u32::MAX
                                && dist[v] + 1 == dist[sw]
                                && (v >= h || v == d)
                                && !unused(pi)
                        })
                    })
                    .into_iter()
                    .flatten();
                groups[(sw - h) * nc + homes.len() + k] = lists.add(sw - h, cand);
            }
        }
        // Each host's own group at its home switch.
        let home = (0..h)
            .map(|d| {
                if (class_of[d] as usize) >= homes.len() {
                    return (0, 0); // lone: its class has no HOME entry
                }
                let pi = ports[node_ports[d] as usize].peer;
                if unused(pi) {
                    (0, 0)
                } else {
                    (lists.single(pi), 1)
                }
            })
            .collect();
        let seeds = (h..n)
            .map(|sw| splitmix64(seed ^ splitmix64(sw as u64)))
            .collect();
        Routing {
            n_hosts: h,
            n_classes: nc,
            groups,
            class_of,
            home,
            members: lists.members,
            seeds,
            dmodk: false,
            dmodk_div: Vec::new(),
        }
    }

    /// Use every group as one port: InfiniBand's static D-mod-K routing
    /// (Zahavi et al.; OpenSM's fat-tree engine). A switch's level is its
    /// distance from the hosts (1 for a leaf or edge switch); going up from
    /// level l, destination d takes member `(d / W) mod len` of the group
    /// (min-hop ports, in port order), where W is the product of the
    /// up-link counts of levels 1 .. l-1. On a leaf-spine W = 1 (d mod K);
    /// on a three-level fat tree an edge switch picks its aggregation
    /// switch by d mod k/2 and that one its core by (d / (k/2)) mod k/2, so
    /// the destinations of a pod spread over every core. Taking d mod k/2
    /// at both levels used only k/2 of the (k/2)^2 cores. Going down (a
    /// group of parallel cables to one switch) a destination takes member
    /// d mod len. Irregular trees take, per level, the most up-links of any
    /// switch of the level below.
    pub fn pin_dmodk(&mut self, topo: &Topology, ports: &[Port], node_ports: &[u32]) {
        self.dmodk = true;
        let (h, n) = (topo.n_hosts, topo.nodes.len());
        // Levels by breadth-first search from the hosts' switches.
        let mut level = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for d in 0..h {
            for pi in node_ports[d]..node_ports[d + 1] {
                let v = ports[pi as usize].peer_node as usize;
                if v >= h && level[v] == u32::MAX {
                    level[v] = 1;
                    queue.push_back(v);
                }
            }
        }
        while let Some(sw) = queue.pop_front() {
            for pi in node_ports[sw]..node_ports[sw + 1] {
                let v = ports[pi as usize].peer_node as usize;
                if v >= h && level[v] == u32::MAX {
                    level[v] = level[sw] + 1;
                    queue.push_back(v);
                }
            }
        }
        let up = |pi: u32| {
            let p = &ports[pi as usize];
            let (a, b) = (level[p.node as usize], level[p.peer_node as usize]);
            (p.peer_node as usize) >= h && a != u32::MAX && b == a + 1
        };
        // Up-links per level (the most of any switch of the level).
        let top = level[h..]
            .iter()
            .filter(|&&l| l != u32::MAX)
            .max()
            .copied()
            .unwrap_or(0);
        let mut up_links = vec![1u64; top as usize + 1];
        for sw in h..n {
            if level[sw] == u32::MAX {
                continue;
            }
            let k = (node_ports[sw]..node_ports[sw + 1])
                .filter(|&pi| up(pi))
                .count() as u64;
            let l = level[sw] as usize;
            up_links[l] = up_links[l].max(k);
        }
        // W of level l: the product of the up-links of the levels below.
        let mut div = vec![1u64; top as usize + 1];
        for l in 2..=top as usize {
            div[l] = div[l - 1].saturating_mul(up_links[l - 1]);
        }
        self.dmodk_div = (0..ports.len() as u32)
            .map(|pi| {
                let l = level[ports[pi as usize].node as usize];
                if up(pi) {
                    div[l as usize].min(u32::MAX as u64) as u32
                } else {
                    1
                }
            })
            .collect();
    }

    /// Under D-mod-K, the member of a group of `len` ports from `off` that
    /// destination `dst` takes.
    #[inline]
    fn dmodk_index(&self, off: u32, len: usize, dst: u32) -> usize {
        let div = self.dmodk_div[self.members[off as usize] as usize];
        (dst / div) as usize % len
    }

    /// (offset, len) in `members` of switch `node`'s group towards `dst`.
    #[inline]
    fn entry(&self, node: u32, dst: u32) -> (u32, u32) {
        let sw = node as usize - self.n_hosts;
        let c = self.class_of[dst as usize] as usize;
        let g = self.groups[sw * self.n_classes + c];
        if g.1 == HOME {
            self.home[dst as usize]
        } else {
            g
        }
    }

    /// The egress port at switch `node` for a packet to `dst`. It resolves
    /// a HOME entry itself, after the common one-port case, rather than
    /// through [`Routing::entry`]: a2a-32 runs 0.13 % fewer instructions.
    #[inline]
    pub fn next_port(&self, node: u32, src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
        let sw = node as usize - self.n_hosts;
        let c = self.class_of[dst as usize] as usize;
        let (mut off, mut len) = self.groups[sw * self.n_classes + c];
        if len == 1 {
            return self.members[off as usize];
        }
        if len == HOME {
            (off, len) = self.home[dst as usize];
            if len == 1 {
                return self.members[off as usize];
            }
        }
        if len == 0 {
            return NO_ROUTE; // only after a link failure
        }
        let idx = if self.dmodk {
            self.dmodk_index(off, len as usize, dst)
        } else {
            self.pick(node, src, dst, sport, dport, len as usize)
        };
        self.members[off as usize + idx]
    }

    /// The next hops of switch `node` towards host `dst`: the minimal ones,
    /// or under D-mod-K the one it uses.
    #[inline]
    pub fn group(&self, node: u32, dst: u32) -> &[u32] {
        let (off, len) = self.entry(node, dst);
        let g = &self.members[off as usize..(off + len) as usize];
        if self.dmodk && g.len() > 1 {
            let i = self.dmodk_index(off, g.len(), dst);
            &g[i..i + 1]
        } else {
            g
        }
    }

    /// The ECMP choice among `len` members: the flow's 5-tuple hashed with
    /// the switch's seed, scaled to 0..len. The fields are folded into 64
    /// bits before the hash, and from host 256 on the source's high bits
    /// fold onto the source port's, so two flows may hash alike at every
    /// switch, as with the XOR folds of switch hash functions; a hash
    /// collision only puts them on one path. (The flowlet table of
    /// adaptive routing keys on the whole 5-tuple instead, `adaptive.rs`.)
    #[inline]
    pub fn pick(&self, node: u32, src: u32, dst: u32, sport: u16, dport: u16, len: usize) -> usize {
        let sw = node as usize - self.n_hosts;
        let key =
            ((src as u64) << 40) ^ ((dst as u64) << 16) ^ ((sport as u64) << 48) ^ dport as u64;
        let h = splitmix64(key ^ self.seeds[sw]);
        ((h as u128 * len as u128) >> 64) as usize
    }

    /// Bytes the tables take (groups, classes, home groups, members).
    #[cfg(test)]
    pub fn table_bytes(&self) -> usize {
        self.groups.len() * 8
            + self.class_of.len() * 4
            + self.home.len() * 8
            + self.members.len() * 4
    }
}

impl super::Net {
    /// The first UDP source port from `first` on (wrapping within the
    /// ephemeral range 49152-65535) whose ECMP path from host `src` to host
    /// `dst` passes through switch `via` ([`super::Net::connect_via`]).
    pub(crate) fn sport_through(&self, src: u32, dst: u32, first: u16, via: u32) -> Result<u16> {
        let name = |n: u32| self.topo.nodes[n as usize].name.as_str();
        if self.ib.is_some() {
            return arg_err(format!(
                "via {}: InfiniBand routes by destination (D-mod-K), so a flow's path cannot \
                 be chosen; drop via, or use an Ethernet fabric",
                name(via)
            ));
        }
        if self.iwarp.is_some() {
            return arg_err(format!(
                "via {}: an iWARP QP rides a TCP connection whose ports the switches hash; \
                 pinning its path is not modelled: drop via, or use RoCE",
                name(via)
            ));
        }
        if self.ar.is_some() {
            return arg_err(format!(
                "via {}: adaptive routing moves a flow between paths; drop via, or use \
                 [routing] mode = \"ecmp\"",
                name(via)
            ));
        }
        if (via as usize) < self.topo.n_hosts {
            return arg_err(format!("via {}: name a switch, not a host", name(via)));
        }
        let passes = |sport: u16| self.ecmp_hops(src, dst, sport).any(|(node, _)| node == via);
        (0..16384u32)
            .map(|k| 49152 + ((first as u32 - 49152 + k) % 16384) as u16)
            .find(|&p| passes(p))
            .ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "via {}: no ECMP path from {} to {} passes through it; pick a switch \
                     between them",
                    name(via),
                    name(src),
                    name(dst)
                ))
            })
    }

    /// The path of QP `qp`'s data: (switch name, egress port index within
    /// the switch) at every switch from its host to the peer's.
    pub fn qp_path(&self, qp: super::QpId) -> Vec<(String, u32)> {
        let (src, dst, sport) = match &self.flow {
            Some(f) => {
                let q = &f.qps[qp.0 as usize];
                (q.host, q.peer_host, q.sport)
            }
            None => {
                let q = &self.qps[qp.0 as usize];
                (q.host, q.peer_host, q.sport)
            }
        };
        self.ecmp_hops(src, dst, sport)
            .map(|(node, out)| {
                let first = self.node_ports[node as usize];
                (self.topo.nodes[node as usize].name.clone(), out - first)
            })
            .collect()
    }

    /// The switches a packet from host `src` to host `dst` with UDP source
    /// port `sport` crosses, each with its egress port, as ECMP routes it
    /// now; ends at `dst`, or where a failure left no route.
    fn ecmp_hops(&self, src: u32, dst: u32, sport: u16) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut node = self.ports[self.nics[src as usize].port as usize].peer_node;
        // A min-hop path has fewer hops than the fabric has nodes.
        let mut left = self.topo.nodes.len();
        std::iter::from_fn(move || {
            if node == dst || left == 0 {
                return None;
            }
            left -= 1;
            let out = self
                .routing
                .next_port(node, src, dst, sport, crate::wire::ROCEV2_UDP_PORT);
            if out == NO_ROUTE {
                return None;
            }
            let hop = (node, out);
            node = self.ports[out as usize].peer_node;
            Some(hop)
        })
    }
}

/// The switches' links to other switches, as (port, peer switch) lists in
/// port order, without the links that are gone: what a search from a
/// switch crosses (hosts are never transit). Compact, where the ports are
/// large structures read at random.
struct SwitchAdjacency {
    n_hosts: usize,
    /// Offsets into `adj` of switch `sw - n_hosts`, and the end.
    off: Vec<u32>,
    adj: Vec<(u32, u32)>,
}

impl SwitchAdjacency {
    fn new(
        h: usize,
        n: usize,
        node_ports: &[u32],
        ports: &[Port],
        gone: &impl Fn(u32) -> bool,
    ) -> SwitchAdjacency {
        let mut off = Vec::with_capacity(n - h + 1);
        let mut adj = Vec::new();
        for sw in h..n {
            off.push(adj.len() as u32);
            for pi in node_ports[sw]..node_ports[sw + 1] {
                let v = ports[pi as usize].peer_node;
                if v as usize >= h && !gone(pi) {
                    adj.push((pi, v));
                }
            }
        }
        off.push(adj.len() as u32);
        SwitchAdjacency {
            n_hosts: h,
            off,
            adj,
        }
    }

    fn of(&self, sw: usize) -> &[(u32, u32)] {
        let i = sw - self.n_hosts;
        &self.adj[self.off[i] as usize..self.off[i + 1] as usize]
    }

    /// Hops from every switch to switch `root` (u32::MAX: unreachable).
    fn hops_from(&self, root: usize, dist: &mut [u32], queue: &mut VecDeque<usize>) {
        dist.fill(u32::MAX);
        dist[root] = 0;
        queue.clear();
        queue.push_back(root);
        while let Some(u) = queue.pop_front() {
            for &(_, v) in self.of(u) {
                let v = v as usize;
                if dist[v] == u32::MAX {
                    dist[v] = dist[u] + 1;
                    queue.push_back(v);
                }
            }
        }
    }

    /// Switch `sw`'s usable ports to a switch one hop closer to the root.
    fn towards<'a>(
        &'a self,
        sw: usize,
        dist: &'a [u32],
        unused: &'a impl Fn(u32) -> bool,
    ) -> impl Iterator<Item = u32> + 'a {
        let d = dist[sw];
        self.of(sw)
            .iter()
            .filter(move |&&(pi, v)| {
                d != u32::MAX && dist[v as usize].wrapping_add(1) == d && !unused(pi)
            })
            .map(|&(pi, _)| pi)
    }
}

/// Hops from every node to host `dst` (u32::MAX: unreachable), crossing no
/// port for which `gone` holds; hosts other than `dst` are not transit.
fn hops_to_host(
    dst: usize,
    h: usize,
    node_ports: &[u32],
    ports: &[Port],
    gone: &impl Fn(u32) -> bool,
    dist: &mut [u32],
    queue: &mut VecDeque<usize>,
) {
    dist.fill(u32::MAX);
    dist[dst] = 0;
    queue.clear();
    queue.push_back(dst);
    while let Some(u) = queue.pop_front() {
        if u != dst && u < h {
            continue;
        }
        for pi in node_ports[u]..node_ports[u + 1] {
            let v = ports[pi as usize].peer_node as usize;
            if dist[v] == u32::MAX && !gone(pi) {
                dist[v] = dist[u] + 1;
                queue.push_back(v);
            }
        }
    }
}

/// Member lists under construction, shared between groups: a one-port
/// list is the port's (`single`), and a switch's group equal to its last
/// many-port one reuses it (a fat tree's up-groups are one list per
/// switch), so the members take little room.
struct Lists {
    members: Vec<u32>,
    /// Offset in `members` of each port's one-port list (u32::MAX: none).
    single: Vec<u32>,
    /// Each switch's last many-port list.
    last_multi: Vec<(u32, u32)>,
    cand: Vec<u32>,
}

impl Lists {
    /// Offset of port `pi`'s one-port list, made the first time.
    fn single(&mut self, pi: u32) -> u32 {
        let i = pi as usize;
        if self.single[i] == u32::MAX {
            self.single[i] = self.members.len() as u32;
            self.members.push(pi);
        }
        self.single[i]
    }

    /// The (offset, len) of a group of switch `sw - n_hosts` holding `ports`.
    fn add(&mut self, sw: usize, ports: impl Iterator<Item = u32>) -> (u32, u32) {
        self.cand.clear();
        self.cand.extend(ports);
        match self.cand.len() {
            0 => (0, 0),
            1 => (self.single(self.cand[0]), 1),
            len => {
                let (off, l) = self.last_multi[sw];
                if self.members[off as usize..(off + l) as usize] == self.cand[..] {
                    (off, l)
                } else {
                    let off = self.members.len() as u32;
                    self.members.extend_from_slice(&self.cand);
                    self.last_multi[sw] = (off, len as u32);
                    (off, len as u32)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::preset;
    use crate::net::Net;

    /// Shared member lists give every (switch, host) exactly its min-hop
    /// ports, from a breadth-first search done here by hand, and take a
    /// few entries per switch instead of one list per group.
    #[test]
    fn shared_member_lists_hold_each_groups_min_hop_ports() {
        let net = Net::new(&preset("fat-tree").unwrap(), 1).unwrap();
        let (h, n) = (net.topo.n_hosts, net.topo.nodes.len());
        for dst in 0..h {
            // Hops to `dst`, hosts not transit.
            let mut dist = vec![u32::MAX; n];
            dist[dst] = 0;
            let mut frontier = vec![dst];
            while !frontier.is_empty() {
                let mut next = Vec::new();
                for u in frontier {
                    if u != dst && u < h {
                        continue;
                    }
                    for pi in net.node_ports[u]..net.node_ports[u + 1] {
                        let v = net.ports[pi as usize].peer_node as usize;
                        if dist[v] == u32::MAX {
                            dist[v] = dist[u] + 1;
                            next.push(v);
                        }
                    }
                }
                frontier = next;
            }
            for sw in h..n {
                let want: Vec<u32> = (net.node_ports[sw]..net.node_ports[sw + 1])
                    .filter(|&pi| {
                        let v = net.ports[pi as usize].peer_node as usize;
                        dist[v] + 1 == dist[sw] && (v >= h || v == dst)
                    })
                    .collect();
                assert_eq!(net.routing.group(sw as u32, dst as u32), &want[..]);
            }
        }
        let lists = net.routing.members.len();
        assert!(lists <= net.ports.len() + 16 * (n - h), "{lists} members");
    }

    /// The per-host search the build used to run for every host: the
    /// groups of every (switch, host) with links at `gone` ports removed
    /// and `unused` ports left out of their own switch's groups.
    fn reference(net: &Net, gone: &[bool], unused: &[bool]) -> Vec<Vec<u32>> {
        let (h, n) = (net.topo.n_hosts, net.topo.nodes.len());
        let mut out = Vec::new();
        for sw in h..n {
            for dst in 0..h {
                let mut dist = vec![u32::MAX; n];
                dist[dst] = 0;
                let mut queue = std::collections::VecDeque::from([dst]);
                while let Some(u) = queue.pop_front() {
                    if u != dst && u < h {
                        continue;
                    }
                    for pi in net.node_ports[u]..net.node_ports[u + 1] {
                        let v = net.ports[pi as usize].peer_node as usize;
                        if dist[v] == u32::MAX && !gone[pi as usize] {
                            dist[v] = dist[u] + 1;
                            queue.push_back(v);
                        }
                    }
                }
                out.push(if dist[sw] == u32::MAX {
                    Vec::new()
                } else {
                    (net.node_ports[sw]..net.node_ports[sw + 1])
                        .filter(|&pi| {
                            let v = net.ports[pi as usize].peer_node as usize;
                            dist[v] != u32::MAX
                                && dist[v] + 1 == dist[sw]
                                && (v >= h || v == dst)
                                && !gone[pi as usize]
                                && !unused[pi as usize]
                        })
                        .collect()
                });
            }
        }
        out
    }

    /// The build's one search per home switch gives exactly the groups of
    /// one search per host, on every built-in topology kind and an explicit
    /// mesh of switches, with random links gone (both ends) and
    /// random ports detected down by their own switch only.
    #[test]
    fn home_switch_searches_give_the_per_host_groups() {
        use crate::config::FabricSpec;
        let explicit = FabricSpec::from_toml(
            r#"
name = "dual"
[topology]
kind = "explicit"
nodes = [ { name = "a", kind = "host" }, { name = "b", kind = "host" },
          { name = "c", kind = "host" }, { name = "s1", kind = "switch" },
          { name = "s2", kind = "switch" }, { name = "s3", kind = "switch" } ]
links = [ { a = "a", b = "s1", gbps = 100 },
          { a = "b", b = "s2", gbps = 100 }, { a = "c", b = "s3", gbps = 100 },
          { a = "s1", b = "s3", gbps = 100 }, { a = "s2", b = "s3", gbps = 100 },
          { a = "s1", b = "s2", gbps = 100 } ]
"#,
        )
        .unwrap();
        let specs = [
            preset("fat-tree").unwrap(),
            preset("leaf-spine").unwrap(),
            preset("h100-rail-ib").unwrap(),
            preset("sandia-iwarp").unwrap(),
            explicit,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for spec in &specs {
            let net = Net::new(spec, 3).unwrap();
            let (h, n) = (net.topo.n_hosts, net.topo.nodes.len());
            let np = net.ports.len();
            // InfiniBand uses one member per destination: D-mod-K.
            if spec.is_infiniband() {
                let want = reference(&net, &vec![false; np], &vec![false; np]);
                for sw in h..n {
                    for dst in 0..h {
                        let g = &want[(sw - h) * h + dst];
                        let port = g[dst % g.len()];
                        assert_eq!(net.routing.group(sw as u32, dst as u32), &[port]);
                        assert_eq!(net.routing.next_port(sw as u32, 0, dst as u32, 1, 2), port);
                    }
                }
            }
            for round in 0..4 {
                let mut gone = vec![false; np];
                let mut unused = vec![false; np];
                if round > 0 {
                    for pi in 0..np {
                        x = crate::rng::splitmix64(x);
                        match x % 31 {
                            // A failed link: gone at both ends.
                            0 => {
                                gone[pi] = true;
                                gone[net.ports[pi].peer as usize] = true;
                            }
                            // Gone at one end only (a host's or a switch's).
                            1 => gone[pi] = true,
                            2 => unused[pi] = true,
                            _ => {}
                        }
                    }
                }
                let r = super::Routing::build_masked(
                    &net.topo,
                    &net.ports,
                    &net.node_ports,
                    3,
                    &gone,
                    &unused,
                );
                let want = reference(&net, &gone, &unused);
                for sw in h..n {
                    for dst in 0..h {
                        let g = &want[(sw - h) * h + dst];
                        let at = format!("{} round {round}: switch {sw}, host {dst}", spec.name);
                        assert_eq!(r.group(sw as u32, dst as u32), &g[..], "{at}");
                        // The packet path's lookup, HOME entries included.
                        let (sw32, dst32) = (sw as u32, dst as u32);
                        let port = match g.len() {
                            0 => super::NO_ROUTE,
                            1 => g[0],
                            len => g[r.pick(sw32, 5, dst32, 49_200, 4791, len)],
                        };
                        assert_eq!(r.next_port(sw32, 5, dst32, 49_200, 4791), port, "{at}");
                    }
                }
            }
        }
    }

    /// The tables grow with switches x edge switches: a 4,096-host
    /// leaf-spine (64 leaves, 8 spines) holds 72 x 64 groups, not 72 x
    /// 4,096, plus a class and a home group per host.
    #[test]
    fn tables_grow_with_edge_switches_not_hosts() {
        let spec = crate::config::FabricSpec::from_toml(
            r#"
name = "wide"
[topology]
kind = "leaf_spine"
spines = 8
leaves = 64
hosts_per_leaf = 64
host_link_gbps = 100
uplink_gbps = 100
links_per_pair = 1
[switch]
buffer_bytes = 268435456
"#,
        )
        .unwrap();
        let net = Net::new(&spec, 1).unwrap();
        let r = &net.routing;
        assert_eq!((r.n_classes, r.groups.len()), (64, 72 * 64));
        let members = r.members.len();
        assert!(members <= net.ports.len() + 72 * 8, "{members}");
        assert_eq!(r.table_bytes(), 72 * 64 * 8 + 4096 * (4 + 8) + members * 4);
    }
}
