//! `data: { mode: sample }`: a sampled data plane tracks some elements of every vector,
//! and each of them must end bit for bit where a full run puts it, for every algorithm
//! on every kind of machine. And a sampled run must catch a wrong result.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::sim::data::{
    DataConfig, DataPlane, Dtype, Expectations, Init, ReduceOp, generate, initial_values, initial_values_at,
    sample_positions,
};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::op::{Action, Op, Program, Rank, Region};
use allreduce_sim::sim::{simulate, simulate_with};
use allreduce_sim::topology::{FullyConnected, Grid, Hierarchical, Level, Link, Topology};

fn machines() -> Vec<Box<dyn Topology>> {
    let link = Link { alpha: 1e-6, bandwidth: 10e9 };
    let level = |size, alpha, bandwidth| Level { size, link: Link { alpha, bandwidth }, nics: None };
    vec![
        Box::new(FullyConnected { ranks: 6, link, nics: 1 }),
        Box::new(FullyConnected { ranks: 8, link, nics: 2 }),
        Box::new(Grid::torus(3, 4, link, 2)),
        Box::new(Grid::mesh(2, 3, link, 2)),
        Box::new(Hierarchical::new(vec![level(4, 0.7e-6, 150e9), level(3, 5e-6, 12.5e9)], 1).unwrap()),
    ]
}

/// Every applicable algorithm (default parameters) on every machine, at sizes that are
/// sampled (more than 3072 elements, some not divisible by anything): the sampled run's
/// elements equal the full run's at the same indices, bit for bit, on every rank.
#[test]
fn sampled_elements_are_bitwise_the_full_runs() {
    let mut compared = 0;
    for topo in machines() {
        let np = topo.ranks();
        for info in algos::registry() {
            let algo = algos::build(info.id, Params::default()).unwrap();
            for n in [5_000usize, 40_003] {
                let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                if algo.applicable(&p, &Machine { topo: topo.as_ref(), cost_per_byte: 1e-10 }).is_err() {
                    continue;
                }
                let at = sample_positions(n);
                assert!(at.len() < n, "n={n} is sampled");
                let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 3 };
                let (full, _) = generate(cfg, np, n, None);
                let (_, out) =
                    simulate(algo.as_ref(), topo.as_ref(), p, 1e-10, Some((full, ReduceOp::Sum)), &mut NoObserver)
                        .unwrap();
                let full_out = out.unwrap();
                let (values, _) = generate(cfg, np, n, Some(at.clone()));
                let plane = |s: &[usize]| DataPlane::sampled(n, at.clone(), values, s, ReduceOp::Sum);
                let (_, out) =
                    simulate_with(algo.as_ref(), topo.as_ref(), p, 1e-10, Some(plane), &mut NoObserver).unwrap();
                let sampled = out.unwrap();
                for r in 0..np {
                    for (k, &i) in at.iter().enumerate() {
                        assert_eq!(
                            sampled.vectors.bits(r, k),
                            full_out.vectors.bits(r, i),
                            "{} on {}: n={n} rank {r} element {i}",
                            algo.label(),
                            topo.describe()
                        );
                    }
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 60, "{compared} runs compared");
}

#[test]
fn sampled_inputs_are_the_full_inputs() {
    for init in [Init::Random, Init::Normal, Init::Ones, Init::Rank, Init::IllConditioned, Init::Gradients] {
        let full = initial_values::<f32>(init, 9, 3, 10_000);
        let at = sample_positions(10_000);
        let some = initial_values_at::<f32>(init, 9, 3, &at);
        assert!(at.iter().zip(&some).all(|(&i, v)| v.to_bits() == full[i].to_bits()));
    }
    // Small vectors are tracked whole; large ones hit both ends and every grid point.
    assert_eq!(sample_positions(3072), (0..3072).collect::<Vec<_>>());
    let at = sample_positions(1 << 24);
    assert!(at.len() <= 3 * 1024 + 1 && at[0] == 0 && *at.last().unwrap() == (1 << 24) - 1);
    assert!(at.contains(&(1 << 23)) && at.contains(&((1 << 23) - 1)) && at.contains(&((1 << 23) + 1)));
}

/// An "allreduce" that forgets rank 1's contribution to the second half of the vector:
/// the sampled check must see it.
#[derive(Debug)]
struct HalfWrong;

impl Algorithm for HalfWrong {
    fn id(&self) -> &'static str {
        "half_wrong"
    }

    fn label(&self) -> String {
        "half_wrong".into()
    }

    fn program(&self, rank: Rank, p: Problem, _topo: &dyn Topology) -> Vec<Program<'_>> {
        let (all, first) = (Region::vec(0, p.elems), Region::vec(0, p.elems / 2));
        let ops = if rank == 0 {
            vec![Op::Recv { from: 1, tag: 0, dst: first, action: Action::Reduce }, Op::WaitAll, Op::send(1, 1, all)]
        } else {
            vec![Op::send(0, 0, first), Op::Recv { from: 0, tag: 1, dst: all, action: Action::Copy }, Op::WaitAll]
        };
        vec![Box::new(ops.into_iter())]
    }

    fn closed_form(&self, _p: &Problem, _m: &Machine) -> Option<(f64, f64)> {
        None
    }

    fn reduction_depth(&self, _p: &Problem, _topo: &dyn Topology) -> usize {
        1
    }
}

#[test]
fn a_sampled_run_and_a_full_run_both_catch_a_wrong_result() {
    let topo = FullyConnected { ranks: 2, link: Link { alpha: 1e-6, bandwidth: 1e9 }, nics: 1 };
    let n = 100_000;
    let p = Problem { ranks: 2, elems: n, elem_bytes: 4 };
    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 1 };
    for at in [Some(sample_positions(n)), None] {
        let (values, reference) = generate(cfg, 2, n, at.clone());
        let plane = |s: &[usize]| match at.clone() {
            Some(at) => DataPlane::sampled(n, at, values, s, ReduceOp::Sum),
            None => DataPlane::new(values, s, ReduceOp::Sum),
        };
        let (_, out) = simulate_with(&HalfWrong, &topo, p, 0.0, Some(plane), &mut NoObserver).unwrap();
        let check = reference.check(&out.unwrap(), 1, &Expectations::Allreduce);
        assert!(!check.verified, "sampled: {}", at.is_some());
        let bad = check.first_violation.unwrap();
        assert!(bad.index >= n / 2, "the first wrong element is in the second half: {}", bad.index);
        assert!(check.max_abs_error > 0.1, "rank 1's input is missing: {}", check.max_abs_error);
    }
}
