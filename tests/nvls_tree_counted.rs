//! `calibrate` counts the loops of NCCL's NVLS Tree at large sizes rather than
//! simulating them all (as it does NCCL's ring's): every point must still come out as
//! the engine simulates the whole size.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use allreduce_sim::calibrate::{self, Machine, Options, PointOut};

mod common;

/// Two nodes of 4 H100-like GPUs on an NVSwitch, a NIC per GPU (4 heads).
const MACHINE: &str = "name: nvls tree count\ntopology:\n  kind: cluster\n  nodes: 2\n  gpus_per_node: 4\n  intra:\n    \
                       kind: nvswitch\n    alpha: { simple: 0.5us, ll: 0.6us, ll128: 1.9us }\n    bandwidth: 300GB/s\n  \
                       nics_per_node: 4\n  inter:\n    alpha: { simple: 2us, ll: 2.7us, ll128: 4us }\n    bandwidth: 400Gbps\n  \
                       fabric: { kind: rail_optimized }\n  launch: { simple: 20us, ll: 6.6us, ll128: 14us }\n\
                       compute: { cost_per_byte: 0.001ns }\nalgorithms: [nccl_model]\nsizes: [1MiB]\n";

/// Two nodes of 8 H100-like GPUs, 8 NICs of 400 Gb/s: `validation/hardware`'s
/// `machines/h100_node.yaml` with its NVLink at `bandwidth`.
fn h100_nodes(bandwidth: &str) -> String {
    format!(
        "name: h100 nodes\ntopology:\n  kind: cluster\n  nodes: 2\n  gpus_per_node: 8\n  intra:\n    kind: nvswitch\n    \
         alpha: {{ simple: 3.4us, ll: 0.6us, ll128: 1.9us }}\n    bandwidth: {bandwidth}\n  nics_per_node: 8\n  inter:\n    \
         alpha: {{ simple: 14us, ll: 2.7us, ll128: 4us }}\n    bandwidth: 400Gbps\n  fabric: {{ kind: rail_optimized }}\n  \
         launch: {{ simple: 8.4us, ll: 6.6us, ll128: 14us }}\ncompute: {{ cost_per_byte: 0.001ns }}\nalgorithms: [nccl_model]\n\
         sizes: [1MiB]\n"
    )
}

/// One loop of 16 channels x 4 heads x 128 KiB chunks (NCCL's chunk from 32 MiB).
const LOOP: u64 = 8 << 20;

/// Sizes from below one loop to 20 loops, powers of two (as nccl-tests' logs) and whole
/// loops plus a remainder; those of 12 loops and more are counted.
fn sizes() -> Vec<u64> {
    vec![1 << 20, LOOP, 4 * LOOP, 8 * LOOP, 12 * LOOP, 13 * LOOP + 4096, 16 * LOOP, 17 * LOOP + (3 << 20), 20 * LOOP]
}

/// [`calibrate::WHOLE`] is the process's: the tests that read it run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The all_reduce_perf log of NVLS Tree (forced) on `machine` (`gpus` to a node), every
/// size simulated whole by the engine (`run`, `nvls_tree` with NCCL's channels and chunk),
/// then calibrate's fit of `fit` started at the machine that made it: its points, and how
/// many of them calibrate simulated whole after refusing to count their loops.
fn fit_at_truth(machine: &str, sizes: &[u64], ranks: usize, gpus: usize, fit: &[&str]) -> (Vec<PointOut>, usize) {
    let text = machine.replace("algorithms: [nccl_model]", "algorithms: [nvls_tree]");
    let (results, runs) =
        common::engine_log_on_hosts(&text, sizes, "# NCCL_ALGO=NVLSTree\n", ranks, gpus, "NVIDIA H100", "truth.log");
    for p in &results {
        assert_eq!(p.algorithm, "nvls_tree");
    }
    let path: PathBuf = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("allreduce-sim-nvls-tree-count-{}.yaml", std::process::id()));
    std::fs::write(&path, machine).unwrap();
    let m = Machine::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let opts = Options { patience: 1, fit: Some(fit.iter().map(|f| f.to_string()).collect()), ..Options::default() };
    let whole = calibrate::WHOLE.load(Ordering::Relaxed);
    let c = calibrate::calibrate(&m, &runs, &[], &opts).unwrap();
    let whole = calibrate::WHOLE.load(Ordering::Relaxed) - whole;
    let points: Vec<PointOut> = c.logs.into_iter().flat_map(|l| l.points).collect();
    assert_eq!(points.len(), sizes.len());
    (points, whole)
}

/// Every point's simulated time is the engine's time of the whole size, to rounding.
fn assert_engines_time(points: &[PointOut]) {
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

/// At the machine that made the log, every point's simulated time is the engine's time
/// of the whole size: the sizes of 12 loops and more are counted from 8 to 11 loops
/// (with the whole size's chunk), and agree to rounding, remainders included. Their steps
/// are the NICs' time a loop, so none is simulated whole.
#[test]
fn counted_nvls_tree_loops_are_the_engines_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fit = ["topology.intra.bandwidth", "topology.launch.simple"];
    let (points, whole) = fit_at_truth(MACHINE, &sizes(), 8, 4, &fit);
    assert_engines_time(&points);
    assert_eq!(whole, 0, "the count was refused where it holds");
}

/// With the NVLink at 224 GB/s the GPUs' NVLink side and the heads' NICs take nearly the
/// same time a loop (71.8 and 73.9 us): the steps from 8 to 11 loops are equal, 71.8 us,
/// below the NICs' 16 messages of `alpha + 128 KiB/B` a loop, which no settled run can be.
/// The run settles later; counted from 8 to 11 loops, 64 loops came out 2.2% short.
/// calibrate refuses that count and simulates those sizes whole.
#[test]
fn steps_below_the_busiest_sides_pace_are_not_counted() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let machine = MACHINE.replace("bandwidth: 300GB/s", "bandwidth: 224GB/s");
    let fit = ["topology.intra.bandwidth", "topology.launch.simple"];
    let (points, whole) = fit_at_truth(&machine, &[1 << 20, 16 * LOOP, 64 * LOOP, 64 * LOOP + 4096], 8, 4, &fit);
    assert_engines_time(&points);
    assert!(whole > 0, "nothing was simulated whole");
}

/// docs/nccl.md's case: two H100 nodes with the NVLink at 2.6 TB/s, where the steps from
/// 8 to 11 loops (of 16 MiB) are equal, 264.3 us, and the run settles at the NICs' 265.9
/// us a loop only after some 56 loops; counted, 1 GiB (64 loops) came out 0.42% long.
#[test]
fn the_documented_h100_case_is_the_engines_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (points, whole) =
        fit_at_truth(&h100_nodes("2.6TB/s"), &[16 << 20, 1 << 30], 16, 8, &["topology.launch.simple"]);
    assert_engines_time(&points);
    assert!(whole > 0, "nothing was simulated whole");
}
