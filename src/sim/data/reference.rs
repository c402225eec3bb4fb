//! The exact result of a reduction, built while the inputs are generated, and the check
//! of a run's final vectors against it.

use std::ops::Range;

use rayon::prelude::*;

use super::plane::Finals;
use super::{DataConfig, Dtype, Elem, Init, RankGen, ReduceOp, Vectors, dispatch};

/// Elements generated, reduced or checked together: a block small enough that every
/// rank's part and the reference's stay in cache.
const BLOCK: usize = 4096;
/// Pieces the elements are cut into for the threads (fixed, so no result depends on the
/// thread count; each piece is a whole number of blocks).
const PIECES: usize = 64;

/// What one range of one rank's final vector must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The reduction of every rank's input, within the error bound.
    Reduced,
    /// Rank `.0`'s input, bit for bit.
    Input(usize),
}

/// One range of a rank's vector and what it must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    /// Elements (indices into the full vector).
    pub range: Range<usize>,
    /// What they must hold.
    pub expect: Expect,
}

/// What every rank must end with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectations {
    /// Allreduce: every rank, every element [`Expect::Reduced`].
    Allreduce,
    /// The same ranges on every rank (allgather, broadcast): one list, not P.
    Same(Vec<Expectation>),
    /// Rank by rank (index = rank), the ranges that are checked; elements in no range
    /// are not checked.
    PerRank(Vec<Vec<Expectation>>),
}

/// The first element found wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Its rank.
    pub rank: usize,
    /// Its index in the vector.
    pub index: usize,
    /// What the run left there.
    pub got: f64,
    /// What it must be (the exact reduction, or the input expected).
    pub exact: f64,
    /// The error allowed.
    pub bound: f64,
    /// A sampled run lost track of it (it met an element that is not tracked).
    pub lost: bool,
}

/// What the check of the final vectors found.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    /// Largest `|result - exact|` over every checked element.
    pub max_abs_error: f64,
    /// Normwise: `max |result - exact| / max |exact|` over the checked elements.
    pub max_rel_error: f64,
    /// Largest error in units in the last place of the exact result in the element type
    /// (integers: the error itself).
    pub max_ulp_error: f64,
    /// Largest per-element error bound (the bound is checked element by element).
    pub error_bound: f64,
    /// Every checked element within its bound (and every expected input bit for bit).
    pub verified: bool,
    /// Every rank's reduced ranges bit for bit those of the first rank checked over the
    /// same range (allreduce: all ranks hold bit-identical vectors).
    pub ranks_bitwise_equal: bool,
    /// The first element found wrong, by (rank, index).
    pub first_violation: Option<Violation>,
    /// Ranks checked element by element; the others matched a checked rank bit for bit.
    pub ranks_checked: usize,
    /// Checked elements left out of the errors: their result is inf or NaN where the
    /// exact one is finite, and the inputs' magnitudes are large enough that a partial
    /// result can pass the type's range in some order of reduction and give that inf or
    /// NaN (`check_reduced_block`).
    pub overflowed: u64,
}

/// The reduction's exact values, per tracked element.
enum Vals {
    /// Floating point: the exact value as an unevaluated sum `hi + lo` of two f64
    /// (double-double, about 106 bits), and `aux`: `sum |x|` for sum (divided by P for
    /// avg), `prod max(1, |x|)` for prod, unused for max and min.
    Float { hi: Vec<f64>, lo: Vec<f64>, aux: Vec<f64> },
    /// Integers: the exact (wrapped) result.
    Int(Vec<i64>),
}

/// Where the inputs come from, for [`Expect::Input`].
enum Source {
    Generated { init: Init, seed: u64 },
    Kept(Vectors),
}

/// The exact reduction of every rank's input, kept so the inputs themselves can be
/// handed to the run (memory: up to 24 bytes per tracked element, not P copies).
///
/// Floating-point results are exact to about 106 bits (double-double sums and
/// products: Knuth's TwoSum, Dekker's TwoProduct), so even for f64 they are within half
/// an ulp of the true result unless its condition number passes 2^50; integers are exact.
pub struct Reference {
    dtype: Dtype,
    op: ReduceOp,
    ranks: usize,
    /// The tracked elements (a sampled run); `None`: every element.
    positions: Option<Vec<usize>>,
    vals: Vals,
    source: Source,
}

