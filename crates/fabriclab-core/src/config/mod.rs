//! Fabric descriptions: what a user writes in a fabric TOML file.
//!
//! A [`FabricSpec`] holds the link layer (`transport`: Ethernet with RoCEv2,
//! Ethernet with iWARP and its `[iwarp]` section, or InfiniBand with its
//! `[ib]` section), the topology (a leaf-spine
//! builder or an explicit node/link list), the switch model, the NIC model,
//! QoS, PFC, ECN, the congestion control and the hosts' TCP stack. Every
//! field has a documented default, so a file only states what differs. Parsing rejects unknown keys (a typo is an error, not
//! a silently ignored setting) and [`FabricSpec::validate`] rejects
//! impossible values with a message that names the field to change.

mod cc;
mod dyn_ecn;
mod failures;
mod fat_tree;
mod gpu;
mod ib;
mod iwarp;
pub mod memory;
mod mpi;
mod pfc_guard;
mod presets;
mod rail;
mod routing;
pub(crate) mod sim;
mod tcp;

pub use cc::{AlphaUpdate, CcAlgorithm, CcSpec, CnpScope, DcqcnParams};
pub use dyn_ecn::{DynamicEcnSpec, EcnMode};
pub use failures::{FailoverSpec, LinkFailure};
pub use fat_tree::FatTreeSpec;
pub use gpu::{GpuSpec, MAX_GPUS_PER_SERVER};
pub use ib::{IbCcSpec, IbSpec, Transport, IB_SWITCH_LATENCY_NS, MAX_VLS};
pub use iwarp::IwarpSpec;
pub use mpi::{MpiParams, MpiSpec, QpSharing, Rndv};
pub use pfc_guard::{DeadlockAction, DeadlockSpec, PfcStorm, WatchdogAction, WatchdogSpec};
pub use presets::{mark_edited_copy, preset, preset_names, preset_toml};
pub use rail::RailSpec;
pub use routing::{Ordering, RoutingMode, RoutingSpec};
pub use sim::{Backend, SimSpec, DEFAULT_FLOW_QUANTUM_NS};
pub use tcp::{TcpCc, TcpSpec};

use crate::error::{fabric_err, Error, Result};
use crate::wire::ROCE_MTUS;
use serde::{Deserialize, Serialize};

/// Propagation delay of light in fibre or copper, ns per metre (approx.).
pub const NS_PER_METRE: f64 = 5.0;

/// A whole fabric: topology plus the models of its parts.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// Short name (presets use it).
    #[serde(default)]
    pub name: String,
    /// Free text: what this fabric is and where its numbers come from.
    #[serde(default)]
    pub description: String,
    /// Link layer: "roce" (Ethernet, the default), "iwarp" (Ethernet with
    /// RDMA over offloaded TCP) or "infiniband".
    #[serde(default, skip_serializing_if = "Transport::is_roce")]
    pub transport: Transport,
    /// Nodes and links.
    pub topology: TopologySpec,
    /// Switch model.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// NIC model.
    #[serde(default)]
    pub nic: NicSpec,
    /// Priorities and egress scheduling.
    #[serde(default)]
    pub qos: QosSpec,
    /// Priority flow control.
    #[serde(default)]
    pub pfc: PfcSpec,
    /// ECN marking at the switches.
    #[serde(default)]
    pub ecn: EcnSpec,
    /// End-host congestion control.
    #[serde(default)]
    pub cc: CcSpec,
    /// The MPI library's host-side model (used by MPI workloads).
    #[serde(default)]
    pub mpi: MpiSpec,
    /// The hosts' TCP stack (used by TCP workloads such as iperf).
    #[serde(default)]
    pub tcp: TcpSpec,
    /// InfiniBand link layer, routing and congestion control (with
    /// `transport = "infiniband"`; absent = the defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib: Option<IbSpec>,
    /// iWARP's offloaded TCP and MPA framing (with `transport = "iwarp"`;
    /// absent = the defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iwarp: Option<IwarpSpec>,
    /// How fast the fabric reacts to link failures.
    #[serde(default, skip_serializing_if = "FailoverSpec::is_default")]
    pub failover: FailoverSpec,
    /// Cables pulled (and put back) during the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_failures: Vec<LinkFailure>,
    /// Host NICs that stop draining and pause their switch without end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pfc_storms: Vec<PfcStorm>,
    /// Next-hop choice: ECMP hashing or adaptive routing.
    #[serde(default, skip_serializing_if = "RoutingSpec::is_default")]
    pub routing: RoutingSpec,
    /// Simulation backend: packet-level (default) or flow-level.
    #[serde(default, skip_serializing_if = "SimSpec::is_default")]
    pub sim: SimSpec,
    /// GPU servers: the hosts are the NICs of servers of GPUs joined by
    /// NVLink (absent: plain hosts, one NIC each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSpec>,
}

