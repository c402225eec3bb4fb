//! The closed forms of `nccl_ring` and `nccl_tree` on any machine, GPU clusters
//! included (docs/nccl.md, "Time"): their schedules evaluated as recurrences in the
//! ideal model (docs/model.md), without the engine.
//!
//! Both algorithms run *streams*: a channel of `nccl_ring` at one rank, the up or the
//! down half of a channel of `nccl_tree` at one rank. A stream issues its sends in
//! program order, each when what it waits for is done, and the machine model says when
//! each starts: once its sender's outgoing side and its receiver's incoming side (of the
//! interfaces the topology routes it by, [`Topology::route_interfaces`]) both have a free
//! port. The recurrence books every stream's messages on a queue of its own per side:
//!
//! - on a side that one stream alone uses, the queue has all the side's k ports, and
//!   the stream's messages take them in program order (the model's priority order for
//!   one sender): that is exactly what the engine does, whatever the timing;
//! - on a side that u >= 2 streams use, each gets one port; with u <= k and no message
//!   ever waiting for its own stream's previous one there, at most u messages hold the
//!   side at once, so none waits for another stream's and every one starts when the
//!   recurrence says.
//!
//! Where a side has more streams than ports, or a message would have waited where the
//! argument above does not cover it, the order in which the engine serves the streams
//! sets the time, and the form is `None`. A received chunk that is added waits for its
//! receive to be posted and then takes `m C` on the receiver's compute unit, in the
//! order the chunks become ready; with several channels on one compute unit (C > 0)
//! that order is the engine's too, so the forms need C = 0 there.

use super::nccl_ring::{Receives, RingPlan};
use super::nccl_tree::{TreePlan, TreeSchedule};
use crate::sim::op::Action;
use crate::topology::{Link, Topology};

/// The most ports a stream's queue books; a side with more that one stream would fill
/// is outside the form.
const MAX_SERVERS: usize = 16;

/// One stream's queue on one side: the ends of its messages holding ports.
#[derive(Clone, Debug, Default)]
struct Queue {
    holding: Vec<f64>,
    /// Ports the stream may hold on this side in the recurrence.
    servers: usize,
    /// Whether waiting for a port of this queue leaves the form (shared side, or more
    /// ports than the queue books).
    no_wait: bool,
    /// The stream sends (or receives) through this side with more than one peer: a
    /// message that waits on its far side may be overtaken here by a later one.
    peers: u32,
    last_peer: usize,
}

impl Queue {
    /// When a port is free for the stream's next message.
    fn free(&self) -> f64 {
        if self.holding.len() < self.servers {
            return 0.0;
        }
        self.holding.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn take(&mut self, end: f64) {
        if self.holding.len() < self.servers {
            self.holding.push(end);
        } else if let Some(i) = (0..self.holding.len()).min_by(|&a, &b| self.holding[a].total_cmp(&self.holding[b])) {
            self.holding[i] = end;
        }
    }
}

/// The queues of every stream on every side, and the check of the form's conditions.
struct Sides<'a> {
    topo: &'a dyn Topology,
    /// `(side, stream)` to queue, sorted: side `2 i` is interface i's outgoing side,
    /// `2 i + 1` its incoming side.
    index: Vec<((usize, usize), usize)>,
    queues: Vec<Queue>,
}

