//! Recursive halving and doubling (Rabenseifner; Thakur et al. 2005; Gloo
//! `allreduce_halving_doubling`): a reduce-scatter in log2 P steps, partners at distance
//! 1, 2, 4, ... swapping halves of what they still own, then the mirror-image allgather.
//! Seed 001 allreduce_halving_doubling; seed 002 recursive halving and doubling.
//!
//! For P not a power of two, the fold of [`super::butterfly`]: the extra ranks hand
//! their vector to a partner first and get the result back at the end.

use super::butterfly::{Fold, fold_role, unfold_rank, with_fold};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, block, clog2};
use crate::cost_model;
use crate::sim::op::{Op, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "halving_doubling",
    summary: "recursive-halving reduce-scatter + recursive-doubling allgather; non-powers of two by the fold",
    source: "seed 001 allreduce_halving_doubling; seed 002; Thakur, Rabenseifner & Gropp 2005",
    requires: "any P >= 1, any n",
    closed_form: "P a power of two dividing n: 2 log2(P) alpha + 2 (P-1)/P S/B + (P-1)/P S C; \
                  none otherwise (ranks with smaller blocks run ahead and take ports the critical path needs)",
    params: &["nonpow2=fold: how P that is not a power of two is handled (fold)"],
    build: |params| {
        params.choice("nonpow2", &["fold"])?;
        Ok(Box::new(HalvingDoubling))
    },
};

/// See the module docs.
#[derive(Debug)]
pub struct HalvingDoubling;

const STEP: u32 = 2;

/// The block range `[lo, hi)` power-of-two rank `new` owns before step `k`.
pub(crate) fn region_at(new: usize, k: u32, p2: usize) -> (usize, usize) {
    let (mut lo, mut hi) = (0, p2);
    for i in 0..k {
        let mid = (lo + hi) / 2;
        if new >> i & 1 == 1 { lo = mid } else { hi = mid }
    }
    (lo, hi)
}

/// The elements of blocks `[lo, hi)` when n elements are cut into `parts` blocks.
pub(crate) fn blocks(n: usize, parts: usize, lo: usize, hi: usize) -> Region {
    let a = block(n, parts, lo);
    let b = block(n, parts, hi - 1);
    Region::vec(a.offset, b.end() - a.offset)
}

impl Algorithm for HalvingDoubling {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem) -> Vec<Program<'_>> {
        let (r, np, n) = (rank as usize, p.ranks, p.elems);
        let (role, p2, rem) = fold_role(r, np);
        let (new, steps) = match role {
            Fold::In { new } => (new, clog2(p2)),
            Fold::Out => (0, 0),
        };
        // Step k: keep the half of my blocks that bit k of my rank points to, send the other.
        let halves = move |k: u32| {
            let (lo, hi) = region_at(new, k, p2);
            let mid = (lo + hi) / 2;
            let (keep, give) = if new >> k & 1 == 0 { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
            let partner = unfold_rank(new ^ (1 << k), rem);
            (partner, blocks(n, p2, keep.0, keep.1), blocks(n, p2, give.0, give.1))
        };
        let reduce_scatter = (0..steps).flat_map(move |k| {
            let (partner, keep, give) = halves(k);
            [Op::send(partner, STEP + k, give), Op::recv_reduce(partner, STEP + k, keep), Op::WaitAll]
        });
        // The allgather retraces the steps backwards: send what I kept, receive what I gave.
        let allgather = (0..steps).rev().flat_map(move |k| {
            let (partner, keep, give) = halves(k);
            let tag = STEP + steps + k;
            [Op::send(partner, tag, keep), Op::recv_copy(partner, tag, give), Op::WaitAll]
        });
        vec![with_fold(r, np, Region::vec(0, n), reduce_scatter.chain(allgather))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((cost_model::halving_doubling(p, &cost_model::Hockney::of(m)?)?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem) -> usize {
        let (_, p2, rem) = fold_role(0, p.ranks);
        clog2(p2) as usize + usize::from(rem > 0)
    }
}
