//! BlueConnect (Cho et al., IBM 2019; the survey's "3D-Torus"): a ring reduce-scatter
//! inside the innermost groups, then on the shard that leaves a ring reduce-scatter
//! across the next level, and so on up; then ring allgathers back down in reverse order.
//! Each level's traffic crosses only that level's switches, at its alpha and bandwidth,
//! and carries only what the levels below left of the vector.
//!
//! Rank `r` on levels of sizes `s_0, s_1, ...` (innermost first) has coordinates
//! `d_i = (r / (s_0 ... s_(i-1))) % s_i`; at level `i` it works with the `s_i` ranks
//! that differ from it only in `d_i` (the survey's Step 1 `A0-A1-A2`, Step 2 `A0-B0`,
//! Step 3 `A0-C0` on 4 machines of 3 GPUs), in a ring ordered by `d_i`. Its shard at
//! level `i` is block `d_(i-1)` of its shard at level `i-1` (blocks as even as possible,
//! larger first), so after the last level every rank holds about `n/P` reduced elements.
//!
//! Not applicable without levels.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "blueconnect",
    summary: "ring reduce-scatter level by level of a hierarchy (innermost first), allgather back in reverse",
    source: "survey (BlueConnect / 3D-Torus); IBM: Cho et al. 2019",
    requires: "a hierarchical topology (levels); any n",
    closed_form: "P | n: sum_i 2(s_i-1)(alpha_i + S/(s_0..s_i B_i)) + (P-1)/P S C; one level: ring's \
                  2(s-1)(alpha + c/B) + (s-1) c C, c = ceil(n/s) e; otherwise the recurrence of its ring steps \
                  (cost_model::lockstep), none where one group's next level takes a port another group still \
                  needs. The survey gives none",
    params: &[],
    build: |_| Ok(Box::new(BlueConnect)),
};

/// See the module docs.
#[derive(Debug)]
pub struct BlueConnect;

/// One level as a rank sees it: its ring and the shard it works on.
#[derive(Clone, Copy, Debug)]
struct Stage {
    /// Ranks in the ring (`s_i`).
    size: usize,
    /// This rank's place in the ring (`d_i`).
    me: usize,
    /// Ranks between ring neighbours (`s_0 ... s_(i-1)`).
    stride: usize,
    /// The shard this level cuts into `size` chunks.
    shard: Region,
}

impl Stage {
    /// Chunk `i` (mod the ring size) of the shard.
    fn chunk(&self, i: usize) -> Region {
        let b = block(self.shard.len, self.size, i % self.size);
        Region::vec(self.shard.offset + b.offset, b.len)
    }
    /// The rank `k` places further round the ring (`k < size`).
    fn peer(&self, rank: usize, k: usize) -> Rank {
        let to = (self.me + k) % self.size;
        (rank - self.me * self.stride + to * self.stride) as Rank
    }
}

/// The levels as rank `rank` sees them, innermost first; levels of size 1 are skipped
/// (nobody to talk to).
fn stages(rank: usize, n: usize, sizes: &[usize]) -> Vec<Stage> {
    let mut out = Vec::new();
    let (mut stride, mut shard) = (1usize, Region::vec(0, n));
    for &size in sizes {
        let me = (rank / stride) % size;
        if size > 1 {
            let st = Stage { size, me, stride, shard };
            shard = st.chunk(me);
            out.push(st);
        }
        stride *= size;
    }
    out
}

/// The schedule as ring steps: every rank runs the same levels, so step s is the same
/// ring step of the same level everywhere.
#[derive(Clone, Debug)]
pub(crate) struct BcPlan {
    /// Level sizes, innermost first.
    pub sizes: Vec<usize>,
    /// Elements per rank.
    pub n: usize,
}

impl Stepped for BcPlan {
    fn steps(&self) -> usize {
        2 * self.sizes.iter().map(|&s| s.saturating_sub(1)).sum::<usize>()
    }

    fn plan(&self, r: usize, step: usize, out: &mut StepPlan) {
        let stages = stages(r, self.n, &self.sizes);
        let half = self.steps() / 2;
        // Reduce-scatter, innermost level first: at ring step k send chunk me-k-1 to the
        // next rank, add chunk me-k-2 from the previous one; after size-1 steps this rank
        // holds chunk `me` of its shard, summed over the level's ring. Then the allgather,
        // outermost level first: pass on chunk me-k, take chunk me-k-1. (`+ 2 size` keeps
        // the chunk arithmetic unsigned.)
        let (order, mut k, gather): (Box<dyn Iterator<Item = &Stage>>, usize, bool) = if step < half {
            (Box::new(stages.iter()), step, false)
        } else {
            (Box::new(stages.iter().rev()), step - half, true)
        };
        for st in order {
            let (s, me) = (st.size, st.me);
            if k < s - 1 {
                let (give, take) = if gather {
                    (me + 2 * s - k, me + 2 * s - k - 1)
                } else {
                    (me + 2 * s - k - 1, me + 2 * s - k - 2)
                };
                let (reduce, action) = if gather { (false, Action::Copy) } else { (true, Action::Reduce) };
                out.sends.push(Send { to: st.peer(r, 1) as usize, kind: 0, src: st.chunk(give), reduce });
                out.recvs.push(Recv { from: st.peer(r, s - 1) as usize, kind: 0, dst: st.chunk(take), action });
                return;
            }
            k -= s - 1;
        }
    }
}

