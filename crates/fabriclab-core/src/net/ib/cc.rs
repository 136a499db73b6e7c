//! InfiniBand congestion control (IBA 1.2.1 Annex A10), QP-based.
//!
//! Congestion point (switch egress, as the packet leaves): a port VL
//! holding at least `threshold_bytes` (credited packets in the port's queue
//! of the packet's SL plus packets of the VL waiting for credits) is
//! congested; it FECN-marks one in every `marking_rate + 1` data packets of
//! at least `packet_size_credits` credits, unless the VL is itself waiting
//! for credits (a victim of congestion further on), which marks only with
//! `victim_mask` (OpenSM `cc_sw_cong_setting_*`).
//!
//! Notification (destination HCA): a FECN-marked data packet is answered
//! with a BECN in a congestion notification packet (LRH, BTH, ICRC, VCRC:
//! 26 B) to the sending QP, after the NIC's receive latency.
//!
//! Reaction (source HCA, per QP): a BECN raises the QP's CCTI by
//! `ccti_increase` up to `ccti_limit`; a timer of `ccti_timer` x 1.024 us,
//! running while CCTI > `ccti_min`, lowers it by one per expiry (OpenSM
//! `cc_ca_cong_setting_*`; the Linux hfi1 driver's `cca_timer_fn`). The
//! table entry CCT[CCTI] = (shift, multiplier) sets the inter-packet delay
//! IPD = (MTU packet time >> shift) x multiplier (hfi1 `set_link_ipg`); it
//! is applied as the QP's rate limit, line x T / (T + IPD) with T the time
//! of an MTU packet at line rate, so an MTU packet is followed by exactly
//! IPD of idle and a smaller one by a proportional gap (IBA static rate
//! control semantics). BECNs are counted in the QP counters' `cnps_tx`
//! (receiver) and `cnps_rx` (sender). Left out: SL/port-based control,
//! the trigger threshold (a logging event), credit-starvation marking,
//! the congestion log.

use super::super::packet::{Packet, PktId, PktKind, F_CE};
use super::super::{Ev, Net, PortIdx, QpId};
use crate::config::IbSpec;
use crate::units::{Rate, Time};
use crate::wire::{ib_credits, ib_wire_bytes, Ext};

/// IB congestion-control parameters in simulation units.
pub(crate) struct CcConf {
    threshold: u64,
    marking_rate: u32,
    packet_size_credits: u64,
    victim_mask: bool,
    increase: u16,
    timer: Time,
    min: u16,
    limit: u16,
    table: Vec<[u16; 2]>,
    /// Wire bytes of an MTU packet (the IPD's unit before the shift).
    mtu_wire: u64,
}

impl CcConf {
    pub fn new(ib: &IbSpec) -> CcConf {
        let cc = &ib.cc;
        CcConf {
            threshold: cc.threshold_bytes,
            marking_rate: cc.marking_rate,
            packet_size_credits: cc.packet_size_credits as u64,
            victim_mask: cc.victim_mask,
            increase: cc.ccti_increase,
            timer: Time::ps(1_024_000 * cc.ccti_timer as u64),
            min: cc.ccti_min,
            limit: cc.ccti_limit,
            table: cc.table(),
            mtu_wire: ib_wire_bytes(ib.mtu, Ext::None) as u64,
        }
    }

    /// The injection rate of a QP of line rate `line` at index `ccti`.
    fn rate(&self, line: Rate, ccti: u16) -> Rate {
        let [shift, mult] = self.table[ccti as usize];
        let t = line.tx_time(self.mtu_wire).0 as u128;
        let ipd = (t >> shift) * mult as u128;
        Rate(((line.0 as u128 * t) / (t + ipd)).max(1) as u64)
    }
}

impl Net {
    /// Congestion point: maybe FECN-mark `pkt` as it leaves egress `out`.
    pub(super) fn ib_mark_fecn(&mut self, out: PortIdx, pkt: PktId, prio: usize, vl: usize) {
        let (kind, wire) = {
            let p = self.pkts.get(pkt);
            (p.kind, p.wire)
        };
        let queued = self.ports[out as usize].prio[prio].qbytes;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let conf = ib.cc.as_ref().expect("congestion control");
        let port = &mut ib.ports[out as usize];
        let depth = queued + port.wait_bytes[vl];
        // A victim's next waiting packet would not fit in the downstream
        // buffer even if the packets queued here had not reserved their
        // credits yet: what holds the VL back is further on.
        let victim = port.waitq[vl].front().is_some_and(|&head| {
            let need = ib_credits(self.pkts.get(head).wire);
            port.limit[vl] + port.queued_blocks[vl] - port.sent[vl] < need
        });
        if !kind.is_data()
            || depth < conf.threshold
            || ib_credits(wire) < conf.packet_size_credits
            || (victim && !conf.victim_mask)
        {
            return;
        }
        let mark = port.mark_count == 0;
        port.mark_count = if port.mark_count >= conf.marking_rate {
            0
        } else {
            port.mark_count + 1
        };
        if mark {
            port.c.fecn_marks += 1;
            self.pkts.get_mut(pkt).flags |= F_CE;
        }
    }

