//! NCCL's PAT ("parallel aggregated trees", NCCL 2.23+) reduce-scatter and allgather,
//! as NCCL's `PatRSAlgorithm` / `PatAGAlgorithm` schedule them (docs/nccl.md, 'PAT').
//!
//! **The trees.** Rank x talks only to ranks `x ± 2^d`. In the reduce-scatter, block t
//! is reduced up a binomial tree rooted at rank t: the rank at *distance* `s = t - x`
//! (mod P) adds its own input to what its children sent and passes the sum on to the
//! rank at distance `s - lowbit(s)` (dimension `lowbit(s)`); its children are the ranks
//! at distances `s + 2^k` for `2^k < lowbit(s)` (every `k` for the root, while the
//! distance stays below P). Every rank sends each other rank's block exactly once, so
//! `(P-1)/P S` leaves each rank, as in the ring, but a block's path is only
//! `ceil(log2 P)` hops long. The allgather is the same trees run backwards: each block is
//! broadcast down its owner's tree.
//!
//! **The order** (one rank, one chunk): with `P'` the power of two at or above P and an
//! aggregation factor `A` (below), distances are taken in groups `s = as + j D`,
//! `D = P'/A`, `as` from `D - 1` down to 1: for odd `as` first the group's leaf sends
//! (own input, dimension 0), then for each `j` (in NCCL's mirrored order) the receive of
//! the child at distance s from dimension `lowbit(as)` into block `x + s - lowbit(as)`,
//! passing that block up as soon as its last child (dimension 0) has come in. The
//! multiples of D are the tops of the trees, done last as a recursive halving: round k
//! sends the blocks at `j D` with `lowbit(j) = 2^k` across `2^k D`. A rank waits for each
//! receive before the next step, as NCCL's single scheduling thread does.
//!
//! **Chunks and aggregation** (NCCL's `calcCollChunking` and the algorithm's
//! constructor): the chunk is 512 KiB (a Simple step), halved while
//! `chunk * channels * 16` (allgather: 32) exceeds the buffer, down to 64 KiB; a block's
//! part on a channel is worked through in chunks, the whole tree once per chunk. `A`
//! starts at 1 and doubles while a chunk holds at least two aggregated parts
//! (`chunk / (part * A) >= 2`) and `A < P/2`, then up to three more times (NCCL's 8
//! FIFO steps). Where NCCL then packs several blocks into one message (a block's part
//! well below a chunk), ours still sends each block as its own message, as a message
//! here is one contiguous region: at small sizes ours pays an alpha per block where
//! NCCL pays one per group.

use super::{AlgoInfo, Algorithm, Blocks, Machine, ParamError, Params, Problem, Topology, clog2};
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// NCCL's Simple step (`buffSizes[SIMPLE] / NCCL_STEPS` = 4 MiB / 8): PAT's largest chunk.
const STEP_BYTES: u64 = 512 << 10;
/// PAT's smallest chunk in NCCL's halving of it.
const MIN_CHUNK: u64 = 64 << 10;
/// NCCL's FIFO depth (`NCCL_STEPS`), which lets PAT aggregate further.
const NCCL_STEPS: usize = 8;

const PARAMS: &[&str] = &[
    "channels=1: channels; each moves its part of every block with its own trees",
    "chunk=NCCL's: bytes per chunk, overriding NCCL's rule (512 KiB halved while chunk x channels x 16 (allgather 32) \
     exceeds the buffer, down to 64 KiB)",
];

/// Registry entry: PAT reduce-scatter.
pub const RS_INFO: AlgoInfo = AlgoInfo {
    id: "pat",
    summary: "NCCL's PAT: each block reduced up a binomial tree to its owner over ranks +- 2^d, every rank's \
              steps in NCCL's aggregated order, chunk by chunk",
    source: "NCCL src/include/collectives.h PatRSAlgorithm, src/device/reduce_scatter.h, src/enqueue.cc \
             (chunk size); docs/nccl.md",
    requires: "any P >= 1, any n (NCCL runs it only with one GPU per node)",
    closed_form: "none here (the trees' receives wait on each other across ranks)",
    params: PARAMS,
    build: |p| build(p, true),
};

