//! The 2-D grid algorithms of the survey: Sony's 2D-Torus and Google's 2D-Mesh.
//!
//! Both run on a `rows x cols` grid ([`Topology::grid`]), ranks row-major
//! (rank = row * cols + col). A *row ring* joins the ranks of one row in column order,
//! its last rank sending to its first; a *column ring* likewise joins a column. On a
//! torus every ring step is one hop; on a mesh the ring's closing pair is `len - 1`
//! hops apart and costs `(len - 1) alpha + m/B` (docs/scenario.md), which the closed
//! form reads from [`Topology::link`] like every other pair.
//!
//! **`torus_2d`** (Mikami et al., Sony, 2018): three phases, each a textbook ring
//! ([`super::ring`], same offsets):
//! 1. reduce-scatter along every row: the vector in `cols` blocks; after `cols - 1`
//!    steps the rank in column c holds its row's sum of block `c + 1 (mod cols)`, its
//!    *shard*;
//! 2. ring allreduce along every column of the shard only (`S / cols` bytes, cut in
//!    `rows` pieces): `2 (rows - 1)` steps;
//! 3. allgather along every row: `cols - 1` steps.
//!
//! **`mesh_2d`** (Ying et al., Google, 2018): the vector in two halves; half A goes
//! rows-then-columns and half B columns-then-rows, at the same time, so that every rank
//! sends and receives on two NICs at once. How each direction is summed is the
//! parameter `ring`:
//! - `whole` (the default, the survey's description): "并没有做reduce-scatter,而是最简单的
//!   转2圈", `n - 1` steps of `alpha + S/B + S C` each: a whole-buffer ring as in Gloo's
//!   `allreduce_ring` (docs/sources.md). At step k a rank forwards the half
//!   it received at step k - 1 (its own at step 0) and adds what it receives now, so after
//!   `len - 1` steps it holds the ring's sum. Received halves land in two scratch slots
//!   used in turn; each step waits for its additions, so a slot is free again two steps
//!   later. Few steps (`rows + cols - 2`), but each moves a whole half.
//! - `scatter`: each half runs `torus_2d`'s three phases, half A rows first and half B
//!   columns first: the reduce-scatter form that moves only `2 (P-1)/P` of each half, as
//!   Google's patent describes it (US 2018/0240039: the rows reduce disjoint fields of
//!   the vector, then the columns).
//!
//! In both, the halves share one program, step for step: their messages go out together
//! on the two NICs, are added on the one compute unit, and a step ends when both halves
//! are in and both of its own have landed (flow control, [`Stepped::windowed`]: each half
//! keeps its NIC, as a NIC with a send queue one message deep would).
//!
//! **Why mesh_2d is exact on any square or one-line grid, mesh or torus.** With the flow
//! control a rank has at most two messages in flight out, one per half; and on a square
//! grid the halves always travel different directions in the same step, so everything
//! that comes in to a rank comes from its row and its column predecessor, at most one
//! message each at a time. No port ever has more than its two NICs' worth of messages
//! wanting it, nothing waits for a port, and the step recurrence is the engine's time
//! whatever the links cost (a mesh's slow closing pairs included). On an `r x c` grid
//! with `r != c` the halves cannot keep to different directions: each needs `c - 1` row
//! steps and `r - 1` column steps in `r + c - 2`, so for `|c - r|` steps both go the same
//! way, to the same successor. A lagging column predecessor's message may then find both
//! ports taken by the row predecessor's next step; the recurrence detects that and has
//! no closed form (`None`) where it happens. Without the flow control a rank ran a step
//! ahead of its own sends, and that was enough to reorder ports on every mesh.
//!
//! `torus_2d` sends one message per step and has no flow control: on a torus each ring
//! step is one hop and ranks stay in step; on a mesh a rank waiting for its slow closing
//! send would slow it down (up to 2x at 4 KiB with two NICs), so it does not wait, and its
//! phase changes there may race (`None`).
//!
//! Both algorithms are step-synchronous ([`super::stepped`]); their closed forms
//! in [`crate::cost_model`] evaluate the step recurrence on the actual pair costs.

use super::ring::Phase;
use super::stepped::{self, Recv, Send, StepPlan, Stepped};
use super::{AlgoInfo, Algorithm, EXACT, Machine, Problem, Topology, block};
use crate::cost_model::Hockney;
use crate::sim::op::{Action, Program, Rank, Region};