    /// Notification: answer FECN-marked data packet `p` with a BECN.
    pub(super) fn ib_send_becn(&mut self, p: &Packet) {
        let q = p.dst_qp as usize;
        self.qps[q].counters.cnps_tx += 1;
        let at = self.now() + self.p.nic_rx;
        let cnp = self.pkts.alloc(Packet {
            kind: PktKind::Cnp,
            prio: self.p.ctrl_prio,
            flags: 0,
            sport: self.qps[q].sport,
            dport: p.sport,
            src: p.dst,
            dst: p.src,
            dst_qp: self.qps[q].peer_qp,
            psn: 0,
            payload: 0,
            wire: ib_wire_bytes(0, Ext::None),
            ingress: 0,
            aux: 0,
            token: 0,
            rx_end: at,
        });
        self.q.schedule(at, Ev::Inject(cnp));
    }

    /// Reaction: a BECN reached QP `q`.
    pub(super) fn ib_on_becn(&mut self, q: u32) {
        let now = self.now();
        self.qps[q as usize].counters.cnps_rx += 1;
        let ib = self.ib.as_mut().expect("InfiniBand");
        let Some(conf) = ib.cc.as_ref() else { return };
        if ib.cc_qps.len() <= q as usize {
            ib.cc_qps.resize(q as usize + 1, Default::default());
        }
        let st = &mut ib.cc_qps[q as usize];
        let ccti = (st.ccti + conf.increase).min(conf.limit);
        if st.timer.due().is_none() && ccti > conf.min {
            let at = now + conf.timer;
            let g = st.timer.arm(at);
            self.q.schedule(at, Ev::IbCcti(q, g));
        }
        self.ib_set_ccti(q, ccti);
    }

    /// The CCTI timer of QP `q` expired: lower its index by one.
    pub(crate) fn on_ib_ccti(&mut self, q: u32, g: u32) {
        let now = self.now();
        let ib = self.ib.as_mut().expect("InfiniBand");
        let conf = ib.cc.as_ref().expect("congestion control");
        let st = &mut ib.cc_qps[q as usize];
        if !st.timer.fire(g) {
            return;
        }
        let ccti = st.ccti.saturating_sub(1).max(conf.min);
        if ccti > conf.min {
            let at = now + conf.timer;
            let g = st.timer.arm(at);
            self.q.schedule(at, Ev::IbCcti(q, g));
        }
        self.ib_set_ccti(q, ccti);
    }

    fn ib_set_ccti(&mut self, q: u32, ccti: u16) {
        let ib = self.ib.as_mut().expect("InfiniBand");
        let conf = ib.cc.as_ref().expect("congestion control");
        let st = &mut ib.cc_qps[q as usize];
        st.ccti = ccti;
        let qp = &mut self.qps[q as usize];
        let base = *st.base.get_or_insert(qp.line);
        let old = qp.rate();
        qp.line = conf.rate(base, ccti);
        self.qp_rate_changed(q, old);
    }

    /// Current congestion control table index of QP `qp` (0 without CC).
    pub fn ib_ccti(&self, qp: QpId) -> u16 {
        self.ib
            .as_ref()
            .and_then(|ib| ib.cc_qps.get(qp.0 as usize))
            .map_or(0, |s| s.ccti)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_entry_sets_an_mtu_packet_gap_of_ipd() {
        let ib = IbSpec::default();
        let conf = CcConf::new(&ib);
        let line = Rate::gbps(100);
        // Default table: entry 17 is the first non-zero (multiplier 1).
        assert_eq!(conf.rate(line, 16), line);
        let t = line.tx_time(4122).0; // 329.76 ns
        let r = conf.rate(line, 17);
        // Rate line x T / 2T: an MTU packet every 2 T.
        assert_eq!(r, Rate::gbps(50));
        assert_eq!(r.tx_time(4122).0, 2 * t);
        // Entry 127: multiplier 57, a 58 T cycle.
        assert_eq!(conf.table[127], [0, 57]);
        assert_eq!(conf.rate(line, 127).0, 100_000_000_000 / 58);
    }
}