impl<'a> Sides<'a> {
    /// The queues for `uses`: every `(sender stream, from, to)` that sends a message.
    /// `None` where a side has more streams than ports.
    fn new(topo: &'a dyn Topology, uses: &[(usize, usize, usize)]) -> Option<Sides<'a>> {
        let mut pairs: Vec<((usize, usize), usize)> = Vec::with_capacity(2 * uses.len());
        for &(stream, a, b) in uses {
            let (o, i) = topo.route_interfaces(a, b);
            pairs.push(((2 * o, stream), b));
            pairs.push(((2 * i + 1, stream), a));
        }
        pairs.sort_unstable();
        let mut index: Vec<((usize, usize), usize)> = Vec::new();
        let mut queues: Vec<Queue> = Vec::new();
        for (key, peer) in pairs {
            match index.last() {
                Some(&(k, q)) if k == key => {
                    let qu = &mut queues[q];
                    if qu.last_peer != peer {
                        qu.peers += 1;
                        qu.last_peer = peer;
                    }
                }
                _ => {
                    index.push((key, queues.len()));
                    queues.push(Queue { peers: 1, last_peer: peer, ..Queue::default() });
                }
            }
        }
        // Streams per side.
        let mut at = 0;
        while at < index.len() {
            let side = index[at].0.0;
            let end = at + index[at..].iter().take_while(|e| e.0.0 == side).count();
            let users = end - at;
            let ports = topo.interface_ports(side / 2).max(1) as usize;
            if users > ports {
                return None;
            }
            for e in &index[at..end] {
                let q = &mut queues[e.1];
                q.servers = if users == 1 { ports.min(MAX_SERVERS) } else { 1 };
                q.no_wait = users > 1 || ports > MAX_SERVERS;
            }
            at = end;
        }
        Some(Sides { topo, index, queues })
    }

    fn queue(&self, side: usize, stream: usize) -> usize {
        let at = self.index.partition_point(|e| e.0 < (side, stream));
        self.index[at].1
    }

    /// The queues of a message of `stream` from a to b.
    fn route(&self, stream: usize, a: usize, b: usize) -> (usize, usize, Link) {
        let (o, i) = self.topo.route_interfaces(a, b);
        (self.queue(2 * o, stream), self.queue(2 * i + 1, stream), self.topo.link(a, b))
    }

    /// Book a message issued at `issue` of `bytes` on queues `(out, inn)`; its start and
    /// end, or `None` where the form does not hold.
    fn send(&mut self, (out, inn, link): (usize, usize, Link), issue: f64, bytes: f64) -> Option<(f64, f64)> {
        let (fo, fi) = (self.queues[out].free(), self.queues[inn].free());
        let start = issue.max(fo).max(fi);
        // Waiting for a port where only the engine's order decides: on a shared side
        // (another stream might have had it), or on the far side while this side, which
        // serves the stream's messages to several peers, could go on with a later one.
        let (o, i) = (&self.queues[out], &self.queues[inn]);
        if (fo > issue && o.no_wait) || (fi > issue && i.no_wait) {
            return None;
        }
        if (fi > issue.max(fo) && o.peers > 1) || (fo > issue.max(fi) && i.peers > 1) {
            return None;
        }
        let end = start + link.time(bytes);
        self.queues[out].take(end);
        self.queues[inn].take(end);
        Some((start, end))
    }
}

/// A rank's compute unit: added chunks in the order they become ready. `None` from
/// [`Compute::add`] where that order is not the order the recurrence takes them in.
#[derive(Clone, Copy, Debug, Default)]
struct Compute {
    free: f64,
    last_ready: f64,
}

impl Compute {
    fn add(&mut self, ready: f64, r: f64) -> Option<f64> {
        if r > 0.0 {
            if ready < self.last_ready {
                return None;
            }
            self.last_ready = ready;
        }
        self.free = self.free.max(ready) + r;
        Some(self.free)
    }
}

/// `nccl_ring`'s time on `topo` with C = `c` (docs/nccl.md): every channel's 2(P-1)
/// steps per loop, slice by slice, each slice issued when the receive it waits for is
/// done, booked on its channel's queues at the sides of its hop. `None` where the
/// conditions of the module docs fail, and with several channels and C > 0.
pub(crate) fn ring_time(plan: &RingPlan, topo: &dyn Topology, c: f64) -> Option<f64> {
    let np = plan.np;
    if np <= 1 {
        return Some(0.0);
    }
    let channels = plan.channels;
    let live: Vec<usize> = (0..channels).filter(|&k| plan.items(k) > 0).collect();
    if live.len() > 1 && c > 0.0 {
        return None;
    }
    let hop = |k: usize, q: usize| (plan.rank_at(k, q), plan.rank_at(k, q + 1));
    let uses: Vec<(usize, usize, usize)> = live
        .iter()
        .flat_map(|&k| (0..np).map(move |q| (k, q)))
        .map(|(k, q)| {
            let (a, b) = hop(k, q);
            (k, a, b)
        })
        .collect();
    let mut sides = Sides::new(topo, &uses)?;
    let e = plan.elem_bytes as f64;
    let mut issue = vec![0.0f64; np];
    let mut recv = Receives::new(np, plan.slices);
    let mut arrive = vec![0.0f64; np];
    let mut compute = vec![Compute::default(); np];
    let mut routes = Vec::with_capacity(np);
    for &k in &live {
        issue.fill(0.0);
        recv.clear();
        compute.fill(Compute::default());
        routes.clear();
        for q in 0..np {
            let (a, b) = hop(k, q);
            routes.push(sides.route(k, a, b));
        }
        let ch = plan.channel(k);
        for at in ch.indices() {
            for q in 0..np {
                let it = ch.item(q, at);
                let (_, e_) = sides.send(routes[q], issue[q], it.send.len as f64 * e)?;
                arrive[(q + 1) % np] = e_;
            }
            for q in 0..np {
                let it = ch.item(q, at);
                // The receive is posted when the item is issued.
                let ready = arrive[q].max(issue[q]);
                let d = match it.action {
                    Action::Reduce => compute[q].add(ready, it.recv.len as f64 * e * c)?,
                    Action::Copy => ready,
                };
                recv.record(q, at.s, d, it.wait, &mut issue[q]);
            }
        }
    }
    Some(recv.end)
}

/// The `(W+1)`-th latest of a stream's delivery times: with `W` sends allowed
/// undelivered, when the next may be issued.
#[derive(Clone, Debug, Default)]
struct Window {
    latest: Vec<f64>,
}

impl Window {
    fn ready(&self, window: usize) -> f64 {
        if self.latest.len() <= window { 0.0 } else { self.latest[0] }
    }

