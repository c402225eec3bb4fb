//! Recursive halving and doubling (Rabenseifner; Thakur et al. 2005; Gloo
//! `allreduce_halving_doubling`): a reduce-scatter in log2 P steps, partners at distance
//! 1, 2, 4, ... swapping halves of what they still own, then the mirror-image allgather.
//! Gloo's `allreduce_halving_doubling`; the survey's recursive halving and doubling.
//!
//! For P not a power of two, the fold of [`super::butterfly`] by default: the extra
//! ranks hand their vector to a partner first and get the result back at the end.
//! `nonpow2: binary_blocks` is Gloo's way instead (Thakur et al. 2005): P is cut into
//! blocks of powers of two, largest first (12 = 8 + 4); each block reduce-scatters
//! inside itself; each block hands its pieces up to the next larger block, which adds
//! them in, so the largest block ends with the whole reduce-scatter; the results go
//! back down block by block, and each block allgathers inside itself.

use super::butterfly::{Fold, FoldPlan, fold_role, unfold_rank, with_fold};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block, clog2};
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "halving_doubling",
    summary: "recursive-halving reduce-scatter + recursive-doubling allgather; non-powers of two by the fold",
    source: "Gloo allreduce_halving_doubling; survey (recursive halving and doubling); Thakur et al. 2005",
    requires: "any P >= 1, any n",
    closed_form: "P a power of two dividing n: 2 log2(P) alpha + 2 (P-1)/P S/B + (P-1)/P S C; \
                  otherwise (P not dividing n, or the fold for P not a power of two) the step recurrence of its \
                  fold, halving, doubling and unfold steps, taken together where a rank runs ahead (cost_model::sweep)",
    params: &["nonpow2=fold: P not a power of two by the fold (MPICH) or binary_blocks (Gloo)"],
    build: |params| {
        let blocks = params.choice("nonpow2", &["fold", "binary_blocks"])? == "binary_blocks";
        Ok(Box::new(HalvingDoubling { binary_blocks: blocks }))
    },
};

/// See the module docs.
#[derive(Debug)]
pub struct HalvingDoubling {
    /// Gloo's binary blocks instead of the fold for P not a power of two.
    pub binary_blocks: bool,
}

/// Tags of the binary blocks' hand-up and hand-down between blocks; the allgather's
/// tags start at `STEP + AG`.
const UP: u32 = 0;
const DOWN: u32 = 1;
const AG: u32 = 64;

/// `i` with its lowest `bits` bits reversed.
fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }
}

/// P cut into power-of-two blocks, largest first: `(first rank, size)` of each.
/// A fixed array (at most one block per bit), so programs can copy it freely.
#[derive(Clone, Copy, Debug)]
struct Blocks {
    list: [(usize, usize); usize::BITS as usize],
    len: usize,
}

impl std::ops::Index<usize> for Blocks {
    type Output = (usize, usize);
    fn index(&self, i: usize) -> &(usize, usize) {
        &self.list[..self.len][i]
    }
}

impl Blocks {
    fn get(&self, i: usize) -> Option<&(usize, usize)> {
        self.list[..self.len].get(i)
    }
    fn iter(&self) -> impl Iterator<Item = &(usize, usize)> {
        self.list[..self.len].iter()
    }
}

fn binary_blocks(np: usize) -> Blocks {
    let mut out = Blocks { list: [(0, 0); usize::BITS as usize], len: 0 };
    let mut start = 0;
    for bit in (0..usize::BITS).rev() {
        if np >> bit & 1 == 1 {
            out.list[out.len] = (start, 1 << bit);
            out.len += 1;
            start += 1 << bit;
        }
    }
    out
}

