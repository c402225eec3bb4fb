//! Every algorithm's time in the ideal model (SPEC section 2), without simulating.
//!
//! Read this file like seed 000's Table 1 or NCCL's `tuning.cc`: one function per
//! algorithm, the formula as in the docs, and, where a seed's textbook formula
//! differs, that formula beside it with the reason. Notation: P ranks, n elements of
//! e bytes, S = n e, message time `T(m) = alpha + m/B`, reduction time `R(m) = m C`,
//! k NICs per rank.
//!
//! Where the exact time is a recurrence rather than a formula (pipelines, trees with
//! port contention), the function evaluates the recurrence in closed arithmetic; it
//! never runs the event engine.

use crate::algos::{Machine, Problem, block, clog2, pow2_floor};
use crate::topology::Topology;

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
/// chunk 0) is on the critical path of every step. Seeds 000 and 002 write
/// `2(P-1)(alpha + S/(P B)) + (P-1)(S/P) C`, the same when P divides n.
pub fn ring(p: &Problem, h: &Hockney) -> f64 {
    let np = p.ranks as f64;
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems.div_ceil(p.ranks));
    2.0 * (np - 1.0) * h.t(c) + (np - 1.0) * h.r(c)
}

/// Star: the root's k incoming NICs take the P-1 vectors in `m = ceil((P-1)/k)`
/// rounds of `T = T(S)`; its one compute unit adds them one by one (`R = R(S)` each),
/// so the reduce ends at `max_j (arrival_j + (P - j) R)`, which is largest for the
/// first or the last round; the broadcast takes m more rounds.
///
/// Seed 002 writes `2 T + P S C`: it lets the root receive all P-1 vectors at once
/// (`abc与d之间的通信是同时进行的`), which needs P-1 NICs, and counts P reductions
/// where P-1 happen. Seed 000 writes `2 (P-1) T + (P-1) R`, which serialises the
/// reductions behind the transfers instead of overlapping them.
pub fn star(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let (others, k) = (p.ranks - 1, h.nics as usize);
    let rounds = others.div_ceil(k);
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let first = t + others as f64 * r;
    let last = rounds as f64 * t + (others - (rounds - 1) * k) as f64 * r;
    first.max(last) + rounds as f64 * t
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
/// P-1 hops. With one segment: `(P-1)(2 T(S) + R(S))`, which is seed 000's formula
/// `2N(alpha + tS/N)(P-1) + (P-1) S c` for N = 1. For N > 1 seed 000 keeps the same
/// form, as if segments did not overlap; they do, so the pipelined chain is faster.
pub fn chain(p: &Problem, h: &Hockney, segments: usize) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let seg = |j: usize| p.b(block(p.elems, segments, j).len);
    let hops = p.ranks - 1;
    let k = h.nics as usize;
    // Even stages are hops (k NICs each way), odd stages additions (one compute unit).
    let forward = flow_shop(
        2 * hops,
        segments,
        |s| if s % 2 == 0 { k } else { 1 },
        |s, j| {
            if s % 2 == 0 { h.t(seg(j)) } else { h.r(seg(j)) }
        },
    );
    let backward = flow_shop(hops, segments, |_| k, |_, j| h.t(seg(j)));
    forward + backward
}

/// Binomial tree: rank r adds its children's partial sums (farthest first) when they
/// arrive through its k incoming NICs, served in order of (send time, rank); then the
/// total comes down the same tree, each parent sending to its children nearest first
/// on its k outgoing NICs. For P a power of two every level is in lockstep and this is
/// `log2 P (2 T(S) + R(S))`, seed 000's formula with N = 1. For other P several
/// children reach a parent at once and queue for its port, which the seed ignores.
pub fn binomial_tree(p: &Problem, h: &Hockney) -> f64 {
    use crate::algos::binomial_shape as shape;
    let np = p.ranks;
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    let k = h.nics as usize;
    // Reduce: ready[r] = when rank r has its subtree's sum (children have higher ranks).
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
    // Broadcast: got[r] = when rank r has the total.
    let mut got = vec![0.0f64; np];
    let mut end = 0.0f64;
    for q in 0..np {
        if q == 0 {
            got[0] = ready[0];
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

/// Butterfly for P a power of two: `log2 P (T(S) + R(S))`, seed 000 and 002's
/// `log2 N (alpha + S/B + S C)`, exact here: the two directions of an exchange use
/// different ports and every step waits for the previous reduction.
///
/// For other P there is no closed form (`None`): the ranks the fold leaves alone start
/// the butterfly at once, their messages reach folded ranks early and queue for
/// ports behind the fold, and which waits fall on the critical path depends on
/// alpha, B, C and the NICs. `(log2 P' + 1)(T + R) + T`, the seeds' lockstep count, is
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
/// `2 log2 P alpha + 2 (P-1)/P S/B + (P-1)/P S C`: seed 001's 2 lg P steps and 2 S on
/// the wire. Seed 002 writes `2 log2 N (alpha + S/B + S C)`, which sends the whole
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
    even.then(|| halving_doubling_core(p, h, p.ranks))
}

fn halving_doubling_core(p: &Problem, h: &Hockney, p2: usize) -> f64 {
    let mut time = 0.0;
    for k in 0..clog2(p2) {
        let half = p2 >> (k + 1);
        let b = block(p.elems, p2, half - 1);
        let l = p.b(b.offset + b.len);
        time += 2.0 * h.t(l) + h.r(l);
    }
    time
}

/// The fold's lockstep count for halving-doubling: the power-of-two core on `P'`
/// ranks plus `T(S) + R(S)` before and `T(S)` after. Neither a bound nor the time:
/// early messages can queue behind the fold and add up to one message per step
/// (the tests pin what the engine does instead).
pub fn halving_doubling_fold_lockstep(p: &Problem, h: &Hockney) -> f64 {
    let p2 = pow2_floor(p.ranks.max(1));
    halving_doubling_core(p, h, p2) + 2.0 * h.t(p.bytes()) + h.r(p.bytes())
}

/// SPEC section 3's lower bound for allreduce (Chan et al. 2007; Patarasuk & Yuan
/// 2009), compute allowed to overlap communication:
/// `ceil(log2 P) alpha + max(2 (P-1)/P S / (k B), (P-1)/P S C)`, with the topology's
/// smallest alpha, largest B and fewest NICs.
pub fn lower_bound(p: &Problem, topo: &dyn Topology, c: f64) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let (link, nics) = topo.best_link();
    let np = p.ranks as f64;
    let frac = (np - 1.0) / np;
    clog2(p.ranks) as f64 * link.alpha
        + (2.0 * frac * p.bytes() / (nics as f64 * link.bandwidth)).max(frac * p.bytes() * c)
}
