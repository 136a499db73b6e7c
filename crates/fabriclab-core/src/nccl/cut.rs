//! How NCCL cuts a call's data: a loop covers channels x `per` x chunk
//! elements, each channel taking its share, and a channel's share of one
//! loop is split again into `n` chunks (one per rank of a ring, or per
//! head GPU of NVLS). Shared by the schedules ([`super::coll`],
//! [`super::nvls`]) and the flow backend's coflows ([`super::fluid`]).

/// Pieces of `total` elements for each loop and channel: (loop, channel,
/// first element, elements), where a loop covers `chans` x `per` x unit.
pub fn pieces(total: u64, chans: u32, per: u64, unit: u64) -> Vec<(u32, u32, u64, u64)> {
    let mut out = Vec::new();
    let loop_elems = chans as u64 * per * unit;
    let (mut base, mut l) = (0u64, 0u32);
    while base < total {
        let here = loop_elems.min(total - base);
        let chunk = here.div_ceil(chans as u64 * per);
        for ch in 0..chans {
            let start = base + ch as u64 * per * chunk;
            let end = (start + per * chunk).min(base + here);
            if start < end {
                out.push((l, ch, start, end - start));
            }
        }
        base += here;
        l += 1;
    }
    out
}

/// Chunk `k` of `n` of a channel's piece [start, start + len), in chunks
/// of `ceil(len / n)`: (offset, count), count possibly 0.
pub fn chunk(start: u64, len: u64, n: u32, k: u32) -> (u64, u64) {
    let c = len.div_ceil(n as u64);
    let lo = (k as u64 * c).min(len);
    let hi = ((k as u64 + 1) * c).min(len);
    (start + lo, hi - lo)
}
