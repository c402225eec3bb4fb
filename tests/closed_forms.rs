//! Closed forms everywhere (the matrix of a user's points): every registered allreduce
//! entry over P in {3, 5, 8, 12, 16, 24}, n in {1000 P, 1000 P + 1}, on one NIC with
//! compute, two NICs, and free compute. Every runnable point must meet its exact form to
//! 1e-9 or fall between its stated bounds; the test counts both and asserts the counts.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{
    Cluster, ClusterSpec, FullyConnected, Grid, Hierarchical, InterSpec, IntraKind, Level, Link, PerProto, Topology,
};
use proptest::prelude::*;

fn build(id: &str, params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build(id, Params::new(params)).expect("builds")
}

/// The sixteen allreduce entries of the matrix.
fn entries() -> Vec<Box<dyn Algorithm>> {
    let seg = |id: &str, n: u64| build(id, &[("segments", ParamValue::Int(n))]);
    vec![
        build("star", &[]),
        build("chain", &[]),
        build("binomial_tree", &[]),
        seg("binomial_tree", 4),
        build("butterfly", &[]),
        build("ring", &[]),
        seg("ring", 2),
        build("ring_segmented", &[]),
        build("bidirectional_ring", &[]),
        build("halving_doubling", &[]),
        build("double_binary_tree", &[]),
        build("naive", &[]),
        build("ring_gloo", &[]),
        build("ring_chunked", &[]),
        build("bcube", &[]),
        build("direct", &[]),
    ]
}

#[derive(Debug, Default)]
struct Count {
    runnable: usize,
    exact: usize,
    bound: usize,
    /// The widest `upper / lower - 1` of the bound points.
    widest: f64,
    none: Vec<String>,
    /// The bound points, each with its `upper / lower - 1`.
    bounded: Vec<String>,
    misses: Vec<String>,
}

fn matrix(alpha: f64, bw: f64, c: f64, nics: u32) -> Count {
    let mut count = Count::default();
    for algo in entries() {
        for np in [3usize, 5, 8, 12, 16, 24] {
            for n in [1000 * np, 1000 * np + 1] {
                let topo = FullyConnected { ranks: np, link: Link { alpha, bandwidth: bw }, nics };
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                let m = Machine { topo: &topo, cost_per_byte: c };
                if algo.applicable(&p, &m).is_err() {
                    continue;
                }
                count.runnable += 1;
                let (stats, _) = simulate(algo.as_ref(), &topo, p, c, None, &mut NoObserver).expect("runs");
                let name = format!("{} P={np} n={n}", algo.label());
                if let Some((closed, tol)) = algo.closed_form(&p, &m) {
                    let err = (stats.time / closed - 1.0).abs();
                    if err > tol {
                        count.misses.push(format!("{name}: {} vs exact {closed}", stats.time));
                    }
                    count.exact += 1;
                } else if let Some((lo, hi)) = algo.bounds(&p, &m) {
                    let t = stats.time;
                    if !(t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9)) {
                        count.misses.push(format!("{name}: {t} outside [{lo}, {hi}]"));
                    }
                    count.bound += 1;
                    count.widest = count.widest.max(hi / lo - 1.0);
                    count.bounded.push(format!("{name} (width {:.2e})", hi / lo - 1.0));
                } else {
                    count.none.push(name);
                }
            }
        }
    }
    count
}

fn report(what: &str, count: &Count) {
    println!(
        "{what}: {} runnable, {} exact, {} bound (widest {:.3}), {} neither",
        count.runnable,
        count.exact,
        count.bound,
        count.widest,
        count.none.len()
    );
    for x in &count.bounded {
        println!("  bound: {x}");
    }
    for x in &count.none {
        println!("  none: {x}");
    }
    for x in &count.misses {
        println!("  MISS: {x}");
    }
}

