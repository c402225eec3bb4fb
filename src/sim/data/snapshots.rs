//! The values of the messages in flight, one copy for the sends that read the same
//! unchanged region.
//!
//! A send takes its region's values when it is issued (a program may write the region
//! before the message lands), so a plane that moves data holds a copy for each message in
//! flight. Sends of one region with no write to their rank in between read the same
//! values: `naive` sends a rank's whole vector to each of the P - 1 others at once, a tree
//! or `direct`'s allgather a block to each child or peer. Copied once a send, `naive` at
//! 1,000 ranks held 10^6 vectors at once (28 GB at 28 KB) where the ranks' own vectors
//! are 28 MB; shared, it holds one a rank.
//!
//! A copy is shared while its rank has not been written since it was taken (any write to
//! any of the rank's buffers ends the sharing: simple, and exact, since the values read
//! are then the copy's), and only between sends of the same region. A logging plane
//! ([`super::OpLog`]) files an entry a message and keeps no values: nothing is shared.

use super::{DataPlane, Payload};
use crate::sim::op::Region;

const NONE: u32 = u32::MAX;

/// The copies of the messages in flight, by message slot (see the module docs).
#[derive(Debug, Default)]
pub struct Snapshots {
    /// The copies; a free one keeps its capacity for the next.
    pool: Vec<Payload>,
    /// Per copy: the messages reading it, and the rank it was taken from.
    refs: Vec<(u32, u32)>,
    free: Vec<u32>,
    /// Per message slot: its copy.
    of_msg: Vec<u32>,
    /// Per rank: its last copy and the region it was taken of, while the rank has not
    /// been written since (`NONE` otherwise).
    latest: Vec<(u32, Region)>,
    /// Whether copies are shared (not on a logging plane).
    share: bool,
    /// Bytes of the copies read by messages in flight, and the most at once.
    held: u64,
    peak: u64,
}

impl Snapshots {
    /// For `ranks` ranks on `plane`.
    pub fn new(ranks: usize, plane: &DataPlane) -> Self {
        let share = !matches!(plane, DataPlane::Log(_));
        let latest = if share { vec![(NONE, Region::vec(0, 0)); ranks] } else { Vec::new() };
        Snapshots { latest, share, ..Snapshots::default() }
    }

    /// Message slot `msg` sends `reg` of `rank`: the copy of it, shared if there is one.
    #[inline]
    pub fn take(&mut self, plane: &DataPlane, rank: usize, reg: Region, msg: u32) {
        if self.of_msg.len() <= msg as usize {
            self.of_msg.resize(msg as usize + 1, NONE);
        }
        if self.share {
            let (c, at) = self.latest[rank];
            if c != NONE && at == reg {
                self.refs[c as usize].0 += 1;
                self.of_msg[msg as usize] = c;
                return;
            }
        }
        let c = match self.free.pop() {
            Some(c) => c,
            None => {
                self.pool.push(Payload::default());
                self.refs.push((0, 0));
                (self.pool.len() - 1) as u32
            }
        };
        plane.load(rank, reg, &mut self.pool[c as usize]);
        self.refs[c as usize] = (1, rank as u32);
        self.of_msg[msg as usize] = c;
        if self.share {
            self.latest[rank] = (c, reg);
        }
        self.held += self.pool[c as usize].bytes();
        self.peak = self.peak.max(self.held);
    }

    /// The values message slot `msg` carries.
    #[inline]
    pub fn of(&self, msg: u32) -> &Payload {
        &self.pool[self.of_msg[msg as usize] as usize]
    }

    /// A buffer of `rank` is written: its copies are no longer its values.
    #[inline]
    pub fn written(&mut self, rank: usize) {
        if self.share {
            self.latest[rank].0 = NONE;
        }
    }

    /// Message slot `msg` landed in a buffer of `rank` ([`Snapshots::written`]): its copy
    /// is freed once no message reads it.
    #[inline]
    pub fn landed(&mut self, msg: u32, rank: usize) {
        self.written(rank);
        let c = std::mem::replace(&mut self.of_msg[msg as usize], NONE);
        let (refs, rank) = &mut self.refs[c as usize];
        *refs -= 1;
        if *refs == 0 {
            if self.share && self.latest[*rank as usize].0 == c {
                self.latest[*rank as usize].0 = NONE;
            }
            self.held -= self.pool[c as usize].bytes();
            self.free.push(c);
        }
    }

    /// The most bytes of values the messages in flight held at once.
    pub fn peak_bytes(&self) -> u64 {
        self.peak
    }
}