/// Error-free sum: `a + b = s + e` exactly.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Dekker's split of `a` into two halves of 26 bits.
#[inline(always)]
fn split(a: f64) -> (f64, f64) {
    let c = 134_217_729.0 * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

/// Error-free product (without FMA, so the same everywhere): `a b = p + e` exactly.
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    // Dekker's split multiplies by 2^27 + 1, which overflows past about 2^996, and the
    // halves' products can pass f64's range where p is just inside it: a finite product
    // such as 170! (7.3e306) came out NaN and was then taken for an overflow. There the
    // larger factor is scaled by 2^-600 (exact), and p and its error scaled back (exact).
    const LARGE: f64 = 1e299;
    // A NaN factor or product takes the plain path too: its product is NaN either way.
    let largest = p.abs().max(a.abs()).max(b.abs());
    if largest <= LARGE || largest.is_nan() {
        return dekker(p, a, b);
    }
    if !p.is_finite() {
        return (p, 0.0);
    }
    const DOWN: f64 = f64::from_bits(423 << 52); // 2^-600
    const UP: f64 = f64::from_bits(1623 << 52); // 2^600
    let (a, b) = if a.abs() >= b.abs() { (a * DOWN, b) } else { (a, b * DOWN) };
    let (q, e) = dekker(a * b, a, b);
    (q * UP, e * UP)
}

