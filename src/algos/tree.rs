//! Binomial tree (the course report's Recursive): a binomial-tree reduce to rank 0,
//! then a binomial-tree broadcast from it. Rank r's parent is r with its highest bit
//! cleared; its children are `r + 2^j` for every `2^j` above r's highest bit.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, clog2};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0, then binomial-tree broadcast",
    source: "course report (Recursive); survey (the tree of recursive halving)",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (2T + R) for P a power of two; otherwise the \
                  same tree recurrence over ceil(log2 P) rounds with each rank's incoming NICs as servers",
    params: &[],
    build: |_| Ok(Box::new(BinomialTree)),
};

/// See the module docs.
#[derive(Debug)]
pub struct BinomialTree;

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

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
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
        Some((cost_model::binomial_tree(p, &cost_model::Hockney::of(m)?), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        clog2(p.ranks) as usize
    }
}
