//! NCCL's network proxy: what a message across nodes waits for before it leaves its GPU.
//!
//! NCCL moves a GPU's network traffic through one host thread per GPU, its proxy, which
//! walks the list of that GPU's network connections (one per peer and direction on each
//! channel) and does at most one thing on each per visit (post a receive, test one, hand
//! a ready step to the NIC). A step the GPU has written waits until the proxy comes round
//! to its connection, so the more connections a GPU has across nodes, the longer each of
//! its messages waits: a GPU of NCCL's ring that crosses nodes has one, a GPU of its tree
//! that serves a parent and two child nodes has up to six. A cluster gives the time the
//! proxy spends per connection as `inter.proxy` ([`Topology::proxy`]); a message across
//! nodes then costs its sender's connection count times that, on top of the pair's alpha
//! (docs/gpu-clusters.md, "Network proxy"). With Simple it also waits its receiver's: the
//! receiving GPU reads a Simple step only once its proxy has seen the receive complete
//! and moved the step's tail (NCCL's `netRecvProxy`), where with LL and LL128 the GPU
//! polls the data's own flags and its proxy only posts receives ahead.
//!
//! The count is read off the programs before the run ([`connections`]): the distinct
//! `(stream, peer, direction)` of a rank's sends and receives across nodes. Algorithms
//! say nothing about it; the machine's time is the engine's, through the pair costs of
//! [`ProxyView`], which is what the engine, the closed forms and the bounds all read.

use std::collections::BTreeSet;

use super::{Op, Problem, Programs, Rank};
use crate::topology::{Fabric, Link, Proto, Topology};

/// How many connections across nodes each rank's programs use: distinct
/// `(stream, peer, send or receive)` with the peer on another node. Empty (no one has
/// any) on a machine without nodes.
pub fn connections(programs: &(impl Programs + ?Sized), p: Problem, topo: &dyn Topology) -> Vec<u32> {
    let Some((_, g)) = topo.node_shape() else { return Vec::new() };
    let node = |r: Rank| r as usize / g.max(1);
    let mut seen = BTreeSet::new();
    (0..p.ranks as Rank)
        .map(|r| {
            seen.clear();
            for (s, program) in programs.rank_program(r, p, topo).into_iter().enumerate() {
                for op in program {
                    let (peer, send) = match op {
                        Op::Send { to, .. } => (to, true),
                        Op::Recv { from, .. } => (from, false),
                        _ => continue,
                    };
                    if node(peer) != node(r) {
                        seen.insert((s, peer, send));
                    }
                }
            }
            seen.len() as u32
        })
        .collect()
}

/// Whether a message of protocol `proto` across nodes also waits its receiver's proxy: a
/// Simple step is handed to the receiving GPU by its proxy (the tail moves once the proxy
/// has tested the receive done); LL and LL128 lines carry their own flags. The run's
/// pair costs ([`ProxyView`]) and the scenario's time limits both read it.
pub fn receiver_waits(proto: Proto) -> bool {
    proto == Proto::Simple
}

/// `inner` with every message across nodes paying its sender's proxy: `k_a` times
/// `inner.proxy()` added to the alpha of a pair `(a, b)` on different nodes, `k_a` being
/// `a`'s connections across nodes ([`connections`]); with Simple (`inner.protocol()`)
/// `k_b` times it more, for the receiver's proxy. Everything else is `inner`'s.
#[derive(Debug)]
pub struct ProxyView<'a> {
    inner: &'a dyn Topology,
    gpus_per_node: usize,
    /// Per rank: seconds its messages across nodes wait for its proxy.
    wait: Vec<f64>,
    /// Whether a message also waits its receiver's proxy (Simple).
    receiver_waits: bool,
}

impl<'a> ProxyView<'a> {
    /// `topo` as `programs` on problem `p` see it, where it has a proxy cost
    /// ([`Topology::proxy`] above 0); `None` (nothing to add) elsewhere.
    pub fn of(programs: &(impl Programs + ?Sized), p: Problem, topo: &'a dyn Topology) -> Option<ProxyView<'a>> {
        let per = topo.proxy();
        let (_, g) = topo.node_shape()?;
        if per <= 0.0 {
            return None;
        }
        let wait = connections(programs, p, topo).into_iter().map(|k| f64::from(k) * per).collect();
        let receiver_waits = topo.protocol().is_some_and(receiver_waits);
        Some(ProxyView { inner: topo, gpus_per_node: g.max(1), wait, receiver_waits })
    }

    /// Seconds rank `r`'s messages across nodes wait for its proxy.
    pub fn wait(&self, r: usize) -> f64 {
        self.wait.get(r).copied().unwrap_or(0.0)
    }

    /// Seconds a message from `a` to `b` on another node waits for the proxies: `a`'s,
    /// and with Simple `b`'s as well.
    pub fn pair_wait(&self, a: usize, b: usize) -> f64 {
        self.wait(a) + if self.receiver_waits { self.wait(b) } else { 0.0 }
    }
}

impl Topology for ProxyView<'_> {
    fn ranks(&self) -> usize {
        self.inner.ranks()
    }
    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        let mut l = self.inner.link(a, b);
        if a / self.gpus_per_node != b / self.gpus_per_node {
            l.alpha += self.pair_wait(a, b);
        }
        l
    }
    fn nics(&self, rank: usize) -> u32 {
        self.inner.nics(rank)
    }
    /// The inner machine's: a proxy only adds time, so its smallest alpha stays a lower
    /// bound.
    fn best_link(&self) -> (Link, u32) {
        self.inner.best_link()
    }
    /// None where some rank waits: the pairs then differ by sender, which the flat and
    /// two-level closed forms do not see.
    fn uniform(&self) -> Option<(Link, u32)> {
        if self.wait.iter().any(|&w| w > 0.0) { None } else { self.inner.uniform() }
    }
    fn grid(&self) -> Option<(usize, usize, bool)> {
        self.inner.grid()
    }
    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        if self.wait.iter().any(|&w| w > 0.0) { None } else { self.inner.levels() }
    }
    fn fabric(&self) -> Option<&dyn Fabric> {
        self.inner.fabric()
    }
    fn node_shape(&self) -> Option<(usize, usize)> {
        self.inner.node_shape()
    }
    fn node_nics(&self) -> Option<usize> {
        self.inner.node_nics()
    }
    fn intra_pcie(&self) -> bool {
        self.inner.intra_pcie()
    }
    fn nic_through_cpu(&self) -> bool {
        self.inner.nic_through_cpu()
    }
    fn intra_nvswitch(&self) -> bool {
        self.inner.intra_nvswitch()
    }
    fn nvls_efficiency(&self) -> f64 {
        self.inner.nvls_efficiency()
    }
    fn nvlinks(&self) -> Option<&[(usize, usize, u32)]> {
        self.inner.nvlinks()
    }
    fn nvlinks_shared(&self) -> bool {
        self.inner.nvlinks_shared()
    }
    fn channel_bandwidth(&self) -> f64 {
        self.inner.channel_bandwidth()
    }
    fn inter_channel_bandwidth(&self) -> f64 {
        self.inner.inter_channel_bandwidth()
    }
    fn protocol(&self) -> Option<Proto> {
        self.inner.protocol()
    }
    /// Already paid: a view of a view adds nothing more.
    fn proxy(&self) -> f64 {
        0.0
    }
    fn interfaces(&self) -> usize {
        self.inner.interfaces()
    }
    fn interface_ports(&self, i: usize) -> u32 {
        self.inner.interface_ports(i)
    }
    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        self.inner.route_interfaces(a, b)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}
