//! What a point will cost before it runs: its memory and its work, from the scenario
//! alone (nothing is simulated). `run` refuses a point whose memory would not fit
//! ([`check_memory`]) before allocating anything; `validate` prints every point's
//! figures.
//!
//! The figures are upper estimates, not measurements:
//!
//! - **data**: `data.mode: full` holds every rank's vector, the scratch buffers the
//!   algorithm declares, at most one vector per rank of messages in flight, and the
//!   exact reference (24 bytes per element for floats, 8 for integers); `sample` the
//!   same for the about 3,000 tracked elements of each vector (16 bytes each in a
//!   sampled buffer, its index beside its value); `off` nothing. A full point whose log
//!   of data operations pays ([`Planned::log_pays`]), of an algorithm without scratch buffers
//!   (whose every operation keeps an element at its index), holds no vector: it holds the log, the index
//!   of the log's entries by tile, and on each thread one tile of every rank's buffers
//!   and its reference ([`crate::sim::data::verify_log`]), and the check's plan (an
//!   allgather's every block on every rank: P min(P, n) ranges); that is what it is counted
//!   at. With data on, in any mode, each message in flight ([`Planned::in_flight`]) also
//!   holds its copy's record and its values' allocation
//!   ([`DATA_BYTES_PER_MESSAGE_IN_FLIGHT`]). `auto` is `full` while whole vectors would fit `data.memory_budget`, else
//!   `sample` ([`Planned::data_mode`]: the choice is the one it always was); a point whose data
//!   would not fit the budget is refused ([`check_budget`]);
//! - **engine**: [`ENGINE_BYTES_PER_RANK`] per rank (programs, queues, counters) and as
//!   much per switch agent, `nvls_tree`'s many streams (each its record and its
//!   program), [`ENGINE_BYTES_PER_MESSAGE_IN_FLIGHT`] for each message the engine may hold at once
//!   where many are ([`Planned::in_flight`]: the P (P - 1) of an exchange that issues a
//!   step's sends at once, `pat`'s up to P^2 / 2, its schedule's own bound, `nvls_tree`'s
//!   window of loops on every channel, P a piece
//!   of a vector cut by `segments` or `double_binary_tree`'s `chunk`), or, where more,
//!   what the closed form's check holds after the engine is gone, where an exchange's
//!   step recurrence books every message ([`Planned::closed_form_bytes`]); and on
//!   a `custom` or `graph` machine its route cache at the most it can hold
//!   ([`route_cache_bytes`]);
//! - **timeline**: a point that records its timeline (at most
//!   [`DETAIL_MAX_RANKS`] ranks, or the only point of
//!   a run, and not certain to outgrow it: [`timeline_overflows`]) holds two port
//!   tables per rank and up to [`MAX_INTERVALS`] intervals;
//! - **work**: messages from the algorithm's step count (exact where the algorithm's
//!   count is known, else a stated upper bound), and about [`EVENTS_PER_MESSAGE`] events
//!   per message;
//! - **selectors**: a selector's point simulates every algorithm of the collective (its
//!   row says how far its pick is from their best) and its pick where that is none of
//!   them (NCCL's own for `nccl_model`), each as a point of its own, without a timeline,
//!   one at a time on a thread: the work of all of them and the memory of the largest
//!   ([`estimate`], [`crate::select::simulated_specs`]).

use std::sync::OnceLock;

use crate::algos::nvls_tree::{EngineLoad, NvlsTree};
use crate::algos::{Algorithm, Machine, Params, Problem};
use crate::cost_model::{
    BOUNDS_BYTES_PER_MESSAGE_IN_FLIGHT, BYTES_PER_BOOKING, BYTES_PER_PLANNED_MESSAGE, BYTES_PER_STEP_MESSAGE,
    BYTES_PER_SWEPT_MESSAGE, SWEEP_LIMIT,
};
use crate::results::{MAX_LISTED_LINKS, Point};
use crate::scenario::AlgoSpec;
use crate::scenario::{DataMode, Scenario};
use crate::sim::data::SAMPLE_GRID;
use crate::sim::engine::STREAM_BYTES;
use crate::timeline::{DETAIL_MAX_RANKS, MAX_INTERVALS};
use crate::topology::spec::TopologySpec;
use crate::topology::{MAX_CACHED_HOPS, MAX_CACHED_ROUTES, Topology};
use crate::units::fmt_bytes;

/// What a point that cannot run holds ([`Planned::runs`]): its machine, built to ask
/// (the machines' tables are a node's, not a rank's), and its row with the reason (1.5 KB
/// for `bcube` n/a on a torus of 192 ranks).
pub const NOT_RUN_BYTES: u64 = 64 << 10;

/// Engine state per rank, bytes: its program, port and message queues, counters.
pub const ENGINE_BYTES_PER_RANK: u64 = 1024;
/// Engine state per message in flight, bytes, where many are (an exchange's P (P - 1)):
/// its slot (72 bytes) and list links (20), its place in the pair index (4 or 8), with
/// room for the slab's growth (a vector doubles, and while it grows holds both copies).
pub const ENGINE_BYTES_PER_MESSAGE_IN_FLIGHT: u64 = 160;
/// Data plane state per message in flight, bytes, where many are (see
/// [`ENGINE_BYTES_PER_MESSAGE_IN_FLIGHT`]): the record of its values' copy in the pool
/// (a [`crate::sim::data::Payload`]), the copy's count of readers and the slot's index of
/// it (12), and the allocation of its values at its least (32: the values themselves are
/// in the vector a rank of messages in flight the data plane counts). A message of the
/// same unchanged region as another shares its copy, so this is the most.
pub const DATA_BYTES_PER_MESSAGE_IN_FLIGHT: u64 = std::mem::size_of::<crate::sim::data::Payload>() as u64 + 12 + 32;
/// Engine events per message: its start, its delivery and the reduction it feeds.
pub const EVENTS_PER_MESSAGE: u64 = 3;
/// Bytes per recorded timeline interval.
const INTERVAL_BYTES: u64 = 64;

/// Bytes of one cached route besides its hops: its key, its cost, its slice's pointer
/// and length, the hash table's slack and the allocation's own.
const ROUTE_ENTRY_BYTES: u64 = 64;

/// The most a `custom` or `graph` machine's route cache holds on a run of `ranks` ranks
/// sending `messages` messages: a route per pair that talks (at most one per message,
/// per ordered pair and [`MAX_CACHED_ROUTES`]), each at most the nodes less one hops
/// long, the hops at most [`MAX_CACHED_HOPS`] (4 bytes each); twice that under the flow
/// model, which keeps its own. 0 on the other machines, whose routes are computed, not
/// cached (the flow model's cache of their few-hop routes is the engine's per-rank share).
pub fn route_cache_bytes(s: &Scenario, ranks: usize, messages: u64) -> u64 {
    let nodes = match &s.topology {
        TopologySpec::Custom { nodes, .. } => nodes.len(),
        TopologySpec::Graph { nodes, .. } => nodes.len(),
        _ => return 0,
    } as u64;
    let p = ranks as u64;
    let routes = messages.min(p.saturating_mul(p.saturating_sub(1))).min(MAX_CACHED_ROUTES as u64);
    let hops = routes.saturating_mul(nodes.saturating_sub(1)).min(MAX_CACHED_HOPS as u64);
    let one = routes * ROUTE_ENTRY_BYTES + hops * 4;
    if s.network.is_flow() { 2 * one } else { one }
}

/// One point's estimated cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The data plane (vectors, scratch, reference), bytes.
    pub data_bytes: u64,
    /// The engine's per-rank state, bytes.
    pub engine_bytes: u64,
    /// The timeline recorder, bytes (0 when the point does not record).
    pub timeline_bytes: u64,
    /// Messages the point sends (an upper bound where `messages_exact` is false).
    pub messages: u64,
    /// Whether `messages` is the algorithm's exact count.
    pub messages_exact: bool,
    /// Engine events, about.
    pub events: u64,
}

impl Estimate {
    /// Everything, bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.data_bytes.saturating_add(self.engine_bytes).saturating_add(self.timeline_bytes)
    }
}

/// Points of more ranks than this count their messages only where the algorithm has a
/// closed count: walking every rank's program is a pass over every operation.
const WALK_MAX_RANKS: usize = 4096;

/// A point with its algorithm built once ([`crate::algos::build_for`]): every estimate
/// of the point reads it, and the runner decides from it how the point runs (its data
/// plane, whether it logs, whether it records its timeline) and then runs it. This is
/// the one place a point's algorithm is built and its policy decided.
pub struct Planned<'s> {
    s: &'s Scenario,
    /// The point.
    pub pt: Point,
    /// Whether it is the only point of its run (it then records its timeline whatever
    /// its rank count).
    pub single: bool,
    /// The algorithm, or why it cannot be built (a selector's point has none of its own).
    algo: Result<Box<dyn Algorithm>, String>,
    /// Its messages and whether the count is exact, found on first use.
    messages: OnceLock<(u64, bool)>,
    /// Its estimate ([`Planned::estimate`]), found on first use: `run` asks it of every
    /// point against the memory limit and again for the largest reservation, and a
    /// selector's walks its candidates.
    estimate: OnceLock<Estimate>,
    /// `nvls_tree`'s streams and messages in flight ([`Planned::nvls_tree_load`]), found
    /// on first use.
    load: OnceLock<Option<EngineLoad>>,
    /// Whether the point runs at all ([`Planned::runs`]), found on first use.
    runs: OnceLock<bool>,
}

