//! The engine's event queue: events pop in the order `(time, insertion sequence)`,
//! exactly as from a binary heap keyed that way, but an event scheduled for the same
//! instant as the one scheduled just before it costs no heap operation.
//!
//! Collectives move in waves: at one instant every rank starts a message of the same
//! size, so P deliveries are scheduled back to back for one later instant, then P
//! reductions for another. The queue keeps a heap of *buckets*, each a FIFO of events of
//! one instant, and appends an event to the bucket made last when its time is that
//! bucket's. A wave of P events is one heap push and one pop instead of P of each.
//!
//! **Why the order is exact.** Only the newest bucket ever grows, so every event of an
//! older bucket has a smaller sequence number than every event of a newer one. Buckets
//! are ordered in the heap by `(time, sequence of their first event)`; so two buckets
//! of one instant pop oldest first, and within a bucket events pop in insertion order.
//! The queue drains the bucket it popped before it looks at the heap again: nothing
//! scheduled meanwhile can come before the bucket's rest (it is at this instant or
//! later, and newer).
//!
//! Buckets are recycled with their capacity, so once warm the queue allocates nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A bucket: the events of one instant, in insertion order.
#[derive(Debug)]
struct Bucket<T> {
    /// The instant's bits (times are never negative, so the bits order like the times).
    time: u64,
    events: VecDeque<T>,
}

/// Events of type `T`, popped in `(time, insertion order)`.
#[derive(Debug)]
pub struct EventQueue<T> {
    /// `(time bits, sequence of the first event, bucket)`, earliest first.
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    buckets: Vec<Bucket<T>>,
    free: Vec<u32>,
    /// The bucket made last, while it may still grow (not yet drained).
    newest: Option<u32>,
    /// The bucket being drained.
    current: Option<u32>,
    seq: u64,
    len: usize,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            buckets: Vec::new(),
            free: Vec::new(),
            newest: None,
            current: None,
            seq: 0,
            len: 0,
        }
    }
}

/// The bits of a time, ordered like the time (`+ 0.0` turns -0.0 into 0.0).
fn bits(time: f64) -> u64 {
    debug_assert!(time >= 0.0, "times are never negative");
    (time + 0.0).to_bits()
}

impl<T> EventQueue<T> {
    /// Schedule `event` at `time` (never negative), after every event already scheduled
    /// at that time.
    #[inline]
    pub fn push(&mut self, time: f64, event: T) {
        let t = bits(time);
        let seq = self.seq;
        self.seq += 1;
        self.len += 1;
        if let Some(b) = self.newest
            && self.buckets[b as usize].time == t
        {
            self.buckets[b as usize].events.push_back(event);
            return;
        }
        let b = match self.free.pop() {
            Some(b) => {
                self.buckets[b as usize].time = t;
                b
            }
            None => {
                self.buckets.push(Bucket { time: t, events: VecDeque::new() });
                (self.buckets.len() - 1) as u32
            }
        };
        self.buckets[b as usize].events.push_back(event);
        self.heap.push(Reverse((t, seq, b)));
        self.newest = Some(b);
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(f64, T)> {
        loop {
            if let Some(b) = self.current {
                let bucket = &mut self.buckets[b as usize];
                if let Some(ev) = bucket.events.pop_front() {
                    self.len -= 1;
                    return Some((f64::from_bits(bucket.time), ev));
                }
                // Drained: recycle it; it must not grow any more.
                self.current = None;
                self.free.push(b);
                if self.newest == Some(b) {
                    self.newest = None;
                }
            }
            let Reverse((_, _, b)) = self.heap.pop()?;
            self.current = Some(b);
        }
    }

    /// The time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<f64> {
        if let Some(b) = self.current
            && !self.buckets[b as usize].events.is_empty()
        {
            return Some(f64::from_bits(self.buckets[b as usize].time));
        }
        self.heap.peek().map(|Reverse((t, _, _))| f64::from_bits(*t))
    }

    /// Events scheduled and not yet popped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{Rng, SeedableRng};

    /// Against a binary heap keyed `(time, sequence)`, on random interleavings of pushes
    /// and pops with many equal times (waves) and times equal to the last popped.
    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for round in 0..200 {
            let mut q = EventQueue::default();
            let mut reference: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for _ in 0..2000 {
                let r = rng.next_u32();
                if r % 3 == 0 {
                    let got = q.pop();
                    let want = reference.pop();
                    assert_eq!(got, want.map(|Reverse((t, id))| (t as f64, id)), "round {round}");
                    if let Some((t, _)) = got {
                        now = t as u64;
                    }
                } else {
                    // Now, or a few instants later (so that waves and repeats are common).
                    let t = now + u64::from(r >> 8) % (1 + round % 5);
                    q.push(t as f64, seq);
                    reference.push(Reverse((t, seq)));
                    seq += 1;
                }
                assert_eq!(q.len(), reference.len());
                assert_eq!(q.peek_time(), reference.peek().map(|Reverse((t, _))| *t as f64));
            }
            while let Some(Reverse((t, id))) = reference.pop() {
                assert_eq!(q.pop(), Some((t as f64, id)));
            }
            assert!(q.pop().is_none() && q.is_empty());
        }
    }
}
