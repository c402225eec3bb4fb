//! Exact recurrences for pipelines whose pieces differ in size: a one-way ring over any
//! chunks and pieces, and the compute queue a pipeline's reductions wait in. They are
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

/// The index of the earliest-free of `servers` (the engine hands out any free port;
/// which one does not matter, only when one is free).
pub fn earliest(servers: &[f64]) -> usize {
    servers.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

/// The time of a one-way ring program (`ring`'s program): every rank
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
    // Only the last `window` items of a rank can still be waited for, so the state is a
    // ring of `window + 1` slots per rank (NaN: not yet added), not one per item.
    let slots = window + 1;
    let mut issue = vec![0.0f64; np];
    let mut done = vec![f64::NAN; np * slots];
    // A rank's sends are issued at times that never decrease (`issue` only grows).
    let mut ports = vec![super::PortPool::of_nics(h.nics); np];
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
            let b = bytes(i, q);
            let arrive = ports[q].take(issue[q], h.t(b)) + h.t(b);
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
