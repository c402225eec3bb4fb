//! `topology: { kind: cluster, ... }` as written, and its validation into a
//! [`ClusterSpec`] (docs/gpu-clusters.md).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use super::{RawLink, Scalar, Src, bandwidth, present, time, whole};
use crate::scenario::ScenarioError;
use crate::topology::{
    Cluster, ClusterSpec, FabricKind, FabricSpec, InterSpec, IntraKind, IntraSpec, Link, NicPath, PerProto, Proto,
    SocketLink, pci_bus_key,
};

/// A value for every protocol: one (`1us`) or one per protocol (`{ simple: 3.4us, ll:
/// 0.6us, ll128: 1.9us }`).
pub(super) enum RawPerProto {
    One(Scalar),
    Map(Vec<(Spanned<String>, Spanned<Scalar>)>),
}

struct RawPerProtoVisitor;

impl<'de> Visitor<'de> for RawPerProtoVisitor {
    type Value = RawPerProto;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // One visitor reads launch, alpha, step_latency and proxy (times), efficiency (fractions)
        // and channel_bandwidth (rates): the message may not name one of them for all.
        f.write_str(
            "one value for every protocol (a time such as 1us for launch, alpha, step_latency and proxy; \
             a rate such as 10GB/s for channel_bandwidth) or one per protocol { simple: V, ll: V, ll128: V } \
             (efficiency: { ll: F, ll128: F })",
        )
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(u64::try_from(v).map_or(Scalar::Int(v), Scalar::UInt)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::UInt(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::Str(v.to_string())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<RawPerProto, E> {
        Ok(RawPerProto::One(Scalar::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPerProto, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            items.push((key, map.next_value::<Spanned<Scalar>>()?));
        }
        Ok(RawPerProto::Map(items))
    }
}

impl<'de> Deserialize<'de> for RawPerProto {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawPerProtoVisitor)
    }
}

/// `intra:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIntra {
    #[serde(default, deserialize_with = "present")]
    kind: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    step_latency: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    links: Option<Spanned<RawLinks>>,
    #[serde(default, deserialize_with = "present")]
    nvls_efficiency: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    sockets: Option<Spanned<RawLinks>>,
    #[serde(default, deserialize_with = "present")]
    socket_link: Option<Spanned<RawSocketLink>>,
    #[serde(default, deserialize_with = "present")]
    pci_bus: Option<Spanned<Vec<Spanned<Scalar>>>>,
}

/// `intra.socket_link:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSocketLink {
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
}

/// `intra.links`: `[[a, b, count], ...]`, each entry and number with where it stands.
type RawLinks = Vec<Spanned<Vec<Spanned<Scalar>>>>;

/// `inter:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInter {
    #[serde(default, deserialize_with = "present")]
    alpha: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    bandwidth: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    proxy: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    nic_path: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    channel_bandwidth: Option<Spanned<RawPerProto>>,
    #[serde(default, deserialize_with = "present")]
    efficiency: Option<Spanned<RawPerProto>>,
}

/// `fabric:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFabric {
    #[serde(default, deserialize_with = "present")]
    kind: Option<Spanned<String>>,
    #[serde(default, deserialize_with = "present")]
    hosts_per_leaf: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    spines: Option<Spanned<Scalar>>,
    #[serde(default, deserialize_with = "present")]
    uplink: Option<Spanned<RawLink>>,
}

/// The keys of `kind: cluster` as read.
pub(super) struct RawCluster {
    pub nodes: Option<Spanned<Scalar>>,
    pub gpus_per_node: Option<Spanned<Scalar>>,
    pub intra: Option<Spanned<RawIntra>>,
    pub nics_per_node: Option<Spanned<Scalar>>,
    pub inter: Option<Spanned<RawInter>>,
    pub fabric: Option<Spanned<RawFabric>>,
    pub launch: Option<Spanned<RawPerProto>>,
    pub efficiency: Option<Spanned<RawPerProto>>,
    pub channel_bandwidth: Option<Spanned<RawPerProto>>,
}

/// `channel_bandwidth:`: one bandwidth for every protocol, or a map of some of them; a
/// protocol left out has no limit. Each is above 0 and finite, as `bandwidth` checks.
fn channel_bandwidth(src: &Src, raw: &Spanned<RawPerProto>, key: &str) -> Result<PerProto, ScenarioError> {
    per_proto_of(src, raw, key, |v, key| bandwidth(src, v, key), Some(f64::INFINITY))
}

