//! NCCL's ring reduce-scatter and allgather (`nccl_ring` of `reduce_scatter` and
//! `allgather`, docs/nccl.md): every point verifies element by element over ranks,
//! channels, chunks, node sizes and vector sizes that do not divide, on flat machines and
//! on GPU clusters; the recurrence (the closed form) meets the simulation wherever it
//! claims exactness, and one channel always has it; a case worked by hand.

mod common;
use allreduce_sim::algos::{self, Algorithm, Params, Problem};
use allreduce_sim::collective::Collective;
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::sim::engine::NoObserver;
use allreduce_sim::sim::simulate;
use allreduce_sim::topology::{Cluster, ClusterSpec, InterSpec, IntraKind, PerProto, Proto, Topology};
use common::flat;

const RS: Collective = Collective::ReduceScatter;
const AG: Collective = Collective::Allgather;

fn build(c: Collective, params: &[(&str, u64)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), ParamValue::Int(*v))).collect();
    algos::build_for(c, "nccl_ring", Params::new(params)).expect("builds")
}

/// Simulate with data, check every element the collective promises, and compare with
/// the closed form: `Ok(true)` where it has one and meets it, `Ok(false)` where it has
/// none and the bounds hold the time.
fn point(c: Collective, algo: &dyn Algorithm, topo: &dyn Topology, n: usize, cpb: f64) -> Result<bool, String> {
    let stats = common::simulate_checked(c, algo, topo, n, cpb, 9)?;
    common::meets_form(algo, topo, n, cpb, stats.time)
}

fn cluster(nodes: usize, gpus: usize, nics: usize, proto: Proto) -> Cluster {
    let intra = (IntraKind::Nvswitch, PerProto { ll: 0.6e-6, ll128: 1.9e-6, simple: 3.4e-6 }, 100e9);
    let inter = InterSpec::new(PerProto { ll: 2.7e-6, ll128: 4e-6, simple: 14e-6 }, 25e9);
    let spec = ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(0.0));
    Cluster::new(&spec, nodes * gpus).unwrap().with_protocol(proto)
}

