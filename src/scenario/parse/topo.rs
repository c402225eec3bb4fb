//! `topology:` as written, and its validation into a [`TopologySpec`] (docs/scenario.md).
//!
//! Every kind's keys are checked here: the keys of other kinds are rejected with the
//! kind's own list, each value is checked where it stands, a custom graph's or a graph's
//! links are checked against its nodes (unknown node, self-loop, repeated pair,
//! disconnected) and a graph's placement against its hosts.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use super::cluster::{RawCluster, RawFabric, RawInter, RawIntra, RawPerProto};
use super::{RawLink, Scalar, Src, bandwidth, first_at, present, time, whole};
use crate::scenario::{
    EdgeSpec, GraphLinkSpec, GraphNodeSpec, LevelSpec, NodeKind, NodeSpec, ScenarioError, TopologySpec,
};
use crate::topology::{FatTree, Link, Placement, RankOrder, unreachable_host};

/// `topology:`. Keys of every kind are accepted here; [`topology`] rejects those that do
/// not apply to the kind given, naming the ones that do.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTopology {
    kind: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    link: Option<Spanned<RawLink>>,
    nics: Option<Spanned<Scalar>>,
    /// torus2d / mesh2d: `[rows, cols]`.
    #[serde(default, deserialize_with = "present")]
    dims: Option<Spanned<Vec<Spanned<Scalar>>>>,
    /// hierarchical: the levels, innermost first.
    #[serde(default, deserialize_with = "present")]
    levels: Option<Spanned<Vec<Spanned<RawLevel>>>>,
    /// custom, graph: the nodes of the graph; cluster: how many servers.
    #[serde(default, deserialize_with = "present")]
    nodes: Option<Spanned<RawNodes>>,
    /// custom, graph: the edges of the graph.
    #[serde(default, deserialize_with = "present")]
    links: Option<Spanned<Vec<Spanned<RawEdge>>>>,
    /// graph, fat_tree: which hosts the ranks run on.
    #[serde(default, deserialize_with = "present")]
    placement: Option<Spanned<RawPlacement>>,
    /// fat_tree: hosts under each leaf switch.
    #[serde(default, deserialize_with = "present")]
    hosts_per_leaf: Option<Spanned<Scalar>>,
    /// fat_tree: leaf switches.
    #[serde(default, deserialize_with = "present")]
    leaves: Option<Spanned<Scalar>>,
    /// fat_tree: spine switches.
    #[serde(default, deserialize_with = "present")]
    spines: Option<Spanned<Scalar>>,
    /// fat_tree: each leaf's link to each spine.
    #[serde(default, deserialize_with = "present")]
    uplink: Option<Spanned<RawLink>>,
    /// cluster: GPUs per server.
    #[serde(default, deserialize_with = "present")]
    gpus_per_node: Option<Spanned<Scalar>>,
    /// cluster: inside a server.
    #[serde(default, deserialize_with = "present")]
    intra: Option<Spanned<RawIntra>>,
    /// cluster: NICs per server.
    #[serde(default, deserialize_with = "present")]
    nics_per_node: Option<Spanned<Scalar>>,
    /// cluster: across servers.
    #[serde(default, deserialize_with = "present")]
    inter: Option<Spanned<RawInter>>,
    /// cluster: the NICs' switches.
    #[serde(default, deserialize_with = "present")]
    fabric: Option<Spanned<RawFabric>>,
    /// cluster: the start-up cost of a collective.
    #[serde(default, deserialize_with = "present")]
    launch: Option<Spanned<RawPerProto>>,
    /// cluster: each protocol's share of the bandwidth.
    #[serde(default, deserialize_with = "present")]
    efficiency: Option<Spanned<RawPerProto>>,
    /// cluster: the most one channel moves, per protocol.
    #[serde(default, deserialize_with = "present")]
    channel_bandwidth: Option<Spanned<RawPerProto>>,
}

/// `nodes:`: a list (custom, graph) or a count (cluster).
enum RawNodes {
    Count(Scalar),
    List(Vec<Spanned<RawNode>>),
}

struct RawNodesVisitor;

impl<'de> Visitor<'de> for RawNodesVisitor {
    type Value = RawNodes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of nodes, or (kind cluster) the number of servers")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(u64::try_from(v).map_or(Scalar::Int(v), Scalar::UInt)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::UInt(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::Str(v.to_string())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<RawNodes, E> {
        Ok(RawNodes::Count(Scalar::Null))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawNodes, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<RawNode>>()? {
            items.push(item);
        }
        Ok(RawNodes::List(items))
    }
}

