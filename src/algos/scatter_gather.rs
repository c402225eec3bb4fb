//! The reduce-scatter and allgather collectives by recursive halving / doubling and by
//! direct exchange: one phase of the `halving_doubling` and `direct` allreduces, run
//! alone (the phases themselves live in those files; this one only picks them).
//!
//! Recursive halving leaves group member j with block `bitrev(j)` (the allreduce does
//! not care which); a reduce-scatter must leave rank r with block r, so member j is rank
//! `bitrev(j)`: its partner at step k is then `r ^ 2^(L-1-k)`, the first step across
//! half the ranks, as MPICH's recursive halving goes.
//!
//! Open MPI's recursive halving (`ompi_coll_base_reduce_scatter_intra_basic_recursivehalving`)
//! is MPICH's, for any P: with P' the largest power of two not above P and `rem = P - P'`,
//! each even rank below `2 rem` first hands its whole vector to the odd rank above it and
//! sits out; the P' ranks left run the halving over P' "blocks" (an odd rank below `2 rem`
//! standing for its own block and its partner's, two adjacent real blocks), the first step
//! across half of them; at the end each odd rank below `2 rem` sends its partner the
//! partner's block. For P a power of two it is `halving_doubling`'s reduce-scatter.
//!
//! Open MPI's butterfly reduce-scatter (`ompi_coll_base_reduce_scatter_intra_butterfly`,
//! Traff 2005) folds as recursive halving does, then goes the other way: member t's
//! partner at step k is `t ^ 2^k` (distance doubling) and it ends with the group's block
//! `bitrev(t)`; one more step, the mirror permutation, swaps the blocks of members t and
//! `bitrev(t)` where they differ, and hands each folded rank its block.

use super::halving_doubling::{Half, phase, region_at};
use super::stepped::{Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, DirectPlan, EXACT, Machine, Problem, Topology, block, stepped};
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry: reduce-scatter by recursive halving.
pub const RS_HALVING_INFO: AlgoInfo = AlgoInfo {
    id: "halving_doubling",
    summary: "recursive halving: log2 P steps, each swapping half of what a rank still owns with a partner",
    source: "the first half of halving_doubling (Gloo allreduce_halving_doubling; Thakur et al. 2005)",
    requires: "P a power of two; any n",
    closed_form: "P dividing n: log2(P) alpha + (P-1)/P S/B + (P-1)/P S C; otherwise none",
    params: &[],
    build: |_| Ok(Box::new(Halving { reduce: true })),
};

/// Registry entry: allgather by recursive doubling.
pub const AG_DOUBLING_INFO: AlgoInfo = AlgoInfo {
    id: "halving_doubling",
    summary: "recursive doubling: log2 P steps, each swapping everything a rank has with a partner",
    source: "the second half of halving_doubling (Gloo allreduce_halving_doubling; Thakur et al. 2005)",
    requires: "P a power of two; any n",
    closed_form: "P dividing n: log2(P) alpha + (P-1)/P S/B; otherwise none",
    params: &[],
    build: |_| Ok(Box::new(Halving { reduce: false })),
};

/// Registry entry: Open MPI's butterfly reduce-scatter.
pub const RS_BUTTERFLY_INFO: AlgoInfo = AlgoInfo {
    id: "butterfly",
    summary: "vector halving, distance doubling: log2 P steps with r ^ 2^k, then each rank swaps the block it \
              ended with for its own (mirror permutation)",
    source: "Open MPI ompi_coll_base_reduce_scatter_intra_butterfly (reduce_scatter algorithm 4); Traff 2005",
    requires: "any P >= 1, any n (P not a power of two: recursive halving's fold first, as in Open MPI)",
    closed_form: "P a power of two dividing n, c = S/P: log2(P) alpha + (P-1) c/B + (P-1) c C, + alpha + c/B for \
                  P > 2 (the mirror step); otherwise the step recurrence, none where a port serves messages out \
                  of step order",
    params: &[],
    build: |_| Ok(Box::new(Butterfly)),
};

