//! The element types a vector may hold, and what each does with the reduction operators.

use half::{bf16, f16};

use super::plane::Plane;
use super::{Buf, DataPlane, Dtype, ReduceOp, Vectors};

/// One element type of the data plane (`data.dtype`): how it is made from the generator's
/// values, how two of them combine, and where it lives in the type-erased containers.
///
/// Floating-point sums and products are rounded to the element type after every
/// operation: f16 and bf16 accumulate in their own type, as NCCL reduces them (an f16 sum
/// is computed in f32 and rounded back, which is the correctly rounded f16 sum since f32
/// has more than twice f16's precision plus two bits). Integers wrap on overflow, as
/// MPI's and NCCL's integer reductions do.
pub trait Elem: Copy + Default + PartialEq + Send + Sync + std::fmt::Debug + 'static {
    /// The dtype this type implements.
    const DTYPE: Dtype;
    /// For floating-point types: (precision in bits including the hidden one, smallest
    /// normal exponent); `None` for integers.
    const FLOAT: Option<(i32, i32)>;
    /// Exponent of the large parts of `ill_conditioned` (about half the precision, so
    /// the small parts keep some digits in the input and lose more in sums).
    const ILL_EXP: i32;

    /// The nearest value to `x` (floats: round to nearest even); integers take
    /// `x` scaled by their quantisation step ([`Dtype::quantum`]), rounded, saturated.
    fn from_real(x: f64) -> Self;
    /// The integer `v` (integers: wrapped to the type).
    fn from_int(v: u64) -> Self;
    /// The value, exactly (floats) or as an `f64` (integers, for error figures).
    fn to_f64(self) -> f64;
    /// Integers: the value, exactly; floats: unused (0).
    fn to_i64(self) -> i64;
    /// Integers: `v` wrapped to the type; floats: unused.
    fn from_i64(v: i64) -> Self;
    /// The bit pattern, zero-extended.
    fn bits(self) -> u64;
    /// `a + b` (wrapping for integers).
    fn add(a: Self, b: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(a: Self, b: Self) -> Self;
    /// The larger.
    fn max(a: Self, b: Self) -> Self;
    /// The smaller.
    fn min(a: Self, b: Self) -> Self;
    /// The vector of this type in `b`, made so (empty) if `b` holds another type.
    fn slot(b: &mut Buf) -> &mut Vec<Self>;
    /// The values of this type in `b` (empty if `b` holds another type).
    fn view(b: &Buf) -> &[Self];
    /// Per-rank vectors of this type, type-erased.
    fn wrap(v: Vec<Vec<Self>>) -> Vectors;
    /// Per-rank vectors of this type, if `v` holds this type.
    fn unwrap(v: &Vectors) -> Option<&[Vec<Self>]>;
    /// A plane of this type, type-erased.
    fn wrap_plane(p: Plane<Self>) -> DataPlane;

    /// `a (op) b`; `avg` combines as `sum` (the division is elsewhere, see [`ReduceOp::Avg`]).
    #[inline]
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
        match op {
            ReduceOp::Sum | ReduceOp::Avg => Self::add(a, b),
            ReduceOp::Prod => Self::mul(a, b),
            ReduceOp::Max => Self::max(a, b),
            ReduceOp::Min => Self::min(a, b),
        }
    }

    /// `dst[i] = dst[i] (op) src[i]`: one loop per operator, which the compiler
    /// vectorises for the native types.
    #[inline]
    fn reduce_slice(op: ReduceOp, dst: &mut [Self], src: &[Self]) {
        let z = dst.iter_mut().zip(src);
        match op {
            ReduceOp::Sum | ReduceOp::Avg => z.for_each(|(d, s)| *d = Self::add(*d, *s)),
            ReduceOp::Prod => z.for_each(|(d, s)| *d = Self::mul(*d, *s)),
            ReduceOp::Max => z.for_each(|(d, s)| *d = Self::max(*d, *s)),
            ReduceOp::Min => z.for_each(|(d, s)| *d = Self::min(*d, *s)),
        }
    }

    /// Whether `a` and `b` are bit for bit the same, at memory speed (no early exit
    /// inside a block, so the loop vectorises).
    fn bitwise_eq(a: &[Self], b: &[Self]) -> bool {
        a.len() == b.len()
            && a.chunks(1024)
                .zip(b.chunks(1024))
                .all(|(x, y)| x.iter().zip(y).fold(0u64, |acc, (p, q)| acc | (p.bits() ^ q.bits())) == 0)
    }
}

