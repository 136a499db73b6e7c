//! The fabric's link layer (`transport`) and the `[ib]` section of an
//! InfiniBand fabric.
//!
//! `transport = "infiniband"` at the top of a fabric file turns every link
//! into an InfiniBand link: credit-based flow control per virtual lane
//! instead of PFC, IB packet overheads, static destination-based routing
//! (D-mod-K) instead of ECMP, and optionally IB congestion control
//! (FECN/BECN and a congestion control table) instead of ECN and DCQCN.
//! The rest of the file keeps its meaning: `[topology]` rates are IB *data*
//! rates (after 8b/10b or 64b/66b, as IB quotes them: SDR 4x is 10 Gb/s of
//! signalling and 8 Gb/s of data, see `wire::IB_LINK_SPEEDS`), `[switch]
//! latency_ns` and `forwarding` are the IB switch's, `[nic]` latencies and
//! ACK settings the HCA's, `[qos]` arbitrates the egress (see below), `[mpi]`
//! is unchanged.
//!
//! On an InfiniBand fabric the Ethernet-only sections default to off when
//! the file leaves them out (`[pfc]`, `[ecn]`, `[cc]`) and `switch.latency_ns`
//! defaults to 100 ns (IB cut-through ASICs quote 90-130 ns); turning PFC,
//! ECN or DCQCN on, tagging VLANs, setting a RoCE MTU other than the
//! default or sizing the Ethernet shared-buffer MMU is an `InvalidFabric`
//! error naming what to use instead. The `[tcp]` section is ignored (TCP
//! workloads are refused: IPoIB is not modelled).
//!
//! Egress arbitration: a packet's priority (0..7, the QP's priority) is its
//! service level (SL); `sl_to_vl` maps it to a VL, whose credits and input
//! buffers are separate from every other VL's. Packets only carry SLs 0..7
//! (the `[qos]` priorities): the table's entries for SLs 8..15 are checked
//! but unused, and more than 8 VLs help only if SLs 0..7 map onto them. The port's scheduler is the
//! `[qos]` one over the packets' SLs (strict priorities, DWRR weights): with
//! the default identity map this is per-VL arbitration; IB's VL arbitration
//! tables (high/low weighted lists) are not modelled beyond that. ACK, NAK
//! and CNP packets use the SL `qos.control_priority` (real HCAs send them on
//! the QP's SL: map that SL to the data VL to share its credits).

use super::FabricSpec;
use crate::error::{fabric_err, Error, Result};
use crate::wire::{ib_wire_bytes, Ext, IB_CREDIT_BYTES, IB_MTUS};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Highest number of data VLs (VL0..VL14; VL15 carries subnet management,
/// which is not modelled).
pub const MAX_VLS: usize = 15;

/// The link layer of every link of a fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Ethernet with RoCEv2 (the default).
    #[default]
    Roce,
    /// InfiniBand.
    Infiniband,
    /// Ethernet with iWARP: RDMA over TCP offloaded to the NIC.
    Iwarp,
    /// A name that is neither (rejected by validation with a message).
    Unknown(String),
}

impl Transport {
    /// True for the default (Ethernet, RoCEv2).
    pub fn is_roce(&self) -> bool {
        *self == Transport::Roce
    }
}

impl Serialize for Transport {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Transport::Roce => "roce",
            Transport::Infiniband => "infiniband",
            Transport::Iwarp => "iwarp",
            Transport::Unknown(name) => name,
        })
    }
}

impl<'de> Deserialize<'de> for Transport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(match name.to_ascii_lowercase().as_str() {
            "roce" | "rocev2" | "ethernet" => Transport::Roce,
            "infiniband" | "ib" => Transport::Infiniband,
            "iwarp" => Transport::Iwarp,
            _ => Transport::Unknown(name),
        })
    }
}

/// The `[ib]` section: link layer, buffers and congestion control of an
/// InfiniBand fabric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IbSpec {
    /// IB MTU (payload per packet): 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
    /// Number of data VLs, 1..15.
    pub vls: u8,
    /// VL of each SL 0..15 (16 entries, each below `vls`); absent = SL mod
    /// `vls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sl_to_vl: Option<Vec<u8>>,
    /// Input buffer of a switch port per VL, bytes (advertised to the
    /// upstream port as credits of 64 B).
    pub switch_vl_buffer_bytes: u64,
    /// Receive buffer of an HCA per VL, bytes.
    pub hca_vl_buffer_bytes: u64,
    /// Rate at which an HCA moves received packets into host memory, Gb/s;
    /// absent = as fast as they arrive. A lower rate makes a slow receiver
    /// whose buffer fills and whose credits run out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hca_drain_gbps: Option<f64>,
    /// Congestion control (off by default).
    pub cc: IbCcSpec,
}

