//! perftest's peak bandwidth: the least time per message over the windows
//! from a post `i` to a completion `j` (`(tc[j] - tp[i]) / (j - i + 1)`),
//! with completions seen only at CQ-moderation boundaries (every `q`-th,
//! and the last), as perftest's `print_report_bw` scans them.
//!
//! perftest scans every pair, O(n^2 / q) for n messages: seconds for a
//! million iterations. The same minimum comes in O(n log n) from geometry:
//! for post `i` the windows are the slopes from the point `(i - 1, tp[i])`
//! to the points `(j, tc[j])` of its candidate completions, and the least
//! slope from a point left of a set is reached on the set's lower convex
//! hull, where it is found by binary search. The candidates of post `i`
//! are the boundaries from `ceil((i + 1) / q) q - 1` on (a suffix that
//! grows as `i` falls) and the last completion, so the hull is built from
//! the right. Slopes are compared exactly (integer cross-products in
//! 128 bits), and the floor of the least ratio is the least of the floors,
//! so the result is perftest's to the picosecond. [`peak_scan`] is the
//! pair scan, kept as the tests' reference.
//!
//! Left out: perftest's `--noPeak` (the peak is always computed).

/// The least `(tc[j] - tp[i]) / (j - i + 1)` (integer division, ps) over
/// post `i` and its candidate completions `j`, or the first message's time
/// if that is less. `tp` and `tc` (post and completion times, ps) are
/// nondecreasing, of the same length n > 0, and `tc[j] >= tp[j]`.
pub fn peak_window_ps(tp: &[u64], tc: &[u64], q: usize) -> u64 {
    let n = tc.len();
    assert!(n > 0 && tp.len() == n && q > 0);
    let mut best = tc[0] - tp[0];
    // Lower hull of the candidate points, leftmost last (a stack).
    let mut hull: Vec<(i128, i128)> = Vec::new();
    // The last completion, a candidate of every post when it is not a
    // boundary itself (then the hull is never empty).
    if n % q != 0 {
        push_left(&mut hull, ((n - 1) as i128, tc[n - 1] as i128));
    }
    // The largest boundary; walking posts down, the boundaries from
    // `first` on join the hull.
    let mut next = (n / q).checked_mul(q).and_then(|b| b.checked_sub(1));
    for i in (0..n).rev() {
        let first = (i + 1).div_ceil(q) * q - 1;
        while let Some(j) = next.filter(|&j| j >= first) {
            push_left(&mut hull, (j as i128, tc[j] as i128));
            next = j.checked_sub(q);
        }
        let p = (i as i128 - 1, tp[i] as i128);
        let (x, y) = least_slope_vertex(&hull, p);
        let t = ((y - p.1) / (x - p.0)) as u64;
        best = best.min(t);
    }
    best
}

/// Add point `a` at the left end of the lower hull `hull` (leftmost last).
fn push_left(hull: &mut Vec<(i128, i128)>, a: (i128, i128)) {
    while hull.len() >= 2 {
        let b = hull[hull.len() - 1];
        let c = hull[hull.len() - 2];
        // Keep b only if it lies strictly below the segment a-c.
        if cross(a, b, c) > 0 {
            break;
        }
        hull.pop();
    }
    hull.push(a);
}

/// Cross product of (b - a) and (c - a): positive when a, b, c turn left.
fn cross(a: (i128, i128), b: (i128, i128), c: (i128, i128)) -> i128 {
    (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)
}

/// The hull vertex of least slope from `p`, which lies left of every
/// vertex. Along the lower hull from the left, the slope from `p` falls,
/// then rises: the vertex where the next edge stops lowering it.
fn least_slope_vertex(hull: &[(i128, i128)], p: (i128, i128)) -> (i128, i128) {
    // hull[k] for k from len - 1 (leftmost) down to 0 (rightmost): index
    // by distance from the left, m = len - 1 - k.
    let len = hull.len();
    let at = |m: usize| hull[len - 1 - m];
    // Is the vertex m + 1 no better than vertex m (slope from p)?
    let no_better = |m: usize| {
        let (a, b) = (at(m), at(m + 1));
        // slope(p, b) >= slope(p, a)  <=>  cross(p, a, b) >= 0
        cross(p, a, b) >= 0
    };
    let (mut lo, mut hi) = (0usize, len - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if no_better(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    at(lo)
}

/// perftest's own scan of every (post, boundary completion) pair.
pub fn peak_scan(tp: &[u64], tc: &[u64], q: usize) -> u64 {
    let n = tc.len();
    let mut best = tc[0] - tp[0];
    for (i, &posted) in tp.iter().enumerate() {
        let mut j = (i + 1).div_ceil(q) * q - 1;
        while j < n {
            if tc[j] >= posted {
                best = best.min((tc[j] - posted) / (j - i + 1) as u64);
            }
            j += q;
        }
        if n % q != 0 && tc[n - 1] >= posted {
            best = best.min((tc[n - 1] - posted) / (n - i) as u64);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn below(rng: &mut Rng, n: u64) -> u64 {
        rng.next_u64() % n
    }

    /// Post and completion times as a bandwidth test makes them: posts in
    /// bursts, completions after their posts, both nondecreasing.
    fn times(rng: &mut Rng, n: usize) -> (Vec<u64>, Vec<u64>) {
        let mut tp = Vec::with_capacity(n);
        let mut tc = Vec::with_capacity(n);
        let (mut t_post, mut t_done) = (0u64, 0u64);
        for _ in 0..n {
            t_post += below(rng, 3) * below(rng, 1000);
            tp.push(t_post);
            t_done = t_done.max(t_post) + below(rng, 2000);
            tc.push(t_done);
        }
        (tp, tc)
    }

    #[test]
    fn the_hull_gives_the_pair_scans_peak_to_the_picosecond() {
        let mut rng = Rng::new(7, 0);
        for case in 0..3200 {
            let n = 1 + below(&mut rng, if case < 3000 { 60 } else { 1500 }) as usize;
            let q = 1 + below(&mut rng, 12) as usize;
            let (tp, tc) = times(&mut rng, n);
            assert_eq!(
                peak_window_ps(&tp, &tc, q),
                peak_scan(&tp, &tc, q),
                "case {case}: n {n} q {q}\n{tp:?}\n{tc:?}"
            );
        }
    }

    #[test]
    fn a_steady_stream_peaks_at_its_message_time() {
        // One message per 100 ps after a 1,000 ps first: the best window
        // is the longest, 100 ps per message and a little more.
        let tp: Vec<u64> = (0..1000).map(|_| 0).collect();
        let tc: Vec<u64> = (0..1000).map(|k| 1000 + 100 * k).collect();
        assert_eq!(peak_window_ps(&tp, &tc, 10), peak_scan(&tp, &tc, 10));
        assert_eq!(peak_window_ps(&tp, &tc, 10), (1000 + 100 * 999) / 1000);
    }
}
