//! NVLink inside a GPU server: a non-blocking crossbar (NVSwitch) where
//! each GPU has `nvlink_gbps` of NVLink in each direction. Concurrent
//! transfers are fluid flows sharing the sending GPU's egress and the
//! receiving GPU's ingress max-min fairly (progressive filling over the
//! 2 x G ports of the server).
//!
//! NVLink SHARP (NVSwitch gen 3, NCCL's NVLS) adds transfers with several
//! ends, each at one rate on all its ports: an in-switch reduction reads
//! the same bytes from every GPU of a group (each one's egress) and
//! delivers one reduced copy (the reader's ingress); a multicast store
//! leaves its sender once and reaches every GPU of the group (each one's
//! ingress). Such a transfer uses `weight` of a port's capacity per byte
//! it moves (1 / the switch's efficiency at these operations).
//!
//! One pending timer per server, lazily invalidated by a generation
//! counter: a transfer starting or ending advances every transfer of that
//! server and recomputes the rates, a cost in the transfers active on one
//! server (a few hundred at most: GPUs x channels).
//!
//! Left out: NVLink's packet and flow-control overheads (the rate is the
//! data rate, and NVLS's lower efficiency a weight), and servers whose
//! GPUs are linked directly without NVSwitch.

use crate::net::Net;
use crate::units::{Rate, Time};

/// Bits of a timer token that hold the generation.
const GEN_BITS: u64 = 32;
/// Tolerance of the filling, bytes per ps.
const EPS: f64 = 1e-12;

struct Xfer<T> {
    what: T,
    /// Sending GPUs (bit k: GPU k's egress).
    srcs: u64,
    /// Receiving GPUs (bit k: GPU k's ingress).
    dsts: u64,
    /// Port capacity used per byte moved.
    weight: f64,
    left: f64,
    rate: f64,
}

/// Ports of a transfer: egress k is port k, ingress k is port G + k.
fn ports(x: (u64, u64), g: usize) -> impl Iterator<Item = usize> {
    bits(x.0).chain(bits(x.1).map(move |k| g + k))
}

/// The set bits of `m`, lowest first.
fn bits(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let k = m.trailing_zeros() as usize;
            m &= m - 1;
            k
        })
    })
}

struct Server<T> {
    active: Vec<Xfer<T>>,
    last: Time,
    gen: u64,
}

/// The ends of a transfer on one server's NVSwitch.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// Sending GPUs, one bit each (bit k: GPU k).
    pub srcs: u64,
    /// Receiving GPUs, one bit each.
    pub dsts: u64,
    /// Port capacity used per byte moved (1 for a plain NVLink write).
    pub weight: f64,
}

/// The NVLink crossbars of every server; `T` is what the caller gets back
/// when a transfer ends.
pub struct NvLink<T> {
    servers: Vec<Server<T>>,
    /// The server whose rates and timer wait for [`NvLink::settle`]
    /// (after a tick).
    held: Option<usize>,
    /// Scratch of the progressive filling: per port its capacity left,
    /// load and transfers not yet frozen; per transfer whether frozen.
    scratch: (Vec<f64>, Vec<f64>, Vec<usize>, Vec<bool>),
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
            held: None,
            scratch: Default::default(),
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
    /// 0..G) and ingress (G..2G) ports, each transfer loading its ports
    /// with its weight.
    fn fill(&mut self, s: usize) {
        let g = self.gpus;
        let port = self.port;
        let sv = &mut self.servers[s];
        let n = sv.active.len();
        let (res, load, cnt, frozen) = &mut self.scratch;
        res.clear();
        res.resize(2 * g, port);
        load.clear();
        load.resize(2 * g, 0.0);
        cnt.clear();
        cnt.resize(2 * g, 0);
        frozen.clear();
        frozen.resize(n, false);
        for x in &sv.active {
            for p in ports((x.srcs, x.dsts), g) {
                load[p] += x.weight;
                cnt[p] += 1;
            }
        }
        let mut left = n;
        while left > 0 {
            // The port whose fair share is lowest saturates first.
            let (mut best, mut share) = (usize::MAX, f64::INFINITY);
            for p in 0..2 * g {
                if cnt[p] > 0 {
                    let f = res[p] / load[p];
                    if f < share {
                        (best, share) = (p, f);
                    }
                }
            }
            if best == usize::MAX {
                break;
            }
            for (i, x) in sv.active.iter_mut().enumerate() {
                let on = (x.srcs, x.dsts);
                let uses = if best < g {
                    on.0 >> best & 1 == 1
                } else {
                    on.1 >> (best - g) & 1 == 1
                };
                if frozen[i] || !uses {
                    continue;
                }
                frozen[i] = true;
                x.rate = share.max(EPS);
                left -= 1;
                for p in ports(on, g) {
                    res[p] = (res[p] - share * x.weight).max(0.0);
                    load[p] -= x.weight;
                    cnt[p] -= 1;
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
        let x = Group {
            srcs: 1 << src,
            dsts: 1 << dst,
            weight: 1.0,
        };
        self.start_group(net, app, server, x, bytes, what, flag);
    }

    /// Start a transfer of `bytes` with several ends (NVLink SHARP): out
    /// of every GPU of `x.srcs` and into every GPU of `x.dsts` at one
    /// rate, using `x.weight` of each port per byte.
    #[allow(clippy::too_many_arguments)]
    pub fn start_group(
        &mut self,
        net: &mut Net,
        app: u32,
        server: u32,
        x: Group,
        bytes: u64,
        what: T,
        flag: u64,
    ) {
        let s = server as usize;
        self.advance(s, net.now());
        self.servers[s].active.push(Xfer {
            what,
            srcs: x.srcs,
            dsts: x.dsts,
            weight: x.weight,
            left: bytes as f64,
            rate: 0.0,
        });
        if self.held != Some(s) {
            self.reschedule(net, app, s, flag);
        }
    }

    /// Handle a timer token (without `flag`); the transfers that ended are
    /// appended to `done` in start order. Stale tokens are ignored. The
    /// server's rates are recomputed by [`NvLink::settle`], which the
    /// caller runs once it has started what follows the transfers that
    /// ended (the next piece of a message, say): one progressive filling
    /// for both.
    pub fn tick(&mut self, net: &mut Net, token: u64, done: &mut Vec<T>) {
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
        self.held = Some(s);
    }

    /// After [`NvLink::tick`]: recompute the rates of the servers it held
    /// and set their next timers (tokens with `flag`).
    pub fn settle(&mut self, net: &mut Net, app: u32, flag: u64) {
        if let Some(s) = self.held.take() {
            self.reschedule(net, app, s, flag);
        }
    }
}
