//! NCCL's tree allreduce as NCCL runs it (docs/nccl.md): a chain through the GPUs of
//! each node, a double binary tree across nodes, every channel's part pipelined in
//! chunks, reduced up and broadcast down at once.
//!
//! **The trees.** Across nodes, NCCL's `ncclGetDtree`: tree 0 is the in-order bit tree
//! on the nodes (`ncclGetBtree`, rooted at node 0 with one child), tree 1 its mirror
//! (node i in tree 0's place N-1-i) for an even number of nodes, or tree 0 shifted by
//! one node for an odd number. Inside a node the GPUs form a chain whose first GPU, the
//! head, is the one that talks to the parent and child nodes (their heads): GPU i of
//! the chain has GPU i-1 as parent and GPU i+1 as child, the head has the head of its
//! parent node as parent. NCCL searches `channels / 2` chains and runs each twice, once
//! on each tree; here channel k < ceil(c/2) takes tree 0 and chain k, the others tree 1
//! and the chains again. Chain j starts at GPU j mod g, or, across nodes whose K NICs
//! are shared by `b = g/K` GPUs each, on NIC `j mod K`'s block (NCCL's search lays each
//! chain from a NIC and a NIC one chain fills sends the next chain to the next NIC). So
//! each channel's cross-node messages leave and enter a node through its own GPU, the
//! chains share the NICs out, and the two trees share the load of the ranks interior in
//! one of them.
//!
//! **The pipeline** (NCCL's `runTreeSplit`): channel k's part is cut into chunks of
//! `chunk` bytes (NCCL's step: 512 KiB with Simple, 32 KiB with LL, 576000 B with
//! LL128). Every rank runs two streams per channel at once: up, for each chunk, adding
//! what its children send into it and passing the sum to its parent; down, for each
//! chunk, taking the result from its parent and passing it to its children. The root
//! adds its children's and sends the result straight down. A stream keeps at most
//! NCCL's 8 FIFO slots of chunks undelivered per peer, so a leaf does not flood its
//! parent's port ahead of the parent's other children.
//!
//! **Up, then down** (`schedule=up_then_down`: NCCL 2.9 and earlier with Simple and LL,
//! their `all_reduce.h`'s `#if 1` tree and its LL twin): one stream per rank and channel
//! runs the whole way up (every chunk of the channel's part) and only then the whole way
//! down, so no link carries both directions of a channel at once and a rank's first chunk
//! down leaves only after its last chunk up. The root's last addition starts the way down.

use super::double_binary_tree::nccl_btree;
use super::nccl_ring::{check_nodes, gpus_per_node, nccl_label, protocol, run_protocol};
use super::{AlgoInfo, Algorithm, Blocks, Machine, Problem, Topology};
use crate::sim::op::{Action, Op, Program, Rank, Region, per_step};
use crate::topology::Proto;

/// NCCL's `NCCL_STEPS`: FIFO slots per peer, a chunk each.
const FIFO: u32 = 8;

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "nccl_tree",
    summary: "NCCL's tree: a chain through each node's GPUs, a double binary tree across nodes (half the channels \
              on each), chunks reduced up and broadcast down at once",
    source: "NCCL src/graph/trees.cc ncclGetBtree/ncclGetDtree, connect.cc connectTrees (the trees, channels); \
             src/device/all_reduce.h runTreeSplit (the pipeline); src/enqueue.cc (chunk sizes); docs/nccl.md",
    requires: "any P >= 1 that is whole nodes of gpus_per_node; any n",
    closed_form: "the recurrence of every channel's chunks, up from the leaves (add the children's, send to the \
                  parent, at most 7 undelivered) and down from the root (pass on to the children), each message \
                  booked on its stream's queue at the interfaces it takes (nccl_streams.rs); exact (C = 0 with \
                  several channels) where no interface side carries more of the up and down streams than it has \
                  ports and no message waits for a port its stream shares; bounds otherwise (a head's NIC then \
                  serves its parent and children in the engine's order; docs/nccl.md)",
    params: &[
        "protocol=simple: NCCL protocol (simple, ll, ll128): sets the chunk (512 KiB, 32 KiB, 576000 B)",
        "channels=2: channels; the first half run on tree 0, the rest on tree 1",
        "chunk=protocol's: bytes per chunk, overriding the protocol's",
        "gpus_per_node=machine's: GPUs per node (default: the cluster's, a hierarchy's innermost group, else 1)",
        "pattern=tree: which GPUs of a node talk to the other nodes: tree (the chain's first GPU, to parent and \
         children), split (the first to the parent, the second to the children: NCCL's pattern on GPUs before \
         Ampere until 2.17), balanced (the first to the parent and one child, the second to the other child)",
        "schedule=split: split (up and down streams at once: NCCL's runTreeSplit, 2.10 on, and LL128 in every \
         release), up_then_down (every chunk up, then every chunk down, on one stream: NCCL 2.9 and earlier with \
         Simple and LL)",
    ],
    build: |params| Ok(Box::new(NcclTree::from_params(params)?)),
};

