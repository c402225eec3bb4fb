//! NCCL's ring allreduce as NCCL runs it (docs/nccl.md): the ring order of a GPU
//! cluster, channels, and the chunked loop of its ring kernel.
//!
//! **Order.** NCCL's rings visit the GPUs of a node one after the other and cross to the
//! next node once: ring position `q = node g + j` (g GPUs per node) is GPU `(j + k) mod g`
//! of that node on channel k. Channel k thus enters every node at GPU k and leaves it
//! from GPU k - 1, so the c channels' cross-node messages leave and enter each node
//! through c different GPUs and so through different NICs of a rail-optimised node, as
//! NCCL's graph search makes each channel use its own NIC. One GPU per node (any machine
//! that is not a cluster, unless `gpus_per_node` says otherwise) makes every channel the
//! plain ring 0, 1, ..., P-1.
//!
//! **NVLink rings.** On one node whose GPUs are joined by explicit NVLinks (a cluster of
//! kind `nvlink`, such as the DGX-1's hybrid cube-mesh) the rotated order above would put
//! every channel on the same NVLinks, and some of its hops on no NVLink at all. NCCL's
//! ring search instead lays each channel on its own links: a ring takes its bandwidth off
//! every link it crosses, and the search looks for as many rings as the links can carry,
//! until the channels together use all of a GPU's NVLinks. [`nvlink_rings`] does the
//! same with a ring's share being one NVLink: it looks for the most rings through the
//! run's GPUs (a node's first P) that go only over NVLinks, each directed bundle of `n`
//! links carried by at most `n` rings. Channel k runs on ring `k mod R` of the R found.
//! A node where no such ring exists keeps the rotated order.
//!
//! **Channels.** The vector is cut into c near-equal parts; channel k moves part k around
//! its own ring, as a stream of its own on every rank (they share the rank's ports and
//! compute unit).
//!
//! **The loop.** A channel's part is worked through in loops of P chunks of `chunk`
//! bytes (NCCL's `stepSize * chunkSteps`: 2 MiB with Simple, 32 KiB with LL, 576000 B
//! with LL128): each loop is a whole ring allreduce of its P chunks, 2(P-1) steps, a
//! reduce-scatter in which position q ends with chunk q reduced, then an allgather. The
//! last loop's chunks are `ceil(rest / P)` elements rounded up to 16 bytes, as NCCL's
//! kernel cuts them, so some may be short or empty (an empty message still costs alpha,
//! as NCCL still posts the step). A rank runs its loops one after another (NCCL's loop
//! is sequential in one thread block); the pipeline comes from the ranks being at
//! different steps. With Simple a chunk moves as 2 slices (`chunkSteps / sliceSteps`),
//! a slice passed on as soon as it has arrived.
//!
//! **Flow control.** Sends are eager: NCCL's 8-slot FIFO per peer never fills here, as
//! each rank has at most one chunk of a channel in flight to its next GPU.

use std::sync::Arc;

use super::{AlgoInfo, Algorithm, Blocks, Machine, ParamError, Params, Problem, Topology};
use crate::collective::Collective;
use crate::cost_model::{self, Hockney};
use crate::sim::op::{Action, Op, Program, Rank, Region, per_step};
use crate::topology::Proto;

/// NCCL's `ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS` (4 / 2): the slices a Simple ring
/// chunk moves in. LL and LL128 move a chunk of one step as one slice.
const SIMPLE_SLICES: usize = 2;
/// NCCL's `ALLREDUCE_CHUNKSTEPS`: the steps of the FIFO one Simple ring chunk spans.
const SIMPLE_CHUNK_STEPS: u64 = 4;

/// The protocol names the `protocol` parameter takes, default first.
pub(crate) const PROTOCOLS: [&str; 3] = ["simple", "ll", "ll128"];

/// The protocol of a `protocol` parameter, if given.
pub(crate) fn protocol(params: &mut Params) -> Result<Option<Proto>, ParamError> {
    let given = params.has("protocol");
    let name = params.choice("protocol", &PROTOCOLS)?;
    Ok(given.then(|| Proto::from_name(name).unwrap_or(Proto::Simple)))
}

/// The protocol a run uses: the parameter's, else the machine's (the entry's
/// `protocol:`, [`Topology::protocol`]), else Simple.
pub(crate) fn run_protocol(param: Option<Proto>, topo: &dyn Topology) -> Proto {
    param.or_else(|| topo.protocol()).unwrap_or(Proto::Simple)
}

/// GPUs per node for NCCL's algorithms: `param` if given (not 0), else the cluster's
/// `gpus_per_node`, else a hierarchical machine's innermost group, else 1 (one GPU per
/// node, as on a cluster of one-GPU hosts).
pub(crate) fn gpus_per_node(param: usize, topo: &dyn Topology) -> usize {
    if param > 0 {
        return param;
    }
    if let Some((_, g)) = topo.node_shape() {
        return g.max(1);
    }
    match topo.levels() {
        Some(levels) if levels.len() >= 2 => levels[0].0.max(1),
        _ => 1,
    }
}

/// Why NCCL's node-aware algorithms cannot run with `g` GPUs per node on P ranks.
pub(crate) fn check_nodes(np: usize, g: usize) -> Result<(), String> {
    if !np.is_multiple_of(g) {
        return Err(format!("{np} ranks are not whole nodes of {g} GPUs; gpus_per_node must divide P"));
    }
    Ok(())
}

