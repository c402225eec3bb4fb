//! The algorithms: one file per family, each a per-rank program of sends, receives
//! and reductions that reads like the textbook.
//!
//! An algorithm never sees time or ports; it states, for every rank, what moves where
//! and what waits for what. Its cost in the ideal model, its closed form, sits beside it
//! in its file, read off the same schedule (listed in [`forms`]); what they share is in
//! [`crate::cost_model`].

mod barrier;
mod bcube;
mod blueconnect;
mod butterfly;
mod chain;
mod direct;
mod double_binary_tree;
mod halving_doubling;
mod hierarchical_ring;
mod kary_tree;
mod naive;
pub(crate) mod nccl_ring;
mod nccl_streams;
mod nccl_tree;
pub(crate) use nccl_tree::describe as nccl_tree_describe;
mod neighbor_exchange;
pub(crate) mod nvls;
mod nvls_halves;
pub(crate) mod nvls_tree;
mod params;
pub(crate) mod pat;
mod ring;
mod ring_chunked;
mod ring_gloo;
mod scatter_allgather;
mod scatter_gather;
mod star;
mod stepped;
mod torus;
mod tree;

pub(crate) use bcube::BcubePlan;
pub(crate) use blueconnect::plan as bc_plan;
pub(crate) use direct::DirectPlan;
pub(crate) use double_binary_tree::DEFAULT_CHUNK as DBT_DEFAULT_CHUNK;
pub(crate) use double_binary_tree::plan as dbt_plan;
pub use hierarchical_ring::GroupMethod;
pub(crate) use hierarchical_ring::plan as hr_plan;
pub use params::{ParamError, Params};
pub use ring::RingSegmented;
pub(crate) use ring_chunked::chunk_elems as ring_chunk_elems;
pub(crate) use stepped::{bounds as stepped_bounds, time as stepped_time};
pub use torus::MeshRing;
pub(crate) use torus::{Grid2, MeshPlan, TorusPlan};
pub(crate) use tree::binomial as binomial_shape;

pub use crate::cost_model::Machine;
use crate::cost_model::loggp::LogGP;

use crate::collective::Collective;
/// The problem and the even blocks belong to the engine's layer; these paths still name them.
pub use crate::sim::Problem;
pub use crate::sim::op::{Blocks, block};
use crate::sim::op::{Program, Rank};
use crate::topology::Topology;

/// Every algorithm's closed form, each defined beside its algorithm: the formulas and
/// recurrences of docs/model.md in one list, for tests, `explain` and readers.
pub mod forms {
    pub use super::barrier::{bruck_barrier, recursive_doubling_barrier};
    pub use super::bcube::bcube;
    pub use super::blueconnect::{blueconnect, blueconnect_formula};
    pub use super::butterfly::{butterfly, butterfly_fold_bound, butterfly_loggp, fold_bounds};
    pub use super::chain::{chain, chain_bcast, chain_reduce};
    pub use super::direct::{direct, direct_bounds, direct_formula, uneven_too_large as direct_uneven_too_large};
    pub use super::double_binary_tree::double_binary_tree;
    pub use super::halving_doubling::halving_doubling;
    pub use super::hierarchical_ring::{hierarchical_ring, hierarchical_ring_formula, hierarchical_ring_steps};
    pub use super::kary_tree::{in_order_reduce, tree_bcast, tree_reduce};
    pub use super::naive::naive;
    pub use super::nccl_ring::ring_symmetric as nccl_ring_symmetric;
    pub use super::neighbor_exchange::neighbor_exchange;
    pub use super::nvls::nvls_steady as nvls;
    pub use super::ring::{bidirectional_ring, ring, ring_loggp, ring_phase, ring_pipelined, ring_segmented};
    pub use super::ring_chunked::ring_chunked;
    pub use super::ring_gloo::ring_gloo;
    pub use super::scatter_gather::{butterfly_reduce_scatter, direct_phase, direct_phase_bounds, halving_phase};
    pub use super::star::{linear_reduce, one_to_all, star};
    pub use super::torus::{mesh_2d, mesh_2d_formula, mesh_2d_seed, torus_2d, torus_2d_formula, torus_2d_seed};
    pub use super::tree::{
        binomial_bcast, binomial_bcast_loggp, binomial_reduce, binomial_reduce_loggp, binomial_tree,
        binomial_tree_loggp, binomial_tree_pipelined,
    };
}