    fn delivered(&mut self, t: f64, window: usize) {
        let at = self.latest.partition_point(|&x| x < t);
        self.latest.insert(at, t);
        if self.latest.len() > window + 1 {
            self.latest.remove(0);
        }
    }
}

/// `nccl_tree`'s time on `topo` with C = `c` (docs/nccl.md): per channel and chunk, the
/// up streams from the leaves to the root (add the children's chunks once they have
/// landed and the receives are posted, then send to the parent, at most `fifo - 1`
/// undelivered), then the down streams from the root (pass the chunk on to the children,
/// at most `fifo - 1` per child undelivered). Up then down
/// ([`TreeSchedule::UpThenDown`]): a rank's up and down halves are one stream, every
/// chunk up before any down, so its way down starts where its way up ended (its last
/// send to the parent issued, or the root's last addition). `None` where the
/// conditions of the module docs fail, and with several channels and C > 0.
pub(crate) fn tree_time(
    plan: &TreePlan,
    np: usize,
    elem_bytes: usize,
    fifo: usize,
    topo: &dyn Topology,
    c: f64,
) -> Option<f64> {
    if np <= 1 {
        return Some(0.0);
    }
    let live: Vec<usize> = (0..plan.channels).filter(|&k| plan.chunks(k) > 0).collect();
    if live.len() > 1 && c > 0.0 {
        return None;
    }
    // Streams: 2 (k np + r) up (the root's up stream also sends down), + 1 down; up then
    // down, the up stream sends down too.
    let one_stream = plan.schedule == TreeSchedule::UpThenDown;
    let up = |k: usize, r: usize| 2 * (k * np + r);
    let down_stream = |k: usize, r: usize| {
        if one_stream || plan.place(k, r).parent.is_none() { up(k, r) } else { up(k, r) + 1 }
    };
    let mut uses = Vec::new();
    for &k in &live {
        for r in 0..np {
            if let Some(p) = plan.place(k, r).parent {
                uses.push((up(k, r), r, p));
                let from = down_stream(k, p);
                uses.push((from, p, r));
            }
        }
    }
    let mut sides = Sides::new(topo, &uses)?;
    let e = elem_bytes as f64;
    let up_window = fifo - 1;
    // Ranks in an order with every child before its parent.
    let mut order: Vec<usize> = Vec::with_capacity(np);
    let mut end = 0.0f64;
    for &k in &live {
        let root = (0..np).find(|&r| plan.place(k, r).parent.is_none())?;
        order.clear();
        order.push(root);
        let mut at = 0;
        while at < order.len() {
            let r = order[at];
            order.extend(plan.place(k, r).children.iter().flatten());
            at += 1;
        }
        let kids = |r: usize| plan.place(k, r).children.iter().flatten().count();
        // Per rank: the up and down streams' clocks, their send windows, the compute unit,
        // and this chunk's down arrival from the parent and up arrivals at the parent.
        let mut up_at = vec![0.0f64; np];
        let mut down_at = vec![0.0f64; np];
        let mut up_win = vec![Window::default(); np];
        let mut down_win = vec![Window::default(); np];
        let mut compute = vec![Compute::default(); np];
        let (mut up_landed, mut down_landed) = (vec![0.0f64; np], vec![0.0f64; np]);
        let routes_up: Vec<Option<_>> =
            (0..np).map(|r| plan.place(k, r).parent.map(|p| sides.route(up(k, r), r, p))).collect();
        let routes_down: Vec<Vec<_>> = (0..np)
            .map(|r| {
                let s = down_stream(k, r);
                plan.place(k, r).children.iter().flatten().map(|&q| sides.route(s, r, q)).collect()
            })
            .collect();
        let chunks = plan.chunks(k);
        // Split, each chunk goes up and then down before the next (the streams are apart);
        // up then down, every chunk up (`chunks` rounds of the way up alone), then every
        // chunk down, each rank's way down from where its way up ended.
        let rounds: Vec<(usize, bool, bool)> = if one_stream {
            (0..chunks).map(|j| (j, true, false)).chain((0..chunks).map(|j| (j, false, true))).collect()
        } else {
            (0..chunks).map(|j| (j, true, true)).collect()
        };
        for (j, go_up, go_down) in rounds {
            if one_stream && go_down && j == 0 {
                down_at.copy_from_slice(&up_at);
            }
            let bytes = plan.chunk(k, j).len as f64 * e;
            // Up, children first: post the receives, add each child's chunk as it is ready.
            for &r in order.iter().rev().filter(|_| go_up) {
                let post = up_at[r];
                let mut t = post;
                for &q in plan.place(k, r).children.iter().flatten() {
                    let ready = up_landed[q].max(post);
                    t = t.max(compute[r].add(ready, bytes * c)?);
                }
                let n_kids = kids(r);
                match routes_up[r] {
                    Some(route) => {
                        t = t.max(up_win[r].ready(up_window));
                        let (_, d) = sides.send(route, t, bytes)?;
                        up_win[r].delivered(d, up_window);
                        up_landed[r] = d;
                    }
                    None if one_stream => {}
                    None => {
                        let w = up_window * n_kids;
                        t = t.max(up_win[r].ready(w));
                        for (i, &q) in plan.place(k, r).children.iter().flatten().enumerate() {
                            let (_, d) = sides.send(routes_down[r][i], t, bytes)?;
                            up_win[r].delivered(d, w);
                            end = end.max(d);
                            down_landed[q] = d;
                        }
                    }
                }
                up_at[r] = t;
                end = end.max(t);
            }
            // Down, parents first: the chunk from the parent, passed on to the children (up
            // then down, the root's own too).
            for &r in order.iter().filter(|_| go_down) {
                let root = plan.place(k, r).parent.is_none();
                if root && !one_stream {
                    continue;
                }
                let mut t = if root { down_at[r] } else { down_at[r].max(down_landed[r]) };
                let n_kids = kids(r);
                if n_kids > 0 {
                    let w = up_window * n_kids;
                    t = t.max(down_win[r].ready(w));
                    for (i, &q) in plan.place(k, r).children.iter().flatten().enumerate() {
                        let (_, d) = sides.send(routes_down[r][i], t, bytes)?;
                        down_win[r].delivered(d, w);
                        down_landed[q] = d;
                        end = end.max(d);
                    }
                }
                down_at[r] = t;
                end = end.max(t);
            }
        }
    }
    Some(end)
}

/// Why `nccl_ring` has no form on `topo` for lack of ports, if that is why: the first
/// interface side that more channels use than it has ports.
pub(crate) fn ring_contention(plan: &RingPlan, topo: &dyn Topology) -> Option<String> {
    let live: Vec<usize> = (0..plan.channels).filter(|&k| plan.items(k) > 0).collect();
    let mut uses: Vec<(usize, usize, usize)> = Vec::new();
    for &k in &live {
        for q in 0..plan.np {
            let (a, b) = (plan.rank_at(k, q), plan.rank_at(k, q + 1));
            let (o, i) = topo.route_interfaces(a, b);
            uses.push((2 * o, k, a));
            uses.push((2 * i + 1, k, b));
        }
    }
    uses.sort_unstable();
    uses.dedup_by_key(|u| (u.0, u.1));
    let mut at = 0;
    while at < uses.len() {
        let side = uses[at].0;
        let users = uses[at..].iter().take_while(|u| u.0 == side).count();
        let ports = topo.interface_ports(side / 2).max(1) as usize;
        if users > ports {
            let (dir, gpu) = (if side.is_multiple_of(2) { "outgoing" } else { "incoming" }, uses[at].2);
            let what = if side / 2 == gpu { format!("GPU {gpu}'s own") } else { format!("GPU {gpu}'s NIC") };
            return Some(format!(
                "{what} {dir} side carries {users} channels on {ports} port(s): the engine's order between them sets the time"
            ));
        }
        at += users;
    }
    None
}

// ---------------------------------------------------------------------------------------
// Bounds where there is no form (docs/nccl.md, "Bounds"). Both read the same schedule as
// the forms and apply two facts of the ideal model that hold whatever order the engine
// serves streams in:
//
// - every message holds one outgoing port of its sender's interface and one incoming
//   port of its receiver's for `alpha + m/B` of its pair, starts no earlier than it is
//   issued, and an added chunk takes `m C` on its receiver's one compute unit;
// - while the run is not over, something is always under way: a message on the wire or
//   an addition. (Were nothing under way, every unfinished stream would wait for a
//   receive whose message has not started; that message's ports are free, so it is not
//   yet issued, so its sender's stream waits too, and so on: a circle of waits that
//   never ends, which a program that finishes does not have.)
//
// Below: the largest of (a) any side's busy time over its ports, (b) any rank's additions,
// (c) the schedule's dependencies alone, every message starting when it is issued (by
// induction over the schedule, nothing in the real run happens sooner). Above: every
// message and addition of the run one after another, by the second fact.

/// The busy time of every interface side (`2 i` outgoing, `2 i + 1` incoming) and of
/// every rank's compute unit, and their sum, as messages and additions are booked.
struct Load<'a> {
    topo: &'a dyn Topology,
    sides: Vec<f64>,
    compute: Vec<f64>,
    total: f64,
}