/// The label of one of NCCL's algorithms: its id, then the parameters that differ from
/// their defaults (`channels` defaults to `default_channels`), as every label writes
/// them (`id(key=value, key=value)`), the protocol last as an entry's `protocol:` is
/// written ([`crate::scenario::ProtocolChoice::label`]): `nccl_ring(channels=2,
/// protocol=ll)` whichever of the two names the protocol.
pub(crate) fn nccl_label(
    id: &str,
    proto: Option<Proto>,
    channels: usize,
    default_channels: usize,
    chunk: Option<u64>,
    gpus_per_node: usize,
) -> String {
    let mut parts = Vec::new();
    if channels != default_channels {
        parts.push(format!("channels={channels}"));
    }
    if let Some(c) = chunk {
        parts.push(format!("chunk={c}"));
    }
    if gpus_per_node != 0 {
        parts.push(format!("gpus_per_node={gpus_per_node}"));
    }
    if let Some(p) = proto.filter(|&p| p != Proto::Simple) {
        parts.push(format!("protocol={}", p.name()));
    }
    if parts.is_empty() { id.into() } else { format!("{id}({})", parts.join(", ")) }
}

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "nccl_ring",
    summary: "NCCL's ring: GPUs of a node consecutive, one ring per channel entering each node at its own GPU, \
              each channel's part in loops of P protocol-sized chunks (reduce-scatter then allgather per loop)",
    source: "NCCL src/graph/search.cc, rings.cc, connect.cc (ring order, channels); src/device/all_reduce.h \
             runRing, src/enqueue.cc calcCollChunking (the loop and chunk sizes); docs/nccl.md",
    requires: "any P >= 1 that is whole nodes of gpus_per_node; any n",
    closed_form: "the recurrence of every channel's 2(P-1) steps per loop, each slice sent when its input has \
                  arrived (and been added), on each rank's port in order (ring_time in nccl_ring.rs); exact with \
                  one NIC and one channel, or with as many NICs as channels (C = 0 if channels > 1) where no \
                  slice ever waits for a port. On a GPU cluster or a hierarchy each hop costs its pair's alpha + \
                  m/B and is booked on the interfaces it leaves and enters by (nccl_streams.rs): exact with one \
                  channel, and with several (C = 0) where no interface side carries more channels than it has \
                  ports and no slice waits for its channel's previous one; bounds otherwise (docs/nccl.md)",
    params: &[
        "protocol=simple: NCCL protocol (simple, ll, ll128): sets the chunk (2 MiB in 2 slices, 32 KiB, 576000 B)",
        "channels=1: rings the vector is cut over, each entering every node at its own GPU",
        "chunk=protocol's: bytes per chunk, overriding the protocol's",
        "gpus_per_node=machine's: GPUs per node for the ring order (default: the cluster's, a hierarchy's innermost \
         group, else 1)",
    ],
    build: |params| Ok(Box::new(NcclRing::from_params(params)?)),
};

/// Registry entry: NCCL's ring reduce-scatter.
pub const RS_INFO: AlgoInfo = AlgoInfo {
    id: "nccl_ring",
    summary: "NCCL's ring reduce-scatter: the allreduce's rings and channels, each loop one chunk of every rank's \
              block added around the ring in P-1 steps, the last step leaving each rank its own block reduced",
    source: "NCCL src/device/reduce_scatter.h runRing, src/enqueue.cc calcCollChunking (REDUCESCATTER_CHUNKSTEPS); \
             docs/nccl.md",
    requires: "any P >= 1 that is whole nodes of gpus_per_node; any n",
    closed_form: "the recurrence of every channel's P-1 steps per loop, as nccl_ring's allreduce (ring_time, \
                  nccl_streams.rs), exact under the same conditions; bounds otherwise",
    params: INFO.params,
    build: |params| Ok(Box::new(NcclRing { collective: Collective::ReduceScatter, ..NcclRing::from_params(params)? })),
};

/// Registry entry: NCCL's ring allgather.
pub const AG_INFO: AlgoInfo = AlgoInfo {
    id: "nccl_ring",
    summary: "NCCL's ring allgather: the allreduce's rings and channels, each loop one chunk of every rank's block \
              passed around the ring in P-1 steps",
    source: "NCCL src/device/all_gather.h runRing, src/enqueue.cc calcCollChunking (ALLGATHER_CHUNKSTEPS); \
             docs/nccl.md",
    requires: "any P >= 1 that is whole nodes of gpus_per_node; any n",
    closed_form: "the recurrence of every channel's P-1 steps per loop, as nccl_ring's allreduce (ring_time, \
                  nccl_streams.rs), exact under the same conditions; bounds otherwise",
    params: INFO.params,
    build: |params| Ok(Box::new(NcclRing { collective: Collective::Allgather, ..NcclRing::from_params(params)? })),
};

/// What `explain nccl_ring` prints above the schedule: each channel's ring, `|` between
/// nodes, and its loops and chunk (of collective `c`: allreduce, reduce-scatter or allgather).
pub(crate) fn describe(
    c: Collective,
    params: &[(String, crate::units::ParamValue)],
    p: &Problem,
    topo: &dyn Topology,
) -> String {
    let Ok(algo) = NcclRing::from_params(&mut Params::new(params.to_vec())) else { return String::new() };
    if !matches!(c, Collective::Allreduce | Collective::ReduceScatter | Collective::Allgather) {
        return String::new();
    }
    let algo = NcclRing { collective: c, ..algo };
    let plan = algo.plan(p, topo);
    if p.ranks == 0 || !p.ranks.is_multiple_of(plan.g) {
        return String::new();
    }
    let mut out = format!(
        "{} GPU(s) per node; chunk {} B{}\n",
        plan.g,
        plan.chunk_elems * plan.elem_bytes,
        if plan.slices > 1 { format!(" in {} slices", plan.slices) } else { String::new() }
    );
    for k in 0..plan.channels {
        let nodes: Vec<String> = (0..p.ranks / plan.g)
            .map(|node| {
                let gpus: Vec<String> = (0..plan.g).map(|j| plan.rank_at(k, node * plan.g + j).to_string()).collect();
                gpus.join(" ")
            })
            .collect();
        let part = plan.part(k);
        let what = match plan.coll {
            Collective::Allreduce => format!("elements [{}, {})", part.offset, part.end()),
            _ => format!("{} element(s) of each block", part.len),
        };
        out.push_str(&format!(
            "channel {k}: ring {} (back to {}); {what} in {} loop(s) of {} chunks\n",
            nodes.join(" | "),
            plan.rank_at(k, 0),
            plan.loops(k),
            p.ranks
        ));
    }
    // The pipeline: what every position does per loop, and what each hop costs.
    if p.ranks > 1 {
        out.push_str(&format!(
            "pipeline: per loop {} steps ({}) of {} slice(s) each; channel 0 sends {} slices per position\n",
            plan.steps(),
            match plan.coll {
                Collective::Allreduce => "P-1 reduce-scatter, P-1 allgather",
                Collective::ReduceScatter => "P-1 reduce-scatter",
                _ => "P-1 allgather",
            },
            plan.slices,
            plan.items(0)
        ));
        let mut hops: Vec<(String, crate::topology::Link)> = Vec::new();
        for q in 0..p.ranks {
            let (a, b) = (plan.rank_at(0, q), plan.rank_at(0, q + 1));
            let kind = if a / plan.g == b / plan.g { "inside a node" } else { "across nodes" };
            let l = topo.link(a, b);
            if !hops.iter().any(|(k, h)| k == kind && *h == l) {
                hops.push((kind.to_string(), l));
            }
        }
        for (kind, l) in hops {
            out.push_str(&format!(
                "  hop {kind}: alpha {} + chunk / {}\n",
                crate::units::fmt_time(l.alpha),
                crate::units::fmt_bandwidth(l.bandwidth)
            ));
        }
        if topo.uniform().is_none()
            && let Some(why) = super::nccl_streams::ring_contention(&plan, topo)
        {
            out.push_str(&format!("no exact form: {why}\n"));
        }
    }
    out
}

