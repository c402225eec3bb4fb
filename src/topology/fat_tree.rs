//! A two-tier fat tree (`kind: fat_tree`): `leaves` leaf switches of `hosts_per_leaf`
//! hosts each, and `spines` spine switches each linked to every leaf.
//!
//! Nodes are `h0..`, `leaf0..` and `spine0..`; host `h` hangs under leaf
//! `h / hosts_per_leaf`. Every host-leaf link is `link`, every leaf-spine link `uplink`,
//! each full duplex.
//!
//! **Routes.** Between hosts under one leaf: host, leaf, host. Otherwise up through the
//! source's leaf to spine `s = (destination host) mod spines`, down to the destination's
//! leaf and host: destination-mod-k routing (D-mod-k), which spreads the traffic to
//! different hosts of a leaf over the spines and sends everything for one host down one
//! spine. A route is arithmetic, so no search or cache is needed. A pair's cost is
//! [`super::route_cost`] of its route: under one leaf `(0 + a_l) + a_l` and `B_l`;
//! across leaves `(((0 + a_l) + a_u) + a_u) + a_l` and `min(B_l, B_u)`.
//!
//! **Placement.** `host_order`: rank `r` on host `r`. `strided`: rank `r` on leaf
//! `r mod leaves`, in its slot `r / leaves`, so consecutive ranks sit under different
//! leaves. Fewer ranks than hosts take the first ranks of that order.
//!
//! **Oversubscription.** A leaf's hosts can send `hosts_per_leaf * B_l` and its uplinks
//! carry `spines * B_u`: the ratio of the two ([`FatTree::oversubscription`]) is how far
//! traffic leaving a leaf is squeezed when every host sends off the leaf at once (under
//! the flow model; the ideal model never shares a link).

use super::{Fabric, Link, LinkId, RankOrder, Topology};

/// See the module docs.
#[derive(Clone, Debug)]
pub struct FatTree {
    hosts_per_leaf: usize,
    leaves: usize,
    spines: usize,
    link: Link,
    uplink: Link,
    nics: u32,
    order: RankOrder,
    ranks: usize,
    /// The cost of a route under one leaf, and across leaves.
    near: Link,
    far: Link,
}

/// Alphas added in route order from 0 and the slowest bandwidth: [`super::route_cost`]
/// of a route crossing these links, without a fabric.
fn cost(hops: &[Link]) -> Link {
    hops.iter().fold(Link { alpha: 0.0, bandwidth: f64::INFINITY }, |acc, l| Link {
        alpha: acc.alpha + l.alpha,
        bandwidth: acc.bandwidth.min(l.bandwidth),
    })
}

impl FatTree {
    /// `leaves` leaves of `hosts_per_leaf` hosts and `spines` spines, hosts linked to
    /// their leaf by `link` and leaves to spines by `uplink`; one port per host, a rank on
    /// every host in host order (see [`FatTree::with_nics`] and [`FatTree::placed`]).
    /// Errors on a count of 0, more hosts than can be counted, an alpha that is negative
    /// or not finite, or a bandwidth that is not positive and finite.
    pub fn new(hosts_per_leaf: usize, leaves: usize, spines: usize, link: Link, uplink: Link) -> Result<Self, String> {
        for (what, n) in [("hosts_per_leaf", hosts_per_leaf), ("leaves", leaves), ("spines", spines)] {
            if n == 0 {
                return Err(format!("a fat tree needs {what} of at least 1"));
            }
        }
        let hosts = hosts_per_leaf
            .checked_mul(leaves)
            .filter(|&h| leaves.checked_mul(spines).and_then(|u| u.checked_add(h)).is_some_and(|n| n < 1 << 62))
            .ok_or_else(|| {
                "a fat tree that large has more links than this machine can count: hosts_per_leaf x leaves + \
                 leaves x spines must stay below 2^62"
                    .to_string()
            })?;
        for (what, l) in [("link", link), ("uplink", uplink)] {
            if !(l.alpha >= 0.0 && l.alpha.is_finite() && l.bandwidth > 0.0 && l.bandwidth.is_finite()) {
                return Err(format!(
                    "the fat tree's {what} has alpha {} and bandwidth {}; alpha must be at least 0 and \
                     bandwidth above 0, both finite",
                    l.alpha, l.bandwidth
                ));
            }
        }
        Ok(FatTree {
            hosts_per_leaf,
            leaves,
            spines,
            link,
            uplink,
            nics: 1,
            order: RankOrder::HostOrder,
            ranks: hosts,
            near: cost(&[link, link]),
            far: cost(&[link, uplink, uplink, link]),
        })
    }

