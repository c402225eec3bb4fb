//! Step-synchronous algorithms: every rank runs the same numbered steps; in each it
//! sends, receives (reducing or copying), waits for its receives, then runs any local
//! reductions and waits for them. One [`Stepped::plan`] describes a step for one rank;
//! the program ([`program`]) and the closed form ([`time`], the recurrence of
//! [`crate::cost_model::lockstep`]) are both read off it, so they cannot drift apart.
//!
//! A message of step `s` carries tag `s * TAGS + kind` (`kind < TAGS`), so two messages
//! between the same ranks in one step are told apart by their kind.

use crate::cost_model::{self, Step, Xfer};
use crate::sim::op::{Action, Op, Program, Rank, Region};
use crate::topology::Topology;

/// Kinds of message per step (see the module docs).
pub(crate) const TAGS: u32 = 8;

/// A send of one step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Send {
    pub to: usize,
    pub kind: u32,
    pub src: Region,
    /// Whether the receiver reduces it (else copies).
    pub reduce: bool,
}

/// A receive of one step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recv {
    pub from: usize,
    pub kind: u32,
    pub dst: Region,
    pub action: Action,
}

/// What one rank does in one step.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepPlan {
    /// Sends, in the order they are issued.
    pub sends: Vec<Send>,
    /// Receives, in the order they are posted.
    pub recvs: Vec<Recv>,
    /// Local reductions `dst = dst (op) src` after the receives, in order.
    pub local: Vec<(Region, Region)>,
}

impl StepPlan {
    fn clear(&mut self) {
        self.sends.clear();
        self.recvs.clear();
        self.local.clear();
    }
}

/// A step-synchronous schedule for one problem on one machine.
pub(crate) trait Stepped: std::marker::Send + Sync {
    /// Number of steps (the same for every rank).
    fn steps(&self) -> usize;
    /// Fill `out` (cleared) with what rank `rank` does in step `s`.
    fn plan(&self, rank: usize, s: usize, out: &mut StepPlan);
    /// Whether the sends are flow-controlled: a rank keeps at most `nics` of a step's
    /// sends undelivered ([`Op::WaitSends`] before each further one) and the step ends
    /// only once they are all delivered. Otherwise a step issues all its sends at once
    /// and does not wait for them.
    fn windowed(&self) -> bool {
        false
    }
    /// Where step `s` of `rank` is one all-at-once exchange ([`Exchange`]; `direct`,
    /// `naive`), it, so that the program makes its ops one at a time by index rather
    /// than through a buffer of `2(P - 1)` ops. It must be exactly what [`Stepped::plan`]
    /// gives for the step (`tests/messages.rs`, the differential tests and every
    /// scenario's report check the runs they make).
    fn exchange(&self, _rank: usize, _s: usize) -> Option<Exchange> {
        None
    }
}

/// One rank's step of an all-at-once exchange among `np` ranks
/// ([`super::direct::exchange`]): a send to each of `rank + 1, rank + 2, ...`
/// (mod `np`), then a receive from each of `rank - 1, rank - 2, ...`, then a wait; no
/// local reductions, not windowed, message kind 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exchange {
    pub rank: usize,
    pub np: usize,
    /// What is sent to a peer.
    pub give: Part,
    /// Where what comes from a peer lands.
    pub take: Part,
    pub action: Action,
}

/// A region of an [`Exchange`] as a function of the peer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Part {
    /// The same region for every peer.
    Fixed(Region),
    /// The peer's block of the vector of `n` elements ([`crate::sim::op::block`] of `np`).
    PeersBlock(usize),
}

impl Part {
    fn at(self, peer: usize, np: usize) -> Region {
        match self {
            Part::Fixed(r) => r,
            Part::PeersBlock(n) => crate::sim::op::block(n, np, peer),
        }
    }
}

/// Rank `rank`'s program (`nics` ports): each step's sends, receives, a wait, its local
/// reductions and a wait; steps with nothing to wait for do not wait. A windowed plan
/// posts the receives first, then sends through its window.
pub(crate) fn program<'a, S: Stepped + 'a>(plan: S, rank: usize, nics: u32) -> Program<'a> {
    let steps = plan.steps();
    let window = plan.windowed().then_some(nics.max(1));
    Box::new(StepProgram {
        plan,
        rank,
        window,
        step: 0,
        steps,
        sp: StepPlan::default(),
        ops: Vec::new(),
        next: 0,
        exchange: None,
    })
}

