//! Binomial tree (the course report's Recursive). Rank r's parent is r with its highest
//! bit cleared; its children are `r + 2^j` for every `2^j` above r's highest bit.
//! - reduce to rank 0 ([`reduce_phase`]): add the children's partial sums, farthest
//!   (smallest subtree) first, and hand the sum up;
//! - broadcast from rank 0 ([`bcast_phase`]): take the vector from the parent, pass it
//!   to the children, nearest (largest subtree) first;
//! - allreduce: the reduce, then the broadcast.
//!
//! With `segments: N > 1` the vector is cut into N pieces that follow each other up and
//! down the tree, pipelined as in `chain`: a rank adds its children's piece s and sends
//! it up while its children already work on piece s+1; the root sends piece s down as
//! soon as the whole vector is reduced, and each rank passes piece s on to its children
//! once it has it. A rank keeps at most one piece in flight to its parent and one round
//! of pieces to its children (`WaitSends(0)` before the next): the flow control of
//! `double_binary_tree`, without which a leaf would send all its pieces at once and its
//! parent's port would take them ahead of its other children's.

use super::chain::segments_fit;
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block, clog2};
use crate::collective::Collective;
use crate::cost_model;
use crate::cost_model::loggp::{LogGP, tree_bcast};
use crate::cost_model::{Hockney, PortPool};
use crate::sim::op::{Op, Program, Rank};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0, then binomial-tree broadcast",
    source: "course report (Recursive); survey (the tree of recursive halving)",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: log2(P) (2T + R) for P a power of two; otherwise the \
                  same tree recurrence over ceil(log2 P) rounds with each rank's incoming NICs as servers; \
                  segments N > 1: the pipeline recurrence (each piece's additions and hops in order), \
                  with fewer than ceil(log2 P) NICs each parent's incoming NICs serving its children's pieces \
                  by (issue time, rank)",
    params: &["segments=1: pieces the vector is cut into and pipelined up and down the tree"],
    build: |params| {
        Ok(Box::new(BinomialTree { segments: params.count("segments", 1)?, collective: Collective::Allreduce }))
    },
};

/// Registry entry: reduce.
pub const REDUCE_INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree reduce to rank 0 (the first half of the binomial_tree allreduce)",
    source: "course report (Recursive); Open MPI reduce binomial; Chan et al. 2007 (minimum spanning tree)",
    requires: "any P >= 1, any n",
    closed_form: "log2(P) (T + R) for P a power of two, T = alpha + S/B, R = S C; otherwise the tree \
                  recurrence with each rank's incoming NICs as servers",
    params: &[],
    build: |_| Ok(Box::new(BinomialTree { segments: 1, collective: Collective::Reduce })),
};

/// Registry entry: broadcast.
pub const BCAST_INFO: AlgoInfo = AlgoInfo {
    id: "binomial_tree",
    summary: "binomial-tree broadcast from rank 0 (the second half of the binomial_tree allreduce)",
    source: "course report (Recursive); Open MPI bcast binomial; Chan et al. 2007 (minimum spanning tree)",
    requires: "any P >= 1, any n",
    closed_form: "ceil(log2 P) (alpha + S/B) with one NIC; with k, a parent sends its children k at a time, \
                  nearest first",
    params: &[],
    build: |_| Ok(Box::new(BinomialTree { segments: 1, collective: Collective::Broadcast })),
};

/// See the module docs: the allreduce, the reduce or the broadcast.
#[derive(Debug)]
pub struct BinomialTree {
    /// Pieces the vector is pipelined in.
    pub segments: usize,
    collective: Collective,
}

/// Rank r's parent (none for 0) and its children's distances `2^j`, nearest last.
pub(crate) fn binomial(r: usize, np: usize) -> (Option<usize>, impl DoubleEndedIterator<Item = usize> + Clone) {
    let rounds = clog2(np);
    let (parent, first) = if r == 0 { (None, 0) } else { (Some(r - (1 << r.ilog2())), r.ilog2() + 1) };
    let children = (first..rounds).rev().map(move |j| r + (1 << j)).filter(move |&c| c < np);
    (parent, children)
}