/// An allreduce algorithm.
pub trait Algorithm: Send + Sync + std::fmt::Debug {
    /// Stable id (`allreduce-sim list`, docs/scenario.md).
    fn id(&self) -> &'static str;
    /// The id with any non-default parameters, as shown in reports.
    fn label(&self) -> String {
        self.id().to_string()
    }
    /// Why it cannot run on this problem and machine, if it cannot.
    fn applicable(&self, _p: &Problem, _m: &Machine) -> Result<(), String> {
        Ok(())
    }
    /// Rank `rank`'s program on `topo`: one or more concurrent streams of operations
    /// (each stream blocks on its own waits; all share the rank's ports and compute).
    /// Flat algorithms ignore `topo`; topology-aware ones read its shape
    /// ([`Topology::levels`], [`Topology::grid`]) and copy what they need into the program,
    /// which borrows only `self`. Called only where [`Algorithm::applicable`] said yes.
    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>>;
    /// Elements of each scratch buffer every rank needs (buffer ids 1, 2, ...).
    fn scratch(&self, _p: &Problem) -> Vec<usize> {
        Vec::new()
    }
    /// Every rank's program of one run on `p` and `topo`, with what the ranks' programs
    /// share built once: the per-run setup step. The runner calls it once per point and
    /// hands the result to the engine (and to the reruns of `repeat:`), so that a plan
    /// that costs O(P) to build (double_binary_tree's two trees) is not built once per
    /// rank. Without an override each rank's program is [`Algorithm::program`].
    fn prepare<'a>(&'a self, _p: &Problem, _topo: &dyn Topology) -> Box<dyn crate::sim::Programs + 'a> {
        Box::new(EachRank(self))
    }
    /// Time in the ideal model, and the relative tolerance it is exact to
    /// (`None` where this machine has no closed form for it).
    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)>;
    /// Time under the LogGP model with parameters `l` (docs/loggp.md), and the relative
    /// tolerance it is exact to, read off the same schedule as [`Algorithm::closed_form`]
    /// by LogGP's rules (`None` where none is known: most algorithms).
    fn closed_form_loggp(&self, _p: &Problem, _m: &Machine, _l: &LogGP) -> Option<(f64, f64)> {
        None
    }
    /// Where [`Algorithm::closed_form`] is `None` because the ideal model's port
    /// arbitration makes the time depend on the order of events (docs/model.md, 'The
    /// bounds'): a lower and an upper bound the simulated time must fall between.
    fn closed_form_bounds(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }
    /// The bounds a point without an exact form is held to: the algorithm's own
    /// ([`Algorithm::closed_form_bounds`]), else those read off its programs
    /// ([`crate::cost_model::program_bounds`]), except for NCCL's ring and tree
    /// ([`OWN_BOUNDS`]), whose forms and bounds are their own (docs/nccl.md).
    fn bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        self.closed_form_bounds(p, m).or_else(|| {
            if OWN_BOUNDS.contains(&self.id()) {
                return None;
            }
            crate::cost_model::program_bounds(&*self.prepare(p, m.topo), p, m.topo, m.cost_per_byte)
        })
    }
    /// The most rounded additions any result element goes through in sequence:
    /// the height of its summation tree, which sets the error bound.
    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize;
    /// Messages the whole run on `p` and `topo` sends, where a closed count is cheap (the
    /// estimates, `validate`); `None` leaves it to [`messages_of`], which walks the
    /// programs. `topo` is the machine the run's programs are built on: a count that
    /// depends on its shape (`nvls_tree`'s heads, one per NIC) reads it as
    /// [`Algorithm::program`] does. tests/messages.rs holds every algorithm's count to
    /// what the engine sends.
    fn messages(&self, _p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        None
    }
    /// Steps inside a node of the pipeline NCCL's kernel runs for this algorithm, each
    /// of which costs a call the machine's `intra.step_latency` once, before its first
    /// operation (docs/gpu-clusters.md, "Step latency"): NCCL's ring and tree; 0 for
    /// the others.
    fn start_steps(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        0
    }
    /// Whether it needs switch agents ([`crate::sim::Programs::switch_agents`]): then
    /// [`Algorithm::program`] is asked for ranks `P..2P` too, the NVSwitch's share of
    /// the work for each GPU.
    fn switch_agents(&self) -> bool {
        false
    }
}

/// Every algorithm is a set of per-rank programs the engine runs, each rank's built on
/// its own ([`Algorithm::program`]); a run of many ranks goes through
/// [`Algorithm::prepare`] instead.
impl<A: Algorithm + ?Sized> crate::sim::Programs for A {
    fn rank_program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        self.program(rank, p, topo)
    }
    fn scratch_elems(&self, p: &Problem) -> Vec<usize> {
        self.scratch(p)
    }
    fn switch_agents(&self) -> bool {
        Algorithm::switch_agents(self)
    }
}

/// The default [`Algorithm::prepare`]: nothing shared, each rank's program on its own.
struct EachRank<'a, A: ?Sized>(&'a A);

