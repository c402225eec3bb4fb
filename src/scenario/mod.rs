//! The scenario: what the YAML file and the command-line flags say, validated into one
//! [`Scenario`] with units resolved before anything runs.
//!
//! [`parse_str`] (or [`load_file`]) turns text into a [`Scenario`] (or a located [`ScenarioError`]);
//! [`Overrides`] applies the `run` flags on top.

pub mod limits;
mod parse;

/// The machine as written lives with the topologies it builds; these paths still name it.
pub use crate::topology::spec::{EdgeSpec, GraphLinkSpec, GraphNodeSpec, LevelSpec, NodeKind, NodeSpec, TopologySpec};
pub use parse::{MAX_SCENARIO_BYTES, Overrides, SNIPPET_WIDTH, ScenarioError, load_file, parse_str};

use serde::{Deserialize, Serialize};

pub use crate::collective::Collective;
use crate::results::{Point, Shard};
use crate::sim::data::{Init, ReduceOp};
/// Units and parameter values live below every module that reads them; these paths still name them.
pub use crate::units::{self, ParamValue};

/// A validated scenario. Every field is resolved to base units (seconds, bytes,
/// bytes per second); the run needs nothing else.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Scenario {
    /// Display name (`name:` or the file stem).
    pub name: String,
    /// Seed for the data (`seed:`, default 0).
    pub seed: u64,
    /// Rank counts to run (a sweep when more than one).
    pub ranks: Vec<usize>,
    /// The machine.
    pub topology: TopologySpec,
    /// Seconds per byte reduced (`compute.cost_per_byte`, C).
    pub cost_per_byte: f64,
    /// The network model.
    pub network: NetworkSpec,
    /// The data plane.
    pub data: DataSpec,
    /// The collective (`collective:`); each algorithm entry runs this one unless it
    /// names its own ([`AlgoSpec::collective`]).
    pub collective: Collective,
    /// Algorithms to run, in the order given.
    pub algorithms: Vec<AlgoSpec>,
    /// Bytes per rank (S) to run; each a whole number of elements.
    pub sizes: Vec<u64>,
    /// Which checks decide the exit status.
    pub check: CheckSpec,
    /// Variability (`noise:`, docs/variability.md); `None`: a perfect machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<crate::sim::noise::NoiseSpec>,
    /// Seeds per point (`repeat:`); `None`: one run, no spread reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// The host threads that issue the collective (`host:`); `None`: issue costs
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSpec>,
    /// Where the file gives `topology:` (`file:line:column`), for messages about the
    /// machine outside the parser (`explain --scenario`); empty where no file gave it.
    #[serde(skip)]
    pub topology_location: String,
}

/// `host: { issue: 4.4us, gpus_per_thread: 4 }`: what the CPU side of a call costs.
///
/// A host thread that drives several GPUs (nccl-tests' `-g`, a single-process job)
/// enqueues the call on each of its GPUs in turn, `issue` seconds of its time each, so
/// calls made back to back, as a benchmark makes them, cannot come faster than one per
/// `gpus_per_thread x issue` however quickly the GPUs finish: a point's time is the
/// larger of the two ([`HostSpec::floor`]; docs/gpu-clusters.md, "Host threads").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    /// Seconds of a host thread's time to issue one call on one GPU.
    pub issue_s: f64,
    /// GPUs (ranks) each host thread drives.
    pub gpus_per_thread: usize,
}

impl HostSpec {
    /// The shortest time between back-to-back calls on `ranks` ranks: the thread's
    /// GPUs (at most the ranks that run) times the issue cost.
    pub fn floor(&self, ranks: usize) -> f64 {
        self.gpus_per_thread.min(ranks) as f64 * self.issue_s
    }
}

impl Scenario {
    /// Every point, in sweep order. A barrier moves no data, so it runs once per rank
    /// count, with the first size, not once per size.
    pub fn points(&self) -> Vec<Point> {
        self.each_point().collect()
    }

