//! Link failures: cables pulled (and put back) at given times, and how fast
//! the fabric reacts to them.
//!
//! A fabric may list `[[link_failures]]`: the link (or every parallel link)
//! between two named nodes goes down at `down_us` and, optionally, comes
//! back at `up_us`. `[failover]` sets the two reaction times the network
//! model uses (see `net/failures.rs`): `detect_us`, after which the two
//! switches at the ends of the link stop using it (loss of signal and
//! hardware ECMP member removal), and `converge_us`, after which the whole
//! fabric routes around it (routing-protocol withdrawal and FIB updates).
//!
//! Defaults, from `docs/reference.md` section 7 (approx.): detection 1 ms
//! ("sub-millisecond to a few ms"), convergence 100 ms ("tens to hundreds
//! of ms" for BGP withdrawal and FIB update).
//!
//! Not modelled: InfiniBand's subnet-manager re-route (failures are refused
//! on InfiniBand fabrics), BFD timers as such (set `detect_us` to 3 x the
//! BFD interval when the failure is not a loss of signal), partial failures
//! (one direction, errors without loss of signal).

use crate::error::{fabric_err, Result};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// How fast the fabric reacts to a link going down or coming back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailoverSpec {
    /// Time from the cable pull (or its return) until the two switches at
    /// its ends stop (or resume) using the link, us.
    pub detect_us: f64,
    /// Time from the cable pull (or its return) until every switch routes
    /// around it (or over it again), us. At least `detect_us`.
    pub converge_us: f64,
}

impl Default for FailoverSpec {
    fn default() -> Self {
        FailoverSpec {
            detect_us: 1_000.0,
            converge_us: 100_000.0,
        }
    }
}

/// One scheduled link failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFailure {
    /// One end of the link (a switch or host name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Which of the parallel links between `a` and `b` (0-based, in the
    /// order `fabriclab fabric show` lists them); absent = all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// When the link goes down, us from the start of the run.
    pub down_us: f64,
    /// When it comes back up, us; absent = it stays down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_us: Option<f64>,
}

impl FailoverSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == FailoverSpec::default()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        for (field, v) in [
            ("failover.detect_us", self.detect_us),
            ("failover.converge_us", self.converge_us),
        ] {
            super::time_us(field, v)?;
        }
        if self.converge_us < self.detect_us {
            return fabric_err(format!(
                "failover.converge_us ({}) must be at least failover.detect_us ({}): the \
                 rest of the fabric cannot learn of a failure before its own ends do",
                self.converge_us, self.detect_us
            ));
        }
        Ok(())
    }
}

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
            "{what}: down_us must be zero or positive, got {}",
            f.down_us
        ));
    }
    if let Some(up) = f.up_us {
        if !(up.is_finite() && up > f.down_us) {
            return fabric_err(format!(
                "{what}: up_us ({up}) must come after down_us ({})",
                f.down_us
            ));
        }
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
    for (i, f) in failures.iter().enumerate() {
        let links = resolve(f, i, topo)?;
        if f.up_us.is_none() {
            for li in links {
                gone[li] = true;
            }
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

/// Two hosts with no path between them once the `gone` links are removed
/// (hosts are not transit).
fn disconnected_pair(topo: &Topology, gone: &[bool]) -> Option<(usize, usize)> {
    let n = topo.nodes.len();
    let mut adj = vec![Vec::new(); n];
    for (li, l) in topo.links.iter().enumerate() {
        if !gone[li] {
            adj[l.a].push(l.b);
            adj[l.b].push(l.a);
        }
    }
    // Hosts never forward, so two hosts are connected iff their switches
    // are (or they share one): one search over switches from host 0's
    // side finds every host it reaches.
    let h = topo.n_hosts;
    let mut seen = vec![false; n];
    let mut stack = vec![0usize];
    seen[0] = true;
    while let Some(u) = stack.pop() {
        if u != 0 && u < h {
            continue;
        }
        for &v in &adj[u] {
            if !seen[v] {
                seen[v] = true;
                stack.push(v);
            }
        }
    }
    (1..h).find(|&x| !seen[x]).map(|x| (0, x))
}
