//! A cluster of GPU nodes (`kind: cluster`, docs/gpu-clusters.md): `nodes` servers of
//! `gpus_per_node` GPUs, joined inside by an NVSwitch, a PCIe switch or explicit NVLinks,
//! and across by `nics_per_node` NICs on rails.
//!
//! Rank `r` is GPU `r % G` of node `r / G` (`G` GPUs per node); GPU `g` uses its node's
//! NIC `floor(g K / G)` (`K` NICs per node), so consecutive GPUs share a NIC when there
//! are fewer NICs than GPUs. A run of fewer ranks than GPUs takes one node's first
//! ranks; more take whole nodes.
//!
//! **Pair costs** are what one message alone measures: inside a node `intra.alpha +
//! m / intra.bandwidth` (NVLink: the bandwidth of one link times the links between the
//! pair), across nodes `inter.alpha + m / inter.bandwidth`. Two GPUs without an NVLink
//! between them talk as NCCL routes them (its `NVB` paths): through the intermediate GPU
//! with NVLinks to both whose thinner bundle is widest (ties to the lowest GPU), paying
//! both hops' alphas and the thinner bundle's bandwidth. A pair with no such GPU is
//! refused (NCCL would go through host memory, which this kind does not model).
//!
//! **Protocols.** [`Cluster::with_protocol`] gives the machine as protocol `p` sees it:
//! every alpha is the machine's value for `p`, every bandwidth is scaled by
//! [`Proto::efficiency`].
//!
//! **Interfaces** ([`Topology::interfaces`]): interface `r < P` is GPU `r`'s intra-node
//! interface (one port each way; NVLink: one per GPU it has NVLinks to under the ideal
//! model, and no limit under the flow model, whose NVLink bundles are links the messages
//! crossing them share). Under the ideal
//! model interface `P + n K + i` is NIC `i` of node `n`, one port each way, shared by the
//! GPUs of its rail: a NIC serves one of their messages at a time. Under the flow model
//! ([`Cluster::for_flow`]) interface `P + r` is GPU `r`'s own port toward its NIC, and
//! the NIC's bandwidth is shared on its link instead.
//!
//! **Links** (the flow model's [`Fabric`]), each full duplex with every bandwidth
//! scaled by the protocol's efficiency:
//! - `nvswitch`: GPU to its node's switch, `intra.alpha / 2` and `intra.bandwidth`;
//! - `pcie`: the same to the node's PCIe switch, whose one core link (`intra.bandwidth`,
//!   no latency) every message inside the node crosses, whichever way it goes;
//! - `nvlink`: one link per listed pair, `intra.alpha` and `count * intra.bandwidth`;
//! - GPU to its NIC (no latency, `inter.bandwidth`), NIC to its leaf switch
//!   (`inter.alpha / 2`, `inter.bandwidth`), leaf to every spine (`uplink`).
//!
//! `rail_optimized` puts NIC `i` of every node under leaf `i`; `fat_tree` puts NIC
//! `n K + i` under leaf `(n K + i) / hosts_per_leaf`. Between leaves a message climbs to
//! spine `(destination NIC) mod spines` (D-mod-k). Without an `uplink` each leaf's
//! uplinks carry what its NICs can send (not oversubscribed) at no latency, so every
//! pair across nodes costs the same; an `uplink` with an alpha adds twice it across
//! leaves.

use serde::{Deserialize, Serialize};

use super::spec::LinkRepr;
use super::{Fabric, Link, LinkId, Proto, Topology, oversubscription, oversubscription_text};

/// Ports of an NVLink GPU's interface under the flow model: more than any schedule has
/// messages in flight, so that only the bundles' bandwidth limits them.
const NVLINK_FLOW_PORTS: u32 = 1 << 20;

/// A value per protocol, seconds, indexed by [`Proto::index`] (LL, LL128, Simple).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerProto {
    /// LL's.
    #[serde(deserialize_with = "de_or_unlimited")]
    pub ll: f64,
    /// LL128's.
    #[serde(deserialize_with = "de_or_unlimited")]
    pub ll128: f64,
    /// Simple's.
    #[serde(deserialize_with = "de_or_unlimited")]
    pub simple: f64,
}

/// A value of a report's [`PerProto`]: JSON has no infinity, so a protocol left without a
/// rate (`channel_bandwidth: { ll: 1GB/s }`: LL128 and Simple unlimited) is written as
/// `null`, and `merge` refused the shards `run` wrote. Read back as unlimited.
fn de_or_unlimited<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

impl PerProto {
    /// Each protocol's share of a link's bandwidth that is data, from the layout of its
    /// lines alone ([`Proto::efficiency`]): what a cluster's `efficiency` defaults to.
    pub const NCCL_EFFICIENCY: PerProto = PerProto { ll: 0.5, ll128: 120.0 / 128.0, simple: 1.0 };
    /// The same value for every protocol.
    pub fn all(v: f64) -> PerProto {
        PerProto { ll: v, ll128: v, simple: v }
    }
    /// The value for `p`.
    pub fn of(&self, p: Proto) -> f64 {
        match p {
            Proto::Ll => self.ll,
            Proto::Ll128 => self.ll128,
            Proto::Simple => self.simple,
        }
    }
}

/// What joins the GPUs of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntraKind {
    /// An NVSwitch: every GPU has `intra.bandwidth` to it each way.
    Nvswitch,
    /// A PCIe switch whose `intra.bandwidth` all the node's GPUs share, both ways.
    Pcie,
    /// Explicit GPU-GPU NVLinks (`links`), `intra.bandwidth` each.
    Nvlink,
}

impl IntraKind {
    /// The name as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            IntraKind::Nvswitch => "nvswitch",
            IntraKind::Pcie => "pcie",
            IntraKind::Nvlink => "nvlink",
        }
    }
}

/// `intra:` of a cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntraSpec {
    /// NVSwitch, PCIe or NVLink.
    pub kind: IntraKind,
    /// Seconds per message, per protocol.
    pub alpha_s: PerProto,
    /// Bytes per second each way: per GPU (NVSwitch, PCIe) or per NVLink.
    #[serde(rename = "bandwidth_Bps")]
    pub bandwidth: f64,
    /// Seconds per protocol that NCCL's ring and tree pay once per call for every step
    /// of their pipeline inside a node (NCCL's tuning model's per-step hardware
    /// latency, charged at every size; docs/gpu-clusters.md, "Step latency"); 0 unless
    /// given.
    #[serde(default = "zero_per_proto", skip_serializing_if = "is_zero_per_proto")]
    pub step_latency_s: PerProto,
    /// NVLink only: `[gpu a, gpu b, links]`, each pair once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<[usize; 3]>,
    /// NVSwitch only: the fraction of `bandwidth` at which NVLS's switch operations
    /// (loads the switch adds, stores it copies to every GPU) move data; 1 unless given.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nvls_efficiency: f64,
    /// PCIe only: the node's GPUs under each CPU socket, every GPU once; empty is one
    /// socket holding them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sockets: Vec<Vec<usize>>,
    /// PCIe with two or more sockets: the link between two CPUs, which a pair across
    /// sockets crosses on top of the pair cost inside one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_link: Option<SocketLink>,
    /// Each GPU's PCI bus (`4a`, `0000:4a:00`), where given: only `calibrate` reads it,
    /// to put a log's ranks on the GPUs its device lines name by bus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci_bus: Vec<String>,
}

/// `intra.socket_link` of a PCIe node: between two CPU sockets, each way.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SocketLink {
    /// Seconds a message crossing it adds, per protocol.
    pub alpha_s: PerProto,
    /// Bytes per second each way between two sockets.
    #[serde(rename = "bandwidth_Bps")]
    pub bandwidth: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

/// `inter:` of a cluster: one message between GPUs of different nodes, alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterSpec {
    /// Seconds per message, per protocol.
    pub alpha_s: PerProto,
    /// Bytes per second each way, per NIC.
    #[serde(rename = "bandwidth_Bps")]
    pub bandwidth: f64,
    /// Seconds per protocol that a GPU's network proxy spends on each of its network
    /// connections before a message leaves it (`inter.proxy`, docs/gpu-clusters.md,
    /// "Network proxy"): a message across nodes pays it once for every connection across
    /// nodes its sender has in the running collective. 0 unless given.
    #[serde(default = "zero_per_proto", skip_serializing_if = "is_zero_per_proto")]
    pub proxy_s: PerProto,
    /// What the PCIe path between a GPU and its NIC crosses (`inter.nic_path`, NCCL's
    /// path type): NCCL enables LL128 across nodes only where it is [`NicPath::Pxb`] or
    /// closer (docs/gpu-clusters.md, "The path to the NIC"). `pxb` unless given.
    #[serde(default, skip_serializing_if = "NicPath::is_default")]
    pub nic_path: NicPath,
    /// Bytes per second, per protocol, at which one channel hands a message to the
    /// network (`inter.channel_bandwidth`, docs/gpu-clusters.md, "A channel's rate across
    /// nodes"): its thread block writes the whole step into the proxy's buffer before
    /// the proxy sends it. Infinite (no limit) unless given.
    #[serde(default = "unlimited", skip_serializing_if = "is_unlimited")]
    pub channel_bandwidth: PerProto,
    /// The fraction of the NIC's bandwidth each protocol carries data at across nodes
    /// (`inter.efficiency`); the cluster's `efficiency` unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<PerProto>,
}