/// Dekker's TwoProduct of `a` and `b`, whose rounded product is `p`.
#[inline(always)]
fn dekker(p: f64, a: f64, b: f64) -> (f64, f64) {
    let ((ah, al), (bh, bl)) = (split(a), split(b));
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// `2^e`, exactly, for `e <= 1023` (0 below f64's smallest subnormal, `2^-1074`).
fn pow2(e: i32) -> f64 {
    match e {
        -1022.. => f64::from_bits(((e + 1023) as u64) << 52),
        -1074..=-1023 => f64::from_bits(1u64 << (e + 1074)),
        _ => 0.0,
    }
}

/// `gamma(k) = k u / (1 - k u)`, infinite once `k u >= 1`.
fn gamma(k: usize, u: f64) -> f64 {
    let ku = k as f64 * u;
    if ku >= 1.0 { f64::INFINITY } else { ku / (1.0 - ku) }
}

/// Fill the vectors of type `T` and build their reference, in one pass ([`super::generate`]).
pub(super) fn generate<T: Elem>(
    cfg: DataConfig,
    ranks: usize,
    n: usize,
    positions: Option<Vec<usize>>,
) -> (Vectors, Reference) {
    let m = positions.as_ref().map_or(n, Vec::len);
    let piece = m.div_ceil(PIECES).div_ceil(BLOCK).max(1) * BLOCK;
    let mut vecs: Vec<Vec<T>> = (0..ranks).map(|_| vec![T::default(); m]).collect();
    let gens: Vec<RankGen> = (0..ranks).map(|r| RankGen::new(cfg.init, cfg.seed, r)).collect();
    let mut per_piece: Vec<Vec<&mut [T]>> = (0..m.div_ceil(piece)).map(|_| Vec::with_capacity(ranks)).collect();
    for v in &mut vecs {
        for (k, c) in v.chunks_mut(piece).enumerate() {
            per_piece[k].push(c);
        }
    }
    let at = positions.as_deref();
    let index = |base: usize, j: usize| at.map_or(base + j, |a| a[base + j]);
    let fill = |slice: &mut [T], g: &RankGen, base: usize| match at {
        None => g.fill(base, slice),
        Some(_) => slice.iter_mut().enumerate().for_each(|(j, x)| *x = g.at(index(base, j))),
    };
    let op = cfg.op;
    let vals = if T::FLOAT.is_some() {
        let (mut hi, mut lo, mut aux) = (vec![0.0f64; m], vec![0.0f64; m], vec![0.0f64; m]);
        per_piece
            .into_par_iter()
            .zip(hi.par_chunks_mut(piece).zip(lo.par_chunks_mut(piece)).zip(aux.par_chunks_mut(piece)))
            .enumerate()
            .for_each(|(k, (mut slices, ((hi, lo), aux)))| {
                for b in (0..hi.len()).step_by(BLOCK) {
                    let e = (b + BLOCK).min(hi.len());
                    let (hi, lo, aux) = (&mut hi[b..e], &mut lo[b..e], &mut aux[b..e]);
                    match op {
                        ReduceOp::Sum | ReduceOp::Avg => {}
                        ReduceOp::Prod => {
                            hi.fill(1.0);
                            aux.fill(1.0);
                        }
                        ReduceOp::Max => hi.fill(f64::NEG_INFINITY),
                        ReduceOp::Min => hi.fill(f64::INFINITY),
                    }
                    for (slice, g) in slices.iter_mut().zip(&gens) {
                        let xs = &mut slice[b..e];
                        fill(xs, g, k * piece + b);
                        accumulate_float(op, xs, hi, lo, aux);
                    }
                }
                finish_float(op, ranks, hi, lo, aux);
            });
        Vals::Float { hi, lo, aux }
    } else {
        let mut exact = vec![0i64; m];
        per_piece.into_par_iter().zip(exact.par_chunks_mut(piece)).enumerate().for_each(|(k, (mut slices, ex))| {
            for b in (0..ex.len()).step_by(BLOCK) {
                let e = (b + BLOCK).min(ex.len());
                let ex = &mut ex[b..e];
                ex.fill(match op {
                    ReduceOp::Sum | ReduceOp::Avg => 0,
                    ReduceOp::Prod => 1,
                    ReduceOp::Max => i64::MIN,
                    ReduceOp::Min => i64::MAX,
                });
                for (slice, g) in slices.iter_mut().zip(&gens) {
                    let xs = &mut slice[b..e];
                    fill(xs, g, k * piece + b);
                    accumulate_int(op, xs, ex);
                }
            }
            finish_int::<T>(op, ranks, ex);
        });
        Vals::Int(exact)
    };
    let reference = Reference {
        dtype: T::DTYPE,
        op,
        ranks,
        positions,
        vals,
        source: Source::Generated { init: cfg.init, seed: cfg.seed },
    };
    (T::wrap(vecs), reference)
}

#[inline]
pub(super) fn accumulate_float<T: Elem>(op: ReduceOp, xs: &[T], hi: &mut [f64], lo: &mut [f64], aux: &mut [f64]) {
    let it = xs.iter().zip(hi.iter_mut()).zip(lo.iter_mut()).zip(aux.iter_mut());
    match op {
        ReduceOp::Sum | ReduceOp::Avg => it.for_each(|(((x, h), l), a)| {
            let x = x.to_f64();
            let (s, e) = two_sum(*h, x);
            *h = s;
            *l += e;
            *a += x.abs();
        }),
        ReduceOp::Prod => it.for_each(|(((x, h), l), a)| {
            let x = x.to_f64();
            let (p, e) = two_prod(*h, x);
            let e = e + *l * x;
            let s = p + e;
            if s.is_finite() {
                *l = e - (s - p);
                *h = s;
            } else {
                // Past f64's range TwoProduct's split gives inf - inf = NaN, and a NaN
                // reference made every check pass with an infinite error. A product of
                // finite factors past f64's range is past every dtype's, so it rounds to
                // the signed infinity in all of them; only a zero factor brings it back.
                // An input's own infinity (f16 `rank` past 65,504) is not such a product:
                // times 0 it is NaN in every order, as a NaN factor makes every product.
                // `l` infinite marks `h` as an input's infinity (finish_float clears it).
                let input_inf = x.is_infinite() || l.is_infinite();
                let negative = h.is_sign_negative() != x.is_sign_negative();
                let (magnitude, mark) = if h.is_nan() || x.is_nan() {
                    (f64::NAN, 0.0)
                } else if x == 0.0 || *h == 0.0 {
                    (if input_inf { f64::NAN } else { 0.0 }, 0.0)
                } else {
                    (f64::INFINITY, if input_inf { f64::INFINITY } else { 0.0 })
                };
                *h = if negative { -magnitude } else { magnitude };
                *l = mark;
            }
            *a *= x.abs().max(1.0);
        }),
        ReduceOp::Max => xs.iter().zip(hi.iter_mut()).for_each(|(x, h)| *h = h.max(x.to_f64())),
        ReduceOp::Min => xs.iter().zip(hi.iter_mut()).for_each(|(x, h)| *h = h.min(x.to_f64())),
    }
}

pub(super) fn finish_float(op: ReduceOp, ranks: usize, hi: &mut [f64], lo: &mut [f64], aux: &mut [f64]) {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => hi.iter_mut().zip(lo.iter_mut()).for_each(|(h, l)| {
            if !h.is_finite() {
                // inf - inf would make the low part NaN; an infinite value has none.
                *l = 0.0;
                return;
            }
            let s = *h + *l;
            *l -= s - *h;
            *h = s;
        }),
        ReduceOp::Avg => {
            let d = ranks as f64;
            hi.iter_mut().zip(lo.iter_mut()).zip(aux.iter_mut()).for_each(|((h, l), a)| {
                *a /= d;
                if !h.is_finite() {
                    // An infinite input (f16 `rank` past 65,504) makes the sum infinite:
                    // the remainder below would be inf - inf, a NaN reference that every
                    // result passed.
                    *l = 0.0;
                    return;
                }
                // (h + l) / d in double-double: the quotient, then the remainder's.
                let q = *h / d;
                let (p, e) = two_prod(q, d);
                let r = ((*h - p) - e + *l) / d;
                let s = q + r;
                *l = r - (s - q);
                *h = s;
            });
        }
        ReduceOp::Max | ReduceOp::Min => {}
    }
}

