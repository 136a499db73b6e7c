//! The vocabulary workloads and the network share: queue-pair handles,
//! kinds of work request, the events a workload is told, and the verbs
//! completion statuses of failed work. Plain data, no behaviour: the
//! methods that post and connect are in `api.rs`; the transports
//! (`nic.rs`, `qp.rs`, `iwarp/`, `flow/`) produce these events.

/// Handle of a queue pair.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct QpId(pub u32);

/// Kinds of work request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum OpKind {
    /// RDMA WRITE.
    Write,
    /// RDMA READ (the requester pulls `bytes` from the responder).
    Read,
    /// SEND (consumes a receive at the responder).
    Send,
    /// A READ response stream (internal; posted by the responder NIC).
    ReadResp,
}

/// What a workload is told.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// A work request completed at the requester (WRITE/SEND acknowledged,
    /// READ data arrived).
    Completed {
        /// The QP it was posted on.
        qp: QpId,
        /// The token given when posting.
        token: u64,
        /// The operation.
        op: OpKind,
    },
    /// A WRITE or SEND from the peer finished landing in this host's memory.
    Received {
        /// The receiving QP.
        qp: QpId,
        /// The sender's token.
        token: u64,
        /// Payload bytes of the message.
        bytes: u64,
        /// The operation.
        op: OpKind,
    },
    /// A timer set with [`Net::set_app_timer`](super::Net::set_app_timer).
    Timer {
        /// The token given when setting it.
        token: u64,
    },
    /// A TCP connection's send buffer has room again (asked for with
    /// [`Net::tcp_notify_writable`](super::Net::tcp_notify_writable)).
    TcpWritable {
        /// The connection.
        conn: super::TcpId,
    },
    /// In-order data reached the receiving application (asked for with
    /// [`Net::tcp_notify_delivery`](super::Net::tcp_notify_delivery)).
    TcpDelivered {
        /// The connection.
        conn: super::TcpId,
        /// Stream offset of the first byte delivered.
        offset: u64,
        /// Bytes delivered.
        bytes: u64,
    },
    /// A work request completed in error: its QP went to the error state
    /// (RC retries exhausted). The QP's other outstanding work requests
    /// complete the same way, flushed ([`Net::qp_failures`](super::Net::qp_failures) says why).
    Failed {
        /// The QP it was posted on.
        qp: QpId,
        /// The token given when posting.
        token: u64,
        /// The operation.
        op: OpKind,
        /// The verbs completion status: 12 for the work request that ran
        /// out of retries (`IBV_WC_RETRY_EXC_ERR`), 5 for the ones flushed
        /// after it (`IBV_WC_WR_FLUSH_ERR`).
        status: u32,
    },
}

/// Verbs completion status of a work request that exhausted the RC retry
/// count (`IBV_WC_RETRY_EXC_ERR`).
pub const WC_RETRY_EXC_ERR: u32 = 12;
/// Verbs completion status of a work request flushed from a QP in the
/// error state (`IBV_WC_WR_FLUSH_ERR`).
pub const WC_WR_FLUSH_ERR: u32 = 5;

/// The verbs text of a completion status (`ibv_wc_status_str`), for the
/// two error statuses the model produces.
pub fn wc_status_str(status: u32) -> &'static str {
    match status {
        WC_RETRY_EXC_ERR => "transport retry counter exceeded",
        WC_WR_FLUSH_ERR => "Work Request Flushed Error",
        _ => "unknown",
    }
}

/// An RC QP that went to the error state during a run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QpFailure {
    /// When, ps.
    pub time_ps: u64,
    /// The QP.
    pub qp: u32,
    /// Its host.
    pub host: String,
    /// The host of its peer QP.
    pub peer: String,
    /// Timeouts it retried before giving up (the retry count).
    pub retries: u32,
    /// Work requests completed in error (the first with status 12, the
    /// rest flushed).
    pub failed_wrs: u32,
    /// Why the peer stopped answering, as far as the fabric can tell.
    pub cause: String,
}

impl QpFailure {
    /// One line for an error message.
    pub fn describe(&self) -> String {
        format!(
            "transport retry counter exceeded on QP {} ({} -> {}) at {:.3} us: {} retransmission \
             timeouts in a row without an acknowledgement (nic.retry_cnt = {}); {} work \
             request(s) completed in error. The peer is unreachable: {}",
            self.qp,
            self.host,
            self.peer,
            self.time_ps as f64 / 1e6,
            self.retries + 1,
            self.retries,
            self.failed_wrs,
            self.cause
        )
    }
}