/// Registry entry of `torus_2d`.
pub const TORUS_INFO: AlgoInfo = AlgoInfo {
    id: "torus_2d",
    summary: "ring reduce-scatter along rows, ring allreduce of the 1/cols shard along columns, ring allgather \
              along rows",
    source: "survey (2D-Torus); Sony: Mikami et al. 2018",
    requires: "a 2-D grid topology (torus2d, mesh2d, ring); any n; any NICs",
    closed_form: "the step recurrence on the grid's pair costs (cost_model::lockstep); on a torus with rows*cols \
                  dividing n: (c-1)(T(S/c) + R(S/c)) + 2(r-1) T(S/(rc)) + (r-1) R(S/(rc)) + (c-1) T(S/c), \
                  r = rows, c = cols. The survey writes S/(mB), S/m in the column phase, which moves S/(cmB)",
    params: &[],
    build: |_| Ok(Box::new(Torus2d)),
};

/// Registry entry of `mesh_2d`.
pub const MESH_INFO: AlgoInfo = AlgoInfo {
    id: "mesh_2d",
    summary: "vector in halves: one goes rows-then-columns, the other columns-then-rows, at once, on two NICs",
    source: "survey (2D-Mesh); Google: Ying et al. 2018; ring=whole as Gloo allreduce_ring",
    requires: "a 2-D grid topology (torus2d, mesh2d, ring) and at least 2 NICs per rank; any n",
    closed_form: "the step recurrence on the grid's pair costs (cost_model::lockstep), on any square grid exact \
                  by construction (no port is ever oversubscribed); ring=whole on a torus: \
                  (r + c - 2)(T(ceil(n/2) e) + S C). The survey writes 2 (m + n - 2)(alpha + S/B + S C): each \
                  half moves S/2 and walks the rows and the columns once",
    params: &["ring=whole: how a half is summed along a direction: whole (the survey: whole-buffer ring) or \
               scatter (reduce-scatter, allreduce the other way, allgather)"],
    build: |params| {
        let ring = match params.choice("ring", &["whole", "scatter"])? {
            "scatter" => MeshRing::Scatter,
            _ => MeshRing::Whole,
        };
        Ok(Box::new(Mesh2d { ring }))
    },
};

/// A `rows x cols` grid, row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grid2 {
    pub rows: usize,
    pub cols: usize,
}

/// A direction of rings on the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dim {
    /// Along a row: to the next column.
    Row,
    /// Along a column: to the next row.
    Col,
}

impl Grid2 {
    /// The grid of `topo`, if it has one.
    pub fn of(topo: &dyn Topology) -> Option<Grid2> {
        topo.grid().map(|(rows, cols, _)| Grid2 { rows, cols })
    }

    /// Ranks in a ring along `d`.
    fn len(&self, d: Dim) -> usize {
        match d {
            Dim::Row => self.cols,
            Dim::Col => self.rows,
        }
    }

    /// Rank `r`'s position in its ring along `d`.
    fn pos(&self, r: usize, d: Dim) -> usize {
        match d {
            Dim::Row => r % self.cols,
            Dim::Col => r / self.cols,
        }
    }

    /// The next and the previous rank on `r`'s ring along `d`.
    fn ring(&self, r: usize, d: Dim) -> (usize, usize) {
        let (row, col) = (r / self.cols, r % self.cols);
        let at = |shift: usize| match d {
            Dim::Row => row * self.cols + (col + shift) % self.cols,
            Dim::Col => ((row + shift) % self.rows) * self.cols + col,
        };
        (at(1), at(self.len(d) - 1))
    }
}

fn applicable_grid(p: &Problem, m: &Machine) -> Result<Grid2, String> {
    let Some(g) = Grid2::of(m.topo) else {
        return Err(format!(
            "needs a 2-D grid topology (torus2d, mesh2d or ring) to lay its row and column rings on; {} has none",
            m.topo.describe()
        ));
    };
    if g.rows * g.cols != p.ranks {
        return Err(format!("the {}x{} grid has {} ranks, not {}", g.rows, g.cols, g.rows * g.cols, p.ranks));
    }
    Ok(g)
}

/// One step of a rank: send `send` to `next`, receive `recv` from `prev`, adding it in
/// (`reduce`) or copying it.
#[derive(Clone, Copy, Debug)]
struct Exchange {
    next: usize,
    send: Region,
    prev: usize,
    recv: Region,
    reduce: bool,
}

/// Step `k` of a ring reduce-scatter (`reduce`) or allgather over `parts` pieces of
/// `whole`, for the rank at position `i` of its ring: the textbook ring's step
/// ([`Phase::step`], the allreduce's convention: the reduce-scatter leaves position i
/// with piece i + 1), placed in `whole`. The piece it sends and the piece it receives.
fn ring_pieces(whole: Region, parts: usize, i: usize, k: usize, reduce: bool) -> (Region, Region) {
    let piece = |j: usize| {
        let b = block(whole.len, parts, j);
        Region::vec(whole.offset + b.offset, b.len)
    };
    let phase = if reduce { Phase::ReduceScatter { shift: 1 } } else { Phase::Allgather { shift: 1 } };
    let (send, recv, _) = phase.step(i, parts, k);
    (piece(send), piece(recv))
}