/// See the module docs.
#[derive(Debug)]
pub struct NcclRing {
    /// The protocol (sets the chunk), if the parameter names one; else the machine's.
    pub proto: Option<Proto>,
    /// Channels, each its own ring over its part of the vector.
    pub channels: usize,
    /// Bytes per chunk, if not the protocol's.
    pub chunk: Option<u64>,
    /// GPUs per node for the ring order (0: the machine's).
    pub gpus_per_node: usize,
    /// The collective: the allreduce, or one of its halves (reduce-scatter, allgather).
    pub collective: Collective,
}

impl NcclRing {
    /// Built from its parameters (see [`INFO`]), as an allreduce.
    pub fn from_params(params: &mut Params) -> Result<NcclRing, ParamError> {
        let proto = protocol(params)?;
        let channels = params.count("channels", 1)?;
        // NCCL's MAXCHANNELS; more would only make a schedule too large to build.
        if channels > 64 {
            return Err(ParamError::new(Some("channels"), format!("'channels' must be 1 to 64, not {channels}")));
        }
        let chunk = params.size("chunk")?;
        let gpus_per_node = params.count("gpus_per_node", 0)?;
        Ok(NcclRing { proto, channels, chunk, gpus_per_node, collective: Collective::Allreduce })
    }

    /// Bytes per chunk with protocol `proto`: the parameter, or NCCL's for the protocol.
    pub fn chunk_bytes(&self, proto: Proto) -> u64 {
        self.chunk.unwrap_or(match proto {
            Proto::Simple => Proto::Simple.chunk_bytes() * SIMPLE_CHUNK_STEPS,
            p => p.chunk_bytes(),
        })
    }

    /// The schedule of `p` on `topo`.
    pub(crate) fn plan(&self, p: &Problem, topo: &dyn Topology) -> RingPlan {
        let e = p.elem_bytes.max(1);
        let proto = run_protocol(self.proto, topo);
        let g = gpus_per_node(self.gpus_per_node, topo);
        // NVLink rings only where the ranks are one node (NCCL's rings across nodes enter
        // and leave each node through its NICs, which the rotated order keeps).
        let rings = match topo.nvlinks() {
            Some(links) if p.ranks == g && g > 2 && self.gpus_per_node == 0 => {
                let r = nvlink_rings(g, links);
                (!r.is_empty()).then(|| Arc::new(Rings::new(r)))
            }
            _ => None,
        };
        let serial = rings.is_some() && topo.nvlinks_shared();
        // NICs per node matter only across nodes, where each channel enters and leaves
        // a node through one NIC.
        let nics = match topo.node_nics() {
            Some(k) if p.ranks > g && self.gpus_per_node == 0 => k,
            _ => 0,
        };
        RingPlan {
            coll: self.collective,
            np: p.ranks,
            g,
            nics,
            rings,
            channels: self.channels,
            n: p.elems,
            elem_bytes: e,
            chunk_elems: (self.chunk_bytes(proto) as usize / e).max(1),
            align: (16 / e).max(1),
            slices: if proto == Proto::Simple && self.chunk.is_none() { SIMPLE_SLICES } else { 1 },
            serial,
        }
    }
}

/// Rings found over a node's NVLinks ([`nvlink_rings`]): each ring's GPUs in order, and
/// every GPU's position on each ring.
#[derive(Debug)]
pub(crate) struct Rings {
    order: Vec<Vec<usize>>,
    position: Vec<Vec<usize>>,
}

impl Rings {
    fn new(order: Vec<Vec<usize>>) -> Rings {
        let position = order
            .iter()
            .map(|ring| {
                let mut pos = vec![0; ring.len()];
                for (q, &r) in ring.iter().enumerate() {
                    pos[r] = q;
                }
                pos
            })
            .collect();
        Rings { order, position }
    }
}

/// The most rings through GPUs `0..g` of a node that go over NVLinks only (`links`: the
/// node's bundles `(a, b, count)`), each directed bundle of `count` links carried by at
/// most `count` rings; empty if no ring exists. Each ring starts at GPU 0 and goes on to
/// the GPU with the most unused links (ties to the lowest), backtracking where it is
/// stuck, as NCCL's search orders its candidates by remaining bandwidth; sets of rings
/// are tried in that order too, with a fixed budget of steps, and the largest found is
/// kept (it stops at the bound: the fewest NVLinks any GPU has to the others).
pub(crate) fn nvlink_rings(g: usize, links: &[(usize, usize, u32)]) -> Vec<Vec<usize>> {
    if g < 2 {
        return Vec::new();
    }
    let mut cap = vec![0u32; g * g];
    for &(a, b, c) in links {
        if a < g && b < g {
            cap[a * g + b] = c;
            cap[b * g + a] = c;
        }
    }
    let bound = (0..g).map(|a| (0..g).map(|b| cap[a * g + b]).sum::<u32>()).min().unwrap_or(0) as usize;
    let mut search = RingSearch { g, cap, bound, budget: 200_000, rings: Vec::new(), best: Vec::new() };
    search.more();
    search.best
}

struct RingSearch {
    g: usize,
    cap: Vec<u32>,
    bound: usize,
    budget: usize,
    rings: Vec<Vec<usize>>,
    best: Vec<Vec<usize>>,
}

impl RingSearch {
    /// Add rings to `rings` in every way the budget allows; true when the bound is met.
    fn more(&mut self) -> bool {
        if self.rings.len() > self.best.len() {
            self.best = self.rings.clone();
        }
        if self.best.len() >= self.bound {
            return true;
        }
        let mut ring = vec![0];
        let mut seen = vec![false; self.g];
        seen[0] = true;
        self.extend(&mut ring, &mut seen)
    }

