//! The physical network under a topology: hosts and switches joined by full-duplex links,
//! each direction of a link its own resource, and the route a message takes.
//!
//! The ideal model (`network.model: ideal`) needs only a pair's cost, [`super::Topology::link`];
//! the flow model (`network.model: flow`, see `docs/flow-model.md`) needs the directed
//! links a message crosses, so that two messages crossing one link share its bandwidth.
//! Every topology kind describes its links here:
//!
//! | kind | links | route |
//! | --- | --- | --- |
//! | `fully_connected` | one private link per pair of ranks | the pair's link |
//! | `torus2d`, `mesh2d`, `ring` | one per pair of grid neighbours | dimension order: along the row first, then along the column; on a torus the shorter way round, the increasing direction on a tie |
//! | `hierarchical` | a switch per group of every level; a rank to its innermost group's switch, each switch to its parent's | up to the innermost common group's switch, then down |
//! | `graph`, `custom` | as listed | fewest hops; among equal paths, traced back from the destination through the lowest-index node one hop closer to the source |
//! | `fat_tree` | host to leaf, every leaf to every spine | through the leaf, or up to spine `dst mod spines` and down (D-mod-k) |
//!
//! A directed link is named by a [`LinkId`], a number the fabric chooses: a machine with
//! a link per pair of ranks has P(P-1) of them and the flow model must not hold a table
//! that large, so it keeps state only for the links messages have crossed.
//!
//! A route's cost alone (no sharing) is `sum of its links' alpha + m / (its slowest
//! bandwidth)`, and every fabric's [`super::Topology::link`] is exactly that, so a message
//! that shares nothing takes the same time in both models.

use super::Link;

/// One direction of a physical link, numbered by its fabric.
pub type LinkId = u64;

/// The links and routes of a machine (see the module docs).
pub trait Fabric: Send + Sync + std::fmt::Debug {
    /// Append to `out` the directed links a message from rank `a` to rank `b` (`a != b`)
    /// crosses, in order from `a`.
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>);
    /// Latency and bandwidth of directed link `id`.
    fn hop(&self, id: LinkId) -> Link;
    /// `id`'s name for reports: `from->to` by node names (`r3->r4`, `h0->leaf0`).
    fn link_name(&self, id: LinkId) -> String;
    /// How many directed links the machine has.
    fn link_count(&self) -> u64;
    /// The most bytes a name [`Fabric::link_name`] gives can take as a report writes it
    /// ([`crate::units::written_len`]), or a bound on it: what a report of the five
    /// busiest links may hold, reserved before the run. The default bounds the names
    /// fabrics make of numbers (`n12nvswitch->n12g3`, `r5->r6 (wrap)`, `spine3->leaf40`)
    /// by the digits of the largest number they can hold; a fabric whose names come from
    /// the scenario (`graph`'s nodes, `hierarchical`'s levels) measures its own.
    fn longest_link_name(&self) -> usize {
        generated_link_name(self.link_count().max(self.nodes() as u64))
    }

    /// How many nodes (hosts and switches) [`Fabric::out_links`] describes: 0 when the
    /// fabric does not describe its graph, and then no route can change (a link fault
    /// cuts off every message that needs the failed link).
    fn nodes(&self) -> usize {
        0
    }
    /// Node `n`'s name, as [`Fabric::link_name`] writes it.
    fn node_name(&self, _n: usize) -> String {
        String::new()
    }
    /// The node rank `r` runs on.
    fn rank_node(&self, r: usize) -> usize {
        r
    }
    /// Append the directed links that leave node `n`, each with the node it reaches, in
    /// a fixed order (the order [`detour`] breaks ties in).
    fn out_links(&self, _n: usize, _out: &mut Vec<(LinkId, usize)>) {}
}

/// A bound on the bytes of a link name a fabric makes of numbers below `n`: each end is a
/// word of at most nine letters (`n12nvswitch`, `n3pcie.out`, `n7nic1`) around at most
/// two numbers, the two ends joined by `->`, and a grid's wrap-around link says so
/// (` (wrap)`).
pub fn generated_link_name(n: u64) -> usize {
    let digits = n.max(1).ilog10() as usize + 1;
    2 * (9 + 2 * digits) + 2 + 7
}

/// A route from rank `a` to rank `b` that crosses no link `failed` names, into `out`:
/// the fewest hops; among equally short ones, the first a breadth-first search from `a`
/// reaches `b` by, visiting each node's links in [`Fabric::out_links`] order. `false`
/// (and `out` untouched) when every path crosses a failed link, or the fabric does not
/// describe its graph. Costs `O(nodes + links looked at)`; the flow model calls it only
/// for a pair whose usual route crosses a failed link.
pub fn detour(f: &dyn Fabric, a: usize, b: usize, failed: impl Fn(LinkId) -> bool, out: &mut Vec<LinkId>) -> bool {
    let n = f.nodes();
    let (from, to) = (f.rank_node(a), f.rank_node(b));
    if n == 0 || from >= n || to >= n {
        return false;
    }
    // For every node reached: the link it was reached by and the node before it.
    let mut prev: Vec<Option<(LinkId, usize)>> = vec![None; n];
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = vec![false; n];
    seen[from] = true;
    let mut edges = Vec::new();
    while let Some(u) = queue.pop_front() {
        if u == to {
            break;
        }
        edges.clear();
        f.out_links(u, &mut edges);
        for &(id, v) in &edges {
            if v < n && !seen[v] && !failed(id) {
                seen[v] = true;
                prev[v] = Some((id, u));
                queue.push_back(v);
            }
        }
    }
    if !seen[to] || from == to {
        return false;
    }
    let at = out.len();
    let mut v = to;
    while let Some((id, u)) = prev[v] {
        out.push(id);
        v = u;
    }
    out[at..].reverse();
    true
}

/// A route's cost alone: the sum of its links' alphas (in route order) and its slowest
/// bandwidth.
pub fn route_cost(f: &dyn Fabric, route: &[LinkId]) -> Link {
    route.iter().fold(Link { alpha: 0.0, bandwidth: f64::INFINITY }, |acc, &id| {
        let l = f.hop(id);
        Link { alpha: acc.alpha + l.alpha, bandwidth: acc.bandwidth.min(l.bandwidth) }
    })
}
