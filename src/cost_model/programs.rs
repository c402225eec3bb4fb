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
//! - **below**, nothing: a message lands `alpha + m/B` after it is issued, a reduction
//!   starts once its piece is ready. Every time is a max-plus expression growing in
//!   every duration and wait, so by induction over the run's events in time order no
//!   event of the run happens sooner;
//! - **above**, the most it can be. While a message waits, every out-port of the
//!   interface it leaves by or every in-port of the one it enters by is busy (the
//!   waiting messages take free ports greedily), so it waits at most
//!   `(W_out - t)/k_out + (W_in - t)/k_in`, the other messages' time on those two sides
//!   over the whole run; a piece waits for the compute unit at most the other
//!   reductions' time on that rank, `W_c - r`. By the same induction no event happens
//!   later.
//!
//! Both need the messages of a channel (sender, receiver, tag) to be matched in the
//! same order in every run: receives match sends in the order each was issued, which
//! program order fixes where one stream of the sender and one of the receiver use the
//! channel. A channel used by two streams at once makes the bounds `None`.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::sim::op::{Action, Op, Program};
use crate::sim::{Problem, Programs};
use crate::topology::Topology;

/// The most messages a run may have for [`program_bounds`]: the programs are walked
/// twice and every message is booked, a good part of what the run itself costs, so a
/// larger run (ring on 1024 GPUs, 2 million messages) is left without bounds rather
/// than paying that again. The same as the sweep's [`super::SWEEP_LIMIT`].
pub const PROGRAM_BOUNDS_LIMIT: u64 = 400_000;

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

/// Record that stream `s` uses channel `key` on side `side` (0: sends, 1: receives);
/// false where another stream of the same rank did.
fn own(owners: &mut ByChannel<[usize; 2]>, key: Key, side: usize, s: usize) -> bool {
    let o = owners.entry(key).or_insert([usize::MAX; 2]);
    if o[side] == usize::MAX {
        o[side] = s;
    }
    o[side] == s
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

/// One stream of one rank as the evaluation goes.
struct Stream<'a> {
    prog: Program<'a>,
    /// When it reaches its next operation.
    now: Pair,
    block: Block,
    /// Completion times of its handles from `base` on (`None`: not yet known).
    handles: VecDeque<Option<Pair>>,
    base: u64,
    next: u64,
    /// Handles not yet known, and the latest completion of those known, since the
    /// last `WaitAll` (the earlier ones are behind `now`).
    unknown: usize,
    latest: Pair,
    /// Landing times of its sends not yet waited past, below and above.
    in_flight: (Vec<f64>, Vec<f64>),
}

impl Stream<'_> {
    fn resolve(&mut self, h: u64, at: Pair) {
        if h < self.base {
            return;
        }
        if let Some(slot) = self.handles.get_mut((h - self.base) as usize)
            && slot.is_none()
        {
            *slot = Some(at);
            self.unknown -= 1;
            self.latest = max2(self.latest, at);
        }
    }
    /// Whether its block is over (and if so, `now` moved past it).
    fn unblocked(&mut self) -> bool {
        match self.block {
            Block::Running => true,
            Block::Done => false,
            Block::Handle(h) => {
                let known = if h < self.base { Some(self.now) } else { self.handles[(h - self.base) as usize] };
                match known {
                    Some(at) => {
                        self.now = max2(self.now, at);
                        self.block = Block::Running;
                        true
                    }
                    None => false,
                }
            }
            Block::All => {
                if self.unknown > 0 {
                    return false;
                }
                self.now = max2(self.now, self.latest);
                self.base = self.next;
                self.handles.clear();
                self.block = Block::Running;
                true
            }
        }
    }
}

fn max2(a: Pair, b: Pair) -> Pair {
    (a.0.max(b.0), a.1.max(b.1))
}

