//! Network models: what happens to a message between the moment its sender issues it and
//! the moment it is delivered.
//!
//! The engine ([`super::engine`]) owns everything a program sees: matching sends to
//! receives, ports and the order they are handed out in, the compute unit, handles and
//! waits. A [`NetworkModel`] owns the wire, and says what a message costs its ends. The
//! seam between the two:
//!
//! - **Issue.** When a rank issues a send, a model with [`NetworkModel::HOST`] may charge
//!   the sender's compute unit first ([`NetworkModel::send_overhead`], in line with its
//!   reductions) and may hold the message until its receiver has posted the matching
//!   receive ([`NetworkModel::rendezvous`]). Only then does it wait for ports.
//! - **Start.** When a message has taken one outgoing port of its sender's interface and
//!   one incoming port of its receiver's (in the order `(issue time, sender rank,
//!   sender's issue sequence)`, the engine's rule for every model), the engine calls
//!   [`NetworkModel::start`]. The model must schedule the message's delivery through the
//!   [`Sched`] it is handed, now or later (at the latest from a later hook), exactly once
//!   per generation it hands out.
//! - **Port release.** A model with [`NetworkModel::HOLDS_PORTS`] keeps a message's ports
//!   until it is delivered; one without frees them itself ([`Sched::free_ports`]), exactly
//!   once per message, at any time from its start on (LogGP's gap).
//! - **Per-event hooks.** A model may schedule events of its own ([`Sched::later`]); the
//!   engine hands each back to [`NetworkModel::event`] when its time comes, in the event
//!   queue's order `(time, insertion sequence)`.
//! - **Delivery.** A delivery event whose generation [`NetworkModel::current`] denies is
//!   skipped (a model that moves a delivery schedules it again under a new generation).
//!   On a current one the engine frees both ports (if the model holds them to delivery),
//!   tells [`NetworkModel::delivered`], charges the receiver's compute unit what
//!   [`NetworkModel::recv_overhead`] says (with [`NetworkModel::HOST`]), and then hands
//!   the message to its receive.
//! - **Settle.** Once per instant, after every event of the instant ran and the ports were
//!   handed out, [`NetworkModel::settle`] may move deliveries (the flow model recomputes
//!   its rates there).
//! - **Statistics.** After the run, [`NetworkModel::into_stats`].
//!
//! Invariants the engine relies on: a model never delivers a message before it started,
//! never schedules anything in the past, and answers from its own state only (no hash
//! order, no clock), so that a run is deterministic. The engine is generic over the
//! model and reads the associated constants at compile time, so the ideal model's hooks
//! compile to nothing and a model without [`NetworkModel::HOST`] pays nothing for it.
//!
//! The models: [`ideal`] (docs/model.md; with `latency: pipelined` a second model,
//! [`ideal::Pipelined`]), [`flow`] (docs/flow-model.md) and [`loggp`]
//! (docs/loggp.md). A new model is a file here, a variant of [`Model`] (with its name in
//! the scenario file, [`Network`]'s serialised form) and a line in [`dispatch`]; the
//! engine is not touched.

pub mod flow;
pub mod ideal;
pub mod loggp;

use serde::{Deserialize, Serialize};

use super::engine::{EvKind, Observer, SimError};
use super::noise::Noise;
use super::queue::EventQueue;
use crate::topology::{Link, Topology};
use flow::{FlowNet, FlowStats, Sharing};
use ideal::Latency;
use loggp::{LogGP, LogGPNet};

/// The network a run uses (`network:` in the scenario): the one representation from the
/// scenario file (which parses into it) through the report (which prints and serialises
/// it) to the engine ([`dispatch`] builds the model it names).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "Fields", try_from = "Fields")]
pub struct Network {
    /// Which model carries the messages, with its parameters.
    pub model: Model,
    /// Bytes added to every message on the wire (`network.envelope`).
    pub envelope: u64,
}

impl Default for Network {
    fn default() -> Self {
        Network::IDEAL
    }
}

impl Network {
    /// The ideal model, no envelope.
    pub const IDEAL: Network = Network { model: Model::Ideal, envelope: 0 };

    /// The flow model sharing links so, no envelope.
    pub fn flow(sharing: Sharing) -> Network {
        Network { model: Model::Flow(sharing), envelope: 0 }
    }

    /// Whether it is the flow model (whose machines are graphs of links).
    pub fn is_flow(&self) -> bool {
        matches!(self.model, Model::Flow(_))
    }

    /// Whether it is the ideal model with `latency: pipelined` (ports held for a
    /// message's bytes only), under which the closed forms and bounds, which hold ports
    /// for `alpha` too, are not claimed.
    pub fn is_pipelined(&self) -> bool {
        matches!(self.model, Model::Pipelined)
    }

    /// LogGP's parameters, under the LogGP model.
    pub fn loggp(&self) -> Option<&LogGP> {
        match &self.model {
            Model::LogGP(l) => Some(l),
            _ => None,
        }
    }

    /// The model's name in the scenario file (`network.model`).
    pub fn name(&self) -> &'static str {
        match self.model {
            Model::Ideal | Model::Pipelined => "ideal",
            Model::Flow(_) => "flow",
            Model::LogGP(_) => "loggp",
        }
    }
}

/// The models, with their parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    /// [`ideal`], a message holding its ports until it is delivered
    /// (`latency: holds_ports`, the default).
    Ideal,
    /// [`ideal`] with `latency: pipelined`: a message holds its ports for its bytes only.
    Pipelined,
    /// [`flow`], sharing links so.
    Flow(Sharing),
    /// [`loggp`], with these parameters.
    LogGP(LogGP),
}

