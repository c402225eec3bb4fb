//! Every algorithm's time in the ideal model (docs/model.md), without
//! simulating.
//!
//! Read this file like the course report's Table 1 or NCCL's `tuning.cc`: one function per
//! algorithm, the formula as in the docs, and, where a source document's textbook formula
//! differs, that formula beside it with the reason. Notation: P ranks, n elements of
//! e bytes, S = n e, message time `T(m) = alpha + m/B`, reduction time `R(m) = m C`,
//! k NICs per rank.
//!
//! Where the exact time is a recurrence rather than a formula (pipelines, trees with
//! port contention), the function evaluates the recurrence in closed arithmetic; it
//! never runs the event engine.

use crate::algos::{GroupMethod, Machine, Problem, block, clog2, pow2_floor};
use crate::collective::Collective;
use crate::topology::{Link, Topology};

mod lockstep;
pub mod nccl;
mod pipeline;
pub use lockstep::{Step, Xfer, lockstep, lockstep_bounds};
pub use pipeline::{binomial_pipeline, ring_items};

/// The Hockney parameters of a machine whose every pair of ranks is joined alike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hockney {
    /// Seconds per message.
    pub alpha: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds per byte reduced.
    pub c: f64,
    /// Ports per rank.
    pub nics: u32,
}

impl Hockney {
    /// The parameters of `m`, if its topology is uniform.
    pub fn of(m: &Machine) -> Option<Hockney> {
        let (link, nics) = m.topo.uniform()?;
        Some(Hockney { alpha: link.alpha, bandwidth: link.bandwidth, c: m.cost_per_byte, nics })
    }
    /// Time of one message of `bytes`.
    pub fn t(&self, bytes: f64) -> f64 {
        self.alpha + bytes / self.bandwidth
    }
    /// Time to reduce `bytes`.
    pub fn r(&self, bytes: f64) -> f64 {
        bytes * self.c
    }
}

/// Ring: `2(P-1) T(c) + (P-1) R(c)`, `c = ceil(n/P) e`.
///
/// Every step waits for the previous step's reduction, and one chunk (a largest one,
/// chunk 0) is on the critical path of every step. The course report and the survey write
/// `2(P-1)(alpha + S/(P B)) + (P-1)(S/P) C`, the same when P divides n.
pub fn ring(p: &Problem, h: &Hockney) -> f64 {
    let np = p.ranks as f64;
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems.div_ceil(p.ranks));
    2.0 * (np - 1.0) * h.t(c) + (np - 1.0) * h.r(c)
}

/// One ring phase alone: a reduce-scatter `(P-1)(T(c) + R(c))` or an allgather
/// `(P-1) T(c)`, `c = ceil(n/P) e`: as in [`ring`], a largest chunk is on the critical
/// path of every step.
pub fn ring_phase(p: &Problem, h: &Hockney, reduce: bool) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems.div_ceil(p.ranks));
    (p.ranks - 1) as f64 * (h.t(c) + if reduce { h.r(c) } else { 0.0 })
}

/// Ring allreduce with every chunk cut into N pieces, pipelined, when P N divides n
/// (`None` otherwise). Every rank then does the same thing at the same time (the ring
/// is symmetric), so one rank's resources tell the whole story: its k ports send the
/// 2(P-1) N pieces in program order, piece j of stage t issued once piece j of stage
/// t-1 has arrived (and, in the reduce-scatter stages, been added on its one compute
/// unit, in arrival order). The recurrence below follows exactly that. When the port is
/// never idle (one NIC and `R(s) <= (N-1) T(s)`) it is `2(P-1) N T(s)`: the whole
/// reduction hides behind the transfers, at the price of an alpha per piece.
pub fn ring_pipelined(p: &Problem, h: &Hockney, segments: usize) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(np * segments) {
        return None;
    }
    let s = p.b(p.elems / (np * segments));
    let (t, r) = (h.t(s), h.r(s));
    let mut ports = vec![0.0f64; h.nics as usize];
    let mut done = vec![0.0f64; segments];
    let (mut issue, mut compute, mut end) = (0.0f64, 0.0f64, 0.0f64);
    for stage in 0..2 * (np - 1) {
        for d in done.iter_mut() {
            issue = issue.max(*d);
            let port = (0..ports.len()).min_by(|&a, &b| ports[a].total_cmp(&ports[b])).unwrap_or(0);
            let arrive = issue.max(ports[port]) + t;
            ports[port] = arrive;
            *d = if stage < np - 1 {
                compute = compute.max(arrive) + r;
                compute
            } else {
                arrive
            };
            end = end.max(*d);
        }
    }
    Some(end)
}

/// Open MPI's segmented ring with `phases` phases, when P times the phases divide n
/// (`None` otherwise): phase j is a ring reduce-scatter over piece j of every chunk,
/// `(P-1)(T(s_j) + R(s_j))`, the phases one after the other on every rank, then the
/// allgather of whole chunks, `(P-1) T(c)`. In the ideal model the phases buy nothing
/// but alphas; in Open MPI they bound the receive buffer to one segment, which the
/// `buffer` column shows.
pub fn ring_segmented(p: &Problem, h: &Hockney, phases: usize) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(p.ranks * phases) {
        return None;
    }
    let c = p.elems / p.ranks;
    let steps = (p.ranks - 1) as f64;
    let reduce: f64 = (0..phases).map(|j| p.b(block(c, phases, j).len)).map(|s| steps * (h.t(s) + h.r(s))).sum();
    Some(reduce + steps * h.t(p.b(c)))
}

/// Two rings in opposite directions over the halves of the vector, when 2P divides n
/// (`None` otherwise). The machine is symmetric, so every rank does the same thing at
/// the same time, and one rank's k ports and one compute unit tell the whole story:
/// each ring's 2(P-1) sends of `h = S/(2P)`, step t issued once step t-1 arrived (and,
/// in the reduce-scatter, was added), taken by the ports in issue order (the forward
/// ring first at a tie, as its stream runs first) and added in arrival order. With two
/// NICs and C = 0 that is `2(P-1) T(h)`; with one NIC and C = 0 the two rings take
/// turns on the port, `4(P-1) T(h)`.
///
/// With several NICs and C > 0 there is none: the two halves reach a rank at the same
/// instant, which one is added first follows the senders' ranks, so ranks fall out of
/// step with each other and the symmetry this recurrence rests on is gone.
pub fn bidirectional_ring(p: &Problem, h: &Hockney) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(2 * np) || (h.nics > 1 && h.c > 0.0) {
        return None;
    }
    let s = p.b(p.elems / (2 * np));
    let (t, r) = (h.t(s), h.r(s));
    let stages = 2 * (np - 1);
    let mut ports = vec![0.0f64; h.nics as usize];
    let (mut next, mut issue) = ([0usize; 2], [0.0f64; 2]);
    let (mut compute, mut end) = (0.0f64, 0.0f64);
    while next[0] < stages || next[1] < stages {
        // The next send in issue order; the forward ring (0) first at a tie.
        let x = if next[1] >= stages || (next[0] < stages && issue[0] <= issue[1]) { 0 } else { 1 };
        let port = (0..ports.len()).min_by(|&a, &b| ports[a].total_cmp(&ports[b])).unwrap_or(0);
        let arrive = issue[x].max(ports[port]) + t;
        ports[port] = arrive;
        let done = if next[x] < np - 1 {
            compute = compute.max(arrive) + r;
            compute
        } else {
            arrive
        };
        issue[x] = done;
        next[x] += 1;
        end = end.max(done);
    }
    Some(end)
}

