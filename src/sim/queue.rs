//! The engine's event queue: events pop in the order `(time, insertion sequence)`,
//! exactly as from a binary heap keyed that way, but an event scheduled for an instant
//! that already has an open bucket costs no heap operation.
//!
//! Collectives move in waves: at one instant every rank starts a message of the same
//! size, so P deliveries are scheduled for one later instant, then P reductions for
//! another. The queue keeps a heap of *buckets*, each a FIFO of events of one instant,
//! and appends an event to the open bucket of its instant when there is one. A wave of
//! P events is one heap push and one pop instead of P of each, even when the pushes of
//! a few instants interleave (a delivery schedules a reduction, the next delivery of the
//! wave another: two instants in turn) or when ranks drift apart into a few groups.
//!
//! **Why the order is exact.** At most [`OPEN`] buckets are *open* (may still grow), at
//! most one per instant; a bucket that stops being open (evicted to make room, or
//! drained) never grows again. So of two buckets of one instant, the older stopped
//! growing before the newer one was made, and every event of the older was scheduled
//! before every event of the newer. Buckets are ordered in the heap by `(time, order
//! they were made in)`, so two buckets of one instant pop oldest first, and within a
//! bucket events pop in insertion order. Buckets of different instants are ordered by
//! their times alone. The queue drains the bucket it popped before it looks at the heap
//! again: nothing scheduled meanwhile can come before the bucket's rest (it is at this
//! instant or later, and newer).
//!
//! Buckets are recycled with their capacity, so once warm the queue allocates nothing;
//! but the free buckets together keep at most the room one bucket holding the queue's
//! high-water mark of events may have (the mark, an eighth more and 16, as a bucket
//! grows: `EventQueue::budget`), and a bucket drained beyond that budget gives its
//! memory back. Waves of P events split over several instants would otherwise leave each
//! of the eight or so buckets with room for half a wave, four and a half events a rank
//! where one is ever needed. A bucket drained with more than twice the room it used
//! gives it back too: a wave's bucket taken for one drifted rank's instant, kept, went
//! from instant to instant while new waves grew new buckets, until every pending instant
//! held a wave's room. The budget is a whole grown bucket, not the mark itself: a
//! wave's bucket grows past the mark by up to an eighth, and with the mark as the budget
//! a ring (waves of deliveries and of reductions in turn, each as large as the mark)
//! gave back every drained bucket and grew the next one anew, a dozen reallocations a
//! wave.
//!
//! Every event is one push and one pop, so both are a few instructions on their common
//! path (the newest bucket's instant again, the drained bucket's next event), inlined;
//! opening a bucket, growing one and taking the next from the heap are out of line.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A bucket: the events of one instant, in insertion order.
///
/// A vector read from `head` on, not a ring buffer: a bucket is filled (mostly) before
/// it is drained, and emptied whole before it is used again, so the wrap-around a
/// `VecDeque` pays at every push and pop buys nothing. A bucket that grows while it is
/// drained (events scheduled for the instant being run) moves its rest to the front
/// when it fills, rather than growing, once the part already read is half of it: its
/// room stays within about twice what it holds.
#[derive(Debug)]
struct Bucket<T> {
    /// The instant's bits (times are never negative, so the bits order like the times).
    time: u64,
    /// The next event to pop is `events[head]`.
    head: usize,
    events: Vec<T>,
}

/// Buckets open at once: enough for the few instants a wave's pushes interleave, few
/// enough that finding one is a short scan of one cache line.
pub const OPEN: usize = 8;

/// No bucket (in [`EventQueue::current`]).
const NONE: u32 = u32::MAX;

/// No time: a NaN's bits, which no time has (in [`EventQueue::last_time`]).
const NO_TIME: u64 = u64::MAX;

