//! Regression matrix of the survey's grid and tree algorithms: `torus_2d` and `mesh_2d`
//! (both `ring` variants) on 2-D tori and meshes, and `double_binary_tree` on flat
//! machines and grids. Every point must verify element by element, and take exactly its
//! closed form wherever it has one; the points that must have one are listed. A few
//! points are worked by hand.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::data::{Expectations, Init, ReduceOp, Reference, Vectors, initial_values};
use allreduce_sim::sim::engine::{NoObserver, SimStats};
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{FullyConnected, Grid, Link, Topology};

fn build(id: &str, params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build(id, Params::new(params)).expect("builds")
}

fn problem(topo: &dyn Topology, n: usize) -> Problem {
    Problem { ranks: topo.ranks(), elems: n, elem_bytes: 4 }
}

/// Simulate one point (with data when `data`) and check every element.
fn run(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64, data: bool) -> Result<SimStats, String> {
    let p = problem(topo, n);
    let inputs: Vectors =
        (0..p.ranks).map(|r| initial_values(Init::Random, 11, r, n)).collect::<Vec<Vec<f32>>>().into();
    let reference = Reference::of(&inputs, ReduceOp::Sum);
    let (stats, vectors) = simulate(algo, topo, p, c, data.then_some((inputs, ReduceOp::Sum)), &mut NoObserver)
        .map_err(|e| format!("simulation failed: {e}"))?;
    if let Some(v) = vectors {
        let check = reference.check(&v, algo.reduction_depth(&p, topo), &Expectations::Allreduce);
        if !check.verified {
            return Err(format!("wrong result {:?}", check.first_violation));
        }
    }
    Ok(stats)
}

/// One point: `Ok(true)` verified and matched its closed form, `Ok(false)` verified and
/// has none.
fn point(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64, data: bool) -> Result<bool, String> {
    let p = problem(topo, n);
    let m = Machine { topo, cost_per_byte: c };
    algo.applicable(&p, &m).map_err(|e| format!("not applicable: {e}"))?;
    let stats = run(algo, topo, n, c, data)?;
    let Some((closed, tol)) = algo.closed_form(&p, &m) else { return Ok(false) };
    let err = if closed == 0.0 { stats.time.abs() } else { (stats.time / closed - 1.0).abs() };
    if err > tol {
        return Err(format!("simulated {:e} but closed form {closed:e} (rel err {err:e})", stats.time));
    }
    Ok(true)
}

/// Grids `(rows, cols)`: one rank, one row, one column, square, not square, larger.
const GRIDS: &[(usize, usize)] = &[(1, 1), (1, 6), (6, 1), (2, 2), (3, 5), (4, 4), (8, 8)];

/// Machines `(alpha, B, C)`: latency-bound, slow compute, and no latency at all.
const MACHINES: &[(f64, f64, f64)] = &[(1e-6, 12.5e9, 5e-11), (5e-6, 1e9, 1e-9), (0.0, 25e9, 2e-10)];

/// Sizes for P ranks: none, one element, fewer than P, not divisible by P, and 1 MiB
/// (with data up to 16 ranks, timing only above, to keep the test fast).
fn sizes(np: usize) -> Vec<(usize, bool)> {
    vec![(0, true), (1, true), (np.saturating_sub(1).max(1), true), (1000 * np + 7, true), (1 << 18, np <= 16)]
}

fn grid(rows: usize, cols: usize, wraps: bool, link: Link, nics: u32) -> Grid {
    if wraps { Grid::torus(rows, cols, link, nics) } else { Grid::mesh(rows, cols, link, nics) }
}

/// Tally of a matrix: failures, and the points without a closed form.
#[derive(Default)]
struct Tally {
    points: usize,
    bad: Vec<String>,
    none: Vec<String>,
}

impl Tally {
    fn record(&mut self, name: String, must_have_closed_form: bool, res: Result<bool, String>) {
        self.points += 1;
        match res {
            Ok(true) => {}
            Ok(false) if must_have_closed_form => self.bad.push(format!("{name}: no closed form")),
            Ok(false) => self.none.push(name),
            Err(e) => self.bad.push(format!("{name}: {e}")),
        }
    }

    /// Print the tally, and fail on a failed point or a count of points without a closed
    /// form other than `none` (docs/model.md quotes it: a change must update the docs).
    fn finish(self, what: &str, none: usize) {
        for b in &self.bad {
            println!("FAIL {b}");
        }
        for b in &self.none {
            println!("no closed form: {b}");
        }
        println!("{what}: {} points, {} failed, {} without closed form", self.points, self.bad.len(), self.none.len());
        assert!(self.bad.is_empty(), "{what}: {} points failed", self.bad.len());
        assert_eq!(self.none.len(), none, "{what}: points without a closed form (docs/model.md quotes the count)");
    }
}

