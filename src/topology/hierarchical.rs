//! A hierarchical machine: GPUs in nodes, nodes under leaf switches, leaves under a
//! spine (BlueConnect's w0, w1, w2; docs/scenario.md).
//!
//! Levels are listed innermost first. Level `i` groups `size_i` groups of level `i-1`
//! (level 0 groups `size_0` ranks), so a level-`i` group holds
//! `stride_i = size_0 * ... * size_i` consecutive ranks and rank `r` is in level-`i`
//! group `r / stride_i`. Two ranks talk at the cost of the innermost level whose group
//! holds both, which is the outermost level at which their groups one level down
//! differ: ranks 3 and 5 of `[8, 4]` share a node (level 0); ranks 3 and 11 do not,
//! but share the level-1 group, so they pay level 1's alpha and bandwidth.
//!
//! Ports: every rank has the topology's `nics` (default 1). A level's optional `nics`
//! gives the *leader* of each of its groups (the group's first rank, `r % stride_i == 0`)
//! that many ports instead; a rank leading groups of several levels gets the most of
//! them. This is how a node whose network card sits at one GPU, or the survey's
//! hierarchical-ring leader "receiving from every member at once", is written: a node
//! of 8 with `nics: 7` on level 0 gives each node's first GPU 7 ports.

use super::{Link, Topology};

/// One level of a [`Hierarchical`] machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// How many groups of the level below (ranks, for level 0) one group of this level holds.
    pub size: usize,
    /// The link between two ranks whose innermost common group is at this level.
    pub link: Link,
    /// Ports of the first rank of each group of this level, if it differs from the rest.
    pub nics: Option<u32>,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Hierarchical {
    levels: Vec<Level>,
    /// `stride[i]`: ranks in one level-`i` group (the product of sizes `0..=i`).
    stride: Vec<usize>,
    /// Ports of a rank that leads no group with its own `nics`.
    nics: u32,
    /// Each level's name, for the switches' names (`level0` unless named).
    names: Vec<String>,
    /// `switch_base[i]`: the first [`super::LinkId`] of the links from level-`i`
    /// switches up to their parents (after the `2P` links of the ranks).
    switch_base: Vec<u64>,
}

impl Hierarchical {
    /// A machine of `levels` (innermost first) whose ranks have `nics` ports each unless
    /// a level says otherwise for its leaders. Errors on no levels, a size of 0, or a
    /// rank count that does not fit in `usize`.
    pub fn new(levels: Vec<Level>, nics: u32) -> Result<Self, String> {
        if levels.is_empty() {
            return Err("a hierarchical topology needs at least one level".to_string());
        }
        let mut stride = Vec::with_capacity(levels.len());
        let mut ranks = 1usize;
        for (i, l) in levels.iter().enumerate() {
            if l.size == 0 {
                return Err(format!("level {i} has size 0; a level groups at least one group of the level below"));
            }
            ranks = ranks
                .checked_mul(l.size)
                .ok_or_else(|| "the levels' sizes multiply to more ranks than this machine can count".to_string())?;
            stride.push(ranks);
        }
        let names = (0..levels.len()).map(|i| format!("level{i}")).collect();
        let mut switch_base = Vec::with_capacity(levels.len());
        let mut next = 2 * ranks as u64;
        for &s in &stride {
            switch_base.push(next);
            next += 2 * (ranks / s) as u64;
        }
        Ok(Hierarchical { levels, stride, nics, names, switch_base })
    }

    /// Name the levels (innermost first) for the switch names of [`super::Fabric`]
    /// (`nvlink3` is level `nvlink`'s group 3); extra or missing names are ignored.
    pub fn with_names(mut self, names: &[String]) -> Self {
        for (mine, theirs) in self.names.iter_mut().zip(names) {
            mine.clone_from(theirs);
        }
        self
    }

    /// Whether every level is at least as slow as the one inside it: alpha never
    /// smaller, bandwidth never larger. Under the flow model a message between two
    /// groups crosses every inner level's links too, so only then is its cost alone the
    /// level's `(alpha, B)`; the error names the first level that breaks it.
    pub fn check_nested(&self) -> Result<(), String> {
        for (i, w) in self.levels.windows(2).enumerate() {
            let (inner, outer) = (w[0].link, w[1].link);
            if outer.alpha < inner.alpha || outer.bandwidth > inner.bandwidth {
                // A level the scenario named is named; an unnamed one is its number only
                // (not "level 1 (level1)").
                let called = |k: usize| {
                    let name = &self.names[k];
                    if *name == format!("level{k}") { format!("level {k}") } else { format!("level {k} ({name})") }
                };
                return Err(format!(
                    "{} is faster than {} inside it; under network.model: flow \
                     a message between its groups crosses level {i}'s links too, so each level needs \
                     alpha at least and bandwidth at most those of the level inside it",
                    called(i + 1),
                    called(i)
                ));
            }
        }
        Ok(())
    }

