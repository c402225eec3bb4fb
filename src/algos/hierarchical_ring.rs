//! Hierarchical ring (Tencent 2018, the survey's "分层Ring AllReduce"): inside each group
//! reduce to the group's leader, ring allreduce among the leaders, broadcast inside
//! each group. The point is to cross the slow network with `m` leaders instead of all
//! `P` ranks: `2(m-1)` latencies instead of `2(P-1)`.
//!
//! Groups are the innermost level's groups of a hierarchical topology (the GPUs of one
//! node, `g = size_0` consecutive ranks); the leader of group `j` is its first rank
//! `j g`; the leaders' ring runs in group order over whatever levels lie above (with
//! more than two levels its hops are not all alike, and the closed form follows them).
//!
//! The group's reduce and broadcast are a parameter, `intra`:
//! - `star` (default, as the survey describes it): every member sends its vector to the
//!   leader, which adds them in rank order; the leader sends the result to every member.
//!   With one NIC the leader takes the `g-1` vectors one after another; give the level a
//!   leader with `nics: g-1` and they arrive at once, which is the survey's "one step".
//! - `binomial_tree`: a binomial tree over the group, rooted at the leader (as
//!   [`super::tree`]).
//! - `chain`: local rank `g-1` passes to `g-2`, ... to the leader; the result goes back
//!   along the chain.
//!
//! Not applicable without levels (a flat, grid or custom machine has no groups).

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Params, Problem, Topology, binomial_shape, block, clog2};
use crate::cost_model::PortPool;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "hierarchical_ring",
    summary: "reduce inside each group to its leader, ring allreduce among leaders, broadcast inside groups",
    source: "survey (hierarchical ring, 分层Ring AllReduce); Tencent 2018",
    requires: "a hierarchical topology: groups are the innermost level's (g = size_0 ranks), \
               m = P/g leaders; any n",
    closed_form: "Red + 2(m-1)(alpha_1 + c/B_1) + (m-1) c C + Bc, c = ceil(n/m) e, on two levels \
                  (the leaders' ring is followed hop by hop above that); T0 = alpha_0 + S/B_0, R = S C, \
                  k = the leader's NICs, q = ceil((g-1)/k): star Red = max(T0 + (g-1)R, q T0 + (g-1-(q-1)k)R), \
                  Bc = q T0; chain Red = (g-1)(T0+R), Bc = (g-1)T0; binomial_tree the tree recurrence \
                  (log2 g (T0+R) and log2 g T0 for g a power of two). The survey: 2(alpha+S/B) + g S C + \
                  2(m-1)(alpha + S/(mB)) + (m-1)(S/m)C, which needs k >= g-1 and counts g additions for g-1. \
                  When group leaders' NICs differ: the recurrence of its steps (cost_model::lockstep), none \
                  where a message takes a port ahead of a lagging group's",
    params: &["intra=star: the group's reduce and broadcast (star, binomial_tree, chain)"],
    build: |params: &mut Params| {
        let intra = match params.choice("intra", &["star", "binomial_tree", "chain"])? {
            "binomial_tree" => GroupMethod::BinomialTree,
            "chain" => GroupMethod::Chain,
            _ => GroupMethod::Star,
        };
        Ok(Box::new(HierarchicalRing { intra }))
    },
};

/// How a group reduces to its leader and broadcasts from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMethod {
    /// Every member to the leader at once; the leader to every member.
    Star,
    /// A binomial tree rooted at the leader.
    BinomialTree,
    /// Along the group, last member first.
    Chain,
}

