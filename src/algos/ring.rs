//! The ring family. A ring passes chunks to the right neighbour, P-1 steps per phase:
//! a reduce-scatter phase adds what arrives into the chunk it passes on next, an
//! allgather phase copies the finished chunks around (Patarasuk & Yuan 2009; Baidu
//! 2017; the course report, the survey, the homework report and the ring tutorial:
//! docs/sources.md).
//!
//! # The textbook ring
//!
//! The course report's ring allreduce is two loops. With the vector cut into P chunks
//! (`c(i)`, indices mod P), rank r passes to r+1 and hears from r-1:
//!
//! ```text
//! for k in 0..P-1:   // reduce-scatter
//!     send c(r - k) to r+1;      receive c(r - k - 1) from r-1, add it into mine
//! for k in 0..P-1:   // allgather
//!     send c(r + 1 - k) to r+1;  receive c(r - k) from r-1, copy it into mine
//! ```
//!
//! after which rank r held the whole sum of c(r + 1) between the loops, and every rank
//! holds every chunk's sum at the end. The body of each loop is [`Phase::step`]: which
//! chunk the rank at ring position q sends, which it receives, and whether it adds or
//! copies (`shift` 1 above; a lone reduce-scatter or allgather uses 0, leaving rank r
//! with chunk r as MPI's do). Everything else is layered on that step by [`program`]:
//! the phases run back to back, the direction, where each chunk lies (`ring_segmented`'s
//! phases, the bidirectional ring's halves), and segments pipelined around the ring.
//! The torus algorithms ([`super::torus`]) run the same step along each row and column.
//!
//! # The rings here
//!
//! Every ring here is [`program`] over a list of [`Phase`]s:
//! - `ring` reduce-scatter: one reduce-scatter phase; `ring` allgather: one allgather
//!   phase; `ring` allreduce: the two in sequence, optionally cut into `segments` that
//!   follow each other around the ring (pipelined, as `chain`'s);
//! - `ring_segmented`: Open MPI's `ompi_coll_base_allreduce_intra_ring_segmented`: the
//!   reduce-scatter repeated once per *phase*, each over one segment of every chunk
//!   (segments of about `segment` bytes), then one allgather of whole chunks;
//! - `bidirectional_ring`: two rings in opposite directions, each over half the vector,
//!   as two concurrent streams.

use super::{AlgoInfo, Algorithm, Blocks, EXACT, Machine, Problem, Topology, block};
use crate::cost_model;
use crate::cost_model::loggp::{LogGP, exchanges};
use crate::cost_model::{Hockney, PortPool};
use crate::sim::op::{Action, Op, Program, Rank, Region, per_step};

/// One phase of a ring program: P-1 steps around the ring, one of the textbook's two
/// loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// At step k the rank at ring position q sends chunk `q + shift - 1 - k` and adds
    /// the incoming chunk `q + shift - 2 - k` into its own; afterwards it holds the
    /// reduction of chunk `q + shift`.
    ReduceScatter { shift: usize },
    /// The rank at position q starts with chunk `q + shift`; at step k it sends chunk
    /// `q + shift - k` and receives chunk `q + shift - 1 - k`.
    Allgather { shift: usize },
}

impl Phase {
    /// The loop's body: (chunk sent, chunk received, what is done with it) at step k for
    /// the rank at ring position q of `np`.
    pub(crate) fn step(self, q: usize, np: usize, k: usize) -> (usize, usize, Action) {
        // `+ 2P` keeps the arithmetic unsigned (shift < P, k < P).
        let (send, action) = match self {
            Phase::ReduceScatter { shift } => ((q + shift + 2 * np - 1 - k) % np, Action::Reduce),
            Phase::Allgather { shift } => ((q + shift + 2 * np - k) % np, Action::Copy),
        };
        // What arrives is the chunk before the one passed on.
        (send, send.checked_sub(1).unwrap_or(np - 1), action)
    }
}

/// A ring's direction: `Forward` passes to rank r+1, `Backward` to rank r-1 (the rank at
/// position q is then `-q mod P`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// r sends to r+1.
    Forward,
    /// r sends to r-1.
    Backward,
}

