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

use serde::{Deserialize, Serialize};

use super::Timeline;
use crate::sim::op::Rank;

/// Chains longer than this are summarised without their steps.
pub const MAX_STEPS: usize = 512;

/// What a step of the critical path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A message (`rank` -> `peer`).
    Message,
    /// A reduction on `rank`'s compute unit.
    Reduce,
}

/// Why a step of the critical path started when it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitedFor {
    /// Nothing: the first link of the chain.
    Start,
    /// The previous step's data (a delivered message, a finished reduction).
    Data,
    /// The compute unit, busy with the previous reduction.
    ComputeUnit,
    /// The sender's outgoing port, busy with the previous message.
    OutPort,
    /// The receiver's incoming port, busy with the previous message.
    InPort,
    /// The sender's send window: one of its earlier messages had to land first.
    FlowControl,
}

/// One link of the critical path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathStep {
    /// Message or reduction.
    pub kind: StepKind,
    /// The sender, or the reducing rank.
    pub rank: Rank,
    /// The receiver of a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Rank>,
    /// The message's tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<u32>,
    /// Bytes moved or reduced.
    pub bytes: u64,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
    /// What it waited for (see the module docs).
    pub waited_for: WaitedFor,
}

/// The chain of operations that set the finishing time (see the module docs for the rule).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    /// Messages on the chain.
    pub messages: u64,
    /// Reductions on the chain.
    pub reductions: u64,
    /// Time the chain spends in messages, seconds.
    pub transfer_s: f64,
    /// Time the chain spends in reductions, seconds.
    pub compute_s: f64,
    /// Time before the chain's first link starts, seconds.
    pub idle_s: f64,
    /// The chain, first to last; left out when longer than [`MAX_STEPS`] or not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<PathStep>>,
}

impl CriticalPath {
    /// `transfer_s` as a fraction of the whole time (0 for an empty run).
    pub fn transfer_fraction(&self) -> f64 {
        let total = self.transfer_s + self.compute_s + self.idle_s;
        if total > 0.0 { self.transfer_s / total } else { 0.0 }
    }

    /// `14 messages, 7 reductions, 86% transfer`.
    pub fn summary(&self) -> String {
        let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{}, {}, {:.0}% transfer",
            plural(self.messages, "message", "messages"),
            plural(self.reductions, "reduction", "reductions"),
            self.transfer_fraction() * 100.0
        )
    }
}

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
    let lo = list.partition_point(|&i| end(i) < t);
    list[lo..]
        .iter()
        .copied()
        .take_while(|&i| end(i) == t)
        .filter(|&i| seq(i) < before && ok(i))
        .max_by_key(|&i| seq(i))
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

    #[test]
    fn empty_run_has_none() {
        assert!(critical_path(&Timeline::default(), true).is_none());
    }
}