impl<'de> Deserialize<'de> for RawNodes {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawNodesVisitor)
    }
}

/// `nodes:` of a custom graph or a graph: the list, or an error at a count.
fn node_list(src: &Src, raw: Spanned<RawNodes>, name: &str) -> Result<Spanned<Vec<Spanned<RawNode>>>, ScenarioError> {
    match raw.value {
        RawNodes::List(items) => Ok(Spanned { value: items, referenced: raw.referenced, defined: raw.defined }),
        RawNodes::Count(v) => Err(src.err(
            &raw.referenced,
            format!(
                "topology.nodes: kind {name} takes a list of nodes, not {} (a count of servers is kind cluster's)",
                v.shown()
            ),
        )),
    }
}

/// One `levels:` entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLevel {
    name: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    size: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
    nics: Option<Spanned<Scalar>>,
}

/// One `nodes:` entry: a name (`gpu0`, `7`) or `{ name: gpu0, nics: 2 }`.
enum RawNode {
    Name(Scalar),
    Map(Vec<(Spanned<String>, Spanned<Scalar>)>),
}

struct RawNodeVisitor;

impl<'de> Visitor<'de> for RawNodeVisitor {
    type Value = RawNode;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a node name or a mapping { name: NAME, nics: N }")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawNode, E> {
        Ok(RawNode::Name(Scalar::Str(v.to_string())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawNode, E> {
        Ok(RawNode::Name(Scalar::UInt(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawNode, E> {
        Ok(RawNode::Name(Scalar::Int(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawNode, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            items.push((key, map.next_value::<Spanned<Scalar>>()?));
        }
        Ok(RawNode::Map(items))
    }
}

impl<'de> Deserialize<'de> for RawNode {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawNodeVisitor)
    }
}

/// One `links:` entry: a mapping whose keys depend on the kind (`from`, `to` for custom;
/// `a`, `b` for graph), so they are checked by [`edges`], not by serde.
struct RawEdge(Vec<(Spanned<String>, Spanned<Scalar>)>);

struct RawEdgeVisitor;

impl<'de> Visitor<'de> for RawEdgeVisitor {
    type Value = RawEdge;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a link: a mapping of its two ends and, unless topology.link gives them, alpha and bandwidth")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEdge, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            items.push((key, map.next_value::<Spanned<Scalar>>()?));
        }
        Ok(RawEdge(items))
    }
}

impl<'de> Deserialize<'de> for RawEdge {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RawEdgeVisitor)
    }
}

/// `placement:`: a word (`host_order`, `strided`) or a list of host names.
enum RawPlacement {
    Word(Scalar),
    List(Vec<Spanned<Scalar>>),
}

struct RawPlacementVisitor;

impl<'de> Visitor<'de> for RawPlacementVisitor {
    type Value = RawPlacement;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("host_order, strided or a list of host names")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(u64::try_from(v).map_or(Scalar::Int(v), Scalar::UInt)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::UInt(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::Str(v.to_string())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<RawPlacement, E> {
        Ok(RawPlacement::Word(Scalar::Null))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawPlacement, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Scalar>>()? {
            items.push(item);
        }
        Ok(RawPlacement::List(items))
    }
}

impl<'de> Deserialize<'de> for RawPlacement {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawPlacementVisitor)
    }
}

/// The topology kinds that are built, in the order messages list them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    FullyConnected,
    Hierarchical,
    Torus2d,
    Mesh2d,
    Ring,
    Custom,
    Graph,
    FatTree,
    Cluster,
}

const KINDS: [(&str, Kind); 9] = [
    ("fully_connected", Kind::FullyConnected),
    ("hierarchical", Kind::Hierarchical),
    ("torus2d", Kind::Torus2d),
    ("mesh2d", Kind::Mesh2d),
    ("ring", Kind::Ring),
    ("custom", Kind::Custom),
    ("graph", Kind::Graph),
    ("fat_tree", Kind::FatTree),
    ("cluster", Kind::Cluster),
];

impl Kind {
    /// The keys this kind takes, for "does not apply" messages.
    fn keys(self) -> &'static str {
        match self {
            Kind::FullyConnected | Kind::Ring => "kind, link, nics",
            Kind::Hierarchical => "kind, levels, nics",
            Kind::Torus2d | Kind::Mesh2d => "kind, dims, link, nics",
            Kind::Custom => "kind, nodes, links, link (the default for links), nics",
            Kind::Graph => "kind, nodes, links, link (the default for links), placement, nics",
            Kind::FatTree => "kind, hosts_per_leaf, leaves, spines, link, uplink, placement, nics",
            Kind::Cluster => {
                "kind, nodes, gpus_per_node, intra, nics_per_node, inter, fabric, launch, efficiency, channel_bandwidth"
            }
        }
    }

