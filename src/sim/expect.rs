//! The check of what a collective leaves on each rank: per rank, a list of (element
//! range, expectation) ([`crate::collective::Collective::expected`]), each element held
//! to the reduction within its rounding bound ([`Expect::Reduced`]) or to one rank's
//! input bit for bit ([`Expect::InputOf`]). Elements no expectation names may hold
//! anything (a reduce-scatter's other blocks, a reduce's non-roots).

use std::ops::Range;

pub use crate::collective::Expect;

use super::data::{Reference, Verification};

/// Check `results` (one vector per rank, in the index space of `reference`: every
/// element, or the sampled ones in order) against `expected(rank)`, ranges in that
/// same index space. `input(s, i)` is rank s's input at index i, for every
/// [`Expect::InputOf`] the expectations name. `depth` is the algorithm's reduction
/// depth, which sets the rounding bound of [`Expect::Reduced`] elements.
///
/// `ranks_bitwise_equal` then says that ranks expected to hold the same thing hold the
/// same bits: every rank expected to hold the reduction at an index holds the same bits
/// there (an input expected bit for bit is checked against the input itself).
pub fn check(
    reference: &Reference,
    results: &[Vec<f32>],
    depth: usize,
    expected: impl Fn(usize) -> Vec<(Range<usize>, Expect)>,
    input: impl Fn(usize, usize) -> f32,
) -> Verification {
    let mut out = Verification {
        max_abs_error: 0.0,
        error_bound: 0.0,
        verified: true,
        ranks_bitwise_equal: true,
        first_violation: None,
    };
    // The bits of the first rank expected to hold the reduction at each index.
    let mut first_reduced: Vec<Option<u32>> = Vec::new();
    for (r, v) in results.iter().enumerate() {
        for (range, what) in expected(r) {
            for i in range {
                let got = v.get(i).copied().unwrap_or(f32::NAN);
                let (want, bound) = match what {
                    Expect::Reduced => {
                        if first_reduced.len() <= i {
                            first_reduced.resize(i + 1, None);
                        }
                        match first_reduced[i] {
                            None => first_reduced[i] = Some(got.to_bits()),
                            Some(bits) => out.ranks_bitwise_equal &= bits == got.to_bits(),
                        }
                        reference.allowed(i, depth)
                    }
                    Expect::InputOf(s) => {
                        let x = input(s, i);
                        // Bit for bit: a NaN input must arrive as the same NaN.
                        let err = if x.to_bits() == got.to_bits() { 0.0 } else { f64::NAN };
                        out.max_abs_error = if err.is_nan() { f64::INFINITY } else { out.max_abs_error };
                        if err.is_nan() {
                            out.verified = false;
                            out.first_violation.get_or_insert((r, i, got, x as f64, 0.0));
                        }
                        continue;
                    }
                };
                out.error_bound = out.error_bound.max(bound);
                let err = (got as f64 - want).abs();
                // NaN fails both comparisons: counted as an infinite error.
                if err.is_nan() || err > out.max_abs_error {
                    out.max_abs_error = if err.is_nan() { f64::INFINITY } else { err };
                }
                if err.is_nan() || err > bound {
                    out.verified = false;
                    out.first_violation.get_or_insert((r, i, got, want, bound));
                }
            }
        }
    }
    out
}
