//! TCP beside RDMA: a Linux-like TCP sender and receiver on the hosts, good
//! enough for background traffic and for iperf.
//!
//! What is modelled:
//! - segments of MSS = host MTU - 52 bytes (timestamps option), with exact
//!   wire overheads (`wire::tcp_wire_bytes`); Nagle for a partial last
//!   segment;
//! - slow start (initial window 10), congestion avoidance by NewReno, CUBIC
//!   or DCTCP (`cc.rs`), growth only while the window is what limits;
//! - NewReno fast retransmit on the third duplicate ACK and fast recovery
//!   with window inflation and partial ACKs (RFC 6582, "impatient" timer);
//! - retransmission timeout per RFC 6298 with Linux's 200 ms floor,
//!   exponential backoff, go-back-N from the first unacknowledged byte;
//!   RTT measured on every ACK through the echoed timestamp (RFC 7323);
//! - delayed ACKs (an ACK when more than one full segment is unacknowledged,
//!   else after the delayed-ACK timer), immediate ACKs for out-of-order data
//!   and for data that fills a hole; the receiver holds out-of-order data;
//! - DCTCP's ECN: segments marked ECT, the receiver's CE state machine
//!   (an immediate ACK when CE changes), alpha and the once-per-window cut;
//! - a large constant receive window (6 MiB by default), a send buffer
//!   limiting how far the application writes ahead, and TCP small queues
//!   (a connection keeps at most `tsq_bytes` in its host's port queues);
//! - host stack latencies: a segment enters the host port's queue
//!   `tx_latency` after TCP builds it, and TCP acts on an arriving segment
//!   `rx_latency` after its last bit is in.
//!
//! Segments and ACKs travel in the port priority queue of the fabric's TCP
//! priority (`[tcp] priority`), so switches schedule them by the `[qos]`
//! section, tail-drop them in lossy priorities and pause them only if that
//! priority is in `[pfc] priorities`; ECMP hashes their TCP ports. On a host
//! the NIC's RDMA data is served before the non-strict queues (as for any
//! queued traffic there), so TCP waits behind RDMA sent from the same host.
//!
//! The same machinery carries iWARP (`net::iwarp`): a connection created by
//! `Net::tcp_open_offload` runs in the RNIC, with the `[iwarp]` stack
//! (`TcpConf::offload`): no Nagle (every message is pushed), no TCP small
//! queues, no host-stack latencies (the RNIC's `[nic]` latencies are paid
//! once per message by `net::iwarp`), segments cut at FPDU boundaries,
//! ACKs at once unless `[iwarp] delayed_ack_ms` is set, and optionally
//! RFC 3168-style ECN for NewReno and CUBIC.
//!
//! Left out: the three-way handshake and FIN (a connection is established
//! at creation, with no RTT sample: the first RTO is 1 s), SACK, PRR (the
//! ECN and recovery cuts apply at once), HyStart, pacing, limited transmit,
//! F-RTO and undo, Linux's quick-ACK mode and adaptive delayed-ACK timer,
//! receive-buffer autotuning (the window is constant), data in the reverse
//! direction, checksum and MTU discovery. Sequence numbers are 64-bit byte
//! offsets that never wrap.

mod api;
mod cc;
mod conn;
mod counters;
mod rx;
mod tx;

pub use api::{TcpId, TcpReport};
pub use cc::DCTCP_G;
pub use counters::TcpCounters;

use crate::config::{TcpCc, TcpSpec};
use crate::rng::Rng;
use crate::units::Time;
use conn::Conn;

/// The well-known server port (iperf3's 5201).
pub const SERVER_PORT: u16 = 5201;

