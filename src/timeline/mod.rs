//! What happened when: every message and reduction of one run as intervals, recorded by
//! an [`Observer`], and what is derived from them: the Chrome trace of `run --trace`
//! ([`trace`]), per-link byte counters and the critical path ([`critical`]).
//!
//! The engine has no port identities, only counts of free ports, so the [`Recorder`]
//! gives each message a port *track*: at its start, the lowest-numbered track of that
//! direction on that rank that is free (its last message ended at or before the start).
//! The engine never has more than `nics` messages in flight per direction, so a rank
//! never uses more tracks than it has ports, and the assignment depends only on the
//! (deterministic) schedule.
//!
//! When a run records: `run --trace`, the Gantt charts and `explain`, never beyond
//! [`MAX_INTERVALS`] intervals. The link counters and the critical path that every point of
//! at most [`DETAIL_MAX_RANKS`] ranks and a run of a single point report need no
//! recording: [`PathTracker`] finds them as the run goes, in memory that grows with the
//! ranks, and with the path's steps with the intervals on chains that may still be listed. They are left out where a recording would have outgrown
//! [`MAX_INTERVALS`] (the algorithm's exact message count is above it,
//! [`crate::estimate::timeline_overflows`], or the run turns out longer), as before the
//! tracker existed. Without an observer the hooks compile to nothing.

pub mod critical;
pub mod trace;

use std::collections::BTreeMap;

use crate::results::PointResult;
use crate::sim::engine::{MessageInfo, Observer};
use crate::sim::op::Rank;

pub use critical::{CriticalPath, PathStep, PathTracker, StepKind, WaitedFor};

/// Runs of at most this many ranks get the per-rank byte counters, link counters and
/// the critical path in every point of a sweep (a single-point run always gets the last
/// two).
pub const DETAIL_MAX_RANKS: usize = 64;

/// A recording stops (and its derived fields are left out) past this many intervals,
/// to bound memory (about 60 MB).
pub const MAX_INTERVALS: usize = 1_000_000;

/// One message as it occupied its ports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageRecord {
    /// Sender.
    pub src: Rank,
    /// Receiver.
    pub dst: Rank,
    /// Tag.
    pub tag: u32,
    /// Payload, bytes.
    pub bytes: u64,
    /// When the sender issued it, seconds.
    pub issued: f64,
    /// When it took its ports, seconds.
    pub start: f64,
    /// When it was delivered and freed its ports, seconds.
    pub end: f64,
    /// The sender's outgoing-port track it used (`0..nics`).
    pub out_port: u32,
    /// The receiver's incoming-port track it used (`0..nics`).
    pub in_port: u32,
    /// Order in which the engine scheduled it among all intervals.
    pub seq: u64,
}

/// One reduction on a rank's compute unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeRecord {
    /// The rank.
    pub rank: Rank,
    /// Bytes reduced.
    pub bytes: u64,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// Order in which the engine scheduled it among all intervals.
    pub seq: u64,
}

/// Every interval of one run, in the order the engine scheduled them (non-decreasing
/// start times).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// P.
    pub ranks: usize,
    /// Ports per rank, as the topology says (empty if unknown: then the tracks used).
    pub nics: Vec<u32>,
    /// Messages.
    pub messages: Vec<MessageRecord>,
    /// Reductions.
    pub computes: Vec<ComputeRecord>,
    /// Under the flow model: the links used and their loads over time.
    pub links: Option<LinkLoads>,
}

impl Timeline {
    /// The latest end of any interval: the simulated time of the run.
    pub fn end(&self) -> f64 {
        let m = self.messages.iter().map(|m| m.end);
        let c = self.computes.iter().map(|c| c.end);
        m.chain(c).fold(0.0, f64::max)
    }

    /// Bytes carried by each ordered pair of ranks (src, dst) that carried any, in
    /// (src, dst) order. A "link" here is the logical connection between two ranks:
    /// in the ideal model a message holds one port at each end and nothing between.
    pub fn link_bytes(&self) -> BTreeMap<(Rank, Rank), u64> {
        let mut out = BTreeMap::new();
        for m in &self.messages {
            *out.entry((m.src, m.dst)).or_insert(0) += m.bytes;
        }
        out
    }

    /// The busiest link: `((src, dst), bytes)`, the lowest pair on ties; `None` with no
    /// messages.
    pub fn busiest_link(&self) -> Option<((Rank, Rank), u64)> {
        self.link_bytes().into_iter().fold(None, |best, (k, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((k, v)),
        })
    }
}

/// Fill `r`'s link counters and critical path from its run's timeline `t`; the path's
/// steps only with `steps`.
pub fn annotate(r: &mut PointResult, t: &Timeline, steps: bool) {
    let links = t.link_bytes();
    r.link_bytes_max = Some(links.values().copied().max().unwrap_or(0));
    r.links_used = Some(links.len() as u64);
    r.critical_path = critical::critical_path(t, steps);
}

/// An [`Observer`] that records a [`Timeline`], up to [`MAX_INTERVALS`] intervals.
#[derive(Debug)]
pub struct Recorder {
    timeline: Timeline,
    /// Per rank, per outgoing track: when its last message ends.
    out_busy: Vec<Vec<f64>>,
    /// Per rank, per incoming track: when its last message ends.
    in_busy: Vec<Vec<f64>>,
    seq: u64,
    overflow: bool,
    /// Under the flow model, per engine message handle: the record of the message in
    /// flight under it, whose end is not known yet.
    open: Vec<u32>,
    /// The flow model's links and their loads, when the run had them.
    links: Option<LinkLoads>,
    /// Whether to keep the links' loads (they cost memory per rate change).
    want_loads: bool,
}