#[inline]
pub(super) fn accumulate_int<T: Elem>(op: ReduceOp, xs: &[T], ex: &mut [i64]) {
    let it = xs.iter().zip(ex.iter_mut());
    match op {
        ReduceOp::Sum | ReduceOp::Avg => it.for_each(|(x, e)| *e = e.wrapping_add(x.to_i64())),
        ReduceOp::Prod => it.for_each(|(x, e)| *e = e.wrapping_mul(x.to_i64())),
        ReduceOp::Max => it.for_each(|(x, e)| *e = (*e).max(x.to_i64())),
        ReduceOp::Min => it.for_each(|(x, e)| *e = (*e).min(x.to_i64())),
    }
}

pub(super) fn finish_int<T: Elem>(op: ReduceOp, ranks: usize, ex: &mut [i64]) {
    ex.iter_mut().for_each(|e| {
        let wrapped = T::from_i64(*e).to_i64();
        *e = if op == ReduceOp::Avg { wrapped / ranks as i64 } else { wrapped };
    });
}

/// What the check of some elements found (combined with [`Stats::merge`], which is
/// associative and commutative, so the threads' order does not matter).
#[derive(Clone, Debug, Default)]
pub(super) struct Stats {
    max_abs: f64,
    max_ulp: f64,
    max_exact: f64,
    max_bound: f64,
    first: Option<Violation>,
    overflowed: u64,
}

impl Stats {
    pub(super) fn merge(mut self, o: Stats) -> Stats {
        self.max_abs = self.max_abs.max(o.max_abs);
        self.max_ulp = self.max_ulp.max(o.max_ulp);
        self.max_exact = self.max_exact.max(o.max_exact);
        self.max_bound = self.max_bound.max(o.max_bound);
        self.overflowed += o.overflowed;
        self.first = match (self.first, o.first) {
            (Some(a), Some(b)) => Some(if (b.rank, b.index) < (a.rank, a.index) { b } else { a }),
            (a, b) => a.or(b),
        };
        self
    }

    fn add(&mut self, err: f64, ulp: f64, exact: f64, bound: f64, bad: impl FnOnce() -> Violation) {
        // NaN fails every comparison: counted as an infinite error.
        let err = if err.is_nan() { f64::INFINITY } else { err };
        self.max_abs = self.max_abs.max(err);
        self.max_ulp = self.max_ulp.max(if ulp.is_nan() { f64::INFINITY } else { ulp });
        self.max_exact = self.max_exact.max(exact.abs());
        self.max_bound = self.max_bound.max(bound);
        if err > bound {
            let v = bad();
            if self.first.as_ref().is_none_or(|f| (v.rank, v.index) < (f.rank, f.index)) {
                self.first = Some(v);
            }
        }
    }
}

impl Reference {
    /// The exact result of reducing `inputs` element by element (every element tracked),
    /// kept with a copy of the inputs; [`super::generate`] builds both at once instead.
    pub fn of(inputs: &Vectors, op: ReduceOp) -> Self {
        dispatch!(inputs, Vectors, v, T => Self::of_typed::<T>(v, op, inputs.clone()))
    }

