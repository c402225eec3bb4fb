//! Double binary tree (NCCL 2.4, Sanders, Speck & Träff 2009's two-tree idea; the survey):
//! two complementary binary trees, each carrying half the vector, pipelined in chunks:
//! every chunk is reduced up its tree to the root and broadcast back down.
//!
//! **The trees.** Tree A is NCCL's in-order "bit" tree (`ncclGetBtree`) on positions
//! `1..=P`, rank r at position r + 1: position i with lowest set bit b has children
//! `i - b/2` and `i + b/2` (the latter pulled in while beyond P) and parent
//! `(i ^ b) | 2b` (or `i ^ b` when that is beyond P); the root is the largest power of
//! two not above P. Its interior ranks are the odd ranks. Tree B is the same
//! construction on positions `0..P` (rank r at position r), rooted at rank 0 with one
//! child: its interior ranks are the even ones. So every rank is interior in exactly one
//! tree (P >= 2) and a leaf in the other, and the two trees together use every rank's
//! ports about equally, as in NCCL. (NCCL builds tree B by mirroring tree A for even P
//! and shifting it for odd P, which for odd P makes rank 0 interior in both trees; this
//! construction avoids that.) Both trees have height `H = floor(log2 P)` or one more.
//!
//! **The pipeline.** Half t of the vector is cut into `K = ceil(ceil(n/2) e / chunk)`
//! chunks (as evenly as possible). A rank of height h (leaves 0) sends chunk j up in
//! round `j + h`, after adding its children's chunk j, which they sent in earlier
//! rounds; the root has chunk j complete after round `j + H - 1` and sends it down in
//! round `j + H`; a rank at depth d gets it in round `j + H + d - 1` and passes it on in
//! the next. Both trees advance in the same rounds, `K + 2H - 1` of them: H to fill the
//! pipeline up to the roots, one per chunk, H - 1 to drain the last chunk down.
//!
//! **A round** is one step ([`super::stepped`]): a rank posts the round's receives (at
//! most 4: up from its children, down from its parents), issues its sends (at most 4: up
//! and down its interior tree, up its leaf tree) and waits for both, adding what comes
//! up. Chunks of a half with fewer elements than chunks (n < 2) are empty and not sent.
//!
//! **Flow control.** A rank keeps at most `k` (its NICs) of a round's sends in flight,
//! issuing the next only when one has landed, and ends the round only when all have
//! ([`crate::sim::op::Op::WaitSends`]). NCCL's bounded FIFOs do the same job: without
//! it a leaf, which has nothing to wait for in the pipeline's fill, would issue all its
//! chunks at once and its parent's port would serve them ahead of the parent's other
//! children's; and with one NIC a rank's second message of a round would go ahead of its
//! first whenever the first one's receiver is busy.
//!
//! **Closed form.** [`double_binary_tree`] evaluates the round recurrence;
//! it is exact wherever the ports serve the messages in the order the recurrence books
//! them. Where ranks drift out of step (one NIC, links of several speeds) a rank's
//! message of round s + 1 can take a port just before a lagging peer's message of round
//! s; the time then hangs on the engine's arbitration between the two, and there is no
//! closed form: `None`. On the flat machines of tests/grid_algos.rs that is 113 points of
//! 1120, all with one or two NICs, most of them pipelined; every point with four NICs
//! (a port per tree neighbour, so no message ever waits: tests/grid_algos.rs on flat
//! machines, tests/topology.rs on every hierarchy), and every single-chunk point with
//! two, has its closed form. Why `None` and not a tolerance: docs/model.md, "The cases
//! without a closed form".
//!
//! **Chunk size** (`chunk`, default 64 KiB): smaller chunks fill the pipeline sooner
//! (the `2H - 1` extra rounds carry one chunk each) but pay alpha per chunk per message;
//! 64 KiB is the order of NCCL's tree pieces (its 4 MiB buffer in 8 steps, shared by the
//! channels), where alpha of a microsecond costs a few percent of a 100 Gb/s link.

use std::sync::Arc;

