//! The critical path: the chain of operations that set a run's finishing time.
//!
//! # The rule
//!
//! Start from the interval that ends last (ties: the one the engine scheduled last).
//! For the current interval, starting at `t`, find what it waited for: an interval that
//! ended exactly at `t` (the engine starts work only at event times, so a dependency's
//! end and its dependant's start are the same float) and was scheduled before it:
//!
//! - a **reduction** on rank r waited for
//!   1. the message into r that delivered the data it reduces (same size) (`data`), else
//!   2. the reduction before it on r's compute unit (`compute_unit`), else
//!   3. any message into r (a copy that let r's program issue a local reduction) (`data`);
//! - a **message** a -> b issued before `t` waited for a port:
//!   1. a message out of a (`out_port`), else
//!   2. a message into b (`in_port`);
//! - a **message** issued at `t` (or one whose port wait finds nothing) waited for a's
//!   program, which moves only when a receive or reduction of a completes or, behind a
//!   send window ([`crate::sim::op::Op::WaitSends`]), when a message of a lands:
//!   1. a reduction on a (its result is typically what is sent) (`data`), else
//!   2. a message into a (`data`), else
//!   3. a message out of a (`flow_control`).
//!
//! Among several candidates of the same rule, the one scheduled last wins. The walk
//! stops at an interval that starts at time 0 or for which no rule finds anything
//! (`start`). The chain is listed first to last; every link starts when the previous
//! one ends, so `transfer_s + compute_s + idle_s` is the run's time, `idle_s` being the
//! time before the chain's first link starts.
//!
//! # Finding it while the run goes
//!
//! [`critical_path`] applies the rule to a recorded [`Timeline`]. A run that needs only
//! the path (and the link counters) uses [`PathTracker`], an observer that applies the
//! same rule as the run goes, without recording the timeline:
//!
//! - what an interval starting at `t` waited for is an interval ending at `t` on its
//!   rank or its peer, so each rank keeps the few intervals touching it that have not
//!   ended before the current instant (its messages in flight, its running reduction,
//!   and those that ended at this instant);
//! - the rule is applied to the intervals that started at `t` once the run has moved
//!   past `t`: only then are all the intervals ending at `t` known (under the flow model a
//!   message's end is known only when it is delivered);
//! - each interval carries the totals of the chain before it (messages, reductions,
//!   transfer and compute time, when the chain's first link started), added up first to
//!   last as the walk would, so the path's figures are the same floats; it keeps a link
//!   to what it waited for only while its chain could still be listed (with steps asked
//!   for, and at most [`MAX_STEPS`] long), and an interval nothing can reach any more is
//!   dropped.
//!
//! Memory is per rank a few entries, plus the intervals on chains that may still be
//! listed; tests check that both give the same path on every algorithm.

use std::collections::HashMap;

use super::{MAX_INTERVALS, Timeline};
use crate::results::PointResult;
use crate::sim::engine::{MessageInfo, Observer};
use crate::sim::op::Rank;

pub use crate::results::{CriticalPath, MAX_STEPS, PathStep, StepKind, WaitedFor};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Msg(usize),
    Comp(usize),
}

/// Interval indices per rank, sorted by (end, seq).
struct ByEnd {
    into: Vec<Vec<usize>>,
    out_of: Vec<Vec<usize>>,
    comp: Vec<Vec<usize>>,
}

impl ByEnd {
    fn new(t: &Timeline) -> Self {
        let mut into = vec![Vec::new(); t.ranks];
        let mut out_of = vec![Vec::new(); t.ranks];
        let mut comp = vec![Vec::new(); t.ranks];
        for (i, m) in t.messages.iter().enumerate() {
            into[m.dst as usize].push(i);
            out_of[m.src as usize].push(i);
        }
        for (i, c) in t.computes.iter().enumerate() {
            comp[c.rank as usize].push(i);
        }
        let key_m = |i: &usize| (t.messages[*i].end, t.messages[*i].seq);
        for v in into.iter_mut().chain(out_of.iter_mut()) {
            v.sort_by(|a, b| key_m(a).0.total_cmp(&key_m(b).0).then(key_m(a).1.cmp(&key_m(b).1)));
        }
        for v in &mut comp {
            v.sort_by(|a, b| {
                let (x, y) = (&t.computes[*a], &t.computes[*b]);
                x.end.total_cmp(&y.end).then(x.seq.cmp(&y.seq))
            });
        }
        ByEnd { into, out_of, comp }
    }
}

/// Of `list` (sorted by end), the entries ending exactly at `t`, scheduled before
/// `before`, passing `ok`: the one scheduled last.
fn last_ending_at(
    list: &[usize],
    end: impl Fn(usize) -> f64,
    seq: impl Fn(usize) -> u64,
    t: f64,
    before: u64,
    ok: impl Fn(usize) -> bool,
) -> Option<usize> {
    // Those ending at `t` are sorted by seq: search, then walk back from the last one
    // before `before` to the first that passes (no scan of them all, which made a path
    // through many intervals ending at one instant quadratic).
    let lo = list.partition_point(|&i| end(i) < t);
    let at_t = &list[lo..];
    let at_t = &at_t[..at_t.partition_point(|&i| end(i) == t)];
    at_t[..at_t.partition_point(|&i| seq(i) < before)].iter().rev().copied().find(|&i| ok(i))
}

