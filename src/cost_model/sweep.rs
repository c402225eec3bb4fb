//! The step recurrence of [`super::lockstep`] taken over the whole run at once rather
//! than step by step: the exact time of a step-synchronous program also where a rank
//! that ran ahead takes a port before a lagging peer's message of an earlier step.
//!
//! [`super::lockstep`] books a step's messages only after every earlier step's, and
//! gives up where the engine would have served a later step's message first. Here the
//! messages of every step wait together, and the model's rules (docs/model.md) are
//! applied as they read, instant by instant over the run:
//!
//! - a rank's stream enters step s when its step s-1 is over, at `d(s-1)`: it issues the
//!   step's sends then (windowed: at most `k` undelivered at once, the i-th once all but
//!   `k - 1` of those before it have landed) and posts the step's receives;
//! - at every instant at which a message is issued or a port frees, the issued messages
//!   still waiting take free ports greedily in priority order `(issue time, sender,
//!   sender's sequence)`; a message holds one out-port of the interface it leaves by and
//!   one in-port of the one it enters by for `alpha + m/B`;
//! - a received piece is ready at `max(arrival, post)`; a copy is then done, a reduction
//!   waits for the rank's one compute unit, which takes ready pieces in the order they
//!   became ready (at a tie, in the order of the engine's events that made them ready);
//! - the step is over once every receive is done (windowed: and every send has landed),
//!   plus its local reductions.
//!
//! Nothing here is chosen by an event order the model leaves open but two orders that
//! matter only where several streams share a rank (a single stream's step ends at the
//! same instant whichever piece goes first): the compute unit's at a tie, and a rank's
//! numbering of its streams' sends of one instant. The engine settles both by the order
//! its events of an instant run in, the order they were scheduled: a delivery when its
//! message started (ports go out after the instant's events, in priority order), a
//! reduction's end when it started on the unit. So here each step a stream enters
//! carries that event (`Event`), and a rank's sends of one instant are keyed by it
//! before stream and step (by stream alone, the keys gave the port to the wrong ring on a
//! 4 x 2 hierarchy of 2 NICs: the twenty-seventh trial). With latency-free links an
//! instant has several rounds of hand-out, which these events do not follow: several
//! streams give up there.
//!
//! The run is evaluated in time order: every time involved is a sum of the plan's own
//! costs, with the engine's floating-point operations in the engine's order along every
//! path, so it agrees with the engine to the last bit in practice.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};

use super::lockstep::{WORK_FLOOR, WORK_PER_MESSAGE};
use super::{Step, Xfer};
use crate::topology::Topology;

/// The most messages a run may have for [`sweep`] to evaluate it (it costs a few times
/// the run's own time); beyond it the caller falls back on bounds.
pub const SWEEP_LIMIT: usize = 400_000;

/// Bytes a sweep holds per message of the run ([`SWEEP_LIMIT`] at most), as the memory
/// estimate counts it: the message as the caller's plan holds it (grown by doubling) and
/// as the sweep reads it ([`Posted`]); its place among its sender's, its interfaces, its
/// receiver's count of receives and list of early arrivals in its step; its key in the
/// heap of those issued later (grown by doubling); and its receiver's job. A message
/// waits on one list at a time, so the lists of those waiting and arrived early are
/// counted in the job's and the heap's room.
pub const BYTES_PER_SWEPT_MESSAGE: u64 = (2 * std::mem::size_of::<(Xfer, usize)>()
    + 2 * std::mem::size_of::<usize>()
    + std::mem::size_of::<(u32, u32)>()
    + std::mem::size_of::<Vec<Early>>()
    + 2 * std::mem::size_of::<Key>()
    + std::mem::size_of::<Job>()) as u64;

/// Bytes [`sweep_steps`] holds per message of the plan it builds before it finds the
/// plan past [`SWEEP_LIMIT`] and gives up: the message, in a vector grown by doubling.
pub const BYTES_PER_PLANNED_MESSAGE: u64 = 2 * std::mem::size_of::<Xfer>() as u64;

/// The engine's event during which something happened, in the engine's order of the
/// events of one instant: `(bits of the instant it was scheduled at, a count whose top
/// bit is 0 while that instant's events ran and 1 while its ports were handed out)`. A
/// delivery is scheduled when its message starts, in the order the ports go out (the
/// count of starts); a reduction's end when it starts on the unit (the count of the
/// units' starts, compared only within a rank). [`NO_EVENT`] where one stream runs: its
/// order of events decides nothing.
type Event = (u64, u64);

/// The start of the run, and every event where a single stream runs.
const NO_EVENT: Event = (0, 0);

/// The top bit of an [`Event`]'s count: scheduled while ports were handed out.
const HAND_OUT: u64 = 1 << 63;

/// A message's place in the waiting set: `(issue time's bits, sender, the event in
/// which the sender's stream entered the step, (stream, step, index in the step) in
/// [`PLACE_BITS`] each)`; non-negative times order as their bits, and the event, stream,
/// step and index order a sender's messages as the engine numbers them: in the order it
/// ran the events that let its streams issue, a stream's own sends in program order.
/// (Packed, a key is the 40 bytes it was before it carried the event: `direct` at 256
/// ranks held 19% more memory with the three apart.)
type Key = (u64, usize, Event, u64);

/// Bits of each of a message's stream, step and index in its [`Key`].
const PLACE_BITS: u32 = 21;

// Every index of a step's message fits in its place.
const _: () = assert!(SWEEP_LIMIT < 1 << PLACE_BITS);

/// A message's key.
fn key_of(issue: f64, sender: usize, ev: Event, j: usize, s: usize, i: usize) -> Key {
    (issue.to_bits(), sender, ev, ((j as u64) << (2 * PLACE_BITS)) | ((s as u64) << PLACE_BITS) | i as u64)
}

/// A key's `(stream, step, index)`.
fn place(key: &Key) -> (usize, usize, usize) {
    let mask = (1u64 << PLACE_BITS) - 1;
    ((key.3 >> (2 * PLACE_BITS)) as usize, ((key.3 >> PLACE_BITS) & mask) as usize, (key.3 & mask) as usize)
}

/// A message that landed before its receive was posted: (end, bytes, reduce, key, the
/// event of its delivery).
type Early = (f64, u64, bool, Key, Event);

/// A piece waiting for a rank's compute unit: ready at `release` (bits), in the event
/// that made it ready (the engine's unit takes pieces in that order), the key of the
/// message that brought it, its stream, its bytes.
type Job = Reverse<(u64, Event, Key, usize, u64)>;

