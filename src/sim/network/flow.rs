//! The flow model (`network.model: flow`): messages are flows on routed paths, and flows
//! that cross one directed link share its bandwidth, as in SimGrid's fluid model.
//!
//! The engine ([`crate::sim::engine`]) still decides when a message starts (both its ports
//! free, the ideal model's priority order: docs/model.md); this module
//! decides when it ends. A message
//! of `m` bytes from `a` to `b` that starts at `t` is a flow on the route
//! [`crate::topology::Fabric::route`] gives. Its route latency `L` and bottleneck `B` are
//! the pair's cost [`crate::topology::Topology::link`] (the route's alphas summed, its
//! slowest link). The flow moves no data until `t + L`; from then on it has a rate, set by
//! progressive filling over the links its route crosses and recomputed whenever a flow
//! joins or leaves one of them; it ends when its `m` bytes have moved.
//!
//! **Sharing.** [`Sharing::MaxMin`] is plain max-min fairness: raise every flow's rate at
//! once until a link is full, freeze the flows on it, repeat. [`Sharing::Weighted`]
//! (SimGrid's CM02) gives each flow a share proportional to `1 / L` instead, so on a
//! full link a flow of half the route latency gets twice the rate. A route of zero
//! latency weighs [`ZERO_LATENCY_WEIGHT`] (one second), exactly as SimGrid 3.32 does
//! (`NetworkCm02Model::communicate`: a penalty of 0 would stop the flow, so it uses 1.0);
//! next to routes of microseconds such a flow gets almost nothing of a full link.
//!
//! **Exact where nothing is shared.** A flow that is alone on every link of its route gets
//! its bottleneck's full bandwidth and ends at `t + (L + m / B)`, computed in exactly the
//! ideal model's arithmetic; its delivery is scheduled once, when it starts, as the ideal
//! engine does. So a run in which no two flows ever share a directed link schedules the
//! same events in the same order as the ideal model, and gives its times bit for bit.
//! When a flow's rate changes, its delivery is scheduled again and the older event is
//! recognised by its generation number and skipped.
//!
//! **Incremental.** Rates are recomputed once per instant, after every event of that
//! instant, and only for the flows that share a link, directly or through other flows,
//! with a link some flow joined or left (the connected component of the sharing graph).
//! With `F` flows and `K` links in that component, `h` links per route and `I`
//! bottleneck levels, a recomputation costs `O(F h + K I)`; flows elsewhere keep their
//! rates and their scheduled deliveries.
//!
//! **Determinism.** Links are visited in the order a message first crossed them, flows on
//! a link in the order they joined, and ties between equally loaded links go to the one
//! crossed first; no hash order or thread timing reaches a rate.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use smallvec::SmallVec;

use super::{NetworkModel, Sched, Start};
use crate::sim::engine::Observer;
use crate::sim::noise::Noise;
use crate::topology::{Fabric, Link, LinkId, MAX_CACHED_HOPS};

/// How flows on a full link divide it (`network.sharing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sharing {
    /// Shares proportional to `1 / route latency` (SimGrid CM02); the default.
    Weighted,
    /// Plain max-min fairness: equal shares.
    MaxMin,
}

/// Under [`Sharing::Weighted`], the weight of a route whose latency is exactly 0 (a
/// flow's share is `1 / weight`, its weight otherwise its route latency in seconds).
pub const ZERO_LATENCY_WEIGHT: f64 = 1.0;

/// Under [`Sharing::Weighted`], the least weight a route of positive latency has: a
/// latency below it (1e-290 s) weighs as much. Its share `1 / latency` is then at most
/// 1e290, and a link's sum of shares stays finite for up to 10^18 flows; a latency of
/// 1e-310 s gave an infinite share, every rate NaN and every time 0.
pub const MIN_WEIGHT: f64 = 1e-290;

/// One directed link the run has used, for the per-link report.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkStat {
    /// `from->to` by node names.
    pub name: String,
    /// Bytes per second.
    pub capacity: f64,
    /// Bytes it carried (envelopes included).
    pub bytes: u64,
    /// The largest share of its capacity in use at once, `0..=1`.
    pub peak_utilisation: f64,
    /// The most flows moving data on it at once.
    pub peak_flows: u32,
}

/// The indices of the `n` links that carried the most bytes, busiest first (a stable
/// sort: ties in the order first crossed). The report's busiest links and the trace's
/// counter tracks both come from here.
pub fn busiest(links: &[LinkStat], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..links.len()).collect();
    order.sort_by(|&a, &b| links[b].bytes.cmp(&links[a].bytes));
    order.truncate(n);
    order
}

/// What the flow model reports about a run besides the engine's statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowStats {
    /// Every directed link some message crossed, in the order first crossed.
    pub links: Vec<LinkStat>,
    /// Directed links in the machine.
    pub machine_links: u64,
    /// Flows whose delivery was rescheduled because their rate changed. Every flow starts
    /// at its bottleneck's bandwidth, which no share exceeds, so any change is sharing
    /// slowing a flow ([`FlowStats::shared`]).
    pub reschedules: u64,
    /// Messages delivered sooner than they could have been alone on their route (more
    /// than a relative 1e-9 early). Rates never exceed a link's bandwidth, so this is 0
    /// unless the model is broken; the runner fails a point where it is not.
    pub faster_than_alone: u64,
    /// Under `noise.faults`: what each fault did, in time order.
    pub faults: Vec<FaultStat>,
    /// Under `noise.faults`: the `random` entries that drew fewer links than they asked.
    pub short_draws: Vec<crate::sim::noise::ShortDraw>,
    /// Under `noise.faults`: messages that started on a detour because their usual
    /// route crossed a failed link.
    pub detoured: u64,
}