impl InterSpec {
    /// `alpha_s` and `bandwidth` with no proxy cost, the NIC under the GPUs' PCIe switches.
    pub fn new(alpha_s: PerProto, bandwidth: f64) -> InterSpec {
        InterSpec {
            alpha_s,
            bandwidth,
            proxy_s: PerProto::all(0.0),
            nic_path: NicPath::default(),
            channel_bandwidth: unlimited(),
            efficiency: None,
        }
    }
}

/// What the PCIe path between a GPU and its NIC crosses, by NCCL's path types (which
/// `nvidia-smi topo -m` prints, its `NODE` being NCCL's `PHB`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NicPath {
    /// One PCIe switch between them.
    Pix,
    /// Several PCIe switches, no CPU: the DGX and HGX boards' NICs under the GPUs' switches.
    #[default]
    Pxb,
    /// Through the CPU they share (a NIC on the CPU's own lanes, the GPUs behind a switch).
    Phb,
    /// Across the link between two CPUs.
    Sys,
}

impl NicPath {
    /// The names a machine file may give, closest first.
    pub const NAMES: [(&'static str, NicPath); 4] =
        [("pix", NicPath::Pix), ("pxb", NicPath::Pxb), ("phb", NicPath::Phb), ("sys", NicPath::Sys)];

    /// The path goes through a CPU (`phb` or `sys`), where NCCL turns LL128 off across
    /// nodes and GPU Direct RDMA off by default.
    pub fn through_cpu(self) -> bool {
        matches!(self, NicPath::Phb | NicPath::Sys)
    }

    fn is_default(&self) -> bool {
        *self == NicPath::default()
    }
}

/// How the NICs' leaf switches are arranged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricKind {
    /// NIC `i` of every node under leaf `i`.
    RailOptimized,
    /// NICs in order under leaves of `hosts_per_leaf`.
    FatTree,
}

/// `fabric:` of a cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FabricSpec {
    /// Rail-optimized or a fat tree.
    pub kind: FabricKind,
    /// Fat tree: NICs under each leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_per_leaf: Option<usize>,
    /// Spine switches joining the leaves.
    pub spines: usize,
    /// Each leaf's link to each spine, if given (else not oversubscribed, no latency).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "ser_uplink",
        deserialize_with = "de_uplink"
    )]
    pub uplink: Option<Link>,
}

fn ser_uplink<S: serde::Serializer>(l: &Option<Link>, s: S) -> Result<S::Ok, S::Error> {
    l.as_ref().map(LinkRepr::from).serialize(s)
}

fn de_uplink<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Link>, D::Error> {
    Ok(Option::<LinkRepr>::deserialize(d)?.map(Link::from))
}

/// `topology: { kind: cluster, ... }` as validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterSpec {
    /// Servers.
    pub nodes: usize,
    /// GPUs per server.
    pub gpus_per_node: usize,
    /// Inside a node.
    pub intra: IntraSpec,
    /// NICs per node.
    pub nics_per_node: usize,
    /// Across nodes.
    pub inter: InterSpec,
    /// The NICs' switches.
    pub fabric: FabricSpec,
    /// Seconds once per collective per rank before its first operation, per protocol.
    pub launch_s: PerProto,
    /// The fraction of every bandwidth each protocol carries data at (Simple 1); left
    /// out of the report when it is [`PerProto::NCCL_EFFICIENCY`].
    #[serde(default = "nccl_efficiency", skip_serializing_if = "is_nccl_efficiency")]
    pub efficiency: PerProto,
    /// Bytes per second one channel (one of NCCL's thread blocks, a stream of the
    /// programs) moves at most, per protocol, whatever its links carry; infinite (no
    /// limit) by default (docs/gpu-clusters.md, "Channel bandwidth").
    #[serde(default = "unlimited", skip_serializing_if = "is_unlimited")]
    pub channel_bandwidth: PerProto,
}

fn zero_per_proto() -> PerProto {
    PerProto::all(0.0)
}

fn is_zero_per_proto(v: &PerProto) -> bool {
    *v == PerProto::all(0.0)
}

fn unlimited() -> PerProto {
    PerProto::all(f64::INFINITY)
}

fn is_unlimited(v: &PerProto) -> bool {
    *v == PerProto::all(f64::INFINITY)
}

fn nccl_efficiency() -> PerProto {
    PerProto::NCCL_EFFICIENCY
}

fn is_nccl_efficiency(e: &PerProto) -> bool {
    *e == PerProto::NCCL_EFFICIENCY
}

/// How a pair inside a node is joined under NVLink: directly by bundle `e`, or through
/// GPU `via` by bundles `e` (from the source) and `e2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NvRoute {
    Direct(usize),
    Via(usize, usize),
}

impl ClusterSpec {
    /// Each protocol's share of the NIC's bandwidth: `inter.efficiency`, else `efficiency`.
    pub fn inter_efficiency(&self) -> &PerProto {
        self.inter.efficiency.as_ref().unwrap_or(&self.efficiency)
    }

