//! Hierarchical ring (Tencent 2018, seed 002 "分层Ring AllReduce"): inside each group
//! reduce to the group's leader, ring allreduce among the leaders, broadcast inside
//! each group. The point is to cross the slow network with `m` leaders instead of all
//! `P` ranks: `2(m-1)` latencies instead of `2(P-1)`.
//!
//! Groups are the innermost level's groups of a hierarchical topology (the GPUs of one
//! node, `g = size_0` consecutive ranks); the leader of group `j` is its first rank
//! `j g`; the leaders' ring runs in group order over whatever levels lie above (with
//! more than two levels its hops are not all alike, and the closed form follows them).
//!
//! The group's reduce and broadcast are a parameter, `intra`:
//! - `star` (default, as the seed describes it): every member sends its vector to the
//!   leader, which adds them in rank order; the leader sends the result to every member.
//!   With one NIC the leader takes the `g-1` vectors one after another; give the level a
//!   leader with `nics: g-1` and they arrive at once, which is the seed's "one step".
//! - `binomial_tree`: a binomial tree over the group, rooted at the leader (as
//!   [`super::tree`]).
//! - `chain`: local rank `g-1` passes to `g-2`, ... to the leader; the result goes back
//!   along the chain.
//!
//! Not applicable without levels (a flat, grid or custom machine has no groups).

use super::{AlgoInfo, Algorithm, EXACT, Machine, Params, Problem, Topology, binomial_shape, block};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "hierarchical_ring",
    summary: "reduce inside each group to its leader, ring allreduce among leaders, broadcast inside groups",
    source: "seed 002 分层Ring AllReduce (Tencent 2018)",
    requires: "a hierarchical topology: groups are the innermost level's (g = size_0 ranks), \
               m = P/g leaders; any n",
    closed_form: "Red + 2(m-1)(alpha_1 + c/B_1) + (m-1) c C + Bc, c = ceil(n/m) e, on two levels \
                  (the leaders' ring is followed hop by hop above that); T0 = alpha_0 + S/B_0, R = S C, \
                  k = the leader's NICs, q = ceil((g-1)/k): star Red = max(T0 + (g-1)R, q T0 + (g-1-(q-1)k)R), \
                  Bc = q T0; chain Red = (g-1)(T0+R), Bc = (g-1)T0; binomial_tree the tree recurrence \
                  (log2 g (T0+R) and log2 g T0 for g a power of two). Seed 002: 2(alpha+S/B) + g S C + \
                  2(m-1)(alpha + S/(mB)) + (m-1)(S/m)C, which needs k >= g-1 and counts g additions for g-1. \
                  None when group leaders' NICs differ",
    params: &["intra=star: the group's reduce and broadcast (star, binomial_tree, chain)"],
    build: |params: &mut Params| {
        let intra = match params.choice("intra", &["star", "binomial_tree", "chain"])? {
            "binomial_tree" => GroupMethod::BinomialTree,
            "chain" => GroupMethod::Chain,
            _ => GroupMethod::Star,
        };
        Ok(Box::new(HierarchicalRing { intra }))
    },
};

/// How a group reduces to its leader and broadcasts from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMethod {
    /// Every member to the leader at once; the leader to every member.
    Star,
    /// A binomial tree rooted at the leader.
    BinomialTree,
    /// Along the group, last member first.
    Chain,
}