/// Rank r's program under binary blocks. Every block cuts the vector into the same
/// `fine` pieces (the largest block's size), so a smaller block's piece is a run of a
/// larger block's pieces and they nest exactly, whatever n is.
fn binary_blocks_program(r: usize, np: usize, n: usize) -> Program<'static> {
    let blocks = binary_blocks(np);
    let b = blocks.iter().position(|&(start, size)| r < start + size).unwrap_or(0);
    let (start, size) = blocks[b];
    let fine = blocks[0].1;
    let j = r - start;
    // The fine pieces `[lo, hi)` rank `j` of a block of `size` owns after its reduce-scatter.
    let mine = owned_after(j, size, fine);
    let region = move |(lo, hi): (usize, usize)| self::blocks(n, fine, lo, hi);
    // Inside the block: recursive halving, in units of fine pieces.
    let peer = move |i: usize| (start + i) as Rank;
    let reduce_scatter = phase(Half::ReduceScatter, j, size, fine, n, peer);
    // The rank of `blocks[c]` whose pieces contain fine piece `f`.
    let holder = move |c: usize, f: usize| {
        let (s0, sz) = blocks[c];
        (s0 + bitrev(f / (fine / sz), sz.trailing_zeros())) as Rank
    };
    let smaller = blocks.get(b + 1).is_some();
    let larger = b > 0;
    // Up: add in the smaller block's partial sum of my pieces, then hand mine up to the
    // ranks of the larger block that own parts of them.
    let up_in = smaller.then(|| [Op::recv_reduce(holder(b + 1, mine.0), UP, region(mine)), Op::WaitAll]);
    let larger_w = if larger { fine / blocks[b - 1].1 } else { 1 };
    let parts = move || (mine.0..mine.1).step_by(larger_w).map(move |f| (f, f + larger_w));
    let up_out = larger.then(|| parts().map(move |piece| Op::send(holder(b - 1, piece.0), UP, region(piece))));
    // Down: the finished pieces come back from the larger block, and go on to the smaller.
    let down_in = larger.then(|| {
        parts().map(move |piece| Op::recv_copy(holder(b - 1, piece.0), DOWN, region(piece))).chain([Op::WaitAll])
    });
    let down_out = smaller.then(|| Op::send(holder(b + 1, mine.0), DOWN, region(mine)));
    // Inside the block again: recursive doubling, the mirror of the halving.
    let allgather = phase(Half::Allgather, j, size, fine, n, peer);
    Box::new(
        reduce_scatter
            .chain(up_in.into_iter().flatten())
            .chain(up_out.into_iter().flatten())
            .chain(down_in.into_iter().flatten())
            .chain(down_out)
            .chain(allgather),
    )
}

const STEP: u32 = 2;

/// What rank `j` of a power-of-two group of `size` ranks keeps and gives at halving step
/// `k`, the vector of n elements cut into `parts` blocks (a multiple of `size`, so that
/// the groups of binary blocks share one cut): `(partner index, keep, give)`.
pub(crate) fn halves(j: usize, k: u32, size: usize, parts: usize, n: usize) -> (usize, Region, Region) {
    let w = parts / size;
    let (lo, hi) = region_at(j, k, size);
    let mid = (lo + hi) / 2;
    let (keep, give) = if j >> k & 1 == 0 { ((lo, mid), (mid, hi)) } else { ((mid, hi), (lo, mid)) };
    (j ^ (1 << k), blocks(n, parts, keep.0 * w, keep.1 * w), blocks(n, parts, give.0 * w, give.1 * w))
}

/// Which half of halving-doubling [`phase`] generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Half {
    /// Recursive halving: at step k swap halves of what is still owned with member
    /// `j ^ 2^k` and add the half kept. Afterwards member j owns blocks [`owned_after`].
    ReduceScatter,
    /// Recursive doubling, the mirror image: the steps backwards, each sending what the
    /// halving kept and copying in what it gave.
    Allgather,
}

/// One half of halving-doubling for rank `j` of a power-of-two group of `size` ranks
/// (`peer(i)` is the real rank of member i), the vector of n elements cut into `parts`
/// blocks. Used by `halving_doubling` with binary blocks and by the `reduce_scatter` and
/// `allgather` collectives.
pub(crate) fn phase<F>(
    half: Half,
    j: usize,
    size: usize,
    parts: usize,
    n: usize,
    peer: F,
) -> impl Iterator<Item = Op> + Clone + Send + 'static
where
    F: Fn(usize) -> Rank + Clone + Send + 'static,
{
    per_step(0..size.trailing_zeros(), move |i| half_step(half, i, j, size, parts, n, &peer))
}

