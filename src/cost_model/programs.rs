//! Bounds on any program's time in the ideal model, read off the programs themselves:
//! what every algorithm without an exact form and without bounds of its own gets
//! (docs/model.md, 'The bounds').
//!
//! The programs' operations and the messages that join them form a graph of events: a
//! stream runs its operations in order, a send is issued when its stream reaches it, a
//! receive is done once its message has landed (a reduce also once the rank's compute
//! unit has added it), a wait ends once what it waits for is done. In a run every event
//! happens at the latest of its predecessors plus a duration, plus a wait for a busy
//! port or compute unit. The graph is evaluated twice, with each wait replaced by:
//!
//! - **below**, no wait but one: a message lands `alpha + m/B` after it is issued, or
//!   after one of the last `min(k_out, k_in)` messages of its stream on the same pair of
//!   sides (out-interface, in-interface) has landed if that is later; a reduction starts
//!   once its piece is ready. A stream's messages on one pair of sides start in program
//!   order: a later one is issued no sooner and comes later in the sender's sequence, so
//!   every port pass that finds the earlier one blocked (its out-side or in-side full)
//!   finds the later one blocked too. So when one starts, the last `min(k_out, k_in)`
//!   before it have started, and not all of them still hold a port. Every time is a
//!   max-plus expression growing in every duration and wait, so by induction over the
//!   run's events in time order no event of the run happens sooner;
//! - **above**, the most it can be. While a message m waits, every out-port of the
//!   interface it leaves by or every in-port of the one it enters by is busy (the
//!   waiting messages take free ports greedily). For any set G of messages on those two
//!   sides already known to have landed by `tau`, from `max(issue, tau)` on only
//!   messages outside G hold those ports, so m waits after that at most
//!   `U_out/k_out + U_in/k_in`, the time of the other messages outside G on each side;
//!   the later messages of m's stream on the same pair of sides never go first (above)
//!   and leave U. G is taken empty and as every message on either side booked so far,
//!   the better of the two kept. A piece waits for its compute unit, which serves ready
//!   pieces in turn and never idles while one waits, likewise: from `max(ready, tau)` on
//!   at most the work of the rank's pieces outside a set G done by `tau`, G empty or
//!   every piece settled so far; a piece is settled when its stream waits for it, and
//!   the reductions that stream posts after the wait are ready only once it is done, so
//!   they leave the sum. Each rule uses only upper times already shown, so by induction
//!   over the evaluation no event happens later.
//!
//! Both need the messages of a channel (sender, receiver, tag) to be matched in the
//! same order in every run: receives match sends in the order each was issued, which
//! program order fixes where one stream of the sender and one of the receiver use the
//! channel. A channel used by two streams at once makes the bounds `None`. Which streams
//! use a channel is recorded only for ranks whose streams' tag ranges overlap: streams
//! that tag apart cannot share one. That record holds an entry per channel ever used, not
//! per message in flight, so past [`OWNERS_FLOOR`] plus [`OWNERS_PER_STREAM`] a stream
//! the bounds give up (`None`) rather than grow with the run: streams whose tags overlap
//! and give every message its own tag once recorded one entry a message (5.5 GB for 64
//! channels of 4-byte chunks over 64 MiB, after the simulation had run in 328 KiB).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::sim::op::{Action, Op, Program};
use crate::sim::{Problem, Programs};
use crate::topology::Topology;

/// Bytes [`program_bounds`] holds for each message its evaluation has issued and not yet
/// matched (a send its receive has not reached, or a receive its send has not): the
/// channel's entry in the map (its key and two queues, the control byte, the table's
/// slack at its most loaded and the room of a table that doubles), the queue's first
/// allocation (four entries of the larger kind), the landing times a stream keeps of its
/// sends, below and above, and a handle's slot, each counted twice for the vectors'
/// growth. Such messages are at most those the engine may hold at once.
pub const BOUNDS_BYTES_PER_MESSAGE_IN_FLIGHT: u64 = (2 * (std::mem::size_of::<(Key, Channel)>() + 1) * 8 / 7
    + 4 * std::mem::size_of::<Pending>()
    + 2 * 2 * std::mem::size_of::<f64>()
    + 2 * std::mem::size_of::<Slot>()) as u64;

