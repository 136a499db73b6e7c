//! Congestion-control settings: which algorithm, and DCQCN's parameters.
//!
//! DCQCN parameter sets are selected by name and every parameter can be
//! overridden one by one. `connectx` follows the NVIDIA ConnectX firmware
//! defaults and `paper` the DCQCN paper (SIGCOMM 2015, 40G); the sources
//! of each value are beside it below and in `docs/dcqcn.md`.
//!
//! ConnectX names (`mlxconfig` / sysfs `ecn/roce_rp`, `ecn/roce_np`), as
//! described by NVIDIA's "DCQCN Parameters" page and the `mlxconfig`
//! register descriptions: `g` is `(1024 - dce_tcp_g) / 1024` (alpha keeps
//! `dce_tcp_g / 1024` of its value each `dce_tcp_rtt`), `initial_alpha` is
//! `initial_alpha_value / 1024`, `rate_increase_period_us` is
//! `rpg_time_reset`, `byte_counter_bytes` is `rpg_byte_reset` (bytes),
//! `fast_recovery_steps` is `rpg_threshold`, `rai_mbps`/`rhai_mbps` are
//! `rpg_ai_rate`/`rpg_hai_rate`, `min_rate_mbps` is `rpg_min_rate`,
//! `min_time_between_cuts_us` is `rate_reduce_monitor_period`,
//! `cnp_interval_us` is `min_time_between_cnps`, and the two clamp flags are
//! `clamp_tgt_rate` and `clamp_tgt_rate_after_time_inc`.
//!
//! Two readings the sources disagree on, and the one taken here: the
//! `mlxconfig` register text writes the alpha update with `dce_tcp_g / 1024`
//! as the weight of the new sample, while NVIDIA's parameters page (and
//! Google's isekai simulator) make it the weight of the old alpha; with the
//! default 1019 the latter gives the DCTCP-like gain of about 1/205 that
//! NVIDIA's parameter page implies. `min_time_between_cnps` spaces the CNPs of
//! a port (`cnp_scope = "port"`) in `connectx`: the register text (mstflint
//! `tools_open_roce_cc_ecn`) and the mlx5 kernel's debug parameter both
//! say "minimum time between sending CNPs from the port", and NVIDIA's
//! ConnectX-8 firmware release notes (40.45.1020, "Customer Affecting
//! Changes") moved its CNP moderation "from per-flow to per-port to align
//! with previous device generations". The DCQCN paper's notification point
//! is per QP (`paper`). isekai counts `rpg_byte_reset` in 64-byte units;
//! NVIDIA's descriptions say bytes, as here (decided for the documented
//! unit; the evidence either way is in `docs/dcqcn.md`). Alpha is updated
//! once per `dce_tcp_rtt` with a "CNP arrived" bit (`alpha_update`).

use crate::error::{fabric_err, Result};
use serde::{Deserialize, Serialize};

/// Which end-host congestion control the RDMA QPs run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcAlgorithm {
    /// Send at line rate; only PFC (or loss) limits the senders.
    None,
    /// DCQCN: ECN marks at switches, CNPs from receivers, rate cuts at senders.
    Dcqcn,
}

/// Whose CNPs `cnp_interval_us` spaces at the notification point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CnpScope {
    /// One limiter per receiving port: a marked packet makes a CNP only if
    /// the port sent none within the interval, whichever QP it was for
    /// (ConnectX before ConnectX-8, and ConnectX-8 since firmware 40.45).
    Port,
    /// One limiter per receiving QP (the DCQCN paper's notification point).
    Qp,
}

/// When a DCQCN reaction point updates alpha.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlphaUpdate {
    /// Once per alpha period, periods timed from the CNP that allocated the
    /// QP's rate limiter (the grid restarts after a release at line rate):
    /// up by g if a CNP arrived in the period (however many), else a decay
    /// (ConnectX's "CNP arrived" bit per `dce_tcp_rtt`; the ns-3 HPCC
    /// simulator's `UpdateAlphaMlx`).
    Period,
    /// Up by g on every CNP, down by a decay for each whole period without
    /// one, the period restarting at each CNP (the DCQCN paper's reaction
    /// point).
    Cnp,
}

