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
    fn describe(&self) -> String {
        format!("fully_connected, {} nic(s)", self.nics)
    }
}