impl Direction {
    fn rank(self, q: usize, np: usize) -> Rank {
        (match self {
            Direction::Forward => q % np,
            Direction::Backward => (np - q % np) % np,
        }) as Rank
    }
    fn position(self, r: usize, np: usize) -> usize {
        match self {
            Direction::Forward => r,
            Direction::Backward => (np - r) % np,
        }
    }
}

/// Rank `rank`'s ring program over `phases` (run back to back), with chunk i of the
/// ring at `chunk(i)`, each chunk cut into `segments` pieces ([`block`]) that follow
/// each other: a piece is passed on as soon as it has arrived (and been added), so
/// piece j of step t waits only for piece j of step t-1 (with one segment, every step
/// waits for the one before, the textbook ring). Tags start at `tag0`; `handle0` is the
/// number of receives the stream posted before (the handle of this program's first);
/// the program ends when its last receive is done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn program<'a>(
    rank: Rank,
    np: usize,
    dir: Direction,
    phases: &'a [Phase],
    segments: usize,
    tag0: u32,
    handle0: u32,
    chunk: impl Fn(usize) -> Region + Clone + Send + 'a,
) -> impl Iterator<Item = Op> + Send + 'a {
    let steps = np.saturating_sub(1);
    let q = dir.position(rank as usize, np);
    let (right, left) = (dir.rank(q + 1, np), dir.rank(q + np - 1, np));
    let piece = move |i: usize, j: usize| {
        let c = chunk(i);
        if segments == 1 {
            return c;
        }
        let s = block(c.len, segments, j);
        Region { buf: c.buf, offset: c.offset + s.offset, len: s.len }
    };
    let stages = phases.len() * steps;
    let items = stages * segments;
    // Piece j of stage t is item s = t segments + j, in stage order: send it, post its
    // receive, then wait for what the next item sends (piece j + 1 of this stage is
    // piece j + 1 of the stage before, added in); the last ends with a wait for every
    // receive. Waiting at the end of an item rather than the start of the next is the
    // same sequence of ops, and a rank blocks only between items.
    per_step(0..items, move |s| {
        let (t, j) = (s / segments, s % segments);
        let (send, recv, action) = phases[t / steps].step(q, np, t % steps);
        let tag = tag0 + s as u32;
        let dst = piece(recv, j);
        // Each stage posts `segments` receives: item s is handle `handle0 + s`.
        let wait = if s + 1 == items {
            Some(Op::WaitAll)
        } else {
            (s + 1 >= segments).then(|| Op::Wait(handle0 + (s + 1 - segments) as u32))
        };
        [Op::send(right, tag, piece(send, j)), Op::Recv { from: left, tag, dst, action }].into_iter().chain(wait)
    })
}

/// The exact time of [`program`] over `phases` (each P-1 stages) with every chunk cut
/// into `segments` pieces, on any chunk sizes: `elems(phase, chunk, piece)` is the size
/// of a piece a rank sends. The arithmetic is [`cost_model::ring_items`].
fn ring_items(
    p: &Problem,
    h: &cost_model::Hockney,
    phases: &[Phase],
    segments: usize,
    elems: impl Fn(usize, usize, usize) -> usize,
) -> f64 {
    let np = p.ranks;
    let steps = np.saturating_sub(1).max(1);
    let items = phases.len() * np.saturating_sub(1) * segments;
    let at = |i: usize| (i / segments / steps, i / segments % steps, i % segments);
    let reduce = |i: usize| matches!(phases[at(i).0], Phase::ReduceScatter { .. });
    cost_model::ring_items(np, h, items, segments, reduce, |i, q| {
        let (ph, k, j) = at(i);
        let (send, _, _) = phases[ph].step(q, np, k);
        p.b(elems(ph, send, j))
    })
}

/// The chunks of the textbook ring: the vector cut into P blocks.
fn blocks(n: usize, np: usize) -> impl Fn(usize) -> Region + Clone + Send {
    let blocks = Blocks::new(n, np);
    move |i| blocks.get(i)
}

const RS_ONLY: &[Phase] = &[Phase::ReduceScatter { shift: 0 }];
const AG_ONLY: &[Phase] = &[Phase::Allgather { shift: 0 }];
/// Allreduce: the reduce-scatter leaves chunk r+1 on rank r (Open MPI's and the
/// tutorial's convention), which the allgather then starts from.
const ALLREDUCE: &[Phase] = &[Phase::ReduceScatter { shift: 1 }, Phase::Allgather { shift: 1 }];