    /// The same tree with `nics` ports per host.
    pub fn with_nics(mut self, nics: u32) -> Self {
        self.nics = nics;
        self
    }

    /// The same tree with `ranks` ranks on the first hosts in `order` (see the module
    /// docs). Errors on 0 ranks or more ranks than hosts.
    pub fn placed(mut self, order: RankOrder, ranks: usize) -> Result<Self, String> {
        if ranks == 0 || ranks > self.hosts() {
            return Err(format!("a fat tree of {} hosts runs 1 to {} ranks, not {ranks}", self.hosts(), self.hosts()));
        }
        self.order = order;
        self.ranks = ranks;
        Ok(self)
    }

    /// How many hosts: `hosts_per_leaf * leaves`.
    pub fn hosts(&self) -> usize {
        self.hosts_per_leaf * self.leaves
    }

    /// `hosts_per_leaf * B_link / (spines * B_uplink)`: above 1, a leaf's hosts can send
    /// more than its uplinks carry.
    pub fn oversubscription(&self) -> f64 {
        oversubscription(self.hosts_per_leaf, self.spines, self.link.bandwidth, self.uplink.bandwidth)
    }

    /// The host rank `rank` runs on.
    #[inline]
    pub fn host_of(&self, rank: usize) -> usize {
        match self.order {
            RankOrder::HostOrder => rank,
            RankOrder::Strided => (rank % self.leaves) * self.hosts_per_leaf + rank / self.leaves,
        }
    }

    /// The spine a message to host `dst` crosses when it leaves its source's leaf.
    #[inline]
    pub fn spine_to(&self, dst: usize) -> usize {
        dst % self.spines
    }

    /// Whether some pair of ranks shares a leaf, and whether some pair does not.
    fn pairs(&self) -> (bool, bool) {
        let (p, h, l) = (self.ranks, self.hosts_per_leaf, self.leaves);
        match self.order {
            RankOrder::HostOrder => (p >= 2 && h >= 2, p > h),
            RankOrder::Strided => (p > l, p >= 2 && l >= 2),
        }
    }
}

/// A fat tree's oversubscription from its shape (see [`FatTree::oversubscription`]).
pub fn oversubscription(hosts_per_leaf: usize, spines: usize, link_bandwidth: f64, uplink_bandwidth: f64) -> f64 {
    hosts_per_leaf as f64 * link_bandwidth / (spines as f64 * uplink_bandwidth)
}