/// Recursive halving (a reduce-scatter, `reduce`) or doubling (an allgather) alone, for
/// P a power of two that divides n (`None` otherwise, as for [`halving_doubling`]): step
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

/// When a rank that receives `others` messages of time `t` through its `k` incoming NICs
/// (`m = ceil(others/k)` rounds, all sent at time 0, none waiting on a busy sender) has
/// added them all on its one compute unit (`r` each), in arrival order:
/// `max(t + others r, m t + (others - (m-1) k) r)`. Each round's first arrival starts a
/// run of additions; the last of them ends latest, and it is the first or the last
/// round's (the ends grow linearly with the round).
fn gather_reduce(others: usize, k: u32, t: f64, r: f64) -> f64 {
    if others == 0 {
        return 0.0;
    }
    let k = k.max(1) as usize;
    let rounds = others.div_ceil(k);
    let first = t + others as f64 * r;
    let last = rounds as f64 * t + (others - (rounds - 1) * k) as f64 * r;
    first.max(last)
}

/// Naive (every rank sends its vector to every other rank and adds what it gets):
/// `gather_reduce` of P-1 vectors, `max(T + (P-1) R, m T + (P-1-(m-1)k) R)` with
/// `T = T(S)`, `R = R(S)`, `m = ceil((P-1)/k)`. Exact: rank r sends to `r+1, r+2, ...`,
/// so in every round of k messages each rank receives k of them from k different
/// senders and no port is wanted twice. With one NIC, `(P-1) T + R` when `R <= T`
/// (additions hide behind transfers) and `T + (P-1) R` when `R >= T`.
///
/// The homework report gives no formula; it measured Naive_Allreduce (docs/sources.md).
pub fn naive(p: &Problem, h: &Hockney) -> f64 {
    gather_reduce(p.ranks.saturating_sub(1), h.nics, h.t(p.bytes()), h.r(p.bytes()))
}

/// Direct (all-to-all reduce-scatter, then all-to-all allgather) on the machine: where the
/// machine is uniform and P divides n, [`direct_formula`]; elsewhere the step recurrence
/// ([`lockstep`]) of its two steps, which follows blocks that differ by an element (their
/// messages then end at different instants and a rank's later message can find a port
/// taken; the recurrence gives `None` where that reorders them).
pub fn direct(p: &Problem, m: &Machine) -> Option<f64> {
    if let Some(h) = Hockney::of(m)
        && p.elems.is_multiple_of(p.ranks.max(1))
    {
        return Some(direct_formula(p, &h));
    }
    let plan = crate::algos::DirectPlan { np: p.ranks, n: p.elems, reduce_scatter: true, allgather: true };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// Direct with P dividing n, `c = S/P`: the reduce-scatter is `gather_reduce` of P-1
/// blocks, the allgather `m = ceil((P-1)/k)` rounds of `T(c)`:
/// `max(T(c) + (P-1) R(c), m T(c) + (P-1-(m-1)k) R(c)) + m T(c)`. With k = P-1 NICs that
/// is `2 T(S/P) + (P-1) R(S/P)`: two latencies, the ring's bandwidth and compute terms.
pub fn direct_formula(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let others = p.ranks - 1;
    let c = p.b(p.elems / p.ranks);
    let rounds = others.div_ceil(h.nics.max(1) as usize);
    gather_reduce(others, h.nics, h.t(c), h.r(c)) + rounds as f64 * h.t(c)
}

/// Gloo's `allreduce_ring`: P-1 rounds, each a whole-vector message `T(S)` and its
/// addition `R(S)`, then the notification that the inbox is free (a message without data,
/// alpha). With one NIC a rank's notification to its left neighbour and its next vector
/// to its right neighbour leave through the same port one after the other, so every
/// round costs `T(S) + R(S) + alpha`: `(P-1)(T(S) + R(S) + alpha)`. With two or more they
/// go side by side and only the last notification adds: `(P-1)(T(S) + R(S)) + alpha`.
/// Every rank does the same at the same instants, so no port is ever wanted twice.
///
/// Gloo's index gives no time, only `P-1` steps and `P S` bytes on the wire; the ring
/// ([`ring`]) moves `2 (P-1)/P S` in `2(P-1)` steps. With one NIC ring_gloo never wins:
/// its rounds cost `2 alpha + S/B + S C` against two ring steps'
/// `2 alpha + 2 S/(P B) + S C / P`. With two or more it wins only while `S/B + S C` stays
/// below about alpha (it saves P-2 latencies and pays P times the bytes and the additions).
pub fn ring_gloo(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 || p.elems == 0 {
        return 0.0;
    }
    let rounds = (p.ranks - 1) as f64;
    let notes = if h.nics <= 1 { rounds } else { 1.0 };
    rounds * (h.t(p.bytes()) + h.r(p.bytes())) + notes * h.alpha
}

/// One-to-all broadcast: the root's k outgoing NICs send the P-1 copies of S in
/// `ceil((P-1)/k)` rounds of `T(S)`.
pub fn one_to_all(p: &Problem, h: &Hockney) -> f64 {
    (p.ranks - 1).div_ceil(h.nics as usize) as f64 * h.t(p.bytes())
}

/// Makespan of a flow shop: every job visits stages `0..stages` in order; stage s has
/// `servers(s)` identical servers that take jobs in job order, each the first one
/// free (FIFO, as the engine's ports serve messages in issue order); job j spends
/// `time(s, j)` there. A job leaves a stage for the next only after every job before
/// it has: with several servers a smaller job can overtake, but the rank's program
/// waits for segments in order before passing them on.
fn flow_shop(stages: usize, jobs: usize, servers: impl Fn(usize) -> usize, time: impl Fn(usize, usize) -> f64) -> f64 {
    let mut done = vec![0.0f64; jobs];
    let mut free = Vec::new();
    for s in 0..stages {
        free.clear();
        free.resize(servers(s).max(1), 0.0f64);
        let mut released = 0.0f64;
        for (j, d) in done.iter_mut().enumerate() {
            let (i, _) = free.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).unwrap_or((0, &0.0));
            *d = d.max(free[i]) + time(s, j);
            free[i] = *d;
            released = released.max(*d);
            *d = released;
        }
    }
    done.last().copied().unwrap_or(0.0)
}