impl Default for IbSpec {
    fn default() -> Self {
        IbSpec {
            mtu: 4096,
            vls: 8,
            sl_to_vl: None,
            switch_vl_buffer_bytes: 32768,
            hca_vl_buffer_bytes: 32768,
            hca_drain_gbps: None,
            cc: IbCcSpec::default(),
        }
    }
}

/// IB congestion control (IBA 1.2.1 Annex A10), `[ib.cc]`.
///
/// Switch side (OpenSM `cc_sw_cong_setting_*`): a port VL whose output
/// queue holds at least `threshold_bytes` marks FECN on the data packets it
/// sends, one in every `marking_rate + 1` eligible packets, packets shorter
/// than `packet_size_credits` credits excepted; a port that is itself short
/// of credits is a victim and marks only with `victim_mask`. The IBA's
/// 4-bit threshold is left to the implementation to map to a depth; here it
/// is a depth in bytes.
///
/// HCA side (OpenSM `cc_ca_cong_setting_*`, QP-based control, Port_Control
/// bit 0 = 0): the receiver of a FECN-marked packet returns a BECN (a CNP)
/// to the sending QP, which raises its congestion control table index CCTI
/// by `ccti_increase` (up to `ccti_limit`); every `ccti_timer` x 1.024 us
/// the CCTI drops by one down to `ccti_min`. The table entry (shift,
/// multiplier) gives the inter-packet delay (max packet time >> shift) x
/// multiplier, as the Linux hfi1 driver computes it (`set_link_ipg`).
///
/// Where the defaults come from (checked 2026-11-29): OpenSM ships
/// congestion control off with every `cc_*` setting 0 and no table
/// (`osm_subn_set_default_opt`), so there is no subnet-manager default to
/// copy; `enabled = false` follows it. NVIDIA's Congestion Control Manager
/// plugin of MLNX_OFED (`ccmgr`) defaults to threshold 0xf, marking rate
/// 10, packet size 512 B (8 credits), CCTI increase 1, CCTI min 0, and a
/// timer and table computed from the fabric's size; the defaults here keep
/// increase 1 and min 0, mark every packet past a 16 KiB queue, and use
/// the table LLNL's study (`ib-cc-tools-llnl`) names the Mellanox default,
/// one of the four it swept. That table is coarse at the top: entries 0-16
/// send at the full rate, 17-23 at half (one packet time of delay), 24-29
/// at a third, so flows that need two thirds of a link each (three into
/// two) settle between a half and a third and leave a quarter to a half
/// of the links idle (about a third, measured on a 3-into-2 leaf-spine); set `cct` to a finer table (a shift of 1-3 halves the steps
/// each time) where that matters. The IBA text that fixes the delay's unit
/// was not at hand: the unit is hfi1's, one packet time of the path MTU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IbCcSpec {
    /// Congestion control on.
    pub enabled: bool,
    /// A port VL with at least this many bytes queued marks FECN.
    pub threshold_bytes: u64,
    /// Mean number of eligible packets between marks (0 marks them all).
    pub marking_rate: u32,
    /// Packets shorter than this many 64 B credits are never marked.
    pub packet_size_credits: u32,
    /// Credit-starved (victim) ports mark too.
    pub victim_mask: bool,
    /// CCTI increase per BECN.
    pub ccti_increase: u16,
    /// CCTI decrease timer, units of 1.024 us.
    pub ccti_timer: u16,
    /// Lowest CCTI.
    pub ccti_min: u16,
    /// Highest CCTI (must index the table).
    pub ccti_limit: u16,
    /// The congestion control table as (shift, multiplier) pairs; absent =
    /// 128 entries, shift 0, multiplier floor(7 i^2 / (0.218 x 95^2)) (the
    /// table LLNL's OpenSM congestion-control study calls the Mellanox
    /// default: no delay for the first 17 entries, then a quadratic rise to
    /// 57 MTU packet times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cct: Option<Vec<[u16; 2]>>,
}