    /// `nodes` x `gpus` GPUs joined inside by `intra` (no NVLink list) and across by
    /// `nics` NICs per node of `inter` on rails (one spine, no uplink), each protocol
    /// starting after `launch_s` and carrying data at NCCL's efficiency: the cluster the
    /// parser builds when `links`, `fabric` and `efficiency` are left out.
    pub fn on_rails(
        nodes: usize,
        gpus: usize,
        nics: usize,
        (kind, alpha_s, bandwidth): (IntraKind, PerProto, f64),
        inter: InterSpec,
        launch_s: PerProto,
    ) -> ClusterSpec {
        ClusterSpec {
            nodes,
            gpus_per_node: gpus,
            intra: IntraSpec {
                kind,
                alpha_s,
                bandwidth,
                step_latency_s: PerProto::all(0.0),
                links: Vec::new(),
                nvls_efficiency: 1.0,
                sockets: Vec::new(),
                socket_link: None,
                pci_bus: Vec::new(),
            },
            nics_per_node: nics,
            inter,
            fabric: FabricSpec { kind: FabricKind::RailOptimized, hosts_per_leaf: None, spines: 1, uplink: None },
            launch_s,
            efficiency: PerProto::NCCL_EFFICIENCY,
            channel_bandwidth: unlimited(),
        }
    }
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Cluster {
    spec: ClusterSpec,
    ranks: usize,
    /// Nodes the ranks occupy.
    nodes: usize,
    proto: Proto,
    flow: bool,
    /// Leaves and NICs under each (fat tree: the last may hold fewer).
    leaves: usize,
    per_leaf: usize,
    uplink: Link,
    /// NVLink: bundles `(a, b, count)` with `a < b`, and the route of every ordered
    /// pair of a node's GPUs, `G * G` (the diagonal unused).
    bundles: Vec<(usize, usize, u32)>,
    nv_routes: Vec<NvRoute>,
    nv_ports: Vec<u32>,
    /// PCIe: the socket of each of a node's GPUs, and how many sockets a node has.
    socket_of: Vec<usize>,
    sockets: usize,
}

impl Cluster {
    /// The machine `spec` describes, running `ranks` ranks, as Simple sees it under the
    /// ideal model. Errors on a count of 0, more NICs than GPUs per node, a value that
    /// is negative or not finite, an NVLink list that leaves a pair without a route, or
    /// a rank count that is neither part of one node nor whole nodes.
    pub fn new(spec: &ClusterSpec, ranks: usize) -> Result<Cluster, String> {
        check(spec)?;
        let g = spec.gpus_per_node;
        let max = spec.nodes * g;
        if ranks == 0 || ranks > max || (ranks > g && !ranks.is_multiple_of(g)) {
            return Err(format!(
                "a cluster of {} nodes x {g} GPUs runs 1 to {g} ranks on one node or whole nodes (a multiple of \
                 {g} up to {max}), not {ranks}",
                spec.nodes
            ));
        }
        let k = spec.nics_per_node;
        let (leaves, per_leaf) = match spec.fabric.kind {
            FabricKind::RailOptimized => (k, spec.nodes),
            FabricKind::FatTree => {
                let h = spec.fabric.hosts_per_leaf.unwrap_or(spec.nodes * k);
                ((spec.nodes * k).div_ceil(h), h)
            }
        };
        let spines = spec.fabric.spines;
        let uplink = spec
            .fabric
            .uplink
            .unwrap_or(Link { alpha: 0.0, bandwidth: per_leaf as f64 * spec.inter.bandwidth / spines as f64 });
        let (bundles, nv_routes, nv_ports) = if spec.intra.kind == IntraKind::Nvlink {
            nvlink_routes(g, &spec.intra.links)?
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        let (socket_of, sockets) = socket_map(g, &spec.intra.sockets)?;
        Ok(Cluster {
            spec: spec.clone(),
            ranks,
            nodes: ranks.div_ceil(g),
            proto: Proto::Simple,
            flow: false,
            leaves,
            per_leaf,
            uplink,
            bundles,
            nv_routes,
            nv_ports,
            socket_of,
            sockets,
        })
    }

    /// The same machine as protocol `p` sees it (see the module docs).
    pub fn with_protocol(mut self, p: Proto) -> Self {
        self.proto = p;
        self
    }

    /// The same machine with its interfaces as the flow model has them: every GPU its
    /// own port toward its NIC (see the module docs).
    pub fn for_flow(mut self, flow: bool) -> Self {
        self.flow = flow;
        self
    }

    /// The protocol this view is for.
    pub fn protocol(&self) -> Proto {
        self.proto
    }

    /// `launch` for this view's protocol.
    pub fn launch(&self) -> f64 {
        self.spec.launch_s.of(self.proto)
    }

    /// `inter.proxy` for this view's protocol.
    pub fn proxy(&self) -> f64 {
        self.spec.inter.proxy_s.of(self.proto)
    }

    /// `intra.step_latency` for this view's protocol.
    pub fn step_latency(&self) -> f64 {
        self.spec.intra.step_latency_s.of(self.proto)
    }

    /// GPUs per node the ranks use (fewer than the machine's on a partial node).
    fn gpus(&self) -> usize {
        self.ranks.min(self.spec.gpus_per_node)
    }

    /// The node-local NIC GPU `g` uses: `floor(g K / G)`.
    pub fn nic_of_gpu(&self, g: usize) -> usize {
        g * self.spec.nics_per_node / self.spec.gpus_per_node
    }

    /// The global NIC (`n K + i`) rank `r` uses.
    fn nic(&self, r: usize) -> usize {
        let g = self.spec.gpus_per_node;
        (r / g) * self.spec.nics_per_node + self.nic_of_gpu(r % g)
    }

    fn leaf_of_nic(&self, j: usize) -> usize {
        match self.spec.fabric.kind {
            FabricKind::RailOptimized => j % self.spec.nics_per_node,
            FabricKind::FatTree => j / self.per_leaf,
        }
    }

    fn eff(&self) -> f64 {
        self.spec.efficiency.of(self.proto)
    }

    /// The protocol's share of the NIC's bandwidth: `inter.efficiency`, else `efficiency`.
    fn inter_eff(&self) -> f64 {
        self.spec.inter_efficiency().of(self.proto)
    }

    /// Hop costs under this view.
    fn intra_half(&self) -> Link {
        Link { alpha: self.spec.intra.alpha_s.of(self.proto) / 2.0, bandwidth: self.spec.intra.bandwidth * self.eff() }
    }
    fn pcie_core(&self) -> Link {
        Link { alpha: 0.0, bandwidth: self.spec.intra.bandwidth * self.eff() }
    }
    /// Between two CPU sockets (only a machine with two or more has one).
    fn socket_hop(&self) -> Link {
        let l =
            self.spec.intra.socket_link.unwrap_or(SocketLink { alpha_s: PerProto::all(0.0), bandwidth: f64::INFINITY });
        Link { alpha: l.alpha_s.of(self.proto), bandwidth: l.bandwidth * self.eff() }
    }
    fn bundle(&self, e: usize) -> Link {
        let count = f64::from(self.bundles[e].2);
        Link {
            alpha: self.spec.intra.alpha_s.of(self.proto),
            bandwidth: self.spec.intra.bandwidth * count * self.eff(),
        }
    }
    fn gpu_nic(&self) -> Link {
        Link { alpha: 0.0, bandwidth: self.spec.inter.bandwidth * self.inter_eff() }
    }
    fn nic_leaf(&self) -> Link {
        Link {
            alpha: self.spec.inter.alpha_s.of(self.proto) / 2.0,
            bandwidth: self.spec.inter.bandwidth * self.inter_eff(),
        }
    }
    fn spine(&self) -> Link {
        Link { alpha: self.uplink.alpha, bandwidth: self.uplink.bandwidth * self.inter_eff() }
    }

    /// The cost of a pair across nodes, under one leaf (`false`) or across leaves.
    fn far(&self, cross_leaf: bool) -> Link {
        let (n, l, s) = (self.gpu_nic(), self.nic_leaf(), self.spine());
        if cross_leaf { fold(&[n, l, s, s, l, n]) } else { fold(&[n, l, l, n]) }
    }

    /// The cost of a pair inside a node.
    fn near(&self, ga: usize, gb: usize) -> Link {
        match self.spec.intra.kind {
            IntraKind::Nvswitch => fold(&[self.intra_half(), self.intra_half()]),
            IntraKind::Pcie if self.socket_of[ga] != self.socket_of[gb] => {
                fold(&[self.intra_half(), self.pcie_core(), self.socket_hop(), self.pcie_core(), self.intra_half()])
            }
            IntraKind::Pcie => fold(&[self.intra_half(), self.pcie_core(), self.intra_half()]),
            IntraKind::Nvlink => match self.nv_routes[ga * self.spec.gpus_per_node + gb] {
                NvRoute::Direct(e) => fold(&[self.bundle(e)]),
                NvRoute::Via(e, e2) => fold(&[self.bundle(e), self.bundle(e2)]),
            },
        }
    }

    /// A pair inside a node where no two GPUs talk (one GPU per node, or one rank): the
    /// intra-node alpha and bandwidth as given.
    fn nominal(&self) -> Link {
        Link { alpha: self.spec.intra.alpha_s.of(self.proto), bandwidth: self.spec.intra.bandwidth * self.eff() }
    }

    /// Whether some two GPUs of different nodes talk through NICs under one leaf, and
    /// whether some two talk through NICs under different leaves.
    fn leaf_pairs(&self) -> (bool, bool) {
        if self.nodes < 2 {
            return (false, false);
        }
        let k = self.spec.nics_per_node;
        let mut used = vec![false; k];
        for g in 0..self.gpus() {
            used[self.nic_of_gpu(g)] = true;
        }
        // For each leaf, the first node with a used NIC under it: a second node there is
        // a pair under one leaf; a second leaf is a pair across leaves.
        let mut first_node = vec![usize::MAX; self.leaves];
        let (mut same, mut leaves_used) = (false, 0);
        for n in 0..self.nodes {
            for i in (0..k).filter(|&i| used[i]) {
                let l = self.leaf_of_nic(n * k + i);
                if first_node[l] == usize::MAX {
                    first_node[l] = n;
                    leaves_used += 1;
                } else if first_node[l] != n {
                    same = true;
                }
            }
        }
        (same, leaves_used > 1)
    }

    /// The leaf's NICs' bandwidth over its uplinks' (`hosts_per_leaf B / (spines U)`).
    pub fn oversubscription(&self) -> f64 {
        oversubscription(self.per_leaf, self.spec.fabric.spines, self.spec.inter.bandwidth, self.uplink.bandwidth)
    }

    /// Whether the GPUs the ranks use sit under more than one CPU socket: then pairs
    /// inside a node cost two ways.
    fn spans_sockets(&self) -> bool {
        (0..self.gpus()).any(|x| self.socket_of[x] != self.socket_of[0])
    }

    fn intra_ports(&self, g: usize) -> u32 {
        if self.spec.intra.kind == IntraKind::Nvlink { self.nv_ports[g].max(1) } else { 1 }
    }

    // LinkId layout: [0, 2P) GPU r to its switch (2r up, 2r + 1 down); [2P, 4P) GPU r to
    // its NIC; then NIC j to its leaf (2j up); then leaf l to spine s (2 (l S + s) up);
    // then each socket's PCIe core (n S + s, S sockets per node: one per node without
    // sockets); then the links between sockets (s to t of node n: n S (S - 1) + s (S - 1)
    // + t, less one where t > s); then NVLink bundle e of node n (2 (n E + e) from its
    // lower GPU).
    fn base_nic(&self) -> u64 {
        2 * self.ranks as u64
    }
    fn base_leaf(&self) -> u64 {
        4 * self.ranks as u64
    }
    fn base_spine(&self) -> u64 {
        self.base_leaf() + 2 * (self.nodes * self.spec.nics_per_node) as u64
    }
    fn base_core(&self) -> u64 {
        self.base_spine() + 2 * (self.leaves * self.spec.fabric.spines) as u64
    }
    fn base_socket(&self) -> u64 {
        self.base_core() + if self.spec.intra.kind == IntraKind::Pcie { (self.nodes * self.sockets) as u64 } else { 0 }
    }
    fn base_nvlink(&self) -> u64 {
        let s = self.sockets;
        self.base_socket() + if self.spec.intra.kind == IntraKind::Pcie { (self.nodes * s * (s - 1)) as u64 } else { 0 }
    }
    fn core_id(&self, node: usize, socket: usize) -> LinkId {
        self.base_core() + (node * self.sockets + socket) as u64
    }
    fn socket_id(&self, node: usize, from: usize, to: usize) -> LinkId {
        let s = self.sockets;
        self.base_socket() + (node * s * (s - 1) + from * (s - 1) + if to < from { to } else { to - 1 }) as u64
    }
    /// The name of a node's PCIe switch (one socket) or of one of its CPU sockets.
    fn pcie_name(&self, node: usize, socket: usize) -> String {
        if self.sockets == 1 { format!("n{node}pcie") } else { format!("n{node}cpu{socket}") }
    }
    fn bundle_id(&self, node: usize, from: usize, e: usize) -> LinkId {
        let up = self.bundles[e].0 == from;
        self.base_nvlink() + 2 * (node * self.bundles.len() + e) as u64 + u64::from(!up)
    }
}

/// Alphas added in route order from 0 and the slowest bandwidth, as
/// [`super::route_cost`] adds a route's hops.
fn fold(hops: &[Link]) -> Link {
    hops.iter().fold(Link { alpha: 0.0, bandwidth: f64::INFINITY }, |acc, l| Link {
        alpha: acc.alpha + l.alpha,
        bandwidth: acc.bandwidth.min(l.bandwidth),
    })
}

fn check(spec: &ClusterSpec) -> Result<(), String> {
    for (what, n) in [
        ("nodes", spec.nodes),
        ("gpus_per_node", spec.gpus_per_node),
        ("nics_per_node", spec.nics_per_node),
        ("fabric.spines", spec.fabric.spines),
    ] {
        if n == 0 {
            return Err(format!("a cluster needs {what} of at least 1"));
        }
    }
    if spec.nics_per_node > spec.gpus_per_node {
        return Err(format!(
            "nics_per_node is {} but a node has {} GPUs; GPU g uses NIC floor(g * nics_per_node / gpus_per_node), so \
             some NICs would serve no GPU",
            spec.nics_per_node, spec.gpus_per_node
        ));
    }
    let total = spec
        .nodes
        .checked_mul(spec.gpus_per_node)
        .filter(|&p| p <= u32::MAX as usize / 8 && spec.nodes.saturating_mul(spec.nics_per_node) <= 1 << 40)
        .ok_or_else(|| {
            format!(
                "a cluster that large has more GPUs than this simulator can count: nodes x gpus_per_node may be at \
                 most {} and nodes x nics_per_node at most {}",
                u32::MAX as usize / 8,
                1u64 << 40
            )
        })?;
    let _ = total;
    if spec.fabric.hosts_per_leaf == Some(0) {
        return Err("fabric.hosts_per_leaf must be at least 1".to_string());
    }
    let finite = |v: f64| v >= 0.0 && v.is_finite();
    for (what, a) in [
        ("intra.alpha", spec.intra.alpha_s),
        ("intra.step_latency", spec.intra.step_latency_s),
        ("inter.alpha", spec.inter.alpha_s),
        ("inter.proxy", spec.inter.proxy_s),
        ("launch", spec.launch_s),
    ] {
        if ![a.ll, a.ll128, a.simple].into_iter().all(finite) {
            return Err(format!("{what} must be at least 0 and finite for every protocol"));
        }
    }
    for (what, b) in [("intra.bandwidth", spec.intra.bandwidth), ("inter.bandwidth", spec.inter.bandwidth)] {
        if !(b > 0.0 && b.is_finite()) {
            return Err(format!("{what} must be above 0 and finite, not {b}"));
        }
    }
    let many = spec.intra.sockets.len() > 1;
    if !spec.intra.sockets.is_empty() && spec.intra.kind != IntraKind::Pcie {
        return Err(format!(
            "intra.sockets: applies to kind pcie only (an {} joins its GPUs without the CPUs)",
            spec.intra.kind.name()
        ));
    }
    if many && spec.intra.socket_link.is_none() {
        return Err("intra.sockets: two or more sockets need intra.socket_link (the link between two CPUs, e.g. \
                    { alpha: 1us, bandwidth: 20GB/s })"
            .to_string());
    }
    if !many && spec.intra.socket_link.is_some() {
        return Err("intra.socket_link: applies only where intra.sockets lists two or more sockets".to_string());
    }
    if let Some(l) = spec.intra.socket_link
        && !([l.alpha_s.ll, l.alpha_s.ll128, l.alpha_s.simple].into_iter().all(finite)
            && l.bandwidth > 0.0
            && l.bandwidth.is_finite())
    {
        return Err("intra.socket_link needs an alpha of at least 0 and a bandwidth above 0, both finite".to_string());
    }
    if !spec.intra.pci_bus.is_empty() && spec.intra.pci_bus.len() != spec.gpus_per_node {
        return Err(format!(
            "intra.pci_bus names {} GPUs but a node has {}; give every GPU's bus, in GPU order",
            spec.intra.pci_bus.len(),
            spec.gpus_per_node
        ));
    }
    if let Some(u) = spec.fabric.uplink
        && !(finite(u.alpha) && u.bandwidth > 0.0 && u.bandwidth.is_finite())
    {
        return Err("fabric.uplink needs an alpha of at least 0 and a bandwidth above 0, both finite".to_string());
    }
    Ok(())
}

/// A PCI bus as `dddd:bb` (domain, bus; lower case hex), from how a machine file or a
/// log writes it: `4a`, `0x4a`, `0000:4a`, `4a:00`, `0000:4a:00`, `[0000:4a:00.0]`. The
/// device and function are left out (a GPU has its bus to itself); `None` where it is not
/// such a bus.
pub fn pci_bus_key(text: &str) -> Option<String> {
    let t = text.trim().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let t = t.strip_prefix("0x").unwrap_or(&t);
    let parts: Vec<&str> = t.split(':').collect();
    let hex =
        |p: &str, most: usize| (!p.is_empty() && p.len() <= most).then(|| u32::from_str_radix(p, 16).ok()).flatten();
    // A device number after the bus (`4a:00`, `4a:00.0`) must itself be one.
    let device = |dev: &str| hex(dev.split('.').next().unwrap_or(""), 2).is_some();
    let (domain, bus) = match parts.as_slice() {
        [b] => (Some(0), hex(b, 2)),
        [d, b] if d.len() > 2 => (hex(d, 8), hex(b, 2)),
        [b, dev] => (Some(0), hex(b, 2).filter(|_| device(dev))),
        [d, b, dev] => (hex(d, 8), hex(b, 2).filter(|_| device(dev))),
        _ => (None, None),
    };
    Some(format!("{:04x}:{:02x}", domain?, bus?))
}

/// The socket of each of a node's `g` GPUs and the number of sockets, from `sockets`
/// (every GPU in exactly one list; none given: one socket).
fn socket_map(g: usize, sockets: &[Vec<usize>]) -> Result<(Vec<usize>, usize), String> {
    if sockets.is_empty() {
        return Ok((vec![0; g], 1));
    }
    let mut of = vec![usize::MAX; g];
    for (s, gpus) in sockets.iter().enumerate() {
        if gpus.is_empty() {
            return Err(format!("intra.sockets[{s}]: a socket without GPUs; list only sockets that hold some"));
        }
        for &x in gpus {
            if x >= g {
                return Err(format!("intra.sockets[{s}]: GPU {x} is not one of the node's GPUs 0 to {}", g - 1));
            }
            if of[x] != usize::MAX {
                return Err(format!(
                    "intra.sockets[{s}]: GPU {x} is already under socket {}; give each GPU once",
                    of[x]
                ));
            }
            of[x] = s;
        }
    }
    if let Some(x) = of.iter().position(|&s| s == usize::MAX) {
        return Err(format!("intra.sockets: GPU {x} is under no socket; list every GPU of the node once"));
    }
    Ok((of, sockets.len()))
}

/// NVLink bundles (`a < b`), every ordered pair's route and every GPU's NVLink peers,
/// from `links` (`[a, b, count]`): NCCL's choice for a pair without a bundle is the
/// intermediate GPU with bundles to both whose thinner bundle is widest, ties to the
/// lowest GPU.
type NvTables = (Vec<(usize, usize, u32)>, Vec<NvRoute>, Vec<u32>);

fn nvlink_routes(g: usize, links: &[[usize; 3]]) -> Result<NvTables, String> {
    if g > 1024 {
        return Err(format!("an NVLink node of {g} GPUs is more than the 1024 this kind lists links for"));
    }
    let mut index = vec![usize::MAX; g * g];
    let mut bundles = Vec::new();
    let mut ports = vec![0u32; g];
    for (i, &[a, b, c]) in links.iter().enumerate() {
        if a >= g || b >= g {
            return Err(format!("intra.links[{i}]: GPU {} is not one of the node's GPUs 0 to {}", a.max(b), g - 1));
        }
        if a == b {
            return Err(format!("intra.links[{i}]: links GPU {a} to itself"));
        }
        if c == 0 || c > u32::MAX as usize {
            return Err(format!("intra.links[{i}]: the count of NVLinks must be at least 1, not {c}"));
        }
        if index[a * g + b] != usize::MAX {
            return Err(format!("intra.links[{i}]: GPUs {a} and {b} are already linked; give each pair once"));
        }
        let e = bundles.len();
        bundles.push((a.min(b), a.max(b), c as u32));
        index[a * g + b] = e;
        index[b * g + a] = e;
        ports[a] += 1;
        ports[b] += 1;
    }
    let mut routes = vec![NvRoute::Direct(0); g * g];
    for a in 0..g {
        for b in 0..g {
            if a == b {
                continue;
            }
            if index[a * g + b] != usize::MAX {
                routes[a * g + b] = NvRoute::Direct(index[a * g + b]);
                continue;
            }
            let best = (0..g)
                .filter(|&k| index[a * g + k] != usize::MAX && index[k * g + b] != usize::MAX)
                .map(|k| (bundles[index[a * g + k]].2.min(bundles[index[k * g + b]].2), k))
                .fold(None, |acc: Option<(u32, usize)>, x| if acc.is_none_or(|y| x.0 > y.0) { Some(x) } else { acc });
            match best {
                Some((_, k)) => routes[a * g + b] = NvRoute::Via(index[a * g + k], index[k * g + b]),
                None => {
                    return Err(format!(
                        "intra.links: GPUs {a} and {b} have no NVLink between them and no GPU with NVLinks to both; \
                         NCCL would go through host memory, which kind cluster does not model: add links"
                    ));
                }
            }
        }
    }
    Ok((bundles, routes, ports))
}

impl Topology for Cluster {
    fn protocol(&self) -> Option<Proto> {
        Some(Cluster::protocol(self))
    }
    fn proxy(&self) -> f64 {
        if self.nodes > 1 { Cluster::proxy(self) } else { 0.0 }
    }
    fn ranks(&self) -> usize {
        self.ranks
    }

    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        let g = self.spec.gpus_per_node;
        if a / g == b / g {
            self.near(a % g, b % g)
        } else {
            let (la, lb) = (self.leaf_of_nic(self.nic(a)), self.leaf_of_nic(self.nic(b)));
            self.far(la != lb)
        }
    }

