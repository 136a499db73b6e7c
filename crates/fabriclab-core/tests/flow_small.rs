//! The flow backend's small messages (`net/flow/small.rs`): one packet of
//! at most `[sim] flow_small_bytes` goes as a packet outside the fluid
//! solve. Pinned against the packet engine (an incast of small messages
//! queues at the port into the host, packet for packet) and against hand
//! arithmetic (the wait for a NIC's turn behind the QPs with data).

mod common;
use common::*;
use fabriclab_core::config::{Backend, FabricSpec, QpArbitration};
use fabriclab_core::net::{AppEvent, Net, OpKind, QpId};
use fabriclab_core::sim::{App, Outcome, Sim};
use fabriclab_core::traffic::flows::FlowSpec;
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{roce_wire_bytes, Ext};

fn flow_backend(mut spec: FabricSpec) -> FabricSpec {
    spec.sim.backend = Backend::Flow;
    spec
}

fn small(src: &str, dst: &str, bytes: u64, start_us: f64) -> FlowSpec {
    let mut f = flow(src, dst, bytes);
    f.start_us = start_us;
    f
}

#[test]
fn an_incast_of_small_messages_queues_into_the_host_as_on_the_packet_engine() {
    // Eight hosts each WRITE 64 B to h0 at once: the switch port into h0
    // sends them back to back, one wire time apart.
    let spec = one_switch(9, "");
    let flows: Vec<FlowSpec> = (1..9)
        .map(|s| small(&format!("h{s}"), "h0", 64, 0.0))
        .collect();
    let (_, packet) = run_flows(&spec, &flows, 1);
    let (sim, fluid) = run_flows(&flow_backend(spec.clone()), &flows, 1);
    let sorted = |r: &[fabriclab_core::traffic::flows::FlowResult]| {
        let mut v: Vec<u64> = r.iter().map(|x| x.delivered_ps.unwrap()).collect();
        v.sort_unstable();
        v
    };
    let (p, f) = (sorted(&packet), sorted(&fluid));
    assert_eq!(p, f, "delivered, ps");
    let wire = roce_wire_bytes(64, Ext::Reth, false) as u64;
    let gap = Rate::from_gbps_f64(100.0).tx_time(wire).0;
    for w in f.windows(2) {
        assert_eq!(w[1] - w[0], gap, "one {wire} B packet apart at 100G");
    }
    let stats = sim.net.flow_stats().unwrap();
    assert_eq!((stats.small, stats.flows, stats.solves), (8, 0, 0));
}

/// When h0's 64 B SEND to h3 is delivered, posted at 20 us while h0
/// sends long WRITEs to `busy` other hosts (all at their share of h0's
/// port), on the flow backend with `arbitration`; and alone.
fn send_behind(busy: u32, arbitration: QpArbitration, small_bytes: u64) -> (u64, u64, u64) {
    let mut spec = flow_backend(one_switch(8, ""));
    spec.nic.qp_arbitration = arbitration;
    spec.sim.flow_small_bytes = small_bytes;
    let mut s = small("h0", "h3", 64, 20.0);
    s.op = "send".into();
    let mut flows: Vec<FlowSpec> = (0..busy)
        .map(|i| flow("h0", &format!("h{}", 4 + i), 4 << 20))
        .collect();
    flows.push(s.clone());
    let (sim, loaded) = run_flows(&spec, &flows, 1);
    let (_, alone) = run_flows(&spec, &[s], 1);
    let small_sent = sim.net.flow_stats().unwrap().small;
    (
        loaded.last().unwrap().delivered_ps.unwrap(),
        alone[0].delivered_ps.unwrap(),
        small_sent,
    )
}