/// Chain with N segments: forward, each hop `i -> i+1` and each addition at `i+1` is a
/// stage that segments pass in order (a flow shop of 2(P-1) stages); rank P-1 starts
/// sending back once it holds every segment, and the backward pass is a flow shop of
/// P-1 hops. With one segment: `(P-1)(2 T(S) + R(S))`, which is the course report's formula
/// `2N(alpha + tS/N)(P-1) + (P-1) S c` for N = 1. For N > 1 the course report keeps the same
/// form, as if segments did not overlap; they do, so the pipelined chain is faster.
pub fn chain(p: &Problem, h: &Hockney, segments: usize) -> f64 {
    chain_reduce(p, h, segments) + chain_bcast(p, h, segments)
}

/// Chain reduce (the adding pass alone): a flow shop of 2(P-1) stages, hops on k NICs
/// and additions on one compute unit, over N segments. With equal segments
/// `(P-1)(T+R) + (N-1) max(T,R)` when one stage is the bottleneck throughout.
pub fn chain_reduce(p: &Problem, h: &Hockney, segments: usize) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let seg = |j: usize| p.b(block(p.elems, segments, j).len);
    let k = h.nics as usize;
    // Even stages are hops (k NICs each way), odd stages additions (one compute unit).
    flow_shop(
        2 * (p.ranks - 1),
        segments,
        |s| if s % 2 == 0 { k } else { 1 },
        |s, j| {
            if s % 2 == 0 { h.t(seg(j)) } else { h.r(seg(j)) }
        },
    )
}

/// Chain broadcast (the copying pass alone): a flow shop of P-1 hops on k NICs over N
/// segments; `(P+N-2) T(s)` with equal segments s and one NIC.
pub fn chain_bcast(p: &Problem, h: &Hockney, segments: usize) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let seg = |j: usize| p.b(block(p.elems, segments, j).len);
    flow_shop(p.ranks - 1, segments, |_| h.nics as usize, |_, j| h.t(seg(j)))
}

/// Binomial tree allreduce: [`binomial_reduce`] to rank 0, then [`binomial_bcast`] of
/// the total from when rank 0 has it. For P a power of two every level is in lockstep
/// and this is `log2 P (2 T(S) + R(S))`, the course report's formula with N = 1. For
/// other P several children reach a parent at once and queue for its port, which the
/// course report ignores.
pub fn binomial_tree(p: &Problem, h: &Hockney) -> f64 {
    binomial_bcast(p, h, binomial_reduce(p, h))
}

/// Binomial reduce to rank 0: rank r adds its children's partial sums (farthest first)
/// when they arrive through its k incoming NICs, served in order of (send time, rank).
/// `log2 P (T(S) + R(S))` for P a power of two.
pub fn binomial_reduce(p: &Problem, h: &Hockney) -> f64 {
    use crate::algos::binomial_shape as shape;
    let np = p.ranks;
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let k = h.nics as usize;
    // ready[r] = when rank r has its subtree's sum (children have higher ranks).
    let mut ready = vec![0.0f64; np];
    let mut arrivals: Vec<(f64, usize)> = Vec::new();
    for q in (0..np).rev() {
        let (_, children) = shape(q, np);
        arrivals.clear();
        arrivals.extend(children.clone().map(|c| (ready[c], c)));
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut ports = vec![0.0f64; k];
        // Children are distinct powers of two above q: index them by that power.
        let mut arrived = [0.0f64; 64];
        for &(sent, c) in &arrivals {
            let port = (0..k).min_by(|&a, &b| ports[a].total_cmp(&ports[b])).unwrap_or(0);
            let start = sent.max(ports[port]);
            ports[port] = start + t;
            arrived[slot_of(q, c)] = start + t;
        }
        let mut done = 0.0f64;
        for c in children {
            done = done.max(arrived[slot_of(q, c)]) + r;
        }
        ready[q] = done;
    }
    ready.first().copied().unwrap_or(0.0)
}

/// Binomial broadcast from rank 0, which has the vector at `start`: each parent sends
/// to its children nearest first on its k outgoing NICs, so child i (from the nearest)
/// has it `(i / k + 1) T(S)` after its parent. `ceil(log2 P) T(S)` with one NIC.
pub fn binomial_bcast(p: &Problem, h: &Hockney, start: f64) -> f64 {
    use crate::algos::binomial_shape as shape;
    let np = p.ranks;
    let t = h.t(p.bytes());
    let k = h.nics as usize;
    let mut got = vec![0.0f64; np];
    let mut end = 0.0f64;
    for q in 0..np {
        if q == 0 {
            got[0] = start;
        }
        let (_, children) = shape(q, np);
        for (i, c) in children.rev().enumerate() {
            got[c] = got[q] + (i / k + 1) as f64 * t;
        }
        end = end.max(got[q]);
    }
    end
}

/// The index of child `c` of `q` (`c = q + 2^j`) in a small table: `j`.
fn slot_of(q: usize, c: usize) -> usize {
    (c - q).trailing_zeros() as usize
}

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

/// Halving-doubling for P a power of two that divides n: step k of the reduce-scatter
/// swaps halves of `n/2^k` elements, so
/// `2 log2 P alpha + 2 (P-1)/P S/B + (P-1)/P S C`: Gloo's 2 lg P steps and 2 S on
/// the wire. The survey writes `2 log2 N (alpha + S/B + S C)`, which sends the whole
/// vector at every step.
///
/// Otherwise there is no closed form (`None`). When P does not divide n, the ranks
/// that own the smaller blocks finish each step early, run ahead, and their
/// later-step messages occupy the ports that the ranks with the larger blocks need
/// (seen at P = 8, n = 25, alpha = 0: rank 5's last allgather message holds rank 4's
/// incoming port when rank 0's first one arrives). For P not a power of two the same
/// happens around the fold (see [`butterfly`]).
pub fn halving_doubling(p: &Problem, h: &Hockney) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    let even = pow2_floor(p.ranks) == p.ranks && p.elems.is_multiple_of(p.ranks);
    even.then(|| halving_doubling_core(p, h))
}

