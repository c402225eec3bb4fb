//! Issue 3's machines and the algorithms made for them: pair costs worked by hand, the
//! scenario keys of every kind with their errors at the right line, and a regression
//! matrix of `hierarchical_ring` and `blueconnect` on hierarchies (groups of 1, one level,
//! uneven sizes, extra leader NICs), every result verified and every time equal to the
//! closed form; `double_binary_tree` on the same hierarchies (exact with a port per tree
//! neighbour); plus every flat algorithm on every new kind, verified.

use allreduce_sim::algos::{self, Machine, Params, Problem};
use allreduce_sim::runner::{Point, run_point};
use allreduce_sim::scenario::{Overrides, ParamValue, TopologySpec, parse_str};
use allreduce_sim::sim::data::{Expectations, Init, ReduceOp, Reference, Vectors, initial_values};
use allreduce_sim::sim::{engine::NoObserver, simulate};
use allreduce_sim::topology::{self, Graph, Grid, Hierarchical, Level, Link, Topology};

const MIB: f64 = 1048576.0;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

fn level(size: usize, alpha: f64, bandwidth: f64, nics: Option<u32>) -> Level {
    Level { size, link: Link { alpha, bandwidth }, nics }
}

// ---------------------------------------------------------------------------------------
// Pair costs by hand

#[test]
fn hierarchical_pairs_by_hand() {
    // A three-level machine: 8 GPUs per node (nvlink), 4 nodes per leaf, 2 leaves.
    let h = Hierarchical::new(
        vec![level(8, 0.7e-6, 150e9, None), level(4, 3e-6, 25e9, None), level(2, 5e-6, 12.5e9, None)],
        1,
    )
    .unwrap();
    assert_eq!(h.ranks(), 64);
    // Ranks 3 and 5: 3/8 = 5/8 = 0, same node: 0.7 us + 1 MiB / 150 GB/s
    //   = 0.7e-6 + 1048576 / 150e9 = 0.7e-6 + 6.99050667e-6 = 7.69050667e-6 s.
    assert!(close(h.link(3, 5).time(MIB), 0.7e-6 + MIB / 150e9));
    assert!(close(h.link(3, 5).time(MIB), 7.690506666666667e-6));
    // Ranks 7 and 8: nodes 0 and 1 differ, 7/32 = 8/32 = 0 share a leaf:
    //   3 us + 1048576 / 25e9 = 3e-6 + 41.94304e-6 = 44.94304e-6 s.
    assert!(close(h.link(7, 8).time(MIB), 44.94304e-6));
    // Ranks 31 and 32: leaves 0 and 1: 5 us + 1048576 / 12.5e9 = 5e-6 + 83.88608e-6.
    assert!(close(h.link(31, 32).time(MIB), 88.88608e-6));
    assert!(close(h.link(32, 31).time(MIB), 88.88608e-6));
    // The lower bound's link: smallest alpha, largest bandwidth, fewest ports.
    assert_eq!(h.best_link(), (Link { alpha: 0.7e-6, bandwidth: 150e9 }, 1));
    assert!(h.uniform().is_none());
    assert_eq!(h.levels().unwrap().iter().map(|l| l.0).collect::<Vec<_>>(), vec![8, 4, 2]);
}

#[test]
fn grid_pairs_by_hand() {
    let l = Link { alpha: 1e-6, bandwidth: 10e9 };
    // 4 x 6, row-major: rank 0 is (0,0), rank 23 is (3,5), rank 9 is (1,3).
    let t = Grid::torus(4, 6, l, 1);
    let m = Grid::mesh(4, 6, l, 1);
    // Torus 0 -> 23: rows min(3, 4-3) = 1, cols min(5, 6-5) = 1: 2 hops,
    //   2 us + 1 MiB / 10 GB/s = 2e-6 + 104.8576e-6 = 106.8576e-6 s.
    assert!(close(t.link(0, 23).time(MIB), 106.8576e-6));
    // Mesh 0 -> 23: 3 + 5 = 8 hops: 8e-6 + 104.8576e-6.
    assert!(close(m.link(0, 23).time(MIB), 112.8576e-6));
    // Neighbours cost (alpha, B): 9 -> 10 is one column over.
    assert_eq!(t.link(9, 10), l);
    // Torus 0 -> 9: rows 1, cols min(3, 3) = 3: 4 hops.
    assert_eq!(t.link(0, 9).alpha, 4e-6);
    assert_eq!(t.grid(), Some((4, 6, true)));
    assert_eq!(m.grid(), Some((4, 6, false)));
    // Ring of 10: 2 -> 9 is min(7, 3) = 3 hops the short way round.
    assert!(close(Grid::ring(10, l, 1).link(2, 9).alpha, 3e-6));
    // Only a grid whose every pair are neighbours is uniform.
    assert!(t.uniform().is_none());
    assert_eq!(Grid::ring(3, l, 2).uniform(), Some((l, 2)));
}

