//! A machine drawn as a graph (`kind: graph`): named nodes, hosts (which run ranks) and
//! switches (which do not), joined by full-duplex links, and the ranks placed on hosts.
//! `kind: custom` is the case where every node is a host and rank `r` runs on node `r`
//! ([`Graph::custom`]).
//!
//! **Routing.** A message takes a path with the fewest hops. Among equally short paths
//! the path from `a` to `b` is traced back from `b`, each step going to the lowest-index
//! node (index in `nodes:`) one hop closer to `a`, so `a -> b` and `b -> a` may take
//! different paths of the same length. Any node may be crossed on the way, hosts too. A
//! message on path `a = v0, v1, ..., vh = b` costs
//! `sum alpha(v_i, v_i+1) + m / min B(v_i, v_i+1)`, the alphas added in path order from
//! 0: every hop's latency is paid, and the slowest hop sets the rate (the ideal model has
//! no store-and-forward and no sharing). `link(a, b)` is [`super::route_cost`] of the
//! route itself, so both network models see the same cost bit for bit.
//!
//! **Routes on demand.** A table of every pair's route would be P x P, so a route is
//! found when a message first needs it: a breadth-first search from the source that stops
//! as soon as it reaches the destination (every node nearer the source is then known, and
//! the trace back only looks at those). Routes are kept per ordered pair of ranks in a
//! cache that is emptied when it passes [`MAX_CACHED_ROUTES`] routes or
//! [`MAX_CACHED_HOPS`] hops; only lookups reach it, so its order never shows in any
//! output.
//!
//! **Placement.** Rank `r` runs on host `placement[r]`, each host at most once
//! ([`Graph::placed`]). [`Graph::order`] gives the hosts in the orders a scenario can
//! name ([`RankOrder`]): `host_order`, the hosts as listed; `strided`, the hosts grouped
//! by their lowest-index neighbouring switch (a host with no switch next to it is a group
//! of its own), groups in the order of that switch's (or lone host's) index, hosts within
//! a group as listed, and ranks dealt round-robin over the groups: the first host of each
//! group, then the second of each, and so on, skipping groups that have run out. On a
//! two-tier tree that puts consecutive ranks under different leaves.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::{Fabric, Link, LinkId, Topology, route_cost};

/// The most routes a [`Graph`] keeps before it empties its cache and starts again (about
/// 100 MB of routes of a few hops).
pub const MAX_CACHED_ROUTES: usize = 1 << 20;

/// The most hops, summed over its routes, a route cache keeps before it empties itself
/// (16 MiB of link ids). Counting routes alone let a machine of long routes (a line of
/// P nodes: routes of up to P - 1 hops) keep P^2 link ids when every pair talks.
pub const MAX_CACHED_HOPS: usize = 1 << 22;

/// One node of a [`Graph`].
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Its name, for link names and messages.
    pub name: String,
    /// A host may run a rank; a switch only forwards.
    pub host: bool,
    /// Full-duplex ports of the rank running here (unused on a switch).
    pub nics: u32,
}

/// An order of a machine's hosts that ranks are placed in (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankOrder {
    /// The hosts in the order they are listed (on a fat tree, host by host, leaf by leaf).
    HostOrder,
    /// Round-robin over the hosts' switches: consecutive ranks under different switches.
    Strided,
}

/// Where a graph's ranks run: an order of all hosts (the first `ranks` of it), or an
/// explicit list of hosts by node index, which fixes the rank count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Placement {
    /// The first `ranks` hosts in this order.
    Order(RankOrder),
    /// Rank `r` on node `hosts[r]`.
    Hosts(Vec<usize>),
}

/// See the module docs.
pub struct Graph {
    names: Vec<String>,
    host: Vec<bool>,
    /// Ports per node.
    nics: Vec<u32>,
    /// The undirected links as listed: link `i` is directed links `2i` (first end to
    /// second) and `2i + 1` (back).
    links: Vec<(u32, u32, Link)>,
    /// Adjacency in one array: node `v`'s neighbours are `adj[start[v]..start[v + 1]]`,
    /// by increasing node index, each with the directed link from `v` to it.
    start: Vec<usize>,
    adj: Vec<(u32, LinkId)>,
    hosts: usize,
    /// Rank `r` runs on node `placement[r]`.
    placement: Vec<usize>,
    /// Built from `kind: custom` (only to name it).
    custom: bool,
    best: (Link, u32),
    uniform: Option<(Link, u32)>,
    routes: Mutex<Routes>,
}

