//! Naive allreduce (the homework report's `Naive_Allreduce`, as the issue reads it):
//! every rank sends its whole vector to every other rank and adds the P-1 vectors it
//! receives. One step, `(P-1) S` on the wire per rank, `(P-1) S C` of additions on every
//! rank: the most traffic and work of any allreduce, for one latency.
//!
//! The sends go out in the order `r+1, r+2, ...` (mod P), k at a time on k NICs, so in
//! every round of messages each rank receives from a different peer: no port is ever
//! wanted twice (the pattern of [`super::direct::exchange`]).

use super::direct::exchange;
use super::stepped::{self, Exchange, Part, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model::{Hockney, gather_reduce};
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "naive",
    summary: "every rank sends its whole vector to every other rank and adds the P-1 it receives",
    source: "homework report (Naive_Allreduce)",
    requires: "any P >= 1, any n",
    closed_form: "m = ceil((P-1)/k) rounds on k NICs, T = alpha + S/B, R = S C: \
                  max(T + (P-1) R, m T + (P-1-(m-1)k) R)",
    params: &[],
    build: |_| Ok(Box::new(Naive)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Naive;

/// The one step of every rank.
#[derive(Clone, Copy, Debug)]
struct NaivePlan {
    np: usize,
    n: usize,
}

impl Stepped for NaivePlan {
    fn steps(&self) -> usize {
        usize::from(self.np > 1)
    }

    fn exchange(&self, rank: usize, _s: usize) -> Option<Exchange> {
        let all = Part::Fixed(Region::vec(0, self.n));
        Some(Exchange { rank, np: self.np, give: all, take: all, action: Action::Reduce })
    }

    fn plan(&self, rank: usize, _s: usize, out: &mut StepPlan) {
        let all = Region::vec(0, self.n);
        exchange(rank, self.np, |_| all, |_| all, Action::Reduce, out);
    }
}

impl Algorithm for Naive {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = NaivePlan { np: p.ranks, n: p.elems };
        vec![stepped::program(plan, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = NaivePlan { np: p.ranks, n: p.elems };
        Some((stepped::formula_or_steps(&plan, p, m, |h| naive(p, h))?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Naive (every rank sends its vector to every other rank and adds what it gets):
/// `gather_reduce` of P-1 vectors, `max(T + (P-1) R, m T + (P-1-(m-1)k) R)` with
/// `T = T(S)`, `R = R(S)`, `m = ceil((P-1)/k)`. Exact: rank r sends to `r+1, r+2, ...`,
/// so in every round of k messages each rank receives k of them from k different
/// senders and no port is wanted twice. With one NIC, `(P-1) T + R` when `R <= T`
/// (additions hide behind transfers) and `T + (P-1) R` when `R >= T`.
///
/// The homework report gives no formula; it measured Naive_Allreduce (docs/sources.md).
pub fn naive(p: &Problem, h: &Hockney) -> f64 {
    gather_reduce(p.ranks.saturating_sub(1), h.nics, h.t(p.bytes()), h.r(p.bytes()))
}
