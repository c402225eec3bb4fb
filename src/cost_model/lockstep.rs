//! The max-plus recurrence of a step-synchronous program: the closed form of the
//! topology-aware algorithms whose messages do not all cost the same (a mesh's
//! wrap-around pair, a torus with n not divisible, pipelined trees).
//!
//! A program is *step-synchronous* when every rank runs the same numbered steps and, in
//! step s, issues its sends of that step, posts its receives, and ends the step once
//! every receive has landed and been reduced (then, optionally, runs some local
//! reductions and waits for them too). A message of step s is received in the
//! receiver's step s. `torus_2d`, `mesh_2d` and `double_binary_tree` are written that way.
//!
//! With `d_r(s)` the time rank r ends step s (`d_r(-1) = 0`), a message of `m` bytes from
//! a to b in step s is issued at `d_a(s-1)` and
//!
//! ```text
//! start = the first instant >= issue at which a has a free out-port and b a free in-port
//! end   = start + alpha_ab + m / B_ab
//! ```
//!
//! where the k out-ports (in-ports) of the interface the message leaves (enters) by are
//! interchangeable and each holds one message at a time (the ideal model:
//! docs/model.md). A rank is one interface of its `nics` ports, except on a GPU cluster,
//! whose GPUs talk inside a node through their own interface and across nodes through
//! a NIC that several GPUs may share ([`Topology::route_interfaces`]). The messages are taken step
//! by step. Within a step they are served as the model serves them: at every instant
//! at which a message of the step is issued or a port frees, the issued messages still
//! waiting take free ports greedily in the engine's priority order `(issue time, sender,
//! sender's sequence)`, so a message whose receiver is busy does not hold up a later one
//! of the same step that can go (that order is the model's rule, fixed by the step's own
//! data, not a race). Each is booked on its two sides for `[start, end)`. A booking may
//! land in a gap before a message of an earlier step booked later in time (a lagging
//! peer's), as the engine's ports would fill it; where a windowed sender's messages are
//! concerned, the step may also be booked in plain priority order, each message at the
//! first instant both its sides are free, and either booking that passes the checks
//! below is the time. The receiver reduces what it received on its one compute unit,
//! first come
//! first served from `max(end, d_b(s-1))`, so
//!
//! ```text
//! d_b(s) = max(d_b(s-1), copies' ends, FIFO completion of the reductions) + local reductions
//! ```
//!
//! and the time is the latest step end or message end (a sender is busy until its last
//! message lands). The FIFO completion does not depend on how jobs that land at the same
//! instant are ordered, so exact ties cannot change the result.
//!
//! **Windowed sends** (the flow control of `double_binary_tree` and `mesh_2d`): a rank
//! keeps at most `k` of a step's sends undelivered, so its i-th send of a step (from 0)
//! is issued at `max(issue of send i-1, the (i-k+1)-th earliest end of sends 0..i)`,
//! and `d_a(s)` also waits for the ends of all of a's sends of step s. Every send so
//! issued at an instant waits for a port from that instant, in its priority, however
//! many one instant's landings let go.
//!
//! **When it is exact.** The engine hands a port that frees to the waiting message of
//! highest priority, whatever its step; the recurrence books messages in step order.
//! The two agree unless a message of a later step gets a port first that an earlier
//! step's message then has to wait for (a rank that has run ahead of its neighbours).
//! So each booking is checked against the two ways that can happen, and the recurrence
//! gives up (`None`) if either does:
//!
//! - the message would still hold a side when a message booked before it (of an
//!   earlier step) starts there, so that the engine would have delayed that one; or
//! - while it waited, a message of lower priority took the last free port of one side
//!   at an instant when the other side had a port free (not counting that message,
//!   where its own far side is the same interface: two GPUs sharing a NIC), so that
//!   the engine would have given the port to this one.
//!
//! Then the steps must be taken together, which [`super::sweep()`] does. (Messages
//! between the same two ranks never overtake each other: same ports, and the earlier
//! has the higher priority.) Where no booking trips either check,
//! every message starts where the engine starts it, by induction over the bookings in
//! the order made.
//!
//! Times are computed with the same floating-point operations as the engine, in the
//! same order along every path, so where the recurrence holds it agrees with the engine
//! to the last bit in practice, far inside the 1e-9 the closed forms are held to.

use std::collections::BinaryHeap;

use crate::topology::Topology;

/// One message of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Xfer {
    /// Sender.
    pub from: usize,
    /// Receiver.
    pub to: usize,
    /// Payload, bytes.
    pub bytes: u64,
    /// Reduced into the receiver's buffer on arrival (else copied, which costs nothing).
    pub reduce: bool,
}

/// What the ranks do in one step: the messages (each sender's in its program order) and
/// the local reductions each rank runs once the step's receives are done, in order.
#[derive(Clone, Debug, Default)]
pub struct Step {
    /// Messages of the step.
    pub xfers: Vec<Xfer>,
    /// `(rank, bytes)`: local reductions after the receives.
    pub local: Vec<(usize, u64)>,
}

impl Step {
    /// Empty the step for reuse.
    pub fn clear(&mut self) {
        self.xfers.clear();
        self.local.clear();
    }
}

/// A message's priority in the engine: `(issue time, sender, sender's sequence)`.
type Prio = (f64, usize, u64);

/// The engine's order of priorities (times are never negative, so `total_cmp` is `<`).
fn prio_cmp(a: Prio, b: Prio) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
}

fn less(a: Prio, b: Prio) -> bool {
    prio_cmp(a, b).is_lt()
}

/// A message booked on one port: when it holds the port, its priority, the interface
/// of its other side (where it holds a port for the same span), and the number of the
/// booking in the run (bookings are numbered in the order made).
#[derive(Clone, Copy, Debug)]
struct Booking {
    start: f64,
    end: f64,
    prio: Prio,
    far: usize,
    id: u64,
}

/// One side (out or in) of one interface's `k` ports: the messages booked on it, by start.
/// Bookings need not come in time order (a message of a later step may fit in a gap
/// left before a lagging peer's message of an earlier step). As in the engine, ports are
/// interchangeable: a side is free at an instant when fewer than `k` bookings hold it.
///
/// The bookings of earlier steps ([`Ports::old`]) are kept apart from the current
/// step's ([`Ports::cur`]), both by start, and every booking's start and end are kept
/// sorted on their own: how many hold the side at `t` is then the starts up to `t` less
/// the ends up to `t` (a booking ends no sooner than it starts), two binary searches
/// where a walk over the bookings made the checks below cost the square of the bookings
/// per port.
///
/// The latest start and the latest end of any booking made on the side are kept beside
/// `k`, in the struct itself: a side asked about at an instant past every booking's end
/// (or, for the bookings that start late, past every start) is answered from them alone.
/// Every side's vectors are apart on the heap, each of their tails a cache miss, and a
/// message's checks read the tails of each of its two sides' vectors: where every rank
/// sends one message a step (`neighbor_exchange` at 2,048 and 4,096 ranks) the sides are
/// thousands and each is touched once a step, so nearly every such read missed.
#[derive(Clone, Debug)]
#[repr(C)]
struct Ports {
    k: usize,
    /// The latest start and end of a booking made here (of those dropped too); minus
    /// infinity before the first.
    hi_start: f64,
    hi_end: f64,
    /// The bookings, earlier steps' (`..split`) then the current step's, each part by
    /// start: one vector, so that a new step costs no move (the two were apart, and the
    /// step's bookings were appended to the earlier ones at every step, a cache miss a
    /// side).
    all: Vec<Booking>,
    split: usize,
    starts: Vec<f64>,
    ends: Vec<f64>,
    /// How many bookings were left when those ended were last dropped ([`Ports::next_step`]).
    kept: usize,
    /// Bookings and ends looked at or moved since last taken ([`by_priority`]'s budget).
    looks: std::cell::Cell<u64>,
}

/// Insert `x` into sorted `v` after every element not above it.
fn insert_sorted(v: &mut Vec<f64>, x: f64) {
    let at = upto(v, x);
    v.insert(at, x);
}

