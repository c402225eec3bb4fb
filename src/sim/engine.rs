//! The discrete-event engine: the machine model of docs/model.md, exactly, with the
//! wire left to a [`NetworkModel`] ([`super::network`]: the ideal, flow and LogGP models).
//!
//! State per rank: its program (a lazy [`Op`] stream), posted receives, a FIFO compute
//! unit. State per interface (a group of ports, [`Topology::interfaces`]; by default one
//! per rank): free outgoing and incoming ports and the messages waiting for them. A
//! message takes one outgoing port of its sender's interface and one incoming port of its
//! receiver's ([`Topology::route_interfaces`]) and holds them until it is delivered (or
//! until its model frees them: LogGP's gap).
//! Time moves by popping events (a message delivered, a reduction finished, an event of
//! the network model) in the order `(time, insertion sequence)`
//! ([`super::queue::EventQueue`]). All events of one instant are processed before ports
//! are handed out, so a port freed at `t` serves a message issued at `t`; ports go to
//! waiting messages greedily in the order `(issue time, sender rank, sender's issue
//! sequence)`, which is the only order the model allows; then the network model settles
//! the instant. Nothing depends on hash order, threads or the clock.
//!
//! The hot loop allocates nothing per event: messages and compute jobs live in slabs
//! with free lists, payloads come from a pool, and every per-rank list keeps its
//! capacity.
//!
//! Memory per rank is kept small, so that a million ranks fit (README, "Scaling"): a
//! rank's state is its program, a few counters, a window of outstanding handles, and
//! the heads of lists linked through the shared slabs (its messages waiting for ports,
//! what waits to be matched at it, its compute queue); payloads are kept apart from the
//! messages, only when data moves.

/// Events processed by every engine of the process so far, counted in whole blocks of
/// [`EVENT_BLOCK`]: what the progress report of a long run reads (one relaxed atomic add
/// per block keeps the event loop as it was).
pub static EVENTS_DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// See [`EVENTS_DONE`].
pub const EVENT_BLOCK: u64 = 1 << 16;

use std::collections::BinaryHeap;

use smallvec::SmallVec;

use super::data::{DataPlane, Snapshots};
use super::network::flow::{FlowStats, LinkStat};
use super::network::{NetworkModel, Sched, Start};
use super::noise::Noise;
use super::op::{Action, Op, Program, Rank, Region, VEC};
use super::queue::EventQueue;
use crate::topology::Topology;

/// What the engine reports about one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimStats {
    /// Completion time of the last rank, seconds.
    pub time: f64,
    /// Completion time of every rank, seconds; empty above [`PER_RANK_MAX`] ranks,
    /// where only the last one ([`SimStats::time`]) is kept.
    pub rank_finish: Vec<f64>,
    /// Messages sent in total.
    pub messages: u64,
    /// Bytes sent by each rank.
    pub bytes_sent: Vec<u64>,
    /// Bytes received by each rank; empty above [`PER_RANK_MAX`] ranks.
    pub bytes_received: Vec<u64>,
    /// Most extra buffer bytes any rank held at once (scratch + received, unconsumed data).
    pub peak_buffer_bytes: u64,
    /// With data moved as it runs: the most bytes of values the messages in flight held at
    /// once, all ranks together (a send's values are copied when it is issued, one copy
    /// for the sends of one unchanged region: [`crate::sim::data::Snapshots`]); 0 without
    /// data or on a logging plane.
    pub peak_payload_bytes: u64,
    /// The most messages issued and not yet consumed by their receive at once, all ranks
    /// together: what the engine holds a record of (a slot, or a deferred send's share of
    /// a record) whatever its timing; the memory estimate's count of messages in flight
    /// is an upper bound of it ([`crate::estimate`]).
    pub peak_in_flight: u64,
    /// Events popped from the queue.
    pub events: u64,
    /// Reductions performed (local and on receipt).
    pub reductions: u64,
    /// Under the flow model: whether links were shared, and every link's traffic.
    pub flow: Option<FlowStats>,
}

/// Above this many ranks, [`SimStats`] keeps no per-rank finish times or received
/// bytes: the report lists per-rank figures only up to the same size
/// ([`crate::timeline::DETAIL_MAX_RANKS`]), and keeping them costs a store or two per
/// event (6% of ring's time at 256 ranks) and, at a million ranks, a tenth of the run's
/// memory. What a caller of a larger run still gets is the last finish time
/// ([`SimStats::time`]) and every rank's bytes sent.
pub const PER_RANK_MAX: usize = 64;

/// A program did something the model cannot run, or the run could not finish.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The machine cannot run under the model asked for.
    #[error("{0}")]
    Unsupported(String),
    /// Events ran out while ranks still waited.
    #[error("deadlock at t = {time:e} s: {detail}")]
    Deadlock {
        /// When the engine ran dry.
        time: f64,
        /// Which ranks wait on what (the first few).
        detail: String,
    },
    /// A link fault left messages without a route (`noise.faults`): who waits for whom.
    #[error("{0}")]
    CutOff(Box<super::flow::CutOff>),
    /// An operation that no machine could run (a bug in the algorithm).
    #[error("rank {rank}: {what}")]
    BadOp {
        /// The rank whose program issued it.
        rank: Rank,
        /// What is wrong.
        what: String,
    },
}

/// Hooks that see every message and reduction as it is scheduled: timelines,
/// critical paths and counters build on this without touching the engine.
pub trait Observer {
    /// A message occupies its ports from `start` to `end`. Under the flow model `end` is
    /// not known yet and is infinite; [`Observer::message_end`] follows with it.
    fn message(&mut self, _m: &MessageInfo, _start: f64, _end: f64) {}
    /// Under the flow model: message `m` (the one [`Observer::message`] announced with
    /// the same [`MessageInfo::id`]) was delivered at `end`.
    fn message_end(&mut self, _m: &MessageInfo, _end: f64) {}
    /// A reduction of `bytes` bytes runs on `rank`'s compute unit from `start` to `end`.
    fn compute(&mut self, _rank: Rank, _bytes: u64, _start: f64, _end: f64) {}
    /// Whether [`Observer::link_loads`] is wanted (it costs memory per rate change).
    fn wants_link_loads(&self) -> bool {
        false
    }
    /// Under the flow model, once after the run: the links used, and every change of a
    /// link's load as `(index into links, time, share of its capacity in use)`.
    fn link_loads(&mut self, _links: &[LinkStat], _loads: Vec<(u32, f64, f64)>) {}
}

/// The observer that observes nothing (compiled away).
pub struct NoObserver;
impl Observer for NoObserver {}

/// A message as an [`Observer`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct MessageInfo {
    /// The engine's handle for the message while it is in flight (reused afterwards).
    pub id: u32,
    /// Sender.
    pub src: Rank,
    /// Receiver.
    pub dst: Rank,
    /// Tag.
    pub tag: u32,
    /// Payload size.
    pub bytes: u64,
    /// When the sender issued it.
    pub issued: f64,
}

/// Sizes the engine needs besides the programs.
#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// Bytes per element.
    pub elem_bytes: usize,
    /// Seconds per byte reduced (`C`).
    pub cost_per_byte: f64,
    /// Elements in each scratch buffer `1..` of every rank (index 0 is unused).
    pub scratch_bytes: u64,
    /// Bytes added to every message on the wire (`network.envelope`).
    pub envelope: u64,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Running,
    Wait(u32),
    WaitAll,
    WaitSends(u32),
    Done,
}

/// A posted receive, as it is bound to a message.
#[derive(Clone, Copy, Debug)]
struct Posted {
    stream: u16,
    handle: u32,
    dst: Region,
    action: Action,
}

/// A receive posted before its message at an indexed rank ([`INDEX_FROM`]), where
/// [`NetworkModel::LAZY_SENDS`] allows it: this 32-byte record in the engine's slab of
/// them, in the rank's [`Table`], instead of a message slot (64 bytes, and 20 of list
/// links) written when it is posted and read when its message comes. `direct` and `naive`
/// post P - 1 receives per rank at once, a million at 1,024 ranks; the matching send
/// takes a fresh slot instead, most often one just freed and still in the cache
/// ([`Engine::take_indexed`]). A receive of 2^32 elements or more takes a slot.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Early {
    /// Where its data goes (`buf`, from `offset`, `len` elements).
    offset: usize,
    src: Rank,
    tag: u32,
    handle: u32,
    len: u32,
    /// The next entry of its table's chain ([`Chains`]).
    next: u32,
    stream: u16,
    buf: u8,
    action: Action,
}

const _: () = assert!(std::mem::size_of::<Early>() == 32);

/// A matching table's chain entry that is an [`Early`] record (its index in the bits
/// below), not a message slot.
const EARLY: u32 = 1 << 31;

/// The links of the chains of matching tables, whose entries are message slots (linked
/// through [`Links`]) and [`Early`] records (through their own `next`).
struct Chains<'e> {
    links: &'e mut [Links],
    early: &'e mut [Early],
}

impl Chains<'_> {
    #[inline]
    fn next(&self, e: u32) -> u32 {
        if e & EARLY != 0 { self.early[(e & !EARLY) as usize].next } else { self.links[e as usize].next[2] }
    }

    #[inline]
    fn set_next(&mut self, e: u32, next: u32) {
        if e & EARLY != 0 {
            self.early[(e & !EARLY) as usize].next = next;
        } else {
            self.links[e as usize].next[2] = next;
        }
    }

    /// Put `e` at the end of `chain`.
    #[inline]
    fn push_back(&mut self, chain: &mut List, e: u32) {
        self.set_next(e, NONE);
        if chain.tail == NONE {
            chain.head = e;
        } else {
            self.set_next(chain.tail, e);
        }
        chain.tail = e;
    }

    /// Take out the first entry of `chain`.
    #[inline]
    fn pop_front(&self, chain: &mut List) -> Option<u32> {
        let e = chain.head;
        if e == NONE {
            return None;
        }
        chain.head = if e == chain.tail { NONE } else { self.next(e) };
        if chain.head == NONE {
            chain.tail = NONE;
        }
        Some(e)
    }
}

/// A slot of the message slab: a message, a receive posted before its message was sent,
/// or the two matched.
///
/// A receive posted first takes a slot of its own (or, at an indexed rank, an [`Early`]
/// record), which the matching send then fills in: a rank's unmatched receives cost no inline list in its state, and a slot never
/// holds a receive and a message that are not each other's. 64 bytes, one cache line:
/// the receive's source, tag and length are the message's, and the slot's list links
/// live apart ([`Links`]), touched only when a list changes.
#[derive(Clone, Copy, Debug)]
struct Msg {
    /// The sender (a posted receive's source while no message matched it).
    src: Rank,
    dst: Rank,
    tag: u32,
    seq: u32,
    /// Elements (a posted receive's length while no message matched it).
    len: usize,
    issued: f64,
    /// The bound receive's handle (`NONE` while the message is unbound), where its data
    /// goes (`recv_buf`, from `recv_offset`, `len` elements), and its stream.
    recv_handle: u32,
    recv_offset: usize,
    recv_buf: u8,
    action: Action,
    delivered: bool,
    /// Whether its bytes count against the receiver's buffer memory until consumed.
    held: bool,
    recv_stream: u16,
    /// The sender's stream, told when the message is delivered.
    stream: u16,
    /// The interfaces whose ports it takes: its sender's outgoing, its receiver's
    /// incoming ([`Topology::route_interfaces`]).
    src_if: u32,
    dst_if: u32,
    /// Whether it waits for its receive to be posted before it may wait for ports
    /// ([`NetworkModel::rendezvous`]); in the padding of the cache line.
    parked: bool,
}

impl Msg {
    const EMPTY: Msg = Msg {
        src: 0,
        dst: 0,
        tag: 0,
        seq: 0,
        len: 0,
        issued: 0.0,
        recv_handle: NONE,
        recv_offset: 0,
        recv_buf: VEC,
        action: Action::Copy,
        delivered: false,
        held: false,
        recv_stream: 0,
        stream: 0,
        src_if: 0,
        dst_if: 0,
        parked: false,
    };

    /// Where the bound receive puts the data.
    fn recv_region(&self) -> Region {
        Region { buf: self.recv_buf, offset: self.recv_offset, len: self.len }
    }

    /// Bind receive `p`.
    fn set_recv(&mut self, p: Posted) {
        self.recv_handle = p.handle;
        self.recv_offset = p.dst.offset;
        self.recv_buf = p.dst.buf;
        self.action = p.action;
        self.recv_stream = p.stream;
    }
}

/// The lists of messages of a rank or an interface, linked through the message slab (one
/// with nothing waiting then costs 8 bytes a list, not an inline vector's 24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// Messages out of the interface waiting for ports, in priority order.
    Out = 0,
    /// Messages into the interface waiting for ports, in priority order.
    In = 1,
    /// What waits to be matched at the rank: messages to it not yet bound to a
    /// receive, in issue order, and its receives posted before their messages, in post
    /// order (`recv_handle` set), in one list. A receive and a message that match are
    /// never both in it, so a search for one kind meets the other only with another
    /// source or tag. A rank with many ([`INDEX_FROM`]) keeps them in a [`Table`]
    /// instead, one chain per bucket of sources, linked the same way.
    Unmatched = 2,
}

/// A message slot's places in its lists ([`Link`]): the next slot of each (`NONE` at
/// the end), and the previous one of the two port lists, so that a message leaves its
/// port lists in constant time when it starts, and a message issued out of line is put
/// in place by walking back from the tail (where it almost always belongs), not from
/// the head. (The matching list is searched from its head anyway, and is short or
/// indexed.) Kept apart from [`Msg`] so that the slot stays one cache line.
#[derive(Clone, Copy, Debug)]
struct Links {
    next: [u32; 3],
    prev: [u32; 2],
}

impl Links {
    const EMPTY: Links = Links { next: [NONE; 3], prev: [NONE; 2] };
}

/// The first and last message of one of a rank's lists (`NONE` when empty).
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List { head: NONE, tail: NONE };

    /// The messages in order.
    fn iter<'m>(&self, links: &'m [Links], l: Link) -> impl Iterator<Item = u32> + Clone + 'm {
        let mut at = self.head;
        std::iter::from_fn(move || {
            let id = at;
            if id == NONE {
                return None;
            }
            at = links[id as usize].next[l as usize];
            Some(id)
        })
    }

    /// Put `id` after `prev` (`NONE`: first).
    #[inline]
    fn insert_after(&mut self, links: &mut [Links], l: Link, prev: u32, id: u32) {
        let k = l as usize;
        let next = if prev == NONE { self.head } else { links[prev as usize].next[k] };
        links[id as usize].next[k] = next;
        if prev == NONE {
            self.head = id;
        } else {
            links[prev as usize].next[k] = id;
        }
        if next == NONE {
            self.tail = id;
        }
        if l != Link::Unmatched {
            links[id as usize].prev[k] = prev;
            if next != NONE {
                links[next as usize].prev[k] = id;
            }
        }
    }

    #[inline]
    fn push_back(&mut self, links: &mut [Links], l: Link, id: u32) {
        let tail = self.tail;
        self.insert_after(links, l, tail, id);
    }

    /// Take `id` out of port list `l` (doubly linked). Its own links stay as they
    /// were, so a walk standing on it can still step to what followed it.
    ///
    /// Taking out the head leaves its successor's `prev` link as it was: the head's
    /// `prev` is never read (a walk back stops at the head), and writing it would touch
    /// the successor's links, a cache miss per message started where lists are long
    /// (`direct`'s in-lists hold a message from every sender).
    #[inline]
    fn unlink(&mut self, links: &mut [Links], l: Link, id: u32) {
        let k = l as usize;
        debug_assert!(l != Link::Unmatched);
        if id == self.head {
            self.head = links[id as usize].next[k];
            if self.head == NONE {
                self.tail = NONE;
            }
            return;
        }
        let Links { next, prev } = links[id as usize];
        let (prev, next) = (prev[k], next[k]);
        links[prev as usize].next[k] = next;
        if next == NONE {
            self.tail = prev;
        } else {
            links[next as usize].prev[k] = prev;
        }
    }

    /// Take out the first message of matching list `l` passing `f`, if any.
    #[inline]
    fn remove_first(&mut self, links: &mut [Links], msgs: &[Msg], l: Link, f: impl Fn(&Msg) -> bool) -> Option<u32> {
        let k = l as usize;
        let (mut prev, mut at) = (NONE, self.head);
        while at != NONE {
            // The tail's link is NONE: not loaded, a cache miss saved where a bucket
            // holds one entry.
            let next = if at == self.tail { NONE } else { links[at as usize].next[k] };
            if f(&msgs[at as usize]) {
                if prev == NONE {
                    self.head = next;
                } else {
                    links[prev as usize].next[k] = next;
                }
                if next == NONE {
                    self.tail = prev;
                }
                return Some(at);
            }
            (prev, at) = (at, next);
        }
        None
    }

    /// Take out the first message, if any.
    fn pop_front(&mut self, links: &[Links], l: Link) -> Option<u32> {
        let id = self.head;
        if id == NONE {
            return None;
        }
        self.head = links[id as usize].next[l as usize];
        if self.head == NONE {
            self.tail = NONE;
        }
        Some(id)
    }
}

/// A rank's matching list becomes a [`Table`] once it holds more than this many
/// entries: below it a walk of the list is cheaper than finding a bucket (a ring's list
/// holds one or two), above it a walk is what made `direct` cubic (a rank posts P - 1
/// receives before the first message comes in).
const INDEX_FROM: u32 = 16;

/// The buckets a rank's matching table starts with (a power of two above [`INDEX_FROM`]).
const TABLE_FROM: usize = 32;

/// The most buckets a matching table grows to (a table doubles only while its rank holds
/// more entries than buckets, so this bounds nothing a run reaches but the index width).
const MAX_BUCKETS: usize = 1 << 31;

/// An indexed rank's matching list, split into buckets by source rank and tag: the
/// entries of source `s` and tag `t` are in bucket [`bucket_of`]`(s, t) % len`, in the
/// order they came, so the first receive posted for a source and tag still takes that
/// source's first message with the tag, which is all matching needs. A match walks one
/// bucket: at a rank with few entries the pairs that share a bucket, and once the rank
/// has grown the table past its entries, only the pair's own entries of that tag. The
/// table doubles when the rank holds more entries than buckets, so it costs at most 16
/// bytes an entry at the rank's busiest; it goes back to the pool when the rank has
/// nothing waiting. The tag is in the key because one source may have many entries
/// waiting, one per tag (a ring or tree cut into a million segments posts a receive for
/// each at once): keyed by source alone, every match walked them all, quadratic in the
/// segments. A bucket is computed, not hashed at random (no hash order anywhere).
type Table = Vec<List>;

/// The bucket key of what comes from `src` with `tag` ([`Table`]): the source plus the
/// tag times an odd constant, so that with 2^k buckets the sources of one tag fall in
/// distinct buckets (an exchange's P - 1 receives of one step, as before the tag was in
/// the key), and so do one source's tags (a segmented pipeline's pieces).
#[inline(always)]
fn bucket_of(src: Rank, tag: u32) -> usize {
    (src as usize).wrapping_add((tag as usize).wrapping_mul(0x9E37_79B1))
}

/// A compute job in the job slab, and the next job of its rank's queue.
#[derive(Clone, Copy, Debug)]
struct JobSlot {
    job: Job,
    next: u32,
}

/// A compute job: two words, so that a wave of P reductions in flight costs little.
#[derive(Clone, Copy, Debug)]
enum Job {
    /// Reduce a delivered message into its bound region.
    Msg(u32),
    /// A local `Reduce` op: its slot in the slab of [`Local`]s.
    Local(u32),
    /// The sender's overhead for message `.0` ([`NetworkModel::send_overhead`]).
    Sent(u32),
    /// The receiver's overhead for delivered message `.0`
    /// ([`NetworkModel::recv_overhead`]).
    Arrived(u32),
}

/// A local `Reduce` op waiting for or on the compute unit.
#[derive(Clone, Copy, Debug)]
struct Local {
    stream: u16,
    handle: u32,
    src: Region,
    dst: Region,
}