impl FlowStats {
    /// Whether sharing ever slowed a flow: two or more flows moved data on one directed
    /// link at once and one of them got less than its route's bottleneck bandwidth. If
    /// not, every message took its time alone, and the run's times are the ideal model's.
    /// (Flows may cross one link without slowing each other: eight 100 Gb/s hosts through
    /// an 800 Gb/s uplink.)
    pub fn shared(&self) -> bool {
        self.reschedules > 0
    }
}

#[derive(Debug)]
struct LinkState {
    capacity: f64,
    /// Flows moving data on it, in the order they joined.
    flows: SmallVec<[u32; 4]>,
    bytes: u64,
    load: f64,
    peak: f64,
    peak_flows: u32,
    dirty: bool,
    /// Visit mark of the last recomputation that reached it.
    epoch: u64,
    /// Progressive filling: capacity not yet given out, the shares and the count of
    /// flows on it not yet frozen.
    left: f64,
    shares: f64,
    unfixed: u32,
    /// Failed (`noise.faults`): no flow may cross it any more.
    failed: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct FlowState {
    /// Its route: `route_buf[start..start + len]`, link slots.
    start: u32,
    len: u32,
    /// `1 / weight`: its share per unit of a link's fair level.
    share: f64,
    /// Bytes per second while moving data (before it joins: its bottleneck's bandwidth).
    rate: f64,
    /// When `remaining` was last brought up to date.
    anchor: f64,
    remaining: f64,
    /// When it would be delivered alone on its route.
    alone: f64,
    /// Moving data: on its links' flow lists.
    moving: bool,
    /// Generation of its scheduled delivery; older events are stale.
    generation: u32,
    /// Started and not yet delivered: its route slots in `route_buf` must stay valid.
    live: bool,
    epoch: u64,
    fixed: bool,
    next_rate: f64,
    /// Under noise with slow ranks: the most its sender injects, bytes per second
    /// (infinite otherwise).
    cap: f64,
    /// Bytes on the wire.
    bytes: u64,
    /// Its ends, for rerouting and the report of a run cut off.
    src: u32,
    dst: u32,
    /// When its delivery is scheduled (kept only under link faults).
    due: f64,
    /// Under link faults: how many times it was rerouted; its start-of-data event carries
    /// it, so an event of a route it left is stale.
    leg: u32,
}

/// The shared links of one run. As a [`NetworkModel`]: [`FlowNet::start_flow`] when a
/// message takes its ports, [`FlowNet::begin_data`] when its latency has passed (an event
/// of its own), [`FlowNet::finish`] when it is delivered, and [`FlowNet::settle_rates`]
/// once per instant.
pub struct FlowNet<'a> {
    fabric: &'a dyn Fabric,
    sharing: Sharing,
    /// Link slots of each `(src, dst)` pair's route, in `route_buf`.
    routes: IdMap<(u32, u32), (u32, u32)>,
    route_buf: Vec<u32>,
    /// Which slot holds each link crossed so far.
    slot_of: IdMap<LinkId, u32>,
    ids: Vec<LinkId>,
    links: Vec<LinkState>,
    /// Per message id (the engine's slab index).
    flows: Vec<FlowState>,
    /// How many pairs' routes are cached before the cache is dropped
    /// ([`MAX_CACHED_ROUTES`]; smaller in tests).
    max_routes: usize,
    /// The length of `route_buf` after the last drop (the live flows' routes): the cache
    /// is dropped too once [`MAX_CACHED_HOPS`] hops were added past it.
    kept_hops: usize,
    dirty: Vec<u32>,
    epoch: u64,
    scratch: Vec<LinkId>,
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    /// `(link slot, time, load as a share of capacity)` for every change of a link's
    /// load, when asked for ([`FlowNet::record_loads`]).
    loads: Option<Vec<(u32, f64, f64)>>,
    stats: FlowStats,
    /// Variability: slow physical links and slow senders ([`FlowNet::set_noise`]).
    noise: Option<&'a Noise>,
    /// Whether some flow's sender caps its rate below its links ([`FlowState::cap`]).
    capped: bool,
    /// Link faults (`noise.faults`); `None` takes none of their branches.
    faults: Option<Box<Faults>>,
}

/// A message a link fault left without a route: it never arrives.
#[derive(Clone, Debug, PartialEq)]
pub struct CutFlow {
    /// The engine's id of the message.
    pub id: u32,
    /// Sender and receiver.
    pub src: u32,
    /// Receiver.
    pub dst: u32,
    /// Bytes on the wire.
    pub bytes: u64,
    /// Bytes that had arrived when it was cut off.
    pub moved: f64,
    /// When it was cut off.
    pub at: f64,
    /// The failed link it was on (or that its usual route needed), `from->to`.
    pub link: String,
}

/// The words every message about a run cut off by link faults starts with.
pub const CUT_OFF: &str = "cut off by a link fault";

/// A run that link faults cut off: the messages left without a route, and who waits
/// for whom when nothing else can happen.
#[derive(Clone, Debug, PartialEq)]
pub struct CutOff {
    /// When the run stopped: its last event.
    pub time: f64,
    /// The messages cut off, in the order they were.
    pub flows: Vec<CutFlow>,
    /// The engine's account of the ranks still waiting and what each waits for.
    pub waiting: String,
}

