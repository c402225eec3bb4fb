//! Open MPI's other trees, unsegmented (its fixed decisions pass segment size 0):
//! - the binary tree of `ompi_coll_base_topo_build_tree(2, ...)`: ranks fill the tree
//!   level by level, level l holding `2^l` ranks, and rank r of level l has children
//!   `r + 2^l` and `r + 2^(l+1)` (rank 0: 1 and 2; rank 1: 3 and 5; rank 2: 4 and 6).
//!   Broadcast (`ompi_coll_base_bcast_intra_bintree`): take the vector from the parent,
//!   send it to the children in that order. Reduce (`ompi_coll_base_reduce_intra_binary`):
//!   add the children's partial sums in that order, then hand the sum up.
//! - the k-nomial tree of `ompi_coll_base_topo_build_kmtree` (broadcast,
//!   `ompi_coll_base_bcast_intra_knomial`, radix 4 by default): rank r's parent is r
//!   with its lowest non-zero base-`radix` digit cleared; its children are `r + j m` for
//!   every power m of the radix below that digit's, largest first, and `j = 1 .. radix-1`
//!   (rank 0 of 10, radix 4: 4, 8, 1, 2, 3). Radix 2 is the binomial tree, children
//!   farthest first; a radix of P or more is the star, rank 0 sending to 1, 2, ... P-1.
//! - the in-order binary tree of `ompi_coll_base_topo_build_in_order_bintree` (reduce,
//!   `ompi_coll_base_reduce_intra_in_order_binary`, which keeps the operands in rank
//!   order for non-commutative operations): rooted at rank P-1, whose left child is P-2
//!   and right child `P/2 - 1` (the left subtree holding ranks `P/2 .. P-2`, the right one
//!   `0 .. P/2 - 1`), recursively; rank P-1 then sends the sum to the root, rank 0.
//!
//! In the first two every child has a higher rank than its parent, in the in-order tree a
//! lower one.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::collective::Collective;
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry: binary-tree broadcast.
pub const BINARY_BCAST_INFO: AlgoInfo = AlgoInfo {
    id: "binary_tree",
    summary: "binary tree filled level by level: each rank takes the vector from its parent and sends it to its \
              two children",
    source: "Open MPI ompi_coll_base_bcast_intra_bintree (bcast algorithm 5) and coll_base_topo.c build_tree",
    requires: "any P >= 1, any n",
    closed_form: "the tree recurrence: child i of a parent (0, 1) has the vector ceil((i+1)/k) (alpha + S/B) after \
                  it; P = 2^h - 1: (h-1) 2 T with one NIC, (h-1) T with two",
    params: &[],
    build: |_| Ok(Box::new(KaryTree { radix: 0, collective: Collective::Broadcast })),
};

/// Registry entry: binary-tree reduce.
pub const BINARY_REDUCE_INFO: AlgoInfo = AlgoInfo {
    id: "binary_tree",
    summary: "binary tree filled level by level: each rank adds its two children's sums, in order, and hands the \
              sum to its parent",
    source: "Open MPI ompi_coll_base_reduce_intra_binary (reduce algorithm 4) and coll_base_topo.c build_tree",
    requires: "any P >= 1, any n",
    closed_form: "the tree recurrence, T = alpha + S/B, R = S C: a rank's children's sums arrive through its k \
                  incoming NICs in order of (send time, rank) and are added in child order",
    params: &[],
    build: |_| Ok(Box::new(KaryTree { radix: 0, collective: Collective::Reduce })),
};

/// Registry entry: k-nomial broadcast.
pub const KNOMIAL_BCAST_INFO: AlgoInfo = AlgoInfo {
    id: "knomial",
    summary: "k-nomial tree: a parent sends to up to radix-1 children per power of the radix, farthest first",
    source: "Open MPI ompi_coll_base_bcast_intra_knomial (bcast algorithm 7) and coll_base_topo.c build_kmtree",
    requires: "any P >= 1, any n; radix at least 2",
    closed_form: "the tree recurrence: child i of a parent has the vector ceil((i+1)/k) (alpha + S/B) after it; \
                  P a power of the radix r, one NIC: (r-1) log_r(P) T",
    params: &["radix=4: children per power of the radix (Open MPI's coll_tuned_bcast_algorithm_knomial_radix)"],
    build: |params| {
        let radix = params.count_from("radix", 4, 2)?;
        Ok(Box::new(KaryTree { radix, collective: Collective::Broadcast }))
    },
};