/// What `explain nccl_tree` prints above the schedule: each channel's tree (every
/// rank's parent, `-` at the root), its part and chunks.
pub(crate) fn describe(params: &[(String, crate::units::ParamValue)], p: &Problem, topo: &dyn Topology) -> String {
    let Ok(algo) = NcclTree::from_params(&mut super::Params::new(params.to_vec())) else { return String::new() };
    let g = gpus_per_node(algo.gpus_per_node, topo);
    if p.ranks == 0 || !p.ranks.is_multiple_of(g) {
        return String::new();
    }
    let plan = algo.plan(p, topo);
    let mut out = format!(
        "{g} GPU(s) per node, chains inside nodes, double binary tree across; chunk {} B; FIFO of {FIFO} chunks per peer\n",
        plan.chunk_elems * p.elem_bytes.max(1)
    );
    for k in 0..plan.channels {
        let parents: Vec<String> =
            (0..p.ranks).map(|r| plan.place(k, r).parent.map_or_else(|| "-".to_string(), |q| q.to_string())).collect();
        let part = plan.part(k);
        out.push_str(&format!(
            "channel {k} (tree {}): parent of rank 0.. = {}; elements [{}, {}) in {} chunk(s), {}\n",
            usize::from(k >= plan.channels.div_ceil(2)),
            parents.join(" "),
            part.offset,
            part.end(),
            plan.chunks(k),
            match plan.schedule {
                TreeSchedule::Split => "up and down at once",
                TreeSchedule::UpThenDown => "all up, then all down",
            }
        ));
    }
    out
}

/// Which GPUs of a node talk to the other nodes (NCCL's tree graph patterns, `graph.h`;
/// `connect.cc` `ncclTopoPreset` places the parent and the two child nodes on the chain's
/// first or second GPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreePattern {
    /// `NCCL_TOPO_PATTERN_TREE`: the chain's first GPU, the head, takes the parent node
    /// and both child nodes.
    #[default]
    Tree,
    /// `NCCL_TOPO_PATTERN_SPLIT_TREE`: the first GPU takes the parent node, the second
    /// both child nodes. NCCL's search tries it first on GPUs before Ampere (2.8 to 2.17)
    /// across more than two nodes, so a sum coming up (or a result going down) crosses
    /// one NVLink hop inside every node it passes, besides the network hop between nodes.
    Split,
    /// `NCCL_TOPO_PATTERN_BALANCED_TREE`: the first GPU takes the parent node and the
    /// second child node, the second GPU the first child node.
    Balanced,
}

impl TreePattern {
    /// The names the `pattern` parameter takes.
    pub const NAMES: [(&'static str, TreePattern); 3] =
        [("tree", TreePattern::Tree), ("split", TreePattern::Split), ("balanced", TreePattern::Balanced)];

    /// The parameter's name of the pattern.
    pub fn name(self) -> &'static str {
        TreePattern::NAMES.iter().find(|(_, p)| *p == self).map_or("tree", |(n, _)| *n)
    }
}

/// How a rank runs a channel's way up and way down (NCCL's `all_reduce.h`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeSchedule {
    /// `runTreeSplit`: an up stream and a down stream at once (NCCL 2.10 and later, and
    /// LL128 in every release, `NCCL_LL128_SPLIT`).
    #[default]
    Split,
    /// One stream: every chunk of the channel's part up, then every chunk down (NCCL 2.9
    /// and earlier with Simple and LL).
    UpThenDown,
}

