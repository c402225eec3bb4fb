//! Every algorithm's message count ([`algos::messages_of`]: its closed count, else its
//! programs walked; what the estimates and `validate` print) is what the engine sends, on every machine shape it runs on, with
//! its parameters at their defaults and segmented where it takes segments.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{FullyConnected, Grid, Hierarchical, Level, Link, Topology};

fn machines() -> Vec<Box<dyn Topology>> {
    let l = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let lv = |size| Level { size, link: l, nics: None };
    let mut out: Vec<Box<dyn Topology>> = Vec::new();
    for ranks in [1, 2, 3, 4, 5, 8, 12] {
        out.push(Box::new(FullyConnected { ranks, link: l, nics: 1 }));
    }
    out.push(Box::new(Grid::torus(3, 4, l, 2)));
    out.push(Box::new(Grid::mesh(3, 3, l, 2)));
    out.push(Box::new(Hierarchical::new(vec![lv(4), lv(3)], 1).unwrap()));
    out.push(Box::new(Hierarchical::new(vec![lv(2), lv(2), lv(2)], 2).unwrap()));
    out
}

/// The machines `id` is tried on: [`machines`]; for `nvls`, which needs one, a node of 8
/// GPUs on an NVSwitch; for `nvls_tree`, which needs several, 3 such nodes of 4 GPUs with
/// 2 NICs each.
fn machines_for(id: &str) -> Vec<Box<dyn Topology>> {
    let (text, ranks) = match id {
        "nvls" => (
            "name: n\ntopology: { kind: cluster, nodes: 1, gpus_per_node: 8, \
             intra: { kind: nvswitch, alpha: 1us, bandwidth: 100GB/s } }\nalgorithms: [nvls]\nsizes: [1KiB]\n",
            8,
        ),
        "nvls_tree" => (
            "name: n\ntopology: { kind: cluster, nodes: 3, gpus_per_node: 4, \
             intra: { kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }, nics_per_node: 2, \
             inter: { alpha: 2us, bandwidth: 50GB/s }, fabric: { kind: rail_optimized } }\n\
             algorithms: [nvls_tree]\nsizes: [1KiB]\ndata: { mode: off }\n",
            12,
        ),
        _ => return machines(),
    };
    let s = allreduce_sim::scenario::parse_str(text, "n.yaml").unwrap();
    vec![allreduce_sim::topology::build(&s.topology, ranks).unwrap()]
}

/// The variants of an algorithm tried: its defaults, and three segments where it takes
/// `segments`.
fn variants(info: &algos::AlgoInfo) -> Vec<Vec<(String, ParamValue)>> {
    let mut out = vec![Vec::new()];
    if info.params.iter().any(|p| p.starts_with("segments=")) {
        out.push(vec![("segments".to_string(), ParamValue::Int(3))]);
    }
    out
}

#[test]
fn every_algorithms_message_count_is_what_the_engine_sends() {
    let mut checked = 0;
    let mut never_ran = Vec::new();
    for c in Collective::ALL {
        for info in algos::registry_of(c) {
            let mut ran = false;
            for params in variants(info) {
                let algo: Box<dyn Algorithm> = algos::build_for(c, info.id, Params::new(params.clone())).unwrap();
                for topo in machines_for(info.id) {
                    for elems in [1, 7, 64, 1000] {
                        let p = Problem { ranks: topo.ranks(), elems, elem_bytes: 4 };
                        if algo.applicable(&p, &Machine { topo: topo.as_ref(), cost_per_byte: 1e-10 }).is_err() {
                            continue;
                        }
                        let (stats, _) = simulate(algo.as_ref(), topo.as_ref(), p, 1e-10, None, &mut NoObserver)
                            .unwrap_or_else(|e| panic!("{c} {} at P = {}: {e}", algo.label(), p.ranks));
                        if let Some(closed) = algo.messages(&p) {
                            assert_eq!(
                                closed,
                                stats.messages,
                                "{c} {}'s closed count at P = {}",
                                algo.label(),
                                p.ranks
                            );
                        }
                        assert_eq!(
                            algos::messages_of(algo.as_ref(), &p, topo.as_ref()),
                            stats.messages,
                            "{c} {} at P = {}, n = {elems} on {}",
                            algo.label(),
                            p.ranks,
                            topo.describe()
                        );
                        ran = true;
                        checked += 1;
                    }
                }
            }
            if !ran {
                never_ran.push(format!("{c} {}", info.id));
            }
        }
    }
    assert!(never_ran.is_empty(), "never applicable on the test machines: {never_ran:?}");
    assert!(checked > 500, "only {checked} runs checked");
}