/// Registry entry: ring allreduce.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "ring",
    summary: "reduce-scatter then allgather around a ring, P chunks (optionally each in segments, pipelined)",
    source: "course report (Ring); survey (Ring AllReduce); homework report; ring tutorial; Patarasuk & Yuan 2009",
    requires: "any P >= 1, any n (chunks differ by at most one element; n < P leaves empty chunks); \
               segments at most ceil(n/P)",
    closed_form: "segments = 1: 2(P-1)(alpha + c/B) + (P-1) c C,  c = ceil(n/P) e; segments N (P N dividing n): \
                  the 2(P-1) N pieces of s = c/N pass each rank's ports and compute unit in order (a recurrence); \
                  2(P-1) N (alpha + s/B) when one NIC is never idle, s C <= (N-1)(alpha + s/B); other n: the same \
                  recurrence over the unequal pieces (a link's ports carry only its own pieces, so it is exact)",
    params: &["segments=1: pieces each chunk is cut into and pipelined around the ring"],
    build: |params| Ok(Box::new(Ring { segments: params.count("segments", 1)? })),
};

/// Registry entry: ring reduce-scatter.
pub const RS_INFO: AlgoInfo = AlgoInfo {
    id: "ring",
    summary: "P-1 steps around a ring, each adding the incoming chunk into the one passed on next",
    source: "the first half of the ring allreduce (Patarasuk & Yuan 2009); Open MPI reduce_scatter ring",
    requires: "any P >= 1, any n",
    closed_form: "(P-1)(alpha + c/B + c C),  c = ceil(n/P) e",
    params: &[],
    build: |_| Ok(Box::new(RingPhases { phases: RS_ONLY, id: "ring" })),
};

/// Registry entry: ring allgather.
pub const AG_INFO: AlgoInfo = AlgoInfo {
    id: "ring",
    summary: "P-1 steps around a ring, each passing on the block received in the step before",
    source: "the second half of the ring allreduce (Patarasuk & Yuan 2009); Open MPI allgather ring",
    requires: "any P >= 1, any n",
    closed_form: "(P-1)(alpha + c/B),  c = ceil(n/P) e",
    params: &[],
    build: |_| Ok(Box::new(RingPhases { phases: AG_ONLY, id: "ring" })),
};

/// Ring allreduce; see the module docs.
#[derive(Debug)]
pub struct Ring {
    /// Pieces each chunk is pipelined in.
    pub segments: usize,
}

impl Algorithm for Ring {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.segments == 1 { INFO.id.into() } else { format!("ring(segments={})", self.segments) }
    }

    /// More segments than a largest chunk has elements would send empty pieces: refused
    /// at the point with the allowed range, as `chain` does.
    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        let most = p.elems.div_ceil(p.ranks).max(1);
        if self.segments > most {
            return Err(format!(
                "segments {} is more than the {} element(s) of a chunk; allowed here: 1 to {most}",
                self.segments,
                p.elems.div_ceil(p.ranks)
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let chunk = blocks(p.elems, p.ranks);
        vec![Box::new(program(rank, p.ranks, Direction::Forward, ALLREDUCE, self.segments, 0, 0, chunk))]
    }

    /// Every rank sends one piece per segment at each of the 2(P-1) steps.
    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let np = p.ranks as u64;
        // Saturates: a count past 2^64 (P near 2^32) must not wrap into a small one.
        Some(np.saturating_mul(np.saturating_sub(1)).saturating_mul(2).saturating_mul(self.segments as u64))
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        if self.segments == 1 {
            return Some((ring(p, &h), EXACT));
        }
        let t = ring_pipelined(p, &h, self.segments).unwrap_or_else(|| {
            let chunk = blocks(p.elems, p.ranks);
            ring_items(p, &h, ALLREDUCE, self.segments, |_, send, j| block(chunk(send).len, self.segments, j).len)
        });
        Some((t, EXACT))
    }

    fn closed_form_loggp(&self, p: &Problem, m: &Machine, l: &LogGP) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        (self.segments == 1).then_some(())?;
        Some((ring_loggp(p, l, h.c, h.nics, &[true, false])?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
    }
}

/// A ring reduce-scatter or allgather: one phase of [`program`] over the P blocks.
#[derive(Debug)]
pub struct RingPhases {
    phases: &'static [Phase],
    id: &'static str,
}

impl Algorithm for RingPhases {
    fn id(&self) -> &'static str {
        self.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let chunk = blocks(p.elems, p.ranks);
        vec![Box::new(program(rank, p.ranks, Direction::Forward, self.phases, 1, 0, 0, chunk))]
    }

    /// Every rank sends one block at each of the P-1 steps.
    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let np = p.ranks as u64;
        Some(np.saturating_mul(np.saturating_sub(1)))
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let reduce = self.phases == RS_ONLY;
        Some((ring_phase(p, &h, reduce), EXACT))
    }

    fn closed_form_loggp(&self, p: &Problem, m: &Machine, l: &LogGP) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        Some((ring_loggp(p, l, h.c, h.nics, &[self.phases == RS_ONLY])?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.phases == RS_ONLY { p.ranks - 1 } else { 0 }
    }
}

