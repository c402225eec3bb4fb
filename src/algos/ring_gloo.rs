//! Gloo's `allreduce_ring` (Gloo's algorithm index; `gloo/allreduce_ring.h`): the whole
//! vector travels the ring. In round k every rank sends its right neighbour the vector it
//! received in round k-1 (its own in round 0), receives its left neighbour's, and adds
//! it in; after P-1 rounds every rank has added every other rank's original vector.
//! `P S` on the wire per rank (Gloo counts the P-1 sends and the local copy) against the
//! ring's `2(P-1)/P S`, and `(P-1) S C` of additions against `(P-1)/P S C`: it trades
//! bandwidth for having only P-1 steps, which pays only for tiny vectors and only with
//! two or more NICs (with one, each round's notification costs what the step saved).
//!
//! As in Gloo, each round ends with a notification: once a rank has added the vector it
//! received, it tells its left neighbour that its inbox is free (a message with no data,
//! `alpha` on the ports), and it sends the next round's vector only once its right
//! neighbour has told it the same. With one NIC the notification and the data share the
//! outgoing port, so a round costs `T(S) + R(S) + alpha`; with two or more they travel
//! side by side and only the last notification shows.
//!
//! The vector received in round k is kept (scratch buffer `1 + k mod 2`) because it is
//! what goes on in round k+1: Gloo's inbox and outbox.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model::Hockney;
use crate::sim::op::{Action, BufId, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "ring_gloo",
    summary: "Gloo's allreduce_ring: whole vectors passed around the ring P-1 times, each added on arrival",
    source: "Gloo allreduce_ring (Gloo's algorithm index)",
    requires: "any P >= 1, any n",
    closed_form: "T = alpha + S/B, R = S C: (P-1)(T + R) + (P-1) alpha with one NIC \
                  (each round's notification shares the port), (P-1)(T + R) + alpha with two or more",
    params: &[],
    build: |_| Ok(Box::new(RingGloo)),
};

/// See the module docs.
#[derive(Debug)]
pub struct RingGloo;

/// Message kinds within a step.
const DATA: u32 = 0;
const NOTE: u32 = 1;

/// The rounds as steps: step k < P-1 is round k (with round k-1's notification), step
/// P-1 the last notification.
#[derive(Clone, Copy, Debug)]
struct RingGlooPlan {
    np: usize,
    n: usize,
}

/// The scratch buffer round k receives into.
fn inbox(k: usize) -> BufId {
    1 + (k % 2) as BufId
}

impl Stepped for RingGlooPlan {
    fn steps(&self) -> usize {
        // Gloo returns at once for an empty vector.
        if self.np <= 1 || self.n == 0 { 0 } else { self.np }
    }

    fn plan(&self, rank: usize, k: usize, out: &mut StepPlan) {
        let (np, n) = (self.np, self.n);
        let (left, right) = ((rank + np - 1) % np, (rank + 1) % np);
        let none = Region::vec(0, 0);
        if k > 0 {
            out.sends.push(Send { to: left, kind: NOTE, src: none, reduce: false });
            out.recvs.push(Recv { from: right, kind: NOTE, dst: none, action: Action::Copy });
        }
        if k + 1 < np {
            let src = if k == 0 { Region::vec(0, n) } else { Region::scratch(inbox(k - 1), 0, n) };
            let landed = Region::scratch(inbox(k), 0, n);
            out.sends.push(Send { to: right, kind: DATA, src, reduce: false });
            out.recvs.push(Recv { from: left, kind: DATA, dst: landed, action: Action::Copy });
            out.local.push((landed, Region::vec(0, n)));
        }
    }
}

impl Algorithm for RingGloo {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = RingGlooPlan { np: p.ranks, n: p.elems };
        vec![stepped::program(plan, rank as usize, topo.nics(rank as usize))]
    }

    fn scratch(&self, p: &Problem) -> Vec<usize> {
        if p.ranks > 2 { vec![p.elems, p.elems] } else { vec![p.elems] }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = RingGlooPlan { np: p.ranks, n: p.elems };
        Some((stepped::formula_or_steps(&plan, p, m, |h| ring_gloo(p, h))?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Gloo's `allreduce_ring`: P-1 rounds, each a whole-vector message `T(S)` and its
/// addition `R(S)`, then the notification that the inbox is free (a message without data,
/// alpha). With one NIC a rank's notification to its left neighbour and its next vector
/// to its right neighbour leave through the same port one after the other, so every
/// round costs `T(S) + R(S) + alpha`: `(P-1)(T(S) + R(S) + alpha)`. With two or more they
/// go side by side and only the last notification adds: `(P-1)(T(S) + R(S)) + alpha`.
/// Every rank does the same at the same instants, so no port is ever wanted twice.
///
/// Gloo's index gives no time, only `P-1` steps and `P S` bytes on the wire; the ring
/// ([`ring`](crate::algos::forms::ring)) moves `2 (P-1)/P S` in `2(P-1)` steps. With one NIC ring_gloo never wins:
/// its rounds cost `2 alpha + S/B + S C` against two ring steps'
/// `2 alpha + 2 S/(P B) + S C / P`. With two or more it wins only while `S/B + S C` stays
/// below about alpha (it saves P-2 latencies and pays P times the bytes and the additions).
pub fn ring_gloo(p: &Problem, h: &Hockney) -> f64 {
    if p.ranks <= 1 || p.elems == 0 {
        return 0.0;
    }
    let rounds = (p.ranks - 1) as f64;
    let notes = if h.nics <= 1 { rounds } else { 1.0 };
    rounds * (h.t(p.bytes()) + h.r(p.bytes())) + notes * h.alpha
}