#[test]
fn a_small_message_waits_its_turn_at_the_nic_behind_the_qps_with_data() {
    let spec = one_switch(8, "");
    let full = roce_wire_bytes(spec.nic.roce_mtu, Ext::None, false) as u64;
    let round = Rate::from_gbps_f64(100.0).tx_time(full).0;
    // `ring`: the packet on the wire (half of one) and one of every other
    // QP: (n - 1/2) full packets; `cyclic`: half a round, n / 2.
    for n in [1u32, 3] {
        let (loaded, alone, sent) = send_behind(n, QpArbitration::Ring, 256);
        assert_eq!(sent, 1);
        assert_eq!(
            loaded - alone,
            round * (2 * n as u64 - 1) / 2,
            "ring, {n} busy"
        );
        let (loaded, alone, _) = send_behind(n, QpArbitration::Cyclic, 256);
        assert_eq!(loaded - alone, round * n as u64 / 2, "cyclic, {n} busy");
    }
    // With nothing else on the port it goes at once: the idle time.
    let (loaded, alone, _) = send_behind(0, QpArbitration::Ring, 256);
    assert_eq!(loaded, alone);
    // flow_small_bytes = 0: a flow at its fair share, not a packet.
    let (loaded, alone, sent) = send_behind(3, QpArbitration::Ring, 0);
    assert_eq!(sent, 0);
    let wire = roce_wire_bytes(64, Ext::None, false) as u64;
    let share =
        Rate::from_gbps_f64(25.0).tx_time(wire).0 - Rate::from_gbps_f64(100.0).tx_time(wire).0;
    assert_eq!(loaded - alone, share, "64 B at a quarter of the link");
}

#[test]
fn a_message_over_the_limit_or_of_two_packets_stays_a_flow() {
    let spec = flow_backend(one_switch(2, ""));
    let mtu = spec.nic.roce_mtu as u64;
    for (limit, bytes, sent) in [
        (256, 256, 1),
        (256, 257, 0),
        (4096, mtu, 1),
        (4096, mtu + 1, 0),
    ] {
        let mut s = spec.clone();
        s.sim.flow_small_bytes = limit;
        let (sim, _) = run_flows(&s, &[flow("h0", "h1", bytes)], 1);
        let st = sim.net.flow_stats().unwrap();
        assert_eq!(
            (st.small, st.flows),
            (sent, 1 - sent),
            "{bytes} B, limit {limit}"
        );
    }
}

#[test]
fn a_limit_beyond_one_packet_is_refused_with_the_range() {
    let e = FabricSpec::from_toml(
        "[topology]\nkind = \"leaf_spine\"\nspines = 0\nleaves = 1\nhosts_per_leaf = 2\nhost_link_gbps = 100\nuplink_gbps = 100\n\
         [sim]\nbackend = \"flow\"\nflow_small_bytes = 5000\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("sim.flow_small_bytes must be between 0 and 4096 B"),
        "{e}"
    );
}

/// Run the app `make` builds on 8 hosts of one switch (MTU 4 KiB), on the
/// packet engine then on the flow backend: what `read` takes of each.
fn on_both_backends<A: App + 'static, R>(
    make: impl Fn() -> A,
    read: impl Fn(&A, Backend) -> R,
) -> Vec<R> {
    [Backend::Packet, Backend::Flow]
        .into_iter()
        .map(|backend| {
            let mut spec = one_switch(8, "[nic]\nroce_mtu = 4096\n");
            spec.sim.backend = backend;
            let mut sim = Sim::new(Net::new(&spec, 1).unwrap());
            let id = sim.add_app(Box::new(make()));
            assert_eq!(sim.run(None), Outcome::Finished);
            read(sim.app::<A>(id).unwrap(), backend)
        })
        .collect()
}

/// h0 keeps its port busy with WRITEs to h1-h6; on its QP to h7 it posts
/// a 64 B SEND at 20 us, an 8 B READ at 20.8 us (after the SEND reached the
/// NIC, before its turn) and another 64 B SEND at 20.9 us.
struct InOrder {
    qp: Option<QpId>,
    /// (token, when completed, ps)
    completed: Vec<(u64, u64)>,
}

impl App for InOrder {
    fn start(&mut self, net: &mut Net, me: u32) {
        for d in 1..7 {
            let (a, _) = net.connect(0, d, me, me, None).unwrap();
            net.post(a, OpKind::Write, 4 << 20, 100 + d as u64).unwrap();
        }
        self.qp = Some(net.connect(0, 7, me, me, None).unwrap().0);
        for (k, at_ns) in [(1, 20_000), (2, 20_800), (3, 20_900)] {
            net.set_app_timer(me, Time::ns(at_ns), k);
        }
    }
    fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
        let qp = self.qp.unwrap();
        match ev {
            AppEvent::Timer { token: 2 } => net.post(qp, OpKind::Read, 8, 2).unwrap(),
            AppEvent::Timer { token } => net.post(qp, OpKind::Send, 64, token).unwrap(),
            AppEvent::Completed { token, .. } if token < 100 => {
                self.completed.push((token, net.now().0))
            }
            _ => {}
        }
    }
    fn done(&self) -> bool {
        self.completed.len() == 3
    }
}

