//! Gloo's `allreduce_bcube` (Gloo's algorithm index; `gloo/allreduce_bcube.h`): halving
//! and doubling generalised from pairs to groups of `base` ranks. With P = b^m, rank r's
//! base-b digits name its groups: in step s it works with the b - 1 ranks that differ
//! from it only in digit s (distance b^s). Reduce-scatter: in step s each rank cuts what
//! it still owns into b parts, sends part j to the group member whose digit s is j, and
//! adds the b - 1 copies of its own part it receives; after m steps it owns 1/P of the
//! sum. Allgather: the same steps backwards, sending the finished part to the group and
//! copying in the others'. `2 m` steps, `2 (P-1)/P S` on the wire, like halving-doubling;
//! a larger base means fewer steps (fewer latencies) but b - 1 messages per step.
//!
//! **As in Gloo,** after adding what
//! a peer sent in reduce-scatter step s it notifies that peer that the receive buffer is
//! free (a message with no data, alpha on the ports), and in allgather step s it sends
//! to a peer only after that peer's notification of step s; after the allgather's last
//! step the group of step 0 exchanges one more round of notifications. Here a
//! reduce-scatter step's notifications go out at the start of the next step, before its
//! data, which is where Gloo's program sends them. Gloo sends to a group in ascending
//! rank order; here the member with digit d sends to digits d+1, d+2, ... (mod b), so that
//! in each round of messages every member receives from a different one. In ascending
//! order every member starts with the lowest, whose ports serve them one by one while
//! the others' stand idle, and which of them waits is the engine's arbitration (no
//! closed form); on Gloo's transports the sends are queued at once and the order matters
//! much less than on our ports.
//!
//! **P not a power of the base is refused** (`n/a`, with the reason). Gloo's setup builds
//! groups of ranks `first + i b^s` that exist, so for other P its later groups come up
//! short and some blocks never meet some ranks' data (P = 6, base 2: ranks 4 and 5 never
//! add into the second quarter of the vector), and Gloo's tests run it only on powers of
//! the base. Gloo also rounds tiny parts up to one element and wraps them around the
//! vector (which double-counts for some n < P); here parts are the even cut of
//! [`super::block`], empty where n < P.
//!
//! **Closed form:** the step recurrence ([`bcube`]). With base 2 it is
//! halving-doubling's time plus the notifications: `(log2 P + 1) alpha` with one NIC
//! (each shares the port with the data behind it), `alpha` with two or more. On a
//! uniform machine with P dividing n every rank does the same in every step up to which
//! peer is which, so one rank's steps are the recurrence
//! ([`stepped::symmetric_time`]): a group of 1,024 ranks costs microseconds there, not
//! the recurrence's seconds and gigabyte over four million messages. Where parts have
//! two lengths a larger base is not monotone in n (a step's b - 1 messages share ports
//! and reorder), so its bounds are those that hold in any port order.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "bcube",
    summary: "Gloo's allreduce_bcube: reduce-scatter then allgather in groups of `base` ranks, log_base P steps each",
    source: "Gloo allreduce_bcube (Gloo's algorithm index and gloo/allreduce_bcube.h)",
    requires: "P a power of base (1, b, b^2, ...); any n (n < P leaves empty parts)",
    closed_form: "the step recurrence of its 2 log_b P steps and notifications (on a uniform machine with P \
                  dividing n, one rank's steps: every rank does the same); base 2, P dividing n: \
                  halving_doubling's time + (log2 P + 1) alpha on one NIC, + alpha on two or more; \
                  P not dividing n: the same recurrence over the uneven parts where no port serves messages out of \
                  step order (the matrix's P = 8, 16), else bounds: base 2, the recurrence at n rounded down and up \
                  to a multiple of P; a larger base, the bounds that hold in any port order (parts of two lengths \
                  reorder a step's b - 1 messages, and one more element can cost half as much again)",
    params: &["base=2: ranks per group (at least 2); P must be a power of it"],
    build: |params| {
        let base = params.count_from("base", 2, 2)?;
        Ok(Box::new(Bcube { base }))
    },
};

/// See the module docs.
#[derive(Debug)]
pub struct Bcube {
    /// Ranks per group.
    pub base: usize,
}

/// Message kinds within a step.
const DATA: u32 = 0;
const NOTE: u32 = 1;

/// The schedule: steps `0..m` reduce-scatter on digit s, steps `m..2m` allgather on
/// digit `2m - 1 - step`, step 2m the last notifications.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BcubePlan {
    np: usize,
    n: usize,
    base: usize,
    digits: usize,
}

impl BcubePlan {
    /// The plan for `p` with groups of `base` (P a power of it).
    pub(crate) fn new(p: &Problem, base: usize) -> Self {
        let digits = if p.ranks <= 1 { 0 } else { p.ranks.ilog(base) as usize };
        BcubePlan { np: p.ranks, n: p.elems, base, digits }
    }