    /// [`Scenario::points`], one at a time: counting a sweep of millions of points
    /// ([`Scenario::point_count`]) takes no memory.
    pub fn each_point(&self) -> impl Iterator<Item = Point> + '_ {
        self.ranks.iter().flat_map(move |&ranks| {
            self.sizes.iter().enumerate().flat_map(move |(i, &bytes)| {
                self.algorithms
                    .iter()
                    .enumerate()
                    .filter(move |(_, spec)| i == 0 || spec.collective.has_data())
                    .map(move |(algo, _)| Point { algo, ranks, bytes })
            })
        })
    }

    /// How many points shard `shard` of the sweep runs ([`Scenario::points_of`]'s
    /// length), without listing them.
    pub fn point_count(&self, shard: Option<Shard>) -> usize {
        self.each_point_of(shard).count()
    }

    /// The points shard `shard` of the sweep runs (every point without one), in sweep
    /// order: the one filter `run`, its memory check and the Python module share.
    pub fn points_of(&self, shard: Option<Shard>) -> Vec<Point> {
        self.each_point_of(shard).collect()
    }

    /// [`Scenario::points_of`], one at a time.
    fn each_point_of(&self, shard: Option<Shard>) -> impl Iterator<Item = Point> + '_ {
        let all = self.each_point().enumerate();
        all.filter(move |(i, _)| shard.is_none_or(|sh| sh.contains(*i))).map(|(_, p)| p)
    }
}

/// `network:`: the engine's own representation ([`crate::sim::Network`]), which the
/// parser fills in and the report prints and serialises as it is.
pub use crate::sim::Network as NetworkSpec;
/// `network.model` with its parameters.
pub use crate::sim::network::Model as NetworkModel;

pub use crate::sim::data::Dtype;

/// Whether real data moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataMode {
    /// `full` while every rank's vector and the reference fit `data.memory_budget`,
    /// `sample` beyond (decided point by point; the report says which ran).
    Auto,
    /// Real vectors, real reductions, every element checked.
    Full,
    /// Real reductions of a sample of every vector's elements
    /// ([`crate::sim::data::sample_positions`]: all of them up to 3072, else about
    /// 3000 spread evenly), each bit for bit what a full run gives it, all checked. Memory
    /// and time per element tracked, not per element of the vector: for runs too large
    /// for `full`.
    Sample,
    /// Timing only: nothing is allocated per element.
    Off,
}

/// `data:`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DataSpec {
    /// Element type.
    pub dtype: Dtype,
    /// Reduction operator.
    pub op: ReduceOp,
    /// Initial values.
    pub init: Init,
    /// Auto, full, sample or off.
    pub mode: DataMode,
    /// Bytes the data plane of one point may hold (`data.memory_budget`, default 2 GiB):
    /// `auto` samples beyond it, and a point that would need more is refused.
    pub memory_budget: u64,
    /// `file:line:column` of `data.memory_budget` (of `data:` where the budget is the
    /// default; empty with neither), for the refusal of a point the budget cannot hold.
    #[serde(skip)]
    pub budget_location: String,
}

/// The default `data.memory_budget`: 2 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 2 << 30;

/// `check:`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckSpec {
    /// A missed closed form (relative error above its tolerance) fails the run.
    pub closed_form: bool,
    /// Ranks that do not end bit-identical fail the run (`check.bitwise`, default false).
    #[serde(default)]
    pub bitwise: bool,
}

/// One entry of `algorithms:`: a name and its parameters, with where it was written.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AlgoSpec {
    /// Algorithm id (`ring`, `butterfly`, ...).
    pub name: String,
    /// The collective it runs: the entry's `collective:`, else the scenario's.
    #[serde(default = "allreduce")]
    pub collective: Collective,
    /// Parameters as written (`segment: 256KiB`), in file order.
    pub params: Vec<(String, ParamValue)>,
    /// `file:line:column` of the entry, for messages (empty when from a flag).
    #[serde(skip)]
    pub location: String,
    /// NCCL's protocol the entry's messages move with (`protocol:`, docs/gpu-clusters.md);
    /// `None` is Simple, written as nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProtocolChoice>,
}

/// `protocol:` of an algorithm entry (written by name: `simple`, `ll`, `ll128`, `auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// One protocol for every point.
    Fixed(crate::topology::Proto),
    /// At each point, the protocol NCCL's model ranks first for the entry's algorithm.
    Auto,
}