/// Registry entry: Open MPI's recursive halving, any P.
pub const RS_RECURSIVE_HALVING_INFO: AlgoInfo = AlgoInfo {
    id: "recursive_halving",
    summary: "recursive halving for any P: the ranks beyond a power of two first hand their vector to a partner, \
              which hands their block back at the end",
    source: "Open MPI ompi_coll_base_reduce_scatter_intra_basic_recursivehalving (reduce_scatter algorithm 2); \
             MPICH; Thakur et al. 2005",
    requires: "any P >= 1, any n",
    closed_form: "P a power of two dividing n: log2(P) alpha + (P-1)/P S/B + (P-1)/P S C (halving_doubling's); \
                  otherwise the step recurrence of the fold, the halving and the hand-back, none where a port \
                  serves messages out of step order",
    params: &[],
    build: |_| Ok(Box::new(RecursiveHalving)),
};

/// Registry entry: reduce-scatter by direct exchange.
pub const RS_DIRECT_INFO: AlgoInfo = AlgoInfo {
    id: "direct",
    summary: "every rank sends each other rank its block at once (k NICs: k at a time) and adds the P-1 copies of its own",
    source: "the first half of direct (the all-to-all reduce-scatter)",
    requires: "any P >= 1, any n",
    closed_form: "m = ceil((P-1)/k), c = S/P: max(T(c) + (P-1) R(c), m T(c) + (P-1-(m-1)k) R(c)); the step \
                  recurrence where P does not divide n",
    params: &[],
    build: |_| Ok(Box::new(DirectPhase { reduce: true })),
};

/// Registry entry: allgather by direct exchange.
pub const AG_DIRECT_INFO: AlgoInfo = AlgoInfo {
    id: "direct",
    summary: "every rank sends its block to every other rank at once (k NICs: k at a time)",
    source: "the second half of direct (the all-to-all allgather)",
    requires: "any P >= 1, any n",
    closed_form: "ceil((P-1)/k) T(c), c = S/P; the step recurrence where P does not divide n",
    params: &[],
    build: |_| Ok(Box::new(DirectPhase { reduce: false })),
};

/// Recursive halving (reduce-scatter) or doubling (allgather); see the module docs.
#[derive(Debug)]
pub struct Halving {
    reduce: bool,
}

/// Member j of the halving group is rank `bitrev(j)`, and the other way round.
fn bitrev(i: usize, np: usize) -> usize {
    let bits = np.trailing_zeros();
    if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }
}