impl GroupMethod {
    fn name(self) -> &'static str {
        match self {
            GroupMethod::Star => "star",
            GroupMethod::BinomialTree => "binomial_tree",
            GroupMethod::Chain => "chain",
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct HierarchicalRing {
    /// The group's reduce and broadcast.
    pub intra: GroupMethod,
}

/// The group size `g`: the innermost level's, or 1 (every rank its own leader) where
/// the machine has no levels.
fn group_size(topo: &dyn Topology, ranks: usize) -> usize {
    topo.levels().and_then(|l| l.first().map(|&(g, _)| g)).filter(|&g| g >= 1 && ranks.is_multiple_of(g)).unwrap_or(1)
}

/// The schedule as steps, the same numbering on every rank: the group's reduce, the
/// leaders' ring (`2(m-1)` steps; members idle), the group's broadcast.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HrPlan {
    intra: GroupMethod,
    /// Group size.
    g: usize,
    /// Groups (leaders).
    m: usize,
    /// Elements per rank.
    n: usize,
}

impl HrPlan {
    /// Steps of the group's reduce (and of its broadcast).
    fn intra_steps(&self) -> usize {
        match self.intra {
            _ if self.g <= 1 => 0,
            GroupMethod::Star => 1,
            GroupMethod::Chain => self.g - 1,
            GroupMethod::BinomialTree => clog2(self.g) as usize,
        }
    }

    /// Local rank `i`'s part of step `t` of the group's reduce (`up`) or broadcast.
    fn intra(&self, base: usize, i: usize, t: usize, up: bool, out: &mut StepPlan) {
        let g = self.g;
        let all = Region::vec(0, self.n);
        // A message toward the leader is added in; one away from it is copied.
        let send =
            |to: usize, out: &mut StepPlan| out.sends.push(Send { to: base + to, kind: 0, src: all, reduce: up });
        let action = if up { Action::Reduce } else { Action::Copy };
        let recv =
            |from: usize, out: &mut StepPlan| out.recvs.push(Recv { from: base + from, kind: 0, dst: all, action });
        match self.intra {
            // Every member to the leader in one step; the leader to every member in one.
            GroupMethod::Star => match (i, up) {
                (0, true) => (1..g).for_each(|l| recv(l, out)),
                (0, false) => (1..g).for_each(|l| send(l, out)),
                (_, true) => send(0, out),
                (_, false) => recv(0, out),
            },
            // Up: local rank g-1-t passes to g-2-t. Down: t passes to t+1.
            GroupMethod::Chain => {
                let (from, to) = if up { (g - 1 - t, g - 2 - t) } else { (t, t + 1) };
                if i == from {
                    send(to, out);
                }
                if i == to {
                    recv(from, out);
                }
            }
            // The binomial tree of [`super::tree`], whose edges each span one bit: up,
            // step t joins the subtrees across bit j = rounds-1-t (farthest child first);
            // down, step t hands on across bit t (nearest child, largest subtree, first).
            GroupMethod::BinomialTree => {
                let j = if up { clog2(g) as usize - 1 - t } else { t };
                let (parent, mut children) = binomial_shape(i, g);
                if let Some(q) = parent.filter(|&q| q + (1 << j) == i) {
                    if up { send(q, out) } else { recv(q, out) }
                }
                if let Some(c) = children.find(|&c| c == i + (1 << j)) {
                    if up { recv(c, out) } else { send(c, out) }
                }
            }
        }
    }