use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, ParamError, Problem, Topology, block};
use crate::sim::op::{Action, Program, Rank, Region};

/// The default chunk, bytes.
pub const DEFAULT_CHUNK: u64 = 64 * 1024;

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "double_binary_tree",
    summary: "two complementary binary trees, half the data each, pipelined in chunks: reduce up, broadcast down",
    source: "survey (double binary tree); NCCL 2.4; Sanders, Speck & Traff 2009",
    requires: "any P >= 1, any n, any topology (flat)",
    closed_form: "the recurrence of its K + 2H - 1 rounds (cost_model::lockstep; K chunks per half, H tree \
                  height), each at most 4 messages (at most k in flight) and 2 additions of a chunk per rank; \
                  where a rank's later-round message takes a port ahead of a lagging peer's, the rounds taken \
                  together (cost_model::sweep)",
    params: &["chunk=64KiB: pipeline chunk (bytes); each half of the vector is cut into ceil(half / chunk) chunks"],
    build: |params| {
        let chunk = params.size("chunk")?.unwrap_or(DEFAULT_CHUNK);
        Ok(Box::new(DoubleBinaryTree::new(chunk)?))
    },
};

/// See the module docs.
#[derive(Debug)]
pub struct DoubleBinaryTree {
    /// Pipeline chunk, bytes.
    pub chunk: u64,
}

impl DoubleBinaryTree {
    /// The algorithm with a `chunk` of that many bytes.
    pub fn new(chunk: u64) -> Result<Self, ParamError> {
        if chunk == 0 {
            return Err(ParamError::new(Some("chunk"), "'chunk' must be at least 1 byte".into()));
        }
        Ok(DoubleBinaryTree { chunk })
    }
}

/// One run's plan, its two trees built once for every rank ([`Algorithm::prepare`]).
struct Prepared {
    plan: DbtPlan,
}

impl crate::sim::Programs for Prepared {
    fn rank_program(&self, rank: Rank, _p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(self.plan.clone(), rank as usize, topo.nics(rank as usize))]
    }
    fn scratch_elems(&self, _p: &Problem) -> Vec<usize> {
        Vec::new()
    }
}

/// NCCL's `ncclGetBtree`: the parent and children of `rank` in the in-order bit tree on
/// positions `0..nranks` (position 0 is the root, with the one child `2^k`).
pub(crate) fn nccl_btree(nranks: usize, rank: usize) -> (Option<usize>, [Option<usize>; 2]) {
    let mut bit = 1;
    while bit < nranks && bit & rank == 0 {
        bit <<= 1;
    }
    if rank == 0 {
        return (None, [None, (nranks > 1).then_some(bit >> 1)]);
    }
    let mut up = (rank ^ bit) | (bit << 1);
    if up >= nranks {
        up = rank ^ bit;
    }
    let mut low = bit >> 1;
    let down0 = (low > 0).then(|| rank - low);
    while low > 0 && rank + low >= nranks {
        low >>= 1;
    }
    (Some(up), [down0, (low > 0).then(|| rank + low)])
}

/// One binary tree over the ranks.
#[derive(Clone, Debug)]
struct Tree {
    parent: Vec<Option<usize>>,
    children: Vec<[Option<usize>; 2]>,
    root: usize,
    /// Height (leaves 0): the round offset of a rank's up-sends.
    height: Vec<usize>,
    /// Depth (root 0).
    depth: Vec<usize>,
}