    fn takes(self, key: &str) -> bool {
        self.keys().split(", ").any(|k| k.split(' ').next() == Some(key))
    }
}

/// Validate `topology:` (at `at`) into a [`TopologySpec`].
pub(super) fn topology(src: &Src, raw: Spanned<RawTopology>) -> Result<TopologySpec, ScenarioError> {
    let at = raw.referenced;
    let t = raw.value;
    let kind = super::choice(src, t.kind.as_ref(), "topology.kind", &KINDS, &[])?;
    let name = KINDS.iter().find(|(_, k)| *k == kind).map_or("", |(n, _)| n);

    // Keys of other kinds, first in file order of this list.
    let present_keys = [
        ("link", t.link.as_ref().map(|v| v.referenced)),
        ("dims", t.dims.as_ref().map(|v| v.referenced)),
        ("levels", t.levels.as_ref().map(|v| v.referenced)),
        ("nodes", t.nodes.as_ref().map(|v| v.referenced)),
        ("links", t.links.as_ref().map(|v| v.referenced)),
        ("placement", t.placement.as_ref().map(|v| v.referenced)),
        ("hosts_per_leaf", t.hosts_per_leaf.as_ref().map(|v| v.referenced)),
        ("leaves", t.leaves.as_ref().map(|v| v.referenced)),
        ("spines", t.spines.as_ref().map(|v| v.referenced)),
        ("uplink", t.uplink.as_ref().map(|v| v.referenced)),
        ("nics", t.nics.as_ref().map(|v| v.referenced)),
        ("gpus_per_node", t.gpus_per_node.as_ref().map(|v| v.referenced)),
        ("intra", t.intra.as_ref().map(|v| v.referenced)),
        ("nics_per_node", t.nics_per_node.as_ref().map(|v| v.referenced)),
        ("inter", t.inter.as_ref().map(|v| v.referenced)),
        ("fabric", t.fabric.as_ref().map(|v| v.referenced)),
        ("launch", t.launch.as_ref().map(|v| v.referenced)),
        ("efficiency", t.efficiency.as_ref().map(|v| v.referenced)),
        ("channel_bandwidth", t.channel_bandwidth.as_ref().map(|v| v.referenced)),
    ];
    for (key, loc) in present_keys {
        if let Some(loc) = loc
            && !kind.takes(key)
        {
            let hint = if kind == Kind::Hierarchical && key == "link" {
                " (each level has its own alpha and bandwidth)"
            } else if kind == Kind::Cluster && key == "nics" {
                " (ports belong to a GPU's interfaces: its own inside the node, and its rail's NIC; see nics_per_node)"
            } else {
                ""
            };
            return Err(src.err(
                &loc,
                format!("topology: '{key}' does not apply to kind {name}{hint}; allowed: {}", kind.keys()),
            ));
        }
    }

    let nics = match &t.nics {
        None => 1,
        Some(n) => ports(src, n, "topology.nics")?,
    };
    let link = t.link.map(|l| link_of(src, l, "topology.link")).transpose()?;
    let need_link = |link: Option<Link>| {
        link.ok_or_else(|| {
            src.err(
                &at,
                format!(
                    "topology: missing key 'link'; kind {name} needs link: {{ alpha: TIME, bandwidth: \
                     BANDWIDTH }}, e.g. {{ alpha: 1us, bandwidth: 100Gbps }}"
                ),
            )
        })
    };

    Ok(match kind {
        Kind::Cluster => {
            let nodes = match t.nodes {
                None => None,
                Some(n) => match n.value {
                    RawNodes::Count(v) => Some(Spanned { value: v, referenced: n.referenced, defined: n.defined }),
                    RawNodes::List(_) => {
                        return Err(src.err(
                            &n.referenced,
                            "topology.nodes: kind cluster takes the number of servers (nodes: 16), not a list",
                        ));
                    }
                },
            };
            let raw = RawCluster {
                nodes,
                gpus_per_node: t.gpus_per_node,
                intra: t.intra,
                nics_per_node: t.nics_per_node,
                inter: t.inter,
                fabric: t.fabric,
                launch: t.launch,
                efficiency: t.efficiency,
                channel_bandwidth: t.channel_bandwidth,
            };
            TopologySpec::Cluster(super::cluster::cluster(src, at, raw)?)
        }
        Kind::FullyConnected => TopologySpec::FullyConnected { link: need_link(link)?, nics },
        Kind::Ring => TopologySpec::Ring { link: need_link(link)?, nics },
        Kind::Torus2d | Kind::Mesh2d => {
            let link = need_link(link)?;
            let dims = t.dims.map(|d| dims(src, d)).transpose()?;
            if kind == Kind::Torus2d {
                TopologySpec::Torus2d { dims, link, nics }
            } else {
                TopologySpec::Mesh2d { dims, link, nics }
            }
        }
        Kind::Hierarchical => {
            let Some(raw) = t.levels else {
                return Err(src.err(
                    &at,
                    "topology: missing key 'levels'; kind hierarchical needs its levels, innermost \
                     first, e.g. levels: [{ size: 8, alpha: 0.7us, bandwidth: 150GB/s }, \
                     { size: 16, alpha: 5us, bandwidth: 12.5GB/s }]",
                ));
            };
            TopologySpec::Hierarchical { levels: levels(src, raw)?, nics }
        }
        Kind::Custom => {
            let Some(raw_nodes) = t.nodes else {
                return Err(src.err(
                    &at,
                    "topology: missing key 'nodes'; kind custom needs its nodes (the ranks, in \
                     order), e.g. nodes: [a, b, c], and links: [{ from: a, to: b }, ...]",
                ));
            };
            let graph = nodes(src, node_list(src, raw_nodes, "custom")?, false)?;
            let links = match t.links {
                None if graph.nodes.len() == 1 => Vec::new(),
                None => {
                    return Err(src.err(
                        &at,
                        "topology: missing key 'links'; kind custom needs the links between its \
                         nodes, e.g. links: [{ from: a, to: b, alpha: 1us, bandwidth: 100Gbps }]",
                    ));
                }
                Some(raw) => edges(src, raw, &graph, link, ["from", "to"])?,
            };
            let pairs: Vec<(usize, usize)> = links.iter().map(|e| (e.0, e.1)).collect();
            connected(src, &graph, &pairs, "node")?;
            let nodes = graph.nodes.into_iter().map(|n| NodeSpec { name: n.name, nics: n.nics }).collect();
            let links = links.into_iter().map(|(from, to, link)| EdgeSpec { from, to, link }).collect();
            TopologySpec::Custom { nodes, links, nics }
        }
        Kind::Graph => {
            let Some(raw_nodes) = t.nodes else {
                return Err(src.err(
                    &at,
                    "topology: missing key 'nodes'; kind graph needs its nodes, hosts and switches, \
                     e.g. nodes: [{ name: h0, kind: host }, { name: h1, kind: host }, \
                     { name: sw0, kind: switch }], and links: [{ a: h0, b: sw0 }, ...]",
                ));
            };
            let nodes_at = raw_nodes.referenced;
            let graph = nodes(src, node_list(src, raw_nodes, "graph")?, true)?;
            let hosts = graph.nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
            if hosts == 0 {
                return Err(src.err(
                    &nodes_at,
                    "topology.nodes: no node is a host; ranks run on hosts, so give at least one \
                     node kind: host (a bare name is a host)",
                ));
            }
            let links = match t.links {
                None if hosts == 1 => Vec::new(),
                None => {
                    return Err(src.err(
                        &at,
                        "topology: missing key 'links'; kind graph needs the links between its \
                         nodes, e.g. links: [{ a: h0, b: sw0, alpha: 1us, bandwidth: 100Gbps }]",
                    ));
                }
                Some(raw) => edges(src, raw, &graph, link, ["a", "b"])?,
            };
            let pairs: Vec<(usize, usize)> = links.iter().map(|e| (e.0, e.1)).collect();
            connected(src, &graph, &pairs, "host")?;
            let placement = match t.placement {
                None => Placement::Order(RankOrder::HostOrder),
                Some(raw) => graph_placement(src, raw, &graph)?,
            };
            let links = links.into_iter().map(|(a, b, link)| GraphLinkSpec { a, b, link }).collect();
            TopologySpec::Graph { nodes: graph.nodes, links, placement, nics }
        }
        Kind::FatTree => {
            let count = |v: &Option<Spanned<Scalar>>, key: &str, what: &str| match v {
                None => Err(src.err(&at, format!("topology: missing key '{key}'; kind fat_tree needs {what}"))),
                Some(v) => whole(&v.value, 1, usize::MAX as u64).map(|n| n as usize).ok_or_else(|| {
                    src.err(
                        &v.referenced,
                        format!("topology.{key}: must be a whole number of at least 1 ({what}), not {}", src.shown(v)),
                    )
                }),
            };
            let hosts_per_leaf = count(&t.hosts_per_leaf, "hosts_per_leaf", "the hosts under each leaf switch")?;
            let leaves = count(&t.leaves, "leaves", "the number of leaf switches")?;
            let spines = match &t.spines {
                None => 1,
                some => count(some, "spines", "the number of spine switches")?,
            };
            // Routing takes spine (destination host mod spines): spines beyond the host
            // count carry nothing, yet would count in the oversubscription ratio.
            let hosts = hosts_per_leaf.saturating_mul(leaves);
            if spines > hosts {
                let loc = t.spines.as_ref().map_or(at, |v| v.referenced);
                return Err(src.err(
                    &loc,
                    format!(
                        "topology.spines: {spines} is more spines than the tree has hosts ({leaves} x \
                         {hosts_per_leaf} = {hosts}); a message takes spine (destination host mod spines), \
                         so the rest would carry nothing: write spines from 1 to {hosts}"
                    ),
                ));
            }
            let link = need_link(link)?;
            let uplink = t.uplink.map(|l| link_of(src, l, "topology.uplink")).transpose()?.unwrap_or(link);
            let placement = t.placement.map(|p| tree_placement(src, p)).transpose()?.unwrap_or(RankOrder::HostOrder);
            if let Err(why) = FatTree::new(hosts_per_leaf, leaves, spines, link, uplink) {
                let loc = t.leaves.as_ref().map_or(at, |v| v.referenced);
                return Err(src.err(&loc, format!("topology: {why}")));
            }
            TopologySpec::FatTree { hosts_per_leaf, leaves, spines, link, uplink, placement, nics }
        }
    })
}

