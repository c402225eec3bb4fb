//! The max-plus recurrence of a step-synchronous program: the closed form of the
//! topology-aware algorithms whose messages do not all cost the same (a mesh's
//! wrap-around pair, a torus with n not divisible, pipelined trees).
//!
//! A program is *step-synchronous* when every rank runs the same numbered steps and, in
//! step s, issues its sends of that step, posts its receives, and ends the step once
//! every receive has landed and been reduced (then, optionally, runs some local
//! reductions and waits for them too). A message of step s is received in the
//! receiver's step s. `torus_2d`, `mesh_2d` and `double_binary_tree` are written that way.
//!
//! With `d_r(s)` the time rank r ends step s (`d_r(-1) = 0`), a message of `m` bytes from
//! a to b in step s is issued at `d_a(s-1)` and
//!
//! ```text
//! start = max(d_a(s-1), first free out-port of a, first free in-port of b)
//! end   = start + alpha_ab + m / B_ab
//! ```
//!
//! where each rank's k out-ports (in-ports) take its messages in step order, each the
//! first port free (the ports of SPEC section 2, as `flow_shop` has them). The receiver
//! reduces what it received on its one compute unit, first come first served from
//! `max(end, d_b(s-1))`, so
//!
//! ```text
//! d_b(s) = max(d_b(s-1), copies' ends, FIFO completion of the reductions) + local reductions
//! ```
//!
//! and the time is the latest step end or message end (a sender is busy until its last
//! message lands). The FIFO completion does not depend on how jobs that land at the same
//! instant are ordered, so exact ties cannot change the result.
//!
//! **When it is exact.** The engine gives a free port to the waiting message of highest
//! priority `(issue time, sender, sender's sequence)` that can start (both its ends
//! free), not to the message of the lowest step; the recurrence serves each port in step
//! order. The two agree unless a port would take a later step's message from another
//! peer before an earlier one (a rank that has run ahead of its neighbours). So for
//! every message that a port holds back (the port is free only after the message's
//! issue and after its other end), the recurrence asks whether that port has already
//! served a message of another peer that the engine would have put after this one:
//! one of lower priority, or one that waited for *its* other end while this port had a
//! free server and started after this message was issued. If so it gives up and returns
//! `None`: the time then hangs on the engine's port arbitration between the two, which
//! has no closed form. (Messages between the same two ranks never overtake each other:
//! same ports, and the earlier has the higher priority.)
//!
//! Times are computed with the same floating-point operations as the engine, in the
//! same order along every path, so where the recurrence holds it agrees with the engine
//! to the last bit in practice, far inside the 1e-9 the closed forms are held to.

use crate::topology::Topology;

/// One message of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Xfer {
    /// Sender.
    pub from: usize,
    /// Receiver.
    pub to: usize,
    /// Payload, bytes.
    pub bytes: u64,
    /// Reduced into the receiver's buffer on arrival (else copied, which costs nothing).
    pub reduce: bool,
}

/// What the ranks do in one step: the messages (each sender's in its program order) and
/// the local reductions each rank runs once the step's receives are done, in order.
#[derive(Clone, Debug, Default)]
pub struct Step {
    /// Messages of the step.
    pub xfers: Vec<Xfer>,
    /// `(rank, bytes)`: local reductions after the receives.
    pub local: Vec<(usize, u64)>,
}

impl Step {
    /// Empty the step for reuse.
    pub fn clear(&mut self) {
        self.xfers.clear();
        self.local.clear();
    }
}

/// A message's priority in the engine: `(issue time, sender, sender's sequence)`.
type Prio = (f64, usize, u64);

fn less(a: Prio, b: Prio) -> bool {
    a.0 < b.0 || (a.0 == b.0 && (a.1, a.2) < (b.1, b.2))
}

/// The largest key seen, and the largest of any other peer's: enough to answer "the
/// largest key of a peer other than p".
#[derive(Clone, Copy, Debug)]
struct Top2<K> {
    top: Option<(K, usize)>,
    second: Option<K>,
}

impl<K: Copy> Top2<K> {
    const EMPTY: Self = Top2 { top: None, second: None };

    fn largest_except(&self, peer: usize) -> Option<K> {
        match self.top {
            Some((k, p)) if p != peer => Some(k),
            _ => self.second,
        }
    }

    fn add(&mut self, key: K, peer: usize, less: impl Fn(&K, &K) -> bool) {
        match self.top {
            None => self.top = Some((key, peer)),
            Some((k, p)) if p == peer => {
                if less(&k, &key) {
                    self.top = Some((key, peer));
                }
            }
            Some((k, _)) if less(&k, &key) => {
                // The old largest key belongs to another peer than the new one.
                self.top = Some((key, peer));
                self.second = Some(k);
            }
            Some(_) => {
                if self.second.as_ref().is_none_or(|s| less(s, &key)) {
                    self.second = Some(key);
                }
            }
        }
    }
}

