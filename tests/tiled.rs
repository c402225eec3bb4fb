//! A full run from the log of its data operations gives what a run that moves whole
//! vectors gives: the log replayed on whole vectors leaves every final vector bit for bit
//! the same, and the tiled run's verification is the same, field for field, at any tile
//! width. Every algorithm of every collective, every dtype and op.

use allreduce_sim::algos::{self, Machine, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::sim::data::{DataConfig, DataPlane, Dtype, Init, ReduceOp, generate, verify_log_with};
use allreduce_sim::sim::engine::{NoObserver, SimStats};
use allreduce_sim::sim::{Network, simulate_logged, simulate_with};
use allreduce_sim::topology::{FullyConnected, Grid, Link, Topology};

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];

#[test]
fn logged_runs_are_the_direct_runs() {
    let mut runs = 0;
    let mut tiled = 0;
    // The algorithms whose log is not index preserving (replayed on whole vectors).
    let mut whole = std::collections::BTreeSet::new();
    let link = Link { alpha: 1e-6, bandwidth: 1e10 };
    // Every algorithm on a fully connected machine, and the grid algorithms on tori too.
    let mut machines: Vec<Box<dyn Topology>> = [1usize, 2, 3, 5, 8]
        .into_iter()
        .map(|np| Box::new(FullyConnected { ranks: np, link, nics: 1 }) as Box<dyn Topology>)
        .collect();
    machines.push(Box::new(Grid::torus(2, 2, link, 1)));
    machines.push(Box::new(Grid::torus(2, 4, link, 2)));
    for topo in &machines {
        let (topo, np) = (topo.as_ref(), topo.ranks());
        for c in Collective::ALL.into_iter().filter(|c| c.has_data()) {
            for info in algos::registry_of(c) {
                let Ok(algo) = algos::build_for(c, info.id, Params::default()) else { continue };
                for (dtype, n) in [(Dtype::F32, 203), (Dtype::F16, np + 1), (Dtype::I32, 67), (Dtype::U8, 0)] {
                    let p = Problem { ranks: np, elems: n, elem_bytes: dtype.bytes() };
                    if algo.applicable(&p, &Machine { topo, cost_per_byte: 1e-10 }).is_err() {
                        continue;
                    }
                    for op in OPS {
                        let init = if op == ReduceOp::Prod { Init::Gradients } else { Init::Random };
                        let cfg = DataConfig { dtype, op, init, seed: 3 };
                        let what = format!("{c:?} {} on {} n={n} {dtype:?} {op:?}", algo.label(), topo.describe());
                        let depth = algo.reduction_depth(&p, topo);
                        let expect = c.expectations(np, n);
                        // Whole vectors, moved as the engine runs.
                        let (values, reference) = generate(cfg, np, n, None);
                        let plane = move |s: &[usize]| DataPlane::new(values, s, op);
                        let (direct_stats, finals) =
                            simulate_with(algo.as_ref(), topo, p, 1e-10, Some(plane), &mut NoObserver).unwrap();
                        let finals = finals.unwrap();
                        let direct = reference.check(&finals, depth, &expect);
                        // The log: the same run, and replayed on whole vectors the same bits.
                        let (stats, log) =
                            simulate_logged(algo.as_ref(), topo, p, 1e-10, Network::IDEAL, &mut NoObserver).unwrap();
                        // Where the estimate counts a tile, the replay takes tiles.
                        if algo.scratch(&p).is_empty() {
                            assert!(log.index_preserving(), "{what}: estimated by the tile, replayed whole");
                        }
                        // Only the copies of values in flight differ: a log keeps none.
                        let direct_stats = SimStats { peak_payload_bytes: 0, ..direct_stats };
                        assert_eq!(stats, direct_stats, "{what}: the engine ran differently");
                        let (values, _) = generate(cfg, np, n, None);
                        let mut plane = DataPlane::new(values, &log.lens()[1..], op);
                        log.replay(&mut plane);
                        assert_eq!(plane.into_finals().unwrap(), finals, "{what}: replay");
                        // Tile by tile, at widths that cut every chunk.
                        for width in [1, 7, 64, 4096] {
                            match verify_log_with(cfg, &log, depth, &expect, Some(width)) {
                                Some((v, _)) => {
                                    assert_eq!(v, direct, "{what}: tiles of {width}");
                                    tiled += 1;
                                }
                                None => {
                                    assert!(!log.index_preserving(), "{what}");
                                    whole.insert(format!("{c:?} {}", info.id));
                                }
                            }
                        }
                        runs += 1;
                    }
                }
            }
        }
    }
    assert!(runs > 1000 && tiled > 3000, "{runs} runs, {tiled} tiled");
    eprintln!("replayed on whole vectors: {whole:?}");
}

