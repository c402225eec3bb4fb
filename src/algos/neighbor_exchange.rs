//! Neighbour exchange allgather (Chen et al. 2005; Open MPI's
//! `ompi_coll_base_allgather_intra_neighborexchange`, allgather algorithm 5), for an even
//! number of ranks: P/2 steps instead of the ring's P-1, each rank talking to its two
//! ring neighbours in turn.
//!
//! Ranks pair up as (0, 1), (2, 3), ...: in step 0 each rank swaps its own block with its
//! partner, after which each pair holds the two blocks `2i, 2i+1`. From then on, in step
//! s a rank swaps with its left neighbour in odd steps and its right one in even steps
//! (an odd rank the other way round), passing on the pair of blocks it received in the
//! step before: two adjacent blocks, one message.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::algos::halving_doubling::blocks;
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Action, Program, Rank};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "neighbor_exchange",
    summary: "P/2 steps: swap the own block with the pair partner, then pass pairs of blocks to the left and \
              right neighbour in turn",
    source: "Open MPI ompi_coll_base_allgather_intra_neighborexchange (allgather algorithm 5); Chen et al. 2005",
    requires: "P even (Open MPI runs the ring for odd P); any n",
    closed_form: "P dividing n, c = S/P: (P/2) alpha + (P-1) c/B; elsewhere the step recurrence (blocks differ \
                  by an element)",
    params: &[],
    build: |_| Ok(Box::new(NeighborExchange)),
};

/// See the module docs.
#[derive(Debug)]
pub struct NeighborExchange;

/// The schedule of one problem.
#[derive(Clone, Copy, Debug)]
struct Plan {
    np: usize,
    n: usize,
}

impl Plan {
    /// Rank r's neighbour in step s >= 1 (`[right, left]` for an even rank, the other
    /// way round for an odd one: step 0's partner first).
    fn neighbor(&self, r: usize, s: usize) -> usize {
        let np = self.np;
        let first = if r.is_multiple_of(2) { (r + 1) % np } else { (r + np - 1) % np };
        let second = if r.is_multiple_of(2) { (r + np - 1) % np } else { (r + 1) % np };
        if s.is_multiple_of(2) { first } else { second }
    }

    /// The first of the two blocks rank r receives in step s >= 1, and of those it sends.
    fn pairs(&self, r: usize, s: usize) -> (usize, usize) {
        // Open MPI's recv_data_from: the pair (even first block) walks away from r by
        // two blocks per step in each direction; the one sent is the one received in the
        // step before (step 0's pair for step 1).
        let np = self.np;
        let (pair, dir) = if r.is_multiple_of(2) { (r, [2, np - 2]) } else { (r - 1, [np - 2, 2]) };
        let recv_from = |s: usize| -> usize {
            // After steps 1..=s, each parity's pointer moved once per step of its parity.
            let moves = [(s) / 2, s.div_ceil(2)];
            let parity = s % 2;
            (pair + moves[parity] * dir[parity]) % np
        };
        let sent = if s == 1 { pair } else { recv_from(s - 1) };
        (recv_from(s), sent)
    }
}

impl Stepped for Plan {
    fn steps(&self) -> usize {
        if self.np <= 1 { 0 } else { self.np / 2 }
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (np, n) = (self.np, self.n);
        let (to, give, take) = if s == 0 {
            let partner = self.neighbor(r, 0);
            (partner, blocks(n, np, r, r + 1), blocks(n, np, partner, partner + 1))
        } else {
            let (recv, sent) = self.pairs(r, s);
            (self.neighbor(r, s), blocks(n, np, sent, sent + 2), blocks(n, np, recv, recv + 2))
        };
        out.sends.push(Send { to, kind: 0, src: give, reduce: false });
        out.recvs.push(Recv { from: to, kind: 0, dst: take, action: Action::Copy });
    }
}

impl Algorithm for NeighborExchange {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        if p.ranks > 1 && p.ranks % 2 == 1 {
            return Err(format!("{} ranks: neighbour exchange needs an even number (Open MPI runs the ring)", p.ranks));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(Plan { np: p.ranks, n: p.elems }, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = Plan { np: p.ranks, n: p.elems };
        let t = match cost_model::Hockney::of(m) {
            Some(h) if p.ranks > 0 && p.elems.is_multiple_of(p.ranks) => neighbor_exchange(p, &h),
            _ => stepped::time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)?,
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        0
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Neighbour exchange allgather, P even dividing n, `c = S/P`: step 0 swaps one block
/// with the pair partner, each of the P/2 - 1 others two blocks with a neighbour, every
/// rank sending one message and receiving one from the same peer per step (no port is
/// wanted twice): `T(c) + (P/2 - 1) T(2c) = (P/2) alpha + (P-1) c/B`.
pub fn neighbor_exchange(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems / p.ranks);
    h.t(c) + (p.ranks / 2 - 1) as f64 * h.t(2.0 * c)
}
