//! The data plane: every rank's real vector and scratch buffers, the reduction
//! operator, seeded inputs and the check against the exact result.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::op::{BufId, Region};

/// The reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// Addition: rounding error grows with the depth of the reduction tree.
    Sum,
    /// Maximum: exact in any order.
    Max,
    /// Minimum: exact in any order.
    Min,
}

impl ReduceOp {
    #[inline]
    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Max => a.max(b),
            ReduceOp::Min => a.min(b),
        }
    }
}

/// How each rank's vector is filled before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// Uniform in [-1, 1), from ChaCha8 seeded by the scenario seed, stream = rank.
    Random,
    /// Every element of rank r is `r + 1`: sums are small integers, exact in f32.
    Rank,
    /// Every element is 1.
    Ones,
}

/// The values rank `rank` starts with.
///
/// `Random` turns each raw ChaCha8 `u32` into `f32` by our own formula (top 24 bits,
/// scaled to [-1, 1)), so the values depend only on the ChaCha8 stream, which is fixed
/// by its specification, and never on a crate's float-sampling code.
pub fn initial_values(init: Init, seed: u64, rank: usize, n: usize) -> Vec<f32> {
    match init {
        Init::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(rank as u64);
            (0..n).map(|_| unit_f32(rng.next_u32())).collect()
        }
        Init::Rank => vec![(rank + 1) as f32; n],
        Init::Ones => vec![1.0; n],
    }
}

/// A raw ChaCha8 word as a value in [-1, 1): its top 24 bits, scaled.
fn unit_f32(x: u32) -> f32 {
    (x >> 8) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0
}

/// The values rank `rank` starts with at `positions` (ascending): the elements at those
/// indices of [`initial_values`]`(init, seed, rank, n)`, computed without the others
/// (ChaCha8 seeks to a word in constant time).
pub fn initial_values_at(init: Init, seed: u64, rank: usize, positions: &[usize]) -> Vec<f32> {
    match init {
        Init::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(rank as u64);
            positions
                .iter()
                .map(|&i| {
                    rng.set_word_pos(i as u128);
                    unit_f32(rng.next_u32())
                })
                .collect()
        }
        Init::Rank => vec![(rank + 1) as f32; positions.len()],
        Init::Ones => vec![1.0; positions.len()],
    }
}

/// Points on a grid of this many per vector in [`sample_positions`].
pub const SAMPLE_GRID: usize = 1024;

