//! Barriers: empty messages only, so a barrier's time is its latency terms. No rank
//! leaves before it has heard, directly or through others, from every other rank.
//! - `all_to_all`, `all_to_one`: Gloo's `barrier_all_to_all` and `barrier_all_to_one`
//!   (`all_to_one` is also Open MPI's basic linear barrier);
//! - `recursive_doubling`: Open MPI's `ompi_coll_base_barrier_intra_recursivedoubling`:
//!   log2 P' rounds of pairwise exchanges with `r ^ 2^i` among the first P' ranks (P' the
//!   largest power of two not above P); each of the other P - P' ranks first tells rank
//!   `r - P'` it has arrived and is told, after the rounds, that everyone has;
//! - `bruck`: Open MPI's `ompi_coll_base_barrier_intra_bruck`, the dissemination barrier
//!   (Hensgen, Finkel & Manber 1988): in round i every rank tells `r + 2^i` and hears from
//!   `r - 2^i`, ceil(log2 P) rounds for any P.

use super::star::{gather_phase, one_to_all_phase};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, clog2, pow2_floor};
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Action, Op, Program, Rank, Region, per_step};

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

/// Registry entry: recursive doubling.
pub const RECURSIVE_DOUBLING_INFO: AlgoInfo = AlgoInfo {
    id: "recursive_doubling",
    summary: "pairwise exchanges with r ^ 2^i among the first P' = 2^floor(log2 P) ranks; the others tell a \
              partner before and hear from it after",
    source: "Open MPI ompi_coll_base_barrier_intra_recursivedoubling (barrier algorithm 3)",
    requires: "any P >= 1",
    closed_form: "log2(P) alpha for P a power of two; otherwise none (a round-0 message and an extra rank's \
                  arrival meet at one port, and the engine's arbitration decides)",
    params: &[],
    build: |_| Ok(Box::new(Rounds { dissemination: false })),
};

/// Registry entry: Bruck's dissemination barrier.
pub const BRUCK_INFO: AlgoInfo = AlgoInfo {
    id: "bruck",
    summary: "dissemination: in round i every rank tells r + 2^i and hears from r - 2^i (mod P)",
    source: "Open MPI ompi_coll_base_barrier_intra_bruck (barrier algorithm 4); Hensgen, Finkel & Manber 1988",
    requires: "any P >= 1",
    closed_form: "ceil(log2 P) alpha",
    params: &[],
    build: |_| Ok(Box::new(Rounds { dissemination: true })),
};

/// See the module docs.
#[derive(Debug)]
pub struct Barrier {
    to_one: bool,
}

/// Recursive doubling or dissemination; see the module docs.
#[derive(Debug)]
pub struct Rounds {
    dissemination: bool,
}

/// Tags of the rounds; the extra ranks' messages before and after them.
const BEFORE: u32 = 64;
const AFTER: u32 = 65;

impl Algorithm for Rounds {
    fn id(&self) -> &'static str {
        if self.dissemination { BRUCK_INFO.id } else { RECURSIVE_DOUBLING_INFO.id }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np) = (rank as usize, p.ranks);
        let exchange = |to: usize, from: usize, tag: u32| {
            [Op::send(to as Rank, tag, NOTHING), Op::recv_copy(from as Rank, tag, NOTHING), Op::WaitAll]
        };
        if self.dissemination {
            let rounds = clog2(np);
            return vec![Box::new(per_step(0..rounds, move |i| {
                let d = 1 << i;
                exchange((r + d) % np, (r + np - d) % np, i)
            }))];
        }
        let p2 = pow2_floor(np.max(1));
        let extra = np - p2;
        if r >= p2 {
            // Arrived: tell the partner, then wait to hear that everyone has.
            let partner = (r - p2) as Rank;
            return vec![Box::new(
                [Op::send(partner, BEFORE, NOTHING), Op::recv_copy(partner, AFTER, NOTHING), Op::WaitAll].into_iter(),
            )];
        }
        let before = (r < extra).then(|| [Op::recv_copy((r + p2) as Rank, BEFORE, NOTHING), Op::WaitAll]);
        let rounds = per_step(0..p2.trailing_zeros(), move |i| {
            let partner = r ^ (1 << i);
            exchange(partner, partner, i)
        });
        let after = (r < extra).then(|| Op::send((r + p2) as Rank, AFTER, NOTHING));
        vec![Box::new(before.into_iter().flatten().chain(rounds).chain(after))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let t = if self.dissemination { bruck_barrier(p, &h) } else { recursive_doubling_barrier(p, &h)? };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        0
    }
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

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Recursive-doubling barrier (Open MPI's): `log2 P` rounds of one empty message each
/// way, `log2(P) alpha`, for P a power of two.
///
/// Otherwise none: the P - P' ranks beyond the largest power of two P' first tell their
/// partner `r - P'`, and a round-0 message from a rank that waits for nobody reaches such
/// a partner's port at the same instant as that message; which goes first is the
/// engine's port arbitration (lower sender first), and the lag then spreads unevenly
/// through the rounds. `(log2(P') + 2) alpha` is the time when no two messages ever
/// want one port.
pub fn recursive_doubling_barrier(p: &Problem, h: &Hockney) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    p.ranks.is_power_of_two().then(|| f64::from(p.ranks.trailing_zeros()) * h.t(0.0))
}

/// Dissemination (Bruck) barrier: `ceil(log2 P)` rounds, in each of which every rank
/// sends one empty message and receives one, on different peers: `ceil(log2 P) alpha`.
pub fn bruck_barrier(p: &Problem, h: &Hockney) -> f64 {
    f64::from(clog2(p.ranks)) * h.t(0.0)
}