impl std::fmt::Display for CutOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} message(s) have no route left (", CUT_OFF, self.flows.len())?;
        for (i, c) in self.flows.iter().take(4).enumerate() {
            let sep = if i > 0 { "; " } else { "" };
            write!(
                f,
                "{sep}rank {} waits for rank {}'s message, {} of {} moved when {} failed at {}",
                c.dst,
                c.src,
                c.moved,
                crate::units::count_bytes(c.bytes),
                c.link,
                crate::units::fmt_time_fine(c.at)
            )?;
        }
        if self.flows.len() > 4 {
            write!(f, "; and {} more", self.flows.len() - 4)?;
        }
        write!(f, "); the run stopped at {}", crate::units::fmt_time_fine(self.time))?;
        if !self.waiting.is_empty() {
            write!(f, " with {}", self.waiting)?;
        }
        Ok(())
    }
}

/// What one fault did in a run (the report's notes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultStat {
    /// `a-b` as the scenario names the link.
    pub link: String,
    /// When it failed.
    pub at: f64,
    /// Whether it named a link of this machine.
    pub matched: bool,
    /// Flows moved to another route when it failed, or because their usual route crossed it.
    pub rerouted: u64,
    /// Flows it left without a route.
    pub cut: u64,
    /// It was due after the run had ended, so it failed nothing.
    pub after_end: bool,
}

/// The link faults of one run and what they did.
#[derive(Debug, Default)]
struct Faults {
    /// By time: `(a, b, at)`.
    list: Vec<(String, String, f64)>,
    /// How many of `list` have failed so far.
    done: usize,
    /// The failed directed links found through the fabric's graph, sorted.
    ids: Vec<LinkId>,
    /// Whether the fault events were scheduled (at the first instant).
    scheduled: bool,
    /// Flows started and not yet delivered or cut off.
    live: usize,
    stats: Vec<FaultStat>,
    cut: Vec<CutFlow>,
}

/// The bit of a cached route's length that says it is a detour around failed links.
const DETOURED: u32 = 1 << 31;
/// A cached route's start when the pair has no route left.
const NO_ROUTE: u32 = u32::MAX;

/// A multiply-rotate hash (FxHash's) for the route and link tables: their keys are small
/// integers chosen by us, not by an adversary, and SipHash was a twentieth of a flow run.
/// Only lookups use it; nothing iterates these tables, so no output depends on it.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The routes cached past this many pairs are dropped (a schedule that talks to every
/// pair, like a naive all-to-all, would otherwise keep P^2 of them).
const MAX_CACHED_ROUTES: usize = 1 << 20;

impl<'a> FlowNet<'a> {
    /// A network over `fabric`'s links, sharing them as `sharing` says.
    pub fn new(fabric: &'a dyn Fabric, sharing: Sharing) -> Self {
        FlowNet {
            fabric,
            sharing,
            routes: IdMap::default(),
            route_buf: Vec::new(),
            slot_of: IdMap::default(),
            ids: Vec::new(),
            links: Vec::new(),
            flows: Vec::new(),
            max_routes: MAX_CACHED_ROUTES,
            kept_hops: 0,
            dirty: Vec::new(),
            epoch: 0,
            scratch: Vec::new(),
            comp_links: Vec::new(),
            comp_flows: Vec::new(),
            loads: None,
            stats: FlowStats { machine_links: fabric.link_count(), ..FlowStats::default() },
            noise: None,
            capped: false,
            faults: None,
        }
    }

    /// Run under `noise`: a slow link's capacity is scaled when a route first crosses
    /// it, and a slow rank's flows are capped at its injection rate (progressive filling
    /// freezes a flow at its cap as it would at a full link).
    pub fn set_noise(&mut self, noise: &'a Noise) {
        self.capped = noise.has_slow_ranks();
        self.noise = Some(noise);
        let (faults, short) = noise.draw_faults(self.fabric);
        self.stats.short_draws = short;
        if !faults.is_empty() {
            let list: Vec<(String, String, f64)> = faults.into_iter().map(|f| (f.a, f.b, f.at_s)).collect();
            let stats = list
                .iter()
                .map(|(a, b, at)| FaultStat { link: format!("{a}-{b}"), at: *at, ..FaultStat::default() })
                .collect();
            self.faults = Some(Box::new(Faults { list, stats, ..Faults::default() }));
        }
    }

    /// Forget every cached route. Flows in flight keep theirs: their slots are copied to
    /// the front of a fresh `route_buf` and their `start` moved there (clearing the buffer
    /// under them made a later flow's route overwrite theirs, so a flow could leave or
    /// share links it never crossed, or index past the buffer's end). Runs once per
    /// `max_routes` new pairs and costs the live flows' routes, so it is amortised free.
    fn drop_routes(&mut self) {
        self.routes.clear();
        let mut kept = Vec::with_capacity(self.route_buf.len().min(self.max_routes));
        for f in self.flows.iter_mut().filter(|f| f.live) {
            let start = kept.len() as u32;
            kept.extend_from_slice(&self.route_buf[f.start as usize..(f.start + f.len) as usize]);
            f.start = start;
        }
        self.kept_hops = kept.len();
        self.route_buf = kept;
    }

    /// Keep every change of a link's load, for the timeline's counter tracks.
    pub fn record_loads(&mut self) {
        self.loads = Some(Vec::new());
    }

