//! The shared machinery of the closed forms (docs/model.md): the problem and the machine
//! as a cost model sees them, the Hockney terms, the step recurrence of step-synchronous
//! programs ([`lockstep`]) and its bounds, pipelines over uneven pieces, a flow shop,
//! the lower bound of every collective, and bounds from the even problems on either
//! side. Notation: P ranks, n elements of e bytes, S = n e, message time
//! `T(m) = alpha + m/B`, reduction time `R(m) = m C`, k NICs per rank.
//!
//! Each algorithm's own closed form lives beside its program in its file under
//! `src/algos/` (all of them listed in `crate::algos::forms`), read off the same
//! schedule; this module knows no algorithm. Where the exact time is a recurrence rather
//! than a formula (pipelines, trees with port contention), it is evaluated in closed
//! arithmetic; nothing here runs the event engine.

use crate::collective::Collective;
use crate::topology::Topology;

mod lockstep;
pub mod loggp;
mod pipeline;
mod programs;
#[cfg(test)]
pub(crate) use programs::Kept;
#[cfg(test)]
pub(crate) use programs::bounds_holding;
mod sweep;
pub use lockstep::{BYTES_PER_BOOKING, BYTES_PER_STEP_MESSAGE, Step, Xfer, lockstep, lockstep_bounds};
pub use pipeline::{earliest, ring_items};
pub use programs::{BOUNDS_BYTES_PER_MESSAGE_IN_FLIGHT, program_bounds};
pub use sweep::{
    BYTES_PER_PLANNED_MESSAGE, BYTES_PER_SWEPT_MESSAGE, Posted, SWEEP_LIMIT, sweep, sweep_posted, sweep_steps,
};

/// The problem belongs to the engine's layer (the programs are built for it); the closed
/// forms name it from here.
pub use crate::sim::Problem;

/// The machine as a cost model sees it.
#[derive(Clone, Copy, Debug)]
pub struct Machine<'a> {
    /// The interconnect.
    pub topo: &'a dyn Topology,
    /// C, seconds per byte reduced.
    pub cost_per_byte: f64,
}

/// The Hockney parameters of a machine whose every pair of ranks is joined alike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hockney {
    /// Seconds per message.
    pub alpha: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Seconds per byte reduced.
    pub c: f64,
    /// Ports per rank.
    pub nics: u32,
}

impl Hockney {
    /// The parameters of `m`, if its topology is uniform.
    pub fn of(m: &Machine) -> Option<Hockney> {
        let (link, nics) = m.topo.uniform()?;
        Some(Hockney { alpha: link.alpha, bandwidth: link.bandwidth, c: m.cost_per_byte, nics })
    }
    /// Time of one message of `bytes`.
    pub fn t(&self, bytes: f64) -> f64 {
        self.alpha + bytes / self.bandwidth
    }
    /// Time to reduce `bytes`.
    pub fn r(&self, bytes: f64) -> f64 {
        bytes * self.c
    }
}

/// When a rank that receives `others` messages of time `t` through its `k` incoming NICs
/// (`m = ceil(others/k)` rounds, all sent at time 0, none waiting on a busy sender) has
/// added them all on its one compute unit (`r` each), in arrival order:
/// `max(t + others r, m t + (others - (m-1) k) r)`. Each round's first arrival starts a
/// run of additions; the last of them ends latest, and it is the first or the last
/// round's (the ends grow linearly with the round).
pub fn gather_reduce(others: usize, k: u32, t: f64, r: f64) -> f64 {
    if others == 0 {
        return 0.0;
    }
    let k = k.max(1) as usize;
    let rounds = others.div_ceil(k);
    let first = t + others as f64 * r;
    let last = rounds as f64 * t + (others - (rounds - 1) * k) as f64 * r;
    first.max(last)
}

/// Makespan of a flow shop: every job visits stages `0..stages` in order; stage s has
/// `servers(s)` identical servers that take jobs in job order, each the first one
/// free (FIFO, as the engine's ports serve messages in issue order); job j spends
/// `time(s, j)` there. A job leaves a stage for the next only after every job before
/// it has: with several servers a smaller job can overtake, but the rank's program
/// waits for segments in order before passing them on.
pub fn flow_shop(
    stages: usize,
    jobs: usize,
    servers: impl Fn(usize) -> usize,
    time: impl Fn(usize, usize) -> f64,
) -> f64 {
    let mut done = vec![0.0f64; jobs];
    let mut free = PortPool::new(1);
    for s in 0..stages {
        free.reset(servers(s));
        let mut released = 0.0f64;
        // A job is ready when the one before it left the stage before (`released`), so
        // the servers see ready times that never decrease, as `PortPool` wants.
        for (j, d) in done.iter_mut().enumerate() {
            let busy = time(s, j);
            *d = free.take(*d, busy) + busy;
            released = released.max(*d);
            *d = released;
        }
    }
    done.last().copied().unwrap_or(0.0)
}