/// Registry entry: PAT allgather.
pub const AG_INFO: AlgoInfo = AlgoInfo {
    id: "pat",
    summary: "NCCL's PAT: each block broadcast down a binomial tree from its owner over ranks +- 2^d, the \
              reduce-scatter's schedule run backwards, chunk by chunk",
    source: "NCCL src/include/collectives.h PatAGAlgorithm, src/device/all_gather.h, src/enqueue.cc \
             (chunk size); docs/nccl.md",
    requires: "any P >= 1, any n (NCCL runs it only with one GPU per node)",
    closed_form: "none here (the trees' receives wait on each other across ranks)",
    params: PARAMS,
    build: |p| build(p, false),
};

fn build(p: &mut Params, reduce: bool) -> Result<Box<dyn Algorithm>, ParamError> {
    Ok(Box::new(Pat::from_params(p, reduce)?))
}

/// PAT reduce-scatter (`reduce`) or allgather; see the module docs.
#[derive(Debug)]
pub struct Pat {
    reduce: bool,
    channels: usize,
    chunk: Option<u64>,
}

/// The shape of one rank's schedule, the same on every rank (distances are relative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// P.
    np: usize,
    /// A, the aggregation factor (a power of two).
    pub(crate) agg: usize,
    /// D = P'/A.
    delta: usize,
    /// Steps per chunk.
    steps: usize,
}

/// `floor(log2)` of the lowest set bit of `s > 0`.
fn lowbit(s: usize) -> u32 {
    s.trailing_zeros()
}

/// NCCL's `mirrorInvert(a, max)`: the bits of `a` below `max` reversed and inverted.
fn mirror_invert(a: usize, max: usize) -> usize {
    let bits = max.trailing_zeros();
    if bits == 0 { 0 } else { (max - 1) - (a.reverse_bits() >> (usize::BITS - bits)) }
}

/// What one step of the reduce-scatter does, in distances from the rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send its own input of the block at distance `s` across dimension `dim` (a leaf,
    /// or a top of a tree passing its sum on).
    Send { s: usize, dim: usize },
    /// Receive the child's sum for the block at distance `s` from `-dim` and add it in;
    /// then, if `up` is set, pass the block on across dimension `up`.
    Recv { s: usize, dim: usize, up: Option<usize> },
    /// Nothing (a distance at or beyond P).
    Skip,
}

impl Shape {
    /// The shape for P ranks whose blocks' largest part on a channel is `part` bytes,
    /// with chunks of `chunk` bytes (NCCL's constructor of `PatRSAlgorithm`).
    pub(crate) fn new(np: usize, part: u64, chunk: u64) -> Shape {
        let pow2 = np.max(1).next_power_of_two();
        let mut agg = 1usize;
        while part > 0 && chunk / (part * agg as u64) >= 2 && agg < np / 2 {
            agg *= 2;
        }
        let mut d = NCCL_STEPS;
        while d > 1 && agg < np / 2 {
            d /= 2;
            agg *= 2;
        }
        let delta = pow2 / agg;
        // Low part: each odd `as` has A leaf sends and A receives, each even one A receives;
        // the tops: log2 A rounds of A / 2^(k+1) sends and as many receives, 2(A - 1) in all.
        let odd = delta / 2;
        let low = (delta - 1) * agg + odd * agg;
        let steps = if np <= 1 { 0 } else { low + 2 * (agg - 1) };
        Shape { np, agg, delta, steps }
    }