impl<'s> Planned<'s> {
    /// Point `pt` of `s` with its algorithm built; `single` as [`Planned::single`].
    pub fn new(s: &'s Scenario, pt: &Point, single: bool) -> Self {
        let spec = &s.algorithms[pt.algo];
        let algo = if crate::select::is_selector(&spec.name) {
            Err(format!("{} is a selector, not an algorithm", spec.name))
        } else {
            crate::algos::build_for(spec.collective, &spec.name, Params::new(spec.params.clone()))
                .map_err(|e| format!("cannot build {}: {e}", spec.name))
        };
        Planned {
            s,
            pt: pt.clone(),
            single,
            algo,
            messages: OnceLock::new(),
            estimate: OnceLock::new(),
            load: OnceLock::new(),
            runs: OnceLock::new(),
        }
    }

    /// Whether the point runs at all: its algorithm built, its machine built for it, and
    /// the algorithm applicable there. A point that does not (the report's `n/a`) holds
    /// next to nothing, and is estimated so: counted as if it ran, `mesh_2d` on a fully
    /// connected machine refused a run for a data plane of 4.38 GiB, and `tune`, which
    /// runs every algorithm, under any `ulimit -v` below 340 MB where it holds 24 MB. A
    /// selector's point runs its candidates, each of which is asked for itself.
    pub fn runs(&self) -> bool {
        *self.runs.get_or_init(|| {
            let (s, pt) = (self.s, &self.pt);
            let spec = &s.algorithms[pt.algo];
            let Ok(algo) = self.algo() else { return crate::select::is_selector(&spec.name) };
            let Ok(elems) = usize::try_from(self.elems()) else { return true };
            let bytes = if spec.collective.has_data() { pt.bytes } else { 0 };
            let Ok((_, topo)) = point_machine(s, spec, pt.ranks, bytes) else { return false };
            let prob = Problem { ranks: pt.ranks, elems, elem_bytes: s.data.dtype.bytes() };
            algo.applicable(&prob, &Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte }).is_ok()
        })
    }

    /// The scenario the point belongs to.
    pub fn scenario(&self) -> &'s Scenario {
        self.s
    }

    /// The algorithm, or why it could not be built.
    pub fn algo(&self) -> Result<&dyn Algorithm, &str> {
        self.algo.as_deref().map_err(String::as_str)
    }

    /// The algorithm, handed over to run it.
    pub fn into_algo(self) -> Result<Box<dyn Algorithm>, String> {
        self.algo
    }

    /// Elements per rank.
    fn elems(&self) -> u64 {
        self.pt.bytes / (self.s.data.dtype.bytes() as u64).max(1)
    }

    /// Messages of the point's algorithm, and whether that is its exact count: the
    /// algorithm's own ([`crate::algos::messages_of`]), the one source the engine is
    /// tested against. Where it cannot be built or run here, or has no closed count
    /// beyond 4,096 ranks (a walk of every operation costs too much there), `4 P (P-1)`,
    /// not claimed exact.
    pub fn messages(&self) -> (u64, bool) {
        *self.messages.get_or_init(|| self.count_messages())
    }

    fn count_messages(&self) -> (u64, bool) {
        let (s, pt) = (self.s, &self.pt);
        let p = pt.ranks as u64;
        let bound = (p.saturating_mul(p.saturating_sub(1)).saturating_mul(4).max(4), false);
        let Ok(algo) = self.algo() else { return bound };
        let Ok(elems) = usize::try_from(self.elems()) else { return bound };
        let prob = Problem { ranks: pt.ranks, elems, elem_bytes: s.data.dtype.bytes() };
        let spec = &s.algorithms[pt.algo];
        let bytes = if spec.collective.has_data() { pt.bytes } else { 0 };
        let Ok((_, topo)) = point_machine(s, spec, pt.ranks, bytes) else { return bound };
        if let Some(m) = algo.messages(&prob, topo.as_ref()) {
            return (m, true);
        }
        if algo.applicable(&prob, &Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte }).is_err() {
            return bound;
        }
        if let Some(m) = schedule_messages(spec, &prob, topo.as_ref()) {
            return (m, true);
        }
        if pt.ranks > WALK_MAX_RANKS {
            return bound;
        }
        (crate::algos::messages_of(algo, &prob, topo.as_ref()), true)
    }

    /// The links the report would list of this point under the flow model, for what it
    /// reserves ([`report_bytes`]); none without the flow model, or where the point's
    /// machine cannot be built or the point is not applicable (it runs nothing). At most
    /// [`DETAIL_MAX_RANKS`] ranks a point lists every link it uses: the pairs its programs
    /// send between are walked and their routes joined, so a ring on a fully connected
    /// machine of 64 ranks reserves for its 64 links, not the machine's 4,032
    /// ([`links_of`]). A selector's point lists its pick's: the pick where it is known
    /// before the run, else the most any candidate uses ([`crate::select::candidate_specs`]).
    pub fn links(&self) -> ListedLinks {
        let (s, pt) = (self.s, &self.pt);
        if !s.network.is_flow() {
            return ListedLinks::default();
        }
        let spec = &s.algorithms[pt.algo];
        match self.algo() {
            Ok(algo) => links_of(s, spec, algo, pt, Some(self.messages())),
            Err(_) if crate::select::is_selector(&spec.name) => crate::select::candidate_specs(s, pt)
                .iter()
                .filter_map(|c| {
                    let algo = crate::algos::build_for(c.collective, &c.name, Params::new(c.params.clone())).ok()?;
                    Some(links_of(s, c, algo.as_ref(), pt, None))
                })
                .fold(ListedLinks::default(), ListedLinks::max),
            Err(_) => ListedLinks::default(),
        }
    }

    /// Whether the point's timeline would certainly outgrow [`MAX_INTERVALS`]: the
    /// algorithm's exact message count alone (or where it has none, the least any
    /// algorithm sends there) is above it. Such a recording would be
    /// dropped with everything derived from it, so the runner does not make it: the report
    /// is the same, without the recorder's cost per message and its two port tables per
    /// rank.
    pub fn timeline_overflows(&self) -> bool {
        self.messages_at_least() > MAX_INTERVALS as u64
    }

    /// Messages the point sends at the least: its exact count where known, else P - 1
    /// (with anything to move, or for a barrier, every rank but one must send to another
    /// or hear from one: the reduce-scatter's first block needs every other rank's
    /// share, the allgather's every other rank its copy, and so on), which is all
    /// beyond the walk's rank limit where an algorithm has no count of its own.
    pub fn messages_at_least(&self) -> u64 {
        let (messages, exact) = self.messages();
        if exact {
            return messages;
        }
        let nothing = self.s.algorithms[self.pt.algo].collective.has_data() && self.elems() == 0;
        if nothing { 0 } else { self.pt.ranks.saturating_sub(1) as u64 }
    }

    /// Whether the point records its timeline (or tracks its critical path): at most
    /// [`DETAIL_MAX_RANKS`] ranks or the only point of its run, and not certain to
    /// outgrow it. The estimate counts its memory; the runner runs it so.
    pub fn records(&self) -> bool {
        (self.single || self.pt.ranks <= DETAIL_MAX_RANKS) && !self.timeline_overflows()
    }

    /// The data plane's bytes in `mode` (not `auto`): for `full`, the tiled replay's
    /// where the log pays ([`Planned::log_pays`]), else whole vectors.
    pub fn data_bytes(&self, mode: DataMode) -> u64 {
        let has_data = self.s.algorithms[self.pt.algo].collective.has_data();
        // An algorithm that stages data in scratch buffers may move it to other offsets:
        // its log is then replayed over whole vectors, which is what it is counted at.
        // (`ring_gloo`'s scratch keeps every index and its replay is tiled, but its local
        // copies are log entries the tile figure does not count: counted by the tile, a
        // point of 32 ranks and 18 MiB estimated at 4.95 MiB allocated 52 MiB at once.)
        let planes = if mode == DataMode::Full && has_data && self.log_pays() && self.scratch_sizes().is_empty() {
            self.tiled_bytes()
        } else {
            self.vector_bytes(mode)
        };
        planes.saturating_add(self.in_flight_data_bytes(mode))
    }

    /// A tiled full-data run's bytes ([`crate::sim::data::verify_log`]): the log (two
    /// entries per message), its index by tile (an entry per message end, and one for
    /// each further tile an entry spans, counting `4 P n` elements moved: two ends of
    /// about two vectors per rank), and on each thread a tile of every rank's buffers
    /// with the tile's reference and a tile's copy of each message in flight; and the
    /// check's plan, every rank's ranges (an
    /// allgather's every non-empty block on every rank).
    fn tiled_bytes(&self) -> u64 {
        use crate::sim::data::{ENTRY_BYTES, MIN_TILE, PLAN_ENTRY_BYTES, TILE_BYTES};
        let s = self.s;
        let e = s.data.dtype.bytes() as u64;
        let p = self.pt.ranks as u64;
        let n = self.elems();
        let (messages, _) = self.messages();
        let buffers = 1 + self.scratch_sizes().len() as u64;
        let per_index = p.saturating_mul(e).saturating_mul(buffers).max(1);
        let width = (TILE_BYTES as u64 / per_index).max(MIN_TILE as u64);
        let reference = if s.data.dtype.unit_roundoff().is_some() { 24 } else { 8 };
        let log = messages.saturating_mul(2).saturating_mul(ENTRY_BYTES as u64);
        let index =
            messages.saturating_mul(2).saturating_add(p.saturating_mul(n).saturating_mul(4) / width).saturating_mul(4);
        let tile = width.saturating_mul(per_index.saturating_add(reference));
        let threads = rayon::current_num_threads() as u64;
        let ranges = match self.s.algorithms[self.pt.algo].collective {
            crate::collective::Collective::Allgather => p.min(n).max(1),
            _ => 1,
        };
        let plan = p.saturating_mul(ranges).saturating_mul(PLAN_ENTRY_BYTES as u64);
        // A thread's copies of the messages whose region is written while they are in
        // flight: a slot for each message in flight, each up to a tile of one buffer, and
        // each thread keeps its own (`naive` at 256 ranks and 64 KiB: 65,280 slots of
        // 1 KiB on each of two threads, 133 MB, where 96 MiB was counted for the whole
        // point and a run under a `ulimit -v` of 200 MB died of a failed allocation).
        let slots = self.in_flight().saturating_mul(width.saturating_mul(e).saturating_add(24));
        log.saturating_add(index)
            .saturating_add(tile.saturating_add(slots).saturating_mul(threads))
            .saturating_add(plan)
    }

    /// The scratch buffers (elements each) the algorithm declares; one of n if it
    /// cannot be built.
    fn scratch_sizes(&self) -> Vec<u64> {
        let n = self.elems();
        match self.algo() {
            Ok(a) => {
                let prob = Problem { ranks: self.pt.ranks, elems: n as usize, elem_bytes: self.s.data.dtype.bytes() };
                a.scratch(&prob).iter().map(|&x| x as u64).collect()
            }
            Err(_) => vec![n],
        }
    }

    /// The data plane's bytes in `mode` moving whole vectors (or a sample of each).
    fn vector_bytes(&self, mode: DataMode) -> u64 {
        let s = self.s;
        let e = s.data.dtype.bytes() as u64;
        let p = self.pt.ranks as u64;
        let n = self.elems();
        let (tracked, per_elem) = match mode {
            DataMode::Off => return 0,
            DataMode::Full | DataMode::Auto => (n, e),
            DataMode::Sample => (n.min(3 * SAMPLE_GRID as u64 + 1), 16),
        };
        // The scratch the algorithm declares, in the same proportion as the vector.
        let scratch: u64 = self.scratch_sizes().iter().sum();
        let scratch_tracked = if n == 0 { 0 } else { (scratch as u128 * tracked as u128 / n as u128) as u64 };
        let reference = if s.data.dtype.unit_roundoff().is_some() { 24 } else { 8 };
        // Each rank's vector, its scratch and up to a vector of messages in flight; the
        // reference; the sample's positions.
        p.saturating_mul(tracked.saturating_mul(2).saturating_add(scratch_tracked))
            .saturating_mul(per_elem)
            .saturating_add(tracked.saturating_mul(reference))
            .saturating_add(if mode == DataMode::Sample { tracked * 8 } else { 0 })
    }

    /// Whether a full data run logs its data operations and replays them tile by tile
    /// ([`crate::sim::data::verify_log`]) rather than moving whole vectors as it runs:
    /// while the log (two entries per message) takes at most half the data plane's
    /// bytes. A run of many small messages (ring with thousands of ranks) moves its data
    /// as it goes instead, which holds no log.
    pub fn log_pays(&self) -> bool {
        let (messages, _) = self.messages();
        let log = messages.saturating_mul(2).saturating_mul(crate::sim::data::ENTRY_BYTES as u64);
        log <= self.vector_bytes(DataMode::Full) / 2
    }

    /// The data plane the point runs with: the scenario's, or for `auto`, `full` while
    /// it fits `data.memory_budget` and `sample` beyond.
    pub fn data_mode(&self) -> DataMode {
        match self.s.data.mode {
            DataMode::Auto if self.vector_bytes(DataMode::Full) <= self.s.data.memory_budget => DataMode::Full,
            DataMode::Auto => DataMode::Sample,
            m => m,
        }
    }

    /// Whether a full data run logs (a collective with data whose log pays).
    pub fn logs(&self, mode: DataMode) -> bool {
        mode == DataMode::Full && self.s.algorithms[self.pt.algo].collective.has_data() && self.log_pays()
    }

    /// Messages the engine may hold at once beyond the few a rank that
    /// [`ENGINE_BYTES_PER_RANK`] covers: an exchange that issues every send of a step at
    /// once (`direct`, `naive`, the barrier's `all_to_all`) has up to P (P - 1) in flight,
    /// `bcube` 2 P (b - 1) (a step's data and notifications to its group of b),
    /// a slot each; `pat`, whose leaves send a whole aggregated group before their first
    /// receive, up to P^2 / 2 where its parts are small (its schedule's own bound,
    /// `Pat::in_flight` in src/algos/pat.rs); an algorithm given `segments` (or
    /// `double_binary_tree` a `chunk`), P a piece (`Planned::pieces`); `nvls_tree`, whose
    /// GPUs issue their loads on every channel at once and run up to 8 loops ahead of
    /// the totals, what its waits allow (`Planned::nvls_tree_load`); every other
    /// algorithm keeps a few a rank.
    pub fn in_flight(&self) -> u64 {
        use crate::collective::Collective::{Allgather, Allreduce, Barrier, ReduceScatter};
        let spec = &self.s.algorithms[self.pt.algo];
        let p = self.pt.ranks as u64;
        let all = self.messages().0;
        match (spec.collective, spec.name.as_str()) {
            (Allreduce | ReduceScatter | Allgather, "direct") | (Allreduce, "naive") | (Barrier, "all_to_all") => {
                p.saturating_mul(p.saturating_sub(1)).min(all)
            }
            (Allreduce, "bcube") => {
                // A step's b - 1 data sends and b - 1 notifications go at once, and so
                // the engine, and the closed form's recurrence and bounds after it, hold
                // up to 2 P (b - 1): one group of 1,024 held 481 MB where this said 1 MiB.
                let base = Params::new(spec.params.clone()).count("base", 2).unwrap_or(2) as u64;
                p.saturating_mul(2 * base.saturating_sub(1)).min(all)
            }
            (ReduceScatter | Allgather, "pat") => {
                let mut params = Params::new(spec.params.clone());
                let pat = crate::algos::pat::Pat::from_params(&mut params, spec.collective == ReduceScatter);
                match (pat, usize::try_from(self.elems())) {
                    (Ok(pat), Ok(elems)) => {
                        let prob = Problem { ranks: self.pt.ranks, elems, elem_bytes: self.s.data.dtype.bytes() };
                        pat.in_flight(&prob).min(all)
                    }
                    _ => 0,
                }
            }
            (Allreduce, "nvls_tree") => self.nvls_tree_load().map_or(0, |load| load.in_flight.min(all)),
            _ => self.pieces().map_or(0, |n| p.saturating_mul(n).min(all)),
        }
    }

    /// `nvls_tree`'s streams, their programs' bytes and its messages in flight at the
    /// most, read off its schedule (`NvlsTree::engine_load` in src/algos/nvls_tree.rs):
    /// its GPUs issue a window of loops' loads on every channel at once (every load of
    /// the run where a channel has one loop), and each GPU and switch agent runs two
    /// streams a channel, 32 at NCCL's 16 channels. `None` for any other point, or one
    /// it does not run on.
    fn nvls_tree_load(&self) -> Option<EngineLoad> {
        *self.load.get_or_init(|| {
            let spec = &self.s.algorithms[self.pt.algo];
            if spec.collective != crate::collective::Collective::Allreduce || spec.name != "nvls_tree" {
                return None;
            }
            let algo = NvlsTree::from_params(&mut Params::new(spec.params.clone())).ok()?;
            let elems = usize::try_from(self.elems()).ok()?;
            let prob = Problem { ranks: self.pt.ranks, elems, elem_bytes: self.s.data.dtype.bytes() };
            let (_, topo) = point_machine(self.s, spec, self.pt.ranks, self.pt.bytes).ok()?;
            algo.engine_load(&prob, topo.as_ref())
        })
    }

    /// The engine's state beyond [`ENGINE_BYTES_PER_RANK`] a rank and its few streams:
    /// as much again for each switch agent of an algorithm that has them (one per
    /// rank), and `nvls_tree`'s many streams ([`Planned::nvls_tree_load`]), each its
    /// record in the engine ([`STREAM_BYTES`]) and its program (a closure over the
    /// schedule, a few hundred bytes): 266,000 streams, 63 MB, at 4,160 ranks of 16
    /// channels. 0 for every other point.
    fn streams_bytes(&self) -> u64 {
        let p = self.pt.ranks as u64;
        let agents = match self.algo() {
            Ok(a) if a.switch_agents() => p.saturating_mul(ENGINE_BYTES_PER_RANK),
            _ => 0,
        };
        let streams = self
            .nvls_tree_load()
            .map_or(0, |load| load.streams.saturating_mul(STREAM_BYTES).saturating_add(load.program_bytes));
        agents.saturating_add(streams)
    }

    /// The pieces a vector is cut into where the scenario gives the count (`segments`), or
    /// `double_binary_tree`'s piece (`chunk`): a rank may issue a send of each at once
    /// where nothing holds it back (a chain's first rank, a tree's leaves, a ring's first
    /// step), so the engine holds up to P of them a piece ([`Planned::in_flight`]): a
    /// chain of 10^9 segments queued 10^9 sends at its first rank, 40 GB, where the
    /// estimate said 4 KiB; `double_binary_tree` held 1.2 GB for 4 million chunks (few
    /// of them messages in flight), which this count covers. NCCL's chunks and `pat`'s
    /// go a few at a time per channel: they are not counted here. `None` where no count
    /// or piece is given.
    fn pieces(&self) -> Option<u64> {
        let spec = &self.s.algorithms[self.pt.algo];
        let mut params = Params::new(spec.params.clone());
        let n = if params.has("segments") {
            params.count("segments", 1).ok()? as u64
        } else if spec.name == "double_binary_tree" && params.has("chunk") {
            self.pt.bytes.div_ceil(params.size("chunk").ok()??.max(1))
        } else {
            return None;
        };
        (n > 1).then_some(n)
    }

    /// What the closed form's check holds, bytes, for an algorithm that issues a whole
    /// step's sends at once (an exchange, `bcube`) where its time is not a formula: on a
    /// machine whose links or NICs differ, and for `bcube` also where its parts differ by
    /// an element. The check runs after the simulation, whose engine is gone by then, so
    /// it is counted against the engine's own, not on top ([`Planned::estimate`]). Its
    /// step recurrence ([`crate::cost_model::lockstep`]) holds every message of the
    /// largest step ([`Planned::in_flight`]) at [`BYTES_PER_STEP_MESSAGE`] and keeps the
    /// bookings of the run, at most every message, at [`BYTES_PER_BOOKING`] (bounds taken
    /// over whole steps hold less a message: the steps' messages and their receivers'
    /// jobs), both twice over for the growth of the vectors that hold them; where the
    /// recurrence gives up, the bounds read off the programs hold each unmatched message
    /// ([`BOUNDS_BYTES_PER_MESSAGE_IN_FLIGHT`]), at most those in flight. One after the
    /// other, so the larger counts. Naive at 1,024 ranks on a hierarchy held 396 MB here
    /// where the estimate said 161 MiB. `pat`, which has no closed form, is always held
    /// to the bounds read off its programs, so counts their unmatched messages. 0 for
    /// every other point: the other algorithms' recurrences serve a step of a few
    /// messages a rank, the bounds of a piecewise pipeline hold fewer unmatched messages
    /// than the engine's count of its pieces in flight, and the sweep that follows one
    /// that gives up is held to [`crate::cost_model::SWEEP_LIMIT`] messages.
    pub fn closed_form_bytes(&self) -> u64 {
        use crate::collective::Collective::{Allgather, Allreduce, Barrier, ReduceScatter};
        let spec = &self.s.algorithms[self.pt.algo];
        let bytes = if spec.collective.has_data() { self.pt.bytes } else { 0 };
        let Ok((_, topo)) = point_machine(self.s, spec, self.pt.ranks, bytes) else { return 0 };
        let uniform = topo.uniform().is_some();
        let uneven = !self.elems().is_multiple_of(self.pt.ranks.max(1) as u64);
        let p = self.pt.ranks;
        // Whether the step recurrence may run, and the bounds read off the programs.
        let (recurrence, bounds) = match (spec.collective, spec.name.as_str()) {
            // The formula on a uniform machine, else the recurrence (the bounds after it).
            (Allreduce, "naive") => (!uniform, !uniform),
            // Blocks of two lengths past the sweep's limit go to the bounds at once
            // (`direct_uneven_too_large`); on a uniform machine those are a formula.
            (Allreduce, "direct") => {
                let past = uneven && crate::algos::forms::direct_uneven_too_large(p);
                ((uneven || !uniform) && !past, !uniform)
            }
            (ReduceScatter | Allgather, "direct") => {
                // One phase of P (P - 1) messages past the sweep's limit, as the form decides.
                let past = uneven && p.saturating_mul(p.saturating_sub(1)) > crate::cost_model::SWEEP_LIMIT;
                ((uneven || !uniform) && !past, !uniform)
            }
            // No closed form off a uniform machine: the bounds read off the programs.
            (Barrier, "all_to_all") => (false, !uniform),
            // The recurrence, or for parts of two lengths its bounds over whole steps.
            (Allreduce, "bcube") => (uneven || !uniform, false),
            // No closed form on any machine: every point's check reads the bounds off the
            // programs, whose leaves' aggregated sends wait there unmatched as in the
            // engine (an allgather of 1,024 ranks held 51 MB where the engine's 21 MiB
            // was counted).
            (ReduceScatter | Allgather, "pat") => (false, true),
            _ => (false, false),
        };
        let step = self.in_flight();
        let (messages, _) = self.messages();
        let held = if recurrence {
            step.saturating_mul(BYTES_PER_STEP_MESSAGE).saturating_add(messages.saturating_mul(BYTES_PER_BOOKING))
        } else {
            0
        };
        let read = if bounds { step.saturating_mul(BOUNDS_BYTES_PER_MESSAGE_IN_FLIGHT) } else { 0 };
        held.saturating_mul(2).max(read)
    }

    /// What the closed form's check holds, bytes, for an algorithm whose check may run
    /// the step recurrence ([`crate::cost_model::lockstep`]) and, where that gives up, the
    /// sweep ([`crate::cost_model::sweep()`]): one after the other, so the larger counts.
    /// The recurrence holds the largest step's messages ([`BYTES_PER_STEP_MESSAGE`]; a
    /// step of these algorithms is at most four sends a rank, or what
    /// [`Planned::in_flight`] counts) and the bookings still live
    /// ([`BYTES_PER_BOOKING`]): the step's, and the up to 16 a side keeps before it drops
    /// those ended, both twice over for the vectors' growth; the sweep holds every
    /// message of the run ([`BYTES_PER_SWEPT_MESSAGE`]), and past [`SWEEP_LIMIT`] only the
    /// plan built up to it ([`BYTES_PER_PLANNED_MESSAGE`]; `ring_chunked` and
    /// `bidirectional_ring`, which only sweep, build none). Which of
    /// the two runs is known only by running them, so the sweep is counted wherever the
    /// recurrence may give up.
    /// `ring_chunked` at 200 ranks held 50.8 MB in its sweep where nothing was counted,
    /// `neighbor_exchange`'s allgather at 2,048 ranks 7.3 MB in its recurrence. 0 for the
    /// algorithms whose check is a formula or a recurrence of their own.
    fn stepped_check_bytes(&self) -> u64 {
        use crate::collective::Collective::{Allgather, Allreduce, Broadcast, ReduceScatter};
        const SENDS_PER_RANK: u64 = 4;
        const KEPT_PER_SIDE: u64 = 16;
        let spec = &self.s.algorithms[self.pt.algo];
        // Sweeps only, and not at all past its limit (the plan is not even built).
        if spec.collective == Allreduce && matches!(spec.name.as_str(), "ring_chunked" | "bidirectional_ring") {
            let (messages, _) = self.messages();
            return if messages > SWEEP_LIMIT as u64 { 0 } else { messages * BYTES_PER_SWEPT_MESSAGE };
        }
        let stepped = match (spec.collective, spec.name.as_str()) {
            // A formula on a uniform machine (as `naive`, which with the exchanges and
            // `bcube` [`Planned::closed_form_bytes`] counts).
            (Allreduce, "ring_gloo") => {
                let bytes = if spec.collective.has_data() { self.pt.bytes } else { 0 };
                point_machine(self.s, spec, self.pt.ranks, bytes).is_ok_and(|(_, topo)| topo.uniform().is_none())
            }
            (Allreduce, name) => matches!(
                name,
                "blueconnect"
                    | "butterfly"
                    | "double_binary_tree"
                    | "halving_doubling"
                    | "hierarchical_ring"
                    | "torus_2d"
                    | "mesh_2d"
            ),
            (ReduceScatter, name) => matches!(name, "halving_doubling" | "butterfly" | "recursive_halving"),
            (Allgather, name) => matches!(name, "halving_doubling" | "neighbor_exchange"),
            (Broadcast, name) => name == "scatter_allgather",
            _ => false,
        };
        if !stepped {
            return 0;
        }
        let p = self.pt.ranks as u64;
        let (messages, _) = self.messages();
        let step = self.in_flight().max(p.saturating_mul(SENDS_PER_RANK)).min(messages);
        let bookings = step.saturating_add(p.saturating_mul(KEPT_PER_SIDE)).min(messages);
        let recurrence =
            step.saturating_mul(BYTES_PER_STEP_MESSAGE).saturating_add(bookings.saturating_mul(BYTES_PER_BOOKING));
        let swept = if messages > SWEEP_LIMIT as u64 {
            SWEEP_LIMIT as u64 * BYTES_PER_PLANNED_MESSAGE
        } else {
            messages * BYTES_PER_SWEPT_MESSAGE
        };
        recurrence.saturating_mul(2).max(swept)
    }

    /// The data plane's bytes for the messages in flight ([`Planned::in_flight`]) beyond
    /// their values (which the vector a rank of messages in flight covers): each holds
    /// its copy's record, and its values' allocation at its least
    /// ([`DATA_BYTES_PER_MESSAGE_IN_FLIGHT`]); none with data off.
    fn in_flight_data_bytes(&self, mode: DataMode) -> u64 {
        if mode == DataMode::Off || !self.s.algorithms[self.pt.algo].collective.has_data() {
            return 0;
        }
        self.in_flight().saturating_mul(DATA_BYTES_PER_MESSAGE_IN_FLIGHT)
    }

    /// The point's estimate.
    pub fn estimate(&self) -> Estimate {
        self.estimate
            .get_or_init(|| {
                if self.algo.is_err() && crate::select::is_selector(&self.s.algorithms[self.pt.algo].name) {
                    return selector_estimate(self.s, &self.pt, None);
                }
                self.estimate_in(self.data_mode())
            })
            .clone()
    }

    /// The point's estimate with its data plane in `mode` (not `auto`).
    fn estimate_in(&self, mode: DataMode) -> Estimate {
        let (s, pt) = (self.s, &self.pt);
        if crate::select::is_selector(&s.algorithms[pt.algo].name) {
            return selector_estimate(s, pt, Some(mode));
        }
        let p = pt.ranks as u64;
        if !self.runs() {
            return Estimate {
                data_bytes: 0,
                engine_bytes: NOT_RUN_BYTES,
                timeline_bytes: 0,
                messages: 0,
                messages_exact: true,
                events: 0,
            };
        }
        let data_bytes = self.data_bytes(mode);
        let (messages, messages_exact) = self.messages();
        // The engine's state, then (once it is gone) the closed form's check, on the
        // same per-rank tables and routes.
        let engine_bytes = p
            .saturating_mul(ENGINE_BYTES_PER_RANK)
            .saturating_add(self.streams_bytes())
            .saturating_add(route_cache_bytes(s, pt.ranks, messages))
            .saturating_add(
                self.in_flight()
                    .saturating_mul(ENGINE_BYTES_PER_MESSAGE_IN_FLIGHT)
                    .max(self.closed_form_bytes())
                    .max(self.stepped_check_bytes()),
            );
        let events = messages.saturating_mul(EVENTS_PER_MESSAGE);
        let timeline_bytes = if self.records() { self.timeline_bytes() } else { 0 };
        Estimate { data_bytes, engine_bytes, timeline_bytes, messages, messages_exact, events }
    }

    /// What recording the point's timeline, or tracking its critical path, holds, bytes:
    /// two tables of port tracks per rank (a Vec header and one track each), and the
    /// intervals, each message and each reduction (none where the collective does not
    /// reduce), up to [`MAX_INTERVALS`]: a recorded
    /// one at [`INTERVAL_BYTES`], or as the [`crate::timeline::PathTracker`] keeps it
    /// ([`TRACKER_BYTES_PER_INTERVAL`], with its chunks' slack), whichever is more, and
    /// the tracker's link counters, a pair per message at most and P (P - 1) at most
    /// ([`TRACKER_BYTES_PER_PAIR`]). The tracker keeps the chains a path's steps may
    /// list: `ring` at 256 ranks and 4 MB held 25 MB in it where this counted 16 MiB.
    fn timeline_bytes(&self) -> u64 {
        use crate::timeline::critical::{TRACKER_BYTES_PER_INTERVAL, TRACKER_BYTES_PER_PAIR, tracker_slack_bytes};
        let p = self.pt.ranks as u64;
        let (messages, _) = self.messages();
        let tables = p.saturating_mul(2 * (24 + 8));
        let per_message = if self.s.algorithms[self.pt.algo].collective.reduces() { 2 } else { 1 };
        let intervals = messages.saturating_mul(per_message).min(MAX_INTERVALS as u64);
        let tracked = intervals * TRACKER_BYTES_PER_INTERVAL + tracker_slack_bytes(intervals);
        let pairs = messages.min(p.saturating_mul(p.saturating_sub(1))).min(MAX_INTERVALS as u64);
        let held = (intervals * INTERVAL_BYTES).max(tracked + pairs * TRACKER_BYTES_PER_PAIR);
        tables.saturating_add(held)
    }

    /// The point's label in messages ([`label`]).
    pub fn label(&self) -> String {
        label(self.s, &self.pt)
    }

    /// The label of the point's row, as the runner gives it: the algorithm's, with its
    /// parameters and the entry's protocol (`nccl_ring(channels=2, protocol=ll)`).
    pub fn row_label(&self) -> String {
        let spec = &self.s.algorithms[self.pt.algo];
        match self.algo() {
            Ok(a) => crate::scenario::ProtocolChoice::label(a.label(), spec.protocol),
            Err(_) => spec.name.clone(),
        }
    }

    /// Whether the point's algorithm runs here: it builds, its protocol resolves and it
    /// is applicable on the machine as that protocol sees it (as the runner decides).
    fn runs_here(&self) -> bool {
        let Ok(algo) = self.algo() else { return false };
        let spec = &self.s.algorithms[self.pt.algo];
        let bytes = if spec.collective.has_data() { self.pt.bytes } else { 0 };
        let e = self.s.data.dtype.bytes();
        let Ok(elems) = usize::try_from(bytes / (e as u64).max(1)) else { return false };
        let Ok((_, topo)) = point_machine(self.s, spec, self.pt.ranks, bytes) else { return false };
        let prob = Problem { ranks: self.pt.ranks, elems, elem_bytes: e };
        algo.applicable(&prob, &Machine { topo: topo.as_ref(), cost_per_byte: self.s.cost_per_byte }).is_ok()
    }
}

