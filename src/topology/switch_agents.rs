//! A machine with switch agents: ranks that stand for the work an NVSwitch does itself.
//!
//! NCCL's NVLS (docs/nccl.md) has the NVSwitch add what the GPUs of a node load from a
//! multicast address and copy what one GPU stores there into every GPU. The engine only
//! knows ranks that send and receive, so an algorithm that needs this declares agents
//! ([`crate::sim::Programs::agents`]): ranks `P..2P` beside the P GPUs, agent `P + a`
//! being the part of GPU `a`'s node's switch that serves GPU `a`'s share (its "head"
//! role). [`SwitchAgents`] is the machine as the engine then sees it:
//!
//! - a message between an agent and a GPU of its node crosses only that GPU's link to
//!   the switch: under `flow` the one link the GPU's messages inside the node take on
//!   that side (`n0g3->n0nvswitch` or back), under `ideal` half the alpha of a message
//!   between two GPUs of the node (the switch's link carries half of it under `flow`
//!   too), at the machine's `intra.nvls_efficiency` times its bandwidth under both
//!   (only these links, a GPU's to and from its switch, are scaled: between nodes,
//!   `nvls_tree`'s messages from GPU to GPU cross NICs at their own rate);
//! - on the GPU's side it holds a port of the GPU's intra-node interface, as any message
//!   inside the node; each agent is an interface of its own, one port each way, which
//!   mirrors the GPU link it serves and so never binds before that link does;
//! - messages between GPUs are as on the machine underneath.

use super::{Fabric, Link, LinkId, Proto, Topology};

/// The machine `inner` with one switch agent per GPU (see the module docs).
#[derive(Debug)]
pub struct SwitchAgents<'a> {
    inner: &'a dyn Topology,
    gpus: usize,
    per_node: usize,
    /// Under `flow`, the links between the GPUs and their switch (sorted), which the
    /// agents' messages cross at the switch's rate.
    switch_links: Vec<LinkId>,
}

impl<'a> SwitchAgents<'a> {
    /// `inner` with agents `P..2P` beside its `P` GPUs, if its nodes have an NVSwitch and
    /// at least two GPUs (an agent's route is found from a message between two GPUs of
    /// its node).
    pub fn new(inner: &'a dyn Topology) -> Result<Self, String> {
        let gpus = inner.ranks();
        let per_node = inner.node_shape().map_or(0, |(_, g)| g.min(gpus));
        if !inner.intra_nvswitch() || per_node < 2 {
            return Err(format!(
                "{} has no NVSwitch joining two or more GPUs, which switch agents stand for",
                inner.describe()
            ));
        }
        let mut agents = SwitchAgents { inner, gpus, per_node, switch_links: Vec::new() };
        if inner.fabric().is_some() {
            let mut route = Vec::new();
            let mut links = Vec::with_capacity(2 * gpus);
            for g in 0..gpus {
                for (a, b) in [(g, gpus), (gpus, g)] {
                    route.clear();
                    Fabric::route(&agents, a, b, &mut route);
                    links.extend_from_slice(&route);
                }
            }
            links.sort_unstable();
            links.dedup();
            agents.switch_links = links;
        }
        Ok(agents)
    }

    /// Another GPU of `gpu`'s node, through which its link to the switch is found.
    fn peer(&self, gpu: usize) -> usize {
        let node = gpu / self.per_node;
        node * self.per_node + (gpu % self.per_node + 1) % self.per_node
    }

    /// The GPU of a message between a GPU and an agent, and whether it is the sender;
    /// `None` between two GPUs.
    fn gpu_side(&self, a: usize, b: usize) -> Option<(usize, bool)> {
        match (a < self.gpus, b < self.gpus) {
            (true, true) => None,
            (true, false) => Some((a, true)),
            (false, true) => Some((b, false)),
            (false, false) => panic!("switch agents {a} and {b} do not talk to each other"),
        }
    }
}

impl Topology for SwitchAgents<'_> {
    fn ranks(&self) -> usize {
        2 * self.gpus
    }
    fn link(&self, a: usize, b: usize) -> Link {
        match self.gpu_side(a, b) {
            None => self.inner.link(a, b),
            Some((g, _)) => {
                let l = self.inner.link(g, self.peer(g));
                Link { alpha: l.alpha / 2.0, bandwidth: l.bandwidth * self.inner.nvls_efficiency() }
            }
        }
    }
    fn nics(&self, rank: usize) -> u32 {
        if rank < self.gpus { self.inner.nics(rank) } else { 1 }
    }
    fn best_link(&self) -> (Link, u32) {
        self.inner.best_link()
    }
    fn fabric(&self) -> Option<&dyn Fabric> {
        self.inner.fabric().map(|_| self as &dyn Fabric)
    }
    fn node_shape(&self) -> Option<(usize, usize)> {
        self.inner.node_shape()
    }
    fn node_nics(&self) -> Option<usize> {
        self.inner.node_nics()
    }
    fn intra_nvswitch(&self) -> bool {
        true
    }
    fn nvls_efficiency(&self) -> f64 {
        self.inner.nvls_efficiency()
    }
    fn protocol(&self) -> Option<Proto> {
        self.inner.protocol()
    }
    fn interfaces(&self) -> usize {
        self.inner.interfaces() + self.gpus
    }
    fn interface_ports(&self, i: usize) -> u32 {
        let base = self.inner.interfaces();
        if i < base { self.inner.interface_ports(i) } else { 1 }
    }
    fn route_interfaces(&self, a: usize, b: usize) -> (usize, usize) {
        let agent = |r: usize| self.inner.interfaces() + r - self.gpus;
        match self.gpu_side(a, b) {
            None => self.inner.route_interfaces(a, b),
            Some((g, true)) => (self.inner.route_interfaces(g, self.peer(g)).0, agent(b)),
            Some((g, false)) => (agent(a), self.inner.route_interfaces(self.peer(g), g).1),
        }
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

impl Fabric for SwitchAgents<'_> {
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>) {
        let f = self.inner.fabric().expect("built only where the machine has a fabric");
        match self.gpu_side(a, b) {
            None => f.route(a, b, out),
            Some((g, sends)) => {
                let at = out.len();
                if sends {
                    f.route(g, self.peer(g), out);
                    out.truncate(at + 1);
                } else {
                    f.route(self.peer(g), g, out);
                    let last = out[out.len() - 1];
                    out.truncate(at);
                    out.push(last);
                }
            }
        }
    }
    fn hop(&self, id: LinkId) -> Link {
        // Only messages to and from the agents cross a GPU's links to its switch (NVLS's
        // GPUs talk to each other only across nodes, through the NICs).
        let l = self.inner.fabric().expect("built only where the machine has a fabric").hop(id);
        if self.switch_links.binary_search(&id).is_ok() {
            Link { alpha: l.alpha, bandwidth: l.bandwidth * self.inner.nvls_efficiency() }
        } else {
            l
        }
    }
    fn link_name(&self, id: LinkId) -> String {
        self.inner.fabric().expect("built only where the machine has a fabric").link_name(id)
    }
    fn link_count(&self) -> u64 {
        self.inner.fabric().expect("built only where the machine has a fabric").link_count()
    }
    fn longest_link_name(&self) -> usize {
        self.inner.fabric().expect("built only where the machine has a fabric").longest_link_name()
    }
}
