//! NCCL's NVLS Tree allreduce (docs/nccl.md): NVLS inside each node, a double binary
//! tree across nodes between the GPUs that own a NIC.
//!
//! NCCL 2.18 and later run it on more than one node of Hopper or later GPUs on an
//! NVSwitch (`NCCL_ALGO_NVLS_TREE`; NVLS alone across nodes needs CollNet, SHARP in the
//! network). NCCL's kernel (`src/device/all_reduce.h`, the NVLS_TREE variant) cuts each
//! channel's part into loops of H chunks, one per *head*: the GPUs of a node that own a
//! NIC (`connect.cc` `connectNvls`: head h of every node is the GPU on NIC h's rail, and
//! the heads h of all nodes form NCCL's double binary tree, `ncclGetDtree`, tree 0 on
//! even channels and tree 1 on odd ones). Per loop:
//!
//! - every GPU's scatter warps put its copies of the H chunks into its multicast-bound
//!   buffer; head h's reduce warps load chunk h through the multicast address, which
//!   returns the node's sum (the switch adds the G copies);
//! - head h adds what its children nodes' heads h sent up and sends the sum to its parent
//!   node's head h; the root has the total;
//! - head h's broadcast warps take the total from its parent (the root: at once), pass it
//!   to its children and store it through the multicast address, which writes it into
//!   every GPU of its node; each GPU's gather warps copy it out.
//!
//! As in [`super::nvls`], switch agents do the switch's share: agent `P + r` stands for
//! what GPU r's node switch does for head r (only heads' agents have work). Per channel
//! and loop, for head h of node n (GPU r):
//!
//! - every GPU of node n sends its copy of chunk h to agent `P + r` (each GPU starting
//!   with a different head, so the G GPUs feed different agents at once);
//! - the agent, once it has all G, sends their sum to GPU r;
//! - GPU r adds its children's sums (received from their heads h), sends the result up,
//!   then, with the total (from its parent, or its own at the root), sends it to its
//!   children and to agent `P + r` (its store);
//! - the agent sends a copy to every GPU of node n, starting with GPU r.
//!
//! Pacing as in [`super::nvls`]: a head's loads of the next loop go out only once it has
//! this loop's node sum and its children's sums (its reduce warps ask the switch for one
//! chunk at a time); a GPU starts a loop only while its copies of at most
//! [`WINDOW`] - 1 earlier loops are outstanding. The broadcast (down the tree and the
//! store) runs on a stream of its own, as NCCL's broadcast warps do.
//!
//! The agents hold no vector, so `nvls_tree` runs timing only (`data: { mode: off }`).
//! Its data path is checked element by element by the unit tests below, which run the
//! programs with the switch's addition.

use super::nccl_tree::dtree;
use super::{AlgoInfo, Algorithm, Blocks, Machine, ParamError, Params, Problem, Topology};
use crate::sim::op::{Op, Program, Rank, Region, per_step};
use crate::topology::Link;

/// NCCL's NVLS channels on Hopper (`NVLS_NCHANNELS_SM90`).
pub const DEFAULT_CHANNELS: usize = super::nvls::DEFAULT_CHANNELS;
/// The last loop's chunks are a multiple of this many bytes (NCCL aligns them to 16).
const LAST_ALIGN: usize = 16;
/// Loops a GPU may have started whose copies it has not all received: NCCL's
/// `NCCL_STEPS`.
const WINDOW: usize = 8;

/// Whole loops after which every GPU has its window of loops in flight and each further
/// loop repeats the one before it: where `calibrate` starts counting loops. On two H100
/// nodes the steps settled after 2 to 6 loops, the NIC-bound machines the latest.
pub const FILL_LOOPS: u64 = WINDOW as u64;

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "nvls_tree",
    summary: "NCCL's NVLS Tree allreduce across NVSwitch nodes: the switch adds each head's chunk over the node, \
              the heads (one per NIC) sum it up a double binary tree across nodes and the total comes back down \
              and is multicast into every GPU",
    source: "NCCL src/device/all_reduce.h (NVLS_TREE), src/graph/connect.cc connectNvls (heads, trees), \
             src/enqueue.cc calcCollChunking (the NVLS Tree chunk), src/transport/nvls.cc (channels, chunk); \
             docs/nccl.md",
    requires: "a cluster of two or more nodes whose intra kind is nvswitch, two or more GPUs per node; timing only \
               (data: { mode: off })",
    closed_form: "bounds: each GPU's NVLink side and each head's NIC side busy below (every message alpha + m/B on \
                  its hop), every message and addition one after another above",
    params: &[
        "channels=16: NCCL's NVLS channels (16 on Hopper), each moving its own part of the vector",
        "chunk=NCCL's: bytes per head per loop (128 KiB, 64 KiB from 4 nodes, shrunk for small sizes as NCCL \
         does)",
    ],
    build: |params| Ok(Box::new(NvlsTree::from_params(params)?)),
};

