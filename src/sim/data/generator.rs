//! The seeded inputs: a counter-based generator, so that element `i` of rank `r` is a
//! pure function of `(seed, r, i)`.
//!
//! Our own formula, fixed here for good (a test pins its outputs): the value of element
//! `i` of rank `r` comes from the word
//!
//! ```text
//! mix(key(seed, r) + (i + 1) G),   key(seed, r) = mix(seed + (r + 1) G),   G = 0x9E3779B97F4A7C15
//! ```
//!
//! with `mix` SplitMix64's finaliser (two xor-shift-multiplies), all in wrapping 64-bit
//! arithmetic: the `i`-th output of a SplitMix64 stream seeded with the rank's key. Only
//! integer operations and correctly rounded IEEE arithmetic follow, so the values are the
//! same on every machine and with every compiler; any element is computed without the
//! others (a sampled run, [`super::sample_positions`], costs what it tracks), and filling
//! vectors in parallel gives what filling them in order does.

use super::{Elem, Init};

/// SplitMix64's increment (2^64 over the golden ratio).
const G: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// [`mix`] without its last xor-shift, which changes no bit above bit 32.
#[inline]
fn mix_but_last(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB)
}

/// The key of stream `stream` under `seed`.
#[inline]
fn key(seed: u64, stream: u64) -> u64 {
    mix(seed.wrapping_add(stream.wrapping_add(1).wrapping_mul(G)))
}

/// Word `i` of the stream with key `k`.
#[inline]
fn word(k: u64, i: u64) -> u64 {
    mix(k.wrapping_add(i.wrapping_add(1).wrapping_mul(G)))
}

/// `2^e`, exactly.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The top `p` bits of `h` as a value in [-1, 1) on a grid of `2^(1-p)`: exactly
/// representable in a float of `p` bits of precision.
#[inline]
fn signed_unit(h: u64, p: i32) -> f64 {
    (h >> (64 - p)) as f64 * pow2(1 - p) - 1.0
}

/// The top 53 bits of `h` as a value in [0, 1).
#[inline]
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * pow2(-53)
}

/// About N(0, 1): the Irwin-Hall sum of eight uniform 16-bit draws (from `h` and
/// `mix(h)`), centred and scaled to variance 1. Bounded by +-4.9; no transcendental
/// function, so bit-identical everywhere.
#[inline]
fn normal(h: u64) -> f64 {
    let h2 = mix(h);
    let quarters = |x: u64| (x & 0xFFFF) + (x >> 16 & 0xFFFF) + (x >> 32 & 0xFFFF) + (x >> 48);
    let s = (quarters(h) + quarters(h2)) as f64;
    ((s + 4.0) * pow2(-16) - 4.0) * 1.5f64.sqrt()
}

/// `Init::Random`'s elements `from..` of the stream with key `key`, into `out`, the
/// counter stepped by one addition.
#[inline(always)]
fn fill_random_portable<T: Elem>(key: u64, from: usize, out: &mut [T]) {
    let p = T::FLOAT.map_or(53, |(p, _)| p);
    let mut z = key.wrapping_add((from as u64).wrapping_add(1).wrapping_mul(G));
    if p <= 24 {
        // f32, f16, bf16. The top p bits of mix(z) are those of its second product: the
        // last xor-shift changes only bits below 33. They fit an f32 exactly, and so do
        // the scaled value and the value minus 1 (a multiple of 2^(1-p) in [-1, 1)), so
        // f32 arithmetic gives signed_unit's f64 value exactly, in lanes twice as many.
        let scale = pow2(1 - p) as f32;
        for x in out {
            let top = (mix_but_last(z) >> (64 - p)) as u32;
            *x = T::from_real(f64::from(top as f32 * scale - 1.0));
            z = z.wrapping_add(G);
        }
    } else {
        for x in out {
            *x = T::from_real(signed_unit(mix(z), p));
            z = z.wrapping_add(G);
        }
    }
}

/// [`fill_random_portable`] compiled for AVX2, whose four 64-bit lanes take the
/// multiplications four elements at a time (the same integer and IEEE operations, so the
/// same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fill_random_avx2<T: Elem>(key: u64, from: usize, out: &mut [T]) {
    fill_random_portable(key, from, out);
}

/// [`fill_random_portable`], with AVX2 where the processor has it.
#[inline]
fn fill_random<T: Elem>(key: u64, from: usize, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, the only feature the function is compiled for.
        return unsafe { fill_random_avx2(key, from, out) };
    }
    fill_random_portable(key, from, out);
}