impl Serialize for ProtocolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ProtocolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        ProtocolChoice::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown protocol '{name}'")))
    }
}

impl ProtocolChoice {
    /// The label of a row whose algorithm's own label is `label` and whose entry names
    /// `protocol`: `ring(protocol=ll)`, `ring_segmented(segment=262144, protocol=ll)`.
    /// An algorithm that takes the protocol as a parameter (`nccl_ring`, `nccl_tree`)
    /// names it already, and leaves Simple, its default, out; the entry's Simple is
    /// still written, so a row says which protocol its links cost. The runner labels
    /// rows with this and the selectors find the rows they asked for by it.
    pub fn label(label: String, protocol: Option<ProtocolChoice>) -> String {
        let Some(p) = protocol else { return label };
        if label.contains("protocol=") {
            return label;
        }
        match label.strip_suffix(')') {
            Some(open) if open.contains('(') => format!("{open}, protocol={})", p.name()),
            _ => format!("{label}(protocol={})", p.name()),
        }
    }
    /// The choice named `name`, if any.
    pub fn from_name(name: &str) -> Option<ProtocolChoice> {
        if name == "auto" {
            Some(ProtocolChoice::Auto)
        } else {
            crate::topology::Proto::from_name(name).map(ProtocolChoice::Fixed)
        }
    }
    /// NCCL's algorithm that our algorithm `name` of collective `c` runs, for `auto`: an
    /// algorithm NCCL's model weighs for `c` whose counterpart is `name`
    /// ([`crate::selectors::nccl::Algo::ours`]), or NCCL's own by name (`nccl_ring`,
    /// `nccl_tree`, `pat`).
    pub fn nccl_algo(c: Collective, name: &str) -> Option<crate::selectors::nccl::Algo> {
        use crate::selectors::nccl::{self, Algo};
        let own = match name {
            "nccl_ring" => Some(Algo::Ring),
            "nccl_tree" => Some(Algo::Tree),
            "pat" => Some(Algo::Pat),
            "nvls" => Some(Algo::Nvls),
            _ => None,
        };
        own.filter(|a| nccl::algorithms(c).contains(a))
            .or_else(|| nccl::algorithms(c).iter().copied().find(|a| a.ours(c) == name || a.textbook(c) == name))
    }

    /// The protocol a point runs with: the fixed one, or for `auto` the one NCCL's model
    /// ranks first for `name` at `ranks` ranks and `bytes` bytes on `topo` (NCCL's model
    /// with the defaults of `nccl_model`'s parameters).
    pub fn resolve(
        self,
        c: Collective,
        name: &str,
        topo: &dyn crate::topology::Topology,
        bytes: u64,
        avg: bool,
    ) -> Result<crate::topology::Proto, String> {
        use crate::selectors::nccl;
        let ProtocolChoice::Fixed(p) = self else {
            let algo = ProtocolChoice::nccl_algo(c, name)
                .ok_or_else(|| format!("protocol: auto: NCCL has no counterpart of '{name}'"))?;
            let np = crate::selectors::selector_params("nccl_model", &[]).map_err(|e| e.message)?;
            let mut x = nccl::Inputs { avg, ..nccl::Inputs::of(topo, np.channels, np.arch) };
            if let Some((nodes, gpus)) = topo.node_shape() {
                let gbps = |b: f64| b / 1e9;
                let ranks = topo.ranks();
                let intra = if gpus > 1 { topo.link(0, 1) } else { topo.best_link().0 };
                let inter = if nodes > 1 { topo.link(0, gpus) } else { intra };
                x.nodes = nodes;
                x.bw_intra = gbps(intra.bandwidth);
                x.bw_inter = gbps(inter.bandwidth);
                x.ranks = ranks;
            }
            return nccl::best_protocol(&x, c, algo, bytes)
                .map(|(p, _)| p)
                .ok_or_else(|| format!("protocol: auto: NCCL's model has no protocol for {name} here"));
        };
        Ok(p)
    }

    /// The name as written (`simple`, `ll`, `ll128`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            ProtocolChoice::Fixed(p) => p.name(),
            ProtocolChoice::Auto => "auto",
        }
    }
}

fn allreduce() -> Collective {
    Collective::Allreduce
}