impl TreeSchedule {
    /// The names the `schedule` parameter takes.
    pub const NAMES: [(&'static str, TreeSchedule); 2] =
        [("split", TreeSchedule::Split), ("up_then_down", TreeSchedule::UpThenDown)];

    /// The parameter's name of the schedule.
    pub fn name(self) -> &'static str {
        TreeSchedule::NAMES.iter().find(|(_, s)| *s == self).map_or("split", |(n, _)| *n)
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct NcclTree {
    /// The protocol (sets the chunk), if the parameter names one; else the machine's.
    pub proto: Option<Proto>,
    /// Channels.
    pub channels: usize,
    /// Bytes per chunk, if not the protocol's.
    pub chunk: Option<u64>,
    /// GPUs per node (0: the machine's).
    pub gpus_per_node: usize,
    /// Which GPUs of a node talk to the other nodes.
    pub pattern: TreePattern,
    /// Up and down at once, or up then down.
    pub schedule: TreeSchedule,
}

/// A rank's place in one channel's tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Place {
    pub parent: Option<usize>,
    /// Children, the chain's first (NCCL's `down[0]`), then the child nodes' heads.
    pub children: [Option<usize>; 3],
}

/// The schedule of one run.
///
/// A rank's place in a channel's tree is worked out when asked for (a few bit
/// operations, [`nccl_btree`]), not tabled: every rank's program holds a plan, so a table
/// of every rank's places made P plans of P places, P^2 in time and memory (at 1,024
/// ranks, a table built and kept per rank was most of the run's cost).
#[derive(Clone, Debug)]
pub(crate) struct TreePlan {
    pub channels: usize,
    pub n: usize,
    pub chunk_elems: usize,
    /// GPUs per node (at least 1) and nodes.
    g: usize,
    nodes: usize,
    /// Which GPUs of a node talk to the other nodes ([`TreePattern::Tree`] where a node
    /// has one GPU).
    pattern: TreePattern,
    /// NICs per node where a split or balanced chain must keep its first two GPUs on
    /// one NIC (0: not asked).
    nics: usize,
    /// Up and down at once, or up then down.
    pub schedule: TreeSchedule,
}

/// NCCL's `ncclGetDtree`: node `node`'s parent and children in tree `t` of `nodes`.
pub(crate) fn dtree(nodes: usize, node: usize, t: usize) -> (Option<usize>, [Option<usize>; 2]) {
    if t == 0 {
        return nccl_btree(nodes, node);
    }
    if nodes % 2 == 1 {
        let (u, d) = nccl_btree(nodes, (node + nodes - 1) % nodes);
        (u.map(|u| (u + 1) % nodes), d.map(|d| d.map(|d| (d + 1) % nodes)))
    } else {
        let (u, d) = nccl_btree(nodes, nodes - 1 - node);
        (u.map(|u| nodes - 1 - u), d.map(|d| d.map(|d| nodes - 1 - d)))
    }
}

impl TreePlan {
    fn new(np: usize, g: usize, channels: usize, n: usize, chunk_elems: usize) -> TreePlan {
        let g = g.max(1);
        TreePlan {
            channels,
            n,
            chunk_elems,
            g,
            nodes: np / g,
            pattern: TreePattern::Tree,
            nics: 0,
            schedule: TreeSchedule::Split,
        }
    }

    /// The plan with `pattern` (kept as [`TreePattern::Tree`] on one-GPU nodes, where
    /// there is no second GPU) and the node's `nics` (0: unknown).
    fn with_pattern(self, pattern: TreePattern, nics: usize) -> TreePlan {
        let pattern = if self.g < 2 { TreePattern::Tree } else { pattern };
        TreePlan { pattern, nics, ..self }
    }

    /// The chain position at which chain j starts. NCCL's search lays each chain from a
    /// NIC (a chain's speed taken off that NIC's width, so a NIC that one chain fills
    /// leaves the next chain to the next NIC) and brings the tree back to the NIC it came
    /// in by. Where `b = g / K >= 2` GPUs share each of K NICs and there are several
    /// nodes, chain j starts on NIC `j mod K`'s block: with the one-head pattern at its
    /// GPU `(j / K) mod b`; a split or balanced chain, which talks to the other nodes from
    /// its first two GPUs, at a GPU whose successor is on the same NIC. Elsewhere (a
    /// one-head chain on one node, where NCCL's search has no NIC, or NICs it cannot
    /// share out) GPU j mod g.
    fn chain_start(&self, j: usize) -> usize {
        let (g, kn) = (self.g, self.nics);
        if kn == 0 || kn >= g || !g.is_multiple_of(kn) {
            return j % g;
        }
        let b = g / kn;
        match self.pattern {
            TreePattern::Tree if self.nodes < 2 => j % g,
            TreePattern::Tree => (j % kn) * b + (j / kn) % b,
            TreePattern::Split | TreePattern::Balanced => (j % kn) * b + (j / kn) % (b - 1),
        }
    }

    /// Rank r's place in channel k's tree.
    pub fn place(&self, k: usize, r: usize) -> Place {
        let (g, nodes) = (self.g, self.nodes);
        let search = self.channels.div_ceil(2);
        let (t, rot) = if k < search { (0, self.chain_start(k)) } else { (1, self.chain_start(k - search)) };
        // GPU at chain position i of node `node`.
        let at = |node: usize, i: usize| node * g + (i + rot) % g;
        let (node, i) = (r / g, (r % g + g - rot) % g);
        let chain_child = (i + 1 < g).then(|| at(node, i + 1));
        let tree = |i: usize| i == 0 || (i == 1 && self.pattern != TreePattern::Tree);
        if !tree(i) {
            return Place { parent: Some(at(node, i - 1)), children: [chain_child, None, None] };
        }
        let (up, downs) = dtree(nodes, node, t);
        let head = |d: usize| at(d, 0);
        match (self.pattern, i) {
            (TreePattern::Tree, _) => {
                Place { parent: up.map(head), children: [chain_child, downs[0].map(head), downs[1].map(head)] }
            }
            // The first GPU: the parent node's second GPU above, its own second below.
            (TreePattern::Split, 0) => Place { parent: up.map(|u| at(u, 1)), children: [chain_child, None, None] },
            // The second: its first GPU above, both child nodes' first GPUs below.
            (TreePattern::Split, _) => {
                Place { parent: Some(at(node, 0)), children: [chain_child, downs[0].map(head), downs[1].map(head)] }
            }
            // The first GPU: above, the parent node's GPU for its first child (the second)
            // or for its second child (the first); below, its second GPU and the second
            // child node.
            (TreePattern::Balanced, 0) => {
                let first_child = |u: usize| dtree(nodes, u, t).1[0] == Some(node);
                Place {
                    parent: up.map(|u| at(u, usize::from(first_child(u)))),
                    children: [chain_child, downs[1].map(head), None],
                }
            }
            (TreePattern::Balanced, _) => {
                Place { parent: Some(at(node, 0)), children: [chain_child, downs[0].map(head), None] }
            }
        }
    }

    /// Channel k's part of the vector.
    pub fn part(&self, k: usize) -> Region {
        Blocks::new(self.n, self.channels).get(k)
    }

    /// Chunks of channel k.
    pub fn chunks(&self, k: usize) -> usize {
        self.part(k).len.div_ceil(self.chunk_elems)
    }

    /// Chunk j of channel k.
    pub fn chunk(&self, k: usize, j: usize) -> Region {
        let part = self.part(k);
        let start = j * self.chunk_elems;
        Region::vec(part.offset + start, self.chunk_elems.min(part.len - start))
    }

    /// Tag of chunk j of channel k going up (`down` false) or down.
    fn tag(&self, k: usize, j: usize, down: bool) -> u32 {
        ((j * self.channels + k) * 2 + usize::from(down)) as u32
    }

    /// Rank r's streams on channel k. A step's ops are chained from the place's arrays,
    /// so making one allocates nothing.
    fn programs(&self, k: usize, r: usize) -> Vec<Program<'static>> {
        let place = self.place(k, r);
        let kids = place.children;
        let n_kids = kids.iter().flatten().count();
        let chunks = self.chunks(k);
        if chunks == 0 || (place.parent.is_none() && n_kids == 0) {
            return Vec::new();
        }
        let up_window = FIFO - 1;
        let down_window = (FIFO - 1) * n_kids as u32;
        if self.schedule == TreeSchedule::UpThenDown {
            return vec![self.up_then_down(k, place, chunks, up_window, down_window)];
        }
        let mut out: Vec<Program<'static>> = Vec::new();
        // Up (at the root: up and straight back down).
        let plan = self.clone();
        out.push(Box::new(per_step(0..chunks, move |j| {
            let (c, up, down) = (plan.chunk(k, j), plan.tag(k, j, false), plan.tag(k, j, true));
            let recvs = kids.into_iter().flatten().map(move |q| Op::recv_reduce(q as Rank, up, c));
            let wait = (n_kids > 0).then_some(Op::WaitAll);
            let to_parent =
                place.parent.into_iter().flat_map(move |p| [Op::WaitSends(up_window), Op::send(p as Rank, up, c)]);
            let root = place.parent.is_none();
            let to_kids = root
                .then_some(Op::WaitSends(down_window))
                .into_iter()
                .chain(kids.into_iter().flatten().filter(move |_| root).map(move |q| Op::send(q as Rank, down, c)));
            recvs.chain(wait).chain(to_parent).chain(to_kids)
        })));
        // Down, below the root.
        if let Some(p) = place.parent {
            let plan = self.clone();
            out.push(Box::new(per_step(0..chunks, move |j| {
                let (c, down) = (plan.chunk(k, j), plan.tag(k, j, true));
                let sends = kids.into_iter().flatten().map(move |q| Op::send(q as Rank, down, c));
                [Op::Recv { from: p as Rank, tag: down, dst: c, action: Action::Copy }, Op::WaitAll]
                    .into_iter()
                    .chain((n_kids > 0).then_some(Op::WaitSends(down_window)))
                    .chain(sends)
            })));
        }
        out
    }

    /// Rank's one stream on channel k under [`TreeSchedule::UpThenDown`]: every chunk up
    /// (add the children's, send the sum to the parent; the root keeps it), then every
    /// chunk down (from the parent, or the root's own, to the children).
    fn up_then_down(
        &self,
        k: usize,
        place: Place,
        chunks: usize,
        up_window: u32,
        down_window: u32,
    ) -> Program<'static> {
        let kids = place.children;
        let n_kids = kids.iter().flatten().count();
        let plan = self.clone();
        let up = per_step(0..chunks, move |j| {
            let (c, up) = (plan.chunk(k, j), plan.tag(k, j, false));
            let recvs = kids.into_iter().flatten().map(move |q| Op::recv_reduce(q as Rank, up, c));
            let wait = (n_kids > 0).then_some(Op::WaitAll);
            let to_parent =
                place.parent.into_iter().flat_map(move |p| [Op::WaitSends(up_window), Op::send(p as Rank, up, c)]);
            recvs.chain(wait).chain(to_parent)
        });
        let plan = self.clone();
        let down = per_step(0..chunks, move |j| {
            let (c, down) = (plan.chunk(k, j), plan.tag(k, j, true));
            let from_parent = place.parent.into_iter().flat_map(move |p| {
                [Op::Recv { from: p as Rank, tag: down, dst: c, action: Action::Copy }, Op::WaitAll]
            });
            let sends = kids.into_iter().flatten().map(move |q| Op::send(q as Rank, down, c));
            from_parent.chain((n_kids > 0).then_some(Op::WaitSends(down_window))).chain(sends)
        });
        Box::new(up.chain(down))
    }

