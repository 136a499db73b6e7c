//! Topology: the plain graph a fabric spec describes, checked for
//! connectivity before any simulation state is built.
//!
//! Builders (leaf-spine, fat tree) and explicit lists both end as a list of named
//! nodes and full-duplex links with a rate and a propagation delay. Hosts
//! have exactly one link (one NIC port); multi-homed hosts are not modelled.

pub(crate) mod failures;
mod validate;

use crate::config::{FabricSpec, FatTreeSpec, GpuSpec, NodeKind, RailSpec, TopologySpec};
use crate::error::{fabric_err, Error, Result};
use crate::units::{Rate, Time};
use std::collections::HashMap;

/// A node of the built topology.
#[derive(Clone, Debug)]
pub struct TopoNode {
    /// Name (`h0`, `leaf0`, ...).
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
}

/// A full-duplex link between two nodes.
#[derive(Clone, Debug)]
pub struct TopoLink {
    /// Index of one end in `Topology::nodes`.
    pub a: usize,
    /// Index of the other end.
    pub b: usize,
    /// Rate of each direction.
    pub rate: Rate,
    /// Propagation delay of each direction.
    pub delay: Time,
}

/// The built graph.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Nodes; hosts first, in host order, then switches.
    pub nodes: Vec<TopoNode>,
    /// Links.
    pub links: Vec<TopoLink>,
    /// Number of hosts (they are `nodes[0..n_hosts]`).
    pub n_hosts: usize,
    /// NICs per GPU server with `[gpu]` (hosts s x this .. are server s's
    /// NICs), else 0.
    pub server_nics: usize,
}

/// The k-ary fat tree of `config/fat_tree.rs`: hosts, then edge,
/// aggregation and core switches.
fn fat_tree(ft: &FatTreeSpec) -> Topology {
    let half = (ft.k / 2) as usize;
    let pods = ft.k as usize;
    let hpe = ft.hosts_per_edge() as usize;
    let (edges, aggs, cores) = (pods * half, pods * half, half * half);
    let hosts = edges * hpe;
    let mut nodes: Vec<TopoNode> = (0..hosts)
        .map(|h| TopoNode {
            name: format!("h{h}"),
            kind: NodeKind::Host,
        })
        .collect();
    for (prefix, n) in [("edge", edges), ("agg", aggs), ("core", cores)] {
        nodes.extend((0..n).map(|i| TopoNode {
            name: format!("{prefix}{i}"),
            kind: NodeKind::Switch,
        }));
    }
    let edge = |e: usize| hosts + e;
    let agg = |a: usize| hosts + edges + a;
    let core = |c: usize| hosts + edges + aggs + c;
    let host_rate = Rate::from_gbps_f64(ft.host_link_gbps);
    let fab_rate = Rate::from_gbps_f64(ft.fabric_gbps());
    let d = |v: Option<f64>, default: f64| Time::from_ns_f64(v.unwrap_or(default));
    let (d_host, d_ea, d_ac) = (
        d(ft.host_link_delay_ns, 10.0),
        d(ft.edge_agg_delay_ns, 50.0),
        d(ft.agg_core_delay_ns, 100.0),
    );
    let link = |a, b, rate, delay| TopoLink { a, b, rate, delay };
    let mut links: Vec<TopoLink> = (0..hosts)
        .map(|h| link(h, edge(h / hpe), host_rate, d_host))
        .collect();
    for p in 0..pods {
        for i in 0..half {
            for j in 0..half {
                links.push(link(edge(p * half + i), agg(p * half + j), fab_rate, d_ea));
            }
        }
        for j in 0..half {
            for c in 0..half {
                links.push(link(agg(p * half + j), core(j * half + c), fab_rate, d_ac));
            }
        }
    }
    Topology {
        nodes,
        links,
        n_hosts: hosts,
        server_nics: 0,
    }
}