    /// Step `i` (`0 <= i < steps`) of the reduce-scatter.
    pub(crate) fn step(&self, i: usize) -> Step {
        let (np, agg, delta) = (self.np, self.agg, self.delta);
        let low = (delta - 1) * agg + (delta / 2) * agg;
        if i < low {
            // Pairs (odd as, as - 1) of 3A steps, from as = D - 1 down, then as = 1 alone.
            let (pair, rem) = (i / (3 * agg), i % (3 * agg));
            let odd_as = delta - 1 - 2 * pair;
            let (as_, a, leaf) = match rem / agg {
                0 => (odd_as, rem, true),
                1 => (odd_as, rem - agg, false),
                _ => (odd_as - 1, rem - 2 * agg, false),
            };
            let s = as_ + mirror_invert(a, agg) * delta;
            if leaf {
                return if s < np { Step::Send { s, dim: 0 } } else { Step::Skip };
            }
            let dim = lowbit(as_);
            let parent = s - (1 << dim);
            if parent >= np {
                return Step::Skip;
            }
            // The block passes up once its dimension-0 child is in, unless it is a top
            // (a multiple of D), which the rounds below pass up.
            let up = (dim == 0 && !parent.is_multiple_of(delta)).then(|| lowbit(parent) as usize);
            if s >= np {
                // No such child: a block with no children below passes its own input on.
                return match up {
                    Some(d) => Step::Send { s: parent, dim: d },
                    None => Step::Skip,
                };
            }
            return Step::Recv { s, dim: dim as usize, up };
        }
        // The tops: round k sends the blocks at j D, lowbit(j) = 2^k, across 2^k D, then
        // receives the blocks at j D whose lowbit is above 2^k (or the rank's own, j = 0).
        let mut i = i - low;
        let log_d = delta.trailing_zeros() as usize;
        let mut k = 0;
        loop {
            let half = agg >> (k + 1);
            if i < 2 * half {
                let dim = log_d + k;
                return if i < half {
                    let s = (2 * i + 1) * (delta << k);
                    if s < np { Step::Send { s, dim } } else { Step::Skip }
                } else {
                    let parent = 2 * (i - half) * (delta << k);
                    let s = parent + (delta << k);
                    if s < np { Step::Recv { s, dim, up: None } } else { Step::Skip }
                };
            }
            i -= 2 * half;
            k += 1;
        }
    }
}

impl Pat {
    /// Built from its parameters (see [`RS_INFO`]): the reduce-scatter if `reduce`, else
    /// the allgather.
    pub(crate) fn from_params(p: &mut Params, reduce: bool) -> Result<Pat, ParamError> {
        let channels = p.count("channels", 1)?;
        if channels > 64 {
            return Err(ParamError::new(Some("channels"), format!("'channels' must be 1 to 64, not {channels}")));
        }
        let chunk = p.size("chunk")?;
        Ok(Pat { reduce, channels, chunk })
    }

    /// The messages of a run on `p`, read off the schedule rather than by walking it:
    /// on every channel, each chunk of a block's part leaves every rank but the block's
    /// owner once (up its tree in the reduce-scatter; the allgather runs the same
    /// messages backwards), and a part with nothing in it still sends its first chunk.
    /// Blocks come in two lengths (`Blocks`), and so do a block's parts on the channels,
    /// so the count takes constant time at any P. `tests/estimate_counts.rs` holds it to
    /// the walked programs.
    pub(crate) fn message_count(&self, p: &Problem) -> u64 {
        let np = p.ranks;
        if np <= 1 {
            return 0;
        }
        let (chunk_elems, chunks, _) = self.plan(p);
        let per_part = |len: usize| len.div_ceil(chunk_elems).clamp(1, chunks) as u64;
        let ch = self.channels;
        let per_block = |len: usize| {
            let (q, r) = (len / ch, len % ch);
            (r as u64).saturating_mul(per_part(q + 1)).saturating_add(((ch - r) as u64).saturating_mul(per_part(q)))
        };
        let (q, r) = (p.elems / np, p.elems % np);
        let blocks =
            (r as u64).saturating_mul(per_block(q + 1)).saturating_add(((np - r) as u64).saturating_mul(per_block(q)));
        (np as u64 - 1).saturating_mul(blocks)
    }