macro_rules! containers {
    ($t:ty, $v:ident) => {
        #[inline]
        fn slot(b: &mut Buf) -> &mut Vec<Self> {
            if !matches!(b, Buf::$v(_)) {
                *b = Buf::$v(Vec::new());
            }
            match b {
                Buf::$v(v) => v,
                _ => unreachable!("just made so"),
            }
        }
        #[inline]
        fn view(b: &Buf) -> &[Self] {
            match b {
                Buf::$v(v) => v,
                _ => &[],
            }
        }
        fn wrap(v: Vec<Vec<Self>>) -> Vectors {
            Vectors::$v(v)
        }
        fn unwrap(v: &Vectors) -> Option<&[Vec<Self>]> {
            match v {
                Vectors::$v(v) => Some(v),
                _ => None,
            }
        }
        fn wrap_plane(p: Plane<Self>) -> DataPlane {
            DataPlane::$v(p)
        }
    };
}

macro_rules! native_float {
    ($t:ty, $v:ident, $p:expr, $emin:expr, $ill:expr, $bits:ty) => {
        impl Elem for $t {
            const DTYPE: Dtype = Dtype::$v;
            const FLOAT: Option<(i32, i32)> = Some(($p, $emin));
            const ILL_EXP: i32 = $ill;
            #[inline]
            fn from_real(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn from_int(v: u64) -> Self {
                v as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                0
            }
            fn from_i64(_: i64) -> Self {
                0.0
            }
            #[inline]
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline]
            fn mul(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline]
            fn max(a: Self, b: Self) -> Self {
                a.max(b)
            }
            #[inline]
            fn min(a: Self, b: Self) -> Self {
                a.min(b)
            }
            // In the type's own width: no widening of every element to 64 bits.
            fn bitwise_eq(a: &[Self], b: &[Self]) -> bool {
                a.len() == b.len()
                    && a.chunks(1024).zip(b.chunks(1024)).all(|(x, y)| {
                        x.iter().zip(y).fold(0 as $bits, |acc, (p, q)| acc | (p.to_bits() ^ q.to_bits())) == 0
                    })
            }
            containers!($t, $v);
        }
    };
}

native_float!(f32, F32, 24, -126, 12, u32);
native_float!(f64, F64, 53, -1022, 26, u64);

macro_rules! half_float {
    ($t:ty, $v:ident, $p:expr, $emin:expr, $ill:expr) => {
        impl Elem for $t {
            const DTYPE: Dtype = Dtype::$v;
            const FLOAT: Option<(i32, i32)> = Some(($p, $emin));
            const ILL_EXP: i32 = $ill;
            #[inline]
            fn from_real(x: f64) -> Self {
                <$t>::from_f64(x)
            }
            #[inline]
            fn from_int(v: u64) -> Self {
                <$t>::from_f64(v as f64)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i64(self) -> i64 {
                0
            }
            fn from_i64(_: i64) -> Self {
                <$t>::ZERO
            }
            #[inline]
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            // In f32 and rounded back: the correctly rounded result, as f32's 24 bits are
            // at least twice the 11 (8) bits of f16 (bf16) plus two.
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                <$t>::from_f32(a.to_f32() + b.to_f32())
            }
            #[inline]
            fn mul(a: Self, b: Self) -> Self {
                <$t>::from_f32(a.to_f32() * b.to_f32())
            }
            #[inline]
            fn max(a: Self, b: Self) -> Self {
                if b > a { b } else { a }
            }
            #[inline]
            fn min(a: Self, b: Self) -> Self {
                if b < a { b } else { a }
            }
            containers!($t, $v);
        }
    };
}

half_float!(f16, F16, 11, -14, 6);
half_float!(bf16, Bf16, 8, -126, 4);

macro_rules! int {
    ($t:ty, $v:ident, $ubits:ty) => {
        impl Elem for $t {
            const DTYPE: Dtype = Dtype::$v;
            const FLOAT: Option<(i32, i32)> = None;
            const ILL_EXP: i32 = 12;
            #[inline]
            fn from_real(x: f64) -> Self {
                let (lo, hi) = (<$t>::MIN as f64, <$t>::MAX as f64);
                (Dtype::$v.quantum_offset() + (x * Dtype::$v.quantum()).round()).clamp(lo, hi) as $t
            }
            #[inline]
            fn from_int(v: u64) -> Self {
                v as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn bits(self) -> u64 {
                self as $ubits as u64
            }
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline]
            fn mul(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            #[inline]
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
            #[inline]
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            containers!($t, $v);
        }
    };
}

int!(i32, I32, u32);
int!(i64, I64, u64);
int!(u8, U8, u8);