/// Steps of [`three_phase`] on grid `g`: `2 (cols - 1) + 2 (rows - 1)` either way round.
fn three_phase_steps(g: Grid2) -> usize {
    2 * (g.cols - 1) + 2 * (g.rows - 1)
}

/// Step `s` of rank `r` in Sony's three phases on `whole`, with `first` the direction of
/// phases 1 and 3: ring reduce-scatter along `first` (the rank at position i ends with
/// the sum of piece i + 1, its shard), ring allreduce of the shard along the other
/// direction (its own reduce-scatter and allgather), ring allgather along `first`.
fn three_phase(g: Grid2, whole: Region, first: Dim, r: usize, s: usize) -> Exchange {
    let second = if first == Dim::Row { Dim::Col } else { Dim::Row };
    let (len1, len2) = (g.len(first), g.len(second));
    let shard = {
        let b = block(whole.len, len1, (g.pos(r, first) + 1) % len1);
        Region::vec(whole.offset + b.offset, b.len)
    };
    let (dim, region, parts, k, reduce) = if s < len1 - 1 {
        (first, whole, len1, s, true)
    } else if s < len1 - 1 + 2 * (len2 - 1) {
        let k = s - (len1 - 1);
        let rs = k < len2 - 1;
        (second, shard, len2, if rs { k } else { k - (len2 - 1) }, rs)
    } else {
        (first, whole, len1, s - (len1 - 1) - 2 * (len2 - 1), false)
    };
    let (next, prev) = g.ring(r, dim);
    let (send, recv) = ring_pieces(region, parts, g.pos(r, dim), k, reduce);
    Exchange { next, send, prev, recv, reduce }
}

/// Add an exchange's send and receive to a step, as message kind `kind`.
fn push(out: &mut StepPlan, x: Exchange, kind: u32) {
    let action = if x.reduce { Action::Reduce } else { Action::Copy };
    out.sends.push(Send { to: x.next, kind, src: x.send, reduce: x.reduce });
    out.recvs.push(Recv { from: x.prev, kind, dst: x.recv, action });
}

/// `torus_2d`: see the module docs.
#[derive(Debug)]
pub struct Torus2d;

/// The schedule of `torus_2d` for one problem: the three phases on the whole vector,
/// rows first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TorusPlan {
    pub grid: Grid2,
    pub n: usize,
}

impl Stepped for TorusPlan {
    fn steps(&self) -> usize {
        three_phase_steps(self.grid)
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        push(out, three_phase(self.grid, Region::vec(0, self.n), Dim::Row, r, s), 0);
    }
}

impl Algorithm for Torus2d {
    fn id(&self) -> &'static str {
        TORUS_INFO.id
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        applicable_grid(p, m).map(|_| ())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let grid = Grid2::of(topo).expect("torus_2d runs only on a grid (applicable)");
        vec![stepped::program(TorusPlan { grid, n: p.elems }, rank as usize, topo.nics(rank as usize))]
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((torus_2d(p, m)?, EXACT))
    }

    /// Where its step recurrence gives none (a port would serve out of step order): the
    /// bounds of its steps whatever order the ports serve them in
    /// ([`crate::cost_model::lockstep_bounds`]).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = TorusPlan { grid: Grid2::of(m.topo)?, n: p.elems };
        Some(super::stepped_bounds(&plan, m.topo, m.cost_per_byte, p.elem_bytes))
    }

    /// Each element is added along its row (cols - 1 additions in a chain), then the row
    /// sums along its column (rows - 1 more): rows + cols - 2.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        grid_depth(p, topo)
    }
}

/// `rows + cols - 2` on the machine's grid (P - 1, which bounds it, without one).
fn grid_depth(p: &Problem, topo: &dyn Topology) -> usize {
    Grid2::of(topo).map_or(p.ranks.saturating_sub(1), |g| g.rows + g.cols - 2)
}

/// How `mesh_2d` sums a half along one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshRing {
    /// The survey's whole-buffer ring: `len - 1` steps of the whole half.
    Whole,
    /// Sony's three phases on each half: the halves of `torus_2d`, in both orientations.
    Scatter,
}

/// `mesh_2d`: see the module docs.
#[derive(Debug)]
pub struct Mesh2d {
    /// How each half is summed.
    pub ring: MeshRing,
}