impl Algorithm for Halving {
    fn id(&self) -> &'static str {
        RS_HALVING_INFO.id
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        if !p.ranks.is_power_of_two() {
            return Err(format!("{} ranks: recursive halving and doubling need a power of two", p.ranks));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, n) = (p.ranks, p.elems);
        let j = bitrev(rank as usize, np);
        let peer = move |i: usize| bitrev(i, np) as Rank;
        if self.reduce {
            vec![Box::new(phase(Half::ReduceScatter, j, np, np, n, peer))]
        } else {
            vec![Box::new(phase(Half::Allgather, j, np, np, n, peer))]
        }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        halving_phase(p, &h, self.reduce).map(|t| (t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.reduce { p.ranks.trailing_zeros() as usize } else { 0 }
    }
}

/// Open MPI's recursive halving; see the module docs.
#[derive(Debug)]
pub struct RecursiveHalving;

/// The schedule of Open MPI's recursive halving, or of its butterfly: the fold, log2 P'
/// halving steps (the first across half the group, or, for the butterfly, with the
/// neighbour `t ^ 1`), then the hand-back of the folded ranks' blocks, or the butterfly's
/// mirror exchange.
#[derive(Clone, Copy, Debug)]
struct HalvingPlan {
    np: usize,
    n: usize,
    butterfly: bool,
}

impl HalvingPlan {
    /// (P', rem).
    fn group(&self) -> (usize, usize) {
        let p2 = super::pow2_floor(self.np.max(1));
        (p2, self.np - p2)
    }
    /// Rank r's number in the power-of-two group, if it stays in.
    fn member(&self, r: usize) -> Option<usize> {
        let (_, rem) = self.group();
        if r < 2 * rem { (r % 2 == 1).then_some(r / 2) } else { Some(r - rem) }
    }
    /// The rank of group member t.
    fn rank_of(&self, t: usize) -> usize {
        let (_, rem) = self.group();
        if t < rem { 2 * t + 1 } else { t + rem }
    }
    /// The elements of the group's blocks [a, b): member i < rem stands for real blocks
    /// 2i and 2i+1, the others for block i + rem.
    fn span(&self, a: usize, b: usize) -> Region {
        let (_, rem) = self.group();
        let real = |i: usize| if i < rem { 2 * i } else { i + rem };
        let (lo, hi) = (block(self.n, self.np, real(a)), block(self.n, self.np, real(b) - 1));
        Region::vec(lo.offset, hi.end() - lo.offset)
    }
}

impl Stepped for HalvingPlan {
    fn steps(&self) -> usize {
        let (p2, _) = self.group();
        if self.np <= 1 { 0 } else { p2.trailing_zeros() as usize + 2 }
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (p2, rem) = self.group();
        let bits = p2.trailing_zeros() as usize;
        let all = Region::vec(0, self.n);
        if s == 0 {
            // The fold: an even rank below 2 rem hands its vector up.
            if r < 2 * rem {
                if r.is_multiple_of(2) {
                    out.sends.push(Send { to: r + 1, kind: 0, src: all, reduce: true });
                } else {
                    out.recvs.push(Recv { from: r - 1, kind: 0, dst: all, action: Action::Reduce });
                }
            }
            return;
        }
        if s == bits + 1 {
            if self.butterfly {
                self.mirror(r, out);
                return;
            }
            // The hand-back of the folded ranks' blocks.
            if r < 2 * rem {
                if r % 2 == 1 {
                    out.sends.push(Send { to: r - 1, kind: 1, src: block(self.n, self.np, r - 1), reduce: false });
                } else {
                    out.recvs.push(Recv { from: r + 1, kind: 1, dst: block(self.n, self.np, r), action: Action::Copy });
                }
            }
            return;
        }
        let Some(t) = self.member(r) else { return };
        let ((keep, give), partner) = if self.butterfly {
            // Step s halves by bit k = s-1 of t, within the window the lower bits chose.
            let k = s as u32 - 1;
            let (lo, hi) = region_at(t, k, p2);
            let mid = (lo + hi) / 2;
            (if t >> k & 1 == 0 { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) }, t ^ (1 << k))
        } else {
            // Step s halves across mask m = P'/2^s: the window is t's 2m blocks.
            let m = p2 >> s;
            let lo = t & !(2 * m - 1);
            (
                if t & m == 0 { ((lo, lo + m), (lo + m, lo + 2 * m)) } else { ((lo + m, lo + 2 * m), (lo, lo + m)) },
                t ^ m,
            )
        };
        let peer = self.rank_of(partner);
        out.sends.push(Send { to: peer, kind: 0, src: self.span(give.0, give.1), reduce: true });
        out.recvs.push(Recv { from: peer, kind: 0, dst: self.span(keep.0, keep.1), action: Action::Reduce });
    }
}

impl HalvingPlan {
    /// The butterfly's last step: member t holds the group's block `bitrev(t)`; it sends
    /// the folded rank of that block its part (if it has one), swaps the rest with the
    /// member `bitrev(t)` for its own, and a folded rank takes its block.
    fn mirror(&self, r: usize, out: &mut StepPlan) {
        let (p2, rem) = self.group();
        let owner = |b: usize| self.rank_of(bitrev(b, p2));
        let Some(t) = self.member(r) else {
            // A folded (even) rank 2b gets its block from the member holding group block b.
            out.recvs.push(Recv { from: owner(r / 2), kind: 1, dst: block(self.n, self.np, r), action: Action::Copy });
            return;
        };
        let b = bitrev(t, p2);
        if b < rem {
            out.sends.push(Send { to: 2 * b, kind: 1, src: block(self.n, self.np, 2 * b), reduce: false });
        }
        if b != t {
            let mine = self.rank_of(b);
            out.sends.push(Send { to: mine, kind: 2, src: block(self.n, self.np, mine), reduce: false });
            out.recvs.push(Recv { from: mine, kind: 2, dst: block(self.n, self.np, r), action: Action::Copy });
        }
    }
}

impl Algorithm for RecursiveHalving {
    fn id(&self) -> &'static str {
        RS_RECURSIVE_HALVING_INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(
            HalvingPlan { np: p.ranks, n: p.elems, butterfly: false },
            rank as usize,
            topo.nics(rank as usize),
        )]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = HalvingPlan { np: p.ranks, n: p.elems, butterfly: false };
        let t = match cost_model::Hockney::of(m) {
            Some(h) if p.ranks.is_power_of_two() && p.elems.is_multiple_of(p.ranks) => halving_phase(p, &h, true)?,
            _ => stepped::time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)?,
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        let (p2, rem) = HalvingPlan { np: p.ranks, n: p.elems, butterfly: false }.group();
        p2.trailing_zeros() as usize + usize::from(rem > 0)
    }
}

