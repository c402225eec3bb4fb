//! Broadcast by a binomial scatter and a recursive-doubling allgather (Barnett et al.
//! 1994; van de Geijn's long-message broadcast; Open MPI's
//! `ompi_coll_base_bcast_intra_scatter_allgather`, bcast algorithm 8), for P a power of
//! two.
//!
//! The vector is cut as Open MPI cuts it: block i is elements `[i c, (i+1) c)` of
//! `c = ceil(n/P)`, the last ones short or empty. Scatter: in step s (mask m = P/2^(s+1))
//! every rank r that is a multiple of 2m sends rank r + m the blocks `r+m .. r+2m-1` (none
//! if they are empty), so each rank ends with its block and the root's port sends
//! `S/2 + S/4 + ...` in turn. Allgather: in step s (mask m = 2^s) rank r swaps what its
//! group of m ranks holds with the group of `r ^ m` (empty messages too, as Open MPI's
//! sendrecv). About `2 S` on the root's port instead of the binomial tree's
//! `log2 P S`, for `2 log2 P` latencies.

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology};
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "scatter_allgather",
    summary: "binomial-tree scatter of P blocks, then a recursive-doubling allgather",
    source: "Open MPI ompi_coll_base_bcast_intra_scatter_allgather (bcast algorithm 8); Barnett et al. 1994",
    requires: "P a power of two (Open MPI adds sends for other P; not here); n >= P (Open MPI runs the linear \
               broadcast below)",
    closed_form: "the step recurrence of its 2 log2 P steps (cost_model::lockstep): the root's port sends \
                  (P-1)/P S in log2 P scatter messages, every rank's (P-1)/P S in log2 P allgather swaps",
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

impl Stepped for Plan {
    fn steps(&self) -> usize {
        2 * self.np.trailing_zeros() as usize
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let bits = self.np.trailing_zeros() as usize;
        if s < bits {
            let m = self.np >> (s + 1);
            let region = |child: usize| self.blocks(child, child + m);
            if r.is_multiple_of(2 * m) && region(r + m).len > 0 {
                out.sends.push(Send { to: r + m, kind: 0, src: region(r + m), reduce: false });
            } else if r % (2 * m) == m && region(r).len > 0 {
                out.recvs.push(Recv { from: r - m, kind: 0, dst: region(r), action: Action::Copy });
            }
            return;
        }
        let m = 1 << (s - bits);
        let (mine, theirs) = (r / m * m, (r ^ m) / m * m);
        out.sends.push(Send { to: r ^ m, kind: 0, src: self.blocks(mine, mine + m), reduce: false });
        out.recvs.push(Recv { from: r ^ m, kind: 0, dst: self.blocks(theirs, theirs + m), action: Action::Copy });
    }
}

impl Algorithm for ScatterAllgather {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn applicable(&self, p: &Problem, _m: &Machine) -> Result<(), String> {
        if !p.ranks.is_power_of_two() {
            return Err(format!(
                "{} ranks: the scatter-allgather broadcast here needs a power of two (Open MPI's extra sends for \
                 other P are not modelled)",
                p.ranks
            ));
        }
        if p.elems < p.ranks {
            return Err(format!(
                "{} elements on {} ranks: fewer elements than ranks (Open MPI runs the linear broadcast)",
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
