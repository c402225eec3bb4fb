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
/// handle: the number of `Recv`/`Reduce` ops this rank issued before it, starting at 0.
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
    /// A local reduction `dst = dst (op) src` on the compute unit.
    Reduce {
        /// Operand read.
        src: Region,
        /// Operand read and written.
        dst: Region,
    },
    /// Block until the `Recv`/`Reduce` with this handle has completed.
    Wait(u32),
    /// Block until every `Recv`/`Reduce` issued so far has completed.
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
/// keeps two); this keeps only the step number and the position within the step, and
/// calls `step` again for each op it hands out, so `step` must depend on `k` alone. A
/// rank's program is then a few words, which is what lets a million ranks run in little
/// memory, and handing out an op costs a few instructions instead of a copy of the step.
pub fn per_step<K, I, F>(steps: K, step: F) -> PerStep<K, F>
where
    K: Iterator,
    K::Item: Copy,
    F: Fn(K::Item) -> I,
    I: IntoIterator<Item = Op>,
{
    PerStep { steps, current: None, at: 0, step }
}

/// The iterator of [`per_step`].
#[derive(Clone, Debug)]
pub struct PerStep<K: Iterator, F> {
    steps: K,
    current: Option<K::Item>,
    /// How many ops of the current step were handed out.
    at: u32,
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
        loop {
            let k = match self.current {
                Some(k) => k,
                None => {
                    let k = self.steps.next()?;
                    self.current = Some(k);
                    self.at = 0;
                    k
                }
            };
            if let Some(op) = (self.step)(k).into_iter().nth(self.at as usize) {
                self.at += 1;
                return Some(op);
            }
            self.current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps of different lengths, empty ones included, come out as `flat_map` gives them.
    #[test]
    fn per_step_is_flat_map() {
        let step = |k: u32| (0..k % 4).map(move |i| Op::Wait(10 * k + i));
        let want: Vec<Op> = (0..9).rev().flat_map(step).collect();
        assert_eq!(per_step((0..9).rev(), step).collect::<Vec<_>>(), want);
        assert_eq!(want.len(), 12);
    }
}