impl Default for IbCcSpec {
    fn default() -> Self {
        IbCcSpec {
            enabled: false,
            threshold_bytes: 16384,
            marking_rate: 0,
            packet_size_credits: 1,
            victim_mask: false,
            ccti_increase: 1,
            ccti_timer: 20,
            ccti_min: 0,
            ccti_limit: 127,
            cct: None,
        }
    }
}

impl IbCcSpec {
    /// The congestion control table in use, as (shift, multiplier).
    pub fn table(&self) -> Vec<[u16; 2]> {
        self.cct.clone().unwrap_or_else(|| {
            (0..128u64)
                .map(|i| [0, ((7 * i * i) as f64 / (0.218 * 95.0 * 95.0)) as u16])
                .collect()
        })
    }
}

impl IbSpec {
    /// The VL of each of the 16 SLs.
    pub fn sl_to_vl(&self) -> [u8; 16] {
        let mut map = [0u8; 16];
        for (sl, vl) in map.iter_mut().enumerate() {
            *vl = match &self.sl_to_vl {
                Some(t) => t[sl],
                None => sl as u8 % self.vls.max(1),
            };
        }
        map
    }

    fn validate(&self) -> Result<()> {
        if !IB_MTUS.contains(&self.mtu) {
            return fabric_err(format!(
                "ib.mtu = {} is not an InfiniBand MTU; use 256, 512, 1024, 2048 or 4096",
                self.mtu
            ));
        }
        if !(1..=MAX_VLS as u8).contains(&self.vls) {
            return fabric_err(format!(
                "ib.vls = {} is out of range: InfiniBand has 1 to 15 data VLs (VL15 is \
                 reserved for subnet management)",
                self.vls
            ));
        }
        if let Some(t) = &self.sl_to_vl {
            if t.len() != 16 {
                return fabric_err(format!(
                    "ib.sl_to_vl has {} entries; give one VL for each of the 16 SLs",
                    t.len()
                ));
            }
            if let Some((sl, vl)) = t.iter().enumerate().find(|(_, &v)| v >= self.vls) {
                return fabric_err(format!(
                    "ib.sl_to_vl maps SL {sl} to VL {vl}, but ib.vls = {} (VLs 0..{}); \
                     lower the entry or raise ib.vls",
                    self.vls,
                    self.vls - 1
                ));
            }
        }
        // A VL buffer must hold the largest packet, or it never gets credits.
        let max_pkt = ib_wire_bytes(self.mtu, Ext::Reth) as u64;
        let need = max_pkt.div_ceil(IB_CREDIT_BYTES) * IB_CREDIT_BYTES;
        for (field, v) in [
            ("ib.switch_vl_buffer_bytes", self.switch_vl_buffer_bytes),
            ("ib.hca_vl_buffer_bytes", self.hca_vl_buffer_bytes),
        ] {
            if v < need {
                return fabric_err(format!(
                    "{field} = {v} cannot hold one {max_pkt} B packet of MTU {}; give at \
                     least {need} B (credits are 64 B blocks)",
                    self.mtu
                ));
            }
        }
        if let Some(g) = self.hca_drain_gbps {
            super::positive_rate("ib.hca_drain_gbps", g)?;
        }
        let cc = &self.cc;
        let len = cc.table().len();
        if len == 0 || len > 16384 {
            return fabric_err("ib.cc.cct must have between 1 and 16384 entries");
        }
        if let Some([s, m]) = cc.table().into_iter().find(|&[s, m]| s > 3 || m > 0x3fff) {
            return fabric_err(format!(
                "ib.cc.cct entry [{s}, {m}]: the shift is 2 bits (0..3) and the multiplier \
                 14 bits (0..16383)"
            ));
        }
        if cc.ccti_limit as usize >= len || cc.ccti_min > cc.ccti_limit {
            return fabric_err(format!(
                "ib.cc: need ccti_min <= ccti_limit < the table's {len} entries, got \
                 ccti_min = {}, ccti_limit = {}",
                cc.ccti_min, cc.ccti_limit
            ));
        }
        if cc.enabled && cc.ccti_timer == 0 {
            return fabric_err("ib.cc.ccti_timer must be at least 1 (units of 1.024 us)");
        }
        Ok(())
    }
}