impl GroupMethod {
    fn name(self) -> &'static str {
        match self {
            GroupMethod::Star => "star",
            GroupMethod::BinomialTree => "binomial_tree",
            GroupMethod::Chain => "chain",
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct HierarchicalRing {
    /// The group's reduce and broadcast.
    pub intra: GroupMethod,
}

const UP: u32 = 0;
const DOWN: u32 = 1;
/// The leaders' ring uses tags from here on, one per step.
const RING: u32 = 2;

/// The group size `g`: the innermost level's, or 1 (every rank its own leader) where
/// the machine has no levels.
fn group_size(topo: &dyn Topology, ranks: usize) -> usize {
    topo.levels().and_then(|l| l.first().map(|&(g, _)| g)).filter(|&g| g >= 1 && ranks.is_multiple_of(g)).unwrap_or(1)
}

impl HierarchicalRing {
    /// Local rank `i` of a group of `g` (global `base + i`): its part of the reduce to the
    /// leader, ending with its partial sum sent up (members) or the group's sum held (leader).
    fn reduce(&self, base: usize, i: usize, g: usize, all: Region) -> Vec<Op> {
        let at = |l: usize| (base + l) as Rank;
        let mut ops = Vec::new();
        match self.intra {
            GroupMethod::Star if i == 0 => {
                ops.extend((1..g).map(|l| Op::recv_reduce(at(l), UP, all)));
                ops.push(Op::WaitAll);
            }
            GroupMethod::Star => ops.push(Op::send(at(0), UP, all)),
            GroupMethod::BinomialTree => {
                let (parent, children) = binomial_shape(i, g);
                // Farthest child (smallest subtree) first, as the binomial tree does.
                for c in children {
                    ops.extend([Op::recv_reduce(at(c), UP, all), Op::WaitAll]);
                }
                ops.extend(parent.map(|q| Op::send(at(q), UP, all)));
            }
            GroupMethod::Chain => {
                if i + 1 < g {
                    ops.extend([Op::recv_reduce(at(i + 1), UP, all), Op::WaitAll]);
                }
                if i > 0 {
                    ops.push(Op::send(at(i - 1), UP, all));
                }
            }
        }
        ops
    }

    /// Local rank `i`'s part of the broadcast from the leader.
    fn broadcast(&self, base: usize, i: usize, g: usize, all: Region) -> Vec<Op> {
        let at = |l: usize| (base + l) as Rank;
        let mut ops = Vec::new();
        match self.intra {
            GroupMethod::Star if i == 0 => ops.extend((1..g).map(|l| Op::send(at(l), DOWN, all))),
            GroupMethod::Star => ops.extend([Op::recv_copy(at(0), DOWN, all), Op::WaitAll]),
            GroupMethod::BinomialTree => {
                let (parent, children) = binomial_shape(i, g);
                if let Some(q) = parent {
                    ops.extend([Op::recv_copy(at(q), DOWN, all), Op::WaitAll]);
                }
                // Nearest child (largest subtree) first.
                ops.extend(children.rev().map(|c| Op::send(at(c), DOWN, all)));
            }
            GroupMethod::Chain => {
                if i > 0 {
                    ops.extend([Op::recv_copy(at(i - 1), DOWN, all), Op::WaitAll]);
                }
                if i + 1 < g {
                    ops.push(Op::send(at(i + 1), DOWN, all));
                }
            }
        }
        ops
    }
}

/// The ring allreduce of [`super::ring`] among `m` leaders, leader `j` being rank `j g`.
fn leaders_ring(j: usize, m: usize, g: usize, n: usize) -> impl Iterator<Item = Op> + Send {
    let right = (((j + 1) % m) * g) as Rank;
    let left = (((j + m - 1) % m) * g) as Rank;
    let steps = m.saturating_sub(1);
    // Chunk indices are taken mod m; `+ 2m` keeps the arithmetic unsigned.
    let chunk = move |i: usize| block(n, m, i % m);
    // Reduce-scatter: at step k pass chunk j-k on, add chunk j-k-1 in.
    let reduce_scatter = (0..steps).flat_map(move |k| {
        let tag = RING + k as u32;
        [Op::send(right, tag, chunk(j + 2 * m - k)), Op::recv_reduce(left, tag, chunk(j + 2 * m - k - 1)), Op::WaitAll]
    });
    // Allgather: at step k pass the finished chunk j+1-k on, take chunk j-k.
    let allgather = (0..steps).flat_map(move |k| {
        let tag = RING + (steps + k) as u32;
        [Op::send(right, tag, chunk(j + 2 * m + 1 - k)), Op::recv_copy(left, tag, chunk(j + 2 * m - k)), Op::WaitAll]
    });
    reduce_scatter.chain(allgather)
}

impl Algorithm for HierarchicalRing {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        match self.intra {
            GroupMethod::Star => INFO.id.to_string(),
            other => format!("{}(intra={})", INFO.id, other.name()),
        }
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        let Some(levels) = m.topo.levels() else {
            return Err(format!(
                "needs a hierarchical topology (groups to reduce in); this one is {}",
                m.topo.describe()
            ));
        };
        match levels.first() {
            Some(&(g, _)) if g >= 1 && p.ranks.is_multiple_of(g) => Ok(()),
            _ => Err(format!("the innermost level's groups do not divide the {} ranks", p.ranks)),
        }
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, n) = (rank as usize, p.elems);
        let g = group_size(topo, p.ranks);
        let (m, base, i) = (p.ranks / g, r - r % g, r % g);
        let all = Region::vec(0, n);
        let up = self.reduce(base, i, g, all);
        let down = self.broadcast(base, i, g, all);
        if i == 0 {
            vec![Box::new(up.into_iter().chain(leaders_ring(r / g, m, g, n)).chain(down))]
        } else {
            vec![Box::new(up.into_iter().chain(down))]
        }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::hierarchical_ring(p, m, self.intra)?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem) -> usize {
        // An element goes through the group's additions ((g-1) for star and chain,
        // ceil(log2 g) for the tree) and then m-1 in the leaders' ring. The machine, and so
        // g, is not known here; (g-1) + (m-1) <= g m - 1 = P-1 for every g, so P-1 bounds it.
        p.ranks.saturating_sub(1)
    }
}