/// The topology: a builder or an explicit list.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Two-tier leaf-spine (Clos). Hosts `h0..` in leaf order, switches
    /// `leaf0..` and `spine0..`.
    LeafSpine(LeafSpineSpec),
    /// Three-tier k-ary fat tree. Hosts `h0..` in edge order, switches
    /// `edge0..`, `agg0..` and `core0..`.
    FatTree(FatTreeSpec),
    /// Any graph: named nodes and the links between them.
    Explicit(ExplicitSpec),
    /// Rail-optimized leaf-spine of GPU servers (needs `[gpu]`): NIC j of
    /// every server of a scalable unit on rail leaf j.
    RailOptimized(RailSpec),
    /// Rail-only fabric of GPU servers (needs `[gpu]`): each rail its own
    /// leaves and spines, no switch between rails (NVLink joins them).
    RailOnly(RailSpec),
}

/// Parameters of the leaf-spine builder.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineSpec {
    /// Number of spine switches (0 is allowed with a single leaf).
    pub spines: u32,
    /// Number of leaf switches.
    pub leaves: u32,
    /// Hosts attached to each leaf.
    pub hosts_per_leaf: u32,
    /// Host-to-leaf link rate, Gb/s.
    pub host_link_gbps: f64,
    /// Leaf-to-spine link rate, Gb/s.
    pub uplink_gbps: f64,
    /// Parallel links between each leaf and each spine.
    #[serde(default = "one")]
    pub links_per_pair: u32,
    /// Host cable propagation delay, ns (default 10 ns, about 2 m).
    #[serde(default)]
    pub host_link_delay_ns: Option<f64>,
    /// Host cable length, m (alternative to the delay; 5 ns/m).
    #[serde(default)]
    pub host_cable_m: Option<f64>,
    /// Leaf-spine propagation delay, ns (default 50 ns, about 10 m).
    #[serde(default)]
    pub uplink_delay_ns: Option<f64>,
    /// Leaf-spine cable length, m (alternative to the delay).
    #[serde(default)]
    pub uplink_cable_m: Option<f64>,
}

fn one() -> u32 {
    1
}

/// An explicit topology.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitSpec {
    /// Nodes, hosts and switches.
    pub nodes: Vec<NodeSpec>,
    /// Point-to-point full-duplex links.
    pub links: Vec<LinkSpec>,
}

/// Whether a node is a host (with a NIC) or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An end host with one RDMA NIC port.
    Host,
    /// A switch.
    Switch,
}

/// A named node of an explicit topology.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
}

/// A full-duplex link of an explicit topology.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// One end (node name).
    pub a: String,
    /// The other end (node name).
    pub b: String,
    /// Rate, Gb/s.
    pub gbps: f64,
    /// Propagation delay, ns (default 10).
    #[serde(default)]
    pub delay_ns: Option<f64>,
}

/// How a switch forwards a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forwarding {
    /// Forward once the whole packet is in (adds one serialisation per hop).
    StoreAndForward,
    /// Forward once the headers are in; the egress never finishes before
    /// the ingress does.
    CutThrough,
}

