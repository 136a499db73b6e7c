//! Packets and the packet pool.
//!
//! A packet is a small plain struct that lives in a pool and moves between
//! queues, pipes and NICs by handle ([`PktId`]); nothing is copied or boxed
//! on the hot path. A packet carries only what the models read: addresses,
//! the QP it is for, PSN, sizes, priority, ECN bit and a few flags. Payload
//! bytes themselves are not stored.

use crate::units::Time;

/// Handle of a packet in the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PktId(pub u32);

/// What a packet is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PktKind {
    /// RDMA WRITE data.
    Write,
    /// SEND data.
    Send,
    /// RDMA READ request (`aux` = bytes to read).
    ReadReq,
    /// RDMA READ response data.
    ReadResp,
    /// Cumulative ACK (`aux` = next expected PSN).
    Ack,
    /// NAK, sequence error (`aux` = next expected PSN).
    Nak,
    /// DCQCN congestion notification.
    Cnp,
    /// PFC frame (`aux` = pause quanta, `prio` = the paused priority).
    Pause,
    /// TCP segment with data (`aux` = sequence number, `token` = TSval,
    /// `dst_qp` = the connection).
    TcpData,
    /// Pure TCP ACK (`aux` = cumulative ACK, `token` = TSecr, `dst_qp` =
    /// the connection).
    TcpAck,
    /// InfiniBand link-level flow-control packet (`prio` = the VL, `aux` =
    /// FCCL: the total 64 B credits the receiving port has granted on it).
    FlowCtl,
}

impl PktKind {
    /// True for packets that carry an RDMA QP's data stream (and a PSN).
    #[inline]
    pub fn is_data(self) -> bool {
        matches!(
            self,
            PktKind::Write | PktKind::Send | PktKind::ReadReq | PktKind::ReadResp
        )
    }
}

/// Flag: first packet of a message.
pub const F_FIRST: u8 = 1;
/// Flag: last packet of a message (the responder ACKs it at once).
pub const F_LAST: u8 = 2;
/// Flag: ECN congestion experienced.
pub const F_CE: u8 = 4;
/// Flag: a retransmission.
pub const F_RETX: u8 = 8;
/// Flag: ECN-capable transport (TCP segments of ECN connections; RoCE
/// data is ECN-capable without it).
pub const F_ECT: u8 = 16;
/// Flag: ECN echo (TCP ACKs).
pub const F_ECE: u8 = 32;
/// Flag: an unsignaled READ (on its request, and on the last packet of
/// its response): the requester gets no completion.
pub const F_SILENT: u8 = 64;

/// One packet.
#[derive(Copy, Clone, Debug)]
pub struct Packet {
    /// Kind.
    pub kind: PktKind,
    /// Priority (0..7).
    pub prio: u8,
    /// F_* flags.
    pub flags: u8,
    /// UDP or TCP source port (ECMP entropy).
    pub sport: u16,
    /// UDP or TCP destination port (4791 for RoCEv2).
    pub dport: u16,
    /// Source host index.
    pub src: u32,
    /// Destination host index.
    pub dst: u32,
    /// The QP this packet is addressed to (at the destination host).
    pub dst_qp: u32,
    /// PSN (data packets).
    pub psn: u32,
    /// Payload bytes.
    pub payload: u32,
    /// Bytes on the wire, preamble and IFG included.
    pub wire: u32,
    /// Ingress port at the current switch (for buffer accounting).
    pub ingress: u32,
    /// Kind-specific value (see [`PktKind`]).
    pub aux: u64,
    /// Work-request token of the message (data packets).
    pub token: u64,
    /// When the last bit reached the current node (cut-through bound).
    pub rx_end: Time,
}

/// A pool of packets with a free list.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    /// Store a packet and return its handle.
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PktId {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            PktId(i)
        } else {
            self.slots.push(p);
            PktId(self.slots.len() as u32 - 1)
        }
    }

    /// Return a packet's slot to the pool.
    #[inline]
    pub fn free(&mut self, id: PktId) {
        self.free.push(id.0);
    }

    /// Read a packet.
    #[inline]
    pub fn get(&self, id: PktId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    /// Modify a packet.
    #[inline]
    pub fn get_mut(&mut self, id: PktId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }

    /// Start loading a packet that an upcoming event will read.
    #[inline]
    pub fn prefetch(&self, id: PktId) {
        if let Some(p) = self.slots.get(id.0 as usize) {
            crate::engine::prefetch(p);
        }
    }

    /// Packets alive (allocated and not freed).
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Slots ever allocated (the pool's high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt() -> Packet {
        Packet {
            kind: PktKind::Write,
            prio: 3,
            flags: 0,
            sport: 0,
            dport: 4791,
            src: 0,
            dst: 1,
            dst_qp: 0,
            psn: 0,
            payload: 0,
            wire: 84,
            ingress: 0,
            aux: 0,
            token: 0,
            rx_end: Time::ZERO,
        }
    }

    #[test]
    fn freed_slots_are_reused() {
        let mut pool = PacketPool::default();
        let a = pool.alloc(pkt());
        let _b = pool.alloc(pkt());
        pool.free(a);
        let c = pool.alloc(pkt());
        assert_eq!(a, c);
        assert_eq!(pool.live(), 2);
        assert_eq!(pool.capacity_used(), 2);
    }
}
