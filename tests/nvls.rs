//! NCCL's NVLS allreduce (`nvls`, docs/nccl.md): a case computed by hand, its refusals,
//! and NCCL's model picking it where NCCL's tuning would.

use allreduce_sim::runner;
use allreduce_sim::scenario::parse_str;

fn node(algorithms: &str, sizes: &str, extra: &str) -> String {
    format!(
        "name: nvls\nranks: [8]\ntopology:\n  kind: cluster\n  nodes: 1\n  gpus_per_node: 8\n  \
         intra: {{ kind: nvswitch, alpha: 2us, bandwidth: 100GB/s }}\ncompute: {{ cost_per_byte: 0.01ns }}\n\
         {extra}algorithms: {algorithms}\nsizes: {sizes}\n"
    )
}

/// 8 GPUs, one channel, chunks of 128 KiB, S = 1 MiB: one loop. A hop to or from the
/// switch costs h = 1 us + 131072 B / 100 GB/s = 2.31072 us; loads in 8 steps, the sum
/// to the head, its store back, the copies in 8 steps: 18 h = 41.59296 us. C plays no
/// part (the switch adds).
#[test]
fn one_loop_by_hand() {
    let text = node("[{ name: nvls, channels: 1, chunk: 128KiB }]", "[1MiB]", "data: { mode: off }\n");
    let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
    let r = &report.results[0];
    assert!(r.not_applicable.is_none() && r.passed(), "{r:?}");
    let want = 18.0 * (1e-6 + 131072.0 / 100e9);
    assert!((r.time_s / want - 1.0).abs() < 1e-9, "{} {want}", r.time_s);
    // Per loop and head: 8 loads, the sum, the store, 8 copies.
    assert_eq!(r.messages, 8 * 18);
}

/// At large sizes each GPU's link carries (P+1)/P S each way: the bus bandwidth tends to
/// 2(P-1)/(P+1) of the link's (155.6 GB/s here, 1.56 times the ring's 100).
#[test]
fn bandwidth_tends_to_the_switch_bound() {
    let text = node(
        "[{ name: nvls, channels: 1, chunk: 8MiB }, { name: nccl_ring, channels: 1, chunk: 64MiB }]",
        "[2GiB]",
        "data: { mode: off }\n",
    );
    let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
    let bus = |r: &allreduce_sim::report::PointResult| 2.0 * 7.0 / 8.0 * r.bytes as f64 / r.time_s;
    let (nvls, ring) = (&report.results[0], &report.results[1]);
    let bound = allreduce_sim::algos::forms::nvls(8, 100e9);
    // Below the bound (the pipeline's fill and drain, alpha), not far below.
    assert!(bus(nvls) < bound && bus(nvls) > 0.75 * bound, "{} {bound}", bus(nvls));
    assert!(bus(nvls) > 1.2 * bus(ring), "{} {}", bus(nvls), bus(ring));
}

/// Refused with the reason: with data on, across nodes, on PCIe.
#[test]
fn refusals_say_why() {
    let with_data = node("[nvls]", "[1MiB]", "");
    let r = &runner::run(&parse_str(&with_data, "nvls.yaml").unwrap()).results[0];
    assert!(r.not_applicable.as_deref().unwrap().contains("data: { mode: off }"), "{r:?}");
    let two_nodes = node("[nvls]", "[1MiB]", "data: { mode: off }\n")
        .replace("ranks: [8]", "ranks: [16]")
        .replace("nodes: 1", "nodes: 2\n  nics_per_node: 8\n  inter: { alpha: 3us, bandwidth: 400Gbps }");
    let r = &runner::run(&parse_str(&two_nodes, "nvls.yaml").unwrap()).results[0];
    assert!(r.not_applicable.as_deref().unwrap().contains("across nodes"), "{r:?}");
    let pcie = node("[nvls]", "[1MiB]", "data: { mode: off }\n").replace("nvswitch", "pcie");
    let r = &runner::run(&parse_str(&pcie, "nvls.yaml").unwrap()).results[0];
    assert!(r.not_applicable.as_deref().unwrap().contains("NVSwitch"), "{r:?}");
}

/// NCCL's model weighs NVLS on one Hopper NVSwitch node: latency 25 us flat, bus
/// bandwidth 100 x 0.85 x 7/8 x 2 = 148.75 GB/s (7/8: its NVLS graph has a channel per
/// GPU on one node, 8), algorithm bandwidth 8/14 of it. At
/// 1 GiB it beats the ring (100 x 8/14 GB/s); `nvls: 0` leaves it out.
#[test]
fn nccl_model_picks_nvls_on_hopper_nvswitch() {
    let text = node("[nccl_model, { name: nccl_model, nvls: 0 }]", "[1GiB]", "data: { mode: off }\n");
    let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
    let on = report.results[0].selection.as_ref().unwrap();
    assert_eq!(on.library_choice.as_deref(), Some("nvls/simple"));
    assert_eq!(on.selected, "nvls(protocol=simple)");
    let want = (25.0 + 1073741824.0 / (1000.0 * 148.75 * 8.0 / 14.0)) * 1e-6;
    assert!((on.predicted_s.unwrap() / want - 1.0).abs() < 1e-12, "{:?} {want}", on.predicted_s);
    assert!(report.results[0].passed());
    let off = report.results[1].selection.as_ref().unwrap();
    assert_eq!(off.library_choice.as_deref(), Some("ring/simple"));
}