    /// The most messages of a run on `p` issued and not yet received at once, all ranks
    /// together, read off the schedule in O(P): P ranks times, on each channel, the most
    /// a rank's sends run ahead of its receives in one chunk's steps. That bounds them
    /// whatever the timing: a rank waits for each receive before its next step, so the
    /// messages in flight are the sum over the ranks of the sends each has issued less
    /// the receives it has done, each term at most that most.
    ///
    /// Where a block's part holds chunks enough for several rounds of the trees, the
    /// leaves' sends can run ahead of their parents' receives by a whole group; where
    /// parts are small, aggregation puts up to P/2 leaves in one group and every rank
    /// issues them at once: at 4 KiB and 2,048 ranks a thousand sends a rank before its
    /// first receive, two million in all, which is why this is counted at all. A last
    /// chunk that only the longer parts reach skips some receives whose blocks pass on
    /// in the tops: the aggregation factor more a rank covers those.
    pub(crate) fn in_flight(&self, p: &Problem) -> u64 {
        let np = p.ranks;
        if np <= 1 {
            return 0;
        }
        let (chunk_elems, chunks, shape) = self.plan(p);
        let n = shape.steps;
        let (mut held, mut most) = (0i64, 0i64);
        for g in 0..n {
            let i = if self.reduce { g } else { n - 1 - g };
            // (receives, sends) of the step, in that order: the allgather runs the
            // reduce-scatter's step reversed.
            let (recv, send) = match (shape.step(i), self.reduce) {
                (Step::Skip, _) => (0, 0),
                (Step::Send { .. }, true) => (0, 1),
                (Step::Send { .. }, false) => (1, 0),
                (Step::Recv { up, .. }, true) => (1, i64::from(up.is_some())),
                (Step::Recv { up, .. }, false) => (i64::from(up.is_some()), 1),
            };
            held += send - recv;
            most = most.max(held);
        }
        let shortest = p.elems / np / self.channels;
        let partial = chunks > 1 && shortest.div_ceil(chunk_elems).max(1) < chunks;
        let per_rank = most as u64 + if partial { shape.agg as u64 } else { 0 };
        (np as u64).saturating_mul(self.channels as u64).saturating_mul(per_rank)
    }

    /// The chunk in bytes for a buffer of `bytes` (NCCL's rule, or the parameter).
    fn chunk_bytes(&self, bytes: u64) -> u64 {
        self.chunk.unwrap_or_else(|| {
            let factor = if self.reduce { 16 } else { 32 };
            let mut c = STEP_BYTES;
            while c * self.channels as u64 * factor > bytes && c > MIN_CHUNK {
                c /= 2;
            }
            c
        })
    }

    /// (chunk elements, chunks per block part, shape) for problem `p`.
    fn plan(&self, p: &Problem) -> (usize, usize, Shape) {
        let e = p.elem_bytes.max(1);
        let chunk = self.chunk_bytes(p.bytes() as u64);
        let chunk_elems = (chunk as usize / e).max(1);
        let block = p.elems.div_ceil(p.ranks.max(1));
        let part = block.div_ceil(self.channels);
        let shape = Shape::new(p.ranks, (part * e) as u64, chunk);
        (chunk_elems, part.div_ceil(chunk_elems).max(1), shape)
    }
}