fn halving_doubling_core(p: &Problem, h: &Hockney) -> f64 {
    let p2 = p.ranks;
    let mut time = 0.0;
    for k in 0..clog2(p2) {
        let half = p2 >> (k + 1);
        let b = block(p.elems, p2, half - 1);
        let l = p.b(b.offset + b.len);
        time += 2.0 * h.t(l) + h.r(l);
    }
    time
}

/// The lower bound for allreduce (docs/report.md, 'The checks'; Chan et al. 2007; Patarasuk & Yuan
/// 2009), compute allowed to overlap communication:
/// `ceil(log_{k+1} P) alpha + max(2 (P-1)/P S / (k B), (P-1)/P S C)`, with the topology's
/// smallest alpha, largest B and fewest NICs ([`lower_bound_of`] for every collective).
pub fn lower_bound(p: &Problem, topo: &dyn Topology, c: f64) -> f64 {
    lower_bound_of(Collective::Allreduce, p, topo, c)
}

/// The lower bound of collective `coll` (docs/model.md, 'The lower bound'), after Chan et
/// al. 2007, with k ports per rank and compute allowed to overlap communication:
///
/// - latency: a rank's result depends on every rank's input (a barrier's exit on every
///   rank's arrival), and after t message times a rank can have heard, directly or not,
///   from at most `(k+1)^t` ranks (itself and k incoming messages per round, each from a
///   rank that heard as many): `ceil(log_{k+1} P) alpha` (the textbook
///   `ceil(log2 P) alpha` with one port);
/// - bandwidth, through one rank's k ports: allreduce `2 (P-1)/P S` (it must send out and
///   take in (P-1)/P of the vector, Patarasuk & Yuan); reduce-scatter and allgather
///   `(P-1)/P S` (the P-1 blocks of others it must contribute to or receive); broadcast
///   and reduce `S` (a non-root must receive the vector; the root must receive or send
///   it); barrier none;
/// - compute: the `(P-1) S` bytes of reductions that must happen somewhere, spread over
///   the P ranks: `(P-1)/P S C` for allreduce, reduce-scatter and reduce.
pub fn lower_bound_of(coll: Collective, p: &Problem, topo: &dyn Topology, c: f64) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let (link, nics) = topo.best_link();
    let np = p.ranks as f64;
    let frac = (np - 1.0) / np;
    let s = p.bytes();
    let (wire, reduced) = match coll {
        Collective::Allreduce => (2.0 * frac * s, frac * s),
        Collective::ReduceScatter => (frac * s, frac * s),
        Collective::Allgather => (frac * s, 0.0),
        Collective::Broadcast => (s, 0.0),
        Collective::Reduce => (s, frac * s),
        Collective::Barrier => (0.0, 0.0),
    };
    rounds_lower(p.ranks, nics) as f64 * link.alpha + (wire / (nics as f64 * link.bandwidth)).max(reduced * c)
}

/// `ceil(log_{k+1} P)`: the fewest rounds in which P ranks can all hear from each other
/// with k ports each, in whole numbers (no float logarithm).
fn rounds_lower(ranks: usize, k: u32) -> u32 {
    let (mut reach, mut t) = (1u128, 0);
    while reach < ranks as u128 {
        reach *= k as u128 + 1;
        t += 1;
    }
    t
}

// ---------------------------------------------------------------------------------------
// Hierarchical machines (levels innermost first: sizes s_i, links (alpha_i, B_i))

/// `hierarchical_ring` on the machine: [`hierarchical_ring_formula`] where the leaders
/// all have the same ports (and the members too), else the step recurrence
/// ([`lockstep`]) of its group reduce, leaders' ring and group broadcast, each message
/// at its own pair's cost and each rank's own ports. With unequal leaders, groups finish
/// their reduce at different times; the recurrence follows that, and gives `None` where
/// a message would take a port ahead of a lagging group's. (The formula comes first
/// because a binomial tree over a group that is not a power of two has leaves that send
/// before their step, which the formula's port queues follow and the recurrence does
/// not; where both exist a test checks that they agree.)
pub fn hierarchical_ring(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    hierarchical_ring_formula(p, m, method).or_else(|| hierarchical_ring_steps(p, m, method))
}

