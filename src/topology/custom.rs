//! A machine drawn by hand: nodes (the ranks, in the order listed) and the links
//! between them, an undirected petgraph graph.
//!
//! Routing: a message takes a path with the fewest hops. Among equally short paths the
//! path from `a` to `b` is traced back from `b`, each step going to the lowest-index
//! neighbour one hop closer to `a` (so `a -> b` and `b -> a` may take different paths of
//! the same length). A message on path `a = v0, v1, ..., vh = b` costs
//! `sum alpha(v_i, v_i+1) + m / min B(v_i, v_i+1)`: every hop's latency is paid, and the
//! slowest hop sets the rate (the ideal model has no store-and-forward and no sharing).
//!
//! Every pair's cost is computed once, by one breadth-first search per source
//! (O(P (P + E))), and kept in a P x P table so `link` is O(1). That is the one place
//! a topology holds P*P entries, so custom graphs are capped at [`MAX_NODES`] nodes
//! (4 MiB of table); a graph that large is better described by another kind.

use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;

use super::{Link, Topology};

/// The most nodes a custom graph may have (its all-pairs table is P*P links).
pub const MAX_NODES: usize = 512;

/// See the module docs.
#[derive(Clone, Debug)]
pub struct Custom {
    names: Vec<String>,
    nics: Vec<u32>,
    /// `table[a * P + b]`: the routed cost from `a` to `b`.
    table: Vec<Link>,
    best: (Link, u32),
    uniform: Option<(Link, u32)>,
}

/// The first node (by index) that node 0 cannot reach, if any: what makes a graph of
/// `nodes` nodes and these undirected `edges` disconnected.
pub fn unreachable(nodes: usize, edges: &[(usize, usize)]) -> Option<usize> {
    if nodes == 0 {
        return None;
    }
    let g = graph(nodes, edges.iter().map(|&(a, b)| (a, b, ())));
    let mut seen = vec![false; nodes];
    let mut bfs = petgraph::visit::Bfs::new(&g, NodeIndex::new(0));
    while let Some(v) = bfs.next(&g) {
        seen[v.index()] = true;
    }
    seen.iter().position(|s| !s)
}

fn graph<E>(nodes: usize, edges: impl Iterator<Item = (usize, usize, E)>) -> UnGraph<(), E> {
    let mut g = UnGraph::with_capacity(nodes, 0);
    for _ in 0..nodes {
        g.add_node(());
    }
    for (a, b, e) in edges {
        g.add_edge(NodeIndex::new(a), NodeIndex::new(b), e);
    }
    g
}