/// `efficiency: { ll: F, ll128: F }`: the bandwidth LL and LL128 carry data at, as a
/// fraction of the (Simple) bandwidth, each above 0; a protocol left out keeps its line
/// layout's share. Measured on a machine it is usually below the layout's share (the
/// protocol's stores cost more than its flags); above 1 is allowed, as a fit may find it.
fn efficiency(src: &Src, raw: &Spanned<RawPerProto>, key: &str) -> Result<PerProto, ScenarioError> {
    const ALLOWED: &str = "a map { ll: F, ll128: F } of numbers above 0 (Simple is 1 by definition)";
    let RawPerProto::Map(items) = &raw.value else {
        return Err(src.err(&raw.referenced, format!("{key}: expected {ALLOWED}")));
    };
    let mut e = PerProto::NCCL_EFFICIENCY;
    for (k, v) in items {
        let p = match Proto::from_name(&k.value) {
            Some(p @ (Proto::Ll | Proto::Ll128)) => p,
            _ => {
                return Err(src.err(&k.referenced, format!("{key}: unknown key '{}'; allowed: ll, ll128", k.value)));
            }
        };
        let f = factor(&v.value);
        if !(f > 0.0 && f.is_finite()) {
            return Err(
                src.err(&v.referenced, format!("{key}.{}: expected a number above 0, got {}", p.name(), src.shown(v)))
            );
        }
        match p {
            Proto::Ll => e.ll = f,
            _ => e.ll128 = f,
        }
    }
    Ok(e)
}

/// A time of every protocol (`key` names it in messages).
fn per_proto(src: &Src, raw: &Spanned<RawPerProto>, key: &str) -> Result<PerProto, ScenarioError> {
    per_proto_of(src, raw, key, |v, key| time(src, v, key), None)
}

/// A value of every protocol, each read by `value`: one for all, or a map by protocol
/// name. A protocol the map leaves out is `absent` where that is given, else an error.
fn per_proto_of(
    src: &Src,
    raw: &Spanned<RawPerProto>,
    key: &str,
    value: impl Fn(&Spanned<Scalar>, &str) -> Result<f64, ScenarioError>,
    absent: Option<f64>,
) -> Result<PerProto, ScenarioError> {
    let at = raw.referenced;
    match &raw.value {
        RawPerProto::One(v) => {
            let v = Spanned { value: v.clone(), referenced: at, defined: raw.defined };
            Ok(PerProto::all(value(&v, key)?))
        }
        RawPerProto::Map(items) => {
            let mut got: [Option<f64>; 3] = [None; 3];
            for (k, v) in items {
                let Some(p) = Proto::from_name(&k.value) else {
                    return Err(src.err(
                        &k.referenced,
                        format!("{key}: unknown protocol '{}'; allowed: simple, ll, ll128", k.value),
                    ));
                };
                got[p.index()] = Some(value(v, &format!("{key}.{}", p.name()))?);
            }
            let missing: Vec<&str> = Proto::ALL.iter().filter(|p| got[p.index()].is_none()).map(|p| p.name()).collect();
            if !missing.is_empty() && absent.is_none() {
                return Err(src.err(
                    &at,
                    format!(
                        "{key}: missing {}; give all of simple, ll and ll128, or one time for every protocol",
                        missing.join(", ")
                    ),
                ));
            }
            let [ll, ll128, simple] = got.map(|v| v.or(absent).unwrap_or(0.0));
            Ok(PerProto { ll, ll128, simple })
        }
    }
}

/// A whole number of at least `min`.
fn count(src: &Src, v: &Spanned<Scalar>, key: &str, what: &str, min: u64) -> Result<usize, ScenarioError> {
    whole(&v.value, min, usize::MAX as u64).map(|n| n as usize).ok_or_else(|| {
        src.err(
            &v.referenced,
            format!("{key}: must be a whole number of at least {min} ({what}), not {}", src.shown(v)),
        )
    })
}

