//! What a fabric will need in memory, estimated from its description
//! before anything is built, so that a fabric too large for the machine
//! is refused with the figure instead of failing half-way (or swapping).
//!
//! Counted: the routing tables (one ECMP group per switch and edge switch,
//! a class and a home group per host; the member lists are shared, one
//! per port and about one many-port list per switch in a leaf-spine or fat
//! tree, and counted at worst, one per group, for explicit topologies, whose
//! edge switches are counted at worst too, every switch), the ports (one per link end, with their queues' empty
//! state, and the conservation audit's counters when it is on), the NICs
//! and node names. Left out: what workloads allocate
//! (QPs, flows, MPI ranks), which grows with the run, not the fabric.

use super::{FabricSpec, NodeKind, TopologySpec};
use crate::error::{fabric_err, Result};

/// Bytes of one link end: the engine's port with its empty queues (1,216
/// bytes; `net/port.rs` asserts it fits) and the link's records beside it
/// (topology, peer and routing member; measured: `tests/fabric_memory.rs`
/// holds the estimate to what building a fabric allocates).
pub(crate) const PORT_BYTES: u64 = 1_312;
/// Bytes of a routing group entry.
const GROUP_BYTES: u64 = 8;
/// Bytes of a routing group member.
const MEMBER_BYTES: u64 = 4;
/// Bytes of a host's routing class.
const CLASS_BYTES: u64 = 4;
/// Bytes per node: name, NIC or MMU state.
const NODE_BYTES: u64 = 256;

/// Switches that hosts attach to (the routing tables' destination
/// classes); every switch for an explicit topology.
fn edge_switches(spec: &FabricSpec) -> u64 {
    match &spec.topology {
        TopologySpec::LeafSpine(ls) => ls.leaves as u64,
        TopologySpec::FatTree(ft) => ft.k as u64 * (ft.k as u64 / 2),
        TopologySpec::RailOptimized(r) | TopologySpec::RailOnly(r) => {
            r.sus() as u64 * spec.gpu.as_ref().map_or(1, |g| g.nics()) as u64
        }
        TopologySpec::Explicit(_) => counts(spec).1,
    }
}

/// (hosts, switches, links, mean ECMP group size) of a fabric description.
fn counts(spec: &FabricSpec) -> (u64, u64, u64, u64) {
    match &spec.topology {
        TopologySpec::LeafSpine(ls) => {
            let hosts = ls.leaves as u64 * ls.hosts_per_leaf as u64;
            let switches = ls.leaves as u64 + ls.spines as u64;
            let links = hosts.saturating_add(
                (ls.leaves as u64 * ls.spines as u64)
                    .saturating_mul(ls.links_per_pair.max(1) as u64),
            );
            (
                hosts,
                switches,
                links,
                (ls.spines as u64)
                    .saturating_mul(ls.links_per_pair.max(1) as u64)
                    .max(1),
            )
        }
        TopologySpec::FatTree(ft) => {
            let k = ft.k as u64;
            let hosts = ft.hosts();
            let switches = k * k + k * k / 4;
            let links = hosts.saturating_add((k * (k / 2)).saturating_mul(k));
            (hosts, switches, links, (k / 2).max(1))
        }
        TopologySpec::RailOptimized(r) | TopologySpec::RailOnly(r) => {
            let rails = spec.gpu.as_ref().map_or(1, |g| g.nics()) as u64;
            let hosts = r.servers as u64 * rails;
            let leaves = r.sus() as u64 * rails;
            let up = r.spines as u64 * r.links_per_pair.max(1) as u64;
            let spines = match spec.topology {
                TopologySpec::RailOnly(_) => r.spines as u64 * rails,
                _ => r.spines as u64,
            };
            (
                hosts,
                leaves.saturating_add(spines),
                hosts.saturating_add(leaves.saturating_mul(up)),
                up.max(1),
            )
        }
        TopologySpec::Explicit(ex) => {
            let hosts = ex.nodes.iter().filter(|n| n.kind == NodeKind::Host).count() as u64;
            let switches = ex.nodes.len() as u64 - hosts;
            (hosts, switches, ex.links.len() as u64, 2)
        }
    }
}

/// Estimated bytes the fabric needs once built (with the audit's counters
/// when `FABRICLAB_AUDIT` turns it on).
pub fn estimate_bytes(spec: &FabricSpec) -> u64 {
    let audit = spec.sim.backend == super::Backend::Packet && super::sim::audit_enabled_by_env();
    estimate_bytes_with(spec, audit)
}

