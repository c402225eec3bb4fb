//! The event engine and the data plane.
//!
//! [`simulate`] runs one set of per-rank programs ([`Programs`]) on one machine for one
//! problem: it builds every rank's program, fills the vectors, runs the
//! [`engine::Engine`], and hands back the engine's statistics and the final vectors. The
//! engine knows no algorithm: every algorithm is [`Programs`] (`crate::algos` says so),
//! which keeps the arrows pointing from the algorithms down to the engine.

pub mod data;
pub mod engine;
pub mod network;
pub mod noise;
pub mod op;
pub mod proxy;
pub mod queue;

/// The flow model, where it has always been found.
pub use network::flow;
pub use network::{Model, Network};

use crate::topology::Topology;
use data::{DataPlane, Finals, OpLog, ReduceOp, Vectors};
use engine::{Engine, EngineConfig, Observer, SimError, SimStats};
use network::{NetworkModel, WithModel};
use noise::Noise;
pub use op::{Action, Op, Program, Rank, Region};

/// The problem a run solves: P ranks, n elements of e bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    /// P.
    pub ranks: usize,
    /// n, elements per rank.
    pub elems: usize,
    /// e, bytes per element.
    pub elem_bytes: usize,
}

impl Problem {
    /// S = n e, bytes per rank.
    pub fn bytes(&self) -> f64 {
        (self.elems * self.elem_bytes) as f64
    }
    /// Bytes in `elems` elements.
    pub fn b(&self, elems: usize) -> f64 {
        (elems * self.elem_bytes) as f64
    }
}

/// What the engine runs: every rank's program and the scratch buffers they name.
pub trait Programs {
    /// Rank `rank`'s program on `topo` (one or more concurrent streams).
    fn rank_program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>>;
    /// Elements of each scratch buffer every rank needs (buffer ids 1, 2, ...).
    fn scratch_elems(&self, p: &Problem) -> Vec<usize>;
    /// Whether ranks `P..2P` are switch agents ([`crate::topology::SwitchAgents`]) that run
    /// programs of their own ([`Programs::rank_program`] is asked for them too): the work
    /// an NVSwitch does itself, for NCCL's NVLS. Agents hold no vector, so such a run
    /// is timing only (no data plane, no noise).
    fn switch_agents(&self) -> bool {
        false
    }
}

/// What [`simulate`] hands back: the engine's statistics and, with data, every rank's
/// final vector.
pub type Outcome = (SimStats, Option<Finals>);

/// Run the programs of `algo` on `topo` for problem `p`. With `inputs` (one vector of `p.elems`
/// values per rank, of any element type), the data moves for real and the final vectors
/// are returned.
pub fn simulate<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    inputs: Option<(Vectors, ReduceOp)>,
    obs: &mut O,
) -> Result<Outcome, SimError> {
    let plane = inputs.map(|(v, op)| move |scratch: &[usize]| DataPlane::new(v, scratch, op));
    simulate_with(algo, topo, p, cost_per_byte, plane, obs)
}

/// [`simulate`] with the data plane `plane` builds from the algorithm's scratch buffer
/// sizes (a sampled one, [`DataPlane::sampled`], say); the vectors handed back are what
/// [`DataPlane::into_finals`] gives.
pub fn simulate_with<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<Outcome, SimError> {
    simulate_on(algo, topo, p, cost_per_byte, Network::IDEAL, plane, obs)
}

/// [`simulate_with`] on the network model `net`.
pub fn simulate_on<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<Outcome, SimError> {
    let (stats, plane) = simulate_noisy(algo, topo, p, cost_per_byte, net, None, plane, obs)?;
    Ok((stats, plane.and_then(DataPlane::into_finals)))
}

/// [`simulate_on`] under `noise` (docs/variability.md), handing back the data plane as
/// the run left it: its final vectors ([`DataPlane::into_finals`]) or, built by
/// [`log_plane`], its log ([`DataPlane::into_log`]).
#[allow(clippy::too_many_arguments)]
pub fn simulate_noisy<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    noise: Option<&Noise>,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<(SimStats, Option<DataPlane>), SimError> {
    let scratch = algo.scratch_elems(&p);
    let scratch_bytes = (scratch.iter().sum::<usize>() * p.elem_bytes) as u64;
    let cfg = EngineConfig { elem_bytes: p.elem_bytes, cost_per_byte, scratch_bytes, envelope: net.envelope };
    if algo.switch_agents() {
        return run_with_agents(algo, topo, p, cfg, net, noise, plane.is_some(), obs);
    }
    // A cluster's network proxy (inter.proxy): the pairs as the programs' connections
    // make them. Nothing is read or wrapped where the machine has none.
    let view = if topo.proxy() > 0.0 { proxy::ProxyView::of(algo, p, topo) } else { None };
    let topo: &dyn Topology = match &view {
        Some(v) => v,
        None => topo,
    };
    let mut plane = plane.map(|build| build(&scratch));
    let wants_loads = obs.wants_link_loads();
    let run = Run { algo, topo, p, cfg, plane: plane.as_mut(), obs, noise, programs_of: p };
    let stats = network::dispatch(&net, topo, wants_loads, noise, run)?;
    Ok((stats, plane))
}

