//! Gloo's `allreduce_ring_chunked` (Gloo's algorithm index; `gloo/allreduce_ring_chunked.h`),
//! schedule for schedule: a ring reduce-scatter and allgather on `2P` chunks, two in
//! flight at a time, so that one chunk crosses the link while the other is being added.
//!
//! **Chunks.** The vector is cut into `2P` chunks of `cs = max(256, ceil(n / 2P))`
//! elements (Gloo's `minSize` of 256 elements), the last ones shorter or empty. Chunk
//! pair `j` is chunks `2j` and `2j+1`. An empty chunk still goes on the wire as one
//! element, which the receiver ignores (Gloo sends element 0 rather than nothing).
//!
//! **Reduce-scatter.** Rank r first sends its pair r (both chunks, back to back). Then,
//! in rounds 2, 3, ..., 2P-1, it takes chunk `(2r - (round & !1) + (round & 1)) mod 2P`
//! from its left neighbour (pair r-1, then r-2, ...), adds it into its own copy, and
//! sends the sum on to the right. After `2P - 2` such rounds pair `r+1` is complete,
//! and its two chunks are already on their way right: they start the allgather.
//! **Allgather.** In rounds `0..2P-2` the rank takes the finished chunks of pairs r,
//! r-1, ..., r+2 from the left, copies them in, and passes all but the last pair on.
//!
//! **Notifications.** Every round, after using what it received, a rank tells its left
//! neighbour that the inbox is free (a message with no data: alpha on the ports), and it
//! sends its next chunk only once its right neighbour has told it the same; one more
//! pair of notifications closes the run. That is Gloo's double buffering: never more
//! than two chunks in a rank's inboxes.
//!
//! **Closed form** ([`ring_chunked`]): where all `2P` chunks are equal
//! (`n` a multiple of `2P` and at least `512 P`), every rank does the same at the same
//! instants, its incoming ports mirror its outgoing ones, and a recurrence over one
//! rank's messages is the time. Otherwise chunks of different lengths put ranks out of
//! step, a rank's incoming port carries data from the left and notifications from the
//! right in the order of the model's priorities, and the program's steps on every rank
//! are taken together ([`ring_chunked_steps`]).

use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::cost_model;
use crate::cost_model::Hockney;
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "ring_chunked",
    summary: "Gloo's allreduce_ring_chunked: ring reduce-scatter + allgather on 2P chunks, two in flight",
    source: "Gloo allreduce_ring_chunked (Gloo's algorithm index and gloo/allreduce_ring_chunked.h)",
    requires: "any P >= 1, any n (chunks of at least 256 elements; empty ones still send one)",
    closed_form: "2P equal chunks (n a multiple of 2P, n >= 512 P), T = alpha + (n/2P) e/B, R = (n/2P) e C: \
                  the recurrence of one rank's 4P-4 chunks and 4P-5 notifications (alpha each) on its k NICs; \
                  one NIC and R <= T: (4P-4) T + (4P-5) alpha; otherwise (unequal chunks, links that differ) its \
                  data and notification steps on every rank taken together (cost_model::sweep_posted: a rank's \
                  in-port carries data and notifications in the model's priority order)",
    params: &[],
    build: |_| Ok(Box::new(RingChunked)),
};

/// See the module docs.
#[derive(Debug)]
pub struct RingChunked;

/// Gloo's smallest chunk, in elements.
pub(crate) const MIN_CHUNK: usize = 256;

/// The notification's tag (data messages are tagged with the sender's send index).
const NOTE: u32 = u32::MAX;

/// Elements per chunk for `np` ranks and `n` elements.
pub(crate) fn chunk_elems(np: usize, n: usize) -> usize {
    MIN_CHUNK.max(n.div_ceil(2 * np))
}

/// The chunk a rank with pair `r` handles in `round` (Gloo's `chunkOffset`).
fn chunk_at(r: usize, np: usize, round: usize) -> usize {
    let chunks = 2 * np;
    (2 * r + chunks - (round & !1) % chunks + (round & 1)) % chunks
}