/// `torus_2d` and both `mesh_2d` variants on every grid, torus and mesh, 1 and 2 NICs.
///
/// The closed form must exist:
/// - for `mesh_2d` (either variant) on every square or one-line grid, torus or mesh,
///   whatever alpha: its flow control keeps every port within its two NICs' load, so no
///   message ever waits for a port (see the module docs of `algos::torus`);
/// - for `torus_2d`, and `mesh_2d` on other grids, on a torus with alpha > 0 (every ring
///   step is one hop, and ranks stay within a message time of each other), for
///   `mesh_2d(ring=scatter)` when moreover its halves' shards are even (`2 rows cols`
///   divides n).
///
/// Elsewhere it may be `None`: `torus_2d` on a mesh (the rings' closing pairs are slow,
/// ranks fall out of step and a phase change may let a later step's message take a port
/// first), and `mesh_2d` on an `r x c` mesh with `r != c` (for `|r - c|` steps both
/// halves go the same way); see `cost_model::lockstep`. There the steps are taken
/// together (`cost_model::sweep`), and the test asserts that no point is left without:
/// 51 of 840 were before the sweep (95 before `mesh_2d` had flow control).
#[test]
fn grid_algorithms_matrix() {
    let mut tally = Tally::default();
    let algos = [
        build("torus_2d", &[]),
        build("mesh_2d", &[]),
        build("mesh_2d", &[("ring", ParamValue::Str("scatter".into()))]),
    ];
    for algo in &algos {
        for &(rows, cols) in GRIDS {
            let np = rows * cols;
            for wraps in [true, false] {
                for nics in [1u32, 2] {
                    for &(alpha, bw, c) in MACHINES {
                        for (n, data) in sizes(np) {
                            let topo = grid(rows, cols, wraps, Link { alpha, bandwidth: bw }, nics);
                            let p = problem(&topo, n);
                            let m = Machine { topo: &topo, cost_per_byte: c };
                            if algo.id() == "mesh_2d" && nics == 1 {
                                let why = algo.applicable(&p, &m).expect_err("mesh_2d needs two NICs");
                                assert!(why.contains("2 NICs"), "{why}");
                                continue;
                            }
                            let even = algo.label() != "mesh_2d(ring=scatter)" || n % (2 * np) == 0;
                            let uncontended = algo.id() == "mesh_2d" && (rows == cols || rows == 1 || cols == 1);
                            let must = uncontended || (wraps && alpha > 0.0 && even);
                            let name = format!("{} {} n={n} alpha={alpha} C={c}", algo.label(), topo.describe());
                            tally.record(name, must, point(algo.as_ref(), &topo, n, c, data));
                        }
                    }
                }
            }
        }
    }
    tally.finish("grid algorithms", 0);
}

/// `double_binary_tree` on flat machines of many sizes, with the default chunk and a
/// small one (so that 1 MiB is cut into many chunks), and on grids.
///
/// The closed form must exist with four NICs (one per message a rank sends in a round),
/// and with two for a single chunk per half (no pipeline to run ahead in); elsewhere it
/// may be out of step order, and the steps are taken together (`cost_model::sweep`):
/// no point is left without (113 of 1120 were before the sweep, all with one or two
/// NICs).
#[test]
fn double_binary_tree_matrix() {
    let mut tally = Tally::default();
    for chunk in [None, Some(4096u64)] {
        let params: Vec<(&str, ParamValue)> = chunk.map(|b| ("chunk", ParamValue::Int(b))).into_iter().collect();
        let algo = build("double_binary_tree", &params);
        for &np in &[1usize, 2, 3, 4, 5, 6, 7, 8, 12, 16, 33, 64] {
            for nics in [1u32, 2, 4] {
                for &(alpha, bw, c) in MACHINES {
                    for (n, data) in sizes(np) {
                        let topo = FullyConnected { ranks: np, link: Link { alpha, bandwidth: bw }, nics };
                        let single = n.div_ceil(2) * 4 <= chunk.unwrap_or(64 * 1024) as usize;
                        let must = np <= 2 || nics >= 4 || (nics >= 2 && single);
                        let name = format!("{} {} P={np} n={n} alpha={alpha} C={c}", algo.label(), topo.describe());
                        tally.record(name, must, point(algo.as_ref(), &topo, n, c, data));
                    }
                }
            }
        }
        for &(rows, cols) in &[(3usize, 5usize), (8, 8)] {
            for wraps in [true, false] {
                let (alpha, bw, c) = MACHINES[0];
                for (n, data) in sizes(rows * cols) {
                    let topo = grid(rows, cols, wraps, Link { alpha, bandwidth: bw }, 1);
                    let name = format!("{} {} n={n}", algo.label(), topo.describe());
                    tally.record(name, false, point(algo.as_ref(), &topo, n, c, data));
                }
            }
        }
    }
    tally.finish("double_binary_tree", 0);
}