/// Congestion-control section of a fabric.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CcSpec {
    /// The algorithm.
    pub algorithm: CcAlgorithm,
    /// DCQCN parameter set: "connectx" (default) or "paper".
    pub preset: String,
    /// Alpha gain g (overrides the preset).
    pub g: Option<f64>,
    /// Alpha decay period, us.
    pub alpha_period_us: Option<f64>,
    /// When alpha is updated: "period" (ConnectX) or "cnp" (paper).
    pub alpha_update: Option<AlphaUpdate>,
    /// Rate-increase timer period, us.
    pub rate_increase_period_us: Option<f64>,
    /// Rate-increase byte counter, bytes; 0 = none, the timer alone drives
    /// the increase stages (fast recovery for F periods, one additive step,
    /// then hyper steps: the ns-3 HPCC simulator's Mellanox model).
    pub byte_counter_bytes: Option<u64>,
    /// Fast-recovery steps F.
    pub fast_recovery_steps: Option<u32>,
    /// Additive increase R_AI, Mb/s.
    pub rai_mbps: Option<f64>,
    /// Hyper increase R_HAI, Mb/s.
    pub rhai_mbps: Option<f64>,
    /// Minimum rate, Mb/s.
    pub min_rate_mbps: Option<f64>,
    /// Rate-reduce monitor period, us: a CNP cuts the rate at the start of
    /// the next period (periods timed from the flow's first CNP), so cuts
    /// are at least this far apart; 0 cuts on every CNP at once.
    pub min_time_between_cuts_us: Option<f64>,
    /// Notification point: at most one CNP per this interval, us, per
    /// port or per QP (`cnp_scope`).
    pub cnp_interval_us: Option<f64>,
    /// Whose CNPs the interval spaces: "port" (ConnectX) or "qp" (paper).
    pub cnp_scope: Option<CnpScope>,
    /// Carry the CNP as a flag on the ACK (or NAK) of the marked packet
    /// instead of a CNP packet of its own: the ns-3 HPCC simulator's model
    /// (`RdmaHw::ReceiveUdp`), for like-for-like cross-checks. RoCEv2 NICs
    /// send CNPs as packets (false, both presets).
    pub cnp_on_ack: Option<bool>,
    /// Set the target rate to the current rate on every cut (true, the
    /// DCQCN paper) or only on a cut after an increase (false, ConnectX
    /// `clamp_tgt_rate = 0`).
    pub clamp_target_rate: Option<bool>,
    /// Without `clamp_target_rate`: a timer-driven increase also makes the
    /// next cut set the target rate (ConnectX
    /// `clamp_tgt_rate_after_time_inc`); a byte-counter increase always does.
    pub clamp_target_rate_after_time_inc: Option<bool>,
    /// Alpha set when a flow's first CNP allocates its rate limiter.
    pub initial_alpha: Option<f64>,
    /// A rate change re-times the QP's pending departure (true, both
    /// presets: the rest of the gap is paid at the new rate, as a rate
    /// limiter does) or leaves it as scheduled (false: the ns-3 HPCC
    /// simulator's Mellanox DCQCN, which writes the rate alone,
    /// `RdmaHw::CheckRateDecreaseMlx` and the increase steps).
    pub retime_on_rate_change: Option<bool>,
}

impl Default for CcSpec {
    fn default() -> Self {
        CcSpec {
            algorithm: CcAlgorithm::Dcqcn,
            preset: "connectx".into(),
            g: None,
            alpha_period_us: None,
            alpha_update: None,
            rate_increase_period_us: None,
            byte_counter_bytes: None,
            fast_recovery_steps: None,
            rai_mbps: None,
            rhai_mbps: None,
            min_rate_mbps: None,
            min_time_between_cuts_us: None,
            cnp_interval_us: None,
            cnp_scope: None,
            cnp_on_ack: None,
            clamp_target_rate: None,
            clamp_target_rate_after_time_inc: None,
            initial_alpha: None,
            retime_on_rate_change: None,
        }
    }
}

