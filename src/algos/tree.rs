//! Binomial tree (the course report's Recursive): a binomial-tree reduce to rank 0,
//! then a binomial-tree broadcast from it. Rank r's parent is r with its highest bit
//! cleared; its children are `r + 2^j` for every `2^j` above r's highest bit.
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
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0, then binomial-tree broadcast",
    source: "course report (Recursive); survey (the tree of recursive halving)",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (2T + R) for P a power of two; otherwise the \
                  same tree recurrence over ceil(log2 P) rounds with each rank's incoming NICs as servers; \
                  segments N > 1: the pipeline recurrence (each piece's additions and hops in order) \
                  where k >= ceil(log2 P) NICs (no port is ever wanted twice), none with fewer",
    params: &["segments=1: pieces the vector is cut into and pipelined up and down the tree"],
    build: |params| Ok(Box::new(BinomialTree { segments: params.count("segments", 1)? })),
};

/// See the module docs.
#[derive(Debug)]
pub struct BinomialTree {
    /// Pieces the vector is pipelined in.
    pub segments: usize,
}

const UP: u32 = 0;
const DOWN: u32 = 1;

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
        if self.segments > 1 {
            return vec![pipelined(rank as usize, p, self.segments)];
        }
        let all = Region::vec(0, p.elems);
        let (parent, children) = binomial(rank as usize, p.ranks);
        // Reduce: add the children's partial sums, farthest (smallest subtree) first.
        let reduce = children.clone().flat_map(move |c| [Op::recv_reduce(c as Rank, UP, all), Op::WaitAll]);
        // Hand the partial sum up, get the total back down.
        let up_down = parent
            .into_iter()
            .flat_map(move |q| [Op::send(q as Rank, UP, all), Op::recv_copy(q as Rank, DOWN, all), Op::WaitAll]);
        // Broadcast: nearest child (largest subtree) first.
        let bcast = children.rev().map(move |c| Op::send(c as Rank, DOWN, all));
        vec![Box::new(reduce.chain(up_down).chain(bcast))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        if self.segments > 1 {
            return Some((cost_model::binomial_tree_pipelined(p, &h, self.segments)?, EXACT));
        }
        Some((cost_model::binomial_tree(p, &h), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        clog2(p.ranks) as usize
    }
}

/// Rank r's program with `segs > 1` pieces (see the module docs). Piece s goes up with
/// tag `2s` and down with tag `2s + 1`.
fn pipelined(r: usize, p: Problem, segs: usize) -> Program<'static> {
    let n = p.elems;
    let seg = move |s: usize| block(n, segs, s);
    let (parent, children) = binomial(r, p.ranks);
    let up_tag = |s: usize| 2 * s as u32;
    let down_tag = |s: usize| 2 * s as u32 + 1;
    // Up: add the children's piece s (in the order of the unsegmented tree), then hand it
    // on once the previous piece has landed.
    let kids = children.clone();
    let reduce = (0..segs).flat_map(move |s| {
        let take = kids.clone().flat_map(move |c| [Op::recv_reduce(c as Rank, up_tag(s), seg(s)), Op::WaitAll]);
        let pass = parent.map(|q| [Op::WaitSends(0), Op::send(q as Rank, up_tag(s), seg(s))]);
        take.chain(pass.into_iter().flatten())
    });
    // Down: take piece s from the parent, then pass it to the children, nearest first,
    // once the previous round of sends has landed.
    let bcast = (0..segs).flat_map(move |s| {
        let take = parent.map(|q| [Op::recv_copy(q as Rank, down_tag(s), seg(s)), Op::WaitAll]);
        let pass = children.clone().rev().map(move |c| Op::send(c as Rank, down_tag(s), seg(s)));
        take.into_iter().flatten().chain([Op::WaitSends(0)]).chain(pass)
    });
    Box::new(reduce.chain(bcast))
}