    /// `b^s`.
    fn stride(&self, s: usize) -> usize {
        self.base.pow(s as u32)
    }

    /// Rank r's digit s.
    fn digit(&self, r: usize, s: usize) -> usize {
        r / self.stride(s) % self.base
    }

    /// The member of r's group of step s whose digit s is j.
    fn peer(&self, r: usize, s: usize, j: usize) -> usize {
        r - self.digit(r, s) * self.stride(s) + j * self.stride(s)
    }

    /// Part j of what rank r owns before step s, as elements of the vector (which is cut
    /// into P blocks; r ends up owning one).
    fn part(&self, r: usize, s: usize, j: usize) -> Region {
        let lo: usize = (0..s).map(|i| self.digit(r, i) * self.np / self.stride(i + 1)).sum();
        let w = self.np / self.stride(s + 1);
        super::halving_doubling::blocks(self.n, self.np, lo + j * w, lo + (j + 1) * w)
    }

    /// The other digits of r's group of step s, in the order r sends to them: d+1, d+2,
    /// ... (mod b).
    fn others(&self, r: usize, s: usize) -> impl Iterator<Item = usize> + use<> {
        let (d, b) = (self.digit(r, s), self.base);
        (1..b).map(move |i| (d + i) % b)
    }

    /// Notifications to and from r's group of step s.
    fn notify(&self, r: usize, s: usize, out: &mut StepPlan) {
        let none = Region::vec(0, 0);
        for j in self.others(r, s) {
            let q = self.peer(r, s, j);
            out.sends.push(Send { to: q, kind: NOTE, src: none, reduce: false });
            out.recvs.push(Recv { from: q, kind: NOTE, dst: none, action: Action::Copy });
        }
    }
}

impl Stepped for BcubePlan {
    fn steps(&self) -> usize {
        if self.digits == 0 { 0 } else { 2 * self.digits + 1 }
    }

    fn plan(&self, r: usize, step: usize, out: &mut StepPlan) {
        let m = self.digits;
        if step == 2 * m {
            return self.notify(r, 0, out);
        }
        let (s, reduce) = if step < m { (step, true) } else { (2 * m - 1 - step, false) };
        // The notifications of the reduce-scatter step before this one go out first.
        if reduce && s > 0 {
            self.notify(r, s - 1, out);
        } else if !reduce && s == m - 1 {
            self.notify(r, s, out);
        }
        let d = self.digit(r, s);
        let mine = self.part(r, s, d);
        let action = if reduce { Action::Reduce } else { Action::Copy };
        for j in self.others(r, s) {
            let q = self.peer(r, s, j);
            let src = if reduce { self.part(r, s, j) } else { mine };
            out.sends.push(Send { to: q, kind: DATA, src, reduce });
        }
        for j in self.others(r, s) {
            let q = self.peer(r, s, j);
            let dst = if reduce { mine } else { self.part(r, s, j) };
            out.recvs.push(Recv { from: q, kind: DATA, dst, action });
        }
    }
}