#[test]
fn custom_pairs_by_hand() {
    // a - b - c - d in a line, plus a shortcut a - c that is slow.
    let text = "\
topology:
  kind: custom
  nodes: [a, b, c, { name: d, nics: 2 }]
  link: { alpha: 1us, bandwidth: 10GB/s }
  links:
    - { from: a, to: b }
    - { from: b, to: c, bandwidth: 5GB/s }
    - { from: c, to: d, alpha: 2us }
    - { from: a, to: c, alpha: 10us, bandwidth: 1GB/s }
algorithms: [ring]
sizes: [4KiB]
";
    let s = parse_str(text, "custom.yaml").unwrap();
    assert_eq!(s.ranks, vec![4]);
    let c = topology::build(&s.topology, 4).unwrap();
    // a -> c: one hop on the shortcut beats two via b (fewest hops first):
    //   10 us + 1 MiB / 1 GB/s = 10e-6 + 1048576e-9 = 1058.576e-6 s.
    assert!(close(c.link(0, 2).time(MIB), 1058.576e-6));
    // a -> d: two hops, a-c-d: alpha 10 + 2 = 12 us, slowest hop 1 GB/s.
    assert_eq!(c.link(0, 3), Link { alpha: 12e-6, bandwidth: 1e9 });
    // b -> d: b-c-d: 1 + 2 = 3 us, min(5, 10) = 5 GB/s.
    assert!(close(c.link(1, 3).alpha, 3e-6));
    assert_eq!(c.link(1, 3).bandwidth, 5e9);
    assert_eq!((c.nics(0), c.nics(3)), (1, 2));
    assert_eq!(c.best_link(), (Link { alpha: 1e-6, bandwidth: 10e9 }, 1));
    // The same graph built directly agrees.
    let direct = Graph::custom(
        ["a", "b", "c", "d"].map(String::from).to_vec(),
        vec![1, 1, 1, 2],
        &[
            (0, 1, Link { alpha: 1e-6, bandwidth: 10e9 }),
            (1, 2, Link { alpha: 1e-6, bandwidth: 5e9 }),
            (2, 3, Link { alpha: 2e-6, bandwidth: 10e9 }),
            (0, 2, Link { alpha: 10e-6, bandwidth: 1e9 }),
        ],
    )
    .unwrap();
    assert_eq!(direct.link(0, 3), c.link(0, 3));
}

// ---------------------------------------------------------------------------------------
// Scenario keys

const TAIL: &str = "algorithms: [ring]\nsizes: [4KiB]\n";

