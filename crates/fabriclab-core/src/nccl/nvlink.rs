//! NVLink inside a GPU server: a non-blocking crossbar (NVSwitch) where
//! each GPU has `nvlink_gbps` of NVLink in each direction. Concurrent
//! transfers are fluid flows sharing the sending GPU's egress and the
//! receiving GPU's ingress max-min fairly (progressive filling over the
//! 2 x G ports of the server).
//!
//! One pending timer per server, lazily invalidated by a generation
//! counter: a transfer starting or ending advances every transfer of that
//! server and recomputes the rates, a cost in the transfers active on one
//! server (a few hundred at most: GPUs x channels).
//!
//! Left out: NVLink's packet and flow-control overheads (the rate is the
//! data rate), NVSwitch's in-switch reduction (NVLS), and servers whose
//! GPUs are linked directly without NVSwitch.

use crate::net::Net;
use crate::units::{Rate, Time};

/// Bits of a timer token that hold the generation.
const GEN_BITS: u64 = 32;
/// Tolerance of the filling, bytes per ps.
const EPS: f64 = 1e-12;

struct Xfer<T> {
    what: T,
    src: u32,
    dst: u32,
    left: f64,
    rate: f64,
}

struct Server<T> {
    active: Vec<Xfer<T>>,
    last: Time,
    gen: u64,
}

/// The NVLink crossbars of every server; `T` is what the caller gets back
/// when a transfer ends.
pub struct NvLink<T> {
    servers: Vec<Server<T>>,
    gpus: usize,
    /// Bytes per ps of one GPU's NVLink in one direction.
    port: f64,
}

impl<T: Copy> NvLink<T> {
    /// `servers` servers of `gpus` GPUs, each with `per_gpu` of NVLink per
    /// direction.
    pub fn new(servers: usize, gpus: usize, per_gpu: Rate) -> NvLink<T> {
        NvLink {
            servers: (0..servers)
                .map(|_| Server {
                    active: Vec::new(),
                    last: Time::ZERO,
                    gen: 0,
                })
                .collect(),
            gpus,
            port: per_gpu.as_bps() as f64 / 8.0 / 1e12,
        }
    }

    /// Transfers in progress on `server`.
    pub fn active(&self, server: u32) -> usize {
        self.servers[server as usize].active.len()
    }

    /// The current rate of every transfer of `server`, bytes per ps, in
    /// start order (for tests).
    pub fn rates(&self, server: u32) -> Vec<f64> {
        self.servers[server as usize]
            .active
            .iter()
            .map(|x| x.rate)
            .collect()
    }

    fn advance(&mut self, s: usize, now: Time) {
        let sv = &mut self.servers[s];
        let dt = (now - sv.last).as_ps() as f64;
        if dt > 0.0 {
            for x in sv.active.iter_mut() {
                x.left -= x.rate * dt;
            }
        }
        sv.last = now;
    }

    /// Max-min rates by progressive filling over the GPUs' egress (ports
    /// 0..G) and ingress (G..2G) ports.
    fn fill(&mut self, s: usize) {
        let g = self.gpus;
        let port = self.port;
        let sv = &mut self.servers[s];
        let n = sv.active.len();
        let mut frozen = vec![false; n];
        let mut res = vec![port; 2 * g];
        let mut cnt = vec![0usize; 2 * g];
        for x in &sv.active {
            cnt[x.src as usize] += 1;
            cnt[g + x.dst as usize] += 1;
        }
        let mut left = n;
        while left > 0 {
            // The port whose fair share is lowest saturates first.
            let (mut best, mut share) = (usize::MAX, f64::INFINITY);
            for p in 0..2 * g {
                if cnt[p] > 0 {
                    let f = res[p] / cnt[p] as f64;
                    if f < share {
                        (best, share) = (p, f);
                    }
                }
            }
            if best == usize::MAX {
                break;
            }
            for (i, x) in sv.active.iter_mut().enumerate() {
                let (a, b) = (x.src as usize, g + x.dst as usize);
                if !frozen[i] && (a == best || b == best) {
                    frozen[i] = true;
                    x.rate = share.max(EPS);
                    left -= 1;
                    for p in [a, b] {
                        res[p] = (res[p] - share).max(0.0);
                        cnt[p] -= 1;
                    }
                }
            }
        }
    }

    fn reschedule(&mut self, net: &mut Net, app: u32, s: usize, flag: u64) {
        self.fill(s);
        let sv = &mut self.servers[s];
        sv.gen += 1;
        let next = sv
            .active
            .iter()
            .map(|x| x.left.max(0.0) / x.rate)
            .reduce(f64::min);
        if let Some(ps) = next {
            let token = flag | ((s as u64) << GEN_BITS) | (sv.gen & ((1 << GEN_BITS) - 1));
            net.set_app_timer(app, net.now() + Time::ps(ps.ceil() as u64), token);
        }
    }

    /// Start moving `bytes` from GPU `src` to GPU `dst` of `server`;
    /// `what` comes back from [`NvLink::tick`] when done. Timer tokens
    /// carry `flag` (a bit above the server and generation fields).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        net: &mut Net,
        app: u32,
        server: u32,
        src: u32,
        dst: u32,
        bytes: u64,
        what: T,
        flag: u64,
    ) {
        let s = server as usize;
        self.advance(s, net.now());
        self.servers[s].active.push(Xfer {
            what,
            src,
            dst,
            left: bytes as f64,
            rate: 0.0,
        });
        self.reschedule(net, app, s, flag);
    }

    /// Handle a timer token (without `flag`); the transfers that ended are
    /// appended to `done` in start order. Stale tokens are ignored.
    pub fn tick(&mut self, net: &mut Net, app: u32, token: u64, flag: u64, done: &mut Vec<T>) {
        let s = ((token >> GEN_BITS) & 0xff_ffff) as usize;
        if self.servers[s].gen & ((1 << GEN_BITS) - 1) != token & ((1 << GEN_BITS) - 1) {
            return;
        }
        self.advance(s, net.now());
        let sv = &mut self.servers[s];
        // Within a picosecond of its end (the timer rounds up).
        let mut i = 0;
        while i < sv.active.len() {
            if sv.active[i].left <= sv.active[i].rate + 1e-3 {
                done.push(sv.active.remove(i).what);
            } else {
                i += 1;
            }
        }
        self.reschedule(net, app, s, flag);
    }
}
