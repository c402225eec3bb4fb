//! Binomial tree (the course report's Recursive). Rank r's parent is r with its highest
//! bit cleared; its children are `r + 2^j` for every `2^j` above r's highest bit.
//! - reduce to rank 0 ([`reduce_phase`]): add the children's partial sums, farthest
//!   (smallest subtree) first, and hand the sum up;
//! - broadcast from rank 0 ([`bcast_phase`]): take the vector from the parent, pass it
//!   to the children, nearest (largest subtree) first;
//! - allreduce: the reduce, then the broadcast.
//!
//! With `segments: N > 1` the vector is cut into N pieces that follow each other up and
//! down the tree, pipelined as in `chain`: a rank adds its children's piece s and sends
//! it up while its children already work on piece s+1; the root sends piece s down as
//! soon as the whole vector is reduced, and each rank passes piece s on to its children
//! once it has it. A rank keeps at most one piece in flight to its parent and one round
//! of pieces to its children (`WaitSends(0)` before the next): the flow control of
//! `double_binary_tree`, without which a leaf would send all its pieces at once and its
//! parent's port would take them ahead of its other children's.

use super::chain::segments_fit;
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block, clog2};
use crate::collective::Collective;
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0, then binomial-tree broadcast",
    source: "course report (Recursive); survey (the tree of recursive halving)",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (2T + R) for P a power of two; otherwise the \
                  same tree recurrence over ceil(log2 P) rounds with each rank's incoming NICs as servers; \
                  segments N > 1: the pipeline recurrence (each piece's additions and hops in order), \
                  with fewer than ceil(log2 P) NICs each parent's incoming NICs serving its children's pieces \
                  by (issue time, rank)",
    params: &["segments=1: pieces the vector is cut into and pipelined up and down the tree"],
    build: |params| {
        Ok(Box::new(BinomialTree { segments: params.count("segments", 1)?, collective: Collective::Allreduce }))
    },
};

/// Registry entry: reduce.
pub const REDUCE_INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0 (the first half of the binomial_tree allreduce)",
    source: "course report (Recursive); Open MPI reduce binomial; Chan et al. 2007 (minimum spanning tree)",
    requires: "any P >= 1, any n",
    closed_form: "log2(P) (T + R) for P a power of two, T = alpha + S/B, R = S C; otherwise the tree \
                  recurrence with each rank's incoming NICs as servers",
    params: &[],
    build: |_| Ok(Box::new(BinomialTree { segments: 1, collective: Collective::Reduce })),
};

/// Registry entry: broadcast.
pub const BCAST_INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree broadcast from rank 0 (the second half of the binomial_tree allreduce)",
    source: "course report (Recursive); Open MPI bcast binomial; Chan et al. 2007 (minimum spanning tree)",
    requires: "any P >= 1, any n",
    closed_form: "ceil(log2 P) (alpha + S/B) with one NIC; with k, a parent sends its children k at a time, \
                  nearest first",
    params: &[],
    build: |_| Ok(Box::new(BinomialTree { segments: 1, collective: Collective::Broadcast })),
};

/// See the module docs: the allreduce, the reduce or the broadcast.
#[derive(Debug)]
pub struct BinomialTree {
    /// Pieces the vector is pipelined in.
    pub segments: usize,
    collective: Collective,
}

/// Rank r's parent (none for 0) and its children's distances `2^j`, nearest last.
pub(crate) fn binomial(r: usize, np: usize) -> (Option<usize>, impl DoubleEndedIterator<Item = usize> + Clone) {
    let rounds = clog2(np);
    let (parent, first) = if r == 0 { (None, 0) } else { (Some(r - (1 << r.ilog2())), r.ilog2() + 1) };
    let children = (first..rounds).rev().map(move |j| r + (1 << j)).filter(move |&c| c < np);
    (parent, children)
}

impl Algorithm for BinomialTree {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.segments == 1 { INFO.id.into() } else { format!("{}(segments={})", INFO.id, self.segments) }
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        segments_fit(self.segments, p.elems)
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np, n, segs) = (rank as usize, p.ranks, p.elems, self.segments);
        match self.collective {
            Collective::Reduce => vec![Box::new(reduce_phase(r, np, n, segs))],
            Collective::Broadcast => vec![Box::new(bcast_phase(r, np, n, segs))],
            _ => vec![Box::new(reduce_phase(r, np, n, segs).chain(bcast_phase(r, np, n, segs)))],
        }
    }

    /// Every rank but the root sends each segment once up (reduce) and the root's result
    /// reaches it once down (broadcast).
    fn messages(&self, p: &Problem) -> Option<u64> {
        let once = p.ranks.saturating_sub(1) as u64 * self.segments as u64;
        Some(if self.collective == Collective::Allreduce { 2 * once } else { once })
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let t = match self.collective {
            Collective::Reduce => cost_model::binomial_reduce(p, &h),
            Collective::Broadcast => cost_model::binomial_bcast(p, &h, 0.0),
            _ if self.segments > 1 => cost_model::binomial_tree_pipelined(p, &h, self.segments).unwrap_or_else(|| {
                cost_model::binomial_pipeline(p.ranks, &h, self.segments, |s| p.b(block(p.elems, self.segments, s).len))
            }),
            _ => cost_model::binomial_tree(p, &h),
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::Broadcast { 0 } else { clog2(p.ranks) as usize }
    }
}

/// Rank r's part of a binomial reduce to rank 0 of n elements in `segs` pieces (one:
/// the textbook tree): add the children's piece s, farthest (smallest subtree) first,
/// then hand it up once the previous piece has landed. Piece s goes up with tag `2s`.
pub(crate) fn reduce_phase(r: usize, np: usize, n: usize, segs: usize) -> impl Iterator<Item = Op> + Send {
    let seg = move |s: usize| block(n, segs, s);
    let (parent, children) = binomial(r, np);
    let up_tag = |s: usize| 2 * s as u32;
    (0..segs).flat_map(move |s| {
        let take = children.clone().flat_map(move |c| [Op::recv_reduce(c as Rank, up_tag(s), seg(s)), Op::WaitAll]);
        let pass = parent.map(|q| [Op::WaitSends(0), Op::send(q as Rank, up_tag(s), seg(s))]);
        take.chain(pass.into_iter().flatten())
    })
}

/// Rank r's part of a binomial broadcast from rank 0 of n elements in `segs` pieces:
/// take piece s from the parent, then pass it to the children, nearest (largest
/// subtree) first, once the previous round of sends has landed. Piece s goes down with
/// tag `2s + 1`. (With one piece the waits for landed sends never wait: nothing is in
/// flight by then.)
pub(crate) fn bcast_phase(r: usize, np: usize, n: usize, segs: usize) -> impl Iterator<Item = Op> + Send {
    let seg = move |s: usize| block(n, segs, s);
    let (parent, children) = binomial(r, np);
    let down_tag = |s: usize| 2 * s as u32 + 1;
    (0..segs).flat_map(move |s| {
        let take = parent.map(|q| [Op::recv_copy(q as Rank, down_tag(s), seg(s)), Op::WaitAll]);
        let pass = children.clone().rev().map(move |c| Op::send(c as Rank, down_tag(s), seg(s)));
        take.into_iter().flatten().chain([Op::WaitSends(0)]).chain(pass)
    })
}