/// Open MPI's butterfly reduce-scatter; see the module docs.
#[derive(Debug)]
pub struct Butterfly;

impl Algorithm for Butterfly {
    fn id(&self) -> &'static str {
        RS_BUTTERFLY_INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(
            HalvingPlan { np: p.ranks, n: p.elems, butterfly: true },
            rank as usize,
            topo.nics(rank as usize),
        )]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = HalvingPlan { np: p.ranks, n: p.elems, butterfly: true };
        let t = match cost_model::Hockney::of(m) {
            Some(h) if p.ranks > 0 && p.elems.is_multiple_of(p.ranks) => butterfly_reduce_scatter(p, &h)?,
            _ => stepped::time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)?,
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        let (p2, rem) = HalvingPlan { np: p.ranks, n: p.elems, butterfly: true }.group();
        p2.trailing_zeros() as usize + usize::from(rem > 0)
    }
}

/// One phase of `direct`; see the module docs.
#[derive(Debug)]
pub struct DirectPhase {
    reduce: bool,
}

impl DirectPhase {
    fn plan(&self, p: &Problem) -> DirectPlan {
        DirectPlan { np: p.ranks, n: p.elems, reduce_scatter: self.reduce, allgather: !self.reduce }
    }
}

impl Algorithm for DirectPhase {
    fn id(&self) -> &'static str {
        RS_DIRECT_INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(self.plan(&p), rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let even = p.elems.is_multiple_of(p.ranks.max(1));
        if let Some(h) = Hockney::of(m)
            && even
        {
            return Some((direct_phase(p, &h, self.reduce), EXACT));
        }
        // Blocks of two lengths: the step recurrence gives up on a port served out of
        // step order, and the sweep that follows takes at most `SWEEP_LIMIT` messages,
        // P(P-1) here (from P = 633 on: at 1,024 ranks the recurrence spent 5 to 11 s
        // before giving up). Past it, the bounds at once; decided on P alone, so the
        // outcome is the same on every machine.
        if !even && super::direct::phases_past_sweep(p.ranks, 1) {
            return None;
        }
        let t = super::stepped_time(&self.plan(p), m.topo, m.cost_per_byte, p.elem_bytes)?;
        Some((t, EXACT))
    }

    /// Where blocks differ by an element and a port serves messages out of step order:
    /// [`direct_phase_bounds`] on a uniform machine (the bounds read off the programs
    /// elsewhere).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some(direct_phase_bounds(p, &Hockney::of(m)?, self.reduce))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.reduce { p.ranks.saturating_sub(1) } else { 0 }
    }
}

/// Bounds on one phase of `direct` alone where P does not divide n (block `j` of
/// `ceil(n/P)` or `floor(n/P)` elements takes `t_j = T(b_j)` on a link, `r_j = R(b_j)`
/// to add; k NICs, `m = ceil((P-1)/k)`), as
/// [`direct_bounds`](crate::algos::forms::direct_bounds) gives them for the allreduce's
/// two phases together. Every message is issued at 0.
///
/// - The reduce-scatter: rank a sends block b to every b (its out side holds
///   `W_out(a) = sum t - t_a`), rank b takes in P-1 copies of its block
///   (`W_in(b) = (P-1) t_b`). Lower: a rank with a largest block takes its P-1 copies on
///   its k ports and adds each, `gather_reduce(P-1, k, t_b, r_b)`, and no side ends
///   before its total over k. Upper: while a message waits, all k ports of its sender's
///   out side or of its receiver's in side are busy (ports go to waiting messages
///   greedily), so message a to b ends by `(W_out(a) + W_in(b) - 2 t_b) / k + t_b`;
///   rank b's additions end at most their total, `(P-1) r_b`, after its last arrival.
/// - The allgather: rank a sends its block to every other (`W_out(a) = (P-1) t_a`), rank
///   b takes in every other block (`W_in(b) = sum t - t_b`). Lower: `m t_a` on a's out
///   side, `W_in(b) / k` on b's in side. Upper: message a to b ends by
///   `(W_out(a) + W_in(b) - 2 t_a) / k + t_a`.
///
/// O(P): the maximum over the other side is taken at its smallest block.
pub fn direct_phase_bounds(p: &Problem, h: &Hockney, reduce: bool) -> (f64, f64) {
    let np = p.ranks;
    if np <= 1 {
        return (0.0, 0.0);
    }
    let k = f64::from(h.nics.max(1));
    let t: Vec<f64> = (0..np).map(|j| h.t(p.b(block(p.elems, np, j).len))).collect();
    let all: f64 = t.iter().sum();
    let others = (np - 1) as f64;
    // The two smallest blocks' times, so that the smallest among all but one rank's is
    // read without a pass over the others.
    let (mut lo1, mut lo2, mut at1) = (f64::INFINITY, f64::INFINITY, usize::MAX);
    for (j, &x) in t.iter().enumerate() {
        if x < lo1 {
            (lo2, lo1, at1) = (lo1, x, j);
        } else if x < lo2 {
            lo2 = x;
        }
    }
    let least_but = |j: usize| if j == at1 { lo2 } else { lo1 };
    let rounds = (np - 1).div_ceil(h.nics.max(1) as usize) as f64;
    let (mut lower, mut upper) = (0.0f64, 0.0f64);
    for (j, &tj) in t.iter().enumerate() {
        let side = (all - tj) / k;
        if reduce {
            let r = h.r(p.b(block(p.elems, np, j).len));
            lower = lower.max(cost_model::gather_reduce(np - 1, h.nics, tj, r)).max(side);
            // Receiver j: its worst sender's out side is the one missing the smallest block.
            let w_out = all - least_but(j);
            let last = (w_out + others * tj - 2.0 * tj) / k + tj;
            upper = upper.max(last + others * r);
        } else {
            lower = lower.max(rounds * tj).max(side);
            // Sender j: its worst receiver's in side is the one missing the smallest block.
            let w_in = all - least_but(j);
            upper = upper.max((others * tj + w_in - 2.0 * tj) / k + tj);
        }
    }
    (lower, upper)
}