    /// The slots of the route from `a` to `b`, computed and cached on first use.
    fn route(&mut self, a: u32, b: u32) -> (u32, u32) {
        if let Some(&r) = self.routes.get(&(a, b)) {
            return r;
        }
        // By hops too: on a machine of long routes (a line) a count of routes alone
        // would let every pair's route stay, P^2 link ids.
        if self.routes.len() >= self.max_routes || self.route_buf.len() - self.kept_hops >= MAX_CACHED_HOPS {
            self.drop_routes();
        }
        self.scratch.clear();
        self.fabric.route(a as usize, b as usize, &mut self.scratch);
        let mut detoured = 0;
        if self.faults.as_ref().is_some_and(|f| f.done > 0) && self.scratch.iter().any(|&id| self.is_failed(id)) {
            self.scratch.clear();
            let ids = &self.faults.as_ref().expect("faults").ids;
            if !crate::topology::detour(
                self.fabric,
                a as usize,
                b as usize,
                |id| ids.binary_search(&id).is_ok(),
                &mut self.scratch,
            ) {
                self.routes.insert((a, b), (NO_ROUTE, 0));
                return (NO_ROUTE, 0);
            }
            detoured = DETOURED;
        }
        let start = self.route_buf.len() as u32;
        for i in 0..self.scratch.len() {
            let id = self.scratch[i];
            let slot = match self.slot_of.get(&id) {
                Some(&s) => s,
                None => {
                    let s = self.links.len() as u32;
                    self.slot_of.insert(id, s);
                    self.ids.push(id);
                    let factor = match self.noise {
                        Some(n) if n.has_slow_links() => n.link_factor(&self.fabric.link_name(id)),
                        _ => 1.0,
                    };
                    self.links.push(LinkState {
                        capacity: self.fabric.hop(id).bandwidth * factor,
                        flows: SmallVec::new(),
                        bytes: 0,
                        load: 0.0,
                        peak: 0.0,
                        peak_flows: 0,
                        dirty: false,
                        epoch: 0,
                        left: 0.0,
                        shares: 0.0,
                        unfixed: 0,
                        failed: self.faults.as_ref().is_some_and(|f| f.done > 0) && self.failed_by_name(id),
                    });
                    s
                }
            };
            self.route_buf.push(slot);
        }
        let r = (start, self.scratch.len() as u32 | detoured);
        self.routes.insert((a, b), r);
        r
    }

    /// Under link faults: whether directed link `id` has failed.
    fn is_failed(&self, id: LinkId) -> bool {
        match self.slot_of.get(&id) {
            Some(&s) => self.links[s as usize].failed,
            None => self.failed_by_name(id),
        }
    }

    /// Message `id` of `bytes` bytes from `a` to `b`, whose pair cost is `link`, takes its
    /// ports at `now`. Returns the generation of the delivery the engine schedules now,
    /// at `now + link.time(bytes)`: right if the flow never shares a link.
    pub fn start_flow(&mut self, id: u32, a: u32, b: u32, bytes: u64, link: Link, now: f64) -> u32 {
        let (start, len) = self.route(a, b);
        self.open(id, (a, b), (start, len), bytes, link, now)
    }

    /// [`FlowNet::start_flow`] on the route in slots `start..start + len`.
    fn open(&mut self, id: u32, (a, b): (u32, u32), (start, len): (u32, u32), bytes: u64, link: Link, now: f64) -> u32 {
        for i in start..start + len {
            self.links[self.route_buf[i as usize] as usize].bytes += bytes;
        }
        if self.flows.len() <= id as usize {
            self.flows.resize(id as usize + 1, FlowState::default());
        }
        let share = self.share_of(link);
        let f = &mut self.flows[id as usize];
        let generation = f.generation.wrapping_add(1);
        // Under faults a slot's legs keep counting, so that a start-of-data event of the
        // slot's last message can never pass for this one's.
        let leg = if self.faults.is_some() { f.leg.wrapping_add(1) } else { 0 };
        *f = FlowState {
            start,
            len,
            share,
            rate: link.bandwidth,
            anchor: now + link.alpha,
            remaining: bytes as f64,
            alone: now + link.time(bytes as f64),
            moving: false,
            generation,
            live: true,
            epoch: 0,
            fixed: false,
            next_rate: 0.0,
            cap: f64::INFINITY,
            bytes,
            src: a,
            dst: b,
            due: now + link.time(bytes as f64),
            leg,
        };
        generation
    }

    /// Under noise: the cost alone of a message from `a` to `b` whose pair cost is `link`
    /// (its bandwidth the sender's injection rate): its route's links may be slower.
    fn noisy_link(&mut self, a: u32, b: u32, mut link: Link) -> Link {
        let (start, len) = self.route(a, b);
        for i in start..start + len {
            link.bandwidth = link.bandwidth.min(self.links[self.route_buf[i as usize] as usize].capacity);
        }
        link
    }

    /// Whether a delivery of message `id` scheduled with `generation` is still its delivery.
    #[inline]
    pub fn is_current(&self, id: u32, generation: u32) -> bool {
        self.flows[id as usize].generation == generation
    }

    /// Message `id`'s route latency has passed: it starts moving data (a message of no
    /// bytes never does).
    pub fn begin_data(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        if f.remaining <= 0.0 {
            return;
        }
        f.moving = true;
        self.join_or_leave(id, true);
    }

    /// Put message `id` on (or take it off) every link of its route, marking each for
    /// the next [`FlowNet::settle_rates`].
    fn join_or_leave(&mut self, id: u32, join: bool) {
        let f = &self.flows[id as usize];
        for i in f.start..f.start + f.len {
            let slot = self.route_buf[i as usize];
            let l = &mut self.links[slot as usize];
            if join {
                l.flows.push(id);
            } else if let Some(pos) = l.flows.iter().position(|&x| x == id) {
                l.flows.remove(pos);
            }
            if !l.dirty {
                l.dirty = true;
                self.dirty.push(slot);
            }
        }
    }