/// The route cache and the search's scratch space, behind one lock: a topology is shared
/// between threads, though each run point builds its own.
#[derive(Default)]
struct Routes {
    cache: HashMap<u64, Route>,
    /// The hops of the routes in `cache`, summed.
    hops: usize,
    /// `dist[v]` is valid in the current search when `stamp[v] == generation`, so a
    /// search touches only the nodes it reaches instead of clearing a table per route.
    stamp: Vec<u32>,
    dist: Vec<u32>,
    generation: u32,
    queue: Vec<u32>,
}

/// One pair's route and its cost alone.
struct Route {
    cost: Link,
    links: Box<[LinkId]>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.names.len())
            .field("hosts", &self.hosts)
            .field("links", &self.links.len())
            .field("ranks", &self.placement.len())
            .finish_non_exhaustive()
    }
}

/// The first host, and the first host (by index) it cannot reach, if any: what makes a
/// machine whose nodes are hosts where `host` says so, joined by these undirected
/// `edges`, disconnected. Switches nobody reaches do not matter.
pub fn unreachable_host(host: &[bool], edges: &[(usize, usize)]) -> Option<(usize, usize)> {
    let first = host.iter().position(|&h| h)?;
    let n = host.len();
    let (start, adj) = adjacency(n, edges.iter().enumerate().map(|(i, &(a, b))| (i, a, b)));
    let mut seen = vec![false; n];
    let mut queue = vec![first];
    seen[first] = true;
    let mut head = 0;
    while head < queue.len() {
        let v = queue[head];
        head += 1;
        for &(u, _) in &adj[start[v]..start[v + 1]] {
            let u = u as usize;
            if !seen[u] {
                seen[u] = true;
                queue.push(u);
            }
        }
    }
    (0..n).find(|&v| host[v] && !seen[v]).map(|v| (first, v))
}

/// The first node (by index) that node 0 cannot reach, if any: what makes a graph of
/// `nodes` nodes and these undirected `edges` disconnected.
pub fn unreachable(nodes: usize, edges: &[(usize, usize)]) -> Option<usize> {
    unreachable_host(&vec![true; nodes], edges).map(|(_, v)| v)
}