/// Validate the keys of `kind: cluster` (the topology at `at`).
pub(super) fn cluster(src: &Src, at: Location, t: RawCluster) -> Result<ClusterSpec, ScenarioError> {
    let missing =
        |key: &str, what: &str| src.err(&at, format!("topology: missing key '{key}'; kind cluster needs {what}"));
    let nodes = match &t.nodes {
        None => return Err(missing("nodes", "the number of servers, e.g. nodes: 16")),
        Some(v) => count(src, v, "topology.nodes", "servers", 1)?,
    };
    let gpus = match &t.gpus_per_node {
        None => return Err(missing("gpus_per_node", "the GPUs in each server, e.g. gpus_per_node: 8")),
        Some(v) => count(src, v, "topology.gpus_per_node", "GPUs in each server", 1)?,
    };
    let Some(raw_intra) = t.intra else {
        return Err(missing(
            "intra",
            "how GPUs of a node talk, e.g. intra: { kind: nvswitch, alpha: 1us, bandwidth: 450GB/s }",
        ));
    };
    let intra_at = raw_intra.referenced;
    let ri = raw_intra.value;
    let kinds = [("nvswitch", IntraKind::Nvswitch), ("pcie", IntraKind::Pcie), ("nvlink", IntraKind::Nvlink)];
    let Some(kind_raw) = &ri.kind else {
        return Err(src.err(&intra_at, "topology.intra: missing key 'kind'; allowed: nvswitch, pcie, nvlink"));
    };
    let kind = super::choice(src, Some(kind_raw), "topology.intra.kind", &kinds, &[])?;
    let Some(alpha) = &ri.alpha else {
        return Err(src.err(
            &intra_at,
            "topology.intra: missing key 'alpha' (seconds per message inside a node, e.g. 1us, or one per \
             protocol { simple: 3.4us, ll: 0.6us, ll128: 1.9us })",
        ));
    };
    let intra_alpha = per_proto(src, alpha, "topology.intra.alpha")?;
    let Some(bw) = &ri.bandwidth else {
        return Err(src.err(
            &intra_at,
            "topology.intra: missing key 'bandwidth' (each way, per GPU; per NVLink for kind nvlink; e.g. 450GB/s)",
        ));
    };
    let intra_bw = bandwidth(src, bw, "topology.intra.bandwidth")?;
    let step_latency = ri
        .step_latency
        .as_ref()
        .map(|l| per_proto(src, l, "topology.intra.step_latency"))
        .transpose()?
        .unwrap_or(PerProto::all(0.0));
    let links_at = ri.links.as_ref().map(|l| l.referenced);
    let links = match (kind, ri.links) {
        (IntraKind::Nvlink, None) if gpus > 1 => {
            return Err(src.err(
                &intra_at,
                "topology.intra: missing key 'links'; kind nvlink needs the NVLinks between the node's GPUs, \
                 e.g. links: [[0, 1, 2], [0, 2, 1]] (GPU, GPU, how many NVLinks)",
            ));
        }
        (IntraKind::Nvlink, None) => Vec::new(),
        (_, Some(l)) if kind != IntraKind::Nvlink => {
            return Err(src.err(
                &l.referenced,
                format!(
                    "topology.intra.links: applies to kind nvlink only (an {} joins every pair alike); leave it out",
                    kind.name()
                ),
            ));
        }
        (_, None) => Vec::new(),
        (_, Some(l)) => nvlinks(src, l, gpus)?,
    };
    let nvls_efficiency = match &ri.nvls_efficiency {
        None => 1.0,
        Some(v) => {
            let f = factor(&v.value);
            if kind != IntraKind::Nvswitch {
                return Err(src.err(
                    &v.referenced,
                    format!(
                        "topology.intra.nvls_efficiency: applies to kind nvswitch only (NVLS needs an NVSwitch), \
                         not {}; leave it out",
                        kind.name()
                    ),
                ));
            }
            if !(f > 0.0 && f <= 1.0) {
                return Err(src.err(
                    &v.referenced,
                    format!(
                        "topology.intra.nvls_efficiency: expected a number above 0 and at most 1 (the fraction of \
                         the GPU's bandwidth NVLS's switch operations reach, e.g. 0.85), got {}",
                        src.shown(v)
                    ),
                ));
            }
            f
        }
    };
    let sockets_at = ri.sockets.as_ref().map(|l| l.referenced);
    let sockets = match ri.sockets {
        None => Vec::new(),
        Some(l) if kind != IntraKind::Pcie => {
            return Err(src.err(
                &l.referenced,
                format!(
                    "topology.intra.sockets: applies to kind pcie only (an {} joins its GPUs without the CPUs); \
                     leave it out",
                    kind.name()
                ),
            ));
        }
        Some(l) => socket_lists(src, l, gpus)?,
    };
    let socket_link = match ri.socket_link {
        None if sockets.len() > 1 => {
            return Err(src.err(
                &sockets_at.unwrap_or(intra_at),
                "topology.intra: missing key 'socket_link'; two or more sockets need the link between two CPUs, \
                 e.g. socket_link: { alpha: 1us, bandwidth: 20GB/s }",
            ));
        }
        None => None,
        Some(l) if sockets.len() < 2 => {
            return Err(src.err(
                &l.referenced,
                "topology.intra.socket_link: applies only where topology.intra.sockets lists two or more sockets",
            ));
        }
        Some(l) => {
            let Some(alpha) = &l.value.alpha else {
                return Err(src.err(
                    &l.referenced,
                    "topology.intra.socket_link: missing key 'alpha' (what a message across sockets adds, e.g. 1us, \
                     or one per protocol)",
                ));
            };
            let Some(bw) = &l.value.bandwidth else {
                return Err(src.err(
                    &l.referenced,
                    "topology.intra.socket_link: missing key 'bandwidth' (between two CPUs, each way, e.g. 20GB/s)",
                ));
            };
            Some(SocketLink {
                alpha_s: per_proto(src, alpha, "topology.intra.socket_link.alpha")?,
                bandwidth: bandwidth(src, bw, "topology.intra.socket_link.bandwidth")?,
            })
        }
    };
    let pci_bus = match ri.pci_bus {
        None => Vec::new(),
        Some(l) => pci_buses(src, l, gpus)?,
    };
    let nics = match &t.nics_per_node {
        None => 1,
        Some(v) => {
            let k = count(src, v, "topology.nics_per_node", "NICs in each server", 1)?;
            if k > gpus {
                return Err(src.err(
                    &v.referenced,
                    format!(
                        "topology.nics_per_node: {k} NICs for {gpus} GPUs per node; GPU g uses NIC \
                         floor(g * nics_per_node / gpus_per_node), so give at most {gpus}"
                    ),
                ));
            }
            k
        }
    };
    let inter = match t.inter {
        None if nodes > 1 => {
            return Err(missing(
                "inter",
                "how GPUs of different nodes talk through one NIC, e.g. inter: { alpha: 3us, bandwidth: 400Gbps }",
            ));
        }
        None => InterSpec::new(intra_alpha, intra_bw),
        Some(raw) => {
            let ia = raw.referenced;
            let Some(alpha) = &raw.value.alpha else {
                return Err(
                    src.err(&ia, "topology.inter: missing key 'alpha' (seconds per message across nodes, e.g. 3us)")
                );
            };
            let Some(bw) = &raw.value.bandwidth else {
                return Err(src.err(&ia, "topology.inter: missing key 'bandwidth' (per NIC, each way, e.g. 400Gbps)"));
            };
            let proxy = raw.value.proxy.as_ref().map(|p| per_proto(src, p, "topology.inter.proxy")).transpose()?;
            let nic_path = match &raw.value.nic_path {
                None => NicPath::default(),
                path => super::choice(src, path.as_ref(), "topology.inter.nic_path", &NicPath::NAMES, &[])?,
            };
            InterSpec {
                alpha_s: per_proto(src, alpha, "topology.inter.alpha")?,
                bandwidth: bandwidth(src, bw, "topology.inter.bandwidth")?,
                proxy_s: proxy.unwrap_or(PerProto::all(0.0)),
                nic_path,
                channel_bandwidth: match &raw.value.channel_bandwidth {
                    None => PerProto::all(f64::INFINITY),
                    Some(c) => channel_bandwidth(src, c, "topology.inter.channel_bandwidth")?,
                },
                efficiency: raw
                    .value
                    .efficiency
                    .as_ref()
                    .map(|e| efficiency(src, e, "topology.inter.efficiency"))
                    .transpose()?,
            }
        }
    };
    let fabric = match t.fabric {
        None => FabricSpec { kind: FabricKind::RailOptimized, hosts_per_leaf: None, spines: 1, uplink: None },
        Some(raw) => fabric(src, raw, nodes.saturating_mul(nics))?,
    };
    let launch =
        t.launch.as_ref().map(|l| per_proto(src, l, "topology.launch")).transpose()?.unwrap_or(PerProto::all(0.0));
    let efficiency = t
        .efficiency
        .as_ref()
        .map(|e| efficiency(src, e, "topology.efficiency"))
        .transpose()?
        .unwrap_or(PerProto::NCCL_EFFICIENCY);
    let channel_bandwidth = t
        .channel_bandwidth
        .as_ref()
        .map(|c| channel_bandwidth(src, c, "topology.channel_bandwidth"))
        .transpose()?
        .unwrap_or(PerProto::all(f64::INFINITY));
    let spec = ClusterSpec {
        nodes,
        gpus_per_node: gpus,
        intra: IntraSpec {
            kind,
            alpha_s: intra_alpha,
            bandwidth: intra_bw,
            step_latency_s: step_latency,
            links,
            nvls_efficiency,
            sockets,
            socket_link,
            pci_bus,
        },
        nics_per_node: nics,
        inter,
        fabric,
        launch_s: launch,
        efficiency,
        channel_bandwidth,
    };
    let all = nodes.checked_mul(gpus).ok_or_else(|| src.err(&at, "topology: more GPUs than this machine can count"))?;
    if let Err(why) = Cluster::new(&spec, all) {
        let loc = if why.starts_with("intra.links") {
            links_at.unwrap_or(intra_at)
        } else if why.starts_with("intra.sockets") {
            sockets_at.unwrap_or(intra_at)
        } else {
            at
        };
        return Err(src.err(&loc, format!("topology: {why}")));
    }
    Ok(spec)
}

