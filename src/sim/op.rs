//! The operations a rank's program is made of.
//!
//! An algorithm describes, per rank, a lazy sequence of [`Op`]s: sends, receives
//! (with or without reduction), local reductions and waits. The engine in
//! [`crate::sim::engine`] is the only code that knows about time, ports and queues;
//! an algorithm only says what moves where and what must finish before what.

/// Rank index, `0..P`.
pub type Rank = u32;

/// Which buffer of a rank a [`Region`] lies in.
///
/// Buffer 0 is the rank's own vector (the in-place allreduce buffer); buffers
/// `1..` are scratch buffers the algorithm declares with
/// [`crate::algos::Algorithm::scratch`].
pub type BufId = u8;

/// The rank's own vector.
pub const VEC: BufId = 0;

/// A contiguous range of elements in one of a rank's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Which buffer.
    pub buf: BufId,
    /// First element.
    pub offset: usize,
    /// Number of elements.
    pub len: usize,
}

impl Region {
    /// `len` elements of the rank's vector starting at `offset`.
    pub const fn vec(offset: usize, len: usize) -> Self {
        Region { buf: VEC, offset, len }
    }
    /// `len` elements of scratch buffer `buf` starting at `offset`.
    pub const fn scratch(buf: BufId, offset: usize, len: usize) -> Self {
        Region { buf, offset, len }
    }
    /// One past the last element.
    pub const fn end(&self) -> usize {
        self.offset + self.len
    }
}

/// What happens to a received message's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Overwrite the destination region (costs nothing: a copy is free in the model).
    Copy,
    /// `dst = dst (op) message`, on the compute unit, at `bytes * C`.
    Reduce,
}

/// One operation of a rank's program.
///
/// Sends and receives are non-blocking (like `MPI_Isend` / `MPI_Irecv`); a program
/// blocks only at [`Op::Wait`] / [`Op::WaitAll`]. Every `Recv` and `Reduce` gets a
/// handle: the number of `Recv`/`Reduce` ops its stream (one of the rank's programs)
/// issued before it, starting at 0; `Wait` and `WaitAll` see only their own stream's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send `src` to rank `to`. The data is taken when the op is issued (eager,
    /// buffered send), so the program may go on and overwrite `src` at once.
    Send {
        /// Destination rank.
        to: Rank,
        /// Message tag; receives match on (source, tag), in FIFO order.
        tag: u32,
        /// What is sent.
        src: Region,
    },
    /// Post a receive from rank `from` into `dst`, then copy or reduce.
    /// It completes when the data has landed (copy) or has been reduced (reduce).
    Recv {
        /// Source rank.
        from: Rank,
        /// Message tag.
        tag: u32,
        /// Where the data goes; its length must equal the message's.
        dst: Region,
        /// Copy or reduce.
        action: Action,
    },
    /// A local reduction `dst = dst (op) src` on the compute unit, where `src` is
    /// `dst.len` elements of buffer `src_buf` from `src_offset`; [`Op::reduce`] builds
    /// one from two regions. The operand read is not a whole [`Region`] because its
    /// length is `dst`'s, and because a second region would make every op 56 bytes
    /// instead of 40: ops are copied by value from a program to the engine, and that
    /// copy is a measurable part of a message's cost.
    Reduce {
        /// The buffer of the operand read.
        src_buf: BufId,
        /// Its first element.
        src_offset: usize,
        /// Operand read and written.
        dst: Region,
    },
    /// Block until the `Recv`/`Reduce` with this handle has completed.
    Wait(u32),
    /// Block until every `Recv`/`Reduce` this stream issued so far has completed.
    WaitAll,
    /// Block until at most this many of the `Send`s this stream issued are not yet
    /// delivered (`WaitSends(0)`: all delivered, like `MPI_Waitall` on the send
    /// requests). The flow control of a pipelined algorithm: a rank with nothing to wait
    /// for (a tree's leaf) does not flood its peers' ports with later rounds' messages,
    /// and a window of `nics` sends never leaves a port idle behind a busy receiver.
    WaitSends(u32),
}

