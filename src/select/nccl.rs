//! NCCL's tuning model for its ring and tree algorithms, as NCCL 2.30.7 evaluates it
//! (`src/graph/tuning.cc`: `ncclTopoTuneModel` and `ncclTopoGetAlgoTime`).
//!
//! NCCL predicts each (algorithm, protocol) pair's time as `latency + bytes / bandwidth`
//! and runs the pair with the smallest. The latency is a base per pair plus a hardware
//! latency per hop (NVLink, PCI or network); the bandwidth is the bus bandwidth of the
//! channels NCCL found, cut by per-protocol efficiencies and caps, and turned into an
//! algorithm bandwidth. The constants below are NCCL's defaults (its
//! `ncclTunerConstantsDefaults` and `treeCorrectionFactor`), facts; the code is ours and
//! keeps only ring and tree (NVLS, CollNet and PAT need hardware we do not model).
//!
//! What we feed it from a scenario ([`Inputs::of`]): the ranks; the nodes (the innermost
//! groups of a hierarchical machine, else one rank per node, as on a cluster of
//! one-GPU hosts); the bus bandwidth, from the links (the innermost level's on two nodes
//! or fewer, else the outermost's; on other machines the fastest link); the GPU
//! generation and channel count from the selector's parameters. Fixed as on a common
//! system: an x86 Intel host (1 us network overhead per step), NVLink inside a node,
//! a balanced tree, LL128 enabled, the network plugin reporting no extra latency, one
//! operation per launch.

use crate::topology::Topology;

/// The NCCL release whose model and constants these are.
pub const VERSION: &str = "2.30.7";

/// NCCL's algorithms we model, in NCCL's order (`NCCL_ALGO_TREE` 0, `NCCL_ALGO_RING` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Tree (a double binary tree across nodes, a chain inside one).
    Tree,
    /// Ring.
    Ring,
}

/// NCCL's protocols, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Low latency: 8-byte stores with a flag, half the bandwidth.
    Ll,
    /// Low latency over 128-byte lines.
    Ll128,
    /// Plain copies with a flag per chunk.
    Simple,
}

impl Algo {
    /// NCCL's name (as in its tuner plugin's CSV).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Tree => "tree",
            Algo::Ring => "ring",
        }
    }
    /// Our algorithm that runs it.
    pub fn ours(self) -> &'static str {
        match self {
            Algo::Tree => "double_binary_tree",
            Algo::Ring => "ring",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

impl Proto {
    /// Every protocol, in NCCL's order.
    pub const ALL: [Proto; 3] = [Proto::Ll, Proto::Ll128, Proto::Simple];
    /// NCCL's name (as in its tuner plugin's CSV).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Ll => "ll",
            Proto::Ll128 => "ll128",
            Proto::Simple => "simple",
        }
    }
    fn index(self) -> usize {
        self as usize
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
const HW_LAT_NET: [[f64; 3]; 2] = [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]];
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
}

impl Inputs {
    /// The inputs for `topo` (see the module's description).
    pub fn of(topo: &dyn Topology, channels: u32, arch: Arch) -> Inputs {
        let ranks = topo.ranks();
        let gbps = |b: f64| b / 1e9;
        match topo.levels().filter(|l| l.len() >= 2) {
            Some(levels) => {
                let per_node = levels[0].0.max(1);
                Inputs {
                    ranks,
                    nodes: ranks.div_ceil(per_node).max(1),
                    bw_intra: gbps(levels[0].1.bandwidth),
                    bw_inter: gbps(levels[levels.len() - 1].1.bandwidth),
                    channels,
                    arch,
                }
            }
            None => {
                let (best, _) = topo.best_link();
                let bw = gbps(best.bandwidth);
                Inputs { ranks, nodes: ranks.max(1), bw_intra: bw, bw_inter: bw, channels, arch }
            }
        }
    }
}

/// NCCL's latency (us) and algorithm bandwidth (GB/s) for an allreduce by `algo` with
/// `proto` (`ncclTopoTuneModel`); bandwidth 0 where NCCL would not use the pair.
pub fn allreduce_lat_bw(x: &Inputs, algo: Algo, proto: Proto) -> (f64, f64) {
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
    if algo == Algo::Tree {
        bus = (bus * 0.92).min(nch * PER_CH_MAX_TREE_BWS[cc][index2]);
    }
    if algo == Algo::Tree && proto == Proto::Ll {
        bus = (bus / 3.8).min(LL_MAX_BWS[index1][index2]);
    }
    if algo == Algo::Tree && proto == Proto::Ll128 {
        let eff = if x.nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
        bus = (bus * eff).min(nch * PER_CH_MAX_TREE_LL128_BWS[cc][index2]);
    }
    // Bus bandwidth to algorithm bandwidth.
    let nsteps = 2.0 * (n_ranks - 1.0);
    let bw = match algo {
        Algo::Ring => bus * n_ranks / nsteps,
        Algo::Tree => bus * 0.5,
    };
    let ppn = n_ranks / n_nodes;
    let hw = |table: &[[f64; 3]; 2], a: usize| table[a][p];
    let mut intra_lat = hw(&HW_LAT_NVLINK, a);
    // With one rank per node NCCL charges the tree's network latency to both.
    let inter_lat = if ppn == 1.0 { hw(&HW_LAT_NET, 0) } else { hw(&HW_LAT_NET, a) };
    let mut lat = BASE_LAT[a][p];
    match algo {
        Algo::Ring => {
            if x.nodes > 1 {
                let overhead = if proto == Proto::Simple { 3.0 * NET_OVERHEAD_US } else { NET_OVERHEAD_US };
                intra_lat = intra_lat.max(overhead);
            }
            let inter_steps = if x.nodes == 1 { 0.0 } else { 2.0 * (n_nodes - 1.0) };
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
        }
        Algo::Tree => {
            lat += 2.0 * ((ppn - 1.0) * intra_lat + f64::from(log2i(x.nodes as u64)) * inter_lat);
        }
    }
    (lat, bw)
}