impl<A: Algorithm + ?Sized> crate::sim::Programs for EachRank<'_, A> {
    fn rank_program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        self.0.program(rank, p, topo)
    }
    fn scratch_elems(&self, p: &Problem) -> Vec<usize> {
        self.0.scratch(p)
    }
    fn switch_agents(&self) -> bool {
        Algorithm::switch_agents(self.0)
    }
}

/// Messages `algo` sends on `p` and `topo`: its closed count, else its programs walked
/// ([`walk_messages`]). Call it only where [`Algorithm::applicable`] said yes.
pub fn messages_of(algo: &dyn Algorithm, p: &Problem, topo: &dyn Topology) -> u64 {
    algo.messages(p, topo).unwrap_or_else(|| walk_messages(algo, p, topo))
}

/// Messages `algo` sends on `p` and `topo`, its programs walked ([`Algorithm::prepare`]d
/// once) and their sends counted: exact by construction but a pass over every
/// operation, what a closed count ([`Algorithm::messages`]) is checked against. The
/// programs are the one source; call it only where [`Algorithm::applicable`] said yes.
pub fn walk_messages(algo: &dyn Algorithm, p: &Problem, topo: &dyn Topology) -> u64 {
    walk_messages_past(algo, p, topo, u64::MAX).0
}

/// Messages `algo` sends on `p` and `topo`, its programs walked rank by rank as
/// [`walk_messages`] does, but only until the count passes `limit`: the count and whether
/// it is whole. A point far past a limit is known so after a rank or two, not after a
/// pass over every operation (`double_binary_tree` of 4-byte chunks at 256 ranks and
/// 4 MiB: 41 s for 534,773,760 messages).
pub fn walk_messages_past(algo: &dyn Algorithm, p: &Problem, topo: &dyn Topology, limit: u64) -> (u64, bool) {
    let run = algo.prepare(p, topo);
    // An NVSwitch's agents (ranks P..2P) send too: the loads and stores of NVLS.
    let ranks = if algo.switch_agents() { 2 * p.ranks } else { p.ranks };
    let mut count = 0u64;
    for r in 0..ranks {
        let streams = run.rank_program(r as Rank, *p, topo);
        let sends = streams.into_iter().flatten().filter(|op| matches!(op, crate::sim::op::Op::Send { .. })).count();
        count = count.saturating_add(sends as u64);
        if count > limit && r + 1 < ranks {
            return (count, false);
        }
    }
    (count, true)
}

/// How many algorithms [`build_for`] has built in this process: the runner builds each
/// point's once (tests/prepare.rs counts them).
pub fn builds() -> u64 {
    BUILDS.load(std::sync::atomic::Ordering::Relaxed)
}

static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The ids of NCCL's algorithms as NCCL runs them (docs/nccl.md), which `auto` leaves
/// out of its candidates.
pub const NCCL_IDS: &[&str] = &["nccl_ring", "nccl_tree", "nvls", "nvls_tree", "pat"];

/// The algorithms whose points without an exact form get no bounds read off their
/// programs ([`Algorithm::bounds`]): NCCL's ring and tree, whose schedules have their
/// own recurrences and bounds (docs/nccl.md).
pub const OWN_BOUNDS: &[&str] = &["nccl_ring", "nccl_tree"];

/// The tolerance of an exact closed form: only floating-point summation order differs.
pub const EXACT: f64 = 1e-9;

/// What `list` shows of an algorithm, and how to build one.
pub struct AlgoInfo {
    /// Stable id.
    pub id: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Where it comes from: the documents of docs/sources.md, papers.
    pub source: &'static str,
    /// What it needs of P, n and the machine.
    pub requires: &'static str,
    /// Its time in the ideal model, as in the docs.
    pub closed_form: &'static str,
    /// Its parameters: `name=default: meaning`.
    pub params: &'static [&'static str],
    /// Build it from parameters (unknown or malformed parameters are errors).
    pub build: fn(&mut Params) -> Result<Box<dyn Algorithm>, ParamError>,
}

/// Every allreduce algorithm, in the order `list` shows them.
pub fn registry() -> &'static [AlgoInfo] {
    static REGISTRY: &[AlgoInfo] = &[
        star::INFO,
        chain::INFO,
        tree::INFO,
        butterfly::INFO,
        ring::INFO,
        ring::SEGMENTED_INFO,
        ring::BIDIRECTIONAL_INFO,
        halving_doubling::INFO,
        hierarchical_ring::INFO,
        blueconnect::INFO,
        torus::TORUS_INFO,
        torus::MESH_INFO,
        double_binary_tree::INFO,
        naive::INFO,
        ring_gloo::INFO,
        ring_chunked::INFO,
        bcube::INFO,
        direct::INFO,
        nccl_ring::INFO,
        nccl_tree::INFO,
        nvls::INFO,
        nvls_tree::INFO,
    ];
    REGISTRY
}

