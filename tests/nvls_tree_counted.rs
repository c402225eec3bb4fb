//! `calibrate` counts the loops of NCCL's NVLS Tree at large sizes rather than
//! simulating them all (as it does NCCL's ring's): every point must still come out as
//! the engine simulates the whole size.

use std::path::PathBuf;

use allreduce_sim::calibrate::{self, Machine, Options};

mod common;

/// Two nodes of 4 H100-like GPUs on an NVSwitch, a NIC per GPU (4 heads).
const MACHINE: &str = "name: nvls tree count\ntopology:\n  kind: cluster\n  nodes: 2\n  gpus_per_node: 4\n  intra:\n    \
                       kind: nvswitch\n    alpha: { simple: 0.5us, ll: 0.6us, ll128: 1.9us }\n    bandwidth: 300GB/s\n  \
                       nics_per_node: 4\n  inter:\n    alpha: { simple: 2us, ll: 2.7us, ll128: 4us }\n    bandwidth: 400Gbps\n  \
                       fabric: { kind: rail_optimized }\n  launch: { simple: 20us, ll: 6.6us, ll128: 14us }\n\
                       compute: { cost_per_byte: 0.001ns }\nalgorithms: [nccl_model]\nsizes: [1MiB]\n";

/// One loop of 16 channels x 4 heads x 128 KiB chunks (NCCL's chunk from 32 MiB).
const LOOP: u64 = 8 << 20;

/// Sizes from below one loop to 20 loops, powers of two (as nccl-tests' logs) and whole
/// loops plus a remainder; those of 12 loops and more are counted.
fn sizes() -> Vec<u64> {
    vec![1 << 20, LOOP, 4 * LOOP, 8 * LOOP, 12 * LOOP, 13 * LOOP + 4096, 16 * LOOP, 17 * LOOP + (3 << 20), 20 * LOOP]
}

/// The all_reduce_perf log of NVLS Tree (forced) on the machine, every size simulated
/// whole by the engine (`run`, `nvls_tree` with NCCL's channels and chunk).
fn log() -> Vec<calibrate::Run> {
    let text = MACHINE.replace("algorithms: [nccl_model]", "algorithms: [nvls_tree]");
    let (results, runs) = common::engine_log(&text, &sizes(), "# NCCL_ALGO=NVLSTree\n", 8, "NVIDIA H100", "truth.log");
    for p in &results {
        assert_eq!(p.algorithm, "nvls_tree");
    }
    runs
}

/// At the machine that made the log, every point's simulated time is the engine's time
/// of the whole size: the sizes of 12 loops and more are counted from 8 to 11 loops
/// (with the whole size's chunk), and agree to rounding, remainders included.
#[test]
fn counted_nvls_tree_loops_are_the_engines_time() {
    let runs = log();
    let path: PathBuf = std::env::temp_dir().join(format!("allreduce-sim-nvls-tree-count-{}.yaml", std::process::id()));
    std::fs::write(&path, MACHINE).unwrap();
    let m = Machine::load(&path).unwrap();
    let opts = Options {
        patience: 1,
        fit: Some(vec!["topology.intra.bandwidth".to_string(), "topology.launch.simple".to_string()]),
        ..Options::default()
    };
    let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
    let _ = std::fs::remove_file(&path);
    let points: Vec<_> = c.logs.iter().flat_map(|l| &l.points).collect();
    assert_eq!(points.len(), sizes().len());
    for p in points {
        assert!(p.algorithm.starts_with("nvls_tree"), "{}", p.algorithm);
        assert!(
            p.rel_err.abs() < 1e-9,
            "{} B: simulated {} s, the engine's {} s",
            p.bytes,
            p.simulated_s,
            p.measured_s
        );
    }
}
