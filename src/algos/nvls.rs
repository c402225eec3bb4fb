//! NCCL's NVLS allreduce on one node (docs/nccl.md): the NVSwitch adds and multicasts.
//!
//! On Hopper and later, a GPU's load from a *multicast* address returns the sum of that
//! address over every GPU of the node, added in the NVSwitch, and a store to it is
//! written into every GPU. NCCL's kernel (`src/device/all_reduce.h`, the NVLS allreduce
//! for one node) cuts each channel's part into loops of P chunks, one per GPU (its
//! "head" role), and runs three groups of warps at once: scatter (the user's buffer into
//! the GPU's multicast-bound buffer), reduce (each head loads its chunk through the
//! multicast address and stores the sum back through it) and gather (out of that buffer
//! into the user's). Only the reduce crosses NVLink: per loop each GPU's link carries its
//! P chunks to the switch for the P heads' loads plus its own store, and the sum of its own
//! chunk plus the P multicast copies back: `(P+1)/P S` each way for the whole vector,
//! against the ring's `2(P-1)/P S`.
//!
//! The switch is not a rank, so its share of the work is done by switch agents
//! ([`crate::topology::SwitchAgents`]): agent `P + a` is what the switch does for head
//! `a`. Per channel and loop:
//!
//! - every GPU i sends its copy of chunk a to agent a (the switch reading it for head
//!   a's load), starting with its own chunk and going round, so that at each step the P
//!   GPUs feed P different agents;
//! - agent a, once it has all P, sends their sum to GPU a (the load's result); the
//!   switch adds at line rate, so its receives take no compute time;
//! - GPU a sends it back to agent a (its multicast store);
//! - agent a sends a copy to every GPU, starting with GPU a and going round.
//!
//! A GPU sends a loop's loads only once it has its own previous loop's sum: the switch
//! reads a head's chunks when the head's reduce warps ask, one chunk at a time. Messages
//! to and from the agents move at the machine's `intra.nvls_efficiency` times the GPU's
//! bandwidth (the switch's own rate).
//!
//! The agents hold no vector, so `nvls` runs timing only (`data: { mode: off }`).
//! Across nodes NCCL needs CollNet (SHARP in the network) for NVLS, not modelled, or runs
//! NVLS Tree ([`super::nvls_tree`]), so `nvls` runs on one node.

use super::{AlgoInfo, Algorithm, Blocks, Machine, ParamError, Params, Problem, Topology};
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// NCCL's NVLS channels on Hopper (`NVLS_NCHANNELS_SM90`).
pub const DEFAULT_CHANNELS: usize = 16;
/// NCCL's NVLS chunk (`NCCL_NVLS_CHUNKSIZE`'s default), bytes.
pub const DEFAULT_CHUNK: u64 = 128 * 1024;
/// The last loop's chunks are a multiple of this many bytes (NCCL's 16 KiB alignment).
const LAST_ALIGN: usize = 16384;
/// Loops a GPU may have started whose copies it has not all received: NCCL's
/// `NCCL_STEPS`, the steps of the buffer the switch reads from and writes into.
const WINDOW: usize = 8;

/// Registry entry.
pub const INFO: AlgoInfo = AlgoInfo {
    id: "nvls",
    summary: "NCCL's NVLink SHARP allreduce on one NVSwitch node: each GPU heads one chunk per loop, the switch \
              adds the P copies of it for the head's load and copies the head's store into every GPU",
    source: "NCCL src/device/all_reduce.h (the NVLS allreduce, one node), src/enqueue.cc calcCollChunking (the NVLS \
             chunk), src/transport/nvls.cc (channels); docs/nccl.md",
    requires: "one node of a cluster whose intra kind is nvswitch, P >= 2; timing only (data: { mode: off })",
    closed_form: "one loop of one channel: (2P+2)(alpha/2 + chunk/B); otherwise bounds: each GPU's link busy \
                  (P+1 slices each way per loop) below, every message one after another above",
    params: &[
        "channels=16: NCCL's NVLS channels (16 on Hopper), each moving its own part of the vector",
        "chunk=NCCL's: bytes per head per loop (128 KiB, 64/32/16 KiB for small sizes as NCCL shrinks it)",
    ],
    build: |params| Ok(Box::new(Nvls::from_params(params)?)),
};

