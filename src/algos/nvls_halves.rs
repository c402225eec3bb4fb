//! NCCL's NVLS reduce-scatter and allgather on one node (docs/nccl.md): the allreduce's
//! two halves in the NVSwitch, each alone.
//!
//! NCCL's kernels (`src/device/reduce_scatter.h` and `all_gather.h`, the NVLS variants for
//! one node) cut each channel's share of every rank's block into chunks and take one chunk
//! of every block per loop. In the reduce-scatter each GPU's scatter warps copy its P
//! chunks into its multicast-bound buffer and each GPU, the *head* of its own block, loads
//! its chunk through the multicast address: the switch reads that chunk from all P GPUs
//! and returns their sum. In the allgather each GPU stores its own chunk through the
//! multicast address and the switch writes it into every GPU. So per loop a GPU's link
//! carries P chunks to the switch and one back (reduce-scatter), or one to the switch and
//! P back (allgather), where the ring's carries P-1 each way.
//!
//! As for [`super::nvls`], the switch's share of the work is done by switch agents
//! (`P + a` for head a), on the same routes:
//!
//! - reduce-scatter: every GPU i sends its chunk of block a to agent a, starting with its
//!   own and going round (so at each step the P GPUs feed P different agents); agent a,
//!   once it has all P, sends their sum to GPU a;
//! - allgather: GPU a sends its chunk to agent a (its store); agent a sends a copy to
//!   every GPU, starting with GPU a and going round.
//!
//! A GPU starts a loop only while at most [`WINDOW`] of its loops are unfinished (NCCL's
//! `NCCL_STEPS` buffer steps). Timing only, one node, as the allreduce.

use super::nvls::chunk_bytes;
use super::{AlgoInfo, Algorithm, Blocks, Machine, ParamError, Params, Problem, Topology};
use crate::collective::Collective;
use crate::sim::op::{Op, Program, Rank, Region, per_step};

/// Loops a GPU may have started and not finished: NCCL's `NCCL_STEPS`.
const WINDOW: usize = 8;

/// Registry entry: the reduce-scatter.
pub const RS_INFO: AlgoInfo = AlgoInfo {
    id: "nvls",
    summary: "NCCL's NVLink SHARP reduce-scatter on one NVSwitch node: each GPU loads its own block's chunk \
              through the multicast address and the switch returns the sum of the P GPUs' copies",
    source: "NCCL src/device/reduce_scatter.h (NVLS, one node), src/enqueue.cc calcCollChunking (the NVLS chunk); \
             docs/nccl.md",
    requires: "one node of a cluster whose intra kind is nvswitch, P >= 2; timing only (data: { mode: off })",
    closed_form: "one loop of one channel: (P+1)(alpha/2 + chunk/B); otherwise bounds: each GPU's link busy \
                  below, every message one after another above",
    params: &[
        "channels=16: NCCL's NVLS channels (16 on Hopper), each moving its own share of every block",
        "chunk=NCCL's: bytes per block per loop (128 KiB, 64/32/16 KiB for small sizes as NCCL shrinks it)",
    ],
    build: |params| Ok(Box::new(NvlsHalf::from_params(params, Collective::ReduceScatter)?)),
};

/// Registry entry: the allgather.
pub const AG_INFO: AlgoInfo = AlgoInfo {
    id: "nvls",
    summary: "NCCL's NVLink SHARP allgather on one NVSwitch node: each GPU stores its block's chunk through the \
              multicast address and the switch writes it into every GPU",
    source: "NCCL src/device/all_gather.h (NVLS, one node), src/enqueue.cc calcCollChunking (the NVLS chunk); \
             docs/nccl.md",
    requires: RS_INFO.requires,
    closed_form: RS_INFO.closed_form,
    params: RS_INFO.params,
    build: |params| Ok(Box::new(NvlsHalf::from_params(params, Collective::Allgather)?)),
};

/// See the module docs.
#[derive(Debug)]
pub struct NvlsHalf {
    /// Reduce-scatter or allgather.
    pub collective: Collective,
    /// Channels.
    pub channels: usize,
    /// Bytes per chunk, if not NCCL's rule.
    pub chunk: Option<u64>,
}

impl NvlsHalf {
    /// Built from its parameters (see [`RS_INFO`]) for collective `c`.
    pub fn from_params(params: &mut Params, c: Collective) -> Result<NvlsHalf, ParamError> {
        let (channels, chunk) = super::nvls::channels_and_chunk(params)?;
        Ok(NvlsHalf { collective: c, channels, chunk })
    }