/// One algorithm a selector's point may pick, as `run --trace` and `--gantt` see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Its row's label (`ring`, `nccl_ring(channels=2, protocol=ll)`).
    pub label: String,
    /// Its messages: the exact count, an upper bound, or (beyond the walk's rank limit,
    /// where it overflows) the least it sends.
    pub messages: u64,
    /// Whether `messages` is the exact count.
    pub exact: bool,
    /// Whether a recording of it would certainly outgrow [`MAX_INTERVALS`]: its exact
    /// message count alone is above it ([`Planned::timeline_overflows`]).
    pub overflows: bool,
}

/// The algorithms selector point `pt` of `s` may pick ([`crate::select::candidate_specs`])
/// that run there, each with its messages and whether it could be recorded: `run --trace`
/// and `--gantt` record the pick, and refuse before anything runs when no candidate
/// could be recorded. Empty for a point that is not a selector's.
pub fn candidates(s: &Scenario, pt: &Point) -> Vec<Candidate> {
    if !crate::select::is_selector(&s.algorithms[pt.algo].name) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for spec in crate::select::candidate_specs(s, pt) {
        let mut one = s.clone();
        one.algorithms = vec![spec];
        let planned = Planned::new(&one, &Point { algo: 0, ranks: pt.ranks, bytes: pt.bytes }, true);
        if !planned.runs_here() {
            continue;
        }
        let overflows = planned.timeline_overflows();
        let (count, exact) = planned.messages();
        let messages = if overflows { planned.messages_at_least() } else { count };
        out.push(Candidate { label: planned.row_label(), messages, exact, overflows });
    }
    out
}