/// The critical path of `t` (see the module docs); `with_steps` keeps the chain itself.
/// `None` for a run with no intervals.
pub fn critical_path(t: &Timeline, with_steps: bool) -> Option<CriticalPath> {
    let m_end = |i: usize| t.messages[i].end;
    let m_seq = |i: usize| t.messages[i].seq;
    let c_end = |i: usize| t.computes[i].end;
    let c_seq = |i: usize| t.computes[i].seq;

    // The last interval to end; ties to the one scheduled last.
    let last_m = (0..t.messages.len()).max_by(|&a, &b| m_end(a).total_cmp(&m_end(b)).then(m_seq(a).cmp(&m_seq(b))));
    let last_c = (0..t.computes.len()).max_by(|&a, &b| c_end(a).total_cmp(&c_end(b)).then(c_seq(a).cmp(&c_seq(b))));
    let mut node = match (last_m, last_c) {
        (None, None) => return None,
        (Some(m), None) => Node::Msg(m),
        (None, Some(c)) => Node::Comp(c),
        (Some(m), Some(c)) => {
            if (m_end(m), m_seq(m)) > (c_end(c), c_seq(c)) {
                Node::Msg(m)
            } else {
                Node::Comp(c)
            }
        }
    };
    let idx = ByEnd::new(t);

    let mut chain: Vec<(Node, WaitedFor)> = Vec::new();
    loop {
        let (start, seq) = match node {
            Node::Msg(i) => (t.messages[i].start, m_seq(i)),
            Node::Comp(i) => (t.computes[i].start, c_seq(i)),
        };
        let msg_at = |list: &[usize], ok: &dyn Fn(usize) -> bool| last_ending_at(list, m_end, m_seq, start, seq, ok);
        let comp_at = |rank: Rank| last_ending_at(&idx.comp[rank as usize], c_end, c_seq, start, seq, |_| true);
        let prev: Option<(Node, WaitedFor)> = if start <= 0.0 {
            None
        } else {
            match node {
                Node::Comp(i) => {
                    let c = &t.computes[i];
                    let into = &idx.into[c.rank as usize];
                    msg_at(into, &|j| t.messages[j].bytes == c.bytes)
                        .map(|j| (Node::Msg(j), WaitedFor::Data))
                        .or_else(|| comp_at(c.rank).map(|j| (Node::Comp(j), WaitedFor::ComputeUnit)))
                        .or_else(|| msg_at(into, &|_| true).map(|j| (Node::Msg(j), WaitedFor::Data)))
                }
                Node::Msg(i) => {
                    let m = &t.messages[i];
                    let port = if m.issued < start {
                        msg_at(&idx.out_of[m.src as usize], &|_| true)
                            .map(|j| (Node::Msg(j), WaitedFor::OutPort))
                            .or_else(|| {
                                msg_at(&idx.into[m.dst as usize], &|_| true).map(|j| (Node::Msg(j), WaitedFor::InPort))
                            })
                    } else {
                        None
                    };
                    port.or_else(|| comp_at(m.src).map(|j| (Node::Comp(j), WaitedFor::Data)))
                        .or_else(|| {
                            msg_at(&idx.into[m.src as usize], &|_| true).map(|j| (Node::Msg(j), WaitedFor::Data))
                        })
                        .or_else(|| {
                            msg_at(&idx.out_of[m.src as usize], &|_| true)
                                .map(|j| (Node::Msg(j), WaitedFor::FlowControl))
                        })
                }
            }
        };
        match prev {
            Some((p, why)) => {
                chain.push((node, why));
                node = p;
            }
            None => {
                chain.push((node, WaitedFor::Start));
                break;
            }
        }
    }
    chain.reverse();

    let mut cp = CriticalPath { messages: 0, reductions: 0, transfer_s: 0.0, compute_s: 0.0, idle_s: 0.0, steps: None };
    let mut steps = Vec::with_capacity(if with_steps { chain.len() } else { 0 });
    for &(node, why) in &chain {
        let step = match node {
            Node::Msg(i) => {
                let m = &t.messages[i];
                cp.messages += 1;
                cp.transfer_s += m.end - m.start;
                PathStep {
                    kind: StepKind::Message,
                    rank: m.src,
                    peer: Some(m.dst),
                    tag: Some(m.tag),
                    bytes: m.bytes,
                    start_s: m.start,
                    end_s: m.end,
                    waited_for: why,
                }
            }
            Node::Comp(i) => {
                let c = &t.computes[i];
                cp.reductions += 1;
                cp.compute_s += c.end - c.start;
                PathStep {
                    kind: StepKind::Reduce,
                    rank: c.rank,
                    peer: None,
                    tag: None,
                    bytes: c.bytes,
                    start_s: c.start,
                    end_s: c.end,
                    waited_for: why,
                }
            }
        };
        if with_steps {
            steps.push(step);
        }
    }
    cp.idle_s = chain
        .first()
        .map(|&(n, _)| match n {
            Node::Msg(i) => t.messages[i].start,
            Node::Comp(i) => t.computes[i].start,
        })
        .unwrap_or(0.0);
    if with_steps && steps.len() <= MAX_STEPS {
        cp.steps = Some(steps);
    }
    Some(cp)
}