#[test]
fn what_is_posted_behind_a_small_message_waiting_for_its_turn_does_not_overtake_it() {
    // The SEND waits 5.5 packets of 4 KiB (1.8 us) for its turn at the NIC;
    // the READ and the second SEND, posted meanwhile, leave after it (the
    // QP stays busy until then), so it completes first.
    let runs = on_both_backends(
        || InOrder {
            qp: None,
            completed: Vec::new(),
        },
        |app: &InOrder, backend| {
            let mut done = app.completed.clone();
            assert_eq!(done[0].0, 1, "{}: {done:?}", backend.name());
            done.sort_unstable();
            done
        },
    );
    // Each within 3 % of the packet engine: the READ request waits its
    // turn at the NIC too, as a packet of its QP (before, it left at once
    // and the READ and the SEND behind it were 6-7 % early).
    for (p, f) in runs[0].iter().zip(&runs[1]) {
        let rel = f.1 as f64 / p.1 as f64 - 1.0;
        println!(
            "token {}: flow {} ps, packet {} ps ({:+.2} %)",
            p.0,
            f.1,
            p.1,
            rel * 100.0
        );
        assert!(
            rel.abs() < 0.03,
            "token {}: flow {} ps, packet {} ps",
            p.0,
            f.1,
            p.1
        );
    }
}

#[test]
fn a_limit_of_zero_makes_every_message_a_flow_even_of_zero_bytes() {
    for (limit, sent) in [(0, 0), (256, 1)] {
        let mut spec = flow_backend(one_switch(2, ""));
        spec.sim.flow_small_bytes = limit;
        let (sim, r) = run_flows(&spec, &[flow("h0", "h1", 0)], 1);
        assert!(r[0].completed_ps.is_some());
        assert_eq!(sim.net.flow_stats().unwrap().small, sent, "limit {limit}");
    }
}

/// Start h0's 4 MiB WRITEs to h1 and h2 (two flows on its port from then
/// on), set a timer for 20 us, and return h0's QP to h7.
fn busy_h0_then_qp_to_h7(net: &mut Net, me: u32) -> QpId {
    for d in 1..3 {
        let (a, _) = net.connect(0, d, me, me, None).unwrap();
        net.post(a, OpKind::Write, 4 << 20, 100 + d as u64).unwrap();
    }
    net.set_app_timer(me, Time::ns(20_000), 0);
    net.connect(0, 7, me, me, None).unwrap().0
}

/// h0 keeps its port busy with WRITEs to h1 and h2; at 20 us `post`
/// posts on its QP to h7, ending with a 64 B SEND (token 1). Records when
/// the SEND landed at h7 and when the READ of token 10 (if any) completed.
struct BehindBusyNic {
    post: fn(&mut Net, QpId),
    reads: bool,
    qp: Option<QpId>,
    read_done: Option<u64>,
    landed: Option<u64>,
}

impl BehindBusyNic {
    fn new(post: fn(&mut Net, QpId), reads: bool) -> BehindBusyNic {
        BehindBusyNic {
            post,
            reads,
            qp: None,
            read_done: None,
            landed: None,
        }
    }
}

impl App for BehindBusyNic {
    fn start(&mut self, net: &mut Net, me: u32) {
        self.qp = Some(busy_h0_then_qp_to_h7(net, me));
    }
    fn on_event(&mut self, net: &mut Net, _me: u32, ev: AppEvent) {
        match ev {
            AppEvent::Timer { .. } => (self.post)(net, self.qp.unwrap()),
            AppEvent::Completed { token: 10, .. } => self.read_done = Some(net.now().0),
            AppEvent::Received { token: 1, .. } => self.landed = Some(net.now().0),
            _ => {}
        }
    }
    fn done(&self) -> bool {
        self.landed.is_some() && (!self.reads || self.read_done.is_some())
    }
}