/// `intra.links: [[a, b, count], ...]`, GPUs of one node.
fn nvlinks(
    src: &Src,
    raw: Spanned<Vec<Spanned<Vec<Spanned<Scalar>>>>>,
    gpus: usize,
) -> Result<Vec<[usize; 3]>, ScenarioError> {
    let mut out = Vec::new();
    for (i, entry) in raw.value.iter().enumerate() {
        let key = format!("topology.intra.links[{i}]");
        if entry.value.len() != 3 {
            return Err(src.err(
                &entry.referenced,
                format!(
                    "{key}: expected [GPU, GPU, NVLinks], three whole numbers, not a list of {}",
                    entry.value.len()
                ),
            ));
        }
        let mut v = [0usize; 3];
        for (j, x) in entry.value.iter().enumerate() {
            v[j] = if j < 2 {
                whole(&x.value, 0, gpus as u64 - 1).map(|n| n as usize).ok_or_else(|| {
                    src.err(
                        &x.referenced,
                        format!("{key}: {} is not a GPU of the node; GPUs are 0 to {}", src.shown(x), gpus - 1),
                    )
                })?
            } else {
                whole(&x.value, 1, u64::from(u32::MAX)).map(|n| n as usize).ok_or_else(|| {
                    src.err(
                        &x.referenced,
                        format!(
                            "{key}: the count of NVLinks must be a whole number of at least 1, not {}",
                            src.shown(x)
                        ),
                    )
                })?
            };
        }
        out.push(v);
    }
    Ok(out)
}

