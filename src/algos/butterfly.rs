//! Butterfly (recursive doubling): at step k every rank swaps its whole vector with
//! rank `r XOR 2^k` and adds what it gets. The course report's Butterfly; the survey's Butterfly
//! (Open MPI's `ompi_coll_base_allreduce_intra_recursivedoubling`).
//!
//! For P not a power of two, the fold of MPICH and Open MPI (Thakur et al. 2005): with
//! `P'` the largest power of two below P and `rem = P - P'`, each even rank below
//! `2 rem` first hands its vector to the odd rank above it and sits out; the `P'`
//! remaining ranks run the butterfly; the odd ranks hand the result back at the end.
//!
//! `nonpow2: seed000` is the course report's own scheme instead: at step k ranks pair with
//! `r XOR 2^k` where that rank exists; a rank whose partner is missing waits for the
//! leftmost rank of its group of `2^(k+1)` to send it the group's sum once that rank
//! has finished its exchange (the course report, Algorithm 2, lines 11-22).

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, clog2, pow2_floor};
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::cost_model::loggp::{LogGP, exchanges};
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "butterfly",
    summary: "recursive doubling, whole vector exchanged; non-powers of two by the fold",
    source: "course report (Butterfly); survey (Butterfly); Thakur, Rabenseifner & Gropp 2005",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (T + R) for P a power of two; otherwise the step \
                  recurrence of the fold, the core's swaps and the unfold, taken together where early messages \
                  queue behind the fold (cost_model::sweep)",
    params: &["nonpow2=fold: P not a power of two by the fold (MPICH) or seed000 (the course report's catch-up sends)"],
    build: |params| Ok(Box::new(Butterfly { seed000: params.choice("nonpow2", &["fold", "seed000"])? == "seed000" })),
};

/// See the module docs.
#[derive(Debug)]
pub struct Butterfly {
    /// The course report's scheme for P not a power of two instead of the fold.
    pub seed000: bool,
}

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

/// The course report's butterfly for any P: exchange where the partner exists, and the group's
/// leftmost rank catches up the ranks whose partner is missing.
fn seed000(r: usize, np: usize, all: Region) -> Program<'static> {
    Box::new((0..clog2(np)).flat_map(move |k| {
        let h = 1usize << k;
        let base = r - r % (2 * h);
        let partner = r ^ h;
        let (tag, catch_up) = (STEP + 2 * k, STEP + 2 * k + 1);
        let paired = partner < np;
        let exchange = paired
            .then(|| [Op::send(partner as Rank, tag, all), Op::recv_reduce(partner as Rank, tag, all), Op::WaitAll]);
        // The group's upper half exists only in part: its leftmost rank hands the sum to
        // the lower-half ranks whose partners are missing, nearest first, as the course
        // report does.
        let lagging = if paired && r == base && base + 2 * h > np { np.max(base + h) - h..base + h } else { 0..0 };
        let catch_ups = lagging.rev().map(move |u| Op::send(u as Rank, catch_up, all));
        let wait_for_base =
            (!paired && base + h < np).then(|| [Op::recv_copy(base as Rank, catch_up, all), Op::WaitAll]);
        exchange.into_iter().flatten().chain(catch_ups).chain(wait_for_base.into_iter().flatten())
    }))
}

impl Algorithm for Butterfly {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np) = (rank as usize, p.ranks);
        let all = Region::vec(0, p.elems);
        if self.seed000 && !np.is_power_of_two() {
            return vec![seed000(r, np, all)];
        }
        let (role, p2, rem) = fold_role(r, np);
        let new = match role {
            Fold::In { new } => new,
            Fold::Out => 0,
        };
        let steps = if role == Fold::Out { 0 } else { clog2(p2) };
        let core = per_step(0..steps, move |k| {
            let partner = unfold_rank(new ^ (1 << k), rem);
            let tag = STEP + k;
            [Op::send(partner, tag, all), Op::recv_reduce(partner, tag, all), Op::WaitAll]
        });
        vec![with_fold(r, np, all, core)]
    }

    fn label(&self) -> String {
        if self.seed000 { "butterfly(nonpow2=seed000)".into() } else { INFO.id.into() }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        if let Some(t) = butterfly(p, &h) {
            return Some((t, EXACT));
        }
        if self.seed000 {
            return None;
        }
        let plan = FoldPlan { np: p.ranks, n: p.elems, halving: false };
        Some((super::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)?, EXACT))
    }

    /// The fold (P not a power of two): [`fold_bounds`].
    fn closed_form_loggp(&self, p: &Problem, m: &Machine, l: &LogGP) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        Some((butterfly_loggp(p, l, h.c, h.nics)?, EXACT))
    }

    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        (!self.seed000 && !p.ranks.is_power_of_two()).then(|| fold_bounds(p, &h))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.seed000 {
            return clog2(p.ranks) as usize;
        }
        let (_, p2, rem) = fold_role(0, p.ranks);
        clog2(p2) as usize + usize::from(rem > 0)
    }
}

/// The fold's schedule (butterfly's, or halving-doubling's with `halving`) as steps,
/// for its closed form: the step recurrence of [`crate::cost_model::lockstep`]. Step 0
/// is the fold (the even ranks below `2 rem` hand their vector up), then the core's
/// steps (butterfly: log2 P' swaps of the whole vector, each added; halving-doubling:
/// log2 P' halving steps, each added, and log2 P' doubling steps, copied, the regions of
/// [`super::halving_doubling::halves`]), then the unfold. It is the program of
/// [`with_fold`] step by step: a rank sends a step's messages once it has added (or
/// copied) what the step before brought, and a rank the fold leaves out, or whose
/// partner is missing in a step, has nothing to wait for there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FoldPlan {
    pub np: usize,
    pub n: usize,
    pub halving: bool,
}