/// The schedule of `mesh_2d` for one problem.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MeshPlan {
    pub grid: Grid2,
    pub n: usize,
    pub ring: MeshRing,
}

/// Elements of one scratch slot of `ring=whole`: the larger half.
fn slot_len(n: usize) -> usize {
    n.div_ceil(2)
}

impl Stepped for MeshPlan {
    fn windowed(&self) -> bool {
        true
    }

    fn steps(&self) -> usize {
        match self.ring {
            MeshRing::Whole => (self.grid.cols - 1) + (self.grid.rows - 1),
            MeshRing::Scatter => three_phase_steps(self.grid),
        }
    }

    fn plan(&self, r: usize, s: usize, out: &mut StepPlan) {
        let (g, n) = (self.grid, self.n);
        for half in 0..2u32 {
            // Half A (0) goes rows then columns, half B (1) columns then rows.
            let (first, second) = if half == 0 { (Dim::Row, Dim::Col) } else { (Dim::Col, Dim::Row) };
            let mine = block(n, 2, half as usize);
            if self.ring == MeshRing::Scatter {
                push(out, three_phase(g, mine, first, r, s), half);
                continue;
            }
            let first_steps = g.len(first) - 1;
            let (dim, k) = if s < first_steps { (first, s) } else { (second, s - first_steps) };
            let slot = |j: usize| Region::scratch(1 + half as u8, (j % 2) * slot_len(n), mine.len);
            let (next, prev) = g.ring(r, dim);
            // Forward what came in last step (at step 0 my own half: the sum so far).
            let src = if k == 0 { mine } else { slot(k - 1) };
            out.sends.push(Send { to: next, kind: half, src, reduce: false });
            out.recvs.push(Recv { from: prev, kind: half, dst: slot(k), action: Action::Copy });
            out.local.push((slot(k), mine));
        }
    }
}

impl Algorithm for Mesh2d {
    fn id(&self) -> &'static str {
        MESH_INFO.id
    }

    fn label(&self) -> String {
        match self.ring {
            MeshRing::Whole => MESH_INFO.id.into(),
            MeshRing::Scatter => format!("{}(ring=scatter)", MESH_INFO.id),
        }
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        applicable_grid(p, m)?;
        let fewest = (0..p.ranks).map(|r| m.topo.nics(r)).min().unwrap_or(0);
        if fewest < 2 {
            return Err(format!(
                "needs 2 NICs per rank: one half of the vector travels along rows while the other travels along \
                 columns, each on its own port; this machine has {fewest} (set topology.nics: 2)"
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let grid = Grid2::of(topo).expect("mesh_2d runs only on a grid (applicable)");
        vec![stepped::program(MeshPlan { grid, n: p.elems, ring: self.ring }, rank as usize, topo.nics(rank as usize))]
    }

    fn scratch(&self, p: &Problem) -> Vec<usize> {
        match self.ring {
            // Two slots of the larger half, for each half.
            MeshRing::Whole => vec![2 * slot_len(p.elems); 2],
            MeshRing::Scatter => Vec::new(),
        }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some((mesh_2d(p, m, self.ring)?, EXACT))
    }

    /// Where its step recurrence gives none (a port would serve out of step order): the
    /// bounds of its steps whatever order the ports serve them in
    /// ([`crate::cost_model::lockstep_bounds`]).
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = MeshPlan { grid: Grid2::of(m.topo)?, n: p.elems, ring: self.ring };
        Some(super::stepped_bounds(&plan, m.topo, m.cost_per_byte, p.elem_bytes))
    }

    /// A half's sum is built by cols - 1 additions in a chain along its first direction,
    /// then rows - 1 more along the other (either variant): rows + cols - 2.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        grid_depth(p, topo)
    }
}

// ---------------------------------------------------------------------------------------
// Closed forms (docs/model.md): the time in the ideal model, without the engine

/// The neighbour link of a grid (what its closed-form formulas are written in): the
/// topology's best link, its fewest NICs, and `c`.
fn neighbours(m: &Machine) -> Hockney {
    let (link, nics) = m.topo.best_link();
    Hockney { alpha: link.alpha, bandwidth: link.bandwidth, c: m.cost_per_byte, nics }
}

