//! Direct (all-to-all) allreduce: a reduce-scatter in which every rank sends each other
//! rank the block that rank owns, all at once, and adds the P-1 copies of its own block
//! as they come in; then an allgather in which every rank sends its finished block to
//! every other rank, all at once. Two steps, `2(P-1)` messages per rank, `2(P-1)/P S` on
//! the wire, like the ring, but with one latency per phase where the ring has P-1.
//!
//! "All at once" meets the machine's ports: a rank has k NICs, so its P-1 messages of a
//! phase go out k at a time, in the order issued (the engine's ports serialise them; the
//! program does not). Rank r sends to `r+1, r+2, ...` (mod P), so in the i-th round of
//! k messages every rank sends to ranks `r+i..` and receives from `r-i..`: no two
//! messages ever want the same port, and the phases cost `ceil((P-1)/k)` message times.
//!
//! The two phases are [`reduce_scatter_step`] and [`allgather_step`], which the
//! `reduce_scatter` and `allgather` collectives reuse; [`exchange`] is the pattern they
//! share with `naive` (every rank sends every other rank something, all at once).

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::cost_model;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "direct",
    summary: "reduce-scatter then allgather, each rank sending all its P-1 blocks at once (k NICs: k at a time)",
    source: "the all-to-all reduce-scatter + allgather (Bruck et al. 1997; MPICH's pairwise exchange, unstaggered)",
    requires: "any P >= 1, any n (n < P leaves empty blocks)",
    closed_form: "m = ceil((P-1)/k), c = S/P, T = alpha + c/B, R = c C: \
                  max(T + (P-1) R, m T + (P-1-(m-1)k) R) + m T where P divides n; \
                  elsewhere the step recurrence (blocks differ by an element)",
    params: &[],
    build: |_| Ok(Box::new(Direct)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Direct;

/// Rank `rank`'s part in one all-at-once exchange among `np` ranks, as one step:
/// it sends `give(peer)` to every other rank, in the order `rank+1, rank+2, ...`, and
/// receives `take(peer)` from every other rank, reducing or copying it.
pub(crate) fn exchange(
    rank: usize,
    np: usize,
    give: impl Fn(usize) -> Region,
    take: impl Fn(usize) -> Region,
    action: Action,
    out: &mut StepPlan,
) {
    let reduce = action == Action::Reduce;
    for i in 1..np {
        let to = (rank + i) % np;
        out.sends.push(Send { to, kind: 0, src: give(to), reduce });
    }
    for i in 1..np {
        let from = (rank + np - i) % np;
        out.recvs.push(Recv { from, kind: 0, dst: take(from), action });
    }
}

/// The direct reduce-scatter: every rank sends block j to rank j and adds the P-1 copies
/// of its own block.
pub(crate) fn reduce_scatter_step(rank: usize, np: usize, n: usize, out: &mut StepPlan) {
    let mine = block(n, np, rank);
    exchange(rank, np, |to| block(n, np, to), |_| mine, Action::Reduce, out);
}

/// The direct allgather: every rank sends its block to every other rank and copies in
/// theirs.
pub(crate) fn allgather_step(rank: usize, np: usize, n: usize, out: &mut StepPlan) {
    let mine = block(n, np, rank);
    exchange(rank, np, |_| mine, |from| block(n, np, from), Action::Copy, out);
}

/// The direct algorithm's schedule, one step per phase; the `reduce_scatter` and
/// `allgather` collectives run one phase alone.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DirectPlan {
    /// P.
    pub np: usize,
    /// n.
    pub n: usize,
    /// Run the reduce-scatter (rank r ends with the sum of block r).
    pub reduce_scatter: bool,
    /// Run the allgather (rank r starts with block r, ends with every block).
    pub allgather: bool,
}

impl Stepped for DirectPlan {
    fn steps(&self) -> usize {
        if self.np <= 1 { 0 } else { usize::from(self.reduce_scatter) + usize::from(self.allgather) }
    }

    fn plan(&self, rank: usize, s: usize, out: &mut StepPlan) {
        if self.reduce_scatter && s == 0 {
            reduce_scatter_step(rank, self.np, self.n, out);
        } else {
            allgather_step(rank, self.np, self.n, out);
        }
    }
}

impl Algorithm for Direct {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = DirectPlan { np: p.ranks, n: p.elems, reduce_scatter: true, allgather: true };
        vec![stepped::program(plan, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::direct(p, m)?, EXACT))
    }

    /// Where blocks differ by an element and a port serves messages out of step order:
    /// [`cost_model::direct_bounds`].
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some(cost_model::direct_bounds(p, &cost_model::Hockney::of(m)?))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }
}
