//! Hierarchical ring (Tencent 2018, the survey's "分层Ring AllReduce"): inside each group
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
//! - `star` (default, as the survey describes it): every member sends its vector to the
//!   leader, which adds them in rank order; the leader sends the result to every member.
//!   With one NIC the leader takes the `g-1` vectors one after another; give the level a
//!   leader with `nics: g-1` and they arrive at once, which is the survey's "one step".
//! - `binomial_tree`: a binomial tree over the group, rooted at the leader (as
//!   [`super::tree`]).
//! - `chain`: local rank `g-1` passes to `g-2`, ... to the leader; the result goes back
//!   along the chain.
//!
//! Not applicable without levels (a flat, grid or custom machine has no groups).

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Params, Problem, Topology, binomial_shape, block, clog2};
use crate::cost_model;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "hierarchical_ring",
    summary: "reduce inside each group to its leader, ring allreduce among leaders, broadcast inside groups",
    source: "survey (hierarchical ring, 分层Ring AllReduce); Tencent 2018",
    requires: "a hierarchical topology: groups are the innermost level's (g = size_0 ranks), \
               m = P/g leaders; any n",
    closed_form: "Red + 2(m-1)(alpha_1 + c/B_1) + (m-1) c C + Bc, c = ceil(n/m) e, on two levels \
                  (the leaders' ring is followed hop by hop above that); T0 = alpha_0 + S/B_0, R = S C, \
                  k = the leader's NICs, q = ceil((g-1)/k): star Red = max(T0 + (g-1)R, q T0 + (g-1-(q-1)k)R), \
                  Bc = q T0; chain Red = (g-1)(T0+R), Bc = (g-1)T0; binomial_tree the tree recurrence \
                  (log2 g (T0+R) and log2 g T0 for g a power of two). The survey: 2(alpha+S/B) + g S C + \
                  2(m-1)(alpha + S/(mB)) + (m-1)(S/m)C, which needs k >= g-1 and counts g additions for g-1. \
                  When group leaders' NICs differ: the recurrence of its steps (cost_model::lockstep), none \
                  where a message takes a port ahead of a lagging group's",
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

/// The group size `g`: the innermost level's, or 1 (every rank its own leader) where
/// the machine has no levels.
fn group_size(topo: &dyn Topology, ranks: usize) -> usize {
    topo.levels().and_then(|l| l.first().map(|&(g, _)| g)).filter(|&g| g >= 1 && ranks.is_multiple_of(g)).unwrap_or(1)
}

/// The schedule as steps, the same numbering on every rank: the group's reduce, the
/// leaders' ring (`2(m-1)` steps; members idle), the group's broadcast.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HrPlan {
    intra: GroupMethod,
    /// Group size.
    g: usize,
    /// Groups (leaders).
    m: usize,
    /// Elements per rank.
    n: usize,
}

impl HrPlan {
    /// Steps of the group's reduce (and of its broadcast).
    fn intra_steps(&self) -> usize {
        match self.intra {
            _ if self.g <= 1 => 0,
            GroupMethod::Star => 1,
            GroupMethod::Chain => self.g - 1,
            GroupMethod::BinomialTree => clog2(self.g) as usize,
        }
    }

