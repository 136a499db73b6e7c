//! Point-to-point benchmark patterns as schedules: the message exchanges of
//! IMB's PingPong, PingPing, Sendrecv and Exchange, of OSU's latency,
//! bandwidth, bidirectional bandwidth and multi-pair message-rate tests,
//! and of Cbench's rotate and rotate_latency.
//!
//! Each function builds one iteration of the benchmark's timed loop for
//! a communicator of `p` ranks; ranks that take no part have no steps.
//! Messages are of MPI_BYTE (`elem_bytes` 1).

use super::sched::{Buf, BufSizes, Rank, Region, Schedule};

fn bufs(p: u32, send: u64, recv: u64) -> BufSizes {
    BufSizes {
        send: vec![send; p as usize],
        recv: vec![recv; p as usize],
    }
}

/// IMB PingPong / osu_latency: `a` sends to `b`, `b` sends back.
pub fn pingpong(p: u32, a: Rank, b: Rank, bytes: u64) -> Schedule {
    pingpong_pairs(p, &[(a, b)], bytes)
}

/// IMB PingPing: `a` and `b` send to each other at the same time.
pub fn pingping(p: u32, a: Rank, b: Rank, bytes: u64) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, bytes, bytes), "pingping");
    for (me, peer) in [(a, b), (b, a)] {
        let r = &mut s.ranks[me as usize];
        r.send(peer, 1, Region::new(Buf::Send, 0, bytes), &[]);
        r.recv(peer, 1, Region::new(Buf::Recv, 0, bytes), &[]);
    }
    s
}

/// IMB Sendrecv: every rank sends to its right neighbour and receives from
/// its left one (a periodic chain).
pub fn sendrecv(p: u32, bytes: u64) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, bytes, bytes), "sendrecv");
    if p < 2 {
        return s;
    }
    for r in 0..p {
        let rs = &mut s.ranks[r as usize];
        rs.send((r + 1) % p, 1, Region::new(Buf::Send, 0, bytes), &[]);
        rs.recv((r + p - 1) % p, 1, Region::new(Buf::Recv, 0, bytes), &[]);
    }
    s
}

/// IMB Exchange: every rank sends to both neighbours and receives from
/// both.
pub fn exchange(p: u32, bytes: u64) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, bytes, 2 * bytes), "exchange");
    if p < 2 {
        return s;
    }
    for r in 0..p {
        let (left, right) = ((r + p - 1) % p, (r + 1) % p);
        let rs = &mut s.ranks[r as usize];
        rs.send(left, 1, Region::new(Buf::Send, 0, bytes), &[]);
        rs.send(right, 2, Region::new(Buf::Send, 0, bytes), &[]);
        rs.recv(left, 2, Region::new(Buf::Recv, 0, bytes), &[]);
        rs.recv(right, 1, Region::new(Buf::Recv, bytes, bytes), &[]);
    }
    s
}

/// osu_bw / osu_mbw_mr: each sender `pairs[i].0` posts `window` sends to
/// its receiver, which posts `window` receives and answers with a 1-byte
/// acknowledgement once all arrived; `bidirectional` (osu_bibw) makes both
/// sides send a window and drops the acknowledgement.
pub fn window(
    p: u32,
    pairs: &[(Rank, Rank)],
    bytes: u64,
    window: u32,
    bidirectional: bool,
) -> Schedule {
    let w = window as u64;
    let mut s = Schedule::new(p, 1, bufs(p, bytes.max(1), bytes * w + 1), "window");
    for &(a, b) in pairs {
        let ra = &mut s.ranks[a as usize];
        let mut sends: Vec<u32> = (0..window)
            .map(|_| ra.send(b, 1, Region::new(Buf::Send, 0, bytes), &[]))
            .collect();
        if bidirectional {
            for k in 0..w {
                sends.push(ra.recv(b, 2, Region::new(Buf::Recv, k * bytes, bytes), &[]));
            }
        } else {
            ra.recv(b, 3, Region::new(Buf::Recv, w * bytes, 1), &sends);
        }
        let rb = &mut s.ranks[b as usize];
        let mut recvs: Vec<u32> = (0..w)
            .map(|k| rb.recv(a, 1, Region::new(Buf::Recv, k * bytes, bytes), &[]))
            .collect();
        if bidirectional {
            for _ in 0..window {
                recvs.push(rb.send(a, 2, Region::new(Buf::Send, 0, bytes), &[]));
            }
        } else {
            rb.send(a, 3, Region::new(Buf::Send, 0, 1), &recvs);
        }
    }
    s
}

