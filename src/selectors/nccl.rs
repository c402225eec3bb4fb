//! NCCL's tuning model for the collectives it has, as NCCL 2.30.7 evaluates it
//! (`src/graph/tuning.cc`: `ncclTopoTuneModel` and `ncclTopoGetAlgoTime`; the
//! collective's size and the op that rules PAT out from `src/enqueue.cc`).
//!
//! NCCL predicts each (algorithm, protocol) pair's time as `latency + bytes / bandwidth`
//! and runs the pair with the smallest. The latency is a base per pair plus a hardware
//! latency per hop (NVLink, PCI or network); the bandwidth is the bus bandwidth of the
//! channels NCCL found, cut by per-protocol efficiencies and caps, and turned into an
//! algorithm bandwidth. The constants below are NCCL's defaults (its
//! `ncclTunerConstantsDefaults` and `treeCorrectionFactor`), facts; the code is ours and
//! keeps ring, tree, NVLS, NVLS Tree and PAT (CollNet needs SHARP switches, which we do
//! not model).
//!
//! Per collective ([`algorithms`]): allreduce by tree or ring, `2(P-1)` ring steps;
//! reduce-scatter and allgather by ring (`P-1` steps) or PAT; broadcast and reduce by
//! ring only (`P` steps: NCCL's ring there is a pipeline from the root along the ring).
//! `bytes` is NCCL's `nBytes`: the whole buffer of P blocks for reduce-scatter and
//! allgather, which is our `bytes` too.
//!
//! What we feed it from a scenario ([`Inputs::of`]): the ranks; the nodes (the innermost
//! groups of a hierarchical machine, else one rank per node, as on a cluster of
//! one-GPU hosts); the bus bandwidth, from the links (the innermost level's on two nodes
//! or fewer, else the outermost's; on other machines the fastest link); the GPU
//! generation and channel count from the selector's parameters; whether the op is `avg`;
//! whether a node's GPUs talk over PCIe (a `pcie` cluster: NCCL's PCI hop latencies, and
//! LL128 off unless forced) or NVLink (everything else); whether the path between a GPU
//! and its NIC goes through a CPU (a cluster's `inter.nic_path`: LL128 off across nodes).
//! Fixed as on a common system: an x86 Intel host (1 us network overhead per step),
//! a balanced tree, the same ring on every channel (`sameChannels`), a host-driven
//! network (PAT allowed) reporting no extra latency, one operation per launch.

use crate::collective::Collective;
pub use crate::topology::Proto;
use crate::topology::Topology;
use crate::units::ParamValue;

/// The NCCL release whose model and constants these are, unless [`Tuning::V2_8`] is asked for.
pub const VERSION: &str = "2.30.7";

/// Which NCCL release's tuning model to evaluate. NCCL's constants and formulas changed
/// between releases, and a log of an older NCCL was picked by the older model: 2.8's
/// tree latency has no per-step network overhead and a fixed 28 us hop for Simple, its
/// LL128 is off on Hopper and its ring plateau starts at another size, so the same
/// machine gets other (algorithm, protocol) pairs at many sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Tuning {
    /// NCCL 2.8 and 2.9 (`src/graph/tuning.cc` of 2.8.4; 2.9.6 has the same constants
    /// and formulas), and older releases, which we have not read and treat alike.
    V2_8,
    /// NCCL 2.10 and later, as 2.30.7 evaluates it ([`VERSION`]).
    #[default]
    V2_30,
}

impl Tuning {
    /// The tuning of NCCL release `version` (`2.8.4`, `2.8`, `2.26.2+cuda12.2`); `None`
    /// for text that is not a version.
    pub fn of_version(version: &str) -> Option<Tuning> {
        let mut parts = version.trim().split(['.', '+', '-']);
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        Some(if (major, minor) < (2, 10) { Tuning::V2_8 } else { Tuning::V2_30 })
    }
    /// The tuning of NCCL release `version` as a scenario's `nccl_model` entry gives it,
    /// read whole: `MAJOR.MINOR.PATCH` (or `MAJOR.MINOR`) of numbers without leading
    /// zeros, from 1.0 on, and optionally a package's build suffix (`-1`) or NCCL's own
    /// `+cudaX.Y`, as NCCL and its packages print them. `None` for anything else
    /// (`2.19.x`, `2.19.3 `, `02.019.003`), which [`of_version`](Tuning::of_version)'s
    /// first two numbers would have read as a release.
    pub fn of_release(version: &str) -> Option<Tuning> {
        let (release, suffix) = match version.find(['-', '+']) {
            Some(k) => (&version[..k], Some(&version[k..])),
            None => (version, None),
        };
        let number = |t: &str| {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0')))
                .then(|| t.parse::<u32>().ok())
                .flatten()
        };
        let parts: Vec<Option<u32>> = release.split('.').map(number).collect();
        if !(2..=3).contains(&parts.len()) || parts.iter().any(Option::is_none) || parts[0] == Some(0) {
            return None;
        }
        let ok_suffix = match suffix {
            None => true,
            Some(s) => match (s.strip_prefix('-'), s.strip_prefix("+cuda")) {
                (Some(build), _) => number(build).is_some(),
                (_, Some(cuda)) => {
                    let v: Vec<&str> = cuda.split('.').collect();
                    (1..=2).contains(&v.len()) && v.iter().all(|t| number(t).is_some())
                }
                _ => false,
            },
        };
        ok_suffix.then(|| Tuning::of_version(release)).flatten()
    }
    /// The release whose constants apply, for reports.
    pub fn release(self) -> &'static str {
        match self {
            Tuning::V2_8 => "2.8.4",
            Tuning::V2_30 => VERSION,
        }
    }
}

/// NCCL's algorithms we model, in NCCL's order (`NCCL_ALGO_TREE` 0, `NCCL_ALGO_RING` 1,
/// `NCCL_ALGO_PAT` 6), which breaks ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Tree (a double binary tree across nodes, a chain inside one); allreduce only.
    Tree,
    /// Ring.
    Ring,
    /// NVLS (NVLink SHARP): the NVSwitch adds and multicasts; allreduce, reduce-scatter
    /// and allgather on one node of an NVSwitch of Hopper or later.
    Nvls,
    /// NVLS Tree (`NCCL_ALGO_NVLS_TREE`, NCCL 2.18 and later): NVLS inside each node, a
    /// double binary tree across nodes between the GPUs that own a NIC; allreduce on
    /// more than one node.
    NvlsTree,
    /// PAT (parallel aggregated trees): reduce-scatter and allgather in rounds whose
    /// partners are a power of two apart, one rank per node only.
    Pat,
}

impl Algo {
    /// NCCL's name (as in its tuner plugin's CSV).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Tree => "tree",
            Algo::Ring => "ring",
            Algo::Nvls => "nvls",
            Algo::NvlsTree => "nvls_tree",
            Algo::Pat => "pat",
        }
    }
    /// Its name as `NCCL_ALGO` spells it, lowercased (`nvlstree` for NVLS Tree; the
    /// others as [`Algo::name`]).
    pub fn env_name(self) -> &'static str {
        match self {
            Algo::NvlsTree => "nvlstree",
            _ => self.name(),
        }
    }
    /// Our algorithm of collective `c` that runs it (its id; broadcast's and reduce's
    /// ring also takes [`chain_segments`], allreduce's the protocol and channels):
    /// - allreduce: ring as `nccl_ring`, tree as `nccl_tree` (NCCL's own, with the
    ///   picked protocol's chunks and the model's channels);
    /// - reduce-scatter and allgather: ring as `nccl_ring` (with the picked protocol's
    ///   chunks and the model's channels), NVLS as `nvls`, PAT as `pat` (NCCL's own, with
    ///   the model's channels);
    /// - broadcast and reduce: ring as `chain` (the pipeline from the root along the ring).
    pub fn ours(self, c: Collective) -> &'static str {
        match (self, c) {
            (Algo::Ring, Collective::Broadcast | Collective::Reduce) => "chain",
            (Algo::Ring, Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather) => "nccl_ring",
            (Algo::Ring, _) => "ring",
            (Algo::Tree, _) => "nccl_tree",
            (Algo::Nvls, _) => "nvls",
            (Algo::NvlsTree, _) => "nvls_tree",
            (Algo::Pat, _) => "pat",
        }
    }
    /// The textbook algorithm of ours closest to it, which `tune` weighs NCCL's
    /// algorithms by (it simulates every textbook algorithm, not NCCL's own): allreduce
    /// ring as `ring`, tree as `double_binary_tree`, PAT as `halving_doubling` (the same
    /// rounds of partners a power of two apart and the same bytes per rank, at P a power
    /// of two); otherwise [`Algo::ours`].
    pub fn textbook(self, c: Collective) -> &'static str {
        match (self, c) {
            (Algo::Ring, Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather) => "ring",
            (Algo::Tree, _) => "double_binary_tree",
            (Algo::Pat, _) => "halving_doubling",
            _ => self.ours(c),
        }
    }
    /// Row of the tables indexed [tree, ring] (PAT has its own constants).
    fn index(self) -> usize {
        match self {
            Algo::Tree | Algo::Pat | Algo::Nvls | Algo::NvlsTree => 0,
            Algo::Ring => 1,
        }
    }
}

/// A GPU generation: which column of NCCL's per-architecture tables applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Volta (compute capability 7.0).
    Volta,
    /// Ampere (8.0).
    Ampere,
    /// Hopper (9.0).
    Hopper,
    /// Blackwell (10.0).
    Blackwell,
}

impl Arch {
    /// The names the `arch` parameter takes.
    pub const NAMES: [(&'static str, Arch); 4] =
        [("volta", Arch::Volta), ("ampere", Arch::Ampere), ("hopper", Arch::Hopper), ("blackwell", Arch::Blackwell)];
    fn index(self) -> usize {
        self as usize
    }
    fn comp_cap(self) -> u32 {
        [70, 80, 90, 100][self.index()]
    }
}

// NCCL's defaults, [algorithm tree, ring][protocol LL, LL128, Simple], microseconds.
const BASE_LAT: [[f64; 3]; 2] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4]];
const HW_LAT_NVLINK: [[f64; 3]; 2] = [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]];
// Over PCIe instead of NVLink (NCCL's `NCCL_HW_PCI` row of `hwLat`).
const HW_LAT_PCI: [[f64; 3]; 2] = [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7]];
const HW_LAT_NET: [[f64; 3]; 2] = [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]];
// PAT's (Simple only): base, NVLink and network latency, microseconds.
const PAT_BASE_LAT: f64 = 8.0;
const PAT_HW_LAT_NVLINK: f64 = 4.0;
const PAT_HW_LAT_NET: f64 = 14.0;
// GB/s, [architecture or CPU row][one node, two nodes, more].
const LL_MAX_BWS: [[f64; 3]; 4] =
    [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0], [141.0, 45.0, 35.0], [2.0 * 141.0, 2.0 * 45.0, 2.0 * 35.0]];
const PER_CH_MAX_RING_LL128_BWS: [[f64; 3]; 4] =
    [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 36.7], [40.0, 40.0, 40.0]];
const PER_CH_MAX_TREE_LL128_BWS: [[f64; 3]; 4] =
    [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 29.0], [55.6, 31.67, 20.0]];