/// The program of one rank of a [`Stepped`] plan: a step's ops at a time, written into a
/// buffer that keeps its capacity (as do the plan's), so a step allocates nothing once
/// warm.
struct StepProgram<S> {
    plan: S,
    rank: usize,
    window: Option<u32>,
    step: usize,
    steps: usize,
    sp: StepPlan,
    /// The current step's ops, and how many of them have been handed out.
    ops: Vec<Op>,
    next: usize,
    /// The current step where it is an exchange, with its tag and the index of the next
    /// op (sends `0..np-1`, receives `np-1..2(np-1)`, then the wait): it is made op by
    /// op, and `ops` stays empty.
    exchange: Option<(Exchange, u32, usize)>,
}

impl<S: Stepped> Iterator for StepProgram<S> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if let Some((ex, tag, i)) = &mut self.exchange {
            let others = ex.np - 1;
            let k = *i;
            *i += 1;
            if k < others {
                let to = (ex.rank + 1 + k) % ex.np;
                return Some(Op::send(to as Rank, *tag, ex.give.at(to, ex.np)));
            }
            if k < 2 * others {
                let from = (ex.rank + ex.np - 1 - (k - others)) % ex.np;
                return Some(Op::Recv {
                    from: from as Rank,
                    tag: *tag,
                    dst: ex.take.at(from, ex.np),
                    action: ex.action,
                });
            }
            self.exchange = None;
            return Some(Op::WaitAll);
        }
        // A step with nothing to do gives no ops: go on to the next.
        while self.next == self.ops.len() {
            if self.step == self.steps {
                return None;
            }
            if self.window.is_none()
                && let Some(ex) = self.plan.exchange(self.rank, self.step).filter(|ex| ex.np > 1)
            {
                self.exchange = Some((ex, self.step as u32 * TAGS, 0));
                self.step += 1;
                return self.next();
            }
            self.fill();
        }
        let op = self.ops[self.next];
        self.next += 1;
        // A large step (`direct`'s P - 1 sends and receives) is handed out up to its
        // first wait in one pull; what was handed out is dropped then, so that only
        // the rank being pulled holds its step's ops, not every rank at once (P^2).
        if self.ops.capacity() > LARGE
            && (self.next == self.ops.len()
                || matches!(op, Op::WaitAll | Op::WaitSends(_)) && 2 * self.next >= self.ops.len())
        {
            self.ops.drain(..self.next);
            self.next = 0;
            self.ops.shrink_to(LARGE);
        }
        Some(op)
    }
}

/// Ops (or sends, or receives) of a step above which a rank's buffers are not kept
/// between steps: their memory would be P per rank.
const LARGE: usize = 64;

impl<S: Stepped> StepProgram<S> {
    /// Replace the buffer with the ops of the next step.
    fn fill(&mut self) {
        let (s, sp, ops) = (self.step, &mut self.sp, &mut self.ops);
        self.step += 1;
        self.next = 0;
        ops.clear();
        sp.clear();
        self.plan.plan(self.rank, s, sp);
        let tag = |kind: u32| s as u32 * TAGS + kind;
        let sends = sp.sends.iter().map(|x| Op::send(x.to as Rank, tag(x.kind), x.src));
        let recvs =
            sp.recvs.iter().map(|x| Op::Recv { from: x.from as Rank, tag: tag(x.kind), dst: x.dst, action: x.action });
        match self.window {
            None => {
                ops.extend(sends);
                ops.extend(recvs);
            }
            Some(k) => {
                ops.extend(recvs);
                for (i, send) in sends.enumerate() {
                    if i >= k as usize {
                        ops.push(Op::WaitSends(k - 1));
                    }
                    ops.push(send);
                }
                if !sp.sends.is_empty() {
                    ops.push(Op::WaitSends(0));
                }
            }
        }
        if !sp.recvs.is_empty() {
            ops.push(Op::WaitAll);
        }
        ops.extend(sp.local.iter().map(|&(src, dst)| Op::reduce(src, dst)));
        if !sp.local.is_empty() {
            ops.push(Op::WaitAll);
        }
        if sp.sends.capacity().max(sp.recvs.capacity()).max(sp.local.capacity()) > LARGE {
            *sp = StepPlan::default();
        }
    }
}

/// Step `s` of `plan` as the step recurrence reads it: every rank's sends and local
/// reductions, in bytes (`sp` is scratch, reused across steps).
fn fill_step(plan: &dyn Stepped, np: usize, elem_bytes: usize, sp: &mut StepPlan, s: usize, step: &mut Step) {
    for r in 0..np {
        sp.clear();
        plan.plan(r, s, sp);
        let bytes = |reg: Region| (reg.len * elem_bytes) as u64;
        step.xfers.extend(sp.sends.iter().map(|x| Xfer { from: r, to: x.to, bytes: bytes(x.src), reduce: x.reduce }));
        step.local.extend(sp.local.iter().map(|&(_, dst)| (r, bytes(dst))));
    }
}

