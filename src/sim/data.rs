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
            (0..n).map(|_| (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0).collect()
        }
        Init::Rank => vec![(rank + 1) as f32; n],
        Init::Ones => vec![1.0; n],
    }
}

/// Every rank's buffers: index 0 is the vector, `1..` the scratch buffers.
pub struct DataPlane {
    bufs: Vec<Vec<Vec<f32>>>,
    op: ReduceOp,
}

impl DataPlane {
    /// Ranks start with `vectors[r]` and zeroed scratch buffers of `scratch[i]` elements.
    pub fn new(vectors: Vec<Vec<f32>>, scratch: &[usize], op: ReduceOp) -> Self {
        let bufs = vectors
            .into_iter()
            .map(|v| std::iter::once(v).chain(scratch.iter().map(|&s| vec![0.0; s])).collect())
            .collect();
        DataPlane { bufs, op }
    }

    /// Elements in buffer `buf` of `rank` (0 if it does not exist).
    pub fn buf_len(&self, rank: usize, buf: BufId) -> usize {
        self.bufs[rank].get(buf as usize).map_or(0, Vec::len)
    }

    /// The data in `reg` of `rank`.
    pub fn region(&self, rank: usize, reg: Region) -> &[f32] {
        &self.bufs[rank][reg.buf as usize][reg.offset..reg.end()]
    }

    /// The data in `reg` of `rank`, writable.
    pub fn region_mut(&mut self, rank: usize, reg: Region) -> &mut [f32] {
        &mut self.bufs[rank][reg.buf as usize][reg.offset..reg.end()]
    }

    /// `reg = reg (op) incoming`.
    pub fn reduce_into(&mut self, rank: usize, reg: Region, incoming: &[f32]) {
        let op = self.op;
        let dst = self.region_mut(rank, reg);
        match op {
            // The common case gets a loop the compiler vectorises.
            ReduceOp::Sum => dst.iter_mut().zip(incoming).for_each(|(d, s)| *d += *s),
            _ => dst.iter_mut().zip(incoming).for_each(|(d, s)| *d = op.apply(*d, *s)),
        }
    }

    /// `dst = dst (op) src`, both regions of `rank`.
    pub fn reduce_local(&mut self, rank: usize, src: Region, dst: Region) {
        let op = self.op;
        let bufs = &mut self.bufs[rank];
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

    /// The ranks' vectors after the run.
    pub fn into_vectors(self) -> Vec<Vec<f32>> {
        self.bufs.into_iter().map(|mut b| b.swap_remove(0)).collect()
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

    /// Check every element of every rank's `results`.
    ///
    /// For a sum whose every element went through at most `depth` rounded additions in
    /// sequence, Higham's bound for any summation tree holds:
    /// `|fl(s) - s| <= gamma(depth) * sum |x_i|`, `gamma(d) = d u / (1 - d u)`,
    /// `u = 2^-24`. Max and min are exact in any order.
    pub fn check(&self, results: &[Vec<f32>], depth: usize) -> Verification {
        let du = depth as f64 * F32_UNIT_ROUNDOFF;
        let gamma = if self.op == ReduceOp::Sum { du / (1.0 - du) } else { 0.0 };
        let mut out = Verification {
            max_abs_error: 0.0,
            error_bound: 0.0,
            verified: true,
            ranks_bitwise_equal: true,
            first_violation: None,
        };
        for (i, (&exact, &abs)) in self.exact.iter().zip(&self.abs_sum).enumerate() {
            let bound = gamma * abs;
            out.error_bound = out.error_bound.max(bound);
            for (r, v) in results.iter().enumerate() {
                let got = v.get(i).copied().unwrap_or(f32::NAN);
                let err = (got as f64 - exact).abs();
                // NaN fails both comparisons: counted as an infinite error.
                if err.is_nan() || err > out.max_abs_error {
                    out.max_abs_error = if err.is_nan() { f64::INFINITY } else { err };
                }
                if err.is_nan() || err > bound {
                    out.verified = false;
                    out.first_violation.get_or_insert((r, i, got, exact, bound));
                }
            }
        }
        if let Some(first) = results.first() {
            out.ranks_bitwise_equal = results
                .iter()
                .all(|v| v.len() == first.len() && v.iter().zip(first).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        out
    }
}