/// A port count of at least 1.
fn ports(src: &Src, n: &Spanned<Scalar>, key: &str) -> Result<u32, ScenarioError> {
    whole(&n.value, 1, u64::from(u32::MAX)).map(|k| k as u32).ok_or_else(|| {
        src.err(
            &n.referenced,
            format!("{key}: must be a whole number from 1 to {} (ports per rank), not {}", u32::MAX, src.shown(n)),
        )
    })
}

/// `{ alpha, bandwidth }`, both required.
fn link_of(src: &Src, l: Spanned<RawLink>, key: &str) -> Result<Link, ScenarioError> {
    let at = l.referenced;
    let Some(alpha) = &l.value.alpha else {
        return Err(src.err(&at, format!("{key}: missing key 'alpha' (seconds per message, e.g. 1us)")));
    };
    let Some(bw) = &l.value.bandwidth else {
        return Err(src.err(&at, format!("{key}: missing key 'bandwidth' (e.g. 100Gbps or 12.5GB/s)")));
    };
    Ok(Link {
        alpha: time(src, alpha, &format!("{key}.alpha"))?,
        bandwidth: bandwidth(src, bw, &format!("{key}.bandwidth"))?,
    })
}

/// `dims: [rows, cols]`.
fn dims(src: &Src, d: Spanned<Vec<Spanned<Scalar>>>) -> Result<[usize; 2], ScenarioError> {
    if d.value.len() != 2 {
        return Err(src.err(
            &d.referenced,
            format!("topology.dims: expected [rows, cols], two whole numbers, not a list of {}", d.value.len()),
        ));
    }
    let mut out = [0usize; 2];
    for (i, v) in d.value.iter().enumerate() {
        let what = ["rows", "cols"][i];
        out[i] = whole(&v.value, 1, usize::MAX as u64).map(|n| n as usize).ok_or_else(|| {
            src.err(
                &v.referenced,
                format!("topology.dims: {what} must be a whole number of at least 1, not {}", src.shown(v)),
            )
        })?;
    }
    // Ranks are numbered in 32 bits: a grid of more is refused here, not at a wrapped count.
    if out[0].checked_mul(out[1]).is_none_or(|n| n > u32::MAX as usize) {
        return Err(src.err(
            &d.referenced,
            format!(
                "topology.dims: {} x {} is more than {} ranks (ranks are numbered in 32 bits); give dims whose \
                 product is at most that",
                out[0],
                out[1],
                u32::MAX
            ),
        ));
    }
    Ok(out)
}

