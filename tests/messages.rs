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

/// A cluster of `nodes` nodes of `gpus` GPUs on an NVSwitch with `nics` NICs each on
/// rails, and its rank count.
fn nvswitch_cluster(nodes: usize, gpus: usize, nics: usize) -> Box<dyn Topology> {
    let text = format!(
        "name: n\ntopology: {{ kind: cluster, nodes: {nodes}, gpus_per_node: {gpus}, \
         intra: {{ kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }}, nics_per_node: {nics}, \
         inter: {{ alpha: 2us, bandwidth: 50GB/s }}, fabric: {{ kind: rail_optimized }} }}\n\
         algorithms: [nvls_tree]\nsizes: [1KiB]\ndata: {{ mode: off }}\n"
    );
    let s = allreduce_sim::scenario::parse_str(&text, "n.yaml").unwrap();
    allreduce_sim::topology::build(&s.topology, nodes * gpus).unwrap()
}

/// The machines `id` is tried on: [`machines`]; for `nvls`, which needs one, a node of 8
/// GPUs on an NVSwitch; for `nvls_tree`, which needs several, clusters of several shapes
/// (nodes x GPUs x NICs): its heads (one per NIC, on the first GPU of each rail, not
/// always evenly spread), the trees of even and odd node counts, one head and a head on
/// every GPU.
fn machines_for(id: &str) -> Vec<Box<dyn Topology>> {
    match id {
        "nvls" => vec![nvswitch_cluster(1, 8, 1)],
        "nvls_tree" => [(3, 4, 2), (2, 8, 8), (2, 8, 1), (5, 4, 3), (4, 2, 1), (2, 2, 2), (6, 3, 2)]
            .into_iter()
            .map(|(nodes, gpus, nics)| nvswitch_cluster(nodes, gpus, nics))
            .collect(),
        _ => machines(),
    }
}

/// The variants of an algorithm tried: its defaults; three segments where it takes
/// `segments`; and where it takes a `chunk` (NCCL's algorithms and
/// `double_binary_tree`), chunks of 3 and 5 elements (odd, so that parts end in short
/// chunks), over 3 channels where it takes `channels`, and over 1.
fn variants(info: &algos::AlgoInfo) -> Vec<Vec<(String, ParamValue)>> {
    let takes = |name: &str| info.params.iter().any(|p| p.starts_with(&format!("{name}=")));
    let mut out = vec![Vec::new()];
    if takes("segments") {
        out.push(vec![("segments".to_string(), ParamValue::Int(3))]);
    }
    if takes("chunk") {
        for (channels, chunk) in [(3, 12), (1, 20)] {
            let mut v = vec![("chunk".to_string(), ParamValue::Int(chunk))];
            if takes("channels") {
                v.push(("channels".to_string(), ParamValue::Int(channels)));
            }
            out.push(v);
        }
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
                        if let Some(closed) = algo.messages(&p, topo.as_ref()) {
                            assert_eq!(
                                closed,
                                stats.messages,
                                "{c} {}'s closed count at P = {}, n = {elems} on {}",
                                algo.label(),
                                p.ranks,
                                topo.describe()
                            );
                        }
                        assert_eq!(
                            algos::walk_messages(algo.as_ref(), &p, topo.as_ref()),
                            stats.messages,
                            "{c} {}'s programs walked at P = {}, n = {elems} on {}",
                            algo.label(),
                            p.ranks,
                            topo.describe()
                        );
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
