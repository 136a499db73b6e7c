//! Max-min fair rates of fluid flows over links, recomputed incrementally.
//!
//! Each flow crosses a fixed list of links (directed: one egress port
//! each); each link has a capacity in wire bits per second. The max-min
//! fair allocation is the one in which every flow has a bottleneck: a
//! saturated link on which no other flow has a higher rate. It is computed
//! by progressive filling (raise every unfrozen flow's rate together; when
//! a link saturates, freeze its flows at its fair share).
//!
//! Incremental: adding or removing flows marks their links dirty. `solve`
//! starts from the flows on dirty links (the set F), refills only those
//! against what the other flows leave of each link, then checks the
//! bottleneck condition on every link whose F-flows changed rate: an
//! outside flow is pulled into F when its bottleneck link lost
//! saturation or gained a faster flow, or when it runs faster than an
//! F-flow bottlenecked on a link they share. It repeats until no flow is
//! pulled in, so the result is the max-min allocation, found by touching
//! only the flows whose bottlenecks moved. When F grows past half of the
//! active flows, everything is refilled at once.
//!
//! Left out: per-flow rate caps and weights (every flow's demand is
//! unbounded; host limits are the host links themselves).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No link (a flow not yet given a rate).
pub(crate) const NO_LINK: u32 = u32::MAX;

/// Relative tolerance of rate comparisons.
const EPS: f64 = 1e-9;

/// Flows, links and their max-min rates.
#[derive(Default)]
pub(crate) struct MaxMin {
    cap_bps: Vec<f64>,
    alloc_bps: Vec<f64>,
    /// Flows crossing each link.
    on: Vec<Vec<u32>>,
    /// Per flow: (link, position of the flow in `on[link]`); empty when
    /// the slot is free.
    hops: Vec<Vec<(u32, u32)>>,
    rate_bps: Vec<f64>,
    bottleneck: Vec<u32>,
    free: Vec<u32>,
    active: usize,
    dirty: Vec<u32>,
    dirty_mark: Vec<bool>,
    // Scratch, by epoch marks.
    epoch: u32,
    in_f: Vec<u32>,
    old_bps: Vec<f64>,
    frozen: Vec<u32>,
    l_mark: Vec<u32>,
    l_res: Vec<f64>,
    l_n: Vec<u32>,
    /// Per link: the key of its live entry in the fill's heap.
    l_key: Vec<u64>,
    fill_round: u32,
    /// Per link: the fastest flow's rate (an upper bound while stale).
    l_max: Vec<f64>,
    l_nmax: Vec<u32>,
    max_stale: Vec<bool>,
    prev_bps: Vec<f64>,
    /// F-flows of each link in the current fill.
    l_flows: Vec<Vec<u32>>,
    /// Refill every flow at every solve (the reference the incremental
    /// solves are tested against).
    pub from_scratch: bool,
    /// Rounds of the last solve, and flows refilled (diagnostics).
    pub rounds: u64,
    pub refilled: u64,
}

impl MaxMin {
    /// Links with these capacities (b/s).
    pub fn new(cap_bps: Vec<f64>) -> MaxMin {
        let n = cap_bps.len();
        MaxMin {
            alloc_bps: vec![0.0; n],
            on: vec![Vec::new(); n],
            dirty_mark: vec![false; n],
            l_mark: vec![0; n],
            l_res: vec![0.0; n],
            l_n: vec![0; n],
            l_key: vec![0; n],
            l_max: vec![0.0; n],
            l_nmax: vec![0; n],
            max_stale: vec![false; n],
            l_flows: vec![Vec::new(); n],
            cap_bps,
            ..Default::default()
        }
    }

    /// Number of flows with a rate.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Current rate of a flow, b/s.
    #[inline]
    pub fn rate_bps(&self, f: u32) -> f64 {
        self.rate_bps[f as usize]
    }

