//! READ responders: the stream that carries a QP's READ responses beside
//! its send queue, on both backends.
//!
//! An RC QP has two independent engines. The requester runs the send queue
//! (SENDs, WRITEs, READ requests); the responder answers the peer's READ
//! requests out of its own resources (`max_dest_rd_atomic`), and its
//! responses travel in the requester's PSN space, not behind the
//! responder's own posted work. The NIC's scheduler interleaves the two
//! packet by packet. Modelled here as a second QP pair per connection,
//! made when the first READ request arrives: the responder's *responder
//! stream* sends the responses, the requester's receives and acknowledges
//! them. Both streams of a QP share its UDP source port (the same ECMP
//! path), its priority, its workload and its rate limiter (DCQCN or
//! InfiniBand CC state, and the pacing of the next departure, are the
//! owner's); reports and telemetry fold a stream's counters into its
//! owner's row, and completions name the owner. On the flow backend the
//! responder stream is a flow of its own beside the QP's, sharing the
//! links max-min.
//!
//! Left out: the responder's resource limit (`max_dest_rd_atomic`
//! outstanding READs; here any number are accepted and answered one after
//! the other in arrival order), and a separate retry timer on the requester for its
//! READs (the responder stream's own timer retransmits responses, as the
//! packet engine always did). iWARP carries READ responses in its TCP
//! stream, in order with the QP's own messages, as RFC 5040 does, and
//! does not use this.

use super::counters::QpCounters;
use super::flow::{FQp, FlowNet};
use super::qp::{stream_owner, Qp, QpSched, NO_QP};
use super::Net;

impl Net {
    /// The QP whose rate limiter, congestion control and reports stand for
    /// QP `q`: its owner when `q` is a responder stream, else `q`.
    #[inline]
    pub(crate) fn qp_owner(&self, q: u32) -> u32 {
        stream_owner(q, self.qps[q as usize].owner)
    }

    /// The other stream of `q`'s QP (its responder stream, or the owner of
    /// a responder stream), if it has one.
    #[inline]
    pub(crate) fn qp_sibling(&self, q: u32) -> Option<u32> {
        let qp = &self.qps[q as usize];
        match (qp.owner, qp.resp) {
            (NO_QP, NO_QP) => None,
            (NO_QP, r) => Some(r),
            (o, _) => Some(o),
        }
    }

    /// The responder stream of QP `r`, made with its peer's on first use.
    pub(crate) fn read_responder(&mut self, r: u32) -> u32 {
        let resp = self.qps[r as usize].resp;
        if resp != NO_QP {
            return resp;
        }
        let q = self.qps[r as usize].peer_qp;
        let (rs, qs) = (self.qps.len() as u32, self.qps.len() as u32 + 1);
        for (owner, stream, peer) in [(r, rs, qs), (q, qs, rs)] {
            let o = &self.qps[owner as usize];
            let prio = o.prio;
            let mut s = Qp::new(
                o.host,
                o.peer_host,
                peer,
                o.sport,
                prio,
                o.app,
                o.line,
                None,
            );
            s.owner = owner;
            self.qps.push(s);
            self.qsched.push(QpSched::new(prio));
            self.qps[owner as usize].resp = stream;
        }
        rs
    }

    /// QP `q`'s counters with its responder stream's added (None for a
    /// responder stream itself, which its owner reports).
    pub(crate) fn qp_counters_folded(&self, q: u32) -> Option<QpCounters> {
        let qp = &self.qps[q as usize];
        fold((qp.owner, qp.resp), &qp.counters, |r| {
            &self.qps[r as usize].counters
        })
    }

    /// Whether QP index `q` is a READ responder stream (of either backend).
    pub(crate) fn is_responder_stream(&self, q: u32) -> bool {
        match &self.flow {
            Some(f) => f.qps[q as usize].owner != NO_QP,
            None => self.qps[q as usize].owner != NO_QP,
        }
    }

    /// Flow backend: the responder stream of QP `r`, made with its peer's
    /// on first use. It is a flow of its own beside the QP's, on the same
    /// path, so the two share the host link max-min.
    pub(crate) fn flow_read_responder(&mut self, r: u32) -> u32 {
        let fnet = self.flow.as_mut().expect("flow backend");
        let resp = fnet.qps[r as usize].resp;
        if resp != NO_QP {
            return resp;
        }
        let q = fnet.qps[r as usize].peer_qp;
        let (rs, qs) = (fnet.qps.len() as u32, fnet.qps.len() as u32 + 1);
        for (owner, stream, peer) in [(r, rs, qs), (q, qs, rs)] {
            let o = &fnet.qps[owner as usize];
            let mut s = FQp::new((o.host, o.peer_host, peer), o.sport, o.prio, o.app);
            s.owner = owner;
            fnet.qps.push(s);
            fnet.qps[owner as usize].resp = stream;
        }
        rs
    }
}

impl FlowNet {
    /// QP `q`'s counters with its responder stream's added (None for a
    /// responder stream itself, which its owner reports).
    pub(crate) fn qp_counters_folded(&self, q: u32) -> Option<QpCounters> {
        let qp = &self.qps[q as usize];
        fold((qp.owner, qp.resp), &qp.counters, |r| {
            &self.qps[r as usize].counters
        })
    }
}

/// A QP's counters `own` with those of its responder stream `resp` added
/// (`stream` reads a stream's); None for a responder stream (`owner` set).
fn fold<'a>(
    (owner, resp): (u32, u32),
    own: &QpCounters,
    stream: impl FnOnce(u32) -> &'a QpCounters,
) -> Option<QpCounters> {
    if owner != NO_QP {
        return None;
    }
    let mut c = own.clone();
    if resp != NO_QP {
        c.add(stream(resp));
    }
    Some(c)
}