/// See the module docs.
#[derive(Debug)]
pub struct Nvls {
    /// Channels.
    pub channels: usize,
    /// Bytes per chunk, if not NCCL's rule.
    pub chunk: Option<u64>,
}

/// The `channels` (1 to 64, default [`DEFAULT_CHANNELS`]) and `chunk` parameters of
/// NCCL's NVLS algorithms (`nvls`, `nvls_tree`).
pub(crate) fn channels_and_chunk(params: &mut Params) -> Result<(usize, Option<u64>), ParamError> {
    let channels = params.count("channels", DEFAULT_CHANNELS)?;
    // NCCL's MAXCHANNELS; more would only make a schedule too large to build.
    if channels > 64 {
        return Err(ParamError::new(Some("channels"), format!("'channels' must be 1 to 64, not {channels}")));
    }
    Ok((channels, params.size("chunk")?))
}

impl Nvls {
    /// Built from its parameters (see [`INFO`]).
    pub fn from_params(params: &mut Params) -> Result<Nvls, ParamError> {
        let (channels, chunk) = channels_and_chunk(params)?;
        Ok(Nvls { channels, chunk })
    }

    /// The schedule of `p`.
    pub(crate) fn plan(&self, p: &Problem) -> NvlsPlan {
        let e = p.elem_bytes.max(1);
        let bytes = p.bytes() as u64;
        let chunk = self.chunk.unwrap_or_else(|| chunk_bytes(bytes, self.channels, p.ranks));
        NvlsPlan {
            np: p.ranks,
            channels: self.channels.max(1),
            n: p.elems,
            chunk_elems: (chunk as usize / e).max(1),
            align: (LAST_ALIGN / e).max(1),
        }
    }
}

/// NCCL's NVLS chunk for an allreduce of `bytes` over `channels` channels of `heads`
/// heads (`calcCollChunking`): 128 KiB, cut to 64 KiB below 64 chunks per head and
/// channel, 32 KiB below 8, 16 KiB below 2.
pub fn chunk_bytes(bytes: u64, channels: usize, heads: usize) -> u64 {
    let ops = (channels * heads) as u64;
    let mut chunk = DEFAULT_CHUNK;
    for (times, to) in [(64, 65536), (8, 32768), (2, 16384)] {
        if bytes < times * ops * chunk && chunk > to {
            chunk = to;
        }
    }
    chunk
}

/// One run's schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NvlsPlan {
    /// P (GPUs, and heads).
    pub np: usize,
    /// Channels.
    pub channels: usize,
    /// n.
    pub n: usize,
    /// Elements of a whole loop's chunk.
    pub chunk_elems: usize,
    /// The last loop's chunks are a multiple of this many elements.
    pub align: usize,
}

/// What a message of the loop is, for its tag.
#[derive(Clone, Copy)]
enum Phase {
    Load = 0,
    Sum = 1,
    Store = 2,
    Copy = 3,
}

impl NvlsPlan {
    /// Channel k's part of the vector.
    pub fn part(&self, k: usize) -> Region {
        Blocks::new(self.n, self.channels).get(k)
    }

    /// Loops channel k runs.
    pub fn loops(&self, k: usize) -> usize {
        self.part(k).len.div_ceil(self.np * self.chunk_elems)
    }

    /// Head a's chunk of loop l of channel k: whole chunks, but in a last loop shorter
    /// than a whole one, where NCCL cuts the rest into `ceil(rest / P)` rounded up to
    /// 16 KiB (so the last heads' may be short or empty).
    pub fn chunk(&self, k: usize, l: usize, a: usize) -> Region {
        let part = self.part(k);
        let whole = self.np * self.chunk_elems;
        let rest = part.len - l * whole;
        let cc = if rest < whole { rest.div_ceil(self.np).div_ceil(self.align) * self.align } else { self.chunk_elems };
        let start = (a * cc).min(rest);
        Region::vec(part.offset + l * whole + start, cc.min(rest - start))
    }