/// One phase of [`direct_formula`](crate::algos::forms::direct_formula) alone, P dividing
/// n on a uniform machine, `c = S/P`, `m = ceil((P-1)/k)`: the reduce-scatter, each rank
/// taking in P-1 blocks on its k ports and adding them as they land,
/// [`gather_reduce`](cost_model::gather_reduce)`(P-1, k, T(c), R(c))`; the allgather,
/// each rank's block sent P-1 times k at a time, `m T(c)`. Every message of a phase is
/// issued at 0 and takes `T(c)`, so no port ever serves one out of step. (It was the step
/// recurrence, which at 1,024 ranks spent seconds before giving up at its budget.)
pub fn direct_phase(p: &Problem, h: &Hockney, reduce: bool) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let others = p.ranks - 1;
    let c = p.b(p.elems / p.ranks);
    if reduce {
        cost_model::gather_reduce(others, h.nics, h.t(c), h.r(c))
    } else {
        others.div_ceil(h.nics.max(1) as usize) as f64 * h.t(c)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Recursive halving (a reduce-scatter, `reduce`) or doubling (an allgather) alone, for
/// P a power of two that divides n (`None` otherwise, as for [`halving_doubling`](crate::algos::forms::halving_doubling)): step
/// k moves `S/2^(k+1)` each way, so `log2 P alpha + (P-1)/P S/B`, plus `(P-1)/P S C` for
/// the reduce-scatter (Thakur et al. 2005).
pub fn halving_phase(p: &Problem, h: &Hockney, reduce: bool) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    if !p.ranks.is_power_of_two() || !p.elems.is_multiple_of(p.ranks) {
        return None;
    }
    let steps = p.ranks.trailing_zeros();
    Some(
        (0..steps)
            .map(|k| {
                let l = p.b((p.ranks >> (k + 1)) * (p.elems / p.ranks));
                h.t(l) + if reduce { h.r(l) } else { 0.0 }
            })
            .sum(),
    )
}

/// Open MPI's butterfly reduce-scatter, P a power of two dividing n, `c = S/P`: the
/// halving steps of [`halving_phase`] (step k moves and adds `S/2^(k+1)`, every rank
/// alike), then for P > 2 the mirror step, in which a rank sends one block and receives
/// one from the same peer (ranks whose bit reversal is themselves sit it out):
/// `log2(P) alpha + (P-1) c/B + (P-1) c C + [P > 2] (alpha + c/B)`.
pub fn butterfly_reduce_scatter(p: &Problem, h: &Hockney) -> Option<f64> {
    let halving = halving_phase(p, h, true)?;
    let mirror = if p.ranks > 2 { h.t(p.b(p.elems / p.ranks)) } else { 0.0 };
    Some(halving + mirror)
}
