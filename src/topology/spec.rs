//! The machine as the scenario writes it ([`TopologySpec`]), before the rank count is
//! fixed: its kinds, the parts that are lists (hierarchy levels, the nodes and links of
//! custom and graph machines), and what it says about the rank count. [`super::build`]
//! turns it into a topology; it sits here, below the scenario, so that building a
//! topology needs nothing of the scenario.

use serde::{Deserialize, Serialize};

use super::{Link, Placement, RankOrder};

/// The interconnect as the scenario describes it (before ranks are fixed).
// One per scenario, read once when the machine is built: a cluster's larger spec inline
// costs nothing that matters, and boxing it would change every place that matches it.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TopologySpec {
    /// One link class between every pair of ranks.
    FullyConnected {
        /// Latency and bandwidth.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        link: Link,
        /// Ports per rank.
        nics: u32,
    },
    /// Levels, innermost first; two ranks talk at the level of their innermost common
    /// group ([`super::Hierarchical`]).
    Hierarchical {
        /// The levels, innermost first.
        levels: Vec<LevelSpec>,
        /// Ports of every rank that leads no group whose level sets its own.
        nics: u32,
    },
    /// A `rows x cols` grid with wrap-around links, row-major ([`super::Grid`]).
    Torus2d {
        /// `[rows, cols]`; without it each rank count is laid out as squarely as it divides.
        dims: Option<[usize; 2]>,
        /// The link between neighbours; `h` hops cost `h alpha + m / B`.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        link: Link,
        /// Ports per rank.
        nics: u32,
    },
    /// A `rows x cols` grid without wrap-around links, row-major.
    Mesh2d {
        /// `[rows, cols]`; without it each rank count is laid out as squarely as it divides.
        dims: Option<[usize; 2]>,
        /// The link between neighbours; `h` hops cost `h alpha + m / B`.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        link: Link,
        /// Ports per rank.
        nics: u32,
    },
    /// A ring: rank r is next to r - 1 and r + 1 (mod P).
    Ring {
        /// The link between neighbours; `h` hops cost `h alpha + m / B`.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        link: Link,
        /// Ports per rank.
        nics: u32,
    },
    /// Nodes and links listed by hand, every node a rank, routed by fewest hops: a
    /// [`super::Graph`] of hosts only ([`super::Graph::custom`]).
    Custom {
        /// The nodes, in rank order.
        nodes: Vec<NodeSpec>,
        /// The undirected links between them.
        links: Vec<EdgeSpec>,
        /// Ports of every node that does not set its own.
        nics: u32,
    },
    /// Hosts and switches joined by full-duplex links, ranks placed on hosts, routed by
    /// fewest hops ([`super::Graph`]).
    Graph {
        /// The nodes, in the order that breaks ties between routes.
        nodes: Vec<GraphNodeSpec>,
        /// The undirected links between them.
        links: Vec<GraphLinkSpec>,
        /// Which hosts the ranks run on.
        placement: Placement,
        /// Ports of every host that does not set its own.
        nics: u32,
    },
    /// A two-tier fat tree: hosts under leaf switches, every leaf linked to every spine
    /// ([`super::FatTree`]).
    FatTree {
        /// Hosts under each leaf.
        hosts_per_leaf: usize,
        /// Leaf switches.
        leaves: usize,
        /// Spine switches.
        spines: usize,
        /// Each host's link to its leaf.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        link: Link,
        /// Each leaf's link to each spine.
        #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
        uplink: Link,
        /// The order of hosts the ranks take.
        placement: RankOrder,
        /// Ports per host.
        nics: u32,
    },
    /// GPU nodes joined inside by NVSwitch, PCIe or NVLink and across by NICs on rails
    /// ([`super::Cluster`], docs/gpu-clusters.md).
    Cluster(super::ClusterSpec),
}

/// A link as a report writes it: `alpha_s` and `bandwidth_Bps`, the units in the names.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkRepr {
    alpha_s: f64,
    #[serde(rename = "bandwidth_Bps")]
    bandwidth_bps: f64,
}

