//! Ring allreduce (Patarasuk & Yuan 2009; Baidu 2017): a reduce-scatter around the ring
//! in P-1 steps, then an allgather in P-1 steps. The course report, the survey, the
//! homework report and the ring tutorial all describe it (docs/sources.md).

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "ring",
    summary: "reduce-scatter then allgather around a ring, P chunks",
    source: "course report (Ring); survey (Ring AllReduce); homework report; ring tutorial; Patarasuk & Yuan 2009",
    requires: "any P >= 1, any n (chunks differ by at most one element; n < P leaves empty chunks)",
    closed_form: "2(P-1)(alpha + c/B) + (P-1) c C,  c = ceil(n/P) e",
    params: &[],
    build: |_| Ok(Box::new(Ring)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Ring;

impl Algorithm for Ring {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, r, n) = (p.ranks, rank as usize, p.elems);
        if np == 1 {
            return vec![Box::new(std::iter::empty())];
        }
        let right = ((r + 1) % np) as Rank;
        let left = ((r + np - 1) % np) as Rank;
        // Chunk indices are taken mod P; `+ 2P` keeps the arithmetic unsigned.
        let chunk = move |i: usize| block(n, np, i % np);
        // Reduce-scatter: at step k pass chunk r-k on, receive chunk r-k-1 and add it in.
        // After P-1 steps rank r holds the full sum of chunk r+1.
        let reduce_scatter = (0..np - 1).flat_map(move |k| {
            let tag = k as u32;
            [
                Op::send(right, tag, chunk(r + 2 * np - k)),
                Op::recv_reduce(left, tag, chunk(r + 2 * np - k - 1)),
                Op::WaitAll,
            ]
        });
        // Allgather: at step k pass the finished chunk r+1-k on, receive chunk r-k.
        let allgather = (0..np - 1).flat_map(move |k| {
            let tag = (np - 1 + k) as u32;
            [
                Op::send(right, tag, chunk(r + 2 * np + 1 - k)),
                Op::recv_copy(left, tag, chunk(r + 2 * np - k)),
                Op::WaitAll,
            ]
        });
        vec![Box::new(reduce_scatter.chain(allgather))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::ring(p, &cost_model::Hockney::of(m)?), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
    }
}
