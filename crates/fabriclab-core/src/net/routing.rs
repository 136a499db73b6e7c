//! Routing: shortest-path forwarding tables with ECMP groups, and the
//! per-switch-seeded ECMP hash.
//!
//! For every switch and destination host, the group holds every port whose
//! neighbour is one hop closer to the destination (hosts are never transit).
//! A packet picks a member by a hash of its 5-tuple (source and destination
//! address, UDP source port as entropy and UDP destination port 4791 for
//! RoCEv2; TCP source and destination ports for TCP) mixed with
//! the switch's own seed, derived from the run seed: without per-switch seeds
//! all tiers would make correlated choices (polarisation). InfiniBand
//! replaces each group by one port (`Routing::pin`, see `ib/routing.rs`).
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

pub(crate) struct Routing {
    n_hosts: usize,
    /// (offset, len) into `members` for [switch - n_hosts][dst host].
    groups: Vec<(u32, u32)>,
    members: Vec<u32>,
    /// Offset in `members` of each port's one-port list (u32::MAX: none).
    single: Vec<u32>,
    seeds: Vec<u64>,
}

impl Routing {
    pub fn build(topo: &Topology, ports: &[Port], node_ports: &[u32], seed: u64) -> Routing {
        Routing::build_masked(topo, ports, node_ports, seed, &[], &[])
    }

    /// Tables for a fabric whose links at ports with `global_down` set are
    /// gone for every switch, and whose switches do not use their own
    /// ports with `local_down` set (an empty slice: none).
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
        let mut groups = vec![(0u32, 0u32); (n - h) * h];
        // Groups share their member lists: a one-port list is the port's
        // (`single`), and a switch's group equal to its last many-port one
        // reuses it (a fat tree's up-groups are one list per switch), so
        // the members take little room at 16k hosts instead of a GB.
        let mut members = Vec::new();
        let mut single = vec![u32::MAX; ports.len()];
        let mut last_multi = vec![(0u32, 0u32); n - h];
        let mut cand = Vec::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for dst in 0..h {
            dist.fill(u32::MAX);
            dist[dst] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(u) = queue.pop_front() {
                if u != dst && u < h {
                    continue; // hosts are not transit
                }
                for pi in node_ports[u]..node_ports[u + 1] {
                    let v = ports[pi as usize].peer_node as usize;
                    if dist[v] == u32::MAX && !gone(pi) {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for sw in h..n {
                if dist[sw] == u32::MAX {
                    continue;
                }
                cand.clear();
                for pi in node_ports[sw]..node_ports[sw + 1] {
                    let v = ports[pi as usize].peer_node as usize;
                    if dist[v] != u32::MAX
                        && dist[v] + 1 == dist[sw]
                        && (v >= h || v == dst)
                        && !unused(pi)
                    {
                        cand.push(pi);
                    }
                }
                groups[(sw - h) * h + dst] = match cand.len() {
                    0 => (0, 0),
                    1 => (single_offset(&mut single, &mut members, cand[0]), 1),
                    len => {
                        let (off, l) = last_multi[sw - h];
                        if members[off as usize..(off + l) as usize] == cand[..] {
                            (off, l)
                        } else {
                            let off = members.len() as u32;
                            members.extend_from_slice(&cand);
                            last_multi[sw - h] = (off, len as u32);
                            (off, len as u32)
                        }
                    }
                };
            }
        }
        let seeds = (h..n)
            .map(|sw| splitmix64(seed ^ splitmix64(sw as u64)))
            .collect();
        Routing {
            n_hosts: h,
            groups,
            members,
            single,
            seeds,
        }
    }

    /// Make every group a single port, `pick(switch, dst, members)` (static
    /// routing: the members are the min-hop ports in port order).
    pub fn pin(&mut self, pick: impl Fn(usize, usize, &[u32]) -> u32) {
        let h = self.n_hosts;
        for (i, g) in self.groups.iter_mut().enumerate() {
            let (off, len) = (g.0 as usize, g.1 as usize);
            if len > 1 {
                let port = pick(h + i / h, i % h, &self.members[off..off + len]);
                *g = (single_offset(&mut self.single, &mut self.members, port), 1);
            }
        }
    }

    /// The egress port at switch `node` for a packet to `dst`.
    #[inline]
    pub fn next_port(&self, node: u32, src: u32, dst: u32, sport: u16, dport: u16) -> u32 {
        let sw = node as usize - self.n_hosts;
        let (off, len) = self.groups[sw * self.n_hosts + dst as usize];
        if len == 1 {
            return self.members[off as usize];
        }
        if len == 0 {
            return NO_ROUTE; // only after a link failure
        }
        let idx = self.pick(node, src, dst, sport, dport, len as usize);
        self.members[off as usize + idx]
    }

    /// The minimal next hops of switch `node` towards host `dst`.
    #[inline]
    pub fn group(&self, node: u32, dst: u32) -> &[u32] {
        let sw = node as usize - self.n_hosts;
        let (off, len) = self.groups[sw * self.n_hosts + dst as usize];
        &self.members[off as usize..(off + len) as usize]
    }

    /// The ECMP choice among `len` members: the flow's 5-tuple hashed with
    /// the switch's seed, scaled to 0..len.
    #[inline]
    pub fn pick(&self, node: u32, src: u32, dst: u32, sport: u16, dport: u16, len: usize) -> usize {
        let sw = node as usize - self.n_hosts;
        let key =
            ((src as u64) << 40) ^ ((dst as u64) << 16) ^ ((sport as u64) << 48) ^ dport as u64;
        let h = splitmix64(key ^ self.seeds[sw]);
        ((h as u128 * len as u128) >> 64) as usize
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

/// Where port `pi`'s one-port member list is, adding it the first time.
fn single_offset(single: &mut [u32], members: &mut Vec<u32>, pi: u32) -> u32 {
    if single[pi as usize] == u32::MAX {
        single[pi as usize] = members.len() as u32;
        members.push(pi);
    }
    single[pi as usize]
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
}