/// How many elements of sorted `v` are not above `t` (`v.partition_point(|&x| x <= t)`),
/// found from the back, doubling the stride: where few lie past `t` (the bookings still
/// holding a side at the instant served, the ends still to come) that is a probe or two
/// of the vector's last, cached, elements. A binary search over every side's thousand
/// starts and ends missed the cache at each probe: most of the step recurrence's time on
/// `naive` at 512 ranks.
fn upto(v: &[f64], t: f64) -> usize {
    let n = v.len();
    let mut stride = 1;
    // Every element from `n - stride / 2` on is above `t`.
    while stride <= n && v[n - stride] > t {
        stride *= 2;
    }
    let lo = n.saturating_sub(stride);
    lo + v[lo..n - stride / 2].partition_point(|&x| x <= t)
}

/// How many bookings of `v` (by start) come before the first for which `past` holds
/// (`v.partition_point(|b| !past(b))`), found from the back, doubling the stride as
/// [`upto`] does: the earlier steps' bookings a step asks about start late, among the
/// last, cached, ones. A binary search over a side's thousands of earlier bookings
/// missed the cache at each probe (`torus_2d` on a mesh of one row of 1,024 ranks: a
/// third of the run).
fn before_back(v: &[Booking], past: impl Fn(&Booking) -> bool) -> usize {
    let n = v.len();
    let mut stride = 1;
    // Every booking from `n - stride / 2` on is past.
    while stride <= n && past(&v[n - stride]) {
        stride *= 2;
    }
    let lo = n.saturating_sub(stride);
    lo + v[lo..n - stride / 2].partition_point(|b| !past(b))
}

/// The bookings of earlier steps in `v` (by start) that start in `[from, to]`, found
/// from the back ([`before_back`]).
fn starting_late(v: &[Booking], from: f64, to: f64) -> &[Booking] {
    let hi = before_back(v, |b| b.start > to);
    let lo = before_back(&v[..hi], |b| b.start >= from);
    &v[lo..hi]
}

/// The bookings of `v` (by start) that start in `[from, to]`: found from the front,
/// doubling the stride, where they lie there (a step's bookings from its first instant).
fn starting_in(v: &[Booking], from: f64, to: f64) -> &[Booking] {
    let lo = if v.first().is_none_or(|b| b.start >= from) { 0 } else { v.partition_point(|b| b.start < from) };
    let rest = &v[lo..];
    let mut stride = 1;
    // Every booking of `rest` before `stride / 2` starts by `to`.
    while stride <= rest.len() && rest[stride - 1].start <= to {
        stride *= 2;
    }
    let head = stride / 2;
    let hi = head + rest[head..stride.min(rest.len())].partition_point(|b| b.start <= to);
    &rest[..hi]
}

impl Ports {
    fn new(k: u32) -> Self {
        Ports {
            k: k.max(1) as usize,
            hi_start: f64::NEG_INFINITY,
            hi_end: f64::NEG_INFINITY,
            all: Vec::new(),
            split: 0,
            starts: Vec::new(),
            ends: Vec::new(),
            kept: 0,
            looks: std::cell::Cell::new(0),
        }
    }

    /// The bookings of earlier steps, by start.
    fn old(&self) -> &[Booking] {
        &self.all[..self.split]
    }

    /// The bookings of the current step, by start.
    fn cur(&self) -> &[Booking] {
        &self.all[self.split..]
    }

    /// Counts `n` bookings or ends looked at or moved.
    fn look(&self, n: usize) {
        self.looks.set(self.looks.get() + n as u64);
    }

    /// How many bookings hold the side at instant `t`.
    fn held_at(&self, t: f64) -> usize {
        // Every booking ended by `t` (and so started): none holds the side.
        if t >= self.hi_end {
            return 0;
        }
        upto(&self.starts, t) - upto(&self.ends, t)
    }

    /// The first end of a booking after `t` (infinite where none is left): the next
    /// instant at which a side full at `t` may free.
    fn next_end(&self, t: f64) -> f64 {
        if t >= self.hi_end {
            return f64::INFINITY;
        }
        self.ends.get(upto(&self.ends, t)).copied().unwrap_or(f64::INFINITY)
    }

    /// The first instant from `x` on at which a port is free: `x`, or the end of a
    /// booking.
    fn free_from(&self, x: f64) -> f64 {
        if self.held_at(x) < self.k {
            return x;
        }
        let after = self.ends.partition_point(|&e| e <= x);
        let found = self.ends[after..].iter().position(|&t| self.held_at(t) < self.k);
        self.look(found.map_or(self.ends.len() - after, |n| n + 1));
        found.map_or(f64::INFINITY, |n| self.ends[after + n])
    }

    /// Whether a port stays free for all of `[start, end)` (the count of holders only
    /// rises at a booking's start).
    fn fits(&self, start: f64, end: f64) -> bool {
        if self.hi_start <= start {
            // Nothing starts after `start`: the count of holders cannot rise in the span.
            return self.held_at(start) < self.k;
        }
        let inside = |v: &[Booking]| {
            // Where nothing starts after `start` (a step served in time order), no search.
            if v.last().is_none_or(|b| b.start <= start) {
                return true;
            }
            let lo = before_back(v, |b| b.start > start);
            let hi = before_back(v, |b| b.start >= end);
            self.look(hi.saturating_sub(lo));
            v[lo..hi.max(lo)].iter().all(|b| self.held_at(b.start) < self.k)
        };
        self.held_at(start) < self.k && inside(self.old()) && inside(self.cur())
    }

    fn book(&mut self, b: Booking) {
        self.hi_start = self.hi_start.max(b.start);
        self.hi_end = self.hi_end.max(b.end);
        let cur = self.cur();
        let at = match cur.last() {
            Some(o) if o.start > b.start => cur.partition_point(|o| o.start <= b.start),
            _ => cur.len(),
        };
        self.look(cur.len() - at);
        self.all.insert(self.split + at, b);
        insert_sorted(&mut self.starts, b.start);
        insert_sorted(&mut self.ends, b.end);
    }

    /// Whether a message of lower priority than `prio` took the last free port here at
    /// a time in `[from, to]` at which `other` (the ports of interface `far`, the far
    /// end's) had a port free, not counting that message itself where it holds a port of
    /// `far` too: the engine would have given it to the message of priority `prio`,
    /// issued at `from` and waiting. Two GPUs that share a NIC send through one
    /// interface to one: a message of the other GPU that starts there found both sides
    /// free, as the waiting message would have (a test of the far rank instead of the far
    /// interface missed it). Two messages between the same two ranks never count: the
    /// earlier-issued has the higher priority.
    ///
    /// Only bookings of earlier steps, and of this step those numbered below `since`,
    /// are looked at: the callers book a step's messages so that no other booking of it
    /// can pass the message over ([`by_instant`] serves the waiting messages in priority
    /// order at every instant, so a lower one took a port the message also had free
    /// only if the message was not yet waiting: booked before `since`, at `from`;
    /// [`by_priority`] books a step's messages in priority order, `since` 0).
    fn passed_over(&self, prio: Prio, far: usize, (from, to): (f64, f64), since: u64, other: &Ports) -> bool {
        if self.hi_start < from {
            // No booking starts in `[from, to]`: none looked at.
            return false;
        }
        let (early, old) = (starting_in(self.cur(), from, from), starting_late(self.old(), from, to));
        self.look(early.len() + old.len());
        let early = early.iter().filter(|b| b.id < since);
        old.iter().chain(early).any(|b| {
            b.end > b.start
                && less(prio, b.prio)
                && self.held_at(b.start) >= self.k
                && other.held_at(b.start).saturating_sub(usize::from(b.far == far)) < other.k
        })
    }

    /// Start a new step: the bookings made so far become earlier steps'. Those that end
    /// before `t` no longer matter (no message is issued before `t` any more, and a
    /// booking that starts and ends before an instant adds nothing to the holders at it),
    /// so they are dropped, with their starts and ends, once the side has grown by a
    /// quarter since they were last dropped: each booking is moved a few times at most,
    /// and a side holds at most a quarter more than it needs. Where ranks drift apart (a
    /// torus's ring on a mesh of one row, whose closing pair is 1,023 hops) every booking
    /// since the slowest rank's step stays live, and sorting and copying them all at every
    /// step was most of the run.
    fn next_step(&mut self, t: f64) {
        if self.split < self.all.len() {
            // Bookings mostly come in time order: then the step's go after the earlier.
            let after = self.old().last().is_none_or(|o| o.start <= self.all[self.split].start);
            if !after {
                self.all.sort_by(|a, b| a.start.total_cmp(&b.start));
            }
            self.split = self.all.len();
        }
        if self.all.len() >= self.kept + self.kept / 4 + 16 {
            self.all.retain(|b| b.end >= t);
            self.split = self.all.len();
            self.starts.clear();
            self.starts.extend(self.all.iter().map(|b| b.start));
            self.ends.retain(|&e| e >= t);
            self.kept = self.all.len();
        }
    }
}