/// Transport checks of [`FabricSpec::validate`].
pub(super) fn validate(spec: &FabricSpec) -> Result<()> {
    match &spec.transport {
        Transport::Unknown(name) => fabric_err(format!(
            "transport = {name:?} is unknown; use \"roce\" (Ethernet with RoCEv2, the \
             default), \"iwarp\" (Ethernet with RDMA over offloaded TCP) or \"infiniband\""
        )),
        _ if spec.iwarp.is_some() && spec.transport != Transport::Iwarp => fabric_err(
            "the [iwarp] section applies to iWARP fabrics only; add transport = \"iwarp\" at \
             the top of the file or remove [iwarp]",
        ),
        Transport::Iwarp => super::iwarp::validate(spec),
        Transport::Roce if spec.ib.is_some() => fabric_err(
            "the [ib] section applies to InfiniBand fabrics only; add transport = \
             \"infiniband\" at the top of the file or remove [ib]",
        ),
        Transport::Roce => Ok(()),
        Transport::Infiniband => {
            if spec.pfc.enabled {
                return fabric_err(
                    "[pfc] is Ethernet priority flow control, but this fabric is \
                     InfiniBand, which is lossless by credit-based flow control: remove \
                     [pfc] (or set pfc.enabled = false)",
                );
            }
            if spec.ecn.enabled {
                return fabric_err(
                    "[ecn] is Ethernet ECN marking, but this fabric is InfiniBand: remove \
                     [ecn] (or set ecn.enabled = false); InfiniBand's FECN/BECN congestion \
                     control is [ib.cc] enabled = true",
                );
            }
            if spec.cc.algorithm != super::CcAlgorithm::None {
                return fabric_err(
                    "[cc] algorithm = \"dcqcn\" is RoCE congestion control, but this fabric \
                     is InfiniBand: remove [cc] (or set cc.algorithm = \"none\") and use \
                     [ib.cc] enabled = true for InfiniBand congestion control",
                );
            }
            if spec.nic.vlan {
                return fabric_err(
                    "nic.vlan adds 802.1Q tags, which InfiniBand links do not have; remove it",
                );
            }
            if spec.nic.roce_mtu != super::NicSpec::default().roce_mtu {
                return fabric_err(
                    "nic.roce_mtu is the RoCE path MTU; on an InfiniBand fabric set ib.mtu",
                );
            }
            let sw = &spec.switch;
            let eth = super::SwitchSpec::default();
            if sw.buffer_bytes != eth.buffer_bytes
                || sw.reserve_bytes != eth.reserve_bytes
                || sw.headroom_bytes.is_some()
                || sw.dt_shift != eth.dt_shift
                || sw.resume_offset_bytes != eth.resume_offset_bytes
            {
                return fabric_err(
                    "switch.buffer_bytes, reserve_bytes, headroom_bytes, dt_shift and \
                     resume_offset_bytes size the Ethernet shared-buffer MMU; an InfiniBand \
                     switch buffers per input port and VL: set ib.switch_vl_buffer_bytes",
                );
            }
            spec.ib.clone().unwrap_or_default().validate()
        }
    }
}

/// After parsing: on an InfiniBand fabric, the Ethernet-only sections the
/// file leaves out are off, and the switch latency defaults to an IB one;
/// on an iWARP fabric, `[cc]` (DCQCN) is off unless given.
pub(super) fn apply_defaults(spec: &mut FabricSpec, text: &str) -> Result<()> {
    if spec.transport == Transport::Roce {
        return Ok(());
    }
    let table: toml::Table = text
        .parse()
        .map_err(|e| Error::Parse(format!("fabric TOML: {e}")))?;
    let has = |section: &str, key: Option<&str>| match (table.get(section), key) {
        (Some(v), Some(k)) => v.get(k).is_some(),
        (s, None) => s.is_some(),
        (None, _) => false,
    };
    if spec.transport == Transport::Iwarp {
        // TCP has its own congestion control: no DCQCN unless the file asks
        // (which validation then refuses with a message).
        if !has("cc", None) {
            spec.cc.algorithm = super::CcAlgorithm::None;
        }
        return Ok(());
    }
    if !has("pfc", None) {
        spec.pfc.enabled = false;
    }
    if !has("ecn", None) {
        spec.ecn.enabled = false;
    }
    if !has("cc", None) {
        spec.cc.algorithm = super::CcAlgorithm::None;
    }
    if !has("switch", Some("latency_ns")) {
        spec.switch.latency_ns = IB_SWITCH_LATENCY_NS;
    }
    Ok(())
}

/// Port-to-port latency of an IB switch when the file gives none, ns
/// (EDR SB7800 about 90 ns, HDR QM8700 under 130 ns).
pub const IB_SWITCH_LATENCY_NS: f64 = 100.0;