/// Resolved DCQCN parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DcqcnParams {
    /// Alpha gain g.
    pub g: f64,
    /// Alpha decay period, us.
    pub alpha_period_us: f64,
    /// When alpha is updated.
    pub alpha_update: AlphaUpdate,
    /// Rate-increase timer period, us.
    pub rate_increase_period_us: f64,
    /// Byte counter, bytes (0: none, the timer alone).
    pub byte_counter_bytes: u64,
    /// Fast-recovery steps F.
    pub fast_recovery_steps: u32,
    /// R_AI, Mb/s.
    pub rai_mbps: f64,
    /// R_HAI, Mb/s.
    pub rhai_mbps: f64,
    /// Minimum rate, Mb/s.
    pub min_rate_mbps: f64,
    /// Rate-reduce monitor period, us (0: cut on every CNP at once).
    pub min_time_between_cuts_us: f64,
    /// CNP interval at the notification point, us.
    pub cnp_interval_us: f64,
    /// Whose CNPs the interval spaces.
    pub cnp_scope: CnpScope,
    /// CNPs ride on the ACK of the marked packet (ns-3 HPCC), not packets
    /// of their own.
    pub cnp_on_ack: bool,
    /// RT = RC on every cut (paper) or only after an increase (ConnectX).
    pub clamp_target_rate: bool,
    /// Without `clamp_target_rate`, a timer increase also clamps at the next
    /// cut (a byte-counter increase always does).
    pub clamp_target_rate_after_time_inc: bool,
    /// Alpha when a flow's first CNP allocates its rate limiter.
    pub initial_alpha: f64,
    /// A rate change re-times the pending departure (false: ns-3 HPCC).
    pub retime_on_rate_change: bool,
}

impl DcqcnParams {
    /// NVIDIA ConnectX firmware defaults (g in the 1019/1024 weight form).
    /// "dumps" are `mlxconfig q` outputs of ConnectX-4 Lx, ConnectX-5 and
    /// BlueField devices posted in public; "DOCA" is NVIDIA's DCQCN
    /// parameter page; the evidence and its confidence are in
    /// `docs/dcqcn.md`.
    pub fn connectx() -> Self {
        DcqcnParams {
            // dce_tcp_g = 1019 as the old alpha's weight: dumps; NVIDIA's
            // community DCQCN page; Google isekai's model.
            g: 5.0 / 1024.0,
            // dce_tcp_rtt = 1 us: dumps, DOCA.
            alpha_period_us: 1.0,
            // Once per dce_tcp_rtt with a "CNP arrived" bit: mstflint's
            // dce_tcp_g text, the Mellanox community DCQCN page, isekai's
            // alpha timer, ns-3 HPCC's UpdateAlphaMlx (docs/dcqcn.md).
            alpha_update: AlphaUpdate::Period,
            // rpg_time_reset = 300 us: dumps, isekai, ns-3 HPCC configs.
            rate_increase_period_us: 300.0,
            // rpg_byte_reset = 32767: dumps; counted in bytes as NVIDIA's
            // texts say (isekai reads 64-byte units; docs/dcqcn.md).
            byte_counter_bytes: 32767,
            // rpg_threshold = 1: dumps, isekai.
            fast_recovery_steps: 1,
            // rpg_ai_rate = 5, rpg_hai_rate = 50 Mb/s: dumps, isekai.
            rai_mbps: 5.0,
            rhai_mbps: 50.0,
            // rpg_min_rate = 1 Mb/s: dumps, DOCA (the 2000 of early
            // mstflint text appears in no device dump).
            min_rate_mbps: 1.0,
            // rate_reduce_monitor_period = 4 us: dumps, DOCA, isekai.
            min_time_between_cuts_us: 4.0,
            // min_time_between_cnps = 4 us: dumps (one ConnectX-5 firmware
            // shows 2, early firmware 0).
            cnp_interval_us: 4.0,
            // Per port: mstflint's and the mlx5 kernel's "from the port";
            // ConnectX-8 firmware 40.45.1020 release notes ("per-flow to
            // per-port to align with previous device generations").
            cnp_scope: CnpScope::Port,
            // A CNP is a packet of its own (RoCEv2 Annex A17).
            cnp_on_ack: false,
            // clamp_tgt_rate = 0, clamp_tgt_rate_after_time_inc = 1:
            // dumps, mstflint, isekai, ns-3.
            clamp_target_rate: false,
            clamp_target_rate_after_time_inc: true,
            retime_on_rate_change: true,
            // initial_alpha_value = 1023: dumps, DOCA.
            initial_alpha: 1023.0 / 1024.0,
        }
    }

    /// The DCQCN paper's parameters (40G testbed). Its reaction point cuts
    /// on every CNP (no monitor period: the notification point's 50 us per
    /// QP is the only spacing) and starts with alpha = 1.
    pub fn paper() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_period_us: 55.0,
            alpha_update: AlphaUpdate::Cnp,
            rate_increase_period_us: 55.0,
            byte_counter_bytes: 10 * 1024 * 1024,
            fast_recovery_steps: 5,
            rai_mbps: 40.0,
            rhai_mbps: 400.0,
            min_rate_mbps: 10.0,
            min_time_between_cuts_us: 0.0,
            cnp_interval_us: 50.0,
            cnp_scope: CnpScope::Qp,
            cnp_on_ack: false,
            clamp_target_rate: true,
            clamp_target_rate_after_time_inc: true,
            retime_on_rate_change: true,
            initial_alpha: 1.0,
        }
    }
}