/// `levels:`, innermost first.
fn levels(src: &Src, raw: Spanned<Vec<Spanned<RawLevel>>>) -> Result<Vec<LevelSpec>, ScenarioError> {
    if raw.value.is_empty() {
        return Err(src.err(&raw.referenced, "topology.levels: the list is empty; give at least one level"));
    }
    let mut out = Vec::new();
    let mut ranks = 1usize;
    for (i, entry) in raw.value.into_iter().enumerate() {
        let at = entry.referenced;
        let l = entry.value;
        let key = format!("topology.levels[{i}]");
        let Some(size) = &l.size else {
            return Err(src.err(
                &at,
                format!(
                    "{key}: missing key 'size' (how many {} one group of this level holds)",
                    if i == 0 { "ranks" } else { "groups of the level below" }
                ),
            ));
        };
        let size_v = whole(&size.value, 1, usize::MAX as u64).map(|n| n as usize).ok_or_else(|| {
            src.err(
                &size.referenced,
                format!("{key}.size: must be a whole number of at least 1, not {}", src.shown(size)),
            )
        })?;
        // Ranks are numbered in 32 bits: levels that make more are refused at the size
        // that passes the limit.
        ranks = ranks.checked_mul(size_v).filter(|&n| n <= u32::MAX as usize).ok_or_else(|| {
            src.err(
                &size.referenced,
                format!(
                    "{key}.size: the levels up to this one make more than {} ranks (ranks are numbered in 32 bits); \
                     give sizes whose product is at most that",
                    u32::MAX
                ),
            )
        })?;
        let Some(alpha) = &l.alpha else {
            return Err(
                src.err(&at, format!("{key}: missing key 'alpha' (seconds per message at this level, e.g. 1us)"))
            );
        };
        let Some(bw) = &l.bandwidth else {
            return Err(
                src.err(&at, format!("{key}: missing key 'bandwidth' (at this level, e.g. 100Gbps or 12.5GB/s)"))
            );
        };
        let link = Link {
            alpha: time(src, alpha, &format!("{key}.alpha"))?,
            bandwidth: bandwidth(src, bw, &format!("{key}.bandwidth"))?,
        };
        let nics = l.nics.as_ref().map(|n| ports(src, n, &format!("{key}.nics"))).transpose()?;
        let name = l.name.map_or_else(|| format!("level {i}"), |n| n.value);
        out.push(LevelSpec { name, size: size_v, link, nics });
    }
    Ok(out)
}