/// See the module docs.
#[derive(Debug)]
pub struct NvlsTree {
    /// Channels.
    pub channels: usize,
    /// Bytes per chunk, if not NCCL's rule.
    pub chunk: Option<u64>,
}

impl NvlsTree {
    /// Built from its parameters (see [`INFO`]).
    pub fn from_params(params: &mut Params) -> Result<NvlsTree, ParamError> {
        let (channels, chunk) = super::nvls::channels_and_chunk(params)?;
        Ok(NvlsTree { channels, chunk })
    }

    /// What a run of `p` on `topo` holds in the engine beside its ranks' own state: its
    /// streams, their programs' bytes and the most messages in flight, read off the
    /// schedule in O(channels + nodes x heads) without walking it. `None` where no
    /// count is claimed (as [`Algorithm::messages`]).
    pub fn engine_load(&self, p: &Problem, topo: &dyn Topology) -> Option<EngineLoad> {
        let plan = self.plan(p, topo)?;
        (topo.intra_nvswitch() && plan.nodes >= 2 && plan.ranks() == p.ranks).then(|| plan.engine_load())
    }

    /// The schedule of `p` on `topo`'s nodes (`None` off a cluster).
    fn plan(&self, p: &Problem, topo: &dyn Topology) -> Option<Plan> {
        let (_, g) = topo.node_shape()?;
        let g = g.min(p.ranks).max(1);
        let nics = heads(g, topo.node_nics().unwrap_or(1));
        let nodes = p.ranks / g;
        let e = p.elem_bytes.max(1);
        let channels = self.channels.max(1);
        let chunk = self.chunk.unwrap_or_else(|| chunk_bytes(p.bytes() as u64, channels, nics, nodes, None));
        Some(Plan {
            g,
            nodes,
            heads: nics,
            channels,
            n: p.elems,
            chunk_elems: (chunk as usize / e).max(1),
            align: (LAST_ALIGN / e).max(1),
        })
    }
}

/// The heads of a node of `gpus` GPUs (those a run uses) and `nics` NICs: one per NIC, at
/// most one per GPU.
pub fn heads(gpus: usize, nics: usize) -> usize {
    nics.clamp(1, gpus.max(1))
}

/// The bytes by which two allreduces of the same `channels`, `chunk` bytes (given, not
/// NCCL's rule for each size) and elements of `elem` bytes differ when the larger runs
/// exactly one more whole loop on every channel, with `heads` heads per node: each
/// channel's part grows by `heads` chunks, and the rest of every part, hence its last
/// loop, is the same (the channels' parts are split as evenly as before). `calibrate`
/// counts such loops rather than simulating them all.
pub fn loop_bytes(channels: usize, chunk: u64, heads: usize, elem: u64) -> u64 {
    let elem = elem.max(1);
    (chunk / elem).max(1) * elem * (channels.max(1) * heads.max(1)) as u64
}

/// NCCL's NVLS Tree chunk for an allreduce of `bytes` over `channels` channels of `heads`
/// heads on `nodes` nodes (`calcCollChunking`): the NVLS chunk (128 KiB, or `max` where
/// NCCL's Blackwell tuning sets its own), at most NCCL's tree maximum (64 KiB from 4
/// nodes, else the chunk), then cut to 256, 128, 64 and 32 KiB while the buffer holds
/// fewer than 32, 16, 4 and 1 chunks per head and channel.
pub fn chunk_bytes(bytes: u64, channels: usize, heads: usize, nodes: usize, max: Option<(u64, u64)>) -> u64 {
    let (nvls_chunk, tree_max) = max.unwrap_or((128 * 1024, if nodes >= 4 { 65536 } else { 128 * 1024 }));
    let ops = (channels * heads) as u64;
    let mut chunk = nvls_chunk.min(tree_max);
    for (times, to) in [(32, 262144), (16, 131072), (4, 65536), (1, 32768)] {
        if bytes < times * ops * chunk && chunk > to {
            chunk = to;
        }
    }
    chunk
}

/// What a run of `nvls_tree` holds in the engine at once beside its ranks' own state
/// ([`NvlsTree::engine_load`]): the memory estimate counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLoad {
    /// Streams of every GPU and switch agent (two per GPU and channel at the most: 32
    /// at NCCL's 16 channels).
    pub streams: u64,
    /// Bytes of those streams' programs.
    pub program_bytes: u64,
    /// Messages in flight at once, at the most (sends issued and not yet received, and
    /// receives posted before their message).
    pub in_flight: u64,
}

/// One run's schedule.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// GPUs per node.
    g: usize,
    /// Nodes.
    nodes: usize,
    /// Heads per node (one per NIC).
    heads: usize,
    /// Channels.
    channels: usize,
    /// n.
    n: usize,
    /// Elements of a whole loop's chunk.
    chunk_elems: usize,
    /// The last loop's chunks are a multiple of this many elements.
    align: usize,
}