    fn nics(&self, rank: usize) -> u32 {
        self.intra_ports(rank % self.spec.gpus_per_node)
    }

    fn best_link(&self) -> (Link, u32) {
        let mut classes = Vec::new();
        let g = self.gpus();
        if g > 1 {
            for a in 0..g {
                for b in 0..g {
                    if a != b {
                        classes.push(self.near(a, b));
                    }
                }
            }
        }
        let (same, cross) = self.leaf_pairs();
        if same {
            classes.push(self.far(false));
        }
        if cross {
            classes.push(self.far(true));
        }
        let alpha = classes.iter().map(|l| l.alpha).fold(f64::INFINITY, f64::min);
        let bandwidth = classes.iter().map(|l| l.bandwidth).fold(0.0, f64::max);
        let best = if classes.is_empty() { self.nominal() } else { Link { alpha, bandwidth } };
        // A GPU may send inside its node and through its NIC at once: the bound counts
        // both interfaces where both carry messages.
        let ports = (0..g).map(|x| self.intra_ports(x)).min().unwrap_or(1);
        let ports = if self.nodes > 1 && g > 1 {
            ports + 1
        } else if g > 1 {
            ports
        } else {
            1
        };
        (best, ports)
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        let g = self.gpus();
        if self.nodes == 1 && g < 2 {
            return Some((self.nominal(), 1));
        }
        if self.nodes == 1 {
            // One node: uniform when every pair costs the same and every GPU has one port.
            if self.spec.intra.kind == IntraKind::Nvlink {
                let first = self.near(0, 1);
                let same = (0..g).all(|a| (0..g).all(|b| a == b || self.near(a, b) == first));
                let one = (0..g).all(|a| self.intra_ports(a) == 1);
                return (same && one).then_some((first, 1));
            }
            return (!self.spans_sockets()).then_some((self.near(0, 1), 1));
        }
        if g > 1 {
            // Messages inside and across nodes: two classes, and NICs possibly shared.
            return None;
        }
        let (same, cross) = self.leaf_pairs();
        let link = if same { self.far(false) } else { self.far(true) };
        (!(same && cross) || self.far(false) == self.far(true)).then_some((link, 1))
    }

    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        if self.spec.intra.kind == IntraKind::Nvlink && self.gpus() > 1 {
            return None;
        }
        let near = if self.gpus() > 1 { self.near(0, 1) } else { self.nominal() };
        if self.nodes == 1 {
            if self.spans_sockets() {
                return None;
            }
            return Some(vec![(self.ranks, near)]);
        }
        let (same, cross) = self.leaf_pairs();
        if (same && cross && self.far(false) != self.far(true)) || self.spans_sockets() {
            return None;
        }
        let far = self.far(cross);
        Some(vec![(self.gpus(), near), (self.nodes, far)])
    }