/// The matrix, three times; the counts are asserted, so a form that is lost, or a case
/// that gains one, shows here (and in docs/model.md's table, which quotes them).
#[test]
fn matrix_meets_its_forms_and_bounds() {
    // (alpha, B, C, NICs), and the exact, bound and runnable points measured.
    let cases = [
        ((1e-6, 12.5e9, 5e-11, 1), (184, 0, 184)),
        ((1e-6, 12.5e9, 5e-11, 2), (184, 0, 184)),
        ((1e-6, 12.5e9, 0.0, 1), (184, 0, 184)),
    ];
    // docs/model.md's table quotes these counts, one row per case in this order.
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/model.md")).expect("docs");
    let section = docs.split("## The matrix").nth(1).expect("the section");
    let rows: Vec<Vec<usize>> = section
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("NIC"))
        .map(|l| {
            let cells = l.split('|').map(str::trim).filter(|c| !c.is_empty()).skip(1);
            cells.map(|c| c.split(' ').next().unwrap_or("").parse().expect("a count")).collect()
        })
        .collect();
    let quoted: Vec<Vec<usize>> = cases.iter().map(|&(_, (e, b, r))| vec![r, e, b, r - e - b]).collect();
    assert_eq!(rows, quoted, "docs/model.md's matrix table (runnable, exact, bounds, neither) differs");
    let mut bad = Vec::new();
    for ((alpha, bw, c, nics), (exact, bound, runnable)) in cases {
        let count = matrix(alpha, bw, c, nics);
        let what = format!("nics={nics} C={c}");
        report(&what, &count);
        if !count.misses.is_empty() || (count.exact, count.bound, count.runnable) != (exact, bound, runnable) {
            bad.push(format!(
                "{what}: {} misses; exact, bound, runnable {:?} where {:?} was measured",
                count.misses.len(),
                (count.exact, count.bound, count.runnable),
                (exact, bound, runnable)
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

fn any_algorithm() -> impl Strategy<Value = (Collective, &'static str, Vec<(String, ParamValue)>)> {
    let mut all = Vec::new();
    for c in Collective::ALL {
        for info in algos::registry_of(c) {
            all.push((c, info.id, Vec::new()));
        }
    }
    for (id, key, v) in [("ring", "segments", 2u64), ("ring", "segments", 3), ("binomial_tree", "segments", 3)] {
        all.push((Collective::Allreduce, id, vec![(key.to_string(), ParamValue::Int(v))]));
    }
    all.push((Collective::Allreduce, "ring_segmented", vec![("segment".to_string(), ParamValue::Int(1024))]));
    proptest::sample::select(all)
}

/// A random machine of `np` ranks (or close to it: a grid or a hierarchy takes the
/// nearest shape): flat, a 2-D torus or mesh, a two-level hierarchy with a slower
/// outer level, or a GPU cluster; `kind` picks which.
fn machine(kind: u8, np: usize, link: Link, nics: u32) -> Box<dyn Topology> {
    let np = np.max(1);
    match kind {
        1 | 2 => {
            let rows = (1..=np).rev().find(|r| np.is_multiple_of(*r) && r * r <= np).unwrap_or(1);
            let cols = np / rows;
            if kind == 1 {
                Box::new(Grid::torus(rows, cols, link, nics))
            } else {
                Box::new(Grid::mesh(rows, cols, link, nics))
            }
        }
        3 if np >= 2 => {
            let inner = if np.is_multiple_of(2) { 2 } else { 1 };
            let outer = Link { alpha: link.alpha * 4.0, bandwidth: link.bandwidth / 3.0 };
            let levels =
                vec![Level { size: inner, link, nics: None }, Level { size: np / inner, link: outer, nics: None }];
            Box::new(Hierarchical::new(levels, nics).expect("hierarchy"))
        }
        4 if np >= 2 => {
            let gpus = if np.is_multiple_of(4) {
                4
            } else if np.is_multiple_of(2) {
                2
            } else {
                1
            };
            // A node's NICs each serve at least one GPU.
            let spec = cluster(IntraKind::Nvswitch, np / gpus, gpus, (nics as usize).min(gpus), 0.0);
            Box::new(Cluster::new(&spec, np).expect("cluster"))
        }
        _ => Box::new(FullyConnected { ranks: np, link, nics }),
    }
}

proptest! {
    // A fixed seed: CI draws the cases a desk run draws (change it to explore; keep a
    // failing case as a test of its own).
    #![proptest_config(ProptestConfig {
        cases: 160,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_c105_ed00_0030),
        ..ProptestConfig::default()
    })]

    /// Every registered algorithm of every collective, on a random machine (flat, torus,
    /// mesh, two-level hierarchy, GPU cluster): the simulated time meets the exact form
    /// to 1e-9, or falls between the bounds, and the bounds are ordered.
    #[test]
    fn random_points_meet_their_form_or_bounds(
        (coll, id, params) in any_algorithm(),
        kind in 0u8..5,
        np in 1usize..13,
        n in 0usize..4000,
        alpha in prop_oneof![Just(0.0), 1e-7f64..1e-5],
        bw in 1e8f64..5e10,
        c in prop_oneof![Just(0.0), 1e-12f64..2e-9],
        nics in 1u32..4,
    ) {
        let algo = algos::build_for(coll, id, Params::new(params)).expect("builds");
        let topo = machine(kind, np, Link { alpha, bandwidth: bw }, nics);
        let topo = topo.as_ref();
        let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
        let m = Machine { topo, cost_per_byte: c };
        if algo.applicable(&p, &m).is_ok() {
            let (stats, _) = simulate(algo.as_ref(), topo, p, c, None, &mut NoObserver).expect("runs");
            let t = stats.time;
            let name = format!("{} {coll} on {}", algo.label(), topo.describe());
            if let Some((closed, tol)) = algo.closed_form(&p, &m) {
                let err = if closed == 0.0 { t.abs() } else { (t / closed - 1.0).abs() };
                prop_assert!(err <= tol, "{name}: simulated {t} but exact {closed}");
            } else if let Some((lo, hi)) = algo.bounds(&p, &m) {
                prop_assert!(lo <= hi * (1.0 + 1e-9), "{name}: bounds {lo} > {hi}");
                prop_assert!(
                    t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9),
                    "{name}: simulated {t} outside [{lo}, {hi}]"
                );
            } else {
                prop_assert!(exception(id).is_some(), "{name}: neither an exact form nor bounds, and not an exception");
            }
        }
    }
}