    fn plan(&self, p: &Problem) -> Plan {
        let e = p.elem_bytes.max(1);
        // NCCL's rule reads the whole buffer's bytes (`nBytes`), which is our S.
        let chunk = self.chunk.unwrap_or_else(|| chunk_bytes(p.bytes() as u64, self.channels, p.ranks));
        Plan {
            rs: self.collective == Collective::ReduceScatter,
            np: p.ranks,
            channels: self.channels.max(1),
            n: p.elems,
            chunk_elems: (chunk as usize / e).max(1),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Plan {
    rs: bool,
    np: usize,
    channels: usize,
    n: usize,
    chunk_elems: usize,
}

impl Plan {
    /// Channel k's share of block b.
    fn part(&self, b: usize, k: usize) -> Region {
        let blk = Blocks::new(self.n, self.np).get(b);
        let part = Blocks::new(blk.len, self.channels).get(k);
        Region::vec(blk.offset + part.offset, part.len)
    }

    /// Loops channel k runs: as many as block 0's share (the longest) needs.
    fn loops(&self, k: usize) -> usize {
        self.part(0, k).len.div_ceil(self.chunk_elems)
    }

    /// Loop l's chunk of block a on channel k (short or empty in the last loop).
    fn chunk(&self, k: usize, l: usize, a: usize) -> Region {
        let part = self.part(a, k);
        let start = (l * self.chunk_elems).min(part.len);
        Region::vec(part.offset + start, self.chunk_elems.min(part.len - start))
    }

    fn tag(&self, k: usize, l: usize) -> u32 {
        (l * self.channels + k) as u32
    }

    /// GPU r's program on channel k.
    fn gpu(self, k: usize, r: usize) -> Program<'static> {
        let np = self.np;
        let agent = move |a: usize| (np + a) as Rank;
        let loops = self.loops(k);
        if self.rs {
            // Per loop: its P chunks to their heads' agents, its own sum posted; before the
            // next loop, the sum of the loop WINDOW - 1 back waited for.
            return Box::new(per_step(0..=loops, move |l| {
                let mut ops: Vec<Op> = Vec::with_capacity(np + 2);
                if l == loops {
                    ops.push(Op::WaitAll);
                    return ops;
                }
                let tag = self.tag(k, l);
                ops.extend((0..np).map(|u| {
                    let a = (r + u) % np;
                    Op::send(agent(a), tag, self.chunk(k, l, a))
                }));
                ops.push(Op::recv_copy(agent(r), tag, self.chunk(k, l, r)));
                if l + 1 >= WINDOW {
                    ops.push(Op::Wait((l + 1 - WINDOW) as u32));
                }
                ops
            }));
        }
        // Allgather: per loop its store out, the P copies posted; before the next loop
        // the copies of the loop WINDOW - 1 back waited for.
        Box::new(per_step(0..=loops, move |l| {
            let mut ops: Vec<Op> = Vec::with_capacity(2 * np + 1);
            if l == loops {
                ops.push(Op::WaitAll);
                return ops;
            }
            let tag = self.tag(k, l);
            ops.push(Op::send(agent(r), tag, self.chunk(k, l, r)));
            ops.extend((0..np).map(|u| {
                let a = (r + np - u) % np;
                Op::recv_copy(agent(a), tag, self.chunk(k, l, a))
            }));
            if l + 1 >= WINDOW {
                let back = (l + 1 - WINDOW) * np;
                ops.extend((back..back + np).map(|h| Op::Wait(h as u32)));
            }
            ops
        }))
    }

    /// Agent a's program on channel k: reduce-scatter, per loop the P copies of head a's
    /// chunk in, their sum to GPU a; allgather, GPU a's store in, a copy to every GPU.
    fn agent(self, k: usize, a: usize) -> Program<'static> {
        let np = self.np;
        let loops = self.loops(k);
        Box::new(per_step(0..loops * (np + 2), move |s| {
            let (l, u) = (s / (np + 2), s % (np + 2));
            let (c, tag) = (self.chunk(k, l, a), self.tag(k, l));
            [if self.rs {
                match u {
                    _ if u < np => Op::recv_copy(((a + np - u) % np) as Rank, tag, c),
                    _ if u == np => Op::WaitAll,
                    _ => Op::send(a as Rank, tag, c),
                }
            } else {
                match u {
                    0 => Op::recv_copy(a as Rank, tag, c),
                    1 => Op::Wait(l as u32),
                    _ => Op::send(((a + u - 2) % np) as Rank, tag, c),
                }
            }]
        }))
    }
}

impl Algorithm for NvlsHalf {
    fn id(&self) -> &'static str {
        RS_INFO.id
    }

    fn label(&self) -> String {
        super::nvls::label(RS_INFO.id, self.channels, self.chunk)
    }

    fn applicable(&self, p: &Problem, m: &Machine) -> Result<(), String> {
        super::nvls::on_one_nvswitch_node(
            p,
            m,
            &format!(
                "NCCL runs NVLS {} across nodes only with CollNet (SHARP in the network), not modelled",
                self.collective
            ),
        )?;
        let plan = self.plan(p);
        let loops = (0..plan.channels).map(|k| plan.loops(k)).max().unwrap_or(0);
        if loops.saturating_mul(self.channels) > u32::MAX as usize {
            return Err(format!("{loops} loops over {} channels are more than the tags can tell apart", self.channels));
        }
        Ok(())
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let plan = self.plan(&p);
        let r = rank as usize;
        let active = (0..plan.channels).filter(move |&k| plan.loops(k) > 0);
        if r < p.ranks {
            active.map(|k| plan.gpu(k, r)).collect()
        } else {
            active.map(|k| plan.agent(k, r - p.ranks)).collect()
        }
    }

