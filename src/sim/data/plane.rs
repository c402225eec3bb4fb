//! Every rank's buffers during a run, and what the engine does to them.

use super::{Elem, OpLog, Payload, ReduceOp, Vectors, dispatch};
use crate::sim::op::{BufId, Region, VEC};

/// One tracked element of a sampled buffer.
#[derive(Clone, Copy, Debug)]
struct Entry<T> {
    /// Index in the buffer.
    at: usize,
    v: T,
    /// It met an element that is not tracked (which no correct algorithm does).
    lost: bool,
}

/// One buffer of a sampled plane: its tracked elements, ascending.
type Sparse<T> = Vec<Entry<T>>;

enum Store<T> {
    /// Every element of every buffer.
    Dense(Vec<Vec<Vec<T>>>),
    /// The tracked elements only; `lens` are the buffers' lengths, `positions` the
    /// vector's tracked elements.
    Sampled { bufs: Vec<Vec<Sparse<T>>>, lens: Vec<usize>, positions: Vec<usize> },
}

/// The buffers of one element type.
pub struct Plane<T> {
    store: Store<T>,
    op: ReduceOp,
}

/// Every rank's buffers: index 0 is the vector, `1..` the scratch buffers.
///
/// A *sampled* plane ([`DataPlane::sampled`]) holds only some elements of each vector and
/// whatever of them the algorithm moves into scratch. Allreduce never moves an element
/// to another index of a vector, and every operation is element by element, so a tracked
/// element goes through exactly the operations it would in a full run, in the same order:
/// its final value is bit for bit the same. An operation that would combine a tracked
/// element with one that is not (which no correct algorithm does) marks it lost, so that
/// the check fails rather than pass unseen.
#[allow(missing_docs)]
pub enum DataPlane {
    F32(Plane<f32>),
    F64(Plane<f64>),
    F16(Plane<half::f16>),
    Bf16(Plane<half::bf16>),
    I32(Plane<i32>),
    I64(Plane<i64>),
    U8(Plane<u8>),
    /// No data, only the log of what was done to it, replayed after the run
    /// ([`super::verify_log`]).
    Log(OpLog),
}

/// What a run leaves: every rank's final vector (in a sampled run the tracked elements,
/// in the order of their positions) and the (rank, index into the vector) of every
/// element a sampled run lost track of.
#[derive(Clone, Debug, PartialEq)]
pub struct Finals {
    /// The vectors.
    pub vectors: Vectors,
    /// Elements that met an untracked one, (rank, index into `vectors[rank]`).
    pub lost: Vec<(usize, usize)>,
}

/// `fl(1/P)` times every element: the premultiplication of a floating-point `avg`.
fn premultiply<T: Elem>(vectors: &mut [Vec<T>]) {
    use rayon::prelude::*;
    let scale = T::from_real(1.0 / vectors.len() as f64);
    vectors.par_iter_mut().for_each(|v| v.iter_mut().for_each(|x| *x = T::mul(*x, scale)));
}

impl DataPlane {
    /// Ranks start with `vectors[r]` and zeroed scratch buffers of `scratch[i]` elements.
    /// A floating-point `avg` multiplies every input by `fl(1/P)` here.
    pub fn new(vectors: Vectors, scratch: &[usize], op: ReduceOp) -> Self {
        dispatch!(vectors, Vectors, v, T => {
            let mut v = v;
            if op == ReduceOp::Avg && T::FLOAT.is_some() {
                premultiply(&mut v);
            }
            let bufs = v
                .into_iter()
                .map(|v| std::iter::once(v).chain(scratch.iter().map(|&s| vec![T::default(); s])).collect())
                .collect();
            Plane::<T>::wrap(Plane { store: Store::Dense(bufs), op })
        })
    }

    /// Ranks start with vectors of `n` elements of which only those at `positions`
    /// (ascending) are tracked, with values `values[r]`, and zeroed scratch buffers of
    /// `scratch[i]` elements.
    pub fn sampled(n: usize, positions: Vec<usize>, values: Vectors, scratch: &[usize], op: ReduceOp) -> Self {
        debug_assert!(positions.windows(2).all(|w| w[0] < w[1]) && positions.last().is_none_or(|&l| l < n));
        dispatch!(values, Vectors, v, T => {
            let mut v = v;
            if op == ReduceOp::Avg && T::FLOAT.is_some() {
                premultiply(&mut v);
            }
            let bufs = v
                .into_iter()
                .map(|v| {
                    let vector: Sparse<T> =
                        positions.iter().zip(v).map(|(&at, v)| Entry { at, v, lost: false }).collect();
                    std::iter::once(vector).chain(scratch.iter().map(|_| Vec::new())).collect()
                })
                .collect();
            let lens = std::iter::once(n).chain(scratch.iter().copied()).collect();
            Plane::<T>::wrap(Plane { store: Store::Sampled { bufs, lens, positions }, op })
        })
    }

