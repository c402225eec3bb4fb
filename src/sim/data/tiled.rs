//! A full data run (every element of every rank generated, moved, reduced and checked)
//! from the log of a run's data operations, a tile of a few thousand indices at a time.
//!
//! When every operation reads the same indices it writes ([`OpLog::index_preserving`]:
//! every algorithm whose messages and local reductions keep an element at its index,
//! which is all of them but those that stage data in scratch buffers at other offsets),
//! index `i` of every buffer of every rank evolves on its own: its values depend only on
//! the inputs at `i` and on the operations that touch `i`, in their order. So the run can
//! be replayed one tile of indices at a time: generate every rank's inputs for the tile
//! and the exact reference, apply the logged operations restricted to the tile in their
//! order, check the tile. Every element goes through exactly the operations it would in
//! one pass over whole vectors, in the same order, so its final bits are the same; the
//! check's figures are maxima and a first violation by (rank, index), which do not
//! depend on the order the tiles are checked in.
//!
//! A tile of every rank's buffers ([`TILE_BYTES`]) stays in the core's cache from its
//! generation to its check, so the data never goes to memory and back, nothing the size
//! of the vectors is allocated (no page faults), and the tiles run in parallel (rayon):
//! each tile is computed by one thread, in a fixed order, so no result depends on the
//! threads.

use std::ops::Range;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::log::{Entry, OpLog, Source};
use super::reference::{
    Stats, ValsRef, accumulate_float, accumulate_int, check_input_block, check_reduced_block, finish_float, finish_int,
    verification,
};
use super::{DataConfig, Dtype, Elem, Expect, Expectations, RankGen, ReduceOp, Verification, with_dtype};
use crate::sim::op::Region;

/// Bytes of every rank's buffers one tile holds: well inside a core's L2 cache with the
/// tile's reference and messages beside it.
pub const TILE_BYTES: usize = 256 << 10;
/// The fewest indices a tile has, so that the work per logged operation stays well above
/// its fixed cost at large P.
pub const MIN_TILE: usize = 256;

/// Bytes of one entry of the check's plan: a range of a rank's vector and how it is
/// checked. The plan holds every rank's entries at once: an allgather's every non-empty
/// block on every rank, P min(P, n) of them (80 MB at 2,048 ranks and 4 KiB), which the
/// memory estimate counts ([`crate::estimate`]).
pub const PLAN_ENTRY_BYTES: usize = std::mem::size_of::<(Range<usize>, Check)>();

/// Time the threads spent in each phase of a tiled run, summed over the threads, and the
/// tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phases {
    /// Filling every rank's inputs (and, for a floating-point `avg`, premultiplying them).
    pub generate: Duration,
    /// Building the exact reference from the inputs.
    pub reference: Duration,
    /// Replaying the logged operations (the data movement and reductions of the run).
    pub replay: Duration,
    /// Checking every rank's final values.
    pub check: Duration,
    /// Tiles.
    pub tiles: usize,
    /// Indices per tile (the last may have fewer).
    pub tile_elems: usize,
}

impl Phases {
    fn add(mut self, o: Phases) -> Phases {
        self.generate += o.generate;
        self.reference += o.reference;
        self.replay += o.replay;
        self.check += o.check;
        self
    }
}

/// Generate, replay and check the full data of a run whose data operations `log`
/// recorded, tile by tile, as `cfg` says; `depth` and `expect` as for
/// [`super::Reference::check`], whose verification this is, field for field. `None` when
/// the log is not index preserving: then the run needs whole vectors
/// ([`OpLog::replay`]).
pub fn verify_log(cfg: DataConfig, log: &OpLog, depth: usize, expect: &Expectations) -> Option<(Verification, Phases)> {
    verify_log_with(cfg, log, depth, expect, None)
}

/// [`verify_log`] with tiles of `tile_elems` indices (at least 1) rather than the width
/// [`TILE_BYTES`] gives.
pub fn verify_log_with(
    cfg: DataConfig,
    log: &OpLog,
    depth: usize,
    expect: &Expectations,
    tile_elems: Option<usize>,
) -> Option<(Verification, Phases)> {
    if !log.index_preserving() {
        return None;
    }
    Some(with_dtype!(cfg.dtype, T => run::<T>(cfg, log, depth, expect, tile_elems)))
}

