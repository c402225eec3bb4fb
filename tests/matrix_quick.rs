use allreduce_sim::algos::{self, Machine, Params, Problem};
use allreduce_sim::sim::data::{Init, ReduceOp, Reference, initial_values};
use allreduce_sim::sim::{engine::NoObserver, simulate};
use allreduce_sim::topology::{FullyConnected, Link};

#[test]
fn matrix() {
    let mut bad = 0;
    for id in ["ring", "star", "chain", "binomial_tree", "butterfly", "halving_doubling"] {
        for &np in &[1usize, 2, 3, 5, 8, 12, 16, 33, 64] {
            for &n in &[0usize, 1, 3, 7, 1000, 262144] {
                for &(alpha, bw, c, nics) in
                    &[(1e-6, 12.5e9, 5e-11, 1u32), (5e-6, 1e9, 1e-9, 1), (1e-6, 12.5e9, 0.0, 2)]
                {
                    let mut prm = vec![];
                    if id == "chain" && n == 1000 {
                        prm.push(("segments".to_string(), allreduce_sim::scenario::ParamValue::Int(4)));
                    }
                    let a = algos::build(id, Params::new(prm)).unwrap();
                    let topo = FullyConnected { ranks: np, link: Link { alpha, bandwidth: bw }, nics };
                    let p = Problem { ranks: np, elems: n, elem_bytes: 4 };
                    let m = Machine { topo: &topo, cost_per_byte: c };
                    let full = n <= 1000;
                    let inputs: Vec<Vec<f32>> = (0..np).map(|r| initial_values(Init::Random, 1, r, n)).collect();
                    let reference = Reference::new(&inputs, ReduceOp::Sum);
                    let res = simulate(
                        a.as_ref(),
                        &topo,
                        p,
                        c,
                        if full { Some((inputs, ReduceOp::Sum)) } else { None },
                        &mut NoObserver,
                    );
                    let (stats, vecs) = match res {
                        Ok(x) => x,
                        Err(e) => {
                            println!("{id} P={np} n={n}: ERROR {e}");
                            bad += 1;
                            continue;
                        }
                    };
                    if let Some(v) = vecs {
                        let ver = reference.check(&v, a.reduction_depth(&p));
                        if !ver.verified {
                            println!("{id} P={np} n={n}: WRONG {:?}", ver.first_violation);
                            bad += 1;
                        }
                    }
                    let Some((cf, tol)) = a.closed_form(&p, &m) else { continue };
                    let err = if cf == 0.0 { stats.time } else { (stats.time / cf - 1.0).abs() };
                    if err > tol {
                        println!(
                            "{id} P={np} n={n} a={alpha} c={c} k={nics}: sim {} cf {} err {err:e}",
                            stats.time, cf
                        );
                        bad += 1;
                    }
                }
            }
        }
    }
    assert_eq!(bad, 0);
}