/// Lower and upper bounds on the time of `programs` on `topo` for `p` with `c` seconds
/// per byte reduced, in the ideal model with ports held to delivery (see the module
/// docs). `None` where the run has more than [`PROGRAM_BOUNDS_LIMIT`] messages, uses
/// switch agents, shares a channel between streams, or does not finish (a program that
/// waits for what is never sent).
pub fn program_bounds(programs: &dyn Programs, p: &Problem, topo: &dyn Topology, c: f64) -> Option<(f64, f64)> {
    if programs.switch_agents() {
        return None;
    }
    let np = p.ranks;
    let eb = p.elem_bytes as u64;
    // The first walk: every side's and every compute unit's total busy time.
    let faces = topo.interfaces();
    let (mut w_out, mut w_in, mut w_c) = (vec![0.0f64; faces], vec![0.0f64; faces], vec![0.0f64; np]);
    let mut messages = 0u64;
    for (r, wc) in w_c.iter_mut().enumerate() {
        for prog in programs.rank_program(r as _, *p, topo) {
            for op in prog {
                match op {
                    Op::Send { to, src, .. } => {
                        messages += 1;
                        if messages > PROGRAM_BOUNDS_LIMIT {
                            return None;
                        }
                        let t = topo.link(r, to as usize).time((src.len as u64 * eb) as f64);
                        let (oi, ii) = topo.route_interfaces(r, to as usize);
                        w_out[oi] += t;
                        w_in[ii] += t;
                    }
                    Op::Recv { dst, action: Action::Reduce, .. } | Op::Reduce { dst, .. } => {
                        *wc += (dst.len as u64 * eb) as f64 * c;
                    }
                    _ => {}
                }
            }
        }
    }
    let ports = |i: usize| topo.interface_ports(i).max(1) as f64;

    // The second walk: the graph of events, every stream run as far as what it waits
    // for is known.
    let mut ranks: Vec<Vec<Stream>> = (0..np)
        .map(|r| {
            programs
                .rank_program(r as _, *p, topo)
                .into_iter()
                .map(|prog| Stream {
                    prog,
                    now: (0.0, 0.0),
                    block: Block::Running,
                    handles: VecDeque::new(),
                    base: 0,
                    next: 0,
                    unknown: 0,
                    latest: (0.0, 0.0),
                    in_flight: (Vec::new(), Vec::new()),
                })
                .collect()
        })
        .collect();
    let mut channels: ByChannel<Channel> = ByChannel::default();
    // Which stream sends and which receives on each channel, kept only for ranks of
    // several streams (one stream cannot disagree with itself).
    let one_stream: Vec<bool> = ranks.iter().map(|streams| streams.len() <= 1).collect();
    let mut owners: ByChannel<[usize; 2]> = ByChannel::default();
    let mut work: Vec<(usize, usize)> = (0..np).flat_map(|r| (0..ranks[r].len()).map(move |s| (r, s))).collect();
    work.reverse();
    let mut end = (0.0f64, 0.0f64);
    // A received piece ready at `ready`: when it is done.
    let piece = |r: usize, ready: Pair, bytes: u64, reduce: bool| -> Pair {
        if !reduce {
            return ready;
        }
        let own = bytes as f64 * c;
        (ready.0 + own, ready.1 + (w_c[r] - own).max(0.0) + own)
    };
    while let Some((r, s)) = work.pop() {
        loop {
            let st = &mut ranks[r][s];
            if !st.unblocked() {
                break;
            }
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
                    let wait = ((w_out[oi] - t) / ports(oi)).max(0.0) + ((w_in[ii] - t) / ports(ii)).max(0.0);
                    let lands = (st.now.0 + t, st.now.1 + wait + t);
                    // Sends landed by the stream's present are behind it for good
                    // (whatever WaitSends comes later), so a stream that never waits for
                    // its sends keeps only those in flight.
                    let fl = &mut st.in_flight;
                    if fl.0.len() >= 64 {
                        fl.0.retain(|&x| x > st.now.0);
                        fl.1.retain(|&x| x > st.now.1);
                    }
                    fl.0.push(lands.0);
                    fl.1.push(lands.1);
                    end = max2(end, lands);
                    if !one_stream[r] && !own(&mut owners, (r, to, tag), 0, s) {
                        return None;
                    }
                    let ch = channels.entry((r, to, tag)).or_default();
                    match ch.recvs.pop_front() {
                        Some(pd) => {
                            let ready = max2(lands, pd.post);
                            let done = piece(to, ready, pd.bytes, pd.reduce);
                            let recv_stream = pd.stream;
                            if ch.sends.is_empty() && ch.recvs.is_empty() {
                                channels.remove(&(r, to, tag));
                            }
                            let rs = &mut ranks[to][recv_stream];
                            rs.resolve(pd.handle, done);
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
                    let post = st.now;
                    if !one_stream[r] && !own(&mut owners, (from, r, tag), 1, s) {
                        return None;
                    }
                    let ch = channels.entry((from, r, tag)).or_default();
                    match ch.sends.pop_front() {
                        Some(lands) => {
                            if ch.sends.is_empty() && ch.recvs.is_empty() {
                                channels.remove(&(from, r, tag));
                            }
                            let done = piece(r, max2(lands, post), bytes, reduce);
                            st.handles.push_back(Some(done));
                            st.latest = max2(st.latest, done);
                        }
                        None => {
                            ch.recvs.push_back(Pending { stream: s, handle: h, post, bytes, reduce });
                            st.handles.push_back(None);
                            st.unknown += 1;
                        }
                    }
                }
                Op::Reduce { dst, .. } => {
                    st.next += 1;
                    let done = piece(r, st.now, dst.len as u64 * eb, true);
                    st.handles.push_back(Some(done));
                    st.latest = max2(st.latest, done);
                }
            }
        }
    }
    let finished = ranks.iter().flatten().all(|st| st.block == Block::Done && st.unknown == 0);
    if !finished || !channels.is_empty() {
        return None;
    }
    // The run ends when its last stream is done and its last message has landed.
    for st in ranks.iter().flatten() {
        end = max2(end, st.latest);
    }
    Some(end)
}
