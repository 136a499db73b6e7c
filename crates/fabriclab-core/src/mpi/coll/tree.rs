//! Communication trees and message splitting of Open MPI's coll/base: the
//! topologies of `coll_base_topo.c` (k-ary, in-order binary, binomial,
//! in-order binomial, k-nomial, chains) and the `COLL_BASE_COMPUTED_SEGCOUNT`
//! / `COLL_BASE_COMPUTE_BLOCKCOUNT` macros of `coll_base_util.h`.
//!
//! Each function answers for one rank (parent and children in the order the
//! C code stores them, which is the order the algorithms post messages in).
//! Left out: the per-communicator caching of trees.

use super::super::sched::Rank;

/// One rank's view of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tree {
    /// Parent (None at the tree's root).
    pub parent: Option<Rank>,
    /// Children in posting order.
    pub children: Vec<Rank>,
}

/// `ompi_coll_base_topo_build_tree`: a `fanout`-ary tree filled level by
/// level over ranks shifted by `root` (fanout 2 is the "binary tree").
pub(crate) fn kary(p: u32, root: Rank, rank: Rank, fanout: u32) -> Tree {
    let (p64, f) = (p as u64, fanout.max(1) as u64);
    let sr = ((rank + p - root) % p) as u64;
    // Level of `sr`: levels hold 1, f, f^2, ... nodes.
    let (mut num, mut width) = (0u64, 1u64);
    loop {
        num += width;
        if num > sr {
            break;
        }
        width *= f;
    }
    let delta = width; // f^level
    let mut children = Vec::new();
    for i in 0..f {
        let c = sr + delta * (i + 1);
        if c >= p64 {
            break;
        }
        children.push(((c + root as u64) % p64) as Rank);
    }
    let parent = if sr == 0 {
        None
    } else {
        let above = num - width; // nodes on the levels above mine
        let mut s = sr;
        if s < f {
            s = 0;
        } else {
            while s >= above {
                s -= delta / f;
            }
        }
        Some(((s + root as u64) % p64) as Rank)
    };
    Tree { parent, children }
}

/// `ompi_coll_base_topo_build_in_order_bintree`: a binary tree rooted at
/// rank p-1 whose subtrees hold contiguous rank ranges, the left child's
/// above the right child's, so that reducing children into the parent in
/// child order keeps rank order.
pub(crate) fn in_order_bintree(p: u32, rank: Rank) -> Tree {
    let (mut size, mut me, mut parent, mut delta) = (p as i64, rank as i64, p as i64 - 1, 0i64);
    let mut tree = Tree {
        parent: None,
        children: Vec::new(),
    };
    loop {
        let right = size >> 1;
        let (mut lchild, mut rchild) = (-1i64, -1i64);
        if size - 1 > 0 {
            lchild = parent - 1;
            if lchild > 0 {
                rchild = right - 1;
            }
        }
        if me == parent {
            for c in [lchild, rchild] {
                if c >= 0 {
                    tree.children.push((c + delta) as Rank);
                }
            }
            return tree;
        }
        if me > rchild {
            if me == lchild {
                tree.parent = Some((parent + delta) as Rank);
            }
            size = size - right - 1;
            delta += right;
            me -= right;
            parent = size - 1;
        } else {
            if me == rchild {
                tree.parent = Some((parent + delta) as Rank);
            }
            size = right;
            parent = rchild;
        }
    }
}

/// Smallest power of two strictly greater than `x` (`opal_next_poweroftwo`).
pub(crate) fn next_pow2(x: u32) -> u32 {
    if x == 0 {
        1
    } else {
        1 << (32 - x.leading_zeros())
    }
}

/// Largest power of two not above `x` (x > 0).
pub(crate) fn floor_pow2(x: u32) -> u32 {
    1 << (31 - x.leading_zeros())
}

/// `ompi_coll_base_topo_build_bmtree` (binomial broadcast tree): children
/// nearest first (index ^ 1, ^ 2, ^ 4, ... above the rank's own bits).
pub(crate) fn bmtree(p: u32, root: Rank, rank: Rank) -> Tree {
    let index = (rank + p - root) % p;
    let mut mask = next_pow2(index);
    let parent = (index != 0).then(|| ((index ^ (mask >> 1)) + root) % p);
    let mut children = Vec::new();
    while mask < p {
        let remote = index ^ mask;
        if remote >= p {
            break;
        }
        children.push((remote + root) % p);
        mask <<= 1;
    }
    Tree { parent, children }
}