/// The elements a sampled run tracks in a vector of `n`: every element when `n` is at
/// most `3 SAMPLE_GRID`, else the first and the last, and each point `j n / SAMPLE_GRID`
/// of an even grid with its two neighbours, so that the blocks and chunks of every
/// algorithm are hit, at their boundaries too when P divides the grid. Ascending.
pub fn sample_positions(n: usize) -> Vec<usize> {
    if n <= 3 * SAMPLE_GRID {
        return (0..n).collect();
    }
    let mut at: Vec<usize> = (0..SAMPLE_GRID)
        .flat_map(|j| {
            let p = (j as u128 * n as u128 / SAMPLE_GRID as u128) as usize;
            [p.saturating_sub(1), p, p + 1]
        })
        .chain([n - 1])
        .collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// The data a message carries: its region's values, or, in a sampled plane, the values
/// of the tracked elements of its region with their offsets into it.
#[derive(Clone, Debug, Default)]
pub struct Payload {
    vals: Vec<f32>,
    /// Offsets into the region of `vals` (sampled planes only; empty when dense).
    at: Vec<usize>,
}

/// One buffer of a sampled plane: its tracked elements, `(index, value)`, ascending.
type Sparse = Vec<(usize, f32)>;

enum Store {
    /// Every element of every buffer.
    Dense(Vec<Vec<Vec<f32>>>),
    /// The tracked elements only; `lens` are the buffers' lengths, `positions` the
    /// vector's tracked elements.
    Sampled { bufs: Vec<Vec<Sparse>>, lens: Vec<usize>, positions: Vec<usize> },
}

/// Every rank's buffers: index 0 is the vector, `1..` the scratch buffers.
///
/// A *sampled* plane ([`DataPlane::sampled`]) holds only some elements of each vector and
/// whatever of them the algorithm moves into scratch. Allreduce never moves an element
/// to another index of a vector, and every operation is element by element, so a tracked
/// element goes through exactly the floating-point operations it would in a full run, in
/// the same order: its final value is bit for bit the same. An operation that would
/// combine a tracked element with one that is not (which no correct algorithm does)
/// yields NaN, so that the check fails rather than pass unseen.
pub struct DataPlane {
    store: Store,
    op: ReduceOp,
}

impl DataPlane {
    /// Ranks start with `vectors[r]` and zeroed scratch buffers of `scratch[i]` elements.
    pub fn new(vectors: Vec<Vec<f32>>, scratch: &[usize], op: ReduceOp) -> Self {
        let bufs = vectors
            .into_iter()
            .map(|v| std::iter::once(v).chain(scratch.iter().map(|&s| vec![0.0; s])).collect())
            .collect();
        DataPlane { store: Store::Dense(bufs), op }
    }

    /// Ranks start with vectors of `n` elements of which only those at `positions`
    /// (ascending) are tracked, with values `values[r]`, and zeroed scratch buffers of
    /// `scratch[i]` elements.
    pub fn sampled(n: usize, positions: Vec<usize>, values: Vec<Vec<f32>>, scratch: &[usize], op: ReduceOp) -> Self {
        debug_assert!(positions.windows(2).all(|w| w[0] < w[1]) && positions.last().is_none_or(|&l| l < n));
        let bufs = values
            .into_iter()
            .map(|v| {
                let vector: Sparse = positions.iter().copied().zip(v).collect();
                std::iter::once(vector).chain(scratch.iter().map(|_| Vec::new())).collect()
            })
            .collect();
        let lens = std::iter::once(n).chain(scratch.iter().copied()).collect();
        DataPlane { store: Store::Sampled { bufs, lens, positions }, op }
    }

    /// Elements in buffer `buf` of `rank` (0 if it does not exist).
    pub fn buf_len(&self, rank: usize, buf: BufId) -> usize {
        match &self.store {
            Store::Dense(bufs) => bufs[rank].get(buf as usize).map_or(0, Vec::len),
            Store::Sampled { lens, .. } => lens.get(buf as usize).copied().unwrap_or(0),
        }
    }

    /// The tracked elements of `reg` in a sampled buffer: the range of `buf` they fill.
    fn span(buf: &Sparse, reg: Region) -> std::ops::Range<usize> {
        buf.partition_point(|e| e.0 < reg.offset)..buf.partition_point(|e| e.0 < reg.end())
    }

    /// Put the data of `reg` of `rank` in `out`.
    pub fn load(&self, rank: usize, reg: Region, out: &mut Payload) {
        out.vals.clear();
        out.at.clear();
        match &self.store {
            Store::Dense(bufs) => out.vals.extend_from_slice(&bufs[rank][reg.buf as usize][reg.offset..reg.end()]),
            Store::Sampled { bufs, .. } => {
                let b = &bufs[rank][reg.buf as usize];
                for &(i, v) in &b[Self::span(b, reg)] {
                    out.at.push(i - reg.offset);
                    out.vals.push(v);
                }
            }
        }
    }

    /// `reg = data`: a copy (what `reg` held is overwritten).
    pub fn store(&mut self, rank: usize, reg: Region, data: &Payload) {
        match &mut self.store {
            Store::Dense(bufs) => bufs[rank][reg.buf as usize][reg.offset..reg.end()].copy_from_slice(&data.vals),
            Store::Sampled { bufs, .. } => {
                let b = &mut bufs[rank][reg.buf as usize];
                let span = Self::span(b, reg);
                let incoming = data.at.iter().zip(&data.vals).map(|(&o, &v)| (reg.offset + o, v));
                if span.len() == data.at.len()
                    && b[span.clone()].iter().zip(&data.at).all(|(e, &o)| e.0 == reg.offset + o)
                {
                    b[span].iter_mut().zip(incoming).for_each(|(e, x)| *e = x);
                } else {
                    b.splice(span, incoming);
                }
            }
        }
    }

    /// `reg = reg (op) data`.
    pub fn reduce_into(&mut self, rank: usize, reg: Region, data: &Payload) {
        let op = self.op;
        match &mut self.store {
            Store::Dense(bufs) => {
                let dst = &mut bufs[rank][reg.buf as usize][reg.offset..reg.end()];
                match op {
                    // The common case gets a loop the compiler vectorises.
                    ReduceOp::Sum => dst.iter_mut().zip(&data.vals).for_each(|(d, s)| *d += *s),
                    _ => dst.iter_mut().zip(&data.vals).for_each(|(d, s)| *d = op.apply(*d, *s)),
                }
            }
            Store::Sampled { bufs, .. } => {
                let b = &mut bufs[rank][reg.buf as usize];
                let span = Self::span(b, reg);
                // Merge the two ascending lists: an element on one side only meets an
                // untracked one (NaN), except in scratch never written, which holds 0.
                let scratch = reg.buf != super::op::VEC;
                let mut merged: Sparse = Vec::with_capacity(span.len().max(data.at.len()));
                let (mut old, mut new) = (b[span.clone()].iter().peekable(), data.at.iter().zip(&data.vals).peekable());
                loop {
                    let next = match (old.peek(), new.peek()) {
                        (None, None) => break,
                        (Some(&&(i, d)), Some(&(&o, &v))) if i == reg.offset + o => {
                            old.next();
                            new.next();
                            (i, op.apply(d, v))
                        }
                        (Some(&&(i, _)), Some(&(&o, _))) if i < reg.offset + o => {
                            old.next();
                            (i, f32::NAN)
                        }
                        (Some(&&(i, _)), None) => {
                            old.next();
                            (i, f32::NAN)
                        }
                        (_, Some(&(&o, &v))) => {
                            new.next();
                            (reg.offset + o, if scratch { op.apply(0.0, v) } else { f32::NAN })
                        }
                    };
                    merged.push(next);
                }
                b.splice(span, merged);
            }
        }
    }

    /// `dst = dst (op) src`, both regions of `rank`.
    pub fn reduce_local(&mut self, rank: usize, src: Region, dst: Region) {
        let op = self.op;
        let bufs = match &mut self.store {
            Store::Dense(bufs) => &mut bufs[rank],
            Store::Sampled { .. } => {
                let mut data = Payload::default();
                self.load(rank, src, &mut data);
                return self.reduce_into(rank, dst, &data);
            }
        };
        if src.buf != dst.buf {
            let (s, d) = if src.buf < dst.buf {
                let (lo, hi) = bufs.split_at_mut(dst.buf as usize);
                (&lo[src.buf as usize], &mut hi[0])
            } else {
                let (lo, hi) = bufs.split_at_mut(src.buf as usize);
                (&hi[0], &mut lo[dst.buf as usize])
            };
            let d = &mut d[dst.offset..dst.end()];
            d.iter_mut().zip(&s[src.offset..src.end()]).for_each(|(d, s)| *d = op.apply(*d, *s));
        } else {
            let b = &mut bufs[dst.buf as usize];
            for i in 0..dst.len {
                b[dst.offset + i] = op.apply(b[dst.offset + i], b[src.offset + i]);
            }
        }
    }

    /// The ranks' vectors after the run; in a sampled plane the tracked elements only,
    /// in the order of their positions (NaN for one the run lost track of).
    pub fn into_vectors(self) -> Vec<Vec<f32>> {
        match self.store {
            Store::Dense(bufs) => bufs.into_iter().map(|mut b| b.swap_remove(0)).collect(),
            Store::Sampled { bufs, positions, .. } => bufs
                .into_iter()
                .map(|b| {
                    let v = &b[0];
                    let mut k = 0;
                    positions
                        .iter()
                        .map(|&i| {
                            while k < v.len() && v[k].0 < i {
                                k += 1;
                            }
                            if k < v.len() && v[k].0 == i { v[k].1 } else { f32::NAN }
                        })
                        .collect()
                })
                .collect(),
        }
    }
}

/// What the check of the final vectors found.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    /// Largest `|result - exact|` over every element of every rank.
    pub max_abs_error: f64,
    /// Largest per-element error bound (the bound is checked element by element).
    pub error_bound: f64,
    /// Every element of every rank within its bound.
    pub verified: bool,
    /// All ranks hold bit-identical vectors.
    pub ranks_bitwise_equal: bool,
    /// The first element found outside its bound: (rank, index, got, exact, bound).
    pub first_violation: Option<(usize, usize, f32, f64, f64)>,
}