    /// Elements in buffer `buf` of `rank` (0 if it does not exist).
    pub fn buf_len(&self, rank: usize, buf: BufId) -> usize {
        dispatch!(self, DataPlane, p, T => p.buf_len(rank, buf); DataPlane::Log(l) => l.buf_len(buf))
    }

    /// Put the data of `reg` of `rank` in `out`.
    #[inline]
    pub fn load(&self, rank: usize, reg: Region, out: &mut Payload) {
        dispatch!(self, DataPlane, p, T => p.load(rank, reg, out); DataPlane::Log(l) => l.load(rank, reg, out))
    }

    /// `reg = data`: a copy (what `reg` held is overwritten).
    #[inline]
    pub fn store(&mut self, rank: usize, reg: Region, data: &Payload) {
        dispatch!(self, DataPlane, p, T => p.store(rank, reg, data); DataPlane::Log(l) => l.store(rank, reg, data))
    }

    /// `reg = reg (op) data`.
    #[inline]
    pub fn reduce_into(&mut self, rank: usize, reg: Region, data: &Payload) {
        dispatch!(self, DataPlane, p, T => p.reduce_into(rank, reg, data);
            DataPlane::Log(l) => l.reduce_into(rank, reg, data))
    }

    /// `dst = dst (op) src`, both regions of `rank`.
    #[inline]
    pub fn reduce_local(&mut self, rank: usize, src: Region, dst: Region) {
        dispatch!(self, DataPlane, p, T => p.reduce_local(rank, src, dst);
            DataPlane::Log(l) => l.reduce_local(rank, src, dst))
    }

    /// The ranks' vectors after the run (`None` for a log, which holds no data). An
    /// integer `avg` divides every result by P here.
    pub fn into_finals(self) -> Option<Finals> {
        dispatch!(self, DataPlane, p, T => Some(p.into_finals()); DataPlane::Log(_) => None)
    }

    /// The log, if this plane is one.
    pub fn into_log(self) -> Option<OpLog> {
        match self {
            DataPlane::Log(l) => Some(l),
            _ => None,
        }
    }
}

impl<T: Elem> Plane<T> {
    fn wrap(self) -> DataPlane {
        T::wrap_plane(self)
    }

    fn buf_len(&self, rank: usize, buf: BufId) -> usize {
        match &self.store {
            Store::Dense(bufs) => bufs[rank].get(buf as usize).map_or(0, Vec::len),
            Store::Sampled { lens, .. } => lens.get(buf as usize).copied().unwrap_or(0),
        }
    }

    /// The tracked elements of `reg` in a sampled buffer: the range of `buf` they fill.
    fn span(buf: &Sparse<T>, reg: Region) -> std::ops::Range<usize> {
        buf.partition_point(|e| e.at < reg.offset)..buf.partition_point(|e| e.at < reg.end())
    }

    #[inline]
    fn load(&self, rank: usize, reg: Region, out: &mut Payload) {
        let vals = T::slot(&mut out.vals);
        vals.clear();
        match &self.store {
            Store::Dense(bufs) => vals.extend_from_slice(&bufs[rank][reg.buf as usize][reg.offset..reg.end()]),
            Store::Sampled { bufs, .. } => {
                out.at.clear();
                out.lost.clear();
                let b = &bufs[rank][reg.buf as usize];
                for e in &b[Self::span(b, reg)] {
                    out.at.push(e.at - reg.offset);
                    vals.push(e.v);
                    out.lost.push(e.lost);
                }
            }
        }
    }