/// The plan's time on `topo`: the step recurrence, or where a port would serve messages
/// out of step order the steps taken together ([`cost_model::sweep_steps`]); `None` only
/// where the plan is too large for that ([`cost_model::SWEEP_LIMIT`]).
pub(crate) fn time(plan: &dyn Stepped, topo: &dyn Topology, c: f64, elem_bytes: usize) -> Option<f64> {
    let mut sp = StepPlan::default();
    let fast = cost_model::lockstep(topo, c, plan.steps(), plan.windowed(), |s, step: &mut Step| {
        fill_step(plan, topo.ranks(), elem_bytes, &mut sp, s, step)
    });
    // Where a port serves a later step's message first, the steps taken together.
    fast.or_else(|| {
        cost_model::sweep_steps(topo, c, plan.steps(), plan.windowed(), |s, step: &mut Step| {
            fill_step(plan, topo.ranks(), elem_bytes, &mut sp, s, step)
        })
    })
}

/// Bounds on the plan's time on `topo` whatever order its ports serve messages in
/// ([`cost_model::lockstep_bounds`]).
pub(crate) fn bounds(plan: &dyn Stepped, topo: &dyn Topology, c: f64, elem_bytes: usize) -> (f64, f64) {
    let mut sp = StepPlan::default();
    cost_model::lockstep_bounds(topo, c, plan.steps(), plan.windowed(), |s, step: &mut Step| {
        fill_step(plan, topo.ranks(), elem_bytes, &mut sp, s, step)
    })
}

/// The plan's time on the uniform machine `h` where the caller knows it to be
/// *symmetric*: in every step each rank sends the same sequence of message sizes (up to
/// which peer gets which), every rank receives the same multiset of sizes it sends, and
/// no two of a rank's messages of a step go to one peer unless one of them is a
/// notification of no data. Then, starting a step together, every rank's in side holds
/// as many messages at any instant as its out side (the same positions of the same
/// sequence are in flight at every sender), so no in-port is ever what a message waits
/// for: each rank's step is its own sends, in order, on its `k` ports, each taking the
/// first port to free (what the engine's ports do with messages all waiting), and its
/// reductions first come first served on its compute unit from the step's start, one
/// per data message it reduces, at the ends of the sends of that size. Every rank ends
/// the step at the same instant, all of its messages landed, so the next step starts
/// there on free ports. That is [`crate::cost_model::lockstep`]'s recurrence, with its
/// floating-point operations in the same order, computed for one rank: `O(steps x
/// messages a rank)` where the recurrence books every message of every rank (4 million
/// at 1,024 ranks of `bcube` in one group, seconds and a gigabyte).
///
/// `None` where a message takes no time (`alpha = 0` and no data): the engine holds its
/// ports until the instant's next round, which the recurrence does not follow either.
pub(crate) fn symmetric_time(plan: &dyn Stepped, h: &cost_model::Hockney, elem_bytes: usize) -> Option<f64> {
    let mut sp = StepPlan::default();
    let mut free = cost_model::PortPool::of_nics(h.nics);
    let mut ends: Vec<(f64, u64, bool)> = Vec::new();
    let mut done = 0.0f64;
    for s in 0..plan.steps() {
        sp.clear();
        plan.plan(0, s, &mut sp);
        // Every port is free when the step starts, and every send is ready then.
        free.reset(h.nics as usize);
        ends.clear();
        for x in &sp.sends {
            let bytes = (x.src.len * elem_bytes) as u64;
            let t = h.t(bytes as f64);
            if t <= 0.0 {
                return None;
            }
            // The first port to free (ports are interchangeable).
            let end = free.take(done, t) + t;
            ends.push((end, bytes, x.reduce));
        }
        // The receives land when the sends of their positions end (symmetry); the
        // reductions in order of landing, from the step's start.
        ends.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut compute, mut landed) = (done, done);
        for &(end, bytes, reduce) in &ends {
            if reduce {
                compute = compute.max(end) + bytes as f64 * h.c;
            } else {
                landed = landed.max(end);
            }
        }
        done = compute.max(landed);
        for &(_, dst) in &sp.local {
            done += (dst.len * elem_bytes) as f64 * h.c;
        }
    }
    Some(done)
}

/// The closed form of a plan whose formula holds on uniform machines: `formula(h)` where
/// the machine is uniform, else the plan's step recurrence ([`time`]).
pub(crate) fn formula_or_steps(
    plan: &dyn Stepped,
    p: &crate::algos::Problem,
    m: &crate::algos::Machine,
    formula: impl FnOnce(&cost_model::Hockney) -> f64,
) -> Option<f64> {
    match cost_model::Hockney::of(m) {
        Some(h) => Some(formula(&h)),
        None => time(plan, m.topo, m.cost_per_byte, p.elem_bytes),
    }
}
