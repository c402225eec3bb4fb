//! Network models: what happens to a message between the moment it takes its ports and
//! the moment it is delivered.
//!
//! The engine ([`super::engine`]) owns everything a program sees: matching sends to
//! receives, ports and the order they are handed out in, the compute unit, handles and
//! waits. A [`NetworkModel`] owns only the wire. The seam between the two:
//!
//! - **Start.** When a message has taken one outgoing port of its sender's interface and
//!   one incoming port of its receiver's (in the order `(issue time, sender rank,
//!   sender's issue sequence)`, the engine's rule for every model), the engine calls
//!   [`NetworkModel::start`]. The model must schedule the message's delivery through the
//!   [`Sched`] it is handed, now or later (at the latest from a later hook), exactly once
//!   per generation it hands out.
//! - **Per-event hooks.** A model may schedule events of its own ([`Sched::later`]); the
//!   engine hands each back to [`NetworkModel::event`] when its time comes, in the event
//!   queue's order `(time, insertion sequence)`.
//! - **Delivery.** A delivery event whose generation [`NetworkModel::current`] denies is
//!   skipped (a model that moves a delivery schedules it again under a new generation).
//!   On a current one the engine frees both ports, tells [`NetworkModel::delivered`], and
//!   hands the message to its receive.
//! - **Settle.** Once per instant, after every event of the instant ran and the ports were
//!   handed out, [`NetworkModel::settle`] may move deliveries (the flow model recomputes
//!   its rates there).
//! - **Statistics.** After the run, [`NetworkModel::into_stats`].
//!
//! Invariants the engine relies on: a model never delivers a message before it started,
//! never schedules anything in the past, and answers from its own state only (no hash
//! order, no clock), so that a run is deterministic. The engine is generic over the
//! model, so the ideal model's hooks compile to nothing.
//!
//! The models: [`ideal`] (docs/model.md) and [`flow`] (docs/flow-model.md). A new
//! model is a file here, a variant of [`Model`] and a line in [`dispatch`].

pub mod flow;
pub mod ideal;

use super::engine::{EvKind, Observer, SimError};
use super::noise::Noise;
use super::queue::EventQueue;
use crate::topology::{Link, Topology};
use flow::{FlowNet, FlowStats, Sharing};

/// The network a run uses (`network:` in the scenario), as the engine takes it.
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

    /// Which model it runs.
    pub fn model(&self) -> Model {
        match self.flow {
            None => Model::Ideal,
            Some(sharing) => Model::Flow(sharing),
        }
    }
}

/// The models, by name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    /// [`ideal`].
    Ideal,
    /// [`flow`], sharing links so.
    Flow(Sharing),
}

/// A message that has just taken its ports.
#[derive(Clone, Copy, Debug)]
pub struct Start {
    /// The engine's id of the message (its slab index while in flight).
    pub id: u32,
    /// Sender.
    pub src: u32,
    /// Receiver.
    pub dst: u32,
    /// Bytes on the wire (payload and envelope).
    pub wire: u64,
    /// The pair's cost alone ([`Topology::link`]).
    pub link: Link,
    /// Now.
    pub now: f64,
}

/// The engine's event queue as a model may use it.
pub struct Sched<'q> {
    pub(super) events: &'q mut EventQueue<EvKind>,
}

impl Sched<'_> {
    /// Deliver message `id` at `time` unless [`NetworkModel::current`] says `generation`
    /// is stale by then.
    #[inline]
    pub fn deliver(&mut self, time: f64, id: u32, generation: u32) {
        self.events.push(time, EvKind::MsgDone(id, generation));
    }

    /// Hand `(id, what)` back to [`NetworkModel::event`] at `time`.
    #[inline]
    pub fn later(&mut self, time: f64, id: u32, what: u32) {
        self.events.push(time, EvKind::Net(id, what));
    }
}

/// A network model behind the engine (see the module docs for the contract).
pub trait NetworkModel {
    /// Whether [`NetworkModel::start`]'s answer is the delivery time; if not, the
    /// observer learns it at delivery ([`Observer::message_end`]).
    const END_AT_START: bool;

    /// Message `s.id` took its ports: schedule its delivery. Returns its delivery time if
    /// known now (infinite otherwise).
    fn start(&mut self, s: &Start, q: &mut Sched<'_>) -> f64;

    /// Whether a delivery scheduled under `generation` still stands.
    #[inline]
    fn current(&self, _id: u32, _generation: u32) -> bool {
        true
    }

    /// Whether an event the model scheduled with [`Sched::later`] still stands; the
    /// engine skips one that does not, as a stale delivery (its time is not the run's).
    #[inline]
    fn current_event(&self, _id: u32, _what: u32) -> bool {
        true
    }

    /// After the run: the messages a link fault left without a route, if any (the run
    /// then ends as [`SimError::CutOff`]).
    fn take_cut(&mut self) -> Option<Vec<flow::CutFlow>> {
        None
    }

    /// An event the model scheduled with [`Sched::later`].
    #[inline]
    fn event(&mut self, _id: u32, _what: u32, _now: f64, _q: &mut Sched<'_>) {}

    /// Message `id` is delivered at `now` (its ports are free again).
    #[inline]
    fn delivered(&mut self, _id: u32, _now: f64) {}

    /// Once per instant, after its events and the handing out of ports.
    #[inline]
    fn settle(&mut self, _now: f64, _q: &mut Sched<'_>) {}

    /// After the run: what the model reports, handing `obs` what it asked for.
    fn into_stats<O: Observer>(self, obs: &mut O) -> Option<FlowStats>;
}

/// Something to run with whichever model a [`Network`] names ([`dispatch`]): a generic
/// closure, which Rust spells as a trait.
pub trait WithModel<'a> {
    /// What the run gives back.
    type Out;
    /// Run with `model`.
    fn run<N: NetworkModel + 'a>(self, model: N) -> Result<Self::Out, SimError>;
}

/// Build the model `net` names on `topo` and hand it to `f`: the one place that knows
/// every model.
pub fn dispatch<'a, F: WithModel<'a>>(
    net: &Network,
    topo: &'a dyn Topology,
    wants_loads: bool,
    noise: Option<&'a Noise>,
    f: F,
) -> Result<F::Out, SimError> {
    match net.model() {
        Model::Ideal => f.run(ideal::Ideal),
        Model::Flow(sharing) => {
            let fabric = topo.fabric().ok_or_else(|| {
                SimError::Unsupported(format!("{} has no physical links for the flow model", topo.describe()))
            })?;
            let mut model = FlowNet::new(fabric, sharing);
            if wants_loads {
                model.record_loads();
            }
            if let Some(n) = noise {
                model.set_noise(n);
            }
            f.run(model)
        }
    }
}