    /// Message `id` is delivered at `now`: it leaves its links.
    pub fn finish(&mut self, id: u32, now: f64) {
        let f = &mut self.flows[id as usize];
        if now < f.alone - 1e-9 * f.alone {
            self.stats.faster_than_alone += 1;
        }
        f.generation = f.generation.wrapping_add(1);
        f.live = false;
        if let Some(faults) = &mut self.faults {
            faults.live -= 1;
        }
        if !f.moving {
            return;
        }
        f.moving = false;
        self.join_or_leave(id, false);
    }

    /// Recompute the rates of every flow that shares a link with a link that changed
    /// since the last call, at `now`; `reschedule(id, generation, time)` is called for
    /// each flow whose delivery moved.
    pub fn settle_rates(&mut self, now: f64, mut reschedule: impl FnMut(u32, u32, f64)) {
        while let Some(&seed) = self.dirty.last() {
            self.dirty.pop();
            if !self.links[seed as usize].dirty {
                continue;
            }
            self.component(seed);
            self.fill();
            self.apply(now, &mut reschedule);
        }
    }

    /// Gather in `comp_links` and `comp_flows` the links and moving flows reachable from
    /// link `seed` through shared flows; clears their dirty marks.
    fn component(&mut self, seed: u32) {
        self.epoch += 1;
        let epoch = self.epoch;
        self.comp_links.clear();
        self.comp_flows.clear();
        self.links[seed as usize].epoch = epoch;
        self.comp_links.push(seed);
        let mut head = 0;
        while head < self.comp_links.len() {
            let slot = self.comp_links[head] as usize;
            head += 1;
            self.links[slot].dirty = false;
            for k in 0..self.links[slot].flows.len() {
                let id = self.links[slot].flows[k];
                let f = &mut self.flows[id as usize];
                if f.epoch == epoch {
                    continue;
                }
                f.epoch = epoch;
                self.comp_flows.push(id);
                let (start, len) = (f.start, f.len);
                for i in start..start + len {
                    let s = self.route_buf[i as usize];
                    if self.links[s as usize].epoch != epoch {
                        self.links[s as usize].epoch = epoch;
                        self.comp_links.push(s);
                    }
                }
            }
        }
        // Slots are numbered in the order links were first crossed: the stated tie order.
        self.comp_links.sort_unstable();
    }

    /// Progressive filling over the component: each round, the link whose capacity left
    /// per unit of share is smallest is the bottleneck; its flows get that level (times
    /// their share) and are frozen.
    fn fill(&mut self) {
        for &slot in &self.comp_links {
            let l = &mut self.links[slot as usize];
            l.left = l.capacity;
            l.shares = 0.0;
            l.unfixed = 0;
        }
        for &id in &self.comp_flows {
            let f = &mut self.flows[id as usize];
            f.fixed = false;
            for i in f.start..f.start + f.len {
                let l = &mut self.links[self.route_buf[i as usize] as usize];
                l.shares += f.share;
                l.unfixed += 1;
            }
        }
        loop {
            let mut best: Option<(u32, f64)> = None;
            for &slot in &self.comp_links {
                let l = &self.links[slot as usize];
                if l.unfixed == 0 {
                    continue;
                }
                let level = l.left / l.shares;
                if best.is_none_or(|(_, b)| level < b) {
                    best = Some((slot, level));
                }
            }
            if self.capped && self.fix_capped(best.map(|b| b.1)) {
                continue;
            }
            let Some((slot, _)) = best else { break };
            let (left, shares) = (self.links[slot as usize].left.max(0.0), self.links[slot as usize].shares);
            for k in 0..self.links[slot as usize].flows.len() {
                let id = self.links[slot as usize].flows[k];
                let f = &mut self.flows[id as usize];
                if f.fixed {
                    continue;
                }
                // `left * (share / shares)`, not `level * share`: a flow alone on its
                // bottleneck gets exactly the link's bandwidth.
                let rate = left * (f.share / shares);
                f.fixed = true;
                f.next_rate = rate;
                let (start, len, share) = (f.start, f.len, f.share);
                for i in start..start + len {
                    let l = &mut self.links[self.route_buf[i as usize] as usize];
                    l.left -= rate;
                    l.shares -= share;
                    l.unfixed -= 1;
                }
            }
        }
    }

    /// With slow senders: if an unfrozen flow's cap binds below `level` (the lowest link's),
    /// freeze it at its cap and say so.
    fn fix_capped(&mut self, level: Option<f64>) -> bool {
        let mut best: Option<(u32, f64)> = None;
        for &id in &self.comp_flows {
            let f = &self.flows[id as usize];
            if f.fixed || f.cap == f64::INFINITY {
                continue;
            }
            let at = f.cap / f.share;
            if level.is_some_and(|l| at < l) && best.is_none_or(|(_, b)| at < b) {
                best = Some((id, at));
            }
        }
        let Some((id, _)) = best else { return false };
        let f = &mut self.flows[id as usize];
        f.fixed = true;
        f.next_rate = f.cap;
        let (start, len, share, rate) = (f.start, f.len, f.share, f.cap);
        for i in start..start + len {
            let l = &mut self.links[self.route_buf[i as usize] as usize];
            l.left -= rate;
            l.shares -= share;
            l.unfixed -= 1;
        }
        true
    }