/// Every algorithm of collective `c`, in the order `list` shows them. An id names one
/// algorithm per collective: `ring` is a ring allreduce, a ring reduce-scatter and a
/// ring allgather, three entries.
pub fn registry_of(c: Collective) -> &'static [AlgoInfo] {
    static REDUCE_SCATTER: &[AlgoInfo] = &[
        ring::RS_INFO,
        scatter_gather::RS_HALVING_INFO,
        scatter_gather::RS_DIRECT_INFO,
        scatter_gather::RS_BUTTERFLY_INFO,
        scatter_gather::RS_RECURSIVE_HALVING_INFO,
        pat::RS_INFO,
        nccl_ring::RS_INFO,
        nvls_halves::RS_INFO,
    ];
    static ALLGATHER: &[AlgoInfo] = &[
        ring::AG_INFO,
        scatter_gather::AG_DOUBLING_INFO,
        scatter_gather::AG_DIRECT_INFO,
        neighbor_exchange::INFO,
        pat::AG_INFO,
        nccl_ring::AG_INFO,
        nvls_halves::AG_INFO,
    ];
    static BROADCAST: &[AlgoInfo] = &[
        star::ONE_TO_ALL_INFO,
        tree::BCAST_INFO,
        chain::BCAST_INFO,
        kary_tree::BINARY_BCAST_INFO,
        kary_tree::KNOMIAL_BCAST_INFO,
        scatter_allgather::INFO,
    ];
    static REDUCE: &[AlgoInfo] = &[
        tree::REDUCE_INFO,
        chain::REDUCE_INFO,
        star::ALL_TO_ONE_INFO,
        kary_tree::BINARY_REDUCE_INFO,
        kary_tree::IN_ORDER_REDUCE_INFO,
    ];
    static BARRIER: &[AlgoInfo] =
        &[barrier::ALL_TO_ALL_INFO, barrier::ALL_TO_ONE_INFO, barrier::RECURSIVE_DOUBLING_INFO, barrier::BRUCK_INFO];
    match c {
        Collective::Allreduce => registry(),
        Collective::ReduceScatter => REDUCE_SCATTER,
        Collective::Allgather => ALLGATHER,
        Collective::Broadcast => BROADCAST,
        Collective::Reduce => REDUCE,
        Collective::Barrier => BARRIER,
    }
}

/// Look an allreduce algorithm up by id.
pub fn find(id: &str) -> Option<&'static AlgoInfo> {
    find_in(Collective::Allreduce, id)
}

/// Look algorithm `id` of collective `c` up.
pub fn find_in(c: Collective, id: &str) -> Option<&'static AlgoInfo> {
    registry_of(c).iter().find(|a| a.id == id)
}

/// Build allreduce algorithm `id` with `params`; every parameter must be used.
pub fn build(id: &str, params: Params) -> Result<Box<dyn Algorithm>, ParamError> {
    build_for(Collective::Allreduce, id, params)
}

/// Build algorithm `id` of collective `c` with `params`; every parameter must be used.
/// An id unknown for `c` is an error naming the ids `c` has (and the collectives that
/// do have this id, if any).
pub fn build_for(c: Collective, id: &str, mut params: Params) -> Result<Box<dyn Algorithm>, ParamError> {
    let info = find_in(c, id).ok_or_else(|| {
        let ids: Vec<_> = registry_of(c).iter().map(|a| a.id).collect();
        let elsewhere: Vec<_> =
            Collective::ALL.into_iter().filter(|&o| o != c && find_in(o, id).is_some()).map(Collective::name).collect();
        let hint = if elsewhere.is_empty() {
            String::new()
        } else {
            format!(" ('{id}' is an algorithm of {}, not of {c})", elsewhere.join(", "))
        };
        ParamError::new(None, format!("unknown algorithm '{id}' for {c}{hint}; allowed: {}", ids.join(", ")))
    })?;
    BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let algo = (info.build)(&mut params)?;
    params.finish(info)?;
    Ok(algo)
}

/// `ceil(log2 p)`, with `clog2(1) == 0`.
pub fn clog2(p: usize) -> u32 {
    if p <= 1 { 0 } else { usize::BITS - (p - 1).leading_zeros() }
}

/// The largest power of two not above `p` (`p >= 1`).
pub fn pow2_floor(p: usize) -> usize {
    1 << (usize::BITS - 1 - p.leading_zeros())
}
