//! `nccl_tree`'s patterns (`pattern=split|balanced`, NCCL's tree graph patterns): the
//! result is right on every shape, and a split tree pays an NVLink hop inside each node
//! a sum or a result crosses, worked by hand. Its schedules (`schedule=split|up_then_down`)
//! give the sum too, and NCCL's model picks up then down where 2.8.4 runs it.

use allreduce_sim::algos::{self, Algorithm, Params};
use allreduce_sim::scenario::ParamValue;
use allreduce_sim::select::nccl::{self, Algo, Arch, Proto, Tuning};
use allreduce_sim::topology::{Cluster, ClusterSpec, InterSpec, IntraKind, PerProto};

mod common;
use common::run_allreduce as run;

fn build(params: &[(&str, ParamValue)]) -> Box<dyn Algorithm> {
    let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    algos::build("nccl_tree", Params::new(params)).expect("builds")
}

fn cluster(nodes: usize, gpus: usize, nics: usize) -> Cluster {
    let intra = (IntraKind::Nvswitch, PerProto::all(1e-6), 100e9);
    let inter = InterSpec::new(PerProto::all(5e-6), 25e9);
    let spec = ClusterSpec::on_rails(nodes, gpus, nics, intra, inter, PerProto::all(0.0));
    Cluster::new(&spec, nodes * gpus).unwrap()
}

#[test]
fn every_pattern_gives_the_sum() {
    for pattern in ["split", "balanced"] {
        for (nodes, gpus, nics) in [(1, 4, 1), (2, 2, 1), (3, 4, 2), (4, 4, 2), (5, 2, 2), (6, 8, 4)] {
            let topo = cluster(nodes, gpus, nics);
            for channels in [1u64, 2, 3] {
                let algo = build(&[
                    ("pattern", ParamValue::Str(pattern.into())),
                    ("channels", ParamValue::Int(channels)),
                    ("chunk", ParamValue::Int(64)),
                ]);
                for n in [0, 1, 7, 100] {
                    run(algo.as_ref(), &topo, n);
                }
            }
        }
    }
}

/// Up then down, on its own and with each pattern: every chunk up, then every chunk
/// down, still the sum on every shape, several chunks per channel.
#[test]
fn up_then_down_gives_the_sum() {
    for pattern in ["tree", "split", "balanced"] {
        for (nodes, gpus, nics) in [(1, 4, 1), (2, 1, 1), (2, 2, 1), (3, 4, 2), (5, 2, 2)] {
            let topo = cluster(nodes, gpus, nics);
            for channels in [1u64, 3] {
                let algo = build(&[
                    ("pattern", ParamValue::Str(pattern.into())),
                    ("schedule", ParamValue::Str("up_then_down".into())),
                    ("channels", ParamValue::Int(channels)),
                    ("chunk", ParamValue::Int(64)),
                ]);
                for n in [0, 1, 7, 100] {
                    run(algo.as_ref(), &topo, n);
                }
            }
        }
    }
    let bad = algos::build("nccl_tree", Params::new(vec![("schedule".into(), ParamValue::Str("down".into()))]));
    assert!(bad.unwrap_err().message.contains("split, up_then_down"));
}

/// NCCL 2.8.4 (and 2.9) runs the tree up then down with Simple and LL, split with LL128
/// (`NCCL_LL128_SPLIT`); 2.10 and later split every protocol.
#[test]
fn nccl_model_runs_up_then_down_before_2_10() {
    let topo = cluster(4, 4, 2);
    let x = nccl::Inputs::of(&topo, 2, Arch::Volta);
    let old = x.with_tuning(Tuning::V2_8);
    assert_eq!(nccl::tree_schedule(&old, Algo::Tree, Proto::Simple), Some("up_then_down"));
    assert_eq!(nccl::tree_schedule(&old, Algo::Tree, Proto::Ll), Some("up_then_down"));
    assert_eq!(nccl::tree_schedule(&old, Algo::Tree, Proto::Ll128), None);
    assert_eq!(nccl::tree_schedule(&old, Algo::Ring, Proto::Simple), None);
    let new = x.with_tuning(Tuning::V2_30);
    for proto in [Proto::Simple, Proto::Ll, Proto::Ll128] {
        assert_eq!(nccl::tree_schedule(&new, Algo::Tree, proto), None);
    }
}

/// Two nodes of two GPUs (a NIC each), one channel, one element. Split: node 1's second
/// GPU (3) hands its sum to its first (2, `near`), which sends it to node 0's second GPU
/// (1, `far`), which adds it and hands it to the root (0, `near`); down the same way
/// back: `4 near + 2 far`. One head: 3 -> 2 (`near`) -> 0 (`far`) up, 0 -> 2 (`far`) ->
/// 3 (`near`) down, GPU 1 alongside: `2 near + 2 far`, the split's two NVLink hops fewer.
#[test]
fn split_pays_an_nvlink_hop_per_node_crossed() {
    let topo = cluster(2, 2, 2);
    let near = 1e-6 + 4.0 / 100e9;
    let far = 5e-6 + 4.0 / 25e9;
    let split = build(&[("pattern", ParamValue::Str("split".into())), ("channels", ParamValue::Int(1))]);
    let head = build(&[("channels", ParamValue::Int(1))]);
    let (ts, th) = (run(split.as_ref(), &topo, 1), run(head.as_ref(), &topo, 1));
    assert!((ts / (4.0 * near + 2.0 * far) - 1.0).abs() < 1e-12, "{ts:e}");
    assert!((th / (2.0 * near + 2.0 * far) - 1.0).abs() < 1e-12, "{th:e}");
    assert_eq!(split.label(), "nccl_tree(channels=1,pattern=split)");
    let bad = algos::build("nccl_tree", Params::new(vec![("pattern".into(), ParamValue::Str("ring".into()))]));
    assert!(bad.unwrap_err().message.contains("tree, split, balanced"));
}

/// Two nodes of 4 GPUs and 2 NICs (GPUs 0-1 on NIC 0, 2-3 on NIC 1), one-head trees,
/// 4 channels of one chunk each, NVLink free (no latency, 10^18 B/s), the network at
/// `B` with no latency. NCCL's search lays chain 0 from NIC 0 (head GPU 0) and chain 1
/// from NIC 1 (head GPU 2); channels 0 and 1 run tree 0 (node 0 the root), 2 and 3
/// tree 1 (node 1). Each NIC then carries one channel of each tree: up, its tree-0
/// channel's part goes 1 -> 0 while its tree-1 part goes 0 -> 1 (the two directions of
/// the same ports), then down the reverse: `2 m / B` for a channel's part of `m` bytes.
/// Were both chains' heads on NIC 0 (GPUs 0 and 1), NIC 0 would carry both channels of
/// each tree one after the other, `4 m / B`.
#[test]
fn one_head_chains_start_on_distinct_nics() {
    let intra = (IntraKind::Nvswitch, PerProto::all(0.0), 1e18);
    let b = 25e9;
    let inter = InterSpec::new(PerProto::all(0.0), b);
    let spec = ClusterSpec::on_rails(2, 4, 2, intra, inter, PerProto::all(0.0));
    let topo = Cluster::new(&spec, 8).unwrap();
    let n = 4096;
    let algo = build(&[("channels", ParamValue::Int(4)), ("chunk", ParamValue::Int(1 << 20))]);
    let m = (n / 4 * 4) as f64;
    let t = run(algo.as_ref(), &topo, n);
    assert!((t / (2.0 * m / b) - 1.0).abs() < 1e-6, "{t:e} against {:e}", 2.0 * m / b);
}