    /// Grow the ring being built; at its end, close it, take its links and look for more.
    fn extend(&mut self, ring: &mut Vec<usize>, seen: &mut [bool]) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        let g = self.g;
        let last = ring[ring.len() - 1];
        if ring.len() == g {
            if self.cap[last * g] == 0 {
                return false;
            }
            let hops: Vec<(usize, usize)> = (0..g).map(|q| (ring[q], ring[(q + 1) % g])).collect();
            for &(a, b) in &hops {
                self.cap[a * g + b] -= 1;
            }
            self.rings.push(ring.clone());
            let done = self.more();
            self.rings.pop();
            for &(a, b) in &hops {
                self.cap[a * g + b] += 1;
            }
            return done;
        }
        let mut next: Vec<usize> = (0..g).filter(|&b| !seen[b] && self.cap[last * g + b] > 0).collect();
        next.sort_by_key(|&b| (std::cmp::Reverse(self.cap[last * g + b]), b));
        for b in next {
            seen[b] = true;
            ring.push(b);
            let done = self.extend(ring, seen);
            ring.pop();
            seen[b] = false;
            if done {
                return true;
            }
        }
        false
    }
}

/// One run's schedule: what every rank's program, the closed form and `explain` read.
#[derive(Clone, Debug)]
pub(crate) struct RingPlan {
    /// The collective: allreduce (both halves per loop), reduce-scatter or allgather (one).
    pub coll: Collective,
    /// P.
    pub np: usize,
    /// GPUs per node.
    pub g: usize,
    /// NICs per node when the ranks span nodes of a cluster (0: not known or one node).
    pub nics: usize,
    /// Rings over a node's NVLinks, channel k on ring `k mod R`; `None`: the rotated order.
    pub rings: Option<Arc<Rings>>,
    /// Channels.
    pub channels: usize,
    /// n.
    pub n: usize,
    /// e.
    pub elem_bytes: usize,
    /// Elements of a whole loop's chunk.
    pub chunk_elems: usize,
    /// The last loop's chunks are a multiple of this many elements (16 bytes).
    pub align: usize,
    /// Pieces a chunk moves in.
    pub slices: usize,
    /// A channel sends its next slice only once its previous one has arrived: on NVLink
    /// rings whose bundles the messages share ([`Topology::nvlinks_shared`]).
    pub serial: bool,
}

/// What position q does in one item of its channel's program: send `send` to the next
/// position, receive `recv` from the previous one (added or copied), then maybe wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub send: Region,
    pub recv: Region,
    pub action: Action,
    pub wait: Wait,
}

/// What a channel's program waits for at the end of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Nothing: the next item sends what this rank already has.
    None,
    /// The receive of item `i` (the input of the next item's send).
    Item(usize),
    /// Every receive so far: the end of a loop.
    All,
}

impl RingPlan {
    /// Channel k's part of the vector (of the allreduce's whole vector; of the largest
    /// block, block 0, for a reduce-scatter or an allgather).
    pub fn part(&self, k: usize) -> Region {
        match self.coll {
            Collective::Allreduce => Blocks::new(self.n, self.channels).get(k),
            _ => self.block_part(0, k),
        }
    }

    /// Channel k's part of block b of the vector (reduce-scatter, allgather): NCCL cuts
    /// every rank's block alike over the channels.
    fn block_part(&self, b: usize, k: usize) -> Region {
        let blk = Blocks::new(self.n, self.np).get(b);
        let part = Blocks::new(blk.len, self.channels).get(k);
        Region::vec(blk.offset + part.offset, part.len)
    }

    /// Loops channel k runs: of P chunks of its part (allreduce), of one chunk of its
    /// part of every block (reduce-scatter, allgather: as many as block 0, the longest,
    /// needs).
    pub fn loops(&self, k: usize) -> usize {
        match self.coll {
            Collective::Allreduce => self.part(k).len.div_ceil(self.np * self.chunk_elems),
            _ => self.part(k).len.div_ceil(self.chunk_elems),
        }
    }

    /// Ring steps per loop: 2(P-1) for the allreduce, P-1 for either half.
    pub fn steps(&self) -> usize {
        match self.coll {
            Collective::Allreduce => 2 * (self.np - 1),
            _ => self.np - 1,
        }
    }

    /// Items (slices sent) per loop: [`RingPlan::steps`] of `slices` each.
    pub fn per_loop(&self) -> usize {
        self.steps() * self.slices
    }

    /// Items of channel k's program.
    pub fn items(&self, k: usize) -> usize {
        if self.np <= 1 { 0 } else { self.loops(k) * self.per_loop() }
    }

    /// The rank at ring position q of channel k.
    pub fn rank_at(&self, k: usize, q: usize) -> usize {
        let q = q % self.np;
        if let Some(r) = &self.rings {
            return r.order[k % r.order.len()][q];
        }
        let (node, j) = (q / self.g, q % self.g);
        node * self.g + (j + self.entry(k)) % self.g
    }

    /// The GPU at which channel k enters every node; it leaves from the GPU before it
    /// (`entry - 1 mod g`). NCCL's ring search gives each channel one NIC, which it enters
    /// and leaves the node through. With one NIC per GPU that is GPU `k mod g`, each
    /// channel on its own rails. Where `b = g / K` GPUs share each of K NICs (GPUs
    /// `n b .. (n+1) b` on NIC n), channel k takes NIC `k mod K` and enters at the second
    /// GPU of that NIC's block or a later one, so that the GPU before it, which it leaves
    /// from, is on the same NIC: every NIC then carries one channel in and one out,
    /// where entering at GPU `k mod g` would bring two channels in through NIC 0 and none
    /// through the last.
    pub fn entry(&self, k: usize) -> usize {
        let kn = self.nics;
        if kn == 0 || kn >= self.g || !self.g.is_multiple_of(kn) {
            return k % self.g;
        }
        let b = self.g / kn;
        (k % kn) * b + 1 + (k / kn) % (b - 1)
    }

    /// Rank r's ring position on channel k.
    pub fn position(&self, k: usize, r: usize) -> usize {
        if let Some(rings) = &self.rings {
            return rings.position[k % rings.position.len()][r];
        }
        let (node, local) = (r / self.g, r % self.g);
        node * self.g + (local + self.g - self.entry(k)) % self.g
    }