/// The rail builders of `config/rail.rs`: hosts (NICs) in server order,
/// then the rail leaves of each SU, then the spines. Rail-optimized: every
/// leaf links to every spine (`spine{k}`). Rail-only: each rail has its
/// own spines (`rail{j}.spine{k}`), linked to that rail's leaves only.
fn rail_fabric(r: &RailSpec, rails: u32, rail_only: bool) -> Topology {
    let (servers, rails) = (r.servers as usize, rails as usize);
    let su = r.su_size() as usize;
    let sus = r.sus() as usize;
    let hosts = servers * rails;
    let spines = r.spines as usize;
    let mut nodes: Vec<TopoNode> = (0..hosts)
        .map(|h| TopoNode {
            name: format!("h{h}"),
            kind: NodeKind::Host,
        })
        .collect();
    let switch = |name: String| TopoNode {
        name,
        kind: NodeKind::Switch,
    };
    for u in 0..sus {
        nodes.extend((0..rails).map(|j| switch(format!("su{u}.rail{j}"))));
    }
    if rail_only {
        for j in 0..rails {
            nodes.extend((0..spines).map(|k| switch(format!("rail{j}.spine{k}"))));
        }
    } else {
        nodes.extend((0..spines).map(|k| switch(format!("spine{k}"))));
    }
    let leaf = |u: usize, j: usize| hosts + u * rails + j;
    // Spine k as seen from rail j's leaves.
    let spine =
        |j: usize, k: usize| hosts + sus * rails + if rail_only { j * spines + k } else { k };
    let d = |v: Option<f64>, default: f64| Time::from_ns_f64(v.unwrap_or(default));
    let nic_rate = Rate::from_gbps_f64(r.nic_gbps);
    let up_rate = Rate::from_gbps_f64(r.uplink());
    let (d_host, d_up) = (d(r.host_link_delay_ns, 10.0), d(r.uplink_delay_ns, 50.0));
    let mut links: Vec<TopoLink> = (0..hosts)
        .map(|h| TopoLink {
            a: h,
            b: leaf(h / rails / su, h % rails),
            rate: nic_rate,
            delay: d_host,
        })
        .collect();
    for u in 0..sus {
        for j in 0..rails {
            for k in 0..spines {
                for _ in 0..r.links_per_pair {
                    links.push(TopoLink {
                        a: leaf(u, j),
                        b: spine(j, k),
                        rate: up_rate,
                        delay: d_up,
                    });
                }
            }
        }
    }
    Topology {
        nodes,
        links,
        n_hosts: hosts,
        server_nics: 0,
    }
}

/// Group the hosts into GPU servers of `[gpu]` (`config/gpu.rs`): the
/// builders' hosts are renamed `h{s}.nic{j}`; an explicit topology keeps
/// its names. The hosts must fill whole servers.
fn name_gpu_hosts(topo: &mut Topology, g: &GpuSpec, t: &TopologySpec) -> Result<()> {
    let nics = g.nics() as usize;
    if topo.n_hosts % nics != 0 {
        return fabric_err(format!(
            "the topology has {} hosts (NICs), not a whole number of GPU servers of \
             gpu.nics_per_server = {nics}; make the host count a multiple of {nics}",
            topo.n_hosts
        ));
    }
    topo.server_nics = nics;
    if !matches!(t, TopologySpec::Explicit(_)) {
        for h in 0..topo.n_hosts {
            topo.nodes[h].name = GpuSpec::nic_name((h / nics) as u32, (h % nics) as u32);
        }
    }
    Ok(())
}