/// Applicability: no grid, no `torus_2d` / `mesh_2d`; one NIC, no `mesh_2d`; the
/// reasons say so.
#[test]
fn applicability_is_explained() {
    let flat = FullyConnected { ranks: 16, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 2 };
    let p = problem(&flat, 100);
    let m = Machine { topo: &flat, cost_per_byte: 0.0 };
    for id in ["torus_2d", "mesh_2d"] {
        let why = build(id, &[]).applicable(&p, &m).expect_err("needs a grid");
        assert!(why.contains("grid"), "{id}: {why}");
    }
    let one_nic = Grid::torus(4, 4, Link { alpha: 1e-6, bandwidth: 1e9 }, 1);
    let m = Machine { topo: &one_nic, cost_per_byte: 0.0 };
    assert!(build("torus_2d", &[]).applicable(&p, &m).is_ok());
    let why = build("mesh_2d", &[]).applicable(&p, &m).expect_err("needs 2 NICs");
    assert!(why.contains("2 NICs") && why.contains("has 1"), "{why}");
    assert!(build("double_binary_tree", &[]).applicable(&p, &m).is_ok());
}

/// Simulated time of a point that must have a closed form, checked against it.
fn exact(algo: &dyn Algorithm, topo: &dyn Topology, n: usize, c: f64) -> f64 {
    assert!(point(algo, topo, n, c, true).expect("verifies and matches"), "{} has no closed form", algo.label());
    run(algo, topo, n, c, false).expect("runs").time
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-12)
}

/// `torus_2d` on a 2 x 2 torus, n = 8 floats (S = 32 bytes), alpha = 1 us, B = 1 GB/s
/// (1 ns per byte), C = 1 ns per byte.
#[test]
fn torus_2d_by_hand() {
    let topo = Grid::torus(2, 2, Link { alpha: 1e-6, bandwidth: 1e9 }, 1);
    // Row reduce-scatter, 1 step: blocks of S/2 = 16 B: T = 1 us + 16 ns, then add 16 ns.
    let rs = 1.016e-6 + 0.016e-6;
    // Column allreduce of the 16 B shard in pieces of 8 B: reduce-scatter 1 step
    // (1.008 us + 8 ns), allgather 1 step (1.008 us).
    let col = (1.008e-6 + 0.008e-6) + 1.008e-6;
    // Row allgather, 1 step of 16 B.
    let ag = 1.016e-6;
    let ours = rs + col + ag; // 4.072 us
    let t = exact(build("torus_2d", &[]).as_ref(), &topo, 8, 1e-9);
    assert!(close(t, ours), "{t} vs {ours}");
    let p = problem(&topo, 8);
    let m = Machine { topo: &topo, cost_per_byte: 1e-9 };
    assert!(close(algos::forms::torus_2d_formula(&p, &m, 2, 2), ours));
    // The survey moves the whole S = 32 B in the column phase: 2 (1.016) + 0.016 for the
    // row ring and the same again for the columns, 4.096 us, 24 ns more than the truth.
    let seed = algos::forms::torus_2d_seed(&p, &m, 2, 2);
    assert!(close(seed, 2.0 * (2.0 * 1.016e-6 + 0.016e-6)), "{seed}");
}

/// `mesh_2d` (ring=whole) on a 2 x 3 torus with 2 NICs, n = 10 floats (halves of 5 =
/// 20 bytes), alpha = 1 us, B = 1 GB/s, C = 1 ns per byte.
#[test]
fn mesh_2d_by_hand() {
    let topo = Grid::torus(2, 3, Link { alpha: 1e-6, bandwidth: 1e9 }, 2);
    // Half A: 2 row steps then 1 column step; half B: 1 column step then 2 row steps:
    // 3 steps. In each, both halves cross one hop at once on the two NICs (1.020 us),
    // then both are added on the one compute unit (20 + 20 ns): 1.060 us a step.
    let ours = 3.0 * (1.020e-6 + 0.040e-6); // 3.180 us
    let t = exact(build("mesh_2d", &[]).as_ref(), &topo, 10, 1e-9);
    assert!(close(t, ours), "{t} vs {ours}");
    let p = problem(&topo, 10);
    let m = Machine { topo: &topo, cost_per_byte: 1e-9 };
    assert!(close(algos::forms::mesh_2d_formula(&p, &m, 2, 3), ours));
    // The survey: 2 (m + n - 2)(alpha + S/B + S C) = 2 * 3 * (1 + 0.040 + 0.040) us.
    assert!(close(algos::forms::mesh_2d_seed(&p, &m, 2, 3), 6.0 * 1.080e-6));
}

