//! `topology:` as written, and its validation into a [`TopologySpec`] (SPEC section 4).
//!
//! Every kind's keys are checked here: the keys of other kinds are rejected with the
//! kind's own list, each value is checked where it stands, and a custom graph's links
//! are checked against its nodes (unknown node, self-loop, repeated pair, disconnected).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use super::{RawLink, Scalar, Src, bandwidth, first_at, present, time, whole};
use crate::scenario::{EdgeSpec, LevelSpec, NodeSpec, ScenarioError, TopologySpec};
use crate::topology::{Link, MAX_CUSTOM_NODES, unreachable};

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
    /// custom: the nodes of the graph.
    #[serde(default, deserialize_with = "present")]
    nodes: Option<Spanned<Vec<Spanned<RawNode>>>>,
    /// custom: the edges of the graph.
    #[serde(default, deserialize_with = "present")]
    links: Option<Spanned<Vec<Spanned<RawEdge>>>>,
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

/// One `links:` entry of a custom graph.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEdge {
    #[serde(default, deserialize_with = "present")]
    from: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    to: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
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
}

const KINDS: [(&str, Kind); 6] = [
    ("fully_connected", Kind::FullyConnected),
    ("hierarchical", Kind::Hierarchical),
    ("torus2d", Kind::Torus2d),
    ("mesh2d", Kind::Mesh2d),
    ("ring", Kind::Ring),
    ("custom", Kind::Custom),
];

impl Kind {
    /// The keys this kind takes, for "does not apply" messages.
    fn keys(self) -> &'static str {
        match self {
            Kind::FullyConnected | Kind::Ring => "kind, link, nics",
            Kind::Hierarchical => "kind, levels, nics",
            Kind::Torus2d | Kind::Mesh2d => "kind, dims, link, nics",
            Kind::Custom => "kind, nodes, links, link (the default for links), nics",
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
    ];
    for (key, loc) in present_keys {
        if let Some(loc) = loc
            && !kind.takes(key)
        {
            let hint = if kind == Kind::Hierarchical && key == "link" {
                " (each level has its own alpha and bandwidth)"
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
            let (nodes, locs) = nodes(src, raw_nodes)?;
            let links = match t.links {
                None if nodes.len() == 1 => Vec::new(),
                None => {
                    return Err(src.err(
                        &at,
                        "topology: missing key 'links'; kind custom needs the links between its \
                         nodes, e.g. links: [{ from: a, to: b, alpha: 1us, bandwidth: 100Gbps }]",
                    ));
                }
                Some(raw) => edges(src, raw, &nodes, link)?,
            };
            let pairs: Vec<(usize, usize)> = links.iter().map(|e| (e.from, e.to)).collect();
            if let Some(v) = unreachable(nodes.len(), &pairs) {
                return Err(src.err(
                    &locs[v],
                    format!(
                        "topology.nodes: node '{}' cannot be reached from node '{}': the graph is \
                         disconnected; add links so every node has a path to every other",
                        nodes[v].name, nodes[0].name
                    ),
                ));
            }
            TopologySpec::Custom { nodes, links, nics }
        }
    })
}