/// A message of the step waiting to be issued: its priority, and where it lies in its
/// sender's run. Ordered by priority, lowest first (for a `BinaryHeap`).
#[derive(Clone, Copy, Debug)]
struct Ready {
    prio: Prio,
    /// Index into the step's messages sorted by sender.
    at: usize,
    /// The number of the next booking when it began to wait ([`Ports::passed_over`]).
    since: u64,
}

impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        prio_cmp(o.prio, self.prio)
    }
}

/// Bytes the step recurrence holds for each message of the step it is serving
/// (`by_instant`, the larger of its two services): the message ([`Xfer`]), its place
/// among its sender's (`runs`), its wait (`Ready`), whether it started and when last
/// looked at, its two sides, its place in those sides' lists, its entries in the index by
/// pair of sides (`ByPair`: position, pair, offsets, a pair of its own at the most, its
/// place by in side, and its share of the pair's bit rows, which are built only where no
/// larger than the messages), its receiver's job, its sender's end, and its instants in
/// the heaps (an issue, an end and a wake; two frees and a wake). Held for the largest
/// step while it is served; the caller counts the growth of the vectors that hold them.
pub const BYTES_PER_STEP_MESSAGE: u64 = (std::mem::size_of::<Xfer>()
    + std::mem::size_of::<(usize, u64)>()
    + std::mem::size_of::<Ready>()
    + std::mem::size_of::<bool>()
    + std::mem::size_of::<u64>()
    + std::mem::size_of::<(usize, usize)>()
    + 2 * std::mem::size_of::<usize>()
    + 3 * std::mem::size_of::<usize>()
    + std::mem::size_of::<[usize; 2]>()
    + std::mem::size_of::<Pair>()
    + 2 * std::mem::size_of::<u64>()
    + std::mem::size_of::<(f64, u64, bool)>()
    + std::mem::size_of::<f64>()
    + 3 * std::mem::size_of::<u64>()
    + 3 * std::mem::size_of::<(u64, usize)>()) as u64;

/// Bytes the step recurrence holds for each message it has booked and not yet dropped
/// (`Ports::next_step` drops only bookings that ended before every rank's last step
/// end, so where ranks drift apart every booking of the run may stay): a `Booking` on
/// each of its two sides, with its start and end in each side's sorted lists.
pub const BYTES_PER_BOOKING: u64 = 2 * (std::mem::size_of::<Booking>() + 2 * std::mem::size_of::<f64>()) as u64;

/// What [`by_instant`] may spend on a program, in waiting messages looked at: this many
/// per message of the steps read so far, plus [`WORK_FLOOR`]. Where a port's waiting
/// list is long and the sides free out of turn (`direct` with blocks of two lengths at
/// 1,024 ranks: a million messages in one step, each side's list a thousand long), the
/// instant-by-instant service looks at a side's whole list at each of its frees, about
/// P^3 looks, and minutes went into a recurrence that then gave up on a rank running
/// ahead. Counting looks, not seconds, keeps the outcome the same on every machine.
///
/// [`by_priority`], tried where the service gives up, keeps to the same budget in
/// bookings and ends looked at or moved: a side's bookings are sorted vectors, and where
/// one side takes a thousand messages of a step back to back (`direct`'s allgather at
/// 1,000 ranks) each booking walked all of that side's ends for a free port, about
/// P^3 looks: 22 s of a 28 s run, before a closed form that then gave up.
pub const WORK_PER_MESSAGE: u64 = 64;

/// The looks [`by_instant`] and [`by_priority`] may always spend, however few the messages.
pub const WORK_FLOOR: u64 = 1 << 22;

/// The time of a step-synchronous program of `steps` steps on `topo` with `c` seconds
/// per byte reduced; `fill(s, step)` describes step `s`. With `windowed`, a rank keeps at
/// most `nics` of a step's sends undelivered and ends the step once all have landed
/// ([`crate::sim::op::Op::WaitSends`]). `None` where a port would serve messages out of
/// step order (see the module docs), or where the instant-by-instant service would look
/// at more waiting messages than its budget (`WORK_PER_MESSAGE`) and the bookings in
/// priority order do not hold.
pub fn lockstep(
    topo: &dyn Topology,
    c: f64,
    steps: usize,
    windowed: bool,
    mut fill: impl FnMut(usize, &mut Step),
) -> Option<f64> {
    by_instant(topo, c, steps, windowed, (WORK_FLOOR, WORK_PER_MESSAGE), &mut fill)
        .or_else(|| by_priority(topo, c, steps, windowed, (WORK_FLOOR, WORK_PER_MESSAGE), &mut fill))
}

/// Book message `x` of priority `prio` on its two sides for `[start, end)` as booking
/// `id`, unless it would delay a message of an earlier step booked to start while it holds
/// a port, or was passed over by one while it waited (bookings of this step numbered
/// below `since` count too): then the engine's order is not the step order, nothing is
/// booked, and the caller gives up (`false`).
fn book_checked(
    out: &mut Ports,
    inp: &mut Ports,
    (oi, ii): (usize, usize),
    prio: Prio,
    since: u64,
    span: (f64, f64),
    id: u64,
) -> bool {
    let (start, end) = span;
    // A message of no time holds its ports until the instant's next round in the
    // engine; the bookings here free them at once.
    if end <= start {
        return false;
    }
    if !out.fits(start, end) || !inp.fits(start, end) {
        return false;
    }
    let waited = (prio.0, start);
    if out.passed_over(prio, ii, waited, since, inp) || inp.passed_over(prio, oi, waited, since, out) {
        return false;
    }
    out.book(Booking { start, end, prio, far: ii, id });
    inp.book(Booking { start, end, prio, far: oi, id });
    true
}

/// The next instant in `marks` (times as bits, earliest first) after `now`; `None` when
/// none is left.
fn next_mark(marks: &mut BinaryHeap<std::cmp::Reverse<u64>>, now: f64) -> Option<u64> {
    loop {
        let std::cmp::Reverse(bits) = marks.pop()?;
        if f64::from_bits(bits) > now {
            return Some(bits);
        }
    }
}

/// Whether the out side `oi` (ports `o`) or the in side `ii` (ports `i`) of a message
/// has no port free at `now`. A side found full stays full for the rest of the instant
/// (bookings only add holders), so it is marked in `full` for instant `instant` and not
/// counted again; `wake(kind, face, end)` hears of each side newly found full (out sides
/// kind 0, in sides 1) with the first end of one of its bookings after `now`, the next
/// instant at which it may free.
fn side_full(
    o: &Ports,
    i: &Ports,
    (oi, ii): (usize, usize),
    full: &mut [Vec<u64>; 2],
    (now, instant): (f64, u64),
    mut wake: impl FnMut(usize, usize, f64),
) -> bool {
    if full[0][oi] == instant || full[1][ii] == instant {
        return true;
    }
    let o_full = o.held_at(now) >= o.k;
    let i_full = i.held_at(now) >= i.k;
    if o_full {
        full[0][oi] = instant;
        wake(0, oi, o.next_end(now));
    }
    if i_full {
        full[1][ii] = instant;
        wake(1, ii, i.next_end(now));
    }
    o_full || i_full
}

/// Side `side` (out sides, then in sides) is full until `end` at the earliest: at `end`
/// it is an instant, and the side frees (its list is looked at again).
fn wake(
    marks: &mut BinaryHeap<std::cmp::Reverse<u64>>,
    frees: &mut BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
    side: usize,
    end: f64,
) {
    if end.is_finite() {
        marks.push(std::cmp::Reverse(end.to_bits()));
        frees.push(std::cmp::Reverse((end.to_bits(), side)));
    }
}

/// How many messages a freed side's walk passes over before [`ByPair::first`] looks
/// its next message up instead.
const WALK: usize = 8;

/// A waiting message's pair of sides: its out side and in side, and its messages not yet
/// started (`ByPair::msgs[next..end]`, by priority).
#[derive(Clone, Copy, Debug)]
struct Pair {
    oi: usize,
    ii: usize,
    next: usize,
    end: usize,
}

