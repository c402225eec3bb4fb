//! The data plane's regression matrix: every algorithm verified for every dtype and op,
//! and the checks themselves (a planted wrong result fails; `check.bitwise`).

use allreduce_sim::algos::{self, Machine, Params, Problem};
use allreduce_sim::sim::data::{
    DataConfig, DataPlane, Dtype, Expect, Expectation, Expectations, Init, ReduceOp, generate,
};
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate_with;
use allreduce_sim::topology::{FullyConnected, Link};

const OPS: [ReduceOp; 5] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg];

/// Every registered algorithm (default parameters) on 5 and 8 ranks, every dtype, every
/// op: the result is within its bound on every rank, and the integer and max/min results
/// are exact.
#[test]
fn every_algorithm_dtype_and_op_is_verified() {
    let mut runs = 0;
    // The regression matrix: P = 1, 2, 3 and non-powers of two; n = 0, n < P, n not divisible by P.
    for np in [1usize, 2, 3, 5, 8] {
        let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e10 }, nics: 1 };
        for info in algos::registry() {
            let algo = algos::build(info.id, Params::default()).unwrap();
            for (dtype, n) in Dtype::ALL.into_iter().flat_map(|d| [(d, 0), (d, np - 1), (d, 203)]) {
                let p = Problem { ranks: np, elems: n, elem_bytes: dtype.bytes() };
                if algo.applicable(&p, &Machine { topo: &topo, cost_per_byte: 1e-10 }).is_err() {
                    continue;
                }
                for op in OPS {
                    let init = if op == ReduceOp::Prod { Init::Gradients } else { Init::Random };
                    let cfg = DataConfig { dtype, op, init, seed: 5 };
                    let (values, reference) = generate(cfg, np, n, None);
                    let plane = move |s: &[usize]| DataPlane::new(values, s, op);
                    let (_, out) = simulate_with(algo.as_ref(), &topo, p, 1e-10, Some(plane), &mut NoObserver).unwrap();
                    let depth = algo.reduction_depth(&p, &topo);
                    let v = reference.check(&out.unwrap(), depth, &Expectations::Allreduce);
                    let what = format!("{} P={np} n={n} {dtype:?} {op:?}", algo.label());
                    assert!(v.verified, "{what}: {:?}", v.first_violation);
                    if dtype.unit_roundoff().is_none() || matches!(op, ReduceOp::Max | ReduceOp::Min) {
                        assert_eq!(v.max_abs_error, 0.0, "{what}: must be exact");
                    }
                    runs += 1;
                }
            }
        }
    }
    assert!(runs > 2000, "{runs} runs");
}

/// The bound is not vacuous: ring's f16 sums over 16 ranks err, within the bound, and
/// the reference is exact enough that an f64 ring on `rank` data is exact.
#[test]
fn errors_are_real_and_bounded() {
    let np = 16;
    let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e10 }, nics: 1 };
    let ring = algos::build("ring", Params::default()).unwrap();
    let run = |dtype: Dtype, init: Init| {
        let n = 4096;
        let p = Problem { ranks: np, elems: n, elem_bytes: dtype.bytes() };
        let (values, reference) = generate(DataConfig { dtype, op: ReduceOp::Sum, init, seed: 1 }, np, n, None);
        let plane = move |s: &[usize]| DataPlane::new(values, s, ReduceOp::Sum);
        let (_, out) = simulate_with(ring.as_ref(), &topo, p, 0.0, Some(plane), &mut NoObserver).unwrap();
        reference.check(&out.unwrap(), ring.reduction_depth(&p, &topo), &Expectations::Allreduce)
    };
    let h = run(Dtype::F16, Init::Random);
    assert!(h.verified && h.max_abs_error > 0.0 && h.max_abs_error <= h.error_bound, "{h:?}");
    assert!(h.ranks_bitwise_equal, "ring's allgather copies: every rank holds the same bits");
    let r = run(Dtype::F64, Init::Rank);
    assert_eq!((r.max_abs_error, r.max_ulp_error), (0.0, 0.0));
}

/// Per-rank expectations: a rank expected to hold another rank's input fails when it
/// holds the reduction; and only ranks that differ are checked again.
#[test]
fn per_rank_expectations_and_check_once() {
    let np = 4;
    let topo = FullyConnected { ranks: np, link: Link { alpha: 1e-6, bandwidth: 1e10 }, nics: 1 };
    let ring = algos::build("ring", Params::default()).unwrap();
    let n = 100;
    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
    let cfg = DataConfig { dtype: Dtype::F32, op: ReduceOp::Sum, init: Init::Random, seed: 2 };
    let (values, reference) = generate(cfg, np, n, None);
    let plane = move |s: &[usize]| DataPlane::new(values, s, ReduceOp::Sum);
    let (_, out) = simulate_with(ring.as_ref(), &topo, p, 0.0, Some(plane), &mut NoObserver).unwrap();
    let out = out.unwrap();
    let all = reference.check(&out, np - 1, &Expectations::Allreduce);
    assert!(all.verified && all.ranks_bitwise_equal);
    assert_eq!(all.ranks_checked, 1, "ranks equal to rank 0 are not checked again");
    let reduced = |r: std::ops::Range<usize>| Expectation { range: r, expect: Expect::Reduced };
    let per = Expectations::PerRank(vec![
        vec![reduced(0..50)],
        vec![reduced(50..100)],
        vec![reduced(0..100)],
        vec![Expectation { range: 0..10, expect: Expect::Input(3) }],
    ]);
    let v = reference.check(&out, np - 1, &per);
    assert!(!v.verified, "rank 3 holds the sum, not its input");
    assert_eq!(v.first_violation.unwrap().rank, 3);
}
