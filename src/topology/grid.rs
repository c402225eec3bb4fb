//! Grids: the 2-D torus (`torus2d`, wrap-around links), the 2-D mesh (`mesh2d`, none)
//! and the ring (`ring`, a torus of one row).
//!
//! Ranks are laid out row-major: rank `r` sits at row `r / cols`, column `r % cols`.
//! Neighbours (one hop apart) cost the link's `(alpha, B)`; any other pair is routed
//! along the grid and costs `hops * alpha + m / B`, `hops` being the grid distance:
//! `|dr| + |dc|` on a mesh, `min(|dr|, rows - |dr|) + min(|dc|, cols - |dc|)` on a torus
//! (SPEC section 4). Every hop of a dimension-ordered route has the same bandwidth, so
//! the slowest hop is any hop; no graph search is needed and `link` is O(1).
//! (A user-listed graph, where paths do need a search, is [`super::Custom`].)

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

    fn describe(&self) -> String {
        if self.ring {
            format!("ring of {}, {} nic(s)", self.cols, self.nics)
        } else {
            let kind = if self.wraps { "torus2d" } else { "mesh2d" };
            format!("{kind} {}x{}, {} nic(s)", self.rows, self.cols, self.nics)
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
    fn squarest_layouts() {
        assert_eq!(squarest(64), (8, 8));
        assert_eq!(squarest(48), (6, 8));
        assert_eq!(squarest(7), (1, 7));
        assert_eq!(squarest(1), (1, 1));
    }
}