/// A port count of at least 1.
fn ports(src: &Src, n: &Spanned<Scalar>, key: &str) -> Result<u32, ScenarioError> {
    whole(&n.value, 1, u64::from(u32::MAX)).map(|k| k as u32).ok_or_else(|| {
        src.err(
            &n.referenced,
            format!("{key}: must be a whole number of at least 1 (ports per rank), not {}", n.value.shown()),
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
                format!("topology.dims: {what} must be a whole number of at least 1, not {}", v.value.shown()),
            )
        })?;
    }
    if out[0].checked_mul(out[1]).is_none() {
        return Err(src.err(&d.referenced, "topology.dims: more ranks than this machine can count"));
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
                format!("{key}.size: must be a whole number of at least 1, not {}", size.value.shown()),
            )
        })?;
        ranks = ranks.checked_mul(size_v).ok_or_else(|| {
            src.err(&size.referenced, format!("{key}.size: the levels make more ranks than this machine can count"))
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

/// `nodes:` of a custom graph, with where each entry is.
fn nodes(src: &Src, raw: Spanned<Vec<Spanned<RawNode>>>) -> Result<(Vec<NodeSpec>, Vec<Location>), ScenarioError> {
    if raw.value.is_empty() {
        return Err(src.err(&raw.referenced, "topology.nodes: the list is empty; give at least one node"));
    }
    if raw.value.len() > MAX_CUSTOM_NODES {
        return Err(src.err(
            &raw.referenced,
            format!(
                "topology.nodes: {} nodes is more than a custom graph may have ({MAX_CUSTOM_NODES}: every \
                 pair's route is kept in a table); describe a machine that large with another kind",
                raw.value.len()
            ),
        ));
    }
    let mut out: Vec<NodeSpec> = Vec::new();
    let mut locs: Vec<Location> = Vec::new();
    for entry in raw.value {
        let at = entry.referenced;
        let (name_v, nics) = match entry.value {
            RawNode::Name(s) => (Spanned { value: s, referenced: at, defined: at }, None),
            RawNode::Map(items) => {
                let mut name = None;
                let mut nics = None;
                for (k, v) in items {
                    match k.value.as_str() {
                        "name" => name = Some(v),
                        "nics" => nics = Some(ports(src, &v, "topology.nodes: nics")?),
                        other => {
                            return Err(src.err(
                                &k.referenced,
                                format!("topology.nodes: unknown key '{other}'; allowed: name, nics"),
                            ));
                        }
                    }
                }
                let Some(name) = name else {
                    return Err(
                        src.err(&at, "topology.nodes: this entry has no 'name'; write NAME or { name: NAME, nics: N }")
                    );
                };
                (name, nics)
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
        if let Some(i) = out.iter().position(|n| n.name == name) {
            return Err(src.err(
                &name_v.referenced,
                format!("topology.nodes: '{name}' is listed twice{}; node names must differ", first_at(&locs[i])),
            ));
        }
        out.push(NodeSpec { name, nics });
        locs.push(name_v.referenced);
    }
    Ok((out, locs))
}

/// `links:` of a custom graph, resolved against its nodes; `default` fills in a link's
/// missing alpha or bandwidth.
fn edges(
    src: &Src,
    raw: Spanned<Vec<Spanned<RawEdge>>>,
    nodes: &[NodeSpec],
    default: Option<Link>,
) -> Result<Vec<EdgeSpec>, ScenarioError> {
    let names = || {
        let mut v: Vec<&str> = nodes.iter().take(8).map(|n| n.name.as_str()).collect();
        if nodes.len() > 8 {
            v.push("...");
        }
        v.join(", ")
    };
    let mut out: Vec<EdgeSpec> = Vec::new();
    let mut locs: Vec<Location> = Vec::new();
    for (i, entry) in raw.value.into_iter().enumerate() {
        let at = entry.referenced;
        let e = entry.value;
        let key = format!("topology.links[{i}]");
        let mut ends = [0usize; 2];
        for (j, (end, field)) in [(&e.from, "from"), (&e.to, "to")].into_iter().enumerate() {
            let Some(v) = end else {
                return Err(src.err(&at, format!("{key}: missing key '{field}' (a node name)")));
            };
            let name = v.value.text();
            ends[j] = nodes.iter().position(|n| n.name == name).ok_or_else(|| {
                src.err(
                    &v.referenced,
                    format!("{key}.{field}: unknown node {}; the nodes are {}", v.value.shown(), names()),
                )
            })?;
        }
        let [a, b] = ends;
        let to_loc = e.to.as_ref().map_or(at, |v| v.referenced);
        if a == b {
            return Err(src.err(&to_loc, format!("{key}: links node '{}' to itself", nodes[a].name)));
        }
        if let Some(k) = out.iter().position(|o| (o.from.min(o.to), o.from.max(o.to)) == (a.min(b), a.max(b))) {
            return Err(src.err(
                &at,
                format!(
                    "{key}: nodes '{}' and '{}' are already linked{}; links are undirected, give each pair once",
                    nodes[a].name,
                    nodes[b].name,
                    first_at(&locs[k])
                ),
            ));
        }
        let alpha = match (&e.alpha, default) {
            (Some(v), _) => time(src, v, &format!("{key}.alpha"))?,
            (None, Some(d)) => d.alpha,
            (None, None) => {
                return Err(
                    src.err(&at, format!("{key}: missing key 'alpha'; give it here or a default in topology.link"))
                );
            }
        };
        let bw = match (&e.bandwidth, default) {
            (Some(v), _) => bandwidth(src, v, &format!("{key}.bandwidth"))?,
            (None, Some(d)) => d.bandwidth,
            (None, None) => {
                return Err(
                    src.err(&at, format!("{key}: missing key 'bandwidth'; give it here or a default in topology.link"))
                );
            }
        };
        out.push(EdgeSpec { from: a, to: b, link: Link { alpha, bandwidth: bw } });
        locs.push(at);
    }
    Ok(out)
}