/// The switch model.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SwitchSpec {
    /// Port-to-port latency (pipeline, lookup), ns.
    pub latency_ns: f64,
    /// Store-and-forward or cut-through.
    pub forwarding: Forwarding,
    /// Shared packet buffer of the whole switch, bytes.
    pub buffer_bytes: u64,
    /// Guaranteed (reserved) bytes per (ingress port, priority).
    pub reserve_bytes: u64,
    /// PFC headroom per ingress port, bytes; `None` = derived from the link
    /// (two cable delays of data, two maximum frames, a pause frame and the
    /// IEEE worst-case response time of 394 quanta).
    pub headroom_bytes: Option<u64>,
    /// Dynamic threshold: shared limit = free shared buffer >> shift
    /// (3 means alpha = 1/8).
    pub dt_shift: u32,
    /// Hysteresis for RESUME: resume when use + this <= threshold.
    pub resume_offset_bytes: u64,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        SwitchSpec {
            latency_ns: 300.0,
            forwarding: Forwarding::CutThrough,
            buffer_bytes: 16 * 1024 * 1024,
            reserve_bytes: 4096,
            headroom_bytes: None,
            dt_shift: 3,
            resume_offset_bytes: 3072,
        }
    }
}

/// The RDMA NIC model.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicSpec {
    /// From a posted work request to its first byte on the wire, ns
    /// (doorbell, WQE fetch, DMA read, pipeline).
    pub tx_latency_ns: f64,
    /// From the last byte in to data placed / completion visible, ns.
    pub rx_latency_ns: f64,
    /// RoCE path MTU (payload per packet): 256, 512, 1024, 2048 or 4096.
    pub roce_mtu: u32,
    /// Frames carry an 802.1Q tag (PCP-based PFC) when true.
    pub vlan: bool,
    /// Coalescing: the responder ACKs every this many packets and at the
    /// end of every message.
    pub ack_every_packets: u32,
    /// Local ACK timeout exponent: timeout = 4.096 us x 2^exponent; 0 is
    /// infinite (no transport timer: a lost tail is never retransmitted),
    /// as the IB spec and verbs define it.
    pub ack_timeout_exponent: u32,
    /// RC transport retry count (verbs' `retry_cnt`, 0..7): after this
    /// many retransmissions on timeout with no progress, the next timeout
    /// puts the QP in the error state and its work completes in error.
    pub retry_cnt: u32,
    /// RNR retry count (verbs' `rnr_retry`, 0..7, 7 = for ever). Accepted
    /// for completeness: receive buffers are always posted in this model,
    /// so no RNR NAK is ever sent.
    pub rnr_retry: u32,
    /// The order in which the NIC serves its QPs that may send: "ring"
    /// (first come, first served) or "cyclic" (creation order, as the
    /// ns-3 HPCC simulator's NIC).
    pub qp_arbitration: QpArbitration,
    /// Host time between two work requests one thread posts, ns: building
    /// the WQE in `ibv_post_send` and ringing the doorbell (no inline data,
    /// no post lists). perftest's bandwidth tests post from one thread per
    /// side, so a small message's rate is at most 1 / post_send_ns; 0 =
    /// no limit. The first post of an idle thread costs nothing here (it
    /// is in `tx_latency_ns`). Default 194 ns, calibrated: 5.15 Mpps, the
    /// median of five published `ib_write_bw` outputs at 2 B with one QP
    /// and perftest's defaults on ConnectX NICs at 100-400G (4.02-6.90
    /// Mpps; `docs/architecture.md`, "Message rate"). Used by perftest;
    /// MPI, NCCL, fio and flows have their own host costs.
    pub post_send_ns: f64,
}

/// The order in which a NIC serves its QPs that may send now
/// (`net/ready.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QpArbitration {
    /// First come, first served; a QP that sent goes to the back.
    #[default]
    Ring,
    /// Creation order, from the QP after the last one that sent (the ns-3
    /// HPCC simulator's NIC).
    Cyclic,
}

