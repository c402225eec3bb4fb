//! Chain (the course report's Circle, "pass the parcel"): rank 0 sends its vector to
//! rank 1, which adds its own and passes the sum to rank 2, ... up to rank P-1, which
//! holds the total and sends it back down the chain. With `segments: N` the vector
//! is cut into N pieces that follow each other down the chain, pipelined.

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "chain",
    summary: "pass-and-add along 0..P-1, then back (optionally in segments, pipelined)",
    source: "course report (Circle)",
    requires: "any P >= 1, any n",
    closed_form: "segments = 1: (P-1)(2 alpha + 2 S/B + S C); segments N: the forward pass is a flow \
                  shop of 2(P-1) stages (hop, add) over N segments, the backward pass one of P-1 hops: \
                  with equal segments s, (P-1)(T+R) + (N-1) max(T,R) + (P+N-2) T, T = alpha + s/B, R = s C",
    params: &["segments=1: pieces the vector is cut into and pipelined"],
    build: |params| Ok(Box::new(Chain { segments: params.count("segments", 1)? })),
};

/// See the module docs.
#[derive(Debug)]
pub struct Chain {
    /// Pieces the vector is pipelined in.
    pub segments: usize,
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
        let (r, last, n, segs) = (rank, p.ranks as Rank - 1, p.elems, self.segments);
        let seg = move |s: usize| block(n, segs, s);
        // Forward: take segment s from the left, add mine, pass it right.
        let forward = (0..segs).flat_map(move |s| {
            let tag = s as u32;
            let take = (r > 0).then(|| [Op::recv_reduce(r - 1, tag, seg(s)), Op::WaitAll]);
            let pass = (r < last).then(|| Op::send(r + 1, tag, seg(s)));
            take.into_iter().flatten().chain(pass)
        });
        // Backward: take the finished segment from the right, pass it left.
        let backward = (0..segs).flat_map(move |s| {
            let tag = (segs + s) as u32;
            let take = (r < last).then(|| [Op::recv_copy(r + 1, tag, seg(s)), Op::WaitAll]);
            let pass = (r > 0).then(|| Op::send(r - 1, tag, seg(s)));
            take.into_iter().flatten().chain(pass)
        });
        vec![Box::new(forward.chain(backward))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::chain(p, &cost_model::Hockney::of(m)?, self.segments), EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
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