impl Op {
    /// A send of `src` to `to`.
    pub const fn send(to: Rank, tag: u32, src: Region) -> Op {
        Op::Send { to, tag, src }
    }
    /// A receive from `from` reduced into `dst`.
    pub const fn recv_reduce(from: Rank, tag: u32, dst: Region) -> Op {
        Op::Recv { from, tag, dst, action: Action::Reduce }
    }
    /// A receive from `from` copied into `dst`.
    pub const fn recv_copy(from: Rank, tag: u32, dst: Region) -> Op {
        Op::Recv { from, tag, dst, action: Action::Copy }
    }
    /// A local reduction of `src` into `dst`.
    ///
    /// # Panics
    /// If the two differ in length: an algorithm's own error, never the user's.
    pub fn reduce(src: Region, dst: Region) -> Op {
        assert_eq!(src.len, dst.len, "a local reduction of {src:?} into {dst:?}");
        Op::Reduce { src_buf: src.buf, src_offset: src.offset, dst }
    }
}

/// A rank's program: a lazy stream of operations.
///
/// Boxed so that every algorithm can build its program from iterator adaptors
/// (`flat_map` over steps), which reads like the textbook loop and materialises
/// nothing up front.
pub type Program<'a> = Box<dyn Iterator<Item = Op> + Send + 'a>;

/// `steps.flat_map(step)` for programs made of numbered steps of a few ops each: step
/// `k`'s ops are `step(k)`.
///
/// A `flat_map` keeps a copy of the current step's ops (an `[Op; 3]` is 120 bytes, and it
/// keeps two); this keeps only the step number, the position within the step and a
/// ticket, so a rank's program is a few words, which is what lets a million ranks run in
/// little memory. The ops a step made are kept instead in a per-thread cache of the
/// last [`CACHED_STEPS`] steps any program made (`StepCache`), where the engine, which
/// pulls a rank's ops until the rank blocks, finds the rest of the step at once. A step
/// the cache has dropped (its rank blocked in the middle of it and many other steps were
/// made before it resumed), or one of more than [`CACHED_OPS`] ops, is made again for
/// each op it hands out, so `step` must depend on `k` alone; a step that blocks only at
/// its end (a wait as its last op, not its first) is made once.
pub fn per_step<K, I, F>(steps: K, step: F) -> PerStep<K, F>
where
    K: Iterator,
    K::Item: Copy,
    F: Fn(K::Item) -> I,
    I: IntoIterator<Item = Op>,
{
    PerStep { steps, current: None, at: 0, len: UNKNOWN, ticket: 0, step }
}

/// Ops of a step the cache keeps at most.
pub const CACHED_OPS: usize = 4;
/// Steps the cache keeps: the last this many steps made on the thread. A step is read
/// back from it within one pull of its rank's ops when the step blocks only at its end,
/// so a few would do; this many keep a step that blocks in its middle for as many other
/// ranks' steps, and stay in the first-level data cache (11 KB).
pub const CACHED_STEPS: usize = 64;
/// `PerStep::len` before the current step was made.
const UNKNOWN: u16 = u16::MAX;

/// The per-thread cache of [`per_step`]: a ring of the last [`CACHED_STEPS`] steps made,
/// each under a ticket (nonzero, unique across threads: the thread's number in the high
/// bits). A program holds the ticket of its current step's entry; the entry is its step
/// still exactly when it holds the same ticket.
///
/// A fixed array, not a `Vec`: a thread-local with nothing to drop is a plain
/// thread-relative address, with no check of whether it was set up.
struct StepCache {
    next_ticket: u64,
    entries: [CachedStep; CACHED_STEPS],
}

#[derive(Clone, Copy)]
struct CachedStep {
    ticket: u64,
    len: u16,
    /// Kept as the `Option` a hit hands out (see [`StepCache::get`]).
    ops: [Option<Op>; CACHED_OPS],
}