fn err(text: &str) -> allreduce_sim::scenario::ScenarioError {
    match parse_str(text, "bad.yaml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// The error for `text` is at `line` (and `col`, if given) and says every one of `words`.
fn err_at(text: &str, line: u64, col: Option<u64>, words: &[&str]) {
    let e = err(text);
    let (l, c) = e.position().unwrap_or_else(|| panic!("no position in: {e}"));
    assert_eq!(l, line, "wrong line in:\n{e}");
    if let Some(col) = col {
        assert_eq!(c, col, "wrong column in:\n{e}");
    }
    for w in words {
        assert!(e.message().contains(w), "'{w}' missing from:\n{e}");
    }
    assert!(e.to_string().starts_with(&format!("bad.yaml:{l}:{c}: ")), "{e}");
}

#[test]
fn hierarchical_keys() {
    let good = format!(
        "topology:\n  kind: hierarchical\n  nics: 2\n  levels:\n    - {{ name: nvlink, size: 4, alpha: 1us, \
         bandwidth: 100GB/s, nics: 3 }}\n    - {{ size: 2, alpha: 5us, bandwidth: 10GB/s }}\n{TAIL}"
    );
    let s = parse_str(&good, "ok.yaml").unwrap();
    assert_eq!(s.ranks, vec![8], "ranks implied by the levels");
    let TopologySpec::Hierarchical { levels, nics } = &s.topology else { panic!() };
    assert_eq!(*nics, 2);
    assert_eq!(levels[0].name, "nvlink");
    assert_eq!(levels[1].name, "level 1");
    assert_eq!(levels[0].nics, Some(3));
    assert_eq!(levels[1].link, Link { alpha: 5e-6, bandwidth: 10e9 });
    // Both given and agreeing is fine; disagreeing is an error at the rank count.
    parse_str(&format!("ranks: 8\n{good}"), "ok.yaml").unwrap();
    err_at(&format!("ranks: [8, 16]\n{good}"), 1, Some(12), &["ranks: 16 does not match", "4 x 2 = 8"]);
    let lv = "topology:\n  kind: hierarchical\n  levels:\n";
    err_at(&format!("{lv}    - {{ size: 4, alpha: 1us }}\n{TAIL}"), 4, None, &["levels[0]: missing key 'bandwidth'"]);
    err_at(
        &format!(
            "{lv}    - {{ size: 4, alpha: 1us, bandwidth: 1GB/s }}\n    - {{ alpha: 1us, bandwidth: 1GB/s }}\n{TAIL}"
        ),
        5,
        None,
        &["levels[1]: missing key 'size'", "groups of the level below"],
    );
    err_at(
        &format!("{lv}    - {{ size: 0, alpha: 1us, bandwidth: 1GB/s }}\n{TAIL}"),
        4,
        Some(15),
        &["levels[0].size: must be a whole number of at least 1, not 0"],
    );
    err_at(
        &format!("{lv}    - {{ size: 2, alpha: 1us, bandwidth: 1GB/s, speed: 3 }}\n{TAIL}"),
        4,
        None,
        &["unknown key 'speed'"],
    );
    err_at(
        &format!("{lv}    - {{ size: 2, alpha: 1us, bandwidth: 1GB/s, nics: 0 }}\n{TAIL}"),
        4,
        None,
        &["levels[0].nics"],
    );
    err_at(
        &format!("topology:\n  kind: hierarchical\n  levels: []\n{TAIL}"),
        3,
        Some(11),
        &["levels: the list is empty"],
    );
    // A missing key is reported at the mapping that lacks it (its first key).
    err_at(&format!("topology:\n  kind: hierarchical\n{TAIL}"), 2, None, &["missing key 'levels'"]);
    err_at(
        &format!("topology:\n  kind: hierarchical\n  dims: [2, 2]\n{TAIL}"),
        3,
        None,
        &["'dims' does not apply to kind hierarchical", "allowed: kind, levels, nics"],
    );
}

#[test]
fn grid_keys() {
    let t =
        |body: &str| format!("topology:\n  kind: torus2d\n  link: {{ alpha: 1us, bandwidth: 1GB/s }}\n{body}{TAIL}");
    let s = parse_str(&t("  dims: [2, 3]\n"), "ok.yaml").unwrap();
    assert_eq!(s.ranks, vec![6]);
    // Without dims, ranks decide and each P is laid out as squarely as it divides.
    let s = parse_str(&format!("ranks: [12, 7]\n{}", t("")), "ok.yaml").unwrap();
    assert_eq!(topology::build(&s.topology, 12).unwrap().grid(), Some((3, 4, true)));
    assert_eq!(topology::build(&s.topology, 7).unwrap().grid(), Some((1, 7, true)));
    err_at(&t(""), 1, None, &["missing key 'ranks'", "torus2d needs it"]);
    err_at(&t("  dims: [2, 3, 4]\n"), 4, None, &["expected [rows, cols]", "list of 3"]);
    err_at(&t("  dims: [2, 0]\n"), 4, Some(13), &["cols must be a whole number of at least 1, not 0"]);
    err_at(&format!("ranks: 5\n{}", t("  dims: [2, 3]\n")), 1, None, &["ranks: 5 does not match", "2 x 3 = 6"]);
    err_at(
        &t("  levels: []\n"),
        4,
        None,
        &["'levels' does not apply to kind torus2d", "allowed: kind, dims, link, nics"],
    );
    err_at(
        "ranks: 4\ntopology:\n  kind: mesh2d\n  dims: [2, 2]\nalgorithms: [ring]\nsizes: [4KiB]\n",
        3,
        None,
        &["missing key 'link'", "kind mesh2d needs"],
    );
    err_at(
        &format!("topology:\n  kind: ring\n  link: {{ alpha: 1us, bandwidth: 1GB/s }}\n{TAIL}"),
        1,
        None,
        &["kind ring needs it"],
    );
    // The flags are checked against a topology that fixes the rank count.
    let mut s = parse_str(&t("  dims: [2, 3]\n"), "ok.yaml").unwrap();
    let bad = Overrides { ranks: Some(vec![8]), ..Overrides::default() };
    let e = bad.apply(&mut s).unwrap_err();
    assert!(e.to_string().starts_with("--ranks: 8 does not match"), "{e}");
}

#[test]
fn custom_keys() {
    let c = |nodes: &str, links: &str| {
        format!(
            "topology:\n  kind: custom\n  link: {{ alpha: 1us, bandwidth: 1GB/s }}\n  nodes: {nodes}\n  links:\n{links}{TAIL}"
        )
    };
    let ok = c("[a, b, c]", "    - { from: a, to: b }\n    - { from: c, to: b }\n");
    let s = parse_str(&ok, "ok.yaml").unwrap();
    let TopologySpec::Custom { nodes, links, .. } = &s.topology else { panic!() };
    assert_eq!((nodes.len(), links[1].from, links[1].to), (3, 2, 1));
    // An unknown node, at the name's line and column.
    err_at(
        &c("[a, b, c]", "    - { from: a, to: b }\n    - { from: c, to: x }\n"),
        7,
        Some(22),
        &["links[1].to: unknown node 'x'", "the nodes are a, b, c"],
    );
    // A disconnected graph, at the node nobody reaches.
    err_at(
        &c("[a, b, c, d]", "    - { from: a, to: b }\n    - { from: c, to: d }\n"),
        4,
        Some(17),
        &["node 'c' cannot be reached from node 'a'", "disconnected"],
    );
    err_at(&c("[a, b, a]", "    - { from: a, to: b }\n"), 4, Some(17), &["'a' is listed twice"]);
    err_at(&c("[a, b]", "    - { from: a, to: a }\n"), 6, None, &["links node 'a' to itself"]);
    err_at(
        &c("[a, b]", "    - { from: a, to: b }\n    - { from: b, to: a }\n"),
        7,
        None,
        &["already linked (first at line 6"],
    );
    err_at(&c("[a, b]", "    - { from: a }\n"), 6, None, &["missing key 'to'"]);
    err_at(
        &c("[a, { name: b, speed: 2 }]", "    - { from: a, to: b }\n"),
        4,
        None,
        &["unknown key 'speed'; allowed: name, nics"],
    );
    // Without a default link every link needs its own alpha and bandwidth.
    let bare =
        format!("topology:\n  kind: custom\n  nodes: [a, b]\n  links:\n    - {{ from: a, to: b, alpha: 1us }}\n{TAIL}");
    err_at(&bare, 5, None, &["missing key 'bandwidth'", "topology.link"]);
    err_at(
        &c("[a, b]", "    - { from: a, to: b }\n").replace("nodes: [a, b]", "nodes: []"),
        4,
        None,
        &["nodes: the list is empty"],
    );
}

// ---------------------------------------------------------------------------------------
// Regression matrix

/// Run `id` with `params` on `topo` for n elements; check the result (when `full`) and,
/// where the algorithm has one, the closed form. Returns a line describing a failure.
fn check(id: &str, params: &[(&str, &str)], topo: &dyn Topology, n: usize, c: f64, full: bool) -> Option<String> {
    let prm = params.iter().map(|(k, v)| (k.to_string(), ParamValue::Str(v.to_string()))).collect();
    let a = algos::build(id, Params::new(prm)).unwrap();
    let np = topo.ranks();
    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
    let m = Machine { topo, cost_per_byte: c };
    let what = format!("{} on {} n={n} C={c}", a.label(), topo.describe());
    if let Err(why) = a.applicable(&p, &m) {
        return Some(format!("{what}: not applicable: {why}"));
    }
    let inputs: Vectors = (0..np).map(|r| initial_values(Init::Random, 7, r, n)).collect::<Vec<Vec<f32>>>().into();
    let reference = Reference::of(&inputs, ReduceOp::Sum);
    let data = full.then_some((inputs, ReduceOp::Sum));
    let (stats, vecs) = match simulate(a.as_ref(), topo, p, c, data, &mut NoObserver) {
        Ok(x) => x,
        Err(e) => return Some(format!("{what}: {e}")),
    };
    if let Some(v) = vecs {
        let ver = reference.check(&v, a.reduction_depth(&p, topo), &Expectations::Allreduce);
        if !ver.verified {
            return Some(format!("{what}: wrong result {:?}", ver.first_violation));
        }
    }
    let Some((cf, tol)) = a.closed_form(&p, &m) else {
        // Only the cases the docs name may lack a closed form: blueconnect on uneven
        // shards of more than one level.
        let active = topo.levels().map_or(0, |l| l.iter().filter(|x| x.0 > 1).count());
        let uneven_bc = id == "blueconnect" && active > 1 && !n.is_multiple_of(np);
        return (is_topology_aware(id) && !uneven_bc).then(|| format!("{what}: no closed form"));
    };
    let err = if cf == 0.0 { stats.time } else { (stats.time / cf - 1.0).abs() };
    (err > tol).then(|| format!("{what}: simulated {:e}, closed form {cf:e}, rel err {err:e}", stats.time))
}

/// Hierarchies covering the cases that could break a formula: groups of 1, one level,
/// uneven sizes, a size-1 middle level, an outer level faster than the inner one, more
/// NICs for leaders and for everyone.
fn hierarchies() -> Vec<Hierarchical> {
    let fast = (0.7e-6, 150e9);
    let slow = (5e-6, 12.5e9);
    let mid = (2e-6, 40e9);
    let h = |shape: &[(usize, (f64, f64), Option<u32>)], nics: u32| {
        Hierarchical::new(shape.iter().map(|&(s, (a, b), k)| level(s, a, b, k)).collect(), nics).unwrap()
    };
    vec![
        h(&[(4, fast, None), (3, slow, None)], 1),
        h(&[(1, fast, None), (5, slow, None)], 1),
        h(&[(6, fast, None)], 1),
        h(&[(3, fast, None), (2, mid, None), (2, slow, None)], 1),
        h(&[(2, fast, None), (1, mid, None), (3, slow, None)], 1),
        h(&[(3, slow, None), (4, fast, None)], 1),
        h(&[(5, fast, Some(4)), (2, slow, None)], 1),
        h(&[(4, fast, None), (2, mid, None), (2, slow, None)], 2),
        h(&[(8, fast, None), (3, slow, None)], 1),
        h(&[(2, fast, None), (2, mid, None), (2, slow, None), (2, mid, None)], 1),
        // A free outer level (alpha 0): groups with emptier shards race ahead, the case
        // that leaves blueconnect without a closed form on uneven shards.
        h(&[(5, mid, None), (3, (0.0, 1e9), None)], 1),
    ]
}

#[test]
fn matrix_hierarchical_algorithms() {
    let mut bad = Vec::new();
    for h in hierarchies() {
        // Uneven sizes, n < P, and multiples of P (where blueconnect's shards are even).
        let np = h.ranks();
        for n in [0usize, 1, 7, 13, 100, 1001, np, 3 * np, 17 * np] {
            for &c in &[0.0, 5e-11, 2e-9] {
                for (id, params) in [
                    ("hierarchical_ring", vec![]),
                    ("hierarchical_ring", vec![("intra", "binomial_tree")]),
                    ("hierarchical_ring", vec![("intra", "chain")]),
                    ("blueconnect", vec![]),
                ] {
                    bad.extend(check(id, &params, &h, n, c, true));
                }
            }
        }
    }
    // Timing only, large and uneven.
    for h in hierarchies() {
        for id in ["hierarchical_ring", "blueconnect"] {
            bad.extend(check(id, &[], &h, 262_147, 5e-11, false));
            bad.extend(check(id, &[], &h, 1024 * h.ranks(), 5e-11, false));
        }
    }
    assert!(bad.is_empty(), "{} failures:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn closed_forms_match_the_formulas() {
    // Two levels, m | n: the doc's formulas, evaluated by hand.
    // 4 GPUs per node at (1 us, 100 GB/s), 3 nodes at (5 us, 10 GB/s), C = 0.1 ns/B,
    // n = 3000 f32: S = 12000 B, c = 1000 f32 = 4000 B per leader chunk.
    let h = Hierarchical::new(vec![level(4, 1e-6, 100e9, None), level(3, 5e-6, 10e9, None)], 1).unwrap();
    let p = Problem { ranks: 12, elems: 3000, elem_bytes: 4 };
    let m = Machine { topo: &h, cost_per_byte: 1e-10 };
    let t0: f64 = 1e-6 + 12000.0 / 100e9; // 1.12 us
    let r = 12000.0 * 1e-10; // 1.2 us
    let ring = 2.0 * 2.0 * (5e-6 + 4000.0 / 10e9) + 2.0 * 4000.0 * 1e-10; // 21.6 + 0.8 us
    // Star, one NIC: q = 3 rounds; Red = max(T0 + 3R, 3 T0 + 1 R) = max(4.72, 4.56) us.
    let star = (t0 + 3.0 * r).max(3.0 * t0 + r) + ring + 3.0 * t0;
    // Chain: 3 (T0 + R) up, 3 T0 down. Binomial, g = 4: 2 (T0 + R) up, 2 T0 down.
    let chain = 3.0 * (t0 + r) + ring + 3.0 * t0;
    let tree = 2.0 * (t0 + r) + ring + 2.0 * t0;
    for (intra, want) in [("star", star), ("chain", chain), ("binomial_tree", tree)] {
        let a = algos::build("hierarchical_ring", Params::new(vec![("intra".into(), ParamValue::Str(intra.into()))]))
            .unwrap();
        let (cf, _) = a.closed_form(&p, &m).unwrap();
        assert!(close(cf, want), "{intra}: {cf} vs {want}");
    }
    // The survey's formula, 2 T0 + g S C + ring, is ours with a leader of g-1 = 3 NICs
    // except that it counts g = 4 additions where the leader makes 3.
    let wide = Hierarchical::new(vec![level(4, 1e-6, 100e9, Some(3)), level(3, 5e-6, 10e9, None)], 1).unwrap();
    let m3 = Machine { topo: &wide, cost_per_byte: 1e-10 };
    let a = algos::build("hierarchical_ring", Params::default()).unwrap();
    let (cf, _) = a.closed_form(&p, &m3).unwrap();
    let seed = 2.0 * t0 + 4.0 * r + ring;
    assert!(close(cf, seed - r), "{cf} vs seed {seed} minus one addition");
    assert!(check("hierarchical_ring", &[], &wide, 3000, 1e-10, true).is_none());
    // BlueConnect on the survey's 4 machines of 3 GPUs, tiers w0, w1, w2 (sizes 3, 2, 2),
    // n = 1200 f32 = 4800 B: shards 1600, 800, 400 B.
    let bc =
        Hierarchical::new(vec![level(3, 1e-6, 100e9, None), level(2, 3e-6, 25e9, None), level(2, 5e-6, 10e9, None)], 1)
            .unwrap();
    let p = Problem { ranks: 12, elems: 1200, elem_bytes: 4 };
    let want = 2.0 * (2.0 * (1e-6 + 1600.0 / 100e9) + 1600.0 * 1e-10)
        + (2.0 * (3e-6 + 800.0 / 25e9) + 800.0 * 1e-10)
        + (2.0 * (5e-6 + 400.0 / 10e9) + 400.0 * 1e-10);
    let a = algos::build("blueconnect", Params::default()).unwrap();
    let (cf, _) = a.closed_form(&p, &Machine { topo: &bc, cost_per_byte: 1e-10 }).unwrap();
    assert!(close(cf, want), "{cf} vs {want}");
    // The reductions telescope to (P-1)/P S C = 11/12 * 4800 * 1e-10.
    assert!(close(3200.0 + 800.0 + 400.0, 11.0 / 12.0 * 4800.0));
}

/// Where the shards are even (P divides n, or one level), BlueConnect's step recurrence
/// is its formula, `sum_i (s_i - 1)(2 T_i(c_i) + R(c_i))`; elsewhere the recurrence
/// gives a closed form for most points (the tally is printed) and the matrix above
/// checks every one against the engine.
#[test]
fn blueconnect_recurrence_is_its_formula_on_even_shards() {
    let (mut even, mut uneven, mut uneven_exact) = (0, 0, 0);
    for h in hierarchies() {
        let np = h.ranks();
        let levels: Vec<(usize, Link)> = h.levels().unwrap();
        for n in [0usize, 1, 7, 100, 1001, np, 3 * np, 17 * np, 262_147, 1024 * np] {
            for &c in &[0.0, 5e-11, 2e-9] {
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                let m = Machine { topo: &h, cost_per_byte: c };
                let steps = algos::forms::blueconnect(&p, &m);
                match algos::forms::blueconnect_formula(&p, &levels, c) {
                    Some(f) => {
                        even += 1;
                        let r = steps.unwrap_or_else(|| panic!("{} n={n}: no recurrence", h.describe()));
                        assert!(close(r, f), "{} n={n} C={c}: recurrence {r} vs formula {f}", h.describe());
                    }
                    None => {
                        uneven += 1;
                        uneven_exact += usize::from(steps.is_some());
                    }
                }
            }
        }
    }
    println!("blueconnect: {even} even points; {uneven_exact} of {uneven} uneven ones with a closed form");
    assert!(even > 0 && uneven > 0);
}

/// Where both exist, `hierarchical_ring`'s formula and its step recurrence agree (the
/// formula also covers binomial trees over groups that are not a power of two, whose
/// early leaves the recurrence gives up on).
#[test]
fn hierarchical_ring_formula_is_its_step_recurrence() {
    let mut both = 0;
    for h in hierarchies() {
        let np = h.ranks();
        for n in [0usize, 1, 7, 100, 1001, np, 17 * np, 262_147] {
            for &c in &[0.0, 5e-11, 2e-9] {
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                let m = Machine { topo: &h, cost_per_byte: c };
                for method in [algos::GroupMethod::Star, algos::GroupMethod::BinomialTree, algos::GroupMethod::Chain] {
                    let f = algos::forms::hierarchical_ring_formula(&p, &m, method);
                    if let (Some(f), Some(r)) = (f, algos::forms::hierarchical_ring_steps(&p, &m, method)) {
                        assert!(close(f, r), "{} n={n} C={c} {method:?}: formula {f} vs steps {r}", h.describe());
                        both += 1;
                    }
                }
            }
        }
    }
    assert!(both > 500, "{both}");
}

/// Leaders with different NIC counts: groups finish their reduce at different times, so
/// `hierarchical_ring`'s formula does not apply; its closed form is then the step
/// recurrence, checked against the engine wherever it exists (the tally is printed).
/// blueconnect's does not depend on ports.
#[test]
fn unequal_leaders_follow_the_step_recurrence() {
    let hs = [
        // Level 1 gives the leader of each pair of nodes 3 ports.
        Hierarchical::new(
            vec![level(3, 1e-6, 50e9, None), level(2, 4e-6, 10e9, Some(3)), level(2, 6e-6, 5e9, None)],
            1,
        )
        .unwrap(),
        Hierarchical::new(vec![level(4, 0.7e-6, 150e9, None), level(3, 5e-6, 12.5e9, Some(2))], 1).unwrap(),
    ];
    let (mut exact, mut none) = (0, 0);
    for h in &hs {
        let np = h.ranks();
        for n in [0usize, 1, 7, 100, 1001, 3 * np, 262_147] {
            for &c in &[0.0, 5e-11, 2e-9] {
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                for intra in ["star", "binomial_tree", "chain"] {
                    let method = match intra {
                        "star" => algos::GroupMethod::Star,
                        "chain" => algos::GroupMethod::Chain,
                        _ => algos::GroupMethod::BinomialTree,
                    };
                    let m = Machine { topo: h, cost_per_byte: c };
                    assert!(algos::forms::hierarchical_ring_formula(&p, &m, method).is_none());
                    match check("hierarchical_ring", &[("intra", intra)], h, n, c, n < 1000) {
                        None => exact += 1,
                        Some(msg) if msg.ends_with("no closed form") => none += 1,
                        Some(msg) => panic!("{msg}"),
                    }
                }
                assert!(check("blueconnect", &[], h, n, c, n < 1000).is_none());
            }
        }
    }
    println!("hierarchical_ring with unequal leaders: {exact} points with a closed form, {none} without");
    assert!(exact > 0);
}

/// `double_binary_tree` on every hierarchy, pipelined (4 KiB chunks) and not, every result
/// verified. With 4 NICs a rank has a port for each of its (at most 4) tree neighbours, so
/// no message ever waits for a port whatever the levels cost, and the closed form (the
/// round recurrence over the per-level alpha and B) must exist and match. With the
/// hierarchy's own NICs it may be `None` where ranks drift out of step (docs/model.md,
/// "The cases without either"); the tally is printed.
#[test]
fn double_binary_tree_on_hierarchies() {
    let (mut exact, mut none) = (0, 0);
    for h in hierarchies() {
        let wide = Hierarchical::new(h.level_list().to_vec(), 4).unwrap();
        let np = h.ranks();
        for n in [0usize, 1, 7, 1001, 3 * np, 40_000] {
            for &c in &[0.0, 5e-11, 2e-9] {
                for chunk in ["65536", "4096"] {
                    let params = [("chunk", chunk)];
                    assert_eq!(check("double_binary_tree", &params, &wide, n, c, n <= 1001), None);
                    let a = algos::build(
                        "double_binary_tree",
                        Params::new(vec![("chunk".into(), ParamValue::Str(chunk.into()))]),
                    )
                    .unwrap();
                    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                    assert!(a.closed_form(&p, &Machine { topo: &wide, cost_per_byte: c }).is_some());
                    assert_eq!(check("double_binary_tree", &params, &h, n, c, n <= 1001), None);
                    match a.closed_form(&p, &Machine { topo: &h, cost_per_byte: c }) {
                        Some(_) => exact += 1,
                        None => none += 1,
                    }
                }
            }
        }
    }
    println!(
        "double_binary_tree on hierarchies with their own NICs: {exact} points with a closed form, {none} without"
    );
    assert!(exact > 0);
}

#[test]
fn not_applicable_without_levels() {
    let t = Grid::torus(2, 3, Link { alpha: 1e-6, bandwidth: 1e9 }, 1);
    for id in ["hierarchical_ring", "blueconnect"] {
        let a = algos::build(id, Params::default()).unwrap();
        let p = Problem { ranks: 6, elems: 10, elem_bytes: 4 };
        let why = a.applicable(&p, &Machine { topo: &t, cost_per_byte: 0.0 }).unwrap_err();
        assert!(why.contains("needs a hierarchical topology") && why.contains("torus2d 2x3"), "{why}");
    }
}

#[test]
fn flat_algorithms_run_on_every_kind() {
    let l = Link { alpha: 1e-6, bandwidth: 10e9 };
    let custom = Graph::custom(
        (0..5).map(|i| format!("n{i}")).collect(),
        vec![1, 2, 1, 1, 1],
        &[(0, 1, l), (1, 2, l), (2, 3, Link { alpha: 3e-6, bandwidth: 1e9 }), (3, 4, l), (4, 0, l), (1, 3, l)],
    )
    .unwrap();
    let topos: Vec<Box<dyn Topology>> = vec![
        Box::new(Grid::torus(3, 4, l, 1)),
        Box::new(Grid::mesh(2, 3, l, 2)),
        Box::new(Grid::ring(5, l, 1)),
        Box::new(custom),
        Box::new(hierarchies().swap_remove(3)),
    ];
    let mut bad = Vec::new();
    for topo in &topos {
        for id in ["star", "chain", "binomial_tree", "butterfly", "ring", "halving_doubling"] {
            for &n in &[0usize, 5, 333] {
                // No closed form on these machines (they are not uniform); the result
                // must still be right.
                let a = algos::build(id, Params::default()).unwrap();
                let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
                assert!(a.closed_form(&p, &Machine { topo: topo.as_ref(), cost_per_byte: 0.0 }).is_none());
                bad.extend(check(id, &[], topo.as_ref(), n, 5e-11, true));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn scenarios_run_clean() {
    for file in ["scenarios/hierarchical.yaml", "scenarios/blueconnect.yaml"] {
        let mut s = allreduce_sim::scenario::load_file(std::path::Path::new(file)).unwrap();
        // The smallest size only: the files themselves are for release builds.
        s.sizes.truncate(1);
        for algo in 0..s.algorithms.len() {
            let r = run_point(&s, &Point { algo, ranks: s.ranks[0], bytes: s.sizes[0] });
            assert!(r.failures.is_empty(), "{file}: {}: {:?}", r.algorithm, r.failures);
            if r.not_applicable.is_none() && r.algorithm != "ring" {
                assert!(r.closed_form_rel_err.is_some_and(|e| e <= 1e-9) || !is_topology_aware(&r.algorithm));
            }
        }
    }
}

fn is_topology_aware(label: &str) -> bool {
    label.starts_with("hierarchical_ring") || label.starts_with("blueconnect")
}