/// The step recurrence of `hierarchical_ring` (see [`hierarchical_ring`]).
pub fn hierarchical_ring_steps(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    let plan = crate::algos::hr_plan(p, m.topo, method);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// Hierarchical ring on groups of `g = s_0` ranks with `m = P/g` leaders:
/// `Red + Ring + Bc`, where on two levels with `m` dividing n
///
/// - `Red`, the group's reduce to its leader over level 0 (`T0 = alpha_0 + S/B_0`,
///   `R = S C`, leader with k NICs): star `max(T0 + (g-1) R, q T0 + (g-1-(q-1)k) R)`,
///   `q = ceil((g-1)/k)` (as [`star`]'s reduce); chain `(g-1)(T0 + R)`; binomial tree
///   the tree recurrence of [`binomial_tree`], `log2 g (T0 + R)` for g a power of two;
/// - `Ring = 2(m-1)(alpha_1 + c/B_1) + (m-1) c C`, `c = ceil(n/m) e` ([`ring`] over the
///   leaders);
/// - `Bc`, the broadcast: star `q T0`, chain `(g-1) T0`, binomial `log2 g T0`.
///
/// The survey writes `2(alpha + S/B) + g S C + 2(m-1)(alpha + S/(mB)) + (m-1)(S/m) C`. Its
/// leader receives all `g-1` vectors in one step, which needs `k >= g-1` NICs (then
/// `q = 1` and our star is `2 T0 + (g-1) S C + Ring`); it counts `g` additions where the
/// leader makes `g-1`; and it uses one alpha and B where the group's and the leaders'
/// links differ.
///
/// What is evaluated, exactly, in every case: the group phase is the same in every group
/// (level 0 is uniform), so all leaders start the ring together; the ring is evaluated
/// step by step over the leaders' real hops (with more than two levels some hops cross a
/// higher level, the steps stop being in lockstep, and no single-line formula holds) with
/// each leader's k ports as FIFO servers; each leader's broadcast then starts when its
/// ring is done and its ports are free of its last ring sends (on a GPU cluster the ring
/// crosses nodes through the leaders' NICs, an interface of its own, and the broadcast
/// finds the leader's NVLink ports free). `None` when the leaders do
/// not all have the same ports, or the members do not: then groups finish at different
/// times and ring messages compete with group messages for ports, which the engine orders
/// by issue time and this evaluation does not follow.
pub fn hierarchical_ring_formula(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    let levels = m.topo.levels()?;
    let &(g, link0) = levels.first()?;
    if g == 0 || !p.ranks.is_multiple_of(g) {
        return None;
    }
    let groups = p.ranks / g;
    let topo = m.topo;
    let kl = topo.nics(0);
    let km = if g > 1 { topo.nics(1) } else { kl };
    if (0..groups).any(|j| topo.nics(j * g) != kl) || (0..p.ranks).any(|r| r % g != 0 && topo.nics(r) != km) {
        return None;
    }
    // The leaders' ring leaves a leader by the interface its group talks through, or, on
    // a GPU cluster, by its node's NIC: then the ring and the group phases do not share
    // ports, and each leader's NIC carries its ring hop alone (no other rank crosses
    // nodes).
    let face = |j: usize| topo.route_interfaces(j * g, ((j + 1) % groups) * g);
    let shared = groups < 2 || (0..groups).all(|j| face(j) == (j * g, ((j + 1) % groups) * g));
    let kr = if shared { kl } else { topo.interface_ports(face(0).0) };
    if !shared && (0..groups).any(|j| topo.interface_ports(face(j).0) != kr || topo.interface_ports(face(j).1) != kr) {
        return None;
    }
    let (kl, km, kr) = (kl.max(1) as usize, km.max(1) as usize, kr.max(1) as usize);
    let (t0, r0) = (link0.time(p.bytes()), p.bytes() * m.cost_per_byte);
    let start = group_reduce(method, g, t0, r0, kl, km);
    let (done, mut ports, ring_end) = leaders_ring(p, m, g, groups, start, kr);
    let mut end = ring_end.max(start);
    for (d, ring_ports) in done.iter().zip(ports.iter_mut()) {
        let mut own = vec![0.0f64; kl];
        let leader_ports = if shared { ring_ports } else { &mut own };
        end = end.max(group_broadcast(method, g, t0, *d, leader_ports, km));
    }
    Some(end)
}

/// The index of the earliest-free server (the engine hands out any free port; which
/// one does not matter, only when one is free).
fn earliest(servers: &[f64]) -> usize {
    servers.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

/// When a group's leader holds the group's sum, every member having sent at time 0
/// (message time `t`, reduction time `r`, leader with `kl` ports, members with `km`).
fn group_reduce(method: GroupMethod, g: usize, t: f64, r: f64, kl: usize, km: usize) -> f64 {
    match method {
        _ if g <= 1 => 0.0,
        // Members' vectors come in through the leader's kl ports in rank order, kl per
        // round, and are added in that order.
        GroupMethod::Star => (1..g).fold(0.0, |done: f64, i| done.max(((i - 1) / kl + 1) as f64 * t) + r),
        // Each member waits for the one after it, adds, passes on.
        GroupMethod::Chain => (1..g).fold(0.0, |done, _| done + t + r),
        GroupMethod::BinomialTree => {
            use crate::algos::binomial_shape as shape;
            // ready[q]: when local rank q has its subtree's sum (children are above q).
            let mut ready = vec![0.0f64; g];
            let mut arrived = vec![0.0f64; g];
            for q in (0..g).rev() {
                let (_, children) = shape(q, g);
                // Children's partial sums reach q's ports in the order they were sent.
                let mut order: Vec<(f64, usize)> = children.clone().map(|c| (ready[c], c)).collect();
                order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let mut ports = vec![0.0f64; if q == 0 { kl } else { km }];
                for (sent, c) in order {
                    let i = earliest(&ports);
                    ports[i] = sent.max(ports[i]) + t;
                    arrived[c] = ports[i];
                }
                // q adds them one by one, farthest child first, as the program says.
                ready[q] = children.fold(0.0, |done: f64, c| done.max(arrived[c]) + r);
            }
            ready[0]
        }
    }
}

/// When the last member of a group has the result, the leader starting at `start` with
/// its ports free at `ports` (updated), members with `km` free ports.
fn group_broadcast(method: GroupMethod, g: usize, t: f64, start: f64, ports: &mut [f64], km: usize) -> f64 {
    let send = |ports: &mut [f64]| {
        let i = earliest(ports);
        ports[i] = start.max(ports[i]) + t;
        ports[i]
    };
    match method {
        _ if g <= 1 => start,
        GroupMethod::Star => (1..g).map(|_| send(ports)).fold(start, f64::max),
        GroupMethod::Chain => send(ports) + (g - 2) as f64 * t,
        GroupMethod::BinomialTree => {
            use crate::algos::binomial_shape as shape;
            let mut got = vec![start; g];
            let mut end = start;
            for q in 0..g {
                // Nearest child (largest subtree) first; a member's ports are all free.
                for (idx, c) in shape(q, g).1.rev().enumerate() {
                    got[c] = if q == 0 { send(ports) } else { got[q] + (idx / km + 1) as f64 * t };
                    end = end.max(got[c]);
                }
            }
            end
        }
    }
}

/// The ring allreduce among `groups` leaders (leader j is rank `j g`), all starting at
/// `start` with `k` free ports, over their real hops `j -> j+1`. Each hop's messages are
/// the only users of the sender's outgoing and the receiver's incoming ports, so a hop
/// is a FIFO queue of k servers; a send is issued when the sender finished the step
/// before, and a receive is reduced once it arrived and the receiver finished the step
/// before. Returns when each leader finished, each leader's port free times, and the
/// last message's end.
fn leaders_ring(
    p: &Problem,
    m: &Machine,
    g: usize,
    groups: usize,
    start: f64,
    k: usize,
) -> (Vec<f64>, Vec<Vec<f64>>, f64) {
    let mut done = vec![start; groups];
    let mut ports = vec![vec![0.0f64; k]; groups];
    let mut end = start;
    if groups < 2 {
        return (done, ports, end);
    }
    let hops: Vec<_> = (0..groups).map(|j| m.topo.link(j * g, ((j + 1) % groups) * g)).collect();
    let bytes = |i: usize| p.b(block(p.elems, groups, i % groups).len);
    let steps = groups - 1;
    let mut before = done.clone();
    for s in 0..2 * steps {
        before.copy_from_slice(&done);
        for j in 0..groups {
            // The chunks of `ring`: reduce-scatter sends j-s, allgather sends j+1-(s-steps).
            let (chunk, reduce) =
                if s < steps { (j + 2 * groups - s, true) } else { (j + 2 * groups + 1 - (s - steps), false) };
            let b = bytes(chunk);
            let i = earliest(&ports[j]);
            let arrival = before[j].max(ports[j][i]) + hops[j].time(b);
            ports[j][i] = arrival;
            end = end.max(arrival);
            let to = (j + 1) % groups;
            done[to] = arrival.max(before[to]) + if reduce { b * m.cost_per_byte } else { 0.0 };
        }
    }
    (done, ports, end)
}

/// BlueConnect on the machine's levels: the step recurrence ([`lockstep`]) of its ring
/// steps, level by level, on each level's link. Where P divides n (or only one level has
/// more than one group) it is [`blueconnect_formula`]. Elsewhere the shards differ by an
/// element, a group with the shorter shards finishes a level a little earlier, and its
/// next level's first message can take the port that a rank of a slower group still
/// needs for its last message of the level above; the recurrence follows that while the
/// message fits in a gap and gives `None` where it would delay the other (see
/// [`lockstep`]).
pub fn blueconnect(p: &Problem, m: &Machine) -> Option<f64> {
    let plan = crate::algos::bc_plan(p, m.topo);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// BlueConnect on levels `(s_i, alpha_i, B_i)`:
/// `sum_i (s_i - 1) (2 T_i(c_i) + R(c_i))`, `T_i(x) = alpha_i + x/B_i`, `c_i = n_(i+1) e`,
/// `n_0 = n`, `n_(i+1) = ceil(n_i / s_i)`: the ring reduce-scatter of level i on the
/// shard the levels below left and the mirror-image allgather. With P dividing n that is
/// `sum_i 2(s_i-1)(alpha_i + S/(s_0 ... s_i B_i)) + (P-1)/P S C`: the reductions
/// telescope to a flat ring's, while each level's bandwidth term carries only what is
/// left of S.
///
/// Exact (`Some`) when P divides n: every rank's shard has the same length at every
/// level, so every ring of a level runs in lockstep, every rank changes level at the
/// same instant, and a level's last message has landed before the next level's first
/// is sent; ports then never matter. Also exact for any n when only one level has more
/// than one group: that is [`ring`] on that level's link. `None` otherwise: see
/// [`blueconnect`].
///
/// The survey gives no formula (`本文不再详细分析`).
pub fn blueconnect_formula(p: &Problem, levels: &[(usize, Link)], c: f64) -> Option<f64> {
    let active = levels.iter().filter(|l| l.0 > 1).count();
    if active > 1 && !p.elems.is_multiple_of(p.ranks.max(1)) {
        return None;
    }
    let mut n = p.elems;
    let mut time = 0.0;
    for &(s, link) in levels {
        if s <= 1 {
            continue;
        }
        let chunk = n.div_ceil(s);
        let b = p.b(chunk);
        time += (s - 1) as f64 * (2.0 * link.time(b) + b * c);
        n = chunk;
    }
    Some(time)
}

/// The neighbour link of a grid (what its closed-form formulas are written in): the
/// topology's best link, its fewest NICs, and `c`.
fn neighbours(m: &Machine) -> Hockney {
    let (link, nics) = m.topo.best_link();
    Hockney { alpha: link.alpha, bandwidth: link.bandwidth, c: m.cost_per_byte, nics }
}

/// `torus_2d` (Sony's 2D-Torus) on the machine's `r x c` grid: the step recurrence
/// ([`lockstep`]) of its `2(c-1) + 2(r-1)` ring steps, on the pair costs of the actual
/// neighbours (on a mesh, each row ring's closing pair is `c - 1` hops apart).
///
/// On a torus whose `r c` divides n every ring step is in lockstep and this is
/// [`torus_2d_formula`]:
///
/// ```text
/// (c-1) [T(S/c) + R(S/c)]  +  2(r-1) T(S/(rc)) + (r-1) R(S/(rc))  +  (c-1) T(S/c)
///  row reduce-scatter         column ring allreduce of the S/c shard   row allgather
/// ```
///
/// The survey ([`torus_2d_seed`], n = c ranks per group, m = r groups) writes
/// `2(n-1)[alpha + S/(nB)] + (n-1)(S/n)C + 2(m-1)[alpha + S/(mB)] + (m-1)(S/m)C`: its
/// column phase moves the whole vector S, as if the rows had not reduce-scattered it
/// first; the column rings carry only the shard of S/c bytes, so the survey overstates
/// the column phase's bandwidth and compute terms c-fold. `None` without a grid, or
/// where a port would serve messages out of step order (see [`lockstep`]).
pub fn torus_2d(p: &Problem, m: &Machine) -> Option<f64> {
    let grid = crate::algos::Grid2::of(m.topo)?;
    let plan = crate::algos::TorusPlan { grid, n: p.elems };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// [`torus_2d`] in lockstep: each ring step costs its largest block,
/// `c1 = ceil(n/c) e` along rows and `c2 = ceil(ceil(n/c)/r) e` along columns, on the
/// neighbour link. Exact on a torus when `r c` divides n; elsewhere an estimate.
pub fn torus_2d_formula(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    let shard = p.elems.div_ceil(cols);
    let (c1, c2) = (p.b(shard), p.b(shard.div_ceil(rows)));
    let (rs, cs) = ((cols - 1) as f64, (rows - 1) as f64);
    rs * (h.t(c1) + h.r(c1)) + 2.0 * cs * h.t(c2) + cs * h.r(c2) + rs * h.t(c1)
}

/// The survey's 2D-Torus formula, with `n = cols` ranks per group and `m = rows` groups:
/// `2(n-1)[alpha + S/(nB)] + (n-1)(S/n)C + 2(m-1)[alpha + S/(mB)] + (m-1)(S/m)C`.
pub fn torus_2d_seed(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    let s = p.bytes();
    let ring = |k: usize| {
        let k = k as f64;
        2.0 * (k - 1.0) * h.t(s / k) + (k - 1.0) * h.r(s / k)
    };
    ring(cols) + ring(rows)
}

/// `mesh_2d` (Google's 2D-Mesh) on the machine's `r x c` grid: the step recurrence.
///
/// With `ring = scatter` each half runs [`torus_2d`]'s steps (half A rows first, half B
/// columns first), both halves' messages of a step going out together on two NICs.
///
/// With `ring = whole` (the survey's) there are `r + c - 2` steps; in each, both halves
/// (`ceil(n/2)` and `floor(n/2)` elements) go one hop along their rings at once on two
/// NICs, land in scratch, and are added on the one compute unit. On a torus every step
/// is alike ([`mesh_2d_formula`]):
///
/// ```text
/// (r + c - 2) [T(ceil(n/2) e) + S C]
/// ```
///
/// The survey writes `2 (m + n - 2)(alpha + S/B + S C)`: it sends the whole vector S
/// where each half carries S/2, and counts `m + n - 2` steps twice (once per phase)
/// where each half walks its row ring and its column ring once, `r + c - 2` steps in
/// all, the two halves side by side. Its per-step `S C` is right: both halves' additions
/// fall on one compute unit. `None` without a grid or where a port would serve
/// messages out of step order.
pub fn mesh_2d(p: &Problem, m: &Machine, ring: crate::algos::MeshRing) -> Option<f64> {
    let grid = crate::algos::Grid2::of(m.topo)?;
    let plan = crate::algos::MeshPlan { grid, n: p.elems, ring };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// [`mesh_2d`] with `ring = whole` on a torus: `(r + c - 2) [T(ceil(n/2) e) + S C]`.
pub fn mesh_2d_formula(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    (rows + cols - 2) as f64 * (h.t(p.b(p.elems.div_ceil(2))) + h.r(p.bytes()))
}

/// The survey's 2D-Mesh formula, `2 (m + n - 2)(alpha + S/B + S C)` (m rows, n columns).
pub fn mesh_2d_seed(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    2.0 * (rows + cols - 2) as f64 * (h.t(p.bytes()) + h.r(p.bytes()))
}

/// `double_binary_tree` with pipeline chunk `chunk` bytes: the recurrence
/// ([`lockstep`]) of its rounds. With K chunks per half and trees of height H there are
/// `K + 2H - 1` rounds: H to fill the pipeline up to the roots, one per chunk, and
/// H - 1 to drain the last chunk down. In a round a rank sends and receives at most 4
/// chunks (`c` bytes) and adds at most 2, so on a uniform machine with k NICs a round
/// costs about `ceil(4/k) T(c) + 2 R(c)` once the pipeline is full; the recurrence
/// charges each rank exactly its own messages, in the order its ports take them.
///
/// The survey gives no formula (it notes the tree's `log2 N` latency against the ring's
/// N). `None` where ports would take messages out of round order, as when ranks run
/// ahead in the pipeline's fill: the time then hangs on the engine's arbitration (see
/// [`lockstep`] and the algorithm's docs).
pub fn double_binary_tree(p: &Problem, m: &Machine, chunk: u64) -> Option<f64> {
    let plan = crate::algos::dbt_plan(p, chunk);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// Gloo's `allreduce_ring_chunked` where all `2P` chunks are equal: `n` a multiple of
/// `2P` and `n / 2P >= 256` (Gloo's smallest chunk), `c = n/(2P) e`, `T = T(c)`,
/// `R = R(c)`, `A = alpha` (a notification carries no data).
///
/// Every rank then does the same at the same instants, and a rank's incoming ports
/// carry its left neighbour's chunks and its right neighbour's notifications exactly
/// when its own outgoing ports carry its chunks and its notifications: no port is ever
/// wanted by more messages than it has, and the time is a recurrence over one rank's
/// program. Its outgoing messages, in order: two chunks at time 0; in each of the 2P-2
/// reduce-scatter rounds, once the left neighbour's chunk has landed and been added
/// (`R`), a notification, and, once the right neighbour's notification is in (at the
/// same instant as its own ends), the summed chunk; in the first 2P-4 allgather rounds
/// the same without the addition; a last notification. Each goes out on the first of
/// the k ports to free, in that order.
///
/// With one NIC and `R <= T` the port never idles and the additions hide behind the
/// transfers: `(4P-4) T + (4P-5) A`, the ring's bandwidth term (`4P-4` chunks of S/2P)
/// with `8P-9` latencies where the ring has `2P-2`. With two NICs the two chunks in
/// flight overlap one's transfer with the other's addition, which is the point of the
/// chunking: a reduce-scatter round costs `R + A` where the ring's costs `T + R`.
///
/// `None` for unequal chunks: ranks fall out of step, a rank's incoming port then
/// carries data from the left and notifications from the right in an order set by the
/// engine's priorities, and no recurrence over one rank follows it. Gloo's index gives
/// only `4P` steps and `2S` on the wire.
pub fn ring_chunked(p: &Problem, h: &Hockney) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 || p.elems == 0 {
        return Some(0.0);
    }
    let chunks = 2 * np;
    let cs = crate::algos::ring_chunk_elems(np, p.elems);
    if cs * chunks != p.elems {
        return None;
    }
    let (t, r, a) = (h.t(p.b(cs)), h.r(p.b(cs)), h.alpha);
    let mut ports = vec![0.0f64; h.nics.max(1) as usize];
    // A message issued at `issue` for `dur`: FIFO on the first port to free.
    let mut serve = |issue: f64, dur: f64| {
        let i = (0..ports.len()).min_by(|&x, &y| ports[x].total_cmp(&ports[y])).unwrap_or(0);
        ports[i] = issue.max(ports[i]) + dur;
        ports[i]
    };
    // ends[i]: when this rank's i-th chunk lands, which is also when the left
    // neighbour's i-th lands here.
    let mut ends = Vec::with_capacity(2 * chunks);
    ends.push(serve(0.0, t));
    ends.push(serve(0.0, t));
    let mut now = 0.0f64;
    for round in 2..chunks {
        now = now.max(ends[round - 2]) + r;
        now = serve(now, a);
        ends.push(serve(now, t));
    }
    for round in 0..chunks - 2 {
        now = now.max(ends[chunks - 2 + round]);
        if round + 4 < chunks {
            now = serve(now, a);
            ends.push(serve(now, t));
        }
    }
    Some(serve(now, a))
}

/// Gloo's `allreduce_bcube` with groups of `base` ranks: the step recurrence
/// ([`lockstep`]) of its `2 log_b P` steps and the notifications between them (each a
/// message without data, alpha). With base 2, P a power of two dividing n and one NIC it
/// is [`halving_doubling`] plus `(log2 P + 1) alpha`: every reduce-scatter step after
/// the first, the first allgather step and the closing round each carry one notification
/// ahead of the data on the one port; with two or more NICs the notifications travel
/// beside the data and only the closing round's adds alpha. With a larger base a rank's
/// b - 1 messages of a step queue for its ports, which the recurrence follows; `None`
/// where a port would serve them out of step order, and for P not a power of the base.
///
/// Gloo's index gives no formula for bcube.
pub fn bcube(p: &Problem, m: &Machine, base: usize) -> Option<f64> {
    let mut q = 1usize;
    while q < p.ranks {
        q = q.saturating_mul(base.max(2));
    }
    if q != p.ranks {
        return None;
    }
    let plan = crate::algos::BcubePlan::new(p, base);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// The binomial tree with the vector cut into `segments` pieces, pipelined (see the
/// algorithm's docs), where every rank has at least `ceil(log2 P)` NICs, as many as the
/// root has children. Then no port is ever wanted by more messages than it has: a rank
/// keeps one piece in flight to its parent and one round of pieces to its children, its
/// children's pieces come up one per child, and the broadcast reaches a rank only after
/// its last piece went up. Every message starts when it is issued, and the time is the
/// recurrence of the program, piece by piece, `T_s = T(piece s)`, `R_s = R(piece s)`:
///
/// - up, children before parents: a rank adds its children's piece s in order, each from
///   `max(its arrival, the previous addition's end)`, `+ R_s`; it sends piece s once that
///   is done and piece s-1 has landed; it lands `T_s` later;
/// - down, parents before children: the root starts once its last addition is done; a
///   rank sends piece s to all its children at once, once it has it and its previous
///   round of sends has landed; they land `T_s` later.
///
/// With one segment this is not used: [`binomial_tree`] has no flow control and
/// follows its queues. With fewer NICs a parent's ports are wanted by several
/// children's pieces at once and serve them in the engine's priority order, which
/// depends on when each child's pieces are ready; no recurrence here follows that, so
/// there is no closed form (`None`). The course report does not pipeline the tree.
pub fn binomial_tree_pipelined(p: &Problem, h: &Hockney, segments: usize) -> Option<f64> {
    use crate::algos::binomial_shape as shape;
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if (h.nics as usize) < clog2(np) as usize {
        return None;
    }
    let seg = |s: usize| p.b(block(p.elems, segments, s).len);
    // up[q * segments + s]: when q's piece s lands at its parent.
    let mut up = vec![0.0f64; np * segments];
    let mut reduced = vec![0.0f64; np];
    for q in (0..np).rev() {
        let (parent, children) = shape(q, np);
        let (mut now, mut landed) = (0.0f64, 0.0f64);
        for s in 0..segments {
            for c in children.clone() {
                now = now.max(up[c * segments + s]) + h.r(seg(s));
            }
            if parent.is_some() {
                now = now.max(landed);
                landed = now + h.t(seg(s));
                up[q * segments + s] = landed;
            }
        }
        // The down pass may send only once the last piece up has landed.
        reduced[q] = now.max(landed);
    }
    // down[q * segments + s]: when piece s reaches q.
    let mut down = vec![0.0f64; np * segments];
    let mut end = 0.0f64;
    for q in 0..np {
        let (parent, children) = shape(q, np);
        let (mut now, mut landed) = (reduced[q], reduced[q]);
        for s in 0..segments {
            if parent.is_some() {
                now = now.max(down[q * segments + s]);
            }
            now = now.max(landed);
            if children.clone().next().is_some() {
                landed = now + h.t(seg(s));
                for c in children.clone() {
                    down[c * segments + s] = landed;
                }
            }
        }
        end = end.max(now).max(landed);
    }
    Some(end)
}

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

/// A tree broadcast from rank 0, every child of higher rank than its parent
/// (`children(r)` in the order r sends): child i of a parent has the vector
/// `ceil((i+1)/k) T(S)` after it, the parent's k outgoing NICs sending in order. Each
/// rank receives one message, so no incoming port is ever wanted twice.
pub fn tree_bcast(p: &Problem, h: &Hockney, children: impl Fn(usize) -> Vec<usize>) -> f64 {
    let t = h.t(p.bytes());
    let k = h.nics.max(1) as usize;
    let mut got = vec![0.0f64; p.ranks];
    let mut end = 0.0f64;
    for q in 0..p.ranks {
        for (i, c) in children(q).into_iter().enumerate() {
            got[c] = got[q] + (i / k + 1) as f64 * t;
        }
        end = end.max(got[q]);
    }
    end
}

/// A tree reduce to rank 0, every child of higher rank than its parent: rank q's
/// children send their sums when they have them; q's k incoming NICs take them in order
/// of (send time, rank), each for `T(S)`, and q adds them in `children(q)` order on its
/// one compute unit (`R(S)` each), then sends its sum up. The time is when rank 0 has
/// added its last child's sum.
pub fn tree_reduce(p: &Problem, h: &Hockney, children: impl Fn(usize) -> Vec<usize>) -> f64 {
    let ready = tree_reduce_ready(p, h, (0..p.ranks).rev(), children);
    ready.first().copied().unwrap_or(0.0)
}

/// When each rank has its subtree's sum, for a tree reduce whose ranks are visited in
/// `order` (every child before its parent): the arithmetic of [`tree_reduce`].
fn tree_reduce_ready(
    p: &Problem,
    h: &Hockney,
    order: impl Iterator<Item = usize>,
    children: impl Fn(usize) -> Vec<usize>,
) -> Vec<f64> {
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let k = h.nics.max(1) as usize;
    let mut ready = vec![0.0f64; p.ranks];
    let mut arrived = vec![0.0f64; p.ranks];
    for q in order {
        let kids = children(q);
        let mut queue: Vec<(f64, usize)> = kids.iter().map(|&c| (ready[c], c)).collect();
        queue.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut ports = vec![0.0f64; k];
        for &(sent, c) in &queue {
            let port = (0..k).min_by(|&a, &b| ports[a].total_cmp(&ports[b])).unwrap_or(0);
            let start = sent.max(ports[port]);
            ports[port] = start + t;
            arrived[c] = start + t;
        }
        ready[q] = kids.iter().fold(0.0f64, |done, &c| done.max(arrived[c]) + r);
    }
    ready
}

/// Open MPI's in-order binary-tree reduce: the tree reduce of [`tree_reduce`] to rank
/// P-1 (every child of lower rank than its parent, `children(r)` left then right), then
/// one message of S from rank P-1 to rank 0: `ready(P-1) + T(S)` for P > 1.
pub fn in_order_reduce(p: &Problem, h: &Hockney, children: impl Fn(usize) -> [Option<usize>; 2]) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let ready = tree_reduce_ready(p, h, 0..p.ranks, |q| children(q).into_iter().flatten().collect());
    ready[p.ranks - 1] + h.t(p.bytes())
}

// ---------------------------------------------------------------------------------------
// Bounds where the port arbitration makes the time depend on event order

/// Bounds from the even problems on either side: the exact time of the algorithm at
/// `n` rounded down and up to a multiple of `multiple` (where its chunks are all equal
/// and it has an exact form), `exact(n')`. Every message and every reduction of the
/// uneven run lies between its counterparts in the two even runs (a block of n
/// elements cut into `multiple` parts has `floor` or `ceil` of `n / multiple`
/// elements), and the even runs are in lockstep; the bounds rest on the time growing
/// with the sizes, which the property test of `tests/closed_forms.rs` checks over
/// random machines. `None` where either side has no exact form.
pub fn rounding_bounds(p: &Problem, multiple: usize, exact: impl Fn(&Problem) -> Option<f64>) -> Option<(f64, f64)> {
    let m = multiple.max(1);
    let down = Problem { elems: p.elems / m * m, ..*p };
    let up = Problem { elems: p.elems.div_ceil(m) * m, ..*p };
    Some((exact(&down)?, exact(&up)?))
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
