//! A data plane that writes down what the engine does to the data instead of doing it,
//! so that the data can be generated, moved, reduced and checked afterwards, a few
//! thousand elements at a time ([`super::verify_log`]).
//!
//! The engine calls the same four operations as on a [`super::Plane`]: a send takes its
//! region's values (`load`), a receive copies or reduces them in (`store`,
//! `reduce_into`), a local reduction combines two regions of one rank. The log keeps them
//! in the order they were called, which is the only order that matters: replaying them in
//! that order leaves every buffer bit for bit as the plane would have.
//!
//! A send's values need no copy of their own when nothing overwrites its region before
//! the message is consumed: the consumption can then read the sender's region itself.
//! The log finds out which sends do need one (a later write to the sender's buffer that
//! overlaps the region while the message is in flight) and marks only those.

use std::cell::RefCell;

use super::{DataPlane, Payload};
use crate::sim::op::{BufId, Region};

/// Where a consumed message's values come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The copy taken when it was sent, in slot `.0` (see [`Entry::Snapshot`]).
    Slot(u32),
    /// The sender's region as it is at consumption (it was not written in between).
    Direct {
        /// The sender.
        rank: u32,
        /// Its region.
        reg: Region,
    },
}

/// One operation on the data, in the order the engine performed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A message is sent: if `needed`, copy `reg` of `rank` into slot `slot` now,
    /// because the region is overwritten before the message is consumed; otherwise
    /// nothing (the consumption reads the region itself).
    Snapshot {
        /// The slot the copy goes to (free again once the message is consumed).
        slot: u32,
        /// The sender.
        rank: u32,
        /// Its region.
        reg: Region,
        /// Whether a copy is needed.
        needed: bool,
    },
    /// A message is consumed: `reg` of `rank` is overwritten with its values
    /// (`reduce` false) or combined with them (`reduce` true).
    Consume {
        /// The receiver.
        rank: u32,
        /// Where the values go.
        reg: Region,
        /// Reduce (true) or copy (false).
        reduce: bool,
        /// Where they come from.
        src: Source,
    },
    /// `dst = dst (op) src`, both regions of `rank`.
    Local {
        /// The rank.
        rank: u32,
        /// Operand read.
        src: Region,
        /// Operand read and written.
        dst: Region,
    },
}

/// A message in flight: where its [`Entry::Snapshot`] is and what region it reads.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    entry: usize,
    rank: u32,
    reg: Region,
}

#[derive(Debug, Default)]
struct State {
    entries: Vec<Entry>,
    /// Slot -> the message in it.
    slots: Vec<Option<InFlight>>,
    free: Vec<u32>,
    /// Rank -> the slots of its messages in flight (to find the sends a write overlaps).
    sending: Vec<Vec<u32>>,
    /// Every message and local reduction reads the same indices it writes.
    index_preserving: bool,
}

/// The log of one run's data operations (see the module docs).
#[derive(Debug)]
pub struct OpLog {
    /// Elements of buffer `b` of every rank (0: the vector, then the scratch buffers).
    lens: Vec<usize>,
    ranks: usize,
    state: RefCell<State>,
}

/// Bytes one [`Entry`] takes in the log (for the decision whether a log is worth it).
pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();

impl OpLog {
    /// An empty log for `ranks` ranks whose vectors hold `n` elements and whose scratch
    /// buffers `scratch[i]`.
    pub fn new(ranks: usize, n: usize, scratch: &[usize]) -> Self {
        let state = State { sending: vec![Vec::new(); ranks], index_preserving: true, ..State::default() };
        OpLog { lens: std::iter::once(n).chain(scratch.iter().copied()).collect(), ranks, state: RefCell::new(state) }
    }