const NONE: u32 = u32::MAX;

/// A rank's list of intervals is pruned once it is this long (and then at twice what the
/// last pruning kept).
const PRUNE_FROM: usize = 4;

/// Ranks with more intervals than this in their list answer [`PathTracker::latest`] from
/// an [`AtInstant`] instead of a scan. Below it a scan is cheaper.
const INDEX_FROM: usize = 32;

/// One rank's intervals that end at one instant, by kind, each list sorted by seq: what
/// [`PathTracker::latest`] asks, answered by a binary search. Built from the rank's list
/// when first asked at an instant, and extended as intervals join the list.
#[derive(Clone, Debug, Default)]
struct AtInstant {
    /// The instant's bits.
    instant: u64,
    /// False once an interval's end changed (the flow model learns ends late).
    valid: bool,
    /// `(seq, id)` of the reductions on the rank, the messages into it and out of it.
    comp: Vec<(u64, u32)>,
    into: Vec<(u64, u32)>,
    out: Vec<(u64, u32)>,
    /// The messages into it by size.
    into_by_bytes: HashMap<u64, Vec<(u64, u32)>>,
}

impl AtInstant {
    /// The intervals of `list` (rank `r`'s) that end at `t`.
    fn rebuild(&mut self, r: Rank, t: f64, list: &[u32], nodes: &Store) {
        self.instant = t.to_bits();
        self.valid = true;
        self.comp.clear();
        self.into.clear();
        self.out.clear();
        self.into_by_bytes.clear();
        let mut sorted: Vec<u32> = list.iter().copied().filter(|&x| nodes[x as usize].end == t).collect();
        sorted.sort_unstable_by_key(|&x| nodes[x as usize].seq);
        for x in sorted {
            self.push(r, x, &nodes[x as usize]);
        }
    }

    /// Interval `id` (`n`) joined rank `r`'s list at `instant`: keep it if it ends then.
    fn add(&mut self, r: Rank, id: u32, n: &Interval, instant: f64) {
        if !self.valid || self.instant != instant.to_bits() || n.end != instant {
            return;
        }
        // Intervals join in the order scheduled, so it goes last; if not, sort again.
        let last = match (n.msg, n.peer == r) {
            (false, _) => self.comp.last(),
            (true, true) => self.into.last(),
            (true, false) => self.out.last(),
        };
        if last.is_some_and(|&(seq, _)| seq > n.seq) {
            self.valid = false;
            return;
        }
        self.push(r, id, n);
    }

    fn push(&mut self, r: Rank, id: u32, n: &Interval) {
        let e = (n.seq, id);
        if !n.msg {
            self.comp.push(e);
        } else if n.peer == r {
            self.into.push(e);
            self.into_by_bytes.entry(n.bytes).or_default().push(e);
        } else {
            self.out.push(e);
        }
    }

    /// [`PathTracker::latest`] from the sorted lists.
    fn latest(&self, seq: u64, bytes: u64) -> [u32; 4] {
        let before = |v: &[(u64, u32)]| {
            let i = v.partition_point(|&(s, _)| s < seq);
            if i == 0 { NONE } else { v[i - 1].1 }
        };
        let same = self.into_by_bytes.get(&bytes).map_or(NONE, |v| before(v));
        [same, before(&self.comp), before(&self.into), before(&self.out)]
    }
}

/// An interval as [`PathTracker`] keeps it: what the path's step needs, and the totals of
/// the chain before it.
#[derive(Clone, Copy, Debug)]
struct Interval {
    msg: bool,
    /// A message issued before it started (it waited for a port).
    queued: bool,
    why: WaitedFor,
    rank: Rank,
    peer: Rank,
    tag: u32,
    bytes: u64,
    start: f64,
    end: f64,
    seq: u64,
    /// What it waited for, while its chain may still be listed (`NONE` otherwise).
    parent: u32,
    /// Holders: the per-rank lists, the pending list, the last interval, children.
    refs: u32,
    /// The chain before it: its messages and reductions, their time, and its first start.
    messages: u64,
    reductions: u64,
    transfer: f64,
    compute: f64,
    first_start: f64,
}

impl Interval {
    /// The chain's totals up to and including this interval.
    fn through(&self) -> (u64, u64, f64, f64) {
        if self.msg {
            (self.messages + 1, self.reductions, self.transfer + (self.end - self.start), self.compute)
        } else {
            (self.messages, self.reductions + 1, self.transfer, self.compute + (self.end - self.start))
        }
    }
}

/// Intervals a [`Store`] chunk holds: 96 KiB of them.
const CHUNK: usize = 1024;

/// The most a [`PathTracker`] holds per interval it keeps, bytes, as the memory
/// estimate counts it ([`crate::estimate`]): the interval, and its places on the free
/// list and on its two ranks' lists (4 bytes each, in vectors grown by doubling, so
/// three times over while one grows). With steps asked for, every interval on a chain
/// that may still be listed is kept (up to [`MAX_STEPS`] back from each interval still
/// touching a rank): `ring` at 256 ranks keeps 131,000 of its 196,000.
pub const TRACKER_BYTES_PER_INTERVAL: u64 = (std::mem::size_of::<Interval>() + 3 * (4 + 2 * 4)) as u64;