    /// Bring every flow of the component to its new rate and every link to its new load.
    fn apply(&mut self, now: f64, reschedule: &mut impl FnMut(u32, u32, f64)) {
        for &id in &self.comp_flows {
            let f = &mut self.flows[id as usize];
            let rate = f.next_rate;
            if rate == f.rate {
                continue;
            }
            // A flow that joins at `now` has moved nothing yet (its anchor is `now`).
            let moved = f.rate * (now - f.anchor).max(0.0);
            f.remaining = (f.remaining - moved).max(0.0);
            f.anchor = now;
            f.rate = rate;
            f.generation = f.generation.wrapping_add(1);
            self.stats.reschedules += 1;
            f.due = now + f.remaining / rate;
            reschedule(id, f.generation, f.due);
        }
        for &slot in &self.comp_links {
            let l = &mut self.links[slot as usize];
            let load: f64 = l.flows.iter().map(|&id| self.flows[id as usize].rate).sum();
            let load = load / l.capacity;
            l.peak = l.peak.max(load);
            l.peak_flows = l.peak_flows.max(l.flows.len() as u32);
            if load != l.load {
                l.load = load;
                if let Some(v) = &mut self.loads {
                    v.push((slot, now, load));
                }
            }
        }
    }

    /// The loads recorded since [`FlowNet::record_loads`]: `(link index in
    /// [`FlowStats::links`], time, share of capacity in use)`.
    pub fn take_loads(&mut self) -> Vec<(u32, f64, f64)> {
        self.loads.take().unwrap_or_default()
    }

    /// The run's link statistics.
    pub fn link_stats(mut self) -> FlowStats {
        if let Some(f) = self.faults.take() {
            self.stats.faults = f.stats;
            // A fault due after the run ended failed nothing; say whether it would have
            // found its link (by the graph: no message crossed it to be named).
            for k in f.done..f.list.len() {
                let (a, b, _) = &f.list[k];
                let fabric = self.fabric;
                let mut out = Vec::new();
                let linked = (0..fabric.nodes()).filter(|&n| fabric.node_name(n) == *a).any(|x| {
                    out.clear();
                    self.fabric.out_links(x, &mut out);
                    out.iter().any(|e| self.fabric.node_name(e.1) == *b)
                });
                self.stats.faults[k].matched = linked;
                self.stats.faults[k].after_end = true;
            }
        }
        self.stats.links = self
            .ids
            .iter()
            .zip(&self.links)
            .map(|(&id, l)| LinkStat {
                name: self.fabric.link_name(id),
                capacity: l.capacity,
                bytes: l.bytes,
                peak_utilisation: l.peak,
                peak_flows: l.peak_flows,
            })
            .collect();
        self.stats
    }
}