    /// Ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Elements of each buffer (0: the vector, then the scratch buffers).
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }

    /// Elements in buffer `buf` (0 if there is none).
    pub(super) fn buf_len(&self, buf: BufId) -> usize {
        self.lens.get(buf as usize).copied().unwrap_or(0)
    }

    /// The operations, in order.
    pub fn entries(&self) -> std::cell::Ref<'_, [Entry]> {
        std::cell::Ref::map(self.state.borrow(), |s| s.entries.as_slice())
    }

    /// Slots a replay needs (the most messages that were in flight at once).
    pub fn slots(&self) -> usize {
        self.state.borrow().slots.len()
    }

    /// Whether every operation reads the same indices it writes (a message's two regions,
    /// a local reduction's two regions start at the same offset), so that each index of
    /// the buffers evolves on its own and a replay may take a few indices at a time.
    pub fn index_preserving(&self) -> bool {
        self.state.borrow().index_preserving
    }

    /// Messages whose region was overwritten while they were in flight (their values are
    /// copied when sent).
    pub fn snapshots(&self) -> usize {
        self.entries().iter().filter(|e| matches!(e, Entry::Snapshot { needed: true, .. })).count()
    }

    pub(super) fn load(&self, rank: usize, reg: Region, out: &mut Payload) {
        let mut st = self.state.borrow_mut();
        let entry = st.entries.len();
        let msg = InFlight { entry, rank: rank as u32, reg };
        let slot = match st.free.pop() {
            Some(s) => {
                st.slots[s as usize] = Some(msg);
                s
            }
            None => {
                st.slots.push(Some(msg));
                (st.slots.len() - 1) as u32
            }
        };
        st.sending[rank].push(slot);
        st.entries.push(Entry::Snapshot { slot, rank: rank as u32, reg, needed: false });
        out.slot = slot;
    }

    /// `reg` of `rank` is about to be written: the messages in flight that read an
    /// overlapping part of it need their copy.
    fn writes(st: &mut State, rank: usize, reg: Region) {
        let State { sending, slots, entries, .. } = st;
        for &s in &sending[rank] {
            if let Some(m) = slots[s as usize]
                && m.reg.buf == reg.buf
                && m.reg.offset < reg.end()
                && reg.offset < m.reg.end()
                && let Entry::Snapshot { needed, .. } = &mut entries[m.entry]
            {
                *needed = true;
            }
        }
    }

    fn consume(&self, rank: usize, reg: Region, data: &Payload, reduce: bool) {
        let mut st = self.state.borrow_mut();
        Self::writes(&mut st, rank, reg);
        let slot = data.slot;
        let Some(m) = st.slots[slot as usize].take() else {
            return;
        };
        st.free.push(slot);
        let list = &mut st.sending[m.rank as usize];
        if let Some(i) = list.iter().position(|&s| s == slot) {
            list.swap_remove(i);
        }
        let needed = matches!(st.entries[m.entry], Entry::Snapshot { needed: true, .. });
        let src = if needed { Source::Slot(slot) } else { Source::Direct { rank: m.rank, reg: m.reg } };
        if m.reg.offset != reg.offset {
            st.index_preserving = false;
        }
        st.entries.push(Entry::Consume { rank: rank as u32, reg, reduce, src });
    }

    pub(super) fn store(&self, rank: usize, reg: Region, data: &Payload) {
        self.consume(rank, reg, data, false);
    }

    pub(super) fn reduce_into(&self, rank: usize, reg: Region, data: &Payload) {
        self.consume(rank, reg, data, true);
    }

    pub(super) fn reduce_local(&self, rank: usize, src: Region, dst: Region) {
        let mut st = self.state.borrow_mut();
        Self::writes(&mut st, rank, dst);
        if src.offset != dst.offset {
            st.index_preserving = false;
        }
        st.entries.push(Entry::Local { rank: rank as u32, src, dst });
    }

    /// Replay the log on `plane` (whole vectors, as the engine would have done it):
    /// for a log that is not index preserving ([`super::verify_log`] needs one that is).
    pub fn replay(&self, plane: &mut DataPlane) {
        let mut slots: Vec<Payload> = Vec::new();
        slots.resize_with(self.slots(), Payload::default);
        let mut direct = Payload::default();
        for e in self.entries().iter() {
            match *e {
                Entry::Snapshot { needed: false, .. } => {}
                Entry::Snapshot { slot, rank, reg, needed: true } => {
                    plane.load(rank as usize, reg, &mut slots[slot as usize])
                }
                Entry::Consume { rank, reg, reduce, src } => {
                    let data = match src {
                        Source::Slot(s) => &slots[s as usize],
                        Source::Direct { rank: from, reg: from_reg } => {
                            plane.load(from as usize, from_reg, &mut direct);
                            &direct
                        }
                    };
                    if reduce {
                        plane.reduce_into(rank as usize, reg, data);
                    } else {
                        plane.store(rank as usize, reg, data);
                    }
                }
                Entry::Local { rank, src, dst } => plane.reduce_local(rank as usize, src, dst),
            }
        }
    }
}