impl Custom {
    /// A graph of the named nodes (ports per node in `nics`) and undirected `edges`
    /// `(a, b, link)` by node index. Errors on more than [`MAX_NODES`] nodes, a bad index,
    /// a self-loop, a repeated pair or a disconnected graph (the parser reports these
    /// with their place in the file; this is the backstop).
    pub fn new(names: Vec<String>, nics: Vec<u32>, edges: &[(usize, usize, Link)]) -> Result<Self, String> {
        let p = names.len();
        if p == 0 {
            return Err("a custom topology needs at least one node".to_string());
        }
        if p > MAX_NODES {
            return Err(format!("a custom topology may have at most {MAX_NODES} nodes, not {p}"));
        }
        if nics.len() != p {
            return Err(format!("{} port counts for {p} nodes", nics.len()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for &(a, b, _) in edges {
            if a >= p || b >= p {
                return Err(format!("a link names node {}, but there are {p}", a.max(b)));
            }
            if a == b {
                return Err(format!("node '{}' is linked to itself", names[a]));
            }
            if !seen.insert((a.min(b), a.max(b))) {
                return Err(format!("nodes '{}' and '{}' are linked twice", names[a], names[b]));
            }
        }
        let pairs: Vec<(usize, usize)> = edges.iter().map(|&(a, b, _)| (a, b)).collect();
        if let Some(v) = unreachable(p, &pairs) {
            return Err(format!("node '{}' cannot be reached from node '{}'", names[v], names[0]));
        }

        let g = graph(p, edges.iter().map(|&(a, b, l)| (a, b, l)));
        // Neighbours of each node in index order, with the link to them.
        let adj: Vec<Vec<(usize, Link)>> = (0..p)
            .map(|v| {
                let mut n: Vec<(usize, Link)> =
                    g.edges(NodeIndex::new(v)).map(|e| (other(e.source(), e.target(), v), *e.weight())).collect();
                n.sort_by_key(|&(u, _)| u);
                n
            })
            .collect();

        let none = Link { alpha: 0.0, bandwidth: f64::INFINITY };
        let mut table = vec![none; p * p];
        let mut dist = vec![usize::MAX; p];
        let mut order = Vec::with_capacity(p);
        for s in 0..p {
            // Breadth-first distances from s; `order` lists nodes by distance.
            dist.fill(usize::MAX);
            order.clear();
            dist[s] = 0;
            order.push(s);
            let mut head = 0;
            while head < order.len() {
                let v = order[head];
                head += 1;
                for &(u, _) in &adj[v] {
                    if dist[u] == usize::MAX {
                        dist[u] = dist[v] + 1;
                        order.push(u);
                    }
                }
            }
            // Each node's path is its lowest-index closer neighbour's path plus one hop;
            // that neighbour comes earlier in `order`, so its cost is already known.
            let row = &mut table[s * p..(s + 1) * p];
            for &v in &order[1..] {
                let (u, l) =
                    adj[v].iter().find(|&&(u, _)| dist[u] + 1 == dist[v]).copied().expect("a closer neighbour");
                let via = if u == s { none } else { row[u] };
                row[v] = Link { alpha: via.alpha + l.alpha, bandwidth: via.bandwidth.min(l.bandwidth) };
            }
        }

        let fewest = nics.iter().copied().min().unwrap_or(1);
        // A direct link is always its pair's route, so the best pair is the best link.
        let best = if edges.is_empty() {
            (none, fewest)
        } else {
            let alpha = edges.iter().map(|e| e.2.alpha).fold(f64::INFINITY, f64::min);
            let bandwidth = edges.iter().map(|e| e.2.bandwidth).fold(0.0, f64::max);
            (Link { alpha, bandwidth }, fewest)
        };
        // The Hockney machine: every pair directly linked, all links alike, all ports alike.
        let all_alike = (0..p).all(|a| (0..p).all(|b| a == b || table[a * p + b] == best.0));
        let same_ports = nics.iter().all(|&k| k == fewest);
        let uniform = (all_alike && same_ports && edges.len() == p * (p - 1) / 2).then_some(best);
        Ok(Custom { names, nics, table, best, uniform })
    }

    /// The nodes' names, in rank order.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

fn other(a: NodeIndex, b: NodeIndex, v: usize) -> usize {
    if a.index() == v { b.index() } else { a.index() }
}

impl Topology for Custom {
    fn ranks(&self) -> usize {
        self.names.len()
    }

    #[inline]
    fn link(&self, a: usize, b: usize) -> Link {
        self.table[a * self.names.len() + b]
    }

    fn nics(&self, rank: usize) -> u32 {
        self.nics[rank]
    }

    fn best_link(&self) -> (Link, u32) {
        self.best
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        self.uniform
    }

    fn describe(&self) -> String {
        format!("custom graph of {} nodes", self.names.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(alpha: f64, bandwidth: f64) -> Link {
        Link { alpha, bandwidth }
    }

    #[test]
    fn routes_by_hops_then_lowest_index() {
        // A square 0-1-2-3-0 plus a tail 2-4. From 0 to 2 there are two 2-hop paths,
        // via 1 and via 3; tracing back from 2 takes the lower index, 1.
        let names = (0..5).map(|i| i.to_string()).collect();
        let edges = [
            (0, 1, link(1.0, 10.0)),
            (1, 2, link(2.0, 5.0)),
            (2, 3, link(4.0, 1.0)),
            (3, 0, link(8.0, 1.0)),
            (2, 4, link(16.0, 20.0)),
        ];
        let c = Custom::new(names, vec![1; 5], &edges).unwrap();
        assert_eq!(c.link(0, 2), link(3.0, 5.0));
        // 4 -> 0: back from 0, the closer neighbours of 0 (toward 4) are 1 and 3; 1 wins.
        assert_eq!(c.link(4, 0), link(19.0, 5.0));
        assert_eq!(c.link(3, 0), link(8.0, 1.0));
        assert_eq!(c.best_link(), (link(1.0, 20.0), 1));
        assert!(c.uniform().is_none());
    }

    #[test]
    fn rejects_bad_graphs() {
        let names = || vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let l = link(1.0, 1.0);
        assert!(Custom::new(names(), vec![1; 3], &[(0, 1, l)]).unwrap_err().contains("'c' cannot be reached"));
        assert!(Custom::new(names(), vec![1; 3], &[(0, 0, l)]).unwrap_err().contains("itself"));
        assert!(Custom::new(names(), vec![1; 3], &[(0, 1, l), (1, 0, l), (1, 2, l)]).unwrap_err().contains("twice"));
        let full = Custom::new(names(), vec![2; 3], &[(0, 1, l), (1, 2, l), (0, 2, l)]).unwrap();
        assert_eq!(full.uniform(), Some((l, 2)));
        assert_eq!(unreachable(3, &[(0, 2)]), Some(1));
    }
}