/// A send issued while its sender's ports have messages waiting already, kept as this
/// record in its sender's queue of deferred sends until a pass of
/// [`Engine::match_ports`] could give it a port ([`Engine::materialize`]): 32 bytes
/// written and read in order, where a message slot is touched again and again at random.
///
/// A record is a run: `more` sends follow the one it describes, each to the next rank
/// (mod P) with the next sequence number, the same in all else. `direct` and `naive`
/// issue their P - 1 sends of a step to `r + 1, r + 2, ...` at one instant, so a rank's
/// whole queue is one to three records instead of P - 1 (32 MB at 1,024 ranks).
#[derive(Clone, Copy, Debug)]
struct Deferred {
    to: Rank,
    tag: u32,
    seq: u32,
    stream: u16,
    more: u16,
    len: usize,
    issued: f64,
}

/// Bytes of the engine's record of one stream of a rank's program, beside the
/// program's own state (its boxed iterator): the memory estimate counts it for an
/// algorithm that runs many streams a rank.
pub const STREAM_BYTES: u64 = std::mem::size_of::<Stream<'static>>() as u64;

/// One sequential stream of a rank's program (a rank may run several at once).
struct Stream<'p> {
    prog: Program<'p>,
    block: Block,
    /// The handles issued and not complete.
    outstanding: Outstanding,
    /// Sends issued and not yet delivered.
    sends_in_flight: u32,
}

/// A stream's handles that are issued and not complete, as a window of bits.
///
/// Handles are issued in order and most complete within a few of their issue, so the
/// set is a window of [`Outstanding::WINDOW`] bits from the oldest outstanding handle,
/// 12 bytes where a list would be 24. A handle issued further than that past the oldest
/// (a star's root, or `direct`'s every rank, posts a receive per rank before it waits)
/// goes into the stream's [`Spill`], and from then on every later one too, until the
/// window empties and takes the next [`Outstanding::WINDOW`] handles from the spill.
#[derive(Clone, Copy, Debug)]
struct Outstanding {
    /// The next handle to issue.
    next: u32,
    /// Every handle below `low` is complete; handle `low + i` is outstanding when bit
    /// `i` of `bits` is set (`i < WINDOW`, and below the spill's `top` while the
    /// stream has a spill), or when the spill has it.
    low: u32,
    /// Zero exactly when no handle is outstanding (then the spill has none either).
    bits: u32,
}

impl Outstanding {
    const WINDOW: u32 = 32;
    const NEW: Outstanding = Outstanding { next: 0, low: 0, bits: 0 };

    fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The oldest outstanding handle.
    fn first(&self) -> Option<u32> {
        (self.bits != 0).then_some(self.low)
    }

    /// Whether `h` is outstanding, for a stream with an empty spill.
    #[inline]
    fn contains(&self, h: u32) -> bool {
        h >= self.low && h - self.low < Self::WINDOW && self.bits & (1 << (h - self.low)) != 0
    }

    /// Whether `h` is outstanding, given the stream's spill.
    fn contains_with(&self, h: u32, spill: &Spill) -> bool {
        if spill.is_empty() || h < spill.top { self.contains(h) } else { spill.contains(h) }
    }

    /// Issue the next handle, for a stream with an empty spill, and say whether it lies
    /// beyond the window (the caller then starts the stream's spill with it).
    #[inline]
    fn issue(&mut self) -> (u32, bool) {
        let h = self.next;
        self.next += 1;
        if self.bits == 0 {
            (self.low, self.bits) = (h, 1);
        } else if h - self.low < Self::WINDOW {
            self.bits |= 1 << (h - self.low);
        } else {
            return (h, true);
        }
        (h, false)
    }

    /// Issue the next handle, given the stream's spill.
    fn issue_with(&mut self, spill: &mut Spill) -> u32 {
        if !spill.is_empty() {
            let h = self.next;
            self.next += 1;
            spill.push(h);
            return h;
        }
        let (h, beyond) = self.issue();
        if beyond {
            spill.push(h);
            spill.top = h;
        }
        h
    }

    /// Handle `h`, outstanding in the window, completed.
    #[inline]
    fn complete(&mut self, h: u32) {
        debug_assert!(h >= self.low && h - self.low < Self::WINDOW);
        self.bits &= !(1 << (h - self.low));
        if self.bits & 1 != 0 {
            return;
        }
        if self.bits != 0 {
            let k = self.bits.trailing_zeros();
            self.bits >>= k;
            self.low += k;
        } else {
            self.low += Self::WINDOW;
        }
    }

    /// Handle `h` completed, given the stream's spill: an empty window takes the
    /// spill's next handles. Whether the spill was looked at.
    ///
    /// The window is asked first: an outstanding handle is in the window exactly when
    /// its bit is set (a spilled handle's never is, even where the window's span covers
    /// it), so most completions leave the spill, a cache miss away, alone.
    fn complete_with(&mut self, h: u32, spill: &mut Spill) -> bool {
        let in_window = h.wrapping_sub(self.low) < Self::WINDOW && self.bits & (1 << (h - self.low)) != 0;
        if !in_window {
            spill.remove(h);
            return true;
        }
        self.complete(h);
        if self.bits != 0 {
            return false;
        }
        if let Some(first) = spill.first() {
            self.low = first;
            let end = first + Self::WINDOW;
            while let Some(h) = spill.pop_below(end) {
                self.bits |= 1 << (h - self.low);
            }
            spill.top = end;
        }
        true
    }
}

/// The handles of one stream issued beyond its window ([`Outstanding`]), as bits in
/// blocks of [`Spill::BLOCK`] consecutive handles (a block's `base` a multiple of it),
/// in ascending order. Once a stream spills, every later handle it issues is spilled
/// too, so the handles here run consecutively but for those completed: `direct`'s every
/// rank spills about 2P receives and sends, 2P / 64 blocks.
///
/// A handle's block is found from its distance to the first block's base, both bases
/// kept here beside the blocks, so a look-up reads one block's line where it read the
/// front, the back and a guess of a list of handles (three cache misses a completion).
/// A block emptied in the middle stays until empty blocks are the majority, then all of
/// those go at once; the first block is never empty. So memory stays within two blocks
/// (32 bytes) an outstanding handle, and no operation costs more than a binary search
/// of the blocks, amortised.
#[derive(Debug, Default)]
struct Spill {
    /// Ascending by `base`, distinct; the first has a bit set.
    blocks: std::collections::VecDeque<SpillBlock>,
    /// Blocks other than the first with no bit set.
    empty: usize,
    /// The first block's base and the last's, while there are blocks.
    front: u32,
    back: u32,
    /// While not empty: the first handle not in the window; every handle here is at
    /// or above it.
    top: u32,
}

/// [`Spill::BLOCK`] consecutive handles from `base`: bit `i` set when `base + i` is
/// outstanding in the spill.
#[derive(Clone, Copy, Debug)]
struct SpillBlock {
    base: u32,
    bits: u64,
}

impl Spill {
    const BLOCK: u32 = 64;

    fn base(h: u32) -> u32 {
        h & !(Self::BLOCK - 1)
    }

    fn bit(h: u32) -> u64 {
        1 << (h % Self::BLOCK)
    }

    fn push(&mut self, h: u32) {
        let base = Self::base(h);
        if let Some(last) = self.blocks.back_mut()
            && last.base == base
        {
            debug_assert!(last.bits >> (h % Self::BLOCK) == 0, "handles pushed in ascending order");
            if last.bits == 0 {
                self.empty -= 1;
            }
            last.bits |= Self::bit(h);
            return;
        }
        debug_assert!(self.blocks.is_empty() || base > self.back);
        if self.blocks.is_empty() {
            self.front = base;
        }
        self.back = base;
        self.blocks.push_back(SpillBlock { base, bits: Self::bit(h) });
    }

    /// The index of `h`'s block. The bases are distinct multiples of [`Spill::BLOCK`]
    /// and ascending, so `h`'s is at most `(base - front) / BLOCK` places from the front
    /// and `(back - base) / BLOCK` from the back; where no empty block was dropped
    /// between (the common case) the first guess is it, otherwise the search is within
    /// those bounds.
    fn find(&self, h: u32) -> Option<usize> {
        let base = Self::base(h);
        if self.blocks.is_empty() || base < self.front || base > self.back {
            return None;
        }
        let last = self.blocks.len() - 1;
        let hi = last.min(((base - self.front) / Self::BLOCK) as usize);
        if self.blocks[hi].base == base {
            return Some(hi);
        }
        // `blocks[hi].base > base` now, and `blocks[lo].base <= base`.
        let (mut lo, mut hi) = (last.saturating_sub(((self.back - base) / Self::BLOCK) as usize), hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.blocks[mid].base < base { lo = mid + 1 } else { hi = mid }
        }
        (self.blocks[lo].base == base).then_some(lo)
    }

    fn contains(&self, h: u32) -> bool {
        self.find(h).is_some_and(|i| self.blocks[i].bits & Self::bit(h) != 0)
    }

    fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Drop the first block, and the empty ones after it.
    fn pop_front(&mut self) {
        self.blocks.pop_front();
        while let Some(b) = self.blocks.front()
            && b.bits == 0
        {
            self.blocks.pop_front();
            self.empty -= 1;
        }
        if let Some(b) = self.blocks.front() {
            self.front = b.base;
        }
        self.sweep();
    }

    /// Drop every empty block once they are the majority.
    fn sweep(&mut self) {
        if self.empty * 2 > self.blocks.len() {
            self.blocks.retain(|b| b.bits != 0);
            self.empty = 0;
            // The first block is not empty, so it stays, and so does a last.
            self.back = self.blocks.back().expect("the first block stays").base;
        }
    }

    /// Handle `h` (here, outstanding) completed.
    fn remove(&mut self, h: u32) {
        let i = self.find(h).expect("a spilled handle is in its spill");
        let block = &mut self.blocks[i];
        debug_assert!(block.bits & Self::bit(h) != 0);
        block.bits &= !Self::bit(h);
        if block.bits != 0 {
            return;
        }
        if i == 0 {
            self.pop_front();
            return;
        }
        self.empty += 1;
        self.sweep();
    }

    /// The oldest outstanding handle here.
    fn first(&self) -> Option<u32> {
        self.blocks.front().map(|b| b.base + b.bits.trailing_zeros())
    }

    /// Take out the oldest outstanding handle if it is below `end`.
    fn pop_below(&mut self, end: u32) -> Option<u32> {
        let h = self.first()?;
        (h < end).then(|| {
            let b = self.blocks.front_mut().expect("first() found a block");
            b.bits &= !Self::bit(h);
            if b.bits == 0 {
                self.pop_front();
            }
            h
        })
    }
}

struct RankState<'p> {
    streams: SmallVec<[Stream<'p>; 1]>,
    /// What waits to be matched at it ([`Link::Unmatched`]), while it is not indexed.
    unmatched: List,
    /// How many entries wait to be matched at it.
    unmatched_len: u32,
    /// Its matching [`Table`] in the engine's pool instead of `unmatched` (`NONE` while
    /// it keeps a list): from [`INDEX_FROM`] entries on, until none is left.
    table: u32,
    /// Its streams' [`Spill`]s in the engine's pool (`NONE` while no stream has a
    /// handle beyond its window).
    spill: u32,
    held_bytes: u64,
    /// The compute unit's FIFO of jobs: first and last slot in the job slab (`NONE`
    /// when empty); the first is running whenever there is one.
    jobs_head: u32,
    jobs_tail: u32,
    send_seq: u32,
    /// Its queue of [`Deferred`] sends in the engine's pool (`NONE` while it has none).
    deferred: u32,
}

/// An interface: a group of full-duplex ports ([`Topology::interfaces`]) and the
/// messages waiting for them.
#[derive(Clone, Copy, Debug)]
struct Iface {
    /// Messages waiting for a port out of it and into it, indexed by [`Link`].
    lists: [List; 2],
    free_out: u32,
    free_in: u32,
    /// Whether a port was freed or a message queued at it since the last
    /// [`Engine::match_ports`].
    dirty: bool,
}

/// What an event does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum EvKind {
    /// Message `.0` is delivered, if `.1` is still its generation
    /// ([`NetworkModel::current`]).
    MsgDone(u32, u32),
    /// An event of the network model's own about message `.0` ([`NetworkModel::event`]).
    Net(u32, u32),
    ComputeDone(Rank),
    /// Rank `.0` starts its program late ([`Noise::start_delay`]).
    Wake(Rank),
    /// Message `.0`, held by a detour of its sender, may now wait for ports
    /// ([`Noise::issue_at`]).
    Issue(u32),
    /// A port out of interface `.0` and one into interface `.1` are free again
    /// ([`super::network::Sched::free_ports`]).
    Ports(u32, u32),
}

/// A waiting list's next message in [`Engine::match_ports`]'s merge: its [`priority`],
/// its id and its list ([`Link`]), ordered as the line is (no two share a priority).
type Cursor = (u64, u64, u32, u8);

/// Sort `v`, fast when it is sorted but for a few entries at its end.
///
/// That is the usual shape of an instant's first offers: interfaces turn dirty in the
/// order their events were scheduled, which follows the priority order of the messages
/// that woke them, except where a round wraps (a ring's rank 0 comes last). A general
/// sort finds the one long run and still sorts everything; this moves the few
/// stragglers into place, in place, in linear time, and allocates nothing.
fn sort_nearly_sorted<T: Copy + Ord>(v: &mut [T]) {
    const STRAGGLERS: usize = 8;
    let run = v.windows(2).position(|w| w[0] > w[1]).map_or(v.len(), |i| i + 1);
    if run == v.len() {
        return;
    }
    if v.len() - run > STRAGGLERS {
        v.sort_unstable();
        return;
    }
    for i in run..v.len() {
        let x = v[i];
        let at = v[..i].partition_point(|&y| y < x);
        v[at..=i].rotate_right(1);
    }
}

/// Ask the cache for the line holding `x`, ahead of its use. A hint: it reads nothing
/// into the program and cannot fault, so it changes timing only, never a result.
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch instruction does not access memory architecturally and never
    // faults; the address is a live reference's anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// `x` mod `n`, for `x < 2n`: a rank a few places on, without a division.
#[inline(always)]
fn wrap(x: usize, n: usize) -> usize {
    debug_assert!(x < 2 * n);
    if x >= n { x - n } else { x }
}

/// Push `x` onto slab `v`, growing it by an eighth when it is full, and hand back its
/// index.
///
/// A slab holds what is in flight at the busiest instant, which at a million ranks is
/// most of the run's memory; doubling would leave up to half of it unused. Growing by a
/// fixed share keeps pushes amortised constant, and a large block is moved by remapping
/// its pages, not by copying.
fn slab_push<T>(v: &mut Vec<T>, x: T) -> u32 {
    if v.len() == v.capacity() {
        v.reserve_exact(v.len() / 8 + 64);
    }
    v.push(x);
    (v.len() - 1) as u32
}

/// [`Pairs`]' map from a pair of interfaces (the sender's << 32 | the receiver's) to its
/// [`Pair`]: open addressing with linear probing, a key and its entry in one 32-byte slot,
/// two to a cache line.
///
/// A look-up is a cache miss where the map is large (`direct` at 1,024 ranks files up to
/// a million pairs), and it came at every candidate of a look-up for a free port: std's
/// map, whose control bytes and entries live apart, cost two misses a look-up, this one
/// one. Deletion shifts the entries after it back (no tombstones, so a look-up never
/// walks past what was deleted). The map is only ever looked up, never iterated, so the
/// order of its slots cannot reach a result.
struct PairMap {
    slots: Vec<PairSlot>,
    len: usize,
    /// 64 less the log2 of the slots: a hash's top bits are its home slot.
    shift: u32,
}

/// A slot of [`PairMap`]: `key` is [`PairMap::EMPTY`] when it holds nothing.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct PairSlot {
    key: u64,
    pair: Pair,
}

const _: () = assert!(std::mem::size_of::<PairSlot>() == 32);

impl PairMap {
    /// No pair: interfaces are numbered below `u32::MAX`.
    const EMPTY: u64 = u64::MAX;
    const FIRST_SLOTS: usize = 1 << 10;
    const NO_PAIR: Pair = Pair { head: NONE, tail: NONE, first: (0, 0) };

    fn new() -> Self {
        PairMap {
            slots: vec![PairSlot { key: Self::EMPTY, pair: Self::NO_PAIR }; Self::FIRST_SLOTS],
            len: 0,
            shift: 64 - Self::FIRST_SLOTS.trailing_zeros(),
        }
    }

    /// `key`'s home slot: a multiply, a fold of the high half into the low, a multiply,
    /// so that both interfaces reach the top bits.
    #[inline]
    fn home(&self, key: u64) -> usize {
        let x = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x ^ (x >> 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `key`, if any.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].key;
            if k == key {
                return Some(i);
            }
            if k == Self::EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn get(&self, key: u64) -> Option<&Pair> {
        self.find(key).map(|i| &self.slots[i].pair)
    }

    #[inline]
    fn get_mut(&mut self, key: u64) -> Option<&mut Pair> {
        self.find(key).map(|i| &mut self.slots[i].pair)
    }

    /// Put `key`, which is not in the map, with `pair`.
    fn insert_new(&mut self, key: u64, pair: Pair) {
        debug_assert!(key != Self::EMPTY && self.find(key).is_none());
        // At most three quarters full, so that a look-up walks a slot or two.
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i].key != Self::EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = PairSlot { key, pair };
        self.len += 1;
    }

    /// Empty slot `hole` (found by [`PairMap::find`]): the entries after it that would no
    /// longer be found from their home slot move back into the hole.
    fn remove_at(&mut self, mut hole: usize) {
        let mask = self.slots.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.slots[j].key;
            if k == Self::EMPTY {
                break;
            }
            // Its distance from home is at least the hole's: it may fill it.
            if (j.wrapping_sub(self.home(k)) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
        }
        self.slots[hole].key = Self::EMPTY;
        self.len -= 1;
    }

    /// Twice the slots (amortised: the map grows with the pairs waiting at the busiest
    /// instant, never per event).
    #[cold]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![PairSlot { key: Self::EMPTY, pair: Self::NO_PAIR }; old.len() * 2];
        self.shift -= 1;
        self.len = 0;
        for slot in old.into_iter().filter(|s| s.key != Self::EMPTY) {
            self.insert_new(slot.key, slot.pair);
        }
    }

    /// Ask the cache for `key`'s home slot ([`prefetch`]).
    #[inline]
    fn prefetch(&self, key: u64) {
        prefetch(&self.slots[self.home(key)]);
    }
}

/// A set of interfaces, listed in no order that matters (it is only ever searched for a
/// minimum), with constant-time insert and remove.
#[derive(Default)]
struct IfSet {
    members: Vec<u32>,
    /// Each interface's place in `members` (`NONE`: not in it).
    at: Vec<u32>,
}

impl IfSet {
    fn new(n: usize) -> Self {
        IfSet { members: Vec::new(), at: vec![NONE; n] }
    }

    #[inline]
    fn insert(&mut self, i: u32) {
        debug_assert!(self.at[i as usize] == NONE);
        self.at[i as usize] = self.members.len() as u32;
        self.members.push(i);
    }

    #[inline]
    fn remove(&mut self, i: u32) {
        let k = std::mem::replace(&mut self.at[i as usize], NONE);
        debug_assert!(k != NONE);
        let last = self.members.pop().expect("a member");
        if last != i {
            self.members[k as usize] = last;
            self.at[last as usize] = k;
        }
    }
}

/// The index that lets [`Engine::match_ports`] find the message a walk of a waiting
/// list would find without walking past the ones it cannot start: every waiting message
/// filed under its pair of interfaces, in priority order, and the interfaces with a free
/// port out and a free port in.
///
/// Where ranks fall out of step (`direct` and `naive` with blocks of two lengths), a
/// receiver that frees walks an in-list holding a message from nearly every sender past
/// those whose sender is busy, and a sender that frees walks its line past those whose
/// receiver is busy: about P looks a message, P^3 a run. Ports only fill during a pass,
/// so the first message of a list that the pass may start is the first of the pairs it
/// makes with the interfaces that still have a free port: a look-up per free interface,
/// and few are free when the walks are long. Built only once the walks have cost more
/// than [`PAIRS_FROM`] looks and [`PAIRS_PER_MESSAGE`] a message (a ring's never do),
/// so a run that does not need it pays nothing for it.
struct Pairs {
    /// (sender's interface << 32 | receiver's) to the first and last of the pair's
    /// waiting messages. Memory: an entry a pair with a message waiting.
    heads: PairMap,
    /// Each message slot's successor in its pair's chain (`NONE` at the end).
    next: Vec<u32>,
    /// Interfaces with a free out-port, and with a free in-port, kept only where there
    /// are no `bits` (each look-up reads one kind or the other, never both, so keeping
    /// both cost an update of each at every port that freed or filled).
    senders: IfSet,
    receivers: IfSet,
    /// The same sets and the pairs again as bits ([`Bits`]), up to [`BITS_MAX`]
    /// interfaces: without them, the sets above and [`Sparse`]'s lists of each
    /// interface's pairs.
    bits: Option<Bits>,
    /// The pairs' first messages as a table ([`Dense`]) instead of `heads`, where
    /// messages in flight number a fixed share of every pair ([`dense_from`]).
    dense: Option<Dense>,
    /// The pairs again by interface ([`Sparse`]), kept only where there are no `bits`.
    sparse: Option<Sparse>,
}