/// The most a [`PathTracker`] holds per `(src, dst)` pair of its link counters, bytes:
/// 16 and a control byte a bucket, at most 7 entries in 8 buckets, and while the table
/// grows its old buckets beside twice as many new ones.
pub const TRACKER_BYTES_PER_PAIR: u64 = 64;

/// What a [`PathTracker`]'s intervals may hold beyond [`TRACKER_BYTES_PER_INTERVAL`]
/// each, bytes, for `intervals` of them: the first chunk grows by doubling (its old and
/// new buffers held at once, up to twice the chunk beyond its entries), the last is
/// taken whole.
pub fn tracker_slack_bytes(intervals: u64) -> u64 {
    2 * intervals.min(CHUNK as u64) * std::mem::size_of::<Interval>() as u64
}

/// The tracker's intervals by index, in chunks of [`CHUNK`] that never move: a vector
/// of them grown by doubling held its old and new buffers at once, three times what it
/// held (`ring` at 256 ranks, whose chains keep 131,000 intervals: 25 MB asked at once
/// where 12.6 MB were in use). Only the first chunk grows by doubling, up to [`CHUNK`].
#[derive(Default)]
struct Store {
    chunks: Vec<Vec<Interval>>,
}

impl Store {
    /// Add `n` at the end; its index.
    fn push(&mut self, n: Interval) -> u32 {
        let full = self.chunks.last().is_none_or(|c| c.len() == CHUNK);
        if full {
            // The first chunk starts small (a short run keeps few intervals); the
            // others are taken whole, so none is ever copied.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        let k = self.chunks.len() - 1;
        let chunk = &mut self.chunks[k];
        chunk.push(n);
        (k * CHUNK + chunk.len() - 1) as u32
    }
}

impl std::ops::Index<usize> for Store {
    type Output = Interval;
    fn index(&self, i: usize) -> &Interval {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl std::ops::IndexMut<usize> for Store {
    fn index_mut(&mut self, i: usize) -> &mut Interval {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

/// A hasher for the `(src, dst)` pairs of the link counters (one multiply; the counters
/// do not depend on the map's order).
#[derive(Clone, Copy, Default)]
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Pairs = HashMap<u64, u64, std::hash::BuildHasherDefault<PairHasher>>;

/// An [`Observer`] that finds the critical path and the link counters of a run as it
/// goes, without recording its timeline (see the module docs, "Finding it while the run
/// goes"). Like a [`super::Recorder`], it gives nothing for a run of more than
/// [`MAX_INTERVALS`] intervals.
pub struct PathTracker {
    steps: bool,
    nodes: Store,
    free: Vec<u32>,
    /// Per rank: the intervals touching it that had not ended before the current instant
    /// (and, between prunings, some that had).
    touching: Vec<Vec<u32>>,
    /// Per rank: the length of `touching` at which it is next pruned.
    prune_at: Vec<usize>,
    /// Per rank with a long `touching` list: its intervals ending at the current instant,
    /// sorted for [`PathTracker::latest`].
    at_instant: Vec<Option<Box<AtInstant>>>,
    /// The intervals that started at `instant`, in the order scheduled.
    pending: Vec<u32>,
    instant: f64,
    seq: u64,
    /// Whether some interval's end was not known when it was scheduled (the flow model):
    /// from then on intervals are linked once their instant is over.
    lazy: bool,
    /// Under the flow model, per engine message handle: its interval.
    open: Vec<u32>,
    /// The interval that ends last so far (ties: the one scheduled last).
    last: u32,
    intervals: usize,
    /// Bytes per `(src, dst)` pair.
    pairs: Pairs,
    /// List entries looked at so far: the tests hold it to a multiple of the intervals.
    scanned: u64,
}

impl PathTracker {
    /// A tracker for `ranks` ranks; with `steps`, the path keeps its steps.
    pub fn new(ranks: usize, steps: bool) -> Self {
        PathTracker {
            steps,
            nodes: Store::default(),
            free: Vec::new(),
            touching: vec![Vec::new(); ranks],
            prune_at: vec![PRUNE_FROM; ranks],
            at_instant: vec![None; ranks],
            pending: Vec::new(),
            instant: 0.0,
            seq: 0,
            lazy: false,
            open: Vec::new(),
            last: NONE,
            intervals: 0,
            pairs: Pairs::default(),
            scanned: 0,
        }
    }

    /// Fill `r`'s link counters and critical path, as [`super::annotate`] does from a
    /// timeline; nothing past [`MAX_INTERVALS`] intervals.
    pub fn annotate(mut self, r: &mut PointResult) {
        if self.intervals > MAX_INTERVALS {
            return;
        }
        r.link_bytes_max = Some(self.pairs.values().copied().max().unwrap_or(0));
        r.links_used = Some(self.pairs.len() as u64);
        self.close_instant();
        r.critical_path = self.path();
    }

    fn path(&self) -> Option<CriticalPath> {
        if self.last == NONE {
            return None;
        }
        let last = &self.nodes[self.last as usize];
        let (messages, reductions, transfer_s, compute_s) = last.through();
        let mut cp =
            CriticalPath { messages, reductions, transfer_s, compute_s, idle_s: last.first_start, steps: None };
        let len = messages + reductions;
        if self.steps && len <= MAX_STEPS as u64 {
            let mut steps = Vec::with_capacity(len as usize);
            let mut at = self.last;
            while at != NONE {
                let n = &self.nodes[at as usize];
                steps.push(PathStep {
                    kind: if n.msg { StepKind::Message } else { StepKind::Reduce },
                    rank: n.rank,
                    peer: n.msg.then_some(n.peer),
                    tag: n.msg.then_some(n.tag),
                    bytes: n.bytes,
                    start_s: n.start,
                    end_s: n.end,
                    waited_for: n.why,
                });
                at = n.parent;
            }
            steps.reverse();
            debug_assert_eq!(steps.len() as u64, len);
            cp.steps = Some(steps);
        }
        Some(cp)
    }

    /// Note an interval scheduled at `start` (the current instant or later).
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        msg: bool,
        queued: bool,
        rank: Rank,
        peer: Rank,
        tag: u32,
        bytes: u64,
        start: f64,
        end: f64,
    ) -> u32 {
        if start > self.instant {
            self.close_instant();
            self.instant = start;
        }
        let node = Interval {
            msg,
            queued,
            why: WaitedFor::Start,
            rank,
            peer,
            tag,
            bytes,
            start,
            end,
            seq: self.seq,
            parent: NONE,
            refs: 1,
            messages: 0,
            reductions: 0,
            transfer: 0.0,
            compute: 0.0,
            first_start: start,
        };
        self.seq += 1;
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => self.nodes.push(node),
        };
        // While every interval's end was known when it was scheduled (the ideal model),
        // what this one waited for is known now; afterwards, once the instant is over.
        self.lazy |= end.is_infinite();
        if self.lazy {
            self.pending.push(id);
        } else {
            self.nodes[id as usize].refs = 0;
            self.resolve(id);
        }
        self.touch(rank, id);
        if msg {
            self.touch(peer, id);
        }
        if end.is_finite() {
            self.ended(id);
        }
        id
    }

    /// Add `id` to rank `r`'s list, first dropping the intervals that ended before now
    /// when the list is full (the order of the list does not matter). "Full" is twice
    /// what the last pruning kept, so that a list of many intervals that cannot be
    /// dropped yet (all ending at one instant) is not scanned at every addition.
    fn touch(&mut self, r: Rank, id: u32) {
        let list = &mut self.touching[r as usize];
        if list.len() >= self.prune_at[r as usize] {
            self.scanned += list.len() as u64;
            let now = self.instant;
            let mut i = 0;
            while i < list.len() {
                let x = list[i];
                if self.nodes[x as usize].end < now {
                    list.swap_remove(i);
                    unref(&mut self.nodes, &mut self.free, x);
                } else {
                    i += 1;
                }
            }
            self.prune_at[r as usize] = (2 * list.len()).max(PRUNE_FROM);
        }
        list.push(id);
        self.nodes[id as usize].refs += 1;
        let n = &self.nodes[id as usize];
        if let Some(at) = &mut self.at_instant[r as usize] {
            at.add(r, id, n, self.instant);
        }
    }

    /// Interval `id`'s end is known: is it the last so far?
    fn ended(&mut self, id: u32) {
        let n = &self.nodes[id as usize];
        let later = self.last == NONE || {
            let l = &self.nodes[self.last as usize];
            n.end > l.end || (n.end == l.end && n.seq > l.seq)
        };
        if later {
            self.nodes[id as usize].refs += 1;
            if self.last != NONE {
                unref(&mut self.nodes, &mut self.free, self.last);
            }
            self.last = id;
        }
    }

    /// Of the intervals touching `r` that end at `t` and were scheduled before `seq`, the
    /// one scheduled last of each kind: `[messages into r of `bytes` bytes, reductions
    /// on r, messages into r, messages out of r]` (`NONE` where there is none). `t` is
    /// always the current instant (the engine reports intervals in time order).
    fn latest(&mut self, r: Rank, t: f64, seq: u64, bytes: u64) -> [u32; 4] {
        let list = &self.touching[r as usize];
        if list.len() > INDEX_FROM && !t.is_nan() {
            // A long list: many intervals end at this instant, and scanning it for each
            // interval that starts at it would be quadratic. Sort them once.
            let fresh = self.at_instant[r as usize].as_ref().is_some_and(|a| a.valid && a.instant == t.to_bits());
            if !fresh {
                self.scanned += list.len() as u64;
                let at = self.at_instant[r as usize].get_or_insert_with(Box::default);
                at.rebuild(r, t, list, &self.nodes);
            }
            if let Some(at) = &self.at_instant[r as usize] {
                return at.latest(seq, bytes);
            }
        }
        self.scanned += list.len() as u64;
        let mut best = [NONE; 4];
        let mut best_seq = [0u64; 4];
        for &x in &self.touching[r as usize] {
            let n = &self.nodes[x as usize];
            if n.end != t || n.seq >= seq {
                continue;
            }
            let mut offer = |k: usize| {
                if best[k] == NONE || n.seq > best_seq[k] {
                    best[k] = x;
                    best_seq[k] = n.seq;
                }
            };
            if !n.msg {
                offer(1);
            } else if n.peer == r {
                offer(2);
                if n.bytes == bytes {
                    offer(0);
                }
            } else {
                offer(3);
            }
        }
        best
    }

    /// What interval `x` (started at the instant being closed) waited for, by the rule.
    fn waited_for(&mut self, x: u32) -> Option<(u32, WaitedFor)> {
        let n = self.nodes[x as usize];
        let t = n.start;
        if t <= 0.0 {
            return None;
        }
        let found = |j: u32, why: WaitedFor| (j != NONE).then_some((j, why));
        let [same, comp, into, out] = self.latest(n.rank, t, n.seq, n.bytes);
        if !n.msg {
            return found(same, WaitedFor::Data)
                .or_else(|| found(comp, WaitedFor::ComputeUnit))
                .or_else(|| found(into, WaitedFor::Data));
        }
        let port = if n.queued {
            found(out, WaitedFor::OutPort).or_else(|| found(self.latest(n.peer, t, n.seq, 0)[2], WaitedFor::InPort))
        } else {
            None
        };
        port.or_else(|| found(comp, WaitedFor::Data))
            .or_else(|| found(into, WaitedFor::Data))
            .or_else(|| found(out, WaitedFor::FlowControl))
    }

    /// The run has moved past the current instant: link each interval that started at
    /// it to what it waited for, in the order they were scheduled.
    fn close_instant(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for &x in &pending {
            self.resolve(x);
            unref(&mut self.nodes, &mut self.free, x);
        }
        self.pending = pending;
        self.pending.clear();
    }

    /// Link interval `x` to what it waited for, with the totals of the chain before it.
    fn resolve(&mut self, x: u32) {
        if let Some((p, why)) = self.waited_for(x) {
            let q = &self.nodes[p as usize];
            let (messages, reductions, transfer, compute) = q.through();
            let first_start = q.first_start;
            let keep = self.steps && messages + reductions < MAX_STEPS as u64;
            let n = &mut self.nodes[x as usize];
            n.why = why;
            (n.messages, n.reductions, n.transfer, n.compute) = (messages, reductions, transfer, compute);
            n.first_start = first_start;
            if keep {
                n.parent = p;
                self.nodes[p as usize].refs += 1;
            }
        }
    }
}

/// Drop one hold on interval `x`; free it, and its chain as far as nothing else holds
/// it, when that was the last.
fn unref(nodes: &mut Store, free: &mut Vec<u32>, mut x: u32) {
    while x != NONE {
        let n = &mut nodes[x as usize];
        n.refs -= 1;
        if n.refs > 0 {
            return;
        }
        free.push(x);
        x = n.parent;
    }
}

impl Observer for PathTracker {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        self.intervals += 1;
        if self.intervals > MAX_INTERVALS {
            return;
        }
        *self.pairs.entry(u64::from(m.src) << 32 | u64::from(m.dst)).or_insert(0) += m.bytes;
        let id = self.add(true, m.issued < start, m.src, m.dst, m.tag, m.bytes, start, end);
        if end.is_infinite() {
            let slot = m.id as usize;
            if self.open.len() <= slot {
                self.open.resize(slot + 1, NONE);
            }
            self.open[slot] = id;
        }
    }

    fn message_end(&mut self, m: &MessageInfo, end: f64) {
        if self.intervals > MAX_INTERVALS {
            return;
        }
        let Some(&id) = self.open.get(m.id as usize) else { return };
        if id == NONE {
            return;
        }
        self.open[m.id as usize] = NONE;
        if end > self.instant {
            self.close_instant();
            self.instant = end;
        }
        self.nodes[id as usize].end = end;
        // Its ranks' sorted intervals no longer hold: sort them again when next asked.
        for r in [m.src, m.dst] {
            if let Some(at) = &mut self.at_instant[r as usize] {
                at.valid = false;
            }
        }
        self.ended(id);
    }

    fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
        self.intervals += 1;
        if self.intervals > MAX_INTERVALS {
            return;
        }
        self.add(false, false, rank, rank, 0, bytes, start, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{ComputeRecord, MessageRecord};

    fn msg(src: Rank, dst: Rank, issued: f64, start: f64, end: f64, seq: u64) -> MessageRecord {
        MessageRecord { src, dst, tag: 0, bytes: 4, issued, start, end, out_port: 0, in_port: 0, seq }
    }

    #[test]
    fn follows_data_compute_and_ports() {
        // 0 -> 1 [0, 1]; 1 reduces [1, 1.5]; 1 -> 2 [1.5, 2.5]; 1 -> 2 again, issued at
        // 1.5, queued behind the first on 1's out port: [2.5, 3.5].
        let t = Timeline {
            ranks: 3,
            nics: vec![1; 3],
            messages: vec![msg(0, 1, 0.0, 0.0, 1.0, 0), msg(1, 2, 1.5, 1.5, 2.5, 2), msg(1, 2, 1.5, 2.5, 3.5, 3)],
            computes: vec![ComputeRecord { rank: 1, bytes: 4, start: 1.0, end: 1.5, seq: 1 }],
            links: None,
        };
        let cp = critical_path(&t, true).unwrap();
        let why: Vec<WaitedFor> = cp.steps.as_ref().unwrap().iter().map(|s| s.waited_for).collect();
        assert_eq!(why, [WaitedFor::Start, WaitedFor::Data, WaitedFor::Data, WaitedFor::OutPort]);
        assert_eq!((cp.messages, cp.reductions), (3, 1));
        assert_eq!(cp.transfer_s, 3.0);
        assert_eq!(cp.compute_s, 0.5);
        assert_eq!(cp.idle_s, 0.0);
        assert_eq!(cp.summary(), "3 messages, 1 reduction, 86% transfer");
    }

    #[test]
    fn a_send_behind_a_window_waited_for_the_previous_send() {
        // 0 -> 1 [0, 1]; 0 -> 2 issued at 1, when the first landed (a window of one send).
        let t = Timeline {
            ranks: 3,
            nics: vec![1; 3],
            messages: vec![msg(0, 1, 0.0, 0.0, 1.0, 0), msg(0, 2, 1.0, 1.0, 2.0, 1)],
            computes: vec![],
            links: None,
        };
        let cp = critical_path(&t, true).unwrap();
        let why: Vec<WaitedFor> = cp.steps.as_ref().unwrap().iter().map(|s| s.waited_for).collect();
        assert_eq!(why, [WaitedFor::Start, WaitedFor::FlowControl]);
        assert_eq!(cp.transfer_s, 2.0);
    }

    /// Sends every hook to a recorder and a tracker.
    struct Both<'a>(&'a mut crate::timeline::Recorder, &'a mut PathTracker);

    impl Observer for Both<'_> {
        fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
            self.0.message(m, start, end);
            self.1.message(m, start, end);
        }
        fn message_end(&mut self, m: &MessageInfo, end: f64) {
            self.0.message_end(m, end);
            self.1.message_end(m, end);
        }
        fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
            self.0.compute(rank, bytes, start, end);
            self.1.compute(rank, bytes, start, end);
        }
    }