const PER_CH_MAX_TREE_BWS: [[f64; 3]; 4] =
    [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [38.7, 41.4, 36.0], [70.0, 42.8, 24.0]];
// Tree allreduce bandwidth corrections, per protocol, for sizes 64 B << i.
const TREE_CORRECTION: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0,
        1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0,
        1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9,
        0.9, 0.9,
    ],
];
// NVLS: its bus bandwidth's share of the NVLink bandwidth per architecture
// (`nvlsEfficiency`: none before Hopper), its latency on NVLink (no base, no per-step
// term), and the most heads (channels of its graph) NCCL's NVLS search gives a node
// (`NCCL_MAX_NVLS_ARITY`).
const NVLS_EFFICIENCY: [f64; 4] = [0.0, 0.0, 0.85, 0.74];
const NVLS_LAT_NVLINK: f64 = 25.0;
const NVLS_MAX_ARITY: usize = 32;
// NVLS Tree: its latency on NVLink inside a node and per network hop, and its bus
// bandwidth cap per channel, GB/s, [architecture][one node, two nodes, more]
// (`perChMaxNVLSTreeBws`; none on one node, none before Hopper).
const NVLS_TREE_LAT_NVLINK: f64 = 25.0;
const NVLS_TREE_LAT_NET: f64 = 20.9;
const PER_CH_MAX_NVLS_TREE_BWS: [[f64; 3]; 4] =
    [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [0.0, 57.7, 45.5], [0.0, 96.0, 80.0]];
// NCCL 2.8.4's (`Tuning::V2_8`): [tree, ring][LL, LL128, Simple], microseconds; its
// Simple tree hop is the latency of a 256 kB chunk, hence the 28 us.
const BASE_LAT_28: [[f64; 3]; 2] = [[4.4, 4.4, 0.0], [3.6, 10.0, 8.4]];
const HW_LAT_NVLINK_28: [[f64; 3]; 2] = [[0.52, 1.25, 28.0], [0.47, 1.9, 3.4]];
const HW_LAT_PCI_28: [[f64; 3]; 2] = [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]];
const HW_LAT_NET_28: [[f64; 3]; 2] = [[5.0, 8.5, 28.0], [2.7, 4.0, 9.6]];
// LL128's bandwidth cap per channel, GB/s, per collective (broadcast, reduce, allgather,
// reduce-scatter, allreduce), and LL's and the tree's caps [Volta or Intel, Ampere or
// AMD][one node, two, more].
const LL128_MAX_BW_PER_CH_28: [f64; 5] = [18.8, 12.0, 18.3, 15.2, 16.9];
const LL_MAX_BWS_28: [[f64; 3]; 2] = [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0]];
const PER_CH_MAX_TREE_BWS_28: [[f64; 3]; 2] = [[26.5, 18.5, 10.0], [24.0, 22.5, 16.0]];
const TREE_CORRECTION_28: [[f64; 23]; 3] = [
    [1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.9, 0.9, 0.92,
        0.92,
    ],
    [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9],
];

/// Network overhead per step on an x86 Intel host, microseconds (`getNetOverhead`).
const NET_OVERHEAD_US: f64 = 1.0;

/// What the model is evaluated for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inputs {
    /// nRanks.
    pub ranks: usize,
    /// nNodes.
    pub nodes: usize,
    /// Bus bandwidth inside a node, GB/s (all channels together).
    pub bw_intra: f64,
    /// Bus bandwidth between nodes, GB/s (all channels together).
    pub bw_inter: f64,
    /// Channels.
    pub channels: u32,
    /// GPU generation.
    pub arch: Arch,
    /// The op is `avg` (NCCL's PreMulSum for floats, SumPostDiv for integers), which
    /// NCCL's PAT reduce-scatter does not take (`updateCollCostTable`).
    pub avg: bool,
    /// The GPUs of a node talk over PCIe, not NVLink (NCCL's `typeIntra` above
    /// `PATH_NVL`): the intra-node hop latencies are NCCL's PCI row, and LL128 is off
    /// unless `NCCL_PROTO` names it (see [`Inputs::ll128`]).
    pub pcie: bool,
    /// LL128 may be picked. NCCL enables it by default only over NVLink and, across
    /// nodes, where the path between a GPU and its NIC crosses no CPU (its `protoEnable`
    /// 2 case: the graph's `typeIntra` at most NVLink and `typeInter` at most `PATH_PXB`;
    /// "not tested and may cause silent data corruption" elsewhere); an explicit
    /// `NCCL_PROTO` naming it turns it on anywhere.
    pub ll128: bool,
    /// NVLS may be picked: the GPUs of a node share an NVSwitch that can add and
    /// multicast (NCCL's `nvlsSupport`: Hopper or later on NVSwitch), and it is not turned
    /// off (`nccl_model`'s `nvls=0`, NCCL_NVLS_ENABLE=0). NCCL runs it across nodes only
    /// with CollNet, which we do not model, so it is weighed on one node only.
    pub nvls: bool,
    /// NVLS Tree's heads per node, the GPUs that own a NIC (NCCL's NVLS search: one per
    /// NIC, at most one per GPU), which are also its channels in NCCL's model; 0 where
    /// NCCL has no NVLS Tree (before 2.18, or no NVLS). Weighed only with [`Inputs::nvls`]
    /// and on more than one node.
    pub nvls_heads: usize,
    /// Which NCCL release's model to evaluate.
    pub tuning: Tuning,
    /// The channels and speeds NCCL 2.8's graph search finds on this machine
    /// ([`search_28`]), where we replicate it and [`Inputs::searched`] was asked; under
    /// [`Tuning::V2_8`] the ring's replace `channels`, `bw_intra` and `bw_inter`, and the
    /// tree's bandwidth comes from the tree's own graph. `None`: the fields as they are.
    pub search: Option<Search28>,
}

impl Inputs {
    /// The inputs for `topo` (see the module's description), op not `avg`.
    pub fn of(topo: &dyn Topology, channels: u32, arch: Arch) -> Inputs {
        let ranks = topo.ranks();
        let gbps = |b: f64| b / 1e9;
        // A cluster knows its nodes even where it is not two levels (one node, or NVLinks
        // of several widths): its ranks are whole nodes or part of one.
        let shape_nodes = topo.node_shape().map(|(_, g)| ranks.div_ceil(g.max(1)).max(1));
        // Two levels: the first is inside a node, the last between nodes; a flat machine
        // is one rank per node on its best link.
        let (nodes, bw_intra, bw_inter) = match topo.levels().filter(|l| l.len() >= 2) {
            Some(levels) => (
                ranks.div_ceil(levels[0].0.max(1)).max(1),
                gbps(levels[0].1.bandwidth),
                gbps(levels[levels.len() - 1].1.bandwidth),
            ),
            None => {
                // One PCIe node whose pairs differ (GPUs under two CPU sockets): NCCL's
                // search lays its ring and its chain in rank order at the speed of their
                // slowest hop, the one across sockets.
                let bw = match shape_nodes {
                    Some(1) if topo.intra_pcie() && ranks > 1 => {
                        (0..ranks).map(|r| topo.link(r, (r + 1) % ranks).bandwidth).fold(f64::INFINITY, f64::min)
                    }
                    _ => topo.best_link().0.bandwidth,
                };
                let bw = gbps(bw);
                (ranks.max(1), bw, bw)
            }
        };
        Inputs {
            ranks,
            nodes: shape_nodes.unwrap_or(nodes),
            bw_intra,
            bw_inter,
            channels,
            arch,
            avg: false,
            pcie: topo.intra_pcie(),
            // NCCL enables LL128 only where the graph's GPU-NIC path (`typeInter`) is PXB or
            // closer; on one node it drops the NICs from its topology and no path counts.
            ll128: !(topo.intra_pcie() || (shape_nodes.unwrap_or(nodes) > 1 && topo.nic_through_cpu())),
            nvls: topo.intra_nvswitch() && arch.comp_cap() >= 90,
            nvls_heads: match (topo.intra_nvswitch(), topo.node_shape(), topo.node_nics()) {
                (true, Some((_, g)), Some(nics)) => nics.min(g),
                _ => 0,
            },
            tuning: Tuning::V2_30,
            search: None,
        }
    }

    /// Under [`Tuning::V2_8`], the same inputs with the channels and bus bandwidths NCCL
    /// 2.8's graph search finds on `topo` ([`search_28`]) in place of the link's
    /// bandwidth and the given channels: NCCL rates the machine by the graph it found, so
    /// its picks follow that graph. Unchanged under later tunings, and where we do not
    /// replicate the search.
    pub fn searched(self, topo: &dyn Topology) -> Inputs {
        if self.tuning != Tuning::V2_8 {
            return self;
        }
        let Some(found) = search_28(topo) else { return self };
        let ch = f64::from(found.ring.channels);
        Inputs {
            channels: found.ring.channels,
            bw_intra: ch * found.ring.speed_intra,
            bw_inter: ch * found.ring.speed_inter,
            search: Some(found),
            ..self
        }
    }

    /// The same inputs for NCCL release `tuning`: 2.8 has neither NVLS nor PAT, and
    /// enables LL128 by default only on Volta and Ampere (over NVLink, as later ones).
    pub fn with_tuning(self, tuning: Tuning) -> Inputs {
        match tuning {
            Tuning::V2_30 => Inputs { tuning, ..self },
            Tuning::V2_8 => Inputs {
                tuning,
                nvls: false,
                nvls_heads: 0,
                ll128: self.ll128 && matches!(self.arch, Arch::Volta | Arch::Ampere),
                ..self
            },
        }
    }

    /// The same inputs for the NCCL release `version` (`2.18.3`) within its [`Tuning`]:
    /// NVLS came with 2.17 and NVLS Tree with 2.18, so earlier releases weigh neither.
    /// Text that is not a version changes nothing.
    pub fn with_release(self, version: &str) -> Inputs {
        let mut parts = version.trim().split(['.', '+', '-']);
        let (Some(Ok(major)), Some(Ok(minor))) =
            (parts.next().map(str::parse::<u32>), parts.next().map(str::parse::<u32>))
        else {
            return self;
        };
        Inputs {
            nvls: self.nvls && (major, minor) >= (2, 17),
            nvls_heads: if (major, minor) >= (2, 18) { self.nvls_heads } else { 0 },
            ..self
        }
    }

    /// Whether NCCL enables PAT here (`ncclPatEnable`): one rank per node (and a GPU of
    /// compute capability 6.0 or more and a host-driven network, which ours all are).
    pub fn pat_enabled(&self) -> bool {
        self.tuning == Tuning::V2_30 && self.nodes == self.ranks
    }
}

// NCCL 2.8's graph search (`src/graph/search.cc`, `topo.h`): the speeds per channel it
// tries, GB/s, fastest first (`speedArray`); the most channels a search may find
// (`MAXCHANNELS/2`); the width it rates one NVLink at from Volta on
// (`SM70_NVLINK_WIDTH`, `SM80_NVLINK_WIDTH`; 2.8 gives later GPUs the same); the speed
// from which it opens every channel twice at half the speed.
const SPEEDS_28: [f64; 18] =
    [42.0, 30.0, 24.0, 21.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12];