/// Both halves, the allgather after the reduce-scatter, as one program of 2 log2(size)
/// steps (one `per_step`, not two chained: a program a million ranks each hold).
fn both_halves<F>(j: usize, size: usize, parts: usize, n: usize, peer: F) -> impl Iterator<Item = Op> + Send + 'static
where
    F: Fn(usize) -> Rank + Send + 'static,
{
    // `bits` is worked out again in the step rather than kept: a word less a rank.
    per_step(0..2 * size.trailing_zeros(), move |i| {
        let bits = size.trailing_zeros();
        if i < bits {
            half_step(Half::ReduceScatter, i, j, size, parts, n, &peer)
        } else {
            half_step(Half::Allgather, i - bits, j, size, parts, n, &peer)
        }
    })
}

/// Step `i` of one half (see [`phase`]): exchange with the partner, then wait.
fn half_step(
    half: Half,
    i: u32,
    j: usize,
    size: usize,
    parts: usize,
    n: usize,
    peer: impl Fn(usize) -> Rank,
) -> [Op; 3] {
    let bits = size.trailing_zeros();
    let k = if half == Half::Allgather { bits - 1 - i } else { i };
    let (partner, keep, give) = halves(j, k, size, parts, n);
    let partner = peer(partner);
    match half {
        Half::ReduceScatter => {
            [Op::send(partner, STEP + k, give), Op::recv_reduce(partner, STEP + k, keep), Op::WaitAll]
        }
        Half::Allgather => {
            let tag = STEP + AG + k;
            [Op::send(partner, tag, keep), Op::recv_copy(partner, tag, give), Op::WaitAll]
        }
    }
}

/// The blocks `[lo, hi)` of `parts` that rank `j` of a group of `size` owns after
/// the reduce-scatter [`phase`] (and starts the allgather from): block `bitrev(j)` of
/// `size`, in units of `parts / size`.
pub(crate) fn owned_after(j: usize, size: usize, parts: usize) -> (usize, usize) {
    let w = parts / size;
    let t = bitrev(j, size.trailing_zeros());
    (t * w, (t + 1) * w)
}

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

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np, n) = (rank as usize, p.ranks, p.elems);
        if self.binary_blocks && !np.is_power_of_two() {
            return vec![binary_blocks_program(r, np, n)];
        }
        let (role, p2, rem) = fold_role(r, np);
        // A rank the fold leaves out runs no steps: a group of one.
        let (new, size) = match role {
            Fold::In { new } => (new, p2),
            Fold::Out => (0, 1),
        };
        let peer = move |i: usize| unfold_rank(i, rem);
        vec![with_fold(r, np, Region::vec(0, n), both_halves(new, size, size, n, peer))]
    }

    fn label(&self) -> String {
        if self.binary_blocks { "halving_doubling(nonpow2=binary_blocks)".into() } else { INFO.id.into() }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        if let Some(t) = halving_doubling(p, &h) {
            return Some((t, EXACT));
        }
        if self.binary_blocks && !p.ranks.is_power_of_two() {
            return None;
        }
        let plan = FoldPlan { np: p.ranks, n: p.elems, halving: true };
        Some((super::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)?, EXACT))
    }

    /// The bounds of its steps whatever order the ports serve
    /// ([`cost_model::lockstep_bounds`]): with the fold, its lockstep count is no upper
    /// bound (a folded rank's late messages can queue behind the core's); with P a power
    /// of two not dividing n, the exact forms at n rounded down and up to a multiple of P
    /// are none either (the time does not grow with n: 473 elements on 8 ranks, one NIC,
    /// took 1.709 us against 1.699 us at 480).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        cost_model::Hockney::of(m)?;
        if self.binary_blocks && !p.ranks.is_power_of_two() {
            return None;
        }
        let plan = FoldPlan { np: p.ranks, n: p.elems, halving: true };
        Some(super::stepped_bounds(&plan, m.topo, m.cost_per_byte, p.elem_bytes))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.binary_blocks && !p.ranks.is_power_of_two() {
            // The largest block's own halving, plus one addition per block handed up.
            let blocks = binary_blocks(p.ranks);
            return blocks[0].1.trailing_zeros() as usize + blocks.len - 1;
        }
        let (_, p2, rem) = fold_role(0, p.ranks);
        clog2(p2) as usize + usize::from(rem > 0)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

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
/// happens around the fold (see [`butterfly`](crate::algos::forms::butterfly)).
pub fn halving_doubling(p: &Problem, h: &Hockney) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    let even = super::pow2_floor(p.ranks) == p.ranks && p.elems.is_multiple_of(p.ranks);
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