/// NCCL's predicted time in seconds for an allreduce of `bytes` by `algo` with `proto`
/// (`ncclTopoGetAlgoTime`, one operation); `None` where NCCL would not use the pair.
pub fn allreduce_time(x: &Inputs, algo: Algo, proto: Proto, bytes: u64) -> Option<f64> {
    if x.ranks <= 1 {
        return None;
    }
    let (mut lat, mut bw) = allreduce_lat_bw(x, algo, proto);
    if bw <= 0.0 || !bw.is_finite() {
        return None;
    }
    let log_size = log2i(bytes >> 6);
    if algo == Algo::Tree && (0..23).contains(&log_size) {
        bw *= TREE_CORRECTION[proto.index()][log_size as usize];
    }
    // The ring's plateau across nodes: its latency grows once each rank's share of
    // every channel reaches 64 bytes.
    if algo == Algo::Ring
        && proto == Proto::Simple
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

/// NCCL's choice for an allreduce of `bytes`: the (algorithm, protocol) of smallest
/// predicted time, ties to the first in NCCL's order (tree before ring, LL before
/// LL128 before Simple), with that time.
pub fn allreduce_choice(x: &Inputs, bytes: u64) -> Option<(Algo, Proto, f64)> {
    let mut best: Option<(Algo, Proto, f64)> = None;
    for algo in [Algo::Tree, Algo::Ring] {
        for proto in Proto::ALL {
            if let Some(t) = allreduce_time(x, algo, proto, bytes)
                && best.is_none_or(|(_, _, b)| t < b)
            {
                best = Some((algo, proto, t));
            }
        }
    }
    best
}

/// The protocol NCCL's model ranks first for `algo` at `bytes`, with its time.
pub fn best_protocol(x: &Inputs, algo: Algo, bytes: u64) -> Option<(Proto, f64)> {
    let mut best: Option<(Proto, f64)> = None;
    for proto in Proto::ALL {
        if let Some(t) = allreduce_time(x, algo, proto, bytes)
            && best.is_none_or(|(_, b)| t < b)
        {
            best = Some((proto, t));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(ranks: usize) -> Inputs {
        Inputs { ranks, nodes: ranks, bw_intra: 12.5, bw_inter: 12.5, channels: 2, arch: Arch::Hopper }
    }

    /// The ring's latency and bandwidth worked by hand from tuning.cc for 4 one-GPU
    /// nodes at 12.5 GB/s, Hopper, 2 channels.
    #[test]
    fn ring_by_hand() {
        let x = flat(4);
        // Simple: base 8.4; 6 steps, all between nodes (2 (4-1) = 6 inter steps), each
        // the tree's network latency 14 (one rank per node): 8.4 + 6 * 14 = 92.4.
        // Bandwidth 12.5 * 4 / 6.
        let (lat, bw) = allreduce_lat_bw(&x, Algo::Ring, Proto::Simple);
        assert!((lat - 92.4).abs() < 1e-9, "{lat}");
        assert!((bw - 12.5 * 4.0 / 6.0).abs() < 1e-9);
        // LL: base 6.6 + 6 * 5.0; bus min(35.0, 12.5 * 0.5).
        let (lat, bw) = allreduce_lat_bw(&x, Algo::Ring, Proto::Ll);
        assert!((lat - (6.6 + 30.0)).abs() < 1e-9, "{lat}");
        assert!((bw - 6.25 * 4.0 / 6.0).abs() < 1e-9);
        // Time at 1 MiB, Simple, plateau x1.4: (92.4 * 1.4 + 1048576 / (1000 * 8.333)) us.
        let t = allreduce_time(&x, Algo::Ring, Proto::Simple, 1 << 20).unwrap();
        let want = (92.4 * 1.4 + 1_048_576.0 / (1000.0 * 12.5 * 4.0 / 6.0)) * 1e-6;
        assert!((t / want - 1.0).abs() < 1e-12, "{t} {want}");
    }

    /// Tree: base + 2 log2(nodes) network hops; bandwidth 0.92 of the bus, halved.
    #[test]
    fn tree_by_hand() {
        let x = flat(8);
        let (lat, bw) = allreduce_lat_bw(&x, Algo::Tree, Proto::Simple);
        assert!((lat - (8.4 + 2.0 * 3.0 * 14.0)).abs() < 1e-9, "{lat}");
        assert!((bw - 12.5 * 0.92 * 0.5).abs() < 1e-9);
    }

    #[test]
    fn small_messages_pick_low_latency_large_pick_bandwidth() {
        let x = flat(16);
        let (_, p, _) = allreduce_choice(&x, 4096).unwrap();
        assert_eq!(p, Proto::Ll);
        // LL128 keeps 0.92 of the bus, Simple all of it: Simple once bandwidth rules.
        let (a, p, _) = allreduce_choice(&x, 256 << 20).unwrap();
        assert_eq!((a, p), (Algo::Ring, Proto::Simple));
        assert!(allreduce_choice(&flat(1), 4096).is_none());
    }
}