/// A dissemination barrier over ranks 0..p (used to line ranks up between
/// measurements; the collective algorithms have their own barriers).
pub fn sync_barrier(p: u32) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, 0, 0), "dissemination");
    let mut prev: Vec<Vec<u32>> = vec![Vec::new(); p as usize];
    let mut k = 1;
    let mut round = 0;
    while k < p {
        for r in 0..p {
            let rs = &mut s.ranks[r as usize];
            let deps = std::mem::take(&mut prev[r as usize]);
            let a = rs.send(
                (r + k) % p,
                100 + round,
                Region::new(Buf::Send, 0, 0),
                &deps,
            );
            let b = rs.recv(
                (r + p - k) % p,
                100 + round,
                Region::new(Buf::Recv, 0, 0),
                &deps,
            );
            prev[r as usize] = vec![a, b];
        }
        k *= 2;
        round += 1;
    }
    s
}

/// Cbench rotate's partner of `rank` in rotation `r` among `size` ranks
/// (`size` even): the lower half `i` pairs with `half + (i + r) mod half`,
/// and the upper half answers in kind.
pub fn rotate_partner(size: u32, rank: Rank, r: u32) -> Rank {
    let half = size / 2;
    if rank < half {
        half + (rank + r) % half
    } else {
        (rank - half + half - r % half) % half
    }
}

/// A zero-byte `MPI_Sendrecv` between the two ranks of every pair (Cbench
/// lines each pair up with one before its clock starts).
pub fn pair_sync(p: u32, pairs: &[(Rank, Rank)]) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, 0, 0), "sendrecv0");
    for &(a, b) in pairs {
        for (me, peer) in [(a, b), (b, a)] {
            let r = &mut s.ranks[me as usize];
            r.send(peer, 14, Region::new(Buf::Send, 0, 0), &[]);
            r.recv(peer, 14, Region::new(Buf::Recv, 0, 0), &[]);
        }
    }
    s
}

/// One `MPI_Ssend` of `bytes` from `a` to `b` for every pair `(a, b)`, all
/// pairs at once. A synchronous send completes only once its receive has
/// matched: a rendezvous send does anyway; where the pair would send
/// eagerly (`eager(a, b)`), the receiver answers the match with a
/// zero-byte acknowledgement that the sender waits for (the eager-sync
/// protocol).
pub fn ssend_pairs(
    p: u32,
    pairs: &[(Rank, Rank)],
    bytes: u64,
    eager: impl Fn(Rank, Rank) -> bool,
) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, bytes, bytes.max(1)), "ssend");
    for &(a, b) in pairs {
        let sync = eager(a, b);
        let ra = &mut s.ranks[a as usize];
        let x = ra.send(b, 1, Region::new(Buf::Send, 0, bytes), &[]);
        if sync {
            ra.recv(b, 2, Region::new(Buf::Recv, 0, 0), &[x]);
        }
        let rb = &mut s.ranks[b as usize];
        let y = rb.recv(a, 1, Region::new(Buf::Recv, 0, bytes), &[]);
        if sync {
            rb.send(a, 2, Region::new(Buf::Send, 0, 0), &[y]);
        }
    }
    s
}

/// One round trip of `bytes` for every pair at once: `a` sends to `b`,
/// `b` sends back (Cbench rotate_latency's loop body).
pub fn pingpong_pairs(p: u32, pairs: &[(Rank, Rank)], bytes: u64) -> Schedule {
    let mut s = Schedule::new(p, 1, bufs(p, bytes, bytes), "pingpong");
    let (sb, rb) = (
        Region::new(Buf::Send, 0, bytes),
        Region::new(Buf::Recv, 0, bytes),
    );
    for &(a, b) in pairs {
        let ra = &mut s.ranks[a as usize];
        let x = ra.send(b, 1, sb, &[]);
        ra.recv(b, 1, rb, &[x]);
        let rbk = &mut s.ranks[b as usize];
        let y = rbk.recv(a, 1, rb, &[]);
        rbk.send(a, 1, sb, &[y]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_partners_match_cbench_for_every_rotation() {
        // Cbench: lower rank i sends to i + half + r, less half if that
        // passes the end; upper rank j to j - half - r, plus half if below 0.
        for size in [2u32, 4, 6, 16] {
            let half = size / 2;
            for r in 0..half {
                for rank in 0..size {
                    let want = if rank < half {
                        let d = rank + half + r;
                        if d >= size {
                            d - half
                        } else {
                            d
                        }
                    } else {
                        let d = rank as i64 - half as i64 - r as i64;
                        (if d < 0 { d + half as i64 } else { d }) as u32
                    };
                    let got = rotate_partner(size, rank, r);
                    assert_eq!(got, want, "size {size} r {r} rank {rank}");
                    // Partners are mutual.
                    assert_eq!(rotate_partner(size, got, r), rank);
                }
            }
        }
    }
}