/// Registry entry: Open MPI's segmented ring.
pub const SEGMENTED_INFO: AlgoInfo = AlgoInfo {
    id: "ring_segmented",
    summary: "Open MPI's segmented ring: the reduce-scatter once per phase over one segment of every chunk, \
              then one allgather",
    source: "survey (Segmented Ring); Open MPI ompi_coll_base_allreduce_intra_ring_segmented",
    requires: "any P >= 1, any n; as in Open MPI, a vector of fewer than P segments runs the plain ring",
    closed_form: "phases m (Open MPI's rule from segment), s_j = the j-th of m pieces of c = ceil(n/P) e: \
                  sum_j (P-1)(alpha + s_j/B + s_j C) + (P-1)(alpha + c/B) when P m divides n; one phase, any n: the plain \
                  ring's 2(P-1)(alpha + c/B) + (P-1) c C; otherwise the \
                  recurrence of its pieces around the ring (exact: a link's ports carry only its own pieces)",
    params: &["segment=1MiB: bytes per segment (Open MPI's segsize); sets the number of phases"],
    build: |params| {
        let segment = params.size("segment")?.unwrap_or(1 << 20);
        Ok(Box::new(RingSegmented { segment }))
    },
};

/// Open MPI's `ring_segmented`; see the module docs.
#[derive(Debug)]
pub struct RingSegmented {
    /// Bytes per segment (Open MPI's `segsize`).
    pub segment: u64,
}

impl RingSegmented {
    /// Open MPI's number of phases for `n` elements of `e` bytes on `np` ranks: segments
    /// of `segment / e` elements (the whole vector when the segment is smaller than an
    /// element or not smaller than the vector); one phase (the plain ring) when the
    /// vector has fewer than P segments; else `n / (P segcount)`, one more when the
    /// remainder is at least P elements and more than half a round of segments.
    pub fn phases(&self, np: usize, n: usize, e: usize) -> usize {
        let e64 = e as u64;
        let segcount =
            if self.segment >= e64 && self.segment < e64 * n as u64 { (self.segment / e64) as usize } else { n };
        let round = np * segcount;
        if n < round || round == 0 {
            return 1;
        }
        let rest = n % round;
        n / round + usize::from(rest >= np && rest > round / 2)
    }
}