impl Tree {
    /// Tree A (`shift = 1`: rank r at position r + 1 of a btree on P + 1 positions, whose
    /// root 0 is dropped) or tree B (`shift = 0`: NCCL's btree on the ranks).
    fn new(np: usize, shift: usize) -> Tree {
        let mut parent = vec![None; np];
        let mut children = vec![[None, None]; np];
        for r in 0..np {
            let (up, downs) = nccl_btree(np + shift, r + shift);
            parent[r] = up.filter(|&u| u >= shift).map(|u| u - shift);
            children[r] = downs.map(|d| d.map(|d| d - shift));
        }
        let root = (0..np).find(|&r| parent[r].is_none()).unwrap_or(0);
        // Depths top-down, heights bottom-up, from an order that lists parents first.
        let mut order = vec![root];
        let mut i = 0;
        while i < order.len() {
            let r = order[i];
            order.extend(children[r].iter().flatten());
            i += 1;
        }
        let mut depth = vec![0; np];
        for &r in &order {
            for &c in children[r].iter().flatten() {
                depth[c] = depth[r] + 1;
            }
        }
        let mut height = vec![0; np];
        for &r in order.iter().rev() {
            height[r] = children[r].iter().flatten().map(|&c| height[c] + 1).max().unwrap_or(0);
        }
        Tree { parent, children, root, height, depth }
    }

    /// The tree's height.
    fn top(&self) -> usize {
        self.height[self.root]
    }

    /// A bound on the additions in sequence behind a rank's partial sum: a rank adds
    /// its children's sums one after the other onto its own.
    fn depth_of_sums(&self, r: usize) -> usize {
        let kids: Vec<usize> = self.children[r].iter().flatten().copied().collect();
        kids.iter().map(|&c| self.depth_of_sums(c)).max().map_or(0, |d| d + kids.len())
    }
}

/// Both trees of P ranks.
#[derive(Debug)]
struct Shape {
    trees: [Tree; 2],
}

impl Shape {
    fn new(np: usize) -> Shape {
        Shape { trees: [Tree::new(np, 1), Tree::new(np, 0)] }
    }
}

/// The schedule of one run: the trees and the chunks.
#[derive(Clone, Debug)]
pub(crate) struct DbtPlan {
    shape: Arc<Shape>,
    n: usize,
    chunks: usize,
    rounds: usize,
}

impl DbtPlan {
    fn new(shape: Arc<Shape>, p: &Problem, chunk: u64) -> DbtPlan {
        let chunk_elems = ((chunk as usize) / p.elem_bytes.max(1)).max(1);
        let chunks = p.elems.div_ceil(2).div_ceil(chunk_elems).max(1);
        let top = shape.trees.iter().map(Tree::top).max().unwrap_or(0);
        let rounds = if p.ranks <= 1 { 0 } else { chunks + 2 * top - 1 };
        DbtPlan { shape, n: p.elems, chunks, rounds }
    }

    /// Chunk j of half t.
    fn chunk(&self, t: usize, j: usize) -> Region {
        let half = block(self.n, 2, t);
        let b = block(half.len, self.chunks, j);
        Region::vec(half.offset + b.offset, b.len)
    }

    /// `j` if round `round` minus `offset` is a chunk index.
    fn index(&self, round: usize, offset: usize) -> Option<usize> {
        round.checked_sub(offset).filter(|&j| j < self.chunks)
    }
}

impl Stepped for DbtPlan {
    fn steps(&self) -> usize {
        self.rounds
    }

    fn windowed(&self) -> bool {
        true
    }

    fn plan(&self, r: usize, round: usize, out: &mut StepPlan) {
        for (t, tree) in self.shape.trees.iter().enumerate() {
            let kind = |dir: u32| 2 * t as u32 + dir;
            let top = tree.top();
            // An empty chunk (a half of fewer elements than chunks, n < 2) is not sent.
            let chunk = |j: usize| Some(self.chunk(t, j)).filter(|c| c.len > 0);
            // Up: my partial sum of chunk j to my parent in round j + height, after my
            // children's, which they sent in earlier rounds.
            if let Some(q) = tree.parent[r]
                && let Some(src) = self.index(round, tree.height[r]).and_then(chunk)
            {
                out.sends.push(Send { to: q, kind: kind(0), src, reduce: true });
            }
            for &c in tree.children[r].iter().flatten() {
                if let Some(dst) = self.index(round, tree.height[c]).and_then(chunk) {
                    out.recvs.push(Recv { from: c, kind: kind(0), dst, action: Action::Reduce });
                }
            }
            // Down: chunk j reaches depth d in round j + top + d - 1 and goes on in the next.
            if let Some(q) = tree.parent[r]
                && let Some(dst) = self.index(round + 1, top + tree.depth[r]).and_then(chunk)
            {
                out.recvs.push(Recv { from: q, kind: kind(1), dst, action: Action::Copy });
            }
            for &c in tree.children[r].iter().flatten() {
                if let Some(src) = self.index(round, top + tree.depth[r]).and_then(chunk) {
                    out.sends.push(Send { to: c, kind: kind(1), src, reduce: false });
                }
            }
        }
    }
}