impl CcSpec {
    pub(crate) fn validate(&self) -> Result<()> {
        let p = self.dcqcn()?;
        if !(p.g > 0.0 && p.g <= 1.0) {
            return fabric_err(format!("cc.g must be in (0, 1], got {}", p.g));
        }
        if !(0.0..=1.0).contains(&p.initial_alpha) {
            return fabric_err(format!(
                "cc.initial_alpha must be between 0 and 1, got {}",
                p.initial_alpha
            ));
        }
        for (name, v) in [
            ("cc.alpha_period_us", p.alpha_period_us),
            ("cc.rate_increase_period_us", p.rate_increase_period_us),
            ("cc.rai_mbps", p.rai_mbps),
            ("cc.rhai_mbps", p.rhai_mbps),
            ("cc.min_rate_mbps", p.min_rate_mbps),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return fabric_err(format!("{name} must be positive, got {v}"));
            }
            // Periods are times a run can reach; rates at most 100 Tb/s.
            if name.ends_with("_us") {
                super::time_us(name, v)?;
            } else if v > 1e8 {
                return fabric_err(format!("{name} = {v} Mb/s is beyond any real link"));
            }
        }
        for (name, v) in [
            ("cc.min_time_between_cuts_us", p.min_time_between_cuts_us),
            ("cc.cnp_interval_us", p.cnp_interval_us),
        ] {
            super::time_us(name, v)?;
        }
        Ok(())
    }

    /// The DCQCN parameters: the named preset with this spec's overrides.
    pub fn dcqcn(&self) -> Result<DcqcnParams> {
        let mut p = match self.preset.as_str() {
            "connectx" | "" => DcqcnParams::connectx(),
            "paper" => DcqcnParams::paper(),
            other => {
                return fabric_err(format!(
                    "cc.preset {other:?} is unknown; use \"connectx\" or \"paper\""
                ))
            }
        };
        macro_rules! over {
            ($($f:ident),*) => { $( if let Some(v) = self.$f { p.$f = v; } )* };
        }
        over!(
            g,
            alpha_period_us,
            alpha_update,
            rate_increase_period_us,
            byte_counter_bytes,
            fast_recovery_steps,
            rai_mbps,
            rhai_mbps,
            min_rate_mbps,
            min_time_between_cuts_us,
            cnp_interval_us,
            cnp_scope,
            cnp_on_ack,
            clamp_target_rate,
            clamp_target_rate_after_time_inc,
            initial_alpha,
            retime_on_rate_change
        );
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_single_parameters_of_the_preset() {
        let spec = CcSpec {
            preset: "paper".into(),
            rai_mbps: Some(80.0),
            ..CcSpec::default()
        };
        let p = spec.dcqcn().unwrap();
        assert_eq!(p.rai_mbps, 80.0);
        assert_eq!(p.g, 1.0 / 256.0);
    }

    #[test]
    fn alpha_update_is_per_period_for_connectx_and_can_be_overridden() {
        assert_eq!(DcqcnParams::connectx().alpha_update, AlphaUpdate::Period);
        assert_eq!(DcqcnParams::paper().alpha_update, AlphaUpdate::Cnp);
        let base =
            "[topology]\nkind = \"leaf_spine\"\nspines = 1\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n[cc]\n";
        let spec =
            crate::config::FabricSpec::parse_toml(&format!("{base}alpha_update = \"cnp\"\n"))
                .unwrap();
        assert_eq!(spec.cc.dcqcn().unwrap().alpha_update, AlphaUpdate::Cnp);
        let e = crate::config::FabricSpec::parse_toml(&format!("{base}alpha_update = \"often\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("period") && e.contains("cnp"), "{e}");
    }

    #[test]
    fn unknown_preset_is_rejected_with_the_valid_names() {
        let spec = CcSpec {
            preset: "fast".into(),
            ..CcSpec::default()
        };
        let e = spec.validate().unwrap_err().to_string();
        assert!(e.contains("connectx") && e.contains("paper"), "{e}");
    }
}