const MAX_CHANNELS_28: u32 = 16;
const NVLINK_WIDTH_28: f64 = 21.0;
const DUP_SPEED_28: f64 = 25.0;

/// One graph NCCL 2.8's search settled on: its channels and the speed each carries
/// inside a node and through a NIC, GB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Graph28 {
    /// nChannels.
    pub channels: u32,
    /// speedIntra, GB/s per channel.
    pub speed_intra: f64,
    /// speedInter, GB/s per channel.
    pub speed_inter: f64,
}

/// The ring's and the tree's graphs of NCCL 2.8 on one machine, with the channels both
/// keep (`init.cc`: the fewer of the two).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search28 {
    /// The ring's graph.
    pub ring: Graph28,
    /// The tree's graph.
    pub tree: Graph28,
}

/// NCCL 2.8's first speed: the fastest of its speeds not above `max_width`.
fn first_speed_28(max_width: f64) -> usize {
    SPEEDS_28.iter().position(|&s| s <= max_width).unwrap_or(SPEEDS_28.len() - 1)
}

/// The channels and speed NCCL 2.8's first pass settles at (`ncclTopoCompute`):
/// from the fastest speed not above `max_width` it searches the most channels
/// (`channels_at`, at most `max_channels`), then tries slower speeds while they are above
/// 0.49 of the best found, keeping a graph only if its channels times speed is larger
/// (ties keep the faster); it stops once that total reaches `total_width` (a GPU's
/// NVLinks, or its PCIe link) or the channels reach `max_channels`.
fn settle_28(max_width: f64, total_width: f64, max_channels: u32, channels_at: impl Fn(f64) -> u32) -> Option<Graph28> {
    let mut i = first_speed_28(max_width);
    let mut best: Option<(u32, f64)> = None;
    loop {
        let s = SPEEDS_28[i];
        let n = channels_at(s).min(max_channels);
        if n > 0 && best.is_none_or(|(bn, bs)| f64::from(n) * s > f64::from(bn) * bs) {
            best = Some((n, s));
        }
        if let Some((bn, bs)) = best
            && (bn >= max_channels
                || f64::from(bn) * bs >= total_width
                || SPEEDS_28.get(i + 1).is_none_or(|&next| next / bs <= 0.49))
        {
            break;
        }
        if i + 1 >= SPEEDS_28.len() {
            break;
        }
        i += 1;
    }
    best.map(|(channels, s)| Graph28 { channels, speed_intra: s, speed_inter: s })
}

/// NCCL 2.8's last step of a search: a graph of `DUP_SPEED_28` or more inside a node is
/// opened twice (up to `max_channels`), each copy at the speed divided accordingly.
fn dup_28(g: Graph28, max_channels: u32) -> Graph28 {
    if g.speed_intra < DUP_SPEED_28 {
        return g;
    }
    let channels = (2 * g.channels).min(max_channels).max(g.channels);
    let div = f64::from(channels.div_ceil(g.channels));
    Graph28 { channels, speed_intra: g.speed_intra / div, speed_inter: g.speed_inter / div }
}

/// The ring and tree graphs NCCL 2.8's search (`src/graph/search.cc`, `init.cc`) finds
/// on a cluster, as far as its rules can be read off the machine file: NCCL rates a NIC
/// at its line rate, an NVLink at its own 21 GB/s a link whatever the machine says, an
/// NVSwitch or PCIe link at its nominal rate.
///
/// Across nodes every channel enters a node through a NIC and leaves through it: the
/// first speed is the fastest not above the NIC's rate, each NIC carries as many
/// channels as its rate holds at that speed, and slower speeds are tried for
/// more channels. The ring keeps that speed inside the node; the tree's search then
/// raises its speed inside the node one step at a time while it is below twice the NIC
/// speed and the node's best GPU pair can carry it (its second pass), and is held to the
/// ring's channels. On one node (NCCL leaves the NICs out) the ring's channels are the
/// rings it lays over the NVLinks at each speed, a bundle of `n` links of width `21 n`
/// carrying `floor(21 n / speed)` of them (our NVLink ring search, `nvlink_rings`), or
/// on an NVSwitch as many as a GPU's link holds; the tree's chains, a ring less one hop, are taken as the
/// ring's. A graph of 25 GB/s or more a channel is opened twice at half the speed, and
/// both graphs keep the fewer channels of the two.
///
/// `None` where we do not replicate the search: a machine that is not a cluster, one
/// GPU, a one-node PCIe machine (whose rings go through CPUs), or no link at all. Not
/// modelled: a GPU's PCIe link to its NIC (NCCL's PCIe Gen3 x16, 12 GB/s, would bound a
/// faster NIC), the tree's Volta rule that also charges a GPU's link back for an eighth
/// of what enters it from a NIC, and the search's time-out.
pub fn search_28(topo: &dyn Topology) -> Option<Search28> {
    let (nodes, gpus) = topo.node_shape()?;
    let ranks = topo.ranks();
    let g = gpus.min(ranks);
    let gbps = |b: f64| b / 1e9;
    // The NVLink widths of every pair of the node's GPUs in use, where they are explicit.
    let nv: Option<Vec<(usize, usize, f64)>> = topo.nvlinks().map(|links| {
        links.iter().filter(|l| l.0 < g && l.1 < g).map(|&(a, b, n)| (a, b, NVLINK_WIDTH_28 * f64::from(n))).collect()
    });
    // The widest GPU pair of the node and the most a GPU has in all.
    let (pair_width, total_width) = match &nv {
        Some(w) => {
            let best = w.iter().map(|l| l.2).fold(0.0, f64::max);
            let total =
                (0..g).map(|x| w.iter().filter(|l| l.0 == x || l.1 == x).map(|l| l.2).sum::<f64>()).fold(0.0, f64::max);
            (best, total)
        }
        None if g > 1 => {
            let w = gbps(topo.link(0, 1).bandwidth);
            (w, w)
        }
        None => (f64::INFINITY, 0.0),
    };
    let (ring, tree) = if nodes > 1 && ranks > gpus {
        let nic = gbps(topo.link(0, gpus).bandwidth);
        let nics = topo.node_nics()?.clamp(1, g.max(1)) as u32;
        let per_nic = |s: f64| nics * (nic / s + 1e-9).floor() as u32;
        let ring = dup_28(settle_28(nic, total_width, MAX_CHANNELS_28, per_nic)?, MAX_CHANNELS_28);
        let tree = settle_28(nic, total_width, ring.channels, per_nic)?;
        let mut i = first_speed_28(tree.speed_inter);
        let mut intra = tree.speed_intra;
        while intra < 2.0 * tree.speed_inter && i > 0 && SPEEDS_28[i - 1] <= pair_width {
            i -= 1;
            intra = SPEEDS_28[i];
        }
        (ring, dup_28(Graph28 { speed_intra: intra, ..tree }, ring.channels))
    } else {
        if g < 2 || topo.intra_pcie() {
            return None;
        }
        let ring = match &nv {
            Some(w) => {
                let at = |s: f64| {
                    let links: Vec<(usize, usize, u32)> =
                        w.iter().map(|&(a, b, width)| (a, b, (width / s + 1e-9).floor() as u32)).collect();
                    crate::algos::nccl_ring::nvlink_rings(g, &links).len() as u32
                };
                settle_28(pair_width, total_width, MAX_CHANNELS_28, at)?
            }
            None => settle_28(pair_width, total_width, MAX_CHANNELS_28, |s| (pair_width / s + 1e-9).floor() as u32)?,
        };
        let ring = dup_28(ring, MAX_CHANNELS_28);
        (ring, ring)
    };
    let channels = ring.channels.min(tree.channels);
    Some(Search28 { ring: Graph28 { channels, ..ring }, tree: Graph28 { channels, ..tree } })
}

/// NCCL's name of collective `c` (its tuner plugin's CSV); `None` for the barrier, which
/// NCCL does not have.
pub fn collective_name(c: Collective) -> Option<&'static str> {
    match c {
        Collective::Allreduce => Some("allreduce"),
        Collective::ReduceScatter => Some("reducescatter"),
        Collective::Allgather => Some("allgather"),
        Collective::Broadcast => Some("broadcast"),
        Collective::Reduce => Some("reduce"),
        Collective::Barrier => None,
    }
}

/// The algorithms NCCL's model weighs for `c` (of those we model), in NCCL's order:
/// allreduce tree, ring and NVLS; reduce-scatter and allgather ring, NVLS and PAT;
/// broadcast and reduce ring; none for the barrier.
pub fn algorithms(c: Collective) -> &'static [Algo] {
    match c {
        Collective::Allreduce => &[Algo::Tree, Algo::Ring, Algo::Nvls, Algo::NvlsTree],
        Collective::ReduceScatter | Collective::Allgather => &[Algo::Ring, Algo::Nvls, Algo::Pat],
        Collective::Broadcast | Collective::Reduce => &[Algo::Ring],
        Collective::Barrier => &[],
    }
}

/// NCCL's `nsteps` for `c` on `ranks` ranks: the ring steps, which also turn the bus
/// bandwidth into the ring's algorithm bandwidth.
fn nsteps(c: Collective, ranks: f64) -> f64 {
    match c {
        Collective::Allreduce => 2.0 * (ranks - 1.0),
        Collective::ReduceScatter | Collective::Allgather => ranks - 1.0,
        _ => ranks,
    }
}