impl From<&Link> for LinkRepr {
    fn from(l: &Link) -> Self {
        LinkRepr { alpha_s: l.alpha, bandwidth_bps: l.bandwidth }
    }
}

impl From<LinkRepr> for Link {
    fn from(r: LinkRepr) -> Self {
        Link { alpha: r.alpha_s, bandwidth: r.bandwidth_bps }
    }
}

fn ser_link<S: serde::Serializer>(l: &Link, s: S) -> Result<S::Ok, S::Error> {
    LinkRepr::from(l).serialize(s)
}

/// The inverse of [`ser_link`], so that a report's scenario reads back (`merge`).
fn de_link<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Link, D::Error> {
    LinkRepr::deserialize(d).map(Link::from)
}

/// One level of a hierarchical topology (`levels:` entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelSpec {
    /// The level's name (`nvlink`, `leaf`), or `level I` when none is given.
    pub name: String,
    /// Groups of the level below (ranks, for the innermost) in one group of this level.
    pub size: usize,
    /// Latency and bandwidth between ranks whose innermost common group is at this level.
    #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
    pub link: Link,
    /// Ports of the first rank of each group of this level, if given.
    pub nics: Option<u32>,
}

/// One node of a custom topology (`nodes:` entry): a rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// The name links refer to it by.
    pub name: String,
    /// Its ports, if not the topology's `nics`.
    pub nics: Option<u32>,
}

/// One undirected link of a custom topology (`links:` entry), by node index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgeSpec {
    /// One end (index into `nodes`).
    pub from: usize,
    /// The other end.
    pub to: usize,
    /// Latency and bandwidth of this hop.
    #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
    pub link: Link,
}

/// Whether a graph node runs a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Runs a rank (if the placement puts one there) and may forward.
    Host,
    /// Only forwards.
    Switch,
}

/// One node of a graph topology (`nodes:` entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphNodeSpec {
    /// The name links and the placement refer to it by.
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
    /// A host's ports, if not the topology's `nics`.
    pub nics: Option<u32>,
}

/// One undirected, full-duplex link of a graph topology (`links:` entry), by node index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphLinkSpec {
    /// One end (index into `nodes`); directed link `2i` of link `i` leaves it.
    pub a: usize,
    /// The other end; directed link `2i + 1` leaves it.
    pub b: usize,
    /// Latency and bandwidth of each direction.
    #[serde(serialize_with = "ser_link", deserialize_with = "de_link")]
    pub link: Link,
}

impl TopologySpec {
    /// The rank count the topology fixes, if it fixes one: the product of a hierarchy's
    /// sizes, a grid's `rows * cols`, a custom graph's node count, the length of a graph's
    /// placement list. `None` where the scenario's `ranks` decides (fully connected, ring,
    /// a grid without `dims`, a graph or fat tree placed in an order of its hosts).
    pub fn implied_ranks(&self) -> Option<usize> {
        match self {
            TopologySpec::Hierarchical { levels, .. } => {
                levels.iter().try_fold(1usize, |acc, l| acc.checked_mul(l.size))
            }
            TopologySpec::Torus2d { dims: Some([r, c]), .. } | TopologySpec::Mesh2d { dims: Some([r, c]), .. } => {
                r.checked_mul(*c)
            }
            TopologySpec::Custom { nodes, .. } => Some(nodes.len()),
            TopologySpec::Graph { placement: Placement::Hosts(hosts), .. } => Some(hosts.len()),
            _ => None,
        }
    }