impl Algorithm for Pat {
    fn id(&self) -> &'static str {
        RS_INFO.id
    }

    fn label(&self) -> String {
        let mut extra = Vec::new();
        if self.channels != 1 {
            extra.push(format!("channels={}", self.channels));
        }
        if let Some(c) = self.chunk {
            extra.push(format!("chunk={c}"));
        }
        if extra.is_empty() { RS_INFO.id.into() } else { format!("pat({})", extra.join(", ")) }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (chunk_elems, chunks, shape) = self.plan(&p);
        let (np, x, reduce) = (p.ranks, rank as usize, self.reduce);
        let blocks = Blocks::new(p.elems, np);
        let channels = self.channels;
        (0..channels)
            .map(move |c| {
                // Chunk `k` of channel c's part of block t.
                let piece = move |t: usize, k: usize| -> Region {
                    let b = blocks.get(t);
                    let part = Blocks::new(b.len, channels).get(c);
                    let lo = (k * chunk_elems).min(part.len);
                    let hi = ((k + 1) * chunk_elems).min(part.len);
                    Region::vec(b.offset + part.offset + lo, hi - lo)
                };
                // A channel's messages of block t to one peer share a tag across chunks:
                // chunk k's all come before chunk k + 1's on both sides, so they match in
                // order. Tagging every chunk apart (as once) made the channels' tag
                // ranges overlap, so the bounds recorded an owner per message (5.5 GB at
                // 64 channels of 4-byte chunks over 64 MiB), and the tags could pass
                // 2^32 with enough chunks; by channel, each channel's tags are a range of
                // their own (`c * P + t` passes 2^32 only from 2^26 ranks on 64 channels).
                let tag = move |t: usize, _k: usize| (c * np + t) as u32;
                let at = move |s: usize| (x + s) % np;
                let peer_up = move |dim: usize| ((x + (1 << dim)) % np) as Rank;
                let peer_down = move |dim: usize| ((x + np - (1 << dim)) % np) as Rank;
                let n = shape.steps;
                let total = chunks * n + 1;
                let prog = per_step(0..total, move |g| {
                    let mut ops: [Option<Op>; 3] = [None; 3];
                    if g == total - 1 {
                        ops[0] = Some(Op::WaitAll);
                        return ops.into_iter().flatten();
                    }
                    let (k, i) = (g / n, g % n);
                    // The allgather runs the reduce-scatter's steps backwards, each reversed.
                    let i = if reduce { i } else { n - 1 - i };
                    match shape.step(i) {
                        Step::Skip => {}
                        Step::Send { s, dim } => {
                            let t = at(s);
                            let r = piece(t, k);
                            if r.len > 0 || k == 0 {
                                ops[0] = Some(if reduce {
                                    Op::send(peer_up(dim), tag(t, k), r)
                                } else {
                                    Op::recv_copy(peer_up(dim), tag(t, k), r)
                                });
                                if !reduce {
                                    ops[1] = Some(Op::WaitAll);
                                }
                            }
                        }
                        Step::Recv { s, dim, up } => {
                            let t = at(s - (1 << dim));
                            let r = piece(t, k);
                            if r.len > 0 || k == 0 {
                                if reduce {
                                    ops[0] = Some(Op::recv_reduce(peer_down(dim), tag(t, k), r));
                                    ops[1] = Some(Op::WaitAll);
                                    ops[2] = up.map(|u| Op::send(peer_up(u), tag(t, k), r));
                                } else {
                                    ops[0] = up.map(|u| Op::recv_copy(peer_up(u), tag(t, k), r));
                                    ops[1] = up.map(|_| Op::WaitAll);
                                    ops[2] = Some(Op::send(peer_down(dim), tag(t, k), r));
                                }
                            }
                        }
                    }
                    ops.into_iter().flatten()
                });
                Box::new(prog) as Program<'_>
            })
            .collect()
    }

    fn closed_form(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        // A rank adds its children in turn into its own input: the root of a binomial
        // tree of height L sits L(L+1)/2 additions above its deepest leaf.
        let l = clog2(p.ranks) as usize;
        if self.reduce { l * (l + 1) / 2 } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distance's block reaches its root: the reduce-scatter's steps, replayed on
    /// sets of contributors, leave each rank with every rank's input of its own block.
    fn covers(np: usize, part: u64, chunk: u64) {
        let sh = Shape::new(np, part, chunk);
        // held[x][t]: the ranks whose input of block t rank x has summed so far.
        let mut held: Vec<Vec<Vec<bool>>> =
            (0..np).map(|x| (0..np).map(|_| (0..np).map(|r| r == x).collect()).collect()).collect();
        let mut sent = vec![vec![Vec::new(); np]; np];
        // Steps run in lockstep across ranks: every rank's step i, then i + 1, which
        // the dependencies allow as sends are eager and a receive only needs the send.
        let mut inbox: Vec<Vec<(usize, usize, Vec<bool>)>> = vec![Vec::new(); np];
        for i in 0..sh.steps {
            for x in 0..np {
                match sh.step(i) {
                    Step::Skip => {}
                    Step::Send { s, dim } => {
                        let t = (x + s) % np;
                        let to = (x + (1 << dim)) % np;
                        inbox[to].push((x, t, held[x][t].clone()));
                        sent[x][t].push(to);
                    }
                    Step::Recv { s, dim, up } => {
                        let t = (x + s - (1 << dim)) % np;
                        let from = (x + np - (1 << dim)) % np;
                        let pos = inbox[x].iter().position(|(f, b, _)| *f == from && *b == t);
                        let (_, _, got) = inbox[x].remove(pos.expect("the child sent before its parent receives"));
                        for (h, g) in held[x][t].iter_mut().zip(got) {
                            assert!(!(*h && g), "rank {x} block {t}: a contribution twice");
                            *h |= g;
                        }
                        if let Some(u) = up {
                            let to = (x + (1 << u)) % np;
                            inbox[to].push((x, t, held[x][t].clone()));
                            sent[x][t].push(to);
                        }
                    }
                }
            }
        }
        for x in 0..np {
            assert!(held[x][x].iter().all(|&h| h), "P = {np}, A = {}: rank {x} lacks some input", sh.agg);
            for (t, to) in sent[x].iter().enumerate() {
                assert_eq!(to.len(), usize::from(t != x), "P = {np}: rank {x} sent block {t} {to:?}");
            }
            assert!(inbox[x].is_empty());
        }
    }

    #[test]
    fn every_block_reaches_its_owner_once_from_each_rank() {
        for np in 1..=33 {
            for part in [1u64, 4096, 65536, 1 << 20] {
                covers(np, part, 512 << 10);
            }
        }
        covers(64, 1, 512 << 10);
    }

    #[test]
    fn aggregation_follows_nccl() {
        // A large part: only the 8 FIFO steps aggregate (A = 8 from 16 ranks on).
        assert_eq!(Shape::new(16, 1 << 20, 512 << 10).agg, 8);
        assert_eq!(Shape::new(8, 1 << 20, 512 << 10).agg, 4);
        assert_eq!(Shape::new(2, 1 << 20, 512 << 10).agg, 1);
        // 16 KiB parts in 64 KiB chunks: 2 then 4 per chunk, then 3 more doublings.
        assert_eq!(Shape::new(1024, 16 << 10, 64 << 10).agg, 32);
        assert_eq!(mirror_invert(0, 8), 7);
        assert_eq!(mirror_invert(1, 8), 3);
        assert_eq!(mirror_invert(0, 1), 0);
    }

    /// Channels tag apart (each its own range of tags), so the bounds read off the
    /// programs record no channel owners however many chunks a channel cuts its part
    /// into, and the bounds are still there.
    #[test]
    fn channels_tag_apart_and_the_bounds_record_no_owners() {
        let topo = crate::topology::FullyConnected {
            ranks: 8,
            link: crate::topology::Link { alpha: 1e-6, bandwidth: 1e10 },
            nics: 1,
        };
        for reduce in [true, false] {
            let pat = Pat { reduce, channels: 8, chunk: Some(4) };
            let p = Problem { ranks: 8, elems: 8 * 8 * 64 + 5, elem_bytes: 4 };
            let (bounds, kept) =
                crate::cost_model::bounds_holding(&*pat.prepare(&p, &topo), &p, &topo, 1e-10).expect("bounds");
            assert_eq!(kept.owners, 0, "channel owners recorded (reduce {reduce})");
            assert!(bounds.0 > 0.0 && bounds.0 <= bounds.1, "{bounds:?}");
        }
    }
}