/// NCCL's latency (us) and algorithm bandwidth (GB/s) for collective `c` by `algo` with
/// `proto` (`ncclTopoTuneModel`); bandwidth 0 where NCCL would not use the pair.
pub fn lat_bw(x: &Inputs, c: Collective, algo: Algo, proto: Proto) -> (f64, f64) {
    if !algorithms(c).contains(&algo) || (algo == Algo::Pat && (proto != Proto::Simple || !x.pat_enabled())) {
        return (0.0, 0.0);
    }
    if algo == Algo::Nvls {
        return nvls_lat_bw(x, c, proto);
    }
    if algo == Algo::NvlsTree {
        return nvls_tree_lat_bw(x, c, proto);
    }
    if x.tuning == Tuning::V2_8 {
        return lat_bw_28(x, c, algo, proto);
    }
    let (a, p) = (algo.index(), proto.index());
    let (n_ranks, n_nodes) = (x.ranks as f64, x.nodes as f64);
    let cc = x.arch.index();
    let index2 = if x.nodes <= 2 { x.nodes - 1 } else { 2 };
    // LL on one node follows the GPU, across nodes the CPU (Intel: row 0).
    let index1 = if x.nodes == 1 { cc } else { 0 };
    let nch = f64::from(x.channels);
    let bw_per_ch = if x.nodes <= 2 { x.bw_intra } else { x.bw_inter } / nch;
    let mut bus = nch * bw_per_ch;
    if algo == Algo::Ring && proto == Proto::Ll {
        bus = LL_MAX_BWS[index1][index2].min(bus * 0.5);
    }
    if algo == Algo::Ring && proto == Proto::Ll128 {
        bus = (bus * 0.92).min(nch * PER_CH_MAX_RING_LL128_BWS[cc][index2]);
    }
    if algo == Algo::Tree && c == Collective::Allreduce {
        bus = (bus * 0.92).min(nch * PER_CH_MAX_TREE_BWS[cc][index2]);
    }
    if algo == Algo::Tree && proto == Proto::Ll {
        bus = (bus / 3.8).min(LL_MAX_BWS[index1][index2]);
    }
    if algo == Algo::Tree && proto == Proto::Ll128 {
        let eff = if x.nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
        bus = (bus * eff).min(nch * PER_CH_MAX_TREE_LL128_BWS[cc][index2]);
    }
    if algo == Algo::Pat {
        bus *= 0.75;
    }
    // Bus bandwidth to algorithm bandwidth: the ring's P / nsteps, the tree's 1/2; PAT's
    // bus bandwidth is its algorithm bandwidth.
    let nsteps = nsteps(c, n_ranks);
    let bw = match algo {
        Algo::Ring | Algo::Nvls | Algo::NvlsTree => bus * n_ranks / nsteps,
        Algo::Tree => bus * 0.5,
        Algo::Pat => bus,
    };
    let ppn = n_ranks / n_nodes;
    let (base, nvlink, net) = match algo {
        Algo::Pat => (PAT_BASE_LAT, PAT_HW_LAT_NVLINK, PAT_HW_LAT_NET),
        _ => (BASE_LAT[a][p], if x.pcie { HW_LAT_PCI[a][p] } else { HW_LAT_NVLINK[a][p] }, HW_LAT_NET[a][p]),
    };
    let mut intra_lat = nvlink;
    // With one rank per node NCCL charges the tree's network latency to every algorithm.
    let inter_lat = if ppn == 1.0 { HW_LAT_NET[0][p] } else { net };
    let mut lat = base;
    match (algo, c) {
        (Algo::Ring, Collective::Broadcast | Collective::Reduce) => {
            // The same ring on every channel: one hop's latency, the network's across nodes.
            lat += if x.nodes == 1 { nvlink } else { net };
        }
        (Algo::Ring, _) => {
            if x.nodes > 1 {
                let overhead = if proto == Proto::Simple { 3.0 * NET_OVERHEAD_US } else { NET_OVERHEAD_US };
                intra_lat = intra_lat.max(overhead);
            }
            let inter_steps = match (x.nodes, c) {
                (1, _) => 0.0,
                (_, Collective::Allreduce) => 2.0 * (n_nodes - 1.0),
                _ => n_nodes - 1.0,
            };
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
        }
        (Algo::Tree, _) => {
            // NCCL divides the ranks by the nodes in integers here.
            let per_node = (x.ranks / x.nodes) as f64;
            lat += 2.0 * ((per_node - 1.0) * intra_lat + f64::from(log2i(x.nodes as u64)) * inter_lat);
        }
        (Algo::Nvls | Algo::NvlsTree, _) => {}
        (Algo::Pat, _) => {
            // A logarithmic part, and "still a linear part" (NCCL's comment).
            lat += f64::from(log2i(x.nodes as u64)) * (inter_lat / 3.5) + n_ranks * 2.8;
        }
    }
    (lat, bw)
}

/// [`lat_bw`] as NCCL 2.8.4's `ncclTopoTuneModel` has it (ring and tree only).
/// Where it differs from the later model: LL's ring bandwidth is a quarter of the bus
/// (capped per CPU and node count), LL128's ring keeps 0.92 of it (0.7 with one rank per
/// node) under a per-channel cap per collective; the tree keeps 0.92 under its per-channel
/// cap, LL 1/3.8 of that, LL128 0.915 (7/9 on one node). Latencies: a base per pair, plus
/// per hop NVLink's or PCI's inside a node (LL's times 1.8 across nodes) and the network's
/// between nodes, with no per-step network overhead: the ring's `2(P-1)` steps of which
/// `2(N-1)` cross nodes, the tree's `2((P/N - 1) intra + log2(N) net)`; broadcast and
/// reduce one hop.
fn lat_bw_28(x: &Inputs, c: Collective, algo: Algo, proto: Proto) -> (f64, f64) {
    if !matches!(algo, Algo::Ring | Algo::Tree) {
        return (0.0, 0.0);
    }
    let (a, p) = (algo.index(), proto.index());
    let (n_ranks, n_nodes) = (x.ranks as f64, x.nodes as f64);
    let index2 = if x.nodes <= 2 { x.nodes - 1 } else { 2 };
    // 2.8's tables have two rows: Volta (or an Intel host across nodes) and Ampere.
    let cc80 = usize::from(x.arch == Arch::Ampere);
    let index1 = if x.nodes == 1 { cc80 } else { 0 };
    let nch = f64::from(x.channels);
    let ppn = n_ranks / n_nodes;
    // NCCL's speed: inside a node's on two nodes or fewer, else between nodes; the
    // tree's from its own graph, whose search may have raised its speed inside a node.
    let (intra, inter) = match (algo, x.search) {
        (Algo::Tree, Some(found)) => {
            let ch = f64::from(found.tree.channels);
            (ch * found.tree.speed_intra, ch * found.tree.speed_inter)
        }
        _ => (x.bw_intra, x.bw_inter),
    };
    let mut bus = if x.nodes <= 2 { intra } else { inter };
    let ll128_cap = nch
        * LL128_MAX_BW_PER_CH_28[match c {
            Collective::Broadcast => 0,
            Collective::Reduce => 1,
            Collective::Allgather => 2,
            Collective::ReduceScatter => 3,
            _ => 4,
        }];
    if cc80 == 1 {
        bus = bus.min(235.0);
    }
    match (algo, proto) {
        (Algo::Ring, Proto::Ll) => {
            let share =
                if x.nodes > 1 || matches!(c, Collective::Allreduce | Collective::Reduce) { 0.25 } else { 1.0 / 3.0 };
            bus = LL_MAX_BWS_28[index1][index2].min(bus * share);
        }
        (Algo::Ring, Proto::Ll128) => bus = (bus * if ppn < 2.0 { 0.7 } else { 0.92 }).min(ll128_cap),
        (Algo::Tree, _) => {
            bus = (bus * 0.92).min(nch * PER_CH_MAX_TREE_BWS_28[cc80][index2]);
            if proto == Proto::Ll {
                bus = (bus / 3.8).min(LL_MAX_BWS_28[index1][index2]);
            }
            if proto == Proto::Ll128 {
                bus = (bus * if x.nodes == 1 { 7.0 / 9.0 } else { 0.915 }).min(ll128_cap);
            }
        }
        _ => {}
    }
    let nsteps = nsteps(c, n_ranks);
    let bw = if algo == Algo::Ring { bus * n_ranks / nsteps } else { bus * 0.5 };
    let intra_hw = if x.pcie { HW_LAT_PCI_28 } else { HW_LAT_NVLINK_28 };
    let net = HW_LAT_NET_28[a][p];
    let mut intra_lat = intra_hw[a][p];
    if x.nodes > 1 && proto == Proto::Ll {
        intra_lat *= 1.8;
    }
    let mut lat = BASE_LAT_28[a][p];
    match (algo, c) {
        (Algo::Ring, Collective::Broadcast | Collective::Reduce) => {
            lat += if x.nodes == 1 { intra_hw[a][p] } else { net };
        }
        (Algo::Ring, _) => {
            let inter_steps = match c {
                Collective::Allreduce => 2.0 * (n_nodes - 1.0),
                _ => n_nodes - 1.0,
            };
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * net;
        }
        _ => {
            let per_node = (x.ranks / x.nodes) as f64;
            lat += 2.0 * ((per_node - 1.0) * intra_lat + f64::from(log2i(x.nodes as u64)) * net);
        }
    }
    (lat, bw)
}

/// NVLS's latency and algorithm bandwidth (`ncclTopoTuneModel`): Simple only, on one
/// node whose NVSwitch supports it (across nodes NCCL needs CollNet for it); the bus
/// bandwidth is the NVLink bandwidth times the architecture's NVLS efficiency times
/// `(c-1)/c` for the c channels of its NVLS graph. That graph is not the 16 channels the
/// kernel runs on (`nvlsChannels`): on one node NCCL's search makes one channel per GPU
/// (`ncclTopoCompute` forces `minChannels` to `maxChannels`, the node's GPUs, at most
/// `NCCL_MAX_NVLS_ARITY`), so c is the node's G. For the allreduce it is doubled ("pipelines two
/// operations") and turned into algorithm bandwidth like the ring's (`P / 2(P-1)`); for
/// reduce-scatter and allgather it is cut by `(ppn-1)/ppn` and, as for every algorithm
/// but the ring there, taken as the algorithm bandwidth as it is. The latency is a flat
/// 25 us.
fn nvls_lat_bw(x: &Inputs, c: Collective, proto: Proto) -> (f64, f64) {
    if !x.nvls || x.nodes != 1 || proto != Proto::Simple {
        return (0.0, 0.0);
    }
    let nc = (x.ranks / x.nodes.max(1)).min(NVLS_MAX_ARITY) as f64;
    if nc < 2.0 {
        // "NVLS/NVLStree needs at least 2 channels".
        return (0.0, 0.0);
    }
    let bus = x.bw_intra * NVLS_EFFICIENCY[x.arch.index()] * (nc - 1.0) / nc;
    let n_ranks = x.ranks as f64;
    match c {
        Collective::Allreduce => (NVLS_LAT_NVLINK, bus * 2.0 * n_ranks / nsteps(c, n_ranks)),
        Collective::ReduceScatter | Collective::Allgather => {
            let ppn = n_ranks / x.nodes as f64;
            (NVLS_LAT_NVLINK, bus * (ppn - 1.0) / ppn)
        }
        _ => (0.0, 0.0),
    }
}

/// NVLS Tree's latency and algorithm bandwidth (`ncclTopoTuneModel`): Simple only, an
/// allreduce on more than one node whose NVSwitch supports NVLS, with two heads or more
/// per node (NCCL's NVLS graph has a channel per head and needs two). Per channel (a
/// head) the bus bandwidth is the least of: the head's share of the NVLink bandwidth
/// times the NVLS efficiency times `(H-1)/H`, doubled ("pipelines two operations"); the
/// head's NIC, doubled on two nodes (each node is the root of one of the two trees); and
/// NCCL's cap per channel (57.7 GB/s on two Hopper nodes, 45.5 on more). It is turned
/// into algorithm bandwidth as the ring's (`P / 2(P-1)`). The latency is NVLS's 25 us
/// inside the node plus `2 log2(N)` network hops of 20.9 us.
fn nvls_tree_lat_bw(x: &Inputs, c: Collective, proto: Proto) -> (f64, f64) {
    let heads = x.nvls_heads;
    if !x.nvls || x.nodes < 2 || heads < 2 || proto != Proto::Simple || c != Collective::Allreduce {
        return (0.0, 0.0);
    }
    let h = heads as f64;
    let index2 = if x.nodes <= 2 { x.nodes - 1 } else { 2 };
    let intra = x.bw_intra / h * NVLS_EFFICIENCY[x.arch.index()] * (h - 1.0) / h * 2.0;
    let inter = x.bw_inter * if x.nodes <= 2 { 2.0 } else { 1.0 };
    let bus = h * intra.min(inter).min(PER_CH_MAX_NVLS_TREE_BWS[x.arch.index()][index2]);
    let n_ranks = x.ranks as f64;
    let lat = NVLS_TREE_LAT_NVLINK + 2.0 * f64::from(log2i(x.nodes as u64)) * NVLS_TREE_LAT_NET;
    (lat, bus * n_ranks / nsteps(c, n_ranks))
}