/// How one rank's range of the vector is checked.
#[derive(Clone, Debug)]
enum Check {
    /// Against the reference (the first rank with this range).
    Reduced,
    /// Bit for bit against rank `rep`, which is checked over the same range; checked
    /// against the reference only where it differs, and then flag `flag` is set.
    Same { rep: usize, flag: usize },
    /// Bit for bit against rank `.0`'s input.
    Input(usize),
}

/// Every rank's checks (rank by rank, each a range of the vector and how it is checked).
type Plan = Vec<Vec<(Range<usize>, Check)>>;

/// Every rank's checks, in rank order, and the number of flags.
fn plan(ranks: usize, expect: &Expectations) -> (Plan, usize) {
    let mut reps: Vec<(Range<usize>, usize)> = Vec::new();
    let mut flags = 0;
    let whole = [super::Expectation { range: 0..usize::MAX, expect: Expect::Reduced }];
    let plan = (0..ranks)
        .map(|r| {
            let list: &[super::Expectation] = match expect {
                Expectations::Allreduce => &whole,
                Expectations::Same(list) => list,
                Expectations::PerRank(per) => per.get(r).map_or(&[], Vec::as_slice),
            };
            list.iter()
                .map(|e| {
                    let check = match e.expect {
                        Expect::Reduced => match reps.iter().find(|(range, _)| *range == e.range) {
                            Some(&(_, rep)) => {
                                flags += 1;
                                Check::Same { rep, flag: flags - 1 }
                            }
                            None => {
                                reps.push((e.range.clone(), r));
                                Check::Reduced
                            }
                        },
                        Expect::Input(s) => Check::Input(s),
                    };
                    (e.range.clone(), check)
                })
                .collect()
        })
        .collect();
    (plan, flags)
}

/// What the check of some tiles found.
struct Part {
    stats: Stats,
    /// Which [`Check::Same`] ranges differed from their rank's representative.
    flags: Vec<bool>,
    phases: Phases,
}

impl Part {
    fn new(flags: usize) -> Part {
        Part { stats: Stats::default(), flags: vec![false; flags], phases: Phases::default() }
    }

    fn merge(mut self, o: Part) -> Part {
        self.stats = self.stats.merge(o.stats);
        self.flags.iter_mut().zip(&o.flags).for_each(|(a, b)| *a |= b);
        self.phases = self.phases.add(o.phases);
        self
    }
}

/// A thread's buffers, kept from tile to tile.
struct Work<T> {
    /// Every rank's buffers for the tile: rank-major, then buffer, then index.
    data: Vec<T>,
    /// Copies of messages whose region was overwritten while they were in flight.
    slots: Vec<Vec<T>>,
    hi: Vec<f64>,
    lo: Vec<f64>,
    aux: Vec<f64>,
    exact: Vec<i64>,
    /// Where each buffer starts within a rank's part of `data`, and its length.
    segs: Vec<(usize, usize)>,
}

impl<T> Default for Work<T> {
    fn default() -> Self {
        Work {
            data: Vec::new(),
            slots: Vec::new(),
            hi: Vec::new(),
            lo: Vec::new(),
            aux: Vec::new(),
            exact: Vec::new(),
            segs: Vec::new(),
        }
    }
}

/// What every tile shares.
struct Ctx<'a> {
    op: ReduceOp,
    ranks: usize,
    n: usize,
    lens: &'a [usize],
    gens: Vec<RankGen>,
    entries: &'a [Entry],
    /// Tile `t`'s entries are `index[starts[t]..starts[t + 1]]`, in log order.
    starts: Vec<usize>,
    index: Vec<u32>,
    width: usize,
    plan: Plan,
    flags: usize,
    depth: usize,
}

/// The indices an entry writes (and reads: the log is index preserving); empty for a
/// message copy that is not needed.
fn span(e: &Entry) -> Range<usize> {
    let reg = match *e {
        Entry::Snapshot { needed: false, .. } => return 0..0,
        Entry::Snapshot { reg, .. } | Entry::Consume { reg, .. } | Entry::Local { dst: reg, .. } => reg,
    };
    reg.offset..reg.end()
}