impl Default for NicSpec {
    fn default() -> Self {
        NicSpec {
            tx_latency_ns: 500.0,
            rx_latency_ns: 300.0,
            roce_mtu: 1024,
            vlan: false,
            ack_every_packets: 16,
            ack_timeout_exponent: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            qp_arbitration: QpArbitration::Ring,
            post_send_ns: 194.0,
        }
    }
}

/// Priorities and egress scheduling.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QosSpec {
    /// Priority of RDMA data (and of the hosts' QPs unless a workload
    /// says otherwise).
    pub data_priority: u8,
    /// Priority of ACK, NAK and CNP packets.
    pub control_priority: u8,
    /// Priorities served by strict priority (highest number first) before
    /// the DWRR classes.
    pub strict_priorities: Vec<u8>,
    /// DWRR weights of the 8 priorities (used by the non-strict ones).
    pub dwrr_weights: [u32; 8],
    /// DWRR quantum per unit of weight, bytes.
    pub dwrr_quantum_bytes: u32,
}

impl Default for QosSpec {
    fn default() -> Self {
        QosSpec {
            data_priority: 3,
            control_priority: 6,
            strict_priorities: vec![7, 6],
            dwrr_weights: [1; 8],
            dwrr_quantum_bytes: 4500,
        }
    }
}

/// Priority flow control (IEEE 802.1Qbb).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfcSpec {
    /// PFC on the lossless priorities.
    pub enabled: bool,
    /// The lossless priorities.
    pub priorities: Vec<u8>,
    /// Pause time in an XOFF frame, in quanta of 512 bit times (1..65535).
    pub pause_quanta: u32,
    /// Deadlock detection (on by default: 1 ms, stop the run).
    #[serde(skip_serializing_if = "DeadlockSpec::is_default")]
    pub deadlock: DeadlockSpec,
    /// The switches' PFC watchdog; absent = off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<WatchdogSpec>,
}

impl Default for PfcSpec {
    fn default() -> Self {
        PfcSpec {
            enabled: true,
            priorities: vec![3],
            pause_quanta: 65535,
            deadlock: DeadlockSpec::default(),
            watchdog: None,
        }
    }
}

/// RED-style ECN marking on the egress queues of the ECN-enabled
/// priorities (by default the lossless ones). RoCE data is always
/// ECN-capable; TCP segments only when their congestion control is DCTCP.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EcnSpec {
    /// Marking on.
    pub enabled: bool,
    /// Priorities whose egress queues mark; `None` = the lossless ones
    /// (`pfc.priorities` when PFC is on) and, with DCQCN on RoCE, the RoCE
    /// data priority (lossy RoCE included). List the TCP priority for
    /// DCTCP; `[]` marks nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priorities: Option<Vec<u8>>,
    /// Below this egress queue depth, never mark (bytes).
    pub kmin_bytes: u64,
    /// Above this depth, always mark (bytes).
    pub kmax_bytes: u64,
    /// Marking probability at Kmax.
    pub pmax: f64,
    /// "static" (the thresholds above for the whole run) or "dynamic"
    /// (retuned per queue at run time, starting from them).
    #[serde(skip_serializing_if = "is_static")]
    pub mode: EcnMode,
    /// The dynamic controller's settings (`mode = "dynamic"` only).
    #[serde(skip_serializing_if = "DynamicEcnSpec::is_default")]
    pub dynamic: DynamicEcnSpec,
}

fn is_static(m: &EcnMode) -> bool {
    *m == EcnMode::Static
}

impl Default for EcnSpec {
    fn default() -> Self {
        // The DCQCN paper's 5 KB / 200 KB / 1 %.
        EcnSpec {
            enabled: true,
            priorities: None,
            kmin_bytes: 5_000,
            kmax_bytes: 200_000,
            pmax: 0.01,
            mode: EcnMode::Static,
            dynamic: DynamicEcnSpec::default(),
        }
    }
}