/// NCCL's predicted time in seconds for collective `c` of `bytes` (NCCL's `nBytes`) by
/// `algo` with `proto` (`ncclTopoGetAlgoTime`, one operation); `None` where NCCL would
/// not use the pair.
pub fn time(x: &Inputs, c: Collective, algo: Algo, proto: Proto, bytes: u64) -> Option<f64> {
    if x.ranks <= 1
        || (algo == Algo::Pat && c == Collective::ReduceScatter && x.avg)
        || (proto == Proto::Ll128 && !x.ll128)
    {
        return None;
    }
    let (mut lat, mut bw) = lat_bw(x, c, algo, proto);
    if bw <= 0.0 || !bw.is_finite() {
        return None;
    }
    let log_size = log2i(bytes >> 6);
    if x.tuning == Tuning::V2_8 {
        if algo == Algo::Tree && (0..23).contains(&log_size) {
            bw *= TREE_CORRECTION_28[proto.index()][log_size as usize];
        }
        // 2.8's ring plateau: from P/16 x 64 KiB, whatever the channels and GPU.
        if algo == Algo::Ring
            && proto == Proto::Simple
            && c == Collective::Allreduce
            && x.nodes > 1
            && bytes as f64 >= x.ranks as f64 / 16.0 * 65536.0
        {
            lat *= 1.9;
        }
        return Some((lat + bytes as f64 / (1000.0 * bw)) * 1e-6);
    }
    if algo == Algo::Tree && c == Collective::Allreduce && (0..23).contains(&log_size) {
        bw *= TREE_CORRECTION[proto.index()][log_size as usize];
    }
    // NCCL corrects NVLS Tree like the tree on Blackwell (and later) with an x86 host.
    if algo == Algo::NvlsTree && x.arch.comp_cap() >= 100 && (0..24).contains(&log_size) {
        bw *= TREE_CORRECTION[proto.index()][log_size as usize];
    }
    // The ring's plateau across nodes: its latency grows once each rank's share of
    // every channel reaches 64 bytes.
    if algo == Algo::Ring
        && proto == Proto::Simple
        && c == Collective::Allreduce
        && x.nodes > 1
        && bytes / (u64::from(x.channels) * x.ranks as u64) >= 64
    {
        lat *= if x.arch.comp_cap() < 80 { 1.9 } else { 1.4 };
    }
    Some((lat + bytes as f64 / (1000.0 * bw)) * 1e-6)
}

/// NCCL's `log2i`: floor of log2, -1 for 0.
fn log2i(n: u64) -> i32 {
    if n == 0 { -1 } else { 63 - n.leading_zeros() as i32 }
}

/// NCCL's choice for collective `c` of `bytes`: the (algorithm, protocol) of smallest
/// predicted time, ties to the first in NCCL's order (tree, ring, PAT; LL, LL128,
/// Simple), with that time.
pub fn choice(x: &Inputs, c: Collective, bytes: u64) -> Option<(Algo, Proto, f64)> {
    let mut best: Option<(Algo, Proto, f64)> = None;
    for &algo in algorithms(c) {
        for proto in Proto::ALL {
            if let Some(t) = time(x, c, algo, proto, bytes)
                && best.is_none_or(|(_, _, b)| t < b)
            {
                best = Some((algo, proto, t));
            }
        }
    }
    best
}

/// The protocol NCCL's model ranks first for `algo` on `c` at `bytes`, with its time.
pub fn best_protocol(x: &Inputs, c: Collective, algo: Algo, bytes: u64) -> Option<(Proto, f64)> {
    let mut best: Option<(Proto, f64)> = None;
    for proto in Proto::ALL {
        if let Some(t) = time(x, c, algo, proto, bytes)
            && best.is_none_or(|(_, b)| t < b)
        {
            best = Some((proto, t));
        }
    }
    best
}

/// The chunk, in data bytes, NCCL's tree allreduce of `bytes` moves with `proto`
/// (`computeColl` in 2.8, `calcCollChunking` later; the same rules): NCCL halves its step
/// until every channel has enough chunks to fill the tree's pipeline. With Simple (a
/// 512 KiB step) while a channel has fewer than 8, 4, 1 times the tree's depth
/// (`P/N - 1 + log2(N)`) in chunks and the chunk is above 128, 64, 32 KiB; with LL128
/// (a 614400-byte step of 128-byte lines, 120 of data) while it has fewer than
/// `64/ppn` and `16/ppn` times `1 + log2(N) + ppn/10` and the chunk is above 128 and 32 KB.
/// LL's 32 KiB step is kept. `None` for LL (the protocol's own chunk).
///
/// The Simple rule is 2.8's (and up to 2.19's); from 2.20 on NCCL keeps the tree's whole
/// 512 KiB Simple step whatever the size (`calcCollChunking` halves only LL128's), so
/// under [`Tuning::V2_30`] a channel with less than a step has one chunk and the chain
/// does not pipeline it: a PCIe node's tree at 1 MiB crosses its chain's hops one after
/// the other (docs/nccl.md, "PCIe servers"). Releases 2.10 to 2.19 fall under `V2_30`
/// and so lose their halving here.
pub fn tree_chunk(x: &Inputs, proto: Proto, bytes: u64) -> Option<u64> {
    let nch = u64::from(x.channels.max(1));
    let per_chunk = |chunk: u64| bytes / (nch * chunk);
    let nodes = x.nodes.max(1);
    let ppn = x.ranks as f64 / nodes as f64;
    match proto {
        Proto::Simple if x.tuning != Tuning::V2_8 => Some(524_288),
        Proto::Simple => {
            let depth = (x.ranks / nodes).saturating_sub(1) as u64 + log2i(nodes as u64).max(0) as u64;
            let mut chunk = 524_288u64;
            for (times, floor) in [(8, 131_072), (4, 65_536), (1, 32_768)] {
                while per_chunk(chunk) < depth * times && chunk > floor {
                    chunk /= 2;
                }
            }
            Some(chunk)
        }
        Proto::Ll128 => {
            let steps = 1.0 + f64::from(log2i(nodes as u64)) + 0.1 * ppn;
            let mut chunk = 614_400u64;
            for (times, floor) in [(64.0, 131_072), (16.0, 32_768)] {
                while (per_chunk(chunk) as f64) < steps * times / ppn && chunk > floor {
                    chunk /= 2;
                }
            }
            Some(chunk / 128 * 120)
        }
        Proto::Ll => None,
    }
}

/// [`call_params`] with the tree's [`tree_pattern`] and [`tree_schedule`], as the
/// parameters of our `nccl_ring` / `nccl_tree` entry: `channels`, then `chunk`, `pattern`
/// and `schedule` where they apply. `run`'s `nccl_model` and `calibrate` both build their
/// entry here, so a release's choice reaches both.
pub fn call_param_list(x: &Inputs, c: Collective, algo: Algo, proto: Proto, bytes: u64) -> Vec<(String, ParamValue)> {
    let (channels, chunk) = call_params(x, c, algo, proto, bytes);
    let mut v = vec![("channels".to_string(), ParamValue::Int(u64::from(channels)))];
    if let Some(chunk) = chunk {
        v.push(("chunk".to_string(), ParamValue::Str(format!("{chunk}B"))));
    }
    if let Some(pattern) = tree_pattern(x, algo) {
        v.push(("pattern".to_string(), ParamValue::Str(pattern.to_string())));
    }
    if let Some(schedule) = tree_schedule(x, algo, proto) {
        v.push(("schedule".to_string(), ParamValue::Str(schedule.to_string())));
    }
    v
}

/// The channels and chunk NCCL runs one call of `c` of `bytes` with, as the parameters
/// of our `nccl_ring` / `nccl_tree`: `x.channels`, except that under 2.8's tuning a call
/// of any collective opens twice the channels its search found and cuts them by the size
/// ([`run_channels_28`]: 2.8.4's `getAlgoInfo` in `src/enqueue.cc`, which every
/// collective's `computeColl` calls, with `nBytes` the whole buffer of a reduce-scatter
/// or allgather); the tree's chunk shrunk to fill its pipeline on those channels
/// ([`tree_chunk`]), `None` for the ring. `run`'s `nccl_model` and `calibrate` both ask
/// here, so both simulate the same call.
pub fn call_params(x: &Inputs, _c: Collective, algo: Algo, proto: Proto, bytes: u64) -> (u32, Option<u64>) {
    if algo == Algo::NvlsTree {
        let (channels, chunk) = nvls_tree_call(x, bytes);
        return (channels, Some(chunk));
    }
    let channels = match x.tuning {
        Tuning::V2_8 => run_channels_28(x, algo, proto, bytes),
        Tuning::V2_30 => x.channels,
    };
    let chunk = if algo == Algo::Tree { tree_chunk(&Inputs { channels, ..*x }, proto, bytes) } else { None };
    (channels, chunk)
}

/// The channels and chunk NCCL runs an NVLS Tree allreduce of `bytes` with
/// (`src/transport/nvls.cc` `ncclNvlsTuning`, `enqueue.cc` `calcCollChunking`): on
/// Hopper its 16 NVLS channels, a 128 KiB chunk, at most 64 KiB from 4 nodes; on
/// Blackwell NCCL's own multi-node tuning by NIC speed (32 channels on two nodes with
/// NICs of 48 GB/s or more, else 24 from 48 GB/s; the tree's chunk 64 KiB with the NIC
/// under the GPU's PCIe switch, as on the DGX and HGX boards), else 32 channels and
/// Hopper's chunks. Then the chunk shrinks for small sizes
/// (`chunk_bytes` in `src/algos/nvls_tree.rs`).
pub fn nvls_tree_call(x: &Inputs, bytes: u64) -> (u32, u64) {
    let heads = x.nvls_heads.max(1);
    let ppn = x.ranks / x.nodes.max(1);
    let (channels, max) = if x.arch.comp_cap() >= 100 {
        let nic = x.bw_inter;
        if x.nodes == 2 && nic >= 48.0 {
            let (chunk, tree) = if ppn <= 4 {
                (262144, 262144)
            } else if ppn >= 16 || (ppn <= 8 && nic < 96.0) {
                (131072, 65536)
            } else {
                (131072, 131072)
            };
            (32, Some((chunk, tree)))
        } else if nic >= 96.0 {
            if ppn <= 8 {
                (24, Some((262144, 262144)))
            } else {
                (32, Some((131072, if ppn < 32 { 131072 } else { 65536 })))
            }
        } else if nic >= 48.0 {
            (24, Some((131072, 65536)))
        } else {
            (32, None)
        }
    } else {
        (crate::algos::nvls_tree::DEFAULT_CHANNELS, None)
    };
    (channels as u32, crate::algos::nvls_tree::chunk_bytes(bytes, channels, heads, x.nodes, max))
}