/// The nodes of a custom graph or a graph, with where each name is and a lookup by name.
struct Nodes {
    nodes: Vec<GraphNodeSpec>,
    locs: Vec<Location>,
    index: HashMap<String, usize>,
}

impl Nodes {
    /// Up to 8 names of the nodes `keep` accepts, for "the nodes are ..." messages.
    fn names(&self, keep: impl Fn(&GraphNodeSpec) -> bool) -> String {
        let all: Vec<&str> = self.nodes.iter().filter(|n| keep(n)).map(|n| n.name.as_str()).collect();
        let mut v: Vec<&str> = all.iter().copied().take(8).collect();
        if all.len() > 8 {
            v.push("...");
        }
        v.join(", ")
    }
}

/// `nodes:` of a custom graph (`graph` false: every node a rank, keys name and nics) or a
/// graph (keys name, kind and nics; a bare name is a host).
fn nodes(src: &Src, raw: Spanned<Vec<Spanned<RawNode>>>, graph: bool) -> Result<Nodes, ScenarioError> {
    if raw.value.is_empty() {
        return Err(src.err(&raw.referenced, "topology.nodes: the list is empty; give at least one node"));
    }
    let allowed = if graph { "name, kind, nics" } else { "name, nics" };
    let form =
        if graph { "NAME or { name: NAME, kind: host|switch, nics: N }" } else { "NAME or { name: NAME, nics: N }" };
    let mut out = Nodes { nodes: Vec::new(), locs: Vec::new(), index: HashMap::new() };
    for (i, entry) in raw.value.into_iter().enumerate() {
        let at = entry.referenced;
        let (name_v, kind, nics) = match entry.value {
            RawNode::Name(s) => (Spanned { value: s, referenced: at, defined: at }, NodeKind::Host, None),
            RawNode::Map(items) => {
                let mut name = None;
                let mut kind = NodeKind::Host;
                let mut nics = None;
                for (k, v) in items {
                    match k.value.as_str() {
                        "name" => name = Some(v),
                        "nics" => nics = Some((ports(src, &v, "topology.nodes: nics")?, v.referenced)),
                        "kind" if graph => {
                            kind = match &v.value {
                                Scalar::Str(s) if s == "host" => NodeKind::Host,
                                Scalar::Str(s) if s == "switch" => NodeKind::Switch,
                                other => {
                                    return Err(src.err(
                                        &v.referenced,
                                        format!(
                                            "topology.nodes[{i}].kind: {} is not a node kind; allowed: host (runs a \
                                             rank), switch (only forwards)",
                                            other.shown()
                                        ),
                                    ));
                                }
                            }
                        }
                        other => {
                            return Err(src.err(
                                &k.referenced,
                                format!("topology.nodes: unknown key '{other}'; allowed: {allowed}"),
                            ));
                        }
                    }
                }
                let Some(name) = name else {
                    return Err(src.err(&at, format!("topology.nodes: this entry has no 'name'; write {form}")));
                };
                if let (NodeKind::Switch, Some((_, nics_at))) = (kind, &nics) {
                    return Err(src.err(
                        nics_at,
                        format!(
                            "topology.nodes[{i}]: nics applies to hosts only; a switch forwards without ports of \
                             its own, so leave nics out"
                        ),
                    ));
                }
                (name, kind, nics.map(|n| n.0))
            }
        };
        let name = match &name_v.value {
            Scalar::Str(s) if !s.is_empty() => s.clone(),
            Scalar::UInt(_) | Scalar::Int(_) => name_v.value.text(),
            other => {
                return Err(src.err(
                    &name_v.referenced,
                    format!("topology.nodes: a node name must be a word or a number, not {}", other.shown()),
                ));
            }
        };
        if let Some(&i) = out.index.get(&name) {
            return Err(src.err(
                &name_v.referenced,
                format!("topology.nodes: '{name}' is listed twice{}; node names must differ", first_at(&out.locs[i])),
            ));
        }
        out.index.insert(name.clone(), out.nodes.len());
        out.nodes.push(GraphNodeSpec { name, kind, nics });
        out.locs.push(name_v.referenced);
    }
    Ok(out)
}