/// [`Network`] as the report writes it: `{model, sharing, envelope}` as it always was
/// (`sharing` is `weighted` where the model shares nothing), and `loggp` with LogGP's
/// parameters under that model only, and `latency` only where it is `pipelined`, so that
/// every other scenario's output is unchanged.
#[derive(Serialize, Deserialize)]
struct Fields {
    model: Name,
    sharing: Sharing,
    envelope: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    loggp: Option<LogGP>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency: Option<Latency>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Name {
    Ideal,
    Flow,
    Loggp,
}

impl From<Network> for Fields {
    fn from(n: Network) -> Fields {
        let (model, sharing, loggp) = match n.model {
            Model::Ideal | Model::Pipelined => (Name::Ideal, Sharing::Weighted, None),
            Model::Flow(s) => (Name::Flow, s, None),
            Model::LogGP(l) => (Name::Loggp, Sharing::Weighted, Some(l)),
        };
        let latency = matches!(n.model, Model::Pipelined).then_some(Latency::Pipelined);
        Fields { model, sharing, envelope: n.envelope, loggp, latency }
    }
}

impl TryFrom<Fields> for Network {
    type Error = String;
    fn try_from(f: Fields) -> Result<Network, String> {
        let model = match (f.model, f.loggp) {
            (Name::Ideal, None) if f.latency == Some(Latency::Pipelined) => Model::Pipelined,
            (Name::Ideal, None) => Model::Ideal,
            (_, _) if f.latency == Some(Latency::Pipelined) => {
                return Err("latency: pipelined applies only to model ideal".to_string());
            }
            (Name::Flow, None) => Model::Flow(f.sharing),
            (Name::Loggp, Some(l)) => Model::LogGP(l),
            (Name::Loggp, None) => return Err("model loggp needs its parameters (loggp)".to_string()),
            (_, Some(_)) => return Err("loggp parameters apply only to model loggp".to_string()),
        };
        Ok(Network { model, envelope: f.envelope })
    }
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
    /// The sender's stream it was sent from.
    pub stream: u16,
    /// When its sender issued it.
    pub issued: f64,
    /// Bytes on the wire (payload and envelope).
    pub wire: u64,
    /// The pair's cost alone ([`Topology::link`]).
    pub link: Link,
    /// Now.
    pub now: f64,
    /// The interfaces whose ports it holds, its sender's and its receiver's (what
    /// [`Sched::free_ports`] takes).
    pub ports: (u32, u32),
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

    /// Free the ports [`Start::ports`] names at `time` (models without
    /// [`NetworkModel::HOLDS_PORTS`] only; by interface, as the message's slot may be
    /// reused by then).
    #[inline]
    pub fn free_ports(&mut self, time: f64, ports: (u32, u32)) {
        self.events.push(time, EvKind::Ports(ports.0, ports.1));
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

    /// Whether a message holds its ports until it is delivered (the engine frees them
    /// then); if not, [`NetworkModel::start`] schedules their release with
    /// [`Sched::free_ports`].
    const HOLDS_PORTS: bool = true;

    /// Whether the model charges the ranks' compute units or holds messages for their
    /// receives: only then does the engine ask [`NetworkModel::send_overhead`],
    /// [`NetworkModel::recv_overhead`] and [`NetworkModel::rendezvous`].
    const HOST: bool = false;

    /// Whether nothing of the model's depends on a message's slot number or on when a
    /// waiting message entered the engine's lists, only on the messages it is handed
    /// and when: then the engine may keep a rank's sends behind its busy ports, and the
    /// receives a busy rank posts before their messages, as records, not slots
    /// ([`crate::sim::engine`]'s deferred sends and early receives).
    const LAZY_SENDS: bool = false;

    /// Seconds the sender's compute unit spends on a message of `wire` bytes before it
    /// may wait for ports (in line with the rank's reductions).
    #[inline]
    fn send_overhead(&self, _wire: u64) -> f64 {
        0.0
    }

    /// Seconds the receiver's compute unit spends on a delivered message of `wire` bytes
    /// before its receive may have it.
    #[inline]
    fn recv_overhead(&self, _wire: u64) -> f64 {
        0.0
    }

    /// Whether a message of `wire` bytes waits for its receiver to post the matching
    /// receive before it may wait for ports.
    #[inline]
    fn rendezvous(&self, _wire: u64) -> bool {
        false
    }

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
    let (channel, inter) = (topo.channel_bandwidth(), topo.inter_channel_bandwidth());
    let rated = topo.channel_rated();
    // Without a rate of its own across nodes a message there keeps the channel's rate,
    // which applies to every link.
    let inter = if inter.is_finite() { inter } else { channel };
    if rated && !matches!(net.model, Model::Ideal | Model::Pipelined) {
        return Err(SimError::Unsupported(format!(
            "{}: channel_bandwidth and inter.channel_bandwidth are modelled under network model ideal \
             only, not {}; leave them out or use model: ideal",
            topo.describe(),
            net.name()
        )));
    }
    let gpus = topo.node_shape().map_or(usize::MAX, |(_, g)| g);
    match net.model {
        Model::Ideal if rated => f.run(ideal::Channels::<false>::with_nodes(channel, inter, gpus)),
        Model::Pipelined if rated => f.run(ideal::Channels::<true>::with_nodes(channel, inter, gpus)),
        Model::Ideal => f.run(ideal::Ideal),
        Model::Pipelined => f.run(ideal::Pipelined),
        Model::LogGP(params) => f.run(LogGPNet::new(params)),
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