/// The key of `[topology]` whose value a deserializer's message quotes
/// ("invalid value: integer `-4`, expected u32", "invalid type: string
/// \"two\", expected u32"), if exactly one has it.
fn topology_key_of(text: &str, msg: &str) -> Option<String> {
    let string = msg
        .strip_prefix("invalid type: string \"")
        .and_then(|rest| rest.split('"').next());
    let quoted = match string {
        Some(s) => s,
        None => msg.split('`').nth(1)?,
    };
    let doc: toml::Table = toml::from_str(text).ok()?;
    let topo = doc.get("topology")?.as_table()?;
    // An unknown key is named by the message itself.
    if msg.starts_with("unknown field `") && topo.contains_key(quoted) {
        return Some(quoted.to_string());
    }
    // A string where a number belongs is one of the table's strings (a
    // number of the same digits elsewhere in the table is not it).
    let same = |v: &toml::Value| match v {
        toml::Value::Integer(i) => string.is_none() && quoted.parse::<i64>().is_ok_and(|q| q == *i),
        toml::Value::Float(f) => string.is_none() && quoted.parse::<f64>().is_ok_and(|q| q == *f),
        toml::Value::String(s) => string.is_some() && s == quoted,
        _ => false,
    };
    let mut keys = topo.iter().filter(|(_, v)| same(v)).map(|(k, _)| k);
    let key = keys.next()?;
    keys.next().is_none().then(|| key.clone())
}