    /// One loop of one channel of equal chunks: with `h = alpha/2 + chunk/B`, the
    /// reduce-scatter's P loads take P steps (GPU i to agent i + s at step s, so no
    /// agent receives two at once) and the sums one more; the allgather's stores one
    /// step and the copies P more (agent a to GPU a + s). Both `(P+1) h`.
    fn closed_form(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let plan = self.plan(p);
        let active: Vec<usize> = (0..plan.channels).filter(|&k| plan.loops(k) > 0).collect();
        if active.len() != 1 || plan.loops(active[0]) != 1 {
            return None;
        }
        let k = active[0];
        let sizes: Vec<usize> = (0..p.ranks).map(|a| plan.chunk(k, 0, a).len).collect();
        if sizes.iter().any(|&b| b != sizes[0]) {
            return None;
        }
        let link = switch_hop(m)?;
        Some(((p.ranks + 1) as f64 * link.time((sizes[0] * p.elem_bytes) as f64), super::EXACT))
    }

    /// Below: the busiest GPU link side, each of its messages at least `alpha/2 + m/B`
    /// (reduce-scatter: its P loads out per loop; allgather: its P copies in). Above:
    /// every message of the run one after another, since a rank never waits but for a
    /// message.
    fn closed_form_bounds(&self, p: &Problem, m: &Machine) -> Option<(f64, f64)> {
        let link = switch_hop(m)?;
        let plan = self.plan(p);
        let e = p.elem_bytes as f64;
        // Every GPU sends (reduce-scatter) or receives (allgather) one chunk of every
        // block per loop, so every GPU's busy side carries the same `busiest`.
        let (mut busiest, mut total) = (0.0f64, 0.0f64);
        for k in 0..plan.channels {
            for l in 0..plan.loops(k) {
                for a in 0..p.ranks {
                    let t = link.time(plan.chunk(k, l, a).len as f64 * e);
                    busiest += t;
                    // Per head: P loads and a sum, or a store and P copies.
                    total += (p.ranks + 1) as f64 * t;
                }
            }
        }
        Some((busiest, total))
    }

    fn reduction_depth(&self, p: &Problem, _topo: &dyn Topology) -> usize {
        if self.collective == Collective::ReduceScatter { p.ranks.saturating_sub(1) } else { 0 }
    }

    fn messages(&self, p: &Problem, _topo: &dyn Topology) -> Option<u64> {
        let plan = self.plan(p);
        let loops: usize = (0..plan.channels).map(|k| plan.loops(k)).sum();
        let ranks = p.ranks as u64;
        Some((loops as u64).saturating_mul(ranks).saturating_mul(ranks.saturating_add(1)))
    }

    fn switch_agents(&self) -> bool {
        true
    }
}

/// A message between a GPU and the switch (as [`super::nvls`]'s): half the alpha of one
/// between two GPUs of the node, the same bandwidth; `None` unless the node is one
/// NVSwitch.
fn switch_hop(m: &Machine) -> Option<crate::topology::Link> {
    if !m.topo.intra_nvswitch() || m.topo.ranks() < 2 {
        return None;
    }
    let l = m.topo.link(0, 1);
    Some(crate::topology::Link { alpha: l.alpha / 2.0, bandwidth: l.bandwidth })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NCCL has at most 64 channels (as `nvls` and `nvls_tree` refuse more): 65 is
    /// refused by name for both halves, 64 is taken.
    #[test]
    fn channels_stop_at_sixty_four() {
        use crate::units::ParamValue;
        for c in [Collective::ReduceScatter, Collective::Allgather] {
            let mut p = Params::new(vec![("channels".to_string(), ParamValue::Int(65))]);
            let e = NvlsHalf::from_params(&mut p, c).unwrap_err();
            assert!(e.to_string().contains("'channels' must be 1 to 64, not 65"), "{e}");
            let mut p = Params::new(vec![("channels".to_string(), ParamValue::Int(64))]);
            assert_eq!(NvlsHalf::from_params(&mut p, c).unwrap().channels, 64);
        }
    }

    /// Every channel's loops cover every block's share exactly.
    #[test]
    fn chunks_cover_every_block() {
        for (n, np, chunk) in [(1000, 4, 8), (37, 3, 5), (5, 8, 2), (100_000, 8, 4096)] {
            let plan = Plan { rs: true, np, channels: 3, n, chunk_elems: chunk };
            let mut covered = vec![0usize; np];
            for k in 0..3 {
                for l in 0..plan.loops(k) {
                    for (a, c) in covered.iter_mut().enumerate() {
                        let ch = plan.chunk(k, l, a);
                        assert!(ch.len <= chunk);
                        *c += ch.len;
                    }
                }
            }
            for (a, c) in covered.iter().enumerate() {
                assert_eq!(*c, Blocks::new(n, np).get(a).len, "n={n} P={np} block {a}");
            }
        }
    }
}