impl<'a> Load<'a> {
    fn new(topo: &'a dyn Topology, np: usize) -> Self {
        Load { topo, sides: vec![0.0; 2 * topo.interfaces().max(np)], compute: vec![0.0; np], total: 0.0 }
    }

    /// A message from a to b taking `t`.
    fn message(&mut self, a: usize, b: usize, t: f64) {
        let (o, i) = self.topo.route_interfaces(a, b);
        for side in [2 * o, 2 * i + 1] {
            if side >= self.sides.len() {
                self.sides.resize(side + 1, 0.0);
            }
            self.sides[side] += t;
        }
        self.total += t;
    }

    /// An addition at rank r taking `t`.
    fn add(&mut self, r: usize, t: f64) {
        self.compute[r] += t;
        self.total += t;
    }

    /// The busiest side over its ports, or compute unit.
    fn busiest(&self) -> f64 {
        let sides = self
            .sides
            .iter()
            .enumerate()
            .map(|(s, &t)| t / f64::from(self.topo.interface_ports(s / 2).max(1)))
            .fold(0.0, f64::max);
        self.compute.iter().copied().fold(sides, f64::max)
    }
}

/// `nccl_ring`'s bounds on `topo` with C = `c`: below, the busiest side or compute unit
/// and every channel's schedule with no port or compute unit ever busy; above, every
/// message and addition one after another.
pub(crate) fn ring_bounds(plan: &RingPlan, topo: &dyn Topology, c: f64) -> (f64, f64) {
    let np = plan.np;
    if np <= 1 {
        return (0.0, 0.0);
    }
    let e = plan.elem_bytes as f64;
    let mut load = Load::new(topo, np);
    let mut chain = 0.0f64;
    let mut issue = vec![0.0f64; np];
    let mut sent = vec![0.0f64; np];
    let mut arrive = vec![0.0f64; np];
    let mut recv = Receives::new(np, plan.slices);
    let mut links = Vec::with_capacity(np);
    for k in (0..plan.channels).filter(|&k| plan.items(k) > 0) {
        issue.fill(0.0);
        sent.fill(0.0);
        recv.clear();
        links.clear();
        links.extend((0..np).map(|q| (plan.rank_at(k, q), plan.rank_at(k, q + 1))));
        let ch = plan.channel(k);
        for at in ch.indices() {
            for q in 0..np {
                let (a, b) = links[q];
                let t = topo.link(a, b).time(ch.item(q, at).send.len as f64 * e);
                load.message(a, b, t);
                // A serial channel sends only once its previous slice has arrived.
                let start = if plan.serial { issue[q].max(sent[q]) } else { issue[q] };
                sent[q] = start + t;
                arrive[(q + 1) % np] = sent[q];
            }
            for q in 0..np {
                let it = ch.item(q, at);
                let ready = arrive[q].max(issue[q]);
                let d = match it.action {
                    Action::Reduce => {
                        let r = it.recv.len as f64 * e * c;
                        load.add(links[q].0, r);
                        ready + r
                    }
                    Action::Copy => ready,
                };
                recv.record(q, at.s, d, it.wait, &mut issue[q]);
            }
        }
        chain = chain.max(recv.end);
    }
    (chain.max(load.busiest()), load.total)
}