    /// Channel k's items, with what every item of the channel shares worked out once.
    pub fn channel(&self, k: usize) -> RingChannel {
        let (np, channels) = (self.np, self.channels);
        let rings = self.rings.clone();
        let ring = rings.as_ref().map_or(0, |r| k % r.order.len());
        let mut ch = RingChannel {
            k,
            channels,
            np,
            g: self.g,
            entry: self.entry(k),
            rings,
            ring,
            coll: self.coll,
            items: self.items(k),
            steps: self.steps(),
            slices: self.slices,
            chunk_elems: self.chunk_elems,
            part: Region::vec(0, 0),
            whole: np * self.chunk_elems,
            last_cc: 0,
            block_base: self.n / np,
            block_extra: self.n % np,
            in_block: [Region::vec(0, 0); 2],
        };
        match self.coll {
            Collective::Allreduce => {
                // Only the last loop can hold less than P whole chunks; its chunks are
                // cut from its rest, the same in every item of the loop.
                let part = self.part(k);
                let loops = part.len.div_ceil(ch.whole);
                let rest = part.len - loops.saturating_sub(1) * ch.whole;
                ch.part = part;
                ch.last_cc = rest.div_ceil(np).div_ceil(self.align) * self.align;
            }
            _ => {
                // Blocks have one of two lengths, so a channel's part of a block sits at
                // one of two places within it.
                for (i, len) in [ch.block_base, ch.block_base + 1].into_iter().enumerate() {
                    ch.in_block[i] = Blocks::new(len, channels).get(k);
                }
            }
        }
        ch
    }

    /// Rank r's program on channel k.
    fn program(self, k: usize, r: usize) -> impl Iterator<Item = Op> + Send {
        let q = self.position(k, r);
        let right = self.rank_at(k, q + 1) as Rank;
        let left = self.rank_at(k, q + self.np - 1) as Rank;
        // A channel is one thread block writing its slices to the next GPU one after the
        // other. Where several rings share an NVLink bundle with no port holding a
        // second message back (the flow model), a channel with two slices in flight
        // would take two shares of it and starve the ring beside it; there a slice leaves
        // when the channel's previous one has arrived.
        let serial = self.serial;
        let ch = self.channel(k);
        per_step(ch.indices(), move |at| {
            let it = ch.item(q, at);
            let tag = ch.tag(at.s);
            // The step's ops written in place into one array: built as a chain of options
            // and arrays, each op was copied through the chain's parts and read back in
            // blocks that straddled the stores of its fields, a stall each.
            let mut ops = [Op::WaitAll; 4];
            let mut n = 0;
            if serial && at.s > 0 {
                ops[0] = Op::WaitSends(0);
                n = 1;
            }
            ops[n] = Op::send(right, tag, it.send);
            ops[n + 1] = Op::Recv { from: left, tag, dst: it.recv, action: it.action };
            n += 2;
            match it.wait {
                Wait::None => {}
                Wait::Item(i) => {
                    ops[n] = Op::Wait(i as u32);
                    n += 1;
                }
                Wait::All => {
                    ops[n] = Op::WaitAll;
                    n += 1;
                }
            }
            ops.into_iter().take(n)
        })
    }
}

/// Where item s of a channel's program falls: loop `l`, ring step `t` of the loop, slice
/// `j` of the step's chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ItemIndex {
    /// The item.
    pub s: usize,
    /// Its loop.
    pub l: usize,
    /// Its step within the loop.
    pub t: usize,
    /// Its slice within the step.
    pub j: usize,
}

/// One channel of a [`RingPlan`], with what all its items share worked out once: its
/// part's place, its ring's entry GPU, the two places its part can have in a block. A
/// program makes one item per message, and dividing for each of these every time was
/// most of the program's cost (several divisions per chunk, two chunks per item).
#[derive(Clone, Debug)]
pub(crate) struct RingChannel {
    k: usize,
    channels: usize,
    np: usize,
    g: usize,
    entry: usize,
    rings: Option<Arc<Rings>>,
    ring: usize,
    coll: Collective,
    items: usize,
    steps: usize,
    slices: usize,
    chunk_elems: usize,
    /// Allreduce: the channel's part of the vector, the elements of a whole loop, and the
    /// chunk of the last loop if it holds less.
    part: Region,
    whole: usize,
    last_cc: usize,
    /// Reduce-scatter and allgather: the ranks' blocks (`block_base` elements, one more
    /// for the first `block_extra`), and the channel's part within a block of each of
    /// the two lengths.
    block_base: usize,
    block_extra: usize,
    in_block: [Region; 2],
}

impl RingChannel {
    /// Every item of the channel's program in order, counted rather than divided out.
    pub fn indices(&self) -> Indices {
        Indices { next: ItemIndex { s: 0, l: 0, t: 0, j: 0 }, end: self.items, steps: self.steps, slices: self.slices }
    }

    /// Message tag of item s: apart from every other channel's.
    pub fn tag(&self, s: usize) -> u32 {
        (s * self.channels + self.k) as u32
    }

    /// The rank at ring position q < P.
    #[inline(always)]
    fn rank_at(&self, q: usize) -> usize {
        if let Some(r) = &self.rings {
            return r.order[self.ring][q];
        }
        if self.g == 1 {
            return q;
        }
        let j = q % self.g;
        let k = j + self.entry;
        q - j + if k >= self.g { k - self.g } else { k }
    }

    /// Chunk i of loop l. Allreduce: the i-th of the loop's P pieces of the channel's
    /// part. Reduce-scatter and allgather: the loop's chunk of the channel's part of the
    /// block of the rank at ring position i (below P: the block that position ends with,
    /// or starts with), possibly short or empty in the last loop, as NCCL's kernel takes
    /// `min(chunk, rest)` of each block.
    #[inline(always)]
    pub fn chunk(&self, l: usize, i: usize) -> Region {
        if self.coll != Collective::Allreduce {
            let b = self.rank_at(i);
            let block = b * self.block_base + b.min(self.block_extra);
            let part = self.in_block[usize::from(b < self.block_extra)];
            let start = (l * self.chunk_elems).min(part.len);
            return Region::vec(block + part.offset + start, self.chunk_elems.min(part.len - start));
        }
        let rest = self.part.len - l * self.whole;
        let cc = if rest < self.whole { self.last_cc } else { self.chunk_elems };
        let start = (i * cc).min(rest);
        let len = cc.min(rest - start);
        Region::vec(self.part.offset + l * self.whole + start, len)
    }

    /// Slice j of chunk `c`.
    #[inline(always)]
    fn slice(&self, c: Region, j: usize) -> Region {
        // Simple's two slices by halving, where a division by the plan's `slices` would
        // be a real one; the first slice takes the odd element, as `Blocks` cuts.
        let (q, r) = match self.slices {
            1 => return c,
            2 => (c.len / 2, c.len % 2),
            n => (c.len / n, c.len % n),
        };
        Region::vec(c.offset + j * q + j.min(r), q + usize::from(j < r))
    }