/// `torus_2d` (Sony's 2D-Torus) on the machine's `r x c` grid: the step recurrence
/// ([`lockstep`](crate::cost_model::lockstep)) of its `2(c-1) + 2(r-1)` ring steps, on the pair costs of the actual
/// neighbours (on a mesh, each row ring's closing pair is `c - 1` hops apart).
///
/// On a torus whose `r c` divides n every ring step is in lockstep and this is
/// [`torus_2d_formula`]:
///
/// ```text
/// (c-1) [T(S/c) + R(S/c)]  +  2(r-1) T(S/(rc)) + (r-1) R(S/(rc))  +  (c-1) T(S/c)
///  row reduce-scatter         column ring allreduce of the S/c shard   row allgather
/// ```
///
/// The survey ([`torus_2d_seed`], n = c ranks per group, m = r groups) writes
/// `2(n-1)[alpha + S/(nB)] + (n-1)(S/n)C + 2(m-1)[alpha + S/(mB)] + (m-1)(S/m)C`: its
/// column phase moves the whole vector S, as if the rows had not reduce-scattered it
/// first; the column rings carry only the shard of S/c bytes, so the survey overstates
/// the column phase's bandwidth and compute terms c-fold. `None` without a grid, or
/// where a port would serve messages out of step order (see [`lockstep`](crate::cost_model::lockstep)).
pub fn torus_2d(p: &Problem, m: &Machine) -> Option<f64> {
    let grid = crate::algos::Grid2::of(m.topo)?;
    let plan = crate::algos::TorusPlan { grid, n: p.elems };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// [`torus_2d`] in lockstep: each ring step costs its largest block,
/// `c1 = ceil(n/c) e` along rows and `c2 = ceil(ceil(n/c)/r) e` along columns, on the
/// neighbour link. Exact on a torus when `r c` divides n; elsewhere an estimate.
pub fn torus_2d_formula(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    let shard = p.elems.div_ceil(cols);
    let (c1, c2) = (p.b(shard), p.b(shard.div_ceil(rows)));
    let (rs, cs) = ((cols - 1) as f64, (rows - 1) as f64);
    rs * (h.t(c1) + h.r(c1)) + 2.0 * cs * h.t(c2) + cs * h.r(c2) + rs * h.t(c1)
}

/// The survey's 2D-Torus formula, with `n = cols` ranks per group and `m = rows` groups:
/// `2(n-1)[alpha + S/(nB)] + (n-1)(S/n)C + 2(m-1)[alpha + S/(mB)] + (m-1)(S/m)C`.
pub fn torus_2d_seed(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    let s = p.bytes();
    let ring = |k: usize| {
        let k = k as f64;
        2.0 * (k - 1.0) * h.t(s / k) + (k - 1.0) * h.r(s / k)
    };
    ring(cols) + ring(rows)
}

/// `mesh_2d` (Google's 2D-Mesh) on the machine's `r x c` grid: the step recurrence.
///
/// With `ring = scatter` each half runs [`torus_2d`]'s steps (half A rows first, half B
/// columns first), both halves' messages of a step going out together on two NICs.
///
/// With `ring = whole` (the survey's) there are `r + c - 2` steps; in each, both halves
/// (`ceil(n/2)` and `floor(n/2)` elements) go one hop along their rings at once on two
/// NICs, land in scratch, and are added on the one compute unit. On a torus every step
/// is alike ([`mesh_2d_formula`]):
///
/// ```text
/// (r + c - 2) [T(ceil(n/2) e) + S C]
/// ```
///
/// The survey writes `2 (m + n - 2)(alpha + S/B + S C)`: it sends the whole vector S
/// where each half carries S/2, and counts `m + n - 2` steps twice (once per phase)
/// where each half walks its row ring and its column ring once, `r + c - 2` steps in
/// all, the two halves side by side. Its per-step `S C` is right: both halves' additions
/// fall on one compute unit. `None` without a grid or where a port would serve
/// messages out of step order.
pub fn mesh_2d(p: &Problem, m: &Machine, ring: crate::algos::MeshRing) -> Option<f64> {
    let grid = crate::algos::Grid2::of(m.topo)?;
    let plan = crate::algos::MeshPlan { grid, n: p.elems, ring };
    crate::algos::stepped_time(&plan, m.topo, m.cost_per_byte, p.elem_bytes)
}

/// [`mesh_2d`] with `ring = whole` on a torus: `(r + c - 2) [T(ceil(n/2) e) + S C]`.
pub fn mesh_2d_formula(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    (rows + cols - 2) as f64 * (h.t(p.b(p.elems.div_ceil(2))) + h.r(p.bytes()))
}

/// The survey's 2D-Mesh formula, `2 (m + n - 2)(alpha + S/B + S C)` (m rows, n columns).
pub fn mesh_2d_seed(p: &Problem, m: &Machine, rows: usize, cols: usize) -> f64 {
    let h = neighbours(m);
    2.0 * (rows + cols - 2) as f64 * (h.t(p.bytes()) + h.r(p.bytes()))
}