/// Events of type `T`, popped in `(time, insertion order)`.
#[derive(Debug)]
pub struct EventQueue<T> {
    /// `(time bits, the order buckets were made in, bucket)`, earliest first.
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    buckets: Vec<Bucket<T>>,
    free: Vec<u32>,
    /// The open buckets' times and ids (`open_len` of them, see the module docs); a new
    /// one replaces the oldest in turn (`open_next`).
    open_time: [u64; OPEN],
    open_id: [u32; OPEN],
    open_len: usize,
    open_next: usize,
    /// The open bucket pushed to last and its time ([`NO_TIME`] once it is closed):
    /// most pushes go to the same instant as the one before, found without a scan.
    last_time: u64,
    last_id: u32,
    /// The bucket being drained, or [`NONE`].
    current: u32,
    /// Buckets made so far (their order in the heap).
    made: u64,
    len: usize,
    /// The most events ever held at once, and the capacity the free buckets keep (at
    /// most [`EventQueue::budget`] of it).
    high_water: usize,
    spare: usize,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            buckets: Vec::new(),
            free: Vec::new(),
            open_time: [0; OPEN],
            open_id: [0; OPEN],
            open_len: 0,
            open_next: 0,
            last_time: NO_TIME,
            last_id: NONE,
            current: NONE,
            made: 0,
            len: 0,
            high_water: 0,
            spare: 0,
        }
    }
}

/// The bits of a time, ordered like the time (`+ 0.0` turns -0.0 into 0.0).
fn bits(time: f64) -> u64 {
    debug_assert!(time >= 0.0, "times are never negative");
    (time + 0.0).to_bits()
}

impl<T: Copy> EventQueue<T> {
    /// Schedule `event` at `time` (never negative), after every event already scheduled
    /// at that time.
    #[inline(always)]
    pub fn push(&mut self, time: f64, event: T) {
        let t = bits(time);
        self.len += 1;
        self.high_water = self.high_water.max(self.len);
        let b = if t == self.last_time {
            self.last_id
        } else if let Some(i) = self.open_time[..self.open_len].iter().position(|&o| o == t) {
            self.last_time = t;
            self.last_id = self.open_id[i];
            self.last_id
        } else {
            return self.open(t, event);
        };
        let bucket = &mut self.buckets[b as usize];
        if bucket.events.len() == bucket.events.capacity() {
            bucket.make_room();
        }
        bucket.events.push(event);
    }

    /// [`EventQueue::push`] of the first event of an instant with no open bucket: a
    /// bucket for it, opened, closing the oldest open bucket for good if all slots are
    /// taken.
    #[inline(never)]
    fn open(&mut self, t: u64, event: T) {
        let b = match self.free.pop() {
            Some(b) => {
                self.buckets[b as usize].time = t;
                self.spare -= self.buckets[b as usize].events.capacity();
                b
            }
            None => {
                self.buckets.push(Bucket { time: t, head: 0, events: Vec::new() });
                (self.buckets.len() - 1) as u32
            }
        };
        let bucket = &mut self.buckets[b as usize];
        if bucket.events.capacity() == 0 {
            bucket.make_room();
        }
        bucket.events.push(event);
        self.heap.push(Reverse((t, self.made, b)));
        self.made += 1;
        let slot = if self.open_len < OPEN {
            self.open_len += 1;
            self.open_len - 1
        } else {
            let slot = self.open_next;
            self.open_next = (slot + 1) % OPEN;
            slot
        };
        self.open_time[slot] = t;
        self.open_id[slot] = b;
        // (If the bucket closed was the last pushed to, this replaces it.)
        (self.last_time, self.last_id) = (t, b);
    }