/// Which GPUs of each node NCCL's tree talks to the other nodes through, as our
/// `nccl_tree`'s `pattern` parameter, where it is not the one-head `tree`. NCCL 2.8.4
/// (`init.cc`, `search.cc`) searches its tree with one head on one or two nodes and with
/// the balanced pattern on more, which on GPUs before Ampere it replaces by the split
/// pattern ("SPLIT_TREE works better on older archs", until 2.17): the parent node on
/// the chain's first GPU, the child nodes on its second. Later releases search the
/// balanced pattern on any number of nodes and generation; under 2.30.7's tuning this
/// keeps one head (not yet checked against a log there).
pub fn tree_pattern(x: &Inputs, algo: Algo) -> Option<&'static str> {
    if algo != Algo::Tree || x.nodes <= 2 || x.tuning != Tuning::V2_8 || x.ranks <= x.nodes {
        return None;
    }
    Some(if x.arch.comp_cap() < 80 { "split" } else { "balanced" })
}

/// `nccl_tree`'s `schedule` parameter where it is not `split`: NCCL 2.9 and earlier run
/// the tree's allreduce with Simple and LL on one set of threads per channel, every chunk
/// up and then every chunk down (`all_reduce.h`'s `#if 1` tree and `runTree` for LL, as
/// in 2.8.4 and 2.9.9); only LL128 splits the threads into an up and a down half
/// (`NCCL_LL128_SPLIT`). From 2.10 on Simple and LL run `runTreeSplit` too (save CUDA
/// 11.2-11.3 on Ampere and later, which we do not model).
pub fn tree_schedule(x: &Inputs, algo: Algo, proto: Proto) -> Option<&'static str> {
    (algo == Algo::Tree && x.tuning == Tuning::V2_8 && proto != Proto::Ll128).then_some("up_then_down")
}

/// The channels NCCL 2.8.4 runs one call of `bytes` on with `algo` and `proto`
/// (its `ncclTopoPostset` and `getAlgoInfo`), for `x.channels` channels found by its graph
/// search. Every ring and tree the search found is opened twice (`nChannels * 2`, at most
/// 32), and a call then gives up channels, one at a time, while each would carry less
/// than `threads x threshold` bytes (512 threads for LL and Simple, 640 for LL128;
/// a threshold of 8 bytes a thread for LL and LL128, LL's times P on the ring, 64 for
/// Simple); below one channel it halves its threads instead, which we do not model.
/// So a small call runs on one channel and a large one on twice the search's. Later
/// releases open and cut channels by other rules (`nccl_model` keeps `channels` there).
pub fn run_channels_28(x: &Inputs, algo: Algo, proto: Proto, bytes: u64) -> u32 {
    let threads: u64 = if proto == Proto::Ll128 { 640 } else { 512 };
    let threshold: u64 = match (proto, algo) {
        (Proto::Ll, Algo::Ring) => 8 * x.ranks as u64,
        (Proto::Ll | Proto::Ll128, _) => 8,
        (Proto::Simple, _) => 64,
    };
    let mut nc = (2 * x.channels.max(1)).min(32);
    while nc >= 2 && bytes < u64::from(nc) * threads * threshold {
        nc -= 1;
    }
    nc
}