    /// Leader `j`'s step `k` of the ring allreduce of [`super::ring`] among the leaders
    /// (leader j being rank `j g`): reduce-scatter, pass chunk j-k on and add chunk j-k-1;
    /// then allgather, pass the finished chunk j+1-k on and take chunk j-k. Chunk indices
    /// are mod m; `+ 2m` keeps the arithmetic unsigned.
    fn ring(&self, j: usize, k: usize, out: &mut StepPlan) {
        let (m, g) = (self.m, self.g);
        let chunk = |i: usize| block(self.n, m, i % m);
        let (right, left) = (((j + 1) % m) * g, ((j + m - 1) % m) * g);
        let (give, take, reduce) = if k < m - 1 {
            (j + 2 * m - k, j + 2 * m - k - 1, true)
        } else {
            let k = k - (m - 1);
            (j + 2 * m + 1 - k, j + 2 * m - k, false)
        };
        let action = if reduce { Action::Reduce } else { Action::Copy };
        out.sends.push(Send { to: right, kind: 0, src: chunk(give), reduce });
        out.recvs.push(Recv { from: left, kind: 0, dst: chunk(take), action });
    }
}

impl Stepped for HrPlan {
    fn steps(&self) -> usize {
        2 * self.intra_steps() + 2 * self.m.saturating_sub(1)
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (base, i) = (r - r % self.g, r % self.g);
        let (red, ring) = (self.intra_steps(), 2 * self.m.saturating_sub(1));
        if s < red {
            self.intra(base, i, s, true, out);
        } else if s < red + ring {
            if i == 0 {
                self.ring(r / self.g, s - red, out);
            }
        } else {
            self.intra(base, i, s - red - ring, false, out);
        }
    }
}

/// The plan of `hierarchical_ring` with `intra` on `topo` for `p`.
pub(crate) fn plan(p: &Problem, topo: &dyn Topology, intra: GroupMethod) -> HrPlan {
    let g = group_size(topo, p.ranks);
    HrPlan { intra, g, m: p.ranks / g, n: p.elems }
}

impl Algorithm for HierarchicalRing {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        match self.intra {
            GroupMethod::Star => INFO.id.to_string(),
            other => format!("{}(intra={})", INFO.id, other.name()),
        }
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        let Some(levels) = m.topo.levels() else {
            return Err(format!(
                "needs a hierarchical topology (groups to reduce in); this one is {}",
                m.topo.describe()
            ));
        };
        match levels.first() {
            Some(&(g, _)) if g >= 1 && p.ranks.is_multiple_of(g) => Ok(()),
            _ => Err(format!("the innermost level's groups do not divide the {} ranks", p.ranks)),
        }
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(plan(&p, topo, self.intra), rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        self.applicable(p, m).ok()?;
        Some((hierarchical_ring(p, m, self.intra)?, EXACT))
    }

    /// Where its step recurrence gives none (a port would serve out of step order): the
    /// bounds of its steps whatever order the ports serve them in
    /// ([`crate::cost_model::lockstep_bounds`]).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        self.applicable(p, m).ok()?;
        Some(super::stepped_bounds(&plan(p, m.topo, self.intra), m.topo, m.cost_per_byte, p.elem_bytes))
    }