impl Algorithm for Bcube {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.base == 2 { INFO.id.into() } else { format!("bcube(base={})", self.base) }
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        let mut q = 1usize;
        while q < p.ranks {
            q = q.saturating_mul(self.base);
        }
        if q != p.ranks {
            return Err(format!(
                "P = {} is not a power of base {}: Gloo's groups come up short for other P and some \
                 blocks never get some ranks' data; allowed here: P = {}",
                p.ranks,
                self.base,
                powers(self.base)
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = BcubePlan::new(&p, self.base);
        vec![stepped::program(plan, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((bcube(p, m, self.base)?, EXACT))
    }

    /// Blocks that differ by an element: the bounds that hold whatever order the ports
    /// serve messages in ([`cost_model::lockstep_bounds`]). The exact forms at n rounded
    /// down and up to a multiple of P are none: parts of two lengths reorder the ports
    /// (at 64 ranks in one group one extra element took the time from 0.92 ms to
    /// 1.40 ms, past the form at n rounded up; base 2 on 8 ranks by 1%).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = BcubePlan::new(p, self.base);
        Some(stepped::bounds(&plan, m.topo, m.cost_per_byte, p.elem_bytes))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        BcubePlan::new(p, self.base).digits * (self.base - 1)
    }
}

/// The first powers of `base` a rank count can be (`1, 3, 9, ...`), stopping where the
/// next would not fit a `usize`: a huge base lists only `1, base`.
fn powers(base: usize) -> String {
    let mut shown = vec!["1".to_string()];
    let mut q = 1usize;
    for _ in 0..2 {
        match q.checked_mul(base) {
            Some(next) => {
                q = next;
                shown.push(q.to_string());
            }
            None => return shown.join(", "),
        }
    }
    if q.checked_mul(base).is_some() {
        shown.push("...".to_string());
    }
    shown.join(", ")
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Whether bcube with parts of two lengths (P not dividing n) on `ranks` ranks in groups
/// of `base` is past what its step recurrence is tried on: two of its steps, `P (b - 1)`
/// messages each, past [`SWEEP_LIMIT`](cost_model::SWEEP_LIMIT), `direct`'s rule
/// ([`super::direct::uneven_too_large`]) for a group of every rank, which bcube is at
/// base = P. There the parts of two lengths reorder the ports and the recurrence gave up
/// at every point tried (512 and 1,024 ranks in one group, 1 and 2 NICs), after 14 s of
/// CPU and 730 MB at 1,024. Decided on P and the base alone, before any work, so the
/// outcome is the same on every machine; these points take the bounds.
pub fn uneven_too_large(ranks: usize, base: usize) -> bool {
    ranks.saturating_mul(base.saturating_sub(1)).saturating_mul(2) > cost_model::SWEEP_LIMIT
}

/// Gloo's `allreduce_bcube` with groups of `base` ranks: the step recurrence
/// ([`lockstep`](crate::cost_model::lockstep)) of its `2 log_b P` steps and the notifications between them (each a
/// message without data, alpha). With base 2, P a power of two dividing n and one NIC it
/// is [`halving_doubling`](crate::algos::forms::halving_doubling) plus `(log2 P + 1) alpha`: every reduce-scatter step after
/// the first, the first allgather step and the closing round each carry one notification
/// ahead of the data on the one port; with two or more NICs the notifications travel
/// beside the data and only the closing round's adds alpha. With a larger base a rank's
/// b - 1 messages of a step queue for its ports, which the recurrence follows; `None`
/// where a port would serve them out of step order, and for P not a power of the base.
///
/// Gloo's index gives no formula for bcube.
pub fn bcube(p: &Problem, m: &Machine, base: usize) -> Option<f64> {
    let mut q = 1usize;
    while q < p.ranks {
        q = q.saturating_mul(base.max(2));
    }
    if q != p.ranks {
        return None;
    }
    let plan = crate::algos::BcubePlan::new(p, base);
    let even = p.elems.is_multiple_of(p.ranks.max(1));
    if !even && uneven_too_large(p.ranks, base) {
        return None;
    }
    // On a uniform machine with P dividing n every part of a step has one length and
    // every rank does the same up to which peer is which: one rank's steps are the time.
    if let Some(h) = cost_model::Hockney::of(m)
        && even
        && let Some(t) = stepped::symmetric_time(&plan, &h, p.elem_bytes)
    {
        return Some(t);
    }
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{FullyConnected, Link};

    /// On uniform machines with P dividing n, one rank's steps give the time the step
    /// recurrence books for every rank, to the bit: bases 2 to 8, one to four ports,
    /// with and without reductions, latency-bound and bandwidth-bound, including
    /// groups larger than the ports (notifications and data sharing a round).
    #[test]
    fn one_ranks_steps_are_the_recurrence_on_uniform_machines() {
        let mut checked = 0;
        for base in [2usize, 3, 4, 5, 8] {
            let mut np = base;
            while np <= 128 {
                for nics in 1..=4u32 {
                    for (alpha, bandwidth) in [(1e-6, 1e10), (3e-9, 1e12), (2e-5, 1e8)] {
                        for c in [0.0, 5e-11, 2e-9] {
                            for per_rank in [1usize, 7, 1024] {
                                let topo = FullyConnected { ranks: np, link: Link { alpha, bandwidth }, nics };
                                let m = Machine { topo: &topo, cost_per_byte: c };
                                let p = Problem { ranks: np, elems: np * per_rank, elem_bytes: 4 };
                                let plan = BcubePlan::new(&p, base);
                                let h = cost_model::Hockney::of(&m).expect("uniform");
                                let fast = stepped::symmetric_time(&plan, &h, p.elem_bytes).expect("alpha > 0");
                                let steps = crate::algos::stepped_time(&plan, &topo, c, p.elem_bytes)
                                    .expect("the recurrence holds on uniform machines");
                                assert_eq!(
                                    fast.to_bits(),
                                    steps.to_bits(),
                                    "base {base}, P {np}, {nics} NICs, alpha {alpha}, B {bandwidth}, C {c}, n/P {per_rank}: \
                                     {fast} vs {steps}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
                np *= base;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// A message of no time is not followed (the engine holds its ports until the
    /// instant's next round): the recurrence or the bounds answer instead.
    #[test]
    fn no_latency_leaves_it_to_the_recurrence() {
        let topo = FullyConnected { ranks: 4, link: Link { alpha: 0.0, bandwidth: 1e10 }, nics: 1 };
        let m = Machine { topo: &topo, cost_per_byte: 0.0 };
        let p = Problem { ranks: 4, elems: 16, elem_bytes: 4 };
        let h = cost_model::Hockney::of(&m).expect("uniform");
        assert_eq!(stepped::symmetric_time(&BcubePlan::new(&p, 2), &h, p.elem_bytes), None);
    }
}