/// `double_binary_tree` on 4 fully connected ranks with 1 NIC, n = 8 floats (one chunk
/// of 16 bytes per half), alpha = 1 us, B = 1 GB/s, C = 1 ns per byte: T = 1.016 us,
/// R = 16 ns.
///
/// Tree A (bit tree on positions 1..4): 3 -> 1 -> {0, 2}. Tree B (on 0..3): 0 -> 2 -> {1, 3}.
/// Round 0: leaves send up. Rank 1 takes 0's chunk [0, T] then 2's [T, 2T] on its one
/// port and adds both: done 2T + R; rank 2 likewise (from 1 and 3).
/// Round 1: 1 -> 3 and 2 -> 0 (up), [2T + R, 3T + R], added: 3T + 2R.
/// Round 2: the roots send down: 3 -> 1 and 0 -> 2, landing at 4T + 2R.
/// Round 3: 1 sends to 0 then 2, and 2 to 1 then 3, one port each: the second message
/// of each lands at 6T + 2R = 6.128 us.
#[test]
fn double_binary_tree_by_hand() {
    let topo = FullyConnected { ranks: 4, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
    let (t, r) = (1.016e-6, 0.016e-6);
    let ours = 6.0 * t + 2.0 * r;
    let sim = exact(build("double_binary_tree", &[]).as_ref(), &topo, 8, 1e-9);
    assert!(close(sim, ours), "{sim} vs {ours}");
    // With 4 NICs no message waits for a port: every round is one message time, plus
    // two additions in round 0 and one in round 1: 4T + 3R.
    let wide = FullyConnected { nics: 4, ..topo };
    let sim = exact(build("double_binary_tree", &[]).as_ref(), &wide, 8, 1e-9);
    assert!(close(sim, 4.0 * t + 3.0 * r), "{sim}");
}

/// On a torus whose rows x cols divides n, the recurrences equal the lockstep formulas.
#[test]
fn formulas_on_even_tori() {
    for &(rows, cols) in &[(2usize, 2usize), (3, 5), (4, 4), (8, 8), (1, 6), (6, 1)] {
        for &(alpha, bw, c) in MACHINES {
            let topo = Grid::torus(rows, cols, Link { alpha, bandwidth: bw }, 2);
            let n = 2 * rows * cols * 97;
            let p = problem(&topo, n);
            let m = Machine { topo: &topo, cost_per_byte: c };
            let rec = algos::forms::torus_2d(&p, &m).expect("closed form");
            let formula = algos::forms::torus_2d_formula(&p, &m, rows, cols);
            assert!((rec / formula - 1.0).abs() < 1e-12, "torus_2d {rows}x{cols}: {rec} vs {formula}");
            let rec = algos::forms::mesh_2d(&p, &m, algos::MeshRing::Whole).expect("closed form");
            let formula = algos::forms::mesh_2d_formula(&p, &m, rows, cols);
            assert!((rec / formula - 1.0).abs() < 1e-12, "mesh_2d {rows}x{cols}: {rec} vs {formula}");
        }
    }
}

/// What topology awareness buys, pinned: on an 8 x 8 torus at 16 MiB, torus_2d beats the
/// flat ring (whose row-major ring has 2-hop pairs at every row end), and mesh_2d with
/// ring=scatter on 2 NICs beats torus_2d on 1. torus_2d sends one message at a time, so
/// a second NIC changes nothing for it (what `scenarios/tpu_mesh.yaml` says).
#[test]
fn topology_awareness_pays() {
    let link = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let n = 4 << 20;
    let c = 5e-11;
    let one = Grid::torus(8, 8, link, 1);
    let two = Grid::torus(8, 8, link, 2);
    let ring = run(build("ring", &[]).as_ref(), &one, n, c, false).unwrap().time;
    let torus = run(build("torus_2d", &[]).as_ref(), &one, n, c, false).unwrap().time;
    let scatter = build("mesh_2d", &[("ring", ParamValue::Str("scatter".into()))]);
    let mesh = run(scatter.as_ref(), &two, n, c, false).unwrap().time;
    println!("8x8 torus, 16 MiB: ring {ring:e}, torus_2d {torus:e}, mesh_2d(scatter) on 2 NICs {mesh:e}");
    assert!(torus < ring && mesh < torus);
    let torus_two = run(build("torus_2d", &[]).as_ref(), &two, n, c, false).unwrap().time;
    assert_eq!(torus, torus_two);
}
