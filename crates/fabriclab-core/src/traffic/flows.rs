//! Bulk flows: each flow is one RC QP moving a message (WRITE, READ or SEND)
//! from one host to another, starting at a given time, once or repeatedly.
//!
//! This is the workload behind incast and all-to-all experiments and behind
//! background traffic beside a benchmark. A repeating flow posts its next
//! message as soon as the previous one completes and runs in the background
//! (it never keeps a run alive). Results: per flow, the start, the time the
//! last byte landed at the destination, and the completion time at the
//! source.

use crate::error::{arg_err, Result};
use crate::net::{AppEvent, Net, OpKind, QpId};
use crate::sim::App;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// One flow as a user describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Source host name.
    pub src: String,
    /// Destination host name.
    pub dst: String,
    /// Message size, bytes.
    pub bytes: u64,
    /// "write" (default), "read" (dst's data pulled to src) or "send".
    #[serde(default = "default_op")]
    pub op: String,
    /// Start time, us.
    #[serde(default)]
    pub start_us: f64,
    /// Priority (default: the fabric's data priority).
    #[serde(default)]
    pub priority: Option<u8>,
    /// Keep posting the message again as soon as it completes (background).
    #[serde(default)]
    pub repeat: bool,
    /// Pin the data's path through this switch, by the choice of the QP's
    /// UDP source port ([`Net::connect_via`]; ECMP fabrics only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Pin the other direction's path (the ACKs and CNPs of the data; a
    /// READ's request) through this switch, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_via: Option<String>,
}

impl FlowSpec {
    /// A WRITE of `bytes` from `src` to `dst` at time zero, with every
    /// other field at its default (the fabric's data priority, once, the
    /// ECMP path).
    pub fn write(src: impl Into<String>, dst: impl Into<String>, bytes: u64) -> FlowSpec {
        FlowSpec {
            src: src.into(),
            dst: dst.into(),
            bytes,
            op: default_op(),
            start_us: 0.0,
            priority: None,
            repeat: false,
            via: None,
            return_via: None,
        }
    }
}

fn default_op() -> String {
    "write".into()
}

/// Parse an op name.
pub fn parse_op(op: &str) -> Result<OpKind> {
    match op {
        "write" => Ok(OpKind::Write),
        "read" => Ok(OpKind::Read),
        "send" => Ok(OpKind::Send),
        other => arg_err(format!(
            "flow op {other:?} is unknown; use \"write\", \"read\" or \"send\""
        )),
    }
}

/// Result of one flow.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowResult {
    /// Source host name.
    pub src: String,
    /// Destination host name.
    pub dst: String,
    /// Message size.
    pub bytes: u64,
    /// Start time, ps.
    pub start_ps: u64,
    /// When the last byte of the first message landed at the receiver, ps.
    pub delivered_ps: Option<u64>,
    /// When the first message completed at the source, ps.
    pub completed_ps: Option<u64>,
    /// Messages completed (more than one for repeating flows).
    pub messages: u64,
    /// When the flow's QP failed (RC retries exhausted), ps.
    pub failed_ps: Option<u64>,
    /// The completion status of its first failed message
    /// ("transport retry counter exceeded"), if any.
    pub error: Option<String>,
}

/// Flow results as one array per column (`{"src": [...], "dst": [...],
/// ...}`), for `#[serde(serialize_with)]`: what the Python layer builds
/// the flows table from (an all-to-all of 1,024 hosts has a million rows).
/// A test checks the columns against the rows' fields.
pub fn results_as_columns<S: serde::Serializer>(
    rows: &[FlowResult],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use crate::net::columns::col;
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(9))?;
    m.serialize_entry("src", &col(rows, |r| r.src.as_str()))?;
    m.serialize_entry("dst", &col(rows, |r| r.dst.as_str()))?;
    m.serialize_entry("bytes", &col(rows, |r| r.bytes))?;
    m.serialize_entry("start_ps", &col(rows, |r| r.start_ps))?;
    m.serialize_entry("delivered_ps", &col(rows, |r| r.delivered_ps))?;
    m.serialize_entry("completed_ps", &col(rows, |r| r.completed_ps))?;
    m.serialize_entry("messages", &col(rows, |r| r.messages))?;
    m.serialize_entry("failed_ps", &col(rows, |r| r.failed_ps))?;
    m.serialize_entry("error", &col(rows, |r| r.error.as_deref()))?;
    m.end()
}