/// A time below and above.
type Pair = (f64, f64);

/// A receive posted before its message was booked.
#[derive(Clone, Copy, Debug)]
struct Pending {
    stream: usize,
    handle: u64,
    post: Pair,
    bytes: u64,
    reduce: bool,
}

/// A handle's state: not yet known, a piece waiting for the compute unit (ready at,
/// its own work), or done.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    Unknown,
    Piece(Pair, f64),
    Done(Pair),
    /// Done and waited for: its completion is behind its stream's `now` for good, so it
    /// counts for nothing more, and a run of them at the front is dropped.
    Waited,
}

/// One channel's unmatched sends (their landing times) or receives.
#[derive(Debug, Default)]
struct Channel {
    sends: VecDeque<Pair>,
    recvs: VecDeque<Pending>,
}

/// A channel's key: sender, receiver, tag.
type Key = (usize, usize, u32);

/// The channel maps' hasher: a multiply and rotate per word (as rustc's FxHash). The
/// keys are the programs' own small integers, not an adversary's, and SipHash's rounds
/// were most of the bounds' cost (one lookup per message on each side).
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A map keyed by channel.
type ByChannel<V> = HashMap<Key, V, BuildHasherDefault<Fx>>;

/// Channel owners the bounds may record whatever the run (see the module docs).
const OWNERS_FLOOR: usize = 1 << 16;

/// Channel owners the bounds may record for each stream of the run, beyond
/// [`OWNERS_FLOOR`]: a stream that tags by step recorded one a step and a peer.
const OWNERS_PER_STREAM: usize = 256;

/// Record that stream `s` uses channel `key` on side `side` (0: sends, 1: receives);
/// false where another stream of the same rank did, or the record has grown past `most`
/// channels (the bounds give up then: module docs).
fn own(owners: &mut ByChannel<[usize; 2]>, most: usize, key: Key, side: usize, s: usize) -> bool {
    let o = owners.entry(key).or_insert([usize::MAX; 2]);
    if o[side] == usize::MAX {
        o[side] = s;
    }
    o[side] == s && owners.len() <= most
}

/// A `WaitSends(n)` reached at `now` by a stream whose undelivered sends land at
/// `flight` (below, above): when it is over, and the sends landed by then dropped.
fn wait_sends(flight: &mut (Vec<f64>, Vec<f64>), n: usize, now: Pair) -> Pair {
    let one = |v: &mut Vec<f64>, now: f64| {
        let mut at = now;
        if v.len() > n {
            v.sort_by(f64::total_cmp);
            at = at.max(v[v.len() - n - 1]);
        }
        v.retain(|&x| x > at);
        at
    };
    (one(&mut flight.0, now.0), one(&mut flight.1, now.1))
}

/// What a stream waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Block {
    Running,
    Handle(u64),
    All,
    Done,
}

/// How many pairs of sides (out-interface, in-interface) a stream's later messages are
/// followed on: a ring's stream uses one, a tree's a few; an algorithm that sends to
/// every peer keeps only its first few (memory stays linear in the streams).
const PAIRS: usize = 4;

/// What the first walk learns of one stream: its reductions' total work, its messages'
/// total time on each of its first [`PAIRS`] pairs of sides, and the least and greatest
/// tag it sends with and receives with.
#[derive(Clone, Debug, Default)]
struct Totals {
    work: f64,
    pairs: Vec<(usize, usize, f64)>,
    tags: [Option<(u32, u32)>; 2],
}

/// Widen a tag range to hold `tag`.
fn widen(range: &mut Option<(u32, u32)>, tag: u32) {
    *range = Some(range.map_or((tag, tag), |(lo, hi)| (lo.min(tag), hi.max(tag))));
}