impl Algorithm for RingSegmented {
    fn id(&self) -> &'static str {
        SEGMENTED_INFO.id
    }

    fn label(&self) -> String {
        if self.segment == 1 << 20 {
            SEGMENTED_INFO.id.into()
        } else {
            format!("ring_segmented(segment={})", self.segment)
        }
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, n) = (p.ranks, p.elems);
        let phases = self.phases(np, n, p.elem_bytes);
        let steps = np.saturating_sub(1) as u32;
        // Phase j runs the reduce-scatter over piece j of every chunk.
        let reduce = (0..phases).flat_map(move |j| {
            let piece = move |i: usize| {
                let c = block(n, np, i);
                let s = block(c.len, phases, j);
                Region::vec(c.offset + s.offset, s.len)
            };
            // Phase j's receives and tags follow the j phases before, `steps` each.
            let base = j as u32 * steps;
            program(rank, np, Direction::Forward, &ALLREDUCE[..1], 1, base, base, piece)
        });
        let base = phases as u32 * steps;
        let gather = program(rank, np, Direction::Forward, &ALLREDUCE[1..], 1, base, base, blocks(n, np));
        vec![Box::new(reduce.chain(gather))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let phases = self.phases(p.ranks, p.elems, p.elem_bytes);
        // One phase runs the plain ring's program, chunks of any size included.
        if phases == 1 {
            return Some((ring(p, &h), EXACT));
        }
        let t = ring_segmented(p, &h, phases).unwrap_or_else(|| {
            let (np, n) = (p.ranks, p.elems);
            let stages: Vec<Phase> = (0..phases).map(|_| ALLREDUCE[0]).chain([ALLREDUCE[1]]).collect();
            // Phase j of the reduce-scatter moves piece j of every chunk; the allgather whole chunks.
            ring_items(p, &h, &stages, 1, |ph, send, _| {
                let c = block(n, np, send).len;
                if ph < phases { block(c, phases, ph).len } else { c }
            })
        });
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
    }
}

/// Registry entry: two rings in opposite directions.
pub const BIDIRECTIONAL_INFO: AlgoInfo = AlgoInfo {
    id: "bidirectional_ring",
    summary: "two rings in opposite directions, each allreducing half the vector, as two concurrent streams",
    source: "ring tutorial (two counter-rotating rings); NCCL's rings in both directions",
    requires: "any P >= 1, any n",
    closed_form: "2P dividing n, half chunks h = S/(2P), T = alpha + h/B, R = h C, one NIC or C = 0: the two \
                  rings' steps on each rank's ports and one compute unit, in issue order (a recurrence); 2 NICs, \
                  C = 0: 2(P-1)(alpha + S/(2PB)), half the ring's bandwidth term; 1 NIC, C = 0: \
                  4(P-1)(alpha + S/(2PB)), no gain and twice the alphas; otherwise (chunks of unequal size, \
                  several NICs with compute, links that differ) the two rings' steps as two streams sharing the \
                  ranks' ports and compute unit (cost_model::sweep; at one instant the unit adds pieces, and a \
                  rank numbers its rings' sends, in the order of the engine's events that let them go); bounds \
                  there where a link has alpha = 0",
    params: &[],
    build: |_| Ok(Box::new(BidirectionalRing)),
};

/// Two rings in opposite directions; see the module docs.
#[derive(Debug)]
pub struct BidirectionalRing;

/// Tags of the backward ring start here, clear of the forward ring's 2(P-1).
const BACKWARD_TAGS: u32 = 1 << 30;