/// The points of `s` that shard `shard` runs ([`Scenario::points_of`]), each with its
/// algorithm built once ([`Planned`]).
pub fn plan(s: &Scenario, shard: Option<crate::results::Shard>) -> Vec<Planned<'_>> {
    let single = s.point_count(None) == 1;
    s.points_of(shard).iter().map(|pt| Planned::new(s, pt, single)).collect()
}

/// The points of `s` that shard `shard` runs, planned ([`plan`]) and checked as `run`
/// checks them before anything runs: their number against what the reports of that
/// many points take at the least, written in `form` ([`check_point_count`], before any is
/// planned; `fewer` as there), each point's data plane against
/// `data.memory_budget` ([`check_budget`]), and its whole estimate against `max_memory`
/// (a size, given by the option `flag`) or else what the machine has available
/// ([`check_memory`]). With the points, the limit the runner keeps parallel points
/// within, if any is known.
pub fn checked_plan<'s>(
    s: &'s Scenario,
    shard: Option<crate::results::Shard>,
    max_memory: Option<&str>,
    flag: &str,
    form: ReportForm,
    fewer: &str,
) -> Result<(Vec<Planned<'s>>, Option<u64>), String> {
    let given =
        max_memory.map(|text| crate::units::parse_size(text).map_err(|e| format!("{flag}: {e}"))).transpose()?;
    check_point_count(s, shard, form, fewer)?;
    let plans = plan(s, shard);
    check_budget(&plans)?;
    let (limit, source) = match given {
        Some(limit) => (limit, flag.to_string()),
        None => match available_memory() {
            Some(b) => (b, format!("MemAvailable in /proc/meminfo; {flag} sets another limit")),
            None => return Ok((plans, None)),
        },
    };
    check_memory(&plans, limit, &source)?;
    Ok((plans, Some(limit)))
}

