//! The data plane: every rank's real vector and scratch buffers, the reduction
//! operator, seeded inputs and the check against the exact result.
//!
//! Everything is generic over the element type ([`Elem`]: f32, f64, f16, bf16, i32,
//! i64, u8) and type-erased at the edges ([`Vectors`], [`Payload`], [`DataPlane`]), so
//! that the engine moves a message with one match on the type and then a typed copy or
//! loop. [`generate`] fills the vectors and builds the [`Reference`] in one parallel
//! pass; [`Reference::check`] checks a run's final vectors against it.

mod elem;
mod generator;
mod log;
mod plane;
mod reference;
mod snapshots;
mod tiled;

use half::{bf16, f16};
use serde::{Deserialize, Serialize};

pub use elem::Elem;
pub use generator::RankGen;
pub use log::{ENTRY_BYTES, Entry, OpLog, Source};
pub use plane::{DataPlane, Finals, Plane};
pub use reference::{Expect, Expectation, Expectations, Reference, Verification, Violation};
pub use snapshots::Snapshots;
pub use tiled::{MIN_TILE, PLAN_ENTRY_BYTES, Phases, TILE_BYTES, verify_log, verify_log_with};

/// Element type (`data.dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// IEEE single precision, 4 bytes.
    F32,
    /// IEEE double precision, 8 bytes.
    F64,
    /// IEEE half precision (binary16), 2 bytes.
    F16,
    /// bfloat16 (f32's exponent, 8 bits of precision), 2 bytes.
    Bf16,
    /// 32-bit signed integer; sums and products wrap.
    I32,
    /// 64-bit signed integer; sums and products wrap.
    I64,
    /// 8-bit unsigned integer (quantised gradients); sums and products wrap.
    U8,
}

impl Dtype {
    /// Every dtype, in the order docs/scenario.md lists them.
    pub const ALL: [Dtype; 7] = [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::Bf16, Dtype::I32, Dtype::I64, Dtype::U8];

    /// Bytes per element (`e`).
    pub fn bytes(self) -> usize {
        match self {
            Dtype::F32 | Dtype::I32 => 4,
            Dtype::F64 | Dtype::I64 => 8,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::U8 => 1,
        }
    }

    /// The name scenarios use (`f32`, `bf16`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
        }
    }

    /// Floating-point types: the unit roundoff `u = 2^-p`; integers: `None`.
    pub fn unit_roundoff(self) -> Option<f64> {
        let p = match self {
            Dtype::F32 => 24,
            Dtype::F64 => 53,
            Dtype::F16 => 11,
            Dtype::Bf16 => 8,
            _ => return None,
        };
        Some(0.5f64.powi(p))
    }

    /// Integers: what a real value `x` of the generator is multiplied by before rounding
    /// (i32 2^16, i64 2^32, u8 127); floats: 1.
    pub fn quantum(self) -> f64 {
        match self {
            Dtype::I32 => 65536.0,
            Dtype::I64 => 4294967296.0,
            Dtype::U8 => 127.0,
            _ => 1.0,
        }
    }

    /// Integers: what is added after scaling (u8 is offset by 128 so that 0 is 128).
    pub fn quantum_offset(self) -> f64 {
        if self == Dtype::U8 { 128.0 } else { 0.0 }
    }
}

/// The reduction operator (`data.op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// Addition: rounding error grows with the depth of the reduction tree.
    Sum,
    /// Multiplication: rounding error grows with the depth too.
    Prod,
    /// Maximum: exact in any order.
    Max,
    /// Minimum: exact in any order.
    Min,
    /// The mean, as NCCL's `ncclAvg` computes it: floating-point types multiply every
    /// rank's input by `fl(1/P)` before the first reduction (NCCL's PreMulSum), then sum;
    /// integers sum (wrapping) and every rank divides its result by P at the end,
    /// truncating toward zero (NCCL's SumPostDiv).
    Avg,
}

/// How each rank's vector is filled before the run (`data.init`); the recipes are at
/// [`RankGen::at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Init {
    /// Uniform in [-1, 1).
    Random,
    /// About N(0, 1).
    Normal,
    /// Every element is 1.
    Ones,
    /// Every element of rank r is `r + 1`: sums are small integers, exact in floats.
    Rank,
    /// Large values that cancel between ranks, plus small ones: shows which orders
    /// lose digits.
    IllConditioned,
    /// A heavy-tailed mix resembling real gradient tensors.
    Gradients,
}

/// Every rank's vector, of one element type.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Vectors {
    F32(Vec<Vec<f32>>),
    F64(Vec<Vec<f64>>),
    F16(Vec<Vec<f16>>),
    Bf16(Vec<Vec<bf16>>),
    I32(Vec<Vec<i32>>),
    I64(Vec<Vec<i64>>),
    U8(Vec<Vec<u8>>),
}

/// One message's values, of one element type.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Buf {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
}

impl Default for Buf {
    fn default() -> Self {
        Buf::F32(Vec::new())
    }
}