impl CachedStep {
    const EMPTY: CachedStep = CachedStep { ticket: 0, len: 0, ops: [None; CACHED_OPS] };
}

thread_local! {
    static STEPS: std::cell::RefCell<StepCache> = const {
        std::cell::RefCell::new(StepCache { next_ticket: 0, entries: [CachedStep::EMPTY; CACHED_STEPS] })
    };
}

/// Threads that have made a step: each takes the next number for its tickets.
static THREADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl StepCache {
    /// Whether the cache still has op `at` of the step under `ticket`, and if so the op.
    ///
    /// The op is copied out whole, as the `Option` it is kept as, and whether it is there
    /// is told apart: `Some(op)` built here, or a `None` written for a miss, would make
    /// the compiler treat the `Option`'s tag byte as a value of its own, and write the
    /// op to the engine as that byte and 16-byte blocks from byte 1. The engine's reads
    /// of the op's fields then each spanned two of those stores, and waited for both to
    /// land instead of taking the value from them (a failed store-to-load forwarding, 30%
    /// of the engine's time handing out ops in a profile of ring). Copied whole, the op
    /// is written in blocks from byte 0, which the fields fit in.
    #[inline]
    fn get(ticket: u64, at: u16) -> (bool, Option<Op>) {
        STEPS.with_borrow(|c| {
            let e = &c.entries[(ticket % CACHED_STEPS as u64) as usize];
            let hit = ticket != 0 && e.ticket == ticket && at < e.len;
            // Some op of the entry either way; a miss's is not looked at.
            (hit, e.ops[at as usize % CACHED_OPS])
        })
    }

    /// Keep a step's `len` ops; its ticket.
    fn put(ops: &[Op], len: u16) -> u64 {
        STEPS.with_borrow_mut(|c| {
            if c.next_ticket == 0 {
                let thread = THREADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                c.next_ticket = (thread + 1) << 40;
            }
            let ticket = c.next_ticket;
            c.next_ticket += 1;
            let e = &mut c.entries[(ticket % CACHED_STEPS as u64) as usize];
            (e.ticket, e.len) = (ticket, len);
            // One op at a time, not `copy_from_slice`, whose call to `memcpy` for a length
            // known only at run time was 5% of ring's time in a profile.
            for (i, op) in ops.iter().enumerate().take(CACHED_OPS) {
                e.ops[i] = Some(*op);
            }
            ticket
        })
    }
}

/// The iterator of [`per_step`].
#[derive(Clone, Debug)]
pub struct PerStep<K: Iterator, F> {
    steps: K,
    current: Option<K::Item>,
    /// How many ops of the current step were handed out, and how many it has
    /// (`UNKNOWN` until it is made).
    at: u16,
    len: u16,
    /// The cache entry of the current step (0: none).
    ticket: u64,
    step: F,
}

impl<K, I, F> Iterator for PerStep<K, F>
where
    K: Iterator,
    K::Item: Copy,
    F: Fn(K::Item) -> I,
    I: IntoIterator<Item = Op>,
{
    type Item = Op;

    #[inline]
    fn next(&mut self) -> Option<Op> {
        // The common case, kept small enough to inline into the adaptors around it: the
        // next op of the current step, from the cache.
        let (hit, op) = StepCache::get(self.ticket, self.at);
        if hit {
            debug_assert!(self.at < self.len);
            debug_assert_eq!(
                op,
                (self.step)(self.current.expect("a cached step is current")).into_iter().nth(self.at as usize),
                "a step must depend on k alone"
            );
            self.at += 1;
            return op;
        }
        self.next_made()
    }
}