/// The address space an allocator arena takes at once: glibc's largest heap of a thread's
/// arena on a 64-bit machine (twice its 32 MiB largest mmap threshold).
const ARENA_BYTES: u64 = 64 << 20;

/// What a run allocates beside its points' estimates, reserved with the largest: the
/// report's text and its JSON, the plots' bitmaps (a 1,600 x 900 PNG is 4.3 MB) and fonts,
/// the points' small tables. Under a `ulimit -v` that left a few MB past the program and its
/// threads' stacks, runs of points estimated at 2 to 6 MiB passed the reservation and died
/// of a failed allocation (exit 134) writing their report or plots.
pub const RUN_SLACK_BYTES: u64 = 16 << 20;

/// How the report of a run is written, for what it keeps of each point until then
/// ([`report_bytes`]): JSON (`--format json`, the Python module) renders every field, a
/// table or CSV fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportForm {
    /// One JSON document.
    Json,
    /// A table or CSV rows.
    Text,
}

/// What the report keeps of a point whatever its size, with its text: a point of `ring`
/// at 2 ranks holds 1.5 KB of results and 1.4 KB of JSON or 0.3 KB of a table's rows; a
/// table's buffer grows by doubling, JSON is written at its counted length (2.9 KB a
/// point held in JSON, 1.9 KB in a table, 1.8 KB in CSV, counted by
/// `tests/report_memory.rs`), with room for longer labels, a selector's lines and notes.
const REPORT_BYTES_BASE: [u64; 2] = [5 << 10, 3 << 10];
/// Each rank's counters (points of at most [`DETAIL_MAX_RANKS`] ranks): 35 and 15 bytes
/// a rank counted (`ring` at 64 ranks against 2), 66 and 31 in the peak resident memory
/// of sweeps.
const REPORT_BYTES_PER_RANK: [u64; 2] = [96, 48];
/// Each seed's time and skew under `repeat:`: 122 and 18 bytes counted (`repeat: 2000`).
const REPORT_BYTES_PER_SEED: [u64; 2] = [160, 32];
/// Each link the flow model lists (the five busiest, and every link used at points of at
/// most [`DETAIL_MAX_RANKS`] ranks): 347 and 66 bytes counted (`direct` at 32 ranks on a
/// fully connected machine, 992 links), names of a few letters included.
const REPORT_BYTES_PER_LINK: [u64; 2] = [448, 128];
/// Each byte of a listed link's name as written ([`crate::units::written_len`]): the
/// name the report holds, and in JSON its text and the copy that escapes unseen
/// characters (each sized at once).
const REPORT_BYTES_PER_LISTED_NAME_BYTE: [u64; 2] = [4, 2];
/// Each byte of the five busiest links' names, at the machine's longest name: held, and
/// written into JSON, or into a table's line whose text grows by doubling (CSV writes
/// none). A table of names of 2,000 bytes held 4.4 bytes a byte, JSON 3.3.
const REPORT_BYTES_PER_BUSIEST_NAME_BYTE: [u64; 2] = [4, 5];
/// Points whose programs send more messages than this are not walked for the links they
/// use ([`Planned::links`]): they are counted at every link the machine has, up to
/// [`MAX_LISTED_LINKS`].
const WALK_MAX_SENDS: u64 = 1 << 20;