    /// Item `at` at ring position q.
    #[inline(always)]
    pub fn item(&self, q: usize, at: ItemIndex) -> Item {
        let np = self.np;
        // Reduce-scatter steps send chunk q-1-t (position q ends with chunk q reduced);
        // allgather steps send chunk q-t', starting with the one just finished (or, in an
        // allgather alone, with its own). What arrives is the chunk before the one sent.
        // Each is below 2P, so one subtraction takes it mod P.
        let t = if self.coll == Collective::Allgather { at.t + np - 1 } else { at.t };
        let (x, action) =
            if t < np - 1 { (q + np - 1 - t, Action::Reduce) } else { (q + np - (t - (np - 1)), Action::Copy) };
        let send = if x >= np { x - np } else { x };
        let recv = if send == 0 { np - 1 } else { send - 1 };
        let last = at.j + 1 == self.slices;
        let wait = if last && at.t + 1 == self.steps {
            Wait::All
        } else if last || at.t > 0 {
            Wait::Item(at.s + 1 - self.slices)
        } else {
            Wait::None
        };
        Item {
            send: self.slice(self.chunk(at.l, send), at.j),
            recv: self.slice(self.chunk(at.l, recv), at.j),
            action,
            wait,
        }
    }
}

/// The items of a channel in order ([`RingChannel::indices`]).
#[derive(Clone, Debug)]
pub(crate) struct Indices {
    next: ItemIndex,
    end: usize,
    steps: usize,
    slices: usize,
}

impl Iterator for Indices {
    type Item = ItemIndex;

    #[inline]
    fn next(&mut self) -> Option<ItemIndex> {
        if self.next.s >= self.end {
            return None;
        }
        let at = self.next;
        let n = &mut self.next;
        n.s += 1;
        n.j += 1;
        if n.j == self.slices {
            n.j = 0;
            n.t += 1;
            if n.t == self.steps {
                n.t = 0;
                n.l += 1;
            }
        }
        Some(at)
    }
}

impl Algorithm for NcclRing {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        nccl_label(INFO.id, self.proto, self.channels, 1, self.chunk, self.gpus_per_node)
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        let plan = self.plan(p, m.topo);
        check_nodes(p.ranks, plan.g)?;
        let items = (0..self.channels).map(|k| plan.items(k)).max().unwrap_or(0);
        if items.saturating_mul(self.channels) > u32::MAX as usize {
            return Err(format!(
                "{items} messages per channel over {} channels is more than the tags can tell apart; use a larger chunk",
                self.channels
            ));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = self.plan(&p, topo);
        (0..self.channels)
            .filter(|&k| plan.items(k) > 0)
            .map(|k| Box::new(plan.clone().program(k, rank as usize)) as Program<'_>)
            .collect()
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p, m.topo);
        match cost_model::Hockney::of(m) {
            Some(h) => ring_time(&plan, &h),
            // Pairs that differ (a GPU cluster, a hierarchy): the same schedule booked
            // on the interfaces each hop takes.
            None => super::nccl_streams::ring_time(&plan, m.topo, m.cost_per_byte),
        }
        .map(|t| (t, super::EXACT))
    }

    /// Where there is no form: the bounds of `nccl_streams::ring_bounds` (docs/nccl.md,
    /// "Bounds"), on every machine.
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        Some(super::nccl_streams::ring_bounds(&self.plan(p, m.topo), m.topo, m.cost_per_byte))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::Allgather { 0 } else { p.ranks.saturating_sub(1) }
    }

    /// One pass around the ring is P-1 steps, of which one per node boundary crosses
    /// nodes (NCCL's `nInterSteps`): P - N inside a node on N nodes; the allreduce
    /// makes two passes.
    fn start_steps(&self, p: &Problem, topo: &dyn Topology) -> usize {
        let g = gpus_per_node(self.gpus_per_node, topo).max(1);
        if p.ranks < 2 || !p.ranks.is_multiple_of(g) {
            return 0;
        }
        let inside = p.ranks - p.ranks / g;
        if self.collective == Collective::Allreduce { 2 * inside } else { inside }
    }
}

// ---------------------------------------------------------------------------------------
// Closed form: the recurrence of the schedule above in the ideal model (docs/nccl.md),
// evaluated without the engine. It reads the schedule from the plan (which chunk each
// message carries, what it waits for) and applies the machine model's rules to it: a
// message starts when it is issued and its sender's port (and its receiver's) is free,
// costs `alpha + m/B`, and a received chunk that is added takes `m C` on the receiver's
// one compute unit, in arrival order.

/// The receives of one channel's positions as its recurrences book them (here and in
/// `nccl_streams`): the done times of each position's last `slices` receives and of its
/// current loop, and the latest done time of all.
pub(crate) struct Receives {
    slices: usize,
    done: Vec<f64>,
    loop_done: Vec<f64>,
    /// The latest receive done so far, over every channel booked since [`Receives::new`].
    pub end: f64,
}

impl Receives {
    /// Nothing received yet by any of `np` positions.
    pub fn new(np: usize, slices: usize) -> Self {
        Receives { slices, done: vec![0.0; np * slices], loop_done: vec![0.0; np], end: 0.0 }
    }

    /// Forget the positions' receives (not `end`), for the next channel.
    pub fn clear(&mut self) {
        self.done.fill(0.0);
        self.loop_done.fill(0.0);
    }

    /// Position q's receive of item s is done at `d`: its next item is issued no sooner
    /// than what `wait` waits for is done.
    pub fn record(&mut self, q: usize, s: usize, d: f64, wait: Wait, issue: &mut f64) {
        let slices = self.slices;
        self.done[q * slices + s % slices] = d;
        self.loop_done[q] = self.loop_done[q].max(d);
        self.end = self.end.max(d);
        match wait {
            Wait::None => {}
            Wait::Item(i) => *issue = issue.max(self.done[q * slices + i % slices]),
            Wait::All => *issue = issue.max(self.loop_done[q]),
        }
    }
}

