//! An MPI job: how many ranks, on which hosts, how many per host, and in
//! which order (mpirun's `-np`, `--host`, `--map-by ppr:K:node` / `slot`
//! or `node`).
//!
//! Block placement fills each host with `ppn` ranks before the next
//! (ranks 0..ppn-1 on the first host); round-robin deals ranks over the
//! hosts one at a time (rank i on host i mod n), as `--map-by node` does.
//! Without an explicit host list the job takes the fabric's first hosts in
//! order (h0, h1, ...), as many as it needs.

use crate::error::{arg_err, Result};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// Rank order over hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Fill a host before moving on (`--map-by slot`).
    #[default]
    Block,
    /// One rank per host in turn (`--map-by node`).
    RoundRobin,
}

impl Placement {
    /// Parse "block" or "round_robin" (also "rr", "node", "slot").
    pub fn parse(s: &str) -> Result<Placement> {
        match s.to_ascii_lowercase().replace('-', "_").as_str() {
            "block" | "slot" => Ok(Placement::Block),
            "round_robin" | "rr" | "node" => Ok(Placement::RoundRobin),
            _ => arg_err(format!(
                "placement {s:?} is unknown; use \"block\" (or \"slot\") or \"round_robin\" \
                 (or \"node\", \"rr\")"
            )),
        }
    }
}

/// What the user asks for: the job fields every MPI tool shares, nested
/// as `job` in each tool's options (IMB, OSU, Cbench, HPL), so that they
/// are declared and checked in one place.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Number of ranks (`-np`). Every tool but HPL requires it; HPL's
    /// default is its largest process grid.
    #[serde(default)]
    pub np: Option<u32>,
    /// Ranks per host (default 1).
    #[serde(default)]
    pub ppn: Option<u32>,
    /// Hosts to use, by name (default: the fabric's first hosts).
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    /// Rank order.
    #[serde(default)]
    pub placement: Placement,
}

/// A placed job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Host index of every rank.
    pub rank_host: Vec<u32>,
    /// Ranks per host asked for.
    pub ppn: u32,
    /// The hosts used, in the order given.
    pub hosts: Vec<u32>,
}

impl JobSpec {
    /// `np` ranks with the defaults of everything else.
    pub fn with_np(np: u32) -> JobSpec {
        JobSpec {
            np: Some(np),
            ..JobSpec::default()
        }
    }

    /// The number of ranks asked for (at least 1).
    pub fn np(&self) -> Result<u32> {
        match self.np {
            None => arg_err("-np is required: give the number of ranks"),
            Some(0) => arg_err("-np must be at least 1"),
            Some(n) => Ok(n),
        }
    }
}

impl Job {
    /// Place `spec` on `topo`; errors say what to change.
    pub fn place(topo: &Topology, spec: &JobSpec) -> Result<Job> {
        let np = spec.np()?;
        let ppn = spec.ppn.unwrap_or(1);
        if ppn == 0 {
            return arg_err("--ppn must be at least 1");
        }
        let hosts: Vec<u32> = match &spec.hosts {
            Some(names) => {
                if names.is_empty() {
                    return arg_err("--hosts is empty; name at least one host");
                }
                let mut v = Vec::with_capacity(names.len());
                for n in names {
                    let h = topo.host_index(n.trim())? as u32;
                    if v.contains(&h) {
                        return arg_err(format!("host {n} is listed twice in --hosts"));
                    }
                    v.push(h);
                }
                v
            }
            None => {
                let need = np.div_ceil(ppn) as usize;
                if need > topo.n_hosts {
                    return arg_err(format!(
                        "-np {} at {} per host needs {} hosts but the fabric has {}; \
                         raise --ppn to at least {} or lower -np",
                        np,
                        ppn,
                        need,
                        topo.n_hosts,
                        np.div_ceil(topo.n_hosts as u32)
                    ));
                }
                (0..need as u32).collect()
            }
        };
        topo.check_joined(&hosts)?;
        let slots = hosts.len() as u64 * ppn as u64;
        if np as u64 > slots {
            return arg_err(format!(
                "-np {} needs {} slots but {} hosts x {} per host give {}; \
                 raise --ppn or add hosts",
                np,
                np,
                hosts.len(),
                ppn,
                slots
            ));
        }
        let rank_host = (0..np)
            .map(|r| match spec.placement {
                Placement::Block => hosts[(r / ppn) as usize],
                Placement::RoundRobin => hosts[(r as usize) % hosts.len()],
            })
            .collect();
        Ok(Job {
            rank_host,
            ppn,
            hosts,
        })
    }

    /// Number of ranks.
    pub fn np(&self) -> u32 {
        self.rank_host.len() as u32
    }
}