    fn tag(&self, k: usize, l: usize, phase: Phase) -> u32 {
        ((l * 4 + phase as usize) * self.channels + k) as u32
    }

    /// GPU r's stream on channel k, per loop: its copies of the P heads' chunks to their
    /// agents (starting with its own), then, as head r, the sum of its own chunk in and
    /// its store out, then the P copies of the sums posted; before the next loop, the
    /// copies of the loop [`WINDOW`] - 1 back waited for (NCCL's buffer has that many
    /// steps, and a step is free again only once its copies are out of it).
    ///
    /// The next loop's loads wait for this loop's sum: the switch reads a head's chunks
    /// only when the head's reduce warps ask for them (`multimem.ld_reduce` is a load,
    /// and the warps store its result before they load the next chunk), so a channel has
    /// one loop's loads in the switch at a time, not the buffer's 8 steps' worth. The
    /// copies of one loop still overlap the next loop's loads. Every head is at the same
    /// point of its loop, so GPU r's own head role paces its loads for the others.
    fn gpu(self, k: usize, r: usize) -> [Program<'static>; 1] {
        let np = self.np;
        let agent = move |a: usize| (np + a) as Rank;
        let loops = self.loops(k);
        // Loads, sum in, its wait, store out, copies posted, window waits.
        let per_loop = 3 * np + 3;
        // Receives per loop: the sum, then the P copies.
        let recvs = np + 1;
        let data = per_step(0..loops * per_loop + 1, move |s| {
            if s == loops * per_loop {
                return Some(Op::WaitAll);
            }
            let (l, u) = (s / per_loop, s % per_loop);
            let mine = self.chunk(k, l, r);
            if u < np {
                let a = (r + u) % np;
                Some(Op::send(agent(a), self.tag(k, l, Phase::Load), self.chunk(k, l, a)))
            } else if u == np {
                Some(Op::recv_copy(agent(r), self.tag(k, l, Phase::Sum), mine))
            } else if u == np + 1 {
                Some(Op::Wait((l * recvs) as u32))
            } else if u == np + 2 {
                Some(Op::send(agent(r), self.tag(k, l, Phase::Store), mine))
            } else if u < 2 * np + 3 {
                let j = u - (np + 3);
                let a = (r + np - j) % np;
                Some(Op::recv_copy(agent(a), self.tag(k, l, Phase::Copy), self.chunk(k, l, a)))
            } else {
                // The copies of loop l + 1 - WINDOW, handle by handle.
                let j = u - (2 * np + 3);
                (l + 1 >= WINDOW).then(|| Op::Wait(((l + 1 - WINDOW) * recvs + 1 + j) as u32))
            }
        });
        [Box::new(data)]
    }

    /// Agent a's two streams on channel k: reduce (per loop, the P copies of head a's
    /// chunk in, their sum to GPU a) and multicast (GPU a's store in, a copy to every
    /// GPU, starting with GPU a), so that one loop's multicast overlaps the next loop's
    /// reduction as the switch's do.
    fn agent(self, k: usize, a: usize) -> [Program<'static>; 2] {
        let np = self.np;
        let loops = self.loops(k);
        let reduce = per_step(0..loops * (np + 2), move |s| {
            let (l, u) = (s / (np + 2), s % (np + 2));
            let c = self.chunk(k, l, a);
            [match u {
                _ if u < np => Op::recv_copy(((a + np - u) % np) as Rank, self.tag(k, l, Phase::Load), c),
                _ if u == np => Op::WaitAll,
                _ => Op::send(a as Rank, self.tag(k, l, Phase::Sum), c),
            }]
        });
        let multicast = per_step(0..loops * (np + 2), move |s| {
            let (l, u) = (s / (np + 2), s % (np + 2));
            let c = self.chunk(k, l, a);
            [match u {
                0 => Op::recv_copy(a as Rank, self.tag(k, l, Phase::Store), c),
                1 => Op::Wait(l as u32),
                _ => Op::send(((a + u - 2) % np) as Rank, self.tag(k, l, Phase::Copy), c),
            }]
        });
        [Box::new(reduce), Box::new(multicast)]
    }