    /// Local rank `i`'s part of step `t` of the group's reduce (`up`) or broadcast.
    fn intra(&self, base: usize, i: usize, t: usize, up: bool, out: &mut StepPlan) {
        let g = self.g;
        let all = Region::vec(0, self.n);
        // A message toward the leader is added in; one away from it is copied.
        let send =
            |to: usize, out: &mut StepPlan| out.sends.push(Send { to: base + to, kind: 0, src: all, reduce: up });
        let action = if up { Action::Reduce } else { Action::Copy };
        let recv =
            |from: usize, out: &mut StepPlan| out.recvs.push(Recv { from: base + from, kind: 0, dst: all, action });
        match self.intra {
            // Every member to the leader in one step; the leader to every member in one.
            GroupMethod::Star => match (i, up) {
                (0, true) => (1..g).for_each(|l| recv(l, out)),
                (0, false) => (1..g).for_each(|l| send(l, out)),
                (_, true) => send(0, out),
                (_, false) => recv(0, out),
            },
            // Up: local rank g-1-t passes to g-2-t. Down: t passes to t+1.
            GroupMethod::Chain => {
                let (from, to) = if up { (g - 1 - t, g - 2 - t) } else { (t, t + 1) };
                if i == from {
                    send(to, out);
                }
                if i == to {
                    recv(from, out);
                }
            }
            // The binomial tree of [`super::tree`], whose edges each span one bit: up,
            // step t joins the subtrees across bit j = rounds-1-t (farthest child first);
            // down, step t hands on across bit t (nearest child, largest subtree, first).
            GroupMethod::BinomialTree => {
                let j = if up { clog2(g) as usize - 1 - t } else { t };
                let (parent, mut children) = binomial_shape(i, g);
                if let Some(q) = parent.filter(|&q| q + (1 << j) == i) {
                    if up { send(q, out) } else { recv(q, out) }
                }
                if let Some(c) = children.find(|&c| c == i + (1 << j)) {
                    if up { recv(c, out) } else { send(c, out) }
                }
            }
        }
    }

    /// Leader `j`'s step `k` of the ring allreduce of [`super::ring`] among the leaders
    /// (leader j being rank `j g`): reduce-scatter, pass chunk j-k on and add chunk j-k-1;
    /// then allgather, pass the finished chunk j+1-k on and take chunk j-k. Chunk indices
    /// are mod m; `+ 2m` keeps the arithmetic unsigned.
    fn ring(&self, j: usize, k: usize, out: &mut StepPlan) {
        let (m, g) = (self.m, self.g);
        let chunk = |i: usize| block(self.n, m, i % m);
        let (right, left) = (((j + 1) % m) * g, ((j + m - 1) % m) * g);
        let (give, take, reduce) = if k < m - 1 {
            (j + 2 * m - k, j + 2 * m - k - 1, true)
        } else {
            let k = k - (m - 1);
            (j + 2 * m + 1 - k, j + 2 * m - k, false)
        };
        let action = if reduce { Action::Reduce } else { Action::Copy };
        out.sends.push(Send { to: right, kind: 0, src: chunk(give), reduce });
        out.recvs.push(Recv { from: left, kind: 0, dst: chunk(take), action });
    }
}

impl Stepped for HrPlan {
    fn steps(&self) -> usize {
        2 * self.intra_steps() + 2 * self.m.saturating_sub(1)
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (base, i) = (r - r % self.g, r % self.g);
        let (red, ring) = (self.intra_steps(), 2 * self.m.saturating_sub(1));
        if s < red {
            self.intra(base, i, s, true, out);
        } else if s < red + ring {
            if i == 0 {
                self.ring(r / self.g, s - red, out);
            }
        } else {
            self.intra(base, i, s - red - ring, false, out);
        }
    }
}

/// The plan of `hierarchical_ring` with `intra` on `topo` for `p`.
pub(crate) fn plan(p: &Problem, topo: &dyn Topology, intra: GroupMethod) -> HrPlan {
    let g = group_size(topo, p.ranks);
    HrPlan { intra, g, m: p.ranks / g, n: p.elems }
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
        vec![stepped::program(plan(&p, topo, self.intra), rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        self.applicable(p, m).ok()?;
        Some((cost_model::hierarchical_ring(p, m, self.intra)?, EXACT))
    }

    /// An element goes through the group's additions (g-1 in a chain for star and
    /// chain, ceil(log2 g) levels for the tree) and then m-1 in the leaders' ring.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        let g = group_size(topo, p.ranks);
        let group = match self.intra {
            GroupMethod::BinomialTree => clog2(g) as usize,
            GroupMethod::Star | GroupMethod::Chain => g - 1,
        };
        group + (p.ranks / g).saturating_sub(1)
    }
}
