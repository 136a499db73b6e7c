//! MPI point-to-point on the fabric: ping-pong equals the sum of its parts
//! for eager messages, large messages approach the link's goodput through
//! rendezvous, shared memory is used within a host, and runs repeat
//! bit for bit.

mod common;

use fabriclab_core::config::FabricSpec;
use fabriclab_core::mpi::job::{Job, JobSpec};
use fabriclab_core::mpi::patterns;
use fabriclab_core::mpi::program::{Phase, PhaseResult, Program, Timing};
use fabriclab_core::mpi::runtime::MpiCounters;
use fabriclab_core::mpi::sched::Schedule;
use fabriclab_core::net::Net;
use fabriclab_core::sim::{Outcome, Sim};
use fabriclab_core::units::{Rate, Time};
use fabriclab_core::wire::{roce_wire_bytes, Ext};

fn run(
    spec: &FabricSpec,
    np: u32,
    ppn: u32,
    scheds: Vec<Schedule>,
    phases: Vec<Phase>,
) -> (Vec<PhaseResult>, MpiCounters) {
    let net = Net::new(spec, 1).unwrap();
    let job = Job::place(
        net.topology(),
        &JobSpec {
            ppn: Some(ppn),
            ..JobSpec::with_np(np)
        },
    )
    .unwrap();
    let params = spec.mpi.params().unwrap();
    let prog = Program::new(
        job,
        params,
        scheds,
        patterns::sync_barrier(np),
        phases,
        false,
    );
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(prog));
    assert_eq!(sim.run(Some(Time::ms(10_000))), Outcome::Finished);
    let p = sim.app::<Program>(id).unwrap();
    (p.results().to_vec(), p.counters())
}

fn pingpong_half_rtt(
    spec: &FabricSpec,
    np: u32,
    ppn: u32,
    bytes: u64,
    reps: u32,
) -> (Time, MpiCounters) {
    let phases = vec![Phase {
        scheds: vec![0],
        setup: None,
        n: 2,
        warmup: 2,
        reps,
        timing: Timing::Loop,
        label: String::new(),
    }];
    let (res, c) = run(
        spec,
        np,
        ppn,
        vec![patterns::pingpong(2, 0, 1, bytes)],
        phases,
    );
    (
        Time::ps(res[0].rank_total[0].as_ps() / (2 * reps as u64)),
        c,
    )
}

#[test]
fn eager_pingpong_over_one_switch_is_the_sum_of_its_parts() {
    let spec = common::one_switch(2, "[switch]\nlatency_ns = 300\nforwarding = \"store_and_forward\"\n[nic]\ntx_latency_ns = 500\nrx_latency_ns = 300\n");
    let m = spec.mpi.params().unwrap();
    // Up to 984 B the SEND (40 B header + payload) fits one 1024 B packet.
    for bytes in [0u64, 8, 984] {
        let (half, c) = pingpong_half_rtt(&spec, 2, 1, bytes, 10);
        let wire = roce_wire_bytes((m.header + bytes) as u32, Ext::None, false) as u64;
        let link = Rate::gbps(100).tx_time(wire) + Time::ns(1000);
        let want = m.o_send + m.memcpy.tx_time(bytes) // sender CPU: overhead + copy out
            + Time::ns(500) + link + Time::ns(300) + link + Time::ns(300) // NIC, wire, switch, wire, NIC
            + m.o_recv + m.memcpy.tx_time(bytes); // receiver CPU: match + copy in
        assert_eq!(half, want, "{bytes} B: half round trip vs sum of parts");
        assert_eq!(c.rndv_msgs, 0);
        assert!(c.eager_msgs > 0);
    }
}

#[test]
fn large_pingpong_uses_rendezvous_and_approaches_goodput() {
    let spec = common::one_switch(2, "[nic]\nroce_mtu = 4096\n");
    let bytes = 4u64 << 20;
    let (half, c) = pingpong_half_rtt(&spec, 2, 1, bytes, 4);
    // 6 ping-pongs (2 warm-up) of 2 messages; the two sync barriers send
    // one zero-byte eager message per rank each.
    assert_eq!((c.rndv_msgs, c.eager_msgs), (12, 4));
    let mbps = bytes as f64 / half.as_secs_f64() / 1e6;
    // READ responses carry AETH: 4096 / (4096 + 82) of 12500 MB/s = 12254.
    let goodput = 12500.0 * 4096.0 / (4096.0 + roce_wire_bytes(0, Ext::Aeth, false) as f64);
    println!("4 MiB ping-pong: {mbps:.0} MB/s (goodput {goodput:.0})");
    assert!(
        mbps > 0.95 * goodput && mbps < goodput,
        "{mbps} vs {goodput}"
    );
}

#[test]
fn ranks_on_one_host_use_shared_memory() {
    let spec = common::one_switch(2, "");
    let (half_shm, c) = pingpong_half_rtt(&spec, 2, 2, 8, 10);
    // 12 ping-pongs of 2 messages + 2 sync barriers of 2 messages.
    assert_eq!(c.shm_msgs, 2 * 12 + 4);
    assert_eq!(c.eager_msgs + c.rndv_msgs, 0, "nothing crosses the network");
    let (half_net, _) = pingpong_half_rtt(&spec, 2, 1, 8, 10);
    assert!(half_shm < half_net, "{half_shm} vs {half_net}");
    // Large shared-memory messages: one copy at memcpy speed.
    let m = spec.mpi.params().unwrap();
    let (big, c) = pingpong_half_rtt(&spec, 2, 2, 1 << 20, 4);
    assert_eq!(c.eager_msgs + c.rndv_msgs, 0);
    let copy = m.memcpy.tx_time(1 << 20);
    assert!(
        big > copy && big < copy + Time::us(2),
        "{big} vs copy {copy}"
    );
}

