use super::{Link, Topology};

/// Every rank reaches every other rank over one class of link: the Hockney machine.
#[derive(Clone, Debug)]
pub struct FullyConnected {
    /// Number of ranks.
    pub ranks: usize,
    /// The one link class.
    pub link: Link,
    /// Ports per rank.
    pub nics: u32,
}

impl Topology for FullyConnected {
    fn ranks(&self) -> usize {
        self.ranks
    }
    #[inline]
    fn link(&self, _a: usize, _b: usize) -> Link {
        self.link
    }
    fn nics(&self, _rank: usize) -> u32 {
        self.nics
    }
    fn best_link(&self) -> (Link, u32) {
        (self.link, self.nics)
    }
    fn uniform(&self) -> Option<(Link, u32)> {
        Some((self.link, self.nics))
    }
    fn fabric(&self) -> Option<&dyn super::Fabric> {
        Some(self)
    }
    fn describe(&self) -> String {
        format!("fully_connected, {} nic(s)", self.nics)
    }
}

/// A private link per ordered pair of ranks: link `a * P + b` carries `a -> b`. Two
/// messages share a link only when they go between the same two ranks the same way at
/// once (which takes two ports on each side).
impl super::Fabric for FullyConnected {
    fn route(&self, a: usize, b: usize, out: &mut Vec<super::LinkId>) {
        out.push((a * self.ranks + b) as super::LinkId);
    }
    fn hop(&self, _id: super::LinkId) -> Link {
        self.link
    }
    fn link_name(&self, id: super::LinkId) -> String {
        let p = self.ranks as u64;
        format!("r{}->r{}", id / p, id % p)
    }
    fn link_count(&self) -> u64 {
        let p = self.ranks as u64;
        p * p.saturating_sub(1)
    }
    fn nodes(&self) -> usize {
        self.ranks
    }
    fn node_name(&self, n: usize) -> String {
        format!("r{n}")
    }
    fn out_links(&self, n: usize, out: &mut Vec<(super::LinkId, usize)>) {
        out.extend((0..self.ranks).filter(|&b| b != n).map(|b| ((n * self.ranks + b) as super::LinkId, b)));
    }
}