impl Algorithm for BidirectionalRing {
    fn id(&self) -> &'static str {
        BIDIRECTIONAL_INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, n) = (p.ranks, p.elems);
        let half = move |h: usize| {
            let part = block(n, 2, h);
            move |i: usize| {
                let c = block(part.len, np, i);
                Region::vec(part.offset + c.offset, c.len)
            }
        };
        vec![
            Box::new(program(rank, np, Direction::Forward, ALLREDUCE, 1, 0, 0, half(0))),
            Box::new(program(rank, np, Direction::Backward, ALLREDUCE, 1, BACKWARD_TAGS, 0, half(1))),
        ]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        if let Some(t) = cost_model::Hockney::of(m).and_then(|h| bidirectional_ring(p, &h)) {
            return Some((t, EXACT));
        }
        bidirectional_ring_streams(p, m).map(|t| (t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks - 1
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Ring: `2(P-1) T(c) + (P-1) R(c)`, `c = ceil(n/P) e`.
///
/// Every step waits for the previous step's reduction, and one chunk (a largest one,
/// chunk 0) is on the critical path of every step. The course report and the survey write
/// `2(P-1)(alpha + S/(P B)) + (P-1)(S/P) C`, the same when P divides n.
pub fn ring(p: &Problem, h: &Hockney) -> f64 {
    let np = p.ranks as f64;
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems.div_ceil(p.ranks));
    2.0 * (np - 1.0) * h.t(c) + (np - 1.0) * h.r(c)
}

/// One ring phase alone: a reduce-scatter `(P-1)(T(c) + R(c))` or an allgather
/// `(P-1) T(c)`, `c = ceil(n/P) e`: as in [`ring`], a largest chunk is on the critical
/// path of every step.
pub fn ring_phase(p: &Problem, h: &Hockney, reduce: bool) -> f64 {
    if p.ranks <= 1 {
        return 0.0;
    }
    let c = p.b(p.elems.div_ceil(p.ranks));
    (p.ranks - 1) as f64 * (h.t(c) + if reduce { h.r(c) } else { 0.0 })
}

/// Ring allreduce with every chunk cut into N pieces, pipelined, when P N divides n
/// (`None` otherwise). Every rank then does the same thing at the same time (the ring
/// is symmetric), so one rank's resources tell the whole story: its k ports send the
/// 2(P-1) N pieces in program order, piece j of stage t issued once piece j of stage
/// t-1 has arrived (and, in the reduce-scatter stages, been added on its one compute
/// unit, in arrival order). The recurrence below follows exactly that. When the port is
/// never idle (one NIC and `R(s) <= (N-1) T(s)`) it is `2(P-1) N T(s)`: the whole
/// reduction hides behind the transfers, at the price of an alpha per piece.
pub fn ring_pipelined(p: &Problem, h: &Hockney, segments: usize) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(np * segments) {
        return None;
    }
    let s = p.b(p.elems / (np * segments));
    let (t, r) = (h.t(s), h.r(s));
    // Sends are issued in order, at times that never decrease.
    let mut ports = PortPool::of_nics(h.nics);
    let mut done = vec![0.0f64; segments];
    let (mut issue, mut compute, mut end) = (0.0f64, 0.0f64, 0.0f64);
    for stage in 0..2 * (np - 1) {
        for d in done.iter_mut() {
            issue = issue.max(*d);
            let arrive = ports.take(issue, t) + t;
            *d = if stage < np - 1 {
                compute = compute.max(arrive) + r;
                compute
            } else {
                arrive
            };
            end = end.max(*d);
        }
    }
    Some(end)
}

/// Open MPI's segmented ring with `phases` phases, when P times the phases divide n
/// (`None` otherwise): phase j is a ring reduce-scatter over piece j of every chunk,
/// `(P-1)(T(s_j) + R(s_j))`, the phases one after the other on every rank, then the
/// allgather of whole chunks, `(P-1) T(c)`. In the ideal model the phases buy nothing
/// but alphas; in Open MPI they bound the receive buffer to one segment, which the
/// `buffer` column shows.
pub fn ring_segmented(p: &Problem, h: &Hockney, phases: usize) -> Option<f64> {
    if p.ranks <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(p.ranks * phases) {
        return None;
    }
    let c = p.elems / p.ranks;
    let steps = (p.ranks - 1) as f64;
    let reduce: f64 = (0..phases).map(|j| p.b(block(c, phases, j).len)).map(|s| steps * (h.t(s) + h.r(s))).sum();
    Some(reduce + steps * h.t(p.b(c)))
}

/// Two rings in opposite directions over the halves of the vector, when 2P divides n
/// (`None` otherwise). The machine is symmetric, so every rank does the same thing at
/// the same time, and one rank's k ports and one compute unit tell the whole story:
/// each ring's 2(P-1) sends of `h = S/(2P)`, step t issued once step t-1 arrived (and,
/// in the reduce-scatter, was added), taken by the ports in issue order (the forward
/// ring first at a tie, as its stream runs first) and added in arrival order. With two
/// NICs and C = 0 that is `2(P-1) T(h)`; with one NIC and C = 0 the two rings take
/// turns on the port, `4(P-1) T(h)`.
///
/// With several NICs and C > 0 there is none: the two halves reach a rank at the same
/// instant, which one is added first follows the senders' ranks, so ranks fall out of
/// step with each other and the symmetry this recurrence rests on is gone.
pub fn bidirectional_ring(p: &Problem, h: &Hockney) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if !p.elems.is_multiple_of(2 * np) || (h.nics > 1 && h.c > 0.0) {
        return None;
    }
    let s = p.b(p.elems / (2 * np));
    let (t, r) = (h.t(s), h.r(s));
    let stages = 2 * (np - 1);
    // The two rings' sends merged in issue order: ready times that never decrease.
    let mut ports = PortPool::of_nics(h.nics);
    let (mut next, mut issue) = ([0usize; 2], [0.0f64; 2]);
    let (mut compute, mut end) = (0.0f64, 0.0f64);
    while next[0] < stages || next[1] < stages {
        // The next send in issue order; the forward ring (0) first at a tie.
        let x = if next[1] >= stages || (next[0] < stages && issue[0] <= issue[1]) { 0 } else { 1 };
        let arrive = ports.take(issue[x], t) + t;
        let done = if next[x] < np - 1 {
            compute = compute.max(arrive) + r;
            compute
        } else {
            arrive
        };
        issue[x] = done;
        next[x] += 1;
        end = end.max(done);
    }
    Some(end)
}