/// `intra.nvls_efficiency` slows every message to and from the switch: the case by hand
/// above at half the link's rate, h = 1 us + 131072 B / 50 GB/s, 18 h; the closed form
/// agrees. Messages between GPUs (`nccl_ring`) keep the whole bandwidth.
#[test]
fn efficiency_slows_the_switch_operations() {
    let text = node(
        "[{ name: nvls, channels: 1, chunk: 128KiB }, { name: nccl_ring, channels: 1 }]",
        "[1MiB]",
        "data: { mode: off }\n",
    )
    .replace("bandwidth: 100GB/s", "bandwidth: 100GB/s, nvls_efficiency: 0.5");
    let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
    let r = &report.results[0];
    assert!(r.not_applicable.is_none() && r.passed(), "{r:?}");
    let want = 18.0 * (1e-6 + 131072.0 / 50e9);
    assert!((r.time_s / want - 1.0).abs() < 1e-9, "{} {want}", r.time_s);
    let plain = node("[{ name: nccl_ring, channels: 1 }]", "[1MiB]", "data: { mode: off }\n");
    let ring = runner::run(&parse_str(&plain, "nvls.yaml").unwrap()).results[0].time_s;
    assert_eq!(report.results[1].time_s, ring);
}

/// Out of (0, 1], or on a machine without an NVSwitch, it is refused with where and why.
#[test]
fn efficiency_is_checked() {
    for (bad, says) in [("0", "above 0 and at most 1"), ("1.5", "above 0 and at most 1"), ("fast", "above 0")] {
        let text = node("[nvls]", "[1MiB]", "data: { mode: off }\n")
            .replace("bandwidth: 100GB/s", &format!("bandwidth: 100GB/s, nvls_efficiency: {bad}"));
        let e = parse_str(&text, "nvls.yaml").err().unwrap().to_string();
        assert!(e.contains("topology.intra.nvls_efficiency") && e.contains(says), "{e}");
    }
    let pcie = node("[ring]", "[1MiB]", "")
        .replace("kind: nvswitch", "kind: pcie")
        .replace("bandwidth: 100GB/s", "bandwidth: 100GB/s, nvls_efficiency: 0.8");
    let e = parse_str(&pcie, "nvls.yaml").err().unwrap().to_string();
    assert!(e.contains("nvswitch only"), "{e}");
}

/// A channel's next loop's loads wait for its previous loop's sum: under pipelined latency
/// with bytes that cost next to nothing, each of L loops costs a load and a sum (alpha),
/// then the last store and copies one more: (L + 1) alpha. Were the loads of 8 loops in
/// the switch at once (the buffer's steps), 4 loops would take about 2 alpha.
#[test]
fn one_loop_of_loads_in_the_switch_at_a_time() {
    let loops = 4.0;
    let text = node(
        "[{ name: nvls, channels: 1, chunk: 16KiB }]",
        "[512KiB]",
        "data: { mode: off }\nnetwork: { model: ideal, latency: pipelined }\n",
    )
    .replace("bandwidth: 100GB/s", "bandwidth: 100TB/s");
    let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
    let r = &report.results[0];
    assert!(r.not_applicable.is_none() && r.passed(), "{r:?}");
    let want = (loops + 1.0) * 2e-6;
    assert!((r.time_s / want - 1.0).abs() < 1e-3, "{} {want}", r.time_s);
}

/// The switch adds, so no rank's compute unit need: the lower bound has no compute term
/// on an NVSwitch node. With it, one channel at 4 MiB and C = 0.05 ns/B took 120 us
/// against a bound of 187 us, an efficiency of 1.56 and a failed run (the thirtieth
/// trial of docs/hardening.md), on valid input.
#[test]
fn the_switchs_additions_are_not_bounded_by_the_gpus_compute() {
    for (collective, bytes) in [("reduce_scatter", "4MiB"), ("reduce_scatter", "4194308"), ("allreduce", "4MiB")] {
        let text = node(
            "[{ name: nvls, channels: 1 }]",
            &format!("[{bytes}]"),
            &format!("collective: {collective}\ndata: {{ mode: off }}\n"),
        )
        .replace("cost_per_byte: 0.01ns", "cost_per_byte: 0.05ns")
        .replace("alpha: 2us", "alpha: 3.4us");
        let report = runner::run(&parse_str(&text, "nvls.yaml").unwrap());
        let r = &report.results[0];
        assert!(r.not_applicable.is_none() && r.passed(), "{collective} {bytes}: {r:?}");
        assert!(r.efficiency.is_some_and(|e| e > 0.0 && e <= 1.0), "{collective} {bytes}: {:?}", r.efficiency);
    }
}