/// Adjacency arrays (see [`Graph`]) of `n` nodes from undirected links `(i, a, b)`, link
/// `i` being directed links `2i` (a to b) and `2i + 1`. Ends must be in range.
fn adjacency(n: usize, links: impl Iterator<Item = (usize, usize, usize)> + Clone) -> (Vec<usize>, Vec<(u32, LinkId)>) {
    let mut start = vec![0usize; n + 1];
    for (_, a, b) in links.clone() {
        start[a + 1] += 1;
        start[b + 1] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut adj = vec![(0u32, 0 as LinkId); start[n]];
    for (i, a, b) in links {
        let i = i as LinkId;
        adj[fill[a]] = (b as u32, 2 * i);
        fill[a] += 1;
        adj[fill[b]] = (a as u32, 2 * i + 1);
        fill[b] += 1;
    }
    // Lowest index first: the tie-break of the routes and of `strided` reads them in order.
    for v in 0..n {
        adj[start[v]..start[v + 1]].sort_unstable_by_key(|&(u, _)| u);
    }
    (start, adj)
}

impl Graph {
    /// A machine of `nodes` and undirected `links` `(a, b, link)` by node index (link `i`
    /// as listed is directed links `2i`, a to b, and `2i + 1`), ranks on every host in
    /// listed order ([`Graph::placed`] puts them elsewhere). Errors on no host, a repeated
    /// name, a bad index, a self-loop, a pair linked twice, an alpha that is negative or
    /// not finite, a bandwidth that is not positive and finite, or two hosts with no path
    /// between them (the parser reports these with their place in the file; this is the
    /// backstop).
    pub fn new(nodes: Vec<Node>, links: &[(usize, usize, Link)]) -> Result<Self, String> {
        let n = nodes.len();
        if !nodes.iter().any(|v| v.host) {
            return Err("a graph needs at least one host (a node that runs a rank)".to_string());
        }
        if u32::try_from(n).is_err() {
            return Err(format!("a graph may have at most {} nodes, not {n}", u32::MAX));
        }
        let mut names = HashSet::with_capacity(n);
        for v in &nodes {
            if !names.insert(v.name.as_str()) {
                return Err(format!("node '{}' is listed twice", v.name));
            }
        }
        let mut pairs = HashSet::with_capacity(links.len());
        for &(a, b, l) in links {
            if a >= n || b >= n {
                return Err(format!("a link names node {}, but there are {n}", a.max(b)));
            }
            if a == b {
                return Err(format!("node '{}' is linked to itself", nodes[a].name));
            }
            if !pairs.insert((a.min(b), a.max(b))) {
                return Err(format!("nodes '{}' and '{}' are linked twice", nodes[a].name, nodes[b].name));
            }
            if !(l.alpha >= 0.0 && l.alpha.is_finite() && l.bandwidth > 0.0 && l.bandwidth.is_finite()) {
                return Err(format!(
                    "the link between '{}' and '{}' has alpha {} and bandwidth {}; alpha must be at least 0 \
                     and bandwidth above 0, both finite",
                    nodes[a].name, nodes[b].name, l.alpha, l.bandwidth
                ));
            }
        }
        let host: Vec<bool> = nodes.iter().map(|v| v.host).collect();
        let ends: Vec<(usize, usize)> = links.iter().map(|&(a, b, _)| (a, b)).collect();
        if let Some((from, to)) = unreachable_host(&host, &ends) {
            return Err(format!("host '{}' cannot be reached from host '{}'", nodes[to].name, nodes[from].name));
        }
        let (start, adj) = adjacency(n, links.iter().enumerate().map(|(i, &(a, b, _))| (i, a, b)));
        let hosts = host.iter().filter(|&&h| h).count();
        let placement: Vec<usize> = (0..n).filter(|&v| host[v]).collect();
        let (names, nics) = nodes.into_iter().map(|v| (v.name, v.nics)).unzip();
        let g = Graph {
            names,
            host,
            nics,
            links: links.iter().map(|&(a, b, l)| (a as u32, b as u32, l)).collect(),
            start,
            adj,
            hosts,
            placement: Vec::new(),
            custom: false,
            best: (Link { alpha: 0.0, bandwidth: f64::INFINITY }, 1),
            uniform: None,
            routes: Mutex::new(Routes::default()),
        };
        g.placed(placement)
    }

    /// `kind: custom`: every node a host, named `names` with `nics` ports each, rank `r`
    /// on node `r`. Errors as [`Graph::new`].
    pub fn custom(names: Vec<String>, nics: Vec<u32>, links: &[(usize, usize, Link)]) -> Result<Self, String> {
        if names.is_empty() {
            return Err("a custom topology needs at least one node".to_string());
        }
        if nics.len() != names.len() {
            return Err(format!("{} port counts for {} nodes", nics.len(), names.len()));
        }
        let nodes = names.into_iter().zip(nics).map(|(name, nics)| Node { name, host: true, nics }).collect();
        let mut g = Graph::new(nodes, links)?;
        g.custom = true;
        Ok(g)
    }

    /// The same machine with rank `r` on node `hosts[r]`. Errors on no ranks, a node
    /// that is not there or is a switch, or a host given twice.
    pub fn placed(mut self, hosts: Vec<usize>) -> Result<Self, String> {
        if hosts.is_empty() {
            return Err("a placement needs at least one host".to_string());
        }
        let mut taken = vec![false; self.names.len()];
        for &v in &hosts {
            let Some(name) = self.names.get(v) else {
                return Err(format!("the placement names node {v}, but there are {}", self.names.len()));
            };
            if !self.host[v] {
                return Err(format!("'{name}' is a switch; ranks run on hosts"));
            }
            if std::mem::replace(&mut taken[v], true) {
                return Err(format!("host '{name}' is placed twice; a host runs at most one rank"));
            }
        }
        self.placement = hosts;
        let fewest = self.placement.iter().map(|&v| self.nics[v]).min().unwrap_or(1);
        let best = if self.links.is_empty() {
            Link { alpha: 0.0, bandwidth: f64::INFINITY }
        } else {
            // Every route crosses at least one link, so no pair beats the best link.
            let alpha = self.links.iter().map(|e| e.2.alpha).fold(f64::INFINITY, f64::min);
            let bandwidth = self.links.iter().map(|e| e.2.bandwidth).fold(0.0, f64::max);
            Link { alpha, bandwidth }
        };
        self.best = (best, fewest);
        // The Hockney machine: every pair of ranks directly linked (a direct link is always
        // its pair's route), all those links alike, all ports alike.
        let p = self.placement.len();
        let mut common: Option<Link> = None;
        let mut alike = self.placement.iter().all(|&v| self.nics[v] == fewest);
        for &v in &self.placement {
            let mut linked = 0;
            for &(u, id) in self.neighbours(v) {
                if taken[u as usize] {
                    linked += 1;
                    let l = self.hop(id);
                    alike &= *common.get_or_insert(l) == l;
                }
            }
            alike &= linked == p - 1;
        }
        self.uniform = alike.then(|| (common.unwrap_or(best), fewest));
        // Routes are cached by rank, and the ranks have moved.
        let routes = self.routes.get_mut().unwrap_or_else(PoisonError::into_inner);
        routes.cache.clear();
        routes.hops = 0;
        Ok(self)
    }

    /// Every host, in `order` (see the module docs); a placement is a prefix of it.
    pub fn order(&self, order: RankOrder) -> Vec<usize> {
        let hosts = (0..self.names.len()).filter(|&v| self.host[v]);
        match order {
            RankOrder::HostOrder => hosts.collect(),
            RankOrder::Strided => {
                // Group key: the lowest-index switch next to the host, else the host.
                let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
                for v in hosts {
                    let sw = self.neighbours(v).iter().map(|&(u, _)| u as usize).find(|&u| !self.host[u]);
                    groups.entry(sw.unwrap_or(v)).or_default().push(v);
                }
                let mut live: Vec<std::vec::IntoIter<usize>> = groups.into_values().map(Vec::into_iter).collect();
                let mut out = Vec::with_capacity(self.hosts);
                while !live.is_empty() {
                    live.retain_mut(|g| g.next().map(|v| out.push(v)).is_some());
                }
                out
            }
        }
    }

    /// How many nodes (hosts and switches).
    pub fn node_count(&self) -> usize {
        self.names.len()
    }

    /// How many hosts: the most ranks the machine can run.
    pub fn host_count(&self) -> usize {
        self.hosts
    }

    /// Node `v`'s name.
    pub fn node_name(&self, v: usize) -> &str {
        &self.names[v]
    }

    /// Whether node `v` is a host.
    pub fn is_host(&self, v: usize) -> bool {
        self.host[v]
    }

    /// The node each rank runs on, in rank order.
    pub fn placement(&self) -> &[usize] {
        &self.placement
    }

    fn neighbours(&self, v: usize) -> &[(u32, LinkId)] {
        &self.adj[self.start[v]..self.start[v + 1]]
    }

    /// Run `f` on the route from rank `a` to rank `b`, finding it first if it is not cached.
    fn with_route<R>(&self, a: usize, b: usize, f: impl FnOnce(&Route) -> R) -> R {
        let key = (a as u64) << 32 | b as u64;
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = routes.cache.get(&key) {
            return f(r);
        }
        let route = self.search(self.placement[a], self.placement[b], &mut routes);
        let out = f(&route);
        if routes.cache.len() >= MAX_CACHED_ROUTES || routes.hops + route.links.len() > MAX_CACHED_HOPS {
            routes.cache.clear();
            routes.hops = 0;
        }
        routes.hops += route.links.len();
        routes.cache.insert(key, route);
        out
    }

    /// The hops of the routes cached now, summed: at most [`MAX_CACHED_HOPS`] (or one
    /// route's, on a machine whose routes are longer than that).
    pub fn cached_hops(&self) -> usize {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner).hops
    }

    /// The route from node `s` to node `t` (see the module docs).
    fn search(&self, s: usize, t: usize, r: &mut Routes) -> Route {
        let n = self.names.len();
        if r.stamp.len() != n {
            r.stamp = vec![0; n];
            r.dist = vec![0; n];
            r.generation = 0;
        }
        r.generation = r.generation.wrapping_add(1);
        if r.generation == 0 {
            r.stamp.fill(0);
            r.generation = 1;
        }
        let now = r.generation;
        r.queue.clear();
        r.queue.push(s as u32);
        r.stamp[s] = now;
        r.dist[s] = 0;
        let mut head = 0;
        // Once t is reached, every node nearer s has been reached too (all of t's level
        // minus one was found while the level before it was searched), and the trace back
        // from t looks only at those.
        'search: while head < r.queue.len() {
            let v = r.queue[head] as usize;
            head += 1;
            let d = r.dist[v] + 1;
            for &(u, _) in self.neighbours(v) {
                let u = u as usize;
                if r.stamp[u] != now {
                    r.stamp[u] = now;
                    r.dist[u] = d;
                    if u == t {
                        break 'search;
                    }
                    r.queue.push(u as u32);
                }
            }
        }
        let mut links = Vec::with_capacity(if r.stamp[t] == now { r.dist[t] as usize } else { 0 });
        let mut v = t;
        while v != s {
            let d = r.dist[v];
            let &(u, out) = self
                .neighbours(v)
                .iter()
                .find(|&&(u, _)| r.stamp[u as usize] == now && r.dist[u as usize] + 1 == d)
                .expect("every host reaches every other (checked when the graph was built)");
            // `out` leads from v back to u; the message crosses the other direction.
            links.push(out ^ 1);
            v = u as usize;
        }
        links.reverse();
        Route { cost: route_cost(self, &links), links: links.into_boxed_slice() }
    }
}

