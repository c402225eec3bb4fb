//! A machine as an NCCL protocol sees it, on kinds that give one alpha for every
//! protocol: the same pairs, routes and ports, every bandwidth scaled by the protocol's
//! efficiency (`kind: cluster` has alphas per protocol and scales itself,
//! [`super::Cluster::with_protocol`]).

use super::{Fabric, Link, LinkId, Proto, Topology};

/// `inner` with every link's bandwidth times `proto`'s efficiency.
#[derive(Debug)]
pub struct ProtoView {
    inner: Box<dyn Topology>,
    proto: Proto,
}

impl ProtoView {
    /// `inner` as `proto` sees it.
    pub fn new(inner: Box<dyn Topology>, proto: Proto) -> Self {
        ProtoView { inner, proto }
    }

    fn scale(&self, l: Link) -> Link {
        Link { alpha: l.alpha, bandwidth: l.bandwidth * self.proto.efficiency() }
    }
}

impl Topology for ProtoView {
    fn ranks(&self) -> usize {
        self.inner.ranks()
    }
    fn link(&self, a: usize, b: usize) -> Link {
        self.scale(self.inner.link(a, b))
    }
    fn nics(&self, rank: usize) -> u32 {
        self.inner.nics(rank)
    }
    fn best_link(&self) -> (Link, u32) {
        let (l, n) = self.inner.best_link();
        (self.scale(l), n)
    }
    fn uniform(&self) -> Option<(Link, u32)> {
        self.inner.uniform().map(|(l, n)| (self.scale(l), n))
    }
    fn grid(&self) -> Option<(usize, usize, bool)> {
        self.inner.grid()
    }
    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        self.inner.levels().map(|v| v.into_iter().map(|(n, l)| (n, self.scale(l))).collect())
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
    fn nvlinks(&self) -> Option<&[(usize, usize, u32)]> {
        self.inner.nvlinks()
    }
    fn nvlinks_shared(&self) -> bool {
        self.inner.nvlinks_shared()
    }
    fn intra_nvswitch(&self) -> bool {
        self.inner.intra_nvswitch()
    }
    fn nic_through_cpu(&self) -> bool {
        self.inner.nic_through_cpu()
    }
    fn protocol(&self) -> Option<Proto> {
        Some(self.proto)
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
        format!("{}, protocol {}", self.inner.describe(), self.proto.name())
    }
}

/// Only reached through [`ProtoView::fabric`], which is `None` when `inner` has no fabric.
impl Fabric for ProtoView {
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>) {
        if let Some(f) = self.inner.fabric() {
            f.route(a, b, out);
        }
    }
    fn hop(&self, id: LinkId) -> Link {
        self.scale(self.inner.fabric().map_or(Link { alpha: 0.0, bandwidth: f64::INFINITY }, |f| f.hop(id)))
    }
    fn link_name(&self, id: LinkId) -> String {
        self.inner.fabric().map_or_else(String::new, |f| f.link_name(id))
    }
    fn link_count(&self) -> u64 {
        self.inner.fabric().map_or(0, |f| f.link_count())
    }
    fn longest_link_name(&self) -> usize {
        self.inner.fabric().map_or(0, |f| f.longest_link_name())
    }
    fn nodes(&self) -> usize {
        self.inner.fabric().map_or(0, |f| f.nodes())
    }
    fn node_name(&self, n: usize) -> String {
        self.inner.fabric().map_or_else(String::new, |f| f.node_name(n))
    }
    fn rank_node(&self, r: usize) -> usize {
        self.inner.fabric().map_or(r, |f| f.rank_node(r))
    }
    fn out_links(&self, n: usize, out: &mut Vec<(LinkId, usize)>) {
        if let Some(f) = self.inner.fabric() {
            f.out_links(n, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{FullyConnected, route_cost};

    #[test]
    fn scales_bandwidth_only() {
        let fc = FullyConnected { ranks: 4, link: Link { alpha: 2e-6, bandwidth: 10e9 }, nics: 2 };
        let v = ProtoView::new(Box::new(fc), Proto::Ll);
        assert_eq!(v.link(0, 1), Link { alpha: 2e-6, bandwidth: 5e9 });
        assert_eq!(v.uniform(), Some((Link { alpha: 2e-6, bandwidth: 5e9 }, 2)));
        let f = v.fabric().unwrap();
        let mut r = Vec::new();
        f.route(1, 3, &mut r);
        assert_eq!(route_cost(f, &r), v.link(1, 3));
        assert_eq!(v.describe(), "fully_connected, 2 nic(s), protocol ll");
    }
}