/// `links:` resolved against the nodes, as `(end, end, link)`; `ends` are the keys that
/// name the two ends (`from`, `to` or `a`, `b`); `default` fills in a link's missing
/// alpha or bandwidth.
fn edges(
    src: &Src,
    raw: Spanned<Vec<Spanned<RawEdge>>>,
    nodes: &Nodes,
    default: Option<Link>,
    ends: [&str; 2],
) -> Result<Vec<(usize, usize, Link)>, ScenarioError> {
    let mut out: Vec<(usize, usize, Link)> = Vec::new();
    let mut locs: Vec<Location> = Vec::new();
    let mut pairs: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, entry) in raw.value.into_iter().enumerate() {
        let at = entry.referenced;
        let key = format!("topology.links[{i}]");
        let mut found: [Option<Spanned<Scalar>>; 4] = [None, None, None, None];
        for (k, v) in entry.value.0 {
            let Some(slot) = [ends[0], ends[1], "alpha", "bandwidth"].iter().position(|&f| f == k.value) else {
                let hint = match k.value.as_str() {
                    "from" | "to" | "a" | "b" => " (custom's links are { from, to }, a graph's { a, b })",
                    _ => "",
                };
                return Err(src.err(
                    &k.referenced,
                    format!(
                        "{key}: unknown key '{}'{hint}; allowed: {}, {}, alpha, bandwidth",
                        k.value, ends[0], ends[1]
                    ),
                ));
            };
            found[slot] = Some(v);
        }
        let [from, to, alpha, bw] = found;
        let mut idx = [0usize; 2];
        for (j, (end, field)) in [(&from, ends[0]), (&to, ends[1])].into_iter().enumerate() {
            let Some(v) = end else {
                return Err(src.err(&at, format!("{key}: missing key '{field}' (a node name)")));
            };
            idx[j] = *nodes.index.get(&v.value.text()).ok_or_else(|| {
                src.err(
                    &v.referenced,
                    format!("{key}.{field}: unknown node {}; the nodes are {}", src.shown(v), nodes.names(|_| true)),
                )
            })?;
        }
        let [a, b] = idx;
        let to_loc = to.as_ref().map_or(at, |v| v.referenced);
        let name = |v: usize| &nodes.nodes[v].name;
        if a == b {
            return Err(src.err(&to_loc, format!("{key}: links node '{}' to itself", name(a))));
        }
        if let Some(&k) = pairs.get(&(a.min(b), a.max(b))) {
            return Err(src.err(
                &at,
                format!(
                    "{key}: nodes '{}' and '{}' are already linked{}; links are undirected, give each pair once",
                    name(a),
                    name(b),
                    first_at(&locs[k])
                ),
            ));
        }
        let alpha = match (&alpha, default) {
            (Some(v), _) => time(src, v, &format!("{key}.alpha"))?,
            (None, Some(d)) => d.alpha,
            (None, None) => {
                return Err(
                    src.err(&at, format!("{key}: missing key 'alpha'; give it here or a default in topology.link"))
                );
            }
        };
        let bw = match (&bw, default) {
            (Some(v), _) => bandwidth(src, v, &format!("{key}.bandwidth"))?,
            (None, Some(d)) => d.bandwidth,
            (None, None) => {
                return Err(
                    src.err(&at, format!("{key}: missing key 'bandwidth'; give it here or a default in topology.link"))
                );
            }
        };
        pairs.insert((a.min(b), a.max(b)), out.len());
        out.push((a, b, Link { alpha, bandwidth: bw }));
        locs.push(at);
    }
    Ok(out)
}

