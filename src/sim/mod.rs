//! The event engine and the data plane.
//!
//! [`simulate`] runs one algorithm on one machine for one problem: it builds every
//! rank's program, fills the vectors, runs the [`engine::Engine`], and hands back the
//! engine's statistics and the final vectors.

pub mod data;
pub mod engine;
pub mod flow;
pub mod op;
pub mod queue;

use crate::algos::{Algorithm, Problem};
use crate::topology::Topology;
use data::{DataPlane, Finals, OpLog, ReduceOp, Vectors};
use engine::{Engine, EngineConfig, Observer, SimError, SimStats};
use flow::Sharing;
pub use op::{Action, Op, Program, Rank, Region};

/// What [`simulate`] hands back: the engine's statistics and, with data, every rank's
/// final vector.
pub type Outcome = (SimStats, Option<Finals>);

/// Run `algo` on `topo` for problem `p`. With `inputs` (one vector of `p.elems`
/// values per rank, of any element type), the data moves for real and the final vectors
/// are returned.
pub fn simulate<O: Observer>(
    algo: &dyn Algorithm,
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
pub fn simulate_with<O: Observer>(
    algo: &dyn Algorithm,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<Outcome, SimError> {
    simulate_on(algo, topo, p, cost_per_byte, Network::IDEAL, plane, obs)
}

/// The network model a run uses (`network:` in the scenario).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Network {
    /// `None`: the ideal model (docs/model.md); `Some`: the flow model,
    /// sharing links so.
    pub flow: Option<Sharing>,
    /// Bytes added to every message on the wire.
    pub envelope: u64,
}

impl Network {
    /// The ideal model, no envelope.
    pub const IDEAL: Network = Network { flow: None, envelope: 0 };
}

/// [`simulate_with`] on the network model `net`.
pub fn simulate_on<O: Observer>(
    algo: &dyn Algorithm,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<Outcome, SimError> {
    let (stats, plane) = run_engine(algo, topo, p, cost_per_byte, net, plane, obs)?;
    Ok((stats, plane.and_then(DataPlane::into_finals)))
}

/// [`simulate_on`] keeping a log of what the run did to the data instead of doing it
/// ([`OpLog`]): the data is generated, moved, reduced and checked afterwards, from the
/// log ([`data::verify_log`], [`OpLog::replay`]).
pub fn simulate_logged<O: Observer>(
    algo: &dyn Algorithm,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    obs: &mut O,
) -> Result<(SimStats, OpLog), SimError> {
    let plane = Some(|scratch: &[usize]| DataPlane::Log(OpLog::new(p.ranks, p.elems, scratch)));
    let (stats, plane) = run_engine(algo, topo, p, cost_per_byte, net, plane, obs)?;
    Ok((stats, plane.and_then(DataPlane::into_log).expect("the plane was built as a log")))
}

/// Run the engine; hand back its statistics and the data plane as the run left it.
fn run_engine<O: Observer>(
    algo: &dyn Algorithm,
    topo: &dyn Topology,
    p: Problem,
    cost_per_byte: f64,
    net: Network,
    plane: Option<impl FnOnce(&[usize]) -> DataPlane>,
    obs: &mut O,
) -> Result<(SimStats, Option<DataPlane>), SimError> {
    let scratch = algo.scratch(&p);
    let scratch_bytes = (scratch.iter().sum::<usize>() * p.elem_bytes) as u64;
    let cfg =
        EngineConfig { elem_bytes: p.elem_bytes, cost_per_byte, scratch_bytes, envelope: net.envelope, flow: net.flow };
    let programs = (0..p.ranks).map(|r| algo.program(r as Rank, p, topo));
    let mut plane = plane.map(|build| build(&scratch));
    let stats = Engine::new(topo, cfg, programs, plane.as_mut(), obs)?.run()?;
    Ok((stats, plane))
}