fn run<T: Elem>(
    cfg: DataConfig,
    log: &OpLog,
    depth: usize,
    expect: &Expectations,
    tile_elems: Option<usize>,
) -> (Verification, Phases) {
    let ranks = log.ranks();
    let lens = log.lens();
    let max_len = lens.iter().copied().max().unwrap_or(0);
    let per_index = (ranks * std::mem::size_of::<T>() * lens.len()).max(1);
    let width = tile_elems.unwrap_or(TILE_BYTES / per_index).max(if tile_elems.is_some() { 1 } else { MIN_TILE });
    let tiles = max_len.div_ceil(width);
    let entries = log.entries();
    // Bucket the entries by the tiles they touch (counting, then filling, in log order).
    let mut starts = vec![0usize; tiles + 1];
    for e in entries.iter() {
        let s = span(e);
        if !s.is_empty() {
            for t in s.start / width..=(s.end - 1) / width {
                starts[t + 1] += 1;
            }
        }
    }
    for t in 0..tiles {
        starts[t + 1] += starts[t];
    }
    let mut fill = starts.clone();
    let mut index = vec![0u32; starts[tiles]];
    for (i, e) in entries.iter().enumerate() {
        let s = span(e);
        if !s.is_empty() {
            for t in s.start / width..=(s.end - 1) / width {
                index[fill[t]] = i as u32;
                fill[t] += 1;
            }
        }
    }
    let (plan, flags) = plan(ranks, expect);
    let ctx = Ctx {
        op: cfg.op,
        ranks,
        n: lens[0],
        lens,
        gens: (0..ranks).map(|r| RankGen::new(cfg.init, cfg.seed, r)).collect(),
        entries: &entries,
        starts,
        index,
        width,
        plan,
        flags,
        depth,
    };
    let part = (0..tiles)
        .into_par_iter()
        .map_init(Work::<T>::default, |w, t| ctx.tile(w, t))
        .reduce(|| Part::new(flags), Part::merge);
    let bitwise = !part.flags.iter().any(|&f| f);
    let checked = ctx
        .plan
        .iter()
        .filter(|list| {
            list.iter().any(|(_, c)| match c {
                Check::Reduced | Check::Input(_) => true,
                Check::Same { flag, .. } => part.flags[*flag],
            })
        })
        .count();
    let phases = Phases { tiles, tile_elems: width, ..part.phases };
    (verification(part.stats, true, bitwise, checked), phases)
}

/// Lanes [`sum_ranks`] keeps in registers.
const LANES: usize = 8;

/// The exact sums (`hi + lo`) and `sum |x|` (`aux`) of every rank's inputs at each of the
/// `hi.len()` first indices of a tile (rank `r`'s at `data[r * stride..]`), added in rank
/// order: what `accumulate_float` gives rank after rank, with the running sums of
/// [`LANES`] indices kept in registers across the ranks instead of stored and loaded
/// again for each rank.
#[inline(always)]
fn sum_ranks<T: Elem>(data: &[T], stride: usize, ranks: usize, hi: &mut [f64], lo: &mut [f64], aux: &mut [f64]) {
    let m = hi.len();
    let whole = m - m % LANES;
    for j in (0..whole).step_by(LANES) {
        let (mut h, mut l, mut a) = ([0.0f64; LANES], [0.0f64; LANES], [0.0f64; LANES]);
        for r in 0..ranks {
            let Ok(xs) = <&[T; LANES]>::try_from(&data[r * stride + j..r * stride + j + LANES]) else { continue };
            for k in 0..LANES {
                let x = xs[k].to_f64();
                let s = h[k] + x;
                let bb = s - h[k];
                l[k] += (h[k] - (s - bb)) + (x - bb);
                h[k] = s;
                a[k] += x.abs();
            }
        }
        hi[j..j + LANES].copy_from_slice(&h);
        lo[j..j + LANES].copy_from_slice(&l);
        aux[j..j + LANES].copy_from_slice(&a);
    }
    for r in 0..ranks {
        let xs = &data[r * stride + whole..r * stride + m];
        accumulate_float(ReduceOp::Sum, xs, &mut hi[whole..], &mut lo[whole..], &mut aux[whole..]);
    }
}