impl Topology for Graph {
    fn ranks(&self) -> usize {
        self.placement.len()
    }

    fn link(&self, a: usize, b: usize) -> Link {
        self.with_route(a, b, |r| r.cost)
    }

    fn nics(&self, rank: usize) -> u32 {
        self.nics[self.placement[rank]]
    }

    fn best_link(&self) -> (Link, u32) {
        self.best
    }

    fn uniform(&self) -> Option<(Link, u32)> {
        self.uniform
    }

    fn fabric(&self) -> Option<&dyn Fabric> {
        Some(self)
    }

    fn describe(&self) -> String {
        let n = self.names.len();
        if self.custom {
            format!("custom graph of {n} node{}", if n == 1 { "" } else { "s" })
        } else {
            let (h, s) = (self.hosts, n - self.hosts);
            let plural = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
            format!(
                "graph of {} ({}, {})",
                plural(n, "node", "nodes"),
                plural(h, "host", "hosts"),
                plural(s, "switch", "switches")
            )
        }
    }
}

/// The links as listed, each both ways; routes as in the module docs.
impl Fabric for Graph {
    fn route(&self, a: usize, b: usize, out: &mut Vec<LinkId>) {
        self.with_route(a, b, |r| out.extend_from_slice(&r.links));
    }

    fn hop(&self, id: LinkId) -> Link {
        self.links[(id / 2) as usize].2
    }