/// Whether two streams of one rank may use one channel on one side: some two of their
/// tag ranges on that side overlap. Where none do (the bidirectional ring's two rings,
/// for one, tag apart), no channel can be shared and its owners need not be recorded:
/// recording them costs an entry per channel the run ever uses, a message a step.
fn may_share(row: &[Totals]) -> bool {
    (0..2).any(|side| {
        let mut ranges: Vec<(u32, u32)> = row.iter().filter_map(|t| t.tags[side]).collect();
        ranges.sort_unstable();
        ranges.windows(2).any(|w| w[1].0 <= w[0].1)
    })
}

/// One side of an interface (its out-ports or its in-ports): its messages' total time
/// over the run, and of those booked so far, their time and their latest landing
/// (above).
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    total: f64,
    booked: f64,
    latest: f64,
}

/// A rank's compute unit: its reductions' total work, and of those settled so far,
/// their work and their latest end (above).
#[derive(Clone, Copy, Debug, Default)]
struct Unit {
    total: f64,
    settled: f64,
    latest: f64,
}

impl Unit {
    /// When a piece ready at `ready` with `own` work is done, below and above, where
    /// `future` is the work of reductions its stream has not posted yet (its stream
    /// waits for this piece before posting them, so they cannot go first). Above, the
    /// better of two sets of pieces known to be done before it starts: none, or every
    /// piece settled so far (see the module docs).
    fn settle(&mut self, ready: Pair, own: f64, future: f64) -> Pair {
        let others = (self.total - own - future).max(0.0);
        let alone = ready.1 + others;
        let after = ready.1.max(self.latest) + (others - self.settled).max(0.0);
        let done = (ready.0 + own, alone.min(after) + own);
        self.settled += own;
        self.latest = self.latest.max(done.1);
        done
    }
}

/// One stream of one rank as the evaluation goes.
struct Stream<'a> {
    prog: Program<'a>,
    /// When it reaches its next operation.
    now: Pair,
    block: Block,
    /// Its handles from `base` on.
    handles: VecDeque<Slot>,
    base: u64,
    next: u64,
    /// Handles not yet known.
    unknown: usize,
    /// Landing times of its sends not yet waited past, below and above, and the length
    /// at which those landed by `now` are next dropped.
    in_flight: (Vec<f64>, Vec<f64>),
    sweep_at: usize,
    /// Work of its reductions not yet posted, and its followed pairs of sides.
    future_work: f64,
    pairs: Vec<Pairing>,
}

/// One of a stream's followed pairs of sides: its messages' time there not yet sent,
/// and the landings (below) of the last few sent, as many as the pair has ports.
#[derive(Debug)]
struct Pairing {
    out: usize,
    inp: usize,
    later: f64,
    landed: VecDeque<f64>,
}

impl Stream<'_> {
    fn resolve(&mut self, h: u64, at: Slot) {
        if h < self.base {
            return;
        }
        if let Some(slot) = self.handles.get_mut((h - self.base) as usize)
            && *slot == Slot::Unknown
        {
            *slot = at;
            self.unknown -= 1;
        }
    }
    /// Whether its block is over (and if so, `now` moved past it); pieces it waits for
    /// are settled on `unit` here, where what the stream posts next cannot go first.
    fn unblocked(&mut self, unit: &mut Unit) -> bool {
        match self.block {
            Block::Running => true,
            Block::Done => false,
            Block::Handle(h) => {
                if h < self.base {
                    self.block = Block::Running;
                    return true;
                }
                let i = (h - self.base) as usize;
                let at = match self.handles[i] {
                    Slot::Unknown => return false,
                    Slot::Piece(ready, own) => unit.settle(ready, own, self.future_work),
                    Slot::Done(at) => at,
                    Slot::Waited => self.now,
                };
                self.now = max2(self.now, at);
                self.handles[i] = Slot::Waited;
                // `now` only grows, so a waited handle adds nothing to a later WaitAll:
                // a stream that waits for its handles one by one (a ring) keeps only
                // those not yet waited for, not one per receive of the whole run.
                while self.handles.front() == Some(&Slot::Waited) {
                    self.handles.pop_front();
                    self.base += 1;
                }
                self.block = Block::Running;
                true
            }
            Block::All => {
                if self.unknown > 0 {
                    return false;
                }
                self.now = max2(self.now, self.settle_all(unit, self.future_work));
                self.base = self.next;
                self.handles.clear();
                self.block = Block::Running;
                true
            }
        }
    }
    /// Settles every piece among its handles (in the order they are ready, above) and
    /// returns the latest completion of them all.
    fn settle_all(&mut self, unit: &mut Unit, future: f64) -> Pair {
        let mut pieces: Vec<usize> =
            (0..self.handles.len()).filter(|&i| matches!(self.handles[i], Slot::Piece(..))).collect();
        pieces.sort_by(|&a, &b| {
            let key = |i: usize| if let Slot::Piece(r, _) = self.handles[i] { r.1 } else { 0.0 };
            key(a).total_cmp(&key(b))
        });
        for i in pieces {
            if let Slot::Piece(ready, own) = self.handles[i] {
                self.handles[i] = Slot::Done(unit.settle(ready, own, future));
            }
        }
        let mut latest = (0.0, 0.0);
        for slot in &self.handles {
            if let Slot::Done(at) = *slot {
                latest = max2(latest, at);
            }
        }
        latest
    }
}