    /// The incoming entries of a sampled payload, at their indices in `reg`'s buffer.
    fn incoming(reg: Region, data: &Payload) -> impl Iterator<Item = Entry<T>> + '_ {
        data.at.iter().zip(T::view(&data.vals)).zip(&data.lost).map(move |((&o, &v), &lost)| Entry {
            at: reg.offset + o,
            v,
            lost,
        })
    }

    #[inline]
    fn store(&mut self, rank: usize, reg: Region, data: &Payload) {
        match &mut self.store {
            Store::Dense(bufs) => {
                bufs[rank][reg.buf as usize][reg.offset..reg.end()].copy_from_slice(T::view(&data.vals));
            }
            Store::Sampled { bufs, .. } => {
                let b = &mut bufs[rank][reg.buf as usize];
                let span = Self::span(b, reg);
                if span.len() == data.at.len()
                    && b[span.clone()].iter().zip(&data.at).all(|(e, &o)| e.at == reg.offset + o)
                {
                    b[span].iter_mut().zip(Self::incoming(reg, data)).for_each(|(e, x)| *e = x);
                } else {
                    b.splice(span, Self::incoming(reg, data));
                }
            }
        }
    }

    #[inline]
    fn reduce_into(&mut self, rank: usize, reg: Region, data: &Payload) {
        let op = self.op;
        match &mut self.store {
            Store::Dense(bufs) => {
                T::reduce_slice(op, &mut bufs[rank][reg.buf as usize][reg.offset..reg.end()], T::view(&data.vals));
            }
            Store::Sampled { bufs, .. } => {
                let b = &mut bufs[rank][reg.buf as usize];
                let span = Self::span(b, reg);
                // Merge the two ascending lists: an element on one side only meets an
                // untracked one (lost), except in scratch never written, which holds 0.
                let scratch = reg.buf != VEC;
                let mut merged: Sparse<T> = Vec::with_capacity(span.len().max(data.at.len()));
                let mut old = b[span.clone()].iter().copied().peekable();
                let mut new = Self::incoming(reg, data).peekable();
                loop {
                    let next = match (old.peek().copied(), new.peek().copied()) {
                        (None, None) => break,
                        (Some(d), Some(s)) if d.at == s.at => {
                            old.next();
                            new.next();
                            Entry { at: d.at, v: T::combine(op, d.v, s.v), lost: d.lost || s.lost }
                        }
                        (Some(d), Some(s)) if d.at < s.at => {
                            old.next();
                            Entry { lost: true, ..d }
                        }
                        (Some(d), None) => {
                            old.next();
                            Entry { lost: true, ..d }
                        }
                        (_, Some(s)) => {
                            new.next();
                            if scratch {
                                Entry { v: T::combine(op, T::default(), s.v), ..s }
                            } else {
                                Entry { lost: true, ..s }
                            }
                        }
                    };
                    merged.push(next);
                }
                b.splice(span, merged);
            }
        }
    }

    fn reduce_local(&mut self, rank: usize, src: Region, dst: Region) {
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
            T::reduce_slice(op, &mut d[dst.offset..dst.end()], &s[src.offset..src.end()]);
        } else {
            let b = &mut bufs[dst.buf as usize];
            for i in 0..dst.len {
                b[dst.offset + i] = T::combine(op, b[dst.offset + i], b[src.offset + i]);
            }
        }
    }

    fn into_finals(self) -> Finals {
        let ranks;
        let mut lost = Vec::new();
        let mut vectors: Vec<Vec<T>> = match self.store {
            Store::Dense(bufs) => {
                ranks = bufs.len();
                bufs.into_iter().map(|mut b| b.swap_remove(0)).collect()
            }
            Store::Sampled { bufs, positions, .. } => {
                ranks = bufs.len();
                bufs.into_iter()
                    .enumerate()
                    .map(|(r, b)| {
                        let v = &b[0];
                        let mut k = 0;
                        positions
                            .iter()
                            .enumerate()
                            .map(|(j, &i)| {
                                while k < v.len() && v[k].at < i {
                                    k += 1;
                                }
                                match v.get(k) {
                                    Some(e) if e.at == i && !e.lost => e.v,
                                    Some(e) if e.at == i => {
                                        lost.push((r, j));
                                        e.v
                                    }
                                    _ => {
                                        lost.push((r, j));
                                        T::default()
                                    }
                                }
                            })
                            .collect()
                    })
                    .collect()
            }
        };
        if self.op == super::ReduceOp::Avg && T::FLOAT.is_none() {
            use rayon::prelude::*;
            vectors.par_iter_mut().for_each(|v| v.iter_mut().for_each(|x| *x = T::from_i64(x.to_i64() / ranks as i64)));
        }
        Finals { vectors: T::wrap(vectors), lost }
    }
}