/// Every host must reach every other; the error is at the first host that the first
/// cannot reach (`what` names the nodes in the message: `node` for custom, `host`).
fn connected(src: &Src, nodes: &Nodes, pairs: &[(usize, usize)], what: &str) -> Result<(), ScenarioError> {
    let host: Vec<bool> = nodes.nodes.iter().map(|n| n.kind == NodeKind::Host).collect();
    match unreachable_host(&host, pairs) {
        None => Ok(()),
        Some((from, v)) => Err(src.err(
            &nodes.locs[v],
            format!(
                "topology.nodes: {what} '{}' cannot be reached from {what} '{}': the graph is \
                 disconnected; add links so every {what} has a path to every other",
                nodes.nodes[v].name, nodes.nodes[from].name
            ),
        )),
    }
}

/// `placement: host_order` or `placement: strided` (`allowed` lists what the kind takes).
fn order(src: &Src, at: &Location, word: &Scalar, allowed: &str) -> Result<RankOrder, ScenarioError> {
    match word {
        Scalar::Str(s) if s == "host_order" => Ok(RankOrder::HostOrder),
        Scalar::Str(s) if s == "strided" => Ok(RankOrder::Strided),
        other => Err(src.err(at, format!("topology.placement: {} is not a placement; {allowed}", other.shown()))),
    }
}

/// `placement:` of a fat tree: an order of its hosts.
fn tree_placement(src: &Src, raw: Spanned<RawPlacement>) -> Result<RankOrder, ScenarioError> {
    let allowed = "allowed: host_order (rank r on host r), strided (rank r on leaf r mod leaves)";
    match &raw.value {
        RawPlacement::Word(w) => order(src, &raw.referenced, w, allowed),
        RawPlacement::List(_) => Err(src.err(
            &raw.referenced,
            format!(
                "topology.placement: kind fat_tree places ranks in an order of its hosts, not by a list; \
                 {allowed} (kind graph takes a list)"
            ),
        )),
    }
}

/// `placement:` of a graph: an order of its hosts, or a list of them.
fn graph_placement(src: &Src, raw: Spanned<RawPlacement>, nodes: &Nodes) -> Result<Placement, ScenarioError> {
    let at = raw.referenced;
    let list = match raw.value {
        RawPlacement::Word(w) => {
            let allowed = "allowed: host_order (the hosts as listed), strided (round-robin over the hosts' \
                           switches), or a list of hosts [h0, h1, ...], rank r on the r-th";
            return order(src, &at, &w, allowed).map(Placement::Order);
        }
        RawPlacement::List(list) => list,
    };
    if list.is_empty() {
        return Err(
            src.err(&at, "topology.placement: the list is empty; give at least one host, or host_order or strided")
        );
    }
    let hosts = || nodes.names(|n| n.kind == NodeKind::Host);
    let mut out: Vec<usize> = Vec::with_capacity(list.len());
    let mut placed: HashMap<usize, Location> = HashMap::new();
    for (i, item) in list.into_iter().enumerate() {
        let key = format!("topology.placement[{i}]");
        let name = item.value.text();
        let Some(&v) = nodes.index.get(&name) else {
            return Err(src.err(
                &item.referenced,
                format!("{key}: unknown node {}; the hosts are {}", src.shown(&item), hosts()),
            ));
        };
        if nodes.nodes[v].kind == NodeKind::Switch {
            return Err(
                src.err(&item.referenced, format!("{key}: '{name}' is a switch; ranks run on hosts: {}", hosts()))
            );
        }
        if let Some(first) = placed.get(&v) {
            return Err(src.err(
                &item.referenced,
                format!("{key}: host '{name}' is listed twice{}; a host runs at most one rank", first_at(first)),
            ));
        }
        placed.insert(v, item.referenced);
        out.push(v);
    }
    Ok(Placement::Hosts(out))
}