/// A data plane that keeps a log of what the run did to the data of `p` instead of doing
/// it ([`OpLog`]): the data is generated, moved, reduced and checked afterwards, from the
/// log ([`data::verify_log`], [`OpLog::replay`]).
pub fn log_plane(p: Problem) -> impl FnOnce(&[usize]) -> DataPlane {
    move |scratch: &[usize]| DataPlane::Log(OpLog::new(p.ranks, p.elems, scratch))
}

/// [`simulate_on`] with a [`log_plane`]: the run's statistics and its log.
pub fn simulate_logged<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    obs: &mut O,
) -> Result<(SimStats, OpLog), SimError> {
    let (stats, plane) = simulate_noisy(algo, topo, p, cost_per_byte, net, None, Some(log_plane(p)), obs)?;
    Ok((stats, plane.and_then(DataPlane::into_log).expect("the plane was built as a log")))
}

/// [`simulate_noisy`] for programs with switch agents ([`Programs::switch_agents`]), with
/// the engine's configuration `cfg` as it made it: the machine seen with its agents, every rank's and agent's program, and the statistics of
/// the GPUs alone.
#[allow(clippy::too_many_arguments)]
fn run_with_agents<A: Programs + ?Sized, O: Observer>(
    algo: &A,
    topo: &dyn Topology,
    p: Problem,
    cfg: EngineConfig,
    net: Network,
    noise: Option<&Noise>,
    data: bool,
    obs: &mut O,
) -> Result<(SimStats, Option<DataPlane>), SimError> {
    if data || noise.is_some() {
        return Err(SimError::Unsupported(
            "the switch reduces and copies here, and holds no vector and no noise of its own: run with \
             data: { mode: off } and no noise"
                .to_string(),
        ));
    }
    let agents = crate::topology::SwitchAgents::new(topo).map_err(SimError::Unsupported)?;
    let wants_loads = obs.wants_link_loads();
    let seen = Problem { ranks: 2 * p.ranks, ..p };
    let obs = &mut GpusOnly { inner: obs, gpus: p.ranks as Rank };
    let run = Run { algo, topo: &agents, p: seen, cfg, plane: None, obs, noise: None, programs_of: p };
    let mut stats = network::dispatch(&net, &agents, wants_loads, None, run)?;
    stats.rank_finish.truncate(p.ranks);
    stats.bytes_sent.truncate(p.ranks);
    stats.bytes_received.truncate(p.ranks);
    Ok((stats, None))
}

/// An observer that sees what the GPUs do, not the switch agents: the messages between
/// two GPUs and the GPUs' reductions (the timelines and critical paths are per GPU).
struct GpusOnly<'o, O: Observer> {
    inner: &'o mut O,
    gpus: Rank,
}

impl<O: Observer> Observer for GpusOnly<'_, O> {
    fn message(&mut self, m: &engine::MessageInfo, start: f64, end: f64) {
        if m.src < self.gpus && m.dst < self.gpus {
            self.inner.message(m, start, end);
        }
    }
    fn message_end(&mut self, m: &engine::MessageInfo, end: f64) {
        if m.src < self.gpus && m.dst < self.gpus {
            self.inner.message_end(m, end);
        }
    }
    fn compute(&mut self, rank: Rank, bytes: u64, start: f64, end: f64) {
        if rank < self.gpus {
            self.inner.compute(rank, bytes, start, end);
        }
    }
    fn wants_link_loads(&self) -> bool {
        self.inner.wants_link_loads()
    }
    fn link_loads(&mut self, links: &[flow::LinkStat], loads: Vec<(u32, f64, f64)>) {
        self.inner.link_loads(links, loads);
    }
}

/// One engine run waiting for its network model ([`network::dispatch`]).
struct Run<'a, 'o, A: Programs + ?Sized, O: Observer> {
    algo: &'a A,
    topo: &'a dyn Topology,
    p: Problem,
    cfg: EngineConfig,
    plane: Option<&'a mut DataPlane>,
    obs: &'o mut O,
    noise: Option<&'a Noise>,
    /// The problem the programs are asked for (`p` but for switch agents, where `p`
    /// counts the agents too).
    programs_of: Problem,
}

impl<'a, A: Programs + ?Sized, O: Observer> WithModel<'a> for Run<'a, '_, A, O> {
    type Out = SimStats;
    fn run<N: NetworkModel + 'a>(self, model: N) -> Result<SimStats, SimError> {
        let Run { algo, topo, p, cfg, plane, obs, noise, programs_of } = self;
        let programs = (0..p.ranks).map(|r| algo.rank_program(r as Rank, programs_of, topo));
        Engine::new(topo, cfg, model, programs, plane, obs)?.with_noise(noise).run()
    }
}
