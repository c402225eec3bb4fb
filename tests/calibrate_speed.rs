//! What makes `calibrate` fast must not change what it fits: a size of many `nccl_ring`
//! loops, whose time calibrate counts from a few loops rather than simulating them all,
//! comes out as the engine simulates it whole; a fit recovers the machine that made the
//! log; and the fit is the same to the bit whatever the number of threads.

use std::path::PathBuf;

use allreduce_sim::calibrate::{self, Calibration, Machine, Options};

mod common;

fn tmp(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("allreduce-sim-calibrate-speed-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Nodes of 4 GPUs on a switch, one NIC per GPU: per-protocol alpha and launch (Simple
/// only matters here), the intra- and inter-node bandwidths.
fn machine(nodes: usize, (intra_bw, inter_bw, alpha, launch): Values) -> String {
    format!(
        "name: speed test\ntopology:\n  kind: cluster\n  nodes: {nodes}\n  gpus_per_node: 4\n  intra:\n    kind: nvswitch\n    \
         alpha: {{ simple: {alpha}, ll: 1us, ll128: 1us }}\n    bandwidth: {intra_bw}\n  nics_per_node: 4\n  inter:\n    \
         alpha: {{ simple: 5us, ll: 2us, ll128: 2us }}\n    bandwidth: {inter_bw}\n  launch: {{ simple: {launch}, ll: 5us, ll128: 5us }}\n\
         compute: {{ cost_per_byte: 0 }}\nalgorithms: [nccl_model]\nsizes: [1MiB]\n"
    )
}

type Values = (&'static str, &'static str, &'static str, &'static str);

/// 2 channels x 8 ranks x 2 MiB chunks: one loop of NCCL's Simple ring is 32 MiB on two
/// nodes (16 MiB on one).
const LOOP: u64 = 32 << 20;

/// Sizes from one chunk to 16 loops, some of them whole loops plus a remainder.
fn sizes() -> Vec<u64> {
    vec![1 << 20, 8 << 20, LOOP, 3 * LOOP, 6 * LOOP, 7 * LOOP + (5 << 20), 8 * LOOP, 11 * LOOP + 4096, 16 * LOOP]
}

/// The all_reduce_perf logs the truth machine gives on one node and on two when NCCL is
/// forced to its Simple ring: every size simulated whole by the engine (`run`).
fn logs(truth: Values) -> Vec<calibrate::Run> {
    [1, 2].into_iter().flat_map(|nodes| log(nodes, truth)).collect()
}

fn log(nodes: usize, truth: Values) -> Vec<calibrate::Run> {
    let text = machine(nodes, truth)
        .replace("algorithms: [nccl_model]", "algorithms: [{ name: nccl_ring, protocol: simple, channels: 2 }]");
    let env = "# NCCL_ALGO=Ring\n# NCCL_PROTO=Simple\n";
    common::engine_log(&text, &sizes(), env, 4 * nodes, "Test GPU", &format!("truth{nodes}.log")).1
}

const TRUTH: Values = ("150GB/s", "25GB/s", "2us", "10us");
const FIT: &str =
    "topology.intra.bandwidth,topology.inter.bandwidth,topology.intra.alpha.simple,topology.launch.simple";

fn fit(start: Values, runs: &[calibrate::Run], patience: usize) -> Calibration {
    let path = tmp(&format!("start-{}-{}-{}.yaml", start.0, start.2, start.3).replace('/', "_"));
    std::fs::write(&path, machine(2, start)).unwrap();
    let m = Machine::load(&path).unwrap();
    let opts = Options { patience, fit: Some(FIT.split(',').map(String::from).collect()), ..Options::default() };
    calibrate::calibrate(&m, runs, &[], &opts).unwrap()
}

/// At the machine that made the log, every point's simulated time is the engine's time
/// of the whole size: the sizes of 6 loops and more are counted from 2 to 5 loops, and
/// agree to rounding, remainders included, on one node and on two.
#[test]
fn counted_loops_are_the_engines_time() {
    let runs = logs(TRUTH);
    let c = fit(TRUTH, &runs, 1);
    assert_eq!(c.logs.len(), 2);
    for p in c.logs.iter().flat_map(|l| &l.points) {
        assert!(p.algorithm.starts_with("nccl_ring"), "{}", p.algorithm);
        assert!(
            p.rel_err.abs() < 1e-9,
            "{} B: simulated {} s, the engine's {} s",
            p.bytes,
            p.simulated_s,
            p.measured_s
        );
    }
}

/// From a start 20 to 25% off, the fit finds the four values that made the logs (one
/// node tells the intra-node values from the inter-node bandwidth; two nodes, P = 8
/// beside P = 4, tell alpha from launch). The start has the inter-node link already the
/// slower: the times are piecewise linear in the values, and from a start where a link
/// is not the bottleneck its bandwidth moves nothing and the optimiser leaves it there.
#[test]
fn the_fit_recovers_the_machine() {
    let runs = logs(TRUTH);
    let c = fit(("120GB/s", "20GB/s", "2.5us", "8us"), &runs, 60);
    let want = [150e9, 25e9, 2e-6, 10e-6];
    for (p, w) in c.parameters.iter().zip(want) {
        assert!((p.value / w - 1.0).abs() < 1e-3, "{} = {} (want {w})\n{}", p.path, p.value, calibrate::table(&c));
    }
    for l in &c.logs {
        assert!(l.max_rel_err < 1e-3, "{}: {}", l.label, l.max_rel_err);
    }
}

/// One thread or three: the same values, bit for bit, the same errors and the same number
/// of simulations.
#[test]
fn the_fit_does_not_depend_on_the_threads() {
    let runs = logs(TRUTH);
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| fit(("60GB/s", "40GB/s", "4us", "4us"), &runs, 8))
    };
    let (a, b) = (on(1), on(3));
    let values = |c: &Calibration| c.parameters.iter().map(|p| p.value.to_bits()).collect::<Vec<_>>();
    let errors =
        |c: &Calibration| c.logs.iter().flat_map(|l| &l.points).map(|p| p.simulated_s.to_bits()).collect::<Vec<_>>();
    assert_eq!(values(&a), values(&b));
    assert_eq!(errors(&a), errors(&b));
    assert_eq!(a.evaluations, b.evaluations);
}