/// One channel of `nccl_ring`, every rank holding one port for it: the finish time, and
/// whether any slice waited for its sender's port (was issued before the sender's
/// previous slice of the channel had arrived).
///
/// Position q sends item s to q + 1 only and receives it from q - 1 only, so with one
/// port its messages leave and arrive in program order: slice s starts at
/// `max(issue, end of q's slice s-1)` and arrives `T(m)` later; a reduced slice is done
/// `R(m)` after both its arrival and the position's previous addition. Item s + 1 is
/// issued when the receive it waits for is done (the item `slices` before, or the whole
/// loop at a loop's end).
fn ring_channel(plan: &RingPlan, k: usize, h: &Hockney) -> (f64, bool) {
    let np = plan.np;
    let items = plan.items(k);
    if items == 0 {
        return (0.0, false);
    }
    let e = plan.elem_bytes as f64;
    // Per position: when its next item is issued, when its port is free, when its
    // compute unit is free, and its receives.
    let mut issue = vec![0.0f64; np];
    let mut port = vec![0.0f64; np];
    let mut compute = vec![0.0f64; np];
    let mut recv = Receives::new(np, plan.slices);
    let mut arrive = vec![0.0f64; np];
    let mut waited = false;
    let ch = plan.channel(k);
    for at in ch.indices() {
        // Slice s from every position to the next.
        for q in 0..np {
            let it = ch.item(q, at);
            let start = issue[q].max(port[q]);
            waited |= port[q] > issue[q];
            port[q] = start + h.t(it.send.len as f64 * e);
            arrive[(q + 1) % np] = port[q];
        }
        for q in 0..np {
            let it = ch.item(q, at);
            let d = match it.action {
                Action::Reduce => {
                    compute[q] = compute[q].max(arrive[q]) + h.r(it.recv.len as f64 * e);
                    compute[q]
                }
                Action::Copy => arrive[q],
            };
            recv.record(q, at.s, d, it.wait, &mut issue[q]);
        }
    }
    (recv.end, waited)
}

/// `nccl_ring`'s closed form on a machine whose every pair is joined alike: the latest channel's
/// finish ([`ring_channel`]). Exact when the ports serve each channel's slices as the
/// recurrence books them: with one channel and one NIC always (one sender and one
/// receiver per port, in order); with c channels, at least c NICs and, for c > 1, C = 0
/// (so the channels do not share a compute unit), whenever no slice waited for its
/// channel's port, since then every rank has at most one slice of each channel in flight
/// each way and no port is ever short. `None` otherwise.
pub(crate) fn ring_time(plan: &RingPlan, h: &Hockney) -> Option<f64> {
    if plan.np <= 1 {
        return Some(0.0);
    }
    let single = plan.channels == 1 && h.nics == 1;
    if !single && (h.nics < plan.channels as u32 || (plan.channels > 1 && h.c > 0.0)) {
        return None;
    }
    let mut end = 0.0f64;
    for k in 0..plan.channels {
        let (t, waited) = ring_channel(plan, k, h);
        if waited && !single {
            return None;
        }
        end = end.max(t);
    }
    Some(end)
}