/// One rank's generator: `at(i)` is element `i` of its vector.
#[derive(Clone, Copy, Debug)]
pub struct RankGen {
    init: Init,
    rank: usize,
    key: u64,
    /// `ill_conditioned`: the key of the rank pair's shared large parts.
    pair_key: u64,
}

impl RankGen {
    /// Rank `rank`'s generator for `init` under `seed`.
    pub fn new(init: Init, seed: u64, rank: usize) -> Self {
        RankGen { init, rank, key: key(seed, rank as u64), pair_key: key(!seed, (rank / 2) as u64) }
    }

    /// Element `i`.
    ///
    /// - `random`: uniform in [-1, 1) on the grid of the type's precision (integers:
    ///   the grid of 2^-52, then quantised);
    /// - `normal`: about N(0, 1): the Irwin-Hall sum of eight uniform 16-bit draws,
    ///   centred and scaled to variance 1 (within +-4.9, no transcendental function);
    /// - `ones`: 1; `rank`: `rank + 1` (integers wrap: u8 ranks 255, 511, ... hold 0);
    /// - `ill_conditioned`: `+-2^E (1 + v) + w`, v uniform in [0, 1) shared by ranks
    ///   `2k` (plus) and `2k + 1` (minus) so that their large parts cancel exactly, w
    ///   uniform in [-1, 1) of the rank's own; E is about half the type's precision
    ///   (f32 12, f64 26, f16 6, bf16 4, integers 12). With an odd P the last rank's
    ///   large part stays;
    /// - `gradients`, a heavy-tailed mix like a real gradient tensor: with probability
    ///   51/1024 exactly 0 (dead units), 922/1024 `1e-3 N(0, 1)`, and 51/1024 a
    ///   Pareto-like tail `+-1e-3 / u^2`, u uniform in [1/16, 1) (up to 0.256).
    #[inline]
    pub fn at<T: Elem>(&self, i: usize) -> T {
        let h = word(self.key, i as u64);
        let p = T::FLOAT.map_or(53, |(p, _)| p);
        match self.init {
            Init::Random => T::from_real(signed_unit(h, p)),
            Init::Normal => T::from_real(normal(h)),
            Init::Ones => T::from_int(1),
            Init::Rank => T::from_int(self.rank as u64 + 1),
            Init::IllConditioned => {
                let big = pow2(T::ILL_EXP) * (1.0 + unit(word(self.pair_key, i as u64)));
                let big = if self.rank.is_multiple_of(2) { big } else { -big };
                T::from_real(big + signed_unit(h, 53))
            }
            Init::Gradients => {
                let class = h >> 54;
                let h2 = mix(h);
                T::from_real(if class < 51 {
                    0.0
                } else if class < 973 {
                    1e-3 * normal(h2)
                } else {
                    let u = 0.0625 + 0.9375 * unit(h2);
                    let sign = if h2 & 1 == 0 { 1.0 } else { -1.0 };
                    sign * 1e-3 / (u * u)
                })
            }
        }
    }

    /// Elements `from..from + out.len()` into `out`: what [`RankGen::at`] gives, with the
    /// recipe chosen once rather than per element, and the stream's counter stepped by
    /// one addition (a loop the compiler keeps tight).
    #[inline]
    pub fn fill<T: Elem>(&self, from: usize, out: &mut [T]) {
        match self.init {
            Init::Random => fill_random(self.key, from, out),
            Init::Ones | Init::Rank => out.fill(self.at(0)),
            _ => out.iter_mut().enumerate().for_each(|(j, x)| *x = self.at(from + j)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill_is_at<T: Elem>() {
        for init in [Init::Random, Init::Normal, Init::Ones, Init::Rank, Init::IllConditioned, Init::Gradients] {
            for rank in [0, 3] {
                let g = RankGen::new(init, 11, rank);
                for from in [0, 1, 1000, usize::MAX - 40] {
                    let mut out = vec![T::default(); 33];
                    g.fill(from, &mut out);
                    for (j, x) in out.iter().enumerate() {
                        assert_eq!(
                            x.bits(),
                            g.at::<T>(from.wrapping_add(j)).bits(),
                            "{init:?} rank {rank} at {from} + {j}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fill_gives_what_at_gives() {
        fill_is_at::<f32>();
        fill_is_at::<f64>();
        fill_is_at::<half::f16>();
        fill_is_at::<half::bf16>();
        fill_is_at::<i32>();
        fill_is_at::<i64>();
        fill_is_at::<u8>();
    }
}