impl FabricSpec {
    /// Parse a fabric from TOML text (a leading byte-order mark is skipped).
    ///
    /// This parses and checks each section's values
    /// ([`FabricSpec::check_sections`]); [`FabricSpec::from_toml`], in the
    /// topology layer, also checks the graph.
    pub fn parse_toml(text: &str) -> Result<FabricSpec> {
        // A UTF-8 byte-order mark, as some Windows editors write, is not TOML.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut spec: FabricSpec = toml::from_str(text).map_err(|e| {
            // `[topology]` is read whole (its `kind` picks the layout), so
            // a bad value there is reported at the table: name its key.
            let msg = e.message();
            if let Some(key) = topology_key_of(text, msg) {
                return Error::Parse(format!(
                    "fabric TOML: [topology] {key}: {}",
                    crate::error::toml_types_in_words(msg)
                ));
            }
            Error::Parse(format!(
                "fabric TOML: {}",
                crate::error::toml_types_in_words(e.to_string().trim_end()).replace('\n', "\n  ")
            ))
        })?;
        ib::apply_defaults(&mut spec, text)?;
        spec.check_sections()?;
        Ok(spec)
    }

    /// The fabric as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a FabricSpec always serialises")
    }

    /// Check every section's values on their own (what needs the built
    /// graph, such as connectivity and the links failures name, is checked
    /// by [`FabricSpec::validate`] in the topology layer). The message names
    /// the field to change.
    pub fn check_sections(&self) -> Result<()> {
        match &self.topology {
            TopologySpec::LeafSpine(ls) => ls.validate()?,
            TopologySpec::FatTree(ft) => ft.validate()?,
            TopologySpec::Explicit(ex) => ex.validate()?,
            TopologySpec::RailOptimized(r) => r.validate(self.gpu.as_ref(), false)?,
            TopologySpec::RailOnly(r) => r.validate(self.gpu.as_ref(), true)?,
        }
        if let Some(g) = &self.gpu {
            g.validate()?;
        }
        self.mpi.validate()?;
        let sw = &self.switch;
        non_negative("switch.latency_ns", sw.latency_ns)?;
        if sw.buffer_bytes == 0 {
            return fabric_err("switch.buffer_bytes must be positive");
        }
        if sw.dt_shift > 16 {
            return fabric_err("switch.dt_shift must be between 0 and 16");
        }
        let nic = &self.nic;
        non_negative("nic.tx_latency_ns", nic.tx_latency_ns)?;
        non_negative("nic.rx_latency_ns", nic.rx_latency_ns)?;
        non_negative("nic.post_send_ns", nic.post_send_ns)?;
        check_mtu(nic.roce_mtu)?;
        if nic.ack_every_packets == 0 {
            return fabric_err("nic.ack_every_packets must be at least 1");
        }
        if nic.ack_timeout_exponent > 31 {
            return fabric_err(
                "nic.ack_timeout_exponent must be between 0 (no timeout) and 31 \
                 (4.096 us x 2^exponent)",
            );
        }
        for (field, v) in [
            ("nic.retry_cnt", nic.retry_cnt),
            ("nic.rnr_retry", nic.rnr_retry),
        ] {
            if v > 7 {
                return fabric_err(format!(
                    "{field} must be between 0 and 7 (a 3-bit field of the QP), got {v}"
                ));
            }
        }
        let q = &self.qos;
        for (field, p) in [
            ("qos.data_priority", q.data_priority),
            ("qos.control_priority", q.control_priority),
        ] {
            check_priority(field, p)?;
        }
        for &p in q.strict_priorities.iter().chain(&self.pfc.priorities) {
            check_priority("qos.strict_priorities / pfc.priorities", p)?;
        }
        for &p in self.ecn.priorities.iter().flatten() {
            check_priority("ecn.priorities", p)?;
        }
        if q.dwrr_quantum_bytes == 0 || q.dwrr_weights.contains(&0) {
            return fabric_err("qos.dwrr_weights and qos.dwrr_quantum_bytes must be positive");
        }
        if let Some(&w) = q
            .dwrr_weights
            .iter()
            .find(|&&w| w.checked_mul(q.dwrr_quantum_bytes).is_none())
        {
            return fabric_err(format!(
                "qos.dwrr_weights {w} x qos.dwrr_quantum_bytes {} is more than 4,294,967,295 bytes \
                 per round; use smaller weights or a smaller quantum",
                q.dwrr_quantum_bytes
            ));
        }
        if self.pfc.pause_quanta == 0 || self.pfc.pause_quanta > 65535 {
            return fabric_err("pfc.pause_quanta must be between 1 and 65535");
        }
        let e = &self.ecn;
        if !(0.0..=1.0).contains(&e.pmax) {
            return fabric_err(format!("ecn.pmax must be between 0 and 1, got {}", e.pmax));
        }
        if e.kmax_bytes < e.kmin_bytes {
            return fabric_err("ecn.kmax_bytes must be at least ecn.kmin_bytes");
        }
        e.dynamic.validate()?;
        if e.mode == EcnMode::Dynamic {
            if !e.enabled {
                return fabric_err(
                    "ecn.mode = \"dynamic\" needs ecn.enabled = true (there is nothing to tune)",
                );
            }
            if self.is_infiniband() {
                return fabric_err(
                    "ecn.mode = \"dynamic\" is for Ethernet fabrics; InfiniBand marks FECN \
                     with its own [ib.cc] thresholds",
                );
            }
            if e.kmin_bytes == 0 {
                return fabric_err(
                    "ecn.mode = \"dynamic\" scales ecn.kmin_bytes up and down; set it above 0",
                );
            }
        } else if !e.dynamic.is_default() {
            return fabric_err(
                "[ecn.dynamic] is set but ecn.mode is \"static\"; add mode = \"dynamic\" to [ecn]",
            );
        }
        self.cc.validate()?;
        self.tcp.validate()?;
        ib::validate(self)?;
        self.failover.validate()?;
        pfc_guard::validate(
            &self.pfc.deadlock,
            self.pfc.watchdog.as_ref(),
            &self.pfc_storms,
            self.pfc.enabled && !self.pfc.priorities.is_empty(),
            self.is_infiniband(),
        )?;
        self.routing.validate(self.is_infiniband())?;
        self.sim.validate()?;
        memory::check(self, None)
    }

    /// True when the links are InfiniBand.
    pub fn is_infiniband(&self) -> bool {
        self.transport == Transport::Infiniband
    }

    /// True when RDMA runs over offloaded TCP (iWARP) on Ethernet.
    pub fn is_iwarp(&self) -> bool {
        self.transport == Transport::Iwarp
    }

    /// The `[iwarp]` section in force (its defaults when absent).
    pub fn iwarp_spec(&self) -> IwarpSpec {
        self.iwarp.clone().unwrap_or_default()
    }

    /// The `[ib]` section in force (its defaults when absent).
    pub fn ib_spec(&self) -> IbSpec {
        self.ib.clone().unwrap_or_default()
    }
}