    fn fabric(&self) -> Option<&dyn Fabric> {
        Some(self)
    }

    fn node_shape(&self) -> Option<(usize, usize)> {
        Some((self.nodes, self.gpus()))
    }

    fn node_nics(&self) -> Option<usize> {
        Some(self.spec.nics_per_node)
    }

    fn intra_pcie(&self) -> bool {
        self.spec.intra.kind == IntraKind::Pcie
    }

    fn intra_nvswitch(&self) -> bool {
        self.spec.intra.kind == IntraKind::Nvswitch
    }

    fn nic_through_cpu(&self) -> bool {
        self.spec.inter.nic_path.through_cpu()
    }

    fn nvls_efficiency(&self) -> f64 {
        self.spec.intra.nvls_efficiency
    }
    fn channel_bandwidth(&self) -> f64 {
        self.spec.channel_bandwidth.of(self.proto)
    }

    fn inter_channel_bandwidth(&self) -> f64 {
        if self.nodes > 1 { self.spec.inter.channel_bandwidth.of(self.proto) } else { f64::INFINITY }
    }

    fn nvlinks(&self) -> Option<&[(usize, usize, u32)]> {
        (self.spec.intra.kind == IntraKind::Nvlink).then_some(self.bundles.as_slice())
    }

    fn nvlinks_shared(&self) -> bool {
        self.flow && self.spec.intra.kind == IntraKind::Nvlink
    }

    fn interfaces(&self) -> usize {
        if self.flow { 2 * self.ranks } else { self.ranks + self.nodes * self.spec.nics_per_node }
    }

    fn interface_ports(&self, i: usize) -> u32 {
        if i >= self.ranks {
            1
        } else if self.flow && self.spec.intra.kind == IntraKind::Nvlink {
            // The flow model has every NVLink bundle as a link the messages crossing it
            // share; a port per peer on top would hold back a second message (another
            // channel's, or the next slice of the same) on a bundle with room for it.
            NVLINK_FLOW_PORTS
        } else {
            self.nics(i)
        }
    }

    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        let g = self.spec.gpus_per_node;
        if a / g == b / g {
            (a, b)
        } else if self.flow {
            (self.ranks + a, self.ranks + b)
        } else {
            (self.ranks + self.nic(a), self.ranks + self.nic(b))
        }
    }

    fn describe(&self) -> String {
        let s = &self.spec;
        let plural = |k: usize, one: &str| format!("{k} {one}{}", if k == 1 { "" } else { "s" });
        let kind = if self.sockets > 1 {
            format!("{}, {}", s.intra.kind.name(), plural(self.sockets, "socket"))
        } else {
            s.intra.kind.name().to_string()
        };
        let mut d = format!(
            "cluster {} x {} ({kind}), {} per node",
            plural(self.nodes, "node"),
            plural(self.gpus(), "GPU"),
            plural(s.nics_per_node, "NIC")
        );
        if self.nodes > 1 {
            let fabric = match s.fabric.kind {
                FabricKind::RailOptimized => "rail-optimized".to_string(),
                FabricKind::FatTree if self.leaves == 1 => "fat tree of 1 leaf".to_string(),
                FabricKind::FatTree => format!("fat tree of {} leaves", self.leaves),
            };
            d += &format!(", {fabric}");
            if self.leaves > 1 {
                d += &format!(", {}", oversubscription_text(self.oversubscription()));
            }
        }
        if self.proto != Proto::Simple {
            d += &format!(", protocol {}", self.proto.name());
        }
        d
    }
}