/// What a message of the loop is, for its tag.
#[derive(Clone, Copy)]
enum Phase {
    Load = 0,
    Sum = 1,
    Up = 2,
    Down = 3,
    Store = 4,
    Copy = 5,
}
const PHASES: usize = 6;

impl Plan {
    fn ranks(&self) -> usize {
        self.nodes * self.g
    }

    /// Channel k's part of the vector.
    fn part(&self, k: usize) -> Region {
        Blocks::new(self.n, self.channels).get(k)
    }

    /// Loops channel k runs.
    fn loops(&self, k: usize) -> usize {
        self.part(k).len.div_ceil(self.heads * self.chunk_elems)
    }

    /// Head h's chunk of loop l of channel k: whole chunks, but in a last loop shorter
    /// than a whole one, where NCCL cuts the rest into `ceil(rest / H)` rounded up to 16
    /// bytes (so the last heads' may be short or empty).
    fn chunk(&self, k: usize, l: usize, h: usize) -> Region {
        let part = self.part(k);
        let whole = self.heads * self.chunk_elems;
        let rest = part.len - l * whole;
        let cc =
            if rest < whole { rest.div_ceil(self.heads).div_ceil(self.align) * self.align } else { self.chunk_elems };
        let start = (h * cc).min(rest);
        Region::vec(part.offset + l * whole + start, cc.min(rest - start))
    }

    /// The node-local GPU of head h: the first GPU on NIC h's rail (GPU j uses NIC
    /// `floor(j H / G)`).
    fn head_gpu(&self, h: usize) -> usize {
        (h * self.g).div_ceil(self.heads)
    }

    /// The head GPU j of a node is, if it is one.
    fn head_of(&self, j: usize) -> Option<usize> {
        let h = j * self.heads / self.g;
        (self.head_gpu(h) == j).then_some(h)
    }

    /// Head h of node `node`'s parent and children (global ranks) on channel k: the heads
    /// h of the parent and children nodes in NCCL's tree `k mod 2`.
    fn tree(&self, k: usize, node: usize, h: usize) -> (Option<usize>, [Option<usize>; 2]) {
        let (up, down) = dtree(self.nodes, node, k % 2);
        let at = |n: usize| n * self.g + self.head_gpu(h);
        (up.map(at), down.map(|d| d.map(at)))
    }

    fn tag(&self, k: usize, l: usize, phase: Phase) -> u32 {
        ((l * PHASES + phase as usize) * self.channels + k) as u32
    }

    /// Messages the whole run sends, read off the same heads, trees and loops as
    /// [`Plan::gpu`] and [`Plan::agent_streams`] without walking them: every loop of a
    /// channel sends the same messages (only their lengths differ), and a channel's
    /// depend on its tree (`k mod 2`) alone, so one loop of each tree is counted and
    /// multiplied by the loops of that tree's channels. O(channels + nodes x heads).
    fn messages(&self) -> u64 {
        let loops = |t: usize| -> u128 { (t..self.channels).step_by(2).map(|k| self.loops(k) as u128).sum() };
        let total: u128 = (0..2).map(|t| self.loop_messages(t) * loops(t)).sum();
        u64::try_from(total).unwrap_or(u64::MAX)
    }

    /// Messages of one loop of a channel on tree t: every GPU's H loads; each head its
    /// send up (not the root), one down to each child and its store; each head's agent
    /// the node's sum and a copy to every GPU of the node.
    fn loop_messages(&self, t: usize) -> u128 {
        let loads = (self.ranks() * self.heads) as u128;
        let heads: u128 = (0..self.nodes)
            .flat_map(|node| (0..self.g).filter_map(move |j| self.head_of(j).map(|h| (node, h))))
            .map(|(node, h)| {
                let (parent, kids) = self.tree(t, node, h);
                let head = usize::from(parent.is_some()) + kids.iter().flatten().count() + 1;
                (head + 1 + self.g) as u128
            })
            .sum();
        loads + heads
    }