impl Algorithm for RingChunked {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (np, n, r) = (p.ranks, p.elems, rank as usize);
        if np <= 1 || n == 0 {
            return vec![Box::new(std::iter::empty())];
        }
        let cs = chunk_elems(np, n);
        let (left, right) = (((r + np - 1) % np) as Rank, ((r + 1) % np) as Rank);
        // Chunk c's elements (None: empty).
        let elems = move |c: usize| {
            let offset = c * cs;
            (offset < n).then(|| Region::vec(offset, cs.min(n - offset)))
        };
        let send = move |tag: usize, c: usize| Op::send(right, tag as u32, elems(c).unwrap_or(Region::vec(0, 1)));
        // An empty chunk's stand-in element lands in the scratch inbox and is ignored.
        let take = move |tag: usize, c: usize, reduce: bool| match elems(c) {
            Some(reg) if reduce => Op::recv_reduce(left, tag as u32, reg),
            Some(reg) => Op::recv_copy(left, tag as u32, reg),
            None => Op::recv_copy(left, tag as u32, Region::scratch(1, 0, 1)),
        };
        let none = Region::vec(0, 0);
        let handshake = [Op::send(left, NOTE, none), Op::recv_copy(right, NOTE, none), Op::WaitAll];
        let chunks = 2 * np;
        // Numbered steps of at most four ops each (`per_step` keeps a step of up to four
        // for the rank's next pull; a `flat_map` of chained arrays cost more to pull than
        // the engine spent on the ops: docs/performance.md). Step 0 sends pair r; each
        // reduce-scatter round `round` (2..2P) is step `2 round - 3`, take and add what
        // the left neighbour sent `round - 2` rounds before and wait, then step
        // `2 round - 2`, the handshake and the send of the sum; each allgather round `a`
        // (0..2P-2) the same two from step `4P - 3 + 2a`, its second empty for the last
        // two rounds (nothing left to pass on); the closing handshake last.
        let ag = 2 * chunks - 3;
        let steps = ag + 2 * (chunks - 2) + 1;
        let [note_left, note_right, wait] = handshake;
        let program = per_step(0..steps, move |k| {
            let ops: [Option<Op>; 4] = if k == 0 {
                [Some(send(0, chunk_at(r, np, 0))), Some(send(1, chunk_at(r, np, 1))), None, None]
            } else if k == steps - 1 {
                [Some(note_left), Some(note_right), Some(wait), None]
            } else {
                // (round's tag, its chunk, whether it adds, the tag it passes on, if any)
                let (tag, c, reduce, pass) = if k < ag {
                    let round = (k + 3) / 2;
                    (round - 2, chunk_at(r, np, round), true, Some(round))
                } else {
                    let a = (k - ag) / 2;
                    (chunks - 2 + a, chunk_at(r, np, a), false, (a + 4 < chunks).then_some(chunks + a))
                };
                if k % 2 == 1 {
                    [Some(take(tag, c, reduce)), Some(Op::WaitAll), None, None]
                } else {
                    match pass {
                        Some(next) => [Some(note_left), Some(note_right), Some(wait), Some(send(next, c))],
                        None => [None; 4],
                    }
                }
            };
            ops.into_iter().flatten()
        });
        vec![Box::new(program)]
    }

    fn scratch(&self, p: &Problem) -> Vec<usize> {
        let (np, n) = (p.ranks, p.elems);
        let full = np > 1 && n > 0 && n.div_ceil(chunk_elems(np, n)) == 2 * np;
        if full || np <= 1 || n == 0 { Vec::new() } else { vec![1] }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        if let Some(t) = cost_model::Hockney::of(m).and_then(|h| ring_chunked(p, &h)) {
            return Some((t, EXACT));
        }
        Some((ring_chunked_steps(p, m)?, EXACT))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// Gloo's `allreduce_ring_chunked` for any n and on any machine: its program as steps
/// of one stream, taken together by [`cost_model::sweep_posted`]. Rank r's steps are
/// data steps `D_i` (`i` in `0..4P-4`: post the receive of the left neighbour's send i,
/// add or copy it, wait) each followed, while there is a chunk left to pass on, by a
/// notification step `N_i` (send the notification left, receive the right
/// neighbour's, wait), and a last notification step. The send of chunk `i + 2` goes out
/// when `N_i` ends, which is when `D_{i+1}` begins, and lands in the right neighbour's
/// `D_{i+2}`: a receive posted two steps after the send (sends 0 and 1 go at the start).
/// Every message then takes its ports as the model serves them, a rank's in-port
/// carrying its left neighbour's chunks and its right neighbour's notifications in the
/// order of the model's priorities, which is what the recurrence of one rank
/// ([`ring_chunked`]) cannot follow once ranks fall out of step.
pub fn ring_chunked_steps(p: &Problem, m: &Machine) -> Option<f64> {
    let (np, n) = (p.ranks, p.elems);
    if np <= 1 || n == 0 {
        return Some(0.0);
    }
    let chunks = 2 * np;
    let cs = chunk_elems(np, n);
    let last = 4 * np - 5;
    // Step of D_i and N_i; the final notification step.
    let d = |i: usize| if i + 2 <= last { 2 * i } else { 2 * (last - 1) + (i + 1 - (last - 1)) - 1 };
    let note = |i: usize| 2 * i + 1;
    let fin = d(last) + 1;
    // Each rank's last + 1 data sends, last - 1 notifications and a final one: past the
    // sweep's limit it gives up, so say so before building them.
    if np.saturating_mul(2 * last + 1) > cost_model::SWEEP_LIMIT {
        return None;
    }
    let mut steps: Vec<cost_model::Posted> = vec![cost_model::Posted::default(); fin + 1];
    // Send `tag` of rank q: its bytes and whether the receiver adds it.
    let data = |q: usize, tag: usize| {
        let c = chunk_at(q, np, if tag < chunks { tag } else { tag - chunks });
        let offset = c * cs;
        let len = if offset < n { cs.min(n - offset) } else { 0 };
        let bytes = p.b(len.max(1)) as u64;
        (bytes, tag + 2 < chunks && len > 0)
    };
    let xfer = |from: usize, to: usize, (bytes, reduce): (u64, bool)| cost_model::Xfer { from, to, bytes, reduce };
    for q in 0..np {
        let (left, right) = ((q + np - 1) % np, (q + 1) % np);
        for tag in 0..=last {
            // Sends 0 and 1 at the start; send i + 2 when D_{i+1} begins.
            let at = if tag < 2 { 0 } else { d(tag - 1) };
            steps[at].xfers.push((xfer(q, right, data(q, tag)), d(tag)));
        }
        for i in 0..=last.saturating_sub(2) {
            steps[note(i)].xfers.push((xfer(q, left, (0, false)), note(i)));
        }
        steps[fin].xfers.push((xfer(q, left, (0, false)), fin));
    }
    cost_model::sweep_posted(m.topo, m.cost_per_byte, false, &[steps])
}

/// Gloo's `allreduce_ring_chunked` where all `2P` chunks are equal: `n` a multiple of
/// `2P` and `n / 2P >= 256` (Gloo's smallest chunk), `c = n/(2P) e`, `T = T(c)`,
/// `R = R(c)`, `A = alpha` (a notification carries no data).
///
/// Every rank then does the same at the same instants, and a rank's incoming ports
/// carry its left neighbour's chunks and its right neighbour's notifications exactly
/// when its own outgoing ports carry its chunks and its notifications: no port is ever
/// wanted by more messages than it has, and the time is a recurrence over one rank's
/// program. Its outgoing messages, in order: two chunks at time 0; in each of the 2P-2
/// reduce-scatter rounds, once the left neighbour's chunk has landed and been added
/// (`R`), a notification, and, once the right neighbour's notification is in (at the
/// same instant as its own ends), the summed chunk; in the first 2P-4 allgather rounds
/// the same without the addition; a last notification. Each goes out on the first of
/// the k ports to free, in that order.
///
/// With one NIC and `R <= T` the port never idles and the additions hide behind the
/// transfers: `(4P-4) T + (4P-5) A`, the ring's bandwidth term (`4P-4` chunks of S/2P)
/// with `8P-9` latencies where the ring has `2P-2`. With two NICs the two chunks in
/// flight overlap one's transfer with the other's addition, which is the point of the
/// chunking: a reduce-scatter round costs `R + A` where the ring's costs `T + R`.
///
/// `None` for unequal chunks: ranks fall out of step, a rank's incoming port then
/// carries data from the left and notifications from the right in an order set by the
/// engine's priorities, and no recurrence over one rank follows it. Gloo's index gives
/// only `4P` steps and `2S` on the wire.
pub fn ring_chunked(p: &Problem, h: &Hockney) -> Option<f64> {
    let np = p.ranks;
    if np <= 1 || p.elems == 0 {
        return Some(0.0);
    }
    let chunks = 2 * np;
    let cs = crate::algos::ring_chunk_elems(np, p.elems);
    if cs * chunks != p.elems {
        return None;
    }
    let (t, r, a) = (h.t(p.b(cs)), h.r(p.b(cs)), h.alpha);
    let mut ports = cost_model::PortPool::of_nics(h.nics);
    // A message issued at `issue` for `dur`: FIFO on the first port to free (the issue
    // times below never decrease).
    let mut serve = |issue: f64, dur: f64| ports.take(issue, dur) + dur;
    // ends[i]: when this rank's i-th chunk lands, which is also when the left
    // neighbour's i-th lands here.
    let mut ends = Vec::with_capacity(2 * chunks);
    ends.push(serve(0.0, t));
    ends.push(serve(0.0, t));
    let mut now = 0.0f64;
    for round in 2..chunks {
        now = now.max(ends[round - 2]) + r;
        now = serve(now, a);
        ends.push(serve(now, t));
    }
    for round in 0..chunks - 2 {
        now = now.max(ends[chunks - 2 + round]);
        if round + 4 < chunks {
            now = serve(now, a);
            ends.push(serve(now, t));
        }
    }
    Some(serve(now, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gloo's schedule written as the plain loop of the module docs, op by op: the
    /// numbered steps `program` hands out must give exactly this sequence.
    fn textbook(r: usize, np: usize, n: usize) -> Vec<Op> {
        let cs = chunk_elems(np, n);
        let (left, right) = (((r + np - 1) % np) as Rank, ((r + 1) % np) as Rank);
        let elems = |c: usize| (c * cs < n).then(|| Region::vec(c * cs, cs.min(n - c * cs)));
        let send = |tag: usize, c: usize| Op::send(right, tag as u32, elems(c).unwrap_or(Region::vec(0, 1)));
        let take = |tag: usize, c: usize, reduce: bool| match elems(c) {
            Some(reg) if reduce => Op::recv_reduce(left, tag as u32, reg),
            Some(reg) => Op::recv_copy(left, tag as u32, reg),
            None => Op::recv_copy(left, tag as u32, Region::scratch(1, 0, 1)),
        };
        let none = Region::vec(0, 0);
        let handshake = [Op::send(left, NOTE, none), Op::recv_copy(right, NOTE, none), Op::WaitAll];
        let chunks = 2 * np;
        let mut ops = vec![send(0, chunk_at(r, np, 0)), send(1, chunk_at(r, np, 1))];
        for round in 2..chunks {
            let c = chunk_at(r, np, round);
            ops.extend([take(round - 2, c, true), Op::WaitAll]);
            ops.extend(handshake);
            ops.push(send(round, c));
        }
        for a in 0..chunks - 2 {
            let c = chunk_at(r, np, a);
            ops.extend([take(chunks - 2 + a, c, false), Op::WaitAll]);
            if a + 4 < chunks {
                ops.extend(handshake);
                ops.push(send(chunks + a, c));
            }
        }
        ops.extend(handshake);
        ops
    }

    #[test]
    fn the_numbered_steps_are_glooss_loop_op_for_op() {
        let topo = crate::topology::FullyConnected {
            ranks: 1,
            link: crate::topology::Link { alpha: 1e-6, bandwidth: 1e10 },
            nics: 1,
        };
        for np in [2, 3, 4, 7] {
            // Equal chunks, unequal ones, empty ones (fewer elements than 2P chunks of 256).
            for n in [512 * np, 512 * np + 5, 300, 1] {
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                for r in 0..np {
                    let got: Vec<Op> = RingChunked.program(r as Rank, p, &topo).into_iter().flatten().collect();
                    assert_eq!(got, textbook(r, np, n), "P = {np}, n = {n}, rank {r}");
                }
            }
        }
    }
}