impl LeafSpineSpec {
    fn validate(&self) -> Result<()> {
        if self.leaves == 0 {
            return fabric_err("topology.leaves must be at least 1");
        }
        let hosts = self.leaves as u64 * self.hosts_per_leaf as u64;
        if hosts > fat_tree::MAX_HOSTS {
            return fabric_err(format!(
                "topology has {} leaves x {} hosts = {hosts} hosts, over the {} a fabric may \
                 have; use fewer leaves or hosts per leaf",
                self.leaves,
                self.hosts_per_leaf,
                fat_tree::MAX_HOSTS
            ));
        }
        if self.hosts_per_leaf == 0 {
            return fabric_err(
                "topology.hosts_per_leaf is 0: a fabric needs hosts; set it to at least 1",
            );
        }
        if self.leaves > 1 && self.spines == 0 {
            return fabric_err(format!(
                "topology has {} leaves but no spine, so hosts on different leaves are \
                 disconnected; set topology.spines to at least 1",
                self.leaves
            ));
        }
        if self.spines > 0 && self.links_per_pair == 0 {
            return fabric_err("topology.links_per_pair must be at least 1");
        }
        positive_rate("topology.host_link_gbps", self.host_link_gbps)?;
        if self.spines > 0 {
            positive_rate("topology.uplink_gbps", self.uplink_gbps)?;
        }
        for (a, b, what) in [
            (
                self.host_link_delay_ns,
                self.host_cable_m,
                "host_link_delay_ns / host_cable_m",
            ),
            (
                self.uplink_delay_ns,
                self.uplink_cable_m,
                "uplink_delay_ns / uplink_cable_m",
            ),
        ] {
            if a.is_some() && b.is_some() {
                return fabric_err(format!("topology: give only one of {what}"));
            }
            if let Some(v) = a.or(b) {
                non_negative(&format!("topology.{what}"), v)?;
            }
        }
        Ok(())
    }

    /// Host link propagation delay, ns.
    pub fn host_delay_ns(&self) -> f64 {
        self.host_link_delay_ns
            .or(self.host_cable_m.map(|m| m * NS_PER_METRE))
            .unwrap_or(10.0)
    }

    /// Leaf-spine propagation delay, ns.
    pub fn uplink_delay_ns(&self) -> f64 {
        self.uplink_delay_ns
            .or(self.uplink_cable_m.map(|m| m * NS_PER_METRE))
            .unwrap_or(50.0)
    }
}

impl ExplicitSpec {
    fn validate(&self) -> Result<()> {
        let mut names = std::collections::HashSet::new();
        for n in &self.nodes {
            if n.name.is_empty() {
                return fabric_err("topology.nodes: a node has an empty name");
            }
            // The command line's flow specs (SRC:DST:BYTES:via=SWITCH) and
            // host lists (h0,h1) split on these.
            if let Some(c) = n
                .name
                .chars()
                .find(|&c| matches!(c, ':' | ',' | '=') || c.is_whitespace())
            {
                return fabric_err(format!(
                    "topology.nodes: the name {:?} holds {c:?}, which flow specs and host lists \
                     use as a separator; rename it (letters, digits, '_', '-' and '.')",
                    n.name
                ));
            }
            if !names.insert(n.name.as_str()) {
                return fabric_err(format!(
                    "topology.nodes: the name {:?} is used twice",
                    n.name
                ));
            }
        }
        if !self.nodes.iter().any(|n| n.kind == NodeKind::Host) {
            return fabric_err("topology.nodes has no node of kind \"host\": a fabric needs hosts");
        }
        for l in &self.links {
            for end in [&l.a, &l.b] {
                if !names.contains(end.as_str()) {
                    return Err(Error::UnknownHost(format!(
                        "topology.links names {end:?}, which is not in topology.nodes"
                    )));
                }
            }
            if l.a == l.b {
                return fabric_err(format!("topology.links: {:?} is linked to itself", l.a));
            }
            positive_rate(&format!("topology.links {}-{} gbps", l.a, l.b), l.gbps)?;
            if let Some(d) = l.delay_ns {
                non_negative(&format!("topology.links {}-{} delay_ns", l.a, l.b), d)?;
            }
        }
        Ok(())
    }
}