/// [`Pairs`]' pairs listed by interface, where there are no [`Bits`] (past [`BITS_MAX`]
/// interfaces): for each interface, the pairs it is the receiver of and those it is the
/// sender of, each by its first waiting message.
///
/// Without them a look-up for a receiver's first message that may start hashed the pair
/// it makes with every sender with a free port, and for a sender's every receiver with
/// one. On a GPU cluster (4,096 GPUs and 1,024 NICs: 5,120 interfaces) nearly every GPU's
/// own interface is free while the few messages to a NIC wait for it, so each look-up
/// hashed thousands of pairs to find one of a dozen that exist: bcube at 4,096 ranks
/// spent three quarters of its run there. A look-up now goes through whichever is
/// shorter, the interface's own pairs or the interfaces with a free port; both hold the
/// pair it finds (the one of first priority among those that may start), so what starts
/// is the same.
///
/// The lists link the pairs' first messages through their slots, so a pair whose first
/// message starts or is overtaken hands its place to its next without a look-up.
/// Memory: 24 bytes a message slot and 16 an interface.
struct Sparse {
    /// By message slot, for a pair's first message: its places in its receiver's list
    /// ([`Sparse::FROM`]) and its sender's ([`Sparse::TO`]); stale elsewhere.
    links: Vec<SparseLink>,
    /// Per list kind, per interface: the first message of the list's first pair
    /// (`NONE`: no pair), and how many pairs the list holds.
    first: [Vec<u32>; 2],
    len: [Vec<u32>; 2],
}

/// A pair's places in [`Sparse`]'s two lists, by [`Sparse::FROM`] and [`Sparse::TO`]:
/// the first messages of the pairs before and after it (`NONE`: none), and the
/// interface at the pair's other end (the sender in its receiver's list, the receiver in
/// its sender's), so that a look-up filters the pairs without reading their messages.
#[derive(Clone, Copy)]
struct SparseLink {
    prev: [u32; 2],
    next: [u32; 2],
    other: [u32; 2],
}

impl Sparse {
    /// The lists of pairs an interface receives.
    const FROM: usize = 0;
    /// The lists of pairs an interface sends.
    const TO: usize = 1;
    const UNLINKED: SparseLink = SparseLink { prev: [NONE; 2], next: [NONE; 2], other: [NONE; 2] };

    fn new(n: usize, slots: usize) -> Self {
        Sparse {
            links: vec![Self::UNLINKED; slots],
            first: [vec![NONE; n], vec![NONE; n]],
            len: [vec![0; n], vec![0; n]],
        }
    }

    /// The interface whose list of kind `k` holds pair (`s`, `d`), and the other end.
    #[inline]
    fn ends(k: usize, s: u32, d: u32) -> (u32, u32) {
        if k == Self::FROM { (d, s) } else { (s, d) }
    }

    /// Pair (`s`, `d`), whose first message is `id`, into both lists (at their fronts:
    /// their order is never read).
    fn link(&mut self, id: u32, s: u32, d: u32) {
        for k in [Self::FROM, Self::TO] {
            let (owner, other) = Self::ends(k, s, d);
            let head = self.first[k][owner as usize];
            let l = &mut self.links[id as usize];
            (l.prev[k], l.next[k], l.other[k]) = (NONE, head, other);
            if head != NONE {
                self.links[head as usize].prev[k] = id;
            }
            self.first[k][owner as usize] = id;
            self.len[k][owner as usize] += 1;
        }
    }

    /// Pair (`s`, `d`), whose first message is `id`, out of both lists.
    fn unlink(&mut self, id: u32, s: u32, d: u32) {
        for k in [Self::FROM, Self::TO] {
            let (owner, _) = Self::ends(k, s, d);
            let SparseLink { prev, next, .. } = self.links[id as usize];
            self.point(k, owner, prev[k], next[k]);
            if next[k] != NONE {
                self.links[next[k] as usize].prev[k] = prev[k];
            }
            self.len[k][owner as usize] -= 1;
        }
    }

    /// Pair (`s`, `d`)'s first message is `new` instead of `old`: `new` takes its places.
    fn replace(&mut self, old: u32, new: u32, s: u32, d: u32) {
        let l = self.links[old as usize];
        self.links[new as usize] = l;
        for k in [Self::FROM, Self::TO] {
            let (owner, _) = Self::ends(k, s, d);
            self.point(k, owner, l.prev[k], new);
            if l.next[k] != NONE {
                self.links[l.next[k] as usize].prev[k] = new;
            }
        }
    }

    /// What follows `prev` in `owner`'s list of kind `k` (`prev` `NONE`: its first) is `to`.
    #[inline]
    fn point(&mut self, k: usize, owner: u32, prev: u32, to: u32) {
        if prev == NONE {
            self.first[k][owner as usize] = to;
        } else {
            self.links[prev as usize].next[k] = to;
        }
    }

    /// The pairs in `i`'s list of kind `k`: the interface at each one's other end and its
    /// first message.
    #[inline]
    fn pairs(&self, k: usize, i: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut at = self.first[k][i as usize];
        std::iter::from_fn(move || {
            (at != NONE).then(|| {
                let (id, l) = (at, &self.links[at as usize]);
                at = l.next[k];
                (l.other[k], id)
            })
        })
    }
}

/// [`Pairs`]' heads where about every pair has a message waiting (`direct`'s every rank
/// sends to every other at once): a table of every pair's first message, 4 bytes a pair,
/// in place of [`PairMap`]'s 32-byte slots (64 MB at 1,024 ranks, where the map held a
/// million pairs at most three quarters full), and each chain's last message beside it
/// by slot (read at its first only). A look-up is an index, not a hash and a probe; a
/// removal empties one word, where the map shifted entries back; the table is 4 MiB at
/// 1,024 ranks, so a look-up hits the cache more often than the map's 64 MB did.
///
/// A pair's first message's [`priority`] is read from its slot (the map kept it in the
/// entry): the pass's merge reads that slot anyway, so the miss moves, it is not added.
///
/// Memory: built only when the messages in flight when the index is built are at least
/// the pairs over [`DENSE_SHARE`] ([`dense_from`]), so the table costs at most
/// 4 x [`DENSE_SHARE`] bytes a message in flight at the run's busiest (a message's slot
/// and links are 84): it grows with the messages in flight, not with P^2 alone. Only with
/// [`Bits`] (up to [`BITS_MAX`] interfaces, 64 MiB).
struct Dense {
    /// Interfaces: pair (s, d) is entry `s * n + d`.
    n: usize,
    /// Each pair's first waiting message (`NONE`: none), and its sender's sequence.
    heads: Vec<DenseHead>,
    /// By slot, for a pair's first message: the pair's last (stale elsewhere).
    last: Vec<u32>,
    /// Per interface: the one rank whose messages it has sent out, [`NONE`] before its
    /// first, [`Dense::MANY`] once a second rank's came ([`Dense::by_sequence`]).
    sender: Vec<u32>,
}

/// A [`Dense`] table's entry: a pair's first waiting message and that message's
/// sequence number at its sender (`seq`), beside it so that the pairs of one sender
/// are compared without reading their messages' slots ([`Engine::first_to_free`]).
#[derive(Clone, Copy)]
struct DenseHead {
    head: u32,
    seq: u32,
}

impl DenseHead {
    const EMPTY: DenseHead = DenseHead { head: NONE, seq: 0 };

    #[inline]
    fn of(id: u32, m: &Msg) -> DenseHead {
        DenseHead { head: id, seq: m.seq }
    }
}

impl Dense {
    /// [`Dense::sender`] of an interface that has sent more than one rank's messages.
    const MANY: u32 = NONE - 1;

    #[inline]
    fn at(&self, s: u32, d: u32) -> usize {
        s as usize * self.n + d as usize
    }

    /// Whether interface `s`'s waiting messages are in priority order by their
    /// sequence numbers alone: they are when one rank sent them all (a rank numbers its
    /// messages as it issues them, and its clock never runs back, so its issue times
    /// follow its numbers; [`priority`]'s rank is then the same), which is every
    /// interface where an interface is a rank.
    #[inline]
    fn by_sequence(&self, s: u32) -> bool {
        self.sender[s as usize] != Self::MANY
    }
}

/// The share of all pairs that messages in flight must make, when the [`Pairs`] index
/// is built, for it to keep its heads as a [`Dense`] table: a word a pair is then at most
/// 32 bytes a message in flight.
const DENSE_SHARE: u64 = 8;

/// Put message `id`, of priority `key`, in its pair's chain (`next`, from `head`) after
/// the last message of higher priority: neither first nor last ([`Engine::pair_insert`]
/// handles those ends without a walk).
#[inline]
fn chain_insert(next: &mut [u32], msgs: &[Msg], head: u32, id: u32, key: (u64, u64)) {
    let mut prev = head;
    while priority(&msgs[next[prev as usize] as usize]) < key {
        prev = next[prev as usize];
    }
    next[id as usize] = next[prev as usize];
    next[prev as usize] = id;
}

/// Take message `id`, not the first, out of its pair's chain (`next`, from `head`);
/// the message before it.
#[inline]
fn chain_unlink(next: &mut [u32], head: u32, id: u32) -> u32 {
    let mut prev = head;
    while next[prev as usize] != id {
        prev = next[prev as usize];
    }
    next[prev as usize] = next[id as usize];
    prev
}

/// Whether `in_flight` messages among `n` interfaces call for a [`Dense`] table.
#[inline]
fn dense_from(in_flight: u64, n: usize) -> bool {
    #[cfg(test)]
    if let Some(v) = tests::DENSE.with(|c| c.get()) {
        return v;
    }
    in_flight * DENSE_SHARE >= (n as u64) * (n as u64)
}

/// A pair's waiting messages in [`Pairs`]: the first and the last, and the first's
/// [`priority`], kept here so that a look-up that compares pairs' first messages reads
/// the entry only, not each message's slot (a cache miss each, where they number tens).
#[derive(Clone, Copy)]
struct Pair {
    head: u32,
    tail: u32,
    first: (u64, u64),
}

/// The [`Pairs`] index's sets as bits, a word per 64 interfaces: the interfaces with a
/// free port out and in, and per interface those it has a message waiting to and from,
/// so that a look-up for a sender's or a receiver's first message that may start reads
/// the words where both bits are set and hashes only those pairs.
///
/// Where ranks fall out of step, a sender's waiting messages are mostly the deferred
/// sends of one run put in line by its walk: their receivers follow one another,
/// wrapping once, in priority order (`to`, `to + 1`, ...). While a sender's out-list is
/// so (`cyclic`), its first message to a free receiver from a place in it on is the one
/// to the first such receiver from that place's on, wrapping: the first bit set in both
/// words, and one look-up.
struct Bits {
    /// Words a set.
    words: usize,
    free_out: Vec<u64>,
    free_in: Vec<u64>,
    /// Row `s` (`words` words from `s * words`): the receivers `s` has a message waiting
    /// to; `from`, row `d`: the senders with a message waiting to `d`.
    to: Vec<u64>,
    from: Vec<u64>,
    /// Per interface: whether its out-list's receivers follow one another, wrapping at
    /// most once before the first's (see above); true when it is empty.
    cyclic: Vec<bool>,
    /// Per interface: the receivers of the first and the last message put in its
    /// out-list since it was last empty (while `cyclic`; those messages may have started
    /// since, which leaves `cyclic` only stricter: what followed them from the first's on
    /// follows the first left too). The first moves on to the first waiting message's
    /// receiver where a message appended would not follow on from the first as it was
    /// ([`Engine::pair_linked`]).
    ends: Vec<(u32, u32)>,
    /// Per interface: the (issue time, sender) its waiting messages share ([`Lead`]).
    lead: Vec<Lead>,
    /// The interfaces dirty in the pass under way ([`Iface::dirty`]), set at its start
    /// and cleared at its end ([`Engine::pass`]), so that a receiver's look-up
    /// ([`Engine::first_from_free`]) drops dirty senders a word at a time instead of
    /// reading each candidate's [`Iface`] (tens a look-up at 1,024 ranks).
    dirty: Vec<u64>,
}

/// What an interface's out-list's messages share, for [`Engine::first_from_free`]: a
/// receiver that frees compares the first messages to it of every clean sender with a
/// free port, tens of them where ranks fall out of step, and each pair's first message
/// was a look-up in [`PairMap`], a cache miss. Where all of a sender's waiting messages
/// were issued at one instant by one rank (an exchange step's sends, mostly: a rank's
/// `WaitAll` waits for its receives, not its sends, so its next step's sends may go in
/// line behind what is left of this one's, which makes the lead mixed; `direct` at
/// 1,024 ranks with blocks of two lengths does so a few hundred times in 243,000 lists
/// filled from empty), a priority's first two parts are
/// known from the sender alone (the last part, the sequence, never decides between two
/// senders but where they share a rank), so only the one found first is looked up.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Lead {
    /// The shared [`priority`]'s first part (the issue time's bits).
    issued: u64,
    src: Rank,
    /// [`Lead::EMPTY`], [`Lead::ONE`] (`issued` and `src` hold) or [`Lead::MIXED`].
    kind: u32,
}

impl Lead {
    const EMPTY: u32 = 0;
    const ONE: u32 = 1;
    /// Messages of more than one (issue time, sender) wait, or did since the list was
    /// last empty (a head that starts is not replaced by reading the next message's
    /// slot): the pairs are looked up.
    const MIXED: u32 = 2;
    const NONE: Lead = Lead { issued: 0, src: 0, kind: Self::EMPTY };

    /// The lead of a list that held this one's messages and one more, of priority `p`.
    #[inline]
    fn with(self, p: (u64, u64)) -> Lead {
        let (issued, src) = (p.0, (p.1 >> 32) as Rank);
        match self.kind {
            Self::EMPTY => Lead { issued, src, kind: Self::ONE },
            Self::ONE if (self.issued, self.src) == (issued, src) => self,
            _ => Lead { kind: Self::MIXED, ..self },
        }
    }
}

impl Pairs {
    /// The pair (`s`, `d`)'s waiting messages, if any: from the [`Dense`] table (its
    /// first message's priority read from its slot in `msgs`; `tail` not kept there, so
    /// `NONE`), or from the map.
    #[inline]
    fn get(&self, msgs: &[Msg], s: u32, d: u32) -> Option<Pair> {
        match self.dense.as_ref() {
            Some(t) => {
                let head = t.heads[t.at(s, d)].head;
                (head != NONE).then(|| Pair { head, tail: NONE, first: priority(&msgs[head as usize]) })
            }
            None => self.heads.get(pair_key(s, d)).copied(),
        }
    }

    /// [`Pairs::get`] for a pair whose sender's waiting messages share `lead`: where
    /// they share one (issue time, rank) ([`Lead::ONE`]) and the [`Dense`] table keeps the
    /// first message's sequence, its [`priority`] is those three and its slot is not
    /// read (a cache miss: the pass's merge reads it later, once [`Engine::offered`]'s
    /// hint has had time to bring it in, while the other look-ups of the pass run).
    #[inline]
    fn get_led(&self, msgs: &[Msg], s: u32, d: u32, lead: Lead) -> Option<Pair> {
        match self.dense.as_ref() {
            Some(t) => {
                let h = t.heads[t.at(s, d)];
                (h.head != NONE).then(|| {
                    let first = if lead.kind == Lead::ONE {
                        (lead.issued, u64::from(lead.src) << 32 | u64::from(h.seq))
                    } else {
                        priority(&msgs[h.head as usize])
                    };
                    #[cfg(test)]
                    {
                        assert_eq!(first, priority(&msgs[h.head as usize]), "a lead is its messages' own");
                        tests::LED.with(|c| c.set(c.get() + u64::from(lead.kind == Lead::ONE)));
                    }
                    Pair { head: h.head, tail: NONE, first }
                })
            }
            None => self.heads.get(pair_key(s, d)).copied(),
        }
    }

    /// Ask the cache for where pair (`s`, `d`) is filed ([`prefetch`]).
    #[inline]
    fn prefetch(&self, s: u32, d: u32) {
        match self.dense.as_ref() {
            Some(t) => prefetch(&t.heads[t.at(s, d)]),
            None => self.heads.prefetch(pair_key(s, d)),
        }
    }
}

impl Bits {
    /// The first receiver from `from` on, wrapping, to which sender `s` has a message
    /// waiting (`None`: none): of a [`Bits::cyclic`] out-list, its first message's.
    fn first_waiting(&self, s: usize, from: u32) -> Option<u32> {
        let row = &self.to[s * self.words..][..self.words];
        let (w0, bit) = (from as usize / 64, from % 64);
        let first = row[w0] >> bit << bit;
        let rest = (w0 + 1..self.words).chain(0..=w0);
        let (w, x) = std::iter::once((w0, first)).chain(rest.map(|w| (w, row[w]))).find(|&(_, x)| x != 0)?;
        Some((w * 64) as u32 + x.trailing_zeros())
    }

    /// Pair (`s`, `d`) has a message waiting (`waiting`) or none now: its bit in `s`'s row
    /// of `to` and in `d`'s row of `from`.
    #[inline]
    fn mark_pair(&mut self, s: u32, d: u32, waiting: bool) {
        let (s, d) = (s as usize, d as usize);
        let (to, from) = (s * self.words * 64 + d, d * self.words * 64 + s);
        if waiting {
            Bits::set(&mut self.to, to);
            Bits::set(&mut self.from, from);
        } else {
            Bits::clear(&mut self.to, to);
            Bits::clear(&mut self.from, from);
        }
    }