struct Flow {
    src: u32,
    dst: u32,
    /// The switches the paths from `src` and from `dst` are pinned through
    /// ([`Net::connect_via`]).
    via: (Option<u32>, Option<u32>),
    op: OpKind,
    prio: Option<u8>,
    repeat: bool,
    qp: Option<QpId>,
    peer_qp: Option<QpId>,
    res: FlowResult,
}

/// A set of flows, as one workload.
pub struct Flows {
    flows: Vec<Flow>,
    pending: usize,
    background: bool,
}

impl Flows {
    /// Bytes `n` flows will take on `net` once connected: a QP pair each
    /// ([`Net::qp_pair_bytes`]), the workload's own state, its result row
    /// with the two host names and the flow's description (its strings'
    /// buffers included). Against a2a-1024 on the flow backend (1,047,552
    /// flows, 1,419 MB peak with the fabric and the max-min solver's link
    /// lists): 1,115 MB (test `the_flows_memory_estimate_is_of_the_measured_order`).
    /// `reads` of them are RDMA READs, whose connections also get a
    /// responder stream ([`crate::net::responder_stream_bytes`]).
    pub fn bytes_needed(net: &Net, n: u64, reads: u64) -> u64 {
        let inputs = std::mem::size_of::<FlowSpec>() as u64 + 3 * 16;
        let solver = if net.backend() == crate::config::Backend::Flow {
            128 // the flow on each link of its path
        } else {
            0
        };
        let per =
            net.qp_pair_bytes() + std::mem::size_of::<Flow>() as u64 + 2 * 32 + inputs + solver;
        n.saturating_mul(per)
            .saturating_add(reads.saturating_mul(crate::net::responder_stream_bytes(net.backend())))
    }

    /// Resolve host names against `net`.
    pub fn new(net: &Net, specs: &[FlowSpec]) -> Result<Flows> {
        let reads = specs.iter().filter(|s| s.op == "read").count() as u64;
        let need = Flows::bytes_needed(net, specs.len() as u64, reads);
        crate::config::memory::check_workload(need, &format!("{} flows", specs.len()), None)?;
        let mut flows = Vec::with_capacity(specs.len());
        for s in specs {
            let op = parse_op(&s.op)?;
            if !(s.start_us.is_finite() && s.start_us >= 0.0) {
                return arg_err(format!(
                    "flow start_us must be zero or positive, got {}",
                    s.start_us
                ));
            }
            if s.start_us > crate::config::MAX_SETTING_US {
                return arg_err(format!(
                    "flow start_us = {} us is later than any run reaches (at most {:e} us)",
                    crate::config::show_f64(s.start_us),
                    crate::config::MAX_SETTING_US
                ));
            }
            if s.src == s.dst {
                return arg_err(format!(
                    "flow from {} to itself; pick two different hosts",
                    s.src
                ));
            }
            if s.bytes > 1 << 31 {
                return arg_err(format!(
                    "flow {} -> {} of {} B exceeds the 2 GiB an RDMA message can carry; \
                     split it into several flows",
                    s.src, s.dst, s.bytes
                ));
            }
            if let Some(p) = s.priority {
                if p > 7 {
                    return arg_err(format!("flow priority {p} is out of range 0..7"));
                }
            }
            let (src, dst) = (net.host(&s.src)?, net.host(&s.dst)?);
            net.check_reachable(src, dst)?;
            // The data leaves the source, except a READ's (the responses).
            let data_from_src = op != OpKind::Read;
            let mut via = (None, None);
            for (name, from_src) in [(&s.via, data_from_src), (&s.return_via, !data_from_src)] {
                if let Some(name) = name {
                    let sw = net.topology().switch_index(name)? as u32;
                    let (a, b) = if from_src { (src, dst) } else { (dst, src) };
                    net.sport_through(a, b, 49152, sw)?;
                    if from_src {
                        via.0 = Some(sw);
                    } else {
                        via.1 = Some(sw);
                    }
                }
            }
            flows.push(Flow {
                src,
                dst,
                via,
                op,
                prio: s.priority,
                repeat: s.repeat,
                qp: None,
                peer_qp: None,
                res: FlowResult {
                    src: s.src.clone(),
                    dst: s.dst.clone(),
                    bytes: s.bytes,
                    start_ps: Time::from_ns_f64(s.start_us * 1e3).0,
                    ..Default::default()
                },
            });
        }
        let pending = flows.iter().filter(|f| !f.repeat).count();
        let background = flows.iter().all(|f| f.repeat);
        Ok(Flows {
            flows,
            pending,
            background,
        })
    }