/// `nccl_tree`'s bounds on `topo` with C = `c`: below, the busiest side or compute unit,
/// and for each channel the path of its largest chunk from each rank up to the root
/// (each hop and the addition at its end) and back down to it; above, every message and
/// addition one after another.
pub(crate) fn tree_bounds(plan: &TreePlan, np: usize, elem_bytes: usize, topo: &dyn Topology, c: f64) -> (f64, f64) {
    let e = elem_bytes as f64;
    let mut load = Load::new(topo, np);
    let mut chain = 0.0f64;
    for k in (0..plan.channels).filter(|&k| plan.chunks(k) > 0) {
        let parents: Vec<Option<usize>> = (0..np).map(|r| plan.place(k, r).parent).collect();
        for j in 0..plan.chunks(k) {
            let bytes = plan.chunk(k, j).len as f64 * e;
            for (r, p) in parents.iter().enumerate() {
                if let Some(p) = *p {
                    load.message(r, p, topo.link(r, p).time(bytes));
                    load.add(p, bytes * c);
                    load.message(p, r, topo.link(p, r).time(bytes));
                }
            }
        }
        // Chunk 0 is the largest: its trip from every rank to the root and back.
        let bytes = plan.chunk(k, 0).len as f64 * e;
        for r in 0..np {
            let (mut at, mut trip) = (r, 0.0);
            while let Some(p) = parents[at] {
                trip += topo.link(at, p).time(bytes) + bytes * c + topo.link(p, at).time(bytes);
                at = p;
            }
            chain = chain.max(trip);
        }
    }
    (chain.max(load.busiest()), load.total)
}