    /// The levels, innermost first.
    pub fn level_list(&self) -> &[Level] {
        &self.levels
    }

    /// The level at which ranks `a` and `b` talk: the innermost one whose group holds both.
    #[inline]
    pub fn level_of(&self, a: usize, b: usize) -> usize {
        // At most one pass over the levels (a handful): O(levels) = O(log P).
        self.stride.iter().position(|&s| a / s == b / s).unwrap_or(self.levels.len() - 1)
    }
}

impl Topology for Hierarchical {
    fn ranks(&self) -> usize {
        self.stride[self.stride.len() - 1]
    }

    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        self.levels[self.level_of(a, b)].link
    }

    fn nics(&self, rank: usize) -> u32 {
        let leads = self.levels.iter().zip(&self.stride).filter(|(_, s)| rank.is_multiple_of(**s));
        leads.filter_map(|(l, _)| l.nics).fold(self.nics, u32::max)
    }

    fn best_link(&self) -> (Link, u32) {
        // Only levels with size > 1 join any pair of ranks (a level of size 1 adds no pair),
        // except on a single rank, where no link is used at all.
        let used: Vec<&Level> = self.levels.iter().filter(|l| l.size > 1).collect();
        let pool: Vec<&Level> = if used.is_empty() { self.levels.iter().collect() } else { used };
        let alpha = pool.iter().map(|l| l.link.alpha).fold(f64::INFINITY, f64::min);
        let bandwidth = pool.iter().map(|l| l.link.bandwidth).fold(0.0, f64::max);
        // Rank 1 leads only the groups every rank leads (levels of stride 1), so it has
        // the fewest ports; with one rank there is only rank 0.
        let fewest = if self.ranks() > 1 { self.nics(1) } else { self.nics(0) };
        (Link { alpha, bandwidth }, fewest)
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        let mut used = self.levels.iter().filter(|l| l.size > 1).map(|l| l.link);
        let link = used.next().unwrap_or(self.levels[0].link);
        let (_, fewest) = self.best_link();
        // Rank 0 leads every group, so it has the most ports.
        (used.all(|l| l == link) && self.nics(0) == fewest).then_some((link, fewest))
    }

    fn levels(&self) -> Option<Vec<(usize, Link)>> {
        Some(self.levels.iter().map(|l| (l.size, l.link)).collect())
    }

    fn fabric(&self) -> Option<&dyn super::Fabric> {
        Some(self)
    }

    fn describe(&self) -> String {
        let sizes: Vec<String> = self.levels.iter().map(|l| l.size.to_string()).collect();
        format!("hierarchical {} (innermost first), {} nic(s)", sizes.join("x"), self.nics)
    }
}

/// A switch per group of every level: rank `r` is linked to its level-0 group's switch
/// (links `2r` up, `2r + 1` down), and each level-`i` switch to its level-`i+1` parent.
/// A link into a level-`i` switch has level `i`'s bandwidth and half the step in alpha
/// from level `i-1` to level `i`, so a message whose ranks' innermost common group is at
/// level `c` crosses `2(c + 1)` links whose alphas add up to level `c`'s alpha.
impl super::Fabric for Hierarchical {
    fn route(&self, a: usize, b: usize, out: &mut Vec<super::LinkId>) {
        let c = self.level_of(a, b);
        out.push(2 * a as u64);
        for i in 0..c {
            out.push(self.switch_base[i] + 2 * (a / self.stride[i]) as u64);
        }
        for i in (0..c).rev() {
            out.push(self.switch_base[i] + 2 * (b / self.stride[i]) as u64 + 1);
        }
        out.push(2 * b as u64 + 1);
    }

    fn hop(&self, id: super::LinkId) -> Link {
        let level = self.switch_base.iter().rposition(|&base| id >= base).map_or(0, |i| i + 1);
        let l = self.levels[level].link;
        let inner = if level == 0 { 0.0 } else { self.levels[level - 1].link.alpha };
        Link { alpha: (l.alpha - inner) / 2.0, bandwidth: l.bandwidth }
    }