/// `ompi_coll_base_topo_build_in_order_bmtree` (binomial tree of gather,
/// scatter and binomial reduce): children vrank ^ 1, ^ 2, ... up to the
/// lowest set bit of vrank.
pub(crate) fn in_order_bmtree(p: u32, root: Rank, rank: Rank) -> Tree {
    let vrank = (rank + p - root) % p;
    let mut tree = Tree {
        parent: None,
        children: Vec::new(),
    };
    let mut mask = 1u32;
    while mask < p {
        let remote = vrank ^ mask;
        if remote < vrank {
            tree.parent = Some((remote + root) % p);
            break;
        } else if remote < p {
            tree.children.push((remote + root) % p);
        }
        mask <<= 1;
    }
    tree
}

/// `ompi_coll_base_topo_build_kmtree`: k-nomial tree, farthest children
/// first.
pub(crate) fn kmtree(p: u32, root: Rank, rank: Rank, radix: u32) -> Tree {
    let (p64, k) = (p as u64, radix.max(2) as u64);
    let vrank = ((rank + p - root) % p) as u64;
    let mut parent = None;
    let mut mask = 1u64;
    while mask < p64 {
        if vrank % (k * mask) != 0 {
            parent = Some((((vrank / (k * mask) * (k * mask)) + root as u64) % p64) as Rank);
            break;
        }
        mask *= k;
    }
    let mut children = Vec::new();
    mask /= k;
    while mask > 0 {
        for r in 1..k {
            let c = vrank + mask * r;
            if c < p64 {
                children.push(((c + root as u64) % p64) as Rank);
            }
        }
        mask /= k;
    }
    Tree { parent, children }
}

/// `ompi_coll_base_topo_build_chain`: `fanout` chains hanging off the root
/// (fanout 0 is forced to 1, the pipeline, as Open MPI does).
pub(crate) fn chain(p: u32, root: Rank, rank: Rank, fanout: u32) -> Tree {
    let mut fanout = fanout.clamp(1, 32);
    if p - 1 < fanout {
        fanout = p - 1;
    }
    let sr = (rank + p - root) % p;
    let unshift = |x: u32| (x + root) % p;
    if p == 1 {
        return Tree {
            parent: None,
            children: vec![],
        };
    }
    if fanout == 1 {
        return Tree {
            parent: (sr != 0).then(|| unshift(sr - 1)),
            children: if sr + 1 < p {
                vec![unshift(sr + 1)]
            } else {
                vec![]
            },
        };
    }
    let mut maxlen = (p - 1) / fanout;
    let mark = if (p - 1) % fanout != 0 {
        maxlen += 1;
        (p - 1) % fanout
    } else {
        fanout + 1
    };
    if sr == 0 {
        let mut children = vec![1u32];
        for i in 1..fanout {
            let mut next = children[i as usize - 1] + maxlen;
            if i > mark {
                next -= 1;
            }
            children.push(next);
        }
        return Tree {
            parent: None,
            children: children.into_iter().map(unshift).collect(),
        };
    }
    let (head, len) = if sr - 1 < mark * maxlen {
        (1 + (sr - 1) / maxlen * maxlen, maxlen)
    } else {
        let column = mark + (sr - 1 - mark * maxlen) / (maxlen - 1);
        (
            mark * maxlen + 1 + (column - mark) * (maxlen - 1),
            maxlen - 1,
        )
    };
    let parent = if sr == head { 0 } else { sr - 1 };
    let children = if sr == head + len - 1 || sr + 1 >= p {
        vec![]
    } else {
        vec![unshift(sr + 1)]
    };
    Tree {
        parent: Some(unshift(parent)),
        children,
    }
}

/// `COLL_BASE_COMPUTED_SEGCOUNT`: elements per segment for a segment size
/// of `seg_bytes` (0, or at least the whole message: one segment).
pub(crate) fn segcount(seg_bytes: u64, elem_bytes: u32, count: u64) -> u64 {
    let eb = elem_bytes as u64;
    if seg_bytes >= eb && seg_bytes < eb * count {
        let n = seg_bytes / eb;
        if seg_bytes - n * eb > eb >> 1 {
            n + 1
        } else {
            n
        }
    } else {
        count
    }
}

/// Number of segments of `segcount` elements covering `count`.
pub(crate) fn nsegs(count: u64, segcount: u64) -> u64 {
    count.div_ceil(segcount.max(1))
}

