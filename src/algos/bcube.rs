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
//! (each shares the port with the data behind it), `alpha` with two or more.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, ParamError, Problem, Topology};
use crate::cost_model;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "bcube",
    summary: "Gloo's allreduce_bcube: reduce-scatter then allgather in groups of `base` ranks, log_base P steps each",
    source: "Gloo allreduce_bcube (Gloo's algorithm index and gloo/allreduce_bcube.h)",
    requires: "P a power of base (1, b, b^2, ...); any n (n < P leaves empty parts)",
    closed_form: "the step recurrence of its 2 log_b P steps and notifications; base 2, P dividing n: \
                  halving_doubling's time + (log2 P + 1) alpha on one NIC, + alpha on two or more; \
                  P not dividing n: the same recurrence over the uneven parts where no port serves messages out of \
                  step order (the matrix's P = 8, 16), else bounds, the recurrence at n rounded down and up to a \
                  multiple of P",
    params: &["base=2: ranks per group (at least 2); P must be a power of it"],
    build: |params| {
        let base = params.count("base", 2)?;
        if base < 2 {
            return Err(ParamError::new(Some("base"), format!("'base' must be at least 2, not {base}")));
        }
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

    /// Blocks that differ by an element: the exact forms at n rounded down and up to a
    /// multiple of P.
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        cost_model::rounding_bounds(p, p.ranks, |q| bcube(q, m, self.base))
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
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}