/// A GPU cluster (`kind: cluster`): `nodes` x `gpus` on an intra-node switch of `kind`,
/// `nics` NICs per node on rails.
fn cluster(kind: IntraKind, nodes: usize, gpus: usize, nics: usize, launch: f64) -> ClusterSpec {
    let intra = (kind, PerProto { ll: 0.6e-6, ll128: 1.9e-6, simple: 3.4e-6 }, 300e9);
    let inter = InterSpec::new(PerProto { ll: 2.7e-6, ll128: 4e-6, simple: 14e-6 }, 50e9);
    ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(launch))
}

/// Every algorithm of every collective on GPU clusters, where an NVLink (or PCIe)
/// interface and a NIC interface each have their own ports, NICs possibly shared by
/// several GPUs: every exact form is met to 1e-9 and every point with bounds falls
/// between them.
#[test]
fn clusters_meet_their_forms_and_bounds() {
    let mut misses = Vec::new();
    let (mut exact, mut bound, mut runnable) = (0, 0, 0);
    let machines = [
        (IntraKind::Nvswitch, 2, 8, 8),
        (IntraKind::Nvswitch, 2, 4, 2),
        (IntraKind::Nvswitch, 3, 4, 1),
        (IntraKind::Pcie, 2, 4, 1),
        (IntraKind::Nvswitch, 4, 2, 2),
        (IntraKind::Nvswitch, 4, 1, 1),
        (IntraKind::Nvswitch, 1, 8, 1),
    ];
    let mut neither = Vec::new();
    for (kind, nodes, gpus, nics) in machines {
        let spec = cluster(kind, nodes, gpus, nics, 8e-6);
        let np = nodes * gpus;
        let topo = Cluster::new(&spec, np).expect("cluster");
        for coll in Collective::ALL {
            for info in algos::registry_of(coll) {
                let algo = algos::build_for(coll, info.id, Params::new(Default::default())).expect("builds");
                for n in [64 * np, 1000 * np + 1, 1 << 18] {
                    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                    for c in [0.0, 1e-12] {
                        let m = Machine { topo: &topo, cost_per_byte: c };
                        if algo.applicable(&p, &m).is_err() {
                            continue;
                        }
                        runnable += 1;
                        let (stats, _) = simulate(algo.as_ref(), &topo, p, c, None, &mut NoObserver).expect("runs");
                        let t = stats.time;
                        let name = format!("{coll} {} {kind:?} {nodes}x{gpus} nics={nics} n={n} C={c}", algo.label());
                        if let Some((closed, tol)) = algo.closed_form(&p, &m) {
                            exact += 1;
                            let err = if closed == 0.0 { t.abs() } else { (t / closed - 1.0).abs() };
                            if err > tol {
                                misses.push(format!("{name}: simulated {t} but exact {closed}"));
                            }
                        } else if let Some((lo, hi)) = algo.bounds(&p, &m) {
                            bound += 1;
                            if !(t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9)) {
                                misses.push(format!("{name}: simulated {t} outside [{lo}, {hi}]"));
                            }
                        } else if exception(info.id).is_none() {
                            neither.push(name);
                        }
                    }
                }
            }
        }
    }
    println!("clusters: {runnable} runnable, {exact} exact, {bound} bound");
    assert!(misses.is_empty(), "{misses:#?}");
    assert!(neither.is_empty(), "neither an exact form nor bounds, and not an exception: {neither:#?}");
}