    /// Every link class the machine uses (with repeats): the levels', the custom and graph
    /// links', a fat tree's host links and uplinks.
    pub fn links(&self) -> Vec<Link> {
        match self {
            TopologySpec::FullyConnected { link, .. }
            | TopologySpec::Torus2d { link, .. }
            | TopologySpec::Mesh2d { link, .. }
            | TopologySpec::Ring { link, .. } => vec![*link],
            TopologySpec::Hierarchical { levels, .. } => levels.iter().map(|l| l.link).collect(),
            TopologySpec::Custom { links, .. } => links.iter().map(|l| l.link).collect(),
            TopologySpec::Graph { links, .. } => links.iter().map(|l| l.link).collect(),
            TopologySpec::FatTree { link, uplink, .. } => vec![*link, *uplink],
            // Every protocol's view of both pair classes: LL halves the bandwidth.
            TopologySpec::Cluster(c) => super::Proto::ALL
                .into_iter()
                .flat_map(|p| {
                    let eff = c.efficiency.of(p);
                    let intra = Link { alpha: c.intra.alpha_s.of(p), bandwidth: c.intra.bandwidth * eff };
                    let inter = Link {
                        alpha: c.inter.alpha_s.of(p),
                        bandwidth: c.inter.bandwidth * c.inter_efficiency().of(p),
                    };
                    [intra, inter]
                })
                .chain(c.fabric.uplink)
                .collect(),
        }
    }

    /// The most ranks the topology can run, where that is a limit rather than a fixed
    /// count: a graph's or fat tree's hosts, when the ranks take the first hosts of an
    /// order. Any count from 1 up to it is allowed.
    pub fn max_ranks(&self) -> Option<usize> {
        match self {
            TopologySpec::Graph { nodes, placement: Placement::Order(_), .. } => {
                Some(nodes.iter().filter(|n| n.kind == NodeKind::Host).count())
            }
            TopologySpec::FatTree { hosts_per_leaf, leaves, .. } => hosts_per_leaf.checked_mul(*leaves),
            TopologySpec::Cluster(c) => c.nodes.checked_mul(c.gpus_per_node),
            _ => None,
        }
    }

    /// Why `ranks` ranks cannot run on this topology although they are within
    /// [`TopologySpec::max_ranks`]: a cluster runs part of one node or whole nodes.
    pub fn refuses_ranks(&self, ranks: usize) -> Option<String> {
        match self {
            TopologySpec::Cluster(c) if ranks > c.gpus_per_node && !ranks.is_multiple_of(c.gpus_per_node) => {
                let g = c.gpus_per_node;
                Some(format!(
                    "a cluster of {g} GPUs per node runs 1 to {g} ranks on one node, or whole nodes (a multiple of {g})"
                ))
            }
            _ => None,
        }
    }

    /// Where [`TopologySpec::max_ranks`] comes from, for messages (`4 leaves x 8 hosts =
    /// 32 hosts`).
    pub fn max_ranks_why(&self) -> Option<String> {
        let n = self.max_ranks()?;
        Some(match self {
            TopologySpec::FatTree { hosts_per_leaf, leaves, .. } => {
                format!("its {leaves} leaves x {hosts_per_leaf} hosts make {n} hosts")
            }
            TopologySpec::Cluster(c) => {
                format!("its {} nodes x {} GPUs make {n} GPUs", c.nodes, c.gpus_per_node)
            }
            TopologySpec::Graph { nodes, .. } if nodes.len() == n => format!("it has {n} nodes, all hosts"),
            TopologySpec::Graph { nodes, .. } => format!("{n} of its {} nodes are hosts", nodes.len()),
            _ => format!("it has {n} hosts"),
        })
    }

    /// The rank count when the scenario gives none: the implied count, else every host.
    pub fn default_ranks(&self) -> Option<usize> {
        self.implied_ranks().or_else(|| self.max_ranks())
    }

    /// How the implied rank count comes about, for messages (`8 x 4 x 2 = 64`).
    pub fn implied_ranks_why(&self) -> Option<String> {
        let n = self.implied_ranks()?;
        Some(match self {
            TopologySpec::Hierarchical { levels, .. } => {
                let sizes: Vec<String> = levels.iter().map(|l| l.size.to_string()).collect();
                format!("its levels make {} = {n} ranks", sizes.join(" x "))
            }
            TopologySpec::Torus2d { dims: Some([r, c]), .. } | TopologySpec::Mesh2d { dims: Some([r, c]), .. } => {
                format!("its dims make {r} x {c} = {n} ranks")
            }
            TopologySpec::Graph { .. } => format!("its placement lists {n} hosts"),
            _ => format!("it lists {n} nodes"),
        })
    }
}