/// A failed check fails tile by tile as on whole vectors, at the same first element and
/// with the same figures.
#[test]
fn tiles_find_what_whole_vectors_find() {
    use allreduce_sim::sim::data::Expectations;
    let np = 4;
    let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e10 }, nics: 1 };
    let ring = algos::build("ring", Params::default()).unwrap();
    let n = 1000;
    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 1 };
    // A depth of 0 allows no rounding at all: ring's sums of random inputs round, so the
    // check must fail, at the same first element and with the same figures both ways.
    let (values, reference) = generate(cfg, np, n, None);
    let plane = move |s: &[usize]| DataPlane::new(values, s, cfg.op);
    let (_, finals) = simulate_with(ring.as_ref(), &topo, p, 0.0, Some(plane), &mut NoObserver).unwrap();
    let direct = reference.check(&finals.unwrap(), 0, &Expectations::Allreduce);
    assert!(!direct.verified);
    let (_, log) = simulate_logged(ring.as_ref(), &topo, p, 0.0, Network::IDEAL, &mut NoObserver).unwrap();
    for width in [1, 13, 256] {
        let (v, _) = verify_log_with(cfg, &log, 0, &Expectations::Allreduce, Some(width)).unwrap();
        assert_eq!(v, direct, "tiles of {width}");
    }
}

/// The estimate counts a full run's messages in flight at one vector a rank at most
/// (`estimate::Planned::data_bytes`): every algorithm keeps to it, because sends of one
/// unchanged region share one copy of its values. Copied once a send, `naive` held P - 1
/// vectors a rank (at 1,000 ranks, 28 GB where the vectors are 28 MB), and `direct`'s
/// allgather P - 1 copies of a block.
#[test]
fn values_in_flight_stay_within_a_vector_a_rank() {
    let link = Link { alpha: 1e-6, bandwidth: 1e10 };
    let mut machines: Vec<Box<dyn Topology>> = [(7usize, 1u32), (16, 1), (16, 2), (9, 4)]
        .into_iter()
        .map(|(np, nics)| Box::new(FullyConnected { ranks: np, link, nics }) as Box<dyn Topology>)
        .collect();
    machines.push(Box::new(Grid::torus(2, 4, link, 2)));
    let mut runs = 0;
    for topo in &machines {
        let (topo, np) = (topo.as_ref(), topo.ranks());
        for c in Collective::ALL.into_iter().filter(|c| c.has_data()) {
            for info in algos::registry_of(c) {
                let Ok(algo) = algos::build_for(c, info.id, Params::default()) else { continue };
                for n in [4 * np + 3, 1000] {
                    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                    if algo.applicable(&p, &Machine { topo, cost_per_byte: 1e-10 }).is_err() {
                        continue;
                    }
                    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 5 };
                    let (values, _) = generate(cfg, np, n, None);
                    let plane = move |s: &[usize]| DataPlane::new(values, s, ReduceOp::Sum);
                    let (stats, _) =
                        simulate_with(algo.as_ref(), topo, p, 1e-10, Some(plane), &mut NoObserver).unwrap();
                    let vectors = (np * n * 4) as u64;
                    assert!(
                        stats.peak_payload_bytes <= vectors,
                        "{c:?} {} on {} n={n}: {} bytes in flight, more than the ranks' {vectors}",
                        algo.label(),
                        topo.describe(),
                        stats.peak_payload_bytes
                    );
                    if np > 1 && n > 0 {
                        assert!(stats.peak_payload_bytes > 0, "{c:?} {}: no values counted", algo.label());
                    }
                    runs += 1;
                }
            }
        }
    }
    assert!(runs > 200, "{runs} runs");
}
