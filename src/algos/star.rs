//! The linear (flat-tree) algorithms: the root talks to every other rank directly.
//! - [`gather_phase`]: every rank sends its vector to rank 0, which adds them up (or,
//!   for a barrier, only hears from everyone);
//! - [`one_to_all_phase`]: rank 0 sends its vector to every other rank (Gloo's
//!   `broadcast_one_to_all`);
//! - star allreduce (parameter server; the course report's Star, the survey's
//!   reduce+broadcast): the first, then the second;
//! - all-to-one reduce (Open MPI's basic linear reduce): the first alone.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::collective::Collective;
use crate::cost_model;
use crate::cost_model::{Hockney, gather_reduce};
use crate::sim::op::{Action, Op, Program, Rank, Region};

/// Registry entry: allreduce.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "star",
    summary: "reduce to a root, then broadcast from it (parameter server)",
    source: "course report (Star); survey (reduce+broadcast)",
    requires: "any P >= 1, any n",
    closed_form: "m = ceil((P-1)/k) message rounds on the root's k NICs, T = alpha + S/B: \
                  max(T + (P-1) S C, m T + (P-1-(m-1)k) S C) + m T",
    params: &[],
    build: |_| Ok(Box::new(Star { collective: Collective::Allreduce })),
};

/// Registry entry: broadcast.
pub const ONE_TO_ALL_INFO: AlgoInfo = AlgoInfo {
    id: "one_to_all",
    summary: "rank 0 sends its vector to every other rank, k at a time",
    source: "Gloo broadcast_one_to_all (Gloo's algorithm index); the second half of star",
    requires: "any P >= 1, any n",
    closed_form: "ceil((P-1)/k) (alpha + S/B)",
    params: &[],
    build: |_| Ok(Box::new(Star { collective: Collective::Broadcast })),
};

/// Registry entry: reduce.
pub const ALL_TO_ONE_INFO: AlgoInfo = AlgoInfo {
    id: "all_to_one",
    summary: "every rank sends its vector to rank 0, which adds them as they come in, k at a time",
    source: "Open MPI ompi_coll_base_reduce_intra_basic_linear (reduce algorithm 1); the first half of star",
    requires: "any P >= 1, any n",
    closed_form: "m = ceil((P-1)/k) message rounds on the root's k NICs, T = alpha + S/B, R = S C: \
                  max(T + (P-1) R, m T + (P-1-(m-1)k) R)",
    params: &[],
    build: |_| Ok(Box::new(Star { collective: Collective::Reduce })),
};

/// Star allreduce, one-to-all broadcast or all-to-one reduce; see the module docs.
#[derive(Debug)]
pub struct Star {
    collective: Collective,
}

const UP: u32 = 0;
const DOWN: u32 = 1;

/// Rank `rank`'s part of a linear gather of `all` at rank 0, which `action`s what
/// arrives (adds it in, in rank order, or copies it) and waits for all of it.
pub(crate) fn gather_phase(rank: Rank, np: usize, all: Region, action: Action, tag: u32) -> Program<'static> {
    if rank == 0 {
        let take = (1..np as Rank).map(move |r| Op::Recv { from: r, tag, dst: all, action });
        Box::new(take.chain([Op::WaitAll]))
    } else {
        Box::new(std::iter::once(Op::send(0, tag, all)))
    }
}

/// Rank `rank`'s part of rank 0 sending `all` to every other rank, in rank order.
pub(crate) fn one_to_all_phase(rank: Rank, np: usize, all: Region, tag: u32) -> Program<'static> {
    if rank == 0 {
        Box::new((1..np as Rank).map(move |r| Op::send(r, tag, all)))
    } else {
        Box::new([Op::recv_copy(0, tag, all), Op::WaitAll].into_iter())
    }
}

impl Algorithm for Star {
    fn id(&self) -> &'static str {
        match self.collective {
            Collective::Broadcast => ONE_TO_ALL_INFO.id,
            Collective::Reduce => ALL_TO_ONE_INFO.id,
            _ => INFO.id,
        }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let all = Region::vec(0, p.elems);
        let bcast = one_to_all_phase(rank, p.ranks, all, DOWN);
        match self.collective {
            Collective::Broadcast => vec![bcast],
            Collective::Reduce => vec![gather_phase(rank, p.ranks, all, Action::Reduce, UP)],
            _ => vec![Box::new(gather_phase(rank, p.ranks, all, Action::Reduce, UP).chain(bcast))],
        }
    }

    /// Every rank but the root sends to it (reduce), the root to every other (broadcast).
    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let once = p.ranks.saturating_sub(1) as u64;
        Some(if self.collective == Collective::Allreduce { once.saturating_mul(2) } else { once })
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let t = match self.collective {
            Collective::Broadcast => one_to_all(p, &h),
            Collective::Reduce => linear_reduce(p, &h),
            _ => star(p, &h),
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::Broadcast { 0 } else { p.ranks - 1 }
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Star: the root's k incoming NICs take the P-1 vectors in `m = ceil((P-1)/k)`
/// rounds of `T = T(S)`; its one compute unit adds them one by one (`R = R(S)` each),
/// so the reduce ends at `max_j (arrival_j + (P - j) R)`, which is largest for the
/// first or the last round; the broadcast takes m more rounds.
///
/// The survey writes `2 T + P S C`: it lets the root receive all P-1 vectors at once
/// (`abc与d之间的通信是同时进行的`), which needs P-1 NICs, and counts P reductions
/// where P-1 happen. The course report writes `2 (P-1) T + (P-1) R`, which serialises the
/// reductions behind the transfers instead of overlapping them.
pub fn star(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let rounds = (p.ranks - 1).div_ceil(h.nics as usize);
    let t = h.t(p.bytes());
    gather_reduce(p.ranks - 1, h.nics, t, h.r(p.bytes())) + rounds as f64 * t
}

/// All-to-one reduce (Open MPI's basic linear reduce): star's first half,
/// `max(T + (P-1) R, m T + (P-1-(m-1)k) R)` with `T = T(S)`, `R = R(S)`,
/// `m = ceil((P-1)/k)`: the root's k incoming NICs take the P-1 vectors in m rounds and
/// its one compute unit adds them in arrival order.
pub fn linear_reduce(p: &Problem, h: &Hockney) -> f64 {
    gather_reduce(p.ranks.saturating_sub(1), h.nics, h.t(p.bytes()), h.r(p.bytes()))
}

/// One-to-all broadcast: the root's k outgoing NICs send the P-1 copies of S in
/// `ceil((P-1)/k)` rounds of `T(S)`.
pub fn one_to_all(p: &Problem, h: &Hockney) -> f64 {
    (p.ranks - 1).div_ceil(h.nics as usize) as f64 * h.t(p.bytes())
}