/// [`estimate_bytes`] with the audit on or off.
fn estimate_bytes_with(spec: &FabricSpec, audit: bool) -> u64 {
    let (hosts, switches, links, group) = counts(spec);
    let classes = edge_switches(spec);
    let lists = match spec.topology {
        TopologySpec::Explicit(_) => switches.saturating_mul(classes),
        _ => switches,
    };
    let tables = switches
        .saturating_mul(classes)
        .saturating_mul(GROUP_BYTES)
        .saturating_add(hosts.saturating_mul(CLASS_BYTES + GROUP_BYTES))
        .saturating_add(lists.saturating_mul(group.saturating_mul(MEMBER_BYTES)))
        .saturating_add(links.saturating_mul(2 * MEMBER_BYTES));
    // The conservation audit's counters, when it is on (packet runs).
    let audit = if audit {
        super::sim::AUDIT_PORT_BYTES
    } else {
        0
    };
    tables
        .saturating_add(links.saturating_mul(2 * (PORT_BYTES + audit)))
        .saturating_add(hosts.saturating_add(switches).saturating_mul(NODE_BYTES))
}

/// Memory a run may still take, bytes: the least of Linux's MemAvailable,
/// what the cgroup's limit leaves (cgroup v2 `memory.max` less
/// `memory.current`: a Slurm job or a container gets its own limit, not the
/// node's), what the process's address-space limit leaves (`ulimit -v`,
/// `RLIMIT_AS`, less the address space in use) and `FABRICLAB_MEMORY_LIMIT`
/// when set (bytes, or with a K, M or G suffix in powers of 1000). None
/// where none of them is known.
pub fn available_bytes() -> Option<u64> {
    available_bytes_beside(0)
}

/// [`available_bytes`] for a run that already holds `held` bytes of what
/// it counts (an MPI job's compiled schedules): the machine's, the
/// cgroup's and the address space's figures are what is free now plus
/// those bytes, since they are in use already; `FABRICLAB_MEMORY_LIMIT`
/// is the run's whole budget and stays as it is.
pub fn available_bytes_beside(held: u64) -> Option<u64> {
    let mem = proc_bytes("/proc/meminfo", "MemAvailable:");
    let cg = || -> Option<u64> {
        let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
        let max = read("memory.max")?.trim().parse::<u64>().ok()?;
        let cur = read("memory.current")?.trim().parse::<u64>().unwrap_or(0);
        Some(max.saturating_sub(cur))
    };
    let user = std::env::var("FABRICLAB_MEMORY_LIMIT").ok().and_then(|v| {
        let x = parse_limit(&v);
        if x.is_none() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "fabriclab: warning: FABRICLAB_MEMORY_LIMIT={v:?} is not a size (use bytes \
                     or a number with K, M or G); ignored"
                )
            });
        }
        x
    });
    let rlimit = || -> Option<u64> {
        let limit = address_space_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)?;
        Some(limit.saturating_sub(proc_bytes("/proc/self/status", "VmSize:")?))
    };
    least_beside([mem, cg(), rlimit()], user, held)
}

/// The least of the free figures `free` (each raised by `held`) and the
/// budget `user`.
fn least_beside(free: [Option<u64>; 3], user: Option<u64>, held: u64) -> Option<u64> {
    free.into_iter()
        .flatten()
        .map(|f| f.saturating_add(held))
        .chain(user)
        .min()
}

/// The `key: N kB` line of a `/proc` file, in bytes.
fn proc_bytes(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let kb = text
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The soft "Max address space" of a `/proc/self/limits` text, bytes; None
/// when unlimited or absent.
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()
}

/// `FABRICLAB_MEMORY_LIMIT`'s value: bytes, or a number with K, M or G
/// (powers of 1000); None when it is not one.
fn parse_limit(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1e3),
        (i, 'm' | 'M') => (&v[..i], 1e6),
        (i, 'g' | 'G') => (&v[..i], 1e9),
        _ => (v, 1.0),
    };
    let x = num.trim().parse::<f64>().ok()? * mul;
    (0.0..1.8e19).contains(&x).then_some(x as u64)
}

/// An error naming the estimate when the fabric would need more than
/// `limit` bytes (default: the memory available now).
pub fn check(spec: &FabricSpec, limit: Option<u64>) -> Result<()> {
    let need = estimate_bytes(spec);
    let Some(have) = limit.or_else(available_bytes) else {
        return Ok(());
    };
    if need > have {
        let (hosts, switches, links, _) = counts(spec);
        // Products past u64 saturate: say so rather than print 2^64 - 1.
        let count = |x: u64| {
            if x == u64::MAX {
                "over 1.8e19".to_string()
            } else {
                x.to_string()
            }
        };
        let need = if need == u64::MAX {
            "more memory than any machine has".to_string()
        } else {
            format!("about {} GB", crate::numfmt::fmt_g(need as f64 / 1e9, 3))
        };
        return fabric_err(format!(
            "this fabric ({} hosts, {} switches, {} links) needs {need} to build \
             (routing tables of every switch towards every edge switch, ports), more than the {:.1} GB \
             available; use fewer hosts, switches or links (or a machine with more memory)",
            count(hosts),
            count(switches),
            count(links),
            have as f64 / 1e9
        ));
    }
    Ok(())
}

