//! A bulk-transfer workload over TCP for the tests: each flow writes its
//! bytes as fast as the send buffer allows and checks, at every delivery,
//! that the receiving application gets the stream exactly once and in
//! order. Optional sampling of one egress queue.
#![allow(dead_code)]

use fabriclab_core::config::{FabricSpec, TcpCc};
use fabriclab_core::net::{AppEvent, Net, TcpCounters, TcpId};
use fabriclab_core::sim::{App, Outcome, Sim};
use fabriclab_core::units::Time;

/// One TCP flow.
#[derive(Clone, Debug)]
pub struct Bulk {
    pub src: String,
    pub dst: String,
    pub bytes: u64,
    pub cc: Option<TcpCc>,
    /// Sequence numbers whose first transmission is lost.
    pub lose: Vec<u64>,
    pub trace_cwnd: bool,
}

pub fn bulk(src: &str, dst: &str, bytes: u64, cc: Option<TcpCc>) -> Bulk {
    Bulk {
        src: src.into(),
        dst: dst.into(),
        bytes,
        cc,
        lose: Vec::new(),
        trace_cwnd: false,
    }
}

/// What happened to a flow.
#[derive(Clone, Debug, Default)]
pub struct FlowLog {
    pub conn: Option<TcpId>,
    pub written: u64,
    pub delivered: u64,
    /// Every delivery was at the next expected offset.
    pub in_order: bool,
    /// (time, bytes delivered so far), one entry per delivery.
    pub deliveries: Vec<(Time, u64)>,
    pub finished: Option<Time>,
}

/// The workload.
pub struct BulkApp {
    pub flows: Vec<Bulk>,
    pub logs: Vec<FlowLog>,
    done: usize,
    /// Sample `queue` (node, peer) every `period`; (time, bytes) pairs.
    pub queue: Option<(String, String, Time)>,
    pub queue_samples: Vec<(Time, u64)>,
    pub background: bool,
}

impl BulkApp {
    pub fn new(flows: Vec<Bulk>) -> BulkApp {
        let logs = vec![
            FlowLog {
                in_order: true,
                ..Default::default()
            };
            flows.len()
        ];
        BulkApp {
            flows,
            logs,
            done: 0,
            queue: None,
            queue_samples: Vec::new(),
            background: false,
        }
    }

    fn index(&self, conn: TcpId) -> usize {
        self.logs
            .iter()
            .position(|l| l.conn == Some(conn))
            .expect("a flow of this app")
    }

    fn write(&mut self, net: &mut Net, i: usize) {
        let conn = self.logs[i].conn.unwrap();
        let total = self.flows[i].bytes;
        while self.logs[i].written < total {
            let space = net.tcp_send_space(conn);
            if space == 0 {
                net.tcp_notify_writable(conn);
                return;
            }
            let n = space.min(total - self.logs[i].written).min(128 << 10);
            net.tcp_write(conn, n);
            self.logs[i].written += n;
        }
    }
}

impl App for BulkApp {
    fn start(&mut self, net: &mut Net, me: u32) {
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            let (s, d) = (net.host(&f.src).unwrap(), net.host(&f.dst).unwrap());
            let conn = net.tcp_connect(s, d, me, f.cc).unwrap();
            net.tcp_notify_delivery(conn, true);
            for &seq in &f.lose {
                net.tcp_lose_segment(conn, seq);
            }
            if f.trace_cwnd {
                net.tcp_trace_cwnd(conn);
            }
            self.logs[i].conn = Some(conn);
            self.write(net, i);
        }
        if let Some((_, _, p)) = &self.queue {
            net.set_app_timer(me, *p, 0);
        }
    }

    fn on_event(&mut self, net: &mut Net, me: u32, ev: AppEvent) {
        match ev {
            AppEvent::TcpWritable { conn } => {
                let i = self.index(conn);
                self.write(net, i);
            }
            AppEvent::TcpDelivered {
                conn,
                offset,
                bytes,
            } => {
                let i = self.index(conn);
                let log = &mut self.logs[i];
                if offset != log.delivered {
                    log.in_order = false;
                }
                log.delivered = log.delivered.max(offset + bytes);
                log.deliveries.push((net.now(), log.delivered));
                if log.delivered >= self.flows[i].bytes && log.finished.is_none() {
                    log.finished = Some(net.now());
                    // Done once the sender has the last ACK too.
                    net.set_app_timer(me, net.now(), 1 + i as u64);
                }
            }
            AppEvent::Timer { token } if token > 0 => {
                let i = token as usize - 1;
                let conn = self.logs[i].conn.unwrap();
                if net.tcp_counters(conn).acked_bytes >= self.flows[i].bytes {
                    self.done += 1;
                } else {
                    net.set_app_timer(me, net.now() + Time::us(1), token);
                }
            }
            AppEvent::Timer { .. } => {
                let (node, peer, p) = self.queue.clone().unwrap();
                let q = net.queue_bytes(&node, &peer).unwrap();
                self.queue_samples.push((net.now(), q));
                net.set_app_timer(me, net.now() + p, 0);
            }
            _ => {}
        }
    }

    fn done(&self) -> bool {
        self.done == self.flows.len()
    }

    fn background(&self) -> bool {
        self.background
    }
}

/// Run flows to completion (or `limit`); returns the sim and the app id.
pub fn run_bulk(
    spec: &FabricSpec,
    app: BulkApp,
    seed: u64,
    limit: Option<Time>,
) -> (Sim, u32, Outcome) {
    let net = Net::new(spec, seed).unwrap();
    let mut sim = Sim::new(net);
    let id = sim.add_app(Box::new(app));
    let outcome = sim.run(limit);
    (sim, id, outcome)
}

pub fn app(sim: &Sim, id: u32) -> &BulkApp {
    sim.app::<BulkApp>(id).unwrap()
}

pub fn counters(sim: &Sim, id: u32, i: usize) -> TcpCounters {
    sim.net
        .tcp_counters(app(sim, id).logs[i].conn.unwrap())
        .clone()
}

/// Delivered bytes of a flow at time `t` (from its delivery log).
pub fn delivered_at(log: &FlowLog, t: Time) -> u64 {
    match log.deliveries.partition_point(|&(at, _)| at <= t) {
        0 => 0,
        k => log.deliveries[k - 1].1,
    }
}

/// Jain's fairness index of some rates.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}