/// Parameters of a TCP stack (the hosts' or an RNIC's), in simulation
/// units.
pub(crate) struct TcpConf {
    pub prio: u8,
    pub host_mtu: u32,
    pub mss: u32,
    pub vlan: bool,
    pub rcv_wnd: u64,
    pub snd_buf: u64,
    pub init_cwnd: u32,
    pub rto_min: Time,
    pub rto_initial: Time,
    pub rto_max: Time,
    pub delack: Time,
    pub tsq: u64,
    pub tx_lat: Time,
    pub rx_lat: Time,
    pub default_cc: TcpCc,
    /// Segments carry the 12-byte timestamps option.
    pub timestamps: bool,
    /// Delayed ACKs in use (else every segment is ACKed at once).
    pub delack_on: bool,
    /// Segments are ECN-capable whatever the congestion control.
    pub ecn: bool,
}

impl TcpConf {
    pub fn new(spec: &TcpSpec, vlan: bool) -> TcpConf {
        let ms = |v: f64| Time::from_ns_f64(v * 1e6);
        TcpConf {
            prio: spec.priority,
            host_mtu: spec.host_mtu,
            mss: crate::wire::tcp_mss(spec.host_mtu),
            vlan,
            rcv_wnd: spec.rcv_wnd_bytes,
            snd_buf: spec.snd_buf_bytes,
            init_cwnd: spec.init_cwnd_segments,
            rto_min: ms(spec.rto_min_ms),
            rto_initial: ms(spec.rto_initial_ms),
            rto_max: ms(spec.rto_max_ms),
            delack: ms(spec.delayed_ack_ms),
            tsq: spec.tsq_bytes,
            tx_lat: Time::from_ns_f64(spec.tx_latency_ns),
            rx_lat: Time::from_ns_f64(spec.rx_latency_ns),
            default_cc: spec.congestion,
            timestamps: true,
            delack_on: true,
            ecn: false,
        }
    }

    /// The offloaded TCP of an iWARP RNIC.
    pub fn offload(spec: &crate::config::IwarpSpec, vlan: bool) -> TcpConf {
        let ms = |v: f64| Time::from_ns_f64(v * 1e6);
        TcpConf {
            prio: 0,
            host_mtu: spec.mtu_bytes,
            mss: spec.mss(),
            vlan,
            rcv_wnd: spec.rcv_wnd_bytes,
            snd_buf: u64::MAX,
            init_cwnd: spec.init_cwnd(),
            rto_min: ms(spec.rto_min_ms),
            rto_initial: ms(spec.rto_initial_ms),
            rto_max: ms(spec.rto_max_ms),
            delack: ms(spec.delayed_ack_ms),
            tsq: u64::MAX,
            tx_lat: Time::ZERO,
            rx_lat: Time::ZERO,
            default_cc: spec.congestion,
            timestamps: spec.tcp_timestamps,
            delack_on: spec.delayed_ack_ms > 0.0,
            ecn: spec.ecn,
        }
    }

    /// Bytes on the wire of a segment with `tcp_payload` bytes.
    #[inline]
    pub fn wire_bytes(&self, tcp_payload: u32) -> u32 {
        if self.timestamps {
            crate::wire::tcp_wire_bytes(tcp_payload, self.vlan)
        } else {
            crate::wire::iwarp_wire_bytes(tcp_payload, self.vlan, false)
        }
    }
}

/// The stack of a connection: the RNIC's for offloaded ones.
#[inline]
pub(crate) fn stack<'a>(host: &'a TcpConf, nic: &'a Option<TcpConf>, offload: bool) -> &'a TcpConf {
    match nic {
        Some(n) if offload => n,
        _ => host,
    }
}

/// Every TCP connection of the network.
pub(crate) struct Tcp {
    pub conf: TcpConf,
    /// The RNICs' offloaded stack, on iWARP fabrics.
    pub nic: Option<TcpConf>,
    pub conns: Vec<Conn>,
    /// Ephemeral source ports.
    pub rng: Rng,
}

impl Tcp {
    pub fn new(spec: &crate::config::FabricSpec, seed: u64) -> Tcp {
        let vlan = spec.nic.vlan;
        Tcp {
            conf: TcpConf::new(&spec.tcp, vlan),
            nic: spec
                .is_iwarp()
                .then(|| TcpConf::offload(&spec.iwarp_spec(), vlan)),
            conns: Vec::new(),
            rng: Rng::new(seed, 8),
        }
    }
}