/// The unit roundoff of f32.
pub const F32_UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;

/// The exact reduction of every rank's input, kept so the inputs themselves can be
/// handed to the run (memory: two f64 per element, not P copies).
pub struct Reference {
    op: ReduceOp,
    exact: Vec<f64>,
    abs_sum: Vec<f64>,
}

impl Reference {
    /// The exact result of reducing `inputs` element by element.
    ///
    /// Sums are taken in f64: every f32 is exact in f64 and a sum of up to 2^29 f32
    /// values of magnitude <= 1 keeps an error far below the f32 bound it is compared to.
    pub fn new(inputs: &[Vec<f32>], op: ReduceOp) -> Self {
        let n = inputs.first().map_or(0, Vec::len);
        let (mut exact, mut abs_sum) = (vec![0.0f64; n], vec![0.0f64; n]);
        match op {
            ReduceOp::Sum => {
                for v in inputs {
                    for ((e, a), &x) in exact.iter_mut().zip(&mut abs_sum).zip(v) {
                        *e += x as f64;
                        *a += (x as f64).abs();
                    }
                }
            }
            ReduceOp::Max | ReduceOp::Min => {
                exact.fill(if op == ReduceOp::Max { f64::NEG_INFINITY } else { f64::INFINITY });
                for v in inputs {
                    for (e, &x) in exact.iter_mut().zip(v) {
                        *e = if op == ReduceOp::Max { e.max(x as f64) } else { e.min(x as f64) };
                    }
                }
            }
        }
        Reference { op, exact, abs_sum }
    }

    /// Check every element of every rank's `results` against the reduction (an
    /// allreduce's result): [`super::expect::check`] with every element of every rank
    /// expected to hold it.
    pub fn check(&self, results: &[Vec<f32>], depth: usize) -> Verification {
        let n = self.exact.len();
        let all = move |_| vec![(0..n, super::expect::Expect::Reduced)];
        super::expect::check(self, results, depth, all, |_, _| f32::NAN)
    }

    /// The exact result at element `i` and the error allowed there after at most `depth`
    /// rounded operations in sequence.
    ///
    /// For a sum, Higham's bound for any summation tree:
    /// `|fl(s) - s| <= gamma(depth) * sum |x_i|`, `gamma(d) = d u / (1 - d u)`,
    /// `u = 2^-24`. Max and min are exact in any order.
    pub fn allowed(&self, i: usize, depth: usize) -> (f64, f64) {
        let du = depth as f64 * F32_UNIT_ROUNDOFF;
        let gamma = if self.op == ReduceOp::Sum { du / (1.0 - du) } else { 0.0 };
        (self.exact[i], gamma * self.abs_sum[i])
    }
}