    /// The earliest event and its time.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(f64, T)> {
        if self.current != NONE {
            let bucket = &mut self.buckets[self.current as usize];
            if let Some(&ev) = bucket.events.get(bucket.head) {
                bucket.head += 1;
                self.len -= 1;
                return Some((f64::from_bits(bucket.time), ev));
            }
        }
        self.pop_next()
    }

    /// [`EventQueue::pop`] once the current bucket is drained: recycle it (it must not
    /// grow any more) and take the next one off the heap.
    #[inline(never)]
    fn pop_next(&mut self) -> Option<(f64, T)> {
        if self.current != NONE {
            let b = self.current;
            self.current = NONE;
            let budget = Self::budget(self.high_water);
            let bucket = &mut self.buckets[b as usize];
            bucket.head = 0;
            let cap = bucket.events.capacity();
            // A bucket recycled with room it did not use (a wave's room, taken for an
            // instant of a few events) gives that room back: else every instant pending
            // at once, up to one a rank where ranks drift apart, could hold a wave's room.
            let used = bucket.events.len();
            bucket.events.clear();
            if self.spare + cap > budget || cap > 2 * used + MIN_GROWTH {
                bucket.events = Vec::new();
            } else {
                self.spare += cap;
            }
            self.free.push(b);
            self.close(b);
        }
        let Reverse((_, _, b)) = self.heap.pop()?;
        self.current = b;
        // A bucket in the heap holds at least the event that made it.
        let bucket = &mut self.buckets[b as usize];
        let ev = bucket.events[0];
        bucket.head = 1;
        self.len -= 1;
        Some((f64::from_bits(bucket.time), ev))
    }

    /// Take bucket `b` out of the open ones, if it is there.
    fn close(&mut self, b: u32) {
        if b == self.last_id {
            self.last_time = NO_TIME;
        }
        let n = self.open_len;
        if let Some(i) = self.open_id[..n].iter().position(|&o| o == b) {
            // Keep the slots packed; the eviction turn stays within them.
            self.open_time[i] = self.open_time[n - 1];
            self.open_id[i] = self.open_id[n - 1];
            self.open_len = n - 1;
            if self.open_next >= self.open_len {
                self.open_next = 0;
            }
        }
    }

    /// The time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<f64> {
        if self.current != NONE {
            let bucket = &self.buckets[self.current as usize];
            if bucket.head < bucket.events.len() {
                return Some(f64::from_bits(bucket.time));
            }
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

/// The fewest slots a full bucket grows by (else an eighth more): the budget of free
/// room and the give-back slack allow for it, so that a bucket grown once is not
/// given back for the growth itself.
const MIN_GROWTH: usize = 16;

impl<T> EventQueue<T> {
    /// The most slots the free buckets keep between them: what a bucket grown (by
    /// [`Bucket::make_room`]'s eighths) to hold `high_water` events may have.
    fn budget(high_water: usize) -> usize {
        high_water + high_water / 8 + MIN_GROWTH
    }
}

impl<T: Copy> Bucket<T> {
    /// Room for one more event in a full bucket: its unread rest moved to the front
    /// when what was read is at least half of it, else an eighth more (a wave's bucket
    /// holds an event per rank, so it grows by an eighth, not double, as the engine's
    /// slabs do).
    #[inline(never)]
    fn make_room(&mut self) {
        let len = self.events.len();
        if self.head > 0 && 2 * self.head >= len {
            self.events.copy_within(self.head.., 0);
            self.events.truncate(len - self.head);
            self.head = 0;
        } else {
            self.events.reserve_exact(len / 8 + MIN_GROWTH);
        }
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
                    // Now, or a few instants later (so that waves and repeats are common);
                    // up to 23 instants at once, more than the open buckets, so that
                    // buckets are evicted while they could still grow.
                    let t = now + u64::from(r >> 8) % (1 + round % 23);
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

    /// Waves split over more instants than there are open buckets: the free buckets keep
    /// no more room between them than one bucket grown to the most events the queue ever
    /// held at once, and `spare` counts exactly what they keep.
    #[test]
    fn free_buckets_keep_at_most_the_high_water_mark() {
        let mut q = EventQueue::default();
        for wave in 0..50u64 {
            // 1,000 events over 1 to 12 instants, interleaved, then all popped: without
            // the budget each bucket would keep room for a whole wave.
            for i in 0..1000u64 {
                q.push((wave * 100 + i % (wave % 12 + 1)) as f64, i);
            }
            while q.pop().is_some() {}
            let kept: usize = q.free.iter().map(|&b| q.buckets[b as usize].events.capacity()).sum();
            assert_eq!(kept, q.spare, "wave {wave}");
            let budget = EventQueue::<u64>::budget(q.high_water);
            assert!(kept <= budget, "wave {wave}: {kept} slots kept, at most {} events held", q.high_water);
        }
        assert_eq!(q.high_water, 1000);
        assert_eq!(EventQueue::<u64>::budget(1000), 1141);
    }

    /// Events scheduled for the instant being drained, one for each popped, 100 times
    /// as many as it holds: the bucket's room stays within about twice what it holds,
    /// though it is never emptied, and the order is kept.
    #[test]
    fn a_bucket_fed_while_drained_keeps_its_room() {
        let mut q = EventQueue::default();
        for i in 0..1000u64 {
            q.push(5.0, i);
        }
        for i in 1000..101_000u64 {
            assert_eq!(q.pop(), Some((5.0, i - 1000)));
            q.push(5.0, i);
            let room: usize = q.buckets.iter().map(|b| b.events.capacity()).sum();
            assert!(room <= 2 * 1000 + 1000 / 4 + 32, "{room} slots for 1,000 events");
        }
        assert_eq!(q.len(), 1000);
        assert_eq!(q.buckets.len(), 1);
    }

    /// Waves as large as the high-water mark in turn (a ring's deliveries and
    /// reductions): once warm, a drained bucket keeps its room for the next wave, and no
    /// push grows a bucket.
    #[test]
    fn alternating_waves_reuse_their_buckets() {
        let mut q = EventQueue::default();
        let wave = 1000u64;
        for i in 0..wave {
            q.push(0.0, i);
        }
        let mut held = Vec::new();
        for t in 0..20u64 {
            // Each event popped schedules one of the next instant's wave.
            for _ in 0..wave {
                let (time, i) = q.pop().expect("a wave");
                assert_eq!(time, t as f64);
                q.push((t + 1) as f64, i);
                if t >= 2 {
                    held.push(q.buckets.iter().map(|b| b.events.capacity()).sum::<usize>());
                }
            }
        }
        assert_eq!(q.buckets.len(), 2);
        let (lo, hi) = (held.iter().min(), held.iter().max());
        assert_eq!(lo, hi, "memory given back or grown once warm");
    }

    /// Half the ranks in step (a bucket of P/2 events an instant), the other half drifted
    /// apart (an instant a rank, a bucket of one event each), as a ring's ranks are
    /// where its blocks have two lengths. A bucket grown by a wave, drained, then taken
    /// for one rank's instant kept the wave's room, and went back to the free buckets
    /// when drained (which were nearly empty, every other bucket pending), to be taken
    /// by the next such instant: the waves grew new buckets, and the pending instants
    /// held a wave's room each, P^2 in all (110 slots an event here; a ring allgather of
    /// 4 KiB at 4,096 ranks: 80 MB where 13 MB do). The room of all buckets stays within
    /// a bucket's least room an event held.
    #[test]
    fn drifting_ranks_do_not_each_keep_a_waves_room() {
        let mut q = EventQueue::default();
        let ranks = 1000u64;
        // Ranks below `ranks / 2` stay in step (one instant a round); the others drift
        // apart, each a little slower than the one before.
        let delay = |r: u64| if r < ranks / 2 { 1.0 } else { 1.0 + (r - ranks / 2 + 1) as f64 * 1e-6 };
        for r in 0..ranks {
            q.push(delay(r), r);
        }
        let mut room = 0usize;
        for _ in 0..200 * ranks {
            let (t, r) = q.pop().expect("every rank has its next event");
            q.push(t + delay(r), r);
            room = room.max(q.buckets.iter().map(|b| b.events.capacity()).sum());
        }
        assert_eq!(q.high_water, ranks as usize);
        assert!(room <= 24 * q.high_water, "{room} slots for at most {} events", q.high_water);
    }
}