/// Link faults (`noise.faults`, docs/variability.md). A fault fails every directed link
/// between its two nodes at its time. A flow on a failed link leaves it keeping the bytes
/// it has moved, and starts again from the fault's time on a new route: the fewest hops
/// around every failed link ([`crate::topology::detour`]), its latency first, then the
/// bytes it had left, shared as any flow. A message that starts later takes its usual
/// route, or that detour where the usual one crosses a failed link. A flow with no route
/// left is cut off: it never arrives, the run ends when nothing else can happen, and the
/// engine reports who waits for whom ([`NetworkModel::take_cut`]).
impl FlowNet<'_> {
    /// Every fault's event, once, at the first instant: `Net(k, 1)` for fault `k`.
    fn schedule_faults(&mut self, q: &mut Sched<'_>) {
        let Some(f) = &mut self.faults else { return };
        f.scheduled = true;
        for (k, (_, _, at)) in f.list.iter().enumerate() {
            q.later(*at, k as u32, 1);
        }
    }

    /// Whether the link named `name` joins the two nodes of a fault that has happened.
    fn fault_of(&self, name: &str) -> Option<usize> {
        let f = self.faults.as_ref()?;
        let (x, y) = crate::sim::noise::link_ends(name)?;
        (0..f.done).rev().find(|&k| {
            let (a, b, _) = &f.list[k];
            (a == x && b == y) || (a == y && b == x)
        })
    }

    /// Whether directed link `id` has failed (found through the fabric's graph, or by
    /// its name where the fabric does not describe its graph).
    fn failed_by_name(&self, id: LinkId) -> bool {
        self.faults.as_ref().is_some_and(|f| f.ids.binary_search(&id).is_ok())
            || self.fault_of(&self.fabric.link_name(id)).is_some()
    }

    /// Fail the links of every fault due by `now`, and move the flows on them.
    fn fail_due(&mut self, now: f64, q: &mut Sched<'_>) {
        let Some(f) = &mut self.faults else { return };
        let first = f.done;
        while f.done < f.list.len() && f.list[f.done].2 <= now {
            f.done += 1;
        }
        if f.done == first {
            return;
        }
        let fabric = self.fabric;
        let mut out = Vec::new();
        for k in first..f.done {
            let (a, b) = (&f.list[k].0, &f.list[k].1);
            // A name may stand for several nodes (a PCIe switch's in and out sides).
            let named = |want: &str| (0..fabric.nodes()).filter(|&n| fabric.node_name(n) == want).collect::<Vec<_>>();
            let (na, nb) = (named(a), named(b));
            for (&x, &y) in na.iter().flat_map(|x| nb.iter().map(move |y| (x, y))) {
                for (from, to) in [(x, y), (y, x)] {
                    out.clear();
                    fabric.out_links(from, &mut out);
                    f.ids.extend(out.iter().filter(|e| e.1 == to).map(|e| e.0));
                }
            }
        }
        f.ids.sort_unstable();
        f.ids.dedup();
        for slot in 0..self.links.len() {
            if !self.links[slot].failed && self.failed_by_name(self.ids[slot]) {
                self.links[slot].failed = true;
            }
        }
        let f = self.faults.as_mut().expect("faults");
        for k in first..f.done {
            let (a, b) = (&f.list[k].0, &f.list[k].1);
            let by_graph = f.ids.iter().any(|&id| {
                crate::sim::noise::link_ends(&fabric.link_name(id))
                    .is_some_and(|(x, y)| (x == a && y == b) || (x == b && y == a))
            });
            let by_name = self.ids.iter().zip(&self.links).any(|(&id, l)| {
                l.failed
                    && crate::sim::noise::link_ends(&fabric.link_name(id))
                        .is_some_and(|(x, y)| (x == a && y == b) || (x == b && y == a))
            });
            f.stats[k].matched = by_graph || by_name;
        }
        // Cached routes may cross the failed links.
        self.drop_routes();
        for id in 0..self.flows.len() as u32 {
            let f = &self.flows[id as usize];
            if !f.live || f.due <= now {
                continue;
            }
            let on =
                (f.start..f.start + f.len).map(|i| self.route_buf[i as usize]).find(|&s| self.links[s as usize].failed);
            if let Some(slot) = on {
                self.reroute(id, slot, now, q);
            }
        }
    }

    /// Flow `id`, on failed link `slot`, leaves its route at `now` with the bytes it has
    /// moved and starts again on a detour, or is cut off.
    fn reroute(&mut self, id: u32, slot: u32, now: f64, q: &mut Sched<'_>) {
        let f = &mut self.flows[id as usize];
        f.generation = f.generation.wrapping_add(1);
        f.leg = f.leg.wrapping_add(1);
        if f.moving {
            f.remaining = (f.remaining - f.rate * (now - f.anchor).max(0.0)).max(0.0);
            f.moving = false;
            self.join_or_leave(id, false);
        }
        let name = self.fabric.link_name(self.ids[slot as usize]);
        let k = self.fault_of(&name);
        let (src, dst) = (self.flows[id as usize].src, self.flows[id as usize].dst);
        let (start, len) = self.route(src, dst);
        let faults = self.faults.as_mut().expect("faults");
        if start == NO_ROUTE {
            let f = &mut self.flows[id as usize];
            f.live = false;
            faults.live -= 1;
            let moved = f.bytes as f64 - f.remaining;
            faults.cut.push(CutFlow { id, src, dst, bytes: f.bytes, moved, at: now, link: name });
            if let Some(k) = k {
                faults.stats[k].cut += 1;
            }
            return;
        }
        if let Some(k) = k {
            faults.stats[k].rerouted += 1;
        }
        let len = len & !DETOURED;
        let link = self.detour_cost(start, len, self.flows[id as usize].cap);
        let remaining = self.flows[id as usize].remaining;
        for i in start..start + len {
            self.links[self.route_buf[i as usize] as usize].bytes += remaining.ceil() as u64;
        }
        let share = self.share_of(link);
        let f = &mut self.flows[id as usize];
        f.start = start;
        f.len = len;
        f.share = share;
        f.rate = link.bandwidth;
        f.anchor = now + link.alpha;
        f.alone = now + link.time(remaining);
        f.due = f.alone;
        let (generation, leg) = (f.generation, f.leg);
        q.deliver(f.due, id, generation);
        if remaining > 0.0 {
            if link.alpha > 0.0 {
                q.later(now + link.alpha, id, leg.wrapping_mul(2));
            } else {
                self.begin_data(id);
            }
        }
    }

    /// The cost alone of the route in slots `start..start + len` (alphas in route order,
    /// the slowest capacity, and no more than `cap`, a slow sender's rate).
    fn detour_cost(&self, start: u32, len: u32, cap: f64) -> Link {
        let mut link = Link { alpha: 0.0, bandwidth: cap };
        for i in start..start + len {
            let slot = self.route_buf[i as usize] as usize;
            link.alpha += self.fabric.hop(self.ids[slot]).alpha;
            link.bandwidth = link.bandwidth.min(self.links[slot].capacity);
        }
        link
    }

    /// A flow's share per unit of a link's fair level on a route costing `link` alone.
    fn share_of(&self, link: Link) -> f64 {
        match self.sharing {
            Sharing::MaxMin => 1.0,
            Sharing::Weighted if link.alpha > 0.0 => 1.0 / link.alpha.max(MIN_WEIGHT),
            Sharing::Weighted => 1.0 / ZERO_LATENCY_WEIGHT,
        }
    }

    /// [`NetworkModel::start`] under link faults.
    fn start_faulty(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        if self.faults.as_ref().is_some_and(|f| !f.scheduled) {
            self.schedule_faults(q);
        }
        self.fail_due(s.now, q);
        let (start, len) = self.route(s.src, s.dst);
        let slot = self.flows.get(s.id as usize).map_or(0, |f| f.leg);
        if self.flows.len() <= s.id as usize {
            self.flows.resize(s.id as usize + 1, FlowState::default());
        }
        if start == NO_ROUTE {
            let f = &mut self.flows[s.id as usize];
            f.generation = f.generation.wrapping_add(1);
            f.leg = slot.wrapping_add(1);
            f.live = false;
            let mut usual = Vec::new();
            self.fabric.route(s.src as usize, s.dst as usize, &mut usual);
            let link = usual
                .iter()
                .find(|&&id| self.failed_by_name(id))
                .map_or_else(String::new, |&id| self.fabric.link_name(id));
            let k = self.fault_of(&link);
            let faults = self.faults.as_mut().expect("faults");
            if let Some(k) = k {
                faults.stats[k].cut += 1;
            }
            faults.cut.push(CutFlow { id: s.id, src: s.src, dst: s.dst, bytes: s.wire, moved: 0.0, at: s.now, link });
            return f64::INFINITY;
        }
        let detoured = len & DETOURED != 0;
        let len = len & !DETOURED;
        let cap = if self.capped { s.link.bandwidth } else { f64::INFINITY };
        let link = if detoured {
            self.stats.detoured += 1;
            self.detour_cost(start, len, cap)
        } else {
            // As `noisy_link`: the pair's cost, its links possibly slowed.
            let mut link = s.link;
            for i in start..start + len {
                link.bandwidth = link.bandwidth.min(self.links[self.route_buf[i as usize] as usize].capacity);
            }
            link
        };
        let generation = self.open(s.id, (s.src, s.dst), (start, len), s.wire, link, s.now);
        self.faults.as_mut().expect("faults").live += 1;
        let f = &mut self.flows[s.id as usize];
        f.cap = cap;
        let leg = f.leg;
        if s.wire > 0 {
            if link.alpha > 0.0 {
                q.later(s.now + link.alpha, s.id, leg.wrapping_mul(2));
            } else {
                self.begin_data(s.id);
            }
        }
        q.deliver(s.now + link.time(s.wire as f64), s.id, generation);
        f64::INFINITY
    }
}

