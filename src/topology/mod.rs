//! Machines: who can talk to whom, at what latency and bandwidth, with how many ports.
//!
//! The engine asks a [`Topology`] for one pair's [`Link`] each time a message starts,
//! so a topology must answer in O(1) or O(log P) and never hold P*P entries (a [`Graph`]
//! finds a pair's route the first time it is asked and keeps a bounded cache).
//!
//! The kinds (docs/scenario.md, docs/flow-model.md): [`FullyConnected`] (the Hockney machine),
//! [`Hierarchical`] (levels innermost first, pairs at their innermost common level),
//! [`Grid`] (`torus2d`, `mesh2d` and `ring`, row-major, `hops * alpha + m / B`),
//! [`Graph`] (`graph`: hosts and switches, fewest hops; `custom`: hosts only) and
//! [`FatTree`] (two tiers of switches, D-mod-k routes) and [`Cluster`] (GPU nodes on
//! NIC rails, docs/gpu-clusters.md). Only the first is
//! [`Topology::uniform`] in general, so the flat algorithms' closed forms exist only
//! there; every algorithm still runs everywhere.

mod cluster;
pub mod fabric;
mod fat_tree;
mod fully_connected;
mod graph;
mod grid;
mod hierarchical;
mod proto_view;
mod protocol;
pub mod spec;
mod switch_agents;

pub use cluster::{
    Cluster, ClusterSpec, FabricKind, FabricSpec, InterSpec, IntraKind, IntraSpec, NicPath, PerProto, SocketLink,
    pci_bus_key,
};
pub use fabric::{Fabric, LinkId, detour, route_cost};
pub use fat_tree::{FatTree, oversubscription, oversubscription_text};
pub use fully_connected::FullyConnected;
pub use graph::{Graph, MAX_CACHED_HOPS, MAX_CACHED_ROUTES, Node, Placement, RankOrder, unreachable, unreachable_host};
pub use grid::{Grid, squarest};
pub use hierarchical::{Hierarchical, Level};
pub use proto_view::ProtoView;
pub use protocol::Proto;
pub use switch_agents::SwitchAgents;

/// The cost of one message between two ranks: `alpha + bytes / bandwidth`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// Seconds per message.
    pub alpha: f64,
    /// Bytes per second.
    pub bandwidth: f64,
}

impl Link {
    /// Time for a message of `bytes` bytes on this link.
    #[inline]
    pub fn time(&self, bytes: f64) -> f64 {
        self.alpha + bytes / self.bandwidth
    }
}

