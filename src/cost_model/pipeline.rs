//! Exact recurrences for pipelines whose pieces differ in size: a one-way ring over any
//! chunks and pieces, and the pipelined binomial tree on any number of NICs. Both are
//! read off the algorithm's program and the machine model's rules (docs/model.md), one
//! message at a time, and never run the engine.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Hockney;

/// A reduction waiting for a rank's compute unit: ready at `release`, item `item`
/// (program order), `dur` seconds. Ordered so that a `BinaryHeap` pops the earliest
/// release first, program order at a tie.
#[derive(Clone, Copy, Debug)]
struct Job {
    release: f64,
    item: usize,
    dur: f64,
}

impl PartialEq for Job {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Job {}
impl PartialOrd for Job {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Job {
    fn cmp(&self, o: &Self) -> Ordering {
        o.release.total_cmp(&self.release).then(o.item.cmp(&self.item))
    }
}

/// The index of the earliest-free of `servers`.
fn earliest(servers: &[f64]) -> usize {
    servers.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

/// The time of a one-way ring program (`ring`'s [`crate::algos`] program): every rank
/// runs the same `items` items in order; in item i it sends `bytes(i, q)` bytes to its
/// right neighbour (q is the sender) and posts the receive of item i from its left,
/// which it adds (`reduce(i)`) or copies. Item i is issued once item i-1 was and the
/// receive of item `i - window` is done (`window` is the number of pieces per chunk:
/// piece j of a stage waits only for piece j of the stage before).
///
/// Why this is exact, for any chunk and piece sizes: a rank's outgoing ports carry only
/// its messages to its right neighbour, and that neighbour's incoming ports only those
/// same messages, so the k port pairs of a link are k servers that nothing else wants,
/// taking the link's messages in issue order (which is program order). A message's
/// receive is posted at its item's issue on the receiver, so it can be added from
/// `max(arrival, post)`; the one compute unit adds in that order, program order at a
/// tie. A reduction of item i is known once every job that could come before it is:
/// items issued later are posted no earlier than the receive of item `i` completes
/// (the program waits for it), so the jobs of items below `i + window` decide it.
pub fn ring_items(
    np: usize,
    h: &Hockney,
    items: usize,
    window: usize,
    reduce: impl Fn(usize) -> bool,
    bytes: impl Fn(usize, usize) -> f64,
) -> f64 {
    if np <= 1 || items == 0 {
        return 0.0;
    }
    let window = window.max(1);
    let k = h.nics.max(1) as usize;
    // Only the last `window` items of a rank can still be waited for, so the state is a
    // ring of `window + 1` slots per rank (NaN: not yet added), not one per item.
    let slots = window + 1;
    let mut issue = vec![0.0f64; np];
    let mut done = vec![f64::NAN; np * slots];
    let mut ports = vec![0.0f64; np * k];
    let mut heaps: Vec<BinaryHeap<Job>> = vec![BinaryHeap::new(); np];
    let mut compute = vec![0.0f64; np];
    let mut end = 0.0f64;
    // Completes reductions at rank q in release order until item `i` is done.
    let mut settle = |q: usize, i: usize, done: &mut [f64], heaps: &mut [BinaryHeap<Job>], end: &mut f64| {
        while done[q * slots + i % slots].is_nan() {
            let Some(job) = heaps[q].pop() else { break };
            compute[q] = compute[q].max(job.release) + job.dur;
            done[q * slots + job.item % slots] = compute[q];
            *end = end.max(compute[q]);
        }
        done[q * slots + i % slots]
    };
    for i in 0..items {
        for (q, at) in issue.iter_mut().enumerate() {
            if i >= window {
                *at = at.max(settle(q, i - window, &mut done, &mut heaps, &mut end));
            }
        }
        for q in 0..np {
            // The slot item i takes was item i - window - 1's, long since waited for.
            done[q * slots + i % slots] = f64::NAN;
        }
        for q in 0..np {
            let to = (q + 1) % np;
            let mine = &mut ports[q * k..(q + 1) * k];
            let port = earliest(mine);
            let b = bytes(i, q);
            let arrive = issue[q].max(mine[port]) + h.t(b);
            mine[port] = arrive;
            let release = arrive.max(issue[to]);
            if reduce(i) {
                heaps[to].push(Job { release, item: i, dur: h.r(b) });
            } else {
                done[to * slots + i % slots] = release;
                end = end.max(release);
            }
        }
    }
    for (q, heap) in heaps.iter_mut().enumerate() {
        while let Some(job) = heap.pop() {
            compute[q] = compute[q].max(job.release) + job.dur;
            end = end.max(compute[q]);
        }
    }
    end
}

/// The pipelined binomial tree (`binomial_tree` with `segments` > 1) on any number of
/// NICs k, the vector in `segments` pieces of `seg(s)` bytes. Exact, from the program:
///
/// - **Up.** A rank adds its children's piece s one child at a time, in its children's
///   order (each receive is posted once the one before is added), then, once its piece
///   s-1 has landed at its parent, sends piece s up. A parent's incoming ports are the
///   only resource its children's pieces compete for: a child's outgoing ports carry
///   nothing else while pieces go up (one at a time: it waits for the last to land), and
///   nothing comes down before the root has added everything. So each parent's k
///   incoming ports are k servers, each taking, when it frees, the waiting piece of
///   highest priority (issue time, sender rank; a child has one piece waiting at most),
///   and a child's next piece is issued once its previous one landed and its own
///   children's next pieces are added. Children have higher ranks than their parent, so
///   a rank's arrivals are known before its parent's ports are worked out.
/// - **Down.** Once a rank has piece s and its round of piece s-1 has landed, it sends
///   piece s to its c children at once, nearest first, on its k outgoing ports: the i-th
///   lands `(i/k + 1) T_s` later and the round `ceil(c/k) T_s` later. A child's incoming
///   ports carry only its parent's pieces by then, so nothing else waits.
pub fn binomial_pipeline(np: usize, h: &Hockney, segments: usize, seg: impl Fn(usize) -> f64) -> f64 {
    use crate::algos::binomial_shape as shape;
    if np <= 1 {
        return 0.0;
    }
    let k = h.nics.max(1) as usize;
    // arr[c * segments + s]: when c's piece s lands at c's parent.
    let mut arr = vec![0.0f64; np * segments];
    let mut reduced = vec![0.0f64; np];
    // Per child of the parent being worked out: its program time, next piece, the land
    // time of its last piece and the issue time of its next one.
    struct Child {
        rank: usize,
        now: f64,
        next: usize,
        landed: f64,
        issue: f64,
    }
    // The rank's own additions of its children's piece s, from its program time `now`.
    let add = |q: usize, s: usize, now: f64, arr: &[f64]| {
        shape(q, np).1.fold(now, |t, c| t.max(arr[c * segments + s]) + h.r(seg(s)))
    };
    let mut kids: Vec<Child> = Vec::new();
    for q in (0..np).rev() {
        let (_, children) = shape(q, np);
        kids.clear();
        for c in children.clone() {
            let now = add(c, 0, 0.0, &arr);
            kids.push(Child { rank: c, now, next: 0, landed: 0.0, issue: now });
        }
        let mut servers = vec![0.0f64; k];
        loop {
            let pending = kids.iter().filter(|c| c.next < segments);
            let Some(first) = pending.clone().map(|c| c.issue).min_by(f64::total_cmp) else { break };
            let port = earliest(&servers);
            let start = servers[port].max(first);
            // The waiting piece of highest priority: earliest issue, then lowest sender.
            let Some(pick) = (0..kids.len())
                .filter(|&i| kids[i].next < segments && kids[i].issue <= start)
                .min_by(|&a, &b| kids[a].issue.total_cmp(&kids[b].issue).then(kids[a].rank.cmp(&kids[b].rank)))
            else {
                break;
            };
            let c = &mut kids[pick];
            let s = c.next;
            let land = start + h.t(seg(s));
            servers[port] = land;
            arr[c.rank * segments + s] = land;
            c.landed = land;
            c.next += 1;
            if c.next < segments {
                // Its next piece: its children's pieces added, then sent once this one landed.
                let now = add(c.rank, c.next, c.now, &arr);
                c.issue = now.max(land);
                c.now = c.issue;
            } else {
                reduced[c.rank] = c.now.max(land);
            }
        }
        if q == 0 {
            let mut now = 0.0f64;
            for s in 0..segments {
                now = add(0, s, now, &arr);
            }
            reduced[0] = now;
        }
    }
    let mut down = vec![0.0f64; np * segments];
    let mut end = 0.0f64;
    for q in 0..np {
        let (parent, children) = shape(q, np);
        let count = children.clone().count();
        let (mut now, mut landed) = (reduced[q], reduced[q]);
        for s in 0..segments {
            if parent.is_some() {
                now = now.max(down[q * segments + s]);
            }
            now = now.max(landed);
            if count > 0 {
                let t = h.t(seg(s));
                for (i, c) in children.clone().rev().enumerate() {
                    down[c * segments + s] = now + (i / k + 1) as f64 * t;
                }
                landed = now + count.div_ceil(k) as f64 * t;
            }
        }
        end = end.max(now).max(landed);
    }
    end
}