/// `COLL_BASE_COMPUTE_BLOCKCOUNT`: `count` split into `n` blocks, the first
/// `count % n` ("early") one element larger than the others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocks {
    /// Size of an early block.
    pub early: u64,
    /// Size of a late block.
    pub late: u64,
    /// Number of early blocks.
    pub split: u64,
}

impl Blocks {
    /// Split `count` into `n` blocks.
    pub fn new(count: u64, n: u64) -> Blocks {
        let late = count / n;
        let split = count % n;
        Blocks {
            early: if split != 0 { late + 1 } else { late },
            late,
            split,
        }
    }
    /// First element of block `b`.
    pub fn off(&self, b: u64) -> u64 {
        if b < self.split {
            b * self.early
        } else {
            b * self.late + self.split
        }
    }
    /// Elements of block `b`.
    pub fn len(&self, b: u64) -> u64 {
        if b < self.split {
            self.early
        } else {
            self.late
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parents_consistent(p: u32, f: impl Fn(Rank) -> Tree) {
        let trees: Vec<Tree> = (0..p).map(&f).collect();
        let mut roots = 0;
        for (r, t) in trees.iter().enumerate() {
            match t.parent {
                None => roots += 1,
                Some(q) => assert!(
                    trees[q as usize].children.contains(&(r as Rank)),
                    "p={p} r={r}"
                ),
            }
            for &c in &t.children {
                assert_eq!(
                    trees[c as usize].parent,
                    Some(r as Rank),
                    "p={p} r={r} c={c}"
                );
            }
        }
        assert_eq!(roots, 1, "p={p}");
    }

    #[test]
    fn every_tree_is_a_spanning_tree_with_matching_parent_and_child_views() {
        for p in 1..40u32 {
            for root in [0, p / 2, p - 1] {
                parents_consistent(p, |r| kary(p, root, r, 2));
                parents_consistent(p, |r| kary(p, root, r, 3));
                parents_consistent(p, |r| bmtree(p, root, r));
                parents_consistent(p, |r| in_order_bmtree(p, root, r));
                parents_consistent(p, |r| kmtree(p, root, r, 4));
                for f in 1..6 {
                    parents_consistent(p, |r| chain(p, root, r, f));
                }
            }
            parents_consistent(p, |r| in_order_bintree(p, r));
        }
    }

    #[test]
    fn trees_match_the_pictures_in_coll_base_topo() {
        // in-order binary tree, size 9: 8 -> (7, 3); 7 -> (6, 5); 3 -> (2, 1)
        assert_eq!(in_order_bintree(9, 8).children, vec![7, 3]);
        assert_eq!(in_order_bintree(9, 7).children, vec![6, 5]);
        assert_eq!(in_order_bintree(9, 3).children, vec![2, 1]);
        // k-nomial radix 4, size 10: 0 -> 4 8 1 2 3; 4 -> 5 6 7
        assert_eq!(kmtree(10, 0, 0, 4).children, vec![4, 8, 1, 2, 3]);
        assert_eq!(kmtree(10, 0, 4, 4).children, vec![5, 6, 7]);
        // binary tree, size 7: 1 -> 3 5, 2 -> 4 6
        assert_eq!(kary(7, 0, 1, 2).children, vec![3, 5]);
        assert_eq!(kary(7, 0, 2, 2).children, vec![4, 6]);
        // chain of 2 over 8 ranks: 0 -> 1, 5; 1 -> 2 -> 3 -> 4; 5 -> 6 -> 7
        assert_eq!(chain(8, 0, 0, 2).children, vec![1, 5]);
        assert_eq!(chain(8, 0, 4, 2).children, Vec::<Rank>::new());
        assert_eq!(chain(8, 0, 5, 2).parent, Some(0));
    }

    #[test]
    fn segments_and_blocks_split_like_the_open_mpi_macros() {
        assert_eq!(segcount(0, 4, 100), 100);
        assert_eq!(segcount(1024, 4, 1000), 256);
        assert_eq!(segcount(1026, 4, 1000), 256);
        assert_eq!(segcount(1027, 4, 1000), 257);
        assert_eq!(segcount(8192, 4, 100), 100);
        let b = Blocks::new(10, 4);
        assert_eq!(
            (0..4).map(|i| b.len(i)).collect::<Vec<_>>(),
            vec![3, 3, 2, 2]
        );
        assert_eq!(
            (0..4).map(|i| b.off(i)).collect::<Vec<_>>(),
            vec![0, 3, 6, 8]
        );
    }
}