    fn link_name(&self, id: LinkId) -> String {
        let (a, b, _) = self.links[(id / 2) as usize];
        let (from, to) = if id.is_multiple_of(2) { (a, b) } else { (b, a) };
        format!("{}->{}", self.names[from as usize], self.names[to as usize])
    }

    fn link_count(&self) -> u64 {
        2 * self.links.len() as u64
    }

    fn longest_link_name(&self) -> usize {
        let longest = self.names.iter().map(|n| crate::units::written_len(n)).max().unwrap_or(0);
        2 * longest + 2
    }

    fn nodes(&self) -> usize {
        self.names.len()
    }

    fn node_name(&self, n: usize) -> String {
        self.names[n].clone()
    }

    fn rank_node(&self, r: usize) -> usize {
        self.placement[r]
    }

    /// By increasing node index, as the usual routes break ties.
    fn out_links(&self, n: usize, out: &mut Vec<(LinkId, usize)>) {
        out.extend(self.adj[self.start[n]..self.start[n + 1]].iter().map(|&(u, id)| (id, u as usize)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(alpha: f64, bandwidth: f64) -> Link {
        Link { alpha, bandwidth }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| i.to_string()).collect()
    }

    #[test]
    fn routes_by_hops_then_lowest_index() {
        // A square 0-1-2-3-0 plus a tail 2-4. From 0 to 2 there are two 2-hop paths,
        // via 1 and via 3; tracing back from 2 takes the lower index, 1.
        let edges = [
            (0, 1, link(1.0, 10.0)),
            (1, 2, link(2.0, 5.0)),
            (2, 3, link(4.0, 1.0)),
            (3, 0, link(8.0, 1.0)),
            (2, 4, link(16.0, 20.0)),
        ];
        let c = Graph::custom(names(5), vec![1; 5], &edges).unwrap();
        assert_eq!(c.link(0, 2), link(3.0, 5.0));
        // 4 -> 0: back from 0, the closer neighbours of 0 (toward 4) are 1 and 3; 1 wins.
        assert_eq!(c.link(4, 0), link(19.0, 5.0));
        assert_eq!(c.link(3, 0), link(8.0, 1.0));
        assert_eq!(c.best_link(), (link(1.0, 20.0), 1));
        assert!(c.uniform().is_none());
        // 3 -> 0 is link 3 listed (3, 0): directed link 6; 0 -> 3 is 7.
        let mut route = Vec::new();
        c.route(3, 0, &mut route);
        c.route(0, 3, &mut route);
        assert_eq!(route, [6, 7]);
        assert_eq!(c.link_name(7), "0->3");
        assert_eq!(c.describe(), "custom graph of 5 nodes");
    }

    #[test]
    fn rejects_bad_graphs() {
        let names = || vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let l = link(1.0, 1.0);
        assert!(Graph::custom(names(), vec![1; 3], &[(0, 1, l)]).unwrap_err().contains("'c' cannot be reached"));
        assert!(Graph::custom(names(), vec![1; 3], &[(0, 0, l)]).unwrap_err().contains("itself"));
        assert!(Graph::custom(names(), vec![1; 3], &[(0, 1, l), (1, 0, l), (1, 2, l)]).unwrap_err().contains("twice"));
        assert!(Graph::custom(names(), vec![1; 3], &[(0, 1, link(-1.0, 1.0))]).unwrap_err().contains("alpha -1"));
        let full = Graph::custom(names(), vec![2; 3], &[(0, 1, l), (1, 2, l), (0, 2, l)]).unwrap();
        assert_eq!(full.uniform(), Some((l, 2)));
        assert_eq!(unreachable(3, &[(0, 2)]), Some(1));
        // A switch nobody reaches does not disconnect the hosts; a host does.
        let node = |name: &str, host| Node { name: name.to_string(), host, nics: 1 };
        let g = Graph::new(
            vec![node("h0", true), node("s", false), node("h1", true), node("lost", false)],
            &[(0, 1, l), (1, 2, l)],
        )
        .unwrap();
        assert_eq!(g.describe(), "graph of 4 nodes (2 hosts, 2 switches)");
        let e = Graph::new(vec![node("h0", true), node("s", false), node("h1", true)], &[(0, 1, l)]).unwrap_err();
        assert_eq!(e, "host 'h1' cannot be reached from host 'h0'");
        assert!(Graph::new(vec![node("s", false)], &[]).unwrap_err().contains("at least one host"));
        assert!(g.clone_placed(vec![1]).unwrap_err().contains("'s' is a switch"));
        assert!(g.clone_placed(vec![2, 2]).unwrap_err().contains("'h1' is placed twice"));
        assert!(g.clone_placed(vec![9]).unwrap_err().contains("node 9"));
    }

    impl Graph {
        fn clone_placed(&self, hosts: Vec<usize>) -> Result<Graph, String> {
            let nodes = (0..self.names.len())
                .map(|v| Node { name: self.names[v].clone(), host: self.host[v], nics: self.nics[v] })
                .collect();
            let links: Vec<(usize, usize, Link)> =
                self.links.iter().map(|&(a, b, l)| (a as usize, b as usize, l)).collect();
            Graph::new(nodes, &links)?.placed(hosts)
        }
    }

    #[test]
    fn strided_deals_over_switches() {
        // Switches n0 and n5; hosts n1, n2, n3 under n5, hosts n4, n6 under n0, host n7
        // next to no switch (only to host n6). Groups, by key: n0 {4, 6}, n5 {1, 2, 3},
        // n7 alone {7}. Round 1: 4, 1, 7; round 2: 6, 2; round 3: 3.
        let node = |i: usize| Node { name: format!("n{i}"), host: i != 0 && i != 5, nics: 1 };
        let l = link(1.0, 1.0);
        let edges = [(5, 1, l), (5, 2, l), (5, 3, l), (0, 4, l), (0, 6, l), (0, 5, l), (6, 7, l)];
        let g = Graph::new((0..8).map(node).collect(), &edges).unwrap();
        assert_eq!(g.order(RankOrder::HostOrder), [1, 2, 3, 4, 6, 7]);
        assert_eq!(g.order(RankOrder::Strided), [4, 1, 7, 6, 2, 3]);
        assert_eq!(g.host_count(), 6);
    }
}