    /// What the engine holds for the run beside its ranks' own state, read off the
    /// schedule as [`Plan::messages`] is ([`EngineLoad`]).
    ///
    /// Streams: per channel with a loop, every GPU's main stream, a broadcast stream on
    /// each head but the root node's, and two on each head's agent; each program is its
    /// closure over the plan, whose size is read off one head's and its agent's
    /// programs (the same types on every rank and channel).
    ///
    /// In flight, per channel, from the waits alone (whatever the timing). Let GPU r be
    /// at loop m (it has issued loop m's loads, not loop m + 1's). It has every copy of
    /// loop m - [`WINDOW`] (it waited for them before loop m), and posts its copies'
    /// receives loop by loop; every other GPU is at loop m - [`WINDOW`] or later, as the
    /// total of that loop needed its loads. So, of the messages of a loop:
    ///
    /// - loads: a GPU's are received before its copies of the loop are sent, so it has
    ///   at most [`WINDOW`] loops of them in flight; a head's only two: at loop m it has
    ///   its node's sum of loop m - 1, so every other head of its node has begun loop
    ///   m - 1, having had its own sum of loop m - 2, which its agent sends only once it
    ///   has every load of that loop;
    /// - copies (their receives posted or their messages sent): [`WINDOW`] loops a GPU;
    /// - sums: one, the head's current loop's (its agent sends a loop's sum only once it
    ///   has the head's loads of it, and the head then waits for it);
    /// - ups, downs and stores: [`WINDOW`] loops an edge or head: a child head at loop m
    ///   has the total of loop m - [`WINDOW`], so its parent has taken its ups up to that
    ///   loop; a down or store of loop x is sent only once the total of loop x is, which
    ///   needed every GPU's loads of loop x, and is taken before the copies of loop x
    ///   its receiver's node waits for [`WINDOW`] loops later.
    ///
    /// With one loop a channel (small sizes) that is every message at once: every GPU
    /// issues its loads on every channel at its start.
    fn engine_load(&self) -> EngineLoad {
        let size = |progs: Vec<Program<'static>>| -> Vec<u64> {
            progs.iter().map(|p| std::mem::size_of_val(&**p) as u64).collect()
        };
        // A node whose heads have a parent in tree 0 (any but its root: nodes >= 2), so
        // that its head 0 runs both GPU streams and its agent both of its own.
        let node = (0..self.nodes).find(|&n| dtree(self.nodes, n, 0).0.is_some()).unwrap_or(0);
        let r = node * self.g + self.head_gpu(0);
        let (gpu, agent) = (size(self.gpu(0, r)), size(self.agent_streams(0, r)));
        let [main, broadcast] = [0, 1].map(|i| gpu.get(i).copied().unwrap_or(0));
        let agent: u64 = agent.iter().sum();
        let (p, heads) = (self.ranks() as u64, (self.nodes * self.heads) as u64);
        let parented = heads.saturating_sub(self.heads as u64);
        // A loop's loads (and as many copies) from heads and from the other GPUs, its
        // sums (one a head), and its ups, downs and stores (the rest) on tree t.
        let hh = self.heads as u128;
        let (from_heads, from_others) = (heads as u128 * hh, (p - heads) as u128 * hh);
        let sums = heads as u128;
        let rest = [0, 1].map(|t| self.loop_messages(t).saturating_sub(2 * p as u128 * hh + sums));
        let window = WINDOW as u128;
        let mut load = EngineLoad { streams: 0, program_bytes: 0, in_flight: 0 };
        for k in (0..self.channels).filter(|&k| self.loops(k) > 0) {
            load.streams += p + parented + 2 * heads;
            load.program_bytes += p * main + parented * broadcast + heads * agent;
            let loops = self.loops(k) as u128;
            let loads = from_heads * loops.min(2) + from_others * loops.min(window);
            let copies = p as u128 * hh * loops.min(window);
            let held = loads + copies + sums + rest[k % 2] * loops.min(window);
            load.in_flight = load.in_flight.saturating_add(u64::try_from(held).unwrap_or(u64::MAX));
        }
        load
    }

    fn agent(&self, gpu: usize) -> Rank {
        (self.ranks() + gpu) as Rank
    }

    /// GPU r's streams on channel k.
    ///
    /// Main (scatter, reduce and gather): per loop its H loads to the heads' agents
    /// (starting with head `j mod H`), then, as head, the node's sum in and waited for,
    /// its children's sums added and waited for, the result sent up (at the root, sent
    /// down and stored instead); then the H copies posted; before the next loop, the
    /// copies of the loop [`WINDOW`] - 1 back waited for.
    ///
    /// Broadcast (heads other than the root): per loop the total from the parent, then
    /// passed on to the children and stored.
    fn gpu(self, k: usize, r: usize) -> Vec<Program<'static>> {
        let (node, j) = (r / self.g, r % self.g);
        let hh = self.heads;
        let me = self.head_of(j);
        let (parent, kids) = me.map_or((None, [None, None]), |h| self.tree(k, node, h));
        let n_kids = kids.iter().flatten().count();
        let loops = self.loops(k);
        let head_agent = move |h: usize| self.agent(node * self.g + self.head_gpu(h));
        // Receives per loop on the main stream: as head the sum and the children's sums;
        // then the H copies.
        let recvs = if me.is_some() { 1 + n_kids } else { 0 } + hh;
        let mut out: Vec<Program<'static>> = Vec::with_capacity(2);
        out.push(Box::new(per_step(0..=loops, move |l| {
            let mut ops: Vec<Op> = Vec::with_capacity(3 * hh + 10);
            if l == loops {
                ops.push(Op::WaitAll);
                return ops;
            }
            let base = (l * recvs) as u32;
            ops.extend((0..hh).map(|u| {
                let h = (j + u) % hh;
                Op::send(head_agent(h), self.tag(k, l, Phase::Load), self.chunk(k, l, h))
            }));
            if let Some(h) = me {
                let mine = self.chunk(k, l, h);
                ops.push(Op::recv_copy(self.agent(r), self.tag(k, l, Phase::Sum), mine));
                ops.push(Op::Wait(base));
                for (i, c) in kids.iter().flatten().enumerate() {
                    ops.push(Op::recv_reduce(*c as Rank, self.tag(k, l, Phase::Up), mine));
                    ops.push(Op::Wait(base + 1 + i as u32));
                }
                match parent {
                    Some(up) => ops.push(Op::send(up as Rank, self.tag(k, l, Phase::Up), mine)),
                    None => {
                        ops.extend(
                            kids.iter().flatten().map(|c| Op::send(*c as Rank, self.tag(k, l, Phase::Down), mine)),
                        );
                        ops.push(Op::send(self.agent(r), self.tag(k, l, Phase::Store), mine));
                    }
                }
            }
            let first_copy = base + (recvs - hh) as u32;
            ops.extend((0..hh).map(|u| {
                let h = (j + u) % hh;
                Op::recv_copy(head_agent(h), self.tag(k, l, Phase::Copy), self.chunk(k, l, h))
            }));
            if l + 1 >= WINDOW {
                let back = first_copy - ((WINDOW - 1) * recvs) as u32;
                ops.extend((back..back + hh as u32).map(Op::Wait));
            }
            ops
        })));
        if let (Some(h), Some(up)) = (me, parent) {
            out.push(Box::new(per_step(0..=loops, move |l| {
                let mut ops: Vec<Op> = Vec::with_capacity(5);
                if l == loops {
                    ops.push(Op::WaitAll);
                    return ops;
                }
                let mine = self.chunk(k, l, h);
                ops.push(Op::recv_copy(up as Rank, self.tag(k, l, Phase::Down), mine));
                ops.push(Op::Wait(l as u32));
                ops.extend(kids.iter().flatten().map(|c| Op::send(*c as Rank, self.tag(k, l, Phase::Down), mine)));
                ops.push(Op::send(self.agent(r), self.tag(k, l, Phase::Store), mine));
                ops
            })));
        }
        out
    }

    /// The streams of the agent of GPU r on channel k, if r is a head: reduce (per loop
    /// the G copies of its chunk in, their sum to GPU r) and multicast (GPU r's store
    /// in, a copy to every GPU of the node, starting with GPU r).
    fn agent_streams(self, k: usize, r: usize) -> Vec<Program<'static>> {
        let (node, j, g) = (r / self.g, r % self.g, self.g);
        let Some(h) = self.head_of(j) else { return Vec::new() };
        let loops = self.loops(k);
        let gpu = move |u: usize| (node * g + (j + g - u) % g) as Rank;
        let reduce = per_step(0..loops * (g + 2), move |s| {
            let (l, u) = (s / (g + 2), s % (g + 2));
            let c = self.chunk(k, l, h);
            [match u {
                _ if u < g => Op::recv_copy(gpu(u), self.tag(k, l, Phase::Load), c),
                _ if u == g => Op::WaitAll,
                _ => Op::send(r as Rank, self.tag(k, l, Phase::Sum), c),
            }]
        });
        let multicast = per_step(0..loops * (g + 2), move |s| {
            let (l, u) = (s / (g + 2), s % (g + 2));
            let c = self.chunk(k, l, h);
            [match u {
                0 => Op::recv_copy(r as Rank, self.tag(k, l, Phase::Store), c),
                1 => Op::Wait(l as u32),
                _ => Op::send((node * g + (j + u - 2) % g) as Rank, self.tag(k, l, Phase::Copy), c),
            }]
        });
        vec![Box::new(reduce), Box::new(multicast)]
    }
}