/// The links the report lists of a point under the flow model ([`Planned::links`]), for
/// [`report_bytes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListedLinks {
    /// How many it lists one by one: every link the point uses, at points of at most
    /// [`DETAIL_MAX_RANKS`] ranks that use at most [`MAX_LISTED_LINKS`]; else none.
    pub listed: u64,
    /// Their names' bytes as written ([`crate::units::written_len`]), summed.
    pub name_bytes: u64,
    /// The most bytes one name of the machine's links can take as written
    /// ([`crate::topology::Fabric::longest_link_name`]): for the five busiest links,
    /// which every point lists.
    pub longest_name: u64,
}

impl ListedLinks {
    /// Each figure the larger of the two: room for whichever of two algorithms a
    /// selector picks.
    pub fn max(self, other: Self) -> Self {
        ListedLinks {
            listed: self.listed.max(other.listed),
            name_bytes: self.name_bytes.max(other.name_bytes),
            longest_name: self.longest_name.max(other.longest_name),
        }
    }
}

/// What the report keeps of point `pt` of `s` until it is written in `form`, bytes: its
/// fields, each rank's counters (at most [`DETAIL_MAX_RANKS`] ranks), each seed's time
/// under `repeat:`, and under the flow model the links it lists, by `links`
/// ([`Planned::links`]; `None` where not known: every link the machine may have, up to
/// [`MAX_LISTED_LINKS`], with names of 64 bytes). Measured peaks of sweeps with room to
/// spare, not a bound: a point's notes and failures are words whose length is not known
/// before it runs.
pub fn report_bytes(s: &Scenario, pt: &Point, form: ReportForm, links: Option<ListedLinks>) -> u64 {
    let f = form as usize;
    let mut bytes = REPORT_BYTES_BASE[f];
    if pt.ranks <= DETAIL_MAX_RANKS {
        bytes += REPORT_BYTES_PER_RANK[f] * pt.ranks as u64;
    }
    if let Some(seeds) = s.repeat {
        bytes += REPORT_BYTES_PER_SEED[f] * u64::from(seeds);
    }
    if s.network.is_flow() {
        let links = links.unwrap_or_else(|| {
            let listed = if pt.ranks <= DETAIL_MAX_RANKS { MAX_LISTED_LINKS as u64 } else { 0 };
            ListedLinks { listed, name_bytes: listed * 64, longest_name: 64 }
        });
        bytes = bytes
            .saturating_add(REPORT_BYTES_PER_LINK[f] * links.listed.max(5))
            .saturating_add(REPORT_BYTES_PER_LISTED_NAME_BYTE[f].saturating_mul(links.name_bytes))
            .saturating_add(REPORT_BYTES_PER_BUSIEST_NAME_BYTE[f].saturating_mul(5 * links.longest_name));
    }
    bytes
}

/// What the report keeps of all of `plans`' points ([`report_bytes`]), their links walked
/// under the flow model ([`Planned::links`]), and of the scenario itself
/// ([`report_scenario_bytes`]).
pub fn report_bytes_of(s: &Scenario, plans: &[Planned], form: ReportForm) -> u64 {
    plans.iter().fold(report_scenario_bytes(s, form), |total, pl| {
        total.saturating_add(report_bytes(s, &pl.pt, form, Some(pl.links())))
    })
}

/// What a run holds at once of the algorithms it simulates only for its selectors: the
/// results of a batch of them ([`crate::select::jobs_held_at_once`]), each counted as the
/// largest selector point's row held in memory, listing every link of the machine (up to
/// [`MAX_LISTED_LINKS`]): any of them may be `direct`.
pub fn selector_runs_bytes(s: &Scenario, plans: &[Planned]) -> u64 {
    let selectors: Vec<&Planned> =
        plans.iter().filter(|pl| crate::select::is_selector(&s.algorithms[pl.pt.algo].name)).collect();
    let Some(each) = selectors.iter().map(|pl| report_bytes(s, &pl.pt, ReportForm::Text, None)).max() else {
        return 0;
    };
    let pts: Vec<Point> = plans.iter().map(|pl| pl.pt.clone()).collect();
    each.saturating_mul(crate::select::jobs_held_at_once(s, &pts) as u64)
}

/// The scenario as the report holds it, for each byte of its JSON: the report's copy, and
/// in JSON its text (written at its length) and the copy that escapes unseen characters.
const REPORT_BYTES_PER_SCENARIO_BYTE: [u64; 2] = [4, 2];

/// What the report keeps of the scenario `s` itself, written in `form`: its copy, and in
/// JSON its text, by the length of its JSON (counted, not written). Most scenarios are a
/// few KB, inside the run's slack; a machine drawn as a graph of thousands of named nodes
/// is megabytes.
pub fn report_scenario_bytes(s: &Scenario, form: ReportForm) -> u64 {
    let mut count = crate::units::ByteCount(0);
    let _ = serde_json::to_writer_pretty(&mut count, s);
    REPORT_BYTES_PER_SCENARIO_BYTE[form as usize].saturating_mul(count.0 as u64)
}

/// Refuse a sweep whose points' reports alone, at the least each can take
/// (5 KiB a point for JSON, 3 KiB for text), could not be reserved with the rest of the run's
/// slack: counted before any point is planned, so a sweep of millions of points is
/// refused at once rather than after minutes of planning. `fewer` names how the caller
/// asks for fewer points (`run`'s flags, `tune`'s, the Python module's arguments).
pub fn check_point_count(
    s: &Scenario,
    shard: Option<crate::results::Shard>,
    form: ReportForm,
    fewer: &str,
) -> Result<(), String> {
    let points = s.point_count(shard);
    let results = REPORT_BYTES_BASE[form as usize].saturating_mul(points as u64);
    if crate::process::reservable(results.saturating_add(RUN_SLACK_BYTES)) {
        return Ok(());
    }
    Err(format!(
        "the {points} points' results would need at least {} of memory, {}; run fewer points at once ({fewer})",
        fmt_bytes(results),
        crate::process::CANNOT_RESERVE,
    ))
}