fn max2(a: Pair, b: Pair) -> Pair {
    (a.0.max(b.0), a.1.max(b.1))
}

/// Lower and upper bounds on the time of `programs` on `topo` for `p` with `c` seconds
/// per byte reduced, in the ideal model with ports held to delivery (see the module
/// docs). Linear in the run's messages and operations. `None` where the run uses
/// switch agents, shares a channel between streams, or does not finish (a program that
/// waits for what is never sent).
pub fn program_bounds(programs: &dyn Programs, p: &Problem, topo: &dyn Topology, c: f64) -> Option<(f64, f64)> {
    bounds_holding(programs, p, topo, c).map(|(bounds, _)| bounds)
}

/// What [`bounds_holding`] kept: the most handles one stream held at once, and the
/// channels whose owner streams it recorded. The tests hold both to what is in flight,
/// not to the run's length (tests in src/algos/ring.rs, which builds the rings there,
/// as this module may not import the algorithms).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(test), expect(dead_code, reason = "only the tests read what was kept"))]
pub(crate) struct Kept {
    pub handles: usize,
    pub owners: usize,
}

/// [`program_bounds`], and what it kept on the way.
pub(crate) fn bounds_holding(
    programs: &dyn Programs,
    p: &Problem,
    topo: &dyn Topology,
    c: f64,
) -> Option<((f64, f64), Kept)> {
    let mut held = 0;
    if programs.switch_agents() {
        return None;
    }
    let np = p.ranks;
    let eb = p.elem_bytes as u64;
    // The first walk: every side's and every compute unit's total busy time, and each
    // stream's own totals.
    let faces = topo.interfaces();
    let (mut out, mut inp) = (vec![Side::default(); faces], vec![Side::default(); faces]);
    let mut units = vec![Unit::default(); np];
    let mut totals: Vec<Vec<Totals>> = Vec::with_capacity(np);
    for (r, unit) in units.iter_mut().enumerate() {
        let mut row = Vec::new();
        for prog in programs.rank_program(r as _, *p, topo) {
            let mut tot = Totals::default();
            for op in prog {
                if let Op::Recv { tag, .. } = op {
                    widen(&mut tot.tags[1], tag);
                }
                match op {
                    Op::Send { to, tag, src } => {
                        widen(&mut tot.tags[0], tag);
                        let t = topo.link(r, to as usize).time((src.len as u64 * eb) as f64);
                        let (oi, ii) = topo.route_interfaces(r, to as usize);
                        out[oi].total += t;
                        inp[ii].total += t;
                        if let Some(x) = tot.pairs.iter_mut().find(|x| x.0 == oi && x.1 == ii) {
                            x.2 += t;
                        } else if tot.pairs.len() < PAIRS {
                            tot.pairs.push((oi, ii, t));
                        }
                    }
                    Op::Recv { dst, action: Action::Reduce, .. } | Op::Reduce { dst, .. } => {
                        let w = (dst.len as u64 * eb) as f64 * c;
                        unit.total += w;
                        tot.work += w;
                    }
                    _ => {}
                }
            }
            row.push(tot);
        }
        totals.push(row);
    }
    let ports = |i: usize| topo.interface_ports(i).max(1) as f64;
    // Which stream sends and which receives on each channel is recorded only for ranks
    // whose streams' tags overlap (one stream cannot disagree with itself).
    let apart: Vec<bool> = totals.iter().map(|row| !may_share(row)).collect();
    let streams: usize = totals.iter().map(Vec::len).sum();
    let owners_max = OWNERS_FLOOR.saturating_add(OWNERS_PER_STREAM.saturating_mul(streams));

    // The second walk: the graph of events, every stream run as far as what it waits
    // for is known.
    let mut ranks: Vec<Vec<Stream>> = (0..np)
        .map(|r| {
            programs
                .rank_program(r as _, *p, topo)
                .into_iter()
                .enumerate()
                .map(|(j, prog)| {
                    let tot = totals[r].get(j).cloned().unwrap_or_default();
                    Stream {
                        prog,
                        now: (0.0, 0.0),
                        block: Block::Running,
                        handles: VecDeque::new(),
                        base: 0,
                        next: 0,
                        unknown: 0,
                        in_flight: (Vec::new(), Vec::new()),
                        sweep_at: 64,
                        future_work: tot.work,
                        pairs: tot
                            .pairs
                            .into_iter()
                            .map(|(out, inp, later)| Pairing { out, inp, later, landed: VecDeque::new() })
                            .collect(),
                    }
                })
                .collect()
        })
        .collect();
    drop(totals);
    let mut channels: ByChannel<Channel> = ByChannel::default();
    let mut owners: ByChannel<[usize; 2]> = ByChannel::default();
    let mut work: Vec<(usize, usize)> = (0..np).flat_map(|r| (0..ranks[r].len()).map(move |s| (r, s))).collect();
    work.reverse();
    let mut end = (0.0f64, 0.0f64);
    // A received piece ready at `ready`: done at once (a copy), or waiting for the
    // compute unit (a reduction), settled when its stream waits for it.
    let piece = |ready: Pair, bytes: u64, reduce: bool| -> Slot {
        if reduce { Slot::Piece(ready, bytes as f64 * c) } else { Slot::Done(ready) }
    };
    while let Some((r, s)) = work.pop() {
        loop {
            let st = &mut ranks[r][s];
            if !st.unblocked(&mut units[r]) {
                break;
            }
            held = held.max(st.handles.len());
            let Some(op) = st.prog.next() else {
                st.block = Block::Done;
                end = max2(end, st.now);
                break;
            };
            match op {
                Op::Wait(h) if h as u64 >= st.next => return None,
                Op::Wait(h) => st.block = Block::Handle(h as u64),
                Op::WaitAll => st.block = Block::All,
                Op::WaitSends(n) => {
                    // Until at most n sends are undelivered: the (len - n)-th earliest
                    // landing, below and above (an order statistic grows with every
                    // landing). What has landed by then is behind the stream for good.
                    let (lo, hi) = wait_sends(&mut st.in_flight, n as usize, st.now);
                    st.now = (lo, hi);
                }
                Op::Send { to, tag, src } => {
                    let to = to as usize;
                    let bytes = src.len as u64 * eb;
                    let t = topo.link(r, to).time(bytes as f64);
                    let (oi, ii) = topo.route_interfaces(r, to);
                    let (ko, ki) = (ports(oi), ports(ii));
                    // The stream's messages on this very pair of sides start in program
                    // order (module docs): the later ones' time is left out above, and
                    // below this one starts once one of the last min(k_out, k_in) has
                    // landed.
                    let (mut later, mut queue) = (0.0, 0.0);
                    let pairing = st.pairs.iter_mut().find(|x| x.out == oi && x.inp == ii);
                    if let Some(x) = &pairing {
                        later = (x.later - t).max(0.0);
                        if x.landed.len() >= ko.min(ki) as usize {
                            queue = x.landed.iter().copied().fold(f64::INFINITY, f64::min);
                        }
                    }
                    let (o, i) = (out[oi], inp[ii]);
                    let rest = |side: &Side, k: f64, done: f64| ((side.total - t - later - done) / k).max(0.0);
                    let alone = st.now.1 + rest(&o, ko, 0.0) + rest(&i, ki, 0.0);
                    let after = st.now.1.max(o.latest).max(i.latest) + rest(&o, ko, o.booked) + rest(&i, ki, i.booked);
                    let lands = (st.now.0.max(queue) + t, alone.min(after) + t);
                    if let Some(x) = pairing {
                        x.later -= t;
                        x.landed.push_back(lands.0);
                        if x.landed.len() > ko.min(ki) as usize {
                            x.landed.pop_front();
                        }
                    }
                    for side in [&mut out[oi], &mut inp[ii]] {
                        side.booked += t;
                        side.latest = side.latest.max(lands.1);
                    }
                    // Sends landed by the stream's present are behind it for good
                    // (whatever WaitSends comes later), so a stream that never waits for
                    // its sends keeps only those in flight.
                    // The pass runs once the list doubles since the last one kept it, so
                    // a stream that issues a thousand sends before any lands (one group
                    // of bcube) does not pass over them all at every send.
                    let fl = &mut st.in_flight;
                    if fl.0.len() >= st.sweep_at {
                        fl.0.retain(|&x| x > st.now.0);
                        fl.1.retain(|&x| x > st.now.1);
                        st.sweep_at = (2 * fl.0.len().max(fl.1.len())).max(64);
                    }
                    fl.0.push(lands.0);
                    fl.1.push(lands.1);
                    end = max2(end, lands);
                    if !apart[r] && !own(&mut owners, owners_max, (r, to, tag), 0, s) {
                        return None;
                    }
                    let ch = channels.entry((r, to, tag)).or_default();
                    match ch.recvs.pop_front() {
                        Some(pd) => {
                            let slot = piece(max2(lands, pd.post), pd.bytes, pd.reduce);
                            let recv_stream = pd.stream;
                            if ch.sends.is_empty() && ch.recvs.is_empty() {
                                channels.remove(&(r, to, tag));
                            }
                            let rs = &mut ranks[to][recv_stream];
                            rs.resolve(pd.handle, slot);
                            if rs.block != Block::Running && rs.block != Block::Done {
                                work.push((to, recv_stream));
                            }
                        }
                        None => ch.sends.push_back(lands),
                    }
                }
                Op::Recv { from, tag, dst, action } => {
                    let from = from as usize;
                    let h = st.next;
                    st.next += 1;
                    let bytes = dst.len as u64 * eb;
                    let reduce = action == Action::Reduce;
                    if reduce {
                        st.future_work -= bytes as f64 * c;
                    }
                    let post = st.now;
                    if !apart[r] && !own(&mut owners, owners_max, (from, r, tag), 1, s) {
                        return None;
                    }
                    let ch = channels.entry((from, r, tag)).or_default();
                    match ch.sends.pop_front() {
                        Some(lands) => {
                            if ch.sends.is_empty() && ch.recvs.is_empty() {
                                channels.remove(&(from, r, tag));
                            }
                            st.handles.push_back(piece(max2(lands, post), bytes, reduce));
                        }
                        None => {
                            ch.recvs.push_back(Pending { stream: s, handle: h, post, bytes, reduce });
                            st.handles.push_back(Slot::Unknown);
                            st.unknown += 1;
                        }
                    }
                }
                Op::Reduce { dst, .. } => {
                    st.next += 1;
                    let own = (dst.len as u64 * eb) as f64 * c;
                    st.future_work -= own;
                    st.handles.push_back(Slot::Piece(st.now, own));
                }
            }
        }
    }
    let finished = ranks.iter().flatten().all(|st| st.block == Block::Done && st.unknown == 0);
    if !finished || !channels.is_empty() {
        return None;
    }
    // The run ends when its last stream is done, its last piece added and its last
    // message landed.
    for (r, row) in ranks.iter_mut().enumerate() {
        for st in row {
            end = max2(end, st.settle_all(&mut units[r], 0.0));
        }
    }
    Some((end, Kept { handles: held, owners: owners.len() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::op::Region;
    use crate::topology::{FullyConnected, Link};

    /// Two ranks, two streams each: stream j sends one element to the other rank with tag
    /// `tags[j]` and receives one from it with the same tag.
    struct Pairs {
        tags: [u32; 2],
    }

    impl Programs for Pairs {
        fn rank_program(&self, rank: u32, _p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
            let peer = 1 - rank;
            self.tags
                .iter()
                .enumerate()
                .map(|(j, &tag)| {
                    let ops = [
                        Op::send(peer, tag, Region::vec(j, 1)),
                        Op::recv_copy(peer, tag, Region::vec(2 + j, 1)),
                        Op::WaitAll,
                    ];
                    Box::new(ops.into_iter()) as Program<'_>
                })
                .collect()
        }
        fn scratch_elems(&self, _p: &Problem) -> Vec<usize> {
            Vec::new()
        }
    }

    fn run(tags: [u32; 2]) -> Option<((f64, f64), Kept)> {
        let topo = FullyConnected { ranks: 2, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
        let p = Problem { ranks: 2, elems: 4, elem_bytes: 4 };
        bounds_holding(&Pairs { tags }, &p, &topo, 0.0)
    }

    /// Streams that tag apart record no owners; streams whose tags overlap are recorded,
    /// and two that use one channel still make the bounds `None` (which of the two
    /// messages a receive matches would depend on the run).
    #[test]
    fn only_streams_whose_tags_overlap_are_checked_and_a_shared_channel_refused() {
        let (bounds, kept) = run([3, 7]).expect("bounds");
        assert_eq!(kept.owners, 0);
        assert!(bounds.0 > 0.0 && bounds.0 <= bounds.1, "{bounds:?}");
        assert!(run([5, 5]).is_none());
        assert!(!may_share(&[
            Totals { tags: [Some((0, 4)), None], ..Default::default() },
            Totals { tags: [Some((5, 9)), Some((5, 5))], ..Default::default() }
        ]));
        assert!(may_share(&[
            Totals { tags: [Some((0, 10)), None], ..Default::default() },
            Totals { tags: [Some((1, 2)), None], ..Default::default() },
            Totals { tags: [Some((20, 30)), None], ..Default::default() },
        ]));
    }

    /// Two ranks, two streams each whose tags interleave (stream j tags its i-th message
    /// `2 i + j`): the tag ranges overlap, so every channel's owners are recorded, one
    /// entry a message.
    struct Interleaved {
        messages: u32,
    }

    impl Programs for Interleaved {
        fn rank_program(&self, rank: u32, _p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
            let peer = 1 - rank;
            (0..2u32)
                .map(|j| {
                    let ops = (0..self.messages).flat_map(move |i| {
                        [
                            Op::send(peer, 2 * i + j, Region::vec(j as usize, 1)),
                            Op::recv_copy(peer, 2 * i + j, Region::vec(2 + j as usize, 1)),
                            Op::WaitAll,
                        ]
                    });
                    Box::new(ops) as Program<'_>
                })
                .collect()
        }
        fn scratch_elems(&self, _p: &Problem) -> Vec<usize> {
            Vec::new()
        }
    }

    /// The owners recorded grow with the channels the run uses, not with what is in
    /// flight: past their budget the bounds give up instead of growing with the run, and
    /// below it they are kept.
    #[test]
    fn channel_owners_past_their_budget_give_up_the_bounds() {
        let topo = FullyConnected { ranks: 2, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
        let p = Problem { ranks: 2, elems: 4, elem_bytes: 4 };
        let budget = OWNERS_FLOOR + 4 * OWNERS_PER_STREAM;
        let within = (budget / 4 - 1) as u32;
        let (bounds, kept) = bounds_holding(&Interleaved { messages: within }, &p, &topo, 0.0).expect("bounds");
        assert_eq!(kept.owners, 4 * within as usize);
        assert!(bounds.0 > 0.0 && bounds.0 <= bounds.1, "{bounds:?}");
        assert!(bounds_holding(&Interleaved { messages: within + 2 }, &p, &topo, 0.0).is_none());
    }
}