/// `8:1 oversubscribed`, `1:1, not oversubscribed`, `0.5:1, not oversubscribed`.
pub fn oversubscription_text(ratio: f64) -> String {
    // Far from 1 (an uplink of 1e-300 Gb/s) the digits would fill the line.
    let r = if ratio >= 1e9 || (ratio > 0.0 && ratio < 1e-15) {
        let s = format!("{ratio:.2e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
    } else if ratio >= 1.0 && (ratio - ratio.round()).abs() < 1e-9 {
        format!("{}", ratio.round())
    } else {
        // Two decimals, or two significant digits for a ratio below 0.01 (a few hosts under
        // fast uplinks), which two decimals would round to `0:1`.
        let decimals =
            if ratio > 0.0 && ratio < 0.01 { (1 - ratio.log10().floor() as i64).min(330) as usize } else { 2 };
        let s = format!("{ratio:.decimals$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if ratio > 1.0 { format!("{r}:1 oversubscribed") } else { format!("{r}:1, not oversubscribed") }
}

impl Topology for FatTree {
    fn ranks(&self) -> usize {
        self.ranks
    }

    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        let (ha, hb) = (self.host_of(a), self.host_of(b));
        if ha / self.hosts_per_leaf == hb / self.hosts_per_leaf { self.near } else { self.far }
    }

    fn nics(&self, _rank: usize) -> u32 {
        self.nics
    }

    fn best_link(&self) -> (Link, u32) {
        // A route under one leaf is never slower than one across leaves.
        let (near, far) = self.pairs();
        (if near || !far { self.near } else { self.far }, self.nics)
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        // Every pair of ranks costs the same when they all share a leaf, all sit under
        // different leaves, or the two costs happen to agree.
        let (near, far) = self.pairs();
        (!near || !far || self.near == self.far).then(|| self.best_link())
    }

    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        // In host order the ranks of a leaf are consecutive: a two-level hierarchy (the
        // leaf, then across leaves) for the topology-aware algorithms, when the ranks fill
        // whole leaves. Strided ranks of one leaf are not consecutive: no hierarchy.
        let h = self.hosts_per_leaf;
        match self.order {
            RankOrder::HostOrder if self.ranks <= h => Some(vec![(self.ranks, self.near)]),
            RankOrder::HostOrder if self.ranks.is_multiple_of(h) => {
                Some(vec![(h, self.near), (self.ranks / h, self.far)])
            }
            _ => None,
        }
    }

    fn fabric(&self) -> Option<&dyn Fabric> {
        Some(self)
    }

    fn describe(&self) -> String {
        let (l, h, s) = (self.leaves, self.hosts_per_leaf, self.spines);
        let plural = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        format!(
            "fat tree {} x {}, {}, {}",
            plural(l, "leaf", "leaves"),
            plural(h, "host", "hosts"),
            plural(s, "spine", "spines"),
            oversubscription_text(self.oversubscription())
        )
    }
}

/// Host `h`'s link to its leaf is link `h` (directed links `2h` up and `2h + 1` down);
/// leaf `l`'s link to spine `s` is link `H + l * spines + s` (`H` hosts), up then down.
impl Fabric for FatTree {
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>) {
        let (ha, hb) = (self.host_of(a), self.host_of(b));
        let (la, lb) = (ha / self.hosts_per_leaf, hb / self.hosts_per_leaf);
        out.push(2 * ha as LinkId);
        if la != lb {
            let uplinks = self.hosts() as LinkId;
            let s = self.spine_to(hb);
            out.push(2 * (uplinks + (la * self.spines + s) as LinkId));
            out.push(2 * (uplinks + (lb * self.spines + s) as LinkId) + 1);
        }
        out.push(2 * hb as LinkId + 1);
    }

    fn hop(&self, id: LinkId) -> Link {
        if id < 2 * self.hosts() as LinkId { self.link } else { self.uplink }
    }

    fn link_name(&self, id: LinkId) -> String {
        let (i, up) = ((id / 2) as usize, id.is_multiple_of(2));
        let (lower, upper) = if i < self.hosts() {
            (format!("h{i}"), format!("leaf{}", i / self.hosts_per_leaf))
        } else {
            let j = i - self.hosts();
            (format!("leaf{}", j / self.spines), format!("spine{}", j % self.spines))
        };
        if up { format!("{lower}->{upper}") } else { format!("{upper}->{lower}") }
    }

    fn link_count(&self) -> u64 {
        2 * (self.hosts() + self.leaves * self.spines) as u64
    }

    /// Hosts first, then leaves, then spines.
    fn nodes(&self) -> usize {
        self.hosts() + self.leaves + self.spines
    }

    fn node_name(&self, n: usize) -> String {
        let h = self.hosts();
        if n < h {
            format!("h{n}")
        } else if n < h + self.leaves {
            format!("leaf{}", n - h)
        } else {
            format!("spine{}", n - h - self.leaves)
        }
    }

    fn rank_node(&self, r: usize) -> usize {
        self.host_of(r)
    }

    /// A host: its leaf. A leaf: its hosts, then the spines. A spine: the leaves.
    fn out_links(&self, n: usize, out: &mut Vec<(LinkId, usize)>) {
        let (h, s) = (self.hosts(), self.spines);
        let uplink = |leaf: usize, spine: usize| 2 * (h + leaf * s + spine) as LinkId;
        if n < h {
            out.push((2 * n as LinkId, h + n / self.hosts_per_leaf));
        } else if n < h + self.leaves {
            let leaf = n - h;
            let hosts = leaf * self.hosts_per_leaf..(leaf + 1) * self.hosts_per_leaf;
            out.extend(hosts.map(|i| (2 * i as LinkId + 1, i)));
            out.extend((0..s).map(|k| (uplink(leaf, k), h + self.leaves + k)));
        } else {
            let spine = n - h - self.leaves;
            out.extend((0..self.leaves).map(|leaf| (uplink(leaf, spine) + 1, h + leaf)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::route_cost;

    const L: Link = Link { alpha: 0.5, bandwidth: 8.0 };
    const U: Link = Link { alpha: 0.25, bandwidth: 2.0 };

    #[test]
    fn routes_through_the_leaf_or_a_spine() {
        let t = FatTree::new(3, 4, 2, L, U).unwrap();
        let name = |a, b| {
            let mut r = Vec::new();
            t.route(a, b, &mut r);
            r.iter().map(|&id| t.link_name(id)).collect::<Vec<_>>()
        };
        assert_eq!(name(0, 2), ["h0->leaf0", "leaf0->h2"]);
        // Host 7 is under leaf 7 / 3 = 2; spine 7 mod 2 = 1.
        assert_eq!(name(1, 7), ["h1->leaf0", "leaf0->spine1", "spine1->leaf2", "leaf2->h7"]);
        assert_eq!(name(7, 4), ["h7->leaf2", "leaf2->spine0", "spine0->leaf1", "leaf1->h4"]);
        // 12 host links and 8 uplinks, both ways.
        assert_eq!(t.link_count(), 40);
        for a in 0..12 {
            for b in 0..12 {
                if a != b {
                    let mut r = Vec::new();
                    t.route(a, b, &mut r);
                    assert_eq!(route_cost(&t, &r), t.link(a, b), "{a} -> {b}");
                    assert!(r.iter().all(|&id| id < t.link_count()));
                }
            }
        }
        // (0.5 + 0.25 + 0.25) + 0.5 = 1.5, slowest 2; under one leaf 1 and 8.
        assert_eq!(t.link(1, 7), Link { alpha: 1.5, bandwidth: 2.0 });
        assert_eq!(t.link(1, 2), Link { alpha: 1.0, bandwidth: 8.0 });
        // 3 hosts x 8 / (2 spines x 2) = 6.
        assert_eq!(t.oversubscription(), 6.0);
        assert_eq!(t.describe(), "fat tree 4 leaves x 3 hosts, 2 spines, 6:1 oversubscribed");
    }

    #[test]
    fn placements_and_uniformity() {
        let t = FatTree::new(3, 4, 1, L, U).unwrap();
        let strided = t.clone().placed(RankOrder::Strided, 12).unwrap();
        // Rank r on leaf r mod 4, slot r / 4: ranks 0..4 on hosts 0, 3, 6, 9; rank 5 on 4.
        let hosts: Vec<usize> = (0..12).map(|r| strided.host_of(r)).collect();
        assert_eq!(hosts, [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
        assert!(strided.uniform().is_none());
        assert_eq!(strided.best_link().0, t.link(0, 1));
        // Four ranks strided: one per leaf, every pair across leaves.
        let spread = t.clone().placed(RankOrder::Strided, 4).unwrap();
        assert_eq!(spread.uniform(), Some((t.link(0, 3), 1)));
        // Three ranks in host order: all under leaf 0.
        let packed = t.clone().placed(RankOrder::HostOrder, 3).unwrap();
        assert_eq!(packed.uniform(), Some((t.link(0, 1), 1)));
        assert!(t.clone().placed(RankOrder::HostOrder, 13).unwrap_err().contains("1 to 12 ranks, not 13"));
        assert!(FatTree::new(3, 0, 1, L, U).unwrap_err().contains("leaves of at least 1"));
        assert_eq!(oversubscription_text(1.0), "1:1, not oversubscribed");
        assert_eq!(oversubscription_text(0.5), "0.5:1, not oversubscribed");
        assert_eq!(oversubscription_text(2.0 / 3.0 * 4.0), "2.67:1 oversubscribed");
        assert_eq!(oversubscription_text(4e-6), "0.000004:1, not oversubscribed");
        assert_eq!(oversubscription_text(1.0 / 3e10), "0.000000000033:1, not oversubscribed");
        assert_eq!(oversubscription_text(8e298), "8e298:1 oversubscribed");
        assert_eq!(oversubscription_text(1.0 / 3e290), "3.33e-291:1, not oversubscribed");
    }
}