    /// A bound on the additions in sequence behind rank r's sum on channel k: it adds
    /// its children's sums one after another onto its own.
    fn depth_of_sums(&self, k: usize, r: usize) -> usize {
        let kids: Vec<usize> = self.place(k, r).children.iter().flatten().copied().collect();
        kids.iter().map(|&c| self.depth_of_sums(k, c)).max().map_or(0, |d| d + kids.len())
    }
}

impl NcclTree {
    /// Built from its parameters (see [`INFO`]).
    pub fn from_params(params: &mut super::Params) -> Result<NcclTree, super::ParamError> {
        let proto = protocol(params)?;
        let channels = params.count("channels", 2)?;
        // NCCL's MAXCHANNELS; more would only make a schedule too large to build.
        if channels > 64 {
            return Err(super::ParamError::new(
                Some("channels"),
                format!("'channels' must be 1 to 64, not {channels}"),
            ));
        }
        let chunk = params.size("chunk")?;
        let gpus_per_node = params.count("gpus_per_node", 0)?;
        let names: Vec<&'static str> = TreePattern::NAMES.iter().map(|(n, _)| *n).collect();
        let pattern = params.choice("pattern", &names)?;
        let pattern = TreePattern::NAMES.iter().find(|(n, _)| *n == pattern).map_or(TreePattern::Tree, |(_, p)| *p);
        let names: Vec<&'static str> = TreeSchedule::NAMES.iter().map(|(n, _)| *n).collect();
        let schedule = params.choice("schedule", &names)?;
        let schedule =
            TreeSchedule::NAMES.iter().find(|(n, _)| *n == schedule).map_or(TreeSchedule::Split, |(_, s)| *s);
        Ok(NcclTree { proto, channels, chunk, gpus_per_node, pattern, schedule })
    }

