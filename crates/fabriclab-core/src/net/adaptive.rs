//! Adaptive routing: a switch places a packet on the least-loaded of its
//! minimal next hops instead of the one its ECMP hash names.
//!
//! Load is the bytes waiting in the candidate egress port's queue of the
//! packet's priority, then whether the port is sending, read at the moment
//! the packet is routed (what an adaptive-routing ASIC sees locally). Ties go to the first minimum
//! scanning from the member the ECMP hash names, so an idle fabric routes
//! exactly as ECMP does and equal queues do not all pull to one port.
//! Under strict ordering (`config/routing.rs`) a switch remembers, per
//! flow (5-tuple), the port it chose and when the flow's last packet
//! passed; the flow keeps that port until it has been idle for the flowlet
//! gap. Under relaxed ordering every packet is placed on its own.
//!
//! Left out: load on other switches (no remote congestion notification),
//! expiry of idle flow-table entries (the table keeps one entry per flow
//! and switch; a run's flows are bounded), and how much of the packet in
//! service on a port is left.

use super::routing::NO_ROUTE;
use super::Net;
use crate::config::{Ordering, RoutingMode, RoutingSpec};
use crate::units::Time;
use std::collections::HashMap;

/// A flow in a switch's flowlet table: its whole 5-tuple (the protocol
/// is the same for every flow of a fabric), so no two flows share an
/// entry. (It was once a 64-bit mix of the four fields that overlapped
/// from host 256 on: host 256's flow from port `p` and host 0's from
/// port `p + 1` to one destination shared a flowlet.)
type FlowKey = (u64, u32);

/// The flowlet-table key of a flow.
fn flow_key(src: u32, dst: u32, sport: u16, dport: u16) -> FlowKey {
    (
        (src as u64) << 32 | dst as u64,
        (sport as u32) << 16 | dport as u32,
    )
}

/// Adaptive-routing state of the switches.
pub(crate) struct Adaptive {
    /// Flowlet gap under strict ordering; `None` = relaxed.
    gap: Option<Time>,
    /// Per switch (index - hosts): flow -> (port, last packet).
    flowlets: Vec<HashMap<FlowKey, (u32, Time)>>,
}

impl Adaptive {
    /// The state for `spec`, or `None` when the fabric routes by ECMP.
    pub(crate) fn new(spec: &RoutingSpec, n_switches: usize) -> Option<Box<Adaptive>> {
        (spec.mode == RoutingMode::Adaptive).then(|| {
            Box::new(Adaptive {
                gap: (spec.ordering == Ordering::Strict)
                    .then(|| Time::from_ns_f64(spec.flowlet_gap_us * 1e3)),
                flowlets: vec![HashMap::new(); n_switches],
            })
        })
    }
}

impl Net {
    /// The egress port at switch `node` for a packet of priority `prio`,
    /// chosen by queue depth.
    #[inline(never)]
    pub(crate) fn adaptive_port(
        &mut self,
        node: u32,
        (src, dst, sport, dport): (u32, u32, u16, u16),
        prio: usize,
    ) -> u32 {
        let g = self.routing.group(node, dst);
        match g.len() {
            0 => return NO_ROUTE,
            1 => return g[0],
            _ => {}
        }
        let now = self.q.now();
        let ar = self.ar.as_mut().expect("adaptive routing on");
        let sw = node as usize - self.topo.n_hosts;
        // The flow's key in the flowlet table (strict ordering only).
        let key = ar.gap.map(|_| flow_key(src, dst, sport, dport));
        if let (Some(gap), Some(key)) = (ar.gap, key) {
            if let Some(&(port, last)) = ar.flowlets[sw].get(&key) {
                if now - last < gap && g.contains(&port) {
                    ar.flowlets[sw].insert(key, (port, now));
                    return port;
                }
            }
        }
        let start = self.routing.pick(node, src, dst, sport, dport, g.len());
        let mut best = g[start];
        let load = |p: &super::port::Port| p.prio[prio].qbytes * 2 + p.busy as u64;
        let mut best_load = load(&self.ports[best as usize]);
        for i in 1..g.len() {
            let pi = g[(start + i) % g.len()];
            let load = load(&self.ports[pi as usize]);
            if load < best_load {
                best = pi;
                best_load = load;
            }
        }
        if let Some(key) = key {
            ar.flowlets[sw].insert(key, (best, now));
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::flow_key;

    #[test]
    fn flows_of_hosts_past_255_keep_their_own_flowlets() {
        // The old key, src << 40 ^ dst << 16 ^ sport << 48 ^ dport, gave
        // these two flows one entry: host 256 from port 49152 and host 0
        // from port 49153, both to host 7 port 4791.
        assert_ne!(flow_key(256, 7, 49152, 4791), flow_key(0, 7, 49153, 4791));
        assert_ne!(flow_key(1, 2, 3, 4), flow_key(2, 1, 3, 4));
        assert_ne!(flow_key(1, 2, 3, 4), flow_key(1, 2, 4, 3));
        assert_eq!(flow_key(300, 9, 5, 6), flow_key(300, 9, 5, 6));
    }
}
