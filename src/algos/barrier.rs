//! Barriers (Gloo's `barrier_all_to_all` and `barrier_all_to_one`): empty messages
//! only, so a barrier's time is its latency terms. No rank leaves before it has heard,
//! directly or through rank 0, from every other rank.

use super::star::{gather_phase, one_to_all_phase};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model;
use crate::sim::op::{Action, Op, Program, Rank, Region};

/// Registry entry: all-to-all.
pub const ALL_TO_ALL_INFO: AlgoInfo = AlgoInfo {
    id: "all_to_all",
    summary: "every rank sends an empty message to every other and waits for all P-1",
    source: "Gloo barrier_all_to_all (Gloo's algorithm index)",
    requires: "any P >= 1",
    closed_form: "ceil((P-1)/k) alpha",
    params: &[],
    build: |_| Ok(Box::new(Barrier { to_one: false })),
};

/// Registry entry: all-to-one.
pub const ALL_TO_ONE_INFO: AlgoInfo = AlgoInfo {
    id: "all_to_one",
    summary: "every rank tells rank 0, which answers every rank once it has heard from all",
    source: "Gloo barrier_all_to_one (Gloo's algorithm index); star without data",
    requires: "any P >= 1",
    closed_form: "2 ceil((P-1)/k) alpha",
    params: &[],
    build: |_| Ok(Box::new(Barrier { to_one: true })),
};

/// See the module docs.
#[derive(Debug)]
pub struct Barrier {
    to_one: bool,
}

/// An empty message.
const NOTHING: Region = Region::vec(0, 0);

impl Algorithm for Barrier {
    fn id(&self) -> &'static str {
        if self.to_one { ALL_TO_ONE_INFO.id } else { ALL_TO_ALL_INFO.id }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let np = p.ranks as Rank;
        if self.to_one {
            let gather = gather_phase(rank, p.ranks, NOTHING, Action::Copy, 0);
            return vec![Box::new(gather.chain(one_to_all_phase(rank, p.ranks, NOTHING, 1)))];
        }
        // Rank r tells r+1, r+2, ... in turn (Gloo goes in rank order): in round j every
        // rank sends to the one j ahead, so no incoming port is wanted twice at once.
        let others = move |j: Rank| (rank + j) % np;
        let tell = (1..np).map(move |j| Op::send(others(j), 0, NOTHING));
        let hear = (1..np).map(move |j| Op::recv_copy((rank + np - j) % np, 0, NOTHING));
        vec![Box::new(tell.chain(hear).chain([Op::WaitAll]))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let rounds = (p.ranks - 1).div_ceil(h.nics as usize) as f64;
        let t = if self.to_one { 2.0 * rounds * h.t(0.0) } else { rounds * h.t(0.0) };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        0
    }
}