/// The event in which a piece that landed at `end` in `landed` is ready for a receive
/// posted at `post` in `posted`: the later of the two (at one instant, the one the
/// engine runs second).
fn ready_event(end: f64, landed: Event, post: f64, posted: Event) -> Event {
    if end > post {
        landed
    } else if end < post {
        posted
    } else {
        landed.max(posted)
    }
}

/// Receive done at `t` in event `ev`: the step's latest, at one instant the last run.
fn later(done: &mut f64, done_ev: &mut Event, t: f64, ev: Event) {
    if t > *done {
        (*done, *done_ev) = (t, ev);
    } else if t == *done && ev > *done_ev {
        *done_ev = ev;
    }
}

/// Where one stream of one rank is.
#[derive(Clone, Debug, Default)]
struct Cursor {
    /// The step it is in (`plan.len()`: done).
    step: usize,
    /// When the step began, `d(step - 1)`.
    post: f64,
    /// The event in which it began (that ended the step before).
    entry: Event,
    /// Receives of the step not yet done.
    need: usize,
    /// The latest end of a done receive of the step (and of a landed send, windowed).
    done: f64,
    /// The event of that end (at one instant, the last the engine runs).
    done_ev: Event,
    /// The step's sends of this rank (indices into the step's messages), how many of
    /// them are issued and started, the issue time of the last issued, and the ends of
    /// those started.
    sends: Vec<usize>,
    issued: usize,
    started: usize,
    last_issue: f64,
    ends: Vec<f64>,
}

/// One step of a stream whose messages may be received in a later step of their
/// receiver than the one they are sent in (a double-buffered ring sends a chunk two
/// steps ahead of its receive): each message with the receiver's step that posts its
/// receive, and the rank's local reductions after the step's receives.
#[derive(Clone, Debug, Default)]
pub struct Posted {
    /// Messages sent in this step (each sender's in its program order), each with the
    /// step (of the same stream) in which its receiver posts the receive.
    pub xfers: Vec<(Xfer, usize)>,
    /// `(rank, bytes)`: local reductions after the receives.
    pub local: Vec<(usize, u64)>,
}

/// The exact time of step-synchronous `streams` on `topo` with `c` seconds per byte
/// reduced: `streams[j][s]` is step s of stream j (every rank runs each stream's steps
/// in order, the streams side by side, sharing its ports and compute unit). With
/// `windowed`, a rank keeps at most `nics` of a step's sends undelivered and ends the
/// step once all have landed. Local reductions are allowed only in a single stream.
/// `None` where the run has more than [`SWEEP_LIMIT`] messages (or 2^21 streams, or
/// steps in a stream).
pub fn sweep(topo: &dyn Topology, c: f64, windowed: bool, streams: &[Vec<Step>]) -> Option<f64> {
    let posted: Vec<Vec<Posted>> = streams
        .iter()
        .map(|st| {
            st.iter()
                .enumerate()
                .map(|(s, step)| Posted {
                    xfers: step.xfers.iter().map(|&x| (x, s)).collect(),
                    local: step.local.clone(),
                })
                .collect()
        })
        .collect();
    sweep_posted(topo, c, windowed, &posted)
}

/// The looks at waiting messages a message [`sweep_posted`] may spend, beyond
/// [`WORK_FLOOR`]: four times the step recurrence's [`WORK_PER_MESSAGE`], as the sweep is
/// what gives the exact time where the recurrence gives up. `direct` with blocks of two
/// lengths on one NIC a rank takes about 21 a message at 64 ranks and 103 at 256 (so
/// about 200 at [`SWEEP_LIMIT`]'s 447); on 32 nodes of 8 GPUs sharing a NIC a node the
/// plain walks took 1,000 to 1,230 and gave up, the walks of lists kept by peer
/// interface (`Side::ByPeer`) keep within it. (Those counts are the plain walks', which
/// flat machines keep; looked up by pair of interfaces, `Pairs`, `direct` on a 16 x 16
/// hierarchy takes about 32 a message.)
pub const SWEEP_LOOKS_PER_MESSAGE: u64 = 4 * WORK_PER_MESSAGE;

/// [`sweep`] of streams whose messages name the step that receives them ([`Posted`]).
/// `None` also where its walks of the waiting lists would look at more messages than
/// `SWEEP_LOOKS_PER_MESSAGE` a message and `WORK_FLOOR`.
pub fn sweep_posted(topo: &dyn Topology, c: f64, windowed: bool, streams: &[Vec<Posted>]) -> Option<f64> {
    sweep_within(topo, c, windowed, streams, (WORK_FLOOR, SWEEP_LOOKS_PER_MESSAGE))
}