/// The algorithms whose points may have neither an exact form nor bounds, each with its
/// owner and why (docs/model.md, 'The cases without an exact form', holds the same
/// table), and a witness point that has neither today: `(collective, id, machine kind of
/// [`machine`], P, NICs, n, C)`.
type Witness = (Collective, &'static str, u8, usize, u32, usize, f64);
// Empty since NCCL's ring and tree state their own bounds where their recurrences give
// up (docs/nccl.md, 'Bounds'); a new algorithm without either must be listed here.
const EXCEPTIONS: &[(&str, &str, &str, Witness)] = &[];

/// Why `id` may have neither form nor bounds, if it is an exception.
fn exception(id: &str) -> Option<&'static str> {
    EXCEPTIONS.iter().find(|e| e.0 == id).map(|e| e.2)
}

/// Every exception still has a point with neither form nor bounds (one that gains them
/// must leave the list), and docs/model.md's table lists exactly these.
#[test]
fn the_exceptions_are_exact() {
    for &(id, _, _, (coll, w_id, kind, np, nics, n, c)) in EXCEPTIONS {
        assert_eq!(id, w_id);
        let algo = algos::build_for(coll, id, Params::new(Default::default())).expect("builds");
        let topo = machine(kind, np, Link { alpha: 1e-6, bandwidth: 1e10 }, nics);
        let topo = topo.as_ref();
        let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
        let m = Machine { topo, cost_per_byte: c };
        assert!(algo.applicable(&p, &m).is_ok(), "{id}'s witness does not run");
        assert!(
            algo.closed_form(&p, &m).is_none() && algo.bounds(&p, &m).is_none(),
            "{id} on {} with n = {n} now has a form or bounds: take it off EXCEPTIONS and docs/model.md",
            topo.describe()
        );
    }
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/model.md")).expect("docs");
    let section = docs.split("## The cases without an exact form").nth(1).expect("the section");
    let section = section.split("\n## ").next().unwrap_or("");
    let rows: Vec<(String, String)> = section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect();
    let listed: Vec<(String, String)> = EXCEPTIONS.iter().map(|e| (e.0.to_string(), e.1.to_string())).collect();
    assert_eq!(rows, listed, "docs/model.md's table of exceptions differs from EXCEPTIONS");
}

/// The point the random test once drew where the sweep and the engine differed by one
/// 4-byte chunk (alpha = 0: a notification takes and frees its ports within one
/// instant, and the sweep handed the freed port out before the instant had settled),
/// with P = 6 and the points around it at 1 and 2 NICs: the exact form holds.
#[test]
fn ring_chunked_at_zero_alpha_keeps_its_exact_form() {
    let algo = algos::build_for(Collective::Allreduce, "ring_chunked", Params::new(Default::default())).unwrap();
    for (np, n, nics) in [(5, 513, 2), (5, 1025, 2), (6, 1025, 2), (5, 513, 1), (7, 3, 2), (16, 10_001, 2)] {
        let topo = machine(0, np, Link { alpha: 0.0, bandwidth: 1e8 }, nics);
        let topo = topo.as_ref();
        let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
        let m = Machine { topo, cost_per_byte: 0.0 };
        let (form, tol) = algo.closed_form(&p, &m).expect("an exact form at alpha = 0");
        let t = simulate(algo.as_ref(), topo, p, 0.0, None, &mut NoObserver).unwrap().0.time;
        assert!((t / form - 1.0).abs() <= tol, "P={np} n={n} nics={nics}: simulated {t:e}, closed form {form:e}");
    }
}