/// Two rings in opposite directions on any machine and any n: the two rings' steps as
/// two streams of every rank, taken together by [`cost_model::sweep()`] (each ring a
/// step-synchronous program: a rank passes on step t's chunk once step t-1's has
/// arrived and been added; the streams share the rank's ports and its compute unit).
/// This is where [`bidirectional_ring`] has no symmetry to rest on: chunks of unequal
/// size, several NICs with compute, or links that differ.
pub fn bidirectional_ring_streams(p: &Problem, m: &Machine) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    let n = p.elems;
    let stages = 2 * (np - 1);
    // Past its limit the sweep gives up: say so before building the two rings' messages
    // (at 1,000 ranks 4 million of them, half a gigabyte, for nothing).
    if stages.saturating_mul(np).saturating_mul(2) > cost_model::SWEEP_LIMIT {
        return None;
    }
    let streams: Vec<Vec<cost_model::Step>> = [Direction::Forward, Direction::Backward]
        .iter()
        .enumerate()
        .map(|(h, &dir)| {
            let part = block(n, 2, h);
            (0..stages)
                .map(|t| {
                    let phase = ALLREDUCE[t / (np - 1)];
                    let xfers = (0..np)
                        .map(|r| {
                            let q = dir.position(r, np);
                            let (send, _, action) = phase.step(q, np, t % (np - 1));
                            cost_model::Xfer {
                                from: r,
                                to: dir.rank(q + 1, np) as usize,
                                bytes: p.b(block(part.len, np, send).len) as u64,
                                reduce: action == Action::Reduce,
                            }
                        })
                        .collect();
                    cost_model::Step { xfers, local: Vec::new() }
                })
                .collect()
        })
        .collect();
    cost_model::sweep(m.topo, m.cost_per_byte, false, &streams)
}

