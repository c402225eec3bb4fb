//! A barrier's check: no rank leaves before it has heard, directly or through others,
//! from every rank. A barrier moves no data, so there is nothing to compare with an exact
//! result; what it must get right is causality, and that is checkable from its messages.
//!
//! [`Causality`] watches a run's messages (sender, receiver, when issued, when
//! delivered). Afterwards, for every pair, the earliest time rank `r` has heard from rank
//! `q`: its own arrival at 0, then a message issued by `s` at `t` carries everything `s`
//! had heard by `t` to its receiver at delivery. Rank `r` leaves at its last message's
//! end (a barrier computes nothing); it must have heard from every rank by then.
//!
//! The table of earliest times has P^2 entries, so the check runs up to
//! [`MAX_RANKS`] ranks; above, `verified` stays empty.

use crate::sim::engine::{MessageInfo, Observer};
use crate::sim::op::Rank;

/// The most ranks the check runs on (a table of P^2 times: 512 KiB at 256 ranks).
pub const MAX_RANKS: usize = 256;

/// One message: sender, receiver, issued, delivered.
#[derive(Clone, Copy, Debug)]
struct Msg {
    src: Rank,
    dst: Rank,
    issued: f64,
    end: f64,
}

/// Records a barrier's messages; [`Causality::check`] then says whether every rank heard
/// from every other before it left.
#[derive(Debug, Default)]
pub struct Causality {
    ranks: usize,
    msgs: Vec<Msg>,
    /// Under the flow model, the message each engine handle stands for until delivered.
    open: Vec<u32>,
}

/// The first rank found to leave too early.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Early {
    /// The rank that left.
    pub rank: Rank,
    /// When it left, seconds.
    pub left: f64,
    /// A rank it had not heard from by then.
    pub unheard: Rank,
}

impl Causality {
    /// A recorder for a run on `ranks` ranks.
    pub fn new(ranks: usize) -> Self {
        Causality { ranks, msgs: Vec::new(), open: Vec::new() }
    }

    /// `Ok` when every rank heard from every rank before it left; else the first rank
    /// (lowest) that did not, and one rank it missed (lowest).
    pub fn check(&self) -> Result<(), Early> {
        let p = self.ranks;
        // heard[r * p + q]: when r first heard from q.
        let mut heard = vec![f64::INFINITY; p * p];
        for r in 0..p {
            heard[r * p + r] = 0.0;
        }
        let mut left = vec![0.0f64; p];
        for m in &self.msgs {
            for r in [m.src, m.dst] {
                left[r as usize] = left[r as usize].max(m.end);
            }
        }
        // In order of issue, a message carries what its sender had heard by then: any
        // message that reached the sender by then was issued earlier, so it is already
        // counted, except at ties of zero-time messages; passes repeat until nothing
        // changes (at most a few).
        let mut order: Vec<usize> = (0..self.msgs.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&self.msgs[a], &self.msgs[b]);
            x.issued.total_cmp(&y.issued).then(x.end.total_cmp(&y.end)).then(a.cmp(&b))
        });
        loop {
            let mut changed = false;
            for &i in &order {
                let m = self.msgs[i];
                let (s, d) = (m.src as usize, m.dst as usize);
                for q in 0..p {
                    if heard[s * p + q] <= m.issued && m.end < heard[d * p + q] {
                        heard[d * p + q] = m.end;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for r in 0..p {
            if let Some(q) = (0..p).find(|&q| heard[r * p + q] > left[r]) {
                return Err(Early { rank: r as Rank, left: left[r], unheard: q as Rank });
            }
        }
        Ok(())
    }
}

impl Observer for Causality {
    fn message(&mut self, m: &MessageInfo, _start: f64, end: f64) {
        if end.is_infinite() {
            let id = m.id as usize;
            if self.open.len() <= id {
                self.open.resize(id + 1, u32::MAX);
            }
            self.open[id] = self.msgs.len() as u32;
        }
        self.msgs.push(Msg { src: m.src, dst: m.dst, issued: m.issued, end });
    }

    fn message_end(&mut self, m: &MessageInfo, end: f64) {
        if let Some(&i) = self.open.get(m.id as usize)
            && let Some(msg) = self.msgs.get_mut(i as usize)
        {
            msg.end = end;
        }
    }
}

/// Two observers at once: the run's own (timeline, critical path) and a barrier's
/// [`Causality`] where there is one.
pub struct Both<'a, O: Observer> {
    /// The run's observer.
    pub first: &'a mut O,
    /// The barrier's recorder, if the point is a barrier small enough to check.
    pub causality: Option<Causality>,
}

impl<O: Observer> Observer for Both<'_, O> {
    fn message(&mut self, m: &MessageInfo, start: f64, end: f64) {
        self.first.message(m, start, end);
        if let Some(c) = &mut self.causality {
            c.message(m, start, end);
        }
    }
    fn message_end(&mut self, m: &MessageInfo, end: f64) {
        self.first.message_end(m, end);
        if let Some(c) = &mut self.causality {
            c.message_end(m, end);
        }
    }
    fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
        self.first.compute(rank, bytes, start, end);
    }
    fn wants_link_loads(&self) -> bool {
        self.first.wants_link_loads()
    }
    fn link_loads(&mut self, links: &[crate::sim::flow::LinkStat], loads: Vec<(u32, f64, f64)>) {
        self.first.link_loads(links, loads);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(c: &mut Causality, src: Rank, dst: Rank, issued: f64, end: f64) {
        let m = MessageInfo { id: 0, src, dst, tag: 0, bytes: 0, issued };
        c.message(&m, issued, end);
    }

    #[test]
    fn a_relay_counts_and_a_rank_leaving_early_is_caught() {
        // 0 -> 1 -> 2 -> 0 then 0 -> 2 ... : a ring of three passed twice.
        let mut c = Causality::new(3);
        msg(&mut c, 0, 1, 0.0, 1.0);
        msg(&mut c, 1, 2, 1.0, 2.0);
        msg(&mut c, 2, 0, 2.0, 3.0);
        msg(&mut c, 0, 1, 3.0, 4.0);
        msg(&mut c, 1, 2, 4.0, 5.0);
        assert_eq!(c.check(), Ok(()));
        // Without the second lap, rank 1 leaves at 1 s having heard only from rank 0.
        let mut c = Causality::new(3);
        msg(&mut c, 0, 1, 0.0, 1.0);
        msg(&mut c, 1, 2, 1.0, 2.0);
        msg(&mut c, 2, 0, 2.0, 3.0);
        assert_eq!(c.check(), Err(Early { rank: 1, left: 2.0, unheard: 2 }));
    }

    #[test]
    fn what_a_sender_hears_after_issuing_does_not_travel() {
        let mut c = Causality::new(2);
        msg(&mut c, 0, 1, 0.0, 2.0);
        msg(&mut c, 1, 0, 1.0, 1.5);
        // Rank 1 left at 2 s (its send ended at 1.5, the receive at 2): it heard from 0 at 2.
        assert_eq!(c.check(), Ok(()));
        let mut c = Causality::new(2);
        msg(&mut c, 0, 1, 0.0, 1.0);
        assert_eq!(c.check(), Err(Early { rank: 0, left: 1.0, unheard: 1 }));
    }
}