    #[inline]
    fn set(v: &mut [u64], i: usize) {
        v[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn clear(v: &mut [u64], i: usize) {
        v[i / 64] &= !(1 << (i % 64));
    }
}

/// The most interfaces for which the [`Pairs`] index keeps [`Bits`]: two rows of bits an
/// interface, 2 MiB each at 4,096. (Past it the walks cost more than P^2 messages' memory
/// anyway only where `direct` or `naive` run, at 16 M messages and more.)
const BITS_MAX: usize = 4096;

/// Looks at waiting messages a pass may not start, after which the engine builds its
/// [`Pairs`] index; and looks a message issued, which the walks must exceed as well.
const PAIRS_FROM: u64 = 1 << 20;
// 2, not 8 as first set: `direct` at 1,024 ranks issues its first step's million sends at
// once, so 8 a message waited for 8.4 M looks, a slot read each, and the walks before the
// index was built (with a walk back from a receiver's in-list tail at every deferred send
// put in line) were 18% of the run's samples.
const PAIRS_PER_MESSAGE: u64 = 2;

/// How many more steps than there are receivers with a free port a sender's walk of its
/// line takes before it looks them up instead (a step reads a slot near the last one, a
/// look-up hashes); a cyclic out-list ([`Bits::cyclic`]) takes none.
const WALK_SLACK: usize = 8;

/// Whether walks that cost `looks` over `messages` issued call for the [`Pairs`] index.
#[cfg(not(test))]
#[inline]
fn wants_pairs(looks: u64, messages: u64) -> bool {
    looks > PAIRS_FROM && looks > PAIRS_PER_MESSAGE * messages
}

/// [`wants_pairs`] as the unit tests set it on their thread ([`tests::PAIRS`]): the
/// rule, always (the index from the first pass on), or never.
#[cfg(test)]
fn wants_pairs(looks: u64, messages: u64) -> bool {
    match tests::PAIRS.with(|c| c.get()) {
        Some(v) => v,
        None => looks > PAIRS_FROM && looks > PAIRS_PER_MESSAGE * messages,
    }
}

/// [`BITS_MAX`], or as the unit tests set it on their thread ([`tests::BITS_MAX`]).
#[inline]
fn bits_max() -> usize {
    #[cfg(test)]
    if let Some(v) = tests::BITS_MAX.with(|c| c.get()) {
        return v;
    }
    BITS_MAX
}

#[inline]
fn pair_key(src_if: u32, dst_if: u32) -> u64 {
    u64::from(src_if) << 32 | u64::from(dst_if)
}

/// One simulation: build it with [`Engine::new`], run it with [`Engine::run`].
pub struct Engine<'a, 'p, O: Observer, N: NetworkModel> {
    topo: &'a dyn Topology,
    cfg: EngineConfig,
    ranks: Vec<RankState<'p>>,
    ifaces: Vec<Iface>,
    msgs: Vec<Msg>,
    /// Each message slot's list links, beside `msgs`.
    links: Vec<Links>,
    free_msgs: Vec<u32>,
    /// The matching tables of indexed ranks ([`RankState::table`]), and those free
    /// (empty, keeping their capacity).
    tables: Vec<Table>,
    free_tables: Vec<u32>,
    /// Receives posted early at indexed ranks ([`Early`]), and the records free.
    early: Vec<Early>,
    free_early: Vec<u32>,
    /// With data: the values of the messages in flight, by slot, one copy for the sends
    /// of one unchanged region ([`Snapshots`]).
    snaps: Snapshots,
    jobs: Vec<JobSlot>,
    free_jobs: Vec<u32>,
    locals: Vec<Local>,
    free_locals: Vec<u32>,
    events: EventQueue<EvKind>,
    now: f64,
    /// Interfaces marked `dirty`.
    dirty: Vec<u32>,
    /// [`Engine::match_ports`]'s merge of waiting lists: each list's first offer, and
    /// the offers made during a pass (kept for their allocation).
    first_offers: Vec<Cursor>,
    later_offers: BinaryHeap<std::cmp::Reverse<Cursor>>,
    /// Interfaces with a free out-port.
    free_senders: usize,
    data: Option<&'a mut DataPlane>,
    stats: SimStats,
    /// Whether `stats` keeps per-rank finish times and received bytes ([`PER_RANK_MAX`]).
    per_rank: bool,
    /// Handles issued beyond their stream's window, a [`Spill`] per stream of the ranks
    /// that have any ([`RankState::spill`]), and the sets free (empty, keeping their
    /// capacity).
    spills: Vec<Vec<Spill>>,
    free_spills: Vec<u32>,
    obs: &'a mut O,
    net: N,
    /// Variability ([`super::noise`]); `None` takes none of its branches.
    noise: Option<&'a Noise>,
    /// Whether sends behind busy ports are deferred (see [`Engine::materialize`]).
    lazy: bool,
    /// Messages issued and not yet consumed ([`SimStats::peak_in_flight`] is its most).
    in_flight: u64,
    /// The ranks' queues of deferred sends ([`RankState::deferred`]), and those free.
    deferred: Vec<std::collections::VecDeque<Deferred>>,
    free_deferred: Vec<u32>,
    /// How many ranks have deferred sends: while none has (always, in a ring), a send and
    /// a pass test this one counter instead of a rank's queue.
    deferring: u32,
    /// An error found while deferred sends were matched in a pass, reported after it.
    failed: Option<SimError>,
    /// Looks at waiting messages that a pass could not start, counted until [`Pairs`]
    /// is built.
    looks: u64,
    /// The index of waiting messages by pair ([`Pairs`]), once built.
    pairs: Option<Box<Pairs>>,
}

impl<'a, 'p, O: Observer, N: NetworkModel> Engine<'a, 'p, O, N> {
    /// An engine for `programs` (one list of streams per rank, taken rank by rank, so
    /// that no list of every rank's programs is held at once) on `topo`, its messages
    /// carried by the network model `net` ([`super::network::dispatch`] builds it). With
    /// `data`, messages carry real values and reductions really reduce; without, only
    /// time is simulated.
    pub fn new(
        topo: &'a dyn Topology,
        cfg: EngineConfig,
        net: N,
        programs: impl ExactSizeIterator<Item = Vec<Program<'p>>>,
        data: Option<&'a mut DataPlane>,
        obs: &'a mut O,
    ) -> Result<Self, SimError> {
        let p = programs.len();
        let ranks = programs
            .map(|progs| RankState {
                streams: progs
                    .into_iter()
                    .map(|prog| Stream {
                        prog,
                        block: Block::Running,
                        outstanding: Outstanding::NEW,
                        sends_in_flight: 0,
                    })
                    .collect(),
                unmatched: List::EMPTY,
                unmatched_len: 0,
                table: NONE,
                spill: NONE,
                jobs_head: NONE,
                jobs_tail: NONE,
                send_seq: 0,
                deferred: NONE,
                held_bytes: cfg.scratch_bytes,
            })
            .collect();
        let ifaces: Vec<Iface> = (0..topo.interfaces())
            .map(|i| {
                let ports = topo.interface_ports(i);
                Iface { lists: [List::EMPTY; 2], free_out: ports, free_in: ports, dirty: false }
            })
            .collect();
        let free_senders = ifaces.iter().filter(|i| i.free_out > 0).count();
        let per_rank = p <= PER_RANK_MAX;
        let detail = if per_rank { p } else { 0 };
        let stats = SimStats {
            rank_finish: vec![0.0; detail],
            bytes_sent: vec![0; p],
            bytes_received: vec![0; detail],
            peak_buffer_bytes: if p > 0 { cfg.scratch_bytes } else { 0 },
            ..SimStats::default()
        };
        let snaps = data.as_deref().map(|d| Snapshots::new(p, d)).unwrap_or_default();
        Ok(Engine {
            topo,
            cfg,
            ranks,
            ifaces,
            msgs: Vec::new(),
            links: Vec::new(),
            free_msgs: Vec::new(),
            tables: Vec::new(),
            free_tables: Vec::new(),
            early: Vec::new(),
            free_early: Vec::new(),
            snaps,
            jobs: Vec::new(),
            free_jobs: Vec::new(),
            locals: Vec::new(),
            free_locals: Vec::new(),
            events: EventQueue::default(),
            now: 0.0,
            dirty: Vec::new(),
            first_offers: Vec::new(),
            later_offers: BinaryHeap::new(),
            free_senders,
            data,
            stats,
            per_rank,
            spills: Vec::new(),
            free_spills: Vec::new(),
            obs,
            net,
            noise: None,
            lazy: false,
            in_flight: 0,
            deferred: Vec::new(),
            free_deferred: Vec::new(),
            deferring: 0,
            failed: None,
            looks: 0,
            pairs: None,
        })
    }

    /// Run under `noise` (ranks late, detours, slow ranks and pairs).
    pub fn with_noise(mut self, noise: Option<&'a Noise>) -> Self {
        self.noise = noise;
        self
    }

    /// Run every program to its end.
    pub fn run(mut self) -> Result<SimStats, SimError> {
        // Deferring is exact only where a rank's messages alone leave by its own
        // interface (checked at every send, [`Engine::unlazy`]), nothing is held by a
        // detour, and no data is taken at the send.
        self.lazy =
            N::LAZY_SENDS && self.noise.is_none() && self.data.is_none() && self.topo.interfaces() == self.ranks.len();
        for r in 0..self.ranks.len() {
            if let Some(n) = self.noise {
                let delay = n.start_delay(r as Rank);
                if delay > 0.0 {
                    self.schedule(delay, EvKind::Wake(r as Rank));
                    continue;
                }
            }
            for s in 0..self.ranks[r].streams.len() {
                self.advance(r as Rank, s as u16)?;
            }
        }
        self.match_ports();
        self.check_failed()?;
        self.settle();
        while let Some((time, ev)) = self.events.pop() {
            // A delivery the model moved since is skipped, but may still be the last
            // event of its instant.
            let stale = match ev {
                EvKind::MsgDone(id, generation) => !self.net.current(id, generation),
                EvKind::Net(id, what) => !self.net.current_event(id, what),
                _ => false,
            };
            if !stale {
                self.now = time;
                self.stats.events += 1;
                if self.stats.events & (EVENT_BLOCK - 1) == 0 {
                    EVENTS_DONE.fetch_add(EVENT_BLOCK, std::sync::atomic::Ordering::Relaxed);
                }
                if !N::HOLDS_PORTS && !matches!(ev, EvKind::Ports(..)) {
                    // A port's release finishes nothing: the run ends with the last
                    // event that did.
                    self.stats.time = time;
                }
                self.handle(ev)?;
            }
            // Ports are handed out only once every event of this instant has run, so
            // that a message issued at `t` may use a port freed at `t`; then the flows
            // that started or ended at `t` share their links.
            if self.events.peek_time().is_none_or(|next| next != self.now) {
                self.match_ports();
                self.check_failed()?;
                self.settle();
            }
        }
        if N::HOLDS_PORTS {
            self.stats.time = self.now;
        }
        if let Some(flows) = self.net.take_cut() {
            let waiting = match self.check_finished() {
                Err(SimError::Deadlock { detail, .. }) => format!("ranks waiting: {detail}"),
                _ => String::new(),
            };
            return Err(SimError::CutOff(Box::new(super::flow::CutOff { time: self.now, flows, waiting })));
        }
        self.check_finished()?;
        let Engine { net, obs, mut stats, snaps, .. } = self;
        stats.flow = net.into_stats(obs);
        stats.peak_payload_bytes = snaps.peak_bytes();
        Ok(stats)
    }

    /// An error of a pass's deferred sends ([`Engine::failed`]).
    #[inline]
    fn check_failed(&mut self) -> Result<(), SimError> {
        match self.failed.take() {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// The model's once-an-instant pass (the flow model gives the flows that started or
    /// ended this instant their rates, and moves the deliveries whose rate changed).
    #[inline]
    fn settle(&mut self) {
        self.net.settle(self.now, &mut Sched { events: &mut self.events });
    }

    fn schedule(&mut self, time: f64, kind: EvKind) {
        self.events.push(time, kind);
    }

    fn mark_dirty(&mut self, i: u32) {
        let st = &mut self.ifaces[i as usize];
        if !st.dirty {
            st.dirty = true;
            self.dirty.push(i);
        }
    }

    /// Rank `r` did something at `now`: its finish time so far. (The run's finish time
    /// is the last event's, set once at the end: every event but a flow's start of data,
    /// which is never last, finishes something of some rank.)
    #[inline]
    fn finish(&mut self, r: Rank) {
        if self.per_rank {
            let f = &mut self.stats.rank_finish[r as usize];
            if self.now > *f {
                *f = self.now;
            }
        }
    }

    fn bad(&self, r: Rank, what: String) -> SimError {
        SimError::BadOp { rank: r, what }
    }

    /// With real data, whether `reg` lies inside its buffer (call it only with data).
    /// Out of line, and guarded by `self.data.is_some()` at the call: inlined, or with the
    /// guard inside, the region was copied to the stack for it on every send, data or
    /// not (two 8-byte stores read back as one 16-byte load, which waited for both).
    #[inline(never)]
    fn check_region(&self, r: Rank, reg: Region) -> Result<(), SimError> {
        if let Some(d) = self.data.as_deref() {
            let len = d.buf_len(r as usize, reg.buf);
            if reg.end() > len {
                return Err(self.bad(
                    r,
                    format!(
                        "region {}..{} of buffer {} is outside its {} elements",
                        reg.offset,
                        reg.end(),
                        reg.buf,
                        len
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Pull operations from stream `s` of rank `r` until it blocks or ends.
    fn advance(&mut self, r: Rank, s: u16) -> Result<(), SimError> {
        let (ri, si) = (r as usize, s as usize);
        loop {
            let rank = &mut self.ranks[ri];
            let spill = rank.spill;
            let st = &mut rank.streams[si];
            // Waits only change the stream's state: they are run here, on the stream
            // found once, not through another lookup of the rank and its streams.
            let op = loop {
                match st.block {
                    Block::Done => return Ok(()),
                    Block::Wait(h)
                        if if spill == NONE {
                            st.outstanding.contains(h)
                        } else {
                            st.outstanding.contains_with(h, &self.spills[spill as usize][si])
                        } =>
                    {
                        return Ok(());
                    }
                    Block::WaitAll if !st.outstanding.is_empty() => return Ok(()),
                    Block::WaitSends(n) if st.sends_in_flight > n => return Ok(()),
                    _ => {}
                }
                st.block = Block::Running;
                let Some(op) = st.prog.next() else {
                    st.block = Block::Done;
                    self.finish(r);
                    return Ok(());
                };
                match op {
                    Op::Wait(h) => {
                        if h >= st.outstanding.next {
                            return Err(self.bad(r, format!("waits for handle {h}, which was never issued")));
                        }
                        st.block = Block::Wait(h);
                    }
                    Op::WaitAll => st.block = Block::WaitAll,
                    Op::WaitSends(n) => st.block = Block::WaitSends(n),
                    op => break op,
                }
            };
            match op {
                Op::Send { to, tag, src } => self.issue_send(r, s, to, tag, src)?,
                Op::Recv { from, tag, dst, action } => self.post_recv(r, s, from, tag, dst, action)?,
                Op::Reduce { src_buf, src_offset, dst } => {
                    let src = Region { buf: src_buf, offset: src_offset, len: dst.len };
                    if self.data.is_some() {
                        self.check_region(r, src)?;
                        self.check_region(r, dst)?;
                    }
                    let handle = self.new_handle(r, s);
                    let local = Local { stream: s, handle, src, dst };
                    let slot = match self.free_locals.pop() {
                        Some(slot) => {
                            self.locals[slot as usize] = local;
                            slot
                        }
                        None => slab_push(&mut self.locals, local),
                    };
                    self.enqueue_compute(r, Job::Local(slot));
                }
                Op::Wait(_) | Op::WaitAll | Op::WaitSends(_) => unreachable!("waits are run above"),
            }
        }
    }

    // `always`: left out of line by `#[inline]`, a ring paid a call per send and receive.
    #[inline(always)]
    fn new_handle(&mut self, r: Rank, s: u16) -> u32 {
        let st = &mut self.ranks[r as usize];
        if st.spill == NONE {
            let (h, beyond) = st.streams[s as usize].outstanding.issue();
            if !beyond {
                return h;
            }
            self.new_spill(r);
            let st = &mut self.ranks[r as usize];
            let spill = &mut self.spills[st.spill as usize][s as usize];
            spill.push(h);
            spill.top = h;
            return h;
        }
        self.new_handle_spilled(r, s)
    }

    /// Give rank `r` a set of [`Spill`]s, one per stream, all empty (out of line, as
    /// what follows: most programs never get here).
    #[inline(never)]
    fn new_spill(&mut self, r: Rank) {
        let st = &mut self.ranks[r as usize];
        st.spill = match self.free_spills.pop() {
            Some(id) => id,
            None => slab_push(&mut self.spills, Vec::new()),
        };
        self.spills[st.spill as usize].resize_with(st.streams.len(), Spill::default);
    }

    /// [`Engine::new_handle`] at a rank with spills.
    #[inline(never)]
    fn new_handle_spilled(&mut self, r: Rank, s: u16) -> u32 {
        let st = &mut self.ranks[r as usize];
        st.streams[s as usize].outstanding.issue_with(&mut self.spills[st.spill as usize][s as usize])
    }

    fn complete_handle(&mut self, r: Rank, s: u16, h: u32) -> Result<(), SimError> {
        let st = &mut self.ranks[r as usize];
        if st.spill == NONE {
            st.streams[s as usize].outstanding.complete(h);
        } else {
            self.complete_spilled(r, s, h);
        }
        self.finish(r);
        self.advance(r, s)
    }

    /// [`Engine::complete_handle`] at a rank with spills; they go back to the pool
    /// once all are empty.
    #[inline(never)]
    fn complete_spilled(&mut self, r: Rank, s: u16, h: u32) {
        let st = &mut self.ranks[r as usize];
        let set = &mut self.spills[st.spill as usize];
        // A completion in the window changes no spill.
        if st.streams[s as usize].outstanding.complete_with(h, &mut set[s as usize]) && set.iter().all(Spill::is_empty)
        {
            self.free_spills.push(st.spill);
            st.spill = NONE;
        }
    }

    fn issue_send(&mut self, r: Rank, s: u16, to: Rank, tag: u32, src: Region) -> Result<(), SimError> {
        if to as usize >= self.ranks.len() || to == r {
            return Err(self.bad(r, format!("sends to rank {to}, which is not another rank of {}", self.ranks.len())));
        }
        if self.data.is_some() {
            self.check_region(r, src)?;
        }
        let (src_if, dst_if) = self.topo.route_interfaces(r as usize, to as usize);
        if src_if.max(dst_if) >= self.ifaces.len() {
            return Err(SimError::Unsupported(format!(
                "{} routes rank {r} to rank {to} through interfaces {src_if} and {dst_if}, of {}",
                self.topo.describe(),
                self.ifaces.len()
            )));
        }
        if self.lazy {
            if (src_if, dst_if) != (r as usize, to as usize) {
                self.unlazy();
            } else if self.ifaces[src_if].lists[Link::Out as usize].head != NONE
                || (self.deferring != 0 && self.ranks[r as usize].deferred != NONE)
            {
                self.defer(r, s, to, tag, src.len);
                return Ok(());
            }
        }
        let (src_if, dst_if) = (src_if as u32, dst_if as u32);
        // The first receive `to` posted for it takes it; else it waits unbound in a slot
        // of its own.
        let posted = self.take_unmatched(to, r, tag, true);
        let id = match posted {
            Some(id) => {
                let want = self.msgs[id as usize].len;
                if want != src.len {
                    return Err(self.mismatch(to, r, tag, want, src.len));
                }
                id
            }
            None => self.new_slot(),
        };
        if let Some(d) = self.data.as_deref() {
            self.snaps.take(d, r as usize, src, id);
        }
        let seq = self.ranks[r as usize].send_seq;
        debug_assert!(seq < u32::MAX, "a rank sent more than 2^32 messages");
        self.ranks[r as usize].send_seq = seq.wrapping_add(1);
        let m = &mut self.msgs[id as usize];
        (m.src, m.dst, m.tag, m.len, m.issued, m.seq, m.stream) = (r, to, tag, src.len, self.now, seq, s);
        (m.src_if, m.dst_if) = (src_if, dst_if);
        if posted.is_none() {
            // It waits for its receive, filed under its source and tag (set just above).
            self.put_unmatched(to, id);
        }
        self.ranks[r as usize].streams[s as usize].sends_in_flight += 1;
        self.stats.messages += 1;
        self.count_in_flight();
        let bytes = (src.len * self.cfg.elem_bytes) as u64;
        self.stats.bytes_sent[r as usize] += bytes;
        if self.per_rank {
            self.stats.bytes_received[to as usize] += bytes;
        }
        if let Some(n) = self.noise {
            let at = n.issue_at(r, self.now);
            if at > self.now {
                self.msgs[id as usize].issued = at;
                self.schedule(at, EvKind::Issue(id));
                return Ok(());
            }
        }
        self.issued(id);
        Ok(())
    }

    /// Rank `r` issued a send while messages of its wait for its ports: a record in its
    /// queue of deferred sends (`direct` issues P - 1 sends at once, of which a port
    /// serves one at a time).
    ///
    /// Exact, because a deferred send could not have started yet. A pass of
    /// [`Engine::match_ports`] hands ports out greedily in the order (issue time,
    /// sender, sender's sequence), and a rank's deferred sends come after all its
    /// messages in line (they were issued after them, and its interface is its own):
    /// one of them could take a port only once the pass has walked the rank's whole
    /// out-list with a port still free. That is where the pass takes it out of the queue
    /// and puts it in line, in a slot, matched to its receive as at its issue
    /// ([`Engine::materialize`]). The rank is marked dirty here so that a pass walks its
    /// list; after a pass, a rank with deferred sends has every port busy, and when one
    /// frees it is dirty again. Until then nothing but the slot and the lists' order can
    /// tell the send apart from one in line, and neither changes what the run computes
    /// (a receive posted meanwhile waits in a slot of its own and takes the send when it
    /// comes, as a receive posted before its send always does).
    #[inline(never)]
    fn defer(&mut self, r: Rank, s: u16, to: Rank, tag: u32, len: usize) {
        let (now, ranks) = (self.now, self.ranks.len());
        let st = &mut self.ranks[r as usize];
        let seq = st.send_seq;
        st.send_seq = seq.wrapping_add(1);
        if st.deferred == NONE {
            self.deferring += 1;
            st.deferred = match self.free_deferred.pop() {
                Some(q) => q,
                None => slab_push(&mut self.deferred, std::collections::VecDeque::new()),
            };
        }
        let q = &mut self.deferred[st.deferred as usize];
        match q.back_mut() {
            // The next send of the last run: it grows by one.
            Some(b)
                if b.more < u16::MAX
                    && wrap(b.to as usize + usize::from(b.more) + 1, ranks) == to as usize
                    && b.seq.wrapping_add(u32::from(b.more) + 1) == seq
                    && (b.tag, b.stream, b.len) == (tag, s, len)
                    && b.issued.to_bits() == now.to_bits() =>
            {
                b.more += 1;
            }
            _ => q.push_back(Deferred { to, tag, seq, stream: s, more: 0, len, issued: now }),
        }
        st.streams[s as usize].sends_in_flight += 1;
        self.stats.messages += 1;
        self.count_in_flight();
        let bytes = (len * self.cfg.elem_bytes) as u64;
        self.stats.bytes_sent[r as usize] += bytes;
        if self.per_rank {
            self.stats.bytes_received[to as usize] += bytes;
        }
        self.mark_dirty(r);
    }

    /// Rank `a`'s oldest deferred send ([`Engine::defer`]) goes in line for its ports:
    /// matched and put in a slot as [`Engine::issue_send`] does, and in the lists; the
    /// interfaces are marked dirty only with `mark` (inside a pass they must not be: the
    /// pass offers it through its sender's list, and a receiver marked mid-pass would
    /// hide its own clean sends from the in-lists' offers). Its slot.
    fn materialize(&mut self, a: Rank, mark: bool) -> u32 {
        let st = &mut self.ranks[a as usize];
        let q = &mut self.deferred[st.deferred as usize];
        let front = q.front_mut().expect("a rank with deferred sends has one");
        let d = *front;
        if front.more > 0 {
            // The run's next send takes its place.
            front.more -= 1;
            front.to = if front.to as usize + 1 == self.ranks.len() { 0 } else { front.to + 1 };
            front.seq = front.seq.wrapping_add(1);
            self.look_ahead(a);
        } else {
            q.pop_front();
            if q.is_empty() {
                self.free_deferred.push(st.deferred);
                st.deferred = NONE;
                self.deferring -= 1;
            } else {
                self.look_ahead(a);
            }
        }
        let posted = self.take_unmatched(d.to, a, d.tag, true);
        let id = match posted {
            Some(id) => {
                let want = self.msgs[id as usize].len;
                if want != d.len && self.failed.is_none() {
                    self.failed = Some(self.mismatch(d.to, a, d.tag, want, d.len));
                }
                id
            }
            None => self.new_slot(),
        };
        let m = &mut self.msgs[id as usize];
        (m.src, m.dst, m.tag, m.len, m.issued, m.seq, m.stream) = (a, d.to, d.tag, d.len, d.issued, d.seq, d.stream);
        (m.src_if, m.dst_if) = (a, d.to);
        if posted.is_none() {
            self.put_unmatched(d.to, id);
        }
        self.link_ports::<true>(id);
        if mark {
            self.mark_dirty(a);
            self.mark_dirty(d.to);
        }
        id
    }

    /// Ask the cache early for what rank `a`'s next deferred sends will read
    /// ([`prefetch`]: hints, which change nothing but timing).
    ///
    /// Where deferred sends pile up (`direct`, `naive`: every rank's P - 1 sends at
    /// once), a rank takes its next one a message time later, after every other busy rank
    /// took one of its own, so what each reads is long out of the cache: the record, the
    /// receiver's bucket, the receive's slot, a chain of three misses a message that made
    /// most of the gap to a ring. Staged one take apart, so that each hint's line is in
    /// when the next stage reads it: the line of the record after next but one; the
    /// bucket of the record after next (its line asked for one take ago); the slot at the
    /// head of the next record's bucket (asked for one take ago), with its links; and,
    /// once there is a [`Pairs`] index, the next record's home slot in its [`PairMap`].
    #[inline]
    fn look_ahead(&self, a: Rank) {
        let q = &self.deferred[self.ranks[a as usize].deferred as usize];
        let next = q[0].to;
        if let Some(p) = self.pairs.as_deref() {
            // Where the next one will be filed under its pair (deferring, a rank's
            // interface is its own).
            p.prefetch(a, next);
            // The slot it will most likely be written to ([`Engine::take_indexed`],
            // [`Engine::new_slot`]: the free list's top), long out of the cache where
            // messages wait by the million. Only with the index, so a ring's path is as
            // it was.
            if let Some(&id) = self.free_msgs.last() {
                prefetch(&self.msgs[id as usize]);
            }
        }
        // Within a run (`direct`, `naive`) the next receivers follow from the first.
        let after = if q[0].more >= 1 {
            Some((0, wrap(next as usize + 1, self.ranks.len()) as Rank))
        } else {
            if let Some((at, _)) = self.upcoming(q, 2) {
                prefetch(&q[at]);
            }
            self.upcoming(q, 1)
        };
        if let Some(b) = after.and_then(|(at, to)| self.bucket(to, a, q[at].tag)) {
            prefetch(b);
        }
        if let Some(b) = self.bucket(next, a, q[0].tag)
            && b.head != NONE
        {
            if b.head & EARLY != 0 {
                // Records sit 16 bytes past a line (a large block's header), so one in
                // two spans two lines.
                let e = &self.early[(b.head & !EARLY) as usize];
                prefetch(e);
                prefetch(&e.action);
            } else {
                prefetch(&self.msgs[b.head as usize]);
                prefetch(&self.links[b.head as usize]);
            }
        }
    }

    /// Where send `k` (0: the next) of deferred queue `q` is: its record's index in `q`,
    /// and its receiver.
    #[inline]
    fn upcoming(&self, q: &std::collections::VecDeque<Deferred>, mut k: usize) -> Option<(usize, Rank)> {
        for (at, d) in q.iter().enumerate() {
            if k <= usize::from(d.more) {
                return Some((at, wrap(d.to as usize + k, self.ranks.len()) as Rank));
            }
            k -= usize::from(d.more) + 1;
        }
        None
    }

    /// The bucket of indexed rank `r`'s matching table that holds what comes from `src`
    /// (`None` while `r` keeps a list).
    #[inline]
    fn bucket(&self, r: Rank, src: Rank, tag: u32) -> Option<&List> {
        let t = self.ranks[r as usize].table;
        if t == NONE {
            return None;
        }
        let table = &self.tables[t as usize];
        Some(&table[bucket_of(src, tag) & (table.len() - 1)])
    }

    /// A send that leaves by another interface than its sender's own: no more
    /// deferring, and every deferred send goes in line now (a pass has not run since
    /// this send was issued, so none of them has missed a port).
    #[inline(never)]
    fn unlazy(&mut self) {
        self.lazy = false;
        for a in 0..self.ranks.len() {
            while self.ranks[a].deferred != NONE {
                self.materialize(a as Rank, true);
            }
        }
    }

    /// Issued message `id` goes in line for its ports, after what a model that charges
    /// the host asks first.
    #[inline]
    fn issued(&mut self, id: u32) {
        if N::HOST { self.host_send(id) } else { self.queue_message(id) }
    }

    /// Bytes of message `id` on the wire.
    fn wire(&self, id: u32) -> u64 {
        (self.msgs[id as usize].len * self.cfg.elem_bytes) as u64 + self.cfg.envelope
    }

    /// [`Engine::issued`] under a model with [`NetworkModel::HOST`] (out of line: the
    /// other models never get here): the sender's overhead on its compute unit, then
    /// [`Engine::gate`].
    #[inline(never)]
    fn host_send(&mut self, id: u32) {
        if self.net.send_overhead(self.wire(id)) > 0.0 {
            let src = self.msgs[id as usize].src;
            self.enqueue_compute(src, Job::Sent(id));
        } else {
            self.gate(id);
        }
    }

    /// Message `id`'s sender is done with it: in line for its ports, unless the model
    /// makes it wait for its receive ([`NetworkModel::rendezvous`]) and none is posted
    /// yet ([`Engine::post_recv`] lets it go then).
    fn gate(&mut self, id: u32) {
        let wire = self.wire(id);
        if self.msgs[id as usize].recv_handle == NONE && self.net.rendezvous(wire) {
            self.msgs[id as usize].parked = true;
        } else {
            self.queue_message(id);
        }
    }

    /// Put issued message `id` in line for its ports.
    // `always`: every send of a ring comes here (see [`Engine::link_ports`]).
    #[inline(always)]
    fn queue_message(&mut self, id: u32) {
        let (src_if, dst_if) = self.link_ports::<false>(id);
        self.mark_dirty(src_if);
        self.mark_dirty(dst_if);
    }

    /// Put message `id` in its interfaces' lists, in priority order; its interfaces.
    /// `LAST_OUT`: it is known to come last in its sender's out-list (a deferred send:
    /// [`Engine::defer`] says why), so the list's last slot, long out of the cache where
    /// lines are long, is not read to find its place.
    // `always`: with the deferred sends' and LogGP's callers `#[inline]` alone left it
    // out of line in a ring's hot path.
    #[inline(always)]
    fn link_ports<const LAST_OUT: bool>(&mut self, id: u32) -> (u32, u32) {
        let m = &self.msgs[id as usize];
        let (src_if, dst_if) = (m.src_if, m.dst_if);
        let key = (m.issued, m.src, m.seq);
        let before = |m: u32, msgs: &[Msg]| {
            let o = &msgs[m as usize];
            (o.issued, o.src, o.seq) <= key
        };
        // Keep both interfaces' queues in priority order; a new message is almost always
        // last (always, at its sender's interface when that is the sender's alone), and
        // otherwise a few places from the end (ranks woken at one instant issue in event
        // order, not rank order), so its place is found walking back from the tail.
        for (i, l) in [(src_if, Link::Out), (dst_if, Link::In)] {
            if l == Link::In && self.pairs.is_some() {
                // Filed under its pair instead of the in-list: the index finds the
                // in-lists' offers ([`Engine::offer_in`]). Tested here, on the in-list's
                // turn, not after the out-list's insert: there it kept the out-list's
                // head live across the insert, 3 instructions a message in a ring.
                self.pair_linked(id);
                break;
            }
            let List { head, tail: mut prev } = self.ifaces[i as usize].lists[l as usize];
            debug_assert!(!LAST_OUT || l != Link::Out || prev == NONE || before(prev, &self.msgs));
            let mut steps = 0;
            while !(LAST_OUT && l == Link::Out) && prev != NONE && !before(prev, &self.msgs) {
                // The head's `prev` is stale ([`List::unlink`]).
                prev = if prev == head { NONE } else { self.links[prev as usize].prev[l as usize] };
                steps += 1;
            }
            if l == Link::In {
                // Steps the [`Pairs`] index would save (it files the message under its
                // pair instead): a deferred send put in line after others were issued
                // to its receiver walks back past them all.
                self.looks += steps;
            }
            self.ifaces[i as usize].lists[l as usize].insert_after(&mut self.links, l, prev, id);
        }
        (src_if, dst_if)
    }

    /// Message `id` went in its sender's out-list: whether the out-list stays
    /// [`Bits::cyclic`], what its messages share ([`Lead`]), and filed under its pair
    /// ([`Engine::pair_insert`]).
    ///
    /// Read from the list's ends as [`Bits::ends`] keeps them, not from the slots of its
    /// first and last message: those were two cache misses a message put in line (the
    /// first was put there long before).
    #[inline(never)]
    fn pair_linked(&mut self, id: u32) {
        let n = self.ifaces.len() as u32;
        let m = &self.msgs[id as usize];
        let (s, d) = (m.src_if as usize, m.dst_if);
        let key = priority(m);
        if let Some(b) = self.pairs.as_deref_mut().expect("built").bits.as_mut() {
            let List { head, tail } = self.ifaces[s].lists[Link::Out as usize];
            if head == id && tail == id {
                // The list was empty.
                b.cyclic[s] = true;
                b.ends[s] = (d, d);
                b.lead[s] = Lead::NONE.with(key);
            } else {
                b.lead[s] = b.lead[s].with(key);
                if tail != id {
                    b.cyclic[s] = false;
                } else {
                    // Appended: its receiver must come after the last one's and before
                    // the first one's, wrapping.
                    let (first, last) = b.ends[s];
                    let at = |f: u32, d: u32| if d >= f { d - f } else { d + n - f };
                    let mut cyclic = b.cyclic[s] && at(first, d) > at(first, last);
                    if b.cyclic[s] && !cyclic {
                        // The first receiver may be stale: its message and some after it
                        // may have started, and a rank's next step's sends (again to
                        // `r + 1`, `r + 2`, ...) go in line behind what is left of this
                        // step's, as its waits are for its receives, not its sends. What
                        // waits follows on from its own first receiver, the first bit set
                        // in the row from the stale one on (the head's slot would tell
                        // too, at a cache miss); without this, the list stayed refused
                        // until empty, and its sender walked it at every offer.
                        if let Some(h) = b.first_waiting(s, first).filter(|&h| h != first) {
                            b.ends[s].0 = h;
                            cyclic = at(h, d) > at(h, last);
                            #[cfg(test)]
                            if cyclic {
                                tests::MOVED.with(|c| c.set(c.get() + 1));
                            }
                        }
                    }
                    b.cyclic[s] = cyclic;
                    b.ends[s].1 = d;
                }
            }
        }
        self.pair_insert(id);
    }

    /// File waiting message `id` under its pair ([`Pairs`]), in priority order: last,
    /// unless it went in line out of issue order (a rendezvous let it go late).
    #[inline(never)]
    fn pair_insert(&mut self, id: u32) {
        let msgs = &self.msgs;
        let pairs = self.pairs.as_deref_mut().expect("built");
        if pairs.next.len() < msgs.len() {
            pairs.next.resize(msgs.len(), NONE);
        }
        if let Some(sp) = pairs.sparse.as_mut().filter(|sp| sp.links.len() < msgs.len()) {
            sp.links.resize(msgs.len(), Sparse::UNLINKED);
        }
        let m = &msgs[id as usize];
        let key = priority(m);
        let Pairs { heads, next, bits, dense, sparse, .. } = pairs;
        if let Some(t) = dense.as_mut() {
            if t.last.len() < msgs.len() {
                t.last.resize(msgs.len(), NONE);
            }
            let sender = &mut t.sender[m.src_if as usize];
            if *sender != m.src {
                *sender = if *sender == NONE { m.src } else { Dense::MANY };
            }
            let at = t.at(m.src_if, m.dst_if);
            let head = t.heads[at].head;
            if head == NONE {
                next[id as usize] = NONE;
                t.heads[at] = DenseHead::of(id, m);
                t.last[id as usize] = id;
                if let Some(b) = bits.as_mut() {
                    b.mark_pair(m.src_if, m.dst_if, true);
                }
                return;
            }
            #[cfg(test)]
            tests::CHAINED.with(|c| c.set(c.get() + 1));
            let tail = t.last[head as usize];
            if priority(&msgs[tail as usize]) < key {
                next[tail as usize] = id;
                next[id as usize] = NONE;
                t.last[head as usize] = id;
            } else if key < priority(&msgs[head as usize]) {
                next[id as usize] = head;
                t.heads[at] = DenseHead::of(id, m);
                t.last[id as usize] = tail;
            } else {
                chain_insert(next, msgs, head, id, key);
            }
            return;
        }
        let pk = pair_key(m.src_if, m.dst_if);
        match heads.get_mut(pk) {
            None => {
                next[id as usize] = NONE;
                heads.insert_new(pk, Pair { head: id, tail: id, first: key });
                if let Some(b) = bits.as_mut() {
                    b.mark_pair(m.src_if, m.dst_if, true);
                }
                if let Some(sp) = sparse.as_mut() {
                    sp.link(id, m.src_if, m.dst_if);
                }
            }
            Some(Pair { head, tail, first }) => {
                if priority(&msgs[*tail as usize]) < key {
                    next[*tail as usize] = id;
                    next[id as usize] = NONE;
                    *tail = id;
                } else if key < *first {
                    if let Some(sp) = sparse.as_mut() {
                        sp.replace(*head, id, m.src_if, m.dst_if);
                    }
                    next[id as usize] = *head;
                    *head = id;
                    *first = key;
                } else {
                    chain_insert(next, msgs, *head, id, key);
                }
            }
        }
    }

    /// Message `id` left the waiting lists: out of its pair's chain.
    #[inline]
    fn pair_remove(&mut self, id: u32) {
        let m = &self.msgs[id as usize];
        let pairs = self.pairs.as_deref_mut().expect("built");
        let Pairs { heads, next, bits, dense, sparse, .. } = pairs;
        if let Some(t) = dense.as_mut() {
            let at = t.at(m.src_if, m.dst_if);
            let head = t.heads[at].head;
            debug_assert!(head != NONE, "a waiting message is filed under its pair");
            if head == id {
                let after = next[id as usize];
                if after == NONE {
                    t.heads[at] = DenseHead::EMPTY;
                    if let Some(b) = bits.as_mut() {
                        b.mark_pair(m.src_if, m.dst_if, false);
                    }
                } else {
                    t.heads[at] = DenseHead::of(after, &self.msgs[after as usize]);
                    t.last[after as usize] = t.last[id as usize];
                }
                return;
            }
            let prev = chain_unlink(next, head, id);
            if t.last[head as usize] == id {
                t.last[head as usize] = prev;
            }
            return;
        }
        let key = pair_key(m.src_if, m.dst_if);
        let at = heads.find(key).expect("a waiting message is filed under its pair");
        let Pair { head, tail, first } = &mut heads.slots[at].pair;
        if *head == id {
            if *tail == id {
                heads.remove_at(at);
                if let Some(b) = bits.as_mut() {
                    b.mark_pair(m.src_if, m.dst_if, false);
                }
                if let Some(sp) = sparse.as_mut() {
                    sp.unlink(id, m.src_if, m.dst_if);
                }
            } else {
                *head = next[id as usize];
                *first = priority(&self.msgs[*head as usize]);
                if let Some(sp) = sparse.as_mut() {
                    sp.replace(id, *head, m.src_if, m.dst_if);
                }
            }
            return;
        }
        let prev = chain_unlink(next, *head, id);
        if *tail == id {
            *tail = prev;
        }
    }

    /// A port out of `src_if` and one into `dst_if` were freed: the [`Pairs`] index's
    /// sets of interfaces with a free port. (Out of line, as the index's other
    /// upkeep, so that where there is no index the hot paths stay as small as they were.)
    #[inline(never)]
    fn pairs_freed(&mut self, src_if: u32, dst_if: u32) {
        let p = self.pairs.as_deref_mut().expect("built");
        if self.ifaces[src_if as usize].free_out == 1 {
            match p.bits.as_mut() {
                Some(b) => Bits::set(&mut b.free_out, src_if as usize),
                None => p.senders.insert(src_if),
            }
        }
        if self.ifaces[dst_if as usize].free_in == 1 {
            match p.bits.as_mut() {
                Some(b) => Bits::set(&mut b.free_in, dst_if as usize),
                None => p.receivers.insert(dst_if),
            }
        }
    }

    /// Message `id` started (its ports taken): out of its pair's chain, and its
    /// interfaces out of the [`Pairs`] index's sets where they have no free port left.
    #[inline(never)]
    fn pairs_started(&mut self, id: u32) {
        self.pair_remove(id);
        let (src_if, dst_if) = (self.msgs[id as usize].src_if, self.msgs[id as usize].dst_if);
        let p = self.pairs.as_deref_mut().expect("built");
        if self.ifaces[src_if as usize].free_out == 0 {
            match p.bits.as_mut() {
                Some(b) => Bits::clear(&mut b.free_out, src_if as usize),
                None => p.senders.remove(src_if),
            }
        }
        if self.ifaces[dst_if as usize].free_in == 0 {
            match p.bits.as_mut() {
                Some(b) => Bits::clear(&mut b.free_in, dst_if as usize),
                None => p.receivers.remove(dst_if),
            }
        }
    }

    /// Build the [`Pairs`] index from the waiting lists as they are (between passes).
    #[cold]
    fn build_pairs(&mut self) {
        #[cfg(test)]
        {
            tests::BUILT.with(|c| c.set(c.get() + 1));
            tests::BUILT_AFTER.with(|c| c.set(self.stats.messages));
        }
        let n = self.ifaces.len();
        let words = n.div_ceil(64);
        // Issued and not yet landed, deferred sends included.
        let in_flight: u64 =
            self.ranks.iter().flat_map(|r| r.streams.iter()).map(|s| u64::from(s.sends_in_flight)).sum();
        let bits = (n <= bits_max()).then(|| Bits {
            words,
            free_out: vec![0; words],
            free_in: vec![0; words],
            to: vec![0; n * words],
            from: vec![0; n * words],
            cyclic: vec![true; n],
            ends: vec![(0, 0); n],
            lead: vec![Lead::NONE; n],
            dirty: vec![0; words],
        });
        self.pairs = Some(Box::new(Pairs {
            heads: PairMap::new(),
            next: vec![NONE; self.msgs.len()],
            senders: IfSet::new(if bits.is_some() { 0 } else { n }),
            receivers: IfSet::new(if bits.is_some() { 0 } else { n }),
            dense: (bits.is_some() && dense_from(in_flight, n)).then(|| Dense {
                n,
                heads: vec![DenseHead::EMPTY; n * n],
                last: vec![NONE; self.msgs.len()],
                sender: vec![NONE; n],
            }),
            sparse: bits.is_none().then(|| Sparse::new(n, self.msgs.len())),
            bits,
        }));
        for i in 0..n {
            let st = self.ifaces[i];
            let pairs = self.pairs.as_deref_mut().expect("built");
            if pairs.bits.is_none() {
                if st.free_out > 0 {
                    pairs.senders.insert(i as u32);
                }
                if st.free_in > 0 {
                    pairs.receivers.insert(i as u32);
                }
            }
            if let Some(b) = pairs.bits.as_mut() {
                if st.free_out > 0 {
                    Bits::set(&mut b.free_out, i);
                }
                if st.free_in > 0 {
                    Bits::set(&mut b.free_in, i);
                }
                // Whether the out-list is cyclic and what its messages share, as
                // `pair_linked` would have kept them.
                let mut list = st.lists[Link::Out as usize].iter(&self.links, Link::Out);
                if let Some(head) = list.next() {
                    let first = self.msgs[head as usize].dst_if;
                    let at = |d: u32| if d >= first { d - first } else { d + n as u32 - first };
                    let (mut last, mut cyclic) = (first, true);
                    let mut lead = Lead::NONE.with(priority(&self.msgs[head as usize]));
                    for m in list {
                        let m = &self.msgs[m as usize];
                        cyclic = cyclic && at(m.dst_if) > at(last);
                        last = m.dst_if;
                        lead = lead.with(priority(m));
                    }
                    (b.cyclic[i], b.ends[i], b.lead[i]) = (cyclic, (first, last), lead);
                }
            }
            // Every waiting message is in exactly one in-list, in priority order; the
            // in-lists are kept no more.
            let mut at = st.lists[Link::In as usize].head;
            while at != NONE {
                self.pair_insert(at);
                at = self.links[at as usize].next[Link::In as usize];
            }
            self.ifaces[i].lists[Link::In as usize] = List::EMPTY;
        }
    }

    fn post_recv(
        &mut self,
        r: Rank,
        s: u16,
        from: Rank,
        tag: u32,
        dst: Region,
        action: Action,
    ) -> Result<(), SimError> {
        if from as usize >= self.ranks.len() || from == r {
            return Err(
                self.bad(r, format!("receives from rank {from}, which is not another rank of {}", self.ranks.len()))
            );
        }
        if self.data.is_some() {
            self.check_region(r, dst)?;
        }
        let handle = self.new_handle(r, s);
        let p = Posted { stream: s, handle, dst, action };
        let found = self.take_unmatched(r, from, tag, false);
        match found {
            Some(id) => {
                let m = &mut self.msgs[id as usize];
                if m.len != dst.len {
                    let len = m.len;
                    return Err(self.mismatch(r, from, tag, dst.len, len));
                }
                m.set_recv(p);
                let delivered = m.delivered;
                if N::HOST && m.parked {
                    // A rendezvous message waited for this receive.
                    m.parked = false;
                    self.queue_message(id);
                }
                if delivered { self.consume(id) } else { Ok(()) }
            }
            None => {
                let st = &self.ranks[r as usize];
                if N::LAZY_SENDS
                    && (st.table != NONE || st.unmatched_len >= INDEX_FROM)
                    && u32::try_from(dst.len).is_ok()
                {
                    self.post_early(r, from, tag, p);
                    return Ok(());
                }
                // The receive waits in a slot the matching send fills in.
                let id = self.new_slot();
                let m = &mut self.msgs[id as usize];
                (m.src, m.dst, m.tag, m.len) = (from, r, tag, dst.len);
                m.set_recv(p);
                self.put_unmatched(r, id);
                Ok(())
            }
        }
    }

    /// Take out what waits to be matched at rank `r` from `src` with `tag`: the first
    /// receive posted for it (`posted`), or else the first message.
    #[inline(always)]
    fn take_unmatched(&mut self, r: Rank, src: Rank, tag: u32, posted: bool) -> Option<u32> {
        let st = &mut self.ranks[r as usize];
        if st.table != NONE {
            return self.take_indexed(r, src, tag, posted);
        }
        let found = st.unmatched.remove_first(&mut self.links, &self.msgs, Link::Unmatched, |m| {
            (m.recv_handle != NONE) == posted && m.src == src && m.tag == tag
        });
        if found.is_some() {
            st.unmatched_len -= 1;
        }
        found
    }

    /// [`Engine::take_unmatched`] at an indexed rank: out of line, so that the plain
    /// list's path (every rank of a ring, say) stays a few instructions. A receive found
    /// as an [`Early`] record comes back in a fresh slot, as it would have been in its
    /// own.
    #[inline(never)]
    fn take_indexed(&mut self, r: Rank, src: Rank, tag: u32, posted: bool) -> Option<u32> {
        let st = &mut self.ranks[r as usize];
        let table = &mut self.tables[st.table as usize];
        let mask = table.len() - 1;
        let bucket = &mut table[bucket_of(src, tag) & mask];
        let mut ch = Chains { links: &mut self.links, early: &mut self.early };
        let (mut prev, mut at) = (NONE, bucket.head);
        while at != NONE {
            // The tail's link is not loaded: a cache miss saved where a bucket holds one
            // entry.
            let next = if at == bucket.tail { NONE } else { ch.next(at) };
            let hit = if at & EARLY != 0 {
                let e = &ch.early[(at & !EARLY) as usize];
                posted && e.src == src && e.tag == tag
            } else {
                let m = &self.msgs[at as usize];
                m.src == src && m.tag == tag && (m.recv_handle != NONE) == posted
            };
            if hit {
                if prev == NONE {
                    bucket.head = next;
                } else {
                    ch.set_next(prev, next);
                }
                if next == NONE {
                    bucket.tail = prev;
                }
                break;
            }
            (prev, at) = (at, next);
        }
        if at == NONE {
            return None;
        }
        st.unmatched_len -= 1;
        // An empty rank goes back to its list, and its table (all buckets empty) to
        // the pool, so tables are held only by ranks with something waiting.
        if st.unmatched_len == 0 {
            self.free_tables.push(st.table);
            st.table = NONE;
        }
        if at & EARLY == 0 {
            return Some(at);
        }
        self.free_early.push(at & !EARLY);
        let m = self.early_msg(r, at & !EARLY);
        // A fresh slot, written once.
        Some(match self.free_msgs.pop() {
            Some(id) => {
                self.msgs[id as usize] = m;
                id
            }
            None => {
                slab_push(&mut self.links, Links::EMPTY);
                slab_push(&mut self.msgs, m)
            }
        })
    }

    /// Early receive `i` at rank `r` as it would be in a slot of its own.
    #[inline]
    fn early_msg(&self, r: Rank, i: u32) -> Msg {
        let e = &self.early[i as usize];
        Msg {
            src: e.src,
            dst: r,
            tag: e.tag,
            len: e.len as usize,
            recv_handle: e.handle,
            recv_offset: e.offset,
            recv_buf: e.buf,
            action: e.action,
            recv_stream: e.stream,
            ..Msg::EMPTY
        }
    }

    /// Slot `id` (its source and tag set) waits to be matched at rank `r`.
    #[inline]
    fn put_unmatched(&mut self, r: Rank, id: u32) {
        let st = &mut self.ranks[r as usize];
        if st.table == NONE && st.unmatched_len < INDEX_FROM {
            st.unmatched_len += 1;
            st.unmatched.push_back(&mut self.links, Link::Unmatched, id);
            return;
        }
        let m = &self.msgs[id as usize];
        self.put_indexed(r, id, bucket_of(m.src, m.tag));
    }

    /// Receive `p` of rank `r`, from `src` with `tag`, waits for its message as an
    /// [`Early`] record (the rank is, or is about to be, indexed).
    #[inline(never)]
    fn post_early(&mut self, r: Rank, src: Rank, tag: u32, p: Posted) {
        let e = Early {
            offset: p.dst.offset,
            src,
            tag,
            handle: p.handle,
            len: p.dst.len as u32,
            next: NONE,
            stream: p.stream,
            buf: p.dst.buf,
            action: p.action,
        };
        let i = match self.free_early.pop() {
            Some(i) => {
                self.early[i as usize] = e;
                i
            }
            None => slab_push(&mut self.early, e),
        };
        debug_assert!(i < EARLY, "2^31 receives posted early at once");
        self.put_indexed(r, i | EARLY, bucket_of(src, tag));
    }

    /// Entry `e` (a slot, or an [`Early`] record) of bucket key `key` ([`bucket_of`] its
    /// source and tag) waits to be matched at rank `r`, which is, or is about to be,
    /// indexed (out of line, as [`Engine::take_indexed`]).
    #[inline(never)]
    fn put_indexed(&mut self, r: Rank, e: u32, key: usize) {
        let st = &mut self.ranks[r as usize];
        st.unmatched_len += 1;
        let msgs = &self.msgs;
        let mut ch = Chains { links: &mut self.links, early: &mut self.early };
        let key_of = |ch: &Chains, at: u32| {
            if at & EARLY != 0 {
                let e = &ch.early[(at & !EARLY) as usize];
                bucket_of(e.src, e.tag)
            } else {
                bucket_of(msgs[at as usize].src, msgs[at as usize].tag)
            }
        };
        if st.table == NONE {
            // Too many to walk: move the list (slots only) into a table, in order.
            let buckets = TABLE_FROM;
            st.table = match self.free_tables.pop() {
                Some(t) => t,
                None => slab_push(&mut self.tables, Vec::new()),
            };
            let table = &mut self.tables[st.table as usize];
            table.clear();
            table.resize(buckets, List::EMPTY);
            let mut list = std::mem::replace(&mut st.unmatched, List::EMPTY);
            while let Some(at) = list.pop_front(ch.links, Link::Unmatched) {
                let b = bucket_of(msgs[at as usize].src, msgs[at as usize].tag) & (buckets - 1);
                ch.push_back(&mut table[b], at);
            }
        } else {
            let table = &mut self.tables[st.table as usize];
            if st.unmatched_len as usize > table.len() && table.len() < MAX_BUCKETS {
                // Twice the buckets: bucket b's chain splits into b and b + len by the
                // next bit of its key, each part in the order it was.
                let half = table.len();
                table.resize(2 * half, List::EMPTY);
                for b in 0..half {
                    let mut chain = std::mem::replace(&mut table[b], List::EMPTY);
                    while let Some(at) = ch.pop_front(&mut chain) {
                        let to = key_of(&ch, at) & (2 * half - 1);
                        ch.push_back(&mut table[to], at);
                    }
                }
            }
        }
        let table = &mut self.tables[st.table as usize];
        let b = key & (table.len() - 1);
        ch.push_back(&mut table[b], e);
    }

    /// What waits to be matched at rank `r`, each as it is or would be in a slot: in
    /// the order it came while the rank keeps a list, and once indexed in a fixed order
    /// (messages by issue, then receives by stream and handle), for describing a
    /// deadlock.
    fn unmatched_at(&self, r: Rank) -> Vec<Msg> {
        let st = &self.ranks[r as usize];
        if st.table == NONE {
            return st.unmatched.iter(&self.links, Link::Unmatched).map(|id| self.msgs[id as usize]).collect();
        }
        let table = &self.tables[st.table as usize];
        let ch = |at: u32| {
            if at & EARLY != 0 { self.early[(at & !EARLY) as usize].next } else { self.links[at as usize].next[2] }
        };
        let mut all = Vec::new();
        for chain in table {
            let mut at = chain.head;
            while at != NONE {
                all.push(if at & EARLY != 0 { self.early_msg(r, at & !EARLY) } else { self.msgs[at as usize] });
                at = if at == chain.tail { NONE } else { ch(at) };
            }
        }
        all.sort_by_key(|m| (m.recv_handle != NONE, priority(m), m.recv_stream, m.recv_handle));
        all
    }

    /// A free slot of the message slab, emptied.
    // `always`: a call per message otherwise.
    #[inline(always)]
    fn new_slot(&mut self) -> u32 {
        match self.free_msgs.pop() {
            Some(id) => {
                // Its links are written when it joins a list, and read only there.
                self.msgs[id as usize] = Msg::EMPTY;
                id
            }
            None => {
                // The two slabs grow together, so `links` keeps the same indices.
                slab_push(&mut self.links, Links::EMPTY);
                slab_push(&mut self.msgs, Msg::EMPTY)
            }
        }
    }

    /// Rank `r`'s receive of `want` elements from `from` met a message of `got`.
    fn mismatch(&self, r: Rank, from: Rank, tag: u32, want: usize, got: usize) -> SimError {
        self.bad(r, format!("receive of {want} elements from rank {from} (tag {tag}) matched a message of {got}"))
    }

    /// A delivered, bound message: copy it in, or queue its reduction.
    fn consume(&mut self, id: u32) -> Result<(), SimError> {
        let m = &self.msgs[id as usize];
        let (dst, stream, handle) = (m.dst, m.recv_stream, m.recv_handle);
        match m.action {
            Action::Copy => {
                if let Some(d) = self.data.as_deref_mut() {
                    d.store(dst as usize, m.recv_region(), self.snaps.of(id));
                    self.snaps.landed(id, dst as usize);
                }
                self.release(id);
                self.complete_handle(dst, stream, handle)
            }
            Action::Reduce => {
                self.enqueue_compute(dst, Job::Msg(id));
                Ok(())
            }
        }
    }

    fn hold(&mut self, r: Rank, bytes: u64) {
        let st = &mut self.ranks[r as usize];
        st.held_bytes += bytes;
        if st.held_bytes > self.stats.peak_buffer_bytes {
            self.stats.peak_buffer_bytes = st.held_bytes;
        }
    }

    /// One more message issued and not yet consumed.
    #[inline]
    fn count_in_flight(&mut self) {
        self.in_flight += 1;
        self.stats.peak_in_flight = self.stats.peak_in_flight.max(self.in_flight);
    }

    /// Free message `id`'s slot; its receiver's buffer goes back too if it held one.
    fn release(&mut self, id: u32) {
        self.in_flight -= 1;
        let m = &self.msgs[id as usize];
        if m.held {
            self.ranks[m.dst as usize].held_bytes -= (m.len * self.cfg.elem_bytes) as u64;
        }
        self.free_msgs.push(id);
    }

    fn enqueue_compute(&mut self, r: Rank, job: Job) {
        let slot = JobSlot { job, next: NONE };
        let id = match self.free_jobs.pop() {
            Some(id) => {
                self.jobs[id as usize] = slot;
                id
            }
            None => slab_push(&mut self.jobs, slot),
        };
        let st = &mut self.ranks[r as usize];
        match std::mem::replace(&mut st.jobs_tail, id) {
            // The compute unit was idle: this job starts now.
            NONE => {
                st.jobs_head = id;
                self.start_compute(r);
            }
            tail => self.jobs[tail as usize].next = id,
        }
    }

    /// Take the first job off rank `r`'s compute queue (the one that was running).
    fn pop_job(&mut self, r: Rank) -> Job {
        let st = &mut self.ranks[r as usize];
        let id = st.jobs_head;
        let slot = self.jobs[id as usize];
        st.jobs_head = slot.next;
        if slot.next == NONE {
            st.jobs_tail = NONE;
        }
        self.free_jobs.push(id);
        slot.job
    }

    fn start_compute(&mut self, r: Rank) {
        let head = self.ranks[r as usize].jobs_head;
        if head == NONE {
            return;
        }
        let job = self.jobs[head as usize].job;
        let len = match job {
            Job::Msg(id) => self.msgs[id as usize].len,
            Job::Local(slot) => self.locals[slot as usize].dst.len,
            Job::Sent(id) => return self.start_overhead(r, self.net.send_overhead(self.wire(id))),
            Job::Arrived(id) => return self.start_overhead(r, self.net.recv_overhead(self.wire(id))),
        };
        let bytes = (len * self.cfg.elem_bytes) as u64;
        let work = bytes as f64 * self.cfg.cost_per_byte;
        let end = match self.noise {
            None => self.now + work,
            Some(n) => n.compute_end(r, self.now, work),
        };
        self.obs.compute(r, bytes, self.now, end);
        self.schedule(end, EvKind::ComputeDone(r));
    }

    /// A message's overhead of `work` seconds starts on rank `r`'s compute unit (no
    /// reduction: the observers do not see it).
    #[inline(never)]
    fn start_overhead(&mut self, r: Rank, work: f64) {
        let end = match self.noise {
            None => self.now + work,
            Some(n) => n.compute_end(r, self.now, work),
        };
        self.schedule(end, EvKind::ComputeDone(r));
    }

    fn handle(&mut self, ev: EvKind) -> Result<(), SimError> {
        match ev {
            EvKind::Net(id, what) => {
                self.net.event(id, what, self.now, &mut Sched { events: &mut self.events });
                Ok(())
            }
            EvKind::MsgDone(id, _) => {
                self.net.delivered(id, self.now);
                if !N::END_AT_START {
                    let info = self.info(id);
                    self.obs.message_end(&info, self.now);
                }
                if N::HOLDS_PORTS {
                    let m = &self.msgs[id as usize];
                    self.free_ports(m.src_if, m.dst_if);
                }
                if N::HOST && self.net.recv_overhead(self.wire(id)) > 0.0 {
                    let dst = self.msgs[id as usize].dst;
                    self.enqueue_compute(dst, Job::Arrived(id));
                    return Ok(());
                }
                self.arrive(id)
            }
            EvKind::ComputeDone(r) => {
                let job = self.pop_job(r);
                let (stream, handle) = match job {
                    Job::Msg(id) => {
                        let m = &self.msgs[id as usize];
                        let (region, stream, handle) = (m.recv_region(), m.recv_stream, m.recv_handle);
                        if let Some(d) = self.data.as_deref_mut() {
                            d.reduce_into(r as usize, region, self.snaps.of(id));
                            self.snaps.landed(id, r as usize);
                        }
                        self.release(id);
                        (stream, handle)
                    }
                    Job::Local(slot) => {
                        let Local { stream, handle, src, dst } = self.locals[slot as usize];
                        self.free_locals.push(slot);
                        if let Some(d) = self.data.as_deref_mut() {
                            d.reduce_local(r as usize, src, dst);
                            self.snaps.written(r as usize);
                        }
                        (stream, handle)
                    }
                    Job::Sent(id) => {
                        self.start_compute(r);
                        self.gate(id);
                        return Ok(());
                    }
                    Job::Arrived(id) => {
                        self.start_compute(r);
                        return self.arrive(id);
                    }
                };
                self.stats.reductions += 1;
                self.start_compute(r);
                self.complete_handle(r, stream, handle)
            }
            EvKind::Wake(r) => {
                for s in 0..self.ranks[r as usize].streams.len() {
                    self.advance(r, s as u16)?;
                }
                Ok(())
            }
            EvKind::Issue(id) => {
                self.issued(id);
                Ok(())
            }
            EvKind::Ports(src_if, dst_if) => {
                self.free_ports(src_if, dst_if);
                Ok(())
            }
        }
    }

    /// A port out of `src_if` and one into `dst_if` are free.
    // `always`: see [`Engine::link_ports`].
    #[inline(always)]
    fn free_ports(&mut self, src_if: u32, dst_if: u32) {
        self.ifaces[src_if as usize].free_out += 1;
        if self.ifaces[src_if as usize].free_out == 1 {
            self.free_senders += 1;
        }
        self.ifaces[dst_if as usize].free_in += 1;
        if self.pairs.is_some() {
            self.pairs_freed(src_if, dst_if);
        }
        self.mark_dirty(src_if);
        self.mark_dirty(dst_if);
    }

    /// Message `id` is delivered: its receive may have it, its sender counts it landed.
    #[inline]
    fn arrive(&mut self, id: u32) -> Result<(), SimError> {
        let m = &mut self.msgs[id as usize];
        m.delivered = true;
        let (src, dst, bound, stream) = (m.src, m.dst, m.recv_handle != NONE, m.stream);
        let bytes = (m.len * self.cfg.elem_bytes) as u64;
        self.finish(src);
        self.finish(dst);
        // A received message holds memory until it is consumed, unless it lands
        // straight in the place a posted copy-receive names.
        let in_place = bound && self.msgs[id as usize].action == Action::Copy;
        if !in_place {
            self.msgs[id as usize].held = true;
            self.hold(dst, bytes);
        }
        if bound {
            self.consume(id)?;
        }
        let st = &mut self.ranks[src as usize].streams[stream as usize];
        st.sends_in_flight -= 1;
        match st.block {
            Block::WaitSends(n) if st.sends_in_flight <= n => self.advance(src, stream),
            _ => Ok(()),
        }
    }

    /// Hand free ports to waiting messages, greedily in priority order.
    ///
    /// Only a message whose sender or receiver changed since the last pass (a port
    /// freed, a message issued) can have become startable, so only those are looked at;
    /// the result is the same as one greedy pass over every waiting message. A dirty
    /// sender offers its out-list, a dirty receiver its in-list less what dirty senders
    /// offer, so each message is offered at most once; the lists are in priority order,
    /// so they are merged lazily, a list's next message entering when its previous one
    /// is decided. A list leaves once its own interface is full: ports only fill during
    /// a pass, so nothing later in it could start. When every port frees at one instant
    /// this looks at about one message a port, where sorting every waiting message cost
    /// P^2 log P a pass.
    ///
    /// The merge is a sorted vector of each list's first offer plus a heap of the offers
    /// made during the pass, popped from whichever is first. Under one port an interface
    /// (the common case) a list that started its first offer is full and offers nothing
    /// more, so the heap stays empty; and the first offers come nearly sorted (interfaces
    /// turn dirty in the order of the events that woke them), so the vector costs a
    /// linear pass where a heap of P cursors cost P log P: 17 to 26% of a ring's time.
    fn match_ports(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        if self.pairs.is_some() {
            self.pass::<true>();
        } else {
            self.pass::<false>();
            if wants_pairs(self.looks, self.stats.messages) {
                self.build_pairs();
            }
        }
    }

    /// [`Engine::match_ports`]'s pass, with the [`Pairs`] index or without (a ring's,
    /// made as it was before there was an index).
    #[inline(always)]
    fn pass<const INDEXED: bool>(&mut self) {
        let mut first = std::mem::take(&mut self.first_offers);
        let mut later = std::mem::take(&mut self.later_offers);
        first.clear();
        later.clear();
        // An in-list offers only what a clean sender with a free port sends; when every
        // sender with a free port changed (all ports freed at one instant), walking the
        // in-lists would find nothing.
        let dirty_senders = self.dirty.iter().filter(|&&i| self.ifaces[i as usize].free_out > 0).count();
        let clean_senders = self.free_senders > dirty_senders;
        if INDEXED {
            self.dirty_bits(true);
        }
        for k in 0..self.dirty.len() {
            let i = self.dirty[k];
            let st = &self.ifaces[i as usize];
            let (free_out, free_in) = (st.free_out, st.free_in);
            if free_out > 0 {
                let head = st.lists[Link::Out as usize].head;
                first.extend(self.offer_out::<INDEXED>(head, i));
            }
            if free_in > 0 && clean_senders {
                let head = self.ifaces[i as usize].lists[Link::In as usize].head;
                first.extend(self.offer_in::<INDEXED>(head, i));
            }
        }
        sort_nearly_sorted(&mut first);
        let mut k = 0;
        loop {
            let take_first = match (first.get(k), later.peek()) {
                (Some(a), Some(std::cmp::Reverse(b))) => a < b,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (_, _, id, side) = if take_first {
                k += 1;
                first[k - 1]
            } else {
                later.pop().map(|std::cmp::Reverse(c)| c).expect("peeked")
            };
            let l = if side == 0 { Link::Out } else { Link::In };
            let (src, dst) = (self.msgs[id as usize].src_if, self.msgs[id as usize].dst_if);
            if self.ifaces[src as usize].free_out > 0 && self.ifaces[dst as usize].free_in > 0 {
                self.start_message(id);
            } else if !INDEXED {
                self.looks += 1;
            }
            // A started message left its lists but keeps its link, which still names the
            // message after it: nothing else was removed since.
            let own =
                if l == Link::Out { self.ifaces[src as usize].free_out } else { self.ifaces[dst as usize].free_in };
            if own > 0 {
                let next = self.links[id as usize].next[l as usize];
                let c = if l == Link::Out {
                    self.offer_out::<INDEXED>(next, src)
                } else {
                    self.offer_in::<INDEXED>(next, dst)
                };
                if let Some(c) = c {
                    later.push(std::cmp::Reverse(c));
                }
            }
        }
        if INDEXED {
            self.dirty_bits(false);
        }
        for &i in &self.dirty {
            self.ifaces[i as usize].dirty = false;
        }
        self.dirty.clear();
        self.first_offers = first;
        self.later_offers = later;
    }

    /// The pass's dirty interfaces into [`Bits::dirty`] (`set`) or out of it. Nothing
    /// marks an interface dirty during a pass (a deferred send it puts in line is not
    /// marked, [`Engine::materialize`]), so the bits stay what the flags say.
    #[inline(never)]
    fn dirty_bits(&mut self, set: bool) {
        let Some(b) = self.pairs.as_deref_mut().and_then(|p| p.bits.as_mut()) else {
            return;
        };
        for &i in &self.dirty {
            if set {
                Bits::set(&mut b.dirty, i as usize);
            } else {
                Bits::clear(&mut b.dirty, i as usize);
            }
        }
    }

    /// Message `at` as a [`Cursor`] of list `l` (`None` for `NONE`).
    #[inline]
    fn cursor(&self, at: u32, l: Link) -> Option<Cursor> {
        (at != NONE).then(|| {
            let (a, b) = priority(&self.msgs[at as usize]);
            (a, b, at, l as u8)
        })
    }

    /// The first message from `at` on in sender `s`'s out-list that the pass may start,
    /// as a [`Cursor`]; at the end of its line, its next deferred send
    /// ([`Engine::defer`]) is next in line. Without the [`Pairs`] index every message is
    /// offered (the merge finds out whether its receiver has a port).
    #[inline]
    fn offer_out<const INDEXED: bool>(&mut self, mut at: u32, s: u32) -> Option<Cursor> {
        if INDEXED {
            return self.offer_out_indexed(at, s);
        }
        if at == NONE && self.deferring != 0 && self.ranks[s as usize].deferred != NONE {
            at = self.materialize(s, false);
        }
        self.cursor(at, Link::Out)
    }

    /// [`Engine::offer_out`] with the [`Pairs`] index: messages to a receiver with no
    /// free in-port are passed over (ports only fill during a pass, so the merge would
    /// not start them either), for a few more steps than there are receivers with a free
    /// port; then the first of the sender's messages to those receivers is looked up
    /// instead, and when there is none, the deferred sends go in line, in order, up to
    /// the first to such a receiver, as the walk would have put them.
    #[inline(never)]
    fn offer_out_indexed(&mut self, mut at: u32, s: u32) -> Option<Cursor> {
        let pairs = self.pairs.as_deref().expect("built");
        // With the bits a look-up reads a few words and hashes once or a few times
        // (once, for a cyclic out-list: looked up at once, where a step of the walk reads
        // two slots, a cache miss each, and most walks found no free receiver in their
        // steps); without, it hashes once a free receiver.
        let budget = match pairs.bits.as_ref() {
            Some(b) if b.cyclic[s as usize] => 0,
            Some(_) => WALK_SLACK,
            None => {
                let own = pairs.sparse.as_ref().map_or(usize::MAX, |sp| sp.len[Sparse::TO][s as usize] as usize);
                pairs.receivers.members.len().min(own) + WALK_SLACK
            }
        };
        let (mut steps, mut looked) = (0, false);
        loop {
            if at == NONE {
                if self.deferring != 0 && self.ranks[s as usize].deferred != NONE {
                    at = self.materialize(s, false);
                } else {
                    return None;
                }
            } else if steps == budget && !looked {
                looked = true;
                match self.first_to_free(s) {
                    Some(p) => return Some(self.offered(p, Link::Out)),
                    None => {
                        at = NONE;
                        continue;
                    }
                }
            }
            if self.ifaces[self.msgs[at as usize].dst_if as usize].free_in > 0 {
                return self.cursor(at, Link::Out);
            }
            steps += 1;
            at = self.links[at as usize].next[Link::Out as usize];
        }
    }

    /// A pair's first message found by the [`Pairs`] index for list `l`'s offer, as a
    /// [`Cursor`]: its priority is the pair's, so its slot, a cache miss, is not read
    /// here but asked for ([`prefetch`]), to be in when the pass's merge reads it.
    #[inline]
    fn offered(&self, p: Pair, l: Link) -> Cursor {
        prefetch(&self.msgs[p.head as usize]);
        prefetch(&self.links[p.head as usize]);
        // Its successor in the pair's chain, which taking it out of the chain reads
        // ([`Engine::pair_remove`]): most of [`Engine::pairs_started`]'s time was that miss.
        if let Some(next) = self.pairs.as_deref().and_then(|x| x.next.get(p.head as usize)) {
            prefetch(next);
        }
        (p.first.0, p.first.1, p.head, l as u8)
    }

    /// Sender `s`'s first waiting message to a receiver with a free in-port (`None`:
    /// none), by the [`Pairs`] index, while the pass's walk of its out-list stands on a
    /// message before which every message has a busy receiver (ports only fill during a
    /// pass, so what the walk passed stays passed).
    ///
    /// With [`Bits`], the receivers `s` has a message to and that have a free port are
    /// the words' intersection; a cyclic out-list's first is the first of them from the
    /// first receiver of [`Bits::ends`] on, wrapping (the walk's place need not be read:
    /// the messages before it are to busy receivers, so not in the intersection);
    /// otherwise each is looked up. Without, every free receiver is.
    fn first_to_free(&self, s: u32) -> Option<Pair> {
        let pairs = self.pairs.as_deref().expect("built");
        let lead = pairs.bits.as_ref().map_or(Lead::NONE, |b| b.lead[s as usize]);
        let head = |d: u32| pairs.get_led(&self.msgs, s, d, lead);
        #[cfg(test)]
        let way = match pairs.bits.as_ref() {
            Some(b) if b.cyclic[s as usize] => 0,
            Some(_) if pairs.dense.as_ref().is_some_and(|t| t.by_sequence(s)) => 1,
            Some(_) => 2,
            None => 3,
        };
        #[cfg(test)]
        tests::LOOKUPS.with(|c| {
            c.set({
                let mut v = c.get();
                v[way] += 1;
                v
            })
        });
        let Some(b) = pairs.bits.as_ref() else {
            let free = pairs.receivers.members.len();
            return self.sparse_first(Sparse::TO, s, free).unwrap_or_else(|| {
                #[cfg(test)]
                tests::SCANNED.with(|c| c.set(c.get() + free as u64));
                first_of(pairs.receivers.members.iter().filter_map(|&d| head(d)))
            });
        };
        let row = &b.to[s as usize * b.words..][..b.words];
        let both = |w: usize| row[w] & b.free_in[w];
        if b.cyclic[s as usize] {
            let from = b.ends[s as usize].0 as usize;
            let (w0, bit) = (from / 64, from % 64);
            // From `from` to the end, then from 0 to `from`'s word (its bits before
            // `from` last).
            let first = both(w0) >> bit << bit;
            let rest = (w0 + 1..b.words).chain(0..=w0);
            let found = std::iter::once((w0, first)).chain(rest.map(|w| (w, both(w)))).find(|&(_, x)| x != 0);
            return found
                .map(|(w, x)| head((w * 64) as u32 + x.trailing_zeros()).expect("a pair with its bit set waits"));
        }
        if let Some(t) = pairs.dense.as_ref().filter(|t| t.by_sequence(s)) {
            // The candidates' sequence numbers lie side by side in the sender's row;
            // only the first one's slot is read, and not even that where they share a
            // lead.
            let row = &t.heads[t.at(s, 0)..][..t.n];
            return set_bits(b.words, both)
                .min_by_key(|&d| row[d as usize].seq)
                .map(|d| head(d).expect("a pair with its bit set waits"));
        }
        first_of(set_bits(b.words, both).filter_map(head))
    }

    /// The first message from `at` on in receiver `d`'s in-list that the pass may start
    /// (one a clean sender with a free port offers: a dirty sender offers its own), as
    /// a [`Cursor`]. With the [`Pairs`] index there are no in-lists: the first messages
    /// to `d` of the senders with a free port are looked up instead.
    #[inline]
    fn offer_in<const INDEXED: bool>(&mut self, mut at: u32, d: u32) -> Option<Cursor> {
        if INDEXED {
            return self.first_from_free(d).map(|p| self.offered(p, Link::In));
        }
        let mut steps = 0;
        while at != NONE {
            let m = &self.msgs[at as usize];
            let sender = &self.ifaces[m.src_if as usize];
            if sender.free_out > 0 && !sender.dirty {
                break;
            }
            steps += 1;
            at = self.links[at as usize].next[Link::In as usize];
        }
        self.looks += steps;
        self.cursor(at, Link::In)
    }

    /// The pair of the first waiting message to receiver `d` from a clean sender with a
    /// free out-port (`None`: none), by the [`Pairs`] index.
    ///
    /// It is the one the walk of `d`'s in-list would find: a sender free now was free
    /// all pass (ports only fill), so its messages to `d` ahead of the walk's place were
    /// offered and started, and its first one left is after that place.
    ///
    /// With [`Bits`], a sender whose waiting messages share their issue time and rank
    /// ([`Lead`]) is compared by those, without looking its pair up; the pairs are
    /// looked up only where that does not decide (a sender whose messages do not share
    /// them, two senders of one rank), and the one found first.
    fn first_from_free(&self, d: u32) -> Option<Pair> {
        let pairs = self.pairs.as_deref().expect("built");
        let head = |s: u32| {
            if self.ifaces[s as usize].dirty {
                return None;
            }
            pairs.get(&self.msgs, s, d)
        };
        let Some(b) = pairs.bits.as_ref() else {
            let free = pairs.senders.members.len();
            return self.sparse_first(Sparse::FROM, d, free).unwrap_or_else(|| {
                #[cfg(test)]
                tests::SCANNED.with(|c| c.set(c.get() + free as u64));
                first_of(pairs.senders.members.iter().filter_map(|&s| head(s)))
            });
        };
        let row = &b.from[d as usize * b.words..][..b.words];
        let pair = |s: u32| pairs.get_led(&self.msgs, s, d, b.lead[s as usize]).expect("a pair with its bit set waits");
        // The best so far: its (issue time, rank), its sender, its pair once looked up.
        let mut best: Option<((u64, Rank), u32, Option<Pair>)> = None;
        #[cfg(test)]
        tests::DROPPED.with(|c| {
            let dropped = (0..b.words).map(|w| (row[w] & b.free_out[w] & b.dirty[w]).count_ones());
            c.set(c.get() + dropped.sum::<u32>() as u64)
        });
        for s in set_bits(b.words, |w| row[w] & b.free_out[w] & !b.dirty[w]) {
            #[cfg(test)]
            assert!(!self.ifaces[s as usize].dirty, "the pass's dirty interfaces are in the bits");
            let lead = b.lead[s as usize];
            let (known, looked) = if lead.kind == Lead::ONE {
                ((lead.issued, lead.src), None)
            } else {
                let p = pair(s);
                ((p.first.0, (p.first.1 >> 32) as Rank), Some(p))
            };
            best = match best {
                Some((k, bs, bp)) if known == k => {
                    // The sequence decides.
                    let (p, q) = (looked.unwrap_or_else(|| pair(s)), bp.unwrap_or_else(|| pair(bs)));
                    Some(if p.first < q.first { (known, s, Some(p)) } else { (k, bs, Some(q)) })
                }
                Some((k, ..)) if k < known => best,
                _ => Some((known, s, looked)),
            };
        }
        best.map(|(_, s, p)| p.unwrap_or_else(|| pair(s)))
    }

    /// Without [`Bits`], the look-up of [`Engine::first_to_free`] (`k`
    /// [`Sparse::TO`], `i` the sender) or [`Engine::first_from_free`] ([`Sparse::FROM`],
    /// the receiver) through `i`'s own pairs, where they are fewer than the `free`
    /// interfaces with a free port at the other end (`None` where they are not: those
    /// are gone through instead). A pair may start where its other end has a free port
    /// and, as a sender, is clean (a dirty sender offers its own).
    #[inline]
    fn sparse_first(&self, k: usize, i: u32, free: usize) -> Option<Option<Pair>> {
        let sp = self.pairs.as_deref().and_then(|p| p.sparse.as_ref()).expect("kept without bits");
        let own = sp.len[k][i as usize] as usize;
        #[cfg(test)]
        tests::FREE.with(|c| c.set(c.get() + free as u64));
        if own >= free {
            return None;
        }
        #[cfg(test)]
        tests::SCANNED.with(|c| c.set(c.get() + own as u64));
        let may_start = |o: u32| {
            let st = &self.ifaces[o as usize];
            if k == Sparse::TO { st.free_in > 0 } else { st.free_out > 0 && !st.dirty }
        };
        let found = sp.pairs(k, i).filter(|&(o, _)| may_start(o));
        Some(first_of(found.map(|(_, id)| Pair { head: id, tail: NONE, first: priority(&self.msgs[id as usize]) })))
    }

    /// Message `id` as an [`Observer`] sees it.
    fn info(&self, id: u32) -> MessageInfo {
        let m = &self.msgs[id as usize];
        let bytes = (m.len * self.cfg.elem_bytes) as u64;
        MessageInfo { id, src: m.src, dst: m.dst, tag: m.tag, bytes, issued: m.issued }
    }

    // `always`: both passes ([`Engine::pass`]) call it, which left it out of line in a
    // ring's hot path.
    #[inline(always)]
    fn start_message(&mut self, id: u32) {
        let m = &self.msgs[id as usize];
        let (src, dst) = (m.src as usize, m.dst as usize);
        let (src_if, dst_if) = (m.src_if as usize, m.dst_if as usize);
        let (stream, issued) = (m.stream, m.issued);
        let info = self.info(id);
        self.ifaces[src_if].free_out -= 1;
        if self.ifaces[src_if].free_out == 0 {
            self.free_senders -= 1;
        }
        self.ifaces[dst_if].free_in -= 1;
        self.ifaces[src_if].lists[Link::Out as usize].unlink(&mut self.links, Link::Out, id);
        if self.pairs.is_none() {
            self.ifaces[dst_if].lists[Link::In as usize].unlink(&mut self.links, Link::In, id);
        } else {
            self.pairs_started(id);
        }
        // On the wire a message carries its envelope too.
        let wire = info.bytes + self.cfg.envelope;
        let mut link = self.topo.link(src, dst);
        if let Some(n) = self.noise {
            link = n.link(src as Rank, dst as Rank, link);
        }
        let ports = (src_if as u32, dst_if as u32);
        let start = Start { id, src: src as Rank, dst: dst as Rank, stream, issued, wire, link, now: self.now, ports };
        let end = self.net.start(&start, &mut Sched { events: &mut self.events });
        self.obs.message(&info, self.now, end);
    }

    fn check_finished(&self) -> Result<(), SimError> {
        let mut waiting = Vec::new();
        for (r, st) in self.ranks.iter().enumerate() {
            let waiting_here = self.unmatched_at(r as Rank);
            let unmatched = waiting_here.iter();
            if let Some(m) = unmatched.clone().find(|m| m.recv_handle == NONE) {
                waiting.push(format!("rank {r} never received a message from rank {} (tag {})", m.src, m.tag));
                continue;
            }
            for (si, s) in st.streams.iter().enumerate() {
                let h = match s.block {
                    Block::Done => continue,
                    Block::WaitSends(n) => {
                        let what =
                            format!("{} of its {} sends to be delivered", s.sends_in_flight - n, s.sends_in_flight);
                        waiting.push(format!("rank {r} (stream {si}) waits for {what}"));
                        continue;
                    }
                    Block::Wait(h) => h,
                    _ => s.outstanding.first().unwrap_or(NONE),
                };
                let what = match unmatched.clone().find(|m| m.recv_handle == h && m.recv_stream as usize == si) {
                    Some(m) => format!("a message from rank {} with tag {} that was never sent", m.src, m.tag),
                    None => format!("operation {h}"),
                };
                waiting.push(format!("rank {r} (stream {si}) waits for {what}"));
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        let more = waiting.len().saturating_sub(8);
        waiting.truncate(8);
        let mut detail = waiting.join("; ");
        if more > 0 {
            detail.push_str(&format!("; and {more} more"));
        }
        Err(SimError::Deadlock { time: self.now, detail })
    }
}

/// The pair whose first message is first in priority order of `pairs` (`None`: none).
#[inline]
fn first_of(pairs: impl Iterator<Item = Pair>) -> Option<Pair> {
    pairs.min_by_key(|p| p.first)
}

/// The bits set in the words `word(0)` to `word(words - 1)`, as interface numbers,
/// in order.
#[inline]
fn set_bits(words: usize, word: impl Fn(usize) -> u64) -> impl Iterator<Item = u32> {
    (0..words).flat_map(move |w| {
        let mut x = word(w);
        std::iter::from_fn(move || {
            (x != 0).then(|| {
                let i = x.trailing_zeros();
                x &= x - 1;
                (w * 64) as u32 + i
            })
        })
    })
}

/// A waiting message's place in line: (issue time, sender rank, sender's sequence),
/// packed into two integers whose order is that order (times are never negative). No two
/// messages share one: a sender numbers its messages.
fn priority(m: &Msg) -> (u64, u64) {
    ((m.issued + 0.0).to_bits(), u64::from(m.src) << 32 | u64::from(m.seq))
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};

    thread_local! {
        /// Whether this thread's engines build the [`super::Pairs`] index (`None`: by
        /// the rule, [`super::wants_pairs`]).
        pub(super) static PAIRS: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        /// [`super::BITS_MAX`] on this thread (`None`: as it is).
        pub(super) static BITS_MAX: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
        /// Whether this thread's indexes keep a [`super::Dense`] table where they have
        /// bits (`None`: by the rule, [`super::dense_from`]).
        pub(super) static DENSE: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
        /// How many of this thread's senders' look-ups ([`super::Engine::first_to_free`])
        /// took each way: a cyclic out-list's, the bits' intersection by the
        /// [`super::Dense`] table's sequence numbers, the same by the messages' slots,
        /// every free receiver.
        pub(super) static LOOKUPS: std::cell::Cell<[u64; 4]> = const { std::cell::Cell::new([0; 4]) };
        /// How many messages this thread's [`super::Dense`] tables filed behind another
        /// of their pair's.
        pub(super) static CHAINED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many times this thread's engines kept an out-list [`super::Bits::cyclic`]
        /// by moving its first receiver on ([`super::Engine::pair_linked`]).
        pub(super) static MOVED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many pairs this thread's look-ups priced from their sender's [`super::Lead`]
        /// and the [`super::Dense`] table's sequence, without their first message's slot.
        pub(super) static LED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many dirty senders with a free port and a message to the receiver this
        /// thread's receivers' look-ups ([`super::Engine::first_from_free`]) dropped by
        /// [`super::Bits::dirty`].
        pub(super) static DROPPED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many pairs or interfaces this thread's look-ups without [`super::Bits`]
        /// went through ([`super::Engine::sparse_first`]).
        pub(super) static SCANNED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many interfaces with a free port at the other end those look-ups had to
        /// choose from (what going through them all would have cost).
        pub(super) static FREE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// How many times this thread's engines built the index.
        pub(super) static BUILT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        /// The messages issued when this thread's engine last built the index.
        pub(super) static BUILT_AFTER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Every message as an observer sees it: sender, receiver, tag, bytes, issue, start
    /// and end times (as bits), in the order they started.
    #[derive(Default)]
    struct Messages(Vec<(u32, u32, u32, u64, u64, u64, u64)>);

    impl super::Observer for Messages {
        fn message(&mut self, m: &super::MessageInfo, start: f64, end: f64) {
            self.0.push((m.src, m.dst, m.tag, m.bytes, m.issued.to_bits(), start.to_bits(), end.to_bits()));
        }
    }

    /// The pair index finds exactly the messages the walks of the waiting lists find:
    /// `direct` and `naive` with blocks of two lengths (where ranks fall out of step and
    /// the walks grow long), on 1, 2 and 3 NICs, timing only and with data, run with the
    /// index from the first pass and without it, start the same messages at the same
    /// instants in the same order, with the same statistics and final vectors. The index
    /// runs three ways: its bits with a [`super::Dense`] table of heads, its bits with the
    /// map, neither.
    #[test]
    fn the_pair_index_starts_what_the_walks_start() {
        use crate::algos::{self, Machine, Params, Problem};
        use crate::sim::data::{ReduceOp, Vectors};
        use crate::topology::{FullyConnected, Link};
        let link = Link { alpha: 1e-6, bandwidth: 1e10 };
        let mut compared = 0;
        for id in ["direct", "naive", "ring"] {
            for (ranks, elems) in [(24, 1003), (33, 100_001), (40, 7), (17, 340)] {
                for nics in [1, 2, 3] {
                    for data in [false, true] {
                        let topo = FullyConnected { ranks, link, nics };
                        let algo = algos::build(id, Params::default()).unwrap();
                        let p = Problem { ranks, elems, elem_bytes: 4 };
                        let machine = Machine { topo: &topo, cost_per_byte: 0.0 };
                        if algo.applicable(&p, &machine).is_err() {
                            continue;
                        }
                        // The index without its bits (`bits: false`) as past `BITS_MAX`.
                        let run = |pairs: bool, bits: bool, dense: bool| {
                            PAIRS.with(|c| c.set(Some(pairs)));
                            BITS_MAX.with(|c| c.set((!bits).then_some(0)));
                            DENSE.with(|c| c.set(Some(dense)));
                            let inputs = data.then(|| {
                                let v: Vec<Vec<f32>> = (0..ranks)
                                    .map(|r| (0..elems).map(|i| ((r * 7 + i * 3) % 11) as f32).collect())
                                    .collect();
                                (Vectors::from(v), ReduceOp::Sum)
                            });
                            let mut seen = Messages::default();
                            let built = BUILT.with(|c| c.get());
                            let out = crate::sim::simulate(algo.as_ref(), &topo, p, 0.0, inputs, &mut seen).unwrap();
                            PAIRS.with(|c| c.set(None));
                            BITS_MAX.with(|c| c.set(None));
                            DENSE.with(|c| c.set(None));
                            // The index is built at the end of the first pass, or never.
                            assert_eq!(BUILT.with(|c| c.get()) - built, u32::from(pairs));
                            (out, seen.0)
                        };
                        let walked = run(false, false, false);
                        let what = format!("{id} P={ranks} n={elems} nics={nics} data={data}");
                        assert!(!walked.1.is_empty(), "{what}");
                        assert_eq!(walked.0.1.is_some(), data, "{what}");
                        for (bits, dense) in [(true, true), (true, false), (false, false)] {
                            let indexed = run(true, bits, dense);
                            let what = format!("{what} bits={bits} dense={dense}");
                            assert_eq!(walked.1, indexed.1, "{what}: messages");
                            assert_eq!(walked.0.0, indexed.0.0, "{what}: statistics");
                            assert!(walked.0.1 == indexed.0.1, "{what}: final vectors");
                        }
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared >= 40, "{compared} runs compared");
        // Each way of a sender's look-up was taken.
        let ways = LOOKUPS.with(|c| c.get());
        assert!(ways.iter().all(|&n| n > 0), "look-ups by way: {ways:?}");
        // The dense table's chains of several messages a pair were used.
        assert!(CHAINED.with(|c| c.get()) > 0, "no pair of the dense table held two messages");
        // Out-lists were kept cyclic by moving their first receiver on.
        assert!(MOVED.with(|c| c.get()) > 0, "no out-list's first receiver moved on");
    }

    /// The look-ups that read no slot for a pair's priority (its sender's [`super::Lead`]
    /// and the [`super::Dense`] table's sequence, [`super::Pairs::get_led`]) and drop the
    /// pass's dirty senders by [`super::Bits::dirty`] start what the walks start:
    /// `direct` and `naive` with blocks of two lengths on 1 and 2 NICs, with the index
    /// from the first pass against without it. Each priced pair is checked against its
    /// slot as it is looked up, and both paths must have been taken.
    #[test]
    fn look_ups_by_lead_and_dirty_bits_start_what_the_walks_start() {
        use crate::algos::{self, Machine, Params, Problem};
        use crate::topology::{FullyConnected, Link};
        let link = Link { alpha: 1e-6, bandwidth: 1e10 };
        let (led, dropped) = (LED.with(|c| c.get()), DROPPED.with(|c| c.get()));
        for id in ["direct", "naive"] {
            for (ranks, elems) in [(24, 1003), (40, 7), (64, 4108 / 4)] {
                for nics in [1, 2] {
                    let topo = FullyConnected { ranks, link, nics };
                    let algo = algos::build(id, Params::default()).unwrap();
                    let p = Problem { ranks, elems, elem_bytes: 4 };
                    let machine = Machine { topo: &topo, cost_per_byte: 5e-11 };
                    if algo.applicable(&p, &machine).is_err() {
                        continue;
                    }
                    let run = |pairs: bool| {
                        PAIRS.with(|c| c.set(Some(pairs)));
                        DENSE.with(|c| c.set(Some(pairs)));
                        let mut seen = Messages::default();
                        let out = crate::sim::simulate(algo.as_ref(), &topo, p, 5e-11, None, &mut seen).unwrap();
                        PAIRS.with(|c| c.set(None));
                        DENSE.with(|c| c.set(None));
                        (out.0, seen.0)
                    };
                    let (walked, indexed) = (run(false), run(true));
                    let what = format!("{id} P={ranks} n={elems} nics={nics}");
                    assert!(!walked.1.is_empty(), "{what}");
                    assert_eq!(walked.1, indexed.1, "{what}: messages");
                    assert_eq!(walked.0, indexed.0, "{what}: statistics");
                }
            }
        }
        assert!(LED.with(|c| c.get()) > led, "no pair was priced by its sender's lead");
        assert!(DROPPED.with(|c| c.get()) > dropped, "no dirty sender was dropped by the bits");
    }

    /// Without [`super::Bits`] (past [`super::BITS_MAX`] interfaces) a look-up goes
    /// through its interface's own pairs where they are fewer than the interfaces with a
    /// free port: bcube on GPU clusters, whose GPUs' own interfaces are nearly all free
    /// while a few messages wait for each NIC, run with the index from the first pass and
    /// no bits against without the index. They start the same messages, and the look-ups
    /// go through a few pairs a message: going through every interface with a free port,
    /// they went through hundreds (4,096 GPUs on 1,024 NICs spent three quarters of a run
    /// there).
    #[test]
    fn look_ups_without_bits_go_through_own_pairs() {
        use crate::algos::{self, Params, Problem};
        use crate::units::ParamValue;
        let (mut messages, mut scanned, mut free) = (0, 0, 0);
        for (nodes, nics, fabric, base, elems) in [
            (64, 2, "{ kind: fat_tree, hosts_per_leaf: 4, spines: 2 }", 8, 1_000_001),
            (32, 1, "{ kind: rail_optimized }", 4, 513),
        ] {
            let ranks = nodes * 8;
            let text = format!(
                "ranks: {ranks}\ntopology: {{ kind: cluster, nodes: {nodes}, gpus_per_node: 8, \
                 intra: {{ kind: nvswitch, alpha: 3.4us, bandwidth: 450GB/s }}, nics_per_node: {nics}, \
                 inter: {{ alpha: 14us, bandwidth: 400Gbps }}, fabric: {fabric} }}\n\
                 algorithms: [ring]\nsizes: [4]\n"
            );
            let sc = crate::scenario::parse_str(&text, "cluster.yaml").unwrap();
            let topo = crate::topology::build(&sc.topology, ranks).unwrap();
            let algo = algos::build("bcube", Params::new(vec![("base".into(), ParamValue::Int(base))])).unwrap();
            let p = Problem { ranks, elems, elem_bytes: 4 };
            let run = |pairs: bool| {
                PAIRS.with(|c| c.set(Some(pairs)));
                BITS_MAX.with(|c| c.set(Some(0)));
                let before = (SCANNED.with(|c| c.get()), FREE.with(|c| c.get()));
                let mut seen = Messages::default();
                let out = crate::sim::simulate(algo.as_ref(), &*topo, p, 5e-11, None, &mut seen).unwrap();
                PAIRS.with(|c| c.set(None));
                BITS_MAX.with(|c| c.set(None));
                let counts = (SCANNED.with(|c| c.get()) - before.0, FREE.with(|c| c.get()) - before.1);
                (out.0, seen.0, counts)
            };
            let (walked, indexed) = (run(false), run(true));
            let what = format!("{nodes} nodes x 8, {nics} NICs, base {base}");
            assert_eq!(walked.1, indexed.1, "{what}: messages");
            assert_eq!(walked.0, indexed.0, "{what}: statistics");
            messages += indexed.0.messages;
            scanned += indexed.2.0;
            free += indexed.2.1;
        }
        let counts = format!("{scanned} pairs or interfaces gone through, of {free}, for {messages} messages");
        // The runs are ones where going through every free interface costs hundreds a
        // message, and the look-ups now cost a few.
        assert!(free > 100 * messages, "{counts}");
        assert!(scanned < 16 * messages, "{counts}");
    }

    /// Walking back from a receiver's in-list tail counts toward building the pair
    /// index: `direct` with blocks of two lengths, 16 to 20 bytes, puts each deferred
    /// send in line behind the messages other ranks issued to its receiver since, and
    /// walked back past them all (178 M steps at 1,024 ranks, two thirds of the run)
    /// while the passes' own walks were too few to build the index before nearly every
    /// message was issued (2,092,035 of 2,095,104). Now it is built within the first step.
    #[test]
    fn walks_back_along_in_lists_build_the_index() {
        use crate::algos::{self, Machine, Params, Problem};
        use crate::topology::{FullyConnected, Link};
        let ranks = 512;
        let topo = FullyConnected { ranks, link: Link { alpha: 1e-6, bandwidth: 1e10 }, nics: 1 };
        let algo = algos::build("direct", Params::default()).unwrap();
        let p = Problem { ranks, elems: 4 * ranks + 3, elem_bytes: 4 };
        let machine = Machine { topo: &topo, cost_per_byte: 0.0 };
        assert!(algo.applicable(&p, &machine).is_ok());
        let built = BUILT.with(|c| c.get());
        let out = crate::sim::simulate(algo.as_ref(), &topo, p, 0.0, None, &mut super::NoObserver).unwrap();
        assert_eq!(BUILT.with(|c| c.get()) - built, 1, "the index was not built");
        let (after, all) = (BUILT_AFTER.with(|c| c.get()), out.0.messages);
        // The first step's sends, P(P - 1) of 2P(P - 1), are issued at once.
        assert!(after * 4 < all * 3, "built after {after} of {all} messages were issued");
    }

    /// The window of outstanding handles against a plain set, with handles completed in
    /// random order and more than a window outstanding at once (so that handles go to the
    /// spill and come back), on two streams each with its spill. (With its spill empty a
    /// stream's `_with` methods are the plain ones the engine calls then.)
    #[test]
    fn outstanding_window_is_a_set() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for round in 0..300 {
            let mut spills: [super::Spill; 2] = Default::default();
            let mut streams = [super::Outstanding::NEW; 2];
            let mut want: [std::collections::BTreeSet<u32>; 2] = Default::default();
            let spread = 1 + round % 90;
            for _ in 0..3000 {
                let r = rng.next_u32();
                let s = (r & 1) as usize;
                if r % 5 < 2 || want[s].is_empty() {
                    if want[s].len() < spread as usize {
                        want[s].insert(streams[s].issue_with(&mut spills[s]));
                    }
                } else {
                    // Mostly the oldest, sometimes any.
                    let all: Vec<u32> = want[s].iter().copied().collect();
                    let h = if r % 3 == 0 { all[(r >> 8) as usize % all.len()] } else { all[0] };
                    want[s].remove(&h);
                    streams[s].complete_with(h, &mut spills[s]);
                }
                for s in 0..2 {
                    assert_eq!(streams[s].is_empty(), want[s].is_empty(), "round {round}");
                    assert_eq!(streams[s].first(), want[s].first().copied(), "round {round}");
                    assert!(spills[s].blocks.len() <= 2 * want[s].len() + 1, "round {round}: spill too long");
                    let next = streams[s].next;
                    for h in next.saturating_sub(spread + 40)..next {
                        let got = streams[s].contains_with(h, &spills[s]);
                        assert_eq!(got, want[s].contains(&h), "round {round} h {h}");
                    }
                }
            }
        }
    }

    /// The spill's blocks of bits against a plain set: handles pushed in ascending order
    /// (mostly consecutive, sometimes past a gap of up to a few blocks), taken out in
    /// random order, oldest first and below a bound; with its memory within two blocks
    /// an outstanding handle (and one).
    #[test]
    fn spill_is_a_set() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for round in 0..200 {
            let mut spill = super::Spill::default();
            let mut want = std::collections::BTreeSet::new();
            let mut next = rng.next_u32() % 1000;
            let spread = 1 + (round % 50) * 20;
            for step in 0..4000 {
                let r = rng.next_u32();
                match r % 8 {
                    0..=3 if want.len() < spread => {
                        if r >> 28 == 0 {
                            next += (r >> 8) % 200;
                        }
                        spill.push(next);
                        want.insert(next);
                        next += 1;
                    }
                    4..=6 if !want.is_empty() => {
                        let all: Vec<u32> = want.iter().copied().collect();
                        let h = all[(r >> 8) as usize % all.len()];
                        spill.remove(h);
                        want.remove(&h);
                    }
                    7 => {
                        let end = want.first().map_or(next, |&f| f + (r >> 8) % 3);
                        let got = spill.pop_below(end);
                        let expect = want.first().copied().filter(|&f| f < end);
                        if let Some(f) = expect {
                            want.remove(&f);
                        }
                        assert_eq!(got, expect, "round {round} step {step}");
                    }
                    _ => {}
                }
                assert_eq!(spill.is_empty(), want.is_empty(), "round {round} step {step}");
                assert_eq!(spill.first(), want.first().copied(), "round {round} step {step}");
                assert!(spill.blocks.len() <= 2 * want.len() + 1, "round {round} step {step}: spill too long");
                let live: u32 = spill.blocks.iter().map(|b| b.bits.count_ones()).sum();
                assert_eq!(live as usize, want.len(), "round {round} step {step}");
                if step % 7 == 0 {
                    for h in next.saturating_sub(spread as u32 + 300)..next + 70 {
                        assert_eq!(spill.contains(h), want.contains(&h), "round {round} step {step} h {h}");
                    }
                }
            }
        }
    }

    /// The pair map holds what a plain map holds through inserts and removals in random
    /// order, growing from its first size, with keys crowded into few home slots (the
    /// backward shift of a removal is what could lose one).
    #[test]
    fn pair_map_is_a_map() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut map = super::PairMap::new();
        let mut want = std::collections::BTreeMap::new();
        let pair = |k: u64| super::Pair { head: k as u32, tail: (k >> 32) as u32, first: (k, !k) };
        for step in 0..200_000u32 {
            let r = rng.next_u64();
            // Up to 3,000 keys of a few senders and receivers, so the map grows past its
            // first 1,024 slots, and shrinks back when removals take over.
            let key = super::pair_key((r % 61) as u32, ((r >> 8) % 53) as u32);
            let grow = (step / 20_000) % 2 == 0;
            match (map.find(key), r >> 60 < if grow { 11 } else { 5 }) {
                (None, true) => {
                    map.insert_new(key, pair(key));
                    want.insert(key, ());
                }
                (Some(at), false) => {
                    map.remove_at(at);
                    want.remove(&key);
                }
                _ => {}
            }
            assert_eq!(map.len, want.len(), "step {step}");
            if step % 997 == 0 {
                for s in 0..61 {
                    for d in 0..53 {
                        let k = super::pair_key(s, d);
                        let got = map.get(k).map(|p| (p.head, p.tail, p.first));
                        let p = pair(k);
                        assert_eq!(got, want.contains_key(&k).then_some((p.head, p.tail, p.first)), "step {step}");
                    }
                }
            }
        }
        assert!(map.slots.len() > super::PairMap::FIRST_SLOTS, "the map grew");
    }
}