    /// The links of flow `f`, in path order.
    pub fn path(&self, f: u32) -> impl Iterator<Item = u32> + '_ {
        self.hops[f as usize].iter().map(|h| h.0)
    }

    /// The link that holds flow `f` at its rate in the last solve (a
    /// saturated link of its path where no flow is faster; `NO_LINK`
    /// before its first solve).
    pub fn bottleneck_of(&self, f: u32) -> u32 {
        self.bottleneck[f as usize]
    }

    /// Capacity of link `l`, b/s.
    pub fn cap_bps(&self, l: u32) -> f64 {
        self.cap_bps[l as usize]
    }

    /// Flows currently crossing link `l`.
    pub fn flows_on(&self, l: u32) -> usize {
        self.on[l as usize].len()
    }

    /// Add a flow over `path` (link indices); its rate is 0 until `solve`.
    pub fn add(&mut self, path: &[u32]) -> u32 {
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                self.hops.push(Vec::new());
                self.rate_bps.push(0.0);
                self.bottleneck.push(NO_LINK);
                self.in_f.push(0);
                self.old_bps.push(0.0);
                self.prev_bps.push(0.0);
                self.frozen.push(0);
                self.hops.len() as u32 - 1
            }
        };
        let mut hops = std::mem::take(&mut self.hops[f as usize]);
        for &l in path {
            let on = &mut self.on[l as usize];
            hops.push((l, on.len() as u32));
            on.push(f);
            self.mark_dirty(l);
        }
        self.hops[f as usize] = hops;
        self.rate_bps[f as usize] = 0.0;
        self.bottleneck[f as usize] = NO_LINK;
        self.active += 1;
        f
    }

    /// Remove a flow; its links' other flows are rebalanced at `solve`.
    pub fn remove(&mut self, f: u32) {
        let mut hops = std::mem::take(&mut self.hops[f as usize]);
        let r = self.rate_bps[f as usize];
        for &(l, pos) in &hops {
            let on = &mut self.on[l as usize];
            on.swap_remove(pos as usize);
            if let Some(&moved) = on.get(pos as usize) {
                let h = self.hops[moved as usize]
                    .iter_mut()
                    .find(|h| h.0 == l)
                    .expect("flow lists a link it is on");
                h.1 = pos;
            }
            self.alloc_bps[l as usize] -= r;
            self.max_drop(l as usize, r);
            self.mark_dirty(l);
        }
        hops.clear();
        self.hops[f as usize] = hops;
        self.rate_bps[f as usize] = 0.0;
        self.free.push(f);
        self.active -= 1;
    }

    /// Change link `l`'s capacity (a failed link has 0); its flows are
    /// rebalanced at `solve`.
    pub fn set_cap(&mut self, l: u32, cap_bps: f64) {
        self.cap_bps[l as usize] = cap_bps;
        self.mark_dirty(l);
    }

    fn mark_dirty(&mut self, l: u32) {
        if !self.dirty_mark[l as usize] {
            self.dirty_mark[l as usize] = true;
            self.dirty.push(l);
        }
    }

    /// Recompute the rates after adds and removes. Appends to `changed`
    /// every flow whose rate changed, with its rate before.
    pub fn solve(&mut self, changed: &mut Vec<(u32, f64)>) {
        if self.dirty.is_empty() {
            return;
        }
        self.epoch += 1;
        let ep = self.epoch;
        let mut fset: Vec<u32> = Vec::new();
        let dirty = std::mem::take(&mut self.dirty);
        // New flows, and the flows whose bottleneck is a changed link and
        // that have no bottleneck left. At the end of every solve each
        // flow's recorded bottleneck is valid, and only adds and removes
        // (which mark their links) change links between solves, so a flow
        // whose bottleneck is unmarked keeps its rate.
        for &l in &dirty {
            // A link over its capacity (it just lost some) refills all.
            let over = self.alloc_bps[l as usize] > self.cap_bps[l as usize] * (1.0 + EPS);
            for i in 0..self.on[l as usize].len() {
                let f = self.on[l as usize][i];
                if over {
                    self.pull_in(f, ep, &mut fset);
                    continue;
                }
                let b = self.bottleneck[f as usize];
                if b != NO_LINK && !self.dirty_mark[b as usize] {
                    continue;
                }
                if self.in_f[f as usize] == ep {
                    continue;
                }
                if b != NO_LINK {
                    if let Some(b) = self.valid_bottleneck(f) {
                        self.bottleneck[f as usize] = b;
                        continue;
                    }
                }
                self.pull_in(f, ep, &mut fset);
            }
        }
        for &l in &dirty {
            self.dirty_mark[l as usize] = false;
        }
        self.dirty = dirty;
        self.dirty.clear();
        let mut links: Vec<u32> = Vec::new();
        loop {
            self.rounds += 1;
            if (self.from_scratch || fset.len() * 2 > self.active) && fset.len() < self.active {
                for f in 0..self.hops.len() as u32 {
                    if !self.hops[f as usize].is_empty() {
                        self.pull_in(f, ep, &mut fset);
                    }
                }
            }
            self.refilled += fset.len() as u64;
            self.fill(&fset, &mut links);
            let before = fset.len();
            self.check(&links, ep, &mut fset);
            if fset.len() == before {
                break;
            }
        }
        for &l in &links {
            self.l_flows[l as usize].clear();
        }
        for &f in &fset {
            let (old, new) = (self.old_bps[f as usize], self.rate_bps[f as usize]);
            if (old - new).abs() > EPS * old.max(new) {
                changed.push((f, old));
            }
        }
    }

    fn pull_in(&mut self, f: u32, ep: u32, fset: &mut Vec<u32>) {
        if self.in_f[f as usize] != ep {
            self.in_f[f as usize] = ep;
            self.old_bps[f as usize] = self.rate_bps[f as usize];
            fset.push(f);
        }
    }

    /// Progressive filling of the flows of `fset` over what the others
    /// leave; `links` gets the links they cross.
    fn fill(&mut self, fset: &[u32], links: &mut Vec<u32>) {
        for &l in links.iter() {
            self.l_flows[l as usize].clear();
        }
        links.clear();
        self.fill_round = self.fill_round.wrapping_add(1);
        let round = self.fill_round;
        // Take the F-flows' rates off their links; index them per link.
        for &f in fset {
            let r = std::mem::replace(&mut self.rate_bps[f as usize], 0.0);
            self.prev_bps[f as usize] = r;
            for &(l, _) in &self.hops[f as usize] {
                let li = l as usize;
                if self.l_mark[li] != round {
                    self.l_mark[li] = round;
                    links.push(l);
                }
                self.alloc_bps[li] -= r;
                self.l_flows[li].push(f);
            }
        }
        // Freezing a flow at the lowest share s takes s off each of its
        // other links, whose share res / n was at least s, so their shares
        // rise ((res - s) / (n - 1) >= res / n). A link's live heap entry
        // (its key in `l_key`) is therefore a lower bound of its share: one
        // popped below its share is pushed back at its share, one popped at
        // its share is the least (ties by link index), which is the order
        // re-keying every touched link gives, with far fewer heap entries.
        // Rounding can lower a share by an ulp; such a link is pushed at
        // once, superseding its entry, so the order stays exactly that.
        let mut heap = BinaryHeap::with_capacity(links.len());
        for &l in links.iter() {
            let li = l as usize;
            self.l_n[li] = self.l_flows[li].len() as u32;
            self.l_res[li] = (self.cap_bps[li] - self.alloc_bps[li]).max(0.0);
            self.l_key[li] = share_key(self.l_res[li], self.l_n[li]);
            heap.push(Reverse((self.l_key[li], l)));
        }
        while let Some(Reverse((key, l))) = heap.pop() {
            let li = l as usize;
            if self.l_n[li] == 0 || key != self.l_key[li] {
                continue; // done, or superseded by a lower entry
            }
            let now = share_key(self.l_res[li], self.l_n[li]);
            if now > key {
                self.l_key[li] = now;
                heap.push(Reverse((now, l)));
                continue;
            }
            let share = f64::from_bits(now);
            for i in 0..self.l_flows[li].len() {
                let f = self.l_flows[li][i];
                if self.frozen[f as usize] == round {
                    continue;
                }
                self.frozen[f as usize] = round;
                self.rate_bps[f as usize] = share;
                self.bottleneck[f as usize] = l;
                for &(l2, _) in &self.hops[f as usize] {
                    let l2i = l2 as usize;
                    self.alloc_bps[l2i] += share;
                    if l2 != l {
                        self.l_res[l2i] = (self.l_res[l2i] - share).max(0.0);
                        self.l_n[l2i] -= 1;
                        if self.l_n[l2i] > 0 {
                            let k2 = share_key(self.l_res[l2i], self.l_n[l2i]);
                            if k2 < self.l_key[l2i] {
                                self.l_key[l2i] = k2;
                                heap.push(Reverse((k2, l2)));
                            }
                        }
                    }
                }
            }
            self.l_n[li] = 0;
        }
        // Keep each link's fastest rate: a rise is taken at once, a fall of
        // the fastest flow leaves it to be recomputed when asked.
        for &f in fset {
            let (prev, new) = (self.prev_bps[f as usize], self.rate_bps[f as usize]);
            if prev > 0.0 && (new - prev).abs() <= EPS * prev {
                continue;
            }
            for h in 0..self.hops[f as usize].len() {
                let li = self.hops[f as usize][h].0 as usize;
                self.max_drop(li, prev);
                self.max_raise(li, new);
            }
        }
    }

    /// Pull into `fset` the outside flows whose max-min condition the
    /// refill broke: those faster than an F-flow that has no bottleneck
    /// left, on its saturated links, and those whose own bottleneck was a
    /// link where F's rates moved and which have no bottleneck left. A
    /// flow's bottleneck is any saturated link of its path on which no
    /// flow is faster (ties between links are common: the refill records
    /// one of them, so each flow is revalidated over all its links before
    /// anything is pulled in).
    fn check(&mut self, links: &[u32], ep: u32, fset: &mut Vec<u32>) {
        let mut add: Vec<u32> = Vec::new();
        for &f in fset.iter() {
            if let Some(l) = self.valid_bottleneck(f) {
                self.bottleneck[f as usize] = l;
                continue;
            }
            let r = self.rate_bps[f as usize];
            for h in 0..self.hops[f as usize].len() {
                let li = self.hops[f as usize][h].0 as usize;
                if !self.saturated(li) {
                    continue;
                }
                for &g in &self.on[li] {
                    if self.in_f[g as usize] != ep && self.rate_bps[g as usize] > r * (1.0 + EPS) {
                        add.push(g);
                    }
                }
            }
        }
        for &l in links {
            let li = l as usize;
            if self.l_flows[li].len() == self.on[li].len() {
                continue; // no outside flow here
            }
            let moved = self.l_flows[li].iter().any(|&f| {
                let (old, new) = (self.old_bps[f as usize], self.rate_bps[f as usize]);
                (old - new).abs() > EPS * old.max(new)
            });
            if !moved {
                continue; // the outside flows' conditions here still hold
            }
            for i in 0..self.on[li].len() {
                let g = self.on[li][i];
                if self.in_f[g as usize] == ep || self.bottleneck[g as usize] != l {
                    continue;
                }
                match self.valid_bottleneck(g) {
                    Some(l2) => self.bottleneck[g as usize] = l2,
                    None => add.push(g),
                }
            }
        }
        for g in add {
            self.pull_in(g, ep, fset);
        }
    }

    #[inline]
    fn saturated(&self, li: usize) -> bool {
        self.alloc_bps[li] >= self.cap_bps[li] * (1.0 - EPS)
    }

    /// A flow of rate `r` leaves link `li` (or slows down from `r`).
    #[inline]
    fn max_drop(&mut self, li: usize, r: f64) {
        if r > 0.0 && !self.max_stale[li] && r >= self.l_max[li] * (1.0 - EPS) {
            if self.l_nmax[li] <= 1 {
                self.max_stale[li] = true;
            } else {
                self.l_nmax[li] -= 1;
            }
        }
    }

    /// A flow of rate `r` joins link `li` (or speeds up to `r`).
    #[inline]
    fn max_raise(&mut self, li: usize, r: f64) {
        if r <= 0.0 || self.max_stale[li] {
            return;
        }
        if r > self.l_max[li] * (1.0 + EPS) {
            self.l_max[li] = r;
            self.l_nmax[li] = 1;
        } else if r >= self.l_max[li] * (1.0 - EPS) {
            self.l_nmax[li] += 1;
        }
    }

    /// The fastest rate on link `l`. Kept with the number of flows at it,
    /// so it is recomputed only when the last of them slows down or leaves.
    fn link_max(&mut self, li: usize) -> f64 {
        if self.max_stale[li] {
            self.max_stale[li] = false;
            let max = self.on[li]
                .iter()
                .map(|&g| self.rate_bps[g as usize])
                .fold(0.0, f64::max);
            let n = self.on[li]
                .iter()
                .filter(|&&g| {
                    let r = self.rate_bps[g as usize];
                    r > 0.0 && r >= max * (1.0 - EPS)
                })
                .count();
            self.l_max[li] = max;
            self.l_nmax[li] = n as u32;
        }
        self.l_max[li]
    }

    /// A saturated link of `f`'s path where no flow is faster, trying the
    /// recorded bottleneck first.
    fn valid_bottleneck(&mut self, f: u32) -> Option<u32> {
        let r = self.rate_bps[f as usize];
        let first = self.bottleneck[f as usize];
        let n = self.hops[f as usize].len();
        let recorded = (0..n).find(|&h| self.hops[f as usize][h].0 == first);
        for h in recorded.into_iter().chain(0..n) {
            let l = self.hops[f as usize][h].0;
            let li = l as usize;
            if self.saturated(li) && r >= self.link_max(li) * (1.0 - EPS) {
                return Some(l);
            }
        }
        None
    }

    /// Check the max-min conditions on the links of `flows` and on those
    /// flows (the audit, after a solve, with the flows whose rates moved):
    /// each link's rates within its capacity, and each flow fastest on a
    /// saturated link of its path. The first violation, in words.
    pub fn check_max_min(&self, flows: &[u32]) -> Result<(), String> {
        let mut links: Vec<u32> = flows.iter().flat_map(|&f| self.path(f)).collect();
        links.sort_unstable();
        links.dedup();
        // Per link: (sum of rates, fastest rate).
        let load = |li: usize| {
            self.on[li].iter().fold((0.0, 0.0f64), |(s, m), &g| {
                let r = self.rate_bps[g as usize];
                (s + r, m.max(r))
            })
        };
        for &l in &links {
            let (sum, _) = load(l as usize);
            if sum > self.cap_bps[l as usize] * (1.0 + 1e-7) + 1e-3 {
                return Err(format!(
                    "link {l} over capacity: its {} flows at {sum:.1} b/s > {:.1} b/s",
                    self.on[l as usize].len(),
                    self.cap_bps[l as usize]
                ));
            }
        }
        for &f in flows {
            let hops = &self.hops[f as usize];
            if hops.is_empty() {
                continue; // ended since
            }
            let r = self.rate_bps[f as usize];
            let ok = hops.iter().any(|&(l, _)| {
                let (sum, max) = load(l as usize);
                sum >= self.cap_bps[l as usize] * (1.0 - 1e-7) - 1e-3 && r >= max * (1.0 - 1e-7)
            });
            if !ok {
                return Err(format!(
                    "flow {f} at {r:.1} b/s has no bottleneck (it could go faster)"
                ));
            }
        }
        Ok(())
    }

    /// Every live flow (for the audit's check at the end of a run).
    pub fn live_flows(&self) -> Vec<u32> {
        (0..self.hops.len() as u32)
            .filter(|&f| !self.hops[f as usize].is_empty())
            .collect()
    }

    /// Check the max-min conditions on every link (tests).
    #[cfg(test)]
    pub fn assert_max_min(&self) {
        if let Err(e) = self.check_max_min(&self.live_flows()) {
            panic!("{e}");
        }
    }
}