/// Five 8 B READs sharing a token, the first four unsignaled, as the MPI
/// layer posts a rendezvous' fragments (the flow backend holds the four
/// as one entry, a train), then the SEND.
fn merged_reads(net: &mut Net, qp: QpId) {
    for _ in 0..4 {
        net.post_unsignaled(qp, OpKind::Read, 8, 10).unwrap();
    }
    net.post(qp, OpKind::Read, 8, 10).unwrap();
    net.post(qp, OpKind::Send, 64, 1).unwrap();
}

/// Five signaled 8 B READs of their own, then the SEND.
fn separate_reads(net: &mut Net, qp: QpId) {
    for k in 0..4 {
        net.post(qp, OpKind::Read, 8, 20 + k).unwrap();
    }
    net.post(qp, OpKind::Read, 8, 10).unwrap();
    net.post(qp, OpKind::Send, 64, 1).unwrap();
}

#[test]
fn a_train_of_read_requests_holds_its_qp_a_nic_round_each() {
    // Each READ request waits its turn at h0's NIC behind the two WRITEs
    // (a round: two 4 KiB packets and the request), and the SEND behind
    // them one more: it lands when it does on the packet engine (measured
    // +0.16 rounds either way). Were the requests of a train after the
    // first to leave with it, it would land 2.9 rounds early; were a
    // packet right after its QP's own to wait (n - 1/2) packets, as if
    // the QP had been idle, 0.5 round early (merged) or 1.1 (separate).
    let round_ps = 2.0
        * Rate::gbps(100)
            .tx_time(roce_wire_bytes(4096, Ext::None, false) as u64)
            .0 as f64;
    for merged in [true, false] {
        let post = if merged { merged_reads } else { separate_reads };
        let runs = on_both_backends(
            || BehindBusyNic::new(post, true),
            |app: &BehindBusyNic, _| (app.landed.unwrap(), app.read_done.unwrap()),
        );
        let (p, f) = (runs[0].0 as f64, runs[1].0 as f64);
        let (pr, fr) = (runs[0].1 as f64, runs[1].1 as f64);
        println!(
            "merged {merged}: SEND landed: packet {p} ps, flow {f} ps ({:+.2} rounds); \
             last READ done: packet {pr} ps, flow {fr} ps ({:+.2} rounds)",
            (f - p) / round_ps,
            (fr - pr) / round_ps
        );
        assert!(
            (f - p).abs() < 0.3 * round_ps,
            "merged {merged}: packet {p} ps, flow {f} ps"
        );
        assert!(
            (fr - pr).abs() < 0.3 * round_ps,
            "merged {merged}: READ done: packet {pr} ps, flow {fr} ps"
        );
    }
}

/// A 64 KiB WRITE, then the SEND.
fn write_then_send(net: &mut Net, qp: QpId) {
    net.post(qp, OpKind::Write, 64 << 10, 2).unwrap();
    net.post(qp, OpKind::Send, 64, 1).unwrap();
}

#[test]
fn a_small_message_behind_its_qps_flow_waits_a_whole_round_with_adaptive_routing_too() {
    // Under adaptive routing a QP's next message does not continue its
    // flow (each flow picks its path), so the end releases the QP; the
    // SEND ready behind it still waits a whole NIC round, as with ECMP
    // (it waited the (n - 1/2) packets of an idle QP: half a packet early).
    let landed = |extra: &str| {
        let mut spec = one_switch(8, &format!("[nic]\nroce_mtu = 4096\n{extra}"));
        spec.sim.backend = Backend::Flow;
        let mut sim = Sim::new(Net::new(&spec, 1).unwrap());
        let id = sim.add_app(Box::new(BehindBusyNic::new(write_then_send, false)));
        assert_eq!(sim.run(None), Outcome::Finished);
        sim.app::<BehindBusyNic>(id).unwrap().landed.unwrap()
    };
    let ecmp = landed("");
    let adaptive = landed("[routing]\nmode = \"adaptive\"\n");
    println!("SEND landed: ECMP {ecmp} ps, adaptive {adaptive} ps");
    assert!(
        ecmp.abs_diff(adaptive) <= 10,
        "ECMP {ecmp} ps, adaptive {adaptive} ps"
    );
}