/// An unwindowed step's waiting messages by pair of sides, for a step whose messages are
/// many for its interfaces (every rank to every other). On a hierarchy or a torus the
/// sides free out of turn, and a freed side's list (a rank's P - 1 messages) was walked
/// past message after message whose other side was busy: about P^3 looks in all, 1 s at
/// 256 ranks, where the simulation took 0.06 s. Here a walk passes over a few; then the
/// side's first message whose other side may have a port free is looked up in bit rows
/// (the engine's `Pairs` index, in small): the pairs of the side whose first waiting
/// message is issued, and the sides that may have a port free.
///
/// The service is the same: a message is still booked at an instant only if both its
/// sides have a port free at its turn in priority order. A side found full stays full
/// until one of its bookings ends (an end frees the side at that instant, so it is set
/// again, see `maybe`), and the messages the look-up passes over are those a walk would
/// have passed over (their other side full, or, for an in-list, their sender freed at the
/// instant: that sender's own walk offers them in the same priority order).
#[derive(Debug, Default)]
struct ByPair {
    faces: usize,
    words: usize,
    /// Positions in `waiting`, grouped by pair, by priority within each.
    msgs: Vec<usize>,
    /// The pairs by out side, then in side.
    pairs: Vec<Pair>,
    /// Per position, its pair; and its offsets in its out side's and in side's lists.
    pair_of: Vec<usize>,
    off: Vec<[usize; 2]>,
    /// Where each out side's pairs begin in `pairs` (and one past the last).
    out_at: Vec<usize>,
    /// The pairs by in side, then out side, and where each in side's begin.
    by_in: Vec<usize>,
    in_at: Vec<usize>,
    /// Rows of bits, by out side (`has[0]`, a bit an in side) and by in side (`has[1]`):
    /// the pair's first message not started is issued.
    has: [Vec<u64>; 2],
    /// Out sides (`maybe[0]`) and in sides that may have a port free: cleared when found
    /// full, set when one of their bookings ends.
    maybe: [Vec<u64>; 2],
    /// Out sides freed at this instant (their own walks offer their messages), and a list
    /// of them to clear.
    freed: Vec<u64>,
    freed_list: Vec<usize>,
    /// Per side (out sides, then in sides), the peer its list begins with, where the list
    /// holds each peer's messages together and the peers in turn from that one, wrapping
    /// (`naive`'s and `direct`'s out-lists, `r+1, r+2, ...`): its first message to a
    /// peer with a port free is then the first such peer from there, no minimum needed.
    turn: Vec<Option<usize>>,
}

/// Where `peer` is in `v`, whose peers (`key`) ascend and which holds it: first tried
/// where every peer below it is there, with or without one more (a rank's messages to
/// every other rank), then searched.
fn find<T>(v: &[T], peer: usize, key: impl Fn(&T) -> usize) -> usize {
    for guess in [peer, peer.wrapping_sub(1)] {
        if v.get(guess).is_some_and(|x| key(x) == peer) {
            return guess;
        }
    }
    v.partition_point(|x| key(x) < peer)
}

fn bit(v: &[u64], i: usize) -> bool {
    v[i / 64] >> (i % 64) & 1 != 0
}

fn set_bit(v: &mut [u64], i: usize, on: bool) {
    if on {
        v[i / 64] |= 1 << (i % 64);
    } else {
        v[i / 64] &= !(1 << (i % 64));
    }
}

impl ByPair {
    /// Index the step's waiting messages (`route_at` their sides, `lists` the sides'
    /// lists, out sides then in sides), if the bit rows are no larger than the messages:
    /// `false` (nothing indexed) where they would be.
    fn build(&mut self, faces: usize, route_at: &[(usize, usize)], lists: &[Vec<usize>]) -> bool {
        let words = faces.div_ceil(64);
        let n = route_at.len();
        if faces.saturating_mul(words) > n {
            return false;
        }
        self.faces = faces;
        self.words = words;
        self.off.clear();
        self.off.resize(n, [0, 0]);
        for (side, list) in lists.iter().enumerate() {
            for (at, &pos) in list.iter().enumerate() {
                self.off[pos][side / faces] = at;
            }
        }
        self.msgs.clear();
        self.msgs.extend(0..n);
        // Keys are unique (the position is one), so the order is the same on every run.
        self.msgs.sort_unstable_by_key(|&p| (route_at[p].0, route_at[p].1, p));
        self.pairs.clear();
        self.pair_of.clear();
        self.pair_of.resize(n, 0);
        for (at, &pos) in self.msgs.iter().enumerate() {
            let (oi, ii) = route_at[pos];
            match self.pairs.last_mut() {
                Some(p) if p.oi == oi && p.ii == ii => p.end = at + 1,
                _ => self.pairs.push(Pair { oi, ii, next: at, end: at + 1 }),
            }
            self.pair_of[pos] = self.pairs.len() - 1;
        }
        let starts = |key: &dyn Fn(usize) -> usize, len: usize, at: &mut Vec<usize>| {
            at.clear();
            let mut k = 0;
            for side in 0..=faces {
                while k < len && key(k) < side {
                    k += 1;
                }
                at.push(k);
            }
        };
        let pairs = &self.pairs;
        starts(&|k| pairs[k].oi, pairs.len(), &mut self.out_at);
        self.by_in.clear();
        self.by_in.extend(0..pairs.len());
        self.by_in.sort_unstable_by_key(|&k| (pairs[k].ii, pairs[k].oi));
        let by_in = &self.by_in;
        starts(&|k| pairs[by_in[k]].ii, by_in.len(), &mut self.in_at);
        for v in self.has.iter_mut() {
            v.clear();
            v.resize(faces * words, 0);
        }
        for v in self.maybe.iter_mut() {
            v.clear();
            v.resize(words, u64::MAX);
        }
        self.freed.clear();
        self.freed.resize(words, 0);
        self.freed_list.clear();
        self.turn.clear();
        self.turn.extend(lists.iter().enumerate().map(|(side, list)| {
            let peer = |pos: usize| if side < faces { route_at[pos].1 } else { route_at[pos].0 };
            let first = peer(*list.first()?);
            let (mut last, mut wrapped) = (first, false);
            for &pos in &list[1..] {
                let p = peer(pos);
                if p == last {
                    continue;
                }
                if p < last {
                    if wrapped {
                        return None;
                    }
                    wrapped = true;
                }
                if wrapped && p >= first {
                    return None;
                }
                last = p;
            }
            Some(first)
        }));
        true
    }

    /// Whether side `face` (out sides `0`, in sides `1`) may have a port free.
    fn open(&self, side: usize, face: usize) -> bool {
        bit(&self.maybe[side], face)
    }

    /// Side `face` was found full (`false`) or one of its bookings ended.
    fn mark(&mut self, side: usize, face: usize, open: bool) {
        set_bit(&mut self.maybe[side], face, open);
    }

    /// Side `side` (out sides first, then in sides) frees at a new instant.
    fn freed(&mut self, side: usize) {
        let (kind, face) = (side / self.faces, side % self.faces);
        self.mark(kind, face, true);
        if kind == 0 && !bit(&self.freed, face) {
            set_bit(&mut self.freed, face, true);
            self.freed_list.push(face);
        }
    }

    /// A new instant: no out side has freed at it yet.
    fn next_instant(&mut self) {
        for face in self.freed_list.drain(..) {
            set_bit(&mut self.freed, face, false);
        }
    }

    /// Whether out side `face` freed at this instant.
    fn freed_now(&self, face: usize) -> bool {
        bit(&self.freed, face)
    }

    /// The pair of the message at `pos` after it was looked at (issued by `now`): its
    /// first message not started, and whether that one is issued.
    fn settle(&mut self, pos: usize, started: &[bool], waiting: &[Ready], now: f64) {
        let k = self.pair_of[pos];
        let p = &mut self.pairs[k];
        while p.next < p.end && started[self.msgs[p.next]] {
            p.next += 1;
        }
        let on = p.next < p.end && waiting[self.msgs[p.next]].prio.0 <= now;
        let (oi, ii, words) = (p.oi, p.ii, self.words);
        set_bit(&mut self.has[0][oi * words..][..words], ii, on);
        set_bit(&mut self.has[1][ii * words..][..words], oi, on);
    }