/// The k interchangeable ports (or servers) of a rank in a recurrence that hands them
/// messages in order of ready time: each message takes the port free first, from
/// `max(ready, that port's free time)`. Only the ports still busy after the latest ready
/// time are kept, so the memory follows the messages in flight, not k: a `nics` of
/// 4294967295 costs nothing (docs/model.md, 'Closed forms').
///
/// The contract: the ready times given to one pool never decrease (until
/// [`PortPool::reset`]). Then a port free by a ready time is as good as a port never
/// used for every later message, and dropping it changes no time: the recurrence is the
/// same, to the bit, as one with a vector of k free times.
#[derive(Clone, Debug)]
pub struct PortPool {
    k: usize,
    busy: Vec<f64>,
}

impl PortPool {
    /// `k` ports (at least one), all free.
    pub fn new(k: usize) -> Self {
        PortPool { k: k.max(1), busy: Vec::new() }
    }

    /// The ports of a rank with `nics` NICs, all free.
    pub fn of_nics(nics: u32) -> Self {
        Self::new(usize::try_from(nics).unwrap_or(usize::MAX))
    }

    /// All ports free again, now `k` of them (at least one); later ready times may start
    /// anywhere.
    pub fn reset(&mut self, k: usize) {
        self.k = k.max(1);
        self.busy.clear();
    }

    /// When a message ready at `ready` can start: at `ready` if a port is free by then,
    /// else when the first port frees. Call [`PortPool::occupy`] to take that port.
    pub fn start(&mut self, ready: f64) -> f64 {
        self.busy.retain(|&free| free > ready);
        if self.busy.len() < self.k { ready } else { self.busy[earliest(&self.busy)] }
    }

    /// The port free first is busy until `end` (the message [`PortPool::start`] placed).
    pub fn occupy(&mut self, end: f64) {
        if self.busy.len() < self.k {
            self.busy.push(end);
        } else {
            let i = earliest(&self.busy);
            self.busy[i] = end;
        }
    }

    /// A message ready at `ready` holding a port for `busy`: returns its start; the port
    /// is free again at `start + busy`.
    pub fn take(&mut self, ready: f64, busy: f64) -> f64 {
        let start = self.start(ready);
        self.occupy(start + busy);
        start
    }
}

/// The lower bound for allreduce (docs/report.md, 'The checks'; Chan et al. 2007; Patarasuk & Yuan
/// 2009), compute allowed to overlap communication:
/// `max(ceil(log_{k+1} P) alpha + 2 (P-1)/P S / (k B), alpha + (P-1)/P S C)`, with the topology's
/// smallest alpha, largest B and fewest NICs ([`lower_bound_of`] for every collective).
pub fn lower_bound(p: &Problem, topo: &dyn Topology, c: f64) -> f64 {
    lower_bound_of(Collective::Allreduce, p, topo, c)
}

