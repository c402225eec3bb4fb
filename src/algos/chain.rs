//! Chain (the course report's Circle, "pass the parcel"): the ranks in a line, the
//! vector passed from one end to the other, optionally cut into `segments` that follow
//! each other down the line, pipelined ([`pass`]).
//! - allreduce: rank 0 sends its vector to rank 1, which adds its own and passes the
//!   sum to rank 2, ... up to rank P-1, which holds the total and sends it back down;
//! - reduce (to rank 0): the adding pass from rank P-1 down to rank 0;
//! - broadcast (from rank 0): the copying pass from rank 0 up to rank P-1.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::collective::Collective;
use crate::cost_model;
use crate::cost_model::{Hockney, flow_shop};
use crate::sim::op::{Action, Op, Program, Rank};

const SEGMENTS: &str = "segments=1: pieces the vector is cut into and pipelined";

/// Registry entry: allreduce.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "chain",
    summary: "pass-and-add along 0..P-1, then back (optionally in segments, pipelined)",
    source: "course report (Circle)",
    requires: "any P >= 1, any n",
    closed_form: "segments = 1: (P-1)(2 alpha + 2 S/B + S C); segments N: the forward pass is a flow \
                  shop of 2(P-1) stages (hop, add) over N segments, the backward pass one of P-1 hops: \
                  with equal segments s, (P-1)(T+R) + (N-1) max(T,R) + (P+N-2) T, T = alpha + s/B, R = s C",
    params: &[SEGMENTS],
    build: |params| Ok(Box::new(Chain { segments: params.count("segments", 1)?, collective: Collective::Allreduce })),
};

/// Registry entry: reduce.
pub const REDUCE_INFO: AlgoInfo = AlgoInfo {
    id: "chain",
    summary: "pass-and-add from rank P-1 down to rank 0 (optionally in segments, pipelined)",
    source: "course report (Circle), its first half; Open MPI reduce chain/pipeline",
    requires: "any P >= 1, any n",
    closed_form: "segments = 1: (P-1)(alpha + S/B + S C); segments N: a flow shop of 2(P-1) stages (hop, add): \
                  with equal segments s, (P-1)(T+R) + (N-1) max(T,R), T = alpha + s/B, R = s C",
    params: &[SEGMENTS],
    build: |params| Ok(Box::new(Chain { segments: params.count("segments", 1)?, collective: Collective::Reduce })),
};

/// Registry entry: broadcast.
pub const BCAST_INFO: AlgoInfo = AlgoInfo {
    id: "chain",
    summary: "pass from rank 0 up to rank P-1 (optionally in segments, pipelined)",
    source: "course report (Circle), its second half; Open MPI bcast pipeline",
    requires: "any P >= 1, any n",
    closed_form: "segments = 1: (P-1)(alpha + S/B); segments N: a flow shop of P-1 hops on k NICs: \
                  with equal segments s and one NIC, (P+N-2)(alpha + s/B)",
    params: &[SEGMENTS],
    build: |params| Ok(Box::new(Chain { segments: params.count("segments", 1)?, collective: Collective::Broadcast })),
};

/// See the module docs: the allreduce, the reduce or the broadcast.
#[derive(Debug)]
pub struct Chain {
    /// Pieces the vector is pipelined in.
    pub segments: usize,
    collective: Collective,
}

/// Rank `rank`'s part of a pass of `n` elements in `segs` pieces along the line from
/// rank `first` to rank `last` (either way round): take piece s from the neighbour
/// before (adding it in or copying it, `action`), then hand it to the neighbour after.
/// Tags from `tag0`.
pub(crate) fn pass(
    rank: Rank,
    first: Rank,
    last: Rank,
    n: usize,
    segs: usize,
    action: Action,
    tag0: u32,
) -> impl Iterator<Item = Op> + Send {
    let forward = first <= last;
    let step = move |r: Rank| if forward { r.wrapping_add(1) } else { r.wrapping_sub(1) };
    let back = move |r: Rank| if forward { r.wrapping_sub(1) } else { r.wrapping_add(1) };
    (0..segs).flat_map(move |s| {
        let (tag, seg) = (tag0 + s as u32, block(n, segs, s));
        let take = (rank != first).then(|| [Op::Recv { from: back(rank), tag, dst: seg, action }, Op::WaitAll]);
        let hand = (rank != last).then(|| Op::send(step(rank), tag, seg));
        take.into_iter().flatten().chain(hand)
    })
}

impl Algorithm for Chain {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.segments == 1 { INFO.id.into() } else { format!("chain(segments={})", self.segments) }
    }

    /// More segments than elements would send empty pieces: refused at the point (`n/a`)
    /// with the allowed range, rather than clamped behind the user's back.
    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        segments_fit(self.segments, p.elems)
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (last, n, segs) = (p.ranks as Rank - 1, p.elems, self.segments);
        match self.collective {
            Collective::Reduce => vec![Box::new(pass(rank, last, 0, n, segs, Action::Reduce, 0))],
            Collective::Broadcast => vec![Box::new(pass(rank, 0, last, n, segs, Action::Copy, 0))],
            // Add on the way up to P-1, copy the total on the way back.
            _ => {
                let up = pass(rank, 0, last, n, segs, Action::Reduce, 0);
                vec![Box::new(up.chain(pass(rank, last, 0, n, segs, Action::Copy, segs as u32)))]
            }
        }
    }

    /// Each of the P-1 links carries every segment once per pass.
    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let once = (p.ranks.saturating_sub(1) as u64).saturating_mul(self.segments as u64);
        Some(if self.collective == Collective::Allreduce { once.saturating_mul(2) } else { once })
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let t = match self.collective {
            Collective::Reduce => chain_reduce(p, &h, self.segments),
            Collective::Broadcast => chain_bcast(p, &h, self.segments),
            _ => chain(p, &h, self.segments),
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::Broadcast { 0 } else { p.ranks - 1 }
    }
}

/// Whether a vector of `n` elements can be cut into `segments` pieces that are not
/// empty (the pipelined chain and binomial tree refuse the point otherwise).
pub(crate) fn segments_fit(segments: usize, n: usize) -> Result<(), String> {
    if segments > n.max(1) {
        return Err(format!(
            "segments {segments} is more than the {n} element(s) of the vector; allowed here: 1 to {}",
            n.max(1)
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

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