/// The same on the symmetric case, in closed arithmetic, as a check of the recurrence:
/// one channel, P dividing n, n a whole number of loops of P chunks of `chunk` elements,
/// one slice per chunk, C = 0. Every rank then does the same at the same time: each of
/// the L loops is a ring of 2(P-1) steps of one chunk, `2(P-1) L T(chunk)`.
pub fn ring_symmetric(np: usize, loops: usize, chunk_bytes: f64, h: &Hockney) -> f64 {
    2.0 * (np as f64 - 1.0) * loops as f64 * h.t(chunk_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(np: usize, g: usize, channels: usize, n: usize, chunk_elems: usize, slices: usize) -> RingPlan {
        RingPlan {
            coll: Collective::Allreduce,
            np,
            g,
            rings: None,
            channels,
            n,
            elem_bytes: 4,
            chunk_elems,
            align: 4,
            slices,
            serial: false,
            nics: 0,
        }
    }

    /// Every channel's ring visits every rank once, a node's GPUs consecutively, entering
    /// node after node at GPU k mod g.
    #[test]
    fn ring_order_is_node_aware() {
        let p = plan(12, 4, 4, 1000, 8, 1);
        for k in 0..4 {
            let ranks: Vec<usize> = (0..12).map(|q| p.rank_at(k, q)).collect();
            let mut sorted = ranks.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..12).collect::<Vec<_>>());
            for (q, &r) in ranks.iter().enumerate() {
                assert_eq!(p.position(k, r), q);
                assert_eq!(r / 4, q / 4, "node-consecutive");
            }
            // Entering each node at GPU k, leaving from GPU k - 1.
            for node in 0..3 {
                assert_eq!(ranks[node * 4] % 4, k % 4);
                assert_eq!(ranks[node * 4 + 3] % 4, (k + 3) % 4);
            }
        }
    }

    /// With K NICs shared by g GPUs (GPUs n g/K .. (n+1) g/K on NIC n), channel k enters
    /// and leaves every node through NIC k mod K, so K channels put one channel on each
    /// NIC each way (by hand: 4 GPUs on 2 NICs, channel 0 enters at GPU 1 and leaves from
    /// GPU 0, channel 1 enters at 3 and leaves from 2).
    #[test]
    fn channels_enter_and_leave_through_one_nic() {
        for (g, kn, want) in [
            (4, 2, vec![1, 3, 1, 3]),
            (8, 4, vec![1, 3, 5, 7, 1]),
            (8, 2, vec![1, 5, 2, 6, 3, 7, 1]),
            (8, 8, vec![0, 1, 2, 3, 4, 5, 6, 7, 0]),
            (4, 1, vec![1, 2, 3, 1]),
        ] {
            let p = RingPlan { nics: kn, ..plan(3 * g, g, want.len(), 1000, 8, 1) };
            let nic = |gpu: usize| gpu * kn / g;
            for (k, &e) in want.iter().enumerate() {
                assert_eq!(p.entry(k), e, "g {g} K {kn} channel {k}");
                let ranks: Vec<usize> = (0..3 * g).map(|q| p.rank_at(k, q)).collect();
                for node in 0..3 {
                    let (first, last) = (ranks[node * g] % g, ranks[node * g + g - 1] % g);
                    assert_eq!(first, e);
                    if kn < g {
                        assert_eq!(nic(first), k % kn);
                        assert_eq!(nic(last), k % kn, "g {g} K {kn} channel {k} leaves through its NIC");
                    }
                }
                for (q, &r) in ranks.iter().enumerate() {
                    assert_eq!(p.position(k, r), q);
                }
            }
        }
        // Without NICs (one node, or a machine without them) the rotated order.
        assert_eq!(plan(8, 4, 2, 1000, 8, 1).entry(1), 1);
    }

    /// The DGX-1's hybrid cube-mesh (NVLink counts per pair).
    const DGX1: [(usize, usize, u32); 16] = [
        (0, 1, 1),
        (0, 2, 1),
        (0, 3, 2),
        (0, 4, 2),
        (1, 2, 2),
        (1, 3, 1),
        (1, 5, 2),
        (2, 3, 2),
        (2, 6, 1),
        (3, 7, 1),
        (4, 5, 1),
        (4, 6, 1),
        (4, 7, 2),
        (5, 6, 2),
        (5, 7, 1),
        (6, 7, 2),
    ];

    /// Rings over NVLinks: each visits every GPU once over direct links only, no directed
    /// bundle carries more rings than it has links, and the search reaches the bound
    /// (every NVLink of the GPU with the fewest used) on the cube-mesh's 8 GPUs and on
    /// its first 4.
    #[test]
    fn nvlink_rings_use_distinct_links() {
        for (g, want) in [(8, 6), (4, 4), (3, 2)] {
            let rings = nvlink_rings(g, &DGX1);
            assert_eq!(rings.len(), want, "g = {g}: {rings:?}");
            let mut used = std::collections::BTreeMap::new();
            for ring in &rings {
                let mut sorted = ring.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..g).collect::<Vec<_>>());
                for q in 0..g {
                    let (a, b) = (ring[q], ring[(q + 1) % g]);
                    *used.entry((a, b)).or_insert(0u32) += 1;
                }
            }
            for ((a, b), n) in used {
                let c = DGX1.iter().find(|l| (l.0, l.1) == (a.min(b), a.max(b))).map_or(0, |l| l.2);
                assert!(n <= c, "g = {g}: {a}->{b} carries {n} rings over {c} links");
            }
        }
        // GPUs 0, 1 and 6 share no ring over direct NVLinks.
        assert!(nvlink_rings(3, &[(0, 1, 1), (1, 2, 1)]).is_empty());
    }

    /// A channel's loops cover its part exactly; the last loop's chunks are 16-byte
    /// multiples but for the very last.
    #[test]
    fn chunks_cover_the_part() {
        for (n, np, chunk) in [(1000, 4, 8), (37, 3, 5), (5, 8, 2), (64, 4, 16)] {
            let p = plan(np, 1, 3, n, chunk, 2);
            let mut covered = 0;
            for k in 0..3 {
                let part = p.part(k);
                let mut at = part.offset;
                for l in 0..p.loops(k) {
                    for i in 0..np {
                        let c = p.channel(k).chunk(l, i);
                        assert_eq!(c.offset, at, "n={n} P={np} k={k} l={l} i={i}");
                        at += c.len;
                    }
                }
                assert_eq!(at, part.end());
                covered += part.len;
            }
            assert_eq!(covered, n);
        }
    }

    /// Item s of channel k at position q worked out from the definitions, every block,
    /// part and position divided out anew: what the programs sent before the channel's
    /// shares were worked out once ([`RingChannel`]).
    fn item_by_division(p: &RingPlan, k: usize, q: usize, s: usize) -> Item {
        let np = p.np;
        let block_part = |b: usize| {
            let blk = Blocks::new(p.n, np).get(b);
            let part = Blocks::new(blk.len, p.channels).get(k);
            Region::vec(blk.offset + part.offset, part.len)
        };
        let chunk = |l: usize, i: usize| {
            if p.coll != Collective::Allreduce {
                let part = block_part(p.rank_at(k, i));
                let start = (l * p.chunk_elems).min(part.len);
                return Region::vec(part.offset + start, p.chunk_elems.min(part.len - start));
            }
            let part = p.part(k);
            let whole = np * p.chunk_elems;
            let rest = part.len - l * whole;
            let cc = if rest < whole { rest.div_ceil(np).div_ceil(p.align) * p.align } else { p.chunk_elems };
            let start = (i * cc).min(rest);
            Region::vec(part.offset + l * whole + start, cc.min(rest - start))
        };
        let per_loop = p.per_loop();
        let (l, u) = (s / per_loop, s % per_loop);
        let (t, j) = (u / p.slices, u % p.slices);
        let t = if p.coll == Collective::Allgather { t + np - 1 } else { t };
        let (send, action) = if t < np - 1 {
            ((q + 2 * np - 1 - t) % np, Action::Reduce)
        } else {
            ((q + 2 * np - (t - (np - 1))) % np, Action::Copy)
        };
        let recv = (send + np - 1) % np;
        let piece = |i: usize| {
            let c = chunk(l, i);
            let b = Blocks::new(c.len, p.slices).get(j);
            Region::vec(c.offset + b.offset, b.len)
        };
        let wait = if u + 1 == per_loop {
            Wait::All
        } else if u + 1 >= p.slices {
            Wait::Item(s + 1 - p.slices)
        } else {
            Wait::None
        };
        Item { send: piece(send), recv: piece(recv), action, wait }
    }

    /// A channel's items, with its shares worked out once and its items counted in order,
    /// are the items divided out from the definitions, on every collective, ring order
    /// (one GPU a node, nodes of g GPUs behind shared NICs, NVLink rings), slice count,
    /// and vector lengths from empty through blocks of two lengths to several loops.
    #[test]
    fn channel_items_are_the_items_divided_out() {
        let dgx1 = Arc::new(Rings::new(nvlink_rings(8, &DGX1)));
        let mut checked = 0usize;
        for coll in [Collective::Allreduce, Collective::ReduceScatter, Collective::Allgather] {
            for (np, g, nics, rings) in [
                (2, 1, 0, None),
                (3, 1, 0, None),
                (5, 1, 0, None),
                (12, 4, 0, None),
                (12, 4, 2, None),
                (16, 8, 4, None),
                (16, 8, 2, None),
                (8, 8, 0, Some(dgx1.clone())),
            ] {
                for (channels, slices, chunk_elems) in [(1, 1, 8), (3, 2, 4), (5, 2, 3), (2, 3, 5), (7, 1, 2)] {
                    for n in [0, 1, 7, np - 1, np + 1, 97, 1000, 4099] {
                        let p = RingPlan {
                            coll,
                            nics,
                            rings: rings.clone(),
                            ..plan(np, g, channels, n, chunk_elems, slices)
                        };
                        for k in 0..channels {
                            let ch = p.channel(k);
                            let mut s = 0;
                            for at in ch.indices() {
                                let per_loop = p.per_loop();
                                let u = s % per_loop;
                                assert_eq!(
                                    (at.s, at.l, at.t, at.j),
                                    (s, s / per_loop, u / slices, u % slices),
                                    "{coll:?} P={np} n={n} k={k}"
                                );
                                for q in 0..np {
                                    let want = item_by_division(&p, k, q, s);
                                    assert_eq!(ch.item(q, at), want, "{coll:?} P={np} g={g} n={n} k={k} q={q} s={s}");
                                    checked += 1;
                                }
                                s += 1;
                            }
                            assert_eq!(s, p.items(k));
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000, "{checked} items");
    }
}