    /// The tracker finds the path (steps and totals, bit for bit) and the link counters
    /// that the walk over the recorded timeline finds: every algorithm, rank counts with
    /// and without powers of two, empty and zero-time messages and reductions, one and two
    /// ports, both network models.
    #[test]
    fn the_tracker_finds_what_the_timeline_walk_finds() {
        use crate::algos::{self, Machine, Params, Problem};
        use crate::sim::flow::Sharing;
        use crate::sim::{Network, simulate_on};
        use crate::topology::{FatTree, FullyConnected, Link, RankOrder, Topology};
        let link = Link { alpha: 1e-6, bandwidth: 12.5e9 };
        let mut checked = 0;
        for info in algos::registry() {
            // Long chains too (more than MAX_STEPS links), for a few.
            let long: &[usize] = if matches!(info.id, "ring" | "chain" | "halving_doubling") { &[150] } else { &[] };
            for &ranks in [1, 2, 3, 5, 8, 13, 16].iter().chain(long) {
                for elems in [0, 3, 1000] {
                    for (cost, nics, flow) in [(5e-11, 1, false), (0.0, 2, false), (5e-11, 1, true), (0.0, 1, true)] {
                        let topo: Box<dyn Topology> = if flow {
                            Box::new(
                                FatTree::new(16, 10, 2, link, link).unwrap().placed(RankOrder::Strided, ranks).unwrap(),
                            )
                        } else {
                            Box::new(FullyConnected { ranks, link, nics })
                        };
                        let algo = algos::build(info.id, Params::default()).unwrap();
                        let p = Problem { ranks, elems, elem_bytes: 4 };
                        let machine = Machine { topo: topo.as_ref(), cost_per_byte: cost };
                        if algo.applicable(&p, &machine).is_err() {
                            continue;
                        }
                        let net = if flow { Network::flow(Sharing::Weighted) } else { Network::IDEAL };
                        for steps in [true, false] {
                            let mut rec = crate::timeline::Recorder::new(ranks);
                            let mut tracker = PathTracker::new(ranks, steps);
                            let none = None::<fn(&[usize]) -> crate::sim::data::DataPlane>;
                            let mut both = Both(&mut rec, &mut tracker);
                            simulate_on(algo.as_ref(), topo.as_ref(), p, cost, net, none, &mut both).unwrap();
                            let (mut want, mut got) = (PointResult::default(), PointResult::default());
                            crate::timeline::annotate(&mut want, &rec.finish().unwrap(), steps);
                            tracker.annotate(&mut got);
                            let what = format!("{} P={ranks} n={elems} C={cost} nics={nics} flow={flow}", info.id);
                            assert_eq!(got.critical_path, want.critical_path, "{what}");
                            assert_eq!(got.link_bytes_max, want.link_bytes_max, "{what}");
                            assert_eq!(got.links_used, want.links_used, "{what}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }

    /// Many intervals ending at one instant (here every time overflows to infinity on a
    /// link of 1e-308 B/s, a crafted but valid machine): the tracker still finds what the
    /// walk finds, looking at a bounded number of list entries per interval (it was
    /// quadratic: 12 s for 2 ranks, `double_binary_tree`, 1 GiB).
    #[test]
    fn many_intervals_ending_at_one_instant_cost_linear_work() {
        use crate::algos::{self, Machine, Params, Problem};
        use crate::sim::flow::Sharing;
        use crate::sim::{Network, simulate_on};
        use crate::topology::{FullyConnected, Link};
        use crate::units::ParamValue;
        for (id, param) in [
            ("double_binary_tree", Some(("chunk", 64))),
            ("ring", Some(("segments", 500))),
            ("chain", Some(("segments", 2000))),
        ] {
            for bandwidth in [1e-308, 12.5e9] {
                for (ranks, flow) in [(2, false), (3, false), (2, true)] {
                    let link = Link { alpha: 1e-6, bandwidth };
                    let topo = FullyConnected { ranks, link, nics: 1 };
                    let mut params = Params::default();
                    if let Some((k, v)) = param {
                        params = Params::new(vec![(k.to_string(), ParamValue::Int(v))]);
                    }
                    let algo = algos::build(id, params).unwrap();
                    let p = Problem { ranks, elems: 1 << 16, elem_bytes: 4 };
                    if algo.applicable(&p, &Machine { topo: &topo, cost_per_byte: 0.0 }).is_err() {
                        continue;
                    }
                    let net = if flow { Network::flow(Sharing::Weighted) } else { Network::IDEAL };
                    let mut rec = crate::timeline::Recorder::new(ranks);
                    let mut tracker = PathTracker::new(ranks, true);
                    let none = None::<fn(&[usize]) -> crate::sim::data::DataPlane>;
                    simulate_on(algo.as_ref(), &topo, p, 0.0, net, none, &mut Both(&mut rec, &mut tracker)).unwrap();
                    let intervals = tracker.intervals as u64;
                    let scanned = tracker.scanned;
                    let what = format!("{id} P={ranks} B={bandwidth} flow={flow}: {intervals} intervals");
                    assert!(intervals > 1000, "{what}");
                    assert!(scanned <= 100 * intervals, "{what}, {scanned} entries looked at");
                    let (mut want, mut got) = (PointResult::default(), PointResult::default());
                    crate::timeline::annotate(&mut want, &rec.finish().unwrap(), true);
                    tracker.annotate(&mut got);
                    // Where every end is infinite the tracker finds no last interval
                    // and reports no path, as it always did.
                    if bandwidth > 1.0 {
                        assert_eq!(got.critical_path, want.critical_path, "{what}");
                    }
                }
            }
        }
    }

    /// The sorted lists a rank with many intervals ending at one instant answers from
    /// give the same path as the walk: `k` messages 0 -> 1 of mixed sizes all landing at
    /// t = 1, then at t = 1 `k` reductions on 1 (each waits for the last message of its
    /// size) and `k` queued messages 1 -> 0 (each waits for a port), under both models
    /// (the flow model learns the messages' ends when they land).
    #[test]
    fn intervals_ending_together_are_linked_as_the_walk_links_them() {
        for flow in [false, true] {
            let k = 3000u32;
            let mut rec = crate::timeline::Recorder::new(2);
            let mut tracker = PathTracker::new(2, true);
            let mut both = Both(&mut rec, &mut tracker);
            let info = |id: u32, src: Rank, bytes: u64, issued: f64| MessageInfo {
                id,
                src,
                dst: 1 - src,
                tag: 0,
                bytes,
                issued,
            };
            for i in 0..k {
                let m = info(i, 0, u64::from(i % 7), 0.5);
                both.message(&m, 0.5, if flow { f64::INFINITY } else { 1.0 });
            }
            if flow {
                for i in (0..k).rev() {
                    both.message_end(&info(i, 0, u64::from(i % 7), 0.5), 1.0);
                }
            }
            for i in 0..k {
                both.compute(1, u64::from(i % 5), 1.0, 1.0 + f64::from(i) * 1e-3);
                let m = info(k + i, 1, 4, 0.9);
                both.message(&m, 1.0, if flow { f64::INFINITY } else { 2.0 + f64::from(i) * 1e-3 });
            }
            if flow {
                for i in 0..k {
                    both.message_end(&info(k + i, 1, 4, 0.9), 2.0 + f64::from(i) * 1e-3);
                }
            }
            let (mut want, mut got) = (PointResult::default(), PointResult::default());
            crate::timeline::annotate(&mut want, &rec.finish().unwrap(), true);
            let scanned = tracker.scanned;
            tracker.annotate(&mut got);
            assert!(want.critical_path.as_ref().is_some_and(|c| c.messages == 2), "{:?}", want.critical_path);
            assert_eq!(got.critical_path, want.critical_path, "flow={flow}");
            assert!(scanned <= 100 * 3 * u64::from(k), "flow={flow}: {scanned} entries looked at");
        }
    }

    #[test]
    fn empty_run_has_none() {
        assert!(critical_path(&Timeline::default(), true).is_none());
    }
}
