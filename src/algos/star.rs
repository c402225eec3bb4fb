//! Star (parameter server): every rank sends its vector to rank 0, which adds them up
//! and sends the sum back to everyone. The course report's Star; the survey's reduce+broadcast.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "star",
    summary: "reduce to a root, then broadcast from it (parameter server)",
    source: "course report (Star); survey (reduce+broadcast)",
    requires: "any P >= 1, any n",
    closed_form: "m = ceil((P-1)/k) message rounds on the root's k NICs, T = alpha + S/B: \
                  max(T + (P-1) S C, m T + (P-1-(m-1)k) S C) + m T",
    params: &[],
    build: |_| Ok(Box::new(Star)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Star;

const UP: u32 = 0;
const DOWN: u32 = 1;

impl Algorithm for Star {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, n) = (p.ranks as Rank, p.elems);
        let all = Region::vec(0, n);
        if rank == 0 {
            // The root adds the others' vectors in rank order, then sends the sum out.
            let reduce = (1..np).map(move |r| Op::recv_reduce(r, UP, all));
            let bcast = (1..np).map(move |r| Op::send(r, DOWN, all));
            vec![Box::new(reduce.chain([Op::WaitAll]).chain(bcast))]
        } else {
            vec![Box::new([Op::send(0, UP, all), Op::recv_copy(0, DOWN, all), Op::WaitAll].into_iter())]
        }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::star(p, &cost_model::Hockney::of(m)?), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
    }
}
