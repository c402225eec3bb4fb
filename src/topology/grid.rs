//! Grids: the 2-D torus (`torus2d`, wrap-around links), the 2-D mesh (`mesh2d`, none)
//! and the ring (`ring`, a torus of one row).
//!
//! Ranks are laid out row-major: rank `r` sits at row `r / cols`, column `r % cols`.
//! Neighbours (one hop apart) cost the link's `(alpha, B)`; any other pair is routed
//! along the grid and costs `hops * alpha + m / B`, `hops` being the grid distance:
//! `|dr| + |dc|` on a mesh, `min(|dr|, rows - |dr|) + min(|dc|, cols - |dc|)` on a torus
//! (docs/scenario.md). Every hop of a dimension-ordered route has the same bandwidth, so
//! the slowest hop is any hop; no graph search is needed and `link` is O(1).
//! (A user-listed graph, where paths do need a search, is [`super::Graph`].)

use super::{Link, Topology};

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Grid {
    rows: usize,
    cols: usize,
    wraps: bool,
    /// True for a `ring` (a `1 x P` torus), only to name it.
    ring: bool,
    link: Link,
    nics: u32,
}

impl Grid {
    /// A `rows x cols` torus.
    pub fn torus(rows: usize, cols: usize, link: Link, nics: u32) -> Self {
        Grid { rows, cols, wraps: true, ring: false, link, nics }
    }

    /// A `rows x cols` mesh.
    pub fn mesh(rows: usize, cols: usize, link: Link, nics: u32) -> Self {
        Grid { rows, cols, wraps: false, ring: false, link, nics }
    }

    /// A ring of `ranks`: rank `r` is next to `r - 1` and `r + 1 (mod P)`.
    pub fn ring(ranks: usize, link: Link, nics: u32) -> Self {
        Grid { rows: 1, cols: ranks, wraps: true, ring: true, link, nics }
    }

    /// Hops between ranks `a` and `b` along the grid.
    #[inline]
    pub fn hops(&self, a: usize, b: usize) -> usize {
        let along = |x: usize, y: usize, n: usize| {
            let d = x.abs_diff(y);
            if self.wraps { d.min(n - d) } else { d }
        };
        along(a / self.cols, b / self.cols, self.rows) + along(a % self.cols, b % self.cols, self.cols)
    }

    /// The largest hop count between two ranks.
    pub fn diameter(&self) -> usize {
        let span = |n: usize| if self.wraps { n / 2 } else { n - 1 };
        span(self.rows) + span(self.cols)
    }
}

/// The most nearly square `rows x cols` layout of `p` ranks with `rows <= cols`:
/// `rows` is the largest divisor of `p` not above `sqrt p` (a prime `p` is `1 x p`).
pub fn squarest(p: usize) -> (usize, usize) {
    let mut rows = p.isqrt().max(1);
    while !p.is_multiple_of(rows) {
        rows -= 1;
    }
    (rows, p / rows)
}

impl Topology for Grid {
    fn ranks(&self) -> usize {
        self.rows * self.cols
    }

    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        let hops = self.hops(a, b) as f64;
        Link { alpha: hops * self.link.alpha, bandwidth: self.link.bandwidth }
    }

    fn nics(&self, _rank: usize) -> u32 {
        self.nics
    }

    fn best_link(&self) -> (Link, u32) {
        (self.link, self.nics)
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        // Only a grid whose every pair are neighbours (a 1x2 or 1x3 torus; not a 2x2 mesh,
        // whose diagonal is two hops) is the Hockney machine.
        (self.diameter() <= 1).then_some((self.link, self.nics))
    }

    fn grid(&self) -> Option<(usize, usize, bool)> {
        Some((self.rows, self.cols, self.wraps))
    }

    fn fabric(&self) -> Option<&dyn super::Fabric> {
        Some(self)
    }

    fn describe(&self) -> String {
        if self.ring {
            format!("ring of {}, {} nic(s)", self.cols, self.nics)
        } else {
            let kind = if self.wraps { "torus2d" } else { "mesh2d" };
            format!("{kind} {}x{}, {} nic(s)", self.rows, self.cols, self.nics)
        }
    }
}

/// The four ways out of a grid node, as the low two bits of a [`super::LinkId`]
/// (`rank * 4 + way`).
const EAST: u64 = 0;
const WEST: u64 = 1;
const SOUTH: u64 = 2;
const NORTH: u64 = 3;

impl Grid {
    /// Steps from `x` to `y` along a dimension of `n`: how many, and whether toward
    /// increasing index. On a torus the shorter way round; on a tie, increasing.
    fn steps(&self, x: usize, y: usize, n: usize) -> (usize, bool) {
        if self.wraps {
            let up = (y + n - x) % n;
            if up <= n - up { (up, true) } else { (n - up, false) }
        } else if y >= x {
            (y - x, true)
        } else {
            (x - y, false)
        }
    }