    /// Mark this set as background traffic (it never keeps a run alive).
    pub fn into_background(mut self) -> Self {
        self.background = true;
        self
    }

    /// Flows completed and flows to complete (background flows, which
    /// repeat for ever, left out): a run's progress.
    pub fn progress(&self) -> (usize, usize) {
        let total = self.flows.iter().filter(|f| !f.repeat).count();
        (total - self.pending, total)
    }

    /// Per-flow results.
    pub fn results(&self) -> Vec<FlowResult> {
        self.flows.iter().map(|f| f.res.clone()).collect()
    }

    /// The QP of flow `i` at its source.
    pub fn qp(&self, i: usize) -> Option<QpId> {
        self.flows[i].qp
    }

    /// The QP of flow `i` at its destination.
    pub fn peer_qp(&self, i: usize) -> Option<QpId> {
        self.flows[i].peer_qp
    }

    fn post(&mut self, net: &mut Net, i: usize) {
        let f = &self.flows[i];
        // Sizes and hosts were validated in `new`.
        net.post(f.qp.unwrap(), f.op, f.res.bytes, i as u64)
            .expect("validated flow");
    }
}

impl App for Flows {
    fn start(&mut self, net: &mut Net, me: u32) {
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            let (a, b) = net
                .connect_via(f.src, f.dst, me, me, f.prio, f.via)
                .expect("validated flow");
            f.qp = Some(a);
            f.peer_qp = Some(b);
            let start = Time(f.res.start_ps);
            if start == Time::ZERO {
                self.post(net, i);
            } else {
                net.set_app_timer(me, start, i as u64);
            }
        }
    }

    fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
        match ev {
            AppEvent::Timer { token } => self.post(net, token as usize),
            AppEvent::Received { token, .. } => {
                let f = &mut self.flows[token as usize];
                f.res.delivered_ps.get_or_insert(net.now().0);
            }
            AppEvent::Completed { token, op, .. } => {
                let i = token as usize;
                let f = &mut self.flows[i];
                if op == OpKind::Read {
                    f.res.delivered_ps.get_or_insert(net.now().0);
                }
                f.res.messages += 1;
                if f.res.completed_ps.is_none() {
                    f.res.completed_ps = Some(net.now().0);
                    if !f.repeat {
                        self.pending -= 1;
                    }
                }
                if self.flows[i].repeat {
                    self.post(net, i);
                }
            }
            AppEvent::Failed { token, status, .. } => {
                let f = &mut self.flows[token as usize];
                if f.res.error.is_none() {
                    f.res.failed_ps = Some(net.now().0);
                    f.res.error = Some(crate::net::wc_status_str(status).to_string());
                    if f.res.completed_ps.is_none() && !f.repeat {
                        self.pending -= 1;
                    }
                }
            }
            AppEvent::TcpWritable { .. } | AppEvent::TcpDelivered { .. } => {}
        }
    }

    fn done(&self) -> bool {
        self.pending == 0
    }

    fn background(&self) -> bool {
        self.background
    }
}