/// An error naming the estimate when a workload (`what`, e.g. "a million
/// flows") would need more than `limit` bytes (default: the memory
/// available now), before it allocates.
pub fn check_workload(need: u64, what: &str, limit: Option<u64>) -> Result<()> {
    let Some(have) = limit.or_else(available_bytes) else {
        return Ok(());
    };
    if need > have {
        return crate::error::arg_err(format!(
            "{what} need about {:.1} GB once connected (queue pairs, messages, results), \
             more than the {:.1} GB available; run fewer at a time (or on a machine with \
             more memory)",
            need as f64 / 1e9,
            have as f64 / 1e9
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_space_limit_is_read_from_proc_limits() {
        let header =
            "Limit                     Soft Limit           Hard Limit           Units     \n";
        let set = format!(
            "{header}Max stack size            8388608              unlimited            bytes     \n\
             Max address space         6442450944           unlimited            bytes     \n"
        );
        assert_eq!(address_space_limit(&set), Some(6 << 30));
        let unlimited =
            format!("{header}Max address space         unlimited            unlimited            bytes     \n");
        assert_eq!(address_space_limit(&unlimited), None);
        assert_eq!(address_space_limit(header), None);
    }

    fn leaf_spine(leaves: u32, hosts: u32, spines: u32) -> FabricSpec {
        FabricSpec::from_toml(&format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nhosts_per_leaf = {hosts}\n\
             spines = {spines}\nhost_link_gbps = 100\nuplink_gbps = 100\n"
        ))
        .unwrap()
    }

    #[test]
    fn estimate_by_hand() {
        // 2 leaves x 2 hosts, 1 spine: 4 hosts, 3 switches, 4 + 2 links;
        // a group per switch and leaf, a class and a home group per host,
        // a list per switch (of 1 member) and one per port.
        let spec = leaf_spine(2, 2, 1);
        let want = 3 * 2 * GROUP_BYTES
            + 4 * (CLASS_BYTES + GROUP_BYTES)
            + 3 * MEMBER_BYTES
            + 6 * 2 * MEMBER_BYTES
            + 6 * 2 * PORT_BYTES
            + 7 * NODE_BYTES;
        assert_eq!(estimate_bytes_with(&spec, false), want);
        // The audit keeps 7 x 8 counters of 8 bytes per port.
        assert_eq!(estimate_bytes_with(&spec, true), want + 6 * 2 * 448);
    }

    #[test]
    fn a_workload_over_the_limit_is_refused_with_the_estimate() {
        let e = check_workload(3_000_000_000, "1000000 flows", Some(2_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1000000 flows need about 3.0 GB") && e.contains("2.0 GB"),
            "{e}"
        );
        assert!(check_workload(3_000_000_000, "x", Some(3_000_000_000)).is_ok());
    }

    #[test]
    fn memory_held_already_counts_as_available_but_not_beyond_the_budget() {
        // 2 GB free and 1 GB held: 3 GB for the job, unless its budget
        // (FABRICLAB_MEMORY_LIMIT) is less; nothing known, nothing said.
        let g = 1_000_000_000;
        assert_eq!(
            least_beside([Some(2 * g), None, None], None, g),
            Some(3 * g)
        );
        assert_eq!(
            least_beside([Some(2 * g), Some(5 * g), None], Some(4 * g), g),
            Some(3 * g)
        );
        assert_eq!(
            least_beside([Some(8 * g), None, None], Some(4 * g), g),
            Some(4 * g)
        );
        assert_eq!(least_beside([None, None, None], None, g), None);
    }

    #[test]
    fn a_memory_limit_reads_bytes_and_decimal_suffixes() {
        assert_eq!(parse_limit("1500"), Some(1500));
        assert_eq!(parse_limit("2G"), Some(2_000_000_000));
        assert_eq!(parse_limit(" 0.5 m"), Some(500_000));
        assert_eq!(parse_limit("16k"), Some(16_000));
        for bad in ["", "G", "-1", "lots", "1e30", "nan"] {
            assert_eq!(parse_limit(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_fabric_over_the_limit_is_refused_with_the_estimate() {
        let spec = leaf_spine(512, 64, 64); // 32,768 hosts, 576 switches
        let need = estimate_bytes(&spec);
        assert!(need > 50_000_000, "{need}");
        let e = check(&spec, Some(need - 1)).unwrap_err().to_string();
        assert!(
            e.contains("needs about") && e.contains("32768 hosts"),
            "{e}"
        );
        assert!(check(&spec, Some(need)).is_ok());
    }
}