/// The textbook ring over `phases` (one segment; `true` a reduce-scatter phase, `false`
/// an allgather) under LogGP (docs/loggp.md), P dividing n so that every chunk is
/// `m = (n/P) e` bytes: [`exchanges`] over its `|phases| (P-1)` steps, each a send of
/// one chunk to the right and its receive from the left, added in at a reduce-scatter
/// step. With `W = L + (m-1) G`, one port and no port waits
/// (`g + (m-1) G <= 2o + W`) this is the allreduce's
/// `(P-1)(2o + W + m C) + (P-1)(2o + W)`; a longer gap stretches every step after the
/// first to it. `None` for chunks of unequal size, whose steps are not alike.
pub fn ring_loggp(p: &Problem, l: &LogGP, c: f64, nics: u32, phases: &[bool]) -> Option<f64> {
    let np = p.ranks.max(1);
    if !p.elems.is_multiple_of(np) {
        return None;
    }
    let m = (p.elems / np * p.elem_bytes) as u64;
    let steps = phases.iter().flat_map(|&reduce| std::iter::repeat_n((m, if reduce { m } else { 0 }), np - 1));
    Some(exchanges(l, c, nics, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program bounds of allreduce `id` with its default parameters, and what they
    /// kept on the way.
    fn bounds_kept(
        id: &str,
        topo: &dyn crate::topology::Topology,
        p: crate::algos::Problem,
    ) -> ((f64, f64), crate::cost_model::Kept) {
        let algo = crate::algos::build_for(
            crate::collective::Collective::Allreduce,
            id,
            crate::algos::Params::new(Default::default()),
        )
        .unwrap();
        crate::cost_model::bounds_holding(&*algo.prepare(&p, topo), &p, topo, 1e-10).expect("bounds")
    }

    /// A ring waits for each receive by its handle; a handle it has waited for stayed
    /// held to the end of the run, so a ring on P ranks held 2(P - 1) per rank (P^2 in
    /// all: 2.4 GB for the bounds of a 5,000-node line). It holds only those not yet
    /// waited for now, and the bounds are the same.
    #[test]
    fn a_ring_holds_only_the_handles_it_has_not_waited_for() {
        let n = 200;
        let link = crate::topology::Link { alpha: 1e-6, bandwidth: 1e10 };
        let names = (0..n).map(|i| format!("n{i}")).collect();
        let line: Vec<_> = (1..n).map(|i| (i - 1, i, link)).collect();
        let topo = crate::topology::Graph::custom(names, vec![1; n], &line).unwrap();
        let p = crate::algos::Problem { ranks: n, elems: n * 4, elem_bytes: 4 };
        let (bounds, kept) = bounds_kept("ring", &topo, p);
        assert!(kept.handles <= 4, "{} handles held by one stream of a ring of {n}", kept.handles);
        assert!(bounds.0 > 0.0 && bounds.0 <= bounds.1, "{bounds:?}");
    }

    /// The bounds record which stream owns each channel only where a rank's streams may
    /// share one. The bidirectional ring's two rings tag apart, yet every channel it used
    /// was recorded: a tag a step, so 4 P (P - 1) entries, about 0.5 GB at P = 1,000
    /// against the estimate's megabyte.
    #[test]
    fn the_two_rings_tag_apart_and_record_no_channel_owners() {
        let n = 60;
        let topo = crate::topology::FullyConnected {
            ranks: n,
            link: crate::topology::Link { alpha: 1e-6, bandwidth: 1e10 },
            nics: 2,
        };
        // 2P does not divide the vector: no closed form, so the bounds are what it gets.
        let p = crate::algos::Problem { ranks: n, elems: 2 * n * 7 + 3, elem_bytes: 4 };
        let (bounds, kept) = bounds_kept("bidirectional_ring", &topo, p);
        assert_eq!(kept.owners, 0, "channel owners recorded for {n} ranks");
        assert!(kept.handles <= 4, "{} handles held", kept.handles);
        assert!(bounds.0 > 0.0 && bounds.0 <= bounds.1, "{bounds:?}");
    }

    /// The module docs' two loops, written out as they read: rank r's sends and receives
    /// (chunk indices, action) with the ranks they go to and come from.
    fn textbook(r: usize, np: usize) -> Vec<(usize, usize, usize, usize, Action)> {
        let c = |i: isize| i.rem_euclid(np as isize) as usize;
        let (right, left, r) = ((r + 1) % np, (r + np - 1) % np, r as isize);
        let mut out = Vec::new();
        for k in 0..np as isize - 1 {
            out.push((right, c(r - k), left, c(r - k - 1), Action::Reduce));
        }
        for k in 0..np as isize - 1 {
            out.push((right, c(r + 1 - k), left, c(r - k), Action::Copy));
        }
        out
    }

    #[test]
    fn the_ring_allreduce_program_is_the_textbooks_two_loops() {
        for np in [2, 3, 5, 8] {
            let n = 4 * np + 3;
            let chunk = Blocks::new(n, np);
            for r in 0..np {
                let ops: Vec<Op> =
                    program(r as Rank, np, Direction::Forward, ALLREDUCE, 1, 0, 0, blocks(n, np)).collect();
                let mut steps = Vec::new();
                let mut it = ops.iter().filter(|op| matches!(op, Op::Send { .. } | Op::Recv { .. }));
                while let (Some(Op::Send { to, src, .. }), Some(Op::Recv { from, dst, action, .. })) =
                    (it.next(), it.next())
                {
                    let index = |reg: &Region| (0..np).find(|&i| chunk.get(i) == *reg).expect("a whole chunk");
                    steps.push((*to as usize, index(src), *from as usize, index(dst), *action));
                }
                assert_eq!(steps, textbook(r, np), "rank {r} of {np}");
            }
        }
    }
}