    /// The first message (position) of side `face` (out sides `0`, in sides `1`) whose
    /// pair's first waiting message is issued and whose other side may have a port free
    /// (for an in side, whose sender did not free at this instant), counting the words
    /// and pairs looked at into `work`.
    fn first(&self, side: usize, face: usize, work: &mut u64) -> Option<usize> {
        let words = self.words;
        let row = &self.has[side][face * words..][..words];
        let other = &self.maybe[1 - side];
        let word = |w: usize| {
            let x = row[w] & other[w];
            if side == 1 { x & !self.freed[w] } else { x }
        };
        let head = |peer: usize| {
            let k = if side == 0 {
                let mine = &self.pairs[self.out_at[face]..self.out_at[face + 1]];
                self.out_at[face] + find(mine, peer, |x| x.ii)
            } else {
                let mine = &self.by_in[self.in_at[face]..self.in_at[face + 1]];
                mine[find(mine, peer, |&k| self.pairs[k].oi)]
            };
            self.msgs[self.pairs[k].next]
        };
        if let Some(from) = self.turn[side * self.faces + face] {
            // The first peer from `from` on, wrapping: its word's bits from `from`, the
            // words after it, then the words up to it (its bits before `from` last).
            let (w0, b0) = (from / 64, from % 64);
            let scan =
                std::iter::once((w0, word(w0) >> b0 << b0)).chain((w0 + 1..words).chain(0..=w0).map(|w| (w, word(w))));
            for (w, x) in scan {
                *work += 1;
                if x != 0 {
                    return Some(head(w * 64 + x.trailing_zeros() as usize));
                }
            }
            return None;
        }
        let mut best = usize::MAX;
        for w in 0..words {
            let mut x = word(w);
            *work += 1;
            while x != 0 {
                let peer = w * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                *work += 1;
                best = best.min(head(peer));
            }
        }
        (best != usize::MAX).then_some(best)
    }

    /// How many messages a walk of side `side` (out sides, then in sides) passes over
    /// before looking its next message up: none where the look-up finds it at once.
    fn walk(&self, side: usize) -> usize {
        if self.turn[side].is_some() { 0 } else { WALK }
    }
}