/// The flow model's links as a timeline shows them: each used link and every change of
/// its load.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkLoads {
    /// The links, in the order first crossed.
    pub links: Vec<crate::sim::flow::LinkStat>,
    /// `(index into links, time, share of capacity in use)`, in time order.
    pub loads: Vec<(u32, f64, f64)>,
}

/// The lowest track free at `t` (its last interval ended at or before `t`), now busy
/// until `end`; a new track if all are busy.
fn take_track(tracks: &mut Vec<f64>, t: f64, end: f64) -> u32 {
    let i = match tracks.iter().position(|&busy| busy <= t) {
        Some(i) => i,
        None => {
            tracks.push(0.0);
            tracks.len() - 1
        }
    };
    tracks[i] = end;
    i as u32
}

impl Recorder {
    /// A recorder for `ranks` ranks (the timeline's `nics` is left for the caller). If
    /// its per-rank tables cannot be allocated it records nothing, as one that
    /// outgrew [`MAX_INTERVALS`]: [`Recorder::finish`] gives `None`.
    pub fn new(ranks: usize) -> Self {
        let table = || {
            let mut t: Vec<Vec<f64>> = Vec::new();
            crate::process::fallible(|| t.try_reserve_exact(ranks)).ok()?;
            t.resize(ranks, Vec::new());
            Some(t)
        };
        let (out_busy, in_busy) = match (table(), table()) {
            (Some(o), Some(i)) => (o, i),
            _ => (Vec::new(), Vec::new()),
        };
        let overflow = out_busy.len() != ranks;
        Recorder {
            timeline: Timeline { ranks, nics: Vec::new(), messages: Vec::new(), computes: Vec::new(), links: None },
            out_busy,
            in_busy,
            seq: 0,
            overflow,
            open: Vec::new(),
            links: None,
            want_loads: false,
        }
    }

    /// Also keep, under the flow model, every change of every link's load (for the
    /// trace's counter tracks).
    pub fn with_link_loads(mut self) -> Self {
        self.want_loads = true;
        self
    }

    /// The timeline, or `None` if it outgrew [`MAX_INTERVALS`].
    pub fn finish(mut self) -> Option<Timeline> {
        self.timeline.links = self.links.take();
        (!self.overflow).then_some(self.timeline)
    }

    fn full(&mut self) -> bool {
        if self.timeline.messages.len() + self.timeline.computes.len() >= MAX_INTERVALS {
            self.overflow = true;
            self.timeline.messages = Vec::new();
            self.timeline.computes = Vec::new();
        }
        self.overflow
    }
}

impl Observer for Recorder {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        if self.overflow || self.full() {
            return;
        }
        let out_port = take_track(&mut self.out_busy[m.src as usize], start, end);
        let in_port = take_track(&mut self.in_busy[m.dst as usize], start, end);
        if end.is_infinite() {
            let id = m.id as usize;
            if self.open.len() <= id {
                self.open.resize(id + 1, u32::MAX);
            }
            self.open[id] = self.timeline.messages.len() as u32;
        }
        self.timeline.messages.push(MessageRecord {
            src: m.src,
            dst: m.dst,
            tag: m.tag,
            bytes: m.bytes,
            issued: m.issued,
            start,
            end,
            out_port,
            in_port,
            seq: self.seq,
        });
        self.seq += 1;
    }

    fn message_end(&mut self, m: &MessageInfo, end: f64) {
        if self.overflow {
            return;
        }
        let Some(&i) = self.open.get(m.id as usize) else { return };
        let Some(rec) = self.timeline.messages.get_mut(i as usize) else { return };
        rec.end = end;
        self.out_busy[rec.src as usize][rec.out_port as usize] = end;
        self.in_busy[rec.dst as usize][rec.in_port as usize] = end;
    }

    fn wants_link_loads(&self) -> bool {
        self.want_loads
    }

    fn link_loads(&mut self, links: &[crate::sim::flow::LinkStat], loads: Vec<(u32, f64, f64)>) {
        self.links = Some(LinkLoads { links: links.to_vec(), loads });
    }

    fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
        if self.overflow || self.full() {
            return;
        }
        self.timeline.computes.push(ComputeRecord { rank, bytes, start, end, seq: self.seq });
        self.seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(src: Rank, dst: Rank) -> MessageInfo {
        MessageInfo { id: 0, src, dst, tag: 0, bytes: 8, issued: 0.0 }
    }

    #[test]
    fn tracks_are_the_lowest_free() {
        let mut r = Recorder::new(3);
        r.message(&info(0, 1), 0.0, 2.0);
        r.message(&info(0, 2), 0.0, 1.0);
        r.message(&info(0, 1), 1.0, 3.0); // track 1 freed at 1.0
        r.message(&info(0, 2), 2.0, 3.0); // track 0 freed at 2.0
        let t = r.finish().unwrap();
        let out: Vec<u32> = t.messages.iter().map(|m| m.out_port).collect();
        assert_eq!(out, [0, 1, 1, 0]);
        let inp: Vec<u32> = t.messages.iter().map(|m| m.in_port).collect();
        assert_eq!(inp, [0, 0, 1, 0]);
        assert_eq!(t.busiest_link(), Some(((0, 1), 16)));
        assert_eq!(t.end(), 3.0);
    }
}