    /// Every message of channel k's loop l: (its bytes, how many of them), for the bounds.
    fn loop_slices(&self, k: usize, l: usize, e: usize) -> impl Iterator<Item = f64> + '_ {
        (0..self.np).map(move |a| (self.chunk(k, l, a).len * e) as f64)
    }
}

impl Algorithm for Nvls {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn label(&self) -> String {
        label(INFO.id, self.channels, self.chunk)
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        on_one_nvswitch_node(
            p,
            m,
            "NVLS across nodes needs CollNet (SHARP in the network), not modelled; nvls_tree is NCCL's NVLS Tree",
        )?;
        let plan = self.plan(p);
        let loops = (0..self.channels).map(|k| plan.loops(k)).max().unwrap_or(0);
        if loops.saturating_mul(4 * self.channels) > u32::MAX as usize {
            return Err(format!("{loops} loops over {} channels are more than the tags can tell apart", self.channels));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = self.plan(&p);
        let r = rank as usize;
        let active = (0..plan.channels).filter(move |&k| plan.loops(k) > 0);
        if r < p.ranks {
            active.flat_map(|k| plan.gpu(k, r)).collect()
        } else {
            active.flat_map(|k| plan.agent(k, r - p.ranks)).collect()
        }
    }

    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p);
        let active: Vec<usize> = (0..plan.channels).filter(|&k| plan.loops(k) > 0).collect();
        if active.len() != 1 || plan.loops(active[0]) != 1 {
            return None;
        }
        let (k, e) = (active[0], p.elem_bytes);
        // One loop: equal chunks only (a short last head changes who waits for whom).
        let sizes: Vec<f64> = plan.loop_slices(k, 0, e).collect();
        if sizes.iter().any(|&b| b != sizes[0]) {
            return None;
        }
        let link = switch_hop(m)?;
        Some((nvls_one_loop(p.ranks, sizes[0], link.alpha * 2.0, link.bandwidth), super::EXACT))
    }

    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let link = switch_hop(m)?;
        let plan = self.plan(p);
        let e = p.elem_bytes;
        let (mut busiest, mut total) = (0.0f64, 0.0f64);
        let mut per_gpu = vec![0.0f64; p.ranks];
        for k in 0..plan.channels {
            for l in 0..plan.loops(k) {
                let slices: Vec<f64> = plan.loop_slices(k, l, e).collect();
                let all: f64 = slices.iter().map(|&b| link.time(b)).sum();
                for (r, busy) in per_gpu.iter_mut().enumerate() {
                    // Out: its P loads and its store; in: its sum and the P copies.
                    *busy += all + link.time(slices[r]);
                }
                // Every message of the loop: P loads, sum and store, and P copies per head.
                total += slices.iter().map(|&b| (2 * p.ranks + 2) as f64 * link.time(b)).sum::<f64>();
            }
        }
        for b in per_gpu {
            busiest = busiest.max(b);
        }
        Some((busiest, total))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        p.ranks.saturating_sub(1)
    }

    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let plan = self.plan(p);
        let loops: usize = (0..plan.channels).map(|k| plan.loops(k)).sum();
        // Per loop and head: P loads, the sum, the store, P copies.
        let ranks = p.ranks as u64;
        Some((loops as u64).saturating_mul(ranks).saturating_mul(ranks.saturating_mul(2).saturating_add(2)))
    }

    fn switch_agents(&self) -> bool {
        true
    }
}

/// A message between a GPU and the switch on `m`'s nodes: half the alpha of one between
/// two GPUs of a node, the same bandwidth; `None` unless the node is one NVSwitch.
fn switch_hop(m: &Machine) -> Option<crate::topology::Link> {
    if !m.topo.intra_nvswitch() || m.topo.ranks() < 2 {
        return None;
    }
    let l = m.topo.link(0, 1);
    Some(crate::topology::Link { alpha: l.alpha / 2.0, bandwidth: l.bandwidth * m.topo.nvls_efficiency() })
}