/// Refuse the largest point of `plans` if this process cannot even reserve its estimated
/// memory, what the report keeps of every point of the sweep until it is written in
/// `form` ([`report_bytes_of`]) and 16 MiB for the rest
/// of the run, with [`crate::process::reservable`], and, unless [`crate::process::one_allocator_arena`] took, up to an
/// arena's heap for each thread of the run and the main thread (`ARENA_BYTES`, 64 MiB; no
/// more than the estimate itself). `run` asks it last, after every other refusal, just
/// before the points run. A limit given by hand (`--max-memory 15EiB`), or none where
/// `/proc/meminfo` cannot be read, may be past what the machine or the process's
/// address-space limit (`ulimit -v`) allows, and a point within it then died of a failed
/// allocation midway (exit 134, 2^32 - 1 ranks: a per-rank table of 103 GB under an 8 GB
/// limit). Linux refuses a reservation past its memory and swap unless overcommit is set
/// to always; there the run is as before. Where the largest points that would run at
/// once, a thread each, could not be reserved together but each alone can, they run one
/// at a time: the memory limit to run with is returned, lowered to the largest point's
/// estimate ([`crate::runner::RunOptions::memory_limit`]); else `memory_limit` as given.
pub fn check_reservable(
    s: &Scenario,
    plans: &[Planned],
    form: ReportForm,
    fewer: &str,
    memory_limit: Option<u64>,
) -> Result<Option<u64>, String> {
    let Some((pl, est)) = plans.iter().map(|pl| (pl, pl.estimate())).max_by_key(|(_, est)| est.memory_bytes()) else {
        return Ok(memory_limit);
    };
    let need = est.memory_bytes();
    // Where each thread allocates from an arena of its own, each takes address space a
    // whole 64 MiB heap at a time: under `ulimit -v` a large point needs up to a heap's
    // slack a thread beside its estimate (`nvls_tree` at 4,160 ranks: a 197 MB heap in
    // 430 MB of address space died under a limit of 300 MB that its estimate of 271 MiB
    // passed). A small point fits in the heaps its threads already reserved, so the
    // margin is at most the point's own size. The main thread's heap counts as one more.
    let threads = rayon::current_num_threads().max(1);
    let with_arenas = |bytes: u64| {
        let arenas =
            if crate::process::one_arena() { 0 } else { ARENA_BYTES.saturating_mul(threads as u64 + 1).min(bytes) };
        bytes.saturating_add(arenas).saturating_add(RUN_SLACK_BYTES)
    };
    let alone = with_arenas(need);
    let results = report_bytes_of(s, plans, form).saturating_add(selector_runs_bytes(s, plans));
    if crate::process::reservable(alone.saturating_add(results)) {
        // The points run a thread each: the largest that may run at once together, with
        // each thread's arena. Under a `ulimit -v` that held the largest alone, two points
        // of `scenarios/tpu_mesh.yaml` running side by side ran out of memory. Where they
        // cannot be reserved together, they run one at a time
        // ([`crate::runner::RunOptions::memory_limit`]).
        let mut largest: Vec<u64> = plans.iter().map(|pl| pl.estimate().memory_bytes()).collect();
        largest.sort_unstable_by(|a, b| b.cmp(a));
        let at_once: u64 = largest.iter().take(threads).fold(0u64, |a, &b| a.saturating_add(b));
        let together = at_once == need || crate::process::reservable(with_arenas(at_once).saturating_add(results));
        return Ok(if together { memory_limit } else { Some(memory_limit.map_or(need, |l| l.min(need))) });
    }
    if crate::process::reservable(alone) {
        return Err(format!(
            "the {} points' results would need about {} of memory beside the largest point's {}, {}; run fewer \
             points at once ({fewer})",
            plans.len(),
            fmt_bytes(results),
            fmt_bytes(need),
            crate::process::CANNOT_RESERVE,
        ));
    }
    Err(format!(
        "{} would need about {} of memory ({}), {}, whatever the memory limit; use fewer ranks (--ranks){}",
        pl.label(),
        fmt_bytes(need),
        parts(&est),
        crate::process::CANNOT_RESERVE,
        if est.data_bytes > 0 { ", smaller sizes (--sizes) or data.mode: off" } else { " or smaller sizes (--sizes)" },
    ))
}

/// The messages of algorithm `spec` on `p` and `topo`, counted from its schedule
/// (what each rank sends in each step, as its module docs lay it out) rather than by
/// walking every rank's program: for the algorithms whose own
/// [`Algorithm::messages`] is `None` and whose walk is long at thousands of ranks and
/// large vectors (`double_binary_tree`, `nccl_tree`, `ring_chunked` each take seconds at
/// 2,048 ranks and 1 GiB, `pat` 0.6 s, and `auto` walks them all). `topo` is the machine
/// as the point's protocol sees it ([`point_machine`]): NCCL's algorithms cut their
/// chunks by it. `None` for any other algorithm, or
/// parameters it would refuse. Call it only where the algorithm is applicable;
/// `tests/estimate_counts.rs` holds every count to the walked programs.
pub fn schedule_messages(spec: &AlgoSpec, p: &Problem, topo: &dyn Topology) -> Option<u64> {
    use crate::collective::Collective::{Allgather, Allreduce, Barrier, ReduceScatter};
    // Counted in u128 and saturated at the end: near 2^32 ranks a count passes 2^64,
    // and a wrapped count would look small.
    let np = p.ranks as u128;
    let pairs = np * np.saturating_sub(1);
    let mut params = Params::new(spec.params.clone());
    let n = p.elems;
    let e = p.elem_bytes.max(1);
    let count = match (spec.collective, spec.name.as_str()) {
        // Every rank sends every other rank one message per phase (`exchange`).
        (Allreduce, "direct") => 2 * pairs,
        (ReduceScatter | Allgather, "direct") | (Allreduce, "naive") | (Barrier, "all_to_all") => pairs,
        // P rounds: P - 1 vectors passed on and P - 1 notifications (none for n = 0).
        (Allreduce, "ring_gloo") => {
            if n == 0 {
                0
            } else {
                2 * pairs
            }
        }
        // 2P chunks: the first pair, then each reduce-scatter round a notification and a
        // chunk (2P - 2 rounds), each allgather round but the last four the same, and the
        // closing notification: 8P - 9 a rank.
        (Allreduce, "ring_chunked") => {
            if np <= 1 || n == 0 {
                0
            } else {
                np * (8 * np - 9)
            }
        }
        // Two rings, each a reduce-scatter and an allgather of P - 1 steps.
        (Allreduce, "bidirectional_ring") => 4 * pairs,
        // One reduce-scatter of P - 1 steps per phase, then one allgather.
        (Allreduce, "ring_segmented") => {
            let segment = params.size("segment").ok()?.unwrap_or(1 << 20);
            let phases = crate::algos::RingSegmented { segment }.phases(p.ranks, n, e) as u128;
            pairs * (phases + 1)
        }
        // Every edge of each tree (P - 1 of them) carries every non-empty chunk of its
        // half up and down.
        (Allreduce, "double_binary_tree") => {
            let chunk = params.size("chunk").ok()?.unwrap_or(crate::algos::DBT_DEFAULT_CHUNK);
            let chunk_elems = (usize::try_from(chunk).unwrap_or(usize::MAX) / e).max(1);
            let chunks = n.div_ceil(2).div_ceil(chunk_elems).max(1);
            let sent: usize = (0..2).map(|t| chunks.min(crate::algos::block(n, 2, t).len)).sum();
            2 * np.saturating_sub(1) * sent as u128
        }
        // Each channel's items, on every rank.
        (Allreduce, "nccl_ring") => {
            let algo = crate::algos::nccl_ring::NcclRing::from_params(&mut params).ok()?;
            let plan = algo.plan(p, topo);
            np * (0..algo.channels).map(|k| plan.items(k) as u128).sum::<u128>()
        }
        // Each channel's tree spans every rank (a chain in each node, a tree across
        // nodes): its P - 1 edges carry every chunk of the channel's part up and down.
        (Allreduce, "nccl_tree") => {
            let proto = crate::algos::nccl_ring::protocol(&mut params).ok()?;
            let channels = params.count("channels", 2).ok()?;
            let chunk = match params.size("chunk").ok()? {
                Some(c) => c,
                None => crate::algos::nccl_ring::run_protocol(proto, topo).chunk_bytes(),
            };
            let chunk_elems = (usize::try_from(chunk).unwrap_or(usize::MAX) / e).max(1);
            let parts = crate::algos::Blocks::new(n, channels);
            let chunks: u128 = (0..channels).map(|k| parts.get(k).len.div_ceil(chunk_elems) as u128).sum();
            2 * np.saturating_sub(1) * chunks
        }
        // P a power of two: every rank swaps with one partner a round, log2 P rounds
        // (the butterfly's whole vector; halving-doubling's reduce-scatter, then its
        // allgather). Other P fold first, which the walk counts (up to its rank limit).
        (Allreduce, "butterfly") if np.is_power_of_two() && n > 0 => np * np.ilog2() as u128,
        (Allreduce, "halving_doubling") if np.is_power_of_two() && n > 0 => 2 * np * np.ilog2() as u128,
        // Pairs swap at each of P/2 steps.
        (Allgather, "neighbor_exchange") => np * (np / 2),
        // Every chunk of every block's part leaves each rank but its owner once.
        (ReduceScatter | Allgather, "pat") => {
            crate::algos::pat::Pat::from_params(&mut params, spec.collective == ReduceScatter)
                .ok()?
                .message_count(p)
                .into()
        }
        _ => return None,
    };
    Some(u64::try_from(count).unwrap_or(u64::MAX))
}