/// The family an algorithm's bounds are reported under in docs/model.md's table of
/// bound widths.
fn family(id: &str) -> &'static str {
    match id {
        "nccl_ring" | "nccl_tree" => "NCCL's ring and tree (their own bounds)",
        "nvls" | "nvls_halves" | "nvls_tree" => "NVLS (its own bounds)",
        _ if id.contains("ring") || id == "chain" => "rings and chains",
        "star" | "one_to_all" | "all_to_one" | "all_to_all" | "naive" | "direct" => {
            "one to all, all to one, all to all"
        }
        "butterfly" | "halving_doubling" | "recursive_doubling" | "bruck" | "pat" => "recursive doubling and halving",
        _ => "trees",
    }
}

/// The width of the bounds users are given: over a grid of machines where forms are
/// scarce (two-level hierarchies, GPU clusters with shared NICs, 2-D tori), every point
/// without an exact form, the ratio upper / lower of its bounds, worst per family; the
/// figures must be docs/model.md's (to 0.01). No engine runs here (the bounds are read
/// off the programs), so the grid is wide; the random test above checks that simulated
/// times fall between them.
#[test]
fn bound_widths() {
    let mut worst: std::collections::BTreeMap<&str, (f64, String)> = Default::default();
    for coll in Collective::ALL {
        for info in algos::registry_of(coll) {
            let algo = algos::build_for(coll, info.id, Params::new(Default::default())).expect("builds");
            for kind in [1u8, 3, 4] {
                for np in [4usize, 6, 8, 12, 16] {
                    for nics in [1u32, 2] {
                        for n in [1000 * np + 1, 1 << 16] {
                            for c in [0.0, 1e-10] {
                                let topo = machine(kind, np, Link { alpha: 1e-6, bandwidth: 1e10 }, nics);
                                let topo = topo.as_ref();
                                let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
                                let m = Machine { topo, cost_per_byte: c };
                                if algo.applicable(&p, &m).is_err() || algo.closed_form(&p, &m).is_some() {
                                    continue;
                                }
                                let Some((lo, hi)) = algo.bounds(&p, &m) else { continue };
                                let ratio = if lo > 0.0 { hi / lo } else { 1.0 };
                                let e = worst.entry(family(info.id)).or_insert((0.0, String::new()));
                                if ratio > e.0 {
                                    *e =
                                        (ratio, format!("{coll} {} on {}, n = {n}, C = {c}", info.id, topo.describe()));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (k, (r, at)) in &worst {
        println!("{k:45} {r:8.2}  {at}");
    }
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/model.md")).expect("docs");
    let section = docs.split("**How wide the bounds are**").nth(1).expect("the table of widths");
    let quoted: std::collections::BTreeMap<&str, f64> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1], cells[2].parse().expect("a ratio"))
        })
        .collect();
    let measured: std::collections::BTreeMap<&str, f64> = worst.iter().map(|(k, v)| (*k, v.0)).collect();
    assert_eq!(quoted.keys().collect::<Vec<_>>(), measured.keys().collect::<Vec<_>>(), "families differ from the docs");
    for (k, r) in &measured {
        assert!((quoted[k] - r).abs() <= 0.01, "{k}: widest {r:.3}, docs/model.md says {}", quoted[k]);
    }
}

/// A run beyond the sweep's 400,000 messages still gets bounds, read off its programs
/// without the engine: a ring on a two-level hierarchy of 460 ranks (2 P (P-1) =
/// 422,280 messages) has no exact form, and its simulated time lies between them; on
/// this machine the ring is a queue per link, so they are close.
#[test]
fn runs_beyond_the_sweep_limit_get_bounds() {
    let topo = machine(3, 460, Link { alpha: 1e-6, bandwidth: 1e10 }, 1);
    let topo = topo.as_ref();
    let p = Problem { ranks: 460, elems: 460 * 64 + 1, elem_bytes: 4 };
    let c = 1e-10;
    let m = Machine { topo, cost_per_byte: c };
    let algo = algos::build_for(Collective::Allreduce, "ring", Params::new(Default::default())).expect("builds");
    assert!(algo.messages(&p, topo).expect("counted") > allreduce_sim::cost_model::SWEEP_LIMIT as u64);
    assert!(algo.closed_form(&p, &m).is_none());
    let (lo, hi) = algo.bounds(&p, &m).expect("bounds");
    let t = simulate(algo.as_ref(), topo, p, c, None, &mut NoObserver).expect("runs").0.time;
    assert!(lo <= t * (1.0 + 1e-9) && t <= hi * (1.0 + 1e-9), "{lo:e} <= {t:e} <= {hi:e}");
    assert!(hi / lo < 1.5, "{lo:e}, {hi:e}");
}

/// The step recurrences and the sweep (`cost_model::lockstep`, `cost_model::sweep`)
/// where their ports are busiest: all-to-all steps whose blocks differ by an element
/// (direct, where the recurrence gives up and the sweep takes over), two rings sharing
/// every port (bidirectional_ring), windowed trees (double_binary_tree, flat and on a
/// hierarchy), and steps on a torus and a mesh. Each has an exact form and it is the engine's time to 1e-15:
/// the evaluation that serves ports from per-interface lists, and only where something
/// changed, hands out every port the engine does.
#[test]
fn busy_recurrences_are_the_engines_time() {
    let link = Link { alpha: 1e-6, bandwidth: 1.25e10 };
    let cases: &[(&str, u8, usize)] = &[
        ("direct", 0, 40),
        // Uneven blocks at a few more sizes and on machines whose ranks share
        // interfaces: the step recurrence's instant-by-instant service (which answers
        // where no rank runs ahead, and else gives up for the sweep).
        ("direct", 0, 7),
        ("direct", 0, 64),
        ("direct", 3, 24),
        ("direct", 4, 16),
        ("bidirectional_ring", 0, 36),
        ("double_binary_tree", 0, 40),
        ("double_binary_tree", 3, 40),
        ("torus_2d", 1, 36),
        ("mesh_2d", 2, 36),
    ];
    let mut bad = Vec::new();
    for &(id, kind, np) in cases {
        for nics in [1u32, 2] {
            for n in [np * 256 + 1, np * 256 + np / 2] {
                let topo = machine(kind, np, link, nics);
                let topo = topo.as_ref();
                let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
                let c = 5e-11;
                let m = Machine { topo, cost_per_byte: c };
                let algo = build(id, &[]);
                if algo.applicable(&p, &m).is_err() {
                    continue;
                }
                let t = simulate(algo.as_ref(), topo, p, c, None, &mut NoObserver).expect("runs").0.time;
                let name = format!("{id} on {} nics={nics} n={n}", topo.describe());
                match algo.closed_form(&p, &m) {
                    Some((closed, _)) if (t / closed - 1.0).abs() <= 1e-15 => {}
                    other => bad.push(format!("{name}: simulated {t:e}, closed form {other:?}")),
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// An algorithm's own bounds hold wherever it gives them, not only where its exact form
/// failed: 20,000 draws (a fixed sequence) of every algorithm of every collective and
/// `bcube` of bases 3 and 4, on flat machines, tori, meshes, two-level hierarchies and GPU clusters of 2 to 32
/// ranks, 0 to 4,999 elements, with and without latency and compute, 1 to 3 NICs. The
/// bounds of `halving_doubling`, `bcube` and `ring_chunked` at n rounded down and up to a
/// multiple of their chunks failed here (one NIC: `halving_doubling` on 8 ranks took
/// 1.709 us at 473 elements against 1.699 us at 480, `ring_chunked` 4.3% past its form at n
/// rounded up): the time does not grow with n where parts of two lengths reorder a
/// rank's ports. They are reached only where the exact form fails, so the matrix and the
/// random points above never asked them.
/// A collective, an algorithm and its parameters.
type Entry = (Collective, &'static str, Vec<(String, ParamValue)>);

#[test]
fn own_bounds_hold_wherever_an_algorithm_gives_them() {
    let mut seed = 0x5eed_b0d5_u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut ids: Vec<Entry> = Collective::ALL
        .into_iter()
        .flat_map(|c| algos::registry_of(c).iter().map(move |info| (c, info.id, Vec::new())))
        .collect();
    for b in [3u64, 4] {
        ids.push((Collective::Allreduce, "bcube", vec![("base".to_string(), ParamValue::Int(b))]));
    }
    let (mut asked, mut bad) = (std::collections::BTreeMap::new(), Vec::new());
    for _ in 0..20_000 {
        let (coll, id, params) = &ids[(rnd() % ids.len() as u64) as usize];
        let kind = (rnd() % 5) as u8;
        let np = [2usize, 3, 4, 5, 6, 8, 9, 12, 16, 27, 32][(rnd() % 11) as usize];
        let n = (rnd() % 5000) as usize;
        let alpha = if rnd() % 5 == 0 { 0.0 } else { 1e-7 + (rnd() % 1000) as f64 * 1e-8 };
        let bw = 1e8 + (rnd() % 1000) as f64 * 5e7;
        let c = if rnd() % 3 == 0 { 0.0 } else { (rnd() % 1000) as f64 * 2e-12 };
        let nics = 1 + (rnd() % 3) as u32;
        let algo = algos::build_for(*coll, id, Params::new(params.clone())).expect("builds");
        let topo = machine(kind, np, Link { alpha, bandwidth: bw }, nics);
        let topo = topo.as_ref();
        let p = Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 };
        let m = Machine { topo, cost_per_byte: c };
        if algo.applicable(&p, &m).is_err() {
            continue;
        }
        let Some((lo, hi)) = algo.closed_form_bounds(&p, &m) else { continue };
        let (stats, _) = simulate(algo.as_ref(), topo, p, c, None, &mut NoObserver).expect("runs");
        let t = stats.time;
        *asked.entry(format!("{coll} {}", algo.label())).or_insert(0usize) += 1;
        if !(lo <= hi * (1.0 + 1e-9) && t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9)) {
            bad.push(format!("{} {coll} on {} n={n} C={c}: {t} outside [{lo}, {hi}]", algo.label(), topo.describe()));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    // The draws reach the algorithms with bounds of their own, each many times.
    for id in ["allreduce bcube", "allreduce bcube(base=3)", "allreduce halving_doubling", "allreduce direct"] {
        assert!(asked.get(id).copied().unwrap_or(0) >= 50, "{id}: {asked:?}");
    }
}

/// `double_binary_tree`'s windowed rounds with compute and two NICs: a rank whose two
/// first sends of a round land at one instant may issue its third and fourth at once,
/// and the fourth may take a port that is free then while the third waits for its
/// receiver. The step recurrence issued one message per sender per pass over the
/// instant and moved to the next instant when nothing started, so the fourth started
/// only at the next instant anything ended: its form came out late (P = 8, 2 NICs,
/// C = 50 ps/B, `chunk=24`, 73 elements: 20.038 us against the engine's 19.04068 us;
/// 1,000,008 B at the default chunk: 2.0e-6 at P = 8, 1.5e-3 at P = 10). Both points,
/// then every P from 2 to 17 at 1 and 2 NICs, with and without compute, at a few sizes
/// and chunks (three more points missed before: P = 11 at `chunk=100`, 10,000 and 11,000
/// elements, and P = 13 at `chunk=4096`, 13,000, where the form came out early): the exact
/// form, within the tolerance the algorithm states.
#[test]
fn double_binary_tree_windows_issue_every_send_their_landings_allow() {
    let link = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let chunked = |bytes: u64| build("double_binary_tree", &[("chunk", ParamValue::Int(bytes))]);
    // (algorithm, P, elements, NICs, C).
    type Point = (Box<dyn Algorithm>, usize, usize, u32, f64);
    let mut cases: Vec<Point> = vec![
        (chunked(24), 8, 73, 2, 5e-11),
        (build("double_binary_tree", &[]), 8, 250_002, 2, 5e-11),
        (build("double_binary_tree", &[]), 10, 250_002, 2, 5e-11),
    ];
    for np in 2..=17 {
        for nics in [1u32, 2] {
            for c in [0.0, 5e-11] {
                // (chunk bytes, elements): halves shorter than their chunk count, pipelines
                // of a few chunks and of a hundred, chunks of two lengths.
                let sizes = [(24, 7), (24, 73), (100, 1000 * np), (100, 10_000), (4096, 1000 * np), (65_536, 250_002)];
                for (chunk, n) in sizes {
                    cases.push((chunked(chunk), np, n, nics, c));
                }
            }
        }
    }
    let mut bad = Vec::new();
    for (algo, np, n, nics, c) in &cases {
        let topo = FullyConnected { ranks: *np, link, nics: *nics };
        let p = Problem { ranks: *np, elems: *n, elem_bytes: 4 };
        let m = Machine { topo: &topo, cost_per_byte: *c };
        let t = simulate(algo.as_ref(), &topo, p, *c, None, &mut NoObserver).expect("runs").0.time;
        let name = format!("{} P={np} n={n} nics={nics} C={c}", algo.label());
        match algo.closed_form(&p, &m) {
            Some((form, tol)) if (t / form - 1.0).abs() <= tol => {}
            other => bad.push(format!("{name}: simulated {t:e}, closed form {other:?}")),
        }
    }
    assert!(bad.is_empty(), "{} of {} points: {bad:#?}", bad.len(), cases.len());
}
