//! Butterfly (recursive doubling): at step k every rank swaps its whole vector with
//! rank `r XOR 2^k` and adds what it gets. Seed 000 Butterfly; seed 002 Butterfly
//! (Open MPI's `ompi_coll_base_allreduce_intra_recursivedoubling`).
//!
//! For P not a power of two, the fold of MPICH and Open MPI (Thakur et al. 2005): with
//! `P'` the largest power of two below P and `rem = P - P'`, each even rank below
//! `2 rem` first hands its vector to the odd rank above it and sits out; the `P'`
//! remaining ranks run the butterfly; the odd ranks hand the result back at the end.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, clog2, pow2_floor};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "butterfly",
    summary: "recursive doubling, whole vector exchanged; non-powers of two by the fold",
    source: "seed 000 Butterfly-Allreduce; seed 002 Butterfly; Thakur, Rabenseifner & Gropp 2005",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (T + R) for P a power of two; otherwise none \
                  (early messages queue behind the fold); (log2 P' + 1)(T + R) + T bounds it",
    params: &[],
    build: |_| Ok(Box::new(Butterfly)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Butterfly;

/// Tags: the fold, the butterfly steps, the unfold.
const FOLD: u32 = 0;
const UNFOLD: u32 = 1;
const STEP: u32 = 2;

/// The fold shared by butterfly and halving-doubling: rank r's role when P is not a
/// power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    /// An even rank below `2 rem`: gives its vector to `r + 1`, gets the result back.
    Out,
    /// Takes part as rank `new` of the `P'` power-of-two ranks.
    In { new: usize },
}

pub(crate) fn fold_role(r: usize, np: usize) -> (Fold, usize, usize) {
    let p2 = pow2_floor(np.max(1));
    let rem = np - p2;
    let role = if r < 2 * rem {
        if r.is_multiple_of(2) { Fold::Out } else { Fold::In { new: r / 2 } }
    } else {
        Fold::In { new: r - rem }
    };
    (role, p2, rem)
}

/// The real rank of power-of-two rank `new`.
pub(crate) fn unfold_rank(new: usize, rem: usize) -> Rank {
    (if new < rem { 2 * new + 1 } else { new + rem }) as Rank
}

/// Rank r's part in the fold (before) and the unfold (after), around `core`.
pub(crate) fn with_fold<'a>(
    r: usize,
    np: usize,
    all: Region,
    core: impl Iterator<Item = Op> + Send + 'a,
) -> Program<'a> {
    let (role, _, rem) = fold_role(r, np);
    let r32 = r as Rank;
    match role {
        Fold::Out => {
            Box::new([Op::send(r32 + 1, FOLD, all), Op::recv_copy(r32 + 1, UNFOLD, all), Op::WaitAll].into_iter())
        }
        Fold::In { .. } if r < 2 * rem => {
            Box::new([Op::recv_reduce(r32 - 1, FOLD, all), Op::WaitAll].into_iter().chain(core).chain([Op::send(
                r32 - 1,
                UNFOLD,
                all,
            )]))
        }
        Fold::In { .. } => Box::new(core),
    }
}

impl Algorithm for Butterfly {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np) = (rank as usize, p.ranks);
        let all = Region::vec(0, p.elems);
        let (role, p2, rem) = fold_role(r, np);
        let new = match role {
            Fold::In { new } => new,
            Fold::Out => 0,
        };
        let steps = if role == Fold::Out { 0 } else { clog2(p2) };
        let core = (0..steps).flat_map(move |k| {
            let partner = unfold_rank(new ^ (1 << k), rem);
            let tag = STEP + k;
            [Op::send(partner, tag, all), Op::recv_reduce(partner, tag, all), Op::WaitAll]
        });
        vec![with_fold(r, np, all, core)]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::butterfly(p, &cost_model::Hockney::of(m)?)?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem) -> usize {
        let (_, p2, rem) = fold_role(0, p.ranks);
        clog2(p2) as usize + usize::from(rem > 0)
    }
}