/// The links the flow model lists at point `pt` of `s` run by `algo`, built from `spec`
/// (the point's own algorithm, or one its selector simulates), its messages counted
/// where known: every link the point uses at points of at most [`DETAIL_MAX_RANKS`] ranks,
/// the pairs its programs send between walked and their routes joined; else only the five
/// busiest, at the machine's longest name. Where the routes are not known before the run
/// (faults reroute, NVLS's switch agents send too) or the walk would be long (more than
/// 2^20 sends), every link of the machine is counted, up to [`MAX_LISTED_LINKS`].
pub fn links_of(
    s: &Scenario,
    spec: &AlgoSpec,
    algo: &dyn Algorithm,
    pt: &Point,
    messages: Option<(u64, bool)>,
) -> ListedLinks {
    let bytes = if spec.collective.has_data() { pt.bytes } else { 0 };
    let Ok((_, topo)) = point_machine(s, spec, pt.ranks, bytes) else { return ListedLinks::default() };
    let Some(fabric) = topo.fabric() else { return ListedLinks::default() };
    let longest_name = fabric.longest_link_name() as u64;
    let busiest = ListedLinks { listed: 0, name_bytes: 0, longest_name };
    if pt.ranks > DETAIL_MAX_RANKS {
        return busiest;
    }
    let listed = fabric.link_count().min(MAX_LISTED_LINKS as u64);
    let every = ListedLinks { listed, name_bytes: listed.saturating_mul(longest_name), longest_name };
    let rerouted = s.noise.as_ref().is_some_and(|n| !n.faults.is_empty() || !n.random_faults.is_empty());
    if rerouted || algo.switch_agents() {
        return every;
    }
    let Ok(elems) = usize::try_from(bytes / (s.data.dtype.bytes() as u64).max(1)) else { return every };
    let prob = Problem { ranks: pt.ranks, elems, elem_bytes: s.data.dtype.bytes() };
    if algo.applicable(&prob, &Machine { topo: topo.as_ref(), cost_per_byte: s.cost_per_byte }).is_err() {
        return ListedLinks::default();
    }
    let (sends, exact) = messages.unwrap_or_else(|| match algo.messages(&prob, topo.as_ref()) {
        Some(m) => (m, true),
        None => crate::algos::walk_messages_past(algo, &prob, topo.as_ref(), WALK_MAX_SENDS),
    });
    if !exact || sends > WALK_MAX_SENDS {
        return every;
    }
    // At most 64 ranks: a table of pairs, not a set.
    let p = pt.ranks;
    let mut pairs = vec![false; p * p];
    let run = algo.prepare(&prob, topo.as_ref());
    for a in 0..p {
        for op in run.rank_program(a as crate::sim::Rank, prob, topo.as_ref()).into_iter().flatten() {
            if let crate::sim::op::Op::Send { to, .. } = op {
                let b = to as usize;
                if b < p && b != a {
                    pairs[a * p + b] = true;
                }
            }
        }
    }
    let mut ids = Vec::new();
    for (i, _) in pairs.iter().enumerate().filter(|(_, sent)| **sent) {
        fabric.route(i / p, i % p, &mut ids);
    }
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > MAX_LISTED_LINKS {
        return busiest;
    }
    let name_bytes = ids.iter().map(|&id| crate::units::written_len(&fabric.link_name(id)) as u64).sum();
    ListedLinks { listed: ids.len() as u64, name_bytes, longest_name }
}

/// The protocol entry `spec`'s point of `ranks` ranks and `bytes` bytes runs with (its
/// `protocol:`, resolved for `auto` by NCCL's model; Simple without one), and the machine
/// as that protocol sees it, as the runner runs the point: NCCL's algorithms read their
/// chunk off it, so the estimate counts their messages on it too. `Err` says why the
/// point cannot run (the runner reports it as not applicable).
pub fn point_machine(
    s: &Scenario,
    spec: &AlgoSpec,
    ranks: usize,
    bytes: u64,
) -> Result<(crate::topology::Proto, Box<dyn Topology>), String> {
    use crate::topology::{self, Proto};
    let proto = match spec.protocol {
        None => Proto::Simple,
        Some(choice) => {
            let t = topology::build(&s.topology, ranks)?;
            let avg = s.data.op == crate::sim::data::ReduceOp::Avg;
            choice.resolve(spec.collective, &spec.name, t.as_ref(), bytes, avg)?
        }
    };
    Ok((proto, topology::build_for_run(&s.topology, ranks, proto, s.network.is_flow())?))
}

/// Whether point `pt` of `s`'s timeline would certainly outgrow [`MAX_INTERVALS`]
/// ([`Planned::timeline_overflows`]).
pub fn timeline_overflows(s: &Scenario, pt: &Point) -> bool {
    Planned::new(s, pt, false).timeline_overflows()
}

/// Refuse the first point of `plans` whose data plane would need more than
/// `data.memory_budget`, with the figure and what to change.
pub fn check_budget(plans: &[Planned]) -> Result<(), String> {
    for pl in plans.iter().filter(|pl| pl.runs()) {
        let mode = pl.data_mode();
        let need = pl.data_bytes(mode);
        let s = pl.s;
        if need > s.data.memory_budget {
            let hint = if mode == DataMode::Full {
                "use data.mode: auto or sample, raise data.memory_budget, or use fewer ranks or smaller sizes"
            } else {
                "even a sample of every vector is too much: raise data.memory_budget, use data.mode: off, or fewer ranks"
            };
            let at =
                if s.data.budget_location.is_empty() { String::new() } else { format!("{}: ", s.data.budget_location) };
            return Err(format!(
                "{at}{}: the data plane would need about {} (data.mode: {}), more than data.memory_budget {}; {hint}",
                pl.label(),
                fmt_bytes(need),
                if mode == DataMode::Full { "full" } else { "sample" },
                fmt_bytes(s.data.memory_budget),
            ));
        }
    }
    Ok(())
}

/// The estimate of point `pt` of `s`; `single` when it is the only point of the run
/// (it then records its timeline whatever its rank count).
pub fn estimate(s: &Scenario, pt: &Point, single: bool) -> Estimate {
    Planned::new(s, pt, single).estimate()
}

/// A selector's point: the sum of the work of the algorithms it simulates
/// ([`crate::select::simulated_specs`]), the memory of the largest of them (each runs as
/// a point of its own, without a timeline).
fn selector_estimate(s: &Scenario, pt: &Point, mode: Option<DataMode>) -> Estimate {
    let mut out =
        Estimate { data_bytes: 0, engine_bytes: 0, timeline_bytes: 0, messages: 0, messages_exact: true, events: 0 };
    for spec in crate::select::simulated_specs(s, pt) {
        let mut one = s.clone();
        one.algorithms = vec![spec];
        let planned = Planned::new(&one, &Point { algo: 0, ranks: pt.ranks, bytes: pt.bytes }, false);
        // Each candidate decides the scenario's `auto` for itself.
        let e = mode.map_or_else(|| planned.estimate(), |m| planned.estimate_in(m));
        if e.data_bytes.saturating_add(e.engine_bytes) > out.data_bytes.saturating_add(out.engine_bytes) {
            (out.data_bytes, out.engine_bytes) = (e.data_bytes, e.engine_bytes);
        }
        out.messages = out.messages.saturating_add(e.messages);
        out.messages_exact &= e.messages_exact;
        out.events = out.events.saturating_add(e.events);
    }
    out
}

/// The memory this machine has for a run: `MemAvailable` of `/proc/meminfo`, bytes;
/// `None` where it cannot be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// A point's label in messages: `ring at P = 16, S = 1 GiB`.
pub fn label(s: &Scenario, pt: &Point) -> String {
    format!("{} at P = {}, S = {}", s.algorithms[pt.algo].name, pt.ranks, fmt_bytes(pt.bytes))
}

/// One line of figures: `memory about 32 GiB (data 32 GiB, engine 16 KiB, timeline 0 B); 480 messages, about 1440 events`.
pub fn describe(est: &Estimate) -> String {
    format!("memory about {} ({})", fmt_bytes(est.memory_bytes()), parts(est))
}

/// The parts of [`describe`]'s figure, and the work.
fn parts(est: &Estimate) -> String {
    // A saturated count is a floor, whatever the count's own qualifier.
    let count = |n: u64, qualifier: &str| {
        let qualifier = if n == u64::MAX { "more than " } else { qualifier };
        format!("{qualifier}{}", fmt_count(n))
    };
    format!(
        "data {}, engine {}, timeline {}; {} messages, {} events",
        fmt_bytes(est.data_bytes),
        fmt_bytes(est.engine_bytes),
        fmt_bytes(est.timeline_bytes),
        count(est.messages, if est.messages_exact { "" } else { "at most " }),
        count(est.events, "about ")
    )
}

/// A count as the estimate prints it: digits up to 10^15, past that in scientific
/// notation (`1.845e19`), so that no figure of 20 digits reads as a count that was
/// taken exactly, or a saturated one as a real one.
fn fmt_count(n: u64) -> String {
    if n < 1_000_000_000_000_000 { n.to_string() } else { format!("{:.3e}", n as f64) }
}

/// Refuse the first point of `plans` whose estimated memory is above `limit` bytes: the
/// message gives the figure, the limit and what to change. `source` says where the limit
/// came from (`MemAvailable`, `--max-memory`).
pub fn check_memory(plans: &[Planned], limit: u64, source: &str) -> Result<(), String> {
    for pl in plans {
        let est = pl.estimate();
        if est.memory_bytes() <= limit {
            continue;
        }
        let mut hint = Vec::new();
        for (mode, word) in [(DataMode::Sample, "sample"), (DataMode::Off, "off")] {
            let now = pl.data_mode();
            if now == mode || (now == DataMode::Off && mode == DataMode::Sample) {
                continue;
            }
            let need = pl.estimate_in(mode).memory_bytes();
            // A sample keeps 16 bytes for each element it tracks (full data 4) and tracks
            // a small vector whole: it can need more than full data, no way out then.
            if need >= est.memory_bytes() {
                continue;
            }
            let fits = if need <= limit { "fits" } else { "still too much" };
            hint.push(format!("data.mode: {word} needs about {} ({fits})", fmt_bytes(need)));
        }
        hint.push("or use fewer ranks (--ranks) or smaller sizes (--sizes)".to_string());
        return Err(format!(
            "{} would need about {} of memory ({}), more than the {} available ({source}); {}",
            pl.label(),
            fmt_bytes(est.memory_bytes()),
            parts(&est),
            fmt_bytes(limit),
            hint.join("; ")
        ));
    }
    Ok(())
}