/// A message's flow starts with its ports; its data after its route latency (an event of
/// the model's own, or at once on a route of none); the delivery the engine schedules is
/// the flow's alone, moved by [`FlowNet::settle_rates`] when sharing changes its rate.
impl NetworkModel for FlowNet<'_> {
    const END_AT_START: bool = false;

    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64 {
        if self.faults.is_some() {
            return self.start_faulty(s, q);
        }
        let link = if self.noise.is_some() { self.noisy_link(s.src, s.dst, s.link) } else { s.link };
        let generation = self.start_flow(s.id, s.src, s.dst, s.wire, link, s.now);
        if self.capped {
            // `s.link` carries the sender's injection rate ([`crate::sim::noise::Noise::link`]).
            self.flows[s.id as usize].cap = s.link.bandwidth;
        }
        if s.wire > 0 {
            if link.alpha > 0.0 {
                q.later(s.now + link.alpha, s.id, 0);
            } else {
                self.begin_data(s.id);
            }
        }
        q.deliver(s.now + link.time(s.wire as f64), s.id, generation);
        f64::INFINITY
    }

    #[inline]
    fn current(&self, id: u32, generation: u32) -> bool {
        self.is_current(id, generation)
    }

    #[inline]
    fn current_event(&self, id: u32, what: u32) -> bool {
        match &self.faults {
            None => true,
            // A fault no flow in flight could feel is skipped (its link is failed when the
            // next message starts), so that it never ends a run that was over.
            Some(f) if what & 1 == 1 => f.done <= id as usize && f.live > 0,
            Some(_) => {
                let f = &self.flows[id as usize];
                f.live && f.leg.wrapping_mul(2) == what
            }
        }
    }

    fn event(&mut self, id: u32, what: u32, now: f64, q: &mut Sched<'_>) {
        if what & 1 == 1 {
            self.fail_due(now, q);
        } else {
            self.begin_data(id);
        }
    }

    fn take_cut(&mut self) -> Option<Vec<CutFlow>> {
        self.faults.as_mut().filter(|f| !f.cut.is_empty()).map(|f| f.cut.clone())
    }

    fn delivered(&mut self, id: u32, now: f64) {
        self.finish(id, now);
    }

    fn settle(&mut self, now: f64, q: &mut Sched<'_>) {
        if self.faults.as_ref().is_some_and(|f| !f.scheduled) {
            self.schedule_faults(q);
        }
        self.settle_rates(now, |id, generation, time| q.deliver(time, id, generation));
    }

    fn into_stats<O: Observer>(mut self, obs: &mut O) -> Option<FlowStats> {
        let loads = self.take_loads();
        let stats = self.link_stats();
        if obs.wants_link_loads() {
            obs.link_loads(&stats.links, loads);
        }
        Some(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::{FlowNet, Sharing};
    use crate::topology::{FullyConnected, Link};

    /// Dropping the route cache while flows are in flight leaves them on their own links.
    /// With a cache of one pair, every new pair drops it: flow 0 (0 -> 1) is in flight
    /// when flows 1 (2 -> 3) and 2 (1 -> 0) start. Each is alone on its private link, so
    /// none may slow another; before the fix flow 1's route overwrote flow 0's slots
    /// (both then shared link 2->3) and flow 2's start indexed past the buffer.
    #[test]
    fn dropped_routes_keep_the_flows_in_flight() {
        let link = Link { alpha: 1.0, bandwidth: 1.0 };
        let topo = FullyConnected { ranks: 4, link, nics: 1 };
        let mut net = FlowNet::new(&topo, Sharing::MaxMin);
        net.max_routes = 1;
        let mut moved = Vec::new();
        for (id, (a, b)) in [(0, 1), (2, 3), (1, 0)].into_iter().enumerate() {
            net.start_flow(id as u32, a, b, 8, link, 0.0);
        }
        for id in 0..3 {
            net.begin_data(id);
        }
        net.settle_rates(1.0, |id, _, t| moved.push((id, t)));
        assert_eq!(moved, [], "no flow shares a link");
        let loads: Vec<usize> = net.links.iter().map(|l| l.flows.len()).collect();
        assert_eq!(loads, [1, 1, 1]);
        for id in 0..3 {
            net.finish(id, 9.0);
        }
        // A fourth pair after every flow left: the buffer holds only its route.
        net.start_flow(3, 3, 2, 8, link, 9.0);
        assert_eq!(net.route_buf.len(), 1);
        let stats = net.link_stats();
        let names: Vec<(&str, u64)> = stats.links.iter().map(|l| (l.name.as_str(), l.bytes)).collect();
        assert_eq!(names, [("r0->r1", 8), ("r2->r3", 8), ("r1->r0", 8), ("r3->r2", 8)]);
        assert_eq!(stats.reschedules, 0);
    }
}
