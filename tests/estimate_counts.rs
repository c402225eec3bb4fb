//! The estimates' message counts read off an algorithm's schedule
//! ([`estimate::schedule_messages`]) are the counts of its programs walked, on a grid of
//! small machines, sizes and parameters; the algorithms whose walk was long at thousands
//! of ranks have one; and a point beyond the walk's rank limit gets the exact count.

use allreduce_sim::algos::{self, Algorithm, Machine, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::estimate;
use allreduce_sim::scenario::{AlgoSpec, ParamValue};
use allreduce_sim::topology::{FullyConnected, Hierarchical, Level, Link, Topology};

fn machines() -> Vec<Box<dyn Topology>> {
    let l = Link { alpha: 1e-6, bandwidth: 12.5e9 };
    let lv = |size| Level { size, link: l, nics: None };
    let mut out: Vec<Box<dyn Topology>> = Vec::new();
    for ranks in [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16] {
        out.push(Box::new(FullyConnected { ranks, link: l, nics: 1 }));
    }
    out.push(Box::new(FullyConnected { ranks: 6, link: l, nics: 2 }));
    out.push(Box::new(Hierarchical::new(vec![lv(4), lv(3)], 1).unwrap()));
    // NCCL's algorithms read the nodes' GPUs: clusters of 2 and 3 nodes of 4 GPUs.
    for nodes in [2, 3] {
        let text = format!(
            "name: n\ntopology: {{ kind: cluster, nodes: {nodes}, gpus_per_node: 4, \
             intra: {{ kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }}, \
             inter: {{ alpha: 2us, bandwidth: 25GB/s }} }}\nalgorithms: [ring]\nsizes: [1KiB]\n"
        );
        let s = allreduce_sim::scenario::parse_str(&text, "n.yaml").unwrap();
        out.push(allreduce_sim::topology::build(&s.topology, nodes * 4).unwrap());
    }
    out
}

fn param(key: &str, v: ParamValue) -> Vec<(String, ParamValue)> {
    vec![(key.to_string(), v)]
}

/// The parameter sets tried for `id`: the defaults, and small chunks or segments where
/// it takes them, so that the counts' divisions are exercised.
fn variants(id: &str) -> Vec<Vec<(String, ParamValue)>> {
    let mut out = vec![Vec::new()];
    let size = |s: &str| ParamValue::Str(s.to_string());
    match id {
        "ring_segmented" => {
            out.push(param("segment", size("8B")));
            out.push(param("segment", size("100B")));
        }
        "double_binary_tree" => {
            out.push(param("chunk", size("4B")));
            out.push(param("chunk", size("100B")));
        }
        "pat" => {
            out.push(vec![("chunk".into(), size("16B")), ("channels".into(), ParamValue::Int(3))]);
            out.push(param("chunk", size("100B")));
        }
        "nccl_ring" | "nccl_tree" => {
            out.push(vec![("chunk".into(), size("64B")), ("channels".into(), ParamValue::Int(3))]);
            out.push(param("protocol", size("ll")));
        }
        _ => {}
    }
    out
}

fn spec(c: Collective, id: &str, params: &[(String, ParamValue)]) -> AlgoSpec {
    AlgoSpec { name: id.to_string(), collective: c, params: params.to_vec(), location: String::new(), protocol: None }
}

#[test]
fn schedule_counts_are_the_walked_counts() {
    let mut checked = 0;
    let mut counted = std::collections::BTreeSet::new();
    for c in Collective::ALL {
        for info in algos::registry_of(c) {
            for params in variants(info.id) {
                let algo: Box<dyn Algorithm> = algos::build_for(c, info.id, Params::new(params.clone())).unwrap();
                for topo in machines() {
                    for elems in [0, 1, 7, 64, 1000, 5000] {
                        let p = Problem { ranks: topo.ranks(), elems, elem_bytes: 4 };
                        if algo.applicable(&p, &Machine { topo: topo.as_ref(), cost_per_byte: 1e-10 }).is_err() {
                            continue;
                        }
                        let Some(count) = estimate::schedule_messages(&spec(c, info.id, &params), &p, topo.as_ref())
                        else {
                            continue;
                        };
                        let walked = algos::messages_of(algo.as_ref(), &p, topo.as_ref());
                        assert_eq!(
                            count,
                            walked,
                            "{c} {} at P = {}, n = {elems} on {}",
                            algo.label(),
                            p.ranks,
                            topo.describe()
                        );
                        counted.insert(format!("{c} {}", info.id));
                        checked += 1;
                    }
                }
            }
        }
    }
    // Every algorithm the estimates count from its schedule was held to its walk.
    let expected = [
        "allgather direct",
        "allgather neighbor_exchange",
        "allgather pat",
        "allreduce bidirectional_ring",
        "allreduce butterfly",
        "allreduce direct",
        "allreduce double_binary_tree",
        "allreduce halving_doubling",
        "allreduce naive",
        "allreduce nccl_ring",
        "allreduce nccl_tree",
        "allreduce ring_chunked",
        "allreduce ring_gloo",
        "allreduce ring_segmented",
        "barrier all_to_all",
        "reduce_scatter direct",
        "reduce_scatter pat",
    ];
    assert_eq!(counted.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    assert!(checked > 500, "{checked} points checked");
}

/// The algorithms whose count is neither the algorithm's own nor read off its schedule
/// (so the estimate walks their programs, up to 4,096 ranks): an explicit list, each
/// cheap to walk (its messages grow as P log P or P). `auto`'s candidates among them
/// walk quickly. At 16 ranks; the allreduce `butterfly` and `halving_doubling` are
/// walked too where P is not a power of two (their fold).
#[test]
fn only_the_listed_algorithms_are_walked() {
    let topo = FullyConnected { ranks: 16, link: Link { alpha: 1e-6, bandwidth: 12.5e9 }, nics: 1 };
    let p = Problem { ranks: 16, elems: 1 << 20, elem_bytes: 4 };
    let mut walked = Vec::new();
    for c in Collective::ALL {
        for info in algos::registry_of(c) {
            let algo = algos::build_for(c, info.id, Params::default()).unwrap();
            if algo.messages(&p, &topo).is_none()
                && estimate::schedule_messages(&spec(c, info.id, &[]), &p, &topo).is_none()
            {
                walked.push(format!("{c} {}", info.id));
            }
        }
    }
    let expected = [
        "allreduce hierarchical_ring",
        "allreduce blueconnect",
        "allreduce torus_2d",
        "allreduce mesh_2d",
        "allreduce bcube",
        "allreduce nvls_tree",
        "reduce_scatter halving_doubling",
        "reduce_scatter butterfly",
        "reduce_scatter recursive_halving",
        "reduce_scatter nccl_ring",
        "allgather halving_doubling",
        "allgather nccl_ring",
        "broadcast binary_tree",
        "broadcast knomial",
        "broadcast scatter_allgather",
        "reduce binary_tree",
        "reduce in_order_binary_tree",
        "barrier all_to_one",
        "barrier recursive_doubling",
        "barrier bruck",
    ];
    assert_eq!(walked, expected);
}

/// Beyond the walk's 4,096 ranks an algorithm without a count of its own got only the
/// bound `4 P (P - 1)`, not claimed exact; read off its schedule it is exact.
#[test]
fn a_point_beyond_the_walk_limit_is_counted_exactly() {
    let text = "name: big\nranks: [8192]\ntopology: { kind: fully_connected, link: { alpha: 1us, \
                bandwidth: 100Gbps }, nics: 1 }\ndata: { mode: off }\nalgorithms: [direct, naive]\nsizes: [1GiB]\n";
    let s = allreduce_sim::scenario::parse_str(text, "big.yaml").unwrap();
    let p = 8192u64;
    for (pt, want) in s.points().iter().zip([2 * p * (p - 1), p * (p - 1)]) {
        let est = estimate::estimate(&s, pt, false);
        assert_eq!((est.messages, est.messages_exact), (want, true), "{}", estimate::label(&s, pt));
    }
}

/// An entry's `protocol:` sets the chunk of NCCL's algorithms, and so their messages:
/// the estimate counts what the run sends with that protocol (`auto` as NCCL's model
/// resolves it at each point), not what Simple would send.
#[test]
fn an_entrys_protocol_is_counted() {
    let text = "name: proto\nranks: [8]\nsizes: [64KiB, 1MiB, 4MiB]\ndata: { mode: off }\n\
                topology: { kind: cluster, nodes: 2, gpus_per_node: 4, \
                intra: { kind: nvswitch, alpha: 1us, bandwidth: 100GB/s }, \
                inter: { alpha: 2us, bandwidth: 25GB/s } }\n\
                algorithms:\n\
                \x20 - { name: nccl_ring, protocol: ll }\n\
                \x20 - { name: nccl_ring, protocol: ll128, channels: 2 }\n\
                \x20 - { name: nccl_ring, protocol: auto }\n\
                \x20 - { name: nccl_tree, protocol: ll }\n\
                \x20 - { name: nccl_tree, protocol: ll128 }\n\
                \x20 - { name: nccl_ring, collective: reduce_scatter, protocol: ll }\n\
                \x20 - { name: nccl_ring, collective: allgather, protocol: ll128 }\n\
                \x20 - { name: ring, protocol: ll }\n";
    let s = allreduce_sim::scenario::parse_str(text, "proto.yaml").unwrap();
    let report = allreduce_sim::runner::run(&s);
    let topo = allreduce_sim::topology::build(&s.topology, 8).unwrap();
    let mut differs = 0;
    for (pt, r) in s.points().iter().zip(&report.results) {
        assert!(r.not_applicable.is_none() && r.failures.is_empty(), "{}: {r:?}", r.algorithm);
        let est = estimate::estimate(&s, pt, false);
        assert_eq!((est.messages, est.messages_exact), (r.messages, true), "{} at {} B", r.algorithm, r.bytes);
        // What the same entry would send with Simple's chunks.
        let spec = &s.algorithms[pt.algo];
        let algo = algos::build_for(spec.collective, &spec.name, Params::new(spec.params.clone())).unwrap();
        let p = Problem { ranks: 8, elems: (pt.bytes / 4) as usize, elem_bytes: 4 };
        if algos::messages_of(algo.as_ref(), &p, topo.as_ref()) != r.messages {
            differs += 1;
        }
    }
    // Most NCCL rows send other counts than Simple would (the protocol is not ignored).
    assert!(differs >= 15, "{differs} rows differ from Simple's count");
}

/// An exchange that issues a step's sends on every rank at once holds up to P (P - 1)
/// messages in the engine: `direct` on 1,000 ranks ran in 86 MB where the estimate said
/// 1000 KiB (1 KiB a rank), so a memory limit let through what it should have refused.
/// Algorithms that keep a few messages a rank are counted as before; `butterfly` and
/// `halving_doubling` on a power of two are counted exactly past the walk's limit.
#[test]
fn the_messages_an_exchange_holds_at_once_are_counted() {
    let text = "name: held\nranks: [1000]\ntopology: { kind: fully_connected, link: { alpha: 1us, \
                bandwidth: 100Gbps }, nics: 1 }\ndata: { mode: off }\nalgorithms: [direct, naive, ring]\n\
                sizes: [4000012]\n";
    let s = allreduce_sim::scenario::parse_str(text, "held.yaml").unwrap();
    let held = 1000 * 999 * estimate::ENGINE_BYTES_PER_MESSAGE_IN_FLIGHT;
    let engine: Vec<u64> = s.points().iter().map(|pt| estimate::estimate(&s, pt, false).engine_bytes).collect();
    assert!(engine[0] >= held && engine[1] >= held, "{engine:?}");
    assert!(engine[2] < held / 100, "{engine:?}");
    let text = "name: pow2\nranks: [65536]\ntopology: { kind: fully_connected, link: { alpha: 1us, \
                bandwidth: 100Gbps }, nics: 1 }\ndata: { mode: off }\nalgorithms: [butterfly, halving_doubling]\n\
                sizes: [4KiB]\n";
    let s = allreduce_sim::scenario::parse_str(text, "pow2.yaml").unwrap();
    let p = 65536u64;
    for (pt, want) in s.points().iter().zip([16 * p, 32 * p]) {
        let est = estimate::estimate(&s, pt, false);
        assert_eq!((est.messages, est.messages_exact), (want, true), "{}", estimate::label(&s, pt));
    }
}

/// The links a flow point's programs are walked to use before it runs
/// ([`estimate::Planned::links`], what the report's reservation counts) are the links
/// the run used, on every kind of machine that routes messages across switches: a walk
/// that missed a route would reserve too little, one that added routes too much.
#[test]
fn the_links_walked_before_a_run_are_the_links_it_uses() {
    let link = "{ alpha: 1us, bandwidth: 100Gbps }";
    let machines = [
        format!("ranks: [7, 16]\ntopology: {{ link: {link} }}"),
        format!("ranks: 16\ntopology: {{ kind: torus2d, link: {link} }}"),
        format!("ranks: 12\ntopology: {{ kind: mesh2d, link: {link} }}"),
        format!(
            "ranks: [8, 24]\ntopology: {{ kind: fat_tree, hosts_per_leaf: 4, leaves: 6, spines: 2, link: {link}, \
             placement: strided }}"
        ),
        "ranks: 24\ntopology: { kind: hierarchical, levels: [{ name: socket, size: 4, alpha: 1us, bandwidth: \
         100Gbps }, { name: rack, size: 3, alpha: 2us, bandwidth: 50Gbps }, { size: 2, alpha: 3us, bandwidth: \
         25Gbps }] }"
            .to_string(),
        format!(
            "ranks: 4\ntopology: {{ kind: graph, link: {link}, nodes: [a, b, c, d, {{ name: s, kind: switch }}], \
             links: [{{ a: a, b: s }}, {{ a: b, b: s }}, {{ a: c, b: d }}, {{ a: d, b: s }}] }}"
        ),
        "ranks: [16, 32]\ntopology: { kind: cluster, nodes: 4, gpus_per_node: 8, intra: { kind: nvswitch, alpha: \
         1us, bandwidth: 450GB/s }, nics_per_node: 8, inter: { alpha: 2us, bandwidth: 400Gbps }, fabric: { kind: \
         rail_optimized } }"
            .to_string(),
    ];
    let algorithms = "[ring, direct, butterfly, double_binary_tree, binomial_tree, halving_doubling, \
                      hierarchical_ring, star, ring_segmented, bidirectional_ring, chain, ring_chunked, torus_2d, bcube, nccl_ring, nccl_tree]";
    let mut compared = 0;
    for machine in &machines {
        let text = format!(
            "name: walked\n{machine}\nnetwork: {{ model: flow }}\ndata: {{ mode: off }}\nalgorithms: \
             {algorithms}\nsizes: [4, 4096, 100000]\n"
        );
        let s = allreduce_sim::scenario::parse_str(&text, "w.yaml").unwrap();
        let plans = estimate::plan(&s, None);
        let walked: Vec<estimate::ListedLinks> = plans.iter().map(|pl| pl.links()).collect();
        let opts = allreduce_sim::runner::RunOptions { shard: None, progress: false, memory_limit: None };
        let report = allreduce_sim::runner::run_planned(&s, plans, &opts);
        for (res, walked) in report.results.iter().zip(walked) {
            let label = format!("{} at P = {}, {} B on {machine}", res.algorithm, res.ranks, res.bytes);
            let Some(links) = &res.network_links else {
                assert_eq!(walked.listed, 0, "{label}: n/a but walked {walked:?}");
                continue;
            };
            let all = links.all.as_ref().unwrap_or_else(|| panic!("{label}: no list"));
            assert_eq!(walked.listed, links.used, "{label}");
            let names: u64 = all.iter().map(|l| l.name.len() as u64).sum();
            assert_eq!(walked.name_bytes, names, "{label}");
            assert!(all.iter().all(|l| l.name.len() as u64 <= walked.longest_name), "{label}");
            compared += 1;
        }
    }
    assert!(compared > 150, "{compared}");
}