/// The plan of `blueconnect` on `topo` (levels, else one flat level) for `p`.
pub(crate) fn plan(p: &Problem, topo: &dyn Topology) -> BcPlan {
    let sizes = topo.levels().map_or_else(|| vec![p.ranks], |l| l.iter().map(|x| x.0).collect());
    BcPlan { sizes, n: p.elems }
}

impl Algorithm for BlueConnect {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        let Some(levels) = m.topo.levels() else {
            return Err(format!("needs a hierarchical topology (levels); this one is {}", m.topo.describe()));
        };
        let ranks: usize = levels.iter().map(|l| l.0).product();
        if ranks != p.ranks {
            return Err(format!("the levels make {ranks} ranks, not {}", p.ranks));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(plan(&p, topo), rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        m.topo.levels()?;
        Some((blueconnect(p, m)?, EXACT))
    }

    /// Where its step recurrence gives none (a port would serve out of step order): the
    /// bounds of its steps whatever order the ports serve them in
    /// ([`crate::cost_model::lockstep_bounds`]).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        m.topo.levels()?;
        Some(super::stepped_bounds(&plan(p, m.topo), m.topo, m.cost_per_byte, p.elem_bytes))
    }

    /// Level i adds s_i - 1 partial sums in sequence: `sum_i (s_i - 1)`.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        plan(p, topo).sizes.iter().map(|&s| s.saturating_sub(1)).sum()
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// BlueConnect on the machine's levels: the step recurrence ([`lockstep`](crate::cost_model::lockstep)) of its ring
/// steps, level by level, on each level's link. Where P divides n (or only one level has
/// more than one group) it is [`blueconnect_formula`]. Elsewhere the shards differ by an
/// element, a group with the shorter shards finishes a level a little earlier, and its
/// next level's first message can take the port that a rank of a slower group still
/// needs for its last message of the level above; the recurrence follows that while the
/// message fits in a gap and gives `None` where it would delay the other (see
/// [`lockstep`](crate::cost_model::lockstep)).
pub fn blueconnect(p: &Problem, m: &Machine) -> Option<f64> {
    let plan = crate::algos::bc_plan(p, m.topo);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// BlueConnect on levels `(s_i, alpha_i, B_i)`:
/// `sum_i (s_i - 1) (2 T_i(c_i) + R(c_i))`, `T_i(x) = alpha_i + x/B_i`, `c_i = n_(i+1) e`,
/// `n_0 = n`, `n_(i+1) = ceil(n_i / s_i)`: the ring reduce-scatter of level i on the
/// shard the levels below left and the mirror-image allgather. With P dividing n that is
/// `sum_i 2(s_i-1)(alpha_i + S/(s_0 ... s_i B_i)) + (P-1)/P S C`: the reductions
/// telescope to a flat ring's, while each level's bandwidth term carries only what is
/// left of S.
///
/// Exact (`Some`) when P divides n: every rank's shard has the same length at every
/// level, so every ring of a level runs in lockstep, every rank changes level at the
/// same instant, and a level's last message has landed before the next level's first
/// is sent; ports then never matter. Also exact for any n when only one level has more
/// than one group: that is [`ring`](crate::algos::forms::ring) on that level's link. `None` otherwise: see
/// [`blueconnect`].
///
/// The survey gives no formula (`本文不再详细分析`).
pub fn blueconnect_formula(p: &Problem, levels: &[(usize, crate::topology::Link)], c: f64) -> Option<f64> {
    let active = levels.iter().filter(|l| l.0 > 1).count();
    if active > 1 && !p.elems.is_multiple_of(p.ranks.max(1)) {
        return None;
    }
    let mut n = p.elems;
    let mut time = 0.0;
    for &(s, link) in levels {
        if s <= 1 {
            continue;
        }
        let chunk = n.div_ceil(s);
        let b = p.b(chunk);
        time += (s - 1) as f64 * (2.0 * link.time(b) + b * c);
        n = chunk;
    }
    Some(time)
}