impl Algorithm for NvlsTree {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        super::nvls::label(INFO.id, self.channels, self.chunk)
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        if !m.topo.intra_nvswitch() {
            return Err(
                "NVLS Tree needs an NVSwitch that adds and multicasts: a cluster whose intra kind is nvswitch".into()
            );
        }
        let g = m.topo.node_shape().map_or(0, |(_, g)| g);
        if g < 2 {
            return Err(format!("NVLS Tree needs two or more GPUs per node on the NVSwitch, not {g}"));
        }
        if p.ranks <= g {
            return Err(format!(
                "NVLS Tree runs across nodes (NCCL turns it off on one node; nvls is the one-node algorithm): {} \
                 ranks are one node of {g} GPUs",
                p.ranks
            ));
        }
        super::nccl_ring::check_nodes(p.ranks, g)?;
        let Some(plan) = self.plan(p, m.topo) else { return Err("NVLS Tree needs a cluster's nodes".into()) };
        let loops = (0..plan.channels).map(|k| plan.loops(k)).max().unwrap_or(0);
        if loops.saturating_mul(PHASES * plan.channels) > u32::MAX as usize {
            return Err(format!("{loops} loops over {} channels are more than the tags can tell apart", plan.channels));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let Some(plan) = self.plan(&p, topo) else { return Vec::new() };
        let r = rank as usize;
        let active = (0..plan.channels).filter(move |&k| plan.loops(k) > 0);
        if r < p.ranks {
            active.flat_map(|k| plan.gpu(k, r)).collect()
        } else {
            active.flat_map(|k| plan.agent_streams(k, r - p.ranks)).collect()
        }
    }