impl Ctx<'_> {
    /// Tile `t`: indices `t * width ..` of every buffer; compiled for AVX2 too, and run
    /// so where the processor has it.
    fn tile<T: Elem>(&self, w: &mut Work<T>, t: usize) -> Part {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, the only feature the function is compiled for.
            return unsafe { self.tile_avx2(w, t) };
        }
        self.tile_portable(w, t)
    }

    /// [`Ctx::tile_portable`] for AVX2: its four 64-bit lanes take the generator's
    /// multiplications and the reference's additions four elements at a time. The same
    /// integer and IEEE operations (no fused multiply-add), so the same bits.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn tile_avx2<T: Elem>(&self, w: &mut Work<T>, t: usize) -> Part {
        self.tile_portable(w, t)
    }

    #[inline(always)]
    fn tile_portable<T: Elem>(&self, w: &mut Work<T>, t: usize) -> Part {
        let mut part = Part::new(self.flags);
        let (t0, t1) = (t * self.width, (t + 1) * self.width);
        w.segs.clear();
        let mut stride = 0;
        for &len in self.lens {
            let l = len.min(t1).saturating_sub(t0);
            w.segs.push((stride, l));
            stride += l;
        }
        let m = w.segs[0].1;
        // The vector's part is generated below; the scratch buffers start at zero.
        w.data.resize(self.ranks * stride, T::default());
        for r in 0..self.ranks {
            w.data[r * stride + m..(r + 1) * stride].fill(T::default());
        }

        // The inputs.
        let clock = Instant::now();
        for (r, g) in self.gens.iter().enumerate() {
            g.fill(t0, &mut w.data[r * stride..r * stride + m]);
        }
        let generated = clock.elapsed();

        // The reference, from the inputs as generated.
        let clock = Instant::now();
        let op = self.op;
        if T::FLOAT.is_some() {
            let init = match op {
                ReduceOp::Sum | ReduceOp::Avg => (0.0, 0.0),
                ReduceOp::Prod => (1.0, 1.0),
                ReduceOp::Max => (f64::NEG_INFINITY, 0.0),
                ReduceOp::Min => (f64::INFINITY, 0.0),
            };
            w.hi.clear();
            w.hi.resize(m, init.0);
            w.lo.clear();
            w.lo.resize(m, 0.0);
            w.aux.clear();
            w.aux.resize(m, init.1);
            if matches!(op, ReduceOp::Sum | ReduceOp::Avg) {
                sum_ranks(&w.data, stride, self.ranks, &mut w.hi, &mut w.lo, &mut w.aux);
            } else {
                for r in 0..self.ranks {
                    accumulate_float(op, &w.data[r * stride..r * stride + m], &mut w.hi, &mut w.lo, &mut w.aux);
                }
            }
            finish_float(op, self.ranks, &mut w.hi, &mut w.lo, &mut w.aux);
        } else {
            let init = match op {
                ReduceOp::Sum | ReduceOp::Avg => 0,
                ReduceOp::Prod => 1,
                ReduceOp::Max => i64::MIN,
                ReduceOp::Min => i64::MAX,
            };
            w.exact.clear();
            w.exact.resize(m, init);
            for r in 0..self.ranks {
                accumulate_int(op, &w.data[r * stride..r * stride + m], &mut w.exact);
            }
            finish_int::<T>(op, self.ranks, &mut w.exact);
        }
        let referenced = clock.elapsed();

        // A floating-point avg premultiplies every input by fl(1/P) (DataPlane::new).
        let clock = Instant::now();
        if op == ReduceOp::Avg && T::FLOAT.is_some() {
            let scale = T::from_real(1.0 / self.ranks as f64);
            for r in 0..self.ranks {
                w.data[r * stride..r * stride + m].iter_mut().for_each(|x| *x = T::mul(*x, scale));
            }
        }
        let generated = generated + clock.elapsed();

        // The run's operations on this tile, in their order.
        let clock = Instant::now();
        for &i in &self.index[self.starts[t]..self.starts[t + 1]] {
            self.apply(w, stride, t0, t1, &self.entries[i as usize]);
        }
        // An integer avg divides every result by P (DataPlane::into_finals).
        if op == ReduceOp::Avg && T::FLOAT.is_none() {
            let np = self.ranks as i64;
            for r in 0..self.ranks {
                w.data[r * stride..r * stride + m].iter_mut().for_each(|x| *x = T::from_i64(x.to_i64() / np));
            }
        }
        let replayed = clock.elapsed();

        // The check.
        let clock = Instant::now();
        let vec_of = |r: usize| &w.data[r * stride..r * stride + m];
        for (r, list) in self.plan.iter().enumerate() {
            for (range, check) in list {
                let ks = range.start.max(t0)..range.end.min(t0 + m).min(self.n);
                if ks.is_empty() {
                    continue;
                }
                let local = ks.start - t0..ks.end - t0;
                let got = &vec_of(r)[local.clone()];
                let index = |j: usize| ks.start + j;
                let stats = match *check {
                    Check::Reduced => self.check_reduced(w, got, local, r, index),
                    Check::Same { rep, flag } => {
                        if T::bitwise_eq(&vec_of(rep)[local.clone()], got) {
                            continue;
                        }
                        part.flags[flag] = true;
                        self.check_reduced(w, got, local, r, index)
                    }
                    Check::Input(s) => check_input_block(got, r, index, |j| self.gens[s].at(ks.start + j)),
                };
                part.stats = std::mem::take(&mut part.stats).merge(stats);
            }
        }
        let checked = clock.elapsed();
        part.phases = Phases {
            generate: generated,
            reference: referenced,
            replay: replayed,
            check: checked,
            ..Phases::default()
        };
        part
    }

    fn check_reduced<T: Elem>(
        &self,
        w: &Work<T>,
        got: &[T],
        local: Range<usize>,
        rank: usize,
        index: impl Fn(usize) -> usize,
    ) -> Stats {
        let vals = if T::FLOAT.is_some() {
            ValsRef::Float { hi: &w.hi[local.clone()], lo: &w.lo[local.clone()], aux: &w.aux[local] }
        } else {
            ValsRef::Int(&w.exact[local])
        };
        check_reduced_block(self.op, self.ranks, self.depth, vals, got, rank, index)
    }

    /// Apply one logged operation to the indices `t0..t1` of the tile in `w`.
    fn apply<T: Elem>(&self, w: &mut Work<T>, stride: usize, t0: usize, t1: usize, e: &Entry) {
        let at = |segs: &[(usize, usize)], rank: u32, reg: Region, i: usize| {
            rank as usize * stride + segs[reg.buf as usize].0 + (i - t0)
        };
        let clip = |reg: Region| reg.offset.max(t0)..reg.end().min(t1);
        match *e {
            Entry::Snapshot { needed: false, .. } => {}
            Entry::Snapshot { slot, rank, reg, needed: true } => {
                let c = clip(reg);
                let from = at(&w.segs, rank, reg, c.start);
                if w.slots.len() <= slot as usize {
                    w.slots.resize_with(slot as usize + 1, Vec::new);
                }
                let s = &mut w.slots[slot as usize];
                s.clear();
                s.extend_from_slice(&w.data[from..from + c.len()]);
            }
            Entry::Consume { rank, reg, reduce, src } => {
                let c = clip(reg);
                let to = at(&w.segs, rank, reg, c.start);
                let len = c.len();
                match src {
                    Source::Slot(s) => {
                        let vals = &w.slots[s as usize];
                        let dst = &mut w.data[to..to + len];
                        if reduce {
                            T::reduce_slice(self.op, dst, vals);
                        } else {
                            dst.copy_from_slice(vals);
                        }
                    }
                    Source::Direct { rank: from_rank, reg: from_reg } => {
                        // Another rank's part of the tile: disjoint from the destination.
                        let from = at(&w.segs, from_rank, from_reg, c.start);
                        let (dst, vals) = if to < from {
                            let (a, b) = w.data.split_at_mut(from);
                            (&mut a[to..to + len], &b[..len])
                        } else {
                            let (a, b) = w.data.split_at_mut(to);
                            (&mut b[..len], &a[from..from + len])
                        };
                        if reduce {
                            T::reduce_slice(self.op, dst, vals);
                        } else {
                            dst.copy_from_slice(vals);
                        }
                    }
                }
            }
            Entry::Local { rank, src, dst } => {
                let c = clip(dst);
                let (to, from, len) = (at(&w.segs, rank, dst, c.start), at(&w.segs, rank, src, c.start), c.len());
                if src.buf == dst.buf {
                    // The same indices of the same buffer: each element with itself.
                    for x in &mut w.data[to..to + len] {
                        *x = T::combine(self.op, *x, *x);
                    }
                } else if to < from {
                    let (a, b) = w.data.split_at_mut(from);
                    T::reduce_slice(self.op, &mut a[to..to + len], &b[..len]);
                } else {
                    let (a, b) = w.data.split_at_mut(to);
                    T::reduce_slice(self.op, &mut b[..len], &a[from..from + len]);
                }
            }
        }
    }
}