pub(crate) fn check_mtu(mtu: u32) -> Result<()> {
    if !ROCE_MTUS.contains(&mtu) {
        return Err(Error::InvalidFabric(format!(
            "RoCE MTU {mtu} is not one of 256, 512, 1024, 2048, 4096 (a 9000 B Ethernet \
             MTU still gives a RoCE MTU of 4096)"
        )));
    }
    Ok(())
}

fn check_priority(field: &str, p: u8) -> Result<()> {
    if p > 7 {
        return fabric_err(format!("{field}: priority {p} is out of range 0..7"));
    }
    Ok(())
}

/// The longest time a setting may take, us: 1,000 s of simulated time,
/// beyond anything a run reaches (and far inside the engine's 213 days of
/// picoseconds, so sums of settings cannot wrap).
pub const MAX_SETTING_US: f64 = 1e9;

/// `v` (us) is a time a run can reach: finite, zero or positive, at most
/// [`MAX_SETTING_US`].
pub(crate) fn time_us(field: &str, v: f64) -> Result<()> {
    time_in(field, v, "us", 1.0)
}

/// [`time_us`] for a setting in ns.
pub(crate) fn time_ns(field: &str, v: f64) -> Result<()> {
    time_in(field, v, "ns", 1e3)
}

/// [`time_us`] for a setting in ms.
pub(crate) fn time_ms(field: &str, v: f64) -> Result<()> {
    time_in(field, v, "ms", 1e-3)
}

/// `v` in `unit`, of which `per_us` make a microsecond.
fn time_in(field: &str, v: f64, unit: &str, per_us: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return fabric_err(format!(
            "{field} must be a finite number, zero or positive, got {v}"
        ));
    }
    let max = MAX_SETTING_US * per_us;
    if v > max {
        return fabric_err(format!(
            "{field} = {} {unit} is longer than any run (at most {max:e} {unit}); \
             use a shorter time",
            show_f64(v)
        ));
    }
    Ok(())
}

/// A number for a message: plain, or in exponent form when huge or tiny
/// (1e300 would print as 301 digits, 1e-300 as 300 zeros).
pub(crate) fn show_f64(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn positive_rate(field: &str, gbps: f64) -> Result<()> {
    if !(gbps.is_finite() && gbps > 0.0) {
        return fabric_err(format!(
            "{field} must be a positive rate in Gb/s, got {gbps}"
        ));
    }
    if gbps < 1e-6 {
        return fabric_err(format!(
            "{field} = {gbps} Gb/s is below 1 kb/s, slower than any link modelled"
        ));
    }
    if gbps > 1.0e5 {
        return fabric_err(format!("{field} = {gbps} Gb/s is beyond any real link"));
    }
    Ok(())
}

/// A latency (ns) or a cable length (m): finite, zero or positive, and no
/// more than 10^12 (1,000 s, or a cable no run could use).
fn non_negative(field: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v >= 0.0) {
        return fabric_err(format!(
            "{field} must be a finite number, zero or positive, got {v}"
        ));
    }
    if v > MAX_SETTING_US * 1e3 {
        return fabric_err(format!(
            "{field} = {} is beyond anything a run can reach (at most 1e12); use a smaller value",
            show_f64(v)
        ));
    }
    Ok(())
}