/// The plan of `double_binary_tree` with `chunk` bytes for `p`.
pub(crate) fn plan(p: &Problem, chunk: u64) -> DbtPlan {
    DbtPlan::new(Arc::new(Shape::new(p.ranks)), p, chunk)
}

impl Algorithm for DoubleBinaryTree {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        if self.chunk == DEFAULT_CHUNK { INFO.id.into() } else { format!("{}(chunk={})", INFO.id, self.chunk) }
    }

    /// One rank's program, its trees built for it alone (O(P)): a run builds them once
    /// for all ranks ([`Algorithm::prepare`]).
    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        vec![stepped::program(plan(&p, self.chunk), rank as usize, topo.nics(rank as usize))]
    }

    fn prepare<'a>(&'a self, p: &Problem, _topo: &dyn Topology) -> Box<dyn crate::sim::Programs + 'a> {
        Box::new(Prepared { plan: plan(p, self.chunk) })
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((double_binary_tree(p, m, self.chunk)?, EXACT))
    }

    /// Where its step recurrence gives none (a port would serve out of step order): the
    /// bounds of its steps whatever order the ports serve them in
    /// ([`crate::cost_model::lockstep_bounds`]).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some(super::stepped_bounds(&plan(p, self.chunk), m.topo, m.cost_per_byte, p.elem_bytes))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if p.ranks <= 1 {
            return 0;
        }
        let shape = Shape::new(p.ranks);
        shape.trees.iter().map(|t| t.depth_of_sums(t.root)).max().unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// `double_binary_tree` with pipeline chunk `chunk` bytes: the recurrence
/// ([`lockstep`](crate::cost_model::lockstep)) of its rounds. With K chunks per half and trees of height H there are
/// `K + 2H - 1` rounds: H to fill the pipeline up to the roots, one per chunk, and
/// H - 1 to drain the last chunk down. In a round a rank sends and receives at most 4
/// chunks (`c` bytes) and adds at most 2, so on a uniform machine with k NICs a round
/// costs about `ceil(4/k) T(c) + 2 R(c)` once the pipeline is full; the recurrence
/// charges each rank exactly its own messages, in the order its ports take them.
///
/// The survey gives no formula (it notes the tree's `log2 N` latency against the ring's
/// N). `None` where ports would take messages out of round order, as when ranks run
/// ahead in the pipeline's fill: the time then hangs on the engine's arbitration (see
/// [`lockstep`](crate::cost_model::lockstep) and the algorithm's docs).
pub fn double_binary_tree(p: &Problem, m: &Machine, chunk: u64) -> Option<f64> {
    let plan = crate::algos::dbt_plan(p, chunk);
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_are_complementary() {
        for np in 2..300 {
            let s = Shape::new(np);
            for (t, tree) in s.trees.iter().enumerate() {
                // A tree: one root, every other rank reachable, parent/child agree.
                assert_eq!((0..np).filter(|&r| tree.parent[r].is_none()).count(), 1, "P={np} tree {t}");
                for r in 0..np {
                    for &c in tree.children[r].iter().flatten() {
                        assert_eq!(tree.parent[c], Some(r), "P={np} tree {t}");
                    }
                }
                assert!(tree.depth.iter().all(|&d| d <= tree.top()));
            }
            // Interior in at most one tree.
            for r in 0..np {
                let interior = s.trees.iter().filter(|t| t.children[r].iter().flatten().count() > 0).count();
                assert!(interior <= 1, "P={np}: rank {r} interior in both trees");
            }
        }
    }
}