/// One side (out or in) of one rank's ports: when each is next free, and what the
/// no-overtaking check needs about the messages it has served.
#[derive(Clone, Debug)]
struct Ports {
    free: Vec<f64>,
    /// Priorities of the messages served.
    prio: Top2<Prio>,
    /// Start times of the messages served that waited for the *other* end's port while
    /// one of these was free.
    waited: Top2<f64>,
}

impl Ports {
    fn new(k: u32) -> Self {
        Ports { free: vec![0.0; k.max(1) as usize], prio: Top2::EMPTY, waited: Top2::EMPTY }
    }

    /// The first port free: (index, time).
    fn first_free(&self) -> (usize, f64) {
        let mut best = (0, self.free[0]);
        for (i, &t) in self.free.iter().enumerate().skip(1) {
            if t < best.1 {
                best = (i, t);
            }
        }
        best
    }

    /// Whether the engine might serve a message of priority `prio` from/to `peer` here
    /// before a message of another peer that this port has already served: because it
    /// has the higher priority, or because it was issued while that message waited for
    /// its other end with a port free here.
    fn overtakes(&self, prio: Prio, peer: usize) -> bool {
        self.prio.largest_except(peer).is_some_and(|k| less(prio, k))
            || self.waited.largest_except(peer).is_some_and(|t| prio.0 < t)
    }

    /// Record a message of `peer` with priority `prio` that started at `start`, this
    /// port's first free time having been `free`.
    fn served(&mut self, prio: Prio, start: f64, free: f64, peer: usize) {
        self.prio.add(prio, peer, |a, b| less(*a, *b));
        if free < start {
            self.waited.add(start, peer, |a, b| a < b);
        }
    }
}

/// The time of a step-synchronous program of `steps` steps on `topo` with `c` seconds
/// per byte reduced; `fill(s, step)` describes step `s`. `None` where a port would serve
/// messages out of step order (see the module docs).
pub fn lockstep(topo: &dyn Topology, c: f64, steps: usize, mut fill: impl FnMut(usize, &mut Step)) -> Option<f64> {
    let np = topo.ranks();
    let mut done = vec![0.0f64; np];
    let mut out: Vec<Ports> = (0..np).map(|r| Ports::new(topo.nics(r))).collect();
    let mut inp: Vec<Ports> = out.clone();
    let mut seq = vec![0u64; np];
    let mut end_max = 0.0f64;
    let mut step = Step::default();
    // Per message of the step: its priority and index; per receiver: (release, bytes, reduce).
    let mut order: Vec<(Prio, usize)> = Vec::new();
    let mut jobs: Vec<Vec<(f64, u64, bool)>> = vec![Vec::new(); np];
    let mut touched: Vec<usize> = Vec::new();
    for s in 0..steps {
        step.clear();
        fill(s, &mut step);
        order.clear();
        for (i, x) in step.xfers.iter().enumerate() {
            order.push(((done[x.from], x.from, seq[x.from]), i));
            seq[x.from] += 1;
        }
        order.sort_by(|a, b| a.0.0.total_cmp(&b.0.0).then(a.0.1.cmp(&b.0.1)).then(a.0.2.cmp(&b.0.2)));
        for &(prio, i) in &order {
            let x = step.xfers[i];
            let (oi, of) = out[x.from].first_free();
            let (ii, inf) = inp[x.to].first_free();
            // Only a port that holds this message back (free later than its issue and
            // than the other end) could have let the engine order it differently.
            let out_binds = of > prio.0 && of >= inf;
            let in_binds = inf > prio.0 && inf >= of;
            if (out_binds && out[x.from].overtakes(prio, x.to)) || (in_binds && inp[x.to].overtakes(prio, x.from)) {
                return None;
            }
            let start = prio.0.max(of).max(inf);
            let end = start + topo.link(x.from, x.to).time(x.bytes as f64);
            out[x.from].free[oi] = end;
            inp[x.to].free[ii] = end;
            out[x.from].served(prio, start, of, x.to);
            inp[x.to].served(prio, start, inf, x.from);
            end_max = end_max.max(end);
            if jobs[x.to].is_empty() {
                touched.push(x.to);
            }
            jobs[x.to].push((end.max(done[x.to]), x.bytes, x.reduce));
        }
        for &r in &touched {
            let list = &mut jobs[r];
            list.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut compute, mut landed) = (done[r], done[r]);
            for &(release, bytes, reduce) in list.iter() {
                if reduce {
                    compute = compute.max(release) + bytes as f64 * c;
                } else {
                    landed = landed.max(release);
                }
            }
            done[r] = compute.max(landed);
            list.clear();
        }
        touched.clear();
        for &(r, bytes) in &step.local {
            done[r] += bytes as f64 * c;
        }
    }
    Some(done.iter().copied().fold(end_max, f64::max))
}