    fn closed_form(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }

    /// Below: the busiest side of any interface a GPU uses (its NVLink to the switch
    /// each way, a head's NIC each way), every message on it at least `alpha + m/B` of
    /// its hop, shared by the side's ports. Above: every message and every addition of
    /// the run one after another, since a rank never waits but for a message or its own
    /// addition.
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p, m.topo)?;
        let topo = m.topo;
        let np = plan.ranks();
        if np < 2 || np != topo.ranks() {
            return None;
        }
        let e = p.elem_bytes as f64;
        // A message between a GPU and the switch: half a GPU pair's alpha, at the
        // switch's rate.
        let hop = |r: usize| {
            let peer = (r / plan.g) * plan.g + (r % plan.g + 1) % plan.g;
            let l = topo.link(r, peer);
            (Link { alpha: l.alpha / 2.0, bandwidth: l.bandwidth * topo.nvls_efficiency() }, peer)
        };
        // Per interface side: busy seconds; [out, in] of each interface.
        let mut busy = vec![[0.0f64; 2]; topo.interfaces()];
        let mut total = 0.0f64;
        for k in 0..plan.channels {
            for l in 0..plan.loops(k) {
                for r in 0..np {
                    let (link, peer) = hop(r);
                    let (nv_out, _) = topo.route_interfaces(r, peer);
                    let (_, nv_in) = topo.route_interfaces(peer, r);
                    let (node, j) = (r / plan.g, r % plan.g);
                    for h in 0..plan.heads {
                        let t = link.time(plan.chunk(k, l, h).len as f64 * e);
                        // Its load out and its copy in.
                        busy[nv_out][0] += t;
                        busy[nv_in][1] += t;
                        total += 2.0 * t;
                    }
                    let Some(h) = plan.head_of(j) else { continue };
                    let bytes = plan.chunk(k, l, h).len as f64 * e;
                    let t = link.time(bytes);
                    // The node's sum in, its store out.
                    busy[nv_in][1] += t;
                    busy[nv_out][0] += t;
                    total += 2.0 * t;
                    let (parent, kids) = plan.tree(k, node, h);
                    for c in kids.iter().flatten() {
                        // A child's sum in (and added), the total down to it.
                        let up = topo.link(*c, r).time(bytes);
                        let down = topo.link(r, *c).time(bytes);
                        busy[topo.route_interfaces(*c, r).1][1] += up;
                        busy[topo.route_interfaces(r, *c).0][0] += down;
                        total += up + down + m.cost_per_byte * bytes;
                    }
                    if let Some(u) = parent {
                        busy[topo.route_interfaces(r, u).0][0] += topo.link(r, u).time(bytes);
                        busy[topo.route_interfaces(u, r).1][1] += topo.link(u, r).time(bytes);
                    }
                }
            }
        }
        let lower = busy
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.iter().map(move |b| b / f64::from(topo.interface_ports(i).max(1))))
            .fold(0.0, f64::max);
        Some((lower, total))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }

    fn messages(&self, p: &Problem, topo: &dyn Topology) -> Option<u64> {
        let plan = self.plan(p, topo)?;
        // Off the machine it runs on (where it is not applicable) no count is claimed.
        (topo.intra_nvswitch() && plan.nodes >= 2 && plan.ranks() == p.ranks).then(|| plan.messages())
    }

    fn switch_agents(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's NVLS Tree chunk on Hopper: 128 KiB up to 3 nodes, 64 KiB from 4, cut for
    /// small sizes (16 channels, 8 heads: 128 concurrent chunks).
    #[test]
    fn chunk_follows_nccl_rule() {
        assert_eq!(chunk_bytes(1 << 30, 16, 8, 2, None), 131072);
        assert_eq!(chunk_bytes(1 << 30, 16, 8, 4, None), 65536);
        // Below 4 x 128 x 128 KiB = 64 MiB: 64 KiB; below 1 x 128 x 64 KiB = 8 MiB: 32 KiB.
        assert_eq!(chunk_bytes(64 << 20, 16, 8, 2, None), 131072);
        assert_eq!(chunk_bytes((64 << 20) - 1, 16, 8, 2, None), 65536);
        assert_eq!(chunk_bytes((8 << 20) - 1, 16, 8, 2, None), 32768);
        assert_eq!(chunk_bytes(8, 16, 8, 16, None), 32768);
    }

    /// Heads are the first GPU of each rail.
    #[test]
    fn heads_are_the_first_gpu_of_each_rail() {
        let plan = |g, heads| Plan { g, nodes: 2, heads, channels: 1, n: 1, chunk_elems: 1, align: 1 };
        let p = plan(8, 2);
        assert_eq!((p.head_gpu(0), p.head_gpu(1)), (0, 4));
        assert_eq!((0..8).filter_map(|j| p.head_of(j)).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(p.head_of(4), Some(1));
        let p = plan(4, 3);
        assert_eq!((0..4).map(|j| p.head_of(j)).collect::<Vec<_>>(), vec![Some(0), None, Some(1), Some(2)]);
        let p = plan(8, 8);
        assert!((0..8).all(|j| p.head_of(j) == Some(j)));
    }

    /// Runs every rank's and agent's programs with data, the switch doing what it does:
    /// an agent's first stream (the reduce) adds every load it receives into the chunk
    /// and clears it once the sum is sent; everything else copies or adds as its
    /// operation says. Returns every GPU's vector at the end; panics on a deadlock or a
    /// message never received.
    fn run_with_data(plan: Plan) -> Vec<Vec<i64>> {
        use std::collections::{HashMap, VecDeque};
        let np = plan.ranks();
        let n = plan.n;
        let mut bufs: Vec<Vec<i64>> =
            (0..2 * np).map(|r| (0..n).map(|i| if r < np { (r * 1000 + i) as i64 } else { 0 }).collect()).collect();
        let mut streams: Vec<(usize, usize, std::iter::Peekable<Program<'static>>)> = Vec::new();
        for r in 0..2 * np {
            for k in 0..plan.channels {
                if plan.loops(k) == 0 {
                    continue;
                }
                let progs = if r < np { plan.gpu(k, r) } else { plan.agent_streams(k, r - np) };
                for (i, prog) in progs.into_iter().enumerate() {
                    streams.push((r, i, prog.peekable()));
                }
            }
        }
        let mut queues: HashMap<(Rank, Rank, u32), VecDeque<Vec<i64>>> = HashMap::new();
        loop {
            let mut moved = false;
            let mut left = false;
            for (r, i, prog) in streams.iter_mut() {
                let (r, agent_reduce) = (*r, *r >= np && *i == 0);
                while let Some(op) = prog.peek().copied() {
                    match op {
                        Op::Send { to, tag, src } => {
                            let data = bufs[r][src.offset..src.end()].to_vec();
                            if agent_reduce {
                                bufs[r][src.offset..src.end()].fill(0);
                            }
                            queues.entry((r as Rank, to, tag)).or_default().push_back(data);
                        }
                        Op::Recv { from, tag, dst, action } => {
                            let Some(data) = queues.get_mut(&(from, r as Rank, tag)).and_then(VecDeque::pop_front)
                            else {
                                break;
                            };
                            assert_eq!(data.len(), dst.len);
                            let add = agent_reduce || action == crate::sim::op::Action::Reduce;
                            for (d, v) in bufs[r][dst.offset..dst.end()].iter_mut().zip(data) {
                                *d = if add { *d + v } else { v };
                            }
                        }
                        _ => {}
                    }
                    prog.next();
                    moved = true;
                }
                left |= prog.peek().is_some();
            }
            if !left {
                break;
            }
            assert!(moved, "deadlock");
        }
        assert!(queues.values().all(VecDeque::is_empty), "messages never received");
        bufs.truncate(np);
        bufs
    }

    /// Element by element: every GPU ends with the sum of every GPU's vector, on
    /// machines of 2 to 5 nodes (both trees, odd and even), 2 to 4 GPUs, 1 to all heads,
    /// several channels and loops with short last chunks.
    #[test]
    fn every_element_is_the_sum() {
        for (nodes, g, heads, channels, n, chunk) in
            [(2, 2, 2, 1, 7, 1), (2, 4, 4, 2, 100, 3), (3, 4, 2, 3, 257, 5), (4, 2, 1, 2, 64, 8), (5, 4, 3, 4, 999, 7)]
        {
            let plan = Plan { g, nodes, heads, channels, n, chunk_elems: chunk, align: 2 };
            let np = nodes * g;
            let want: Vec<i64> = (0..n).map(|i| (0..np).map(|r| (r * 1000 + i) as i64).sum()).collect();
            for (r, v) in run_with_data(plan).iter().enumerate() {
                assert_eq!(v, &want, "{nodes} nodes x {g} GPUs, {heads} heads, {channels} channels: GPU {r}");
            }
        }
    }

    /// A size `loop_bytes` larger, at the same channels and chunk, is the same program
    /// with one more whole loop on every channel: every channel runs one loop more, its
    /// first loop is whole, and every later loop's chunks are the smaller size's loop
    /// before it, moved along by the part's offsets. So the larger runs the same loops
    /// after one identical loop more (what `calibrate` counts).
    #[test]
    fn one_loop_more_is_loop_bytes_more() {
        for (n, heads, channels, chunk, e) in
            [(1000, 4, 3, 8, 4), (37, 3, 5, 5, 2), (0, 8, 16, 4096, 4), (99, 2, 2, 1, 1)]
        {
            let more = loop_bytes(channels, (chunk * e) as u64, heads, e as u64) as usize / e;
            let plan = |n| Plan { g: 8, nodes: 2, heads, channels, n, chunk_elems: chunk, align: 4 };
            let (a, b) = (plan(n), plan(n + more));
            for k in 0..channels {
                assert_eq!(b.loops(k), a.loops(k) + 1);
                let shift = b.part(k).offset - a.part(k).offset;
                for h in 0..heads {
                    assert_eq!(b.chunk(k, 0, h).len, chunk);
                }
                for l in 0..a.loops(k) {
                    for h in 0..heads {
                        let (x, y) = (a.chunk(k, l, h), b.chunk(k, l + 1, h));
                        assert_eq!((y.offset, y.len), (x.offset + shift + heads * chunk, x.len), "n={n} k={k} l={l}");
                    }
                }
            }
        }
    }

    /// Machines of even and odd node counts (both trees), heads not dividing the GPUs,
    /// one head and a head per GPU, channels with no loop, short last loops; each with
    /// its label.
    fn shapes() -> Vec<(Plan, String)> {
        [
            (2, 8, 8, 16, 1000, 1),
            (2, 8, 1, 3, 257, 5),
            (3, 4, 2, 5, 3, 1),
            (5, 4, 3, 4, 999, 7),
            (6, 3, 2, 2, 64, 3),
            (7, 2, 2, 1, 10, 100),
        ]
        .into_iter()
        .map(|(nodes, g, heads, channels, n, chunk)| {
            let plan = Plan { g, nodes, heads, channels, n, chunk_elems: chunk, align: 2 };
            (plan, format!("{nodes} nodes x {g} GPUs, {heads} heads, {channels} channels"))
        })
        .collect()
    }

    /// Every stream the run builds: each GPU's and each switch agent's, on every channel
    /// that has a loop.
    fn streams(plan: &Plan) -> Vec<Program<'static>> {
        let np = plan.ranks();
        (0..2 * np)
            .flat_map(|r| {
                (0..plan.channels)
                    .filter(|&k| plan.loops(k) > 0)
                    .flat_map(move |k| if r < np { plan.gpu(k, r) } else { plan.agent_streams(k, r - np) })
            })
            .collect()
    }

    /// The closed count is the sends of every GPU's and agent's streams ([`shapes`]).
    #[test]
    fn messages_are_the_programs_sends() {
        for (plan, at) in shapes() {
            let walked = streams(&plan).into_iter().flatten().filter(|op| matches!(op, Op::Send { .. })).count();
            assert_eq!(plan.messages(), walked as u64, "{at}");
        }
    }

    /// The engine load's streams and program bytes are those of every GPU's and agent's
    /// programs, and its messages in flight are at most the run's, all of them where a
    /// channel has one loop, on the machines of the count's test.
    #[test]
    fn engine_load_is_the_programs() {
        for (plan, at) in shapes() {
            let progs = streams(&plan);
            let load = plan.engine_load();
            assert_eq!(load.streams, progs.len() as u64, "{at}");
            let bytes: usize = progs.iter().map(|p| std::mem::size_of_val(&**p)).sum();
            assert_eq!(load.program_bytes, bytes as u64, "{at}");
            let one_loop = (0..plan.channels).all(|k| plan.loops(k) <= 1);
            assert!(load.in_flight <= plan.messages(), "{at}");
            assert!(!one_loop || load.in_flight == plan.messages(), "{at}");
        }
    }

    /// Every channel's loops cover its part exactly, head by head.
    #[test]
    fn chunks_cover_the_part() {
        for (n, heads, chunk) in [(1000, 4, 8), (37, 3, 5), (5, 8, 2), (100_000, 8, 4096)] {
            let plan = Plan { g: 8, nodes: 2, heads, channels: 3, n, chunk_elems: chunk, align: 4 };
            for k in 0..3 {
                let part = plan.part(k);
                let mut at = part.offset;
                for l in 0..plan.loops(k) {
                    for h in 0..heads {
                        let c = plan.chunk(k, l, h);
                        assert_eq!(c.offset, at);
                        at += c.len;
                    }
                }
                assert_eq!(at, part.end());
            }
        }
    }
}