/// [`lockstep`] with each step's messages served instant by instant, as the model
/// serves them: at each instant at which a message is issued or a port frees, the
/// waiting messages take free ports greedily in priority order. Bookings of earlier
/// steps are checked as in [`by_priority`].
fn by_instant(
    topo: &dyn Topology,
    c: f64,
    steps: usize,
    windowed: bool,
    (floor, per_message): (u64, u64),
    mut fill: impl FnMut(usize, &mut Step),
) -> Option<f64> {
    let np = topo.ranks();
    let mut done = vec![0.0f64; np];
    // Ports belong to interfaces: a rank's messages inside its node and those through
    // its node's NICs hold different ports, and a NIC may serve several ranks.
    let mut out: Vec<Ports> = (0..topo.interfaces()).map(|i| Ports::new(topo.interface_ports(i))).collect();
    let mut inp: Vec<Ports> = out.clone();
    let mut seq = vec![0u64; np];
    let mut end_max = 0.0f64;
    let mut step = Step::default();
    // The step's messages by sender (program order within a sender), each with its
    // sequence number; the messages issued and not yet started, by priority; the
    // instants at which something may start (issues and ends of bookings); per
    // receiver, its jobs (release, bytes, reduce).
    let mut runs: Vec<(usize, u64)> = Vec::new();
    let mut waiting: Vec<Ready> = Vec::new();
    let mut marks: BinaryHeap<std::cmp::Reverse<u64>> = BinaryHeap::new();
    let mut jobs: Vec<Vec<(f64, u64, bool)>> = vec![Vec::new(); np];
    let mut touched: Vec<usize> = Vec::new();
    // Per sender this step: the ends of its messages started so far (windowed steps
    // only: without a window a step does not wait for its sends), where its run starts
    // and ends in `runs`, and how many of its messages are issued.
    let mut ends: Vec<Vec<f64>> = vec![Vec::new(); np];
    let mut run_of: Vec<(usize, usize, usize)> = vec![(0, 0, 0); np];
    let mut senders: Vec<usize> = Vec::new();
    // Bookings are numbered in the order made; per side, the instant at which it was
    // last found full (instants numbered from 1).
    let mut nbook = 0u64;
    let mut instant = 0u64;
    let mut full: [Vec<u64>; 2] = [vec![0; out.len()], vec![0; out.len()]];
    // Unwindowed steps (see below): per side (out sides, then in sides), its messages
    // by priority (positions in `waiting`) and the first not yet started; per message,
    // whether it started and the instant it was last looked at; per side, the instant it
    // last freed; the sides' frees to come `(end, side)`; the lists being merged.
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); 2 * out.len()];
    let mut heads: Vec<usize> = Vec::new();
    let mut started: Vec<bool> = Vec::new();
    let mut seen: Vec<u64> = Vec::new();
    let mut route_at: Vec<(usize, usize)> = Vec::new();
    let mut dirty: Vec<u64> = vec![0; 2 * out.len()];
    // Per side, its messages of the step not yet started.
    let mut unstarted: Vec<usize> = vec![0; 2 * out.len()];
    let mut frees: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut cursors: BinaryHeap<std::cmp::Reverse<(usize, usize, usize)>> = BinaryHeap::new();
    let mut by_pair = ByPair::default();
    let mut turned: Vec<usize> = Vec::new();
    // Looks spent and allowed so far (see [`WORK_PER_MESSAGE`]).
    let (mut work, mut budget) = (0u64, floor);
    for s in 0..steps {
        let earliest = done.iter().copied().fold(f64::INFINITY, f64::min);
        for p in out.iter_mut().chain(inp.iter_mut()) {
            p.next_step(earliest);
        }
        step.clear();
        fill(s, &mut step);
        budget = budget.saturating_add(per_message.saturating_mul(step.xfers.len() as u64));
        runs.clear();
        runs.extend((0..step.xfers.len()).map(|i| (i, 0)));
        runs.sort_by_key(|&(i, _)| step.xfers[i].from);
        for (i, q) in runs.iter_mut() {
            let from = step.xfers[*i].from;
            *q = seq[from];
            seq[from] += 1;
        }
        let window = |r: usize| if windowed { topo.nics(r).max(1) as usize } else { usize::MAX };
        marks.clear();
        senders.clear();
        let mut first = 0;
        while first < runs.len() {
            let from = step.xfers[runs[first].0].from;
            let len = runs[first..].iter().take_while(|&&(i, _)| step.xfers[i].from == from).count();
            let issued = len.min(window(from));
            run_of[from] = (first, first + len, issued);
            // Only a sender with messages still to issue is looked at again: every
            // sender at every instant cost P a free (a mesh of one row, 512 ranks of 2
            // NICs: 40 s, 80x `ring`).
            if issued < len {
                senders.push(from);
            }
            waiting.extend((first..first + issued).map(|at| Ready {
                prio: (done[from], from, runs[at].1),
                at,
                since: nbook,
            }));
            marks.push(std::cmp::Reverse(done[from].to_bits()));
            first += len;
        }
        // A port held by a message of an earlier step frees at its end, an instant too,
        // but only where a message waits for it: a side found full wakes at its next end
        // (`side_full`), and from there at the next, till it frees. All the earlier
        // steps' ends made instants on every step: where ranks drift apart (a mesh of one
        // row, whose closing pair is 511 hops), every booking since the slowest rank's
        // step stays, and each step pushed and popped all of them.
        waiting.sort_by(|a, b| prio_cmp(a.prio, b.prio));
        // The model's service, instant by instant: at each instant at which a message is
        // issued or a port frees, the issued messages still waiting take free ports
        // greedily in priority order (times are never negative, so their bits order
        // them).
        let mut now = f64::NEG_INFINITY;
        if !windowed {
            // Without a window every message is issued when the step begins, and a
            // message found waiting at one instant can start at a later one only if a
            // port of one of its sides freed in between (a side's holders only fall at
            // an end): so at each instant only the messages just issued and those of the
            // sides that freed are looked at, in priority order, by merging their lists
            // (positions in `waiting`, which is by priority). A walk over every waiting
            // message at every instant made this the square of the step's messages.
            let faces = out.len();
            for list in lists.iter_mut() {
                list.clear();
            }
            unstarted.fill(0);
            heads.clear();
            heads.resize(2 * faces, 0);
            started.clear();
            started.resize(waiting.len(), false);
            seen.clear();
            seen.resize(waiting.len(), 0);
            route_at.clear();
            for (pos, w) in waiting.iter().enumerate() {
                let x = step.xfers[runs[w.at].0];
                let (oi, ii) = topo.route_interfaces(x.from, x.to);
                route_at.push((oi, ii));
                lists[oi].push(pos);
                lists[faces + ii].push(pos);
                unstarted[oi] += 1;
                unstarted[faces + ii] += 1;
            }
            let indexed = by_pair.build(faces, &route_at, &lists);
            frees.clear();
            let mut fresh = 0;
            let mut left = waiting.len();
            while left > 0 {
                let bits = next_mark(&mut marks, now)?;
                now = f64::from_bits(bits);
                instant += 1;
                if indexed {
                    by_pair.next_instant();
                }
                // Cursors `(position, source, offset in the source's list)`; the
                // messages just issued are source `usize::MAX`.
                cursors.clear();
                if fresh < waiting.len() {
                    cursors.push(std::cmp::Reverse((fresh, usize::MAX, 0)));
                }
                while let Some(&std::cmp::Reverse((b, side))) = frees.peek() {
                    if b > bits {
                        break;
                    }
                    frees.pop();
                    if dirty[side] == instant {
                        continue;
                    }
                    dirty[side] = instant;
                    if indexed {
                        by_pair.freed(side);
                        if by_pair.walk(side) == 0 {
                            // Looked up once every side that frees at the instant is known.
                            turned.push(side);
                            continue;
                        }
                    }
                    let list = &lists[side];
                    let mut h = heads[side];
                    while h < list.len() && started[list[h]] {
                        h += 1;
                    }
                    heads[side] = h;
                    if h < list.len() {
                        cursors.push(std::cmp::Reverse((list[h], side, h)));
                    }
                }
                for side in turned.drain(..) {
                    let (kind, face) = (side / faces, side % faces);
                    if let Some(q) = by_pair.first(kind, face, &mut work) {
                        cursors.push(std::cmp::Reverse((q, side, by_pair.off[q][kind])));
                    }
                }
                while let Some(std::cmp::Reverse((pos, src, off))) = cursors.pop() {
                    work += 1;
                    if work > budget {
                        return None;
                    }
                    let closed = |side: usize| {
                        full[side / faces][side % faces] == instant
                            || indexed && !by_pair.open(side / faces, side % faces)
                    };
                    if src != usize::MAX && closed(src) {
                        continue;
                    }
                    let w = waiting[pos];
                    if w.prio.0 > now {
                        if src == usize::MAX {
                            fresh = pos;
                        }
                        continue;
                    }
                    if !started[pos] && seen[pos] != instant {
                        seen[pos] = instant;
                        let Ready { prio, at, since } = w;
                        let (oi, ii) = route_at[pos];
                        let blocked = indexed && !(by_pair.open(0, oi) && by_pair.open(1, ii))
                            || side_full(&out[oi], &inp[ii], (oi, ii), &mut full, (now, instant), |kind, face, end| {
                                wake(&mut marks, &mut frees, kind * faces + face, end)
                            });
                        if indexed {
                            // Found full, a side stays so until one of its bookings ends.
                            if full[0][oi] == instant {
                                by_pair.mark(0, oi, false);
                            }
                            if full[1][ii] == instant {
                                by_pair.mark(1, ii, false);
                            }
                        }
                        if !blocked {
                            let x = step.xfers[runs[at].0];
                            let start = now;
                            let end = start + topo.link(x.from, x.to).time(x.bytes as f64);
                            if !book_checked(&mut out[oi], &mut inp[ii], (oi, ii), prio, since, (start, end), nbook) {
                                return None;
                            }
                            nbook += 1;
                            started[pos] = true;
                            left -= 1;
                            unstarted[oi] -= 1;
                            unstarted[faces + ii] -= 1;
                            if indexed {
                                // A side this booking filled is closed at once, not when next
                                // looked at: the look-ups would offer its messages till then.
                                if out[oi].held_at(now) >= out[oi].k {
                                    by_pair.mark(0, oi, false);
                                    wake(&mut marks, &mut frees, oi, out[oi].next_end(now));
                                }
                                if inp[ii].held_at(now) >= inp[ii].k {
                                    by_pair.mark(1, ii, false);
                                    wake(&mut marks, &mut frees, faces + ii, inp[ii].next_end(now));
                                }
                            }
                            marks.push(std::cmp::Reverse(end.to_bits()));
                            // Unindexed, a side that frees only offers its list's next
                            // message: where every one has started, its free has nothing
                            // to offer (`neighbor_exchange`, one message a rank a step:
                            // two pushes and two pops of the heap a message, for nothing).
                            for side in [oi, faces + ii] {
                                if indexed || unstarted[side] > 0 {
                                    frees.push(std::cmp::Reverse((end.to_bits(), side)));
                                }
                            }
                            end_max = end_max.max(end);
                            if jobs[x.to].is_empty() {
                                touched.push(x.to);
                            }
                            jobs[x.to].push((end.max(done[x.to]), x.bytes, x.reduce));
                        }
                        if indexed {
                            by_pair.settle(pos, &started, &waiting, now);
                        }
                    }
                    if src == usize::MAX {
                        if pos + 1 < waiting.len() {
                            cursors.push(std::cmp::Reverse((pos + 1, src, 0)));
                        } else {
                            fresh = waiting.len();
                        }
                    } else if indexed && !by_pair.open(src / faces, src % faces) {
                        // Its side is full: nothing more of its list starts at this instant.
                    } else if indexed {
                        // As below, but a side's messages whose other side was found full
                        // stay passed over until it frees, and an in-list passes over the
                        // messages of senders freed at this instant (offered by their own
                        // lists, in the same order); past a few, the next is looked up.
                        let side = src / faces;
                        let list = &lists[src];
                        let mut next = off + 1;
                        let mut found = None;
                        let mut passed = 0;
                        let walk = by_pair.walk(src);
                        while let Some(&q) = list.get(next) {
                            if passed == walk {
                                found = by_pair.first(side, src % faces, &mut work).map(|q| (q, by_pair.off[q][side]));
                                break;
                            }
                            if !started[q] {
                                if waiting[q].prio.0 > now {
                                    break;
                                }
                                let (oi, ii) = route_at[q];
                                let free = if side == 0 {
                                    by_pair.open(1, ii)
                                } else {
                                    by_pair.open(0, oi) && !by_pair.freed_now(oi)
                                };
                                if free {
                                    found = Some((q, next));
                                    break;
                                }
                            }
                            work += 1;
                            if work > budget {
                                return None;
                            }
                            passed += 1;
                            next += 1;
                        }
                        if let Some((q, at)) = found {
                            cursors.push(std::cmp::Reverse((q, src, at)));
                        }
                    } else {
                        // Passed over in place, not through the heap: a message already
                        // started, and one issued by now whose other side was found full at
                        // this instant (it stays full: bookings only add holders), which
                        // could not start here. Where GPUs share a NIC, a NIC's list holds
                        // every message leaving or entering the node, most for a NIC that
                        // is busy, and each took a pop and a push.
                        let list = &lists[src];
                        let other = 1 - src / faces;
                        let mut next = off + 1;
                        while let Some(&q) = list.get(next) {
                            if !started[q] {
                                let face = if other == 0 { route_at[q].0 } else { route_at[q].1 };
                                if full[other][face] != instant || waiting[q].prio.0 > now {
                                    break;
                                }
                                work += 1;
                                if work > budget {
                                    return None;
                                }
                            }
                            next += 1;
                        }
                        if next < list.len() {
                            cursors.push(std::cmp::Reverse((list[next], src, next)));
                        }
                    }
                }
            }
            waiting.clear();
        } else {
            let mut unissued = runs.len() - waiting.len();
            while !waiting.is_empty() || unissued > 0 {
                now = f64::from_bits(next_mark(&mut marks, now)?);
                instant += 1;
                loop {
                    // A windowed sender's next message goes once all but `nics - 1` of those
                    // issued before it have landed (a message not yet started lands later).
                    // All that the landings by `now` let go are issued before any port is
                    // handed out, as the engine runs every event of an instant first: two
                    // landings at one instant free two places, and the second message issued
                    // may start now while the first waits for its receiver. Issued one a
                    // pass, the second waited for a pass that came only if something started
                    // in this one, else for the next instant, a port free all along
                    // (double_binary_tree, 2 NICs, C > 0: its form up to 5% off). A message
                    // started at `now` lands after it, so no start lets another go now.
                    for &from in &senders {
                        let k = window(from);
                        loop {
                            let (lo, hi, issued) = run_of[from];
                            if lo + issued >= hi {
                                break;
                            }
                            let mine = &ends[from];
                            if mine.len() + k <= issued {
                                break;
                            }
                            let mut sorted = mine.clone();
                            sorted.sort_by(f64::total_cmp);
                            let free = sorted[issued - k];
                            if free > now {
                                break;
                            }
                            let at = lo + issued;
                            let issue = done[from].max(free);
                            let r = Ready { prio: (issue, from, runs[at].1), at, since: nbook };
                            let pos = waiting.partition_point(|w| prio_cmp(w.prio, r.prio).is_lt());
                            waiting.insert(pos, r);
                            run_of[from].2 += 1;
                            unissued -= 1;
                        }
                    }
                    senders.retain(|&from| {
                        let (lo, hi, issued) = run_of[from];
                        lo + issued < hi
                    });
                    let mut started = false;
                    // The waiting messages in priority order; those that start leave the
                    // list, the others move up in place (`kept`). Those issued after `now`
                    // all come last. A side found full stays full for the rest of the
                    // instant (bookings only add holders), so it is marked for the instant.
                    let (mut i, mut kept, n) = (0, 0, waiting.len());
                    while i < n {
                        work += 1;
                        if work > budget {
                            return None;
                        }
                        let w = waiting[i];
                        let Ready { prio, at, since } = w;
                        if prio.0 > now {
                            break;
                        }
                        i += 1;
                        let x = step.xfers[runs[at].0];
                        let (oi, ii) = topo.route_interfaces(x.from, x.to);
                        // Windowed, no side's list is walked: a freed side needs only its instant.
                        let mark_end = |_, _, end: f64| {
                            if end.is_finite() {
                                marks.push(std::cmp::Reverse(end.to_bits()));
                            }
                        };
                        if side_full(&out[oi], &inp[ii], (oi, ii), &mut full, (now, instant), mark_end) {
                            waiting[kept] = w;
                            kept += 1;
                            continue;
                        }
                        started = true;
                        let start = now;
                        let end = start + topo.link(x.from, x.to).time(x.bytes as f64);
                        if !book_checked(&mut out[oi], &mut inp[ii], (oi, ii), prio, since, (start, end), nbook) {
                            return None;
                        }
                        nbook += 1;
                        marks.push(std::cmp::Reverse(end.to_bits()));
                        end_max = end_max.max(end);
                        ends[x.from].push(end);
                        if jobs[x.to].is_empty() {
                            touched.push(x.to);
                        }
                        jobs[x.to].push((end.max(done[x.to]), x.bytes, x.reduce));
                    }
                    waiting.copy_within(i..n, kept);
                    waiting.truncate(kept + n - i);
                    if !started {
                        break;
                    }
                }
            }
        }
        for &r in &touched {
            done[r] = settle(&mut jobs[r], done[r], c);
        }
        touched.clear();
        for (r, mine) in ends.iter_mut().enumerate() {
            if !mine.is_empty() {
                if windowed {
                    done[r] = mine.iter().copied().fold(done[r], f64::max);
                }
                mine.clear();
            }
        }
        for &(r, bytes) in &step.local {
            done[r] += bytes as f64 * c;
        }
    }
    Some(done.iter().copied().fold(end_max, f64::max))
}