/// `nvls`'s time for one loop of one channel of P equal chunks of `chunk` bytes, the
/// GPUs joined by an NVSwitch at `alpha` and `bandwidth` between two of them (C plays no
/// part: the switch adds). A hop to or from the switch costs `h = alpha/2 + chunk/B`.
/// The P GPUs send their P loads in P steps, GPU i to agent i + s at step s, so no agent
/// receives two at once: the sums leave at `P h`; each head has its sum at `(P+1) h`
/// and its store is at its agent at `(P+2) h`; the P copies leave in P more steps,
/// agent a to GPU a + s at step s, so no GPU receives two at once: `(2P+2) h`.
pub fn nvls_one_loop(np: usize, chunk: f64, alpha: f64, bandwidth: f64) -> f64 {
    (2 * np + 2) as f64 * (alpha / 2.0 + chunk / bandwidth)
}

/// NVLS's steady state: the bus bandwidth (`2(P-1)/P S / T`) it tends to at large sizes
/// on GPUs whose link to the switch moves `bandwidth` each way, where each GPU's link
/// carries `(P+1)/P S` each way: `2(P-1)/(P+1)` of the link's bandwidth.
pub fn nvls_steady(np: usize, bandwidth: f64) -> f64 {
    2.0 * (np as f64 - 1.0) / (np as f64 + 1.0) * bandwidth
}

/// `id(channels=.., chunk=..)`, naming only what differs from NCCL's defaults.
pub(crate) fn label(id: &str, channels: usize, chunk: Option<u64>) -> String {
    let mut parts = Vec::new();
    if channels != DEFAULT_CHANNELS {
        parts.push(format!("channels={channels}"));
    }
    if let Some(c) = chunk {
        parts.push(format!("chunk={c}"));
    }
    if parts.is_empty() { id.into() } else { format!("{id}({})", parts.join(", ")) }
}

/// NVLS runs on one node's NVSwitch, on two GPUs or more; `across` says why not across
/// nodes (it differs by collective).
pub(crate) fn on_one_nvswitch_node(p: &Problem, m: &Machine, across: &str) -> Result<(), String> {
    if !m.topo.intra_nvswitch() {
        return Err("NVLS needs an NVSwitch that adds and multicasts: a cluster whose intra kind is nvswitch".into());
    }
    let g = m.topo.node_shape().map_or(0, |(_, g)| g);
    if p.ranks > g {
        return Err(format!("{across}; {} ranks are more than one node of {g} GPUs", p.ranks));
    }
    if p.ranks < 2 {
        return Err("NVLS needs two or more GPUs".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL's chunk: 128 KiB at large sizes, shrinking for small ones (16 channels, 8 heads:
    /// 128 concurrent chunks).
    #[test]
    fn chunk_follows_ncc_rule() {
        assert_eq!(chunk_bytes(1 << 30, 16, 8), 131072);
        // Below 64 x 128 x 128 KiB = 1 GiB: 64 KiB; below 8 x 128 x 64 KiB = 64 MiB: 32 KiB;
        // below 2 x 128 x 32 KiB = 8 MiB: 16 KiB.
        assert_eq!(chunk_bytes((1 << 30) - 1, 16, 8), 65536);
        assert_eq!(chunk_bytes(64 << 20, 16, 8), 65536);
        assert_eq!(chunk_bytes((64 << 20) - 1, 16, 8), 32768);
        assert_eq!(chunk_bytes((8 << 20) - 1, 16, 8), 16384);
        assert_eq!(chunk_bytes(8, 16, 8), 16384);
    }

    /// Every channel's loops cover its part exactly, head by head.
    #[test]
    fn chunks_cover_the_part() {
        for (n, np, chunk) in [(1000, 4, 8), (37, 3, 5), (5, 8, 2), (100_000, 8, 4096)] {
            let plan = NvlsPlan { np, channels: 3, n, chunk_elems: chunk, align: 4 };
            let mut covered = 0;
            for k in 0..3 {
                let part = plan.part(k);
                let mut at = part.offset;
                for l in 0..plan.loops(k) {
                    for a in 0..np {
                        let c = plan.chunk(k, l, a);
                        assert_eq!(c.offset, at);
                        at += c.len;
                    }
                }
                assert_eq!(at, part.end());
                covered += part.len;
            }
            assert_eq!(covered, n);
        }
    }
}