/// The lower bound of collective `coll` (docs/model.md, 'The lower bound'), after Chan et
/// al. 2007, with k ports per rank and compute allowed to overlap communication:
///
/// - latency: a rank's result depends on every rank's input (a barrier's exit on every
///   rank's arrival), and after t message times a rank can have heard, directly or not,
///   from at most `(k+1)^t` ranks (itself and k incoming messages per round, each from a
///   rank that heard as many): `ceil(log_{k+1} P) alpha` (the textbook
///   `ceil(log2 P) alpha` with one port);
/// - bandwidth, through one rank's k ports: allreduce `2 (P-1)/P S` (it must send out and
///   take in (P-1)/P of the vector, Patarasuk & Yuan); reduce-scatter and allgather
///   `(P-1)/P S` (the P-1 blocks of others it must contribute to or receive); broadcast
///   and reduce `S` (a non-root must receive the vector; the root must receive or send
///   it); barrier none;
/// - compute: the `(P-1) S` bytes of reductions that must happen somewhere, spread over
///   the P ranks: `(P-1)/P S C` for allreduce, reduce-scatter and reduce, after the one
///   message a reduction needs (`alpha`): the reductions may overlap the later rounds'
///   latency as well as the bandwidth term, so the bound is
///   `max(latency + bandwidth, alpha + compute)`. None on a cluster whose nodes' GPUs an
///   NVSwitch joins: the switch may add them (NVLS) without a rank's compute unit.
pub fn lower_bound_of(coll: Collective, p: &Problem, topo: &dyn Topology, c: f64) -> f64 {
    // An empty vector is already reduced: an algorithm may rightly send nothing.
    if p.ranks <= 1 || (p.elems == 0 && coll.has_data()) {
        return 0.0;
    }
    let (link, nics) = topo.best_link();
    let np = p.ranks as f64;
    let frac = (np - 1.0) / np;
    let s = p.bytes();
    let (wire, reduced) = match coll {
        Collective::Allreduce => (2.0 * frac * s, frac * s),
        Collective::ReduceScatter => (frac * s, frac * s),
        Collective::Allgather => (frac * s, 0.0),
        Collective::Broadcast => (s, 0.0),
        Collective::Reduce => (s, frac * s),
        Collective::Barrier => (0.0, 0.0),
    };
    let rounds = rounds_lower(p.ranks, nics) as f64 * link.alpha;
    // The reductions wait for one message only, not for every round's: a rank may add
    // the first block it receives while the next is still on the wire (`direct`'s
    // reduce-scatter does), so they may overlap every alpha but the first. Where an
    // NVSwitch joins a node's GPUs the switch itself may add (NVLS), at no cost to any
    // rank's compute unit: then no reduction need happen on a rank.
    let switch_adds = topo.intra_nvswitch() && topo.node_shape().is_some_and(|(_, gpus)| gpus >= 2);
    let compute = if reduced > 0.0 && !switch_adds { link.alpha + reduced * c } else { 0.0 };
    (rounds + wire / (nics as f64 * link.bandwidth)).max(compute)
}

/// `ceil(log_{k+1} P)`: the fewest rounds in which P ranks can all hear from each other
/// with k ports each, in whole numbers (no float logarithm).
fn rounds_lower(ranks: usize, k: u32) -> u32 {
    let (mut reach, mut t) = (1u128, 0);
    while reach < ranks as u128 {
        reach *= k as u128 + 1;
        t += 1;
    }
    t
}

// ---------------------------------------------------------------------------------------
// Hierarchical machines (levels innermost first: sizes s_i, links (alpha_i, B_i))

// ---------------------------------------------------------------------------------------
// Bounds where the port arbitration makes the time depend on event order

#[cfg(test)]
mod tests {
    use super::*;

    /// The recurrence `PortPool` replaces: a vector of k free times, the lowest free first.
    fn plain(k: usize, jobs: &[(f64, f64)]) -> Vec<f64> {
        let mut free = vec![0.0f64; k];
        jobs.iter()
            .map(|&(ready, busy)| {
                let i = earliest(&free);
                let start = ready.max(free[i]);
                free[i] = start + busy;
                start
            })
            .collect()
    }

    #[test]
    fn a_port_pool_starts_every_message_when_a_vector_of_free_times_does() {
        // Ready times that never decrease, often tied, with busy times of a few sizes
        // (ties between ports' free times too), for 1 to 6 ports.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..2000 {
            let k = 1 + case % 6;
            let mut ready = 0.0f64;
            let jobs: Vec<(f64, f64)> = (0..1 + next(40))
                .map(|_| {
                    ready += [0.0, 0.25, 1.0, 3.0][next(4) as usize];
                    (ready, [0.0, 0.5, 1.0, 2.5, 1e-17][next(5) as usize])
                })
                .collect();
            let mut pool = PortPool::new(k);
            let got: Vec<f64> = jobs.iter().map(|&(r, b)| pool.take(r, b)).collect();
            let want = plain(k, &jobs);
            assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "k {k}: {jobs:?}");
            assert!(pool.busy.len() <= k);
        }
    }

    #[test]
    fn a_flow_shop_with_more_servers_than_jobs_is_one_with_a_server_each() {
        let time = |s: usize, j: usize| 1.0 + ((s * 7 + j * 3) % 5) as f64;
        let want = flow_shop(4, 9, |_| 9, time);
        // `nics` may be 4294967295: no vector of that many free times.
        assert_eq!(flow_shop(4, 9, |_| usize::MAX, time).to_bits(), want.to_bits());
        assert_eq!(flow_shop(4, 9, |s| if s % 2 == 0 { u32::MAX as usize } else { 9 }, time).to_bits(), want.to_bits());
    }
}