/// Heap key of a fair share: the bits of a non-negative f64 order as the
/// numbers do.
#[inline]
fn share_key(res: f64, n: u32) -> u64 {
    (res.max(0.0) / n as f64).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn rates(mm: &mut MaxMin) -> Vec<f64> {
        let mut ch = Vec::new();
        mm.solve(&mut ch);
        mm.assert_max_min();
        mm.rate_bps.clone()
    }

    #[test]
    fn two_flows_on_one_link_get_half_each() {
        let mut mm = MaxMin::new(vec![100e9]);
        let a = mm.add(&[0]);
        let b = mm.add(&[0]);
        let r = rates(&mut mm);
        assert_eq!(r[a as usize], 50e9);
        assert_eq!(r[b as usize], 50e9);
        mm.remove(a);
        let r = rates(&mut mm);
        assert_eq!(r[b as usize], 100e9);
    }

    #[test]
    fn parking_lot() {
        // Links 0 and 1 of 100 and 200 Gb/s; flow a crosses both, b only
        // link 0, c only link 1: a and b share link 0 (50 each), c takes
        // what a leaves of link 1 (150).
        let mut mm = MaxMin::new(vec![100e9, 200e9]);
        let a = mm.add(&[0, 1]);
        let b = mm.add(&[0]);
        let c = mm.add(&[1]);
        let r = rates(&mut mm);
        assert_eq!(
            (r[a as usize], r[b as usize], r[c as usize]),
            (50e9, 50e9, 150e9)
        );
        // Three-link parking lot, equal capacities: the long flow gets 1/2
        // on every link, each short flow the other half.
        let mut mm = MaxMin::new(vec![10e9; 3]);
        let long = mm.add(&[0, 1, 2]);
        let shorts: Vec<u32> = (0..3).map(|l| mm.add(&[l])).collect();
        let r = rates(&mut mm);
        assert_eq!(r[long as usize], 5e9);
        for s in shorts {
            assert_eq!(r[s as usize], 5e9);
        }
    }

    #[test]
    fn a_flow_limited_elsewhere_leaves_its_share_to_the_others() {
        // Link 0 (100G) carries a, b, c; a also crosses link 1 (10G).
        let mut mm = MaxMin::new(vec![100e9, 10e9]);
        let a = mm.add(&[0, 1]);
        let b = mm.add(&[0]);
        let c = mm.add(&[0]);
        let r = rates(&mut mm);
        assert_eq!(r[a as usize], 10e9);
        assert_eq!(r[b as usize], 45e9);
        assert_eq!(r[c as usize], 45e9);
    }

    /// Incremental solves agree with solving from scratch after every
    /// change, on random paths over random capacities.
    #[test]
    fn incremental_equals_from_scratch() {
        let mut rng = Rng::new(7, 1);
        for trial in 0..150 {
            let links = 4 + (rng.next_u64() % 12) as u32;
            let caps: Vec<f64> = (0..links)
                .map(|_| (1 + rng.next_u64() % 8) as f64 * 25e9)
                .collect();
            let mut inc = MaxMin::new(caps.clone());
            let mut live: Vec<(u32, Vec<u32>)> = Vec::new();
            for step in 0..120 {
                let add = live.len() < 3 || rng.next_u64() % 3 != 0;
                if add {
                    let len = 1 + (rng.next_u64() % 4) as usize;
                    let mut path: Vec<u32> = (0..len)
                        .map(|_| (rng.next_u64() % links as u64) as u32)
                        .collect();
                    path.sort_unstable();
                    path.dedup();
                    let f = inc.add(&path);
                    live.push((f, path));
                } else {
                    let k = (rng.next_u64() % live.len() as u64) as usize;
                    let (f, _) = live.swap_remove(k);
                    inc.remove(f);
                }
                if rng.next_u64() % 2 == 0 {
                    continue; // several changes per solve, too
                }
                let mut ch = Vec::new();
                inc.solve(&mut ch);
                inc.assert_max_min();
                let mut fresh = MaxMin::new(caps.clone());
                let ids: Vec<u32> = live.iter().map(|(_, p)| fresh.add(p)).collect();
                let mut ch2 = Vec::new();
                fresh.solve(&mut ch2);
                for ((f, _), g) in live.iter().zip(ids) {
                    let (a, b) = (inc.rate_bps(*f), fresh.rate_bps(g));
                    assert!(
                        (a - b).abs() <= 1e-6 * b.max(1.0),
                        "trial {trial} step {step}: flow {f} incremental {a} from scratch {b}"
                    );
                }
            }
        }
    }
}
