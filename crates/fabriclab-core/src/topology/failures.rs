//! Link failures on the built graph: which links a `[[link_failures]]`
//! entry names, and whether the failures that stay down for good cut a
//! host off (refused on iWARP, whose TCP streams would retry for ever).
//!
//! The entries' own fields and the `[failover]` timing are checked in
//! `config/failures.rs`; what the network does when a link goes down is
//! `net/failures.rs`.

use super::Topology;
use crate::config::LinkFailure;
use crate::error::{fabric_err, Result};

/// The links a failure entry takes down: indices into `Topology::links`.
pub(crate) fn resolve(f: &LinkFailure, i: usize, topo: &Topology) -> Result<Vec<usize>> {
    let what = format!("link_failures[{i}] ({} - {})", f.a, f.b);
    let node = |name: &str| {
        topo.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| {
                crate::Error::InvalidFabric(format!(
                    "{what}: no node named {name:?}; `fabriclab fabric show` lists the hosts and \
                 switches"
                ))
            })
    };
    let (a, b) = (node(&f.a)?, node(&f.b)?);
    let links: Vec<usize> = topo
        .links
        .iter()
        .enumerate()
        .filter(|(_, l)| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
        .map(|(li, _)| li)
        .collect();
    if links.is_empty() {
        return fabric_err(format!("{what}: there is no link between these two nodes"));
    }
    if !(f.down_us.is_finite() && f.down_us >= 0.0) {
        return fabric_err(format!(
            "{what}: down_us must be a finite number, zero or positive, got {}",
            f.down_us
        ));
    }
    crate::config::time_us(&format!("{what}: down_us"), f.down_us)?;
    if let Some(up) = f.up_us {
        if !(up.is_finite() && up > f.down_us) {
            return fabric_err(format!(
                "{what}: up_us ({up}) must come after down_us ({})",
                f.down_us
            ));
        }
        crate::config::time_us(&format!("{what}: up_us"), up)?;
    }
    match f.index {
        None => Ok(links),
        Some(k) if (k as usize) < links.len() => Ok(vec![links[k as usize]]),
        Some(k) => fabric_err(format!(
            "{what}: index {k} but there are only {} parallel links (0..{})",
            links.len(),
            links.len() - 1
        )),
    }
}

/// Check every failure names a real link, and, on iWARP, that the links
/// that stay down for good leave every host able to reach every other one
/// (its TCP streams would retry for ever). On RoCE a host cut off for good
/// is a run that fails: its peers' QPs exhaust their retry count
/// (`nic.retry_cnt`) and their work completes in error.
pub(crate) fn validate(
    failures: &[LinkFailure],
    topo: &Topology,
    ib: bool,
    iwarp: bool,
) -> Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    if ib {
        return fabric_err(
            "link_failures are not modelled on InfiniBand fabrics (the subnet manager's \
             re-route is not modelled); remove [[link_failures]] or use an Ethernet transport",
        );
    }
    let mut gone = vec![false; topo.links.len()];
    // Per link, the failures that take it down: (down, up, entry).
    let mut down: Vec<Vec<(f64, f64, usize)>> = vec![Vec::new(); topo.links.len()];
    for (i, f) in failures.iter().enumerate() {
        let links = resolve(f, i, topo)?;
        for li in links {
            down[li].push((f.down_us, f.up_us.unwrap_or(f64::INFINITY), i));
            if f.up_us.is_none() {
                gone[li] = true;
            }
        }
    }
    for spans in &mut down {
        spans.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.2.cmp(&y.2)));
        if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
            let (a, b) = (&failures[w[0].2], &failures[w[1].2]);
            return fabric_err(format!(
                "link_failures[{}] and link_failures[{}] take the link {} - {} down at times that \
                 overlap (from {} us and from {} us); a link that is down cannot fail again: \
                 give the first an up_us before the second's down_us, or remove one",
                w[0].2, w[1].2, a.a, a.b, w[0].0, b.down_us
            ));
        }
    }
    if !iwarp {
        return Ok(());
    }
    if let Some((x, y)) = disconnected_pair(topo, &gone) {
        return fabric_err(format!(
            "the link failures without up_us cut {} off from {} for good (iWARP's TCP streams \
             would retry for ever); give one of those failures an up_us, or fail fewer links",
            topo.nodes[y].name, topo.nodes[x].name
        ));
    }
    Ok(())
}

/// Two hosts joined by the intact fabric with no path between them once
/// the `gone` links are removed (hosts have one link, so they are never
/// transit; on a rail-only fabric only hosts of one rail are joined).
fn disconnected_pair(topo: &Topology, gone: &[bool]) -> Option<(usize, usize)> {
    let comp = topo.components_without(gone);
    let islands = topo.host_islands();
    let mut first = std::collections::HashMap::new();
    (0..topo.n_hosts).find_map(|x| {
        let f = *first.entry(islands[x]).or_insert(x);
        (comp[x] != comp[f]).then_some((f, x))
    })
}