impl Algorithm for BinomialTree {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.segments == 1 { INFO.id.into() } else { format!("{}(segments={})", INFO.id, self.segments) }
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        segments_fit(self.segments, p.elems)
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (r, np, n, segs) = (rank as usize, p.ranks, p.elems, self.segments);
        match self.collective {
            Collective::Reduce => vec![Box::new(reduce_phase(r, np, n, segs))],
            Collective::Broadcast => vec![Box::new(bcast_phase(r, np, n, segs))],
            _ => vec![Box::new(reduce_phase(r, np, n, segs).chain(bcast_phase(r, np, n, segs)))],
        }
    }

    /// Every rank but the root sends each segment once up (reduce) and the root's result
    /// reaches it once down (broadcast).
    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let once = (p.ranks.saturating_sub(1) as u64).saturating_mul(self.segments as u64);
        Some(if self.collective == Collective::Allreduce { once.saturating_mul(2) } else { once })
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        let t = match self.collective {
            Collective::Reduce => binomial_reduce(p, &h),
            Collective::Broadcast => binomial_bcast(p, &h, 0.0),
            _ if self.segments > 1 => binomial_tree_pipelined(p, &h, self.segments).unwrap_or_else(|| {
                binomial_pipeline(p.ranks, &h, self.segments, |s| p.b(block(p.elems, self.segments, s).len))
            }),
            _ => binomial_tree(p, &h),
        };
        Some((t, EXACT))
    }

    fn closed_form_loggp(&self, p: &Problem, m: &Machine, l: &LogGP) -> Option<(f64, f64)> {
        let h = cost_model::Hockney::of(m)?;
        (self.segments == 1).then_some(())?;
        let t = match self.collective {
            Collective::Reduce => binomial_reduce_loggp(p, l, h.c)?,
            Collective::Broadcast => binomial_bcast_loggp(p, l, h.nics, 0.0),
            _ => binomial_tree_loggp(p, l, h.c, h.nics)?,
        };
        Some((t, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::Broadcast { 0 } else { clog2(p.ranks) as usize }
    }
}

/// Rank r's part of a binomial reduce to rank 0 of n elements in `segs` pieces (one:
/// the textbook tree): add the children's piece s, farthest (smallest subtree) first,
/// then hand it up once the previous piece has landed. Piece s goes up with tag `2s`.
pub(crate) fn reduce_phase(r: usize, np: usize, n: usize, segs: usize) -> impl Iterator<Item = Op> + Send {
    let seg = move |s: usize| block(n, segs, s);
    let (parent, children) = binomial(r, np);
    let up_tag = |s: usize| 2 * s as u32;
    (0..segs).flat_map(move |s| {
        let take = children.clone().flat_map(move |c| [Op::recv_reduce(c as Rank, up_tag(s), seg(s)), Op::WaitAll]);
        let pass = parent.map(|q| [Op::WaitSends(0), Op::send(q as Rank, up_tag(s), seg(s))]);
        take.chain(pass.into_iter().flatten())
    })
}

/// Rank r's part of a binomial broadcast from rank 0 of n elements in `segs` pieces:
/// take piece s from the parent, then pass it to the children, nearest (largest
/// subtree) first, once the previous round of sends has landed. Piece s goes down with
/// tag `2s + 1`. (With one piece the waits for landed sends never wait: nothing is in
/// flight by then.)
pub(crate) fn bcast_phase(r: usize, np: usize, n: usize, segs: usize) -> impl Iterator<Item = Op> + Send {
    let seg = move |s: usize| block(n, segs, s);
    let (parent, children) = binomial(r, np);
    let down_tag = |s: usize| 2 * s as u32 + 1;
    (0..segs).flat_map(move |s| {
        let take = parent.map(|q| [Op::recv_copy(q as Rank, down_tag(s), seg(s)), Op::WaitAll]);
        let pass = children.clone().rev().map(move |c| Op::send(c as Rank, down_tag(s), seg(s)));
        take.into_iter().flatten().chain([Op::WaitSends(0)]).chain(pass)
    })
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Binomial tree allreduce: [`binomial_reduce`] to rank 0, then [`binomial_bcast`] of
/// the total from when rank 0 has it. For P a power of two every level is in lockstep
/// and this is `log2 P (2 T(S) + R(S))`, the course report's formula with N = 1. For
/// other P several children reach a parent at once and queue for its port, which the
/// course report ignores.
pub fn binomial_tree(p: &Problem, h: &Hockney) -> f64 {
    binomial_bcast(p, h, binomial_reduce(p, h))
}

/// Binomial reduce to rank 0: rank r adds its children's partial sums (farthest first)
/// when they arrive through its k incoming NICs, served in order of (send time, rank).
/// `log2 P (T(S) + R(S))` for P a power of two.
pub fn binomial_reduce(p: &Problem, h: &Hockney) -> f64 {
    use super::tree::binomial as shape;
    let np = p.ranks;
    let (t, r) = (h.t(p.bytes()), h.r(p.bytes()));
    // ready[r] = when rank r has its subtree's sum (children have higher ranks).
    let mut ready = vec![0.0f64; np];
    let mut arrivals: Vec<(f64, usize)> = Vec::new();
    let mut ports = PortPool::of_nics(h.nics);
    for q in (0..np).rev() {
        let (_, children) = shape(q, np);
        arrivals.clear();
        arrivals.extend(children.clone().map(|c| (ready[c], c)));
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // q's incoming ports, all free, take the sums in order of send time.
        ports.reset(h.nics as usize);
        // Children are distinct powers of two above q: index them by that power.
        let mut arrived = [0.0f64; 64];
        for &(sent, c) in &arrivals {
            arrived[slot_of(q, c)] = ports.take(sent, t) + t;
        }
        let mut done = 0.0f64;
        for c in children {
            done = done.max(arrived[slot_of(q, c)]) + r;
        }
        ready[q] = done;
    }
    ready.first().copied().unwrap_or(0.0)
}

/// Binomial broadcast from rank 0, which has the vector at `start`: each parent sends
/// to its children nearest first on its k outgoing NICs, so child i (from the nearest)
/// has it `(i / k + 1) T(S)` after its parent. `ceil(log2 P) T(S)` with one NIC.
pub fn binomial_bcast(p: &Problem, h: &Hockney, start: f64) -> f64 {
    use super::tree::binomial as shape;
    let np = p.ranks;
    let t = h.t(p.bytes());
    let k = h.nics as usize;
    let mut got = vec![0.0f64; np];
    let mut end = 0.0f64;
    for q in 0..np {
        if q == 0 {
            got[0] = start;
        }
        let (_, children) = shape(q, np);
        for (i, c) in children.rev().enumerate() {
            got[c] = got[q] + (i / k + 1) as f64 * t;
        }
        end = end.max(got[q]);
    }
    end
}

/// The index of child `c` of `q` (`c = q + 2^j`) in a small table: `j`.
fn slot_of(q: usize, c: usize) -> usize {
    (c - q).trailing_zeros() as usize
}

/// The binomial tree with the vector cut into `segments` pieces, pipelined (see the
/// algorithm's docs), where every rank has at least `ceil(log2 P)` NICs, as many as the
/// root has children. Then no port is ever wanted by more messages than it has: a rank
/// keeps one piece in flight to its parent and one round of pieces to its children, its
/// children's pieces come up one per child, and the broadcast reaches a rank only after
/// its last piece went up. Every message starts when it is issued, and the time is the
/// recurrence of the program, piece by piece, `T_s = T(piece s)`, `R_s = R(piece s)`:
///
/// - up, children before parents: a rank adds its children's piece s in order, each from
///   `max(its arrival, the previous addition's end)`, `+ R_s`; it sends piece s once that
///   is done and piece s-1 has landed; it lands `T_s` later;
/// - down, parents before children: the root starts once its last addition is done; a
///   rank sends piece s to all its children at once, once it has it and its previous
///   round of sends has landed; they land `T_s` later.
///
/// With one segment this is not used: [`binomial_tree`] has no flow control and
/// follows its queues. With fewer NICs a parent's ports are wanted by several
/// children's pieces at once and serve them in the engine's priority order, which
/// depends on when each child's pieces are ready; no recurrence here follows that, so
/// there is no closed form (`None`). The course report does not pipeline the tree.
pub fn binomial_tree_pipelined(p: &Problem, h: &Hockney, segments: usize) -> Option<f64> {
    use super::tree::binomial as shape;
    let np = p.ranks;
    if np <= 1 {
        return Some(0.0);
    }
    if (h.nics as usize) < clog2(np) as usize {
        return None;
    }
    let seg = |s: usize| p.b(block(p.elems, segments, s).len);
    // up[q * segments + s]: when q's piece s lands at its parent.
    let mut up = vec![0.0f64; np * segments];
    let mut reduced = vec![0.0f64; np];
    for q in (0..np).rev() {
        let (parent, children) = shape(q, np);
        let (mut now, mut landed) = (0.0f64, 0.0f64);
        for s in 0..segments {
            for c in children.clone() {
                now = now.max(up[c * segments + s]) + h.r(seg(s));
            }
            if parent.is_some() {
                now = now.max(landed);
                landed = now + h.t(seg(s));
                up[q * segments + s] = landed;
            }
        }
        // The down pass may send only once the last piece up has landed.
        reduced[q] = now.max(landed);
    }
    // down[q * segments + s]: when piece s reaches q.
    let mut down = vec![0.0f64; np * segments];
    let mut end = 0.0f64;
    for q in 0..np {
        let (parent, children) = shape(q, np);
        let (mut now, mut landed) = (reduced[q], reduced[q]);
        for s in 0..segments {
            if parent.is_some() {
                now = now.max(down[q * segments + s]);
            }
            now = now.max(landed);
            if children.clone().next().is_some() {
                landed = now + h.t(seg(s));
                for c in children.clone() {
                    down[c * segments + s] = landed;
                }
            }
        }
        end = end.max(now).max(landed);
    }
    Some(end)
}

/// The pipelined binomial tree (`binomial_tree` with `segments` > 1) on any number of
/// NICs k, the vector in `segments` pieces of `seg(s)` bytes. Exact, from the program:
///
/// - **Up.** A rank adds its children's piece s one child at a time, in its children's
///   order (each receive is posted once the one before is added), then, once its piece
///   s-1 has landed at its parent, sends piece s up. A parent's incoming ports are the
///   only resource its children's pieces compete for: a child's outgoing ports carry
///   nothing else while pieces go up (one at a time: it waits for the last to land), and
///   nothing comes down before the root has added everything. So each parent's k
///   incoming ports are k servers, each taking, when it frees, the waiting piece of
///   highest priority (issue time, sender rank; a child has one piece waiting at most),
///   and a child's next piece is issued once its previous one landed and its own
///   children's next pieces are added. Children have higher ranks than their parent, so
///   a rank's arrivals are known before its parent's ports are worked out.
/// - **Down.** Once a rank has piece s and its round of piece s-1 has landed, it sends
///   piece s to its c children at once, nearest first, on its k outgoing ports: the i-th
///   lands `(i/k + 1) T_s` later and the round `ceil(c/k) T_s` later. A child's incoming
///   ports carry only its parent's pieces by then, so nothing else waits.
pub fn binomial_pipeline(np: usize, h: &Hockney, segments: usize, seg: impl Fn(usize) -> f64) -> f64 {
    use binomial as shape;
    if np <= 1 {
        return 0.0;
    }
    let k = h.nics.max(1) as usize;
    // arr[c * segments + s]: when c's piece s lands at c's parent.
    let mut arr = vec![0.0f64; np * segments];
    let mut reduced = vec![0.0f64; np];
    // Per child of the parent being worked out: its program time, next piece, the land
    // time of its last piece and the issue time of its next one.
    struct Child {
        rank: usize,
        now: f64,
        next: usize,
        landed: f64,
        issue: f64,
    }
    // The rank's own additions of its children's piece s, from its program time `now`.
    let add = |q: usize, s: usize, now: f64, arr: &[f64]| {
        shape(q, np).1.fold(now, |t, c| t.max(arr[c * segments + s]) + h.r(seg(s)))
    };
    let mut kids: Vec<Child> = Vec::new();
    let mut servers = PortPool::new(k);
    for q in (0..np).rev() {
        let (_, children) = shape(q, np);
        kids.clear();
        for c in children.clone() {
            let now = add(c, 0, 0.0, &arr);
            kids.push(Child { rank: c, now, next: 0, landed: 0.0, issue: now });
        }
        // The earliest pending issue never decreases: the piece taken is one of those
        // issued first, and its child's next issue is after it lands.
        servers.reset(k);
        loop {
            let pending = kids.iter().filter(|c| c.next < segments);
            let Some(first) = pending.clone().map(|c| c.issue).min_by(f64::total_cmp) else { break };
            let start = servers.start(first);
            // The waiting piece of highest priority: earliest issue, then lowest sender.
            let Some(pick) = (0..kids.len())
                .filter(|&i| kids[i].next < segments && kids[i].issue <= start)
                .min_by(|&a, &b| kids[a].issue.total_cmp(&kids[b].issue).then(kids[a].rank.cmp(&kids[b].rank)))
            else {
                break;
            };
            let c = &mut kids[pick];
            let s = c.next;
            let land = start + h.t(seg(s));
            servers.occupy(land);
            arr[c.rank * segments + s] = land;
            c.landed = land;
            c.next += 1;
            if c.next < segments {
                // Its next piece: its children's pieces added, then sent once this one landed.
                let now = add(c.rank, c.next, c.now, &arr);
                c.issue = now.max(land);
                c.now = c.issue;
            } else {
                reduced[c.rank] = c.now.max(land);
            }
        }
        if q == 0 {
            let mut now = 0.0f64;
            for s in 0..segments {
                now = add(0, s, now, &arr);
            }
            reduced[0] = now;
        }
    }
    let mut down = vec![0.0f64; np * segments];
    let mut end = 0.0f64;
    for q in 0..np {
        let (parent, children) = shape(q, np);
        let count = children.clone().count();
        let (mut now, mut landed) = (reduced[q], reduced[q]);
        for s in 0..segments {
            if parent.is_some() {
                now = now.max(down[q * segments + s]);
            }
            now = now.max(landed);
            if count > 0 {
                let t = h.t(seg(s));
                for (i, c) in children.clone().rev().enumerate() {
                    down[c * segments + s] = now + (i / k + 1) as f64 * t;
                }
                landed = now + count.div_ceil(k) as f64 * t;
            }
        }
        end = end.max(now).max(landed);
    }
    end
}

/// Binomial reduce to rank 0 under LogGP (docs/loggp.md), P = 2^d, one segment:
/// `d (2o + W + S C)`, `W = L + (S-1) G`, when `g <= 2o + L + S C`.
///
/// A rank whose subtree has 2^i ranks has its sum at `F(i) = i D`, `D = 2o + W + S C`:
/// its children's subtrees have 2^0, ..., 2^(i-1) ranks and it takes them in that order
/// (farthest first). The child of order a has its sum at `a D`, pays `o` and sends; the
/// parent posted that receive when it finished the child before, at `a D` too, so a
/// rendezvous never waits; its incoming port is free again `g + (S-1) G` after the
/// previous child's message started at `(a-1) D + o`, by `a D + o` exactly when
/// `g <= 2o + L + S C`. The message lands at `a D + o + W`, when the parent's CPU is idle
/// (its addition of the child before ended at `a D`); the receive's `o` and the
/// addition make `(a+1) D`. `None` for other P or a longer gap, where children queue.
pub fn binomial_reduce_loggp(p: &Problem, l: &LogGP, c: f64) -> Option<f64> {
    let np = p.ranks.max(1);
    let s = p.bytes() as u64;
    let d = 2.0 * l.o + l.wire(s) + p.bytes() * c;
    (np.is_power_of_two() && l.gap(s) <= d).then(|| clog2(np) as f64 * d)
}

/// Binomial broadcast from rank 0 under LogGP (docs/loggp.md), rank 0 having the vector
/// at `start`, any P: every rank posted its receive at the start, so each parent sends to
/// its children (nearest first) as [`tree_bcast`] says; the time is the last rank's.
/// With one port each send takes `max(o, g + (S-1) G)` after the one before, so child i
/// has it `o + i max(o, g + (S-1) G) + W + o` after its parent.
pub fn binomial_bcast_loggp(p: &Problem, l: &LogGP, nics: u32, start: f64) -> f64 {
    let np = p.ranks.max(1);
    let got = tree_bcast(l, nics, p.bytes() as u64, np, start, |q| binomial(q, np).1.rev());
    got.into_iter().fold(start, f64::max)
}

/// Binomial tree allreduce under LogGP (docs/loggp.md), P = 2^d, one segment, when
/// `g <= 2o + L + S C`: [`binomial_reduce_loggp`], then [`binomial_bcast_loggp`] from
/// its end. The broadcast finds every port it needs out of its gap (each rank's last
/// message in the reduce took its ports at least `2o + L + S C` before the rank has the
/// total) and every receive posted (a rank posts it right after sending its sum up).
pub fn binomial_tree_loggp(p: &Problem, l: &LogGP, c: f64, nics: u32) -> Option<f64> {
    let reduced = binomial_reduce_loggp(p, l, c)?;
    Some(binomial_bcast_loggp(p, l, nics, reduced))
}