/// Runs `$body` with `$x` bound to the typed contents of `$e` (an enum with one variant
/// per dtype) and the type alias `$t` set to its element type. For an enum with other
/// variants besides, `; $other => $obody` matches those.
macro_rules! dispatch {
    ($e:expr, $enum:ident, $x:ident, $t:ident => $body:expr $(; $other:pat => $obody:expr)?) => {
        match $e {
            $enum::F32($x) => {
                #[allow(dead_code)]
                type $t = f32;
                $body
            }
            $enum::F64($x) => {
                #[allow(dead_code)]
                type $t = f64;
                $body
            }
            $enum::F16($x) => {
                #[allow(dead_code)]
                type $t = half::f16;
                $body
            }
            $enum::Bf16($x) => {
                #[allow(dead_code)]
                type $t = half::bf16;
                $body
            }
            $enum::I32($x) => {
                #[allow(dead_code)]
                type $t = i32;
                $body
            }
            $enum::I64($x) => {
                #[allow(dead_code)]
                type $t = i64;
                $body
            }
            $enum::U8($x) => {
                #[allow(dead_code)]
                type $t = u8;
                $body
            }
            $($other => $obody,)?
        }
    };
}
pub(crate) use dispatch;

/// Runs `$body` with the type alias `$t` set to the element type of dtype `$d`.
macro_rules! with_dtype {
    ($d:expr, $t:ident => $body:expr) => {
        match $d {
            Dtype::F32 => {
                type $t = f32;
                $body
            }
            Dtype::F64 => {
                type $t = f64;
                $body
            }
            Dtype::F16 => {
                type $t = half::f16;
                $body
            }
            Dtype::Bf16 => {
                type $t = half::bf16;
                $body
            }
            Dtype::I32 => {
                type $t = i32;
                $body
            }
            Dtype::I64 => {
                type $t = i64;
                $body
            }
            Dtype::U8 => {
                type $t = u8;
                $body
            }
        }
    };
}
pub(crate) use with_dtype;

impl Vectors {
    /// The element type.
    pub fn dtype(&self) -> Dtype {
        dispatch!(self, Vectors, _v, T => <T as Elem>::DTYPE)
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        dispatch!(self, Vectors, v, T => v.len())
    }

    /// Elements of rank `r`'s vector.
    pub fn len(&self, r: usize) -> usize {
        dispatch!(self, Vectors, v, T => v[r].len())
    }

    /// Whether there are no ranks.
    pub fn is_empty(&self) -> bool {
        self.ranks() == 0
    }

    /// The bits of element `i` of rank `r` (zero-extended).
    pub fn bits(&self, r: usize, i: usize) -> u64 {
        dispatch!(self, Vectors, v, T => v[r][i].bits())
    }

    /// Element `i` of rank `r`, as an `f64` (exact for floats and for integers up to 2^53).
    pub fn get(&self, r: usize, i: usize) -> f64 {
        dispatch!(self, Vectors, v, T => v[r][i].to_f64())
    }

    /// The f32 vectors, if these are f32.
    pub fn as_f32(&self) -> Option<&[Vec<f32>]> {
        f32::unwrap(self)
    }
}

impl From<Vec<Vec<f32>>> for Vectors {
    fn from(v: Vec<Vec<f32>>) -> Self {
        Vectors::F32(v)
    }
}

/// The data a message carries: its region's values, or, in a sampled plane, the values
/// of the tracked elements of its region with their offsets into it (and whether each
/// is one the run lost track of).
#[derive(Clone, Debug, Default)]
pub struct Payload {
    vals: Buf,
    /// Offsets into the region of `vals` (sampled planes only; empty when dense).
    at: Vec<usize>,
    /// Sampled planes only: the values that met an untracked element.
    lost: Vec<bool>,
    /// A logging plane ([`OpLog`]): the slot of the message's entry in the log.
    slot: u32,
}

impl Payload {
    /// Bytes its values take (and a sampled payload's offsets and flags).
    fn bytes(&self) -> u64 {
        let vals = dispatch!(&self.vals, Buf, v, T => std::mem::size_of_val(v.as_slice()));
        (vals + std::mem::size_of_val(self.at.as_slice()) + self.lost.len()) as u64
    }
}

/// The values rank `rank` starts with.
pub fn initial_values<T: Elem>(init: Init, seed: u64, rank: usize, n: usize) -> Vec<T> {
    let g = RankGen::new(init, seed, rank);
    (0..n).map(|i| g.at(i)).collect()
}

/// The values rank `rank` starts with at `positions`: the elements at those indices of
/// [`initial_values`]`(init, seed, rank, n)`, computed without the others.
pub fn initial_values_at<T: Elem>(init: Init, seed: u64, rank: usize, positions: &[usize]) -> Vec<T> {
    let g = RankGen::new(init, seed, rank);
    positions.iter().map(|&i| g.at(i)).collect()
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

/// What the data of a run is: element type, operator, inputs and their seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataConfig {
    /// Element type.
    pub dtype: Dtype,
    /// Reduction operator.
    pub op: ReduceOp,
    /// Initial values.
    pub init: Init,
    /// The scenario's seed.
    pub seed: u64,
}

/// Fill every rank's vector (`n` elements, or only those at `positions`) and build the
/// exact result of reducing them, in one pass over the data, in parallel: the elements
/// are cut into fixed pieces, and each piece generates every rank's values and adds them
/// to its reference in rank order, so the result never depends on the thread count.
pub fn generate(cfg: DataConfig, ranks: usize, n: usize, positions: Option<Vec<usize>>) -> (Vectors, Reference) {
    with_dtype!(cfg.dtype, T => reference::generate::<T>(cfg, ranks, n, positions))
}
