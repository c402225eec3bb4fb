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

use super::stepped::{self, Exchange, Part, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::cost_model;
use crate::cost_model::{Hockney, gather_reduce};
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "direct",
    summary: "reduce-scatter then allgather, each rank sending all its P-1 blocks at once (k NICs: k at a time)",
    source: "the all-to-all reduce-scatter + allgather (Bruck et al. 1997; MPICH's pairwise exchange, unstaggered)",
    requires: "any P >= 1, any n (n < P leaves empty blocks)",
    closed_form: "m = ceil((P-1)/k), c = S/P, T = alpha + c/B, R = c C: \
                  max(T + (P-1) R, m T + (P-1-(m-1)k) R) + m T where P divides n; \
                  elsewhere the step recurrence (blocks differ by an element) on up to 447 ranks; \
                  bounds beyond (over 400,000 messages, past the sweep's limit)",
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

    fn exchange(&self, rank: usize, s: usize) -> Option<Exchange> {
        let (np, n) = (self.np, self.n);
        let mine = Part::Fixed(block(n, np, rank));
        let (give, take, action) = if self.reduce_scatter && s == 0 {
            (Part::PeersBlock(n), mine, Action::Reduce)
        } else {
            (mine, Part::PeersBlock(n), Action::Copy)
        };
        Some(Exchange { rank, np, give, take, action })
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
        Some((direct(p, m)?, EXACT))
    }

    /// Where blocks differ by an element and a port serves messages out of step order:
    /// [`direct_bounds`].
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some(direct_bounds(p, &cost_model::Hockney::of(m)?))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Direct (all-to-all reduce-scatter, then all-to-all allgather) on the machine: where the
/// machine is uniform and P divides n, [`direct_formula`]; elsewhere the step recurrence
/// ([`lockstep`](crate::cost_model::lockstep)) of its two steps, which follows blocks that differ by an element (their
/// messages then end at different instants and a rank's later message can find a port
/// taken; the recurrence gives `None` where that reorders them). `None` at once, without
/// the recurrence, for blocks of two lengths past [`uneven_too_large`].
pub fn direct(p: &Problem, m: &Machine) -> Option<f64> {
    let even = p.elems.is_multiple_of(p.ranks.max(1));
    if let Some(h) = Hockney::of(m)
        && even
    {
        return Some(direct_formula(p, &h));
    }
    if !even && uneven_too_large(p.ranks) {
        return None;
    }
    let plan = crate::algos::DirectPlan { np: p.ranks, n: p.elems, reduce_scatter: true, allgather: true };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// Whether direct with blocks of two lengths (P not dividing n) on `ranks` ranks is past
/// what its closed form is tried on: its run has more than
/// [`SWEEP_LIMIT`](cost_model::SWEEP_LIMIT) messages, `2P(P-1)`, from P = 448. The sweep
/// cannot take those points, so the step recurrence was their only way to an exact time,
/// and there blocks of two lengths reorder the ports: its instant-by-instant service
/// looks at a side's whole waiting list at each free, about P^3 looks, and gave up at its
/// budget or on a rank running ahead at every such point tried but a few (448 ranks,
/// 4 NICs, one short block), after seconds at 512 ranks and minutes at 1,024. Decided on
/// P alone, before any work, so the outcome is the same on every machine; these points
/// get [`direct_bounds`] (docs/model.md, 'The bounds').
pub fn uneven_too_large(ranks: usize) -> bool {
    phases_past_sweep(ranks, 2)
}

/// Whether `phases` all-to-all phases on `ranks` ranks, `P(P-1)` messages each, are more
/// than the sweep takes ([`SWEEP_LIMIT`](cost_model::SWEEP_LIMIT)): the one test behind
/// [`uneven_too_large`] (two phases) and `direct` as a reduce-scatter or an allgather
/// (one). Saturating, so a rank count no machine fits still reads as past it.
pub fn phases_past_sweep(ranks: usize, phases: usize) -> bool {
    ranks.saturating_mul(ranks.saturating_sub(1)).saturating_mul(phases) > cost_model::SWEEP_LIMIT
}

/// Direct with P dividing n, `c = S/P`: the reduce-scatter is `gather_reduce` of P-1
/// blocks, the allgather `m = ceil((P-1)/k)` rounds of `T(c)`:
/// `max(T(c) + (P-1) R(c), m T(c) + (P-1-(m-1)k) R(c)) + m T(c)`. With k = P-1 NICs that
/// is `2 T(S/P) + (P-1) R(S/P)`: two latencies, the ring's bandwidth and compute terms.
///
/// Its two phases are [`direct_phase`](crate::algos::forms::direct_phase)'s, which the
/// reduce-scatter and allgather collectives' `direct` give alone.
pub fn direct_formula(p: &Problem, h: &Hockney) -> f64 {
    super::scatter_gather::direct_phase(p, h, true) + super::scatter_gather::direct_phase(p, h, false)
}

/// Bounds on direct where P does not divide n (blocks `b_j` of `ceil(n/P)` or
/// `floor(n/P)` elements, k NICs, `m = ceil((P-1)/k)`):
///
/// - lower: a rank r with a largest block must take in P-1 messages of `T(b_r)` on its
///   k ports (the i-th arrives no sooner than `ceil(i/k) T(b_r)`) and add each, then send
///   its block P-1 times, k at a time: `gather_reduce(P-1, k, T(b_r), R(b_r)) + m T(b_r)`,
///   which is [`direct_formula`] at n rounded up to a multiple of P;
/// - upper: while a message waits, all k ports of its sender's out side or of its
///   receiver's in side are busy (the ports go to waiting messages greedily), so it waits
///   at most `(W_out(a) + W_in(b) - 2 T(m)) / k`, the other messages' time on those two
///   sides over the whole run; a rank's additions end at most their total after its last
///   arrival; a rank's allgather starts when its additions end.
pub fn direct_bounds(p: &Problem, h: &Hockney) -> (f64, f64) {
    let np = p.ranks;
    if np <= 1 {
        return (0.0, 0.0);
    }
    let k = h.nics.max(1) as f64;
    let t: Vec<f64> = (0..np).map(|j| h.t(p.b(block(p.elems, np, j).len))).collect();
    let r: Vec<f64> = (0..np).map(|j| h.r(p.b(block(p.elems, np, j).len))).collect();
    let rounds = (np - 1).div_ceil(h.nics.max(1) as usize) as f64;
    let lower = (0..np).map(|j| gather_reduce(np - 1, h.nics, t[j], r[j]) + rounds * t[j]).fold(0.0, f64::max);
    let all: f64 = t.iter().sum();
    let others = (np - 1) as f64;
    // Rank a's out side: its reduce-scatter blocks for every other rank, then its own
    // block P-1 times; rank b's in side: P-1 copies of its block, then every other block.
    let w_out = |a: usize| all - t[a] + others * t[a];
    let w_in = |b: usize| others * t[b] + all - t[b];
    let done: Vec<f64> = (0..np)
        .map(|b| {
            let last = (0..np).filter(|&a| a != b).map(|a| (w_out(a) + w_in(b) - 2.0 * t[b]) / k + t[b]);
            last.fold(0.0, f64::max) + others * r[b]
        })
        .collect();
    let mut upper = 0.0f64;
    for b in 0..np {
        for d in (0..np).filter(|&d| d != b) {
            upper = upper.max(done[b] + (w_out(b) + w_in(d) - 2.0 * t[b]) / k + t[b]);
        }
    }
    (lower, upper)
}