impl Fabric for Cluster {
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>) {
        let g = self.spec.gpus_per_node;
        let (na, nb) = (a / g, b / g);
        if na == nb {
            match self.spec.intra.kind {
                IntraKind::Nvswitch => out.extend([2 * a as u64, 2 * b as u64 + 1]),
                IntraKind::Pcie => {
                    let (sa, sb) = (self.socket_of[a % g], self.socket_of[b % g]);
                    out.extend([2 * a as u64, self.core_id(na, sa)]);
                    if sa != sb {
                        out.extend([self.socket_id(na, sa, sb), self.core_id(na, sb)]);
                    }
                    out.push(2 * b as u64 + 1);
                }
                IntraKind::Nvlink => match self.nv_routes[(a % g) * g + b % g] {
                    NvRoute::Direct(e) => out.push(self.bundle_id(na, a % g, e)),
                    NvRoute::Via(e, e2) => {
                        let via = if self.bundles[e].0 == a % g { self.bundles[e].1 } else { self.bundles[e].0 };
                        out.extend([self.bundle_id(na, a % g, e), self.bundle_id(na, via, e2)]);
                    }
                },
            }
            return;
        }
        let (ja, jb) = (self.nic(a), self.nic(b));
        let (la, lb) = (self.leaf_of_nic(ja), self.leaf_of_nic(jb));
        out.push(self.base_nic() + 2 * a as u64);
        out.push(self.base_leaf() + 2 * ja as u64);
        if la != lb {
            let spines = self.spec.fabric.spines;
            let s = jb % spines;
            out.push(self.base_spine() + 2 * (la * spines + s) as u64);
            out.push(self.base_spine() + 2 * (lb * spines + s) as u64 + 1);
        }
        out.push(self.base_leaf() + 2 * jb as u64 + 1);
        out.push(self.base_nic() + 2 * b as u64 + 1);
    }

    fn hop(&self, id: LinkId) -> Link {
        if id < self.base_nic() {
            self.intra_half()
        } else if id < self.base_leaf() {
            self.gpu_nic()
        } else if id < self.base_spine() {
            self.nic_leaf()
        } else if id < self.base_core() {
            self.spine()
        } else if id < self.base_socket() {
            self.pcie_core()
        } else if id < self.base_nvlink() {
            self.socket_hop()
        } else {
            let e = ((id - self.base_nvlink()) / 2) as usize % self.bundles.len();
            self.bundle(e)
        }
    }

    fn link_name(&self, id: LinkId) -> String {
        let g = self.spec.gpus_per_node;
        let k = self.spec.nics_per_node;
        let gpu = |r: usize| format!("n{}g{}", r / g, r % g);
        let nic = |j: usize| format!("n{}nic{}", j / k, j % k);
        let dir = |lower: String, upper: String, up: bool| {
            if up { format!("{lower}->{upper}") } else { format!("{upper}->{lower}") }
        };
        let up = id.is_multiple_of(2);
        if id < self.base_nic() {
            let r = (id / 2) as usize;
            let sw = if self.spec.intra.kind == IntraKind::Pcie {
                self.pcie_name(r / g, self.socket_of[r % g])
            } else {
                format!("n{}nvswitch", r / g)
            };
            dir(gpu(r), sw, up)
        } else if id < self.base_leaf() {
            let r = ((id - self.base_nic()) / 2) as usize;
            dir(gpu(r), nic(self.nic(r)), up)
        } else if id < self.base_spine() {
            let j = ((id - self.base_leaf()) / 2) as usize;
            dir(nic(j), format!("leaf{}", self.leaf_of_nic(j)), up)
        } else if id < self.base_core() {
            let i = ((id - self.base_spine()) / 2) as usize;
            let s = self.spec.fabric.spines;
            dir(format!("leaf{}", i / s), format!("spine{}", i % s), up)
        } else if id < self.base_socket() {
            let i = (id - self.base_core()) as usize;
            let name = self.pcie_name(i / self.sockets, i % self.sockets);
            format!("{name}.in->{name}.out")
        } else if id < self.base_nvlink() {
            let s = self.sockets;
            let i = (id - self.base_socket()) as usize;
            let (n, k) = (i / (s * (s - 1)), i % (s * (s - 1)));
            let (from, t) = (k / (s - 1), k % (s - 1));
            let to = if t < from { t } else { t + 1 };
            format!("{}->{}", self.pcie_name(n, from), self.pcie_name(n, to))
        } else {
            let i = ((id - self.base_nvlink()) / 2) as usize;
            let (n, e) = (i / self.bundles.len(), i % self.bundles.len());
            let (a, b, _) = self.bundles[e];
            dir(gpu(n * g + a), gpu(n * g + b), up)
        }
    }

    fn link_count(&self) -> u64 {
        self.base_nvlink() + 2 * (self.nodes * self.bundles.len()) as u64
    }

    // The graph, for routes around failed links (`noise.faults`): nodes are the GPUs
    // (rank r is node r), then the NICs, the leaves, the spines, and each node's switch
    // (NVSwitch; PCIe: each socket's in side, then after them all their out sides, joined
    // by the core link; an out side leads down to its GPUs and across to the other
    // sockets' in sides). A GPU's links: to its switch (or its NVLink bundles, by bundle), then
    // to its NIC; a NIC's: to its leaf, then down to its GPUs; a leaf's: down to its
    // NICs, then up to the spines by index; a spine's: down to the leaves by index.
    fn nodes(&self) -> usize {
        let switches = match self.spec.intra.kind {
            IntraKind::Nvswitch => self.nodes,
            IntraKind::Pcie => 2 * self.nodes * self.sockets,
            IntraKind::Nvlink => 0,
        };
        self.graph_switch() + switches
    }

    fn node_name(&self, n: usize) -> String {
        let (g, k) = (self.spec.gpus_per_node, self.spec.nics_per_node);
        let (nics, leaves) = (self.ranks + self.nodes * k, self.ranks + self.nodes * k + self.leaves);
        if n < self.ranks {
            format!("n{}g{}", n / g, n % g)
        } else if n < nics {
            let j = n - self.ranks;
            format!("n{}nic{}", j / k, j % k)
        } else if n < leaves {
            format!("leaf{}", n - nics)
        } else if n < self.graph_switch() {
            format!("spine{}", n - leaves)
        } else if self.spec.intra.kind == IntraKind::Pcie {
            let k = (n - self.graph_switch()) % (self.nodes * self.sockets).max(1);
            self.pcie_name(k / self.sockets, k % self.sockets)
        } else {
            format!("n{}nvswitch", (n - self.graph_switch()) % self.nodes.max(1))
        }
    }

    fn out_links(&self, n: usize, out: &mut Vec<(LinkId, usize)>) {
        let (g, k, spines) = (self.spec.gpus_per_node, self.spec.nics_per_node, self.spec.fabric.spines);
        let nic_node = |j: usize| self.ranks + j;
        let leaf_node = |l: usize| self.ranks + self.nodes * k + l;
        let spine_node = |s: usize| self.ranks + self.nodes * k + self.leaves + s;
        let sw = self.graph_switch();
        let nics = self.nodes * k;
        if n < self.ranks {
            let (node, x) = (n / g, n % g);
            match self.spec.intra.kind {
                IntraKind::Nvswitch => out.push((2 * n as u64, sw + node)),
                IntraKind::Pcie => out.push((2 * n as u64, sw + node * self.sockets + self.socket_of[x])),
                IntraKind::Nvlink => {
                    for (e, &(a, b, _)) in self.bundles.iter().enumerate() {
                        let other = if a == x {
                            b
                        } else if b == x {
                            a
                        } else {
                            continue;
                        };
                        if node * g + other < self.ranks {
                            out.push((self.bundle_id(node, x, e), node * g + other));
                        }
                    }
                }
            }
            out.push((self.base_nic() + 2 * n as u64, nic_node(self.nic(n))));
        } else if n < self.ranks + nics {
            let j = n - self.ranks;
            out.push((self.base_leaf() + 2 * j as u64, leaf_node(self.leaf_of_nic(j))));
            let node = j / k;
            for x in (0..g).filter(|&x| self.nic_of_gpu(x) == j % k) {
                let r = node * g + x;
                if r < self.ranks {
                    out.push((self.base_nic() + 2 * r as u64 + 1, r));
                }
            }
        } else if n < leaf_node(self.leaves) {
            let l = n - leaf_node(0);
            for j in (0..nics).filter(|&j| self.leaf_of_nic(j) == l) {
                out.push((self.base_leaf() + 2 * j as u64 + 1, nic_node(j)));
            }
            for s in 0..spines {
                out.push((self.base_spine() + 2 * (l * spines + s) as u64, spine_node(s)));
            }
        } else if n < sw {
            let s = n - spine_node(0);
            for l in 0..self.leaves {
                out.push((self.base_spine() + 2 * (l * spines + s) as u64 + 1, leaf_node(l)));
            }
        } else if n < self.nodes() && self.spec.intra.kind == IntraKind::Pcie {
            let (i, ns) = (n - sw, self.sockets);
            let cores = self.nodes * ns;
            let (node, s) = ((i % cores) / ns, i % ns);
            if i < cores {
                out.push((self.core_id(node, s), sw + cores + i));
                return;
            }
            for r in (node * g..(node + 1) * g).filter(|&r| r < self.ranks && self.socket_of[r % g] == s) {
                out.push((2 * r as u64 + 1, r));
            }
            for t in (0..ns).filter(|&t| t != s) {
                out.push((self.socket_id(node, s, t), sw + node * ns + t));
            }
        } else if n < self.nodes() {
            let node = (n - sw) % self.nodes.max(1);
            for r in (node * g..(node + 1) * g).filter(|&r| r < self.ranks) {
                out.push((2 * r as u64 + 1, r));
            }
        }
    }
}