    /// Bytes per chunk on `topo`: the parameter, or NCCL's step for the protocol.
    pub fn chunk_bytes(&self, topo: &dyn Topology) -> u64 {
        self.chunk.unwrap_or_else(|| run_protocol(self.proto, topo).chunk_bytes())
    }

    pub(crate) fn plan(&self, p: &Problem, topo: &dyn Topology) -> TreePlan {
        let g = gpus_per_node(self.gpus_per_node, topo);
        let chunk_elems = (self.chunk_bytes(topo) as usize / p.elem_bytes.max(1)).max(1);
        let nics = match topo.node_nics() {
            Some(k) if self.gpus_per_node == 0 => k,
            _ => 0,
        };
        TreePlan { schedule: self.schedule, ..TreePlan::new(p.ranks, g, self.channels, p.elems, chunk_elems) }
            .with_pattern(self.pattern, nics)
    }
}

impl Algorithm for NcclTree {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        let label = nccl_label(INFO.id, self.proto, self.channels, 2, self.chunk, self.gpus_per_node);
        let mut extra = Vec::new();
        if self.pattern != TreePattern::Tree {
            extra.push(format!("pattern={}", self.pattern.name()));
        }
        if self.schedule != TreeSchedule::Split {
            extra.push(format!("schedule={}", self.schedule.name()));
        }
        if extra.is_empty() {
            return label;
        }
        let extra = extra.join(",");
        match label.strip_suffix(')') {
            Some(open) => format!("{open},{extra})"),
            None => format!("{label}({extra})"),
        }
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        let g = gpus_per_node(self.gpus_per_node, m.topo);
        check_nodes(p.ranks, g)?;
        let chunk_elems = (self.chunk_bytes(m.topo) as usize / p.elem_bytes.max(1)).max(1);
        let chunks = p.elems.div_ceil(self.channels).div_ceil(chunk_elems);
        if chunks.saturating_mul(2 * self.channels) > u32::MAX as usize {
            return Err(format!(
                "{chunks} chunks per channel is more than the tags can tell apart; use a larger chunk"
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = self.plan(&p, topo);
        (0..self.channels).flat_map(|k| plan.programs(k, rank as usize)).collect()
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p, m.topo);
        super::nccl_streams::tree_time(&plan, p.ranks, p.elem_bytes, FIFO as usize, m.topo, m.cost_per_byte)
            .map(|t| (t, super::EXACT))
    }

    /// Where there is no form: the bounds of `nccl_streams::tree_bounds` (docs/nccl.md,
    /// "Bounds").
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p, m.topo);
        Some(super::nccl_streams::tree_bounds(&plan, p.ranks, p.elem_bytes, m.topo, m.cost_per_byte))
    }

    /// Up and down the chain inside a node: `2(g-1)` steps for g GPUs per node (NCCL's
    /// `2 (nRanks/nNodes - 1)` intra-node latencies of the tree).
    fn start_steps(&self, p: &Problem, topo: &dyn Topology) -> usize {
        let g = gpus_per_node(self.gpus_per_node, topo).max(1);
        if p.ranks < 2 || !p.ranks.is_multiple_of(g) {
            return 0;
        }
        2 * (g - 1)
    }

    fn reduction_depth(&self, p: &Problem, topo: &dyn Topology) -> usize {
        if p.ranks <= 1 {
            return 0;
        }
        let plan = self.plan(p, topo);
        (0..self.channels)
            .map(|k| {
                let root = (0..p.ranks).find(|&r| plan.place(k, r).parent.is_none()).unwrap_or(0);
                plan.depth_of_sums(k, root)
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every channel's tree is a tree over all ranks: one root, parents and children
    /// agree, every rank reachable; a node's GPUs hang off its head in a chain.
    #[test]
    fn trees_span_every_rank() {
        for (np, g) in [(1, 1), (2, 1), (8, 1), (7, 1), (8, 4), (12, 4), (24, 8), (6, 3)] {
            for channels in [1, 2, 3, 4] {
                let plan = TreePlan::new(np, g, channels, 100, 10);
                for k in 0..channels {
                    let roots: Vec<usize> = (0..np).filter(|&r| plan.place(k, r).parent.is_none()).collect();
                    assert_eq!(roots.len(), 1, "P={np} g={g} k={k}");
                    for r in 0..np {
                        for &c in plan.place(k, r).children.iter().flatten() {
                            assert_eq!(plan.place(k, c).parent, Some(r), "P={np} g={g} k={k} r={r}");
                        }
                    }
                    let mut seen = vec![false; np];
                    let mut todo = roots.clone();
                    while let Some(r) = todo.pop() {
                        assert!(!seen[r]);
                        seen[r] = true;
                        todo.extend(plan.place(k, r).children.iter().flatten());
                    }
                    assert!(seen.iter().all(|&s| s), "P={np} g={g} k={k}");
                }
            }
        }
    }

    /// NCCL's two trees on 4 nodes (mirror) and 5 (shift), by hand from trees.cc.
    #[test]
    fn dtree_by_hand() {
        // Tree 0 on 4: 0 -> 2, 2 -> {1, 3}. Mirror: 3 -> 1, 1 -> {2, 0}.
        assert_eq!(dtree(4, 0, 0), (None, [None, Some(2)]));
        assert_eq!(dtree(4, 2, 0), (Some(0), [Some(1), Some(3)]));
        assert_eq!(dtree(4, 3, 1), (None, [None, Some(1)]));
        assert_eq!(dtree(4, 1, 1), (Some(3), [Some(2), Some(0)]));
        // Shift on 5: node i takes tree 0's place of i - 1: root 1, whose child is 4 + 1 = 0.
        assert_eq!(dtree(5, 1, 1), (None, [None, Some(0)]));
    }

    /// NCCL's split pattern on 4 nodes of 4 GPUs, one chain per NIC of 2: the chain's
    /// first GPU is the only one of its node with a parent in another node, its second
    /// the only one with children in other nodes, and the two share a NIC.
    #[test]
    fn split_puts_the_parent_on_the_first_gpu_and_the_children_on_the_second() {
        // 4 channels: 0 and 1 on tree 0 with chains 0 and 1, 2 and 3 on tree 1 with the same.
        let plan = TreePlan::new(16, 4, 4, 100, 10).with_pattern(TreePattern::Split, 2);
        for k in 0..4 {
            let (j, t) = (k % 2, k / 2);
            for node in 0..4 {
                let gpus: Vec<usize> = (node * 4..node * 4 + 4).collect();
                let across = |r: usize, q: usize| r / 4 != q / 4;
                let up: Vec<usize> =
                    gpus.iter().copied().filter(|&r| plan.place(k, r).parent.is_some_and(|q| across(r, q))).collect();
                let down: Vec<usize> = gpus
                    .iter()
                    .copied()
                    .filter(|&r| plan.place(k, r).children.iter().flatten().any(|&q| across(r, q)))
                    .collect();
                // Chain j starts on NIC j's block (GPUs 2j, 2j + 1).
                let (a, b) = (node * 4 + 2 * j, node * 4 + 2 * j + 1);
                let root = node == if t == 0 { 0 } else { 3 };
                assert_eq!(up, if root { vec![] } else { vec![a] }, "k={k} node={node}");
                assert_eq!(plan.place(k, b).parent, Some(a), "k={k} node={node}");
                assert!(down.iter().all(|&r| r == b), "k={k} node={node}: {down:?}");
                // A parent across nodes is that node's second GPU.
                if let Some(q) = plan.place(k, a).parent {
                    assert_eq!(q % 4, 2 * j + 1, "k={k} node={node}");
                }
            }
        }
    }

    /// NCCL's balanced pattern: the first GPU takes the parent and the second child node,
    /// the second GPU the first child node; a node hangs off the parent node's GPU that
    /// takes that child. Tree 0 on 4 nodes: 0 -> 2 (its second child), 2 -> {1, 3}.
    #[test]
    fn balanced_splits_the_children_between_the_first_two_gpus() {
        let plan = TreePlan::new(8, 2, 1, 100, 10).with_pattern(TreePattern::Balanced, 0);
        // Node 2 (GPUs 4, 5) is node 0's second child: it hangs off GPU 0.
        assert_eq!(plan.place(0, 4).parent, Some(0));
        // Node 2's children: node 1 (first) on GPU 5, node 3 (second) on GPU 4.
        assert_eq!(plan.place(0, 2).parent, Some(5));
        assert_eq!(plan.place(0, 6).parent, Some(4));
        assert_eq!(plan.place(0, 5).parent, Some(4));
        // One-GPU nodes keep one head whatever the pattern.
        let flat = TreePlan::new(4, 1, 1, 100, 10).with_pattern(TreePattern::Split, 0);
        let head = TreePlan::new(4, 1, 1, 100, 10);
        for r in 0..4 {
            assert_eq!(flat.place(0, r), head.place(0, r));
        }
    }

    /// The one-head pattern across nodes whose NICs are shared (2 nodes of 4 GPUs, 2 NICs:
    /// GPUs 0-1 on NIC 0, 2-3 on NIC 1): chain j starts on NIC `j mod 2`'s block, at its
    /// GPU `(j / 2) mod 2`, so chains 0 to 3 start at GPUs 0, 2, 1, 3. With 4 channels:
    /// 0 and 1 run tree 0 (node 0 the root) on chains 0 and 1, 2 and 3 tree 1 (node 1)
    /// on the same chains. On one node, where NCCL's search has no NIC, chain j starts at
    /// GPU j.
    #[test]
    fn one_head_chains_start_on_each_nic_in_turn() {
        let plan = TreePlan::new(8, 4, 8, 100, 10).with_pattern(TreePattern::Tree, 2);
        assert_eq!((0..4).map(|j| plan.chain_start(j)).collect::<Vec<_>>(), vec![0, 2, 1, 3]);
        let plan = TreePlan::new(8, 4, 4, 100, 10).with_pattern(TreePattern::Tree, 2);
        // Channel 1: chain 2 3 0 1 in each node, node 1's head (6) under node 0's (2).
        let parents: Vec<Option<usize>> = (0..8).map(|r| plan.place(1, r).parent).collect();
        assert_eq!(parents, vec![Some(3), Some(0), None, Some(2), Some(7), Some(4), Some(2), Some(6)]);
        assert_eq!(plan.place(1, 2).children, [Some(3), None, Some(6)]);
        // Channel 3: the same chain, tree 1: node 0's head (2) under node 1's (6).
        assert_eq!(plan.place(3, 6).parent, None);
        assert_eq!(plan.place(3, 2).parent, Some(6));
        // Channel 2: chain 0 on tree 1.
        assert_eq!(plan.place(2, 4).parent, None);
        assert_eq!(plan.place(2, 0).parent, Some(4));
        // One node: GPU j.
        let one = TreePlan::new(4, 4, 4, 100, 10).with_pattern(TreePattern::Tree, 2);
        assert_eq!((0..4).map(|j| one.chain_start(j)).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    /// Every pattern's trees span the ranks, as the one-head tree's do.
    #[test]
    fn every_pattern_spans_every_rank() {
        for pattern in [TreePattern::Split, TreePattern::Balanced] {
            for (np, g, nics) in [(8, 4, 2), (12, 4, 2), (24, 8, 4), (6, 3, 1), (10, 2, 2), (16, 4, 0)] {
                for channels in [1, 2, 3, 4] {
                    let plan = TreePlan::new(np, g, channels, 100, 10).with_pattern(pattern, nics);
                    for k in 0..channels {
                        let roots: Vec<usize> = (0..np).filter(|&r| plan.place(k, r).parent.is_none()).collect();
                        assert_eq!(roots.len(), 1, "{pattern:?} P={np} g={g} k={k}");
                        let mut seen = vec![false; np];
                        let mut todo = roots.clone();
                        while let Some(r) = todo.pop() {
                            assert!(!seen[r]);
                            seen[r] = true;
                            for &c in plan.place(k, r).children.iter().flatten() {
                                assert_eq!(plan.place(k, c).parent, Some(r), "{pattern:?} P={np} g={g} k={k}");
                                todo.push(c);
                            }
                        }
                        assert!(seen.iter().all(|&s| s), "{pattern:?} P={np} g={g} k={k}");
                    }
                }
            }
        }
    }
}