    /// The rank one step from `r` the way `way` goes.
    fn neighbour(&self, r: usize, way: u64) -> usize {
        let (row, col) = (r / self.cols, r % self.cols);
        let (rows, cols) = (self.rows, self.cols);
        match way {
            EAST => row * cols + (col + 1) % cols,
            WEST => row * cols + (col + cols - 1) % cols,
            SOUTH => (row + 1) % rows * cols + col,
            _ => (row + rows - 1) % rows * cols + col,
        }
    }
}

/// A link per pair of grid neighbours, each way; dimension-order routing (see
/// [`super::fabric`]): along the row to the destination's column, then along the column.
impl super::Fabric for Grid {
    fn route(&self, a: usize, b: usize, out: &mut Vec<super::LinkId>) {
        let mut r = a;
        let (n, up) = self.steps(a % self.cols, b % self.cols, self.cols);
        let way = if up { EAST } else { WEST };
        for _ in 0..n {
            out.push((r * 4) as u64 + way);
            r = self.neighbour(r, way);
        }
        let (n, up) = self.steps(a / self.cols, b / self.cols, self.rows);
        let way = if up { SOUTH } else { NORTH };
        for _ in 0..n {
            out.push((r * 4) as u64 + way);
            r = self.neighbour(r, way);
        }
        debug_assert_eq!(r, b);
    }

    fn hop(&self, _id: super::LinkId) -> Link {
        self.link
    }

    fn link_name(&self, id: super::LinkId) -> String {
        let (r, way) = ((id / 4) as usize, id % 4);
        let (row, col) = (r / self.cols, r % self.cols);
        let wrap = match way {
            EAST => col + 1 == self.cols,
            WEST => col == 0,
            SOUTH => row + 1 == self.rows,
            _ => row == 0,
        };
        format!("r{r}->r{}{}", self.neighbour(r, way), if wrap { " (wrap)" } else { "" })
    }

    fn nodes(&self) -> usize {
        self.rows * self.cols
    }

    fn node_name(&self, n: usize) -> String {
        format!("r{n}")
    }

    /// East, west, south, north, where the grid has that link.
    fn out_links(&self, n: usize, out: &mut Vec<(super::LinkId, usize)>) {
        let (row, col) = (n / self.cols, n % self.cols);
        let has = |way: u64| match (self.wraps, way) {
            (true, EAST | WEST) => self.cols > 1,
            (true, _) => self.rows > 1,
            (false, EAST) => col + 1 < self.cols,
            (false, WEST) => col > 0,
            (false, SOUTH) => row + 1 < self.rows,
            (false, _) => row > 0,
        };
        for way in [EAST, WEST, SOUTH, NORTH] {
            if has(way) {
                out.push(((n * 4) as u64 + way, self.neighbour(n, way)));
            }
        }
    }

    fn link_count(&self) -> u64 {
        let (r, c) = (self.rows as u64, self.cols as u64);
        if self.wraps {
            r * c * (2 * u64::from(c > 1) + 2 * u64::from(r > 1))
        } else {
            2 * r * (c - 1) + 2 * c * (r - 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Link = Link { alpha: 1.0, bandwidth: 1.0 };

    #[test]
    fn hops_on_torus_and_mesh() {
        let t = Grid::torus(4, 5, L, 1);
        let m = Grid::mesh(4, 5, L, 1);
        // Rank 0 is (0,0), rank 19 is (3,4): torus wraps both ways, 1 + 1; mesh 3 + 4.
        assert_eq!(t.hops(0, 19), 2);
        assert_eq!(m.hops(0, 19), 7);
        assert_eq!(t.diameter(), 4);
        assert_eq!(m.diameter(), 7);
        assert_eq!(Grid::ring(7, L, 1).hops(1, 6), 2);
    }

    #[test]
    fn routes_go_along_the_row_then_the_column() {
        use crate::topology::{Fabric, route_cost};
        for g in [Grid::torus(4, 5, L, 1), Grid::mesh(4, 5, L, 1), Grid::ring(6, L, 1), Grid::torus(2, 2, L, 1)] {
            for a in 0..g.ranks() {
                for b in 0..g.ranks() {
                    if a == b {
                        continue;
                    }
                    let mut route = Vec::new();
                    g.route(a, b, &mut route);
                    assert_eq!(route.len(), g.hops(a, b), "{a} -> {b}");
                    assert_eq!(route_cost(&g, &route).alpha, g.hops(a, b) as f64);
                }
            }
        }
        // (0,0) -> (1,3) on a 4x5 torus: west 2 (the short way, through the wrap), south 1.
        let t = Grid::torus(4, 5, L, 1);
        let mut route = Vec::new();
        t.route(0, 8, &mut route);
        let names: Vec<String> = route.iter().map(|&id| t.link_name(id)).collect();
        assert_eq!(names, ["r0->r4 (wrap)", "r4->r3", "r3->r8"]);
        assert_eq!(t.link_count(), 80);
        assert_eq!(Grid::mesh(4, 5, L, 1).link_count(), 2 * 4 * 4 + 2 * 5 * 3);
    }

    #[test]
    fn squarest_layouts() {
        assert_eq!(squarest(64), (8, 8));
        assert_eq!(squarest(48), (6, 8));
        assert_eq!(squarest(7), (1, 7));
        assert_eq!(squarest(1), (1, 1));
    }
}