impl FoldPlan {
    fn core(&self) -> usize {
        let bits = pow2_floor(self.np.max(1)).trailing_zeros() as usize;
        if self.halving { 2 * bits } else { bits }
    }
}

impl super::stepped::Stepped for FoldPlan {
    fn steps(&self) -> usize {
        if self.np <= 1 { 0 } else { self.core() + 2 }
    }

    fn plan(&self, rank: usize, s: usize, out: &mut super::stepped::StepPlan) {
        use super::stepped::Send;
        let (role, p2, rem) = fold_role(rank, self.np);
        let all = Region::vec(0, self.n);
        let core = self.core();
        match role {
            Fold::Out if s == 0 => out.sends.push(Send { to: rank + 1, kind: 0, src: all, reduce: true }),
            Fold::Out => {}
            Fold::In { .. } if s == 0 => {}
            Fold::In { .. } if s == core + 1 => {
                if rank < 2 * rem {
                    out.sends.push(Send { to: rank - 1, kind: 0, src: all, reduce: false });
                }
            }
            Fold::In { new } => {
                let i = s - 1;
                let bits = p2.trailing_zeros() as usize;
                let (k, reduce) =
                    if !self.halving || i < bits { (i % bits.max(1), true) } else { (2 * bits - 1 - i, false) };
                let (partner, src) = if self.halving {
                    let (partner, keep, give) = super::halving_doubling::halves(new, k as u32, p2, p2, self.n);
                    (partner, if reduce { give } else { keep })
                } else {
                    (new ^ (1 << k), all)
                };
                out.sends.push(Send { to: unfold_rank(partner, rem) as usize, kind: 0, src, reduce });
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Butterfly for P a power of two: `log2 P (T(S) + R(S))`, the course report's and the survey's
/// `log2 N (alpha + S/B + S C)`, exact here: the two directions of an exchange use
/// different ports and every step waits for the previous reduction.
///
/// For other P there is no closed form (`None`): the ranks the fold leaves alone start
/// the butterfly at once, their messages reach folded ranks early and queue for
/// ports behind the fold, and which waits fall on the critical path depends on
/// alpha, B, C and the NICs. `(log2 P' + 1)(T + R) + T`, the lockstep count of the course
/// report and the survey, is
/// an upper bound (tested), not the time.
pub fn butterfly(p: &Problem, h: &Hockney) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    let p2 = pow2_floor(p.ranks);
    (p2 == p.ranks).then(|| clog2(p2) as f64 * (h.t(p.bytes()) + h.r(p.bytes())))
}

/// The fold's lockstep count for butterfly, `(log2 P' + 1)(T + R) + T`: an upper
/// bound on its time for P not a power of two.
pub fn butterfly_fold_bound(p: &Problem, h: &Hockney) -> f64 {
    let steps = clog2(pow2_floor(p.ranks.max(1))) as f64;
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    (steps + 1.0) * (t + r) + t
}

/// Bounds on butterfly with the fold, P not a power of two (P' the largest power of two
/// below it, `rem = P - P'`, `T = T(S)`, `R = R(S)`):
///
/// - lower: the recurrence of the program without any port waits: a folded rank starts
///   the core at `T + R`, the others at 0; at step k a rank ends at
///   `max(its previous end, its partner's previous end + T) + R`, and a folded rank
///   hands the result back, `T`. A port wait only delays a message, and the one compute
///   unit adds in the order things arrive, so no run is faster;
/// - upper: the lockstep count of the course report and the survey,
///   `(log2 P' + 1)(T + R) + T`: every step waiting for the slowest rank.
pub fn fold_bounds(p: &Problem, h: &Hockney) -> (f64, f64) {
    let np = p.ranks.max(1);
    let p2 = pow2_floor(np);
    let rem = np - p2;
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let mut f: Vec<f64> = (0..p2).map(|x| if x < rem { t + r } else { 0.0 }).collect();
    let mut prev = f.clone();
    for k in 0..p2.trailing_zeros() {
        prev.copy_from_slice(&f);
        for (x, fx) in f.iter_mut().enumerate() {
            *fx = fx.max(prev[x ^ (1 << k)] + t) + r;
        }
    }
    let lower = f.iter().enumerate().map(|(x, &e)| if x < rem { e + t } else { e }).fold(0.0, f64::max);
    (lower, butterfly_fold_bound(p, h))
}

/// Butterfly under LogGP (docs/loggp.md), P a power of two: [`exchanges`] over its
/// `log2 P` steps, each the whole vector (`S` bytes) sent to the partner, received from
/// it and added. With `W = L + (S-1) G`, one port and no port waits
/// (`g + (S-1) G <= 2o + W + S C`) this is `log2 P (2o + W + S C)`. `None` for other P
/// (the fold's ranks are not alike).
pub fn butterfly_loggp(p: &Problem, l: &LogGP, c: f64, nics: u32) -> Option<f64> {
    if !p.ranks.max(1).is_power_of_two() {
        return None;
    }
    let s = p.bytes() as u64;
    Some(exchanges(l, c, nics, std::iter::repeat_n((s, s), clog2(p.ranks.max(1)) as usize)))
}