/// The segments our `chain` runs NCCL's ring broadcast or reduce of `bytes` with `proto`
/// in: NCCL splits the buffer evenly over its channels and pipelines each part in chunks
/// of [`Proto::chunk_bytes`]; the channels share our one link and move their i-th chunks
/// together, so a segment is one chunk of every channel:
/// `ceil(bytes / (channels chunk))`, at least 1 and at most `elems` (our chain sends no
/// empty piece).
pub fn chain_segments(x: &Inputs, proto: Proto, bytes: u64, elems: u64) -> u64 {
    // Under 2.8 the call's channels, cut by its size as every collective's are.
    let channels = match x.tuning {
        Tuning::V2_8 => run_channels_28(x, Algo::Ring, proto, bytes),
        Tuning::V2_30 => x.channels,
    };
    let per_segment = u64::from(channels.max(1)) * proto.chunk_bytes();
    bytes.div_ceil(per_segment).clamp(1, elems.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::PerProto;

    const AR: Collective = Collective::Allreduce;

    fn flat(ranks: usize) -> Inputs {
        Inputs {
            ranks,
            nodes: ranks,
            bw_intra: 12.5,
            bw_inter: 12.5,
            channels: 2,
            arch: Arch::Hopper,
            avg: false,
            pcie: false,
            ll128: true,
            nvls: false,
            nvls_heads: 0,
            tuning: Tuning::V2_30,
            search: None,
        }
    }

    /// The ring's latency and bandwidth worked by hand from tuning.cc for 4 one-GPU
    /// nodes at 12.5 GB/s, Hopper, 2 channels.
    #[test]
    fn pcie_takes_the_pci_latencies_and_drops_ll128_unless_forced() {
        let nv = Inputs { nodes: 1, ..flat(4) };
        let pci = Inputs { pcie: true, ll128: false, ..nv };
        // Ring allreduce on one node: base + 2(P-1) hops of NCCL's PCI (5.7 us, Simple)
        // against NVLink (3.4 us) latency.
        assert!((lat_bw(&pci, AR, Algo::Ring, Proto::Simple).0 - (8.4 + 6.0 * 5.7)).abs() < 1e-9);
        assert!((lat_bw(&nv, AR, Algo::Ring, Proto::Simple).0 - (8.4 + 6.0 * 3.4)).abs() < 1e-9);
        assert_eq!(time(&pci, AR, Algo::Ring, Proto::Ll128, 1 << 20), None);
        assert!(time(&Inputs { ll128: true, ..pci }, AR, Algo::Ring, Proto::Ll128, 1 << 20).is_some());
        assert!(time(&nv, AR, Algo::Ring, Proto::Ll128, 1 << 20).is_some());
    }

    #[test]
    fn ring_by_hand() {
        let x = flat(4);
        // Simple: base 8.4; 6 steps, all between nodes (2 (4-1) = 6 inter steps), each
        // the tree's network latency 14 (one rank per node): 8.4 + 6 * 14 = 92.4.
        // Bandwidth 12.5 * 4 / 6.
        let (lat, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Simple);
        assert!((lat - 92.4).abs() < 1e-9, "{lat}");
        assert!((bw - 12.5 * 4.0 / 6.0).abs() < 1e-9);
        // LL: base 6.6 + 6 * 5.0; bus min(35.0, 12.5 * 0.5).
        let (lat, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Ll);
        assert!((lat - (6.6 + 30.0)).abs() < 1e-9, "{lat}");
        assert!((bw - 6.25 * 4.0 / 6.0).abs() < 1e-9);
        // Time at 1 MiB, Simple, plateau x1.4: (92.4 * 1.4 + 1048576 / (1000 * 8.333)) us.
        let t = time(&x, AR, Algo::Ring, Proto::Simple, 1 << 20).unwrap();
        let want = (92.4 * 1.4 + 1_048_576.0 / (1000.0 * 12.5 * 4.0 / 6.0)) * 1e-6;
        assert!((t / want - 1.0).abs() < 1e-12, "{t} {want}");
    }

    /// Tree: base + 2 log2(nodes) network hops; bandwidth 0.92 of the bus, halved.
    #[test]
    fn tree_by_hand() {
        let x = flat(8);
        let (lat, bw) = lat_bw(&x, AR, Algo::Tree, Proto::Simple);
        assert!((lat - (8.4 + 2.0 * 3.0 * 14.0)).abs() < 1e-9, "{lat}");
        assert!((bw - 12.5 * 0.92 * 0.5).abs() < 1e-9);
    }

    #[test]
    fn small_messages_pick_low_latency_large_pick_bandwidth() {
        let x = flat(16);
        let (_, p, _) = choice(&x, AR, 4096).unwrap();
        assert_eq!(p, Proto::Ll);
        // LL128 keeps 0.92 of the bus, Simple all of it: Simple once bandwidth rules.
        let (a, p, _) = choice(&x, AR, 256 << 20).unwrap();
        assert_eq!((a, p), (Algo::Ring, Proto::Simple));
        assert!(choice(&flat(1), AR, 4096).is_none());
    }

    /// Reduce-scatter and allgather by ring: P-1 steps, bandwidth P/(P-1) of the bus;
    /// PAT: base 8 + log2(nodes) 14/3.5 + 2.8 P, 0.75 of the bus, Simple only.
    #[test]
    fn ring_and_pat_by_hand() {
        let x = flat(8);
        for c in [Collective::ReduceScatter, Collective::Allgather] {
            // Ring Simple: 8.4 + 7 steps, all between nodes, of 14.
            let (lat, bw) = lat_bw(&x, c, Algo::Ring, Proto::Simple);
            assert!((lat - (8.4 + 7.0 * 14.0)).abs() < 1e-9, "{lat}");
            assert!((bw - 12.5 * 8.0 / 7.0).abs() < 1e-9);
            let (lat, bw) = lat_bw(&x, c, Algo::Pat, Proto::Simple);
            assert!((lat - (8.0 + 3.0 * 4.0 + 8.0 * 2.8)).abs() < 1e-9, "{lat}");
            assert!((bw - 12.5 * 0.75).abs() < 1e-9);
            assert_eq!(lat_bw(&x, c, Algo::Pat, Proto::Ll).1, 0.0);
            assert_eq!(lat_bw(&x, c, Algo::Tree, Proto::Simple).1, 0.0);
            // No plateau factor outside allreduce.
            let t = time(&x, c, Algo::Ring, Proto::Simple, 1 << 20).unwrap();
            assert!((t - (8.4 + 98.0 + 1_048_576.0 / (1000.0 * 12.5 * 8.0 / 7.0)) * 1e-6).abs() < 1e-15);
        }
        // PAT needs one rank per node; its reduce-scatter does not take avg.
        let two_per_node = Inputs { nodes: 4, ..x };
        assert!(time(&two_per_node, Collective::Allgather, Algo::Pat, Proto::Simple, 4096).is_none());
        let avg = Inputs { avg: true, ..x };
        assert!(time(&avg, Collective::ReduceScatter, Algo::Pat, Proto::Simple, 4096).is_none());
        assert!(time(&avg, Collective::Allgather, Algo::Pat, Proto::Simple, 4096).is_some());
        // PAT's latency grows by 2.8 us a rank, the ring LL's by 5: at 8 ranks the ring's
        // LL still wins 4 KiB (41.6 us + 0.57 against 42.4 + 0.44), at 16 PAT does; the
        // ring (all of the bus) wins large sizes.
        assert_eq!(choice(&x, Collective::Allgather, 4096).map(|c| (c.0, c.1)), Some((Algo::Ring, Proto::Ll)));
        let x = flat(16);
        assert_eq!(choice(&x, Collective::Allgather, 4096).map(|c| c.0), Some(Algo::Pat));
        assert_eq!(choice(&x, Collective::Allgather, 256 << 20).map(|c| (c.0, c.1)), Some((Algo::Ring, Proto::Simple)));
    }

    /// Broadcast and reduce: ring only, P steps (bandwidth the bus's), one hop's latency.
    #[test]
    fn broadcast_by_hand() {
        let x = flat(8);
        for c in [Collective::Broadcast, Collective::Reduce] {
            let (lat, bw) = lat_bw(&x, c, Algo::Ring, Proto::Simple);
            assert!((lat - (8.4 + 14.0)).abs() < 1e-9, "{lat}");
            assert!((bw - 12.5).abs() < 1e-9);
            let (lat, bw) = lat_bw(&x, c, Algo::Ring, Proto::Ll);
            assert!((lat - (6.6 + 2.7)).abs() < 1e-9, "{lat}");
            assert!((bw - 6.25).abs() < 1e-9);
            assert_eq!(algorithms(c), &[Algo::Ring]);
        }
        assert!(choice(&x, Collective::Barrier, 4096).is_none());
        // 64 MiB over 2 channels of 512 KiB chunks: 64 segments; small sizes one.
        assert_eq!(chain_segments(&x, Proto::Simple, 64 << 20, 16 << 20), 64);
        assert_eq!(chain_segments(&x, Proto::Simple, (1 << 20) + 1, 1 << 20), 2);
        assert_eq!(chain_segments(&x, Proto::Ll, 4096, 1024), 1);
        assert_eq!(chain_segments(&x, Proto::Ll, 1 << 20, 3), 3);
    }

    /// NCCL 2.8.4's model worked by hand for 4 nodes of 4 Volta GPUs (16 ranks), 2
    /// channels of 12 GB/s (ABCI's shape: one EDR NIC per channel).
    #[test]
    fn nccl_2_8_by_hand() {
        let x = Inputs {
            ranks: 16,
            nodes: 4,
            bw_intra: 24.0,
            bw_inter: 24.0,
            channels: 2,
            arch: Arch::Volta,
            avg: false,
            pcie: false,
            ll128: true,
            nvls: false,
            nvls_heads: 0,
            tuning: Tuning::V2_30,
            search: None,
        }
        .with_tuning(Tuning::V2_8);
        // Tree LL: 4.4 + 2 (3 NVLink hops of 0.52 x 1.8 + log2(4) = 2 network hops of 5.0);
        // bus min(24 x 0.92, 2 x 10) = 20, / 3.8 (under LL's cap 20.4), halved.
        let (lat, bw) = lat_bw(&x, AR, Algo::Tree, Proto::Ll);
        assert!((lat - (4.4 + 2.0 * (3.0 * 0.52 * 1.8 + 2.0 * 5.0))).abs() < 1e-9, "{lat}");
        assert!((bw - 20.0 / 3.8 / 2.0).abs() < 1e-9, "{bw}");
        // Ring LL: 3.6 + 24 NVLink steps of 0.47 x 1.8 + 6 network steps of 2.7; bus
        // min(20.4, 24 / 4) = 6, times 16 / 30.
        let (lat, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Ll);
        assert!((lat - (3.6 + 24.0 * 0.47 * 1.8 + 6.0 * 2.7)).abs() < 1e-9, "{lat}");
        assert!((bw - 6.0 * 16.0 / 30.0).abs() < 1e-9, "{bw}");
        // Ring Simple: 8.4 + 24 x 3.4 + 6 x 9.6 = 147.6; at 32 MiB past the plateau
        // (16 / 16 x 64 KiB) x 1.9, plus 32 MiB at 24 x 16/30 = 12.8 GB/s.
        let (lat, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Simple);
        assert!((lat - 147.6).abs() < 1e-9, "{lat}");
        assert!((bw - 12.8).abs() < 1e-9, "{bw}");
        let t = time(&x, AR, Algo::Ring, Proto::Simple, 32 << 20).unwrap();
        assert!((t - (147.6 * 1.9 + 33_554_432.0 / 12_800.0) * 1e-6).abs() < 1e-15, "{t}");
        // Tree Simple: no base, 2 (3 + 2) hops of 28 us; at 32 MiB the correction 0.7.
        let (lat, bw) = lat_bw(&x, AR, Algo::Tree, Proto::Simple);
        assert!((lat - 280.0).abs() < 1e-9 && (bw - 10.0).abs() < 1e-9, "{lat} {bw}");
        let t = time(&x, AR, Algo::Tree, Proto::Simple, 32 << 20).unwrap();
        assert!((t - (280.0 + 33_554_432.0 / 7_000.0) * 1e-6).abs() < 1e-15, "{t}");
        // Small sizes take the tree with LL (30.0 us against the ring's 40.1), 32 MiB the
        // ring with Simple; 2.30.7's model at the same inputs charges the tree more.
        assert_eq!(choice(&x, AR, 4).map(|c| (c.0, c.1)), Some((Algo::Tree, Proto::Ll)));
        assert_eq!(choice(&x, AR, 32 << 20).map(|c| (c.0, c.1)), Some((Algo::Ring, Proto::Simple)));
        let new = Inputs { tuning: Tuning::V2_30, ..x };
        assert!(time(&new, AR, Algo::Tree, Proto::Ll, 4).unwrap() > time(&x, AR, Algo::Tree, Proto::Ll, 4).unwrap());
        // No PAT, no NVLS, and no LL128 on Hopper before 2.10.
        assert!(!Inputs { nodes: 16, ..x }.pat_enabled());
        let hopper = Inputs { arch: Arch::Hopper, ll128: true, nvls: true, ..new }.with_tuning(Tuning::V2_8);
        assert!(!hopper.ll128 && !hopper.nvls);
        assert_eq!(time(&hopper, AR, Algo::Ring, Proto::Ll128, 1 << 20), None);
    }

    /// A cluster of `nodes` nodes of 4 GPUs, every pair joined by 2 NVLinks, with
    /// `nics` NICs of `nic` a node (ABCI's node with 2 EDR NICs of 100 Gb/s).
    fn nvlink_cluster(ranks: usize, nics: usize, nic_bytes_per_s: f64) -> Box<dyn Topology> {
        // Built without the scenario parser: the selectors sit below `scenario`.
        use crate::topology::{Cluster, ClusterSpec, InterSpec, IntraKind};
        let intra = (IntraKind::Nvlink, PerProto::all(1e-6), 25e9);
        let inter = InterSpec::new(PerProto::all(5e-6), nic_bytes_per_s);
        let mut spec = ClusterSpec::on_rails(ranks.div_ceil(4), 4, nics, intra, inter, PerProto::all(0.0));
        spec.intra.links = vec![[0, 1, 2], [0, 2, 2], [0, 3, 2], [1, 2, 2], [1, 3, 2], [2, 3, 2]];
        Box::new(Cluster::new(&spec, ranks).unwrap())
    }

    fn graph(channels: u32, speed_intra: f64, speed_inter: f64) -> Graph28 {
        Graph28 { channels, speed_intra, speed_inter }
    }

    /// NCCL 2.8's search on ABCI's node, by hand from search.cc. Across nodes: a
    /// 12.5 GB/s NIC starts at speed 12 (the fastest of NCCL's speeds not above it), one
    /// channel a NIC; 10, 9 and 7 hold one too (less in all), 6 holds two (24, not more
    /// than 24: the faster kept), 5 is under 0.49 of 12: 2 channels of 12. The tree then
    /// raises its speed inside the node 15, 18, 21, 24 (below twice 12, and an NVLink pair
    /// of 2 x 21 GB/s carries it). On one node: at 42 GB/s a pair's bundle carries one
    /// ring (2 rings: 84), at 30 and 24 one (60, 48), at 21 two, and the 6 rings over
    /// the doubled 4-GPU mesh reach a GPU's 6 x 21 = 126: 6 channels of 21.
    #[test]
    fn search_28_by_hand() {
        for ranks in [8, 16, 32, 128] {
            let found = search_28(nvlink_cluster(ranks, 2, 12.5e9).as_ref()).unwrap();
            assert_eq!(found.ring, graph(2, 12.0, 12.0), "{ranks}");
            assert_eq!(found.tree, graph(2, 24.0, 12.0), "{ranks}");
        }
        let one = search_28(nvlink_cluster(4, 2, 12.5e9).as_ref()).unwrap();
        assert_eq!((one.ring, one.tree), (graph(6, 21.0, 21.0), graph(6, 21.0, 21.0)));
        // A 20 GB/s NIC: 18, 15 and 12 hold one channel, 10 two (20 > 18: kept); 9, 7
        // and 6 hold less in all, 5 four (20, not more), 4 is under 0.49 of 10.
        let found = search_28(nvlink_cluster(8, 1, 20e9).as_ref()).unwrap();
        assert_eq!(found.ring, graph(2, 10.0, 10.0));
        // Its tree rises to 21: 18 is still below twice 10.
        assert_eq!(found.tree, graph(2, 21.0, 10.0));
        // One node of 8 GPUs on an NVSwitch, 300 GB/s each: 42 holds 7 channels (294),
        // 30 holds 10 (300, a GPU's whole link: the search stops); at 25 or more NCCL
        // opens twice the channels, at most 16, at 30 / ceil(16 / 10) = 15 each.
        let spec = crate::topology::ClusterSpec::on_rails(
            1,
            8,
            8,
            (crate::topology::IntraKind::Nvswitch, PerProto::all(1e-6), 300e9),
            crate::topology::InterSpec::new(PerProto::all(5e-6), 50e9),
            PerProto::all(0.0),
        );
        let node = crate::topology::Cluster::new(&spec, 8).unwrap();
        let found = search_28(&node).unwrap();
        assert_eq!((found.ring, found.tree), (graph(16, 15.0, 15.0), graph(16, 15.0, 15.0)));
    }

    /// NCCL 2.8.4's picks on ABCI's nodes, from its search's graphs, by hand. 8 nodes
    /// (32 ranks), bus 2 x 12 = 24 GB/s for both. At 512 KiB: the tree with LL128,
    /// latency 4.4 + 2 (3 x 1.25 + 3 x 8.5) = 62.9 us, bandwidth
    /// min(24 x 0.92, 2 x 10) x 0.915 / 2 = 9.15 GB/s corrected by 0.5: 177.5 us; the
    /// ring with LL128, latency 10 + 48 x 1.9 + 14 x 4 = 157.2 us, bandwidth
    /// 24 x 0.92 x 32/62 = 11.40 GB/s: 203.2 us; with LL, latency
    /// 3.6 + 48 x 0.846 + 14 x 2.7 = 82.0 us, bandwidth 6 x 32/62: 251.3 us. At 1 MiB
    /// the tree's correction is 0.6 (253.9 us) and the ring with LL128 wins (249.2 us).
    /// One node: the ring's bus is 6 x 21 = 126 GB/s: LL 21 GB/s, LL128
    /// min(115.9, 6 x 16.9) x 4/6 = 67.6, Simple 84; LL to 256 KiB (18.9 us against
    /// LL128's 25.3), LL128 at 512 KiB and 2 MiB (29.2 and 52.4 us against LL's 31.4 and
    /// Simple's 53.8), Simple at 4 MiB (78.7 against 83.4).
    #[test]
    fn abci_picks_by_hand() {
        let at = |ranks: usize| {
            let topo = nvlink_cluster(ranks, 2, 12.5e9);
            Inputs::of(topo.as_ref(), 2, Arch::Volta).with_tuning(Tuning::V2_8).searched(topo.as_ref())
        };
        let pick = |x: &Inputs, bytes: u64| choice(x, AR, bytes).map(|(a, p, _)| (a, p));
        let x = at(32);
        assert_eq!((x.channels, x.bw_intra, x.bw_inter), (2, 24.0, 24.0));
        let t = time(&x, AR, Algo::Tree, Proto::Ll128, 512 << 10).unwrap();
        assert!((t - (62.9 + 524_288.0 / (1000.0 * 9.15 * 0.5)) * 1e-6).abs() < 1e-12, "{t}");
        let (lat, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Ll128);
        assert!((lat - 157.2).abs() < 1e-9 && (bw - 22.08 * 32.0 / 62.0).abs() < 1e-9, "{lat} {bw}");
        assert_eq!(pick(&x, 256 << 10), Some((Algo::Tree, Proto::Ll128)));
        assert_eq!(pick(&x, 512 << 10), Some((Algo::Tree, Proto::Ll128)));
        assert_eq!(pick(&x, 1 << 20), Some((Algo::Ring, Proto::Ll128)));
        let x = at(4);
        assert_eq!((x.channels, x.bw_intra), (6, 126.0));
        let (_, bw) = lat_bw(&x, AR, Algo::Ring, Proto::Ll128);
        assert!((bw - 101.4 * 4.0 / 6.0).abs() < 1e-9, "{bw}");
        for (bytes, proto) in
            [(256 << 10, Proto::Ll), (512 << 10, Proto::Ll128), (2 << 20, Proto::Ll128), (4 << 20, Proto::Simple)]
        {
            assert_eq!(pick(&x, bytes), Some((Algo::Ring, proto)), "{bytes}");
        }
        // On two nodes the model reads the speed inside a node: the ring's 2 x 12, the
        // tree's 2 x 24 (capped per channel at 18.5: 2 x 18.5 x 0.915 / 2 with LL128).
        let x = at(8);
        let (_, bw) = lat_bw(&x, AR, Algo::Tree, Proto::Ll128);
        assert!((bw - 16.9).abs() < 1e-9, "{bw}");
        // The later tuning is not searched.
        let topo = nvlink_cluster(32, 2, 12.5e9);
        let new = Inputs::of(topo.as_ref(), 2, Arch::Volta).searched(topo.as_ref());
        assert!(new.search.is_none());
    }

    /// ABCI's NICs on the CPUs' own lanes (`nic_path: phb`): NCCL's graphs find the
    /// GPU-NIC path through the CPU (`typeInter` PHB), and 2.8.4's `protoEnable` keeps
    /// LL128 off for both graphs across nodes; one node drops its NICs and keeps LL128.
    /// The 8-node picks of `abci_picks_by_hand` then fall to LL and Simple: at 512 KiB
    /// the ring with LL, 251.3 us, against the ring with Simple (latency 8.4 + 48 x 3.4
    /// + 14 x 9.6 = 306 us before its bytes) and the tree with Simple (latency 2 (3 x 28
    /// + 3 x 28) = 336 us). Later tunings apply the same rule.
    #[test]
    fn nic_through_the_cpu_turns_ll128_off_across_nodes() {
        use crate::topology::{Cluster, ClusterSpec, InterSpec, IntraKind, NicPath};
        let at = |ranks: usize, path: NicPath| {
            let intra = (IntraKind::Nvlink, PerProto::all(1e-6), 25e9);
            let inter = InterSpec { nic_path: path, ..InterSpec::new(PerProto::all(5e-6), 12.5e9) };
            let mut spec = ClusterSpec::on_rails(ranks.div_ceil(4), 4, 2, intra, inter, PerProto::all(0.0));
            spec.intra.links = vec![[0, 1, 2], [0, 2, 2], [0, 3, 2], [1, 2, 2], [1, 3, 2], [2, 3, 2]];
            let topo = Cluster::new(&spec, ranks).unwrap();
            Inputs::of(&topo, 2, Arch::Volta).with_tuning(Tuning::V2_8).searched(&topo)
        };
        let pick = |x: &Inputs, bytes: u64| choice(x, AR, bytes).map(|(a, p, _)| (a, p));
        for path in [NicPath::Pix, NicPath::Pxb] {
            assert!(at(32, path).ll128, "{path:?}");
        }
        for path in [NicPath::Phb, NicPath::Sys] {
            let x = at(32, path);
            assert!(!x.ll128, "{path:?}");
            assert_eq!(time(&x, AR, Algo::Ring, Proto::Ll128, 1 << 20), None);
            assert_eq!(time(&x, AR, Algo::Tree, Proto::Ll128, 1 << 20), None);
            assert_eq!(pick(&x, 512 << 10), Some((Algo::Ring, Proto::Ll)), "{path:?}");
            let (lat, _) = lat_bw(&x, AR, Algo::Tree, Proto::Simple);
            assert!((lat - 336.0).abs() < 1e-9, "{lat}");
            // One node: no NIC in NCCL's graphs, LL128 as over NVLink.
            let one = at(4, path);
            assert!(one.ll128);
            assert_eq!(pick(&one, 512 << 10), Some((Algo::Ring, Proto::Ll128)));
        }
        // NCCL 2.30's rule is the same for a path through the CPU (PXN, its Hopper
        // allowance, is closer than PHB).
        let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 450e9);
        let inter = InterSpec { nic_path: NicPath::Phb, ..InterSpec::new(PerProto::all(5e-6), 50e9) };
        let spec = ClusterSpec::on_rails(2, 4, 4, intra, inter, PerProto::all(0.0));
        let x = Inputs::of(&Cluster::new(&spec, 8).unwrap(), 2, Arch::Hopper);
        assert!(!x.ll128);
    }

    #[test]
    fn versions_map_to_their_tuning() {
        for (v, t) in [
            ("2.8.4", Some(Tuning::V2_8)),
            ("2.9", Some(Tuning::V2_8)),
            ("2.7.8-1", Some(Tuning::V2_8)),
            ("2.10.3", Some(Tuning::V2_30)),
            ("2.26.2+cuda12.2", Some(Tuning::V2_30)),
            ("3.0", Some(Tuning::V2_30)),
            ("2", None),
            ("two", None),
        ] {
            assert_eq!(Tuning::of_version(v), t, "{v}");
        }
        // A scenario's version is read whole.
        for (v, t) in [
            ("2.19.3", Some(Tuning::V2_30)),
            ("2.19.3-1", Some(Tuning::V2_30)),
            ("2.26.2+cuda12.2", Some(Tuning::V2_30)),
            ("2.8.4", Some(Tuning::V2_8)),
            ("2.10", Some(Tuning::V2_30)),
            ("2.19.x", None),
            ("2.19.3 ", None),
            ("02.019.003", None),
            ("2..3", None),
            ("2.19.3-", None),
            ("2.19.3+x", None),
            ("0.9.1", None),
            ("2.19.3.4", None),
        ] {
            assert_eq!(Tuning::of_release(v), t, "{v}");
        }
    }

    /// NCCL 2.8.4's `getAlgoInfo` cuts the channels of every collective's call (each
    /// one's `computeColl` calls it), not only an allreduce's: reduce-scatter and
    /// allgather as the allreduce, and the ring broadcast's and reduce's segments follow
    /// the channels of the call. 2.30's model keeps the searched channels.
    #[test]
    fn under_2_8_every_collective_cuts_its_channels() {
        let x = Inputs { nodes: 2, ..flat(8) }.with_tuning(Tuning::V2_8);
        for c in [Collective::Allreduce, Collective::ReduceScatter, Collective::Allgather] {
            assert_eq!(call_params(&x, c, Algo::Ring, Proto::Simple, 4096).0, 1, "{c}");
            assert_eq!(call_params(&x, c, Algo::Ring, Proto::Simple, 1 << 30).0, 4, "{c}");
            let new = Inputs { tuning: Tuning::V2_30, ..x };
            assert_eq!(call_params(&new, c, Algo::Ring, Proto::Simple, 4096).0, 2, "{c}");
        }
        // 64 MiB: 4 channels of 512 KiB chunks a segment under 2.8, 2 under 2.30.
        assert_eq!(chain_segments(&x, Proto::Simple, 64 << 20, 16 << 20), 32);
        assert_eq!(chain_segments(&Inputs { tuning: Tuning::V2_30, ..x }, Proto::Simple, 64 << 20, 16 << 20), 64);
    }

    /// NCCL 2.8.4's channels per call by hand, for 2 searched channels (4 opened): the
    /// ring's LL threshold is 8 bytes a thread times P, its 512 threads a channel.
    #[test]
    fn channels_per_call_by_hand() {
        let x = Inputs { nodes: 2, ..flat(8) }.with_tuning(Tuning::V2_8);
        // LL ring at P = 8: 512 x 64 = 32 KiB a channel.
        for (bytes, nc) in [(4, 1), (32_767, 1), (65_536, 2), (98_304, 3), (131_071, 3), (131_072, 4), (1 << 30, 4)] {
            assert_eq!(run_channels_28(&x, Algo::Ring, Proto::Ll, bytes), nc, "{bytes}");
        }
        // LL tree: 512 x 8 = 4 KiB; LL128: 640 x 8 = 5 KiB; Simple: 512 x 64 = 32 KiB.
        assert_eq!(run_channels_28(&x, Algo::Tree, Proto::Ll, 12_288), 3);
        assert_eq!(run_channels_28(&x, Algo::Tree, Proto::Ll, 16_384), 4);
        assert_eq!(run_channels_28(&x, Algo::Ring, Proto::Ll128, 15_360), 3);
        assert_eq!(run_channels_28(&x, Algo::Ring, Proto::Simple, 65_536), 2);
        // At most 32 opened; never fewer than one.
        assert_eq!(run_channels_28(&Inputs { channels: 24, ..x }, Algo::Ring, Proto::Simple, 1 << 40), 32);
        assert_eq!(run_channels_28(&Inputs { channels: 0, ..x }, Algo::Ring, Proto::Simple, 0), 1);
    }

    /// The tree's chunk halved by hand: 16 ranks on 4 nodes (depth 3 + 2 = 5), 2 channels.
    #[test]
    fn tree_chunks_by_hand() {
        let later = Inputs { nodes: 4, ..flat(16) };
        // From 2.20 on the Simple step is kept at every size; LL128 is still halved.
        for bytes in [1 << 16, 1 << 20, 1 << 30] {
            assert_eq!(tree_chunk(&later, Proto::Simple, bytes), Some(524_288));
        }
        assert_eq!(tree_chunk(&later, Proto::Ll128, 1 << 20), Some(19_200 / 128 * 120));
        let x = later.with_tuning(Tuning::V2_8);
        // Simple, 1 MiB: 1 chunk of 512 KiB a channel < 40 -> 256 KiB (2) -> 128 KiB (4,
        // at the 128 KiB floor); < 20 -> 64 KiB (8, floor); < 5? 8 is not: 64 KiB.
        assert_eq!(tree_chunk(&x, Proto::Simple, 1 << 20), Some(65_536));
        // 1 GiB: 1024 chunks a channel, no halving.
        assert_eq!(tree_chunk(&x, Proto::Simple, 1 << 30), Some(524_288));
        // LL128, 1 MiB: steps 1 + 2 + 0.4 = 3.4, ppn 4: halve while < 54.4 above 128 KiB
        // (614400 -> 307200 -> 153600 -> 76800), then while < 13.6 above 32 KiB:
        // 1048576 / (2 x 76800) = 6 -> 38400 (13) -> 19200; data 19200 / 128 x 120.
        assert_eq!(tree_chunk(&x, Proto::Ll128, 1 << 20), Some(19_200 / 128 * 120));
        assert_eq!(tree_chunk(&x, Proto::Ll, 1 << 20), None);
    }
}
