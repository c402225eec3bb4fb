//! Broadcast by a binomial scatter and a recursive-doubling allgather (Barnett et al.
//! 1994; van de Geijn's long-message broadcast; Open MPI's
//! `ompi_coll_base_bcast_intra_scatter_allgather`, bcast algorithm 8).
//!
//! The vector is cut as Open MPI cuts it: block i is elements `[i c, (i+1) c)` of
//! `c = ceil(n/P)`, the last ones short or empty. Scatter: in step s (mask m = P/2^(s+1))
//! every rank r that is a multiple of 2m sends rank r + m the blocks `r+m .. r+2m-1` (none
//! if they are empty), so each rank ends with its block and the root's port sends
//! `S/2 + S/4 + ...` in turn. Allgather: in step s (mask m = 2^s) rank r swaps what its
//! group of m ranks holds with the group of `r ^ m` (empty messages too, as Open MPI's
//! sendrecv). For P not a power of two, a swap whose partner is beyond P does not happen,
//! and the ranks of the half that did receive the other half's blocks pass them on to the
//! ones that did not by recursive halving (Open MPI's, after MPICH's allgather), in up to
//! i sub-steps at level i. About `2 S` on the root's port instead of the binomial tree's
//! `log2 P S`, for about `2 log2 P` latencies.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "scatter_allgather",
    summary: "binomial-tree scatter of P blocks, then a recursive-doubling allgather",
    source: "Open MPI ompi_coll_base_bcast_intra_scatter_allgather (bcast algorithm 8); Barnett et al. 1994",
    requires: "any P >= 1; n >= P (Open MPI runs the linear broadcast below)",
    closed_form: "the step recurrence of its steps (cost_model::lockstep), none where a port serves messages out \
                  of step order: for P a power of two the root's port sends (P-1)/P S in log2 P scatter messages, \
                  every rank's (P-1)/P S in log2 P allgather swaps",
    params: &[],
    build: |_| Ok(Box::new(ScatterAllgather)),
};

/// See the module docs.
#[derive(Debug)]
pub struct ScatterAllgather;

/// The schedule of one problem.
#[derive(Clone, Copy, Debug)]
struct Plan {
    np: usize,
    n: usize,
}

impl Plan {
    /// Blocks `[a, b)` of Open MPI's cut, clipped to the vector.
    fn blocks(&self, a: usize, b: usize) -> Region {
        let c = self.n.div_ceil(self.np.max(1));
        let (lo, hi) = ((a * c).min(self.n), (b * c).min(self.n));
        Region::vec(lo, hi - lo)
    }
}

impl Plan {
    /// L = ceil(log2 P): the scatter's steps and the allgather's levels.
    fn levels(&self) -> usize {
        super::clog2(self.np) as usize
    }

    /// Allgather step `s` (from 0) as (level i, sub-step j): level i (mask 2^i) has the swap
    /// (j = 0) and i recursive-halving sub-steps for P not a power of two.
    fn level_of(&self, mut s: usize) -> (usize, usize) {
        for i in 0..self.levels() {
            if s <= i {
                return (i, s);
            }
            s -= i + 1;
        }
        (self.levels(), 0)
    }
}

impl Stepped for Plan {
    fn steps(&self) -> usize {
        let l = self.levels();
        l + l * (l + 1) / 2
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (np, levels) = (self.np, self.levels());
        if s < levels {
            let m = 1 << (levels - 1 - s);
            let region = |child: usize| self.blocks(child, child + m);
            if r.is_multiple_of(2 * m) && r + m < np && region(r + m).len > 0 {
                out.sends.push(Send { to: r + m, kind: 0, src: region(r + m), reduce: false });
            } else if r % (2 * m) == m && region(r).len > 0 {
                out.recvs.push(Recv { from: r - m, kind: 0, dst: region(r), action: Action::Copy });
            }
            return;
        }
        let (i, j) = self.level_of(s - levels);
        let m = 1 << i;
        let (mine, theirs) = (r / m * m, (r ^ m) / m * m);
        if j == 0 {
            if r ^ m < np {
                out.sends.push(Send { to: r ^ m, kind: 0, src: self.blocks(mine, mine + m), reduce: false });
                out.recvs.push(Recv {
                    from: r ^ m,
                    kind: 0,
                    dst: self.blocks(theirs, theirs + m),
                    action: Action::Copy,
                });
            }
            return;
        }
        // The other half's ranks beyond P: the ranks of this half that got its blocks
        // pass them on by recursive halving (Open MPI's, after MPICH).
        if theirs + m <= np {
            return;
        }
        let have = np as isize - mine as isize - m as isize;
        let upper = self.blocks(mine + m, mine + 2 * m);
        let h = m >> j;
        let (peer, root) = (r ^ h, (r / (2 * h) * (2 * h)) as isize);
        let (ri, pi) = (r as isize, peer as isize);
        if peer > r && ri < root + have && pi >= root + have {
            out.sends.push(Send { to: peer, kind: 1, src: upper, reduce: false });
        } else if peer < r && pi < root + have && ri >= root + have {
            out.recvs.push(Recv { from: peer, kind: 1, dst: upper, action: Action::Copy });
        }
    }
}

impl Algorithm for ScatterAllgather {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        if p.elems < p.ranks {
            let elements = if p.elems == 1 { "element" } else { "elements" };
            return Err(format!(
                "{} {elements} on {} ranks: fewer elements than ranks (Open MPI runs the linear broadcast)",
                p.elems, p.ranks
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(Plan { np: p.ranks, n: p.elems }, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let t = stepped::time(&Plan { np: p.ranks, n: p.elems }, m.topo, m.cost_per_byte, p.elem_bytes)?;
        Some((t, EXACT))
    }

    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        0
    }
}