/// [`sweep_posted`] within a budget of looks at waiting messages: `(floor, per
/// message)`. Where many ranks share an interface (a GPU cluster's one NIC a node), a
/// receiver's list holds every message to its node, and the walk for one whose sender
/// may start went through most of it at every port that freed: `direct` on 32 nodes of
/// 8 GPUs with a NIC a node took 12 s here, for a run of 130,560 messages the engine
/// simulates in 2 (such lists are now kept by peer, `Side::ByPeer`). Counting looks,
/// not seconds, keeps the outcome the same on every machine.
fn sweep_within(
    topo: &dyn Topology,
    c: f64,
    windowed: bool,
    streams: &[Vec<Posted>],
    (floor, per_message): (u64, u64),
) -> Option<f64> {
    let np = topo.ranks();
    let total: usize = streams.iter().flat_map(|st| st.iter().map(|s| s.xfers.len())).sum();
    // Several streams: neither local reductions nor windows, whose events (a landed
    // send letting the next go) are not ordered here. A key holds a stream, step and
    // index in `PLACE_BITS` each (an index is below `SWEEP_LIMIT`).
    let too_many = |n: usize| n >> PLACE_BITS != 0;
    if total > SWEEP_LIMIT
        || too_many(streams.len())
        || streams.iter().any(|st| too_many(st.len()))
        || (streams.len() > 1 && (windowed || streams.iter().flatten().any(|s| !s.local.is_empty())))
    {
        return None;
    }
    let budget = floor.saturating_add(per_message.saturating_mul(total as u64));
    let looks = Cell::new(0u64);
    let ns = streams.len();
    // Per stream and step, the receives each rank waits for, and each rank's sends.
    let mut incoming: Vec<Vec<Vec<usize>>> = Vec::with_capacity(ns);
    for st in streams {
        let mut per = vec![vec![0usize; np]; st.len()];
        for step in st {
            for &(x, at) in &step.xfers {
                per.get_mut(at)?[x.to] += 1;
            }
        }
        incoming.push(per);
    }
    // Each step's messages by sender, program order within a sender.
    let by_sender: Vec<Vec<Vec<usize>>> = streams
        .iter()
        .map(|st| {
            st.iter()
                .map(|step| {
                    let mut order: Vec<usize> = (0..step.xfers.len()).collect();
                    order.sort_by_key(|&i| step.xfers[i].0.from);
                    order
                })
                .collect()
        })
        .collect();
    let sends_of = |j: usize, s: usize, r: usize| -> Vec<usize> {
        let (order, xfers) = (&by_sender[j][s], &streams[j][s].xfers);
        let lo = order.partition_point(|&i| xfers[i].0.from < r);
        let hi = order.partition_point(|&i| xfers[i].0.from <= r);
        order[lo..hi].to_vec()
    };
    // Arrivals before their receive is posted, by (stream, step, receiver): (end, bytes,
    // reduce, key).
    let mut early: Vec<Vec<Vec<Early>>> = streams.iter().map(|st| vec![Vec::new(); st.len() * np]).collect();
    let mut cur: Vec<Vec<Cursor>> = vec![vec![Cursor::default(); ns]; np];
    let faces = topo.interfaces();
    // Every message's interfaces (out, in), looked up once: a cluster's answer is a
    // division or two and a branch, and the walks below asked it at every look. An
    // interface that carries more than one rank's messages (a node's NIC shared by its
    // GPUs) makes the in-lists long, and then they are kept by sender's interface.
    let mut owner = vec![usize::MAX; faces];
    let mut shared = false;
    let routes: Vec<Vec<Vec<(u32, u32)>>> = streams
        .iter()
        .map(|st| {
            st.iter()
                .map(|step| {
                    step.xfers
                        .iter()
                        .map(|&(x, _)| {
                            let (oi, ii) = topo.route_interfaces(x.from, x.to);
                            for (face, rank) in [(oi, x.from), (ii, x.to)] {
                                match owner.get_mut(face) {
                                    Some(o) if *o == usize::MAX => *o = rank,
                                    Some(o) => shared |= *o != rank,
                                    None => shared = true,
                                }
                            }
                            (oi as u32, ii as u32)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let route = |key: &Key| {
        let (j, s, i) = place(key);
        let (oi, ii) = routes[j][s][i];
        (oi as usize, ii as usize)
    };
    // Looked up once: the topology's answers are not free (a hierarchy computes a
    // rank's level), and the loop below asks at every instant.
    let port_count: Vec<usize> = (0..faces).map(|i| topo.interface_ports(i).max(1) as usize).collect();
    let ports = |i: usize| port_count[i];
    let (mut out, mut inp): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (vec![Vec::new(); faces], vec![Vec::new(); faces]);
    // The waiting messages: those issued by `now` on the lists of the interfaces they
    // leave by (0) and enter by (1), in priority order; those issued later in `future`;
    // those just issued in `fresh`, sorted out before the ports are handed out.
    // The pair index where links differ or ranks share an interface: there few peers
    // are free at a hand-out, and a walk passes over most of a list. Where every pair
    // is alike (a fully connected machine) ports free in waves, many peers at once, and
    // the index's look at every free peer for the earliest message cost more than a walk
    // in priority order that stops at the first: `direct` on 446 ranks of 1 NIC took
    // about 0.6 P looks a message against 0.25 P, past the budget.
    let by_pair = shared || topo.uniform().is_none();
    let mut lists = match by_pair.then(|| Pairs::new(faces, &routes, total)).flatten() {
        Some(p) => Waiting::Pairs(p),
        None => Waiting::Lists(Side::new(faces, shared), Side::new(faces, shared)),
    };
    let mut future: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
    let mut fresh: Vec<Key> = Vec::new();
    let mut joining: Vec<Key> = Vec::new();
    let mut waiting = 0usize;
    let mut jobs: Vec<BinaryHeap<Job>> = vec![BinaryHeap::new(); np];
    let mut unit = vec![0.0f64; np];
    let mut end_max = 0.0f64;
    let mut dirty: Vec<(usize, usize)> = Vec::new();
    let windows: Vec<usize> =
        (0..np).map(|r| if windowed { topo.nics(r).max(1) as usize } else { usize::MAX }).collect();
    let window = |r: usize| windows[r];
    // What to look at when, instead of every rank and interface at every pass (which
    // made the run cost P times its messages): a rank's compute unit when a piece is
    // ready or the unit frees (`wakes`), a windowed sender when one of its sends lands
    // or it enters a step (`landed`, `entered`), an interface when a port of it frees
    // (`frees`). Each pass looks at those whose instant has come, in any order: what
    // one rank or interface does there touches no other's state.
    let mut wakes: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut landed: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut entered: Vec<usize> = Vec::new();
    let mut woken: Vec<usize> = Vec::new();
    let mut frees: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut seen = vec![0u64; np];
    let mut pass = 0u64;
    let mut ranks: Vec<usize> = Vec::new();
    // Interfaces changed since the last pass handed out ports (a port freed, a message
    // issued): only their lists can hold a message that starts now; every other waiting
    // message found one of its sides full then, and it still is. `free_senders` counts
    // the interfaces with an out-port free.
    let mut touched = vec![false; faces];
    let mut touched_list: Vec<usize> = Vec::new();
    let mut free_senders = faces;
    let mut offers: BinaryHeap<Reverse<(Key, usize, usize)>> = BinaryHeap::new();
    // The engine's order of a rank's events at one instant decides the order of its
    // streams' sends issued then, and of the pieces its unit takes: kept where several
    // streams share a rank. `starts` counts the messages started (the deliveries'
    // events are scheduled in that order), `unit_starts` the pieces started on units.
    let order_events = ns > 1;
    let (mut starts, mut unit_starts) = (0u64, 0u64);

    // Enter step `cur[r][j].step` at `post`; issue what it issues then.
    let enter = |r: usize,
                 j: usize,
                 cur: &mut [Vec<Cursor>],
                 early: &mut [Vec<Vec<Early>>],
                 fresh: &mut Vec<Key>,
                 jobs: &mut [BinaryHeap<Job>],
                 wakes: &mut BinaryHeap<Reverse<(u64, usize)>>,
                 dirty: &mut Vec<(usize, usize)>| {
        let cu = &mut cur[r][j];
        let s = cu.step;
        if s >= streams[j].len() {
            return 0;
        }
        cu.need = incoming[j][s][r];
        cu.done = cu.post;
        cu.done_ev = cu.entry;
        cu.sends = sends_of(j, s, r);
        cu.issued = cu.sends.len().min(window(r));
        cu.started = 0;
        cu.last_issue = cu.post;
        cu.ends.clear();
        for &i in &cu.sends[..cu.issued] {
            fresh.push(key_of(cu.post, r, cu.entry, j, s, i));
        }
        // Taken, not drained: a drained list kept its room (four arrivals at least) for
        // the rest of the run, at every step and rank that had one (`ring_chunked` at 200
        // ranks held 51 MB of them).
        for (end, bytes, reduce, key, landed) in std::mem::take(&mut early[j][s * np + r]) {
            let release = end.max(cu.post);
            let ev = ready_event(end, landed, cu.post, cu.entry);
            if reduce {
                jobs[r].push(Reverse((release.to_bits(), ev, key, j, bytes)));
                wakes.push(Reverse((release.to_bits(), r)));
            } else {
                later(&mut cu.done, &mut cu.done_ev, release, ev);
                cu.need -= 1;
            }
        }
        dirty.push((r, j));
        cu.issued
    };

    for r in 0..np {
        for j in 0..ns {
            waiting += enter(r, j, &mut cur, &mut early, &mut fresh, &mut jobs, &mut wakes, &mut dirty);
        }
        if windowed {
            entered.push(r);
        }
    }
    // Times are never negative: the run begins at 0.
    let mut now = 0.0f64;
    loop {
        // Everything that happens at `now`, until nothing more does: pieces start on
        // free compute units, steps end (and the next ones issue), windowed sends go,
        // and then waiting messages take free ports in priority order.
        loop {
            let mut changed = false;
            pass += 1;
            due_ranks(&mut wakes, now, &mut woken, &mut seen, pass, &mut ranks);
            for &r in &ranks {
                while unit[r] <= now {
                    let Some(&Reverse((bits, _, _, j, bytes))) = jobs[r].peek() else { break };
                    let release = f64::from_bits(bits);
                    if release > now {
                        break;
                    }
                    jobs[r].pop();
                    let start = unit[r].max(release);
                    // Its end is scheduled as it starts, among the events of that instant.
                    let ev = if order_events {
                        unit_starts += 1;
                        (start.to_bits(), unit_starts)
                    } else {
                        NO_EVENT
                    };
                    unit[r] = start + bytes as f64 * c;
                    wakes.push(Reverse((unit[r].to_bits(), r)));
                    let cu = &mut cur[r][j];
                    later(&mut cu.done, &mut cu.done_ev, unit[r], ev);
                    cu.need -= 1;
                    dirty.push((r, j));
                    changed = true;
                }
            }
            while let Some((r, j)) = dirty.pop() {
                let cu = &mut cur[r][j];
                let s = cu.step;
                if s >= streams[j].len() || cu.need > 0 || (windowed && cu.started < cu.sends.len()) {
                    continue;
                }
                let mut d = cu.done;
                if windowed {
                    d = cu.ends.iter().copied().fold(d, f64::max);
                }
                // Local reductions run on the compute unit after the receives (a single
                // stream's: its unit is idle by then).
                let mut local = false;
                for &(q, bytes) in &streams[j][s].local {
                    if q == r {
                        d += bytes as f64 * c;
                        local = true;
                    }
                }
                if local {
                    unit[r] = unit[r].max(d);
                    wakes.push(Reverse((unit[r].to_bits(), r)));
                }
                cu.step += 1;
                cu.post = d;
                cu.entry = cu.done_ev;
                end_max = end_max.max(d);
                waiting += enter(r, j, &mut cur, &mut early, &mut fresh, &mut jobs, &mut wakes, &mut dirty);
                if windowed {
                    entered.push(r);
                }
                changed = true;
            }
            if windowed {
                pass += 1;
                due_ranks(&mut landed, now, &mut entered, &mut seen, pass, &mut ranks);
                for &r in &ranks {
                    let k = window(r);
                    for (j, cu) in cur[r].iter_mut().enumerate() {
                        while cu.issued < cu.sends.len() && cu.step < streams[j].len() {
                            // All but k - 1 of the sends before it must have landed.
                            let need = cu.issued + 1 - k;
                            if cu.ends.iter().filter(|&&e| e <= now).count() < need {
                                break;
                            }
                            let mut done: Vec<f64> = cu.ends.iter().copied().filter(|&e| e <= now).collect();
                            done.sort_by(f64::total_cmp);
                            let at = cu.last_issue.max(done[need - 1]);
                            let i = cu.sends[cu.issued];
                            fresh.push(key_of(at, r, cu.entry, j, cu.step, i));
                            waiting += 1;
                            cu.last_issue = at;
                            cu.issued += 1;
                            changed = true;
                        }
                    }
                }
            }
            // As the engine runs every event of an instant before it hands out a port,
            // the ranks' side of the instant settles first: a step entered now may find
            // a piece that landed early and end at once (a reduction of no time: an
            // empty block, or C = 0), issuing a message of higher priority than one a
            // rank issued a pass before at the same instant. Handed out pass by pass,
            // the ports went to the earlier pass's message (halving-doubling's fold at
            // 149 ranks, one element: an alpha late).
            if changed {
                continue;
            }
            // Ports freed by now are dropped once per pass, before any is taken: a message
            // of no time taken in this pass holds its port until the next one.
            while let Some(&Reverse((bits, f))) = frees.peek() {
                if f64::from_bits(bits) > now {
                    break;
                }
                frees.pop();
                let full = out[f].len() >= ports(f);
                let held = out[f].len() + inp[f].len();
                out[f].retain(|&e| e > now);
                inp[f].retain(|&e| e > now);
                if full && out[f].len() < ports(f) {
                    free_senders += 1;
                }
                if out[f].len() + inp[f].len() < held && !touched[f] {
                    touched[f] = true;
                    touched_list.push(f);
                }
                if let Waiting::Pairs(p) = &mut lists {
                    p.set(FREE_OUT, f, out[f].len() < ports(f));
                    p.set(FREE_IN, f, inp[f].len() < ports(f));
                    p.set(TOUCHED, f, touched[f]);
                }
            }
            // The messages issued by now join their interfaces' lists.
            // Most are issued at the instant itself and join at once (their order of
            // joining makes no difference: each list is kept in priority order).
            for key in fresh.drain(..) {
                if f64::from_bits(key.0) > now {
                    future.push(Reverse(key));
                } else {
                    joining.push(key);
                }
            }
            while let Some(&Reverse(key)) = future.peek()
                && f64::from_bits(key.0) <= now
            {
                future.pop();
                joining.push(key);
            }
            for key in joining.drain(..) {
                let (oi, ii) = route(&key);
                lists.insert(oi, ii, key);
                if !touched[oi] {
                    touched[oi] = true;
                    touched_list.push(oi);
                    if let Waiting::Pairs(p) = &mut lists {
                        p.set(TOUCHED, oi, true);
                    }
                }
            }
            // The ports handed out in priority order to the messages that may start:
            // each changed interface offers its waiting messages in turn while it has a
            // port free on that side, the next once the one before was looked at. A
            // message on an in-list is offered only if its sender is unchanged and has
            // a port free: a changed sender's own list offers it, and a sender without
            // a free port cannot send. With no unchanged sender free, no in-list can
            // offer anything.
            let changed_free = touched_list.iter().filter(|&&f| out[f].len() < ports(f)).count();
            let clean_free = free_senders > changed_free;
            // An out-list walks to a receiver with a port free: a message passed over
            // would have been refused when popped (its receiver stays busy for the
            // pass), and each refusal was a pop, a push and a search of the list (5.5
            // million of them for `direct` on a 16 x 16 hierarchy). Where messages are
            // many for their interfaces, the pair index gives the same message
            // without a walk (`Pairs`).
            let next_offer =
                |side: usize, f: usize, after: Option<Key>, lists: &Waiting, out: &[Vec<f64>], inp: &[Vec<f64>]| {
                    lists.first_after(
                        side,
                        f,
                        after,
                        route,
                        (|o| !touched[o] && out[o].len() < ports(o), |i| inp[i].len() < ports(i)),
                        &looks,
                    )
                };
            offers.clear();
            for &f in &touched_list {
                if out[f].len() < ports(f)
                    && let Some(key) = next_offer(0, f, None, &lists, &out, &inp)
                {
                    offers.push(Reverse((key, 0, f)));
                }
                if clean_free
                    && inp[f].len() < ports(f)
                    && let Some(key) = next_offer(1, f, None, &lists, &out, &inp)
                {
                    offers.push(Reverse((key, 1, f)));
                }
            }
            while let Some(Reverse((key, side, f))) = offers.pop() {
                looks.set(looks.get() + 1);
                let from = key.1;
                let (j, s, i) = place(&key);
                let (x, at): (Xfer, usize) = streams[j][s].xfers[i];
                let (oi, ii) = route(&key);
                if out[oi].len() < ports(oi) && inp[ii].len() < ports(ii) && lists.remove(oi, ii, &key) {
                    waiting -= 1;
                    let link = topo.link(x.from, x.to);
                    let end = now + link.time(x.bytes as f64);
                    // Where streams share a rank, a link without latency gives bounds.
                    // The keys order a rank's sends of one instant by the engine's event
                    // that let each go, which is the engine's order where ports go out
                    // once an instant; without latency the instants of two streams meet
                    // often and a message of no time lets a stream enter its next step in
                    // a later round of an instant than the other's: with 2 NICs
                    // (`bidirectional_ring`, 5 ranks, 13 elements) rank 3's second ring
                    // entered step 5 at 2.56 ns before its first ring entered step 6, and
                    // the engine gave the port freed at 2.88 ns to the second ring's send.
                    // docs/model.md has what a narrower rule cost.
                    if ns > 1 && (end <= now || link.alpha == 0.0) {
                        return None;
                    }
                    // Its delivery is scheduled now, after those of the messages started
                    // before it (the engine hands ports out in this order too).
                    let delivery = if order_events {
                        starts += 1;
                        (now.to_bits(), HAND_OUT | starts)
                    } else {
                        NO_EVENT
                    };
                    out[oi].push(end);
                    inp[ii].push(end);
                    if let Waiting::Pairs(p) = &mut lists {
                        p.set(FREE_OUT, oi, out[oi].len() < ports(oi));
                        p.set(FREE_IN, ii, inp[ii].len() < ports(ii));
                    }
                    if out[oi].len() == ports(oi) {
                        free_senders -= 1;
                    }
                    frees.push(Reverse((end.to_bits(), oi)));
                    frees.push(Reverse((end.to_bits(), ii)));
                    end_max = end_max.max(end);
                    let cu = &mut cur[from][j];
                    cu.started += 1;
                    cu.ends.push(end);
                    if windowed {
                        dirty.push((from, j));
                        landed.push(Reverse((end.to_bits(), from)));
                    }
                    let b = x.to;
                    let rc = &mut cur[b][j];
                    if rc.step == at {
                        let release = end.max(rc.post);
                        let ev = ready_event(end, delivery, rc.post, rc.entry);
                        if x.reduce {
                            jobs[b].push(Reverse((release.to_bits(), ev, key, j, x.bytes)));
                            wakes.push(Reverse((release.to_bits(), b)));
                        } else {
                            later(&mut rc.done, &mut rc.done_ev, release, ev);
                            rc.need -= 1;
                            dirty.push((b, j));
                        }
                    } else {
                        early[j][at * np + b].push((end, x.bytes, x.reduce, key, delivery));
                    }
                    changed = true;
                }
                let free = if side == 0 { out[f].len() < ports(f) } else { inp[f].len() < ports(f) };
                if free {
                    let next = next_offer(side, f, Some(key), &lists, &out, &inp);
                    if let Some(next) = next {
                        offers.push(Reverse((next, side, f)));
                    }
                }
            }
            for f in touched_list.drain(..) {
                touched[f] = false;
                if let Waiting::Pairs(p) = &mut lists {
                    p.set(TOUCHED, f, false);
                }
            }
            if looks.get() > budget {
                return None;
            }
            if !changed {
                break;
            }
        }
        // The next instant at which anything can happen: the earliest of a port's
        // end, a piece ready or a unit free, a windowed send landed, a message issued.
        // Each of those is due after `now` (an instant ends only after a pass with
        // nothing to do, which drained all that was due and added nothing). A heap
        // of every such time beside these four held three entries a message, and its
        // pops and pushes were a tenth of `direct`'s sweep on a 16 x 16 hierarchy.
        let next = [frees.peek().map(|e| e.0.0), wakes.peek().map(|e| e.0.0), landed.peek().map(|e| e.0.0)]
            .into_iter()
            .chain([future.peek().map(|k| k.0.0)])
            .flatten()
            .min();
        match next {
            Some(bits) => now = f64::from_bits(bits),
            None => break,
        }
    }
    let finished = cur.iter().all(|row| row.iter().enumerate().all(|(j, cu)| cu.step >= streams[j].len()));
    if !finished || waiting > 0 {
        return None;
    }
    Some(unit.iter().copied().fold(end_max, f64::max))
}

/// The waiting messages on one side (the interfaces they leave by, or enter by), each
/// interface's in priority order.
enum Side {
    /// One list an interface, walked for the first message whose other side may take
    /// it: where every interface is one rank's, a list holds a message or two of each
    /// of the P - 1 peers at most, and the walk stops early.
    Walk(Vec<BTreeSet<Key>>),
    /// Where an interface is several ranks' (a node's GPUs sharing its NIC), its list
    /// holds every message waiting to leave or enter the node, thousands, most of them
    /// for a peer without a free port; so each interface keeps one list an interface
    /// on the other side, and in `heads` the first message of each, which are what is
    /// walked.
    ByPeer { lists: Vec<BTreeMap<usize, BTreeSet<Key>>>, heads: Vec<BTreeSet<Key>> },
}

impl Side {
    fn new(faces: usize, by_peer: bool) -> Self {
        if by_peer {
            Side::ByPeer { lists: vec![BTreeMap::new(); faces], heads: vec![BTreeSet::new(); faces] }
        } else {
            Side::Walk(vec![BTreeSet::new(); faces])
        }
    }

    /// `key` joins interface `face`'s list; `peer` is its interface on the other side.
    fn insert(&mut self, face: usize, peer: usize, key: Key) {
        match self {
            Side::Walk(lists) => {
                lists[face].insert(key);
            }
            Side::ByPeer { lists, heads } => {
                let list = lists[face].entry(peer).or_default();
                let old = list.first().copied();
                list.insert(key);
                if old.is_none_or(|h| key < h) {
                    if let Some(h) = old {
                        heads[face].remove(&h);
                    }
                    heads[face].insert(key);
                }
            }
        }
    }

    /// Takes `key` off `face`'s list; whether it was there.
    fn remove(&mut self, face: usize, peer: usize, key: &Key) -> bool {
        match self {
            Side::Walk(lists) => lists[face].remove(key),
            Side::ByPeer { lists, heads } => {
                let Some(list) = lists[face].get_mut(&peer) else { return false };
                let head = list.first() == Some(key);
                let was = list.remove(key);
                if was && head {
                    heads[face].remove(key);
                    match list.first() {
                        Some(&next) => {
                            heads[face].insert(next);
                        }
                        None => {
                            lists[face].remove(&peer);
                        }
                    }
                }
                was
            }
        }
    }

    /// The first message of `face`'s list after `after` whose interface on the other
    /// side (`peer`) `takes`, each message walked counted in `looks`, but for the one
    /// found where `passed_only`. `after` is the message the list offered last in this
    /// pass (`None`: none yet).
    ///
    /// Walking the heads finds what the whole list's walk finds: that message was the
    /// first of every peer still taking then, none of their lists has gained a message
    /// since (messages join between passes), and a peer that did not take then still
    /// does not (within a pass ports are only taken).
    fn first_after(
        &self,
        face: usize,
        after: Option<Key>,
        peer: impl Fn(&Key) -> usize,
        takes: impl Fn(usize) -> bool,
        looks: &Cell<u64>,
        passed_only: bool,
    ) -> Option<Key> {
        let list = match self {
            Side::Walk(lists) => &lists[face],
            Side::ByPeer { heads, .. } => &heads[face],
        };
        let found = list
            .range((after.map_or(Unbounded, Excluded), Unbounded))
            .find(|k| {
                looks.set(looks.get() + 1);
                takes(peer(k))
            })
            .copied();
        if passed_only && found.is_some() {
            looks.set(looks.get() - 1);
        }
        found
    }
}

/// The waiting messages, kept by interface on each side or by pair of interfaces.
enum Waiting {
    /// By the interfaces they leave by and enter by.
    Lists(Side, Side),
    /// By pair of interfaces.
    Pairs(Pairs),
}

impl Waiting {
    /// `key`, from interface `oi` to `ii`, waits.
    fn insert(&mut self, oi: usize, ii: usize, key: Key) {
        match self {
            Waiting::Lists(outs, ins) => {
                outs.insert(oi, ii, key);
                ins.insert(ii, oi, key);
            }
            Waiting::Pairs(p) => p.insert(oi, ii, key),
        }
    }

    /// `key`, from `oi` to `ii`, starts: whether it was waiting.
    fn remove(&mut self, oi: usize, ii: usize, key: &Key) -> bool {
        match self {
            Waiting::Lists(outs, ins) => outs.remove(oi, ii, key) && ins.remove(ii, oi, key),
            Waiting::Pairs(p) => p.remove(oi, ii, key),
        }
    }

    /// The first message after `after` of interface `face`'s list on side `side` (out
    /// `0`, in `1`) whose other side may take it: on an in-list, whose out-interface
    /// `sends`; on an out-list, whose in-interface `takes`. `route` gives a message's
    /// interfaces; the looks count in `looks`. (The pair index keeps the same two
    /// conditions in its rows of bits.)
    fn first_after(
        &self,
        side: usize,
        face: usize,
        after: Option<Key>,
        route: impl Fn(&Key) -> (usize, usize),
        (sends, takes): (impl Fn(usize) -> bool, impl Fn(usize) -> bool),
        looks: &Cell<u64>,
    ) -> Option<Key> {
        match self {
            // A plain out-list's walk stands for the offers it passes over: before it
            // walked, each was offered and refused, a look apiece, and the message
            // found is counted when offered. So it counts what it saves, a run on such
            // lists looks as often as it did then, and the budget ends it where it did.
            Waiting::Lists(outs, _) if side == 0 => {
                let plain = matches!(outs, Side::Walk(_));
                outs.first_after(face, after, |k| route(k).1, takes, looks, plain)
            }
            Waiting::Lists(_, ins) => ins.first_after(face, after, |k| route(k).0, sends, looks, false),
            Waiting::Pairs(p) => p.first(side, face, after, looks),
        }
    }
}

/// [`Pairs::set`]'s rows: interfaces with an out-port free, with an in-port free, and
/// changed since the last hand-out.
const FREE_OUT: usize = 0;
const FREE_IN: usize = 1;
const TOUCHED: usize = 2;

/// The waiting messages by pair of interfaces (out, in), for the walks that passed
/// over many messages whose other side was busy: `direct` on a 16 x 16 hierarchy of 2
/// NICs has about 20 of 256 in-interfaces free at a hand-out, and an interface's list
/// holds a message for each of up to 255 peers, so its walk for one whose peer is free
/// looked at about P messages, P^3 in all. Here an interface's next message whose peer
/// may take it is the earliest first message of the pairs set both in its row of peers
/// with a message waiting and in the row of peers free: a few words, and a look a free
/// peer with a message.
///
/// Kept where the table of pairs (a first message and a count a pair of interfaces)
/// is at most four entries a message (every rank to every other, or a node's NIC to
/// every other node's), on machines whose links differ or whose ranks share an
/// interface: where every pair is alike, many peers are free at once, and a walk in
/// priority order, which stops at the first, looks at fewer.
struct Pairs {
    faces: usize,
    words: usize,
    /// Each pair's first waiting message and how many wait behind it, at `out * faces +
    /// in`. Kept inline: with the lists apart, a look at a peer was three cache misses.
    heads: Vec<(Key, u32)>,
    /// The pair's number at `out * faces + in` (`u32::MAX` where no message goes) and,
    /// by number, the messages waiting behind its first, in priority order. Both sides
    /// of a pair are the same for all of them, so they start in that order: the first
    /// leaves first (but where a later pass of an instant issues one ahead of it).
    id: Vec<u32>,
    rest: Vec<VecDeque<Key>>,
    /// Per out-interface, bits of the in-interfaces it has a message waiting for; per
    /// in-interface, the out-interfaces.
    has: [Vec<u64>; 2],
    /// Rows of bits a word an interface: [`FREE_OUT`], [`FREE_IN`], [`TOUCHED`].
    rows: [Vec<u64>; 3],
}

impl Pairs {
    /// The index of the messages of `routes` on `faces` interfaces; `None` where the
    /// table of pairs would be larger than four entries a message.
    fn new(faces: usize, routes: &[Vec<Vec<(u32, u32)>>], total: usize) -> Option<Self> {
        if faces.saturating_mul(faces) > total.saturating_mul(4) {
            return None;
        }
        let words = faces.div_ceil(64);
        let mut id = vec![u32::MAX; faces * faces];
        let mut n = 0u32;
        for &(oi, ii) in routes.iter().flatten().flatten() {
            let at = &mut id[oi as usize * faces + ii as usize];
            if *at == u32::MAX {
                *at = n;
                n += 1;
            }
        }
        let mut all = vec![u64::MAX; words];
        if !faces.is_multiple_of(64) {
            all[words - 1] = (1 << (faces % 64)) - 1;
        }
        Some(Pairs {
            faces,
            words,
            heads: vec![(Key::default(), 0); faces * faces],
            id,
            rest: vec![VecDeque::new(); n as usize],
            has: [vec![0; faces * words], vec![0; faces * words]],
            rows: [all.clone(), all, vec![0; words]],
        })
    }

    /// Interface `face`'s bit of row `row` (`FREE_OUT`, `FREE_IN`, `TOUCHED`).
    fn set(&mut self, row: usize, face: usize, on: bool) {
        set_bit(&mut self.rows[row], face, on);
    }

    /// Whether pair `(oi, ii)` has a message waiting.
    fn waits(&self, oi: usize, ii: usize) -> bool {
        self.has[0][oi * self.words + ii / 64] >> (ii % 64) & 1 != 0
    }

    /// Marks pair `(oi, ii)` as having a message waiting or not.
    fn mark(&mut self, oi: usize, ii: usize, on: bool) {
        let words = self.words;
        set_bit(&mut self.has[0][oi * words..][..words], ii, on);
        set_bit(&mut self.has[1][ii * words..][..words], oi, on);
    }

    /// `key` (from `oi` to `ii`) waits.
    fn insert(&mut self, oi: usize, ii: usize, key: Key) {
        let at = oi * self.faces + ii;
        if !self.waits(oi, ii) {
            self.heads[at] = (key, 0);
            self.mark(oi, ii, true);
            return;
        }
        let (head, more) = self.heads[at];
        let rest = &mut self.rest[self.id[at] as usize];
        let key = if key < head {
            self.heads[at].0 = key;
            head
        } else {
            key
        };
        // Messages join mostly in priority order: at the back.
        if rest.back().is_none_or(|b| *b < key) {
            rest.push_back(key);
        } else {
            let i = rest.partition_point(|k| *k < key);
            rest.insert(i, key);
        }
        self.heads[at].1 = more + 1;
    }

    /// `key` (from `oi` to `ii`) starts: whether it was waiting.
    fn remove(&mut self, oi: usize, ii: usize, key: &Key) -> bool {
        let at = oi * self.faces + ii;
        if !self.waits(oi, ii) {
            return false;
        }
        let (head, more) = self.heads[at];
        if head == *key {
            if more == 0 {
                self.mark(oi, ii, false);
            } else if let Some(next) = self.rest[self.id[at] as usize].pop_front() {
                self.heads[at] = (next, more - 1);
            }
            return true;
        }
        if more == 0 {
            return false;
        }
        let rest = &mut self.rest[self.id[at] as usize];
        match rest.binary_search(key) {
            Ok(i) => {
                rest.remove(i);
                self.heads[at].1 = more - 1;
                true
            }
            Err(_) => false,
        }
    }

    /// The earliest message after `after` of interface `face`'s list on side `side`
    /// (out-lists `0`, in-lists `1`) whose other side may take it: an in-interface with
    /// a port free, or an out-interface unchanged since the last hand-out with one free.
    /// Each word and pair looked at counts in `looks`.
    fn first(&self, side: usize, face: usize, after: Option<Key>, looks: &Cell<u64>) -> Option<Key> {
        let words = self.words;
        let row = &self.has[side][face * words..][..words];
        let mut best: Option<Key> = None;
        let mut n = 0;
        for (w, &mine) in row.iter().enumerate() {
            let mut x =
                mine & if side == 0 { self.rows[FREE_IN][w] } else { self.rows[FREE_OUT][w] & !self.rows[TOUCHED][w] };
            n += 1;
            while x != 0 {
                let peer = w * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                n += 1;
                let at = if side == 0 { face * self.faces + peer } else { peer * self.faces + face };
                let (head, more) = self.heads[at];
                let mut first = Some(head);
                // The messages before `after` were offered or passed over in this pass,
                // and a peer that did not take then does not now: so where the heads
                // already hold such a message this is not reached. Kept exact anyway.
                if let Some(a) = after
                    && head <= a
                {
                    let rest = &self.rest[self.id[at] as usize];
                    first = if more == 0 { None } else { rest.get(rest.partition_point(|k| *k <= a)).copied() };
                }
                if let Some(k) = first
                    && best.is_none_or(|b| k < b)
                {
                    best = Some(k);
                }
            }
        }
        looks.set(looks.get() + n);
        best
    }
}

fn set_bit(v: &mut [u64], i: usize, on: bool) {
    if on {
        v[i / 64] |= 1 << (i % 64);
    } else {
        v[i / 64] &= !(1 << (i % 64));
    }
}

/// `ranks` becomes `pending` and then the ranks of `heap`'s entries due by `now` (popped),
/// each once, in that order; `seen[r] == pass` marks a rank taken in this pass. The wake-ups
/// and the landed windowed sends are drained alike.
fn due_ranks(
    heap: &mut BinaryHeap<Reverse<(u64, usize)>>,
    now: f64,
    pending: &mut Vec<usize>,
    seen: &mut [u64],
    pass: u64,
    ranks: &mut Vec<usize>,
) {
    ranks.clear();
    while let Some(&Reverse((bits, r))) = heap.peek() {
        if f64::from_bits(bits) > now {
            break;
        }
        heap.pop();
        pending.push(r);
    }
    for r in pending.drain(..) {
        if seen[r] != pass {
            seen[r] = pass;
            ranks.push(r);
        }
    }
}

/// [`sweep`] of one stream of `steps` steps, `fill(s, step)` describing step s (the
/// arguments of [`super::lockstep`]).
pub fn sweep_steps(
    topo: &dyn Topology,
    c: f64,
    steps: usize,
    windowed: bool,
    mut fill: impl FnMut(usize, &mut Step),
) -> Option<f64> {
    let mut plan = Vec::with_capacity(steps);
    let mut total = 0;
    for s in 0..steps {
        let mut step = Step::default();
        fill(s, &mut step);
        total += step.xfers.len();
        if total > SWEEP_LIMIT {
            return None;
        }
        plan.push(step);
    }
    sweep(topo, c, windowed, &[plan])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Link;

    /// `nodes` nodes of `gpus` GPUs: inside a node each GPU has its own interface, across
    /// nodes every GPU of a node goes through the node's one NIC (a one-port interface).
    #[derive(Debug)]
    struct SharedNic {
        nodes: usize,
        gpus: usize,
    }

    impl Topology for SharedNic {
        fn ranks(&self) -> usize {
            self.nodes * self.gpus
        }
        fn link(&self, a: usize, b: usize) -> Link {
            let bandwidth = if a / self.gpus == b / self.gpus { 4e11 } else { 5e10 };
            Link { alpha: 1e-6, bandwidth }
        }
        fn nics(&self, _rank: usize) -> u32 {
            1
        }
        fn best_link(&self) -> (Link, u32) {
            (Link { alpha: 1e-6, bandwidth: 4e11 }, 1)
        }
        fn interfaces(&self) -> usize {
            self.ranks() + self.nodes
        }
        fn interface_ports(&self, _i: usize) -> u32 {
            1
        }
        fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
            let (na, nb) = (a / self.gpus, b / self.gpus);
            if na == nb { (a, b) } else { (self.ranks() + na, self.ranks() + nb) }
        }
        fn describe(&self) -> String {
            "nodes sharing a NIC".into()
        }
    }

    /// Every rank sends a block to every other in one step, blocks of two lengths.
    fn all_to_all(np: usize) -> Vec<Vec<Posted>> {
        let xfers = (0..np)
            .flat_map(|from| {
                (1..np).map(move |k| {
                    let to = (from + k) % np;
                    (Xfer { from, to, bytes: if to.is_multiple_of(3) { 4004 } else { 4000 }, reduce: true }, 0)
                })
            })
            .collect();
        vec![vec![Posted { xfers, local: Vec::new() }]]
    }

    /// The sweep gives up past its budget of looks, and only then; where a node's GPUs
    /// share its NIC it keeps within it: a NIC's lists hold every message leaving or
    /// entering the node, and the walks of them for one whose other side is free (12 s
    /// at 256 ranks, then past the budget at 96) now look at one message a peer NIC.
    #[test]
    fn the_sweep_gives_up_past_its_budget_and_only_then() {
        let run = |nodes, gpus, budget| {
            let topo = SharedNic { nodes, gpus };
            sweep_within(&topo, 1e-11, false, &all_to_all(nodes * gpus), budget)
        };
        let whole = run(2, 3, (u64::MAX, 0));
        assert!(whole.is_some(), "6 ranks: the sweep holds");
        // No floor: the budget a message is enough for a few ranks.
        assert_eq!(run(2, 3, (0, SWEEP_LOOKS_PER_MESSAGE)), whole);
        // Every message is looked at at least once: one look for all of them is not.
        assert_eq!(run(2, 3, (1, 0)), None);
        // Nodes of eight: the walks keep within the budget a message.
        let whole = run(12, 8, (u64::MAX, 0));
        assert!(whole.is_some(), "unbounded, the sweep holds");
        assert_eq!(run(12, 8, (0, SWEEP_LOOKS_PER_MESSAGE)), whole);
    }

    /// `direct`'s two steps on `np` ranks as one stream: every rank sends 32 KiB to every
    /// other, added in the first step and copied in the second.
    fn all_to_all_steps(np: usize) -> Vec<Vec<Posted>> {
        let step = |s: usize| Posted {
            xfers: (0..np)
                .flat_map(|from| {
                    (1..np).map(move |k| (Xfer { from, to: (from + k) % np, bytes: 32768, reduce: s == 0 }, s))
                })
                .collect(),
            local: Vec::new(),
        };
        vec![vec![step(0), step(1)]]
    }

    /// `direct`'s two all-to-all steps on a hierarchy of 16 x 8 ranks of 2 NICs (links
    /// of two speeds, so the interfaces free out of turn): each interface that freed
    /// walked its list, a message for each of up to P - 1 peers, for one whose peer had
    /// a port free, and a sender's messages to busy receivers were offered and refused
    /// one by one; 65 to 96 looks a message here (P^3 in all). Looked up by pair of
    /// interfaces (`Pairs`), under 32; the time is the same.
    #[test]
    fn an_all_to_all_on_a_hierarchy_costs_a_few_looks_a_message() {
        use crate::topology::{Hierarchical, Level};
        let level = |size, alpha, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
        let topo = Hierarchical::new(vec![level(16, 0.7e-6, 150e9), level(8, 5e-6, 12.5e9)], 2).unwrap();
        let np = topo.ranks();
        let streams = all_to_all_steps(np);
        let whole = sweep_within(&topo, 0.05e-9, false, &streams, (u64::MAX, 0));
        assert!(whole.is_some(), "unbounded, the sweep holds");
        assert_eq!(sweep_within(&topo, 0.05e-9, false, &streams, (0, 32)), whole);
    }

    /// The same two steps on a fully connected machine of 1 NIC take the walks: every
    /// link alike, ports free in waves and many peers are free at once, where the pair
    /// index looked at each of them for the earliest message and a walk in priority
    /// order stops at the first. With the pair index `direct` on 446 ranks passed the
    /// budget the walks keep within (266 looks a message). Here, blocks of one length,
    /// the walks take one look a message and the pair index took 67.
    #[test]
    fn an_all_to_all_on_a_flat_machine_walks_its_lists() {
        use crate::topology::FullyConnected;
        let np = 128;
        let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 };
        let streams = all_to_all_steps(np);
        let whole = sweep_within(&topo, 0.0, false, &streams, (u64::MAX, 0));
        assert!(whole.is_some(), "unbounded, the sweep holds");
        assert_eq!(sweep_within(&topo, 0.0, false, &streams, (0, 8)), whole);
    }
}
