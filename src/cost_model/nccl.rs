//! NCCL's ring and tree pipelines (`nccl_ring`, `nccl_tree`) in the ideal model, as
//! recurrences over their schedules (docs/nccl.md), evaluated without the engine.
//!
//! Both read the schedule from the algorithm's own plan (which chunk each message
//! carries, what it waits for) and apply the machine model's rules to it: a message
//! starts when it is issued and its sender's port (and its receiver's) is free, costs
//! `alpha + m/B`, and a received chunk that is added takes `m C` on the receiver's one
//! compute unit, in arrival order.

use super::Hockney;
use crate::algos::nccl_ring::{RingPlan, Wait};
use crate::sim::op::Action;

/// One channel of `nccl_ring`, every rank holding one port for it: the finish time, and
/// whether any slice waited for its sender's port (was issued before the sender's
/// previous slice of the channel had arrived).
///
/// Position q sends item s to q + 1 only and receives it from q - 1 only, so with one
/// port its messages leave and arrive in program order: slice s starts at
/// `max(issue, end of q's slice s-1)` and arrives `T(m)` later; a reduced slice is done
/// `R(m)` after both its arrival and the position's previous addition. Item s + 1 is
/// issued when the receive it waits for is done (the item `slices` before, or the whole
/// loop at a loop's end).
fn ring_channel(plan: &RingPlan, k: usize, h: &Hockney) -> (f64, bool) {
    let np = plan.np;
    let items = plan.items(k);
    if items == 0 {
        return (0.0, false);
    }
    let e = plan.elem_bytes as f64;
    let slices = plan.slices;
    // Per position: when its next item is issued, when its port is free, when its
    // compute unit is free, when the receives of the current loop are all done, and
    // the done times of its last `slices` receives.
    let mut issue = vec![0.0f64; np];
    let mut port = vec![0.0f64; np];
    let mut compute = vec![0.0f64; np];
    let mut loop_done = vec![0.0f64; np];
    let mut done = vec![0.0f64; np * slices];
    let mut arrive = vec![0.0f64; np];
    let mut waited = false;
    let mut end = 0.0f64;
    for s in 0..items {
        // Slice s from every position to the next.
        for q in 0..np {
            let it = plan.item(k, q, s);
            let start = issue[q].max(port[q]);
            waited |= port[q] > issue[q];
            port[q] = start + h.t(it.send.len as f64 * e);
            arrive[(q + 1) % np] = port[q];
        }
        for q in 0..np {
            let it = plan.item(k, q, s);
            let d = match it.action {
                Action::Reduce => {
                    compute[q] = compute[q].max(arrive[q]) + h.r(it.recv.len as f64 * e);
                    compute[q]
                }
                Action::Copy => arrive[q],
            };
            done[q * slices + s % slices] = d;
            loop_done[q] = loop_done[q].max(d);
            end = end.max(d);
            match it.wait {
                Wait::None => {}
                Wait::Item(i) => issue[q] = issue[q].max(done[q * slices + i % slices]),
                Wait::All => issue[q] = issue[q].max(loop_done[q]),
            }
        }
    }
    (end, waited)
}

/// `nccl_ring` on a machine whose every pair is joined alike: the latest channel's
/// finish ([`ring_channel`]). Exact when the ports serve each channel's slices as the
/// recurrence books them: with one channel and one NIC always (one sender and one
/// receiver per port, in order); with c channels, at least c NICs and, for c > 1, C = 0
/// (so the channels do not share a compute unit), whenever no slice waited for its
/// channel's port, since then every rank has at most one slice of each channel in flight
/// each way and no port is ever short. `None` otherwise.
pub(crate) fn ring(plan: &RingPlan, h: &Hockney) -> Option<f64> {
    if plan.np <= 1 {
        return Some(0.0);
    }
    let single = plan.channels == 1 && h.nics == 1;
    if !single && (h.nics < plan.channels as u32 || (plan.channels > 1 && h.c > 0.0)) {
        return None;
    }
    let mut end = 0.0f64;
    for k in 0..plan.channels {
        let (t, waited) = ring_channel(plan, k, h);
        if waited && !single {
            return None;
        }
        end = end.max(t);
    }
    Some(end)
}

/// The same on the symmetric case, in closed arithmetic, as a check of the recurrence:
/// one channel, P dividing n, n a whole number of loops of P chunks of `chunk` elements,
/// one slice per chunk, C = 0. Every rank then does the same at the same time: each of
/// the L loops is a ring of 2(P-1) steps of one chunk, `2(P-1) L T(chunk)`.
pub fn ring_symmetric(np: usize, loops: usize, chunk_bytes: f64, h: &Hockney) -> f64 {
    2.0 * (np as f64 - 1.0) * loops as f64 * h.t(chunk_bytes)
}