/// [`lockstep`] with each step's messages booked in priority order, each at the first
/// instant both its sides have a free port, possibly in a gap before a message booked
/// earlier. Where a sender's windowed messages would start out of their order (a later
/// one taking a port while an earlier waits), [`by_instant`] may give up where this
/// does not, and the other way round; each checks its own bookings, so either's answer
/// is the time.
fn by_priority(
    topo: &dyn Topology,
    c: f64,
    steps: usize,
    windowed: bool,
    (floor, per_message): (u64, u64),
    mut fill: impl FnMut(usize, &mut Step),
) -> Option<f64> {
    let np = topo.ranks();
    let mut done = vec![0.0f64; np];
    // Ports belong to interfaces: a rank's messages inside its node and those through
    // its node's NICs hold different ports, and a NIC may serve several ranks.
    let mut out: Vec<Ports> = (0..topo.interfaces()).map(|i| Ports::new(topo.interface_ports(i))).collect();
    let mut inp: Vec<Ports> = out.clone();
    let mut seq = vec![0u64; np];
    let mut end_max = 0.0f64;
    let mut step = Step::default();
    // The step's messages by sender (program order within a sender), each with its
    // sequence number; the messages issued and not yet served, by priority; per
    // receiver, its jobs (release, bytes, reduce).
    let mut runs: Vec<(usize, u64)> = Vec::new();
    let mut ready: BinaryHeap<Ready> = BinaryHeap::new();
    let mut jobs: Vec<Vec<(f64, u64, bool)>> = vec![Vec::new(); np];
    let mut touched: Vec<usize> = Vec::new();
    // Windowed: the ends of the current sender's messages served so far this step.
    let mut ends: Vec<Vec<f64>> = vec![Vec::new(); np];
    let mut nbook = 0u64;
    // Bookings and ends looked at and allowed so far ([`WORK_PER_MESSAGE`]).
    let (mut work, mut budget) = (0u64, floor);
    for s in 0..steps {
        let earliest = done.iter().copied().fold(f64::INFINITY, f64::min);
        for p in out.iter_mut().chain(inp.iter_mut()) {
            p.next_step(earliest);
        }
        step.clear();
        fill(s, &mut step);
        budget = budget.saturating_add(per_message.saturating_mul(step.xfers.len() as u64));
        runs.clear();
        runs.extend((0..step.xfers.len()).map(|i| (i, 0)));
        runs.sort_by_key(|&(i, _)| step.xfers[i].from);
        for (i, q) in runs.iter_mut() {
            let from = step.xfers[*i].from;
            *q = seq[from];
            seq[from] += 1;
        }
        let window = |r: usize| if windowed { topo.nics(r).max(1) as usize } else { usize::MAX };
        let mut first = 0;
        while first < runs.len() {
            let from = step.xfers[runs[first].0].from;
            let len = runs[first..].iter().take_while(|&&(i, _)| step.xfers[i].from == from).count();
            let issued = runs[first..first + len.min(window(from))].iter().enumerate();
            ready.extend(issued.map(|(j, &(_, q))| Ready { prio: (done[from], from, q), at: first + j, since: 0 }));
            first += len;
        }
        while let Some(Ready { prio, at, .. }) = ready.pop() {
            let x = step.xfers[runs[at].0];
            // The engine starts a message at the first instant both its ends have a
            // free port.
            let (oi, ii) = topo.route_interfaces(x.from, x.to);
            let mut start = prio.0;
            loop {
                let o = out[oi].free_from(start);
                let i = inp[ii].free_from(o);
                start = i;
                if i == o {
                    break;
                }
            }
            let end = start + topo.link(x.from, x.to).time(x.bytes as f64);
            if !book_checked(&mut out[oi], &mut inp[ii], (oi, ii), prio, 0, (start, end), nbook) {
                return None;
            }
            work += out[oi].looks.take() + inp[ii].looks.take();
            if work > budget {
                return None;
            }
            nbook += 1;
            end_max = end_max.max(end);
            if windowed {
                // The sender's next message goes once all but `nics - 1` of those before
                // it have landed (and not before this one was issued).
                let mine = &mut ends[x.from];
                mine.push(end);
                let next = at + 1;
                let k = window(x.from);
                if mine.len() >= k && next < runs.len() && step.xfers[runs[next].0].from == x.from {
                    let mut sorted = mine.clone();
                    sorted.sort_by(f64::total_cmp);
                    let issue = prio.0.max(sorted[mine.len() - k]);
                    ready.push(Ready { prio: (issue, x.from, runs[next].1), at: next, since: 0 });
                }
            }
            if jobs[x.to].is_empty() {
                touched.push(x.to);
            }
            jobs[x.to].push((end.max(done[x.to]), x.bytes, x.reduce));
        }
        for &r in &touched {
            done[r] = settle(&mut jobs[r], done[r], c);
        }
        touched.clear();
        for (r, mine) in ends.iter_mut().enumerate() {
            if !mine.is_empty() {
                done[r] = mine.iter().copied().fold(done[r], f64::max);
                mine.clear();
            }
        }
        for &(r, bytes) in &step.local {
            done[r] += bytes as f64 * c;
        }
    }
    Some(done.iter().copied().fold(end_max, f64::max))
}