    fn link_name(&self, id: super::LinkId) -> String {
        let (up, down) = (id.is_multiple_of(2), id / 2);
        let (lower, upper) = match self.switch_base.iter().rposition(|&base| id >= base) {
            None => (format!("r{down}"), format!("{}{}", self.names[0], down as usize / self.stride[0])),
            Some(i) => {
                let g = ((id - self.switch_base[i]) / 2) as usize;
                let parent = g * self.stride[i] / self.stride[i + 1];
                (format!("{}{g}", self.names[i]), format!("{}{parent}", self.names[i + 1]))
            }
        };
        if up { format!("{lower}->{upper}") } else { format!("{upper}->{lower}") }
    }

    fn link_count(&self) -> u64 {
        // Every rank and every switch below the top has one link to its parent, each way.
        self.switch_base[self.switch_base.len() - 1]
    }

    fn longest_link_name(&self) -> usize {
        // A level's name and a group's number at each end (a rank is `r` and its number).
        let longest = self.names.iter().map(|n| crate::units::written_len(n)).max().unwrap_or(0).max(1);
        let digits = self.link_count().max(1).ilog10() as usize + 1;
        2 * (longest + digits) + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(size: usize, alpha: f64, nics: Option<u32>) -> Level {
        Level { size, link: Link { alpha, bandwidth: 1.0 / alpha }, nics }
    }

    #[test]
    fn pairs_talk_at_their_innermost_common_level() {
        let h = Hierarchical::new(vec![l(4, 1.0, None), l(2, 2.0, None), l(3, 3.0, None)], 1).unwrap();
        assert_eq!(h.ranks(), 24);
        assert_eq!(h.level_of(0, 3), 0);
        assert_eq!(h.level_of(3, 4), 1);
        assert_eq!(h.level_of(7, 8), 2);
        assert_eq!(h.level_of(23, 0), 2);
        assert_eq!(h.link(9, 14).alpha, 2.0);
    }

    #[test]
    fn routes_climb_to_the_common_switch() {
        use crate::topology::{Fabric, route_cost};
        let lv = |size, alpha: f64, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
        let h = Hierarchical::new(vec![lv(4, 1.0, 8.0), lv(2, 3.0, 4.0), lv(3, 7.0, 2.0)], 1).unwrap().with_names(&[
            "node".to_string(),
            "leaf".to_string(),
            "spine".to_string(),
        ]);
        assert!(h.check_nested().is_ok());
        for a in 0..24 {
            for b in 0..24 {
                if a != b {
                    let mut route = Vec::new();
                    h.route(a, b, &mut route);
                    assert_eq!(route.len(), 2 * (h.level_of(a, b) + 1));
                    assert_eq!(route_cost(&h, &route), h.link(a, b), "{a} -> {b}");
                }
            }
        }
        let mut route = Vec::new();
        h.route(1, 9, &mut route);
        let names: Vec<String> = route.iter().map(|&id| h.link_name(id)).collect();
        assert_eq!(names, ["r1->node0", "node0->leaf0", "leaf0->spine0", "spine0->leaf1", "leaf1->node2", "node2->r9"]);
        // 24 ranks, 6 nodes, 3 leaves: each linked up to its parent, both ways.
        assert_eq!(h.link_count(), 2 * (24 + 6 + 3));
        let inverted = Hierarchical::new(vec![lv(4, 1.0, 8.0), lv(2, 3.0, 16.0)], 1).unwrap();
        // Unnamed levels by number only; named ones by number and name.
        let e = inverted.check_nested().unwrap_err();
        assert!(e.starts_with("level 1 is faster than level 0 inside it;"), "{e}");
        let e = inverted.with_names(&["nvlink".to_string(), "ib".to_string()]).check_nested().unwrap_err();
        assert!(e.starts_with("level 1 (ib) is faster than level 0 (nvlink) inside it;"), "{e}");
    }

    #[test]
    fn leaders_get_their_levels_ports() {
        let h = Hierarchical::new(vec![l(4, 1.0, Some(3)), l(2, 2.0, Some(5)), l(3, 3.0, None)], 2).unwrap();
        assert_eq!(h.nics(0), 5);
        assert_eq!(h.nics(4), 3);
        assert_eq!(h.nics(8), 5);
        assert_eq!(h.nics(1), 2);
        assert_eq!(h.best_link().1, 2);
        assert!(h.uniform().is_none());
        let one = Hierarchical::new(vec![l(1, 1.0, None), l(6, 2.0, None)], 1).unwrap();
        assert_eq!(one.uniform(), Some((Link { alpha: 2.0, bandwidth: 0.5 }, 1)));
    }
}