/// Registry entry: in-order binary-tree reduce.
pub const IN_ORDER_REDUCE_INFO: AlgoInfo = AlgoInfo {
    id: "in_order_binary_tree",
    summary: "binary tree rooted at rank P-1 whose subtrees hold contiguous ranks (operands stay in rank order), \
              then rank P-1 sends the sum to rank 0",
    source: "Open MPI ompi_coll_base_reduce_intra_in_order_binary (reduce algorithm 6) and coll_base_topo.c \
             build_in_order_bintree",
    requires: "any P >= 1, any n",
    closed_form: "the tree recurrence to rank P-1 (T = alpha + S/B, R = S C; each rank's children's sums through its \
                  k incoming NICs in order of (send time, rank), added left then right), plus T for the sum to \
                  rank 0 when P > 1",
    params: &[],
    build: |_| Ok(Box::new(InOrderBinary)),
};

/// The binary tree (`radix` 0) or a k-nomial tree; see the module docs.
#[derive(Debug)]
pub struct KaryTree {
    radix: usize,
    collective: Collective,
}

/// The children of rank r of `np` in Open MPI's binary tree, in its order.
pub(crate) fn binary_children(r: usize, np: usize) -> impl Iterator<Item = usize> + Clone + Send {
    // Level l holds ranks 2^l - 1 .. 2^(l+1) - 2; delta = 2^l.
    let delta = 1usize << (r + 1).ilog2();
    (1..=2).map(move |i| r + delta * i).take_while(move |&c| c < np)
}

/// The children of rank r of `np` in Open MPI's k-nomial tree of `radix`, in its order.
pub(crate) fn knomial_children(r: usize, np: usize, radix: usize) -> impl Iterator<Item = usize> + Clone + Send {
    // A radix of P or more gives every rank but 0 to rank 0 (a star), as radix P does:
    // clamped so the loop below runs over at most P children, whatever the radix.
    let radix = radix.min(np.max(2));
    // The largest power of the radix that divides r (all of them below np for r = 0).
    let mut mask = 1;
    while mask < np && r.is_multiple_of(radix * mask) {
        mask *= radix;
    }
    let top = mask / radix;
    std::iter::successors((top > 0).then_some(top), move |&m| (m / radix > 0).then_some(m / radix))
        .flat_map(move |m| (1..radix).map(move |j| r + m * j))
        .filter(move |&c| c < np)
}

/// The parent of rank r (> 0): the rank whose children include it.
fn parent_of(r: usize, radix: usize) -> usize {
    if radix == 0 {
        // Level l's ranks hang off level l-1's: r - 2^(l-1) or r - 2^l.
        let l = (r + 1).ilog2();
        let half = 1usize << (l - 1);
        if (r - half) + 1 >= (1 << l) { r - (1 << l) } else { r - half }
    } else {
        let mut mask = 1;
        while r.is_multiple_of(radix * mask) {
            mask *= radix;
        }
        r / (radix * mask) * (radix * mask)
    }
}

/// Rank r's parent and children (left, then right) in Open MPI's in-order binary tree of
/// `np` ranks, rooted at `np - 1`.
pub(crate) fn in_order_links(r: usize, np: usize) -> (Option<usize>, [Option<usize>; 2]) {
    // Open MPI's loop, in its signed arithmetic (-1: none): walk down from the root,
    // into the left subtree (ranks above the right child) or the right one.
    let (mut size, mut me, mut delta) = (np as isize, r as isize, 0isize);
    let mut parent = size - 1;
    let mut up = -1;
    let real = |c: isize, delta: isize| (c >= 0).then(|| (c + delta) as usize);
    loop {
        let right = size >> 1;
        let (mut lchild, mut rchild) = (-1, -1);
        if size - 1 > 0 {
            lchild = parent - 1;
            if lchild > 0 {
                rchild = right - 1;
            }
        }
        if me == parent {
            return (real(up, 0), [real(lchild, delta), real(rchild, delta)]);
        }
        if me > rchild {
            if me == lchild {
                up = parent + delta;
            }
            size = size - right - 1;
            delta += right;
            me -= right;
            parent = size - 1;
        } else {
            if me == rchild {
                up = parent + delta;
            }
            size = right;
            parent = rchild;
        }
    }
}

/// Open MPI's in-order binary-tree reduce; see the module docs.
#[derive(Debug)]
pub struct InOrderBinary;