    fn of_typed<T: Elem>(inputs: &[Vec<T>], op: ReduceOp, kept: Vectors) -> Self {
        let ranks = inputs.len();
        let m = inputs.first().map_or(0, Vec::len);
        let vals = if T::FLOAT.is_some() {
            let (mut hi, mut lo, mut aux) = (vec![0.0f64; m], vec![0.0f64; m], vec![0.0f64; m]);
            match op {
                ReduceOp::Prod => {
                    hi.fill(1.0);
                    aux.fill(1.0);
                }
                ReduceOp::Max => hi.fill(f64::NEG_INFINITY),
                ReduceOp::Min => hi.fill(f64::INFINITY),
                _ => {}
            }
            for v in inputs {
                accumulate_float(op, v, &mut hi, &mut lo, &mut aux);
            }
            finish_float(op, ranks, &mut hi, &mut lo, &mut aux);
            Vals::Float { hi, lo, aux }
        } else {
            let mut ex = vec![
                match op {
                    ReduceOp::Prod => 1,
                    ReduceOp::Max => i64::MIN,
                    ReduceOp::Min => i64::MAX,
                    _ => 0,
                };
                m
            ];
            for v in inputs {
                accumulate_int(op, v, &mut ex);
            }
            finish_int::<T>(op, ranks, &mut ex);
            Vals::Int(ex)
        };
        Reference { dtype: T::DTYPE, op, ranks, positions: None, vals, source: Source::Kept(kept) }
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The tracked elements (`None`: all).
    pub fn positions(&self) -> Option<&[usize]> {
        self.positions.as_deref()
    }

    /// The bytes it holds.
    pub fn memory_bytes(&self) -> u64 {
        let per = match &self.vals {
            Vals::Float { .. } => 24,
            Vals::Int(_) => 8,
        };
        (self.tracked() * per + self.positions.as_ref().map_or(0, |p| p.len() * 8)) as u64
    }

    fn tracked(&self) -> usize {
        match &self.vals {
            Vals::Float { hi, .. } => hi.len(),
            Vals::Int(v) => v.len(),
        }
    }

    /// The tracked elements `range` covers (indices into the tracked elements).
    fn tracked_range(&self, range: &Range<usize>) -> Range<usize> {
        match &self.positions {
            None => range.start.min(self.tracked())..range.end.min(self.tracked()),
            Some(at) => at.partition_point(|&i| i < range.start)..at.partition_point(|&i| i < range.end),
        }
    }

    /// The index in the vector of tracked element `k`.
    fn index(&self, k: usize) -> usize {
        self.positions.as_ref().map_or(k, |at| at[k])
    }

    /// Check the final vectors of a run whose every reduced element went through at most
    /// `depth` rounded operations in sequence, against what `expect` says each rank must
    /// hold.
    ///
    /// The a-priori bounds (Higham, *Accuracy and Stability of Numerical Algorithms*,
    /// ch. 3-4), with `u` the element type's unit roundoff, `gamma(k) = k u / (1 - k u)`
    /// and `eta` half its smallest subnormal:
    ///
    /// - sum: `|fl - s| <= gamma(depth) sum |x_i|`, for any summation tree of that height,
    ///   and `(P - 1) u sum |x_i|` for any order (Jeannerod & Rump 2013), which stays
    ///   finite where `gamma(depth)` does not (`depth u >= 1`): the smaller is used;
    /// - avg (floats): `gamma(depth + 2) sum |x_i| / P + 2 P eta`, the two extra
    ///   roundings being `fl(1/P)` and the premultiplication, `eta` its underflow (or
    ///   `(P - 1) u (1 + u)^2 + u (2 + u)` in place of `gamma(depth + 2)`, the smaller);
    /// - prod: `gamma(P - 1) |prod x_i| + 2 (P - 1) eta prod max(1, |x_i|)`: unlike a
    ///   sum's, every rounding of a product tree scales the whole result, whatever the
    ///   tree's height; where `gamma(P - 1)` is infinite, `(1 + u)^(P - 1) - 1` in its place;
    /// - max, min, and every integer operation: exact (bound 0).
    ///
    /// A rank whose reduced range is bit for bit that of a rank already checked over the
    /// same range is not checked again (allreduce: rank 0 is checked, and the others only
    /// where they differ from it), compared at memory speed instead.
    pub fn check(&self, finals: &Finals, depth: usize, expect: &Expectations) -> Verification {
        dispatch!(&finals.vectors, Vectors, v, T => self.check_typed::<T>(v, &finals.lost, depth, expect))
    }

    fn check_typed<T: Elem>(
        &self,
        results: &[Vec<T>],
        lost: &[(usize, usize)],
        depth: usize,
        expect: &Expectations,
    ) -> Verification {
        let whole = [Expectation { range: 0..usize::MAX, expect: Expect::Reduced }];
        let mut stats = Stats::default();
        let mut bitwise = true;
        let mut checked = 0;
        // The ranks checked over each range so far.
        let mut reps: Vec<(Range<usize>, usize)> = Vec::new();
        let mut verified = true;
        for (r, got) in results.iter().enumerate() {
            let list: &[Expectation] = match expect {
                Expectations::Allreduce => &whole,
                Expectations::Same(list) => list,
                Expectations::PerRank(per) => per.get(r).map_or(&[], Vec::as_slice),
            };
            let mut counted = false;
            for e in list {
                let ks = self.tracked_range(&e.range);
                let ks = ks.start.min(got.len())..ks.end.min(got.len());
                match e.expect {
                    Expect::Reduced => {
                        if let Some(&(_, rep)) = reps.iter().find(|(range, _)| *range == e.range) {
                            if par_bitwise_eq(&results[rep][ks.clone()], &got[ks.clone()]) {
                                continue;
                            }
                            bitwise = false;
                        } else {
                            reps.push((e.range.clone(), r));
                        }
                        if !counted {
                            checked += 1;
                            counted = true;
                        }
                        stats = stats.merge(self.check_reduced(r, got, ks, depth));
                    }
                    Expect::Input(s) => {
                        if !counted {
                            checked += 1;
                            counted = true;
                        }
                        stats = stats.merge(self.check_input(r, got, ks, s));
                    }
                }
            }
        }
        for &(rank, k) in lost {
            verified = false;
            let index = self.index(k);
            let v = Violation { rank, index, got: f64::NAN, exact: f64::NAN, bound: 0.0, lost: true };
            stats.max_abs = f64::INFINITY;
            stats.max_ulp = f64::INFINITY;
            if stats.first.as_ref().is_none_or(|f| (rank, index) < (f.rank, f.index)) {
                stats.first = Some(v);
            }
        }
        verification(stats, verified, bitwise, checked)
    }

    /// Rank `rank`'s tracked elements `ks` (its values `got`) against the reduction.
    fn check_reduced<T: Elem>(&self, rank: usize, got: &[T], ks: Range<usize>, depth: usize) -> Stats {
        let starts: Vec<usize> = (ks.start..ks.end).step_by(BLOCK * 4).collect();
        let at = self.positions.as_deref();
        starts
            .into_par_iter()
            .map(|s| {
                let c = s..(s + BLOCK * 4).min(ks.end);
                let vals = match &self.vals {
                    Vals::Int(exact) => ValsRef::Int(&exact[c.clone()]),
                    Vals::Float { hi, lo, aux } => {
                        ValsRef::Float { hi: &hi[c.clone()], lo: &lo[c.clone()], aux: &aux[c.clone()] }
                    }
                };
                let index = |j: usize| at.map_or(c.start + j, |a| a[c.start + j]);
                check_reduced_block(self.op, self.ranks, depth, vals, &got[c.clone()], rank, index)
            })
            .reduce(Stats::default, Stats::merge)
    }

    /// Rank `rank`'s tracked elements `ks` (its values `got`) against rank `s`'s input.
    fn check_input<T: Elem>(&self, rank: usize, got: &[T], ks: Range<usize>, s: usize) -> Stats {
        let index = |j: usize| self.index(ks.start + j);
        let got = &got[ks.clone()];
        match &self.source {
            Source::Generated { init, seed } => {
                let g = RankGen::new(*init, *seed, s);
                check_input_block(got, rank, index, |j| g.at(index(j)))
            }
            Source::Kept(v) => {
                let kept = T::unwrap(v);
                check_input_block(got, rank, index, |j| kept.map_or(T::default(), |v| v[s][ks.start + j]))
            }
        }
    }
}

/// The exact values of a run of tracked elements.
#[derive(Clone, Copy)]
pub(super) enum ValsRef<'a> {
    /// Floats: `hi + lo` and the bound's `aux` (see [`Reference`]).
    Float { hi: &'a [f64], lo: &'a [f64], aux: &'a [f64] },
    /// Integers: the exact result.
    Int(&'a [i64]),
}

/// Rank `rank`'s values `got` against the reduction's exact values `vals` (the same
/// elements), for a reduction of `ranks` inputs whose every element went through at most
/// `depth` rounded operations; `index(j)` is element `j`'s index in the vector.
pub(super) fn check_reduced_block<T: Elem>(
    op: ReduceOp,
    ranks: usize,
    depth: usize,
    vals: ValsRef<'_>,
    got: &[T],
    rank: usize,
    index: impl Fn(usize) -> usize,
) -> Stats {
    let mut st = Stats::default();
    match vals {
        ValsRef::Int(exact) => {
            for (j, (g, &e)) in got.iter().zip(exact).enumerate() {
                let g = g.to_i64();
                let err = (g as i128 - e as i128).unsigned_abs() as f64;
                st.add(err, err, e as f64, 0.0, || Violation {
                    rank,
                    index: index(j),
                    got: g as f64,
                    exact: e as f64,
                    bound: 0.0,
                    lost: false,
                });
            }
        }
        ValsRef::Float { hi, lo, aux } => {
            let (p, emin) = T::FLOAT.expect("a float reference is of a float type");
            let u = pow2(-p);
            let eta = pow2(emin - p);
            let np = ranks as f64;
            // gamma_d is infinite once d u >= 1 (2,048 f16 additions in sequence, 256 bf16),
            // where any result passed. A sum of n terms in any order is within
            // (n - 1) u sum |x_i| whatever n (Jeannerod & Rump 2013): the smaller holds. An
            // average's inputs are first rounded twice (fl(fl(1/P) x)), 2u + u^2 each.
            let n_u = (np - 1.0).max(0.0) * u;
            let g_sum = gamma(depth, u).min(n_u);
            let g_avg = gamma(depth + 2, u).min(n_u * (1.0 + u) * (1.0 + u) + u * (2.0 + u));
            // Every one of a product tree's P - 1 roundings scales the whole result.
            let (g_prod, mults) = (gamma(ranks.saturating_sub(1), u), ranks.saturating_sub(1) as f64);
            // Past k u >= 1 gamma_k is infinite (and 0 times it NaN): the relative error's
            // own bound (1 + u)^k - 1, which gamma_k only bounds from above, is finite.
            let g_prod = if g_prod.is_finite() { g_prod } else { (mults * u.ln_1p()).exp_m1() * (1.0 + 1e-9) };
            let bound = move |h: f64, a: f64| match op {
                // An infinite exact result (an input of the type's infinity: the
                // sum of an infinite |x_i| gave an infinite bound, which any result was
                // within), or a NaN one (+inf and -inf among the inputs, an input's inf
                // times 0): the result must be that infinity, or NaN.
                ReduceOp::Sum | ReduceOp::Avg | ReduceOp::Prod if !h.is_finite() => 0.0,
                ReduceOp::Sum => g_sum * a,
                ReduceOp::Avg => g_avg * a + 2.0 * np * eta,
                ReduceOp::Prod => g_prod * h.abs() + 2.0 * mults * eta * a,
                ReduceOp::Max | ReduceOp::Min => 0.0,
            };
            // Higham's bounds assume no overflow. A partial result can pass the type's
            // range in some order though the exact (finite) result does not: inf, or NaN
            // from inf - inf or inf * 0, is then what IEEE arithmetic gives in that order
            // (NCCL's and MPI's reductions give the same), not a wrong reduction. Such
            // elements are counted, not taken for errors, but only where some order can
            // give that very `got`: a rule on sum |x_i| alone also let pass a NaN of
            // positive inputs and an inf of the wrong sign, which no order gives.
            let passes = |v: f64| T::from_real(v).to_f64().is_infinite();
            let some_order_gives = move |got: f64, h: f64, a: f64| match op {
                ReduceOp::Sum | ReduceOp::Avg => {
                    // The positive inputs add up to (a + h) / 2, the negative to (a - h) / 2
                    // (an average's scaled by 1/P, as they are summed): a partial sum reaches
                    // +inf only past the first, grown by the rounding the bound allows,
                    // -inf only past the second, and NaN (inf - inf) past both.
                    let grow = if op == ReduceOp::Sum { g_sum } else { g_avg } * a;
                    let (up, down) = (passes((a + h) / 2.0 + grow), passes((a - h) / 2.0 + grow));
                    if got.is_nan() {
                        up && down
                    } else if got > 0.0 {
                        up
                    } else {
                        down
                    }
                }
                // Every partial product is within prod max(1, |x_i|), grown.
                ReduceOp::Prod if !passes(a * (1.0 + g_prod)) => false,
                // inf * 0: a partial product must also come to 0, by a zero factor (the
                // exact product is 0) or by factors below 1 whose product, |h| / a, shrunk
                // by the rounding, rounds to 0.
                ReduceOp::Prod if got.is_nan() => {
                    h == 0.0 || T::from_real(h.abs() / a / (1.0 + g_prod)).to_f64() == 0.0
                }
                // A product's sign is the parity of its factors' signs, in every order.
                ReduceOp::Prod => got.is_sign_negative() == h.is_sign_negative(),
                ReduceOp::Max | ReduceOp::Min => false,
            };
            let ulp = move |h: f64| {
                let e =
                    if h == 0.0 || !h.is_finite() { emin } else { ((h.abs().to_bits() >> 52) as i32 - 1023).max(emin) };
                pow2(e - (p - 1))
            };
            for j in 0..got.len() {
                let (g, h, l) = (got[j].to_f64(), hi[j], lo[j]);
                let err = if g.is_nan() || h.is_nan() {
                    // An exact NaN is NaN in every order: only NaN is right.
                    if g.is_nan() && h.is_nan() { 0.0 } else { f64::INFINITY }
                } else if g.is_infinite() || h.is_infinite() {
                    if T::from_real(h).to_f64() == g { 0.0 } else { f64::INFINITY }
                } else {
                    ((g - h) - l).abs()
                };
                let b = bound(h, aux[j]);
                if err > b && !g.is_finite() && h.is_finite() && some_order_gives(g, h, aux[j]) {
                    st.overflowed += 1;
                    continue;
                }
                st.add(err, err / ulp(h), h, b, || Violation {
                    rank,
                    index: index(j),
                    got: g,
                    exact: h + l,
                    bound: b,
                    lost: false,
                });
            }
        }
    }
    st
}

/// Rank `rank`'s values `got` against the inputs `want(j)` they must equal bit for bit;
/// `index(j)` is element `j`'s index in the vector.
pub(super) fn check_input_block<T: Elem>(
    got: &[T],
    rank: usize,
    index: impl Fn(usize) -> usize,
    want: impl Fn(usize) -> T,
) -> Stats {
    let mut st = Stats::default();
    for (j, &g) in got.iter().enumerate() {
        let w = want(j);
        let err = if g.bits() == w.bits() { 0.0 } else { (g.to_f64() - w.to_f64()).abs().max(f64::MIN_POSITIVE) };
        st.add(err, err, w.to_f64(), 0.0, || Violation {
            rank,
            index: index(j),
            got: g.to_f64(),
            exact: w.to_f64(),
            bound: 0.0,
            lost: false,
        });
    }
    st
}

/// The verification of a check that found `stats`, with `verified` false if something
/// else failed already (a lost element).
pub(super) fn verification(stats: Stats, verified: bool, bitwise: bool, checked: usize) -> Verification {
    let verified = verified && stats.first.is_none();
    let max_rel_error = if stats.max_abs == 0.0 { 0.0 } else { stats.max_abs / stats.max_exact };
    Verification {
        max_abs_error: stats.max_abs,
        max_rel_error,
        max_ulp_error: stats.max_ulp,
        error_bound: stats.max_bound,
        verified,
        ranks_bitwise_equal: bitwise,
        first_violation: stats.first,
        ranks_checked: checked,
        overflowed: stats.overflowed,
    }
}

/// `a` and `b` bit for bit the same, in parallel at memory speed.
fn par_bitwise_eq<T: Elem>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.par_chunks(BLOCK * 16).zip(b.par_chunks(BLOCK * 16)).all(|(x, y)| T::bitwise_eq(x, y))
}