/// `intra.sockets: [[gpu, ...], ...]`: the GPUs under each CPU socket (that each GPU
/// is listed once is checked with the machine).
fn socket_lists(src: &Src, raw: Spanned<RawLinks>, gpus: usize) -> Result<Vec<Vec<usize>>, ScenarioError> {
    let mut out = Vec::new();
    for (i, entry) in raw.value.iter().enumerate() {
        let mut list = Vec::new();
        for x in &entry.value {
            list.push(whole(&x.value, 0, gpus as u64 - 1).map(|n| n as usize).ok_or_else(|| {
                src.err(
                    &x.referenced,
                    format!(
                        "topology.intra.sockets[{i}]: {} is not a GPU of the node; GPUs are 0 to {}",
                        src.shown(x),
                        gpus - 1
                    ),
                )
            })?);
        }
        out.push(list);
    }
    Ok(out)
}

/// `intra.pci_bus: [bus, ...]`: each GPU's PCI bus in GPU order, distinct.
fn pci_buses(src: &Src, raw: Spanned<Vec<Spanned<Scalar>>>, gpus: usize) -> Result<Vec<String>, ScenarioError> {
    if raw.value.len() != gpus {
        return Err(src.err(
            &raw.referenced,
            format!(
                "topology.intra.pci_bus: names {} GPUs but a node has {gpus}; give every GPU's bus, in GPU order",
                raw.value.len()
            ),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (g, v) in raw.value.iter().enumerate() {
        // An unquoted `61` reads as the bus 61, as written; `0x4a` reads as the number 74,
        // which as a bus would be another one (0x74) taken without a word.
        if matches!(v.value, Scalar::UInt(_) | Scalar::Int(_) | Scalar::Float(_))
            && let Some(w) = src.word_at(&v.referenced)
            && !w.starts_with('*')
            && !w.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(src.err(
                &v.referenced,
                format!(
                    "topology.intra.pci_bus[{g}]: {w} is a YAML number ({}), not a bus as lspci writes it; quote \
                     the bus, e.g. \"4a\" or \"0000:4a:00\"",
                    v.value.text()
                ),
            ));
        }
        let key = pci_bus_key(&v.value.text()).ok_or_else(|| {
            src.err(
                &v.referenced,
                format!(
                    "topology.intra.pci_bus[{g}]: {} is not a PCI bus; write it as lspci or nccl-tests does, \
                     e.g. \"4a\" or \"0000:4a:00\"",
                    src.shown(v)
                ),
            )
        })?;
        if let Some(h) = out.iter().position(|b| *b == key) {
            return Err(src.err(
                &v.referenced,
                format!("topology.intra.pci_bus[{g}]: bus {key} is GPU {h}'s already; each GPU has its own"),
            ));
        }
        out.push(key);
    }
    Ok(out)
}

/// `fabric:`.
fn fabric(src: &Src, raw: Spanned<RawFabric>, all_nics: usize) -> Result<FabricSpec, ScenarioError> {
    let at = raw.referenced;
    let f = raw.value;
    let kinds = [("rail_optimized", FabricKind::RailOptimized), ("fat_tree", FabricKind::FatTree)];
    let kind = super::choice(src, f.kind.as_ref(), "topology.fabric.kind", &kinds, &[])?;
    let hosts_per_leaf = match (&f.hosts_per_leaf, kind) {
        (Some(v), FabricKind::FatTree) => {
            Some(count(src, v, "topology.fabric.hosts_per_leaf", "NICs under each leaf switch", 1)?)
        }
        (Some(v), FabricKind::RailOptimized) => {
            return Err(src.err(
                &v.referenced,
                "topology.fabric.hosts_per_leaf: applies to kind fat_tree only (rail_optimized puts NIC i of every \
                 node under leaf i)",
            ));
        }
        (None, FabricKind::FatTree) => {
            return Err(src.err(
                &at,
                "topology.fabric: missing key 'hosts_per_leaf'; kind fat_tree needs the NICs under each leaf switch",
            ));
        }
        (None, _) => None,
    };
    let spines = match &f.spines {
        None => 1,
        Some(v) => count(src, v, "topology.fabric.spines", "spine switches", 1)?,
    };
    // As the fat_tree kind: a message climbs to spine (destination NIC mod spines), so
    // spines past the NICs carry nothing, yet each leaf's default uplinks would be split
    // among them all (every message at a sliver of the NIC's rate).
    if kind == FabricKind::FatTree
        && spines > all_nics
        && let Some(v) = &f.spines
    {
        return Err(src.err(
            &v.referenced,
            format!(
                "topology.fabric.spines: {spines} is more spines than the cluster has NICs ({all_nics}); a message \
                 takes spine (destination NIC mod spines), so the rest would carry nothing: write spines from 1 to \
                 {all_nics}"
            ),
        ));
    }
    let uplink = match f.uplink {
        None => None,
        Some(u) => {
            let Some(bw) = &u.value.bandwidth else {
                return Err(src.err(
                    &u.referenced,
                    "topology.fabric.uplink: missing key 'bandwidth' (each leaf to each spine, e.g. 400Gbps)",
                ));
            };
            let alpha = u.value.alpha.as_ref().map(|a| time(src, a, "topology.fabric.uplink.alpha")).transpose()?;
            Some(Link {
                alpha: alpha.unwrap_or(0.0),
                bandwidth: bandwidth(src, bw, "topology.fabric.uplink.bandwidth")?,
            })
        }
    };
    Ok(FabricSpec { kind, hosts_per_leaf, spines, uplink })
}

/// A fraction or factor as written: a number, or a string of one (`"0.5"`, as counts may
/// be strings of digits); NaN for anything else, which every caller refuses.
fn factor(v: &Scalar) -> f64 {
    match v {
        Scalar::UInt(n) => *n as f64,
        Scalar::Float(f) => *f,
        Scalar::Str(s) => s.trim().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}