impl Algorithm for InOrderBinary {
    fn id(&self) -> &'static str {
        IN_ORDER_REDUCE_INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np) = (rank as usize, p.ranks);
        let all = Region::vec(0, p.elems);
        let (parent, children) = in_order_links(r, np);
        let take =
            children.into_iter().flatten().flat_map(move |c| [Op::recv_reduce(c as Rank, TAG, all), Op::WaitAll]);
        let up = parent.map(|q| Op::send(q as Rank, TAG, all));
        // The tree's root hands the sum to the collective's root, rank 0.
        let last = np - 1;
        let hand = (np > 1 && r == last).then(|| Op::send(0, TAG + 1, all));
        let get = (np > 1 && r == 0).then(|| [Op::recv_copy(last as Rank, TAG + 1, all), Op::WaitAll]);
        vec![Box::new(take.chain(up).chain(hand).chain(get.into_iter().flatten()))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        Some((in_order_reduce(p, &h, |r| in_order_links(r, p.ranks).1), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        fn depth(r: usize, np: usize) -> usize {
            in_order_links(r, np).1.into_iter().flatten().fold(0, |d, c| d.max(depth(c, np)) + 1)
        }
        if p.ranks == 0 { 0 } else { depth(p.ranks - 1, p.ranks) }
    }
}

impl KaryTree {
    fn children(&self, r: usize, np: usize) -> Box<dyn Iterator<Item = usize> + Send> {
        if self.radix == 0 { Box::new(binary_children(r, np)) } else { Box::new(knomial_children(r, np, self.radix)) }
    }
}

/// The one tag of these trees' messages.
const TAG: u32 = 0;

impl Algorithm for KaryTree {
    fn id(&self) -> &'static str {
        if self.radix == 0 { BINARY_BCAST_INFO.id } else { KNOMIAL_BCAST_INFO.id }
    }

    fn label(&self) -> String {
        match self.radix {
            0 | 4 => self.id().to_string(),
            r => format!("{}(radix={r})", self.id()),
        }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np) = (rank as usize, p.ranks);
        let all = Region::vec(0, p.elems);
        let parent = (r > 0).then(|| parent_of(r, self.radix) as Rank);
        let children = self.children(r, np);
        if self.collective == Collective::Reduce {
            let take = children.flat_map(move |c| [Op::recv_reduce(c as Rank, TAG, all), Op::WaitAll]);
            return vec![Box::new(take.chain(parent.map(|q| Op::send(q, TAG, all))))];
        }
        let take = parent.map(|q| [Op::recv_copy(q, TAG, all), Op::WaitAll]);
        let pass = children.map(move |c| Op::send(c as Rank, TAG, all));
        vec![Box::new(take.into_iter().flatten().chain(pass))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let children = |r: usize| -> Vec<usize> { self.children(r, p.ranks).collect() };
        let t = if self.collective == Collective::Reduce {
            tree_reduce(p, &h, children)
        } else {
            tree_bcast(p, &h, children)
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective != Collective::Reduce {
            return 0;
        }
        // A rank adds its children's sums one after the other into its own.
        fn depth(t: &KaryTree, r: usize, np: usize) -> usize {
            t.children(r, np).fold(0, |d, c| d.max(depth(t, c, np)) + 1)
        }
        depth(self, 0, p.ranks)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// A tree broadcast from rank 0, every child of higher rank than its parent
/// (`children(r)` in the order r sends): child i of a parent has the vector
/// `ceil((i+1)/k) T(S)` after it, the parent's k outgoing NICs sending in order. Each
/// rank receives one message, so no incoming port is ever wanted twice.
pub fn tree_bcast(p: &Problem, h: &Hockney, children: impl Fn(usize) -> Vec<usize>) -> f64 {
    let t = h.t(p.bytes());
    let k = h.nics.max(1) as usize;
    let mut got = vec![0.0f64; p.ranks];
    let mut end = 0.0f64;
    for q in 0..p.ranks {
        for (i, c) in children(q).into_iter().enumerate() {
            got[c] = got[q] + (i / k + 1) as f64 * t;
        }
        end = end.max(got[q]);
    }
    end
}

/// A tree reduce to rank 0, every child of higher rank than its parent: rank q's
/// children send their sums when they have them; q's k incoming NICs take them in order
/// of (send time, rank), each for `T(S)`, and q adds them in `children(q)` order on its
/// one compute unit (`R(S)` each), then sends its sum up. The time is when rank 0 has
/// added its last child's sum.
pub fn tree_reduce(p: &Problem, h: &Hockney, children: impl Fn(usize) -> Vec<usize>) -> f64 {
    let ready = tree_reduce_ready(p, h, (0..p.ranks).rev(), children);
    ready.first().copied().unwrap_or(0.0)
}

/// When each rank has its subtree's sum, for a tree reduce whose ranks are visited in
/// `order` (every child before its parent): the arithmetic of [`tree_reduce`].
fn tree_reduce_ready(
    p: &Problem,
    h: &Hockney,
    order: impl Iterator<Item = usize>,
    children: impl Fn(usize) -> Vec<usize>,
) -> Vec<f64> {
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let mut ready = vec![0.0f64; p.ranks];
    let mut arrived = vec![0.0f64; p.ranks];
    let mut ports = cost_model::PortPool::of_nics(h.nics);
    for q in order {
        let kids = children(q);
        let mut queue: Vec<(f64, usize)> = kids.iter().map(|&c| (ready[c], c)).collect();
        queue.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // q's ports, all free, take the sums in order of send time.
        ports.reset(h.nics as usize);
        for &(sent, c) in &queue {
            arrived[c] = ports.take(sent, t) + t;
        }
        ready[q] = kids.iter().fold(0.0f64, |done, &c| done.max(arrived[c]) + r);
    }
    ready
}

/// Open MPI's in-order binary-tree reduce: the tree reduce of [`tree_reduce`] to rank
/// P-1 (every child of lower rank than its parent, `children(r)` left then right), then
/// one message of S from rank P-1 to rank 0: `ready(P-1) + T(S)` for P > 1.
pub fn in_order_reduce(p: &Problem, h: &Hockney, children: impl Fn(usize) -> [Option<usize>; 2]) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let ready = tree_reduce_ready(p, h, 0..p.ranks, |q| children(q).into_iter().flatten().collect());
    ready[p.ranks - 1] + h.t(p.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open MPI's examples: the k-nomial tree of 10 ranks, radix 4 (bcast.c's comment),
    /// and the binary tree of build_tree.
    #[test]
    fn shapes() {
        let kids = |r| knomial_children(r, 10, 4).collect::<Vec<_>>();
        assert_eq!(kids(0), [4, 8, 1, 2, 3]);
        assert_eq!(kids(4), [5, 6, 7]);
        assert_eq!(kids(8), [9]);
        assert!(kids(5).is_empty());
        assert_eq!(knomial_children(0, 10, 2).collect::<Vec<_>>(), [8, 4, 2, 1]);
        // A radix of P or more: a star, found without counting to the radix.
        for radix in [10, 11, 1 << 40, usize::MAX] {
            assert_eq!(knomial_children(0, 10, radix).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
            assert!((1..10).all(|r| knomial_children(r, 10, radix).next().is_none() && parent_of(r, radix) == 0));
        }
        let bin = |r| binary_children(r, 10).collect::<Vec<_>>();
        assert_eq!(bin(0), [1, 2]);
        assert_eq!(bin(1), [3, 5]);
        assert_eq!(bin(2), [4, 6]);
        assert_eq!(bin(3), [7]);
        assert_eq!(bin(4), [8]);
        assert_eq!(bin(5), [9]);
        assert!(bin(6).is_empty());
        // The in-order tree of 10 (Open MPI's build_in_order_bintree): root 9, children 8
        // and 4; every rank but 9 is one rank's child and knows that parent.
        assert_eq!(in_order_links(9, 10), (None, [Some(8), Some(4)]));
        assert_eq!(in_order_links(8, 10), (Some(9), [Some(7), Some(6)]));
        assert_eq!(in_order_links(4, 10), (Some(9), [Some(3), Some(1)]));
        for np in 1..40 {
            let mut parent = vec![None; np];
            for r in 0..np {
                for c in in_order_links(r, np).1.into_iter().flatten() {
                    assert!(c < r && parent[c].replace(r).is_none(), "in-order P={np}: {c}");
                }
            }
            for (r, q) in parent.iter().enumerate() {
                assert_eq!(*q, in_order_links(r, np).0, "in-order P={np} r={r}");
            }
        }
        // Every rank but 0 is exactly one rank's child, and parent_of finds it.
        for np in 1..40 {
            for (radix, name) in [(0, "binary"), (2, "2"), (3, "3"), (4, "4")] {
                let t = KaryTree { radix, collective: Collective::Broadcast };
                let mut parent = vec![None; np];
                for r in 0..np {
                    for c in t.children(r, np) {
                        assert!(c > r && parent[c].replace(r).is_none(), "{name} P={np}: {c}");
                    }
                }
                for (r, q) in parent.iter().enumerate().skip(1) {
                    assert_eq!(*q, Some(parent_of(r, radix)), "{name} P={np} r={r}");
                }
            }
        }
    }
}