impl<K, I, F> PerStep<K, F>
where
    K: Iterator,
    K::Item: Copy,
    F: Fn(K::Item) -> I,
    I: IntoIterator<Item = Op>,
{
    /// The next op when the cache does not have it: the next step's first, or the op of
    /// a step the cache dropped or could not keep, made again.
    #[inline(never)]
    fn next_made(&mut self) -> Option<Op> {
        loop {
            let k = match self.current {
                Some(k) => k,
                None => {
                    let k = self.steps.next()?;
                    (self.current, self.at, self.len, self.ticket) = (Some(k), 0, UNKNOWN, 0);
                    k
                }
            };
            if self.at == self.len {
                self.current = None;
                continue;
            }
            let at = self.at;
            // Make the step: keep its first ops, count the rest.
            let mut ops = [Op::WaitAll; CACHED_OPS];
            let mut it = (self.step)(k).into_iter();
            let mut len = 0usize;
            let mut wanted = None;
            for op in it.by_ref().take(CACHED_OPS) {
                ops[len] = op;
                len += 1;
            }
            let more = if len == CACHED_OPS { it.next() } else { None };
            if let Some(more) = more {
                // Too long to keep: hand out op `at` of this making, and count the rest.
                for op in std::iter::once(more).chain(it) {
                    if len == at as usize {
                        wanted = Some(op);
                    }
                    len += 1;
                }
            } else {
                self.ticket = StepCache::put(&ops[..len], len as u16);
            }
            self.len = u16::try_from(len).expect("a step of fewer than 65535 ops");
            if (at as usize) < len {
                self.at += 1;
                return Some(wanted.unwrap_or_else(|| ops[at as usize]));
            }
            self.current = None;
        }
    }
}

/// Block `i` of `n` elements cut into `parts` blocks as evenly as possible:
/// the first `n % parts` blocks get one element more (as MPICH does).
pub fn block(n: usize, parts: usize, i: usize) -> Region {
    Blocks::new(n, parts).get(i)
}

/// The blocks of [`block`] for one `(n, parts)`, divided once: a program that looks up
/// a block at every step keeps this instead of dividing each time.
#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    q: usize,
    r: usize,
}

impl Blocks {
    /// `n` elements cut into `parts` blocks.
    pub fn new(n: usize, parts: usize) -> Self {
        Blocks { q: n / parts, r: n % parts }
    }

    /// Block `i`, as [`block`] gives it.
    pub fn get(&self, i: usize) -> Region {
        let (q, r) = (self.q, self.r);
        Region::vec(i * q + i.min(r), q + usize::from(i < r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An op is copied by value from every program to the engine: it stays 40 bytes (see
    /// `Op::Reduce`).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_op_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Op>(), 40);
    }

    /// Steps of different lengths, empty ones included, come out as `flat_map` gives them.
    #[test]
    fn per_step_is_flat_map() {
        let step = |k: u32| (0..k % 4).map(move |i| Op::Wait(10 * k + i));
        let want: Vec<Op> = (0..9).rev().flat_map(step).collect();
        assert_eq!(per_step((0..9).rev(), step).collect::<Vec<_>>(), want);
        assert_eq!(want.len(), 12);
    }

    /// Steps longer than the cache keeps, and more programs interleaved than it has
    /// entries (so that a program finds its step dropped and makes it again): each hands
    /// out what `flat_map` gives.
    #[test]
    fn per_step_through_the_cache() {
        let step = |k: u32| (0..k % 7).map(move |i| Op::Wait(10 * k + i));
        let want: Vec<Op> = (0..40).flat_map(step).collect();
        for programs in [1, 3, CACHED_STEPS - 1, CACHED_STEPS + 5] {
            let mut iters: Vec<_> = (0..programs).map(|_| per_step(0..40, step)).collect();
            let mut got = vec![Vec::new(); programs];
            // Program i takes i % 4 + 1 ops at a turn, so they stop at every place in a step.
            for _ in 0..want.len() {
                for (i, it) in iters.iter_mut().enumerate() {
                    got[i].extend(it.by_ref().take(i % 4 + 1));
                }
            }
            assert!(got.iter().all(|g| *g == want), "{programs} programs");
        }
    }
}
