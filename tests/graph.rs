//! The flow model's machines (docs/flow-model.md): `graph` (hosts and switches, ranks
//! placed on hosts) and `fat_tree`. Routes and tie-breaks worked by hand, `link(a, b)`
//! equal to the cost of
//! the route bit for bit on every pair, the placements, the rank counts, every bad input
//! at its line and column, a fat tree drawn as a graph against `fat_tree`, and every
//! algorithm verified on both under the ideal model.

use allreduce_sim::algos::{self, Machine, Params, Problem};
use allreduce_sim::report::{Exporter, Table};
use allreduce_sim::scenario::{Overrides, Scenario, TopologySpec, parse_str};
use allreduce_sim::sim::data::{Expectations, Init, ReduceOp, Reference, Vectors, initial_values};
use allreduce_sim::sim::{engine::NoObserver, simulate};
use allreduce_sim::topology::{self, FatTree, Graph, Link, Node, Placement, RankOrder, Topology, route_cost};

const TAIL: &str = "algorithms: [ring]\nsizes: [4KiB]\n";

fn ok(text: &str) -> Scenario {
    parse_str(text, "ok.yaml").unwrap_or_else(|e| panic!("expected a valid scenario, got:\n{e}"))
}

/// The error for `text` is at `line` and `col`, says every one of `words`, and is one
/// `bad.yaml:LINE:COL: ...` message.
fn err_at(text: &str, line: u64, col: u64, words: &[&str]) {
    let e = match parse_str(text, "bad.yaml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    assert_eq!(e.position(), Some((line, col)), "wrong place in:\n{e}");
    for w in words {
        assert!(e.message().contains(w), "'{w}' missing from:\n{e}");
    }
    assert!(e.to_string().starts_with(&format!("bad.yaml:{line}:{col}: ")), "{e}");
}

/// The route from `a` to `b` by link names.
fn route_names(t: &dyn Topology, a: usize, b: usize) -> Vec<String> {
    let f = t.fabric().unwrap();
    let mut r = Vec::new();
    f.route(a, b, &mut r);
    r.iter().map(|&id| f.link_name(id)).collect()
}

/// `link(a, b)` is the route's cost alone, bit for bit, for every ordered pair, and every
/// route is a chain of links from `a`'s host to `b`'s within the fabric's ids.
fn costs_are_routes(t: &dyn Topology) {
    let f = t.fabric().unwrap();
    for a in 0..t.ranks() {
        for b in 0..t.ranks() {
            if a == b {
                continue;
            }
            let mut r = Vec::new();
            f.route(a, b, &mut r);
            assert!(!r.is_empty() && r.iter().all(|&id| id < f.link_count()), "{a} -> {b}");
            let (want, got) = (route_cost(f, &r), t.link(a, b));
            assert_eq!(
                (want.alpha.to_bits(), want.bandwidth.to_bits()),
                (got.alpha.to_bits(), got.bandwidth.to_bits()),
                "{a} -> {b} on {}",
                t.describe()
            );
            // Consecutive links meet: the head of one is the tail of the next.
            let names: Vec<String> = r.iter().map(|&id| f.link_name(id)).collect();
            for w in names.windows(2) {
                assert_eq!(w[0].split("->").nth(1), w[1].split("->").next(), "{names:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Routes by hand

/// Hosts h0 (node 0), h1 (3), h2 (4); switches s1 (1) and s0 (2), listed in that order
/// so that the lower index is not the cheaper path.
const SMALL: &str = "\
topology:
  kind: graph
  nodes:
    - h0
    - { name: s1, kind: switch }
    - { name: s0, kind: switch }
    - { name: h1, kind: host, nics: 2 }
    - h2
  links:
    - { a: h0, b: s1, alpha: 1us, bandwidth: 10GB/s }
    - { a: h0, b: s0, alpha: 2us, bandwidth: 10GB/s }
    - { a: s1, b: h1, alpha: 4us, bandwidth: 1GB/s }
    - { a: s0, b: h1, alpha: 8us, bandwidth: 10GB/s }
    - { a: h1, b: h2, alpha: 16us, bandwidth: 5GB/s }
";

#[test]
fn small_graph_by_hand() {
    let s = ok(&format!("{SMALL}{TAIL}"));
    assert_eq!(s.ranks, vec![3], "every host by default");
    let t = topology::build(&s.topology, 3).unwrap();
    assert_eq!(t.describe(), "graph of 5 nodes (3 hosts, 2 switches)");
    // Ranks 0, 1, 2 on h0, h1, h2 (host order).
    // h0 -> h1: two 2-hop paths, via s1 (node 1) and via s0 (node 2). Traced back from
    // h1, the lower index wins: s1, though via s0 is faster (2 + 8 = 10 us at 10 GB/s
    // against 1 + 4 = 5 us at 1 GB/s; hops and indices decide, not cost).
    assert_eq!(route_names(t.as_ref(), 0, 1), ["h0->s1", "s1->h1"]);
    // alpha = (0 + 1 us) + 4 us = 5 us; B = min(10, 1) GB/s.
    assert_eq!(t.link(0, 1), Link { alpha: 0.0 + 1e-6 + 4e-6, bandwidth: 1e9 });
    // Back the same way: from h0, its neighbours one hop closer to h1 are s1 and s0; s1.
    assert_eq!(route_names(t.as_ref(), 1, 0), ["h1->s1", "s1->h0"]);
    // h2 -> h0 crosses host h1: ((0 + 16) + 4) + 1 = 21 us, min(5, 1, 10) = 1 GB/s.
    assert_eq!(route_names(t.as_ref(), 2, 0), ["h2->h1", "h1->s1", "s1->h0"]);
    assert_eq!(t.link(2, 0), Link { alpha: 0.0 + 16e-6 + 4e-6 + 1e-6, bandwidth: 1e9 });
    // Directed ids: link i as listed is 2i one way and 2i + 1 back; h1 -> h2 is link 4.
    let f = t.fabric().unwrap();
    let mut r = Vec::new();
    f.route(1, 2, &mut r);
    f.route(2, 1, &mut r);
    assert_eq!(r, [8, 9]);
    assert_eq!(f.link_count(), 10);
    assert_eq!(f.hop(9), Link { alpha: 16e-6, bandwidth: 5e9 });
    // Ports: h1 set its own. The best link: the smallest alpha and largest bandwidth of
    // any link, and the fewest ports of any rank.
    assert_eq!((t.nics(0), t.nics(1), t.nics(2)), (1, 2, 1));
    assert_eq!(t.best_link(), (Link { alpha: 1e-6, bandwidth: 10e9 }, 1));
    assert!(t.uniform().is_none());
    costs_are_routes(t.as_ref());
}

#[test]
fn equal_paths_each_way_may_differ() {
    // A hexagon a - u1 - u2 - b - w2 - w1 - a, listed a, b, u2, w1, u1, w2 (indices 0..6).
    // a -> b: traced back from b, whose neighbours one hop closer to a are u2 (2) and w2
    // (5): u2, then u1. b -> a: traced back from a, whose neighbours one hop closer to b
    // are w1 (3) and u1 (4): w1, then w2. The two directions take different paths.
    let l = Link { alpha: 1.0, bandwidth: 1.0 };
    let names = ["a", "b", "u2", "w1", "u1", "w2"].map(String::from).to_vec();
    let g =
        Graph::custom(names, vec![1; 6], &[(0, 4, l), (4, 2, l), (2, 1, l), (0, 3, l), (3, 5, l), (5, 1, l)]).unwrap();
    assert_eq!(route_names(&g, 0, 1), ["a->u1", "u1->u2", "u2->b"]);
    assert_eq!(route_names(&g, 1, 0), ["b->w2", "w2->w1", "w1->a"]);
    // ((0 + 1) + 1) + 1 = 3 either way.
    assert_eq!(g.link(0, 1), Link { alpha: 3.0, bandwidth: 1.0 });
    costs_are_routes(&g);
}

#[test]
fn fat_tree_by_hand() {
    let s = ok("topology:
  kind: fat_tree
  hosts_per_leaf: 8
  leaves: 4
  link: { alpha: 0.5us, bandwidth: 100Gbps }
  uplink: { alpha: 1us, bandwidth: 100Gbps }
algorithms: [ring]
sizes: [4KiB]
");
    assert_eq!(s.ranks, vec![32]);
    let t = topology::build(&s.topology, 32).unwrap();
    assert_eq!(t.describe(), "fat tree 4 leaves x 8 hosts, 1 spine, 8:1 oversubscribed");
    // Ranks 3 and 5 share leaf 0: 0.5 + 0.5 = 1 us at 12.5 GB/s.
    assert_eq!(route_names(t.as_ref(), 3, 5), ["h3->leaf0", "leaf0->h5"]);
    assert_eq!(t.link(3, 5), Link { alpha: 0.0 + 0.5e-6 + 0.5e-6, bandwidth: 12.5e9 });
    // Ranks 3 and 9 (leaf 1): up to the one spine and down, ((0.5 + 1) + 1) + 0.5 = 3 us.
    assert_eq!(route_names(t.as_ref(), 3, 9), ["h3->leaf0", "leaf0->spine0", "spine0->leaf1", "leaf1->h9"]);
    assert_eq!(t.link(3, 9), Link { alpha: 0.0 + 0.5e-6 + 1e-6 + 1e-6 + 0.5e-6, bandwidth: 12.5e9 });
    // 32 host links and 4 uplinks, both ways.
    assert_eq!(t.fabric().unwrap().link_count(), 72);
    // The best pair shares a leaf.
    assert_eq!(t.best_link().0, t.link(3, 5));
    costs_are_routes(t.as_ref());

    // D-mod-k: with 3 spines, a message to host h goes through spine h mod 3.
    let ft = FatTree::new(2, 3, 3, Link { alpha: 1.0, bandwidth: 4.0 }, Link { alpha: 2.0, bandwidth: 1.0 }).unwrap();
    assert_eq!(route_names(&ft, 0, 5), ["h0->leaf0", "leaf0->spine2", "spine2->leaf2", "leaf2->h5"]);
    assert_eq!(route_names(&ft, 0, 4), ["h0->leaf0", "leaf0->spine1", "spine1->leaf2", "leaf2->h4"]);
    assert_eq!(route_names(&ft, 5, 0)[1], "leaf2->spine0");
    // 2 x 4 / (3 x 1) = 8/3.
    assert_eq!(ft.oversubscription(), 8.0 / 3.0);
    assert_eq!(ft.describe(), "fat tree 3 leaves x 2 hosts, 3 spines, 2.67:1 oversubscribed");
}

#[test]
fn routes_cost_what_link_says_on_many_machines() {
    let l = |alpha: f64, bandwidth: f64| Link { alpha, bandwidth };
    // Fat trees: shapes, spines, placements, rank counts below the host count, and
    // alphas that do not add exactly in floating point.
    for (hpl, leaves, spines) in [(1, 1, 1), (3, 1, 2), (1, 5, 1), (4, 3, 2), (3, 4, 3)] {
        for order in [RankOrder::HostOrder, RankOrder::Strided] {
            for ranks in [1, hpl * leaves / 2 + 1, hpl * leaves] {
                let ft = FatTree::new(hpl, leaves, spines, l(0.1e-6, 25e9), l(0.7e-6, 12.5e9))
                    .unwrap()
                    .with_nics(2)
                    .placed(order, ranks)
                    .unwrap();
                costs_are_routes(&ft);
            }
        }
    }
    // Graphs: a ring with chords and a grid of switches with hosts on the side, alphas and
    // bandwidths varying per link.
    for n in [2usize, 5, 9, 16] {
        let mut edges = Vec::new();
        for i in 0..n {
            edges.push((i, (i + 1) % n, l(0.1e-6 * (i + 1) as f64, 1e9 * (1 + i % 3) as f64)));
            if n > 4 && i % 3 == 0 && (i + n / 2) % n != i {
                let j = (i + n / 2) % n;
                if !edges.iter().any(|&(a, b, _)| (a, b) == (j, i) || (a, b) == (i, j)) {
                    edges.push((i, j, l(0.3e-6, 2e9)));
                }
            }
        }
        if n == 2 {
            edges.truncate(1);
        }
        let g = Graph::custom((0..n).map(|i| format!("n{i}")).collect(), vec![1; n], &edges).unwrap();
        costs_are_routes(&g);
    }
    // A 3 x 3 grid of switches (nodes 0..9), a host on each switch and one more on switch 4.
    let mut nodes: Vec<Node> = (0..9).map(|i| Node { name: format!("s{i}"), host: false, nics: 1 }).collect();
    nodes.extend((0..10).map(|i| Node { name: format!("h{i}"), host: true, nics: 1 + (i % 2) as u32 }));
    let mut edges = Vec::new();
    for r in 0..3 {
        for c in 0..3 {
            let v = r * 3 + c;
            if c < 2 {
                edges.push((v, v + 1, l(0.2e-6 + 0.1e-6 * c as f64, 10e9)));
            }
            if r < 2 {
                edges.push((v, v + 3, l(0.3e-6, 5e9 + 1e9 * r as f64)));
            }
        }
    }
    for h in 0..9 {
        edges.push((9 + h, h, l(0.05e-6, 20e9)));
    }
    edges.push((18, 4, l(0.05e-6, 20e9)));
    let g = Graph::new(nodes, &edges).unwrap();
    costs_are_routes(&g);
    let strided = g.order(RankOrder::Strided);
    let g = g.placed(strided[..7].to_vec()).unwrap();
    costs_are_routes(&g);
}

// ---------------------------------------------------------------------------------------
// A fat tree drawn as a graph

/// `fat_tree`'s machine as a `graph`: hosts, then leaves, then spines, host links in host
/// order and then each leaf's uplinks spine by spine, so the link ids are the fat tree's.
fn fat_tree_as_graph(hpl: usize, leaves: usize, spines: usize, placement: &str) -> String {
    let mut t = String::from("topology:\n  kind: graph\n  nodes:\n");
    for h in 0..hpl * leaves {
        t += &format!("    - {{ name: h{h}, kind: host }}\n");
    }
    for l in 0..leaves {
        t += &format!("    - {{ name: leaf{l}, kind: switch }}\n");
    }
    for s in 0..spines {
        t += &format!("    - {{ name: spine{s}, kind: switch }}\n");
    }
    t += "  links:\n";
    for h in 0..hpl * leaves {
        t += &format!("    - {{ a: h{h}, b: leaf{}, alpha: 0.3us, bandwidth: 100Gbps }}\n", h / hpl);
    }
    for l in 0..leaves {
        for s in 0..spines {
            t += &format!("    - {{ a: leaf{l}, b: spine{s}, alpha: 0.7us, bandwidth: 40Gbps }}\n");
        }
    }
    t + &format!("  placement: {placement}\n{TAIL}")
}

fn fat_tree(hpl: usize, leaves: usize, spines: usize, placement: &str) -> String {
    format!(
        "topology:\n  kind: fat_tree\n  hosts_per_leaf: {hpl}\n  leaves: {leaves}\n  spines: {spines}\n  \
         link: {{ alpha: 0.3us, bandwidth: 100Gbps }}\n  uplink: {{ alpha: 0.7us, bandwidth: 40Gbps }}\n  \
         placement: {placement}\n{TAIL}"
    )
}

#[test]
fn a_fat_tree_drawn_as_a_graph_costs_the_same() {
    for (hpl, leaves) in [(4, 3), (1, 4), (3, 1), (2, 5)] {
        for placement in ["host_order", "strided"] {
            for spines in [1, 2] {
                let g = ok(&fat_tree_as_graph(hpl, leaves, spines, placement));
                let f = ok(&fat_tree(hpl, leaves, spines, placement));
                assert_eq!(g.ranks, f.ranks);
                for ranks in [hpl * leaves, (hpl * leaves).div_ceil(2)] {
                    let g = topology::build(&g.topology, ranks).unwrap();
                    let f = topology::build(&f.topology, ranks).unwrap();
                    let (gf, ff) = (g.fabric().unwrap(), f.fabric().unwrap());
                    assert_eq!(gf.link_count(), ff.link_count());
                    for a in 0..ranks {
                        assert_eq!(g.nics(a), f.nics(a));
                        for b in 0..ranks {
                            if a == b {
                                continue;
                            }
                            let what = format!("{hpl}x{leaves}, {spines} spines, {placement}, {a} -> {b}");
                            assert_eq!(g.link(a, b), f.link(a, b), "{what}");
                            let (mut rg, mut rf) = (Vec::new(), Vec::new());
                            gf.route(a, b, &mut rg);
                            ff.route(a, b, &mut rf);
                            assert_eq!(rg.len(), rf.len(), "{what}");
                            // One spine: one shortest path, the same links by the same ids.
                            // More: the graph takes the lowest-index spine, the fat tree
                            // spine dst mod k.
                            if spines == 1 {
                                assert_eq!(rg, rf, "{what}");
                                let names = |f: &dyn topology::Fabric, r: &[u64]| {
                                    r.iter().map(|&id| f.link_name(id)).collect::<Vec<_>>()
                                };
                                assert_eq!(names(gf, &rg), names(ff, &rf), "{what}");
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Placement and rank counts

/// Two leaves of three hosts and a host on a switch of its own, listed out of order:
/// leaf1 (node 0), h0..h2 (nodes 1..3, under leaf0), h3..h5 (under leaf1), leaf0, h6 and
/// its switch lone.
const TWO_LEAVES: &str = "\
topology:
  kind: graph
  link: { alpha: 1us, bandwidth: 10GB/s }
  nodes:
    - { name: leaf1, kind: switch }
    - h0
    - h1
    - h2
    - h3
    - h4
    - h5
    - { name: leaf0, kind: switch }
    - h6
  links:
    - { a: h0, b: leaf0 }
    - { a: h1, b: leaf0 }
    - { a: h2, b: leaf0 }
    - { a: h3, b: leaf1 }
    - { a: h4, b: leaf1 }
    - { a: h5, b: leaf1 }
    - { a: leaf0, b: leaf1 }
    - { a: h6, b: h5 }
";

fn placed_names(text: &str, ranks: usize) -> Vec<String> {
    let s = ok(text);
    let t = topology::build(&s.topology, ranks).unwrap();
    // Each rank's host is the tail of its first link to any other rank.
    (0..ranks).map(|r| route_names(t.as_ref(), r, (r + 1) % ranks)[0].split("->").next().unwrap().to_string()).collect()
}

#[test]
fn placements() {
    let with = |p: &str| format!("{TWO_LEAVES}  placement: {p}\n{TAIL}");
    // host_order (the default): the hosts as listed.
    assert_eq!(placed_names(&format!("{TWO_LEAVES}{TAIL}"), 7), ["h0", "h1", "h2", "h3", "h4", "h5", "h6"]);
    assert_eq!(placed_names(&with("host_order"), 4), ["h0", "h1", "h2", "h3"]);
    // strided: groups by each host's lowest-index switch: leaf1 (node 0) {h3, h4, h5},
    // leaf0 (node 7) {h0, h1, h2}, and h6 (node 8, no switch) alone; dealt round-robin:
    // h3, h0, h6, then h4, h1, then h5, h2.
    assert_eq!(placed_names(&with("strided"), 7), ["h3", "h0", "h6", "h4", "h1", "h5", "h2"]);
    assert_eq!(placed_names(&with("strided"), 2), ["h3", "h0"]);
    // A list: rank r on the r-th host; it fixes the rank count.
    let listed = with("[h5, h0, h6]");
    assert_eq!(ok(&listed).ranks, vec![3]);
    assert_eq!(placed_names(&listed, 3), ["h5", "h0", "h6"]);
    let s = ok(&listed);
    let TopologySpec::Graph { placement: Placement::Hosts(hosts), .. } = &s.topology else { panic!() };
    assert_eq!(hosts, &[6, 1, 8]);
    // Fat tree strided: rank r on leaf r mod leaves, slot r / leaves.
    let ft = FatTree::new(3, 2, 1, Link { alpha: 1.0, bandwidth: 1.0 }, Link { alpha: 1.0, bandwidth: 1.0 }).unwrap();
    let ft = ft.placed(RankOrder::Strided, 5).unwrap();
    assert_eq!((0..5).map(|r| ft.host_of(r)).collect::<Vec<_>>(), [0, 3, 1, 4, 2]);
}

#[test]
fn rank_counts() {
    let text = format!("{TWO_LEAVES}{TAIL}");
    // Every host by default; any count up to the hosts; the first ranks of the order.
    assert_eq!(ok(&text).ranks, vec![7]);
    let s = ok(&format!("ranks: [1, 4, 7]\n{text}"));
    assert_eq!(s.ranks, vec![1, 4, 7]);
    assert_eq!(topology::build(&s.topology, 4).unwrap().ranks(), 4);
    err_at(
        &format!("ranks: [4, 8]\n{text}"),
        1,
        12,
        &["ranks: 8 is more ranks than the topology has hosts", "7 of its 9 nodes are hosts", "from 1 to 7"],
    );
    let e = topology::build(&s.topology, 8).unwrap_err();
    assert!(e.contains("at most 7 ranks, not 8"), "{e}");
    // The flags are checked the same way.
    let mut s = ok(&text);
    Overrides { ranks: Some(vec![2, 7]), ..Overrides::default() }.apply(&mut s).unwrap();
    assert_eq!(s.ranks, vec![2, 7]);
    let e = Overrides { ranks: Some(vec![9]), ..Overrides::default() }.apply(&mut s).unwrap_err();
    assert!(e.to_string().starts_with("--ranks: 9 is more ranks than the scenario's topology has hosts"), "{e}");
    // A list fixes the count.
    let listed = format!("{TWO_LEAVES}  placement: [h1, h2]\n{TAIL}");
    err_at(
        &format!("ranks: 3\n{listed}"),
        1,
        8,
        &["ranks: 3 does not match the topology", "its placement lists 2 hosts"],
    );
    let mut s = ok(&listed);
    let e = Overrides { ranks: Some(vec![1]), ..Overrides::default() }.apply(&mut s).unwrap_err();
    assert!(e.to_string().contains("its placement lists 2 hosts"), "{e}");
    // Fat trees alike.
    let ft = fat_tree(4, 2, 1, "strided");
    assert_eq!(ok(&ft).ranks, vec![8]);
    assert_eq!(ok(&format!("ranks: [3, 8]\n{ft}")).ranks, vec![3, 8]);
    err_at(&format!("ranks: 9\n{ft}"), 1, 8, &["its 2 leaves x 4 hosts make 8 hosts", "from 1 to 8"]);
    // custom keeps its fixed count: every node is a rank.
    let custom = "topology:\n  kind: custom\n  link: { alpha: 1us, bandwidth: 1GB/s }\n  nodes: [a, b, c]\n  \
                  links: [{ from: a, to: b }, { from: b, to: c }]\n";
    err_at(&format!("ranks: 2\n{custom}{TAIL}"), 1, 8, &["it lists 3 nodes"]);
}

/// A custom graph far past the old cap of 512 nodes: routes come on demand.
#[test]
fn no_node_cap() {
    let n = 3000;
    let l = Link { alpha: 1e-6, bandwidth: 1e9 };
    let edges: Vec<(usize, usize, Link)> = (0..n).map(|i| (i, (i + 1) % n, l)).collect();
    let g = Graph::custom((0..n).map(|i| format!("r{i}")).collect(), vec![1; n], &edges).unwrap();
    // 0 -> 1500: 1500 hops either way round; traced back from 1500, its lower-index
    // neighbour 1499 is one hop closer, so the route goes up through 1, 2, ...
    assert_eq!(g.link(0, 1500).alpha, (0..1500).fold(0.0, |a, _| a + 1e-6));
    assert_eq!(route_names(&g, 0, 1500)[0], "r0->r1");
    assert_eq!(g.link(0, 2999), l);
    let mut text = String::from("topology:\n  kind: custom\n  link: { alpha: 1us, bandwidth: 1GB/s }\n  nodes:\n");
    for i in 0..n {
        text += &format!("    - r{i}\n");
    }
    text += "  links:\n";
    for i in 0..n {
        text += &format!("    - {{ from: r{i}, to: r{} }}\n", (i + 1) % n);
    }
    assert_eq!(ok(&format!("{text}{TAIL}")).ranks, vec![n]);
}

// ---------------------------------------------------------------------------------------
// Bad input

#[test]
fn bad_graphs() {
    let g = |body: &str| format!("topology:\n  kind: graph\n  link: {{ alpha: 1us, bandwidth: 1GB/s }}\n{body}{TAIL}");
    let two = "  nodes: [h0, h1, { name: sw, kind: switch }]\n";
    let star = "  links:\n    - { a: h0, b: sw }\n    - { a: h1, b: sw }\n";
    ok(&g(&format!("{two}{star}")));
    // Unknown node in a link, at the name.
    err_at(
        &g(&format!("{two}  links:\n    - {{ a: h0, b: sw }}\n    - {{ a: h1, b: hx }}\n")),
        7,
        19,
        &["topology.links[1].b: unknown node 'hx'", "the nodes are h0, h1, sw"],
    );
    // A node kind other than host or switch.
    err_at(
        &g(&format!("  nodes: [h0, {{ name: r, kind: router }}]\n{star}")),
        4,
        32,
        &["topology.nodes[1].kind: 'router' is not a node kind", "allowed: host", "switch"],
    );
    // A duplicate name.
    err_at(
        &g(&format!("  nodes: [h0, sw, h0]\n{star}")),
        4,
        19,
        &["'h0' is listed twice (first at line 4, column 11)"],
    );
    // A link from a node to itself; a pair linked twice (either way round).
    err_at(&g(&format!("{two}  links:\n    - {{ a: sw, b: sw }}\n")), 6, 19, &["links node 'sw' to itself"]);
    err_at(
        &g(&format!("{two}{star}    - {{ a: sw, b: h0 }}\n")),
        8,
        7,
        &["nodes 'sw' and 'h0' are already linked (first at line 6, column 7)"],
    );
    // Bandwidth zero, negative, not finite; alpha negative or not finite.
    let one = |attrs: &str| g(&format!("{two}  links:\n    - {{ a: h0, b: sw{attrs} }}\n    - {{ a: h1, b: sw }}\n"));
    err_at(&one(", bandwidth: 0"), 6, 34, &["links[0].bandwidth", "greater than 0"]);
    err_at(&one(", bandwidth: -1GB/s"), 6, 34, &["links[0].bandwidth", "greater than 0"]);
    err_at(&one(", bandwidth: .inf"), 6, 34, &["not a finite number"]);
    err_at(&one(", bandwidth: .nan"), 6, 34, &["not a finite number"]);
    err_at(&one(", bandwidth: 1e999"), 6, 34, &["not a finite number"]);
    err_at(&one(", alpha: -2us"), 6, 30, &["links[0].alpha", "negative", "at least 0"]);
    err_at(&one(", alpha: .inf"), 6, 30, &["not a finite number"]);
    // A host with no route to another: at the host nobody reaches. A switch nobody
    // reaches does not matter.
    err_at(
        &g(&format!("  nodes: [h0, h1, h2, {{ name: sw, kind: switch }}]\n{star}")),
        4,
        19,
        &["host 'h2' cannot be reached from host 'h0'", "disconnected"],
    );
    ok(&g(&format!("  nodes: [h0, h1, {{ name: sw, kind: switch }}, {{ name: lost, kind: switch }}]\n{star}")));
    // No host at all.
    err_at(
        &g("  nodes: [{ name: sa, kind: switch }, { name: sb, kind: switch }]\n  links:\n    - { a: sa, b: sb }\n"),
        4,
        10,
        &["no node is a host"],
    );
    // Placement: a switch, a host twice, an unknown name, an empty list, a word.
    let p = |list: &str| g(&format!("{two}{star}  placement: {list}\n"));
    err_at(&p("[h0, sw]"), 8, 19, &["placement[1]: 'sw' is a switch", "ranks run on hosts: h0, h1"]);
    err_at(&p("[h1, h0, h1]"), 8, 23, &["placement[2]: host 'h1' is listed twice (first at line 8, column 15)"]);
    err_at(&p("[h1, hz]"), 8, 19, &["placement[1]: unknown node 'hz'", "the hosts are h0, h1"]);
    err_at(&p("[]"), 8, 14, &["the list is empty"]);
    err_at(&p("round_robin"), 8, 14, &["'round_robin' is not a placement", "host_order", "strided"]);
    // More ranks than hosts.
    err_at(&format!("ranks: 3\n{}", p("strided")), 1, 8, &["ranks: 3 is more ranks than the topology has hosts"]);
    // Keys: custom's link ends, a switch's ports, and kind custom's keys.
    err_at(
        &g(&format!("{two}  links:\n    - {{ from: h0, to: sw }}\n")),
        6,
        9,
        &["unknown key 'from'", "allowed: a, b, alpha, bandwidth"],
    );
    err_at(
        &g(&format!("  nodes: [h0, {{ name: sw, kind: switch, nics: 2 }}]\n{star}")),
        4,
        47,
        &["nics applies to hosts only"],
    );
    err_at(
        &g(&format!("  nodes: [h0, {{ name: h1, speed: 2 }}]\n{star}")),
        4,
        27,
        &["unknown key 'speed'", "name, kind, nics"],
    );
    err_at(&g(&format!("{two}{star}  leaves: 2\n")), 8, 11, &["'leaves' does not apply to kind graph"]);
    err_at(&g("  nodes: [h0, h1]\n"), 2, 3, &["missing key 'links'", "kind graph needs the links"]);
    err_at(
        "topology:\n  kind: graph\n  links: []\nalgorithms: [ring]\nsizes: [4KiB]\n",
        2,
        3,
        &["missing key 'nodes'"],
    );
    // custom keeps its own keys.
    let custom = "topology:\n  kind: custom\n  link: { alpha: 1us, bandwidth: 1GB/s }\n  nodes: [a, b]\n";
    err_at(&format!("{custom}  links: [{{ a: a, b: b }}]\n{TAIL}"), 5, 13, &["unknown key 'a'", "allowed: from, to"]);
    err_at(
        &format!("{custom}  links: [{{ from: a, to: b }}]\n  placement: [a]\n{TAIL}"),
        6,
        14,
        &["'placement' does not apply to kind custom"],
    );
    err_at(
        "topology:\n  kind: custom\n  nodes: [a, { name: b, kind: switch }]\n  links: []\nalgorithms: [ring]\nsizes: [4KiB]\n",
        3,
        25,
        &["unknown key 'kind'; allowed: name, nics"],
    );
}

#[test]
fn bad_fat_trees() {
    let f =
        |body: &str| format!("topology:\n  kind: fat_tree\n  link: {{ alpha: 1us, bandwidth: 1GB/s }}\n{body}{TAIL}");
    ok(&f("  hosts_per_leaf: 2\n  leaves: 2\n"));
    err_at(
        &f("  hosts_per_leaf: 0\n  leaves: 2\n"),
        4,
        19,
        &["topology.hosts_per_leaf: must be a whole number of at least 1", "not 0"],
    );
    err_at(&f("  hosts_per_leaf: 2\n  leaves: 0\n"), 5, 11, &["topology.leaves: must be a whole number of at least 1"]);
    err_at(
        &f("  hosts_per_leaf: 2\n  leaves: 2\n  spines: 0\n"),
        6,
        11,
        &["topology.spines: must be a whole number of at least 1"],
    );
    err_at(&f("  hosts_per_leaf: 2\n  leaves: -1\n"), 5, 11, &["topology.leaves", "-1"]);
    err_at(&f("  leaves: 2\n"), 2, 3, &["missing key 'hosts_per_leaf'"]);
    err_at(&f("  hosts_per_leaf: 2\n"), 2, 3, &["missing key 'leaves'"]);
    err_at(
        "topology:\n  kind: fat_tree\n  hosts_per_leaf: 2\n  leaves: 2\nalgorithms: [ring]\nsizes: [4KiB]\n",
        2,
        3,
        &["missing key 'link'", "kind fat_tree needs link"],
    );
    err_at(
        &f("  hosts_per_leaf: 2\n  leaves: 2\n  uplink: { alpha: 1us, bandwidth: 0 }\n"),
        6,
        36,
        &["topology.uplink.bandwidth", "greater than 0"],
    );
    err_at(
        &f("  hosts_per_leaf: 2\n  leaves: 2\n  placement: [h0, h1]\n"),
        6,
        14,
        &["not by a list", "host_order", "strided"],
    );
    err_at(&f("  hosts_per_leaf: 2\n  leaves: 2\n  placement: packed\n"), 6, 14, &["'packed' is not a placement"]);
    err_at(
        &f("  hosts_per_leaf: 2\n  leaves: 2\n  nodes: [a]\n"),
        6,
        10,
        &["'nodes' does not apply to kind fat_tree", "hosts_per_leaf, leaves, spines, link, uplink, placement, nics"],
    );
    err_at(
        &f("  hosts_per_leaf: 4000000000000\n  leaves: 4000000000000\n"),
        5,
        11,
        &["more links than this machine can count"],
    );
}

// ---------------------------------------------------------------------------------------
// Reports

#[test]
fn specs_read_back_from_json() {
    for text in [
        format!("{TWO_LEAVES}  placement: [h5, h0, h6]\n{TAIL}"),
        format!("{TWO_LEAVES}  placement: strided\n{TAIL}"),
        format!("{SMALL}{TAIL}"),
        fat_tree(3, 2, 2, "strided"),
    ] {
        let s = ok(&text);
        let json = serde_json::to_string(&s).unwrap();
        let back: Scenario = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        let fixed = s.topology.implied_ranks().is_some();
        for p in if fixed { vec![s.ranks[0]] } else { vec![1, s.ranks[0]] } {
            let (a, b) = (topology::build(&s.topology, p).unwrap(), topology::build(&back.topology, p).unwrap());
            assert_eq!(a.describe(), b.describe());
            assert!((0..p).all(|x| (0..p).all(|y| x == y || a.link(x, y) == b.link(x, y))));
        }
    }
    let s = ok(&fat_tree(3, 2, 2, "strided"));
    let v: serde_json::Value = serde_json::to_value(&s.topology).unwrap();
    assert_eq!(v["kind"], "fat_tree");
    assert_eq!(v["placement"], "strided");
    assert_eq!(v["uplink"]["bandwidth_Bps"], 5e9);
}

#[test]
fn table_header_describes_the_machine() {
    let header = |text: &str| {
        let s = ok(text);
        Table.render(&allreduce_sim::runner::run(&s)).lines().nth(1).unwrap().to_string()
    };
    let h = header(
        "topology:\n  kind: fat_tree\n  hosts_per_leaf: 8\n  leaves: 4\n  \
         link: { alpha: 0.5us, bandwidth: 100Gbps }\nranks: 2\nalgorithms: [ring]\nsizes: [4KiB]\n",
    );
    assert!(h.contains("fat tree 4 x 8 hosts, 1 spine, uplinks 8:1 oversubscribed"), "{h}");
    assert!(h.contains("ranks in host order"), "{h}");
    let h = header(&format!("{TWO_LEAVES}  placement: strided\nranks: 3\n{TAIL}"));
    assert!(h.contains("graph of 9 nodes (7 hosts, 2 switches) and 8 links"), "{h}");
    assert!(h.contains("ranks strided over switches"), "{h}");
}

// ---------------------------------------------------------------------------------------
// Every algorithm on both

/// Run every registered algorithm (default parameters) on `topo` for a few sizes under the
/// ideal model: each result verified, and each closed form, where one exists, met.
fn every_algorithm_verified(topo: &dyn Topology) -> usize {
    let np = topo.ranks();
    let mut ran = 0;
    for info in algos::registry() {
        let a = algos::build(info.id, Params::default()).unwrap();
        for n in [0usize, 5, 333, 4096] {
            let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
            let m = Machine { topo, cost_per_byte: 5e-11 };
            if a.applicable(&p, &m).is_err() {
                continue;
            }
            let inputs: Vectors =
                (0..np).map(|r| initial_values(Init::Random, 11, r, n)).collect::<Vec<Vec<f32>>>().into();
            let reference = Reference::of(&inputs, ReduceOp::Sum);
            let what = format!("{} on {} n={n}", a.label(), topo.describe());
            let (stats, out) = simulate(a.as_ref(), topo, p, 5e-11, Some((inputs, ReduceOp::Sum)), &mut NoObserver)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let v = reference.check(&out.unwrap(), a.reduction_depth(&p, topo), &Expectations::Allreduce);
            assert!(v.verified, "{what}: wrong result {:?}", v.first_violation);
            if let Some((cf, tol)) = a.closed_form(&p, &m) {
                let err = if cf == 0.0 { stats.time } else { (stats.time / cf - 1.0).abs() };
                assert!(err <= tol, "{what}: simulated {:e}, closed form {cf:e}", stats.time);
            }
            ran += 1;
        }
    }
    ran
}

#[test]
fn every_algorithm_runs_verified_on_a_fat_tree_and_a_graph() {
    let l = Link { alpha: 1e-6, bandwidth: 10e9 };
    let u = Link { alpha: 2e-6, bandwidth: 5e9 };
    let mut ran = 0;
    for (order, ranks) in [(RankOrder::HostOrder, 6), (RankOrder::Strided, 5), (RankOrder::Strided, 3)] {
        let ft = FatTree::new(2, 3, 2, l, u).unwrap().with_nics(2).placed(order, ranks).unwrap();
        ran += every_algorithm_verified(&ft);
    }
    let s = ok(&format!("{SMALL}{TAIL}"));
    ran += every_algorithm_verified(topology::build(&s.topology, 3).unwrap().as_ref());
    let s = ok(&format!("{TWO_LEAVES}  placement: strided\n{TAIL}"));
    for p in [7, 4] {
        ran += every_algorithm_verified(topology::build(&s.topology, p).unwrap().as_ref());
    }
    let registered = algos::registry().len();
    assert!(ran >= 4 * 6 * registered / 2, "{ran} runs of {registered} algorithms");
}