/// A simulated machine's interconnect.
pub trait Topology: Send + Sync + std::fmt::Debug {
    /// Number of ranks.
    fn ranks(&self) -> usize;
    /// The cost of a message from `a` to `b` (`a != b`).
    fn link(&self, a: usize, b: usize) -> Link;
    /// Full-duplex ports of `rank`: how many messages it may send, and receive, at once.
    fn nics(&self, rank: usize) -> u32;
    /// The smallest alpha and the largest bandwidth between any two ranks, and the fewest
    /// ports of any rank: what the lower bound (docs/report.md) is computed from.
    fn best_link(&self) -> (Link, u32);
    /// The one link class and port count, if every pair of ranks is joined by the same
    /// link and every rank has the same ports (what the flat closed forms assume).
    fn uniform(&self) -> Option<(Link, u32)> {
        None
    }
    /// `(rows, cols, wraps)` if the ranks form a 2-D grid, row-major
    /// (rank = row * cols + col); `wraps` for a torus, not for a mesh.
    fn grid(&self) -> Option<(usize, usize, bool)> {
        None
    }
    /// The levels of a hierarchical machine, innermost first: each level's group size
    /// (in groups of the level below) and its link. Ranks `r` and `q` talk at the cost
    /// of the outermost level at which their groups differ.
    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        None
    }
    /// The physical links and routes under this machine, which the flow model shares
    /// between messages ([`fabric`]); `None` for a machine known only by its pair costs.
    fn fabric(&self) -> Option<&dyn Fabric> {
        None
    }
    /// `(nodes, gpus_per_node)` on a machine of GPU nodes (`cluster`), where rank `r` is
    /// GPU `r % gpus_per_node` of node `r / gpus_per_node`; `None` on other kinds. NCCL's
    /// algorithms order their rings and trees by it.
    fn node_shape(&self) -> Option<(usize, usize)> {
        None
    }
    /// NICs per node on a machine of GPU nodes (`cluster`), GPU `g` of a node on NIC
    /// `floor(g K / G)`; `None` on other kinds. NCCL's rings enter and leave a node
    /// through the same NIC.
    fn node_nics(&self) -> Option<usize> {
        None
    }
    /// The GPUs of a node are joined by PCIe rather than NVLink (a `cluster` of kind
    /// `pcie`), which changes NCCL's latencies and the protocols it enables.
    fn intra_pcie(&self) -> bool {
        false
    }
    /// The PCIe path between a GPU and its NIC goes through a CPU (a `cluster` whose
    /// `inter.nic_path` is `phb` or `sys`), where NCCL keeps LL128 off across nodes.
    fn nic_through_cpu(&self) -> bool {
        false
    }
    /// The GPUs of a node are joined by an NVSwitch (a `cluster` of kind `nvswitch`),
    /// which NCCL's NVLS algorithm needs.
    fn intra_nvswitch(&self) -> bool {
        false
    }
    /// The fraction of a GPU's link bandwidth at which NVLS's switch operations move data
    /// (`intra.nvls_efficiency` of a `cluster`; 1 elsewhere).
    fn nvls_efficiency(&self) -> f64 {
        1.0
    }
    /// Bytes per second one stream of a rank's program (one of NCCL's channels, a thread
    /// block) sends at most, whatever its links carry (`channel_bandwidth` of a
    /// `cluster`, for its protocol); infinite (no limit) elsewhere. The ideal model then
    /// passes each stream's messages through that rate one after another
    /// ([`crate::sim::network::ideal::Channels`]).
    fn channel_bandwidth(&self) -> f64 {
        f64::INFINITY
    }
    /// Bytes per second one stream of a rank's program hands a message across nodes to
    /// the network at most (`inter.channel_bandwidth` of a `cluster` of two or more
    /// nodes, for its protocol); infinite elsewhere. Such a message passes through the
    /// stream's copy unit at this rate instead of [`Topology::channel_bandwidth`].
    fn inter_channel_bandwidth(&self) -> f64 {
        f64::INFINITY
    }
    /// Whether a stream's messages pass through a rate of its own anywhere on this
    /// machine ([`Topology::channel_bandwidth`], or [`Topology::inter_channel_bandwidth`]
    /// across nodes): the engine's, which no closed form or bound counts.
    fn channel_rated(&self) -> bool {
        self.channel_bandwidth().is_finite() || self.inter_channel_bandwidth().is_finite()
    }
    /// The NVLink bundles inside a node, `(gpu a, gpu b, links)` with `a < b` in a node's
    /// own GPU numbers, on a machine whose GPUs are joined by explicit NVLinks (a
    /// `cluster` of kind `nvlink`); `None` on other kinds. NCCL's ring search lays its
    /// channels over distinct links by them.
    fn nvlinks(&self) -> Option<&[(usize, usize, u32)]> {
        None
    }
    /// Whether the messages crossing an NVLink bundle share its bandwidth with no port
    /// to hold a second one back (an `nvlink` cluster under the flow model). NCCL's ring
    /// then keeps each channel to one slice in flight itself, as NCCL's thread block does.
    fn nvlinks_shared(&self) -> bool {
        false
    }
    /// The NCCL protocol this machine's costs are for, where a run's entry named one
    /// (its pair costs then are that protocol's); `None` otherwise. NCCL's algorithms
    /// (`nccl_ring`, `nccl_tree`) take their chunk from it unless their `protocol`
    /// parameter says otherwise.
    fn protocol(&self) -> Option<Proto> {
        None
    }
    /// Seconds a GPU's network proxy spends on each of its connections across nodes
    /// before a message across nodes leaves it (`inter.proxy` of a `cluster` of two or
    /// more nodes, for its protocol; 0 elsewhere). The engine's run adds it to a pair's
    /// alpha once per connection of the sender ([`crate::sim::proxy`]).
    fn proxy(&self) -> f64 {
        0.0
    }
    /// How many interfaces (groups of ports) the machine has. A message holds one
    /// outgoing port of its sender's interface and one incoming port of its receiver's
    /// for the route it takes ([`Topology::route_interfaces`]). By default every rank
    /// is one interface of [`Topology::nics`] ports, numbered as the rank.
    fn interfaces(&self) -> usize {
        self.ranks()
    }
    /// Full-duplex ports of interface `i`: how many messages may leave it, and enter it,
    /// at once.
    fn interface_ports(&self, i: usize) -> u32 {
        self.nics(i)
    }
    /// The sender's outgoing and the receiver's incoming interface of a message from
    /// `a` to `b` (`a != b`).
    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        (a, b)
    }
    /// A short human name (`fully_connected`, `torus2d 8x8`, ...).
    fn describe(&self) -> String;
}