#[test]
fn same_seed_same_times() {
    let spec = common::one_switch(4, "");
    let phases = vec![
        Phase {
            scheds: vec![0],
            setup: None,
            n: 4,
            warmup: 1,
            reps: 5,
            timing: Timing::Loop,
            label: String::new(),
        },
        Phase {
            scheds: vec![1],
            setup: None,
            n: 4,
            warmup: 1,
            reps: 3,
            timing: Timing::Loop,
            label: String::new(),
        },
    ];
    let s = || vec![patterns::exchange(4, 65536), patterns::sendrecv(4, 100)];
    let a = run(&spec, 4, 1, s(), phases.clone());
    let b = run(&spec, 4, 1, s(), phases);
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
}

#[test]
fn rendezvous_by_write_delivers_like_read() {
    let read = common::one_switch(2, "[nic]\nroce_mtu = 4096\n");
    let write = common::one_switch(2, "[nic]\nroce_mtu = 4096\n[mpi]\nrndv = \"write\"\n");
    // Both modes cross the wire three times before the data has landed:
    // RTS, then the READ request or clear-to-send, then the data (write
    // mode's completion message follows the last WRITE packet). They
    // differ only by the sizes of those frames (a 40 B CTS against a READ
    // request, RETH against AETH on the data, the trailing FIN), a few
    // tens of ns; one more crossing of this fabric (two 1 us cables) would
    // cost over 2 us.
    for bytes in [64 << 10, 1 << 20, 4 << 20] {
        let (tr, cr) = pingpong_half_rtt(&read, 2, 1, bytes, 4);
        let (tw, cw) = pingpong_half_rtt(&write, 2, 1, bytes, 4);
        assert_eq!(cr.rndv_msgs, cw.rndv_msgs);
        let diff = tw.as_ps() as i64 - tr.as_ps() as i64;
        assert!(diff.abs() < 50_000, "{bytes} B: write {tw} vs read {tr}");
    }
}

#[test]
fn qps_per_host_pair_are_shared_by_the_ranks() {
    let per_rank = common::one_switch(2, "");
    let per_host = common::one_switch(2, "[mpi]\nqp_sharing = \"per_host_pair\"\n");
    // 4 ranks, 2 per host: every rank exchanges with both neighbours.
    let phases = vec![Phase {
        scheds: vec![0],
        setup: None,
        n: 4,
        warmup: 0,
        reps: 2,
        timing: Timing::Loop,
        label: String::new(),
    }];
    let (_, a) = run(
        &per_rank,
        4,
        2,
        vec![patterns::exchange(4, 1000)],
        phases.clone(),
    );
    let (_, b) = run(&per_host, 4, 2, vec![patterns::exchange(4, 1000)], phases);
    // Exchange pairs (0,1),(1,2),(2,3),(3,0); (0,1) and (2,3) share a host.
    // Sync barrier adds (0,2),(1,3). Cross-host rank pairs: (1,2),(3,0),
    // (0,2),(1,3) -> 4 QP pairs; per host pair: 1.
    assert_eq!((a.qps, b.qps), (8, 2));
    assert_eq!(a.eager_msgs, b.eager_msgs);
}

#[test]
fn copies_on_one_host_share_its_memory_bandwidth() {
    // Two pairs of ranks on one host move 1 MiB each through shared memory
    // at the same time; with memory bandwidth below two copies' worth the
    // transfer slows down, and by the predicted amount.
    let extra = "[mpi]\nmemcpy_gbps = 10\nhost_memory_gbps = 10\n";
    let spec = common::one_switch(2, extra);
    let m = spec.mpi.params().unwrap();
    let one = vec![Phase {
        scheds: vec![0],
        setup: None,
        n: 4,
        warmup: 0,
        reps: 1,
        timing: Timing::Loop,
        label: String::new(),
    }];
    let single = patterns::window(4, &[(0, 1)], 1 << 20, 1, false);
    let double = patterns::window(4, &[(0, 1), (2, 3)], 1 << 20, 1, false);
    let (r1, _) = run(&spec, 4, 4, vec![single], one.clone());
    let (r2, _) = run(&spec, 4, 4, vec![double], one);
    let (t1, t2) = (r1[0].rank_total[0], r2[0].rank_total[0]);
    let copy = m.memcpy.tx_time(1 << 20);
    assert!(
        t1 > copy && t1 < copy + Time::us(3),
        "alone {t1} vs one copy {copy}"
    );
    // Two copies at once share 10 Gb/s: each runs at half speed, so the
    // pair ends one whole copy later than alone, neither less nor more.
    assert!(
        t2 > t1 + copy - Time::us(3) && t2 < t1 + copy + Time::us(3),
        "two pairs {t2} should take one copy ({copy}) longer than {t1}"
    );
}