/// Bounds on a step-synchronous program (the arguments of [`lockstep`]) that hold
/// whatever order its ports serve messages in, for the points where [`lockstep`] gives
/// `None`:
///
/// - lower: the same recurrence with every message starting the instant it is issued.
///   A port wait only delays a message, the times are maxima and sums of the messages'
///   ends, and one compute unit taking jobs as they come is the fastest order for a set
///   of jobs with release times, so no run ends sooner;
/// - upper: every message starting at the latest its ports allow: while it waits, all
///   ports of its sender's outgoing interface or of its receiver's incoming one are busy
///   (the engine gives ports to waiting messages greedily), so it waits at most
///   `(W_out(a) - t) / k_a + (W_in(b) - t) / k_b`, with `W` the time of every message of
///   the run on that interface, k its ports, and t its own time.
pub fn lockstep_bounds(
    topo: &dyn Topology,
    c: f64,
    steps: usize,
    windowed: bool,
    mut fill: impl FnMut(usize, &mut Step),
) -> (f64, f64) {
    let np = topo.ranks();
    let mut plan: Vec<Step> = Vec::with_capacity(steps);
    let faces = topo.interfaces();
    let (mut w_out, mut w_in) = (vec![0.0f64; faces], vec![0.0f64; faces]);
    for s in 0..steps {
        let mut step = Step::default();
        fill(s, &mut step);
        for x in &step.xfers {
            let t = topo.link(x.from, x.to).time(x.bytes as f64);
            let (oi, ii) = topo.route_interfaces(x.from, x.to);
            w_out[oi] += t;
            w_in[ii] += t;
        }
        plan.push(step);
    }
    let run = |wait: &dyn Fn(&Xfer, f64) -> f64| {
        let mut done = vec![0.0f64; np];
        let mut end_max = 0.0f64;
        let mut jobs: Vec<Vec<(f64, u64, bool)>> = vec![Vec::new(); np];
        let mut sends: Vec<Vec<f64>> = vec![Vec::new(); np];
        let mut issue = vec![0.0f64; np];
        for step in &plan {
            for (r, list) in sends.iter_mut().enumerate() {
                list.clear();
                issue[r] = done[r];
            }
            for x in &step.xfers {
                let a = x.from;
                let k = topo.nics(a).max(1) as usize;
                if windowed && sends[a].len() >= k {
                    let mut sorted = sends[a].clone();
                    sorted.sort_by(f64::total_cmp);
                    issue[a] = issue[a].max(sorted[sorted.len() - k]);
                }
                let t = topo.link(a, x.to).time(x.bytes as f64);
                let end = issue[a] + wait(x, t) + t;
                sends[a].push(end);
                end_max = end_max.max(end);
                jobs[x.to].push((end.max(done[x.to]), x.bytes, x.reduce));
            }
            for (r, list) in jobs.iter_mut().enumerate() {
                done[r] = settle(list, done[r], c);
            }
            if windowed {
                for (r, list) in sends.iter().enumerate() {
                    done[r] = list.iter().copied().fold(done[r], f64::max);
                }
            }
            for &(r, bytes) in &step.local {
                done[r] += bytes as f64 * c;
            }
        }
        done.iter().copied().fold(end_max, f64::max)
    };
    let lower = run(&|_, _| 0.0);
    let upper = run(&|x, t| {
        let (oi, ii) = topo.route_interfaces(x.from, x.to);
        let (ka, kb) = (topo.interface_ports(oi).max(1) as f64, topo.interface_ports(ii).max(1) as f64);
        ((w_out[oi] - t) / ka + (w_in[ii] - t) / kb).max(0.0)
    });
    (lower, upper)
}

/// When a rank that was free at `free` is done with one step's arrivals `(released at,
/// bytes, reduce?)`: reductions run one at a time on its compute unit in release order,
/// copies only have to land. Empties `jobs` for the next step.
fn settle(jobs: &mut Vec<(f64, u64, bool)>, free: f64, c: f64) -> f64 {
    jobs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut compute, mut landed) = (free, free);
    for &(release, bytes, reduce) in jobs.iter() {
        if reduce {
            compute = compute.max(release) + bytes as f64 * c;
        } else {
            landed = landed.max(release);
        }
    }
    jobs.clear();
    compute.max(landed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{FullyConnected, Link};

    /// Every rank sends one block to every other in one step, of `bytes(to)` bytes.
    fn exchange(np: usize, bytes: fn(usize) -> u64) -> impl FnMut(usize, &mut Step) {
        move |_, step: &mut Step| {
            for from in 0..np {
                step.xfers.extend((1..np).map(|k| (from + k) % np).map(|to| Xfer {
                    from,
                    to,
                    bytes: bytes(to),
                    reduce: true,
                }));
            }
        }
    }

    /// [`exchange`] with blocks of two lengths.
    fn all_to_all(np: usize) -> impl FnMut(usize, &mut Step) {
        exchange(np, |to| if to.is_multiple_of(3) { 4004 } else { 4000 })
    }

    /// [`exchange`] with blocks of one length: the bookings in priority order are then
    /// the engine's.
    fn uniform(np: usize) -> impl FnMut(usize, &mut Step) {
        exchange(np, |_| 4000)
    }

    #[test]
    fn the_instant_service_gives_up_past_its_budget_and_only_then() {
        let np = 12;
        let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
        let whole = by_instant(&topo, 0.0, 1, false, (WORK_FLOOR, WORK_PER_MESSAGE), &mut all_to_all(np));
        assert!(whole.is_some(), "12 ranks, one step: the recurrence holds");
        // No floor: 64 looks for each of the 132 messages is still enough.
        assert_eq!(by_instant(&topo, 0.0, 1, false, (0, WORK_PER_MESSAGE), &mut all_to_all(np)), whole);
        // Every message is looked at at least once: one look for all of them is not.
        assert_eq!(by_instant(&topo, 0.0, 1, false, (1, 0), &mut all_to_all(np)), None);
        // The fallback then answers with the same time where its bookings hold.
        assert_eq!(lockstep(&topo, 0.0, 1, false, all_to_all(np)), whole);
    }

    /// The fallback keeps to a budget too: at 1,000 ranks a side's back-to-back bookings
    /// made each booking walk all its ends, 22 s before a closed form that gave up.
    #[test]
    fn the_priority_bookings_give_up_past_their_budget_and_only_then() {
        let np = 12;
        let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
        let whole = by_priority(&topo, 0.0, 1, false, (WORK_FLOOR, WORK_PER_MESSAGE), &mut uniform(np));
        assert!(whole.is_some(), "12 ranks, one step: the bookings hold");
        assert_eq!(by_priority(&topo, 0.0, 1, false, (0, WORK_PER_MESSAGE), &mut uniform(np)), whole);
        assert_eq!(by_priority(&topo, 0.0, 1, false, (1, 0), &mut uniform(np)), None);
        // A sender's bookings back to back: each walks the ends of those before it, so
        // the looks grow as the square of the side's messages, past 64 a message.
        let np = 400;
        let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
        let looks = |budget| by_priority(&topo, 0.0, 1, false, budget, &mut uniform(np));
        assert!(looks((u64::MAX, 0)).is_some(), "unbounded, the bookings hold");
        assert_eq!(looks((0, WORK_PER_MESSAGE)), None);
    }

    /// `naive`'s one step on a hierarchy of 16 x 8 ranks (each rank sends to r+1, r+2, ...
    /// over links of two speeds, so the sides free out of turn): each side that freed
    /// walked its list past messages whose other side was busy, 65 looks a message here
    /// (121 at 256 ranks, past the budget at 512), about P^3 in all. Looked up by pair of
    /// sides, about 8 (12 at 256 ranks); the time is the same.
    #[test]
    fn an_all_to_all_on_a_hierarchy_costs_a_few_looks_a_message() {
        use crate::topology::{Hierarchical, Level};
        let level = |size, alpha, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
        let topo = Hierarchical::new(vec![level(16, 0.7e-6, 150e9), level(8, 5e-6, 12.5e9)], 2).unwrap();
        let np = topo.ranks();
        let c = 0.05e-9;
        let whole = by_instant(&topo, c, 1, false, (u64::MAX, 0), &mut exchange(np, |_| 4194308));
        assert!(whole.is_some(), "unbounded, the service holds");
        assert_eq!(by_instant(&topo, c, 1, false, (0, 16), &mut exchange(np, |_| 4194308)), whole);
    }
}