/// The topology a scenario describes, for `ranks` ranks. A topology that fixes its own
/// rank count (docs/scenario.md: a topology may imply it) refuses any other; one
/// that places ranks on hosts refuses more ranks than hosts.
pub fn build(spec: &spec::TopologySpec, ranks: usize) -> Result<Box<dyn Topology>, String> {
    use spec::{NodeKind, TopologySpec};
    if let (Some(n), Some(why)) = (spec.implied_ranks(), spec.implied_ranks_why())
        && n != ranks
    {
        return Err(format!("the topology has {n} ranks, not {ranks} ({why})"));
    }
    if let (Some(n), Some(why)) = (spec.max_ranks(), spec.max_ranks_why())
        && ranks > n
    {
        return Err(format!("the topology runs at most {n} ranks, not {ranks} ({why})"));
    }
    Ok(match spec {
        TopologySpec::FullyConnected { link, nics } => Box::new(FullyConnected { ranks, link: *link, nics: *nics }),
        TopologySpec::Hierarchical { levels, nics } => {
            let levels = levels.iter().map(|l| Level { size: l.size, link: l.link, nics: l.nics }).collect();
            Box::new(Hierarchical::new(levels, *nics)?)
        }
        TopologySpec::Torus2d { dims, link, nics } => {
            let [r, c] = dims.unwrap_or_else(|| squarest(ranks).into());
            Box::new(Grid::torus(r, c, *link, *nics))
        }
        TopologySpec::Mesh2d { dims, link, nics } => {
            let [r, c] = dims.unwrap_or_else(|| squarest(ranks).into());
            Box::new(Grid::mesh(r, c, *link, *nics))
        }
        TopologySpec::Ring { link, nics } => Box::new(Grid::ring(ranks, *link, *nics)),
        TopologySpec::Custom { nodes, links, nics } => {
            let names = nodes.iter().map(|n| n.name.clone()).collect();
            let ports = nodes.iter().map(|n| n.nics.unwrap_or(*nics)).collect();
            let edges: Vec<(usize, usize, Link)> = links.iter().map(|e| (e.from, e.to, e.link)).collect();
            Box::new(Graph::custom(names, ports, &edges)?)
        }
        TopologySpec::Graph { nodes, links, placement, nics } => {
            let nodes = nodes
                .iter()
                .map(|n| Node { name: n.name.clone(), host: n.kind == NodeKind::Host, nics: n.nics.unwrap_or(*nics) })
                .collect();
            let edges: Vec<(usize, usize, Link)> = links.iter().map(|e| (e.a, e.b, e.link)).collect();
            let g = Graph::new(nodes, &edges)?;
            let hosts = match placement {
                Placement::Order(order) => {
                    let mut hosts = g.order(*order);
                    hosts.truncate(ranks);
                    hosts
                }
                Placement::Hosts(hosts) => hosts.clone(),
            };
            Box::new(g.placed(hosts)?)
        }
        TopologySpec::FatTree { hosts_per_leaf, leaves, spines, link, uplink, placement, nics } => Box::new(
            FatTree::new(*hosts_per_leaf, *leaves, *spines, *link, *uplink)?
                .with_nics(*nics)
                .placed(*placement, ranks)?,
        ),
        TopologySpec::Cluster(c) => Box::new(Cluster::new(c, ranks)?),
    })
}

/// The topology a scenario describes as one run sees it: as protocol `proto` moves
/// messages (docs/gpu-clusters.md), with a cluster's interfaces as the flow model has
/// them when `flow`. With Simple on any kind but `cluster` this is [`build`].
pub fn build_for_run(
    spec: &spec::TopologySpec,
    ranks: usize,
    proto: Proto,
    flow: bool,
) -> Result<Box<dyn Topology>, String> {
    if let spec::TopologySpec::Cluster(c) = spec {
        build(spec, ranks)?;
        return Ok(Box::new(Cluster::new(c, ranks)?.with_protocol(proto).for_flow(flow)));
    }
    let topo = build(spec, ranks)?;
    Ok(if proto == Proto::Simple { topo } else { Box::new(ProtoView::new(topo, proto)) })
}

/// Seconds NCCL's ring and tree pay once per call for each step of their pipeline
/// inside a node with `proto` (`intra.step_latency`; 0 on every kind but `cluster`).
pub fn step_latency(spec: &spec::TopologySpec, proto: Proto) -> f64 {
    match spec {
        spec::TopologySpec::Cluster(c) => c.intra.step_latency_s.of(proto),
        _ => 0.0,
    }
}

/// Seconds every rank spends once per collective before its first operation with
/// `proto` (`launch`; 0 on every kind but `cluster`).
pub fn launch(spec: &spec::TopologySpec, proto: Proto) -> f64 {
    match spec {
        spec::TopologySpec::Cluster(c) => c.launch_s.of(proto),
        _ => 0.0,
    }
}