impl Topology {
    /// Build and check the topology of a spec.
    pub fn build(spec: &FabricSpec) -> Result<Topology> {
        let topo = match &spec.topology {
            TopologySpec::LeafSpine(ls) => {
                let mut nodes = Vec::new();
                let hosts = (ls.leaves * ls.hosts_per_leaf) as usize;
                for h in 0..hosts {
                    nodes.push(TopoNode {
                        name: format!("h{h}"),
                        kind: NodeKind::Host,
                    });
                }
                for l in 0..ls.leaves {
                    nodes.push(TopoNode {
                        name: format!("leaf{l}"),
                        kind: NodeKind::Switch,
                    });
                }
                for s in 0..ls.spines {
                    nodes.push(TopoNode {
                        name: format!("spine{s}"),
                        kind: NodeKind::Switch,
                    });
                }
                let leaf = |l: u32| hosts + l as usize;
                let spine = |s: u32| hosts + ls.leaves as usize + s as usize;
                let host_rate = Rate::from_gbps_f64(ls.host_link_gbps);
                let host_delay = Time::from_ns_f64(ls.host_delay_ns());
                let mut links = Vec::new();
                for h in 0..hosts {
                    links.push(TopoLink {
                        a: h,
                        b: leaf(h as u32 / ls.hosts_per_leaf),
                        rate: host_rate,
                        delay: host_delay,
                    });
                }
                if ls.spines > 0 {
                    let up_rate = Rate::from_gbps_f64(ls.uplink_gbps);
                    let up_delay = Time::from_ns_f64(ls.uplink_delay_ns());
                    for l in 0..ls.leaves {
                        for s in 0..ls.spines {
                            for _ in 0..ls.links_per_pair {
                                links.push(TopoLink {
                                    a: leaf(l),
                                    b: spine(s),
                                    rate: up_rate,
                                    delay: up_delay,
                                });
                            }
                        }
                    }
                }
                Topology {
                    nodes,
                    links,
                    n_hosts: hosts,
                    server_nics: 0,
                }
            }
            TopologySpec::FatTree(ft) => fat_tree(ft),
            TopologySpec::RailOptimized(r) | TopologySpec::RailOnly(r) => {
                let nics = spec.gpu.as_ref().map_or(1, |g| g.nics());
                let rail_only = matches!(spec.topology, TopologySpec::RailOnly(_));
                rail_fabric(r, nics, rail_only)
            }
            TopologySpec::Explicit(ex) => {
                // Hosts first (in the order given), then switches.
                let mut order: Vec<usize> = (0..ex.nodes.len())
                    .filter(|&i| ex.nodes[i].kind == NodeKind::Host)
                    .collect();
                let n_hosts = order.len();
                order.extend((0..ex.nodes.len()).filter(|&i| ex.nodes[i].kind == NodeKind::Switch));
                let nodes: Vec<TopoNode> = order
                    .iter()
                    .map(|&i| TopoNode {
                        name: ex.nodes[i].name.clone(),
                        kind: ex.nodes[i].kind,
                    })
                    .collect();
                let index: HashMap<&str, usize> = nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.name.as_str(), i))
                    .collect();
                let links = ex
                    .links
                    .iter()
                    .map(|l| TopoLink {
                        a: index[l.a.as_str()],
                        b: index[l.b.as_str()],
                        rate: Rate::from_gbps_f64(l.gbps),
                        delay: Time::from_ns_f64(l.delay_ns.unwrap_or(10.0)),
                    })
                    .collect();
                Topology {
                    nodes,
                    links,
                    n_hosts,
                    server_nics: 0,
                }
            }
        };
        let mut topo = topo;
        if let Some(g) = &spec.gpu {
            name_gpu_hosts(&mut topo, g, &spec.topology)?;
        }
        topo.check()?;
        Ok(topo)
    }

    fn check(&self) -> Result<()> {
        let mut degree = vec![0usize; self.nodes.len()];
        for l in &self.links {
            degree[l.a] += 1;
            degree[l.b] += 1;
            if self.nodes[l.a].kind == NodeKind::Host && self.nodes[l.b].kind == NodeKind::Host {
                return fabric_err(format!(
                    "hosts {} and {} are linked directly; put a switch between them",
                    self.nodes[l.a].name, self.nodes[l.b].name
                ));
            }
        }
        for (h, &deg) in degree.iter().enumerate().take(self.n_hosts) {
            match deg {
                0 => {
                    return fabric_err(format!(
                        "host {} has no link; connect it to a switch",
                        self.nodes[h].name
                    ))
                }
                1 => {}
                n => {
                    return fabric_err(format!(
                        "host {} has {n} links; a host has exactly one NIC port",
                        self.nodes[h].name
                    ))
                }
            }
        }
        // Every host must reach every other host (through switches); on
        // GPU servers, every NIC of its rail (NVLink joins the rails).
        let comp = self.components();
        let rails = self.server_nics.max(1);
        let first = |h: usize| h % rails; // the first host of h's rail
        if let Some(h) = (1..self.n_hosts).find(|&h| comp[h] != comp[first(h)]) {
            let rail = if self.server_nics > 0 {
                " of its rail"
            } else {
                ""
            };
            return fabric_err(format!(
                "host {} cannot reach host {}{rail}: the fabric is disconnected; add links \
                 between their switches",
                self.nodes[h].name,
                self.nodes[first(h)].name
            ));
        }
        Ok(())
    }

    /// The island of each host: hosts with the same number are joined by
    /// switches. One island, except on rail-only fabrics (one per rail).
    pub fn host_islands(&self) -> Vec<u32> {
        let comp = self.components();
        comp[..self.n_hosts].iter().map(|&c| c as u32).collect()
    }

    /// An error unless switches join every pair of `hosts` (on a rail-only
    /// fabric: unless they are NICs of one rail). For a job's host list.
    pub fn check_joined(&self, hosts: &[u32]) -> Result<()> {
        let Some(&first) = hosts.first() else {
            return Ok(());
        };
        let islands = self.host_islands();
        match hosts
            .iter()
            .find(|&&h| islands[h as usize] != islands[first as usize])
        {
            Some(&h) => Err(self.unjoined(first, h)),
            None => Ok(()),
        }
    }

    /// The error for two hosts no switch path joins.
    pub(crate) fn unjoined(&self, a: u32, b: u32) -> Error {
        let name = |h: u32| &self.nodes[h as usize].name;
        Error::InvalidArgument(format!(
            "no network path between {} and {}: on this rail-only fabric no switch joins \
             two rails (NVLink does, which only NCCL's PXN uses); pick hosts on one rail \
             (h{{s}}.nic{{j}} with the same j) or a rail-optimized fabric",
            name(a),
            name(b)
        ))
    }

    fn components(&self) -> Vec<usize> {
        self.components_without(&[])
    }

    /// The connected component of each node once the links with `gone`
    /// set are removed (an empty slice: none).
    pub(crate) fn components_without(&self, gone: &[bool]) -> Vec<usize> {
        let n = self.nodes.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for (li, l) in self.links.iter().enumerate() {
            if !gone.get(li).copied().unwrap_or(false) {
                let (ra, rb) = (find(&mut parent, l.a), find(&mut parent, l.b));
                parent[ra] = rb;
            }
        }
        (0..n).map(|i| find(&mut parent, i)).collect()
    }

    /// Host names in host order.
    pub fn host_names(&self) -> Vec<String> {
        self.nodes[..self.n_hosts]
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }

    /// Node index of a switch by name, or an error naming a few that exist.
    pub fn switch_index(&self, name: &str) -> Result<usize> {
        if let Some(i) = self.nodes[self.n_hosts..]
            .iter()
            .position(|n| n.name == name)
        {
            return Ok(self.n_hosts + i);
        }
        Err(Error::InvalidArgument(format!(
            "the fabric has no switch {name:?}; its switches are {}",
            self.switch_families()
        )))
    }

    /// The switches by family of name (the name less its trailing digits:
    /// leaves, spines, edge, aggregation and core switches): a family
    /// numbered in order as its first and last name and count ("leaf0..leaf3
    /// (4)"), any other by its first names and count. At most eight
    /// families are listed.
    fn switch_families(&self) -> String {
        // Per family: its stem, first names, count, and whether its
        // numbers run on by one from the first.
        struct Fam<'a> {
            stem: &'a str,
            names: Vec<&'a str>,
            last: &'a str,
            count: u64,
            in_order: bool,
        }
        let number = |name: &str, stem: &str| name[stem.len()..].parse::<u64>().ok();
        let mut fams: Vec<Fam> = Vec::new();
        for n in &self.nodes[self.n_hosts..] {
            let stem = n.name.trim_end_matches(|c: char| c.is_ascii_digit());
            match fams.iter_mut().find(|f| f.stem == stem) {
                Some(f) => {
                    let next = number(f.last, stem).map(|k| k + 1);
                    f.in_order &= next.is_some() && next == number(&n.name, stem);
                    if f.names.len() < 3 {
                        f.names.push(&n.name);
                    }
                    f.last = &n.name;
                    f.count += 1;
                }
                None => fams.push(Fam {
                    stem,
                    names: vec![&n.name],
                    last: &n.name,
                    count: 1,
                    in_order: number(&n.name, stem).is_some(),
                }),
            }
        }
        if fams.is_empty() {
            return "none (it has no switches)".into();
        }
        let mut out: Vec<String> = fams
            .iter()
            .take(8)
            .map(|f| match f.count {
                1 => f.names[0].to_string(),
                k if f.in_order => format!("{}..{} ({k})", f.names[0], f.last),
                k if f.names.len() as u64 == k => f.names.join(", "),
                k => format!("{}, ... ({k})", f.names.join(", ")),
            })
            .collect();
        if fams.len() > 8 {
            out.push(format!("and {} more families", fams.len() - 8));
        }
        out.join(", ")
    }

    /// Index of a host by name, or an error listing what exists.
    pub fn host_index(&self, name: &str) -> Result<usize> {
        // Builders name hosts h0, h1, ... in order: try that first (a
        // million flows look their hosts up), then search.
        if let Some(i) = name.strip_prefix('h').and_then(|d| d.parse::<usize>().ok()) {
            if i < self.n_hosts && self.nodes[i].name == name {
                return Ok(i);
            }
        }
        // GPU servers' NICs: h{s}.nic{j}.
        if let Some((s, j)) = name
            .strip_prefix('h')
            .and_then(|r| r.split_once(".nic"))
            .and_then(|(s, j)| Some((s.parse::<usize>().ok()?, j.parse::<usize>().ok()?)))
        {
            let i = s * self.server_nics + j;
            if j < self.server_nics && i < self.n_hosts && self.nodes[i].name == name {
                return Ok(i);
            }
        }
        self.nodes[..self.n_hosts]
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| {
                let first: Vec<&str> = self.nodes[..self.n_hosts.min(4)]
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect();
                Error::UnknownHost(format!(
                    "the fabric has no host {name:?}; its {} hosts are {}{}",
                    self.n_hosts,
                    first.join(", "),
                    if self.n_hosts > 4 {
                        format!(", ..., {}", self.nodes[self.n_hosts - 1].name)
                    } else {
                        String::new()
                    }
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::preset;

    #[test]
    fn leaf_spine_names_hosts_in_leaf_order() {
        let t = Topology::build(&preset("heps").unwrap()).unwrap();
        assert_eq!(t.n_hosts, 32);
        assert_eq!(t.nodes[0].name, "h0");
        assert_eq!(t.nodes[32].name, "leaf0");
        assert_eq!(t.nodes[40].name, "spine0");
        // h4 is the first host of leaf1.
        assert_eq!(t.nodes[t.links[4].b].name, "leaf1");
        // 32 host links + 8 leaves x 2 spines x 2 parallel links.
        assert_eq!(t.links.len(), 32 + 32);
    }

    #[test]
    fn unknown_host_error_lists_the_hosts() {
        let t = Topology::build(&preset("heps").unwrap()).unwrap();
        let e = t.host_index("h99").unwrap_err().to_string();
        assert!(
            e.contains("h99") && e.contains("h0") && e.contains("h31"),
            "{e}"
        );
    }
}