/// Flat machines: every rank count, channel count, chunk and node size verifies; one
/// channel on one NIC always has its form, and it is exact.
#[test]
fn verifies_and_meets_its_recurrence_on_flat_machines() {
    let mut exact = 0;
    for c in [RS, AG] {
        for np in [1, 2, 3, 4, 5, 8] {
            for nics in [1, 2] {
                let topo = flat(np, nics);
                for channels in [1, 2, 3] {
                    for chunk in [8u64, 64, 1000] {
                        for g in [1u64, 2] {
                            if np % g as usize != 0 {
                                continue;
                            }
                            let algo = build(c, &[("channels", channels), ("chunk", chunk), ("gpus_per_node", g)]);
                            for n in [0usize, 3, 37, 96, 1000, 4097] {
                                for cpb in [0.0, 2e-10] {
                                    let at = format!(
                                        "{c} P={np} nics={nics} channels={channels} chunk={chunk} g={g} n={n} C={cpb}"
                                    );
                                    match point(c, algo.as_ref(), &topo, n, cpb) {
                                        Ok(true) => exact += 1,
                                        Ok(false) if channels == 1 && nics == 1 => panic!("{at}: no closed form"),
                                        Ok(false) => {}
                                        Err(e) => panic!("{at}: {e}"),
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(exact > 1000, "{exact} exact points");
}

/// GPU clusters of 1 to 3 nodes of 1 to 4 GPUs, 1 or 2 NICs, every protocol (its own
/// chunk, Simple's in two slices) and channels: every point verifies, and one channel
/// always has its form, exact.
#[test]
fn verifies_and_meets_its_recurrence_on_clusters() {
    let (mut points, mut exact) = (0, 0);
    for c in [RS, AG] {
        for nodes in 1..=3 {
            for gpus in [1, 2, 4] {
                for nics in [1, 2] {
                    if nics > gpus {
                        continue;
                    }
                    for proto in [Proto::Simple, Proto::Ll, Proto::Ll128] {
                        let topo = cluster(nodes, gpus, nics, proto);
                        for channels in [1u64, 2] {
                            let algo = build(c, &[("channels", channels)]);
                            for n in [0usize, 5, 12_345, 1_200_001] {
                                let at = format!("{c} {nodes}x{gpus} nics={nics} {proto:?} ch={channels} n={n}");
                                points += 1;
                                match point(c, algo.as_ref(), &topo, n, 1e-11) {
                                    Ok(true) => exact += 1,
                                    Ok(false) if channels == 1 => panic!("{at}: one channel, no form"),
                                    Ok(false) => {}
                                    Err(e) => panic!("{at}: {e}"),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("{points} points, {exact} with an exact form");
}

/// By hand: 4 ranks on one NIC each, one channel, chunk of 16 elements (64 B), n = 2
/// whole loops (each block 32 elements): every step moves one 64 B chunk and every rank
/// is at the same step, so each of the 2 loops is P-1 = 3 steps: `6 (alpha + 64 B / B)`,
/// half the allreduce's `2(P-1) L` steps over the same chunks.
#[test]
fn symmetric_case_by_hand() {
    let topo = flat(4, 1);
    let t = 1.5e-6 + 64.0 / 12.5e9;
    for c in [RS, AG] {
        let algo = build(c, &[("chunk", 64)]);
        let p = Problem { ranks: 4, elems: 128, elem_bytes: 4 };
        let (stats, _) = simulate(algo.as_ref(), &topo, p, 0.0, None, &mut NoObserver).unwrap();
        assert!((stats.time / (6.0 * t) - 1.0).abs() < 1e-12, "{c}: {} vs {}", stats.time, 6.0 * t);
        assert_eq!(point(c, algo.as_ref(), &topo, 128, 0.0), Ok(true));
    }
}

/// `explain nccl_ring --collective reduce_scatter` on 2 nodes of 4 GPUs shows the
/// allreduce's rings, P-1 steps per loop, each channel's share of every block, and the
/// form beside the simulation.
#[test]
fn explain_shows_the_reduce_scatter_ring() {
    use allreduce_sim::explain::{Request, explain};
    use allreduce_sim::scenario::TopologySpec;
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(5e-6), 25e9);
    let spec = ClusterSpec::on_rails(2, 4, 2, intra, inter, PerProto::all(0.0));
    for (c, steps) in [(RS, "P-1 reduce-scatter"), (AG, "P-1 allgather")] {
        let req = Request {
            collective: c,
            algorithm: "nccl_ring".into(),
            params: vec![("chunk".into(), ParamValue::Int(64))],
            ranks: 8,
            bytes: 512,
            cost_per_byte: 0.0,
            topology: Some(TopologySpec::Cluster(spec.clone())),
            ..Request::default()
        };
        let text = explain(&req).unwrap();
        assert!(text.contains("channel 0: ring 1 2 3 0 | 5 6 7 4 (back to 1); 16 element(s) of each block"), "{text}");
        assert!(text.contains(&format!("per loop 7 steps ({steps})")), "{text}");
        assert!(text.contains("(within tolerance 1e-9)"), "{text}");
    }
}

fn node(algorithms: &str, sizes: &str) -> String {
    format!(
        "name: nvls halves\nranks: [8]\ntopology:\n  kind: cluster\n  nodes: 1\n  gpus_per_node: 8\n  \
         intra: {{ kind: nvswitch, alpha: 2us, bandwidth: 100GB/s }}\ncompute: {{ cost_per_byte: 0.01ns }}\n\
         data: {{ mode: off }}\nalgorithms: {algorithms}\nsizes: {sizes}\n"
    )
}

/// `nvls` of reduce-scatter and allgather on 8 GPUs, one channel, chunks of 128 KiB,
/// S = 1 MiB (8 blocks of 128 KiB): one loop. A hop to or from the switch costs
/// h = 1 us + 131072 B / 100 GB/s = 2.31072 us. Reduce-scatter: the 8 loads in 8 steps
/// (each agent takes one per step), the sum to its head: 9 h. Allgather: the store, then
/// the 8 copies in 8 steps: 9 h. Per head 9 messages either way.
#[test]
fn nvls_one_loop_by_hand() {
    for c in ["reduce_scatter", "allgather"] {
        let text = node(&format!("[{{ name: nvls, collective: {c}, channels: 1, chunk: 128KiB }}]"), "[1MiB]");
        let report = allreduce_sim::runner::run(&allreduce_sim::scenario::parse_str(&text, "n.yaml").unwrap());
        let r = &report.results[0];
        assert!(r.not_applicable.is_none() && r.passed(), "{c}: {r:?}");
        let want = 9.0 * (1e-6 + 131072.0 / 100e9);
        assert!((r.time_s / want - 1.0).abs() < 1e-9, "{c}: {} {want}", r.time_s);
        assert_eq!(r.messages, 8 * 9, "{c}");
    }
}

/// Many loops and channels, NCCL's chunk rule, sizes that do not divide: the simulated
/// time lies within the bounds (the report's check passes), and at a large size the
/// busy side of every GPU's link, one chunk of every block per loop, sets the time:
/// the bus bandwidth `(P-1)/P S / T` approaches `(P-1)/P` of the link's.
#[test]
fn nvls_within_its_bounds_and_near_the_link() {
    for c in ["reduce_scatter", "allgather"] {
        let text = node(
            &format!(
                "[{{ name: nvls, collective: {c} }}, {{ name: nvls, collective: {c}, channels: 1, chunk: 8MiB }}]"
            ),
            "[8KiB, 1000000B, 64MiB, 2GiB]",
        );
        let report = allreduce_sim::runner::run(&allreduce_sim::scenario::parse_str(&text, "n.yaml").unwrap());
        for r in &report.results {
            assert!(r.not_applicable.is_none() && r.passed(), "{c}: {r:?}");
        }
        let big = report.results.iter().find(|r| r.bytes == 2 << 30 && r.algorithm.contains("chunk")).unwrap();
        let bus = 7.0 / 8.0 * big.bytes as f64 / big.time_s;
        assert!(bus < 7.0 / 8.0 * 100e9 && bus > 0.8 * 7.0 / 8.0 * 100e9, "{c}: {bus:e}");
    }
}

/// NCCL's model for reduce-scatter and allgather on one Hopper NVSwitch node
/// (`tuning.cc`): NVLS at 25 us flat and a bus bandwidth of 100 x 0.85 x 7/8 x 7/8
/// = 65.078 GB/s (the first 7/8 for the 8 channels of its NVLS graph, one per GPU; the
/// second `(ppn-1)/ppn`), taken as the algorithm bandwidth; the ring's Simple algorithm
/// bandwidth 100 x 8/7 GB/s after 8.4 + 7 x 3.4 us. So NCCL keeps the ring at every
/// size here (its model says NVLS pays off only where the links are fast against the
/// ring's hop latency), and `nccl_model` runs it as `nccl_ring` with the picked
/// protocol; forced (`NCCL_ALGO`-style, the only algorithm) NVLS runs as `nvls`.
#[test]
fn nccl_model_runs_nccl_ring_for_the_halves() {
    use allreduce_sim::select::nccl::{Algo, Arch, Inputs, Tuning, time};
    let x = Inputs {
        ranks: 8,
        nodes: 1,
        bw_intra: 100.0,
        bw_inter: 100.0,
        channels: 2,
        arch: Arch::Hopper,
        avg: false,
        pcie: false,
        ll128: true,
        nvls: true,
        nvls_heads: 0,
        tuning: Tuning::V2_30,
        search: None,
    };
    let s = 1u64 << 30;
    for c in [RS, AG] {
        let nvls = time(&x, c, Algo::Nvls, Proto::Simple, s).unwrap();
        let want = (25.0 + s as f64 / (1000.0 * 100.0 * 0.85 * 7.0 / 8.0 * 7.0 / 8.0)) * 1e-6;
        assert!((nvls / want - 1.0).abs() < 1e-12, "{c}: {nvls} {want}");
        let ring = time(&x, c, Algo::Ring, Proto::Simple, s).unwrap();
        let want = (8.4 + 7.0 * 3.4 + s as f64 / (1000.0 * 100.0 * 8.0 / 7.0)) * 1e-6;
        assert!((ring / want - 1.0).abs() < 1e-12, "{c}: {ring} {want}");
        assert!(time(&x, c, Algo::Nvls, Proto::Ll, s).is_none());
        assert!(time(&Inputs { nodes: 2, ranks: 16, ..x }, c, Algo::Nvls, Proto::Simple, s).is_none());
    }
    let text = node(
        "[{ name: nccl_model, collective: reduce_scatter }, { name: nccl_model, collective: allgather }]",
        "[64KiB, 1GiB]",
    );
    let report = allreduce_sim::runner::run(&allreduce_sim::scenario::parse_str(&text, "n.yaml").unwrap());
    for r in &report.results {
        let sel = r.selection.as_ref().unwrap();
        assert!(sel.selected.starts_with("nccl_ring"), "{sel:?}");
        assert!(r.passed(), "{r:?}");
    }
}