    /// An element goes through the group's additions (g-1 in a chain for star and
    /// chain, ceil(log2 g) levels for the tree) and then m-1 in the leaders' ring.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        let g = group_size(topo, p.ranks);
        let group = match self.intra {
            GroupMethod::BinomialTree => clog2(g) as usize,
            GroupMethod::Star | GroupMethod::Chain => g - 1,
        };
        group + (p.ranks / g).saturating_sub(1)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// `hierarchical_ring` on the machine: [`hierarchical_ring_formula`] where the leaders
/// all have the same ports (and the members too), else the step recurrence
/// ([`lockstep`](crate::cost_model::lockstep)) of its group reduce, leaders' ring and group broadcast, each message
/// at its own pair's cost and each rank's own ports. With unequal leaders, groups finish
/// their reduce at different times; the recurrence follows that, and gives `None` where
/// a message would take a port ahead of a lagging group's. (The formula comes first
/// because a binomial tree over a group that is not a power of two has leaves that send
/// before their step, which the formula's port queues follow and the recurrence does
/// not; where both exist a test checks that they agree.)
pub fn hierarchical_ring(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    hierarchical_ring_formula(p, m, method).or_else(|| hierarchical_ring_steps(p, m, method))
}

/// The step recurrence of `hierarchical_ring` (see [`hierarchical_ring`]).
pub fn hierarchical_ring_steps(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    let plan = crate::algos::hr_plan(p, m.topo, method);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// Hierarchical ring on groups of `g = s_0` ranks with `m = P/g` leaders:
/// `Red + Ring + Bc`, where on two levels with `m` dividing n
///
/// - `Red`, the group's reduce to its leader over level 0 (`T0 = alpha_0 + S/B_0`,
///   `R = S C`, leader with k NICs): star `max(T0 + (g-1) R, q T0 + (g-1-(q-1)k) R)`,
///   `q = ceil((g-1)/k)` (as [`star`](crate::algos::forms::star)'s reduce); chain `(g-1)(T0 + R)`; binomial tree
///   the tree recurrence of [`binomial_tree`](crate::algos::forms::binomial_tree), `log2 g (T0 + R)` for g a power of two;
/// - `Ring = 2(m-1)(alpha_1 + c/B_1) + (m-1) c C`, `c = ceil(n/m) e` ([`ring`](crate::algos::forms::ring) over the
///   leaders);
/// - `Bc`, the broadcast: star `q T0`, chain `(g-1) T0`, binomial `log2 g T0`.
///
/// The survey writes `2(alpha + S/B) + g S C + 2(m-1)(alpha + S/(mB)) + (m-1)(S/m) C`. Its
/// leader receives all `g-1` vectors in one step, which needs `k >= g-1` NICs (then
/// `q = 1` and our star is `2 T0 + (g-1) S C + Ring`); it counts `g` additions where the
/// leader makes `g-1`; and it uses one alpha and B where the group's and the leaders'
/// links differ.
///
/// What is evaluated, exactly, in every case: the group phase is the same in every group
/// (level 0 is uniform), so all leaders start the ring together; the ring is evaluated
/// step by step over the leaders' real hops (with more than two levels some hops cross a
/// higher level, the steps stop being in lockstep, and no single-line formula holds) with
/// each leader's k ports as FIFO servers; each leader's broadcast then starts when its
/// ring is done and its ports are free of its last ring sends (on a GPU cluster the ring
/// crosses nodes through the leaders' NICs, an interface of its own, and the broadcast
/// finds the leader's NVLink ports free). `None` when the leaders do
/// not all have the same ports, or the members do not: then groups finish at different
/// times and ring messages compete with group messages for ports, which the engine orders
/// by issue time and this evaluation does not follow.
pub fn hierarchical_ring_formula(p: &Problem, m: &Machine, method: GroupMethod) -> Option<f64> {
    let levels = m.topo.levels()?;
    let &(g, link0) = levels.first()?;
    if g == 0 || !p.ranks.is_multiple_of(g) {
        return None;
    }
    let groups = p.ranks / g;
    let topo = m.topo;
    let kl = topo.nics(0);
    let km = if g > 1 { topo.nics(1) } else { kl };
    if (0..groups).any(|j| topo.nics(j * g) != kl) || (0..p.ranks).any(|r| r % g != 0 && topo.nics(r) != km) {
        return None;
    }
    // The leaders' ring leaves a leader by the interface its group talks through, or, on
    // a GPU cluster, by its node's NIC: then the ring and the group phases do not share
    // ports, and each leader's NIC carries its ring hop alone (no other rank crosses
    // nodes).
    let face = |j: usize| topo.route_interfaces(j * g, ((j + 1) % groups) * g);
    let shared = groups < 2 || (0..groups).all(|j| face(j) == (j * g, ((j + 1) % groups) * g));
    let kr = if shared { kl } else { topo.interface_ports(face(0).0) };
    if !shared && (0..groups).any(|j| topo.interface_ports(face(j).0) != kr || topo.interface_ports(face(j).1) != kr) {
        return None;
    }
    let (kl, km, kr) = (kl.max(1) as usize, km.max(1) as usize, kr.max(1) as usize);
    let (t0, r0) = (link0.time(p.bytes()), p.bytes() * m.cost_per_byte);
    let start = group_reduce(method, g, t0, r0, kl, km);
    let (done, mut ports, ring_end) = leaders_ring(p, m, g, groups, start, kr);
    let mut end = ring_end.max(start);
    for (d, ring_ports) in done.iter().zip(ports.iter_mut()) {
        // The broadcast starts when the leader is done, after its ring sends were issued.
        let mut own = PortPool::new(kl);
        let leader_ports = if shared { ring_ports } else { &mut own };
        end = end.max(group_broadcast(method, g, t0, *d, leader_ports, km));
    }
    Some(end)
}

/// When a group's leader holds the group's sum, every member having sent at time 0
/// (message time `t`, reduction time `r`, leader with `kl` ports, members with `km`).
fn group_reduce(method: GroupMethod, g: usize, t: f64, r: f64, kl: usize, km: usize) -> f64 {
    match method {
        _ if g <= 1 => 0.0,
        // Members' vectors come in through the leader's kl ports in rank order, kl per
        // round, and are added in that order.
        GroupMethod::Star => (1..g).fold(0.0, |done: f64, i| done.max(((i - 1) / kl + 1) as f64 * t) + r),
        // Each member waits for the one after it, adds, passes on.
        GroupMethod::Chain => (1..g).fold(0.0, |done, _| done + t + r),
        GroupMethod::BinomialTree => {
            use super::tree::binomial as shape;
            // ready[q]: when local rank q has its subtree's sum (children are above q).
            let mut ready = vec![0.0f64; g];
            let mut arrived = vec![0.0f64; g];
            for q in (0..g).rev() {
                let (_, children) = shape(q, g);
                // Children's partial sums reach q's ports in the order they were sent.
                let mut order: Vec<(f64, usize)> = children.clone().map(|c| (ready[c], c)).collect();
                order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let mut ports = PortPool::new(if q == 0 { kl } else { km });
                for (sent, c) in order {
                    arrived[c] = ports.take(sent, t) + t;
                }
                // q adds them one by one, farthest child first, as the program says.
                ready[q] = children.fold(0.0, |done: f64, c| done.max(arrived[c]) + r);
            }
            ready[0]
        }
    }
}

/// When the last member of a group has the result, the leader starting at `start` with
/// its ports free at `ports` (updated), members with `km` free ports.
fn group_broadcast(method: GroupMethod, g: usize, t: f64, start: f64, ports: &mut PortPool, km: usize) -> f64 {
    let send = |ports: &mut PortPool| ports.take(start, t) + t;
    match method {
        _ if g <= 1 => start,
        GroupMethod::Star => (1..g).map(|_| send(ports)).fold(start, f64::max),
        GroupMethod::Chain => send(ports) + (g - 2) as f64 * t,
        GroupMethod::BinomialTree => {
            use super::tree::binomial as shape;
            let mut got = vec![start; g];
            let mut end = start;
            for q in 0..g {
                // Nearest child (largest subtree) first; a member's ports are all free.
                for (idx, c) in shape(q, g).1.rev().enumerate() {
                    got[c] = if q == 0 { send(ports) } else { got[q] + (idx / km + 1) as f64 * t };
                    end = end.max(got[c]);
                }
            }
            end
        }
    }
}

/// The ring allreduce among `groups` leaders (leader j is rank `j g`), all starting at
/// `start` with `k` free ports, over their real hops `j -> j+1`. Each hop's messages are
/// the only users of the sender's outgoing and the receiver's incoming ports, so a hop
/// is a FIFO queue of k servers; a send is issued when the sender finished the step
/// before, and a receive is reduced once it arrived and the receiver finished the step
/// before. Returns when each leader finished, each leader's port free times, and the
/// last message's end.
fn leaders_ring(
    p: &Problem,
    m: &Machine,
    g: usize,
    groups: usize,
    start: f64,
    k: usize,
) -> (Vec<f64>, Vec<PortPool>, f64) {
    let mut done = vec![start; groups];
    // A leader's sends are issued at `before[j]`, which never decreases.
    let mut ports = vec![PortPool::new(k); groups];
    let mut end = start;
    if groups < 2 {
        return (done, ports, end);
    }
    let hops: Vec<_> = (0..groups).map(|j| m.topo.link(j * g, ((j + 1) % groups) * g)).collect();
    let bytes = |i: usize| p.b(block(p.elems, groups, i % groups).len);
    let steps = groups - 1;
    let mut before = done.clone();
    for s in 0..2 * steps {
        before.copy_from_slice(&done);
        for j in 0..groups {
            // The chunks of `ring`: reduce-scatter sends j-s, allgather sends j+1-(s-steps).
            let (chunk, reduce) =
                if s < steps { (j + 2 * groups - s, true) } else { (j + 2 * groups + 1 - (s - steps), false) };
            let b = bytes(chunk);
            let arrival = ports[j].take(before[j], hops[j].time(b)) + hops[j].time(b);
            end = end.max(arrival);
            let to = (j + 1) % groups;
            done[to] = arrival.max(before[to]) + if reduce { b * m.cost_per_byte } else { 0.0 };
        }
    }
    (done, ports, end)
}
