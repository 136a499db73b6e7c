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
//! first crosses NVLink to the GPU that owns it.

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
}

impl Comm {
    /// `servers` servers of `gpus` GPUs each on a fabric of GPU servers.
    pub fn new(topo: &Topology, g: &GpuSpec, servers: u32, gpus: u32) -> Result<Comm> {
        if servers == 0 || gpus == 0 {
            return arg_err("a communicator needs at least one server and one GPU per server");
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

    #[test]
    fn too_many_nodes_or_gpus_say_what_to_lower() {
        let (t, g) = rail_fabric(2);
        let e = Comm::new(&t, &g, 3, 8).unwrap_err().to_string();
        assert!(e.contains("--nodes") && e.contains("2 GPU servers"), "{e}");
        let e = Comm::new(&t, &g, 2, 9).unwrap_err().to_string();
        assert!(e.contains("--gpus-per-node"), "{e}");
    }
}