impl Cluster {
    /// The first switch node of the graph [`Fabric::out_links`] describes (after the
    /// GPUs, NICs, leaves and spines).
    fn graph_switch(&self) -> usize {
        self.ranks + self.nodes * self.spec.nics_per_node + self.leaves + self.spec.fabric.spines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::route_cost;

    fn spec(kind: IntraKind, nodes: usize, gpus: usize, nics: usize) -> ClusterSpec {
        let intra = (kind, PerProto { ll: 0.5e-6, ll128: 1e-6, simple: 2e-6 }, 100e9);
        let inter = InterSpec::new(PerProto { ll: 1e-6, ll128: 2e-6, simple: 3e-6 }, 25e9);
        ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(4e-6))
    }

    /// Every pair's route costs exactly its pair cost, under every protocol.
    fn routes_match(c: &Cluster) {
        for p in Proto::ALL {
            let c = c.clone().with_protocol(p);
            for a in 0..c.ranks() {
                for b in 0..c.ranks() {
                    if a != b {
                        let mut r = Vec::new();
                        c.route(a, b, &mut r);
                        assert_eq!(route_cost(&c, &r), c.link(a, b), "{a} -> {b} ({})", p.name());
                        assert!(r.iter().all(|&id| id < c.link_count()));
                        // The graph has every route: each link leaves the node the one
                        // before it reached, named as the link names its ends.
                        let mut at = c.rank_node(a);
                        for &id in &r {
                            let mut out = Vec::new();
                            c.out_links(at, &mut out);
                            let &(_, next) = out.iter().find(|e| e.0 == id).expect("route link in the graph");
                            let name = c.link_name(id);
                            let (from, to) = name.split_once("->").unwrap();
                            if !name.contains(".in->") {
                                assert_eq!((from, to), (c.node_name(at).as_str(), c.node_name(next).as_str()));
                            }
                            at = next;
                        }
                        assert_eq!(at, c.rank_node(b), "{a} -> {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn nvswitch_rails_and_pair_costs() {
        let c = Cluster::new(&spec(IntraKind::Nvswitch, 2, 4, 2), 8).unwrap();
        routes_match(&c);
        assert_eq!(c.link(0, 3), Link { alpha: 2e-6, bandwidth: 100e9 });
        assert_eq!(c.link(0, 4), Link { alpha: 3e-6, bandwidth: 25e9 });
        let ll = c.clone().with_protocol(Proto::Ll);
        assert_eq!(ll.link(1, 6), Link { alpha: 1e-6, bandwidth: 12.5e9 });
        // GPUs 0, 1 on NIC 0 and 2, 3 on NIC 1; NIC 1 of node 1 is leaf 1.
        let name = |a, b| {
            let mut r = Vec::new();
            c.route(a, b, &mut r);
            r.iter().map(|&id| c.link_name(id)).collect::<Vec<_>>()
        };
        assert_eq!(name(0, 1), ["n0g0->n0nvswitch", "n0nvswitch->n0g1"]);
        assert_eq!(name(1, 5), ["n0g1->n0nic0", "n0nic0->leaf0", "leaf0->n1nic0", "n1nic0->n1g1"]);
        assert_eq!(
            name(1, 6),
            ["n0g1->n0nic0", "n0nic0->leaf0", "leaf0->spine0", "spine0->leaf1", "leaf1->n1nic1", "n1nic1->n1g2"]
        );
        assert_eq!(c.route_interfaces(0, 5), (8, 10));
        assert_eq!(c.route_interfaces(1, 4), (8, 10));
        assert_eq!(c.route_interfaces(2, 7), (9, 11));
        assert_eq!(c.route_interfaces(2, 3), (2, 3));
        assert_eq!(c.interfaces(), 12);
        let flow = c.clone().for_flow(true);
        assert_eq!(flow.route_interfaces(1, 4), (9, 12));
        assert_eq!(flow.interfaces(), 16);
        assert_eq!(c.node_shape(), Some((2, 4)));
        assert_eq!(c.oversubscription(), 1.0);
        assert!(c.uniform().is_none());
        assert_eq!(c.levels().unwrap()[0].0, 4);
        assert_eq!(
            c.describe(),
            "cluster 2 nodes x 4 GPUs (nvswitch), 2 NICs per node, rail-optimized, 1:1, not oversubscribed"
        );
    }

    #[test]
    fn pcie_fat_tree_and_partial_nodes() {
        let mut s = spec(IntraKind::Pcie, 4, 2, 1);
        s.fabric = FabricSpec {
            kind: FabricKind::FatTree,
            hosts_per_leaf: Some(2),
            spines: 1,
            uplink: Some(Link { alpha: 0.5e-6, bandwidth: 25e9 }),
        };
        let c = Cluster::new(&s, 8).unwrap();
        routes_match(&c);
        // Nodes 0, 1 under leaf 0: 3 us; node 2 across leaves: 3 + 2 x 0.5 us.
        assert_eq!(c.link(0, 2).alpha, 3e-6);
        assert!((c.link(0, 4).alpha - 4e-6).abs() < 1e-18);
        assert_eq!(c.oversubscription(), 2.0);
        assert!(c.levels().is_none());
        assert!(Cluster::new(&s, 3).unwrap_err().contains("not 3"));
        let one = Cluster::new(&s, 2).unwrap();
        assert_eq!(one.uniform(), Some((Link { alpha: 2e-6, bandwidth: 100e9 }, 1)));
        let mut r = Vec::new();
        one.route(0, 1, &mut r);
        assert_eq!(one.link_name(r[1]), "n0pcie.in->n0pcie.out");
    }

    /// 2 nodes x 4 GPUs on PCIe, GPUs 0, 1 under socket 0 and 2, 3 under socket 1.
    fn two_sockets() -> ClusterSpec {
        let mut s = spec(IntraKind::Pcie, 2, 4, 1);
        s.intra.sockets = vec![vec![0, 1], vec![2, 3]];
        s.intra.socket_link =
            Some(SocketLink { alpha_s: PerProto { ll: 0.25e-6, ll128: 0.5e-6, simple: 1e-6 }, bandwidth: 40e9 });
        s
    }

    fn near_link(got: Link, alpha: f64, bandwidth: f64) {
        assert!((got.alpha - alpha).abs() < 1e-18 && got.bandwidth == bandwidth, "{got:?}, want {alpha} {bandwidth}");
    }

    #[test]
    fn pcie_pairs_cost_by_socket() {
        let c = Cluster::new(&two_sockets(), 8).unwrap();
        routes_match(&c);
        // Under one CPU: intra as given; across: the socket link's alpha added and its
        // bandwidth the cap; across nodes: the NIC, whatever the sockets.
        near_link(c.link(0, 1), 2e-6, 100e9);
        near_link(c.link(6, 7), 2e-6, 100e9);
        near_link(c.link(1, 2), 3e-6, 40e9);
        near_link(c.link(7, 4), 3e-6, 40e9);
        near_link(c.link(0, 6), 3e-6, 25e9);
        let ll = c.clone().with_protocol(Proto::Ll);
        near_link(ll.link(0, 3), 0.75e-6, 20e9);
        near_link(ll.link(2, 3), 0.5e-6, 50e9);
        let name = |a, b| {
            let mut r = Vec::new();
            c.route(a, b, &mut r);
            r.iter().map(|&id| c.link_name(id)).collect::<Vec<_>>()
        };
        assert_eq!(name(0, 1), ["n0g0->n0cpu0", "n0cpu0.in->n0cpu0.out", "n0cpu0->n0g1"]);
        assert_eq!(
            name(5, 6),
            ["n1g1->n1cpu0", "n1cpu0.in->n1cpu0.out", "n1cpu0->n1cpu1", "n1cpu1.in->n1cpu1.out", "n1cpu1->n1g2"]
        );
        assert_eq!(name(3, 0)[2], "n0cpu1->n0cpu0");
        // Two pair classes inside a node: no single level, not uniform; the best link
        // is the pair under one CPU.
        assert!(c.levels().is_none() && c.uniform().is_none());
        assert_eq!(c.best_link().0, Link { alpha: 2e-6, bandwidth: 100e9 });
        assert_eq!(c.describe(), "cluster 2 nodes x 4 GPUs (pcie, 2 sockets), 1 NIC per node, rail-optimized");
        // Two ranks on GPUs 0 and 1 (one socket): one class again; four span both.
        let one = Cluster::new(&two_sockets(), 2).unwrap();
        routes_match(&one);
        assert_eq!(one.uniform(), Some((Link { alpha: 2e-6, bandwidth: 100e9 }, 1)));
        assert_eq!(one.levels().unwrap().len(), 1);
        let four = Cluster::new(&two_sockets(), 4).unwrap();
        routes_match(&four);
        assert!(four.uniform().is_none() && four.levels().is_none());
        // Three sockets, one GPU each and one GPU alone under the last: every ordered
        // pair of sockets has its own link.
        let mut s3 = spec(IntraKind::Pcie, 1, 4, 1);
        s3.intra.sockets = vec![vec![0, 1], vec![3], vec![2]];
        s3.intra.socket_link = two_sockets().intra.socket_link;
        let c3 = Cluster::new(&s3, 4).unwrap();
        routes_match(&c3);
        let mut r = Vec::new();
        c3.route(3, 2, &mut r);
        assert_eq!(c3.link_name(r[2]), "n0cpu1->n0cpu2");
        near_link(c3.link(2, 1), 3e-6, 40e9);
    }

    #[test]
    fn a_pair_across_sockets_detours_through_the_nic() {
        use crate::topology::detour;
        let c = Cluster::new(&two_sockets(), 8).unwrap();
        let mut r = Vec::new();
        assert!(detour(&c, 1, 2, |id| c.link_name(id) == "n0cpu0->n0cpu1", &mut r));
        let names: Vec<String> = r.iter().map(|&id| c.link_name(id)).collect();
        assert_eq!(names, ["n0g1->n0nic0", "n0nic0->n0g2"]);
    }

    #[test]
    fn sockets_are_checked() {
        let bad = |f: &dyn Fn(&mut ClusterSpec)| {
            let mut s = two_sockets();
            f(&mut s);
            Cluster::new(&s, 8).unwrap_err()
        };
        assert!(bad(&|s| s.intra.sockets = vec![vec![0, 1], vec![2]]).contains("GPU 3 is under no socket"));
        assert!(
            bad(&|s| s.intra.sockets = vec![vec![0, 1], vec![1, 2, 3]]).contains("GPU 1 is already under socket 0")
        );
        assert!(bad(&|s| s.intra.sockets = vec![vec![0, 1, 2, 3], vec![]]).contains("a socket without GPUs"));
        assert!(bad(&|s| s.intra.sockets = vec![vec![0, 1], vec![2, 4]]).contains("GPU 4 is not one of"));
        assert!(bad(&|s| s.intra.socket_link = None).contains("need intra.socket_link"));
        assert!(bad(&|s| s.intra.sockets = vec![vec![0, 1, 2, 3]]).contains("applies only where"));
        assert!(bad(&|s| s.intra.kind = IntraKind::Nvswitch).contains("applies to kind pcie only"));
        assert!(bad(&|s| s.intra.socket_link.as_mut().unwrap().bandwidth = 0.0).contains("a bandwidth above 0"));
        assert!(bad(&|s| s.intra.pci_bus = vec!["0000:4a".into()]).contains("names 1 GPUs but a node has 4"));
    }

    #[test]
    fn pci_buses_as_logs_and_lspci_write_them() {
        for (text, want) in [
            ("4a", "0000:4a"),
            ("0x4A", "0000:4a"),
            ("61", "0000:61"),
            ("[0000:ca:00]", "0000:ca"),
            ("0000:e1:00.0", "0000:e1"),
            ("e1:00.0", "0000:e1"),
            ("0001:4a", "0001:4a"),
        ] {
            assert_eq!(pci_bus_key(text).as_deref(), Some(want), "{text}");
        }
        for text in ["", "0x0g", "14a", "4a:zz", "0:1:2:3", "[]"] {
            assert_eq!(pci_bus_key(text), None, "{text}");
        }
    }

    #[test]
    fn detours_around_failed_spine_and_nic_links() {
        use crate::topology::detour;
        let mut s = spec(IntraKind::Nvswitch, 2, 4, 2);
        s.fabric = FabricSpec { kind: FabricKind::FatTree, hosts_per_leaf: Some(2), spines: 2, uplink: None };
        let owned = Cluster::new(&s, 8).unwrap();
        let c = &owned;
        routes_match(c);
        let names = |r: &[LinkId]| r.iter().map(|&id| c.link_name(id)).collect::<Vec<_>>();
        let failed_between = |x: &'static str, y: &'static str| {
            move |id: LinkId| {
                let n = c.link_name(id);
                n == format!("{x}->{y}") || n == format!("{y}->{x}")
            }
        };
        // Node 0's NICs under leaf 0, node 1's under leaf 1; 1 -> 6 goes by spine 1
        // (NIC 3 mod 2 spines); with leaf0-spine1 failed it takes spine 0.
        let mut r = Vec::new();
        assert!(detour(c, 1, 6, failed_between("leaf0", "spine1"), &mut r));
        assert_eq!(
            names(&r),
            ["n0g1->n0nic0", "n0nic0->leaf0", "leaf0->spine0", "spine0->leaf1", "leaf1->n1nic1", "n1nic1->n1g2"]
        );
        // GPU 1's NIC cut from its leaf: through the NVSwitch to a GPU on the other NIC.
        r.clear();
        assert!(detour(c, 1, 6, failed_between("n0nic0", "leaf0"), &mut r));
        assert_eq!(
            names(&r),
            [
                "n0g1->n0nvswitch",
                "n0nvswitch->n0g2",
                "n0g2->n0nic1",
                "n0nic1->leaf0",
                "leaf0->spine0",
                "spine0->leaf1",
                "leaf1->n1nic1",
                "n1nic1->n1g2"
            ]
        );
        // The one GPU of a node on one NIC has no second way out.
        let lone = Cluster::new(&spec(IntraKind::Nvswitch, 2, 1, 1), 2).unwrap();
        routes_match(&lone);
        r.clear();
        let cut = |id: LinkId| lone.link_name(id).starts_with("n0nic0->leaf");
        assert!(!detour(&lone, 0, 1, cut, &mut r));
    }

    #[test]
    fn one_gpu_per_node_is_uniform() {
        let c = Cluster::new(&spec(IntraKind::Nvswitch, 4, 1, 1), 4).unwrap();
        assert_eq!(c.uniform(), Some((Link { alpha: 3e-6, bandwidth: 25e9 }, 1)));
        assert_eq!(c.best_link(), (Link { alpha: 3e-6, bandwidth: 25e9 }, 1));
    }

    #[test]
    fn nvlink_routes_through_the_widest_intermediate() {
        let mut s = spec(IntraKind::Nvlink, 1, 4, 1);
        // 0-1 x2, 1-2 x1, 0-3 x1, 3-2 x2: 0 -> 2 via 1 (min 1) or 3 (min 1): tie, GPU 1.
        s.intra.links = vec![[0, 1, 2], [1, 2, 1], [0, 3, 1], [3, 2, 2]];
        let c = Cluster::new(&s, 4).unwrap();
        routes_match(&c);
        assert_eq!(c.link(0, 1), Link { alpha: 2e-6, bandwidth: 200e9 });
        assert_eq!(c.link(0, 2), Link { alpha: 4e-6, bandwidth: 100e9 });
        let mut r = Vec::new();
        c.route(0, 2, &mut r);
        let names: Vec<String> = r.iter().map(|&id| c.link_name(id)).collect();
        assert_eq!(names, ["n0g0->n0g1", "n0g1->n0g2"]);
        assert_eq!(c.nics(1), 2);
        s.intra.links = vec![[0, 1, 1], [2, 3, 1]];
        assert!(Cluster::new(&s, 4).unwrap_err().contains("GPUs 0 and 2 have no NVLink"));
        s.intra.links = vec![[0, 1, 1], [1, 0, 2]];
        assert!(Cluster::new(&s, 4).unwrap_err().contains("already linked"));
    }
}
